/* lhsim tests — several devices in one simulation (issue 10): the pipeline and SPMD workloads,
 * scheduling a placed graph device by device, --hw maps and --slow, per-device metrics, the
 * timeline's device blocks and the Chrome trace's processes.
 *
 * Expected values are worked out by hand in the comments: op counts from the generators'
 * structure (models/gen.c), the 1F1B and interleaved orders from the rules of Narayanan et al.
 * 2021 (Megatron-LM's get_model_chunk_id), the bubble of GPipe and 1F1B from (p-1)/(m+p-1)
 * (Huang et al. 2019; Narayanan et al. 2021, section 2.2), metrics from a hand-made trace. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "helpers.h"
#include "schedulers/placed.h"
#include "viz/layout.h"

static LhGraph *gen(const char *name, const char *const *kv)
{
	GError *e = NULL;
	LhGraph *g = lh_gen_workload(name, kv, &e);
	cr_assert(g, "%s: %s", name, e ? e->message : "?");
	return g;
}

static guint count_on(const LhGraph *g, guint32 d, int kind) /* kind -1: any */
{
	guint n = 0;
	for (guint32 i = 0; i < lh_graph_n_ops(g); i++) {
		const LhOp *op = lh_graph_op(g, i);
		n += op->device == d && (kind < 0 || op->kind == kind);
	}
	return n;
}

/* The kernels of device @d, in program order, must be @names. */
static void assert_kernels(const LhGraph *g, guint32 d, const char *const *names, guint n)
{
	guint k = 0;
	for (guint32 i = 0; i < lh_graph_n_ops(g); i++) {
		const LhOp *op = lh_graph_op(g, i);
		if (op->device != d || op->kind != LH_OP_KERNEL || strstr(op->name, ".loss"))
			continue;
		cr_assert_lt(k, n, "device %u: more kernels than expected (%s)", d, op->name);
		cr_assert_str_eq(op->name, names[k], "device %u, kernel %u", d, k);
		k++;
	}
	cr_assert_eq(k, n, "device %u: %u kernels, expected %u", d, k, n);
}

/* Every send and recv: one sync with exactly one send and one recv, on two devices. */
static void assert_pairs(const LhGraph *g, guint *n_pairs)
{
	*n_pairs = 0;
	for (guint32 s = 0; s < lh_graph_n_syncs(g); s++) {
		guint32 n;
		const guint32 *ops = lh_graph_sync_ops(g, s, &n);
		const LhOp *a = lh_graph_op(g, ops[0]);
		if (a->kind != LH_OP_SEND && a->kind != LH_OP_RECV)
			continue;
		cr_assert_eq(n, 2, "sync %s", lh_graph_sync_name(g, s));
		const LhOp *b = lh_graph_op(g, ops[1]);
		cr_assert((a->kind == LH_OP_SEND) != (b->kind == LH_OP_SEND), "sync %s",
		          lh_graph_sync_name(g, s));
		cr_assert_neq(a->device, b->device);
		(*n_pairs)++;
	}
}

/* Runs every device's program in order, each op at once but a send or recv, which waits until
 * its partner is the next op of the partner's device (a blocking rendezvous). TRUE when every
 * op runs: the program orders cannot deadlock whatever the ops' durations. */
static gboolean blocking_run_completes(const LhGraph *g)
{
	guint32 nd = lh_graph_devices(g), n = lh_graph_n_ops(g);
	g_autofree guint32 *at = g_new0(guint32, nd); /* next op index to look at */
	g_autofree guint8 *done = g_new0(guint8, n);
	guint32 left = n;
	for (;;) {
		gboolean moved = FALSE;
		for (guint32 d = 0; d < nd; d++) {
			while (at[d] < n && (lh_graph_op(g, at[d])->device != d || done[at[d]]))
				at[d]++;
			if (at[d] == n)
				continue;
			const LhOp *op = lh_graph_op(g, at[d]);
			if (!op->sync) {
				done[at[d]] = 1;
				left--;
				moved = TRUE;
				continue;
			}
			guint32 np;
			const guint32 *parts = lh_graph_sync_ops(g, op->sync - 1, &np);
			gboolean all_at_head = TRUE;
			for (guint32 k = 0; k < np; k++) {
				guint32 pd = lh_graph_op(g, parts[k])->device;
				guint32 h = at[pd];
				while (h < n && (lh_graph_op(g, h)->device != pd || done[h]))
					h++;
				all_at_head = all_at_head && h == parts[k];
			}
			if (all_at_head) {
				for (guint32 k = 0; k < np; k++) {
					done[parts[k]] = 1;
					left--;
				}
				moved = TRUE;
			}
		}
		if (!moved)
			return left == 0;
	}
}

/* ---- workloads ---- */

