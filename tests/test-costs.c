/* lhsim tests — the cost model: per-dtype peaks, the GEMM model, layout-aware HBM traffic,
 * duplex copies per direction, the per-step overhead, and old hardware files.
 *
 * Every expected number is worked out by hand in the comment above its assertion. Most tests
 * use c_hw(): t_hw() (tests/helpers.c) with a small GPU of round numbers:
 *   4 SMs; peaks (TFLOP/s = 1e3 FLOP/ns): bf16 8, f64 1, f32 2, tf32 4, fp8 16, int8 32;
 *   compute_eff 0.5; GEMM model gemm_eff 0.5, tiles 64 x 32, K padded to 64 bytes (f64 8
 *   elements, f32/tf32 16, bf16/f16 32, fp8/int8 64); HBM 1000 B/ns; kernel overhead 100 ns.
 * One SM's share of a peak P at gemm_eff 0.5 is P * 1e3 / 4 * 0.5 = 125 P FLOP/ns.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"

static LhHw *c_hw(void)
{
	LhHw *hw = t_hw(LH_SHARING_FIFO);
	hw->sm_count = 4;
	hw->peak_tflops = 8;
	hw->peak_f64_tflops = 1;
	hw->peak_f32_tflops = 2;
	hw->peak_tf32_tflops = 4;
	hw->peak_fp8_tflops = 16;
	hw->peak_int8_tops = 32;
	hw->compute_eff = 0.5;
	hw->gemm_eff = 0.5;
	hw->gemm_tile_m = 64;
	hw->gemm_tile_n = 32;
	hw->gemm_tile_k_bytes = 64;
	hw->kernel_overhead_ns = 100;
	return hw;
}

/* A GEMM kernel: batch x (m x k) . (k x n), 2 b m n k FLOP, no HBM bytes. */
static guint32 gemm(LhGraph *g, const char *name, LhDtype dt, guint32 b, guint64 m, guint64 n,
                    guint64 k)
{
	guint32 i = lh_graph_add_op(g, name, LH_OP_KERNEL);
	LhOp *op = lh_graph_op_mut(g, i);
	op->dtype = dt;
	op->gemm_batch = b;
	op->gemm_m = m;
	op->gemm_n = n;
	op->gemm_k = k;
	op->flops = 2.0 * b * (double)m * (double)n * (double)k;
	return i;
}

static double standalone(const LhGraph *g, const char *name, const LhHw *hw)
{
	return lh_op_standalone_ns(t_op_named(g, name), hw);
}

/* ---- per-dtype peaks ---- */

Test(costs, a_dot_of_each_dtype_runs_at_its_peak)
{
	g_autoptr(LhHw) hw = c_hw();
	g_autoptr(LhGraph) g = lh_graph_new("g");
	/* 128 x 64 x 64: 2 x 2 = 4 tiles = one full wave on 4 SMs; K = 64 is a whole number of
	 * K slices for every type (8, 16, 32 or 64 elements): no padding. So the time is one
	 * tile, 2 * 64 * 32 * 64 = 262144 FLOP, at 125 P FLOP/ns: 2097.152 / P ns, plus 100. */
	struct {
		const char *name;
		LhDtype dt;
		double want;
	} c[] = {
	    {"f64", LH_DTYPE_F64, 2097.152 / 1 + 100},    /* 2197.152 */
	    {"f32", LH_DTYPE_F32, 2097.152 / 2 + 100},    /* 1148.576 */
	    {"tf32", LH_DTYPE_TF32, 2097.152 / 4 + 100},  /* 624.288 */
	    {"bf16", LH_DTYPE_BF16, 2097.152 / 8 + 100},  /* 362.144 */
	    {"f16", LH_DTYPE_F16, 2097.152 / 8 + 100},    /* the bf16/f16 peak */
	    {"none", LH_DTYPE_NONE, 2097.152 / 8 + 100},  /* unknown: the bf16 peak */
	    {"fp8", LH_DTYPE_FP8, 2097.152 / 16 + 100},   /* 231.072 */
	    {"int8", LH_DTYPE_INT8, 2097.152 / 32 + 100}, /* 165.536 */
	};
	for (gsize i = 0; i < G_N_ELEMENTS(c); i++)
		gemm(g, c[i].name, c[i].dt, 1, 128, 64, 64);
	t_finish(g);
	for (gsize i = 0; i < G_N_ELEMENTS(c); i++) {
		cr_expect_float_eq(standalone(g, c[i].name, hw), c[i].want, 1e-9, "%s: %g != %g",
		                   c[i].name, standalone(g, c[i].name, hw), c[i].want);
		/* The same: FLOP / (P * 1e3 * gemm_eff), since nothing is quantized. */
		LhGemmCost gc;
		cr_assert(lh_gemm_shape_cost(t_op_named(g, c[i].name), hw, &gc));
		cr_expect_float_eq(gc.eff, 0.5, 1e-12);
	}
}

