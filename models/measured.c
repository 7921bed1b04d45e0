/* lhsim — readers of measured timelines (docs/measured.md): Chrome trace JSON on json-glib,
 * Nsight Systems' SQLite export on libsqlite3. */
#include "models/measured.h"

#include <gio/gio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* The quark's name is a string with dashes, which clang-format would space. */
/* clang-format off */
G_DEFINE_QUARK(lh-measured-error-quark, lh_measured_error)
/* clang-format on */

/* The deepest nesting of objects and arrays accepted (a trace needs 4: root, traceEvents, an
 * event, its args). json-glib parses recursively, so deeper input could overflow the stack. */
#define MAX_DEPTH 32

const char *lh_meas_kind_name(LhMeasKind k)
{
	static const char *const n[LH_MEV_N] = {"kernel",     "memcpy-h2d", "memcpy-d2h",
	                                        "memcpy-d2d", "memset",     "collective"};
	return k < LH_MEV_N ? n[k] : "?";
}

static LhMeasured *meas_new(const char *path)
{
	LhMeasured *m = g_new0(LhMeasured, 1);
	m->path = g_strdup(path);
	m->events = g_array_new(FALSE, FALSE, sizeof(LhMeasEvent));
	m->ranges = g_array_new(FALSE, FALSE, sizeof(LhMeasRange));
	m->strings = g_string_chunk_new(4096);
	return m;
}

void lh_measured_free(LhMeasured *m)
{
	if (!m)
		return;
	g_free(m->path);
	g_free(m->format);
	g_array_unref(m->events);
	g_array_unref(m->ranges);
	g_string_chunk_free(m->strings);
	g_free(m);
}

static const char *intern(LhMeasured *m, const char *s)
{
	return s ? g_string_chunk_insert_const(m->strings, s) : NULL;
}

static int ev_cmp(const void *a, const void *b)
{
	const LhMeasEvent *x = a, *y = b;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return (x->line > y->line) - (x->line < y->line);
}

static int range_cmp(const void *a, const void *b)
{
	const LhMeasRange *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->end < y->end) - (x->end > y->end);
}

/* "FILE:LINE:COL: ..." for JSON (col > 0), "FILE: table T row N: ..." for SQLite. */
static char *ev_pos(const LhMeasured *m, const LhMeasEvent *e, gboolean sql)
{
	if (sql)
		return g_strdup_printf("%s: %s row %u", m->path,
		                       e->kind == LH_MEV_KERNEL || e->kind == LH_MEV_COLLECTIVE
		                           ? "table CUPTI_ACTIVITY_KIND_KERNEL"
		                       : e->kind == LH_MEV_MEMSET
		                           ? "table CUPTI_ACTIVITY_KIND_MEMSET"
		                           : "table CUPTI_ACTIVITY_KIND_MEMCPY",
		                       e->line);
	return g_strdup_printf("%s:%u:%u", m->path, e->line, MAX(e->col, 1u));
}

/* Sorts the events and checks that no stream runs two at once (a CUDA stream is in order: an
 * event starting before the previous one on its stream ends means timestamps went backwards). */
static gboolean finish(LhMeasured *m, gboolean sql, GError **error)
{
	if (m->events->len == 0) {
		g_set_error(error, LH_MEASURED_ERROR, LH_MEASURED_ERROR_EMPTY,
		            "%s: no GPU events (kernels, copies, memsets, collectives) in this %s "
		            "file",
		            m->path, m->format);
		return FALSE;
	}
	g_array_sort(m->events, ev_cmp);
	for (guint i = 1; i < m->events->len; i++) {
		const LhMeasEvent *p = &g_array_index(m->events, LhMeasEvent, i - 1);
		const LhMeasEvent *e = &g_array_index(m->events, LhMeasEvent, i);
		if (p->device != e->device || p->stream != e->stream || e->start >= p->end)
			continue;
		g_autofree char *pos = ev_pos(m, e, sql);
		g_autofree char *ppos = ev_pos(m, p, sql);
		g_set_error(error, LH_MEASURED_ERROR, LH_MEASURED_ERROR_INVALID,
		            "%s: %s '%s' on device %d stream %d starts at %" G_GINT64_FORMAT
		            " ns, before the previous event on that stream ('%s', %s) ends at "
		            "%" G_GINT64_FORMAT " ns: a stream runs one thing at a time, so the "
		            "timestamps are not monotonic",
		            pos, lh_meas_kind_name(e->kind), e->name, e->device, e->stream,
		            e->start, p->name, ppos, p->end);
		return FALSE;
	}
	g_array_sort(m->ranges, range_cmp);
	return TRUE;
}

/* ---- innermost enclosing range ---- */

typedef struct {
	gint64 key; /* what a range and a query must share: a host thread or a device stream */
	gint64 start, end;
	const char *name;
} KRange;

typedef struct {
	gint64 key, t;
	guint32 ev; /* event index */
} KQuery;

static int krange_cmp(const void *a, const void *b)
{
	const KRange *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->end < y->end) - (x->end > y->end); /* outer first */
}

