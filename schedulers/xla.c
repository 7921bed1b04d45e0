/* lhsim — `xla`: XLA's own schedule, replayed as it stands.
 *
 * A graph imported from a scheduled HLO module (is_scheduled=true) carries XLA's sequence
 * (lh_graph_schedule(), docs/graph-format.md "schedule"): every op once, and every async op's
 * done once after its start. This scheduler makes no decision; it emits that sequence:
 *
 * - an op that is not async runs on the main stream at its position;
 * - an async op's start signals the main stream and issues the op on a side stream of its
 *   resource class (wait for the signal, then run), exactly as `lhs` issues a start;
 * - its done signals the side stream and makes the main stream wait there, where XLA put it;
 * - inputs never run (their buffers are live from t = 0), wherever the sequence lists them.
 *
 * The side streams are the pools `lhs` uses, one per resource class with the same default
 * sizes (collective 1, p2p 4, async compute 2, memcpy one per copy in flight), so an `xla`
 * plan and an `lhs` plan with default limits run on the same stream layout and compare
 * fairly. A start takes the pool member with the fewest ops in flight. The sequence already
 * fixes how many async ops are in flight, so there are no in-flight limits here: when more
 * ops of a class are in flight than the pool has streams, they queue on the streams, as XLA's
 * runtime queues them on its async streams.
 *
 * The sequence must respect every dep: an op may be issued only after each of its deps was
 * issued (a sync dep) or waited for (an async dep's done). A sequence that does not is corrupt
 * input, and the error names both ops. */
#include "schedulers/sched-util.h"

static const LhParamSpec xla_params[] = {
    {"collective-streams", LH_PARAM_INT, "1", 0, 1024, NULL,
     "side streams for collectives (lhs: collective-limit); 0 = one per collective in flight"},
    {"p2p-streams", LH_PARAM_INT, "4", 0, 1024, NULL,
     "side streams for send/recv (lhs: p2p-limit); 0 = one per op in flight"},
    {"compute-streams", LH_PARAM_INT, "2", 0, 1024, NULL,
     "side streams for async compute: host-offload copies and async kernels (lhs: "
     "compute-streams); 0 = one per op in flight"},
    {"memcpy-streams", LH_PARAM_INT, "0", 0, 1024, NULL,
     "side streams for device-to-device copies; 0 = one per copy in flight"},
    {NULL, 0, NULL, 0, 0, NULL, NULL},
};

static gboolean runs_async(const LhOp *op)
{
	return op->kind != LH_OP_INPUT && op->async && lh_op_class(op) != LH_CLASS_NONE;
}

/* Checks that the sequence issues every op after its deps are done. @start and @done are the
 * positions of each op's start and done (G_MAXUINT32 for none). */
static gboolean check_deps(const LhGraph *g, const guint32 *start, const guint32 *done,
                           GError **error)
{
	for (guint32 v = 0; v < lh_graph_n_ops(g); v++) {
		const LhOp *op = lh_graph_op(g, v);
		if (op->kind == LH_OP_INPUT)
			continue;
		guint32 nd;
		const guint32 *d = lh_graph_deps(g, v, &nd);
		for (guint32 k = 0; k < nd; k++) {
			const LhOp *dep = lh_graph_op(g, d[k]);
			if (dep->kind == LH_OP_INPUT)
				continue;
			gboolean a = runs_async(dep);
			guint32 ready = a ? done[d[k]] : start[d[k]];
			if (ready < start[v])
				continue;
			if (a)
				g_set_error(
				    error, LH_GRAPH_ERROR, LH_GRAPH_ERROR_INVALID,
				    "xla: the schedule of '%s' breaks a dep: it issues %s '%s' "
				    "before the done of async %s '%s', which '%s' needs",
				    lh_graph_name(g), lh_op_kind_name(op->kind), op->name,
				    lh_op_kind_name(dep->kind), dep->name, op->name);
			else
				g_set_error(
				    error, LH_GRAPH_ERROR, LH_GRAPH_ERROR_INVALID,
				    "xla: the schedule of '%s' breaks a dep: it issues %s '%s' "
				    "before %s '%s', which '%s' needs",
				    lh_graph_name(g), lh_op_kind_name(op->kind), op->name,
				    lh_op_kind_name(dep->kind), dep->name, op->name);
			return FALSE;
		}
	}
	return TRUE;
}

/* XLA's sequence is the whole plan: a graph without one cannot be replayed. */
static gboolean has_schedule(const LhGraph *g, GError **error)
{
	guint32 n_seq;
	if (lh_graph_schedule(g, &n_seq))
		return TRUE;
	g_set_error(error, LH_GRAPH_ERROR, LH_GRAPH_ERROR_INVALID,
	            "xla: graph '%s' has no schedule: import a scheduled module "
	            "(is_scheduled=true, e.g. XLA's *.after_optimizations.txt dump), or give "
	            "the graph JSON a \"schedule\" (docs/graph-format.md); the other "
	            "schedulers need none",
	            lh_graph_name(g));
	return FALSE;
}

