/* lhsim — XLA HLO text import: the cost rules (flops and bytes of an instruction, from
 * shapes and attributes). */
#include "models/hlo-private.h"

#include <stdlib.h>
#include <string.h>

Comp *hlo_called(Parser *ps, const Instr *in, const char *key)
{
	const char *v = hlo_attr_get(in, key);
	if (!v)
		return NULL;
	if (*v == '{') /* called_computations={%a, %b}: the first */
		v++;
	while (*v == ' ' || *v == '%')
		v++;
	gsize n = 0;
	while (v[n] && hlo_is_ident_char(v[n]))
		n++;
	g_autofree char *name = g_strndup(v, n);
	return g_hash_table_lookup(ps->comp_index, name);
}

const Shape *hlo_operand_shape(const Comp *c, const Instr *in, guint k)
{
	if (!in->ops || k >= in->operands->len)
		return NULL;
	return &((Instr *)c->instrs->pdata[in->ops[k]])->shape;
}

/* Parses "{1,2}" into dims; returns the count. */
guint hlo_int_list(const char *v, gint64 *out, guint max)
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
	guint n = hlo_int_list(dims, d, MAX_RANK);
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

gboolean hlo_str_has(const char *s, const char *sub)
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
gboolean hlo_is_known(const char *op)
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

/* Floating-point operations of one instruction, from shapes. */
double hlo_instr_flops(Parser *ps, const Comp *c, const Instr *in, int depth)
{
	const char *op = in->opcode;
	const Shape *out = hlo_shape_largest(&in->shape);
	double oe = out ? out->elems : 0;
	if (strcmp(op, "dot") == 0)
		/* 2 * batch * M * N * K: the output has batch * M * N elements. */
		return 2 * oe * contracting(hlo_operand_shape(c, in, 0), hlo_attr_get(in, "lhs_contracting_dims"));
	if (strcmp(op, "convolution") == 0)
		return conv_flops(out, hlo_operand_shape(c, in, 1), hlo_attr_get(in, "dim_labels"));
	if (strcmp(op, "fusion") == 0) {
		Comp *f = hlo_called(ps, in, "calls");
		return f ? hlo_comp_flops(ps, f, depth + 1) : oe;
	}
	if (strcmp(op, "custom-call") == 0) {
		const char *t = hlo_attr_get(in, "custom_call_target");
		if (hlo_str_has(t, "cublas") || hlo_str_has(t, "gemm") || hlo_str_has(t, "matmul")) {
			const char *bc = hlo_attr_get(in, "backend_config");
			const char *lc = bc ? strstr(bc, "lhs_contracting_dimensions") : NULL;
			const Shape *lhs = hlo_operand_shape(c, in, 0);
			const Shape *o = hlo_shape_first_array(&in->shape);
			/* "lhs_contracting_dimensions":["2"]: the list up to its ']'. */
			const char *open = lc ? strchr(lc, '[') : NULL;
			const char *close = open ? strchr(open, ']') : NULL;
			g_autofree char *list = close ? g_strndup(open, close - open + 1) : NULL;
			double k = list ? contracting(lhs, list)
					: (lhs && lhs->rank ? (double)lhs->dims[lhs->rank - 1] : 1);
			return 2 * (o ? o->elems : 0) * k;
		}
		if (hlo_str_has(t, "cudnn$conv"))
			return conv_flops(hlo_shape_first_array(&in->shape), hlo_operand_shape(c, in, 1),
					  hlo_attr_get(in, "dim_labels"));
		if (hlo_str_has(t, "fmha") || hlo_str_has(t, "fused_attn") || hlo_str_has(t, "flash")) {
			/* Attention, q [b, s, h, d] and k [b, s_kv, h_kv, d] (BSHD): QK^T and PV are
			 * 2*b*h*s*s_kv*d flops each. The backward does 5 such products instead of 2
			 * (FlashAttention-2, Dao 2023, section 3.1.2): 2.5 times the forward. */
			const Shape *q = hlo_operand_shape(c, in, 0), *k = hlo_operand_shape(c, in, 1);
			if (!q || !k || q->rank != 4 || k->rank != 4)
				return oe;
			double f = 4.0 * q->dims[0] * q->dims[2] * q->dims[1] * k->dims[1] * q->dims[3];
			return hlo_str_has(t, "backward") || hlo_str_has(t, "bwd") ? 2.5 * f : f;
		}
		return 0; /* unknown library call: memory-bound */
	}
	if (strcmp(op, "conditional") == 0) {
		/* The costliest branch. */
		double best = 0;
		const char *v = hlo_attr_get(in, "branch_computations");
		if (v && depth < MAX_DEPTH) {
			g_auto(GStrv) parts = g_strsplit_set(v, "{}, %", -1);
			for (char **p = parts; *p; p++) {
				Comp *b = **p ? g_hash_table_lookup(ps->comp_index, *p) : NULL;
				if (b)
					best = MAX(best, hlo_comp_flops(ps, b, depth + 1));
			}
		}
		return best;
	}
	if (strcmp(op, "reduce") == 0 || strcmp(op, "reduce-window") == 0) {
		const Shape *in0 = hlo_operand_shape(c, in, 0);
		return in0 ? in0->elems : oe;
	}
	if (is_data_movement(op) || !hlo_is_known(op))
		return 0;
	return oe; /* elementwise: one per element */
}

double hlo_comp_flops(Parser *ps, Comp *c, int depth)
{
	if (c->cost_done)
		return c->flops;
	if (c->cost_busy || depth > MAX_DEPTH)
		return 0; /* a recursive call chain; the emitter reports it */
	c->cost_busy = TRUE;
	double f = 0;
	for (guint i = 0; i < c->instrs->len; i++)
		f += hlo_instr_flops(ps, c, c->instrs->pdata[i], depth);
	c->cost_busy = FALSE;
	c->cost_done = TRUE;
	c->flops = f;
	return f;
}

