/* lhsim — traces: allocation, unit formatting and the Chrome trace-event writer. */
#include "sim/trace.h"
#include "sim/trace-private.h"
#include "sim/util.h"

#include <math.h>
#include <string.h>

LhTrace *lh__trace_new_filling(guint32 n_ops, guint32 n_cmds, LhPages *pages, LhFill **cmd_fill,
                               LhFill **op_fill)
{
	LhTrace *t = g_new0(LhTrace, 1);
	t->n_ops = n_ops;
	t->n_cmds = n_cmds;
	t->ops = g_new(LhOpTiming, MAX(n_ops, 1));
	t->cmd_issue = g_new(gint64, MAX(n_cmds, 1));
	t->mem = g_array_new(FALSE, FALSE, sizeof(LhMemPoint));
	t->n_devices = 1;
	const gint64 zero = 0;
	const LhOpTiming unset = lh__op_timing_unset();
	*cmd_fill = lh__pages_fill(pages, t->cmd_issue, n_cmds, &zero, sizeof zero);
	*op_fill = lh__pages_fill(pages, t->ops, n_ops, &unset, sizeof unset);
	return t;
}

LhTrace *lh_trace_new(guint32 n_ops, guint32 n_cmds)
{
	/* At 10^6 ops the two arrays are 40 MB of new memory: the page helper writes them (its
	 * pages made present a step ahead: about twice as fast as writing fresh pages, on the
	 * VMs of bench/README.md), and they are whole once it is joined. */
	LhPages *pages = lh__pages_new();
	LhFill *cmd_fill, *op_fill;
	LhTrace *t = lh__trace_new_filling(n_ops, n_cmds, pages, &cmd_fill, &op_fill);
	lh__pages_free(pages);
	return t;
}

void lh_trace_set_devices(LhTrace *t, guint32 n_devices)
{
	g_return_if_fail(t && n_devices >= 1);
	g_free(t->dev_peak);
	g_free(t->dev_peak_t);
	g_free(t->dev_host_end);
	t->n_devices = n_devices;
	t->dev_peak = g_new0(gint64, n_devices);
	t->dev_peak_t = g_new0(gint64, n_devices);
	t->dev_host_end = g_new0(gint64, n_devices);
}

gint64 lh_trace_dev_peak(const LhTrace *t, guint32 d)
{
	g_return_val_if_fail(d < t->n_devices, 0);
	return t->dev_peak ? t->dev_peak[d] : t->peak_device;
}

gint64 lh_trace_dev_peak_t(const LhTrace *t, guint32 d)
{
	g_return_val_if_fail(d < t->n_devices, 0);
	return t->dev_peak_t ? t->dev_peak_t[d] : t->peak_device_t;
}

gint64 lh_trace_dev_host_end(const LhTrace *t, guint32 d)
{
	g_return_val_if_fail(d < t->n_devices, 0);
	return t->dev_host_end ? t->dev_host_end[d] : t->host_end;
}

void lh_trace_free(LhTrace *t)
{
	if (!t)
		return;
	g_free(t->ops);
	g_free(t->cmd_issue);
	g_array_unref(t->mem);
	g_free(t->source);
	g_free(t->dev_peak);
	g_free(t->dev_peak_t);
	g_free(t->dev_host_end);
	g_free(t);
}

const char *lh_engine_name(LhEngine e)
{
	static const char *const names[LH_ENGINE_N] = {"none",     "sm",   "copy-h2d",
	                                               "copy-d2h", "link", "network"};
	return e < LH_ENGINE_N ? names[e] : "?";
}

char *lh_format_ns(double ns)
{
	double a = fabs(ns);
	if (a >= 1e9)
		return g_strdup_printf("%.3f s", ns / 1e9);
	if (a >= 1e6)
		return g_strdup_printf("%.3f ms", ns / 1e6);
	if (a >= 1e3)
		return g_strdup_printf("%.3f us", ns / 1e3);
	return g_strdup_printf("%.0f ns", ns);
}

char *lh_format_bytes(double b)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	int u = 0;
	double v = b;
	while (fabs(v) >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	return u ? g_strdup_printf("%.2f %s", v, unit[u]) : g_strdup_printf("%.0f B", v);
}

/* Chrome's trace format counts microseconds; three decimals keep nanoseconds exact. */
static void us(GString *s, gint64 ns)
{
	g_string_append_printf(s, "%" G_GINT64_FORMAT ".%03d", ns / 1000, (int)(ns % 1000));
}

static void thread_name(GString *s, int pid, int tid, const char *name, gboolean *first)
{
	g_string_append(s, *first ? "\n" : ",\n");
	*first = FALSE;
	g_string_append_printf(s,
	                       "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
	                       "\"args\":{\"name\":",
	                       pid, tid);
	lh_json_append_string(s, name);
	g_string_append(s, "}}");
	g_string_append_printf(s,
	                       ",\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%d,"
	                       "\"tid\":%d,\"args\":{\"sort_index\":%d}}",
	                       pid, tid, tid);
}

