/* lhsim — the workload graph. */
#include "sim/graph.h"
#include "sim/graph-private.h"
#include "sim/pages-private.h"

#include <math.h>
#include <string.h>

/* The quark's name is a string with dashes, which clang-format would space. */
/* clang-format off */
G_DEFINE_QUARK(lh-graph-error-quark, lh_graph_error)
/* clang-format on */

typedef struct {
	guint32 op, dep;
} DepPair;

/* Ops whose pages the helper makes present at a time (add_op): 4 MiB of them. */
#define OPS_AHEAD ((guint32)((4u << 20) / sizeof(LhOp)))

struct _LhGraph {
	char *name;
	GArray *ops; /* of LhOp; not cleared on growth: ops are appended whole */
	/* The op array's room ahead of the ops, made present by a helper while ops are added
	 * (add_op): the array holds room for ops_room ops, and more is handed over once ops_next
	 * ops are in. pages is joined before the array can move or be freed. */
	LhPages *pages;
	guint32 ops_room, ops_next;
	GStringChunk *strings;
	DepPair *pairs; /* while building (n_pairs of cap_pairs); freed at finish */
	guint32 n_pairs, cap_pairs;
	guint32 n_unique; /* ops added by lh__graph_add_op_unique */
	guint32 *deps;    /* CSR after finish, by op: deps of op i at ops[i].deps_at */
	guint32 *dep_at;  /* n_ops + 1 offsets into deps, after finish: the same rows as
	                     deps_at and n_deps, read without the op's 128-byte record */
	guint32 *succ_at; /* n_ops + 1 offsets into succs */
	guint32 *succs;
	guint32 *topo;
	gboolean finished;
	GMutex index_lock; /* guards the lazily built name index */
	GHashTable *index; /* name -> index + 1 */
	guint32 *schedule; /* XLA's sequence (lh_graph_schedule), or NULL */
	guint32 n_schedule;
	GArray *msets;          /* of LhMemberSet; dev arrays owned here */
	guint32 devices;        /* lh_graph_devices */
	gboolean placed;        /* lh_graph_placed */
	GPtrArray *sync_names;  /* of char * (in strings): rendezvous keys, by index */
	GHashTable *sync_index; /* key -> index + 1, while building */
	guint32 *sync_at;       /* after finish: n_syncs + 1 offsets into sync_ops */
	guint32 *sync_ops;      /* ops of each rendezvous, by device */
};

static const char *const kind_names[LH_OP_N_KINDS] = {
    "input",      "kernel",         "copy-h2d",   "copy-d2h",           "copy-d2d", "all-reduce",
    "all-gather", "reduce-scatter", "all-to-all", "collective-permute", "send",     "recv",
};

LhGraph *lh_graph_new(const char *name)
{
	LhGraph *g = g_new0(LhGraph, 1);
	g->name = g_strdup(name ? name : "graph");
	g->ops = g_array_new(FALSE, FALSE, sizeof(LhOp));
	g->ops_next = OPS_AHEAD;
	g->strings = g_string_chunk_new(4096);
	g_mutex_init(&g->index_lock);
	return g;
}

void lh_graph_free(LhGraph *g)
{
	if (!g)
		return;
	g_free(g->name);
	lh__pages_free(g->pages);
	g_array_unref(g->ops);
	g_string_chunk_free(g->strings);
	g_free(g->pairs);
	g_free(g->deps);
	g_free(g->dep_at);
	g_free(g->succ_at);
	g_free(g->succs);
	g_free(g->topo);
	if (g->msets) {
		for (guint i = 0; i < g->msets->len; i++)
			g_free((gpointer)g_array_index(g->msets, LhMemberSet, i).dev);
		g_array_unref(g->msets);
	}
	if (g->index)
		g_hash_table_unref(g->index);
	g_mutex_clear(&g->index_lock);
	g_free(g->schedule);
	if (g->sync_names)
		g_ptr_array_unref(g->sync_names);
	if (g->sync_index)
		g_hash_table_unref(g->sync_index);
	g_free(g->sync_at);
	g_free(g->sync_ops);
	g_free(g);
}

/* Large graphs are built an op at a time (the JSON reader, the generators): the op array,
 * 128 MB at 10^6 ops, grows by doubling, and each of its new pages faults on its first write,
 * which with the copies of the doubling made a fifth of `lhsim run` at 10^6 ops on the 2-core
 * VM (bench/README.md). Instead, once OPS_AHEAD ops are in, the array is given room ahead of
 * need and the page helper makes the next OPS_AHEAD to 2 OPS_AHEAD ops' pages present while the
 * caller fills the ones before: at most 2 OPS_AHEAD ops (8 MiB) are made present and unused. */
static void ops_ahead(LhGraph *g)
{
	/* Called when len reaches ops_next: the last call handed over up to len + OPS_AHEAD. */
	guint32 len = g->ops->len, from = len + OPS_AHEAD, want = len + 2 * OPS_AHEAD;
	if (want > g->ops_room) { /* always at the first call: no room yet */
		/* The array may move: the helper must be done with it first, and a copy's pages
		 * are new. */
		lh__pages_free(g->pages);
		g->pages = lh__pages_new();
		guint32 room = MAX(want, g->ops_room * 2);
		g_array_set_size(g->ops, room); /* not cleared: only makes room */
		g_array_set_size(g->ops, len);
		g->ops_room = room;
		from = len;
	}
	lh__pages_add(g->pages, &g_array_index(g->ops, LhOp, 0) + from,
	              (gsize)(want - from) * sizeof(LhOp));
	g->ops_next = len + OPS_AHEAD;
}

