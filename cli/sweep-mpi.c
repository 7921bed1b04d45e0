/* lhsim sweep — points spread over MPI ranks (`mpirun -n N lhsim sweep ...`), when lhsim is
 * built with OpenMPI (meson -Dmpi=auto). Rank 0 owns the job queue, runs points itself on one
 * thread and hands the rest out one at a time to whichever rank asks: points differ in cost by
 * orders of magnitude, so a static split would leave ranks idle. Results travel back as plain
 * bytes and are stored at their point's index, so the file is the one-process file. */
#include "cli/sweep-grid.h"

#include <stdlib.h>
#include <string.h>

static guint env_uint(const char *name, guint dflt)
{
	const char *v = g_getenv(name);
	if (!v || !*v)
		return dflt;
	char *end = NULL;
	guint64 x = g_ascii_strtoull(v, &end, 10);
	return end && !*end && x < G_MAXUINT ? (guint)x : dflt;
}

guint sweep_mpi_size(void)
{
	return MAX(env_uint("OMPI_COMM_WORLD_SIZE", 1), 1u);
}

guint sweep_mpi_rank(void)
{
	return env_uint("OMPI_COMM_WORLD_RANK", 0);
}

gboolean sweep_run_take(SweepRun *r, guint *i)
{
	g_mutex_lock(&r->lock);
	gboolean any = r->next < r->n_jobs;
	if (any)
		*i = r->jobs[r->next++];
	g_mutex_unlock(&r->lock);
	return any;
}

void sweep_run_finish(SweepRun *r, guint i)
{
	g_mutex_lock(&r->lock);
	r->finished[i] = TRUE;
	r->done++;
	g_cond_signal(&r->cond);
	g_mutex_unlock(&r->lock);
}

#ifdef LH_HAVE_MPI
#include <mpi.h>

enum { TAG_RESULT = 1, TAG_JOB = 2 };

/* A result on the wire: this header, then the error text (no NUL). */
typedef struct {
	gint64 point; /* -1: no result (a rank's first request) */
	gint64 ok, over_memory;
	gint64 makespan, peak_device, exposed;
	double bound, ratio, overlap;
} Wire;

gboolean sweep_mpi_built(void)
{
	return TRUE;
}

int sweep_mpi_init(void)
{
	int provided = 0;
	if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
		fprintf(stderr, "lhsim: MPI does not start (MPI_Init_thread failed)\n");
		return LH_EXIT_FAILED;
	}
	if (provided < MPI_THREAD_FUNNELED) {
		fprintf(stderr, "lhsim: this MPI cannot run threads beside MPI calls "
		                "(MPI_THREAD_FUNNELED)\n");
		MPI_Abort(MPI_COMM_WORLD, LH_EXIT_FAILED);
	}
	return 0;
}

void sweep_mpi_finalize(void)
{
	MPI_Finalize();
}

static void send_result(gint64 point, const Result *r)
{
	Wire w = {.point = point};
	const char *err = "";
	if (r) {
		w.ok = r->ok;
		w.over_memory = r->over_memory;
		w.makespan = r->makespan;
		w.peak_device = r->peak_device;
		w.exposed = r->exposed;
		w.bound = r->bound;
		w.ratio = r->ratio;
		w.overlap = r->overlap;
		err = r->error ? r->error : "";
	}
	gsize el = strlen(err);
	g_autofree char *buf = g_malloc(sizeof w + el);
	memcpy(buf, &w, sizeof w);
	memcpy(buf + sizeof w, err, el);
	MPI_Send(buf, (int)(sizeof w + el), MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD);
}

int sweep_mpi_work(const Grid *g, gboolean strict)
{
	send_result(-1, NULL);
	for (;;) {
		gint64 job = -1;
		MPI_Recv(&job, 1, MPI_INT64_T, 0, TAG_JOB, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (job < 0)
			return 0;
		Result r;
		grid_run_point(g, (guint)job, strict, &r);
		send_result(job, &r);
		g_free(r.error);
	}
}

int sweep_mpi_serve(SweepRun *run, void (*tick)(gpointer), gpointer data)
{
	int size = 1;
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int active = size - 1;
	for (;;) {
		g_mutex_lock(&run->lock);
		gboolean all = run->done >= run->n_jobs;
		g_mutex_unlock(&run->lock);
		if (all && active == 0)
			return 0;
		int flag = 0;
		MPI_Status st;
		MPI_Iprobe(MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &flag, &st);
		if (!flag) {
			tick(data);
			g_usleep(1000);
			continue;
		}
		int len = 0;
		MPI_Get_count(&st, MPI_BYTE, &len);
		if (len < (int)sizeof(Wire)) {
			fprintf(stderr, "lhsim: rank %d sent a result of %d bytes\n", st.MPI_SOURCE,
			        len);
			MPI_Abort(MPI_COMM_WORLD, LH_EXIT_FAILED);
		}
		g_autofree char *buf = g_malloc(len);
		MPI_Recv(buf, len, MPI_BYTE, st.MPI_SOURCE, TAG_RESULT, MPI_COMM_WORLD,
		         MPI_STATUS_IGNORE);
		Wire w;
		memcpy(&w, buf, sizeof w);
		if (w.point >= 0) {
			Result *r = &run->res[w.point];
			r->ok = (gboolean)w.ok;
			r->over_memory = (gboolean)w.over_memory;
			r->makespan = w.makespan;
			r->peak_device = w.peak_device;
			r->exposed = w.exposed;
			r->bound = w.bound;
			r->ratio = w.ratio;
			r->overlap = w.overlap;
			r->error = r->ok ? NULL : g_strndup(buf + sizeof w, len - sizeof w);
			sweep_run_finish(run, (guint)w.point);
		}
		guint next;
		gint64 job = sweep_run_take(run, &next) ? (gint64)next : -1;
		if (job < 0)
			active--;
		MPI_Send(&job, 1, MPI_INT64_T, st.MPI_SOURCE, TAG_JOB, MPI_COMM_WORLD);
	}
}

#else /* no MPI */

gboolean sweep_mpi_built(void)
{
	return FALSE;
}

int sweep_mpi_init(void)
{
	fprintf(stderr, "lhsim: this lhsim is built without MPI: build it with OpenMPI "
	                "(libopenmpi-dev, meson -Dmpi=enabled), or run the sweep without mpirun "
	                "(-j, or --shard K/N)\n");
	return LH_EXIT_BAD_INPUT;
}

void sweep_mpi_finalize(void)
{
}

int sweep_mpi_serve(SweepRun *r, void (*tick)(gpointer), gpointer data)
{
	(void)r;
	(void)tick;
	(void)data;
	return LH_EXIT_FAILED;
}

int sweep_mpi_work(const Grid *g, gboolean strict)
{
	(void)g;
	(void)strict;
	return LH_EXIT_FAILED;
}

#endif
