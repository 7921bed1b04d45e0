/* lhsim — standalone costs of ops on a hardware model (docs/design.md#standalone-costs,
 * #lower-bounds). All times are nanoseconds as doubles; the engine rounds only event times. */
#pragma once

#include "sim/graph.h"
#include "sim/hw.h"

G_BEGIN_DECLS

/* Standalone duration of @op alone on the device, in ns: kernels (and copy-d2d) by the
 * roofline with the peak of their dtype, GEMMs by the GEMM model, plus overhead; copies
 * latency + size / pcie_gbs, collectives latency + wire / link_gbs; duration_ns when set; 0 for
 * inputs (docs/engine.md, "Durations and phases"). */
double lh_op_standalone_ns(const LhOp *op, const LhHw *hw);
/* The same for op @op of graph @g (NULL: no member sets), whose member set places a
 * collective on the cluster of @hw (docs/engine.md, "Collectives on a cluster"). */
double lh_op_standalone_ns_in(const LhGraph *g, const LhOp *op, const LhHw *hw);

/* A collective's two phases (docs/engine.md): a latency phase of *latency_ns, then a wire
 * phase of *wire_ns that uses *link_use of the NVLink and *net_use of the network at rate 1.
 * Without a cluster: link_latency_ns, wire / link_gbs, link 1 and network 0, as always. */
void lh_op_link_phases(const LhGraph *g, const LhOp *op, const LhHw *hw, double *latency_ns,
                       double *wire_ns, double *link_use, double *net_use);

/* The GEMM model's terms for one kernel (docs/engine.md). */
typedef struct {
	double tiles;      /* batch * ceil(m / tile_m) * ceil(n / tile_n) */
	double waves;      /* ceil(tiles / sm_count) */
	double wave_eff;   /* tiles / (waves * sm_count) */
	double tile_eff;   /* m n k / (padded m n k) */
	double eff;        /* gemm_eff * wave_eff * tile_eff: achieved fraction of the peak */
	double tile_ns;    /* one SM's time for one padded tile */
	double compute_ns; /* waves * tile_ns */
} LhGemmCost;
/* TRUE when @op is a kernel with a GEMM shape (gemm_batch, m, n, k all >= 1). */
gboolean lh_op_is_gemm(const LhOp *op);
/* Fills @out and returns TRUE when @op is a GEMM and @hw has a GEMM model (gemm_eff > 0). */
gboolean lh_gemm_shape_cost(const LhOp *op, const LhHw *hw, LhGemmCost *out);

/* A kernel's HBM use while running alone: bytes / T / (hbm_gbs * eff), eff hbm_eff or, for a
 * transpose, hbm_transpose_eff; may exceed 1. */
double lh_op_hbm_use(const LhOp *op, const LhHw *hw, double standalone_ns);
/* Fraction of SMs the op occupies: sm for kernels, 0.1 for copy-d2d, collective_sm for
 * collectives, 0 for copies and inputs. */
double lh_op_sm_share(const LhOp *op, const LhHw *hw);

G_END_DECLS
