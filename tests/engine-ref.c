/* lhsim tests — the reference engine: sim/engine.c of branch main as merged into the faster
 * engine (the network as a resource, NCCL-style collective costs on a cluster; a scan of the
 * running set, rates recomputed over the whole running set, costs computed at every start),
 * kept as an oracle. Built only into test-engine-ref (tests/meson.build renames lh_simulate to
 * lh_ref_simulate), which checks that the engine gives the same traces, bit for bit.
 *
 * The original header follows. */
/* lhsim — the discrete-event engine. The rules are docs/engine.md; this file
 * follows docs/engine.md section by section.
 *
 * Time is integer nanoseconds. Between two instants every running activity progresses
 * linearly at its rate; rates are recomputed only when the running set changes (a start, an
 * end or a phase change). An activity's work is measured in standalone nanoseconds, so rate 1
 * means "as fast as alone". The running set is small (bounded by resident kernels plus copy
 * engines), so the next instant is found by a scan of it; the tie order at one instant is
 * fixed (ends in start order, then host issues, then dispatches in plan order, then engine
 * admissions in line order), which makes every run of the same inputs identical.
 */
#include "sim/engine.h"
#include "sim/cost.h"
#include "sim/graph-private.h"

#include <math.h>
#include <string.h>

/* The quark's name is a string with dashes, which clang-format would space. */
/* clang-format off */
G_DEFINE_QUARK(lh-engine-error-quark, lh_engine_error)
/* clang-format on */

#define NONE G_MAXUINT32
#define DIRTY_SM 1u   /* the SM/link running set changed */
#define DIRTY_COPY 2u /* the copy running set changed */
#define NEVER G_MAXINT64

typedef enum { PH_LATENCY, PH_MAIN } Phase;

typedef struct {
	guint32 op, cmd, stream;
	guint8 engine;    /* LhEngine */
	guint8 eng_idx;   /* copy engine index */
	guint8 phase;     /* Phase */
	guint8 is_coll;   /* a collective: SM share plus the link in its main phase */
	double a;         /* SM share at rate 1 */
	double b;         /* HBM share at rate 1 */
	double rem;       /* standalone ns left in this phase, as of t_upd */
	double main_work; /* standalone ns of the main phase (after latency) */
	double lk;        /* collectives' main phase: NVLink (the link) use at rate 1 */
	double nt;        /* collectives' main phase: network use at rate 1 */
	double rate;
	gint64 t_upd;
	gint64 eta;  /* end of this phase at the current rate, or NEVER */
	guint64 seq; /* start order */
} Act;

/* A FIFO of u32 (engine lines). */
typedef struct {
	guint32 *v;
	guint32 head, len, cap;
} Fifo;

static void fifo_push(Fifo *f, guint32 x)
{
	if (f->len == f->cap) {
		guint32 ncap = f->cap ? 2 * f->cap : 16;
		guint32 *nv = g_new(guint32, ncap);
		for (guint32 i = 0; i < f->len; i++)
			nv[i] = f->v[(f->head + i) % f->cap];
		g_free(f->v);
		f->v = nv;
		f->head = 0;
		f->cap = ncap;
	}
	f->v[(f->head + f->len++) % f->cap] = x;
}

static guint32 fifo_pop(Fifo *f)
{
	guint32 x = f->v[f->head];
	f->head = (f->head + 1) % f->cap;
	f->len--;
	return x;
}

typedef struct {
	const LhGraph *g;
	const LhOp *ops;     /* the graph's op array */
	const guint32 *deps; /* the graph's dep array */
	const LhHw *hw;
	const LhPlan *p;
	const LhCmd *cmds; /* the plan's command array */
	LhTrace *tr;
	guint32 n_cmds, S, Q, E;
	gint64 t;

	/* host */
	guint32 h;            /* commands issued so far */
	gint64 host_next;     /* when command h finishes issuing, or NEVER while blocked */
	gint64 launch, event; /* rounded issue costs */

	/* queues and streams */
	guint32 *qnext; /* per command: next command of the same queue */
	guint32 *qhead; /* per queue: head command or NONE */
	guint32 *qtail;
	guint32 *q_blocked_next; /* per queue: next queue blocked on the same event */
	guint32 *ev_blocked;     /* per event: first queue whose head waits on it */
	guint8 *fired;           /* per event */
	guint32 *s_inflight;     /* per stream: running command or NONE */
	guint32 *s_outstanding;  /* per stream: issued, not completed */
	guint8 *q_reg;           /* per queue: listed in an event's blocked list */
	guint32 *heap;           /* queues to try, keyed by head command; min-heap */
	guint32 heap_n;
	guint8 *in_heap;
	guint32 completed; /* stream commands completed */
	guint32 n_stream_cmds;

	/* engines */
	GArray *running; /* of Act, in start order */
	Fifo sm_line, h2d_line, d2h_line;
	guint32 resident;
	guint8 *h2d_busy, *d2h_busy;
	guint64 seq;
	guint dirty;         /* which rates to recompute: DIRTY_SM and/or DIRTY_COPY */
	guint32 free_eng[2]; /* idle copy engines, H2D and D2H */
	gint64 next_eta;     /* earliest eta of the running set, valid while !dirty */

	/* memory */
	guint32 *buf; /* per op: the op whose allocation holds its output (itself, or the
	                 end of its alias chain) */
	guint32
	    *consumers; /* per allocating op: consumers not finished, of it and of every op
	                   aliasing its buffer; G_MAXUINT32 when one has none (lives to the end) */
	gint64 dev, host_mem;
	gboolean mem_changed; /* device or host bytes changed at this instant */
	gint64 cap_bytes;
	gboolean over;
	gboolean strict;
	GError **error;
	gboolean failed;
} Sim;

