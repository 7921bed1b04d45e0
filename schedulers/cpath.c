/* lhsim — `cpath`: critical-path list scheduling (docs/design.md#cpath).
 *
 * Priority: the b-level, the longest chain of standalone durations from an op to an exit,
 * the op's own included (HLFET / CP-MISF style). The schedule is built in simulated time on
 * `streams` compute streams plus side streams for async ops: at each step, among ready ops,
 * the one that can start earliest is placed, and among those that can start at that same
 * time the one with the highest b-level, then the earlier op in program order. An op goes to
 * the stream of its pool that frees first.
 *
 * Async ops (op->async and a resource class) get side streams of their class, with as many
 * streams as the class's in-flight limit, the same limits as `lhs`: collective-limit,
 * p2p-limit, async-compute-limit (host-offload copies, async kernels), memcpy-limit (0 =
 * unlimited, then `streams`). One op at a time per stream keeps each class within its limit.
 * Everything else runs on the compute streams.
 *
 * The cost model is the standalone duration; it ignores SM sharing between streams, so its
 * estimated times are what an ideal P-processor machine would give (models/hw/ideal.ini
 * with sm = 1/P is exactly that, see tests/test-sched-stg.c).
 */
#include "schedulers/sched-util.h"
#include "sim/cost.h"

static const LhParamSpec cpath_params[] = {
    {"streams", LH_PARAM_INT, "4", 1, 1024, NULL, "compute streams"},
    {"collective-limit", LH_PARAM_INT, "1", 1, 64, NULL, "collectives in flight at once"},
    {"p2p-limit", LH_PARAM_INT, "4", 1, 64, NULL, "send/recv in flight at once"},
    {"async-compute-limit", LH_PARAM_INT, "2", 1, 64, NULL,
     "async compute in flight: host-offload copies and async kernels"},
    {"memcpy-limit", LH_PARAM_INT, "0", 0, 1024, NULL,
     "device-to-device copies in flight; 0 = unlimited (then `streams`)"},
    {NULL, 0, NULL, 0, 0, NULL, NULL},
};

static const char *const pool_prefix[LH_CLASS_N] = {"s", "collective", "p2p", "compute", "memcpy"};
static const LhStreamRole pool_role[LH_CLASS_N] = {LH_ROLE_COMPUTE, LH_ROLE_COLLECTIVE, LH_ROLE_P2P,
                                                   LH_ROLE_ASYNC_COMPUTE, LH_ROLE_MEMCPY};

/* The orders of the ready heaps (LhHeap, sched-util.h). */
typedef struct {
	const double *ready, *bl;
} Cand;

/* Higher b-level first, then program order. */
static gboolean by_blevel(const void *p, guint32 a, guint32 b)
{
	const Cand *cx = p;
	return cx->bl[a] > cx->bl[b] || (cx->bl[a] == cx->bl[b] && a < b);
}

/* Earlier data-ready time first, then as by_blevel. */
static gboolean by_ready(const void *p, guint32 a, guint32 b)
{
	const Cand *cx = p;
	if (cx->ready[a] != cx->ready[b])
		return cx->ready[a] < cx->ready[b];
	return by_blevel(cx, a, b);
}

/* The stream of the @n whose free time comes first (the lowest index on ties). */
static guint32 first_free(const double *free_at, guint32 n)
{
	guint32 best = 0;
	for (guint32 s = 1; s < n; s++)
		if (free_at[s] < free_at[best])
			best = s;
	return best;
}

/* Op @v's deps are all placed: it joins the input heap, or its pool's B (data ready by the
 * time the pool frees) or A. */
static void make_ready(const LhGraph *g, guint32 v, const guint8 *pool, const double *pool_free,
                       LhHeap *hin, LhHeap *ha, LhHeap *hb)
{
	if (lh_graph_op(g, v)->kind == LH_OP_INPUT)
		lh__heap_push(hin, v);
	else if (((const Cand *)hin->cx)->ready[v] <= pool_free[pool[v]])
		lh__heap_push(&hb[pool[v]], v);
	else
		lh__heap_push(&ha[pool[v]], v);
}

