/* lhsim tests — `lhs` against XLA's own expectations.
 *
 * Each test imports one of the scheduler test modules of section B of tests/data/hlo/SOURCES.md
 * (HLO text from xla/service/gpu/gpu_latency_hiding_scheduler_test.cc, "G", and
 * xla/service/latency_hiding_scheduler_test.cc, "L"), schedules it with `lhs` under the
 * settings of the XLA test (num_parallel_resources is XLA's
 * xla_gpu_experimental_parallel_collective_overlap_limit, i.e. lhsim's collective-limit),
 * saves the plan as text, reads it back, and checks the relative order XLA's test expects.
 *
 * Positions in the plan: a kernel on the main stream is at its `run`; an async op's start is
 * at its `run` on the side stream (right after the main stream's signal), its done at the
 * main stream's `wait` for the event the side stream signals after it. The importer names an
 * async pair after its start (XLA's "ag-start" is lhsim's op "ag-start").
 *
 * The L tests run XLA's generic scheduler with the ApproximateLatencyEstimator, so they use
 * estimator=xla; the G tests use the GPU backend's estimators, for which lhsim uses the
 * hardware model (estimator=model, H100). Where a test needs an FDO profile (per-op costs),
 * the importer has no way to read one, so the graph is written by hand from the HLO with the
 * profile's costs as durations.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"

typedef struct {
	LhGraph *g;
	LhPlan *plan;
	gint64 *start, *done; /* per op: command index of start / done (or of a kernel's run) */
	gint32 *stream;       /* per op: stream it runs on */
} Sched;

static void sched_clear(Sched *s)
{
	lh_plan_free(s->plan);
	lh_graph_free(s->g);
	g_free(s->start);
	g_free(s->done);
	g_free(s->stream);
}

static void sched_plan(Sched *s, const char **kv)
{
	lh_models_init();
	GError *e = NULL;
	g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", &e);
	cr_assert(hw, "%s", e ? e->message : "?");
	const LhScheduler *lhs = lh_scheduler_find("lhs");
	g_autoptr(LhPlan) p = lh_scheduler_run(lhs, s->g, hw, kv, NULL, &e);
	cr_assert(p, "%s", e ? e->message : "?");
	/* The saved plan: write it as text and read it back. */
	g_autofree char *text = lh_plan_to_data(p, s->g);
	s->plan = lh_plan_new_from_data(text, strlen(text), "saved.plan", s->g, &e);
	cr_assert(s->plan, "%s", e ? e->message : "?");
	cr_assert(lh_plan_validate(s->plan, s->g, "saved.plan", &e), "%s", e ? e->message : "?");
	guint32 n = lh_graph_n_ops(s->g);
	s->start = g_new(gint64, n);
	s->done = g_new(gint64, n);
	s->stream = g_new(gint32, n);
	for (guint32 i = 0; i < n; i++)
		s->start[i] = s->done[i] = s->stream[i] = -1;
	guint32 ns = lh_plan_n_streams(s->plan);
	g_autofree gint64 *last_run = g_new(gint64, ns);
	for (guint32 k = 0; k < ns; k++)
		last_run[k] = -1;
	g_autofree gint64 *event_op = g_new(gint64, lh_plan_n_events(s->plan) + 1);
	for (guint32 k = 0; k <= lh_plan_n_events(s->plan); k++)
		event_op[k] = -1;
	for (guint32 c = 0; c < lh_plan_n_cmds(s->plan); c++) {
		const LhCmd *cmd = lh_plan_cmd(s->plan, c);
		switch (cmd->kind) {
		case LH_CMD_RUN:
			s->start[cmd->arg] = c;
			if (cmd->stream == 0)
				s->done[cmd->arg] = c;
			s->stream[cmd->arg] = (gint32)cmd->stream;
			last_run[cmd->stream] = (gint64)cmd->arg;
			break;
		case LH_CMD_SIGNAL:
			if (cmd->stream != 0)
				event_op[cmd->arg] = last_run[cmd->stream];
			break;
		case LH_CMD_WAIT:
			if (cmd->stream == 0 && event_op[cmd->arg] >= 0)
				s->done[event_op[cmd->arg]] = c;
			break;
		default:
			break;
		}
	}
}