/* Appends an op named @name (the graph's own copy) with the defaults of @kind. */
static guint32 add_op(LhGraph *g, const char *name, LhOpKind kind)
{
	if (G_UNLIKELY(g->ops->len >= g->ops_next))
		ops_ahead(g);
	LhOp op = {0};
	op.name = name;
	op.kind = kind;
	op.sm = 1.0;
	op.group = 1;
	op.duration_ns = -1;
	op.alias = LH_NO_OP;
	op.out_space = kind == LH_OP_COPY_D2H ? LH_SPACE_HOST : LH_SPACE_DEVICE;
	op.async = kind != LH_OP_KERNEL && kind != LH_OP_INPUT;
	g_array_append_val(g->ops, op);
	return g->ops->len - 1;
}

guint32 lh_graph_add_op(LhGraph *g, const char *name, LhOpKind kind)
{
	g_return_val_if_fail(g && !g->finished && name && kind < LH_OP_N_KINDS, 0);
	/* Interned: equal names are one pointer, which is how lh_graph_finish finds duplicates. */
	return add_op(g, g_string_chunk_insert_const(g->strings, name), kind);
}

guint32 lh__graph_add_op_unique(LhGraph *g, const char *name, gsize len, LhOpKind kind)
{
	g_return_val_if_fail(g && !g->finished && name && kind < LH_OP_N_KINDS, 0);
	/* Not interned: interning costs a hash table of every name, which the caller (the JSON
	 * reader) already keeps; lh_graph_finish knows from n_unique not to look for duplicates
	 * by pointer. */
	g->n_unique++;
	return add_op(g, g_string_chunk_insert_len(g->strings, name, (gssize)len), kind);
}

LhOp *lh_graph_op_mut(LhGraph *g, guint32 i)
{
	g_return_val_if_fail(g && !g->finished && i < g->ops->len, NULL);
	return &g_array_index(g->ops, LhOp, i);
}

/* Durations are costs, not structure: a finished graph may take measured ones (a profile). */
void lh_graph_set_duration(LhGraph *g, guint32 i, gint64 duration_ns)
{
	g_return_if_fail(g && i < g->ops->len && duration_ns >= -1);
	g_array_index(g->ops, LhOp, i).duration_ns = duration_ns;
}

void lh_graph_set_opcode(LhGraph *g, guint32 i, const char *opcode)
{
	g_return_if_fail(g && i < g->ops->len);
	g_array_index(g->ops, LhOp, i).opcode =
	    opcode ? g_string_chunk_insert_const(g->strings, opcode) : NULL;
}

guint32 lh_graph_add_op_copy(LhGraph *g, const LhGraph *src, guint32 i, const char *name,
                             guint32 alias)
{
	g_return_val_if_fail(g && src && i < lh_graph_n_ops(src) && name, 0);
	const LhOp *op = lh_graph_op(src, i);
	guint32 id = lh_graph_add_op(g, name, op->kind);
	LhOp *o = lh_graph_op_mut(g, id);
	const char *own = o->name;
	*o = *op;
	o->name = own;
	o->opcode = NULL; /* a string of @src: copied below */
	o->n_deps = o->deps_at = 0;
	o->device = o->sync = 0;
	o->alias = alias;
	o->members = 0;
	const LhMemberSet *ms = lh_graph_op_members(src, op);
	if (ms)
		lh_graph_op_mut(g, id)->members =
		    1 +
		    lh_graph_add_member_set(g, ms->n_groups, ms->group_size, ms->pairs, ms->dev);
	if (op->opcode)
		lh_graph_set_opcode(g, id, op->opcode);
	return id;
}

void lh_graph_add_dep(LhGraph *g, guint32 op, guint32 dep)
{
	g_return_if_fail(g && !g->finished);
	if (G_UNLIKELY(g->n_pairs == g->cap_pairs)) {
		g->cap_pairs = MAX(2 * g->cap_pairs, 64);
		g->pairs = g_renew(DepPair, g->pairs, g->cap_pairs);
	}
	g->pairs[g->n_pairs++] = (DepPair){op, dep};
}

static int pair_cmp(const void *a, const void *b)
{
	const DepPair *x = a, *y = b;
	if (x->op != y->op)
		return x->op < y->op ? -1 : 1;
	return (x->dep > y->dep) - (x->dep < y->dep);
}

/* Whether two ops share a name pointer (names are interned: lh_graph_add_op). An LSD radix
 * sort of the pointers, 16 bits a pass. */
static gboolean has_duplicate_pointer(const LhOp *ops, guint32 n)
{
	g_autofree guintptr *a = g_new(guintptr, n);
	g_autofree guintptr *b = g_new(guintptr, n);
	g_autofree guint32 *count = g_new(guint32, 1 << 16);
	for (guint32 i = 0; i < n; i++)
		a[i] = (guintptr)ops[i].name;
	for (guint shift = 0; shift < 8 * sizeof(guintptr); shift += 16) {
		memset(count, 0, sizeof(guint32) << 16);
		for (guint32 i = 0; i < n; i++)
			count[(a[i] >> shift) & 0xffff]++;
		guint32 sum = 0;
		for (guint32 d = 0; d < 1u << 16; d++) {
			guint32 c = count[d];
			count[d] = sum;
			sum += c;
		}
		for (guint32 i = 0; i < n; i++)
			b[count[(a[i] >> shift) & 0xffff]++] = a[i];
		guintptr *t = a;
		a = b;
		b = t;
	}
	for (guint32 i = 1; i < n; i++)
		if (a[i] == a[i - 1])
			return TRUE;
	return FALSE;
}

static int name_cmp(const void *a, const void *b, void *data)
{
	const LhOp *ops = data;
	int c = strcmp(ops[*(const guint32 *)a].name, ops[*(const guint32 *)b].name);
	if (c)
		return c;
	return (*(const guint32 *)a > *(const guint32 *)b) -
	       (*(const guint32 *)a < *(const guint32 *)b);
}

static gboolean fail(GError **error, int code, const char *where, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);

