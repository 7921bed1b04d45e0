/* lhsim gen — write a built-in workload as graph JSON. */
#include "cli/common.h"

#include <stdio.h>
#include <string.h>

static void list_workloads(FILE *f)
{
	for (const char *const *n = lh_gen_workload_names(); *n; n++)
		fprintf(f, "%s\n", lh_gen_workload_help(*n));
}

int cli_gen(int argc, char **argv)
{
	g_autofree char *out_path = NULL;
	gboolean list = FALSE;
	GOptionEntry entries[] = {
	    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &out_path,
	     "the graph JSON to write (required)", "graph.json"},
	    {"list", 'l', 0, G_OPTION_ARG_NONE, &list, "list the workloads and their options",
	     NULL},
	    {NULL, 0, 0, 0, NULL, NULL, NULL},
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("WORKLOAD [KEY=VALUE...]");
	g_autofree char *names = g_strjoinv(", ", (char **)lh_gen_workload_names());
	g_autofree char *summary = g_strdup_printf(
	    "Generates a built-in workload graph and writes it as JSON.\nWorkloads: %s "
	    "('lhsim gen --list' shows their options).",
	    names);
	g_option_context_set_summary(ctx, summary);
	g_option_context_add_main_entries(ctx, entries, NULL);
	int status;
	if (!cli_parse(ctx, &argc, &argv, &status))
		return status;
	if (list) {
		list_workloads(stdout);
		return LH_EXIT_OK;
	}
	if (argc < 2)
		return cli_usage("gen", "expected a WORKLOAD (%s)", names);
	if (!out_path)
		return cli_usage("gen", "-o graph.json is required");
	for (int i = 2; i < argc; i++)
		if (!strchr(argv[i], '='))
			return cli_usage("gen", "expected KEY=VALUE, got '%s'", argv[i]);
	g_autofree const char **kv = g_new0(const char *, argc);
	for (int i = 2; i < argc; i++)
		kv[i - 2] = argv[i];
	GError *e = NULL;
	g_autoptr(LhGraph) g = lh_gen_workload(argv[1], kv, &e);
	if (!g)
		return cli_fail(e);
	if (!cli_claim_stdout("--output", out_path, &e) ||
	    !lh_graph_write_json_file(g, out_path, &e))
		return cli_fail(e);
	fprintf(cli_report_stream(), "%s: %s, %u ops\n", out_path, lh_graph_name(g),
	        lh_graph_n_ops(g));
	return LH_EXIT_OK;
}
