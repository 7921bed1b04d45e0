/* lhsim tests — the engine, one rule of docs/engine.md at a time.
 *
 * Every expected time is worked out by hand in the comment above its assertion. The hardware
 * is t_hw() (tests/helpers.c): no launch, event, overhead or latency cost unless a test sets
 * one; PCIe 10 B/ns alone and 8 B/ns duplex; link 100 B/ns; collectives take 0.1 of the SMs;
 * 1000 FLOP/ns and 1000 B/ns of HBM. Kernels mostly carry duration_ns so that T is exact.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"

/* Two kernels, each on its own stream, issued in plan order a then b. */
static void two_streams(LhGraph *g, LhPlan *p, const char *a, const char *b)
{
	guint32 s0 = lh_plan_add_stream(p, "s0", LH_ROLE_COMPUTE);
	guint32 s1 = lh_plan_add_stream(p, "s1", LH_ROLE_COMPUTE);
	lh_plan_run(p, s0, t_id(g, a));
	lh_plan_run(p, s1, t_id(g, b));
}

Test(engine, two_full_sm_kernels_fifo)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhGraph) g = lh_graph_new("g");
	t_kernel(g, "a", 1000, 1.0);
	t_kernel(g, "b", 1000, 1.0);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	two_streams(g, p, "a", "b");
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	/* fifo: a started first and takes every SM (rate 1); b has started (it is resident) but
	 * gets no SM until a ends at 1000, then runs alone for 1000: ends at 2000. */
	T_SPAN(t, g, "a", 0, 1000);
	T_SPAN(t, g, "b", 0, 2000);
}

Test(engine, two_full_sm_kernels_fair)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	g_autoptr(LhGraph) g = lh_graph_new("g");
	t_kernel(g, "a", 1000, 1.0);
	t_kernel(g, "b", 1000, 1.0);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	two_streams(g, p, "a", "b");
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	/* fair: both rise together until SMs saturate: r + r = 1, r = 0.5; 1000 / 0.5 = 2000. */
	T_SPAN(t, g, "a", 0, 2000);
	T_SPAN(t, g, "b", 0, 2000);
}

Test(engine, half_sm_beside_full_sm)
{
	g_autoptr(LhGraph) g = lh_graph_new("g");
	t_kernel(g, "half", 1000, 0.5);
	t_kernel(g, "full", 2000, 1.0);
	t_finish(g);
	{
		g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
		g_autoptr(LhPlan) p = lh_plan_new();
		two_streams(g, p, "half", "full");
		g_autoptr(LhTrace) t = t_sim(g, hw, p);
		/* fair: 0.5 r + 1.0 r = 1 gives r = 2/3 for both. half ends after 1000 / (2/3) =
		 * 1500; by then full did 1500 * 2/3 = 1000 of 2000, the other 1000 at rate 1:
		 * ends at 2500. */
		T_SPAN(t, g, "half", 0, 1500);
		T_SPAN(t, g, "full", 0, 2500);
	}
	{
		g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
		g_autoptr(LhPlan) p = lh_plan_new();
		two_streams(g, p, "full", "half");
		g_autoptr(LhTrace) t = t_sim(g, hw, p);
		/* fifo, full first: it takes all SMs for 2000; half waits, then runs 1000. */
		T_SPAN(t, g, "full", 0, 2000);
		T_SPAN(t, g, "half", 0, 3000);
	}
	{
		g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
		g_autoptr(LhPlan) p = lh_plan_new();
		two_streams(g, p, "half", "full");
		g_autoptr(LhTrace) t = t_sim(g, hw, p);
		/* fifo, half first: half at rate 1 uses 0.5; full gets 0.5 / 1.0 = rate 0.5 and
		 * does 500 by t=1000, then the other 1500 at rate 1: ends at 2500. */
		T_SPAN(t, g, "half", 0, 1000);
		T_SPAN(t, g, "full", 0, 2500);
	}
}

Test(engine, two_hbm_bound_kernels)
{
	g_autoptr(LhGraph) g = lh_graph_new("g");
	/* bytes 1e6 at 1000 B/ns: T = 1000 ns, no flops; hbm_use = 1e6 / 1000 / 1000 = 1.0.
	 * sm 0.25 each, so SMs never limit. */
	for (int i = 0; i < 2; i++) {
		guint32 k = lh_graph_add_op(g, i ? "m1" : "m0", LH_OP_KERNEL);
		lh_graph_op_mut(g, k)->bytes = 1e6;
		lh_graph_op_mut(g, k)->sm = 0.25;
	}
	t_finish(g);
	{
		g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
		g_autoptr(LhPlan) p = lh_plan_new();
		two_streams(g, p, "m0", "m1");
		g_autoptr(LhTrace) t = t_sim(g, hw, p);
		/* fair: HBM saturates at r + r = 1, r = 0.5: both end at 2000. */
		T_SPAN(t, g, "m0", 0, 2000);
		T_SPAN(t, g, "m1", 0, 2000);
	}
	{
		g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
		g_autoptr(LhPlan) p = lh_plan_new();
		two_streams(g, p, "m0", "m1");
		g_autoptr(LhTrace) t = t_sim(g, hw, p);
		/* fifo: m0 takes all the HBM bandwidth (rate 1), m1 none until 1000. */
		T_SPAN(t, g, "m0", 0, 1000);
		T_SPAN(t, g, "m1", 0, 2000);
	}
}