static gboolean fail(GError **error, int code, const char *where, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error(error, LH_GRAPH_ERROR, code, "%s%s%s", where ? where : "", where ? ": " : "",
	            msg);
	return FALSE;
}

/* A member set: a collective's, in the table, of the op's group size (pairs: 2). */
static gboolean check_members(const LhGraph *g, const LhOp *op, const char *where, GError **error)
{
	if (!op->members)
		return TRUE;
	if (!lh_op_kind_is_collective(op->kind) || op->members > lh_graph_n_member_sets(g))
		return fail(error, LH_GRAPH_ERROR_INVALID, where,
		            "op '%s': member set %u is not a collective's set of the graph",
		            op->name, op->members - 1);
	const LhMemberSet *m = lh_graph_member_set(g, op->members - 1);
	guint32 want = m->pairs ? 2 : m->group_size;
	if (op->group != want)
		return fail(error, LH_GRAPH_ERROR_INVALID, where,
		            "op '%s': group %u disagrees with its members' groups of %u", op->name,
		            op->group, want);
	return TRUE;
}

static gboolean check_op(const LhOp *op, const char *where, GError **error)
{
	const char *n = op->name;
	if (!*n)
		return fail(error, LH_GRAPH_ERROR_INVALID, where, "an op has an empty name");
	if (!isfinite(op->flops) || op->flops < 0)
		return fail(error, LH_GRAPH_ERROR_INVALID, where,
		            "op '%s': flops must be finite and >= 0 (got %g)", n, op->flops);
	if (!isfinite(op->bytes) || op->bytes < 0)
		return fail(error, LH_GRAPH_ERROR_INVALID, where,
		            "op '%s': bytes must be finite and >= 0 (got %g)", n, op->bytes);
	if (!isfinite(op->sm) || op->sm <= 0 || op->sm > 1)
		return fail(error, LH_GRAPH_ERROR_INVALID, where,
		            "op '%s': sm must be in (0, 1] (got %g)", n, op->sm);
	if (op->duration_ns < -1)
		return fail(error, LH_GRAPH_ERROR_INVALID, where,
		            "op '%s': duration_ns must be >= 0 (got %" G_GINT64_FORMAT ")", n,
		            op->duration_ns);
	if (op->group < 1)
		return fail(error, LH_GRAPH_ERROR_INVALID, where, "op '%s': group must be >= 1", n);
	if (op->out_space > LH_SPACE_HOST)
		return fail(error, LH_GRAPH_ERROR_INVALID, where, "op '%s': bad out_space", n);
	if (op->dtype >= LH_DTYPE_N)
		return fail(error, LH_GRAPH_ERROR_INVALID, where, "op '%s': bad dtype %u", n,
		            op->dtype);
	gboolean gemm = op->gemm_m || op->gemm_n || op->gemm_k || op->gemm_batch;
	if (gemm && op->kind != LH_OP_KERNEL)
		return fail(error, LH_GRAPH_ERROR_INVALID, where,
		            "op '%s': only a kernel can be a GEMM (it is a %s)", n,
		            lh_op_kind_name(op->kind));
	if (gemm && (!op->gemm_m || !op->gemm_n || !op->gemm_k || !op->gemm_batch))
		return fail(
		    error, LH_GRAPH_ERROR_INVALID, where,
		    "op '%s': a GEMM needs batch, m, n and k all >= 1 (got %u, %" G_GUINT64_FORMAT
		    ", %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT ")",
		    n, op->gemm_batch, op->gemm_m, op->gemm_n, op->gemm_k);
	/* A GEMM's FLOP count 2*b*m*n*k must stay a finite double; bounding each factor by 2^40
	 * keeps the product below 2^161, far inside the double range. */
	if (gemm &&
	    (op->gemm_m > (1ull << 40) || op->gemm_n > (1ull << 40) || op->gemm_k > (1ull << 40)))
		return fail(error, LH_GRAPH_ERROR_INVALID, where,
		            "op '%s': a GEMM dimension is above 2^40", n);
	if (op->transpose && op->kind != LH_OP_KERNEL && op->kind != LH_OP_COPY_D2D)
		return fail(error, LH_GRAPH_ERROR_INVALID, where,
		            "op '%s': only a kernel or copy-d2d can transpose (it is a %s)", n,
		            lh_op_kind_name(op->kind));
	return TRUE;
}

void lh_graph_set_schedule(LhGraph *g, const guint32 *seq, guint32 n)
{
	g_return_if_fail(g && !g->finished);
	g_free(g->schedule);
	g->schedule = n ? g_memdup2(seq, sizeof(guint32) * n) : NULL;
	g->n_schedule = n;
}

const guint32 *lh_graph_schedule(const LhGraph *g, guint32 *n)
{
	*n = g->schedule ? g->n_schedule : 0;
	return g->schedule;
}

/* The schedule names every op once, and every async op's done once after its start. */
static gboolean check_schedule(const LhGraph *g, const char *where, GError **error)
{
	guint32 n = g->ops->len;
	const LhOp *ops = (const LhOp *)g->ops->data;
	g_autofree guint8 *seen = g_new0(guint8, n ? n : 1); /* bit 0 start, bit 1 done */
	for (guint32 k = 0; k < g->n_schedule; k++) {
		guint32 e = g->schedule[k], i = e >> 1;
		gboolean done = e & LH_SCHED_DONE;
		if (i >= n)
			return fail(error, LH_GRAPH_ERROR_INVALID, where,
			            "schedule[%u] refers to op #%u of %u", k, i, n);
		const char *nm = ops[i].name;
		if (done && !ops[i].async)
			return fail(error, LH_GRAPH_ERROR_INVALID, where,
			            "schedule[%u]: op '%s' is not async, so it has no done", k, nm);
		if (seen[i] & (done ? 2 : 1))
			return fail(error, LH_GRAPH_ERROR_INVALID, where,
			            "schedule[%u]: op '%s'%s appears twice", k, nm,
			            done ? "'s done" : "");
		if (done && !(seen[i] & 1))
			return fail(error, LH_GRAPH_ERROR_INVALID, where,
			            "schedule[%u]: the done of '%s' comes before its start", k, nm);
		seen[i] |= done ? 2 : 1;
	}
	for (guint32 i = 0; i < n; i++) {
		if (!(seen[i] & 1))
			return fail(error, LH_GRAPH_ERROR_INVALID, where,
			            "the schedule lacks op '%s'", ops[i].name);
		if (ops[i].async && !(seen[i] & 2))
			return fail(error, LH_GRAPH_ERROR_INVALID, where,
			            "the schedule lacks the done of async op '%s'", ops[i].name);
	}
	return TRUE;
}

