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
    {"hlo/sched_offload_overlap.hlo"}, /* ours: a schedule to round-trip */
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
    {"hlo/lhs_test_MultipleParallelResourceShouldOverlapCollectives.hlo", 6, 3, 1, 0, 0, 0, 1, 1, 0,
     0, 0, 0},
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
	g_autoptr(LhGraph) h =
	    import("hlo/lhs_test_HostOffloadComputationsWithoutSchedule.hlo", NULL);
	cr_assert(t_op_named(h, "async_start")->async);
	cr_assert_eq(lh_op_class(t_op_named(h, "async_start")), LH_CLASS_ASYNC_COMPUTE);
	cr_assert(t_has_dep(h, "mul_fusion", "async_start"));
	cr_assert_str_eq(t_op_named(h, "mul_fusion")->opcode, "fusion:kLoop");
}

Test(hlo, async_collectives_and_sizes)
{
	g_autoptr(LhGraph) g =
	    import("hlo/lhs_test_MultipleParallelResourceShouldOverlapCollectives.hlo", NULL);
	cr_assert_eq(t_op_named(g, "ar_0")->size, 4); /* f32[] */
	cr_assert_eq(t_op_named(g, "rs_0")->size, 8); /* the input f32[2] */
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
	cr_assert_float_eq(t_op_named(g, "y@0")->flops, 8, 1e-9);  /* elementwise: 8 elements */
	cr_assert_float_eq(t_op_named(g, "y@0")->bytes, 64, 1e-9); /* 32 in + 32 out */
}

Test(hlo, costs_from_shapes)
{
	g_autoptr(LhGraph) g =
	    import("hlo/lhs_test_AllToAllAndGemmOverlapWithSolCostModel.hlo", NULL);
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
	    "  c = (f32[2,32,32,8]{3,2,1,0}, u8[0]{0}) custom-call(i, k), window={size=3x3 "
	    "pad=1_1x1_1},\n"
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
	g_autoptr(GRegex) re =
	    g_regex_new("while\\(.*condition=(%[^,]+), body=(%[^,\\s]+)", 0, 0, NULL);
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

/* The 70B module (hlo_llama31_70b_bf16_16x8.hlo): its collectives, counted from the text
 * apart from the importer. Its two while loops (%while: condition %region_6.449_spmd, body
 * %region_3.423_spmd; %while.1: condition %region_24.1165_spmd, body %region_14.1138_spmd)
 * count an s32 from constant(0) while it is LT constant(80): 80 trips each. By grep of the
 * text, lines with " all-gather(": 2 in ENTRY, 7 in each body (16 in the file); with
 * " all-reduce(": 43 in ENTRY, 16 in the second body (59 in the file); no other collective.
 * So all-gathers 2 + 80 * (7 + 7) = 1122 and all-reduces 43 + 80 * 16 = 1323. The counts
 * are rescanned here (count_in_comp, no importer code) and checked against these numbers
 * too, so that an edit of the file shows up as such. */
Test(hlo, llama31_70b_collectives_counted_from_the_text)
{
	g_autofree char *path = t_data("hlo/hlo_llama31_70b_bf16_16x8.hlo");
	g_autofree char *text = NULL;
	cr_assert(g_file_get_contents(path, &text, NULL, NULL));
	const char *b1 = "%region_3.423_spmd", *b2 = "%region_14.1138_spmd";
	cr_assert_eq(count_in_comp(text, "%region_6.449_spmd", "constant(80)"), 1);
	cr_assert_eq(count_in_comp(text, "%region_24.1165_spmd", "constant(80)"), 1);
	const struct {
		const char *needle;
		LhOpKind kind;
		guint expect;
	} cases[] = {
	    {" all-gather(", LH_OP_ALL_GATHER, 1122},
	    {" all-reduce(", LH_OP_ALL_REDUCE, 1323},
	    {" reduce-scatter(", LH_OP_REDUCE_SCATTER, 0},
	    {" all-to-all(", LH_OP_ALL_TO_ALL, 0},
	    {" collective-permute(", LH_OP_COLLECTIVE_PERMUTE, 0},
	};
	g_autoptr(LhGraph) g = import("hlo/hlo_llama31_70b_bf16_16x8.hlo", NULL);
	for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
		guint scan = count_in_comp(text, "ENTRY", cases[i].needle) +
		             80 * (count_in_comp(text, b1, cases[i].needle) +
		                   count_in_comp(text, b2, cases[i].needle));
		cr_assert_eq(scan, cases[i].expect, "%s: the text gives %u", cases[i].needle, scan);
		cr_assert_eq(count_kind(g, cases[i].kind), cases[i].expect, "%s: %u imported",
		             cases[i].needle, count_kind(g, cases[i].kind));
	}
	/* The module states no device count; its iota groups name 128 devices (docs/hlo.md). */
	cr_assert_eq(lh_graph_devices(g), 128);
}

/* ---- bad input ---- */

typedef struct {
	char text[256];
	char where[16]; /* "LINE:COL" expected in the message */
	char what[48];  /* a fragment of the message */
} Bad;

