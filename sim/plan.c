/* lhsim — the stream program: building, text reader and writer. */
#include "sim/graph-private.h"
#include "sim/pages-private.h"
#include "sim/plan-private.h"
#include "sim/util.h"

#include <errno.h>
#include <string.h>

/* The quark's name is a string with dashes, which clang-format would space. */
/* clang-format off */
G_DEFINE_QUARK(lh-plan-error-quark, lh_plan_error)
/* clang-format on */

static const char *const role_names[LH_ROLE_N] = {
    "compute", "async-compute", "collective", "p2p", "h2d", "d2h", "memcpy",
};

static void stream_clear(gpointer p)
{
	g_free(((LhStream *)p)->name);
}

LhPlan *lh_plan_new(void)
{
	LhPlan *p = g_new0(LhPlan, 1);
	p->streams = g_array_new(FALSE, TRUE, sizeof(LhStream));
	g_array_set_clear_func(p->streams, stream_clear);
	p->cmds = g_array_new(FALSE, FALSE, sizeof(LhCmd));
	return p;
}

void lh_plan_free(LhPlan *p)
{
	if (!p)
		return;
	g_array_unref(p->streams);
	g_array_unref(p->cmds);
	if (p->lines)
		g_array_unref(p->lines);
	g_free(p->scheduler);
	g_free(p->params);
	g_free(p->source);
	if (p->event_names)
		g_ptr_array_unref(p->event_names);
	g_free(p);
}

guint32 lh_plan_add_stream(LhPlan *p, const char *name, LhStreamRole role)
{
	return lh_plan_add_stream_on(p, name, role, 0);
}

guint32 lh_plan_add_stream_on(LhPlan *p, const char *name, LhStreamRole role, guint32 device)
{
	LhStream s = {g_strdup(name), role, device};
	g_array_append_val(p->streams, s);
	return p->streams->len - 1;
}

const LhCmd *lh_plan_cmds(const LhPlan *p, guint32 *n)
{
	g_return_val_if_fail(p != NULL, NULL);
	if (n)
		*n = p->cmds->len;
	return (const LhCmd *)p->cmds->data;
}

guint32 lh_plan_n_events(const LhPlan *p)
{
	g_return_val_if_fail(p != NULL, 0);
	return p->n_events;
}

const char *lh_plan_scheduler(const LhPlan *p)
{
	g_return_val_if_fail(p != NULL, NULL);
	return p->scheduler;
}

const char *lh_plan_params(const LhPlan *p)
{
	g_return_val_if_fail(p != NULL, NULL);
	return p->params;
}

const char *lh_plan_source(const LhPlan *p)
{
	g_return_val_if_fail(p != NULL, NULL);
	return p->source;
}

guint32 lh_plan_cmd_line(const LhPlan *p, guint32 c)
{
	g_return_val_if_fail(p != NULL, 0);
	return p->lines && c < p->lines->len ? g_array_index(p->lines, guint32, c) : 0;
}

guint32 lh_plan_n_streams(const LhPlan *p)
{
	return p->streams->len;
}

const LhStream *lh_plan_stream(const LhPlan *p, guint32 s)
{
	g_return_val_if_fail(s < p->streams->len, NULL);
	return &g_array_index(p->streams, LhStream, s);
}

guint32 lh_plan_n_cmds(const LhPlan *p)
{
	return p->cmds->len;
}

const LhCmd *lh_plan_cmd(const LhPlan *p, guint32 i)
{
	g_return_val_if_fail(i < p->cmds->len, NULL);
	return &g_array_index(p->cmds, LhCmd, i);
}

static void push(LhPlan *p, LhCmdKind k, guint32 s, guint64 arg)
{
	LhCmd c = {k, s, arg};
	g_array_append_val(p->cmds, c);
}

LhCmd *lh__plan_append(LhPlan *p, guint32 n)
{
	guint32 len = p->cmds->len;
	g_array_set_size(p->cmds, len + n);
	return &g_array_index(p->cmds, LhCmd, len);
}

void lh_plan_run(LhPlan *p, guint32 stream, guint32 op)
{
	lh__cmds_run(lh__plan_append(p, 1), stream, op);
}

guint32 lh_plan_new_event(LhPlan *p)
{
	return p->n_events++;
}

void lh_plan_signal(LhPlan *p, guint32 stream, guint32 event)
{
	push(p, LH_CMD_SIGNAL, stream, event);
}