static gint64 round_cost(double ns)
{
	return ns <= 0 ? 0 : (gint64)llround(ns);
}

/* ---- memory ---- */

static void mem_point(Sim *x)
{
	LhTrace *tr = x->tr;
	LhMemPoint *last =
	    tr->mem->len ? &g_array_index(tr->mem, LhMemPoint, tr->mem->len - 1) : NULL;
	if (last && last->t == x->t) {
		last->device_bytes = x->dev;
		last->host_bytes = x->host_mem;
	} else if (!last || last->device_bytes != x->dev || last->host_bytes != x->host_mem) {
		LhMemPoint pt = {x->t, x->dev, x->host_mem};
		g_array_append_val(tr->mem, pt);
	}
}

static void mem_alloc(Sim *x, guint32 op)
{
	const LhOp *o = &x->ops[op];
	x->mem_changed |= o->out_bytes != 0;
	gint64 *pool = o->out_space == LH_SPACE_HOST ? &x->host_mem : &x->dev;
	if (G_UNLIKELY(o->out_bytes > (guint64)(G_MAXINT64 - *pool))) {
		if (!x->failed)
			g_set_error(x->error, LH_ENGINE_ERROR, LH_ENGINE_ERROR_INVALID,
			            "op '%s': its output of %" G_GUINT64_FORMAT
			            " bytes would take the "
			            "%s memory in use beyond 2^63 bytes",
			            o->name, o->out_bytes,
			            o->out_space == LH_SPACE_HOST ? "host" : "device");
		x->failed = TRUE;
		return;
	}
	if (o->out_space == LH_SPACE_HOST) {
		x->host_mem += (gint64)o->out_bytes;
		if (x->host_mem > x->tr->peak_host)
			x->tr->peak_host = x->host_mem;
		return;
	}
	x->dev += (gint64)o->out_bytes;
	if (x->dev > x->tr->peak_device) {
		x->tr->peak_device = x->dev;
		x->tr->peak_device_t = x->t;
	}
	if (x->dev > x->cap_bytes && !x->over) {
		x->over = TRUE;
		if (x->strict && !x->failed) {
			g_autofree char *used = lh_format_bytes((double)x->dev);
			g_autofree char *cap = lh_format_bytes((double)x->cap_bytes);
			g_autofree char *at = lh_format_ns((double)x->t);
			g_set_error(
			    x->error, LH_ENGINE_ERROR, LH_ENGINE_ERROR_MEMORY,
			    "device memory exceeded at t=%s when op '%s' started: %s in use, "
			    "capacity %s (%s)",
			    at, o->name, used, cap, x->hw->name);
			x->failed = TRUE;
		}
	}
}

static void mem_free(Sim *x, guint32 op)
{
	const LhOp *o = &x->ops[op];
	x->mem_changed |= o->out_bytes != 0;
	if (o->out_space == LH_SPACE_HOST)
		x->host_mem -= (gint64)o->out_bytes;
	else
		x->dev -= (gint64)o->out_bytes;
}

/* ---- queues ---- */

static void heap_push(Sim *x, guint32 q)
{
	if (x->in_heap[q] || x->qhead[q] == NONE)
		return;
	x->in_heap[q] = 1;
	guint32 i = x->heap_n++;
	x->heap[i] = q;
	while (i > 0) {
		guint32 pa = (i - 1) / 2;
		if (x->qhead[x->heap[pa]] <= x->qhead[x->heap[i]])
			break;
		guint32 tmp = x->heap[pa];
		x->heap[pa] = x->heap[i];
		x->heap[i] = tmp;
		i = pa;
	}
}

static guint32 heap_pop(Sim *x)
{
	guint32 q = x->heap[0];
	x->heap[0] = x->heap[--x->heap_n];
	for (guint32 i = 0;;) {
		guint32 l = 2 * i + 1, r = l + 1, s = i;
		if (l < x->heap_n && x->qhead[x->heap[l]] < x->qhead[x->heap[s]])
			s = l;
		if (r < x->heap_n && x->qhead[x->heap[r]] < x->qhead[x->heap[s]])
			s = r;
		if (s == i)
			break;
		guint32 tmp = x->heap[i];
		x->heap[i] = x->heap[s];
		x->heap[s] = tmp;
		i = s;
	}
	x->in_heap[q] = 0;
	return q;
}

