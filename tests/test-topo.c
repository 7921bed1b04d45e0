/* lhsim tests — the cluster: NCCL-style collective costs by level (sim/cost-collective.c),
 * member sets from HLO and JSON (models/hlo-groups.c, models/graph-json.c), the network as an
 * engine resource, and the cluster's .ini keys.
 *
 * Cost tests use the built-in h100-sxm: 8 GPUs per node, NVLink ring bus bandwidth 370 GB/s
 * (370 B/ns), network 50 GB/s per GPU, NCCL's latencies (tuning.cc at b6475625, ring):
 *            base    per NVLink step   per network step
 *   LL       6600    600               2700
 *   LL128   14000   1900               4000
 *   Simple   8400   3400              14000
 * Protocol bandwidth factors: LL 1/4 (all-reduce, or across nodes; else 1/3), LL128 0.92 (0.7
 * with one GPU per node), Simple 1. Time = latency + max(NVLink bytes / (370 f), network
 * bytes per NIC / (50 f)); NCCL (and lhsim) takes the protocol with the least time. S is 64 MiB
 * = 67108864 B unless stated.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "helpers.h"
#include "models/hlo.h"
#include "viz/layout.h"

#define MIB64 67108864ull

static LhHw *h100(void)
{
	lh_models_init();
	GError *e = NULL;
	LhHw *hw = lh_hw_lookup("h100-sxm", &e);
	cr_assert(hw, "%s", e ? e->message : "");
	return hw;
}

/* One collective of @kind, @size bytes, with @ng groups of @gs devices @dev (pairs for
 * permute/send/recv); returns its standalone time on @hw. */
static double coll_ns(const LhHw *hw, LhOpKind kind, guint64 size, guint32 ng, guint32 gs,
                      const guint32 *dev)
{
	g_autoptr(LhGraph) g = lh_graph_new("g");
	guint32 i = t_op(g, "c", kind, size);
	gboolean pairs =
	    kind == LH_OP_COLLECTIVE_PERMUTE || kind == LH_OP_SEND || kind == LH_OP_RECV;
	LhOp *op = lh_graph_op_mut(g, i);
	op->members = 1 + lh_graph_add_member_set(g, ng, gs, pairs, dev);
	op->group = pairs ? 2 : gs;
	t_finish(g);
	return lh_op_standalone_ns_in(g, lh_graph_op(g, i), hw);
}

#define EXPECT_NS(got, want)                                                                       \
	cr_expect_float_eq((got), (want), 1e-6 * (want) + 1e-6, "got %.6f, want %.6f", (got),      \
	                   (want))

Test(topo, all_reduce_inside_one_node)
{
	g_autoptr(LhHw) hw = h100();
	guint32 d[] = {0, 1, 2, 3, 4, 5, 6, 7};
	/* n = 8 in one node: 2*7 = 14 steps, none on the network; bus bytes 2*7/8 * S =
	 * 117440512 B, all over NVLink.
	 *   LL:     6600 + 14*600  = 15000 + 117440512 / 92.5  = 1269627.16 -> 1284627.16
	 *   LL128: 14000 + 14*1900 = 40600 + 117440512 / 340.4 =  345007.38 ->  385607.38
	 *   Simple: 8400 + 14*3400 = 56000 + 117440512 / 370   =  317406.79 ->  373406.79 (least)
	 */
	EXPECT_NS(coll_ns(hw, LH_OP_ALL_REDUCE, MIB64, 1, 8, d), 373406.7891891892);
	/* 8 bytes: the latency decides. LL: 15000 + 14 / 92.5 = 15000.15 ns: a small all-reduce
	 * costs 15 us, not the old 5. */
	EXPECT_NS(coll_ns(hw, LH_OP_ALL_REDUCE, 8, 1, 8, d), 15000.151351351351);
}

