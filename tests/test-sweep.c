/* lhsim tests — `lhsim sweep`: values, parallel runs that give the same output as serial ones,
 * CSV and plot files, and its errors. */
#include <criterion/criterion.h>
#include <cairo.h>
#include <string.h>

#include "helpers.h"

/* Under ASan, fontconfig's own leak at configuration time (tests/lsan.supp) would fail every
 * process that draws text: suppress it for this program's workers and the lhsim it runs. */
__attribute__((constructor)) static void lsan_suppress_fontconfig(void)
{
	const char *src = g_getenv("LHSIM_SRC");
	if (!src || g_getenv("LSAN_OPTIONS"))
		return;
	g_autofree char *supp = g_build_filename(src, "tests", "lsan.supp", NULL);
	g_autofree char *opt = g_strdup_printf("suppressions=%s", supp);
	g_setenv("LSAN_OPTIONS", opt, TRUE);
}

static char *write_graph(const char *dir)
{
	char *path = g_build_filename(dir, "g.json", NULL);
	cr_assert(g_file_set_contents(path, t_prefetch_graph_json, -1, NULL));
	return path;
}

static char *read_text(const char *path)
{
	char *s = NULL;
	cr_assert(g_file_get_contents(path, &s, NULL, NULL), "cannot read %s", path);
	return s;
}

Test(sweep, csv_is_the_same_for_any_jobs)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g = write_graph(dir);
	g_autofree char *c1 = g_build_filename(dir, "j1.csv", NULL);
	g_autofree char *c2 = g_build_filename(dir, "j2.csv", NULL);
	g_autofree char *o1 = NULL, *o2 = NULL, *e1 = NULL, *e2 = NULL;
	int rc = t_lhsim(&o1, &e1, "sweep", g, "--sched", "lhs,cpath", "-p",
	                 "async-compute-limit=1:4", "-j", "1", "--csv", c1, NULL);
	cr_assert_eq(rc, 0, "%s", e1);
	rc = t_lhsim(&o2, &e2, "sweep", g, "--sched", "lhs,cpath", "-p", "async-compute-limit=1:4",
	             "-j", "2", "--csv", c2, NULL);
	cr_assert_eq(rc, 0, "%s", e2);
	g_autofree char *a = read_text(c1), *b = read_text(c2);
	cr_assert_str_eq(a, b);
	cr_assert_str_eq(o1, o2); /* the table too */
	/* A header and 2 schedulers x 4 values, scheduler-major, values in order. */
	g_auto(GStrv) lines = g_strsplit(a, "\n", -1);
	cr_assert_eq(g_strv_length(lines), 10); /* 9 lines and the empty string after the last \n */
	cr_assert_str_eq(lines[0], "graph,hw,scheduler,async-compute-limit,status,makespan_ns,"
	                           "lower_bound_ns,ratio,peak_device_bytes,exposed_transfer_ns,"
	                           "overlap,error");
	const char *want[] = {"prefetch,H100 SXM,lhs,1,ok,",   "prefetch,H100 SXM,lhs,2,ok,",
	                      "prefetch,H100 SXM,lhs,3,ok,",   "prefetch,H100 SXM,lhs,4,ok,",
	                      "prefetch,H100 SXM,cpath,1,ok,", "prefetch,H100 SXM,cpath,2,ok,",
	                      "prefetch,H100 SXM,cpath,3,ok,", "prefetch,H100 SXM,cpath,4,ok,"};
	for (int i = 0; i < 8; i++)
		cr_assert(g_str_has_prefix(lines[i + 1], want[i]), "line %d: %s", i + 1,
		          lines[i + 1]);
}

