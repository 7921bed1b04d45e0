/* lhsim sweep-merge — the shards of a sweep (--shard K/N) back into the one-process file. */
#include "cli/sweep.h"

#include <string.h>

int cli_sweep_merge(int argc, char **argv)
{
	g_autofree char *out_path = NULL;
	gboolean json = FALSE;
	GOptionEntry entries[] = {
	    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &out_path,
	     "the merged CSV (default: standard output)", "FILE"},
	    {"json", 0, 0, G_OPTION_ARG_NONE, &json,
	     "print the merged rows as JSON on standard output too", NULL},
	    {NULL, 0, 0, 0, NULL, NULL, NULL},
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("SHARD.csv...");
	g_option_context_set_summary(
	    ctx,
	    "Merges the files of `lhsim sweep --shard K/N --csv SHARD.csv` (every K from 1 to\n"
	    "N) into the file one process writes for the same sweep, byte for byte. Every\n"
	    "point must be in exactly one file, and the files must come from one sweep (the\n"
	    "same columns). The exit status is 1 when a merged point failed, as for sweep.");
	g_option_context_add_main_entries(ctx, entries, NULL);
	int status;
	if (!cli_parse(ctx, &argc, &argv, &status))
		return status;
	if (argc < 2)
		return cli_usage("sweep-merge", "give the shard files to merge");
	if (!out_path)
		out_path = g_strdup("-");
	GError *e = NULL;
	if (json && lh_path_is_std(out_path))
		return cli_usage("sweep-merge", "--json prints on standard output: give -o FILE");
	if (!cli_claim_stdout("--output", out_path, &e) || !lh_output_check(out_path, &e))
		return cli_fail(e);

	g_auto(GStrv) header = NULL;
	guint total = 0;
	g_autoptr(GPtrArray) files =
	    g_ptr_array_new_with_free_func((GDestroyNotify)sweep_rows_free);
	g_autofree char **rows = NULL; /* by point - 1: the row's fields */
	g_autofree guint *from = NULL; /* by point - 1: the file it came from + 1 */
	for (int a = 1; a < argc; a++) {
		const char *path = argv[a];
		if (!cli_claim_stdin("SHARD", path, &e))
			return cli_fail(e);
		g_autofree char *data = NULL;
		gsize len = 0;
		if (!lh_read_file(path, &data, &len, &e))
			return cli_fail(e);
		const char *where = lh_path_is_std(path) ? LH_STDIN_NAME : path;
		SweepRows *r = sweep_rows_parse(data, len, where, &e);
		if (!r)
			return cli_fail(e);
		g_ptr_array_add(files, r);
		if (!r->total) {
			fprintf(stderr,
			        "lhsim: %s: not a shard's file (no 'point' column): write the "
			        "shards with sweep --shard K/N --csv FILE\n",
			        where);
			return LH_EXIT_BAD_INPUT;
		}
		if (!header) {
			header = g_strdupv(r->header);
		} else if (!g_strv_equal((const char *const *)header,
		                         (const char *const *)r->header)) {
			g_autofree char *h1 = g_strjoinv(",", header),
			                *h2 = g_strjoinv(",", r->header);
			fprintf(stderr,
			        "lhsim: %s: its columns (%s) are not those of %s (%s): the files "
			        "come from different sweeps\n",
			        where, h2, argv[1], h1);
			return LH_EXIT_BAD_INPUT;
		}
		if (r->total == G_MAXUINT)
			continue; /* a shard with no points */
		if (total && r->total != total) {
			fprintf(stderr, "lhsim: %s: a sweep of %u points, but %s is one of %u\n",
			        where, r->total, argv[1], total);
			return LH_EXIT_BAD_INPUT;
		}
		if (!total) {
			total = r->total;
			rows = g_new0(char *, total);
			from = g_new0(guint, total);
		}
		for (guint i = 0; i < r->rows->len; i++) {
			guint pt = g_array_index(r->points, guint, i);
			if (from[pt - 1]) {
				fprintf(stderr, "lhsim: %s: point %u/%u is also in %s\n", where, pt,
				        total, argv[from[pt - 1]]);
				return LH_EXIT_BAD_INPUT;
			}
			from[pt - 1] = (guint)a;
			rows[pt - 1] = g_ptr_array_index(r->rows, i);
		}
	}
	if (!total) {
		fprintf(stderr, "lhsim: the files hold no points\n");
		return LH_EXIT_BAD_INPUT;
	}
	guint missing = 0, first = 0;
	for (guint i = 0; i < total; i++)
		if (!from[i] && !missing++)
			first = i + 1;
	if (missing) {
		fprintf(stderr,
		        "lhsim: %u of the sweep's %u points are in none of the files (the "
		        "first: point %u): is a shard missing or unfinished?\n",
		        missing, total, first);
		return LH_EXIT_BAD_INPUT;
	}
	GString *s = g_string_new(NULL);
	sweep_csv_line(s, 0, 0, header);
	g_autoptr(GPtrArray) all = g_ptr_array_new();
	guint failed = 0, st = sweep_n_coords(header);
	for (guint i = 0; i < total; i++) {
		char **f = (char **)rows[i];
		sweep_csv_line(s, 0, 0, f);
		g_ptr_array_add(all, f);
		failed += !strcmp(f[st], "failed");
	}
	g_autofree char *text = g_string_free(s, FALSE);
	if (!lh_write_file_atomic(out_path, text, strlen(text), &e))
		return cli_fail(e);
	if (json) {
		g_autofree char *j = sweep_json_text(header, all, NULL, 0);
		fputs(j, stdout);
	}
	if (failed)
		fprintf(stderr,
		        "lhsim sweep-merge: %u of the %u points failed (their rows say why)\n",
		        failed, total);
	return failed ? LH_EXIT_FAILED : LH_EXIT_OK;
}
