/* lhsim — standalone costs (docs/design.md#standalone-costs; the formulas and their sources are in
 * docs/engine.md, "Durations and phases", and docs/hw-format.md). */
#include "sim/cost.h"
#include "sim/cost-private.h"
#include "sim/topo.h"

#include <math.h>

/* Bytes of one element of the GEMM's operands, which turns gemm_tile_k_bytes into elements. */
static double dtype_bytes(LhDtype d)
{
	switch (d) {
	case LH_DTYPE_F64:
		return 8;
	case LH_DTYPE_F32:
	case LH_DTYPE_TF32:
		return 4;
	case LH_DTYPE_FP8:
	case LH_DTYPE_INT8:
		return 1;
	default: /* NONE (the bf16 peak, so its operands), BF16, F16 */
		return 2;
	}
}

gboolean lh_op_is_gemm(const LhOp *op)
{
	return op->kind == LH_OP_KERNEL && op->gemm_batch >= 1 && op->gemm_m >= 1 &&
	       op->gemm_n >= 1 && op->gemm_k >= 1;
}

gboolean lh_gemm_shape_cost(const LhOp *op, const LhHw *hw, LhGemmCost *out)
{
	if (!lh_op_is_gemm(op) || hw->gemm_eff <= 0 || !hw->gemm_tile_m || !hw->gemm_tile_n ||
	    !hw->gemm_tile_k_bytes)
		return FALSE;
	LhDtype dt = (LhDtype)op->dtype;
	double tm = hw->gemm_tile_m, tn = hw->gemm_tile_n;
	/* K in elements: the tile's K slice is gemm_tile_k_bytes of the operand type, at least one
	 * element (f64 with a 4-byte slice still advances one element at a time). */
	double tk = MAX(1.0, floor(hw->gemm_tile_k_bytes / dtype_bytes(dt)));
	double m = (double)op->gemm_m, n = (double)op->gemm_n, k = (double)op->gemm_k;
	double mt = ceil(m / tm), nt = ceil(n / tn), kt = ceil(k / tk);
	double sms = hw->sm_count;
	LhGemmCost c;
	c.tiles = (double)op->gemm_batch * mt * nt;
	c.waves = ceil(c.tiles / sms);
	c.wave_eff = c.tiles / (c.waves * sms);
	c.tile_eff = (m / (mt * tm)) * (n / (nt * tn)) * (k / (kt * tk));
	c.eff = hw->gemm_eff * c.wave_eff * c.tile_eff;
	/* One SM computes one padded tile at its share of the dtype's peak times gemm_eff:
	 * 2 * tm * tn * (kt * tk) FLOP at peak * 1e3 / sm_count FLOP/ns. Every wave costs one
	 * tile time however few of its SMs have a tile: that is wave quantization, and for a
	 * GEMM of one tile it is the floor. */
	double per_sm = lh_hw_peak_tflops(hw, dt) * 1e3 / sms * hw->gemm_eff;
	c.tile_ns = 2.0 * tm * tn * kt * tk / per_sm;
	c.compute_ns = c.waves * c.tile_ns;
	*out = c;
	return TRUE;
}

/* HBM bytes of a kernel or copy-d2d, and the efficiency they stream at. */
static double mem_bytes(const LhOp *op, double *eff, const LhHw *hw)
{
	double bytes = op->kind == LH_OP_COPY_D2D ? 2.0 * (double)op->size
	               : op->kind == LH_OP_KERNEL ? op->bytes
	                                          : 0;
	*eff = op->transpose ? lh_hw_transpose_eff(hw) : hw->hbm_eff;
	return bytes;
}

void lh_op_link_phases(const LhGraph *g, const LhOp *op, const LhHw *hw, double *latency_ns,
                       double *wire_ns, double *link_use, double *net_use)
{
	if (!lh_hw_has_cluster(hw)) {
		*latency_ns = hw->link_latency_ns;
		*wire_ns = lh_op_wire_bytes(op) / hw->link_gbs;
		*link_use = 1;
		*net_use = 0;
		return;
	}
	LhCollCost c = lh_coll_cost(op, lh_op_span(g, op, hw), hw);
	*latency_ns = c.latency_ns;
	*wire_ns = c.wire_ns;
	*link_use = c.wire_ns > 0 ? c.nvl_ns / c.wire_ns : 0;
	*net_use = c.wire_ns > 0 ? c.net_ns / c.wire_ns : 0;
}

double lh_op_standalone_ns(const LhOp *op, const LhHw *hw)
{
	return lh_op_standalone_ns_in(NULL, op, hw);
}