static int kquery_cmp(const void *a, const void *b)
{
	const KQuery *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return (x->ev > y->ev) - (x->ev < y->ev);
}

/* Sets each queried event's annotation to the innermost range with its key holding its time:
 * one sweep over both sorted lists with a stack of open ranges. */
static void annotate(LhMeasured *m, GArray *ranges, GArray *queries)
{
	g_array_sort(ranges, krange_cmp);
	g_array_sort(queries, kquery_cmp);
	g_autoptr(GArray) stack = g_array_new(FALSE, FALSE, sizeof(KRange));
	guint r = 0;
	gint64 key = G_MININT64;
	for (guint q = 0; q < queries->len; q++) {
		const KQuery *x = &g_array_index(queries, KQuery, q);
		if (x->key != key) {
			g_array_set_size(stack, 0);
			key = x->key;
			while (r < ranges->len && g_array_index(ranges, KRange, r).key < key)
				r++;
		}
		while (r < ranges->len && g_array_index(ranges, KRange, r).key == key &&
		       g_array_index(ranges, KRange, r).start <= x->t) {
			if (g_array_index(ranges, KRange, r).end > x->t)
				g_array_append_val(stack, g_array_index(ranges, KRange, r));
			r++;
		}
		/* Ranges are half-open [start, end): one ending as a kernel starts holds it not. */
		while (stack->len && g_array_index(stack, KRange, stack->len - 1).end <= x->t)
			g_array_set_size(stack, stack->len - 1);
		if (stack->len)
			g_array_index(m->events, LhMeasEvent, x->ev).annotation =
			    g_array_index(stack, KRange, stack->len - 1).name;
	}
}

/* ---- Chrome trace JSON ---- */

typedef struct {
	GHashTable *pos; /* JsonArray * -> GArray of guint64 (line << 32 | col), by element */
} Pos;

static void on_element(JsonParser *p, JsonArray *arr, int index, gpointer data)
{
	Pos *ps = data;
	GArray *a = g_hash_table_lookup(ps->pos, arr);
	if (!a) {
		a = g_array_new(FALSE, FALSE, sizeof(guint64));
		g_hash_table_insert(ps->pos, arr, a);
	}
	guint64 v = ((guint64)json_parser_get_current_line(p) << 32) |
	            (guint32)json_parser_get_current_pos(p);
	if ((guint)index >= a->len)
		g_array_set_size(a, (guint)index + 1);
	g_array_index(a, guint64, index) = v;
}

/* Checks nesting depth and NUL bytes before json-glib sees the text. */
static gboolean prescan(const char *d, gsize len, const char *where, GError **error)
{
	guint line = 1, depth = 0;
	const char *ls = d;
	for (gsize i = 0; i < len; i++) {
		char c = d[i];
		if (c == '\n') {
			line++;
			ls = d + i + 1;
		} else if (c == 0) {
			g_set_error(error, LH_MEASURED_ERROR, LH_MEASURED_ERROR_PARSE,
			            "%s:%u:%u: a NUL byte: a trace file is text", where, line,
			            (guint)(d + i - ls) + 1);
			return FALSE;
		} else if (c == '"') {
			for (i++; i < len && d[i] != '"' && d[i] != '\n'; i++)
				if (d[i] == '\\')
					i++;
		} else if (c == '{' || c == '[') {
			if (++depth > MAX_DEPTH) {
				g_set_error(error, LH_MEASURED_ERROR, LH_MEASURED_ERROR_PARSE,
				            "%s:%u:%u: objects and arrays nested deeper than %d "
				            "levels",
				            where, line, (guint)(d + i - ls) + 1, MAX_DEPTH);
				return FALSE;
			}
		} else if ((c == '}' || c == ']') && depth) {
			depth--;
		}
	}
	return TRUE;
}

typedef struct {
	LhMeasured *m;
	const char *where;
	GArray *pos; /* of the traceEvents array */
	GError **error;
} Rd;

