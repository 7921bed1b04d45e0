/* lhsim — `iree-cost`: a cost-aware partitioner in IREE's execution model
 * (docs/schedulers.md#iree-cost), and lh_iree_partition(), the driver both IREE schedulers'
 * exported steps plug into.
 *
 * The plan keeps IREE's constraints: execution regions (one `host` submit each), chained by
 * timepoints on the regions they depend on; concurrency waves inside a region with a full
 * barrier between consecutive waves; an op in a later wave than its deps. Inside them it uses
 * the ops' standalone costs:
 *
 *   waves=cost    list scheduling by waves. The ready ops (deps in earlier waves) in
 *                 decreasing b-level; the first always joins the wave, each next one joins
 *                 when the estimated makespan with it in the wave (wave length + the longer of
 *                 the remaining critical path and the remaining work per engine) is no worse
 *                 than with it deferred, and when the wave's live device memory stays within
 *                 the budget. A wave's length is the largest of its longest op, its SM, HBM,
 *                 H2D, D2H and link work and its busiest lane (ops dealt longest first onto
 *                 the least loaded lane).
 *   waves=order   the region's ops in its order, one wave each (for regions=list).
 *   regions=list  event-driven list scheduling on engine timelines (SMs, each copy direction
 *                 at its duplex rate while the other runs, the link): compute tracks and one
 *                 track per transfer engine, each track cut into regions at its cross-track
 *                 edges, so that a region waits only for the ops it needs.
 *   regions=split transfers (copies, collectives, send/recv) long enough to idle the device
 *                 at a barrier go to regions of their own, which run beside the compute
 *                 regions; the compute ops are cut into regions where a transfer must start
 *                 (after its producers) or must have ended (before its consumers).
 *
 * regions=auto simulates the list plan and the reference regions with the cost waves and keeps
 * the faster. With memory-limit, each plan is simulated: first without a memory budget, then
 * with the budget shrinking, then one region with one op per wave, then IREE's own partition;
 * none within: an error giving the smallest peak found.
 */
#include "schedulers/sched-util.h"
#include "sim/cost.h"
#include "sim/engine.h"
#include "sim/trace.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { R_SM, R_HBM, R_H2D, R_D2H, R_LINK, R_N };

/* Work of op @v on each resource, ns of that resource at capacity 1. */
static void op_work(const LhGraph *g, const LhHw *hw, guint32 v, double T, double w[R_N])
{
	const LhOp *op = lh_graph_op(g, v);
	memset(w, 0, sizeof(double) * R_N);
	if (op->kind == LH_OP_INPUT)
		return;
	gboolean dur = op->duration_ns >= 0;
	if (op->kind == LH_OP_COPY_H2D || op->kind == LH_OP_COPY_D2H) {
		guint32 eng =
		    op->kind == LH_OP_COPY_H2D ? hw->copy_engines_h2d : hw->copy_engines_d2h;
		double x =
		    dur ? T : (double)op->size / hw->pcie_gbs + hw->copy_latency_ns / MAX(eng, 1);
		w[op->kind == LH_OP_COPY_H2D ? R_H2D : R_D2H] = x;
		return;
	}
	w[R_SM] = T * lh_op_sm_share(op, hw);
	if (lh_op_kind_is_collective(op->kind)) {
		w[R_LINK] = dur ? T : lh_op_wire_bytes(op) / hw->link_gbs;
		return;
	}
	w[R_HBM] = T * MIN(lh_op_hbm_use(op, hw, T), 1.0);
}

static gboolean is_transfer(const LhOp *op)
{
	return op->kind == LH_OP_COPY_H2D || op->kind == LH_OP_COPY_D2H ||
	       lh_op_kind_is_collective(op->kind);
}

/* ---- waves=cost ---------------------------------------------------------------------- */

typedef struct {
	double r[R_N];
	double maxT;
	double *lane; /* load per lane */
	guint32 L;
} WaveEst;

static double est_len(const WaveEst *e)
{
	double x = e->maxT;
	for (int k = 0; k < R_N; k++)
		x = MAX(x, e->r[k]);
	for (guint32 l = 0; l < e->L; l++)
		x = MAX(x, e->lane[l]);
	return x;
}

/* The lane the next op goes to: the least loaded (lowest index on ties). */
static guint32 least_lane(const WaveEst *e)
{
	guint32 best = 0;
	for (guint32 l = 1; l < e->L; l++)
		if (e->lane[l] < e->lane[best])
			best = l;
	return best;
}

typedef struct {
	const double *bl;
	const guint32 *pos;
} Order;

static int by_blevel(const void *a, const void *b, void *data)
{
	const Order *o = data;
	guint32 x = *(const guint32 *)a, y = *(const guint32 *)b;
	if (o->bl && o->bl[x] != o->bl[y])
		return o->bl[x] > o->bl[y] ? -1 : 1;
	return (o->pos[x] > o->pos[y]) - (o->pos[x] < o->pos[y]);
}

/* The op that allocates the buffer @v's output lives in (the end of its alias chain). */
static guint32 root_of(const LhGraph *g, guint32 v)
{
	while (lh_graph_op(g, v)->alias != LH_NO_OP)
		v = lh_graph_op(g, v)->alias;
	return v;
}

static double dev_bytes(const LhGraph *g, guint32 root)
{
	const LhOp *op = lh_graph_op(g, root);
	return op->out_space == LH_SPACE_DEVICE ? (double)op->out_bytes : 0;
}