Test(costs, non_gemm_kernels_use_their_dtype_peak_and_compute_eff)
{
	g_autoptr(LhHw) hw = c_hw();
	g_autoptr(LhGraph) g = lh_graph_new("g");
	guint32 a = lh_graph_add_op(g, "a", LH_OP_KERNEL);
	lh_graph_op_mut(g, a)->flops = 1e6;
	lh_graph_op_mut(g, a)->dtype = LH_DTYPE_F32;
	guint32 b = lh_graph_add_op(g, "b", LH_OP_KERNEL);
	lh_graph_op_mut(g, b)->flops = 1e6;
	t_finish(g);
	/* a: f32 peak 2 TFLOP/s * 0.5 = 1000 FLOP/ns: 1000 ns + 100.
	 * b: no dtype, the bf16 peak 8 * 0.5 = 4000 FLOP/ns: 250 ns + 100. */
	cr_expect_float_eq(standalone(g, "a", hw), 1100, 1e-9);
	cr_expect_float_eq(standalone(g, "b", hw), 350, 1e-9);
}

/* ---- the GEMM model ---- */

Test(costs, large_gemm_reaches_the_large_gemm_fraction)
{
	g_autoptr(LhHw) hw = c_hw();
	g_autoptr(LhGraph) g = lh_graph_new("g");
	/* 2560 x 1280 x 4096 bf16: 40 x 40 = 1600 tiles = 400 full waves of 4, K = 128 slices of
	 * 32: eff = 0.5 exactly. FLOP 2 * 2560 * 1280 * 4096 = 26843545600 at 8000 * 0.5 = 4000
	 * FLOP/ns: 6710886.4 ns + 100. */
	gemm(g, "big", LH_DTYPE_BF16, 1, 2560, 1280, 4096);
	t_finish(g);
	LhGemmCost c;
	cr_assert(lh_gemm_shape_cost(t_op_named(g, "big"), hw, &c));
	cr_expect_float_eq(c.tiles, 1600, 0);
	cr_expect_float_eq(c.waves, 400, 0);
	cr_expect_float_eq(c.eff, 0.5, 1e-12);
	cr_expect_float_eq(standalone(g, "big", hw), 6710886.4 + 100, 1e-6);
}

Test(costs, large_gemm_on_the_h100_is_above_seven_tenths_of_peak)
{
	lh_models_init();
	g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", NULL);
	cr_assert_not_null(hw);
	g_autoptr(LhGraph) g = lh_graph_new("g");
	/* 8192^3 bf16 on 132 SMs, 256 x 128 tiles: 32 x 64 = 2048 tiles, ceil(2048 / 132) = 16
	 * waves, wave_eff 2048 / 2112 = 0.969697; K 8192 = 128 slices of 64: no padding.
	 * eff = 0.828 * 0.969697 = 0.802909: T = 2 * 8192^3 / (989e3 * 0.802909) + 2000
	 * = 1099511627776 / 794076.8 + 2000 = 1384640.6 + 2000 ns. */
	gemm(g, "mm", LH_DTYPE_BF16, 1, 8192, 8192, 8192);
	t_finish(g);
	LhGemmCost c;
	cr_assert(lh_gemm_shape_cost(t_op_named(g, "mm"), hw, &c));
	cr_expect_float_eq(c.waves, 16, 0);
	cr_expect_float_eq(c.eff, 0.828 * 2048.0 / 2112.0, 1e-12);
	cr_expect_gt(c.eff, 0.7);
	double want = 1099511627776.0 / (989e3 * 0.828 * 2048.0 / 2112.0) + 2000;
	cr_expect_float_eq(standalone(g, "mm", hw), want, 1e-3);
}

