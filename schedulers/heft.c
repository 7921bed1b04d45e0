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
#include "sim/cost-private.h"
#include "sim/pages-private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const LhParamSpec heft_params[] = {
    {"streams", LH_PARAM_INT, "4", 1, 1024, NULL, "compute streams (HEFT's processors)"},
    {NULL, 0, NULL, 0, 0, NULL, NULL},
};

enum { K_COMPUTE, K_H2D, K_D2H, K_COLL, K_P2P, K_N, K_INPUT = K_N };

typedef struct {
	double s, e;
} Busy;

typedef LhSortRec Rank; /* d: rank_u, u: topological position, op */

/* A processor's busy intervals, sorted and disjoint, in blocks of at most BLK_MAX (issue 12:
 * an insertion moves one block, not the whole list). Each block keeps the longest gap before
 * one of its intervals (after the previous interval, maybe in the block before), so that the
 * search for a slot skips blocks with no gap long enough. */
#define BLK_MAX 128

typedef struct {
	Busy *v;
	guint32 n;
	gboolean dirty; /* maxgap is stale */
	double maxgap;
	double last_e; /* v[n - 1].e, so that the search over blocks reads this array only */
} Blk;

typedef struct {
	Blk *b;
	guint32 nb;
} Proc;

static void proc_init(Proc *p)
{
	p->b = g_new0(Blk, 1);
	p->b[0].v = g_new(Busy, BLK_MAX);
	p->b[0].maxgap = -G_MAXDOUBLE; /* no gap yet, as blk_maxgap counts it */
	p->nb = 1;
}

static void proc_clear(Proc *p)
{
	for (guint32 i = 0; i < p->nb; i++)
		g_free(p->b[i].v);
	g_free(p->b);
}

static double blk_maxgap(Proc *p, guint32 j)
{
	Blk *b = &p->b[j];
	if (b->dirty) {
		double m = -G_MAXDOUBLE;
		for (guint32 k = 0; k < b->n; k++) {
			const Busy *prev = k   ? &b->v[k - 1]
			                   : j ? &p->b[j - 1].v[p->b[j - 1].n - 1]
			                       : NULL;
			if (prev)
				m = MAX(m, b->v[k].s - prev->e);
		}
		b->maxgap = m;
		b->dirty = FALSE;
	}
	return b->maxgap;
}

/* Earliest start >= @ready of a @w-long interval on processor @p (insertion policy): the
 * first interval ending after @ready, then the first gap after it that fits. The same
 * comparisons as a scan of the whole list; a block is skipped only when its longest gap is
 * short by more than any rounding of them. @blk and @at say where the interval goes. */
static double earliest_slot(Proc *p, double ready, double w, guint32 *blk, guint32 *at)
{
	/* The first block whose last interval ends after ready (blocks are never empty, but
	 * for an empty processor's one). */
	guint32 lo = 0, hi = p->nb;
	while (lo < hi) {
		guint32 mid = (lo + hi) / 2;
		const Blk *b = &p->b[mid];
		if (!b->n || b->last_e <= ready)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == p->nb) {
		*blk = p->nb - 1;
		*at = p->b[p->nb - 1].n;
		return ready;
	}
	guint32 j = lo;
	Blk *b = &p->b[j];
	/* The first interval of the block ending after ready (ends are sorted). Ready times
	 * mostly fall among the latest intervals, so the search gallops back from the block's
	 * end before it bisects: fewer cache lines of the block are read. */
	guint32 k0 = 0, k1 = b->n - 1; /* v[k1].e > ready: the block's last */
	for (guint32 step = 1; step <= k1; step *= 2) {
		if (b->v[k1 - step].e <= ready) {
			k0 = k1 - step + 1;
			break;
		}
		k1 -= step;
	}
	while (k0 < k1) {
		guint32 mid = (k0 + k1) / 2;
		if (b->v[mid].e <= ready)
			k0 = mid + 1;
		else
			k1 = mid;
	}
	double t = ready;
	if (t + w <= b->v[k0].s) {
		*blk = j;
		*at = k0;
		return t;
	}
	t = MAX(t, b->v[k0].e);
	for (guint32 k = k0 + 1;; k++) {
		if (k == b->n) {
			if (++j == p->nb)
				break;
			/* Skip whole blocks without a gap that could fit. */
			while (blk_maxgap(p, j) + 1e-9 * (fabs(t) + fabs(w) + 1) < w) {
				b = &p->b[j];
				t = MAX(t, b->v[b->n - 1].e);
				if (++j == p->nb)
					break;
			}
			if (j == p->nb)
				break;
			b = &p->b[j];
			k = 0;
		}
		if (t + w <= b->v[k].s) {
			*blk = j;
			*at = k;
			return t;
		}
		if (b->v[k].e > t)
			t = b->v[k].e;
	}
	*blk = p->nb - 1;
	*at = p->b[p->nb - 1].n;
	return t;
}

/* Counts gap @g, new in block @b, in its longest gap (a stale one is recomputed anyway). */
static void blk_gap_add(Blk *b, double g)
{
	if (!b->dirty)
		b->maxgap = MAX(b->maxgap, g);
}

