/* lhsim benchmark — `lhsim run GRAPH --sched serial` by phase, as a new user runs it (issue 12).
 *
 * bench-run [-s SCHED] [N [DIR]] (default 10^6 ops) writes a seeded random layered DAG of N ops
 * as graph JSON (lh_gen_random_dag, seed 42, width 64: the graph of `lhsim gen random ops=N
 * width=64 seed=42`) to DIR (default a temporary directory), then in a child process of its own
 * does what `lhsim run` does and times each phase: read the graph JSON, plan (serial, or SCHED
 * with its default parameters: `lhsim run --sched SCHED`), validate the
 * plan, simulate, metrics; it prints each phase's wall time, the total and the child's peak
 * RSS, and on a second line each phase's CPU time (the process's user + system time): on a
 * machine shared with other work the CPU times move less than the wall times. With DIR the graph
 * stays there, so that the command itself can be timed: /usr/bin/time -f '%e s %M KiB' lhsim run
 * DIR/graph.json --sched serial > /dev/null
 *
 * Then, in the same run, a peer: simgrid-peer (bench/simgrid-peer.cpp, built where SimGrid is
 * installed) simulates the same graph file with SimGrid in the same serial order, and bench-run
 * prints its times and the ratio of the two totals. Without SimGrid it says so and skips it, and
 * so it does with another SCHED than serial, whose order the peer does not follow.
 */
#include "lhsim.h"

#include <glib/gstdio.h>
#include <limits.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static double now(void)
{
	return (double)g_get_monotonic_time() / 1e6;
}