/* Finds one cycle among the ops Kahn's algorithm could not order, for the error message. */
static int sync_op_cmp(const void *a, const void *b, void *data)
{
	const LhOp *ops = data;
	guint32 x = *(const guint32 *)a, y = *(const guint32 *)b;
	if (ops[x].device != ops[y].device)
		return ops[x].device < ops[y].device ? -1 : 1;
	return (x > y) - (x < y);
}

/* One rendezvous (docs/graph-format.md, "Several devices"): the parts of one collective, or a
 * send and its recv. */
static gboolean check_sync(const LhGraph *g, guint32 s, const char *where, GError **error)
{
	const LhOp *ops = (const LhOp *)g->ops->data;
	const guint32 *m = g->sync_ops + g->sync_at[s];
	guint32 k = g->sync_at[s + 1] - g->sync_at[s];
	const char *key = g_ptr_array_index(g->sync_names, s);
	if (k == 0)
		return TRUE; /* a key no op names */
	const LhOp *a = &ops[m[0]];
	for (guint32 j = 0; j < k; j++) {
		const LhOp *b = &ops[m[j]];
		if (!lh_op_kind_is_collective(b->kind))
			return fail(
			    error, LH_GRAPH_ERROR_INVALID, where,
			    "op '%s': sync '%s' is for collectives, send and recv, not a %s",
			    b->name, key, lh_op_kind_name(b->kind));
		if (j > 0 && b->device == ops[m[j - 1]].device)
			return fail(error, LH_GRAPH_ERROR_INVALID, where,
			            "ops '%s' and '%s' of sync '%s' are both on device %u",
			            ops[m[j - 1]].name, b->name, key, b->device);
		if (b->size != a->size)
			return fail(
			    error, LH_GRAPH_ERROR_INVALID, where,
			    "ops '%s' and '%s' of sync '%s' disagree on size (%" G_GUINT64_FORMAT
			    " and %" G_GUINT64_FORMAT " B)",
			    a->name, b->name, key, a->size, b->size);
	}
	gboolean p2p = a->kind == LH_OP_SEND || a->kind == LH_OP_RECV;
	if (p2p) {
		guint32 sends = 0, recvs = 0;
		for (guint32 j = 0; j < k; j++) {
			sends += ops[m[j]].kind == LH_OP_SEND;
			recvs += ops[m[j]].kind == LH_OP_RECV;
		}
		if (sends != 1 || recvs != 1 || k != 2)
			return fail(
			    error, LH_GRAPH_ERROR_INVALID, where,
			    "op '%s': sync '%s' must pair one send with one recv (it has %u "
			    "send%s and %u recv%s%s)",
			    a->name, key, sends, sends == 1 ? "" : "s", recvs,
			    recvs == 1 ? "" : "s", sends + recvs < k ? " and other ops" : "");
		return TRUE;
	}
	for (guint32 j = 1; j < k; j++)
		if (ops[m[j]].kind != a->kind)
			return fail(error, LH_GRAPH_ERROR_INVALID, where,
			            "ops '%s' and '%s' of sync '%s' disagree on kind (%s and %s)",
			            a->name, ops[m[j]].name, key, lh_op_kind_name(a->kind),
			            lh_op_kind_name(ops[m[j]].kind));
	for (guint32 j = 0; j < k; j++)
		if (ops[m[j]].group != k)
			return fail(error, LH_GRAPH_ERROR_INVALID, where,
			            "op '%s': group %u, but %u op%s share its sync '%s'",
			            ops[m[j]].name, ops[m[j]].group, k, k == 1 ? "" : "s", key);
	return TRUE;
}

/* Placement: devices in range, no dep across devices, rendezvous consistent; a graph without
 * placement names no device and no sync (@any_place: some op names one). Builds the
 * rendezvous' op lists. */
