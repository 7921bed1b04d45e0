/* lhsim — built-in workload generators. */
#include "models/gen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

G_DEFINE_QUARK(lh-gen-error-quark, lh_gen_error)

/* ---- options ---- */

typedef struct {
	const char *name;
	double deflt, min, max;
	const char *help;
} GenOpt;

/* Parses @kv against @spec into @val (same order as spec). */
static gboolean parse_opts(const char *wl, const GenOpt *spec, const char *const *kv, double *val,
			   GError **error)
{
	guint n = 0;
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
		char *end = NULL;
		double v = eq ? g_ascii_strtod(eq + 1, &end) : NAN;
		if (!eq || end == eq + 1 || *end || !isfinite(v)) {
			g_set_error(error, LH_GEN_ERROR, LH_GEN_ERROR_OPTION,
				    "%s: option '%s' needs a number (%s=VALUE)", wl, key, key);
			return FALSE;
		}
		if (v < spec[i].min || v > spec[i].max) {
			g_set_error(error, LH_GEN_ERROR, LH_GEN_ERROR_OPTION,
				    "%s: option '%s' = %g is out of range [%g, %g]", wl, key, v,
				    spec[i].min, spec[i].max);
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
		g_string_append_printf(s, "  %-14s %s (default %g, %g..%g)\n", o->name, o->help,
				       o->deflt, o->min, o->max);
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
	g_autofree char *gname = g_strdup_printf("random-%" G_GUINT64_FORMAT "-%u", o->seed,
						 o->n_ops);
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
			kind = (LhOpKind)g_rand_int_range(rng, LH_OP_ALL_REDUCE, LH_OP_ALL_TO_ALL + 1);
		else
			kind = LH_OP_KERNEL;
		guint32 id = lh_graph_add_op(g, name, kind);
		LhOp *op = lh_graph_op_mut(g, id);
		/* Sizes spread over two decades so that work is uneven, as in real graphs. */
		double scale = pow(10.0, g_rand_double_range(rng, 0, 2));
		if (kind == LH_OP_KERNEL) {
			op->flops = 2e9 * scale;
			op->bytes = 4e6 * scale * g_rand_double_range(rng, 0.2, 5);
			op->sm = g_rand_double(rng) < 0.3 ? 0.25 * g_rand_int_range(rng, 1, 4) : 1.0;
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
			lh_graph_add_dep(g, id, (guint32)g_rand_int_range(rng, (gint32)lo, (gint32)hi));
	}
	g_rand_free(rng);
	GError *e = NULL;
	if (!lh_graph_finish(g, NULL, &e))
		g_error("random DAG generator made a bad graph: %s", e->message); /* a bug */
	return g;
}

static const GenOpt random_opts[] = {
	{"ops", 1000, 2, 1e7, "total ops, inputs included"},
	{"width", 16, 1, 1e6, "ops per layer"},
	{"seed", 1, 0, 1e15, "random seed"},
	{"max-deps", 3, 1, 64, "deps per op, drawn from 1..max-deps"},
	{NULL, 0, 0, 0, NULL},
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

/* ---- moe-offload ---- */

/* A DeepSeek-V3-like stack on one GPU of an expert-parallel group: per layer, FSDP all-gather
 * of the layer's weights, MLA attention, a router, all-to-all dispatch, the experts, all-to-all
 * combine. Each forward layer offloads its activations to host (D2H) and the backward brings
 * them back (H2D) before recomputing gradients; gradients are reduce-scattered. */
static const GenOpt moe_opts[] = {
	{"layers", 4, 1, 256, "transformer layers"},
	{"hidden", 7168, 64, 65536, "hidden size"},
	{"seq", 4096, 16, 1048576, "sequence length"},
	{"batch", 1, 1, 1024, "micro-batch"},
	{"experts", 8, 1, 1024, "routed experts on this GPU"},
	{"ep", 8, 1, 1024, "expert-parallel group size"},
	{NULL, 0, 0, 0, NULL},
};

static guint32 add_kernel(LhGraph *g, const char *name, double flops, double bytes,
			  guint64 out_bytes, gboolean async)
{
	guint32 i = lh_graph_add_op(g, name, LH_OP_KERNEL);
	LhOp *op = lh_graph_op_mut(g, i);
	op->flops = flops;
	op->bytes = bytes;
	op->out_bytes = out_bytes;
	op->async = async;
	return i;
}

static guint32 add_xfer(LhGraph *g, const char *name, LhOpKind k, guint64 size, guint32 group)
{
	guint32 i = lh_graph_add_op(g, name, k);
	LhOp *op = lh_graph_op_mut(g, i);
	op->size = size;
	op->group = group;
	op->out_bytes = size;
	return i;
}

static LhGraph *gen_moe(const double *v)
{
	guint32 L = (guint32)v[0];
	double H = v[1], S = v[2] * v[3], E = v[4];
	guint32 ep = (guint32)v[5];
	LhGraph *g = lh_graph_new("moe-offload");
	const double bf16 = 2;
	double act = S * H * bf16;                 /* one activation tensor, bytes */
	double w_attn = 4 * H * H * bf16;          /* attention weights of a layer, bytes */
	double w_exp = 3 * H * (H / 2) * bf16 * E; /* this GPU's experts, bytes */
	char n[64];
	guint32 x = lh_graph_add_op(g, "tokens", LH_OP_INPUT);
	lh_graph_op_mut(g, x)->out_bytes = (guint64)act;
	guint32 *saved = g_new(guint32, L);
	guint32 *off = g_new(guint32, L);
	guint32 *wg = g_new(guint32, L);
	for (guint32 l = 0; l < L; l++) {
		g_snprintf(n, sizeof n, "w%u", l);
		guint32 w = lh_graph_add_op(g, n, LH_OP_INPUT);
		lh_graph_op_mut(g, w)->out_bytes = (guint64)((w_attn + w_exp) / ep);
		g_snprintf(n, sizeof n, "ag.fwd%u", l);
		wg[l] = add_xfer(g, n, LH_OP_ALL_GATHER, (guint64)(w_attn + w_exp), ep);
		lh_graph_add_dep(g, wg[l], w);
		g_snprintf(n, sizeof n, "attn.fwd%u", l);
		guint32 a = add_kernel(g, n, 2 * S * 4 * H * H + 4 * S * S * H, 3 * act + w_attn,
				       (guint64)act, FALSE);
		lh_graph_add_dep(g, a, x);
		lh_graph_add_dep(g, a, wg[l]);
		g_snprintf(n, sizeof n, "router.fwd%u", l);
		guint32 r = add_kernel(g, n, 2 * S * H * E * ep, 2 * act, (guint64)(S * 8), FALSE);
		lh_graph_add_dep(g, r, a);
		g_snprintf(n, sizeof n, "dispatch.fwd%u", l);
		guint32 d = add_xfer(g, n, LH_OP_ALL_TO_ALL, (guint64)act, ep);
		lh_graph_add_dep(g, d, r);
		g_snprintf(n, sizeof n, "experts.fwd%u", l);
		guint32 ex = add_kernel(g, n, 2 * S * 3 * H * (H / 2), 2 * act + w_exp / ep * ep,
					(guint64)act, FALSE);
		lh_graph_add_dep(g, ex, d);
		lh_graph_add_dep(g, ex, wg[l]);
		g_snprintf(n, sizeof n, "combine.fwd%u", l);
		guint32 c = add_xfer(g, n, LH_OP_ALL_TO_ALL, (guint64)act, ep);
		lh_graph_add_dep(g, c, ex);
		/* The layer's input activations go to host memory for the backward. */
		g_snprintf(n, sizeof n, "offload%u", l);
		off[l] = add_xfer(g, n, LH_OP_COPY_D2H, (guint64)(2 * act), 1);
		lh_graph_add_dep(g, off[l], a);
		saved[l] = a;
		x = c;
	}
	guint32 grad = add_kernel(g, "loss", 2 * S * H, 2 * act, (guint64)act, FALSE);
	lh_graph_add_dep(g, grad, x);
	for (guint32 k = L; k-- > 0;) {
		g_snprintf(n, sizeof n, "prefetch%u", k);
		guint32 pf = add_xfer(g, n, LH_OP_COPY_H2D, (guint64)(2 * act), 1);
		lh_graph_add_dep(g, pf, off[k]);
		g_snprintf(n, sizeof n, "ag.bwd%u", k);
		guint32 ag = add_xfer(g, n, LH_OP_ALL_GATHER, lh_graph_op(g, wg[k])->size, ep);
		lh_graph_add_dep(g, ag, wg[k]);
		g_snprintf(n, sizeof n, "bwd%u", k);
		guint32 b = add_kernel(g, n, 2 * 2 * S * (4 * H * H + 3 * H * H / 2),
				       6 * act + 2 * w_attn, (guint64)act, FALSE);
		lh_graph_add_dep(g, b, grad);
		lh_graph_add_dep(g, b, pf);
		lh_graph_add_dep(g, b, ag);
		lh_graph_add_dep(g, b, saved[k]);
		g_snprintf(n, sizeof n, "rs%u", k);
		guint32 rs = add_xfer(g, n, LH_OP_REDUCE_SCATTER, (guint64)(w_attn + w_exp), ep);
		lh_graph_add_dep(g, rs, b);
		grad = b;
	}
	g_free(saved);
	g_free(off);
	g_free(wg);
	GError *e = NULL;
	if (!lh_graph_finish(g, NULL, &e))
		g_error("moe-offload generator made a bad graph: %s", e->message); /* a bug */
	return g;
}

/* ---- registry ---- */

typedef struct {
	const char *name;
	const GenOpt *opts;
	LhGraph *(*gen)(const double *v);
	const char *summary;
} Workload;

static const Workload workloads[] = {
	{"moe-offload", moe_opts, gen_moe,
	 "DeepSeek-V3-like MoE layers with activation offloading to host (the default workload)"},
	{"random", random_opts, gen_random, "a seeded random layered DAG"},
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
		if (!parse_opts(name, workloads[i].opts, kv, v, error))
			return NULL;
		return workloads[i].gen(v);
	}
	GString *l = g_string_new(NULL);
	for (gsize i = 0; i < G_N_ELEMENTS(workloads); i++)
		g_string_append_printf(l, "%s%s", i ? ", " : "", workloads[i].name);
	g_set_error(error, LH_GEN_ERROR, LH_GEN_ERROR_UNKNOWN, "unknown workload '%s' (workloads: %s)",
		    name, l->str);
	g_string_free(l, TRUE);
	return NULL;
}
