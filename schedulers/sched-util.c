/* lhsim — helpers shared by the built-in schedulers. */
#include "schedulers/sched-util.h"

#include <stdlib.h>
#include <string.h>

void lh__pool_init(LhStreamPool *pool, const char *prefix, LhStreamRole role, guint32 cap)
{
	pool->prefix = prefix;
	pool->role = role;
	pool->cap = cap;
	pool->stream = g_array_new(FALSE, FALSE, sizeof(guint32));
	pool->in_flight = g_array_new(FALSE, TRUE, sizeof(guint32));
}

void lh__pool_clear(LhStreamPool *pool)
{
	if (pool->stream)
		g_array_free(pool->stream, TRUE);
	if (pool->in_flight)
		g_array_free(pool->in_flight, TRUE);
	pool->stream = pool->in_flight = NULL;
}

guint32 lh__pool_acquire(LhStreamPool *pool, LhPlan *plan)
{
	guint32 best = G_MAXUINT32, best_n = G_MAXUINT32;
	for (guint32 k = 0; k < pool->stream->len; k++) {
		guint32 n = g_array_index(pool->in_flight, guint32, k);
		if (n < best_n) {
			best = k;
			best_n = n;
		}
	}
	if (best == G_MAXUINT32 ||
	    (best_n > 0 && (pool->cap == 0 || pool->stream->len < pool->cap))) {
		g_autofree char *name = g_strdup_printf("%s%u", pool->prefix, pool->stream->len);
		guint32 s = lh_plan_add_stream(plan, name, pool->role);
		guint32 zero = 0;
		g_array_append_val(pool->stream, s);
		g_array_append_val(pool->in_flight, zero);
		best = pool->stream->len - 1;
	}
	g_array_index(pool->in_flight, guint32, best)++;
	return best;
}

void lh__pool_release(LhStreamPool *pool, guint32 member)
{
	guint32 *n = &g_array_index(pool->in_flight, guint32, member);
	g_return_if_fail(*n > 0);
	(*n)--;
}

guint32 lh__pool_stream(const LhStreamPool *pool, guint32 member)
{
	return g_array_index(pool->stream, guint32, member);
}

typedef LhSortRec Slot; /* d: start, u: seq, op */

/* The key of a finite double whose unsigned order is the double's (-0 counts as +0),
 * complemented for a descending order. */
static inline guint64 f64_key(double x, gboolean desc)
{
	if (x == 0)
		x = 0.0;
	guint64 b;
	memcpy(&b, &x, sizeof b);
	b = b >> 63 ? ~b : b | G_GUINT64_CONSTANT(0x8000000000000000);
	return desc ? ~b : b;
}

void lh__sort_f64_u32(LhSortRec *r, guint32 n, gboolean desc)
{
	lh__sort_f64_u32_in(r, n, desc, NULL);
}

void lh__sort_f64_u32_in(LhSortRec *r, guint32 n, gboolean desc, LhSortRec *scratch)
{
	if (n < 2)
		return;
	/* LSD radix, every pass stable: the guint32's digits first, then the double's. Digits
	 * of 16 bits for large inputs (fewer passes), 8 below 2^16 records (small counts to
	 * clear). The counts of every digit are taken in one read of the records (issue 12: a
	 * counting read per pass was a third of the sort), and a digit that is the same
	 * everywhere (a constant guint32, the exponent's top bits) moves nothing and is skipped
	 * without a pass. A guint32 the same in every record (lhs's ranks: ties keep the
	 * records' order) is not counted at all: its counts all fell on one counter, each
	 * increment waiting on the one before (issue 12). */
	const guint bits = n >= 1u << 16 ? 16 : 8, nu = 32 / bits, nd = nu + 64 / bits;
	const guint32 radix = 1u << bits, mask = radix - 1;
	g_autofree guint32 *count = g_new0(guint32, (gsize)nd * radix);
	guint32 u0 = r[0].u, udiff = 0;
	for (guint32 i = 0; i < n; i++) {
		udiff |= r[i].u ^ u0;
		guint64 k = f64_key(r[i].d, desc);
		for (guint p = nu; p < nd; p++)
			count[p * radix + ((k >> (bits * (p - nu))) & mask)]++;
	}
	for (guint32 i = 0; i < n && udiff; i++)
		for (guint p = 0; p < nu; p++)
			count[p * radix + ((r[i].u >> (bits * p)) & mask)]++;
	for (guint p = 0; p < nu && !udiff; p++) /* u0's digits everywhere: no pass below */
		count[p * radix + ((u0 >> (bits * p)) & mask)] = n;
	g_autofree LhSortRec *tmp = NULL;
	LhSortRec *src = r, *dst = NULL;
	for (guint p = 0; p < nd; p++) {
		guint32 *c = &count[p * radix];
		guint shift = p < nu ? bits * p : bits * (p - nu);
#define DIGIT(x) ((p < nu ? (x).u >> shift : f64_key((x).d, desc) >> shift) & mask)
		if (c[DIGIT(src[0])] == n)
			continue; /* the same digit everywhere: nothing moves */
		guint32 sum = 0;
		for (guint32 d = 0; d < radix; d++) {
			guint32 x = c[d];
			c[d] = sum;
			sum += x;
		}
		if (!dst)
			dst = scratch ? scratch : (tmp = g_new(LhSortRec, n));
		for (guint32 i = 0; i < n; i++)
			dst[c[DIGIT(src[i])]++] = src[i];
#undef DIGIT
		LhSortRec *t = src;
		src = dst;
		dst = t;
	}
	if (src != r)
		memcpy(r, src, sizeof(LhSortRec) * n);
}

