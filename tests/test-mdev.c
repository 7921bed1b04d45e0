/* lhsim tests — several devices in one simulation (issue 10): rendezvous, stragglers, hardware
 * per device, memory and hosts per device, cross-device deadlocks, and the bad inputs of the
 * graph JSON, the plan text and validation.
 *
 * Every expected time is worked out by hand in the comment above its assertion. The hardware
 * is t_hw() (tests/helpers.c): no launch, event, overhead or latency cost unless a test sets
 * one; link 100 B/ns; collectives take 0.1 of the SMs; 1000 FLOP/ns. An all-reduce of n parts
 * moves 2 (n - 1) / n of its size over the link (docs/engine.md, "Durations and phases"), a
 * send or recv its size.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "helpers.h"
#include "models/graph-json-private.h"

/* An op on device @dev; @sync names its rendezvous (or NULL). */
static guint32 on(LhGraph *g, guint32 op, guint32 dev, const char *sync)
{
	LhOp *o = lh_graph_op_mut(g, op);
	o->device = dev;
	if (sync)
		o->sync = 1 + lh_graph_sync_add(g, sync);
	return op;
}

static guint32 coll(LhGraph *g, const char *name, LhOpKind kind, guint64 size, guint32 group,
                    guint32 dev, const char *sync)
{
	guint32 i = t_op(g, name, kind, size);
	lh_graph_op_mut(g, i)->group = group;
	return on(g, i, dev, sync);
}

static LhGraph *placed(guint32 devices)
{
	LhGraph *g = lh_graph_new("g");
	lh_graph_set_devices(g, devices);
	lh_graph_set_placed(g, TRUE);
	return g;
}

static LhTrace *sim_opts(const LhGraph *g, const LhHw *hw, const LhPlan *p, const LhSimOptions *o)
{
	g_autoptr(GError) e = NULL;
	LhTrace *t = lh_simulate(g, hw, p, o, NULL, &e);
	cr_assert_not_null(t, "%s", e ? e->message : "?");
	return t;
}

/* Three devices, each a kernel then its part of one all-reduce: the parts arrive at 1000, 2000
 * and 3000 ns and the main phase waits for the last. */
Test(mdev, collective_waits_for_its_last_part)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhGraph) g = placed(3);
	const char *kn[] = {"k0", "k1", "k2"}, *an[] = {"ar0", "ar1", "ar2"};
	for (guint32 d = 0; d < 3; d++) {
		guint32 k = on(g, t_kernel(g, kn[d], 1000 * (d + 1), 1.0), d, NULL);
		guint32 a = coll(g, an[d], LH_OP_ALL_REDUCE, 30000, 3, d, "ar");
		t_dep(g, a, k);
	}
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	for (guint32 d = 0; d < 3; d++) {
		char name[8];
		g_snprintf(name, sizeof name, "c%u", d);
		guint32 s = lh_plan_add_stream_on(p, name, LH_ROLE_COMPUTE, d);
		lh_plan_run(p, s, t_id(g, kn[d]));
		lh_plan_run(p, s, t_id(g, an[d]));
	}
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	/* Kernel d runs 0 .. 1000 (d + 1). Each part is resident (starts) when its kernel ends
	 * and waits; the last arrives at 3000. Wire: 2 * (3 - 1) / 3 * 30000 = 40000 B at
	 * 100 B/ns = 400 ns, no latency: every part ends at 3000 + 400 = 3400. */
	T_SPAN(t, g, "k0", 0, 1000);
	T_SPAN(t, g, "k1", 0, 2000);
	T_SPAN(t, g, "k2", 0, 3000);
	T_SPAN(t, g, "ar0", 1000, 3400);
	T_SPAN(t, g, "ar1", 2000, 3400);
	T_SPAN(t, g, "ar2", 3000, 3400);
	cr_expect_eq(t->n_devices, 3);
}

/* A send and its recv move together; while the recv waits it holds its stream and its SM
 * share (0.1), so a full-SM kernel beside it on its device runs at 0.9. */
Test(mdev, send_and_recv_move_together)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhGraph) g = placed(2);
	guint32 a = on(g, t_kernel(g, "a", 500, 1.0), 0, NULL);
	guint32 s = coll(g, "send", LH_OP_SEND, 10000, 2, 0, "p");
	t_dep(g, s, a);
	guint32 r = coll(g, "recv", LH_OP_RECV, 10000, 2, 1, "p");
	guint32 b = on(g, t_kernel(g, "b", 200, 1.0), 1, NULL);
	t_dep(g, b, r);
	on(g, t_kernel(g, "side", 900, 1.0), 1, NULL);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 c0 = lh_plan_add_stream_on(p, "c0", LH_ROLE_COMPUTE, 0);
	guint32 c1 = lh_plan_add_stream_on(p, "c1", LH_ROLE_P2P, 1);
	guint32 x1 = lh_plan_add_stream_on(p, "x1", LH_ROLE_COMPUTE, 1);
	lh_plan_run(p, c0, t_id(g, "a"));
	lh_plan_run(p, c0, t_id(g, "send"));
	lh_plan_run(p, c1, t_id(g, "recv"));
	lh_plan_run(p, c1, t_id(g, "b"));
	lh_plan_run(p, x1, t_id(g, "side"));
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	/* a 0 .. 500; the recv is resident from 0 and waits; the send arrives at 500; wire
	 * 10000 B / 100 B/ns = 100 ns: both end at 600. */
	T_SPAN(t, g, "a", 0, 500);
	T_SPAN(t, g, "send", 500, 600);
	T_SPAN(t, g, "recv", 0, 600);
	/* side (sm 1, 900 ns) started after the recv (fifo): it gets 1 - 0.1 = 0.9 while the
	 * recv is resident (waiting 0 .. 500, moving 500 .. 600): 600 * 0.9 = 540 ns of work;
	 * then it has every SM (b, resident at 600 after the recv, comes after it in fifo
	 * order): 360 ns left, ends at 960. b (sm 1, 200 ns) then runs alone: 960 .. 1160. */
	T_SPAN(t, g, "side", 0, 960);
	T_SPAN(t, g, "b", 600, 1160);
}