static gboolean waves_cost(const LhIreeCtx *c, const GArray *region, guint32 ri, GPtrArray *waves,
                           GError **error)
{
	(void)error;
	const LhGraph *g = c->g;
	guint32 n = lh_graph_n_ops(g), m = region->len;
	const guint32 *reg = (const guint32 *)region->data;
	g_autofree guint8 *in_r = g_new0(guint8, n);
	g_autofree guint32 *pos = g_new0(guint32, n);
	for (guint32 k = 0; k < m; k++) {
		in_r[reg[k]] = 1;
		pos[reg[k]] = k;
	}
	/* Resources and readiness. */
	g_autofree double *work = g_new(double, (gsize)n *R_N);
	double rem[R_N] = {0};
	g_autofree guint32 *pending = g_new0(guint32, n);
	for (guint32 k = 0; k < m; k++) {
		guint32 v = reg[k], nd;
		op_work(g, c->hw, v, c->cost[v], &work[(gsize)v * R_N]);
		for (int r = 0; r < R_N; r++)
			rem[r] += work[(gsize)v * R_N + r];
		const guint32 *d = lh_graph_deps(g, v, &nd);
		for (guint32 j = 0; j < nd; j++)
			pending[v] += in_r[d[j]];
	}
	/* Memory: live device bytes at the wave's start, per buffer (by allocating op) the
	 * consumer edges in this region still unplaced, and whether something outside keeps it. */
	double budget = c->memory_budget;
	double live = 0;
	g_autofree guint32 *root = NULL, *left = NULL;
	g_autofree guint8 *kept = NULL;
	if (budget > 0) {
		root = g_new(guint32, n);
		left = g_new0(guint32, n);
		kept = g_new0(guint8, n);
		for (guint32 v = 0; v < n; v++)
			root[v] = root_of(g, v);
		for (guint32 v = 0; v < n; v++) {
			guint32 ns, rt = root[v];
			const guint32 *sc = lh_graph_succs(g, v, &ns);
			if (ns == 0)
				kept[rt] = 1; /* lives to the end */
			for (guint32 j = 0; j < ns; j++) {
				if (in_r[sc[j]])
					left[rt]++;
				else if (c->region_of[sc[j]] == G_MAXUINT32 ||
				         c->region_of[sc[j]] > ri)
					kept[rt] = 1;
			}
		}
		for (guint32 v = 0; v < n; v++) {
			if (root[v] != v || in_r[v])
				continue;
			gboolean before = lh_graph_op(g, v)->kind == LH_OP_INPUT ||
			                  (c->region_of[v] != G_MAXUINT32 && c->region_of[v] < ri);
			if (before && (left[v] || kept[v]))
				live += dev_bytes(g, v);
		}
	}
	/* With a budget, a host-to-device copy starts just in time: not while the wave after
	 * this one still starts early enough for it (its latest start on the estimated critical
	 * path, less its own length as a margin). */
	double cp = 0, S = 0;
	for (guint32 k = 0; k < m; k++)
		cp = MAX(cp, c->blevel[reg[k]]);
	/* With a budget, ready ops are taken in program order (the order the program was
	 * written in is the memory-friendly one); without, in decreasing b-level. */
	Order ord = {budget > 0 ? NULL : c->blevel, pos};
	GArray *ready = g_array_new(FALSE, FALSE, sizeof(guint32));
	for (guint32 k = 0; k < m; k++)
		if (!pending[reg[k]])
			g_array_append_val(ready, reg[k]);
	WaveEst e = {{0}, 0, g_new0(double, MAX(c->lanes, 1)), MAX(c->lanes, 1)};
	GArray *next = g_array_new(FALSE, FALSE, sizeof(guint32));
	guint32 placed = 0;
	while (placed < m) {
		g_assert(ready->len > 0);
		g_array_sort_with_data(ready, by_blevel, &ord);
		guint32 *rd = (guint32 *)ready->data;
		memset(&e.r, 0, sizeof e.r);
		e.maxT = 0;
		memset(e.lane, 0, e.L * sizeof(double));
		GArray *w = g_array_new(FALSE, FALSE, sizeof(guint32));
		double cp_in = 0, cp_def = 0, alloc = 0;
		g_array_set_size(next, 0);
		for (guint32 k = 0; k < ready->len; k++) {
			guint32 u = rd[k];
			const double *wu = &work[(gsize)u * R_N];
			double T = c->cost[u];
			double a = budget > 0 && root[u] == u ? dev_bytes(g, u) : 0;
			gboolean take = w->len == 0;
			gboolean early = budget > 0 && lh_graph_op(g, u)->kind == LH_OP_COPY_H2D &&
			                 S + est_len(&e) + T <= cp - c->blevel[u];
			if (early && w->len > 0) {
				g_array_append_val(next, u);
				continue;
			}
			if (!take && (budget <= 0 || live + alloc + a <= budget)) {
				double nb = k + 1 < ready->len ? c->blevel[rd[k + 1]] : 0;
				double W0 = est_len(&e);
				WaveEst e1 = e;
				double r1[R_N];
				memcpy(r1, e.r, sizeof r1);
				double lane_keep;
				guint32 l = least_lane(&e);
				lane_keep = e.lane[l];
				e.lane[l] += T;
				for (int r = 0; r < R_N; r++)
					e.r[r] += wu[r];
				e.maxT = MAX(e.maxT, T);
				double W1 = est_len(&e);
				double res0 = 0, res1 = 0;
				for (int r = 0; r < R_N; r++) {
					res0 = MAX(res0, rem[r] - r1[r]);
					res1 = MAX(res1, rem[r] - e.r[r]);
				}
				double base = MAX(cp_in, MAX(cp_def, nb));
				double in = W1 + MAX(MAX(base, c->blevel[u] - T), res1);
				double out = W0 + MAX(MAX(base, c->blevel[u]), res0);
				/* restore; re-applied below when taken */
				e.lane[l] = lane_keep;
				memcpy(e.r, r1, sizeof r1);
				e.maxT = e1.maxT;
				take = in <= out;
			}
			if (!take) {
				cp_def = MAX(cp_def, c->blevel[u]);
				g_array_append_val(next, u);
				continue;
			}
			guint32 l = least_lane(&e);
			e.lane[l] += T;
			for (int r = 0; r < R_N; r++)
				e.r[r] += wu[r];
			e.maxT = MAX(e.maxT, T);
			cp_in = MAX(cp_in, c->blevel[u] - T);
			alloc += a;
			g_array_append_val(w, u);
		}
		/* Close the wave: remaining work, memory, and the ops it makes ready. */
		for (guint32 k = 0; k < w->len; k++) {
			guint32 v = g_array_index(w, guint32, k), ns, nd;
			for (int r = 0; r < R_N; r++)
				rem[r] -= work[(gsize)v * R_N + r];
			const guint32 *sc = lh_graph_succs(g, v, &ns);
			for (guint32 j = 0; j < ns; j++)
				if (in_r[sc[j]] && --pending[sc[j]] == 0)
					g_array_append_val(next, sc[j]);
			if (budget > 0) {
				const guint32 *d = lh_graph_deps(g, v, &nd);
				for (guint32 j = 0; j < nd; j++) {
					guint32 rt = root[d[j]];
					if (--left[rt] == 0 && !kept[rt])
						alloc -= dev_bytes(g, rt);
				}
			}
		}
		live += alloc;
		placed += w->len;
		S += est_len(&e);
		lh_params_explain(c->p,
		                  "iree-cost: region %u wave %u: %u op(s), estimated %.0f ns%s", ri,
		                  waves->len, w->len, est_len(&e), budget > 0 ? "" : "");
		g_ptr_array_add(waves, w);
		GArray *t = ready;
		ready = next;
		next = t;
	}
	g_array_free(ready, TRUE);
	g_array_free(next, TRUE);
	g_free(e.lane);
	return TRUE;
}

static void free_part_(gpointer p)
{
	g_array_free((GArray *)p, TRUE);
}

/* ---- regions=cost -------------------------------------------------------------------- */

/* A transfer that goes to a region of its own: a device-to-host copy or a collective (a
 * host-to-device copy stays in the compute regions, where the waves start it no earlier
 * than they must), long enough to pay for its submit and events. */
static gboolean goes_aside(const LhIreeCtx *c, guint32 v)
{
	const LhOp *op = lh_graph_op(c->g, v);
	if (!is_transfer(op) || op->kind == LH_OP_COPY_H2D)
		return FALSE;
	return c->cost[v] > 4 * (c->hw->launch_ns + 2 * c->hw->event_ns);
}