Test(mdev_gen, gpipe_structure_and_order)
{
	const char *const kv[] = {"schedule=gpipe", "stages=4", "microbatches=8", NULL};
	g_autoptr(LhGraph) g = gen("pipeline", kv);
	cr_assert(lh_graph_placed(g));
	cr_assert_eq(lh_graph_devices(g), 4);
	/* Device 0: weights + 8 x (input, fwd, fwd send, bwd recv, bwd) = 41; devices 1, 2:
	 * weights + 8 x (fwd recv, fwd, fwd send, bwd recv, bwd, bwd send) = 49; device 3:
	 * weights + 8 x (fwd recv, fwd, loss, bwd, bwd send) = 41. 41 + 49 + 49 + 41 = 180. */
	cr_assert_eq(count_on(g, 0, -1), 41);
	cr_assert_eq(count_on(g, 1, -1), 49);
	cr_assert_eq(count_on(g, 2, -1), 49);
	cr_assert_eq(count_on(g, 3, -1), 41);
	cr_assert_eq(lh_graph_n_ops(g), 180);
	cr_assert_eq(count_on(g, 0, LH_OP_SEND), 8);
	cr_assert_eq(count_on(g, 1, LH_OP_SEND), 16);
	cr_assert_eq(count_on(g, 3, LH_OP_RECV), 8);
	/* 3 links x 8 micro-batches x 2 directions = 48 pairs. */
	guint pairs;
	assert_pairs(g, &pairs);
	cr_assert_eq(pairs, 48);
	/* The activation of mb 5 goes from device 1 to device 2, its gradient back. */
	const LhOp *s = t_op_named(g, "d1.mb5.fwd.send"), *r = t_op_named(g, "d2.mb5.fwd.recv");
	cr_assert_eq(s->sync, r->sync);
	cr_assert_eq(s->device, 1);
	cr_assert_eq(r->device, 2);
	cr_assert_eq(t_op_named(g, "d2.mb5.bwd.send")->sync,
	             t_op_named(g, "d1.mb5.bwd.recv")->sync);
	cr_assert(t_has_dep(g, "d2.mb5.fwd", "d2.mb5.fwd.recv"));
	/* GPipe: every forward, then every backward, the last micro-batch's first. */
	const char *const d2[] = {"d2.mb0.fwd", "d2.mb1.fwd", "d2.mb2.fwd", "d2.mb3.fwd",
	                          "d2.mb4.fwd", "d2.mb5.fwd", "d2.mb6.fwd", "d2.mb7.fwd",
	                          "d2.mb7.bwd", "d2.mb6.bwd", "d2.mb5.bwd", "d2.mb4.bwd",
	                          "d2.mb3.bwd", "d2.mb2.bwd", "d2.mb1.bwd", "d2.mb0.bwd"};
	assert_kernels(g, 2, d2, G_N_ELEMENTS(d2));
	cr_assert(blocking_run_completes(g));
}

Test(mdev_gen, one_f_one_b_order)
{
	const char *const kv[] = {"schedule=1f1b", NULL}; /* 4 stages, 8 micro-batches */
	g_autoptr(LhGraph) g = gen("pipeline", kv);
	/* Device 1 of 4: 4 - 1 - 1 = 2 warm-up forwards, then forward/backward pairs, then the
	 * remaining backwards (the one-stage graph's order, tests/test-gen.c). */
	const char *const d1[] = {"d1.mb0.fwd", "d1.mb1.fwd", "d1.mb2.fwd", "d1.mb0.bwd",
	                          "d1.mb3.fwd", "d1.mb1.bwd", "d1.mb4.fwd", "d1.mb2.bwd",
	                          "d1.mb5.fwd", "d1.mb3.bwd", "d1.mb6.fwd", "d1.mb4.bwd",
	                          "d1.mb7.fwd", "d1.mb5.bwd", "d1.mb6.bwd", "d1.mb7.bwd"};
	assert_kernels(g, 1, d1, G_N_ELEMENTS(d1));
	/* Device 3 (last): no warm-up, strictly alternating. */
	const char *const d3[] = {"d3.mb0.fwd", "d3.mb0.bwd", "d3.mb1.fwd", "d3.mb1.bwd",
	                          "d3.mb2.fwd", "d3.mb2.bwd", "d3.mb3.fwd", "d3.mb3.bwd",
	                          "d3.mb4.fwd", "d3.mb4.bwd", "d3.mb5.fwd", "d3.mb5.bwd",
	                          "d3.mb6.fwd", "d3.mb6.bwd", "d3.mb7.fwd", "d3.mb7.bwd"};
	assert_kernels(g, 3, d3, G_N_ELEMENTS(d3));
	cr_assert_eq(lh_graph_n_ops(g), 180); /* the same ops as GPipe, in another order */
	cr_assert(blocking_run_completes(g));
}

