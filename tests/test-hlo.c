/* lhsim tests — the XLA HLO text importer (models/hlo-*.c) and `lhsim import`.
 *
 * Inputs are the XLA modules in tests/data/hlo (see tests/data/SOURCES.md). Expected counts
 * for the small lhs_test_* modules are counted by hand from the text (the arithmetic is in the
 * comments); for the large benchmark modules they come from an independent line-based scan of
 * the text (count_in_comp below), which shares no code with the importer. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>

#include "helpers.h"

static LhGraph *import(const char *file, GPtrArray *warn)
{
	g_autofree char *path = t_data(file);
	GError *e = NULL;
	LhGraph *g = lh_hlo_import_file(path, warn, &e);
	cr_assert(g, "%s: %s", file, e ? e->message : "?");
	cr_assert(lh_graph_is_finished(g));
	return g;
}

static LhGraph *import_text(const char *text, GPtrArray *warn, GError **e)
{
	return lh_hlo_import_data(text, strlen(text), "t.hlo", warn, e);
}

static guint count_kind(const LhGraph *g, LhOpKind k)
{
	guint n = 0;
	for (guint32 i = 0; i < lh_graph_n_ops(g); i++)
		n += lh_graph_op(g, i)->kind == k;
	return n;
}

/* ---- every file imports and round-trips through JSON ---- */

typedef struct {
	char file[80];
} File;

static File all_files[] = {
	{"hlo/gpu_hlo.hlo"},
	{"hlo/hlo_llama31_70b_bf16_16x8.hlo"},
	{"hlo/hlo_llama3_8b_bf16_activation_offloading_1x8.hlo"},
	{"hlo/hlo_llama3_8b_cp_bf16_1x4.hlo"},
	{"hlo/lhs_test_AllGatherAsyncSimple.hlo"},
	{"hlo/lhs_test_AllToAllAndGemmOverlapWithSolCostModel.hlo"},
	{"hlo/lhs_test_AllToAllAsyncBalance.hlo"},
	{"hlo/lhs_test_CopyStartDoneUsesComputeResource.hlo"},
	{"hlo/lhs_test_DelayMoveToHostAsyncStart.hlo"},
	{"hlo/lhs_test_HostOffloadComputationsWithoutSchedule.hlo"},
	{"hlo/lhs_test_MultipleParallelResourceShouldOverlapCollectives.hlo"},
	{"hlo/lhs_test_ParallelThreadsShouldBeScheduled.hlo"},
	{"hlo/lhs_test_ScheduleDynamicSliceIfMemcpy.hlo"},
	{"hlo/lhs_test_ScheduleLoopPeeledSendDoneBeforeWhile.hlo"},
	{"hlo/lhs_test_ScheduleP2PWithMultipliers.hlo"},
	{"hlo/lhs_test_SchedulePipelinedSendRecvsLate.hlo"},
	{"hlo/u4_all_gather_1x8.hlo"},
};

ParameterizedTestParameters(hlo, imports_and_round_trips)
{
	return cr_make_param_array(File, all_files, G_N_ELEMENTS(all_files));
}

ParameterizedTest(File *f, hlo, imports_and_round_trips)
{
	g_autoptr(LhGraph) g = import(f->file, NULL);
	cr_assert_gt(lh_graph_n_ops(g), 0);
	g_autofree char *j1 = lh_graph_to_json(g);
	GError *e = NULL;
	g_autoptr(LhGraph) g2 = lh_graph_new_from_json_data(j1, -1, "rt.json", &e);
	cr_assert(g2, "%s: %s", f->file, e ? e->message : "?");
	g_autofree char *j2 = lh_graph_to_json(g2);
	cr_assert_str_eq(j1, j2);
	cr_assert_eq(lh_graph_n_ops(g2), lh_graph_n_ops(g));
}

/* ---- counts, by hand, on the small modules ---- */

typedef struct {
	char file[80];
	guint n_ops, input, kernel, d2h, h2d, ag, ar, rs, a2a, cp, send, recv;
} Counts;

