/* lhsim validate — a prediction against a measured timeline (docs/measured.md). */
#include "cli/common.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Measured-file errors are bad input (2), a file that cannot be read included, as for every
 * input file of lhsim. */
int cli_measured_fail(GError *e)
{
	return cli_fail(e);
}

/* Progress on a terminal for large traces (see cli_phase). */
void cli_measured_phase(guint32 n, const char *what)
{
	static gboolean shown;
	if (n < 20000 || !cli_stderr_is_tty())
		return;
	if (shown)
		fputs("\r\033[K", stderr);
	shown = what != NULL;
	if (what)
		fprintf(stderr, "lhsim: %s (%u events)...", what, n);
	fflush(stderr);
}

void cli_measured_reading(const char *path)
{
	static gboolean shown;
	GStatBuf st;
	if (!cli_stderr_is_tty())
		return;
	if (shown)
		fputs("\r\033[K", stderr);
	shown = FALSE;
	if (path && g_stat(path, &st) == 0 && st.st_size >= (4 << 20)) {
		fprintf(stderr, "lhsim: reading %s (%.0f MiB)...", path,
		        (double)st.st_size / (1 << 20));
		shown = TRUE;
	}
	fflush(stderr);
}

LhPlan *cli_measured_plan(const char *sched, const char *plan_path, char **params, const LhGraph *g,
                          const LhHw *hw, GError **error)
{
	LhPlan *plan;
	if (plan_path) {
		plan = lh_plan_new_from_file(plan_path, g, error);
		if (plan)
			lh_plan_set_origin(plan, "plan", plan_path);
	} else {
		const LhScheduler *s = lh_scheduler_lookup(sched ? sched : "serial", error);
		if (!s)
			return NULL;
		plan = lh_scheduler_run(s, g, hw, (const char *const *)params, NULL, error);
	}
	if (plan && !lh_plan_validate(plan, g, plan_path, error)) {
		lh_plan_free(plan);
		return NULL;
	}
	return plan;
}

static char *pct(double v)
{
	return isnan(v) ? g_strdup("-") : g_strdup_printf("%+.1f %%", 100 * v);
}

static char *sns(double ns) /* signed duration */
{
	g_autofree char *a = lh_format_ns(fabs(ns));
	return g_strdup_printf("%s%s", ns < 0 ? "-" : "+", a);
}

static void jnum(JsonBuilder *b, const char *k, double v)
{
	json_builder_set_member_name(b, k);
	if (isfinite(v))
		json_builder_add_double_value(b, v);
	else
		json_builder_add_null_value(b);
}

static void jint(JsonBuilder *b, const char *k, gint64 v)
{
	json_builder_set_member_name(b, k);
	json_builder_add_int_value(b, v);
}

static void jstr(JsonBuilder *b, const char *k, const char *v)
{
	json_builder_set_member_name(b, k);
	json_builder_add_string_value(b, v);
}

static void jbool(JsonBuilder *b, const char *k, gboolean v)
{
	json_builder_set_member_name(b, k);
	json_builder_add_boolean_value(b, v);
}

static void csv_num(GString *s, double v)
{
	g_string_append_c(s, ',');
	if (isfinite(v))
		g_string_append_printf(s, "%.17g", v);
}

