/* lhsim tests — rules of docs/engine.md that no other test pinned down (issue 15, item 5):
 * each test checks one rule with times worked out by hand in the comment above it, so that a
 * small change to the rule (tests/mutants/) changes a checked number.
 *
 * The hardware is t_hw() (tests/helpers.c): 100 SMs, 1000 FLOP/ns, HBM 1000 B/ns, no launch,
 * event, overhead or latency cost unless a test sets one; 8 queues; one copy engine per
 * direction; PCIe 10 B/ns alone and 8 B/ns duplex; link 100 B/ns; collectives take 0.1 of the
 * SMs. A kernel with duration_ns has exactly that standalone time.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"

/* "Host costs step_overhead_ns, launch_ns, event_ns are rounded to the nearest nanosecond
 * once, when the run starts." */
Test(rules_engine, host_costs_round_to_the_nearest_ns)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	hw->step_overhead_ns = 20.5;
	hw->launch_ns = 100.4;
	hw->event_ns = 10.6;
	g_autoptr(LhGraph) g = lh_graph_new("g");
	guint32 a = t_kernel(g, "a", 10, 0.5);
	guint32 b = t_kernel(g, "b", 10, 0.5);
	t_dep(g, b, a);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 s0 = lh_plan_add_stream(p, "s0", LH_ROLE_COMPUTE);
	guint32 s1 = lh_plan_add_stream(p, "s1", LH_ROLE_COMPUTE);
	guint32 e = lh_plan_new_event(p);
	lh_plan_run(p, s0, a);
	lh_plan_signal(p, s0, e);
	lh_plan_wait(p, s1, e);
	lh_plan_run(p, s1, b);
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	/* Rounded: step 20.5 -> 21 (halves away from zero), launch 100.4 -> 100, event 10.6 -> 11.
	 * Issues: run a at 21 + 100 = 121, signal at 121 + 11 = 132, wait at 132 + 11 = 143, run
	 * b at 143 + 100 = 243. (Truncating gives 120, 130, 140, 240; rounding up 122, 133, 144,
	 * 245.) a runs 121-131; b, issued at 243, runs 243-253. */
	cr_expect_eq(t->cmd_issue[0], 121);
	cr_expect_eq(t->cmd_issue[1], 132);
	cr_expect_eq(t->cmd_issue[2], 143);
	cr_expect_eq(t->cmd_issue[3], 243);
	T_SPAN(t, g, "a", 121, 131);
	T_SPAN(t, g, "b", 243, 253);
	cr_expect_eq(t->host_end, 243);
}

/* "A free engine takes the next copy in line (the lowest-numbered free engine first)." */
Test(rules_engine, lowest_free_copy_engine_first)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	hw->copy_engines_h2d = 3;
	g_autoptr(LhGraph) g = lh_graph_new("g");
	t_op(g, "a", LH_OP_COPY_H2D, 30000);
	t_op(g, "b", LH_OP_COPY_H2D, 3000);
	t_op(g, "c", LH_OP_COPY_H2D, 3000);
	t_op(g, "d", LH_OP_COPY_H2D, 3000);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 s0 = lh_plan_add_stream(p, "s0", LH_ROLE_H2D);
	guint32 s1 = lh_plan_add_stream(p, "s1", LH_ROLE_H2D);
	guint32 s2 = lh_plan_add_stream(p, "s2", LH_ROLE_H2D);
	lh_plan_run(p, s0, t_id(g, "a"));
	lh_plan_run(p, s1, t_id(g, "b"));
	lh_plan_run(p, s2, t_id(g, "c"));
	lh_plan_run(p, s2, t_id(g, "d"));
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	/* a, b, c enter engines 0, 1, 2 at 0 in line order; three byte phases share PCIe: each
	 * at 10/3 B/ns. b and c (3000 B) end at 900, freeing engines 1 and 2 at once; a has 30000
	 * - 3000 = 27000 B left. d (after c on s2) dispatches at 900 and takes engine 1, the
	 * lowest free one (not 2, the engine its stream's last copy used). a and d at 5 B/ns: d
	 * ends 900 + 3000 / 5 = 1500; a has 27000 - 3000 = 24000 left, alone at 10 B/ns: 1500 +
	 * 2400 = 3900. */
	cr_expect_eq(t_timing(t, g, "a")->engine_index, 0);
	cr_expect_eq(t_timing(t, g, "b")->engine_index, 1);
	cr_expect_eq(t_timing(t, g, "c")->engine_index, 2);
	cr_expect_eq(t_timing(t, g, "d")->engine_index, 1);
	T_SPAN(t, g, "a", 0, 3900);
	T_SPAN(t, g, "b", 0, 900);
	T_SPAN(t, g, "c", 0, 900);
	T_SPAN(t, g, "d", 900, 1500);
}