static gboolean check_placement(LhGraph *g, gboolean any_place, const char *where, GError **error)
{
	guint32 n = g->ops->len;
	const LhOp *ops = (const LhOp *)g->ops->data;
	guint32 ns = g->sync_names ? g->sync_names->len : 0;
	if (!g->placed) {
		for (guint32 i = 0; any_place && i < n; i++)
			if (ops[i].device || ops[i].sync)
				return fail(error, LH_GRAPH_ERROR_INVALID, where,
				            "op '%s' names a %s, but the graph is not placed on "
				            "devices",
				            ops[i].name, ops[i].device ? "device" : "sync");
		return TRUE;
	}
	if (g->devices < 1)
		return fail(error, LH_GRAPH_ERROR_INVALID, where,
		            "a graph placed on devices must say how many (devices >= 1)");
	for (guint32 i = 0; i < n; i++) {
		if (ops[i].device >= g->devices)
			return fail(error, LH_GRAPH_ERROR_INVALID, where,
			            "op '%s' is on device %u, but the graph declares %u device%s",
			            ops[i].name, ops[i].device, g->devices,
			            g->devices == 1 ? "" : "s");
		if (ops[i].sync > ns)
			return fail(error, LH_GRAPH_ERROR_INVALID, where,
			            "op '%s': sync %u is not one of the graph's", ops[i].name,
			            ops[i].sync - 1);
		for (guint32 k = 0; k < ops[i].n_deps; k++) {
			guint32 d = g->deps[ops[i].deps_at + k];
			if (ops[d].device != ops[i].device)
				return fail(
				    error, LH_GRAPH_ERROR_INVALID, where,
				    "op '%s' on device %u depends on '%s' on device %u: "
				    "devices meet only at a sync (a collective, or a send and "
				    "its recv)",
				    ops[i].name, ops[i].device, ops[d].name, ops[d].device);
		}
		if ((ops[i].kind == LH_OP_SEND || ops[i].kind == LH_OP_RECV) && !ops[i].sync)
			return fail(error, LH_GRAPH_ERROR_INVALID, where,
			            "%s '%s' has no sync: in a graph placed on devices, a send "
			            "and its recv name the same sync",
			            lh_op_kind_name(ops[i].kind), ops[i].name);
	}
	g->sync_at = g_new0(guint32, (gsize)ns + 1);
	for (guint32 i = 0; i < n; i++)
		if (ops[i].sync)
			g->sync_at[ops[i].sync]++;
	for (guint32 s = 0; s < ns; s++)
		g->sync_at[s + 1] += g->sync_at[s];
	g->sync_ops = g_new(guint32, g->sync_at[ns] ? g->sync_at[ns] : 1);
	g_autofree guint32 *fill = g_memdup2(g->sync_at, sizeof(guint32) * ((gsize)ns + 1));
	for (guint32 i = 0; i < n; i++)
		if (ops[i].sync)
			g->sync_ops[fill[ops[i].sync - 1]++] = i;
	for (guint32 s = 0; s < ns; s++) {
		g_qsort_with_data(g->sync_ops + g->sync_at[s], g->sync_at[s + 1] - g->sync_at[s],
		                  sizeof(guint32), sync_op_cmp, (gpointer)ops);
		if (!check_sync(g, s, where, error))
			return FALSE;
	}
	if (g->sync_index) {
		g_hash_table_unref(g->sync_index);
		g->sync_index = NULL;
	}
	return TRUE;
}

static char *describe_cycle(const LhGraph *g, const guint32 *indeg)
{
	guint32 n = g->ops->len;
	const LhOp *ops = (const LhOp *)g->ops->data;
	/* Walk backwards along deps that are still blocked: every such op has a blocked dep, so
	 * the walk must revisit an op; the ops from its first visit on form a cycle. */
	guint32 start = 0;
	while (start < n && indeg[start] == 0)
		start++;
	g_autofree guint32 *seen = g_new(guint32, n);
	for (guint32 i = 0; i < n; i++)
		seen[i] = G_MAXUINT32;
	g_autoptr(GArray) path = g_array_new(FALSE, FALSE, sizeof(guint32));
	guint32 v = start;
	while (seen[v] == G_MAXUINT32) {
		seen[v] = path->len;
		g_array_append_val(path, v);
		const LhOp *op = &ops[v];
		guint32 next = v;
		for (guint32 k = 0; k < op->n_deps; k++) {
			guint32 d = g->deps[op->deps_at + k];
			if (indeg[d] > 0) {
				next = d;
				break;
			}
		}
		v = next;
	}
	GString *s = g_string_new(NULL);
	/* path[seen[v]..] is the cycle in dep direction; print it in execution order. */
	for (guint32 i = path->len; i-- > seen[v];)
		g_string_append_printf(s, "'%s' -> ", ops[g_array_index(path, guint32, i)].name);
	g_string_append_printf(s, "'%s'", ops[g_array_index(path, guint32, path->len - 1)].name);
	return g_string_free(s, FALSE);
}

/* Deps to CSR (g->deps, by op from @at[i] to @at[i + 1]), each op's deps sorted and without
 * repeats, and every op's n_deps and deps_at set; successors counted into @succ_at[d + 1].
 * The errors are those of the pairs sorted by (op, dep), the first of them: a dep out of
 * range, an op that depends on itself. One pass over the ops (the op array is the largest
 * thing here, at 10^6 ops every pass over it costs about as much as the rest). */
static gboolean deps_to_csr(LhGraph *g, guint32 *at, guint32 *succ_at, const char *where,
                            GError **error)
{
	guint32 n = g->ops->len, np = g->n_pairs;
	LhOp *ops = (LhOp *)g->ops->data;
	DepPair *pairs = g->pairs;
	for (guint32 k = 0; k < np; k++)
		if (pairs[k].op >= n) { /* no bucket for it: sort, and report the first error */
			qsort(pairs, np, sizeof(DepPair), pair_cmp);
			for (k = 0; k < np; k++) {
				if (pairs[k].op >= n || pairs[k].dep >= n)
					break;
				if (pairs[k].op == pairs[k].dep)
					return fail(error, LH_GRAPH_ERROR_CYCLE, where,
					            "op '%s' depends on itself",
					            ops[pairs[k].op].name);
			}
			return fail(error, LH_GRAPH_ERROR_INVALID, where,
			            "a dep refers to op #%u of %u", MAX(pairs[k].op, pairs[k].dep),
			            n);
		}
	/* Buckets by op (a counting sort): end[i] = at[i + 1] after the scatter. */
	guint32 *end = at + 1;
	memset(at, 0, sizeof(guint32) * ((gsize)n + 1));
	for (guint32 k = 0; k < np; k++)
		if (pairs[k].op + 1 < n)
			at[pairs[k].op + 2]++;
	for (guint32 i = 1; i < n; i++)
		end[i] += end[i - 1];
	guint32 *dep = g_new(guint32, np ? np : 1);
	for (guint32 k = 0; k < np; k++)
		dep[end[pairs[k].op]++] = pairs[k].dep;
	g_free(g->pairs);
	g->pairs = NULL;
	g->n_pairs = g->cap_pairs = 0;
	/* Per op: sort its few deps by insertion, check them, drop repeats (in place: the kept
	 * ones never overtake the read position). */
	guint32 m = 0;
	for (guint32 i = 0, s = 0; i < n; s = end[i], i++) {
		guint32 e = end[i];
		for (guint32 k = s + 1; k < e; k++) {
			guint32 v = dep[k], j = k;
			for (; j > s && dep[j - 1] > v; j--)
				dep[j] = dep[j - 1];
			dep[j] = v;
		}
		guint32 first = m;
		for (guint32 k = s; k < e; k++) {
			guint32 d = dep[k];
			if (d >= n) {
				g_free(dep);
				return fail(error, LH_GRAPH_ERROR_INVALID, where,
				            "a dep refers to op #%u of %u", d, n);
			}
			if (d == i) {
				g_free(dep);
				return fail(error, LH_GRAPH_ERROR_CYCLE, where,
				            "op '%s' depends on itself", ops[i].name);
			}
			if (k > s && d == dep[k - 1])
				continue;
			dep[m++] = d;
			succ_at[d + 1]++;
		}
		at[i] = first; /* end[i - 1] is read: the slot is free */
		ops[i].n_deps = m - first;
		ops[i].deps_at = m > first ? first : 0;
	}
	at[n] = m;
	g->deps = dep;
	return TRUE;
}

