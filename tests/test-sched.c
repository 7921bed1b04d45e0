/* lhsim tests — the schedulers: lhs limits, iree partitioning, heft/cpath, bad input,
 * --explain, plugins. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "helpers.h"

/* Runs scheduler @name with NULL-terminated "k=v" strings, validates the plan. */
static LhPlan *plan_with(const char *name, const LhGraph *g, const LhHw *hw, const char **kv,
                         FILE *explain)
{
	GError *e = NULL;
	const LhScheduler *s = lh_scheduler_lookup(name, &e);
	cr_assert(s, "%s", e ? e->message : "?");
	LhPlan *p = lh_scheduler_run(s, g, hw, kv, explain, &e);
	cr_assert(p, "%s: %s", name, e ? e->message : "?");
	cr_assert(lh_plan_validate(p, g, name, &e), "%s: %s", name, e ? e->message : "?");
	return p;
}

/* Most ops of class @cls (or, with @cls = LH_CLASS_N, async kernels) running at one instant
 * in the trace. */
static guint32 max_overlap(const LhGraph *g, const LhTrace *t, int cls, gboolean kernels_only)
{
	guint32 best = 0;
	for (guint32 i = 0; i < lh_graph_n_ops(g); i++) {
		const LhOp *a = lh_graph_op(g, i);
		if ((int)lh_op_class(a) != cls || (kernels_only && a->kind != LH_OP_KERNEL))
			continue;
		/* Count ops running at a's start instant (intervals are [start, end)). */
		guint32 k = 0;
		for (guint32 j = 0; j < lh_graph_n_ops(g); j++) {
			const LhOp *b = lh_graph_op(g, j);
			if ((int)lh_op_class(b) != cls || (kernels_only && b->kind != LH_OP_KERNEL))
				continue;
			if (t->ops[j].start <= t->ops[i].start && t->ops[i].start < t->ops[j].end)
				k++;
		}
		best = MAX(best, k);
	}
	return best;
}

static guint32 streams_of_role(const LhPlan *p, LhStreamRole r)
{
	guint32 k = 0;
	for (guint32 s = 0; s < lh_plan_n_streams(p); s++)
		if (lh_plan_stream(p, s)->role == r)
			k++;
	return k;
}

/* A host-offload step: 8 layers; each layer's kernel (10 us) produces an activation that is
 * offloaded to the host; the last kernel waits for every offload. With @dus FALSE the offload
 * is a copy-d2h, latency-bound (50 us each, 4 copy engines): the copies are the bottleneck,
 * 8 x 50 us of offload against 8 x 10 us of main-stream work. With @dus TRUE it is an async
 * dynamic-update-slice fusion into a host buffer (an async kernel, 20 us, sm 0.25, output in
 * host memory), XLA's other form of host offload. */
static LhGraph *offload_graph(gboolean dus)
{
	LhGraph *g = lh_graph_new("offload");
	guint32 prev = G_MAXUINT32;
	guint32 off[8];
	for (int i = 0; i < 8; i++) {
		char name[32];
		g_snprintf(name, sizeof name, "layer%d", i);
		guint32 k = t_kernel(g, name, 10000, 1);
		if (prev != G_MAXUINT32)
			t_dep(g, k, prev);
		prev = k;
		if (dus) {
			g_snprintf(name, sizeof name, "dus%d", i);
			off[i] = t_kernel(g, name, 20000, 0.25);
			lh_graph_op_mut(g, off[i])->async = 1;
			lh_graph_op_mut(g, off[i])->out_space = LH_SPACE_HOST;
		} else {
			g_snprintf(name, sizeof name, "offload%d", i);
			off[i] = t_op(g, name, LH_OP_COPY_D2H, 1000);
		}
		t_dep(g, off[i], k);
	}
	guint32 end = t_kernel(g, "end", 10000, 1);
	t_dep(g, end, prev);
	for (int i = 0; i < 8; i++)
		t_dep(g, end, off[i]);
	t_finish(g);
	return g;
}

static LhHw *offload_hw(void)
{
	LhHw *hw = t_hw(LH_SHARING_FAIR);
	hw->copy_engines_d2h = 4;
	hw->copy_latency_ns = 50000;
	return hw;
}