static void sched_import(Sched *s, const char *module, const char **kv)
{
	g_autofree char *rel = g_strdup_printf("hlo/lhs_test_%s.hlo", module);
	g_autofree char *path = t_data(rel);
	GError *e = NULL;
	s->g = lh_hlo_import_file(path, NULL, &e);
	cr_assert(s->g, "%s", e ? e->message : "?");
	sched_plan(s, kv);
}

static guint32 op(const Sched *s, const char *name)
{
	return t_id(s->g, name);
}
static gint64 start_of(const Sched *s, const char *name)
{
	return s->start[op(s, name)];
}
static gint64 done_of(const Sched *s, const char *name)
{
	gint64 d = s->done[op(s, name)];
	cr_assert_geq(d, 0, "no done recorded for '%s'", name); /* else comparisons are vacuous */
	return d;
}

/* L AllGatherAsyncSimple: "ag-done" is the instruction right before "a2". In the plan: no
 * main-stream run between the done's wait and a2's run. */
Test(xla, all_gather_async_simple)
{
	Sched s = {0};
	const char *kv[] = {"estimator=xla", NULL};
	sched_import(&s, "AllGatherAsyncSimple", kv);
	gint64 d = done_of(&s, "ag-start"), a2 = start_of(&s, "a2");
	cr_assert_lt(d, a2);
	for (gint64 c = d + 1; c < a2; c++)
		cr_assert_neq(lh_plan_cmd(s.plan, (guint32)c)->kind, LH_CMD_RUN,
		              "a run between ag-done and a2");
	/* And the all-gather overlaps a convolution: XLA's point of the test. */
	gint64 st = start_of(&s, "ag-start");
	cr_assert((st < start_of(&s, "c0") && start_of(&s, "c0") < d) ||
	          (st < start_of(&s, "c1") && start_of(&s, "c1") < d));
	sched_clear(&s);
}

/* L AllToAllAsyncBalance: each all-to-all overlaps exactly one of the two convolutions. */
Test(xla, all_to_all_async_balance)
{
	Sched s = {0};
	const char *kv[] = {"estimator=xla", NULL};
	sched_import(&s, "AllToAllAsyncBalance", kv);
	const char *ata[2] = {"ata-start", "ata-start.2"}, *conv[2] = {"c0", "c1"};
	int inside[2] = {0, 0};
	for (int a = 0; a < 2; a++)
		for (int c = 0; c < 2; c++)
			if (start_of(&s, ata[a]) < start_of(&s, conv[c]) &&
			    start_of(&s, conv[c]) < done_of(&s, ata[a]))
				inside[a]++;
	cr_assert_eq(inside[0], 1, "ata0 overlaps %d convolutions", inside[0]);
	cr_assert_eq(inside[1], 1, "ata1 overlaps %d convolutions", inside[1]);
	sched_clear(&s);
}

/* G MultipleParallelResourceShouldOverlapCollectives, num_parallel_resources = 2: both
 * collectives start before add_0 and are done after it. The FDO profile (add_0 100 ms,
 * ar_0 and rs_0 10 us) is given as durations on a graph written from the HLO. */
Test(xla, multiple_parallel_resource_should_overlap_collectives)
{
	Sched s = {0};
	s.g = lh_graph_new("m");
	guint32 p0 = lh_graph_add_op(s.g, "p0", LH_OP_INPUT);
	guint32 p1 = lh_graph_add_op(s.g, "p1", LH_OP_INPUT);
	guint32 p2 = lh_graph_add_op(s.g, "p2", LH_OP_INPUT);
	guint32 ar = t_op(s.g, "ar_0", LH_OP_ALL_REDUCE, 4);
	lh_graph_op_mut(s.g, ar)->duration_ns = 10000;
	t_dep(s.g, ar, p0);
	guint32 rs = t_op(s.g, "rs_0", LH_OP_REDUCE_SCATTER, 8);
	lh_graph_op_mut(s.g, rs)->duration_ns = 10000;
	t_dep(s.g, rs, p1);
	guint32 add = t_kernel(s.g, "add_0", 100000000, 1);
	t_dep(s.g, add, p1);
	t_dep(s.g, add, p2);
	t_finish(s.g);
	const char *kv[] = {"collective-limit=2", NULL};
	sched_plan(&s, kv);
	gint64 a = start_of(&s, "add_0");
	cr_assert_lt(start_of(&s, "ar_0"), done_of(&s, "rs_0"));
	cr_assert_lt(start_of(&s, "rs_0"), done_of(&s, "ar_0"));
	cr_assert(a > start_of(&s, "ar_0") && a > start_of(&s, "rs_0") && a < done_of(&s, "ar_0") &&
	          a < done_of(&s, "rs_0"));
	sched_clear(&s);
}

