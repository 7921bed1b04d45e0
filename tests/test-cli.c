/* lhsim tests — `lhsim run` and `lhsim list` end to end, and the metrics they print. */
#include <cairo.h>
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>

#include "helpers.h"

static char *write_tmp(const char *dir, const char *name, const char *text)
{
	char *path = g_build_filename(dir, name, NULL);
	cr_assert(g_file_set_contents(path, text, -1, NULL));
	return path;
}

/* A small graph: k1 (1000 ns) -> d2h copy c (10 kB) -> k2 (500 ns); and an all-reduce r after k1.
 */
static const char *small_json =
    "{\"format\": \"lhsim-graph\", \"version\": 1, \"name\": \"small\", \"ops\": [\n"
    " {\"name\": \"k1\", \"kind\": \"kernel\", \"duration_ns\": 1000, \"out_bytes\": 4096},\n"
    " {\"name\": \"c\", \"kind\": \"copy-d2h\", \"size\": 10000, \"deps\": [\"k1\"]},\n"
    " {\"name\": \"r\", \"kind\": \"all-reduce\", \"size\": 8192, \"group\": 8, \"deps\": "
    "[\"k1\"]},\n"
    " {\"name\": \"k2\", \"kind\": \"kernel\", \"duration_ns\": 500, \"deps\": [\"c\", \"r\"]}\n"
    "]}\n";

Test(cli, run_default_workload_prints_the_table)
{
	g_autofree char *out = NULL, *err = NULL;
	int st = t_lhsim(&out, &err, "run", NULL);
	cr_assert_eq(st, 0, "%s", err);
	const char *want[] = {
	    "makespan",           "lower bound",     "makespan / bound", "exposed transfer",
	    "peak device memory", "busy per stream", "busy per engine",  " ms"};
	for (gsize i = 0; i < G_N_ELEMENTS(want); i++)
		cr_expect(strstr(out, want[i]) != NULL, "no '%s' in:\n%s", want[i], out);
}

Test(cli, json_metrics_parse_and_match_the_engine)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *gpath = write_tmp(dir, "small.json", small_json);
	g_autofree char *out = NULL, *err = NULL;
	int st = t_lhsim(&out, &err, "run", gpath, "--json", NULL);
	cr_assert_eq(st, 0, "%s", err);
	g_autoptr(JsonParser) p = json_parser_new();
	cr_assert(json_parser_load_from_data(p, out, -1, NULL), "not JSON:\n%s", out);
	JsonObject *o = json_node_get_object(json_parser_get_root(p));
	/* serial on h100-sxm: the step's launch (step_overhead_ns 15000) first, then launch 4000
	 * ns per command. Host issues k1 at 19000, c at 23000, r at 27000, k2 at 31000.
	 * k1: 1000 ns -> 19000-20000.
	 * c: latency 2000 + 10000 B / 55 B/ns = 181.818 -> 2181.818, issued at 23000: runs
	 *    23000-25182 (ceil).
	 * r: all-reduce of 8192 B over group 8 = devices 0..7, one node of h100-sxm's 8: NCCL's
	 *    ring (docs/engine.md, "Collectives on a cluster"), 2*7 = 14 steps, none on the
	 *    network; bus bytes 2*7/8*8192 = 14336 B.
	 *    LL:     6600 + 14*600  = 15000 ns + 14336 / (370/4 = 92.5 B/ns) = 154.98 -> 15154.98
	 *    LL128: 14000 + 14*1900 = 40600 ns + ...                          > 40600
	 *    Simple: 8400 + 14*3400 = 56000 ns + ...                          > 56000
	 *    LL wins: latency 15000, wire 154.98 -> issued 27000, runs 27000-42155 (ceil).
	 * k2: issued 31000, waits for r: 42155-42655. */
	cr_expect_eq(json_object_get_int_member(o, "makespan_ns"), 42655);
	cr_expect_str_eq(json_object_get_string_member(o, "scheduler"), "serial");
	/* transfer: c 23000-25182 and r 27000-42155 with no kernel running: all exposed,
	 * 2182 + 15155 = 17337 ns. */
	cr_expect_eq(json_object_get_int_member(o, "exposed_transfer_ns"), 17337);
	cr_expect_eq(json_object_get_int_member(o, "transfer_time_ns"), 17337);
	cr_expect_float_eq(json_object_get_double_member(o, "overlap"), 0.0, 1e-9);
	/* Memory: k1's 4096 B output is allocated when k1 starts (19000) and freed when its last
	 * consumer, r, ends (42155); no other op has an output. Peak 4096 B at 19000. */
	cr_expect_eq(json_object_get_int_member(o, "peak_device_bytes"), 4096);
	cr_expect_eq(json_object_get_int_member(o, "peak_device_at_ns"), 19000);
	/* Bounds: critical path = 15000 (the step's launch) + 1000 + 15154.98 + 500 = 31654.98
	 * -> 31655 > host issue = 15000 + 4 commands * 4000 = 31000. */
	cr_expect_str_eq(json_object_get_string_member(o, "binding_bound"), "critical path");
	cr_expect_eq(json_object_get_int_member(o, "lower_bound_ns"), 31655);
}