Test(lhs, async_compute_limit_bounds_in_flight_and_helps)
{
	g_autoptr(LhGraph) g = offload_graph(FALSE);
	g_autoptr(LhHw) hw = offload_hw();
	gint64 ms[5] = {0};
	for (int L = 1; L <= 4; L++) {
		char kv0[64];
		g_snprintf(kv0, sizeof kv0, "async-compute-limit=%d", L);
		const char *kv[] = {kv0, NULL};
		g_autoptr(LhPlan) p = plan_with("lhs", g, hw, kv, NULL);
		g_autoptr(LhTrace) t = t_sim(g, hw, p);
		LhMetrics m;
		lh_metrics_compute(t, g, hw, p, &m);
		ms[L] = m.makespan;
		lh_metrics_clear(&m);
		guint32 in_flight = max_overlap(g, t, LH_CLASS_ASYNC_COMPUTE, FALSE);
		cr_assert_leq(in_flight, (guint32)L, "limit %d: %u async-compute ops in flight", L,
		              in_flight);
		cr_assert_leq(streams_of_role(p, LH_ROLE_ASYNC_COMPUTE), (guint32)L);
	}
	for (int L = 2; L <= 4; L++)
		cr_assert_leq(ms[L], ms[L - 1], "makespan rose from limit %d (%ld) to %d (%ld)",
		              L - 1, (long)ms[L - 1], L, (long)ms[L]);
	cr_assert_lt(ms[4], ms[2], "limit 4 (%ld ns) is not faster than limit 2 (%ld ns)",
	             (long)ms[4], (long)ms[2]);
}

Test(lhs, compute_streams_are_used_and_overlap)
{
	g_autoptr(LhGraph) g = offload_graph(TRUE);
	g_autoptr(LhHw) hw = offload_hw();
	for (int cs = 3; cs <= 4; cs++) {
		char kv1[64];
		g_snprintf(kv1, sizeof kv1, "compute-streams=%d", cs);
		const char *kv[] = {"async-compute-limit=4", kv1, NULL};
		g_autoptr(LhPlan) p = plan_with("lhs", g, hw, kv, NULL);
		cr_assert_eq(streams_of_role(p, LH_ROLE_ASYNC_COMPUTE), (guint32)cs);
		g_autoptr(LhTrace) t = t_sim(g, hw, p);
		LhMetrics m;
		lh_metrics_compute(t, g, hw, p, &m);
		guint32 used = 0;
		for (guint32 s = 0; s < m.n_streams; s++)
			if (lh_plan_stream(p, s)->role == LH_ROLE_ASYNC_COMPUTE &&
			    m.stream_busy[s] > 0)
				used++;
		lh_metrics_clear(&m);
		cr_assert_eq(used, (guint32)cs, "compute-streams=%d: %u streams ran ops", cs, used);
		/* The dus kernels (sm 0.25 each) overlap, one per compute stream at most, and all
		 * compute streams are busy at once at some point. */
		guint32 k = max_overlap(g, t, LH_CLASS_ASYNC_COMPUTE, TRUE);
		cr_assert_eq(k, (guint32)cs, "compute-streams=%d: at most %u async kernels overlap",
		             cs, k);
	}
}

/* Collective-bound: 6 independent all-reduces, each after a 5 us kernel, all needed by the
 * last kernel. Each all-reduce has a 50 us link latency that does not share the link, so two
 * in flight overlap their latencies. */
