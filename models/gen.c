/* lhsim — built-in workload generators. */
#include "models/gen.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The quark's name is a string with dashes, which clang-format would space. */
/* clang-format off */
G_DEFINE_QUARK(lh-gen-error-quark, lh_gen_error)
/* clang-format on */

/* ---- options ---- */

typedef struct {
	const char *name;
	double deflt, min, max;
	const char *help;
	const char *choices; /* a word option: its values, '|'-separated; the value is the index
	                        of the one given (deflt -1: not given) */
} GenOpt;

/* The index of @word among @choices ("a|b|c"), or -1. */
static int choice_index(const char *choices, const char *word)
{
	g_auto(GStrv) c = g_strsplit(choices, "|", -1);
	for (int i = 0; c[i]; i++)
		if (!strcmp(c[i], word))
			return i;
	return -1;
}

/* Parses @kv against @spec into @val (same order as spec); bit i of *@given says whether option
 * i was given. */
static gboolean parse_opts(const char *wl, const GenOpt *spec, const char *const *kv, double *val,
                           guint64 *given, GError **error)
{
	guint n = 0;
	*given = 0;
	for (; spec[n].name; n++)
		val[n] = spec[n].deflt;
	for (const char *const *p = kv; p && *p; p++) {
		const char *eq = strchr(*p, '=');
		g_autofree char *key = eq ? g_strndup(*p, eq - *p) : g_strdup(*p);
		guint i = 0;
		while (i < n && strcmp(spec[i].name, key) != 0)
			i++;
		if (i == n) {
			GString *l = g_string_new(NULL);
			for (guint k = 0; k < n; k++)
				g_string_append_printf(l, "%s%s", k ? ", " : "", spec[k].name);
			g_set_error(error, LH_GEN_ERROR, LH_GEN_ERROR_OPTION,
			            "%s: unknown option '%s' (options: %s)", wl, key, l->str);
			g_string_free(l, TRUE);
			return FALSE;
		}
		*given |= G_GUINT64_CONSTANT(1) << i;
		if (spec[i].choices) {
			int c = eq ? choice_index(spec[i].choices, eq + 1) : -1;
			if (c < 0) {
				g_autofree char *list =
				    g_strdelimit(g_strdup(spec[i].choices), "|", ',');
				g_set_error(error, LH_GEN_ERROR, LH_GEN_ERROR_OPTION,
				            "%s: option '%s' is one of %s, got '%s'", wl, key, list,
				            eq ? eq + 1 : "");
				return FALSE;
			}
			val[i] = c;
			continue;
		}
		char *end = NULL;
		double v = eq ? g_ascii_strtod(eq + 1, &end) : NAN;
		if (!eq || end == eq + 1 || *end || !isfinite(v)) {
			g_set_error(error, LH_GEN_ERROR, LH_GEN_ERROR_OPTION,
			            "%s: option '%s' needs a number (%s=VALUE)", wl, key, key);
			return FALSE;
		}
		if (v != floor(v)) { /* every option counts something */
			g_set_error(error, LH_GEN_ERROR, LH_GEN_ERROR_OPTION,
			            "%s: option '%s' needs a whole number, got %s", wl, key,
			            eq + 1);
			return FALSE;
		}
		if (v < spec[i].min || v > spec[i].max) {
			g_set_error(error, LH_GEN_ERROR, LH_GEN_ERROR_OPTION,
			            "%s: option '%s' = %.15g is out of range [%.15g, %.15g]", wl,
			            key, v, spec[i].min, spec[i].max);
			return FALSE;
		}
		val[i] = v;
	}
	return TRUE;
}

static char *opts_help(const GenOpt *spec)
{
	GString *s = g_string_new(NULL);
	for (const GenOpt *o = spec; o->name; o++)
		if (o->choices)
			g_string_append_printf(s, "  %-14s %s (%s)\n", o->name, o->help,
			                       o->choices);
		else
			g_string_append_printf(s, "  %-14s %s (default %.15g, %.15g..%.15g)\n",
			                       o->name, o->help, o->deflt, o->min, o->max);
	return g_string_free(s, FALSE);
}

/* ---- random layered DAG ---- */

void lh_random_dag_options_init(LhRandomDagOptions *o)
{
	o->seed = 1;
	o->n_ops = 1000;
	o->width = 16;
	o->max_deps = 3;
	o->p_copy = 0.15;
	o->p_collective = 0.1;
	o->p_async = 0.1;
}

LhGraph *lh_gen_random_dag(const LhRandomDagOptions *o)
{
	GRand *rng = g_rand_new_with_seed((guint32)(o->seed ^ (o->seed >> 32)));
	g_autofree char *gname =
	    g_strdup_printf("random-%" G_GUINT64_FORMAT "-%u", o->seed, o->n_ops);
	LhGraph *g = lh_graph_new(gname);
	guint32 w = MAX(o->width, 1);
	guint32 n_inputs = MIN(w, o->n_ops);
	char name[32];
	for (guint32 i = 0; i < o->n_ops; i++) {
		g_snprintf(name, sizeof name, "op%u", i);
		if (i < n_inputs) {
			guint32 id = lh_graph_add_op(g, name, LH_OP_INPUT);
			lh_graph_op_mut(g, id)->out_bytes = 1u << 20;
			continue;
		}
		double u = g_rand_double(rng);
		LhOpKind kind;
		if (u < o->p_copy)
			kind = g_rand_boolean(rng) ? LH_OP_COPY_H2D : LH_OP_COPY_D2H;
		else if (u < o->p_copy + o->p_collective)
			kind =
			    (LhOpKind)g_rand_int_range(rng, LH_OP_ALL_REDUCE, LH_OP_ALL_TO_ALL + 1);
		else
			kind = LH_OP_KERNEL;
		guint32 id = lh_graph_add_op(g, name, kind);
		LhOp *op = lh_graph_op_mut(g, id);
		/* Sizes spread over two decades so that work is uneven, as in real graphs. */
		double scale = pow(10.0, g_rand_double_range(rng, 0, 2));
		if (kind == LH_OP_KERNEL) {
			op->flops = 2e9 * scale;
			op->bytes = 4e6 * scale * g_rand_double_range(rng, 0.2, 5);
			op->sm =
			    g_rand_double(rng) < 0.3 ? 0.25 * g_rand_int_range(rng, 1, 4) : 1.0;
			op->async = g_rand_double(rng) < o->p_async;
			op->out_bytes = (guint64)(1e6 * scale);
		} else if (kind == LH_OP_COPY_H2D || kind == LH_OP_COPY_D2H) {
			op->size = (guint64)(1e6 * scale);
			op->out_bytes = op->size;
		} else {
			op->size = (guint64)(4e6 * scale);
			op->group = 8;
			op->out_bytes = op->size;
		}
		/* Deps from the previous two layers. */
		guint32 layer = i / w;
		guint32 lo = layer >= 2 ? (layer - 2) * w : 0, hi = layer * w;
		hi = MIN(hi, i);
		if (hi <= lo)
			continue;
		guint32 nd = (guint32)g_rand_int_range(rng, 1, (gint32)MAX(o->max_deps, 1) + 1);
		for (guint32 k = 0; k < nd; k++)
			lh_graph_add_dep(g, id,
			                 (guint32)g_rand_int_range(rng, (gint32)lo, (gint32)hi));
	}
	g_rand_free(rng);
	GError *e = NULL;
	if (!lh_graph_finish(g, NULL, &e))
		g_error("random DAG generator made a bad graph: %s", e->message); /* a bug */
	return g;
}

