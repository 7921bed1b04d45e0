/* lhsim compare — several schedulers on one or more graphs: one row per graph and scheduler,
 * plus each graph's lower bound; as a table, CSV or JSON, and a picture for one graph.
 *
 * A row whose scheduler fails, makes an invalid plan or whose simulation fails is a failed
 * row with its error; the other rows still run, and the exit status is 1 at the end. */
#include "cli/common.h"

#include <json-glib/json-glib.h>
#include <stdio.h>
#include <string.h>

typedef struct {
	const CliSched *en;
	char **kv;
	gboolean ok, over;
	char *error;
	LhPlan *plan;
	LhTrace *trace;
	LhMetrics m;
} Row;

typedef struct {
	const char *path; /* NULL: the default workload */
	LhGraph *g;
	LhBounds b;
	CliHw *H;  /* its devices' hardware (borrowed when the graphs share one) */
	Row *rows; /* one per entry */
} Graph;

static void row_run(Row *r, const LhGraph *g, const CliHw *H)
{
	GError *e = NULL;
	const LhHw *hw = H->hw;
	LhPlan *plan = cli_hw_schedule(H, r->en->s, g, (const char *const *)r->kv, NULL, &e);
	if (plan && !lh_plan_validate(plan, g, r->en->label, &e))
		cli_blame_scheduler(r->en->s, &e);
	else if (plan) {
		LhSimOptions opt = {.skip_validate = TRUE};
		cli_hw_sim_options(H, &opt);
		r->trace = lh_simulate(g, hw, plan, &opt, NULL, &e);
	}
	if (r->trace) {
		lh_metrics_compute_devices(r->trace, g, hw, (const LhHw *const *)H->device_hw, plan,
		                           &r->m);
		r->ok = TRUE;
		r->over = (double)r->m.peak_device > hw->memory_gib * 1073741824.0;
		r->plan = plan;
		return;
	}
	r->error = g_strdup(e ? e->message : "the run failed and gave no reason");
	g_clear_error(&e);
	lh_plan_free(plan);
}

static void row_clear(Row *r)
{
	g_strfreev(r->kv);
	g_free(r->error);
	lh_plan_free(r->plan);
	lh_trace_free(r->trace);
	if (r->ok)
		lh_metrics_clear(&r->m);
}

static void print_table(FILE *f, const Graph *gr, guint n, const LhHw *hw)
{
	fprintf(f, "%s (%u ops) on %s\n", lh_graph_name(gr->g), lh_graph_n_ops(gr->g), hw->name);
	int w = 11;
	for (guint i = 0; i < n; i++)
		w = MAX(w, (int)strlen(gr->rows[i].en->label));
	fprintf(f, "  %-*s  %12s  %7s  %16s  %11s  %7s\n", w, "scheduler", "makespan", "ratio",
	        "exposed transfer", "peak memory", "streams");
	g_autofree char *lb = lh_format_ns(gr->b.bound);
	fprintf(f, "  %-*s  %12s  %7.3f  %16s  %11s  %7s   (%s)\n", w, "lower bound", lb, 1.0, "-",
	        "-", "-", gr->b.binding);
	for (guint i = 0; i < n; i++) {
		const Row *r = &gr->rows[i];
		if (!r->ok) {
			fprintf(f, "  %-*s  failed: %s\n", w, r->en->label, r->error);
			continue;
		}
		g_autofree char *ms = lh_format_ns((double)r->m.makespan);
		g_autofree char *ex = lh_format_ns((double)r->m.exposed_transfer);
		g_autofree char *pk = lh_format_bytes((double)r->m.peak_device);
		fprintf(f, "  %-*s  %12s  %7.3f  %16s  %11s  %7u%s\n", w, r->en->label, ms,
		        gr->b.bound > 0 ? (double)r->m.makespan / gr->b.bound : 1.0, ex, pk,
		        r->m.streams_used, r->over ? "   OVER CAPACITY" : "");
	}
}

static const char *status_of(const Row *r)
{
	return !r->ok ? "failed" : r->over ? "over-memory" : "ok";
}

