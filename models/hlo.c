/* lhsim — XLA HLO text import. See hlo.h for what becomes what.
 *
 * Two passes: a parser that turns the text into computations of instructions (names, shapes,
 * opcodes, operands, raw attribute values, source positions), then an emitter that walks the
 * entry computation, inlines while bodies and calls, and adds ops to an LhGraph. */
#include "models/hlo.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64            /* nesting of tuple shapes, computations and inlining */
#define MAX_RANK 32             /* dimensions of an array shape */
#define MAX_OPS 5000000u        /* ops in one imported graph, after unrolling */
#define HOST_SPACE 5            /* XLA's memory space for pinned host memory, S(5) */

/* ---- shapes ---- */

typedef struct _Shape Shape;
struct _Shape {
	double elems;        /* array: number of elements; tuple: 0 */
	double bytes;        /* array: elems * element size; tuple: sum of its elements */
	guint rank;
	gint64 dims[MAX_RANK];
	gboolean tuple;
	gboolean host;       /* array in memory space S(5) */
	guint n_sub;
	Shape *sub;          /* tuple elements */
};

static void shape_clear(Shape *s)
{
	for (guint i = 0; i < s->n_sub; i++)
		shape_clear(&s->sub[i]);
	g_free(s->sub);
	memset(s, 0, sizeof *s);
}

static void shape_copy(Shape *dst, const Shape *src)
{
	*dst = *src;
	dst->sub = NULL;
	if (src->n_sub) {
		dst->sub = g_new0(Shape, src->n_sub);
		for (guint i = 0; i < src->n_sub; i++)
			shape_copy(&dst->sub[i], &src->sub[i]);
	}
}

/* The largest array in a (possibly tuple) shape: a start's output, a gemm's result. */
static const Shape *shape_largest(const Shape *s)
{
	if (!s->tuple)
		return s;
	const Shape *best = NULL;
	for (guint i = 0; i < s->n_sub; i++) {
		const Shape *c = shape_largest(&s->sub[i]);
		if (c && (!best || c->bytes > best->bytes))
			best = c;
	}
	return best;
}

static const Shape *shape_first_array(const Shape *s)
{
	while (s && s->tuple)
		s = s->n_sub ? &s->sub[0] : NULL;
	return s;
}

static gboolean shape_any_host(const Shape *s)
{
	if (!s->tuple)
		return s->host;
	for (guint i = 0; i < s->n_sub; i++)
		if (shape_any_host(&s->sub[i]))
			return TRUE;
	return FALSE;
}

/* Element size in bits; 0 for an unknown type name. */
static int type_bits(const char *t)
{
	static const struct {
		const char *name;
		int bits;
	} types[] = {
		{"pred", 8},   {"s1", 1},      {"s2", 2},        {"s4", 4},         {"s8", 8},
		{"s16", 16},   {"s32", 32},    {"s64", 64},      {"u1", 1},         {"u2", 2},
		{"u4", 4},     {"u8", 8},      {"u16", 16},      {"u32", 32},       {"u64", 64},
		{"f16", 16},   {"bf16", 16},   {"f32", 32},      {"f64", 64},       {"c64", 64},
		{"c128", 128}, {"f8e5m2", 8},  {"f8e4m3fn", 8},  {"f8e4m3b11fnuz", 8},
		{"f8e5m2fnuz", 8}, {"f8e4m3fnuz", 8}, {"f8e4m3", 8}, {"f8e3m4", 8},
		{"f8e8m0fnu", 8}, {"f4e2m1fn", 4}, {"tf32", 32},
	};
	for (gsize i = 0; i < G_N_ELEMENTS(types); i++)
		if (strcmp(types[i].name, t) == 0)
			return types[i].bits;
	return 0;
}

/* ---- parsed module ---- */

typedef struct {
	char *key;
	char *value; /* raw text */
	gsize at;    /* offset of the key */
} Attr;

typedef struct {
	char *name;
	char *opcode;
	Shape shape;
	gboolean has_shape;
	gboolean root;
	gsize at;              /* offset of the name */
	gsize op_at;           /* offset of the opcode */
	GPtrArray *operands;   /* char *, names (a parameter's number for parameter) */
	GArray *operand_at;    /* gsize offsets */
	GArray *attrs;         /* Attr */
	char *literal;         /* constant: the text between the parens */
	gint *ops;             /* resolved operand instruction indices (after parse) */
} Instr;

typedef struct {
	char *name;
	gsize at;
	gboolean entry;
	GPtrArray *instrs;     /* Instr * */
	GHashTable *index;     /* name -> index + 1 */
	gint root;
	gint n_params;
	gint *param_of;        /* parameter number -> instruction index, -1 if none */
	/* emitter state */
	gboolean busy;         /* being inlined (recursion guard) */
	gboolean cost_done, cost_busy;
	double flops;          /* sum of instruction flops, fusions included */
} Comp;

typedef struct {
	const char *data;
	gsize len, pos;
	const char *where;
	GPtrArray *comps;      /* Comp * */
	GHashTable *comp_index; /* name -> Comp * */
	Comp *entry;
	gboolean scheduled;
	gint64 num_partitions, replica_count;
	char *module_name;
	GError *error;
} Parser;

static void instr_free(gpointer p)
{
	Instr *in = p;
	g_free(in->name);
	g_free(in->opcode);
	shape_clear(&in->shape);
	if (in->operands)
		g_ptr_array_unref(in->operands);
	if (in->operand_at)
		g_array_unref(in->operand_at);
	if (in->attrs) {
		for (guint i = 0; i < in->attrs->len; i++) {
			Attr *a = &g_array_index(in->attrs, Attr, i);
			g_free(a->key);
			g_free(a->value);
		}
		g_array_unref(in->attrs);
	}
	g_free(in->literal);
	g_free(in->ops);
	g_free(in);
}

static void comp_free(gpointer p)
{
	Comp *c = p;
	g_free(c->name);
	g_ptr_array_unref(c->instrs);
	g_hash_table_unref(c->index);
	g_free(c->param_of);
	g_free(c);
}

static void parser_clear(Parser *ps)
{
	if (ps->comps)
		g_ptr_array_unref(ps->comps);
	if (ps->comp_index)
		g_hash_table_unref(ps->comp_index);
	g_free(ps->module_name);
	if (ps->error)
		g_error_free(ps->error);
}

static const char *attr_get(const Instr *in, const char *key)
{
	if (!in->attrs)
		return NULL;
	for (guint i = 0; i < in->attrs->len; i++) {
		Attr *a = &g_array_index(in->attrs, Attr, i);
		if (strcmp(a->key, key) == 0)
			return a->value;
	}
	return NULL;
}

/* ---- errors with positions ---- */

static void pos_of(const char *data, gsize len, gsize at, int *line, int *col)
{
	int l = 1, c = 1;
	for (gsize i = 0; i < at && i < len; i++) {
		if (data[i] == '\n') {
			l++;
			c = 1;
		} else {
			c++;
		}
	}
	*line = l;
	*col = c;
}

/* The text at @at, up to the end of its line, shortened, for messages. */
static char *near_text(const char *data, gsize len, gsize at)
{
	if (at >= len)
		return g_strdup("end of file");
	gsize e = at;
	while (e < len && data[e] != '\n' && data[e] != '\r' && e - at < 40)
		e++;
	GString *s = g_string_new("'");
	for (gsize i = at; i < e; i++) {
		unsigned char ch = (unsigned char)data[i];
		if (ch < 0x20 || ch >= 0x7f)
			g_string_append_printf(s, "\\x%02x", ch);
		else
			g_string_append_c(s, (char)ch);
	}
	if (e < len && data[e] != '\n' && data[e] != '\r')
		g_string_append(s, "...");
	g_string_append_c(s, '\'');
	return g_string_free(s, FALSE);
}

static gboolean fail_at(Parser *ps, gsize at, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static gboolean fail_at(Parser *ps, gsize at, const char *fmt, ...)
{
	if (ps->error)
		return FALSE;
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	int line, col;
	pos_of(ps->data, ps->len, at, &line, &col);
	g_autofree char *near = near_text(ps->data, ps->len, at);
	g_set_error(&ps->error, LH_GRAPH_ERROR, LH_GRAPH_ERROR_PARSE, "%s:%d:%d: %s near %s",
		    ps->where, line, col, msg, near);
	return FALSE;
}

/* ---- lexing ---- */

static gboolean at_end(const Parser *ps)
{
	return ps->pos >= ps->len;
}

static char peek(const Parser *ps)
{
	return ps->pos < ps->len ? ps->data[ps->pos] : '\0';
}

static char peek_at(const Parser *ps, gsize k)
{
	return ps->pos + k < ps->len ? ps->data[ps->pos + k] : '\0';
}

/* Skips blanks, newlines and comments; an unterminated block comment is an error. */
static gboolean skip_ws(Parser *ps)
{
	while (ps->pos < ps->len) {
		char c = ps->data[ps->pos];
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
			ps->pos++;
		} else if (c == '/' && peek_at(ps, 1) == '/') {
			while (ps->pos < ps->len && ps->data[ps->pos] != '\n')
				ps->pos++;
		} else if (c == '/' && peek_at(ps, 1) == '*') {
			gsize start = ps->pos;
			ps->pos += 2;
			while (ps->pos + 1 < ps->len &&
			       !(ps->data[ps->pos] == '*' && ps->data[ps->pos + 1] == '/'))
				ps->pos++;
			if (ps->pos + 1 >= ps->len) {
				ps->pos = ps->len;
				return fail_at(ps, start, "unterminated comment");
			}
			ps->pos += 2;
		} else {
			break;
		}
	}
	return TRUE;
}

