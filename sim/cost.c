/* lhsim — standalone costs (DESIGN 4.2). */
#include "sim/cost.h"

double lh_op_standalone_ns(const LhOp *op, const LhHw *hw)
{
	if (op->kind == LH_OP_INPUT)
		return 0;
	if (op->duration_ns >= 0)
		return (double)op->duration_ns;
	switch ((LhOpKind)op->kind) {
	case LH_OP_KERNEL:
	case LH_OP_COPY_D2D: {
		double bytes = op->kind == LH_OP_COPY_D2D ? 2.0 * (double)op->size : op->bytes;
		double flops = op->kind == LH_OP_COPY_D2D ? 0 : op->flops;
		/* peak_tflops is 1e12 FLOP/s = 1e3 FLOP/ns; GB/s is 1 byte/ns. */
		double tc = flops / (hw->peak_tflops * 1e3 * hw->compute_eff);
		double tm = bytes / (hw->hbm_gbs * hw->hbm_eff);
		return MAX(tc, tm) + hw->kernel_overhead_ns;
	}
	case LH_OP_COPY_H2D:
	case LH_OP_COPY_D2H:
		return hw->copy_latency_ns + (double)op->size / hw->pcie_gbs;
	default: /* collectives */
		return hw->link_latency_ns + lh_op_wire_bytes(op) / hw->link_gbs;
	}
}

double lh_op_hbm_use(const LhOp *op, const LhHw *hw, double t)
{
	double bytes = op->kind == LH_OP_COPY_D2D ? 2.0 * (double)op->size
		     : op->kind == LH_OP_KERNEL  ? op->bytes
						 : 0;
	if (t <= 0 || bytes <= 0)
		return 0;
	return bytes / t / (hw->hbm_gbs * hw->hbm_eff);
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