static char *csv_text(const Graph *gs, guint ng, guint n, const LhHw *hw)
{
	GString *s = g_string_new("graph,hw,scheduler,status,makespan_ns,lower_bound_ns,ratio,"
	                          "exposed_transfer_ns,peak_device_bytes,streams,error\n");
	for (guint k = 0; k < ng; k++)
		for (guint i = 0; i < n; i++) {
			const Row *r = &gs[k].rows[i];
			cli_csv_field(s, lh_graph_name(gs[k].g));
			g_string_append_c(s, ',');
			cli_csv_field(s, hw->name);
			g_string_append_c(s, ',');
			cli_csv_field(s, r->en->label);
			g_string_append_printf(s, ",%s,", status_of(r));
			if (r->ok)
				g_string_append_printf(
				    s,
				    "%" G_GINT64_FORMAT ",%.3f,%.6f,%" G_GINT64_FORMAT
				    ",%" G_GINT64_FORMAT ",%u,\n",
				    r->m.makespan, gs[k].b.bound,
				    gs[k].b.bound > 0 ? (double)r->m.makespan / gs[k].b.bound : 1.0,
				    r->m.exposed_transfer, r->m.peak_device, r->m.streams_used);
			else {
				g_string_append_printf(s, ",%.3f,,,,,", gs[k].b.bound);
				cli_csv_field(s, r->error);
				g_string_append_c(s, '\n');
			}
		}
	return g_string_free(s, FALSE);
}

static void jmember_int(JsonBuilder *b, const char *name, gint64 v)
{
	json_builder_set_member_name(b, name);
	json_builder_add_int_value(b, v);
}

static void jmember_str(JsonBuilder *b, const char *name, const char *v)
{
	json_builder_set_member_name(b, name);
	if (v)
		json_builder_add_string_value(b, v);
	else
		json_builder_add_null_value(b);
}

static char *json_text(const Graph *gs, guint ng, guint n, const LhHw *hw)
{
	g_autoptr(JsonBuilder) b = json_builder_new();
	json_builder_begin_object(b);
	jmember_str(b, "hw", hw->name);
	json_builder_set_member_name(b, "graphs");
	json_builder_begin_array(b);
	for (guint k = 0; k < ng; k++) {
		const Graph *gr = &gs[k];
		json_builder_begin_object(b);
		jmember_str(b, "graph", lh_graph_name(gr->g));
		jmember_str(b, "file", gr->path);
		jmember_int(b, "ops", lh_graph_n_ops(gr->g));
		json_builder_set_member_name(b, "lower_bound_ns");
		json_builder_add_double_value(b, gr->b.bound);
		jmember_str(b, "binding_bound", gr->b.binding);
		json_builder_set_member_name(b, "rows");
		json_builder_begin_array(b);
		for (guint i = 0; i < n; i++) {
			const Row *r = &gr->rows[i];
			json_builder_begin_object(b);
			jmember_str(b, "scheduler", r->en->label);
			jmember_str(b, "status", status_of(r));
			if (r->ok) {
				jmember_int(b, "makespan_ns", r->m.makespan);
				json_builder_set_member_name(b, "ratio");
				json_builder_add_double_value(
				    b, gr->b.bound > 0 ? (double)r->m.makespan / gr->b.bound : 1.0);
				jmember_int(b, "exposed_transfer_ns", r->m.exposed_transfer);
				jmember_int(b, "peak_device_bytes", r->m.peak_device);
				jmember_int(b, "streams", r->m.streams_used);
			}
			jmember_str(b, "error", r->error);
			json_builder_end_object(b);
		}
		json_builder_end_array(b);
		json_builder_end_object(b);
	}
	json_builder_end_array(b);
	json_builder_end_object(b);
	g_autoptr(JsonGenerator) gen = json_generator_new();
	g_autoptr(JsonNode) root = json_builder_get_root(b);
	json_generator_set_root(gen, root);
	json_generator_set_pretty(gen, TRUE);
	char *text = json_generator_to_data(gen, NULL);
	char *out = g_strconcat(text, "\n", NULL);
	g_free(text);
	return out;
}

