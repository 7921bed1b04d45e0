/* lhsim — internal to liblhsim: pages made present ahead of their first use, by a helper
 * thread (issue 12). Not installed.
 *
 * The kernel gives a process new memory a page at a time: the first write to each 4 KiB page
 * traps, and the kernel zeroes the page and maps it. At 10^6 ops `lhs` writes some 290 MB of
 * new arrays, 73 000 page faults that took about a tenth of its time (bench-sched, perf: 115
 * ms for 290 MB touched page by page on the bench machine). LhPages hands such arrays, as they
 * are allocated, to a helper thread that makes their pages present with
 * madvise(MADV_POPULATE_WRITE) (Linux 5.14) while the caller goes on: the zeroing is done on
 * the other core. Populating does not change what the memory holds, so the caller may read
 * and write an array at once, before the helper has reached it; a page the helper has not
 * reached yet faults as it would have. Nothing is handed over below LH_PAGES_MIN bytes, nor
 * where the system cannot populate (other systems, older kernels): then nothing changes.
 * Results do not depend on it, only wall time.
 *
 * Populating makes pages present in the guest's page tables only. On a VM that hands free
 * memory back to its host (free page reporting, as on the Firecracker VMs of bench/README.md),
 * the first write to each new page still traps to the host, about 6 us a page there: 40 MiB
 * written page by page took 112 ms, populated first and then written 60 ms, and written again
 * 2 ms. Only a write moves that cost off the caller's core. So after populating, the helper
 * writes each page once, leaving its value as it is (an atomic add of 0 to its first byte:
 * sim/pages.c, touch, says why that is safe while the caller writes). And an array that the
 * caller first touches later, in a known order and with known values (a trace's unset timings
 * and zero issue times), can be filled by the helper instead (lh__pages_fill): the caller then
 * reads or writes a record only once the helper has written it (lh__fill_wait).
 *
 * For tests: with LHSIM_PAGES_LAG_US=N in the environment, a helper sleeps N us before each
 * 256 KiB step of a fill, so that its callers surely overtake it and must wait. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Smaller arrays are left to fault as usual: a thread is not worth their few pages. */
#define LH_PAGES_MIN ((gsize)1 << 20)

/* The largest record lh__pages_fill copies, in bytes. */
#define LH_PAGES_REC_MAX 64

typedef struct _LhPages LhPages;

LhPages *lh__pages_new(void); /* caller frees; starts no thread until an array is handed over */
/* Hands @bytes of memory at @mem (an array just allocated, of any alignment) to the helper,
 * which starts with the first array handed over. */
void lh__pages_add(LhPages *p, void *mem, gsize bytes);
/* A fill handed to the helper (lh__pages_fill). */
typedef struct _LhFill LhFill;

/* Has the helper write @n copies of the @size-byte record @rec (at most LH_PAGES_REC_MAX) at
 * @mem, in order, 256 KiB at a time; the helper writes the fills it holds in turns, a step of
 * each, so that a long one does not hold back the next. Until lh__fill_wait() says record i
 * is written, the caller must not touch it. Below LH_PAGES_MIN bytes, or without a thread,
 * the caller's own thread writes it all before this returns. The fill belongs to @p. */
LhFill *lh__pages_fill(LhPages *p, void *mem, gsize n, const void *rec, gsize size);
/* Waits until record @i of @f is written (all of them, for @i past the last); returns how many
 * are, which the caller may keep: what is written stays so. */
gsize lh__fill_wait(LhFill *f, gsize i);
/* Waits for the helper to finish what it was handed and frees @p (NULL is fine). Call it
 * before any array handed over is freed or moved (the helper writes to it); every fill is
 * then written. */
void lh__pages_free(LhPages *p);

/* g_new(@type, @n) and g_new0(@type, @n), handed to @pages. */
#define lh__pages_alloc(pages, type, n)                                                            \
	((type *)lh__pages_hand((pages), g_new(type, (n)), sizeof(type) * (gsize)(n)))
#define lh__pages_alloc0(pages, type, n)                                                           \
	((type *)lh__pages_hand((pages), g_new0(type, (n)), sizeof(type) * (gsize)(n)))

/* lh__pages_add(@p, @mem, @bytes), then @mem. */
static inline void *lh__pages_hand(LhPages *p, void *mem, gsize bytes)
{
	lh__pages_add(p, mem, bytes);
	return mem;
}

G_END_DECLS
