/* lhsim — the `cpu` replay backend: the plan's semantics on real threads.
 *
 * The calling thread is the host: it issues the plan's commands in order, each taking its
 * model cost (launch_ns for a run, event_ns for a signal or wait, NS for `host NS`) as a
 * timed sleep, and blocks at a `sync` until the stream has completed what was issued. Each
 * stream has a worker thread that executes its commands in order. A command leaves its
 * hardware queue (stream s -> queue s mod hw_queues) only after every earlier command of that
 * queue has, which reproduces the false dependencies of shared queues; a run then joins the
 * FIFO line of its engine (the copy engines of its direction, or the resident-kernel slots)
 * and sleeps for its duration once it gets a slot. Signals fire when the stream reaches them,
 * waits block until their event has fired: events follow the plan exactly.
 *
 * What an op sleeps. The cpu backend checks the replay machinery and the plan's ordering, not
 * the resource model: threads do not compete for SMs, HBM or PCIe the way kernels do. So each
 * op sleeps for its duration *in the engine's prediction of this very plan* (end - start in
 * the simulated trace), which already contains the slowdowns from sharing. With those
 * durations, a correct replay of the ordering (dispatch, queues, engine lines, events, host
 * issue and syncs) lands on the predicted makespan up to OS jitter; had it slept standalone
 * durations, any plan with concurrency would miss the prediction for reasons no thread can
 * emulate, and "measured within 10 %" would test nothing. The time scale stretches every
 * duration and host cost so that sleeps stand well above jitter; measured times are divided
 * by it again, so the trace is in the prediction's nanoseconds.
 *
 * All sleeps are to absolute deadlines (CLOCK_MONOTONIC), so that wake-up latency does not
 * accumulate along the host's issue sequence.
 */
#include "backends/backend-private.h"
#include "sim/engine.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <sched.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define NONE G_MAXUINT32

enum { LINE_SM, LINE_H2D, LINE_D2H, LINE_N };

typedef struct {
	guint32 cap;
	guint8 *busy; /* per slot */
	guint32 n_busy;
	guint64 ticket;  /* next ticket to hand out */
	guint64 serving; /* ticket whose turn it is */
} Line;

typedef struct Cpu Cpu;

typedef struct {
	Cpu *x;
	guint32 stream;
	GThread *thread;
} Worker;

struct Cpu {
	const LhGraph *g;
	const LhPlan *p;
	const LhHw *hw;
	const LhTrace *pred;
	double scale;
	gint64 t0; /* wall ns at the start of the run */
	guint32 n_cmds, S, Q;

	GMutex lock;
	GCond cond;
	gboolean abort;    /* a run could not start: workers leave */
	guint32 issued;    /* commands the host has issued */
	guint8 *fired;     /* per event */
	guint32 *q_left;   /* per queue: commands that have left it */
	guint32 *qpos;     /* per command: position within its queue */
	guint32 *s_done;   /* per stream: commands completed */
	guint32 *s_issued; /* per stream: commands issued */
	guint32 *s_head;   /* per stream: command waiting to leave its queue, or NONE */
	guint32 **s_cmds;  /* per stream: its commands in order */
	guint32 *s_n;
	Line line[LINE_N];

	/* results of this run, wall ns from t0 */
	gint64 *op_issue, *op_start, *op_end;
	guint8 *op_slot;
	gint64 *cmd_issue;
};

