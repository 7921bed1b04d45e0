/* lhsim tests — the profile tree of lhs's memory guard (schedulers/lhs-guard.c, issue 12): its
 * peak is the largest running sum of the changes at a position that counts, by hand and
 * against a direct recount on random changes, with the records applied at once and by the
 * helper thread; the helper's published peaks are each the exact peak of the records they
 * say they include. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "schedulers/lhs-guard.h"

/* The same profile kept directly: the change at each position, and which count. */
typedef struct {
	guint32 m;
	double *d;
	gboolean *on;
} Direct;

static double direct_peak(const Direct *p)
{
	double sum = 0, mx = -INFINITY;
	for (guint32 q = 0; q < p->m; q++) {
		sum += p->d[q];
		if (p->on[q])
			mx = MAX(mx, sum);
	}
	return mx;
}

/* By hand: 10 positions; a buffer of 100 B over positions 2 .. 5 (+100 at 2, -100 at 6) and
 * one of 50 B over 4 .. 8 (+50 at 4, -50 at 9): running sums 0 0 100 100 150 150 50 50 50 0,
 * so the peak is 150 B (at 4 and 5). Position 4 and 5 stop counting: the peak is 100 B (at 2
 * and 3). 30 B added from position 7 on: 80 B at 7 and 8, 30 B at 9, still 100 B. 60 B added
 * from 6 on (by a buffer whose last is 5: add_after): 110 B at 6, 50 + 30 + 60 = 140 B at 7
 * and 8, the peak. Position 4 counts again: 150 B. Each step is checked with the records applied at
 * once and by the helper. */
static void by_hand(gboolean helper)
{
	double *gd = lh__tree_profile(10, NULL);
	gd[2] = 100;
	gd[6] = -100;
	gd[4] = 50;
	gd[9] = -50;
	const guint32 gend[] = {5};
	LhsTree *t = lh__tree_new(gd, 10, gend, NULL);
	cr_assert_eq(lh__tree_peak(t), 150);
	if (helper)
		cr_assert(lh__tree_start(t), "no helper thread");
	lh__tree_count(t, 4, FALSE);
	lh__tree_count(t, 5, FALSE);
	cr_assert_eq(lh__tree_commit(t), 2);
	cr_assert_eq(lh__tree_peak(t), 100);
	lh__tree_add(t, 7, 30);
	lh__tree_commit(t);
	cr_assert_eq(lh__tree_peak(t), 100);
	lh__tree_add_after(t, 0, 60);
	lh__tree_commit(t);
	cr_assert_eq(lh__tree_peak(t), 140);
	lh__tree_count(t, 4, TRUE);
	cr_assert_eq(lh__tree_commit(t), 5);
	cr_assert_eq(lh__tree_peak(t), 150);
	guint64 seq = 0;
	cr_assert_eq(lh__tree_latest(t, &seq), 150); /* it waited above: the latest is current */
	cr_assert_eq(seq, 5);
	/* Past the last position nothing changes. */
	lh__tree_add(t, 10, 1000);
	lh__tree_commit(t);
	cr_assert_eq(lh__tree_peak(t), 150);
	lh__tree_free(t);
}

Test(tree, by_hand_at_once)
{
	by_hand(FALSE);
}

Test(tree, by_hand_with_the_helper)
{
	by_hand(TRUE);
}

/* Random shifts on 20 000 positions (2 500 blocks: a tree of 4 096 leaves, 13 levels): each shift a
 * few changes of whole bytes, positions that stop counting and count again. After every shift,
 * lh__tree_latest must give the exact peak of the records it says it includes (the direct recounts
 * are kept per shift), and every 50 shifts lh__tree_peak the current one. Long runs without a read
 * let more blocks wait than the batch holds. */