Test(topo, all_reduce_across_two_and_four_nodes)
{
	g_autoptr(LhHw) hw = h100();
	/* Two nodes, 4 GPUs in each: n = 8, N = 2, m = 4. 14 steps, 2N = 4 on the network.
	 * Bus bytes 117440512 over NVLink; each NIC carries 1/m of them: 29360128 B.
	 *   LL:     6600 + 10*600  + 4*2700  = 23400; max(117440512/92.5, 29360128/12.5)
	 *           = 2348810.24 -> 2372210.24
	 *   LL128: 14000 + 10*1900 + 4*4000  = 49000; max(117440512/340.4 = 345007.38,
	 *           29360128/46 = 638263.65) -> 687263.65 (least)
	 *   Simple: (8400 + 10*3400 + 4*14000) * 1.9 (ring plateau, S >= 8/16 * 65536)
	 *           = 186960; max(317406.79, 29360128/50 = 587202.56) -> 774162.56 */
	guint32 two[] = {0, 1, 2, 3, 8, 9, 10, 11};
	EXPECT_NS(coll_ns(hw, LH_OP_ALL_REDUCE, MIB64, 1, 8, two), 687263.6521739131);
	/* Four nodes, 8 GPUs in each: n = 32, N = 4, m = 8. 62 steps, 8 on the network. Bus
	 * bytes 2*31/32 * S = 130023424; per NIC / 8 = 16252928.
	 *   LL128: 14000 + 54*1900 + 8*4000 = 148600; max(130023424/340.4 = 381972.46,
	 *           16252928/46 = 353324.52) -> 530572.46 (least)
	 *   Simple: (8400 + 54*3400 + 8*14000) * 1.9 = 577600; max(351414.66, 325058.56)
	 *           -> 929014.66
	 *   LL: 6600 + 54*600 + 8*2700 = 60600; 130023424/92.5 = 1405658.64 -> 1466258.64 */
	guint32 four[32];
	for (guint32 i = 0; i < 32; i++)
		four[i] = i;
	EXPECT_NS(coll_ns(hw, LH_OP_ALL_REDUCE, MIB64, 1, 32, four), 530572.4559341951);
	/* The same without members: a group of 32 is devices 0..31, the same span. */
	g_autoptr(LhGraph) g = lh_graph_new("g");
	guint32 i = t_op(g, "c", LH_OP_ALL_REDUCE, MIB64);
	lh_graph_op_mut(g, i)->group = 32;
	t_finish(g);
	EXPECT_NS(lh_op_standalone_ns_in(g, lh_graph_op(g, i), hw), 530572.4559341951);
}

Test(topo, gather_scatter_by_level)
{
	g_autoptr(LhHw) hw = h100();
	/* all-gather in one node, n = 8: 7 steps; bus bytes 7/8 * S = 58720256.
	 *   Simple: 8400 + 7*3400 = 32200 + 58720256/370 = 158703.39 -> 190903.39 (least)
	 *   LL128: 14000 + 7*1900 = 27300 + 58720256/340.4 = 172503.69 -> 199803.69
	 *   LL (1/3 in one node): 10800 + 58720256/123.33 = 476110.18 -> 486910.18 */
	guint32 d[] = {0, 1, 2, 3, 4, 5, 6, 7};
	EXPECT_NS(coll_ns(hw, LH_OP_ALL_GATHER, MIB64, 1, 8, d), 190903.3945945946);
	/* reduce-scatter over {0, 8}: two nodes, one GPU in each (m = 1): 1 step, on the
	 * network; bus bytes 1/2 * S = 33554432, none over NVLink, all through the one NIC.
	 *   Simple: 8400 + 14000 = 22400 + 33554432/50 = 671088.64 -> 693488.64 (least)
	 *   LL128 (0.7 at m = 1): 18000 + 33554432/35 = 958698.06 -> 976698.06 */
	guint32 e[] = {0, 8};
	EXPECT_NS(coll_ns(hw, LH_OP_REDUCE_SCATTER, MIB64, 1, 2, e), 693488.64);
	/* Four such groups side by side ({0,8},{1,9},...): the most spread group decides, the
	 * same. */
	guint32 e4[] = {0, 8, 1, 9, 2, 10, 3, 11};
	EXPECT_NS(coll_ns(hw, LH_OP_REDUCE_SCATTER, MIB64, 4, 2, e4), 693488.64);
}

Test(topo, all_to_all_by_level)
{
	g_autoptr(LhHw) hw = h100();
	/* In one node, n = 8: one step over NVLink; 7/8 * S = 58720256 B to the 7 others.
	 *   Simple: 8400 + 3400 = 11800 + 158703.39 -> 170503.39 (least) */
	guint32 d[] = {0, 1, 2, 3, 4, 5, 6, 7};
	EXPECT_NS(coll_ns(hw, LH_OP_ALL_TO_ALL, MIB64, 1, 8, d), 170503.3945945946);
	/* Four nodes, 2 GPUs in each: n = 8, m = 2: (m-1)/n * S = 8388608 B over NVLink,
	 * (n-m)/n * S = 50331648 B through the NIC; one step, on the network.
	 *   Simple: 8400 + 14000 = 22400 + max(8388608/370 = 22671.91, 50331648/50 =
	 *           1006632.96) -> 1029032.96 (least)
	 *   LL128: 18000 + 50331648/46 = 1094166.26 -> 1112166.26 */
	guint32 f[] = {0, 1, 8, 9, 16, 17, 24, 25};
	EXPECT_NS(coll_ns(hw, LH_OP_ALL_TO_ALL, MIB64, 1, 8, f), 1029032.96);
}