static void stream_cmd_completed(Sim *x, guint32 s)
{
	x->s_outstanding[s]--;
	x->completed++;
}

static void fire(Sim *x, guint32 e)
{
	x->fired[e] = 1;
	for (guint32 q = x->ev_blocked[e]; q != NONE;) {
		guint32 nq = x->q_blocked_next[q];
		x->q_reg[q] = 0;
		heap_push(x, q);
		q = nq;
	}
	x->ev_blocked[e] = NONE;
}

/* Dispatches queue heads in plan order until none can go: always the lowest command index
 * among the heads that can leave. After a head leaves, its queue goes on only while its new
 * head is still the lowest in the heap; otherwise it goes back into the heap, so that a
 * lower-numbered head of another queue goes first. Returns TRUE if any did. */
static gboolean dispatch(Sim *x)
{
	gboolean any = FALSE;
	for (guint32 q = NONE;;) {
		if (q == NONE) {
			if (!x->heap_n)
				break;
			q = heap_pop(x);
		}
		guint32 c = x->qhead[q];
		if (c == NONE || c >= x->h) {
			q = NONE; /* issued later: host_issue pushes it again */
			continue;
		}
		const LhCmd *cmd = &x->cmds[c];
		guint32 s = cmd->stream;
		if (x->s_inflight[s] != NONE) {
			q = NONE; /* end_act pushes it again */
			continue;
		}
		if (cmd->kind == LH_CMD_WAIT && !x->fired[cmd->arg]) {
			if (!x->q_reg[q]) { /* fire pushes it again */
				x->q_reg[q] = 1;
				x->q_blocked_next[q] = x->ev_blocked[cmd->arg];
				x->ev_blocked[cmd->arg] = q;
			}
			q = NONE;
			continue;
		}
		/* Leaves the queue. Signals and waits complete now. */
		x->qhead[q] = x->qnext[c];
		any = TRUE;
		if (cmd->kind == LH_CMD_RUN) {
			guint32 op = (guint32)cmd->arg;
			const LhOp *o = &x->ops[op];
			x->s_inflight[s] = c;
			x->tr->ops[op].stream = (gint32)s;
			if (o->kind == LH_OP_COPY_H2D)
				fifo_push(&x->h2d_line, c);
			else if (o->kind == LH_OP_COPY_D2H)
				fifo_push(&x->d2h_line, c);
			else
				fifo_push(&x->sm_line, c);
		} else {
			if (cmd->kind == LH_CMD_SIGNAL)
				fire(x, (guint32)cmd->arg);
			stream_cmd_completed(x, s);
		}
		guint32 next = x->qhead[q];
		if (next == NONE || x->in_heap[q] || (x->heap_n && x->qhead[x->heap[0]] < next)) {
			heap_push(x, q);
			q = NONE;
		}
	}
	return any;
}

/* ---- engines ---- */

static void start_act(Sim *x, guint32 c, LhEngine eng, guint8 idx)
{
	const LhCmd *cmd = &x->cmds[c];
	guint32 op = (guint32)cmd->arg;
	const LhOp *o = &x->ops[op];
	Act a = {0};
	a.op = op;
	a.cmd = c;
	a.stream = cmd->stream;
	a.engine = eng;
	a.eng_idx = idx;
	a.seq = x->seq++;
	a.t_upd = x->t;
	a.eta = NEVER;
	a.rate = -1; /* forces a fresh eta at the next rate computation */
	double T = lh_op_standalone_ns_in(x->g, o, x->hw);
	gboolean dur = o->duration_ns >= 0;
	/* A kernel whose bytes need more than T at full HBM bandwidth (duration_ns with huge
	 * bytes) runs at 1 / hbm_use even alone: that is its real standalone time. */
	double hbm = eng == LH_ENGINE_SM ? lh_op_hbm_use(o, x->hw, T) : 0;
	double alone = hbm > 1 ? T * hbm : T;
	if (!(alone <= (double)LH_MAX_OP_NS) && !x->failed) {
		/* Beyond this, nanosecond event times would overflow (or a phase would never end).
		 */
		g_set_error(
		    x->error, LH_ENGINE_ERROR, LH_ENGINE_ERROR_INVALID,
		    "op '%s': its standalone duration on %s, %.3g ns, is beyond the engine's "
		    "range of %.0e ns (about 3 years): check its flops, bytes, size or "
		    "duration_ns",
		    o->name, x->hw->name, alone, (double)LH_MAX_OP_NS);
		x->failed = TRUE;
	}
	switch (eng) {
	case LH_ENGINE_SM:
		a.a = lh_op_sm_share(o, x->hw);
		a.b = hbm;
		a.phase = PH_MAIN;
		a.rem = T;
		break;
	case LH_ENGINE_H2D:
	case LH_ENGINE_D2H:
		a.phase = dur ? PH_MAIN : PH_LATENCY;
		a.rem = dur ? T : x->hw->copy_latency_ns;
		a.main_work = dur ? 0 : (double)o->size / x->hw->pcie_gbs;
		break;
	default:
		a.is_coll = 1;
		a.a = lh_op_sm_share(o, x->hw);
		a.phase = dur ? PH_MAIN : PH_LATENCY;
		{
			double lat, wire;
			lh_op_link_phases(x->g, o, x->hw, &lat, &wire, &a.lk, &a.nt);
			a.rem = dur ? T : lat;
			a.main_work = dur ? 0 : wire;
			if (dur) { /* a measured duration holds the link as before, or the network
				    */
				gboolean net = a.nt > 0;
				a.lk = net ? 0 : 1;
				a.nt = net ? 1 : 0;
			}
		}
		if (a.nt > 0) /* it leaves the node: the network's lane */
			eng = LH_ENGINE_NET;
		break;
	}
	LhOpTiming *tm = &x->tr->ops[op];
	tm->start = x->t;
	tm->engine = eng;
	tm->engine_index = idx;
	g_array_append_val(x->running, a);
	if (o->alias == LH_NO_OP) /* an alias writes into its dep's buffer */
		mem_alloc(x, op);
	x->dirty |= eng == LH_ENGINE_SM || eng == LH_ENGINE_LINK || eng == LH_ENGINE_NET
	                ? DIRTY_SM
	                : DIRTY_COPY;
}