/* Data parallel on 4 devices: each a 1000 ns kernel then its part of an all-reduce. Device 3
 * at straggler factor 1.5 stretches the step by (1.5 - 1) * 1000 = 500 ns. */
Test(mdev, straggler_stretches_the_step)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhGraph) g = placed(4);
	const char *kn[] = {"k0", "k1", "k2", "k3"}, *an[] = {"ar0", "ar1", "ar2", "ar3"};
	for (guint32 d = 0; d < 4; d++) {
		guint32 k = on(g, t_kernel(g, kn[d], 1000, 1.0), d, NULL);
		guint32 a = coll(g, an[d], LH_OP_ALL_REDUCE, 40000, 4, d, "grad");
		t_dep(g, a, k);
	}
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	for (guint32 d = 0; d < 4; d++) {
		char name[8];
		g_snprintf(name, sizeof name, "c%u", d);
		guint32 s = lh_plan_add_stream_on(p, name, LH_ROLE_COMPUTE, d);
		lh_plan_run(p, s, t_id(g, kn[d]));
		lh_plan_run(p, s, t_id(g, an[d]));
	}
	/* Wire: 2 * 3 / 4 * 40000 = 60000 B at 100 B/ns = 600 ns. Alike: 1000 + 600 = 1600. */
	g_autoptr(LhTrace) even = t_sim(g, hw, p);
	for (guint32 d = 0; d < 4; d++)
		T_SPAN(even, g, an[d], 1000, 1600);
	/* Device 3's kernel takes 1000 * 1.5 = 1500; the all-reduce waits for it: 1500 + 600 =
	 * 2100, 500 ns longer. The others wait from 1000. */
	const double slow[] = {1, 1, 1, 1.5};
	LhSimOptions o = {.slow = slow};
	g_autoptr(LhTrace) t = sim_opts(g, hw, p, &o);
	T_SPAN(t, g, "k0", 0, 1000);
	T_SPAN(t, g, "k3", 0, 1500);
	T_SPAN(t, g, "ar0", 1000, 2100);
	T_SPAN(t, g, "ar3", 1500, 2100);
}

/* Device 1 computes twice as fast and has half the link bandwidth: its kernel ends first, and
 * the all-reduce's main phase is its longest part's. */
Test(mdev, hardware_per_device)
{
	g_autoptr(LhHw) hw0 = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhHw) hw1 = t_hw(LH_SHARING_FIFO);
	hw1->peak_tflops = 2;
	hw1->link_gbs = 50;
	g_autoptr(LhGraph) g = placed(2);
	const char *kn[] = {"k0", "k1"}, *an[] = {"ar0", "ar1"};
	for (guint32 d = 0; d < 2; d++) {
		guint32 k = on(g, lh_graph_add_op(g, kn[d], LH_OP_KERNEL), d, NULL);
		lh_graph_op_mut(g, k)->flops = 1e6;
		guint32 a = coll(g, an[d], LH_OP_ALL_REDUCE, 10000, 2, d, "ar");
		t_dep(g, a, k);
	}
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	for (guint32 d = 0; d < 2; d++) {
		guint32 s = lh_plan_add_stream_on(p, d ? "c1" : "c0", LH_ROLE_COMPUTE, d);
		lh_plan_run(p, s, t_id(g, kn[d]));
		lh_plan_run(p, s, t_id(g, an[d]));
	}
	const LhHw *hws[] = {hw0, hw1};
	LhSimOptions o = {.device_hw = hws};
	g_autoptr(LhTrace) t = sim_opts(g, hw0, p, &o);
	/* k0: 1e6 FLOP / (1 TFLOP/s = 1000 FLOP/ns) = 1000 ns; k1: 1e6 / 2000 = 500 ns. Wire:
	 * 2 * 1 / 2 * 10000 = 10000 B: 100 ns at 100 B/ns on device 0, 200 ns at 50 B/ns on
	 * device 1; the rendezvous takes the longer, from the last arrival at 1000: 1200. */
	T_SPAN(t, g, "k0", 0, 1000);
	T_SPAN(t, g, "k1", 0, 500);
	T_SPAN(t, g, "ar0", 1000, 1200);
	T_SPAN(t, g, "ar1", 500, 1200);
}

