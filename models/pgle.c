/* lhsim — XLA's PGLE profiles (ProfiledInstructionsProto, protobuf text format) in and out.
 * The format and the mapping onto graph ops are in docs/pgle.md. */
#include "models/pgle.h"

#include "sim/cost.h"
#include "sim/util.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

/* The engine's limit on one op's standalone time (sim/engine.c), ns. */
#define MAX_NS 1e17

typedef struct {
	char *name;   /* costs: the instruction; latencies: the source (the start) */
	char *target; /* latencies: the target (the done); NULL for costs */
	gint64 ns;
} Entry;

struct _LhPgle {
	GArray *entries; /* of Entry, in file order */
	guint32 n_costs, n_latencies;
};

/* ---- reading ---- */

typedef struct {
	const char *data;
	gsize len, pos;
	const char *where;
	GError *error;
	char *fingerprint; /* of the first "FINGERPRINT::name" cost, or NULL */
	LhPgle *out;
} Ps;

static void pos_of(const Ps *ps, gsize at, int *line, int *col)
{
	int l = 1, c = 1;
	for (gsize i = 0; i < at && i < ps->len; i++) {
		if (ps->data[i] == '\n') {
			l++;
			c = 1;
		} else {
			c++;
		}
	}
	*line = l;
	*col = c;
}

static gboolean fail_at(Ps *ps, gsize at, LhGraphError code, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);
static gboolean fail_at(Ps *ps, gsize at, LhGraphError code, const char *fmt, ...)
{
	if (ps->error)
		return FALSE;
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	int line, col;
	pos_of(ps, at, &line, &col);
	g_set_error(&ps->error, LH_GRAPH_ERROR, code, "%s:%d:%d: %s", ps->where, line, col, msg);
	return FALSE;
}

#define SYNTAX LH_GRAPH_ERROR_PARSE
#define VALUE LH_GRAPH_ERROR_INVALID

static gboolean at_end(const Ps *ps)
{
	return ps->pos >= ps->len;
}

static char peek(const Ps *ps)
{
	return at_end(ps) ? '\0' : ps->data[ps->pos];
}

/* White space and `#` comments. */
static void skip_ws(Ps *ps)
{
	while (!at_end(ps)) {
		char c = ps->data[ps->pos];
		if (c == '#') {
			while (!at_end(ps) && ps->data[ps->pos] != '\n')
				ps->pos++;
		} else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
		           c == '\v') {
			ps->pos++;
		} else {
			break;
		}
	}
}

/* What stands at the current position, for messages: "'x'", "the end of the file". */
static char *here(const Ps *ps)
{
	if (at_end(ps))
		return g_strdup("the end of the file");
	gsize n = 0;
	while (ps->pos + n < ps->len && n < 16 && ps->data[ps->pos + n] != '\n' &&
	       ps->data[ps->pos + n] != '\r')
		n++;
	if (n == 0)
		return g_strdup("the end of the line");
	g_autofree char *s = g_strndup(ps->data + ps->pos, n);
	g_autofree char *v = g_utf8_make_valid(s, -1);
	return g_strdup_printf("'%s'", v);
}

static gboolean is_ident_start(char c)
{
	return g_ascii_isalpha(c) || c == '_';
}

static gboolean is_ident_char(char c)
{
	return g_ascii_isalnum(c) || c == '_';
}

static char *read_ident(Ps *ps)
{
	gsize s = ps->pos;
	if (!is_ident_start(peek(ps)))
		return NULL;
	while (!at_end(ps) && is_ident_char(ps->data[ps->pos]))
		ps->pos++;
	return g_strndup(ps->data + s, ps->pos - s);
}

static int hexval(char c)
{
	return g_ascii_xdigit_value(c);
}