/* How each was counted (free: no op of its own; see hlo.h):
 * gpu_hlo: p (input); sqrt, transpose, reshape (3 kernels); tuple free = 4.
 * AllGatherAsyncSimple: constant, replica-id free; convert, broadcast (2 kernels); ag-start
 *   (all-gather), ag-done free; p0..p3 (4 inputs); c0, c1, a2 (3 kernels) = 10.
 * AllToAllAndGemmOverlap: lhs, rhs, comm (3 inputs); dot (kernel); a2a async-start calling an
 *   all-to-all (all-to-all); done, tuple free = 5.
 * AllToAllAsyncBalance: constant, replica-id free; convert, 2 broadcasts (3 kernels); 2
 *   async-start all-to-alls; dones, bitcasts free; p0..p3 (4 inputs); c0, c1, a2 (3 kernels);
 *   tuple free = 12.
 * CopyStartDone: p0 (input); copy-start into S(5) (copy-d2h); copy-done free = 2.
 * DelayMoveToHost: p0..p8 (9 inputs); all-to-all-start.4 (all-to-all); done, bitcast free;
 *   broadcast, multiply (2 kernels); dynamic-update-slice-start.18 into an S(5) buffer
 *   (copy-d2h); done, tuple free = 13.
 * HostOffloadComputations: x (input); async_start (async kernel); async_done free;
 *   mul_fusion (kernel) = 3.
 * MultipleParallelResource: p0..p2 (3 inputs); ar_0 (all-reduce); rs_0 (reduce-scatter);
 *   dones free; add_0 (kernel); tuple free = 6.
 * ParallelThreads: a, b (2 inputs); start (async kernel); done free = 3.
 * ScheduleDynamicSliceIfMemcpy: p0 (input); host_buf AllocateBuffer (input); c0 free;
 *   dynamic-slice-start out of S(5) (copy-h2d); done free; add (kernel); tuple free = 4.
 * ScheduleLoopPeeledSendDoneBeforeWhile: p0, p1, p2 (3 inputs); after-all free; send, recv;
 *   recv-done, gte, send-done, tuple free; while with an unknown trip count: body once, with
 *   add.0 (kernel); gte0 free = 6.
 * ScheduleP2PWithMultipliers: p0..p2 (3 inputs); after_all free; send_start (send);
 *   send_done free; cp_start (collective-permute); cp_done free; add_0..add_2 (3 kernels);
 *   recv_start (recv); recv_done, recv_data, tuple free = 9.
 * SchedulePipelinedSendRecvsLate: some_arg (input); after_all free; send_ctx, recv_ctx (1
 *   send, 1 recv); c0, tuple free; the while runs 13 times (i from constant 0, i+1, i < 13):
 *   each iteration has some_res (dot) and i_ (add) = 2 kernels, 1 send, 1 recv; then the
 *   entry's recv-done/send-done free. Total 1 + 2 + 13 * 4 = 55: 26 kernels, 14 sends, 14
 *   recvs.
 * u4_all_gather: a (input); b (all-gather) = 2. */
static Counts small_counts[] = {
	{"hlo/gpu_hlo.hlo", 4, 1, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0},
	{"hlo/lhs_test_AllGatherAsyncSimple.hlo", 10, 4, 5, 0, 0, 1, 0, 0, 0, 0, 0, 0},
	{"hlo/lhs_test_AllToAllAndGemmOverlapWithSolCostModel.hlo", 5, 3, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0},
	{"hlo/lhs_test_AllToAllAsyncBalance.hlo", 12, 4, 6, 0, 0, 0, 0, 0, 2, 0, 0, 0},
	{"hlo/lhs_test_CopyStartDoneUsesComputeResource.hlo", 2, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0},
	{"hlo/lhs_test_DelayMoveToHostAsyncStart.hlo", 13, 9, 2, 1, 0, 0, 0, 0, 1, 0, 0, 0},
	{"hlo/lhs_test_HostOffloadComputationsWithoutSchedule.hlo", 3, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0},
	{"hlo/lhs_test_MultipleParallelResourceShouldOverlapCollectives.hlo", 6, 3, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0},
	{"hlo/lhs_test_ParallelThreadsShouldBeScheduled.hlo", 3, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0},
	{"hlo/lhs_test_ScheduleDynamicSliceIfMemcpy.hlo", 4, 2, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0},
	{"hlo/lhs_test_ScheduleLoopPeeledSendDoneBeforeWhile.hlo", 6, 3, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1},
	{"hlo/lhs_test_ScheduleP2PWithMultipliers.hlo", 9, 3, 3, 0, 0, 0, 0, 0, 0, 1, 1, 1},
	{"hlo/lhs_test_SchedulePipelinedSendRecvsLate.hlo", 55, 1, 26, 0, 0, 0, 0, 0, 0, 0, 14, 14},
	{"hlo/u4_all_gather_1x8.hlo", 2, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0},
};

ParameterizedTestParameters(hlo, small_module_counts)
{
	return cr_make_param_array(Counts, small_counts, G_N_ELEMENTS(small_counts));
}

ParameterizedTest(Counts *c, hlo, small_module_counts)
{
	g_autoptr(LhGraph) g = import(c->file, NULL);
	cr_assert_eq(lh_graph_n_ops(g), c->n_ops, "%s: %u ops", c->file, lh_graph_n_ops(g));
	cr_assert_eq(count_kind(g, LH_OP_INPUT), c->input, "%s", c->file);
	cr_assert_eq(count_kind(g, LH_OP_KERNEL), c->kernel, "%s", c->file);
	cr_assert_eq(count_kind(g, LH_OP_COPY_D2H), c->d2h, "%s", c->file);
	cr_assert_eq(count_kind(g, LH_OP_COPY_H2D), c->h2d, "%s", c->file);
	cr_assert_eq(count_kind(g, LH_OP_ALL_GATHER), c->ag, "%s", c->file);
	cr_assert_eq(count_kind(g, LH_OP_ALL_REDUCE), c->ar, "%s", c->file);
	cr_assert_eq(count_kind(g, LH_OP_REDUCE_SCATTER), c->rs, "%s", c->file);
	cr_assert_eq(count_kind(g, LH_OP_ALL_TO_ALL), c->a2a, "%s", c->file);
	cr_assert_eq(count_kind(g, LH_OP_COLLECTIVE_PERMUTE), c->cp, "%s", c->file);
	cr_assert_eq(count_kind(g, LH_OP_SEND), c->send, "%s", c->file);
	cr_assert_eq(count_kind(g, LH_OP_RECV), c->recv, "%s", c->file);
}

