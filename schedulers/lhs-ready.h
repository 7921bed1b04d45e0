/* lhsim — `lhs`'s ready set (internal, not installed): the index that finds, at each step of
 * lhs's bottom-up list scheduling, the few ready nodes that can win XLA's rules, so that a
 * step does not compare every ready node (schedulers/lhs.c holds the rules and the scheduler;
 * schedulers/lhs-ready.c the index).
 *
 * The contract. lhs.c owns the schedule graph and its state (Lhs below). At each step it calls
 * lh__ready_advance(), asks for candidates (lh__ready_candidates() and its memory-pressure
 * variants), compares them with XLA's full rule list and removes the winner
 * (lh__ready_remove()); nodes whose users are all scheduled come in with lh__ready_add().
 * Every candidate function fills its array, in ascending node order, with a set of eligible
 * nodes that holds every node the full comparison of all ready nodes could pick
 * (lh__ready_all(), the reference), and returns the rule that set them apart (for
 * --explain). So the plan is the reference's, node for node: tests/test-sched-props.c checks
 * it with LHSIM_LHS_REFERENCE=1, bench/sched-plans.sh against an older build.
 *
 * The index reads the node records and arrays of Lhs, and from lhs.c two functions: the
 * leading rules (lh__lhs_prefer_lead) and the memory model (lh__lhs_memory_change). Of Lhs it
 * writes only mem_index, mc (the memory index's changes: lhs_plan allocates it) and
 * waiting_dones.
 */
#pragma once

#include "schedulers/lhs-guard.h"
#include "schedulers/sched-util.h"
#include "sim/pages-private.h"

#include <string.h>

G_BEGIN_DECLS

enum { NODE_KERNEL, NODE_START, NODE_DONE };

/* A growable list of node (or op) numbers: LhsVec's job, inline. The ready set's lists and
 * the candidates change at every step, and LhsVec's calls (append, set_size, which removes
 * a range) were 14 % of lhs_plan's instructions at 10^5 ops (issue 12, callgrind). */
typedef struct {
	guint32 *d;
	guint32 len, cap;
} LhsVec;

static inline LhsVec *lhs_vec_new(void)
{
	return g_new0(LhsVec, 1);
}

static inline void lhs_vec_free(LhsVec *a)
{
	g_free(a->d);
	g_free(a);
}

/* Room for @more numbers after the last. */
static inline void lhs_vec_room(LhsVec *a, guint32 more)
{
	if (G_LIKELY(a->len + more <= a->cap))
		return;
	a->cap = MAX(MAX(16, 2 * a->cap), a->len + more);
	a->d = g_renew(guint32, a->d, a->cap);
}

static inline void lhs_vec_push(LhsVec *a, guint32 v)
{
	lhs_vec_room(a, 1);
	a->d[a->len++] = v;
}

static inline void lhs_vec_pushn(LhsVec *a, const guint32 *v, guint32 n)
{
	if (n == 0)
		return;
	lhs_vec_room(a, n);
	memcpy(a->d + a->len, v, sizeof(guint32) * n);
	a->len += n;
}

/* Removes the @k-th, keeping the order of the others. */
static inline void lhs_vec_remove(LhsVec *a, guint32 k)
{
	memmove(a->d + k, a->d + k + 1, sizeof(guint32) * (a->len - k - 1));
	a->len--;
}

/* lhs's resources: XLA's classes (LhOpClass) and, after them, the scale-up collectives
 * (XLA's kGpuAsyncStreamScaleUpCollectives, openxla/xla#47467): collectives whose every group
 * sits in one NVLink domain, on hardware with a cluster, in a graph that says who takes part. */
#define LHS_SCALE_UP LH_CLASS_N
#define LHS_NCLASS (LH_CLASS_N + 1)
G_STATIC_ASSERT(LHS_NCLASS <= 32); /* LhsReady.dmask */

/* The memory guard's last shifts kept for a bound from its tree's latest peak (lhs.c,
 * guard_bound): the tree's helper is most often a shift or two behind. */
#define LHS_GSH 64