/* Engine tracks: 0 = SM, 1 = link, 2.. = H2D engines, then D2H engines, then the network. */
static int engine_tid(const LhOpTiming *tm, guint32 n_h2d, guint32 n_d2h)
{
	switch (tm->engine) {
	case LH_ENGINE_NET:
		return 2 + (int)(n_h2d + n_d2h);
	case LH_ENGINE_SM:
		return 0;
	case LH_ENGINE_LINK:
		return 1;
	case LH_ENGINE_H2D:
		return 2 + tm->engine_index;
	default:
		return 2 + (int)n_h2d + tm->engine_index;
	}
}

/* A graph placed on devices: one process per device (pid K + 1, "device K"), its streams as
 * threads (tid = stream index) then its engines (tid = streams + engine_tid); the memory
 * counter, the sum over devices, on device 0's process. */
static char *chrome_placed(const LhTrace *t, const LhGraph *g, const LhPlan *plan, GString *s)
{
	guint32 nd = MAX(lh_graph_devices(g), 1);
	guint32 n_streams = plan ? lh_plan_n_streams(plan) : 0;
	guint32 n_h2d = 0, n_d2h = 0;
	gboolean any_net = FALSE;
	for (guint32 i = 0; i < t->n_ops; i++) {
		if (t->ops[i].engine == LH_ENGINE_H2D)
			n_h2d = MAX(n_h2d, t->ops[i].engine_index + 1u);
		if (t->ops[i].engine == LH_ENGINE_D2H)
			n_d2h = MAX(n_d2h, t->ops[i].engine_index + 1u);
		any_net |= t->ops[i].engine == LH_ENGINE_NET;
	}
	gboolean first = TRUE;
	for (guint32 d = 0; d < nd; d++) {
		g_string_append_printf(
		    s,
		    "%s\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,"
		    "\"args\":{\"name\":\"device %u\"}},\n{\"ph\":\"M\",\"name\":"
		    "\"process_sort_index\",\"pid\":%u,\"args\":{\"sort_index\":%u}}",
		    first ? "" : ",", d + 1, d, d + 1, d);
		first = FALSE;
		for (guint32 i = 0; i < n_streams; i++) {
			const LhStream *st = lh_plan_stream(plan, i);
			if (st->device != d)
				continue;
			g_autofree char *nm =
			    g_strdup_printf("%s (%s)", st->name, lh_stream_role_name(st->role));
			thread_name(s, (int)d + 1, (int)i, nm, &first);
		}
		int e0 = (int)n_streams;
		thread_name(s, (int)d + 1, e0, "SMs", &first);
		thread_name(s, (int)d + 1, e0 + 1, "link", &first);
		for (guint32 e = 0; e < n_h2d; e++) {
			g_autofree char *nm = g_strdup_printf("copy H2D %u", e);
			thread_name(s, (int)d + 1, e0 + 2 + (int)e, nm, &first);
		}
		for (guint32 e = 0; e < n_d2h; e++) {
			g_autofree char *nm = g_strdup_printf("copy D2H %u", e);
			thread_name(s, (int)d + 1, e0 + 2 + (int)(n_h2d + e), nm, &first);
		}
		if (any_net)
			thread_name(s, (int)d + 1, e0 + 2 + (int)(n_h2d + n_d2h), "network",
			            &first);
	}
	for (guint32 i = 0; i < t->n_ops; i++) {
		const LhOpTiming *tm = &t->ops[i];
		if (tm->start < 0 || tm->end < 0)
			continue;
		const LhOp *op = lh_graph_op(g, i);
		for (int k = 0; k < 2; k++) {
			int tid =
			    k == 0 ? tm->stream : (int)n_streams + engine_tid(tm, n_h2d, n_d2h);
			if ((k == 0 && tm->stream < 0) || (k == 1 && tm->engine == LH_ENGINE_NONE))
				continue;
			g_string_append(s, ",\n{\"ph\":\"X\",\"name\":");
			lh_json_append_string(s, op->name);
			g_string_append(s, ",\"cat\":");
			lh_json_append_string(s, lh_op_kind_name(op->kind));
			g_string_append_printf(s, ",\"pid\":%u,\"tid\":%d,\"ts\":", op->device + 1,
			                       tid);
			us(s, tm->start);
			g_string_append(s, ",\"dur\":");
			us(s, tm->end - tm->start);
			g_string_append(s, ",\"args\":{\"issue_us\":");
			us(s, tm->issue);
			g_string_append(s, "}}");
		}
	}
	for (guint i = 0; i < t->mem->len; i++) {
		const LhMemPoint *m = &g_array_index(t->mem, LhMemPoint, i);
		g_string_append(s, ",\n{\"ph\":\"C\",\"name\":\"memory (all devices)\",\"pid\":1,"
		                   "\"ts\":");
		us(s, m->t);
		g_string_append_printf(s,
		                       ",\"args\":{\"device_bytes\":%" G_GINT64_FORMAT
		                       ",\"host_bytes\":%" G_GINT64_FORMAT "}}",
		                       m->device_bytes, m->host_bytes);
	}
	g_string_append(s, "\n]}\n");
	return g_string_free(s, FALSE);
}

