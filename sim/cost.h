/* lhsim — standalone costs of ops on a hardware model (DESIGN.md 4.2 and 4.4).
 * All times are nanoseconds as doubles; the engine rounds only event times. */
#pragma once

#include "sim/graph.h"
#include "sim/hw.h"

G_BEGIN_DECLS

/* Standalone duration of @op alone on the device, in ns: kernels (and copy-d2d) by the
 * roofline plus overhead, copies latency + size / pcie_gbs, collectives latency + wire /
 * link_gbs; duration_ns when set; 0 for inputs. */
double lh_op_standalone_ns(const LhOp *op, const LhHw *hw);
/* A kernel's HBM use while running alone: bytes / T / (hbm_gbs * hbm_eff); may exceed 1. */
double lh_op_hbm_use(const LhOp *op, const LhHw *hw, double standalone_ns);
/* Fraction of SMs the op occupies: sm for kernels, 0.1 for copy-d2d, collective_sm for
 * collectives, 0 for copies and inputs. */
double lh_op_sm_share(const LhOp *op, const LhHw *hw);

G_END_DECLS
