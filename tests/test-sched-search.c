/* lhsim tests — iree-cost, search and the engine-class lower bounds (docs/schedulers.md):
 * property tests over seeded random DAGs (valid plans, async limits, peak memory within the
 * limit), hand-computed cases, determinism, bad input, and the STG instances against their
 * optima. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

static LhGraph *random_graph(guint64 seed)
{
	LhRandomDagOptions o;
	lh_random_dag_options_init(&o);
	o.seed = seed;
	o.n_ops = 40 + (guint32)(seed % 5) * 20;
	o.width = 2 + (guint32)(seed % 7);
	o.p_copy = 0.2;
	o.p_collective = 0.15;
	o.p_async = 0.3;
	return lh_gen_random_dag(&o);
}

static LhPlan *plan_of(const char *sched, const LhGraph *g, const LhHw *hw, const char *const *kv,
                       GError **e)
{
	const LhScheduler *s = lh_scheduler_find(sched);
	cr_assert(s, "no scheduler %s", sched);
	return lh_scheduler_run(s, g, hw, kv, NULL, e);
}

static LhTrace *sim_valid(const LhGraph *g, const LhHw *hw, const LhPlan *p, const char *what,
                          guint64 seed)
{
	GError *e = NULL;
	cr_assert(lh_plan_validate(p, g, NULL, &e), "%s seed %lu: %s", what, (unsigned long)seed,
	          e ? e->message : "?");
	LhSimOptions opt = {.skip_validate = TRUE};
	LhTrace *t = lh_simulate(g, hw, p, &opt, NULL, &e);
	cr_assert(t, "%s seed %lu: %s", what, (unsigned long)seed, e ? e->message : "?");
	return t;
}

/* Most async ops of class @c running at once in @t. */
static guint32 max_in_flight(const LhGraph *g, const LhTrace *t, LhOpClass c)
{
	guint32 best = 0;
	for (guint32 i = 0; i < t->n_ops; i++) {
		const LhOp *op = lh_graph_op(g, i);
		if (!op->async || lh_op_class(op) != c || t->ops[i].start < 0)
			continue;
		/* ops running at i's start */
		guint32 k = 0;
		for (guint32 j = 0; j < t->n_ops; j++) {
			const LhOp *oj = lh_graph_op(g, j);
			if (oj->async && lh_op_class(oj) == c &&
			    t->ops[j].start <= t->ops[i].start && t->ops[j].end > t->ops[i].start)
				k++;
		}
		best = MAX(best, k);
	}
	return best;
}

Test(iree_cost, random_dags_valid_and_within_memory_limit, .timeout = 240)
{
	lh_models_init();
	g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", NULL);
	for (guint64 seed = 1; seed <= 60; seed++) {
		g_autoptr(LhGraph) g = random_graph(seed);
		GError *e = NULL;
		g_autoptr(LhPlan) p = plan_of("iree-cost", g, hw, NULL, &e);
		cr_assert(p, "seed %lu: %s", (unsigned long)seed, e ? e->message : "?");
		g_autoptr(LhTrace) t = sim_valid(g, hw, p, "iree-cost", seed);
		LhMetrics m;
		lh_metrics_compute(t, g, hw, p, &m);
		cr_assert_geq((double)m.makespan, m.bounds.bound - 1,
		              "seed %lu: below the %s bound", (unsigned long)seed,
		              m.bounds.binding);
		lh_metrics_clear(&m);
		/* A memory limit at the serial schedule's peak can always be met (one op per
		 * wave in program order is that schedule); at 90 % of iree-cost's own, it is met
		 * or refused with the smallest peak found. */
		g_autoptr(LhPlan) sp = plan_of("serial", g, hw, NULL, &e);
		g_autoptr(LhTrace) st = sim_valid(g, hw, sp, "serial", seed);
		double lims[2] = {(double)st->peak_device / 1073741824.0,
		                  0.9 * (double)t->peak_device / 1073741824.0};
		for (int k = 0; k < 2; k++) {
			char kv0[64];
			g_snprintf(kv0, sizeof kv0, "memory-limit=%.17g", lims[k]);
			const char *kv[] = {kv0, NULL};
			GError *me = NULL;
			g_autoptr(LhPlan) mp = plan_of("iree-cost", g, hw, kv, &me);
			if (!mp) {
				cr_assert(k == 1, "seed %lu: %s refused: %s", (unsigned long)seed,
				          kv0, me->message);
				cr_assert(strstr(me->message, "smallest peak found"), "%s",
				          me->message);
				g_error_free(me);
				continue;
			}
			g_autoptr(LhTrace) mt =
			    sim_valid(g, hw, mp, "iree-cost memory-limit", seed);
			cr_assert_leq((double)mt->peak_device, lims[k] * 1073741824.0,
			              "seed %lu: peak %ld over %s", (unsigned long)seed,
			              (long)mt->peak_device, kv0);
		}
	}
}