static gboolean regions_cost(const LhIreeCtx *c, GPtrArray *regions, GError **error)
{
	(void)error;
	const LhGraph *g = c->g;
	guint32 n = lh_graph_n_ops(g);
	const guint32 *topo = lh_graph_topo(g);
	/* Levels: the waves the cost step gives the whole graph as one region (they respect
	 * every dep, the transfers' included); the compute regions are runs of them. */
	g_autofree guint32 *lvl = g_new0(guint32, MAX(n, 1));
	g_autofree guint8 *aside = g_new0(guint8, MAX(n, 1));
	guint32 top = 0;
	{
		GArray *all = g_array_new(FALSE, FALSE, sizeof(guint32));
		for (guint32 k = 0; k < n; k++)
			if (lh_graph_op(g, topo[k])->kind != LH_OP_INPUT)
				g_array_append_val(all, topo[k]);
		GPtrArray *w = g_ptr_array_new_with_free_func(free_part_);
		waves_cost(c, all, 0, w, NULL);
		for (guint32 k = 0; k < w->len; k++) {
			GArray *wv = g_ptr_array_index(w, k);
			for (guint32 j = 0; j < wv->len; j++)
				lvl[g_array_index(wv, guint32, j)] = k;
		}
		top = w->len ? w->len - 1 : 0;
		g_ptr_array_free(w, TRUE);
		g_array_free(all, TRUE);
		for (guint32 v = 0; v < n; v++)
			aside[v] = lh_graph_op(g, v)->kind != LH_OP_INPUT && goes_aside(c, v);
	}
	/* Cuts between compute levels: after the last producer of a transfer aside, before the
	 * first consumer. */
	g_autofree guint8 *cut = g_new0(guint8, top + 2);
	guint32 n_aside = 0;
	for (guint32 v = 0; v < n; v++) {
		if (!aside[v])
			continue;
		n_aside++;
		guint32 nd, ns;
		const guint32 *d = lh_graph_deps(g, v, &nd);
		gint64 a = -1;
		for (guint32 j = 0; j < nd; j++)
			if (lh_graph_op(g, d[j])->kind != LH_OP_INPUT && !aside[d[j]])
				a = MAX(a, (gint64)lvl[d[j]]);
		if (a >= 0)
			cut[a] = 1;
		const guint32 *sc = lh_graph_succs(g, v, &ns);
		for (guint32 j = 0; j < ns; j++)
			if (!aside[sc[j]])
				cut[lvl[sc[j]] - 1] = 1;
	}
	/* Compute regions by level intervals; one region per transfer aside. */
	g_autofree guint32 *main_of = g_new0(guint32, top + 1);
	guint32 n_main = 0;
	for (guint32 l = 0; l <= top; l++) {
		main_of[l] = n_main;
		if (cut[l])
			n_main++;
	}
	n_main++;
	guint32 R = n_main + n_aside;
	g_autofree guint32 *reg = g_new(guint32, MAX(n, 1));
	GPtrArray *parts = g_ptr_array_new();
	for (guint32 r = 0; r < R; r++)
		g_ptr_array_add(parts, g_array_new(FALSE, FALSE, sizeof(guint32)));
	guint32 next_side = n_main;
	for (guint32 k = 0; k < n; k++) {
		guint32 v = topo[k];
		if (lh_graph_op(g, v)->kind == LH_OP_INPUT)
			continue;
		reg[v] = aside[v] ? next_side++ : main_of[lvl[v]];
		g_array_append_val((GArray *)g_ptr_array_index(parts, reg[v]), v);
	}
	/* Order the regions topologically (Kahn), the lowest-numbered ready region first:
	 * compute regions are numbered by level, transfers by program order after them. */
	g_autofree guint32 *indeg = g_new0(guint32, R);
	GPtrArray *out = g_ptr_array_new_with_free_func(free_part_);
	for (guint32 r = 0; r < R; r++)
		g_ptr_array_add(out, g_array_new(FALSE, FALSE, sizeof(guint32)));
	g_autofree guint32 *mark = g_new(guint32, R);
	for (guint32 r = 0; r < R; r++)
		mark[r] = G_MAXUINT32;
	for (guint32 r = 0; r < R; r++) {
		GArray *part = g_ptr_array_index(parts, r);
		for (guint32 k = 0; k < part->len; k++) {
			guint32 v = g_array_index(part, guint32, k), nd;
			const guint32 *d = lh_graph_deps(g, v, &nd);
			for (guint32 j = 0; j < nd; j++) {
				if (lh_graph_op(g, d[j])->kind == LH_OP_INPUT)
					continue;
				guint32 q = reg[d[j]];
				if (q == r || mark[q] == r)
					continue;
				mark[q] = r;
				indeg[r]++;
				g_array_append_val((GArray *)g_ptr_array_index(out, q), r);
			}
		}
	}
	/* A binary heap would do; R is small next to n, so a scan for the lowest ready. */
	g_autofree guint8 *done = g_new0(guint8, R);
	for (guint32 it = 0; it < R; it++) {
		guint32 pick = G_MAXUINT32;
		for (guint32 r = 0; r < R; r++)
			if (!done[r] && indeg[r] == 0) {
				pick = r;
				break;
			}
		g_assert(pick != G_MAXUINT32);
		done[pick] = 1;
		GArray *o = g_ptr_array_index(out, pick);
		for (guint32 k = 0; k < o->len; k++)
			indeg[g_array_index(o, guint32, k)]--;
		GArray *part = g_ptr_array_index(parts, pick);
		if (part->len)
			g_ptr_array_add(regions, part);
		else
			g_array_free(part, TRUE);
	}
	lh_params_explain(c->p,
	                  "iree-cost: %u compute region(s), %u transfer(s) in regions of "
	                  "their own",
	                  n_main, n_aside);
	g_ptr_array_free(out, TRUE);
	g_ptr_array_free(parts, TRUE);
	return TRUE;
}

const LhIreeRegionStep lh_iree_regions_cost = {"split", regions_cost};

/* ---- regions=list -------------------------------------------------------------------- */

/* The engine an op mostly waits for: the SMs (kernels, copy-d2d), a copy direction's PCIe
 * bandwidth, or the link (collectives, send/recv). */
enum { E_SM, E_H2D, E_D2H, E_LINK, E_N };

static int engine_of(const LhOp *op)
{
	if (op->kind == LH_OP_COPY_H2D)
		return E_H2D;
	if (op->kind == LH_OP_COPY_D2H)
		return E_D2H;
	if (lh_op_kind_is_collective(op->kind) || op->kind == LH_OP_SEND || op->kind == LH_OP_RECV)
		return E_LINK;
	return E_SM;
}

/* A copy's estimated time when it starts at @s and the other direction's copies run until
 * @other: its bytes move at the duplex rate while both directions run, at pcie_gbs after (the
 * engine's rule, docs/design.md#engine; rates from the hardware model). */
static double copy_est(const LhHw *hw, const LhOp *op, double s, double other)
{
	double lat = hw->copy_latency_ns, bytes = (double)op->size;
	double dup = lh_hw_duplex_gbs(hw, op->kind == LH_OP_COPY_D2H);
	double both = MAX(other - (s + lat), 0);
	if (bytes <= both * dup)
		return lat + bytes / dup;
	return lat + both + (bytes - both * dup) / hw->pcie_gbs;
}

/* The orders of the list step's heaps (LhHeap, sched-util.h), on a key per op, then earlier
 * program position: higher b-level first (ready ops), earlier end first (ops running). */