Test(sweep, point_matches_lhsim_run)
{
	/* A sweep point is the same run as `lhsim run` with that parameter. */
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g = write_graph(dir);
	g_autofree char *csv = g_build_filename(dir, "s.csv", NULL);
	g_autofree char *out = NULL, *err = NULL;
	cr_assert_eq(t_lhsim(NULL, &err, "sweep", g, "--sched", "lhs", "-p",
	                     "async-compute-limit=2,3", "--csv", csv, NULL),
	             0, "%s", err);
	g_free(err);
	cr_assert_eq(t_lhsim(&out, &err, "run", g, "--sched", "lhs", "-p", "async-compute-limit=3",
	                     "--json", NULL),
	             0, "%s", err);
	g_autofree char *text = read_text(csv);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	/* prefetch,H100 SXM,lhs,3,ok,MAKESPAN,... */
	g_auto(GStrv) f = g_strsplit(lines[2], ",", -1);
	cr_assert_str_eq(f[3], "3");
	g_autofree char *key = g_strdup_printf("\"makespan_ns\" : %s", f[5]);
	g_autofree char *key2 = g_strdup_printf("\"makespan_ns\": %s", f[5]);
	cr_assert(strstr(out, key) || strstr(out, key2), "makespan %s not in:\n%s", f[5], out);
}

Test(sweep, ranges_with_steps_lists_and_decimals)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g = write_graph(dir);
	g_autofree char *csv = g_build_filename(dir, "s.csv", NULL);
	struct {
		const char *sched, *p;
		const char *values[4];
	} cases[] = {
	    /* 1:7:3 -> floor((7 - 1) / 3) + 1 = 3 values: 1, 4, 7 */
	    {"lhs", "async-compute-limit=1:7:3", {"1", "4", "7", NULL}},
	    /* 0.1 + 2 * 0.1 is 0.30000000000000004 in binary; shown as 0.3 */
	    {"lhs", "memory-limit=0.1:0.3:0.1", {"0.1", "0.2", "0.3", NULL}},
	    /* a list keeps its order; choices are fine */
	    {"iree",
	     "favor=max-concurrency,min-peak-memory",
	     {"max-concurrency", "min-peak-memory", NULL}},
	};
	for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
		g_autofree char *err = NULL;
		int rc = t_lhsim(NULL, &err, "sweep", g, "--sched", cases[c].sched, "-p",
		                 cases[c].p, "--csv", csv, NULL);
		cr_assert_eq(rc, 0, "%s: %s", cases[c].p, err);
		g_autofree char *text = read_text(csv);
		g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
		guint n = 0;
		while (cases[c].values[n])
			n++;
		cr_assert_eq(g_strv_length(lines), n + 2, "%s:\n%s", cases[c].p, text);
		for (guint i = 0; i < n; i++) {
			g_autofree char *pre = g_strdup_printf("prefetch,H100 SXM,%s,%s,ok,",
			                                       cases[c].sched, cases[c].values[i]);
			cr_assert(g_str_has_prefix(lines[i + 1], pre), "%s: %s", cases[c].p,
			          lines[i + 1]);
		}
	}
}

Test(sweep, scheduler_without_the_parameter_runs_once)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g = write_graph(dir);
	g_autofree char *csv = g_build_filename(dir, "s.csv", NULL);
	g_autofree char *err = NULL;
	int rc = t_lhsim(NULL, &err, "sweep", g, "--sched", "serial,lhs", "-p",
	                 "async-compute-limit=1:3", "--csv", csv, NULL);
	cr_assert_eq(rc, 0, "%s", err);
	cr_assert(strstr(err, "serial has no parameter 'async-compute-limit'"), "%s", err);
	g_autofree char *text = read_text(csv);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	/* A header, 3 serial rows, 3 lhs rows, and the empty string after the last newline. */
	cr_assert_eq(g_strv_length(lines), 1 + 3 + 3 + 1, "%s", text);
	const char *pre = "prefetch,H100 SXM,serial,";
	for (int i = 1; i <= 3; i++) {
		cr_assert(g_str_has_prefix(lines[i], pre), "row %d: %s", i, lines[i]);
		/* Not "ok" at a value it never saw: "n/a", and why. */
		g_autofree char *want = g_strdup_printf("%s%d,n/a,", pre, i);
		cr_assert(g_str_has_prefix(lines[i], want), "row %d: %s", i, lines[i]);
		cr_assert(g_str_has_suffix(lines[i], ",serial has no parameter "
		                                     "'async-compute-limit' (one run repeated for "
		                                     "every value)"),
		          "row %d: %s", i, lines[i]);
	}
	/* serial ran once: its three rows differ only in the value column. */
	const char *first = strchr(lines[1] + strlen(pre), ',');
	cr_assert_not_null(first, "%s", lines[1]);
	for (int i = 2; i <= 3; i++) {
		const char *rest = strchr(lines[i] + strlen(pre), ',');
		cr_assert_not_null(rest, "%s", lines[i]);
		cr_assert_str_eq(rest, first);
	}
	for (int i = 4; i <= 6; i++)
		cr_assert(strstr(lines[i], ",lhs,") && strstr(lines[i], ",ok,"), "%s", lines[i]);
}