Test(costs, medium_gemm_one_tile_past_a_wave_takes_two_waves)
{
	g_autoptr(LhHw) hw = c_hw();
	g_autoptr(LhGraph) g = lh_graph_new("g");
	/* 320 x 32 x 32 bf16: 5 x 1 = 5 tiles = sm_count + 1: 2 waves, wave_eff 5 / 8. One tile:
	 * 2 * 64 * 32 * 32 = 131072 FLOP at 125 * 8 = 1000 FLOP/ns = 131.072 ns; two waves
	 * 262.144 + 100 = 362.144. (Achieved: 655360 FLOP / 262.144 = 2500 FLOP/ns = 0.3125 of
	 * the 8000 peak = 0.5 * 5/8.) One tile fewer (256 x 32, 4 tiles) takes one wave. */
	gemm(g, "five", LH_DTYPE_BF16, 1, 320, 32, 32);
	gemm(g, "four", LH_DTYPE_BF16, 1, 256, 32, 32);
	/* Batch counts tiles too: 5 x (64 x 32) is the same 5 tiles. */
	gemm(g, "batched", LH_DTYPE_BF16, 5, 64, 32, 32);
	t_finish(g);
	LhGemmCost c;
	cr_assert(lh_gemm_shape_cost(t_op_named(g, "five"), hw, &c));
	cr_expect_float_eq(c.waves, 2, 0);
	cr_expect_float_eq(c.wave_eff, 5.0 / 8.0, 1e-12);
	cr_expect_float_eq(c.eff, 0.3125, 1e-12);
	cr_expect_float_eq(standalone(g, "five", hw), 362.144, 1e-9);
	cr_expect_float_eq(standalone(g, "four", hw), 231.072, 1e-9);
	cr_expect_float_eq(standalone(g, "batched", hw), 362.144, 1e-9);
}

Test(costs, small_gemm_costs_one_tile_the_floor)
{
	g_autoptr(LhHw) hw = c_hw();
	g_autoptr(LhGraph) g = lh_graph_new("g");
	/* 1 x 1 x 1 and 64 x 32 x 32 are both one tile on one SM for one wave: 131.072 ns + 100.
	 * The 1x1x1 GEMM's 2 FLOP would take 0.0005 ns at the plain roofline. */
	gemm(g, "tiny", LH_DTYPE_BF16, 1, 1, 1, 1);
	gemm(g, "tile", LH_DTYPE_BF16, 1, 64, 32, 32);
	t_finish(g);
	cr_expect_float_eq(standalone(g, "tiny", hw), 231.072, 1e-9);
	cr_expect_float_eq(standalone(g, "tile", hw), 231.072, 1e-9);
	LhGemmCost c;
	cr_assert(lh_gemm_shape_cost(t_op_named(g, "tiny"), hw, &c));
	/* eff = 0.5 * (1/4 of the SMs) * (1 / (64 * 32 * 32) of the padded tile). */
	cr_expect_float_eq(c.eff, 0.5 * 0.25 / 65536.0, 1e-15);
}