static Bad bad_inputs[] = {
    {"HloModule m\nENTRY e {\n  a = f32[2 parameter(0)\n}\n", "3:13", "dimensions"},
    {"HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  b = f32[2] add(a, zz)\n}\n", "4:21",
     "unknown operand 'zz'"},
    {"HloModule m\nENTRY e {\n  a = f32[2] parameter(0), foo=\"x\n}\n", "3:32",
     "unterminated string"},
    {"HloModule m\nENTRY e {\n  a = q7[2] parameter(0)\n}\n", "3:7", "unknown element type 'q7'"},
    {"HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n", "2:7", "not closed"},
    {"HloModule m\n", "2:1", "no computation"},
    {"HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  a = f32[2] parameter(1)\n}\n", "4:3",
     "duplicate instruction 'a'"},
    {"HloModule m\nENTRY e {\n  a = f32[2]{0:S(5) parameter(0)\n}\n", "3:13", "unclosed layout"},
    {"HloModule m\nENTRY e {\n  w = f32[2] while(a), body=nope\n  a = f32[2] parameter(0)\n}\n",
     "3:3", "body="},
    {"HloModule m\nENTRY e {\n  a = f32[2] add(b, b)\n  b = f32[2] add(a, a)\n}\n", "4:3",
     "depends on itself"},
    {"HloModule m\nc {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), to_apply=c\n}\nENTRY e "
     "{\n  a = f32[] parameter(0)\n  ROOT b = f32[] call(a), to_apply=c\n}\n",
     "2:1", "calls itself"},
    {"HloModule m\nENTRY e {\n  a = f32[2] parameter(0) /* open\n}\n", "3:27",
     "unterminated comment"},
    /* Found by fuzzing: an absurd dimension overflowed the byte count (UBSan). */
    {"e {\n  a = u4[1066666666666666666666666623,4096]{1,0:E(4)} parameter(0)\n}\n", "2:7",
     "more than 1e18"},
    /* Aliasing, precision and fft attributes (positions counted from the line's first column). */
    {"HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  k = f32[4] custom-call(a), "
     "custom_call_target=\"f\", output_to_operand_aliasing={{}: (0 {})}\n}\n",
     "4:89", "expected ',' after the operand number"},
    {"HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  k = f32[4] custom-call(a), "
     "custom_call_target=\"f\", output_to_operand_aliasing={{}: (3, {})}\n}\n",
     "4:82", "names operand 3 of 'k'"},
    {"HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  k = f32[4] custom-call(a), "
     "custom_call_target=\"f\", output_to_operand_aliasing={{x}: (0, {})}\n}\n",
     "4:83", "expected a number or '}'"},
    {"HloModule m, input_output_alias={ {0}: 0 }\nENTRY e {\n  a = f32[4] parameter(0)\n  ROOT t = "
     "(f32[4]) tuple(a)\n}\n",
     "1:40", "expected '(' before the operand number"},
    {"HloModule m, input_output_alias={ {0}: (7, {}, may-alias) }\nENTRY e {\n  a = f32[4] "
     "parameter(0)\n  ROOT t = (f32[4]) tuple(a)\n}\n",
     "1:35", "names parameter 7"},
    {"HloModule m, input_output_alias={ {0}: (0, {}, maybe) }\nENTRY e {\n  a = f32[4] "
     "parameter(0)\n  ROOT t = (f32[4]) tuple(a)\n}\n",
     "1:48", "may-alias or must-alias"},
    {"HloModule m\nENTRY e {\n  a = f32[4,4] parameter(0)\n  d = f32[4,4] dot(a, a), "
     "lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={fast,default}\n}\n",
     "4:98", "expected default, high or highest"},
    {"HloModule m\nENTRY e {\n  a = f32[4,4] parameter(0)\n  d = f32[4,4] dot(a, a), "
     "lhs_contracting_dims={1}, rhs_contracting_dims={0}, algorithm=dot_f7_f7_f32\n}\n",
     "4:89", "unknown dot algorithm"},
    {"HloModule m\nENTRY e {\n  a = c64[8] parameter(0)\n  f = c64[8] fft(a), fft_length={8}\n}\n",
     "4:14", "needs fft_type="},
    {"HloModule m\nENTRY e {\n  a = c64[8] parameter(0)\n  f = c64[8] fft(a), fft_type=FFT, "
     "fft_length={0}\n}\n",
     "4:14", "needs fft_length="},
    {"HloModule m\nENTRY e {\n  a = c64[8] parameter(0)\n  f = c64[8] fft(a), fft_type=DCT, "
     "fft_length={8}\n}\n",
     "4:14", "needs fft_type="},
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
	cr_assert(g_str_has_prefix(e->message, pos), "'%s' does not start with '%s'", e->message,
	          pos);
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
	    "    backend_config={\"x\":\"{}}\",\"y\":[1,{\"z\":2}]}, mhlo.sharding=#sdy<foo {a, "
	    "b}>\n"
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
	cr_assert(
	    g_file_set_contents(bad, "HloModule m\nENTRY e {\n  a = f32[2] add(b)\n}\n", -1, NULL));
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

/* ---- buffers (docs/hlo.md, "Buffers") ---- */

static LhGraph *import_ok(const char *text, GPtrArray *warn)
{
	GError *e = NULL;
	LhGraph *g = import_text(text, warn, &e);
	cr_assert(g, "%s", e ? e->message : "");
	return g;
}

static guint32 alias_of(const LhGraph *g, const char *name)
{
	return t_op_named(g, name)->alias;
}

Test(hlo, dynamic_update_slice_in_place_and_slices_read_the_slice)
{
	const char *text =
	    "HloModule m\nENTRY e {\n  buf = f32[8,1024]{1,0} parameter(0)\n"
	    "  u = f32[1,1024]{1,0} parameter(1)\n  i = s32[] parameter(2)\n"
	    "  z = s32[] constant(0)\n"
	    "  d = f32[8,1024]{1,0} dynamic-update-slice(buf, u, i, z)\n"
	    "  s = f32[2,1024]{1,0} dynamic-slice(d, i, z), dynamic_slice_sizes={2,1024}\n"
	    "  c = f32[2,1024]{1,0} slice(d), slice={[0:2], [0:1024]}\n"
	    "  ROOT r = (f32[2,1024]{1,0}, f32[2,1024]{1,0}) tuple(s, c)\n}\n";
	g_autoptr(LhGraph) g = import_ok(text, NULL);
	/* The update u is 1024 * 4 = 4096 bytes, read and written; the indices i and z are 4
	 * bytes each: 2 * 4096 + 8 = 8200 (HloCostAnalysis::HandleDynamicUpdateSlice). d writes
	 * into buf: it aliases it, and its out_bytes is the view, 8 * 1024 * 4 = 32768. */
	const LhOp *d = t_op_named(g, "d");
	cr_assert_float_eq(d->bytes, 8200, 1e-9);
	cr_assert_eq(d->alias, t_id(g, "buf"));
	cr_assert_eq(d->out_bytes, 32768);
	/* dynamic-slice: the 2 * 1024 * 4 = 8192-byte slice read and written, plus 8 bytes of
	 * indices: 16392. slice: 2 * 8192 = 16384. Neither aliases. */
	cr_assert_float_eq(t_op_named(g, "s")->bytes, 16392, 1e-9);
	cr_assert_float_eq(t_op_named(g, "c")->bytes, 16384, 1e-9);
	cr_assert_eq(alias_of(g, "s"), LH_NO_OP);
}

Test(hlo, fusions_rooted_in_an_update_alias_and_fused_slices_read_the_slice)
{
	const char *text =
	    "HloModule m\n"
	    "fused_dus {\n  p0 = f32[8,1024] parameter(0)\n  p1 = f32[1,1024] parameter(1)\n"
	    "  p2 = s32[] parameter(2)\n  c = s32[] constant(0)\n"
	    "  m = f32[1,1024] multiply(p1, p1)\n"
	    "  b = f32[8,1024] bitcast(p0)\n"
	    "  ROOT d = f32[8,1024] dynamic-update-slice(b, m, p2, c)\n}\n"
	    "fused_slice {\n  p0 = f32[8,1024] parameter(0)\n"
	    "  s = f32[2,1024] slice(p0), slice={[0:2], [0:1024]}\n"
	    "  ROOT n = f32[2,1024] negate(s)\n}\n"
	    "ENTRY e {\n  buf = f32[8,1024] parameter(0)\n  u = f32[1,1024] parameter(1)\n"
	    "  i = s32[] parameter(2)\n"
	    "  f = f32[8,1024] fusion(buf, u, i), kind=kLoop, calls=fused_dus\n"
	    "  ROOT g = f32[2,1024] fusion(f), kind=kLoop, calls=fused_slice\n}\n";
	g_autoptr(LhGraph) g = import_ok(text, NULL);
	/* f: writes the update m (4096 bytes) into p0's buffer (through a bitcast); reads p1
	 * whole (4096, the multiply), p2 whole (4, an index) and p0 not at all:
	 * 4096 + 4096 + 4 + 0 = 8196. It aliases buf. */
	const LhOp *f = t_op_named(g, "f");
	cr_assert_float_eq(f->bytes, 8196, 1e-9);
	cr_assert_eq(f->alias, t_id(g, "buf"));
	/* g: reads the 2-row slice of p0 (8192) and writes n (8192): 16384, not 32768 + 8192. */
	cr_assert_float_eq(t_op_named(g, "g")->bytes, 16384, 1e-9);
	cr_assert_eq(alias_of(g, "g"), LH_NO_OP);
}

Test(hlo, output_to_operand_aliasing_whole_and_partial)
{
	const char *text =
	    "HloModule m\nENTRY e {\n  a = f32[256] parameter(0)\n  b = f32[256] parameter(1)\n"
	    "  k = f32[256] custom-call(a, b), custom_call_target=\"foo\",\n"
	    "    output_to_operand_aliasing={{}: (0, {})}\n"
	    "  t = (f32[256], f32[64]) custom-call(k, b), custom_call_target=\"bar\",\n"
	    "    output_to_operand_aliasing={{0}: (1, {})}\n"
	    "  ROOT r = f32[64] get-tuple-element(t), index=1\n}\n";
	g_autoptr(LhGraph) g = import_ok(text, NULL);
	/* k's whole output is operand 0's buffer. */
	cr_assert_eq(alias_of(g, "k"), t_id(g, "a"));
	/* t's element {0} (256 * 4 = 1024 bytes) is b's buffer; only element {1} is new:
	 * out_bytes = 1024 + 64 * 4 - 1024 = 256, and no alias (one op, two buffers). */
	cr_assert_eq(t_op_named(g, "t")->out_bytes, 256);
	cr_assert_eq(alias_of(g, "t"), LH_NO_OP);
}

Test(hlo, input_output_alias_donates_the_parameter)
{
	const char *text =
	    "HloModule m, input_output_alias={ {0}: (0, {}, may-alias), {1}: (2, {}, may-alias) }\n"
	    "ENTRY e {\n  w = f32[256] parameter(0)\n  g = f32[256] parameter(1)\n"
	    "  s = f32[256] parameter(2)\n"
	    "  n = f32[256] subtract(w, g)\n  x = f32[256] exponential(g)\n"
	    "  ROOT t = (f32[256], f32[256]) tuple(n, x)\n}\n";
	g_autoptr(LhGraph) g = import_ok(text, NULL);
	/* Output {0} is written into parameter 0 (w), which n reads: n aliases w. */
	cr_assert_eq(alias_of(g, "n"), t_id(g, "w"));
	/* Output {1} goes into parameter 2 (s), which x does not read: x gets s as a dep (an
	 * input, ready at 0) and aliases it. */
	cr_assert(t_has_dep(g, "x", "s"));
	cr_assert_eq(alias_of(g, "x"), t_id(g, "s"));
}

Test(hlo, while_state_reuses_its_buffers_and_peak_counts_them_once)
{
	const char *text = "HloModule m, is_scheduled=true\n"
	                   "body {\n  p = (f32[256], s32[]) parameter(0)\n"
	                   "  x = f32[256] get-tuple-element(p), index=0\n"
	                   "  i = s32[] get-tuple-element(p), index=1\n  one = s32[] constant(1)\n"
	                   "  y = f32[256] exponential(x)\n  j = s32[] add(i, one)\n"
	                   "  ROOT t = (f32[256], s32[]) tuple(y, j)\n}\n"
	                   "cond {\n  p = (f32[256], s32[]) parameter(0)\n"
	                   "  i = s32[] get-tuple-element(p), index=1\n  n = s32[] constant(3)\n"
	                   "  ROOT c = pred[] compare(i, n), direction=LT\n}\n"
	                   "ENTRY e {\n  a = f32[256] parameter(0)\n  z = s32[] constant(0)\n"
	                   "  q = f32[256] negate(a)\n"
	                   "  t = (f32[256], s32[]) tuple(q, z)\n"
	                   "  w = (f32[256], s32[]) while(t), condition=cond, body=body\n"
	                   "  ROOT r = f32[256] get-tuple-element(w), index=0\n}\n";
	g_autoptr(LhGraph) g = import_ok(text, NULL);
	/* Element 0: q, then y@0, y@1, y@2 each read the previous value and write it in place. */
	cr_assert_eq(alias_of(g, "y@0"), t_id(g, "q"));
	cr_assert_eq(alias_of(g, "y@1"), t_id(g, "y@0"));
	cr_assert_eq(alias_of(g, "y@2"), t_id(g, "y@1"));
	/* Element 1 starts as a constant (no op): j@0 allocates, j@1 and j@2 reuse it. */
	cr_assert_eq(alias_of(g, "j@0"), LH_NO_OP);
	cr_assert_eq(alias_of(g, "j@1"), t_id(g, "j@0"));
	/* Run serially in the order q, y@0, j@0, y@1, j@1, y@2, j@2: a (1024 B) is live from 0
	 * and q allocates 1024 at 0: 2048, the peak. a goes when q ends; then the y chain adds
	 * nothing and j@0 4 bytes: 1028 to the end. Without the aliases y@1 would start while
	 * y@0 and j@0 are live: 1024 + 1024 + 4 = 2052. */
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 s = lh_plan_add_stream(p, "s", LH_ROLE_COMPUTE);
	for (guint32 k = 0; k < lh_graph_n_ops(g); k++)
		if (lh_graph_op(g, k)->kind != LH_OP_INPUT)
			lh_plan_run(p, s, k);
	g_autoptr(LhTrace) tr = t_sim(g, hw, p);
	cr_assert_eq(tr->peak_device, 2048);
	cr_assert_eq(tr->peak_device_t, 0);
	const LhMemPoint *last = &g_array_index(tr->mem, LhMemPoint, tr->mem->len - 1);
	cr_assert_eq(last->device_bytes, 1028);
}

/* ---- dtype and GEMM shape ---- */

static const char *dot_module(const char *type, const char *extra)
{
	static char buf[512];
	g_snprintf(
	    buf, sizeof buf,
	    "HloModule m\nENTRY e {\n  a = %s[4,64,32]{2,1,0} parameter(0)\n"
	    "  b = %s[4,32,16]{2,1,0} parameter(1)\n"
	    "  ROOT d = f32[4,64,16]{2,1,0} dot(a, b), lhs_batch_dims={0},\n"
	    "    lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}%s\n}\n",
	    type, type, extra);
	return buf;
}

Test(hlo, dot_dtype_follows_type_and_precision_config)
{
	const struct {
		const char *type, *extra;
		LhDtype dtype;
		double passes;
	} cases[] = {
	    /* f32 with the default precision: TF32 (gpu_blas_lt.cc, GetBlasComputationType) */
	    {"f32", "", LH_DTYPE_TF32, 1},
	    {"f32", ", operand_precision={high,default}", LH_DTYPE_TF32, 1},
	    {"f32", ", operand_precision={highest,default}", LH_DTYPE_F32, 1},
	    {"f32", ", operand_precision={HIGHEST,HIGHEST}", LH_DTYPE_F32, 1},
	    {"f32", ", algorithm=dot_tf32_tf32_f32", LH_DTYPE_TF32, 1},
	    {"f32", ", algorithm=dot_f32_f32_f32", LH_DTYPE_F32, 1},
	    {"f32", ", algorithm=dot_bf16_bf16_f32_x3", LH_DTYPE_BF16, 3},
	    {"bf16", "", LH_DTYPE_BF16, 1},
	    {"f16", "", LH_DTYPE_F16, 1},
	    {"f64", "", LH_DTYPE_F64, 1},
	    {"f8e4m3fn", "", LH_DTYPE_FP8, 1},
	    {"s8", "", LH_DTYPE_INT8, 1},
	};
	for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(LhGraph) g = import_ok(dot_module(cases[i].type, cases[i].extra), NULL);
		const LhOp *d = t_op_named(g, "d");
		cr_expect_eq(d->dtype, cases[i].dtype, "%s%s: %s", cases[i].type, cases[i].extra,
		             lh_dtype_name(d->dtype));
		/* batch 4 (lhs dim 0), m 64 (lhs dim 1), n 16 (rhs dim 2), k 32 (lhs dim 2);
		 * flops 2 * 4 * 64 * 16 * 32 = 262144 per pass. */
		cr_expect_eq(d->gemm_batch, 4);
		cr_expect_eq(d->gemm_m, 64);
		cr_expect_eq(d->gemm_n, 16);
		cr_expect_eq(d->gemm_k, 32);
		cr_expect_float_eq(d->flops, 262144 * cases[i].passes, 1e-9, "%s", cases[i].extra);
	}
}

