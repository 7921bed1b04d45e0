/* lhsim tests — scheduler plugins with faults the loader and the command line must report
 * clearly (tests/test-sched.c). Built twice:
 *   -DFAULTY_PARAMS: a parameter table whose default does not parse (rejected at load);
 *   -DFAULTY_PLAN:   a scheduler whose plan leaves out the graph's last op (invalid). */
#include <gmodule.h>
#include <lhsim.h>

static LhPlan *faulty_plan(const LhGraph *g, const LhHw *hw, const LhParams *p, GError **error)
{
	(void)hw;
	(void)p;
	(void)error;
	guint32 n = lh_graph_n_ops(g);
	LhPlan *plan = lh_plan_new();
	guint32 s = lh_plan_add_stream(plan, "main", LH_ROLE_COMPUTE);
	/* Program order is a topological order of the test graphs; the last op is left out. */
	for (guint32 i = 0; i + 1 < n; i++)
		if (lh_graph_op(g, i)->kind != LH_OP_INPUT)
			lh_plan_run(plan, s, i);
	return plan;
}

#ifdef FAULTY_PARAMS
static const LhParamSpec faulty_params[] = {
    {"limit", LH_PARAM_INT, "zero", 1, 8, NULL, "a default that is not an integer"},
    {NULL, 0, NULL, 0, 0, NULL, NULL},
};
#define PARAMS faulty_params
#else
#define PARAMS NULL
#endif

static const LhScheduler faulty = {
    .version = LH_SCHEDULER_ABI,
    .name = "faulty",
    .summary = "test plugin with a fault",
    .params = PARAMS,
    .plan = faulty_plan,
};

G_MODULE_EXPORT const LhScheduler *lh_scheduler_plugin(void);
G_MODULE_EXPORT const LhScheduler *lh_scheduler_plugin(void)
{
	return &faulty;
}