/* The exported steps: the cost waves behind IREE's reference regions, through the driver. */
Test(iree_cost, steps_plug_into_the_driver)
{
	lh_models_init();
	g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", NULL);
	static const LhParamSpec spec[] = {{"favor", LH_PARAM_CHOICE, "min-peak-memory", 0, 0,
	                                    "min-peak-memory|max-concurrency|debug", ""},
	                                   {NULL, 0, NULL, 0, 0, NULL, NULL}};
	g_autoptr(LhParams) p = lh_params_new(spec, NULL, NULL);
	const LhIreeRegionStep *rs[] = {&lh_iree_regions_reference, &lh_iree_regions_cost,
	                                &lh_iree_regions_list};
	const LhIreeWaveStep *ws[] = {&lh_iree_waves_reference, &lh_iree_waves_cost};
	for (guint64 seed = 1; seed <= 20; seed++) {
		g_autoptr(LhGraph) g = random_graph(seed);
		for (int a = 0; a < 3; a++)
			for (int b = 0; b < 2; b++)
				/* Without a memory budget, and with one of 1 byte (every op held
				 * back, so the list step's forced starts and the waves' one-op
				 * fallback run). */
				for (int m = 0; m < 2; m++) {
					GError *e = NULL;
					g_autoptr(LhPlan) plan = lh_iree_partition(
					    g, hw, p, rs[a], ws[b], 4, m ? 1 : 0, 1000, &e);
					cr_assert(plan, "%s/%s: %s", rs[a]->name, ws[b]->name,
					          e->message);
					g_autoptr(LhTrace) t =
					    sim_valid(g, hw, plan, rs[a]->name, seed);
				}
	}
}

/* A wave step that breaks the rule (everything in one wave) is refused, naming the step. */
static gboolean waves_flat(const LhIreeCtx *c, const GArray *region, guint32 ri, GPtrArray *waves,
                           GError **error)
{
	(void)c, (void)ri, (void)error;
	GArray *w = g_array_new(FALSE, FALSE, sizeof(guint32));
	g_array_append_vals(w, region->data, region->len);
	g_ptr_array_add(waves, w);
	return TRUE;
}

Test(iree_cost, a_bad_wave_step_is_refused)
{
	lh_models_init();
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhGraph) g = lh_graph_new("chain");
	guint32 a = t_kernel(g, "a", 100, 1), b = t_kernel(g, "b", 100, 1);
	t_dep(g, b, a);
	t_finish(g);
	static const LhIreeWaveStep flat = {"flat", waves_flat};
	GError *e = NULL;
	g_autoptr(LhParams) p = lh_params_new(NULL, NULL, NULL);
	LhPlan *plan = lh_iree_partition(g, hw, p, &lh_iree_regions_cost, &flat, 4, 0, 0, &e);
	cr_assert_null(plan);
	cr_assert(strstr(e->message, "wave step 'flat'") && strstr(e->message, "'b'"), "%s",
	          e->message);
	g_error_free(e);
}