Test(hlo, gemm_shapes_of_convolutions_library_calls_and_fusions)
{
	g_autoptr(LhGraph) c = import("hlo/lhs_test_AllGatherAsyncSimple.hlo", NULL);
	/* c0 = f32[16,256,256] convolution(p0 f32[16,64,256], p1 f32[16,64,256]),
	 * dim_labels=0fb_0io->0fb: m = output spatial 16 * batch 256 = 4096, n = output
	 * features 256 (rhs 'o'), k = input features 64 (rhs 'i') * window 16 = 1024; f32 at
	 * the default precision: TF32. 2 * 4096 * 256 * 1024 = 2147483648 = its flops. */
	const LhOp *c0 = t_op_named(c, "c0");
	cr_assert_eq(c0->gemm_batch, 1);
	cr_assert_eq(c0->gemm_m, 4096);
	cr_assert_eq(c0->gemm_n, 256);
	cr_assert_eq(c0->gemm_k, 1024);
	cr_assert_eq(c0->dtype, LH_DTYPE_TF32);
	cr_assert_float_eq(2.0 * c0->gemm_m * c0->gemm_n * c0->gemm_k, c0->flops, 1);

	/* A grouped convolution: input [1,8,8,16] b01f, kernel [3,3,4,32] 01io with 4 groups
	 * (i = 16 / 4 = 4), output [1,8,8,32]: 4 GEMMs of m = 1*8*8 = 64, n = 32 / 4 = 8,
	 * k = 3*3*4 = 36. Flops 2 * 4 * 64 * 8 * 36 = 147456 = 2 * 2048 outputs * 36. */
	const char *grouped =
	    "HloModule m\nENTRY e {\n  x = bf16[1,8,8,16]{3,2,1,0} parameter(0)\n"
	    "  k = bf16[3,3,4,32]{3,2,1,0} parameter(1)\n"
	    "  ROOT y = bf16[1,8,8,32]{3,2,1,0} convolution(x, k), window={size=3x3 pad=1_1x1_1},\n"
	    "    dim_labels=b01f_01io->b01f, feature_group_count=4\n}\n";
	g_autoptr(LhGraph) gc = import_ok(grouped, NULL);
	const LhOp *y = t_op_named(gc, "y");
	cr_assert_eq(y->gemm_batch, 4);
	cr_assert_eq(y->gemm_m, 64);
	cr_assert_eq(y->gemm_n, 8);
	cr_assert_eq(y->gemm_k, 36);
	cr_assert_eq(y->dtype, LH_DTYPE_BF16);
	cr_assert_float_eq(y->flops, 147456, 1e-9);

	/* A cuBLAS custom-call and a fusion holding a dot. */
	const char *text =
	    "HloModule m\n"
	    "fused {\n  p0 = f32[64,32] parameter(0)\n  p1 = f32[32,16] parameter(1)\n"
	    "  d = f32[64,16] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0},\n"
	    "    operand_precision={highest,highest}\n"
	    "  ROOT e = f32[64,16] exponential(d)\n}\n"
	    "ENTRY e {\n  x = bf16[8,128,256]{2,1,0} parameter(0)\n"
	    "  w = bf16[8,256,512]{2,1,0} parameter(1)\n"
	    "  g = (bf16[8,128,512]{2,1,0}, s8[4194304]{0}) custom-call(x, w),\n"
	    "    custom_call_target=\"__cublas$gemm\",\n"
	    "    backend_config={\"gemm_backend_config\":{\"dot_dimension_numbers\":{\n"
	    "      \"lhs_contracting_dimensions\":[\"2\"],\"rhs_contracting_dimensions\":[\"1\"],\n"
	    "      \"lhs_batch_dimensions\":[\"0\"],\"rhs_batch_dimensions\":[\"0\"]}}}\n"
	    "  a = f32[64,32] parameter(2)\n  b = f32[32,16] parameter(3)\n"
	    "  ROOT f = f32[64,16] fusion(a, b), kind=kOutput, calls=fused\n}\n";
	g_autoptr(LhGraph) g = import_ok(text, NULL);
	/* g: batch 8, m 128, n 512, k 256, bf16. */
	const LhOp *gm = t_op_named(g, "g");
	cr_assert_eq(gm->dtype, LH_DTYPE_BF16);
	cr_assert_eq(gm->gemm_batch, 8);
	cr_assert_eq(gm->gemm_m, 128);
	cr_assert_eq(gm->gemm_n, 512);
	cr_assert_eq(gm->gemm_k, 256);
	/* f: its dot, [1, 64, 16, 32], in full f32 (HIGHEST). */
	const LhOp *f = t_op_named(g, "f");
	cr_assert_eq(f->dtype, LH_DTYPE_F32);
	cr_assert_eq(f->gemm_batch, 1);
	cr_assert_eq(f->gemm_m, 64);
	cr_assert_eq(f->gemm_n, 16);
	cr_assert_eq(f->gemm_k, 32);
	/* A dot run as an async computation (async-start calls=): an async kernel with the
	 * dot's dtype and shape, [1, 64, 16, 32] in TF32. */
	const char *async_dot =
	    "HloModule m\n"
	    "ad {\n  p0 = f32[64,32] parameter(0)\n  p1 = f32[32,16] parameter(1)\n"
	    "  ROOT d = f32[64,16] dot(p0, p1), lhs_contracting_dims={1}, "
	    "rhs_contracting_dims={0}\n}\n"
	    "ENTRY e {\n  a = f32[64,32] parameter(0)\n  b = f32[32,16] parameter(1)\n"
	    "  s = ((f32[64,32], f32[32,16]), f32[64,16], s32[]) async-start(a, b), calls=ad\n"
	    "  ROOT r = f32[64,16] async-done(s)\n}\n";
	g_autoptr(LhGraph) ga = import_ok(async_dot, NULL);
	const LhOp *as = t_op_named(ga, "s");
	cr_assert(as->async);
	cr_assert_eq(as->dtype, LH_DTYPE_TF32);
	cr_assert_eq(as->gemm_m, 64);
	cr_assert_eq(as->gemm_n, 16);
	cr_assert_eq(as->gemm_k, 32);
	/* Elementwise kernels are not GEMMs and keep no dtype. */
	g_autoptr(LhGraph) s = import("hlo/gpu_hlo.hlo", NULL);
	cr_assert_eq(t_op_named(s, "e")->gemm_m, 0);
	cr_assert_eq(t_op_named(s, "e")->dtype, LH_DTYPE_NONE);
}