Test(topo, permute_send_recv_by_level)
{
	g_autoptr(LhHw) hw = h100();
	/* 1 MiB to a peer in the node: one NVLink step.
	 *   Simple: 8400 + 3400 = 11800 + 1048576/370 = 2833.99 -> 14633.99 (least)
	 *   LL (1/3): 6600 + 600 = 7200 + 1048576/123.33 = 8501.97 -> 15701.97 */
	guint32 in[] = {0, 1, 1, 0};
	EXPECT_NS(coll_ns(hw, LH_OP_COLLECTIVE_PERMUTE, 1048576, 2, 2, in), 14633.98918918919);
	/* To a peer in another node: one network step, 1 MiB through the NIC.
	 *   Simple: 8400 + 14000 = 22400 + 1048576/50 = 20971.52 -> 43371.52 (least)
	 *   LL128 (0.7): 18000 + 1048576/35 = 29959.31 -> 47959.31 */
	guint32 out[] = {0, 8, 8, 0};
	EXPECT_NS(coll_ns(hw, LH_OP_COLLECTIVE_PERMUTE, 1048576, 2, 2, out), 43371.52);
	guint32 p[] = {0, 8};
	EXPECT_NS(coll_ns(hw, LH_OP_SEND, 1048576, 1, 2, p), 43371.52);
	EXPECT_NS(coll_ns(hw, LH_OP_RECV, 1048576, 1, 2, p), 43371.52);
}

Test(topo, a100_network_is_half)
{
	lh_models_init();
	g_autoptr(LhHw) hw = lh_hw_lookup("a100-sxm", NULL);
	cr_assert(hw);
	/* reduce-scatter over {0, 8} on DGX A100 (25 GB/s per NIC): Simple 22400 +
	 * 33554432/25 = 1342177.28 -> 1364577.28. */
	guint32 e[] = {0, 8};
	EXPECT_NS(coll_ns(hw, LH_OP_REDUCE_SCATTER, MIB64, 1, 2, e), 1364577.28);
}

Test(topo, old_hardware_keeps_one_link)
{
	/* t_hw() has no cluster keys: latency 0 + wire / link_gbs, whatever the members say:
	 * all-reduce over 8 of 64 MiB: 2*7/8 * S / 100 B/ns = 1174405.12. */
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	guint32 d[] = {0, 8, 16, 24, 32, 40, 48, 56};
	EXPECT_NS(coll_ns(hw, LH_OP_ALL_REDUCE, MIB64, 1, 8, d), 1174405.12);
}

/* ---- the engine: NVLink and the network as two resources ---- */

/* t_hw() with 2 GPUs per node, NVLink 100 B/ns, network 10 B/ns, no latencies (so Simple, at
 * full bandwidth, always wins). */
static LhHw *net_hw(void)
{
	LhHw *hw = t_hw(LH_SHARING_FIFO);
	hw->gpus_per_node = 2;
	hw->nvlink_busbw_gbs = 100;
	hw->net_gbs = 10;
	return hw;
}

static guint32 add_coll(LhGraph *g, const char *name, LhOpKind kind, guint64 size, guint32 gs,
                        const guint32 *dev)
{
	guint32 i = t_op(g, name, kind, size);
	LhOp *op = lh_graph_op_mut(g, i);
	op->members = 1 + lh_graph_add_member_set(g, 1, gs, FALSE, dev);
	op->group = gs;
	return i;
}

static void network_case(LhSmSharing sh)
{
	g_autoptr(LhHw) hw = net_hw();
	hw->sm_sharing = sh;
	g_autoptr(LhGraph) g = lh_graph_new("g");
	/* a, b: reduce-scatter of 2000 B over {0, 2} (two nodes, one GPU each): 1000 B through
	 * the NIC, 100 ns alone. c: all-reduce of 2000 B over {0, 1}, one node: 2000 B over
	 * NVLink, 20 ns. */
	guint32 x[] = {0, 2}, y[] = {0, 1};
	guint32 a = add_coll(g, "a", LH_OP_REDUCE_SCATTER, 2000, 2, x);
	guint32 b = add_coll(g, "b", LH_OP_REDUCE_SCATTER, 2000, 2, x);
	guint32 c = add_coll(g, "c", LH_OP_ALL_REDUCE, 2000, 2, y);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	lh_plan_run(p, lh_plan_add_stream(p, "s0", LH_ROLE_COLLECTIVE), a);
	lh_plan_run(p, lh_plan_add_stream(p, "s1", LH_ROLE_COLLECTIVE), b);
	lh_plan_run(p, lh_plan_add_stream(p, "s2", LH_ROLE_COLLECTIVE), c);
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	/* a and b share the network, half each: both end at 200. c has NVLink to itself: 20. */
	cr_expect_eq(t->ops[a].start, 0);
	cr_expect_eq(t->ops[a].end, 200);
	cr_expect_eq(t->ops[b].end, 200);
	cr_expect_eq(t->ops[c].end, 20);
	cr_expect_eq(t->ops[a].engine, LH_ENGINE_NET);
	cr_expect_eq(t->ops[c].engine, LH_ENGINE_LINK);
}

Test(topo, network_is_shared_apart_from_nvlink_fifo)
{
	network_case(LH_SHARING_FIFO);
}

Test(topo, network_is_shared_apart_from_nvlink_fair)
{
	network_case(LH_SHARING_FAIR);
}