Test(cli, trace_is_chrome_json_with_tracks)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *gpath = write_tmp(dir, "small.json", small_json);
	g_autofree char *tpath = g_build_filename(dir, "t.json", NULL);
	g_autofree char *err = NULL;
	int st = t_lhsim(NULL, &err, "run", gpath, "--trace", tpath, NULL);
	cr_assert_eq(st, 0, "%s", err);
	g_autoptr(JsonParser) p = json_parser_new();
	cr_assert(json_parser_load_from_file(p, tpath, NULL));
	JsonArray *ev = json_object_get_array_member(json_node_get_object(json_parser_get_root(p)),
	                                             "traceEvents");
	int complete = 0, names = 0;
	for (guint i = 0; i < json_array_get_length(ev); i++) {
		JsonObject *e = json_array_get_object_element(ev, i);
		const char *ph = json_object_get_string_member(e, "ph");
		if (!strcmp(ph, "X"))
			complete++;
		if (!strcmp(ph, "M") &&
		    !strcmp(json_object_get_string_member(e, "name"), "thread_name"))
			names++;
	}
	/* 4 ops, each on its stream track and on its engine track. */
	cr_expect_eq(complete, 8);
	/* Named tracks: the stream 'main', then the engines SMs, link and copy D2H 0 (no H2D copy
	 * ran, so no H2D track): 4. */
	cr_expect_eq(names, 4);
}

Test(cli, save_plan_then_plan_gives_the_same_run)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *ppath = g_build_filename(dir, "p.plan", NULL);
	g_autofree char *o1 = NULL, *o2 = NULL, *err = NULL;
	cr_assert_eq(t_lhsim(&o1, &err, "run", "--json", "--save-plan", ppath, NULL), 0, "%s", err);
	g_free(err);
	err = NULL;
	cr_assert_eq(t_lhsim(&o2, &err, "run", "--json", "--plan", ppath, NULL), 0, "%s", err);
	/* Same schedule, same numbers; only the scheduler label differs. */
	g_autoptr(JsonParser) a = json_parser_new(), b = json_parser_new();
	cr_assert(json_parser_load_from_data(a, o1, -1, NULL) &&
	          json_parser_load_from_data(b, o2, -1, NULL));
	JsonObject *ja = json_node_get_object(json_parser_get_root(a));
	JsonObject *jb = json_node_get_object(json_parser_get_root(b));
	cr_expect_eq(json_object_get_int_member(ja, "makespan_ns"),
	             json_object_get_int_member(jb, "makespan_ns"));
	cr_expect_eq(json_object_get_int_member(ja, "peak_device_bytes"),
	             json_object_get_int_member(jb, "peak_device_bytes"));
	cr_expect_str_eq(json_object_get_string_member(jb, "scheduler"), "plan");
}

Test(cli, bad_graph_exits_2_with_position)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *gpath = write_tmp(
	    dir, "bad.json",
	    "{\"format\": \"lhsim-graph\", \"version\": 1, \"ops\": [\n"
	    " {\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 1, \"deps\": [\"nope\"]}\n]}\n");
	g_autofree char *err = NULL, *out = NULL;
	int st = t_lhsim(&out, &err, "run", gpath, NULL);
	cr_expect_eq(st, 2);
	g_autofree char *want = g_strdup_printf("lhsim: %s:2:", gpath);
	cr_expect(g_str_has_prefix(err, want), "stderr: %s", err);
	cr_expect(strstr(err, "unknown dep 'nope'") != NULL, "%s", err);
	cr_expect_str_empty(out);
}

