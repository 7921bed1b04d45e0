/* lhsim — the profile tree of `lhs`'s memory guard (internal, not installed), and the helper
 * thread that keeps it on the other core (issue 12).
 *
 * schedulers/lhs.c ("The memory guard") says what the guard bounds and how. This is its data
 * structure: a profile over the positions 0 .. m-1 of serial's order, kept as its change at
 * each position (a buffer adds its bytes at its first position and takes them off after its
 * last), with which positions still count, and a tree that gives the profile's peak over the
 * positions that count: the largest running sum of the changes at a position that counts.
 *
 * The caller changes the profile by records (lh__tree_add, lh__tree_add_after,
 * lh__tree_count), a guard's shift of one node at a time, and ends each shift with
 * lh__tree_commit. Without a helper every record is applied at once. With one
 * (lh__tree_start), the records go to a queue that the helper applies on the other core while
 * the scheduler goes on; after each batch of whole shifts it recounts the tree and publishes
 * the peak with the count of records it includes (lh__tree_latest: a count that
 * lh__tree_commit returned). lh__tree_peak waits
 * until the peak includes every committed record.
 *
 * Every value is a sum of whole bytes below 2^53 (the guard is off above), so exact: the peak
 * after a given sequence of records is the same however they are grouped, batched or pulled,
 * and whoever applies them. So the helper changes when the peak is known, never its value,
 * and the plans are the same with or without it (tests/test-sched-mem.c, guard_thread). */
#pragma once

#include "sim/pages-private.h"

#include <glib.h>

G_BEGIN_DECLS

typedef struct _LhsTree LhsTree;

/* A profile of @m positions in the tree's layout, all 0, for lh__tree_new: whole blocks of
 * LH_TREE_BLOCK, a cache line each, its pages handed to @pages (NULL: none). */
double *lh__tree_profile(guint32 m, LhPages *pages);
/* A tree over @m > 0 positions whose change at position q is @gd[q] (@gd from
 * lh__tree_profile, the positions past m left 0; taken over), all counting. @gend (per buffer, its
 * last position; read by lh__tree_add_after, kept by the caller until lh__tree_free) may be NULL if
 * that is never called. The tree's own arrays are handed to @pages (NULL: none) to be made present
 * ahead (sim/pages-private.h), which must then be freed after the tree. Applies records itself
 * until lh__tree_start. */
#define LH_TREE_BLOCK 8
LhsTree *lh__tree_new(double *gd, guint32 m, const guint32 *gend, LhPages *pages);
void lh__tree_free(LhsTree *t); /* stops the helper; NULL is fine */
/* Hands the tree to a helper thread; FALSE (nothing changes) when none can be started. */
gboolean lh__tree_start(LhsTree *t);

/* Adds @x bytes to the profile from position @q on (nothing if @q >= m). */
void lh__tree_add(LhsTree *t, guint32 q, double x);
/* The same from the position after buffer @b's last (@gend[b] + 1). */
void lh__tree_add_after(LhsTree *t, guint32 b, double x);
/* Position @q stops counting (@on FALSE) or counts again. */
void lh__tree_count(LhsTree *t, guint32 q, gboolean on);
/* Ends a shift: its records may be applied, and only whole shifts are published. Returns a
 * count of the records committed so far, which grows with each record (in the helper's queue
 * a record takes one or two slots, and it counts slots). */
guint64 lh__tree_commit(LhsTree *t);

/* The peak including every record, all committed (with a helper, it waits for the helper;
 * a shift under way is a caller's error: NAN). */
double lh__tree_peak(LhsTree *t);
/* The latest peak known without waiting, and in *@seq the count of records it includes:
 * with a helper, a commit's return value, or the count when it started; without, the peak of
 * every record so far and their count. */
double lh__tree_latest(LhsTree *t, guint64 *seq);

G_END_DECLS
