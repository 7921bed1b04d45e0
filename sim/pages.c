/* lhsim — pages made present, or arrays filled, ahead of their first use
 * (sim/pages-private.h). */
#include "sim/pages-private.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
#define LH_PAGES_CAN 1
#else
#define LH_PAGES_CAN 0
#endif

/* A fill is written, and its progress published, this many bytes at a time (rounded down to
 * whole records), and an array handed over is populated this much at a time; the helper
 * takes what it holds in turns of one step each. */
#define FILL_STEP ((gsize)256 << 10)

/* What the helper writes: a fill, or an array handed over (size 0), which it populates and
 * touches. */
struct _LhFill {
	guintptr start, end; /* the array (handed over: its whole pages) */
	guintptr at;         /* the helper's: written up to here */
	gsize size;          /* the record's size; 0: populated and touched only (lh__pages_add) */
	gboolean zero;       /* the record is all zeros */
	guint8 rec[LH_PAGES_REC_MAX];
	gsize done; /* bytes written (atomic: the helper stores, the caller loads) */
};

/* The queue's last job: the helper ends once what it holds is written. */
static LhFill the_end;

struct _LhPages {
	GAsyncQueue *jobs; /* of LhFill, then &the_end */
	GThread *helper;
	gboolean no_thread; /* none could be started: the caller fills */
	gsize page;
	gint failed;      /* the kernel cannot populate: hand no more pages over */
	GPtrArray *fills; /* of LhFill, freed with @p */
	gulong lag_us;    /* tests: the helper sleeps this long before each step of a fill */
};

/* Makes the whole pages of [start, end) present, where the kernel can. */
static void populate(LhPages *p, guintptr start, guintptr end)
{
#if LH_PAGES_CAN
	if (g_atomic_int_get(&p->failed))
		return;
	start = (start + p->page - 1) & ~(guintptr)(p->page - 1);
	end &= ~(guintptr)(p->page - 1);
	/* The arrays handed over stay allocated until lh__pages_free (its callers' rule): the
	 * touch below would fault on one unmapped meanwhile. */
	if (end > start && madvise((void *)start, end - start, MADV_POPULATE_WRITE) != 0 &&
	    (errno == EINVAL || errno == EPERM))
		g_atomic_int_set(&p->failed, 1); /* no such advice here */
#else
	(void)p;
	(void)start;
	(void)end;
#endif
}

/* Writes each whole page of [start, end) once, leaving it as it is: a populated page's first
 * write still traps to the host on the VMs of bench/README.md (sim/pages-private.h), and only
 * a write moves that trap to the helper's core. The write is an atomic add of 0 to the page's
 * first byte, a locked read-modify-write that writes back the value it read: the caller may
 * be writing that byte at the same moment, and no store of the caller's can fall between the
 * read and the write (x86-64's locked instructions; AArch64's exclusive pairs fail and retry),
 * so the byte keeps the caller's value. C11 still calls an atomic and a plain access of one
 * byte from two threads a data race (a thread sanitizer reports it); it is this one place. */
static void touch(LhPages *p, guintptr start, guintptr end)
{
	if (!LH_PAGES_CAN || g_atomic_int_get(&p->failed))
		return;
	for (guintptr a = (start + p->page - 1) & ~(guintptr)(p->page - 1); a + p->page <= end;
	     a += p->page)
		__atomic_fetch_add((guint8 *)a, 0, __ATOMIC_RELAXED);
}

/* Writes the next step of @f, its pages made present first (on the VMs of bench/README.md
 * that and then the writes took 60 ms for 40 MiB, the writes alone 112 ms: they fault page
 * by page), and publishes it. Returns whether more is left. */
static gboolean fill_step(LhPages *p, LhFill *f, gulong lag_us)
{
	gsize step = f->size ? MAX(FILL_STEP / f->size, 1) * f->size : FILL_STEP;
	guintptr at = f->at, to = f->end - at > step ? at + step : f->end;
	if (lag_us && f->size)
		g_usleep(lag_us);
	populate(p, at, to);
	if (!f->size) /* an array handed over: its whole pages, written once */
		touch(p, at, to);
	else if (f->zero)
		memset((void *)at, 0, to - at);
	else
		for (guintptr r = at; r < to; r += f->size)
			memcpy((void *)r, f->rec, f->size);
	f->at = to;
	__atomic_store_n(&f->done, to - f->start, __ATOMIC_RELEASE);
	return to < f->end;
}