/* ---- layouts ---- */

Test(hlo, transposes_and_copies_that_move_the_minor_dimension)
{
	const char *text =
	    "HloModule m\n"
	    "fused_t {\n  p = f32[64,32]{1,0} parameter(0)\n"
	    "  ROOT t = f32[32,64]{1,0} transpose(p), dimensions={1,0}\n}\n"
	    "ENTRY e {\n  a = f32[64,32]{1,0} parameter(0)\n"
	    /* moves the minor dimension: a's minor is dim 1 (32), tr's minor dim 1 is a's dim 0 */
	    "  tr = f32[32,64]{1,0} transpose(a), dimensions={1,0}\n"
	    /* the same bytes in the same order: {0,1} makes tb's minor dim 0, which is a's dim 1 */
	    "  tb = f32[32,64]{0,1} transpose(a), dimensions={1,0}\n"
	    /* a layout change: the minor dimension becomes dim 0 */
	    "  cl = f32[64,32]{0,1} copy(a)\n"
	    /* a plain copy, same layout */
	    "  cp = f32[64,32]{1,0} copy(a)\n"
	    /* size-1 dimensions do not count: [1,64] {0,1} and {1,0} hold the same bytes */
	    "  v = f32[1,64]{1,0} parameter(1)\n  c1 = f32[1,64]{0,1} copy(v)\n"
	    "  f = f32[32,64]{1,0} fusion(a), kind=kLoop, calls=fused_t\n"
	    /* an async device copy with the same layout change */
	    "  cs = (f32[64,32]{0,1}, f32[64,32]{1,0}, u32[]) copy-start(a)\n"
	    "  cd = f32[64,32]{0,1} copy-done(cs)\n"
	    "  ROOT r = (f32[32,64], f32[32,64], f32[64,32], f32[64,32], f32[1,64], f32[32,64],\n"
	    "    f32[64,32]) tuple(tr, tb, cl, cp, c1, f, cd)\n}\n";
	g_autoptr(LhGraph) g = import_ok(text, NULL);
	cr_assert(t_op_named(g, "tr")->transpose);
	/* tb is a bitcast: no op of its own; r's users would depend on a. */
	cr_assert_not(lh_graph_find(g, "tb", NULL));
	cr_assert(t_op_named(g, "cl")->transpose);
	cr_assert_not(t_op_named(g, "cp")->transpose);
	cr_assert_not(t_op_named(g, "c1")->transpose);
	cr_assert(t_op_named(g, "f")->transpose);
	cr_assert_eq(t_op_named(g, "cs")->kind, LH_OP_COPY_D2D);
	cr_assert(t_op_named(g, "cs")->transpose);
	g_autoptr(LhGraph) s = import("hlo/gpu_hlo.hlo", NULL);
	cr_assert(t_op_named(s, "c")->transpose); /* transpose f32[5000,6000] dims={1,0} */
}