/* "duration_ns on a copy or collective replaces latency plus transfer with one phase of that
 * length, slowed like the transfer phase." */
Test(rules_engine, copy_duration_replaces_latency_and_is_slowed_like_the_transfer)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	hw->copy_engines_h2d = 2;
	hw->copy_latency_ns = 500;
	g_autoptr(LhGraph) g = lh_graph_new("g");
	/* Sizes that would take other times: 50000 B is 5000 ns at 10 B/ns. */
	guint32 x = t_op(g, "x", LH_OP_COPY_H2D, 50000);
	guint32 y = t_op(g, "y", LH_OP_COPY_H2D, 50000);
	guint32 z = t_op(g, "z", LH_OP_COPY_D2H, 50000);
	guint32 alone = t_op(g, "alone", LH_OP_COPY_H2D, 50000);
	lh_graph_op_mut(g, x)->duration_ns = 1000;
	lh_graph_op_mut(g, y)->duration_ns = 1000;
	lh_graph_op_mut(g, z)->duration_ns = 1000;
	lh_graph_op_mut(g, alone)->duration_ns = 1000;
	t_dep(g, z, x);
	t_dep(g, alone, z);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 s0 = lh_plan_add_stream(p, "s0", LH_ROLE_H2D);
	guint32 s1 = lh_plan_add_stream(p, "s1", LH_ROLE_H2D);
	guint32 s2 = lh_plan_add_stream(p, "s2", LH_ROLE_D2H);
	guint32 e1 = lh_plan_new_event(p), e2 = lh_plan_new_event(p);
	lh_plan_run(p, s0, x);
	lh_plan_signal(p, s0, e1);
	lh_plan_run(p, s1, y);
	lh_plan_wait(p, s2, e1);
	lh_plan_run(p, s2, z);
	lh_plan_signal(p, s2, e2);
	lh_plan_wait(p, s0, e2);
	lh_plan_run(p, s0, alone);
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	/* 0: x and y, 1000 ns each with no latency phase, are two H2D copies in their one phase:
	 * rate 1/2 each, both end at 2000 (not 1000, which an unslowed phase gives, nor 2500 with
	 * the 500 ns latency added).
	 * 2000: z (D2H) alone: 1000 ns -> 3000.
	 * 3000: alone, H2D, nothing else: 1000 ns -> 4000. */
	T_SPAN(t, g, "x", 0, 2000);
	T_SPAN(t, g, "y", 0, 2000);
	T_SPAN(t, g, "z", 2000, 3000);
	T_SPAN(t, g, "alone", 3000, 4000);
}

Test(rules_engine, copy_duration_takes_the_duplex_rate)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	hw->copy_latency_ns = 500;
	g_autoptr(LhGraph) g = lh_graph_new("g");
	guint32 h = t_op(g, "h", LH_OP_COPY_H2D, 50000);
	guint32 d = t_op(g, "d", LH_OP_COPY_D2H, 50000);
	lh_graph_op_mut(g, h)->duration_ns = 1000;
	lh_graph_op_mut(g, d)->duration_ns = 1000;
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	lh_plan_run(p, lh_plan_add_stream(p, "up", LH_ROLE_H2D), h);
	lh_plan_run(p, lh_plan_add_stream(p, "down", LH_ROLE_D2H), d);
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	/* Both directions at once: each at its duplex rate 8 / 10 = 0.8 of alone: 1000 / 0.8 =
	 * 1250. */
	T_SPAN(t, g, "h", 0, 1250);
	T_SPAN(t, g, "d", 0, 1250);
}

/* A kernel k (1000 ns, @sm of the SMs) on stream main, then two all-gathers c1 and c2 on
 * streams of their own, under @sharing. */
static LhTrace *kernel_and_two_gathers(LhSmSharing sharing, double sm, LhGraph **gout)
{
	g_autoptr(LhHw) hw = t_hw(sharing);
	LhGraph *g = lh_graph_new("g");
	t_kernel(g, "k", 1000, sm);
	/* All-gathers over 2 GPUs of 20000 B: wire (2-1)/2 * 20000 = 10000 B at 100 B/ns = 100 ns,
	 * no latency phase (link_latency_ns 0). */
	t_op(g, "c1", LH_OP_ALL_GATHER, 20000);
	t_op(g, "c2", LH_OP_ALL_GATHER, 20000);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	lh_plan_run(p, lh_plan_add_stream(p, "main", LH_ROLE_COMPUTE), t_id(g, "k"));
	lh_plan_run(p, lh_plan_add_stream(p, "c1", LH_ROLE_COLLECTIVE), t_id(g, "c1"));
	lh_plan_run(p, lh_plan_add_stream(p, "c2", LH_ROLE_COLLECTIVE), t_id(g, "c2"));
	*gout = g;
	return t_sim(g, hw, p);
}