static void proc_insert(Proc *p, guint32 j, guint32 at, Busy x)
{
	Blk *b = &p->b[j];
	/* x goes into the gap between prev and next (either may be absent), which belongs to
	 * next's block jn. It splits that gap into one before x (in block j) and one before
	 * next (in jn), each no longer than the old one (the same subtractions, monotonic under
	 * rounding): the longest gap of jn is stale only if the old gap was it. So blk_maxgap
	 * gives what a recount would, with no recount per insertion. */
	const Busy *prev = at ? &b->v[at - 1] : j ? &p->b[j - 1].v[p->b[j - 1].n - 1] : NULL;
	guint32 jn = at < b->n ? j : j + 1;
	const Busy *next = jn < p->nb ? &p->b[jn].v[jn == j ? at : 0] : NULL;
	if (prev && next && next->s - prev->e >= p->b[jn].maxgap)
		p->b[jn].dirty = TRUE;
	if (prev)
		blk_gap_add(b, x.s - prev->e);
	if (next)
		blk_gap_add(&p->b[jn], next->s - x.e);
	memmove(&b->v[at + 1], &b->v[at], (b->n - at) * sizeof(Busy));
	b->v[at] = x;
	b->n++;
	b->last_e = b->v[b->n - 1].e;
	if (b->n == BLK_MAX) { /* split in halves */
		p->b = g_renew(Blk, p->b, p->nb + 1);
		memmove(&p->b[j + 2], &p->b[j + 1], (p->nb - j - 1) * sizeof(Blk));
		p->nb++;
		b = &p->b[j];
		Blk *c = &p->b[j + 1];
		c->v = g_new(Busy, BLK_MAX);
		c->n = b->n / 2;
		memcpy(c->v, &b->v[b->n - c->n], c->n * sizeof(Busy));
		b->n -= c->n;
		c->dirty = b->dirty = TRUE;
		b->last_e = b->v[b->n - 1].e;
		c->last_e = c->v[c->n - 1].e;
	}
}