Test(cli, bad_options_exit_2)
{
	g_autofree char *err = NULL;
	cr_expect_eq(t_lhsim(NULL, &err, "run", "--sched", "nosuch", NULL), 2);
	cr_expect(strstr(err, "unknown scheduler 'nosuch'") && strstr(err, "serial"), "%s", err);
	g_free(err);
	err = NULL;
	cr_expect_eq(t_lhsim(NULL, &err, "run", "--hw", "h900", NULL), 2);
	cr_expect(strstr(err, "h100-sxm") != NULL, "%s", err);
	g_free(err);
	err = NULL;
	cr_expect_eq(t_lhsim(NULL, &err, "run", "-p", "x=1", NULL), 2);
	cr_expect(strstr(err, "unknown parameter 'x'") != NULL, "%s", err);
	g_free(err);
	err = NULL;
	cr_expect_eq(t_lhsim(NULL, &err, "frobnicate", NULL), 2);
	g_free(err);
	err = NULL;
	cr_expect_eq(t_lhsim(NULL, &err, "run", "--bogus", NULL), 2);
}

Test(cli, deadlocking_plan_file_is_rejected)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *gpath = write_tmp(dir, "small.json", small_json);
	g_autofree char *ppath = write_tmp(dir, "dead.plan",
	                                   "lhsim-plan 1\nstream a compute\nstream b collective\n"
	                                   "wait a e1\nrun a k1\nsignal a e0\nwait b e0\nrun b c\n"
	                                   "run b r\nsignal b e1\nrun a k2\n");
	g_autofree char *err = NULL;
	int st = t_lhsim(NULL, &err, "run", gpath, "--plan", ppath, NULL);
	cr_expect_eq(st, 2);
	cr_expect(strstr(err, "deadlocks") && strstr(err, "dead.plan:4:1"), "%s", err);
}

Test(cli, unwritable_outputs_leave_nothing)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *bad = g_build_filename(dir, "no-such-dir", "t.json", NULL);
	g_autofree char *err = NULL;
	int st = t_lhsim(NULL, &err, "run", "--trace", bad, NULL);
	cr_expect_eq(st, 1); /* an output that cannot be written is an I/O failure */
	cr_expect(strstr(err, "no-such-dir") != NULL, "%s", err);
	/* The directory is untouched: no temporary file left behind. */
	g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
	cr_expect_null(g_dir_read_name(d));
}

Test(cli, list_shows_schedulers_and_hardware)
{
	g_autofree char *out = NULL;
	cr_assert_eq(t_lhsim(&out, NULL, "list", NULL), 0);
	cr_expect(strstr(out, "serial") && strstr(out, "h100-sxm") && strstr(out, "h200-sxm") &&
	              strstr(out, "a100-sxm") && strstr(out, "moe-offload"),
	          "%s", out);
	/* The H100's dense peak per data type (models/hw/h100-sxm.ini). */
	cr_expect(strstr(out, "dense TFLOP/s: f64 67, f32 67, tf32 494.5, bf16/f16 989, fp8 1979, "
	                      "int8 1979 (TOP/s)"),
	          "%s", out);
}

/* Two kernels in a row: a 2000 ns one, then a 3000 ns one. */
static const char *two_json =
    "{\"format\": \"lhsim-graph\", \"version\": 1, \"name\": \"two\", \"ops\": [\n"
    " {\"name\": \"a\", \"kind\": \"kernel\", \"duration_ns\": 2000},\n"
    " {\"name\": \"b\", \"kind\": \"kernel\", \"duration_ns\": 3000, \"deps\": [\"a\"]}\n"
    "]}\n";

