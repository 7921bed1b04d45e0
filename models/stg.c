/* lhsim — STG import. The format: n; then n+2 lines "id cost npred pred..."; then '#' lines. */
#include "models/stg.h"
#include "sim/engine.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	const char *where;
	const char *p;
	guint line, col;
	guint tcol; /* column of the last integer read */
	GError **error;
} Lex;

static gboolean lerr(Lex *x, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static gboolean lerr(Lex *x, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error(x->error, LH_GRAPH_ERROR, LH_GRAPH_ERROR_PARSE, "%s:%u:%u: %s", x->where,
	            x->line, x->col, msg);
	return FALSE;
}

/* Skips blanks; with @newline_ok, line ends too. Returns FALSE at a '#' footer or the end. */
static gboolean skip(Lex *x, gboolean newline_ok)
{
	for (;;) {
		char c = *x->p;
		if (c == ' ' || c == '\t' || c == '\r') {
			x->p++;
			x->col++;
		} else if (c == '\n' && newline_ok) {
			x->p++;
			x->line++;
			x->col = 1;
		} else {
			return c != 0 && c != '#' && c != '\n';
		}
	}
}

/* Reads one non-negative integer on the current line (or the next, if @newline_ok). */
static gboolean integer(Lex *x, gboolean newline_ok, const char *what, gint64 *out)
{
	if (!skip(x, newline_ok))
		return lerr(x, "expected %s, found %s", what,
		            *x->p == '\n' ? "the end of the line"
		            : *x->p       ? "a comment"
		                          : "the end of the file");
	char *end = NULL;
	errno = 0;
	long long v = strtoll(x->p, &end, 10);
	if (errno == ERANGE && end != x->p && *x->p != '-')
		return lerr(x, "%s is out of range (a whole number below 2^63)", what);
	if (end == x->p || errno || v < 0 || (*end && !strchr(" \t\r\n", *end)))
		return lerr(x, "expected %s (a whole number >= 0)", what);
	x->tcol = x->col;
	x->col += (guint)(end - x->p);
	x->p = end;
	*out = v;
	return TRUE;
}

LhGraph *lh_stg_import_data(const char *data, gsize len, const char *where, guint processors,
                            gint64 unit_ns, GError **error)
{
	g_return_val_if_fail(data != NULL, NULL);
	where = where ? where : "stg";
	if (unit_ns < 1 || unit_ns > LH_MAX_OP_NS) {
		g_set_error(error, LH_GRAPH_ERROR, LH_GRAPH_ERROR_INVALID,
		            "%s: the STG time unit must be between 1 and %" G_GINT64_FORMAT
		            " ns (got %" G_GINT64_FORMAT ")",
		            where, LH_MAX_OP_NS, unit_ns);
		return NULL;
	}
	if (processors < 1 || processors > 4096) {
		g_set_error(error, LH_GRAPH_ERROR, LH_GRAPH_ERROR_INVALID,
		            "%s: --processors must be between 1 and 4096 (got %u)", where,
		            processors);
		return NULL;
	}
	g_autofree char *text = g_strndup(data, len);
	Lex x = {where, text, 1, 1, 1, error};
	gint64 n;
	if (!integer(&x, TRUE, "the number of tasks", &n))
		return NULL;
	if (n < 1 || n > 10000000)
		return lerr(&x, "the number of tasks must be between 1 and 10000000"), NULL;
	g_autofree char *base = g_path_get_basename(where);
	g_autofree char *gname = g_strdup_printf("%s-p%u", base, processors);
	g_autoptr(LhGraph) g = lh_graph_new(gname);
	char name[32];
	for (gint64 id = 0; id < n + 2; id++) {
		gint64 got, cost, np;
		if (!integer(&x, TRUE, "a task id", &got))
			return NULL;
		if (got != id)
			return lerr(&x,
			            "expected task %" G_GINT64_FORMAT
			            ", found task %" G_GINT64_FORMAT
			            " (tasks must be listed in order)",
			            id, got),
			       NULL;
		if (!integer(&x, FALSE, "the processing time", &cost))
			return NULL;
		guint cost_col = x.tcol;
		if (!integer(&x, FALSE, "the number of predecessors", &np))
			return NULL;
		/* Checked before the product, which must stay inside the engine's range. */
		if (cost > LH_MAX_OP_NS / unit_ns && (x.col = cost_col))
			return lerr(&x,
			            "processing time %" G_GINT64_FORMAT " of task %" G_GINT64_FORMAT
			            " is out of range: at most %" G_GINT64_FORMAT
			            " units of %" G_GINT64_FORMAT " ns (the engine's range of "
			            "1e17 ns)",
			            cost, id, LH_MAX_OP_NS / unit_ns, unit_ns),
			       NULL;
		gboolean dummy = id == 0 || id == n + 1;
		if (dummy && cost != 0)
			return lerr(&x,
			            "dummy task %" G_GINT64_FORMAT " must have processing time 0",
			            id),
			       NULL;
		guint32 op = 0;
		if (!dummy) {
			g_snprintf(name, sizeof name, "t%" G_GINT64_FORMAT, id);
			op = lh_graph_add_op(g, name, LH_OP_KERNEL);
			LhOp *o = lh_graph_op_mut(g, op);
			o->duration_ns = cost * unit_ns;
			o->sm = 1.0 / processors;
		}
		for (gint64 k = 0; k < np; k++) {
			gint64 pred;
			if (!integer(&x, FALSE, "a predecessor id", &pred))
				return NULL;
			if (pred >= id)
				return lerr(&x,
				            "predecessor %" G_GINT64_FORMAT
				            " of task %" G_GINT64_FORMAT " must have a smaller id",
				            pred, id),
				       NULL;
			if (!dummy && pred != 0)
				lh_graph_add_dep(g, op, (guint32)(pred - 1));
		}
		if (skip(&x, FALSE))
			return lerr(&x,
			            "unexpected text after the predecessors of task "
			            "%" G_GINT64_FORMAT,
			            id),
			       NULL;
	}
	if (skip(&x, TRUE))
		return lerr(&x, "unexpected text after the exit task"), NULL;
	if (!lh_graph_finish(g, where, error))
		return NULL;
	return g_steal_pointer(&g);
}

LhGraph *lh_stg_import_file(const char *path, guint processors, GError **error)
{
	g_autofree char *data = NULL;
	gsize len = 0;
	g_autoptr(GError) e = NULL;
	if (!g_file_get_contents(path, &data, &len, &e)) {
		g_set_error(error, LH_GRAPH_ERROR, LH_GRAPH_ERROR_IO, "%s", e->message);
		return NULL;
	}
	return lh_stg_import_data(data, len, path, processors, LH_STG_UNIT_NS, error);
}