/* ---- kinds, classes and sizes on the host-offload and async modules ---- */

Test(hlo, copy_start_to_host_is_async_compute_d2h)
{
	g_autoptr(LhGraph) g = import("hlo/lhs_test_CopyStartDoneUsesComputeResource.hlo", NULL);
	const LhOp *c = t_op_named(g, "copy-start");
	cr_assert_eq(c->kind, LH_OP_COPY_D2H);
	cr_assert_eq(lh_op_class(c), LH_CLASS_ASYNC_COMPUTE);
	cr_assert_eq(c->size, 24); /* f32[2,3]: 6 * 4 bytes */
	cr_assert(t_has_dep(g, "copy-start", "p0"));
}

Test(hlo, dynamic_update_slice_into_host_is_d2h)
{
	g_autoptr(LhGraph) g = import("hlo/lhs_test_DelayMoveToHostAsyncStart.hlo", NULL);
	const LhOp *d = t_op_named(g, "dynamic-update-slice-start.18");
	cr_assert_eq(d->kind, LH_OP_COPY_D2H);
	cr_assert_eq(lh_op_class(d), LH_CLASS_ASYNC_COMPUTE);
	/* The update, bf16[1,2,4,128,128]: 131072 elements * 2 bytes. */
	cr_assert_eq(d->size, 262144);
	const LhOp *a = t_op_named(g, "all-to-all-start.4");
	cr_assert_eq(a->kind, LH_OP_ALL_TO_ALL);
	cr_assert_eq(lh_op_class(a), LH_CLASS_COLLECTIVE);
	/* replica_groups=[8,16]<=[128]: 8 groups of 16. */
	cr_assert_eq(a->group, 16);
	/* bf16[1,8,16,16,128,7168]: 8*16*16*128*7168 = 1879048192 elements * 2 bytes. */
	cr_assert_eq(a->size, 3758096384ull);
	/* The multiply reads the all-to-all's result through a bitcast and its done. */
	cr_assert(t_has_dep(g, "mul.5173.7", "all-to-all-start.4"));
}

Test(hlo, dynamic_slice_from_host_is_h2d)
{
	g_autoptr(LhGraph) g = import("hlo/lhs_test_ScheduleDynamicSliceIfMemcpy.hlo", NULL);
	const LhOp *d = t_op_named(g, "dynamic-slice-start");
	cr_assert_eq(d->kind, LH_OP_COPY_H2D);
	cr_assert_eq(lh_op_class(d), LH_CLASS_ASYNC_COMPUTE);
	cr_assert_eq(d->size, 16); /* the slice f32[1,2,2]: 4 * 4 bytes */
	const LhOp *h = t_op_named(g, "host_buf");
	cr_assert_eq(h->kind, LH_OP_INPUT);
	cr_assert_eq(h->out_space, LH_SPACE_HOST);
	cr_assert(t_has_dep(g, "dynamic-slice-start", "host_buf"));
}

Test(hlo, async_computations_become_async_kernels)
{
	g_autoptr(LhGraph) g = import("hlo/lhs_test_ParallelThreadsShouldBeScheduled.hlo", NULL);
	const LhOp *s = t_op_named(g, "start");
	cr_assert_eq(s->kind, LH_OP_KERNEL);
	cr_assert(s->async);
	cr_assert_eq(lh_op_class(s), LH_CLASS_ASYNC_COMPUTE);
	/* An unknown library call: memory-bound, bytes = 2 operands + output, f32[2,2] each. */
	cr_assert_float_eq(s->bytes, 3 * 16.0, 1e-9);
	g_autoptr(LhGraph) h = import("hlo/lhs_test_HostOffloadComputationsWithoutSchedule.hlo", NULL);
	cr_assert(t_op_named(h, "async_start")->async);
	cr_assert_eq(lh_op_class(t_op_named(h, "async_start")), LH_CLASS_ASYNC_COMPUTE);
	cr_assert(t_has_dep(h, "mul_fusion", "async_start"));
	cr_assert_str_eq(t_op_named(h, "mul_fusion")->opcode, "fusion:kLoop");
}

Test(hlo, async_collectives_and_sizes)
{
	g_autoptr(LhGraph) g = import("hlo/lhs_test_MultipleParallelResourceShouldOverlapCollectives.hlo", NULL);
	cr_assert_eq(t_op_named(g, "ar_0")->size, 4);  /* f32[] */
	cr_assert_eq(t_op_named(g, "rs_0")->size, 8);  /* the input f32[2] */
	g_autoptr(LhGraph) a = import("hlo/lhs_test_AllToAllAsyncBalance.hlo", NULL);
	const LhOp *t = t_op_named(a, "ata-start");
	cr_assert_eq(t->kind, LH_OP_ALL_TO_ALL);
	cr_assert_eq(t->group, 2); /* replica_groups={{0,1}} */
	/* f32[2,8,256,256]: 1048576 elements * 4 bytes */
	cr_assert_eq(t->size, 4194304);
	g_autoptr(LhGraph) u = import("hlo/u4_all_gather_1x8.hlo", NULL);
	/* u4[1024,4096] with E(4): 4194304 elements * 4 bits = 2097152 bytes: all-gather's size is
	 * its output. */
	cr_assert_eq(t_op_named(u, "b")->size, 2097152);
}