/* Memory and hosts per device; the trace's memory series is the sum over devices. */
Test(mdev, memory_and_hosts_per_device)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	hw->launch_ns = 10;
	g_autoptr(LhGraph) g = placed(2);
	guint32 a = on(g, t_kernel(g, "a", 100, 1.0), 0, NULL);
	lh_graph_op_mut(g, a)->out_bytes = 1000;
	guint32 s = coll(g, "send", LH_OP_SEND, 1000, 2, 0, "p");
	t_dep(g, s, a);
	guint32 r = coll(g, "recv", LH_OP_RECV, 1000, 2, 1, "p");
	lh_graph_op_mut(g, r)->out_bytes = 1000;
	guint32 b = on(g, t_kernel(g, "b", 100, 1.0), 1, NULL);
	lh_graph_op_mut(g, b)->out_bytes = 500;
	t_dep(g, b, r);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 c0 = lh_plan_add_stream_on(p, "c0", LH_ROLE_COMPUTE, 0);
	guint32 c1 = lh_plan_add_stream_on(p, "c1", LH_ROLE_COMPUTE, 1);
	lh_plan_run(p, c0, t_id(g, "a"));
	lh_plan_run(p, c1, t_id(g, "recv"));
	lh_plan_run(p, c0, t_id(g, "send"));
	lh_plan_run(p, c1, t_id(g, "b"));
	lh_plan_host_on(p, 1, 100);
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	/* Each device's host issues its own commands, 10 ns per run: device 0 a at 10, send at
	 * 20; device 1 recv at 10, b at 20, then host 100: 120. a 10 .. 110; the recv is
	 * resident from 10; the send starts at 110: 1000 B / 100 B/ns = 10 ns, both end at 120;
	 * b 120 .. 220. */
	T_SPAN(t, g, "a", 10, 110);
	T_SPAN(t, g, "send", 110, 120);
	T_SPAN(t, g, "recv", 10, 120);
	T_SPAN(t, g, "b", 120, 220);
	cr_expect_eq(lh_trace_dev_host_end(t, 0), 20);
	cr_expect_eq(lh_trace_dev_host_end(t, 1), 120);
	cr_expect_eq(t->host_end, 120);
	/* Device 0: a's 1000 B from 10 until its consumer (the send) ends at 120. Device 1: the
	 * recv's 1000 B from 10, b's 500 B from 120: 1500 B at 120, until the recv's consumer b
	 * ends at 220 (b's own output lives to the end). */
	cr_expect_eq(lh_trace_dev_peak(t, 0), 1000);
	cr_expect_eq(lh_trace_dev_peak_t(t, 0), 10);
	cr_expect_eq(lh_trace_dev_peak(t, 1), 1500);
	cr_expect_eq(lh_trace_dev_peak_t(t, 1), 120);
	cr_expect_eq(t->peak_device, 1500);
	cr_expect_eq(t->peak_device_t, 120);
	/* Sum: 0 at 0; 1000 + 1000 = 2000 at 10; 0 + 1500 at 120; 500 at 220. */
	const gint64 want[][2] = {{0, 0}, {10, 2000}, {120, 1500}, {220, 500}};
	cr_assert_eq(t->mem->len, G_N_ELEMENTS(want));
	for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
		const LhMemPoint *m = &g_array_index(t->mem, LhMemPoint, i);
		cr_expect_eq(m->t, want[i][0], "point %u", i);
		cr_expect_eq(m->device_bytes, want[i][1], "point %u", i);
	}
}

/* Device 0 runs all-reduce A then B, device 1 runs B then A: each waits for the other. */
static void crossed(LhGraph **gp, LhPlan **pp)
{
	LhGraph *g = placed(2);
	guint32 a0 = coll(g, "a0", LH_OP_ALL_REDUCE, 1000, 2, 0, "A");
	guint32 b0 = coll(g, "b0", LH_OP_ALL_REDUCE, 1000, 2, 0, "B");
	guint32 b1 = coll(g, "b1", LH_OP_ALL_REDUCE, 1000, 2, 1, "B");
	guint32 a1 = coll(g, "a1", LH_OP_ALL_REDUCE, 1000, 2, 1, "A");
	t_finish(g);
	LhPlan *p = lh_plan_new();
	guint32 c0 = lh_plan_add_stream_on(p, "c0", LH_ROLE_COLLECTIVE, 0);
	guint32 c1 = lh_plan_add_stream_on(p, "c1", LH_ROLE_COLLECTIVE, 1);
	lh_plan_run(p, c0, a0);
	lh_plan_run(p, c0, b0);
	lh_plan_run(p, c1, b1);
	lh_plan_run(p, c1, a1);
	*gp = g;
	*pp = p;
}

Test(mdev, cross_device_deadlock_is_named)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhGraph) g = NULL;
	g_autoptr(LhPlan) p = NULL;
	crossed(&g, &p);
	/* Validation finds it before anything runs. */
	g_autoptr(GError) e = NULL;
	cr_assert_not(lh_plan_validate(p, g, "plan", &e));
	cr_expect(strstr(e->message, "the plan deadlocks"), "%s", e->message);
	cr_expect(strstr(e->message,
	                 "stream 'c0' (device 0) is stuck at 'run c0 a0' (plan: command 1): op "
	                 "'a0' meets op 'a1' of device 1 at sync 'A', and stream 'c1' (plan: "
	                 "command 4) never gets there"),
	          "%s", e->message);
	cr_expect(strstr(e->message, "op 'b1' meets op 'b0' of device 0 at sync 'B'"), "%s",
	          e->message);
	/* The engine names it too, for callers that skip validation. */
	g_autoptr(GError) e2 = NULL;
	LhSimOptions o = {.skip_validate = TRUE};
	LhTrace *t = lh_simulate(g, hw, p, &o, NULL, &e2);
	cr_assert_null(t);
	cr_assert(g_error_matches(e2, LH_ENGINE_ERROR, LH_ENGINE_ERROR_DEADLOCK));
	cr_expect(strstr(e2->message,
	                 "device 0: op 'a0' on stream 'c0' waits at sync 'A' for device 1, which "
	                 "has not reached it (op 'a1': stream 'c1' has not reached command 4)"),
	          "%s", e2->message);
	cr_expect(
	    strstr(e2->message, "device 1: op 'b1' on stream 'c1' waits at sync 'B' for device 0"),
	    "%s", e2->message);
}

/* A deadlock that depends on the hardware: device 0 has one resident-kernel slot, which its
 * part of A holds while it waits for device 1; device 1's part of B waits for device 0's part
 * of B, which waits for that slot. Validation (hardware-blind) passes it; the engine names it. */