/* lh_graph_finish's topological order into g->topo (allocated): smallest index first among
 * ready ops (a binary min-heap); the cycle error when there is one. @at: the CSR offsets. */
static gboolean topo_sort(LhGraph *g, const guint32 *at, const char *where, GError **error)
{
	guint32 n = g->ops->len;
	g_autofree guint32 *indeg = g_new(guint32, n ? n : 1);
	g_autofree guint32 *heap = g_new(guint32, n ? n : 1);
	guint32 hn = 0;
	for (guint32 i = 0; i < n; i++) {
		indeg[i] = at[i + 1] - at[i];
		if (indeg[i] == 0)
			heap[hn++] = i; /* ascending: already a heap */
	}
	guint32 done = 0;
	while (hn) {
		guint32 v = heap[0];
		heap[0] = heap[--hn];
		for (guint32 i = 0;;) { /* sift down */
			guint32 l = 2 * i + 1, r = l + 1, s = i;
			if (l < hn && heap[l] < heap[s])
				s = l;
			if (r < hn && heap[r] < heap[s])
				s = r;
			if (s == i)
				break;
			guint32 t = heap[i];
			heap[i] = heap[s];
			heap[s] = t;
			i = s;
		}
		g->topo[done++] = v;
		for (guint32 k = g->succ_at[v]; k < g->succ_at[v + 1]; k++) {
			guint32 w = g->succs[k];
			if (--indeg[w] == 0) {
				guint32 i = hn++;
				heap[i] = w;
				while (i > 0 && heap[(i - 1) / 2] > heap[i]) { /* sift up */
					guint32 t = heap[i];
					heap[i] = heap[(i - 1) / 2];
					heap[(i - 1) / 2] = t;
					i = (i - 1) / 2;
				}
			}
		}
	}
	if (done < n) {
		g_autofree char *cyc = describe_cycle(g, indeg);
		return fail(error, LH_GRAPH_ERROR_CYCLE, where, "the deps form a cycle: %s", cyc);
	}
	return TRUE;
}

gboolean lh_graph_finish(LhGraph *g, const char *where, GError **error)
{
	g_return_val_if_fail(g && !g->finished, FALSE);
	lh__pages_free(g->pages); /* no more ops */
	g->pages = NULL;
	guint32 n = g->ops->len;
	LhOp *ops = (LhOp *)g->ops->data;

	/* Whether any op has an alias, a device or a sync: the checks of those further down
	 * then need not pass over every op again. */
	gboolean any_alias = FALSE, any_place = FALSE;
	for (guint32 i = 0; i < n; i++) {
		if (!check_op(&ops[i], where, error) || !check_members(g, &ops[i], where, error))
			return FALSE;
		any_alias |= ops[i].alias != LH_NO_OP;
		any_place |= (ops[i].device | ops[i].sync) != 0;
	}

	/* Duplicate names, found by sorting instead of a hash table to keep finished graphs
	 * small; the index for lh_graph_find() is built on demand. Names are interned (equal names
	 * are one pointer), so a radix sort of the pointers finds whether there is one in O(n);
	 * only then does the sort by name find the one to report. */
	gboolean maybe_dup = g->n_unique == n   ? FALSE /* the caller checked */
	                     : g->n_unique == 0 ? n > 1 && has_duplicate_pointer(ops, n)
	                                        : TRUE; /* a mix: names of both kinds */
	if (maybe_dup) {
		g_autofree guint32 *ord = g_new(guint32, n);
		for (guint32 i = 0; i < n; i++)
			ord[i] = i;
		g_qsort_with_data(ord, n, sizeof(guint32), name_cmp, ops);
		for (guint32 i = 1; i < n; i++)
			if (strcmp(ops[ord[i]].name, ops[ord[i - 1]].name) == 0)
				return fail(error, LH_GRAPH_ERROR_INVALID, where,
				            "duplicate op name '%s'", ops[ord[i]].name);
	}

	/* Deps to CSR, deduplicated, and successors. */
	guint32 *at = g->dep_at = g_new(guint32, (gsize)n + 1);
	g->succ_at = g_new0(guint32, (gsize)n + 1);
	if (!deps_to_csr(g, at, g->succ_at, where, error))
		return FALSE;
	guint32 m = at[n];
	for (guint32 i = 0; i < n; i++)
		g->succ_at[i + 1] += g->succ_at[i];
	g->succs = g_new(guint32, m ? m : 1);
	g_autofree guint32 *fill = g_memdup2(g->succ_at, sizeof(guint32) * ((gsize)n + 1));
	gboolean in_order = TRUE; /* every dep an earlier op */
	for (guint32 i = 0; i < n; i++)
		for (guint32 k = at[i]; k < at[i + 1]; k++) {
			guint32 d = g->deps[k];
			g->succs[fill[d]++] = i;
			in_order &= d < i;
		}

	/* Topological order, smallest index first among ready ops, so that it is program order
	 * whenever program order is already topological. When every dep is an earlier op, that is
	 * program order itself (once ops 0 .. k-1 are taken, op k is ready and the smallest
	 * left), without the heap. */
	g->topo = g_new(guint32, n ? n : 1);
	if (in_order) {
		for (guint32 i = 0; i < n; i++)
			g->topo[i] = i;
	} else if (!topo_sort(g, at, where, error)) {
		return FALSE;
	}
	/* An alias names one of the op's own deps: the buffer it writes in place. */
	for (guint32 i = 0; any_alias && i < n; i++) {
		if (ops[i].alias == LH_NO_OP)
			continue;
		gboolean found = FALSE;
		for (guint32 k = 0; k < ops[i].n_deps && !found; k++)
			found = g->deps[ops[i].deps_at + k] == ops[i].alias;
		if (!found)
			return fail(error, LH_GRAPH_ERROR_INVALID, where,
			            "op '%s': alias '%s' must be one of its deps", ops[i].name,
			            ops[i].alias < n ? ops[ops[i].alias].name : "(out of range)");
		if (ops[ops[i].alias].out_space != ops[i].out_space)
			return fail(error, LH_GRAPH_ERROR_INVALID, where,
			            "op '%s': alias '%s' is in %s memory, the op's output in %s",
			            ops[i].name, ops[ops[i].alias].name,
			            lh_space_name(ops[ops[i].alias].out_space),
			            lh_space_name(ops[i].out_space));
	}
	if (g->schedule && !check_schedule(g, where, error))
		return FALSE;
	if (!check_placement(g, any_place, where, error))
		return FALSE;
	g->finished = TRUE;
	return TRUE;
}