Test(mdev_gen, interleaved_order)
{
	const char *const kv[] = {"schedule=interleaved", "chunks=2", NULL};
	g_autoptr(LhGraph) g = gen("pipeline", kv);
	/* 4 devices x 2 chunks = 8 virtual stages. Ops: 8 weights; vs 0: 8 x (input, fwd, fwd
	 * send, bwd recv, bwd) = 40; vs 1..6: 8 x 6 = 48 each; vs 7: 8 x (fwd recv, fwd, loss,
	 * bwd, bwd send) = 40. 8 + 40 + 6 * 48 + 40 = 376. */
	cr_assert_eq(lh_graph_n_ops(g), 376);
	/* Chunk 1 of device 0 is virtual stage 4: it receives from device 3's chunk 0. */
	cr_assert_eq(t_op_named(g, "d3.c0.mb2.fwd.send")->sync,
	             t_op_named(g, "d0.c1.mb2.fwd.recv")->sync);
	/* Device 0 (p = 4, v = 2, m = 8, 16 steps each way): warm-up (4 - 0 - 1) * 2 + (2 - 1)
	 * * 4 = 10 forwards. Forward k runs chunk (k mod 8) / 4 on micro-batch (k / 8) * 4 +
	 * k mod 4; backward k the chunk 1 - (k mod 8) / 4. Forwards: c0 m0-3, c1 m0-3, c0 m4-7,
	 * c1 m4-7; backwards: c1 m0-3, c0 m0-3, c1 m4-7, c0 m4-7. So: F0..F9, then F10 B0 ...
	 * F15 B5, then B6..B15. */
	const char *const d0[] = {
	    "d0.c0.mb0.fwd", "d0.c0.mb1.fwd", "d0.c0.mb2.fwd", "d0.c0.mb3.fwd", "d0.c1.mb0.fwd",
	    "d0.c1.mb1.fwd", "d0.c1.mb2.fwd", "d0.c1.mb3.fwd", "d0.c0.mb4.fwd", "d0.c0.mb5.fwd",
	    "d0.c0.mb6.fwd", "d0.c1.mb0.bwd", "d0.c0.mb7.fwd", "d0.c1.mb1.bwd", "d0.c1.mb4.fwd",
	    "d0.c1.mb2.bwd", "d0.c1.mb5.fwd", "d0.c1.mb3.bwd", "d0.c1.mb6.fwd", "d0.c0.mb0.bwd",
	    "d0.c1.mb7.fwd", "d0.c0.mb1.bwd", "d0.c0.mb2.bwd", "d0.c0.mb3.bwd", "d0.c1.mb4.bwd",
	    "d0.c1.mb5.bwd", "d0.c1.mb6.bwd", "d0.c1.mb7.bwd", "d0.c0.mb4.bwd", "d0.c0.mb5.bwd",
	    "d0.c0.mb6.bwd", "d0.c0.mb7.bwd"};
	assert_kernels(g, 0, d0, G_N_ELEMENTS(d0));
	guint pairs;
	assert_pairs(g, &pairs);
	cr_assert_eq(pairs, 7 * 8 * 2); /* 7 hops between virtual stages, 8 mbs, 2 ways */
	cr_assert(blocking_run_completes(g));
}

Test(mdev_gen, one_device_pipeline_has_no_transfers)
{
	const char *const kv[] = {"schedule=interleaved", "stages=1", "microbatches=3", "chunks=2",
	                          NULL};
	g_autoptr(LhGraph) g = gen("pipeline", kv);
	/* One device: chunk 1 follows chunk 0 by a dep. 2 weights + 3 x (input, c0 fwd, c1 fwd,
	 * loss, c1 bwd, c0 bwd) = 20, no send or recv. */
	cr_assert_eq(lh_graph_n_ops(g), 20);
	cr_assert_eq(count_on(g, 0, LH_OP_SEND) + count_on(g, 0, LH_OP_RECV), 0);
	cr_assert(t_has_dep(g, "d0.c1.mb2.fwd", "d0.c0.mb2.fwd"));
	cr_assert(t_has_dep(g, "d0.c0.mb2.bwd", "d0.c1.mb2.bwd"));
}

Test(mdev_gen, pipeline_options_are_checked)
{
	struct {
		const char *kv[4];
		const char *msg;
	} bad[] = {
	    {{"schedule=1f1b", "stage=2", NULL}, "stage picks one stage"},
	    {{"chunks=2", NULL}, "chunks goes with schedule=interleaved"},
	    {{"schedule=gpipe", "chunks=2", NULL}, "not schedule=gpipe"},
	    {{"schedule=zigzag", NULL}, "one of gpipe,1f1b,interleaved, got 'zigzag'"},
	    {{"schedule=interleaved", "microbatches=6", NULL}, "multiple of stages=4"},
	    {{"schedule=interleaved", "chunks=3", NULL}, "layers=2 must be a multiple of chunks=3"},
	    /* 256 x 4096 = 1048576 stage-microbatches: above the 10^6 cap. */
	    {{"schedule=gpipe", "stages=256", "microbatches=4096"}, "= 1048576 is above 1000000"},
	};
	for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
		GError *e = NULL;
		cr_assert_null(lh_gen_workload("pipeline", bad[i].kv, &e), "case %zu", i);
		cr_assert(strstr(e->message, bad[i].msg), "case %zu: %s", i, e->message);
		g_error_free(e);
	}
}