static void random_shifts(gboolean helper, guint32 seed)
{
	const guint32 m = 20000, nbuf = 500, shifts = 3000;
	GRand *rng = g_rand_new_with_seed(seed);
	g_autofree guint32 *gend = g_new(guint32, nbuf);
	for (guint32 b = 0; b < nbuf; b++)
		gend[b] = (guint32)g_rand_int_range(rng, 0, (gint32)m); /* gend + 1 may be m */
	Direct p = {m, g_new0(double, m), g_new(gboolean, m)};
	double *gd = lh__tree_profile(m, NULL);
	for (guint32 q = 0; q < m; q++) {
		p.on[q] = TRUE;
		gd[q] = p.d[q] = (double)g_rand_int_range(rng, -1000, 1001);
	}
	LhsTree *t = lh__tree_new(gd, m, gend, NULL);
	cr_assert_eq(lh__tree_peak(t), direct_peak(&p));
	if (helper)
		cr_assert(lh__tree_start(t), "no helper thread");
	/* Per shift: the records committed, and the direct peak then. */
	g_autofree guint64 *seq_at = g_new(guint64, shifts + 1);
	g_autofree double *peak_at = g_new(double, shifts + 1);
	seq_at[0] = 0;
	peak_at[0] = direct_peak(&p);
	guint32 checked_latest = 0;
	for (guint32 k = 1; k <= shifts; k++) {
		guint32 n = (guint32)g_rand_int_range(rng, 1, 9);
		for (guint32 j = 0; j < n; j++) {
			/* Now and then a change of 32 GiB or more, which takes two slots in the
			 * helper's queue. */
			double x = (double)g_rand_int_range(rng, -(1 << 20), 1 << 20);
			if (g_rand_int_range(rng, 0, 10) == 0)
				x = x * 32768 + (x < 0 ? -1 : 1) * 34359738368.0;
			guint32 q = (guint32)g_rand_int_range(rng, 0, (gint32)m);
			switch (g_rand_int_range(rng, 0, 4)) {
			case 0:
				lh__tree_add(t, q, x);
				p.d[q] += x;
				break;
			case 1: {
				guint32 b = (guint32)g_rand_int_range(rng, 0, (gint32)nbuf);
				lh__tree_add_after(t, b, x);
				if (gend[b] + 1 < m)
					p.d[gend[b] + 1] += x;
				break;
			}
			default: {
				gboolean on = g_rand_boolean(rng);
				lh__tree_count(t, q, on);
				p.on[q] = on;
			}
			}
		}
		seq_at[k] = lh__tree_commit(t);
		peak_at[k] = direct_peak(&p);
		guint64 seq = 0;
		double latest = lh__tree_latest(t, &seq);
		/* The shift whose records it includes: the peak then. */
		guint32 at = k;
		while (at > 0 && seq_at[at] > seq)
			at--;
		cr_assert_eq(seq_at[at], seq, "shift %u: a peak of %lu records, not a whole shift",
		             k, (unsigned long)seq);
		cr_assert_eq(latest, peak_at[at], "shift %u: latest %.17g after %lu records, %.17g",
		             k, latest, (unsigned long)seq, peak_at[at]);
		checked_latest += at < k;
		if (k % 50 == 0 || k == shifts)
			cr_assert_eq(lh__tree_peak(t), peak_at[k], "shift %u: the peak", k);
	}
	if (!helper)
		cr_assert_eq(checked_latest, 0, "without a helper the latest peak is current");
	lh__tree_free(t);
	g_free(p.d);
	g_free(p.on);
	g_rand_free(rng);
}

Test(tree, random_at_once)
{
	for (guint32 seed = 1; seed <= 3; seed++)
		random_shifts(FALSE, seed);
}

Test(tree, random_with_the_helper)
{
	for (guint32 seed = 1; seed <= 3; seed++)
		random_shifts(TRUE, seed);
}

/* One shift of 100 000 records, many times what the helper's queue holds (16 384 slots), a
 * tenth of them taking two slots: the helper must take them before the shift ends, or the
 * scheduler would wait for it for ever. No peak is published inside the shift; after it, the
 * peak is the direct recount. */
Test(tree, one_shift_longer_than_the_queue, .timeout = 60)
{
	const guint32 m = 1000, n = 100000;
	GRand *rng = g_rand_new_with_seed(7);
	Direct p = {m, g_new0(double, m), g_new(gboolean, m)};
	for (guint32 q = 0; q < m; q++)
		p.on[q] = TRUE;
	LhsTree *t = lh__tree_new(lh__tree_profile(m, NULL), m, NULL, NULL);
	cr_assert(lh__tree_start(t), "no helper thread");
	for (guint32 k = 0; k < n; k++) {
		guint32 q = (guint32)g_rand_int_range(rng, 0, (gint32)m);
		double x = (double)g_rand_int_range(rng, -1000, 1001);
		if (k % 10 == 0) /* 2^29 B and more: two slots */
			x = (x < 0 ? -1 : 1) * (536870912.0 + fabs(x));
		lh__tree_add(t, q, x);
		p.d[q] += x;
		guint64 seq = 0;
		if (k % 1000 == 0) /* nothing of the shift under way is published */
			cr_assert_eq(lh__tree_latest(t, &seq), 0, "a peak inside the shift");
	}
	cr_assert_eq(lh__tree_commit(t), n + n / 10);
	cr_assert_eq(lh__tree_peak(t), direct_peak(&p));
	lh__tree_free(t);
	g_free(p.d);
	g_free(p.on);
	g_rand_free(rng);
}
