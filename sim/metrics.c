/* lhsim — lower bounds (docs/design.md#lower-bounds) and metrics (#metrics), with their table and
 * JSON writers. */
#include "sim/pages-private.h"
#include "sim/plan-private.h"
#include "sim/trace.h"
#include "sim/util.h"
#include "sim/cost.h"

#include <math.h>
#include <string.h>

static double s_over(const LhHw *hw)
{
	return hw->step_overhead_ns;
}

static void radix_sort(void *v, gsize n, gsize size);

enum { C_SM, C_HBM, C_H2D, C_D2H, C_LINK, C_N };

/* An op of some engine class: its earliest start (head), shortest remaining chain after it
 * (tail) and its work on each class (0: not of that class). */
typedef struct {
	double head, tail, w[C_N];
} ClassOp;

/* A sort key (the bits of a non-negative double, inverted: largest first) and a ClassOp. */
typedef struct {
	guint64 key;
	guint64 i;
} KeyIdx;

static guint64 desc_key(double v)
{
	v += 0.0; /* -0 becomes +0 */
	guint64 b;
	memcpy(&b, &v, sizeof b);
	return ~b;
}

/* Walks @c in the order of @k, each class's ops only: the prefix sums of class_bound (below)
 * for every class in one pass. @by_tail: @k is by tail, else by head. */
static void class_walk(const ClassOp *c, const KeyIdx *k, guint32 m, gboolean by_tail, double *best)
{
	double w[C_N] = {0}, mn[C_N];
	for (int j = 0; j < C_N; j++)
		mn[j] = G_MAXDOUBLE;
	for (guint32 x = 0; x < m; x++) {
		const ClassOp *o = &c[k[x].i];
		for (int j = 0; j < C_N; j++) {
			if (!(o->w[j] > 0))
				continue;
			w[j] += o->w[j];
			if (by_tail) {
				mn[j] = MIN(mn[j], o->head);
				best[j] = MAX(best[j], mn[j] + w[j] + o->tail);
			} else {
				mn[j] = MIN(mn[j], o->tail);
				best[j] = MAX(best[j], o->head + w[j] + mn[j]);
			}
		}
	}
}

/* The engine-class bounds (out->class_*) of the ops on device @dev (all ops when the graph is
 * not placed), without the step's launch. For each class: the ops with head >= h all start
 * at h or later, need their summed work of the class's capacity of 1, and the last of them to
 * end is followed by its tail: h + W + min tail. Likewise min head + W + t over the ops with
 * tail >= t. The best over h and t. The ops are taken by head, largest first, equal heads in
 * op order, then by tail, equal tails in that order by head, and the sums add in that
 * order. A class's ops in that order are the
 * order of all classes' ops filtered to its own (a stable sort keeps op order among equal
 * keys either way), so two radix sorts of all ops serve the five classes: at 10^6 ops the
 * ten sorts, one per class and key, were most of the metrics' time. */
static void class_bounds(const LhGraph *g, const LhHw *hw, const double *T, const double *head,
                         const double *tail, guint32 dev, LhBounds *out)
{
	guint32 n = lh_graph_n_ops(g);
	/* 80 MB of new arrays at 10^6 ops: the page helper makes them present ahead. ctail is
	 * c[].tail, for the order by tail. */
	LhPages *pages = lh__pages_new();
	g_autofree ClassOp *c = lh__pages_alloc(pages, ClassOp, MAX(n, 1));
	g_autofree KeyIdx *kh = lh__pages_alloc(pages, KeyIdx, MAX(n, 1));
	g_autofree double *ctail = lh__pages_alloc(pages, double, MAX(n, 1));
	guint32 m = 0;
	for (guint32 i = 0; i < n; i++) {
		const LhOp *op = lh_graph_op(g, i);
		if (op->kind == LH_OP_INPUT || op->device != dev)
			continue;
		gboolean dur = op->duration_ns >= 0;
		double w[C_N] = {0};
		if (op->kind == LH_OP_COPY_H2D || op->kind == LH_OP_COPY_D2H) {
			gboolean h = op->kind == LH_OP_COPY_H2D;
			guint32 eng = h ? hw->copy_engines_h2d : hw->copy_engines_d2h;
			w[h ? C_H2D : C_D2H] = dur ? T[i]
			                           : (double)op->size / hw->pcie_gbs +
			                                 hw->copy_latency_ns / MAX(eng, 1);
		} else {
			w[C_SM] = T[i] * lh_op_sm_share(op, hw);
			if (lh_op_kind_is_collective(op->kind))
				w[C_LINK] = dur ? T[i] : lh_op_wire_bytes(op) / hw->link_gbs;
			else
				w[C_HBM] = T[i] * lh_op_hbm_use(op, hw, T[i]);
		}
		gboolean any = FALSE;
		for (int k = 0; k < C_N; k++)
			any |= w[k] > 0;
		if (!any)
			continue;
		c[m] = (ClassOp){head[i], tail[i], {w[0], w[1], w[2], w[3], w[4]}};
		kh[m] = (KeyIdx){desc_key(head[i]), m};
		ctail[m] = tail[i];
		m++;
	}
	double best[C_N] = {0};
	radix_sort(kh, m, sizeof *kh);
	class_walk(c, kh, m, FALSE, best);
	/* By tail from the order by head, as each class's array was sorted in place: equal tails
	 * keep their order by head. */
	KeyIdx *kt = kh; /* in place: each entry is read before it is written */
	for (guint32 x = 0; x < m; x++)
		kt[x] = (KeyIdx){desc_key(ctail[kh[x].i]), kh[x].i};
	radix_sort(kt, m, sizeof *kt);
	class_walk(c, kt, m, TRUE, best);
	out->class_sm = best[C_SM];
	out->class_hbm = best[C_HBM];
	out->class_h2d = best[C_H2D];
	out->class_d2h = best[C_D2H];
	out->class_link = best[C_LINK];
	lh__pages_free(pages); /* before the arrays are freed */
}