/* ---- FFT ---- */

Test(hlo, fft_costs_with_the_inverse_scaling_pass)
{
	const char *text = "HloModule m\nENTRY e {\n  x = c64[4,256] parameter(0)\n"
	                   "  f = c64[4,256] fft(x), fft_type=FFT, fft_length={256}\n"
	                   "  i = c64[4,256] fft(f), fft_type=IFFT, fft_length={256}\n"
	                   "  r = f32[4,256] parameter(1)\n"
	                   "  rf = c64[4,129] fft(r), fft_type=RFFT, fft_length={256}\n"
	                   "  ir = f32[4,256] fft(rf), fft_type=IRFFT, fft_length={256}\n"
	                   "  ROOT t = (c64[4,256], f32[4,256]) tuple(i, ir)\n}\n";
	g_autoptr(LhGraph) g = import_ok(text, NULL);
	/* N = 256, log2 N = 8. FFT: 4 transforms * 5 * 256 * 8 = 40960 flops; bytes in + out,
	 * c64 = 8 bytes: 1024 * 8 * 2 = 16384. */
	const LhOp *f = t_op_named(g, "f");
	cr_assert_float_eq(f->flops, 40960, 1e-9);
	cr_assert_float_eq(f->bytes, 16384, 1e-9);
	cr_assert_eq(f->dtype, LH_DTYPE_F32); /* c64: f32 math, no tensor cores */
	/* IFFT: the same, plus the 1/N scaling: 1024 multiplies, the output (8192 bytes) read and
	 * written again: 41984 flops, 16384 + 16384 = 32768 bytes. */
	const LhOp *i = t_op_named(g, "i");
	cr_assert_float_eq(i->flops, 41984, 1e-9);
	cr_assert_float_eq(i->bytes, 32768, 1e-9);
	/* RFFT: 1024 real points in 4 transforms: 4 * 2.5 * 256 * 8 = 20480 flops; bytes
	 * 1024 * 4 in + 4 * 129 * 8 = 4128 out = 8224. */
	const LhOp *rf = t_op_named(g, "rf");
	cr_assert_float_eq(rf->flops, 20480, 1e-9);
	cr_assert_float_eq(rf->bytes, 8224, 1e-9);
	/* IRFFT: 20480 + 1024 scaling = 21504 flops; 4128 in + 4096 out + 2 * 4096 = 16416. */
	const LhOp *ir = t_op_named(g, "ir");
	cr_assert_float_eq(ir->flops, 21504, 1e-9);
	cr_assert_float_eq(ir->bytes, 16416, 1e-9);
}

