/* lhsim tests — the engine's checkpoints and incremental runs (sim/engine-private.h,
 * docs/engine.md "Checkpoints and incremental runs"): on random graphs, hardware and plans,
 * and chains of random plan changes like the search's (an op moved in the order, put on another
 * stream, syncs and host commands added or dropped, async limits changed), a run restored from
 * a checkpoint gives the trace of lh_simulate() bit for bit; a hand case where the checkpoint
 * chosen is known; search gives the same plan with incremental=on and off. */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"
#include "sim/engine-private.h"

/* A stream program: non-input ops in a topological order, each on a stream, with a sync or a
 * host command after some, and an async limit: an async op waits for the end of the async op
 * `limit` places before it (0: none), as search's limits=keep. */
typedef struct {
	guint32 n, m, S, limit;
	guint32 *order, *stream, *host_after;
	guint8 *sync_after;
} Prog;

static Prog *prog_new(const LhGraph *g, guint32 S, GRand *r)
{
	Prog *p = g_new0(Prog, 1);
	p->n = lh_graph_n_ops(g);
	p->S = S;
	p->order = g_new(guint32, p->n);
	p->stream = g_new0(guint32, p->n);
	p->host_after = g_new0(guint32, p->n);
	p->sync_after = g_new0(guint8, p->n);
	const guint32 *topo = lh_graph_topo(g);
	for (guint32 t = 0; t < p->n; t++) {
		guint32 v = topo[t];
		if (lh_graph_op(g, v)->kind == LH_OP_INPUT)
			continue;
		p->order[p->m++] = v;
		p->stream[v] = (guint32)g_rand_int_range(r, 0, (gint32)S);
		if (g_rand_int_range(r, 0, 30) == 0)
			p->host_after[v] = (guint32)g_rand_int_range(r, 0, 5000);
		p->sync_after[v] = g_rand_int_range(r, 0, 40) == 0;
	}
	p->limit = g_rand_int_range(r, 0, 2) ? (guint32)g_rand_int_range(r, 1, 4) : 0;
	return p;
}

static Prog *prog_copy(const Prog *a)
{
	Prog *p = g_memdup2(a, sizeof *a);
	p->order = g_memdup2(a->order, a->n * sizeof(guint32));
	p->stream = g_memdup2(a->stream, a->n * sizeof(guint32));
	p->host_after = g_memdup2(a->host_after, a->n * sizeof(guint32));
	p->sync_after = g_memdup2(a->sync_after, a->n);
	return p;
}

static void prog_free(Prog *p)
{
	g_free(p->order);
	g_free(p->stream);
	g_free(p->host_after);
	g_free(p->sync_after);
	g_free(p);
}

/* Every op signals an event after its run; a consumer on another stream waits for it. */
static LhPlan *emit(const LhGraph *g, const Prog *p)
{
	LhPlan *plan = lh_plan_new();
	for (guint32 s = 0; s < p->S; s++) {
		char name[16];
		g_snprintf(name, sizeof name, "s%u", s);
		lh_plan_add_stream(plan, name, LH_ROLE_COMPUTE);
	}
	g_autofree guint32 *event = g_new(guint32, p->n);
	g_autofree guint32 *async = g_new(guint32, p->m + 1);
	guint32 na = 0;
	for (guint32 k = 0; k < p->m; k++) {
		guint32 v = p->order[k], nd, s = p->stream[v];
		const guint32 *d = lh_graph_deps(g, v, &nd);
		for (guint32 j = 0; j < nd; j++)
			if (lh_graph_op(g, d[j])->kind != LH_OP_INPUT && p->stream[d[j]] != s)
				lh_plan_wait(plan, s, event[d[j]]);
		gboolean as = lh_graph_op(g, v)->async;
		if (as && p->limit && na >= p->limit) {
			guint32 u = async[na - p->limit];
			if (p->stream[u] != s)
				lh_plan_wait(plan, s, event[u]);
		}
		if (as)
			async[na++] = v;
		lh_plan_run(plan, s, v);
		event[v] = lh_plan_new_event(plan);
		lh_plan_signal(plan, s, event[v]);
		if (p->host_after[v])
			lh_plan_host(plan, p->host_after[v]);
		if (p->sync_after[v])
			lh_plan_sync(plan, s);
	}
	return plan;
}