/* A set of integers in [0, n): a 64-ary tree of bit words, so that adding, removing, and
 * finding the least, the greatest, or the next member after k each read a few words (one per
 * level: 4 levels for 2^24 members). The ready set keeps nodes in it by their rank in a fixed
 * order; lhs's memory guard by their position in serial's order. */
#define LHS_BITS_LEVELS 6
typedef struct {
	guint64 *w;                    /* the levels, the bits first, each above summarising
	                                  the words below (bit i: word i is not 0) */
	guint32 off[LHS_BITS_LEVELS];  /* where each level starts in w */
	guint32 size[LHS_BITS_LEVELS]; /* words in each level */
	guint32 levels;
	guint32 count; /* members */
} LhsBits;

void lh__bits_init(LhsBits *b, guint32 n);
void lh__bits_clear(LhsBits *b);
void lh__bits_add(LhsBits *b, guint32 k);           /* k must not be a member */
void lh__bits_del(LhsBits *b, guint32 k);           /* k must be a member */
guint32 lh__bits_first(const LhsBits *b);           /* the least member, or G_MAXUINT32 if none */
guint32 lh__bits_last(const LhsBits *b);            /* the greatest member, or G_MAXUINT32 */
guint32 lh__bits_next(const LhsBits *b, guint32 k); /* the least member > k, or G_MAXUINT32 */

/* A buffer (mem_model in lhs.c): what the memory model reads of it, in one 16-byte record
 * (issue 12: they read these fields together, in pick order, where five arrays were a cache
 * miss each; four records a cache line, where the guard's positions made it two, so that the
 * buffers of ops that lie close, a node's operands, share lines more often). */
typedef struct {
	double bytes;  /* allocated by the op that starts it */
	guint32 freer; /* the node that frees it bottom-up, or G_MAXUINT32 */
	guint8 state;  /* 0 = not live yet, 1 = live, 2 = freed */
	guint8 to_end; /* no op depends on it, so it lives to the end */
	guint8 pad_[2];
} LhsBuf;
G_STATIC_ASSERT(sizeof(LhsBuf) == 16);

/* A node of the schedule graph: what the rules and the ready set read of it, in one 24-byte
 * record (issue 12: read in pick order, at 10^6 ops each array was a cache miss of its own).
 * Its ready time is kept in LhsRel, beside what its users' scheduling tells of it (issue 12:
 * the records were 32 bytes with it, 10 MB more pages to make present at 10^6 ops). */
typedef struct {
	double depth; /* async depth */
	double cost;  /* a kernel's cost; a done's field holds its pair's latency instead (see
	                 lhs_cost and lhs_edge_lat) */
	guint32 op;
	guint8 type;    /* NODE_* */
	guint8 cls;     /* LhOpClass of the resource a start/done uses; NONE for kernels */
	guint8 fd : 1;  /* XLA's ForceDelay: picked last (see kForceDelay in lhs.c) */
	guint8 ud : 1;  /* has a done among its predecessors (kUnlockDone) */
	guint8 own : 1; /* frees its op's buffer bottom-up (lhs.c's node_frees) */
	guint8 pad_;
} LhsNode;
G_STATIC_ASSERT(sizeof(LhsNode) == 24);

/* Where a node's lists start in Lhs.pred and Lhs.nbuf (CSR: its lists end where the next
 * node's start), both read when it is scheduled: side by side, one cache miss, and with
 * the next node's mostly in the same line (8 bytes a node; issue 12: the buffer a node frees
 * was kept here too, and is now a bit of its record, LhsNode.own). */
typedef struct {
	guint32 pred, nbuf;
} LhsAt;

/* A ready node's memory change (lh__lhs_memory_change), both halves side by side: they
 * change together. */
typedef struct {
	double inc;  /* net change */
	double peak; /* peak change */
} LhsMemChange;

/* What scheduling a node's users tells of it, side by side (issue 12: one cache miss per edge
 * in pick order, where the users' ready times were one per user when the node became ready). */
typedef struct {
	double rt;      /* the latest of (user's time + edge latency) over the users scheduled;
	                   once ready, its ready time (the latest of that and now when its last
	                   user is scheduled), then its time when it is */
	guint32 outdeg; /* users not scheduled yet */
} LhsRel;