gboolean lh_graph_is_finished(const LhGraph *g)
{
	return g && g->finished;
}

const char *lh_graph_name(const LhGraph *g)
{
	return g->name;
}

void lh_graph_set_name(LhGraph *g, const char *name)
{
	g_free(g->name);
	g->name = g_strdup(name ? name : "graph");
}

guint32 lh_graph_n_ops(const LhGraph *g)
{
	return g->ops->len;
}

const LhOp *lh_graph_op(const LhGraph *g, guint32 i)
{
	g_return_val_if_fail(i < g->ops->len, NULL);
	return &g_array_index(g->ops, LhOp, i);
}

const guint32 *lh_graph_deps(const LhGraph *g, guint32 i, guint32 *n)
{
	g_return_val_if_fail(g->finished && i < g->ops->len, NULL);
	*n = g->dep_at[i + 1] - g->dep_at[i];
	return g->deps + g->dep_at[i];
}

const guint32 *lh_graph_succs(const LhGraph *g, guint32 i, guint32 *n)
{
	g_return_val_if_fail(g->finished && i < g->ops->len, NULL);
	*n = g->succ_at[i + 1] - g->succ_at[i];
	return g->succs + g->succ_at[i];
}

const guint32 *lh_graph_topo(const LhGraph *g)
{
	g_return_val_if_fail(g->finished, NULL);
	return g->topo;
}

gboolean lh_graph_find(const LhGraph *g, const char *name, guint32 *index)
{
	LhGraph *mg = (LhGraph *)g; /* the index is a cache; the graph itself is unchanged */
	g_mutex_lock(&mg->index_lock);
	if (!mg->index || g_hash_table_size(mg->index) != g->ops->len) {
		if (!mg->index)
			mg->index = g_hash_table_new(g_str_hash, g_str_equal);
		for (guint32 i = g_hash_table_size(mg->index); i < g->ops->len; i++)
			g_hash_table_insert(mg->index,
			                    (gpointer)g_array_index(g->ops, LhOp, i).name,
			                    GUINT_TO_POINTER(i + 1));
	}
	gpointer v = g_hash_table_lookup(mg->index, name);
	g_mutex_unlock(&mg->index_lock);
	if (!v)
		return FALSE;
	if (index)
		*index = GPOINTER_TO_UINT(v) - 1;
	return TRUE;
}

const char *lh_op_kind_name(LhOpKind k)
{
	return k < LH_OP_N_KINDS ? kind_names[k] : "?";
}

gboolean lh_op_kind_from_name(const char *s, LhOpKind *out)
{
	for (int k = 0; k < LH_OP_N_KINDS; k++)
		if (strcmp(s, kind_names[k]) == 0) {
			*out = k;
			return TRUE;
		}
	return FALSE;
}

gboolean lh_op_kind_is_copy(LhOpKind k)
{
	return k == LH_OP_COPY_H2D || k == LH_OP_COPY_D2H;
}

gboolean lh_op_kind_is_collective(LhOpKind k)
{
	return k >= LH_OP_ALL_REDUCE && k <= LH_OP_RECV;
}

LhOpClass lh_op_class(const LhOp *op)
{
	switch ((LhOpKind)op->kind) {
	case LH_OP_ALL_REDUCE:
	case LH_OP_ALL_GATHER:
	case LH_OP_REDUCE_SCATTER:
	case LH_OP_ALL_TO_ALL:
	case LH_OP_COLLECTIVE_PERMUTE:
		return LH_CLASS_COLLECTIVE;
	case LH_OP_SEND:
	case LH_OP_RECV:
		return LH_CLASS_P2P;
	case LH_OP_COPY_H2D:
	case LH_OP_COPY_D2H:
		return LH_CLASS_ASYNC_COMPUTE;
	case LH_OP_COPY_D2D:
		return LH_CLASS_MEMCPY;
	case LH_OP_KERNEL:
		return op->async ? LH_CLASS_ASYNC_COMPUTE : LH_CLASS_NONE;
	default:
		return LH_CLASS_NONE;
	}
}