Test(lhs, collective_limit)
{
	g_autoptr(LhGraph) g = lh_graph_new("coll");
	guint32 end = t_kernel(g, "end", 5000, 1);
	for (int i = 0; i < 6; i++) {
		char name[32];
		g_snprintf(name, sizeof name, "grad%d", i);
		guint32 k = t_kernel(g, name, 5000, 1);
		g_snprintf(name, sizeof name, "ar%d", i);
		guint32 ar = t_op(g, name, LH_OP_ALL_REDUCE, 100000);
		t_dep(g, ar, k);
		t_dep(g, end, ar);
	}
	t_finish(g);
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	hw->link_latency_ns = 50000;
	gint64 ms[3] = {0};
	for (int L = 1; L <= 2; L++) {
		char kv0[64];
		g_snprintf(kv0, sizeof kv0, "collective-limit=%d", L);
		const char *kv[] = {kv0, NULL};
		g_autoptr(LhPlan) p = plan_with("lhs", g, hw, kv, NULL);
		g_autoptr(LhTrace) t = t_sim(g, hw, p);
		cr_assert_leq(max_overlap(g, t, LH_CLASS_COLLECTIVE, FALSE), (guint32)L);
		LhMetrics m;
		lh_metrics_compute(t, g, hw, p, &m);
		ms[L] = m.makespan;
		lh_metrics_clear(&m);
	}
	/* Limit 1: a grad kernel (5 us) before the first all-reduce, then 6 serialized
	 * all-reduces of 50 us latency + 2*(1/2)*100000 B / 100 B/ns = 1 us each, then `end`
	 * (5 us): at least 5000 + 6 * 51000 + 5000 = 316000 ns. Limit 2 overlaps latencies
	 * pairwise. */
	cr_assert_geq(ms[1], 316000);
	cr_assert_lt(ms[2], ms[1], "collective-limit 2 (%ld) not faster than 1 (%ld)", (long)ms[2],
	             (long)ms[1]);
}

Test(lhs, xla_estimator_and_explain_reasons)
{
	g_autoptr(LhGraph) g = offload_graph(FALSE);
	g_autoptr(LhHw) hw = offload_hw();
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	const char *kv[] = {"estimator=xla", NULL};
	g_autoptr(LhPlan) p = plan_with("lhs", g, hw, kv, f);
	fclose(f);
	cr_assert(strstr(buf, "estimator xla"), "%s", buf);
	cr_assert(strstr(buf, "(kScheduleDone)"), "%s", buf);
	cr_assert(strstr(buf, "done copy-d2h 'offload7'"), "%s", buf);
	free(buf);
}

/* The soft memory limit. Program order P0 P1 C0 C1 end, where Ci reads Pi's 100 MB output
 * (1 MB = 10^6 B). Bottom-up from end, C1 makes P1's buffer live (100 MB). Then C0 or P1:
 * - no pressure (limit 1 GiB: 100 MB is under half of it): kOriginalOrder takes C0 (later in
 *   program order), so both buffers are live: program P0 P1 C0 C1, peak 200 MB;
 * - memory-limit=0.15 GiB (161 MB): usage 100 MB is over half the limit, and C0 would bring
 *   it to 200 MB > 161 MB, so kMemoryPeakOverLimit takes P1: program P0 C0 P1 C1, peak
 *   100 MB. */
Test(lhs, soft_memory_limit)
{
	g_autoptr(LhGraph) g = lh_graph_new("mem");
	guint32 p0 = t_kernel(g, "P0", 1000, 1), p1 = t_kernel(g, "P1", 1000, 1);
	guint32 c0 = t_kernel(g, "C0", 1000, 1), c1 = t_kernel(g, "C1", 1000, 1);
	guint32 end = t_kernel(g, "end", 1000, 1);
	lh_graph_op_mut(g, p0)->out_bytes = 100000000;
	lh_graph_op_mut(g, p1)->out_bytes = 100000000;
	t_dep(g, c0, p0);
	t_dep(g, c1, p1);
	t_dep(g, end, c0);
	t_dep(g, end, c1);
	t_finish(g);
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	const char *none[] = {NULL};
	g_autoptr(LhPlan) a = plan_with("lhs", g, hw, none, NULL);
	g_autoptr(LhTrace) ta = t_sim(g, hw, a);
	cr_assert_eq(ta->peak_device, 200000000);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	const char *lim[] = {"memory-limit=0.15", NULL};
	g_autoptr(LhPlan) b = plan_with("lhs", g, hw, lim, f);
	fclose(f);
	g_autoptr(LhTrace) tb = t_sim(g, hw, b);
	cr_assert_eq(tb->peak_device, 100000000);
	cr_assert(strstr(buf, "run kernel 'P1' (kMemoryPeakOverLimit)"), "%s", buf);
	free(buf);
}

/* ---- iree ---- */

/* Parses "iree: region R wave W: a b c" lines into "W:a b c;" strings. */
static char *waves_of(const char *explain)
{
	GString *s = g_string_new(NULL);
	g_auto(GStrv) lines = g_strsplit(explain, "\n", -1);
	for (guint i = 0; lines[i]; i++) {
		guint r, w;
		int n = 0;
		if (sscanf(lines[i], "iree: region %u wave %u:%n", &r, &w, &n) == 2 && n > 0)
			g_string_append_printf(s, "%u:%s;", w, lines[i] + n + 1);
	}
	return g_string_free(s, FALSE);
}