/* The same module imported as is (costs from the hardware model), with collective-limit 2
 * and 1: with 2, both collectives are in flight around add_0; with 1 they cannot both be. */
Test(xla, multiple_parallel_resource_imported)
{
	Sched s = {0};
	const char *kv2[] = {"collective-limit=2", NULL};
	sched_import(&s, "MultipleParallelResourceShouldOverlapCollectives", kv2);
	cr_assert_lt(start_of(&s, "ar_0"), done_of(&s, "rs_0"));
	cr_assert_lt(start_of(&s, "rs_0"), done_of(&s, "ar_0"));
	sched_clear(&s);
	Sched t = {0};
	const char *kv1[] = {"collective-limit=1", NULL};
	sched_import(&t, "MultipleParallelResourceShouldOverlapCollectives", kv1);
	cr_assert(done_of(&t, "ar_0") < start_of(&t, "rs_0") ||
	          done_of(&t, "rs_0") < start_of(&t, "ar_0"));
	sched_clear(&t);
}

/* G AllToAllAndGemmOverlapWithSolCostModel, 1 parallel resource, analytical cost model:
 * a2a < compute < a2a_done. */
Test(xla, all_to_all_and_gemm_overlap)
{
	Sched s = {0};
	const char *kv[] = {"collective-limit=1", NULL};
	sched_import(&s, "AllToAllAndGemmOverlapWithSolCostModel", kv);
	cr_assert_lt(start_of(&s, "a2a"), start_of(&s, "compute"));
	cr_assert_lt(start_of(&s, "compute"), done_of(&s, "a2a"));
	sched_clear(&s);
}

/* G ScheduleDynamicSliceIfMemcpy, 2 parallel resources: start < add or add < done. The
 * dynamic slice out of a host buffer is a copy-h2d in lhsim. */
Test(xla, schedule_dynamic_slice_if_memcpy)
{
	Sched s = {0};
	const char *kv[] = {"collective-limit=2", NULL};
	sched_import(&s, "ScheduleDynamicSliceIfMemcpy", kv);
	guint32 ds = op(&s, "dynamic-slice-start");
	cr_assert_eq(lh_graph_op(s.g, ds)->kind, LH_OP_COPY_H2D);
	/* XLA expects dynamic-slice-start < add < dynamic-slice-done: the add overlaps the copy. */
	cr_assert(start_of(&s, "dynamic-slice-start") < start_of(&s, "add") &&
	          start_of(&s, "add") < done_of(&s, "dynamic-slice-start"));
	sched_clear(&s);
}

/* G CopyStartDoneUsesComputeResource: a copy to host memory occupies the async-compute
 * resource (kGpuAsyncStreamComputes): it runs on an async-compute stream. */
Test(xla, copy_start_done_uses_compute_resource)
{
	Sched s = {0};
	const char *kv[] = {NULL};
	sched_import(&s, "CopyStartDoneUsesComputeResource", kv);
	guint32 c = op(&s, "copy-start");
	cr_assert_eq(lh_op_class(lh_graph_op(s.g, c)), LH_CLASS_ASYNC_COMPUTE);
	cr_assert_eq(lh_plan_stream(s.plan, (guint32)s.stream[c])->role, LH_ROLE_ASYNC_COMPUTE);
	sched_clear(&s);
}

/* G DelayMoveToHostAsyncStart, defaults: dynamic-update-slice-start.18 (an async
 * dynamic-update-slice into host memory, a copy-d2h here) starts before all-to-all-start.4.
 * XLA gets this order from its delayMoveToHost heuristic (openxla/xla PR #33240), which lhs
 * has behind delay-offload-start=true (see schedulers/lhs.c, kForceDelay). Without it lhsim's
 * order differs, as XLA's own would without that heuristic: bottom-up, both starts are
 * ready after the kernels; the copy's start is ready first (its latency, a 256 KiB copy, is
 * far shorter than the 3.5 GiB all-to-all's), so kLessStall picks it first bottom-up, which
 * puts it after the all-to-all's start in program order. */