char *lh_trace_to_chrome_json(const LhTrace *t, const LhGraph *g, const LhPlan *plan)
{
	GString *s = g_string_sized_new(256 + (gsize)t->n_ops * 200);
	gboolean first = TRUE;
	g_string_append(s, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"graph\":");
	lh_json_append_string(s, lh_graph_name(g));
	g_string_append(s, ",\"source\":");
	lh_json_append_string(s, t->source ? t->source : "simulated");
	if (plan && lh_plan_scheduler(plan)) {
		g_string_append(s, ",\"scheduler\":");
		lh_json_append_string(s, lh_plan_scheduler(plan));
	}
	g_string_append(s, "},\"traceEvents\":[");
	if (lh_graph_placed(g))
		return chrome_placed(t, g, plan, s);
	g_string_append_printf(s,
	                       "\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{"
	                       "\"name\":\"streams\"}},\n{\"ph\":\"M\",\"name\":\"process_name\","
	                       "\"pid\":2,\"args\":{\"name\":\"engines\"}}");
	first = FALSE;
	guint32 n_streams = plan ? lh_plan_n_streams(plan) : 0;
	for (guint32 i = 0; i < n_streams; i++) {
		const LhStream *st = lh_plan_stream(plan, i);
		g_autofree char *nm =
		    g_strdup_printf("%s (%s)", st->name, lh_stream_role_name(st->role));
		thread_name(s, 1, (int)i, nm, &first);
	}
	guint32 n_h2d = 0, n_d2h = 0;
	for (guint32 i = 0; i < t->n_ops; i++) {
		if (t->ops[i].engine == LH_ENGINE_H2D)
			n_h2d = MAX(n_h2d, t->ops[i].engine_index + 1u);
		if (t->ops[i].engine == LH_ENGINE_D2H)
			n_d2h = MAX(n_d2h, t->ops[i].engine_index + 1u);
	}
	thread_name(s, 2, 0, "SMs", &first);
	thread_name(s, 2, 1, "link", &first);
	for (guint32 e = 0; e < n_h2d; e++) {
		g_autofree char *nm = g_strdup_printf("copy H2D %u", e);
		thread_name(s, 2, 2 + (int)e, nm, &first);
	}
	for (guint32 e = 0; e < n_d2h; e++) {
		g_autofree char *nm = g_strdup_printf("copy D2H %u", e);
		thread_name(s, 2, 2 + (int)(n_h2d + e), nm, &first);
	}
	gboolean any_net = FALSE;
	for (guint32 i = 0; i < t->n_ops; i++)
		any_net |= t->ops[i].engine == LH_ENGINE_NET;
	if (any_net)
		thread_name(s, 2, 2 + (int)(n_h2d + n_d2h), "network", &first);
	for (guint32 i = 0; i < t->n_ops; i++) {
		const LhOpTiming *tm = &t->ops[i];
		if (tm->start < 0 || tm->end < 0)
			continue;
		const LhOp *op = lh_graph_op(g, i);
		for (int pid = 1; pid <= 2; pid++) {
			int tid = pid == 1 ? tm->stream : engine_tid(tm, n_h2d, n_d2h);
			if (tid < 0)
				continue;
			g_string_append(s, ",\n{\"ph\":\"X\",\"name\":");
			lh_json_append_string(s, op->name);
			g_string_append(s, ",\"cat\":");
			lh_json_append_string(s, lh_op_kind_name(op->kind));
			g_string_append_printf(s, ",\"pid\":%d,\"tid\":%d,\"ts\":", pid, tid);
			us(s, tm->start);
			g_string_append(s, ",\"dur\":");
			us(s, tm->end - tm->start);
			g_string_append(s, ",\"args\":{\"issue_us\":");
			us(s, tm->issue);
			g_string_append(s, "}}");
		}
	}
	for (guint i = 0; i < t->mem->len; i++) {
		const LhMemPoint *m = &g_array_index(t->mem, LhMemPoint, i);
		g_string_append(s, ",\n{\"ph\":\"C\",\"name\":\"memory\",\"pid\":2,\"ts\":");
		us(s, m->t);
		g_string_append_printf(s,
		                       ",\"args\":{\"device_bytes\":%" G_GINT64_FORMAT
		                       ",\"host_bytes\":%" G_GINT64_FORMAT "}}",
		                       m->device_bytes, m->host_bytes);
	}
	g_string_append(s, "\n]}\n");
	return g_string_free(s, FALSE);
}