static gboolean is_ident_char(char c)
{
	return g_ascii_isalnum(c) || c == '_' || c == '.' || c == '-' || c == '$';
}

/* An identifier (a leading '%' is dropped); NULL if there is none here. */
static char *ident(Parser *ps)
{
	if (peek(ps) == '%')
		ps->pos++;
	gsize s = ps->pos;
	while (ps->pos < ps->len && is_ident_char(ps->data[ps->pos])) {
		/* "->" ends an identifier: it is the signature arrow. */
		if (ps->data[ps->pos] == '-' && peek_at(ps, 1) == '>')
			break;
		ps->pos++;
	}
	if (ps->pos == s)
		return NULL;
	return g_strndup(ps->data + s, ps->pos - s);
}

static gboolean expect(Parser *ps, char c, const char *what)
{
	if (!skip_ws(ps))
		return FALSE;
	if (peek(ps) != c)
		return fail_at(ps, ps->pos, "expected %s", what);
	ps->pos++;
	return TRUE;
}

/* Scans a string literal at pos (which is '"'), escapes included. */
static gboolean skip_string(Parser *ps)
{
	gsize start = ps->pos;
	ps->pos++;
	while (ps->pos < ps->len && ps->data[ps->pos] != '"') {
		if (ps->data[ps->pos] == '\\')
			ps->pos++;
		ps->pos++;
	}
	if (ps->pos >= ps->len) {
		ps->pos = ps->len;
		return fail_at(ps, start, "unterminated string");
	}
	ps->pos++;
	return TRUE;
}

/* Skips a balanced group starting at an opening bracket, strings and comments respected. */
static gboolean skip_balanced(Parser *ps)
{
	gsize start = ps->pos;
	GString *stack = g_string_new(NULL);
	gboolean ok = TRUE;
	while (ps->pos < ps->len) {
		char c = ps->data[ps->pos];
		if (c == '"') {
			if (!skip_string(ps)) {
				ok = FALSE;
				break;
			}
			continue;
		}
		if (c == '/' && (peek_at(ps, 1) == '*' || peek_at(ps, 1) == '/')) {
			if (!skip_ws(ps)) {
				ok = FALSE;
				break;
			}
			continue;
		}
		if (c == '(' || c == '[' || c == '{') {
			g_string_append_c(stack, c == '(' ? ')' : c == '[' ? ']' : '}');
		} else if (c == ')' || c == ']' || c == '}') {
			if (!stack->len || stack->str[stack->len - 1] != c) {
				ok = fail_at(ps, ps->pos, "unbalanced '%c'", c);
				break;
			}
			g_string_truncate(stack, stack->len - 1);
			if (!stack->len) {
				ps->pos++;
				break;
			}
		}
		ps->pos++;
	}
	if (ok && stack->len)
		ok = fail_at(ps, start, "unclosed '%c'", ps->data[start]);
	g_string_free(stack, TRUE);
	return ok;
}

/* An MLIR-style value "#dialect<...>": '<' and '>' nest ("<=" and "->" are not brackets);
 * strings and other brackets inside are skipped whole. */
static gboolean skip_angle(Parser *ps)
{
	gsize start = ps->pos;
	int depth = 0;
	while (ps->pos < ps->len) {
		char c = ps->data[ps->pos];
		if (c == '"') {
			if (!skip_string(ps))
				return FALSE;
			continue;
		}
		if (c == '(' || c == '[' || c == '{') {
			if (!skip_balanced(ps))
				return FALSE;
			continue;
		}
		if (c == '<' && peek_at(ps, 1) != '=') {
			depth++;
		} else if (c == '>' && (ps->pos == 0 || ps->data[ps->pos - 1] != '-')) {
			if (--depth == 0) {
				ps->pos++;
				return TRUE;
			}
		} else if (c == ')' || c == ']' || c == '}') {
			break;
		}
		ps->pos++;
	}
	return fail_at(ps, start, "unclosed '<'");
}

/* An attribute value: up to a ',' or a blank at nesting depth 0, or an unmatched closer. */
static char *attr_value(Parser *ps)
{
	gsize start = ps->pos;
	while (ps->pos < ps->len) {
		char c = ps->data[ps->pos];
		if (c == '"') {
			if (!skip_string(ps))
				return NULL;
		} else if (c == '(' || c == '[' || c == '{') {
			if (!skip_balanced(ps))
				return NULL;
		} else if (c == '<' && peek_at(ps, 1) != '=') {
			if (!skip_angle(ps))
				return NULL;
		} else if (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ')' ||
			   c == ']' || c == '}') {
			break;
		} else if (c == '/' && (peek_at(ps, 1) == '*' || peek_at(ps, 1) == '/')) {
			break;
		} else {
			ps->pos++;
		}
	}
	if (ps->pos == start) {
		fail_at(ps, start, "expected an attribute value");
		return NULL;
	}
	return g_strndup(ps->data + start, ps->pos - start);
}

static gboolean parse_int(Parser *ps, gint64 *out)
{
	gsize s = ps->pos;
	if (peek(ps) == '-')
		ps->pos++;
	while (g_ascii_isdigit(peek(ps)))
		ps->pos++;
	if (ps->pos == s || (ps->pos == s + 1 && ps->data[s] == '-'))
		return fail_at(ps, s, "expected a number");
	g_autofree char *t = g_strndup(ps->data + s, ps->pos - s);
	*out = g_ascii_strtoll(t, NULL, 10);
	return TRUE;
}

/* ---- shapes ---- */

/* Inside a layout's braces: "minor_to_major[:T(..)(..)E(bits)S(space)...]". */
static gboolean parse_layout(Parser *ps, Shape *s, int *elem_bits)
{
	gsize start = ps->pos;
	ps->pos++; /* '{' */
	while (ps->pos < ps->len && ps->data[ps->pos] != '}') {
		char c = ps->data[ps->pos];
		if ((c == 'S' || c == 'E') && peek_at(ps, 1) == '(' &&
		    (ps->pos == start + 1 || !g_ascii_isalnum(ps->data[ps->pos - 1]))) {
			ps->pos += 2;
			gint64 v;
			if (!parse_int(ps, &v))
				return FALSE;
			if (peek(ps) != ')')
				return fail_at(ps, ps->pos, "expected ')' in the layout");
			ps->pos++;
			if (c == 'S')
				s->host = v == HOST_SPACE;
			else if (v > 0 && v <= 1024)
				*elem_bits = (int)v;
			else
				return fail_at(ps, ps->pos, "element size E(%" G_GINT64_FORMAT ") out of range", v);
			continue;
		}
		if (c == '{' || c == '"' || c == '\n')
			return fail_at(ps, start, "unclosed layout");
		ps->pos++;
	}
	if (ps->pos >= ps->len)
		return fail_at(ps, start, "unclosed layout");
	ps->pos++;
	return TRUE;
}

static gboolean parse_shape_full(Parser *ps, Shape *s, int depth);
static gboolean parse_array_rest(Parser *ps, Shape *s, const char *type, gsize at);

static gboolean parse_tuple_shape(Parser *ps, Shape *s, int depth)
{
	gsize start = ps->pos;
	ps->pos++; /* '(' */
	s->tuple = TRUE;
	GArray *subs = g_array_new(FALSE, TRUE, sizeof(Shape));
	gboolean ok = skip_ws(ps);
	if (ok && peek(ps) == ')') {
		ps->pos++;
	} else {
		while (ok) {
			Shape e = {0};
			ok = skip_ws(ps) && parse_shape_full(ps, &e, depth + 1);
			if (!ok) {
				shape_clear(&e);
				break;
			}
			g_array_append_val(subs, e);
			ok = skip_ws(ps);
			if (!ok)
				break;
			if (peek(ps) == ',') {
				ps->pos++;
				continue;
			}
			if (peek(ps) == ')') {
				ps->pos++;
				break;
			}
			ok = fail_at(ps, ps->pos, "expected ',' or ')' in the tuple shape at offset %zu",
				     start);
		}
	}
	s->n_sub = subs->len;
	s->sub = (Shape *)g_array_free(subs, FALSE);
	for (guint i = 0; i < s->n_sub; i++)
		s->bytes += s->sub[i].bytes;
	return ok;
}

/* The rest of an array shape after its element type name. */
static gboolean parse_array_rest(Parser *ps, Shape *s, const char *type, gsize at)
{
	int bits = type_bits(type);
	gboolean token = strcmp(type, "token") == 0 || strcmp(type, "opaque") == 0;
	if (!bits && !token)
		return fail_at(ps, at, "unknown element type '%s'", type);
	if (peek(ps) != '[')
		return fail_at(ps, ps->pos, "expected '[' after the element type '%s'", type);
	ps->pos++;
	double elems = 1;
	for (;;) {
		if (!skip_ws(ps))
			return FALSE;
		if (peek(ps) == ']') {
			ps->pos++;
			break;
		}
		if (s->rank)
			if (!expect(ps, ',', "',' or ']' in the dimensions") || !skip_ws(ps))
				return FALSE;
		if (s->rank >= MAX_RANK)
			return fail_at(ps, ps->pos, "more than %d dimensions", MAX_RANK);
		gint64 d;
		if (peek(ps) == '<' && peek_at(ps, 1) == '=')
			ps->pos += 2; /* bounded dynamic dimension: its bound */
		if (peek(ps) == '?') {
			ps->pos++;
			d = 1;
		} else if (!parse_int(ps, &d)) {
			return FALSE;
		}
		if (d < 0)
			return fail_at(ps, ps->pos, "negative dimension");
		s->dims[s->rank++] = d;
		elems *= (double)d;
		if (elems > 1e18)
			return fail_at(ps, at, "shape of more than 1e18 elements");
	}
	/* A layout follows the ']' directly; a '{' after a blank opens a computation body. */
	if (peek(ps) == '{' && !parse_layout(ps, s, &bits))
		return FALSE;
	s->elems = token ? 0 : elems;
	s->bytes = token ? 0 : elems * bits / 8.0;
	return TRUE;
}