Test(hlo, control_predecessors_are_deps)
{
	g_autoptr(LhGraph) g = import("hlo/lhs_test_ScheduleP2PWithMultipliers.hlo", NULL);
	/* cp_start has control-predecessors={send_done}; send_done is send_start's done. */
	cr_assert(t_has_dep(g, "cp_start", "send_start"));
	cr_assert(t_has_dep(g, "recv_start", "cp_start"));
	cr_assert_eq(t_op_named(g, "cp_start")->kind, LH_OP_COLLECTIVE_PERMUTE);
	cr_assert_eq(t_op_named(g, "send_start")->size, 256); /* f32[64] */
}

Test(hlo, loops_unroll_by_inferred_trip_count_with_iteration_names)
{
	g_autoptr(LhGraph) g = import("hlo/lhs_test_SchedulePipelinedSendRecvsLate.hlo", NULL);
	/* Iterations 0..12 of the body: some_res@0 .. some_res@12, no @13. */
	t_op_named(g, "some_res@0");
	t_op_named(g, "some_res@12");
	cr_assert_not(lh_graph_find(g, "some_res@13", NULL));
	/* Iteration 1's dot reads some_arg, which iteration 0's dot produced (tuple element 2). */
	cr_assert(t_has_dep(g, "some_res@1", "some_res@0"));
	/* f32[16,16] dot over contracting dim 0 (16): 2 * 256 * 16 = 8192 flops. */
	cr_assert_float_eq(t_op_named(g, "some_res@0")->flops, 8192, 1e-9);
}

Test(hlo, unknown_trip_count_warns_and_imports_once)
{
	g_autoptr(GPtrArray) w = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(LhGraph) g = import("hlo/lhs_test_ScheduleLoopPeeledSendDoneBeforeWhile.hlo", w);
	cr_assert_eq(w->len, 1);
	cr_assert(strstr(w->pdata[0], "unknown trip count"), "%s", (char *)w->pdata[0]);
	cr_assert(strstr(w->pdata[0], ":28:3:"), "%s", (char *)w->pdata[0]); /* the while line */
	t_op_named(g, "add.0@0");
}

Test(hlo, known_trip_count_from_backend_config)
{
	const char *text =
		"HloModule m, is_scheduled=true\n"
		"body {\n  p = (f32[8]) parameter(0)\n  x = f32[8] get-tuple-element(p), index=0\n"
		"  y = f32[8] exponential(x)\n  ROOT t = (f32[8]) tuple(y)\n}\n"
		"cond {\n  p = (f32[8]) parameter(0)\n  ROOT c = pred[] constant(true)\n}\n"
		"ENTRY e {\n  a = f32[8] parameter(0)\n  t = (f32[8]) tuple(a)\n"
		"  w = (f32[8]) while(t), condition=cond, body=body,\n"
		"    backend_config={\"known_trip_count\":{\"n\":\"3\"}}\n"
		"  ROOT r = f32[8] get-tuple-element(w), index=0\n}\n";
	GError *e = NULL;
	g_autoptr(LhGraph) g = import_text(text, NULL, &e);
	cr_assert(g, "%s", e ? e->message : "");
	cr_assert_eq(lh_graph_n_ops(g), 4); /* a + y@0, y@1, y@2 */
	cr_assert(t_has_dep(g, "y@2", "y@1"));
	cr_assert(t_has_dep(g, "y@1", "y@0"));
	cr_assert(t_has_dep(g, "y@0", "a"));
	cr_assert_float_eq(t_op_named(g, "y@0")->flops, 8, 1e-9);    /* elementwise: 8 elements */
	cr_assert_float_eq(t_op_named(g, "y@0")->bytes, 64, 1e-9);   /* 32 in + 32 out */
}