/* The scheduler's state (lhs.c builds it; see there for the schedule graph and memory). */
typedef struct {
	const LhGraph *g;
	const LhParams *p;
	guint32 n_ops, n_nodes;
	LhPages *pages; /* the large arrays' pages, made present ahead (sim/pages-private.h) */
	/* Nodes. */
	LhsNode *nd;
	guint32 *first; /* per op: its first node (its last: lhs_last); G_MAXUINT32 for inputs */
	/* Edges: per node, the nodes it depends on (its deps' last nodes; a done its start),
	 * CSR; of the other way only the counts (succ_at[v + 1] - succ_at[v] users of v). The
	 * estimator's latency is one per node (lhs_edge_lat), so the edges hold nodes alone
	 * (issue 12: 4 bytes an edge, not 16; 28 MB less at 10^6 ops). */
	LhsAt *at; /* per node (and one past the last): where its edges and buffers start */
	guint32 *pred;
	double low;       /* the latency of every edge but start -> done */
	double pair_cost; /* the cost of a start and of a done */
	guint32 *succ_at;
	/* Scheduling state. */
	LhsRel *rel;
	double now;
	guint32 in_flight[LHS_NCLASS];
	guint32 limit[LHS_NCLASS];
	guint32 waiting_dones[LHS_NCLASS]; /* dones of each class in the ready set */
	LhsVec *coll_in_flight; /* ops of the collectives in flight (a done scheduled, not its
	                           start), for XLA's rule on shared devices */
	/* Memory (bytes), see mem_model() in lhs.c. */
	LhsBuf *bf;      /* per buffer */
	guint32 *buf_of; /* per op: the buffer its output lives in; NULL without aliases, where
	                    op i's is buffer i (lhs_buf_of; issue 12: 4 MB less at 10^6 ops) */
	guint32 *nbuf;   /* per node, CSR (at[].nbuf): the buffers it uses (each once) */
	guint32 *user_at, *user; /* per buffer, CSR: the nodes that use it */
	double usage, limit_bytes;
	double max_use;      /* most bytes any node's used buffers hold (a bound on its peak) */
	gboolean mem_active; /* usage > limit / 2 at this step */
	double next_ready;   /* earliest ready time above now among ready nodes, or -1 */
	/* The memory index (see "Memory pressure" in lhs-ready.c): kept from the first step that
	 * needs it on (mem_index), if it can be (mem_index_ok). */
	gboolean mem_index_ok, mem_index;
	LhsMemChange *mc; /* per ready node: lh__lhs_memory_change()'s */
	/* The memory guard (see "The memory guard" in lhs.c), when guard is set. */
	gboolean guard;
	LhsTree *tree;            /* the profile over serial's order (lhs-guard.h) */
	guint32 *gend;            /* per buffer of some bytes: its last position while no user is
	                             scheduled (its first: buf_gdef in lhs.c) */
	double gub;               /* >= the tree's peak (see guard_bound in lhs.c) */
	double gup, gdown;        /* bytes the shift under way adds to the profile, takes off */
	guint64 gsh;              /* shifts so far */
	guint64 gsh_seq[LHS_GSH]; /* the last shifts' records, counted to their ends */
	double gsh_up[LHS_GSH];   /* and how much each raises the bound */
	guint32 *gpos;            /* per node: its position in serial's order (NULL: the node) */
	guint32 *gnode;   /* per position in serial's order: the node (NULL: the position) */
	double cap;       /* max(limit, the serial order's peak) */
	double p0;        /* the serial order's peak (the model) */
	double peak_done; /* the peak of the steps taken so far (the model) */
	LhsBits gready;   /* ready nodes by gpos */
	guint32 n_veto;   /* picks the guard replaced */
	/* Per node: the done whose async depth it has (a done's own, when above 0), or
	 * G_MAXUINT32 for depth 0: build_graph's, for lh__ready_init's rank order. */
	guint32 *dsrc;
	guint32 n_pairs; /* async ops (start/done pairs) */
} Lhs;

/* A candidate with its memory change (valid when mem_active). */
typedef struct {
	guint32 node;
	double mem_inc, mem_peak;
} LhsCand;