/* Hand case: a copy in, three full-SM kernels of 100 ns, a copy out of all three. Waves by
 * cost: the copy, the three kernels together, the copy: 1000 + 300 + 1000 ns. */
Test(iree_cost, hand_case_and_class_bound)
{
	lh_models_init();
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhGraph) g = lh_graph_new("hand");
	guint32 in = t_op(g, "in", LH_OP_COPY_H2D, 10000); /* 10 GB/s: 1000 ns */
	guint32 k[3];
	for (int i = 0; i < 3; i++) {
		char name[8];
		g_snprintf(name, sizeof name, "k%d", i);
		k[i] = t_kernel(g, name, 100, 1);
		t_dep(g, k[i], in);
	}
	guint32 out = t_op(g, "out", LH_OP_COPY_D2H, 10000);
	for (int i = 0; i < 3; i++)
		t_dep(g, out, k[i]);
	t_finish(g);
	LhBounds b;
	lh_bounds(g, hw, NULL, &b);
	/* critical path 2100, SM work 300; the SM class: head 1000 + work 300 + tail 1000. */
	cr_assert_float_eq(b.critical_path, 2100, 1e-6);
	cr_assert_float_eq(b.sm_work, 300, 1e-6);
	cr_assert_float_eq(b.class_sm, 2300, 1e-6);
	cr_assert_float_eq(b.bound, 2300, 1e-6);
	cr_assert_str_eq(b.binding, "SM class");
	GError *e = NULL;
	g_autoptr(LhPlan) p = plan_of("iree-cost", g, hw, NULL, &e);
	cr_assert(p, "%s", e ? e->message : "?");
	g_autoptr(LhTrace) t = sim_valid(g, hw, p, "hand", 0);
	cr_assert_eq(t_makespan(t), 2300);
}

Test(search, random_dags_valid_limits_kept_never_worse, .timeout = 240)
{
	lh_models_init();
	g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", NULL);
	const char *kv[] = {"evals=60", "async-compute-limit=1", "collective-limit=1", NULL};
	const char *skv[] = {"async-compute-limit=1", "collective-limit=1", NULL};
	for (guint64 seed = 1; seed <= 40; seed++) {
		g_autoptr(LhGraph) g = random_graph(seed);
		GError *e = NULL;
		g_autoptr(LhPlan) s0 = plan_of("lhs", g, hw, skv, &e);
		g_autoptr(LhTrace) t0 = sim_valid(g, hw, s0, "lhs", seed);
		g_autoptr(LhPlan) p = plan_of("search", g, hw, kv, &e);
		cr_assert(p, "seed %lu: %s", (unsigned long)seed, e ? e->message : "?");
		g_autoptr(LhTrace) t = sim_valid(g, hw, p, "search", seed);
		cr_assert_leq(t_makespan(t), t_makespan(t0), "seed %lu: worse than its start",
		              (unsigned long)seed);
		cr_assert_leq(max_in_flight(g, t, LH_CLASS_ASYNC_COMPUTE), 1, "seed %lu",
		              (unsigned long)seed);
		cr_assert_leq(max_in_flight(g, t, LH_CLASS_COLLECTIVE), 1, "seed %lu",
		              (unsigned long)seed);
		/* Memory: within a limit at the start's own peak. */
		char ml[64];
		g_snprintf(ml, sizeof ml, "memory-limit=%.17g",
		           (double)t0->peak_device / 1073741824.0);
		const char *mkv[] = {"evals=30", ml, "async-compute-limit=1", "collective-limit=1",
		                     NULL};
		g_autoptr(LhPlan) mp = plan_of("search", g, hw, mkv, &e);
		cr_assert(mp, "seed %lu: %s", (unsigned long)seed, e ? e->message : "?");
		g_autoptr(LhTrace) mt = sim_valid(g, hw, mp, "search memory-limit", seed);
		cr_assert_leq(mt->peak_device, t0->peak_device);
	}
}

