/* lhsim run — schedule (or load a plan), simulate, report. */
#include "cli/common.h"

#include <stdio.h>
#include <string.h>

int cli_run(int argc, char **argv)
{
	g_autofree char *hw_name = NULL, *sched = NULL, *plan_path = NULL, *save_plan = NULL,
			*trace_path = NULL, *out_path = NULL, *profile = NULL;
	g_auto(GStrv) params = NULL, plugins = NULL;
	gboolean json = FALSE, explain = FALSE, strict = FALSE;
	GOptionEntry entries[] = {
		{"hw", 0, 0, G_OPTION_ARG_STRING, &hw_name, "hardware: a built-in name or an .ini file (default h100-sxm)", "H"},
		{"sched", 's', 0, G_OPTION_ARG_STRING, &sched, "scheduler (default serial; see 'lhsim list')", "S"},
		{"param", 'p', 0, G_OPTION_ARG_STRING_ARRAY, &params, "scheduler parameter, repeatable", "K=V"},
		{"plugin", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &plugins, "load a scheduler plugin (.so), repeatable", "F.so"},
		{"explain", 0, 0, G_OPTION_ARG_NONE, &explain, "log each scheduling decision and its rule to stderr", NULL},
		{"plan", 0, 0, G_OPTION_ARG_FILENAME, &plan_path, "simulate this plan instead of running a scheduler", "P"},
		{"save-plan", 0, 0, G_OPTION_ARG_FILENAME, &save_plan, "write the scheduler's plan as text", "P"},
		{"output", 'o', 0, G_OPTION_ARG_FILENAME, &out_path, "draw the timeline (.png, .svg or .pdf)", "FILE"},
		{"trace", 0, 0, G_OPTION_ARG_FILENAME, &trace_path, "write a Chrome/Perfetto trace", "T.json"},
		{"profile", 0, 0, G_OPTION_ARG_FILENAME, &profile, "XLA PGLE profile (ProfiledInstructionsProto text): measured op costs replace the model's", "P.pbtxt"},
		{"json", 0, 0, G_OPTION_ARG_NONE, &json, "print the metrics as JSON instead of a table", NULL},
		{"strict-memory", 0, 0, G_OPTION_ARG_NONE, &strict, "exceeding device memory is an error", NULL},
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
	g_autoptr(LhHw) hw = cli_load_hw(hw_name, &e);
	if (!hw)
		return cli_fail(e);
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
		plan = lh_scheduler_run(s, g, hw, (const char *const *)params,
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
	gboolean over = FALSE;
	cli_phase(lh_graph_n_ops(g), "simulating");
	g_autoptr(LhTrace) tr = lh_simulate(g, hw, plan, &opt, &over, &e);
	cli_phase(lh_graph_n_ops(g), NULL);
	if (!tr)
		return cli_fail(e);
	LhMetrics m;
	lh_metrics_compute(tr, g, hw, plan, &m);
	if (trace_path) {
		g_autofree char *t = lh_trace_to_chrome_json(tr, g, plan);
		if (!cli_write_output("--trace", trace_path, t, &e)) {
			lh_metrics_clear(&m);
			return cli_fail(e);
		}
	}
	if (out_path && !lh_viz_timeline(out_path, g, hw, plan, tr, &m, &e)) {
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
		       lh_graph_n_ops(g), hw->name, plan->scheduler ? plan->scheduler : "plan",
		       plan->params ? " (" : "", plan->params ? plan->params : "",
		       plan->params ? ")" : "");
		lh_metrics_print_table(rep, &m, plan, hw);
	}
	if (over)
		fprintf(stderr, "lhsim: warning: peak device memory exceeds %s's %.1f GiB "
				"(use --strict-memory to make this an error)\n",
			hw->name, hw->memory_gib);
	lh_metrics_clear(&m);
	return 0;
}