typedef struct {
	const double *key;
	const guint32 *pos;
} HeapOrd;

static gboolean by_key_desc(const void *p, guint32 x, guint32 y)
{
	const HeapOrd *o = p;
	if (o->key[x] != o->key[y])
		return o->key[x] > o->key[y];
	return o->pos[x] < o->pos[y];
}

static gboolean by_key_asc(const void *p, guint32 x, guint32 y)
{
	const HeapOrd *o = p;
	if (o->key[x] != o->key[y])
		return o->key[x] < o->key[y];
	return o->pos[x] < o->pos[y];
}

typedef struct {
	double start;
	guint32 first; /* pick index of the region's first op: breaks ties topologically */
	guint32 track, seq;
} Start;

static int by_start(const void *a, const void *b)
{
	const Start *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->first > y->first) - (x->first < y->first);
}

/* List scheduling on tracks by engine, then each track cut into regions at its cross-track
 * edges (docs/schedulers.md#iree-cost, regions=list). Tracks: `lanes` compute tracks, one
 * track per copy direction and one for the link. The estimate keeps one timeline per engine:
 * a kernel of SM share s holds the SMs for s times its standalone time (the engine runs
 * resident kernels side by side only up to the SMs they share), a copy holds its direction's
 * bandwidth and a collective the link for their whole time, since copies of one direction and
 * collectives share those (docs/design.md#engine). An op starts at the latest of its deps'
 * ends, its track's end and its engine's, and the ops start in time order: at each instant,
 * each engine starts its ready ops by decreasing b-level while it and a track of its kind are
 * free (so a copy's place on its engine follows when it is needed, not its b-level alone); a
 * kernel goes to the track of its latest-ending dep when that track is free (fewer cross-track
 * edges, fewer regions), else to the first free track. A region ends after an op with a consumer on
 * another track (its done event is that consumer's wait) and starts at an op with a dep on another
 * track (the region awaits it when it starts): no barrier holds an op back that the estimate did
 * not. */
static gboolean regions_list_run(const LhIreeCtx *c, GPtrArray *regions, gboolean pin)
{
	const LhGraph *g = c->g;
	guint32 n = lh_graph_n_ops(g), K = MAX(c->lanes, 1), NT = K + E_N - 1;
	const guint32 *topo = lh_graph_topo(g);
	g_autofree guint32 *pos = g_new0(guint32, MAX(n, 1));
	g_autofree guint32 *pending = g_new0(guint32, MAX(n, 1));
	for (guint32 k = 0; k < n; k++)
		pos[topo[k]] = k;
	/* Ready ops per engine, highest b-level first; ops running, earliest end first. */
	g_autofree double *fin = g_new0(double, MAX(n, 1));
	HeapOrd by_bl = {c->blevel, pos}, by_fin = {fin, pos};
	LhHeap rh[E_N], run;
	for (int e = 0; e < E_N; e++)
		lh__heap_init(&rh[e], by_key_desc, &by_bl);
	lh__heap_init(&run, by_key_asc, &by_fin);
	guint32 m = 0;
	for (guint32 v = 0; v < n; v++) {
		if (lh_graph_op(g, v)->kind == LH_OP_INPUT)
			continue;
		m++;
		guint32 nd;
		const guint32 *d = lh_graph_deps(g, v, &nd);
		for (guint32 j = 0; j < nd; j++)
			pending[v] += lh_graph_op(g, d[j])->kind != LH_OP_INPUT;
		if (!pending[v])
			lh__heap_push(&rh[engine_of(lh_graph_op(g, v))], v);
	}
	g_autofree double *free_at = g_new0(double, NT);
	double eng[E_N] = {0}, mk = 0, t = 0;
	g_autofree guint32 *trk = g_new(guint32, MAX(n, 1));
	g_autofree guint32 *pick = g_new(guint32, MAX(n, 1));
	g_autofree guint32 *seq = g_new(guint32, MAX(m, 1)); /* ops in start order */
	g_autofree double *st = g_new0(double, MAX(n, 1));
	for (guint32 v = 0; v < n; v++)
		trk[v] = G_MAXUINT32;
	/* Memory (with a budget): device bytes live, by allocating op the consumer edges not
	 * ended yet, and whether the buffer lives to the end (a graph output). The engine's
	 * rule: allocated at the op's start, freed when its last consumer ends. */
	double budget = c->memory_budget, live = 0;
	g_autofree guint32 *root = NULL, *left = NULL;
	g_autofree guint8 *kept = NULL;
	if (budget > 0) {
		root = g_new(guint32, MAX(n, 1));
		left = g_new0(guint32, MAX(n, 1));
		kept = g_new0(guint8, MAX(n, 1));
		for (guint32 v = 0; v < n; v++)
			root[v] = root_of(g, v);
		for (guint32 v = 0; v < n; v++) {
			guint32 ns;
			lh_graph_succs(g, v, &ns);
			left[root[v]] += ns;
			if (ns == 0)
				kept[root[v]] = 1;
		}
		for (guint32 v = 0; v < n; v++)
			if (root[v] == v && lh_graph_op(g, v)->kind == LH_OP_INPUT)
				live += dev_bytes(g, v);
	}
	guint32 placed = 0;
	gboolean force = FALSE;      /* nothing runs and memory holds every ready op: start one */
	guint32 freer = G_MAXUINT32; /* the track of the last op whose end freed memory */
	g_autofree guint8 *held = g_new0(guint8, MAX(n, 1)); /* memory held it back once */
	while (placed < m) {
		/* Start what can start at t: on each engine, the ready ops by b-level while their
		 * engine and a track of theirs are free (and, with a budget, while their output
		 * fits in it). */
		guint32 started = placed;
		for (int e = 0; e < E_N; e++)
			while (rh[e].n) {
				guint32 v = rh[e].v[0], tk = G_MAXUINT32, nd, dt = G_MAXUINT32;
				const LhOp *op = lh_graph_op(g, v);
				double a = budget > 0 && root[v] == v ? dev_bytes(g, v) : 0;
				if (budget > 0 && live + a > budget && !force) {
					held[v] = 1;
					break;
				}
				if (e != E_SM) {
					if (eng[e] > t || free_at[K + e - 1] > t)
						break;
					tk = K + (guint32)e - 1;
				} else {
					if (eng[E_SM] > t)
						break;
					/* The track of its latest-ending dep when free (fewer
					 * cross-track edges, fewer regions), else the first free.
					 */
					const guint32 *d = lh_graph_deps(g, v, &nd);
					double dfin = -1;
					for (guint32 j = 0; j < nd; j++)
						if (trk[d[j]] < K && fin[d[j]] > dfin) {
							dfin = fin[d[j]];
							dt = trk[d[j]];
						}
					tk = dt != G_MAXUINT32 && free_at[dt] <= t ? dt
					                                           : G_MAXUINT32;
					for (guint32 k = 0; k < K && tk == G_MAXUINT32; k++)
						if (free_at[k] <= t)
							tk = k;
					if (tk == G_MAXUINT32)
						break;
				}
				/* @pin: an op memory held back goes on the track of the op whose
				 * end freed the memory, right after it, so the plan runs it no
				 * earlier than the estimate does (a track is a stream, in order).
				 * Without, the hold is the estimate's only: the op keeps its track
				 * and may run earlier than estimated. */
				if (pin && held[v] && freer != G_MAXUINT32 && free_at[freer] <= t)
					tk = freer;
				force = FALSE;
				live += a;
				lh__heap_pop(&rh[e]);
				double T = c->cost[v];
				if ((e == E_H2D || e == E_D2H) && op->duration_ns < 0)
					T = copy_est(c->hw, op, t, eng[e == E_H2D ? E_D2H : E_H2D]);
				eng[e] = t + (e == E_SM ? T * lh_op_sm_share(op, c->hw) : T);
				st[v] = t;
				fin[v] = t + T;
				mk = MAX(mk, fin[v]);
				free_at[tk] = fin[v];
				trk[v] = tk;
				pick[v] = placed;
				seq[placed++] = v;
				lh__heap_push(&run, v);
			}
		/* The next instant: the earliest end, or the SMs freeing for a ready kernel. */
		double nt = run.n ? fin[run.v[0]] : G_MAXDOUBLE;
		if (rh[E_SM].n && eng[E_SM] > t)
			nt = MIN(nt, eng[E_SM]);
		if (nt == G_MAXDOUBLE) {
			/* Nothing runs: memory holds the ready ops back; the first goes anyway. */
			g_assert(placed == started && budget > 0);
			force = TRUE;
			continue;
		}
		t = MAX(t, nt);
		while (run.n && fin[run.v[0]] <= t) {
			guint32 v = lh__heap_pop(&run), ns, nd;
			const guint32 *sc = lh_graph_succs(g, v, &ns);
			for (guint32 j = 0; j < ns; j++)
				if (--pending[sc[j]] == 0)
					lh__heap_push(&rh[engine_of(lh_graph_op(g, sc[j]))], sc[j]);
			const guint32 *d = lh_graph_deps(g, v, &nd);
			for (guint32 j = 0; budget > 0 && j < nd; j++) {
				guint32 r = root[d[j]];
				if (--left[r] == 0 && !kept[r] && dev_bytes(g, r) > 0) {
					live -= dev_bytes(g, r);
					freer = trk[v];
				}
			}
		}
	}
	for (int e = 0; e < E_N; e++)
		lh__heap_clear(&rh[e]);
	lh__heap_clear(&run);
	g_assert(placed == m);
	/* Cut each track's ops (in pick order, which is their order on the track) into regions:
	 * before an op with a dep on another track, after one with a consumer on another. */
	g_autofree guint32 *cur = g_new(guint32, NT);  /* open region of each track */
	g_autofree guint8 *close = g_new0(guint8, NT); /* its last op signals another track */
	for (guint32 k = 0; k < NT; k++)
		cur[k] = G_MAXUINT32;
	GArray *starts = g_array_new(FALSE, FALSE, sizeof(Start));
	GPtrArray *parts = g_ptr_array_new();
	for (guint32 k = 0; k < m; k++) {
		guint32 v = seq[k], t = trk[v], nd, ns;
		const guint32 *d = lh_graph_deps(g, v, &nd);
		gboolean cut = cur[t] == G_MAXUINT32 || close[t];
		for (guint32 j = 0; j < nd && !cut; j++)
			cut = trk[d[j]] != G_MAXUINT32 && trk[d[j]] != t;
		if (cut) {
			cur[t] = parts->len;
			g_ptr_array_add(parts, g_array_new(FALSE, FALSE, sizeof(guint32)));
			Start r = {st[v], pick[v], t, parts->len - 1};
			g_array_append_val(starts, r);
		}
		g_array_append_val((GArray *)g_ptr_array_index(parts, cur[t]), v);
		const guint32 *sc = lh_graph_succs(g, v, &ns);
		close[t] = FALSE;
		for (guint32 j = 0; j < ns && !close[t]; j++)
			close[t] = trk[sc[j]] != t;
	}
	/* Regions by estimated start, ties by their first op's pick: a topological order (a
	 * region's deps on other tracks end, and so their regions start, no later than it starts,
	 * and were picked before it). */
	g_array_sort(starts, by_start);
	for (guint32 k = 0; k < starts->len; k++) {
		const Start *r = &g_array_index(starts, Start, k);
		g_ptr_array_add(regions, g_ptr_array_index(parts, r->seq));
		if (c->tracks)
			g_array_append_val(c->tracks, r->track);
	}
	lh_params_explain(c->p,
	                  "iree-cost: regions=list: %u region(s) on %u track(s), estimated "
	                  "makespan %.0f ns",
	                  starts->len, NT, mk);
	g_array_free(starts, TRUE);
	g_ptr_array_free(parts, TRUE);
	return TRUE;
}