Test(xla, delay_move_to_host_async_start)
{
	Sched s = {0};
	const char *kv[] = {"delay-offload-start=true", NULL};
	sched_import(&s, "DelayMoveToHostAsyncStart", kv);
	cr_assert_lt(start_of(&s, "dynamic-update-slice-start.18"),
	             start_of(&s, "all-to-all-start.4"));
	sched_clear(&s);
	Sched t = {0};
	const char *kv0[] = {NULL};
	sched_import(&t, "DelayMoveToHostAsyncStart", kv0);
	cr_assert_gt(start_of(&t, "dynamic-update-slice-start.18"),
	             start_of(&t, "all-to-all-start.4"));
	sched_clear(&t);
}

/* G ScheduleP2PWithMultipliers, 1 parallel resource, FDO profile add_0 5.12 s, add_1 100 ms,
 * add_2 30 ms; XLA's comment: the adds' costs equal the latencies of send,
 * collective-permute and recv, so each add overlaps one of them. Written from the HLO with
 * those costs as durations (the importer cannot read an FDO profile). Expected:
 * send_start < add_0 < send_done < cp_start < add_1 < cp_done < recv_start < add_2 <
 * recv_done. */
Test(xla, schedule_p2p_with_multipliers)
{
	Sched s = {0};
	s.g = lh_graph_new("test");
	guint32 p0 = lh_graph_add_op(s.g, "p0", LH_OP_INPUT);
	guint32 p1 = lh_graph_add_op(s.g, "p1", LH_OP_INPUT);
	guint32 p2 = lh_graph_add_op(s.g, "p2", LH_OP_INPUT);
	guint32 send = t_op(s.g, "send_start", LH_OP_SEND, 256);
	lh_graph_op_mut(s.g, send)->duration_ns = 5120000000;
	t_dep(s.g, send, p0);
	guint32 cp = t_op(s.g, "cp_start", LH_OP_COLLECTIVE_PERMUTE, 256);
	lh_graph_op_mut(s.g, cp)->duration_ns = 100000000;
	t_dep(s.g, cp, p1);
	t_dep(s.g, cp, send); /* control-predecessors={send_done} */
	guint32 a0 = t_kernel(s.g, "add_0", 5120000000, 1);
	t_dep(s.g, a0, p2);
	guint32 a1 = t_kernel(s.g, "add_1", 100000000, 1);
	t_dep(s.g, a1, a0);
	guint32 a2 = t_kernel(s.g, "add_2", 30000000, 1);
	t_dep(s.g, a2, a1);
	guint32 recv = t_op(s.g, "recv_start", LH_OP_RECV, 256);
	lh_graph_op_mut(s.g, recv)->duration_ns = 30000000;
	t_dep(s.g, recv, cp); /* control-predecessors={cp_done} */
	t_finish(s.g);
	const char *kv[] = {"collective-limit=1", "p2p-limit=1", NULL};
	sched_plan(&s, kv);
	gint64 seq[9] = {
	    start_of(&s, "send_start"), start_of(&s, "add_0"), done_of(&s, "send_start"),
	    start_of(&s, "cp_start"),   start_of(&s, "add_1"), done_of(&s, "cp_start"),
	    start_of(&s, "recv_start"), start_of(&s, "add_2"), done_of(&s, "recv_start")};
	for (int k = 1; k < 9; k++)
		cr_assert_lt(seq[k - 1], seq[k], "expected order broken at step %d", k);
	sched_clear(&s);
}

/* G ParallelThreadsShouldBeScheduled: the module only has to schedule. */
Test(xla, parallel_threads_should_be_scheduled)
{
	Sched s = {0};
	const char *kv[] = {NULL};
	sched_import(&s, "ParallelThreadsShouldBeScheduled", kv);
	/* "start" (async-start on the "parallel" thread) is an async kernel: it runs on an
	 * async-compute side stream, and the main stream waits for it (its done). */
	cr_assert_geq(s.stream[op(&s, "start")], 1);
	cr_assert_eq(lh_plan_stream(s.plan, (guint32)s.stream[op(&s, "start")])->role,
	             LH_ROLE_ASYNC_COMPUTE);
	cr_assert_lt(start_of(&s, "start"), done_of(&s, "start"));
	sched_clear(&s);
}