Test(costs, misaligned_gemm_pays_for_padding)
{
	g_autoptr(LhHw) hw = c_hw();
	g_autoptr(LhGraph) g = lh_graph_new("g");
	/* 65 x 32 x 33 bf16: ceil(65/64) = 2 row tiles, 1 column tile, K ceil(33/32) = 2 slices
	 * of 32. 2 tiles: one wave (wave_eff 2/4). Tile time with K padded to 64:
	 * 2 * 64 * 32 * 64 / 1000 = 262.144 ns + 100 = 362.144, where 64 x 32 x 32 takes 231.072.
	 * tile_eff = (65/128) * (32/32) * (33/64) = 0.26184082. */
	gemm(g, "odd", LH_DTYPE_BF16, 1, 65, 32, 33);
	t_finish(g);
	LhGemmCost c;
	cr_assert(lh_gemm_shape_cost(t_op_named(g, "odd"), hw, &c));
	cr_expect_float_eq(c.tile_eff, (65.0 / 128) * (33.0 / 64), 1e-12);
	cr_expect_float_eq(c.wave_eff, 0.5, 0);
	cr_expect_float_eq(standalone(g, "odd", hw), 362.144, 1e-9);
	/* The same through the FLOP: 2 * 65 * 32 * 33 = 137280 at 8000 * 0.5 * 0.5 * tile_eff
	 * FLOP/ns is 262.144 ns as well. */
	cr_expect_float_eq(137280.0 / (8000 * c.eff), 262.144, 1e-9);
}

Test(costs, a_gemm_bound_by_hbm_takes_the_memory_time)
{
	g_autoptr(LhHw) hw = c_hw();
	g_autoptr(LhGraph) g = lh_graph_new("g");
	/* 64 x 32 x 32 bf16 (131.072 ns of tiles) reading 1e6 bytes at 1000 B/ns: 1000 ns. */
	guint32 k = gemm(g, "thin", LH_DTYPE_BF16, 1, 64, 32, 32);
	lh_graph_op_mut(g, k)->bytes = 1e6;
	t_finish(g);
	cr_expect_float_eq(standalone(g, "thin", hw), 1100, 1e-9);
}

Test(costs, without_a_gemm_model_gemms_use_compute_eff)
{
	g_autoptr(LhHw) hw = c_hw();
	hw->gemm_eff = 0; /* no GEMM model, as in an .ini without the gemm keys */
	g_autoptr(LhGraph) g = lh_graph_new("g");
	gemm(g, "odd", LH_DTYPE_BF16, 1, 65, 32, 33);
	t_finish(g);
	/* 137280 FLOP / (8000 * 0.5) = 34.32 ns + 100. */
	LhGemmCost c;
	cr_expect_not(lh_gemm_shape_cost(t_op_named(g, "odd"), hw, &c));
	cr_expect_float_eq(standalone(g, "odd", hw), 134.32, 1e-9);
}

/* ---- layout-aware HBM traffic ---- */

Test(costs, transposes_stream_at_hbm_transpose_eff)
{
	g_autoptr(LhHw) hw = c_hw();
	hw->hbm_eff = 0.8;
	hw->hbm_transpose_eff = 0.5;
	g_autoptr(LhGraph) g = lh_graph_new("g");
	guint32 a = lh_graph_add_op(g, "plain", LH_OP_KERNEL);
	lh_graph_op_mut(g, a)->bytes = 1e6;
	guint32 b = lh_graph_add_op(g, "transpose", LH_OP_KERNEL);
	lh_graph_op_mut(g, b)->bytes = 1e6;
	lh_graph_op_mut(g, b)->transpose = 1;
	guint32 c = t_op(g, "copy", LH_OP_COPY_D2D, 100000);
	lh_graph_op_mut(g, c)->transpose = 1;
	t_finish(g);
	/* plain: 1e6 / (1000 * 0.8) = 1250 + 100 = 1350.
	 * transpose: 1e6 / (1000 * 0.5) = 2000 + 100 = 2100.
	 * copy-d2d: 2 * 1e5 bytes / 500 = 400 + 100 = 500. */
	cr_expect_float_eq(standalone(g, "plain", hw), 1350, 1e-9);
	cr_expect_float_eq(standalone(g, "transpose", hw), 2100, 1e-9);
	cr_expect_float_eq(standalone(g, "copy", hw), 500, 1e-9);
	/* Alone, the transpose uses 1e6 / 2100 / 500 = 0.952 of HBM (the overhead is the rest),
	 * the plain kernel 1e6 / 1350 / 800 = 0.926. */
	cr_expect_float_eq(lh_op_hbm_use(t_op_named(g, "transpose"), hw, 2100), 1e6 / 2100 / 500,
	                   1e-12);
	cr_expect_float_eq(lh_op_hbm_use(t_op_named(g, "plain"), hw, 1350), 1e6 / 1350 / 800,
	                   1e-12);
	/* Not given (0): transposes stream at hbm_eff, as before the key existed. */
	hw->hbm_transpose_eff = 0;
	cr_expect_float_eq(standalone(g, "transpose", hw), 1350, 1e-9);
}

