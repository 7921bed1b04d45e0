/* A small program that uses liblhsim: build a graph in code, schedule it, simulate it, print
 * the makespan.
 *
 * Build against an installed lhsim:  cc libuse.c $(pkg-config --cflags --libs lhsim) -o libuse
 * In the tree it is built as build/examples/libuse. */
#include <lhsim.h>
#include <stdio.h>

int main(void)
{
	lh_models_init(); /* optional: the library registers its built-in hardware on first use */
	g_autoptr(GError) e = NULL;

	/* Two layers: each all-gathers its weights, then computes; the first layer's activation
	 * is offloaded to host and brought back for the last kernel. */
	g_autoptr(LhGraph) g = lh_graph_new("libuse");
	guint32 w = lh_graph_add_op(g, "weights", LH_OP_INPUT);
	lh_graph_op_mut(g, w)->out_bytes = 64u << 20;
	guint32 prev = w;
	guint32 first = 0;
	for (int l = 0; l < 2; l++) {
		char name[32];
		g_snprintf(name, sizeof name, "ag%d", l);
		guint32 ag = lh_graph_add_op(g, name, LH_OP_ALL_GATHER);
		LhOp *op = lh_graph_op_mut(g, ag);
		op->size = 512u << 20; /* bytes, the gathered buffer */
		op->group = 8;
		op->out_bytes = op->size;
		lh_graph_add_dep(g, ag, w);
		g_snprintf(name, sizeof name, "layer%d", l);
		guint32 k = lh_graph_add_op(g, name, LH_OP_KERNEL);
		op = lh_graph_op_mut(g, k);
		op->flops = 2e12; /* 2 TFLOP */
		op->bytes = 2e9;  /* 2 GB of HBM traffic */
		op->out_bytes = 256u << 20;
		lh_graph_add_dep(g, k, ag);
		lh_graph_add_dep(g, k, prev);
		if (l == 0)
			first = k;
		prev = k;
	}
	guint32 d2h = lh_graph_add_op(g, "offload", LH_OP_COPY_D2H);
	lh_graph_op_mut(g, d2h)->size = 256u << 20;
	lh_graph_add_dep(g, d2h, first);
	guint32 h2d = lh_graph_add_op(g, "prefetch", LH_OP_COPY_H2D);
	lh_graph_op_mut(g, h2d)->size = 256u << 20;
	lh_graph_op_mut(g, h2d)->out_bytes = 256u << 20;
	lh_graph_add_dep(g, h2d, d2h);
	guint32 last = lh_graph_add_op(g, "backward", LH_OP_KERNEL);
	lh_graph_op_mut(g, last)->flops = 4e12;
	lh_graph_op_mut(g, last)->bytes = 4e9;
	lh_graph_add_dep(g, last, prev);
	lh_graph_add_dep(g, last, h2d);
	if (!lh_graph_finish(g, "libuse", &e)) {
		fprintf(stderr, "libuse: %s\n", e->message);
		return 1;
	}

	g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", &e);
	if (!hw) {
		fprintf(stderr, "libuse: %s\n", e->message);
		return 1;
	}
	const char *sched = lh_scheduler_find("lhs") ? "lhs" : "serial";
	const LhScheduler *s = lh_scheduler_find(sched);
	g_autoptr(LhPlan) plan = lh_scheduler_run(s, g, hw, NULL, NULL, &e);
	if (!plan || !lh_plan_validate(plan, g, NULL, &e)) {
		fprintf(stderr, "libuse: %s\n", e->message);
		return 1;
	}
	g_autoptr(LhTrace) t = lh_simulate(g, hw, plan, NULL, NULL, &e);
	if (!t) {
		fprintf(stderr, "libuse: %s\n", e->message);
		return 1;
	}
	LhMetrics m;
	lh_metrics_compute(t, g, hw, plan, &m);
	g_autofree char *ms = lh_format_ns(m.makespan);
	g_autofree char *lb = lh_format_ns(m.bounds.bound);
	printf("%s on %s with %s: makespan %s (lower bound %s)\n", lh_graph_name(g), hw->name,
	       sched, ms, lb);
	lh_metrics_clear(&m);
	return 0;
}