Test(mdev_gen, spmd_transformer)
{
	const char *const kv[] = {"layers=3", "hidden=1024", "fsdp=4", "devices=8", NULL};
	g_autoptr(LhGraph) g = gen("transformer", kv);
	cr_assert(lh_graph_placed(g));
	/* 38 ops a device (tests/test-gen.c), 8 devices: 304. */
	cr_assert_eq(lh_graph_n_ops(g), 304);
	for (guint32 d = 0; d < 8; d++)
		cr_assert_eq(count_on(g, d, -1), 38);
	/* 9 collectives a device (6 all-gathers, 3 reduce-scatters) in 2 groups of 4: 18
	 * rendezvous of 4 parts each. */
	cr_assert_eq(lh_graph_n_syncs(g), 18);
	const LhOp *ag = t_op_named(g, "d5.l1.fwd.ag");
	cr_assert_str_eq(lh_graph_sync_name(g, ag->sync - 1), "l1.fwd.ag.g1");
	guint32 n;
	const guint32 *parts = lh_graph_sync_ops(g, ag->sync - 1, &n);
	cr_assert_eq(n, 4);
	for (guint32 k = 0; k < n; k++)
		cr_assert_eq(lh_graph_op(g, parts[k])->device, 4 + k);
	cr_assert(t_has_dep(g, "d5.l1.fwd.qkv", "d5.l1.fwd.ag"));
	GError *e = NULL;
	const char *const six[] = {"devices=6", NULL}; /* fsdp 8 does not divide 6 */
	cr_assert_null(lh_gen_workload("transformer", six, &e));
	cr_assert(strstr(e->message, "devices=6 is not a multiple"), "%s", e->message);
	g_clear_error(&e);
	const char *const moe[] = {"layers=1", "devices=16", NULL};
	g_autoptr(LhGraph) m = gen("moe-offload", moe);
	/* One layer of moe-offload: 1 + 2 + 16 + 1 + 16 = 36 ops a device (tests/test-gen.c's
	 * count per layer), 16 devices: 576; 5 all-to-alls, 2 all-gathers and 1 reduce-scatter
	 * a layer over groups of 8: 8 collectives x 2 groups = 16 rendezvous. */
	cr_assert_eq(lh_graph_n_ops(m), 576);
	cr_assert_eq(lh_graph_n_syncs(m), 16);
}

/* ---- scheduling device by device ---- */

Test(mdev_sched, device_program_and_merged_plan)
{
	const char *const kv[] = {
	    "schedule=1f1b", "stages=2", "microbatches=2", "layers=1", "hidden=64", "seq=16", NULL};
	g_autoptr(LhGraph) g = gen("pipeline", kv);
	g_autofree guint32 *map = NULL;
	g_autoptr(LhGraph) p1 = lh_graph_device_program(g, 1, &map);
	cr_assert_not(lh_graph_placed(p1));
	/* Device 1 (last of 2): weights + 2 x (fwd recv, fwd, loss, bwd, bwd send) = 11. */
	cr_assert_eq(lh_graph_n_ops(p1), 11);
	for (guint32 i = 0; i < lh_graph_n_ops(p1); i++) {
		cr_assert_str_eq(lh_graph_op(p1, i)->name, lh_graph_op(g, map[i])->name);
		cr_assert_eq(lh_graph_op(p1, i)->device, 0);
		cr_assert_eq(lh_graph_op(p1, i)->sync, 0);
	}
	/* Each send or recv follows the device's previous one. Device 1's order: recv mb0,
	 * send bwd mb0, recv mb1, send bwd mb1. */
	cr_assert(t_has_dep(p1, "d1.mb0.bwd.send", "d1.mb0.fwd.recv"));
	cr_assert(t_has_dep(p1, "d1.mb1.fwd.recv", "d1.mb0.bwd.send"));
	cr_assert(t_has_dep(p1, "d1.mb1.bwd.send", "d1.mb1.fwd.recv"));
	cr_assert_not(t_has_dep(g, "d1.mb1.fwd.recv", "d1.mb0.bwd.send")); /* not in the graph */

	lh_models_init();
	GError *e = NULL;
	g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", &e);
	cr_assert(hw);
	g_autoptr(LhPlan) p = lh_scheduler_run(lh_scheduler_find("serial"), g, hw, NULL, NULL, &e);
	cr_assert(p, "%s", e ? e->message : "");
	cr_assert_eq(lh_plan_n_streams(p), 2);
	cr_assert_str_eq(lh_plan_stream(p, 0)->name, "d0.main");
	cr_assert_str_eq(lh_plan_stream(p, 1)->name, "d1.main");
	cr_assert_eq(lh_plan_stream(p, 1)->device, 1);
	cr_assert_str_eq(lh_plan_scheduler(p), "serial");
	/* Every non-input op runs once: 22 ops, 4 of them inputs (2 weights, 2 batches). */
	cr_assert_eq(lh_plan_n_cmds(p), 18);
	for (guint32 c = 0; c < lh_plan_n_cmds(p); c++) {
		const LhCmd *cmd = lh_plan_cmd(p, c);
		cr_assert_eq(lh_graph_op(g, (guint32)cmd->arg)->device,
		             lh_plan_stream(p, cmd->stream)->device);
	}
	cr_assert(lh_plan_validate(p, g, NULL, &e), "%s", e ? e->message : "");
}

