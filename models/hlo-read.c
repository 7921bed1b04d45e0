/* lhsim — XLA HLO text import: reading the text (lexer, shapes, instructions, computations,
 * the module). See hlo-private.h for how the importer is split. */
#include "models/hlo-private.h"

#include <stdlib.h>
#include <string.h>

/* ---- shapes ---- */

void hlo_shape_clear(Shape *s)
{
	for (guint i = 0; i < s->n_sub; i++)
		hlo_shape_clear(&s->sub[i]);
	g_free(s->sub);
	memset(s, 0, sizeof *s);
}

void hlo_shape_copy(Shape *dst, const Shape *src)
{
	*dst = *src;
	dst->sub = NULL;
	if (src->n_sub) {
		dst->sub = g_new0(Shape, src->n_sub);
		for (guint i = 0; i < src->n_sub; i++)
			hlo_shape_copy(&dst->sub[i], &src->sub[i]);
	}
}

/* The largest array in a (possibly tuple) shape: a start's output, a gemm's result. */
const Shape *hlo_shape_largest(const Shape *s)
{
	if (!s->tuple)
		return s;
	const Shape *best = NULL;
	for (guint i = 0; i < s->n_sub; i++) {
		const Shape *c = hlo_shape_largest(&s->sub[i]);
		if (c && (!best || c->bytes > best->bytes))
			best = c;
	}
	return best;
}

const Shape *hlo_shape_first_array(const Shape *s)
{
	while (s && s->tuple)
		s = s->n_sub ? &s->sub[0] : NULL;
	return s;
}

gboolean hlo_shape_any_host(const Shape *s)
{
	if (!s->tuple)
		return s->host;
	for (guint i = 0; i < s->n_sub; i++)
		if (hlo_shape_any_host(&s->sub[i]))
			return TRUE;
	return FALSE;
}

/* Element size in bits; 0 for an unknown type name. */
static int type_bits(const char *t, const char **name)
{
	static const struct {
		const char *name;
		int bits;
	} types[] = {
	    {"pred", 8},       {"s1", 1},         {"s2", 2},       {"s4", 4},
	    {"s8", 8},         {"s16", 16},       {"s32", 32},     {"s64", 64},
	    {"u1", 1},         {"u2", 2},         {"u4", 4},       {"u8", 8},
	    {"u16", 16},       {"u32", 32},       {"u64", 64},     {"f16", 16},
	    {"bf16", 16},      {"f32", 32},       {"f64", 64},     {"c64", 64},
	    {"c128", 128},     {"f8e5m2", 8},     {"f8e4m3fn", 8}, {"f8e4m3b11fnuz", 8},
	    {"f8e5m2fnuz", 8}, {"f8e4m3fnuz", 8}, {"f8e4m3", 8},   {"f8e3m4", 8},
	    {"f8e8m0fnu", 8},  {"f4e2m1fn", 4},   {"tf32", 32},
	};
	for (gsize i = 0; i < G_N_ELEMENTS(types); i++)
		if (strcmp(types[i].name, t) == 0) {
			*name = types[i].name;
			return types[i].bits;
		}
	return 0;
}

static void instr_free(gpointer p)
{
	Instr *in = p;
	g_free(in->name);
	g_free(in->opcode);
	hlo_shape_clear(&in->shape);
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

void hlo_parser_clear(Parser *ps)
{
	if (ps->comps)
		g_ptr_array_unref(ps->comps);
	if (ps->comp_index)
		g_hash_table_unref(ps->comp_index);
	g_free(ps->module_name);
	g_free(ps->io_alias);
	if (ps->error)
		g_error_free(ps->error);
}

const char *hlo_attr_get(const Instr *in, const char *key)
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

void hlo_pos_of(const char *data, gsize len, gsize at, int *line, int *col)
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

gboolean hlo_fail_at(Parser *ps, gsize at, const char *fmt, ...)
{
	if (ps->error)
		return FALSE;
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	int line, col;
	hlo_pos_of(ps->data, ps->len, at, &line, &col);
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
				return hlo_fail_at(ps, start, "unterminated comment");
			}
			ps->pos += 2;
		} else {
			break;
		}
	}
	return TRUE;
}