void lh__emit_list_schedule(LhPlan *plan, const LhGraph *g, const guint32 *stream,
                            const double *start, const guint32 *seq)
{
	guint32 n = lh_graph_n_ops(g);
	g_autofree Slot *slot = g_new(Slot, MAX(n, 1));
	guint32 m = 0;
	for (guint32 i = 0; i < n; i++)
		if (lh_graph_op(g, i)->kind != LH_OP_INPUT)
			slot[m++] = (Slot){start[i], seq[i], i};
	lh__emit_list_schedule_placed(plan, g, stream, slot, m); /* sorts by (start, seq) */
}

void lh__emit_list_schedule_placed(LhPlan *plan, const LhGraph *g, const guint32 *stream,
                                   LhSortRec *slot, guint32 m)
{
	lh__sort_f64_u32(slot, m, FALSE); /* by start; ties keep the placement order */
	g_autofree guint32 *order = g_new(guint32, MAX(m, 1));
	for (guint32 k = 0; k < m; k++)
		order[k] = slot[k].op;
	/* The schedulers place every op after its deps, so the order is topological. */
	g_autoptr(GError) e = NULL;
	if (!lh_plan_add_list_schedule(plan, g, stream, order, m, &e))
		g_error("list schedule: %s", e->message);
}

void lh__class_limits(const LhParams *p, guint32 limit[LH_CLASS_N])
{
	limit[LH_CLASS_NONE] = G_MAXUINT32;
	limit[LH_CLASS_COLLECTIVE] = (guint32)lh_params_get_int(p, "collective-limit");
	limit[LH_CLASS_P2P] = (guint32)lh_params_get_int(p, "p2p-limit");
	limit[LH_CLASS_ASYNC_COMPUTE] = (guint32)lh_params_get_int(p, "async-compute-limit");
	gint64 mc = lh_params_get_int(p, "memcpy-limit");
	limit[LH_CLASS_MEMCPY] = mc == 0 ? G_MAXUINT32 : (guint32)mc;
}

double *lh__blevel(const LhGraph *g, const double *cost)
{
	guint32 n = lh_graph_n_ops(g);
	const guint32 *topo = lh_graph_topo(g);
	double *bl = g_new0(double, n);
	for (guint32 k = n; k-- > 0;) {
		guint32 v = topo[k], ns;
		const guint32 *s = lh_graph_succs(g, v, &ns);
		double best = 0;
		for (guint32 j = 0; j < ns; j++)
			if (bl[s[j]] > best)
				best = bl[s[j]];
		bl[v] = cost[v] + best;
	}
	return bl;
}

void lh__heap_init(LhHeap *h, LhHeapLess less, const void *cx)
{
	*h = (LhHeap){NULL, 0, 0, less, cx};
}

void lh__heap_clear(LhHeap *h)
{
	g_free(h->v);
	h->v = NULL;
	h->n = h->cap = 0;
}

void lh__heap_push(LhHeap *h, guint32 x)
{
	if (h->n == h->cap) {
		h->cap = h->cap ? 2 * h->cap : 64;
		h->v = g_renew(guint32, h->v, h->cap);
	}
	guint32 i = h->n++;
	while (i > 0 && h->less(h->cx, x, h->v[(i - 1) / 2])) {
		h->v[i] = h->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->v[i] = x;
}

guint32 lh__heap_pop(LhHeap *h)
{
	guint32 top = h->v[0], x = h->v[--h->n], i = 0;
	for (;;) {
		guint32 l = 2 * i + 1, best = l;
		if (l >= h->n)
			break;
		if (l + 1 < h->n && h->less(h->cx, h->v[l + 1], h->v[l]))
			best = l + 1;
		if (!h->less(h->cx, h->v[best], x))
			break;
		h->v[i] = h->v[best];
		i = best;
	}
	if (h->n)
		h->v[i] = x;
	return top;
}