static char *iree_waves(const LhGraph *g, const char *favor)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	char kv0[64];
	g_snprintf(kv0, sizeof kv0, "favor=%s", favor);
	const char *kv[] = {kv0, NULL};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	g_autoptr(LhPlan) p = plan_with("iree", g, hw, kv, f);
	fclose(f);
	char *w = waves_of(buf);
	free(buf);
	return w;
}

/* The function of IREE's schedule_concurrency.mlir tests partitioningForMinPeakMemory and
 * partitioningForMaxConcurrency (iree-org/iree,
 * compiler/src/iree/compiler/Dialect/Stream/Transforms/test/schedule_concurrency.mlir):
 *   %1 = splat            (1280 B)       -> splat0
 *   %2 = dispatch_0(%1, %arg2)           -> d0
 *   %3 = splat            (20 B)         -> splat1
 *   %4 = dispatch_1(%arg3, %3)           -> d1
 *   %5 = dispatch_2(%2, %4)              -> d2 */
static LhGraph *iree_test_graph(void)
{
	LhGraph *g = lh_graph_new("iree");
	guint32 a0 = lh_graph_add_op(g, "arg0", LH_OP_INPUT);
	guint32 a1 = lh_graph_add_op(g, "arg1", LH_OP_INPUT);
	guint32 s0 = t_kernel(g, "splat0", 1000, 0.5);
	guint32 d0 = t_kernel(g, "d0", 1000, 0.5);
	guint32 s1 = t_kernel(g, "splat1", 1000, 0.5);
	guint32 d1 = t_kernel(g, "d1", 1000, 0.5);
	guint32 d2 = t_kernel(g, "d2", 1000, 0.5);
	t_dep(g, d0, s0);
	t_dep(g, d0, a1);
	t_dep(g, d1, a0);
	t_dep(g, d1, s1);
	t_dep(g, d2, d0);
	t_dep(g, d2, d1);
	t_finish(g);
	return g;
}

Test(iree, partitioning_for_min_peak_memory)
{
	/* CHECKs: splat0 alone; concurrent {dispatch_0, splat1}; dispatch_1; dispatch_2. */
	g_autoptr(LhGraph) g = iree_test_graph();
	g_autofree char *w = iree_waves(g, "min-peak-memory");
	cr_assert_str_eq(w, "0:splat0;1:d0 splat1;2:d1;3:d2;");
}

Test(iree, partitioning_for_max_concurrency)
{
	/* CHECKs: concurrent {splat0, splat1}; concurrent {dispatch_0, dispatch_1}; dispatch_2. */
	g_autoptr(LhGraph) g = iree_test_graph();
	g_autofree char *w = iree_waves(g, "max-concurrency");
	cr_assert_str_eq(w, "0:splat0 splat1;1:d0 d1;2:d2;");
}

Test(iree, debug_and_none_turn_waves_off)
{
	g_autoptr(LhGraph) g = iree_test_graph();
	g_autofree char *w = iree_waves(g, "debug");
	/* One op per wave, program order. */
	cr_assert_str_eq(w, "0:splat0;1:d0;2:splat1;3:d1;4:d2;");
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	const char *kv[] = {"concurrency=none", NULL};
	g_autoptr(LhPlan) p = plan_with("iree", g, hw, kv, NULL);
	cr_assert_eq(lh_plan_n_streams(p), 1);
}

/* s -> l1 -> l2 -> l3 -> j, s -> r1 -> j; r1 costs 3 units, the rest 1 (unit = 1 us), each
 * kernel sm 0.5 on the ideal machine (two kernels side by side at full speed).
 * Waves (either favor): s | l1 | l2 | l3 r1 | j = 1 + 1 + 1 + 3 + 1 = 7 units.
 * Events: s, then l1 l2 l3 beside r1 (3), then j = 1 + 3 + 1 = 5 units. */