Test(cli, compare_writes_csv_and_json_for_several_graphs)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g1 = write_tmp(dir, "small.json", small_json);
	g_autofree char *g2 = write_tmp(dir, "two.json", two_json);
	g_autofree char *csv = g_build_filename(dir, "c.csv", NULL);
	g_autofree char *out = NULL, *err = NULL;
	int st = t_lhsim(&out, &err, "compare", g1, g2, "--sched", "serial,lhs", "--csv", csv,
	                 "--json", NULL);
	cr_assert_eq(st, 0, "%s", err);
	/* serial on h100-sxm: small 42655 ns (see json_metrics_parse_and_match_the_engine);
	 * two: after the 15000 ns step overhead the host issues a at 19000 and b at 23000
	 * (launch 4000 ns each); a runs 19000-21000, b 23000-26000: 26000 ns. */
	g_autoptr(JsonParser) p = json_parser_new();
	cr_assert(json_parser_load_from_data(p, out, -1, NULL), "not JSON:\n%s", out);
	JsonObject *o = json_node_get_object(json_parser_get_root(p));
	cr_assert_str_eq(json_object_get_string_member(o, "hw"), "H100 SXM");
	JsonArray *gs = json_object_get_array_member(o, "graphs");
	cr_assert_eq(json_array_get_length(gs), 2);
	const char *names[] = {"small", "two"};
	const gint64 serial[] = {42655, 26000};
	for (guint k = 0; k < 2; k++) {
		JsonObject *g = json_array_get_object_element(gs, k);
		cr_assert_str_eq(json_object_get_string_member(g, "graph"), names[k]);
		JsonArray *rows = json_object_get_array_member(g, "rows");
		cr_assert_eq(json_array_get_length(rows), 2);
		JsonObject *r = json_array_get_object_element(rows, 0);
		cr_assert_str_eq(json_object_get_string_member(r, "scheduler"), "serial");
		cr_assert_str_eq(json_object_get_string_member(r, "status"), "ok");
		cr_assert_eq(json_object_get_int_member(r, "makespan_ns"), serial[k]);
	}
	g_autofree char *text = NULL;
	cr_assert(g_file_get_contents(csv, &text, NULL, NULL));
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	cr_assert_eq(g_strv_length(lines), 1 + 4 + 1, "%s", text);
	cr_assert_str_eq(lines[0], "graph,hw,scheduler,status,makespan_ns,lower_bound_ns,ratio,"
	                           "exposed_transfer_ns,peak_device_bytes,streams,error");
	cr_assert(g_str_has_prefix(lines[1], "small,H100 SXM,serial,ok,42655,"), "%s", lines[1]);
	cr_assert(g_str_has_prefix(lines[2], "small,H100 SXM,lhs,ok,"), "%s", lines[2]);
	cr_assert(g_str_has_prefix(lines[3], "two,H100 SXM,serial,ok,26000,"), "%s", lines[3]);
	/* A picture is of one graph. */
	g_autofree char *png = g_build_filename(dir, "c.png", NULL);
	g_free(err);
	err = NULL;
	cr_assert_eq(t_lhsim(NULL, &err, "compare", g1, g2, "--sched", "serial", "-o", png, NULL),
	             2);
	cr_assert(strstr(err, "-o draws one graph"), "%s", err);
}

Test(cli, compare_failed_row_does_not_abort_the_table)
{
	/* A plugin whose plan leaves out an op: its row fails with the reason (and the bound,
	 * host issue 2 x 4000 ns, is still given), serial's row is
	 * still there, in the table and the CSV, and the exit status is 1. */
	const char *pdir = g_getenv("LHSIM_TEST_PLUGINS");
	cr_assert(pdir);
	g_autofree char *so = g_build_filename(pdir, "faulty-plan.so", NULL);
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g = write_tmp(dir, "two.json", two_json);
	g_autofree char *csv = g_build_filename(dir, "c.csv", NULL);
	g_autofree char *out = NULL, *err = NULL;
	int st = t_lhsim(&out, &err, "compare", g, "--plugin", so, "--sched", "faulty,serial",
	                 "--csv", csv, NULL);
	cr_assert_eq(st, 1, "%s", err);
	cr_assert(strstr(out, "faulty       failed: plugin ") &&
	              strstr(out, "made an invalid plan"),
	          "%s", out);
	/* serial: 26000 ns, as in compare_writes_csv_and_json_for_several_graphs; the bound
	 * 8000 ns of work plus the 15000 ns step overhead is 23000 ns. */
	cr_assert(strstr(out, "serial") && strstr(out, "26.000 us"), "%s", out);
	cr_assert(strstr(err, "1 of 2 rows failed"), "%s", err);
	g_autofree char *text = NULL;
	cr_assert(g_file_get_contents(csv, &text, NULL, NULL));
	cr_assert(strstr(text, "\ntwo,H100 SXM,faulty,failed,,23000.000,,,,,\"plugin "), "%s",
	          text);
	cr_assert(strstr(text, "\ntwo,H100 SXM,serial,ok,26000,"), "%s", text);
}

