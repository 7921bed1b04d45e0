/* lhsim sweep — what `sweep` and `sweep-merge` share: the rows of a sweep as text, read from
 * and written to CSV, and written as JSON.
 *
 * A sweep's file is a header and one row per point, in the grid's order. The columns are the
 * point's coordinates (graph, hw, scheduler, then one per swept axis), then `status` and the
 * metrics (SWEEP_METRICS). A shard's file (--shard K/N) has one more column in front, `point`,
 * "I/TOTAL" (1-based), so that sweep-merge can put the rows of all shards back in order. */
#pragma once

#include "cli/common.h"

/* The columns after the coordinates, in order. */
#define SWEEP_METRICS                                                                              \
	"status,makespan_ns,lower_bound_ns,ratio,peak_device_bytes,exposed_transfer_ns,overlap,"   \
	"error"
#define SWEEP_N_METRICS 8

typedef struct {
	char **header;   /* NULL-terminated column names, without `point` */
	GPtrArray *rows; /* of char ** (NULL-terminated fields, as many as header) */
	GArray *points;  /* guint: 1-based point of each row (shard files), else empty */
	guint total;     /* shard files: TOTAL of "I/TOTAL"; else 0 */
} SweepRows;

void sweep_rows_free(SweepRows *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SweepRows, sweep_rows_free)

/* Parses a sweep's CSV (either form). @where names it in errors ("FILE:LINE: ..."),
 * LH_IO_ERROR_READ for text that is not a sweep's file. */
SweepRows *sweep_rows_parse(const char *text, gsize len, const char *where, GError **error);
/* Number of coordinate columns of @header: those before `status`. */
guint sweep_n_coords(char **header);

/* Appends one CSV line: @point (1-based, 0 for none) of @total, then @fields. */
void sweep_csv_line(GString *s, guint point, guint total, char **fields);
/* The JSON of @header and @rows: {"points": [{column: value, ...}, ...]}, metrics as
 * numbers, an empty field as null; "point" first for shard rows (@points may be NULL). */
char *sweep_json_text(char **header, GPtrArray *rows, const guint *points, guint total);

/* `lhsim sweep-merge` */
int cli_sweep_merge(int argc, char **argv);
