/* lhsim tests — a scheduler plugin for sweeps (tests/test-sweep-grid.c): "shuffle" runs every
 * op on one stream in a random topological order drawn from its `seed` (so the seed changes
 * the peak memory, never the makespan), and with `die-on-rank=R` kills the process it runs in
 * when that is MPI rank R (OMPI_COMM_WORLD_RANK), to test a rank that dies. */
#include <gmodule.h>
#include <lhsim.h>
#include <signal.h>
#include <stdlib.h>

static LhPlan *shuffle_plan(const LhGraph *g, const LhHw *hw, const LhParams *p, GError **error)
{
	(void)hw;
	(void)error;
	gint64 die = lh_params_get_int(p, "die-on-rank");
	const char *rank = g_getenv("OMPI_COMM_WORLD_RANK");
	if (die >= 0 && rank && g_ascii_strtoll(rank, NULL, 10) == die)
		raise(SIGKILL);
	guint32 n = lh_graph_n_ops(g);
	GRand *rng = g_rand_new_with_seed((guint32)lh_params_get_int(p, "seed"));
	guint32 *left = g_new0(guint32, n); /* deps not yet run */
	GArray *ready = g_array_new(FALSE, FALSE, sizeof(guint32));
	for (guint32 i = 0; i < n; i++) {
		guint32 nd = 0;
		lh_graph_deps(g, i, &nd);
		left[i] = nd;
		if (!nd)
			g_array_append_val(ready, i);
	}
	LhPlan *plan = lh_plan_new();
	guint32 s = lh_plan_add_stream(plan, "main", LH_ROLE_COMPUTE);
	while (ready->len) {
		guint k = (guint)g_rand_int_range(rng, 0, (gint32)ready->len);
		guint32 op = g_array_index(ready, guint32, k);
		g_array_remove_index(ready, k);
		if (lh_graph_op(g, op)->kind != LH_OP_INPUT)
			lh_plan_run(plan, s, op);
		guint32 ns = 0;
		const guint32 *succ = lh_graph_succs(g, op, &ns);
		for (guint32 j = 0; j < ns; j++)
			if (--left[succ[j]] == 0)
				g_array_append_val(ready, succ[j]);
	}
	g_array_free(ready, TRUE);
	g_free(left);
	g_rand_free(rng);
	return plan;
}

static const LhParamSpec shuffle_params[] = {
    {"seed", LH_PARAM_INT, "1", 0, 1e9, NULL, "random seed of the order"},
    {"die-on-rank", LH_PARAM_INT, "-1", -1, 1e6, NULL, "kill the process on this MPI rank"},
    {NULL, 0, NULL, 0, 0, NULL, NULL},
};

static const LhScheduler shuffle = {
    .version = LH_SCHEDULER_ABI,
    .name = "shuffle",
    .summary = "test plugin: one stream, a seeded random topological order",
    .params = shuffle_params,
    .plan = shuffle_plan,
};

G_MODULE_EXPORT const LhScheduler *lh_scheduler_plugin(void);
G_MODULE_EXPORT const LhScheduler *lh_scheduler_plugin(void)
{
	return &shuffle;
}