/* Engine admissions in line order. Returns TRUE if any op started. */
static gboolean admit(Sim *x)
{
	gboolean any = FALSE;
	if (!x->sm_line.len && !x->h2d_line.len && !x->d2h_line.len)
		return FALSE;
	while (x->sm_line.len && x->resident < x->hw->max_resident_kernels) {
		guint32 c = fifo_pop(&x->sm_line);
		const LhOp *o = &x->ops[(guint32)x->cmds[c].arg];
		x->resident++;
		start_act(x, c, lh_op_kind_is_collective(o->kind) ? LH_ENGINE_LINK : LH_ENGINE_SM,
		          0);
		any = TRUE;
	}
	Fifo *lines[2] = {&x->h2d_line, &x->d2h_line};
	guint8 *busy[2] = {x->h2d_busy, x->d2h_busy};
	guint32 n_eng[2] = {x->hw->copy_engines_h2d, x->hw->copy_engines_d2h};
	for (int d = 0; d < 2; d++)
		for (guint32 e = 0; e < n_eng[d] && lines[d]->len && x->free_eng[d]; e++)
			if (!busy[d][e]) {
				busy[d][e] = 1;
				x->free_eng[d]--;
				start_act(x, fifo_pop(lines[d]), d ? LH_ENGINE_D2H : LH_ENGINE_H2D,
				          (guint8)e);
				any = TRUE;
			}
	return any;
}

/* ---- rates ---- */

static void set_rate(Sim *x, Act *a, double r)
{
	/* Rates below 1e-9 are rounding residue of a saturated capacity (1 - 0.25 - 0.75 is not
	 * always 0): they would move nothing before the next event, so they are 0. */
	if (r < 1e-9)
		r = 0;
	if (r > 1)
		r = 1;
	if (r == a->rate)
		return;
	if (a->rate > 0)
		a->rem -= a->rate * (double)(x->t - a->t_upd);
	if (a->rem < 0)
		a->rem = 0;
	a->t_upd = x->t;
	a->rate = r;
	if (r <= 0) {
		a->eta = NEVER;
		return;
	}
	double d = a->rem / r;
	d = ceil(d - 1e-6 - d * 1e-12);
	if (d > 4e18) { /* beyond any representable time: it will be rescheduled first */
		a->eta = NEVER;
		return;
	}
	/* t <= LH_MAX_TIME_NS (the main loop stops beyond it) and d <= 4e18: cannot wrap. */
	a->eta = x->t + (d < 0 ? 0 : (gint64)d);
}

static void rates_fifo(Sim *x)
{
	Act *acts = (Act *)x->running->data;
	guint32 n = x->running->len, m = 0, mn = 0;
	for (guint32 i = 0; i < n; i++) {
		m += acts[i].is_coll && acts[i].phase == PH_MAIN && acts[i].lk > 0;
		mn += acts[i].is_coll && acts[i].phase == PH_MAIN && acts[i].nt > 0;
	}
	double free_sm = 1, free_hbm = 1, link = 1, net = 1;
	for (guint32 i = 0; i < n; i++) {
		Act *a = &acts[i];
		if (a->engine != LH_ENGINE_SM && !a->is_coll)
			continue;
		double r = 1;
		if (a->a > 0)
			r = MIN(r, MAX(free_sm, 0) / a->a);
		if (a->b > 0)
			r = MIN(r, MAX(free_hbm, 0) / a->b);
		/* The link (NVLink) and the network are split evenly among the collectives in
		 * their wire phase that use them; one that uses a level at lk < 1 of its
		 * capacity (it is held back by the other level) takes up to 1/m of it. */
		if (a->is_coll && a->phase == PH_MAIN && a->lk > 0 && a->nt > 0) {
			r = MIN(r, MAX(link, 0) / (m * a->lk));
			r = MIN(r, MAX(net, 0) / (mn * a->nt));
			link -= r * a->lk;
			net -= r * a->nt;
			m--;
			mn--;
		} else if (a->is_coll && a->phase == PH_MAIN && a->lk > 0) {
			r = MIN(r, MAX(link, 0) / (m * a->lk));
			link -= r * a->lk;
			m--;
		} else if (a->is_coll && a->phase == PH_MAIN && a->nt > 0) {
			r = MIN(r, MAX(net, 0) / (mn * a->nt));
			net -= r * a->nt;
			mn--;
		}
		free_sm -= r * a->a;
		free_hbm -= r * a->b;
		set_rate(x, a, r);
	}
}