/* Per device sums of lh_bounds (one device for a graph without placement). */
typedef struct {
	double sm_work, h2d_bytes, h2d_lat, d2h_bytes, d2h_lat, link_work, host;
	guint32 non_input;
} DevSums;

/* A placed graph's bounds are each device's, the largest of them: devices work in parallel,
 * each on its own hardware (@dhw, or @hw for all), and what one device must do bounds the
 * step. Chains end at a device's edge (a rendezvous is not followed), which keeps the
 * critical path a bound. A graph without placement is device 0, with the same arithmetic in
 * the same order as before devices. */
static void bounds_impl(const LhGraph *g, const LhHw *hw, const LhHw *const *dhw,
                        const LhPlan *plan, LhBounds *out)
{
	memset(out, 0, sizeof *out);
	guint32 n = lh_graph_n_ops(g);
	guint32 nd = lh_graph_placed(g) ? MAX(lh_graph_devices(g), 1) : 1;
#define DEV_HW(d) (dhw ? dhw[d] : hw)
	const guint32 *topo = lh_graph_topo(g);
	/* 32 MB of new arrays at 10^6 ops: the page helper makes them present ahead. */
	LhPages *pages = lh__pages_new();
	g_autofree double *finish = lh__pages_alloc0(pages, double, MAX(n, 1));
	g_autofree double *head = lh__pages_alloc0(pages, double, MAX(n, 1));
	g_autofree double *Ts = lh__pages_alloc0(pages, double, MAX(n, 1));
	g_autofree DevSums *ds = g_new0(DevSums, nd);
	for (guint32 k = 0; k < n; k++) {
		guint32 i = topo[k];
		const LhOp *op = lh_graph_op(g, i);
		const LhHw *h = DEV_HW(op->device);
		DevSums *D = &ds[op->device];
		double T = lh_op_standalone_ns_in(g, op, h);
		guint32 nd_;
		const guint32 *deps = lh_graph_deps(g, i, &nd_);
		double ready = 0;
		for (guint32 d = 0; d < nd_; d++)
			ready = MAX(ready, finish[deps[d]]);
		finish[i] = ready + T;
		head[i] = ready;
		Ts[i] = T;
		if (op->kind == LH_OP_INPUT)
			continue;
		D->non_input++;
		D->sm_work += T * lh_op_sm_share(op, h);
		gboolean dur = op->duration_ns >= 0;
		if (op->kind == LH_OP_COPY_H2D || op->kind == LH_OP_COPY_D2H) {
			/* Bytes share the direction's bandwidth whatever the engine count; the
			 * fixed latencies overlap across engines. */
			double bytes = dur ? T : (double)op->size / h->pcie_gbs;
			double lat = dur ? 0 : h->copy_latency_ns;
			if (op->kind == LH_OP_COPY_H2D) {
				D->h2d_bytes += bytes;
				D->h2d_lat += lat;
			} else {
				D->d2h_bytes += bytes;
				D->d2h_lat += lat;
			}
		} else if (lh_op_kind_is_collective(op->kind)) {
			double lat, wire, lu, nu;
			lh_op_link_phases(g, op, h, &lat, &wire, &lu, &nu);
			D->link_work += dur ? T : wire * lu;
		}
	}
	if (plan) {
		for (guint32 c = 0; c < lh_plan_n_cmds(plan); c++) {
			const LhCmd *cmd = lh_plan_cmd(plan, c);
			guint32 d = lh__plan_cmd_device(plan, cmd);
			d = d < nd ? d : 0;
			const LhHw *h = DEV_HW(d);
			ds[d].host += cmd->kind == LH_CMD_RUN ? h->launch_ns
			              : cmd->kind == LH_CMD_SIGNAL || cmd->kind == LH_CMD_WAIT
			                  ? h->event_ns
			              : cmd->kind == LH_CMD_HOST ? (double)cmd->arg
			                                         : 0;
		}
	} else {
		for (guint32 d = 0; d < nd; d++)
			ds[d].host = ds[d].non_input * DEV_HW(d)->launch_ns;
	}
	/* Each op's shortest remaining chain after it (the class bounds' tails). */
	g_autofree double *tail = lh__pages_alloc0(pages, double, MAX(n, 1));
	for (guint32 k = n; k-- > 0;) {
		guint32 v = topo[k], ns;
		const guint32 *sc = lh_graph_succs(g, v, &ns);
		for (guint32 j = 0; j < ns; j++)
			tail[v] = MAX(tail[v], Ts[sc[j]] + tail[sc[j]]);
	}
	for (guint32 d = 0; d < nd; d++) {
		const LhHw *h = DEV_HW(d);
		const DevSums *D = &ds[d];
		LhBounds b = {0};
		b.sm_work = D->sm_work;
		b.h2d_work = D->h2d_bytes + D->h2d_lat / h->copy_engines_h2d;
		b.d2h_work = D->d2h_bytes + D->d2h_lat / h->copy_engines_d2h;
		b.link_work = D->link_work;
		b.host_issue = D->host;
		class_bounds(g, h, Ts, head, tail, d, &b);
		/* Nothing runs before the step's launch (docs/engine.md, "The host"): each bound
		 * is that much later. */
		if (D->non_input) {
			double s = s_over(h);
			b.class_sm += s;
			b.class_hbm += s;
			b.class_h2d += s;
			b.class_d2h += s;
			b.class_link += s;
			b.sm_work += s;
			b.h2d_work += s;
			b.d2h_work += s;
			b.link_work += s;
			b.host_issue += s;
		}
		out->sm_work = MAX(out->sm_work, b.sm_work);
		out->h2d_work = MAX(out->h2d_work, b.h2d_work);
		out->d2h_work = MAX(out->d2h_work, b.d2h_work);
		out->link_work = MAX(out->link_work, b.link_work);
		out->host_issue = MAX(out->host_issue, b.host_issue);
		out->class_sm = MAX(out->class_sm, b.class_sm);
		out->class_hbm = MAX(out->class_hbm, b.class_hbm);
		out->class_h2d = MAX(out->class_h2d, b.class_h2d);
		out->class_d2h = MAX(out->class_d2h, b.class_d2h);
		out->class_link = MAX(out->class_link, b.class_link);
	}
	gboolean placed = lh_graph_placed(g);
	for (guint32 i = 0; i < n; i++) {
		/* The step's launch precedes every chain of a device that runs anything. Every op
		 * of a graph without placement is on device 0 (lh_graph_finish checks it), so its
		 * ops need not be read. */
		guint32 dv = placed ? lh_graph_op(g, i)->device : 0;
		double s = ds[dv].non_input ? s_over(DEV_HW(dv)) : 0;
		out->critical_path = MAX(out->critical_path, finish[i] + s);
	}
	lh__pages_free(pages); /* before the arrays are freed */
#undef DEV_HW
	struct {
		double v;
		const char *name;
	} all[] = {{out->critical_path, "critical path"}, {out->sm_work, "SM work"},
	           {out->h2d_work, "H2D copy work"},      {out->d2h_work, "D2H copy work"},
	           {out->link_work, "link work"},         {out->host_issue, "host issue"},
	           {out->class_sm, "SM class"},           {out->class_hbm, "HBM class"},
	           {out->class_h2d, "H2D class"},         {out->class_d2h, "D2H class"},
	           {out->class_link, "link class"}};
	out->binding = all[0].name;
	for (gsize i = 0; i < G_N_ELEMENTS(all); i++)
		if (all[i].v > out->bound + 0.5) { /* a tie (to rounding) keeps the earlier name */
			out->bound = all[i].v;
			out->binding = all[i].name;
		}
}