Test(search, same_seed_and_evals_same_plan)
{
	lh_models_init();
	g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", NULL);
	g_autoptr(LhGraph) g = random_graph(7);
	const char *kv[] = {"evals=200", "seed=3", NULL};
	GError *e = NULL;
	g_autoptr(LhPlan) a = plan_of("search", g, hw, kv, &e);
	g_autoptr(LhPlan) b = plan_of("search", g, hw, kv, &e);
	cr_assert(a && b);
	g_autofree char *da = lh_plan_to_data(a, g), *db = lh_plan_to_data(b, g);
	cr_assert_str_eq(da, db);
}

/* Every explicit region and wave step through the scheduler, with and without a memory limit
 * (at the serial schedule's peak, which one region of one-op waves always meets): valid plans,
 * the peak within the limit. */
Test(iree_cost, every_step_valid_and_within_memory_limit, .timeout = 240)
{
	lh_models_init();
	g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", NULL);
	static const char *const modes[][2] = {
	    {"regions=list", "concurrency=auto"},       {"regions=list", "concurrency=cost"},
	    {"regions=split", "concurrency=order"},     {"regions=reference", "concurrency=cost"},
	    {"regions=reference", "concurrency=order"}, {"regions=auto", "streams=2"},
	};
	for (guint64 seed = 1; seed <= 12; seed++) {
		g_autoptr(LhGraph) g = random_graph(seed);
		GError *e = NULL;
		g_autoptr(LhPlan) sp = plan_of("serial", g, hw, NULL, &e);
		g_autoptr(LhTrace) st = sim_valid(g, hw, sp, "serial", seed);
		char ml[64];
		g_snprintf(ml, sizeof ml, "memory-limit=%.17g",
		           (double)st->peak_device / 1073741824.0);
		for (gsize k = 0; k < G_N_ELEMENTS(modes); k++) {
			const char *kv[] = {modes[k][0], modes[k][1], NULL};
			g_autoptr(LhPlan) p = plan_of("iree-cost", g, hw, kv, &e);
			cr_assert(p, "seed %lu %s %s: %s", (unsigned long)seed, kv[0], kv[1],
			          e ? e->message : "?");
			g_autoptr(LhTrace) t = sim_valid(g, hw, p, kv[0], seed);
			const char *mkv[] = {modes[k][0], modes[k][1], ml, NULL};
			g_autoptr(LhPlan) mp = plan_of("iree-cost", g, hw, mkv, &e);
			cr_assert(mp, "seed %lu %s %s: %s", (unsigned long)seed, kv[0], kv[1],
			          e ? e->message : "?");
			g_autoptr(LhTrace) mt = sim_valid(g, hw, mp, kv[0], seed);
			cr_assert_leq(mt->peak_device, st->peak_device, "seed %lu %s %s",
			              (unsigned long)seed, kv[0], kv[1]);
		}
	}
}

/* Hand case for regions=list: k1, then a copy out of k1 and a kernel k2 after k1, then k3
 * after the copy. Tracks: k1 and k2 on compute track 0 (k2 goes to its dep's track), the
 * copy on the device-to-host track, k3 on a compute track. Cuts: after k1 (its consumer, the
 * copy, is on another track), so k2 opens a region; k3 opens one (its dep, the copy, is on
 * another track); the copy is alone on its track. Regions: {k1}, {copy}, {k2}, {k3}: 4, so 4
 * host submits; each region one op, one wave. */
