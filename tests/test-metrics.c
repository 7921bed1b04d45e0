/* lhsim tests — metrics and lower bounds (docs/design.md#metrics, #lower-bounds) on traces written
 * by hand. */
#include <criterion/criterion.h>

#include "helpers.h"

/* Graph: k1, k2 kernels; c a d2h copy; r an all-reduce. Trace by hand:
 *   k1 [0, 1000) on s0        c [500, 1500) on s1 (D2H)
 *   k2 [2000, 2500) on s0     r [2200, 3000) on s2 (link) */
Test(metrics, exposed_transfer_overlap_and_busy)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhGraph) g = lh_graph_new("m");
	guint32 k1 = t_kernel(g, "k1", 1000, 1.0), k2 = t_kernel(g, "k2", 500, 1.0);
	guint32 c = t_op(g, "c", LH_OP_COPY_D2H, 10000), r = t_op(g, "r", LH_OP_ALL_REDUCE, 100);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 s0 = lh_plan_add_stream(p, "s0", LH_ROLE_COMPUTE);
	guint32 s1 = lh_plan_add_stream(p, "s1", LH_ROLE_D2H);
	guint32 s2 = lh_plan_add_stream(p, "s2", LH_ROLE_COLLECTIVE);
	lh_plan_add_stream(p, "idle", LH_ROLE_COMPUTE);
	g_autoptr(LhTrace) t = lh_trace_new(4, 0);
	struct {
		guint32 op, s;
		gint64 a, b;
		LhEngine e;
	} spans[] = {{k1, s0, 0, 1000, LH_ENGINE_SM},
	             {k2, s0, 2000, 2500, LH_ENGINE_SM},
	             {c, s1, 500, 1500, LH_ENGINE_D2H},
	             {r, s2, 2200, 3000, LH_ENGINE_LINK}};
	for (gsize i = 0; i < G_N_ELEMENTS(spans); i++) {
		t->ops[spans[i].op].start = spans[i].a;
		t->ops[spans[i].op].end = spans[i].b;
		t->ops[spans[i].op].stream = (gint32)spans[i].s;
		t->ops[spans[i].op].engine = spans[i].e;
	}
	LhMetrics m;
	lh_metrics_compute(t, g, hw, p, &m);
	cr_expect_eq(m.makespan, 3000);
	/* kernels: [0,1000) + [2000,2500) = 1500 */
	cr_expect_eq(m.kernel_time, 1500);
	/* transfers: [500,1500) + [2200,3000) = 1800 */
	cr_expect_eq(m.transfer_time, 1800);
	/* exposed: c alone in [1000,1500) = 500; r alone in [2500,3000) = 500: 1000 */
	cr_expect_eq(m.exposed_transfer, 1000);
	cr_expect_float_eq(m.overlap, 1.0 - 1000.0 / 1800.0, 1e-12);
	cr_expect_eq(m.stream_busy[0], 1500);
	cr_expect_eq(m.stream_busy[1], 1000);
	cr_expect_eq(m.stream_busy[3], 0);
	cr_expect_eq(m.streams_used, 3);
	cr_expect_eq(m.engine_busy[LH_ENGINE_SM], 1500);
	cr_expect_eq(m.engine_busy[LH_ENGINE_D2H], 1000);
	cr_expect_eq(m.engine_busy[LH_ENGINE_LINK], 800);
	lh_metrics_clear(&m);
}

Test(metrics, lower_bounds)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	hw->copy_latency_ns = 100;
	hw->launch_ns = 10;
	hw->copy_engines_d2h = 2;
	g_autoptr(LhGraph) g = lh_graph_new("b");
	guint32 a = t_kernel(g, "a", 1000, 0.5), b = t_kernel(g, "b", 3000, 1.0);
	guint32 d1 = t_op(g, "d1", LH_OP_COPY_D2H, 20000),
	        d2 = t_op(g, "d2", LH_OP_COPY_D2H, 20000);
	t_dep(g, b, a);
	t_dep(g, d1, b);
	(void)d2;
	t_finish(g);
	LhBounds bd;
	lh_bounds(g, hw, NULL, &bd);
	/* critical path: a 1000 + b 3000 + d1 (100 + 20000 / 10 = 2100) = 6100 */
	cr_expect_float_eq(bd.critical_path, 6100, 1e-9);
	/* SM work: 1000 * 0.5 + 3000 * 1.0 = 3500 */
	cr_expect_float_eq(bd.sm_work, 3500, 1e-9);
	/* D2H: bytes share the direction: 2 * 2000 = 4000; latencies overlap on 2 engines:
	 * 2 * 100 / 2 = 100; 4100 */
	cr_expect_float_eq(bd.d2h_work, 4100, 1e-9);
	cr_expect_float_eq(bd.h2d_work, 0, 1e-9);
	/* host issue without a plan: 4 ops * 10 = 40 */
	cr_expect_float_eq(bd.host_issue, 40, 1e-9);
	cr_expect_float_eq(bd.bound, 6100, 1e-9);
	cr_expect_str_eq(bd.binding, "critical path");
}