/* fair: "Max-min fairness over four capacities of 1 each (SMs, HBM, link, network)". */
Test(rules_engine, fair_sharing_saturates_the_link)
{
	g_autoptr(LhGraph) g = NULL;
	g_autoptr(LhTrace) t = kernel_and_two_gathers(LH_SHARING_FAIR, 1.0, &g);
	/* Progressive filling from 0: SM demand 1 + 0.1 + 0.1 = 1.2 per unit of level, link
	 * demand 1 + 1 = 2. The link saturates first, at level min(1/1.2, 1/2) = 0.5: c1 and c2
	 * freeze at 0.5 (SMs used 0.6). k rises alone until the SMs fill: 0.5 + 0.4 / 1 = 0.9.
	 * c1, c2: 100 / 0.5 = 200. k: 200 * 0.9 = 180 done by 200, 820 left alone: 1020.
	 * (Without the link in the filling all three would freeze on the SMs at 1/1.2: the
	 * collectives would end at 120.) */
	T_SPAN(t, g, "c1", 0, 200);
	T_SPAN(t, g, "c2", 0, 200);
	T_SPAN(t, g, "k", 0, 1020);
}

/* "Stream s feeds hardware queue s mod hw_queues." More streams than queues: stream 2 shares
 * queue 0 with stream 0 when there are 2 queues, and has its own with 3. */
static LhTrace *three_streams(guint32 queues, LhGraph **gout)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	hw->hw_queues = queues;
	LhGraph *g = lh_graph_new("g");
	t_kernel(g, "k1", 1000, 0.25);
	t_kernel(g, "k2", 1000, 0.25);
	t_kernel(g, "k3", 1000, 0.25);
	t_kernel(g, "k4", 1000, 0.25);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 s0 = lh_plan_add_stream(p, "s0", LH_ROLE_COMPUTE);
	guint32 s1 = lh_plan_add_stream(p, "s1", LH_ROLE_COMPUTE);
	guint32 s2 = lh_plan_add_stream(p, "s2", LH_ROLE_COMPUTE);
	lh_plan_run(p, s0, t_id(g, "k1"));
	lh_plan_run(p, s0, t_id(g, "k2"));
	lh_plan_run(p, s1, t_id(g, "k3"));
	lh_plan_run(p, s2, t_id(g, "k4"));
	*gout = g;
	return t_sim(g, hw, p);
}

Test(rules_engine, streams_map_to_queues_modulo_hw_queues)
{
	LhGraph *g = NULL;
	{
		g_autoptr(LhTrace) t = three_streams(2, &g);
		/* Queue 0 = streams 0 and 2 (0 mod 2, 2 mod 2): k1, k2, k4 in issue order; queue 1
		 * = stream 1: k3. k1 leaves at 0; k2 waits for k1 (its stream) until 1000, and k4
		 * waits behind k2 although stream 2 is idle: k4 1000-2000. k3 0-1000. SMs never
		 * limit (at most 3 x 0.25). */
		T_SPAN(t, g, "k1", 0, 1000);
		T_SPAN(t, g, "k2", 1000, 2000);
		T_SPAN(t, g, "k3", 0, 1000);
		T_SPAN(t, g, "k4", 1000, 2000);
		lh_graph_free(g);
	}
	{
		g_autoptr(LhTrace) t = three_streams(3, &g);
		/* Three queues, one per stream: k4 starts at 0. */
		T_SPAN(t, g, "k2", 1000, 2000);
		T_SPAN(t, g, "k4", 0, 1000);
		lh_graph_free(g);
	}
}

/* "Rates below 1e-9 are taken as 0." k (sm 1) runs beside a long kernel that leaves it
 * 1 - (1 - f) = f of the SMs for 1e10 ns. */
static gint64 starved_end(double f)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhGraph) g = lh_graph_new("g");
	t_kernel(g, "long", 10000000000, 1.0 - f);
	t_kernel(g, "k", 1000, 1.0);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	lh_plan_run(p, lh_plan_add_stream(p, "s0", LH_ROLE_COMPUTE), t_id(g, "long"));
	lh_plan_run(p, lh_plan_add_stream(p, "s1", LH_ROLE_COMPUTE), t_id(g, "k"));
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	cr_expect_eq(t->ops[t_id(g, "long")].end, 10000000000);
	return t->ops[t_id(g, "k")].end;
}

