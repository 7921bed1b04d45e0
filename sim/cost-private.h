/* lhsim — internal to liblhsim: the cost model's per-hardware constants, computed once, for
 * the passes over every op of the engine (sim/engine.c) and of lhs (schedulers/lhs.c). Not
 * installed. */
#pragma once

#include "sim/cost.h"

/* What lh_op_standalone_ns_in computes from the hardware alone for a kernel, per dtype, by
 * the same expressions (so the same doubles). */
typedef struct {
	const LhHw *hw;
	double hbm_bw[2];           /* hbm_gbs * eff: hbm_eff, then the transpose's */
	double flop_ns[LH_DTYPE_N]; /* peak * 1e3 * compute_eff: the roofline's FLOP per ns */
	gboolean gemm;              /* the GEMM model applies (gemm_eff > 0, tile sizes set) */
	double tile_mn2;            /* 2.0 * tile_m * tile_n */
	double tk[LH_DTYPE_N];      /* the K slice in elements */
	double per_sm[LH_DTYPE_N];  /* one SM's FLOP per ns at gemm_eff */
} LhCostCtx;

void lh__cost_ctx_init(LhCostCtx *c, const LhHw *hw);

/* lh_op_standalone_ns_in (the same double) of a kernel or copy-d2d without duration_ns, and
 * its HBM bytes and bandwidth (*bytes / T / *bw is lh_op_hbm_use's value for T > 0 and
 * *bytes > 0). */
double lh__kernel_ns(const LhCostCtx *c, const LhOp *op, double *bytes, double *bw);

/* lh_op_standalone_ns_in(@g, @op, c->hw), the same double, through lh__kernel_ns where that
 * applies (most ops): for a scheduler's pass over every op. */
double lh__standalone_ns(const LhCostCtx *c, const LhGraph *g, const LhOp *op);