static gboolean parse_shape_full(Parser *ps, Shape *s, int depth)
{
	if (depth > MAX_DEPTH)
		return fail_at(ps, ps->pos, "shape nested too deeply");
	if (peek(ps) == '(')
		return parse_tuple_shape(ps, s, depth);
	gsize at = ps->pos;
	g_autofree char *t = ident(ps);
	if (!t)
		return fail_at(ps, at, "expected a shape");
	return parse_array_rest(ps, s, t, at);
}

/* ---- instructions and computations ---- */

static gboolean parse_operands(Parser *ps, Instr *in)
{
	in->operands = g_ptr_array_new_with_free_func(g_free);
	in->operand_at = g_array_new(FALSE, FALSE, sizeof(gsize));
	gsize open = ps->pos;
	if (!expect(ps, '(', "'(' after the opcode"))
		return FALSE;
	if (strcmp(in->opcode, "constant") == 0) {
		ps->pos = open;
		if (!skip_ws(ps))
			return FALSE;
		gsize s = ps->pos;
		if (!skip_balanced(ps))
			return FALSE;
		in->literal = g_strndup(ps->data + s + 1, ps->pos - s - 2);
		return TRUE;
	}
	if (strcmp(in->opcode, "parameter") == 0) {
		gint64 n;
		if (!skip_ws(ps) || !parse_int(ps, &n))
			return FALSE;
		if (n < 0 || n > 1000000)
			return fail_at(ps, ps->pos, "parameter number out of range");
		g_ptr_array_add(in->operands, g_strdup_printf("%" G_GINT64_FORMAT, n));
		return expect(ps, ')', "')' after the parameter number");
	}
	if (!skip_ws(ps))
		return FALSE;
	if (peek(ps) == ')') {
		ps->pos++;
		return TRUE;
	}
	for (;;) {
		if (!skip_ws(ps))
			return FALSE;
		gsize at = ps->pos;
		char *name = NULL;
		if (peek(ps) == '(') {
			/* An operand with a tuple shape in front of its name. */
			Shape tmp = {0};
			gboolean ok = parse_tuple_shape(ps, &tmp, 0);
			shape_clear(&tmp);
			if (!ok || !skip_ws(ps))
				return FALSE;
			at = ps->pos;
			name = ident(ps);
		} else {
			char *first = ident(ps);
			if (first && peek(ps) == '[') {
				/* "type[dims]{layout} name" */
				Shape tmp = {0};
				gboolean ok = parse_array_rest(ps, &tmp, first, at);
				shape_clear(&tmp);
				g_free(first);
				if (!ok || !skip_ws(ps))
					return FALSE;
				at = ps->pos;
				name = ident(ps);
			} else {
				name = first;
			}
		}
		if (!name)
			return fail_at(ps, at, "expected an operand name");
		g_ptr_array_add(in->operands, name);
		g_array_append_val(in->operand_at, at);
		if (!skip_ws(ps))
			return FALSE;
		if (peek(ps) == ',') {
			ps->pos++;
			continue;
		}
		if (peek(ps) == ')') {
			ps->pos++;
			return TRUE;
		}
		return fail_at(ps, ps->pos, "expected ',' or ')' after operand '%s'", name);
	}
}

/* ", key=value" pairs; stops before anything else. */
static gboolean parse_attrs(Parser *ps, GArray **attrs)
{
	for (;;) {
		gsize save = ps->pos;
		if (!skip_ws(ps))
			return FALSE;
		if (peek(ps) != ',') {
			ps->pos = save;
			return TRUE;
		}
		ps->pos++;
		if (!skip_ws(ps))
			return FALSE;
		gsize at = ps->pos;
		char *key = ident(ps);
		if (!key)
			return fail_at(ps, at, "expected an attribute name");
		if (peek(ps) != '=') {
			g_free(key);
			return fail_at(ps, ps->pos, "expected '=' after the attribute name");
		}
		ps->pos++;
		char *val = attr_value(ps);
		if (!val) {
			g_free(key);
			return FALSE;
		}
		if (!*attrs)
			*attrs = g_array_new(FALSE, FALSE, sizeof(Attr));
		Attr a = {key, val, at};
		g_array_append_val(*attrs, a);
	}
}

static gboolean parse_instr(Parser *ps, Comp *c)
{
	Instr *in = g_new0(Instr, 1);
	g_ptr_array_add(c->instrs, in);
	gsize at = ps->pos;
	char *first = ident(ps);
	if (first && strcmp(first, "ROOT") == 0) {
		g_free(first);
		in->root = TRUE;
		if (!skip_ws(ps))
			return FALSE;
		at = ps->pos;
		first = ident(ps);
	}
	if (!first)
		return fail_at(ps, at, "expected an instruction");
	in->name = first;
	in->at = at;
	if (!expect(ps, '=', "'=' after the instruction name") || !skip_ws(ps))
		return FALSE;
	/* An optional shape, then the opcode. */
	gsize sat = ps->pos;
	if (peek(ps) == '(') {
		if (!parse_tuple_shape(ps, &in->shape, 0))
			return FALSE;
		in->has_shape = TRUE;
		if (!skip_ws(ps))
			return FALSE;
		in->op_at = ps->pos;
		in->opcode = ident(ps);
	} else {
		char *w = ident(ps);
		if (w && peek(ps) == '[') {
			gboolean ok = parse_array_rest(ps, &in->shape, w, sat);
			g_free(w);
			if (!ok)
				return FALSE;
			in->has_shape = TRUE;
			if (!skip_ws(ps))
				return FALSE;
			in->op_at = ps->pos;
			in->opcode = ident(ps);
		} else {
			in->op_at = sat;
			in->opcode = w;
		}
	}
	if (!in->opcode)
		return fail_at(ps, ps->pos, "expected an opcode");
	if (!parse_operands(ps, in))
		return FALSE;
	if (!parse_attrs(ps, &in->attrs))
		return FALSE;
	if (g_hash_table_contains(c->index, in->name))
		return fail_at(ps, at, "duplicate instruction '%s' in computation '%s'", in->name,
			       c->name);
	g_hash_table_insert(c->index, in->name, GUINT_TO_POINTER(c->instrs->len));
	return TRUE;
}

/* Skips the stack-frame tables that newer dumps print after the header. */
static gboolean skip_tables(Parser *ps)
{
	static const char *const tables[] = {"FileNames", "FunctionNames", "FileLocations",
					     "StackFrames"};
	for (;;) {
		if (!skip_ws(ps))
			return FALSE;
		gboolean hit = FALSE;
		for (gsize i = 0; i < G_N_ELEMENTS(tables); i++) {
			gsize n = strlen(tables[i]);
			if (ps->len - ps->pos >= n && memcmp(ps->data + ps->pos, tables[i], n) == 0 &&
			    (ps->pos + n == ps->len || !is_ident_char(ps->data[ps->pos + n]))) {
				ps->pos += n;
				hit = TRUE;
				break;
			}
		}
		if (!hit)
			return TRUE;
		/* Rows: "ID value" where value is a string or a {...} record. */
		for (;;) {
			if (!skip_ws(ps))
				return FALSE;
			if (!g_ascii_isdigit(peek(ps)))
				break;
			gint64 id;
			if (!parse_int(ps, &id) || !skip_ws(ps))
				return FALSE;
			if (peek(ps) == '"') {
				if (!skip_string(ps))
					return FALSE;
			} else if (peek(ps) == '{') {
				if (!skip_balanced(ps))
					return FALSE;
			} else {
				return fail_at(ps, ps->pos, "expected a string or '{' in a table row");
			}
		}
	}
}

static gboolean parse_header(Parser *ps)
{
	if (!skip_ws(ps))
		return FALSE;
	gsize save = ps->pos;
	g_autofree char *kw = ident(ps);
	if (!kw || strcmp(kw, "HloModule") != 0) {
		ps->pos = save; /* a bare computation, as in some test files */
		return TRUE;
	}
	if (!skip_ws(ps))
		return FALSE;
	gsize at = ps->pos;
	ps->module_name = ident(ps);
	if (!ps->module_name)
		return fail_at(ps, at, "expected the module name");
	GArray *attrs = NULL;
	gboolean ok = parse_attrs(ps, &attrs);
	for (guint i = 0; attrs && i < attrs->len; i++) {
		Attr *a = &g_array_index(attrs, Attr, i);
		if (ok && strcmp(a->key, "is_scheduled") == 0)
			ps->scheduled = strcmp(a->value, "true") == 0;
		else if (ok && strcmp(a->key, "num_partitions") == 0)
			ps->num_partitions = g_ascii_strtoll(a->value, NULL, 10);
		else if (ok && strcmp(a->key, "replica_count") == 0)
			ps->replica_count = g_ascii_strtoll(a->value, NULL, 10);
		g_free(a->key);
		g_free(a->value);
	}
	if (attrs)
		g_array_unref(attrs);
	return ok && skip_tables(ps);
}