Test(hlo, costs_from_shapes)
{
	g_autoptr(LhGraph) g = import("hlo/lhs_test_AllToAllAndGemmOverlapWithSolCostModel.hlo", NULL);
	const LhOp *d = t_op_named(g, "compute");
	/* f32[8192,8192] x f32[8192,8192]: 2 * M*N * K = 2 * 8192^3 = 1099511627776 flops;
	 * bytes: 3 arrays of 8192^2 * 4 = 268435456 each. */
	cr_assert_float_eq(d->flops, 1099511627776.0, 1);
	cr_assert_float_eq(d->bytes, 3 * 268435456.0, 1);
	cr_assert_str_eq(d->opcode, "dot");
	g_autoptr(LhGraph) c = import("hlo/lhs_test_AllGatherAsyncSimple.hlo", NULL);
	/* convolution(p0 f32[16,64,256], p1 f32[16,64,256]), dim_labels=0fb_0io->0fb: the
	 * kernel p1 is [spatial 16, in 64, out 256], so each of the 16*256*256 = 1048576 output
	 * elements sums 16*64 = 1024 products: 2 * 1048576 * 1024 = 2147483648 flops. */
	cr_assert_float_eq(t_op_named(c, "c0")->flops, 2147483648.0, 1);
	g_autoptr(LhGraph) s = import("hlo/gpu_hlo.hlo", NULL);
	/* sqrt of f32[5000,6000]: 3e7 elements, one flop each; bytes 2 * 1.2e8. */
	cr_assert_float_eq(t_op_named(s, "e")->flops, 3e7, 1);
	cr_assert_float_eq(t_op_named(s, "e")->bytes, 2.4e8, 1);
	cr_assert_float_eq(t_op_named(s, "c")->flops, 0, 1e-9); /* transpose: data movement */
}

Test(hlo, library_calls_fusions_copies_and_conditionals)
{
	const char *text =
		"HloModule m, num_partitions=4\n"
		"fused {\n  p0 = f32[64,32] parameter(0)\n  p1 = f32[32,16] parameter(1)\n"
		"  d = f32[64,16] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
		"  ROOT e = f32[64,16] exponential(d)\n}\n"
		"br0 {\n  p = f32[100] parameter(0)\n  ROOT n = f32[100] negate(p)\n}\n"
		"br1 {\n  p = f32[100] parameter(0)\n  a = f32[100] add(p, p)\n"
		"  ROOT m = f32[100] multiply(a, a)\n}\n"
		"ENTRY e {\n  x = bf16[8,128,256]{2,1,0} parameter(0)\n"
		"  w = bf16[8,256,512]{2,1,0} parameter(1)\n"
		"  g = (bf16[8,128,512]{2,1,0}, s8[4194304]{0}) custom-call(x, w),\n"
		"    custom_call_target=\"__cublas$gemm\",\n"
		"    backend_config={\"gemm_backend_config\":{\"dot_dimension_numbers\":{\n"
		"      \"lhs_contracting_dimensions\":[\"2\"],\"rhs_contracting_dimensions\":[\"1\"],\n"
		"      \"lhs_batch_dimensions\":[\"0\"],\"rhs_batch_dimensions\":[\"0\"]}}}\n"
		"  i = f32[2,32,32,16]{3,2,1,0} parameter(2)\n"
		"  k = f32[3,3,16,8]{3,2,1,0} parameter(3)\n"
		"  c = (f32[2,32,32,8]{3,2,1,0}, u8[0]{0}) custom-call(i, k), window={size=3x3 pad=1_1x1_1},\n"
		"    dim_labels=b01f_01io->b01f, custom_call_target=\"__cudnn$convForward\"\n"
		"  a = f32[64,32] parameter(4)\n  b = f32[32,16] parameter(5)\n"
		"  f = f32[64,16] fusion(a, b), kind=kOutput, calls=fused\n"
		"  h = f32[64,16]{1,0:S(5)} copy(f)\n"
		"  back = f32[64,16]{1,0} custom-call(h), custom_call_target=\"MoveToDevice\"\n"
		"  s = s32[] parameter(6)\n  v = f32[100] parameter(7)\n"
		"  cond = f32[100] conditional(s, v, v), branch_computations={br0, br1}\n"
		"  ROOT t = (f32[64,16], f32[100]) tuple(back, cond)\n}\n";
	GError *e = NULL;
	g_autoptr(LhGraph) g = import_text(text, NULL, &e);
	cr_assert(g, "%s", e ? e->message : "");
	/* cuBLAS batched gemm: output 8*128*512 = 524288 elements, K = lhs dim 2 = 256:
	 * 2 * 524288 * 256 = 268435456 flops. */
	const LhOp *gm = t_op_named(g, "g");
	cr_assert_float_eq(gm->flops, 268435456.0, 1);
	cr_assert_str_eq(gm->opcode, "custom-call:__cublas$gemm");
	/* cuDNN conv: 2*32*32*8 = 16384 outputs, kernel [3,3,16,8] labelled 01io: each output
	 * sums 3*3*16 = 144 products: 2 * 16384 * 144 = 4718592 flops. */
	cr_assert_float_eq(t_op_named(g, "c")->flops, 4718592.0, 1);
	/* The fusion: its dot 2 * 64*16 * 32 = 65536 plus exponential 64*16 = 1024; bytes at the
	 * boundary: 64*32*4 + 32*16*4 + 64*16*4 = 8192 + 2048 + 4096 = 14336. */
	const LhOp *f = t_op_named(g, "f");
	cr_assert_float_eq(f->flops, 65536.0 + 1024.0, 1e-6);
	cr_assert_float_eq(f->bytes, 14336.0, 1e-6);
	cr_assert_str_eq(f->opcode, "fusion:kOutput");
	/* A copy into S(5) is a D2H of the whole buffer (4096 bytes); MoveToDevice an H2D. */
	cr_assert_eq(t_op_named(g, "h")->kind, LH_OP_COPY_D2H);
	cr_assert_eq(t_op_named(g, "h")->size, 4096);
	cr_assert_eq(t_op_named(g, "back")->kind, LH_OP_COPY_H2D);
	cr_assert(t_has_dep(g, "back", "h"));
	/* The conditional costs its costlier branch: br1 has add and multiply, 100 flops each. */
	cr_assert_float_eq(t_op_named(g, "cond")->flops, 200.0, 1e-9);
}

