/* lhsim sweep — a sweep's rows as text: CSV in and out, JSON out (cli/sweep.h). */
#include "cli/sweep.h"

#include <stdlib.h>
#include <string.h>

void sweep_rows_free(SweepRows *r)
{
	if (!r)
		return;
	g_strfreev(r->header);
	if (r->rows)
		g_ptr_array_free(r->rows, TRUE);
	if (r->points)
		g_array_free(r->points, TRUE);
	g_free(r);
}

guint sweep_n_coords(char **header)
{
	guint i = 0;
	while (header[i] && strcmp(header[i], "status") != 0)
		i++;
	return i;
}

void sweep_csv_line(GString *s, guint point, guint total, char **fields)
{
	if (point)
		g_string_append_printf(s, "%u/%u,", point, total);
	for (guint i = 0; fields[i]; i++) {
		if (i)
			g_string_append_c(s, ',');
		cli_csv_field(s, fields[i]);
	}
	g_string_append_c(s, '\n');
}

/* One CSV record from *p (advanced past its newline); NULL at the end of the text. */
static char **csv_record(const char **p, const char *end, guint *line, const char *where,
                         GError **error)
{
	if (*p >= end)
		return NULL;
	GPtrArray *f = g_ptr_array_new();
	GString *cur = g_string_new(NULL);
	guint start = *line;
	const char *q = *p;
	for (;;) {
		if (q < end && *q == '"' && cur->len == 0) {
			q++;
			for (;;) {
				if (q >= end) {
					g_set_error(error, LH_IO_ERROR, LH_IO_ERROR_READ,
					            "%s:%u: a quoted field is not closed", where,
					            start);
					g_string_free(cur, TRUE);
					g_ptr_array_add(f, NULL);
					g_strfreev((char **)g_ptr_array_free(f, FALSE));
					return NULL;
				}
				if (*q == '"' && q + 1 < end && q[1] == '"') {
					g_string_append_c(cur, '"');
					q += 2;
				} else if (*q == '"') {
					q++;
					break;
				} else {
					if (*q == '\n')
						(*line)++;
					g_string_append_c(cur, *q++);
				}
			}
		}
		while (q < end && *q != ',' && *q != '\n' && *q != '\r')
			g_string_append_c(cur, *q++);
		g_ptr_array_add(f, g_string_free(cur, FALSE));
		if (q < end && *q == ',') {
			q++;
			cur = g_string_new(NULL);
			continue;
		}
		if (q < end && *q == '\r')
			q++;
		if (q < end && *q == '\n')
			q++;
		(*line)++;
		break;
	}
	*p = q;
	g_ptr_array_add(f, NULL);
	return (char **)g_ptr_array_free(f, FALSE);
}

static gboolean parse_point(const char *s, guint *i, guint *total)
{
	char *end = NULL;
	guint64 a = g_ascii_strtoull(s, &end, 10);
	if (end == s || *end != '/')
		return FALSE;
	const char *t = end + 1;
	guint64 b = g_ascii_strtoull(t, &end, 10);
	if (end == t || *end || a < 1 || a > b || b > 1000000) /* a sweep's most points */
		return FALSE;
	*i = (guint)a;
	*total = (guint)b;
	return TRUE;
}