/* G SchedulePipelinedSendRecvsLate, 2 parallel resources: in the while body, the new send and
 * recv (send_ctx_, recv_ctx_) start before the body's dot (some_res), after the previous
 * iteration's send-done and recv-done. The importer unrolls the 13 iterations (ops "NAME@k")
 * and merges each pipelined pair into one op named after its start, so iteration k's
 * recv-done is the done of recv_ctx_@(k-1) (recv_ctx for k = 0). Checked for every k:
 * done(previous) < start(recv_ctx_@k) < some_res@k, and the same for the sends. */
Test(xla, schedule_pipelined_send_recvs_late)
{
	Sched s = {0};
	const char *kv[] = {"collective-limit=2", NULL};
	sched_import(&s, "SchedulePipelinedSendRecvsLate", kv);
	for (int k = 0; k < 13; k++) {
		char res[32], rv[32], sd[32], prv[32], psd[32];
		g_snprintf(res, sizeof res, "some_res@%d", k);
		g_snprintf(rv, sizeof rv, "recv_ctx_@%d", k);
		g_snprintf(sd, sizeof sd, "send_ctx_@%d", k);
		if (k == 0) {
			g_strlcpy(prv, "recv_ctx", sizeof prv);
			g_strlcpy(psd, "send_ctx", sizeof psd);
		} else {
			g_snprintf(prv, sizeof prv, "recv_ctx_@%d", k - 1);
			g_snprintf(psd, sizeof psd, "send_ctx_@%d", k - 1);
		}
		cr_assert_lt(done_of(&s, prv), start_of(&s, rv), "iteration %d", k);
		cr_assert_lt(start_of(&s, rv), start_of(&s, res), "iteration %d: recv after dot",
		             k);
		cr_assert_lt(done_of(&s, psd), start_of(&s, sd), "iteration %d", k);
		cr_assert_lt(start_of(&s, sd), start_of(&s, res), "iteration %d: send after dot",
		             k);
	}
	sched_clear(&s);
}

/* L HostOffloadComputationsWithoutSchedule: an async computation on the host thread
 * (async_execution_thread="host", HostExecute) must schedule. lhsim has no host execution
 * engine: the importer makes the host computation a kernel, so only scheduling and
 * validation are checked here. */
Test(xla, host_offload_computations_without_schedule)
{
	Sched s = {0};
	const char *kv[] = {"estimator=xla", NULL};
	sched_import(&s, "HostOffloadComputationsWithoutSchedule", kv);
	/* async_start runs on an async-compute side stream; mul_fusion reads async_done, so it
	 * runs on the main stream after the main stream's wait for async_start. */
	cr_assert_eq(lh_plan_stream(s.plan, (guint32)s.stream[op(&s, "async_start")])->role,
	             LH_ROLE_ASYNC_COMPUTE);
	cr_assert_eq(s.stream[op(&s, "mul_fusion")], 0);
	cr_assert_lt(done_of(&s, "async_start"), start_of(&s, "mul_fusion"));
	sched_clear(&s);
}

/* L ScheduleLoopPeeledSendDoneBeforeWhile expects the peeled send-done before the while.
 * Not checked: the while's trip count is unknown, so the importer imports its body once and
 * the while itself disappears, and send-done's control-predecessor (recv-done) is not kept on
 * the merged send op; XLA's expectation is about the while instruction's position, which
 * this graph no longer has. The module must still schedule. */
Test(xla, schedule_loop_peeled_send_done_before_while_schedules)
{
	Sched s = {0};
	const char *kv[] = {"estimator=xla", "collective-limit=2", NULL};
	sched_import(&s, "ScheduleLoopPeeledSendDoneBeforeWhile", kv);
	/* The send and the recv run on p2p side streams, the body's add (imported once) on main. */
	cr_assert_eq(lh_plan_stream(s.plan, (guint32)s.stream[op(&s, "send")])->role, LH_ROLE_P2P);
	cr_assert_eq(lh_plan_stream(s.plan, (guint32)s.stream[op(&s, "recv")])->role, LH_ROLE_P2P);
	cr_assert_eq(s.stream[op(&s, "add.0@0")], 0);
	sched_clear(&s);
}