/* A random change, as the search makes them and more. */
static void mutate(const LhGraph *g, Prog *p, GRand *r)
{
	if (!p->m)
		return;
	guint32 i = (guint32)g_rand_int_range(r, 0, (gint32)p->m), v = p->order[i];
	switch (g_rand_int_range(r, 0, 8)) {
	case 0:
	case 1:
	case 2: { /* move v between its last dep and its first consumer */
		g_autofree guint32 *pos = g_new(guint32, p->n);
		for (guint32 k = 0; k < p->m; k++)
			pos[p->order[k]] = k;
		guint32 nd, nsc;
		const guint32 *d = lh_graph_deps(g, v, &nd);
		const guint32 *sc = lh_graph_succs(g, v, &nsc);
		gint64 lo = 0, hi = (gint64)p->m - 1;
		for (guint32 k = 0; k < nd; k++)
			if (lh_graph_op(g, d[k])->kind != LH_OP_INPUT)
				lo = MAX(lo, (gint64)pos[d[k]] + 1);
		for (guint32 k = 0; k < nsc; k++)
			hi = MIN(hi, (gint64)pos[sc[k]] - 1);
		if (hi <= lo)
			return;
		guint32 j = (guint32)g_rand_int_range(r, (gint32)lo, (gint32)hi + 1);
		if (j < i)
			memmove(p->order + j + 1, p->order + j, (i - j) * sizeof(guint32));
		else
			memmove(p->order + i, p->order + i + 1, (j - i) * sizeof(guint32));
		p->order[j] = v;
		return;
	}
	case 3:
	case 4:
		p->stream[v] = (guint32)g_rand_int_range(r, 0, (gint32)p->S);
		return;
	case 5:
		p->sync_after[v] = !p->sync_after[v];
		return;
	case 6:
		p->host_after[v] =
		    g_rand_int_range(r, 0, 2) ? 0 : (guint32)g_rand_int_range(r, 1, 5000);
		return;
	default:
		if (g_rand_int_range(r, 0, 3) == 0)
			p->limit = (guint32)g_rand_int_range(r, 0, 4);
		else
			p->stream[v] = (guint32)g_rand_int_range(r, 0, (gint32)p->S);
		return;
	}
}

/* Runs @p from @from and in full; the same outcome, bit for bit. Returns the run (NULL when
 * both failed). */
static LhSimRun *check_run(const LhGraph *g, const LhHw *hw, const LhPlan *p, gboolean strict,
                           const LhSimRun *from, guint32 every, const char *what)
{
	LhSimOptions opt = {.strict_memory = strict};
	g_autoptr(GError) e1 = NULL, e2 = NULL;
	gboolean o1 = FALSE, o2 = FALSE;
	LhSimRun *run = lh__sim_run(g, hw, p, &opt, from, every, &o1, &e1);
	g_autoptr(LhTrace) full = lh_simulate(g, hw, p, &opt, &o2, &e2);
	cr_assert_eq(run != NULL, full != NULL, "%s: %s / full run %s", what,
	             e1 ? e1->message : "ok", e2 ? e2->message : "ok");
	if (!run) {
		cr_assert_str_eq(e1->message, e2->message, "%s", what);
		return NULL;
	}
	LhSimRunInfo info;
	lh__sim_run_info(run, &info);
	char w2[256];
	g_snprintf(w2, sizeof w2, "%s (restored at %" G_GINT64_FORMAT " ns, c0 %u)", what,
	           info.t_from, info.c0);
	cr_assert_eq(o1, o2, "%s: over memory", w2);
	t_same_trace(lh__sim_run_trace(run), full, w2, "full run");
	return run;
}

/* One step of a chain: the candidate (@next, run from @cand) becomes the current one half of
 * the time, else it is dropped. Returns 1 if @next restored a checkpoint. */
static guint chain_step(GRand *r, LhSimRun **run, Prog **cur, LhSimRun *next, Prog *cand)
{
	guint restored = 0;
	if (next) {
		LhSimRunInfo info;
		lh__sim_run_info(next, &info);
		restored = info.t_from >= 0;
	}
	if (next && g_rand_int_range(r, 0, 2)) {
		lh__sim_run_free(*run);
		*run = next;
		prog_free(*cur);
		*cur = cand;
	} else {
		lh__sim_run_free(next);
		prog_free(cand);
	}
	return restored;
}

/* Chains of changes from random plans: each candidate is run from the current run's
 * checkpoints, and becomes the current run half the time (as a search accepts moves). */
