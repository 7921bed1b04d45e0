/* lhsim — XLA's PGLE profiles in and out (docs/pgle.md).
 *
 * A PGLE profile is XLA's ProfiledInstructionsProto (tsl/profiler/protobuf/
 * profiled_instructions.proto) in protobuf text format:
 *
 *     costs { name: "fusion.3" cost_us: 12.5 }
 *     latencies { source: "all-gather-start.1" target: "all-gather-done.1" latency_us: 40 }
 *
 * lh_pgle_new_from_*() read one (the full text-format syntax: comments, `field { }`,
 * `field: { }`, `< >`, `[ ]` lists, `,` and `;` separators, escaped and adjacent strings,
 * scientific and hex numbers); lh_pgle_apply() sets the measured costs on a graph's ops as
 * duration_ns; lh_pgle_export() writes a graph's standalone costs in the same format, which
 * XLA reads with --xla_gpu_pgle_profile_file_or_directory_path. Every malformed profile is a
 * GError "FILE:LINE:COL: message" (LH_GRAPH_ERROR: PARSE for syntax, INVALID for a value such
 * as a negative cost, IO when the file cannot be read). */
#pragma once

#include "sim/graph.h"
#include "sim/hw.h"

G_BEGIN_DECLS

typedef struct _LhPgle LhPgle;

LhPgle *lh_pgle_new_from_data(const char *data, gsize len, const char *where, GError **error);
LhPgle *lh_pgle_new_from_file(const char *path, GError **error);
void lh_pgle_free(LhPgle *p); /* NULL is fine */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(LhPgle, lh_pgle_free)

guint32 lh_pgle_n_costs(const LhPgle *p);
guint32 lh_pgle_n_latencies(const LhPgle *p);

/* What lh_pgle_apply() did. */
typedef struct {
	guint32 n_ops;        /* ops whose duration now comes from the profile */
	guint32 n_entries;    /* entries in the profile: costs + latencies */
	guint32 n_applied;    /* entries that set at least one op's duration */
	guint32 n_unused;     /* entries naming an op that another entry set (a cost of an
	                         async op with a latency too), a done, or a latency whose source
	                         is not async */
	guint32 n_unknown;    /* entries naming nothing in the graph */
	char *first_unknown;  /* the first such name, or NULL */
	guint8 *from_profile; /* per op: 1 when its duration came from the profile */
} LhPgleReport;

void lh_pgle_report_clear(LhPgleReport *r);

/* Sets duration_ns of every op the profile names: cost_us (or, for an async op, the latency
 * from its start to its done, else the cost of its start), times 1000, rounded to the nearest
 * ns. An op name NAME@K (iteration K of an unrolled loop) or NAME.dupN takes NAME's entry
 * when it has none of its own. Unknown names are counted in @report (may be NULL), not
 * errors. The graph is finished and stays so. */
void lh_pgle_apply(LhGraph *g, const LhPgle *p, LhPgleReport *report);

/* The profile's share of the serial time on @hw: the sum of standalone durations of the ops
 * @report says came from the profile (*profile_ns), over the sum for every op (*total_ns).
 * Returns the share in [0, 1] (0 when the total is 0). */
double lh_pgle_share(const LhGraph *g, const LhHw *hw, const LhPgleReport *report,
                     double *profile_ns, double *total_ns);

/* The start/done names of an async op as XLA names its pair, derived from the op's name the
 * way the HLO importer names the op (after its start): "all-gather-start.1" ->
 * "all-gather-done.1", "send.2" -> "send-done.2". Returns NULL when the name is not a start's.
 * Caller frees. */
char *lh_pgle_done_name(const char *start_name);

/* The profile of @g's standalone costs on @hw, as text (docs/pgle.md): one `costs` entry per
 * op (loop iterations and duplicates under their HLO name), and a `latencies` entry from
 * start to done for each async op with a start name. Costs are in µs with exactly the digits
 * of a whole ns, so reading the text back gives the same ns. *@n_averaged (may be NULL) counts
 * names whose ops had different costs (written as their mean). An op beyond the engine's
 * range is an error (NULL). Caller frees. */
char *lh_pgle_export(const LhGraph *g, const LhHw *hw, guint32 *n_averaged, GError **error);
/* The same, written atomically to @path. */
gboolean lh_pgle_export_file(const LhGraph *g, const LhHw *hw, const char *path,
                             guint32 *n_averaged, GError **error);

G_END_DECLS
