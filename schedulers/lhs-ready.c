/* lhsim — `lhs`'s ready set: the index over the ready nodes (schedulers/lhs-ready.h says what
 * it promises; schedulers/lhs.c holds XLA's rules).
 *
 * The ready set, kept so that each step only compares the candidates that can win.
 *
 * XLA compares every ready node with the best so far, rule by rule. The first rules are plain
 * keys: kForceDelay, kScheduleDone (a done whose class has a free slot; a done without one is
 * no candidate at all), kLessStall (nodes ready now tie at 0), kStartAtZeroDepth and
 * kFreeBackedupResource (which together put the starts of a backed-up class first, then
 * kernels and starts with async depth > 0, then starts with depth 0), kAsyncDepth (the
 * highest). A node that loses on one of these keys never wins, and the winner of the scan is
 * the winner of the same scan over the nodes that tie on them; so only those are compared,
 * with the full rule list, in ascending node order. When memory pressure is active the memory
 * rules come first, and the memory index finds the candidates instead (see "Memory pressure"
 * below). With the test hook LHSIM_LHS_REFERENCE set every ready node is compared
 * (lh__ready_all), as XLA does; tests/test-sched-props.c checks that both give the same plans.
 *
 * Structures: dones by class; force-delayed nodes; nodes not ready yet in a min-heap by ready
 * time; nodes ready now: kernels and starts with async depth > 0 in a set by (depth, node),
 * starts with depth 0 in a list, and every ready-now start also in a list of its class.
 *
 * Issue 12 (10^6 ops in a second): the sets ordered by (async depth, deepest first, node) are
 * bit trees over each node's rank in that order (LhsBits), computed once by a radix sort,
 * instead of balanced trees that compare through a callback; the memory index's orders by
 * (net change, rank) are heaps that know each node's place, walked in order from the root
 * when a step needs the least ones. Both give the nodes in the same order as before, so the
 * candidates, the picks and the plans are the same (bench/sched-plans.sh compares them).
 */
#include "schedulers/lhs-ready.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- LhsBits ---- */

void lh__bits_init(LhsBits *b, guint32 n)
{
	memset(b, 0, sizeof *b);
	guint32 words = MAX((n + 63) / 64, 1), total = 0;
	for (;;) {
		g_assert(b->levels < LHS_BITS_LEVELS);
		b->off[b->levels] = total;
		b->size[b->levels++] = words;
		total += words;
		if (words == 1)
			break;
		words = (words + 63) / 64;
	}
	b->w = g_new0(guint64, total);
}

void lh__bits_clear(LhsBits *b)
{
	g_free(b->w);
	b->w = NULL;
}

void lh__bits_add(LhsBits *b, guint32 k)
{
	b->count++;
	for (guint32 l = 0; l < b->levels; l++) {
		guint64 *w = &b->w[b->off[l] + (k >> 6)];
		guint64 was = *w;
		*w = was | (G_GUINT64_CONSTANT(1) << (k & 63));
		if (was)
			break; /* the levels above know this word already */
		k >>= 6;
	}
}

void lh__bits_del(LhsBits *b, guint32 k)
{
	b->count--;
	for (guint32 l = 0; l < b->levels; l++) {
		guint64 *w = &b->w[b->off[l] + (k >> 6)];
		*w &= ~(G_GUINT64_CONSTANT(1) << (k & 63));
		if (*w)
			break;
		k >>= 6;
	}
}

/* The least member under word @k of level @l (not 0). */
static guint32 bits_down_first(const LhsBits *b, guint32 l, guint32 k)
{
	for (;;) {
		k = (k << 6) | (guint32)__builtin_ctzll(b->w[b->off[l] + k]);
		if (l-- == 0)
			return k;
	}
}

guint32 lh__bits_first(const LhsBits *b)
{
	if (!b->count)
		return G_MAXUINT32;
	return bits_down_first(b, b->levels - 1, 0);
}

guint32 lh__bits_last(const LhsBits *b)
{
	if (!b->count)
		return G_MAXUINT32;
	guint32 k = 0;
	for (guint32 l = b->levels; l-- > 0;)
		k = (k << 6) | (63 - (guint32)__builtin_clzll(b->w[b->off[l] + k]));
	return k;
}

guint32 lh__bits_next(const LhsBits *b, guint32 k)
{
	if (k == G_MAXUINT32)
		return G_MAXUINT32;
	guint64 i = (guint64)k + 1; /* the least candidate at this level */
	for (guint32 l = 0; l < b->levels; l++) {
		guint64 word = i >> 6;
		if (word >= b->size[l])
			return G_MAXUINT32;
		guint64 m = b->w[b->off[l] + word] & (~G_GUINT64_CONSTANT(0) << (i & 63));
		if (m) {
			guint32 x = (guint32)((word << 6) | (guint64)__builtin_ctzll(m));
			return l ? bits_down_first(b, l - 1, x) : x;
		}
		i = word + 1; /* the words after this one, as bits of the level above */
	}
	return G_MAXUINT32;
}

/* ---- LhsIncHeap: the memory index's orders ---- */

/* Without branches: sifting compares entries in no predictable pattern (issue 12: these
 * compares were the most mispredicted branches of lhs at 10^5 ops, callgrind --branch-sim). */
static inline gboolean inc_less(const LhsIncEnt *a, const LhsIncEnt *b)
{
	return (a->key < b->key) | ((a->key == b->key) & (a->rank < b->rank));
}

static void inc_place(LhsIncHeap *h, guint32 *hpos, guint32 k, LhsIncEnt x)
{
	h->e[k] = x;
	hpos[x.node] = k;
}

/* The heaps are 4-ary (children of k: 4k + 1 .. 4k + 4): half the levels of a binary heap,
 * so half the moves, each of which writes the moved node's place (hpos, a cache miss of its
 * own), and a node's children in one cache line (issue 12: sifting was a tenth of lhs's
 * instructions at 10^6 ops, with some 17 000 ready nodes in the heap). */
#define INC_D 4

static void inc_up(LhsIncHeap *h, guint32 *hpos, guint32 k)
{
	LhsIncEnt x = h->e[k];
	while (k > 0) {
		guint32 up = (k - 1) / INC_D;
		if (!inc_less(&x, &h->e[up]))
			break;
		inc_place(h, hpos, k, h->e[up]);
		k = up;
	}
	inc_place(h, hpos, k, x);
}

/* The least child of entry @k, or a place past the last entry if it has none. */
static inline guint32 inc_least_child(const LhsIncHeap *h, guint32 k)
{
	guint32 c = INC_D * k + 1;
	if (c + INC_D <= h->n) { /* the least of four, in a tournament without branches */
		guint32 a = c + inc_less(&h->e[c + 1], &h->e[c]);
		guint32 b = c + 2 + inc_less(&h->e[c + 3], &h->e[c + 2]);
		return inc_less(&h->e[b], &h->e[a]) ? b : a;
	}
	for (guint32 j = c + 1; j < h->n; j++)
		c = inc_less(&h->e[j], &h->e[c]) ? j : c;
	return c;
}