Test(mdev_sched, per_device_hardware)
{
	const char *const kv[] = {
	    "schedule=gpipe", "stages=2", "microbatches=2", "layers=1", "hidden=256",
	    "seq=64",         NULL};
	g_autoptr(LhGraph) g = gen("pipeline", kv);
	g_autoptr(LhHw) a = t_hw(LH_SHARING_FIFO), b = t_hw(LH_SHARING_FIFO);
	b->peak_tflops = 2; /* device 1 twice as fast */
	const LhHw *dh[] = {a, b};
	GError *e = NULL;
	g_autoptr(LhPlan) p =
	    lh_scheduler_run_placed(lh_scheduler_find("serial"), g, a, dh, NULL, NULL, &e);
	cr_assert(p, "%s", e ? e->message : "");
	cr_assert(lh_plan_validate(p, g, NULL, &e), "%s", e ? e->message : "");
	/* A bad parameter is everyone's: no device prefix. */
	const char *const bad[] = {"async-compute-limit=0", NULL};
	cr_assert_null(lh_scheduler_run_placed(lh_scheduler_find("lhs"), g, a, dh, bad, NULL, &e));
	cr_assert(!g_str_has_prefix(e->message, "device"), "%s", e->message);
	g_clear_error(&e);
}

/* Every built-in's merged plan on every pipeline schedule runs without a cross-device
 * deadlock (the validator, then the engine). */
Test(mdev_sched, builtins_do_not_deadlock_on_pipelines, .timeout = 300)
{
	lh_models_init();
	GError *e = NULL;
	g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", &e);
	const char *scheds[] = {"serial", "lhs", "heft", "cpath", "iree", "iree-cost", "search"};
	const char *kinds[] = {"schedule=gpipe", "schedule=1f1b", "schedule=interleaved"};
	for (gsize k = 0; k < G_N_ELEMENTS(kinds); k++) {
		const char *const kv[] = {kinds[k], "hidden=1024", "seq=1024", NULL};
		g_autoptr(LhGraph) g = gen("pipeline", kv);
		for (gsize i = 0; i < G_N_ELEMENTS(scheds); i++) {
			const char *sp[] = {"evals=50", NULL};
			g_autoptr(LhPlan) p =
			    lh_scheduler_run(lh_scheduler_find(scheds[i]), g, hw,
			                     strcmp(scheds[i], "search") ? NULL : sp, NULL, &e);
			cr_assert(p, "%s %s: %s", kinds[k], scheds[i], e ? e->message : "");
			cr_assert(lh_plan_validate(p, g, NULL, &e), "%s %s: %s", kinds[k],
			          scheds[i], e ? e->message : "");
			LhSimOptions o = {0};
			g_autoptr(LhTrace) t = lh_simulate(g, hw, p, &o, NULL, &e);
			cr_assert(t, "%s %s: %s", kinds[k], scheds[i], e ? e->message : "");
		}
	}
}

/* ---- the bubble ---- */

/* GPipe and 1F1B with equal stages: each device computes m microbatches of tf + tb and idles
 * (p - 1) of them (the fill and the drain), so the bubble is (p - 1) / (m + p - 1) of the
 * step: p = 4, m = 8 gives 3 / 11 = 0.2727. The simulation adds the transfers and the last
 * stage's loss kernel, so each device's idle time must be within one microbatch's compute
 * time (its busy time / m) of 3/11 of the makespan. */
static void check_bubble(const char *schedule, const char *sched)
{
	lh_models_init();
	GError *e = NULL;
	g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", &e);
	const char *const kv[] = {schedule, "stages=4", "microbatches=8", NULL};
	g_autoptr(LhGraph) g = gen("pipeline", kv);
	g_autoptr(LhPlan) p = lh_scheduler_run(lh_scheduler_find(sched), g, hw, NULL, NULL, &e);
	cr_assert(p, "%s", e ? e->message : "");
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	LhMetrics m;
	lh_metrics_compute(t, g, hw, p, &m);
	cr_assert(m.placed);
	cr_assert_eq(m.n_devices, 4);
	double expect = 3.0 / 11.0;
	double busy_sum = 0;
	for (guint32 d = 0; d < 4; d++) {
		const LhDeviceMetrics *D = &m.dev[d];
		double idle = (double)(m.makespan - D->compute_busy);
		double t_mb = (double)D->compute_busy / 8;
		cr_assert_leq(fabs(idle - expect * (double)m.makespan), t_mb,
		              "%s/%s device %u: idle %.0f ns, (p-1)/(m+p-1) of the step %.0f ns, "
		              "one microbatch %.0f ns",
		              schedule, sched, d, idle, expect * (double)m.makespan, t_mb);
		cr_assert_float_eq(D->bubble, idle / (double)m.makespan, 1e-12);
		busy_sum += (double)D->compute_busy;
	}
	cr_assert_float_eq(m.bubble, 1 - busy_sum / (4.0 * (double)m.makespan), 1e-12);
	lh_metrics_clear(&m);
}

Test(mdev_bubble, gpipe_p4_m8)
{
	check_bubble("schedule=gpipe", "serial");
}

Test(mdev_bubble, one_f_one_b_p4_m8)
{
	check_bubble("schedule=1f1b", "serial");
	check_bubble("schedule=1f1b", "iree");
}

/* ---- per-device metrics on a hand-made trace ---- */

typedef struct {
	LhGraph *g;
	LhPlan *p;
	LhTrace *t;
} Hand;

/* Two devices. Device 0: kernel a [0, 100), kernel b [150, 300), copy c (H2D) [50, 200);
 * device 1: kernel x [0, 50), kernel y [60, 120). Streams: d0.main, d0.h2d, d1.main. */