/* One quoted string ('...' or "...") with C escapes, appended to @s. */
static gboolean read_quoted(Ps *ps, GString *s)
{
	gsize open = ps->pos;
	char q = ps->data[ps->pos++];
	for (;;) {
		if (at_end(ps) || ps->data[ps->pos] == '\n')
			return fail_at(ps, open, SYNTAX, "unterminated string");
		char c = ps->data[ps->pos];
		if (c == q) {
			ps->pos++;
			return TRUE;
		}
		if (c != '\\') {
			g_string_append_c(s, c);
			ps->pos++;
			continue;
		}
		gsize esc = ps->pos++;
		if (at_end(ps))
			return fail_at(ps, open, SYNTAX, "unterminated string");
		c = ps->data[ps->pos++];
		switch (c) {
		case 'a':
			g_string_append_c(s, '\a');
			break;
		case 'b':
			g_string_append_c(s, '\b');
			break;
		case 'f':
			g_string_append_c(s, '\f');
			break;
		case 'n':
			g_string_append_c(s, '\n');
			break;
		case 'r':
			g_string_append_c(s, '\r');
			break;
		case 't':
			g_string_append_c(s, '\t');
			break;
		case 'v':
			g_string_append_c(s, '\v');
			break;
		case '\\':
		case '\'':
		case '"':
		case '?':
			g_string_append_c(s, c);
			break;
		case 'x':
		case 'X': {
			int v = 0, k = 0;
			while (k < 2 && !at_end(ps) && hexval(ps->data[ps->pos]) >= 0)
				v = v * 16 + hexval(ps->data[ps->pos++]), k++;
			if (!k)
				return fail_at(ps, esc, SYNTAX, "'\\x' needs a hex digit");
			g_string_append_c(s, (char)v);
			break;
		}
		case 'u':
		case 'U': {
			int want = c == 'u' ? 4 : 8;
			guint32 v = 0;
			for (int k = 0; k < want; k++) {
				if (at_end(ps) || hexval(ps->data[ps->pos]) < 0)
					return fail_at(ps, esc, SYNTAX,
					               "'\\%c' needs %d hex digits", c, want);
				v = v * 16 + (guint32)hexval(ps->data[ps->pos++]);
			}
			if (!g_unichar_validate(v))
				return fail_at(ps, esc, SYNTAX, "'\\%c' names no Unicode character",
				               c);
			g_string_append_unichar(s, v);
			break;
		}
		default:
			if (c >= '0' && c <= '7') {
				int v = c - '0', k = 1;
				while (k < 3 && !at_end(ps) && ps->data[ps->pos] >= '0' &&
				       ps->data[ps->pos] <= '7')
					v = v * 8 + (ps->data[ps->pos++] - '0'), k++;
				if (v > 255)
					return fail_at(ps, esc, SYNTAX, "octal escape above \\377");
				g_string_append_c(s, (char)v);
				break;
			}
			return fail_at(ps, esc, SYNTAX, "unknown escape '\\%c'", c);
		}
	}
}

/* A string value: one or more adjacent quoted strings, concatenated. */
static gboolean read_string(Ps *ps, const char *field, char **out)
{
	if (peek(ps) != '"' && peek(ps) != '\'') {
		g_autofree char *h = here(ps);
		return fail_at(ps, ps->pos, SYNTAX, "'%s' needs a quoted string, got %s", field, h);
	}
	gsize start = ps->pos;
	GString *s = g_string_new(NULL);
	while (peek(ps) == '"' || peek(ps) == '\'') {
		if (!read_quoted(ps, s)) {
			g_string_free(s, TRUE);
			return FALSE;
		}
		skip_ws(ps);
	}
	if (strlen(s->str) != s->len) {
		g_string_free(s, TRUE);
		return fail_at(ps, start, VALUE, "'%s' holds a NUL byte", field);
	}
	*out = g_string_free(s, FALSE);
	return TRUE;
}

/* A number in microseconds, as whole ns rounded to the nearest: decimal (with fraction and
 * exponent, and protobuf's optional f suffix), hex or octal integers; a leading '-'. The
 * decimal text is shifted by 10^3 before it is converted, so the ns value is the correctly
 * rounded one, not a product that lost a bit. */
