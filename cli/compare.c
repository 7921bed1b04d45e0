/* lhsim compare — several schedulers on one graph: one row each, plus the lower bound. */
#include "cli/common.h"

#include <stdio.h>
#include <string.h>

/* One entry of --sched: "name" or "name:k=v:k=v". */
typedef struct {
	char *label;
	const LhScheduler *s;
	GPtrArray *kv; /* of char *, NULL-terminated */
} Entry;

static void entry_clear(Entry *e)
{
	g_free(e->label);
	if (e->kv)
		g_ptr_array_free(e->kv, TRUE);
}

static gboolean has_param(const LhScheduler *s, const char *kv)
{
	const char *eq = strchr(kv, '=');
	gsize len = eq ? (gsize)(eq - kv) : strlen(kv);
	for (const LhParamSpec *sp = s->params; sp && sp->name; sp++)
		if (strlen(sp->name) == len && strncmp(sp->name, kv, len) == 0)
			return TRUE;
	return FALSE;
}

int cli_compare(int argc, char **argv)
{
	g_autofree char *hw_name = NULL, *sched = NULL, *out_path = NULL, *profile = NULL;
	g_auto(GStrv) params = NULL, plugins = NULL;
	GOptionEntry entries[] = {
		{"hw", 0, 0, G_OPTION_ARG_STRING, &hw_name, "hardware: a built-in name or an .ini file (default h100-sxm)", "H"},
		{"sched", 's', 0, G_OPTION_ARG_STRING, &sched, "schedulers to compare, comma-separated; each may carry its own parameters after colons: lhs:async-compute-limit=4,iree:favor=max-concurrency", "A,B,..."},
		{"param", 'p', 0, G_OPTION_ARG_STRING_ARRAY, &params, "parameter for every listed scheduler that has it, repeatable", "K=V"},
		{"plugin", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &plugins, "load a scheduler plugin (.so), repeatable", "F.so"},
		{"profile", 0, 0, G_OPTION_ARG_FILENAME, &profile, "XLA PGLE profile (ProfiledInstructionsProto text): measured op costs replace the model's", "P.pbtxt"},
		{"output", 'o', 0, G_OPTION_ARG_FILENAME, &out_path, "draw the schedules stacked on one time axis (.png, .svg or .pdf)", "FILE"},
		{NULL, 0, 0, 0, NULL, NULL, NULL},
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("[GRAPH]");
	g_option_context_set_summary(
		ctx, "Schedules GRAPH (default: the built-in workload) with each scheduler, simulates\n"
		     "each plan and prints one row per scheduler plus the lower bound: makespan,\n"
		     "ratio to the bound, exposed transfer time, peak device memory, streams used.\n"
		     "A -p K=V applies to every listed scheduler that has parameter K (it is an\n"
		     "error if none has it); parameters after a colon apply to that entry only and\n"
		     "win over -p. The same scheduler may be listed twice with different values.");
	g_option_context_add_main_entries(ctx, entries, NULL);
	int status;
	if (!cli_parse(ctx, &argc, &argv, &status))
		return status;
	if (argc > 2)
		return cli_usage("compare", "expected at most one GRAPH, got %d", argc - 1);
	if (!sched || !*sched)
		return cli_usage("compare", "--sched is required, e.g. --sched serial,lhs,iree");

	GError *e = NULL;
	if (!cli_load_plugins(plugins, &e))
		return cli_fail(e);
	g_auto(GStrv) names = g_strsplit(sched, ",", -1);
	guint n = g_strv_length(names);
	g_autofree Entry *ent = g_new0(Entry, n);
	int rc = 0;
	for (guint i = 0; i < n && !rc; i++) {
		g_auto(GStrv) parts = g_strsplit(names[i], ":", -1);
		ent[i].label = g_strdup(names[i]);
		ent[i].s = lh_scheduler_lookup(parts[0], &e);
		if (!ent[i].s) {
			rc = cli_fail(e);
			break;
		}
		ent[i].kv = g_ptr_array_new_with_free_func(g_free);
		for (char **q = params; q && *q; q++)
			if (has_param(ent[i].s, *q))
				g_ptr_array_add(ent[i].kv, g_strdup(*q));
		for (guint k = 1; parts[k]; k++)
			g_ptr_array_add(ent[i].kv, g_strdup(parts[k]));
		g_ptr_array_add(ent[i].kv, NULL);
	}
	for (char **q = params; !rc && q && *q; q++) {
		gboolean any = FALSE;
		for (guint i = 0; i < n; i++)
			any = any || has_param(ent[i].s, *q);
		if (!any) {
			g_autofree char *name = g_strndup(*q, strcspn(*q, "="));
			rc = cli_usage("compare", "no listed scheduler has parameter '%s' (see 'lhsim list')",
				       name);
		}
	}
	g_autoptr(LhGraph) g = rc ? NULL : cli_load_graph(argc > 1 ? argv[1] : NULL, &e);
	if (!rc && !g)
		rc = cli_fail(e);
	g_autoptr(LhHw) hw = rc ? NULL : cli_load_hw(hw_name, &e);
	if (!rc && !hw)
		rc = cli_fail(e);
	if (!rc && !cli_apply_profile(g, profile, hw, &e))
		rc = cli_fail(e);
	if (rc) {
		for (guint i = 0; i < n; i++)
			entry_clear(&ent[i]);
		return rc;
	}

	LhBounds b;
	lh_bounds(g, hw, NULL, &b);
	g_autofree LhMetrics *m = g_new0(LhMetrics, n);
	g_autofree LhPlan **plans = g_new0(LhPlan *, n);
	g_autofree LhTrace **traces = g_new0(LhTrace *, n);
	for (guint i = 0; i < n && !rc; i++) {
		g_autoptr(LhPlan) plan = lh_scheduler_run(ent[i].s, g, hw,
							  (const char *const *)ent[i].kv->pdata,
							  NULL, &e);
		if (!plan || !lh_plan_validate(plan, g, ent[i].label, &e)) {
			rc = cli_fail(e);
			break;
		}
		LhSimOptions opt = {.skip_validate = TRUE};
		g_autoptr(LhTrace) tr = lh_simulate(g, hw, plan, &opt, NULL, &e);
		if (!tr) {
			rc = cli_fail(e);
			break;
		}
		lh_metrics_compute(tr, g, hw, plan, &m[i]);
		plans[i] = g_steal_pointer(&plan);
		traces[i] = g_steal_pointer(&tr);
	}
	if (!rc && out_path) {
		g_autofree const LhMetrics **mp = g_new(const LhMetrics *, n);
		for (guint i = 0; i < n; i++)
			mp[i] = &m[i];
		if (!lh_viz_comparison(out_path, g, hw, n, (const LhPlan *const *)plans,
				       (const LhTrace *const *)traces, mp, &e))
			rc = cli_fail(e);
	}
	if (!rc) {
		printf("%s (%u ops) on %s\n", lh_graph_name(g), lh_graph_n_ops(g), hw->name);
		int w = 11;
		for (guint i = 0; i < n; i++)
			w = MAX(w, (int)strlen(ent[i].label));
		printf("  %-*s  %12s  %7s  %16s  %11s  %7s\n", w, "scheduler", "makespan", "ratio",
		       "exposed transfer", "peak memory", "streams");
		g_autofree char *lb = lh_format_ns(b.bound);
		printf("  %-*s  %12s  %7.3f  %16s  %11s  %7s   (%s)\n", w, "lower bound", lb, 1.0, "-",
		       "-", "-", b.binding);
		for (guint i = 0; i < n; i++) {
			g_autofree char *ms = lh_format_ns((double)m[i].makespan);
			g_autofree char *ex = lh_format_ns((double)m[i].exposed_transfer);
			g_autofree char *pk = lh_format_bytes((double)m[i].peak_device);
			gboolean over = (double)m[i].peak_device > hw->memory_gib * 1073741824.0;
			printf("  %-*s  %12s  %7.3f  %16s  %11s  %7u%s\n", w, ent[i].label, ms,
			       b.bound > 0 ? (double)m[i].makespan / b.bound : 1.0, ex, pk,
			       m[i].streams_used, over ? "   OVER CAPACITY" : "");
			if (over)
				fprintf(stderr,
					"lhsim: warning: %s: peak device memory exceeds %s's %.1f GiB\n",
					ent[i].label, hw->name, hw->memory_gib);
		}
	}
	for (guint i = 0; i < n; i++) {
		lh_metrics_clear(&m[i]);
		entry_clear(&ent[i]);
		lh_plan_free(plans[i]);
		lh_trace_free(traces[i]);
	}
	return rc;
}