Test(iree, unbalanced_diamond_waves_lose_to_events)
{
	lh_models_init();
	GError *e = NULL;
	g_autoptr(LhHw) hw = lh_hw_lookup("ideal", &e);
	cr_assert(hw, "%s", e ? e->message : "?");
	g_autoptr(LhGraph) g = lh_graph_new("diamond");
	guint32 s = t_kernel(g, "s", 1000, 0.5);
	guint32 l1 = t_kernel(g, "l1", 1000, 0.5), l2 = t_kernel(g, "l2", 1000, 0.5);
	guint32 l3 = t_kernel(g, "l3", 1000, 0.5), r1 = t_kernel(g, "r1", 3000, 0.5);
	guint32 j = t_kernel(g, "j", 1000, 0.5);
	t_dep(g, l1, s);
	t_dep(g, l2, l1);
	t_dep(g, l3, l2);
	t_dep(g, r1, s);
	t_dep(g, j, l3);
	t_dep(g, j, r1);
	t_finish(g);
	const char *fav[] = {"favor=min-peak-memory", "favor=max-concurrency"};
	for (int k = 0; k < 2; k++) {
		const char *kv[] = {fav[k], NULL};
		g_autoptr(LhPlan) p = plan_with("iree", g, hw, kv, NULL);
		g_autoptr(LhTrace) t = t_sim(g, hw, p);
		LhMetrics m;
		lh_metrics_compute(t, g, hw, p, &m);
		cr_assert_eq(m.makespan, 7000, "%s: %ld", fav[k], (long)m.makespan);
		lh_metrics_clear(&m);
	}
	const char *ev[] = {"cpath", "heft"};
	for (int k = 0; k < 2; k++) {
		const char *kv[] = {"streams=2", NULL};
		g_autoptr(LhPlan) p = plan_with(ev[k], g, hw, kv, NULL);
		g_autoptr(LhTrace) t = t_sim(g, hw, p);
		LhMetrics m;
		lh_metrics_compute(t, g, hw, p, &m);
		cr_assert_eq(m.makespan, 5000, "%s: %ld", ev[k], (long)m.makespan);
		lh_metrics_clear(&m);
	}
}

Test(iree, each_region_charges_a_submit)
{
	g_autoptr(LhGraph) g = iree_test_graph();
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	const char *kv[] = {"submit-ns=7000", NULL};
	g_autoptr(LhPlan) p = plan_with("iree", g, hw, kv, NULL);
	/* All ops are streamable on one device: one region, one submission. */
	guint32 hosts = 0;
	for (guint32 i = 0; i < lh_plan_n_cmds(p); i++)
		if (lh_plan_cmd(p, i)->kind == LH_CMD_HOST) {
			hosts++;
			cr_assert_eq(lh_plan_cmd(p, i)->arg, 7000);
		}
	cr_assert_eq(hosts, 1);
}

/* ---- cpath / heft ---- */

/* Two independent chains a1->a2 (1+1 units) and b (3 units) plus c (1 unit) on 2 streams.
 * b-levels: a1 2, a2 1, b 3, c 1. cpath at t=0 takes b (3) and a1 (2); a1 ends at 1, a2
 * (b-level 1, earlier in program order than c) runs 1..2, c 2..3: makespan 3 units. */
Test(cpath, uses_b_level_order)
{
	lh_models_init();
	g_autoptr(LhHw) hw = lh_hw_lookup("ideal", NULL);
	g_autoptr(LhGraph) g = lh_graph_new("cp");
	guint32 a1 = t_kernel(g, "a1", 1000, 0.5), a2 = t_kernel(g, "a2", 1000, 0.5);
	t_kernel(g, "c", 1000, 0.5);
	t_kernel(g, "b", 3000, 0.5);
	t_dep(g, a2, a1);
	t_finish(g);
	const char *kv[] = {"streams=2", NULL};
	g_autoptr(LhPlan) p = plan_with("cpath", g, hw, kv, NULL);
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	guint32 b;
	cr_assert(lh_graph_find(g, "b", &b));
	cr_assert_eq(t->ops[b].start, 0);
	LhMetrics m;
	lh_metrics_compute(t, g, hw, p, &m);
	cr_assert_eq(m.makespan, 3000);
	lh_metrics_clear(&m);
}

