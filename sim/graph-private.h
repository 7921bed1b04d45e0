/* lhsim — internal to sim/: direct access to a finished graph's arrays for the hot loops of
 * the engine and the validator. Not installed. */
#pragma once

#include "sim/graph.h"

/* The op array (n_ops entries) and the CSR dep array (index with LhOp.deps_at). */
const LhOp *lh__graph_ops(const LhGraph *g);
const guint32 *lh__graph_dep_array(const LhGraph *g);
