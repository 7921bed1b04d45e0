/* lhsim — the models module: registers built-in hardware descriptions and exposes the
 * built-in workloads. */
#pragma once

#include "sim/graph.h"

G_BEGIN_DECLS

/* Registers the compiled-in hardware descriptions (models/hw/\*.ini) with lh_hw. Idempotent. */
void lh_models_init(void);

/* The built-in default workload (docs/design.md#workloads): a moe-offload graph sized to simulate
 * in well under a second. Caller frees. */
LhGraph *lh_default_workload(void);

G_END_DECLS