/* ---- copies both ways at once ---- */

static LhTrace *duplex_run(const LhHw *hw, LhGraph **gout)
{
	LhGraph *g = lh_graph_new("g");
	t_op(g, "up", LH_OP_COPY_H2D, 10000);
	t_op(g, "down", LH_OP_COPY_D2H, 10000);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 h = lh_plan_add_stream(p, "h2d", LH_ROLE_H2D);
	guint32 d = lh_plan_add_stream(p, "d2h", LH_ROLE_D2H);
	lh_plan_run(p, h, t_id(g, "up"));
	lh_plan_run(p, d, t_id(g, "down"));
	*gout = g;
	return t_sim(g, hw, p);
}

Test(costs, duplex_copies_get_their_own_rate_per_direction)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	hw->pcie_duplex_h2d_gbs = 5;
	hw->pcie_duplex_d2h_gbs = 8;
	g_autoptr(LhGraph) g = NULL;
	g_autoptr(LhTrace) t = duplex_run(hw, &g);
	/* Both issued at 0 (no launch cost, no latency), both in their byte phases at once:
	 * down at 8 B/ns ends at 10000 / 8 = 1250. up at 5 B/ns has moved 1250 * 5 = 6250 B by
	 * then; the other 3750 alone at 10 B/ns take 375: ends 1625. */
	const LhOpTiming *up = &t->ops[t_id(g, "up")], *down = &t->ops[t_id(g, "down")];
	cr_expect_eq(up->start, 0);
	cr_expect_eq(down->start, 0);
	cr_expect_eq(down->end, 1250);
	cr_expect_eq(up->end, 1625);
}

Test(costs, duplex_the_other_way_round)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	hw->pcie_duplex_h2d_gbs = 8;
	hw->pcie_duplex_d2h_gbs = 4;
	hw->copy_latency_ns = 100;
	g_autoptr(LhGraph) g = NULL;
	g_autoptr(LhTrace) t = duplex_run(hw, &g);
	/* 0-100 both in latency. From 100: up at 8 B/ns ends at 100 + 1250 = 1350; down at
	 * 4 B/ns has moved 5000 by then, 5000 left alone at 10 B/ns: ends 1350 + 500 = 1850. */
	cr_expect_eq(t->ops[t_id(g, "up")].end, 1350);
	cr_expect_eq(t->ops[t_id(g, "down")].end, 1850);
}

Test(costs, old_single_duplex_rate_serves_both_directions)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO); /* pcie_duplex_gbs 8 only */
	g_autoptr(LhGraph) g = NULL;
	g_autoptr(LhTrace) t = duplex_run(hw, &g);
	/* Both at 8 B/ns: 10000 / 8 = 1250 each. */
	cr_expect_eq(t->ops[t_id(g, "up")].end, 1250);
	cr_expect_eq(t->ops[t_id(g, "down")].end, 1250);
	cr_expect_float_eq(lh_hw_duplex_gbs(hw, FALSE), 8, 0);
	cr_expect_float_eq(lh_hw_duplex_gbs(hw, TRUE), 8, 0);
}

/* ---- the step overhead ---- */