static gboolean read_us(Ps *ps, const char *field, gint64 *ns)
{
	gsize start = ps->pos;
	gboolean neg = FALSE;
	if (peek(ps) == '-') {
		neg = TRUE;
		ps->pos++;
		skip_ws(ps);
	}
	gsize t = ps->pos;
	char c = peek(ps);
	if (c == '"' || c == '\'')
		return fail_at(ps, t, SYNTAX, "'%s' needs a number, not a string", field);
	if (is_ident_start(c)) {
		g_autofree char *id = read_ident(ps);
		if (!g_ascii_strcasecmp(id, "inf") || !g_ascii_strcasecmp(id, "infinity") ||
		    !g_ascii_strcasecmp(id, "nan"))
			return fail_at(ps, t, VALUE, "'%s' must be a finite number, got '%s'",
			               field, id);
		return fail_at(ps, t, SYNTAX, "'%s' needs a number, got '%s'", field, id);
	}
	if (!g_ascii_isdigit(c) && c != '.') {
		g_autofree char *h = here(ps);
		return fail_at(ps, t, SYNTAX, "'%s' needs a number, got %s", field, h);
	}
	double v;
	if (c == '0' && (ps->pos + 1 < ps->len) &&
	    (ps->data[ps->pos + 1] == 'x' || ps->data[ps->pos + 1] == 'X')) {
		ps->pos += 2;
		gsize d = ps->pos;
		guint64 x = 0;
		while (!at_end(ps) && hexval(ps->data[ps->pos]) >= 0) {
			if (x > G_MAXUINT64 / 16)
				return fail_at(ps, t, VALUE, "'%s': the number is too large",
				               field);
			x = x * 16 + (guint64)hexval(ps->data[ps->pos++]);
		}
		if (ps->pos == d)
			return fail_at(ps, t, SYNTAX, "'%s': '0x' needs hex digits", field);
		v = (double)x * 1000.0;
	} else {
		gboolean digits = FALSE, dot = FALSE, expo = FALSE;
		while (!at_end(ps) && g_ascii_isdigit(ps->data[ps->pos]))
			ps->pos++, digits = TRUE;
		if (peek(ps) == '.') {
			dot = TRUE;
			ps->pos++;
			while (!at_end(ps) && g_ascii_isdigit(ps->data[ps->pos]))
				ps->pos++, digits = TRUE;
		}
		if (!digits)
			return fail_at(ps, t, SYNTAX, "'%s': a number needs digits", field);
		gsize mant_end = ps->pos;
		long e = 0;
		if (peek(ps) == 'e' || peek(ps) == 'E') {
			expo = TRUE;
			ps->pos++;
			gboolean eneg = FALSE;
			if (peek(ps) == '+' || peek(ps) == '-')
				eneg = ps->data[ps->pos++] == '-';
			if (!g_ascii_isdigit(peek(ps)))
				return fail_at(ps, t, SYNTAX, "'%s': the exponent needs digits",
				               field);
			while (!at_end(ps) && g_ascii_isdigit(ps->data[ps->pos])) {
				if (e < 100000)
					e = e * 10 + (ps->data[ps->pos] - '0');
				ps->pos++;
			}
			if (eneg)
				e = -e;
		}
		gboolean suffix_f = peek(ps) == 'f' || peek(ps) == 'F';
		if (suffix_f && (dot || expo))
			ps->pos++;
		if (!dot && !expo && ps->data[t] == '0' && mant_end - t > 1) {
			/* An octal integer, as protobuf reads one. */
			guint64 x = 0;
			for (gsize i = t + 1; i < mant_end; i++) {
				char d = ps->data[i];
				if (d > '7')
					return fail_at(ps, t, SYNTAX,
					               "'%s': '%.*s' is not an octal number", field,
					               (int)(mant_end - t), ps->data + t);
				if (x > G_MAXUINT64 / 8)
					return fail_at(ps, t, VALUE,
					               "'%s': the number is too large", field);
				x = x * 8 + (guint64)(d - '0');
			}
			v = (double)x * 1000.0;
		} else {
			g_autofree char *mant = g_strndup(ps->data + t, mant_end - t);
			g_autofree char *txt = g_strdup_printf("%se%ld", mant, e + 3);
			v = g_ascii_strtod(txt, NULL);
		}
	}
	if (is_ident_char(peek(ps)) || peek(ps) == '.') {
		g_autofree char *h = here(ps);
		return fail_at(ps, t, SYNTAX, "'%s': malformed number before %s", field, h);
	}
	if (neg && v > 0)
		return fail_at(ps, start, VALUE, "'%s' must be >= 0, got a negative cost", field);
	if (!(v <= MAX_NS))
		return fail_at(ps, t, VALUE,
		               "'%s' is %.4g us, beyond the engine's range of %.0e ns (about 3 "
		               "years)",
		               field, v / 1000.0, MAX_NS);
	*ns = (gint64)llround(v);
	return TRUE;
}