Test(sweep, entries_carry_their_own_parameters)
{
	/* As in compare: iree's favor fixed per entry, the same scheduler twice, each a series
	 * of its own; an entry may not fix the swept parameter. */
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g = write_graph(dir);
	g_autofree char *csv = g_build_filename(dir, "s.csv", NULL);
	g_autofree char *err = NULL, *out = NULL;
	int rc = t_lhsim(&out, &err, "sweep", g, "--sched",
	                 "lhs:memory-limit=0.5,lhs,iree:favor=max-concurrency", "-p",
	                 "async-compute-limit=1,2", "--csv", csv, NULL);
	cr_assert_eq(rc, 0, "%s", err);
	g_autofree char *text = read_text(csv);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	cr_assert_eq(g_strv_length(lines), 1 + 6 + 1, "%s", text);
	cr_assert(g_str_has_prefix(lines[1], "prefetch,H100 SXM,lhs:memory-limit=0.5,1,ok,"), "%s",
	          lines[1]);
	cr_assert(g_str_has_prefix(lines[3], "prefetch,H100 SXM,lhs,1,ok,"), "%s", lines[3]);
	cr_assert(g_str_has_prefix(lines[5], "prefetch,H100 SXM,iree:favor=max-concurrency,1,n/a,"),
	          "%s", lines[5]);
	/* The entry's value is the one used: the same as `lhsim run` with it. */
	g_autofree char *o2 = NULL;
	cr_assert_eq(t_lhsim(&o2, NULL, "run", g, "--sched", "iree", "-p", "favor=max-concurrency",
	                     "--json", NULL),
	             0);
	g_auto(GStrv) f = g_strsplit(lines[5], ",", -1);
	g_autofree char *key = g_strdup_printf("\"makespan_ns\": %s,", f[5]);
	cr_assert(strstr(o2, key), "%s not in %s", key, o2);
	g_free(err);
	err = NULL;
	cr_assert_eq(t_lhsim(NULL, &err, "sweep", g, "--sched", "lhs:async-compute-limit=2", "-p",
	                     "async-compute-limit=1,2", NULL),
	             2);
	cr_assert(strstr(err, "fixes 'async-compute-limit', a swept parameter"), "%s", err);
	g_free(err);
	err = NULL;
	cr_assert_eq(t_lhsim(NULL, &err, "sweep", g, "--sched", "lhs,cpath,lhs", "-p",
	                     "async-compute-limit=1,2", NULL),
	             2);
	cr_assert(strstr(err, "lists 'lhs' twice"), "%s", err);
}

Test(sweep, plot_is_written)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g = write_graph(dir);
	g_autofree char *png = g_build_filename(dir, "s.png", NULL);
	g_autofree char *err = NULL;
	cr_assert_eq(t_lhsim(NULL, &err, "sweep", g, "--sched", "lhs,serial", "-p",
	                     "async-compute-limit=1:3", "-o", png, NULL),
	             0, "%s", err);
	cairo_surface_t *s = cairo_image_surface_create_from_png(png);
	cr_assert_eq(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
	cr_assert_eq(cairo_image_surface_get_width(s), 1200);
	cr_assert_gt(cairo_image_surface_get_height(s), 600);
	cairo_surface_destroy(s);
}

