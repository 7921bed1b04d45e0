/* lhsim — the discrete-event engine. The rules are docs/engine.md; this file
 * follows docs/engine.md section by section.
 *
 * Time is integer nanoseconds. Between two instants every running activity progresses
 * linearly at its rate; rates are recomputed only when the running set changes (a start, an
 * end or a phase change). An activity's work is measured in standalone nanoseconds, so rate 1
 * means "as fast as alone". An op's standalone costs are computed at its start, from
 * per-hardware constants computed once (sim/cost-private.h): a per-op array of them, filled
 * before the loop, cost more in page faults and memory traffic at 10^6 ops than the arithmetic. The
 * running set is a list in start order over a pool of slots (an end unlinks its slot, no array
 * shifts). It is small (bounded by resident kernels plus copy engines), so the next instant is
 * found by a scan of it, cached between rate recomputations; under fifo sharing a start only rates
 * the activities appended since the last full recomputation, from the capacity the earlier ones
 * left (the same arithmetic, in the same order, as a full pass, so the same doubles). The tie order
 * at one instant is fixed (ends in start order, then host issues, then dispatches in plan order,
 * then engine admissions in line order), which makes every run of the same inputs identical.
 *
 * A graph placed on devices runs one Sim per device (its host, queues, engines, memory and
 * hardware) in the same loop; they meet only at rendezvous (Rdv): the parts of a collective,
 * or a send and its recv, which wait resident until the last arrives, then move together at the
 * slowest part's rate (docs/engine.md, "Several devices"). A graph without placement is one
 * Sim, and its runs are those of the engine before devices (tests/test-engine-ref.c).
 */
#include "sim/engine.h"
#include "sim/cost-private.h"
#include "sim/engine-private.h"
#include "sim/graph-private.h"
#include "sim/pages-private.h"
#include "sim/plan-private.h"
#include "sim/trace-private.h"

#include <math.h>
#include <string.h>

/* The quark's name is a string with dashes, which clang-format would space. */
/* clang-format off */
G_DEFINE_QUARK(lh-engine-error-quark, lh_engine_error)
/* clang-format on */

#define NONE G_MAXUINT32
#define DIRTY_SM 1u      /* the SM/link running set changed */
#define DIRTY_COPY 2u    /* the copy running set changed */
#define DIRTY_SM_FULL 4u /* ... by an end or a phase change: every SM/link rate may move */
#define NEVER G_MAXINT64

/* PH_WAIT: a part of a rendezvous (a collective's part on one device, a send or a recv) that is
 * resident and waits for the other parts (docs/engine.md, "Several devices"). */
typedef enum { PH_LATENCY, PH_MAIN, PH_WAIT } Phase;

typedef struct {
	guint32 op, cmd, stream;
	guint8 engine;  /* LhEngine */
	guint8 eng_idx; /* copy engine index */
	guint8 phase;   /* Phase */
	guint8 is_coll; /* a collective: SM share plus the link and/or network in its main phase */
	double a;       /* SM share at rate 1 */
	double b;       /* HBM share at rate 1 */
	double rem;     /* standalone ns left in this phase, as of t_upd */
	double main_work; /* standalone ns of the main phase (after latency) */
	double lk;        /* collectives' main phase: NVLink (the link) use at rate 1 */
	double nt;        /* collectives' main phase: network use at rate 1 */
	double rate;
	gint64 t_upd;
	gint64 eta;         /* end of this phase at the current rate, or NEVER */
	guint32 prev, next; /* the running list, in start order (slot indices, NONE at the ends) */
	guint32 rv;         /* the rendezvous it is a part of (World.rdv), or NONE: then its rate is
	                       the share it holds on its device, and the rendezvous keeps the work */
} Act;

/* An op's standalone costs on this hardware (docs/engine.md, "Durations and phases"): what a
 * start needs. */
typedef struct {
	double first; /* work of the first phase: T, or the copy's or collective's latency */
	double a;     /* SM share at rate 1 */
	double x;     /* kernels (the SM engine): HBM share at rate 1; copies and collectives:
	                 work of the main phase after a latency phase, else 0 */
} OpCost;

/* op_cost's flags: */
#define COST_LATENCY 1u  /* the op starts with a latency phase */
#define COST_TOO_LONG 2u /* its standalone time is beyond LH_MAX_OP_NS: an error if it starts */
#define COST_NET 4u      /* a collective that leaves the node: the network's lane */
/* Sim.cflags, per op, set before the loop: */
#define COST_SYNC 16u /* a part of a rendezvous (LhOp.sync) */
/* The op's line and engine class (two bits), and whether a start allocates nothing: dispatch,
 * admission and start read them here rather than from the op (LhOp is 128 bytes a record, so
 * every read of it at 10^6 ops is a cache miss). */
#define COST_CLASS 96u /* mask: */
#define COST_KERNEL 0u /* the SM line, a kernel */
#define COST_H2D 32u   /* the H2D line */
#define COST_D2H 64u   /* the D2H line */
#define COST_COLL 96u  /* the SM line, a collective (the link or the network) */
#define COST_NOALLOC                                                                               \
	128u /* an alias (it writes into its dep's buffer) or an empty output: its                 \
	        start leaves memory as it is (mem_alloc would add 0 bytes) */

/* A FIFO of u32 (engine lines), in a ring whose size is a power of two (a mask, not a
 * division, wraps an index). */
typedef struct {
	guint32 *v;
	guint32 head, len, cap;
} Fifo;

static void fifo_grow(Fifo *f)
{
	guint32 ncap = f->cap ? 2 * f->cap : 16;
	guint32 *nv = g_new(guint32, ncap);
	for (guint32 i = 0; i < f->len; i++)
		nv[i] = f->v[(f->head + i) & (f->cap - 1)];
	g_free(f->v);
	f->v = nv;
	f->head = 0;
	f->cap = ncap;
}

G_ALWAYS_INLINE static inline void fifo_push(Fifo *f, guint32 x)
{
	if (G_UNLIKELY(f->len == f->cap))
		fifo_grow(f);
	f->v[(f->head + f->len++) & (f->cap - 1)] = x;
}

G_ALWAYS_INLINE static inline guint32 fifo_pop(Fifo *f)
{
	guint32 x = f->v[f->head];
	f->head = (f->head + 1) & (f->cap - 1);
	f->len--;
	return x;
}

typedef struct World World;

/* One device: its host, queues, engines and memory. A graph without placement is one. */
typedef struct {
	World *w;
	guint32 d; /* device index */
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
	guint32 hc;           /* the next command of this device to issue (a plan index), n_cmds
	                         when all are: a command c of this device is issued iff c < hc */
	const guint32 *dnext; /* per command: the next command of the same device (n_cmds after
	                         the last); NULL for one device (then it is c + 1) */
	const guint32 *sq;    /* per stream (shared): its queue among its device's queues */
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
	Act *acts;                  /* slots of the running list */
	guint32 n_slots, free_slot; /* slots made; first free slot (linked through next) */
	guint32 run_head, run_tail; /* the running list in start order */
	guint32 append_from; /* first SM/link activity appended since the last full rating, or
	                        NONE (fifo: only those need a rate) */
	double tail_sm, tail_hbm, tail_link, tail_net; /* fifo: capacity left after the last
	                         rated one */
	guint8 *cflags;                                /* per op: COST_* */
	/* The trace's issue times and op timings, written first by a helper (simulate): those of
	 * commands below cmd_ready and ops below op_ready are written, more as the helper's fills
	 * go on (trace_ready). */
	LhPages *tr_pages; /* NULL when the trace was set up front */
	LhFill *cmd_fill, *op_fill;
	guint32 cmd_ready, op_ready;
	LhCostCtx cx; /* the cost model's constants for this device's hardware (read-only) */
	double slow;  /* this device's straggler factor (LhSimOptions.slow), 1 if none */
	Fifo sm_line, h2d_line, d2h_line;
	guint32 resident;
	guint8 *h2d_busy, *d2h_busy;
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
	guint mem_n;          /* run_one: the points in tr->mem (its length counts spare room) */
	guint mem_next;       /* run_one: the room below is written (by the helper, or never handed
	                         over): mem_point_one's slow path is due when mem_n reaches it */
	guint mem_first;      /* run_one: where the room's first stretch starts */
	guint mem_handed;     /* run_one: stretches handed to the helper; G_MAXUINT: none will be */
	LhFill **mem_fill;    /* run_one: the fill of each stretch handed over */
	LhPages *mem_pages;   /* run_one: tr_pages, or its own (to free) when that is NULL */
	gint64 cap_bytes;
	gint64 *pk, *pk_t; /* where this device's peak goes: the trace's peak, or dev_peak[d] */
	gint64 *pk_host;   /* the trace's peak_host (one device), else a scratch */
	gint64 pk_host_own;
	guint32 last_cmd; /* this device's last command, or NONE */
	gboolean over;
	gboolean strict;
	GError **error;
} Sim;

/* A rendezvous in progress (docs/engine.md, "Several devices"): the parts of one collective
 * across devices, or a send and its recv. It keeps the work of its phases; every part holds its
 * share on its device, and the rendezvous moves at the slowest part's rate. */
typedef struct {
	const guint32 *parts; /* ops, by device */
	guint32 k, arrived;
	guint8 phase;   /* PH_WAIT until the last part arrives */
	guint8 touched; /* in World.touched */
	double rem, main_work, rate;
	gint64 t_upd, eta;
} Rdv;

struct World {
	Sim *dev;
	guint32 D;
	gboolean failed;
	gboolean multi; /* the graph is placed on devices */
	gint64 t;
	Rdv *rdv;         /* by sync index */
	guint32 *op_slot; /* per op with a sync: the slot of its running part, on its device */
	guint32 *op_cmd;  /* multi: per op, the command that runs it */
	guint32 *touched; /* rendezvous whose parts' rates changed at this instant */
	guint32 n_touched;
	guint8 *eta_stale; /* per device: a part's eta moved, rescan its next_eta */
	struct CkCtl *ckc; /* checkpoints to take or restore (engine-private.h), or NULL */
};

/* Checkpoints (the block "checkpoints" at the end): one is taken at the start of an instant of
 * a graph without placement, before anything due then is done. */
typedef struct CkCtl CkCtl;
static void ck_at_instant(World *w, const Sim *x, gint64 t);

/* ceil(@v), up to the sign of a zero (ceil gives -0 in (-1, 0), this +0; callers only compare
 * it and convert it to an integer): without SSE4.1 (the baseline x86-64 target) ceil is a
 * library call of about 25 instructions. Below 2^52 in magnitude the truncation to an integer
 * is exact, and from 2^52 on every double is an integer (so is ceil's result, as are inf and
 * NaN: v itself). */
static inline double ceil_exact(double v)
{
	if (!(v > -4503599627370496.0 && v < 4503599627370496.0))
		return v;
	double t = (double)(gint64)v;
	return t < v ? t + 1 : t;
}

static gint64 round_cost(double ns)
{
	return ns <= 0 ? 0 : (gint64)llround(ns);
}

/* ---- memory ---- */

/* Points in a stretch of the room that the page helper writes ahead: 4 MiB of them. */
#define MEM_AHEAD ((guint)((4u << 20) / sizeof(LhMemPoint)))

/* Waits until every stretch handed to the helper is written, and hands no more over: before the
 * points' array can grow or its length drop (with glib's gc-friendly debugging the drop zeroes
 * the room past the points). */
static void mem_settle(Sim *x)
{
	if (x->mem_handed != G_MAXUINT)
		for (guint j = 0; j < x->mem_handed; j++)
			lh__fill_wait(x->mem_fill[j], G_MAXSIZE);
	x->mem_handed = G_MAXUINT;
}

/* run_one's points are written in order into room reserved up front (run_one), 48 MB for a
 * serial plan of 10^6 ops, and each new page faulted on its first write: all of lh_simulate's
 * page faults at that size (bench-engine --serial, perf; issue 12). When the room is large,
 * the page helper writes it first (zeros, lh__pages_fill), a stretch of MEM_AHEAD points at a
 * time, two stretches ahead of the one the engine writes in: at most 8 MiB are written and left
 * unused. mem_room is due when mem_n reaches mem_next: it hands stretches over and waits for
 * the one mem_n is in, or grows the array when its room is full. */