void lh_plan_wait(LhPlan *p, guint32 stream, guint32 event)
{
	push(p, LH_CMD_WAIT, stream, event);
}

guint32 lh_plan_link(LhPlan *p, guint32 from, guint32 to)
{
	guint32 e = lh_plan_new_event(p);
	lh__cmds_link(lh__plan_append(p, 2), from, to, e);
	return e;
}

void lh_plan_host(LhPlan *p, guint64 ns)
{
	push(p, LH_CMD_HOST, 0, ns);
}

void lh_plan_host_on(LhPlan *p, guint32 device, guint64 ns)
{
	push(p, LH_CMD_HOST, device, ns);
}

void lh_plan_sync(LhPlan *p, guint32 stream)
{
	push(p, LH_CMD_SYNC, stream, 0);
}

void lh_plan_set_origin(LhPlan *p, const char *scheduler, const char *params)
{
	g_free(p->scheduler);
	g_free(p->params);
	p->scheduler = g_strdup(scheduler);
	p->params = params && *params ? g_strdup(params) : NULL;
}

/* What lh_plan_add_list_schedule reads of one op, in one record: it visits ops in the order's
 * order, which at 10^6 ops puts each op anywhere in memory, so what was four arrays and the
 * op's 128-byte record (a cache miss each) is one miss (issue 12: the builder was two fifths
 * of heft's time at 10^6 ops). */
typedef struct {
	guint32 s;     /* its stream, as given (any value: checked when it is issued) */
	guint32 pos;   /* its position on its stream once issued; LS_NONE before */
	guint32 event; /* the event it signals, or LS_NONE */
	guint8 cross;  /* a successor of it runs on another stream: it signals */
	guint8 input;  /* an input: never issued, nothing waits for it */
	guint8 pad_[2];
} LsRec;

#define LS_NONE G_MAXUINT32

/* How many order entries ahead the builder fetches what an op reads. */
#define LS_AHEAD 8