static gboolean parse_computation(Parser *ps)
{
	gsize at = ps->pos;
	char *name = ident(ps);
	gboolean entry = FALSE;
	if (name && strcmp(name, "ENTRY") == 0) {
		entry = TRUE;
		g_free(name);
		if (!skip_ws(ps))
			return FALSE;
		at = ps->pos;
		name = peek(ps) == '{' ? g_strdup("entry") : ident(ps);
	}
	if (!name)
		return fail_at(ps, at, "expected a computation");
	Comp *c = g_new0(Comp, 1);
	c->name = name;
	c->at = at;
	c->entry = entry;
	c->root = -1;
	c->instrs = g_ptr_array_new_with_free_func(instr_free);
	c->index = g_hash_table_new(g_str_hash, g_str_equal);
	g_ptr_array_add(ps->comps, c);
	if (g_hash_table_contains(ps->comp_index, name))
		return fail_at(ps, at, "duplicate computation '%s'", name);
	g_hash_table_insert(ps->comp_index, c->name, c);
	if (entry) {
		if (ps->entry)
			return fail_at(ps, at, "a second ENTRY computation");
		ps->entry = c;
	}
	if (!skip_ws(ps))
		return FALSE;
	if (peek(ps) == '(' && !skip_balanced(ps))
		return FALSE;
	if (!skip_ws(ps))
		return FALSE;
	if (peek(ps) == '-' && peek_at(ps, 1) == '>') {
		ps->pos += 2;
		Shape tmp = {0};
		gboolean ok = skip_ws(ps) && parse_shape_full(ps, &tmp, 0);
		shape_clear(&tmp);
		if (!ok)
			return FALSE;
	}
	if (!expect(ps, '{', "'{' to open the computation"))
		return FALSE;
	for (;;) {
		if (!skip_ws(ps))
			return FALSE;
		if (at_end(ps))
			return fail_at(ps, at, "computation '%s' is not closed with '}'", c->name);
		if (peek(ps) == '}') {
			ps->pos++;
			break;
		}
		if (!parse_instr(ps, c))
			return FALSE;
	}
	GArray *attrs = NULL;
	gboolean ok = parse_attrs(ps, &attrs); /* e.g. execution_thread="host" */
	for (guint i = 0; attrs && i < attrs->len; i++) {
		g_free(g_array_index(attrs, Attr, i).key);
		g_free(g_array_index(attrs, Attr, i).value);
	}
	if (attrs)
		g_array_unref(attrs);
	return ok;
}

/* Resolves operand names, the root, and parameter numbers; fills missing shapes. */
static gboolean resolve(Parser *ps, Comp *c)
{
	if (!c->instrs->len)
		return fail_at(ps, c->at, "computation '%s' has no instructions", c->name);
	gint max_param = -1;
	for (guint i = 0; i < c->instrs->len; i++) {
		Instr *in = c->instrs->pdata[i];
		if (in->root) {
			if (c->root >= 0)
				return fail_at(ps, in->at, "a second ROOT in computation '%s'", c->name);
			c->root = (gint)i;
		}
		if (strcmp(in->opcode, "parameter") == 0 && in->operands->len == 1) {
			gint n = atoi(in->operands->pdata[0]);
			max_param = MAX(max_param, n);
			continue;
		}
		in->ops = g_new(gint, MAX(in->operands->len, 1));
		for (guint k = 0; k < in->operands->len; k++) {
			gpointer v = g_hash_table_lookup(c->index, in->operands->pdata[k]);
			if (!v)
				return fail_at(ps, g_array_index(in->operand_at, gsize, k),
					       "unknown operand '%s' of '%s'",
					       (char *)in->operands->pdata[k], in->name);
			in->ops[k] = GPOINTER_TO_INT(v) - 1;
		}
	}
	if (c->root < 0)
		c->root = (gint)c->instrs->len - 1;
	c->n_params = max_param + 1;
	c->param_of = g_new(gint, MAX(c->n_params, 1));
	for (gint k = 0; k < c->n_params; k++)
		c->param_of[k] = -1;
	for (guint i = 0; i < c->instrs->len; i++) {
		Instr *in = c->instrs->pdata[i];
		if (strcmp(in->opcode, "parameter") == 0 && in->operands->len == 1) {
			gint n = atoi(in->operands->pdata[0]);
			if (c->param_of[n] >= 0)
				return fail_at(ps, in->at, "parameter(%d) defined twice", n);
			c->param_of[n] = (gint)i;
		}
	}
	/* Shapes left out ("i = get-tuple-element(t), index=3"): taken from the operand. Done in
	 * text order, which is how such files are written; a later operand leaves it empty. */
	for (guint i = 0; i < c->instrs->len; i++) {
		Instr *in = c->instrs->pdata[i];
		if (in->has_shape || !in->ops || !in->operands->len)
			continue;
		Instr *src = c->instrs->pdata[in->ops[0]];
		if (in->ops[0] >= (gint)i)
			continue;
		const Shape *s = &src->shape;
		if (strcmp(in->opcode, "get-tuple-element") == 0 && s->tuple) {
			const char *ix = attr_get(in, "index");
			gint64 k = ix ? g_ascii_strtoll(ix, NULL, 10) : -1;
			if (k < 0 || k >= (gint64)s->n_sub)
				continue;
			s = &s->sub[k];
		}
		shape_copy(&in->shape, s);
	}
	return TRUE;
}

static gboolean parse_module(Parser *ps)
{
	ps->comps = g_ptr_array_new_with_free_func(comp_free);
	ps->comp_index = g_hash_table_new(g_str_hash, g_str_equal);
	if (!parse_header(ps))
		return FALSE;
	for (;;) {
		if (!skip_ws(ps))
			return FALSE;
		if (at_end(ps))
			break;
		if (!parse_computation(ps))
			return FALSE;
	}
	if (!ps->comps->len)
		return fail_at(ps, ps->pos, "no computation in the module");
	if (!ps->entry) /* XLA's parser: without ENTRY, the last computation is the entry */
		ps->entry = ps->comps->pdata[ps->comps->len - 1];
	for (guint i = 0; i < ps->comps->len; i++)
		if (!resolve(ps, ps->comps->pdata[i]))
			return FALSE;
	return TRUE;
}

/* ---- costs ---- */

static Comp *called(Parser *ps, const Instr *in, const char *key)
{
	const char *v = attr_get(in, key);
	if (!v)
		return NULL;
	if (*v == '{') /* called_computations={%a, %b}: the first */
		v++;
	while (*v == ' ' || *v == '%')
		v++;
	gsize n = 0;
	while (v[n] && is_ident_char(v[n]))
		n++;
	g_autofree char *name = g_strndup(v, n);
	return g_hash_table_lookup(ps->comp_index, name);
}

static const Shape *operand_shape(const Comp *c, const Instr *in, guint k)
{
	if (!in->ops || k >= in->operands->len)
		return NULL;
	return &((Instr *)c->instrs->pdata[in->ops[k]])->shape;
}

/* Parses "{1,2}" into dims; returns the count. */
static guint int_list(const char *v, gint64 *out, guint max)
{
	guint n = 0;
	if (!v)
		return 0;
	for (const char *p = v; *p && n < max;) {
		if (g_ascii_isdigit(*p)) {
			char *end;
			out[n++] = g_ascii_strtoll(p, &end, 10);
			p = end;
		} else {
			p++;
		}
	}
	return n;
}

/* Product of the lhs contracting dimensions: the K of a dot. */
static double contracting(const Shape *lhs, const char *dims)
{
	gint64 d[MAX_RANK];
	guint n = int_list(dims, d, MAX_RANK);
	double k = 1;
	for (guint i = 0; i < n; i++)
		if (lhs && d[i] >= 0 && (guint64)d[i] < lhs->rank)
			k *= (double)lhs->dims[d[i]];
	return k;
}

/* Convolution: each output element sums over the kernel's spatial window and its input
 * features, 2 flops each; the kernel is rhs, labelled by dim_labels "lhs_rhs->out" where the
 * rhs letters are 'i' (input features), 'o' (output features) and digits (spatial). */
static double conv_flops(const Shape *out, const Shape *rhs, const char *labels)
{
	if (!out || !rhs)
		return 0;
	double per = rhs->elems;
	const char *u = labels ? strchr(labels, '_') : NULL;
	if (u) {
		u++;
		for (guint i = 0; i < rhs->rank && u[i] && u[i] != '-'; i++)
			if (u[i] == 'o')
				per = rhs->dims[i] ? rhs->elems / (double)rhs->dims[i] : 0;
	} else if (rhs->rank) {
		per = rhs->dims[rhs->rank - 1] ? rhs->elems / (double)rhs->dims[rhs->rank - 1] : 0;
	}
	return 2 * out->elems * per;
}

static gboolean str_has(const char *s, const char *sub)
{
	return s && strstr(s, sub) != NULL;
}

/* Ops that move data without arithmetic: 0 flops, bytes only. */
static gboolean is_data_movement(const char *op)
{
	static const char *const ops[] = {
		"broadcast", "reshape", "transpose", "copy", "slice", "dynamic-slice",
		"dynamic-update-slice", "concatenate", "pad", "reverse", "gather", "scatter",
		"iota", "convert", "bitcast-convert", "dynamic-reshape", "reduce-precision",
		"set-dimension-size", "get-dimension-size", "copy-start", "select", "sort",
	};
	for (gsize i = 0; i < G_N_ELEMENTS(ops); i++)
		if (strcmp(op, ops[i]) == 0)
			return TRUE;
	return FALSE;
}

