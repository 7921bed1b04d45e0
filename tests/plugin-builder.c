/* lhsim tests — a scheduler plugin of the current ABI that lets the plan builder do the
 * synchronisation (tests/test-plugin-abi.c), as docs/api.md shows a plugin should: it reads
 * ops through the accessors of sim/op.h and gives lh_plan_add_list_schedule a stream per op
 * and an order.
 *
 * "two-streams": copies (h2d, d2h) on a stream "copy", everything else on "main", issued in
 * lh_graph_topo() order. Its `supports` slot turns down graphs with collectives. */
#include <gmodule.h>
#include <lhsim.h>

static gboolean two_streams_supports(const LhGraph *g, const LhHw *hw, GError **error)
{
	(void)hw;
	for (guint32 i = 0; i < lh_graph_n_ops(g); i++) {
		const LhOp *op = lh_graph_op(g, i);
		if (lh_op_kind_is_collective(lh_op_kind(op))) {
			g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_UNSUPPORTED,
			            "two-streams: op '%s' is a %s; this scheduler plans kernels "
			            "and copies only",
			            lh_op_name(op), lh_op_kind_name(lh_op_kind(op)));
			return FALSE;
		}
	}
	return TRUE;
}

static LhPlan *two_streams_plan(const LhGraph *g, const LhHw *hw, const LhParams *p, GError **error)
{
	(void)hw;
	(void)p;
	guint32 n = lh_graph_n_ops(g);
	g_autoptr(LhPlan) plan = lh_plan_new();
	guint32 main_s = lh_plan_add_stream(plan, "main", LH_ROLE_COMPUTE);
	guint32 copy_s = lh_plan_add_stream(plan, "copy", LH_ROLE_ASYNC_COMPUTE);
	g_autofree guint32 *stream = g_new(guint32, n ? n : 1);
	for (guint32 i = 0; i < n; i++)
		stream[i] = lh_op_kind_is_copy(lh_op_kind(lh_graph_op(g, i))) ? copy_s : main_s;
	if (!lh_plan_add_list_schedule(plan, g, stream, lh_graph_topo(g), n, error))
		return NULL;
	return g_steal_pointer(&plan);
}

static const LhScheduler two_streams = {
    .version = LH_SCHEDULER_ABI,
    .name = "two-streams",
    .summary = "test plugin: copies on their own stream, synchronised by the plan builder",
    .params = NULL,
    .plan = two_streams_plan,
    .supports = two_streams_supports,
};

G_MODULE_EXPORT const LhScheduler *lh_scheduler_plugin(void);
G_MODULE_EXPORT const LhScheduler *lh_scheduler_plugin(void)
{
	return &two_streams;
}