Test(topo, two_level_collective_holds_both)
{
	g_autoptr(LhHw) hw = net_hw();
	g_autoptr(LhGraph) g = lh_graph_new("g");
	/* a: all-reduce of 2000 B over {0,1,2,3} (2 nodes, m = 2): bus bytes 2*3/4 * 2000 =
	 * 3000: 30 ns over NVLink, 3000/2 = 1500 B per NIC = 150 ns: wire 150, using 0.2 of
	 * NVLink and all of the network. b: all-reduce of 8000 B over {0,1}: 8000 B / 100 =
	 * 80 ns on NVLink alone. Together, fifo: a (started first) takes rate 1 (link 0.2,
	 * network 1), b gets min(1, 0.8 / 1) = 0.8 of NVLink until a ends: b's 80 ns of work
	 * at 0.8 = 100 ns; a ends at 150. */
	guint32 d4[] = {0, 1, 2, 3}, d2[] = {0, 1};
	guint32 a = add_coll(g, "a", LH_OP_ALL_REDUCE, 2000, 4, d4);
	guint32 b = add_coll(g, "b", LH_OP_ALL_REDUCE, 8000, 2, d2);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	lh_plan_run(p, lh_plan_add_stream(p, "s0", LH_ROLE_COLLECTIVE), a);
	lh_plan_run(p, lh_plan_add_stream(p, "s1", LH_ROLE_COLLECTIVE), b);
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	cr_expect_eq(t->ops[a].end, 150);
	cr_expect_eq(t->ops[b].end, 100);
}

/* ---- member sets from HLO ---- */

static LhGraph *import_file(const char *rel)
{
	g_autofree char *path = t_data(rel);
	GError *e = NULL;
	LhGraph *g = lh_hlo_import_file(path, NULL, &e);
	cr_assert(g, "%s", e ? e->message : "");
	return g;
}

/* The member set of the first op of @kind whose set has @ng groups. */
static const LhMemberSet *find_set(const LhGraph *g, LhOpKind kind, guint32 ng)
{
	for (guint32 i = 0; i < lh_graph_n_ops(g); i++) {
		const LhOp *op = lh_graph_op(g, i);
		const LhMemberSet *m = lh_graph_op_members(g, op);
		if (op->kind == kind && m && m->n_groups == ng)
			return m;
	}
	return NULL;
}

Test(topo, hlo_iota_groups_of_the_70b_module)
{
	g_autoptr(LhGraph) g = import_file("hlo/hlo_llama31_70b_bf16_16x8.hlo");
	/* No num_partitions in its header: the devices are the most its groups name, 128. */
	cr_expect_eq(lh_graph_devices(g), 128);
	/* replica_groups=[2,64]<=[128] (all-gather, use_global_device_ids): the iota 0..127 as
	 * 2 rows of 64: {0..63}, {64..127}. */
	const LhMemberSet *m = find_set(g, LH_OP_ALL_GATHER, 2);
	cr_assert(m);
	cr_expect_eq(m->group_size, 64);
	for (guint32 i = 0; i < 128; i++)
		cr_expect_eq(m->dev[i], i);
	/* [64,2]<=[2,64]T(1,0): the iota as [2,64] (row r holds 64 r .. 64 r + 63), transposed
	 * to [64,2]: row i is {i, 64 + i}; read as 64 groups of 2. */
	const LhMemberSet *t = NULL;
	for (guint32 i = 0; i < lh_graph_n_ops(g) && !t; i++) {
		const LhMemberSet *x = lh_graph_op_members(g, lh_graph_op(g, i));
		if (x && x->n_groups == 64)
			t = x;
	}
	cr_assert(t, "no collective with 64 groups");
	cr_expect_eq(t->group_size, 2);
	for (guint32 k = 0; k < 64; k++) {
		cr_expect_eq(t->dev[2 * k], k);
		cr_expect_eq(t->dev[2 * k + 1], 64 + k);
	}
	/* On h100-sxm (8 per node) {i, 64+i} spans 2 nodes with one GPU in each; {0..63} spans
	 * 8 nodes with 8 in each. */
	g_autoptr(LhHw) hw = h100();
	for (guint32 i = 0; i < lh_graph_n_ops(g); i++) {
		const LhOp *op = lh_graph_op(g, i);
		const LhMemberSet *x = lh_graph_op_members(g, op);
		if (x == t) {
			LhSpan s = lh_op_span(g, op, hw);
			cr_expect_eq(s.nodes, 2);
			cr_expect_eq(s.per_node, 1);
		} else if (x == m) {
			LhSpan s = lh_op_span(g, op, hw);
			cr_expect_eq(s.nodes, 8);
			cr_expect_eq(s.per_node, 8);
		}
	}
}