void lh_bounds(const LhGraph *g, const LhHw *hw, const LhPlan *plan, LhBounds *out)
{
	bounds_impl(g, hw, NULL, plan, out);
}

void lh_bounds_devices(const LhGraph *g, const LhHw *hw, const LhHw *const *device_hw,
                       const LhPlan *plan, LhBounds *out)
{
	bounds_impl(g, hw, lh_graph_placed(g) ? device_hw : NULL, plan, out);
}

typedef struct {
	gint64 t;
	gint32 delta;   /* +1 start, -1 end */
	guint32 engine; /* LhEngine */
} Edge;

/* Sorts @n records of @size bytes by the 64-bit key at offset 0, as unsigned: an LSD radix
 * sort, 16 bits a pass, skipping the passes where every key has the same digit. The four
 * digits' counts come from one read of the keys, which also finds whether they are sorted
 * already (the edges and starts of a one-stream plan are), and then nothing moves. Stable (each
 * pass keeps the order of equal digits), which class_bounds needs; the sweeps below add up lengths,
 * which the order of equal keys does not change. */
static void radix_sort(void *v, gsize n, gsize size)
{
	if (n < 2)
		return;
	char *a = v;
	g_autofree guint32 *count = g_new0(guint32, 4 << 16);
	gboolean sorted = TRUE;
	guint64 prev = 0;
	for (gsize i = 0; i < n; i++) {
		guint64 k;
		memcpy(&k, a + i * size, sizeof k);
		sorted &= k >= prev;
		prev = k;
		count[k & 0xffff]++;
		count[(1 << 16) + ((k >> 16) & 0xffff)]++;
		count[(2 << 16) + ((k >> 32) & 0xffff)]++;
		count[(3 << 16) + (k >> 48)]++;
	}
	if (sorted)
		return;
	guint64 k0;
	memcpy(&k0, a, sizeof k0);
	g_autofree char *tmp = NULL;
	char *src = a, *dst = NULL;
	LhPages *pages = NULL; /* makes tmp's pages present ahead (at 10^6 ops, 16 - 32 MB) */
	for (guint pass = 0; pass < 4; pass++) {
		guint shift = 16 * pass;
		guint32 *c = count + ((gsize)pass << 16);
		if (c[(k0 >> shift) & 0xffff] == n)
			continue; /* one digit for all: this pass would not move anything */
		if (!dst) {
			pages = lh__pages_new();
			dst = tmp = lh__pages_hand(pages, g_malloc(n * size), n * size);
		}
		guint32 sum = 0;
		for (guint32 d = 0; d < 1u << 16; d++) {
			guint32 x = c[d];
			c[d] = sum;
			sum += x;
		}
		for (gsize i = 0; i < n; i++) {
			guint64 k;
			memcpy(&k, src + i * size, sizeof k);
			memcpy(dst + (gsize)c[(k >> shift) & 0xffff]++ * size, src + i * size,
			       size);
		}
		char *t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * size);
	lh__pages_free(pages); /* before tmp is freed */
}

