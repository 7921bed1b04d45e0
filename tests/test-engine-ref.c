/* lhsim tests — the engine against the reference engine (tests/engine-ref.c, main's engine
 * with the network, before the faster engine) on random graphs, plans and hardware: the same
 * traces, bit for bit (every op's issue, start, end, stream and engine, every command's issue
 * time, the memory curve, the peaks), and the same error when a run fails. Collectives with
 * member sets across the nodes of a cluster take the network. */
#include "helpers.h"

#include <criterion/criterion.h>
#include <string.h>

LhTrace *lh_ref_simulate(const LhGraph *g, const LhHw *hw, const LhPlan *plan,
                         const LhSimOptions *opt, gboolean *over_memory, GError **error);

/* The bench's plan: ops in topological order round-robin on S streams, a signal after an op
 * with a consumer on another stream, a wait before a consumer (one per producer stream). */
static LhPlan *round_robin(const LhGraph *g, guint S, GRand *r)
{
	LhPlan *p = lh_plan_new();
	for (guint s = 0; s < S; s++) {
		char name[16];
		g_snprintf(name, sizeof name, "s%u", s);
		lh_plan_add_stream(p, name, LH_ROLE_COMPUTE);
	}
	guint32 n = lh_graph_n_ops(g);
	const guint32 *topo = lh_graph_topo(g);
	g_autofree guint32 *stream = g_new(guint32, n);
	g_autofree guint32 *event = g_new(guint32, n);
	for (guint32 t = 0; t < n; t++) {
		guint32 v = topo[t];
		event[v] = G_MAXUINT32;
		stream[v] = (guint32)g_rand_int_range(r, 0, (gint32)S);
		if (lh_graph_op(g, v)->kind == LH_OP_INPUT)
			continue;
		guint32 nd;
		const guint32 *deps = lh_graph_deps(g, v, &nd);
		for (guint32 k = 0; k < nd; k++)
			if (event[deps[k]] != G_MAXUINT32 && stream[deps[k]] != stream[v])
				lh_plan_wait(p, stream[v], event[deps[k]]);
		lh_plan_run(p, stream[v], v);
		if (g_rand_int_range(r, 0, 30) == 0)
			lh_plan_host(p, (guint64)g_rand_int_range(r, 0, 5000));
		if (g_rand_int_range(r, 0, 40) == 0)
			lh_plan_sync(p, stream[v]);
		event[v] = lh_plan_new_event(p);
		lh_plan_signal(p, stream[v], event[v]);
	}
	return p;
}

static void compare(const LhGraph *g, const LhHw *hw, const LhPlan *p, gboolean strict,
                    const char *what)
{
	LhSimOptions opt = {.strict_memory = strict};
	g_autoptr(GError) e1 = NULL, e2 = NULL;
	gboolean o1 = FALSE, o2 = FALSE;
	g_autoptr(LhTrace) a = lh_simulate(g, hw, p, &opt, &o1, &e1);
	g_autoptr(LhTrace) b = lh_ref_simulate(g, hw, p, &opt, &o2, &e2);
	cr_assert_eq(a != NULL, b != NULL, "%s: %s / reference %s", what, e1 ? e1->message : "ok",
	             e2 ? e2->message : "ok");
	if (!a) {
		cr_assert_str_eq(e1->message, e2->message, "%s", what);
		cr_assert_eq(e1->code, e2->code, "%s", what);
		return;
	}
	cr_assert_eq(o1, o2, "%s: over memory", what);
	t_same_trace(a, b, what, "reference");
}