static gboolean bad(Rd *r, guint idx, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static gboolean bad(Rd *r, guint idx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	guint64 v =
	    r->pos && idx < r->pos->len ? g_array_index(r->pos, guint64, idx) : (1ull << 32);
	g_set_error(r->error, LH_MEASURED_ERROR, LH_MEASURED_ERROR_INVALID,
	            "%s:%u:%u: traceEvents[%u]: %s", r->where, (guint)(v >> 32),
	            MAX((guint)(v & 0xffffffff), 1u), idx, msg);
	return FALSE;
}

static void ev_at(Rd *r, guint idx, LhMeasEvent *e)
{
	guint64 v =
	    r->pos && idx < r->pos->len ? g_array_index(r->pos, guint64, idx) : (1ull << 32);
	e->line = (guint32)(v >> 32);
	e->col = (guint32)(v & 0xffffffff);
}

static gboolean is_number(JsonNode *n)
{
	return n && JSON_NODE_HOLDS_VALUE(n) &&
	       (json_node_get_value_type(n) == G_TYPE_INT64 ||
	        json_node_get_value_type(n) == G_TYPE_DOUBLE);
}

static double numv(JsonNode *n)
{
	return json_node_get_value_type(n) == G_TYPE_INT64 ? (double)json_node_get_int(n)
	                                                   : json_node_get_double(n);
}

/* A member that is a number, or a string holding an integer (Kineto writes some ids as
 * strings). FALSE when absent or neither. */
static gboolean get_num(JsonObject *o, const char *k, double *out)
{
	JsonNode *n = o ? json_object_get_member(o, k) : NULL;
	if (is_number(n)) {
		*out = numv(n);
		return isfinite(*out);
	}
	if (n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING) {
		const char *s = json_node_get_string(n);
		char *end;
		gint64 v = g_ascii_strtoll(s, &end, 10);
		if (end != s && *end == 0) {
			*out = (double)v;
			return TRUE;
		}
	}
	return FALSE;
}

static const char *get_str(JsonObject *o, const char *k)
{
	JsonNode *n = o ? json_object_get_member(o, k) : NULL;
	if (n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING)
		return json_node_get_string(n);
	return NULL;
}

static JsonObject *get_obj(JsonObject *o, const char *k)
{
	JsonNode *n = o ? json_object_get_member(o, k) : NULL;
	return n && JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
}

/* Microseconds (Chrome's unit) to integer ns. */
static gint64 us_ns(double us)
{
	return (gint64)llround(us * 1000.0);
}

typedef enum { SRC_KINETO, SRC_XLA, SRC_LHSIM } Src;

/* The number at the start of @s (xprof's "/device:GPU:N", "Stream #N"), 0 .. G_MAXINT32 - 1;
 * 0 when there is none. */
static gint32 small_num(const char *s)
{
	guint64 v = g_ascii_strtoull(s, NULL, 10);
	return v < G_MAXINT32 ? (gint32)v : 0;
}

static gboolean kind_from_copy_name(const char *name, LhMeasKind *k)
{
	if (strstr(name, "HtoD") || strstr(name, "H2D")) {
		*k = LH_MEV_H2D;
	} else if (strstr(name, "DtoH") || strstr(name, "D2H")) {
		*k = LH_MEV_D2H;
	} else if (strstr(name, "DtoD") || strstr(name, "D2D") || strstr(name, "PtoP")) {
		*k = LH_MEV_D2D;
	} else {
		return FALSE;
	}
	return TRUE;
}

static const char *const phases = "BEXiICbnesStTfFPNODMRc()Vv";

LhMeasured *lh_measured_new_from_json(const char *data, gsize len, const char *where,
                                      GError **error)
{
	if (!prescan(data, len, where, error))
		return NULL;
	g_autoptr(JsonParser) parser = json_parser_new_immutable();
	Pos ps = {g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
	                                (GDestroyNotify)g_array_unref)};
	g_signal_connect(parser, "array-element", G_CALLBACK(on_element), &ps);
	GError *pe = NULL;
	if (!json_parser_load_from_data(parser, data, (gssize)len, &pe)) {
		/* json-glib's message starts with "<data>:LINE:COL: ...". */
		const char *msg = pe->message;
		if (g_str_has_prefix(msg, "<data>:"))
			msg += strlen("<data>:");
		g_set_error(error, LH_MEASURED_ERROR, LH_MEASURED_ERROR_PARSE,
		            "%s:%s (truncated or not JSON)", where, msg);
		g_error_free(pe);
		g_hash_table_unref(ps.pos);
		return NULL;
	}
	JsonNode *root = json_parser_get_root(parser);
	JsonArray *evs = NULL;
	JsonObject *ro = NULL;
	if (root && JSON_NODE_HOLDS_ARRAY(root)) {
		evs = json_node_get_array(root);
	} else if (root && JSON_NODE_HOLDS_OBJECT(root)) {
		ro = json_node_get_object(root);
		JsonNode *te = json_object_get_member(ro, "traceEvents");
		if (te && JSON_NODE_HOLDS_ARRAY(te))
			evs = json_node_get_array(te);
	}
	if (!evs) {
		g_set_error(error, LH_MEASURED_ERROR, LH_MEASURED_ERROR_INVALID,
		            "%s:1:1: not a Chrome trace: no \"traceEvents\" array", where);
		g_hash_table_unref(ps.pos);
		return NULL;
	}
	LhMeasured *m = meas_new(where);
	Rd r = {m, where, g_hash_table_lookup(ps.pos, evs), error};
	guint n = json_array_get_length(evs);
	gboolean ok = TRUE;

	/* Pass 1: metadata (process and thread names) and the source. */
	g_autoptr(GHashTable) tname = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	gboolean kineto = FALSE;
	for (guint i = 0; i < n && ok; i++) {
		JsonNode *en = json_array_get_element(evs, i);
		if (!JSON_NODE_HOLDS_OBJECT(en)) {
			ok = bad(&r, i, "an event must be an object");
			break;
		}
		JsonObject *o = json_node_get_object(en);
		const char *ph = get_str(o, "ph");
		if (!ph || strlen(ph) != 1 || !strchr(phases, ph[0])) {
			ok = bad(&r, i, "unknown event phase %s%s%s (Chrome's phases: %s)",
			         ph ? "'" : "", ph ? ph : "(none)", ph ? "'" : "", phases);
			break;
		}
		const char *cat = get_str(o, "cat");
		if (cat && (!strcmp(cat, "kernel") || !strcmp(cat, "gpu_memcpy") ||
		            !strcmp(cat, "gpu_memset")))
			kineto = TRUE;
		if (ph[0] != 'M')
			continue;
		double pid = 0, tid = 0;
		JsonObject *args = get_obj(o, "args");
		const char *nm = get_str(args, "name");
		const char *what = get_str(o, "name");
		if (!nm || !what || !get_num(o, "pid", &pid))
			continue;
		if (!strcmp(what, "thread_name") && get_num(o, "tid", &tid)) {
			g_hash_table_insert(tname, g_strdup_printf("%.0f/%.0f", pid, tid),
			                    (gpointer)nm);
		}
	}
	/* lhsim's writer names the graph and the source in otherData; its "cat" is the op kind,
	 * which includes "kernel", so it is told apart first. */
	Src src = kineto ? SRC_KINETO : SRC_XLA;
	JsonObject *other = get_obj(ro, "otherData");
	if (other && get_str(other, "source") && get_str(other, "graph"))
		src = SRC_LHSIM;
	m->format = g_strdup(src == SRC_KINETO  ? "chrome (kineto)"
	                     : src == SRC_LHSIM ? "chrome (lhsim)"
	                                        : "chrome (xla)");
	g_autoptr(GHashTable) gpu_pid =
	    g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
	for (guint i = 0; i < n && ok && src == SRC_XLA; i++) {
		JsonObject *o = json_node_get_object(json_array_get_element(evs, i));
		const char *what = get_str(o, "name");
		const char *nm = get_str(get_obj(o, "args"), "name");
		double pid;
		if (!what || strcmp(what, "process_name") || !nm || !get_num(o, "pid", &pid) ||
		    fabs(pid) > 1e15)
			continue;
		/* xprof names a GPU's process "/device:GPU:N" (possibly with a suffix). */
		const char *g = strstr(nm, "/device:GPU:");
		if (!g)
			continue;
		gint64 *k = g_new(gint64, 1);
		*k = (gint64)pid;
		g_hash_table_insert(gpu_pid, k,
		                    GINT_TO_POINTER(1 + small_num(g + strlen("/device:GPU:"))));
	}

	/* Pass 2: events. */
	g_autoptr(GHashTable) corr_issue =
	    g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
	g_autoptr(GArray) corr_of = g_array_new(FALSE, FALSE, sizeof(gint64)); /* per event */
	g_autoptr(GArray) kr = g_array_new(FALSE, FALSE, sizeof(KRange));
	for (guint i = 0; i < n && ok; i++) {
		JsonObject *o = json_node_get_object(json_array_get_element(evs, i));
		const char *ph = get_str(o, "ph");
		if (ph[0] != 'X')
			continue;
		const char *cat = get_str(o, "cat");
		const char *name = get_str(o, "name");
		JsonObject *args = get_obj(o, "args");
		double ts, dur, pid = 0, tid = 0;
		gboolean has_pid = get_num(o, "pid", &pid);
		gboolean has_tid = get_num(o, "tid", &tid);
		LhMeasKind kind = LH_MEV_KERNEL;
		gboolean device_ev = FALSE, range = FALSE, range_dev = FALSE, runtime = FALSE;
		gint32 device = 0, stream = -1;
		if (src == SRC_KINETO) {
			if (!cat)
				continue;
			if (!strcmp(cat, "kernel")) {
				device_ev = TRUE;
				kind = name && g_str_has_prefix(name, "nccl") ? LH_MEV_COLLECTIVE
				                                              : LH_MEV_KERNEL;
			} else if (!strcmp(cat, "gpu_memcpy")) {
				device_ev = TRUE;
				if (!name || !kind_from_copy_name(name, &kind)) {
					m->n_ignored++;
					continue;
				}
			} else if (!strcmp(cat, "gpu_memset")) {
				device_ev = TRUE;
				kind = LH_MEV_MEMSET;
			} else if (!strcmp(cat, "gpu_user_annotation")) {
				range = range_dev = TRUE;
			} else if (!strcmp(cat, "user_annotation")) {
				range = TRUE;
			} else if (!strcmp(cat, "cuda_runtime") || !strcmp(cat, "cuda_driver")) {
				runtime = TRUE;
			} else {
				continue; /* cpu_op, python_function, ...: host work */
			}
		} else if (src == SRC_LHSIM) {
			/* pid 1 holds one track per stream; pid 2 repeats the ops per engine. */
			if (!has_pid || pid != 1)
				continue;
			device_ev = TRUE;
			if (!cat) {
				ok =
				    bad(&r, i, "an lhsim trace event has no \"cat\" (its op kind)");
				break;
			}
			if (!strcmp(cat, "kernel")) {
				kind = LH_MEV_KERNEL;
			} else if (!strcmp(cat, "copy-h2d")) {
				kind = LH_MEV_H2D;
			} else if (!strcmp(cat, "copy-d2h")) {
				kind = LH_MEV_D2H;
			} else if (!strcmp(cat, "copy-d2d")) {
				kind = LH_MEV_D2D;
			} else if (!strcmp(cat, "all-reduce") || !strcmp(cat, "all-gather") ||
			           !strcmp(cat, "reduce-scatter") || !strcmp(cat, "all-to-all") ||
			           !strcmp(cat, "collective-permute") || !strcmp(cat, "send") ||
			           !strcmp(cat, "recv")) {
				kind = LH_MEV_COLLECTIVE;
			} else {
				ok = bad(&r, i, "unknown op kind '%s' in an lhsim trace", cat);
				break;
			}
			if (!has_tid || tid < 0 || tid > G_MAXINT32) {
				ok = bad(&r, i,
				         "an lhsim trace event needs a \"tid\" (its stream) "
				         "from 0 to %d",
				         G_MAXINT32);
				break;
			}
			stream = (gint32)tid;
		} else {
			gint64 pk = has_pid && fabs(pid) <= 1e15 ? (gint64)pid : G_MININT64;
			gpointer dv = has_pid ? g_hash_table_lookup(gpu_pid, &pk) : NULL;
			if (!dv)
				continue; /* host threads */
			device = GPOINTER_TO_INT(dv) - 1;
			g_autofree char *tk = g_strdup_printf("%.0f/%.0f", pid, tid);
			const char *tn = has_tid ? g_hash_table_lookup(tname, tk) : NULL;
			if (tn && !strcmp(tn, "Steps")) {
				range = range_dev = TRUE;
			} else if (tn && g_str_has_prefix(tn, "Stream #")) {
				device_ev = TRUE;
				stream = small_num(tn + strlen("Stream #"));
				if (name && g_str_has_prefix(name, "nccl"))
					kind = LH_MEV_COLLECTIVE;
				else if (name &&
				         (strstr(name, "emcpy") || strstr(name, "MemcpyD")) &&
				         kind_from_copy_name(name, &kind))
					;
				else if (name && strstr(name, "emset"))
					kind = LH_MEV_MEMSET;
				else
					kind = LH_MEV_KERNEL;
			} else {
				continue; /* "XLA Ops", "XLA Modules": derived lines */
			}
		}
		if (!name) {
			ok = bad(&r, i, "a complete event (ph 'X') has no \"name\"");
			break;
		}
		if (!get_num(o, "ts", &ts) || !get_num(o, "dur", &dur)) {
			ok = bad(&r, i,
			         "'%s': a complete event needs numbers \"ts\" and \"dur\" "
			         "(microseconds)",
			         name);
			break;
		}
		if (dur < 0 || ts < 0) {
			ok = bad(&r, i, "'%s': negative %s (%g us): timestamps are not monotonic",
			         name, dur < 0 ? "duration" : "timestamp", dur < 0 ? dur : ts);
			break;
		}
		if (ts + dur > 9e15) {
			ok = bad(&r, i, "'%s': timestamp %g us is out of range (at most 9e15 us)",
			         name, ts + dur);
			break;
		}
		gint64 t0 = us_ns(ts), t1 = t0 + us_ns(dur);
		if (runtime) {
			double c;
			if (get_num(args, "correlation", &c)) {
				gint64 *k = g_new(gint64, 1), *v = g_new(gint64, 1);
				*k = fabs(c) < 9e18 ? (gint64)c : -1;
				*v = t1;
				g_hash_table_replace(corr_issue, k, v);
			}
			continue;
		}
		if (range) {
			/* xprof's Steps line: named "Steps/NAME" so that step patterns can tell
			 * it from annotations. */
			g_autofree char *sn =
			    src == SRC_XLA ? g_strconcat("Steps/", name, NULL) : g_strdup(name);
			LhMeasRange rg = {intern(m, sn), t0, t1, range_dev};
			g_array_append_val(m->ranges, rg);
			if (range_dev && src == SRC_KINETO) {
				double d = 0, s = -1;
				get_num(args, "device", &d);
				if (!get_num(args, "stream", &s))
					s = has_tid ? tid : -1;
				if (d < 0 || d > G_MAXINT32 || s < -1 || s > G_MAXINT32)
					continue; /* on no stream lhsim can name: holds nothing */
				KRange k = {((gint64)d << 32) | (guint32)(gint32)s, t0, t1,
				            rg.name};
				g_array_append_val(kr, k);
			}
			continue;
		}
		if (!device_ev)
			continue;
		LhMeasEvent e = {0};
		e.name = intern(m, name);
		e.start = t0;
		e.end = t1;
		e.issue = -1;
		e.kind = (guint8)kind;
		ev_at(&r, i, &e);
		gint64 corr = -1;
		if (src == SRC_KINETO) {
			double d, s, c, b;
			if (!get_num(args, "device", &d)) {
				ok = bad(&r, i, "%s '%s' has no args.device", cat, name);
				break;
			}
			if (!get_num(args, "stream", &s)) {
				ok = bad(&r, i, "%s '%s' has no args.stream: the stream is missing",
				         cat, name);
				break;
			}
			if (d < 0 || d > G_MAXINT32 || s < 0 || s > G_MAXINT32) {
				ok = bad(&r, i,
				         "%s '%s': args.device and args.stream must be whole "
				         "numbers from 0 to %d",
				         cat, name, G_MAXINT32);
				break;
			}
			device = (gint32)d;
			stream = (gint32)s;
			if (get_num(args, "correlation", &c))
				corr = fabs(c) < 9e18 ? (gint64)c : -1;
			if (get_num(args, "bytes", &b) && b > 0 && b < 1.8e19)
				e.bytes = (guint64)b;
		} else if (src == SRC_LHSIM) {
			double is;
			if (get_num(args, "issue_us", &is))
				e.issue = us_ns(is);
		} else {
			const char *hlo = get_str(args, "hlo_op");
			if (hlo)
				e.annotation = intern(m, hlo);
			double c;
			if (get_num(args, "correlation_id", &c))
				corr = fabs(c) < 9e18 ? (gint64)c : -1;
		}
		e.device = device;
		e.stream = stream;
		g_array_append_val(m->events, e);
		g_array_append_val(corr_of, corr);
	}
	g_hash_table_unref(ps.pos);
	if (!ok) {
		lh_measured_free(m);
		return NULL;
	}
	/* Issue times by correlation id (the runtime call's end). */
	for (guint i = 0; i < m->events->len; i++) {
		gint64 c = g_array_index(corr_of, gint64, i);
		gint64 *v = c >= 0 ? g_hash_table_lookup(corr_issue, &c) : NULL;
		if (v)
			g_array_index(m->events, LhMeasEvent, i).issue = *v;
	}
	/* Kineto: the innermost gpu_user_annotation on the event's own stream. */
	if (kr->len) {
		g_autoptr(GArray) q = g_array_new(FALSE, FALSE, sizeof(KQuery));
		for (guint i = 0; i < m->events->len; i++) {
			const LhMeasEvent *e = &g_array_index(m->events, LhMeasEvent, i);
			KQuery x = {((gint64)e->device << 32) | (guint32)e->stream, e->start, i};
			g_array_append_val(q, x);
		}
		annotate(m, kr, q);
	}
	if (!finish(m, FALSE, error)) {
		lh_measured_free(m);
		return NULL;
	}
	return m;
}

