/* lhsim bench — iree-cost's scheduling time, by region step, against iree's.
 *
 * For each size (default 10^3 and 10^4 ops) it builds the seeded random layered DAG that
 * bench-sched uses (lh_gen_random_dag, seed 1, width 64) and times plan() alone, best of 5,
 * on the H100 model, in process CPU time (clock_gettime CLOCK_PROCESS_CPUTIME_ID: the machine is
 * shared, and CPU time moves less with the load than wall time): iree, then iree-cost with each
 * region step (its plan is not simulated when the step is given) and with regions=auto (each step's
 * plan simulated, the fastest kept), and auto with memory-limit at iree's peak (every budget
 * simulated).
 *
 * usage: bench-iree-cost [N ...]
 */
#include "lhsim.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *const runs[][2] = {
    {"iree", NULL},
    {"iree-cost", "regions=reference"},
    {"iree-cost", "regions=split"},
    {"iree-cost", "regions=list"},
    {"iree-cost", NULL},
    {"iree-cost", "memory-limit"},
};

static double time_plan(const char *name, const char *kv0, const LhGraph *g, const LhHw *hw)
{
	const char *const kv[] = {kv0, NULL};
	const LhScheduler *s = lh_scheduler_find(name);
	double best = G_MAXDOUBLE;
	for (int r = 0; r < 5; r++) {
		GError *e = NULL;
		double t0 = cpu_s();
		LhPlan *p = lh_scheduler_run(s, g, hw, kv, NULL, &e);
		double t1 = cpu_s();
		if (!p) {
			fprintf(stderr, "bench-iree-cost: %s %s: %s\n", name, kv0 ? kv0 : "",
			        e->message);
			exit(1);
		}
		lh_plan_free(p);
		best = MIN(best, t1 - t0);
	}
	return best;
}

int main(int argc, char **argv)
{
	lh_models_init();
	GError *e = NULL;
	LhHw *hw = lh_hw_lookup("h100-sxm", &e);
	if (!hw) {
		fprintf(stderr, "bench-iree-cost: %s\n", e->message);
		return 1;
	}
	guint32 sizes[16] = {1000, 10000};
	int ns = 2;
	if (argc > 1) {
		ns = 0;
		for (int i = 1; i < argc && ns < 16; i++)
			sizes[ns++] = (guint32)strtoul(argv[i], NULL, 10);
	}
	for (int i = 0; i < ns; i++) {
		LhRandomDagOptions o;
		lh_random_dag_options_init(&o);
		o.seed = 1;
		o.n_ops = sizes[i];
		o.width = 64;
		LhGraph *g = lh_gen_random_dag(&o);
		/* iree's peak, for the memory-limit row. */
		LhPlan *ip = lh_scheduler_run(lh_scheduler_find("iree"), g, hw, NULL, NULL, &e);
		LhSimOptions so = {0};
		LhTrace *t = ip ? lh_simulate(g, hw, ip, &so, NULL, &e) : NULL;
		if (!t) {
			fprintf(stderr, "bench-iree-cost: iree: %s\n", e->message);
			return 1;
		}
		char *lim = g_strdup_printf("memory-limit=%.6f", t->peak_device / 1073741824.0);
		lh_trace_free(t);
		lh_plan_free(ip);
		printf("%u ops\n", sizes[i]);
		for (gsize k = 0; k < G_N_ELEMENTS(runs); k++) {
			const char *kv = runs[k][1] && g_str_equal(runs[k][1], "memory-limit")
			                     ? lim
			                     : runs[k][1];
			double s = time_plan(runs[k][0], kv, g, hw);
			char *f = lh_format_ns(s * 1e9);
			printf("  %-10s %-28s %10s\n", runs[k][0], kv ? kv : "(auto)", f);
			g_free(f);
			fflush(stdout);
		}
		g_free(lim);
		lh_graph_free(g);
	}
	lh_hw_free(hw);
	return 0;
}
