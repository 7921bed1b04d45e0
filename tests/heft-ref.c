/* lhsim tests — the reference `heft`: schedulers/heft.c as it was before issue 12 (a linear
 * scan per step; costs by lh_op_standalone_ns_in, as on main since member sets), kept as an
 * oracle for test-sched-ref, which checks that the indexed version plans the same. Built only
 * into that test (tests/meson.build renames lh_sched_heft). The original comment follows. */
/* lhsim — `heft`: Heterogeneous Earliest Finish Time (Topcuoglu, Hariri and Wu, "Performance-
 * effective and low-complexity task scheduling for heterogeneous computing", IEEE TPDS 13(3),
 * 2002), over `streams` streams.
 *
 * As in the paper: (1) the upward rank, rank_u(i) = w(i) + max over successors j of
 * (c(i, j) + rank_u(j)), with w the op's cost and c the mean cost of an edge; (2) ops in
 * decreasing rank_u (ties: topological position); (3) each op goes to the processor that
 * gives it the earliest finish time, with the insertion-based policy: it may fill an idle gap
 * between ops already placed on that processor, if the gap is long enough and starts after
 * its data is ready.
 *
 * In lhsim the processors of an op are the streams that can run it: kernels (and device
 * copies) on `streams` compute streams, host-to-device and device-to-host copies on one
 * stream per copy engine of that direction, collectives on one stream, send/recv on one. All
 * streams of one kind are identical, so w(i) is the op's standalone duration everywhere. An
 * edge between ops on different streams costs the event that orders them (hw event_ns); the
 * mean edge cost over stream pairs is event_ns * (P - 1) / P for the rank, and the exact one
 * (event_ns or 0) when placing.
 */
#include "schedulers/sched-util.h"
#include "sim/cost.h"

#include <stdlib.h>

static const LhParamSpec heft_params[] = {
    {"streams", LH_PARAM_INT, "4", 1, 1024, NULL, "compute streams (HEFT's processors)"},
    {NULL, 0, NULL, 0, 0, NULL, NULL},
};

enum { K_COMPUTE, K_H2D, K_D2H, K_COLL, K_P2P, K_N };

typedef struct {
	double s, e;
} Busy;

typedef struct {
	double rank;
	guint32 topo, op;
} Rank;

static int rank_cmp(const void *pa, const void *pb)
{
	const Rank *a = pa, *b = pb;
	if (a->rank != b->rank)
		return a->rank > b->rank ? -1 : 1;
	return (a->topo > b->topo) - (a->topo < b->topo);
}

/* Earliest start >= @ready of a @w-long interval on a processor whose busy intervals are
 * sorted and disjoint (insertion policy). */
static double earliest_slot(GArray *busy, double ready, double w, guint32 *at)
{
	guint32 lo = 0, hi = busy->len;
	/* First interval ending after ready. */
	while (lo < hi) {
		guint32 mid = (lo + hi) / 2;
		if (g_array_index(busy, Busy, mid).e <= ready)
			lo = mid + 1;
		else
			hi = mid;
	}
	double t = ready;
	for (guint32 k = lo; k < busy->len; k++) {
		const Busy *b = &g_array_index(busy, Busy, k);
		if (t + w <= b->s) {
			*at = k;
			return t;
		}
		if (b->e > t)
			t = b->e;
	}
	*at = busy->len;
	return t;
}

static guint kind_of(const LhOp *op)
{
	switch ((LhOpKind)op->kind) {
	case LH_OP_COPY_H2D:
		return K_H2D;
	case LH_OP_COPY_D2H:
		return K_D2H;
	case LH_OP_SEND:
	case LH_OP_RECV:
		return K_P2P;
	default:
		return lh_op_kind_is_collective(op->kind) ? K_COLL : K_COMPUTE;
	}
}