Test(iree_cost, list_regions_cut_at_cross_track_edges)
{
	lh_models_init();
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhGraph) g = lh_graph_new("cut");
	guint32 k1 = t_kernel(g, "k1", 100, 1), k2 = t_kernel(g, "k2", 100, 1);
	guint32 d = t_op(g, "d", LH_OP_COPY_D2H, 10000), k3 = t_kernel(g, "k3", 100, 1);
	t_dep(g, k2, k1);
	t_dep(g, d, k1);
	t_dep(g, k3, d);
	t_finish(g);
	const char *kv[] = {"regions=list", "submit-ns=7", NULL};
	GError *e = NULL;
	g_autoptr(LhPlan) p = plan_of("iree-cost", g, hw, kv, &e);
	cr_assert(p, "%s", e ? e->message : "?");
	guint32 hosts = 0;
	for (guint32 i = 0; i < lh_plan_n_cmds(p); i++) {
		const LhCmd *c = lh_plan_cmd(p, i);
		if (c->kind == LH_CMD_HOST) {
			cr_assert_eq(c->arg, 7);
			hosts++;
		}
	}
	cr_assert_eq(hosts, 4);
	g_autoptr(LhTrace) t = sim_valid(g, hw, p, "list hand", 0);
}

/* search starts from a plugin's plan (the seeded shuffle plugin built in tests/): valid,
 * never worse than that start. */
Test(search, starts_from_a_plugin)
{
	lh_models_init();
	const char *dir = g_getenv("LHSIM_TEST_PLUGINS");
	cr_assert(dir, "LHSIM_TEST_PLUGINS is not set (run the tests through meson test)");
	g_autofree char *so = g_build_filename(dir, "shuffle.so", NULL);
	GError *e = NULL;
	const LhScheduler *sh = lh_scheduler_load_plugin(so, &e);
	cr_assert(sh, "%s", e ? e->message : "?");
	g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", NULL);
	for (guint64 seed = 1; seed <= 5; seed++) {
		g_autoptr(LhGraph) g = random_graph(seed);
		g_autoptr(LhPlan) s0 = plan_of(sh->name, g, hw, NULL, &e);
		cr_assert(s0, "%s", e ? e->message : "?");
		g_autoptr(LhTrace) t0 = sim_valid(g, hw, s0, sh->name, seed);
		char start[64];
		g_snprintf(start, sizeof start, "start=%s", sh->name);
		const char *kv[] = {start, "evals=40", NULL};
		g_autoptr(LhPlan) p = plan_of("search", g, hw, kv, &e);
		cr_assert(p, "seed %lu: %s", (unsigned long)seed, e ? e->message : "?");
		g_autoptr(LhTrace) t = sim_valid(g, hw, p, "search from a plugin", seed);
		cr_assert_leq(t_makespan(t), t_makespan(t0), "seed %lu", (unsigned long)seed);
	}
}

Test(search, bad_input_exits_2)
{
	static const char *const bad[][4] = {
	    {"search", "budget=0", "evals=5", "budget"},
	    {"search", "budget=-1", "evals=5", "budget"},
	    {"search", "evals=0", "seed=1", "evals"},
	    {"search", "start=nope", "evals=5", "start=nope: no such scheduler"},
	    {"search", "start=search", "evals=5", "cannot start from itself"},
	    {"search", "start=", "evals=5", "'start'"},
	    {"search", "memory-limit=0.001", "evals=20", "smallest peak found"},
	    {"iree-cost", "memory-limit=0.001", "streams=2", "smallest peak found"},
	};
	for (gsize k = 0; k < G_N_ELEMENTS(bad); k++) {
		g_autofree char *out = NULL, *err = NULL;
		int st = t_lhsim(&out, &err, "run", "--sched", bad[k][0], "-p", bad[k][1], "-p",
		                 bad[k][2], NULL);
		cr_assert_eq(st, 2, "%s %s: exit %d: %s", bad[k][0], bad[k][1], st, err);
		cr_assert(strstr(err, bad[k][3]), "%s %s: %s", bad[k][0], bad[k][1], err);
	}
}

/* STG instances: search from heft within 0.5 % of the optimum on average, never worse than
 * heft; iree-cost within 10 % of heft on average. */