static gpointer pages_helper(gpointer data)
{
	LhPages *p = data;
	g_autoptr(GPtrArray) hand = g_ptr_array_new(); /* what it is writing, in turns */
	gboolean end = FALSE;
	for (;;) {
		LhFill *f;
		/* New jobs join those in hand; with none in hand, wait for one. */
		while (!end && (f = hand->len ? g_async_queue_try_pop(p->jobs)
		                              : g_async_queue_pop(p->jobs)) != NULL) {
			end = f == &the_end;
			if (!end)
				g_ptr_array_add(hand, f);
		}
		if (!hand->len)
			return NULL; /* the end, and everything written */
		/* A step of each in hand, so that a long fill does not hold back a later one whose
		 * start its caller needs as soon. */
		for (guint k = 0; k < hand->len;)
			if (fill_step(p, g_ptr_array_index(hand, k), p->lag_us))
				k++;
			else
				g_ptr_array_remove_index(hand, k);
	}
}

LhPages *lh__pages_new(void)
{
	LhPages *p = g_new0(LhPages, 1);
	p->page = 4096;
#ifdef __linux__
	long ps = sysconf(_SC_PAGESIZE);
	if (ps > 0)
		p->page = (gsize)ps;
#endif
	const char *lag = g_getenv("LHSIM_PAGES_LAG_US");
	p->lag_us = lag ? (gulong)g_ascii_strtoull(lag, NULL, 10) : 0;
	return p;
}

/* Starts the helper with the first job; FALSE when no thread can be started. */
static gboolean start_helper(LhPages *p)
{
	if (p->helper)
		return TRUE;
	if (p->no_thread)
		return FALSE;
	p->jobs = g_async_queue_new();
	p->helper = g_thread_try_new("lhsim-pages", pages_helper, p, NULL);
	p->no_thread = p->helper == NULL;
	return p->helper != NULL;
}

/* A new piece of work of @p over [start, end), freed with @p. */
static LhFill *work_new(LhPages *p, guintptr start, guintptr end)
{
	LhFill *f = g_new0(LhFill, 1);
	f->start = f->at = start;
	f->end = end;
	if (!p->fills)
		p->fills = g_ptr_array_new_with_free_func(g_free);
	g_ptr_array_add(p->fills, f);
	return f;
}

void lh__pages_add(LhPages *p, void *mem, gsize bytes)
{
	if (!LH_PAGES_CAN || !p || !mem || bytes < LH_PAGES_MIN || g_atomic_int_get(&p->failed))
		return;
	/* Only the whole pages inside the array are populated: the others may hold another's
	 * data, and the helper must not be the one to map them (it would not change them). */
	guintptr start = ((guintptr)mem + p->page - 1) & ~(guintptr)(p->page - 1);
	guintptr end = ((guintptr)mem + bytes) & ~(guintptr)(p->page - 1);
	if (end <= start || !start_helper(p))
		return; /* no thread: the pages fault as usual */
	/* Taken a step at a time, in turns with the other arrays in hand: a caller mostly writes
	 * the arrays it has just allocated side by side. */
	g_async_queue_push(p->jobs, work_new(p, start, end));
}

LhFill *lh__pages_fill(LhPages *p, void *mem, gsize n, const void *rec, gsize size)
{
	g_return_val_if_fail(p && (mem || n == 0) && size > 0 && size <= LH_PAGES_REC_MAX, NULL);
	LhFill *f = work_new(p, (guintptr)mem, (guintptr)mem + n * size);
	f->size = size;
	memcpy(f->rec, rec, size);
	f->zero = TRUE;
	for (gsize k = 0; k < size; k++)
		f->zero &= f->rec[k] == 0;
	if (n * size < LH_PAGES_MIN || !start_helper(p)) {
		/* Small, or no thread: the caller writes it now. */
		while (f->at < f->end)
			fill_step(p, f, 0);
		return f;
	}
	g_async_queue_push(p->jobs, f);
	return f;
}

gsize lh__fill_wait(LhFill *f, gsize i)
{
	gsize d, total = f->end - f->start;
	gsize want = i < total / f->size ? (i + 1) * f->size : total; /* past the end: all */
	/* The helper is writing it, on the other core, or gets this one. */
	while ((d = __atomic_load_n(&f->done, __ATOMIC_ACQUIRE)) < want)
		g_thread_yield();
	return d / f->size;
}

void lh__pages_free(LhPages *p)
{
	if (!p)
		return;
	if (p->helper) {
		g_async_queue_push(p->jobs, &the_end);
		g_thread_join(p->helper);
	}
	if (p->jobs)
		g_async_queue_unref(p->jobs);
	if (p->fills)
		g_ptr_array_unref(p->fills);
	g_free(p);
}