/* How many ops ahead in rank order heft fetches what an op reads (a few cache misses' time). */
#define HEFT_AHEAD 4

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

	/* The per-op arrays' pages are made present ahead by a helper thread (issue 12: at 10^6
	 * ops they are some 80 MB of new memory, page faults otherwise taken one by one). */
	LhPages *pages = lh__pages_new();
	g_autofree double *w = lh__pages_alloc0(pages, double, n);
	LhCostCtx cx; /* the same doubles as lh_op_standalone_ns_in, from constants made once */
	lh__cost_ctx_init(&cx, hw);
	for (guint32 i = 0; i < n; i++)
		w[i] = lh__standalone_ns(&cx, g, lh_graph_op(g, i));
	/* Upward rank. */
	const guint32 *topo = lh_graph_topo(g);
	g_autofree double *rank = lh__pages_alloc0(pages, double, n);
	g_autofree Rank *order = lh__pages_alloc(pages, Rank, n);
	for (guint32 k = n; k-- > 0;) {
		guint32 v = topo[k], ns;
		const guint32 *sc = lh_graph_succs(g, v, &ns);
		double best = 0;
		for (guint32 j = 0; j < ns; j++)
			best = MAX(best, mean_c + rank[sc[j]]);
		rank[v] = w[v] + best;
		/* u = 0: the records are in topological position already, and the sort is stable,
		 * so ties keep that order without two more passes over the records. */
		order[k] = (Rank){rank[v], 0, v};
	}
	lh__sort_f64_u32(order, n, TRUE); /* rank_u descending, then topological position */

	/* Processors: busy lists per virtual stream. */
	Proc *busy[K_N];
	for (guint k = 0; k < K_N; k++) {
		busy[k] = g_new(Proc, count[k]);
		for (guint32 s = 0; s < count[k]; s++)
			proc_init(&busy[k][s]);
	}
	/* What placing an op reads of its deps, in one record per op, filled as ops are placed:
	 * in rank order the deps lie anywhere in memory (issue 12: a record is one cache miss
	 * where four arrays were four). kind is K_INPUT for inputs, known before. */
	typedef struct {
		double fin;  /* estimated finish */
		guint32 vs;  /* processor of its kind */
		guint8 kind; /* K_*, or K_INPUT */
		guint8 done; /* placed (or an input) */
	} Placed;
	g_autofree Placed *pl = lh__pages_alloc0(pages, Placed, n);
	/* The deps too, as offsets into the graph's dep list: lh_graph_deps reads the op's
	 * record (88 bytes) for them, a cache miss per op in rank order. */
	g_autofree const guint32 **dep = lh__pages_alloc(pages, const guint32 *, n);
	g_autofree guint32 *n_dep = lh__pages_alloc(pages, guint32, n);
	guint32 max_dep = 0;
	for (guint32 i = 0; i < n; i++) {
		const LhOp *op = lh_graph_op(g, i);
		pl[i].kind = op->kind == LH_OP_INPUT ? K_INPUT : (guint8)kind_of(op);
		dep[i] = lh_graph_deps(g, i, &n_dep[i]);
		max_dep = MAX(max_dep, n_dep[i]);
	}
	/* The non-input ops in placement order with their starts, for the emitter. */
	g_autofree LhSortRec *slot = lh__pages_alloc(pages, LhSortRec, MAX(n, 1));
	guint32 placed = 0;
	/* One op's deps' finish times and their streams of its kind (G_MAXUINT32: none). */
	g_autofree double *dfin = g_new(double, MAX(max_dep, 1));
	g_autofree guint32 *dvs = g_new(guint32, MAX(max_dep, 1));
	for (guint32 r = 0; r < n; r++) {
		/* Rank order is known ahead, and what an op reads lies anywhere: its records and
		 * dep list are fetched a few ops before, in three stages, each reading only what
		 * the one before fetched (issue 12: read as each op came, they were about a fifth
		 * of heft_plan's perf samples at 10^6 ops). */
		if (r + 3 * HEFT_AHEAD < n) {
			guint32 x = order[r + 3 * HEFT_AHEAD].op;
			__builtin_prefetch(&dep[x]);
			__builtin_prefetch(&n_dep[x]);
			__builtin_prefetch(&w[x]);
			__builtin_prefetch(&pl[x], 1);
		}
		if (r + 2 * HEFT_AHEAD < n)
			__builtin_prefetch(dep[order[r + 2 * HEFT_AHEAD].op]);
		if (r + HEFT_AHEAD < n) {
			guint32 x = order[r + HEFT_AHEAD].op;
			for (guint32 j = 0; j < n_dep[x]; j++)
				__builtin_prefetch(&pl[dep[x][j]]);
		}
		guint32 v = order[r].op;
		pl[v].done = 1;
		if (pl[v].kind == K_INPUT)
			continue;
		guint k = pl[v].kind;
		guint32 nd = n_dep[v], nf = 0;
		const guint32 *d = dep[v];
		/* The deps' finish times and streams, read once for all processors (the same
		 * values, so the same maxima). */
		for (guint32 j = 0; j < nd; j++) {
			const Placed *u = &pl[d[j]];
			g_assert(u->done);
			if (u->kind == K_INPUT)
				continue;
			dfin[nf] = u->fin;
			dvs[nf++] = u->kind == k ? u->vs : G_MAXUINT32;
		}
		double best_f = G_MAXDOUBLE, best_s = 0;
		guint32 best_p = 0, best_at = 0, best_blk = 0;
		for (guint32 s = 0; s < count[k]; s++) {
			double ready = 0;
			for (guint32 j = 0; j < nf; j++)
				ready = MAX(ready, dfin[j] + (dvs[j] == s ? 0 : hw->event_ns));
			/* The slot starts at ready or later, so its finish is at least ready + w
			 * (rounding is monotonic): if that does not beat the best, neither can it.
			 */
			if (ready + w[v] >= best_f)
				continue;
			guint32 at, blk;
			double t = earliest_slot(&busy[k][s], ready, w[v], &blk, &at);
			if (t + w[v] < best_f) {
				best_f = t + w[v];
				best_s = t;
				best_p = s;
				best_at = at;
				best_blk = blk;
			}
		}
		Busy b = {best_s, best_f};
		proc_insert(&busy[k][best_p], best_blk, best_at, b);
		pl[v].fin = best_f;
		pl[v].vs = best_p;
		slot[placed++] = (LhSortRec){best_s, 0, v};
		if (lh_params_explaining(p)) {
			const LhOp *op = lh_graph_op(g, v); /* a cache miss: only when explaining */
			lh_params_explain(p,
			                  "heft: %s '%s' (rank_u %.0f ns) -> %s%u, "
			                  "start %.0f ns, earliest finish %.0f ns",
			                  lh_op_kind_name(op->kind), op->name, rank[v], prefix[k],
			                  best_p, best_s, best_f);
		}
	}
	LhPlan *plan = lh_plan_new();
	g_autofree guint32 *stream = lh__pages_alloc0(pages, guint32, n);
	guint32 *map[K_N];
	for (guint k = 0; k < K_N; k++) {
		map[k] = g_new(guint32, count[k]);
		for (guint32 s = 0; s < count[k]; s++)
			map[k][s] = G_MAXUINT32;
	}
	map[K_COMPUTE][0] = lh_plan_add_stream(plan, "s0", LH_ROLE_COMPUTE);
	for (guint32 r = 0; r < n; r++) {
		guint32 v = order[r].op;
		if (pl[v].kind == K_INPUT)
			continue;
		guint k = pl[v].kind;
		guint32 vs = pl[v].vs;
		if (map[k][vs] == G_MAXUINT32) {
			g_autofree char *name = g_strdup_printf("%s%u", prefix[k], vs);
			map[k][vs] = lh_plan_add_stream(plan, name, role[k]);
		}
		stream[v] = map[k][vs];
	}
	lh__emit_list_schedule_placed(plan, g, stream, slot, placed);
	for (guint k = 0; k < K_N; k++) {
		for (guint32 s = 0; s < count[k]; s++)
			proc_clear(&busy[k][s]);
		g_free(busy[k]);
		g_free(map[k]);
	}
	lh__pages_free(pages); /* before the arrays are freed */
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