/* ---- the llama3 activation-offloading module, counted independently ---- */

/* Counts lines of computation @comp (the header line starting with @comp, to the next line
 * that is exactly "}") that contain @needle. ENTRY is found with comp = "ENTRY". */
static guint count_in_comp(const char *text, const char *comp, const char *needle)
{
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	gboolean in = FALSE;
	guint n = 0;
	for (char **l = lines; *l; l++) {
		if (!in && g_str_has_prefix(*l, comp) && (*l)[strlen(comp)] == ' ') {
			in = TRUE;
			continue;
		}
		if (in && strcmp(*l, "}") == 0)
			break;
		if (in && strstr(*l, needle))
			n++;
	}
	return n;
}

Test(hlo, llama3_offloading_collectives_and_copies)
{
	g_autofree char *path = t_data("hlo/hlo_llama3_8b_bf16_activation_offloading_1x8.hlo");
	g_autofree char *text = NULL;
	cr_assert(g_file_get_contents(path, &text, NULL, NULL));
	/* Both scan loops count i from constant 0 while i < 32 (%constant.310 and
	 * %constant.477 in the conditions %region_6.7_spmd and %region_24.25_spmd): 32 trips. */
	cr_assert_eq(count_in_comp(text, "%region_6.7_spmd", "constant(32)"), 1);
	cr_assert_eq(count_in_comp(text, "%region_24.25_spmd", "constant(32)"), 1);
	const char *fwd = "%region_3.6_spmd", *bwd = "%region_14.24_spmd", *entry = "ENTRY";
	const struct {
		const char *needle;
		LhOpKind kind;
	} cases[] = {
		{" all-gather(", LH_OP_ALL_GATHER},
		{" all-reduce(", LH_OP_ALL_REDUCE},
		{"custom_call_target=\"MoveToHost\"", LH_OP_COPY_D2H},
		{"custom_call_target=\"MoveToDevice\"", LH_OP_COPY_H2D},
	};
	g_autoptr(GPtrArray) w = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(LhGraph) g = import("hlo/hlo_llama3_8b_bf16_activation_offloading_1x8.hlo", w);
	for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
		guint nf = count_in_comp(text, fwd, cases[i].needle);
		guint nb = count_in_comp(text, bwd, cases[i].needle);
		guint ne = count_in_comp(text, entry, cases[i].needle);
		guint expect = 32 * (nf + nb) + ne;
		cr_assert_gt(nf + nb + ne, 0, "%s", cases[i].needle);
		cr_assert_eq(count_kind(g, cases[i].kind), expect, "%s: %u, expected 32*(%u+%u)+%u",
			     cases[i].needle, count_kind(g, cases[i].kind), nf, nb, ne);
	}
	/* SOURCES.md: 2 MoveToHost in the forward body, 2 + 39 MoveToDevice. */
	cr_assert_eq(count_kind(g, LH_OP_COPY_D2H), 32 * 2);
	cr_assert_eq(count_kind(g, LH_OP_COPY_H2D), 32 * 2 + 39);
	/* Offload copies are async compute: closed_call.26 moves bf16[1,8192,14336] to host. */
	const LhOp *c = t_op_named(g, "closed_call.26@0");
	cr_assert_eq(lh_op_class(c), LH_CLASS_ASYNC_COMPUTE);
	cr_assert_eq(c->size, 8192ull * 14336 * 2);
	/* The trip counts were found and no opcode is unknown: the one warning is that the
	 * module is unoptimized (no fusion, not scheduled). */
	cr_assert_eq(w->len, 1, "%s", w->len ? (char *)w->pdata[0] : "");
	cr_assert(strstr(w->pdata[0], "looks unoptimized"), "%s", (char *)w->pdata[0]);
}

Test(hlo, big_modules_count_their_collectives)
{
	/* The context-parallel module: ring collective-permutes. Independent count: lines with
	 * " collective-permute(" per computation; the loop bodies are found from the while lines'
	 * body= attributes in the text and run 32 times as their conditions compare with 32. */
	g_autofree char *path = t_data("hlo/hlo_llama3_8b_cp_bf16_1x4.hlo");
	g_autofree char *text = NULL;
	cr_assert(g_file_get_contents(path, &text, NULL, NULL));
	g_autoptr(LhGraph) g = import("hlo/hlo_llama3_8b_cp_bf16_1x4.hlo", NULL);
	g_autoptr(GRegex) re = g_regex_new("while\\(.*condition=(%[^,]+), body=(%[^,\\s]+)", 0, 0, NULL);
	g_autoptr(GMatchInfo) mi = NULL;
	guint expect_cp = count_in_comp(text, "ENTRY", " collective-permute(");
	guint loops = 0;
	g_regex_match(re, text, 0, &mi);
	while (g_match_info_matches(mi)) {
		g_autofree char *cond = g_match_info_fetch(mi, 1);
		g_autofree char *body = g_match_info_fetch(mi, 2);
		cr_assert_eq(count_in_comp(text, cond, "constant(32)"), 1, "%s", cond);
		expect_cp += 32 * count_in_comp(text, body, " collective-permute(");
		loops++;
		g_match_info_next(mi, NULL);
	}
	cr_assert_eq(loops, 2);
	cr_assert_gt(expect_cp, 0);
	cr_assert_eq(count_kind(g, LH_OP_COLLECTIVE_PERMUTE), expect_cp);
}