/* Max-min fair rates over SM, HBM and link capacity by progressive filling: every unfrozen
 * activity's rate rises together until a capacity it uses saturates (it freezes) or it
 * reaches 1. */
static void rates_fair(Sim *x)
{
	Act *acts = (Act *)x->running->data;
	guint32 n = x->running->len;
	g_autofree double *r = g_new0(double, n ? n : 1);
	g_autofree guint8 *frozen = g_new0(guint8, n ? n : 1);
	double used[4] = {0, 0, 0, 0};
	guint32 live = 0;
	for (guint32 i = 0; i < n; i++) {
		if (acts[i].engine != LH_ENGINE_SM && !acts[i].is_coll)
			frozen[i] = 1;
		else
			live++;
	}
	double level = 0;
	while (live) {
		double coef[4] = {0, 0, 0, 0};
		for (guint32 i = 0; i < n; i++)
			if (!frozen[i]) {
				gboolean wire = acts[i].is_coll && acts[i].phase == PH_MAIN;
				coef[0] += acts[i].a;
				coef[1] += acts[i].b;
				coef[2] += wire ? acts[i].lk : 0;
				coef[3] += wire ? acts[i].nt : 0;
			}
		double d = 1 - level;
		for (int k = 0; k < 4; k++)
			if (coef[k] > 0)
				d = MIN(d, MAX(1 - used[k], 0) / coef[k]);
		level += d;
		for (int k = 0; k < 4; k++)
			used[k] += d * coef[k];
		gboolean sat[4];
		for (int k = 0; k < 4; k++)
			sat[k] = coef[k] > 0 && used[k] >= 1 - 1e-12;
		for (guint32 i = 0; i < n; i++) {
			if (frozen[i])
				continue;
			r[i] = level;
			gboolean f = level >= 1 - 1e-12 || (sat[0] && acts[i].a > 0) ||
			             (sat[1] && acts[i].b > 0) ||
			             (sat[2] && acts[i].is_coll && acts[i].phase == PH_MAIN &&
			              acts[i].lk > 0) ||
			             (sat[3] && acts[i].is_coll && acts[i].phase == PH_MAIN &&
			              acts[i].nt > 0);
			if (f) {
				frozen[i] = 1;
				live--;
			}
		}
	}
	for (guint32 i = 0; i < n; i++)
		if (acts[i].engine == LH_ENGINE_SM || acts[i].is_coll)
			set_rate(x, &acts[i], r[i]);
}

static void rates_copies(Sim *x)
{
	Act *acts = (Act *)x->running->data;
	guint32 n = x->running->len;
	guint32 bytes_phase[2] = {0, 0};
	for (guint32 i = 0; i < n; i++)
		if ((acts[i].engine == LH_ENGINE_H2D || acts[i].engine == LH_ENGINE_D2H) &&
		    acts[i].phase == PH_MAIN)
			bytes_phase[acts[i].engine == LH_ENGINE_D2H]++;
	for (guint32 i = 0; i < n; i++) {
		Act *a = &acts[i];
		if (a->engine != LH_ENGINE_H2D && a->engine != LH_ENGINE_D2H)
			continue;
		if (a->phase == PH_LATENCY) {
			set_rate(x, a, 1);
			continue;
		}
		int d = a->engine == LH_ENGINE_D2H;
		/* Duplex is per direction: one direction can drop to about half while the
		 * other holds (docs/engine.md, "Durations and phases"). */
		double bw = bytes_phase[!d] ? lh_hw_duplex_gbs(x->hw, d) : x->hw->pcie_gbs;
		set_rate(x, a, bw / x->hw->pcie_gbs / bytes_phase[d]);
	}
}

static void recompute_rates(Sim *x)
{
	if (x->dirty & DIRTY_SM) {
		if (x->hw->sm_sharing == LH_SHARING_FAIR)
			rates_fair(x);
		else
			rates_fifo(x);
	}
	if (x->dirty & DIRTY_COPY)
		rates_copies(x);
	x->dirty = 0;
	x->next_eta = NEVER;
	const Act *acts = (const Act *)x->running->data;
	for (guint32 i = 0; i < x->running->len; i++)
		if (acts[i].eta < x->next_eta)
			x->next_eta = acts[i].eta;
}