/* Opcodes the importer knows; others become memory-bound kernels with a warning. */
static gboolean is_known(const char *op)
{
	static const char *const ops[] = {
		"abs", "add", "and", "atan2", "cbrt", "ceil", "clamp", "clz", "compare", "complex",
		"cos", "cosine", "divide", "erf", "exponential", "exponential-minus-one", "floor",
		"imag", "is-finite", "log", "log-plus-one", "logistic", "map", "maximum", "minimum",
		"multiply", "negate", "not", "or", "popcnt", "power", "real", "reduce",
		"reduce-window", "remainder", "round-nearest-afz", "round-nearest-even", "rsqrt",
		"select-and-scatter", "shift-left", "shift-right-arithmetic", "shift-right-logical",
		"sign", "sin", "sine", "sqrt", "subtract", "tan", "tanh", "xor", "dot", "convolution",
		"fusion", "custom-call", "rng", "rng-bit-generator", "rng-get-and-update-state",
		"triangular-solve", "cholesky", "fft", "stochastic-convert", "topk",
		"batch-norm-training", "batch-norm-inference", "batch-norm-grad", "conditional",
		"ragged-dot", "scaled-dot",
	};
	if (is_data_movement(op))
		return TRUE;
	for (gsize i = 0; i < G_N_ELEMENTS(ops); i++)
		if (strcmp(op, ops[i]) == 0)
			return TRUE;
	return FALSE;
}

static double comp_flops(Parser *ps, Comp *c, int depth);

/* Floating-point operations of one instruction, from shapes. */
static double instr_flops(Parser *ps, const Comp *c, const Instr *in, int depth)
{
	const char *op = in->opcode;
	const Shape *out = shape_largest(&in->shape);
	double oe = out ? out->elems : 0;
	if (strcmp(op, "dot") == 0)
		/* 2 * batch * M * N * K: the output has batch * M * N elements. */
		return 2 * oe * contracting(operand_shape(c, in, 0), attr_get(in, "lhs_contracting_dims"));
	if (strcmp(op, "convolution") == 0)
		return conv_flops(out, operand_shape(c, in, 1), attr_get(in, "dim_labels"));
	if (strcmp(op, "fusion") == 0) {
		Comp *f = called(ps, in, "calls");
		return f ? comp_flops(ps, f, depth + 1) : oe;
	}
	if (strcmp(op, "custom-call") == 0) {
		const char *t = attr_get(in, "custom_call_target");
		if (str_has(t, "cublas") || str_has(t, "gemm") || str_has(t, "matmul")) {
			const char *bc = attr_get(in, "backend_config");
			const char *lc = bc ? strstr(bc, "lhs_contracting_dimensions") : NULL;
			const Shape *lhs = operand_shape(c, in, 0);
			const Shape *o = shape_first_array(&in->shape);
			/* "lhs_contracting_dimensions":["2"]: the list up to its ']'. */
			const char *open = lc ? strchr(lc, '[') : NULL;
			const char *close = open ? strchr(open, ']') : NULL;
			g_autofree char *list = close ? g_strndup(open, close - open + 1) : NULL;
			double k = list ? contracting(lhs, list)
					: (lhs && lhs->rank ? (double)lhs->dims[lhs->rank - 1] : 1);
			return 2 * (o ? o->elems : 0) * k;
		}
		if (str_has(t, "cudnn$conv"))
			return conv_flops(shape_first_array(&in->shape), operand_shape(c, in, 1),
					  attr_get(in, "dim_labels"));
		if (str_has(t, "fmha") || str_has(t, "fused_attn") || str_has(t, "flash")) {
			/* Attention, q [b, s, h, d] and k [b, s_kv, h_kv, d] (BSHD): QK^T and PV are
			 * 2*b*h*s*s_kv*d flops each. The backward does 5 such products instead of 2
			 * (FlashAttention-2, Dao 2023, section 3.1.2): 2.5 times the forward. */
			const Shape *q = operand_shape(c, in, 0), *k = operand_shape(c, in, 1);
			if (!q || !k || q->rank != 4 || k->rank != 4)
				return oe;
			double f = 4.0 * q->dims[0] * q->dims[2] * q->dims[1] * k->dims[1] * q->dims[3];
			return str_has(t, "backward") || str_has(t, "bwd") ? 2.5 * f : f;
		}
		return 0; /* unknown library call: memory-bound */
	}
	if (strcmp(op, "conditional") == 0) {
		/* The costliest branch. */
		double best = 0;
		const char *v = attr_get(in, "branch_computations");
		if (v && depth < MAX_DEPTH) {
			g_auto(GStrv) parts = g_strsplit_set(v, "{}, %", -1);
			for (char **p = parts; *p; p++) {
				Comp *b = **p ? g_hash_table_lookup(ps->comp_index, *p) : NULL;
				if (b)
					best = MAX(best, comp_flops(ps, b, depth + 1));
			}
		}
		return best;
	}
	if (strcmp(op, "reduce") == 0 || strcmp(op, "reduce-window") == 0) {
		const Shape *in0 = operand_shape(c, in, 0);
		return in0 ? in0->elems : oe;
	}
	if (is_data_movement(op) || !is_known(op))
		return 0;
	return oe; /* elementwise: one per element */
}

static double comp_flops(Parser *ps, Comp *c, int depth)
{
	if (c->cost_done)
		return c->flops;
	if (c->cost_busy || depth > MAX_DEPTH)
		return 0; /* a recursive call chain; the emitter reports it */
	c->cost_busy = TRUE;
	double f = 0;
	for (guint i = 0; i < c->instrs->len; i++)
		f += instr_flops(ps, c, c->instrs->pdata[i], depth);
	c->cost_busy = FALSE;
	c->cost_done = TRUE;
	c->flops = f;
	return f;
}

/* HBM bytes of a kernel: its operands plus its output. */
static double instr_bytes(const Comp *c, const Instr *in)
{
	double b = in->shape.bytes;
	for (guint k = 0; in->ops && k < in->operands->len; k++)
		b += ((Instr *)c->instrs->pdata[in->ops[k]])->shape.bytes;
	return b;
}

/* ---- emitting the graph ---- */

/* The value of an instruction: the ops it depends on, kept per tuple element so that a
 * get-tuple-element of a loop's state depends only on what produced that element. */
typedef struct _Val Val;
struct _Val {
	gboolean tuple;
	guint n;
	guint stamp; /* last val_flatten that visited it: shared sub-values are walked once */
	union {
		guint32 *ops; /* leaf: op indices */
		Val **sub;    /* tuple */
	};
};

typedef struct {
	Parser *ps;
	LhGraph *g;
	GPtrArray *pool;      /* every Val and array allocated, freed at the end */
	GHashTable *names;    /* used op names */
	GHashTable *unknown;  /* unknown opcodes, for one warning */
	GPtrArray *warnings;
	GArray *dep_scratch;
	guint stamp;
	guint32 n_ops;
} Emit;

static Val *val_leaf(Emit *em, const guint32 *ops, guint n)
{
	Val *v = g_new0(Val, 1);
	g_ptr_array_add(em->pool, v);
	v->n = n;
	if (n) {
		v->ops = g_memdup2(ops, n * sizeof *ops);
		g_ptr_array_add(em->pool, v->ops);
	}
	return v;
}

static Val *val_tuple(Emit *em, guint n)
{
	Val *v = g_new0(Val, 1);
	g_ptr_array_add(em->pool, v);
	v->tuple = TRUE;
	v->n = n;
	v->sub = g_new0(Val *, MAX(n, 1));
	g_ptr_array_add(em->pool, v->sub);
	return v;
}

static void val_collect(Val *v, GArray *out, guint stamp, int depth)
{
	if (!v || v->stamp == stamp || depth > MAX_DEPTH * 4)
		return;
	v->stamp = stamp;
	if (!v->tuple) {
		g_array_append_vals(out, v->ops, v->n);
		return;
	}
	for (guint i = 0; i < v->n; i++)
		val_collect(v->sub[i], out, stamp, depth + 1);
}

static int cmp_u32(gconstpointer a, gconstpointer b)
{
	guint32 x = *(const guint32 *)a, y = *(const guint32 *)b;
	return (x > y) - (x < y);
}

/* A leaf holding every op of @vals (sorted, deduplicated). */
static Val *val_flatten(Emit *em, Val *const *vals, guint n)
{
	g_array_set_size(em->dep_scratch, 0);
	guint stamp = ++em->stamp;
	for (guint i = 0; i < n; i++)
		val_collect(vals[i], em->dep_scratch, stamp, 0);
	GArray *a = em->dep_scratch;
	g_array_sort(a, cmp_u32);
	guint m = 0;
	for (guint i = 0; i < a->len; i++)
		if (!m || g_array_index(a, guint32, i) != g_array_index(a, guint32, m - 1))
			g_array_index(a, guint32, m++) = g_array_index(a, guint32, i);
	return val_leaf(em, (guint32 *)a->data, m);
}

static char *unique_name(Emit *em, const char *base)
{
	char *n = g_strdup(base);
	for (guint k = 2; g_hash_table_contains(em->names, n); k++) {
		g_free(n);
		n = g_strdup_printf("%s.dup%u", base, k);
	}
	g_hash_table_add(em->names, n);
	return n;
}

static gboolean add_op(Emit *em, const Instr *in, const char *suffix, LhOpKind kind,
		       const char *opcode, Val *const *deps, guint n_deps, guint32 *out)
{
	if (em->n_ops >= MAX_OPS)
		return fail_at(em->ps, in->at, "the graph would exceed %u ops (loops unrolled)",
			       MAX_OPS);
	g_autofree char *base = g_strconcat(in->name, suffix, NULL);
	const char *name = unique_name(em, base);
	guint32 id = lh_graph_add_op(em->g, name, kind);
	em->n_ops++;
	if (opcode)
		lh_graph_set_opcode(em->g, id, opcode);
	Val *d = val_flatten(em, deps, n_deps);
	for (guint i = 0; i < d->n; i++)
		lh_graph_add_dep(em->g, id, d->ops[i]);
	*out = id;
	return TRUE;
}

typedef enum { XFER_NONE, XFER_D2H, XFER_H2D } Xfer;

/* A transfer between device and host memory, judged from where the output and the operands
 * (@opnds, @n of them; NULL entries are skipped) live. */
