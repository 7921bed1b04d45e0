/* lhsim — XLA HLO text import: lowering the parsed module to ops. See hlo.h for what becomes
 * what. */
#include "models/hlo-private.h"
#include "sim/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The value of an instruction: the ops it depends on, kept per tuple element so that a
 * get-tuple-element of a loop's state depends only on what produced that element. */
typedef struct _Val Val;
struct _Val {
	gboolean tuple;
	guint n;
	guint stamp; /* last val_flatten that visited it: shared sub-values are walked once */
	guint32 buf; /* leaf: the op whose output buffer holds the value, LH_NO_OP if none */
	union {
		guint32 *ops; /* leaf: op indices */
		Val **sub;    /* tuple */
	};
};

typedef struct {
	Parser *ps;
	LhGraph *g;
	GPtrArray *pool;     /* every Val and array allocated, freed at the end */
	GHashTable *names;   /* used op names */
	GHashTable *unknown; /* unknown opcodes, for one warning */
	GPtrArray *warnings;
	GArray *dep_scratch;
	guint stamp;
	guint32 n_ops;
	GPtrArray *op_deps; /* per op: its deps, a leaf Val (sorted op indices) */
	GArray *param_op;   /* entry parameter number -> its input op (LH_NO_OP if none) */
	GArray *sched;      /* XLA's sequence as emitted (graph.h: op << 1 | LH_SCHED_DONE) */
	GArray *done;       /* per op: 1 once its done is in sched */
} Emit;

