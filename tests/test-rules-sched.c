/* lhsim tests — rules of the `lhs` scheduler that no other test pinned down (issue 15, item
 * 5): memcpy-limit, XLA's kUnlockDone rule and the costs of XLA's ApproximateLatencyEstimator
 * (schedulers/lhs.c, docs/schedulers.md). Expected values are worked out by hand in the
 * comments. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "helpers.h"

/* Runs lhs with NULL-terminated "k=v" strings; the --explain text goes to *@explain when it
 * is not NULL. The plan is validated. */
static LhPlan *lhs(const LhGraph *g, const LhHw *hw, const char **kv, char **explain)
{
	GError *e = NULL;
	const LhScheduler *s = lh_scheduler_lookup("lhs", &e);
	cr_assert(s, "%s", e ? e->message : "?");
	char *buf = NULL;
	size_t len = 0;
	FILE *f = explain ? open_memstream(&buf, &len) : NULL;
	LhPlan *p = lh_scheduler_run(s, g, hw, kv, f, &e);
	if (f)
		fclose(f);
	cr_assert(p, "lhs: %s", e ? e->message : "?");
	cr_assert(lh_plan_validate(p, g, "lhs", &e), "%s", e ? e->message : "?");
	if (explain)
		*explain = buf;
	return p;
}

/* Most copy-d2d ops running at one instant of @t. */
static guint32 d2d_overlap(const LhGraph *g, const LhTrace *t)
{
	guint32 best = 0;
	for (guint32 i = 0; i < lh_graph_n_ops(g); i++) {
		if (lh_graph_op(g, i)->kind != LH_OP_COPY_D2D)
			continue;
		guint32 k = 0;
		for (guint32 j = 0; j < lh_graph_n_ops(g); j++)
			if (lh_graph_op(g, j)->kind == LH_OP_COPY_D2D &&
			    t->ops[j].start <= t->ops[i].start && t->ops[i].start < t->ops[j].end)
				k++;
		best = MAX(best, k);
	}
	return best;
}

static guint32 streams_of_role(const LhPlan *p, LhStreamRole r)
{
	guint32 k = 0;
	for (guint32 s = 0; s < lh_plan_n_streams(p); s++)
		k += lh_plan_stream(p, s)->role == r;
	return k;
}

/* memcpy-limit: device-to-device copies in flight at once, 0 = unlimited. Four independent
 * async copy-d2d ops (class memcpy), each needed by the last kernel. */
Test(rules_sched, memcpy_limit_bounds_copies_in_flight)
{
	g_autoptr(LhGraph) g = lh_graph_new("g");
	guint32 end = t_kernel(g, "end", 1000, 1.0);
	for (int i = 0; i < 4; i++) {
		char name[16];
		g_snprintf(name, sizeof name, "cp%d", i);
		guint32 c = t_op(g, name, LH_OP_COPY_D2D, 50000);
		lh_graph_op_mut(g, c)->async = 1;
		t_dep(g, end, c);
	}
	t_finish(g);
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	/* limit L (1, 2, 3): L copies in flight at most, on L memcpy streams; the four copies are
	 * independent and all ready at once, so exactly L overlap. 0: all four. */
	static const struct {
		const char *kv;
		guint32 expect;
	} cases[] = {{"memcpy-limit=1", 1},
	             {"memcpy-limit=2", 2},
	             {"memcpy-limit=3", 3},
	             {"memcpy-limit=0", 4}};
	for (gsize c = 0; c < G_N_ELEMENTS(cases); c++) {
		const char *kv[] = {cases[c].kv, NULL};
		g_autoptr(LhPlan) p = lhs(g, hw, kv, NULL);
		g_autoptr(LhTrace) t = t_sim(g, hw, p);
		cr_expect_eq(d2d_overlap(g, t), cases[c].expect, "%s: %u copies overlap",
		             cases[c].kv, d2d_overlap(g, t));
		cr_expect_eq(streams_of_role(p, LH_ROLE_MEMCPY), cases[c].expect, "%s: %u streams",
		             cases[c].kv, streams_of_role(p, LH_ROLE_MEMCPY));
	}
}

/* The pick of node @name in the explain text: its line "lhs: t=T UNITS TYPE KIND 'name'
 * (REASON)". Returns the line (caller frees) or NULL. */
static char *pick_line(const char *explain, const char *type, const char *name)
{
	g_autofree char *needle = g_strdup_printf(" %s ", type);
	g_autofree char *quoted = g_strdup_printf("'%s' (", name);
	g_auto(GStrv) lines = g_strsplit(explain, "\n", -1);
	for (char **l = lines; *l; l++)
		if (g_str_has_prefix(*l, "lhs: t=") && strstr(*l, quoted) && strstr(*l, needle))
			return g_strdup(*l);
	return NULL;
}

/* kUnlockDone: between two ready nodes that tie on every earlier rule, the one with a done
 * among its operands goes first (bottom-up), i.e. later in the program.
 *
 * u reads all-reduce ar1's result (ar1's done is u's operand); v reads kernel w, which reads
 * all-reduce ar2. u and v are the sinks, ready first. Costs: estimator=xla, 1 per node and
 * 5000 between a start and its done; so the async depth of u is ar1's 5000 and of v, through
 * w, ar2's 5000: they tie on kAsyncDepth (and on every rule before it: kernels, both ready at
 * t=0). kAvoidWaste: no node is ready later. kUnlockDone: u has a done operand, v not: u is
 * picked first, so u is the last op of the program. Without the rule, kCreatesMoreReadyNodes
 * ties (each makes one node ready) and kOriginalOrder picks v (added after u) first. */