static LhTrace *step_run(double overhead, LhGraph **gout, LhPlan **pout)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	hw->launch_ns = 100;
	hw->event_ns = 10;
	hw->step_overhead_ns = overhead;
	LhGraph *g = lh_graph_new("g");
	t_kernel(g, "k1", 50, 1);
	t_kernel(g, "k2", 50, 0.5);
	t_op(g, "up", LH_OP_COPY_H2D, 1000);
	t_dep(g, t_id(g, "k2"), t_id(g, "k1"));
	t_finish(g);
	LhPlan *p = lh_plan_new();
	guint32 s = lh_plan_add_stream(p, "s", LH_ROLE_COMPUTE);
	guint32 h = lh_plan_add_stream(p, "h", LH_ROLE_H2D);
	lh_plan_run(p, s, t_id(g, "k1"));
	lh_plan_link(p, s, h); /* signal on s (after k1), wait on h */
	lh_plan_run(p, h, t_id(g, "up"));
	lh_plan_run(p, s, t_id(g, "k2"));
	*gout = g;
	*pout = p;
	return t_sim(g, hw, p);
}

Test(costs, step_overhead_shifts_every_time)
{
	g_autoptr(LhGraph) g0 = NULL, g1 = NULL;
	g_autoptr(LhPlan) p0 = NULL, p1 = NULL;
	g_autoptr(LhTrace) a = step_run(0, &g0, &p0);
	g_autoptr(LhTrace) b = step_run(700, &g1, &p1);
	/* Without the overhead: k1 issued at 100 and runs 100-150; the signal is issued at 110
	 * and fires when k1 ends (150), the wait is issued at 120; up, issued at 220, runs
	 * 220-320 (1000 B at 10 B/ns); k2, issued at 320, runs 320-370. */
	cr_expect_eq(a->ops[t_id(g0, "k1")].start, 100);
	cr_expect_eq(a->ops[t_id(g0, "up")].end, 320);
	cr_expect_eq(a->ops[t_id(g0, "k2")].end, 370);
	/* With 700 ns of step overhead, the host starts issuing at 700: everything is 700 later. */
	cr_assert_eq(a->n_ops, b->n_ops);
	for (guint32 i = 0; i < a->n_ops; i++) {
		cr_expect_eq(b->ops[i].issue, a->ops[i].issue + 700, "op %u issue", i);
		cr_expect_eq(b->ops[i].start, a->ops[i].start + 700, "op %u start", i);
		cr_expect_eq(b->ops[i].end, a->ops[i].end + 700, "op %u end", i);
	}
	for (guint32 c = 0; c < a->n_cmds; c++)
		cr_expect_eq(b->cmd_issue[c], a->cmd_issue[c] + 700, "command %u", c);
	cr_expect_eq(b->host_end, a->host_end + 700);
	cr_expect_eq(b->ops[t_id(g1, "k2")].end, 1070);
	/* The lower bounds move by the same 700. Without it: host issue 100 + 10 + 10 + 100 +
	 * 100 = 320 (three runs, a signal, a wait); critical path k1 then k2 = 100; the H2D work
	 * 1000 B / 10 = 100. */
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	hw->launch_ns = 100;
	hw->event_ns = 10;
	LhBounds b0, b1;
	lh_bounds(g0, hw, p0, &b0);
	hw->step_overhead_ns = 700;
	lh_bounds(g1, hw, p1, &b1);
	cr_expect_float_eq(b0.host_issue, 320, 1e-9);
	cr_expect_float_eq(b1.host_issue, 1020, 1e-9);
	cr_expect_float_eq(b1.critical_path, b0.critical_path + 700, 1e-9);
	cr_expect_float_eq(b0.critical_path, 100, 1e-9);
	cr_expect_float_eq(b1.h2d_work, 800, 1e-9);
	cr_expect_float_eq(b1.bound, 1020, 1e-9);
	cr_expect_leq(b1.bound, (double)b->ops[t_id(g1, "k2")].end);
}

/* ---- old and bad hardware files ---- */

/* The built-in h100-sxm with the lines of @drop removed and @add appended. */
static char *h100_edited(const char *const *drop, const char *add)
{
	lh_models_init();
	const char *base = lh_hw_builtin_data("h100-sxm");
	cr_assert_not_null(base);
	GString *s = g_string_new(NULL);
	g_auto(GStrv) lines = g_strsplit(base, "\n", -1);
	for (guint i = 0; lines[i]; i++) {
		gboolean skip = FALSE;
		for (const char *const *d = drop; d && *d; d++)
			if (g_str_has_prefix(lines[i], *d) && lines[i][strlen(*d)] == ' ')
				skip = TRUE;
		if (!skip)
			g_string_append_printf(s, "%s\n", lines[i]);
	}
	if (add)
		g_string_append(s, add);
	return g_string_free(s, FALSE);
}