static gboolean regions_list(const LhIreeCtx *c, GPtrArray *regions, GError **error)
{
	(void)error;
	return regions_list_run(c, regions, FALSE);
}

static gboolean regions_list_pinned(const LhIreeCtx *c, GPtrArray *regions, GError **error)
{
	(void)error;
	return regions_list_run(c, regions, TRUE);
}

const LhIreeRegionStep lh_iree_regions_list = {"list", regions_list};
/* Tried under memory-limit beside the plain list step (docs/schedulers.md#iree-cost). */
static const LhIreeRegionStep regions_list_pinned_step = {"list, holds pinned",
                                                          regions_list_pinned};

/* ---- waves=order --------------------------------------------------------------------- */

/* The region's ops in its order, one wave each: for the list regions, whose order on their
 * track is the estimate's (a one-op wave on one lane needs no barrier event). */
static gboolean waves_order(const LhIreeCtx *c, const GArray *region, guint32 ri, GPtrArray *waves,
                            GError **error)
{
	(void)c;
	(void)ri;
	(void)error;
	for (guint32 k = 0; k < region->len; k++) {
		GArray *w = g_array_new(FALSE, FALSE, sizeof(guint32));
		g_array_append_val(w, g_array_index(region, guint32, k));
		g_ptr_array_add(waves, w);
	}
	return TRUE;
}

static const LhIreeWaveStep waves_order_step = {"order", waves_order};
const LhIreeWaveStep lh_iree_waves_cost = {"cost", waves_cost};

/* ---- the driver ---------------------------------------------------------------------- */

typedef struct {
	guint32 last;  /* last region emitted on this track */
	gboolean xfer; /* its regions hold transfers only */
	GArray *lanes; /* of guint32: plan streams */
} Track;

static void free_part(gpointer p)
{
	g_array_free((GArray *)p, TRUE);
}

static int by_cost_desc(const void *a, const void *b, void *data)
{
	const double *cost = data;
	guint32 x = *(const guint32 *)a, y = *(const guint32 *)b;
	if (cost[x] != cost[y])
		return cost[x] > cost[y] ? -1 : 1;
	return (x > y) - (x < y);
}