int cli_compare(int argc, char **argv)
{
	g_autofree char *hw_name = NULL, *sched = NULL, *out_path = NULL, *csv_path = NULL;
	g_autofree char *profile = NULL;
	g_auto(GStrv) params = NULL, plugins = NULL, slow = NULL;
	gboolean json = FALSE;
	GOptionEntry entries[] = {
	    {"hw", 0, 0, G_OPTION_ARG_STRING, &hw_name, CLI_HW_HELP, "H"},
	    {"slow", 0, 0, G_OPTION_ARG_STRING_ARRAY, &slow, CLI_SLOW_HELP, "D=F"},
	    {"sched", 's', 0, G_OPTION_ARG_STRING, &sched,
	     "schedulers to compare, comma-separated; each may carry its own parameters after "
	     "colons: lhs:async-compute-limit=4,iree:favor=max-concurrency",
	     "A,B,..."},
	    {"param", 'p', 0, G_OPTION_ARG_STRING_ARRAY, &params,
	     "parameter for every listed scheduler that has it, repeatable", "K=V"},
	    {"plugin", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &plugins,
	     "load a scheduler plugin (.so), repeatable", "F.so"},
	    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &out_path,
	     "draw the schedules stacked on one time axis (.png, .svg or .pdf; one GRAPH)", "FILE"},
	    {"csv", 0, 0, G_OPTION_ARG_FILENAME, &csv_path, "write every row as CSV", "FILE"},
	    {"json", 0, 0, G_OPTION_ARG_NONE, &json, "print the rows as JSON instead of a table",
	     NULL},
	    {"profile", 0, 0, G_OPTION_ARG_FILENAME, &profile,
	     "XLA PGLE profile (ProfiledInstructionsProto text): measured op costs replace the "
	     "model's",
	     "P.pbtxt"},
	    {NULL, 0, 0, 0, NULL, NULL, NULL},
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("[GRAPH...]");
	g_option_context_set_summary(
	    ctx, "Schedules each GRAPH (default: the built-in workload; '-' reads standard input)\n"
	         "with each scheduler, simulates each plan and prints one row per graph and\n"
	         "scheduler plus each graph's lower bound: makespan, ratio to the bound, exposed\n"
	         "transfer time, peak device memory, streams used. A -p K=V applies to every\n"
	         "listed scheduler that has parameter K (it is an error if none has it);\n"
	         "parameters after a colon apply to that entry only and win over -p. The same\n"
	         "scheduler may be listed twice with different values. A row that fails (the\n"
	         "scheduler, its plan or the simulation) says why, the others still run, and\n"
	         "the exit status is then 1.");
	g_option_context_add_main_entries(ctx, entries, NULL);
	int status;
	if (!cli_parse(ctx, &argc, &argv, &status))
		return status;
	if (!sched || !*sched)
		return cli_usage("compare", "--sched is required, e.g. --sched serial,lhs,iree");
	guint ng = argc > 1 ? (guint)argc - 1 : 1;
	if (out_path && ng > 1)
		return cli_usage("compare",
		                 "-o draws one graph; got %u (use --csv or --json for "
		                 "several)",
		                 ng);

	GError *e = NULL;
	if (!cli_claim_stdout("--output", out_path, &e) || !cli_claim_stdout("--csv", csv_path, &e))
		return cli_fail(e);
	if (json && cli_report_stream() != stdout)
		return cli_usage("compare", "--json prints to standard output, which a file given "
		                            "as '-' already takes");
	if (out_path && !lh_viz_check_path(out_path, &e))
		return cli_fail(e);
	if (csv_path && !lh_output_check(csv_path, &e))
		return cli_fail(e);
	if (!cli_load_plugins(plugins, &e))
		return cli_fail(e);
	g_autoptr(GPtrArray) ents = cli_sched_parse(sched, &e);
	if (!ents)
		return cli_fail(e);
	guint n = ents->len;
	for (char **q = params; q && *q; q++) {
		if (!strchr(*q, '=') || **q == '=')
			return cli_usage("compare", "-p '%s' is not of the form NAME=VALUE", *q);
		gboolean any = FALSE;
		for (guint i = 0; i < n; i++)
			any = any || cli_has_param(((CliSched *)g_ptr_array_index(ents, i))->s, *q);
		if (!any) {
			g_autofree char *name = g_strndup(*q, strcspn(*q, "="));
			return cli_usage(
			    "compare", "no listed scheduler has parameter '%s' (see 'lhsim list')",
			    name);
		}
	}
	/* Every entry's parameters are checked before anything runs: a value out of range is
	 * bad input, not a column of failures. */
	g_autofree char ***kv = g_new0(char **, n);
	for (guint i = 0; i < n; i++) {
		const CliSched *en = g_ptr_array_index(ents, i);
		kv[i] = cli_sched_params(en, params, NULL);
		g_autoptr(LhParams) pp =
		    lh_params_new(en->s->params, (const char *const *)kv[i], &e);
		if (!pp) {
			g_prefix_error(&e, "%s: ", en->label);
			for (guint k = 0; k < n; k++)
				g_strfreev(kv[k]);
			return cli_fail(e);
		}
	}
	/* One hardware for every graph, unless a map or --slow needs each graph's devices. */
	gboolean per_graph = cli_hw_is_map(hw_name) || slow;
	g_autoptr(CliHw) H0 = per_graph ? NULL : cli_hw_new(hw_name, NULL, NULL, &e);
	int rc = 0;
	if (!per_graph && !H0)
		rc = cli_fail(e);
	g_autofree Graph *gs = g_new0(Graph, ng);
	for (guint k = 0; k < ng && !rc; k++) {
		gs[k].path = argc > 1 ? argv[k + 1] : NULL;
		gs[k].g = cli_load_graph(gs[k].path, &e);
		if (gs[k].g)
			gs[k].H = per_graph ? cli_hw_new(hw_name, slow, gs[k].g, &e) : H0;
		if (!gs[k].g || !gs[k].H || !cli_apply_profile(gs[k].g, profile, gs[k].H->hw, &e))
			rc = cli_fail(e);
	}
	const LhHw *hw = rc ? NULL : gs[0].H->hw; /* device 0's, the same for every graph */
	guint failed = 0;
	for (guint k = 0; k < ng && !rc; k++) {
		lh_bounds_devices(gs[k].g, gs[k].H->hw, (const LhHw *const *)gs[k].H->device_hw,
		                  NULL, &gs[k].b);
		gs[k].rows = g_new0(Row, n);
		for (guint i = 0; i < n; i++) {
			Row *r = &gs[k].rows[i];
			r->en = g_ptr_array_index(ents, i);
			r->kv = g_strdupv(kv[i]);
			row_run(r, gs[k].g, gs[k].H);
			failed += !r->ok;
		}
	}
	if (!rc && out_path) {
		/* The successful rows of the one graph. */
		guint nok = 0;
		g_autofree const LhMetrics **mp = g_new(const LhMetrics *, n);
		g_autofree const LhPlan **pl = g_new(const LhPlan *, n);
		g_autofree const LhTrace **tr = g_new(const LhTrace *, n);
		for (guint i = 0; i < n; i++) {
			const Row *r = &gs[0].rows[i];
			if (!r->ok)
				continue;
			mp[nok] = &r->m;
			pl[nok] = r->plan;
			tr[nok++] = r->trace;
		}
		if (nok && !lh_viz_comparison(out_path, gs[0].g, hw, nok, pl, tr, mp, &e))
			rc = cli_fail(e);
		else if (!nok)
			fprintf(stderr, "lhsim compare: every row failed: %s not drawn\n",
			        out_path);
	}
	if (!rc && csv_path) {
		g_autofree char *t = csv_text(gs, ng, n, hw);
		if (!lh_write_file_atomic(csv_path, t, strlen(t), &e))
			rc = cli_fail(e);
	}
	if (!rc) {
		if (json) {
			g_autofree char *j = json_text(gs, ng, n, hw);
			fputs(j, stdout);
		} else {
			for (guint k = 0; k < ng; k++) {
				if (k)
					fputc('\n', cli_report_stream());
				print_table(cli_report_stream(), &gs[k], n, hw);
			}
		}
		for (guint k = 0; k < ng; k++)
			for (guint i = 0; i < n; i++) {
				const Row *r = &gs[k].rows[i];
				if (r->ok && r->over)
					fprintf(
					    stderr,
					    "lhsim: warning: %s%s%s: peak device memory exceeds "
					    "%s's %.1f GiB\n",
					    ng > 1 ? lh_graph_name(gs[k].g) : "",
					    ng > 1 ? ", " : "", r->en->label, hw->name,
					    hw->memory_gib);
			}
		if (failed)
			fprintf(stderr, "lhsim compare: %u of %u row%s failed\n", failed, ng * n,
			        ng * n == 1 ? "" : "s");
	}
	for (guint k = 0; k < ng; k++) {
		for (guint i = 0; gs[k].rows && i < n; i++)
			row_clear(&gs[k].rows[i]);
		g_free(gs[k].rows);
		lh_graph_free(gs[k].g);
		if (gs[k].H != H0)
			cli_hw_free(gs[k].H);
	}
	for (guint i = 0; i < n; i++)
		g_strfreev(kv[i]);
	if (!rc && failed)
		rc = LH_EXIT_FAILED;
	return rc;
}