Test(topo, hlo_pairs_and_explicit_groups)
{
	/* source_target_pairs={{0,1},{1,2},{2,3},{3,0}}: four pairs, in a module of 4 devices
	 * (replica_groups=[1,4]<=[4] elsewhere in it). */
	g_autoptr(LhGraph) g = import_file("hlo/hlo_llama3_8b_cp_bf16_1x4.hlo");
	const LhMemberSet *m = find_set(g, LH_OP_COLLECTIVE_PERMUTE, 4);
	cr_assert(m);
	cr_expect(m->pairs);
	const guint32 want[] = {0, 1, 1, 2, 2, 3, 3, 0};
	for (guint32 i = 0; i < 8; i++)
		cr_expect_eq(m->dev[i], want[i]);
	/* replica_count=16, {{0,...,15}} without channel_id: cross-replica, one partition:
	 * devices 0..15. */
	g_autoptr(LhGraph) a =
	    import_file("hlo/lhs_test_AllToAllAndGemmOverlapWithSolCostModel.hlo");
	const LhMemberSet *x = find_set(a, LH_OP_ALL_TO_ALL, 1);
	cr_assert(x);
	cr_expect_eq(x->group_size, 16);
	cr_expect_eq(x->dev[15], 15);
	cr_expect_eq(lh_graph_devices(a), 16);
}

static LhGraph *import_text(const char *text, GError **e)
{
	return lh_hlo_import_data(text, strlen(text), "t.hlo", NULL, e);
}

#define HLO_HEAD(attrs)                                                                            \
	"HloModule m" attrs "\n"                                                                   \
	"add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"                              \
	"  ROOT c = f32[] add(a, b)\n}\n"                                                          \
	"ENTRY e {\n  p = f32[1024] parameter(0)\n"

Test(topo, hlo_group_modes)
{
	/* 2 replicas x 2 partitions; flattened id = replica * 2 + partition. */
	struct {
		const char *attrs;
		guint32 ng, gs;
		guint32 dev[4];
	} cases[] = {
	    /* no channel_id: replica ids; {0,1} in partition 0 is {0,2}, in 1 {1,3} */
	    {"", 2, 2, {0, 2, 1, 3}},
	    /* channel_id: partition ids; in replica 0 {0,1}, in replica 1 {2,3} */
	    {", channel_id=1", 2, 2, {0, 1, 2, 3}},
	    /* use_global_device_ids=true: flattened ids as written */
	    {", channel_id=1, use_global_device_ids=true", 2, 2, {0, 1, 2, 3}},
	};
	const char *groups[] = {"{{0,1}}", "{{0,1}}", "{{0,1},{2,3}}"};
	for (gsize k = 0; k < G_N_ELEMENTS(cases); k++) {
		g_autofree char *text = g_strdup_printf(
		    HLO_HEAD(", num_partitions=2, replica_count=2") "  ROOT r = f32[1024] "
		                                                    "all-reduce(p), "
		                                                    "replica_groups=%s%s, "
		                                                    "to_apply=add\n}\n",
		    groups[k], cases[k].attrs);
		GError *e = NULL;
		g_autoptr(LhGraph) g = import_text(text, &e);
		cr_assert(g, "case %zu: %s", k, e ? e->message : "");
		const LhMemberSet *m = find_set(g, LH_OP_ALL_REDUCE, cases[k].ng);
		cr_assert(m, "case %zu", k);
		cr_expect_eq(m->group_size, cases[k].gs);
		for (guint32 i = 0; i < 4; i++)
			cr_expect_eq(m->dev[i], cases[k].dev[i], "case %zu dev %u", k, i);
		g_clear_error(&e);
	}
}

static void expect_hlo_error(const char *attrs, const char *groups, const char *want)
{
	g_autofree char *text = g_strdup_printf(
	    HLO_HEAD("%s") "  ROOT r = f32[1024] all-reduce(p), replica_groups=%s, "
	                   "channel_id=1, use_global_device_ids=true, to_apply=add\n}\n",
	    attrs, groups);
	GError *e = NULL;
	g_autoptr(LhGraph) g = import_text(text, &e);
	cr_assert_null(g, "%s imported", groups);
	/* The attribute is on line 9 of the text, column 37. */
	cr_expect(g_str_has_prefix(e->message, "t.hlo:9:37:"), "%s", e->message);
	cr_expect(strstr(e->message, want), "%s", e->message);
	g_error_free(e);
}

Test(topo, hlo_bad_groups_are_errors_with_position)
{
	expect_hlo_error(", num_partitions=4", "{{0,1},{2,4}}", "outside the module's 4 devices");
	expect_hlo_error(", num_partitions=4", "{{0,1},{1,2}}", "appears twice");
	expect_hlo_error(", num_partitions=4", "{{0,1,2},{3}}", "uneven groups");
	expect_hlo_error(", num_partitions=8", "[3,3]<=[8]", "uneven groups");
}

/* ---- member sets from JSON ---- */

static void expect_json_error(const char *members, const char *want, const char *pos)
{
	g_autofree char *text = g_strdup_printf(
	    "{\"format\": \"lhsim-graph\", \"version\": 1, \"devices\": 8, \"ops\": [\n"
	    " {\"name\": \"r\", \"kind\": \"all-reduce\", \"size\": 8,\n"
	    "  \"members\": %s}\n]}\n",
	    members);
	GError *e = NULL;
	g_autoptr(LhGraph) g = lh_graph_new_from_json_data(text, -1, "g.json", &e);
	cr_assert_null(g, "%s read", members);
	cr_expect(g_str_has_prefix(e->message, pos), "%s (want %s)", e->message, pos);
	cr_expect(strstr(e->message, want), "%s", e->message);
	g_error_free(e);
}