static guint32 track_lane(LhPlan *plan, Track *t, guint32 ti, guint32 j)
{
	while (t->lanes->len <= j) {
		g_autofree char *name = ti == 0 ? g_strdup_printf("lane%u", t->lanes->len)
		                                : g_strdup_printf("t%u.lane%u", ti, t->lanes->len);
		guint32 s = lh_plan_add_stream(plan, name, LH_ROLE_COMPUTE);
		g_array_append_val(t->lanes, s);
	}
	return g_array_index(t->lanes, guint32, j);
}

#define MAX_TRACKS 8

LhPlan *lh_iree_partition(const LhGraph *g, const LhHw *hw, const LhParams *p,
                          const LhIreeRegionStep *rstep, const LhIreeWaveStep *wstep, guint32 lanes,
                          double budget, double submit_ns, GError **error)
{
	guint32 n = lh_graph_n_ops(g);
	g_autofree double *cost = g_new0(double, MAX(n, 1));
	for (guint32 i = 0; i < n; i++)
		cost[i] = lh_op_standalone_ns(lh_graph_op(g, i), hw);
	g_autofree double *bl = lh__blevel(g, cost);
	g_autofree guint32 *region_of = g_new(guint32, MAX(n, 1));
	for (guint32 i = 0; i < n; i++)
		region_of[i] = G_MAXUINT32;
	g_autoptr(GArray) hint = g_array_new(FALSE, FALSE, sizeof(guint32));
	LhIreeCtx c = {g, hw, p, cost, bl, region_of, budget, MAX(lanes, 1), hint};

	g_autoptr(GPtrArray) regions = g_ptr_array_new_with_free_func(free_part);
	if (!rstep->regions(&c, regions, error))
		return NULL;
	/* Check the regions: every non-input op once, deps in this or an earlier region. */
	for (guint32 r = 0; r < regions->len; r++) {
		GArray *reg = g_ptr_array_index(regions, r);
		for (guint32 k = 0; k < reg->len; k++) {
			guint32 v = g_array_index(reg, guint32, k);
			if (v >= n || lh_graph_op(g, v)->kind == LH_OP_INPUT ||
			    region_of[v] != G_MAXUINT32) {
				g_set_error(
				    error, LH_SCHED_ERROR, LH_SCHED_ERROR_FAILED,
				    "region step '%s': op %u is an input, unknown or in two "
				    "regions",
				    rstep->name, v);
				return NULL;
			}
			region_of[v] = r;
		}
	}
	for (guint32 v = 0; v < n; v++) {
		if (lh_graph_op(g, v)->kind == LH_OP_INPUT)
			continue;
		if (region_of[v] == G_MAXUINT32) {
			g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_FAILED,
			            "region step '%s': op '%s' is in no region", rstep->name,
			            lh_graph_op(g, v)->name);
			return NULL;
		}
	}
	guint32 R = regions->len;
	/* Region deps (distinct earlier regions) and whether anything depends on a region. */
	g_autoptr(GPtrArray) rdeps = g_ptr_array_new_with_free_func(free_part);
	g_autofree guint8 *needed = g_new0(guint8, MAX(R, 1));
	g_autofree guint32 *seen = g_new(guint32, MAX(R, 1));
	for (guint32 r = 0; r < R; r++)
		seen[r] = G_MAXUINT32;
	for (guint32 r = 0; r < R; r++) {
		GArray *reg = g_ptr_array_index(regions, r);
		GArray *dl = g_array_new(FALSE, FALSE, sizeof(guint32));
		for (guint32 k = 0; k < reg->len; k++) {
			guint32 v = g_array_index(reg, guint32, k), nd;
			const guint32 *d = lh_graph_deps(g, v, &nd);
			for (guint32 j = 0; j < nd; j++) {
				guint32 q = region_of[d[j]];
				if (q == G_MAXUINT32 || q == r || seen[q] == r)
					continue;
				if (q > r) {
					g_set_error(
					    error, LH_SCHED_ERROR, LH_SCHED_ERROR_FAILED,
					    "region step '%s': op '%s' (region %u) depends on "
					    "'%s' in the later region %u",
					    rstep->name, lh_graph_op(g, v)->name, r,
					    lh_graph_op(g, d[j])->name, q);
					g_array_free(dl, TRUE);
					return NULL;
				}
				seen[q] = r;
				needed[q] = 1;
				g_array_append_val(dl, q);
			}
		}
		g_ptr_array_add(rdeps, dl);
	}

	LhPlan *plan = lh_plan_new();
	gboolean hinted = hint->len == R;
	guint32 max_tracks = MAX_TRACKS;
	for (guint32 r = 0; hinted && r < R; r++)
		max_tracks = MAX(max_tracks, g_array_index(hint, guint32, r) + 1);
	g_autofree Track *track = g_new0(Track, max_tracks);
	guint32 n_tracks = 0;
	g_autofree guint32 *track_of = g_new(guint32, MAX(R, 1));
	/* Done events of each region: (stream, event) pairs. */
	g_autoptr(GPtrArray) done = g_ptr_array_new_with_free_func(free_part);
	g_autofree guint32 *wave_of = g_new(guint32, MAX(n, 1));
	g_autofree guint8 *in_wave = g_new0(guint8, MAX(n, 1));
	guint32 total_waves = 0;
	gboolean ok = TRUE;
	for (guint32 r = 0; r < R && ok; r++) {
		GArray *reg = g_ptr_array_index(regions, r);
		GArray *dl = g_ptr_array_index(rdeps, r);
		/* Track: one of its kind (regions of transfers only, or not) whose last region is
		 * one of its deps (the largest such), else a new one, else (all taken) the one of
		 * its kind whose last region is the earliest. */
		gboolean xfer = TRUE;
		for (guint32 k = 0; k < reg->len && xfer; k++)
			xfer = is_transfer(lh_graph_op(g, g_array_index(reg, guint32, k)));
		guint32 ti = G_MAXUINT32, best_len = 0;
		if (hinted) {
			ti = g_array_index(hint, guint32, r);
			while (n_tracks <= ti) {
				track[n_tracks].lanes = g_array_new(FALSE, FALSE, sizeof(guint32));
				track[n_tracks++].xfer = FALSE;
			}
		}
		for (guint32 k = 0; k < dl->len && !hinted; k++) {
			guint32 q = g_array_index(dl, guint32, k);
			guint32 ql = ((GArray *)g_ptr_array_index(regions, q))->len;
			Track *t = &track[track_of[q]];
			if (t->last == q && t->xfer == xfer &&
			    (ti == G_MAXUINT32 || ql > best_len)) {
				ti = track_of[q];
				best_len = ql;
			}
		}
		if (ti == G_MAXUINT32 && n_tracks < max_tracks) {
			ti = n_tracks++;
			track[ti].lanes = g_array_new(FALSE, FALSE, sizeof(guint32));
			track[ti].xfer = xfer;
		}
		if (ti == G_MAXUINT32) {
			for (guint32 k = 0; k < n_tracks; k++)
				if (track[k].xfer == xfer &&
				    (ti == G_MAXUINT32 || track[k].last < track[ti].last))
					ti = k;
			if (ti == G_MAXUINT32)
				ti = 0;
		}
		track[ti].last = r;
		track_of[r] = ti;

		g_autoptr(GPtrArray) waves = g_ptr_array_new_with_free_func(free_part);
		if (!wstep->waves(&c, reg, r, waves, error)) {
			ok = FALSE;
			break;
		}
		/* Check the waves. */
		guint32 count = 0;
		for (guint32 w = 0; w < waves->len && ok; w++) {
			GArray *wv = g_ptr_array_index(waves, w);
			if (wv->len == 0)
				continue;
			for (guint32 k = 0; k < wv->len; k++) {
				guint32 v = g_array_index(wv, guint32, k);
				if (v >= n || region_of[v] != r || in_wave[v]) {
					g_set_error(
					    error, LH_SCHED_ERROR, LH_SCHED_ERROR_FAILED,
					    "wave step '%s': region %u: op %u is not in the "
					    "region or in two waves",
					    wstep->name, r, v);
					ok = FALSE;
					break;
				}
				in_wave[v] = 1;
				wave_of[v] = w;
				count++;
			}
		}
		for (guint32 k = 0; k < reg->len && ok; k++) {
			guint32 v = g_array_index(reg, guint32, k), nd;
			if (!in_wave[v]) {
				g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_FAILED,
				            "wave step '%s': region %u: op '%s' is in no wave",
				            wstep->name, r, lh_graph_op(g, v)->name);
				ok = FALSE;
				break;
			}
			const guint32 *d = lh_graph_deps(g, v, &nd);
			for (guint32 j = 0; j < nd && ok; j++)
				if (region_of[d[j]] == r && wave_of[d[j]] >= wave_of[v]) {
					g_set_error(
					    error, LH_SCHED_ERROR, LH_SCHED_ERROR_FAILED,
					    "wave step '%s': region %u: op '%s' is not in a "
					    "later wave than its dep '%s'",
					    wstep->name, r, lh_graph_op(g, v)->name,
					    lh_graph_op(g, d[j])->name);
					ok = FALSE;
				}
		}
		if (!ok)
			break;
		(void)count;

		lh_plan_host(plan, (guint64)(submit_ns + 0.5));
		GArray *prev = g_array_new(FALSE, FALSE, sizeof(guint32)); /* lanes of last wave */
		gboolean first = TRUE;
		for (guint32 w = 0; w < waves->len; w++) {
			GArray *wv = g_ptr_array_index(waves, w);
			if (wv->len == 0)
				continue;
			guint32 width = MIN(wv->len, c.lanes);
			g_autofree guint32 *ops = g_memdup2(wv->data, wv->len * sizeof(guint32));
			g_qsort_with_data(ops, wv->len, sizeof(guint32), by_cost_desc, cost);
			g_autofree double *load = g_new0(double, width);
			g_autofree guint32 *ln = g_new(guint32, wv->len);
			g_autofree guint8 *used = g_new0(guint8, width);
			for (guint32 k = 0; k < wv->len; k++) {
				guint32 best = 0;
				for (guint32 l = 1; l < width; l++)
					if (load[l] < load[best])
						best = l;
				load[best] += cost[ops[k]];
				ln[k] = best;
				used[best] = 1;
			}
			GArray *cur = g_array_new(FALSE, FALSE, sizeof(guint32));
			for (guint32 l = 0; l < width; l++)
				if (used[l]) {
					guint32 s = track_lane(plan, &track[ti], ti, l);
					g_array_append_val(cur, s);
				}
			if (first) {
				/* Await the regions it depends on. */
				for (guint32 k = 0; k < dl->len; k++) {
					GArray *ev =
					    g_ptr_array_index(done, g_array_index(dl, guint32, k));
					for (guint32 j = 0; j + 1 < ev->len; j += 2)
						for (guint32 l = 0; l < cur->len; l++)
							if (g_array_index(cur, guint32, l) !=
							    g_array_index(ev, guint32, j))
								lh_plan_wait(
								    plan,
								    g_array_index(cur, guint32, l),
								    g_array_index(ev, guint32,
								                  j + 1));
				}
			} else {
				/* Full barrier: every lane of the last wave to every lane of this
				 * one. */
				for (guint32 a = 0; a < prev->len; a++) {
					guint32 s = g_array_index(prev, guint32, a);
					gboolean other = FALSE;
					for (guint32 b = 0; b < cur->len; b++)
						if (g_array_index(cur, guint32, b) != s)
							other = TRUE;
					if (!other)
						continue;
					guint32 e = lh_plan_new_event(plan);
					lh_plan_signal(plan, s, e);
					for (guint32 b = 0; b < cur->len; b++)
						if (g_array_index(cur, guint32, b) != s)
							lh_plan_wait(plan,
							             g_array_index(cur, guint32, b),
							             e);
				}
			}
			for (guint32 k = 0; k < wv->len; k++)
				lh_plan_run(plan, track_lane(plan, &track[ti], ti, ln[k]), ops[k]);
			g_array_free(prev, TRUE);
			prev = cur;
			first = FALSE;
			total_waves++;
		}
		GArray *ev = g_array_new(FALSE, FALSE, sizeof(guint32));
		if (needed[r])
			for (guint32 l = 0; l < prev->len; l++) {
				guint32 s = g_array_index(prev, guint32, l),
				        e = lh_plan_new_event(plan);
				lh_plan_signal(plan, s, e);
				g_array_append_val(ev, s);
				g_array_append_val(ev, e);
			}
		g_ptr_array_add(done, ev);
		g_array_free(prev, TRUE);
	}
	for (guint32 t = 0; t < n_tracks; t++)
		g_array_free(track[t].lanes, TRUE);
	if (!ok) {
		lh_plan_free(plan);
		return NULL;
	}
	lh_params_explain(p, "iree: %u region(s) on %u track(s), %u wave(s); regions=%s waves=%s",
	                  R, n_tracks, total_waves, rstep->name, wstep->name);
	return plan;
}