/* From lhs.c. The leading rules of XLA's order, each a key of one node (kForceDelay, the two
 * memory rules, kScheduleDone .. kAsyncDepth): 1 when @a is preferred, -1 when @b is, 0 when
 * they tie on all of them (then *@reason is left alone). */
int lh__lhs_prefer_lead(const Lhs *s, const LhsCand *a, const LhsCand *b, const char **reason);
/* From lhs.c. XLA's GetMemoryPressureChanges: (net change, peak change) if @v were scheduled
 * now. */
void lh__lhs_memory_change(const Lhs *s, guint32 v, double *inc, double *peak);

/* The buffers a node uses (mem_model in lhs.c): calls BODY with @b set to each, once. */
#define FOR_EACH_USED_BUFFER(s, v, b, BODY)                                                        \
	do {                                                                                       \
		for (guint32 k_ = (s)->at[v].nbuf; k_ < (s)->at[(v) + 1].nbuf; k_++) {             \
			guint32 b = (s)->nbuf[k_];                                                 \
			BODY;                                                                      \
		}                                                                                  \
	} while (0)

/* XLA's kMemoryPeakOverLimit: a node whose peak change is @peak keeps usage within the limit. */
static inline gboolean lhs_peak_fits(const Lhs *s, double peak)
{
	return peak + s->usage <= s->limit_bytes;
}

/* A node's cost. */
static inline double lhs_cost(const Lhs *s, guint32 v)
{
	return s->nd[v].type == NODE_DONE ? s->pair_cost : s->nd[v].cost;
}

/* The latency of the edges from @v to the nodes it depends on: a done's one edge, to its
 * start, has its pair's latency; every other edge the estimator's low latency. */
static inline double lhs_edge_lat(const Lhs *s, guint32 v)
{
	return s->nd[v].type == NODE_DONE ? s->nd[v].cost : s->low;
}

static inline gboolean lhs_releases(const Lhs *s, guint32 v)
{
	return s->nd[v].type == NODE_START;
}

static inline gboolean lhs_class_free(const Lhs *s, guint c)
{
	return s->in_flight[c] < s->limit[c];
}

/* Class @c is backed up: fully in use, and dones of it wait in the ready set. */
static inline gboolean lhs_backed_up(const Lhs *s, guint c)
{
	return !lhs_class_free(s, c) && s->waiting_dones[c] > 0;
}

/* XLA's IsResourceConstrained: the node's class is backed up. */
static inline gboolean lhs_constrained(const Lhs *s, guint32 v)
{
	return s->nd[v].type != NODE_KERNEL && lhs_backed_up(s, s->nd[v].cls);
}

/* Where a ready node is kept (LhsReady.where). */
enum { W_NONE, W_DONE, W_FD, W_HEAP, W_NOW, W_DNOW };

/* A min-heap of ready nodes by (key, rank), with each node's place in it (LhsReady.hpos), so
 * that a node's key can change and a node can leave. */
typedef struct {
	double key;
	guint32 rank, node;
} LhsIncEnt;

/* The entries start 48 bytes into a 64-byte aligned block (mem), so that the four children
 * of entry k, 4k + 1 .. 4k + 4, fill one cache line (lhs-ready.c, INC_D). */
typedef struct {
	LhsIncEnt *e;
	void *mem;
	guint32 n, cap;
} LhsIncHeap;

typedef struct _LhsWalk LhsWalk;
typedef struct _LhsSeg LhsSeg;

