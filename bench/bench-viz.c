/* lhsim bench — timeline rendering time on large traces.
 *
 * For each size (default 10^4 and 10^5 ops) it generates a random layered DAG
 * (lh_gen_random_dag: kernels, copies, collectives), spreads it round-robin over 8 streams in
 * topological order with an event after each op that a later op on another stream waits for,
 * simulates it on the H100 model, then draws the timeline (lh_viz_timeline, metrics computed
 * beforehand) as PNG and as SVG into a temporary directory. It prints the best of 3 wall-clock
 * times per format and the PNG's size. The target (issue 4) is a 10^5-op PNG in under 1 s.
 *
 * usage: bench-viz [N ...]
 */
#include "lhsim.h"
#include "viz/layout.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>

#define STREAMS 8

static LhPlan *round_robin(const LhGraph *g)
{
	guint32 n = lh_graph_n_ops(g);
	LhPlan *p = lh_plan_new();
	for (int s = 0; s < STREAMS; s++) {
		char name[8];
		g_snprintf(name, sizeof name, "s%d", s);
		lh_plan_add_stream(p, name, LH_ROLE_COMPUTE);
	}
	guint32 *stream = g_new(guint32, n), *event = g_new(guint32, n);
	const guint32 *topo = lh_graph_topo(g);
	guint32 rr = 0;
	for (guint32 k = 0; k < n; k++) {
		guint32 v = topo[k];
		stream[v] = lh_graph_op(g, v)->kind == LH_OP_INPUT ? G_MAXUINT32 : rr++ % STREAMS;
		event[v] = G_MAXUINT32;
	}
	for (guint32 k = 0; k < n; k++) {
		guint32 v = topo[k];
		if (stream[v] == G_MAXUINT32)
			continue;
		guint32 nd;
		const guint32 *d = lh_graph_deps(g, v, &nd);
		for (guint32 i = 0; i < nd; i++)
			if (stream[d[i]] != G_MAXUINT32 && stream[d[i]] != stream[v])
				lh_plan_wait(p, stream[v], event[d[i]]);
		lh_plan_run(p, stream[v], v);
		guint32 ns;
		const guint32 *s = lh_graph_succs(g, v, &ns);
		for (guint32 i = 0; i < ns; i++)
			if (stream[s[i]] != stream[v]) {
				event[v] = lh_plan_new_event(p);
				lh_plan_signal(p, stream[v], event[v]);
				break;
			}
	}
	g_free(stream);
	g_free(event);
	lh_plan_set_origin(p, "round-robin", "streams=8");
	return p;
}

static double render_ms(const char *path, const LhGraph *g, const LhHw *hw, const LhPlan *p,
                        const LhTrace *t, const LhMetrics *m)
{
	double best = G_MAXDOUBLE;
	for (int rep = 0; rep < 3; rep++) {
		GError *e = NULL;
		gint64 t0 = g_get_monotonic_time();
		if (!lh_viz_timeline(path, g, hw, p, t, m, &e)) {
			fprintf(stderr, "bench-viz: %s\n", e->message);
			exit(1);
		}
		best = MIN(best, (double)(g_get_monotonic_time() - t0) / 1000.0);
	}
	return best;
}

int main(int argc, char **argv)
{
	lh_models_init();
	GError *e = NULL;
	g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", &e);
	if (!hw) {
		fprintf(stderr, "bench-viz: %s\n", e->message);
		return 1;
	}
	guint32 def[] = {10000, 100000};
	guint n_sizes = argc > 1 ? (guint)argc - 1 : G_N_ELEMENTS(def);
	g_autofree char *dir = g_dir_make_tmp("lhsim-bench-viz-XXXXXX", NULL);
	g_autofree char *png = g_build_filename(dir, "t.png", NULL);
	g_autofree char *svg = g_build_filename(dir, "t.svg", NULL);
	printf("%10s  %8s  %8s  %12s  %12s  %10s\n", "ops", "streams", "lanes", "PNG (best/3)",
	       "SVG (best/3)", "PNG size");
	for (guint i = 0; i < n_sizes; i++) {
		guint32 n = argc > 1 ? (guint32)strtoul(argv[i + 1], NULL, 10) : def[i];
		LhRandomDagOptions o;
		lh_random_dag_options_init(&o);
		o.n_ops = n;
		o.seed = 1;
		g_autoptr(LhGraph) g = lh_gen_random_dag(&o);
		g_autoptr(LhPlan) p = round_robin(g);
		LhSimOptions so = {0};
		g_autoptr(LhTrace) t = lh_simulate(g, hw, p, &so, NULL, &e);
		if (!t) {
			fprintf(stderr, "bench-viz: %s\n", e->message);
			return 1;
		}
		LhMetrics m;
		lh_metrics_compute(t, g, hw, p, &m);
		g_autoptr(LhLaneMap) lanes = lh_lanes_new(p, t);
		double tp = render_ms(png, g, hw, p, t, &m);
		double ts = render_ms(svg, g, hw, p, t, &m);
		GStatBuf st;
		g_autofree char *size =
		    lh_format_bytes(g_stat(png, &st) == 0 ? (double)st.st_size : 0);
		printf("%10u  %8u  %8u  %9.1f ms  %9.1f ms  %10s\n", n, lh_plan_n_streams(p),
		       lanes->n_lanes, tp, ts, size);
		lh_metrics_clear(&m);
	}
	g_unlink(png);
	g_unlink(svg);
	g_rmdir(dir);
	return 0;
}
