/* lhsim bench — engine throughput and memory on large random layered DAGs.
 *
 * For each size (default 10^4, 10^5, 10^6 ops) a child process generates a random layered DAG
 * (kernels, copies, collectives; lh_gen_random_dag), maps it round-robin onto 8 streams with a
 * signal after every op that has a consumer on another stream and a wait only where no earlier
 * wait already orders the dep, then validates and simulates it on the H100 model. It prints
 * simulated ops per second (simulation alone, best of a few runs; beside the wall time, the
 * process's CPU time of the same run, which another process on a shared machine delays less)
 * and resident bytes per op
 * (peak RSS of the child minus its RSS before the graph was built, over the op count), which
 * covers the graph, the plan, the engine's working state and the trace; then the minor page
 * faults of the last simulation and its system CPU time (mostly those faults).
 *
 * With --serial the plan is instead that of `lhsim run --sched serial` (every op on one stream
 * in topological order, no events), the plan of issue 12's engine target.
 *
 * usage: bench-engine [--serial] [N ...]
 */
#include "bench-common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = 0, res = 0;
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &res) != 2)
			res = 0;
		fclose(f);
	}
	return res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* This process's CPU time, s (user and system: page faults included). */
static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long peak_kib(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* This process's minor page faults so far (first touches of fresh pages), and its system CPU
 * time, s (mostly those faults). */
static long minflt(double *sys)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	*sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	return ru.ru_minflt;
}

static LhPlan *eight_streams(const LhGraph *g)
{
	LhPlan *p = lh_plan_new();
	static const char *names[BENCH_STREAMS] = {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"};
	guint32 sid[BENCH_STREAMS];
	for (int s = 0; s < BENCH_STREAMS; s++)
		sid[s] = lh_plan_add_stream(p, names[s], LH_ROLE_COMPUTE);
	bench_eight_streams(g, p, sid, 0);
	return p;
}

/* The serial scheduler's plan (schedulers/serial.c), built here so that the bench depends on
 * sim/ alone. */
static LhPlan *serial(const LhGraph *g)
{
	LhPlan *p = lh_plan_new();
	guint32 s = lh_plan_add_stream(p, "main", LH_ROLE_COMPUTE);
	const guint32 *topo = lh_graph_topo(g);
	for (guint32 k = 0; k < lh_graph_n_ops(g); k++)
		if (lh_graph_op(g, topo[k])->kind != LH_OP_INPUT)
			lh_plan_run(p, s, topo[k]);
	return p;
}

static void one_size(guint32 n, gboolean one_stream)
{
	lh_models_init();
	LhHw *hw = lh_hw_lookup("h100-sxm", NULL);
	long base = rss_kib();
	gint64 t0 = g_get_monotonic_time();
	LhGraph *g = bench_random_dag(n);
	LhPlan *p = one_stream ? serial(g) : eight_streams(g);
	gint64 t1 = g_get_monotonic_time();
	GError *e = NULL;
	if (!lh_plan_validate(p, g, NULL, &e)) {
		fprintf(stderr, "bench-engine: %s\n", e->message);
		exit(1);
	}
	gint64 t2 = g_get_monotonic_time();
	LhSimOptions opt = {.skip_validate = TRUE};
	double best = 1e30, best_cpu = 1e30;
	gint64 makespan = 0;
	long faults = 0;
	double sys = 0, sa, sb;
	int reps = n <= 100000 ? 3 : 1;
	for (int r = 0; r < reps; r++) {
		gint64 a = g_get_monotonic_time();
		long fa = minflt(&sa);
		double ca = cpu_s();
		LhTrace *t = lh_simulate(g, hw, p, &opt, NULL, &e);
		double cb = cpu_s();
		faults = minflt(&sb) - fa; /* the last run's */
		sys = sb - sa;
		gint64 b = g_get_monotonic_time();
		if (!t) {
			fprintf(stderr, "bench-engine: %s\n", e->message);
			exit(1);
		}
		makespan = MAX(makespan, bench_makespan(t));
		if (r + 1 < reps)
			lh_trace_free(t);
		best = MIN(best, (double)(b - a) / 1e6);
		best_cpu = MIN(best_cpu, cb - ca);
	}
	long peak = peak_kib();
	printf("%9u ops %9u cmds  build %7.3f s  validate %7.3f s  simulate %7.3f s  "
	       "%6.2f M ops/s  (CPU %7.3f s, %6.2f M ops/s)  %5.0f B/op  %7ld faults (sys %5.3f s) "
	       " (makespan "
	       "%.3f ms)\n",
	       n, lh_plan_n_cmds(p), (double)(t1 - t0) / 1e6, (double)(t2 - t1) / 1e6, best,
	       n / best / 1e6, best_cpu, n / best_cpu / 1e6, (double)(peak - base) * 1024.0 / n,
	       faults, sys, makespan / 1e6);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	guint32 sizes[16] = {10000, 100000, 1000000};
	int ns = 0;
	gboolean one_stream = FALSE;
	for (int i = 1; i < argc && ns < 16; i++) {
		if (!strcmp(argv[i], "--serial"))
			one_stream = TRUE;
		else
			sizes[ns++] = (guint32)strtoul(argv[i], NULL, 10);
	}
	if (!ns)
		ns = 3;
	printf("bench-engine: random layered DAG, width 64, %s, h100-sxm\n",
	       one_stream ? "serial plan (1 stream)" : "8 streams");
	fflush(stdout);
	for (int i = 0; i < ns; i++) {
		/* A child per size, so that each peak RSS is its own. */
		pid_t pid = fork();
		if (pid == 0) {
			one_size(sizes[i], one_stream);
			_exit(0);
		}
		int st;
		waitpid(pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
	}
	return 0;
}
