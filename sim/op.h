/* lhsim — an op's fields through functions (docs/api.md#reading-ops).
 *
 * LhOp (sim/graph.h) is a plain struct that grows at its end. Code inside lhsim reads its
 * fields; a scheduler plugin reads them through these accessors, so that what it was built
 * against is a list of functions, not a layout: a field added later gets an accessor here
 * (appended), and a plugin that does not call it never depends on where the field lives.
 * Every accessor takes an op returned by lh_graph_op() and returns the field as documented in
 * sim/graph.h, with the field's unit.
 */
#pragma once

#include <glib.h>
#include "sim/graph.h"

G_BEGIN_DECLS

const char *lh_op_name(const LhOp *op);   /* unique in its graph; owned by the graph */
const char *lh_op_opcode(const LhOp *op); /* the source's opcode, or NULL */
LhOpKind lh_op_kind(const LhOp *op);
double lh_op_flops(const LhOp *op);       /* kernels: floating-point operations */
double lh_op_bytes(const LhOp *op);       /* kernels: HBM bytes read + written */
double lh_op_sm(const LhOp *op);          /* kernels: fraction of SMs usable, (0, 1] */
guint64 lh_op_size(const LhOp *op);       /* copies, collectives: bytes moved */
guint64 lh_op_out_bytes(const LhOp *op);  /* bytes of the output buffer */
gint64 lh_op_duration_ns(const LhOp *op); /* measured duration, ns; -1 when unset */
/* The GEMM shape fields (each pointer may be NULL), and whether the op is a GEMM
 * (lh_op_is_gemm: a kernel with all four set). */
gboolean lh_op_gemm_shape(const LhOp *op, guint64 *m, guint64 *n, guint64 *k, guint32 *batch);
guint32 lh_op_alias(const LhOp *op);  /* the dep whose buffer it reuses, or LH_NO_OP */
guint32 lh_op_group(const LhOp *op);  /* collectives: participating devices */
gboolean lh_op_async(const LhOp *op); /* may run off the main stream */
LhSpace lh_op_out_space(const LhOp *op);
LhDtype lh_op_dtype(const LhOp *op);      /* kernels: the math's type; LH_DTYPE_NONE unknown */
gboolean lh_op_transpose(const LhOp *op); /* kernels: the traffic moves the minor dimension */
guint32 lh_op_device(const LhOp *op);     /* placed graphs: the op's device; 0 otherwise */
guint32 lh_op_sync(const LhOp *op);       /* placed graphs: 1 + its rendezvous; 0 = none */

G_END_DECLS