static void chains(guint32 seed, int trials, guint n_lo, guint n_hi, guint *restored, guint *runs)
{
	g_autoptr(GRand) r = g_rand_new_with_seed(seed);
	for (int trial = 0; trial < trials; trial++) {
		guint n = (guint)g_rand_int_range(r, (gint32)n_lo, (gint32)n_hi);
		g_autoptr(LhGraph) g = t_random_graph(r, n, 0, TRUE);
		g_autoptr(LhHw) hw = t_random_hw(r, TRUE);
		gboolean strict = g_rand_int_range(r, 0, 6) == 0;
		guint32 every = (guint32)g_rand_int_range(r, 1, 9);
		Prog *cur = prog_new(g, (guint32)g_rand_int_range(r, 1, 7), r);
		char what[96];
		g_snprintf(what, sizeof what, "trial %d (%u ops), start", trial, n);
		g_autoptr(LhPlan) p0 = emit(g, cur);
		LhSimRun *run = check_run(g, hw, p0, strict, NULL, every, what);
		for (int step = 0; step < 25; step++) {
			Prog *cand = prog_copy(cur);
			for (int k = g_rand_int_range(r, 1, 3); k > 0; k--)
				mutate(g, cand, r);
			g_autoptr(LhPlan) p = emit(g, cand);
			g_snprintf(what, sizeof what, "trial %d (%u ops, every %u), step %d", trial,
			           n, every, step);
			LhSimRun *next = check_run(g, hw, p, strict, run, every, what);
			(*runs)++;
			*restored += chain_step(r, &run, &cur, next, cand);
		}
		lh__sim_run_free(run);
		prog_free(cur);
	}
}

Test(ckpt, incremental_trace_equals_full_on_random_plans)
{
	lh_models_init();
	guint restored = 0, runs = 0;
	chains(3, 60, 3, 120, &restored, &runs);
	/* Not a vacuous test: a good part of the runs restored a checkpoint. */
	cr_expect(restored * 5 > runs, "only %u of %u runs restored a checkpoint", restored, runs);
}

Test(ckpt, incremental_trace_equals_full_on_larger_plans)
{
	lh_models_init();
	guint restored = 0, runs = 0;
	chains(11, 6, 300, 800, &restored, &runs);
	cr_expect(restored * 5 > runs, "only %u of %u runs restored a checkpoint", restored, runs);
}

/* The generator's DAGs on a real GPU, with the search's moves only. */
Test(ckpt, incremental_trace_equals_full_on_generated_dags)
{
	lh_models_init();
	g_autoptr(GRand) r = g_rand_new_with_seed(5);
	guint restored = 0, runs = 0;
	for (int trial = 0; trial < 4; trial++) {
		LhRandomDagOptions o;
		lh_random_dag_options_init(&o);
		o.n_ops = 400;
		o.width = (guint32)g_rand_int_range(r, 2, 16);
		o.seed = (guint64)trial;
		o.p_copy = 0.2;
		o.p_collective = 0.1;
		o.p_async = 0.3;
		g_autoptr(LhGraph) g = lh_gen_random_dag(&o);
		g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", NULL);
		Prog *cur = prog_new(g, 4, r);
		memset(cur->sync_after, 0, cur->n);
		memset(cur->host_after, 0, cur->n * sizeof(guint32));
		g_autoptr(LhPlan) p0 = emit(g, cur);
		LhSimRun *run = check_run(g, hw, p0, FALSE, NULL, 16, "start");
		for (int step = 0; step < 30; step++) {
			Prog *cand = prog_copy(cur);
			mutate(g, cand, r);
			memset(cand->sync_after, 0, cand->n);
			memset(cand->host_after, 0, cand->n * sizeof(guint32));
			g_autoptr(LhPlan) p = emit(g, cand);
			char what[64];
			g_snprintf(what, sizeof what, "dag %d step %d", trial, step);
			LhSimRun *next = check_run(g, hw, p, FALSE, run, 16, what);
			cr_assert_not_null(next, "%s: the run failed", what);
			runs++;
			restored += chain_step(r, &run, &cur, next, cand);
		}
		lh__sim_run_free(run);
		prog_free(cur);
	}
	cr_expect(restored * 5 > runs, "only %u of %u runs restored a checkpoint", restored, runs);
}

/* The hand cases' graph: kernels a, b, c, d (@op[0..3]) of 1000 ns on half the SMs each. */
static LhGraph *hand_graph(guint32 *op)
{
	LhGraph *g = lh_graph_new("hand");
	static const char *const names[] = {"a", "b", "c", "d"};
	for (guint i = 0; i < 4; i++)
		op[i] = t_kernel(g, names[i], 1000, 0.5);
	t_finish(g);
	return g;
}

