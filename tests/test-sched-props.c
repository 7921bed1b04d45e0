/* lhsim tests — property test: every scheduler on 200 seeded random DAGs with copies and
 * collectives makes a valid plan that simulates without deadlock and no faster than the
 * lower bound (docs/design.md#lower-bounds). */
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
    {"iree-cost", {"", ""}},
    {"iree-cost", {"regions=list", "streams=3"}},
    {"iree-cost", {"regions=split", "concurrency=order"}},
    {"search", {"evals=20", "start=heft"}},
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
		cr_assert(p, "%s seed %lu: %s", c->sched, (unsigned long)seed,
		          e ? e->message : "?");
		cr_assert(lh_plan_validate(p, g, NULL, &e), "%s %s seed %lu: %s", c->sched,
		          c->kv[0], (unsigned long)seed, e ? e->message : "?");
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

/* Runs lhs on @g with @kv, fast or with the reference scan; returns the plan as data and, for
 * the fast run, the counts of its explain summary line "lhs: memory rules at N of M steps, K
 * of them at or over the limit" (N and K). */
static char *lhs_plan_data(const LhGraph *g, const LhHw *hw, const char *const *kv,
                           gboolean reference, guint *n_mem, guint *n_over)
{
	const LhScheduler *s = lh_scheduler_find("lhs");
	char *buf = NULL;
	size_t len = 0;
	FILE *f = reference ? NULL : open_memstream(&buf, &len);
	if (reference)
		g_setenv("LHSIM_LHS_REFERENCE", "1", TRUE);
	GError *e = NULL;
	g_autoptr(LhPlan) p = lh_scheduler_run(s, g, hw, kv, f, &e);
	g_unsetenv("LHSIM_LHS_REFERENCE");
	if (f)
		fclose(f);
	cr_assert(p, "%s", e ? e->message : "?");
	if (buf) {
		const char *at = strstr(buf, "lhs: memory rules at ");
		guint steps = 0;
		cr_assert(at && sscanf(at, "lhs: memory rules at %u of %u steps, %u of them", n_mem,
		                       &steps, n_over) == 3,
		          "no memory summary in the explain output");
		free(buf);
	}
	return lh_plan_to_data(p, g);
}

/* The explain summary, by hand. Program order P0 P1 C0 C1 end; Ci reads Pi's 100 MB output
 * (the other outputs are empty), end reads C0 and C1; the largest use of a node is 100 MB.
 * Bottom-up: end (usage 0: no pressure); C0 or C1 with usage 0: kOriginalOrder takes C1, P1's
 * buffer becomes live (100 MB); then C0 or P1 with usage 100 MB, the memory rules step 1;
 * P1 frees its buffer (usage 0); C0 (no pressure) makes P0's live (100 MB); P0 is the memory
 * rules step 2. So the memory rules act at 2 of the 5 steps; with memory-limit=0.15 GiB
 * (161.06 MB) usage stays under it (100 MB), with memory-limit=0.05 GiB (53.69 MB) it is over
 * it at both. */
Test(props, lhs_memory_summary)
{
	lh_models_init();
	g_autoptr(LhGraph) g = lh_graph_new("mem");
	guint32 p0 = t_kernel(g, "P0", 1000, 1), p1 = t_kernel(g, "P1", 1000, 1);
	guint32 c0 = t_kernel(g, "C0", 1000, 1), c1 = t_kernel(g, "C1", 1000, 1);
	guint32 end = t_kernel(g, "end", 1000, 1);
	lh_graph_op_mut(g, p0)->out_bytes = 100000000;
	lh_graph_op_mut(g, p1)->out_bytes = 100000000;
	t_dep(g, c0, p0);
	t_dep(g, c1, p1);
	t_dep(g, end, c0);
	t_dep(g, end, c1);
	t_finish(g);
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	const char *under[] = {"memory-limit=0.15", NULL}, *over[] = {"memory-limit=0.05", NULL};
	guint n_mem = 0, n_over = 0;
	g_free(lhs_plan_data(g, hw, under, FALSE, &n_mem, &n_over));
	cr_assert_eq(n_mem, 2);
	cr_assert_eq(n_over, 0);
	g_free(lhs_plan_data(g, hw, over, FALSE, &n_mem, &n_over));
	cr_assert_eq(n_mem, 2);
	cr_assert_eq(n_over, 2);
}

/* lhs keeps its ready set so that each step compares only the nodes that can win, and under
 * memory pressure a memory index that finds them (see schedulers/lhs-ready.c); LHSIM_LHS_REFERENCE
 * makes it compare every ready node, as XLA does. Both must give the same plan, command for
 * command, on every graph and configuration. These graphs hold 2 to 9 GB of buffers: without
 * a limit (the H100's 80 GiB) there is no pressure; the small limits put them under the
 * memory rules both over and under the limit, which the explain summary of each
 * configuration shows. */
Test(props, lhs_fast_ready_set_matches_the_full_scan, .timeout = 300)
{
	lh_models_init();
	g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", NULL);
	static const char *const kvs[][4] = {
	    {NULL},
	    {"estimator=xla", "async-compute-limit=3", NULL},
	    {"delay-offload-start=true", "collective-limit=2", NULL},
	    {"memory-limit=0.5", NULL},
	    {"memory-limit=0.1", "estimator=xla", NULL},
	    {"memory-limit=0.3", "delay-offload-start=true", "collective-limit=2", NULL},
	    {"memory-limit=1", "async-compute-limit=1", "p2p-limit=1", NULL},
	    {"memory-limit=0.02", "collective-limit=3", NULL},
	};
	for (gsize k = 0; k < G_N_ELEMENTS(kvs); k++) {
		guint mem = 0, over = 0;
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
			guint n_mem = 0, n_over = 0;
			g_autofree char *a = lhs_plan_data(g, hw, kvs[k], FALSE, &n_mem, &n_over);
			g_autofree char *b = lhs_plan_data(g, hw, kvs[k], TRUE, NULL, NULL);
			cr_assert_str_eq(a, b, "%s seed %lu: the fast ready set changed the plan",
			                 kvs[k][0] ? kvs[k][0] : "defaults", (unsigned long)seed);
			mem += n_mem;
			over += n_over;
		}
		gboolean limited = kvs[k][0] && g_str_has_prefix(kvs[k][0], "memory-limit=");
		cr_log_info("lhs %s: memory rules at %u steps, %u at or over the limit",
		            kvs[k][0] ? kvs[k][0] : "defaults", mem, over);
		if (!limited) {
			cr_assert_eq(mem, 0, "%s: memory pressure without a limit", kvs[k][0]);
		} else {
			cr_assert_gt(over, 0, "%s: never over the limit", kvs[k][0]);
			cr_assert_gt(mem - over, 0, "%s: never under the limit", kvs[k][0]);
		}
	}
}