static void inc_down(LhsIncHeap *h, guint32 *hpos, guint32 k)
{
	LhsIncEnt x = h->e[k];
	for (;;) {
		guint32 c = inc_least_child(h, k);
		if (c >= h->n)
			break;
		if (!inc_less(&h->e[c], &x))
			break;
		inc_place(h, hpos, k, h->e[c]);
		k = c;
	}
	inc_place(h, hpos, k, x);
}

/* Entries before the first in the heap's block (see LhsIncHeap). */
#define INC_SKEW 3
G_STATIC_ASSERT(sizeof(LhsIncEnt) == 16 && (INC_SKEW + 1) * 16 == 64 && INC_D == 4);

static void inc_free(LhsIncHeap *h)
{
	g_aligned_free(h->mem);
	h->mem = h->e = NULL;
}

static void inc_push(LhsIncHeap *h, guint32 *hpos, LhsIncEnt x)
{
	if (h->n == h->cap) {
		h->cap = MAX(16, 2 * h->cap);
		void *mem = g_aligned_alloc((gsize)h->cap + INC_SKEW, sizeof(LhsIncEnt), 64);
		LhsIncEnt *e = (LhsIncEnt *)mem + INC_SKEW;
		if (h->n)
			memcpy(e, h->e, sizeof(LhsIncEnt) * h->n);
		g_aligned_free(h->mem);
		h->mem = mem;
		h->e = e;
	}
	inc_place(h, hpos, h->n++, x);
	inc_up(h, hpos, h->n - 1);
}

static void inc_del(LhsIncHeap *h, guint32 *hpos, guint32 v)
{
	guint32 k = hpos[v];
	LhsIncEnt last = h->e[--h->n];
	if (k == h->n)
		return;
	inc_place(h, hpos, k, last);
	inc_up(h, hpos, k);
	inc_down(h, hpos, hpos[last.node]);
}

/* The heap's entries of key @lo, the least, in order, without taking them out: a frontier of
 * places (itself a min-heap), from the root; each step takes the least and adds its children
 * of key @lo (the others, and all below them, have larger keys). A walk of k entries costs
 * O(k log k), whatever the heap's size; the usual walk under memory pressure, one entry of the
 * least key, reads the root and its children (issue 12: walking on to the first entry of a
 * larger key, to stop there, was a tenth of lhs's instructions at 10^6 ops). */
struct _LhsWalk {
	const LhsIncHeap *h;
	double lo;
	guint32 *d; /* the frontier */
	guint32 n, cap;
};

static gboolean walk_less(const LhsIncHeap *h, guint32 a, guint32 b)
{
	return inc_less(&h->e[a], &h->e[b]);
}

/* @h is not empty and its root's key is @lo. */
static void walk_start(LhsWalk *w, const LhsIncHeap *h, double lo)
{
	w->h = h;
	w->lo = lo;
	if (!w->cap) {
		w->cap = 64;
		w->d = g_new(guint32, w->cap);
	}
	w->d[0] = 0;
	w->n = 1;
}

static void walk_push(LhsWalk *w, guint32 x)
{
	if (w->h->e[x].key != w->lo)
		return;
	if (w->n == w->cap) {
		w->cap *= 2;
		w->d = g_renew(guint32, w->d, w->cap);
	}
	guint32 *d = w->d, k = w->n++;
	while (k > 0) {
		guint32 up = (k - 1) / 2;
		if (!walk_less(w->h, x, d[up]))
			break;
		d[k] = d[up];
		k = up;
	}
	d[k] = x;
}

/* The next node of key lo in the heap's order, or G_MAXUINT32. */
static guint32 walk_next(LhsWalk *w)
{
	if (!w->n)
		return G_MAXUINT32;
	const LhsIncHeap *h = w->h;
	guint32 *d = w->d, top = d[0], n = --w->n, x = d[n];
	guint32 k = 0;
	for (;;) {
		guint32 c = 2 * k + 1;
		if (c >= n)
			break;
		if (c + 1 < n && walk_less(h, d[c + 1], d[c]))
			c++;
		if (!walk_less(h, d[c], x))
			break;
		d[k] = d[c];
		k = c;
	}
	if (n)
		d[k] = x;
	for (guint32 c = INC_D * top + 1; c <= INC_D * top + INC_D && c < h->n; c++)
		walk_push(w, c);
	return h->e[top].node;
}

/* ---- the min-tree of mem_peak over rank ---- */

/* A min-tree over deep's nodes by rank, whose leaves are blocks of 64 ranks (one word of
 * deep's bits): a leaf holds the least mem_peak of the block's members. It is brought up to
 * date lazily: a change only notes its block, and a query first recounts the noted blocks
 * from deep's bits and the members' mem_peak, then pulls the paths above them (or the whole
 * tree when they are many). Over the limit, the common case under memory pressure, no step
 * queries it (issue 12: at 10^6 ops, 359 of 1.3 M steps do), so most changes cost a flag;
 * and the tree is 64 times smaller than one leaf per rank (42 MB of pages at 10^6 ops). */
#define SEG_B 64

struct _LhsSeg {
	double *t;      /* the tree: node k's children are 2k and 2k + 1, leaves from n */
	guint32 n;      /* leaves (blocks), a power of two */
	guint32 *dirty; /* blocks changed since the last query */
	guint32 n_dirty;
	guint8 *flag; /* per block: in dirty */
};

/* @v's mem_peak, or whether it is in deep, changed. */
static void seg_set(LhsReady *r, guint32 v)
{
	LhsSeg *g = r->seg;
	guint32 k = r->rank[v] / SEG_B;
	if (!g->flag[k]) {
		g->flag[k] = 1;
		g->dirty[g->n_dirty++] = k;
	}
}

/* Recounts the noted blocks. Each node on a noted path is computed after the last noted leaf
 * below it has been pulled past it, so from its children's final values: the tree of pulling
 * after every change. */
static void seg_sync(const LhsReady *r, const Lhs *s)
{
	LhsSeg *g = r->seg;
	const LhsBits *d = &r->deep;
	for (guint32 i = 0; i < g->n_dirty; i++) {
		guint32 k = g->dirty[i];
		double mn = INFINITY;
		for (guint64 w = d->w[d->off[0] + k]; w; w &= w - 1) {
			guint32 v = r->rank_node[k * SEG_B + (guint32)__builtin_ctzll(w)];
			mn = MIN(mn, s->mc[v].peak);
		}
		g->t[g->n + k] = mn;
	}
	if (g->n_dirty > g->n / 32) {
		for (guint32 k = g->n; k-- > 1;)
			g->t[k] = MIN(g->t[2 * k], g->t[2 * k + 1]);
	} else {
		for (guint32 i = 0; i < g->n_dirty; i++)
			for (guint32 k = (g->n + g->dirty[i]) / 2; k > 0; k /= 2)
				g->t[k] = MIN(g->t[2 * k], g->t[2 * k + 1]);
	}
	for (guint32 i = 0; i < g->n_dirty; i++)
		g->flag[g->dirty[i]] = 0;
	g->n_dirty = 0;
}