/* ---- Nsight Systems SQLite ---- */

static gboolean sql_fail(LhMeasured *m, sqlite3 *db, const char *table, GError **error)
{
	g_set_error(error, LH_MEASURED_ERROR, LH_MEASURED_ERROR_INVALID, "%s: table %s: %s",
	            m->path, table, sqlite3_errmsg(db));
	return FALSE;
}

static gboolean has_table(sqlite3 *db, const char *t)
{
	sqlite3_stmt *st;
	gboolean yes = FALSE;
	if (sqlite3_prepare_v2(db,
	                       "SELECT 1 FROM sqlite_master WHERE type IN ('table','view') "
	                       "AND name = ?",
	                       -1, &st, NULL) != SQLITE_OK)
		return FALSE;
	sqlite3_bind_text(st, 1, t, -1, SQLITE_STATIC);
	yes = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return yes;
}

/* Reads rows of @sql: rowid, start, end, deviceId, streamId, correlationId, name, bytes,
 * copyKind. */
static gboolean read_rows(LhMeasured *m, sqlite3 *db, const char *table, const char *sql, int what,
                          GArray *corr_of, GError **error)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return sql_fail(m, db, table, error);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		LhMeasEvent e = {0};
		e.line = (guint32)sqlite3_column_int64(st, 0);
		e.start = sqlite3_column_int64(st, 1);
		e.end = sqlite3_column_int64(st, 2);
		e.device = sqlite3_column_int(st, 3);
		e.stream = sqlite3_column_int(st, 4);
		gint64 corr =
		    sqlite3_column_type(st, 5) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 5);
		const char *nm = (const char *)sqlite3_column_text(st, 6);
		e.issue = -1;
		if (sqlite3_column_type(st, 1) == SQLITE_NULL ||
		    sqlite3_column_type(st, 2) == SQLITE_NULL ||
		    sqlite3_column_type(st, 4) == SQLITE_NULL) {
			g_set_error(error, LH_MEASURED_ERROR, LH_MEASURED_ERROR_INVALID,
			            "%s: table %s row %u: start, end and streamId must be set "
			            "(the stream is missing)",
			            m->path, table, e.line);
			sqlite3_finalize(st);
			return FALSE;
		}
		if (e.end < e.start) {
			g_set_error(error, LH_MEASURED_ERROR, LH_MEASURED_ERROR_INVALID,
			            "%s: table %s row %u: end %" G_GINT64_FORMAT " ns is before "
			            "start %" G_GINT64_FORMAT " ns: timestamps are not monotonic",
			            m->path, table, e.line, e.end, e.start);
			sqlite3_finalize(st);
			return FALSE;
		}
		if (what == 0) {
			if (!nm) {
				g_set_error(error, LH_MEASURED_ERROR, LH_MEASURED_ERROR_INVALID,
				            "%s: table %s row %u: shortName names no row of "
				            "StringIds",
				            m->path, table, e.line);
				sqlite3_finalize(st);
				return FALSE;
			}
			e.kind = g_str_has_prefix(nm, "nccl") ? LH_MEV_COLLECTIVE : LH_MEV_KERNEL;
			e.name = intern(m, nm);
		} else if (what == 1) {
			/* CUpti_ActivityMemcpyKind: 1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP. */
			int ck = sqlite3_column_int(st, 8);
			e.bytes = (guint64)MAX(sqlite3_column_int64(st, 7), 0);
			if (ck == 1)
				e.kind = LH_MEV_H2D;
			else if (ck == 2)
				e.kind = LH_MEV_D2H;
			else if (ck == 8 || ck == 10)
				e.kind = LH_MEV_D2D;
			else {
				m->n_ignored++;
				continue;
			}
			e.name = intern(m, e.kind == LH_MEV_H2D   ? "Memcpy HtoD"
			                   : e.kind == LH_MEV_D2H ? "Memcpy DtoH"
			                                          : "Memcpy DtoD");
		} else {
			e.bytes = (guint64)MAX(sqlite3_column_int64(st, 7), 0);
			e.kind = LH_MEV_MEMSET;
			e.name = intern(m, "Memset");
		}
		g_array_append_val(m->events, e);
		g_array_append_val(corr_of, corr);
	}
	gboolean ok = rc == SQLITE_DONE;
	if (!ok)
		sql_fail(m, db, table, error);
	sqlite3_finalize(st);
	return ok;
}