/* An op's [start, end) as two edges at @e[*n], if it ran on an engine for some time (@e has
 * room for two per op). */
static void push_edges(Edge *e, guint32 *n, const LhOpTiming *tm)
{
	if (tm->start < 0 || tm->end <= tm->start || tm->engine == LH_ENGINE_NONE)
		return;
	e[(*n)++] = (Edge){tm->start, 1, tm->engine};
	e[(*n)++] = (Edge){tm->end, -1, tm->engine};
}

/* One sweep over the edges @e (sorted here) gives each engine's busy time, the transfer time
 * (copies and collectives), the exposed part of it (no kernel running) and the time anything
 * runs before @host_end: the lengths of the unions, without a sort per quantity. Adds them to
 * @busy, *@transfer and *@exposed, and sets *@busy_before. */
static void sweep_edges(Edge *e, guint32 n, gint64 host_end, gint64 *busy, gint64 *transfer,
                        gint64 *exposed, gint64 *busy_before)
{
	radix_sort(e, n, sizeof(Edge));
	int depth[LH_ENGINE_N] = {0};
	gint64 last = 0;
	*busy_before = 0;
	for (guint32 i = 0; i < n; i++) {
		const Edge *x = &e[i];
		gint64 dt = x->t - last;
		if (dt > 0) {
			gboolean tr = depth[LH_ENGINE_H2D] || depth[LH_ENGINE_D2H] ||
			              depth[LH_ENGINE_LINK] || depth[LH_ENGINE_NET];
			for (int k = LH_ENGINE_SM; k < LH_ENGINE_N; k++)
				if (depth[k])
					busy[k] += dt;
			if (tr) {
				*transfer += dt;
				if (!depth[LH_ENGINE_SM])
					*exposed += dt;
			}
			if ((tr || depth[LH_ENGINE_SM]) && last < host_end)
				*busy_before += MIN(x->t, host_end) - last;
		}
		last = x->t;
		depth[x->engine] += x->delta;
	}
}

