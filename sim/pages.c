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

/* A fill publishes its progress every this many bytes (rounded down to whole records). */
#define FILL_STEP ((gsize)256 << 10)

typedef enum { JOB_POPULATE, JOB_FILL, JOB_END } JobKind;

typedef struct {
	JobKind kind;
	guintptr start, end; /* populate: whole pages; fill: the array */
	gsize size;          /* fill: the record's size */
	guint64 base;        /* fill: the bytes of the fills handed over before it */
	guint8 rec[LH_PAGES_REC_MAX];
} PagesJob;

struct _LhPages {
	GAsyncQueue *jobs; /* of PagesJob */
	GThread *helper;
	gboolean no_thread; /* none could be started: the caller fills */
	gsize page;
	gint failed;    /* the kernel cannot populate: hand no more pages over */
	guint64 queued; /* bytes of fills handed over */
	guint64 filled; /* bytes of fills written (atomic: the helper stores, the caller loads) */
	gulong lag_us;  /* tests: the helper sleeps this long before each step of a fill */
};

/* Makes the whole pages of [start, end) present; FALSE where the kernel cannot. */
static gboolean populate(LhPages *p, guintptr start, guintptr end)
{
#if LH_PAGES_CAN
	start = (start + p->page - 1) & ~(guintptr)(p->page - 1);
	end &= ~(guintptr)(p->page - 1);
	/* An array freed meanwhile is no longer mapped, or is mapped for another: the first
	 * fails (ENOMEM), the second makes pages present that are then written anyway. Neither
	 * changes what memory holds. */
	if (end > start && madvise((void *)start, end - start, MADV_POPULATE_WRITE) != 0 &&
	    (errno == EINVAL || errno == EPERM)) {
		g_atomic_int_set(&p->failed, 1); /* no such advice here */
		return FALSE;
	}
	return TRUE;
#else
	(void)p;
	(void)start;
	(void)end;
	return FALSE;
#endif
}

/* Writes copies of @rec (@size bytes) over [start, end), a step at a time, publishing the
 * progress after each (@base: the bytes before it). Each step's pages are made present first:
 * on the VMs of bench/README.md that and then the writes took 60 ms for 40 MiB, the writes
 * alone 112 ms (they fault page by page). */
static void fill(LhPages *p, guintptr start, guintptr end, const guint8 *rec, gsize size,
                 guint64 base, gulong lag_us)
{
	gsize step = MAX(FILL_STEP / size, 1) * size;
	gboolean zero = TRUE;
	for (gsize k = 0; k < size; k++)
		zero &= rec[k] == 0;
	for (guintptr at = start; at < end;) {
		guintptr to = MIN(at + step, end);
		if (lag_us)
			g_usleep(lag_us);
		if (!g_atomic_int_get(&p->failed))
			populate(p, at, to);
		if (zero) {
			memset((void *)at, 0, to - at);
		} else {
			for (guintptr r = at; r < to; r += size)
				memcpy((void *)r, rec, size);
		}
		at = to;
		__atomic_store_n(&p->filled, base + (at - start), __ATOMIC_RELEASE);
	}
}

static gpointer pages_helper(gpointer data)
{
	LhPages *p = data;
	for (;;) {
		PagesJob *j = g_async_queue_pop(p->jobs);
		JobKind kind = j->kind;
		if (kind == JOB_POPULATE)
			populate(p, j->start, j->end);
		else if (kind == JOB_FILL)
			fill(p, j->start, j->end, j->rec, j->size, j->base, p->lag_us);
		g_free(j);
		if (kind == JOB_END)
			return NULL;
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

void lh__pages_add(LhPages *p, void *mem, gsize bytes)
{
	if (!LH_PAGES_CAN || !p || !mem || bytes < LH_PAGES_MIN || g_atomic_int_get(&p->failed))
		return;
	/* Only the whole pages inside the array are populated: the others may hold another's
	 * data, and the helper must not be the one to map them (it would not change them). */
	if (bytes < 2 * p->page || !start_helper(p))
		return; /* no thread: the pages fault as usual */
	PagesJob *j = g_new(PagesJob, 1);
	j->kind = JOB_POPULATE;
	j->start = (guintptr)mem;
	j->end = (guintptr)mem + bytes;
	g_async_queue_push(p->jobs, j);
}

guint64 lh__pages_fill(LhPages *p, void *mem, gsize n, const void *rec, gsize size)
{
	g_return_val_if_fail(p && (mem || n == 0) && size > 0 && size <= LH_PAGES_REC_MAX, 0);
	guint64 base = p->queued;
	gsize bytes = n * size;
	p->queued += bytes;
	if (bytes == 0)
		return base;
	if (bytes < LH_PAGES_MIN || !start_helper(p)) {
		/* Small, or no thread: the caller fills it now, after the fills before it. */
		lh__pages_filled(p, base);
		fill(p, (guintptr)mem, (guintptr)mem + bytes, rec, size, base, 0);
		return base;
	}
	PagesJob *j = g_new(PagesJob, 1);
	j->kind = JOB_FILL;
	j->start = (guintptr)mem;
	j->end = (guintptr)mem + bytes;
	j->size = size;
	j->base = base;
	memcpy(j->rec, rec, size);
	g_async_queue_push(p->jobs, j);
	return base;
}

guint64 lh__pages_filled(LhPages *p, guint64 upto)
{
	guint64 f;
	/* The helper is writing what is waited for, or the fills before it: it runs on the other
	 * core, or gets this one. */
	while ((f = __atomic_load_n(&p->filled, __ATOMIC_ACQUIRE)) < upto)
		g_thread_yield();
	return f;
}

void lh__pages_free(LhPages *p)
{
	if (!p)
		return;
	if (p->helper) {
		PagesJob *j = g_new0(PagesJob, 1);
		j->kind = JOB_END;
		g_async_queue_push(p->jobs, j);
		g_thread_join(p->helper);
	}
	if (p->jobs)
		g_async_queue_unref(p->jobs);
	g_free(p);
}