Test(cpath, honours_class_limits)
{
	g_autoptr(LhGraph) g = offload_graph(TRUE);
	g_autoptr(LhHw) hw = offload_hw();
	for (int L = 1; L <= 3; L++) {
		char kv0[64];
		g_snprintf(kv0, sizeof kv0, "async-compute-limit=%d", L);
		const char *kv[] = {kv0, NULL};
		g_autoptr(LhPlan) p = plan_with("cpath", g, hw, kv, NULL);
		g_autoptr(LhTrace) t = t_sim(g, hw, p);
		cr_assert_leq(max_overlap(g, t, LH_CLASS_ASYNC_COMPUTE, FALSE), (guint32)L);
	}
}

/* heft on one stream: the upward ranks order the ops (c: 4 units; a: 2 + b's 1 = 3; b: 1),
 * and the makespan is the sum of the work, 2 + 1 + 4 = 7 units. */
Test(heft, one_stream_is_serial)
{
	lh_models_init();
	g_autoptr(LhHw) hw = lh_hw_lookup("ideal", NULL);
	g_autoptr(LhGraph) g = lh_graph_new("h");
	guint32 a = t_kernel(g, "a", 2000, 0.5), b = t_kernel(g, "b", 1000, 0.5);
	t_kernel(g, "c", 4000, 0.5);
	t_dep(g, b, a);
	t_finish(g);
	const char *kv[] = {"streams=1", NULL};
	g_autoptr(LhPlan) p = plan_with("heft", g, hw, kv, NULL);
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	LhMetrics m;
	lh_metrics_compute(t, g, hw, p, &m);
	/* 2 + 1 + 4 units on one stream. */
	cr_assert_eq(m.makespan, 7000);
	lh_metrics_clear(&m);
	/* Ranks: c 4, a 2 + 1 = 3, b 1: c runs first. */
	guint32 c;
	cr_assert(lh_graph_find(g, "c", &c));
	cr_assert_eq(t->ops[c].start, 0);
}

/* ---- bad input ---- */

Test(sched_cli, unknown_scheduler_lists_choices)
{
	g_autofree char *out = NULL, *err = NULL;
	int rc = t_lhsim(&out, &err, "run", "--sched", "nope", NULL);
	cr_assert_eq(rc, 2, "%s", err);
	cr_assert(strstr(err, "unknown scheduler 'nope'") && strstr(err, "lhs") &&
	              strstr(err, "iree") && strstr(err, "heft") && strstr(err, "cpath"),
	          "%s", err);
}

Test(sched_cli, unknown_parameter_lists_valid_ones)
{
	g_autofree char *out = NULL, *err = NULL;
	int rc = t_lhsim(&out, &err, "run", "--sched", "lhs", "-p", "bogus=1", NULL);
	cr_assert_eq(rc, 2, "%s", err);
	cr_assert(strstr(err, "bogus") && strstr(err, "async-compute-limit"), "%s", err);
}

Test(sched_cli, out_of_range_and_bad_choice)
{
	g_autofree char *out = NULL, *err = NULL;
	int rc = t_lhsim(&out, &err, "run", "--sched", "lhs", "-p", "async-compute-limit=0", NULL);
	cr_assert_eq(rc, 2, "%s", err);
	cr_assert(strstr(err, "out of range") && strstr(err, "1..64"), "%s", err);
	g_free(err);
	err = NULL;
	rc = t_lhsim(NULL, &err, "run", "--sched", "iree", "-p", "favor=fast", NULL);
	cr_assert_eq(rc, 2, "%s", err);
	cr_assert(strstr(err, "min-peak-memory, max-concurrency, debug"), "%s", err);
}

Test(sched_cli, compare_prints_a_row_per_scheduler)
{
	g_autofree char *out = NULL, *err = NULL;
	int rc = t_lhsim(&out, &err, "compare", "--sched",
	                 "serial,lhs:async-compute-limit=4,iree,heft,cpath", NULL);
	cr_assert_eq(rc, 0, "%s", err);
	cr_assert(strstr(out, "lower bound"), "%s", out);
	cr_assert(strstr(out, "lhs:async-compute-limit=4"), "%s", out);
	const char *names[] = {"serial", "iree", "heft", "cpath"};
	for (int i = 0; i < 4; i++)
		cr_assert(strstr(out, names[i]), "%s", out);
	g_free(err);
	err = NULL;
	rc = t_lhsim(NULL, &err, "compare", "--sched", "lhs,cpath", "-p", "favor=debug", NULL);
	cr_assert_eq(rc, 2, "%s", err);
	cr_assert(strstr(err, "favor"), "%s", err);
}