static LhMeasured *load_sqlite(const char *path, GError **error)
{
	sqlite3 *db = NULL;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		g_set_error(error, LH_MEASURED_ERROR, LH_MEASURED_ERROR_IO, "%s: %s", path,
		            db ? sqlite3_errmsg(db) : "cannot open");
		sqlite3_close(db);
		return NULL;
	}
	LhMeasured *m = meas_new(path);
	m->format = g_strdup("nsys sqlite");
	gboolean kt = has_table(db, "CUPTI_ACTIVITY_KIND_KERNEL");
	gboolean mc = has_table(db, "CUPTI_ACTIVITY_KIND_MEMCPY");
	gboolean ms = has_table(db, "CUPTI_ACTIVITY_KIND_MEMSET");
	gboolean ok = TRUE;
	if (!kt && !mc && !ms) {
		/* Also the answer for a file that is not a database at all. */
		g_set_error(error, LH_MEASURED_ERROR, LH_MEASURED_ERROR_INVALID,
		            "%s: no table CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY or _MEMSET: not an "
		            "Nsight Systems export with CUDA trace (nsys profile -t cuda, then "
		            "nsys export --type sqlite)",
		            path);
		ok = FALSE;
	} else if (kt && !has_table(db, "StringIds")) {
		g_set_error(error, LH_MEASURED_ERROR, LH_MEASURED_ERROR_INVALID,
		            "%s: no table StringIds, which names the kernels of "
		            "CUPTI_ACTIVITY_KIND_KERNEL",
		            path);
		ok = FALSE;
	}
	g_autoptr(GArray) corr_of = g_array_new(FALSE, FALSE, sizeof(gint64));
	if (ok && kt)
		ok = read_rows(m, db, "CUPTI_ACTIVITY_KIND_KERNEL",
		               "SELECT k.rowid, k.start, k.end, k.deviceId, k.streamId, "
		               "k.correlationId, s.value, 0, 0 FROM CUPTI_ACTIVITY_KIND_KERNEL k "
		               "LEFT JOIN StringIds s ON s.id = k.shortName",
		               0, corr_of, error);
	if (ok && mc)
		ok = read_rows(m, db, "CUPTI_ACTIVITY_KIND_MEMCPY",
		               "SELECT rowid, start, end, deviceId, streamId, correlationId, NULL, "
		               "bytes, copyKind FROM CUPTI_ACTIVITY_KIND_MEMCPY",
		               1, corr_of, error);
	if (ok && ms)
		ok = read_rows(m, db, "CUPTI_ACTIVITY_KIND_MEMSET",
		               "SELECT rowid, start, end, deviceId, streamId, correlationId, NULL, "
		               "bytes, 0 FROM CUPTI_ACTIVITY_KIND_MEMSET",
		               2, corr_of, error);
	/* Optional: the runtime calls that issued them (issue times, and the launching thread
	 * and time that place them in NVTX ranges). */
	g_autoptr(GHashTable) rt =
	    g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
	if (ok && has_table(db, "CUPTI_ACTIVITY_KIND_RUNTIME")) {
		sqlite3_stmt *st;
		if (sqlite3_prepare_v2(db,
		                       "SELECT correlationId, start, end, globalTid FROM "
		                       "CUPTI_ACTIVITY_KIND_RUNTIME",
		                       -1, &st, NULL) != SQLITE_OK) {
			ok = sql_fail(m, db, "CUPTI_ACTIVITY_KIND_RUNTIME", error);
		} else {
			while (sqlite3_step(st) == SQLITE_ROW) {
				gint64 *k = g_new(gint64, 1), *v = g_new(gint64, 3);
				*k = sqlite3_column_int64(st, 0);
				v[0] = sqlite3_column_int64(st, 1);
				v[1] = sqlite3_column_int64(st, 2);
				v[2] = sqlite3_column_int64(st, 3);
				g_hash_table_replace(rt, k, v);
			}
			sqlite3_finalize(st);
		}
	}
	g_autoptr(GArray) kr = g_array_new(FALSE, FALSE, sizeof(KRange));
	if (ok && has_table(db, "NVTX_EVENTS")) {
		/* Push/pop (59) and start/end (60) ranges; the text is inline or in StringIds. */
		gboolean ids = has_table(db, "StringIds");
		const char *q =
		    ids ? "SELECT n.start, n.end, COALESCE(n.text, s.value), n.globalTid "
		          "FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
		          "WHERE n.eventType IN (59, 60) AND n.end IS NOT NULL"
		        : "SELECT start, end, text, globalTid FROM NVTX_EVENTS WHERE "
		          "eventType IN (59, 60) AND end IS NOT NULL";
		sqlite3_stmt *st;
		if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) {
			ok = sql_fail(m, db, "NVTX_EVENTS", error);
		} else {
			while (sqlite3_step(st) == SQLITE_ROW) {
				const char *t = (const char *)sqlite3_column_text(st, 2);
				if (!t)
					continue;
				LhMeasRange r = {intern(m, t), sqlite3_column_int64(st, 0),
				                 sqlite3_column_int64(st, 1), FALSE};
				g_array_append_val(m->ranges, r);
				KRange k = {sqlite3_column_int64(st, 3), r.start, r.end, r.name};
				g_array_append_val(kr, k);
			}
			sqlite3_finalize(st);
		}
	}
	sqlite3_close(db);
	if (!ok) {
		lh_measured_free(m);
		return NULL;
	}
	g_autoptr(GArray) q = g_array_new(FALSE, FALSE, sizeof(KQuery));
	for (guint i = 0; i < m->events->len; i++) {
		gint64 c = g_array_index(corr_of, gint64, i);
		gint64 *v = c >= 0 ? g_hash_table_lookup(rt, &c) : NULL;
		if (!v)
			continue;
		g_array_index(m->events, LhMeasEvent, i).issue = v[1];
		KQuery x = {v[2], v[0], i};
		g_array_append_val(q, x);
	}
	if (kr->len && q->len)
		annotate(m, kr, q);
	if (!finish(m, TRUE, error)) {
		lh_measured_free(m);
		return NULL;
	}
	return m;
}