Test(rules_sched, unlock_done_picks_the_reader_of_a_done_first)
{
	g_autoptr(LhGraph) g = lh_graph_new("g");
	guint32 ar1 = t_op(g, "ar1", LH_OP_ALL_REDUCE, 1000);
	guint32 u = t_kernel(g, "u", 100, 1.0);
	guint32 ar2 = t_op(g, "ar2", LH_OP_ALL_REDUCE, 1000);
	guint32 w = t_kernel(g, "w", 100, 1.0);
	guint32 v = t_kernel(g, "v", 100, 1.0);
	lh_graph_op_mut(g, ar1)->async = 1;
	lh_graph_op_mut(g, ar2)->async = 1;
	t_dep(g, u, ar1);
	t_dep(g, w, ar2);
	t_dep(g, v, w);
	t_finish(g);
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	const char *kv[] = {"estimator=xla", NULL};
	g_autofree char *ex = NULL;
	g_autoptr(LhPlan) p = lhs(g, hw, kv, &ex);
	g_autofree char *lu = pick_line(ex, "kernel", "u");
	cr_assert_not_null(lu, "%s", ex);
	cr_expect(g_str_has_prefix(lu, "lhs: t=0 "), "%s", lu);
	cr_expect(strstr(lu, "(kUnlockDone)"), "%s", lu);
	/* In program order v runs before u: the last run command of the plan is u. */
	guint32 last = G_MAXUINT32;
	for (guint32 c = 0; c < lh_plan_n_cmds(p); c++)
		if (lh_plan_cmd(p, c)->kind == LH_CMD_RUN)
			last = (guint32)lh_plan_cmd(p, c)->arg;
	cr_expect_eq(last, u, "last op: %s", lh_graph_op(g, last)->name);
	(void)v;
}

/* estimator=xla: "1 per node, 1000 for a loop fusion ("fusion:kLoop"), 5000 for an output
 * fusion or a convolution; 1 on other edges". A chain a -> b -> c -> d of kernels, scheduled
 * bottom-up: each node's time is max(now, its user's time + 1) and now advances by its cost. */
Test(rules_sched, xla_estimator_costs_loop_and_output_fusions)
{
	g_autoptr(LhGraph) g = lh_graph_new("g");
	guint32 a = t_kernel(g, "a", 100, 1.0);
	guint32 b = t_kernel(g, "b", 100, 1.0);
	guint32 c = t_kernel(g, "c", 100, 1.0);
	guint32 d = t_kernel(g, "d", 100, 1.0);
	t_dep(g, b, a);
	t_dep(g, c, b);
	t_dep(g, d, c);
	lh_graph_set_opcode(g, c, "fusion:kLoop");
	lh_graph_set_opcode(g, b, "fusion:kOutput");
	t_finish(g);
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	const char *kv[] = {"estimator=xla", NULL};
	g_autofree char *ex = NULL;
	g_autoptr(LhPlan) p = lhs(g, hw, kv, &ex);
	/* d (no opcode, cost 1) at t=0, now 1. c (kLoop, 1000) at max(1, 0 + 1) = 1, now 1001.
	 * b (kOutput, 5000) at max(1001, 1 + 1) = 1001, now 6001. a at max(6001, 1002) = 6001. */
	static const struct {
		const char *name, *t;
	} picks[] = {{"d", "t=0 "}, {"c", "t=1 "}, {"b", "t=1001 "}, {"a", "t=6001 "}};
	for (gsize i = 0; i < G_N_ELEMENTS(picks); i++) {
		g_autofree char *l = pick_line(ex, "kernel", picks[i].name);
		cr_assert_not_null(l, "%s", ex);
		cr_expect(strstr(l, picks[i].t), "%s: expected %s", l, picks[i].t);
	}
	(void)a;
	(void)d;
}

/* "convolution" costs 5000 as well; any other opcode 1. */
Test(rules_sched, xla_estimator_costs_convolutions_and_other_opcodes)
{
	g_autoptr(LhGraph) g = lh_graph_new("g");
	guint32 a = t_kernel(g, "a", 100, 1.0);
	guint32 b = t_kernel(g, "b", 100, 1.0);
	guint32 c = t_kernel(g, "c", 100, 1.0);
	t_dep(g, b, a);
	t_dep(g, c, b);
	lh_graph_set_opcode(g, c, "fusion:kInput");
	lh_graph_set_opcode(g, b, "convolution");
	t_finish(g);
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	const char *kv[] = {"estimator=xla", NULL};
	g_autofree char *ex = NULL;
	g_autoptr(LhPlan) p = lhs(g, hw, kv, &ex);
	/* c (kInput: 1) at 0, now 1; b (convolution: 5000) at 1, now 5001; a at 5001. */
	g_autofree char *lb = pick_line(ex, "kernel", "b");
	g_autofree char *la = pick_line(ex, "kernel", "a");
	cr_assert(lb && la, "%s", ex);
	cr_expect(strstr(lb, "t=1 "), "%s", lb);
	cr_expect(strstr(la, "t=5001 "), "%s", la);
}
