/* lhsim replay — predict a plan, run it on a backend, compare op by op. */
#include "cli/common.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Backend errors: "cannot run here" and "failed while running" are failed runs (1); an
 * unknown backend, a plan that cannot be replayed or a bad option are bad input (2). */
static int replay_fail(GError *e)
{
	if (e->domain == LH_BACKEND_ERROR) {
		int st =
		    e->code == LH_BACKEND_ERROR_UNAVAILABLE || e->code == LH_BACKEND_ERROR_FAILED
		        ? LH_EXIT_FAILED
		        : LH_EXIT_BAD_INPUT;
		fprintf(stderr, "lhsim: %s\n", e->message);
		g_error_free(e);
		return st;
	}
	return cli_fail(e);
}

typedef struct {
	char *label;
	LhPlan *plan;
	LhTrace *pred, *meas;
	LhReplayStats st;
	double scale;
} Sched;

static void sched_clear(Sched *s)
{
	g_free(s->label);
	lh_plan_free(s->plan);
	lh_trace_free(s->pred);
	lh_trace_free(s->meas);
	lh_replay_stats_clear(&s->st);
}

/* "lhs:async-compute-limit=2" -> a plan; -p values apply where the scheduler has them and the
 * entry does not set them itself. */
static LhPlan *make_plan(const char *entry, char **params, const LhGraph *g, const LhHw *hw,
                         GError **error)
{
	g_autoptr(GPtrArray) one = cli_sched_parse(entry, error);
	if (!one)
		return NULL;
	const CliSched *en = g_ptr_array_index(one, 0);
	g_auto(GStrv) kv = cli_sched_params(en, params, NULL);
	LhPlan *plan = lh_scheduler_run(en->s, g, hw, (const char *const *)kv, NULL, error);
	if (plan && !lh_plan_validate(plan, g, entry, error)) {
		cli_blame_scheduler(en->s, error);
		lh_plan_free(plan);
		return NULL;
	}
	return plan;
}

/* validate.png + "lhs:async-compute-limit=2" -> validate-lhs_async-compute-limit=2.png */
static char *out_path_for(const char *path, const char *label)
{
	g_autofree char *safe = g_strdup(label);
	for (char *c = safe; *c; c++)
		if (!g_ascii_isalnum(*c) && *c != '-' && *c != '.' && *c != '=')
			*c = '_';
	const char *dot = strrchr(path, '.');
	const char *slash = strrchr(path, '/');
	if (!dot || (slash && dot < slash))
		return g_strdup_printf("%s-%s", path, safe);
	return g_strdup_printf("%.*s-%s%s", (int)(dot - path), path, safe, dot);
}

static char *pct(double v)
{
	if (isnan(v))
		return g_strdup("-");
	return g_strdup_printf("%+.1f%%", 100 * v);
}

static char *pct3(const LhErrorSummary *s)
{
	if (!s->n)
		return g_strdup("-");
	return g_strdup_printf("%.1f%% / %.1f%% / %.1f%%", 100 * s->median, 100 * s->p90,
	                       100 * s->max);
}

static void json_summary(JsonBuilder *b, const char *name, const LhErrorSummary *s)
{
	json_builder_set_member_name(b, name);
	json_builder_begin_object(b);
	json_builder_set_member_name(b, "n");
	json_builder_add_int_value(b, s->n);
	json_builder_set_member_name(b, "median");
	json_builder_add_double_value(b, s->median);
	json_builder_set_member_name(b, "p90");
	json_builder_add_double_value(b, s->p90);
	json_builder_set_member_name(b, "max");
	json_builder_add_double_value(b, s->max);
	json_builder_end_object(b);
}

static void json_num(JsonBuilder *b, const char *name, double v)
{
	json_builder_set_member_name(b, name);
	if (isnan(v))
		json_builder_add_null_value(b);
	else
		json_builder_add_double_value(b, v);
}

static void json_int(JsonBuilder *b, const char *name, gint64 v)
{
	json_builder_set_member_name(b, name);
	json_builder_add_int_value(b, v);
}