typedef enum { MSG_TOP, MSG_COST, MSG_LATENCY } MsgKind;

static gboolean parse_message(Ps *ps, MsgKind kind, gsize open, char close, Entry *e);

/* Message-typed field value after its name (and optional ':'): `{...}`, `<...>` or a list. */
static gboolean parse_sub(Ps *ps, const char *field, MsgKind kind)
{
	gboolean list = peek(ps) == '[';
	gsize lopen = ps->pos;
	if (list) {
		ps->pos++;
		skip_ws(ps);
		if (peek(ps) == ']') {
			ps->pos++;
			return TRUE;
		}
	}
	for (;;) {
		char c = peek(ps);
		if (c != '{' && c != '<') {
			g_autofree char *h = here(ps);
			return fail_at(ps, ps->pos, SYNTAX,
			               "'%s' needs a message '{ ... }', got %s", field, h);
		}
		gsize open = ps->pos++;
		Entry e = {0};
		if (!parse_message(ps, kind, open, c == '{' ? '}' : '>', &e)) {
			g_free(e.name);
			g_free(e.target);
			return FALSE;
		}
		if (!e.name)
			e.name = g_strdup("");
		if (kind == MSG_LATENCY && !e.target)
			e.target = g_strdup("");
		/* XLA keeps only costs of this module: FINGERPRINT::name (gpu_hlo_schedule.cc). */
		const char *sep = kind == MSG_COST ? strstr(e.name, "::") : NULL;
		if (sep) {
			g_autofree char *fp = g_strndup(e.name, (gsize)(sep - e.name));
			if (!ps->fingerprint) {
				ps->fingerprint = g_strdup(fp);
			} else if (strcmp(ps->fingerprint, fp) != 0) {
				g_free(e.name);
				return fail_at(
				    ps, open, VALUE,
				    "the profile holds costs of two modules (fingerprints "
				    "'%s' and '%s'); keep one module's",
				    ps->fingerprint, fp);
			}
			char *n = g_strdup(sep + 2);
			g_free(e.name);
			e.name = n;
		}
		g_array_append_val(ps->out->entries, e);
		if (kind == MSG_COST)
			ps->out->n_costs++;
		else
			ps->out->n_latencies++;
		if (!list)
			return TRUE;
		skip_ws(ps);
		if (peek(ps) == ',') {
			ps->pos++;
			skip_ws(ps);
			continue;
		}
		if (peek(ps) == ']') {
			ps->pos++;
			return TRUE;
		}
		if (at_end(ps))
			return fail_at(ps, lopen, SYNTAX,
			               "truncated: the list is not closed with ']'");
		g_autofree char *h = here(ps);
		return fail_at(ps, ps->pos, SYNTAX,
		               "expected ',' or ']' in the list of '%s', got %s", field, h);
	}
}

