/* lhsim — what the replay backends share beyond the public API (backends/backend-private.h).
 *
 * Compiled into liblhsim for the cpu backend and again into the cuda module, which is loaded
 * at run time and can only reach liblhsim's exported (public) symbols. */
#include "backends/backend-private.h"
#include "sim/engine.h"

#include <math.h>
#include <stdlib.h>

LhEngine lh_op_engine(LhOpKind k)
{
	switch (k) {
	case LH_OP_INPUT:
		return LH_ENGINE_NONE;
	case LH_OP_COPY_H2D:
		return LH_ENGINE_H2D;
	case LH_OP_COPY_D2H:
		return LH_ENGINE_D2H;
	case LH_OP_KERNEL:
	case LH_OP_COPY_D2D:
		return LH_ENGINE_SM;
	default:
		return lh_op_kind_is_collective(k) ? LH_ENGINE_LINK : LH_ENGINE_NONE;
	}
}

static int i64_cmp(const void *a, const void *b)
{
	gint64 x = *(const gint64 *)a, y = *(const gint64 *)b;
	return (x > y) - (x < y);
}

void lh_replay_fill_medians(LhTrace *t, const gint64 *rows, guint32 R, const LhGraph *g,
                            const LhPlan *plan, double scale)
{
	guint32 n_ops = lh_graph_n_ops(g), n = lh_plan_n_cmds(plan);
	gsize stride = 3 * (gsize)MAX(n_ops, 1) + MAX(n, 1);
	g_autofree gint64 *col = g_new(gint64, MAX(R, 1));
	for (gsize k = 0; k < 3 * (gsize)n_ops + n; k++) {
		for (guint32 r = 0; r < R; r++)
			col[r] = rows[r * stride + k];
		qsort(col, R, sizeof(gint64), i64_cmp);
		gint64 v = col[(R - 1) / 2];
		gint64 ns = v < 0 ? -1 : scale == 1.0 ? v : (gint64)llround((double)v / scale);
		if (k < n_ops)
			t->ops[k].issue = ns;
		else if (k < 2 * (gsize)n_ops)
			t->ops[k - n_ops].start = ns;
		else if (k < 3 * (gsize)n_ops)
			t->ops[k - 2 * n_ops].end = ns;
		else
			t->cmd_issue[k - 3 * n_ops] = ns;
	}
	for (guint32 c = 0; c < n; c++) {
		const LhCmd *cmd = lh_plan_cmd(plan, c);
		if (cmd->kind != LH_CMD_RUN)
			continue;
		LhOpTiming *tm = &t->ops[cmd->arg];
		tm->stream = (gint32)cmd->stream;
		tm->engine = (guint8)lh_op_engine(lh_graph_op(g, (guint32)cmd->arg)->kind);
	}
}

const LhTrace *lh_replay_prediction(const char *who, const LhGraph *g, const LhHw *hw,
                                    const LhPlan *plan, const LhReplayOptions *opt, LhTrace **own,
                                    GError **error)
{
	guint32 n_ops = lh_graph_n_ops(g), n = lh_plan_n_cmds(plan);
	const LhTrace *pred = opt ? opt->predicted : NULL;
	*own = NULL;
	if (pred && (pred->n_ops != n_ops || pred->n_cmds != n)) {
		g_set_error(
		    error, LH_BACKEND_ERROR, LH_BACKEND_ERROR_PLAN,
		    "%s: the predicted trace (%u ops, %u commands) is not of this graph and "
		    "plan (%u ops, %u commands)",
		    who, pred->n_ops, pred->n_cmds, n_ops, n);
		return NULL;
	}
	if (pred)
		return pred;
	LhSimOptions so = {.skip_validate = TRUE};
	*own = lh_simulate(g, hw, plan, &so, NULL, error);
	return *own;
}