Test(mdev, slot_deadlock_is_named)
{
	g_autoptr(LhHw) hw0 = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhHw) hw1 = t_hw(LH_SHARING_FIFO);
	hw0->max_resident_kernels = 1;
	g_autoptr(LhGraph) g = placed(2);
	coll(g, "a0", LH_OP_ALL_REDUCE, 1000, 2, 0, "A");
	coll(g, "b0", LH_OP_ALL_REDUCE, 1000, 2, 0, "B");
	coll(g, "b1", LH_OP_ALL_REDUCE, 1000, 2, 1, "B");
	coll(g, "a1", LH_OP_ALL_REDUCE, 1000, 2, 1, "A");
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 x = lh_plan_add_stream_on(p, "x", LH_ROLE_COLLECTIVE, 0);
	guint32 y = lh_plan_add_stream_on(p, "y", LH_ROLE_COLLECTIVE, 0);
	guint32 c1 = lh_plan_add_stream_on(p, "c1", LH_ROLE_COLLECTIVE, 1);
	lh_plan_run(p, x, t_id(g, "a0"));
	lh_plan_run(p, y, t_id(g, "b0"));
	lh_plan_run(p, c1, t_id(g, "b1"));
	lh_plan_run(p, c1, t_id(g, "a1"));
	g_autoptr(GError) e = NULL;
	cr_assert(lh_plan_validate(p, g, "plan", &e), "%s", e ? e->message : "");
	const LhHw *hws[] = {hw0, hw1};
	LhSimOptions o = {.device_hw = hws};
	LhTrace *t = lh_simulate(g, hw0, p, &o, NULL, &e);
	cr_assert_null(t);
	cr_assert(g_error_matches(e, LH_ENGINE_ERROR, LH_ENGINE_ERROR_DEADLOCK));
	cr_expect(strstr(e->message,
	                 "device 1: op 'b1' on stream 'c1' waits at sync 'B' for device 0, which "
	                 "has not reached it (op 'b0': it waits for a free kernel slot on stream "
	                 "'y')"),
	          "%s", e->message);
	cr_expect(strstr(e->message,
	                 "device 0: op 'a0' on stream 'x' waits at sync 'A' for device 1, which "
	                 "has not reached it (op 'a1': stream 'c1' has not reached command 4)"),
	          "%s", e->message);
	/* With two slots on device 0 it runs: both parts of B arrive at 0 (b1 is c1's first),
	 * 1000 B over 2 devices moves 2 * 1 / 2 * 1000 = 1000 B at 100 B/ns: B ends at 10; a1
	 * follows b1 on c1 and arrives at 10: A ends at 20. */
	hw0->max_resident_kernels = 2;
	g_autoptr(LhTrace) t2 = sim_opts(g, hw0, p, &o);
	T_SPAN(t2, g, "b0", 0, 10);
	T_SPAN(t2, g, "b1", 0, 10);
	T_SPAN(t2, g, "a0", 0, 20);
	T_SPAN(t2, g, "a1", 10, 20);
}

/* Devices do not share hosts: device 0's host blocked in a sync on a part waiting for device
 * 1 does not stop device 1's host from issuing that part (one host would deadlock). */
Test(mdev, hosts_are_independent)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhGraph) g = placed(2);
	coll(g, "a0", LH_OP_ALL_REDUCE, 1000, 2, 0, "A");
	coll(g, "a1", LH_OP_ALL_REDUCE, 1000, 2, 1, "A");
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 c0 = lh_plan_add_stream_on(p, "c0", LH_ROLE_COLLECTIVE, 0);
	guint32 c1 = lh_plan_add_stream_on(p, "c1", LH_ROLE_COLLECTIVE, 1);
	lh_plan_run(p, c0, t_id(g, "a0"));
	lh_plan_sync(p, c0);
	lh_plan_host_on(p, 1, 50);
	lh_plan_run(p, c1, t_id(g, "a1"));
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	/* a1 is issued at 50 by device 1's host; wire 2 * 1 / 2 * 1000 = 1000 B: 10 ns. */
	T_SPAN(t, g, "a0", 0, 60);
	T_SPAN(t, g, "a1", 50, 60);
}

/* ---- the graph JSON: placement, its errors with positions, round trip ---- */

static const char *const good_json =
    "{\"format\": \"lhsim-graph\", \"version\": 1, \"name\": \"dp\", \"devices\": 2,\n"
    " \"ops\": [\n"
    "  {\"name\": \"k0\", \"kind\": \"kernel\", \"duration_ns\": 1000, \"device\": 0},\n"
    "  {\"name\": \"ar0\", \"kind\": \"all-reduce\", \"deps\": [\"k0\"], \"size\": 64, "
    "\"group\": 2, \"device\": 0, \"sync\": \"grad\"},\n"
    "  {\"name\": \"k1\", \"kind\": \"kernel\", \"duration_ns\": 1000, \"device\": 1},\n"
    "  {\"name\": \"ar1\", \"kind\": \"all-reduce\", \"deps\": [\"k1\"], \"size\": 64, "
    "\"group\": 2, \"device\": 1, \"sync\": \"grad\"},\n"
    "  {\"name\": \"s1\", \"kind\": \"send\", \"deps\": [\"ar1\"], \"size\": 8, \"device\": 1, "
    "\"sync\": \"p\"},\n"
    "  {\"name\": \"r0\", \"kind\": \"recv\", \"deps\": [\"ar0\"], \"size\": 8, \"device\": 0, "
    "\"sync\": \"p\"}\n"
    " ]}\n";

