/* lhsim — internal to liblhsim: a trace whose arrays a helper thread writes first while the
 * engine sets up and runs (issue 12). Not installed. */
#pragma once

#include "sim/pages-private.h"
#include "sim/trace.h"

G_BEGIN_DECLS

/* The timing of an op that has not run: what lh_trace_new() sets every op to. */
static inline LhOpTiming lh__op_timing_unset(void)
{
	return (LhOpTiming){-1, -1, -1, -1, LH_ENGINE_NONE, 0, {0, 0}};
}

/* lh_trace_new(), with the command issue times (zero) and the op timings (unset) written by
 * @pages' helper (lh__pages_fill) rather than by the caller: at 10^6 ops that is 40 MB of new
 * memory, whose first writes were a quarter of lh_simulate (bench-engine --serial, perf) on a
 * VM where each new page's first write traps to the host (sim/pages-private.h). Command c's
 * issue time may be read or written once lh__fill_wait(*@cmd_fill, c) has returned, op i's
 * timing once lh__fill_wait(*@op_fill, i) has. Free @pages before the trace. */
LhTrace *lh__trace_new_filling(guint32 n_ops, guint32 n_cmds, LhPages *pages, LhFill **cmd_fill,
                               LhFill **op_fill);

G_END_DECLS