Test(topo, json_members)
{
	const char *text =
	    "{\"format\": \"lhsim-graph\", \"version\": 1, \"devices\": 16, \"ops\": [\n"
	    " {\"name\": \"r\", \"kind\": \"all-reduce\", \"size\": 8,\n"
	    "  \"members\": [[0,8],[1,9]]}\n]}\n";
	GError *e = NULL;
	g_autoptr(LhGraph) g = lh_graph_new_from_json_data(text, -1, "g.json", &e);
	cr_assert(g, "%s", e ? e->message : "");
	const LhOp *op = lh_graph_op(g, 0);
	cr_expect_eq(op->group, 2);
	const LhMemberSet *m = lh_graph_op_members(g, op);
	cr_assert(m);
	cr_expect_eq(m->n_groups, 2);
	cr_expect_eq(m->dev[3], 9);
	cr_expect_eq(lh_graph_devices(g), 16);
	/* It writes and reads back the same. */
	g_autofree char *out = lh_graph_to_json(g);
	cr_expect(strstr(out, "\"members\": [[0,8], [1,9]]"), "%s", out);
	cr_expect(strstr(out, "\"devices\": 16"), "%s", out);
	/* Bad input: the position of the offending device or group. Line 3 holds the members;
	 * "[[0,1],[2,9]]" starts at column 14. */
	expect_json_error("[[0,1],[2,9]]", "outside the module's 8 devices", "g.json:3:");
	expect_json_error("[[0,1],[1,2]]", "appears twice", "g.json:3:");
	expect_json_error("[[0,1,2],[3,4]]", "uneven groups", "g.json:3:");
	expect_json_error("[[0,-1]]", "a device id", "g.json:3:");
}

/* ---- hardware keys ---- */

static void expect_hw_error(const char *from, const char *to, const char *key)
{
	lh_models_init();
	g_autofree char *ini = g_strdup(lh_hw_builtin_data("h100-sxm"));
	char *p = strstr(ini, from);
	cr_assert(p, "%s", from);
	g_autofree char *text =
	    g_strdup_printf("%.*s%s%s", (int)(p - ini), ini, to, p + strlen(from));
	GError *e = NULL;
	g_autoptr(LhHw) hw = lh_hw_new_from_data(text, strlen(text), "x.ini", &e);
	cr_assert_null(hw, "%s accepted", to);
	cr_expect(strstr(e->message, key), "%s", e->message);
	g_error_free(e);
}

Test(topo, hw_cluster_keys)
{
	expect_hw_error("gpus_per_node = 8", "gpus_per_node = 0", "'gpus_per_node'");
	/* 1e5 GB/s per GPU: 10 times past the upper bound, a unit mistake. */
	expect_hw_error("net_gbs = 50", "net_gbs = 100000", "'net_gbs'");
	expect_hw_error("net_gbs = 50", "net_gbs = 0", "'net_gbs'");
	/* All six or none. */
	expect_hw_error("net_gbs = 50\n", "", "net_gbs");
	/* Written and read back, the keys stay. */
	g_autoptr(LhHw) hw = h100();
	g_autofree char *text = lh_hw_to_data(hw);
	cr_expect(strstr(text, "gpus_per_node = 8"), "%s", text);
	g_autoptr(LhHw) back = lh_hw_new_from_data(text, strlen(text), "y.ini", NULL);
	cr_assert(back);
	cr_expect_eq(back->gpus_per_node, 8);
	cr_expect_float_eq(back->net_gbs, 50, 0);
	/* Without the keys: one node, and no cluster keys are written. */
	g_autoptr(LhHw) old = t_hw(LH_SHARING_FIFO);
	g_autofree char *t2 = lh_hw_to_data(old);
	cr_expect_null(strstr(t2, "gpus_per_node"), "%s", t2);
}

/* ---- lhs: scale-up and network collectives in separate resources ---- */

/* A copy of @src whose collectives get member sets drawn from intra-node and cross-node
 * choices on 8-GPU nodes (16 devices). */