static void print_ops(const Sched *s, const LhGraph *g, gboolean all)
{
	guint32 n = lh_graph_n_ops(g);
	g_autofree guint32 *idx = g_new(guint32, MAX(n, 1));
	guint32 k = 0;
	for (guint32 i = 0; i < n; i++)
		if (!isnan(s->st.end_err[i]))
			idx[k++] = i;
	if (!all) {
		/* The five ops that finish furthest from their prediction. */
		for (guint32 a = 0; a < k; a++)
			for (guint32 b = a + 1; b < k; b++)
				if (fabs(s->st.end_err[idx[b]]) > fabs(s->st.end_err[idx[a]])) {
					guint32 t = idx[a];
					idx[a] = idx[b];
					idx[b] = t;
				}
		k = MIN(k, 5);
		if (k)
			fprintf(cli_report_stream(),
			        "    ops finishing furthest from the prediction:\n");
	}
	for (guint32 j = 0; j < k; j++) {
		guint32 i = idx[j];
		const LhOp *op = lh_graph_op(g, i);
		const LhOpTiming *p = &s->pred->ops[i], *m = &s->meas->ops[i];
		g_autofree char *pd = lh_format_ns((double)(p->end - p->start));
		g_autofree char *md = lh_format_ns((double)(m->end - m->start));
		g_autofree char *pe = lh_format_ns((double)p->end);
		g_autofree char *me = lh_format_ns((double)m->end);
		g_autofree char *de = pct(s->st.dur_err[i]);
		g_autofree char *ee = pct(s->st.end_err[i]);
		fprintf(cli_report_stream(),
		        "    %-24s %-18s duration %11s -> %11s (%7s)  end %11s -> %11s (%7s of "
		        "makespan)%s\n",
		        op->name, lh_op_kind_name(op->kind), pd, md, de, pe, me, ee,
		        lh_op_kind_is_collective(op->kind) && strstr(s->meas->source, "emulated")
		            ? "  [emulated]"
		            : "");
	}
}

