/* lhsim — pages made present ahead of their first use (sim/pages-private.h). */
#include "sim/pages-private.h"

#include <errno.h>
#include <stdint.h>
#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
#define LH_PAGES_CAN 1
#else
#define LH_PAGES_CAN 0
#endif

typedef struct {
	guintptr start, end; /* whole pages; start == end: the end of the work */
} PagesJob;

struct _LhPages {
	GAsyncQueue *jobs; /* of PagesJob */
	GThread *helper;
	gsize page;
	gint failed; /* the kernel cannot populate: hand nothing more over */
};

#if LH_PAGES_CAN
static gpointer pages_helper(gpointer data)
{
	LhPages *p = data;
	for (;;) {
		PagesJob *j = g_async_queue_pop(p->jobs);
		gboolean end = j->start == j->end;
		/* An array freed meanwhile is no longer mapped, or is mapped for another: the
		 * first fails (ENOMEM), the second makes pages present that are then written
		 * anyway. Neither changes what memory holds. */
		if (!end &&
		    madvise((void *)j->start, j->end - j->start, MADV_POPULATE_WRITE) != 0 &&
		    (errno == EINVAL || errno == EPERM))
			g_atomic_int_set(&p->failed, 1); /* no such advice here */
		g_free(j);
		if (end)
			return NULL;
	}
}
#endif

LhPages *lh__pages_new(void)
{
	LhPages *p = g_new0(LhPages, 1);
#if LH_PAGES_CAN
	long ps = sysconf(_SC_PAGESIZE);
	p->page = ps > 0 ? (gsize)ps : 4096;
#endif
	return p;
}

void lh__pages_add(LhPages *p, void *mem, gsize bytes)
{
#if LH_PAGES_CAN
	if (!p || !mem || bytes < LH_PAGES_MIN || g_atomic_int_get(&p->failed))
		return;
	/* The whole pages inside the array: the others may hold another's data, and the
	 * helper must not be the one to map them (it would not change them either). */
	guintptr start = ((guintptr)mem + p->page - 1) & ~(guintptr)(p->page - 1);
	guintptr end = ((guintptr)mem + bytes) & ~(guintptr)(p->page - 1);
	if (end <= start)
		return;
	if (!p->helper) {
		p->jobs = g_async_queue_new();
		p->helper = g_thread_try_new("lhsim-pages", pages_helper, p, NULL);
		if (!p->helper) { /* no thread: the pages fault as usual */
			g_atomic_int_set(&p->failed, 1);
			return;
		}
	}
	PagesJob *j = g_new(PagesJob, 1);
	*j = (PagesJob){start, end};
	g_async_queue_push(p->jobs, j);
#else
	(void)p;
	(void)mem;
	(void)bytes;
#endif
}

void lh__pages_free(LhPages *p)
{
	if (!p)
		return;
	if (p->helper) {
		PagesJob *j = g_new0(PagesJob, 1); /* start == end: the end */
		g_async_queue_push(p->jobs, j);
		g_thread_join(p->helper);
	}
	if (p->jobs)
		g_async_queue_unref(p->jobs);
	g_free(p);
}