/* ---- bad input ---- */

typedef struct {
	char text[160];
	char where[16]; /* "LINE:COL" expected in the message */
	char what[48];  /* a fragment of the message */
} Bad;

static Bad bad_inputs[] = {
	{"HloModule m\nENTRY e {\n  a = f32[2 parameter(0)\n}\n", "3:13", "dimensions"},
	{"HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  b = f32[2] add(a, zz)\n}\n", "4:21", "unknown operand 'zz'"},
	{"HloModule m\nENTRY e {\n  a = f32[2] parameter(0), foo=\"x\n}\n", "3:32", "unterminated string"},
	{"HloModule m\nENTRY e {\n  a = q7[2] parameter(0)\n}\n", "3:7", "unknown element type 'q7'"},
	{"HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n", "2:7", "not closed"},
	{"HloModule m\n", "2:1", "no computation"},
	{"HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  a = f32[2] parameter(1)\n}\n", "4:3", "duplicate instruction 'a'"},
	{"HloModule m\nENTRY e {\n  a = f32[2]{0:S(5) parameter(0)\n}\n", "3:13", "unclosed layout"},
	{"HloModule m\nENTRY e {\n  w = f32[2] while(a), body=nope\n  a = f32[2] parameter(0)\n}\n", "3:3", "body="},
	{"HloModule m\nENTRY e {\n  a = f32[2] add(b, b)\n  b = f32[2] add(a, a)\n}\n", "4:3", "depends on itself"},
	{"HloModule m\nc {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), to_apply=c\n}\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT b = f32[] call(a), to_apply=c\n}\n", "2:1", "calls itself"},
	{"HloModule m\nENTRY e {\n  a = f32[2] parameter(0) /* open\n}\n", "3:27", "unterminated comment"},
	/* Found by fuzzing: an absurd dimension overflowed the byte count (UBSan). */
	{"e {\n  a = u4[1066666666666666666666666623,4096]{1,0:E(4)} parameter(0)\n}\n", "2:7", "more than 1e18"},
};

ParameterizedTestParameters(hlo, bad_input_names_file_line_col)
{
	return cr_make_param_array(Bad, bad_inputs, G_N_ELEMENTS(bad_inputs));
}

ParameterizedTest(Bad *b, hlo, bad_input_names_file_line_col)
{
	GError *e = NULL;
	LhGraph *g = import_text(b->text, NULL, &e);
	cr_assert_null(g, "accepted: %s", b->text);
	cr_assert(e);
	g_autofree char *pos = g_strdup_printf("t.hlo:%s:", b->where);
	cr_assert(g_str_has_prefix(e->message, pos), "'%s' does not start with '%s'", e->message, pos);
	cr_assert(strstr(e->message, b->what), "'%s' lacks '%s'", e->message, b->what);
	cr_assert(strstr(e->message, "near "), "'%s' does not show the text", e->message);
	g_error_free(e);
}

Test(hlo, unknown_opcodes_warn_once_and_cost_bytes_only)
{
	const char *text = "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n"
			   "  b = f32[4] frobnicate(a)\n  c = f32[4] frobnicate(b)\n"
			   "  ROOT d = f32[4] zorp(c)\n}\n";
	g_autoptr(GPtrArray) w = g_ptr_array_new_with_free_func(g_free);
	GError *e = NULL;
	g_autoptr(LhGraph) g = import_text(text, w, &e);
	cr_assert(g, "%s", e ? e->message : "");
	cr_assert_eq(w->len, 2); /* the opcodes, and "looks unoptimized" (no fusion) */
	cr_assert(strstr(w->pdata[0], "frobnicate, zorp"), "%s", (char *)w->pdata[0]);
	cr_assert(strstr(w->pdata[1], "looks unoptimized"), "%s", (char *)w->pdata[1]);
	const LhOp *b = t_op_named(g, "b");
	cr_assert_eq(b->kind, LH_OP_KERNEL);
	cr_assert_float_eq(b->flops, 0, 1e-9);
	cr_assert_float_eq(b->bytes, 32, 1e-9); /* 16 in + 16 out */
}

