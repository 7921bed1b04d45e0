/* lhsim — the profile tree of `lhs`'s memory guard and its helper thread
 * (schedulers/lhs-guard.h says what it promises; schedulers/lhs.c, "The memory guard", what
 * the guard does with it).
 *
 * Positions go in blocks of LH_TREE_BLOCK, one cache line of gd, and a tree over the blocks
 * holds per subtree its sum and the largest running sum at a position that counts (-infinity
 * if none), so the root holds the profile's peak. A change is one block, recounted, and its
 * path. The tree is 4-ary: node k's children are 4k + 1 .. 4k + 4, the root 0. A tree node's
 * sum and max lie side by side in gt (GSUM, GMX), and so do four siblings', in one cache line,
 * so that a step up the path reads one line. (Issue 12: a tree over single positions was 64
 * MB at 10^6 ops and 21 levels deep; a binary one over blocks of 8, 8.4 MB and 18 levels, each
 * a cache miss where paths part; 4-ary, 5.6 MB and 9 levels.)
 *
 * Changes to blocks are batched, and the paths above them pulled together, level by level: a
 * node shared by several paths (the positions one step touches lie close together in serial's
 * order) is computed once. Each node is computed from its children's final values, so the
 * tree is the one of pulling after every change. A tree node waits in the batch at most once:
 * gflag marks it (issue 12: sorting each batch to find shared parents was a third of the
 * pulls' time at 10^6 ops); the order within a level does not matter, since nodes of one
 * level do not read each other.
 *
 * The helper (issue 12). At 10^6 ops the guard's changes and pulls were a sixth of lhs's step
 * loop (perf: gt_flush, gt_add and guard_shift, 93 of the first 200 000 steps' 420 ms on the
 * slower VM of bench/README.md), almost all of it cache misses in a tree of 8 MB and a profile
 * of 10 MB. The scheduler only needs the peak, and most often only a bound on it; so the
 * records go through a queue (a ring, one writer and one reader) to a thread on the other
 * core that owns the tree, applies them, pulls the tree after each batch and publishes the
 * peak with the number of records in it (a sequence lock: the pair is read whole). The
 * scheduler waits for it only when a bound from the latest peak does not settle a check (see
 * guard_fits in lhs.c). */
#include "schedulers/lhs-guard.h"

#include <math.h>
#include <string.h>

#define GB LH_TREE_BLOCK
#define GSUM(t, k) ((t)->gt[2 * (gsize)(k)])
#define GMX(t, k) ((t)->gt[2 * (gsize)(k) + 1])
#define ROOT 0

/* Blocks that may wait before the tree is pulled (issue 12: 256 rather than 64 took 2 % off
 * lhs's step loop at 10^6 ops, in instructions, by pulling shared paths once for more
 * blocks). */
#define PEND 256

/* Slots of the queue (8 bytes each: 128 KiB). A scheduler this far ahead of the helper waits
 * for room. */
#define RING ((guint32)1 << 14)

/* The scheduler fetches the queue's line this many slots ahead of the one it writes, so that
 * taking the line back from the helper's cache overlaps the writes before it. */
#define RING_AHEAD 16

enum { R_ADD, R_ADD_AFTER, R_OFF, R_ON, R_BIG = 4 };

typedef struct {
	guint32 op; /* R_* */
	guint32 i;  /* the position, or for R_ADD_AFTER the buffer */
	double x;   /* bytes (R_ADD, R_ADD_AFTER) */
} Rec;

/* A record in the queue: 8 bytes, eight a cache line (issue 12: each line the scheduler
 * writes is taken back from the helper, which has read the one before, and records of 16
 * bytes made twice the lines). v is op + 8 x, x whole bytes below 2^28 in size; larger or
 * not whole, v is op + R_BIG and the next slot holds x's bits. */
typedef struct {
	guint32 i;
	gint32 v;
} Slot;
G_STATIC_ASSERT(sizeof(Slot) == 8);

