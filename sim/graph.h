/* lhsim — the workload graph (docs/design.md#graph).
 *
 * An LhGraph is a DAG of ops kept in program order. It owns every string and array it hands
 * out: pointers returned by the accessors stay valid until the graph is freed and must not
 * be freed by the caller. A graph is built with lh_graph_add_op() and lh_graph_add_dep(),
 * then sealed with lh_graph_finish(), which checks it (acyclic, sane numbers) and builds the
 * successor lists. Only a finished graph may be given to schedulers, the engine or writers.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define LH_GRAPH_ERROR (lh_graph_error_quark())
GQuark lh_graph_error_quark(void);

typedef enum {
	LH_GRAPH_ERROR_PARSE,   /* syntax of the file */
	LH_GRAPH_ERROR_INVALID, /* a field or structure that breaks docs/graph-format.md */
	LH_GRAPH_ERROR_CYCLE,   /* the deps form a cycle */
	LH_GRAPH_ERROR_IO,      /* cannot read or write the file */
} LhGraphError;

typedef enum {
	LH_OP_INPUT,
	LH_OP_KERNEL,
	LH_OP_COPY_H2D,
	LH_OP_COPY_D2H,
	LH_OP_COPY_D2D,
	LH_OP_ALL_REDUCE,
	LH_OP_ALL_GATHER,
	LH_OP_REDUCE_SCATTER,
	LH_OP_ALL_TO_ALL,
	LH_OP_COLLECTIVE_PERMUTE,
	LH_OP_SEND,
	LH_OP_RECV,
	LH_OP_N_KINDS
} LhOpKind;

typedef enum {
	LH_SPACE_DEVICE,
	LH_SPACE_HOST,
} LhSpace;

/* The resource class an async op occupies while in flight, as XLA's GPU backend groups them.
 * Derived from kind and the async flag by lh_op_class(). */
typedef enum {
	LH_CLASS_NONE,          /* a kernel on the main stream, or an input */
	LH_CLASS_COLLECTIVE,    /* all-reduce, all-gather, reduce-scatter, all-to-all, permute */
	LH_CLASS_P2P,           /* send, recv */
	LH_CLASS_ASYNC_COMPUTE, /* copy-h2d, copy-d2h (host offload) and async kernels */
	LH_CLASS_MEMCPY,        /* copy-d2d */
	LH_CLASS_N
} LhOpClass;

/* The element type a kernel's math runs in, which picks the hardware's peak (docs/hw-format.md).
 * LH_DTYPE_NONE means unknown: the bf16/f16 peak, as for a graph written before dtypes. */
typedef enum {
	LH_DTYPE_NONE,
	LH_DTYPE_F64,
	LH_DTYPE_F32,  /* full f32 math (XLA precision HIGHEST) */
	LH_DTYPE_TF32, /* f32 operands on tensor cores with a 10-bit mantissa */
	LH_DTYPE_BF16,
	LH_DTYPE_F16,
	LH_DTYPE_FP8,
	LH_DTYPE_INT8,
	LH_DTYPE_N
} LhDtype;

/* "No op" in index fields (alias). */
#define LH_NO_OP G_MAXUINT32

