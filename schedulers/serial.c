/* lhsim — `serial`: the no-overlap baseline. Every op runs on one stream in program order
 * (a topological order that keeps the source order wherever the deps allow), so each copy and
 * collective is waited for before anything else starts. */
#include "schedulers/scheduler.h"

static LhPlan *serial_plan(const LhGraph *g, const LhHw *hw, const LhParams *p, GError **error)
{
	(void)hw;
	(void)error;
	LhPlan *plan = lh_plan_new();
	guint32 s = lh_plan_add_stream(plan, "main", LH_ROLE_COMPUTE);
	const guint32 *topo = lh_graph_topo(g);
	for (guint32 k = 0; k < lh_graph_n_ops(g); k++) {
		const LhOp *op = lh_graph_op(g, topo[k]);
		if (op->kind == LH_OP_INPUT)
			continue;
		lh_params_explain(p, "serial: %s '%s' runs on main, position %u in program order",
		                  lh_op_kind_name(op->kind), op->name, k);
		lh_plan_run(plan, s, topo[k]);
	}
	return plan;
}

const LhScheduler lh_sched_serial = {
    .version = LH_SCHEDULER_ABI,
    .name = "serial",
    .summary = "program order on one stream, no overlap: the baseline",
    .params = NULL,
    .plan = serial_plan,
};