/* A hand case's plan: a, b, @third, then @fourth on stream "s", with a second stream "s2"
 * when @two, on which @fourth runs when @fourth_on_s2. */
static LhPlan *hand_plan(const guint32 *op, guint32 third, guint32 fourth, gboolean two,
                         gboolean fourth_on_s2)
{
	LhPlan *p = lh_plan_new();
	guint32 s = lh_plan_add_stream(p, "s", LH_ROLE_COMPUTE);
	guint32 s2 = two ? lh_plan_add_stream(p, "s2", LH_ROLE_COMPUTE) : s;
	lh_plan_run(p, s, op[0]);
	lh_plan_run(p, s, op[1]);
	lh_plan_run(p, s, third);
	lh_plan_run(p, fourth_on_s2 ? s2 : s, fourth);
	return p;
}

/* One stream runs a, b, c, d (1000 ns each, half the SMs); the new plan runs d before c.
 * With no host costs every command is issued at t = 0, and with a checkpoint at every instant
 * the checkpoints are at 1000 (a ends), 2000 (b ends), 3000 (c ends) and 4000 (d ends), each
 * before what is due then. The plans first differ at command 2 (c0 = 2: run c against run d).
 *   t = 1000: b (command 1 < c0) still waits in the queue: valid.
 *   t = 2000: b (command 1) runs; the queue's head is command 2, which cannot leave before b
 *             ends: nothing from c0 on has acted: valid, and the latest such.
 *   t = 4000, t = 3000: command 2 (old c) left the queue at 2000: not valid.
 * So the run restores at 2000, and then runs d 2000-3000 and c 3000-4000. */
Test(ckpt, hand_case_picks_the_latest_valid_checkpoint)
{
	guint32 op[4];
	g_autoptr(LhGraph) g = hand_graph(op);
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhPlan) p = hand_plan(op, op[2], op[3], FALSE, FALSE);
	g_autoptr(LhPlan) q = hand_plan(op, op[3], op[2], FALSE, FALSE);
	LhSimRun *r0 = check_run(g, hw, p, FALSE, NULL, 1, "old plan");
	LhSimRunInfo info;
	lh__sim_run_info(r0, &info);
	cr_expect_eq(info.n_ckpt, 4);
	cr_expect_eq(info.t_from, -1);
	LhSimRun *r1 = check_run(g, hw, q, FALSE, r0, 1, "new plan");
	lh__sim_run_info(r1, &info);
	cr_expect_eq(info.c0, 2);
	cr_expect_eq(info.t_from, 2000);
	cr_expect_eq(info.n_tried, 2, "the checkpoints at 4000 and 3000 were tried first");
	const LhTrace *t = lh__sim_run_trace(r1);
	T_SPAN(t, g, "d", 2000, 3000);
	T_SPAN(t, g, "c", 3000, 4000);
	/* Kept: the old run's at 1000 and 2000, and the new run's at 3000 and 4000. */
	cr_expect_eq(info.n_ckpt, 4);
	lh__sim_run_free(r1);
	lh__sim_run_free(r0);
}

/* The same hand case with d on a second stream: d, issued at 0 on an idle queue, would have
 * started at 0 in the new plan, so no checkpoint is valid and the run is a full one. */
Test(ckpt, hand_case_without_a_valid_checkpoint)
{
	guint32 op[4];
	g_autoptr(LhGraph) g = hand_graph(op);
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhPlan) p = hand_plan(op, op[2], op[3], TRUE, FALSE);
	g_autoptr(LhPlan) q = hand_plan(op, op[2], op[3], TRUE, TRUE);
	LhSimRun *r0 = check_run(g, hw, p, FALSE, NULL, 1, "old plan");
	LhSimRun *r1 = check_run(g, hw, q, FALSE, r0, 1, "new plan");
	LhSimRunInfo info;
	lh__sim_run_info(r1, &info);
	cr_expect_eq(info.t_from, -1);
	cr_expect_eq(info.n_tried, 4);
	/* a, b, c one after the other on s; d beside a from 0 (each takes half the SMs). */
	T_SPAN(lh__sim_run_trace(r1), g, "d", 0, 1000);
	lh__sim_run_free(r1);
	lh__sim_run_free(r0);
}