SweepRows *sweep_rows_parse(const char *text, gsize len, const char *where, GError **error)
{
	const char *p = text, *end = text + len;
	guint line = 1;
	g_autoptr(SweepRows) r = g_new0(SweepRows, 1);
	r->rows = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
	r->points = g_array_new(FALSE, FALSE, sizeof(guint));
	GError *e = NULL;
	char **head = csv_record(&p, end, &line, where, &e);
	if (!head) {
		if (!e)
			g_set_error(&e, LH_IO_ERROR, LH_IO_ERROR_READ,
			            "%s: empty, not a sweep's CSV file", where);
		g_propagate_error(error, e);
		return NULL;
	}
	gboolean shard = head[0] && !strcmp(head[0], "point");
	r->header = g_strdupv(head + shard);
	g_strfreev(head);
	guint nc = g_strv_length(r->header);
	guint ncoord = sweep_n_coords(r->header);
	/* A sweep's header ends with the metrics, in order, after at least graph,hw,scheduler. */
	g_auto(GStrv) metrics = g_strsplit(SWEEP_METRICS, ",", -1);
	gboolean good = ncoord >= 3 && nc == ncoord + SWEEP_N_METRICS;
	for (guint k = 0; good && k < SWEEP_N_METRICS; k++)
		good = !strcmp(r->header[ncoord + k], metrics[k]);
	if (!good) {
		g_set_error(error, LH_IO_ERROR, LH_IO_ERROR_READ,
		            "%s:1: not a sweep's CSV file: the header must be graph,hw,scheduler, "
		            "the swept columns, then " SWEEP_METRICS,
		            where);
		return NULL;
	}
	for (;;) {
		guint at = line;
		char **f = csv_record(&p, end, &line, where, &e);
		if (!f) {
			if (e) {
				g_propagate_error(error, e);
				return NULL;
			}
			break;
		}
		if (!f[0] || (!f[1] && !*f[0])) { /* a blank line */
			g_strfreev(f);
			continue;
		}
		guint n = g_strv_length(f);
		if (n != nc + shard) {
			g_set_error(error, LH_IO_ERROR, LH_IO_ERROR_READ,
			            "%s:%u: %u fields, the header has %u", where, at, n,
			            nc + shard);
			g_strfreev(f);
			return NULL;
		}
		if (shard) {
			guint i, t;
			if (!parse_point(f[0], &i, &t) || (r->total && t != r->total)) {
				g_set_error(error, LH_IO_ERROR, LH_IO_ERROR_READ,
				            "%s:%u: point '%s' is not I/TOTAL%s", where, at, f[0],
				            r->total ? " with the TOTAL of the rows above" : "");
				g_strfreev(f);
				return NULL;
			}
			r->total = t;
			g_array_append_val(r->points, i);
			char **rest = g_strdupv(f + 1);
			g_strfreev(f);
			f = rest;
		}
		g_ptr_array_add(r->rows, f);
	}
	if (shard && !r->total)
		r->total = G_MAXUINT; /* a shard file without rows: known form, unknown size */
	return g_steal_pointer(&r);
}

static gboolean int_column(const char *name)
{
	return !strcmp(name, "makespan_ns") || !strcmp(name, "peak_device_bytes") ||
	       !strcmp(name, "exposed_transfer_ns");
}

static gboolean double_column(const char *name)
{
	return !strcmp(name, "lower_bound_ns") || !strcmp(name, "ratio") ||
	       !strcmp(name, "overlap");
}

char *sweep_json_text(char **header, GPtrArray *rows, const guint *points, guint total)
{
	/* By hand, so that numbers are the CSV's text, digit for digit. */
	GString *s = g_string_new("{\n  \"points\": [");
	for (guint r = 0; r < rows->len; r++) {
		char **f = g_ptr_array_index(rows, r);
		g_string_append(s, r ? ",\n    {" : "\n    {");
		gboolean first = TRUE;
		if (points) {
			g_string_append_printf(s, "\"point\": \"%u/%u\"", points[r], total);
			first = FALSE;
		}
		for (guint c = 0; header[c] && f[c]; c++) {
			g_string_append(s, first ? "" : ", ");
			first = FALSE;
			lh_json_append_string(s, header[c]);
			g_string_append(s, ": ");
			gboolean num = int_column(header[c]) || double_column(header[c]);
			if (!*f[c] && (num || !strcmp(header[c], "error")))
				g_string_append(s, "null");
			else if (num)
				g_string_append(s, f[c]);
			else
				lh_json_append_string(s, f[c]);
		}
		g_string_append_c(s, '}');
	}
	g_string_append(s, rows->len ? "\n  ]\n}\n" : "]\n}\n");
	return g_string_free(s, FALSE);
}