static Val *val_leaf(Emit *em, const guint32 *ops, guint n)
{
	Val *v = g_new0(Val, 1);
	g_ptr_array_add(em->pool, v);
	v->n = n;
	v->buf = LH_NO_OP;
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
		return hlo_fail_at(em->ps, in->at, "the graph would exceed %u ops (loops unrolled)",
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
	g_ptr_array_add(em->op_deps, d);
	guint32 e = id << 1;
	g_array_append_val(em->sched, e);
	guint8 zero = 0;
	g_array_append_val(em->done, zero);
	*out = id;
	return TRUE;
}

/* Puts op @id's done into the sequence here, once (an async op's *-done instruction, or right
 * after a synchronous one). */
static void sched_done(Emit *em, guint32 id)
{
	if (id == LH_NO_OP || g_array_index(em->done, guint8, id) || !lh_graph_op(em->g, id)->async)
		return;
	g_array_index(em->done, guint8, id) = 1;
	guint32 e = id << 1 | LH_SCHED_DONE;
	g_array_append_val(em->sched, e);
}

/* The value of a new op: its own output buffer. */
static Val *val_op(Emit *em, guint32 id)
{
	Val *v = val_leaf(em, &id, 1);
	v->buf = id;
	return v;
}

static gboolean has_dep(Emit *em, guint32 op, guint32 dep)
{
	const Val *d = em->op_deps->pdata[op];
	guint lo = 0, hi = d->n;
	while (lo < hi) {
		guint mid = (lo + hi) / 2;
		if (d->ops[mid] == dep)
			return TRUE;
		if (d->ops[mid] < dep)
			lo = mid + 1;
		else
			hi = mid;
	}
	return FALSE;
}

/* Makes op @id write its output into the buffer that holds @v (docs/hlo.md, "Buffers"): only
 * if that buffer is one op's, a dep of @id, in the same memory space and at least as large.
 * Returns whether it did. */
static gboolean set_alias(Emit *em, guint32 id, const Val *v)
{
	if (!v || v->tuple || v->buf == LH_NO_OP || v->buf == id || !has_dep(em, id, v->buf))
		return FALSE;
	const LhOp *b = lh_graph_op(em->g, v->buf);
	LhOp *o = lh_graph_op_mut(em->g, id);
	if (o->alias != LH_NO_OP || o->kind == LH_OP_INPUT || b->out_space != o->out_space ||
	    b->out_bytes < o->out_bytes)
		return FALSE;
	o->alias = v->buf;
	return TRUE;
}

typedef enum { XFER_NONE, XFER_D2H, XFER_H2D } Xfer;

/* A transfer between device and host memory, judged from where the output and the operands
 * (@opnds, @n of them; NULL entries are skipped) live. */
static Xfer host_xfer(const Shape *out, const Shape *const *opnds, guint n, double *size)
{
	gboolean out_host = out && hlo_shape_any_host(out);
	double dev_max = 0;
	gboolean any_host = FALSE;
	for (guint i = 0; i < n; i++) {
		if (!opnds[i])
			continue;
		if (hlo_shape_any_host(opnds[i]))
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
	const char *v = hlo_attr_get(in, "replica_groups");
	if (v && v[0] == '[') {
		gint64 d[MAX_RANK];
		const char *e = strstr(v, "<=");
		g_autofree char *head = g_strndup(v, e ? (gsize)(e - v) : strlen(v));
		guint n = hlo_int_list(head, d, MAX_RANK);
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
		const Shape *o = hlo_shape_largest(out);
		return o ? o->bytes : 0;
	}
	double b = 0;
	/* ragged-all-to-all(input, output, input_offsets, send_sizes, output_offsets,
	 * recv_sizes): only `input` is sent, the rest is the destination buffer and index
	 * arrays (XLA's operation semantics, "RaggedAllToAll"); at most the whole input moves. */
	guint n_sent =
	    in->ops && strcmp(in->opcode, "ragged-all-to-all") == 0 && in->operands->len > 0
	        ? 1
	        : (in->ops ? in->operands->len : 0);
	for (guint k = 0; k < n_sent; k++)
		b += ((Instr *)c->instrs->pdata[in->ops[k]])->shape.bytes;
	if (b == 0) {
		const Shape *o = hlo_shape_largest(out);
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
	const char *bc = hlo_attr_get(w, "backend_config");
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
	const char *dir = hlo_attr_get(root, "direction");
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
	const char *ix = hlo_attr_get(a, "index");
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
		Instr *x = body->instrs->pdata[inc->ops[s]],
		      *y = body->instrs->pdata[inc->ops[1 - s]];
		if (strcmp(x->opcode, "get-tuple-element") == 0 && x->ops &&
		    strcmp(((Instr *)body->instrs->pdata[x->ops[0]])->opcode, "parameter") == 0 &&
		    hlo_attr_get(x, "index") &&
		    g_ascii_strtoll(hlo_attr_get(x, "index"), NULL, 10) == idx &&
		    strcmp(y->opcode, "constant") == 0 && y->literal &&
		    strcmp(y->literal, "1") == 0)
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

/* One instruction being emitted: its operands' values and its deps (operands, then
 * control-predecessors). */
typedef struct {
	Emit *em;
	Comp *c;
	Instr *in;
	guint i;    /* its index in c */
	Val **vals; /* the computation's values; the family sets vals[i] */
	Val **opv;  /* operand values, n of them */
	guint n;
	Val **dv; /* deps, dn of them: the operands first */
	guint dn;
	Val *const *args; /* the computation's arguments */
	guint n_args;
	const char *suffix; /* "@k" per loop iteration */
	int depth;
} Ins;

typedef enum { EMIT_FAIL, EMIT_DONE, EMIT_PASS } EmitResult;

static EmitResult done_if(gboolean ok)
{
	return ok ? EMIT_DONE : EMIT_FAIL;
}

/* Adds the op of @x with all of its deps and makes it the instruction's value. */
static gboolean new_op(Ins *x, LhOpKind kind, const char *opcode, guint32 *id)
{
	if (!add_op(x->em, x->in, x->suffix, kind, opcode, x->dv, x->dn, id))
		return FALSE;
	x->vals[x->i] = val_op(x->em, *id);
	return TRUE;
}

/* @v with the deps beyond the operands (control-predecessors) folded in. */
static Val *with_control(Ins *x, Val *v)
{
	if (x->dn <= x->n || !v)
		return v;
	Val *pair[2] = {v, val_flatten(x->em, x->dv + x->n, x->dn - x->n)};
	Val *r = val_flatten(x->em, pair, 2);
	if (!v->tuple)
		r->buf = v->buf; /* still the same buffer */
	return r;
}

/* An input: a buffer that exists from the start (an entry parameter, AllocateBuffer). */
static gboolean new_input(Ins *x, const char *opcode)
{
	guint32 id;
	if (!add_op(x->em, x->in, x->suffix, LH_OP_INPUT, opcode, NULL, 0, &id))
		return FALSE;
	LhOp *o = lh_graph_op_mut(x->em->g, id);
	o->out_bytes = to_u64(x->in->shape.bytes);
	o->out_space = hlo_shape_any_host(&x->in->shape) ? LH_SPACE_HOST : LH_SPACE_DEVICE;
	x->vals[x->i] = val_op(x->em, id);
	return TRUE;
}

/* Instructions without an op of their own: parameters, constants, tuples, get-tuple-element,
 * bitcasts, dones. Their users depend on what produced their operands. */
static EmitResult emit_free(Ins *x)
{
	Emit *em = x->em;
	Instr *in = x->in;
	const char *op = in->opcode;
	if (strcmp(op, "parameter") == 0) {
		gint num = atoi(in->operands->pdata[0]);
		if (x->depth == 0) {
			if (!new_input(x, NULL))
				return EMIT_FAIL;
			guint32 none = LH_NO_OP;
			while ((guint)num >= em->param_op->len)
				g_array_append_val(em->param_op, none);
			g_array_index(em->param_op, guint32, num) = x->vals[x->i]->buf;
			return EMIT_DONE;
		}
		x->vals[x->i] =
		    (guint)num < x->n_args && x->args[num] ? x->args[num] : val_leaf(em, NULL, 0);
		return EMIT_DONE;
	}
	if (strcmp(op, "constant") == 0 || strcmp(op, "partition-id") == 0 ||
	    strcmp(op, "replica-id") == 0 || strcmp(op, "iota") == 0 ||
	    strcmp(op, "rng-get-and-update-state") == 0) {
		if (strcmp(op, "iota") == 0 && in->shape.bytes > (1 << 20))
			return EMIT_PASS; /* a large iota is a real kernel */
		x->vals[x->i] = val_flatten(em, x->dv, x->dn);
		return EMIT_DONE;
	}
	if (strcmp(op, "tuple") == 0) {
		Val *t = val_tuple(em, x->n);
		for (guint k = 0; k < x->n; k++)
			t->sub[k] = with_control(x, x->opv[k]);
		x->vals[x->i] = t;
		return EMIT_DONE;
	}
	if (strcmp(op, "get-tuple-element") == 0) {
		Val *v = x->n ? x->opv[0] : NULL;
		const char *ix = hlo_attr_get(in, "index");
		gint64 k = ix ? g_ascii_strtoll(ix, NULL, 10) : -1;
		if (!ix)
			return done_if(hlo_fail_at(
			    em->ps, in->at, "get-tuple-element '%s' without index=", in->name));
		if (v && v->tuple && k >= 0 && k < (gint64)v->n)
			v = v->sub[k];
		else if (!v)
			v = val_leaf(em, NULL, 0);
		x->vals[x->i] = with_control(x, v);
		return EMIT_DONE;
	}
	if (strcmp(op, "bitcast") == 0 || strcmp(op, "optimization-barrier") == 0 ||
	    strcmp(op, "opt-barrier") == 0 || strcmp(op, "domain") == 0 ||
	    strcmp(op, "add-dependency") == 0 || strcmp(op, "after-all") == 0 ||
	    strcmp(op, "async-update") == 0 || g_str_has_suffix(op, "-done") ||
	    strcmp(op, "get-dimension-size") == 0 || hlo_transpose_is_bitcast(x->c, in)) {
		/* Pass-through: a done is its start's op; a bitcast (or a transpose that is one)
		 * is its operand. */
		if (x->n == 1 && x->dn == 1 && strcmp(op, "after-all") != 0)
			x->vals[x->i] = x->opv[0];
		else
			x->vals[x->i] = val_flatten(em, x->dv, x->dn);
		if (g_str_has_suffix(op, "-done") && x->n >= 1 && !x->opv[0]->tuple)
			sched_done(em, x->opv[0]->buf); /* where XLA waits for it */
		return EMIT_DONE;
	}
	return EMIT_PASS;
}

/* Custom-calls that are buffers or host transfers rather than kernels. */
static EmitResult emit_custom_call(Ins *x)
{
	const char *t = hlo_attr_get(x->in, "custom_call_target");
	if (!t)
		return EMIT_PASS;
	if (strcmp(t, "\"AllocateBuffer\"") == 0)
		return done_if(new_input(x, "custom-call:AllocateBuffer"));
	gboolean to_host = strcmp(t, "\"MoveToHost\"") == 0;
	if (!to_host && strcmp(t, "\"MoveToDevice\"") != 0)
		return EMIT_PASS;
	guint32 id;
	if (!new_op(x, to_host ? LH_OP_COPY_D2H : LH_OP_COPY_H2D,
	            to_host ? "custom-call:MoveToHost" : "custom-call:MoveToDevice", &id))
		return EMIT_FAIL;
	LhOp *o = lh_graph_op_mut(x->em->g, id);
	o->size = to_u64(x->in->shape.bytes);
	o->out_bytes = o->size;
	return EMIT_DONE;
}

/* XLA keeps a while loop's state in one set of buffers: the body's root writes element k
 * where the parameter's element k was (HloAliasAnalysis puts the while's operand, the body's
 * parameter and root, and the while's result in one buffer). So an op of iteration @first..
 * that makes element k of the new state reuses the old element's buffer when it reads it. */
static void alias_loop_state(Emit *em, const Val *old, const Val *next, guint32 first)
{
	if (!old || !next || !old->tuple || !next->tuple || old->n != next->n)
		return;
	for (guint k = 0; k < next->n; k++) {
		const Val *nv = next->sub[k];
		if (nv && !nv->tuple && nv->buf != LH_NO_OP && nv->buf >= first)
			set_alias(em, nv->buf, old->sub[k]);
	}
}

/* A while loop, unrolled by its trip count; its value is the last iteration's state. */
static EmitResult emit_while(Ins *x)
{
	Emit *em = x->em;
	Parser *ps = em->ps;
	Instr *in = x->in;
	Comp *body = hlo_called(ps, in, "body"), *cond = hlo_called(ps, in, "condition");
	if (!body || !cond)
		return done_if(hlo_fail_at(
		    ps, in->at, "while '%s' needs body= and condition= naming computations",
		    in->name));
	gint64 trips = trip_count(x->c, in, cond, body);
	gint64 runs = trips;
	if (trips < 0) {
		int line, col;
		hlo_pos_of(ps->data, ps->len, in->at, &line, &col);
		if (em->warnings)
			g_ptr_array_add(em->warnings,
			                g_strdup_printf("%s:%d:%d: while '%s': unknown trip count, "
			                                "its body is imported once",
			                                ps->where, line, col, in->name));
		runs = 1;
	}
	/* Divide rather than multiply: a huge trip count must not wrap around. */
	if (runs < 0 || (body->instrs->len && runs > (gint64)MAX_OPS / (gint64)body->instrs->len))
		return done_if(hlo_fail_at(ps, in->at,
		                           "while '%s' runs %" G_GINT64_FORMAT
		                           " times: too many ops to unroll",
		                           in->name, runs));
	Val *state = with_control(x, x->n ? x->opv[0] : val_leaf(em, NULL, 0));
	for (gint64 it = 0; it < runs; it++) {
		g_autofree char *sfx = g_strdup_printf("%s@%" G_GINT64_FORMAT, x->suffix, it);
		Val *next = NULL;
		guint32 first = em->n_ops;
		if (!emit_comp(em, body, &state, 1, sfx, x->depth + 1, &next))
			return EMIT_FAIL;
		alias_loop_state(em, state, next, first);
		state = next;
	}
	x->vals[x->i] = state;
	return EMIT_DONE;
}

/* A call: its computation inlined. */
static EmitResult emit_call(Ins *x)
{
	Comp *f = hlo_called(x->em->ps, x->in, "to_apply");
	if (!f)
		return done_if(hlo_fail_at(x->em->ps, x->in->at,
		                           "call '%s' needs to_apply= naming a computation",
		                           x->in->name));
	Val *r = NULL;
	if (!emit_comp(x->em, f, x->opv, x->n, x->suffix, x->depth + 1, &r))
		return EMIT_FAIL;
	x->vals[x->i] = r;
	return EMIT_DONE;
}

/* A collective's group is its member set's group size, where the module says who takes part
 * (the two agree but for cross-replica-and-partition groups, which hold every partition). */
static void group_from_members(const LhGraph *g, LhOp *o)
{
	const LhMemberSet *m = lh_graph_op_members(g, o);
	if (m && !m->pairs)
		o->group = m->group_size;
}

/* Collectives (synchronous or *-start), send and recv. */
static EmitResult emit_collective(Ins *x)
{
	Instr *in = x->in;
	const char *op = in->opcode;
	LhOpKind ck;
	char base[64];
	g_strlcpy(base, op, sizeof base);
	if (g_str_has_suffix(base, "-start"))
		base[strlen(base) - 6] = '\0';
	guint32 id;
	if (collective_kind(base, &ck)) {
		if (!new_op(x, ck, op, &id))
			return EMIT_FAIL;
		LhOp *o = lh_graph_op_mut(x->em->g, id);
		o->size = to_u64(collective_size(x->c, in, ck, &in->shape));
		o->group = group_size(x->em->ps, in, ck);
		if (!hlo_members(x->em->ps, in, ck, x->em->g, &o->members))
			return EMIT_FAIL;
		o = lh_graph_op_mut(x->em->g, id);
		group_from_members(x->em->g, o);
		const Shape *os =
		    g_str_has_suffix(op, "-start") ? hlo_shape_largest(&in->shape) : &in->shape;
		o->out_bytes = to_u64(os ? os->bytes : 0);
		return EMIT_DONE;
	}
	if (strcmp(op, "send") == 0 || strcmp(op, "recv") == 0) {
		gboolean send = op[0] == 's';
		if (!new_op(x, send ? LH_OP_SEND : LH_OP_RECV, op, &id))
			return EMIT_FAIL;
		LhOp *o = lh_graph_op_mut(x->em->g, id);
		const Shape *data = hlo_shape_first_array(&in->shape);
		o->size = to_u64(data ? data->bytes : 0);
		o->group = 2;
		if (!hlo_members(x->em->ps, in, send ? LH_OP_SEND : LH_OP_RECV, x->em->g,
		                 &o->members))
			return EMIT_FAIL;
		o = lh_graph_op_mut(x->em->g, id);
		o->out_bytes = send ? 0 : o->size;
		return EMIT_DONE;
	}
	return EMIT_PASS;
}

/* copy-start, and a copy between device and host memory; other copies are kernels. */
static EmitResult emit_copy(Ins *x)
{
	const char *op = x->in->opcode;
	gboolean is_copy = strcmp(op, "copy") == 0;
	const Shape *dst = is_copy ? &x->in->shape : hlo_shape_first_array(&x->in->shape);
	const Shape *src = hlo_operand_shape(x->c, x->in, 0);
	double size = 0;
	Xfer xf = host_xfer(dst, &src, src ? 1 : 0, &size);
	if (xf == XFER_NONE && is_copy)
		return EMIT_PASS;
	LhOpKind k = xf == XFER_D2H   ? LH_OP_COPY_D2H
	             : xf == XFER_H2D ? LH_OP_COPY_H2D
	                              : LH_OP_COPY_D2D;
	guint32 id;
	if (!new_op(x, k, op, &id))
		return EMIT_FAIL;
	LhOp *o = lh_graph_op_mut(x->em->g, id);
	o->size = to_u64(xf != XFER_NONE ? size : dst ? dst->bytes : 0);
	o->out_bytes = to_u64(dst ? dst->bytes : 0);
	o->transpose = k == LH_OP_COPY_D2D && hlo_copy_moves_minor(src, dst);
	return EMIT_DONE;
}

/* async-start: an async collective, a host transfer, or an async kernel. */
static EmitResult emit_async_start(Ins *x)
{
	Emit *em = x->em;
	Parser *ps = em->ps;
	Comp *f = hlo_called(ps, x->in, "calls");
	if (!f)
		return done_if(hlo_fail_at(ps, x->in->at,
		                           "async-start '%s' needs calls= naming a computation",
		                           x->in->name));
	Instr *root = f->instrs->pdata[f->root];
	const Shape *out = &root->shape;
	LhOpKind ck;
	guint32 id;
	g_autofree char *oc = g_strdup_printf("async:%s", root->opcode);
	if (collective_kind(root->opcode, &ck)) {
		if (!new_op(x, ck, root->opcode, &id))
			return EMIT_FAIL;
		LhOp *o = lh_graph_op_mut(em->g, id);
		o->size = to_u64(collective_size(f, root, ck, out));
		o->group = group_size(ps, root, ck);
		if (!hlo_members(ps, root, ck, em->g, &o->members))
			return EMIT_FAIL;
		o = lh_graph_op_mut(em->g, id);
		group_from_members(em->g, o);
		o->out_bytes = to_u64(out->bytes);
		return EMIT_DONE;
	}
	double size = 0;
	Xfer xf = comp_xfer(f, &size);
	if (xf == XFER_NONE && strcmp(root->opcode, "fusion") == 0) {
		Comp *ff = hlo_called(ps, root, "calls");
		if (ff)
			xf = comp_xfer(ff, &size);
	}
	if (xf != XFER_NONE) {
		if (!new_op(x, xf == XFER_D2H ? LH_OP_COPY_D2H : LH_OP_COPY_H2D, oc, &id))
			return EMIT_FAIL;
		LhOp *o = lh_graph_op_mut(em->g, id);
		o->size = to_u64(size);
		o->out_bytes = to_u64(xf == XFER_D2H ? size : out->bytes);
		return EMIT_DONE;
	}
	/* An async computation on a parallel stream: an async kernel, with the traits of its
	 * root (a GEMM, a transpose). */
	HloTraits t;
	if (!hlo_kernel_traits(ps, f, root, &t))
		return EMIT_FAIL;
	if (!new_op(x, LH_OP_KERNEL, oc, &id))
		return EMIT_FAIL;
	LhOp *o = lh_graph_op_mut(em->g, id);
	o->dtype = (guint8)t.dtype;
	o->gemm_batch = t.batch;
	o->gemm_m = t.m;
	o->gemm_n = t.n;
	o->gemm_k = t.k;
	o->transpose = (guint8)t.transpose;
	o->flops = fin(hlo_comp_flops(ps, f, 0));
	double b = out->bytes;
	for (gint k = 0; k < f->n_params; k++)
		if (f->param_of[k] >= 0)
			b += ((Instr *)f->instrs->pdata[f->param_of[k]])->shape.bytes;
	o->bytes = fin(b);
	o->async = TRUE;
	o->out_bytes = to_u64(out->bytes);
	return EMIT_DONE;
}

/* A fusion or dynamic-(update-)slice that moves data between device and host memory. */
static EmitResult emit_host_transfer(Ins *x)
{
	Instr *in = x->in;
	const char *op = in->opcode;
	double size = 0;
	Xfer xf = XFER_NONE;
	if (strcmp(op, "fusion") == 0) {
		Comp *f = hlo_called(x->em->ps, in, "calls");
		xf = f ? comp_xfer(f, &size) : XFER_NONE;
	} else if (strcmp(op, "dynamic-update-slice") == 0 || strcmp(op, "dynamic-slice") == 0) {
		g_autofree const Shape **os = g_new(const Shape *, MAX(x->n, 1));
		for (guint k = 0; k < x->n; k++)
			os[k] = hlo_operand_shape(x->c, in, k);
		xf = host_xfer(&in->shape, os, x->n, &size);
	}
	if (xf == XFER_NONE)
		return EMIT_PASS;
	guint32 id;
	if (!new_op(x, xf == XFER_D2H ? LH_OP_COPY_D2H : LH_OP_COPY_H2D, op, &id))
		return EMIT_FAIL;
	LhOp *o = lh_graph_op_mut(x->em->g, id);
	o->size = to_u64(size);
	o->out_bytes = to_u64(in->shape.bytes);
	return EMIT_DONE;
}

/* The opcode text of a kernel: "fusion:kLoop", "custom-call:TARGET" or the opcode. */
static char *kernel_opcode(const Instr *in)
{
	const char *op = in->opcode;
	if (strcmp(op, "fusion") == 0) {
		const char *kind = hlo_attr_get(in, "kind");
		return g_strdup_printf("fusion:%s", kind ? kind : "?");
	}
	if (strcmp(op, "custom-call") != 0)
		return g_strdup(op);
	const char *t = hlo_attr_get(in, "custom_call_target");
	g_autofree char *tt = t ? g_strdup(t) : g_strdup("?");
	if (tt[0] == '"')
		memmove(tt, tt + 1, strlen(tt));
	gsize l = strlen(tt);
	if (l && tt[l - 1] == '"')
		tt[l - 1] = '\0';
	return g_strdup_printf("custom-call:%s", tt);
}

/* Everything else that computes: a kernel costed from shapes (hlo-cost.c). */
static gboolean emit_kernel(Ins *x)
{
	Instr *in = x->in;
	const char *op = in->opcode;
	if (!hlo_is_known(op) && !g_str_has_suffix(op, "-start"))
		g_hash_table_add(x->em->unknown, (gpointer)op);
	g_autofree char *oc = kernel_opcode(in);
	HloTraits t;
	if (!hlo_kernel_traits(x->em->ps, x->c, in, &t))
		return FALSE;
	guint32 id;
	if (!new_op(x, LH_OP_KERNEL, oc, &id))
		return FALSE;
	LhOp *o = lh_graph_op_mut(x->em->g, id);
	o->flops = fin(hlo_instr_flops(x->em->ps, x->c, in, 0));
	o->bytes = fin(hlo_instr_bytes(x->em->ps, x->c, in));
	o->dtype = (guint8)t.dtype;
	o->gemm_batch = t.batch;
	o->gemm_m = t.m;
	o->gemm_n = t.n;
	o->gemm_k = t.k;
	o->transpose = (guint8)t.transpose;
	set_out(x->em, id, in->shape.bytes);
	return TRUE;
}

/* The element of value @v at shape index @idx (n numbers); NULL if @v has no such element. */
static const Val *val_at(const Val *v, const gint64 *idx, guint n)
{
	for (guint k = 0; v && k < n; k++) {
		if (!v->tuple)
			return v; /* an op with a tuple output: the op's whole buffer */
		v = idx[k] >= 0 && idx[k] < (gint64)v->n ? v->sub[idx[k]] : NULL;
	}
	return v;
}

/* The bytes of element @idx of shape @s; 0 if there is none. */
static double shape_bytes_at(const Shape *s, const gint64 *idx, guint n)
{
	for (guint k = 0; k < n; k++) {
		if (!s->tuple || idx[k] < 0 || idx[k] >= (gint64)s->n_sub)
			return 0;
		s = &s->sub[idx[k]];
	}
	return s->bytes;
}

/* In-place outputs (docs/hlo.md, "Buffers"): a dynamic-update-slice writes into its operand
 * 0; a fusion or async computation whose root is one writes into that operand;
 * output_to_operand_aliasing names the operand whose buffer the output (or an element of it)
 * reuses. A whole output that aliases sets the op's alias; an element that aliases is taken
 * out of out_bytes. */
static gboolean alias_rules(Ins *x, guint32 id)
{
	Emit *em = x->em;
	Instr *in = x->in;
	if (strcmp(in->opcode, "dynamic-update-slice") == 0 && x->n >= 2)
		set_alias(em, id, x->opv[0]);
	if (strcmp(in->opcode, "fusion") == 0 || strcmp(in->opcode, "async-start") == 0) {
		Comp *f = hlo_called(em->ps, in, "calls");
		gint k = f ? hlo_in_place_param(f, NULL) : -1;
		if (k >= 0 && (guint)k < x->n)
			set_alias(em, id, x->opv[k]);
	}
	for (guint a = 0; in->attrs && a < in->attrs->len; a++) {
		const Attr *at = &g_array_index(in->attrs, Attr, a);
		if (strcmp(at->key, "output_to_operand_aliasing") != 0)
			continue;
		g_autoptr(GArray) list = g_array_new(FALSE, FALSE, sizeof(HloAlias));
		if (!hlo_parse_aliases(em->ps, at->value, at->at + strlen(at->key) + 1, list))
			return FALSE;
		for (guint e = 0; e < list->len; e++) {
			const HloAlias *al = &g_array_index(list, HloAlias, e);
			if (al->operand >= (gint64)x->n)
				return hlo_fail_at(
				    em->ps, al->at,
				    "output_to_operand_aliasing names operand %" G_GINT64_FORMAT
				    " of '%s', which has %u",
				    al->operand, in->name, x->n);
			const Val *src = val_at(x->opv[al->operand], al->index, al->n_index);
			if (al->n_out == 0) {
				set_alias(em, id, src);
				continue;
			}
			LhOp *o = lh_graph_op_mut(em->g, id);
			if (o->alias != LH_NO_OP)
				continue;
			guint64 part = to_u64(shape_bytes_at(&in->shape, al->out, al->n_out));
			o->out_bytes -= MIN(part, o->out_bytes);
		}
	}
	return TRUE;
}

/* Emits one instruction; sets vals[i]. */
static gboolean emit_instr(Emit *em, Comp *c, guint i, Val **vals, Val *const *args, guint n_args,
                           const char *suffix, int depth)
{
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
	const char *cp = hlo_attr_get(in, "control-predecessors");
	if (cp) {
		g_auto(GStrv) parts = g_strsplit_set(cp, "{}, %", -1);
		for (char **p = parts; *p; p++) {
			if (!**p)
				continue;
			gpointer v = g_hash_table_lookup(c->index, *p);
			if (!v)
				return hlo_fail_at(em->ps, in->at,
				                   "unknown control-predecessor '%s' of '%s'", *p,
				                   in->name);
			Val *pv = vals[GPOINTER_TO_INT(v) - 1];
			if (pv)
				g_ptr_array_add(deps, pv);
		}
	}
	guint32 before = em->n_ops;
	Ins x = {.em = em,
	         .c = c,
	         .in = in,
	         .i = i,
	         .vals = vals,
	         .opv = opv,
	         .n = n,
	         .dv = (Val **)deps->pdata,
	         .dn = deps->len,
	         .args = args,
	         .n_args = n_args,
	         .suffix = suffix,
	         .depth = depth};
	EmitResult r = emit_free(&x);
	if (r == EMIT_PASS && strcmp(op, "custom-call") == 0)
		r = emit_custom_call(&x);
	if (r == EMIT_PASS && strcmp(op, "while") == 0)
		r = emit_while(&x);
	if (r == EMIT_PASS && strcmp(op, "call") == 0)
		r = emit_call(&x);
	if (r == EMIT_PASS)
		r = emit_collective(&x);
	if (r == EMIT_PASS && (strcmp(op, "copy-start") == 0 || strcmp(op, "copy") == 0))
		r = emit_copy(&x);
	if (r == EMIT_PASS && strcmp(op, "async-start") == 0)
		r = emit_async_start(&x);
	if (r == EMIT_PASS)
		r = emit_host_transfer(&x);
	if (r == EMIT_PASS)
		r = done_if(emit_kernel(&x));
	if (r != EMIT_DONE)
		return FALSE;
	/* An op of this instruction's own: the buffer rules, and a synchronous op's done. */
	Val *v = vals[i];
	if (em->n_ops > before && v && !v->tuple && v->buf == em->n_ops - 1) {
		if (!alias_rules(&x, v->buf))
			return FALSE;
		if (!g_str_has_suffix(op, "-start") && strcmp(op, "send") != 0 &&
		    strcmp(op, "recv") != 0)
			sched_done(em, v->buf);
	}
	return TRUE;
}

/* Emits computation @c with argument values @args, in a topological order that follows the
 * text where operands allow (with is_scheduled=true the text is the schedule). */
static gboolean emit_comp(Emit *em, Comp *c, Val *const *args, guint n_args, const char *suffix,
                          int depth, Val **result)
{
	if (depth > MAX_DEPTH)
		return hlo_fail_at(em->ps, c->at, "computations nested too deeply");
	if (c->busy)
		return hlo_fail_at(em->ps, c->at, "computation '%s' calls itself", c->name);
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
					ok = hlo_fail_at(
					    em->ps, in->at,
					    "'%s' depends on itself through its operands",
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

/* The header's input_output_alias: output element {i} of the entry is written into
 * parameter p's buffer (a donated buffer). The op that makes that element aliases p's input
 * op; it gets p as a dep if it lacks it (an input is ready at t = 0, so this orders nothing). */
static gboolean alias_io(Emit *em, const Val *root)
{
	Parser *ps = em->ps;
	if (!ps->io_alias)
		return TRUE;
	g_autoptr(GArray) list = g_array_new(FALSE, FALSE, sizeof(HloAlias));
	if (!hlo_parse_aliases(ps, ps->io_alias, ps->io_alias_at, list))
		return FALSE;
	for (guint e = 0; e < list->len; e++) {
		const HloAlias *al = &g_array_index(list, HloAlias, e);
		if (al->operand >= (gint64)em->param_op->len ||
		    g_array_index(em->param_op, guint32, al->operand) == LH_NO_OP)
			return hlo_fail_at(ps, al->at,
			                   "input_output_alias names parameter %" G_GINT64_FORMAT
			                   ", which the entry computation does not have",
			                   al->operand);
		guint32 p = g_array_index(em->param_op, guint32, al->operand);
		const Val *v = val_at(root, al->out, al->n_out);
		if (al->n_index || !v || v->tuple || v->buf == LH_NO_OP || v->buf == p)
			continue;
		if (lh_graph_op(em->g, v->buf)->kind == LH_OP_INPUT)
			continue;
		if (!has_dep(em, v->buf, p)) {
			lh_graph_add_dep(em->g, v->buf, p);
			Val *pv = val_op(em, p);
			Val *pair[2] = {em->op_deps->pdata[v->buf], pv};
			em->op_deps->pdata[v->buf] = val_flatten(em, pair, 2);
		}
		Val pv = {.n = 1, .buf = p};
		set_alias(em, v->buf, &pv);
	}
	return TRUE;
}

/* qsort over an array of strings: the elements are char *, qsort passes their addresses. */
static int cmp_str_ptr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether any computation has a fusion. */
static gboolean has_fusion(const Parser *ps)
{
	for (guint c = 0; c < ps->comps->len; c++) {
		const Comp *comp = ps->comps->pdata[c];
		for (guint i = 0; i < comp->instrs->len; i++)
			if (strcmp(((Instr *)comp->instrs->pdata[i])->opcode, "fusion") == 0)
				return TRUE;
	}
	return FALSE;
}

LhGraph *lh_hlo_import_data(const char *data, gsize len, const char *where, GPtrArray *warnings,
                            GError **error)
{
	g_return_val_if_fail(data != NULL || len == 0, NULL);
	if (!where)
		where = "<hlo>";
	Parser ps = {.data = data ? data : "", .len = len, .where = where};
	if (!hlo_parse_module(&ps)) {
		g_propagate_error(error, g_steal_pointer(&ps.error));
		hlo_parser_clear(&ps);
		return NULL;
	}
	Emit em = {.ps = &ps};
	em.g = lh_graph_new(ps.module_name ? ps.module_name : ps.entry->name);
	em.pool = g_ptr_array_new_with_free_func(g_free);
	em.names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	em.unknown = g_hash_table_new(g_str_hash, g_str_equal);
	em.warnings = warnings;
	em.dep_scratch = g_array_new(FALSE, FALSE, sizeof(guint32));
	em.op_deps = g_ptr_array_new();
	em.param_op = g_array_new(FALSE, FALSE, sizeof(guint32));
	em.sched = g_array_new(FALSE, FALSE, sizeof(guint32));
	em.done = g_array_new(FALSE, FALSE, sizeof(guint8));
	Val *root = NULL;
	gboolean ok = emit_comp(&em, ps.entry, NULL, 0, "", 0, &root) && alias_io(&em, root);
	if (ok && g_hash_table_size(em.unknown) && warnings) {
		g_autofree gpointer *keys = g_hash_table_get_keys_as_array(em.unknown, NULL);
		guint nk = g_hash_table_size(em.unknown);
		qsort(keys, nk, sizeof *keys, cmp_str_ptr);
		GString *s = g_string_new(NULL);
		g_string_append_printf(
		    s, "%s: unknown opcodes imported as memory-bound kernels:", where);
		for (guint i = 0; i < nk; i++)
			g_string_append_printf(s, "%s %s", i ? "," : "", (char *)keys[i]);
		g_ptr_array_add(warnings, g_string_free(s, FALSE));
	}
	if (ok && warnings && !ps.scheduled && !has_fusion(&ps))
		/* Flags: xla/debug_options_flags.cc (xla_dump_to, xla_dump_hlo_as_text); the
		 * optimized module is the dump whose name ends in after_optimizations.txt. */
		g_ptr_array_add(
		    warnings,
		    g_strdup_printf("%s: the module looks unoptimized (no fusions, not "
		                    "scheduled): XLA fuses, lays out and schedules it before it "
		                    "runs, so costs will differ; dump the optimized module with "
		                    "XLA_FLAGS=\"--xla_dump_to=DIR --xla_dump_hlo_as_text\" and "
		                    "import DIR/*after_optimizations.txt",
		                    where));
	if (ok && ps.scheduled) {
		/* Every async op has its done: one whose *-done never came (its start's value was
		 * never waited for) ends with the sequence. */
		for (guint32 id = 0; id < em.n_ops; id++)
			sched_done(&em, id);
		lh_graph_set_schedule(em.g, (const guint32 *)em.sched->data, em.sched->len);
	}
	g_array_unref(em.done);
	g_array_unref(em.sched);
	g_array_unref(em.param_op);
	g_ptr_array_unref(em.op_deps);
	g_array_unref(em.dep_scratch);
	g_hash_table_unref(em.unknown);
	g_hash_table_unref(em.names);
	g_ptr_array_unref(em.pool);
	if (!ok) {
		g_propagate_error(error, g_steal_pointer(&ps.error));
		hlo_parser_clear(&ps);
		lh_graph_free(em.g);
		return NULL;
	}
	/* The devices: num_partitions x replica_count where the module says, else the most any
	 * member set names. */
	guint32 devices = 0;
	if (ps.num_partitions > 0 || ps.replica_count > 0)
		devices = (guint32)MIN((guint64)MAX(ps.num_partitions, 1) *
		                           (guint64)MAX(ps.replica_count, 1),
		                       G_MAXUINT32);
	for (guint32 k = 0; k < lh_graph_n_member_sets(em.g); k++) {
		const LhMemberSet *m = lh_graph_member_set(em.g, k);
		for (gsize i = 0; i < (gsize)m->n_groups * m->group_size; i++)
			devices = MAX(devices, m->dev[i] + 1);
	}
	lh_graph_set_devices(em.g, devices);
	hlo_parser_clear(&ps);
	if (!lh_graph_finish(em.g, where, error)) {
		lh_graph_free(em.g);
		return NULL;
	}
	return em.g;
}

LhGraph *lh_hlo_import_file(const char *path, GPtrArray *warnings, GError **error)
{
	g_return_val_if_fail(path != NULL, NULL);
	g_autoptr(GError) e = NULL;
	g_autoptr(GBytes) bytes = lh_file_bytes(path, &e); /* mapped where it can be */
	if (!bytes) {
		g_set_error(error, LH_GRAPH_ERROR, LH_GRAPH_ERROR_IO, "%s: %s", path, e->message);
		return NULL;
	}
	gsize len = 0;
	const char *data = g_bytes_get_data(bytes, &len);
	return lh_hlo_import_data(data, len, path, warnings, error);
}