Test(engine, hbm_use_above_one_runs_slower_alone)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhGraph) g = lh_graph_new("g");
	/* duration 1000 ns but 2e6 bytes: hbm_use = 2e6 / 1000 / 1000 = 2, so even alone it runs
	 * at 1/2 and ends at 2000. */
	guint32 k = t_kernel(g, "k", 1000, 1.0);
	lh_graph_op_mut(g, k)->bytes = 2e6;
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	lh_plan_run(p, lh_plan_add_stream(p, "s", LH_ROLE_COMPUTE), k);
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	T_SPAN(t, g, "k", 0, 2000);
}

Test(engine, copies_fifo_engine_and_duplex)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	hw->copy_latency_ns = 100;
	g_autoptr(LhGraph) g = lh_graph_new("g");
	t_op(g, "d1", LH_OP_COPY_D2H, 10000);
	t_op(g, "d2", LH_OP_COPY_D2H, 10000);
	t_op(g, "h", LH_OP_COPY_H2D, 16000);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 s0 = lh_plan_add_stream(p, "s0", LH_ROLE_D2H);
	guint32 s1 = lh_plan_add_stream(p, "s1", LH_ROLE_D2H);
	guint32 s2 = lh_plan_add_stream(p, "s2", LH_ROLE_H2D);
	lh_plan_run(p, s0, t_id(g, "d1"));
	lh_plan_run(p, s1, t_id(g, "d2"));
	lh_plan_run(p, s2, t_id(g, "h"));
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	/* One D2H engine: d1 takes it at 0, d2 waits in line for it.
	 * 0-100: d1 and h in their latency phases.
	 * 100: both in byte phases -> duplex 8 B/ns each. d1: 10000 / 8 = 1250 -> ends 1350.
	 *      h has moved 1250 * 8 = 10000 of 16000 by then.
	 * 1350-1450: d2's latency; h alone at 10 B/ns moves 1000 (5000 left).
	 * 1450: both byte phases again at 8 B/ns: h ends at 1450 + 5000 / 8 = 2075; d2 has moved
	 *      625 * 8 = 5000 by then, the other 5000 alone at 10 B/ns: ends 2075 + 500 = 2575. */
	T_SPAN(t, g, "d1", 0, 1350);
	T_SPAN(t, g, "d2", 1350, 2575);
	T_SPAN(t, g, "h", 0, 2075);
	cr_expect_eq(t_timing(t, g, "d2")->engine, LH_ENGINE_D2H);
	cr_expect_eq(t_timing(t, g, "h")->engine, LH_ENGINE_H2D);
}

/* s0: k1 then k2; s1: k3. Plan order k1, k2, k3. Half-SM kernels so SMs never limit. */
static LhTrace *false_dep(guint32 queues, LhGraph **gout)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	hw->hw_queues = queues;
	LhGraph *g = lh_graph_new("g");
	t_kernel(g, "k1", 1000, 0.5);
	t_kernel(g, "k2", 1000, 0.5);
	t_kernel(g, "k3", 1000, 0.5);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 s0 = lh_plan_add_stream(p, "s0", LH_ROLE_COMPUTE);
	guint32 s1 = lh_plan_add_stream(p, "s1", LH_ROLE_COMPUTE);
	lh_plan_run(p, s0, t_id(g, "k1"));
	lh_plan_run(p, s0, t_id(g, "k2"));
	lh_plan_run(p, s1, t_id(g, "k3"));
	*gout = g;
	return t_sim(g, hw, p);
}

Test(engine, false_dependency_one_queue_vs_two)
{
	LhGraph *g = NULL;
	{
		g_autoptr(LhTrace) t = false_dep(2, &g);
		/* Two queues: k3 has a queue of its own and starts at 0 beside k1. */
		T_SPAN(t, g, "k1", 0, 1000);
		T_SPAN(t, g, "k2", 1000, 2000);
		T_SPAN(t, g, "k3", 0, 1000);
		lh_graph_free(g);
	}
	{
		g_autoptr(LhTrace) t = false_dep(1, &g);
		/* One queue holds k1, k2, k3 in issue order. k2 cannot leave before k1 ends, and k3
		 * waits behind it although its own stream is idle: it starts at 1000 with k2. */
		T_SPAN(t, g, "k1", 0, 1000);
		T_SPAN(t, g, "k2", 1000, 2000);
		T_SPAN(t, g, "k3", 1000, 2000);
		lh_graph_free(g);
	}
}

