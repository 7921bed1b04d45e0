/* lhsim — the engine's checkpoints and incremental runs (internal: not installed; the rules are
 * docs/engine.md, "Checkpoints and incremental runs").
 *
 * A run of a graph without placement can keep checkpoints of the whole engine state at chosen
 * instants. A later run of a modified plan (same graph, hardware and options) names that run as
 * @from: the engine compares the two plans' commands itself, picks the latest checkpoint from
 * which the new plan's run is provably the same as the old one's, restores it rebuilt for the
 * new plan, and simulates only from there. Its trace is bit for bit that of lh_simulate() of
 * the new plan (tests/test-ckpt.c checks it on random graphs and plans). A placed graph, or no
 * valid checkpoint, is simulated in full. */
#pragma once

#include "sim/engine.h"

G_BEGIN_DECLS

/* A finished run with its checkpoints; it keeps copies of what it needs of its plan (not the
 * plan itself), and refers to the graph and hardware, which must outlive it. */
typedef struct LhSimRun LhSimRun;

typedef struct {
	guint32 c0;       /* first command where the plan differs from @from's checkpoint's plan
	                     (the number of commands when none does); 0 for a full run */
	gint64 t_from;    /* the instant restored from, ns; -1 for a full run */
	guint32 n_ckpt;   /* checkpoints the run holds (those inherited from @from included) */
	guint32 n_tried;  /* checkpoints examined, latest first, before the one restored */
	guint64 instants; /* instants this run simulated (from t_from on) */
} LhSimRunInfo;

/* Simulates @plan as lh_simulate() does and keeps a checkpoint every @every instants
 * (0: 64). @from (may be NULL) is an earlier run of the same @g, @hw and options: the run
 * restores from its latest valid checkpoint (and keeps those of its checkpoints up to that
 * instant); with none valid, or a different graph, hardware or options, it runs in full.
 * Returns NULL with @error set where lh_simulate() would. */
LhSimRun *lh__sim_run(const LhGraph *g, const LhHw *hw, const LhPlan *plan, const LhSimOptions *opt,
                      const LhSimRun *from, guint32 every, gboolean *over_memory, GError **error);
const LhTrace *lh__sim_run_trace(const LhSimRun *r);
void lh__sim_run_info(const LhSimRun *r, LhSimRunInfo *info);
void lh__sim_run_free(LhSimRun *r); /* NULL is fine */

G_END_DECLS