static LhGraph *with_members(const LhGraph *src, guint64 seed)
{
	static const struct {
		guint32 ng, gs;
		guint32 dev[8];
	} choice[] = {
	    {1, 4, {0, 1, 2, 3}},             /* node 0 */
	    {1, 4, {4, 5, 6, 7}},             /* node 0 */
	    {1, 8, {0, 1, 2, 3, 4, 5, 6, 7}}, /* node 0 */
	    {2, 2, {8, 9, 10, 11}},           /* node 1 */
	    {1, 2, {0, 8}},                   /* across */
	    {1, 4, {0, 1, 8, 9}},             /* across */
	    {2, 2, {3, 11, 4, 12}},           /* across */
	};
	GRand *rnd = g_rand_new_with_seed((guint32)seed);
	guint32 n = lh_graph_n_ops(src);
	LhGraph *g = lh_graph_new(lh_graph_name(src));
	lh_graph_set_devices(g, 16);
	for (guint32 i = 0; i < n; i++) {
		const LhOp *o = lh_graph_op(src, i);
		guint32 k = lh_graph_add_op(g, o->name, o->kind);
		LhOp *c = lh_graph_op_mut(g, k);
		c->flops = o->flops;
		c->bytes = o->bytes;
		c->sm = o->sm;
		c->size = o->size;
		c->out_bytes = o->out_bytes;
		c->duration_ns = o->duration_ns;
		c->group = o->group;
		c->async = o->async;
		c->out_space = o->out_space;
		c->dtype = o->dtype;
		gboolean p2p = o->kind == LH_OP_COLLECTIVE_PERMUTE || o->kind == LH_OP_SEND ||
		               o->kind == LH_OP_RECV;
		if (lh_op_kind_is_collective(o->kind) && !p2p) {
			guint32 j = (guint32)g_rand_int_range(rnd, 0, G_N_ELEMENTS(choice));
			c->members = 1 + lh_graph_add_member_set(g, choice[j].ng, choice[j].gs,
			                                         FALSE, choice[j].dev);
			c->group = choice[j].gs;
		}
	}
	for (guint32 i = 0; i < n; i++) {
		guint32 nd;
		const guint32 *d = lh_graph_deps(src, i, &nd);
		for (guint32 k = 0; k < nd; k++)
			lh_graph_add_dep(g, i, d[k]);
	}
	g_rand_free(rnd);
	t_finish(g);
	return g;
}

Test(topo, lhs_scale_up_and_network_collectives_apart, .timeout = 300)
{
	g_autoptr(LhHw) hw = h100();
	GError *e = NULL;
	const LhScheduler *s = lh_scheduler_lookup("lhs", &e);
	cr_assert(s);
	const char *kvs[][3] = {
	    {NULL},
	    {"collective-limit=2", "scale-up-collective-limit=3", NULL},
	    {"collective-limit=3", "scale-up-collective-limit=0", NULL},
	};
	const guint32 lim_net[] = {1, 2, 3}, lim_up[] = {1, 3, 0};
	guint32 seen_up = 0, seen_net = 0, most_up = 0;
	for (gsize k = 0; k < G_N_ELEMENTS(kvs); k++)
		for (guint64 seed = 1; seed <= 60; seed++) {
			LhRandomDagOptions o;
			lh_random_dag_options_init(&o);
			o.seed = seed;
			o.n_ops = 40 + (guint32)(seed % 5) * 20;
			o.width = 2 + (guint32)(seed % 7);
			o.p_copy = 0.1;
			o.p_collective = 0.3;
			o.p_async = 0.2;
			g_autoptr(LhGraph) g0 = lh_gen_random_dag(&o);
			g_autoptr(LhGraph) g = with_members(g0, seed);
			g_autoptr(LhPlan) p = lh_scheduler_run(s, g, hw, kvs[k], NULL, &e);
			cr_assert(p, "seed %lu: %s", (unsigned long)seed, e ? e->message : "?");
			g_autoptr(LhTrace) t = t_sim(g, hw, p);
			/* Every async collective runs on a stream of its resource. */
			guint32 n = lh_graph_n_ops(g);
			for (guint32 i = 0; i < n; i++) {
				const LhOp *op = lh_graph_op(g, i);
				if (!op->members || !op->async || t->ops[i].stream < 0)
					continue;
				const char *sn = lh_plan_stream(p, (guint32)t->ops[i].stream)->name;
				gboolean up = lh_op_is_scale_up(g, op, hw);
				cr_assert(g_str_has_prefix(sn, up ? "scaleup" : "collective"),
				          "seed %lu: '%s' (%s) on %s", (unsigned long)seed,
				          op->name, up ? "scale-up" : "network", sn);
				seen_up += up;
				seen_net += !up;
			}
			/* At every start, the collectives of each resource running then are within
			 * its limit, and none that shares two devices with it. */
			for (guint32 i = 0; i < n; i++) {
				const LhOp *a = lh_graph_op(g, i);
				if (!a->members || !a->async || t->ops[i].start < 0)
					continue;
				gboolean up = lh_op_is_scale_up(g, a, hw);
				guint32 same = 0;
				for (guint32 j = 0; j < n; j++) {
					const LhOp *b = lh_graph_op(g, j);
					if (!b->members || !b->async || t->ops[j].start < 0 ||
					    !(t->ops[j].start <= t->ops[i].start &&
					      t->ops[i].start < t->ops[j].end))
						continue;
					same += lh_op_is_scale_up(g, b, hw) == up;
					if (j != i)
						cr_assert(
						    !lh_ops_share_devices(g, a, b),
						    "seed %lu: '%s' and '%s' share devices and "
						    "overlap",
						    (unsigned long)seed, a->name, b->name);
				}
				if (up)
					most_up = MAX(most_up, same);
				guint32 lim = up ? lim_up[k] : lim_net[k];
				if (lim)
					cr_assert_leq(
					    same, lim, "seed %lu: %u %s collectives at once",
					    (unsigned long)seed, same, up ? "scale-up" : "network");
			}
		}
	cr_expect_gt(seen_up, 0);
	cr_expect_gt(seen_net, 0);
	/* The limits above 1 are used: scale-up collectives did overlap. */
	cr_expect_gt(most_up, 1);
	cr_log_info("scale-up %u, network %u collectives; at most %u scale-up at once", seen_up,
	            seen_net, most_up);
}