static gboolean parse_message(Ps *ps, MsgKind kind, gsize open, char close, Entry *e)
{
	static const char *const top[] = {"costs", "latencies", NULL};
	static const char *const cost[] = {"name", "cost_us", NULL};
	static const char *const lat[] = {"source", "target", "latency_us", NULL};
	static const char *const msg_name[] = {"ProfiledInstructionsProto", "InstructionCost",
	                                       "Latency"};
	const char *const *fields = kind == MSG_TOP ? top : kind == MSG_COST ? cost : lat;
	guint seen = 0;
	for (;;) {
		skip_ws(ps);
		if (at_end(ps)) {
			if (!close)
				return TRUE;
			int line, col;
			pos_of(ps, open, &line, &col);
			return fail_at(ps, ps->pos, SYNTAX,
			               "truncated: the %s opened at %d:%d is not closed with '%c'",
			               msg_name[kind], line, col, close);
		}
		if (close && peek(ps) == close) {
			ps->pos++;
			return TRUE;
		}
		gsize at = ps->pos;
		g_autofree char *name = read_ident(ps);
		if (!name) {
			g_autofree char *h = here(ps);
			return fail_at(ps, at, SYNTAX, "expected a field name%s, got %s",
			               close ? "" : " (costs or latencies)", h);
		}
		int f = -1;
		for (int k = 0; fields[k]; k++)
			if (!strcmp(fields[k], name))
				f = k;
		if (f < 0) {
			g_autofree char *list = g_strjoinv(", ", (char **)fields);
			return fail_at(ps, at, SYNTAX, "%s has no field '%s' (its fields: %s)",
			               msg_name[kind], name, list);
		}
		skip_ws(ps);
		if (kind == MSG_TOP) {
			if (peek(ps) == ':') {
				ps->pos++;
				skip_ws(ps);
			}
			if (!parse_sub(ps, name, f == 0 ? MSG_COST : MSG_LATENCY))
				return FALSE;
		} else {
			if (peek(ps) != ':') {
				g_autofree char *h = here(ps);
				return fail_at(ps, ps->pos, SYNTAX,
				               "expected ':' after '%s', got %s", name, h);
			}
			ps->pos++;
			skip_ws(ps);
			if (seen & (1u << f))
				return fail_at(ps, at, SYNTAX, "'%s' is given twice in one %s",
				               name, msg_name[kind]);
			seen |= 1u << f;
			if (peek(ps) == '[')
				return fail_at(ps, ps->pos, SYNTAX, "'%s' is not a repeated field",
				               name);
			gboolean is_str = kind == MSG_COST ? f == 0 : f < 2;
			if (is_str) {
				char **slot = f == 1 && kind == MSG_LATENCY ? &e->target : &e->name;
				if (!read_string(ps, name, slot))
					return FALSE;
			} else if (!read_us(ps, name, &e->ns)) {
				return FALSE;
			}
		}
		skip_ws(ps);
		if (peek(ps) == ',' || peek(ps) == ';')
			ps->pos++;
	}
}

LhPgle *lh_pgle_new_from_data(const char *data, gsize len, const char *where, GError **error)
{
	LhPgle *p = g_new0(LhPgle, 1);
	p->entries = g_array_new(FALSE, FALSE, sizeof(Entry));
	Ps ps = {.data = data, .len = len, .where = where ? where : "profile", .out = p};
	if (memchr(data, '\0', len)) {
		fail_at(&ps, (gsize)((const char *)memchr(data, '\0', len) - data), SYNTAX,
		        "a NUL byte: a text profile (.pbtxt) is expected, not a binary one (.pb)");
	} else {
		parse_message(&ps, MSG_TOP, 0, '\0', NULL);
	}
	g_free(ps.fingerprint);
	if (ps.error) {
		g_propagate_error(error, ps.error);
		lh_pgle_free(p);
		return NULL;
	}
	return p;
}

LhPgle *lh_pgle_new_from_file(const char *path, GError **error)
{
	g_autofree char *data = NULL;
	gsize len = 0;
	GError *e = NULL;
	if (!g_file_get_contents(path, &data, &len, &e)) {
		g_set_error(error, LH_GRAPH_ERROR, LH_GRAPH_ERROR_IO, "%s", e->message);
		g_error_free(e);
		return NULL;
	}
	return lh_pgle_new_from_data(data, len, path, error);
}