static const char *const new_keys[] = {"peak_f64_tflops",     "peak_f32_tflops",
                                       "peak_tf32_tflops",    "peak_fp8_tflops",
                                       "peak_int8_tops",      "gemm_eff",
                                       "gemm_tile_m",         "gemm_tile_n",
                                       "gemm_tile_k_bytes",   "hbm_transpose_eff",
                                       "pcie_duplex_h2d_gbs", "pcie_duplex_d2h_gbs",
                                       "step_overhead_ns",    NULL};

Test(costs, an_old_ini_without_the_new_keys_keeps_its_old_meaning)
{
	g_autofree char *text = h100_edited(new_keys, "pcie_duplex_gbs = 51\n");
	g_autoptr(GError) e = NULL;
	g_autoptr(LhHw) hw = lh_hw_new_from_data(text, strlen(text), "old.ini", &e);
	cr_assert_not_null(hw, "%s", e ? e->message : "");
	/* Every type at peak_tflops, no GEMM model, transposes at hbm_eff, both duplex
	 * directions at the old rate, no step overhead. */
	cr_expect_float_eq(hw->peak_f64_tflops, 989, 0);
	cr_expect_float_eq(hw->peak_int8_tops, 989, 0);
	cr_expect_float_eq(hw->gemm_eff, 0, 0);
	cr_expect_float_eq(hw->hbm_transpose_eff, 0.85, 0);
	cr_expect_float_eq(hw->pcie_duplex_h2d_gbs, 51, 0);
	cr_expect_float_eq(hw->pcie_duplex_d2h_gbs, 51, 0);
	cr_expect_float_eq(hw->step_overhead_ns, 0, 0);
	/* So an f64 GEMM costs what it did: 2 * 4096^3 = 137438953472 FLOP / (989e3 * 0.7)
	 * = 198524.7 ns + 2000. */
	g_autoptr(LhGraph) g = lh_graph_new("g");
	gemm(g, "mm", LH_DTYPE_F64, 1, 4096, 4096, 4096);
	t_finish(g);
	cr_expect_float_eq(standalone(g, "mm", hw), 137438953472.0 / (989e3 * 0.7) + 2000, 1e-6);
	/* Written back, it states every number it stands for, the new way, and reads back the
	 * same; the GEMM model it does not have stays out. */
	g_autofree char *out = lh_hw_to_data(hw);
	cr_expect(strstr(out, "\npeak_f64_tflops = 989\n"), "%s", out);
	cr_expect(strstr(out, "\npcie_duplex_h2d_gbs = 51\npcie_duplex_d2h_gbs = 51\n"), "%s", out);
	cr_expect_null(strstr(out, "pcie_duplex_gbs"), "%s", out);
	cr_expect_null(strstr(out, "gemm_"), "%s", out);
	g_autoptr(LhHw) back = lh_hw_new_from_data(out, strlen(out), "rt.ini", &e);
	cr_assert_not_null(back, "%s", e ? e->message : "");
	g_autofree char *out2 = lh_hw_to_data(back);
	cr_expect_str_eq(out, out2);
}

Test(costs, the_builtins_give_every_new_key)
{
	lh_models_init();
	g_autofree const char **names = lh_hw_builtin_names();
	for (guint n = 0; names[n]; n++) {
		const char *data = lh_hw_builtin_data(names[n]);
		for (const char *const *k = new_keys; *k; k++) {
			g_autofree char *line = g_strdup_printf("\n%s = ", *k);
			cr_expect(strstr(data, line), "%s lacks %s", names[n], *k);
		}
		cr_expect_null(strstr(data, "\npcie_duplex_gbs"), "%s", names[n]);
	}
}

typedef struct {
	const char *drop; /* a key to remove, or NULL */
	const char *add;  /* lines to append, or NULL */
	const char *needle;
} BadIni;