/* ---- the scheduler ------------------------------------------------------------------- */

static const LhParamSpec cost_params[] = {
    {"regions", LH_PARAM_CHOICE, "auto", 0, 0, "auto|split|list|reference",
     "execution regions: transfers split off, by list scheduling, IREE's reference, or "
     "(auto) the fastest"},
    {"concurrency", LH_PARAM_CHOICE, "auto", 0, 0, "auto|cost|order|reference",
     "concurrency (wave) step: auto is order for regions=list, cost for the others"},
    {"favor", LH_PARAM_CHOICE, "min-peak-memory", 0, 0, "min-peak-memory|max-concurrency|debug",
     "for concurrency=reference: IREE's favor"},
    {"streams", LH_PARAM_INT, NULL, 1, 1024, NULL,
     "most lanes a wave runs on (default: the model's hw_queues)"},
    {"submit-ns", LH_PARAM_DOUBLE, NULL, 0, 1e12, NULL,
     "host cost of submitting one execution region, ns (default: the model's launch_ns)"},
    {"memory-limit", LH_PARAM_DOUBLE, NULL, 0, 1e9, NULL,
     "peak device memory, GiB: every plan is simulated and kept within it (default: none)"},
    {NULL, 0, NULL, 0, 0, NULL, NULL},
};