/* One op. Fields a kind does not use are 0. Strings belong to the graph. */
typedef struct {
	const char *name;   /* unique within the graph */
	const char *opcode; /* optional: the source's opcode or fusion kind ("fusion:kLoop",
	                       "convolution", "custom-call"); NULL when unknown */
	double flops;       /* kernels: floating-point operations */
	double bytes;       /* kernels: HBM bytes read + written */
	double sm;          /* kernels: fraction of SMs usable, 0 < sm <= 1 (default 1) */
	guint64 size;       /* copies and collectives: bytes moved (collectives: full buffer) */
	guint64 out_bytes;  /* size of the output buffer */
	gint64 duration_ns; /* measured standalone duration overriding the model; -1 if unset */
	guint64 gemm_m;     /* kernels that are GEMMs (dots, convolutions as implicit GEMM): rows */
	guint64 gemm_n;     /* ... columns */
	guint64 gemm_k;     /* ... contraction length; all three 0 when the kernel is not a GEMM */
	guint32 gemm_batch; /* ... independent GEMMs of that shape (>= 1 for a GEMM, else 0) */
	guint32 alias;      /* the op (a dep) whose output buffer this op's output reuses in place
	                       (docs/graph-format.md, "Buffers"); LH_NO_OP when it allocates */
	guint32 group;      /* collectives: participating devices (>= 1) */
	guint32 members;    /* collectives: 1 + index of its member set (lh_graph_member_set);
	                       0 = not given: a group of `group` devices 0 .. group-1 */
	guint32 n_deps;     /* number of deps, see lh_graph_deps() */
	guint32 deps_at;    /* internal: offset into the graph's dep array */
	guint8 kind;        /* LhOpKind */
	guint8 out_space;   /* LhSpace */
	guint8 async;       /* may run off the main stream */
	guint8 dtype;       /* kernels: LhDtype of the math */
	guint8 transpose;   /* kernels: the memory traffic moves the minor dimension (a transpose),
	                       so it streams at hbm_transpose_eff, not hbm_eff */
	/* Appended fields (a plugin built before them never reads them). */
	guint32 device; /* placed graphs: the device the op runs on, 0 .. devices - 1;
	                   0 in a graph without placement (lh_graph_placed) */
	guint32 sync;   /* placed graphs: 1 + index of the rendezvous the op takes part in
	                   (lh_graph_sync_ops); 0 = none */
} LhOp;

typedef struct _LhGraph LhGraph;

LhGraph *lh_graph_new(const char *name); /* caller frees; name may be NULL ("graph") */
void lh_graph_free(LhGraph *g);          /* NULL is fine */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(LhGraph, lh_graph_free)

/* Building. lh_graph_add_op() copies @name and @opcode and returns the op's index, filled with
 * the kind's defaults (sm 1, group 1, duration -1, async and out_space by kind); the caller
 * then sets fields through lh_graph_op_mut(). Deps refer to earlier or later ops by index. A
 * duplicate name is an error at lh_graph_finish(). */
guint32 lh_graph_add_op(LhGraph *g, const char *name, LhOpKind kind);
LhOp *lh_graph_op_mut(LhGraph *g, guint32 i); /* valid until the next add; not after finish */
void lh_graph_set_opcode(LhGraph *g, guint32 i, const char *opcode);
/* Adds a copy of op @i of finished graph @src named @name: every field, the opcode and the
 * member set (added to @g's table) copied; no deps (the caller adds them); device and sync 0;
 * alias @alias (an index in @g, or LH_NO_OP). Returns the new op's index. */
guint32 lh_graph_add_op_copy(LhGraph *g, const LhGraph *src, guint32 i, const char *name,
                             guint32 alias);
void lh_graph_add_dep(LhGraph *g, guint32 op, guint32 dep);
/* Sets op @i's duration_ns (-1 unsets it), also on a finished graph: a measured cost (a PGLE
 * profile) replaces the model's without changing the graph's structure. */
void lh_graph_set_duration(LhGraph *g, guint32 i, gint64 duration_ns);
/* Checks numbers, names and acyclicity; builds successor lists. On failure the error names
 * the op (and, for a cycle, the ops on it). @where prefixes messages (a file name) or NULL. */
gboolean lh_graph_finish(LhGraph *g, const char *where, GError **error);
gboolean lh_graph_is_finished(const LhGraph *g);

/* Reading. */
const char *lh_graph_name(const LhGraph *g);
void lh_graph_set_name(LhGraph *g, const char *name);
guint32 lh_graph_n_ops(const LhGraph *g);
const LhOp *lh_graph_op(const LhGraph *g, guint32 i);
const guint32 *lh_graph_deps(const LhGraph *g, guint32 i, guint32 *n);  /* deduplicated */
const guint32 *lh_graph_succs(const LhGraph *g, guint32 i, guint32 *n); /* after finish */
gboolean lh_graph_find(const LhGraph *g, const char *name, guint32 *index);
/* Ops in a topological order that respects program order where deps allow (after finish). */
const guint32 *lh_graph_topo(const LhGraph *g);