void lh_pgle_free(LhPgle *p)
{
	if (!p)
		return;
	for (guint i = 0; i < p->entries->len; i++) {
		Entry *e = &g_array_index(p->entries, Entry, i);
		g_free(e->name);
		g_free(e->target);
	}
	g_array_free(p->entries, TRUE);
	g_free(p);
}

guint32 lh_pgle_n_costs(const LhPgle *p)
{
	return p->n_costs;
}

guint32 lh_pgle_n_latencies(const LhPgle *p)
{
	return p->n_latencies;
}

/* ---- names ---- */

static gboolean runs_async(const LhOp *op)
{
	return op->kind != LH_OP_INPUT && op->async && lh_op_class(op) != LH_CLASS_NONE;
}

/* Strips `@K` (the importer's loop iterations) and `.dupN` (its duplicate names) from the end,
 * repeatedly: "fusion.3@0@1" -> "fusion.3". Returns NULL when nothing was stripped. */
static char *hlo_name(const char *name)
{
	gsize n = strlen(name), end = n;
	for (;;) {
		gsize d = end;
		while (d > 0 && g_ascii_isdigit(name[d - 1]))
			d--;
		if (d == end || d == 0)
			break;
		if (name[d - 1] == '@' && d - 1 > 0)
			end = d - 1;
		else if (d >= 4 && !strncmp(name + d - 4, ".dup", 4) && d - 4 > 0)
			end = d - 4;
		else
			break;
	}
	return end == n ? NULL : g_strndup(name, end);
}

char *lh_pgle_done_name(const char *s)
{
	for (int k = 0; k < 2; k++) {
		const char *st = g_strrstr(s, k ? "_start" : "-start");
		if (st && (st[6] == '\0' || st[6] == '.'))
			return g_strdup_printf("%.*s%cdone%s", (int)(st - s), s, st[0], st + 6);
	}
	for (int k = 0; k < 2; k++) {
		const char *w = k ? "recv" : "send";
		if (g_str_has_prefix(s, w) && (s[4] == '\0' || s[4] == '.'))
			return g_strdup_printf("%s-done%s", w, s + 4);
	}
	return NULL;
}

/* ---- applying ---- */

void lh_pgle_report_clear(LhPgleReport *r)
{
	if (!r)
		return;
	g_free(r->first_unknown);
	g_free(r->from_profile);
	memset(r, 0, sizeof *r);
}

static gint lookup(GHashTable *h, const char *name)
{
	gpointer v;
	if (name && g_hash_table_lookup_extended(h, name, NULL, &v))
		return GPOINTER_TO_INT(v);
	return -1;
}

