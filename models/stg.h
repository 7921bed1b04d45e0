/* lhsim — Kasahara Standard Task Graph (.stg) import.
 *
 * Each real task becomes a kernel with duration_ns = processing time * @unit_ns and sm = 1/P,
 * so that on models/hw/ideal.ini (no overheads, fair sharing) P kernels run side by side at
 * full speed: the device behaves as P identical processors, the STG set's P | prec | Cmax.
 * The dummy entry and exit tasks (0 and n+1, zero cost) are dropped; tasks are named "t<id>". */
#pragma once

#include "sim/graph.h"

G_BEGIN_DECLS

#define LH_STG_UNIT_NS 1000 /* one STG time unit, in ns */

LhGraph *lh_stg_import_data(const char *data, gsize len, const char *where, guint processors,
                            gint64 unit_ns, GError **error);
LhGraph *lh_stg_import_file(const char *path, guint processors, GError **error);

G_END_DECLS