Test(costs, bad_new_keys_name_the_key)
{
	BadIni c[] = {
	    /* A group given in part: the missing key and the whole group are named. */
	    {"peak_tf32_tflops", NULL,
	     "missing key 'peak_tf32_tflops' (TFLOP/s) in [hw]: a description that gives any "
	     "per-dtype peak ('peak_f64_tflops') must give all of peak_f64_tflops, "
	     "peak_f32_tflops, peak_tf32_tflops, peak_fp8_tflops, peak_int8_tops"},
	    {"gemm_tile_k_bytes", NULL, "missing key 'gemm_tile_k_bytes' (bytes)"},
	    {"pcie_duplex_h2d_gbs", NULL, "missing key 'pcie_duplex_h2d_gbs' (GB/s)"},
	    /* Old and new duplex forms together. */
	    {NULL, "pcie_duplex_gbs = 40\n",
	     "key 'pcie_duplex_gbs' is the old form of pcie_duplex_h2d_gbs and "
	     "pcie_duplex_d2h_gbs: give either it or those two, not both"},
	    {"gemm_tile_k_bytes", "gemm_tile_k_bytes = 1.5\n",
	     "key 'gemm_tile_k_bytes': '1.5' must be a whole number"},
	    {"gemm_eff", "gemm_eff = 1.2\n", "key 'gemm_eff' = 1.2 is out of range"},
	    {"pcie_duplex_d2h_gbs", "pcie_duplex_d2h_gbs = 56\n",
	     "key 'pcie_duplex_d2h_gbs' = 56 GB/s exceeds pcie_gbs = 55 GB/s"},
	    {"peak_int8_tops", "peak_int8_tops = 0\n", "key 'peak_int8_tops' = 0 is out of range"},
	};
	/* An old file's single duplex rate is named as the file wrote it. */
	{
		const char *drop[] = {"pcie_duplex_h2d_gbs", "pcie_duplex_d2h_gbs", NULL};
		g_autofree char *text = h100_edited(drop, "pcie_duplex_gbs = 60\n");
		g_autoptr(GError) e = NULL;
		g_autoptr(LhHw) hw = lh_hw_new_from_data(text, strlen(text), "old.ini", &e);
		cr_assert_null(hw);
		cr_expect(
		    strstr(e->message, "key 'pcie_duplex_gbs' = 60 GB/s exceeds pcie_gbs = 55"),
		    "%s", e->message);
		cr_expect(g_regex_match_simple("^old\\.ini:[0-9]+:1: ", e->message, 0, 0), "%s",
		          e->message);
	}
	for (gsize i = 0; i < G_N_ELEMENTS(c); i++) {
		const char *drop[] = {c[i].drop, NULL};
		g_autofree char *text = h100_edited(drop, c[i].add);
		g_autoptr(GError) e = NULL;
		g_autoptr(LhHw) hw = lh_hw_new_from_data(text, strlen(text), "gpu.ini", &e);
		cr_assert_null(hw, "case %zu accepted", i);
		cr_expect(strstr(e->message, c[i].needle), "case %zu: '%s' lacks '%s'", i,
		          e->message, c[i].needle);
		cr_expect(g_str_has_prefix(e->message, "gpu.ini:"), "%s", e->message);
	}
	/* The same checks on a struct a program built. */
	g_autoptr(LhHw) hw = c_hw();
	hw->gemm_eff = 2;
	g_autoptr(GError) e = NULL;
	cr_expect_not(lh_hw_validate(hw, "mine", &e));
	cr_expect(strstr(e->message, "key 'gemm_eff' = 2 is out of range"), "%s", e->message);
	g_clear_error(&e);
	hw->gemm_eff = 0.5;
	hw->pcie_duplex_h2d_gbs = 11;
	cr_expect_not(lh_hw_validate(hw, "mine", &e));
	cr_expect(strstr(e->message, "key 'pcie_duplex_h2d_gbs' = 11 GB/s exceeds pcie_gbs = 10"),
	          "%s", e->message);
}