Test(sweep, failed_points_are_rows_and_exit_1)
{
	/* A device with 1 KiB of memory: k0 alone needs 4 KiB, so every point fails under
	 * --strict-memory. */
	lh_models_init();
	g_autoptr(GError) e = NULL;
	g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", &e);
	cr_assert(hw, "%s", e ? e->message : "");
	hw->memory_gib = 1.0 / (1 << 20);
	g_autofree char *ini = lh_hw_to_data(hw);
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g = write_graph(dir);
	g_autofree char *hwp = g_build_filename(dir, "tiny.ini", NULL);
	cr_assert(g_file_set_contents(hwp, ini, -1, NULL));
	g_autofree char *csv = g_build_filename(dir, "s.csv", NULL);
	g_autofree char *out = NULL, *err = NULL;
	int rc = t_lhsim(&out, &err, "sweep", g, "--hw", hwp, "--strict-memory", "--sched", "lhs",
	                 "-p", "async-compute-limit=1:2", "--csv", csv, NULL);
	cr_assert_eq(rc, 1, "%s", err);
	cr_assert(strstr(out, "failed: device memory exceeded"), "%s", out);
	g_autofree char *text = read_text(csv);
	cr_assert(strstr(text, "lhs,1,failed,,,,,,,"), "%s", text);
	cr_assert(strstr(text, "lhs,2,failed,,,,,,,"), "%s", text);
	/* The graph and the hardware are the file's. */
	cr_assert(strstr(text, "\nprefetch,"), "%s", text);
}

Test(sweep, bad_input_is_exit_2)
{
	struct {
		const char *p, *p2, *sched, *msg;
	} cases[] = {
	    {"async-compute-limit=2", NULL, "lhs", "give the swept parameter"},
	    {"async-compute-limit=1:3", "async-compute-limit=1,2", "lhs",
	     "-p 'async-compute-limit' is given twice"},
	    {"async-compute-limit=8:1", NULL, "lhs", "must go up"},
	    {"async-compute-limit=a:b", NULL, "lhs", "FIRST:LAST"},
	    {"async-compute-limit=1:3:0", NULL, "lhs", "positive"},
	    {"async-compute-limit=0:2", NULL, "lhs", "out of range"},
	    {"async-compute-limit=1,,2", NULL, "lhs", "empty"},
	    {"async-compute-limit=1,1", NULL, "lhs", "twice"},
	    {"no-such=1:2", NULL, "lhs", "no listed scheduler has parameter 'no-such'"},
	    {"async-compute-limit=1:2", NULL, "nope", "nope"},
	};
	for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
		g_autofree char *err = NULL;
		int rc;
		if (cases[c].p2)
			rc = t_lhsim(NULL, &err, "sweep", "--sched", cases[c].sched, "-p",
			             cases[c].p, "-p", cases[c].p2, NULL);
		else
			rc = t_lhsim(NULL, &err, "sweep", "--sched", cases[c].sched, "-p",
			             cases[c].p, NULL);
		cr_assert_eq(rc, 2, "%s: %d %s", cases[c].p, rc, err);
		cr_assert(strstr(err, cases[c].msg), "%s: %s", cases[c].p, err);
	}
	g_autofree char *err = NULL;
	cr_assert_eq(
	    t_lhsim(NULL, &err, "sweep", "-j", "-1", "-p", "async-compute-limit=1:2", NULL), 2);
	/* Outputs that cannot be written fail before any point runs: no table. An unknown
	 * picture format is bad input (2); a directory that does not exist is an I/O failure (1).
	 */
	const char *outs[][2] = {
	    {"-o", "sweep.gif"}, {"-o", "/nonexistent/s.png"}, {"--csv", "/nonexistent/s.csv"}};
	for (guint c = 0; c < G_N_ELEMENTS(outs); c++) {
		g_autofree char *out = NULL, *e2 = NULL;
		int rc = t_lhsim(&out, &e2, "sweep", "--sched", "lhs", "-p",
		                 "async-compute-limit=1:2", outs[c][0], outs[c][1], NULL);
		cr_assert_eq(rc, c == 0 ? 2 : 1, "%s: %s", outs[c][1], e2);
		cr_assert(strstr(e2, outs[c][1]), "%s", e2);
		cr_assert_str_eq(out, "");
	}
}