/* The whole run's sweep, over every op. */
static void sweep_engines(const LhTrace *t, LhMetrics *m, gint64 host_end, gint64 *busy_before)
{
	LhPages *pages = lh__pages_new(); /* 48 MB at 10^6 ops, made present ahead */
	g_autofree Edge *e = lh__pages_alloc(pages, Edge, 2 * (gsize)t->n_ops + 1);
	guint32 n = 0;
	for (guint32 i = 0; i < t->n_ops; i++)
		push_edges(e, &n, &t->ops[i]);
	sweep_edges(e, n, host_end, m->engine_busy, &m->transfer_time, &m->exposed_transfer,
	            busy_before);
	lh__pages_free(pages); /* before e is freed */
}

typedef struct {
	guint64 key; /* an op's start */
	guint32 op;
	guint32 _pad;
} Keyed;

/* Busy time per stream: the union of its ops' intervals, from one sort by (stream, start). */
static void stream_busy(const LhTrace *t, LhMetrics *m)
{
	LhPages *pages = lh__pages_new(); /* 20 MB at 10^6 ops, made present ahead */
	g_autofree Keyed *kv = lh__pages_alloc(pages, Keyed, MAX(t->n_ops, 1));
	guint32 n = 0;
	for (guint32 i = 0; i < t->n_ops; i++) {
		const LhOpTiming *tm = &t->ops[i];
		if (tm->start >= 0 && tm->end > tm->start && tm->stream >= 0 &&
		    (guint32)tm->stream < m->n_streams)
			kv[n++] = (Keyed){(guint64)tm->start, i, 0};
	}
	/* By start, then (a stable counting sort) by stream: (stream, start) order. */
	radix_sort(kv, n, sizeof(Keyed));
	g_autofree guint32 *at = g_new0(guint32, (gsize)m->n_streams + 1);
	for (guint32 k = 0; k < n; k++)
		at[t->ops[kv[k].op].stream + 1]++;
	for (guint32 s = 0; s < m->n_streams; s++)
		at[s + 1] += at[s];
	g_autofree guint32 *ord = lh__pages_alloc(pages, guint32, MAX(n, 1));
	for (guint32 k = 0; k < n; k++)
		ord[at[t->ops[kv[k].op].stream]++] = kv[k].op;
	for (guint32 k = 0; k < n;) {
		gint32 s = t->ops[ord[k]].stream;
		gint64 a = t->ops[ord[k]].start, b = t->ops[ord[k]].end;
		for (k++; k < n && t->ops[ord[k]].stream == s; k++) {
			const LhOpTiming *tm = &t->ops[ord[k]];
			if (tm->start > b) {
				m->stream_busy[s] += b - a;
				a = tm->start;
			}
			b = MAX(b, tm->end);
		}
		m->stream_busy[s] += b - a;
	}
	lh__pages_free(pages); /* before the arrays are freed */
}

/* Per device: compute busy (the union of its SM-engine ops), transfer and exposed transfer,
 * from one sort of its ops' edges; end, peak and host end from the trace. */
static void device_metrics(const LhTrace *t, const LhGraph *g, LhMetrics *m)
{
	guint32 nd = m->n_devices;
	m->dev = g_new0(LhDeviceMetrics, nd);
	if (!m->placed) {
		/* One device: its figures are the whole run's, from sweep_engines' one sort (the
		 * same unions as below, over every op). */
		LhDeviceMetrics *D = &m->dev[0];
		D->end = m->makespan;
		D->compute_busy = m->engine_busy[LH_ENGINE_SM];
		D->transfer_time = m->transfer_time;
		D->exposed_transfer = m->exposed_transfer;
		D->bubble =
		    m->makespan > 0 ? 1.0 - (double)D->compute_busy / (double)m->makespan : 0.0;
		D->peak_device = t->peak_device;
		D->peak_device_t = t->peak_device_t;
		D->host_end = t->host_end;
		m->bubble = D->bubble;
		return;
	}
	g_autofree guint32 *at = g_new0(guint32, (gsize)nd + 1);
	for (guint32 i = 0; i < t->n_ops; i++)
		at[MIN(lh_graph_op(g, i)->device, nd - 1) + 1]++;
	for (guint32 d = 0; d < nd; d++)
		at[d + 1] += at[d];
	g_autofree guint32 *ord = g_new(guint32, MAX(t->n_ops, 1));
	for (guint32 i = 0; i < t->n_ops; i++)
		ord[at[MIN(lh_graph_op(g, i)->device, nd - 1)]++] = i;
	g_autofree Edge *e = g_new(Edge, 2 * (gsize)t->n_ops + 1);
	guint32 k = 0;
	for (guint32 d = 0; d < nd; d++) {
		LhDeviceMetrics *D = &m->dev[d];
		guint32 ne = 0;
		for (; k < at[d]; k++) {
			const LhOpTiming *tm = &t->ops[ord[k]];
			D->end = MAX(D->end, tm->end);
			push_edges(e, &ne, tm);
		}
		gint64 eb[LH_ENGINE_N] = {0}, before;
		sweep_edges(e, ne, 0, eb, &D->transfer_time, &D->exposed_transfer, &before);
		D->compute_busy = eb[LH_ENGINE_SM];
		D->bubble =
		    m->makespan > 0 ? 1.0 - (double)D->compute_busy / (double)m->makespan : 0.0;
		gboolean own = t->n_devices == nd && t->dev_peak;
		D->peak_device = own ? lh_trace_dev_peak(t, d) : t->peak_device;
		D->peak_device_t = own ? lh_trace_dev_peak_t(t, d) : t->peak_device_t;
		D->host_end = own ? lh_trace_dev_host_end(t, d) : t->host_end;
	}
	gint64 busy = 0;
	for (guint32 d = 0; d < nd; d++)
		busy += m->dev[d].compute_busy;
	m->bubble = m->makespan > 0 ? 1.0 - (double)busy / ((double)nd * (double)m->makespan) : 0.0;
}