Test(engine_ref, same_traces_on_random_graphs_and_plans)
{
	lh_models_init();
	static const char *const scheds[] = {"serial", "lhs", "heft", "cpath", "iree", NULL};
	g_autoptr(GRand) r = g_rand_new_with_seed(12);
	for (int trial = 0; trial < 120; trial++) {
		guint n = (guint)g_rand_int_range(r, 3, trial < 100 ? 200 : 3000);
		g_autoptr(LhGraph) g = t_random_graph(r, n, 0, FALSE);
		g_autoptr(LhHw) hw = t_random_hw(r, FALSE);
		gboolean strict = g_rand_int_range(r, 0, 4) == 0;
		char what[64];
		g_snprintf(what, sizeof what, "trial %d (%u ops), round robin", trial, n);
		g_autoptr(LhPlan) p = round_robin(g, (guint)g_rand_int_range(r, 1, 9), r);
		compare(g, hw, p, strict, what);
		const char *sn = scheds[g_rand_int_range(r, 0, 5)];
		g_autoptr(GError) e = NULL;
		g_autoptr(LhPlan) q =
		    lh_scheduler_run(lh_scheduler_find(sn), g, hw, NULL, NULL, &e);
		cr_assert_not_null(q, "trial %d: %s: %s", trial, sn, e->message);
		g_snprintf(what, sizeof what, "trial %d (%u ops), %s", trial, n, sn);
		compare(g, hw, q, strict, what);
	}
}

/* The generator's DAGs (the benchmark's), larger, on the bench's hardware. */
Test(engine_ref, same_traces_on_generated_dags)
{
	lh_models_init();
	g_autoptr(GRand) r = g_rand_new_with_seed(7);
	for (int trial = 0; trial < 6; trial++) {
		LhRandomDagOptions o;
		lh_random_dag_options_init(&o);
		o.n_ops = 20000;
		o.width = (guint32)g_rand_int_range(r, 4, 128);
		o.seed = (guint64)trial;
		o.p_copy = g_rand_double_range(r, 0, 0.3);
		o.p_collective = g_rand_double_range(r, 0, 0.2);
		g_autoptr(LhGraph) g = lh_gen_random_dag(&o);
		g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", NULL);
		hw->sm_sharing = trial & 1 ? LH_SHARING_FAIR : LH_SHARING_FIFO;
		g_autoptr(LhPlan) p = round_robin(g, 8, r);
		char what[64];
		g_snprintf(what, sizeof what, "generated dag %d", trial);
		compare(g, hw, p, FALSE, what);
	}
}

/* Collectives whose members span nodes on hardware with a cluster (gpus_per_node 8): NCCL-style
 * costs by level, the network as a fourth resource (its lane in the trace), collectives that
 * use both the link and the network at once, fixed durations on the network, under fifo and
 * fair sharing, with few resident kernels and random plans. */
Test(engine_ref, same_traces_with_collectives_across_nodes)
{
	lh_models_init();
	static const char *const hws[] = {"h100-sxm", "a100-sxm", "h200-sxm", NULL};
	static const char *const scheds[] = {"serial", "lhs", "heft", "cpath", "iree", NULL};
	g_autoptr(GRand) r = g_rand_new_with_seed(2026);
	guint net_ops = 0, both_ops = 0;
	for (int trial = 0; trial < 80; trial++) {
		guint n = (guint)g_rand_int_range(r, 3, trial < 70 ? 200 : 2000);
		guint32 devices = 8u << g_rand_int_range(r, 0, 3); /* 8, 16 or 32 */
		g_autoptr(LhGraph) g = t_random_graph(r, n, devices, FALSE);
		g_autoptr(LhHw) hw = lh_hw_lookup(hws[g_rand_int_range(r, 0, 3)], NULL);
		cr_assert(lh_hw_has_cluster(hw));
		hw->sm_sharing = g_rand_int_range(r, 0, 2) ? LH_SHARING_FAIR : LH_SHARING_FIFO;
		hw->hw_queues = (guint32)g_rand_int_range(r, 1, 9);
		if (g_rand_int_range(r, 0, 3) == 0)
			hw->max_resident_kernels = (guint32)g_rand_int_range(r, 1, 5);
		if (g_rand_int_range(r, 0, 3) == 0)
			hw->memory_gib = g_rand_double_range(r, 0.001, 0.05);
		for (guint32 i = 0; i < lh_graph_n_ops(g); i++) {
			const LhOp *o = lh_graph_op(g, i);
			if (!lh_op_kind_is_collective(o->kind))
				continue;
			double lat, wire, lk, nt;
			lh_op_link_phases(g, o, hw, &lat, &wire, &lk, &nt);
			net_ops += nt > 0;
			both_ops += nt > 0 && lk > 0;
		}
		gboolean strict = g_rand_int_range(r, 0, 6) == 0;
		char what[80];
		g_snprintf(what, sizeof what, "cluster trial %d (%u ops), round robin", trial, n);
		g_autoptr(LhPlan) p = round_robin(g, (guint)g_rand_int_range(r, 1, 9), r);
		compare(g, hw, p, strict, what);
		const char *sn = scheds[g_rand_int_range(r, 0, 5)];
		g_autoptr(GError) e = NULL;
		g_autoptr(LhPlan) q =
		    lh_scheduler_run(lh_scheduler_find(sn), g, hw, NULL, NULL, &e);
		cr_assert_not_null(q, "cluster trial %d: %s: %s", trial, sn, e->message);
		g_snprintf(what, sizeof what, "cluster trial %d (%u ops), %s", trial, n, sn);
		compare(g, hw, q, strict, what);
	}
	/* The network path was exercised: collectives on it, some on both levels at once. */
	cr_expect_gt(net_ops, 200, "%u collectives on the network", net_ops);
	cr_expect_gt(both_ops, 50, "%u collectives on the link and the network", both_ops);
}