Test(mdev, json_reads_and_round_trips)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(LhGraph) g = lh_graph_new_from_json_data(good_json, -1, "t.json", &e);
	cr_assert_not_null(g, "%s", e ? e->message : "");
	cr_expect(lh_graph_placed(g));
	cr_expect_eq(lh_graph_devices(g), 2);
	cr_expect_eq(t_op_named(g, "ar1")->device, 1);
	cr_expect_eq(lh_graph_n_syncs(g), 2);
	guint32 k;
	const guint32 *ops = lh_graph_sync_ops(g, t_op_named(g, "ar0")->sync - 1, &k);
	cr_assert_eq(k, 2);
	cr_expect_eq(ops[0], t_id(g, "ar0"));
	cr_expect_eq(ops[1], t_id(g, "ar1"));
	/* Write, read back: the same text (the writer prints every field). */
	g_autofree char *a = lh_graph_to_json(g);
	cr_expect(strstr(a, "\"device\": 1, \"sync\": \"grad\""), "%s", a);
	g_autoptr(LhGraph) g2 = lh_graph_new_from_json_data(a, -1, "t2.json", &e);
	cr_assert_not_null(g2, "%s", e ? e->message : "");
	g_autofree char *b = lh_graph_to_json(g2);
	cr_expect_str_eq(a, b);
	/* The fast path takes it, and builds what the full reader builds. */
	g_autoptr(LhGraph) fast = lh__graph_json_fast(good_json, strlen(good_json));
	g_autoptr(LhGraph) full = lh__graph_json_full(good_json, -1, "t.json", &e);
	cr_assert_not_null(fast);
	cr_assert_not_null(full, "%s", e ? e->message : "");
	g_autofree char *fa = lh_graph_to_json(fast);
	g_autofree char *fu = lh_graph_to_json(full);
	cr_expect_str_eq(fa, fu);
	/* A graph without placement writes no device. */
	g_autoptr(LhGraph) one = lh_graph_new("one");
	t_kernel(one, "k", 10, 1);
	t_finish(one);
	g_autofree char *c = lh_graph_to_json(one);
	cr_expect_null(strstr(c, "device"), "%s", c);
}

/* @json with @from replaced by @to: the error names FILE:LINE:COL and says @what; the fast
 * path gives up on it (so the full reader's words are what users see). */
static void bad_json(const char *from, const char *to, const char *pos, const char *what)
{
	const char *at = strstr(good_json, from);
	cr_assert_not_null(at, "%s", from);
	g_autofree char *head = g_strndup(good_json, at - good_json);
	g_autofree char *text = g_strconcat(head, to, at + strlen(from), NULL);
	g_autoptr(GError) e = NULL;
	g_autoptr(LhGraph) g = lh_graph_new_from_json_data(text, -1, "t.json", &e);
	cr_assert_null(g, "%s -> %s was accepted", from, to);
	cr_expect(g_str_has_prefix(e->message, pos), "want %s, got: %s", pos, e->message);
	cr_expect(strstr(e->message, what), "want '%s', got: %s", what, e->message);
	g_autoptr(LhGraph) fast = lh__graph_json_fast(text, strlen(text));
	cr_expect_null(fast, "the fast path took %s", to);
}

Test(mdev, json_errors_have_positions)
{
	/* Line 3 is k0, line 4 ar0, 5 k1, 6 ar1, 7 s1, 8 r0. Columns were counted by hand; the
	 * positions are json-glib's: a field at the last character of its value, an op just
	 * past the '}' of its object (on the ',' after it; at the '}' of the last op). */
	/* An undeclared device: k1 on device 2 of 2 (its value, "2", is column 67). */
	bad_json("\"duration_ns\": 1000, \"device\": 1}", "\"duration_ns\": 1000, \"device\": 2}",
	         "t.json:5:67:", "op 'k1' is on device 2, but the graph declares 2 devices");
	/* Parts that disagree on size: ar1 moves 65 B, ar0 64 B (at ar0, the first named: its
	 * line is 108 characters, then the ','). */
	bad_json(
	    "\"deps\": [\"k1\"], \"size\": 64", "\"deps\": [\"k1\"], \"size\": 65",
	    "t.json:4:109:", "ops 'ar0' and 'ar1' of sync 'grad' disagree on size (64 and 65 B)");
	/* ... or on kind: ar1 an all-gather. */
	bad_json("\"ar1\", \"kind\": \"all-reduce\"", "\"ar1\", \"kind\": \"all-gather\"",
	         "t.json:4:109:", "disagree on kind (all-reduce and all-gather)");
	/* A send without its recv: r0 joins another sync (at s1: 86 characters, then ','). */
	bad_json("\"device\": 0, \"sync\": \"p\"", "\"device\": 0, \"sync\": \"q\"", "t.json:7:87:",
	         "op 's1': sync 'p' must pair one send with one recv (it has 1 send and 0 recvs)");
	/* A dep across devices: r0 (device 0) on ar1 (device 1); r0's '}' is column 86. */
	bad_json("\"recv\", \"deps\": [\"ar0\"]", "\"recv\", \"deps\": [\"ar1\"]",
	         "t.json:8:86:", "op 'r0' on device 0 depends on 'ar1' on device 1");
	/* An op without a device in a placed graph (k1's line: 55 characters, then ','). */
	bad_json("\"duration_ns\": 1000, \"device\": 1}", "\"duration_ns\": 1000}",
	         "t.json:5:56:", "op 'k1' names no device, but op 'k0' does");
	/* Placement without "devices" (at k0's device, its value "0" is column 67). */
	bad_json(" \"devices\": 2,", "", "t.json:3:67:",
	         "op 'k0' names a device, but the graph does not say how many it has");
	/* A sync on a kernel. */
	bad_json("\"duration_ns\": 1000, \"device\": 0}",
	         "\"duration_ns\": 1000, \"device\": 0, \"sync\": \"grad\"}",
	         "t.json:3:", "op 'k0': only collectives, send and recv have a 'sync'");
	/* A device that is not a whole number ("1.5" is columns 67 to 69). */
	bad_json("\"duration_ns\": 1000, \"device\": 1}", "\"duration_ns\": 1000, \"device\": 1.5}",
	         "t.json:5:69:", "op 'k1': field 'device' must be a whole number");
}

/* ---- the plan text: device fields ---- */