/* The `supports` slot: lh_scheduler_supports() and lh_scheduler_run() learn that a graph
 * without a schedule cannot be planned before any parameter is parsed. */
static gboolean xla_supports(const LhGraph *g, const LhHw *hw, GError **error)
{
	(void)hw;
	return has_schedule(g, error);
}

static LhPlan *xla_plan(const LhGraph *g, const LhHw *hw, const LhParams *p, GError **error)
{
	(void)hw;
	/* Also here: a caller may call the plan slot without asking supports first. */
	if (!has_schedule(g, error))
		return NULL;
	guint32 n_seq, n = lh_graph_n_ops(g);
	const guint32 *seq = lh_graph_schedule(g, &n_seq);
	/* lh_graph_finish() checked the sequence: every op once, every async op's done once
	 * after its start. */
	g_autofree guint32 *start = g_new(guint32, n ? n : 1);
	g_autofree guint32 *done = g_new(guint32, n ? n : 1);
	for (guint32 i = 0; i < n; i++)
		start[i] = done[i] = G_MAXUINT32;
	for (guint32 k = 0; k < n_seq; k++) {
		if (seq[k] & LH_SCHED_DONE)
			done[seq[k] >> 1] = k;
		else
			start[seq[k] >> 1] = k;
	}
	if (!check_deps(g, start, done, error))
		return NULL;

	LhPlan *plan = lh_plan_new();
	guint32 main_s = lh_plan_add_stream(plan, "main", LH_ROLE_COMPUTE);
	LhStreamPool pool[LH_CLASS_N];
	lh__pool_init(&pool[LH_CLASS_COLLECTIVE], "collective", LH_ROLE_COLLECTIVE,
	              (guint32)lh_params_get_int(p, "collective-streams"));
	lh__pool_init(&pool[LH_CLASS_P2P], "p2p", LH_ROLE_P2P,
	              (guint32)lh_params_get_int(p, "p2p-streams"));
	lh__pool_init(&pool[LH_CLASS_ASYNC_COMPUTE], "compute", LH_ROLE_ASYNC_COMPUTE,
	              (guint32)lh_params_get_int(p, "compute-streams"));
	lh__pool_init(&pool[LH_CLASS_MEMCPY], "memcpy", LH_ROLE_MEMCPY,
	              (guint32)lh_params_get_int(p, "memcpy-streams"));
	lh_params_explain(p,
	                  "xla: %u ops, %u sequence positions: XLA's order, emitted as it "
	                  "stands (no scheduling decisions)",
	                  n, n_seq);
	g_autofree guint32 *member = g_new0(guint32, n ? n : 1);
	for (guint32 k = 0; k < n_seq; k++) {
		guint32 i = seq[k] >> 1;
		const LhOp *op = lh_graph_op(g, i);
		const char *kind = lh_op_kind_name(op->kind);
		if (op->kind == LH_OP_INPUT) {
			lh_params_explain(
			    p,
			    "xla: sequence position %u: input '%s' is live from t = 0, "
			    "nothing runs",
			    k, op->name);
			continue;
		}
		if (!runs_async(op)) {
			/* A done entry exists only for async ops (checked at finish). */
			lh_plan_run(plan, main_s, i);
			lh_params_explain(p, "xla: sequence position %u: %s '%s' runs on main", k,
			                  kind, op->name);
			continue;
		}
		LhOpClass c = lh_op_class(op);
		LhStreamPool *pl = &pool[c];
		if (!(seq[k] & LH_SCHED_DONE)) {
			member[i] = lh__pool_acquire(pl, plan);
			guint32 side = lh__pool_stream(pl, member[i]);
			lh_plan_link(plan, main_s, side);
			lh_plan_run(plan, side, i);
			lh_params_explain(p, "xla: sequence position %u: %s '%s' starts on %s (%s)",
			                  k, kind, op->name, lh_plan_stream(plan, side)->name,
			                  lh_op_class_name(c));
		} else {
			guint32 side = lh__pool_stream(pl, member[i]);
			lh_plan_link(plan, side, main_s);
			lh__pool_release(pl, member[i]);
			lh_params_explain(
			    p,
			    "xla: sequence position %u: main waits for the done of %s "
			    "'%s' (%s)",
			    k, kind, op->name, lh_plan_stream(plan, side)->name);
		}
	}
	for (guint32 c = 0; c < LH_CLASS_N; c++)
		if (c != LH_CLASS_NONE)
			lh__pool_clear(&pool[c]);
	return plan;
}

const LhScheduler lh_sched_xla = {
    .version = LH_SCHEDULER_ABI,
    .name = "xla",
    .summary = "XLA's own schedule of a scheduled module, as it stands: starts issue async "
               "ops on side streams, dones wait where XLA put them",
    .params = xla_params,
    .plan = xla_plan,
    .supports = xla_supports,
};