static LhPlan *heft_plan(const LhGraph *g, const LhHw *hw, const LhParams *p, GError **error)
{
	(void)error;
	guint32 n = lh_graph_n_ops(g);
	guint32 P = (guint32)lh_params_get_int(p, "streams");
	guint32 count[K_N] = {P, MAX(hw->copy_engines_h2d, 1), MAX(hw->copy_engines_d2h, 1), 1, 1};
	static const char *const prefix[K_N] = {"s", "h2d", "d2h", "collective", "p2p"};
	static const LhStreamRole role[K_N] = {LH_ROLE_COMPUTE, LH_ROLE_H2D, LH_ROLE_D2H,
	                                       LH_ROLE_COLLECTIVE, LH_ROLE_P2P};
	double mean_c = P > 1 ? hw->event_ns * (P - 1) / P : 0;

	g_autofree double *w = g_new0(double, n);
	for (guint32 i = 0; i < n; i++)
		w[i] = lh_op_standalone_ns_in(g, lh_graph_op(g, i), hw);
	/* Upward rank. */
	const guint32 *topo = lh_graph_topo(g);
	g_autofree double *rank = g_new0(double, n);
	g_autofree Rank *order = g_new(Rank, n);
	for (guint32 k = n; k-- > 0;) {
		guint32 v = topo[k], ns;
		const guint32 *sc = lh_graph_succs(g, v, &ns);
		double best = 0;
		for (guint32 j = 0; j < ns; j++)
			best = MAX(best, mean_c + rank[sc[j]]);
		rank[v] = w[v] + best;
		order[k] = (Rank){rank[v], k, v};
	}
	qsort(order, n, sizeof(Rank), rank_cmp);

	/* Processors: busy lists per virtual stream. */
	GArray **busy[K_N];
	for (guint k = 0; k < K_N; k++) {
		busy[k] = g_new(GArray *, count[k]);
		for (guint32 s = 0; s < count[k]; s++)
			busy[k][s] = g_array_new(FALSE, FALSE, sizeof(Busy));
	}
	g_autofree double *start = g_new0(double, n), *fin = g_new0(double, n);
	g_autofree guint32 *vs = g_new0(guint32, n), *seq = g_new0(guint32, n);
	g_autofree guint8 *kind = g_new0(guint8, n);
	g_autofree guint8 *done = g_new0(guint8, n);
	guint32 placed = 0;
	for (guint32 r = 0; r < n; r++) {
		guint32 v = order[r].op;
		const LhOp *op = lh_graph_op(g, v);
		done[v] = 1;
		if (op->kind == LH_OP_INPUT)
			continue;
		guint k = kind_of(op);
		kind[v] = (guint8)k;
		guint32 nd;
		const guint32 *d = lh_graph_deps(g, v, &nd);
		double best_f = G_MAXDOUBLE, best_s = 0;
		guint32 best_p = 0, best_at = 0;
		for (guint32 s = 0; s < count[k]; s++) {
			double ready = 0;
			for (guint32 j = 0; j < nd; j++) {
				guint32 u = d[j];
				g_assert(done[u]);
				if (lh_graph_op(g, u)->kind == LH_OP_INPUT)
					continue;
				gboolean same = kind[u] == k && vs[u] == s;
				ready = MAX(ready, fin[u] + (same ? 0 : hw->event_ns));
			}
			guint32 at;
			double t = earliest_slot(busy[k][s], ready, w[v], &at);
			if (t + w[v] < best_f) {
				best_f = t + w[v];
				best_s = t;
				best_p = s;
				best_at = at;
			}
		}
		Busy b = {best_s, best_f};
		g_array_insert_val(busy[k][best_p], best_at, b);
		start[v] = best_s;
		fin[v] = best_f;
		vs[v] = best_p;
		seq[v] = placed++;
		lh_params_explain(p,
		                  "heft: %s '%s' (rank_u %.0f ns) -> %s%u, start %.0f ns, "
		                  "earliest finish %.0f ns",
		                  lh_op_kind_name(op->kind), op->name, rank[v], prefix[k], best_p,
		                  best_s, best_f);
	}
	LhPlan *plan = lh_plan_new();
	g_autofree guint32 *stream = g_new0(guint32, n);
	guint32 *map[K_N];
	for (guint k = 0; k < K_N; k++) {
		map[k] = g_new(guint32, count[k]);
		for (guint32 s = 0; s < count[k]; s++)
			map[k][s] = G_MAXUINT32;
	}
	map[K_COMPUTE][0] = lh_plan_add_stream(plan, "s0", LH_ROLE_COMPUTE);
	for (guint32 r = 0; r < n; r++) {
		guint32 v = order[r].op;
		if (lh_graph_op(g, v)->kind == LH_OP_INPUT)
			continue;
		guint k = kind[v];
		if (map[k][vs[v]] == G_MAXUINT32) {
			g_autofree char *name = g_strdup_printf("%s%u", prefix[k], vs[v]);
			map[k][vs[v]] = lh_plan_add_stream(plan, name, role[k]);
		}
		stream[v] = map[k][vs[v]];
	}
	lh__emit_list_schedule(plan, g, stream, start, seq);
	for (guint k = 0; k < K_N; k++) {
		for (guint32 s = 0; s < count[k]; s++)
			g_array_free(busy[k][s], TRUE);
		g_free(busy[k]);
		g_free(map[k]);
	}
	return plan;
}

const LhScheduler lh_sched_heft = {
    .version = LH_SCHEDULER_ABI,
    .name = "heft",
    .summary = "HEFT (Topcuoglu et al. 2002): upward rank, insertion-based earliest finish "
               "time over `streams` streams",
    .params = heft_params,
    .plan = heft_plan,
};