static LhPlan *cpath_plan(const LhGraph *g, const LhHw *hw, const LhParams *p, GError **error)
{
	(void)error;
	guint32 n = lh_graph_n_ops(g);
	guint32 limit[LH_CLASS_N];
	lh__class_limits(p, limit);
	guint32 P = (guint32)lh_params_get_int(p, "streams");
	limit[LH_CLASS_NONE] = P;
	if (limit[LH_CLASS_MEMCPY] == G_MAXUINT32)
		limit[LH_CLASS_MEMCPY] = P;

	g_autofree double *cost = g_new0(double, n);
	g_autofree guint8 *pool = g_new0(guint8, n);
	for (guint32 i = 0; i < n; i++) {
		const LhOp *op = lh_graph_op(g, i);
		cost[i] = lh_op_standalone_ns_in(g, op, hw);
		pool[i] = op->async ? (guint8)lh_op_class(op) : LH_CLASS_NONE;
	}
	g_autofree double *bl = lh__blevel(g, cost);

	/* Virtual streams: pool c has limit[c] of them, each free from free_at. */
	double *free_at[LH_CLASS_N] = {NULL};
	for (guint32 c = 0; c < LH_CLASS_N; c++)
		free_at[c] = g_new0(double, limit[c]);
	g_autofree guint32 *indeg = g_new0(guint32, n);
	g_autofree double *ready = g_new0(double, n);
	g_autofree double *start = g_new0(double, n);
	g_autofree guint32 *vstream = g_new0(guint32, n);
	g_autofree guint32 *seq = g_new0(guint32, n);
	/* The ready set, indexed (issue 12): per pool, ops whose data is ready by the time a
	 * stream of the pool frees (t = that time for all of them: best b-level first, then
	 * program order) in heap B, the others in heap A by (data-ready time, b-level, index).
	 * Inputs start at 0 in a heap of their own. The step's pick is the least (t, -b-level,
	 * index) over the pools' heads: the same op the scan of every ready op picked. */
	Cand cx = {ready, bl};
	LhHeap ha[LH_CLASS_N], hb[LH_CLASS_N], hin;
	for (guint32 c = 0; c < LH_CLASS_N; c++) {
		lh__heap_init(&ha[c], by_ready, &cx);
		lh__heap_init(&hb[c], by_blevel, &cx);
	}
	lh__heap_init(&hin, by_blevel, &cx);
	double pool_free[LH_CLASS_N]; /* the earliest free_at of each pool */
	for (guint32 c = 0; c < LH_CLASS_N; c++)
		pool_free[c] = 0;
	for (guint32 i = 0; i < n; i++) {
		lh_graph_deps(g, i, &indeg[i]);
		if (indeg[i] == 0)
			make_ready(g, i, pool, pool_free, &hin, ha, hb);
	}
	guint32 placed = 0;
	for (;;) {
		/* The ready op that can start first; ties: higher b-level, then program order. */
		LhHeap *from = NULL;
		double best_t = G_MAXDOUBLE;
		guint32 v = G_MAXUINT32;
		if (hin.n) {
			from = &hin;
			best_t = 0;
			v = hin.v[0];
		}
		for (guint32 c = 0; c < LH_CLASS_N; c++) {
			LhHeap *h = hb[c].n ? &hb[c] : ha[c].n ? &ha[c] : NULL;
			if (!h)
				continue;
			guint32 u = h->v[0];
			double t = h == &hb[c] ? pool_free[c] : MAX(ready[u], pool_free[c]);
			if (!from || t < best_t || (t == best_t && by_blevel(&cx, u, v))) {
				from = h;
				best_t = t;
				v = u;
			}
		}
		if (!from)
			break;
		lh__heap_pop(from);
		double fin = best_t;
		if (lh_graph_op(g, v)->kind != LH_OP_INPUT) {
			guint32 c = pool[v], best_s = first_free(free_at[c], limit[c]);
			start[v] = best_t;
			fin = best_t + cost[v];
			free_at[c][best_s] = fin;
			vstream[v] = best_s;
			seq[v] = placed++;
			lh_params_explain(p, "cpath: t=%.0f ns %s '%s' on %s%u (b-level %.0f ns)",
			                  best_t, lh_op_kind_name(lh_graph_op(g, v)->kind),
			                  lh_graph_op(g, v)->name, pool_prefix[c], best_s, bl[v]);
			/* The pool's earliest free time only grows: ops now ready by it move to B.
			 */
			double f = free_at[c][first_free(free_at[c], limit[c])];
			pool_free[c] = f;
			while (ha[c].n && ready[ha[c].v[0]] <= f)
				lh__heap_push(&hb[c], lh__heap_pop(&ha[c]));
		}
		guint32 ns;
		const guint32 *sc = lh_graph_succs(g, v, &ns);
		for (guint32 j = 0; j < ns; j++) {
			guint32 w = sc[j];
			ready[w] = MAX(ready[w], fin);
			if (--indeg[w] == 0)
				make_ready(g, w, pool, pool_free, &hin, ha, hb);
		}
	}
	for (guint32 c = 0; c < LH_CLASS_N; c++) {
		lh__heap_clear(&ha[c]);
		lh__heap_clear(&hb[c]);
	}
	lh__heap_clear(&hin);

	/* Map virtual streams to plan streams in order of first use. */
	LhPlan *plan = lh_plan_new();
	g_autofree guint32 *stream = g_new0(guint32, n);
	guint32 *map[LH_CLASS_N] = {NULL};
	for (guint32 c = 0; c < LH_CLASS_N; c++) {
		map[c] = g_new(guint32, limit[c]);
		for (guint32 s = 0; s < limit[c]; s++)
			map[c][s] = G_MAXUINT32;
	}
	/* Compute stream 0 first, so that a plan always has a main stream. */
	map[LH_CLASS_NONE][0] = lh_plan_add_stream(plan, "s0", LH_ROLE_COMPUTE);
	g_autofree guint32 *by_seq = g_new(guint32, placed ? placed : 1);
	for (guint32 i = 0; i < n; i++)
		if (lh_graph_op(g, i)->kind != LH_OP_INPUT)
			by_seq[seq[i]] = i;
	for (guint32 k = 0; k < placed; k++) {
		guint32 v = by_seq[k], c = pool[v], s = vstream[v];
		if (map[c][s] == G_MAXUINT32) {
			g_autofree char *name = g_strdup_printf("%s%u", pool_prefix[c], s);
			map[c][s] = lh_plan_add_stream(plan, name, pool_role[c]);
		}
		stream[v] = map[c][s];
	}
	lh__emit_list_schedule(plan, g, stream, start, seq);
	for (guint32 c = 0; c < LH_CLASS_N; c++) {
		g_free(free_at[c]);
		g_free(map[c]);
	}
	return plan;
}

const LhScheduler lh_sched_cpath = {
    .version = LH_SCHEDULER_ABI,
    .name = "cpath",
    .summary = "critical-path (b-level) list scheduling over `streams` streams, with the "
               "per-class limits of lhs",
    .params = cpath_params,
    .plan = cpath_plan,
};