/* ---- XLA's schedule ---- */

Test(hlo, scheduled_module_keeps_xla_order)
{
	g_autoptr(LhGraph) g = import("hlo/sched_offload_overlap.hlo", NULL);
	/* The text's order: act, x, w (inputs), cs (copy-start to S(5): a d2h), ags, d (dot),
	 * agd = done of ags, cd = done of cs, e. The copy and the all-gather are in flight
	 * across the dot. */
	guint32 n;
	const guint32 *seq = lh_graph_schedule(g, &n);
	cr_assert(seq);
	guint32 act = t_id(g, "act"), x = t_id(g, "x"), w = t_id(g, "w"), cs = t_id(g, "cs"),
	        ags = t_id(g, "ags"), d = t_id(g, "d"), e = t_id(g, "e");
	guint32 expect[] = {act << 1,
	                    x << 1,
	                    w << 1,
	                    cs << 1,
	                    ags << 1,
	                    d << 1,
	                    ags << 1 | LH_SCHED_DONE,
	                    cs << 1 | LH_SCHED_DONE,
	                    e << 1};
	cr_assert_eq(n, G_N_ELEMENTS(expect));
	for (guint k = 0; k < n; k++)
		cr_expect_eq(seq[k], expect[k], "entry %u", k);
	cr_assert_eq(t_op_named(g, "cs")->kind, LH_OP_COPY_D2H);
	cr_assert_eq(t_op_named(g, "ags")->kind, LH_OP_ALL_GATHER);
	/* An unscheduled module has none. */
	g_autoptr(LhGraph) u = import("hlo/gpu_hlo.hlo", NULL);
	cr_assert_null(lh_graph_schedule(u, &n));
	cr_assert_eq(n, 0);
}