Test(topo, lhs_does_not_overlap_collectives_sharing_devices)
{
	g_autoptr(LhHw) hw = h100();
	const LhScheduler *s = lh_scheduler_lookup("lhs", NULL);
	cr_assert(s);
	/* k0 feeds a, b, c (all-reduces of 1 MiB) and a long kernel k (1 ms); k2 joins them.
	 * a and b both run on {0,1,2,3}; c on {4,5,6,7}. All three sit in node 0: scale-up
	 * collectives. With scale-up-collective-limit=3 the limit would let all three overlap k,
	 * but a and b share 4 devices: XLA's rule keeps them apart; c may overlap either. */
	g_autoptr(LhGraph) g = lh_graph_new("g");
	guint32 k0 = t_kernel(g, "k0", 1000, 1.0);
	guint32 d1[] = {0, 1, 2, 3}, d2[] = {4, 5, 6, 7};
	guint32 a = add_coll(g, "a", LH_OP_ALL_REDUCE, 1048576, 4, d1);
	guint32 b = add_coll(g, "b", LH_OP_ALL_REDUCE, 1048576, 4, d1);
	guint32 c = add_coll(g, "c", LH_OP_ALL_REDUCE, 1048576, 4, d2);
	guint32 k = t_kernel(g, "k", 1000000, 1.0);
	guint32 k2 = t_kernel(g, "k2", 1000, 1.0);
	guint32 all[] = {a, b, c, k};
	for (guint32 i = 0; i < 4; i++) {
		t_dep(g, all[i], k0);
		t_dep(g, k2, all[i]);
	}
	t_finish(g);
	const char *kv[] = {"scale-up-collective-limit=3", NULL};
	char *text = NULL;
	size_t len = 0;
	FILE *ex = open_memstream(&text, &len);
	g_autoptr(LhPlan) p = lh_scheduler_run(s, g, hw, kv, ex, NULL);
	fclose(ex);
	cr_assert(p);
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	gboolean ab = t->ops[a].start < t->ops[b].end && t->ops[b].start < t->ops[a].end;
	cr_expect(!ab,
	          "a [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ") and b [%" G_GINT64_FORMAT
	          ", %" G_GINT64_FORMAT ") overlap",
	          t->ops[a].start, t->ops[a].end, t->ops[b].start, t->ops[b].end);
	/* --explain names the resource and the wait. */
	cr_expect(strstr(text, "(scale-up collective)"), "%s", text);
	cr_expect(strstr(text, "scale-up collective 3"), "%s", text);
	cr_expect(strstr(text, "shares more than one device"), "%s", text);
	free(text);
}

Test(topo, network_lanes_in_timeline_and_chrome_trace)
{
	g_autoptr(LhHw) hw = net_hw();
	g_autoptr(LhGraph) g = lh_graph_new("g");
	guint32 x[] = {0, 2}, y[] = {0, 1};
	guint32 a = add_coll(g, "a", LH_OP_REDUCE_SCATTER, 2000, 2, x);
	guint32 b = add_coll(g, "b", LH_OP_REDUCE_SCATTER, 2000, 2, x);
	guint32 c = add_coll(g, "c", LH_OP_ALL_REDUCE, 2000, 2, y);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	lh_plan_run(p, lh_plan_add_stream(p, "s0", LH_ROLE_COLLECTIVE), a);
	lh_plan_run(p, lh_plan_add_stream(p, "s1", LH_ROLE_COLLECTIVE), b);
	lh_plan_run(p, lh_plan_add_stream(p, "s2", LH_ROLE_COLLECTIVE), c);
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	/* Lanes: 3 streams, one link row (c), two network rows (a and b overlap). */
	LhLaneMap *m = lh_lanes_new(p, t);
	cr_assert_eq(m->n_lanes, 3 + 1 + 2);
	cr_expect_eq(m->lanes[3].kind, LH_LANE_LINK);
	cr_expect_str_eq(m->lanes[3].label, "link");
	cr_expect_eq(m->lanes[4].kind, LH_LANE_NET);
	cr_expect_str_eq(m->lanes[4].label, "network 1");
	cr_expect_str_eq(m->lanes[5].label, "network 2");
	cr_expect_eq(m->engine_lane[a], 4);
	cr_expect_eq(m->engine_lane[b], 5);
	cr_expect_eq(m->engine_lane[c], 3);
	lh_lanes_free(m);
	/* The Chrome trace has a "network" track for a and b. */
	g_autofree char *json = lh_trace_to_chrome_json(t, g, p);
	cr_expect(strstr(json, "\"name\":\"network\""), "%s", json);
}