/* ---- ends ---- */

static void end_act(Sim *x, guint32 i)
{
	Act a = g_array_index(x->running, Act, i);
	g_array_remove_index(x->running, i); /* keeps start order */
	LhOpTiming *tm = &x->tr->ops[a.op];
	tm->end = x->t;
	if (a.engine == LH_ENGINE_SM || a.engine == LH_ENGINE_LINK || a.engine == LH_ENGINE_NET) {
		x->resident--;
		x->dirty |= DIRTY_SM;
	} else {
		guint8 *busy = a.engine == LH_ENGINE_H2D ? x->h2d_busy : x->d2h_busy;
		busy[a.eng_idx] = 0;
		x->free_eng[a.engine == LH_ENGINE_D2H]++;
		x->dirty |= DIRTY_COPY;
	}
	const LhOp *o = &x->ops[a.op];
	const guint32 *deps = x->deps + o->deps_at;
	for (guint32 k = 0; k < o->n_deps; k++) {
		guint32 b = x->buf[deps[k]];
		if (x->consumers[b] != G_MAXUINT32 && --x->consumers[b] == 0)
			mem_free(x, b);
	}
	x->s_inflight[a.stream] = NONE;
	stream_cmd_completed(x, a.stream);
	heap_push(x, a.stream % x->Q);
}

/* Ends and phase changes due at x->t, in start order. */
static void process_due(Sim *x)
{
	for (guint32 i = 0; i < x->running->len;) {
		Act *a = &g_array_index(x->running, Act, i);
		if (a->eta != x->t) {
			i++;
			continue;
		}
		if (a->phase == PH_LATENCY) {
			a->phase = PH_MAIN;
			a->rem = a->main_work;
			a->t_upd = x->t;
			a->rate = -1;
			x->dirty |= a->engine == LH_ENGINE_SM || a->engine == LH_ENGINE_LINK ||
			                    a->engine == LH_ENGINE_NET
			                ? DIRTY_SM
			                : DIRTY_COPY;
			if (a->rem > 0) {
				i++;
				continue;
			}
		}
		end_act(x, i);
	}
}

/* ---- host ---- */

static gint64 issue_cost(Sim *x, const LhCmd *c)
{
	switch ((LhCmdKind)c->kind) {
	case LH_CMD_RUN:
		return x->launch;
	case LH_CMD_SIGNAL:
	case LH_CMD_WAIT:
		return x->event;
	case LH_CMD_HOST:
		return (gint64)MIN(c->arg, (guint64)G_MAXINT64 / 4);
	default:
		return 0;
	}
}

/* Sets host_next for command h, which the host starts at x->t; NEVER while a sync blocks. */
static void host_schedule(Sim *x)
{
	if (x->h >= x->n_cmds) {
		x->host_next = NEVER;
		return;
	}
	const LhCmd *c = &x->cmds[x->h];
	/* t <= LH_MAX_TIME_NS and a cost <= G_MAXINT64 / 4: the sum cannot wrap. */
	if (c->kind == LH_CMD_SYNC && x->s_outstanding[c->stream] > 0)
		x->host_next = NEVER;
	else
		x->host_next = x->t + issue_cost(x, c);
}

/* Issues every command due at x->t. Returns TRUE if any was. */
static gboolean host_issue(Sim *x)
{
	gboolean any = FALSE;
	for (;;) {
		if (x->h >= x->n_cmds)
			break;
		if (x->host_next == NEVER)
			host_schedule(x); /* a blocked sync may have been released */
		if (x->host_next != x->t)
			break;
		guint32 c = x->h++;
		const LhCmd *cmd = &x->cmds[c];
		x->tr->cmd_issue[c] = x->t;
		if (cmd->kind == LH_CMD_RUN)
			x->tr->ops[cmd->arg].issue = x->t;
		if (cmd->kind != LH_CMD_HOST && cmd->kind != LH_CMD_SYNC) {
			x->s_outstanding[cmd->stream]++;
			heap_push(x, cmd->stream % x->Q);
		}
		any = TRUE;
		host_schedule(x);
	}
	return any;
}

/* ---- deadlock ---- */

