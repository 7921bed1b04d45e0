/* lhsim list — schedulers with their parameters, built-in hardware, workloads. */
#include "cli/common.h"

#include <stdio.h>

static const char *type_text(LhParamType t)
{
	switch (t) {
	case LH_PARAM_INT:
		return "int";
	case LH_PARAM_DOUBLE:
		return "number";
	case LH_PARAM_BOOL:
		return "bool";
	default:
		return "choice";
	}
}

int cli_list(int argc, char **argv)
{
	g_auto(GStrv) plugins = NULL;
	GOptionEntry entries[] = {
	    {"plugin", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &plugins,
	     "load a scheduler plugin (.so), repeatable", "F.so"},
	    {NULL, 0, 0, 0, NULL, NULL, NULL},
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("");
	g_option_context_add_main_entries(ctx, entries, NULL);
	int status;
	if (!cli_parse(ctx, &argc, &argv, &status))
		return status;
	if (argc > 1)
		return cli_usage("list", "unexpected argument '%s'", argv[1]);
	GError *e = NULL;
	if (!cli_load_plugins(plugins, &e))
		return cli_fail(e);
	printf("schedulers (--sched NAME, -p name=value):\n");
	g_autofree const LhScheduler **l = lh_scheduler_list();
	for (guint i = 0; l[i]; i++) {
		printf("  %-10s %s\n", l[i]->name, l[i]->summary);
		for (const LhParamSpec *p = l[i]->params; p && p->name; p++) {
			g_autofree char *range = p->type == LH_PARAM_CHOICE ? g_strdup(p->choices)
			                         : p->type == LH_PARAM_BOOL
			                             ? g_strdup("true|false")
			                             : g_strdup_printf("%g..%g", p->min, p->max);
			printf("      %-22s %-6s  default %-16s  %s\n", p->name, type_text(p->type),
			       p->deflt ? p->deflt : "(see below)", range);
			printf("          %s\n", p->help);
		}
	}
	printf("\nhardware (--hw NAME or --hw FILE.ini):\n");
	g_autofree const char **hw = lh_hw_builtin_names();
	for (guint i = 0; hw[i]; i++) {
		g_autoptr(LhHw) h = lh_hw_lookup(hw[i], NULL);
		if (!h)
			continue;
		printf("  %-10s %s: %u SMs, %.0f GB/s HBM, %.1f GiB, %s sharing\n", hw[i], h->name,
		       h->sm_count, h->hbm_gbs, h->memory_gib, lh_sm_sharing_name(h->sm_sharing));
		/* Dense peaks per data type (docs/hw-format.md), then what GEMMs achieve. */
		printf(
		    "  %-10s dense TFLOP/s: f64 %g, f32 %g, tf32 %g, bf16/f16 %g, fp8 %g, int8 %g "
		    "(TOP/s)\n",
		    "", lh_hw_peak_tflops(h, LH_DTYPE_F64), lh_hw_peak_tflops(h, LH_DTYPE_F32),
		    lh_hw_peak_tflops(h, LH_DTYPE_TF32), h->peak_tflops,
		    lh_hw_peak_tflops(h, LH_DTYPE_FP8), lh_hw_peak_tflops(h, LH_DTYPE_INT8));
		if (h->gemm_eff > 0)
			printf("  %-10s GEMMs: %g of peak when large, %ux%u tiles, K in %u-byte "
			       "steps\n",
			       "", h->gemm_eff, h->gemm_tile_m, h->gemm_tile_n,
			       h->gemm_tile_k_bytes);
		/* The topology (docs/hw-format.md, "Cluster"). */
		if (h->gpus_per_node)
			printf("  %-10s nodes of %u GPUs: NVLink %g GB/s bus bandwidth per GPU, "
			       "network %g GB/s per GPU; NCCL latency %g us + %g us per NVLink "
			       "step, %g us per network step\n",
			       "", h->gpus_per_node, h->nvlink_busbw_gbs, h->net_gbs,
			       h->coll_base_latency_ns / 1e3, h->nvlink_latency_ns / 1e3,
			       h->net_latency_ns / 1e3);
		else
			printf(
			    "  %-10s one node: collectives on one link of %g GB/s, %g us latency\n",
			    "", h->link_gbs, h->link_latency_ns / 1e3);
	}
	printf("\nworkloads (lhsim gen NAME):\n");
	for (const char *const *w = lh_gen_workload_names(); *w; w++)
		printf("  %s", lh_gen_workload_help(*w));
	return 0;
}