gboolean hlo_is_ident_char(char c)
{
	return g_ascii_isalnum(c) || c == '_' || c == '.' || c == '-' || c == '$';
}

/* An identifier (a leading '%' is dropped); NULL if there is none here. */
static char *ident(Parser *ps)
{
	if (peek(ps) == '%')
		ps->pos++;
	gsize s = ps->pos;
	while (ps->pos < ps->len && hlo_is_ident_char(ps->data[ps->pos])) {
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
		return hlo_fail_at(ps, ps->pos, "expected %s", what);
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
		return hlo_fail_at(ps, start, "unterminated string");
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
				ok = hlo_fail_at(ps, ps->pos, "unbalanced '%c'", c);
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
		ok = hlo_fail_at(ps, start, "unclosed '%c'", ps->data[start]);
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
	return hlo_fail_at(ps, start, "unclosed '<'");
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
		} else if (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
		           c == ')' || c == ']' || c == '}') {
			break;
		} else if (c == '/' && (peek_at(ps, 1) == '*' || peek_at(ps, 1) == '/')) {
			break;
		} else {
			ps->pos++;
		}
	}
	if (ps->pos == start) {
		hlo_fail_at(ps, start, "expected an attribute value");
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
		return hlo_fail_at(ps, s, "expected a number");
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
	/* minor_to_major: kept when it is a permutation of the dimensions. */
	guint n = 0;
	gboolean perm = TRUE;
	guint32 seen = 0;
	while (ps->pos < ps->len &&
	       (g_ascii_isdigit(peek(ps)) || peek(ps) == ',' || peek(ps) == ' ')) {
		if (g_ascii_isdigit(peek(ps))) {
			gint64 d;
			if (!parse_int(ps, &d))
				return FALSE;
			if (d < 0 || d >= (gint64)s->rank || n >= s->rank || (seen >> d & 1))
				perm = FALSE;
			else
				s->m2m[n++] = (guint8)d, seen |= 1u << d;
		} else {
			ps->pos++;
		}
	}
	s->has_layout = perm && n == s->rank;
	while (ps->pos < ps->len && ps->data[ps->pos] != '}') {
		char c = ps->data[ps->pos];
		if ((c == 'S' || c == 'E') && peek_at(ps, 1) == '(' &&
		    (ps->pos == start + 1 || !g_ascii_isalnum(ps->data[ps->pos - 1]))) {
			ps->pos += 2;
			gint64 v;
			if (!parse_int(ps, &v))
				return FALSE;
			if (peek(ps) != ')')
				return hlo_fail_at(ps, ps->pos, "expected ')' in the layout");
			ps->pos++;
			if (c == 'S')
				s->host = v == HOST_SPACE;
			else if (v > 0 && v <= 1024)
				*elem_bits = (int)v;
			else
				return hlo_fail_at(
				    ps, ps->pos,
				    "element size E(%" G_GINT64_FORMAT ") out of range", v);
			continue;
		}
		if (c == '{' || c == '"' || c == '\n')
			return hlo_fail_at(ps, start, "unclosed layout");
		ps->pos++;
	}
	if (ps->pos >= ps->len)
		return hlo_fail_at(ps, start, "unclosed layout");
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
				hlo_shape_clear(&e);
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
			ok = hlo_fail_at(ps, ps->pos,
			                 "expected ',' or ')' in the tuple shape at offset %zu",
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
	int bits = type_bits(type, &s->type);
	gboolean token = strcmp(type, "token") == 0 || strcmp(type, "opaque") == 0;
	if (!bits && !token)
		return hlo_fail_at(ps, at, "unknown element type '%s'", type);
	if (peek(ps) != '[')
		return hlo_fail_at(ps, ps->pos, "expected '[' after the element type '%s'", type);
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
			return hlo_fail_at(ps, ps->pos, "more than %d dimensions", MAX_RANK);
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
			return hlo_fail_at(ps, ps->pos, "negative dimension");
		s->dims[s->rank++] = d;
		elems *= (double)d;
		if (elems > 1e18)
			return hlo_fail_at(ps, at, "shape of more than 1e18 elements");
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
		return hlo_fail_at(ps, ps->pos, "shape nested too deeply");
	if (peek(ps) == '(')
		return parse_tuple_shape(ps, s, depth);
	gsize at = ps->pos;
	g_autofree char *t = ident(ps);
	if (!t)
		return hlo_fail_at(ps, at, "expected a shape");
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
			return hlo_fail_at(ps, ps->pos, "parameter number out of range");
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
			hlo_shape_clear(&tmp);
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
				hlo_shape_clear(&tmp);
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
			return hlo_fail_at(ps, at, "expected an operand name");
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
		return hlo_fail_at(ps, ps->pos, "expected ',' or ')' after operand '%s'", name);
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
			return hlo_fail_at(ps, at, "expected an attribute name");
		if (peek(ps) != '=') {
			g_free(key);
			return hlo_fail_at(ps, ps->pos, "expected '=' after the attribute name");
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
		return hlo_fail_at(ps, at, "expected an instruction");
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
		return hlo_fail_at(ps, ps->pos, "expected an opcode");
	if (!parse_operands(ps, in))
		return FALSE;
	if (!parse_attrs(ps, &in->attrs))
		return FALSE;
	if (g_hash_table_contains(c->index, in->name))
		return hlo_fail_at(ps, at, "duplicate instruction '%s' in computation '%s'",
		                   in->name, c->name);
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
			if (ps->len - ps->pos >= n &&
			    memcmp(ps->data + ps->pos, tables[i], n) == 0 &&
			    (ps->pos + n == ps->len || !hlo_is_ident_char(ps->data[ps->pos + n]))) {
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
				return hlo_fail_at(ps, ps->pos,
				                   "expected a string or '{' in a table row");
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
		return hlo_fail_at(ps, at, "expected the module name");
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
		if (ok && strcmp(a->key, "input_output_alias") == 0 && !ps->io_alias) {
			ps->io_alias = g_steal_pointer(&a->value);
			ps->io_alias_at = a->at + strlen(a->key) + 1;
		}
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
		return hlo_fail_at(ps, at, "expected a computation");
	Comp *c = g_new0(Comp, 1);
	c->name = name;
	c->at = at;
	c->entry = entry;
	c->root = -1;
	c->instrs = g_ptr_array_new_with_free_func(instr_free);
	c->index = g_hash_table_new(g_str_hash, g_str_equal);
	g_ptr_array_add(ps->comps, c);
	if (g_hash_table_contains(ps->comp_index, name))
		return hlo_fail_at(ps, at, "duplicate computation '%s'", name);
	g_hash_table_insert(ps->comp_index, c->name, c);
	if (entry) {
		if (ps->entry)
			return hlo_fail_at(ps, at, "a second ENTRY computation");
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
		hlo_shape_clear(&tmp);
		if (!ok)
			return FALSE;
	}
	if (!expect(ps, '{', "'{' to open the computation"))
		return FALSE;
	for (;;) {
		if (!skip_ws(ps))
			return FALSE;
		if (at_end(ps))
			return hlo_fail_at(ps, at, "computation '%s' is not closed with '}'",
			                   c->name);
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
		return hlo_fail_at(ps, c->at, "computation '%s' has no instructions", c->name);
	gint max_param = -1;
	for (guint i = 0; i < c->instrs->len; i++) {
		Instr *in = c->instrs->pdata[i];
		if (in->root) {
			if (c->root >= 0)
				return hlo_fail_at(ps, in->at, "a second ROOT in computation '%s'",
				                   c->name);
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
				return hlo_fail_at(ps, g_array_index(in->operand_at, gsize, k),
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
				return hlo_fail_at(ps, in->at, "parameter(%d) defined twice", n);
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
			const char *ix = hlo_attr_get(in, "index");
			gint64 k = ix ? g_ascii_strtoll(ix, NULL, 10) : -1;
			if (k < 0 || k >= (gint64)s->n_sub)
				continue;
			s = &s->sub[k];
		}
		hlo_shape_copy(&in->shape, s);
	}
	return TRUE;
}

gboolean hlo_parse_module(Parser *ps)
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
		return hlo_fail_at(ps, ps->pos, "no computation in the module");
	if (!ps->entry) /* XLA's parser: without ENTRY, the last computation is the entry */
		ps->entry = ps->comps->pdata[ps->comps->len - 1];
	for (guint i = 0; i < ps->comps->len; i++)
		if (!resolve(ps, ps->comps->pdata[i]))
			return FALSE;
	return TRUE;
}

/* ---- aliasing attributes ---- */

/* "{1,2}" at v[*i]: a shape index of at most MAX_ALIAS_INDEX numbers. */
static gboolean alias_index(Parser *ps, const char *v, gsize at, gsize *i, gint64 *out, guint *n)
{
	*n = 0;
	if (v[*i] != '{')
		return hlo_fail_at(ps, at + *i, "expected '{' to open a shape index");
	(*i)++;
	for (;;) {
		while (v[*i] == ' ')
			(*i)++;
		if (v[*i] == '}') {
			(*i)++;
			return TRUE;
		}
		if (*n && v[*i] == ',') {
			(*i)++;
			while (v[*i] == ' ')
				(*i)++;
		}
		if (!g_ascii_isdigit(v[*i]))
			return hlo_fail_at(ps, at + *i,
			                   "expected a number or '}' in a shape index");
		if (*n >= MAX_ALIAS_INDEX)
			return hlo_fail_at(ps, at + *i, "shape index deeper than %d",
			                   MAX_ALIAS_INDEX);
		char *end;
		out[(*n)++] = g_ascii_strtoll(v + *i, &end, 10);
		*i = (gsize)(end - v);
	}
}

static void skip_blanks(const char *v, gsize *i)
{
	while (v[*i] == ' ' || v[*i] == '\n' || v[*i] == '\t' || v[*i] == '\r')
		(*i)++;
}

gboolean hlo_parse_aliases(Parser *ps, const char *v, gsize at, GArray *out)
{
	gsize i = 0;
	skip_blanks(v, &i);
	if (v[i] != '{')
		return hlo_fail_at(ps, at + i, "expected '{' to open the alias list");
	i++;
	for (;;) {
		skip_blanks(v, &i);
		if (v[i] == '}' && v[i + 1] == '\0')
			return TRUE;
		if (out->len) {
			if (v[i] != ',')
				return hlo_fail_at(ps, at + i,
				                   "expected ',' or '}' in the alias list");
			i++;
			skip_blanks(v, &i);
		}
		HloAlias a = {0};
		a.at = at + i;
		if (!alias_index(ps, v, at, &i, a.out, &a.n_out))
			return FALSE;
		skip_blanks(v, &i);
		if (v[i] != ':')
			return hlo_fail_at(ps, at + i, "expected ':' after the output index");
		i++;
		skip_blanks(v, &i);
		if (v[i] != '(')
			return hlo_fail_at(ps, at + i, "expected '(' before the operand number");
		i++;
		skip_blanks(v, &i);
		if (!g_ascii_isdigit(v[i]))
			return hlo_fail_at(ps, at + i, "expected an operand number");
		char *end;
		a.operand = g_ascii_strtoll(v + i, &end, 10);
		if (a.operand > 1000000)
			return hlo_fail_at(ps, at + i, "operand number out of range");
		i = (gsize)(end - v);
		skip_blanks(v, &i);
		if (v[i] != ',')
			return hlo_fail_at(ps, at + i, "expected ',' after the operand number");
		i++;
		skip_blanks(v, &i);
		if (!alias_index(ps, v, at, &i, a.index, &a.n_index))
			return FALSE;
		skip_blanks(v, &i);
		if (v[i] == ',') { /* input_output_alias: may-alias or must-alias */
			i++;
			skip_blanks(v, &i);
			gsize k = i;
			while (g_ascii_isalpha(v[i]) || v[i] == '-')
				i++;
			if ((i - k != 9 || strncmp(v + k, "may-alias", 9) != 0) &&
			    (i - k != 10 || strncmp(v + k, "must-alias", 10) != 0))
				return hlo_fail_at(ps, at + k, "expected may-alias or must-alias");
			skip_blanks(v, &i);
		}
		if (v[i] != ')')
			return hlo_fail_at(ps, at + i, "expected ')' to close the alias");
		i++;
		g_array_append_val(out, a);
	}
}