void lh_metrics_compute(const LhTrace *t, const LhGraph *g, const LhHw *hw, const LhPlan *plan,
                        LhMetrics *m)
{
	lh_metrics_compute_devices(t, g, hw, NULL, plan, m);
}

void lh_metrics_compute_devices(const LhTrace *t, const LhGraph *g, const LhHw *hw,
                                const LhHw *const *device_hw, const LhPlan *plan, LhMetrics *m)
{
	memset(m, 0, sizeof *m);
	for (guint32 i = 0; i < t->n_ops; i++)
		if (t->ops[i].end > m->makespan)
			m->makespan = t->ops[i].end;
	m->host_end = t->host_end;
	lh_bounds_devices(g, hw, device_hw, plan, &m->bounds);
	m->ratio = m->bounds.bound > 0 ? (double)m->makespan / m->bounds.bound : 1.0;
	gint64 busy_before;
	sweep_engines(t, m, t->host_end, &busy_before);
	m->kernel_time = m->engine_busy[LH_ENGINE_SM];
	m->overlap = m->transfer_time > 0
	                 ? 1.0 - (double)m->exposed_transfer / (double)m->transfer_time
	                 : 1.0;
	m->peak_device = t->peak_device;
	m->peak_device_t = t->peak_device_t;
	m->peak_host = t->peak_host;
	/* Host-bound: before the host's last issue, time with nothing running on the device. */
	m->host_bound = MAX(t->host_end - busy_before, 0);
	m->n_streams = plan ? lh_plan_n_streams(plan) : 0;
	m->stream_busy = g_new0(gint64, MAX(m->n_streams, 1));
	stream_busy(t, m);
	/* A stream is used when it ran an op, even a zero-length one. */
	if (m->n_streams) {
		g_autofree guint8 *used = g_new0(guint8, m->n_streams);
		for (guint32 i = 0; i < t->n_ops; i++)
			if (t->ops[i].stream >= 0 && (guint32)t->ops[i].stream < m->n_streams)
				used[t->ops[i].stream] = 1;
		for (guint32 s = 0; s < m->n_streams; s++)
			m->streams_used += used[s];
	}
	m->placed = lh_graph_placed(g);
	m->n_devices = m->placed ? MAX(lh_graph_devices(g), 1) : 1;
	device_metrics(t, g, m);
}

void lh_metrics_clear(LhMetrics *m)
{
	g_clear_pointer(&m->stream_busy, g_free);
	g_clear_pointer(&m->dev, g_free);
}