Test(engine, event_wait_across_streams)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	hw->event_ns = 10;
	hw->launch_ns = 100;
	g_autoptr(LhGraph) g = lh_graph_new("g");
	guint32 a = t_kernel(g, "a", 1000, 0.5);
	guint32 b = t_kernel(g, "b", 500, 0.5);
	t_kernel(g, "c", 300, 0.5);
	t_dep(g, b, a);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 s0 = lh_plan_add_stream(p, "s0", LH_ROLE_COMPUTE);
	guint32 s1 = lh_plan_add_stream(p, "s1", LH_ROLE_COMPUTE);
	lh_plan_run(p, s1, t_id(g, "c"));
	lh_plan_run(p, s0, a);
	guint32 e = lh_plan_new_event(p);
	lh_plan_signal(p, s0, e);
	lh_plan_wait(p, s1, e);
	lh_plan_run(p, s1, b);
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	/* Host: run c issued at 100, run a at 200, signal at 210, wait at 220, run b at 320.
	 * c: 100-400. a: 200-1200. The signal fires when a ends (1200); b's stream waits for it,
	 * b is issued by then: b 1200-1700. */
	T_SPAN(t, g, "c", 100, 400);
	T_SPAN(t, g, "a", 200, 1200);
	T_SPAN(t, g, "b", 1200, 1700);
	cr_expect_eq(t->cmd_issue[4], 320);
	cr_expect_eq(t->host_end, 320);
}

Test(engine, launch_bound_chain)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	hw->launch_ns = 4000;
	g_autoptr(LhGraph) g = lh_graph_new("g");
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 s = lh_plan_add_stream(p, "s", LH_ROLE_COMPUTE);
	char name[8];
	for (int i = 0; i < 5; i++) {
		g_snprintf(name, sizeof name, "k%d", i);
		guint32 k = t_kernel(g, name, 1000, 1.0);
		if (i)
			t_dep(g, k, k - 1);
	}
	t_finish(g);
	for (guint32 i = 0; i < 5; i++)
		lh_plan_run(p, s, i);
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	/* The host issues k_i at 4000 * (i + 1); each kernel (1000 ns) is done long before the next
	 * one arrives: k4 runs 20000-21000. The device is busy 5000 of 21000 ns. */
	T_SPAN(t, g, "k0", 4000, 5000);
	T_SPAN(t, g, "k4", 20000, 21000);
	LhMetrics m;
	lh_metrics_compute(t, g, hw, p, &m);
	cr_expect_eq(m.makespan, 21000);
	/* Bounds: host issue 5 * 4000 = 20000 > critical path 5000: the host binds. */
	cr_expect_float_eq(m.bounds.host_issue, 20000, 1e-9);
	cr_expect_str_eq(m.bounds.binding, "host issue");
	/* Device idle while the host issues: 0-4000, 5000-8000, ..., 17000-20000 = 4000 + 4 * 3000.
	 */
	cr_expect_eq(m.host_bound, 16000);
	lh_metrics_clear(&m);
}

static void collective_case(LhSmSharing sh, gint64 *k_end, gint64 *c_start, gint64 *c_end)
{
	g_autoptr(LhHw) hw = t_hw(sh);
	hw->link_latency_ns = 50;
	g_autoptr(LhGraph) g = lh_graph_new("g");
	guint32 k = t_kernel(g, "k", 1000, 1.0);
	/* all-reduce over 2 GPUs of 10000 bytes: wire = 2 * 1/2 * 10000 = 10000 B at 100 B/ns =
	 * 100 ns, after a 50 ns latency phase. */
	guint32 c = t_op(g, "c", LH_OP_ALL_REDUCE, 10000);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	lh_plan_run(p, lh_plan_add_stream(p, "main", LH_ROLE_COMPUTE), k);
	lh_plan_run(p, lh_plan_add_stream(p, "coll", LH_ROLE_COLLECTIVE), c);
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	*k_end = t->ops[k].end;
	*c_start = t->ops[c].start;
	*c_end = t->ops[c].end;
	cr_expect_eq(t->ops[c].engine, LH_ENGINE_LINK);
}

Test(engine, collective_waits_for_sms_under_fifo)
{
	gint64 ke, cs, ce;
	collective_case(LH_SHARING_FIFO, &ke, &cs, &ce);
	/* The kernel holds every SM until 1000; the collective, resident since 0, gets its 0.1
	 * share only then: 50 latency + 100 wire = 1150. */
	cr_expect_eq(ke, 1000);
	cr_expect_eq(cs, 0);
	cr_expect_eq(ce, 1150);
}

Test(engine, collective_shares_sms_under_fair)
{
	gint64 ke, cs, ce;
	collective_case(LH_SHARING_FAIR, &ke, &cs, &ce);
	/* fair: SM demand 1.0 r + 0.1 r = 1 gives r = 1/1.1 for both (the link, 1 r <= 1, is not
	 * the limit). Latency 50 / (1/1.1) = 55, wire 100 * 1.1 = 110: the collective ends at 165.
	 * The kernel did 165 / 1.1 = 150 by then; its other 850 at rate 1 end at 1015. */
	cr_expect_eq(ce, 165);
	cr_expect_eq(ke, 1015);
}