static void same_plan(const LhPlan *a, const LhPlan *b, const char *what)
{
	cr_assert_eq(lh_plan_n_cmds(a), lh_plan_n_cmds(b), "%s", what);
	cr_assert_eq(lh_plan_n_streams(a), lh_plan_n_streams(b), "%s", what);
	for (guint32 i = 0; i < lh_plan_n_cmds(a); i++) {
		const LhCmd *x = lh_plan_cmd(a, i), *y = lh_plan_cmd(b, i);
		cr_assert(x->kind == y->kind && x->stream == y->stream && x->arg == y->arg,
		          "%s: command %u differs", what, i);
	}
}

/* Only the evaluation changes: the same candidates, accepted moves and final plan with
 * incremental=on (at several checkpoint spacings) and off. */
Test(ckpt, search_gives_the_same_plan_incremental_or_not)
{
	lh_models_init();
	g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", NULL);
	static const char *const starts[] = {"lhs", "heft", "serial"};
	for (guint64 seed = 1; seed <= 6; seed++) {
		LhRandomDagOptions o;
		lh_random_dag_options_init(&o);
		o.seed = seed;
		o.n_ops = 60 + (guint32)seed * 30;
		o.width = 2 + (guint32)(seed % 5);
		o.p_copy = 0.2;
		o.p_collective = 0.15;
		o.p_async = 0.3;
		g_autoptr(LhGraph) g = lh_gen_random_dag(&o);
		const char *st = starts[seed % 3];
		char s_start[32], s_every[40];
		g_snprintf(s_start, sizeof s_start, "start=%s", st);
		g_snprintf(s_every, sizeof s_every, "checkpoint-every=%u", (guint)(seed % 3) * 4);
		const char *off[] = {"evals=400", s_start, "incremental=off", NULL};
		const char *on[] = {"evals=400", s_start, "incremental=on", s_every, NULL};
		g_autoptr(GError) e1 = NULL, e2 = NULL;
		const LhScheduler *s = lh_scheduler_find("search");
		g_autoptr(LhPlan) a = lh_scheduler_run(s, g, hw, off, NULL, &e1);
		g_autoptr(LhPlan) b = lh_scheduler_run(s, g, hw, on, NULL, &e2);
		cr_assert(a && b, "seed %lu: %s %s", (unsigned long)seed, e1 ? e1->message : "",
		          e2 ? e2->message : "");
		char what[64];
		g_snprintf(what, sizeof what, "seed %lu, start=%s", (unsigned long)seed, st);
		same_plan(a, b, what);
	}
}

/* A graph placed on two devices is simulated in full, with no checkpoint: two kernels per
 * device, one stream each, and a new plan that swaps device 1's two. */
Test(ckpt, placed_graphs_run_in_full)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhGraph) g = lh_graph_new("placed");
	lh_graph_set_devices(g, 2);
	lh_graph_set_placed(g, TRUE);
	guint32 k[4];
	const char *names[] = {"a0", "b0", "a1", "b1"};
	for (guint32 i = 0; i < 4; i++) {
		k[i] = t_kernel(g, names[i], 1000, 1.0);
		lh_graph_op_mut(g, k[i])->device = i / 2;
	}
	t_finish(g);
	LhPlan *p[2];
	for (int v = 0; v < 2; v++) {
		p[v] = lh_plan_new();
		guint32 s0 = lh_plan_add_stream_on(p[v], "s0", LH_ROLE_COMPUTE, 0);
		guint32 s1 = lh_plan_add_stream_on(p[v], "s1", LH_ROLE_COMPUTE, 1);
		lh_plan_run(p[v], s0, k[0]);
		lh_plan_run(p[v], s0, k[1]);
		lh_plan_run(p[v], s1, k[v ? 3 : 2]);
		lh_plan_run(p[v], s1, k[v ? 2 : 3]);
	}
	LhSimRun *r0 = check_run(g, hw, p[0], FALSE, NULL, 1, "placed, old plan");
	LhSimRun *r1 = check_run(g, hw, p[1], FALSE, r0, 1, "placed, new plan");
	LhSimRunInfo info;
	lh__sim_run_info(r1, &info);
	cr_expect_eq(info.t_from, -1);
	cr_expect_eq(info.n_ckpt, 0);
	/* Device 1 runs b1 then a1, 1000 ns each (one kernel fills the device). */
	T_SPAN(lh__sim_run_trace(r1), g, "b1", 0, 1000);
	T_SPAN(lh__sim_run_trace(r1), g, "a1", 1000, 2000);
	lh__sim_run_free(r1);
	lh__sim_run_free(r0);
	lh_plan_free(p[0]);
	lh_plan_free(p[1]);
}
