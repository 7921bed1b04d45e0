/* lhsim benchmark — `lhsim run GRAPH --sched serial` by phase, as a new user runs it (issue 12).
 *
 * bench-run [N [DIR]] (default 10^6 ops) writes a seeded random layered DAG of N ops as graph
 * JSON (lh_gen_random_dag, seed 42, width 64: the graph of `lhsim gen random ops=N width=64
 * seed=42`) to DIR (default a temporary directory), then in a child process of its own does
 * what `lhsim run` does and times each phase: read the graph JSON, plan (serial), validate the
 * plan, simulate, metrics; it prints each phase's wall time, the total and the child's peak
 * RSS. With DIR the graph stays there, so that the command itself can be timed:
 *   /usr/bin/time -f '%e s %M KiB' lhsim run DIR/graph.json --sched serial > /dev/null
 */
#include "lhsim.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static double now(void)
{
	return (double)g_get_monotonic_time() / 1e6;
}

static void die(GError *e)
{
	fprintf(stderr, "bench-run: %s\n", e->message);
	exit(1);
}

static void child(const char *path)
{
	lh_models_init();
	GError *e = NULL;
	LhHw *hw = lh_hw_lookup("h100-sxm", &e);
	if (!hw)
		die(e);
	double t0 = now();
	LhGraph *g = lh_graph_load(path, &e);
	if (!g)
		die(e);
	double t1 = now();
	LhPlan *p = lh_scheduler_run(lh_scheduler_find("serial"), g, hw, NULL, NULL, &e);
	if (!p)
		die(e);
	double t2 = now();
	if (!lh_plan_validate(p, g, NULL, &e))
		die(e);
	double t3 = now();
	LhSimOptions opt = {.skip_validate = TRUE};
	LhTrace *t = lh_simulate(g, hw, p, &opt, NULL, &e);
	if (!t)
		die(e);
	double t4 = now();
	LhMetrics m;
	lh_metrics_compute(t, g, hw, p, &m);
	double t5 = now();
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("%9u  %7.3f s  %7.3f s  %7.3f s  %7.3f s  %7.3f s  %7.3f s  %6.2f M ops/s  %7.0f MiB\n",
	       lh_graph_n_ops(g), t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t5 - t0,
	       lh_graph_n_ops(g) / (t4 - t3) / 1e6, ru.ru_maxrss / 1024.0);
	lh_metrics_clear(&m);
	lh_trace_free(t);
	lh_plan_free(p);
	lh_graph_free(g);
	lh_hw_free(hw);
}

int main(int argc, char **argv)
{
	guint32 n = argc > 1 ? (guint32)strtoul(argv[1], NULL, 10) : 1000000;
	g_autofree char *tmp = NULL;
	const char *dir = argc > 2 ? argv[2] : NULL;
	if (!dir) {
		tmp = g_dir_make_tmp("bench-run-XXXXXX", NULL);
		dir = tmp;
	}
	g_mkdir_with_parents(dir, 0755);
	g_autofree char *path = g_build_filename(dir, "graph.json", NULL);
	{
		lh_models_init();
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
	printf("      ops   read JSON   schedule   validate   simulate    metrics      total"
	       "   simulated         peak RSS\n");
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		child(path);
		fflush(stdout);
		_exit(0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	if (tmp) {
		g_unlink(path);
		g_rmdir(tmp);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