Test(engine, collectives_split_the_link_evenly)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhGraph) g = lh_graph_new("g");
	/* Two all-gathers over 2 GPUs of 20000 B: wire (n-1)/n * 20000 = 10000 B = 100 ns alone.
	 * Together each gets half the link: both end at 200. */
	guint32 a = t_op(g, "a", LH_OP_ALL_GATHER, 20000);
	guint32 b = t_op(g, "b", LH_OP_ALL_GATHER, 20000);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	lh_plan_run(p, lh_plan_add_stream(p, "c0", LH_ROLE_COLLECTIVE), a);
	lh_plan_run(p, lh_plan_add_stream(p, "c1", LH_ROLE_COLLECTIVE), b);
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	T_SPAN(t, g, "a", 0, 200);
	T_SPAN(t, g, "b", 0, 200);
}

Test(engine, resident_kernel_cap)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	hw->max_resident_kernels = 1;
	g_autoptr(LhGraph) g = lh_graph_new("g");
	t_kernel(g, "a", 1000, 0.25);
	t_kernel(g, "b", 1000, 0.25);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	two_streams(g, p, "a", "b");
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	/* Only one kernel may be resident: b waits in the SM line and starts when a ends. */
	T_SPAN(t, g, "a", 0, 1000);
	T_SPAN(t, g, "b", 1000, 2000);
}

/* Memory: an input activation (1000 B, device) offloaded by a D2H copy (1000 B at 10 B/ns =
 * 100 ns) and a kernel k (1000 ns) whose output is 500 B. */
static LhTrace *offload_plan(gboolean offload_first, LhGraph **gout)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	LhGraph *g = lh_graph_new("g");
	guint32 act = lh_graph_add_op(g, "act", LH_OP_INPUT);
	lh_graph_op_mut(g, act)->out_bytes = 1000;
	guint32 d = t_op(g, "off", LH_OP_COPY_D2H, 1000);
	lh_graph_op_mut(g, d)->out_bytes = 1000;
	t_dep(g, d, act);
	guint32 k = t_kernel(g, "k", 1000, 1.0);
	lh_graph_op_mut(g, k)->out_bytes = 500;
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 s0 = lh_plan_add_stream(p, "main", LH_ROLE_COMPUTE);
	guint32 s1 = lh_plan_add_stream(p, "d2h", LH_ROLE_D2H);
	if (offload_first) {
		lh_plan_run(p, s1, d);
		lh_plan_link(p, s1, s0);
		lh_plan_run(p, s0, k);
	} else {
		lh_plan_run(p, s0, k);
		lh_plan_link(p, s0, s1);
		lh_plan_run(p, s1, d);
	}
	*gout = g;
	return t_sim(g, hw, p);
}

Test(engine, peak_memory_with_offload)
{
	LhGraph *g;
	{
		g_autoptr(LhTrace) t = offload_plan(TRUE, &g);
		/* act lives from 0; the copy ends at 100 and frees it (its last consumer); then k
		 * starts and allocates 500. Peak: 1000 B at t=0. Host: the copy's 1000 B. */
		T_SPAN(t, g, "off", 0, 100);
		T_SPAN(t, g, "k", 100, 1100);
		cr_expect_eq(t->peak_device, 1000);
		cr_expect_eq(t->peak_device_t, 0);
		cr_expect_eq(t->peak_host, 1000);
		/* Curve: at 0, act's 1000 B on the device and the copy's 1000 B output on the host
		 * (allocated when the copy starts at 0); at 100, act freed and k allocated in the
		 * same instant: one point, the value at the end of the instant. k's output has no
		 * consumer and lives to the end, so nothing changes after. */
		cr_assert_eq(t->mem->len, 2);
		const LhMemPoint *m0 = &g_array_index(t->mem, LhMemPoint, 0);
		const LhMemPoint *m1 = &g_array_index(t->mem, LhMemPoint, 1);
		cr_expect(m0->t == 0 && m0->device_bytes == 1000 && m0->host_bytes == 1000);
		cr_expect(m1->t == 100 && m1->device_bytes == 500 && m1->host_bytes == 1000);
		lh_graph_free(g);
	}
	{
		g_autoptr(LhTrace) t = offload_plan(FALSE, &g);
		/* k first: act (1000) and k's output (500) are live together at t=0: peak 1500. */
		cr_expect_eq(t->peak_device, 1500);
		cr_expect_eq(t->peak_device_t, 0);
		lh_graph_free(g);
	}
}

Test(engine, memory_over_capacity_warns_or_fails)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	hw->memory_gib = 1e-6; /* 1073.741824 B, truncated to 1073 */
	g_autoptr(LhGraph) g = lh_graph_new("g");
	guint32 k = t_kernel(g, "big", 1000, 1.0);
	lh_graph_op_mut(g, k)->out_bytes = 2000;
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	lh_plan_run(p, lh_plan_add_stream(p, "s", LH_ROLE_COMPUTE), k);
	gboolean over = FALSE;
	g_autoptr(LhTrace) t = lh_simulate(g, hw, p, NULL, &over, NULL);
	cr_assert_not_null(t);
	cr_expect(over);
	LhSimOptions strict = {.strict_memory = TRUE};
	g_autoptr(GError) e = NULL;
	cr_expect_null(lh_simulate(g, hw, p, &strict, NULL, &e));
	cr_assert_not_null(e);
	cr_expect_eq(e->code, LH_ENGINE_ERROR_MEMORY);
	cr_expect(strstr(e->message, "'big'") != NULL, "%s", e->message);
}

