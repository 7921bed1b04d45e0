/* lhsim — an op's fields through functions (sim/op.h). */
#include "sim/op.h"
#include "sim/cost.h"

const char *lh_op_name(const LhOp *op)
{
	g_return_val_if_fail(op != NULL, NULL);
	return op->name;
}

const char *lh_op_opcode(const LhOp *op)
{
	g_return_val_if_fail(op != NULL, NULL);
	return op->opcode;
}

LhOpKind lh_op_kind(const LhOp *op)
{
	g_return_val_if_fail(op != NULL, LH_OP_INPUT);
	return (LhOpKind)op->kind;
}

double lh_op_flops(const LhOp *op)
{
	g_return_val_if_fail(op != NULL, 0);
	return op->flops;
}

double lh_op_bytes(const LhOp *op)
{
	g_return_val_if_fail(op != NULL, 0);
	return op->bytes;
}

double lh_op_sm(const LhOp *op)
{
	g_return_val_if_fail(op != NULL, 0);
	return op->sm;
}

guint64 lh_op_size(const LhOp *op)
{
	g_return_val_if_fail(op != NULL, 0);
	return op->size;
}

guint64 lh_op_out_bytes(const LhOp *op)
{
	g_return_val_if_fail(op != NULL, 0);
	return op->out_bytes;
}

gint64 lh_op_duration_ns(const LhOp *op)
{
	g_return_val_if_fail(op != NULL, -1);
	return op->duration_ns;
}

gboolean lh_op_gemm_shape(const LhOp *op, guint64 *m, guint64 *n, guint64 *k, guint32 *batch)
{
	g_return_val_if_fail(op != NULL, FALSE);
	if (m)
		*m = op->gemm_m;
	if (n)
		*n = op->gemm_n;
	if (k)
		*k = op->gemm_k;
	if (batch)
		*batch = op->gemm_batch;
	return lh_op_is_gemm(op);
}

guint32 lh_op_alias(const LhOp *op)
{
	g_return_val_if_fail(op != NULL, LH_NO_OP);
	return op->alias;
}

guint32 lh_op_group(const LhOp *op)
{
	g_return_val_if_fail(op != NULL, 0);
	return op->group;
}

gboolean lh_op_async(const LhOp *op)
{
	g_return_val_if_fail(op != NULL, FALSE);
	return op->async != 0;
}

LhSpace lh_op_out_space(const LhOp *op)
{
	g_return_val_if_fail(op != NULL, LH_SPACE_DEVICE);
	return (LhSpace)op->out_space;
}

LhDtype lh_op_dtype(const LhOp *op)
{
	g_return_val_if_fail(op != NULL, LH_DTYPE_NONE);
	return (LhDtype)op->dtype;
}

gboolean lh_op_transpose(const LhOp *op)
{
	g_return_val_if_fail(op != NULL, FALSE);
	return op->transpose != 0;
}

guint32 lh_op_device(const LhOp *op)
{
	g_return_val_if_fail(op != NULL, 0);
	return op->device;
}

guint32 lh_op_sync(const LhOp *op)
{
	g_return_val_if_fail(op != NULL, 0);
	return op->sync;
}
