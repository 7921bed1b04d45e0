/* An out-of-tree lhsim scheduler plugin: `reverse-serial`.
 *
 * One stream; among the ops whose deps have all run, it always runs the one that comes LAST
 * in program order (the opposite of the built-in `serial`). Small, but a real scheduler: it
 * uses only the installed public API (`#include <lhsim.h>`, installed as include/lhsim/lhsim.h,
 * found through `pkg-config --cflags lhsim`) and passes lh_plan_validate on every
 * graph. Build it with the Makefile beside this file against an installed lhsim, then
 *     lhsim run --plugin ./reverse-serial.so --sched reverse-serial
 */
#include <gmodule.h>
#include <lhsim.h>

static LhPlan *reverse_serial_plan(const LhGraph *g, const LhHw *hw, const LhParams *p,
                                   GError **error)
{
	(void)hw;
	(void)error;
	guint32 n = lh_graph_n_ops(g);
	LhPlan *plan = lh_plan_new();
	guint32 s = lh_plan_add_stream(plan, "main", LH_ROLE_COMPUTE);
	guint32 *left = g_new0(guint32, n);
	/* Ready ops in a max-heap would be faster; a linear scan keeps the example short. */
	GArray *ready = g_array_new(FALSE, FALSE, sizeof(guint32));
	for (guint32 i = 0; i < n; i++) {
		lh_graph_deps(g, i, &left[i]);
		if (left[i] == 0)
			g_array_append_val(ready, i);
	}
	while (ready->len) {
		guint32 best = 0;
		for (guint32 k = 1; k < ready->len; k++)
			if (g_array_index(ready, guint32, k) > g_array_index(ready, guint32, best))
				best = k;
		guint32 v = g_array_index(ready, guint32, best);
		g_array_remove_index_fast(ready, best);
		const LhOp *op = lh_graph_op(g, v); /* read through sim/op.h, not its fields */
		if (lh_op_kind(op) != LH_OP_INPUT) {
			lh_params_explain(p, "reverse-serial: '%s' is the latest ready op",
			                  lh_op_name(op));
			lh_plan_run(plan, s, v);
		}
		guint32 ns;
		const guint32 *sc = lh_graph_succs(g, v, &ns);
		for (guint32 j = 0; j < ns; j++)
			if (--left[sc[j]] == 0)
				g_array_append_val(ready, sc[j]);
	}
	g_array_free(ready, TRUE);
	g_free(left);
	return plan;
}

#ifndef EXAMPLE_ABI
#define EXAMPLE_ABI LH_SCHEDULER_ABI
#endif

static const LhScheduler reverse_serial = {
    .version = EXAMPLE_ABI,
    .name = "reverse-serial",
    .summary = "example plugin: one stream, the latest ready op in program order first",
    .params = NULL,
    .plan = reverse_serial_plan,
};

G_MODULE_EXPORT const LhScheduler *lh_scheduler_plugin(void);
G_MODULE_EXPORT const LhScheduler *lh_scheduler_plugin(void)
{
	return &reverse_serial;
}