static char *to_csv(const LhGraph *g, const LhMatch *x, const LhValidation *v)
{
	GString *s = g_string_new("record,name,kind,match,steps,predicted_ns,measured_ns,min_ns,"
	                          "max_ns,error,within_noise\n");
	g_string_append(s, "step,step,,,");
	g_string_append_printf(s, "%u", x->n_steps);
	csv_num(s, (double)v->step_pred);
	csv_num(s, v->step_meas);
	csv_num(s, v->step_lo);
	csv_num(s, v->step_hi);
	csv_num(s, v->step_err);
	g_string_append_printf(s, ",%d\n", v->step_noise);
	for (int c = 0; c < LH_GAP_N; c++) {
		g_string_append(s, "gap,");
		cli_csv_field(s, lh_gap_name((LhGap)c));
		g_string_append_printf(s, ",,,%u", x->n_steps);
		csv_num(s, v->gap_pred[c]);
		csv_num(s, v->gap_meas[c]);
		csv_num(s, v->gap_lo[c]);
		csv_num(s, v->gap_hi[c]);
		csv_num(s, v->gap[c]);
		g_string_append_printf(s, ",%d\n", v->gap_noise[c]);
	}
	for (guint32 i = 0; i < lh_graph_n_ops(g); i++) {
		const LhOp *op = lh_graph_op(g, i);
		if (op->kind == LH_OP_INPUT)
			continue;
		g_string_append(s, "op,");
		cli_csv_field(s, op->name);
		g_string_append_printf(s, ",%s,%s,%u", lh_op_kind_name(op->kind),
		                       lh_match_how_name((LhMatchHow)x->how[i]), x->n_seen[i]);
		csv_num(s, v->op_pred[i]);
		csv_num(s, x->dur_med[i]);
		csv_num(s, x->dur_lo[i]);
		csv_num(s, x->dur_hi[i]);
		csv_num(s, v->op_err[i]);
		g_string_append_printf(s, ",%d\n", v->op_noise[i]);
	}
	return g_string_free(s, FALSE);
}

static char *to_json(const LhGraph *g, const LhHw *hw, const LhPlan *plan, const LhMeasured *m,
                     const LhMatch *x, const LhValidation *v)
{
	g_autoptr(JsonBuilder) b = json_builder_new();
	json_builder_begin_object(b);
	jstr(b, "graph", lh_graph_name(g));
	jstr(b, "hw", hw->name);
	jstr(b, "schedule", lh_plan_scheduler(plan) ? lh_plan_scheduler(plan) : "plan");
	jstr(b, "measured", m->path);
	jstr(b, "format", m->format);
	jint(b, "device", x->device);
	json_builder_set_member_name(b, "match");
	json_builder_begin_object(b);
	jint(b, "events", x->ev_total);
	jint(b, "events_matched", x->ev_matched);
	jnum(b, "event_rate", x->ev_total ? (double)x->ev_matched / x->ev_total : 0);
	for (int h = 1; h < LH_MATCH_N; h++) {
		g_autofree char *k = g_strdup_printf("by_%s", lh_match_how_name((LhMatchHow)h));
		jint(b, k, x->by[h]);
	}
	jint(b, "ops", x->ops_total);
	jint(b, "ops_matched", x->ops_matched);
	jnum(b, "op_rate", x->ops_total ? (double)x->ops_matched / x->ops_total : 0);
	jint(b, "events_other_devices", x->ev_other_device);
	jint(b, "memsets", x->ev_memset);
	jint(b, "events_outside_steps", x->ev_outside);
	jint(b, "events_not_modelled", m->n_ignored);
	json_builder_end_object(b);
	jint(b, "steps", x->n_steps);
	jstr(b, "step_rule", x->step_rule);
	json_builder_set_member_name(b, "step_time");
	json_builder_begin_object(b);
	jint(b, "predicted_ns", v->step_pred);
	jnum(b, "measured_ns", v->step_meas);
	jnum(b, "min_ns", v->step_lo);
	jnum(b, "max_ns", v->step_hi);
	jnum(b, "error", v->step_err);
	jbool(b, "within_noise", v->step_noise);
	json_builder_end_object(b);
	json_builder_set_member_name(b, "op_duration_error");
	json_builder_begin_object(b);
	jint(b, "n", (gint64)v->ops.n);
	jnum(b, "median", v->ops.median);
	jnum(b, "p90", v->ops.p90);
	jnum(b, "max", v->ops.max);
	jint(b, "within_noise", v->ops_noise);
	json_builder_end_object(b);
	json_builder_set_member_name(b, "attribution");
	json_builder_begin_array(b);
	for (int c = 0; c < LH_GAP_N; c++) {
		json_builder_begin_object(b);
		jstr(b, "part", lh_gap_name((LhGap)c));
		jnum(b, "predicted_ns", v->gap_pred[c]);
		jnum(b, "measured_ns", v->gap_meas[c]);
		jnum(b, "min_ns", v->gap_lo[c]);
		jnum(b, "max_ns", v->gap_hi[c]);
		jnum(b, "gap_ns", v->gap[c]);
		jbool(b, "within_noise", v->gap_noise[c]);
		json_builder_end_object(b);
	}
	json_builder_end_array(b);
	json_builder_set_member_name(b, "ops");
	json_builder_begin_array(b);
	for (guint32 i = 0; i < lh_graph_n_ops(g); i++) {
		const LhOp *op = lh_graph_op(g, i);
		if (op->kind == LH_OP_INPUT)
			continue;
		json_builder_begin_object(b);
		jstr(b, "name", op->name);
		jstr(b, "kind", lh_op_kind_name(op->kind));
		jstr(b, "match", lh_match_how_name((LhMatchHow)x->how[i]));
		jint(b, "steps", x->n_seen[i]);
		jnum(b, "predicted_ns", v->op_pred[i]);
		jnum(b, "measured_ns", x->dur_med[i]);
		jnum(b, "min_ns", x->dur_lo[i]);
		jnum(b, "max_ns", x->dur_hi[i]);
		jnum(b, "error", v->op_err[i]);
		jbool(b, "within_noise", v->op_noise[i]);
		json_builder_end_object(b);
	}
	json_builder_end_array(b);
	json_builder_end_object(b);
	g_autoptr(JsonGenerator) gen = json_generator_new();
	g_autoptr(JsonNode) root = json_builder_get_root(b);
	json_generator_set_root(gen, root);
	json_generator_set_pretty(gen, TRUE);
	char *t = json_generator_to_data(gen, NULL);
	char *r = g_strconcat(t, "\n", NULL);
	g_free(t);
	return r;
}