/* The first rank at or after @from under tree node @k (blocks @lo..@hi) whose node passes
 * kMemoryPeakOverLimit, or G_MAXUINT32. A subtree holds one that passes iff its least does:
 * rounding keeps x + usage monotonic in x. */
static guint32 seg_find_in(const LhsReady *r, const Lhs *s, guint32 k, guint32 lo, guint32 hi,
                           guint32 from)
{
	const LhsSeg *g = r->seg;
	if ((guint64)hi * SEG_B <= from || !lhs_peak_fits(s, g->t[k]))
		return G_MAXUINT32;
	if (hi - lo == 1) { /* the block's members from @from on, in rank order */
		const LhsBits *d = &r->deep;
		guint64 w = d->w[d->off[0] + lo];
		if (from > lo * SEG_B)
			w &= ~G_GUINT64_CONSTANT(0) << (from - lo * SEG_B);
		for (; w; w &= w - 1) {
			guint32 q = lo * SEG_B + (guint32)__builtin_ctzll(w);
			if (lhs_peak_fits(s, s->mc[r->rank_node[q]].peak))
				return q;
		}
		return G_MAXUINT32;
	}
	guint32 mid = lo + (hi - lo) / 2;
	guint32 x = seg_find_in(r, s, 2 * k, lo, mid, from);
	return x != G_MAXUINT32 ? x : seg_find_in(r, s, 2 * k + 1, mid, hi, from);
}

static guint32 seg_find(const LhsReady *r, const Lhs *s, guint32 from)
{
	if (r->seg->n_dirty)
		seg_sync(r, s);
	return seg_find_in(r, s, 1, 0, r->seg->n, from);
}

/* ---- the ready set ---- */

static gboolean in_deep(const LhsReady *r, const Lhs *s, guint32 v)
{
	return r->where[v] == W_NOW && !(s->nd[v].type == NODE_START && s->nd[v].depth == 0);
}

static void list_add(LhsVec *l, guint32 *slot, guint32 v)
{
	slot[v] = l->len;
	lhs_vec_push(l, v);
}

static void list_del(LhsVec *l, guint32 *slot, guint32 v)
{
	guint32 k = slot[v], last = l->d[l->len - 1];
	l->d[k] = last;
	slot[last] = k;
	l->len = l->len - 1;
}

static gboolean heap_less(const Lhs *s, guint32 a, guint32 b)
{
	if (s->rel[a].rt != s->rel[b].rt)
		return s->rel[a].rt < s->rel[b].rt;
	return a < b;
}

static void heap_push(LhsVec *h, const Lhs *s, guint32 v)
{
	lhs_vec_push(h, v);
	guint32 *d = h->d;
	for (guint32 k = h->len - 1; k > 0;) {
		guint32 up = (k - 1) / 2;
		if (!heap_less(s, d[k], d[up]))
			break;
		guint32 t = d[k];
		d[k] = d[up];
		d[up] = t;
		k = up;
	}
}

static guint32 heap_pop(LhsVec *h, const Lhs *s)
{
	guint32 *d = h->d, top = d[0], n = h->len - 1;
	d[0] = d[n];
	h->len = n;
	for (guint32 k = 0;;) {
		guint32 l = 2 * k + 1, r = l + 1, m = k;
		if (l < n && heap_less(s, d[l], d[m]))
			m = l;
		if (r < n && heap_less(s, d[r], d[m]))
			m = r;
		if (m == k)
			break;
		guint32 t = d[k];
		d[k] = d[m];
		d[m] = t;
		k = m;
	}
	return top;
}

void lh__ready_init(LhsReady *r, const Lhs *s)
{
	memset(r, 0, sizeof *r);
	guint32 m = s->n_nodes;
	/* The rank order: async depth, deepest first, then node. A node's depth is 0 or a done's
	 * (s->dsrc), so only the dones' depths are sorted (a stable radix sort), their distinct
	 * values numbered from the deepest, and the nodes put in the order of their values'
	 * numbers, depth 0 last, by a counting sort in node order, which keeps node order among
	 * equal depths (issue 12: a radix sort of every node's depth took 40 - 70 ms at 10^6
	 * ops, and its two arrays of 16 bytes a node a page fault per 256 nodes). */
	/* The records (one done a pair) and the sort's scratch: in the memory index's per-node
	 * changes where they are kept, whose pages the page helper has made present or the index
	 * would fault in, and which nothing reads before the index starts (lhs_plan); they are
	 * zero again below. m >= 2 n_pairs nodes hold both. (Issue 12: two arrays of their own
	 * were 2 800 page faults on the scheduler's core at 10^6 ops, 40 - 50 ms of the set-up on
	 * the slower VM of bench/README.md.) */
	G_STATIC_ASSERT(sizeof(LhsMemChange) == sizeof(LhSortRec));
	LhSortRec *own = NULL, *rec = (LhSortRec *)s->mc;
	if (!rec)
		rec = own = g_new(LhSortRec, 2 * (gsize)MAX(s->n_pairs, 1));
	guint32 ns = 0;
	for (guint32 v = 0; v < m; v++)
		if (s->dsrc[v] == v) /* u = 0: ties keep node order, the sort is stable */
			rec[ns++] = (LhSortRec){s->nd[v].depth, 0, v};
	g_assert(ns <= s->n_pairs);
	lh__sort_f64_u32_in(rec, ns, TRUE, rec + ns);
	r->rank = lh__pages_alloc(s->pages, guint32, MAX(m, 1));
	guint32 nv = 0; /* distinct depths above 0; the number of each done's is kept in rank */
	for (guint32 k = 0; k < ns; k++) {
		if (k > 0 && rec[k].d != rec[k - 1].d)
			nv++;
		r->rank[rec[k].op] = nv;
	}
	nv += ns > 0; /* numbers 0 .. nv - 1 for depths above 0, nv for 0 */
	if (own)
		g_free(own);
	else
		memset(rec, 0, 2 * sizeof(LhSortRec) * ns); /* the index's changes, zero again */
	g_autofree guint32 *at = g_new0(guint32, (gsize)nv + 2);
#define DEPTH_NUMBER(v) (s->dsrc[v] == G_MAXUINT32 ? nv : r->rank[s->dsrc[v]])
	for (guint32 v = 0; v < m; v++)
		at[DEPTH_NUMBER(v) + 1]++;
	for (guint32 k = 0; k <= nv; k++)
		at[k + 1] += at[k];
	r->rank_node = lh__pages_alloc(s->pages, guint32, MAX(m, 1));
	for (guint32 v = 0; v < m; v++)
		r->rank_node[at[DEPTH_NUMBER(v)]++] = v;
#undef DEPTH_NUMBER
	for (guint32 k = 0; k < m; k++)
		r->rank[r->rank_node[k]] = k;
	for (guint32 k = 1; k < m && m <= 1u << 17; k++) { /* every test's graph: check it */
		guint32 a = r->rank_node[k - 1], b = r->rank_node[k];
		g_assert(s->nd[a].depth > s->nd[b].depth ||
		         (s->nd[a].depth == s->nd[b].depth && a < b));
	}
	for (guint c = 0; c < LHS_NCLASS; c++) {
		lh__bits_init(&r->dnow[c], m);
		r->dheap[c] = lhs_vec_new();
		r->starts[c] = lhs_vec_new();
	}
	r->fd = lhs_vec_new();
	r->heap = lhs_vec_new();
	r->later = lhs_vec_new();
	r->zero = lhs_vec_new();
	lh__bits_init(&r->deep, m);
	r->stale_t = -1;
	r->where = lh__pages_alloc0(s->pages, guint8, m);
	r->slot = lh__pages_alloc0(s->pages, guint32, m);
	r->sslot = lh__pages_alloc0(s->pages, guint32, m);
	if (s->mem_index_ok) /* for the memory index, ahead (see s->mc in lhs_plan) */
		r->hpos = lh__pages_alloc0(s->pages, guint32, m);
}

