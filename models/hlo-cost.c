/* lhsim — XLA HLO text import: the cost rules (flops and bytes of an instruction, from
 * shapes and attributes). */
#include "models/hlo-private.h"

#include <math.h>
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
	    "broadcast",
	    "reshape",
	    "transpose",
	    "copy",
	    "slice",
	    "dynamic-slice",
	    "dynamic-update-slice",
	    "concatenate",
	    "pad",
	    "reverse",
	    "gather",
	    "scatter",
	    "iota",
	    "convert",
	    "bitcast-convert",
	    "dynamic-reshape",
	    "reduce-precision",
	    "set-dimension-size",
	    "get-dimension-size",
	    "copy-start",
	    "select",
	    "sort",
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
	    "abs",
	    "add",
	    "and",
	    "atan2",
	    "cbrt",
	    "ceil",
	    "clamp",
	    "clz",
	    "compare",
	    "complex",
	    "cos",
	    "cosine",
	    "divide",
	    "erf",
	    "exponential",
	    "exponential-minus-one",
	    "floor",
	    "imag",
	    "is-finite",
	    "log",
	    "log-plus-one",
	    "logistic",
	    "map",
	    "maximum",
	    "minimum",
	    "multiply",
	    "negate",
	    "not",
	    "or",
	    "popcnt",
	    "power",
	    "real",
	    "reduce",
	    "reduce-window",
	    "remainder",
	    "round-nearest-afz",
	    "round-nearest-even",
	    "rsqrt",
	    "select-and-scatter",
	    "shift-left",
	    "shift-right-arithmetic",
	    "shift-right-logical",
	    "sign",
	    "sin",
	    "sine",
	    "sqrt",
	    "subtract",
	    "tan",
	    "tanh",
	    "xor",
	    "dot",
	    "convolution",
	    "fusion",
	    "custom-call",
	    "rng",
	    "rng-bit-generator",
	    "rng-get-and-update-state",
	    "triangular-solve",
	    "cholesky",
	    "fft",
	    "stochastic-convert",
	    "topk",
	    "batch-norm-training",
	    "batch-norm-inference",
	    "batch-norm-grad",
	    "conditional",
	    "ragged-dot",
	    "scaled-dot",
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
		/* 2 * batch * M * N * K: the output has batch * M * N elements; times the passes
		 * of a multi-pass algorithm (dot_bf16_bf16_f32_x3: 3). */
		return 2 * oe * hlo_dot_passes(in) *
		       contracting(hlo_operand_shape(c, in, 0),
		                   hlo_attr_get(in, "lhs_contracting_dims"));
	if (strcmp(op, "fft") == 0)
		return hlo_fft_flops(c, in);
	if (strcmp(op, "convolution") == 0)
		return conv_flops(out, hlo_operand_shape(c, in, 1), hlo_attr_get(in, "dim_labels"));
	if (strcmp(op, "fusion") == 0) {
		Comp *f = hlo_called(ps, in, "calls");
		return f ? hlo_comp_flops(ps, f, depth + 1) : oe;
	}
	if (strcmp(op, "custom-call") == 0) {
		const char *t = hlo_attr_get(in, "custom_call_target");
		if (hlo_str_has(t, "cublas") || hlo_str_has(t, "gemm") ||
		    hlo_str_has(t, "matmul")) {
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
			return conv_flops(hlo_shape_first_array(&in->shape),
			                  hlo_operand_shape(c, in, 1),
			                  hlo_attr_get(in, "dim_labels"));
		if (hlo_str_has(t, "fmha") || hlo_str_has(t, "fused_attn") ||
		    hlo_str_has(t, "flash")) {
			/* Attention, q [b, s, h, d] and k [b, s_kv, h_kv, d] (BSHD): QK^T and PV
			 * are 2*b*h*s*s_kv*d flops each. The backward does 5 such products instead
			 * of 2 (FlashAttention-2, Dao 2023, section 3.1.2): 2.5 times the forward.
			 */
			const Shape *q = hlo_operand_shape(c, in, 0),
			            *k = hlo_operand_shape(c, in, 1);
			if (!q || !k || q->rank != 4 || k->rank != 4)
				return oe;
			double f =
			    4.0 * q->dims[0] * q->dims[2] * q->dims[1] * k->dims[1] * q->dims[3];
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
		           ? operand_bytes(f, root, 1)
		           : root->shape.bytes;
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
	if (is_op(in, "fft"))
		b += hlo_fft_extra_bytes(c, in);
	return b;
}

/* ---- FFT ---- */

/* fft_type and fft_length of an fft; FALSE (with a positioned error when @ps is set) if
 * either is missing or malformed. */
static gboolean fft_attrs(Parser *ps, const Instr *in, int *type, double *len)
{
	static const char *const types[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
	const char *t = hlo_attr_get(in, "fft_type");
	const char *l = hlo_attr_get(in, "fft_length");
	*type = -1;
	for (gsize i = 0; t && i < G_N_ELEMENTS(types); i++)
		if (strcmp(t, types[i]) == 0)
			*type = (int)i;
	if (*type < 0)
		return ps && hlo_fail_at(ps, in->op_at,
		                         "fft '%s' needs fft_type=FFT, IFFT, RFFT or "
		                         "IRFFT",
		                         in->name);
	gint64 d[MAX_RANK];
	guint n = hlo_int_list(l, d, MAX_RANK);
	gboolean ok = l && n >= 1 && n <= 3;
	*len = 1;
	for (guint i = 0; ok && i < n; i++) {
		ok = d[i] > 0 && strchr(l, '-') == NULL;
		*len *= (double)d[i];
	}
	if (!ok)
		return ps && hlo_fail_at(ps, in->op_at,
		                         "fft '%s' needs fft_length={N,...} with 1 to 3 "
		                         "positive lengths",
		                         in->name);
	return TRUE;
}

/* FFT costs (docs/hlo.md, "FFT"). Flops per transform of N = prod(fft_length) points: 5 N log2 N
 * complex, 2.5 N log2 N real (the count FFTW's benchmarks use, www.fftw.org/speed/method.html:
 * "mflops = 5 N log2(N) / (time in us)", half that for real data). Transforms: the input's
 * elements / N for FFT, IFFT and RFFT (whose input is the N real points), the output's
 * elements / N for IRFFT (whose output is).
 * An inverse (IFFT, IRFFT) also gets the 1/N scaling XLA's GPU runtime applies to the output
 * after cuFFT (xla/service/gpu/runtime/fft_thunk.cc, RunFft: BLAS scal of the output for
 * kC2CInverse, kZ2ZInverse, kC2R, kZ2D): one multiply per output element, and the output read
 * and written once more. */
static gboolean fft_cost(const Comp *c, const Instr *in, double *flops, double *extra_bytes)
{
	int type;
	double n;
	const Shape *x = hlo_operand_shape(c, in, 0);
	const Shape *y = hlo_shape_first_array(&in->shape);
	if (!x || !y || !fft_attrs(NULL, in, &type, &n))
		return FALSE;
	double points = type == 3 ? y->elems : x->elems;
	double per = (type <= 1 ? 5.0 : 2.5) * n * log2(n);
	*flops = points / n * per;
	*extra_bytes = 0;
	if (type == 1 || type == 3) {
		*flops += y->elems;
		*extra_bytes = 2 * y->bytes;
	}
	return TRUE;
}

double hlo_fft_flops(const Comp *c, const Instr *in)
{
	double f = 0, b;
	return fft_cost(c, in, &f, &b) ? f : 0;
}

double hlo_fft_extra_bytes(const Comp *c, const Instr *in)
{
	double f, b = 0;
	return fft_cost(c, in, &f, &b) ? b : 0;
}

/* ---- dtype, GEMM shape, transpose ---- */

static const Attr *attr_find(const Instr *in, const char *key)
{
	for (guint i = 0; in->attrs && i < in->attrs->len; i++) {
		const Attr *a = &g_array_index(in->attrs, Attr, i);
		if (strcmp(a->key, key) == 0)
			return a;
	}
	return NULL;
}

static gsize value_at(const Attr *a)
{
	return a->at + strlen(a->key) + 1;
}

/* XLA's PrecisionConfig (xla/xla_data.proto): DEFAULT 0, HIGH 1, HIGHEST 2. */
static int precision_level(const char *s, gsize n)
{
	static const char *const names[] = {"default", "high", "highest"};
	for (int i = 2; i >= 0; i--)
		if (n == strlen(names[i]) && g_ascii_strncasecmp(s, names[i], n) == 0)
			return i;
	return -1;
}

/* The dot algorithms of xla/xla_data.proto (PrecisionConfig.Algorithm), as HLO text writes
 * them: the type the products run in and how many passes of it one dot takes (the _X3, _X6,
 * _X9 algorithms split each f32 operand into 2 or 3 bf16 or tf32 parts and sum 3, 6 or 9
 * products). */
static const struct {
	const char *name;
	LhDtype dtype;
	int passes;
} algorithms[] = {
    {"dot_any_f8_any_f8_f32", LH_DTYPE_FP8, 1},
    {"dot_any_f8_any_f8_f32_fast_accum", LH_DTYPE_FP8, 1},
    {"dot_any_f8_any_f8_any", LH_DTYPE_FP8, 1},
    {"dot_f16_f16_f16", LH_DTYPE_F16, 1},
    {"dot_f16_f16_f32", LH_DTYPE_F16, 1},
    {"dot_bf16_bf16_bf16", LH_DTYPE_BF16, 1},
    {"dot_bf16_bf16_f32", LH_DTYPE_BF16, 1},
    {"dot_bf16_bf16_f32_x3", LH_DTYPE_BF16, 3},
    {"dot_bf16_bf16_f32_x6", LH_DTYPE_BF16, 6},
    {"dot_bf16_bf16_f32_x9", LH_DTYPE_BF16, 9},
    {"dot_tf32_tf32_f32", LH_DTYPE_TF32, 1},
    {"dot_tf32_tf32_f32_x3", LH_DTYPE_TF32, 3},
    {"dot_f32_f32_f32", LH_DTYPE_F32, 1},
    {"dot_f64_f64_f64", LH_DTYPE_F64, 1},
};

/* A dot's or convolution's precision: the highest operand precision and the algorithm index
 * (-1 if unset). Malformed values are errors when @ps is set. */
static gboolean precision_of(Parser *ps, const Instr *in, int *prec, int *alg)
{
	*prec = 0;
	*alg = -1;
	const Attr *a = attr_find(in, "operand_precision");
	if (a) {
		const char *v = a->value;
		if (*v != '{')
			return ps &&
			       hlo_fail_at(ps, value_at(a), "operand_precision: expected '{'");
		for (const char *p = v + 1; *p && *p != '}';) {
			const char *e = p;
			while (*e && *e != ',' && *e != '}')
				e++;
			int l = precision_level(p, (gsize)(e - p));
			if (l < 0)
				return ps &&
				       hlo_fail_at(
				           ps, value_at(a) + (gsize)(p - v),
				           "operand_precision: expected default, high or highest");
			*prec = MAX(*prec, l);
			p = *e == ',' ? e + 1 : e;
		}
	}
	a = attr_find(in, "algorithm");
	if (a && strcmp(a->value, "unset") != 0 && strcmp(a->value, "alg_unset") != 0) {
		for (gsize i = 0; i < G_N_ELEMENTS(algorithms); i++)
			if (g_ascii_strcasecmp(a->value, algorithms[i].name) == 0)
				*alg = (int)i;
		if (*alg < 0)
			return ps &&
			       hlo_fail_at(ps, value_at(a), "unknown dot algorithm '%s'", a->value);
	}
	return TRUE;
}

/* The precision fields of a cuBLAS custom-call's backend_config JSON
 * ("operand_precision":["DEFAULT","HIGHEST"], "algorithm":"ALG_DOT_BF16_BF16_F32"); lenient,
 * as backend configs vary between XLA versions. */
static void precision_of_json(const char *bc, int *prec, int *alg)
{
	*prec = 0;
	*alg = -1;
	const char *p = bc ? strstr(bc, "\"operand_precision\"") : NULL;
	const char *e = p ? strchr(p, ']') : NULL;
	for (const char *q = p; q && q < e; q++)
		if (*q == '"' && q > p + 19) {
			const char *r = strchr(q + 1, '"');
			if (!r || r > e)
				break;
			*prec = MAX(*prec, precision_level(q + 1, (gsize)(r - q - 1)));
			q = r;
		}
	p = bc ? strstr(bc, "\"algorithm\":\"ALG_") : NULL;
	if (p) {
		p += 17;
		for (gsize i = 0; i < G_N_ELEMENTS(algorithms); i++) {
			gsize n = strlen(algorithms[i].name);
			if (g_ascii_strncasecmp(p, algorithms[i].name, n) == 0 && p[n] == '"')
				*alg = (int)i;
		}
	}
}

int hlo_dot_passes(const Instr *in)
{
	int prec, alg;
	if (!precision_of(NULL, in, &prec, &alg) || alg < 0)
		return 1;
	return algorithms[alg].passes;
}

/* The math type of a dot or convolution with operands of types @a and @b. f32 follows XLA's
 * cuBLAS rule (xla/stream_executor/gpu/gpu_blas_lt.cc, GetBlasComputationType): with the
 * algorithm unset, an f32 GEMM computes in TF32 when tsl::tensor_float_32_execution_enabled()
 * (true unless turned off: xla/tsl/platform/tensor_float_32_utils.cc) and no operand asks for
 * more than HIGH; HIGHEST gives full f32. So XLA's default for f32 dots on A100 and H100 is
 * TF32. */
static LhDtype math_dtype(const char *a, const char *b, int prec, int alg)
{
	if (alg >= 0)
		return algorithms[alg].dtype;
	const char *t = a ? a : b;
	if (a && b && strcmp(a, b) != 0) { /* mixed: the wider float decides */
		static const char *const order[] = {"f64", "c128", "f32", "c64", "bf16", "f16"};
		for (gsize i = 0; i < G_N_ELEMENTS(order); i++)
			if (strcmp(a, order[i]) == 0 || strcmp(b, order[i]) == 0) {
				t = order[i];
				break;
			}
	}
	if (!t)
		return LH_DTYPE_NONE;
	if (strcmp(t, "f64") == 0 || strcmp(t, "c128") == 0)
		return LH_DTYPE_F64;
	if (strcmp(t, "f32") == 0 || strcmp(t, "c64") == 0)
		return prec >= 2 ? LH_DTYPE_F32 : LH_DTYPE_TF32;
	if (strcmp(t, "bf16") == 0)
		return LH_DTYPE_BF16;
	if (strcmp(t, "f16") == 0)
		return LH_DTYPE_F16;
	if (g_str_has_prefix(t, "f8"))
		return LH_DTYPE_FP8;
	if (strcmp(t, "s8") == 0 || strcmp(t, "u8") == 0)
		return LH_DTYPE_INT8;
	return LH_DTYPE_NONE;
}

static gboolean in_list(const gint64 *l, guint n, gint64 d)
{
	for (guint i = 0; i < n; i++)
		if (l[i] == d)
			return TRUE;
	return FALSE;
}

/* Product of the dimensions of @s that are in (@in TRUE) or not in the two lists. */
static double dims_product(const Shape *s, const gint64 *a, guint na, const gint64 *b, guint nb,
                           gboolean in)
{
	double p = 1;
	for (guint d = 0; d < s->rank; d++) {
		gboolean listed = in_list(a, na, d) || in_list(b, nb, d);
		if (listed == in)
			p *= (double)s->dims[d];
	}
	return p;
}

static void set_gemm(HloTraits *t, double batch, double m, double n, double k)
{
	const double max = 1099511627776.0; /* 2^40, the graph's limit */
	if (batch < 1 || m < 1 || n < 1 || k < 1 || m > max || n > max || k > max ||
	    batch > G_MAXUINT32)
		return;
	t->batch = (guint32)batch;
	t->m = (guint64)m;
	t->n = (guint64)n;
	t->k = (guint64)k;
}

/* A dot's GEMM from its dimension numbers (xla/xla_data.proto DotDimensionNumbers): batch =
 * the lhs batch dimensions, k = the lhs contracting dimensions, m = the other lhs dimensions,
 * n = the other rhs dimensions. @lb..@rc are the four lists' texts. */
static void dot_gemm(HloTraits *t, const Shape *lhs, const Shape *rhs, const char *lb,
                     const char *lc, const char *rb, const char *rc)
{
	if (!lhs || !rhs || lhs->tuple || rhs->tuple)
		return;
	gint64 a[MAX_RANK], b[MAX_RANK], c[MAX_RANK], d[MAX_RANK];
	guint na = hlo_int_list(lb, a, MAX_RANK), nb = hlo_int_list(lc, b, MAX_RANK);
	guint nc = hlo_int_list(rb, c, MAX_RANK), nd = hlo_int_list(rc, d, MAX_RANK);
	set_gemm(t, dims_product(lhs, a, na, NULL, 0, TRUE), dims_product(lhs, a, na, b, nb, FALSE),
	         dims_product(rhs, c, nc, d, nd, FALSE), dims_product(lhs, b, nb, NULL, 0, TRUE));
}

/* The JSON list after "KEY": in a backend config, as text ("[\"0\"]"); NULL if none. */
static char *json_list(const char *bc, const char *key)
{
	g_autofree char *k = g_strdup_printf("\"%s\"", key);
	const char *p = bc ? strstr(bc, k) : NULL;
	const char *open = p ? strchr(p, '[') : NULL;
	const char *close = open ? strchr(open, ']') : NULL;
	return close ? g_strndup(open, (gsize)(close - open + 1)) : NULL;
}

/* A convolution as an implicit GEMM, as cuDNN and CUTLASS run forward convolutions
 * (CUTLASS, media/docs/implicit_gemm_convolution.md: GEMM_M = N*P*Q, GEMM_N = K,
 * GEMM_K = C*R*S): m = batch * output spatial positions, n = output features per group,
 * k = input features per group (HLO's kernel 'i' dimension already is) * window, and one GEMM
 * per feature group (feature_group_count). The labels are dim_labels "lhs_rhs->out". */
static void conv_gemm(HloTraits *t, const Instr *in, const Shape *out, const Shape *rhs)
{
	const char *labels = hlo_attr_get(in, "dim_labels");
	const char *u = labels ? strchr(labels, '_') : NULL;
	const char *arrow = u ? strstr(u, "->") : NULL;
	if (!out || !rhs || !arrow || (gsize)(arrow - u - 1) != rhs->rank ||
	    strlen(arrow + 2) != out->rank)
		return;
	double m = 1, n = 0, k = 1;
	for (guint i = 0; i < out->rank; i++)
		if (arrow[2 + i] != 'f')
			m *= (double)out->dims[i];
	for (guint i = 0; i < rhs->rank; i++) {
		char ch = u[1 + i];
		if (ch == 'o')
			n = (double)rhs->dims[i];
		else
			k *= (double)rhs->dims[i];
	}
	const char *fg = hlo_attr_get(in, "feature_group_count");
	gint64 g = fg ? g_ascii_strtoll(fg, NULL, 10) : 1;
	if (g > 1 && fmod(n, (double)g) == 0)
		n /= (double)g;
	else
		g = 1;
	set_gemm(t, (double)g, m, n, k);
}

/* The logical dimension that varies fastest in memory among those longer than 1; -1 if
 * none (a layout's size-1 dimensions do not change the order of the bytes). */
static gint eff_minor(const Shape *s)
{
	for (guint j = 0; j < s->rank; j++) {
		guint d = s->has_layout ? s->m2m[j] : s->rank - 1 - j;
		if (s->dims[d] > 1)
			return (gint)d;
	}
	return -1;
}

gboolean hlo_copy_moves_minor(const Shape *src, const Shape *dst)
{
	if (!src || !dst || src->tuple || dst->tuple || src->rank != dst->rank)
		return FALSE;
	gint a = eff_minor(src), b = eff_minor(dst);
	return a >= 0 && b >= 0 && a != b;
}

/* A transpose (output dimension i is operand dimension dimensions[i]) or a copy whose
 * output's fastest-varying dimension is not the operand's: its reads or its writes stride. */
static gboolean moves_minor(const Comp *c, const Instr *in)
{
	const Shape *x = hlo_operand_shape(c, in, 0), *y = &in->shape;
	if (!x || x->tuple || y->tuple || x->rank != y->rank)
		return FALSE;
	gint mx = eff_minor(x), my = eff_minor(y);
	if (mx < 0 || my < 0)
		return FALSE;
	if (strcmp(in->opcode, "copy") == 0)
		return hlo_copy_moves_minor(x, y);
	if (strcmp(in->opcode, "transpose") != 0)
		return FALSE;
	gint64 perm[MAX_RANK];
	if (hlo_int_list(hlo_attr_get(in, "dimensions"), perm, MAX_RANK) != y->rank)
		return FALSE;
	return perm[my] != mx;
}

/* Dimensions of @s longer than 1, fastest-varying first; returns their count. */
static guint physical_order(const Shape *s, gint64 *out)
{
	guint n = 0;
	for (guint j = 0; j < s->rank; j++) {
		guint d = s->has_layout ? s->m2m[j] : s->rank - 1 - j;
		if (s->dims[d] > 1)
			out[n++] = d;
	}
	return n;
}

gboolean hlo_transpose_is_bitcast(const Comp *c, const Instr *in)
{
	const Shape *x = hlo_operand_shape(c, in, 0), *y = &in->shape;
	gint64 perm[MAX_RANK], ox[MAX_RANK], oy[MAX_RANK];
	if (strcmp(in->opcode, "transpose") != 0 || !x || x->tuple || y->tuple ||
	    x->rank != y->rank || x->host != y->host ||
	    hlo_int_list(hlo_attr_get(in, "dimensions"), perm, MAX_RANK) != y->rank)
		return FALSE;
	guint nx = physical_order(x, ox), ny = physical_order(y, oy);
	if (nx != ny)
		return FALSE;
	for (guint i = 0; i < ny; i++)
		if (oy[i] < 0 || oy[i] >= (gint64)y->rank || perm[oy[i]] != ox[i])
			return FALSE;
	return TRUE;
}

/* Traits of one dot, convolution or cuBLAS/cuDNN call; FALSE on a malformed attribute. */
static gboolean gemm_traits(Parser *ps, const Comp *c, const Instr *in, gboolean check,
                            HloTraits *t)
{
	const char *op = in->opcode;
	const Shape *lhs = hlo_operand_shape(c, in, 0), *rhs = hlo_operand_shape(c, in, 1);
	const char *ta = lhs ? lhs->type : NULL, *tb = rhs ? rhs->type : NULL;
	int prec, alg;
	if (strcmp(op, "dot") == 0 || strcmp(op, "convolution") == 0) {
		if (!precision_of(check ? ps : NULL, in, &prec, &alg))
			return !check;
		t->dtype = math_dtype(ta, tb, prec, alg);
		if (op[0] == 'd')
			dot_gemm(t, lhs, rhs, hlo_attr_get(in, "lhs_batch_dims"),
			         hlo_attr_get(in, "lhs_contracting_dims"),
			         hlo_attr_get(in, "rhs_batch_dims"),
			         hlo_attr_get(in, "rhs_contracting_dims"));
		else
			conv_gemm(t, in, &in->shape, rhs);
		return TRUE;
	}
	if (strcmp(op, "custom-call") != 0)
		return TRUE;
	const char *target = hlo_attr_get(in, "custom_call_target");
	const char *bc = hlo_attr_get(in, "backend_config");
	if (hlo_str_has(target, "cublas") || hlo_str_has(target, "gemm") ||
	    hlo_str_has(target, "matmul")) {
		precision_of_json(bc, &prec, &alg);
		t->dtype = math_dtype(ta, tb, prec, alg);
		g_autofree char *lb = json_list(bc, "lhs_batch_dimensions");
		g_autofree char *lc = json_list(bc, "lhs_contracting_dimensions");
		g_autofree char *rb = json_list(bc, "rhs_batch_dimensions");
		g_autofree char *rc = json_list(bc, "rhs_contracting_dimensions");
		if (lc && rc)
			dot_gemm(t, lhs, rhs, lb, lc, rb, rc);
	} else if (hlo_str_has(target, "cudnn$conv")) {
		precision_of_json(bc, &prec, &alg);
		t->dtype = math_dtype(ta, tb, prec, alg);
		conv_gemm(t, in, hlo_shape_first_array(&in->shape), rhs);
	}
	return TRUE;
}

gboolean hlo_kernel_traits(Parser *ps, const Comp *c, const Instr *in, HloTraits *t)
{
	memset(t, 0, sizeof *t);
	const char *op = in->opcode;
	if (strcmp(op, "fft") == 0) {
		int type;
		double n;
		if (!fft_attrs(ps, in, &type, &n))
			return FALSE;
		const Shape *x = hlo_operand_shape(c, in, 0);
		t->dtype = math_dtype(x ? x->type : NULL, NULL, 2, -1);
		return TRUE;
	}
	if (strcmp(op, "transpose") == 0 || strcmp(op, "copy") == 0) {
		t->transpose = moves_minor(c, in);
		return TRUE;
	}
	if (strcmp(op, "fusion") != 0)
		return gemm_traits(ps, c, in, TRUE, t);
	/* A fusion: a transpose at its root, and the largest dot or convolution in it (a
	 * kCustom or Triton GEMM fusion, a GEMM with its epilogue). */
	Comp *f = hlo_called(ps, in, "calls");
	if (!f)
		return TRUE;
	const Instr *root = instr_at(f, skip_bitcasts(f, f->root));
	t->transpose = moves_minor(f, root);
	double best = -1;
	for (guint i = 0; i < f->instrs->len; i++) {
		const Instr *d = instr_at(f, (gint)i);
		if (strcmp(d->opcode, "dot") != 0 && strcmp(d->opcode, "convolution") != 0 &&
		    strcmp(d->opcode, "custom-call") != 0)
			continue;
		HloTraits g = {0};
		if (!gemm_traits(ps, f, d, TRUE, &g))
			return FALSE;
		double fl = hlo_instr_flops(ps, f, d, 1);
		if (g.dtype != LH_DTYPE_NONE && fl > best) {
			best = fl;
			t->dtype = g.dtype;
			t->batch = g.batch;
			t->m = g.m;
			t->n = g.n;
			t->k = g.k;
		}
	}
	return TRUE;
}