static Xfer host_xfer(const Shape *out, const Shape *const *opnds, guint n, double *size)
{
	gboolean out_host = out && shape_any_host(out);
	double dev_max = 0;
	gboolean any_host = FALSE;
	for (guint i = 0; i < n; i++) {
		if (!opnds[i])
			continue;
		if (shape_any_host(opnds[i]))
			any_host = TRUE;
		else
			dev_max = MAX(dev_max, opnds[i]->bytes);
	}
	if (out_host && dev_max > 0) {
		*size = dev_max; /* the update of a dynamic-update-slice, the source of a copy */
		return XFER_D2H;
	}
	if (!out_host && any_host && out) {
		*size = out->bytes; /* the slice read from host */
		return XFER_H2D;
	}
	return XFER_NONE;
}

/* The transfer a fusion or async computation @f performs, from its parameters and root. */
static Xfer comp_xfer(Comp *f, double *size)
{
	const Shape **ps = g_new0(const Shape *, MAX(f->n_params, 1));
	for (gint k = 0; k < f->n_params; k++)
		if (f->param_of[k] >= 0)
			ps[k] = &((Instr *)f->instrs->pdata[f->param_of[k]])->shape;
	Instr *root = f->instrs->pdata[f->root];
	Xfer x = host_xfer(&root->shape, ps, (guint)f->n_params, size);
	g_free(ps);
	return x;
}

static gboolean collective_kind(const char *op, LhOpKind *k)
{
	static const struct {
		const char *name;
		LhOpKind kind;
	} map[] = {
		{"all-gather", LH_OP_ALL_GATHER},
		{"all-reduce", LH_OP_ALL_REDUCE},
		{"reduce-scatter", LH_OP_REDUCE_SCATTER},
		{"all-to-all", LH_OP_ALL_TO_ALL},
		{"ragged-all-to-all", LH_OP_ALL_TO_ALL},
		{"collective-permute", LH_OP_COLLECTIVE_PERMUTE},
		{"collective-broadcast", LH_OP_ALL_GATHER},
	};
	for (gsize i = 0; i < G_N_ELEMENTS(map); i++)
		if (strcmp(op, map[i].name) == 0) {
			*k = map[i].kind;
			return TRUE;
		}
	return FALSE;
}

/* Devices in one replica group: "{{0,1},{2,3}}" -> 2, iota "[2,64]<=[128]" -> 64. */
static guint32 group_size(const Parser *ps, const Instr *in, LhOpKind kind)
{
	if (kind == LH_OP_COLLECTIVE_PERMUTE)
		return 2;
	const char *v = attr_get(in, "replica_groups");
	if (v && v[0] == '[') {
		gint64 d[MAX_RANK];
		const char *e = strstr(v, "<=");
		g_autofree char *head = g_strndup(v, e ? (gsize)(e - v) : strlen(v));
		guint n = int_list(head, d, MAX_RANK);
		if (n >= 1 && d[n - 1] > 0)
			return (guint32)MIN(d[n - 1], G_MAXUINT32);
	} else if (v && v[0] == '{' && v[1] == '{') {
		guint32 n = 1;
		for (const char *p = v + 2; *p && *p != '}'; p++)
			n += *p == ',';
		return n;
	}
	gint64 all = MAX(ps->num_partitions, 1) * MAX(ps->replica_count, 1);
	return (guint32)CLAMP(all, 1, G_MAXUINT32);
}

/* Full buffer of a collective: all-gather's output, the others' input. */
static double collective_size(const Comp *c, const Instr *in, LhOpKind kind, const Shape *out)
{
	if (kind == LH_OP_ALL_GATHER) {
		const Shape *o = shape_largest(out);
		return o ? o->bytes : 0;
	}
	double b = 0;
	for (guint k = 0; in->ops && k < in->operands->len; k++)
		b += ((Instr *)c->instrs->pdata[in->ops[k]])->shape.bytes;
	if (b == 0) {
		const Shape *o = shape_largest(out);
		b = o ? o->bytes : 0;
	}
	return b;
}

/* Costs stay finite whatever the shapes say (absurd sizes are the input's problem, a
 * non-finite number would be rejected later without a position). */
static double fin(double v)
{
	return isfinite(v) ? CLAMP(v, 0, 1e30) : 1e30;
}

static guint64 to_u64(double v)
{
	return v > 0 ? (guint64)MIN(v, 1e19) : 0;
}

static void set_out(Emit *em, guint32 id, double bytes)
{
	lh_graph_op_mut(em->g, id)->out_bytes = to_u64(bytes);
}

static gboolean emit_comp(Emit *em, Comp *c, Val *const *args, guint n_args, const char *suffix,
			  int depth, Val **result);

/* Trip count of a while loop: backend_config known_trip_count, or the counter pattern
 * "i = constant c0; cond: i < constant N (or N > i); body: i + 1". -1 if unknown. */
static gint64 trip_count(const Comp *c, const Instr *w, Comp *cond, Comp *body)
{
	const char *bc = attr_get(w, "backend_config");
	const char *k = bc ? strstr(bc, "known_trip_count") : NULL;
	if (k) {
		const char *n = strstr(k, "\"n\"");
		if (n) {
			n += 3;
			while (*n && !g_ascii_isdigit(*n) && *n != '}')
				n++;
			if (g_ascii_isdigit(*n))
				return g_ascii_strtoll(n, NULL, 10);
		}
	}
	Instr *root = cond->instrs->pdata[cond->root];
	if (strcmp(root->opcode, "compare") != 0 || !root->ops || root->operands->len != 2)
		return -1;
	const char *dir = attr_get(root, "direction");
	Instr *a = cond->instrs->pdata[root->ops[0]], *b = cond->instrs->pdata[root->ops[1]];
	if (dir && strcmp(dir, "GT") == 0) {
		Instr *t = a;
		a = b;
		b = t;
	} else if (!dir || strcmp(dir, "LT") != 0) {
		return -1;
	}
	if (strcmp(a->opcode, "get-tuple-element") != 0 || strcmp(b->opcode, "constant") != 0 ||
	    !b->literal || !a->ops)
		return -1;
	Instr *ap = cond->instrs->pdata[a->ops[0]];
	if (strcmp(ap->opcode, "parameter") != 0)
		return -1;
	const char *ix = attr_get(a, "index");
	if (!ix)
		return -1;
	gint64 idx = g_ascii_strtoll(ix, NULL, 10);
	char *end;
	gint64 limit = g_ascii_strtoll(b->literal, &end, 10);
	if (end == b->literal || *end)
		return -1;
	/* The body must add 1 to element idx of its parameter. */
	Instr *br = body->instrs->pdata[body->root];
	if (strcmp(br->opcode, "tuple") != 0 || !br->ops || idx < 0 ||
	    idx >= (gint64)br->operands->len)
		return -1;
	Instr *inc = body->instrs->pdata[br->ops[idx]];
	if (strcmp(inc->opcode, "add") != 0 || !inc->ops || inc->operands->len != 2)
		return -1;
	gboolean ok = FALSE;
	for (int s = 0; s < 2; s++) {
		Instr *x = body->instrs->pdata[inc->ops[s]], *y = body->instrs->pdata[inc->ops[1 - s]];
		if (strcmp(x->opcode, "get-tuple-element") == 0 && x->ops &&
		    strcmp(((Instr *)body->instrs->pdata[x->ops[0]])->opcode, "parameter") == 0 &&
		    attr_get(x, "index") && g_ascii_strtoll(attr_get(x, "index"), NULL, 10) == idx &&
		    strcmp(y->opcode, "constant") == 0 && y->literal && strcmp(y->literal, "1") == 0)
			ok = TRUE;
	}
	if (!ok)
		return -1;
	/* The initial value: a constant in the tuple that feeds the while. */
	if (!w->ops || !w->operands->len)
		return -1;
	Instr *init = c->instrs->pdata[w->ops[0]];
	if (strcmp(init->opcode, "tuple") != 0 || !init->ops || idx >= (gint64)init->operands->len)
		return -1;
	Instr *c0 = c->instrs->pdata[init->ops[idx]];
	if (strcmp(c0->opcode, "constant") != 0 || !c0->literal)
		return -1;
	gint64 start = g_ascii_strtoll(c0->literal, &end, 10);
	if (end == c0->literal || *end)
		return -1;
	return MAX(limit - start, 0);
}