void lh_pgle_apply(LhGraph *g, const LhPgle *p, LhPgleReport *report)
{
	guint32 n = lh_graph_n_ops(g), ne = p->entries->len;
	/* Later entries win, as in XLA's map. */
	g_autoptr(GHashTable) cost = g_hash_table_new(g_str_hash, g_str_equal);
	g_autoptr(GHashTable) lat = g_hash_table_new(g_str_hash, g_str_equal);
	for (guint32 k = 0; k < ne; k++) {
		const Entry *e = &g_array_index(p->entries, Entry, k);
		g_hash_table_insert(e->target ? lat : cost, e->name, GINT_TO_POINTER((gint)k));
	}
	g_autofree guint8 *applied = g_new0(guint8, ne ? ne : 1);
	guint8 *from = g_new0(guint8, n ? n : 1);
	/* The cost each profiled op took, by its name and HLO name: an entry that another entry
	 * shadowed with the same value (an async op's start cost and its latency) counts as
	 * applied. */
	g_autoptr(GHashTable) took = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	guint32 n_ops = 0;
	/* Every name an entry may mean in this graph: ops, their HLO names, their dones. */
	g_autoptr(GHashTable) known = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	for (guint32 i = 0; i < n; i++) {
		const LhOp *op = lh_graph_op(g, i);
		char *base = hlo_name(op->name);
		g_hash_table_add(known, g_strdup(op->name));
		if (base)
			g_hash_table_add(known, g_strdup(base));
		if (runs_async(op)) {
			char *d = lh_pgle_done_name(base ? base : op->name);
			if (d)
				g_hash_table_add(known, d);
		}
		if (op->kind != LH_OP_INPUT) {
			gint k = -1;
			if (runs_async(op)) {
				k = lookup(lat, op->name);
				if (k < 0)
					k = lookup(lat, base);
			}
			if (k < 0)
				k = lookup(cost, op->name);
			if (k < 0)
				k = lookup(cost, base);
			if (k >= 0) {
				gint64 ns = g_array_index(p->entries, Entry, k).ns;
				lh_graph_set_duration(g, i, ns);
				g_hash_table_replace(took, g_strdup(op->name),
				                     g_memdup2(&ns, sizeof ns));
				if (base)
					g_hash_table_replace(took, g_strdup(base),
					                     g_memdup2(&ns, sizeof ns));
				applied[k] = 1;
				from[i] = 1;
				n_ops++;
			}
		}
		g_free(base);
	}
	if (!report) {
		g_free(from);
		return;
	}
	memset(report, 0, sizeof *report);
	report->n_ops = n_ops;
	report->n_entries = ne;
	report->from_profile = from;
	for (guint32 k = 0; k < ne; k++) {
		const Entry *e = &g_array_index(p->entries, Entry, k);
		const gint64 *t = g_hash_table_lookup(took, e->name);
		if (applied[k] || (t && *t == e->ns)) {
			report->n_applied++;
		} else if (g_hash_table_contains(known, e->name)) {
			report->n_unused++;
		} else {
			report->n_unknown++;
			if (!report->first_unknown)
				report->first_unknown = g_strdup(e->name);
		}
	}
}

double lh_pgle_share(const LhGraph *g, const LhHw *hw, const LhPgleReport *report,
                     double *profile_ns, double *total_ns)
{
	double in = 0, all = 0;
	for (guint32 i = 0; i < lh_graph_n_ops(g); i++) {
		double t = lh_op_standalone_ns_in(g, lh_graph_op(g, i), hw);
		all += t;
		if (report && report->from_profile && report->from_profile[i])
			in += t;
	}
	if (profile_ns)
		*profile_ns = in;
	if (total_ns)
		*total_ns = all;
	return all > 0 ? in / all : 0;
}

/* ---- writing ---- */

static void append_quoted(GString *s, const char *str)
{
	g_string_append_c(s, '"');
	for (const unsigned char *c = (const unsigned char *)str; *c; c++) {
		if (*c == '"' || *c == '\\')
			g_string_append_printf(s, "\\%c", *c);
		else if (*c < 0x20 || *c == 0x7f)
			g_string_append_printf(s, "\\%03o", *c);
		else
			g_string_append_c(s, (char)*c);
	}
	g_string_append_c(s, '"');
}

/* Whole ns as µs with exactly the digits needed: 12345 -> "12.345", 200000 -> "200". */
static void append_us(GString *s, gint64 ns)
{
	g_string_append_printf(s, "%" G_GINT64_FORMAT, ns / 1000);
	int frac = (int)(ns % 1000), digits = 3;
	if (frac) {
		/* Drop trailing zeros arithmetically: 120 -> ".12", 5 -> ".005". */
		while (frac % 10 == 0) {
			frac /= 10;
			digits--;
		}
		g_string_append_printf(s, ".%0*d", digits, frac);
	}
}

typedef struct {
	char *name;
	double sum;
	guint32 count;
	gint64 first;
	gboolean same, async;
} Group;