/* s0: wait e1, signal e0; s1: wait e0, signal e1: each waits for the other. */
static LhPlan *deadlock_plan(LhGraph *g)
{
	LhPlan *p = lh_plan_new();
	guint32 s0 = lh_plan_add_stream(p, "left", LH_ROLE_COMPUTE);
	guint32 s1 = lh_plan_add_stream(p, "right", LH_ROLE_COMPUTE);
	guint32 e0 = lh_plan_new_event(p), e1 = lh_plan_new_event(p);
	lh_plan_wait(p, s0, e1);
	lh_plan_run(p, s0, t_id(g, "a"));
	lh_plan_signal(p, s0, e0);
	lh_plan_wait(p, s1, e0);
	lh_plan_run(p, s1, t_id(g, "b"));
	lh_plan_signal(p, s1, e1);
	return p;
}

Test(engine, deadlock_names_stream_and_event)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhGraph) g = lh_graph_new("g");
	t_kernel(g, "a", 10, 1.0);
	t_kernel(g, "b", 10, 1.0);
	t_finish(g);
	g_autoptr(LhPlan) p = deadlock_plan(g);
	/* Validation finds it before anything runs. */
	g_autoptr(GError) e = NULL;
	cr_expect_null(lh_simulate(g, hw, p, NULL, NULL, &e));
	cr_assert_not_null(e);
	cr_expect_eq(e->code, LH_ENGINE_ERROR_DEADLOCK);
	cr_expect(strstr(e->message, "'left'") && strstr(e->message, "'right'") &&
	              strstr(e->message, "e0") && strstr(e->message, "e1"),
	          "%s", e->message);
	/* And the engine itself reports it when validation is skipped. */
	g_autoptr(GError) e2 = NULL;
	LhSimOptions skip = {.skip_validate = TRUE};
	cr_expect_null(lh_simulate(g, hw, p, &skip, NULL, &e2));
	cr_assert_not_null(e2);
	cr_expect_eq(e2->code, LH_ENGINE_ERROR_DEADLOCK);
	cr_expect(strstr(e2->message, "stream 'left'") && strstr(e2->message, "e1") &&
	              strstr(e2->message, "stream 'right'") && strstr(e2->message, "e0"),
	          "%s", e2->message);
}

Test(engine, host_sync_blocks_the_host)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	hw->launch_ns = 100;
	g_autoptr(LhGraph) g = lh_graph_new("g");
	t_kernel(g, "a", 1000, 0.5);
	t_kernel(g, "b", 1000, 0.5);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 s0 = lh_plan_add_stream(p, "s0", LH_ROLE_COMPUTE);
	guint32 s1 = lh_plan_add_stream(p, "s1", LH_ROLE_COMPUTE);
	lh_plan_run(p, s0, t_id(g, "a"));
	lh_plan_sync(p, s0);
	lh_plan_host(p, 500);
	lh_plan_run(p, s1, t_id(g, "b"));
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	/* a issued at 100, runs 100-1100. The sync releases the host at 1100; host 500 brings it
	 * to 1600; run b is issued at 1700 and runs 1700-2700. */
	T_SPAN(t, g, "a", 100, 1100);
	cr_expect_eq(t->cmd_issue[1], 1100);
	T_SPAN(t, g, "b", 1700, 2700);
}

Test(engine, roofline_duration_from_flops_and_bytes)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	hw->kernel_overhead_ns = 2000;
	g_autoptr(LhGraph) g = lh_graph_new("g");
	guint32 k = lh_graph_add_op(g, "k", LH_OP_KERNEL);
	lh_graph_op_mut(g, k)->flops = 5e6; /* 5e6 / 1000 FLOP/ns = 5000 ns */
	lh_graph_op_mut(g, k)->bytes = 3e6; /* 3e6 / 1000 B/ns = 3000 ns: compute-bound */
	guint32 d = t_op(g, "d", LH_OP_COPY_D2D, 1000000);
	t_dep(g, d, k);
	t_finish(g);
	/* T = max(5000, 3000) + 2000 = 7000; copy-d2d: bytes 2 * 1e6 = 2000 ns + 2000 = 4000. */
	cr_expect_float_eq(lh_op_standalone_ns(lh_graph_op(g, k), hw), 7000, 1e-9);
	cr_expect_float_eq(lh_op_standalone_ns(lh_graph_op(g, d), hw), 4000, 1e-9);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 s = lh_plan_add_stream(p, "s", LH_ROLE_COMPUTE);
	lh_plan_run(p, s, k);
	lh_plan_run(p, s, d);
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	T_SPAN(t, g, "k", 0, 7000);
	T_SPAN(t, g, "d", 7000, 11000);
	cr_expect_eq(t->ops[d].engine, LH_ENGINE_SM);
}