static const GenOpt random_opts[] = {
    {"ops", 1000, 2, 1e7, "total ops, inputs included", NULL},
    {"width", 16, 1, 1e6, "ops per layer", NULL},
    {"seed", 1, 0, 1e15, "random seed", NULL},
    {"max-deps", 3, 1, 64, "deps per op, drawn from 1..max-deps", NULL},
    {NULL, 0, 0, 0, NULL, NULL},
};

static LhGraph *gen_random(const double *v)
{
	LhRandomDagOptions o;
	lh_random_dag_options_init(&o);
	o.n_ops = (guint32)v[0];
	o.width = (guint32)v[1];
	o.seed = (guint64)v[2];
	o.max_deps = (guint32)v[3];
	return lh_gen_random_dag(&o);
}

/* ---- shared helpers for the model generators ---- */

#define BF16 2.0 /* bytes per bf16 element */

typedef struct {
	LhGraph *g;
	char name[128];
} Gen;

static const char *nm(Gen *b, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static const char *nm(Gen *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_vsnprintf(b->name, sizeof b->name, fmt, ap);
	va_end(ap);
	return b->name;
}

static guint32 input(Gen *b, const char *name, double bytes)
{
	guint32 i = lh_graph_add_op(b->g, name, LH_OP_INPUT);
	lh_graph_op_mut(b->g, i)->out_bytes = (guint64)bytes;
	return i;
}

static guint32 kernel(Gen *b, const char *name, double flops, double bytes, double out_bytes,
                      gboolean async)
{
	guint32 i = lh_graph_add_op(b->g, name, LH_OP_KERNEL);
	LhOp *op = lh_graph_op_mut(b->g, i);
	op->flops = flops;
	op->bytes = bytes;
	op->out_bytes = (guint64)out_bytes;
	op->async = async;
	return i;
}

static guint32 xfer(Gen *b, const char *name, LhOpKind k, double size, guint32 group)
{
	guint32 i = lh_graph_add_op(b->g, name, k);
	LhOp *op = lh_graph_op_mut(b->g, i);
	op->size = (guint64)size;
	op->group = MAX(group, 1);
	op->out_bytes = k == LH_OP_SEND ? 0 : (guint64)size;
	return i;
}

/* Places op @i on device @d; returns @i. */
static guint32 on(Gen *b, guint32 i, guint32 d)
{
	lh_graph_op_mut(b->g, i)->device = d;
	return i;
}

static void dep(Gen *b, guint32 op, guint32 d)
{
	lh_graph_add_dep(b->g, op, d);
}

static LhGraph *finish(Gen *b, const char *what)
{
	GError *e = NULL;
	if (!lh_graph_finish(b->g, NULL, &e))
		g_error("%s generator made a bad graph: %s", what, e->message); /* a bug */
	return b->g;
}

/* ---- several devices ---- */

/* The SPMD group of @n devices that each run @one (a finished graph without placement), as one
 * placed graph (docs/graph-format.md, "Several devices"): device K holds a copy of every op,
 * named "d<K>.<name>", with its deps among the copies of K. A collective of group G becomes
 * one rendezvous per block of G consecutive devices (k*G .. k*G + G - 1, as the default members
 * 0 .. G-1 of a graph without placement are the first such block), key "<name>.g<k>", so the
 * engine starts it when its last member gets there. Frees @one. */
static LhGraph *spmd_group(LhGraph *one, guint32 n, const char *wl, GError **error)
{
	guint32 no = lh_graph_n_ops(one);
	for (guint32 i = 0; i < no; i++) {
		const LhOp *op = lh_graph_op(one, i);
		if (lh_op_kind_is_collective(op->kind) && n % op->group) {
			g_set_error(error, LH_GEN_ERROR, LH_GEN_ERROR_OPTION,
			            "%s: devices=%u is not a multiple of the group of collective "
			            "'%s' (%u devices): every group is a block of devices",
			            wl, n, op->name, op->group);
			lh_graph_free(one);
			return NULL;
		}
	}
	LhGraph *g = lh_graph_new(lh_graph_name(one));
	lh_graph_set_placed(g, TRUE);
	lh_graph_set_devices(g, n);
	char name[160];
	for (guint32 d = 0; d < n; d++)
		for (guint32 i = 0; i < no; i++) {
			const LhOp *op = lh_graph_op(one, i);
			g_snprintf(name, sizeof name, "d%u.%s", d, op->name);
			guint32 sync = 0;
			if (lh_op_kind_is_collective(op->kind)) {
				g_autofree char *key =
				    g_strdup_printf("%s.g%u", op->name, d / op->group);
				sync = 1 + lh_graph_sync_add(g, key);
			}
			guint32 id = lh_graph_add_op_copy(
			    g, one, i, name, op->alias == LH_NO_OP ? LH_NO_OP : d * no + op->alias);
			LhOp *o = lh_graph_op_mut(g, id);
			o->device = d;
			o->sync = sync;
			guint32 nd;
			const guint32 *deps = lh_graph_deps(one, i, &nd);
			for (guint32 k = 0; k < nd; k++)
				lh_graph_add_dep(g, id, d * no + deps[k]);
		}
	lh_graph_free(one);
	Gen b = {g, ""};
	return finish(&b, wl);
}

/* The help of option `devices` of a one-GPU generator, whose graph spmd_group can repeat
 * (lh_gen_workload does it when the option is above 0); @groups: the collective groups N must
 * be a multiple of. */
#define DEVICES_HELP(groups)                                                                       \
	"0: one GPU of the group; N: all N GPUs of the SPMD group as a graph placed on N devices " \
	"(a multiple of " groups ")"

/* ---- transformer: a dense decoder stack with FSDP ---- */

/* Per layer and this GPU's T = batch * seq tokens, with hidden H and 4H MLP: the attention
 * projections are 2*T*H*4H flops (q, k, v, o), causal attention 2*batch*seq^2*H (QK^T and PV,
 * each 2*b*s^2*H, halved by the causal mask), the MLP 2*T*H*8H. The backward is twice the
 * forward for matmuls (activation and weight gradients) and 2.5 times for attention
 * (FlashAttention-2, Dao 2023). FSDP: the layer's 12*H^2 bf16 weights are all-gathered over
 * the group before the forward and again before the backward; their gradients are
 * reduce-scattered after the backward. */
static const GenOpt transformer_opts[] = {
    {"layers", 4, 1, 1024, "transformer layers", NULL},
    {"hidden", 4096, 64, 65536, "hidden size", NULL},
    {"seq", 4096, 16, 1048576, "sequence length", NULL},
    {"batch", 1, 1, 1024, "micro-batch per GPU", NULL},
    {"heads", 32, 1, 1024, "attention heads (sizes the attention kernels' outputs)", NULL},
    {"fsdp", 8, 1, 1024, "FSDP group size", NULL},
    {"devices", 0, 0, 1024, DEVICES_HELP("fsdp"), NULL},
    {NULL, 0, 0, 0, NULL, NULL},
};

static LhGraph *gen_transformer(const double *v)
{
	guint32 L = (guint32)v[0], G = (guint32)v[5];
	double H = v[1], S = v[2], B = v[3], nh = v[4];
	double T = B * S, act = T * H * BF16, w = 12 * H * H * BF16;
	Gen b = {lh_graph_new("transformer"), ""};
	guint32 x = input(&b, "tokens", act);
	guint32 *wsh = g_new(guint32, L), *saved_in = g_new(guint32, L),
	        *saved_attn = g_new(guint32, L);
	double f_qkv = 2 * T * H * 3 * H, f_attn = 2 * B * S * S * H, f_o = 2 * T * H * H,
	       f_mlp = 2 * T * H * 8 * H;
	for (guint32 l = 0; l < L; l++) {
		wsh[l] = input(&b, nm(&b, "l%u.w", l), w / G);
		guint32 ag = xfer(&b, nm(&b, "l%u.fwd.ag", l), LH_OP_ALL_GATHER, w, G);
		dep(&b, ag, wsh[l]);
		guint32 qkv = kernel(&b, nm(&b, "l%u.fwd.qkv", l), f_qkv,
		                     act + 3 * H * H * BF16 + 3 * act, 3 * act, FALSE);
		dep(&b, qkv, x);
		dep(&b, qkv, ag);
		guint32 at =
		    kernel(&b, nm(&b, "l%u.fwd.attn", l), f_attn, 4 * act + T * nh * 4, act, FALSE);
		dep(&b, at, qkv);
		guint32 o =
		    kernel(&b, nm(&b, "l%u.fwd.o", l), f_o, 3 * act + H * H * BF16, act, FALSE);
		dep(&b, o, at);
		dep(&b, o, ag);
		dep(&b, o, x);
		guint32 mlp = kernel(&b, nm(&b, "l%u.fwd.mlp", l), f_mlp,
		                     2 * act + 8 * H * H * BF16 + 8 * act, act, FALSE);
		dep(&b, mlp, o);
		dep(&b, mlp, ag);
		saved_in[l] = x;
		saved_attn[l] = at;
		x = mlp;
	}
	guint32 grad = kernel(&b, "loss", 10 * T * H, 2 * act, act, FALSE);
	dep(&b, grad, x);
	for (guint32 l = L; l-- > 0;) {
		guint32 ag = xfer(&b, nm(&b, "l%u.bwd.ag", l), LH_OP_ALL_GATHER, w, G);
		dep(&b, ag, wsh[l]);
		guint32 mlp = kernel(&b, nm(&b, "l%u.bwd.mlp", l), 2 * f_mlp,
		                     4 * act + 16 * H * H * BF16 + 16 * act, act, FALSE);
		dep(&b, mlp, grad);
		dep(&b, mlp, ag);
		guint32 o = kernel(&b, nm(&b, "l%u.bwd.o", l), 2 * f_o, 4 * act + 2 * H * H * BF16,
		                   act, FALSE);
		dep(&b, o, mlp);
		guint32 at =
		    kernel(&b, nm(&b, "l%u.bwd.attn", l), 2.5 * f_attn, 8 * act, 3 * act, FALSE);
		dep(&b, at, o);
		dep(&b, at, saved_attn[l]);
		guint32 qkv = kernel(&b, nm(&b, "l%u.bwd.qkv", l), 2 * f_qkv,
		                     5 * act + 6 * H * H * BF16, act, FALSE);
		dep(&b, qkv, at);
		dep(&b, qkv, saved_in[l]);
		dep(&b, qkv, ag);
		guint32 rs = xfer(&b, nm(&b, "l%u.bwd.rs", l), LH_OP_REDUCE_SCATTER, w, G);
		dep(&b, rs, qkv);
		dep(&b, rs, mlp);
		dep(&b, rs, o);
		grad = qkv;
	}
	g_free(wsh);
	g_free(saved_in);
	g_free(saved_attn);
	return finish(&b, "transformer");
}

/* ---- moe-offload: DeepSeek-V3-like layers with activation offloading ---- */

/* One GPU of an expert-parallel group running a slice of DeepSeek-V3's MoE layers (defaults
 * from the DeepSeek-V3 technical report, arXiv:2412.19437, section 4.2: hidden 7168, 128
 * heads, MLA with q_lora_rank 1536, kv_lora_rank 512, 128 nope + 64 rope dims per query/key
 * head, 128 per value head; 256 routed experts of intermediate size 2048, 8 active per token,
 * 1 shared expert). T = batch * seq tokens per GPU.
 *
 * Forward, per layer: FSDP all-gather of the layer's dense weights (MLA, shared expert,
 * router; the routed experts are sharded by EP and stay local); RMSNorm; the MLA projections;
 * causal attention; the output projection; RMSNorm; the router; the all-to-all dispatch of
 * T * topk token copies; the shared expert as an async kernel beside the dispatch, as XLA runs
 * it on a parallel compute stream; the routed experts (a grouped GEMM over the tokens this
 * GPU receives, T * topk on average); the all-to-all combine; the weighted sum + residual.
 * The saved activations of each block go to host with a D2H copy once produced: the
 * attention block's (its normed input and the q/kv latents) and the MoE block's (its normed
 * input and the router probabilities).
 *
 * Backward, per layer in reverse: all-gather the weights again; H2D copies bring the saved
 * activations back; the MoE block (combine backward, re-dispatch of the fetched tokens,
 * expert backward, dispatch backward, the shared expert backward as an async kernel beside
 * the all-to-alls); the attention block backward; reduce-scatter of the dense weight
 * gradients. The backward is 2x the forward for matmuls (activation and weight gradients)
 * and 2.5x for attention (FlashAttention-2, Dao 2023).
 *
 * The async-compute ops (D2H, H2D and the shared-expert kernels) are what XLA's
 * xla_gpu_experimental_parallel_async_compute_limit caps; none of the sizes here depends on
 * a scheduler parameter. */
static const GenOpt moe_opts[] = {
    {"layers", 4, 1, 256, "MoE layers (DeepSeek-V3 has 58 after 3 dense ones)", NULL},
    {"hidden", 7168, 64, 65536, "hidden size", NULL},
    {"seq", 4096, 16, 1048576, "sequence length", NULL},
    {"batch", 1, 1, 1024, "micro-batch per GPU", NULL},
    {"heads", 128, 1, 1024, "attention heads", NULL},
    {"experts", 256, 1, 4096, "routed experts in total", NULL},
    {"topk", 8, 1, 64, "routed experts per token", NULL},
    {"expert-ffn", 2048, 16, 65536, "intermediate size of each expert", NULL},
    {"ep", 8, 1, 1024, "expert-parallel group size (the all-to-all group)", NULL},
    {"fsdp", 8, 1, 1024, "FSDP group size (the all-gather/reduce-scatter group)", NULL},
    {"offload", 2, 0, 2,
     "saved activations sent to host: 0 none, 1 the attention and MoE "
     "block inputs, 2 also the routed experts' gate/up activations",
     NULL},
    {"scan", 0, 0, 1,
     "1: the forward layers are one scan loop, so each layer's offloads "
     "finish before the next layer starts (the host buffer is loop state)",
     NULL},
    {"devices", 0, 0, 1024, DEVICES_HELP("ep and fsdp"), NULL},
    {NULL, 0, 0, 0, NULL, NULL},
};

static LhGraph *gen_moe(const double *v)
{
	guint32 L = (guint32)v[0], EP = (guint32)v[8], G = (guint32)v[9];
	double H = v[1], S = v[2], B = v[3], nh = v[4], E = v[5], K = v[6], F = v[7];
	const double qr = 1536, kr = 512, dn = 128, dr = 64, dv = 128; /* MLA dims */
	double T = B * S, act = T * H * BF16;
	/* Parameters per layer. */
	double p_mla =
	    H * qr + qr * nh * (dn + dr) + H * (kr + dr) + kr * nh * (dn + dv) + nh * dv * H;
	double p_shared = 3 * H * F, p_router = H * E;
	double w_dense = (p_mla + p_shared + p_router) * BF16;
	double local_experts = ceil(E / EP);
	double w_experts = local_experts * 3 * H * F * BF16;
	/* Flops per layer, forward. */
	double f_proj =
	    2 * T * (H * qr + qr * nh * (dn + dr) + H * (kr + dr) + kr * nh * (dn + dv));
	double f_attn = 2 * B * S * S * nh * ((dn + dr) + dv) / 2; /* QK^T + PV, causal */
	double f_o = 2 * T * nh * dv * H;
	double f_router = 2 * T * H * E;
	double f_shared = 2 * T * 3 * H * F;
	double f_experts = 2 * T * K * 3 * H * F;
	double tok = T * K * H * BF16; /* the tokens dispatched (and combined), bytes */
	double lat = T * (qr + kr + dr) * BF16;
	double q_bytes = T * nh * (dn + dr) * BF16, kv_bytes = T * nh * (dn + dv) * BF16;
	double o_bytes = T * nh * dv * BF16;
	double save_attn = act + lat;      /* normed input + latents */
	double save_moe = act + T * E * 4; /* normed input + fp32 router probabilities */
	double up = 2 * T * K * F * BF16;  /* the experts' gate and up activations */
	int offload = (int)v[10];
	gboolean scan = v[11] != 0;

	Gen b = {lh_graph_new("moe-offload"), ""};
	guint32 x = input(&b, "tokens", act);
	guint32 *wd = g_new(guint32, L), *we = g_new(guint32, L), *off_a = g_new(guint32, L),
	        *off_m = g_new(guint32, L), *save_e = g_new(guint32, L);
	for (guint32 l = 0; l < L; l++) {
		wd[l] = input(&b, nm(&b, "l%u.w_dense", l), w_dense / G);
		we[l] = input(&b, nm(&b, "l%u.w_experts", l), w_experts);
	}
	for (guint32 l = 0; l < L; l++) {
		guint32 ag = xfer(&b, nm(&b, "l%u.fwd.ag", l), LH_OP_ALL_GATHER, w_dense, G);
		dep(&b, ag, wd[l]);
		guint32 n1 =
		    kernel(&b, nm(&b, "l%u.fwd.attn_norm", l), 4 * T * H, 2 * act, act, FALSE);
		dep(&b, n1, x);
		guint32 pj = kernel(&b, nm(&b, "l%u.fwd.mla_proj", l), f_proj,
		                    act + p_mla * BF16 + lat + q_bytes + kv_bytes,
		                    lat + q_bytes + kv_bytes, FALSE);
		dep(&b, pj, n1);
		dep(&b, pj, ag);
		guint32 at = kernel(&b, nm(&b, "l%u.fwd.mla_attn", l), f_attn,
		                    q_bytes + kv_bytes + o_bytes, o_bytes, FALSE);
		dep(&b, at, pj);
		guint32 o = kernel(&b, nm(&b, "l%u.fwd.o_proj", l), f_o,
		                   o_bytes + nh * dv * H * BF16 + 2 * act, act, FALSE);
		dep(&b, o, at);
		dep(&b, o, ag);
		dep(&b, o, x);
		/* Without offloading the backward reads the forward's buffers directly: the
		 * projection's output stands for the attention block's saved activations. */
		guint32 offa = pj;
		if (offload >= 1) {
			offa = xfer(&b, nm(&b, "l%u.fwd.offload_attn", l), LH_OP_COPY_D2H,
			            save_attn, 1);
			dep(&b, offa, n1);
			dep(&b, offa, pj);
		}
		guint32 n2 =
		    kernel(&b, nm(&b, "l%u.fwd.ffn_norm", l), 4 * T * H, 2 * act, act, FALSE);
		dep(&b, n2, o);
		guint32 r = kernel(&b, nm(&b, "l%u.fwd.router", l), f_router,
		                   act + p_router * BF16 + T * E * 4, T * E * 4, FALSE);
		dep(&b, r, n2);
		dep(&b, r, ag);
		guint32 offm = r;
		if (offload >= 1) {
			offm =
			    xfer(&b, nm(&b, "l%u.fwd.offload_moe", l), LH_OP_COPY_D2H, save_moe, 1);
			dep(&b, offm, n2);
			dep(&b, offm, r);
		}
		guint32 d = xfer(&b, nm(&b, "l%u.fwd.dispatch", l), LH_OP_ALL_TO_ALL, tok, EP);
		dep(&b, d, n2);
		dep(&b, d, r);
		guint32 sh = kernel(&b, nm(&b, "l%u.fwd.shared_expert", l), f_shared,
		                    2 * act + p_shared * BF16 + 3 * T * F * BF16, act, TRUE);
		dep(&b, sh, n2);
		dep(&b, sh, ag);
		/* The routed experts: gate and up projections, then SwiGLU and the down
		 * projection; the gate/up activations are what the backward needs. */
		guint32 eu = kernel(&b, nm(&b, "l%u.fwd.experts_up", l), f_experts * 2 / 3,
		                    tok + w_experts * 2 / 3 + up, up, FALSE);
		dep(&b, eu, d);
		dep(&b, eu, we[l]);
		guint32 ex = kernel(&b, nm(&b, "l%u.fwd.experts_down", l), f_experts / 3,
		                    up + w_experts / 3 + tok, tok, FALSE);
		dep(&b, ex, eu);
		dep(&b, ex, we[l]);
		save_e[l] = eu;
		if (offload >= 2) {
			guint32 oe =
			    xfer(&b, nm(&b, "l%u.fwd.offload_experts", l), LH_OP_COPY_D2H, up, 1);
			dep(&b, oe, eu);
			save_e[l] = oe;
		}
		guint32 c = xfer(&b, nm(&b, "l%u.fwd.combine", l), LH_OP_ALL_TO_ALL, tok, EP);
		dep(&b, c, ex);
		guint32 y = kernel(&b, nm(&b, "l%u.fwd.moe_out", l), 2 * T * K * H, tok + 3 * act,
		                   act, FALSE);
		dep(&b, y, c);
		dep(&b, y, sh);
		dep(&b, y, r);
		dep(&b, y, o);
		off_a[l] = offa;
		off_m[l] = offm;
		if (scan && offload >= 1) {
			/* The loop body's result carries the host buffer, so the next iteration
			 * starts after this one's D2H copies are done. */
			dep(&b, y, offa);
			dep(&b, y, offm);
			if (offload >= 2)
				dep(&b, y, save_e[l]);
		}
		x = y;
	}
	guint32 g = kernel(&b, "loss", 10 * T * H, 2 * act, act, FALSE);
	dep(&b, g, x);
	for (guint32 l = L; l-- > 0;) {
		guint32 ag = xfer(&b, nm(&b, "l%u.bwd.ag", l), LH_OP_ALL_GATHER, w_dense, G);
		dep(&b, ag, wd[l]);
		guint32 fm = off_m[l], fa = off_a[l], fe = save_e[l];
		if (offload >= 1) {
			fm = xfer(&b, nm(&b, "l%u.bwd.fetch_moe", l), LH_OP_COPY_H2D, save_moe, 1);
			dep(&b, fm, off_m[l]);
			fa =
			    xfer(&b, nm(&b, "l%u.bwd.fetch_attn", l), LH_OP_COPY_H2D, save_attn, 1);
			dep(&b, fa, off_a[l]);
		}
		if (offload >= 2) {
			fe = xfer(&b, nm(&b, "l%u.bwd.fetch_experts", l), LH_OP_COPY_H2D, up, 1);
			dep(&b, fe, save_e[l]);
		}
		/* MoE block. */
		guint32 cb = xfer(&b, nm(&b, "l%u.bwd.combine", l), LH_OP_ALL_TO_ALL, tok, EP);
		dep(&b, cb, g);
		dep(&b, cb, fm);
		guint32 rd = xfer(&b, nm(&b, "l%u.bwd.redispatch", l), LH_OP_ALL_TO_ALL, tok, EP);
		dep(&b, rd, fm);
		guint32 sh = kernel(&b, nm(&b, "l%u.bwd.shared_expert", l), 2 * f_shared,
		                    3 * act + 2 * p_shared * BF16 + 6 * T * F * BF16, act, TRUE);
		dep(&b, sh, g);
		dep(&b, sh, fm);
		dep(&b, sh, ag);
		guint32 ex = kernel(&b, nm(&b, "l%u.bwd.experts", l), 2 * f_experts,
		                    3 * tok + 2 * w_experts + 6 * T * K * F * BF16, tok, FALSE);
		dep(&b, ex, cb);
		dep(&b, ex, rd);
		dep(&b, ex, fe);
		dep(&b, ex, we[l]);
		guint32 db = xfer(&b, nm(&b, "l%u.bwd.dispatch", l), LH_OP_ALL_TO_ALL, tok, EP);
		dep(&b, db, ex);
		guint32 rb = kernel(&b, nm(&b, "l%u.bwd.router_norm", l), 2 * f_router + 8 * T * H,
		                    tok + 4 * act + T * E * 4, act, FALSE);
		dep(&b, rb, db);
		dep(&b, rb, sh);
		dep(&b, rb, fm);
		dep(&b, rb, g);
		/* Attention block. */
		guint32 ob = kernel(&b, nm(&b, "l%u.bwd.o_proj", l), 2 * f_o,
		                    2 * act + 2 * o_bytes + 2 * nh * dv * H * BF16, o_bytes, FALSE);
		dep(&b, ob, rb);
		dep(&b, ob, ag);
		/* Recompute the projections from the fetched latents, then the attention
		 * backward (which recomputes the attention itself, as FlashAttention does). */
		guint32 pr = kernel(&b, nm(&b, "l%u.bwd.mla_proj_remat", l),
		                    f_proj - 2 * T * (H * qr + H * (kr + dr)),
		                    lat + q_bytes + kv_bytes +
		                        (qr * nh * (dn + dr) + kr * nh * (dn + dv)) * BF16,
		                    q_bytes + kv_bytes, FALSE);
		dep(&b, pr, fa);
		dep(&b, pr, ag);
		guint32 ab =
		    kernel(&b, nm(&b, "l%u.bwd.mla_attn", l), 2.5 * f_attn,
		           2 * (q_bytes + kv_bytes + 2 * o_bytes), q_bytes + kv_bytes, FALSE);
		dep(&b, ab, ob);
		dep(&b, ab, pr);
		guint32 pb =
		    kernel(&b, nm(&b, "l%u.bwd.mla_proj", l), 2 * f_proj,
		           2 * (act + lat + q_bytes + kv_bytes) + 2 * p_mla * BF16, act, FALSE);
		dep(&b, pb, ab);
		dep(&b, pb, fa);
		guint32 nb =
		    kernel(&b, nm(&b, "l%u.bwd.attn_norm", l), 8 * T * H, 4 * act, act, FALSE);
		dep(&b, nb, pb);
		dep(&b, nb, fa);
		dep(&b, nb, rb);
		guint32 rs = xfer(&b, nm(&b, "l%u.bwd.rs", l), LH_OP_REDUCE_SCATTER, w_dense, G);
		dep(&b, rs, pb);
		dep(&b, rs, ob);
		dep(&b, rs, sh);
		dep(&b, rs, rb);
		g = nb;
	}
	g_free(wd);
	g_free(we);
	g_free(off_a);
	g_free(off_m);
	g_free(save_e);
	return finish(&b, "moe-offload");
}

/* ---- pipeline: one stage of a 1F1B pipeline, or every stage ---- */

/* Without `schedule`: the ops of stage `stage` of `stages` pipeline stages running
 * `microbatches` micro-batches in the 1F1B order (PipeDream-Flush, Narayanan et al. 2021):
 * stages - stage - 1 warm-up forwards, then one forward and one backward in turn, then the
 * remaining backwards. Each forward receives its activation from the previous stage (recv) and
 * sends its output to the next (send); each backward receives the gradient from the next stage
 * and sends one back. The first stage reads its inputs instead of receiving, the last computes
 * the loss instead of receiving a gradient. A stage holds `layers` dense layers (as in
 * `transformer`).
 *
 * With `schedule`: every stage, as a graph placed on `stages` devices (build_pipeline). */
static const GenOpt pipeline_opts[] = {
    {"stages", 4, 1, 256, "pipeline stages (with schedule: devices)", NULL},
    {"stage", 1, 0, 255, "which stage this GPU runs (0 = first); without schedule only", NULL},
    {"microbatches", 8, 1, 4096, "micro-batches per step", NULL},
    {"layers", 2, 1, 1024, "layers per stage", NULL},
    {"hidden", 4096, 64, 65536, "hidden size", NULL},
    {"seq", 4096, 16, 1048576, "sequence length", NULL},
    {"batch", 1, 1, 1024, "micro-batch size", NULL},
    {"schedule", -1, 0, 2,
     "every stage, placed on `stages` devices, in this order: GPipe, "
     "1F1B, or Megatron-LM's interleaved 1F1B",
     "gpipe|1f1b|interleaved"},
    {"chunks", 2, 1, 64,
     "schedule=interleaved: model chunks (virtual stages) per device; "
     "a divisor of layers",
     NULL},
    {NULL, 0, 0, 0, NULL, NULL},
};

enum { SCHED_GPIPE, SCHED_1F1B, SCHED_INTERLEAVED };

/* The schedules' names, by index (as in the `schedule` choices). */
static const char *const sched_names[] = {"gpipe", "1f1b", "interleaved"};

/* The kernels of a pipeline stage, or of one chunk of it: @layers dense layers as in
 * `transformer`, T = batch * seq tokens of hidden H. */
typedef struct {
	double T, H, act, layers, w, f_fwd;
} StageCost;

static StageCost stage_cost(double layers, double H, double S, double B)
{
	StageCost c = {.T = B * S, .H = H, .layers = layers};
	c.act = c.T * H * BF16;
	/* One layer as in `transformer`: 24*T*H^2 + 2*b*s^2*H flops forward. */
	c.f_fwd = layers * (24 * c.T * H * H + 2 * B * S * S * H);
	c.w = layers * 12 * H * H * BF16;
	return c;
}

static guint32 stage_fwd(Gen *b, const StageCost *c, const char *name)
{
	return kernel(b, name, c->f_fwd, 2 * c->act + c->w + 20 * c->layers * c->act, c->act,
	              FALSE);
}

static guint32 stage_bwd(Gen *b, const StageCost *c, const char *name)
{
	return kernel(b, name, 2 * c->f_fwd, 4 * c->act + 2 * c->w + 40 * c->layers * c->act,
	              c->act, FALSE);
}

static guint32 stage_loss(Gen *b, const StageCost *c, const char *name)
{
	return kernel(b, name, 10 * c->T * c->H, 2 * c->act, c->act, FALSE);
}

/* One compute step of a device: the forward or backward of micro-batch `mb` through virtual
 * stage `vs` (device vs % P, chunk vs / P). */
typedef struct {
	guint32 vs, mb;
	gboolean bwd;
} Step;

/* Device @d's steps in the order @sched prescribes, @P devices, @V chunks, @M micro-batches.
 * GPipe (Huang et al. 2019, Figure 2c): every forward, then every backward, the last
 * micro-batch's first. 1F1B (PipeDream-Flush; Narayanan et al. 2021, section 2.2, Figure 4
 * top): P - d - 1 warm-up forwards, then one forward and one backward in turn, then the
 * remaining backwards. Interleaved (Narayanan et al. 2021, Figure 4 bottom, as Megatron-LM's
 * forward_backward_pipelining_with_interleaving orders it): the M * V chunk steps run in
 * groups of P micro-batches per chunk; warm-up (P - d - 1) * 2 + (V - 1) * P forwards (all of
 * them when M = P), then one forward and one backward in turn. */
static Step *device_steps(int sched, guint32 P, guint32 V, guint32 M, guint32 d, guint32 *n)
{
	guint32 total = M * V;
	Step *st = g_new(Step, 2 * (gsize)total);
	*n = 0;
	if (sched == SCHED_GPIPE) {
		for (guint32 m = 0; m < M; m++)
			st[(*n)++] = (Step){d, m, FALSE};
		for (guint32 m = M; m-- > 0;)
			st[(*n)++] = (Step){d, m, TRUE};
		return st;
	}
	guint32 warm;
	if (sched == SCHED_1F1B)
		warm = MIN(P - d - 1, M);
	else
		warm = M == P ? total : MIN((P - d - 1) * 2 + (V - 1) * P, total);
	guint32 nf = 0, nb = 0;
	/* Megatron-LM's get_model_chunk_id: step k of either direction runs chunk
	 * (k mod PV) / P (reversed for backwards) on micro-batch (k / PV) * P + k mod P. */
	while (nb < total) {
		gboolean f = nf < total && (nf < warm || nf == nb + warm);
		guint32 k = f ? nf++ : nb++;
		guint32 c = (k % (P * V)) / P, m = (k / (P * V)) * P + k % P;
		if (!f)
			c = V - 1 - c;
		st[(*n)++] = (Step){c * P + d, m, !f};
	}
	return st;
}

/* Every stage: P devices, V chunks each, virtual stage vs = c * P + d (Megatron-LM's
 * placement; V = 1 but for interleaved). A forward of vs > 0 receives its activation from
 * vs - 1, a backward of vs < PV - 1 its gradient from vs + 1; a device's own neighbour
 * (P = 1) is a dep instead. The last virtual stage computes the loss after its forward. A
 * send and its recv share the sync key "fwd.v<vs>.mb<m>" or "bwd.v<vs>.mb<m>" (vs: the
 * sender).
 *
 * Program order. Each device's program is written so that running it in order, each send
 * and recv blocking until its partner arrives, cannot deadlock: the steps of all devices are
 * played in lockstep rounds; in each round every device whose next step needs an activation
 * or gradient that another device holds takes it (the send is appended to the sender's
 * program and the recv to the receiver's at once), then every device whose next step has its
 * input runs that step. The rendezvous thus appear in one global order that every device's
 * program follows, which is what per-device serial execution needs (docs/schedulers.md,
 * "Placed graphs"). */
static LhGraph *build_pipeline(int sched, guint32 P, guint32 V, guint32 M, guint32 L, double H,
                               double S, double B, GError **error)
{
	if (sched == SCHED_INTERLEAVED && (L % V || M % P)) {
		g_set_error(error, LH_GEN_ERROR, LH_GEN_ERROR_OPTION,
		            L % V
		                ? "pipeline: layers=%u must be a multiple of chunks=%u"
		                : "pipeline: microbatches=%u must be a multiple of stages=%u (the "
		                  "interleaved schedule runs micro-batches in groups of one per "
		                  "stage)",
		            L % V ? L : M, L % V ? V : P);
		return NULL;
	}
	if ((guint64)P * V * M > 1000000) { /* about 6 ops each: a graph of millions of ops */
		g_set_error(error, LH_GEN_ERROR, LH_GEN_ERROR_OPTION,
		            "pipeline: stages x chunks x microbatches = %" G_GUINT64_FORMAT
		            " is above 1000000",
		            (guint64)P * V * M);
		return NULL;
	}
	StageCost c = stage_cost((double)L / V, H, S, B); /* one chunk */
	double act = c.act;
	guint32 NV = P * V;
	Gen b = {lh_graph_new("pipeline"), ""};
	lh_graph_set_placed(b.g, TRUE);
	lh_graph_set_devices(b.g, P);
	g_autofree char *gname = g_strdup_printf("pipeline-%s", sched_names[sched]);
	lh_graph_set_name(b.g, gname);
	/* Op names: "d<K>." then "c<C>." when V > 1. */
	char pre[32];
#define PRE(vs)                                                                                    \
	(V > 1 ? g_snprintf(pre, sizeof pre, "d%u.c%u.", (vs) % P, (vs) / P)                       \
	       : g_snprintf(pre, sizeof pre, "d%u.", (vs) % P),                                    \
	 pre)
	g_autofree guint32 *weights = g_new(guint32, NV);
	for (guint32 vs = 0; vs < NV; vs++)
		weights[vs] = on(&b, input(&b, nm(&b, "%sweights", PRE(vs)), c.w), vs % P);
	/* Per (vs, mb): the forward and backward kernels once run, and the ops that hold the
	 * forward's input and the backward's gradient on vs's device once they exist. */
	gsize nvm = (gsize)NV * M;
	g_autofree guint32 *fwd = g_new(guint32, nvm), *bwd = g_new(guint32, nvm);
	g_autofree guint32 *fin = g_new(guint32, nvm), *gin = g_new(guint32, nvm);
	for (gsize i = 0; i < nvm; i++)
		fwd[i] = bwd[i] = fin[i] = gin[i] = LH_NO_OP;
	g_autofree guint32 *last_bwd = g_new(guint32, NV);
	for (guint32 vs = 0; vs < NV; vs++)
		last_bwd[vs] = LH_NO_OP;
	Step **seq = g_new(Step *, P);
	g_autofree guint32 *n_seq = g_new(guint32, P), *at = g_new0(guint32, P);
	guint32 left = 0;
	for (guint32 d = 0; d < P; d++) {
		seq[d] = device_steps(sched, P, V, M, d, &n_seq[d]);
		left += n_seq[d];
	}
#define IX(vs, m) ((gsize)(vs)*M + (m))
	/* When each device gets to its program's end so far, and when each (vs, mb)'s forward
	 * and backward end, in units of one forward (a backward has twice its flops). */
	g_autofree double *clock = g_new0(double, P);
	g_autofree double *f_end = g_new(double, nvm), *b_end = g_new(double, nvm);
	while (left) {
		/* The next event: a device's next step meeting its sender (a rendezvous), or
		 * running; the earliest first, at a tie a rendezvous (a blocking send is best made
		 * while its receiver waits), then the lower device. */
		guint32 best = P, from = 0;
		double best_t = G_MAXDOUBLE;
		gboolean best_meets = FALSE;
		for (guint32 d = 0; d < P; d++) {
			if (at[d] == n_seq[d])
				continue;
			Step st = seq[d][at[d]];
			gsize i = IX(st.vs, st.mb);
			gboolean edge = st.bwd ? st.vs + 1 == NV : st.vs == 0; /* loss or input */
			guint32 u = st.bwd ? st.vs + 1 : st.vs - 1;            /* the source vs */
			double t = clock[d];
			gboolean meets = FALSE;
			if (!edge) {
				guint32 src = (st.bwd ? bwd : fwd)[IX(u, st.mb)];
				if (src == LH_NO_OP)
					continue; /* not computed yet */
				t = MAX(t, (st.bwd ? b_end : f_end)[IX(u, st.mb)]);
				meets = u % P != d && (st.bwd ? gin : fin)[i] == LH_NO_OP;
				if (meets)
					t = MAX(t, clock[u % P]); /* the sender gets to its send */
			}
			if (t < best_t || (t == best_t && meets && !best_meets)) {
				best = d;
				best_t = t;
				best_meets = meets;
				from = u;
			}
		}
		if (best == P)
			g_error("pipeline generator: the %s schedule is stuck",
			        sched_names[sched]); /* a bug */
		guint32 d = best;
		Step st = seq[d][at[d]];
		gsize i = IX(st.vs, st.mb);
		if (best_meets) {
			/* The rendezvous: the send joins the sender's program and the recv the
			 * receiver's at once, so both follow one global order. */
			const char *dir = st.bwd ? "bwd" : "fwd";
			g_autofree char *key = g_strdup_printf("%s.v%u.mb%u", dir, from, st.mb);
			guint32 sync = 1 + lh_graph_sync_add(b.g, key);
			guint32 snd = on(&b,
			                 xfer(&b, nm(&b, "%smb%u.%s.send", PRE(from), st.mb, dir),
			                      LH_OP_SEND, act, 2),
			                 from % P);
			dep(&b, snd, (st.bwd ? bwd : fwd)[IX(from, st.mb)]);
			guint32 rcv = on(&b,
			                 xfer(&b, nm(&b, "%smb%u.%s.recv", PRE(st.vs), st.mb, dir),
			                      LH_OP_RECV, act, 2),
			                 d);
			lh_graph_op_mut(b.g, snd)->sync = sync;
			lh_graph_op_mut(b.g, rcv)->sync = sync;
			(st.bwd ? gin : fin)[i] = rcv;
			clock[from % P] = clock[d] = best_t;
			continue; /* the step itself is a later event */
		}
		if (!st.bwd) {
			if (st.vs == 0)
				fin[i] = on(
				    &b, input(&b, nm(&b, "%smb%u.input", PRE(st.vs), st.mb), act),
				    d);
			else if ((st.vs - 1) % P == d)
				fin[i] = fwd[IX(st.vs - 1, st.mb)];
			guint32 k =
			    on(&b, stage_fwd(&b, &c, nm(&b, "%smb%u.fwd", PRE(st.vs), st.mb)), d);
			dep(&b, k, fin[i]);
			dep(&b, k, weights[st.vs]);
			fwd[i] = k;
			clock[d] = f_end[i] = best_t + 1;
			if (st.vs + 1 == NV) {
				gin[i] =
				    on(&b,
				       stage_loss(&b, &c, nm(&b, "%smb%u.loss", PRE(st.vs), st.mb)),
				       d);
				dep(&b, gin[i], k);
			}
		} else {
			if (st.vs + 1 < NV && (st.vs + 1) % P == d)
				gin[i] = bwd[IX(st.vs + 1, st.mb)];
			guint32 k =
			    on(&b, stage_bwd(&b, &c, nm(&b, "%smb%u.bwd", PRE(st.vs), st.mb)), d);
			dep(&b, k, gin[i]);
			dep(&b, k, fwd[i]);
			if (last_bwd[st.vs] != LH_NO_OP)
				dep(&b, k,
				    last_bwd[st.vs]); /* weight gradients accumulate in order */
			last_bwd[st.vs] = k;
			bwd[i] = k;
			clock[d] = b_end[i] = best_t + 2;
		}
		at[d]++;
		left--;
	}
	for (guint32 d = 0; d < P; d++)
		g_free(seq[d]);
	g_free(seq);
#undef IX
#undef PRE
	return finish(&b, "pipeline");
}

static LhGraph *gen_pipeline(const double *v, guint64 given, GError **error)
{
	guint32 P = (guint32)v[0], s = (guint32)v[1], M = (guint32)v[2], L = (guint32)v[3];
	double H = v[4], S = v[5], B = v[6];
	int sched = (int)v[7];
	if (sched < 0 && given & (1u << 8)) {
		g_set_error(error, LH_GEN_ERROR, LH_GEN_ERROR_OPTION,
		            "pipeline: chunks goes with schedule=interleaved");
		return NULL;
	}
	if (sched >= 0) {
		if (given & (1u << 1)) {
			g_set_error(error, LH_GEN_ERROR, LH_GEN_ERROR_OPTION,
			            "pipeline: stage picks one stage of a graph without schedule; "
			            "with schedule=%s every stage is built",
			            sched_names[sched]);
			return NULL;
		}
		if (sched != SCHED_INTERLEAVED && given & (1u << 8)) {
			g_set_error(
			    error, LH_GEN_ERROR, LH_GEN_ERROR_OPTION,
			    "pipeline: chunks goes with schedule=interleaved, not schedule=%s",
			    sched_names[sched]);
			return NULL;
		}
		return build_pipeline(sched, P, sched == SCHED_INTERLEAVED ? (guint32)v[8] : 1, M,
		                      L, H, S, B, error);
	}
	if (s >= P) {
		g_set_error(error, LH_GEN_ERROR, LH_GEN_ERROR_OPTION,
		            "pipeline: stage=%u must be below stages=%u", s, P);
		return NULL;
	}
	StageCost c = stage_cost(L, H, S, B);
	double act = c.act;
	Gen b = {lh_graph_new("pipeline"), ""};
	guint32 weights = input(&b, "weights", c.w);
	guint32 *fwd = g_new(guint32, M);
	guint32 last_bwd = G_MAXUINT32;
	guint32 n_steps; /* the 1F1B order, as device s of a placed 1F1B pipeline */
	g_autofree Step *steps = device_steps(SCHED_1F1B, P, 1, M, s, &n_steps);
	for (guint32 j = 0; j < n_steps; j++) {
		guint32 m = steps[j].mb;
		if (!steps[j].bwd) {
			guint32 src;
			if (s == 0) {
				src = input(&b, nm(&b, "mb%u.input", m), act);
			} else {
				src = xfer(&b, nm(&b, "mb%u.fwd.recv", m), LH_OP_RECV, act, 2);
			}
			guint32 k = stage_fwd(&b, &c, nm(&b, "mb%u.fwd", m));
			dep(&b, k, src);
			dep(&b, k, weights);
			if (s + 1 < P) {
				guint32 snd =
				    xfer(&b, nm(&b, "mb%u.fwd.send", m), LH_OP_SEND, act, 2);
				dep(&b, snd, k);
			}
			fwd[m] = k;
			continue;
		}
		guint32 src;
		if (s + 1 == P) {
			src = stage_loss(&b, &c, nm(&b, "mb%u.loss", m));
			dep(&b, src, fwd[m]);
		} else {
			src = xfer(&b, nm(&b, "mb%u.bwd.recv", m), LH_OP_RECV, act, 2);
		}
		guint32 k = stage_bwd(&b, &c, nm(&b, "mb%u.bwd", m));
		dep(&b, k, src);
		dep(&b, k, fwd[m]);
		if (last_bwd != G_MAXUINT32)
			dep(&b, k, last_bwd); /* weight gradients accumulate in order */
		last_bwd = k;
		if (s > 0) {
			guint32 snd = xfer(&b, nm(&b, "mb%u.bwd.send", m), LH_OP_SEND, act, 2);
			dep(&b, snd, k);
		}
	}
	g_free(fwd);
	return finish(&b, "pipeline");
}

/* ---- registry ---- */

/* The index of option @name in @spec, or -1. */
static int opt_index(const GenOpt *spec, const char *name)
{
	for (int i = 0; spec[i].name; i++)
		if (!strcmp(spec[i].name, name))
			return i;
	return -1;
}

typedef struct {
	const char *name;
	const GenOpt *opts;
	LhGraph *(*gen)(const double *v, guint64 given, GError **error);
	const char *summary;
} Workload;

static LhGraph *gen_random_w(const double *v, guint64 given, GError **error)
{
	(void)given;
	(void)error;
	return gen_random(v);
}

static LhGraph *gen_transformer_w(const double *v, guint64 given, GError **error)
{
	(void)given;
	(void)error;
	return gen_transformer(v);
}

static LhGraph *gen_moe_w(const double *v, guint64 given, GError **error)
{
	(void)given;
	(void)error;
	return gen_moe(v);
}

static const Workload workloads[] = {
    {"moe-offload", moe_opts, gen_moe_w,
     "DeepSeek-V3-like MoE layers (MLA, shared + routed experts, all-to-all dispatch/combine,\n"
     "  FSDP) with activations offloaded to host in the forward and prefetched in the backward\n"
     "  (the default workload)"},
    {"transformer", transformer_opts, gen_transformer_w,
     "a dense decoder stack with FSDP all-gathers before each layer's forward and backward\n"
     "  and gradient reduce-scatters"},
    {"pipeline", pipeline_opts, gen_pipeline,
     "one stage of a 1F1B pipeline: micro-batches with send/recv between stages; with\n"
     "  schedule=gpipe|1f1b|interleaved, every stage, placed on `stages` devices"},
    {"random", random_opts, gen_random_w, "a seeded random layered DAG"},
};

const char *const *lh_gen_workload_names(void)
{
	static const char *names[G_N_ELEMENTS(workloads) + 1];
	for (gsize i = 0; i < G_N_ELEMENTS(workloads); i++)
		names[i] = workloads[i].name;
	return names;
}

const char *lh_gen_workload_help(const char *name)
{
	static GHashTable *cache;
	static GMutex lock;
	for (gsize i = 0; i < G_N_ELEMENTS(workloads); i++) {
		if (strcmp(workloads[i].name, name) != 0)
			continue;
		g_mutex_lock(&lock);
		if (!cache)
			cache = g_hash_table_new(g_str_hash, g_str_equal);
		char *h = g_hash_table_lookup(cache, name);
		if (!h) {
			g_autofree char *o = opts_help(workloads[i].opts);
			h = g_strdup_printf("%s: %s\n%s", name, workloads[i].summary, o);
			g_hash_table_insert(cache, (gpointer)workloads[i].name, h);
		}
		g_mutex_unlock(&lock);
		return h;
	}
	return NULL;
}

LhGraph *lh_gen_workload(const char *name, const char *const *kv, GError **error)
{
	for (gsize i = 0; i < G_N_ELEMENTS(workloads); i++) {
		if (strcmp(workloads[i].name, name) != 0)
			continue;
		double v[32];
		guint64 given;
		if (!parse_opts(name, workloads[i].opts, kv, v, &given, error))
			return NULL;
		LhGraph *g = workloads[i].gen(v, given, error);
		int dv = opt_index(workloads[i].opts, "devices");
		if (g && dv >= 0 && v[dv] > 0)
			g = spmd_group(g, (guint32)v[dv], name, error);
		return g;
	}
	GString *l = g_string_new(NULL);
	for (gsize i = 0; i < G_N_ELEMENTS(workloads); i++)
		g_string_append_printf(l, "%s%s", i ? ", " : "", workloads[i].name);
	g_set_error(error, LH_GEN_ERROR, LH_GEN_ERROR_UNKNOWN,
	            "unknown workload '%s' (workloads: %s)", name, l->str);
	g_string_free(l, TRUE);
	return NULL;
}

gboolean lh_gen_workload_has_option(const char *name, const char *option)
{
	for (gsize i = 0; i < G_N_ELEMENTS(workloads); i++)
		if (!strcmp(workloads[i].name, name))
			return opt_index(workloads[i].opts, option) >= 0;
	return FALSE;
}
