/* lhsim — internal to the graph JSON reader (models/graph-json.c, models/graph-json-fast.c);
 * not installed. */
#pragma once

#include "sim/graph.h"

/* The fast path (graph-json-fast.c): the finished graph, or NULL when the text has anything it
 * does not handle or anything wrong; the full reader then reads it and reports the error. */
LhGraph *lh__graph_json_fast(const char *data, gsize len);
/* The full reader alone (json-glib with positions): what lh_graph_new_from_json_data() falls
 * back to. For tests that compare the two. */
LhGraph *lh__graph_json_full(const char *data, gssize len, const char *where, GError **error);

/* The largest "device" an op may name: "devices" is at most 10^6 (both readers). */
#define LH_JSON_MAX_DEVICE 999999.0
