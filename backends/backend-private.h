/* lhsim — helpers of the replay backends (internal, not installed, not exported).
 *
 * backends/backend-util.c defines them; it is compiled into liblhsim and again into the cuda
 * module, so that the module needs nothing of liblhsim beyond its public API. */
#pragma once

#include "backends/backend.h"

G_BEGIN_DECLS

/* The prediction a replay is measured against: opt->predicted when it fits @g and @plan (else
 * an error naming @who, "cpu replay"), otherwise a fresh simulation put in *@own, which the
 * caller frees. Returns NULL with @error set on failure. */
const LhTrace *lh_replay_prediction(const char *who, const LhGraph *g, const LhHw *hw,
                                    const LhPlan *plan, const LhReplayOptions *opt, LhTrace **own,
                                    GError **error);

/* Which engine an op of kind @k runs on (LH_ENGINE_NONE for inputs). */
LhEngine lh_op_engine(LhOpKind k);

/* For backends that replay a plan R times: @rows holds R rows of 3 * n_ops + n_cmds times
 * (each op's issue, then each op's start, then each op's end, then each command's issue) in
 * the replay's clock. Fills @t (n_ops, n_cmds as in @g and @plan) with each column's median
 * divided by @scale (wall-clock ns per predicted ns; 1 for none), -1 staying -1, and labels
 * each op that runs with its stream and engine. The caller sets engine_index. */
void lh_replay_fill_medians(LhTrace *t, const gint64 *rows, guint32 R, const LhGraph *g,
                            const LhPlan *plan, double scale);

G_END_DECLS