Test(engine, same_inputs_same_trace)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	LhRandomDagOptions o;
	lh_random_dag_options_init(&o);
	o.n_ops = 400;
	o.seed = 7;
	g_autoptr(LhGraph) g = lh_gen_random_dag(&o);
	g_autoptr(LhPlan) p = lh_scheduler_run(&lh_sched_serial, g, hw, NULL, NULL, NULL);
	cr_assert_not_null(p);
	g_autoptr(LhTrace) t1 = t_sim(g, hw, p);
	g_autoptr(LhTrace) t2 = t_sim(g, hw, p);
	g_autofree char *j1 = lh_trace_to_chrome_json(t1, g, p);
	g_autofree char *j2 = lh_trace_to_chrome_json(t2, g, p);
	cr_expect_str_eq(j1, j2);
	cr_expect(memcmp(t1->ops, t2->ops, sizeof(LhOpTiming) * t1->n_ops) == 0);
}

Test(engine, op_beyond_the_time_range_is_an_error_not_a_deadlock)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhGraph) g = lh_graph_new("g");
	/* 1e25 FLOP at 1000 FLOP/ns = 1e22 ns, far beyond the engine's 1e17 ns. */
	guint32 k = lh_graph_add_op(g, "huge", LH_OP_KERNEL);
	lh_graph_op_mut(g, k)->flops = 1e25;
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	lh_plan_run(p, lh_plan_add_stream(p, "s", LH_ROLE_COMPUTE), k);
	g_autoptr(GError) e = NULL;
	cr_expect_null(lh_simulate(g, hw, p, NULL, NULL, &e));
	cr_assert_not_null(e);
	cr_expect_eq(e->code, LH_ENGINE_ERROR_INVALID);
	cr_expect(strstr(e->message, "'huge'") && strstr(e->message, "beyond"), "%s", e->message);
}

/* duration_ns 1 with 1e24 bytes: HBM use 1e24 B / 1 ns / 1000 B/ns = 1e21, so even alone the
 * kernel runs at rate 1e-21, below the 1e-9 floor: taken as 0, it never ended and the run
 * failed as a deadlock. Its real standalone time is 1 ns * 1e21 = 1e21 ns, beyond 1e17. */
Test(engine, hbm_bound_kernel_beyond_the_range_is_an_error_not_a_deadlock)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhGraph) g = lh_graph_new("g");
	guint32 k = t_kernel(g, "hbm", 1, 1.0);
	lh_graph_op_mut(g, k)->bytes = 1e24;
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	lh_plan_run(p, lh_plan_add_stream(p, "s", LH_ROLE_COMPUTE), k);
	g_autoptr(GError) e = NULL;
	cr_expect_null(lh_simulate(g, hw, p, NULL, NULL, &e));
	cr_assert_not_null(e);
	cr_expect_eq(e->code, LH_ENGINE_ERROR_INVALID, "%s", e->message);
	cr_expect_str_eq(e->message,
	                 "op 'hbm': its standalone duration on test, 1e+21 ns, is beyond "
	                 "the engine's range of 1e+17 ns (about 3 years): check its "
	                 "flops, bytes, size or duration_ns");
}

/* docs/engine.md: same-instant dispatches go in plan order, lowest command index first, over
 * all queues. Streams s0 and s2 share queue 0 (hw_queues 2), s1 has queue 1. All three runs
 * are issued at t = 0 (no costs) and can leave at once. In plan order: a (cmd 0), b (cmd 1),
 * c (cmd 2). fifo sharing, sm 1: the first resident kernel takes every SM, so they run one
 * after another in dispatch order: a 0-1000, b 1000-2000, c 2000-3000. The engine used to
 * empty queue 0 first (a, then c) before b: c ended at 2000, b at 3000. */
Test(engine, same_instant_dispatches_in_plan_order_across_queues)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	hw->hw_queues = 2;
	g_autoptr(LhGraph) g = lh_graph_new("g");
	t_kernel(g, "a", 1000, 1.0);
	t_kernel(g, "b", 1000, 1.0);
	t_kernel(g, "c", 1000, 1.0);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 s0 = lh_plan_add_stream(p, "s0", LH_ROLE_COMPUTE);
	guint32 s1 = lh_plan_add_stream(p, "s1", LH_ROLE_COMPUTE);
	guint32 s2 = lh_plan_add_stream(p, "s2", LH_ROLE_COMPUTE);
	lh_plan_run(p, s0, t_id(g, "a"));
	lh_plan_run(p, s1, t_id(g, "b"));
	lh_plan_run(p, s2, t_id(g, "c"));
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	/* All three are resident from 0 (dispatched then); they end in plan order. */
	T_SPAN(t, g, "a", 0, 1000);
	T_SPAN(t, g, "b", 0, 2000);
	T_SPAN(t, g, "c", 0, 3000);
}