Test(search, stg_against_the_optima, .timeout = 300)
{
	lh_models_init();
	GError *e = NULL;
	g_autoptr(LhHw) hw = lh_hw_lookup("ideal", &e);
	cr_assert(hw);
	g_autofree char *path = t_data("stg/OPTIMA.md");
	g_autofree char *text = NULL;
	cr_assert(g_file_get_contents(path, &text, NULL, NULL));
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	static const guint Ps[4] = {2, 4, 8, 16};
	double gap_search = 0, gap_heft = 0, gap_cost = 0;
	guint count = 0;
	for (guint i = 0; lines[i]; i++) {
		if (!g_str_has_prefix(lines[i], "| 50/") && !g_str_has_prefix(lines[i], "| 100/"))
			continue;
		g_auto(GStrv) cell = g_strsplit(lines[i], "|", -1);
		g_autofree char *rel = g_build_filename("stg", g_strstrip(cell[1]), NULL);
		g_autofree char *file = t_data(rel);
		for (guint k = 0; k < 4; k++) {
			const char *c = cell[7 + k];
			while (*c && !g_ascii_isdigit(*c))
				c++;
			char *end;
			double best = strtod(c, &end), lower = best;
			if (g_str_has_prefix(end, "\xe2\x80\x93"))
				best = strtod(end + 3, NULL);
			g_autoptr(LhGraph) g = lh_stg_import_file(file, Ps[k], &e);
			cr_assert(g);
			char streams[32];
			g_snprintf(streams, sizeof streams, "streams=%u", Ps[k]);
			const char *hkv[] = {streams, NULL};
			const char *skv[] = {"start=heft", streams, "evals=400", NULL};
			g_autoptr(LhPlan) hp = plan_of("heft", g, hw, hkv, &e);
			g_autoptr(LhPlan) sp = plan_of("search", g, hw, skv, &e);
			g_autoptr(LhPlan) cp = plan_of("iree-cost", g, hw, hkv, &e);
			cr_assert(hp && sp && cp);
			g_autoptr(LhTrace) ht = t_sim(g, hw, hp);
			g_autoptr(LhTrace) st = t_sim(g, hw, sp);
			g_autoptr(LhTrace) ct = t_sim(g, hw, cp);
			double h = (double)t_makespan(ht) / LH_STG_UNIT_NS;
			double s = (double)t_makespan(st) / LH_STG_UNIT_NS;
			double co = (double)t_makespan(ct) / LH_STG_UNIT_NS;
			cr_assert_geq(s, lower);
			cr_assert_leq(s, h, "%s P=%u: search %.1f worse than heft %.1f", rel, Ps[k],
			              s, h);
			gap_search += s / best - 1;
			gap_heft += h / best - 1;
			gap_cost += co / h - 1;
			count++;
		}
	}
	cr_assert_eq(count, 80);
	fprintf(stderr,
	        "stg: search (start=heft, 400 evals) mean gap %.3f %%, heft %.3f %%; iree-cost "
	        "%.2f %% above heft\n",
	        100 * gap_search / count, 100 * gap_heft / count, 100 * gap_cost / count);
	cr_assert_leq(gap_search / count, 0.005);
	cr_assert_leq(gap_cost / count, 0.10);
}

/* A chain on one stream leaves no move: the search ends (it used to draw forever). */
Test(search, ends_when_no_move_is_left, .timeout = 20)
{
	lh_models_init();
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhGraph) g = lh_graph_new("chain");
	guint32 a = t_kernel(g, "a", 100, 1), b = t_kernel(g, "b", 100, 1),
	        c = t_kernel(g, "c", 100, 1);
	t_dep(g, b, a);
	t_dep(g, c, b);
	t_finish(g);
	const char *kv[] = {"start=serial", "evals=100", NULL};
	GError *e = NULL;
	g_autoptr(LhPlan) p = plan_of("search", g, hw, kv, &e);
	cr_assert(p, "%s", e ? e->message : "?");
	g_autoptr(LhTrace) t = sim_valid(g, hw, p, "chain", 0);
	cr_assert_eq(t_makespan(t), 300);
}