static void mem_room(Sim *x)
{
	GArray *mem = x->tr->mem;
	if (x->mem_n == mem->len) {
		/* Full (beyond run_one's cap): the array may move, so the helper must be done
		 * with it. GArray grows its room to a power of two, as appends would; the room
		 * past the cap faults as it comes. */
		mem_settle(x);
		g_array_set_size(mem, x->mem_n + 4096);
		x->mem_next = mem->len;
	} else if (x->mem_handed == G_MAXUINT) { /* no stretches: nothing to wait for */
		x->mem_next = mem->len;
	} else {
		guint j = (x->mem_n - x->mem_first) / MEM_AHEAD;
		LhMemPoint *pts = (LhMemPoint *)(void *)mem->data;
		const LhMemPoint zero = {0, 0, 0};
		for (; x->mem_handed <= j + 2; x->mem_handed++) {
			guint from = x->mem_first + x->mem_handed * MEM_AHEAD;
			if (from >= mem->len)
				break;
			x->mem_fill[x->mem_handed] =
			    lh__pages_fill(x->mem_pages, pts + from,
			                   MIN(MEM_AHEAD, mem->len - from), &zero, sizeof zero);
		}
		guint from = x->mem_first + j * MEM_AHEAD;
		x->mem_next = from + (guint)lh__fill_wait(x->mem_fill[j], x->mem_n - from);
	}
}

/* Waits until the helper has written command @c's issue time and, when c runs an op, op @op's
 * timing (@op is NONE for another kind of command: a graph may have no ops). The first writes
 * to the trace's arrays are the helper's, and the host's first touch of a command or an op is
 * its issue (dispatch, start and end come after). */
static G_NO_INLINE void trace_ready(Sim *x, guint32 c, guint32 op)
{
	if (c >= x->cmd_ready)
		x->cmd_ready = (guint32)lh__fill_wait(x->cmd_fill, c);
	if (op != NONE && op >= x->op_ready)
		x->op_ready = (guint32)lh__fill_wait(x->op_fill, op);
}

/* One point per instant of the memory in use, for a graph without placement. While run_one
 * runs, tr->mem holds mem_n points and spare room after them (mem_reserve): a point is then a
 * store, not a call (g_array_append_val cost about 80 instructions per point). */
G_ALWAYS_INLINE static inline void mem_point_one(Sim *x)
{
	LhTrace *tr = x->tr;
	LhMemPoint *pts = (LhMemPoint *)(void *)tr->mem->data;
	LhMemPoint *last = x->mem_n ? &pts[x->mem_n - 1] : NULL;
	if (last && last->t == x->t) {
		last->device_bytes = x->dev;
		last->host_bytes = x->host_mem;
	} else if (!last || last->device_bytes != x->dev || last->host_bytes != x->host_mem) {
		if (G_UNLIKELY(x->mem_n == x->mem_next)) {
			mem_room(x);
			pts = (LhMemPoint *)(void *)tr->mem->data;
		}
		pts[x->mem_n++] = (LhMemPoint){x->t, x->dev, x->host_mem};
	}
}

/* One point per instant of the memory in use, summed over devices (sim/trace.h); the
 * per-device peaks are kept at each allocation (mem_alloc). */
static void mem_point(World *w)
{
	LhTrace *tr = w->dev[0].tr;
	gint64 dev = w->dev[0].dev, host = w->dev[0].host_mem;
	for (guint32 d = 1; d < w->D; d++) {
		dev += w->dev[d].dev;
		host += w->dev[d].host_mem;
	}
	if (w->multi) {
		/* Several hosts: their sum's peak, at the end of an instant (ends free before
		 * starts allocate, so no instant's sum peaks earlier within it). */
		if (host > tr->peak_host)
			tr->peak_host = host;
	}
	LhMemPoint *last =
	    tr->mem->len ? &g_array_index(tr->mem, LhMemPoint, tr->mem->len - 1) : NULL;
	if (last && last->t == w->t) {
		last->device_bytes = dev;
		last->host_bytes = host;
	} else if (!last || last->device_bytes != dev || last->host_bytes != host) {
		LhMemPoint pt = {w->t, dev, host};
		g_array_append_val(tr->mem, pt);
	}
}

