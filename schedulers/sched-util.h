/* lhsim — helpers shared by the built-in schedulers (internal, not installed).
 *
 * Stream pools for async ops (one pool per resource class, streams created on demand) and the
 * emitter the list schedulers (cpath, heft) use to turn "op -> stream, estimated start" into a
 * plan with the fewest events that order every cross-stream dependency.
 */
#pragma once

#include "schedulers/scheduler.h"

G_BEGIN_DECLS

/* A pool of side streams of one role. Streams are added to the plan the first time they are
 * needed, up to @cap (0 = no cap), so that a plan only lists streams it uses. */
typedef struct {
	const char *prefix; /* stream names are PREFIX0, PREFIX1, ... */
	LhStreamRole role;
	guint32 cap;       /* most streams; 0 = unlimited */
	GArray *stream;    /* of guint32: plan stream index of each pool member */
	GArray *in_flight; /* of guint32: ops started and not yet done, per member */
} LhStreamPool;

void lh__pool_init(LhStreamPool *pool, const char *prefix, LhStreamRole role, guint32 cap);
void lh__pool_clear(LhStreamPool *pool);
/* Picks the member with the fewest ops in flight (the lowest index on ties), creating a new
 * stream when every member is busy and the cap allows. Returns the pool member index. */
guint32 lh__pool_acquire(LhStreamPool *pool, LhPlan *plan);
void lh__pool_release(LhStreamPool *pool, guint32 member);
guint32 lh__pool_stream(const LhStreamPool *pool, guint32 member);

/* Emits a plan from a list schedule: each non-input op @i runs on plan stream @stream[i];
 * ops are issued in order of (@start[i], i's position in @seq order). @seq[i] is the order in
 * which the scheduler placed op i (a topological order). The public plan builder
 * (lh_plan_add_list_schedule, sim/plan.h) adds the signals and waits. */
void lh__emit_list_schedule(LhPlan *plan, const LhGraph *g, const guint32 *stream,
                            const double *start, const guint32 *seq);

/* In-flight limit of each resource class from the parameters "collective-limit",
 * "p2p-limit", "async-compute-limit", "memcpy-limit" (0 = unlimited -> G_MAXUINT32). */
void lh__class_limits(const LhParams *p, guint32 limit[LH_CLASS_N]);

/* A record sorted by lh__sort_f64_u32(): a double, then a guint32, then a payload. */
typedef struct {
	double d;
	guint32 u, op;
} LhSortRec;
/* Sorts @r by (d, u) ascending, or by (d descending, u ascending) with @desc, as a stable
 * comparison sort would (a radix sort: O(n)). The doubles must not be NaN. */
void lh__sort_f64_u32(LhSortRec *r, guint32 n, gboolean desc);
/* The same with @scratch, room for @n records the sort may overwrite (NULL: it allocates its
 * own). */
void lh__sort_f64_u32_in(LhSortRec *r, guint32 n, gboolean desc, LhSortRec *scratch);

/* The same from records in the order in which the scheduler placed the ops: @slot[k] is
 * {start, 0, op} for the k-th non-input op placed. A stable sort by start alone then gives
 * the (start, seq) order, two radix passes fewer. Sorts @slot in place. */
void lh__emit_list_schedule_placed(LhPlan *plan, const LhGraph *g, const guint32 *stream,
                                   LhSortRec *slot, guint32 m);

/* b-level of every op (longest path from the op to an exit, own cost included), with
 * @cost[i] per op. Caller frees. */
double *lh__blevel(const LhGraph *g, const double *cost);

/* A binary min-heap of op indices under @less (TRUE when @a comes before @b; @cx is its
 * context). @less must be a strict total order on the ops pushed (no two tie), so that the
 * pops come in the same order whatever the heap's layout. v[0] is the least when n > 0. */
typedef gboolean (*LhHeapLess)(const void *cx, guint32 a, guint32 b);
typedef struct {
	guint32 *v, n, cap;
	LhHeapLess less;
	const void *cx;
} LhHeap;

void lh__heap_init(LhHeap *h, LhHeapLess less, const void *cx);
void lh__heap_clear(LhHeap *h);
void lh__heap_push(LhHeap *h, guint32 x);
guint32 lh__heap_pop(LhHeap *h); /* the least; the heap must not be empty */

G_END_DECLS