struct _LhsTree {
	/* The tree, the helper's alone while it runs. */
	guint32 m;           /* positions */
	guint32 gn;          /* leaves (blocks): a power of four */
	guint32 gi;          /* inner nodes, (gn - 1) / 3: the first leaf's number */
	double *gd;          /* per position: the profile's change there */
	guint8 *gon;         /* per block: which positions count (bit i: the i-th) */
	double *gt;          /* per tree node its sum, then its max; node 1 at a line's start */
	void *gt_mem;        /* gt's block */
	guint64 *gflag;      /* per tree node: waiting in the batch */
	guint32 gpend[PEND]; /* leaves changed since the tree was pulled */
	guint32 gpend_n;     /* how many */
	const guint32 *gend; /* per buffer: its last position (the caller's) */
	/* The scheduler's side: a line of its own, apart from gpend_n, which the helper writes at
	 * every record (ring shared gpend_n's line, and the scheduler reads it at every record). */
	_Alignas(64) Slot *ring; /* the queue (NULL: no helper, records applied at once) */
	guint64 head;            /* records written, counted in slots with a helper */
	guint64 room;            /* the scheduler may write up to here without looking */
	GThread *thread;
	/* Written by the scheduler, read by the helper: a line of their own. */
	_Alignas(64) guint64 pub; /* records committed (atomic) */
	guint64 avail;            /* records written whole, when a shift outgrows the ring */
	gint stop;                /* the helper ends once it has applied all of pub (atomic) */
	/* Written by the helper, read by the scheduler. */
	_Alignas(64) guint64 applied; /* records applied: their ring slots are free (atomic) */
	guint64 ver;                  /* sequence lock over (peak, seq): odd while written */
	guint64 peak_bits;            /* the latest published peak, as bits */
	guint64 seq;                  /* the records it includes */
};

/* A spin-wait's pause; after a while the core is given up in turns. */
static void relax(guint *spins)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
	if (++*spins > 256)
		g_thread_yield();
}

/* Recounts the tree leaf @k from its block. */
static void leaf(LhsTree *t, guint32 k)
{
	guint32 j = k - t->gi;
	const double *d = &t->gd[(gsize)j * GB];
	guint32 on = t->gon[j];
	/* A position that does not count adds -infinity to its running sum (sums are finite),
	 * so that the loop has no branch on the bits (issue 12: it was mispredicted). */
	static const double off[2] = {-INFINITY, 0};
	double sum = 0, mx = -INFINITY;
	for (guint32 i = 0; i < GB; i++) {
		sum += d[i];
		mx = MAX(mx, sum + off[on >> i & 1]);
	}
	GSUM(t, k) = sum;
	GMX(t, k) = mx;
}

/* Tree node @k from its children: the sum of all four, and the largest running sum in one,
 * after the sums of those before it. (Every value is whole bytes below 2^53, so the sums are
 * exact in any grouping: the peak is that of the binary tree before.) */
static void pull(LhsTree *t, guint32 k)
{
	const double *c = &GSUM(t, 4 * k + 1); /* the four children's (sum, max), one line */
	double s0 = c[0], s1 = s0 + c[2], s2 = s1 + c[4];
	GSUM(t, k) = s2 + c[6];
	GMX(t, k) = MAX(MAX(c[1], s0 + c[3]), MAX(s1 + c[5], s2 + c[7]));
}

static gboolean flag(LhsTree *t, guint32 k)
{
	guint64 bit = G_GUINT64_CONSTANT(1) << (k & 63), *w = &t->gflag[k >> 6];
	gboolean was = (*w & bit) != 0;
	*w |= bit;
	return was;
}

static void flush(LhsTree *t)
{
	guint32 *k = t->gpend, n = t->gpend_n;
	for (guint32 i = 0; i < n; i++) /* the leaves, each once (touch) */
		leaf(t, k[i]);
	while (n && k[0] != ROOT) { /* the leaves are one level: the batch stays one */
		guint32 m = 0;
		for (guint32 i = 0; i < n; i++) {
			t->gflag[k[i] >> 6] &= ~(G_GUINT64_CONSTANT(1) << (k[i] & 63));
			guint32 p = (k[i] - 1) / 4;
			if (flag(t, p))
				continue;
			pull(t, p);
			k[m++] = p;
		}
		n = m;
	}
	t->gflag[0] &= ~G_GUINT64_CONSTANT(1); /* the root's */
	t->gpend_n = 0;
}

/* Position @q's block will be recounted. */
static void touch(LhsTree *t, guint32 q)
{
	guint32 k = t->gi + q / GB;
	if (t->gflag[k >> 6] >> (k & 63) & 1)
		return; /* the block is waiting already */
	if (t->gpend_n == PEND)
		flush(t);
	flag(t, k);
	t->gpend[t->gpend_n++] = k;
}

static void apply(LhsTree *t, const Rec *r)
{
	guint32 q = r->op == R_ADD_AFTER ? t->gend[r->i] + 1 : r->i;
	if (q >= t->m)
		return;
	touch(t, q);
	if (r->op == R_ADD || r->op == R_ADD_AFTER) {
		t->gd[q] += r->x;
	} else {
		guint8 bit = (guint8)(1u << (q % GB));
		t->gon[q / GB] = r->op == R_ON ? t->gon[q / GB] | bit : t->gon[q / GB] & ~bit;
	}
}

/* The profile comes from g_malloc0, 64 bytes more, and starts at the first line boundary
 * past its block's start; the byte before it says how far that is (1 - 64), for
 * profile_free. (Issue 12: zeroed with memset, the 10.6 MB at 10^6 ops were written page by
 * page on the scheduler's core while the page helper populated them, 22 ms of lhs's set-up
 * on the slower VM of bench/README.md; calloc's fresh pages are zero already.) */