static gboolean ls_fail(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static gboolean ls_fail(GError **error, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error(error, LH_PLAN_ERROR, LH_PLAN_ERROR_INVALID, "plan builder: %s", msg);
	return FALSE;
}

/* Issues @order into @c (room for every command it can need), checking it on the way: the
 * number of commands written in *@nc, or FALSE with @error set at the first bad entry (the same
 * entry, and so the same message, as checking the whole order first would find). */
static gboolean list_schedule_issue(LhPlan *p, const LhGraph *g, const guint32 *order, guint32 n,
                                    LsRec *r, LhCmd *c, guint32 *nc_out, GError **error)
{
	guint32 n_ops = lh_graph_n_ops(g), ns = lh_plan_n_streams(p);
	const guint32 *at = lh__graph_dep_at(g), *dep = lh__graph_dep_array(g);
	g_autofree guint32 *len = g_new0(guint32, MAX(ns, 1));
	/* covered[s * ns + t]: the latest position on stream t that stream s already waited for
	 * (+1; 0 = none). */
	g_autofree guint32 *covered = g_new0(guint32, MAX((gsize)ns * ns, 1));
	guint32 nc = 0;
	for (guint32 k = 0; k < n; k++) {
		/* The order is known ahead: an op's record and dep row are fetched some entries
		 * before, and its deps' records after them (each stage reads what the one before
		 * fetched). Entries out of range are reported when reached, not read. */
		if (k + 2 * LS_AHEAD < n && order[k + 2 * LS_AHEAD] < n_ops) {
			guint32 x = order[k + 2 * LS_AHEAD];
			__builtin_prefetch(&r[x]);
			__builtin_prefetch(&at[x]);
			__builtin_prefetch(&dep[at[x]]);
		}
		if (k + LS_AHEAD < n && order[k + LS_AHEAD] < n_ops) {
			guint32 x = order[k + LS_AHEAD];
			for (guint32 j = at[x]; j < at[x + 1]; j++)
				__builtin_prefetch(&r[dep[j]]);
		}
		guint32 v = order[k];
		if (v >= n_ops)
			return ls_fail(error, "order entry %u is op %u, but the graph has %u ops",
			               k, v, n_ops);
		LsRec *rv = &r[v];
		if (rv->input)
			continue;
		if (rv->pos != LS_NONE) {
			guint32 first = 0;
			while (order[first] != v)
				first++;
			return ls_fail(error,
			               "op '%s' appears twice in the order (entries %u and %u)",
			               lh_graph_op(g, v)->name, first, k);
		}
		guint32 s = rv->s;
		if (s >= ns)
			return ls_fail(error,
			               "op '%s' is assigned stream %u, but the plan has %u streams",
			               lh_graph_op(g, v)->name, s, ns);
		/* A dep not issued yet is an error; one on another stream is waited for, unless
		 * a wait of this stream already covers it (dropped with the rest on an error). */
		for (guint32 j = at[v]; j < at[v + 1]; j++) {
			const LsRec *ru = &r[dep[j]];
			if (ru->input)
				continue;
			if (ru->pos == LS_NONE)
				return ls_fail(
				    error, "op '%s' comes before its dep '%s' in the order",
				    lh_graph_op(g, v)->name, lh_graph_op(g, dep[j])->name);
			if (ru->s == s)
				continue;
			guint32 *cov = &covered[(gsize)s * ns + ru->s];
			if (*cov > ru->pos)
				continue;
			/* u has a successor (v) on another stream, so it signaled. */
			g_assert(ru->event != LS_NONE);
			c[nc++] = (LhCmd){LH_CMD_WAIT, s, ru->event};
			*cov = ru->pos + 1;
		}
		nc += lh__cmds_run(&c[nc], s, v);
		rv->pos = len[s]++;
		if (rv->cross) {
			rv->event = lh_plan_new_event(p);
			c[nc++] = (LhCmd){LH_CMD_SIGNAL, s, rv->event};
		}
	}
	/* Every non-input op issued, or the first one missing named. */
	for (guint32 i = 0; i < n_ops; i++)
		if (!r[i].input && r[i].pos == LS_NONE)
			return ls_fail(error, "op '%s' is missing from the order",
			               lh_graph_op(g, i)->name);
	*nc_out = nc;
	return TRUE;
}

gboolean lh_plan_add_list_schedule(LhPlan *p, const LhGraph *g, const guint32 *stream,
                                   const guint32 *order, guint32 n, GError **error)
{
	g_return_val_if_fail(p && g && ((stream && order) || n == 0), FALSE);
	g_return_val_if_fail(lh_graph_is_finished(g), FALSE);
	guint32 n_ops = lh_graph_n_ops(g);
	const LhOp *ops = lh__graph_ops(g);
	const guint32 *at = lh__graph_dep_at(g), *dep = lh__graph_dep_array(g);
	/* Each op's record, in op order (16 MB at 10^6 ops, made present ahead by the page
	 * helper, as is the commands' room below). An op signals when a successor's stream
	 * differs from its own (the streams compared as given, as the successor lists would);
	 * every such pair may need a wait, so the commands are at most one run per entry of the
	 * order, one signal per op that signals and one wait per such pair. */
	LhPages *pages = lh__pages_new();
	g_autofree LsRec *r = lh__pages_alloc(pages, LsRec, MAX(n_ops, 1));
	for (guint32 i = 0; i < n_ops; i++)
		r[i] = (LsRec){stream ? stream[i] : 0,     LS_NONE, LS_NONE, 0,
		               ops[i].kind == LH_OP_INPUT, {0, 0}};
	guint64 most = n;
	for (guint32 i = 0; stream && i < n_ops; i++)
		for (guint32 j = at[i]; j < at[i + 1]; j++)
			if (stream[dep[j]] != stream[i] && !r[dep[j]].input) {
				most += 1 + !r[dep[j]].cross;
				r[dep[j]].cross = 1;
			}
	/* The commands are written in place past the plan's, and dropped again if the order is
	 * bad: a bad call appends nothing. */
	guint32 len0 = p->cmds->len, ev0 = p->n_events;
	if (most > G_MAXUINT32 - len0) {
		lh__pages_free(pages);
		return ls_fail(error, "%" G_GUINT64_FORMAT " more commands do not fit in a plan",
		               most);
	}
	LhCmd *c = lh__plan_append(p, (guint32)most);
	lh__pages_add(pages, c, sizeof(LhCmd) * (gsize)most);
	guint32 nc = 0;
	gboolean ok = list_schedule_issue(p, g, order, n, r, c, &nc, error);
	lh__pages_free(pages); /* before r is freed and the commands' array can move */
	if (!ok) {
		g_array_set_size(p->cmds, len0);
		p->n_events = ev0;
		return FALSE;
	}
	g_array_set_size(p->cmds, len0 + nc);
	return TRUE;
}

guint32 lh__plan_cmd_device(const LhPlan *p, const LhCmd *cmd)
{
	return cmd->kind == LH_CMD_HOST ? cmd->stream : lh_plan_stream(p, cmd->stream)->device;
}

void lh__plan_device_lists(const LhPlan *p, guint32 D, guint32 *first, guint32 *dnext,
                           guint32 *last)
{
	guint32 n = p->cmds->len;
	for (guint32 d = 0; d < D; d++) {
		first[d] = n;
		last[d] = G_MAXUINT32;
	}
	for (guint32 c = 0; c < n; c++) {
		guint32 d = lh__plan_cmd_device(p, lh_plan_cmd(p, c));
		dnext[c] = n;
		if (last[d] == G_MAXUINT32)
			first[d] = c;
		else
			dnext[last[d]] = c;
		last[d] = c;
	}
}

const char *lh_plan_event_name(const LhPlan *p, guint64 e, char buf[32])
{
	if (p->event_names && e < p->event_names->len)
		return g_ptr_array_index(p->event_names, e);
	g_snprintf(buf, 32, "e%" G_GUINT64_FORMAT, e);
	return buf;
}

const char *lh_stream_role_name(LhStreamRole r)
{
	return r < LH_ROLE_N ? role_names[r] : "?";
}

gboolean lh_stream_role_from_name(const char *s, LhStreamRole *out)
{
	for (int r = 0; r < LH_ROLE_N; r++)
		if (strcmp(s, role_names[r]) == 0) {
			*out = r;
			return TRUE;
		}
	return FALSE;
}

const char *lh_cmd_kind_name(LhCmdKind k)
{
	static const char *const names[] = {"run", "signal", "wait", "host", "sync"};
	return k <= LH_CMD_SYNC ? names[k] : "?";
}

/* ---- text ---- */

char *lh_plan_to_data(const LhPlan *p, const LhGraph *g)
{
	GString *s = g_string_sized_new(64 + 24 * p->cmds->len);
	g_string_append(s, "lhsim-plan 1\n");
	if (p->scheduler)
		g_string_append_printf(s, "# scheduler: %s%s%s\n", p->scheduler,
		                       p->params ? " " : "", p->params ? p->params : "");
	g_string_append_printf(s, "# graph: %s, %u commands, %u events\n", lh_graph_name(g),
	                       p->cmds->len, p->n_events);
	/* Devices are written for a placed graph, or where nonzero (docs/plan-format.md). */
	gboolean placed = lh_graph_placed(g);
	for (guint32 i = 0; i < p->streams->len; i++) {
		const LhStream *st = lh_plan_stream(p, i);
		g_string_append_printf(s, "stream %s %s", st->name, role_names[st->role]);
		if (placed || st->device)
			g_string_append_printf(s, " device=%u", st->device);
		g_string_append_c(s, '\n');
	}
	for (guint32 i = 0; i < p->cmds->len; i++) {
		const LhCmd *c = lh_plan_cmd(p, i);
		const char *sn =
		    c->stream < p->streams->len ? lh_plan_stream(p, c->stream)->name : "?";
		switch ((LhCmdKind)c->kind) {
		case LH_CMD_RUN:
			g_string_append_printf(s, "run %s %s\n", sn,
			                       c->arg < lh_graph_n_ops(g)
			                           ? lh_graph_op(g, (guint32)c->arg)->name
			                           : "?");
			break;
		case LH_CMD_SIGNAL:
		case LH_CMD_WAIT:
			g_string_append_printf(s, "%s %s e%" G_GUINT64_FORMAT "\n",
			                       lh_cmd_kind_name(c->kind), sn, c->arg);
			break;
		case LH_CMD_HOST:
			g_string_append_printf(s, "host %" G_GUINT64_FORMAT, c->arg);
			if (placed || c->stream)
				g_string_append_printf(s, " device=%u", c->stream);
			g_string_append_c(s, '\n');
			break;
		case LH_CMD_SYNC:
			g_string_append_printf(s, "sync %s\n", sn);
			break;
		}
	}
	return g_string_free(s, FALSE);
}

gboolean lh_plan_write_file(const LhPlan *p, const LhGraph *g, const char *path, GError **error)
{
	g_autofree char *text = lh_plan_to_data(p, g);
	g_autoptr(GError) e = NULL;
	if (!lh_write_file_atomic(path, text, strlen(text), &e)) {
		g_set_error(error, LH_PLAN_ERROR, LH_PLAN_ERROR_IO, "%s", e->message);
		return FALSE;
	}
	return TRUE;
}

typedef struct {
	const char *where;
	guint line;
	GError **error;
} Pos;

static gboolean perr(Pos *ps, guint col, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static gboolean perr(Pos *ps, guint col, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error(ps->error, LH_PLAN_ERROR, LH_PLAN_ERROR_PARSE, "%s:%u:%u: %s", ps->where,
	            ps->line, col, msg);
	return FALSE;
}

/* Splits a line into white-space separated words with their 1-based columns. */
static guint split_words(char *line, char **w, guint *col, guint max)
{
	guint n = 0;
	char *p = line;
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == '\r')
			p++;
		if (!*p || *p == '#')
			break;
		if (n == max)
			return max + 1;
		w[n] = p;
		col[n] = (guint)(p - line) + 1;
		n++;
		while (*p && *p != ' ' && *p != '\t' && *p != '\r')
			p++;
		if (*p)
			*p++ = 0;
	}
	return n;
}