/* The process's CPU time so far (user + system), in s. */
static double cpu(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void die(GError *e)
{
	fprintf(stderr, "bench-run: %s\n", e->message);
	exit(1);
}

/* What the lhsim child tells the parent, through a pipe. */
typedef struct {
	double read;     /* s, reading the graph */
	double total;    /* s, reading the graph to the metrics */
	gint64 makespan; /* ns */
} RunResult;

static void child(const char *path, const LhScheduler *sched, int out)
{
#if defined(__GLIBC__)
	/* As lhsim's main does (cli/main.c, keep_freed_memory): freed memory is kept for the next
	 * phase rather than given back and faulted in again. */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
	lh_models_init();
	GError *e = NULL;
	LhHw *hw = lh_hw_lookup("h100-sxm", &e);
	if (!hw)
		die(e);
	double c0 = cpu(), t0 = now();
	LhGraph *g = lh_graph_load(path, &e);
	if (!g)
		die(e);
	double t1 = now(), c1 = cpu();
	LhPlan *p = lh_scheduler_run(sched, g, hw, NULL, NULL, &e);
	if (!p)
		die(e);
	double t2 = now(), c2 = cpu();
	if (!lh_plan_validate(p, g, NULL, &e))
		die(e);
	double t3 = now(), c3 = cpu();
	LhSimOptions opt = {.skip_validate = TRUE};
	LhTrace *t = lh_simulate(g, hw, p, &opt, NULL, &e);
	if (!t)
		die(e);
	double t4 = now(), c4 = cpu();
	LhMetrics m;
	lh_metrics_compute(t, g, hw, p, &m);
	double t5 = now(), c5 = cpu();
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf(
	    "%9u  %7.3f s  %7.3f s  %7.3f s  %7.3f s  %7.3f s  %7.3f s  %6.2f M ops/s  %7.0f MiB\n",
	    lh_graph_n_ops(g), t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t5 - t0,
	    lh_graph_n_ops(g) / (t4 - t3) / 1e6, ru.ru_maxrss / 1024.0);
	printf("      cpu  %7.3f s  %7.3f s  %7.3f s  %7.3f s  %7.3f s  %7.3f s\n", c1 - c0,
	       c2 - c1, c3 - c2, c4 - c3, c5 - c4, c5 - c0);
	RunResult r = {t1 - t0, t5 - t0, m.makespan};
	if (write(out, &r, sizeof r) != (ssize_t)sizeof r)
		perror("bench-run: pipe");
	lh_metrics_clear(&m);
	lh_trace_free(t);
	lh_plan_free(p);
	lh_graph_free(g);
	lh_hw_free(hw);
}

/* SimGrid on the same file, in a process of its own (its peak RSS is its own), and the ratio. */
static int peer(const char *path, const RunResult *lh)
{
#if LH_HAVE_SIMGRID
	/* simgrid-peer is built beside bench-run. */
	g_autofree char *self = g_file_read_link("/proc/self/exe", NULL);
	g_autofree char *dir = self ? g_path_get_dirname(self) : g_strdup(".");
	g_autofree char *exe = g_build_filename(dir, "simgrid-peer", NULL);
	char *argv[] = {exe, (char *)path, NULL};
	g_autofree char *out = NULL;
	int st = 0;
	GError *e = NULL;
	printf(
	    "\nSimGrid 3.32 on the same file (simgrid-peer: lhsim's reader, then s4u activities in "
	    "the same serial order):\n"
	    "      ops  activities      edges       read      build        run      total"
	    "       makespan     RSS read     peak RSS\n");
	fflush(stdout);
	if (!g_spawn_sync(NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, NULL, &st, &e)) {
		fprintf(stderr, "bench-run: %s\n", e->message);
		g_error_free(e);
		return 1;
	}
	fputs(out, stdout);
	unsigned n;
	size_t n_act, n_edges;
	double read, build, run, total, makespan_ms;
	if (!g_spawn_check_wait_status(st, NULL) ||
	    sscanf(out, "%u %zu %zu %lf s %lf s %lf s %lf s %lf ms", &n, &n_act, &n_edges, &read,
	           &build, &run, &total, &makespan_ms) != 8) {
		fprintf(stderr, "bench-run: simgrid-peer failed\n");
		return 1;
	}
	/* Both read the file with lhsim's reader, whose time moves most with the machine's load, so
	 * the part after reading is compared too. */
	printf("\nlhsim %.3f s, SimGrid %.3f s: SimGrid / lhsim = %.2f\n"
	       "after reading the graph: lhsim %.3f s (schedule, validate, simulate, metrics), "
	       "SimGrid %.3f s (build, run): SimGrid / lhsim = %.2f\n"
	       "makespans: lhsim %.3f ms, SimGrid %.3f ms\n",
	       lh->total, total, total / lh->total, lh->total - lh->read, build + run,
	       (build + run) / (lh->total - lh->read), lh->makespan / 1e6, makespan_ms);
#else
	(void)path;
	(void)lh;
	printf("\nSimGrid: not installed, skipped\n");
#endif
	return 0;
}

int main(int argc, char **argv)
{
	const char *sched_name = "serial";
	if (argc > 2 && strcmp(argv[1], "-s") == 0) {
		sched_name = argv[2];
		argc -= 2;
		argv += 2;
	}
	lh_models_init();
	const LhScheduler *sched = lh_scheduler_find(sched_name);
	if (!sched) {
		fprintf(stderr, "bench-run: no scheduler '%s' (lhsim list names them)\n",
		        sched_name);
		return 2;
	}
	char *end = NULL;
	guint32 n = argc > 1 ? (guint32)strtoul(argv[1], &end, 10) : 1000000;
	if (argc > 1 && (end == argv[1] || *end || n == 0)) {
		fprintf(stderr,
		        "bench-run: '%s' is not a count of ops; usage: bench-run [-s SCHED] "
		        "[N [DIR]]\n",
		        argv[1]);
		return 2;
	}
	g_autofree char *tmp = NULL;
	const char *dir = argc > 2 ? argv[2] : NULL;
	if (!dir) {
		tmp = g_dir_make_tmp("bench-run-XXXXXX", NULL);
		dir = tmp;
	}
	g_mkdir_with_parents(dir, 0755);
	g_autofree char *path = g_build_filename(dir, "graph.json", NULL);
	{
		LhRandomDagOptions o;
		lh_random_dag_options_init(&o);
		o.n_ops = n;
		o.width = 64;
		o.seed = 42;
		LhGraph *g = lh_gen_random_dag(&o);
		GError *e = NULL;
		if (!lh_graph_write_json_file(g, path, &e))
			die(e);
		lh_graph_free(g);
	}
	printf("scheduler: %s\n", sched->name);
	printf("      ops   read JSON   schedule   validate   simulate    metrics      total"
	       "   simulated         peak RSS\n");
	fflush(stdout);
	int fds[2];
	if (pipe(fds) != 0) {
		perror("bench-run: pipe");
		return 1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		child(path, sched, fds[1]);
		fflush(stdout);
		_exit(0);
	}
	close(fds[1]);
	RunResult lh = {0, 0, 0};
	gboolean have_lh = read(fds[0], &lh, sizeof lh) == (ssize_t)sizeof lh;
	close(fds[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	if (rc == 0 && have_lh && strcmp(sched->name, "serial") != 0)
		printf("\nSimGrid: skipped (its peer follows serial's order, not %s's)\n",
		       sched->name);
	else if (rc == 0 && have_lh)
		rc = peer(path, &lh);
	if (tmp) {
		g_unlink(path);
		g_rmdir(tmp);
	}
	return rc;
}