Test(hlo, header_tables_multiline_and_nested_attributes)
{
	/* A stack-frame table after the header, a statement over three lines, a JSON backend
	 * config with braces in strings, an MLIR-style attribute, a tiled layout. */
	const char *text =
		"HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}, num_partitions=8\n\n"
		"FileNames\n1 \"a.py\"\nFunctionNames\n1 \"f\"\nFileLocations\n"
		"1 {file_name_id=1 function_name_id=1 line=1 end_line=1 column=1 end_column=2}\n"
		"StackFrames\n1 {file_location_id=1 parent_frame_id=1}\n\n"
		"ENTRY %e (p: f32[4]) -> f32[4] {\n"
		"  %p = f32[4]{0:T(128)} parameter(0)\n"
		"  %g = f32[32]{0} all-gather(\n    f32[4]{0} %p),\n"
		"    replica_groups=[1,8]<=[8], dimensions={0},\n"
		"    backend_config={\"x\":\"{}}\",\"y\":[1,{\"z\":2}]}, mhlo.sharding=#sdy<foo {a, b}>\n"
		"  ROOT %s = f32[32]{0} sqrt(%g), metadata={op_name=\"jit(f)/sqrt\" source_line=3}\n"
		"}\n";
	GError *e = NULL;
	g_autoptr(LhGraph) g = import_text(text, NULL, &e);
	cr_assert(g, "%s", e ? e->message : "");
	cr_assert_eq(lh_graph_n_ops(g), 3);
	const LhOp *ag = t_op_named(g, "g");
	cr_assert_eq(ag->group, 8);
	cr_assert_eq(ag->size, 128); /* f32[32] */
	cr_assert(t_has_dep(g, "s", "g"));
}

Test(hlo, never_crashes_on_truncations)
{
	/* Every prefix of a real module is either imported or rejected with a positioned error. */
	g_autofree char *path = t_data("hlo/lhs_test_DelayMoveToHostAsyncStart.hlo");
	g_autofree char *text = NULL;
	gsize len;
	cr_assert(g_file_get_contents(path, &text, &len, NULL));
	for (gsize n = 0; n <= len; n += 7) {
		GError *e = NULL;
		LhGraph *g = lh_hlo_import_data(text, n, "t.hlo", NULL, &e);
		if (g)
			lh_graph_free(g);
		else
			cr_assert(e && g_str_has_prefix(e->message, "t.hlo:"), "prefix %zu", n);
		if (e)
			g_error_free(e);
	}
}

/* ---- lhsim import ---- */

Test(hlo, cli_import_writes_json_and_rejects_bad_files)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *out = g_build_filename(dir, "g.json", NULL);
	g_autofree char *in = t_data("hlo/lhs_test_ScheduleP2PWithMultipliers.hlo");
	char *so = NULL, *se = NULL;
	int st = t_lhsim(&so, &se, "import", in, "-o", out, NULL);
	cr_assert_eq(st, 0, "%s", se);
	cr_assert(strstr(so, "9 ops"), "%s", so);
	g_free(so);
	g_free(se);
	GError *e = NULL;
	g_autoptr(LhGraph) g = lh_graph_new_from_json_file(out, &e);
	cr_assert(g, "%s", e ? e->message : "");
	cr_assert_eq(lh_graph_n_ops(g), 9);

	g_autofree char *bad = g_build_filename(dir, "bad.hlo", NULL);
	g_autofree char *out2 = g_build_filename(dir, "bad.json", NULL);
	cr_assert(g_file_set_contents(bad, "HloModule m\nENTRY e {\n  a = f32[2] add(b)\n}\n", -1, NULL));
	st = t_lhsim(NULL, &se, "import", bad, "-o", out2, NULL);
	cr_assert_eq(st, 2);
	cr_assert(strstr(se, "bad.hlo:3:18: unknown operand 'b'"), "%s", se);
	cr_assert_not(g_file_test(out2, G_FILE_TEST_EXISTS)); /* no half-written output */
	g_free(se);

	/* lhsim run reads .hlo directly. */
	st = t_lhsim(&so, &se, "run", in, NULL);
	cr_assert_eq(st, 0, "%s", se);
	cr_assert(strstr(so, "makespan"), "%s", so);
	g_free(so);
	g_free(se);
	/* Usage errors. */
	cr_assert_eq(t_lhsim(NULL, NULL, "import", in, NULL), 2);
	cr_assert_eq(t_lhsim(NULL, NULL, "import", "-o", out, NULL), 2);
}

Test(hlo, cli_import_stg)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *out = g_build_filename(dir, "g.json", NULL);
	g_autofree char *sdir = t_data("stg/50");
	g_autoptr(GDir) d = g_dir_open(sdir, 0, NULL);
	cr_assert(d);
	const char *f = NULL;
	while ((f = g_dir_read_name(d)) && !g_str_has_suffix(f, ".stg"))
		;
	cr_assert(f, "no .stg file in %s", sdir);
	g_autofree char *in = g_build_filename(sdir, f, NULL);
	char *so = NULL, *se = NULL;
	int st = t_lhsim(&so, &se, "import", in, "--processors", "2", "-o", out, NULL);
	cr_assert_eq(st, 0, "%s", se);
	/* 50 real tasks; the dummy entry and exit are dropped (models/stg.h). */
	cr_assert(strstr(so, "50 ops"), "%s", so);
	g_free(so);
	g_free(se);
}