/* The ready set. The fields are the index's; lhs.c reads only `n` and `where`. */
typedef struct {
	guint32 n;     /* ready nodes in all */
	guint32 dmask; /* bit c: dones of class c in the ready set (issue 12: the classes' loops
	                  of each step visit only these, most often one or two) */
	guint8 *where; /* per node: W_* */
	/* Nodes by their rank in (async depth, deepest first, then node): rank[v], node[k]. */
	guint32 *rank, *rank_node;
	LhsBits dnow[LHS_NCLASS];   /* ready-now dones by class, by rank */
	LhsVec *dheap[LHS_NCLASS];  /* dones not ready yet, min-heap by ready time (lazy) */
	LhsVec *fd;                 /* force-delayed */
	LhsVec *heap;               /* of guint32, min ready_time then node */
	LhsBits deep;               /* ready now: kernels, starts with depth > 0; by rank */
	LhsVec *zero;               /* ready now: starts with async depth 0 */
	LhsVec *starts[LHS_NCLASS]; /* ready now: starts by class */
	double early_t;             /* ready time of nodes moved in before it came, or -1 */
	LhsVec *later;              /* min-heap of dones and fd nodes by ready time (lazy) */
	double stale_t;             /* ready time of nodes moved in ahead of time and not
	                               picked when now did not reach it (see ready_advance);
	                               -1 if none */
	guint32 *slot;              /* position in dones/fd/zero list */
	guint32 *sslot;             /* position in starts[c] */
	/* The memory index, kept when s->mem_index is set: every ready node that is not
	 * force-delayed, by (mem_inc, rank): kernels and starts in one heap, dones in one per
	 * class (lh__ready_scan reads their arrays as the list of them). */
	LhsIncHeap by_inc;
	LhsIncHeap dones_by_inc[LHS_NCLASS];
	guint32 *hpos; /* per node: its place in its heap */
	guint32 gone;  /* the picked node still at by_inc's root (index_remove), or G_MAXUINT32 */
	LhsWalk *walk; /* scratch: a walk of a heap in order */
	/* And a min-tree over blocks of 64 ranks: a leaf holds the least mem_peak of the
	 * block's nodes in deep; so the first node of deep that passes kMemoryPeakOverLimit is
	 * found in O(log n) and a read of its block (seg_find). */
	LhsSeg *seg;
} LhsReady;

void lh__ready_init(LhsReady *r, const Lhs *s);
void lh__ready_clear(LhsReady *r);
/* @v's users are all scheduled; s->rel[v].rt is its ready time. */
void lh__ready_add(LhsReady *r, Lhs *s, guint32 v);
/* @v was picked. */
void lh__ready_remove(LhsReady *r, Lhs *s, guint32 v);
/* Before each step: moves the nodes whose time has come (or that tie with the best on
 * kLessStall) to the ready-now structures. */
void lh__ready_advance(LhsReady *r, const Lhs *s);
/* kAvoidWaste's "next ready": the earliest ready time above now among ready nodes, or -1. */
double lh__ready_next_time(LhsReady *r, const Lhs *s);
/* After a step, with the memory index: settles the index as lh__ready_advance would, and
 * fetches the records of the nodes the next step will most likely read first (the least of
 * each heap), so that their cache misses overlap instead of coming one after the other. */
void lh__ready_ahead(LhsReady *r, const Lhs *s);
/* Whether the ready-now structures hold only nodes ready now (else see lh__ready_scan). */
gboolean lh__ready_exact(const LhsReady *r, const Lhs *s);
/* Every ready node a rule could pick (the reference scan), ascending. */
void lh__ready_all(const LhsReady *r, LhsVec *out);

/* The candidates, each ascending, each returning the rule that set them apart:
 * without memory rules (and lh__ready_exact()): */
const char *lh__ready_candidates(const LhsReady *r, const Lhs *s, LhsVec *out);
/* with the memory index, usage >= limit: */
const char *lh__ready_over_candidates(const LhsReady *r, const Lhs *s, LhsVec *out);
/* with the memory index, usage < limit and the memory rules at work: */
const char *lh__ready_fit_candidates(const LhsReady *r, const Lhs *s, LhsVec *out);
/* with the memory index, when not lh__ready_exact(): */
const char *lh__ready_scan(const LhsReady *r, const Lhs *s, LhsVec *out);

/* Starts the memory index (sets s->mem_index); from then on lh__ready_add and
 * lh__ready_remove keep it, and lh__ready_buffer() must be called when a buffer leaves state
 * 0 (not live yet) for @to (1 live, 2 freed). */
void lh__ready_index_build(LhsReady *r, Lhs *s);
void lh__ready_buffer(LhsReady *r, Lhs *s, guint32 b, guint8 to);

G_END_DECLS