Test(mdev, plan_devices_round_trip)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(LhGraph) g = lh_graph_new_from_json_data(good_json, -1, "t.json", &e);
	cr_assert_not_null(g);
	const char *text = "lhsim-plan 1\n"
	                   "stream c0 compute device=0\n"
	                   "stream c1 compute device=1\n"
	                   "run c0 k0\nrun c0 ar0\nrun c1 k1\nrun c1 ar1\n"
	                   "host 5 device=1\n"
	                   "run c1 s1\nrun c0 r0\n";
	g_autoptr(LhPlan) p = lh_plan_new_from_data(text, strlen(text), "p.txt", g, &e);
	cr_assert_not_null(p, "%s", e ? e->message : "");
	cr_expect_eq(lh_plan_stream(p, 1)->device, 1);
	cr_expect_eq(lh_plan_cmd(p, 4)->kind, LH_CMD_HOST);
	cr_expect_eq(lh_plan_cmd(p, 4)->stream, 1);
	cr_expect(lh_plan_validate(p, g, "p.txt", &e), "%s", e ? e->message : "");
	g_autofree char *out = lh_plan_to_data(p, g);
	cr_expect(strstr(out, "stream c1 compute device=1\n"), "%s", out);
	cr_expect(strstr(out, "host 5 device=1\n"), "%s", out);
	g_autoptr(LhPlan) p2 = lh_plan_new_from_data(out, strlen(out), "p2.txt", g, &e);
	cr_assert_not_null(p2, "%s", e ? e->message : "");
	g_autofree char *out2 = lh_plan_to_data(p2, g);
	cr_expect_str_eq(out, out2);
	/* Without placement nothing says device. */
	g_autoptr(LhGraph) one = lh_graph_new("one");
	t_kernel(one, "k", 10, 1);
	t_finish(one);
	g_autoptr(LhPlan) q = lh_plan_new();
	lh_plan_run(q, lh_plan_add_stream(q, "s", LH_ROLE_COMPUTE), 0);
	lh_plan_host(q, 3);
	g_autofree char *qt = lh_plan_to_data(q, one);
	cr_expect_null(strstr(qt, "device"), "%s", qt);
	/* Bad device words. */
	const char *bad[][2] = {
	    {"lhsim-plan 1\nstream c0 compute dev=0\n", "p.txt:2:19: expected 'device=K'"},
	    {"lhsim-plan 1\nstream c0 compute device=x\n", "p.txt:2:26: 'x' is not a device"},
	    {"lhsim-plan 1\nhost 5 device=-1\n", "p.txt:2:15: '-1' is not a device"},
	    {"lhsim-plan 1\nhost 5 device=1 x\n", "p.txt:2:1: usage: host NANOSECONDS [device=K]"},
	};
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GError) e2 = NULL;
		g_autoptr(LhPlan) b =
		    lh_plan_new_from_data(bad[i][0], strlen(bad[i][0]), "p.txt", g, &e2);
		cr_assert_null(b, "%s", bad[i][0]);
		cr_expect(g_str_has_prefix(e2->message, bad[i][1]), "want %s, got %s", bad[i][1],
		          e2->message);
	}
}

/* ---- validation ---- */

static void bad_plan(const LhGraph *g, const char *text, const char *what)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(LhPlan) p = lh_plan_new_from_data(text, strlen(text), "p.txt", g, &e);
	cr_assert_not_null(p, "%s", e ? e->message : "");
	cr_assert_not(lh_plan_validate(p, g, "p.txt", &e), "accepted: %s", text);
	cr_expect(strstr(e->message, what), "want '%s', got: %s", what, e->message);
}

Test(mdev, validation_errors)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(LhGraph) g = lh_graph_new_from_json_data(good_json, -1, "t.json", &e);
	cr_assert_not_null(g);
	/* An op on a stream of another device. */
	bad_plan(g,
	         "lhsim-plan 1\nstream c0 compute device=0\nstream c1 compute device=1\n"
	         "run c0 k0\nrun c0 ar0\nrun c0 k1\nrun c1 ar1\nrun c1 s1\nrun c0 r0\n",
	         "p.txt:6:1: 'run c0 k1': op 'k1' is on device 1, but stream 'c0' is on device 0");
	/* A wait across devices. */
	bad_plan(g,
	         "lhsim-plan 1\nstream c0 compute device=0\nstream c1 compute device=1\n"
	         "run c0 k0\nsignal c0 x\nwait c1 x\n"
	         "run c0 ar0\nrun c1 k1\nrun c1 ar1\nrun c1 s1\nrun c0 r0\n",
	         "p.txt:6:1: 'wait c1 x': event x is waited for on device 1 (stream 'c1') but "
	         "signaled on device 0 (stream 'c0', p.txt:5:1): devices meet only at a sync");
	/* A stream on a device the graph does not have. */
	bad_plan(g,
	         "lhsim-plan 1\nstream c0 compute device=0\nstream c1 compute device=2\n"
	         "run c0 k0\nrun c0 ar0\nrun c1 k1\nrun c1 ar1\nrun c1 s1\nrun c0 r0\n",
	         "p.txt:6:1: 'run c1 k1': stream 'c1' is on device 2, but the graph has 2 devices");
	/* A host of a device the graph does not have. */
	bad_plan(g,
	         "lhsim-plan 1\nstream c0 compute device=0\nstream c1 compute device=1\n"
	         "host 1 device=3\n"
	         "run c0 k0\nrun c0 ar0\nrun c1 k1\nrun c1 ar1\nrun c1 s1\nrun c0 r0\n",
	         "p.txt:4:1: 'host 1': the host of device 3: the graph has fewer devices");
	/* A device in a plan for a graph without placement. */
	g_autoptr(LhGraph) one = lh_graph_new("one");
	t_kernel(one, "k", 10, 1);
	t_finish(one);
	bad_plan(one, "lhsim-plan 1\nstream s compute device=1\nrun s k\n",
	         "p.txt:3:1: 'run s k': stream 's' is on device 1, but the graph is not placed");
}