static Hand hand_made(void)
{
	Hand h;
	h.g = lh_graph_new("hand");
	lh_graph_set_placed(h.g, TRUE);
	lh_graph_set_devices(h.g, 2);
	guint32 a = t_kernel(h.g, "a", 100, 1), b = t_kernel(h.g, "b", 150, 1);
	guint32 c = t_op(h.g, "c", LH_OP_COPY_H2D, 1000);
	guint32 x = t_kernel(h.g, "x", 50, 1), y = t_kernel(h.g, "y", 60, 1);
	lh_graph_op_mut(h.g, x)->device = 1;
	lh_graph_op_mut(h.g, y)->device = 1;
	t_dep(h.g, b, a);
	t_finish(h.g);
	h.p = lh_plan_new();
	guint32 m0 = lh_plan_add_stream_on(h.p, "d0.main", LH_ROLE_COMPUTE, 0);
	guint32 c0 = lh_plan_add_stream_on(h.p, "d0.h2d", LH_ROLE_H2D, 0);
	guint32 m1 = lh_plan_add_stream_on(h.p, "d1.main", LH_ROLE_COMPUTE, 1);
	lh_plan_run(h.p, m0, a);
	lh_plan_run(h.p, m0, b);
	lh_plan_run(h.p, c0, c);
	lh_plan_run(h.p, m1, x);
	lh_plan_run(h.p, m1, y);
	h.t = lh_trace_new(5, 5);
	lh_trace_set_devices(h.t, 2);
	struct {
		gint64 s, e;
		gint32 stream;
		LhEngine eng;
	} tm[] = {{0, 100, 0, LH_ENGINE_SM},
	          {150, 300, 0, LH_ENGINE_SM},
	          {50, 200, 1, LH_ENGINE_H2D},
	          {0, 50, 2, LH_ENGINE_SM},
	          {60, 120, 2, LH_ENGINE_SM}};
	for (guint32 i = 0; i < 5; i++)
		h.t->ops[i] =
		    (LhOpTiming){0, tm[i].s, tm[i].e, tm[i].stream, (guint8)tm[i].eng, 0, {0}};
	h.t->dev_peak[0] = 4096;
	h.t->dev_peak_t[0] = 150;
	h.t->dev_peak[1] = 1024;
	h.t->dev_peak_t[1] = 60;
	h.t->dev_host_end[0] = 30;
	h.t->dev_host_end[1] = 20;
	h.t->peak_device = 4096;
	h.t->host_end = 30;
	return h;
}

static void hand_free(Hand *h)
{
	lh_graph_free(h->g);
	lh_plan_free(h->p);
	lh_trace_free(h->t);
}

Test(mdev_metrics, per_device_on_a_hand_made_trace)
{
	Hand h = hand_made();
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	LhMetrics m;
	lh_metrics_compute(h.t, h.g, hw, h.p, &m);
	cr_assert(m.placed);
	cr_assert_eq(m.n_devices, 2);
	cr_assert_eq(m.makespan, 300);
	/* Device 0: kernels [0, 100) and [150, 300): 250 ns busy, bubble 1 - 250/300 = 1/6;
	 * the copy [50, 200) is 150 ns of transfer, exposed over [100, 150): 50 ns. */
	cr_assert_eq(m.dev[0].end, 300);
	cr_assert_eq(m.dev[0].compute_busy, 250);
	cr_assert_float_eq(m.dev[0].bubble, 1.0 / 6.0, 1e-12);
	cr_assert_eq(m.dev[0].transfer_time, 150);
	cr_assert_eq(m.dev[0].exposed_transfer, 50);
	cr_assert_eq(m.dev[0].peak_device, 4096);
	cr_assert_eq(m.dev[0].peak_device_t, 150);
	cr_assert_eq(m.dev[0].host_end, 30);
	/* Device 1: [0, 50) and [60, 120): 110 ns busy, ends at 120, bubble 1 - 110/300 =
	 * 19/30; no transfer. */
	cr_assert_eq(m.dev[1].end, 120);
	cr_assert_eq(m.dev[1].compute_busy, 110);
	cr_assert_float_eq(m.dev[1].bubble, 19.0 / 30.0, 1e-12);
	cr_assert_eq(m.dev[1].transfer_time, 0);
	cr_assert_eq(m.dev[1].peak_device, 1024);
	/* The step: 1 - (250 + 110) / (2 * 300) = 0.4. The whole-step kernel time is the
	 * union over devices: [0, 120) and [150, 300) = 270 ns. */
	cr_assert_float_eq(m.bubble, 0.4, 1e-12);
	cr_assert_eq(m.kernel_time, 270);
	/* Bounds per device, the largest: SM work of device 0 is 100 + 150 = 250 ns (sm 1),
	 * device 1's 110 ns (t_hw has no step overhead). */
	cr_assert_float_eq(m.bounds.sm_work, 250, 1e-9);
	g_autofree char *j = lh_metrics_to_json(&m, h.p, h.g, hw);
	cr_assert(strstr(j, "\"bubble\": 0.400000"), "%s", j);
	cr_assert(strstr(j, "{\"device\": 1, \"end_ns\": 120, \"compute_busy_ns\": 110, "
	                    "\"bubble\": 0.633333"),
	          "%s", j);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	lh_metrics_print_table(f, &m, h.p, hw);
	fclose(f);
	cr_assert(strstr(buf, "per device:"), "%s", buf);
	cr_assert(strstr(buf, "40.0 %"), "%s", buf);
	free(buf);
	lh_metrics_clear(&m);
	hand_free(&h);
}