G_ALWAYS_INLINE static inline void mem_alloc(Sim *x, guint32 op)
{
	const LhOp *o = &x->ops[op];
	x->mem_changed |= o->out_bytes != 0;
	gint64 *pool = o->out_space == LH_SPACE_HOST ? &x->host_mem : &x->dev;
	if (G_UNLIKELY(o->out_bytes > (guint64)(G_MAXINT64 - *pool))) {
		if (!x->w->failed)
			g_set_error(x->error, LH_ENGINE_ERROR, LH_ENGINE_ERROR_INVALID,
			            "op '%s': its output of %" G_GUINT64_FORMAT
			            " bytes would take the "
			            "%s memory in use beyond 2^63 bytes",
			            o->name, o->out_bytes,
			            o->out_space == LH_SPACE_HOST ? "host" : "device");
		x->w->failed = TRUE;
		return;
	}
	if (o->out_space == LH_SPACE_HOST) {
		x->host_mem += (gint64)o->out_bytes;
		if (x->host_mem > *x->pk_host)
			*x->pk_host = x->host_mem;
		return;
	}
	x->dev += (gint64)o->out_bytes;
	if (x->dev > *x->pk) {
		*x->pk = x->dev;
		*x->pk_t = x->t;
	}
	if (x->dev > x->cap_bytes && !x->over) {
		x->over = TRUE;
		if (x->strict && !x->w->failed) {
			g_autofree char *used = lh_format_bytes((double)x->dev);
			g_autofree char *cap = lh_format_bytes((double)x->cap_bytes);
			g_autofree char *at = lh_format_ns((double)x->t);
			g_autofree char *dn =
			    x->w->multi ? g_strdup_printf(" of device %u", x->d) : g_strdup("");
			g_set_error(
			    x->error, LH_ENGINE_ERROR, LH_ENGINE_ERROR_MEMORY,
			    "device memory%s exceeded at t=%s when op '%s' started: %s in use, "
			    "capacity %s (%s)",
			    dn, at, o->name, used, cap, x->hw->name);
			x->w->failed = TRUE;
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

/* Queue @q goes into the heap if its head may leave. Not if its head is not issued yet (the
 * issue pushes it, NONE included: every command is below NONE), nor if its head's stream runs
 * a command (its end pushes it): dispatch would only pop it again. */
static void heap_push(Sim *x, guint32 q)
{
	guint32 c = x->qhead[q];
	if (x->in_heap[q] || c >= x->hc || x->s_inflight[x->cmds[c].stream] != NONE)
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

G_ALWAYS_INLINE static inline guint32 heap_pop(Sim *x)
{
	guint32 q = x->heap[0];
	x->heap[0] = x->heap[--x->heap_n];
	for (guint32 i = 0; x->heap_n > 1;) {
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
G_ALWAYS_INLINE static inline gboolean dispatch(Sim *x)
{
	gboolean any = FALSE;
	for (guint32 q = NONE;;) {
		if (q == NONE) {
			if (!x->heap_n)
				break;
			q = heap_pop(x);
		}
		guint32 c = x->qhead[q];
		if (c == NONE || c >= x->hc) {
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
			guint8 cl = x->cflags[op] & COST_CLASS;
			x->s_inflight[s] = c;
			x->tr->ops[op].stream = (gint32)s;
			if (cl == COST_H2D)
				fifo_push(&x->h2d_line, c);
			else if (cl == COST_D2H)
				fifo_push(&x->d2h_line, c);
			else
				fifo_push(&x->sm_line, c);
		} else {
			if (cmd->kind == LH_CMD_SIGNAL)
				fire(x, (guint32)cmd->arg);
			stream_cmd_completed(x, s);
		}
		guint32 next = x->qhead[q];
		if (next >= x->hc || x->s_inflight[x->cmds[next].stream] != NONE) {
			/* Not issued, or its stream runs (often the one just dispatched): its issue
			 * or end pushes it (NONE is above every command). */
			q = NONE;
			continue;
		}
		if (x->in_heap[q] || (x->heap_n && x->qhead[x->heap[0]] < next)) {
			heap_push(x, q);
			q = NONE;
		}
	}
	return any;
}

/* ---- engines ---- */

/* lh_op_kind_is_collective (sim/graph.c), inlined: the setup pass asks it per op. */
static inline gboolean kind_is_coll(guint8 k)
{
	return k >= LH_OP_ALL_REDUCE && k <= LH_OP_RECV;
}

/* The engine an op runs on: the admission line's choice (the SM line holds kernels and
 * collectives), and the network for a collective whose main phase uses the network (@nt > 0),
 * as a start records it in the trace (its lane). */
static LhEngine op_engine(const LhOp *o, double nt)
{
	if (o->kind == LH_OP_COPY_H2D)
		return LH_ENGINE_H2D;
	if (o->kind == LH_OP_COPY_D2H)
		return LH_ENGINE_D2H;
	if (!kind_is_coll(o->kind))
		return LH_ENGINE_SM;
	return nt > 0 ? LH_ENGINE_NET : LH_ENGINE_LINK;
}

/* Fills @c with op @o's costs in graph @g on the hardware of @cx (its device's) with straggler
 * factor @slow, and *@lk, *@nt with a collective's link and network use (1 and 0 for anything
 * else): the cost model's values (sim/cost.c), by the same calls or expressions in the same
 * order, so the same doubles. Returns COST_LATENCY, COST_TOO_LONG and COST_NET flags. A start
 * calls it, and a rendezvous again for its parts when it begins. */
G_ALWAYS_INLINE static inline guint8 op_cost(const LhGraph *g, const LhOp *o, const LhCostCtx *cx,
                                             double slow, OpCost *c, double *lk, double *nt)
{
	const LhHw *hw = cx->hw;
	*lk = 1;
	*nt = 0;
	if (o->kind == LH_OP_INPUT) {
		/* Never runs: lh_op_standalone_ns_in's 0, no SM share, no HBM use. */
		c->first = c->a = c->x = 0;
		return 0;
	}
	gboolean dur = o->duration_ns >= 0;
	gboolean coll = kind_is_coll(o->kind);
	double lat = 0, wire = 0, T;
	/* A kernel or copy-d2d without duration_ns (most ops): T from the constants of cx, and
	 * the bytes and bandwidth of its HBM use. */
	gboolean kern = !dur && (o->kind == LH_OP_KERNEL || o->kind == LH_OP_COPY_D2D);
	if (kern) {
		/* The SM engine's case below, without the general path's tests. */
		double bytes, bw;
		T = lh__kernel_ns(cx, o, &bytes, &bw);
		if (slow != 1)
			T *= slow;
		double hbm = T <= 0 || bytes <= 0 ? 0 : bytes / T / bw; /* lh_op_hbm_use's */
		double alone = hbm > 1 ? T * hbm : T;
		c->a = o->kind == LH_OP_KERNEL ? o->sm : 0.1; /* lh_op_sm_share's */
		c->x = hbm;
		if (!(alone <= (double)LH_MAX_OP_NS)) {
			c->first = alone;
			return COST_TOO_LONG;
		}
		c->first = T;
		return 0;
	}
	if (coll) {
		/* lh_op_standalone_ns_in's collective case (duration_ns, else latency plus wire)
		 * from the one lh_op_link_phases call: the same doubles, half the cost model's
		 * work. */
		lh_op_link_phases(g, o, hw, &lat, &wire, lk, nt);
		T = dur ? (double)o->duration_ns : lat + wire;
		if (dur) { /* a measured duration holds the link as before, or the network */
			gboolean net = *nt > 0;
			*lk = net ? 0 : 1;
			*nt = net ? 1 : 0;
		}
	} else {
		T = lh_op_standalone_ns_in(g, o, hw);
	}
	LhEngine eng = op_engine(o, *nt);
	/* A straggler (LhSimOptions.slow) runs its SM work slower: kernels and copy-d2d, which is
	 * a kernel (docs/engine.md, "Several devices"). Its HBM use per ns drops with it. */
	if (eng == LH_ENGINE_SM && slow != 1)
		T *= slow;
	/* A kernel whose bytes need more than T at full HBM bandwidth (duration_ns with huge
	 * bytes) runs at 1 / hbm_use even alone: that is its real standalone time. */
	double hbm = eng == LH_ENGINE_SM ? lh_op_hbm_use(o, hw, T) : 0;
	double alone = hbm > 1 ? T * hbm : T;
	/* Beyond this, nanosecond event times would overflow (or a phase would never end). */
	guint8 f = !(alone <= (double)LH_MAX_OP_NS) ? COST_TOO_LONG : 0;
	c->a = c->x = 0;
	switch (eng) {
	case LH_ENGINE_SM:
		c->a = lh_op_sm_share(o, hw);
		c->x = hbm;
		c->first = T;
		break;
	case LH_ENGINE_H2D:
	case LH_ENGINE_D2H:
		c->first = dur ? T : hw->copy_latency_ns;
		c->x = dur ? 0 : (double)o->size / hw->pcie_gbs;
		f |= dur ? 0 : COST_LATENCY;
		break;
	default: /* collectives: on the link, or leaving the node on the network */
		c->a = lh_op_sm_share(o, hw);
		c->first = dur ? T : lat;
		c->x = dur ? 0 : wire;
		f |= dur ? 0 : COST_LATENCY;
		f |= eng == LH_ENGINE_NET ? COST_NET : 0;
		break;
	}
	/* The error message wants the standalone time: keep it in first's place for a run that
	 * will fail anyway (its work is not used then). */
	if (f & COST_TOO_LONG)
		c->first = alone;
	return f;
}

/* A free slot of the running list (slots are reused; the pool grows only to the most
 * activities running at once). */
static guint32 slot_new(Sim *x)
{
	if (x->free_slot != NONE) {
		guint32 i = x->free_slot;
		x->free_slot = x->acts[i].next;
		return i;
	}
	x->acts = g_renew(Act, x->acts, x->n_slots + 1);
	return x->n_slots++;
}

/* ---- rendezvous (docs/engine.md, "Several devices") ---- */

#define PH_DONE 3 /* a rendezvous whose parts ended */

static void rdv_touch(World *w, guint32 rv)
{
	if (!w->rdv[rv].touched) {
		w->rdv[rv].touched = 1;
		w->touched[w->n_touched++] = rv;
	}
}

static Act *rdv_part(World *w, guint32 op, Sim **y)
{
	*y = &w->dev[w->dev[0].ops[op].device];
	return &(*y)->acts[w->op_slot[op]];
}

/* Rendezvous @rv enters @phase at w->t (its work there is the caller's): every part takes it,
 * and every part's device rates it again. */
static void rdv_set_phase(World *w, guint32 rv, guint8 phase)
{
	Rdv *r = &w->rdv[rv];
	r->phase = phase;
	r->t_upd = w->t;
	r->rate = -1;
	r->eta = NEVER;
	for (guint32 j = 0; j < r->k; j++) {
		Sim *y;
		Act *a = rdv_part(w, r->parts[j], &y);
		a->phase = phase;
		a->rate = -1;
		a->eta = NEVER;
		y->dirty |= DIRTY_SM | DIRTY_SM_FULL;
	}
	rdv_touch(w, rv);
}

/* Every part is resident: the rendezvous' phases begin. Each phase has the longest standalone
 * work among its parts (parts on different hardware cost differently); every part's device
 * rates it again, since its phase changed. */
static void rdv_begin(World *w, guint32 rv)
{
	Rdv *r = &w->rdv[rv];
	const LhOp *ops = w->dev[0].ops;
	double lat = 0, main = 0;
	gboolean has_lat = FALSE;
	for (guint32 j = 0; j < r->k; j++) {
		guint32 op = r->parts[j];
		/* Each part's costs on its own device, as its start computed them. */
		const Sim *y = &w->dev[ops[op].device];
		OpCost c;
		double lk, nt;
		const OpCost *k = &c;
		if (op_cost(y->g, &ops[op], &y->cx, y->slow, &c, &lk, &nt) & COST_LATENCY) {
			has_lat = TRUE;
			lat = MAX(lat, k->first);
			main = MAX(main, k->x);
		} else {
			main = MAX(main, k->first);
		}
	}
	r->rem = has_lat ? lat : main;
	r->main_work = has_lat ? main : 0;
	rdv_set_phase(w, rv, has_lat ? PH_LATENCY : PH_MAIN);
}

/* A part becomes resident: it waits, holding its SM share, until the last part arrives. */
static void rdv_arrive(Sim *x, Act *a, guint32 si)
{
	World *w = x->w;
	guint32 rv = x->ops[a->op].sync - 1;
	a->rv = rv;
	a->phase = PH_WAIT;
	w->op_slot[a->op] = si;
	if (++w->rdv[rv].arrived == w->rdv[rv].k)
		rdv_begin(w, rv);
}

G_ALWAYS_INLINE static inline void start_act(Sim *x, guint32 c, LhEngine eng, guint8 idx)
{
	const LhCmd *cmd = &x->cmds[c];
	guint32 op = (guint32)cmd->arg;
	OpCost cost;
	double lk, nt;
	const OpCost *k = &cost;
	guint8 f = x->cflags[op] | op_cost(x->g, &x->ops[op], &x->cx, x->slow, &cost, &lk, &nt);
	if ((f & COST_TOO_LONG) && !x->w->failed) {
		g_set_error(
		    x->error, LH_ENGINE_ERROR, LH_ENGINE_ERROR_INVALID,
		    "op '%s': its standalone duration on %s, %.3g ns, is beyond the engine's "
		    "range of %.0e ns (about 3 years): check its flops, bytes, size or "
		    "duration_ns",
		    x->ops[op].name, x->hw->name, k->first, (double)LH_MAX_OP_NS);
		x->w->failed = TRUE;
	}
	guint32 si = slot_new(x);
	Act *a = &x->acts[si];
	/* Every field is set below (no zeroing pass over the slot first). */
	a->op = op;
	a->cmd = c;
	a->stream = cmd->stream;
	a->engine = eng;
	a->eng_idx = idx;
	a->t_upd = x->t;
	a->eta = NEVER;
	a->rate = -1; /* forces a fresh eta at the next rate computation */
	a->is_coll = eng == LH_ENGINE_LINK;
	a->rv = NONE;
	a->a = k->a;
	a->b = eng == LH_ENGINE_SM ? k->x : 0;
	a->phase = f & COST_LATENCY ? PH_LATENCY : PH_MAIN;
	a->rem = k->first;
	a->main_work = eng == LH_ENGINE_SM ? 0 : k->x;
	a->lk = a->is_coll ? lk : 0;
	a->nt = a->is_coll ? nt : 0;
	/* Append to the running list (start order). */
	a->next = NONE;
	a->prev = x->run_tail;
	if (x->run_tail == NONE)
		x->run_head = si;
	else
		x->acts[x->run_tail].next = si;
	x->run_tail = si;
	if (G_UNLIKELY(f & COST_SYNC))
		rdv_arrive(x, a, si);
	LhOpTiming *tm = &x->tr->ops[op];
	tm->start = x->t;
	tm->engine =
	    f & COST_NET ? LH_ENGINE_NET : eng; /* it leaves the node: the network's lane */
	tm->engine_index = idx;
	if (!(f & COST_NOALLOC))
		mem_alloc(x, op);
	if (eng == LH_ENGINE_SM || eng == LH_ENGINE_LINK) {
		/* Under fifo a new last activity that uses no link or network share leaves every
		 * earlier rate as it is: only it needs a rate, from what the earlier ones left. */
		if (!(a->is_coll && a->phase == PH_MAIN && (a->lk > 0 || a->nt > 0)) &&
		    x->hw->sm_sharing != LH_SHARING_FAIR && !(x->dirty & DIRTY_SM_FULL)) {
			if (x->append_from == NONE)
				x->append_from = si;
		} else {
			x->dirty |= DIRTY_SM_FULL;
		}
		x->dirty |= DIRTY_SM;
	} else {
		x->dirty |= DIRTY_COPY;
	}
}

/* Copies of direction @d (0: H2D, 1: D2H) start on idle engines, lowest index first. Returns
 * TRUE if any did. */
static gboolean admit_copies(Sim *x, int d)
{
	Fifo *line = d ? &x->d2h_line : &x->h2d_line;
	guint8 *busy = d ? x->d2h_busy : x->h2d_busy;
	guint32 n_eng = d ? x->hw->copy_engines_d2h : x->hw->copy_engines_h2d;
	gboolean any = FALSE;
	for (guint32 e = 0; e < n_eng && line->len && x->free_eng[d]; e++)
		if (!busy[e]) {
			busy[e] = 1;
			x->free_eng[d]--;
			start_act(x, fifo_pop(line), d ? LH_ENGINE_D2H : LH_ENGINE_H2D, (guint8)e);
			any = TRUE;
		}
	return any;
}

/* Engine admissions in line order. Returns TRUE if any op started. */
G_ALWAYS_INLINE static inline gboolean admit(Sim *x)
{
	gboolean any = FALSE;
	if (!x->sm_line.len && !x->h2d_line.len && !x->d2h_line.len)
		return FALSE;
	while (x->sm_line.len && x->resident < x->hw->max_resident_kernels) {
		guint32 c = fifo_pop(&x->sm_line);
		guint8 cl = x->cflags[(guint32)x->cmds[c].arg] & COST_CLASS;
		x->resident++;
		start_act(x, c, cl == COST_COLL ? LH_ENGINE_LINK : LH_ENGINE_SM, 0);
		any = TRUE;
	}
	/* Copies: most instants have none waiting, or no idle engine for them. */
	if (x->h2d_line.len && x->free_eng[0])
		any |= admit_copies(x, 0);
	if (x->d2h_line.len && x->free_eng[1])
		any |= admit_copies(x, 1);
	return any;
}

/* ---- rates ---- */

G_ALWAYS_INLINE static inline void set_rate(Sim *x, Act *a, double r)
{
	/* Rates below 1e-9 are rounding residue of a saturated capacity (1 - 0.25 - 0.75 is not
	 * always 0): they would move nothing before the next event, so they are 0. */
	if (r < 1e-9)
		r = 0;
	if (r > 1)
		r = 1;
	if (r == a->rate)
		return;
	if (G_UNLIKELY(a->rv != NONE)) {
		/* A part: the rate is the share it holds; its rendezvous moves (rdv_rates). */
		a->rate = r;
		rdv_touch(x->w, a->rv);
		return;
	}
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
	double d = r == 1 ? a->rem : a->rem / r; /* x / 1 is x exactly: no division to wait on */
	d = ceil_exact(d - 1e-6 - d * 1e-12);
	if (d > 4e18) { /* beyond any representable time: it will be rescheduled first */
		a->eta = NEVER;
		return;
	}
	/* t <= LH_MAX_TIME_NS (the main loop stops beyond it) and d <= 4e18: cannot wrap. */
	a->eta = x->t + (d < 0 ? 0 : (gint64)d);
}

#define FOR_RUNNING(x, a)                                                                          \
	for (Act *a = (x)->run_head == NONE ? NULL : &(x)->acts[(x)->run_head]; a;                 \
	     a = a->next == NONE ? NULL : &(x)->acts[a->next])

/* The earliest eta of the running set. */
G_ALWAYS_INLINE static inline gint64 earliest_eta(const Sim *x)
{
	gint64 first = NEVER;
	FOR_RUNNING(x, a)
	if (a->eta < first)
		first = a->eta;
	return first;
}

/* fifo: one activity's rate from the capacity the earlier ones left; *m and *mn the
 * wire-phase collectives on the link and on the network not yet served. */
static inline void fifo_one(Sim *x, Act *a, double *free_sm, double *free_hbm, double *link,
                            double *net, guint32 *m, guint32 *mn)
{
	/* A quotient is taken only where it can be below 1: with a <= free (both >= 0, a > 0) the
	 * exact quotient is >= 1, so its correctly rounded value is too (1 is a double) and the
	 * MIN keeps r; skipping it gives the same r and takes two divisions off the chain that
	 * ends in the op's eta (set_rate), most of the time (a lone kernel has the device). A NaN
	 * free capacity fails the test and divides as before. */
	double r = 1;
	if (a->a > 0 && !(a->a <= *free_sm))
		r = MIN(r, MAX(*free_sm, 0) / a->a);
	if (a->b > 0 && !(a->b <= *free_hbm))
		r = MIN(r, MAX(*free_hbm, 0) / a->b);
	/* The link (NVLink) and the network are split evenly among the collectives in their
	 * wire phase that use them; one that uses a level at lk < 1 of its capacity (it is held
	 * back by the other level) takes up to 1/m of it. */
	if (a->is_coll && a->phase == PH_MAIN && a->lk > 0 && a->nt > 0) {
		r = MIN(r, MAX(*link, 0) / (*m * a->lk));
		r = MIN(r, MAX(*net, 0) / (*mn * a->nt));
		*link -= r * a->lk;
		*net -= r * a->nt;
		(*m)--;
		(*mn)--;
	} else if (a->is_coll && a->phase == PH_MAIN && a->lk > 0) {
		r = MIN(r, MAX(*link, 0) / (*m * a->lk));
		*link -= r * a->lk;
		(*m)--;
	} else if (a->is_coll && a->phase == PH_MAIN && a->nt > 0) {
		r = MIN(r, MAX(*net, 0) / (*mn * a->nt));
		*net -= r * a->nt;
		(*mn)--;
	}
	*free_sm -= r * a->a;
	*free_hbm -= r * a->b;
	set_rate(x, a, r);
}

/* Returns the earliest eta of the running set, as it stands after the pass (a rate changes only
 * its own activity's eta). */
G_ALWAYS_INLINE static inline gint64 rates_fifo(Sim *x)
{
	guint32 m = 0, mn = 0;
	FOR_RUNNING(x, a)
	{
		m += a->is_coll && a->phase == PH_MAIN && a->lk > 0;
		mn += a->is_coll && a->phase == PH_MAIN && a->nt > 0;
	}
	double free_sm = 1, free_hbm = 1, link = 1, net = 1;
	gint64 first = NEVER;
	FOR_RUNNING(x, a)
	{
		if (a->engine == LH_ENGINE_SM || a->is_coll)
			fifo_one(x, a, &free_sm, &free_hbm, &link, &net, &m, &mn);
		if (a->eta < first)
			first = a->eta;
	}
	x->tail_sm = free_sm;
	x->tail_hbm = free_hbm;
	x->tail_link = link;
	x->tail_net = net;
	return first;
}

/* fifo, only starts since the last rating, none of them on the link or the network: they come
 * last in start order, so the earlier rates stand and the new ones take what the earlier ones
 * left, as in a full pass. Their etas may lower the earliest one. */
G_ALWAYS_INLINE static inline void rates_fifo_appended(Sim *x)
{
	guint32 m = 0, mn = 0; /* none of the new ones is a wire-phase collective on either */
	for (guint32 i = x->append_from; i != NONE; i = x->acts[i].next) {
		Act *a = &x->acts[i];
		if (a->engine != LH_ENGINE_SM && !a->is_coll)
			continue;
		fifo_one(x, a, &x->tail_sm, &x->tail_hbm, &x->tail_link, &x->tail_net, &m, &mn);
		if (a->eta < x->next_eta)
			x->next_eta = a->eta;
	}
}

/* Max-min fair rates over SM, HBM, link and network capacity by progressive filling: every unfrozen
 * activity's rate rises together until a capacity it uses saturates (it freezes) or it
 * reaches 1. */
static void rates_fair(Sim *x)
{
	guint32 n = 0;
	FOR_RUNNING(x, a)
	n++;
	g_autofree Act **acts = g_new(Act *, n ? n : 1);
	n = 0;
	FOR_RUNNING(x, a)
	acts[n++] = a;
	g_autofree double *r = g_new0(double, n ? n : 1);
	g_autofree guint8 *frozen = g_new0(guint8, n ? n : 1);
	double used[4] = {0, 0, 0, 0};
	guint32 live = 0;
	for (guint32 i = 0; i < n; i++) {
		if (acts[i]->engine != LH_ENGINE_SM && !acts[i]->is_coll)
			frozen[i] = 1;
		else
			live++;
	}
	double level = 0;
	while (live) {
		double coef[4] = {0, 0, 0, 0};
		for (guint32 i = 0; i < n; i++)
			if (!frozen[i]) {
				gboolean wire = acts[i]->is_coll && acts[i]->phase == PH_MAIN;
				coef[0] += acts[i]->a;
				coef[1] += acts[i]->b;
				coef[2] += wire ? acts[i]->lk : 0;
				coef[3] += wire ? acts[i]->nt : 0;
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
			gboolean f = level >= 1 - 1e-12 || (sat[0] && acts[i]->a > 0) ||
			             (sat[1] && acts[i]->b > 0) ||
			             (sat[2] && acts[i]->is_coll && acts[i]->phase == PH_MAIN &&
			              acts[i]->lk > 0) ||
			             (sat[3] && acts[i]->is_coll && acts[i]->phase == PH_MAIN &&
			              acts[i]->nt > 0);
			if (f) {
				frozen[i] = 1;
				live--;
			}
		}
	}
	for (guint32 i = 0; i < n; i++)
		if (acts[i]->engine == LH_ENGINE_SM || acts[i]->is_coll)
			set_rate(x, acts[i], r[i]);
}

G_ALWAYS_INLINE static inline void rates_copies(Sim *x)
{
	guint32 bytes_phase[2] = {0, 0};
	FOR_RUNNING(x, a)
	if ((a->engine == LH_ENGINE_H2D || a->engine == LH_ENGINE_D2H) && a->phase == PH_MAIN)
		bytes_phase[a->engine == LH_ENGINE_D2H]++;
	FOR_RUNNING(x, a)
	{
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

G_ALWAYS_INLINE static inline void recompute_rates(Sim *x)
{
	if (x->dirty == DIRTY_SM && x->append_from != NONE) {
		/* Only fifo starts: the cached earliest eta stands for every other activity. */
		rates_fifo_appended(x);
		x->append_from = NONE;
		x->dirty = 0;
		return;
	}
	gint64 first = NEVER;
	gboolean scanned = FALSE; /* first is the earliest eta */
	if (x->dirty & DIRTY_SM) {
		if (x->hw->sm_sharing == LH_SHARING_FAIR) {
			rates_fair(x);
		} else if (x->dirty & DIRTY_SM_FULL) {
			first = rates_fifo(x);
			scanned = TRUE;
		} else {
			rates_fifo_appended(x);
		}
	}
	if (x->dirty & DIRTY_COPY) {
		rates_copies(x);
		scanned = FALSE; /* copies' etas moved after the pass */
	}
	x->dirty = 0;
	x->append_from = NONE;
	x->next_eta = scanned ? first : earliest_eta(x);
}

/* ---- ends ---- */

G_ALWAYS_INLINE static inline void end_act(Sim *x, guint32 i)
{
	Act a = x->acts[i];
	/* Unlink (the others keep start order) and free the slot. */
	if (a.prev == NONE)
		x->run_head = a.next;
	else
		x->acts[a.prev].next = a.next;
	if (a.next == NONE)
		x->run_tail = a.prev;
	else
		x->acts[a.next].prev = a.prev;
	x->acts[i].next = x->free_slot;
	x->free_slot = i;
	LhOpTiming *tm = &x->tr->ops[a.op];
	tm->end = x->t;
	if (a.engine == LH_ENGINE_SM || a.engine == LH_ENGINE_LINK) {
		x->resident--;
		x->dirty |= DIRTY_SM | DIRTY_SM_FULL;
	} else {
		guint8 *busy = a.engine == LH_ENGINE_H2D ? x->h2d_busy : x->d2h_busy;
		busy[a.eng_idx] = 0;
		x->free_eng[a.engine == LH_ENGINE_D2H]++;
		x->dirty |= DIRTY_COPY;
	}
	const LhOp *o = &x->ops[a.op];
	const guint32 *deps = x->deps + o->deps_at, *buf = x->buf;
	guint32 *consumers = x->consumers;
	for (guint32 k = 0, n = o->n_deps; k < n; k++) {
		guint32 b = buf[deps[k]];
		if (consumers[b] != G_MAXUINT32 && --consumers[b] == 0)
			mem_free(x, b);
	}
	x->s_inflight[a.stream] = NONE;
	stream_cmd_completed(x, a.stream);
	heap_push(x, x->sq[a.stream]);
}

/* The rendezvous' rates, after every device rated its activities: each moves at the slowest
 * part's rate (a ring step needs every member's data), so all parts end together. */
static void rdv_rates(World *w)
{
	for (guint32 i = 0; i < w->n_touched; i++) {
		Rdv *r = &w->rdv[w->touched[i]];
		r->touched = 0;
		if (r->phase == PH_WAIT || r->phase == PH_DONE)
			continue;
		double R = 1;
		for (guint32 j = 0; j < r->k; j++) {
			Sim *y;
			R = MIN(R, rdv_part(w, r->parts[j], &y)->rate);
		}
		if (R < 0)
			R = 0;
		if (R == r->rate)
			continue;
		if (r->rate > 0)
			r->rem -= r->rate * (double)(w->t - r->t_upd);
		if (r->rem < 0)
			r->rem = 0;
		r->t_upd = w->t;
		r->rate = R;
		r->eta = NEVER;
		if (R > 0) { /* as set_rate */
			double d = r->rem / R;
			d = ceil_exact(d - 1e-6 - d * 1e-12);
			if (d <= 4e18)
				r->eta = w->t + (d < 0 ? 0 : (gint64)d);
		}
		for (guint32 j = 0; j < r->k; j++) {
			Sim *y;
			rdv_part(w, r->parts[j], &y)->eta = r->eta;
			w->eta_stale[y->d] = 1;
		}
	}
	w->n_touched = 0;
	for (guint32 d = 0; d < w->D; d++) {
		if (!w->eta_stale[d])
			continue;
		w->eta_stale[d] = 0;
		w->dev[d].next_eta = earliest_eta(&w->dev[d]);
	}
}

/* A part's eta is due: its rendezvous changes phase or ends, on every device at once (the
 * first of its devices to see it does it). */
static void rdv_due(World *w, guint32 rv)
{
	Rdv *r = &w->rdv[rv];
	if (r->eta != w->t || r->phase == PH_DONE)
		return;
	if (r->phase == PH_LATENCY) {
		r->rem = r->main_work;
		rdv_set_phase(w, rv, PH_MAIN);
		if (r->rem > 0)
			return;
	}
	r->phase = PH_DONE;
	r->eta = NEVER;
	for (guint32 j = 0; j < r->k; j++) {
		guint32 op = r->parts[j];
		Sim *y = &w->dev[w->dev[0].ops[op].device];
		end_act(y, w->op_slot[op]);
	}
}

/* Ends and phase changes due at x->t, in start order. @multi: the graph is placed (a constant
 * where this is inlined, so one device pays nothing for rendezvous). */
G_ALWAYS_INLINE static inline void process_due(Sim *x, const gboolean multi)
{
	for (guint32 i = x->run_head; i != NONE;) {
		Act *a = &x->acts[i];
		guint32 next = a->next;
		if (a->eta != x->t) {
			i = next;
			continue;
		}
		if (multi && G_UNLIKELY(a->rv != NONE)) {
			rdv_due(x->w, a->rv);
			i = next;
			continue;
		}
		if (a->phase == PH_LATENCY) {
			a->phase = PH_MAIN;
			a->rem = a->main_work;
			a->t_upd = x->t;
			a->rate = -1;
			x->dirty |= a->engine == LH_ENGINE_SM || a->engine == LH_ENGINE_LINK
			                ? DIRTY_SM | DIRTY_SM_FULL
			                : DIRTY_COPY;
			if (a->rem > 0) {
				i = next;
				continue;
			}
		}
		end_act(x, i);
		i = next;
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
	if (x->hc >= x->n_cmds) {
		x->host_next = NEVER;
		return;
	}
	const LhCmd *c = &x->cmds[x->hc];
	/* t <= LH_MAX_TIME_NS and a cost <= G_MAXINT64 / 4: the sum cannot wrap. */
	if (c->kind == LH_CMD_SYNC && x->s_outstanding[c->stream] > 0)
		x->host_next = NEVER;
	else
		x->host_next = x->t + issue_cost(x, c);
}

/* Issues every command due at x->t (@multi: this device's commands are a list, dnext). Returns
 * TRUE if any was. */
G_ALWAYS_INLINE static inline gboolean host_issue(Sim *x, const gboolean multi)
{
	gboolean any = FALSE;
	for (;;) {
		if (x->hc >= x->n_cmds)
			break;
		if (x->host_next == NEVER)
			host_schedule(x); /* a blocked sync may have been released */
		if (x->host_next != x->t)
			break;
		guint32 c = x->hc;
		x->hc = multi ? x->dnext[c] : c + 1;
		const LhCmd *cmd = &x->cmds[c];
		if (G_UNLIKELY(c >= x->cmd_ready ||
		               (cmd->kind == LH_CMD_RUN && cmd->arg >= x->op_ready)))
			trace_ready(x, c, cmd->kind == LH_CMD_RUN ? (guint32)cmd->arg : NONE);
		x->tr->cmd_issue[c] = x->t;
		if (cmd->kind == LH_CMD_RUN)
			x->tr->ops[cmd->arg].issue = x->t;
		if (cmd->kind != LH_CMD_HOST && cmd->kind != LH_CMD_SYNC) {
			x->s_outstanding[cmd->stream]++;
			/* heap_push's own test, without the call: mostly it fails (a serial plan's
			 * host issues ahead of its one busy stream). */
			guint32 q = x->sq[cmd->stream], h = x->qhead[q];
			if (!x->in_heap[q] && h < x->hc && x->s_inflight[x->cmds[h].stream] == NONE)
				heap_push(x, q);
		}
		any = TRUE;
		host_schedule(x);
	}
	return any;
}

/* A device's issues, dispatches and admissions at its instant (@multi as host_issue). Issues and
 * dispatches feed each other (a dispatched signal can release a host sync); admissions start
 * ops and feed neither, so they come once, after. */
G_ALWAYS_INLINE static inline void issue_and_admit(World *w, Sim *x, guint32 n_cmds,
                                                   const gboolean multi)
{
	gboolean changed;
	do {
		changed = host_issue(x, multi);
		changed |= dispatch(x);
	} while (changed && !w->failed && x->host_next == NEVER && x->hc < n_cmds);
	admit(x);
}

/* ---- deadlock ---- */

static void report_device_deadlock(Sim *x, GString *m)
{
	const LhPlan *p = x->p;
	g_autofree char *pre = x->w->multi ? g_strdup_printf(" device %u:", x->d) : g_strdup("");
	if (x->hc < x->n_cmds) {
		const LhCmd *c = lh_plan_cmd(p, x->hc);
		if (c->kind == LH_CMD_SYNC)
			g_string_append_printf(m, "%s the host is stuck at command %u (sync %s);",
			                       pre, x->hc + 1, lh_plan_stream(p, c->stream)->name);
	}
	for (guint32 q = 0; q < x->Q; q++) {
		guint32 c = x->qhead[q];
		if (c == NONE)
			continue;
		const LhCmd *cmd = lh_plan_cmd(p, c);
		const char *sn = lh_plan_stream(p, cmd->stream)->name;
		if (c >= x->hc)
			continue; /* not issued: the host explains it */
		if (cmd->kind == LH_CMD_WAIT) {
			char b[32];
			const char *en = lh_plan_event_name(p, cmd->arg, b);
			g_string_append_printf(
			    m,
			    "%s stream '%s' is stuck at command %u (wait %s %s): event "
			    "%s never fires;",
			    pre, sn, c + 1, sn, en, en);
		} else
			g_string_append_printf(m, "%s stream '%s' is stuck at command %u (%s %s);",
			                       pre, sn, c + 1, lh_cmd_kind_name(cmd->kind), sn);
		/* Streams of this queue behind the head are blocked by it (false dependency). */
		for (guint32 d = x->qnext[c]; d != NONE && d < x->hc; d = x->qnext[d]) {
			guint32 s2 = lh_plan_cmd(p, d)->stream;
			if (s2 != cmd->stream) {
				g_string_append_printf(
				    m, "%s stream '%s' waits behind it in hardware queue %u;", pre,
				    lh_plan_stream(p, s2)->name, q);
				break;
			}
		}
	}
}

/* A part that arrived waits for the parts that did not: name each, on its device, and where it
 * is stuck. */
static void report_rdv_deadlock(World *w, GString *m)
{
	const Sim *x0 = &w->dev[0];
	const LhOp *ops = x0->ops;
	guint32 ns = lh_graph_n_syncs(x0->g);
	for (guint32 rv = 0; rv < ns; rv++) {
		const Rdv *r = &w->rdv[rv];
		if (r->phase != PH_WAIT || !r->arrived)
			continue;
		const char *key = lh_graph_sync_name(x0->g, rv);
		for (guint32 j = 0; j < r->k; j++) {
			guint32 op = r->parts[j];
			if (w->op_slot[op] == NONE)
				continue;
			const LhStream *st = lh_plan_stream(x0->p, x0->tr->ops[op].stream);
			for (guint32 i = 0; i < r->k; i++) {
				guint32 o2 = r->parts[i];
				if (w->op_slot[o2] != NONE)
					continue;
				const Sim *y = &w->dev[ops[o2].device];
				guint32 c = w->op_cmd[o2];
				const char *sn2 =
				    c != NONE ? lh_plan_stream(x0->p, x0->cmds[c].stream)->name
				              : "?";
				g_autofree char *where =
				    c == NONE    ? g_strdup("no command runs it")
				    : c >= y->hc ? g_strdup_printf(
				                       "its host has not issued command %u", c + 1)
				    : y->s_inflight[x0->cmds[c].stream] == c
				        ? g_strdup_printf(
				              "it waits for a free kernel slot on stream '%s'", sn2)
				        : g_strdup_printf("stream '%s' has not reached command %u",
				                          sn2, c + 1);
				g_string_append_printf(
				    m,
				    " device %u: op '%s' on stream '%s' waits at sync "
				    "'%s' for device %u, which has not reached it (op "
				    "'%s': %s);",
				    ops[op].device, ops[op].name, st->name, key, ops[o2].device,
				    ops[o2].name, where);
			}
		}
	}
}

static void report_deadlock(World *w)
{
	GString *m = g_string_new("deadlock: no event is pending and commands remain:");
	if (w->multi)
		report_rdv_deadlock(w, m);
	for (guint32 d = 0; d < w->D; d++)
		report_device_deadlock(&w->dev[d], m);
	g_string_truncate(m, m->len - 1);
	g_set_error_literal(w->dev[0].error, LH_ENGINE_ERROR, LH_ENGINE_ERROR_DEADLOCK, m->str);
	g_string_free(m, TRUE);
	w->failed = TRUE;
}

/* The next instant, @next, is beyond LH_MAX_TIME_NS: an input error naming what is due then
 * (the host's next command, or the op whose phase ends). Every time before it was in range,
 * so no sum of times wrapped. */
static void report_time_range(Sim *x, gint64 next)
{
	const LhOp *o = NULL;
	const char *what = "issue its next command";
	if (x->host_next == next) {
		const LhCmd *c = &x->cmds[x->hc];
		if (c->kind == LH_CMD_RUN) {
			o = &x->ops[c->arg];
			what = "be issued";
		}
	} else {
		FOR_RUNNING(x, a)
		if (a->eta == next) {
			o = &x->ops[a->op];
			what = a->phase == PH_LATENCY ? "end its latency phase" : "end";
			break;
		}
	}
	g_set_error(x->error, LH_ENGINE_ERROR, LH_ENGINE_ERROR_INVALID,
	            "%s%s%s would %s at t = %.3g ns, beyond the engine's time range of %.0e ns "
	            "(about 127 years): the input's times add up to more than lhsim can represent",
	            o ? "op '" : "", o ? o->name : "the host", o ? "'" : "", what, (double)next,
	            (double)LH_MAX_TIME_NS);
	x->w->failed = TRUE;
}

/* ---- main loop ---- */

/* Placed graphs: the plan's devices fit the graph, and streams, ops and events stay on one device
 * (lh_plan_validate says so; the engine checks again, since its queues rely on it). */
static gboolean check_devices(const LhGraph *g, const LhPlan *p, GError **error)
{
	guint32 D = lh_graph_devices(g), S = lh_plan_n_streams(p), n = lh_plan_n_cmds(p);
	const LhOp *ops = lh__graph_ops(g);
	g_autofree guint32 *ev_dev = g_new(guint32, MAX(lh_plan_n_events(p), 1));
	for (guint32 e = 0; e < lh_plan_n_events(p); e++)
		ev_dev[e] = NONE;
	for (guint32 s = 0; s < S; s++)
		if (lh_plan_stream(p, s)->device >= D)
			goto bad;
	for (guint32 c = 0; c < n; c++) {
		const LhCmd *cmd = lh_plan_cmd(p, c);
		if (cmd->kind == LH_CMD_HOST) {
			if (cmd->stream >= D)
				goto bad;
			continue;
		}
		guint32 d = lh_plan_stream(p, cmd->stream)->device;
		if (cmd->kind == LH_CMD_RUN && ops[cmd->arg].device != d)
			goto bad;
		if (cmd->kind == LH_CMD_SIGNAL || cmd->kind == LH_CMD_WAIT) {
			if (ev_dev[cmd->arg] != NONE && ev_dev[cmd->arg] != d)
				goto bad;
			ev_dev[cmd->arg] = d;
		}
	}
	return TRUE;
bad:
	g_set_error(error, LH_ENGINE_ERROR, LH_ENGINE_ERROR_INVALID,
	            "the plan does not fit the graph's %u devices (run lh_plan_validate for "
	            "details)",
	            D);
	return FALSE;
}

/* Sets up device @d's host, queues and engines: its commands are those with dnext (all for one
 * device). */
static void dev_init(World *w, Sim *x, guint32 d, const LhHw *hw, guint32 n_streams_d)
{
	x->w = w;
	x->d = d;
	x->hw = hw;
	x->Q = MIN(hw->hw_queues, MAX(n_streams_d, 1));
	x->launch = round_cost(hw->launch_ns);
	x->event = round_cost(hw->event_ns);
	x->cap_bytes = (gint64)(hw->memory_gib * 1073741824.0);
	x->qhead = g_new(guint32, x->Q);
	x->qtail = g_new(guint32, x->Q);
	x->q_blocked_next = g_new(guint32, x->Q);
	x->heap = g_new(guint32, x->Q);
	x->in_heap = g_new0(guint8, x->Q);
	x->q_reg = g_new0(guint8, x->Q);
	for (guint32 q = 0; q < x->Q; q++)
		x->qhead[q] = x->qtail[q] = NONE;
	x->run_head = x->run_tail = x->free_slot = x->append_from = NONE;
	x->tail_sm = x->tail_hbm = x->tail_link = x->tail_net = 1;
	x->h2d_busy = g_new0(guint8, hw->copy_engines_h2d);
	x->d2h_busy = g_new0(guint8, hw->copy_engines_d2h);
	x->free_eng[0] = hw->copy_engines_h2d;
	x->free_eng[1] = hw->copy_engines_d2h;
	x->next_eta = NEVER;
}

static void dev_free(Sim *x)
{
	g_free(x->qhead);
	g_free(x->qtail);
	g_free(x->q_blocked_next);
	g_free(x->heap);
	g_free(x->in_heap);
	g_free(x->q_reg);
	g_free(x->acts);
	g_free(x->sm_line.v);
	g_free(x->h2d_line.v);
	g_free(x->d2h_line.v);
	g_free(x->h2d_busy);
	g_free(x->d2h_busy);
}

/* The loop for a graph without placement: the loop below for one device, without its
 * per-device passes and rendezvous (most instants only issue a host command, so their overhead
 * would be a good part of the cost). */
static void run_one(World *w)
{
	/* On the stack while it runs: the inlined steps then address its fields from the stack
	 * pointer, as the engine before devices did (callgrind, bench-engine: 3.5 % fewer). Nothing
	 * reads w->dev[0] until it is copied back. */
	Sim xs = w->dev[0];
	Sim *x = &xs;
	guint32 n_cmds = x->n_cmds;
	x->mem_n = x->tr->mem->len;
	/* Room for every point up front: at most one per instant where memory changed, that is
	 * per start and per end, after the points so far. Growing by steps instead copied the
	 * array at each step (realloc below the mmap threshold) and faulted fresh pages for each
	 * copy; untouched room costs no memory. Capped (2^25 points, 768 MiB of address space) so
	 * that a huge plan does not ask for all of it at once; beyond, the array grows. */
	g_array_set_size(x->tr->mem,
	                 x->mem_n + MIN(2 * (gsize)x->n_stream_cmds + 1, (gsize)1 << 25));
	/* Room for more than 2 MEM_AHEAD points is written ahead by the page helper (mem_room),
	 * the trace's (simulate), or one of its own. */
	guint room = x->tr->mem->len - x->mem_n;
	x->mem_fill = NULL;
	x->mem_pages = NULL;
	x->mem_handed = G_MAXUINT;
	x->mem_next = x->tr->mem->len;
	if (room > 2 * MEM_AHEAD) {
		x->mem_pages = x->tr_pages ? x->tr_pages : lh__pages_new();
		x->mem_fill = g_new0(LhFill *, room / MEM_AHEAD + 1);
		x->mem_first = x->mem_next = x->mem_n;
		x->mem_handed = 0;
	}
	while (!w->failed) {
		if (x->t == x->next_eta)
			process_due(x, FALSE);
		issue_and_admit(w, x, n_cmds, FALSE);
		if (w->failed)
			break;
		if (x->dirty)
			recompute_rates(x);
		if (x->mem_changed) {
			mem_point_one(x);
			x->mem_changed = FALSE;
		}
		/* Only ends and phase changes move etas, and they set dirty: between them the
		 * cached earliest eta stands (steps that only issue host commands are O(1)). */
		gint64 next = MIN(x->host_next, x->next_eta);
		if (next == NEVER) {
			if (x->hc < n_cmds || x->completed < x->n_stream_cmds) {
				w->dev[0] = xs;
				report_deadlock(w);
			}
			break;
		}
		if (G_UNLIKELY(next > LH_MAX_TIME_NS)) {
			report_time_range(x, next);
			break;
		}
		/* An instant can take more than one step (an op started at it that ends at it):
		 * a checkpoint is taken only before the first. */
		if (G_UNLIKELY(w->ckc != NULL) && next > x->t)
			ck_at_instant(w, x, next);
		x->t = next;
		/* Instants before the next end or phase change where the host issues and no
		 * queue becomes ready (heap_push left the heap empty) change nothing else: nothing
		 * is due, nothing dispatches, admission found nothing to start at the last instant
		 * and nothing it depends on moved, no rate or memory changed. They are issued
		 * here, without the rest of an instant. Where a queue became ready, or the next
		 * instant would end the run, the full step takes this instant over: its host_issue
		 * then issues nothing more. */
		while (x->t == x->host_next && x->t < x->next_eta) {
			host_issue(x, FALSE);
			next = MIN(x->host_next, x->next_eta);
			if (x->heap_n || w->failed || next == NEVER || next > LH_MAX_TIME_NS)
				break;
			x->t = next;
		}
	}
	mem_settle(x);
	if (x->mem_pages != x->tr_pages)
		lh__pages_free(x->mem_pages);
	g_free(x->mem_fill);
	x->mem_pages = NULL;
	x->mem_fill = NULL;
	g_array_set_size(x->tr->mem, x->mem_n); /* drops the spare room's length */
	w->dev[0] = xs;
}

/* The loop for several devices: each step of docs/engine.md's instant for every device, then
 * the rendezvous' rates. */
static void run_many(World *w)
{
	guint32 n_cmds = w->dev[0].n_cmds;
	while (!w->failed) {
		gboolean mem_changed = FALSE;
		for (guint32 d = 0; d < w->D; d++)
			w->dev[d].t =
			    w->t; /* before any end: a rendezvous ends parts on all devices */
		for (guint32 d = 0; d < w->D; d++) {
			Sim *x = &w->dev[d];
			if (x->t == x->next_eta)
				process_due(x, TRUE);
		}
		for (guint32 d = 0; d < w->D; d++)
			issue_and_admit(w, &w->dev[d], n_cmds, TRUE);
		if (w->failed)
			break;
		gint64 next = NEVER;
		for (guint32 d = 0; d < w->D; d++) {
			Sim *x = &w->dev[d];
			if (x->dirty)
				recompute_rates(x);
			mem_changed |= x->mem_changed;
			x->mem_changed = FALSE;
		}
		if (w->n_touched)
			rdv_rates(w);
		if (mem_changed)
			mem_point(w);
		/* Only ends and phase changes move etas, and they set dirty: between them the
		 * cached earliest eta stands (steps that only issue host commands are O(1)). */
		gboolean left = FALSE;
		for (guint32 d = 0; d < w->D; d++) {
			Sim *x = &w->dev[d];
			next = MIN(next, MIN(x->host_next, x->next_eta));
			left |= x->hc < n_cmds || x->completed < x->n_stream_cmds;
		}
		if (next == NEVER) {
			if (left)
				report_deadlock(w);
			break;
		}
		if (G_UNLIKELY(next > LH_MAX_TIME_NS)) {
			for (guint32 d = 0; d < w->D; d++)
				if (MIN(w->dev[d].host_next, w->dev[d].next_eta) == next) {
					report_time_range(&w->dev[d], next);
					break;
				}
			break;
		}
		w->t = next;
	}
}

static void ck_restore(World *w, CkCtl *ckc);

/* lh_simulate(), taking or restoring checkpoints as @ckc says (NULL: none). */
static LhTrace *simulate(const LhGraph *g, const LhHw *hw, const LhPlan *plan,
                         const LhSimOptions *opt, gboolean *over_memory, GError **error, CkCtl *ckc)
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
	World w = {0};
	w.multi = lh_graph_placed(g);
	w.D = w.multi ? lh_graph_devices(g) : 1;
	if (w.multi && !check_devices(g, plan, error))
		return NULL;
	for (guint32 d = 0; d < w.D; d++) {
		double sl = opt->slow ? opt->slow[d] : 1;
		if (!(sl > 0 && sl <= 1e6)) {
			g_set_error(error, LH_ENGINE_ERROR, LH_ENGINE_ERROR_INVALID,
			            "device %u: straggler factor %g is not a positive number up to "
			            "1e6",
			            d, sl);
			return NULL;
		}
	}
	guint32 n_ops = lh_graph_n_ops(g);
	guint32 n_cmds = lh_plan_n_cmds(plan), S = lh_plan_n_streams(plan);
	guint32 E = lh_plan_n_events(plan);
	const LhCmd *cmds = lh_plan_cmds(plan, NULL);
	const LhOp *ops = lh__graph_ops(g);
	/* The trace's 40 MB at 10^6 ops (issue times, op timings) are written first by a helper
	 * while the engine sets up and runs (sim/trace-private.h); the host waits only where it
	 * would issue ahead of the helper (trace_ready). A checkpoint's restore writes timings
	 * of ops it does not issue, so there the trace is set up front. */
	LhFill *cmd_fill = NULL, *op_fill = NULL;
	LhPages *tr_pages = ckc ? NULL : lh__pages_new();
	LhTrace *tr = tr_pages ? lh__trace_new_filling(n_ops, n_cmds, tr_pages, &cmd_fill, &op_fill)
	                       : lh_trace_new(n_ops, n_cmds);
	tr->source = g_strdup("simulated");
	if (w.multi)
		lh_trace_set_devices(tr, w.D);
	w.dev = g_new0(Sim, w.D);

	/* Shared by the devices: per command, stream, event and op (each device touches only its
	 * own). */
	guint32 *qnext = g_new(guint32, MAX(n_cmds, 1));
	guint32 *sq = g_new(guint32, MAX(S, 1));
	guint32 *ev_blocked = g_new(guint32, MAX(E, 1));
	guint8 *fired = g_new0(guint8, MAX(E, 1));
	guint32 *s_inflight = g_new(guint32, MAX(S, 1));
	guint32 *s_outstanding = g_new0(guint32, MAX(S, 1));
	guint8 *cflags = g_new(guint8, MAX(n_ops, 1));
	guint32 *consumers = g_new0(guint32, MAX(n_ops, 1));
	guint32 *buf = g_new(guint32, MAX(n_ops, 1));
	guint32 *dnext = NULL;

	/* Each device's streams, in order, feed its queues: queue = index among them mod Q. */
	g_autofree guint32 *n_sd = g_new0(guint32, w.D);
	for (guint32 s = 0; s < S; s++)
		sq[s] = n_sd[w.multi ? lh_plan_stream(plan, s)->device : 0]++;
	for (guint32 d = 0; d < w.D; d++) {
		const LhHw *hd =
		    w.multi && opt->device_hw && opt->device_hw[d] ? opt->device_hw[d] : hw;
		Sim *x = &w.dev[d];
		dev_init(&w, x, d, hd, n_sd[d]);
		x->g = g;
		x->p = plan;
		x->cmds = cmds;
		x->ops = ops;
		x->deps = lh__graph_dep_array(g);
		x->tr = tr;
		x->n_cmds = n_cmds;
		x->S = S;
		x->E = E;
		x->error = error;
		x->strict = opt->strict_memory;
		x->qnext = qnext;
		x->sq = sq;
		x->ev_blocked = ev_blocked;
		x->fired = fired;
		x->s_inflight = s_inflight;
		x->s_outstanding = s_outstanding;
		x->cflags = cflags;
		x->tr_pages = tr_pages;
		x->cmd_fill = cmd_fill;
		x->op_fill = op_fill;
		x->cmd_ready = x->op_ready = tr_pages ? 0 : G_MAXUINT32;
		lh__cost_ctx_init(&x->cx, x->hw);
		x->slow = opt->slow ? opt->slow[d] : 1;
		x->consumers = consumers;
		x->buf = buf;
		x->pk = w.multi ? &tr->dev_peak[d] : &tr->peak_device;
		x->pk_t = w.multi ? &tr->dev_peak_t[d] : &tr->peak_device_t;
		x->pk_host = w.multi ? &x->pk_host_own : &tr->peak_host;
	}
	for (guint32 s = 0; s < S; s++) {
		sq[s] %= w.dev[w.multi ? lh_plan_stream(plan, s)->device : 0].Q;
		s_inflight[s] = NONE;
	}
	for (guint32 e = 0; e < E; e++)
		ev_blocked[e] = NONE;
	/* Each device's host issues its own commands in plan order. */
	if (w.multi) {
		dnext = g_new(guint32, MAX(n_cmds, 1));
		g_autofree guint32 *first = g_new(guint32, w.D);
		g_autofree guint32 *last = g_new(guint32, w.D);
		lh__plan_device_lists(plan, w.D, first, dnext, last);
		for (guint32 d = 0; d < w.D; d++) {
			w.dev[d].hc = first[d];
			w.dev[d].dnext = dnext;
			w.dev[d].last_cmd = last[d];
		}
	}
	for (guint32 c = 0; c < n_cmds; c++) {
		const LhCmd *cmd = &cmds[c];
		qnext[c] = NONE;
		if (cmd->kind == LH_CMD_HOST || cmd->kind == LH_CMD_SYNC)
			continue;
		Sim *x = w.dev;
		if (w.multi)
			x += lh_plan_stream(plan, cmd->stream)->device;
		guint32 q = sq[cmd->stream];
		if (x->qtail[q] == NONE)
			x->qhead[q] = c;
		else
			qnext[x->qtail[q]] = c;
		x->qtail[q] = c;
		x->n_stream_cmds++;
	}
	/* One pass over the op array (128 bytes an op: at 10^6 ops every pass over it is a stream
	 * of cache misses) for the ops' flags, the buffers' consumers and the inputs. */
	for (guint32 i = 0; i < n_ops; i++) {
		const LhOp *o = &ops[i];
		cflags[i] = o->kind == LH_OP_COPY_H2D   ? COST_H2D
		            : o->kind == LH_OP_COPY_D2H ? COST_D2H
		            : kind_is_coll(o->kind)     ? COST_COLL
		                                        : COST_KERNEL;
		cflags[i] |= o->alias != LH_NO_OP || o->out_bytes == 0 ? COST_NOALLOC : 0;
		cflags[i] |= w.multi && o->sync ? COST_SYNC : 0;
		/* Every buffer waits for the consumers of the op that allocated it and of every op
		 * aliasing it (docs/engine.md, Memory): buf is the end of the op's alias chain (an
		 * alias is a dep, so the chain ends; one below i has its buf already). The count
		 * does not depend on the order the ops add to it. */
		guint32 bi = i;
		if (o->alias != LH_NO_OP) {
			bi = o->alias;
			if (bi < i)
				bi = buf[bi];
			else
				while (ops[bi].alias != LH_NO_OP)
					bi = ops[bi].alias;
		}
		buf[i] = bi;
		guint32 ns, *cn = &consumers[bi];
		lh_graph_succs(g, i, &ns);
		if (ns == 0)
			*cn = G_MAXUINT32;
		else if (*cn != G_MAXUINT32)
			*cn += ns;
		/* Inputs are live from 0, allocated in op order. */
		if (o->kind == LH_OP_INPUT)
			mem_alloc(&w.dev[w.multi ? o->device : 0], i);
	}
	/* Rendezvous: their parts, and which command runs each op (for deadlock messages). */
	guint32 n_rv = w.multi ? lh_graph_n_syncs(g) : 0;
	if (w.multi) {
		w.rdv = g_new0(Rdv, MAX(n_rv, 1));
		for (guint32 rv = 0; rv < n_rv; rv++) {
			w.rdv[rv].parts = lh_graph_sync_ops(g, rv, &w.rdv[rv].k);
			w.rdv[rv].phase = PH_WAIT;
			w.rdv[rv].eta = NEVER;
		}
		w.touched = g_new(guint32, MAX(n_rv, 1));
		w.eta_stale = g_new0(guint8, w.D);
		w.op_slot = g_new(guint32, MAX(n_ops, 1));
		w.op_cmd = g_new(guint32, MAX(n_ops, 1));
		for (guint32 i = 0; i < n_ops; i++)
			w.op_slot[i] = w.op_cmd[i] = NONE;
		for (guint32 c = 0; c < n_cmds; c++)
			if (cmds[c].kind == LH_CMD_RUN)
				w.op_cmd[cmds[c].arg] = c;
	}

	mem_point(&w);
	for (guint32 d = 0; d < w.D; d++) {
		Sim *x = &w.dev[d];
		host_schedule(x);
		/* The host pays the executable's launch (step_overhead_ns) once, before it starts
		 * issuing the first command (docs/engine.md, "The host"). */
		if (x->host_next != NEVER)
			x->host_next += round_cost(x->hw->step_overhead_ns);
	}

	if (ckc && !w.multi) {
		w.ckc = ckc;
		ck_restore(&w, ckc); /* when ckc names a checkpoint */
	}
	if (!w.multi)
		run_one(&w);
	else
		run_many(&w);

	lh__pages_free(tr_pages); /* every fill written: the ops never issued are unset */
	gboolean over = FALSE;
	for (guint32 d = 0; d < w.D; d++) {
		Sim *x = &w.dev[d];
		over |= x->over;
		if (w.multi) {
			tr->dev_host_end[d] = x->last_cmd != NONE ? tr->cmd_issue[x->last_cmd] : 0;
			/* The largest device's peak; among equal peaks, the lowest device's time.
			 */
			if (d == 0 || tr->dev_peak[d] > tr->peak_device) {
				tr->peak_device = tr->dev_peak[d];
				tr->peak_device_t = tr->dev_peak_t[d];
			}
			tr->host_end = MAX(tr->host_end, tr->dev_host_end[d]);
		}
		dev_free(x);
	}
	g_free(w.dev);
	g_free(w.rdv);
	g_free(w.touched);
	g_free(w.eta_stale);
	g_free(w.op_slot);
	g_free(w.op_cmd);
	g_free(dnext);
	g_free(qnext);
	g_free(sq);
	g_free(ev_blocked);
	g_free(fired);
	g_free(s_inflight);
	g_free(s_outstanding);
	g_free(cflags);
	g_free(consumers);
	g_free(buf);
	if (w.failed) {
		lh_trace_free(tr);
		return NULL;
	}
	if (!w.multi)
		tr->host_end = n_cmds ? tr->cmd_issue[n_cmds - 1] : 0;
	if (over_memory)
		*over_memory = over;
	return tr;
}

LhTrace *lh_simulate(const LhGraph *g, const LhHw *hw, const LhPlan *plan, const LhSimOptions *opt,
                     gboolean *over_memory, GError **error)
{
	return simulate(g, hw, plan, opt, over_memory, error, NULL);
}

/* ---- checkpoints (sim/engine-private.h; docs/engine.md, "Checkpoints and incremental runs") ----
 *
 * A checkpoint is the state of one device at the start of an instant t, before anything due at
 * t is done: the Sim's scalars and a copy of every array the loop writes. What the trace holds
 * before t is not copied: it is the run's final trace with every time from t on taken back
 * (times only grow, so a value set before t is below t and never set again), which the
 * checkpoint reads from its run (CkRun) when it is restored.
 *
 * A run of a new plan P' restores a checkpoint of plan P taken at t when nothing of P' from its
 * first differing command c0 on could have acted before t: then everything done before t in the
 * run of P was done by commands below c0, the same in both plans, at the same times. A command
 * acts (leaves its queue, fires or waits on an event, blocks the host) only once it is its
 * queue's head, issued, with its stream idle, or, for a sync, once the host reaches it; until
 * then it only sits in its queue. ck_check proves it per queue from the checkpoint's state (the
 * same proof for P's commands from c0 on), and rebuilds the host, queues and counts for P'.
 * Reference counts are plain integers: runs and checkpoints belong to one thread. */

/* memcpy that copies nothing for @n = 0, where either pointer may be NULL (an engine with no
 * activity slot yet, an empty trace array): memcpy's arguments must not be NULL even then. */
static inline void *ck_copy(void *dst, const void *src, gsize n)
{
	return n ? memcpy(dst, src, n) : dst;
}

/* What a checkpoint needs of its run: its plan's commands and, once the run has ended, its
 * trace. Shared by the run's checkpoints and those that inherit them. */
typedef struct {
	guint ref;
	LhCmd *cmds;
	guint32 n_cmds, S, E, n_ops;
	guint32 *op_cmd; /* per op: the command that runs it, or NONE; NULL until needed */
	LhTrace *tr;     /* NULL until the run ends */
} CkRun;

typedef struct {
	guint ref;
	CkRun *run;
	Sim x; /* every scalar at t; its pointers are the run's, never followed */
	guint32 *qhead, *q_blocked_next, *ev_blocked, *s_inflight, *s_outstanding, *consumers;
	guint8 *q_reg, *fired, *h2d_busy, *d2h_busy;
	Act *acts;        /* the start of one block that holds every array */
	guint32 *line[3]; /* the SM, H2D and D2H lines, from their heads */
	gint64 pk, pk_t, pk_host;
} Ck;

struct CkCtl {
	/* taking, every `every` instants */
	guint32 every, count;
	guint64 instants;
	CkRun *run;       /* this run's */
	GPtrArray *taken; /* of Ck *, in time order */
	/* restoring: the checkpoint, and the new plan's state at its instant (ck_check) */
	const Ck *from;
	guint32 c0, hc;
	gint64 host_next;
	gint64 *iss;              /* per command of the new plan in [c0, sync): its issue time */
	guint32 sync;             /* the new plan's first sync from c0 on, or its length */
	Sim *cost_of;             /* issue costs (launch and event) */
	guint32 *head;            /* per queue: its head */
	guint32 *ofirst, *nfirst; /* per queue: the old and new plans' first command >= c0 */
	guint8 *unreg; /* per queue: its head, an old command >= c0, is registered waiting: drop */
	guint32 *reg;  /* per queue: the event its new head waits on, registered; or NONE */
};

struct LhSimRun {
	CkRun *run;
	const LhGraph *g;
	const LhHw *hw;
	gboolean strict;
	double slow0;
	Ck **ck; /* in time order */
	guint32 n_ck;
	LhSimRunInfo info;
};

static void ckrun_unref(CkRun *r)
{
	if (!r || --r->ref)
		return;
	g_free(r->cmds);
	g_free(r->op_cmd);
	if (r->tr)
		lh_trace_free(r->tr);
	g_free(r);
}

static void ck_unref(Ck *k)
{
	if (--k->ref)
		return;
	g_free(k->acts); /* the block of every array */
	ckrun_unref(k->run);
	g_free(k);
}

/* Called at the end of every step of run_one whose next instant @t is later: x is then the
 * state at the start of t. */
static void ck_at_instant(World *w, const Sim *x, gint64 t)
{
	CkCtl *c = w->ckc;
	c->instants++;
	if (++c->count < c->every || w->failed)
		return;
	c->count = 0;
	/* Dispatch empties the heap before an instant ends, and rates are fresh: nothing of an
	 * instant is left half done. */
	g_assert(x->heap_n == 0 && !x->dirty && !x->mem_changed);
	Ck *k = g_new0(Ck, 1);
	k->ref = 1;
	k->run = c->run;
	c->run->ref++;
	k->x = *x;
	k->x.t = t;
	guint32 Q = x->Q, S = x->S, E = x->E, n = c->run->n_ops;
	guint32 nh = x->hw->copy_engines_h2d, nd = x->hw->copy_engines_d2h;
	const Fifo *ln[3] = {&x->sm_line, &x->h2d_line, &x->d2h_line};
	/* One block: the activities (8-byte fields) first, then the 4-byte arrays, the bytes. */
	gsize na = x->n_slots * sizeof(Act);
	gsize n4 = 2 * (gsize)Q + E + 2 * (gsize)S + n + ln[0]->len + ln[1]->len + ln[2]->len;
	char *blk = g_malloc(na + 4 * n4 + Q + E + nh + nd + 1);
	guint32 *p4 = (guint32 *)(void *)(blk + na);
	k->acts = (Act *)(void *)blk;
	ck_copy(k->acts, x->acts, na);
#define TAKE4(f, len)                                                                              \
	k->f = p4;                                                                                 \
	ck_copy(p4, x->f, (gsize)(len) * sizeof(guint32));                                         \
	p4 += (len)
	TAKE4(qhead, Q);
	TAKE4(q_blocked_next, Q);
	TAKE4(ev_blocked, E);
	TAKE4(s_inflight, S);
	TAKE4(s_outstanding, S);
	TAKE4(consumers, n);
#undef TAKE4
	for (int i = 0; i < 3; i++) {
		k->line[i] = p4;
		for (guint32 j = 0; j < ln[i]->len; j++)
			*p4++ = ln[i]->v[(ln[i]->head + j) & (ln[i]->cap - 1)];
	}
	guint8 *p1 = (guint8 *)p4;
	k->q_reg = ck_copy(p1, x->q_reg, Q);
	k->fired = ck_copy(p1 += Q, x->fired, E);
	k->h2d_busy = ck_copy(p1 += E, x->h2d_busy, nh);
	k->d2h_busy = ck_copy(p1 += nh, x->d2h_busy, nd);
	k->pk = *x->pk;
	k->pk_t = *x->pk_t;
	k->pk_host = *x->pk_host;
	g_ptr_array_add(c->taken, k);
}

/* What the checks of the checkpoints of run @r (plan P) need of the new plan @nc (@nn commands),
 * which equals P on its commands below @c0 (>= 1): each queue's first command >= c0 in both
 * plans, and the new plan's issue times from c0 on, as if the host issued c0 - 1 when it did in
 * P, up to its first sync (whose issue time depends on the new plan's run). */
static void ck_prep(CkCtl *c, const CkRun *r, guint32 c0, const LhCmd *nc, guint32 nn, guint32 Q)
{
	c->c0 = c0;
	for (guint32 q = 0; q < Q; q++)
		c->ofirst[q] = c->nfirst[q] = NONE;
	/* Streams feed queue s mod Q in both plans (one stream table). */
	for (guint32 i = c0, left = Q; i < r->n_cmds && left; i++) {
		const LhCmd *cmd = &r->cmds[i];
		if (cmd->kind == LH_CMD_HOST || cmd->kind == LH_CMD_SYNC)
			continue;
		guint32 q = cmd->stream % Q;
		if (c->ofirst[q] == NONE) {
			c->ofirst[q] = i;
			left--;
		}
	}
	for (guint32 i = c0, left = Q; i < nn && left; i++) {
		if (nc[i].kind == LH_CMD_HOST || nc[i].kind == LH_CMD_SYNC)
			continue;
		guint32 q = nc[i].stream % Q;
		if (c->nfirst[q] == NONE) {
			c->nfirst[q] = i;
			left--;
		}
	}
	gint64 at = r->tr->cmd_issue[c0 - 1];
	guint32 h = c0;
	for (; h < nn && nc[h].kind != LH_CMD_SYNC; h++)
		c->iss[h] = at = at + issue_cost(c->cost_of, &nc[h]);
	c->sync = h;
}

/* Whether checkpoint @k (of a run ck_prep prepared), taken at t, is valid for the new plan @nc;
 * if so, the new plan's host and queue heads at t go into @c (docs/engine.md, "Checkpoints and
 * incremental runs"). */
static gboolean ck_check(CkCtl *c, const Ck *k, const LhCmd *nc, guint32 nn)
{
	const CkRun *r = k->run;
	const Sim *x = &k->x;
	guint32 Q = x->Q, c0 = c->c0;
	gint64 t = x->t;
	/* The host: the old run's below c0; from c0 on the new plan's commands, each issued its
	 * cost after the previous one, up to the first that would be issued at t or later. */
	if (x->hc < c0) {
		c->hc = x->hc;
		c->host_next = x->host_next;
	} else {
		/* The first command from c0 on issued at t or later (issue times only grow). */
		guint32 lo = c0, hi = c->sync;
		while (lo < hi) {
			guint32 mid = lo + (hi - lo) / 2;
			if (c->iss[mid] >= t)
				hi = mid;
			else
				lo = mid + 1;
		}
		/* The host reached a sync before t: whether it blocked, and until when, depends
		 * on the new plan's run. */
		if (lo == c->sync && lo < nn)
			return FALSE;
		c->hc = lo;
		c->host_next = lo < nn ? c->iss[lo] : NEVER;
	}
	for (guint32 q = 0; q < Q; q++) {
		c->reg[q] = NONE;
		c->unreg[q] = 0;
		guint32 qh = k->qhead[q];
		if (qh != NONE && qh < c0) {
			/* Commands below c0 wait in it: those from c0 on sit behind them. */
			c->head[q] = qh;
			continue;
		}
		/* Every command below c0 of the queue has left it. The old plan's first from c0
		 * on must not have (it is the head, or there is none). */
		if (qh != c->ofirst[q])
			return FALSE;
		c->unreg[q] = qh != NONE && k->q_reg[q];
		/* The new head: not issued before t, or its stream still runs the command below
		 * c0 that it follows, it has not been looked at; a wait on an event not fired by
		 * t was looked at and registered; anything else would have left. */
		guint32 h = c->head[q] = c->nfirst[q];
		if (h == NONE || h >= c->hc || k->s_inflight[nc[h].stream] != NONE)
			continue;
		if (nc[h].kind == LH_CMD_WAIT && !(nc[h].arg < r->E && k->fired[nc[h].arg])) {
			c->reg[q] = (guint32)nc[h].arg;
			continue;
		}
		return FALSE;
	}
	return TRUE;
}

/* Replaces the state lh_simulate set up for the new plan with checkpoint c->from, rebuilt for
 * it as ck_check found. The Sim is copied whole and then given back the new run's arrays and
 * plan: an array the loop writes that is missing below is left pointing into the checkpoint's
 * run, which the property test catches (tests/test-ckpt.c). */
static void ck_restore(World *w, CkCtl *c)
{
	const Ck *k = c->from;
	if (!k)
		return;
	CkRun *r = k->run;
	if (!r->op_cmd) { /* made once, when a checkpoint of the run is first restored */
		r->op_cmd = g_new(guint32, MAX(r->n_ops, 1));
		for (guint32 i = 0; i < r->n_ops; i++)
			r->op_cmd[i] = NONE;
		for (guint32 i = 0; i < r->n_cmds; i++)
			if (r->cmds[i].kind == LH_CMD_RUN && r->cmds[i].arg < r->n_ops)
				r->op_cmd[r->cmds[i].arg] = i;
	}
	Sim *x = &w->dev[0];
	Sim fresh = *x;
	*x = k->x;
#define KEEP(f) x->f = fresh.f
	KEEP(w);
	KEEP(g);
	KEEP(ops);
	KEEP(deps);
	KEEP(hw);
	KEEP(p);
	KEEP(cmds);
	KEEP(tr);
	KEEP(n_cmds);
	KEEP(E);
	KEEP(dnext);
	KEEP(sq);
	KEEP(qnext);
	KEEP(qhead);
	KEEP(qtail);
	KEEP(q_blocked_next);
	KEEP(ev_blocked);
	KEEP(fired);
	KEEP(s_inflight);
	KEEP(s_outstanding);
	KEEP(q_reg);
	KEEP(heap);
	KEEP(in_heap);
	KEEP(n_stream_cmds);
	KEEP(cflags);
	KEEP(h2d_busy);
	KEEP(d2h_busy);
	KEEP(buf);
	KEEP(consumers);
	KEEP(pk);
	KEEP(pk_t);
	KEEP(pk_host);
	KEEP(last_cmd);
	KEEP(error);
#undef KEEP
	g_assert(fresh.acts == NULL && fresh.sm_line.v == NULL && fresh.h2d_line.v == NULL &&
	         fresh.d2h_line.v == NULL);
	x->acts = g_memdup2(k->acts, MAX(x->n_slots, 1) * sizeof(Act));
	Fifo *ln[3] = {&x->sm_line, &x->h2d_line, &x->d2h_line};
	for (int i = 0; i < 3; i++) {
		ln[i]->v = ln[i]->cap ? g_new(guint32, ln[i]->cap) : NULL;
		if (ln[i]->len)
			ck_copy(ln[i]->v, k->line[i], ln[i]->len * sizeof(guint32));
		ln[i]->head = 0;
	}
	guint32 Q = x->Q, S = x->S, nE = x->E, oE = r->E, c0 = c->c0, ohc = k->x.hc;
	x->hc = c->hc;
	x->host_next = c->host_next;
	/* Queues, and the waits registered on events. */
	ck_copy(x->q_blocked_next, k->q_blocked_next, Q * sizeof(guint32));
	for (guint32 q = 0; q < Q; q++) {
		x->qhead[q] = c->head[q];
		x->q_reg[q] = k->q_reg[q] && !c->unreg[q];
	}
	ck_copy(x->fired, k->fired, MIN(oE, nE));
	for (guint32 e = 0; e < nE; e++) {
		guint32 *tail = &x->ev_blocked[e];
		if (e < oE)
			for (guint32 q = k->ev_blocked[e]; q != NONE; q = k->q_blocked_next[q])
				if (!c->unreg[q]) {
					*tail = q;
					tail = &x->q_blocked_next[q];
				}
		*tail = NONE;
	}
	for (guint32 q = 0; q < Q; q++)
		if (c->reg[q] != NONE) {
			x->q_reg[q] = 1;
			x->q_blocked_next[q] = x->ev_blocked[c->reg[q]];
			x->ev_blocked[c->reg[q]] = q;
		}
	/* Streams: issued and not completed, the old plan's from c0 on out, the new's in. */
	ck_copy(x->s_inflight, k->s_inflight, S * sizeof(guint32));
	ck_copy(x->s_outstanding, k->s_outstanding, S * sizeof(guint32));
	for (guint32 i = c0; i < ohc; i++)
		if (r->cmds[i].kind != LH_CMD_HOST && r->cmds[i].kind != LH_CMD_SYNC)
			x->s_outstanding[r->cmds[i].stream]--;
	for (guint32 i = c0; i < c->hc; i++)
		if (x->cmds[i].kind != LH_CMD_HOST && x->cmds[i].kind != LH_CMD_SYNC)
			x->s_outstanding[x->cmds[i].stream]++;
	/* Engines and memory. */
	ck_copy(x->h2d_busy, k->h2d_busy, x->hw->copy_engines_h2d);
	ck_copy(x->d2h_busy, k->d2h_busy, x->hw->copy_engines_d2h);
	ck_copy(x->consumers, k->consumers, r->n_ops * sizeof(guint32));
	/* The trace before t: the old run's final values below t, for what commands below c0
	 * did; the new plan's issues from c0 on. */
	LhTrace *tr = x->tr;
	const LhTrace *ot = r->tr;
	gint64 t = x->t;
	g_array_set_size(tr->mem, k->x.mem_n);
	ck_copy(tr->mem->data, ot->mem->data, k->x.mem_n * sizeof(LhMemPoint));
	*x->pk = k->pk;
	*x->pk_t = k->pk_t;
	*x->pk_host = k->pk_host;
	for (guint32 i = 0; i < r->n_ops; i++) {
		const LhOpTiming *o = &ot->ops[i];
		LhOpTiming *nt = &tr->ops[i];
		guint32 oc = r->op_cmd[i];
		if (o->start >= 0 && o->start < t) {
			nt->start = o->start;
			nt->engine = o->engine;
			nt->engine_index = o->engine_index;
		}
		if (o->end >= 0 && o->end < t)
			nt->end = o->end;
		if (oc == NONE || oc >= c0)
			continue;
		if (oc < ohc)
			nt->issue = o->issue;
		if (oc < k->qhead[x->sq[r->cmds[oc].stream]]) /* dispatched */
			nt->stream = o->stream;
	}
	for (guint32 i = 0; i < MIN(c0, ohc); i++)
		tr->cmd_issue[i] = ot->cmd_issue[i];
	for (guint32 i = c0; i < c->hc; i++) {
		tr->cmd_issue[i] = c->iss[i];
		if (x->cmds[i].kind == LH_CMD_RUN)
			tr->ops[x->cmds[i].arg].issue = c->iss[i];
	}
}

/* The first command where @a and @b differ (their common length when none does). */
static guint32 first_diff(const LhCmd *a, guint32 na, const LhCmd *b, guint32 nb)
{
	guint32 i = 0, n = MIN(na, nb);
	while (i < n && a[i].kind == b[i].kind && a[i].stream == b[i].stream &&
	       a[i].arg == b[i].arg)
		i++;
	return i;
}

LhSimRun *lh__sim_run(const LhGraph *g, const LhHw *hw, const LhPlan *plan, const LhSimOptions *opt,
                      const LhSimRun *from, guint32 every, gboolean *over_memory, GError **error)
{
	g_return_val_if_fail(g && hw && plan && lh_graph_is_finished(g), NULL);
	LhSimOptions defaults = {0};
	if (!opt)
		opt = &defaults;
	gboolean placed = lh_graph_placed(g);
	double slow0 = opt->slow ? opt->slow[0] : 1;
	guint32 nn = lh_plan_n_cmds(plan), S = lh_plan_n_streams(plan), n_ops = lh_graph_n_ops(g);
	const LhCmd *nc = lh_plan_cmds(plan, NULL);
	CkRun *run = g_new0(CkRun, 1);
	run->ref = 1;
	run->cmds = g_memdup2(nc, MAX(nn, 1) * sizeof(LhCmd));
	run->n_cmds = nn;
	run->S = S;
	run->E = lh_plan_n_events(plan);
	run->n_ops = n_ops;
	CkCtl c = {0};
	c.every = every ? every : 64;
	c.run = run;
	c.taken = g_ptr_array_new();
	LhSimRun *res = g_new0(LhSimRun, 1);
	res->g = g;
	res->hw = hw;
	res->strict = opt->strict_memory;
	res->slow0 = slow0;
	res->info.t_from = -1;
	/* The latest valid checkpoint of @from: only one of the same inputs. */
	guint32 upto = 0; /* from's checkpoints kept: those up to the one restored */
	gboolean same = from && !placed && from->g == g && from->hw == hw &&
	                from->strict == res->strict && from->slow0 == slow0;
	if (same && from->n_ck) {
		guint32 Q = MIN(hw->hw_queues, MAX(S, 1));
		c.iss = g_new(gint64, MAX(nn, 1));
		c.head = g_new(guint32, Q);
		c.ofirst = g_new(guint32, Q);
		c.nfirst = g_new(guint32, Q);
		c.unreg = g_new(guint8, Q);
		c.reg = g_new(guint32, Q);
		const CkRun *seen = NULL; /* checkpoints come in runs: c0 once per run */
		guint32 c0 = 0;
		for (guint32 i = from->n_ck; i-- > 0;) {
			const Ck *k = from->ck[i];
			res->info.n_tried++;
			if (k->run->S != S || k->x.Q != Q)
				continue;
			if (k->run != seen) {
				seen = k->run;
				c0 = first_diff(k->run->cmds, k->run->n_cmds, nc, nn);
				c.cost_of = (Sim *)&k->x;
				if (c0)
					ck_prep(&c, k->run, c0, nc, nn, Q);
			}
			if (c0 == 0 || !ck_check(&c, k, nc, nn))
				continue;
			c.from = k;
			upto = i + 1;
			res->info.n_tried--;
			break;
		}
	}
	LhTrace *tr = simulate(g, hw, plan, opt, over_memory, error, placed ? NULL : &c);
	g_free(c.iss);
	g_free(c.head);
	g_free(c.ofirst);
	g_free(c.nfirst);
	g_free(c.unreg);
	g_free(c.reg);
	if (!tr) {
		for (guint i = 0; i < c.taken->len; i++)
			ck_unref(c.taken->pdata[i]);
		g_ptr_array_free(c.taken, TRUE);
		ckrun_unref(run);
		g_free(res);
		return NULL;
	}
	run->tr = tr;
	res->run = run;
	res->n_ck = upto + c.taken->len;
	res->ck = g_new(Ck *, MAX(res->n_ck, 1));
	for (guint32 i = 0; i < upto; i++) {
		res->ck[i] = from->ck[i];
		res->ck[i]->ref++;
	}
	for (guint i = 0; i < c.taken->len; i++)
		res->ck[upto + i] = c.taken->pdata[i];
	g_ptr_array_free(c.taken, TRUE);
	if (c.from) {
		res->info.c0 = c.c0;
		res->info.t_from = c.from->x.t;
	}
	res->info.n_ckpt = res->n_ck;
	res->info.instants = c.instants;
	return res;
}

const LhTrace *lh__sim_run_trace(const LhSimRun *r)
{
	return r->run->tr;
}

void lh__sim_run_info(const LhSimRun *r, LhSimRunInfo *info)
{
	*info = r->info;
}

void lh__sim_run_free(LhSimRun *r)
{
	if (!r)
		return;
	for (guint32 i = 0; i < r->n_ck; i++)
		ck_unref(r->ck[i]);
	g_free(r->ck);
	ckrun_unref(r->run);
	g_free(r);
}