/* ---- the command line: a placed graph runs; a bad one exits 2 with its position ---- */

Test(mdev, cli_runs_a_placed_graph_and_rejects_a_bad_one)
{
	g_autofree char *gp = t_data("mdev-dp2.json");
	g_autofree char *pp = t_data("mdev-dp2.plan");
	g_autofree char *out = NULL, *err = NULL;
	int st = t_lhsim(&out, &err, "run", gp, "--plan", pp, NULL);
	cr_assert_eq(st, 0, "%s", err ? err : "");
	cr_expect(out && strstr(out, "makespan"), "%s", out ? out : "");
	g_autofree char *bp = t_data("mdev-bad-device.json");
	g_autofree char *out2 = NULL, *err2 = NULL;
	st = t_lhsim(&out2, &err2, "run", bp, "--plan", pp, NULL);
	cr_expect_eq(st, 2);
	/* Line 5 is k1: `  {"name": "k1", "kind": "kernel", "duration_ns": 3000, "device": 2},`,
	 * its device's value at column 67. */
	cr_expect(err2 && strstr(err2, "mdev-bad-device.json:5:67: op 'k1' is on device 2, but "
	                               "the graph declares 2 devices"),
	          "%s", err2 ? err2 : "");
}

/* A graph without placement is device 0: its factor slows its kernels and copy-d2d, not its
 * copies over PCIe; a factor that is not a positive number is an input error. */
Test(mdev, straggler_factor_rules)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhGraph) g = lh_graph_new("g");
	t_kernel(g, "k", 1000, 1.0);
	guint32 d = t_op(g, "d2d", LH_OP_COPY_D2D, 100000);
	guint32 h = t_op(g, "h2d", LH_OP_COPY_H2D, 1000);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 s = lh_plan_add_stream(p, "s", LH_ROLE_COMPUTE);
	lh_plan_run(p, s, t_id(g, "k"));
	lh_plan_run(p, s, d);
	lh_plan_run(p, s, h);
	const double slow[] = {2};
	LhSimOptions o = {.slow = slow};
	g_autoptr(LhTrace) t = sim_opts(g, hw, p, &o);
	/* k: 1000 * 2 = 2000. copy-d2d: a kernel of 2 * 100000 B at 1000 B/ns = 200 ns, times 2:
	 * 400, 2000 .. 2400. copy-h2d: 1000 B at 10 B/ns = 100 ns, no latency, not slowed:
	 * 2400 .. 2500. */
	T_SPAN(t, g, "k", 0, 2000);
	T_SPAN(t, g, "d2d", 2000, 2400);
	T_SPAN(t, g, "h2d", 2400, 2500);
	const double bad[] = {0, -1, NAN};
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		LhSimOptions ob = {.slow = &bad[i]};
		g_autoptr(GError) e = NULL;
		cr_expect_null(lh_simulate(g, hw, p, &ob, NULL, &e));
		cr_expect(e && g_error_matches(e, LH_ENGINE_ERROR, LH_ENGINE_ERROR_INVALID) &&
		              strstr(e->message, "device 0: straggler factor"),
		          "%g: %s", bad[i], e ? e->message : "accepted");
	}
}

/* ---- independence: devices share nothing but rendezvous ---- */

/* Base graph @b's ops on device @d of @g (names prefixed, deps and aliases offset by d * n). */
static void copy_into(LhGraph *g, const LhGraph *b, guint32 d)
{
	guint32 n = lh_graph_n_ops(b);
	for (guint32 i = 0; i < n; i++) {
		const LhOp *s = lh_graph_op(b, i);
		g_autofree char *name = g_strdup_printf("d%u/%s", d, s->name);
		LhOp *o = lh_graph_op_mut(g, lh_graph_add_op(g, name, s->kind));
		o->flops = s->flops;
		o->bytes = s->bytes;
		o->sm = s->sm;
		o->size = s->size;
		o->out_bytes = s->out_bytes;
		o->duration_ns = s->duration_ns;
		o->out_space = s->out_space;
		o->async = s->async;
		o->dtype = s->dtype;
		o->transpose = s->transpose;
		o->group = s->group;
		o->alias = s->alias == LH_NO_OP ? LH_NO_OP : d * n + s->alias;
		o->device = d;
	}
	for (guint32 i = 0; i < n; i++) {
		guint32 nd;
		const guint32 *deps = lh_graph_deps(b, i, &nd);
		for (guint32 k = 0; k < nd; k++)
			lh_graph_add_dep(g, d * n + i, d * n + deps[k]);
	}
}

/* @b's ops (at @off in the plan's graph) on 4 streams of device @dev, round robin in
 * topological order, a signal after an op with a consumer on another stream and a wait before
 * each such consumer. */
static void plan_copy(LhPlan *p, const LhGraph *b, guint32 dev, guint32 off)
{
	guint32 n = lh_graph_n_ops(b), sid[4];
	for (guint32 s = 0; s < 4; s++) {
		g_autofree char *name = g_strdup_printf("d%u.s%u", dev, s);
		sid[s] = lh_plan_add_stream_on(p, name, LH_ROLE_COMPUTE, dev);
	}
	g_autofree guint32 *stream = g_new(guint32, n), *event = g_new(guint32, n);
	const guint32 *topo = lh_graph_topo(b);
	for (guint32 k = 0, rr = 0; k < n; k++)
		stream[topo[k]] =
		    lh_graph_op(b, topo[k])->kind == LH_OP_INPUT ? G_MAXUINT32 : rr++ % 4;
	for (guint32 k = 0; k < n; k++) {
		guint32 v = topo[k], s = stream[v], nd, ns;
		event[v] = G_MAXUINT32;
		if (s == G_MAXUINT32)
			continue;
		const guint32 *deps = lh_graph_deps(b, v, &nd);
		for (guint32 j = 0; j < nd; j++)
			if (stream[deps[j]] != G_MAXUINT32 && stream[deps[j]] != s)
				lh_plan_wait(p, sid[s], event[deps[j]]);
		lh_plan_run(p, sid[s], off + v);
		const guint32 *succ = lh_graph_succs(b, v, &ns);
		for (guint32 j = 0; j < ns; j++)
			if (stream[succ[j]] != s) {
				event[v] = lh_plan_new_event(p);
				lh_plan_signal(p, sid[s], event[v]);
				break;
			}
	}
}

