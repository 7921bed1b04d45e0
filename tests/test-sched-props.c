/* lhsim tests — property test: every scheduler on 200 seeded random DAGs with copies and
 * collectives makes a valid plan that simulates without deadlock and no faster than the
 * lower bound (DESIGN 4.4). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>

#include "helpers.h"

#define N_GRAPHS 200

typedef struct {
	char sched[32];
	char kv[2][48];
} Case;

static Case cases[] = {
	{"serial", {"", ""}},
	{"lhs", {"", ""}},
	{"lhs", {"async-compute-limit=3", "compute-streams=2"}},
	{"lhs", {"estimator=xla", "memory-limit=0.0001"}},
	{"lhs", {"delay-offload-start=true", "collective-limit=2"}},
	{"iree", {"", ""}},
	{"iree", {"favor=max-concurrency", "streams=3"}},
	{"iree", {"concurrency=none", ""}},
	{"heft", {"streams=3", ""}},
	{"cpath", {"streams=3", "collective-limit=2"}},
};

ParameterizedTestParameters(props, random_dags)
{
	return cr_make_param_array(Case, cases, G_N_ELEMENTS(cases));
}

ParameterizedTest(Case *c, props, random_dags)
{
	lh_models_init();
	g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", NULL);
	cr_assert(hw);
	GError *e = NULL;
	const LhScheduler *s = lh_scheduler_lookup(c->sched, &e);
	cr_assert(s, "%s", e ? e->message : "?");
	const char *kv[3] = {NULL, NULL, NULL};
	int nkv = 0;
	for (int k = 0; k < 2; k++)
		if (c->kv[k][0])
			kv[nkv++] = c->kv[k];
	for (guint64 seed = 1; seed <= N_GRAPHS; seed++) {
		LhRandomDagOptions o;
		lh_random_dag_options_init(&o);
		o.seed = seed;
		o.n_ops = 40 + (guint32)(seed % 5) * 20; /* 40..120 ops */
		o.width = 2 + (guint32)(seed % 7);
		o.p_copy = 0.2;
		o.p_collective = 0.15;
		o.p_async = 0.2;
		g_autoptr(LhGraph) g = lh_gen_random_dag(&o);
		g_autoptr(LhPlan) p = lh_scheduler_run(s, g, hw, kv, NULL, &e);
		cr_assert(p, "%s seed %lu: %s", c->sched, (unsigned long)seed, e ? e->message : "?");
		cr_assert(lh_plan_validate(p, g, NULL, &e), "%s %s seed %lu: %s", c->sched, c->kv[0],
			  (unsigned long)seed, e ? e->message : "?");
		LhSimOptions opt = {.skip_validate = TRUE};
		g_autoptr(LhTrace) t = lh_simulate(g, hw, p, &opt, NULL, &e);
		cr_assert(t, "%s %s seed %lu: %s", c->sched, c->kv[0], (unsigned long)seed,
			  e ? e->message : "?");
		LhMetrics m;
		lh_metrics_compute(t, g, hw, p, &m);
		/* Event times are whole ns; the bound is not: allow its rounding. */
		cr_assert_geq((double)m.makespan, m.bounds.bound - 1,
			      "%s %s seed %lu: makespan %ld below the %s bound %.0f", c->sched,
			      c->kv[0], (unsigned long)seed, (long)m.makespan, m.bounds.binding,
			      m.bounds.bound);
		lh_metrics_clear(&m);
	}
}

/* lhs keeps its ready set so that each step compares only the nodes that can win (see
 * schedulers/lhs.c); LHSIM_LHS_REFERENCE makes it compare every ready node, as XLA does. Both
 * must give the same plan, command for command. */
Test(props, lhs_fast_ready_set_matches_the_full_scan, .timeout = 120)
{
	lh_models_init();
	g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", NULL);
	const LhScheduler *s = lh_scheduler_find("lhs");
	/* memory-limit=0.5 GiB puts these graphs under memory pressure, where lhs compares
	 * every ready node while the limit is near and prunes while it is not. */
	const char *kvs[4][3] = {{NULL}, {"estimator=xla", "async-compute-limit=3", NULL},
				 {"delay-offload-start=true", "collective-limit=2", NULL},
				 {"memory-limit=0.5", NULL}};
	for (guint64 seed = 1; seed <= 60; seed++) {
		LhRandomDagOptions o;
		lh_random_dag_options_init(&o);
		o.seed = seed;
		o.n_ops = 100 + (guint32)(seed % 4) * 100;
		o.width = 3 + (guint32)(seed % 13);
		o.p_copy = 0.2;
		o.p_collective = 0.15;
		o.p_async = 0.2;
		g_autoptr(LhGraph) g = lh_gen_random_dag(&o);
		const char **kv = kvs[seed % 4];
		GError *e = NULL;
		g_autoptr(LhPlan) fast = lh_scheduler_run(s, g, hw, kv, NULL, &e);
		cr_assert(fast, "%s", e ? e->message : "?");
		g_setenv("LHSIM_LHS_REFERENCE", "1", TRUE);
		g_autoptr(LhPlan) ref = lh_scheduler_run(s, g, hw, kv, NULL, &e);
		g_unsetenv("LHSIM_LHS_REFERENCE");
		cr_assert(ref, "%s", e ? e->message : "?");
		g_autofree char *a = lh_plan_to_data(fast, g), *b = lh_plan_to_data(ref, g);
		cr_assert_str_eq(a, b, "seed %lu: the fast ready set changed the plan",
				 (unsigned long)seed);
	}
}