static void report_deadlock(Sim *x)
{
	GString *m = g_string_new("deadlock: no event is pending and commands remain:");
	const LhPlan *p = x->p;
	if (x->h < x->n_cmds) {
		const LhCmd *c = lh_plan_cmd(p, x->h);
		if (c->kind == LH_CMD_SYNC)
			g_string_append_printf(m, " the host is stuck at command %u (sync %s);",
			                       x->h + 1, lh_plan_stream(p, c->stream)->name);
	}
	for (guint32 q = 0; q < x->Q; q++) {
		guint32 c = x->qhead[q];
		if (c == NONE)
			continue;
		const LhCmd *cmd = lh_plan_cmd(p, c);
		const char *sn = lh_plan_stream(p, cmd->stream)->name;
		if (c >= x->h)
			continue; /* not issued: the host explains it */
		if (cmd->kind == LH_CMD_WAIT) {
			char b[32];
			const char *en = lh_plan_event_name(p, cmd->arg, b);
			g_string_append_printf(
			    m,
			    " stream '%s' is stuck at command %u (wait %s %s): event "
			    "%s never fires;",
			    sn, c + 1, sn, en, en);
		} else
			g_string_append_printf(m, " stream '%s' is stuck at command %u (%s %s);",
			                       sn, c + 1, lh_cmd_kind_name(cmd->kind), sn);
		/* Streams of this queue behind the head are blocked by it (false dependency). */
		for (guint32 d = x->qnext[c]; d != NONE && d < x->h; d = x->qnext[d]) {
			guint32 s2 = lh_plan_cmd(p, d)->stream;
			if (s2 != cmd->stream) {
				g_string_append_printf(
				    m, " stream '%s' waits behind it in hardware queue %u;",
				    lh_plan_stream(p, s2)->name, q);
				break;
			}
		}
	}
	g_string_truncate(m, m->len - 1);
	g_set_error_literal(x->error, LH_ENGINE_ERROR, LH_ENGINE_ERROR_DEADLOCK, m->str);
	g_string_free(m, TRUE);
	x->failed = TRUE;
}

/* The next instant, @next, is beyond LH_MAX_TIME_NS: an input error naming what is due then
 * (the host's next command, or the op whose phase ends). Every time before it was in range,
 * so no sum of times wrapped. */
static void report_time_range(Sim *x, gint64 next)
{
	const LhOp *o = NULL;
	const char *what = "issue its next command";
	if (x->host_next == next) {
		const LhCmd *c = &x->cmds[x->h];
		if (c->kind == LH_CMD_RUN) {
			o = &x->ops[c->arg];
			what = "be issued";
		}
	} else {
		const Act *acts = (const Act *)x->running->data;
		for (guint32 i = 0; i < x->running->len; i++)
			if (acts[i].eta == next) {
				o = &x->ops[acts[i].op];
				what =
				    acts[i].phase == PH_LATENCY ? "end its latency phase" : "end";
				break;
			}
	}
	g_set_error(x->error, LH_ENGINE_ERROR, LH_ENGINE_ERROR_INVALID,
	            "%s%s%s would %s at t = %.3g ns, beyond the engine's time range of %.0e ns "
	            "(about 127 years): the input's times add up to more than lhsim can represent",
	            o ? "op '" : "", o ? o->name : "the host", o ? "'" : "", what, (double)next,
	            (double)LH_MAX_TIME_NS);
	x->failed = TRUE;
}

/* ---- main loop ---- */