void lh__ready_clear(LhsReady *r)
{
	for (guint c = 0; c < LHS_NCLASS; c++) {
		lh__bits_clear(&r->dnow[c]);
		lhs_vec_free(r->dheap[c]);
		lhs_vec_free(r->starts[c]);
		inc_free(&r->dones_by_inc[c]);
	}
	lhs_vec_free(r->fd);
	lhs_vec_free(r->heap);
	lhs_vec_free(r->later);
	lhs_vec_free(r->zero);
	lh__bits_clear(&r->deep);
	g_free(r->where);
	g_free(r->slot);
	g_free(r->sslot);
	g_free(r->rank);
	g_free(r->rank_node);
	inc_free(&r->by_inc);
	g_free(r->hpos);
	if (r->walk)
		g_free(r->walk->d);
	g_free(r->walk);
	if (r->seg) {
		g_free(r->seg->t);
		g_free(r->seg->dirty);
		g_free(r->seg->flag);
		g_free(r->seg);
	}
}

/* The memory index's heap of @v (not force-delayed). */
static LhsIncHeap *inc_heap(LhsReady *r, const Lhs *s, guint32 v)
{
	return s->nd[v].type == NODE_DONE ? &r->dones_by_inc[s->nd[v].cls] : &r->by_inc;
}

static LhsIncEnt inc_ent(const LhsReady *r, const Lhs *s, guint32 v)
{
	return (LhsIncEnt){s->mc[v].inc, r->rank[v], v};
}

/* Before now_add(), or for a node already in its place (lh__ready_index_build). */
static void index_add(LhsReady *r, Lhs *s, guint32 v)
{
	lh__lhs_memory_change(s, v, &s->mc[v].inc, &s->mc[v].peak);
	if (s->nd[v].fd)
		return;
	LhsIncHeap *h = inc_heap(r, s, v);
	if (h == &r->by_inc && r->gone != G_MAXUINT32 && r->hpos[r->gone] == 0) {
		inc_place(h, r->hpos, 0, inc_ent(r, s, v)); /* in the picked node's place */
		inc_down(h, r->hpos, 0);
		r->gone = G_MAXUINT32;
	} else {
		inc_push(h, r->hpos, inc_ent(r, s, v));
	}
	if (in_deep(r, s, v))
		seg_set(r, v);
}

/* Over the limit the pick is most often the least node of by_inc, its root, and the nodes it
 * releases come in at once, one of them often the next least. So the picked root stays
 * (gone) until the first node to come in takes its place and sifts down, a level or two,
 * instead of the heap's last entry sifting down from the root, all the levels, and the new
 * node up (issue 12: the heaps' sifting was lhs's costliest function at 10^6 ops). Until
 * then it is an entry like any other; lh__ready_advance removes it if no node came in. The
 * heaps' shape changes, not their order: the walks read them in order. */
static void index_remove(LhsReady *r, const Lhs *s, guint32 v)
{
	if (s->nd[v].fd)
		return;
	LhsIncHeap *h = inc_heap(r, s, v);
	if (h == &r->by_inc && r->hpos[v] == 0 && r->gone == G_MAXUINT32) {
		r->gone = v;
		return;
	}
	inc_del(h, r->hpos, v);
}

/* Removes the picked root if no node took its place (see index_remove). */
static void index_settle(LhsReady *r)
{
	if (r->gone == G_MAXUINT32)
		return;
	inc_del(&r->by_inc, r->hpos, r->gone);
	r->gone = G_MAXUINT32;
}

/* A ready node's memory change moves by (@d_inc, @d_peak) bytes; @d_inc < 0 (a buffer it
 * counted went live: lh__ready_buffer), so its key only falls and it only sifts up. */
static void index_move(LhsReady *r, Lhs *s, guint32 v, double d_inc, double d_peak)
{
	g_assert(d_inc < 0);
	s->mc[v].inc += d_inc;
	s->mc[v].peak += d_peak;
	if (!s->nd[v].fd) {
		LhsIncHeap *h = inc_heap(r, s, v);
		guint32 k = r->hpos[v];
		h->e[k].key = s->mc[v].inc;
		inc_up(h, r->hpos, k);
	}
	if (in_deep(r, s, v))
		seg_set(r, v);
}

/* Buffer @b leaves state 0 (not live yet) for state @to (1 live, 2 freed).
 * lh__lhs_memory_change() counts it for a node that uses it only in state 0, so every ready
 * user now needs its bytes less; and the node that frees it (its freer) counts it as freed
 * only in state 1. (Neither can happen in fact while that node is ready, since all users of a
 * buffer are scheduled before its producer is ready; it is handled all the same.) */
void lh__ready_buffer(LhsReady *r, Lhs *s, guint32 b, guint8 to)
{
	double bytes = s->bf[b].bytes;
	if (bytes == 0)
		return;
	for (guint32 k = s->user_at[b]; k < s->user_at[b + 1]; k++)
		__builtin_prefetch(&r->where[s->user[k]]);
	for (guint32 k = s->user_at[b]; k < s->user_at[b + 1]; k++)
		if (r->where[s->user[k]] != W_NONE)
			index_move(r, s, s->user[k], -bytes, -bytes);
	guint32 v = s->bf[b].freer;
	if (to == 1 && v != G_MAXUINT32 && r->where[v] != W_NONE)
		index_move(r, s, v, -bytes, 0);
}

/* Fetches what lead_add, pick and lh__ready_remove read of @v. */
static void prefetch_ready(const LhsReady *r, const Lhs *s, guint32 v)
{
	__builtin_prefetch(&s->nd[v]);
	__builtin_prefetch(&s->rel[v]);
	__builtin_prefetch(&s->mc[v]);
	__builtin_prefetch(&s->at[v]);
	__builtin_prefetch(&r->where[v]);
	__builtin_prefetch(&r->rank[v]);
	__builtin_prefetch(&r->hpos[v]);
}