Test(cli, help_documents_the_exit_statuses)
{
	g_autofree char *out = NULL;
	cr_assert_eq(t_lhsim(&out, NULL, "--help", NULL), 0);
	cr_assert(strstr(out, "exit status:") && strstr(out, "  0  success") &&
	              strstr(out, "  1  a failed run") && strstr(out, "I/O failure") &&
	              strstr(out, "  2  bad input"),
	          "%s", out);
	const char *subs[] = {"run",    "compare", "sweep",  "list",
	                      "import", "gen",     "replay", "calibrate"};
	for (gsize i = 0; i < G_N_ELEMENTS(subs); i++) {
		g_autofree char *o = NULL;
		cr_assert_eq(t_lhsim(&o, NULL, subs[i], "--help", NULL), 0, "%s", subs[i]);
		cr_assert(strstr(o, "exit status:") && strstr(o, "  2  bad input"), "%s:\n%s",
		          subs[i], o);
	}
}

Test(cli, replay_counts_are_checked)
{
	/* -1 was taken as "the default"; every value given is now checked. */
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g = write_tmp(dir, "two.json", two_json);
	const char *bad[][2] = {
	    {"--repeats", "-1"}, {"--repeats", "0"}, {"--warmup", "-1"}, {"--device", "-1"}};
	for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autofree char *out = NULL, *err = NULL;
		int st = t_lhsim(&out, &err, "replay", g, "--backend", "cpu", "--sched", "serial",
		                 "--time-scale", "1", bad[i][0], bad[i][1], NULL);
		cr_assert_eq(st, 2, "%s %s: %s", bad[i][0], bad[i][1], err);
		cr_assert(strstr(err, bad[i][0]) && strstr(err, bad[i][1]), "%s", err);
		cr_assert_str_empty(out);
	}
}

Test(cli, explain_with_a_plan_says_why_not)
{
	/* --explain shows a scheduler's decisions; a given plan has none: a clear error, not
	 * silence. */
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g = write_tmp(dir, "two.json", two_json);
	g_autofree char *p = write_tmp(dir, "p.plan",
	                               "lhsim-plan 1\nstream s compute\n"
	                               "run s a\nrun s b\n");
	g_autofree char *out = NULL, *err = NULL;
	cr_assert_eq(t_lhsim(&out, &err, "run", g, "--plan", p, "--explain", NULL), 2);
	cr_assert(strstr(err, "--explain") && strstr(err, "--plan"), "%s", err);
}

/* The timeline's size and window (issue 12): op names or times; a bad one is bad input. */
Test(cli, run_timeline_window_width_height_dpi)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *png = g_build_filename(dir, "w.png", NULL);
	g_autofree char *out = NULL, *err = NULL;
	int st = t_lhsim(&out, &err, "run", "--sched", "lhs", "-o", png, "--window",
	                 "l0.fwd.mla_proj:l0.fwd.mla_attn", "--width", "900", "--dpi", "192", NULL);
	cr_assert_eq(st, 0, "%s", err);
	cairo_surface_t *s = cairo_image_surface_create_from_png(png);
	cr_assert_eq(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
	cr_assert_eq(cairo_image_surface_get_width(s), 1800);
	cairo_surface_destroy(s);
	g_clear_pointer(&out, g_free);
	g_clear_pointer(&err, g_free);
	st =
	    t_lhsim(&out, &err, "run", "-o", png, "--window", "1ms:2.5ms", "--height", "500", NULL);
	cr_assert_eq(st, 0, "%s", err);
	const char *bad[][4] = {
	    {"--window", "no-such-op:2ms", NULL, NULL},
	    {"--window", "2ms:1ms", NULL, NULL},
	    {"--width", "100", NULL, NULL},
	    {"--dpi", "5", NULL, NULL},
	};
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_clear_pointer(&out, g_free);
		g_clear_pointer(&err, g_free);
		st = t_lhsim(&out, &err, "run", "-o", png, bad[i][0], bad[i][1], NULL);
		cr_assert_eq(st, 2, "%s %s: exit %d, %s", bad[i][0], bad[i][1], st, err);
	}
	g_clear_pointer(&out, g_free);
	g_clear_pointer(&err, g_free);
	st = t_lhsim(&out, &err, "run", "--width", "900", NULL);
	cr_assert_eq(st, 2, "--width without -o: %s", err);
	cr_assert(strstr(err, "-o FILE"), "%s", err);
}