const char *lh_op_class_name(LhOpClass c)
{
	static const char *const names[LH_CLASS_N] = {"none", "collective", "p2p", "async-compute",
	                                              "memcpy"};
	return c < LH_CLASS_N ? names[c] : "?";
}

static const char *const dtype_names[LH_DTYPE_N] = {
    "", "f64", "f32", "tf32", "bf16", "f16", "fp8", "int8",
};

const char *lh_dtype_name(LhDtype d)
{
	return d < LH_DTYPE_N ? dtype_names[d] : "?";
}

gboolean lh_dtype_from_name(const char *s, LhDtype *out)
{
	for (int d = 1; d < LH_DTYPE_N; d++)
		if (strcmp(s, dtype_names[d]) == 0) {
			*out = d;
			return TRUE;
		}
	return FALSE;
}

const char *lh_space_name(LhSpace s)
{
	return s == LH_SPACE_HOST ? "host" : "device";
}

double lh_op_wire_bytes(const LhOp *op)
{
	double n = op->group, size = (double)op->size;
	switch ((LhOpKind)op->kind) {
	case LH_OP_ALL_REDUCE:
		return 2.0 * (n - 1) / n * size;
	case LH_OP_ALL_GATHER:
	case LH_OP_REDUCE_SCATTER:
	case LH_OP_ALL_TO_ALL:
		return (n - 1) / n * size;
	case LH_OP_COLLECTIVE_PERMUTE:
	case LH_OP_SEND:
	case LH_OP_RECV:
		return size;
	default:
		return 0;
	}
}

const LhOp *lh__graph_ops(const LhGraph *g)
{
	return (const LhOp *)g->ops->data;
}

const guint32 *lh__graph_dep_array(const LhGraph *g)
{
	return g->deps;
}

const guint32 *lh__graph_dep_at(const LhGraph *g)
{
	return g->dep_at;
}

guint32 lh_graph_add_member_set(LhGraph *g, guint32 n_groups, guint32 group_size, gboolean pairs,
                                const guint32 *dev)
{
	if (!g->msets)
		g->msets = g_array_new(FALSE, FALSE, sizeof(LhMemberSet));
	gsize n = (gsize)n_groups * group_size;
	/* Modules repeat the same replica groups on many collectives: share one copy. */
	for (guint i = 0; i < g->msets->len; i++) {
		const LhMemberSet *m = &g_array_index(g->msets, LhMemberSet, i);
		if (m->n_groups == n_groups && m->group_size == group_size && m->pairs == pairs &&
		    (n == 0 || memcmp(m->dev, dev, n * sizeof *dev) == 0))
			return i;
	}
	LhMemberSet m = {n_groups, group_size, pairs, g_memdup2(dev, n * sizeof *dev)};
	g_array_append_val(g->msets, m);
	return g->msets->len - 1;
}

guint32 lh_graph_n_member_sets(const LhGraph *g)
{
	return g->msets ? g->msets->len : 0;
}

const LhMemberSet *lh_graph_member_set(const LhGraph *g, guint32 index)
{
	g_return_val_if_fail(g->msets && index < g->msets->len, NULL);
	return &g_array_index(g->msets, LhMemberSet, index);
}

const LhMemberSet *lh_graph_op_members(const LhGraph *g, const LhOp *op)
{
	if (!g || !op->members || !g->msets || op->members > g->msets->len)
		return NULL;
	return &g_array_index(g->msets, LhMemberSet, op->members - 1);
}

void lh_graph_set_devices(LhGraph *g, guint32 devices)
{
	g->devices = devices;
}

guint32 lh_graph_devices(const LhGraph *g)
{
	return g->devices;
}

void lh_graph_set_placed(LhGraph *g, gboolean placed)
{
	g_return_if_fail(g && !g->finished);
	g->placed = placed;
}

gboolean lh_graph_placed(const LhGraph *g)
{
	return g->placed;
}

guint32 lh_graph_sync_add(LhGraph *g, const char *key)
{
	g_return_val_if_fail(g && !g->finished && key, 0);
	if (!g->sync_names) {
		g->sync_names = g_ptr_array_new();
		g->sync_index = g_hash_table_new(g_str_hash, g_str_equal);
	}
	gpointer v = g_hash_table_lookup(g->sync_index, key);
	if (v)
		return GPOINTER_TO_UINT(v) - 1;
	char *k = g_string_chunk_insert_const(g->strings, key);
	g_ptr_array_add(g->sync_names, k);
	g_hash_table_insert(g->sync_index, k, GUINT_TO_POINTER(g->sync_names->len));
	return g->sync_names->len - 1;
}

guint32 lh_graph_n_syncs(const LhGraph *g)
{
	return g->sync_names ? g->sync_names->len : 0;
}

const char *lh_graph_sync_name(const LhGraph *g, guint32 index)
{
	g_return_val_if_fail(g->sync_names && index < g->sync_names->len, NULL);
	return g_ptr_array_index(g->sync_names, index);
}

const guint32 *lh_graph_sync_ops(const LhGraph *g, guint32 index, guint32 *n)
{
	g_return_val_if_fail(g->finished && g->sync_names && index < g->sync_names->len, NULL);
	if (!g->sync_at) { /* not placed: no op names a sync */
		*n = 0;
		return NULL;
	}
	*n = g->sync_at[index + 1] - g->sync_at[index];
	return g->sync_ops + g->sync_at[index];
}
