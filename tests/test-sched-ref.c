/* lhsim tests — cpath and heft against their references (tests/cpath-ref.c, tests/heft-ref.c:
 * the schedulers before issue 12 indexed their ready sets and busy lists): the same plan, text
 * for text, on random DAGs of every op kind, with ties (equal costs) and without. */
#include "helpers.h"

#include <criterion/criterion.h>

extern const LhScheduler lh_ref_sched_cpath, lh_ref_sched_heft;

static void same_plan(const LhScheduler *a, const LhScheduler *b, const LhGraph *g, const LhHw *hw,
                      const char *const *kv, const char *what)
{
	g_autoptr(GError) e1 = NULL, e2 = NULL;
	g_autoptr(LhPlan) p = lh_scheduler_run(a, g, hw, kv, NULL, &e1);
	g_autoptr(LhPlan) q = lh_scheduler_run(b, g, hw, kv, NULL, &e2);
	cr_assert(p && q, "%s", what);
	g_autofree char *x = lh_plan_to_data(p, g);
	g_autofree char *y = lh_plan_to_data(q, g);
	cr_assert_str_eq(x, y, "%s", what);
}

Test(sched_ref, cpath_and_heft_plan_as_before)
{
	lh_models_init();
	g_autoptr(GRand) r = g_rand_new_with_seed(3);
	static const char *const k1[] = {"streams=1", NULL};
	static const char *const k2[] = {"streams=3", NULL};
	static const char *const k3[] = {"streams=8", "async-compute-limit=1", NULL};
	static const char *const k4[] = {"streams=2", NULL};
	for (int trial = 0; trial < 24; trial++) {
		LhRandomDagOptions o;
		lh_random_dag_options_init(&o);
		o.n_ops = (guint32)g_rand_int_range(r, 10, trial < 20 ? 3000 : 20000);
		o.width = (guint32)g_rand_int_range(r, 1, 100);
		o.seed = (guint64)trial;
		o.p_copy = g_rand_double_range(r, 0, 0.4);
		o.p_collective = g_rand_double_range(r, 0, 0.3);
		o.p_async = g_rand_double_range(r, 0, 0.5);
		g_autoptr(LhGraph) g = lh_gen_random_dag(&o);
		/* "ideal" makes many costs equal: ties everywhere. */
		g_autoptr(LhHw) hw = lh_hw_lookup(trial % 3 == 0 ? "ideal" : "h100-sxm", NULL);
		char what[64];
		g_snprintf(what, sizeof what, "trial %d, %u ops", trial, o.n_ops);
		const char *const *kc = trial % 2 ? k1 : k3;
		const char *const *kh = trial % 2 ? k2 : k4;
		same_plan(&lh_sched_cpath, &lh_ref_sched_cpath, g, hw, NULL, what);
		same_plan(&lh_sched_cpath, &lh_ref_sched_cpath, g, hw, kc, what);
		same_plan(&lh_sched_heft, &lh_ref_sched_heft, g, hw, NULL, what);
		same_plan(&lh_sched_heft, &lh_ref_sched_heft, g, hw, kh, what);
	}
}