Test(hlo, scheduled_loops_keep_the_body_order_per_trip)
{
	const char *text =
	    "HloModule m, is_scheduled=true\n"
	    "body {\n  p = (f32[8]) parameter(0)\n  x = f32[8] get-tuple-element(p), index=0\n"
	    "  s = f32[8] all-reduce-start(x), replica_groups={{0,1}}, to_apply=add\n"
	    "  y = f32[8] exponential(x)\n  r = f32[8] all-reduce-done(s)\n"
	    "  z = f32[8] add(y, r)\n  ROOT t = (f32[8]) tuple(z)\n}\n"
	    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
	    "  ROOT c = f32[] add(a, b)\n}\n"
	    "cond {\n  p = (f32[8]) parameter(0)\n  ROOT c = pred[] constant(true)\n}\n"
	    "ENTRY e {\n  a = f32[8] parameter(0)\n  t = (f32[8]) tuple(a)\n"
	    "  w = (f32[8]) while(t), condition=cond, body=body,\n"
	    "    backend_config={\"known_trip_count\":{\"n\":\"2\"}}\n"
	    "  g = f32[8] get-tuple-element(w), index=0\n"
	    "  ROOT ar = f32[8] all-reduce(g), replica_groups={{0,1}}, to_apply=add\n}\n";
	g_autoptr(LhGraph) g = import_ok(text, NULL);
	guint32 n;
	const guint32 *seq = lh_graph_schedule(g, &n);
	cr_assert(seq);
	/* Per trip: s@k, y@k, done s@k, z@k. The synchronous all-reduce ar at the end has its
	 * done right after it. */
	const char *names[] = {"a",   "s@0", "y@0", "s@0", "z@0", "s@1",
	                       "y@1", "s@1", "z@1", "ar",  "ar"};
	const gboolean done[] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1};
	cr_assert_eq(n, G_N_ELEMENTS(names));
	for (guint k = 0; k < n; k++)
		cr_expect_eq(seq[k], t_id(g, names[k]) << 1 | (done[k] ? LH_SCHED_DONE : 0),
		             "entry %u: %s", k, names[k]);
}