/* The tie order on random plans, against a reference written from docs/engine.md alone. With
 * no host or event costs every command is issued at t = 0; with fifo sharing and sm 1 the
 * first resident kernel takes every SM, so kernels run one at a time in dispatch order. The
 * reference: at each instant, dispatch the queue head with the lowest command index that can
 * leave (its stream has nothing running, a wait's event has fired), again and again; then the
 * next kernel in line runs; when it ends its stream frees, and so on. A dispatched run starts
 * (is resident) at once. Checked: every start and end. */
Test(engine, tie_order_matches_a_reference_on_random_plans)
{
	g_autoptr(GRand) r = g_rand_new_with_seed(13);
	for (int trial = 0; trial < 400; trial++) {
		guint n = (guint)g_rand_int_range(r, 2, 12);
		guint S = (guint)g_rand_int_range(r, 1, 6);
		guint Q = (guint)g_rand_int_range(r, 1, 5);
		g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
		hw->hw_queues = Q;
		g_autoptr(LhGraph) g = lh_graph_new("g");
		gint64 dur[16];
		for (guint i = 0; i < n; i++) {
			char name[8];
			g_snprintf(name, sizeof name, "k%u", i);
			dur[i] = g_rand_int_range(r, 1, 1000);
			t_kernel(g, name, dur[i], 1.0);
		}
		t_finish(g);
		g_autoptr(LhPlan) p = lh_plan_new();
		for (guint s = 0; s < S; s++) {
			char name[8];
			g_snprintf(name, sizeof name, "s%u", s);
			lh_plan_add_stream(p, name, LH_ROLE_COMPUTE);
		}
		/* Runs in random order on random streams, with signals and later waits between. */
		guint32 order[16];
		t_permutation(r, order, n);
		guint ran = 0;
		while (ran < n) {
			int what = g_rand_int_range(r, 0, 4);
			guint32 s = (guint32)g_rand_int_range(r, 0, (gint32)S);
			if (what == 0)
				lh_plan_signal(p, s, lh_plan_new_event(p));
			else if (what == 1 && lh_plan_n_events(p))
				lh_plan_wait(
				    p, s,
				    (guint32)g_rand_int_range(r, 0, (gint32)lh_plan_n_events(p)));
			else
				lh_plan_run(p, s, order[ran++]);
		}
		/* The reference. */
		guint32 nc = lh_plan_n_cmds(p), Qe = MIN(Q, S);
		gint64 start[16], end[16];
		guint8 fired[64] = {0}, done[256] = {0};
		gint32 inflight[8];
		for (guint s = 0; s < S; s++)
			inflight[s] = -1;
		guint32 line[16], lh = 0, ll = 0;
		gint64 t = 0;
		gint32 running = -1;
		for (;;) {
			for (;;) {
				guint32 best = G_MAXUINT32;
				for (guint32 q = 0; q < Qe; q++) {
					/* The head: the first command of this queue not yet gone.
					 */
					for (guint32 c = 0; c < nc; c++) {
						const LhCmd *cmd = lh_plan_cmd(p, c);
						if (cmd->stream % Qe != q || done[c])
							continue;
						gboolean can =
						    inflight[cmd->stream] < 0 &&
						    (cmd->kind != LH_CMD_WAIT || fired[cmd->arg]);
						if (can && c < best)
							best = c;
						break;
					}
				}
				if (best == G_MAXUINT32)
					break;
				const LhCmd *cmd = lh_plan_cmd(p, best);
				done[best] = 1;
				if (cmd->kind == LH_CMD_RUN) {
					inflight[cmd->stream] = (gint32)cmd->arg;
					start[cmd->arg] = t;
					line[ll++] = (guint32)cmd->arg;
				} else if (cmd->kind == LH_CMD_SIGNAL) {
					fired[cmd->arg] = 1;
				}
			}
			if (running < 0 && lh < ll)
				running = (gint32)line[lh++];
			if (running < 0)
				break;
			t += dur[running];
			end[running] = t;
			for (guint s = 0; s < S; s++)
				if (inflight[s] == running)
					inflight[s] = -1;
			running = -1;
		}
		/* Every wait follows its signal in plan order, so the lowest pending command can
		 * always go: no deadlock, and the plan is valid (lh_simulate validates it). */
		g_autoptr(GError) e = NULL;
		g_autoptr(LhTrace) tr = lh_simulate(g, hw, p, NULL, NULL, &e);
		cr_assert_not_null(tr, "trial %d: %s", trial, e->message);
		for (guint i = 0; i < n; i++) {
			cr_assert_eq(tr->ops[i].start, start[i],
			             "trial %d: k%u start %" G_GINT64_FORMAT
			             " != %" G_GINT64_FORMAT,
			             trial, i, tr->ops[i].start, start[i]);
			cr_assert_eq(tr->ops[i].end, end[i],
			             "trial %d: k%u end %" G_GINT64_FORMAT " != %" G_GINT64_FORMAT,
			             trial, i, tr->ops[i].end, end[i]);
		}
	}
}