Test(mdev_metrics, graph_without_placement_keeps_its_json)
{
	g_autoptr(LhGraph) g = lh_graph_new("one");
	t_kernel(g, "k", 100, 1);
	t_finish(g);
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhPlan) p = lh_plan_new();
	lh_plan_run(p, lh_plan_add_stream(p, "main", LH_ROLE_COMPUTE), 0);
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	LhMetrics m;
	lh_metrics_compute(t, g, hw, p, &m);
	cr_assert_not(m.placed);
	cr_assert_eq(m.n_devices, 1);
	g_autofree char *j = lh_metrics_to_json(&m, p, g, hw);
	cr_assert_null(strstr(j, "\"devices\""), "%s", j);
	cr_assert_null(strstr(j, "\"bubble\""), "%s", j);
	lh_metrics_clear(&m);
}

/* ---- pictures and traces ---- */

Test(mdev_viz, lanes_per_device)
{
	Hand h = hand_made();
	g_autoptr(LhLaneMap) l = lh_lanes_new(h.p, h.t);
	/* Device 0: heading, d0.main, d0.h2d, its H2D engine (4 lanes); device 1: heading,
	 * d1.main (2 lanes). */
	cr_assert_eq(l->n_devices, 2);
	cr_assert_eq(l->n_lanes, 6);
	cr_assert_eq(l->dev_first[0], 0);
	cr_assert_eq(l->dev_first[1], 4);
	cr_assert_eq(l->dev_first[2], 6);
	cr_assert_eq(l->dev_streams[0], 2);
	cr_assert_eq(l->dev_streams[1], 1);
	cr_assert_eq(l->n_stream_lanes, 0);
	cr_assert_eq(l->lanes[0].kind, LH_LANE_DEVICE);
	cr_assert_str_eq(l->lanes[0].label, "device 0");
	cr_assert_str_eq(l->lanes[1].label, "d0.main (compute)");
	cr_assert_str_eq(l->lanes[3].label, "d0 copy H2D");
	cr_assert_str_eq(l->lanes[4].label, "device 1");
	cr_assert_eq(l->lanes[5].device, 1);
	cr_assert_eq(l->stream_lane[4], 5); /* y on d1.main */
	cr_assert_eq(l->stream_lane[2], 2); /* c on d0.h2d */
	cr_assert_eq(l->engine_lane[2], 3); /* and on the H2D engine */
	hand_free(&h);
}

Test(mdev_viz, timeline_and_chrome_trace_of_a_placed_graph)
{
	lh_models_init();
	GError *e = NULL;
	g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", &e);
	const char *const kv[] = {"schedule=1f1b", "stages=3", "microbatches=3",
	                          "hidden=512",    "seq=256",  NULL};
	g_autoptr(LhGraph) g = gen("pipeline", kv);
	g_autoptr(LhPlan) p = lh_scheduler_run(lh_scheduler_find("lhs"), g, hw, NULL, NULL, &e);
	cr_assert(p, "%s", e ? e->message : "");
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	LhMetrics m;
	lh_metrics_compute(t, g, hw, p, &m);
	g_autofree char *dir = t_tmpdir();
	g_autofree char *png = g_build_filename(dir, "t.png", NULL);
	cr_assert(lh_viz_timeline(png, g, hw, p, t, &m, &e), "%s", e ? e->message : "");
	cr_assert(g_file_test(png, G_FILE_TEST_IS_REGULAR));
	g_autoptr(LhLaneMap) l = lh_lanes_new(p, t);
	cr_assert_eq(l->n_devices, 3);
	/* Chrome: one process per device, each named, and every op on its device's. */
	g_autofree char *j = lh_trace_to_chrome_json(t, g, p);
	for (int d = 0; d < 3; d++) {
		g_autofree char *want =
		    g_strdup_printf("\"pid\":%d,\"args\":{\"name\":\"device %d\"}", d + 1, d);
		cr_assert(strstr(j, want), "%s", want);
	}
	cr_assert(strstr(j, "{\"ph\":\"X\",\"name\":\"d2.mb1.fwd\",\"cat\":\"kernel\",\"pid\":3,"));
	cr_assert_null(strstr(j, "\"pid\":4"));
	lh_metrics_clear(&m);
}

/* ---- the command line ---- */