LhMeasured *lh_measured_load(const char *path, GError **error)
{
	g_autofree char *data = NULL;
	gsize len = 0;
	GError *e = NULL;
	if (!g_file_get_contents(path, &data, &len, &e)) {
		g_set_error(error, LH_MEASURED_ERROR, LH_MEASURED_ERROR_IO, "%s", e->message);
		g_error_free(e);
		return NULL;
	}
	if (len >= 16 && memcmp(data, "SQLite format 3", 16) == 0)
		return load_sqlite(path, error);
	if (len >= 2 && (guchar)data[0] == 0x1f && (guchar)data[1] == 0x8b) {
		/* gzip (.json.gz, as PyTorch and xprof write them). */
		GBytes *raw = g_bytes_new_take(g_steal_pointer(&data), len);
		g_autoptr(GInputStream) mem = g_memory_input_stream_new_from_bytes(raw);
		g_bytes_unref(raw);
		g_autoptr(GZlibDecompressor) z =
		    g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP);
		g_autoptr(GInputStream) in = g_converter_input_stream_new(mem, G_CONVERTER(z));
		g_autoptr(GByteArray) out = g_byte_array_new();
		guint8 buf[65536];
		gssize n;
		while ((n = g_input_stream_read(in, buf, sizeof buf, NULL, &e)) > 0) {
			if (out->len + (guint64)n > G_MAXINT32) {
				g_set_error(error, LH_MEASURED_ERROR, LH_MEASURED_ERROR_INVALID,
				            "%s: more than 2 GiB once decompressed", path);
				return NULL;
			}
			g_byte_array_append(out, buf, (guint)n);
		}
		if (n < 0) {
			g_set_error(error, LH_MEASURED_ERROR, LH_MEASURED_ERROR_PARSE,
			            "%s: gzip: %s (truncated or corrupt)", path, e->message);
			g_error_free(e);
			return NULL;
		}
		return lh_measured_new_from_json((const char *)out->data, out->len, path, error);
	}
	return lh_measured_new_from_json(data, len, path, error);
}