/* An optional last word "device=K" (streams and host commands): K a whole number below 10^6. */
static gboolean device_word(Pos *ps, const char *w, guint col, guint32 *out)
{
	if (!g_str_has_prefix(w, "device="))
		return perr(ps, col, "expected 'device=K', found '%s'", w);
	const char *v = w + 7;
	char *end = NULL;
	errno = 0;
	guint64 d = g_ascii_strtoull(v, &end, 10);
	if (!g_ascii_isdigit(*v) || errno || *end || d >= 1000000)
		return perr(ps, col + 7,
		            "'%s' is not a device number (a whole number from 0 to "
		            "999999)",
		            v);
	*out = (guint32)d;
	return TRUE;
}

LhPlan *lh_plan_new_from_data(const char *data, gsize len, const char *where, const LhGraph *g,
                              GError **error)
{
	g_return_val_if_fail(data && g, NULL);
	Pos ps = {where ? where : "plan", 0, error};
	g_autoptr(LhPlan) p = lh_plan_new();
	p->lines = g_array_new(FALSE, FALSE, sizeof(guint32));
	p->source = g_strdup(ps.where);
	p->event_names = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GHashTable) streams =
	    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g_autoptr(GHashTable) events = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g_autofree char *text = g_strndup(data, len);
	if (strlen(text) != len) {
		/* Names end at a NUL byte: say where it is rather than read a shorter name. */
		const char *nul = data + strlen(text), *ls = data;
		ps.line = 1;
		for (const char *c = data; c < nul; c++)
			if (*c == '\n') {
				ps.line++;
				ls = c + 1;
			}
		perr(&ps, (guint)(nul - ls) + 1, "a NUL byte: a plan is text");
		return NULL;
	}
	gboolean header = FALSE;
	char *save = NULL;
	char *line = text;
	for (char *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		ps.line++;
		char *w[5];
		guint col[5];
		guint n = split_words(line, w, col, 4);
		if (n == 0)
			continue;
		if (n > 4)
			return perr(&ps, col[0], "too many words on the line"), NULL;
		if (!header) {
			if (strcmp(w[0], "lhsim-plan") != 0)
				return perr(&ps, col[0],
				            "expected the header 'lhsim-plan 1', found '%s'", w[0]),
				       NULL;
			if (n != 2 || strcmp(w[1], "1") != 0)
				return perr(
				           &ps, n > 1 ? col[1] : col[0],
				           "unsupported plan version (this lhsim reads version 1)"),
				       NULL;
			header = TRUE;
			continue;
		}
		const char *kw = w[0];
		if (strcmp(kw, "stream") == 0) {
			guint32 dev = 0;
			if (n != 3 && n != 4)
				return perr(&ps, col[0], "usage: stream NAME ROLE [device=K]"),
				       NULL;
			if (n == 4 && !device_word(&ps, w[3], col[3], &dev))
				return NULL;
			LhStreamRole role;
			if (!lh_stream_role_from_name(w[2], &role))
				return perr(&ps, col[2],
				            "unknown stream role '%s' (compute, async-compute, "
				            "collective, p2p, h2d, d2h, memcpy)",
				            w[2]),
				       NULL;
			if (g_hash_table_contains(streams, w[1]))
				return perr(&ps, col[1], "stream '%s' is declared twice", w[1]),
				       NULL;
			guint32 id = lh_plan_add_stream_on(p, w[1], role, dev);
			g_hash_table_insert(streams, g_strdup(w[1]), GUINT_TO_POINTER(id + 1));
			continue;
		}
		LhCmdKind k;
		if (strcmp(kw, "run") == 0)
			k = LH_CMD_RUN;
		else if (strcmp(kw, "signal") == 0)
			k = LH_CMD_SIGNAL;
		else if (strcmp(kw, "wait") == 0)
			k = LH_CMD_WAIT;
		else if (strcmp(kw, "host") == 0)
			k = LH_CMD_HOST;
		else if (strcmp(kw, "sync") == 0)
			k = LH_CMD_SYNC;
		else
			return perr(&ps, col[0],
			            "unknown command '%s' (stream, run, signal, wait, host, sync)",
			            kw),
			       NULL;
		guint want = k == LH_CMD_HOST || k == LH_CMD_SYNC ? 2 : 3;
		if (n != want && !(k == LH_CMD_HOST && n == 3)) {
			static const char *const usage[] = {
			    "run STREAM OP", "signal STREAM EVENT", "wait STREAM EVENT",
			    "host NANOSECONDS [device=K]", "sync STREAM"};
			return perr(&ps, col[0], "usage: %s", usage[k]), NULL;
		}
		guint32 stream = 0;
		guint64 arg = 0;
		if (k == LH_CMD_HOST) {
			char *end = NULL;
			errno = 0;
			if (w[1][0] == '-' || (arg = g_ascii_strtoull(w[1], &end, 10), errno) ||
			    *end || end == w[1])
				return perr(&ps, col[1],
				            "'%s' is not a whole number of nanoseconds >= 0", w[1]),
				       NULL;
			if (arg > LH_PLAN_MAX_HOST_NS)
				return perr(&ps, col[1],
				            "host %s ns is out of range (at most %" G_GUINT64_FORMAT
				            " ns, about 11.6 days)",
				            w[1], (guint64)LH_PLAN_MAX_HOST_NS),
				       NULL;
			if (n == 3 && !device_word(&ps, w[2], col[2], &stream))
				return NULL;
		} else {
			gpointer sv = g_hash_table_lookup(streams, w[1]);
			if (!sv)
				return perr(&ps, col[1],
				            "unknown stream '%s' (declare it first with "
				            "'stream NAME ROLE')",
				            w[1]),
				       NULL;
			stream = GPOINTER_TO_UINT(sv) - 1;
		}
		if (k == LH_CMD_RUN) {
			guint32 op;
			if (!lh_graph_find(g, w[2], &op))
				return perr(&ps, col[2], "no op named '%s' in graph '%s'", w[2],
				            lh_graph_name(g)),
				       NULL;
			arg = op;
		} else if (k == LH_CMD_SIGNAL || k == LH_CMD_WAIT) {
			gpointer ev = g_hash_table_lookup(events, w[2]);
			if (!ev) {
				guint32 id = lh_plan_new_event(p);
				ev = GUINT_TO_POINTER(id + 1);
				g_hash_table_insert(events, g_strdup(w[2]), ev);
				g_ptr_array_add(p->event_names, g_strdup(w[2]));
			}
			arg = GPOINTER_TO_UINT(ev) - 1;
		}
		push(p, k, stream, arg);
		guint32 l = ps.line;
		g_array_append_val(p->lines, l);
	}
	(void)save;
	if (!header) {
		ps.line = 1;
		return perr(&ps, 1, "empty plan: expected the header 'lhsim-plan 1'"), NULL;
	}
	return g_steal_pointer(&p);
}

LhPlan *lh_plan_new_from_file(const char *path, const LhGraph *g, GError **error)
{
	/* Mapped rather than copied where it can be (lh_file_bytes: 0.6 s less at 10^6 ops). */
	g_autoptr(GError) e = NULL;
	g_autoptr(GBytes) bytes = lh_file_bytes(path, &e);
	if (!bytes) {
		g_set_error(error, LH_PLAN_ERROR, LH_PLAN_ERROR_IO, "%s", e->message);
		return NULL;
	}
	gsize n = 0;
	const char *d = g_bytes_get_data(bytes, &n);
	return lh_plan_new_from_data(d, n, path, g, error);
}
