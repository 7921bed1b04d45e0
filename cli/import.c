/* lhsim import — read an XLA HLO text module or an STG task graph, write graph JSON. */
#include "cli/common.h"

#include <stdio.h>
#include <string.h>

int cli_import(int argc, char **argv)
{
	g_autofree char *out_path = NULL, *profile = NULL;
	gint processors = 0;
	gboolean quiet = FALSE;
	GOptionEntry entries[] = {
	    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &out_path,
	     "the graph JSON to write (required)", "graph.json"},
	    {"processors", 'P', 0, G_OPTION_ARG_INT, &processors,
	     "STG only: identical processors (default 4)", "P"},
	    {"profile", 0, 0, G_OPTION_ARG_FILENAME, &profile,
	     "XLA PGLE profile (ProfiledInstructionsProto text): the ops it names take its "
	     "measured costs as duration_ns",
	     "P.pbtxt"},
	    {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "do not print the summary or warnings",
	     NULL},
	    {NULL, 0, 0, 0, NULL, NULL, NULL},
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("FILE.hlo|FILE.stg|-");
	g_option_context_set_summary(
	    ctx,
	    "Imports an XLA HLO text module (.hlo, .hlo.txt) or a Kasahara STG task graph (.stg)\n"
	    "and writes it as an lhsim graph (JSON). HLO: fusions become kernels costed from "
	    "their\n"
	    "shapes, async start/done pairs become async ops, host-memory transfers become\n"
	    "copy-d2h/copy-h2d, while loops are unrolled by their trip count.");
	g_option_context_add_main_entries(ctx, entries, NULL);
	int status;
	if (!cli_parse(ctx, &argc, &argv, &status))
		return status;
	if (argc != 2)
		return cli_usage("import", "expected one input file, got %d", argc - 1);
	if (!out_path)
		return cli_usage("import", "-o graph.json is required");
	const char *in = argv[1];
	GError *e = NULL;
	g_autofree char *data = NULL;
	gsize len = 0;
	if (!cli_claim_stdin("FILE", in, &e) || !cli_claim_stdout("--output", out_path, &e) ||
	    !lh_read_file(in, &data, &len, &e))
		return cli_fail(e);
	/* Standard input is HLO when it starts like HLO, else STG. */
	gboolean std = lh_path_is_std(in);
	const char *where = std ? LH_STDIN_NAME : in;
	gboolean stg = std ? !cli_looks_like_hlo(data) : g_str_has_suffix(in, ".stg");
	if (processors && !stg)
		return cli_usage("import", "--processors applies to .stg files only");
	if (stg && (processors < 0 || processors > 4096))
		return cli_usage("import", "--processors must be in 1..4096");

	if (!lh_output_check(out_path, &e))
		return cli_fail(e);
	g_autoptr(LhGraph) g = NULL;
	g_autoptr(GPtrArray) warn = g_ptr_array_new_with_free_func(g_free);
	if (stg)
		g = lh_stg_import_data(data, len, where, processors ? (guint)processors : 4,
		                       LH_STG_UNIT_NS, &e);
	else
		g = lh_hlo_import_data(data, len, where, warn, &e);
	if (!g)
		return cli_fail(e);
	if (profile) {
		/* The share it reports is on the default hardware: import has no --hw. */
		g_autoptr(LhHw) hw = cli_load_hw(NULL, &e);
		if (!hw)
			return cli_fail(e);
		if (quiet) {
			g_autoptr(LhPgle) prof = lh_pgle_new_from_file(profile, &e);
			if (!prof)
				return cli_fail(e);
			lh_pgle_apply(g, prof, NULL);
		} else if (!cli_apply_profile(g, profile, hw, &e)) {
			return cli_fail(e);
		}
	}
	if (!quiet)
		for (guint i = 0; i < warn->len; i++)
			fprintf(stderr, "lhsim: warning: %s\n", (char *)warn->pdata[i]);
	if (!lh_graph_write_json_file(g, out_path, &e))
		return cli_fail(e);
	if (!quiet) {
		guint n[LH_OP_N_KINDS] = {0};
		for (guint32 i = 0; i < lh_graph_n_ops(g); i++)
			n[lh_graph_op(g, i)->kind]++;
		FILE *rep = cli_report_stream();
		fprintf(rep, "%s: %u ops:", out_path, lh_graph_n_ops(g));
		gboolean first = TRUE;
		for (int k = 0; k < LH_OP_N_KINDS; k++) {
			if (!n[k])
				continue;
			fprintf(rep, "%s %u %s", first ? "" : ",", n[k],
			        lh_op_kind_name((LhOpKind)k));
			first = FALSE;
		}
		fputc('\n', rep);
	}
	return LH_EXIT_OK;
}