static double pct(gint64 part, gint64 whole)
{
	return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

void lh_metrics_print_table(FILE *f, const LhMetrics *m, const LhPlan *plan, const LhHw *hw)
{
	g_autofree char *mk = lh_format_ns((double)m->makespan);
	g_autofree char *lb = lh_format_ns(m->bounds.bound);
	g_autofree char *gap = lh_format_ns((double)m->makespan - m->bounds.bound);
	g_autofree char *b_cp = lh_format_ns(m->bounds.critical_path);
	g_autofree char *b_sm = lh_format_ns(m->bounds.sm_work);
	g_autofree char *b_host = lh_format_ns(m->bounds.host_issue);
	g_autofree char *c_sm = lh_format_ns(m->bounds.class_sm);
	g_autofree char *c_hbm = lh_format_ns(m->bounds.class_hbm);
	g_autofree char *c_h2d = lh_format_ns(m->bounds.class_h2d);
	g_autofree char *c_d2h = lh_format_ns(m->bounds.class_d2h);
	g_autofree char *c_link = lh_format_ns(m->bounds.class_link);
	g_autofree char *ex = lh_format_ns((double)m->exposed_transfer);
	g_autofree char *tr = lh_format_ns((double)m->transfer_time);
	g_autofree char *pk = lh_format_bytes((double)m->peak_device);
	g_autofree char *pkt = lh_format_ns((double)m->peak_device_t);
	g_autofree char *cap = lh_format_bytes(hw->memory_gib * 1073741824.0);
	g_autofree char *ph = lh_format_bytes((double)m->peak_host);
	g_autofree char *he = lh_format_ns((double)m->host_end);
	g_autofree char *hb = lh_format_ns((double)m->host_bound);
	fprintf(f, "  %-22s %s\n", "makespan", mk);
	fprintf(f, "  %-22s %s (%s)\n", "lower bound", lb, m->bounds.binding);
	fprintf(f, "  %-22s %.3f (gap %s, %.1f %%)\n", "makespan / bound", m->ratio, gap,
	        100.0 * (m->ratio - 1));
	fprintf(f, "  %-22s critical path %s, SM work %s, host issue %s\n", "bounds", b_cp, b_sm,
	        b_host);
	fprintf(f, "  %-22s SM %s, HBM %s, H2D %s, D2H %s, link %s\n", "  per engine class", c_sm,
	        c_hbm, c_h2d, c_d2h, c_link);
	fprintf(f, "  %-22s %s of %s transfer (overlap %.1f %%)\n", "exposed transfer", ex, tr,
	        100.0 * m->overlap);
	fprintf(f, "  %-22s %s at %s (capacity %s)%s\n", "peak device memory", pk, pkt, cap,
	        (double)m->peak_device > hw->memory_gib * 1073741824.0 ? "  OVER CAPACITY" : "");
	fprintf(f, "  %-22s %s\n", "peak host memory", ph);
	fprintf(f, "  %-22s %s (device idle while issuing: %s)\n", "host issue ends", he, hb);
	fprintf(f, "  busy per stream (%u of %u used):\n", m->streams_used, m->n_streams);
	for (guint32 s = 0; s < m->n_streams; s++) {
		g_autofree char *b = lh_format_ns((double)m->stream_busy[s]);
		const LhStream *st = lh_plan_stream(plan, s);
		g_autofree char *label =
		    g_strdup_printf("%s (%s)", st->name, lh_stream_role_name(st->role));
		fprintf(f, "    %-28s %12s  %5.1f %%\n", label, b,
		        pct(m->stream_busy[s], m->makespan));
	}
	fprintf(f, "  busy per engine:\n");
	for (int e = LH_ENGINE_SM; e < LH_ENGINE_N; e++) {
		g_autofree char *b = lh_format_ns((double)m->engine_busy[e]);
		fprintf(f, "    %-28s %12s  %5.1f %%\n", lh_engine_name(e), b,
		        pct(m->engine_busy[e], m->makespan));
	}
	if (!m->placed)
		return;
	fprintf(f, "  %-22s %.1f %% (the idle share of the %u devices' compute over the step)\n",
	        "bubble", 100.0 * m->bubble, m->n_devices);
	fprintf(f, "  per device:\n    %-6s %12s %14s %7s %16s %12s %12s\n", "device", "last end",
	        "compute busy", "bubble", "exposed transfer", "peak memory", "host end");
	for (guint32 d = 0; d < m->n_devices; d++) {
		const LhDeviceMetrics *D = &m->dev[d];
		g_autofree char *end = lh_format_ns((double)D->end);
		g_autofree char *busy = lh_format_ns((double)D->compute_busy);
		g_autofree char *exp = lh_format_ns((double)D->exposed_transfer);
		g_autofree char *peak = lh_format_bytes((double)D->peak_device);
		g_autofree char *host = lh_format_ns((double)D->host_end);
		fprintf(f, "    %-6u %12s %14s %5.1f %% %16s %12s %12s\n", d, end, busy,
		        100.0 * D->bubble, exp, peak, host);
	}
}

char *lh_metrics_to_json(const LhMetrics *m, const LhPlan *plan, const LhGraph *g, const LhHw *hw)
{
	GString *s = g_string_new("{\n  \"graph\": ");
	lh_json_append_string(s, lh_graph_name(g));
	g_string_append_printf(s, ",\n  \"ops\": %u,\n  \"hardware\": ", lh_graph_n_ops(g));
	lh_json_append_string(s, hw->name);
	g_string_append(s, ",\n  \"scheduler\": ");
	const char *sched = plan ? lh_plan_scheduler(plan) : NULL;
	lh_json_append_string(s, sched ? sched : "plan");
	g_string_append(s, ",\n  \"params\": ");
	lh_json_append_string(s, plan && lh_plan_params(plan) ? lh_plan_params(plan) : "");
	g_string_append_printf(s,
	                       ",\n  \"makespan_ns\": %" G_GINT64_FORMAT
	                       ",\n  \"lower_bound_ns\": %.0f,\n"
	                       "  \"binding_bound\": ",
	                       m->makespan, m->bounds.bound);
	lh_json_append_string(s, m->bounds.binding);
	g_string_append_printf(
	    s,
	    ",\n  \"bounds_ns\": {\"critical_path\": %.0f, \"sm_work\": %.0f, \"h2d_work\": %.0f, "
	    "\"d2h_work\": %.0f, \"link_work\": %.0f, \"host_issue\": %.0f, \"class_sm\": %.0f, "
	    "\"class_hbm\": %.0f, \"class_h2d\": %.0f, \"class_d2h\": %.0f, \"class_link\": "
	    "%.0f},\n"
	    "  \"ratio\": %.6f,\n  \"kernel_time_ns\": %" G_GINT64_FORMAT
	    ",\n  \"transfer_time_ns\": %" G_GINT64_FORMAT
	    ",\n  \"exposed_transfer_ns\": %" G_GINT64_FORMAT ",\n  \"overlap\": %.6f,\n"
	    "  \"peak_device_bytes\": %" G_GINT64_FORMAT
	    ",\n  \"peak_device_at_ns\": %" G_GINT64_FORMAT
	    ",\n  \"peak_host_bytes\": %" G_GINT64_FORMAT ",\n  \"device_capacity_bytes\": %.0f,\n"
	    "  \"host_end_ns\": %" G_GINT64_FORMAT ",\n  \"host_bound_ns\": %" G_GINT64_FORMAT
	    ",\n  \"streams_used\": %u,\n  \"streams\": [",
	    m->bounds.critical_path, m->bounds.sm_work, m->bounds.h2d_work, m->bounds.d2h_work,
	    m->bounds.link_work, m->bounds.host_issue, m->bounds.class_sm, m->bounds.class_hbm,
	    m->bounds.class_h2d, m->bounds.class_d2h, m->bounds.class_link, m->ratio,
	    m->kernel_time, m->transfer_time, m->exposed_transfer, m->overlap, m->peak_device,
	    m->peak_device_t, m->peak_host, hw->memory_gib * 1073741824.0, m->host_end,
	    m->host_bound, m->streams_used);
	for (guint32 i = 0; i < m->n_streams; i++) {
		const LhStream *st = lh_plan_stream(plan, i);
		g_string_append(s, i ? ", " : "");
		g_string_append(s, "{\"name\": ");
		lh_json_append_string(s, st->name);
		g_string_append(s, ", \"role\": ");
		lh_json_append_string(s, lh_stream_role_name(st->role));
		g_string_append_printf(s, ", \"busy_ns\": %" G_GINT64_FORMAT "}",
		                       m->stream_busy[i]);
	}
	g_string_append(s, "],\n  \"engines_busy_ns\": {");
	for (int e = LH_ENGINE_SM; e < LH_ENGINE_N; e++)
		g_string_append_printf(s, "%s\"%s\": %" G_GINT64_FORMAT,
		                       e > LH_ENGINE_SM ? ", " : "", lh_engine_name(e),
		                       m->engine_busy[e]);
	g_string_append(s, "}");
	if (m->placed) {
		g_string_append_printf(s, ",\n  \"bubble\": %.6f,\n  \"devices\": [", m->bubble);
		for (guint32 d = 0; d < m->n_devices; d++) {
			const LhDeviceMetrics *D = &m->dev[d];
			g_string_append_printf(
			    s,
			    "%s\n    {\"device\": %u, \"end_ns\": %" G_GINT64_FORMAT
			    ", \"compute_busy_ns\": %" G_GINT64_FORMAT ", \"bubble\": %.6f, "
			    "\"transfer_time_ns\": %" G_GINT64_FORMAT
			    ", \"exposed_transfer_ns\": %" G_GINT64_FORMAT
			    ", \"peak_device_bytes\": %" G_GINT64_FORMAT
			    ", \"peak_device_at_ns\": %" G_GINT64_FORMAT
			    ", \"host_end_ns\": %" G_GINT64_FORMAT "}",
			    d ? "," : "", d, D->end, D->compute_busy, D->bubble, D->transfer_time,
			    D->exposed_transfer, D->peak_device, D->peak_device_t, D->host_end);
		}
		g_string_append(s, "\n  ]");
	}
	g_string_append(s, "\n}\n");
	return g_string_free(s, FALSE);
}