/* Emits one instruction; sets vals[i]. */
static gboolean emit_instr(Emit *em, Comp *c, guint i, Val **vals, Val *const *args,
			   guint n_args, const char *suffix, int depth)
{
	Parser *ps = em->ps;
	Instr *in = c->instrs->pdata[i];
	const char *op = in->opcode;
	guint n = in->ops ? in->operands->len : 0;
	/* On the heap: an instruction may have any number of operands. */
	Val **opv = g_new(Val *, MAX(n, 1));
	g_ptr_array_add(em->pool, opv);
	for (guint k = 0; k < n; k++)
		opv[k] = vals[in->ops[k]];
	/* control-predecessors are deps too */
	g_autoptr(GPtrArray) deps = g_ptr_array_new();
	for (guint k = 0; k < n; k++)
		g_ptr_array_add(deps, opv[k]);
	const char *cp = attr_get(in, "control-predecessors");
	if (cp) {
		g_auto(GStrv) parts = g_strsplit_set(cp, "{}, %", -1);
		for (char **p = parts; *p; p++) {
			if (!**p)
				continue;
			gpointer v = g_hash_table_lookup(c->index, *p);
			if (!v)
				return fail_at(ps, in->at, "unknown control-predecessor '%s' of '%s'", *p,
					       in->name);
			Val *pv = vals[GPOINTER_TO_INT(v) - 1];
			if (pv)
				g_ptr_array_add(deps, pv);
		}
	}
	Val **dv = (Val **)deps->pdata;
	guint dn = deps->len;
	guint32 id;

	/* Free ops: no op of their own. */
	if (strcmp(op, "parameter") == 0) {
		gint num = atoi(in->operands->pdata[0]);
		if (depth == 0) {
			if (!add_op(em, in, suffix, LH_OP_INPUT, NULL, NULL, 0, &id))
				return FALSE;
			LhOp *o = lh_graph_op_mut(em->g, id);
			o->out_bytes = to_u64(in->shape.bytes);
			o->out_space = shape_any_host(&in->shape) ? LH_SPACE_HOST : LH_SPACE_DEVICE;
			vals[i] = val_leaf(em, &id, 1);
		} else {
			vals[i] = (guint)num < n_args && args[num] ? args[num] : val_leaf(em, NULL, 0);
		}
		return TRUE;
	}
	if (strcmp(op, "constant") == 0 || strcmp(op, "partition-id") == 0 ||
	    strcmp(op, "replica-id") == 0 || strcmp(op, "iota") == 0 ||
	    strcmp(op, "rng-get-and-update-state") == 0) {
		if (strcmp(op, "iota") == 0 && in->shape.bytes > (1 << 20))
			goto kernel; /* a large iota is a real kernel */
		vals[i] = val_flatten(em, dv, dn);
		return TRUE;
	}
	if (strcmp(op, "tuple") == 0) {
		Val *t = val_tuple(em, n);
		for (guint k = 0; k < n; k++)
			t->sub[k] = opv[k];
		vals[i] = t;
		if (dn > n) { /* control-predecessors on a tuple: fold into each element */
			for (guint k = 0; k < n; k++) {
				Val *pair[2] = {opv[k], val_flatten(em, dv + n, dn - n)};
				t->sub[k] = val_flatten(em, pair, 2);
			}
		}
		return TRUE;
	}
	if (strcmp(op, "get-tuple-element") == 0) {
		Val *v = n ? opv[0] : NULL;
		const char *ix = attr_get(in, "index");
		gint64 k = ix ? g_ascii_strtoll(ix, NULL, 10) : -1;
		if (!ix)
			return fail_at(ps, in->at, "get-tuple-element '%s' without index=", in->name);
		if (v && v->tuple && k >= 0 && k < (gint64)v->n)
			vals[i] = v->sub[k];
		else
			vals[i] = v ? v : val_leaf(em, NULL, 0);
		if (dn > n) {
			Val *pair[2] = {vals[i], val_flatten(em, dv + n, dn - n)};
			vals[i] = val_flatten(em, pair, 2);
		}
		return TRUE;
	}
	if (strcmp(op, "bitcast") == 0 || strcmp(op, "optimization-barrier") == 0 ||
	    strcmp(op, "opt-barrier") == 0 || strcmp(op, "domain") == 0 ||
	    strcmp(op, "add-dependency") == 0 || strcmp(op, "after-all") == 0 ||
	    strcmp(op, "async-update") == 0 || g_str_has_suffix(op, "-done") ||
	    strcmp(op, "get-dimension-size") == 0) {
		/* Pass-through: a done is its start's op; a bitcast is its operand. */
		if (n == 1 && dn == 1 && strcmp(op, "after-all") != 0)
			vals[i] = opv[0];
		else
			vals[i] = val_flatten(em, dv, dn);
		return TRUE;
	}
	if (strcmp(op, "custom-call") == 0) {
		const char *t = attr_get(in, "custom_call_target");
		if (t && strcmp(t, "\"AllocateBuffer\"") == 0) {
			/* A buffer that exists from the start, like a parameter. */
			if (!add_op(em, in, suffix, LH_OP_INPUT, "custom-call:AllocateBuffer", dv, 0, &id))
				return FALSE;
			LhOp *o = lh_graph_op_mut(em->g, id);
			o->out_bytes = to_u64(in->shape.bytes);
			o->out_space = shape_any_host(&in->shape) ? LH_SPACE_HOST : LH_SPACE_DEVICE;
			vals[i] = val_leaf(em, &id, 1);
			return TRUE;
		}
		gboolean to_host = t && strcmp(t, "\"MoveToHost\"") == 0;
		if (to_host || (t && strcmp(t, "\"MoveToDevice\"") == 0)) {
			LhOpKind k = to_host ? LH_OP_COPY_D2H : LH_OP_COPY_H2D;
			if (!add_op(em, in, suffix, k, to_host ? "custom-call:MoveToHost"
							    : "custom-call:MoveToDevice",
				    dv, dn, &id))
				return FALSE;
			LhOp *o = lh_graph_op_mut(em->g, id);
			o->size = to_u64(in->shape.bytes);
			o->out_bytes = o->size;
			vals[i] = val_leaf(em, &id, 1);
			return TRUE;
		}
	}
	if (strcmp(op, "while") == 0) {
		Comp *body = called(ps, in, "body"), *cond = called(ps, in, "condition");
		if (!body || !cond)
			return fail_at(ps, in->at, "while '%s' needs body= and condition= naming computations",
				       in->name);
		gint64 trips = trip_count(c, in, cond, body);
		gint64 runs = trips;
		if (trips < 0) {
			int line, col;
			pos_of(ps->data, ps->len, in->at, &line, &col);
			if (em->warnings)
				g_ptr_array_add(em->warnings,
						g_strdup_printf("%s:%d:%d: while '%s': unknown trip count, "
								"its body is imported once",
								ps->where, line, col, in->name));
			runs = 1;
		}
		/* Divide rather than multiply: a huge trip count must not wrap around. */
		if (runs < 0 ||
		    (body->instrs->len && runs > (gint64)MAX_OPS / (gint64)body->instrs->len))
			return fail_at(ps, in->at, "while '%s' runs %" G_GINT64_FORMAT
				       " times: too many ops to unroll", in->name, runs);
		Val *state = n ? opv[0] : val_leaf(em, NULL, 0);
		if (dn > n) {
			Val *pair[2] = {state, val_flatten(em, dv + n, dn - n)};
			state = val_flatten(em, pair, 2);
		}
		for (gint64 it = 0; it < runs; it++) {
			g_autofree char *sfx = g_strdup_printf("%s@%" G_GINT64_FORMAT, suffix, it);
			Val *next = NULL;
			if (!emit_comp(em, body, &state, 1, sfx, depth + 1, &next))
				return FALSE;
			state = next;
		}
		vals[i] = state;
		return TRUE;
	}
	if (strcmp(op, "call") == 0) {
		Comp *f = called(ps, in, "to_apply");
		if (!f)
			return fail_at(ps, in->at, "call '%s' needs to_apply= naming a computation", in->name);
		Val *r = NULL;
		if (!emit_comp(em, f, opv, n, suffix, depth + 1, &r))
			return FALSE;
		vals[i] = r;
		return TRUE;
	}

	/* Async pairs and collectives. */
	LhOpKind ck;
	char base[64];
	g_strlcpy(base, op, sizeof base);
	if (g_str_has_suffix(base, "-start"))
		base[strlen(base) - 6] = '\0';
	if (collective_kind(base, &ck)) {
		if (!add_op(em, in, suffix, ck, op, dv, dn, &id))
			return FALSE;
		LhOp *o = lh_graph_op_mut(em->g, id);
		o->size = to_u64(collective_size(c, in, ck, &in->shape));
		o->group = group_size(ps, in, ck);
		const Shape *os = g_str_has_suffix(op, "-start") ? shape_largest(&in->shape) : &in->shape;
		o->out_bytes = to_u64(os ? os->bytes : 0);
		vals[i] = val_leaf(em, &id, 1);
		return TRUE;
	}
	if (strcmp(op, "send") == 0 || strcmp(op, "recv") == 0) {
		gboolean send = op[0] == 's';
		if (!add_op(em, in, suffix, send ? LH_OP_SEND : LH_OP_RECV, op, dv, dn, &id))
			return FALSE;
		LhOp *o = lh_graph_op_mut(em->g, id);
		const Shape *data = shape_first_array(&in->shape);
		o->size = to_u64(data ? data->bytes : 0);
		o->group = 2;
		o->out_bytes = send ? 0 : o->size;
		vals[i] = val_leaf(em, &id, 1);
		return TRUE;
	}
	if (strcmp(op, "copy-start") == 0 || strcmp(op, "copy") == 0) {
		const Shape *dst = strcmp(op, "copy") == 0 ? &in->shape : shape_first_array(&in->shape);
		const Shape *src = operand_shape(c, in, 0);
		double size = 0;
		Xfer x = host_xfer(dst, &src, src ? 1 : 0, &size);
		if (x != XFER_NONE || strcmp(op, "copy-start") == 0) {
			LhOpKind k = x == XFER_D2H ? LH_OP_COPY_D2H
				     : x == XFER_H2D ? LH_OP_COPY_H2D : LH_OP_COPY_D2D;
			if (!add_op(em, in, suffix, k, op, dv, dn, &id))
				return FALSE;
			LhOp *o = lh_graph_op_mut(em->g, id);
			o->size = to_u64(x != XFER_NONE ? size : dst ? dst->bytes : 0);
			o->out_bytes = to_u64(dst ? dst->bytes : 0);
			vals[i] = val_leaf(em, &id, 1);
			return TRUE;
		}
		goto kernel;
	}
	if (strcmp(op, "async-start") == 0) {
		Comp *f = called(ps, in, "calls");
		if (!f)
			return fail_at(ps, in->at, "async-start '%s' needs calls= naming a computation",
				       in->name);
		Instr *root = f->instrs->pdata[f->root];
		const Shape *out = &root->shape;
		if (collective_kind(root->opcode, &ck)) {
			if (!add_op(em, in, suffix, ck, root->opcode, dv, dn, &id))
				return FALSE;
			LhOp *o = lh_graph_op_mut(em->g, id);
			o->size = to_u64(collective_size(f, root, ck, out));
			o->group = group_size(ps, root, ck);
			o->out_bytes = to_u64(out->bytes);
			vals[i] = val_leaf(em, &id, 1);
			return TRUE;
		}
		double size = 0;
		Xfer x = comp_xfer(f, &size);
		if (x == XFER_NONE && strcmp(root->opcode, "fusion") == 0) {
			Comp *ff = called(ps, root, "calls");
			if (ff)
				x = comp_xfer(ff, &size);
		}
		if (x != XFER_NONE) {
			g_autofree char *oc = g_strdup_printf("async:%s", root->opcode);
			if (!add_op(em, in, suffix, x == XFER_D2H ? LH_OP_COPY_D2H : LH_OP_COPY_H2D, oc,
				    dv, dn, &id))
				return FALSE;
			LhOp *o = lh_graph_op_mut(em->g, id);
			o->size = to_u64(size);
			o->out_bytes = to_u64(x == XFER_D2H ? size : out->bytes);
			vals[i] = val_leaf(em, &id, 1);
			return TRUE;
		}
		/* An async computation on a parallel stream: an async kernel. */
		g_autofree char *oc = g_strdup_printf("async:%s", root->opcode);
		if (!add_op(em, in, suffix, LH_OP_KERNEL, oc, dv, dn, &id))
			return FALSE;
		LhOp *o = lh_graph_op_mut(em->g, id);
		o->flops = fin(comp_flops(ps, f, 0));
		double b = out->bytes;
		for (gint k = 0; k < f->n_params; k++)
			if (f->param_of[k] >= 0)
				b += ((Instr *)f->instrs->pdata[f->param_of[k]])->shape.bytes;
		o->bytes = fin(b);
		o->async = TRUE;
		o->out_bytes = to_u64(out->bytes);
		vals[i] = val_leaf(em, &id, 1);
		return TRUE;
	}
	if (strcmp(op, "fusion") == 0) {
		Comp *f = called(ps, in, "calls");
		double size = 0;
		Xfer x = f ? comp_xfer(f, &size) : XFER_NONE;
		if (x != XFER_NONE) {
			if (!add_op(em, in, suffix, x == XFER_D2H ? LH_OP_COPY_D2H : LH_OP_COPY_H2D,
				    "fusion", dv, dn, &id))
				return FALSE;
			LhOp *o = lh_graph_op_mut(em->g, id);
			o->size = to_u64(size);
			o->out_bytes = to_u64(in->shape.bytes);
			vals[i] = val_leaf(em, &id, 1);
			return TRUE;
		}
	}
	if (strcmp(op, "dynamic-update-slice") == 0 || strcmp(op, "dynamic-slice") == 0) {
		g_autofree const Shape **os = g_new(const Shape *, MAX(n, 1));
		for (guint k = 0; k < n; k++)
			os[k] = operand_shape(c, in, k);
		double size = 0;
		Xfer x = host_xfer(&in->shape, os, n, &size);
		if (x != XFER_NONE) {
			if (!add_op(em, in, suffix, x == XFER_D2H ? LH_OP_COPY_D2H : LH_OP_COPY_H2D, op,
				    dv, dn, &id))
				return FALSE;
			LhOp *o = lh_graph_op_mut(em->g, id);
			o->size = to_u64(size);
			o->out_bytes = to_u64(in->shape.bytes);
			vals[i] = val_leaf(em, &id, 1);
			return TRUE;
		}
	}

kernel:
	if (!is_known(op) && !g_str_has_suffix(op, "-start"))
		g_hash_table_add(em->unknown, (gpointer)op);
	{
		g_autofree char *oc = NULL;
		if (strcmp(op, "fusion") == 0) {
			const char *kind = attr_get(in, "kind");
			oc = g_strdup_printf("fusion:%s", kind ? kind : "?");
		} else if (strcmp(op, "custom-call") == 0) {
			const char *t = attr_get(in, "custom_call_target");
			g_autofree char *tt = t ? g_strdup(t) : g_strdup("?");
			if (tt[0] == '"')
				memmove(tt, tt + 1, strlen(tt));
			gsize l = strlen(tt);
			if (l && tt[l - 1] == '"')
				tt[l - 1] = '\0';
			oc = g_strdup_printf("custom-call:%s", tt);
		} else {
			oc = g_strdup(op);
		}
		if (!add_op(em, in, suffix, LH_OP_KERNEL, oc, dv, dn, &id))
			return FALSE;
		LhOp *o = lh_graph_op_mut(em->g, id);
		o->flops = fin(instr_flops(ps, c, in, 0));
		o->bytes = fin(instr_bytes(c, in));
		set_out(em, id, in->shape.bytes);
		vals[i] = val_leaf(em, &id, 1);
	}
	return TRUE;
}