static void print_text(const LhGraph *g, const LhHw *hw, const LhPlan *plan, const LhMeasured *m,
                       const LhMatch *x, const LhValidation *v, gboolean all)
{
	printf("%s (%u ops) on %s, schedule %s, against %s (%s, device %d)\n", lh_graph_name(g),
	       lh_graph_n_ops(g), hw->name,
	       lh_plan_scheduler(plan) ? lh_plan_scheduler(plan) : "plan", m->path, m->format,
	       x->device);
	printf("  matched events: %u of %u (%.1f %%): by name %u, annotation %u, token %u, "
	       "order %u\n",
	       x->ev_matched, x->ev_total, x->ev_total ? 100.0 * x->ev_matched / x->ev_total : 0,
	       x->by[LH_MATCH_NAME], x->by[LH_MATCH_ANNOTATION], x->by[LH_MATCH_TOKEN],
	       x->by[LH_MATCH_ORDER]);
	printf("  matched ops:    %u of %u (%.1f %%)\n", x->ops_matched, x->ops_total,
	       x->ops_total ? 100.0 * x->ops_matched / x->ops_total : 0);
	if (x->ev_other_device || x->ev_memset || x->ev_outside || m->n_ignored)
		printf("  left out: %u events on other devices, %u memsets, %u outside any step, "
		       "%u copies of kinds not modelled\n",
		       x->ev_other_device, x->ev_memset, x->ev_outside, m->n_ignored);
	printf("  steps: %s\n", x->step_rule);
	g_autofree char *sp = lh_format_ns((double)v->step_pred);
	g_autofree char *sm = lh_format_ns(v->step_meas);
	g_autofree char *slo = lh_format_ns(v->step_lo);
	g_autofree char *shi = lh_format_ns(v->step_hi);
	g_autofree char *se = pct(v->step_err);
	printf("  step time (first op start to last op end): predicted %s, measured %s "
	       "(%s .. %s over %u step%s), error %s%s\n",
	       sp, sm, slo, shi, x->n_steps, x->n_steps == 1 ? "" : "s", se,
	       v->step_noise ? " (within noise)" : "");
	printf("  op duration error over %.0f ops: median %.1f %%, p90 %.1f %%, max %.1f %%; %u "
	       "inside their noise band\n",
	       v->ops.n, 100 * v->ops.median, 100 * v->ops.p90, 100 * v->ops.max, v->ops_noise);
	double total = 0;
	gboolean any = FALSE;
	for (int c = 0; c < LH_GAP_N; c++) {
		total += v->gap[c];
		any |= v->gap[c] != 0;
	}
	if (!any) {
		printf("  gap: none (every part of the step agrees)\n");
	} else {
		g_autofree char *t = sns(total);
		printf("  gap (measured - predicted step time): %s\n", t);
		for (int c = 0; c < LH_GAP_N; c++) {
			if (v->gap[c] == 0)
				continue;
			g_autofree char *d = sns(v->gap[c]);
			g_autofree char *p = lh_format_ns(v->gap_pred[c]);
			g_autofree char *q = lh_format_ns(v->gap_meas[c]);
			printf("    %-30s %12s  (predicted %s, measured %s)%s\n",
			       lh_gap_name((LhGap)c), d, p, q,
			       v->gap_noise[c] ? "  within noise" : "");
		}
	}
	guint32 n = lh_graph_n_ops(g), k = 0;
	g_autofree guint32 *idx = g_new(guint32, MAX(n, 1));
	for (guint32 i = 0; i < n; i++)
		if (!isnan(v->op_err[i]))
			idx[k++] = i;
	if (!all) {
		for (guint32 a = 0; a < k && a < 5; a++)
			for (guint32 b = a + 1; b < k; b++) {
				double ea = fabs(v->op_err[idx[a]]), eb = fabs(v->op_err[idx[b]]);
				if (eb > ea || (eb == ea && idx[b] < idx[a])) {
					guint32 t = idx[a];
					idx[a] = idx[b];
					idx[b] = t;
				}
			}
		k = MIN(k, 5);
		if (k)
			printf("  ops furthest from the prediction:\n");
	}
	for (guint32 j = 0; j < k; j++) {
		guint32 i = idx[j];
		const LhOp *op = lh_graph_op(g, i);
		g_autofree char *p = lh_format_ns(v->op_pred[i]);
		g_autofree char *me = lh_format_ns(x->dur_med[i]);
		g_autofree char *lo = lh_format_ns(x->dur_lo[i]);
		g_autofree char *hi = lh_format_ns(x->dur_hi[i]);
		g_autofree char *e = pct(v->op_err[i]);
		printf("    %-24s %-12s %11s -> %11s (%s .. %s) %9s  [%s]%s\n", op->name,
		       lh_op_kind_name(op->kind), p, me, lo, hi, e,
		       lh_match_how_name((LhMatchHow)x->how[i]),
		       v->op_noise[i] ? "  within noise" : "");
	}
}