/* HBM bytes of a kernel: its operands plus its output. */
static const Instr *instr_at(const Comp *c, gint i)
{
	return c->instrs->pdata[i];
}

static double operand_bytes(const Comp *c, const Instr *in, guint k)
{
	return instr_at(c, in->ops[k])->shape.bytes;
}

static gboolean is_op(const Instr *in, const char *opcode)
{
	return strcmp(in->opcode, opcode) == 0;
}

/* Instruction @i of @c with the bitcasts in front of it skipped (a bitcast is free: the same
 * buffer seen with another shape). */
static gint skip_bitcasts(const Comp *c, gint i)
{
	for (int d = 0; d < MAX_DEPTH; d++) {
		const Instr *in = instr_at(c, i);
		if (!is_op(in, "bitcast") || !in->ops || in->operands->len != 1)
			break;
		i = in->ops[0];
	}
	return i;
}

gint hlo_param_number(const Comp *c, gint i)
{
	const Instr *in = instr_at(c, skip_bitcasts(c, i));
	if (!is_op(in, "parameter") || in->operands->len != 1)
		return -1;
	return atoi(in->operands->pdata[0]);
}

/* XLA's in-place dynamic-update-slice: the update is read and written, the rest of the
 * operand is neither (its buffer is the output). xla/service/hlo_cost_analysis.cc,
 * HloCostAnalysis::HandleDynamicUpdateSlice: bytes accessed = 2 * update + start indices,
 * "Operand 0 aliases with the output", operand 0 accessed 0 bytes. */
static gboolean is_dus(const Instr *in)
{
	return is_op(in, "dynamic-update-slice") && in->ops && in->operands->len >= 2;
}

gint hlo_in_place_param(const Comp *f, double *update_bytes)
{
	const Instr *root = instr_at(f, skip_bitcasts(f, f->root));
	if (!is_dus(root))
		return -1;
	if (update_bytes)
		*update_bytes = operand_bytes(f, root, 1);
	return hlo_param_number(f, root->ops[0]);
}

/* Bytes a fusion writes: each root array, or only the update of an in-place
 * dynamic-update-slice of a parameter. */
static double fusion_written(const Comp *f)
{
	const Instr *root = instr_at(f, skip_bitcasts(f, f->root));
	if (!is_op(root, "tuple") || !root->ops)
		return is_dus(root) && hlo_param_number(f, root->ops[0]) >= 0
			       ? operand_bytes(f, root, 1) : root->shape.bytes;
	double b = 0;
	for (guint k = 0; k < root->operands->len; k++) {
		const Instr *e = instr_at(f, skip_bitcasts(f, root->ops[k]));
		b += is_dus(e) && hlo_param_number(f, e->ops[0]) >= 0 ? operand_bytes(f, e, 1)
								      : e->shape.bytes;
	}
	return b;
}

/* Bytes a fusion reads of its parameter @k. As XLA's cost model counts a fused slice
 * (HloCostAnalysis::HandleSlice and HandleDynamicSlice: operand 0 accessed = the slice's
 * size), a parameter used only as the sliced operand of slices and dynamic-slices is read
 * for those slices alone, and one used only as the buffer of an in-place
 * dynamic-update-slice (HandleDynamicUpdateSlice: 0 bytes) is not read at all. Any other use
 * reads it whole. Bitcasts in between are looked through. */
static double fusion_param_read(const Comp *f, gint k)
{
	gint p = f->param_of[k];
	double size = instr_at(f, p)->shape.bytes, part = 0;
	for (guint i = 0; i < f->instrs->len; i++) {
		const Instr *u = instr_at(f, (gint)i);
		if (!u->ops || is_op(u, "bitcast") || is_op(u, "parameter"))
			continue;
		for (guint j = 0; j < u->operands->len; j++) {
			if (hlo_param_number(f, u->ops[j]) != k)
				continue;
			if (j == 0 && (is_op(u, "slice") || is_op(u, "dynamic-slice")))
				part += u->shape.bytes;
			else if (j == 0 && is_dus(u))
				continue;
			else
				return size;
		}
	}
	return MIN(part, size);
}

static double fusion_bytes(Comp *f)
{
	if (f->bytes_done)
		return f->bytes;
	double b = fusion_written(f);
	for (gint k = 0; k < f->n_params; k++)
		if (f->param_of[k] >= 0)
			b += fusion_param_read(f, k);
	f->bytes = b;
	f->bytes_done = TRUE;
	return b;
}

double hlo_instr_bytes(Parser *ps, const Comp *c, const Instr *in)
{
	guint n = in->ops ? in->operands->len : 0;
	double idx = 0; /* operands after the first: start indices of the slicing ops */
	for (guint k = 1; k < n; k++)
		idx += operand_bytes(c, in, k);
	/* xla/service/hlo_cost_analysis.cc: HandleSlice 2 * output; HandleDynamicSlice
	 * 2 * output + start indices; HandleDynamicUpdateSlice 2 * update + start indices. */
	if (is_op(in, "slice") && n >= 1)
		return 2 * in->shape.bytes;
	if (is_op(in, "dynamic-slice") && n >= 1)
		return 2 * in->shape.bytes + idx;
	if (is_dus(in)) /* idx holds the update once and the indices */
		return operand_bytes(c, in, 1) + idx;
	if (is_op(in, "fusion")) {
		Comp *f = hlo_called(ps, in, "calls");
		if (f && f->n_params == (gint)n)
			return fusion_bytes(f);
	}
	double b = in->shape.bytes;
	for (guint k = 0; k < n; k++)
		b += operand_bytes(c, in, k);
	return b;
}