double lh_op_standalone_ns_in(const LhGraph *g, const LhOp *op, const LhHw *hw)
{
	if (op->kind == LH_OP_INPUT)
		return 0;
	if (op->duration_ns >= 0)
		return (double)op->duration_ns;
	switch ((LhOpKind)op->kind) {
	case LH_OP_KERNEL:
	case LH_OP_COPY_D2D: {
		double eff;
		double bytes = mem_bytes(op, &eff, hw);
		/* GB/s is 1 byte/ns; peaks are 1e12 FLOP/s = 1e3 FLOP/ns. */
		double tm = bytes / (hw->hbm_gbs * eff);
		double tc = 0;
		LhGemmCost g;
		if (op->kind == LH_OP_KERNEL && lh_gemm_shape_cost(op, hw, &g))
			tc = g.compute_ns;
		else if (op->kind == LH_OP_KERNEL)
			tc = op->flops /
			     (lh_hw_peak_tflops(hw, (LhDtype)op->dtype) * 1e3 * hw->compute_eff);
		return MAX(tc, tm) + hw->kernel_overhead_ns;
	}
	case LH_OP_COPY_H2D:
	case LH_OP_COPY_D2H:
		return hw->copy_latency_ns + (double)op->size / hw->pcie_gbs;
	default: { /* collectives */
		double lat, wire, lu, nu;
		lh_op_link_phases(g, op, hw, &lat, &wire, &lu, &nu);
		return lat + wire;
	}
	}
}

double lh_op_hbm_use(const LhOp *op, const LhHw *hw, double t)
{
	double eff;
	double bytes = mem_bytes(op, &eff, hw);
	if (t <= 0 || bytes <= 0)
		return 0;
	return bytes / t / (hw->hbm_gbs * eff);
}

double lh_op_sm_share(const LhOp *op, const LhHw *hw)
{
	switch ((LhOpKind)op->kind) {
	case LH_OP_KERNEL:
		return op->sm;
	case LH_OP_COPY_D2D:
		return 0.1;
	case LH_OP_INPUT:
	case LH_OP_COPY_H2D:
	case LH_OP_COPY_D2H:
		return 0;
	default:
		return hw->collective_sm;
	}
}

void lh__cost_ctx_init(LhCostCtx *c, const LhHw *hw)
{
	c->hw = hw;
	c->hbm_bw[0] = hw->hbm_gbs * hw->hbm_eff;
	c->hbm_bw[1] = hw->hbm_gbs * lh_hw_transpose_eff(hw);
	c->gemm = hw->gemm_eff > 0 && hw->gemm_tile_m && hw->gemm_tile_n && hw->gemm_tile_k_bytes;
	double tm = hw->gemm_tile_m, tn = hw->gemm_tile_n, sms = hw->sm_count;
	c->tile_mn2 = 2.0 * tm * tn;
	for (int d = 0; d < LH_DTYPE_N; d++) {
		/* As lh_op_standalone_ns_in and lh_gemm_shape_cost compute them per op. */
		double peak = lh_hw_peak_tflops(hw, (LhDtype)d);
		c->flop_ns[d] = peak * 1e3 * hw->compute_eff;
		c->tk[d] = MAX(1.0, floor(hw->gemm_tile_k_bytes / dtype_bytes((LhDtype)d)));
		c->per_sm[d] = peak * 1e3 / sms * hw->gemm_eff;
	}
}

double lh__kernel_ns(const LhCostCtx *c, const LhOp *op, double *bytes, double *bw)
{
	const LhHw *hw = c->hw;
	if (op->dtype >= LH_DTYPE_N) { /* not a valid graph's: the general path */
		double eff;
		*bytes = mem_bytes(op, &eff, hw);
		*bw = hw->hbm_gbs * eff;
		return lh_op_standalone_ns_in(NULL, op, hw);
	}
	/* lh_op_standalone_ns_in's kernel case, term by term. */
	*bytes = op->kind == LH_OP_COPY_D2D ? 2.0 * (double)op->size : op->bytes;
	*bw = c->hbm_bw[op->transpose != 0];
	double tm = *bytes / *bw;
	double tc = 0;
	if (op->kind == LH_OP_KERNEL) {
		guint8 dt = op->dtype;
		if (c->gemm && lh_op_is_gemm(op)) {
			/* lh_gemm_shape_cost's compute_ns: waves * tile_ns. */
			double m = (double)op->gemm_m, n = (double)op->gemm_n,
			       k = (double)op->gemm_k;
			double mt = ceil(m / hw->gemm_tile_m), nt = ceil(n / hw->gemm_tile_n);
			double kt = ceil(k / c->tk[dt]);
			double tiles = (double)op->gemm_batch * mt * nt;
			double waves = ceil(tiles / hw->sm_count);
			tc = waves * (c->tile_mn2 * kt * c->tk[dt] / c->per_sm[dt]);
		} else {
			tc = op->flops / c->flop_ns[dt];
		}
	}
	return MAX(tc, tm) + hw->kernel_overhead_ns;
}

double lh__standalone_ns(const LhCostCtx *c, const LhGraph *g, const LhOp *op)
{
	if (op->duration_ns < 0 && (op->kind == LH_OP_KERNEL || op->kind == LH_OP_COPY_D2D)) {
		double bytes, bw;
		return lh__kernel_ns(c, op, &bytes, &bw);
	}
	return lh_op_standalone_ns_in(g, op, c->hw);
}