/* Over the limit the next pick is most often the least node of a heap (issue 12: at 10^6
 * ops, nodes that lie anywhere in the graph in the first 200 000 steps, each record of each a
 * cache miss of its own, in turn). Settling now rather than at the next lh__ready_advance
 * changes nothing: nothing touches the heaps in between. */
void lh__ready_ahead(LhsReady *r, const Lhs *s)
{
	index_settle(r);
	const LhsIncHeap *h0 = &r->by_inc;
	if (h0->n) {
		guint32 v = h0->e[0].node;
		prefetch_ready(r, s, v);
		/* Most often the root was fetched a step ago, as the least child of the root then,
		 * or came in this step: its lists can be fetched now, a step before they are read
		 * (prefetch_node in lhs.c). And its least child is most often the pick after. */
		__builtin_prefetch(&s->nbuf[s->at[v].nbuf]);
		__builtin_prefetch(&s->pred[s->at[v].pred]);
		guint32 c = inc_least_child(h0, 0);
		if (c < h0->n)
			prefetch_ready(r, s, h0->e[c].node);
	}
	for (guint32 mk = r->dmask; mk; mk &= mk - 1) {
		const LhsIncHeap *h = &r->dones_by_inc[__builtin_ctz(mk)];
		if (h->n)
			prefetch_ready(r, s, h->e[0].node);
	}
}

static void now_add(LhsReady *r, const Lhs *s, guint32 v)
{
	r->where[v] = W_NOW;
	if (s->nd[v].type == NODE_START) {
		list_add(r->starts[s->nd[v].cls], r->sslot, v);
		if (s->nd[v].depth == 0) {
			list_add(r->zero, r->slot, v);
			return;
		}
	}
	lh__bits_add(&r->deep, r->rank[v]);
	if (r->seg)
		seg_set(r, v);
}

void lh__ready_add(LhsReady *r, Lhs *s, guint32 v)
{
	r->n++;
	if (s->mem_index)
		index_add(r, s, v);
	if (s->nd[v].type == NODE_DONE) {
		if (!s->waiting_dones[s->nd[v].cls]++)
			r->dmask |= 1u << s->nd[v].cls;
		if (s->rel[v].rt > s->now) {
			r->where[v] = W_DONE;
			heap_push(r->dheap[s->nd[v].cls], s, v);
			heap_push(r->later, s, v);
		} else {
			r->where[v] = W_DNOW;
			lh__bits_add(&r->dnow[s->nd[v].cls], r->rank[v]);
		}
	} else if (s->nd[v].fd) {
		r->where[v] = W_FD;
		list_add(r->fd, r->slot, v);
		if (s->rel[v].rt > s->now)
			heap_push(r->later, s, v);
	} else if (s->rel[v].rt <= s->now) {
		now_add(r, s, v);
	} else {
		r->where[v] = W_HEAP;
		heap_push(r->heap, s, v);
	}
}

static void heap_clean(LhsReady *r, const Lhs *s)
{
	while (r->heap->len && r->where[r->heap->d[0]] != W_HEAP)
		heap_pop(r->heap, s);
}

/* Moves nodes whose ready time has come from the heap to the ready-now structures. When no
 * done can run and nothing is ready now, the nodes that become ready first all tie on
 * kLessStall, so they join the ready-now structures too: whichever is picked, now then
 * reaches their ready time, so they are all ready now again at the next step. */
static void dheap_clean(LhsReady *r, const Lhs *s, guint c)
{
	LhsVec *h = r->dheap[c];
	while (h->len && r->where[h->d[0]] != W_DONE)
		heap_pop(h, s);
}

static void dnow_add(LhsReady *r, const Lhs *s, guint c)
{
	guint32 v = heap_pop(r->dheap[c], s);
	r->where[v] = W_DNOW;
	lh__bits_add(&r->dnow[c], r->rank[v]);
	dheap_clean(r, s, c);
}

void lh__ready_advance(LhsReady *r, const Lhs *s)
{
	if (s->mem_index)
		index_settle(r);
	/* Nodes moved in ahead of time are picked first unless a memory rule picked another
	 * node; then now may not have reached their ready time, and they stay (see
	 * lh__ready_exact). */
	if (r->early_t > s->now)
		r->stale_t = MAX(r->stale_t, r->early_t);
	r->early_t = -1;
	/* Dones: those whose time has come; then, if no done with a free slot is ready now,
	 * the free-slot dones that become ready first (they tie on kLessStall and win
	 * kScheduleDone over everything else). */
	gboolean done_now = FALSE, done_later = FALSE;
	double dt = G_MAXDOUBLE;
	/* Only the classes with dones in the ready set (dmask): another has none ready now,
	 * and only dead entries in its heap, which wait there until it has dones again (issue
	 * 12: most classes have no done at most steps; looking at each class's heap took 7 %
	 * of lhs's instructions at 10^5 ops). */
	for (guint32 mk = r->dmask; mk; mk &= mk - 1) {
		guint c = (guint)__builtin_ctz(mk);
		dheap_clean(r, s, c);
		while (r->dheap[c]->len && s->rel[r->dheap[c]->d[0]].rt <= s->now)
			dnow_add(r, s, c);
		if (!lhs_class_free(s, c))
			continue;
		if (r->dnow[c].count > 0)
			done_now = TRUE;
		if (r->dheap[c]->len) {
			done_later = TRUE;
			dt = MIN(dt, s->rel[r->dheap[c]->d[0]].rt);
		}
	}
	if (!done_now && done_later) {
		for (guint32 mk = r->dmask; mk; mk &= mk - 1) {
			guint c = (guint)__builtin_ctz(mk);
			while (lhs_class_free(s, c) && r->dheap[c]->len &&
			       s->rel[r->dheap[c]->d[0]].rt == dt)
				dnow_add(r, s, c);
		}
		r->early_t = dt;
	}
	heap_clean(r, s);
	while (r->heap->len && s->rel[r->heap->d[0]].rt <= s->now) {
		now_add(r, s, heap_pop(r->heap, s));
		heap_clean(r, s);
	}
	if (!r->heap->len || r->deep.count > 0 || r->zero->len > 0)
		return;
	if (done_now || done_later)
		return;
	double t = s->rel[r->heap->d[0]].rt;
	r->early_t = t;
	while (r->heap->len && s->rel[r->heap->d[0]].rt == t) {
		now_add(r, s, heap_pop(r->heap, s));
		heap_clean(r, s);
	}
}