LhTrace *lh_simulate(const LhGraph *g, const LhHw *hw, const LhPlan *plan, const LhSimOptions *opt,
                     gboolean *over_memory, GError **error)
{
	g_return_val_if_fail(g && hw && plan && lh_graph_is_finished(g), NULL);
	LhSimOptions defaults = {0};
	if (!opt)
		opt = &defaults;
	if (over_memory)
		*over_memory = FALSE;
	if (!opt->skip_validate) {
		g_autoptr(GError) e = NULL;
		if (!lh_plan_validate(plan, g, NULL, &e)) {
			g_set_error_literal(error, LH_ENGINE_ERROR,
			                    strstr(e->message, "the plan deadlocks")
			                        ? LH_ENGINE_ERROR_DEADLOCK
			                        : LH_ENGINE_ERROR_INVALID,
			                    e->message);
			return NULL;
		}
	}
	guint32 n_ops = lh_graph_n_ops(g);
	Sim x = {0};
	x.g = g;
	x.hw = hw;
	x.p = plan;
	x.error = error;
	x.strict = opt->strict_memory;
	x.n_cmds = lh_plan_n_cmds(plan);
	x.S = lh_plan_n_streams(plan);
	x.Q = MIN(hw->hw_queues, MAX(x.S, 1));
	x.E = lh_plan_n_events(plan);
	x.launch = round_cost(hw->launch_ns);
	x.event = round_cost(hw->event_ns);
	x.cap_bytes = (gint64)(hw->memory_gib * 1073741824.0);
	x.cmds = lh_plan_cmds(plan, NULL);
	x.ops = lh__graph_ops(g);
	x.deps = lh__graph_dep_array(g);
	x.tr = lh_trace_new(n_ops, x.n_cmds);
	x.tr->source = g_strdup("simulated");

	x.qnext = g_new(guint32, MAX(x.n_cmds, 1));
	x.qhead = g_new(guint32, x.Q);
	x.qtail = g_new(guint32, x.Q);
	x.q_blocked_next = g_new(guint32, x.Q);
	x.heap = g_new(guint32, x.Q);
	x.in_heap = g_new0(guint8, x.Q);
	x.q_reg = g_new0(guint8, x.Q);
	for (guint32 q = 0; q < x.Q; q++)
		x.qhead[q] = x.qtail[q] = NONE;
	for (guint32 c = 0; c < x.n_cmds; c++) {
		const LhCmd *cmd = lh_plan_cmd(plan, c);
		x.qnext[c] = NONE;
		if (cmd->kind == LH_CMD_HOST || cmd->kind == LH_CMD_SYNC)
			continue;
		guint32 q = cmd->stream % x.Q;
		if (x.qtail[q] == NONE)
			x.qhead[q] = c;
		else
			x.qnext[x.qtail[q]] = c;
		x.qtail[q] = c;
		x.n_stream_cmds++;
	}
	x.ev_blocked = g_new(guint32, MAX(x.E, 1));
	for (guint32 e = 0; e < x.E; e++)
		x.ev_blocked[e] = NONE;
	x.fired = g_new0(guint8, MAX(x.E, 1));
	x.s_inflight = g_new(guint32, MAX(x.S, 1));
	for (guint32 s = 0; s < x.S; s++)
		x.s_inflight[s] = NONE;
	x.s_outstanding = g_new0(guint32, MAX(x.S, 1));
	x.running = g_array_new(FALSE, FALSE, sizeof(Act));
	x.h2d_busy = g_new0(guint8, hw->copy_engines_h2d);
	x.d2h_busy = g_new0(guint8, hw->copy_engines_d2h);
	x.free_eng[0] = hw->copy_engines_h2d;
	x.free_eng[1] = hw->copy_engines_d2h;
	x.consumers = g_new0(guint32, MAX(n_ops, 1));
	x.buf = g_new(guint32, MAX(n_ops, 1));

	/* Inputs are live from 0; every buffer waits for the consumers of the op that allocated
	 * it and of every op aliasing it (docs/engine.md, Memory). An alias is a dep, so in
	 * topological order it has its buffer before the op that aliases it. */
	const guint32 *topo = lh_graph_topo(g);
	for (guint32 t = 0; t < n_ops; t++) {
		guint32 i = topo[t];
		const LhOp *o = &x.ops[i];
		x.buf[i] = o->alias == LH_NO_OP ? i : x.buf[o->alias];
		guint32 ns, *c = &x.consumers[x.buf[i]];
		lh_graph_succs(g, i, &ns);
		if (ns == 0)
			*c = G_MAXUINT32;
		else if (*c != G_MAXUINT32)
			*c += ns;
	}
	for (guint32 i = 0; i < n_ops; i++)
		if (x.ops[i].kind == LH_OP_INPUT)
			mem_alloc(&x, i);
	mem_point(&x);
	host_schedule(&x);
	/* The host pays the executable's launch (step_overhead_ns) once, before it starts
	 * issuing the first command (docs/engine.md, "The host"). */
	if (x.host_next != NEVER)
		x.host_next += round_cost(hw->step_overhead_ns);

	x.next_eta = NEVER;
	while (!x.failed) {
		if (x.t == x.next_eta)
			process_due(&x);
		gboolean changed;
		/* Issues and dispatches feed each other (a dispatched signal can release a host
		 * sync); admissions start ops and feed neither, so they come once, after. */
		do {
			changed = host_issue(&x);
			changed |= dispatch(&x);
		} while (changed && !x.failed && x.host_next == NEVER && x.h < x.n_cmds);
		admit(&x);
		if (x.failed)
			break;
		if (x.dirty)
			recompute_rates(&x);
		if (x.mem_changed) {
			mem_point(&x);
			x.mem_changed = FALSE;
		}
		/* Only ends and phase changes move etas, and they set dirty: between them the
		 * cached earliest eta stands (steps that only issue host commands are O(1)). */
		gint64 next = MIN(x.host_next, x.next_eta);
		if (next == NEVER) {
			if (x.h < x.n_cmds || x.completed < x.n_stream_cmds)
				report_deadlock(&x);
			break;
		}
		if (G_UNLIKELY(next > LH_MAX_TIME_NS)) {
			report_time_range(&x, next);
			break;
		}
		x.t = next;
	}

	g_free(x.qnext);
	g_free(x.qhead);
	g_free(x.qtail);
	g_free(x.q_blocked_next);
	g_free(x.heap);
	g_free(x.in_heap);
	g_free(x.q_reg);
	g_free(x.ev_blocked);
	g_free(x.fired);
	g_free(x.s_inflight);
	g_free(x.s_outstanding);
	g_array_unref(x.running);
	g_free(x.sm_line.v);
	g_free(x.h2d_line.v);
	g_free(x.d2h_line.v);
	g_free(x.h2d_busy);
	g_free(x.d2h_busy);
	g_free(x.consumers);
	g_free(x.buf);
	if (x.failed) {
		lh_trace_free(x.tr);
		return NULL;
	}
	x.tr->host_end = x.n_cmds ? x.tr->cmd_issue[x.n_cmds - 1] : 0;
	if (over_memory)
		*over_memory = x.over;
	return x.tr;
}