Test(rules_engine, rates_below_1e_9_are_zero)
{
	/* f = 0.9e-9: k's rate 9e-10 < 1e-9 is 0: it does nothing until long ends at 1e10, then
	 * runs 1000 alone: 1e10 + 1000. (At 9e-10 it would have done 1e10 * 9e-10 = 9 ns of work
	 * and end at 1e10 + 991.) */
	cr_expect_eq(starved_end(0.9e-9), 10000000000 + 1000);
	/* f = 1.1e-9: kept: 1e10 * 1.1e-9 = 11 ns done, 989 left: 1e10 + 989. */
	cr_expect_eq(starved_end(1.1e-9), 10000000000 + 989);
}

/* "copy-d2d (a kernel with bytes = 2 * size, sm = 0.1)". */
Test(rules_engine, copy_d2d_takes_a_tenth_of_the_sms)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhGraph) g = lh_graph_new("g");
	t_op(g, "d2d", LH_OP_COPY_D2D, 50000);
	t_kernel(g, "k", 1000, 0.95);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	lh_plan_run(p, lh_plan_add_stream(p, "s0", LH_ROLE_MEMCPY), t_id(g, "d2d"));
	lh_plan_run(p, lh_plan_add_stream(p, "s1", LH_ROLE_COMPUTE), t_id(g, "k"));
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	/* d2d: bytes 2 * 50000 = 100000 at 1000 B/ns = 100 ns, on the SM engine, rate 1 (first in
	 * start order), SMs 0.1. k (no bytes) gets min(1, 0.9 / 0.95) = 18/19: by 100 it has done
	 * 100 * 18/19 = 94.74 of 1000; the other 905.26 alone: ceil -> 906: ends 1006. (With sm
	 * 0.2 for the copy, k would get 0.8 / 0.95 and end at 100 + ceil(915.8) = 1016; with 0,
	 * at 1000; with 1, at 1100.) */
	cr_expect_eq(t_timing(t, g, "d2d")->engine, LH_ENGINE_SM);
	T_SPAN(t, g, "d2d", 0, 100);
	T_SPAN(t, g, "k", 0, 1006);
}

/* fifo: "what an SM-starved one leaves goes to later ones". A kernel that leaves 0.03 of the
 * SMs is started first; then two collectives in their wire phase. */
Test(rules_engine, fifo_collective_starved_of_sms_takes_only_its_share_of_the_link)
{
	g_autoptr(LhGraph) g = NULL;
	g_autoptr(LhTrace) t = kernel_and_two_gathers(LH_SHARING_FIFO, 0.97, &g);
	/* Start order k, c1, c2. k: rate 1, SMs left 0.03. c1 (wire 100 ns, 2 on the link): min(1,
	 * 0.03 / 0.1 = 0.3, link 1 / 2) = 0.3; it leaves 0.7 of the link and no SMs. c2: no SMs:
	 * 0. c1 ends at ceil(100 / 0.3) = 334. Then c2 alone on the link, still behind k: min(0.3,
	 * 1 / 1) = 0.3: 334 + 334 = 668. k ends 1000. */
	T_SPAN(t, g, "k", 0, 1000);
	T_SPAN(t, g, "c1", 0, 334);
	T_SPAN(t, g, "c2", 0, 668);
}

/* The engine's own deadlock report (validation skipped) names the streams that wait behind
 * a stuck queue head (docs/engine.md, "Deadlock"). */
Test(rules_engine, deadlock_names_streams_blocked_behind_a_queue_head)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	hw->hw_queues = 1;
	g_autoptr(LhGraph) g = lh_graph_new("g");
	t_kernel(g, "k", 10, 0.5);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 a = lh_plan_add_stream(p, "a", LH_ROLE_COMPUTE);
	guint32 b = lh_plan_add_stream(p, "b", LH_ROLE_COMPUTE);
	guint32 e = lh_plan_new_event(p);
	/* One queue: a's wait is its head; b's run and the signal that would release it are
	 * behind it. */
	lh_plan_wait(p, a, e);
	lh_plan_run(p, b, t_id(g, "k"));
	lh_plan_signal(p, b, e);
	g_autoptr(GError) err = NULL;
	LhSimOptions skip = {.skip_validate = TRUE};
	LhTrace *t = lh_simulate(g, hw, p, &skip, NULL, &err);
	cr_expect_null(t);
	cr_assert_not_null(err);
	cr_expect_eq(err->code, LH_ENGINE_ERROR_DEADLOCK);
	cr_expect(strstr(err->message, "stream 'a' is stuck at command 1 (wait a e0)"), "%s",
	          err->message);
	cr_expect(strstr(err->message, "stream 'b' waits behind it in hardware queue 0"), "%s",
	          err->message);
}