/* XLA's own sequence of a scheduled module (docs/graph-format.md, "schedule"). Entry e names
 * op e >> 1: the op itself (its start, for an async op) when e & 1 is 0, the async op's done
 * when e & 1 is 1. Every op appears once as a start; every async op also once as a done,
 * after its start. lh_graph_set_schedule() copies @seq; it is checked at finish. A graph
 * without one returns NULL and *n = 0. */
void lh_graph_set_schedule(LhGraph *g, const guint32 *seq, guint32 n);
const guint32 *lh_graph_schedule(const LhGraph *g, guint32 *n);
#define LH_SCHED_DONE 1u

/* Who takes part in a collective (docs/graph-format.md, "members"). A member set is the list
 * of groups of one collective, every group of the same size, stored once in the graph and
 * shared by every op that names it (LhOp.members = 1 + its index). In a `pairs` set (a
 * collective-permute's source_target_pairs, a send's or recv's peers) each group is a
 * (source, target) pair and a device may appear in several pairs; otherwise the groups are
 * disjoint. Device ids are the module's global device ids, 0 .. devices - 1. */
typedef struct {
	guint32 n_groups;
	guint32 group_size;
	gboolean pairs;
	const guint32 *dev; /* n_groups * group_size ids, group after group */
} LhMemberSet;

/* Adds a member set (copied; an identical set already in the table is shared) and returns
 * its index. The caller has checked it (lh_member_set_check in sim/topo.h). */
guint32 lh_graph_add_member_set(LhGraph *g, guint32 n_groups, guint32 group_size, gboolean pairs,
                                const guint32 *dev);
guint32 lh_graph_n_member_sets(const LhGraph *g);
const LhMemberSet *lh_graph_member_set(const LhGraph *g, guint32 index);
/* The member set of op @op, or NULL when the op has none. */
const LhMemberSet *lh_graph_op_members(const LhGraph *g, const LhOp *op);
/* The number of devices the module runs on (num_partitions x replica_count, or the graph's
 * "devices"); 0 = not given. */
void lh_graph_set_devices(LhGraph *g, guint32 devices);
guint32 lh_graph_devices(const LhGraph *g);

/* Placement: several devices in one graph (docs/graph-format.md, "Several devices"). A placed
 * graph holds the program of each of lh_graph_devices() devices: every op names its device
 * (LhOp.device), no dep crosses devices, and devices meet only at rendezvous: the per-device
 * parts of one collective, or a send and its recv, share a sync key (LhOp.sync). A graph
 * without placement is one device's program, as before (an SPMD module simulates one member).
 * lh_graph_finish() checks placement: devices >= 1, every op's device below it, no dep across
 * devices, and each rendezvous consistent (one kind, one size; a collective's group equals its
 * number of ops, each on its own device; exactly one send and one recv, on two devices). */
void lh_graph_set_placed(LhGraph *g, gboolean placed);
gboolean lh_graph_placed(const LhGraph *g);
/* The index of the rendezvous named @key, added when new (@key is copied). Callers set
 * op->sync = 1 + the index. */
guint32 lh_graph_sync_add(LhGraph *g, const char *key);
guint32 lh_graph_n_syncs(const LhGraph *g);
const char *lh_graph_sync_name(const LhGraph *g, guint32 index);
/* After finish: the ops of rendezvous @index, by increasing device. */
const guint32 *lh_graph_sync_ops(const LhGraph *g, guint32 index, guint32 *n);

/* Kinds. */
const char *lh_op_kind_name(LhOpKind k); /* "copy-h2d" */
gboolean lh_op_kind_from_name(const char *s, LhOpKind *out);
gboolean lh_op_kind_is_copy(LhOpKind k);       /* h2d, d2h (not d2d) */
gboolean lh_op_kind_is_collective(LhOpKind k); /* the link: collectives and p2p */
LhOpClass lh_op_class(const LhOp *op);
const char *lh_op_class_name(LhOpClass c); /* "async-compute" */
const char *lh_space_name(LhSpace s);
const char *lh_dtype_name(LhDtype d); /* "bf16"; "" for LH_DTYPE_NONE */
gboolean lh_dtype_from_name(const char *s, LhDtype *out);

/* Bytes on the wire per GPU for a collective (docs/design.md#standalone-costs); 0 for other kinds.
 */
double lh_op_wire_bytes(const LhOp *op);

G_END_DECLS