int cli_validate(int argc, char **argv)
{
	g_autofree char *hw_name = NULL, *sched = NULL, *plan_path = NULL, *meas_path = NULL,
	                *out_path = NULL, *csv_path = NULL, *step = NULL;
	g_auto(GStrv) params = NULL, plugins = NULL;
	gboolean json = FALSE, per_op = FALSE;
	int device = -1;
	GOptionEntry entries[] = {
	    {"measured", 'm', 0, G_OPTION_ARG_FILENAME, &meas_path,
	     "the measured timeline: Chrome trace JSON (PyTorch/Kineto, JAX/XLA, lhsim --trace) or "
	     "an Nsight Systems SQLite export (required)",
	     "FILE"},
	    {"hw", 0, 0, G_OPTION_ARG_STRING, &hw_name,
	     "hardware model of the prediction: a built-in or an .ini (default h100-sxm)", "H"},
	    {"sched", 's', 0, G_OPTION_ARG_STRING, &sched,
	     "scheduler of the prediction (default serial)", "S"},
	    {"param", 'p', 0, G_OPTION_ARG_STRING_ARRAY, &params, "scheduler parameter, repeatable",
	     "K=V"},
	    {"plugin", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &plugins,
	     "load a scheduler plugin (.so), repeatable", "F.so"},
	    {"plan", 0, 0, G_OPTION_ARG_FILENAME, &plan_path,
	     "predict this plan instead of running a scheduler", "P"},
	    {"step", 0, 0, G_OPTION_ARG_STRING, &step,
	     "glob naming the ranges that mark steps (default: ProfilerStep#* and xprof's Steps "
	     "line; without any, ops named k times make k steps)",
	     "GLOB"},
	    {"device", 0, 0, G_OPTION_ARG_INT, &device,
	     "the device to compare (default: the lowest in the file)", "N"},
	    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &out_path,
	     "draw predicted over measured (.png, .svg or .pdf)", "FILE"},
	    {"json", 0, 0, G_OPTION_ARG_NONE, &json, "print everything as JSON instead of a table",
	     NULL},
	    {"csv", 0, 0, G_OPTION_ARG_FILENAME, &csv_path,
	     "write the step, the gap's parts and every op as CSV", "FILE"},
	    {"per-op", 0, 0, G_OPTION_ARG_NONE, &per_op,
	     "print every op, not only the five furthest", NULL},
	    {NULL, 0, 0, 0, NULL, NULL, NULL},
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("[GRAPH]");
	g_option_context_set_summary(
	    ctx,
	    "Compares the prediction of GRAPH with a measured timeline of the same program:\n"
	    "matches the file's kernels, copies and collectives to the graph's ops (by name,\n"
	    "annotation, name token, then order on a stream), splits repeated steps, and\n"
	    "reports the step time error, each op's duration error with the measured noise\n"
	    "band (min .. max over steps), and the gap split into kernel time, kernels slower\n"
	    "under overlap, exposed collective, exposed copy, host issue and idle time.\n"
	    "Errors are (measured - predicted) / predicted. See docs/measured.md.");
	g_option_context_add_main_entries(ctx, entries, NULL);
	int status;
	if (!cli_parse(ctx, &argc, &argv, &status))
		return status;
	if (argc > 2)
		return cli_usage("validate", "expected at most one GRAPH, got %d", argc - 1);
	if (!meas_path)
		return cli_usage("validate", "--measured FILE is required");
	if (plan_path && (sched || params))
		return cli_usage("validate", "--plan replaces the scheduler: drop --sched and -p");
	if (device < -1)
		return cli_usage("validate", "--device must be >= 0");

	GError *e = NULL;
	if (out_path && !lh_viz_check_path(out_path, &e))
		return cli_fail(e);
	if (!cli_load_plugins(plugins, &e))
		return cli_fail(e);
	g_autoptr(LhGraph) g = cli_load_graph(argc > 1 ? argv[1] : NULL, &e);
	if (!g)
		return cli_fail(e);
	g_autoptr(LhHw) hw = cli_load_hw(hw_name, &e);
	if (!hw)
		return cli_fail(e);
	g_autoptr(LhPlan) plan = cli_measured_plan(sched, plan_path, params, g, hw, &e);
	if (!plan)
		return cli_fail(e);
	LhSimOptions so = {.skip_validate = TRUE};
	g_autoptr(LhTrace) pred = lh_simulate(g, hw, plan, &so, NULL, &e);
	if (!pred)
		return cli_fail(e);
	cli_measured_reading(meas_path);
	g_autoptr(LhMeasured) m = lh_measured_load(meas_path, &e);
	cli_measured_reading(NULL);
	if (!m)
		return cli_measured_fail(e);
	cli_measured_phase(m->events->len, "matching");
	LhMatchOptions mo = {step, device};
	g_autoptr(LhMatch) x = lh_match(m, g, plan, pred, &mo, &e);
	cli_measured_phase(m->events->len, NULL);
	if (!x)
		return cli_measured_fail(e);
	LhValidation v;
	lh_validate_measured(g, pred, x, &v);
	/* The picture first, then the CSV; if the CSV cannot be written the picture goes too, so
	 * that a failed run leaves no output behind. */
	int rc = 0;
	if (out_path && !lh_viz_validation(out_path, g, hw, plan, pred, x->median, &e)) {
		fprintf(stderr, "lhsim: %s\n", e->message);
		g_error_free(e);
		rc = LH_EXIT_FAILED;
	}
	if (!rc && csv_path) {
		g_autofree char *c = to_csv(g, x, &v);
		if (!lh_write_file_atomic(csv_path, c, strlen(c), &e)) {
			fprintf(stderr, "lhsim: %s\n", e->message);
			g_error_free(e);
			if (out_path)
				g_unlink(out_path);
			rc = LH_EXIT_FAILED;
		}
	}
	if (!rc) {
		if (json) {
			g_autofree char *j = to_json(g, hw, plan, m, x, &v);
			fputs(j, stdout);
		} else {
			print_text(g, hw, plan, m, x, &v, per_op);
		}
	}
	lh_validation_clear(&v);
	return rc;
}
