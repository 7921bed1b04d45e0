/* lhsim bench — reading, matching, validating and calibrating against a measured trace.
 *
 * Builds a graph of N/10 ops (memory-bound and compute-bound kernels, copies both ways and
 * all-reduces, in a chain), predicts it serially on h100-sxm, and writes a Kineto-style Chrome
 * trace of 10 steps of it (N events in all; each duration jittered by up to +-5 % with a fixed
 * LCG, so the run is deterministic). It then times lh_measured_load (read and parse),
 * lh_match (names, steps, medians), lh_validate_measured (errors and the gap's parts) and
 * lh_calibrate_from (the least-squares fits), each the best of 3 runs.
 *
 * usage: bench-measured [N [DIR]] (default 100000 events). With DIR, the graph (graph.json) and
 * the trace (trace.json) stay there, for timing the commands:
 *   lhsim validate DIR/graph.json --measured DIR/trace.json
 *   lhsim calibrate --from DIR/trace.json DIR/graph.json -o fit.ini
 */
#include "lhsim.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>

#define STEPS 10

static double now(void)
{
	return (double)g_get_monotonic_time() / 1e6;
}

int main(int argc, char **argv)
{
	guint32 n_events = argc > 1 ? (guint32)strtoul(argv[1], NULL, 10) : 100000;
	guint32 n_ops = MAX(n_events / STEPS, 5u);
	lh_models_init();
	GError *e = NULL;
	LhHw *hw = lh_hw_lookup("h100-sxm", &e);
	LhGraph *g = lh_graph_new("bench-measured");
	guint32 prev = LH_NO_OP;
	for (guint32 i = 0; i < n_ops; i++) {
		char nm[32];
		g_snprintf(nm, sizeof nm, "op.%u", i);
		static const LhOpKind kinds[5] = {LH_OP_KERNEL, LH_OP_KERNEL, LH_OP_COPY_H2D,
		                                  LH_OP_COPY_D2H, LH_OP_ALL_REDUCE};
		LhOpKind k = kinds[i % 5];
		guint32 v = lh_graph_add_op(g, nm, k);
		LhOp *op = lh_graph_op_mut(g, v);
		double s = 1 + (double)(i % 7);
		if (i % 5 == 0)
			op->bytes = 1e6 * s;
		else if (i % 5 == 1)
			op->flops = 1e10 * s;
		else
			op->size = (guint64)(1e5 * s);
		if (lh_op_kind_is_collective(k))
			op->group = 8;
		if (prev != LH_NO_OP)
			lh_graph_add_dep(g, v, prev);
		prev = v;
	}
	if (!hw || !lh_graph_finish(g, NULL, &e)) {
		fprintf(stderr, "bench-measured: %s\n", e->message);
		return 1;
	}
	LhPlan *plan = lh_scheduler_run(lh_scheduler_find("serial"), g, hw, NULL, NULL, &e);
	LhTrace *pred = lh_simulate(g, hw, plan, NULL, NULL, &e);
	if (!plan || !pred) {
		fprintf(stderr, "bench-measured: %s\n", e->message);
		return 1;
	}
	/* The measured trace: 10 steps, durations jittered, ops back to back on stream 7. */
	GString *s = g_string_new("{\"schemaVersion\": 1, \"traceEvents\": [\n");
	guint32 lcg = 12345;
	double t = 1000;
	for (int st = 0; st < STEPS; st++) {
		for (guint32 i = 0; i < n_ops; i++) {
			const LhOp *op = lh_graph_op(g, i);
			const LhOpTiming *tm = &pred->ops[i];
			lcg = lcg * 1664525u + 1013904223u;
			double jit = 1 + ((double)(lcg >> 8) / (1 << 24) - 0.5) * 0.1;
			double dur = (double)(tm->end - tm->start) / 1000 * jit;
			const char *cat = op->kind == LH_OP_KERNEL       ? "kernel"
			                  : op->kind == LH_OP_ALL_REDUCE ? "kernel"
			                                                 : "gpu_memcpy";
			g_autofree char *name =
			    op->kind == LH_OP_COPY_H2D ? g_strdup("Memcpy HtoD (Pinned -> Device)")
			    : op->kind == LH_OP_COPY_D2H
			        ? g_strdup("Memcpy DtoH (Device -> Pinned)")
			    : op->kind == LH_OP_ALL_REDUCE
			        ? g_strdup_printf("ncclDevKernel_AllReduce_%s", op->name)
			        : g_strdup_printf("loop_%s_kernel", op->name);
			for (char *c = name; *c; c++)
				if (*c == '.')
					*c = '_';
			g_string_append_printf(
			    s,
			    "%s{\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": 0, "
			    "\"tid\": 7, \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"device\": 0, "
			    "\"stream\": 7}}",
			    st || i ? ",\n" : "", cat, name, t, dur);
			t += dur + 1.0;
		}
		t += 50;
	}
	g_string_append(s, "\n]}\n");
	const char *keep = argc > 2 ? argv[2] : NULL;
	g_autofree char *dir = keep ? g_strdup(keep) : g_dir_make_tmp("lhsim-bench-XXXXXX", NULL);
	if (keep) {
		g_mkdir_with_parents(keep, 0755);
		g_autofree char *gp = g_build_filename(keep, "graph.json", NULL);
		if (!lh_graph_write_json_file(g, gp, &e)) {
			fprintf(stderr, "bench-measured: %s\n", e->message);
			return 1;
		}
	}
	g_autofree char *path = g_build_filename(dir, "trace.json", NULL);
	g_file_set_contents(path, s->str, (gssize)s->len, NULL);
	double mib = (double)s->len / (1 << 20);
	g_string_free(s, TRUE);

	double best[4] = {1e9, 1e9, 1e9, 1e9};
	guint32 matched = 0, steps = 0;
	for (int r = 0; r < 3; r++) {
		double t0 = now();
		LhMeasured *m = lh_measured_load(path, &e);
		double t1 = now();
		if (!m) {
			fprintf(stderr, "bench-measured: %s\n", e->message);
			return 1;
		}
		LhMatch *x = lh_match(m, g, plan, pred, NULL, &e);
		double t2 = now();
		if (!x) {
			fprintf(stderr, "bench-measured: %s\n", e->message);
			return 1;
		}
		LhValidation v;
		lh_validate_measured(g, pred, x, &v);
		double t3 = now();
		GArray *keys = g_array_new(FALSE, FALSE, sizeof(LhFitKey));
		LhHw *fit = lh_calibrate_from(g, hw, plan, &x, 1, keys, &e);
		double t4 = now();
		double d[4] = {t1 - t0, t2 - t1, t3 - t2, t4 - t3};
		for (int k = 0; k < 4; k++)
			best[k] = MIN(best[k], d[k]);
		matched = x->ev_matched;
		steps = x->n_steps;
		lh_fit_keys_clear(keys);
		g_array_unref(keys);
		lh_hw_free(fit);
		lh_validation_clear(&v);
		lh_match_free(x);
		lh_measured_free(m);
	}
	printf("  events    ops  steps  matched   file      read     match  validate  calibrate\n");
	printf("%8u %6u %6u %8u %5.1f MiB %7.3f s %7.3f s %7.3f s %7.3f s\n", n_events, n_ops,
	       steps, matched, mib, best[0], best[1], best[2], best[3]);
	printf("validate = read + match + validate: %.3f s; calibrate --from = read + match + fit: "
	       "%.3f s\n",
	       best[0] + best[1] + best[2], best[0] + best[1] + best[3]);
	if (!keep) {
		g_unlink(path);
		g_rmdir(dir);
	}
	lh_trace_free(pred);
	lh_plan_free(plan);
	lh_graph_free(g);
	lh_hw_free(hw);
	return 0;
}
