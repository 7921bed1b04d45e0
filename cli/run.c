/* lhsim run — schedule (or load a plan), simulate, report. */
#include "cli/common.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A time with a unit ("1.5ms", "200us", "3s", "40ns"; a bare number is ns). */
static gboolean parse_time(const char *s, gint64 *out)
{
	char *end = NULL;
	if (!*s || !(g_ascii_isdigit(*s) || *s == '.'))
		return FALSE;
	double v = g_ascii_strtod(s, &end);
	double mul = 1;
	if (!*end || strcmp(end, "ns") == 0)
		mul = 1;
	else if (strcmp(end, "us") == 0)
		mul = 1e3;
	else if (strcmp(end, "ms") == 0)
		mul = 1e6;
	else if (strcmp(end, "s") == 0)
		mul = 1e9;
	else
		return FALSE;
	v *= mul;
	if (!isfinite(v) || v < 0 || v > (double)LH_MAX_TIME_NS)
		return FALSE;
	*out = (gint64)llround(v);
	return TRUE;
}

/* One side of --window: a time, or an op of the graph (its start for the first side, its end
 * for the second). */
static gboolean window_side(const char *s, gboolean second, const LhGraph *g, const LhTrace *t,
                            gint64 *out)
{
	if (parse_time(s, out))
		return TRUE;
	guint32 i;
	if (!lh_graph_find(g, s, &i) || t->ops[i].start < 0)
		return FALSE;
	*out = second ? t->ops[i].end : t->ops[i].start;
	return TRUE;
}

/* --window T0:T1 against the run: times or op names on either side. An op name may hold ':',
 * so every split is tried, the first that reads wins. */
static gboolean parse_window(const char *spec, const LhGraph *g, const LhTrace *t, gint64 *t0,
                             gint64 *t1, GError **error)
{
	for (const char *c = strchr(spec, ':'); c; c = strchr(c + 1, ':')) {
		g_autofree char *a = g_strndup(spec, c - spec);
		if (window_side(a, FALSE, g, t, t0) && window_side(c + 1, TRUE, g, t, t1)) {
			if (*t1 > *t0)
				return TRUE;
			g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PARAM,
			            "--window %s: the window ends before it starts", spec);
			return FALSE;
		}
	}
	g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PARAM,
	            "--window %s: expected T0:T1, each a time (1.5ms, 200us, 3s; a bare number is "
	            "ns) or the name of an op that ran (its start, then its end)",
	            spec);
	return FALSE;
}