/* Simulates @plan; its makespan and peak, or FALSE with @error set. */
static gboolean sim_plan(const LhGraph *g, const LhHw *hw, const LhPlan *plan, gint64 *makespan,
                         gint64 *peak, GError **error)
{
	/* The driver's plans are valid by construction (it checks the steps' regions and waves
	 * against the deps before it emits); the property tests validate them. */
	LhSimOptions opt = {.skip_validate = TRUE};
	g_autoptr(GError) se = NULL;
	g_autoptr(LhTrace) t = lh_simulate(g, hw, plan, &opt, NULL, &se);
	if (!t) {
		g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_FAILED,
		            "iree-cost: its plan does not simulate: %s", se->message);
		return FALSE;
	}
	*makespan = 0;
	for (guint32 i = 0; i < t->n_ops; i++)
		*makespan = MAX(*makespan, t->ops[i].end);
	*peak = t->peak_device;
	return TRUE;
}

/* The wave step for region step @r under concurrency=@cname: auto pairs the list regions
 * with their own order and the others with the cost waves. */
static const LhIreeWaveStep *wave_step_for(const char *cname, const LhIreeRegionStep *r)
{
	if (strcmp(cname, "cost") == 0)
		return &lh_iree_waves_cost;
	if (strcmp(cname, "reference") == 0)
		return &lh_iree_waves_reference;
	if (strcmp(cname, "order") == 0)
		return &waves_order_step;
	return r == &lh_iree_regions_list || r == &regions_list_pinned_step ? &waves_order_step
	                                                                    : &lh_iree_waves_cost;
}

static LhPlan *cost_plan(const LhGraph *g, const LhHw *hw, const LhParams *p, GError **error)
{
	const char *rname = lh_params_get_choice(p, "regions");
	const char *cname = lh_params_get_choice(p, "concurrency");
	guint32 lanes = lh_params_is_set(p, "streams") ? (guint32)lh_params_get_int(p, "streams")
	                                               : MAX(hw->hw_queues, 1);
	double submit =
	    lh_params_is_set(p, "submit-ns") ? lh_params_get_double(p, "submit-ns") : hw->launch_ns;
	gboolean has_limit = lh_params_is_set(p, "memory-limit");
	double limit = has_limit ? lh_params_get_double(p, "memory-limit") * 1073741824.0 : 0;
	/* regions=auto: the three region steps, the plan the engine finds fastest. */
	const LhIreeRegionStep *rsteps[3] = {NULL, NULL, NULL};
	if (strcmp(rname, "split") == 0)
		rsteps[0] = &lh_iree_regions_cost;
	else if (strcmp(rname, "list") == 0) {
		rsteps[0] = &lh_iree_regions_list;
		rsteps[1] = has_limit ? &regions_list_pinned_step : NULL;
	} else if (strcmp(rname, "reference") == 0)
		rsteps[0] = &lh_iree_regions_reference;
	else {
		/* auto: list, and IREE's reference regions as the fallback (split is given only
		 * when asked for: it lost to list on every generated workload, see
		 * bench/README.md#iree-cost-and-search, and each candidate costs a simulation). */
		rsteps[0] = &lh_iree_regions_list;
		rsteps[1] = &lh_iree_regions_reference;
		rsteps[2] = has_limit ? &regions_list_pinned_step : NULL;
	}
	if (!has_limit && !rsteps[1])
		return lh_iree_partition(g, hw, p, rsteps[0], wave_step_for(cname, rsteps[0]),
		                         lanes, 0, submit, error);

	/* Each candidate simulated, the fastest (within the limit) kept: the plans without a
	 * memory budget; with memory-limit, then the plans whose waves keep to a budget shrinking
	 * from the limit (wave steps that read no budget are not tried again), one region whose
	 * waves each hold one op (the serial schedule), and IREE's own partition. */
	static const double factor[] = {0,    1.0, 0.98, 0.96, 0.94, 0.92, 0.9, 0.85, 0.8,
	                                0.75, 0.7, 0.6,  0.5,  0.4,  0.3,  0.2, 0.1};
	gsize n_factor = has_limit ? G_N_ELEMENTS(factor) + 2 : 1;
	gint64 best_peak = G_MAXINT64;
	LhPlan *best = NULL;
	gint64 best_mk = G_MAXINT64;
	for (gsize k = 0; k < n_factor; k++) {
		gboolean serial = k == G_N_ELEMENTS(factor), ref = k == G_N_ELEMENTS(factor) + 1;
		for (int r = 0; r < 3 && (r == 0 || !(serial || ref)); r++) {
			const LhIreeWaveStep *ws =
			    rsteps[r] ? wave_step_for(cname, rsteps[r]) : NULL;
			gboolean list = rsteps[r] == &lh_iree_regions_list ||
			                rsteps[r] == &regions_list_pinned_step;
			/* Steps that read no budget are tried once, and the pinned list step
			 * only with one (without, it is the list step). */
			if (!rsteps[r] ||
			    (k > 0 && !serial && !ref && ws != &lh_iree_waves_cost && !list) ||
			    (k == 0 && rsteps[r] == &regions_list_pinned_step))
				continue;
			LhPlan *plan;
			const char *what;
			if (serial) {
				plan =
				    lh_iree_partition(g, hw, p, &lh_iree_regions_reference,
				                      &lh_iree_waves_cost, 1, 1e-9, submit, error);
				what = "reference, one op per wave";
			} else if (ref) {
				plan = lh_iree_partition(g, hw, p, &lh_iree_regions_reference,
				                         &lh_iree_waves_reference, lanes, 0, submit,
				                         error);
				what = "reference, IREE's waves";
			} else {
				plan = lh_iree_partition(
				    g, hw, p, rsteps[r], ws, lanes,
				    factor[k] > 0 ? MAX(limit * factor[k], 1e-9) : 0, submit,
				    error);
				what = rsteps[r]->name;
			}
			gint64 mk, peak;
			if (!plan || !sim_plan(g, hw, plan, &mk, &peak, error)) {
				lh_plan_free(plan);
				lh_plan_free(best);
				return NULL;
			}
			lh_params_explain(p,
			                  "iree-cost: regions=%s, memory budget %.3f GiB: makespan "
			                  "%" G_GINT64_FORMAT " ns, peak %.3f GiB",
			                  what,
			                  serial || ref ? 0.0 : limit * factor[k] / 1073741824.0,
			                  mk, (double)peak / 1073741824.0);
			best_peak = MIN(best_peak, peak);
			if ((has_limit && (double)peak > limit) || mk >= best_mk) {
				lh_plan_free(plan);
				continue;
			}
			lh_plan_free(best);
			best = plan;
			best_mk = mk;
		}
	}
	if (best)
		return best;
	g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PARAM,
	            "iree-cost: no plan found within memory-limit=%g GiB; the smallest peak found "
	            "is %.4f GiB",
	            lh_params_get_double(p, "memory-limit"), (double)best_peak / 1073741824.0);
	return NULL;
}

const LhScheduler lh_sched_iree_cost = {
    .version = LH_SCHEDULER_ABI,
    .name = "iree-cost",
    .summary = "cost-aware partitioning in IREE's model: regions, waves balanced by estimated "
               "time, transfers in regions of their own, a peak memory bound",
    .params = cost_params,
    .plan = cost_plan,
};