void lh__ready_remove(LhsReady *r, Lhs *s, guint32 v)
{
	r->n--;
	if (s->mem_index)
		index_remove(r, s, v);
	switch (r->where[v]) {
	case W_DONE: /* lazy, like W_HEAP */
		if (!--s->waiting_dones[s->nd[v].cls])
			r->dmask &= ~(1u << s->nd[v].cls);
		break;
	case W_DNOW:
		if (!--s->waiting_dones[s->nd[v].cls])
			r->dmask &= ~(1u << s->nd[v].cls);
		lh__bits_del(&r->dnow[s->nd[v].cls], r->rank[v]);
		break;
	case W_FD:
		list_del(r->fd, r->slot, v);
		break;
	case W_HEAP:
		/* Lazy deletion: the entry stays in the heap, dead (where != W_HEAP), and is
		 * dropped when it reaches the top. Only the reference scan picks from the heap. */
		break;
	case W_NOW:
		if (s->nd[v].type == NODE_START) {
			list_del(r->starts[s->nd[v].cls], r->sslot, v);
			if (s->nd[v].depth == 0) {
				list_del(r->zero, r->slot, v);
				break;
			}
		}
		lh__bits_del(&r->deep, r->rank[v]);
		if (r->seg)
			seg_set(r, v);
		break;
	}
	r->where[v] = W_NONE;
}

double lh__ready_next_time(LhsReady *r, const Lhs *s)
{
	double t = -1;
	if (r->heap->len) /* heap_clean()ed by lh__ready_advance */
		t = s->rel[r->heap->d[0]].rt;
	if (r->early_t > s->now) /* nodes in the ready-now structures ahead of time */
		t = r->early_t;
	/* Dones and force-delayed nodes: drop entries picked already or ready by now. */
	while (r->later->len) {
		guint32 v = r->later->d[0];
		if ((r->where[v] == W_DONE || r->where[v] == W_FD) && s->rel[v].rt > s->now)
			break;
		heap_pop(r->later, s);
	}
	if (r->later->len) {
		double rt = s->rel[r->later->d[0]].rt;
		if (t < 0 || rt < t)
			t = rt;
	}
	return t;
}

static int u32_cmp(gconstpointer a, gconstpointer b)
{
	guint32 x = *(const guint32 *)a, y = *(const guint32 *)b;
	return (x > y) - (x < y);
}

/* Sorts the candidates ascending: most steps have a handful, which an insertion sort orders
 * without qsort's call per comparison (issue 12). */