/* Two devices each running their own copy of a random graph, without rendezvous, give each
 * copy exactly the trace it has alone on one device (graph without placement): each device
 * has its own host, queues, engines and memory. The plan interleaves the two devices'
 * commands, so a shared host or queue would show. Random layered DAGs with kernels, copies
 * and collectives, under fifo and fair sharing. */
Test(mdev, devices_are_independent)
{
	for (guint seed = 1; seed <= 4; seed++) {
		g_autoptr(LhHw) hw = t_hw(seed & 1 ? LH_SHARING_FIFO : LH_SHARING_FAIR);
		hw->launch_ns = 5;
		hw->event_ns = 2;
		hw->hw_queues =
		    2; /* fewer than the 4 streams: false dependencies inside a device */
		hw->memory_gib = 1024;
		LhRandomDagOptions ro;
		lh_random_dag_options_init(&ro);
		ro.seed = seed;
		ro.n_ops = 300;
		g_autoptr(LhGraph) b = lh_gen_random_dag(&ro);
		guint32 n = lh_graph_n_ops(b);
		g_autoptr(LhPlan) p1 = lh_plan_new();
		plan_copy(p1, b, 0, 0);
		g_autoptr(LhTrace) t1 = t_sim(b, hw, p1);
		/* Placed on one device, the graph runs the several-device loop: the same trace. */
		g_autoptr(LhGraph) g1 = placed(1);
		copy_into(g1, b, 0);
		t_finish(g1);
		g_autoptr(LhTrace) t1p = t_sim(g1, hw, p1);
		for (guint32 i = 0; i < n; i++)
			cr_assert(t1->ops[i].start == t1p->ops[i].start &&
			              t1->ops[i].end == t1p->ops[i].end,
			          "seed %u op %s placed on one device", seed,
			          lh_graph_op(b, i)->name);
		cr_expect_eq(t1->host_end, t1p->host_end);
		cr_expect_eq(t1->peak_device, t1p->peak_device);
		g_autoptr(LhGraph) g = placed(2);
		copy_into(g, b, 0);
		copy_into(g, b, 1);
		t_finish(g);
		/* Device 1's plan, then device 0's, merged command by command. */
		g_autoptr(LhPlan) a = lh_plan_new(), c = lh_plan_new();
		plan_copy(a, b, 1, n);
		plan_copy(c, b, 0, 0);
		g_autoptr(LhPlan) p2 = lh_plan_new();
		/* Streams interleaved too (device 1's s at 2 s, device 0's at 2 s + 1): each
		 * device's queues count its own streams only, so each copy sees the queues it has
		 * alone. */
		for (guint32 s = 0; s < 4; s++) {
			lh_plan_add_stream_on(p2, lh_plan_stream(a, s)->name, LH_ROLE_COMPUTE, 1);
			lh_plan_add_stream_on(p2, lh_plan_stream(c, s)->name, LH_ROLE_COMPUTE, 0);
		}
		for (guint32 e = 0; e < lh_plan_n_events(a) + lh_plan_n_events(c); e++)
			lh_plan_new_event(p2);
		guint32 na = lh_plan_n_cmds(a), nc = lh_plan_n_cmds(c);
		for (guint32 i = 0; i < MAX(na, nc); i++)
			for (int which = 0; which < 2; which++) {
				const LhPlan *q = which ? c : a;
				if (i >= lh_plan_n_cmds(q))
					continue;
				const LhCmd *cmd = lh_plan_cmd(q, i);
				guint32 s = 2 * cmd->stream + (which ? 1 : 0);
				guint32 ev = (guint32)cmd->arg + (which ? lh_plan_n_events(a) : 0);
				if (cmd->kind == LH_CMD_RUN)
					lh_plan_run(p2, s, (guint32)cmd->arg);
				else if (cmd->kind == LH_CMD_SIGNAL)
					lh_plan_signal(p2, s, ev);
				else if (cmd->kind == LH_CMD_WAIT)
					lh_plan_wait(p2, s, ev);
			}
		g_autoptr(LhTrace) t2 = t_sim(g, hw, p2);
		for (guint32 d = 0; d < 2; d++)
			for (guint32 i = 0; i < n; i++) {
				const LhOpTiming *x = &t1->ops[i], *y = &t2->ops[d * n + i];
				cr_assert(x->start == y->start && x->end == y->end &&
				              x->issue == y->issue && x->engine == y->engine,
				          "seed %u device %u op %s: alone %" G_GINT64_FORMAT
				          " .. %" G_GINT64_FORMAT
				          ", beside another device %" G_GINT64_FORMAT
				          " .. %" G_GINT64_FORMAT,
				          seed, d, lh_graph_op(b, i)->name, x->start, x->end,
				          y->start, y->end);
			}
		for (guint32 d = 0; d < 2; d++) {
			cr_expect_eq(lh_trace_dev_peak(t2, d), t1->peak_device, "seed %u", seed);
			cr_expect_eq(lh_trace_dev_peak_t(t2, d), t1->peak_device_t, "seed %u",
			             seed);
			cr_expect_eq(lh_trace_dev_host_end(t2, d), t1->host_end, "seed %u", seed);
		}
	}
}
