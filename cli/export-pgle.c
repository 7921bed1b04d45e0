/* lhsim export-pgle — a graph's op costs as an XLA PGLE profile (docs/pgle.md). */
#include "cli/common.h"

#include <stdio.h>

int cli_export_pgle(int argc, char **argv)
{
	g_autofree char *hw_name = NULL, *out_path = NULL, *profile = NULL;
	gboolean quiet = FALSE;
	GOptionEntry entries[] = {
	    {"hw", 0, 0, G_OPTION_ARG_STRING, &hw_name,
	     "hardware the costs are for: a built-in name or an .ini file (default h100-sxm)", "H"},
	    {"profile", 0, 0, G_OPTION_ARG_FILENAME, &profile,
	     "apply this PGLE profile first (its costs pass through)", "P.pbtxt"},
	    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &out_path, "the profile to write (required)",
	     "P.pbtxt"},
	    {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "do not print the summary", NULL},
	    {NULL, 0, 0, 0, NULL, NULL, NULL},
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("[GRAPH]");
	g_option_context_set_summary(
	    ctx,
	    "Writes the standalone cost of every op of GRAPH (JSON or HLO; default: the built-in\n"
	    "workload) on the hardware model as an XLA PGLE profile: ProfiledInstructionsProto\n"
	    "in protobuf text format, costs in microseconds, a `costs` entry per instruction\n"
	    "and a start-to-done `latencies` entry per async op. XLA reads it with\n"
	    "--xla_gpu_pgle_profile_file_or_directory_path=P.pbtxt; lhsim reads it back with\n"
	    "--profile. See docs/pgle.md.");
	g_option_context_add_main_entries(ctx, entries, NULL);
	int status;
	if (!cli_parse(ctx, &argc, &argv, &status))
		return status;
	if (argc > 2)
		return cli_usage("export-pgle", "expected at most one GRAPH, got %d", argc - 1);
	if (!out_path)
		return cli_usage("export-pgle", "-o P.pbtxt is required");

	GError *e = NULL;
	g_autoptr(LhGraph) g = cli_load_graph(argc > 1 ? argv[1] : NULL, &e);
	if (!g)
		return cli_fail(e);
	g_autoptr(LhHw) hw = cli_load_hw(hw_name, &e);
	if (!hw)
		return cli_fail(e);
	if (!cli_apply_profile(g, profile, hw, &e))
		return cli_fail(e);
	guint32 averaged = 0;
	if (!lh_pgle_export_file(g, hw, out_path, &averaged, &e))
		return cli_fail(e);
	if (!quiet) {
		/* Count what was written by reading it back: the file is the truth. */
		g_autoptr(LhPgle) back = lh_pgle_new_from_file(out_path, &e);
		if (!back)
			return cli_fail(e);
		printf("%s: %u costs, %u latencies (graph %s on %s)\n", out_path,
		       lh_pgle_n_costs(back), lh_pgle_n_latencies(back), lh_graph_name(g),
		       hw->name);
		if (averaged)
			fprintf(
			    stderr,
			    "lhsim: note: %u instruction%s ran with different costs in different "
			    "loop iterations; each is written as the mean\n",
			    averaged, averaged == 1 ? "" : "s");
	}
	return LH_EXIT_OK;
}