double *lh__tree_profile(guint32 m, LhPages *pages)
{
	gsize n = MAX(((gsize)m + GB - 1) / GB * GB, 1);
	guint8 *mem = g_malloc0(n * sizeof(double) + 64);
	guint8 *gd = (guint8 *)(((guintptr)mem + 64) & ~(guintptr)63);
	gd[-1] = (guint8)(gd - mem);
	lh__pages_add(pages, gd, n * sizeof(double));
	return (double *)gd;
}

static void profile_free(double *gd)
{
	guint8 *p = (guint8 *)gd;
	g_free(p - p[-1]);
}

LhsTree *lh__tree_new(double *gd, guint32 m, const guint32 *gend, LhPages *pages)
{
	g_return_val_if_fail(gd != NULL && m > 0, NULL);
	LhsTree *t = g_aligned_alloc0(1, sizeof(LhsTree), 64); /* the shared lines apart */
	guint32 nb = (m + GB - 1) / GB;
	t->m = m;
	t->gd = gd;
	t->gend = gend;
	t->gon = g_new(guint8, nb); /* every position counts; none past the last */
	memset(t->gon, 0xff, nb);
	if (m % GB)
		t->gon[nb - 1] = (guint8)((1u << (m % GB)) - 1);
	for (t->gn = 1; t->gn < nb; t->gn *= 4)
		;
	t->gi = (t->gn - 1) / 3;
	gsize nodes = (gsize)t->gi + t->gn, bytes = 2 * sizeof(double) * nodes + 64;
	/* 48 bytes into a 64-byte aligned block: node 1, and so each four siblings, at a line's
	 * start. Written whole below. */
	t->gt_mem = g_aligned_alloc(bytes, 1, 64);
	lh__pages_add(pages, t->gt_mem, bytes);
	t->gt = (double *)((char *)t->gt_mem + 48);
	t->gflag = g_new0(guint64, (nodes + 63) / 64);
	for (guint32 j = 0; j < t->gn; j++) {
		if (j < nb) {
			leaf(t, t->gi + j);
		} else {
			GSUM(t, t->gi + j) = 0;
			GMX(t, t->gi + j) = -INFINITY;
		}
	}
	for (guint32 k = t->gi; k-- > 0;)
		pull(t, k);
	return t;
}

/* The sequence lock's writer. Each store releases the ones before it, so a reader that sees
 * the new peak or seq sees the odd version before them; no fence is needed (which
 * ThreadSanitizer could not follow). */
static void publish(LhsTree *t, double peak, guint64 seq)
{
	guint64 v = t->ver, bits;
	memcpy(&bits, &peak, sizeof bits);
	__atomic_store_n(&t->ver, v + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&t->peak_bits, bits, __ATOMIC_RELEASE);
	__atomic_store_n(&t->seq, seq, __ATOMIC_RELEASE);
	__atomic_store_n(&t->ver, v + 2, __ATOMIC_RELEASE);
}

/* The helper. It applies what the scheduler has published: whole shifts (pub), or, when one
 * shift outgrows the ring, whole records (avail); and it publishes a peak only at a shift's
 * end, where the scheduler's bounds can take it up (lhs.c, guard_latest). */
static gpointer helper(gpointer data)
{
	LhsTree *t = data;
	guint64 done = __atomic_load_n(&t->applied, __ATOMIC_RELAXED);
	guint spins = 0;
	for (;;) {
		guint64 pub = __atomic_load_n(&t->pub, __ATOMIC_ACQUIRE);
		guint64 to = MAX(pub, __atomic_load_n(&t->avail, __ATOMIC_ACQUIRE));
		if (to == done) {
			/* Asked to stop: once all that was published before is applied (pub is
			 * read again after stop, which the scheduler stored after its last). */
			if (__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE) &&
			    __atomic_load_n(&t->pub, __ATOMIC_ACQUIRE) == done)
				return NULL;
			relax(&spins);
			continue;
		}
		spins = 0;
		while (done < to) {
			Slot a = t->ring[done++ & (RING - 1)];
			Rec r = {(guint32)(a.v & 3), a.i, (double)((a.v - (a.v & 7)) / 8)};
			if (a.v & R_BIG) {
				Slot b = t->ring[done++ & (RING - 1)];
				memcpy(&r.x, &b, sizeof r.x);
			}
			apply(t, &r);
		}
		__atomic_store_n(&t->applied, done, __ATOMIC_RELEASE);
		if (done != pub)
			continue; /* inside a shift: no peak to publish yet */
		if (t->gpend_n)
			flush(t);
		publish(t, GMX(t, ROOT), done);
	}
}