/* 200 chained kernels of 9e16 ns: each is inside the engine's 1e17 ns per op, but together
 * they end at 1.8e19 ns, beyond 2^63 ns: the clock wrapped and the makespan came out below
 * the lower bound, with no error. Kernel k (from 0) ends at (k + 1) * 9e16; the first end
 * past LH_MAX_TIME_NS = 4e18 is k = 44 (45 * 9e16 = 4.05e18; 44 * 9e16 = 3.96e18 fits). */
Test(engine, times_beyond_the_range_are_an_input_error)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhGraph) g = lh_graph_new("g");
	for (int k = 0; k < 200; k++) {
		char name[8];
		g_snprintf(name, sizeof name, "k%d", k);
		guint32 i = t_kernel(g, name, G_GINT64_CONSTANT(90000000000000000), 1.0);
		if (k)
			t_dep(g, i, i - 1);
	}
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 s = lh_plan_add_stream(p, "s0", LH_ROLE_COMPUTE);
	for (guint32 k = 0; k < 200; k++)
		lh_plan_run(p, s, k);
	g_autoptr(GError) e = NULL;
	g_autoptr(LhTrace) t = lh_simulate(g, hw, p, NULL, NULL, &e);
	cr_assert_null(t, "simulated: makespan %" G_GINT64_FORMAT, t ? t->ops[199].end : 0);
	cr_expect(g_error_matches(e, LH_ENGINE_ERROR, LH_ENGINE_ERROR_INVALID), "%s", e->message);
	cr_expect(g_str_has_prefix(e->message, "op 'k44' would end at t = 4.05e+18 ns, beyond the "
	                                       "engine's time range"),
	          "%s", e->message);
	/* The host: a plan file holds host commands of at most 1e15 ns, but not their sum. With
	 * 5000 of them, command j (from 0) is issued at (j + 1) * 1e15: j = 3999 at 4e18 exactly
	 * (in range), j = 4000 would be at 4.001e18 ("4e+18" at 3 digits). */
	g_autoptr(LhPlan) h = lh_plan_new();
	lh_plan_add_stream(h, "s0", LH_ROLE_COMPUTE);
	for (int k = 0; k < 5000; k++)
		lh_plan_host(h, G_GUINT64_CONSTANT(1000000000000000));
	g_autoptr(LhGraph) g2 = lh_graph_new("g2");
	t_kernel(g2, "a", 10, 1.0);
	t_finish(g2);
	lh_plan_run(h, 0, 0);
	g_clear_error(&e);
	g_autoptr(LhTrace) t2 = lh_simulate(g2, hw, h, NULL, NULL, &e);
	cr_assert_null(t2);
	cr_expect(g_str_has_prefix(e->message, "the host would issue its next command at t = "
	                                       "4e+18 ns"),
	          "%s", e->message);
}

/* Two inputs of 5e18 bytes each: 1e19 bytes in use is beyond 2^63 - 1 (9.22e18); the sum
 * wrapped to a negative number of bytes in use. Inputs are allocated at t = 0 in op order, so
 * the second one is named. */
Test(engine, memory_beyond_63_bits_is_an_input_error)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhGraph) g = lh_graph_new("g");
	guint32 a = lh_graph_add_op(g, "a", LH_OP_INPUT);
	guint32 b = lh_graph_add_op(g, "b", LH_OP_INPUT);
	lh_graph_op_mut(g, a)->out_bytes = G_GUINT64_CONSTANT(5000000000000000000);
	lh_graph_op_mut(g, b)->out_bytes = G_GUINT64_CONSTANT(5000000000000000000);
	guint32 k = t_kernel(g, "k", 10, 1.0);
	t_dep(g, k, a);
	t_dep(g, k, b);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	lh_plan_run(p, lh_plan_add_stream(p, "s0", LH_ROLE_COMPUTE), k);
	g_autoptr(GError) e = NULL;
	g_autoptr(LhTrace) t = lh_simulate(g, hw, p, NULL, NULL, &e);
	cr_assert_null(t, "simulated: peak %" G_GINT64_FORMAT, t ? t->peak_device : 0);
	cr_expect_str_eq(e->message, "op 'b': its output of 5000000000000000000 bytes would take "
	                             "the device memory in use beyond 2^63 bytes");
}

/* A graph without ops and a plan of one host command (the engine waits for its trace's arrays
 * to be written only where a command needs them: here there is no op to wait for). The host is
 * busy 5 ns and issues it then: t_hw() has no step overhead. */
Test(engine, no_ops_and_a_host_command)
{
	g_autoptr(LhGraph) g = lh_graph_new("empty");
	t_finish(g);
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhPlan) p = lh_plan_new();
	lh_plan_add_stream(p, "s", LH_ROLE_COMPUTE);
	lh_plan_host(p, 5);
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	cr_assert_eq(t->n_ops, 0);
	cr_assert_eq(t->n_cmds, 1);
	cr_assert_eq(t->cmd_issue[0], 5);
	cr_assert_eq(t->host_end, 5);
}