static void sort_nodes(LhsVec *out)
{
	guint32 *v = out->d, n = out->len;
	if (n > 32) {
		qsort(v, n, sizeof(guint32), u32_cmp);
		return;
	}
	for (guint32 i = 1; i < n; i++) {
		guint32 x = v[i], j = i;
		for (; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

/* Appends the nodes of @b (by rank). */
static void collect_bits(const LhsReady *r, const LhsBits *b, LhsVec *out)
{
	for (guint32 k = lh__bits_first(b); k != G_MAXUINT32; k = lh__bits_next(b, k))
		lhs_vec_push(out, r->rank_node[k]);
}

/* Every ready node, in no order. */
static void ready_collect(const LhsReady *r, LhsVec *out)
{
	out->len = 0;
	for (guint c = 0; c < LHS_NCLASS; c++) {
		collect_bits(r, &r->dnow[c], out);
		for (guint32 k = 0; k < r->dheap[c]->len; k++)
			if (r->where[r->dheap[c]->d[k]] == W_DONE)
				lhs_vec_push(out, r->dheap[c]->d[k]);
	}
	lhs_vec_pushn(out, r->fd->d, r->fd->len);
	for (guint32 k = 0; k < r->heap->len; k++)
		if (r->where[r->heap->d[k]] == W_HEAP)
			lhs_vec_push(out, r->heap->d[k]);
	lhs_vec_pushn(out, r->zero->d, r->zero->len);
	collect_bits(r, &r->deep, out);
}

void lh__ready_all(const LhsReady *r, LhsVec *out)
{
	ready_collect(r, out);
	sort_nodes(out);
}

const char *lh__ready_candidates(const LhsReady *r, const Lhs *s, LhsVec *out)
{
	const char *rule = "kScheduleDone";
	out->len = 0;
	/* kScheduleDone: dones with a free slot, all ready now (lh__ready_advance); kLessStall
	 * ties; kAsyncDepth: the deepest. */
	double best = -1;
	for (guint c = 0; c < LHS_NCLASS; c++)
		if (lhs_class_free(s, c) && r->dnow[c].count > 0) {
			guint32 v = r->rank_node[lh__bits_first(&r->dnow[c])];
			best = MAX(best, s->nd[v].depth);
		}
	for (guint c = 0; c < LHS_NCLASS && best >= 0; c++) {
		if (!lhs_class_free(s, c))
			continue;
		const LhsBits *b = &r->dnow[c];
		for (guint32 k = lh__bits_first(b); k != G_MAXUINT32; k = lh__bits_next(b, k)) {
			guint32 v = r->rank_node[k];
			if (s->nd[v].depth != best)
				break;
			lhs_vec_push(out, v);
		}
	}
	if (!out->len) {
		gboolean any_now = r->deep.count > 0 || r->zero->len > 0;
		if (any_now) {
			/* kLessStall ties at 0; kFreeBackedupResource: starts of a backed-up
			 * class (they also pass kStartAtZeroDepth). */
			rule = r->heap->len ? "kLessStall" : "kFreeBackedupResource";
			for (guint c = 0; c < LHS_NCLASS; c++)
				if (lhs_backed_up(s, c))
					lhs_vec_pushn(out, r->starts[c]->d, r->starts[c]->len);
			if (!out->len && r->deep.count > 0) {
				/* kAsyncDepth: the deepest kernels and starts. */
				rule = r->zero->len ? "kStartAtZeroDepth" : "kAsyncDepth";
				guint32 k = lh__bits_first(&r->deep);
				guint32 top = r->rank_node[k];
				for (; k != G_MAXUINT32; k = lh__bits_next(&r->deep, k)) {
					guint32 v = r->rank_node[k];
					if (s->nd[v].depth != s->nd[top].depth)
						break;
					lhs_vec_push(out, v);
				}
				return rule; /* ranks of one depth are in ascending node order */
			}
			if (!out->len) /* only starts of depth 0 are ready now */
				lhs_vec_pushn(out, r->zero->d, r->zero->len);
		}
	}
	if (!out->len) { /* kForceDelay: force-delayed nodes last */
		lhs_vec_pushn(out, r->fd->d, r->fd->len);
		rule = "kForceDelay";
	}
	sort_nodes(out);
	return rule;
}

/* Memory pressure.
 *
 * Once usage passes half the limit and some node could take it over the limit (mem_rules in
 * lhs_plan), XLA's memory rules come before the plain keys, and the plain candidates above
 * may miss the winner. The reference scan then compares every ready node at every step
 * (O(ops x ready nodes): 19 s at 10^5 ops in bench-sched). The memory index instead keeps
 * every ready node's memory change up to date as buffers become live (lh__ready_buffer: only
 * the ready users of that buffer change), the nodes that are not force-delayed ordered by
 * (net change, deepest first), and each step feeds only a few nodes to the leading rules.
 *
 * Why the winner is the same. The leading rules (lh__lhs_prefer_lead: kForceDelay, the two
 * memory rules, the plain keys kScheduleDone .. kAsyncDepth) are each a key of one node (a
 * flag, or a number compared with < or >), so together they compare key tuples
 * lexicographically. pick() scans its candidates in ascending node order keeping the best so
 * far, and the best always holds the highest tuple seen so far (a higher tuple wins, a lower
 * one loses, an equal one goes on to the later rules, which keep the tuple). So from the
 * first node with the highest tuple on, only the nodes with that tuple (the set M) can
 * replace the best, each compared with the best exactly as in a scan of M alone. Hence
 * scanning ANY ascending set of eligible nodes that holds M picks what the scan of every ready
 * node picks, whatever the later rules (kAvoidWaste is not a key) do. Lead below keeps, of
 * the nodes fed to it, those with the highest tuple: M, once every node of M has been fed.
 * The cases:
 *   usage >= limit (lh__ready_over_candidates): kDecreaseMemoryOverLimit is the second key,
 *     so M lies among the eligible nodes that are not force-delayed with the least net
 *     change: the first ones of the kernel-and-start heap and of the done heaps of classes
 *     with a free slot. If there are none, every eligible node is force-delayed, and all of
 *     those are the candidates.
 *   usage < limit (lh__ready_fit_candidates): the keys are kForceDelay, kMemoryPeakOverLimit,
 *     then the plain keys. If some node passes kMemoryPeakOverLimit, M is among the nodes
 *     that pass; they are walked in order of their plain keys, as far as one can still tie
 *     with the best. If none passes, all tie on it, and the plain candidates hold M.
 *   no memory rule (usage + the largest use of any node within the limit): every node passes
 *     kMemoryPeakOverLimit and kDecreaseMemoryOverLimit needs usage at the limit (where the
 *     largest use is 0), so the plain candidates hold M, as without memory pressure.
 * The stored changes are the memory model's exactly: buffer sizes are whole numbers and all
 * of them together stay below 2^53 (the index is kept only then), so every sum and
 * difference of them is exact in a double, in whatever order it is taken. pick() asserts it.
 *
 * lh__ready_advance moves nodes to the ready-now structures ahead of their time when they tie
 * on kLessStall as the best nodes; without memory rules one of them is picked and now reaches
 * their time. A memory rule may pick another node, and then nodes that are not ready stay in
 * the ready-now structures, which lh__ready_candidates and lh__ready_fit_candidates do not
 * allow for. Until now reaches their time (lh__ready_exact), lh__ready_scan feeds every ready
 * node to the leading rules (lh__ready_over_candidates does not use those structures). With
 * lhs's costs this does not happen (a released node is ready at once unless it is a start
 * waiting out its async latency, since no other edge's latency exceeds its user's cost; and
 * starts are moved ahead only when no other node that is not force-delayed is eligible); the
 * guard is cheap. */
typedef struct {
	LhsCand best; /* a node with the highest key tuple so far */
	LhsVec *out;  /* the nodes that tie with it */
	gboolean have;
	const char *why;
} Lead;

static void lead_add(Lead *l, const Lhs *s, guint32 v)
{
	/* The overlap limit: a done needs a free slot of its class (as in pick). */
	if (s->nd[v].type == NODE_DONE && !lhs_class_free(s, s->nd[v].cls))
		return;
	LhsCand c = {.node = v, .mem_inc = s->mc[v].inc, .mem_peak = s->mc[v].peak};
	int w = l->have ? lh__lhs_prefer_lead(s, &l->best, &c, &l->why) : -1;
	if (w > 0)
		return;
	if (w < 0) {
		l->out->len = 0;
		l->best = c;
		l->have = TRUE;
	}
	lhs_vec_push(l->out, v);
}

/* Every eligible ready node is force-delayed: all of them. */
static const char *fd_candidates(const LhsReady *r, LhsVec *out)
{
	out->len = 0;
	lhs_vec_pushn(out, r->fd->d, r->fd->len);
	sort_nodes(out);
	return "kForceDelay";
}

/* Whether @v passes kMemoryPeakOverLimit. */
static gboolean fits(const Lhs *s, guint32 v)
{
	return lhs_peak_fits(s, s->mc[v].peak);
}

gboolean lh__ready_exact(const LhsReady *r, const Lhs *s)
{
	return r->stale_t <= s->now;
}

/* Whether no node can beat @v before kAsyncDepth, among those tied with it on
 * kForceDelay and kDecreaseMemoryOverLimit, with usage at or over the limit: it passes
 * kMemoryPeakOverLimit or none can (over the limit, mem_peak >= 0 fails it), it is a done
 * (dones tie on kStartAtZeroDepth and kFreeBackedupResource, at the top of both), and it has
 * no stall. */
static gboolean over_top(const Lhs *s, guint32 v)
{
	return (s->usage > s->limit_bytes || fits(s, v)) && s->nd[v].type == NODE_DONE &&
	       MAX(s->rel[v].rt - s->now, 0) == 0;
}

/* Whether @v, and every node after it in its heap's walk, loses to the best so far: the best
 * is over_top() and @v is a kernel or start (@plain: from the first heap) or a less deep
 * done. */
static gboolean over_beaten(const Lead *l, const Lhs *s, gboolean plain, guint32 v)
{
	return l->have && over_top(s, l->best.node) &&
	       (plain || s->nd[v].depth < s->nd[l->best.node].depth);
}

/* usage >= limit: M, ascending, from the nodes with the least net change (see "Memory
 * pressure"). Each heap gives them deepest first; once the best so far is over_top(), a less
 * deep done loses to it (on kAsyncDepth), and so do all kernels and starts (on kScheduleDone),
 * so the walk stops there. */
const char *lh__ready_over_candidates(const LhsReady *r, const Lhs *s, LhsVec *out)
{
	const LhsIncHeap *t[1 + LHS_NCLASS];
	guint nt = 0;
	t[nt++] = &r->by_inc;
	for (guint32 mk = r->dmask; mk; mk &= mk - 1) { /* the classes with dones, ascending */
		guint c = (guint)__builtin_ctz(mk);
		if (lhs_class_free(s, c))
			t[nt++] = &r->dones_by_inc[c];
	}
	gboolean any = FALSE;
	double lo = 0;
	for (guint i = 0; i < nt; i++) {
		if (!t[i]->n)
			continue;
		double key = t[i]->e[0].key; /* the node's mem_inc, without reading it */
		if (!any || key < lo)
			lo = key;
		any = TRUE;
	}
	if (!any)
		return fd_candidates(r, out);
	Lead l = {.out = out, .why = "kDecreaseMemoryOverLimit"};
	out->len = 0;
	for (guint i = nt; i-- > 0;) { /* the done heaps first */
		if (!t[i]->n || t[i]->e[0].key != lo)
			continue;
		gboolean more = FALSE; /* most often the root alone has the least key */
		for (guint32 c = 1; c <= INC_D && c < t[i]->n; c++)
			more |= t[i]->e[c].key == lo;
		if (!more) {
			if (!over_beaten(&l, s, i == 0, t[i]->e[0].node))
				lead_add(&l, s, t[i]->e[0].node);
			continue;
		}
		walk_start(r->walk, t[i], lo);
		for (guint32 v = walk_next(r->walk); v != G_MAXUINT32; v = walk_next(r->walk)) {
			if (over_beaten(&l, s, i == 0, v))
				break;
			lead_add(&l, s, v);
		}
	}
	sort_nodes(out);
	return l.why;
}

const char *lh__ready_scan(const LhsReady *r, const Lhs *s, LhsVec *out)
{
	/* The heaps hold every ready node that is not force-delayed; they are fed to the leading
	 * rules in node order, so that the rule named (for --explain) does not depend on where
	 * the heaps keep them, which depends on the order they came in. */
	LhsVec *all = lhs_vec_new();
	for (guint32 k = 0; k < r->by_inc.n; k++)
		lhs_vec_push(all, r->by_inc.e[k].node);
	for (guint c = 0; c < LHS_NCLASS; c++)
		for (guint32 k = 0; k < r->dones_by_inc[c].n; k++)
			lhs_vec_push(all, r->dones_by_inc[c].e[k].node);
	sort_nodes(all);
	Lead l = {.out = out, .why = "kMemoryPeakOverLimit"};
	out->len = 0;
	for (guint32 k = 0; k < all->len; k++)
		lead_add(&l, s, all->d[k]);
	lhs_vec_free(all);
	if (!l.have)
		return fd_candidates(r, out);
	return l.why; /* out is ascending: the nodes were fed so */
}

/* Feeds @v to the leading rules if it passes kMemoryPeakOverLimit. */
static void lead_add_fit(Lead *l, const Lhs *s, guint32 v)
{
	if (fits(s, v))
		lead_add(l, s, v);
}

/* Walks a set of nodes that tie on the plain keys but kAsyncDepth, deepest first, up to the
 * depth of the best node so far (the rest lose to it). */
static void fit_walk(Lead *l, const LhsReady *r, const Lhs *s, const LhsBits *b)
{
	for (guint32 k = lh__bits_first(b); k != G_MAXUINT32; k = lh__bits_next(b, k)) {
		guint32 v = r->rank_node[k];
		if (l->have && s->nd[v].depth < s->nd[l->best.node].depth)
			break;
		lead_add_fit(l, s, v);
	}
}

/* usage < limit (see "Memory pressure"): M, ascending. If a node passes
 * kMemoryPeakOverLimit, M is among those that do, and only those are fed to the leading
 * rules. The eligible nodes that are not force-delayed fall into tiers, each ranked above the
 * next by a plain key on which all its nodes tie (see lh__ready_candidates for why the
 * structures hold these sets): (1) ready-now dones with a free slot; (2) the other dones with
 * a free slot (more stall); (3) ready-now backed-up starts; (4) other ready-now kernels and
 * starts of async depth > 0 (below 3 on kFreeBackedupResource); (5) other ready-now starts of
 * depth 0 (below on kStartAtZeroDepth); (6) nodes not ready now (more stall). Within tiers 1
 * and 4 only kAsyncDepth is left among the plain keys, and their sets are deepest first. So
 * once a node that passes is found, no node of a later tier, nor a less deep one of its own
 * tier, can reach its key tuple, and the walk stops there. If none passes, all tie on
 * kMemoryPeakOverLimit, and the plain candidates hold M. Tier 4 can hold thousands of nodes
 * that do not pass ahead of the first that does (bench-sched at 10^6 ops): the min-tree
 * (seg_find) goes from one node that passes to the next in deep's order. */
const char *lh__ready_fit_candidates(const LhsReady *r, const Lhs *s, LhsVec *out)
{
	Lead l = {.out = out, .why = "kMemoryPeakOverLimit"};
	out->len = 0;
	for (guint c = 0; c < LHS_NCLASS; c++) /* 1 */
		if (lhs_class_free(s, c))
			fit_walk(&l, r, s, &r->dnow[c]);
	if (l.have)
		goto found;
	for (guint c = 0; c < LHS_NCLASS; c++) /* 2 */
		for (guint32 k = 0; lhs_class_free(s, c) && k < r->dheap[c]->len; k++)
			if (r->where[r->dheap[c]->d[k]] == W_DONE)
				lead_add_fit(&l, s, r->dheap[c]->d[k]);
	if (l.have)
		goto found;
	for (guint c = 0; c < LHS_NCLASS; c++) /* 3 */
		if (lhs_backed_up(s, c))
			for (guint32 k = 0; k < r->starts[c]->len; k++)
				lead_add_fit(&l, s, r->starts[c]->d[k]);
	if (l.have)
		goto found;
	/* 4: deep's nodes that pass, deepest first, from the min-tree (as fit_walk). */
	for (guint32 k = seg_find(r, s, 0); k != G_MAXUINT32; k = seg_find(r, s, k + 1)) {
		guint32 v = r->rank_node[k];
		if (l.have && s->nd[v].depth < s->nd[l.best.node].depth)
			break;
		if (!(lhs_releases(s, v) && lhs_constrained(s, v)))
			lead_add(&l, s, v);
	}
	if (l.have)
		goto found;
	for (guint32 k = 0; k < r->zero->len; k++) { /* 5 */
		guint32 v = r->zero->d[k];
		if (!lhs_constrained(s, v))
			lead_add_fit(&l, s, v);
	}
	if (l.have)
		goto found;
	for (guint32 k = 0; k < r->heap->len; k++) /* 6 */
		if (r->where[r->heap->d[k]] == W_HEAP)
			lead_add_fit(&l, s, r->heap->d[k]);
	if (!l.have)
		return lh__ready_candidates(r, s, out);
found:
	sort_nodes(out);
	return l.why;
}

/* Starts keeping the memory index: the first step with the memory rules (see "Memory
 * pressure"), so that runs without memory pressure do not pay for it. */
void lh__ready_index_build(LhsReady *r, Lhs *s)
{
	s->mem_index = TRUE;
	g_assert(s->mc && r->hpos); /* allocated ahead (lhs_plan, lh__ready_init) */
	r->walk = g_new0(LhsWalk, 1);
	r->gone = G_MAXUINT32;
	LhsSeg *g = r->seg = g_new0(LhsSeg, 1);
	for (g->n = 1; (guint64)g->n * SEG_B < s->n_nodes; g->n *= 2)
		;
	g->t = g_new(double, 2 * g->n);
	for (guint32 k = 0; k < 2 * g->n; k++)
		g->t[k] = INFINITY;
	g->dirty = g_new(guint32, g->n);
	g->flag = g_new0(guint8, g->n);
	/* Every ready node, in node order: their records are then read in the order they lie
	 * (issue 12: in rank order, as the ready set's structures give them, each node's were a
	 * cache miss, 135 000 nodes ready at the first step at 10^6 ops). The heaps' order,
	 * (key, rank), does not depend on the order they come in; where an entry sits in a
	 * heap's array does, and nothing that decides a pick or a rule's name reads that
	 * (lh__ready_scan sorts). */
	for (guint32 v = 0; v < s->n_nodes; v++)
		if (r->where[v] != W_NONE)
			index_add(r, s, v);
}
