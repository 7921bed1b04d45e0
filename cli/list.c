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
		{"plugin", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &plugins, "load a scheduler plugin (.so), repeatable", "F.so"},
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
			g_autofree char *range =
				p->type == LH_PARAM_CHOICE ? g_strdup(p->choices)
				: p->type == LH_PARAM_BOOL ? g_strdup("true|false")
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
		if (h)
			printf("  %-10s %s: %u SMs, %.0f TFLOP/s, %.0f GB/s HBM, %.1f GiB, %s sharing\n",
			       hw[i], h->name, h->sm_count, h->peak_tflops, h->hbm_gbs, h->memory_gib,
			       lh_sm_sharing_name(h->sm_sharing));
	}
	printf("\nworkloads (lhsim gen NAME):\n");
	for (const char *const *w = lh_gen_workload_names(); *w; w++)
		printf("  %s", lh_gen_workload_help(*w));
	return 0;
}
