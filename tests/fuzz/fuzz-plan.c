/* libFuzzer harness for the plan text reader (sim/plan.c). Build and run: tests/fuzz/run.sh.
 * Every input must give a plan or a GError whose message starts with "fuzz.plan:". A plan that
 * loads must write text that loads again and writes the same text; a plan that validates
 * against the graph must simulate without a crash (an error is fine, a deadlock too). */
#include "sim/engine.h"
#include "sim/hw.h"
#include "sim/plan.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char hw_ini[] = "[hw]\nname = fuzz\nsm_count = 4\npeak_tflops = 1\n"
                             "compute_eff = 1\nhbm_gbs = 100\nhbm_eff = 1\nmemory_gib = 1\n"
                             "kernel_overhead_ns = 1\nlaunch_ns = 2\nevent_ns = 1\nhw_queues = 2\n"
                             "max_resident_kernels = 3\ncopy_engines_h2d = 1\n"
                             "copy_engines_d2h = 1\npcie_gbs = 10\npcie_duplex_gbs = 8\n"
                             "copy_latency_ns = 5\nlink_gbs = 10\nlink_latency_ns = 5\n"
                             "collective_sm = 0.1\nsm_sharing = fifo\n";

/* A small graph with every engine: in -> a -> b -> c, a copy each way and a collective. */
static LhGraph *fuzz_graph(void)
{
	LhGraph *g = lh_graph_new("fuzz");
	guint32 in = lh_graph_add_op(g, "in", LH_OP_INPUT);
	lh_graph_op_mut(g, in)->out_bytes = 1000;
	guint32 a = lh_graph_add_op(g, "a", LH_OP_KERNEL);
	lh_graph_op_mut(g, a)->duration_ns = 100;
	lh_graph_op_mut(g, a)->out_bytes = 100;
	guint32 b = lh_graph_add_op(g, "b", LH_OP_KERNEL);
	lh_graph_op_mut(g, b)->flops = 1e6;
	lh_graph_op_mut(g, b)->sm = 0.5;
	guint32 c = lh_graph_add_op(g, "c", LH_OP_COPY_D2H);
	lh_graph_op_mut(g, c)->size = 4096;
	guint32 d = lh_graph_add_op(g, "d", LH_OP_COPY_H2D);
	lh_graph_op_mut(g, d)->size = 4096;
	guint32 e = lh_graph_add_op(g, "e", LH_OP_ALL_REDUCE);
	lh_graph_op_mut(g, e)->size = 4096;
	lh_graph_op_mut(g, e)->group = 4;
	lh_graph_add_dep(g, a, in);
	lh_graph_add_dep(g, b, a);
	lh_graph_add_dep(g, c, b);
	lh_graph_add_dep(g, d, c);
	lh_graph_add_dep(g, e, a);
	if (!lh_graph_finish(g, NULL, NULL))
		abort();
	return g;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static LhGraph *g;
	static LhHw *hw;
	if (!g) {
		g = fuzz_graph();
		hw = lh_hw_new_from_data(hw_ini, strlen(hw_ini), "fuzz.ini", NULL);
		if (!hw)
			abort();
	}
	GError *e = NULL;
	LhPlan *p = lh_plan_new_from_data((const char *)data, size, "fuzz.plan", g, &e);
	if (!p) {
		if (!e || !g_str_has_prefix(e->message, "fuzz.plan:"))
			abort(); /* every failure must say where */
		g_error_free(e);
		return 0;
	}
	char *t = lh_plan_to_data(p, g);
	LhPlan *p2 = lh_plan_new_from_data(t, strlen(t), "rt.plan", g, &e);
	if (!p2)
		abort(); /* what we write, we must read */
	char *t2 = lh_plan_to_data(p2, g);
	if (strcmp(t, t2) != 0)
		abort();
	if (lh_plan_validate(p, g, "fuzz.plan", &e)) {
		LhSimOptions opt = {0};
		opt.skip_validate = TRUE;
		LhTrace *tr = lh_simulate(g, hw, p, &opt, NULL, &e);
		if (!tr && !e)
			abort();
		lh_trace_free(tr);
	} else if (!e) {
		abort();
	}
	g_clear_error(&e);
	g_free(t);
	g_free(t2);
	lh_plan_free(p2);
	lh_plan_free(p);
	return 0;
}
