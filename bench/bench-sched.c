/* lhsim bench — scheduling time per scheduler on large random layered DAGs.
 *
 * For each size (default 10^3, 10^4, 10^5 and 10^6 ops) it builds a seeded random layered DAG
 * with kernels, copies and collectives (lh_gen_random_dag, seed 1, width 64, defaults
 * otherwise) and times each scheduler's plan() alone (best of 3 below 10^5 ops, one run
 * above), on the H100 model with default parameters (heft and cpath: 4 streams). Once a
 * scheduler takes more than 2 s at one size it is skipped at larger ones ("-"). No plan is
 * simulated: this measures the schedulers, bench-engine the engine.
 *
 * usage: bench-sched [-c] [-r REPS] [-s NAME[,NAME...]] [N ...]
 *   -c  time by the process's CPU time, not the wall clock (on a loaded machine)
 *   -r  best of REPS runs at every size (default: 3 below 10^5 ops, 1 above); on a shared
 *       machine the best of several is the steadier figure
 *   -s  time these schedulers instead of the list below, each NAME, NAME* (see lhs*) or
 *       NAME:K=V[:K=V...] with parameters (-s lhs,lhs:memory-limit=40,heft)
 */
#include "lhsim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* "lhs*" is lhs with memory-limit=100000 GiB: the same algorithm without memory pressure.
 * On these graphs lhs's bottom-up order comes near the H100's 80 GiB from about 5*10^4 ops
 * on, so with the default limit XLA's memory rules rank the ready nodes by their memory
 * change (at 10^5 ops at 81 % of the steps, over the limit at 79 %; lhs's memory index finds
 * the winner without comparing them all); lhs* shows the cost of the rest of the scheduler. */
static const char *const scheds[] = {"serial", "lhs", "lhs*", "iree", "heft", "cpath", NULL};

/* With -c, the process's CPU time instead of the wall clock: on a machine shared with other
 * jobs the wall clock counts the time the process waited for a core. */
static gboolean cpu_time;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(cpu_time ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Times NAME, NAME* (see above) or NAME:K=V[:K=V...] (a scheduler with parameters). */
static double time_plan(const char *name, const LhGraph *g, const LhHw *hw, int reps)
{
	const char *const star[] = {"memory-limit=100000", NULL};
	gboolean is_star = g_str_has_suffix(name, "*");
	g_autofree char *unstarred = g_strndup(name, strlen(name) - (is_star ? 1 : 0));
	g_auto(GStrv) parts = g_strsplit(unstarred, ":", -1);
	const LhScheduler *s = lh_scheduler_find(parts[0]);
	if (!s) {
		fprintf(stderr, "bench-sched: no scheduler '%s'\n", parts[0]);
		exit(2);
	}
	const char *const *params = is_star ? star : (const char *const *)parts + 1;
	double best = G_MAXDOUBLE;
	for (int r = 0; r < reps; r++) {
		GError *e = NULL;
		double t0 = now_s();
		LhPlan *p = lh_scheduler_run(s, g, hw, params, NULL, &e);
		double t1 = now_s();
		if (!p) {
			fprintf(stderr, "bench-sched: %s: %s\n", name, e->message);
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
		fprintf(stderr, "bench-sched: %s\n", e->message);
		return 1;
	}
	guint32 sizes[16] = {1000, 10000, 100000, 1000000};
	int ns = 4, first = 1, reps = 0;
	g_auto(GStrv) cols = g_strdupv((char **)scheds);
	if (argc > first && strcmp(argv[first], "-c") == 0) {
		cpu_time = TRUE;
		first++;
	}
	if (argc > first + 1 && strcmp(argv[first], "-r") == 0) {
		reps = atoi(argv[first + 1]);
		if (reps < 1) {
			fprintf(stderr, "bench-sched: -r needs a count of at least 1\n");
			return 2;
		}
		first += 2;
	}
	if (argc > first + 1 && strcmp(argv[first], "-s") == 0) {
		g_strfreev(cols);
		cols = g_strsplit(argv[first + 1], ",", -1);
		first += 2;
	}
	guint nc = g_strv_length(cols);
	if (argc > first) {
		ns = 0;
		for (int i = first; i < argc && ns < 16; i++)
			sizes[ns++] = (guint32)strtoul(argv[i], NULL, 10);
	}
	g_autofree gboolean *skip = g_new0(gboolean, nc);
	printf("%10s", "ops");
	for (guint k = 0; k < nc; k++)
		printf("  %10s", cols[k]);
	printf("\n");
	for (int i = 0; i < ns; i++) {
		LhRandomDagOptions o;
		lh_random_dag_options_init(&o);
		o.seed = 1;
		o.n_ops = sizes[i];
		o.width = 64;
		LhGraph *g = lh_gen_random_dag(&o);
		printf("%10u", sizes[i]);
		fflush(stdout);
		for (guint k = 0; k < nc; k++) {
			if (skip[k]) {
				printf("  %10s", "-");
				continue;
			}
			double t = time_plan(cols[k], g, hw,
			                     reps                ? reps
			                     : sizes[i] < 100000 ? 3
			                                         : 1);
			if (t > 2) /* 10x more ops would take minutes for an O(n^2) scheduler */
				skip[k] = TRUE;
			char *f = lh_format_ns(t * 1e9);
			printf("  %10s", f);
			g_free(f);
			fflush(stdout);
		}
		printf("\n");
		lh_graph_free(g);
	}
	lh_hw_free(hw);
	return 0;
}