static gint64 now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (gint64)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until(gint64 deadline)
{
	struct timespec ts = {(time_t)(deadline / 1000000000), (long)(deadline % 1000000000)};
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Linux lets a sleeping thread wake up to 50 us late by default (timer slack), which adds
 * up along a chain of ops; ask for 1 ns. Returns the previous value (0 elsewhere). */
static unsigned long tight_timers(unsigned long slack)
{
#ifdef __linux__
	int old = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	prctl(PR_SET_TIMERSLACK, slack, 0, 0, 0);
	return old > 0 ? (unsigned long)old : 50000;
#else
	(void)slack;
	return 0;
#endif
}

/* On a busy machine a thread that wakes up may wait for a CPU for milliseconds. Replay
 * threads sleep almost all the time, so running them under the lowest real-time priority
 * costs others nothing and makes their wake-ups prompt. Where that is not permitted (no
 * CAP_SYS_NICE), they run as before. *old (may be NULL) receives the previous policy and
 * priority, for restore_sched. */
typedef struct {
	int policy;
	struct sched_param param;
	gboolean changed;
} Sched;

static void prompt_wakeups(Sched *old)
{
	Sched o = {0};
	pthread_getschedparam(pthread_self(), &o.policy, &o.param);
	struct sched_param p = {.sched_priority = sched_get_priority_min(SCHED_FIFO)};
	o.changed = pthread_setschedparam(pthread_self(), SCHED_FIFO, &p) == 0;
	if (old)
		*old = o;
}

static void restore_sched(const Sched *old)
{
	if (old->changed)
		pthread_setschedparam(pthread_self(), old->policy, &old->param);
}

static gint64 scaled(const Cpu *x, double ns)
{
	return ns <= 0 ? 0 : (gint64)llround(ns * x->scale);
}

static int line_of(LhEngine e)
{
	return e == LH_ENGINE_H2D ? LINE_H2D : e == LH_ENGINE_D2H ? LINE_D2H : LINE_SM;
}

/* Called with the lock held: may command @c (of stream @s) leave its queue now? */
static gboolean can_leave(const Cpu *x, guint32 c)
{
	const LhCmd *cmd = lh_plan_cmd(x->p, c);
	if (x->issued <= c)
		return FALSE;
	if (x->q_left[cmd->stream % x->Q] != x->qpos[c])
		return FALSE;
	if (cmd->kind == LH_CMD_WAIT && !x->fired[cmd->arg])
		return FALSE;
	return TRUE;
}

/* Called with the lock held. The engine dispatches commands that become possible at one
 * instant in plan order, so engine lines see them in that order. Threads race; so a run
 * waits while another stream's head is an earlier run for the same engine line that could
 * leave its queue right now (its thread has not woken up yet). */
static gboolean earlier_run_ready(const Cpu *x, guint32 s, guint32 c, int line)
{
	for (guint32 s2 = 0; s2 < x->S; s2++) {
		guint32 h = x->s_head[s2];
		if (s2 == s || h == NONE || h > c)
			continue;
		const LhCmd *hc = lh_plan_cmd(x->p, h);
		if (hc->kind != LH_CMD_RUN ||
		    line_of(lh_op_engine(lh_graph_op(x->g, (guint32)hc->arg)->kind)) != line)
			continue;
		if (can_leave(x, h))
			return TRUE;
	}
	return FALSE;
}

static gpointer worker_main(gpointer data)
{
	Worker *w = data;
	Cpu *x = w->x;
	guint32 s = w->stream;
	tight_timers(1);
	prompt_wakeups(NULL);
	for (guint32 k = 0; k < x->s_n[s]; k++) {
		guint32 c = x->s_cmds[s][k];
		const LhCmd *cmd = lh_plan_cmd(x->p, c);
		guint32 next = k + 1 < x->s_n[s] ? x->s_cmds[s][k + 1] : NONE;
		int line = cmd->kind == LH_CMD_RUN
		               ? line_of(lh_op_engine(lh_graph_op(x->g, (guint32)cmd->arg)->kind))
		               : -1;
		g_mutex_lock(&x->lock);
		while (!x->abort &&
		       (!can_leave(x, c) || (line >= 0 && earlier_run_ready(x, s, c, line))))
			g_cond_wait(&x->cond, &x->lock);
		if (x->abort) {
			g_mutex_unlock(&x->lock);
			return NULL;
		}
		x->q_left[cmd->stream % x->Q]++;
		if (cmd->kind != LH_CMD_RUN) {
			if (cmd->kind == LH_CMD_SIGNAL)
				x->fired[cmd->arg] = 1;
			x->s_done[s]++;
			x->s_head[s] = next;
			g_cond_broadcast(&x->cond);
			g_mutex_unlock(&x->lock);
			continue;
		}
		/* A dispatched run joins its engine's FIFO line and frees its queue. */
		guint32 op = (guint32)cmd->arg;
		Line *ln = &x->line[line];
		x->s_head[s] = NONE;
		guint64 ticket = ln->ticket++;
		g_cond_broadcast(&x->cond);
		while (ln->serving != ticket || ln->n_busy >= ln->cap)
			g_cond_wait(&x->cond, &x->lock);
		guint32 slot = 0;
		while (ln->busy[slot])
			slot++;
		ln->busy[slot] = 1;
		ln->n_busy++;
		ln->serving++;
		g_cond_broadcast(&x->cond);
		g_mutex_unlock(&x->lock);

		const LhOpTiming *pt = &x->pred->ops[op];
		gint64 start = now_ns();
		sleep_until(start + scaled(x, (double)(pt->end - pt->start)));
		gint64 end = now_ns();

		g_mutex_lock(&x->lock);
		x->op_start[op] = start - x->t0;
		x->op_end[op] = end - x->t0;
		x->op_slot[op] = (guint8)MIN(slot, 255);
		ln->busy[slot] = 0;
		ln->n_busy--;
		x->s_done[s]++;
		x->s_head[s] = next;
		g_cond_broadcast(&x->cond);
		g_mutex_unlock(&x->lock);
	}
	return NULL;
}

/* The host: issues every command at its model cost, blocking at syncs. */
static void host_run(Cpu *x)
{
	/* Ideal host clock, wall ns from t0. The step's launch (step_overhead_ns) comes before
	 * the first command, as in the engine (docs/engine.md, "The host"). */
	gint64 t = x->n_cmds ? scaled(x, x->hw->step_overhead_ns) : 0;
	for (guint32 c = 0; c < x->n_cmds; c++) {
		const LhCmd *cmd = lh_plan_cmd(x->p, c);
		double cost = 0;
		switch ((LhCmdKind)cmd->kind) {
		case LH_CMD_RUN:
			cost = x->hw->launch_ns;
			break;
		case LH_CMD_SIGNAL:
		case LH_CMD_WAIT:
			cost = x->hw->event_ns;
			break;
		case LH_CMD_HOST:
			cost = (double)cmd->arg;
			break;
		case LH_CMD_SYNC:
			g_mutex_lock(&x->lock);
			while (x->s_done[cmd->stream] < x->s_issued[cmd->stream])
				g_cond_wait(&x->cond, &x->lock);
			g_mutex_unlock(&x->lock);
			t = MAX(t, now_ns() - x->t0);
			break;
		}
		t += scaled(x, cost);
		sleep_until(x->t0 + t);
		gint64 at = now_ns() - x->t0;
		g_mutex_lock(&x->lock);
		x->issued = c + 1;
		if (cmd->kind != LH_CMD_HOST && cmd->kind != LH_CMD_SYNC)
			x->s_issued[cmd->stream]++;
		x->cmd_issue[c] = at;
		if (cmd->kind == LH_CMD_RUN)
			x->op_issue[cmd->arg] = at;
		g_cond_broadcast(&x->cond);
		g_mutex_unlock(&x->lock);
	}
}

/* One timed run of the plan; fills x's result arrays. */
static gboolean run_once(Cpu *x, GError **error)
{
	guint32 n_ops = lh_graph_n_ops(x->g);
	x->issued = 0;
	x->abort = FALSE;
	memset(x->fired, 0, MAX(lh_plan_n_events(x->p), 1));
	memset(x->q_left, 0, sizeof(guint32) * x->Q);
	memset(x->s_done, 0, sizeof(guint32) * MAX(x->S, 1));
	memset(x->s_issued, 0, sizeof(guint32) * MAX(x->S, 1));
	for (guint32 s = 0; s < x->S; s++)
		x->s_head[s] = x->s_n[s] ? x->s_cmds[s][0] : NONE;
	for (guint32 i = 0; i < n_ops; i++)
		x->op_issue[i] = x->op_start[i] = x->op_end[i] = -1;
	for (int l = 0; l < LINE_N; l++) {
		Line *ln = &x->line[l];
		memset(ln->busy, 0, ln->cap);
		ln->n_busy = 0;
		ln->ticket = ln->serving = 0;
	}
	g_autofree Worker *w = g_new0(Worker, MAX(x->S, 1));
	x->t0 = now_ns();
	gboolean ok = TRUE;
	g_autoptr(GError) terr = NULL;
	for (guint32 s = 0; s < x->S && ok; s++) {
		w[s].x = x;
		w[s].stream = s;
		if (x->s_n[s] == 0)
			continue;
		g_autofree char *name = g_strdup_printf("lh-stream-%u", s);
		w[s].thread = g_thread_try_new(name, worker_main, &w[s], &terr);
		ok = w[s].thread != NULL;
	}
	if (!ok) {
		/* Threads already started wait on commands the host never issued: release them. */
		g_mutex_lock(&x->lock);
		x->abort = TRUE;
		g_cond_broadcast(&x->cond);
		g_mutex_unlock(&x->lock);
	} else {
		/* The host is the caller's thread: restore its timer slack afterwards. */
		unsigned long old = tight_timers(1);
		Sched sched;
		prompt_wakeups(&sched);
		host_run(x);
		restore_sched(&sched);
		tight_timers(old);
	}
	for (guint32 s = 0; s < x->S; s++)
		if (w[s].thread)
			g_thread_join(w[s].thread);
	if (!ok) {
		g_set_error(error, LH_BACKEND_ERROR, LH_BACKEND_ERROR_FAILED,
		            "cpu replay: cannot start a stream thread: %s", terr->message);
		return FALSE;
	}
	return TRUE;
}

static void cpu_free(Cpu *x)
{
	g_free(x->fired);
	g_free(x->q_left);
	g_free(x->qpos);
	g_free(x->s_done);
	g_free(x->s_issued);
	g_free(x->s_head);
	for (guint32 s = 0; s < x->S; s++)
		g_free(x->s_cmds[s]);
	g_free(x->s_cmds);
	g_free(x->s_n);
	for (int l = 0; l < LINE_N; l++)
		g_free(x->line[l].busy);
	g_free(x->op_issue);
	g_free(x->op_start);
	g_free(x->op_end);
	g_free(x->op_slot);
	g_free(x->cmd_issue);
	g_mutex_clear(&x->lock);
	g_cond_clear(&x->cond);
}

static gboolean cpu_available(GError **error)
{
	(void)error;
	return TRUE;
}

static LhTrace *cpu_replay(const LhGraph *g, const LhPlan *plan, const LhHw *hw,
                           const LhReplayOptions *opt, GError **error)
{
	g_return_val_if_fail(g && plan && hw, NULL);
	LhReplayOptions dflt;
	if (!opt) {
		lh_replay_options_init(&dflt);
		opt = &dflt;
	}
	if (!(opt->time_scale >= 0) || !isfinite(opt->time_scale) || opt->repeats < 1) {
		g_set_error(error, LH_BACKEND_ERROR, LH_BACKEND_ERROR_OPTION,
		            "cpu replay: time scale %g and repeats %u: the scale must be >= 0 "
		            "(0 chooses) and repeats >= 1",
		            opt->time_scale, opt->repeats);
		return NULL;
	}
	if (!lh_backend_check_plan(g, plan, error))
		return NULL;
	guint32 n_ops = lh_graph_n_ops(g), n = lh_plan_n_cmds(plan);
	g_autoptr(LhTrace) own_pred = NULL;
	const LhTrace *pred =
	    lh_replay_prediction("cpu replay", g, hw, plan, opt, &own_pred, error);
	if (!pred)
		return NULL;

	Cpu x = {0};
	x.g = g;
	x.p = plan;
	x.hw = hw;
	x.pred = pred;
	x.scale = lh_replay_time_scale(opt, g, pred);
	x.n_cmds = n;
	x.S = lh_plan_n_streams(plan);
	x.Q = MAX(hw->hw_queues, 1);
	g_mutex_init(&x.lock);
	g_cond_init(&x.cond);
	x.fired = g_new0(guint8, MAX(lh_plan_n_events(plan), 1));
	x.q_left = g_new0(guint32, x.Q);
	x.qpos = g_new0(guint32, MAX(n, 1));
	x.s_done = g_new0(guint32, MAX(x.S, 1));
	x.s_issued = g_new0(guint32, MAX(x.S, 1));
	x.s_head = g_new0(guint32, MAX(x.S, 1));
	x.s_cmds = g_new0(guint32 *, MAX(x.S, 1));
	x.s_n = g_new0(guint32, MAX(x.S, 1));
	g_autofree guint32 *q_count = g_new0(guint32, x.Q);
	for (guint32 c = 0; c < n; c++) {
		const LhCmd *cmd = lh_plan_cmd(plan, c);
		if (cmd->kind == LH_CMD_HOST || cmd->kind == LH_CMD_SYNC)
			continue;
		x.qpos[c] = q_count[cmd->stream % x.Q]++;
		x.s_n[cmd->stream]++;
	}
	for (guint32 s = 0; s < x.S; s++) {
		x.s_cmds[s] = g_new(guint32, MAX(x.s_n[s], 1));
		x.s_n[s] = 0;
	}
	for (guint32 c = 0; c < n; c++) {
		const LhCmd *cmd = lh_plan_cmd(plan, c);
		if (cmd->kind != LH_CMD_HOST && cmd->kind != LH_CMD_SYNC)
			x.s_cmds[cmd->stream][x.s_n[cmd->stream]++] = c;
	}
	x.line[LINE_SM].cap = hw->max_resident_kernels;
	x.line[LINE_H2D].cap = hw->copy_engines_h2d;
	x.line[LINE_D2H].cap = hw->copy_engines_d2h;
	for (int l = 0; l < LINE_N; l++)
		x.line[l].busy = g_new0(guint8, MAX(x.line[l].cap, 1));
	x.op_issue = g_new(gint64, MAX(n_ops, 1));
	x.op_start = g_new(gint64, MAX(n_ops, 1));
	x.op_end = g_new(gint64, MAX(n_ops, 1));
	x.op_slot = g_new0(guint8, MAX(n_ops, 1));
	x.cmd_issue = g_new0(gint64, MAX(n, 1));

	/* Per repeat, every time of interest; the trace gets the medians. Medians keep every
	 * ordering that holds in each run (x_r <= y_r for all r implies med x <= med y). */
	/* Warm-up runs (none by default: threads have nothing to warm but the page cache). */
	for (guint32 r = 0; r < opt->warmup; r++) {
		if (!run_once(&x, error)) {
			cpu_free(&x);
			return NULL;
		}
	}
	guint32 R = opt->repeats;
	g_autofree gint64 *all = g_new(gint64, (gsize)R * (3 * MAX(n_ops, 1) + MAX(n, 1)));
	gsize stride = 3 * (gsize)MAX(n_ops, 1) + MAX(n, 1);
	for (guint32 r = 0; r < R; r++) {
		if (!run_once(&x, error)) {
			cpu_free(&x);
			return NULL;
		}
		gint64 *row = all + r * stride;
		memcpy(row, x.op_issue, sizeof(gint64) * n_ops);
		memcpy(row + n_ops, x.op_start, sizeof(gint64) * n_ops);
		memcpy(row + 2 * (gsize)n_ops, x.op_end, sizeof(gint64) * n_ops);
		memcpy(row + 3 * (gsize)n_ops, x.cmd_issue, sizeof(gint64) * n);
	}
	LhTrace *t = lh_trace_new(n_ops, n);
	t->measured = TRUE;
	t->source = g_strdup("cpu");
	lh_replay_fill_medians(t, all, R, g, plan, x.scale);
	for (guint32 c = 0; c < n; c++) {
		const LhCmd *cmd = lh_plan_cmd(plan, c);
		if (cmd->kind != LH_CMD_RUN)
			continue;
		LhOpTiming *tm = &t->ops[cmd->arg];
		tm->engine_index = tm->engine == LH_ENGINE_H2D || tm->engine == LH_ENGINE_D2H
		                       ? x.op_slot[cmd->arg]
		                       : 0;
	}
	t->host_end = n ? t->cmd_issue[n - 1] : 0;
	lh_trace_rebuild_memory(t, g);
	cpu_free(&x);
	return t;
}

const LhBackend lh_backend_cpu = {
    .version = LH_BACKEND_ABI,
    .name = "cpu",
    .available = cpu_available,
    .replay = cpu_replay,
    .summary = "threads and timed sleeps: checks the plan's ordering on any machine",
    .calibrate = NULL,
};
