/* lhsim tests — a scheduler plugin as written for scheduler ABI 2 (tests/test-plugin-abi.c).
 *
 * It declares the table with ABI 2's layout (five slots, copied below from
 * schedulers/scheduler.h as it was at ABI 2) and reads ops the ABI-2 way, through LhOp's
 * fields; it calls only functions that ABI 2 had. The loader must accept it, read no slot past
 * its table (ASan would see a read past this global), treat the slots it lacks as absent, and
 * run it. Built with -DPLUGIN_ABI=1 and -DPLUGIN_ABI=4 too: versions the loader must refuse.
 *
 * The scheduler, "abi2": copies (h2d, d2h) on a stream "copy", everything else on "main", in
 * program order (the tests' graphs list ops after their deps); a signal after an op that has
 * a consumer on the other stream, and a wait before every op for each dep on the other stream
 * (no covering: unlike the plan builder, it waits again for an event already waited for). */
#include <gmodule.h>
#include <lhsim.h>

#ifndef PLUGIN_ABI
#define PLUGIN_ABI 2
#endif

/* ABI 2's LhScheduler. */
typedef struct {
	guint32 version;
	const char *name;
	const char *summary;
	const LhParamSpec *params;
	LhPlan *(*plan)(const LhGraph *g, const LhHw *hw, const LhParams *p, GError **error);
} SchedulerAbi2;

static gboolean on_copy(const LhOp *op)
{
	return op->kind == LH_OP_COPY_H2D || op->kind == LH_OP_COPY_D2H;
}

static LhPlan *abi2_plan(const LhGraph *g, const LhHw *hw, const LhParams *p, GError **error)
{
	(void)hw;
	(void)error;
	guint32 n = lh_graph_n_ops(g);
	LhPlan *plan = lh_plan_new();
	guint32 s[2] = {lh_plan_add_stream(plan, "main", LH_ROLE_COMPUTE),
	                lh_plan_add_stream(plan, "copy", LH_ROLE_ASYNC_COMPUTE)};
	guint32 *event = g_new(guint32, n ? n : 1);
	for (guint32 v = 0; v < n; v++) {
		const LhOp *op = lh_graph_op(g, v);
		event[v] = G_MAXUINT32;
		if (op->kind == LH_OP_INPUT)
			continue;
		guint32 here = s[on_copy(op)], nd, ns;
		const guint32 *d = lh_graph_deps(g, v, &nd);
		for (guint32 j = 0; j < nd; j++) {
			const LhOp *dep = lh_graph_op(g, d[j]);
			if (dep->kind != LH_OP_INPUT && on_copy(dep) != on_copy(op))
				lh_plan_wait(plan, here, event[d[j]]);
		}
		lh_params_explain(p, "abi2: '%s' on %s", op->name, on_copy(op) ? "copy" : "main");
		lh_plan_run(plan, here, v);
		const guint32 *sc = lh_graph_succs(g, v, &ns);
		for (guint32 j = 0; j < ns; j++)
			if (on_copy(lh_graph_op(g, sc[j])) != on_copy(op)) {
				event[v] = lh_plan_new_event(plan);
				lh_plan_signal(plan, here, event[v]);
				break;
			}
	}
	g_free(event);
	return plan;
}

static const LhParamSpec abi2_params[] = {
    {"unused", LH_PARAM_INT, "3", 0, 10, NULL, "a parameter, to check the table is read"},
    {NULL, 0, NULL, 0, 0, NULL, NULL},
};

static const SchedulerAbi2 abi2 = {
    .version = PLUGIN_ABI,
    .name = "abi2",
    .summary = "test plugin built against scheduler ABI 2",
    .params = abi2_params,
    .plan = abi2_plan,
};

G_MODULE_EXPORT const SchedulerAbi2 *lh_scheduler_plugin(void);
G_MODULE_EXPORT const SchedulerAbi2 *lh_scheduler_plugin(void)
{
	return &abi2;
}