/* Emits computation @c with argument values @args, in a topological order that follows the
 * text where operands allow (with is_scheduled=true the text is the schedule). */
static gboolean emit_comp(Emit *em, Comp *c, Val *const *args, guint n_args, const char *suffix,
			  int depth, Val **result)
{
	if (depth > MAX_DEPTH)
		return fail_at(em->ps, c->at, "computations nested too deeply");
	if (c->busy)
		return fail_at(em->ps, c->at, "computation '%s' calls itself", c->name);
	c->busy = TRUE;
	guint n = c->instrs->len;
	Val **vals = g_new0(Val *, n);
	guint8 *state = g_new0(guint8, n); /* 0 new, 1 on the stack, 2 done */
	GArray *stack = g_array_new(FALSE, FALSE, sizeof(guint));
	gboolean ok = TRUE;
	for (guint i = 0; i < n && ok; i++) {
		if (state[i])
			continue;
		g_array_append_val(stack, i);
		state[i] = 1;
		while (stack->len && ok) {
			guint x = g_array_index(stack, guint, stack->len - 1);
			Instr *in = c->instrs->pdata[x];
			gboolean pushed = FALSE;
			for (guint k = 0; in->ops && k < in->operands->len; k++) {
				guint y = (guint)in->ops[k];
				if (state[y] == 1) {
					ok = fail_at(em->ps, in->at, "'%s' depends on itself through its operands",
						     in->name);
					break;
				}
				if (state[y] == 0) {
					state[y] = 1;
					g_array_append_val(stack, y);
					pushed = TRUE;
					break;
				}
			}
			if (!ok || pushed)
				continue;
			g_array_set_size(stack, stack->len - 1);
			ok = emit_instr(em, c, x, vals, args, n_args, suffix, depth);
			state[x] = 2;
		}
	}
	if (ok)
		*result = vals[c->root] ? vals[c->root] : val_leaf(em, NULL, 0);
	g_array_unref(stack);
	g_free(state);
	g_free(vals);
	c->busy = FALSE;
	return ok;
}

LhGraph *lh_hlo_import_data(const char *data, gsize len, const char *where, GPtrArray *warnings,
			    GError **error)
{
	g_return_val_if_fail(data != NULL || len == 0, NULL);
	if (!where)
		where = "<hlo>";
	Parser ps = {.data = data ? data : "", .len = len, .where = where};
	if (!parse_module(&ps)) {
		g_propagate_error(error, g_steal_pointer(&ps.error));
		parser_clear(&ps);
		return NULL;
	}
	Emit em = {.ps = &ps};
	em.g = lh_graph_new(ps.module_name ? ps.module_name : ps.entry->name);
	em.pool = g_ptr_array_new_with_free_func(g_free);
	em.names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	em.unknown = g_hash_table_new(g_str_hash, g_str_equal);
	em.warnings = warnings;
	em.dep_scratch = g_array_new(FALSE, FALSE, sizeof(guint32));
	Val *root = NULL;
	gboolean ok = emit_comp(&em, ps.entry, NULL, 0, "", 0, &root);
	if (ok && g_hash_table_size(em.unknown) && warnings) {
		g_autofree gpointer *keys = g_hash_table_get_keys_as_array(em.unknown, NULL);
		guint nk = g_hash_table_size(em.unknown);
		qsort(keys, nk, sizeof *keys, (int (*)(const void *, const void *))g_strcmp0);
		GString *s = g_string_new(NULL);
		g_string_append_printf(s, "%s: unknown opcodes imported as memory-bound kernels:", where);
		for (guint i = 0; i < nk; i++)
			g_string_append_printf(s, "%s %s", i ? "," : "", (char *)keys[i]);
		g_ptr_array_add(warnings, g_string_free(s, FALSE));
	}
	g_array_unref(em.dep_scratch);
	g_hash_table_unref(em.unknown);
	g_hash_table_unref(em.names);
	g_ptr_array_unref(em.pool);
	if (!ok) {
		g_propagate_error(error, g_steal_pointer(&ps.error));
		parser_clear(&ps);
		lh_graph_free(em.g);
		return NULL;
	}
	parser_clear(&ps);
	if (!lh_graph_finish(em.g, where, error)) {
		lh_graph_free(em.g);
		return NULL;
	}
	return em.g;
}

LhGraph *lh_hlo_import_file(const char *path, GPtrArray *warnings, GError **error)
{
	g_return_val_if_fail(path != NULL, NULL);
	g_autofree char *data = NULL;
	gsize len = 0;
	g_autoptr(GError) e = NULL;
	if (!g_file_get_contents(path, &data, &len, &e)) {
		g_set_error(error, LH_GRAPH_ERROR, LH_GRAPH_ERROR_IO, "%s: %s", path, e->message);
		return NULL;
	}
	return lh_hlo_import_data(data, len, path, warnings, error);
}