gboolean lh__tree_start(LhsTree *t)
{
	g_return_val_if_fail(t != NULL && t->ring == NULL, FALSE);
	if (t->gpend_n)
		flush(t);
	t->ring = g_aligned_alloc(RING, sizeof(Slot), 64);
	t->room = t->head + RING;
	__atomic_store_n(&t->pub, t->head, __ATOMIC_RELAXED);
	__atomic_store_n(&t->avail, t->head, __ATOMIC_RELAXED);
	__atomic_store_n(&t->applied, t->head, __ATOMIC_RELAXED);
	publish(t, GMX(t, ROOT), t->head);
	t->thread = g_thread_try_new("lhsim-guard", helper, t, NULL);
	if (!t->thread)
		g_clear_pointer(&t->ring, g_aligned_free);
	return t->thread != NULL;
}

void lh__tree_free(LhsTree *t)
{
	if (!t)
		return;
	if (t->thread) {
		__atomic_store_n(&t->stop, 1, __ATOMIC_RELEASE);
		g_thread_join(t->thread);
	}
	g_aligned_free(t->ring);
	profile_free(t->gd);
	g_free(t->gon);
	g_aligned_free(t->gt_mem);
	g_free(t->gflag);
	g_aligned_free(t);
}

/* Makes room for @n slots in the queue. If the helper is a whole ring behind, the scheduler
 * waits; and should a single shift outgrow the ring, the records written so far, whole, are
 * published as avail for the helper to apply (it can then free their slots), since pub moves
 * only at a shift's end. */
static void room_for(LhsTree *t, guint n)
{
	if (t->room - t->head >= n)
		return;
	if (__atomic_load_n(&t->avail, __ATOMIC_RELAXED) < t->head)
		__atomic_store_n(&t->avail, t->head, __ATOMIC_RELEASE);
	guint spins = 0;
	while ((t->room = __atomic_load_n(&t->applied, __ATOMIC_ACQUIRE) + RING) - t->head < n)
		relax(&spins);
}

static void put_slot(LhsTree *t, Slot a)
{
	__builtin_prefetch(&t->ring[(t->head + RING_AHEAD) & (RING - 1)], 1);
	t->ring[t->head++ & (RING - 1)] = a;
}

static void put(LhsTree *t, guint32 op, guint32 i, double x)
{
	if (!t->ring) {
		apply(t, &(Rec){op, i, x});
		t->head++;
		return;
	}
	if (x == floor(x) && fabs(x) < 268435456.0) {
		room_for(t, 1);
		put_slot(t, (Slot){i, (gint32)op + 8 * (gint32)x});
	} else {
		Slot b;
		memcpy(&b, &x, sizeof b);
		room_for(t, 2); /* both slots before either is published */
		put_slot(t, (Slot){i, (gint32)(op | R_BIG)});
		put_slot(t, b);
	}
}

void lh__tree_add(LhsTree *t, guint32 q, double x)
{
	put(t, R_ADD, q, x);
}

void lh__tree_add_after(LhsTree *t, guint32 b, double x)
{
	put(t, R_ADD_AFTER, b, x);
}

void lh__tree_count(LhsTree *t, guint32 q, gboolean on)
{
	put(t, on ? R_ON : R_OFF, q, 0);
}

guint64 lh__tree_commit(LhsTree *t)
{
	if (t->ring)
		__atomic_store_n(&t->pub, t->head, __ATOMIC_RELEASE);
	return t->head;
}

/* The helper's latest (peak, seq), read whole: the loads acquire in turn, so the version's
 * second read comes after both (see publish). */
static double read_latest(LhsTree *t, guint64 *seq)
{
	guint spins = 0;
	for (;;) {
		guint64 v1 = __atomic_load_n(&t->ver, __ATOMIC_ACQUIRE);
		if (!(v1 & 1)) {
			guint64 bits = __atomic_load_n(&t->peak_bits, __ATOMIC_ACQUIRE);
			guint64 s = __atomic_load_n(&t->seq, __ATOMIC_ACQUIRE);
			if (__atomic_load_n(&t->ver, __ATOMIC_RELAXED) == v1) {
				double peak;
				memcpy(&peak, &bits, sizeof peak);
				*seq = s;
				return peak;
			}
		}
		relax(&spins);
	}
}

double lh__tree_latest(LhsTree *t, guint64 *seq)
{
	if (t->ring)
		return read_latest(t, seq);
	if (t->gpend_n)
		flush(t);
	*seq = t->head;
	return GMX(t, ROOT);
}

double lh__tree_peak(LhsTree *t)
{
	if (!t->ring)
		return lh__tree_latest(t, &(guint64){0});
	g_return_val_if_fail(__atomic_load_n(&t->pub, __ATOMIC_RELAXED) == t->head, NAN);
	guint spins = 0;
	for (;;) {
		guint64 seq;
		double peak = read_latest(t, &seq);
		if (seq == t->head)
			return peak;
		relax(&spins);
	}
}