Test(mdev_cli, hw_map_and_slow)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *gp = g_build_filename(dir, "p.json", NULL);
	cr_assert_eq(t_lhsim(NULL, NULL, "gen", "pipeline", "schedule=1f1b", "hidden=512",
	                     "seq=256", "-o", gp, NULL),
	             0);
	struct {
		const char *opt, *val, *msg;
	} bad[] = {
	    {"--hw", "0-1=h100-sxm,3=a100-sxm", "device 2 has no hardware"},
	    {"--hw", "0-2=h100-sxm,2-3=a100-sxm",
	     "device 2 is given twice ('0-2=h100-sxm' and "
	     "'2-3=a100-sxm')"},
	    {"--hw", "0-4=h100-sxm", "names device 4, but the graph has 4 devices, 0-3"},
	    {"--hw", "3-1=h100-sxm", "the range ends before it starts"},
	    {"--hw", "0-3=h100-sxm,x=a100-sxm", "'x=a100-sxm' is not DEVICE=HW"},
	    {"--hw", "0-3=nope", "nope: no such hardware"},
	    {"--slow", "3=0.9", "factor 0.9 is below 1"},
	    {"--slow", "4=1.2", "device 4, but the graph has 4 devices, 0-3"},
	    {"--slow", "1=1.2,1=1.5", "device 1 is given twice"},
	    {"--slow", "2=fast", "'2=fast' is not DEVICE=FACTOR"},
	    {"--slow", "", "--slow '': give DEVICE=FACTOR"},
	    {"--slow", "1=1.2,", "'' is not DEVICE=FACTOR"},
	};
	for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
		char *err = NULL;
		int st = t_lhsim(NULL, &err, "run", gp, bad[i].opt, bad[i].val, NULL);
		cr_assert_eq(st, 2, "%s %s: %d: %s", bad[i].opt, bad[i].val, st, err);
		cr_assert(strstr(err, bad[i].msg), "%s %s: %s", bad[i].opt, bad[i].val, err);
		g_free(err);
	}
	/* A map on a graph without placement: device 0 only. */
	char *err = NULL;
	cr_assert_eq(t_lhsim(NULL, &err, "run", "--hw", "0-1=h100-sxm", NULL), 2);
	cr_assert(strstr(err, "the graph is not placed on devices"), "%s", err);
	g_free(err);
	/* Good ones: a mixed map, a straggler; the table names both. */
	char *out = NULL;
	cr_assert_eq(t_lhsim(&out, &err, "run", gp, "--hw", "0-1=h100-sxm,2-3=a100-sxm", "--slow",
	                     "3=1.5", "--slow", "0=1.1", NULL),
	             0, "%s", err);
	cr_assert(strstr(out, "on 0-1=h100-sxm,2-3=a100-sxm"), "%s", out);
	cr_assert(strstr(out, "straggler: device 3's kernels take 1.5 times as long"), "%s", out);
	cr_assert(strstr(out, "per device:"), "%s", out);
	g_free(out);
	g_free(err);
	/* A straggler on the last stage of a pipeline lengthens the step. */
	gint64 mk[2];
	for (int k = 0; k < 2; k++) {
		cr_assert_eq(
		    t_lhsim(&out, NULL, "run", gp, "--json", k ? "--slow" : NULL, "3=1.5", NULL),
		    0);
		const char *s = strstr(out, "\"makespan_ns\": ");
		cr_assert(s);
		mk[k] = g_ascii_strtoll(s + strlen("\"makespan_ns\": "), NULL, 10);
		cr_assert(strstr(out, "\"devices\": ["), "%s", out);
		g_free(out);
	}
	cr_assert_gt(mk[1], mk[0]);
	/* compare takes them too. */
	cr_assert_eq(t_lhsim(NULL, &err, "compare", gp, "--sched", "serial,lhs", "--hw",
	                     "0-3=h100-sxm", "--slow", "1=1.2", NULL),
	             0, "%s", err);
	g_free(err);
	cr_assert_eq(
	    t_lhsim(NULL, &err, "compare", gp, "--sched", "serial", "--hw", "0=h100-sxm", NULL), 2);
	cr_assert(strstr(err, "device 1 has no hardware"), "%s", err);
	g_free(err);
}

/* An SPMD group on two kinds of GPU: a cost-based scheduler orders some collectives
 * differently on an A100 than on an H100, which deadlocked the group until the devices after
 * the first are rescheduled with their collectives chained in the order the first ones run
 * them (docs/schedulers.md, "Placed graphs"). Every built-in's plan now runs. */
Test(mdev_sched, mixed_hardware_spmd_does_not_deadlock, .timeout = 300)
{
	lh_models_init();
	GError *e = NULL;
	g_autoptr(LhHw) h100 = lh_hw_lookup("h100-sxm", &e);
	g_autoptr(LhHw) a100 = lh_hw_lookup("a100-sxm", &e);
	const LhHw *dh[8] = {h100, h100, h100, h100, a100, a100, a100, a100};
	const char *const kv[] = {"layers=2", "devices=8", NULL};
	g_autoptr(LhGraph) g = gen("moe-offload", kv);
	const char *scheds[] = {"serial", "lhs", "heft", "cpath", "iree", "iree-cost"};
	for (gsize i = 0; i < G_N_ELEMENTS(scheds); i++) {
		g_autoptr(LhPlan) p = lh_scheduler_run_placed(lh_scheduler_find(scheds[i]), g, h100,
		                                              dh, NULL, NULL, &e);
		cr_assert(p, "%s: %s", scheds[i], e ? e->message : "");
		cr_assert(lh_plan_validate(p, g, NULL, &e), "%s: %s", scheds[i],
		          e ? e->message : "");
		LhSimOptions o = {.device_hw = dh};
		g_autoptr(LhTrace) t = lh_simulate(g, h100, p, &o, NULL, &e);
		cr_assert(t, "%s: %s", scheds[i], e ? e->message : "");
	}
}
