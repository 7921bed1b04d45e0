/* lhsim — lh_plan_validate(): checks a plan against its graph before anything runs.
 *
 * The ordering check runs the plan logically, without time: the host issues commands in
 * sequence, a stream completes its head command once it is issued and (for a wait) its event
 * has fired, a sync lets the host go on once its stream has completed what was issued. Each
 * stream carries a vector clock (for every stream t, how many commands of t are known to have
 * completed before this point); a wait merges the clock its signal captured, and commands
 * issued after a sync merge the clock the sync observed. A dep u -> v is ordered exactly when,
 * at v's run, the clock covers u's run. If the logical run stops with commands left, the plan
 * can deadlock on any hardware, and the error names each stuck stream and what it waits for.
 */
#include "sim/plan-private.h"

#include <string.h>

#define NONE G_MAXUINT32

typedef struct {
	const LhPlan *p;
	const LhGraph *g;
	const char *where;
	guint32 S;
	guint32 *ev_vc_at; /* event -> offset into vc pool + 1, or 0 */
} Ctx;

/* "plan.txt:12:1" or "plan: command 12" */
static char *cmd_pos(const Ctx *x, guint32 c)
{
	if (x->p->lines && c < x->p->lines->len)
		return g_strdup_printf("%s:%u:1", x->where, g_array_index(x->p->lines, guint32, c));
	return g_strdup_printf("%s: command %u", x->where, c + 1);
}

static const char *sname(const Ctx *x, guint32 s)
{
	return s < x->S ? lh_plan_stream(x->p, s)->name : "?";
}

static char *describe(const Ctx *x, guint32 c)
{
	const LhCmd *cmd = lh_plan_cmd(x->p, c);
	switch ((LhCmdKind)cmd->kind) {
	case LH_CMD_RUN:
		return g_strdup_printf("run %s %s", sname(x, cmd->stream),
		                       cmd->arg < lh_graph_n_ops(x->g)
		                           ? lh_graph_op(x->g, (guint32)cmd->arg)->name
		                           : "?");
	case LH_CMD_SIGNAL:
	case LH_CMD_WAIT: {
		char b[32];
		return g_strdup_printf("%s %s %s", lh_cmd_kind_name(cmd->kind),
		                       sname(x, cmd->stream),
		                       lh_plan_event_name(x->p, cmd->arg, b));
	}
	case LH_CMD_HOST:
		return g_strdup_printf("host %" G_GUINT64_FORMAT, cmd->arg);
	default:
		return g_strdup_printf("sync %s", sname(x, cmd->stream));
	}
}

static gboolean bad(const Ctx *x, GError **error, guint32 c, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);

static gboolean bad(const Ctx *x, GError **error, guint32 c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	if (c == NONE && x->p->lines && x->p->lines->len) {
		/* Whole-plan facts (an op that never runs) point at the plan's last command. */
		guint32 last = g_array_index(x->p->lines, guint32, x->p->lines->len - 1);
		g_set_error(error, LH_PLAN_ERROR, LH_PLAN_ERROR_INVALID,
		            "%s:%u:1: %s (the plan ends here)", x->where, last, msg);
	} else if (c == NONE) {
		g_set_error(error, LH_PLAN_ERROR, LH_PLAN_ERROR_INVALID, "%s: %s", x->where, msg);
	} else {
		g_autofree char *pos = cmd_pos(x, c);
		g_autofree char *d = describe(x, c);
		g_set_error(error, LH_PLAN_ERROR, LH_PLAN_ERROR_INVALID, "%s: '%s': %s", pos, d,
		            msg);
	}
	return FALSE;
}

