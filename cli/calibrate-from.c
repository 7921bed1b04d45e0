/* lhsim calibrate --from — fit hardware keys to measured timelines (docs/measured.md). */
#include "cli/common.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static char *fmt_val(const LhFitKey *k, double v)
{
	if (!*k->unit)
		return g_strdup_printf("%.4f", v);
	return g_strdup_printf("%.4g %s", v, k->unit);
}

int cli_calibrate_from(char **from, const char *graph, const char *hw_name, const char *sched,
                       char **params, const char *plan_path, const char *step, int device,
                       const char *out_path)
{
	GError *e = NULL;
	g_autoptr(LhGraph) g = cli_load_graph(graph, &e);
	if (!g)
		return cli_fail(e);
	g_autoptr(LhHw) base = cli_load_hw(hw_name, &e);
	if (!base)
		return cli_fail(e);
	g_autoptr(LhPlan) plan = cli_measured_plan(sched, plan_path, params, g, base, &e);
	if (!plan)
		return cli_fail(e);
	LhSimOptions so = {.skip_validate = TRUE};
	g_autoptr(LhTrace) pred = lh_simulate(g, base, plan, &so, NULL, &e);
	if (!pred)
		return cli_fail(e);
	guint nf = g_strv_length(from);
	g_autoptr(GPtrArray) ms = g_ptr_array_new_with_free_func((GDestroyNotify)lh_measured_free);
	g_autoptr(GPtrArray) xs = g_ptr_array_new_with_free_func((GDestroyNotify)lh_match_free);
	LhMatchOptions mo = {step, device};
	for (guint f = 0; f < nf; f++) {
		cli_measured_reading(from[f]);
		LhMeasured *m = lh_measured_load(from[f], &e);
		cli_measured_reading(NULL);
		if (!m)
			return cli_measured_fail(e);
		g_ptr_array_add(ms, m);
		cli_measured_phase(m->events->len, "matching");
		LhMatch *x = lh_match(m, g, plan, pred, &mo, &e);
		cli_measured_phase(m->events->len, NULL);
		if (!x)
			return cli_measured_fail(e);
		g_ptr_array_add(xs, x);
	}
	g_autoptr(GArray) keys = g_array_new(FALSE, FALSE, sizeof(LhFitKey));
	g_autoptr(LhHw) hw =
	    lh_calibrate_from(g, base, plan, (LhMatch *const *)xs->pdata, nf, keys, &e);
	if (!hw) {
		lh_fit_keys_clear(keys);
		return cli_fail(e);
	}
	g_free(hw->name);
	hw->name = g_strdup_printf("%s, calibrated", base->name);

	printf("calibration of %s from %u measured file%s of %s (%u ops), schedule %s\n",
	       base->name, nf, nf == 1 ? "" : "s", lh_graph_name(g), lh_graph_n_ops(g),
	       lh_plan_scheduler(plan) ? lh_plan_scheduler(plan) : "plan");
	for (guint f = 0; f < nf; f++) {
		const LhMeasured *m = ms->pdata[f];
		const LhMatch *x = xs->pdata[f];
		printf("  %s: %s, device %d, %u step%s, %u of %u events matched, %u of %u ops\n",
		       m->path, m->format, x->device, x->n_steps, x->n_steps == 1 ? "" : "s",
		       x->ev_matched, x->ev_total, x->ops_matched, x->ops_total);
	}
	printf("  %-20s %14s %14s %6s  %s\n", "key", "base", "fitted", "ops", "residual (rms)");
	g_autoptr(GHashTable) notes =
	    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	for (guint i = 0; i < keys->len; i++) {
		const LhFitKey *k = &g_array_index(keys, LhFitKey, i);
		g_autofree char *b = fmt_val(k, k->base);
		if (k->fitted) {
			g_autofree char *v = fmt_val(k, k->value);
			g_autofree char *r = lh_format_ns(k->resid_ns);
			printf("  %-20s %14s %14s %6u  %s (%.2f %% of the mean time)\n", k->key, b,
			       v, k->n, r, 100 * k->resid_rel);
			g_hash_table_insert(
			    notes, g_strdup(k->key),
			    g_strdup_printf("fitted by least squares over %u measured "
			                    "ops; residual %s rms (%.2f %%); base %s",
			                    k->n, r, 100 * k->resid_rel, b));
		} else {
			printf("  %-20s %14s %14s %6s  %s\n", k->key, b, "-", "0", k->note);
			g_hash_table_insert(
			    notes, g_strdup(k->key),
			    g_strdup_printf("not fitted (%s the base's value)", k->note));
		}
	}
	g_autofree char *files = g_strjoinv(", ", from);
	g_autofree char *header = g_strdup_printf(
	    "%s, fitted by `lhsim calibrate --from` to %s (graph %s, schedule %s).\n"
	    "Keys without a 'fitted' comment keep the base model's value.",
	    hw->name, files, lh_graph_name(g),
	    lh_plan_scheduler(plan) ? lh_plan_scheduler(plan) : "plan");
	g_autofree char *text = lh_calibration_to_ini(hw, notes, header);
	lh_fit_keys_clear(keys);
	g_autoptr(LhHw) back = lh_hw_new_from_data(text, strlen(text), out_path, &e);
	if (!back) {
		fprintf(stderr, "lhsim: the fit produced an unusable model: %s\n", e->message);
		g_error_free(e);
		return LH_EXIT_FAILED;
	}
	if (!lh_write_file_atomic(out_path, text, strlen(text), &e)) {
		fprintf(stderr, "lhsim: %s\n", e->message);
		g_error_free(e);
		return LH_EXIT_FAILED;
	}
	printf("wrote %s\n", out_path);
	return 0;
}