Test(hlo, cli_import_writes_the_schedule)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *out = g_build_filename(dir, "s.json", NULL);
	g_autofree char *in = t_data("hlo/sched_offload_overlap.hlo");
	char *so = NULL, *se = NULL;
	cr_assert_eq(t_lhsim(&so, &se, "import", in, "-o", out, NULL), 0, "%s", se);
	g_free(so);
	/* A scheduled module: not "unoptimized". */
	cr_assert_null(strstr(se, "unoptimized"), "%s", se);
	g_free(se);
	g_autofree char *json = NULL;
	cr_assert(g_file_get_contents(out, &json, NULL, NULL));
	cr_assert(strstr(json, "\"schedule\""), "%s", json);
	cr_assert(strstr(json, "\"d\", {\"done\": \"ags\"}, {\"done\": \"cs\"}"), "%s", json);
}

/* ---- unoptimized modules ---- */

Test(hlo, unoptimized_modules_warn_once_with_the_dump_flags)
{
	g_autoptr(GPtrArray) w = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(LhGraph) g = import("hlo/gpu_hlo.hlo", w);
	cr_assert_eq(w->len, 1);
	cr_assert(strstr(w->pdata[0], "looks unoptimized"), "%s", (char *)w->pdata[0]);
	cr_assert(strstr(w->pdata[0], "--xla_dump_to=DIR --xla_dump_hlo_as_text"), "%s",
	          (char *)w->pdata[0]);
	cr_assert(strstr(w->pdata[0], "after_optimizations.txt"), "%s", (char *)w->pdata[0]);
	/* A module with a fusion, or a scheduled one, does not warn. */
	g_autoptr(GPtrArray) w2 = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(LhGraph) h = import("hlo/lhs_test_ScheduleDynamicSliceIfMemcpy.hlo", w2);
	cr_assert_eq(w2->len, 0, "%s", w2->len ? (char *)w2->pdata[0] : "");
	g_autoptr(GPtrArray) w3 = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(LhGraph) s = import("hlo/sched_offload_overlap.hlo", w3);
	cr_assert_eq(w3->len, 0, "%s", w3->len ? (char *)w3->pdata[0] : "");
}