/* Static checks: ranges, each op run once, events signaled once. */
static gboolean check_counts(const Ctx *x, guint32 *run_cmd, guint32 *sig_cmd, guint32 *n_waits,
                             GError **error)
{
	const LhPlan *p = x->p;
	guint32 n_ops = lh_graph_n_ops(x->g);
	guint32 n = lh_plan_n_cmds(p);
	for (guint32 c = 0; c < n; c++) {
		const LhCmd *cmd = lh_plan_cmd(p, c);
		if (cmd->kind > LH_CMD_SYNC)
			return bad(x, error, NONE, "command %u has unknown kind %u", c + 1,
			           cmd->kind);
		if (cmd->kind != LH_CMD_HOST && cmd->stream >= x->S)
			return bad(x, error, c, "stream #%u does not exist (the plan has %u)",
			           cmd->stream, x->S);
		if (cmd->kind == LH_CMD_RUN) {
			if (cmd->arg >= n_ops)
				return bad(x, error, c, "op #%" G_GUINT64_FORMAT " does not exist",
				           cmd->arg);
			guint32 op = (guint32)cmd->arg;
			if (lh_graph_op(x->g, op)->kind == LH_OP_INPUT)
				return bad(
				    x, error, c,
				    "op '%s' is an input: inputs are live from t=0 and never "
				    "run",
				    lh_graph_op(x->g, op)->name);
			if (run_cmd[op] != NONE) {
				g_autofree char *first = cmd_pos(x, run_cmd[op]);
				return bad(x, error, c, "op '%s' runs twice (first at %s)",
				           lh_graph_op(x->g, op)->name, first);
			}
			run_cmd[op] = c;
		} else if (cmd->kind == LH_CMD_SIGNAL || cmd->kind == LH_CMD_WAIT) {
			if (cmd->arg >= p->n_events)
				return bad(x, error, c,
				           "event e%" G_GUINT64_FORMAT " does not exist", cmd->arg);
			guint32 e = (guint32)cmd->arg;
			if (cmd->kind == LH_CMD_SIGNAL) {
				if (sig_cmd[e] != NONE) {
					g_autofree char *first = cmd_pos(x, sig_cmd[e]);
					return bad(x, error, c,
					           "event %s is signaled twice (first at %s)",
					           lh_plan_event_name(p, e, (char[32]){0}), first);
				}
				sig_cmd[e] = c;
			} else {
				n_waits[e]++;
			}
		}
	}
	for (guint32 c = 0; c < n; c++) {
		const LhCmd *cmd = lh_plan_cmd(p, c);
		if (cmd->kind == LH_CMD_WAIT && sig_cmd[cmd->arg] == NONE)
			return bad(x, error, c, "event %s is never signaled",
			           lh_plan_event_name(p, cmd->arg, (char[32]){0}));
	}
	for (guint32 i = 0; i < n_ops; i++) {
		const LhOp *op = lh_graph_op(x->g, i);
		if (op->kind != LH_OP_INPUT && run_cmd[i] == NONE)
			return bad(x, error, NONE,
			           "op '%s' (%s) never runs: every op but inputs "
			           "must run exactly once",
			           op->name, lh_op_kind_name(op->kind));
	}
	return TRUE;
}

/* Placement: streams and host commands on the graph's devices, each op run on a stream of its
 * own device, each event signaled and waited on one device. Devices meet only at rendezvous
 * (sim/graph.h): a wait across devices would be a dependency the graph cannot state. */
static gboolean check_devices(const Ctx *x, const guint32 *sig_cmd, GError **error)
{
	const LhPlan *p = x->p;
	gboolean placed = lh_graph_placed(x->g);
	guint32 D = placed ? lh_graph_devices(x->g) : 1;
	guint32 n = lh_plan_n_cmds(p);
	g_autofree guint32 *first_use = g_new(guint32, MAX(x->S, 1));
	for (guint32 s = 0; s < x->S; s++)
		first_use[s] = NONE;
	for (guint32 c = n; c-- > 0;) {
		const LhCmd *cmd = lh_plan_cmd(p, c);
		if (cmd->kind != LH_CMD_HOST)
			first_use[cmd->stream] = c;
	}
	for (guint32 s = 0; s < x->S; s++) {
		guint32 d = lh_plan_stream(p, s)->device;
		if (d < D)
			continue;
		if (!placed)
			return bad(x, error, first_use[s],
			           "stream '%s' is on device %u, but the graph is not placed on "
			           "devices (every stream is on device 0)",
			           sname(x, s), d);
		return bad(x, error, first_use[s],
		           "stream '%s' is on device %u, but the graph has %u device%s",
		           sname(x, s), d, D, D == 1 ? "" : "s");
	}
	for (guint32 c = 0; c < n; c++) {
		const LhCmd *cmd = lh_plan_cmd(p, c);
		guint32 d = lh__plan_cmd_device(p, cmd);
		if (cmd->kind == LH_CMD_HOST && d >= D)
			return bad(x, error, c, "the host of device %u: the graph %s", d,
			           placed ? "has fewer devices" : "is not placed on devices");
		if (cmd->kind == LH_CMD_RUN) {
			const LhOp *op = lh_graph_op(x->g, (guint32)cmd->arg);
			if (op->device != d)
				return bad(
				    x, error, c,
				    "op '%s' is on device %u, but stream '%s' is on device %u",
				    op->name, op->device, sname(x, cmd->stream), d);
		}
		if (cmd->kind == LH_CMD_WAIT) {
			const LhCmd *sg = lh_plan_cmd(p, sig_cmd[cmd->arg]);
			guint32 ds = lh__plan_cmd_device(p, sg);
			if (ds != d) {
				g_autofree char *ps = cmd_pos(x, sig_cmd[cmd->arg]);
				return bad(
				    x, error, c,
				    "event %s is waited for on device %u (stream '%s') but "
				    "signaled on device %u (stream '%s', %s): devices meet only "
				    "at a sync (a collective's parts, or a send and its recv)",
				    lh_plan_event_name(p, cmd->arg, (char[32]){0}), d,
				    sname(x, cmd->stream), ds, sname(x, sg->stream), ps);
			}
		}
	}
	return TRUE;
}

