/* lhsim — the native graph format, JSON (docs/graph-format.md).
 *
 * {"format": "lhsim-graph", "version": 1, "name": ..., "ops": [{"name": ..., "kind": ...,
 * "deps": [...], ...}]}. Every bad input is a GError "FILE:LINE:COL: op 'x': field: what". */
#pragma once

#include "sim/graph.h"

G_BEGIN_DECLS

LhGraph *lh_graph_new_from_json_file(const char *path, GError **error); /* caller frees */
LhGraph *lh_graph_new_from_json_data(const char *data, gssize len, const char *where,
                                     GError **error);
char *lh_graph_to_json(const LhGraph *g); /* caller frees */
/* Atomic: a temporary file beside @path, then rename. */
gboolean lh_graph_write_json_file(const LhGraph *g, const char *path, GError **error);

/* Reads a graph by file extension: .json (native), .hlo (XLA HLO text), .stg (needs the
 * processor count, see models/stg.h). Other extensions: tried as JSON. */
LhGraph *lh_graph_load(const char *path, GError **error);

G_END_DECLS