int cli_replay(int argc, char **argv)
{
	g_autofree char *backend = NULL, *hw_name = NULL, *sched = NULL, *plan_path = NULL,
	                *out_path = NULL;
	g_auto(GStrv) params = NULL, plugins = NULL;
	gboolean json = FALSE, per_op = FALSE;
	double time_scale = 0, min_op_ns = 20000, tie = 0.01;
	/* G_MININT: not given (the backend's default); any value given is checked. */
	int warmup = G_MININT, repeats = G_MININT, device = 0;
	GOptionEntry entries[] = {
	    {"backend", 'b', 0, G_OPTION_ARG_STRING, &backend,
	     "where to replay: cpu or cuda (required)", "B"},
	    {"hw", 0, 0, G_OPTION_ARG_STRING, &hw_name,
	     "hardware model for the prediction and the kernel sizes: a built-in or an .ini from "
	     "'lhsim calibrate' (default h100-sxm)",
	     "H"},
	    {"sched", 's', 0, G_OPTION_ARG_STRING, &sched,
	     "schedulers, comma-separated, each with optional ':k=v' parameters "
	     "(lhs:async-compute-limit=4)",
	     "S[,S2...]"},
	    {"param", 'p', 0, G_OPTION_ARG_STRING_ARRAY, &params,
	     "parameter for every listed scheduler that has it, repeatable", "K=V"},
	    {"plugin", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &plugins,
	     "load a scheduler plugin (.so), repeatable", "F.so"},
	    {"plan", 0, 0, G_OPTION_ARG_FILENAME, &plan_path,
	     "replay this plan instead of running a scheduler", "P"},
	    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &out_path,
	     "draw the validation view (.png, .svg or .pdf); with several schedulers, one file "
	     "each, named after them",
	     "FILE"},
	    {"json", 0, 0, G_OPTION_ARG_NONE, &json, "print the comparison as JSON", NULL},
	    {"per-op", 0, 0, G_OPTION_ARG_NONE, &per_op,
	     "print every op's error, not only the five worst", NULL},
	    {"time-scale", 0, 0, G_OPTION_ARG_DOUBLE, &time_scale,
	     "cpu: wall-clock ns per predicted ns (default: chosen so that the median op sleeps >= "
	     "5 ms)",
	     "X"},
	    {"warmup", 0, 0, G_OPTION_ARG_INT, &warmup,
	     "untimed runs first (default: cuda 2, cpu 0)", "N"},
	    {"repeats", 0, 0, G_OPTION_ARG_INT, &repeats,
	     "timed runs; times are medians (default: cuda 5, cpu 1)", "N"},
	    {"device", 0, 0, G_OPTION_ARG_INT, &device, "cuda: device ordinal (default 0)", "N"},
	    {"min-op", 0, 0, G_OPTION_ARG_DOUBLE, &min_op_ns,
	     "leave ops predicted shorter than this out of the op duration error (default 20000 "
	     "ns)",
	     "NS"},
	    {"tie", 0, 0, G_OPTION_ARG_DOUBLE, &tie,
	     "schedules predicted within this fraction of each other count as tied in the ranking "
	     "(default 0.01)",
	     "F"},
	    {NULL, 0, 0, 0, NULL, NULL, NULL},
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("[GRAPH]");
	g_option_context_set_summary(
	    ctx, "Predicts each plan with the engine, replays it on a backend and compares them:\n"
	         "the error on the makespan and per op (median, p90, max). With several\n"
	         "schedulers, also says whether they rank the same predicted and measured.\n"
	         "Errors are (measured - predicted) / predicted; an op's end error is relative to\n"
	         "the predicted makespan. On cuda, collectives are emulated by SM-occupying\n"
	         "kernels of their predicted length (one GPU has no peers).");
	g_option_context_add_main_entries(ctx, entries, NULL);
	int status;
	if (!cli_parse(ctx, &argc, &argv, &status))
		return status;
	if (argc > 2)
		return cli_usage("replay", "expected at most one GRAPH, got %d", argc - 1);
	if (!backend)
		return cli_usage("replay", "--backend is required (cpu or cuda)");
	if (!sched == !plan_path)
		return cli_usage("replay", "give either --sched S[,S2...] or --plan P");
	if (plan_path && params)
		return cli_usage("replay", "-p goes with --sched, not --plan");
	if (time_scale < 0 || !isfinite(time_scale))
		return cli_usage("replay", "--time-scale must be > 0 (or 0 to choose)");
	if (repeats != G_MININT && repeats < 1)
		return cli_usage("replay", "--repeats must be at least 1, got %d", repeats);
	if (warmup != G_MININT && warmup < 0)
		return cli_usage("replay", "--warmup must be at least 0, got %d", warmup);
	if (device < 0)
		return cli_usage("replay", "--device must be at least 0, got %d", device);
	if (!(min_op_ns >= 0) || !(tie >= 0 && tie < 1))
		return cli_usage("replay", "--min-op must be >= 0 and --tie in [0, 1)");

	GError *e = NULL;
	if (!cli_claim_stdout("--output", out_path, &e))
		return cli_fail(e);
	if (json && cli_report_stream() != stdout)
		return cli_usage("replay",
		                 "--json prints to standard output, which a file given as "
		                 "'-' already takes");
	if (out_path && sched && strchr(sched, ',') && cli_report_stream() != stdout)
		return cli_usage("replay", "with several schedulers -o names one file each, after "
		                           "them: give a file name, not '-'");
	if (out_path && !lh_viz_check_path(out_path, &e))
		return cli_fail(e);
	const LhBackend *be = lh_backend_lookup(backend, &e);
	if (!be)
		return replay_fail(e);
	if (!cli_load_plugins(plugins, &e))
		return cli_fail(e);
	g_autoptr(LhGraph) g = cli_load_graph(argc > 1 ? argv[1] : NULL, &e);
	if (!g)
		return cli_fail(e);
	g_autoptr(LhHw) hw = cli_load_hw(hw_name, &e);
	if (!hw)
		return cli_fail(e);
	/* The GPU's hardware queues are fixed when CUDA starts: give it the model's number
	 * before anything touches CUDA, unless the user chose one. */
	g_autofree char *queues = g_strdup_printf("%u", hw->hw_queues);
	g_setenv("CUDA_DEVICE_MAX_CONNECTIONS", queues, FALSE);
	if (!be->available(&e))
		return replay_fail(e);

	gboolean is_cpu = strcmp(be->name, "cpu") == 0;
	LhReplayOptions opt;
	lh_replay_options_init(&opt);
	opt.time_scale = time_scale;
	opt.warmup = warmup != G_MININT ? (guint32)warmup : is_cpu ? 0 : 2;
	opt.repeats = repeats != G_MININT ? (guint32)repeats : is_cpu ? 1 : 5;
	opt.device = device;

	g_auto(GStrv) labels = NULL;
	if (plan_path) {
		labels = g_new0(char *, 2);
		labels[0] = g_strdup(plan_path);
	} else {
		labels = g_strsplit(sched, ",", -1);
	}
	guint n = g_strv_length(labels);
	if (n == 0)
		return cli_usage("replay", "--sched lists no scheduler");
	g_autofree Sched *sc = g_new0(Sched, n);
	int rc = 0;
	for (guint i = 0; i < n && !rc; i++) {
		Sched *s = &sc[i];
		s->label = g_strdup(labels[i]);
		if (plan_path) {
			s->plan = cli_load_plan(plan_path, g, &e);
		} else {
			s->plan = make_plan(labels[i], params, g, hw, &e);
		}
		if (!s->plan || !lh_backend_check_plan(g, s->plan, &e)) {
			rc = replay_fail(e);
			break;
		}
		LhSimOptions so = {.skip_validate = TRUE};
		s->pred = lh_simulate(g, hw, s->plan, &so, NULL, &e);
		if (!s->pred) {
			rc = cli_fail(e);
			break;
		}
		opt.predicted = s->pred;
		s->scale = is_cpu ? lh_replay_time_scale(&opt, g, s->pred) : 1;
		LhReplayOptions o = opt;
		o.time_scale = s->scale;
		if (cli_stderr_is_tty())
			fprintf(stderr, "lhsim: replaying %s on %s...\n", s->label, be->name);
		s->meas = be->replay(g, s->plan, hw, &o, &e);
		if (!s->meas) {
			rc = replay_fail(e);
			break;
		}
		if (!lh_replay_compare(g, s->pred, s->meas, min_op_ns, &s->st, &e)) {
			rc = replay_fail(e);
			break;
		}
		if (out_path) {
			g_autofree char *path =
			    n > 1 ? out_path_for(out_path, s->label) : g_strdup(out_path);
			if (!lh_viz_validation(path, g, hw, s->plan, s->pred, s->meas, &e)) {
				rc = cli_fail(e);
				break;
			}
		}
	}
	if (rc) {
		for (guint i = 0; i < n; i++)
			sched_clear(&sc[i]);
		return rc;
	}

	g_autofree double *mk_err = g_new(double, n);
	g_autofree double *mp = g_new(double, n);
	g_autofree double *mm = g_new(double, n);
	for (guint i = 0; i < n; i++) {
		mk_err[i] = sc[i].st.makespan_err;
		mp[i] = (double)sc[i].st.makespan_pred;
		mm[i] = (double)sc[i].st.makespan_meas;
	}
	LhErrorSummary mks;
	lh_error_summarize(mk_err, n, &mks);
	guint32 bi = 0, bj = 0;
	gboolean same = lh_ranking_same(mp, mm, n, tie, &bi, &bj);
	const char *source = sc[0].meas->source;

	if (json) {
		g_autoptr(JsonBuilder) b = json_builder_new();
		json_builder_begin_object(b);
		json_builder_set_member_name(b, "graph");
		json_builder_add_string_value(b, lh_graph_name(g));
		json_builder_set_member_name(b, "hw");
		json_builder_add_string_value(b, hw->name);
		json_builder_set_member_name(b, "backend");
		json_builder_add_string_value(b, be->name);
		json_builder_set_member_name(b, "source");
		json_builder_add_string_value(b, source);
		json_builder_set_member_name(b, "schedules");
		json_builder_begin_array(b);
		for (guint i = 0; i < n; i++) {
			const Sched *s = &sc[i];
			json_builder_begin_object(b);
			json_builder_set_member_name(b, "label");
			json_builder_add_string_value(b, s->label);
			json_num(b, "time_scale", s->scale);
			json_int(b, "predicted_ns", s->st.makespan_pred);
			json_int(b, "measured_ns", s->st.makespan_meas);
			json_num(b, "makespan_error", s->st.makespan_err);
			json_summary(b, "op_duration_error", &s->st.dur);
			json_summary(b, "op_end_error", &s->st.end);
			json_builder_set_member_name(b, "ops");
			json_builder_begin_array(b);
			for (guint32 k = 0; k < lh_graph_n_ops(g); k++) {
				if (isnan(s->st.end_err[k]))
					continue;
				const LhOp *op = lh_graph_op(g, k);
				const LhOpTiming *p = &s->pred->ops[k], *m = &s->meas->ops[k];
				json_builder_begin_object(b);
				json_builder_set_member_name(b, "name");
				json_builder_add_string_value(b, op->name);
				json_builder_set_member_name(b, "kind");
				json_builder_add_string_value(b, lh_op_kind_name(op->kind));
				json_builder_set_member_name(b, "stream");
				json_builder_add_string_value(
				    b, lh_plan_stream(s->plan, (guint32)m->stream)->name);
				json_int(b, "pred_start_ns", p->start);
				json_int(b, "pred_end_ns", p->end);
				json_int(b, "meas_start_ns", m->start);
				json_int(b, "meas_end_ns", m->end);
				json_num(b, "duration_error", s->st.dur_err[k]);
				json_num(b, "end_error", s->st.end_err[k]);
				json_builder_set_member_name(b, "emulated");
				json_builder_add_boolean_value(
				    b, lh_op_kind_is_collective(op->kind) &&
				           strstr(s->meas->source, "emulated") != NULL);
				json_builder_end_object(b);
			}
			json_builder_end_array(b);
			json_builder_end_object(b);
		}
		json_builder_end_array(b);
		json_summary(b, "makespan_error", &mks);
		json_builder_set_member_name(b, "ranking_same");
		if (n > 1)
			json_builder_add_boolean_value(b, same);
		else
			json_builder_add_null_value(b);
		json_builder_end_object(b);
		g_autoptr(JsonGenerator) gen = json_generator_new();
		g_autoptr(JsonNode) root = json_builder_get_root(b);
		json_generator_set_root(gen, root);
		json_generator_set_pretty(gen, TRUE);
		g_autofree char *text = json_generator_to_data(gen, NULL);
		fprintf(cli_report_stream(), "%s\n", text);
	} else {
		fprintf(cli_report_stream(), "replay of %s (%u ops) on %s, backend %s",
		        lh_graph_name(g), lh_graph_n_ops(g), hw->name, source);
		if (is_cpu)
			fprintf(cli_report_stream(), ", time scale %g", sc[0].scale);
		fprintf(cli_report_stream(), ", %u timed run%s\n", opt.repeats,
		        opt.repeats == 1 ? "" : "s");
		int w = 9;
		for (guint i = 0; i < n; i++)
			w = MAX(w, (int)strlen(sc[i].label));
		fprintf(cli_report_stream(), "  %-*s  %12s  %12s  %8s  %-30s  %s\n", w, "schedule",
		        "predicted", "measured", "error", "op duration error med/p90/max",
		        "op end error med/p90/max");
		for (guint i = 0; i < n; i++) {
			const Sched *s = &sc[i];
			g_autofree char *p = lh_format_ns((double)s->st.makespan_pred);
			g_autofree char *m = lh_format_ns((double)s->st.makespan_meas);
			g_autofree char *er = pct(s->st.makespan_err);
			g_autofree char *d = pct3(&s->st.dur);
			g_autofree char *en = pct3(&s->st.end);
			fprintf(cli_report_stream(), "  %-*s  %12s  %12s  %8s  %-30s  %s\n", w,
			        s->label, p, m, er, d, en);
		}
		for (guint i = 0; i < n; i++) {
			fprintf(cli_report_stream(), "  %s:\n", sc[i].label);
			print_ops(&sc[i], g, per_op);
		}
		fprintf(
		    cli_report_stream(),
		    "makespan error over %u schedule%s: median %.1f%%, p90 %.1f%%, max %.1f%%\n", n,
		    n == 1 ? "" : "s", 100 * mks.median, 100 * mks.p90, 100 * mks.max);
		if (n > 1) {
			if (same)
				fprintf(
				    cli_report_stream(),
				    "ranking: the same predicted and measured (schedules within "
				    "%.1f%% of each other count as tied)\n",
				    100 * tie);
			else
				fprintf(cli_report_stream(),
				        "ranking: DIFFERS: %s is predicted %s than %s, measured "
				        "%s\n",
				        sc[bi].label, mp[bi] < mp[bj] ? "faster" : "slower",
				        sc[bj].label,
				        mm[bi] == mm[bj]  ? "equal"
				        : mm[bi] < mm[bj] ? "faster"
				                          : "slower");
		}
		if (strstr(source, "emulated"))
			fprintf(
			    cli_report_stream(),
			    "note: collectives are emulated on one GPU by SM-occupying kernels of "
			    "their predicted length\n");
	}
	for (guint i = 0; i < n; i++)
		sched_clear(&sc[i]);
	return 0;
}