/* Every collective's lane: the network exactly when its main phase uses it, as main's engine
 * records it (a small fixed case, so a lane mix-up shows even where times agree). */
Test(engine_ref, network_lane_on_a_cluster)
{
	lh_models_init();
	g_autoptr(LhGraph) g = lh_graph_new("lanes");
	guint32 in = lh_graph_add_op(g, "in", LH_OP_INPUT);
	static const guint32 two_nodes[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
	const LhOpKind kinds[] = {LH_OP_ALL_REDUCE, LH_OP_ALL_GATHER, LH_OP_ALL_TO_ALL,
	                          LH_OP_ALL_REDUCE};
	guint32 gs[] = {16, 8, 16, 16};
	for (guint k = 0; k < G_N_ELEMENTS(kinds); k++) {
		char name[8];
		g_snprintf(name, sizeof name, "c%u", k);
		guint32 id = lh_graph_add_op(g, name, kinds[k]);
		lh_graph_add_dep(g, id, in);
		LhOp *o = lh_graph_op_mut(g, id);
		o->size = 64u << 20;
		o->members = 1 + lh_graph_add_member_set(g, 16 / gs[k], gs[k], FALSE, two_nodes);
		o->group = gs[k];
		if (k == 3)
			o->duration_ns = 50000; /* measured: holds the network alone */
	}
	lh_graph_set_devices(g, 16);
	g_autoptr(GError) e = NULL;
	cr_assert(lh_graph_finish(g, NULL, &e), "%s", e ? e->message : "");
	g_autoptr(GRand) r = g_rand_new_with_seed(3);
	for (int fair = 0; fair < 2; fair++) {
		g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", NULL);
		hw->sm_sharing = fair ? LH_SHARING_FAIR : LH_SHARING_FIFO;
		g_autoptr(LhPlan) p = round_robin(g, 4, r);
		compare(g, hw, p, FALSE, fair ? "lanes, fair" : "lanes, fifo");
		g_autoptr(LhTrace) t = lh_simulate(g, hw, p, NULL, NULL, &e);
		cr_assert_not_null(t, "%s", e ? e->message : "");
		cr_expect_eq(t->ops[1].engine, LH_ENGINE_NET);
		cr_expect_eq(t->ops[2].engine, LH_ENGINE_LINK);
		cr_expect_eq(t->ops[3].engine, LH_ENGINE_NET);
		cr_expect_eq(t->ops[4].engine, LH_ENGINE_NET);
	}
}