/* ---- plugins ---- */

/* The example plugin (examples/plugin/reverse-serial.c), built in tree by meson from the same
 * source as the out-of-tree Makefile build, beside the lhsim binary's build directory. */
static char *plugin_path(const char *file)
{
	const char *exe = g_getenv("LHSIM");
	cr_assert(exe, "LHSIM is not set");
	g_autofree char *cli = g_path_get_dirname(exe);
	g_autofree char *root = g_path_get_dirname(cli);
	return g_build_filename(root, "examples", "plugin", file, NULL);
}

Test(plugin, loads_and_schedules)
{
	g_autofree char *so = plugin_path("reverse-serial.so");
	g_autofree char *out = NULL, *err = NULL;
	int rc = t_lhsim(&out, &err, "run", "--plugin", so, "--sched", "reverse-serial", NULL);
	cr_assert_eq(rc, 0, "%s", err);
	cr_assert(strstr(out, "reverse-serial"), "%s", out);
	/* The plugin's own schedule, not a built-in's: among ready ops it runs the one that
	 * comes last in program order, so three independent kernels run c, b, a. */
	g_autofree char *dir = t_tmpdir();
	g_autofree char *gpath = g_build_filename(dir, "abc.json", NULL);
	g_autofree char *ppath = g_build_filename(dir, "abc.plan", NULL);
	cr_assert(
	    g_file_set_contents(gpath,
	                        "{\"format\": \"lhsim-graph\", \"version\": 1, \"ops\": [\n"
	                        " {\"name\": \"a\", \"kind\": \"kernel\", \"duration_ns\": 10},\n"
	                        " {\"name\": \"b\", \"kind\": \"kernel\", \"duration_ns\": 10},\n"
	                        " {\"name\": \"c\", \"kind\": \"kernel\", \"duration_ns\": 10}]}\n",
	                        -1, NULL));
	g_free(err);
	err = NULL;
	rc = t_lhsim(NULL, &err, "run", gpath, "--plugin", so, "--sched", "reverse-serial",
	             "--save-plan", ppath, NULL);
	cr_assert_eq(rc, 0, "%s", err);
	g_autofree char *plan = NULL;
	cr_assert(g_file_get_contents(ppath, &plan, NULL, NULL));
	const char *rc_ = strstr(plan, "run main c\n"), *rb = strstr(plan, "run main b\n"),
	           *ra = strstr(plan, "run main a\n");
	cr_assert(rc_ && rb && ra && rc_ < rb && rb < ra, "not in reverse order:\n%s", plan);
}

Test(plugin, bad_files_get_clear_errors)
{
	g_autofree char *out = NULL, *err = NULL;
	int rc = t_lhsim(&out, &err, "run", "--plugin", "/nonexistent/x.so", NULL);
	cr_assert_eq(rc, 2, "%s", err);
	cr_assert(strstr(err, "/nonexistent/x.so: cannot load the plugin: no such file"), "%s",
	          err);
	/* A directory: named as given, not as GModule's guess "DIR.so". */
	g_autofree char *dir = t_tmpdir();
	g_free(err);
	err = NULL;
	rc = t_lhsim(NULL, &err, "run", "--plugin", dir, NULL);
	cr_assert_eq(rc, 2, "%s", err);
	g_autofree char *want = g_strdup_printf("%s: cannot load the plugin: a directory", dir);
	cr_assert(strstr(err, want), "%s", err);
	g_autofree char *bad = plugin_path("reverse-serial-badabi.so");
	g_free(err);
	err = NULL;
	rc = t_lhsim(NULL, &err, "run", "--plugin", bad, NULL);
	cr_assert_eq(rc, 2, "%s", err);
	cr_assert(strstr(err, "wrong ABI version") && strstr(err, "ABI 999"), "%s", err);
}

static char *faulty_path(const char *file)
{
	const char *dir = g_getenv("LHSIM_TEST_PLUGINS");
	cr_assert(dir, "LHSIM_TEST_PLUGINS is not set (run the tests through meson test)");
	return g_build_filename(dir, file, NULL);
}

