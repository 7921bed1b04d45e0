/* lhsim tests — pages made present ahead by a helper thread (sim/pages.c, issue 12): arrays
 * handed over end up resident (mincore), small ones are left alone, and what the caller writes
 * while the helper works is what the memory holds afterwards. On a system whose kernel cannot
 * populate (MADV_POPULATE_WRITE, Linux 5.14) the residency tests are skipped: the helper then
 * does nothing, which the last test still checks. */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "helpers.h"
#include "sim/pages-private.h"

static gsize page_size(void)
{
	return (gsize)sysconf(_SC_PAGESIZE);
}

/* Fresh anonymous memory: no page resident until touched. */
static guint8 *fresh(gsize bytes)
{
	void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert(m != MAP_FAILED);
	return m;
}

/* Pages of [m, m + bytes) resident now. */
static gsize resident(guint8 *m, gsize bytes)
{
	gsize np = bytes / page_size(), n = 0;
	g_autofree unsigned char *v = g_new(unsigned char, np);
	cr_assert_eq(mincore(m, bytes, v), 0);
	for (gsize k = 0; k < np; k++)
		n += v[k] & 1;
	return n;
}

static gboolean can_populate(void)
{
#ifdef MADV_POPULATE_WRITE
	guint8 *m = fresh(page_size());
	int rc = madvise(m, page_size(), MADV_POPULATE_WRITE);
	munmap(m, page_size());
	return rc == 0;
#else
	return FALSE;
#endif
}

Test(pages, handed_arrays_end_up_resident)
{
	if (!can_populate())
		cr_skip_test("this kernel cannot populate pages (MADV_POPULATE_WRITE)");
	gsize big = 16 * LH_PAGES_MIN, small = LH_PAGES_MIN / 2;
	guint8 *a = fresh(big), *b = fresh(big), *c = fresh(small);
	cr_assert_eq(resident(a, big), 0);
	LhPages *p = lh__pages_new();
	lh__pages_add(p, a, big);
	lh__pages_add(p, c, small); /* below LH_PAGES_MIN: left to fault as usual */
	lh__pages_free(p);          /* waits for the helper */
	cr_assert_eq(resident(a, big), big / page_size());
	cr_assert_eq(resident(b, big), 0); /* not handed over */
	cr_assert_eq(resident(c, small), 0);
	/* Handed over unaligned: the whole pages inside it only, so the first and last pages,
	 * which it shares with its neighbours, are not made present. */
	p = lh__pages_new();
	lh__pages_add(p, b + 100, big - 200);
	lh__pages_free(p);
	cr_assert_eq(resident(b, big), big / page_size() - 2);
	munmap(a, big);
	munmap(b, big);
	munmap(c, small);
}

Test(pages, contents_are_the_callers)
{
	/* Written while the helper populates, from both ends: every byte ends as written and
	 * the zeroed array's other bytes stay 0, whether or not the kernel can populate. */
	gsize n = 8 * LH_PAGES_MIN / sizeof(guint32);
	LhPages *p = lh__pages_new();
	guint32 *z = lh__pages_alloc0(p, guint32, n);
	guint32 *w = lh__pages_alloc(p, guint32, n);
	for (gsize k = 0; k < n; k++) {
		w[n - 1 - k] = (guint32)(n - 1 - k) * 2654435761u;
		if (k % 3 == 0)
			z[k] = (guint32)k + 1;
	}
	lh__pages_free(p);
	for (gsize k = 0; k < n; k++) {
		cr_assert_eq(w[k], (guint32)k * 2654435761u, "w[%zu]", k);
		cr_assert_eq(z[k], k % 3 == 0 ? (guint32)k + 1 : 0, "z[%zu]", k);
	}
	g_free(z);
	g_free(w);
	lh__pages_free(NULL);
	lh__pages_free(lh__pages_new()); /* nothing handed over: no helper to wait for */
}

/* A record of 24 bytes, neither a power of two nor all one byte. */
typedef struct {
	gint64 a, b;
	guint32 c;
	guint8 d[4];
} Rec;

static gboolean rec_eq(const Rec *x, const Rec *y)
{
	return memcmp(x, y, sizeof(Rec)) == 0;
}

/* Three fills: a big one (the helper's), a small one (below LH_PAGES_MIN: the caller's, written
 * when lh__pages_fill returns), a big one of zeros. The helper writes the big ones in turns; each
 * record of the last is read once lh__fill_wait says it is written, in an order that jumps
 * about (so that some reads wait for the helper), and every record of every fill ends as asked,
 * over what the arrays held before. */
Test(pages, fills_write_every_record)
{
	const Rec one = {-1, 0x0102030405060708, 0xdeadbeef, {1, 2, 3, 4}};
	const Rec zero = {0, 0, 0, {0, 0, 0, 0}};
	gsize nb = 3 * LH_PAGES_MIN / sizeof(Rec) + 7, ns = 100,
	      nz = 2 * LH_PAGES_MIN / sizeof(Rec);
	Rec *big = g_new(Rec, nb), *small = g_new(Rec, ns);
	Rec *z = (Rec *)(void *)fresh(nz * sizeof(Rec));
	memset(big, 0x5a, nb * sizeof(Rec)); /* not what the fills write */
	memset(small, 0x5a, ns * sizeof(Rec));
	memset(z, 0x77, nz * sizeof(Rec));
	LhPages *p = lh__pages_new();
	LhFill *fb = lh__pages_fill(p, big, nb, &one, sizeof one);
	LhFill *fs = lh__pages_fill(p, small, ns, &one, sizeof one);
	LhFill *fz = lh__pages_fill(p, z, nz, &zero, sizeof zero);
	for (gsize k = 0; k < ns; k++)
		cr_assert(rec_eq(&small[k], &one), "small[%zu]", k);
	cr_assert_eq(lh__fill_wait(fs, 0), ns);
	for (gsize j = 0; j < nz; j++) {
		gsize k = (j * 7919) % nz; /* 7919 is prime and no factor of nz */
		gsize w = lh__fill_wait(fz, k);
		cr_assert(w > k && w <= nz, "%zu written, record %zu of %zu", w, k, nz);
		cr_assert(rec_eq(&z[k], &zero), "z[%zu]", k);
	}
	cr_assert_eq(lh__fill_wait(fb, nb - 1), nb);
	for (gsize k = 0; k < nb; k++)
		cr_assert(rec_eq(&big[k], &one), "big[%zu]", k);
	lh__pages_free(p);
	g_free(big);
	g_free(small);
	munmap(z, nz * sizeof(Rec));
}