int cli_run(int argc, char **argv)
{
	g_autofree char *hw_name = NULL, *sched = NULL, *plan_path = NULL, *save_plan = NULL,
	                *trace_path = NULL, *out_path = NULL, *profile = NULL;
	g_auto(GStrv) params = NULL, plugins = NULL, slow = NULL;
	gboolean json = FALSE, explain = FALSE, strict = FALSE;
	g_autofree char *window = NULL;
	gint width = 0, height = 0;
	gdouble dpi = 0;
	GOptionEntry entries[] = {
	    {"hw", 0, 0, G_OPTION_ARG_STRING, &hw_name, CLI_HW_HELP, "H"},
	    {"slow", 0, 0, G_OPTION_ARG_STRING_ARRAY, &slow, CLI_SLOW_HELP, "D=F"},
	    {"sched", 's', 0, G_OPTION_ARG_STRING, &sched,
	     "scheduler (default serial; see 'lhsim list')", "S"},
	    {"param", 'p', 0, G_OPTION_ARG_STRING_ARRAY, &params, "scheduler parameter, repeatable",
	     "K=V"},
	    {"plugin", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &plugins,
	     "load a scheduler plugin (.so), repeatable", "F.so"},
	    {"explain", 0, 0, G_OPTION_ARG_NONE, &explain,
	     "log each scheduling decision and its rule to stderr", NULL},
	    {"plan", 0, 0, G_OPTION_ARG_FILENAME, &plan_path,
	     "simulate this plan instead of running a scheduler", "P"},
	    {"save-plan", 0, 0, G_OPTION_ARG_FILENAME, &save_plan,
	     "write the scheduler's plan as text", "P"},
	    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &out_path,
	     "draw the timeline (.png, .svg or .pdf)", "FILE"},
	    {"width", 0, 0, G_OPTION_ARG_INT, &width,
	     "the timeline's width in pixels (default 1600)", "PX"},
	    {"height", 0, 0, G_OPTION_ARG_INT, &height,
	     "the timeline's height in pixels: the lanes take what is left (default: 24 px a lane)",
	     "PX"},
	    {"dpi", 0, 0, G_OPTION_ARG_DOUBLE, &dpi,
	     "PNG resolution (default 96: one pixel a unit)", "D"},
	    {"window", 0, 0, G_OPTION_ARG_STRING, &window,
	     "draw only T0:T1, times (1.5ms:2ms) or op names (the first's start to the second's "
	     "end)",
	     "T0:T1"},
	    {"trace", 0, 0, G_OPTION_ARG_FILENAME, &trace_path, "write a Chrome/Perfetto trace",
	     "T.json"},
	    {"profile", 0, 0, G_OPTION_ARG_FILENAME, &profile,
	     "XLA PGLE profile (ProfiledInstructionsProto text): measured op costs replace the "
	     "model's",
	     "P.pbtxt"},
	    {"json", 0, 0, G_OPTION_ARG_NONE, &json, "print the metrics as JSON instead of a table",
	     NULL},
	    {"strict-memory", 0, 0, G_OPTION_ARG_NONE, &strict,
	     "exceeding device memory is an error", NULL},
	    {NULL, 0, 0, 0, NULL, NULL, NULL},
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("[GRAPH]");
	g_option_context_set_summary(ctx, "Schedules GRAPH (JSON or HLO; default: the built-in "
	                                  "moe-offload workload) and simulates it.");
	g_option_context_add_main_entries(ctx, entries, NULL);
	int status;
	if (!cli_parse(ctx, &argc, &argv, &status))
		return status;
	if (argc > 2)
		return cli_usage("run", "expected at most one GRAPH, got %d", argc - 1);
	if (plan_path && (sched || params))
		return cli_usage("run", "--plan replaces the scheduler: drop --sched and -p");
	if ((width || height || dpi != 0 || window) && !out_path)
		return cli_usage("run", "--width, --height, --dpi and --window shape the timeline: "
		                        "give it with -o FILE");
	if (width < 0 || height < 0 || (width && width < 400) || width > 32767 || height > 32767)
		return cli_usage("run", "--width is 400 to 32767 pixels, --height at most 32767");
	if (dpi != 0 && !(dpi >= 10 && dpi <= 2400))
		return cli_usage("run", "--dpi is 10 to 2400");
	if (plan_path && save_plan)
		return cli_usage("run", "--save-plan needs a scheduler, not --plan");
	if (plan_path && explain)
		return cli_usage("run", "--explain shows a scheduler's decisions, and a plan given "
		                        "with --plan was made by none here: drop --explain (the "
		                        "plan's comments may say what made it)");

	GError *e = NULL;
	/* Standard output goes to one of them at most; the report then goes to stderr. */
	if (!cli_claim_stdout("--output", out_path, &e) ||
	    !cli_claim_stdout("--trace", trace_path, &e) ||
	    !cli_claim_stdout("--save-plan", save_plan, &e))
		return cli_fail(e);
	if (json && cli_report_stream() != stdout)
		return cli_usage("run", "--json prints to standard output, which a file given as "
		                        "'-' already takes");
	/* Check the outputs before the work, not after it. */
	if (out_path && !lh_viz_check_path(out_path, &e))
		return cli_fail(e);
	if (trace_path && !lh_output_check(trace_path, &e))
		return cli_fail(e);
	if (save_plan && !lh_output_check(save_plan, &e))
		return cli_fail(e);
	if (!cli_load_plugins(plugins, &e))
		return cli_fail(e);
	g_autoptr(LhGraph) g = cli_load_graph(argc > 1 ? argv[1] : NULL, &e);
	if (!g)
		return cli_fail(e);
	g_autoptr(CliHw) H = cli_hw_new(hw_name, slow, g, &e);
	if (!H)
		return cli_fail(e);
	const LhHw *hw = H->hw;
	if (!cli_apply_profile(g, profile, hw, &e))
		return cli_fail(e);
	g_autoptr(LhPlan) plan = NULL;
	const LhScheduler *s = NULL;
	if (plan_path) {
		plan = cli_load_plan(plan_path, g, &e);
		if (!plan)
			return cli_fail(e);
	} else {
		s = lh_scheduler_lookup(sched ? sched : "serial", &e);
		if (!s)
			return cli_fail(e);
		cli_phase(lh_graph_n_ops(g), "scheduling");
		plan = cli_hw_schedule(H, s, g, (const char *const *)params,
		                       explain ? stderr : NULL, &e);
		cli_phase(lh_graph_n_ops(g), NULL);
		if (!plan)
			return cli_fail(e);
	}
	cli_phase(lh_graph_n_ops(g), "validating the plan");
	gboolean valid = lh_plan_validate(
	    plan, g, plan_path && lh_path_is_std(plan_path) ? LH_STDIN_NAME : plan_path, &e);
	cli_phase(lh_graph_n_ops(g), NULL);
	if (!valid) {
		if (s)
			cli_blame_scheduler(s, &e);
		return cli_fail(e);
	}
	LhSimOptions opt = {.strict_memory = strict, .skip_validate = TRUE};
	cli_hw_sim_options(H, &opt);
	gboolean over = FALSE;
	cli_phase(lh_graph_n_ops(g), "simulating");
	g_autoptr(LhTrace) tr = lh_simulate(g, hw, plan, &opt, &over, &e);
	cli_phase(lh_graph_n_ops(g), NULL);
	if (!tr)
		return cli_fail(e);
	LhMetrics m;
	lh_metrics_compute_devices(tr, g, hw, (const LhHw *const *)H->device_hw, plan, &m);
	if (trace_path) {
		g_autofree char *t = lh_trace_to_chrome_json(tr, g, plan);
		if (!cli_write_output("--trace", trace_path, t, &e)) {
			lh_metrics_clear(&m);
			return cli_fail(e);
		}
	}
	LhVizOptions vo = {(guint)width, (guint)height, dpi, 0, 0};
	if (out_path && window && !parse_window(window, g, tr, &vo.t0, &vo.t1, &e)) {
		lh_metrics_clear(&m);
		return cli_fail(e);
	}
	if (out_path && !lh_viz_timeline_opt(out_path, g, hw, plan, tr, &m, &vo, &e)) {
		lh_metrics_clear(&m);
		return cli_fail(e);
	}
	/* The plan is written last among the files, so a failed run leaves none behind. */
	if (save_plan) {
		g_autofree char *text = lh_plan_to_data(plan, g);
		if (!cli_write_output("--save-plan", save_plan, text, &e)) {
			lh_metrics_clear(&m);
			return cli_fail(e);
		}
	}
	if (json) {
		g_autofree char *j = lh_metrics_to_json(&m, plan, g, hw);
		fputs(j, stdout);
	} else {
		FILE *rep = cli_report_stream();
		fprintf(rep, "%s (%u ops) on %s, scheduler %s%s%s%s\n", lh_graph_name(g),
		        lh_graph_n_ops(g), H->label,
		        lh_plan_scheduler(plan) ? lh_plan_scheduler(plan) : "plan",
		        lh_plan_params(plan) ? " (" : "",
		        lh_plan_params(plan) ? lh_plan_params(plan) : "",
		        lh_plan_params(plan) ? ")" : "");
		for (guint32 d = 0; H->slow && d < H->n_devices; d++)
			if (H->slow[d] != 1)
				fprintf(rep,
				        "  straggler: device %u's kernels take %g times as long\n",
				        d, H->slow[d]);
		lh_metrics_print_table(rep, &m, plan, hw);
	}
	if (over)
		fprintf(stderr,
		        "lhsim: warning: peak device memory exceeds %s's %.1f GiB "
		        "(use --strict-memory to make this an error)\n",
		        hw->name, hw->memory_gib);
	lh_metrics_clear(&m);
	return 0;
}