Test(plugin, same_plugin_twice_is_harmless)
{
	g_autofree char *so = plugin_path("reverse-serial.so");
	/* The same file by another path too: ./x/../x/reverse-serial.so. */
	g_autofree char *dir = g_path_get_dirname(so);
	g_autofree char *base = g_path_get_basename(dir);
	g_autofree char *again = g_build_filename(dir, "..", base, "reverse-serial.so", NULL);
	g_autofree char *out = NULL, *err = NULL;
	int rc = t_lhsim(&out, &err, "run", "--plugin", so, "--plugin", so, "--plugin", again,
	                 "--sched", "reverse-serial", NULL);
	cr_assert_eq(rc, 0, "%s", err);
	cr_assert(strstr(out, "reverse-serial"), "%s", out);
}

Test(plugin, bad_parameter_table_is_rejected_at_load)
{
	/* Before, the bad default aborted the run (SIGTRAP, exit 133) when the plugin was used;
	 * now loading it is an error naming the file, the parameter and the fault. */
	g_autofree char *so = faulty_path("faulty-params.so");
	g_autofree char *out = NULL, *err = NULL;
	int rc = t_lhsim(&out, &err, "run", "--plugin", so, "--sched", "faulty", NULL);
	cr_assert_eq(rc, 2, "%s", err);
	cr_assert(strstr(err, so) && strstr(err, "parameter 1 ('limit') has a bad default") &&
	              strstr(err, "'zero' is not an integer"),
	          "%s", err);
	/* Even when it is not used. */
	g_free(err);
	err = NULL;
	cr_assert_eq(t_lhsim(NULL, &err, "list", "--plugin", so, NULL), 2, "%s", err);
}

Test(plugin, invalid_plan_from_a_plugin_is_a_failed_run)
{
	/* The plugin leaves out the last op: not the user's input at fault (2), but the plugin
	 * (1), named. */
	g_autofree char *so = faulty_path("faulty-plan.so");
	g_autofree char *out = NULL, *err = NULL;
	int rc = t_lhsim(&out, &err, "run", "--plugin", so, "--sched", "faulty", NULL);
	cr_assert_eq(rc, 1, "%s", err);
	g_autofree char *want =
	    g_strdup_printf("plugin %s (scheduler 'faulty') made an invalid plan", so);
	cr_assert(strstr(err, want), "%s", err);
	cr_assert_str_empty(out);
}

/* A repeated parameter was taken silently (the last won). */
Test(params, repeated_parameter_is_an_error)
{
	const LhScheduler *s = lh_scheduler_find("lhs");
	cr_assert_not_null(s);
	const char *kv[] = {"async-compute-limit=2", "async-compute-limit=3", NULL};
	g_autoptr(GError) e = NULL;
	g_autoptr(LhParams) p = lh_params_new(s->params, kv, &e);
	cr_assert_null(p);
	cr_expect_str_eq(e->message, "parameter 'async-compute-limit' is given twice "
	                             "(async-compute-limit=2, then async-compute-limit=3)");
	const char *once[] = {"async-compute-limit=3", NULL};
	g_autoptr(LhParams) p2 = lh_params_new(s->params, once, NULL);
	cr_assert_not_null(p2);
	cr_expect_eq(lh_params_get_int(p2, "async-compute-limit"), 3);
}

/* An empty graph (0 ops) gets an empty plan from every built-in, without a critical warning
 * on the way (heft and cpath once handed the plan builder a NULL stream array for 0 ops):
 * criticals are made fatal, so one aborts the test. */
Test(sched, empty_graph_gets_an_empty_plan_from_every_builtin)
{
	g_log_set_always_fatal(G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
	g_autoptr(LhGraph) g = lh_graph_new("empty");
	cr_assert(lh_graph_finish(g, NULL, NULL));
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	const char *names[] = {"serial", "lhs", "iree", "iree-cost", "heft", "cpath", "search"};
	for (gsize k = 0; k < G_N_ELEMENTS(names); k++) {
		const char *kv[] = {strcmp(names[k], "search") == 0 ? "evals=10" : NULL, NULL};
		g_autoptr(LhPlan) p = plan_with(names[k], g, hw, kv, NULL);
		guint32 runs = 0;
		for (guint32 c = 0; c < lh_plan_n_cmds(p); c++)
			runs += lh_plan_cmd(p, c)->kind == LH_CMD_RUN;
		cr_expect_eq(runs, 0, "%s", names[k]);
	}
}