static void vc_merge(guint32 *dst, const guint32 *src, guint32 S)
{
	for (guint32 t = 0; t < S; t++)
		if (src[t] > dst[t])
			dst[t] = src[t];
}

gboolean lh_plan_validate(const LhPlan *p, const LhGraph *g, const char *where, GError **error)
{
	g_return_val_if_fail(p && g && lh_graph_is_finished(g), FALSE);
	Ctx x = {p, g, where ? where : (p->source ? p->source : "plan"), lh_plan_n_streams(p),
	         NULL};
	guint32 n = lh_plan_n_cmds(p), n_ops = lh_graph_n_ops(g), E = p->n_events, S = x.S;
	g_autofree guint32 *run_cmd = g_new(guint32, MAX(n_ops, 1));
	g_autofree guint32 *sig_cmd = g_new(guint32, MAX(E, 1));
	g_autofree guint32 *n_waits = g_new0(guint32, MAX(E, 1));
	memset(run_cmd, 0xff, sizeof(guint32) * n_ops);
	memset(sig_cmd, 0xff, sizeof(guint32) * E);
	if (!check_counts(&x, run_cmd, sig_cmd, n_waits, error))
		return FALSE;
	if (!check_devices(&x, sig_cmd, error))
		return FALSE;
	if (n == 0)
		return TRUE;
	/* Each device's host issues its own commands in plan order (one device: all of them). */
	guint32 D = lh_graph_placed(g) ? lh_graph_devices(g) : 1;
	g_autofree guint32 *dnext = g_new(guint32, n);
	g_autofree guint32 *hc = g_new(guint32, D);
	g_autofree guint32 *last = g_new(guint32, D);
	lh__plan_device_lists(p, D, hc, dnext, last);
	/* Rendezvous: a part's run leaves its stream once every part has reached the head of its
	 * own stream (sim/graph.h); arrived counts them. */
	guint32 n_rv = lh_graph_n_syncs(g);
	g_autofree guint32 *arrived = g_new0(guint32, MAX(n_rv, 1));
	g_autofree guint8 *at_rv = g_new0(guint8, n);

	/* Per-stream command lists and each command's position in its stream. */
	g_autofree guint32 *next = g_new(guint32, n);
	g_autofree guint32 *pos = g_new(guint32, n);
	g_autofree guint32 *head = g_new(guint32, MAX(S, 1));
	g_autofree guint32 *tail = g_new(guint32, MAX(S, 1));
	g_autofree guint32 *count = g_new0(guint32, MAX(S, 1));
	for (guint32 s = 0; s < S; s++)
		head[s] = tail[s] = NONE;
	for (guint32 c = 0; c < n; c++) {
		const LhCmd *cmd = lh_plan_cmd(p, c);
		next[c] = NONE;
		if (cmd->kind == LH_CMD_HOST || cmd->kind == LH_CMD_SYNC)
			continue;
		guint32 s = cmd->stream;
		pos[c] = count[s]++;
		if (tail[s] == NONE)
			head[s] = c;
		else
			next[tail[s]] = c;
		tail[s] = c;
	}

	/* Clocks: one per stream, the host's, one per signaled event until its last wait. */
	g_autofree guint32 *cur = g_new0(guint32, (gsize)S * S);
	g_autofree guint32 *host_all = g_new0(guint32, (gsize)MAX(S, 1) * D);
	g_autofree guint32 *host_gen_seen = g_new0(guint32, MAX(S, 1));
	g_autofree guint32 *host_gen = g_new0(guint32, D);
	/* A command issued after the k-th sync inherits the host clock as of that sync. Clocks
	 * only grow, so merging the latest host clock into a stream whose head was issued after
	 * that sync is exact; heads issued before it would over-merge, hence the generation:
	 * the sync generation at each command's issue. */
	g_autofree guint32 *issue_gen = g_new(guint32, n);
	g_autofree GPtrArray **host_snaps = g_new(GPtrArray *, D);
	for (guint32 d = 0; d < D; d++)
		host_snaps[d] = g_ptr_array_new_with_free_func(g_free);
	g_autofree guint32 **ev_vc = g_new0(guint32 *, MAX(E, 1));
	g_autofree gboolean *fired = g_new0(gboolean, MAX(E, 1));
	gboolean ok = TRUE;
	gboolean progress = TRUE;
	while (progress && ok) {
		progress = FALSE;
		for (guint32 d = 0; d < D; d++) {
			guint32 *host = host_all + (gsize)d * S;
			while (hc[d] < n) {
				guint32 h = hc[d];
				const LhCmd *cmd = lh_plan_cmd(p, h);
				if (cmd->kind == LH_CMD_SYNC) {
					guint32 s = cmd->stream;
					if (head[s] != NONE && head[s] < h)
						break;
					vc_merge(host, cur + (gsize)s * S, S);
					host_gen[d]++;
					g_ptr_array_add(host_snaps[d],
					                g_memdup2(host, sizeof(guint32) * S));
				}
				issue_gen[h] = host_gen[d];
				hc[d] = dnext[h];
				progress = TRUE;
			}
		}
		for (guint32 s = 0; s < S && ok; s++) {
			guint32 *vc = cur + (gsize)s * S;
			guint32 sd = D > 1 ? lh_plan_stream(p, s)->device : 0;
			while (head[s] != NONE && head[s] < hc[sd]) {
				guint32 c = head[s];
				const LhCmd *cmd = lh_plan_cmd(p, c);
				if (n_rv && cmd->kind == LH_CMD_RUN &&
				    lh_graph_op(g, (guint32)cmd->arg)->sync) {
					guint32 rv = lh_graph_op(g, (guint32)cmd->arg)->sync - 1, k;
					lh_graph_sync_ops(g, rv, &k);
					if (!at_rv[c]) {
						at_rv[c] = 1;
						arrived[rv]++;
					}
					if (arrived[rv] < k)
						break;
				}
				if (cmd->kind == LH_CMD_WAIT) {
					guint32 e = (guint32)cmd->arg;
					if (!fired[e])
						break;
					vc_merge(vc, ev_vc[e], S);
					if (--n_waits[e] == 0)
						g_clear_pointer(&ev_vc[e], g_free);
				}
				guint32 gen = issue_gen[c];
				if (gen > host_gen_seen[s]) {
					vc_merge(vc, g_ptr_array_index(host_snaps[sd], gen - 1), S);
					host_gen_seen[s] = gen;
				}
				if (cmd->kind == LH_CMD_RUN) {
					guint32 v = (guint32)cmd->arg, nd;
					const guint32 *deps = lh_graph_deps(g, v, &nd);
					for (guint32 k = 0; k < nd; k++) {
						guint32 u = deps[k];
						if (lh_graph_op(g, u)->kind == LH_OP_INPUT)
							continue;
						guint32 cu = run_cmd[u];
						guint32 su = lh_plan_cmd(p, cu)->stream;
						if (vc[su] > pos[cu])
							continue;
						g_autofree char *pu = cmd_pos(&x, cu);
						ok = bad(
						    &x, error, c,
						    "op '%s' may start before its dep '%s' ends: "
						    "'%s' runs on stream '%s' (%s) and no stream "
						    "order or signal/wait chain puts it first",
						    lh_graph_op(g, v)->name,
						    lh_graph_op(g, u)->name,
						    lh_graph_op(g, u)->name, sname(&x, su), pu);
						break;
					}
					if (!ok)
						break;
				}
				vc[s]++;
				if (cmd->kind == LH_CMD_SIGNAL) {
					guint32 e = (guint32)cmd->arg;
					fired[e] = TRUE;
					if (n_waits[e])
						ev_vc[e] = g_memdup2(vc, sizeof(guint32) * S);
				}
				head[s] = next[c];
				progress = TRUE;
			}
		}
	}
	for (guint32 e = 0; e < E; e++)
		g_free(ev_vc[e]);
	for (guint32 d = 0; d < D; d++)
		g_ptr_array_unref(host_snaps[d]);
	if (!ok)
		return FALSE;

	/* Anything left is a deadlock: name every stuck stream and what it waits for. */
	gboolean stuck = FALSE;
	guint32 first = NONE;
	for (guint32 d = 0; d < D; d++) {
		stuck |= hc[d] < n;
		first = MIN(first, hc[d] < n ? hc[d] : NONE);
	}
	for (guint32 s = 0; s < S; s++)
		stuck |= head[s] != NONE;
	if (!stuck)
		return TRUE;
	/* The message starts at the first stuck command: a host's, else the earliest head. */
	for (guint32 s = 0; s < S; s++)
		if (head[s] != NONE && head[s] < first)
			first = head[s];
	g_autofree char *first_pos = cmd_pos(&x, first);
	GString *msg = g_string_new(NULL);
	g_string_append_printf(msg, "%s: the plan deadlocks:", first_pos);
	for (guint32 dv = 0; dv < D; dv++) {
		if (hc[dv] >= n)
			continue;
		g_autofree char *pos_h = cmd_pos(&x, hc[dv]);
		g_autofree char *d = describe(&x, hc[dv]);
		if (D > 1)
			g_string_append_printf(msg, " the host of device %u is stuck at '%s' (%s);",
			                       dv, d, pos_h);
		else
			g_string_append_printf(msg, " the host is stuck at '%s' (%s);", d, pos_h);
	}
	for (guint32 s = 0; s < S; s++) {
		if (head[s] == NONE)
			continue;
		guint32 c = head[s];
		const LhCmd *cmd = lh_plan_cmd(p, c);
		g_autofree char *pc = cmd_pos(&x, c);
		g_autofree char *d = describe(&x, c);
		guint32 sd = D > 1 ? lh_plan_stream(p, s)->device : 0;
		const LhOp *rop =
		    cmd->kind == LH_CMD_RUN ? lh_graph_op(g, (guint32)cmd->arg) : NULL;
		if (c >= hc[sd])
			g_string_append_printf(
			    msg, " stream '%s' waits for the host to issue '%s' (%s);",
			    sname(&x, s), d, pc);
		else if (cmd->kind == LH_CMD_WAIT) {
			guint32 sc = sig_cmd[cmd->arg];
			g_autofree char *ps = cmd_pos(&x, sc);
			g_string_append_printf(
			    msg,
			    " stream '%s' is stuck at '%s' (%s): event %s"
			    " is signaled on stream '%s' (%s), which never gets there;",
			    sname(&x, s), d, pc, lh_plan_event_name(p, cmd->arg, (char[32]){0}),
			    sname(&x, lh_plan_cmd(p, sc)->stream), ps);
		} else if (rop && rop->sync) {
			/* A part at its rendezvous: name the parts that never get there. */
			guint32 k;
			const guint32 *parts = lh_graph_sync_ops(g, rop->sync - 1, &k);
			for (guint32 j = 0; j < k; j++) {
				guint32 rc = run_cmd[parts[j]];
				if (at_rv[rc])
					continue;
				g_autofree char *pr = cmd_pos(&x, rc);
				g_string_append_printf(
				    msg,
				    " stream '%s' (device %u) is stuck at '%s' (%s): op '%s' "
				    "meets op '%s' of device %u at sync '%s', and stream '%s' "
				    "(%s) never gets there;",
				    sname(&x, s), sd, d, pc, rop->name,
				    lh_graph_op(g, parts[j])->name,
				    lh_graph_op(g, parts[j])->device,
				    lh_graph_sync_name(g, rop->sync - 1),
				    sname(&x, lh_plan_cmd(p, rc)->stream), pr);
			}
		}
	}
	if (msg->str[msg->len - 1] == ';')
		g_string_truncate(msg, msg->len - 1);
	g_set_error_literal(error, LH_PLAN_ERROR, LH_PLAN_ERROR_INVALID, msg->str);
	g_string_free(msg, TRUE);
	return FALSE;
}
