/* lhsim — internal to liblhsim: direct access to a finished graph's arrays for the hot loops
 * of the engine and the validator, and a cheaper way to add ops for the JSON reader. Not
 * installed. */
#pragma once

#include "sim/graph.h"

/* The op array (n_ops entries) and the CSR dep array (index with LhOp.deps_at). */
const LhOp *lh__graph_ops(const LhGraph *g);
const guint32 *lh__graph_dep_array(const LhGraph *g);
/* The deps of op i, as CSR rows: lh__graph_dep_array()[at[i] .. at[i + 1]), at = this array
 * (n_ops + 1 offsets, rows in op order). A loop that visits ops in another order reads 4
 * bytes per op here where LhOp.deps_at and n_deps cost a miss on the op's record. */
const guint32 *lh__graph_dep_at(const LhGraph *g);

/* lh_graph_add_op() for a caller that has made sure no other op of @g is named @name (@len
 * bytes, no NUL among them): the name is copied but not interned, which saves a hash table
 * insertion per op. lh_graph_finish() looks for duplicate names only among ops added by
 * lh_graph_add_op(), or by name when both ways were used. */
guint32 lh__graph_add_op_unique(LhGraph *g, const char *name, gsize len, LhOpKind kind);