static char *export_text(const LhGraph *g, const LhHw *hw, guint32 *n_averaged, GError **error)
{
	guint32 n = lh_graph_n_ops(g);
	g_autoptr(GHashTable) index = g_hash_table_new(g_str_hash, g_str_equal);
	GArray *groups = g_array_new(FALSE, TRUE, sizeof(Group));
	gboolean ok = TRUE;
	for (guint32 i = 0; i < n && ok; i++) {
		const LhOp *op = lh_graph_op(g, i);
		if (op->kind == LH_OP_INPUT)
			continue;
		double t = lh_op_standalone_ns_in(g, op, hw);
		if (!(t <= MAX_NS)) {
			g_set_error(
			    error, LH_GRAPH_ERROR, LH_GRAPH_ERROR_INVALID,
			    "op '%s': its standalone duration on %s, %.3g ns, is beyond the "
			    "engine's range of %.0e ns (about 3 years)",
			    op->name, hw->name, t, MAX_NS);
			ok = FALSE;
			break;
		}
		gint64 ns = (gint64)llround(t);
		char *base = hlo_name(op->name);
		const char *key = base ? base : op->name;
		gint k = lookup(index, key);
		if (k < 0) {
			Group gr = {base ? base : g_strdup(op->name),
			            (double)ns,
			            1,
			            ns,
			            TRUE,
			            runs_async(op)};
			g_array_append_val(groups, gr);
			g_hash_table_insert(index, gr.name, GINT_TO_POINTER((gint)groups->len - 1));
			continue;
		}
		g_free(base);
		Group *gr = &g_array_index(groups, Group, k);
		gr->sum += (double)ns;
		gr->count++;
		gr->same = gr->same && ns == gr->first;
		gr->async = gr->async || runs_async(op);
	}
	GString *s = NULL;
	guint32 averaged = 0;
	if (ok) {
		s = g_string_new(NULL);
		g_string_append(
		    s, "# lhsim export-pgle: the standalone cost in microseconds of every op "
		       "of graph ");
		append_quoted(s, lh_graph_name(g));
		g_string_append_printf(s,
		                       "\n# on %s (measured duration_ns where the graph has one, "
		                       "else lhsim's cost model).\n",
		                       hw->name);
		g_string_append(
		    s, "# XLA's ProfiledInstructionsProto in protobuf text format; give it "
		       "to XLA with\n"
		       "# --xla_gpu_pgle_profile_file_or_directory_path=THIS.pbtxt "
		       "(docs/pgle.md).\n");
		for (guint k = 0; k < groups->len; k++) {
			Group *gr = &g_array_index(groups, Group, k);
			gint64 ns = gr->same ? gr->first : (gint64)llround(gr->sum / gr->count);
			averaged += !gr->same;
			g_string_append(s, "costs { name: ");
			append_quoted(s, gr->name);
			g_string_append(s, " cost_us: ");
			append_us(s, ns);
			g_string_append(s, " }\n");
		}
		for (guint k = 0; k < groups->len; k++) {
			Group *gr = &g_array_index(groups, Group, k);
			g_autofree char *done = gr->async ? lh_pgle_done_name(gr->name) : NULL;
			if (!done)
				continue;
			gint64 ns = gr->same ? gr->first : (gint64)llround(gr->sum / gr->count);
			g_string_append(s, "latencies { source: ");
			append_quoted(s, gr->name);
			g_string_append(s, " target: ");
			append_quoted(s, done);
			g_string_append(s, " latency_us: ");
			append_us(s, ns);
			g_string_append(s, " }\n");
		}
	}
	for (guint k = 0; k < groups->len; k++)
		g_free(g_array_index(groups, Group, k).name);
	g_array_free(groups, TRUE);
	if (n_averaged)
		*n_averaged = averaged;
	return s ? g_string_free(s, FALSE) : NULL;
}

char *lh_pgle_export(const LhGraph *g, const LhHw *hw, guint32 *n_averaged, GError **error)
{
	return export_text(g, hw, n_averaged, error);
}

gboolean lh_pgle_export_file(const LhGraph *g, const LhHw *hw, const char *path,
                             guint32 *n_averaged, GError **error)
{
	g_autofree char *text = export_text(g, hw, n_averaged, error);
	if (!text)
		return FALSE;
	return lh_write_file_atomic(path, text, strlen(text), error);
}
