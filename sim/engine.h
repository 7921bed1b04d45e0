/* lhsim — the discrete-event engine (docs/engine.md).
 *
 * lh_simulate() runs a validated plan on a hardware model and returns the trace. It is pure:
 * the same graph, hardware and plan give the same trace, bit for bit.
 */
#pragma once

#include "sim/graph.h"
#include "sim/hw.h"
#include "sim/plan.h"
#include "sim/trace.h"

G_BEGIN_DECLS

#define LH_ENGINE_ERROR (lh_engine_error_quark())
GQuark lh_engine_error_quark(void);

typedef enum {
	LH_ENGINE_ERROR_DEADLOCK, /* commands remain but nothing can happen */
	LH_ENGINE_ERROR_MEMORY,   /* device memory exceeded with strict_memory */
	LH_ENGINE_ERROR_INVALID,  /* the plan does not fit the graph */
} LhEngineError;

/* The engine's time range, in ns. No op may take longer than LH_MAX_OP_NS standalone (about
 * 3 years), and no event may happen after LH_MAX_TIME_NS (about 127 years): an input whose
 * times add up to more is an input error (LH_ENGINE_ERROR_INVALID) naming the op, never a
 * wrapped-around time. Readers check single values against LH_MAX_OP_NS. */
#define LH_MAX_OP_NS G_GINT64_CONSTANT(100000000000000000)
#define LH_MAX_TIME_NS G_GINT64_CONSTANT(4000000000000000000)

typedef struct {
	gboolean strict_memory; /* exceeding memory_gib is an error, not a warning */
	gboolean skip_validate; /* the caller already ran lh_plan_validate */
	/* Appended: a zero-initialised LhSimOptions leaves them off. */
	const LhHw *const *device_hw; /* graphs placed on devices: the hardware of each of
	                                 lh_graph_devices() devices; NULL = @hw for all */
	const double *slow;           /* per device (lh_graph_devices(), or 1 for a graph without
	                                 placement): a straggler factor > 0 on its kernels'
	                                 durations (1.2 = 20 % slower, 1 = none; docs/engine.md,
	                                 "Several devices"); NULL = none */
} LhSimOptions;

/* Returns the trace, or NULL with @error set. When device memory exceeds the model's
 * capacity without strict_memory, *@over_memory (may be NULL) is set TRUE. */
LhTrace *lh_simulate(const LhGraph *g, const LhHw *hw, const LhPlan *plan, const LhSimOptions *opt,
                     gboolean *over_memory, GError **error);

G_END_DECLS
