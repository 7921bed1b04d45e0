/* lhsim tests — `lhsim sweep` over grids: several axes (scheduler parameters, hardware keys,
 * generator options, graphs, seeds), the same file with any -j, in shards merged by
 * sweep-merge and after --resume, failed points as rows in every mode, heat maps, and bad
 * grids. */
#include <criterion/criterion.h>
#include <cairo.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "helpers.h"

__attribute__((constructor)) static void lsan_suppress_fontconfig(void)
{
	const char *src = g_getenv("LHSIM_SRC");
	if (!src || g_getenv("LSAN_OPTIONS"))
		return;
	g_autofree char *supp = g_build_filename(src, "tests", "lsan.supp", NULL);
	g_autofree char *opt = g_strdup_printf("suppressions=%s", supp);
	g_setenv("LSAN_OPTIONS", opt, TRUE);
}

/* Round numbers and no overheads: a 1 MB copy at pcie_gbs = 10 takes 100 us. */
static const char *hw_ini =
    "[hw]\nname = round\nsm_count = 100\npeak_tflops = 1\ncompute_eff = 1\nhbm_gbs = 1000\n"
    "hbm_eff = 1\nmemory_gib = 1\nkernel_overhead_ns = 0\nlaunch_ns = 0\nevent_ns = 0\n"
    "hw_queues = 8\nmax_resident_kernels = 128\ncopy_engines_h2d = 1\ncopy_engines_d2h = 1\n"
    "pcie_gbs = 10\npcie_duplex_gbs = 8\ncopy_latency_ns = 0\nlink_gbs = 100\n"
    "link_latency_ns = 0\ncollective_sm = 0.1\nsm_sharing = fifo\n";

static char *put(const char *dir, const char *name, const char *text)
{
	char *path = g_build_filename(dir, name, NULL);
	cr_assert(g_file_set_contents(path, text, -1, NULL));
	return path;
}

static char *read_text(const char *path)
{
	char *s = NULL;
	cr_assert(g_file_get_contents(path, &s, NULL, NULL), "cannot read %s", path);
	return s;
}

static guint n_lines(const char *text)
{
	guint n = 0;
	for (const char *p = text; *p; p++)
		n += *p == '\n';
	return n;
}

/* Runs `lhsim sweep ARGS... EXTRA...` (both NULL-terminated); returns the exit status. */
static int sweep(const char *const *args, const char *const *extra, char **out, char **err)
{
	g_autoptr(GPtrArray) v = g_ptr_array_new_with_free_func(g_free);
	g_ptr_array_add(v, g_strdup(g_getenv("LHSIM")));
	g_ptr_array_add(v, g_strdup("sweep"));
	for (guint i = 0; args[i]; i++)
		g_ptr_array_add(v, g_strdup(args[i]));
	for (guint i = 0; extra && extra[i]; i++)
		g_ptr_array_add(v, g_strdup(extra[i]));
	g_ptr_array_add(v, NULL);
	int status = 0;
	GError *e = NULL;
	g_autofree char *o = NULL, *r = NULL; /* captured even when not asked for */
	cr_assert(g_spawn_sync(NULL, (char **)v->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, &o, &r,
	                       &status, &e),
	          "%s", e ? e->message : "");
	if (out)
		*out = g_steal_pointer(&o);
	if (err)
		*err = g_steal_pointer(&r);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Test(sweep_grid, hardware_axis_gives_hand_computed_makespans)
{
	/* serial runs k0, h1, h2, h3, k1, k2, k3 one after the other: 20 + 3 * 1e6 / GBS + 3 * 15
	 * us; at 10 GB/s 365 us, at 20 GB/s 215 us. The H2D engine-class bound is its work
	 * 3 * 1e6 / GBS from t = 0 plus the shortest chain after the copies, one 15 us kernel
	 * (k3 after h3): 315 us and 165 us; ratios 365/315 = 1.158730, 215/165 = 1.303030. */
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g = put(dir, "g.json", t_prefetch_graph_json);
	g_autofree char *hw = put(dir, "round.ini", hw_ini);
	g_autofree char *csv = g_build_filename(dir, "s.csv", NULL);
	g_autofree char *err = NULL;
	const char *args[] = {g,          "--hw",           hw,      "--sched", "serial",
	                      "--hw-set", "pcie_gbs=10,20", "--csv", csv,       NULL};
	cr_assert_eq(sweep(args, NULL, NULL, &err), 0, "%s", err);
	g_autofree char *text = read_text(csv);
	cr_assert_str_eq(text,
	                 "graph,hw,scheduler,hw.pcie_gbs,status,makespan_ns,lower_bound_ns,ratio,"
	                 "peak_device_bytes,exposed_transfer_ns,overlap,error\n"
	                 "prefetch,round,serial,10,ok,365000,315000.000,1.158730,3004096,300000,"
	                 "0.000000,\n"
	                 "prefetch,round,serial,20,ok,215000,165000.000,1.303030,3004096,150000,"
	                 "0.000000,\n");
}

/* The grid of the next tests: 2 hardware x 2 schedulers x 3 x 2 parameter values = 24. */
#define GRID(g, hw)                                                                                \
	g, "--hw", hw, "--sched", "lhs,serial", "--hw-set", "pcie_gbs=10,20", "-p",                \
	    "async-compute-limit=1:3", "-p", "p2p-limit=1,2"

Test(sweep_grid, order_columns_and_na_rows)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g = put(dir, "g.json", t_prefetch_graph_json);
	g_autofree char *hw = put(dir, "round.ini", hw_ini);
	g_autofree char *csv = g_build_filename(dir, "s.csv", NULL);
	g_autofree char *err = NULL;
	const char *args[] = {GRID(g, hw), "--csv", csv, NULL};
	cr_assert_eq(sweep(args, NULL, NULL, &err), 0, "%s", err);
	g_autofree char *text = read_text(csv);
	g_auto(GStrv) l = g_strsplit(text, "\n", -1);
	cr_assert_eq(g_strv_length(l), 1 + 24 + 1, "%s", text);
	cr_assert_str_eq(l[0], "graph,hw,scheduler,hw.pcie_gbs,async-compute-limit,p2p-limit,"
	                       "status,makespan_ns,lower_bound_ns,ratio,peak_device_bytes,"
	                       "exposed_transfer_ns,overlap,error");
	/* Outermost the hardware, then the scheduler, then the parameters in the order given. */
	const char *want[] = {"prefetch,round,lhs,10,1,1,ok,",
	                      "prefetch,round,lhs,10,1,2,ok,",
	                      "prefetch,round,lhs,10,2,1,ok,",
	                      "prefetch,round,lhs,10,3,2,ok,",
	                      "prefetch,round,serial,10,1,1,n/a,365000,",
	                      "prefetch,round,serial,10,3,2,n/a,365000,",
	                      "prefetch,round,lhs,20,1,1,ok,",
	                      "prefetch,round,serial,20,3,2,n/a,215000,"};
	const guint at[] = {1, 2, 3, 6, 7, 12, 13, 24};
	for (guint i = 0; i < G_N_ELEMENTS(at); i++)
		cr_assert(g_str_has_prefix(l[at[i]], want[i]), "row %u: %s", at[i], l[at[i]]);
	cr_assert(g_str_has_suffix(l[7], ",serial has no parameter 'async-compute-limit' or "
	                                 "'p2p-limit' (one run repeated for every value)"),
	          "%s", l[7]);
}

Test(sweep_grid, same_file_for_jobs_shards_and_resume)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g = put(dir, "g.json", t_prefetch_graph_json);
	g_autofree char *hw = put(dir, "round.ini", hw_ini);
	const char *args[] = {GRID(g, hw), NULL};
	g_autofree char *c1 = g_build_filename(dir, "j1.csv", NULL);
	g_autofree char *c2 = g_build_filename(dir, "j2.csv", NULL);
	g_autofree char *e1 = NULL, *e2 = NULL, *o1 = NULL, *o2 = NULL;
	cr_assert_eq(sweep(args, (const char *[]){"-j", "1", "--csv", c1, NULL}, &o1, &e1), 0, "%s",
	             e1);
	cr_assert_eq(sweep(args, (const char *[]){"-j", "2", "--csv", c2, NULL}, &o2, &e2), 0, "%s",
	             e2);
	g_autofree char *one = read_text(c1), *two = read_text(c2);
	cr_assert_str_eq(one, two);
	cr_assert_str_eq(o1, o2);

	/* Three shards, merged in any order of the files. */
	char *sh[3];
	for (int k = 0; k < 3; k++) {
		sh[k] = g_strdup_printf("%s/s%d.csv", dir, k + 1);
		g_autofree char *spec = g_strdup_printf("%d/3", k + 1);
		g_autofree char *err = NULL;
		cr_assert_eq(sweep(args, (const char *[]){"--shard", spec, "--csv", sh[k], NULL},
		                   NULL, &err),
		             0, "%s", err);
		g_autofree char *t = read_text(sh[k]);
		cr_assert_eq(n_lines(t), 1 + 8, "%s", t); /* 24 points, 8 per shard */
		cr_assert(g_str_has_prefix(t, "point,graph,hw,"), "%s", t);
		g_autofree char *first = g_strdup_printf("\n%d/24,prefetch,", k + 1);
		cr_assert(strstr(t, first), "%s", t);
	}
	g_autofree char *m = g_build_filename(dir, "m.csv", NULL);
	g_autofree char *out = NULL, *err = NULL;
	cr_assert_eq(t_lhsim(&out, &err, "sweep-merge", sh[2], sh[0], sh[1], "-o", m, NULL), 0,
	             "%s", err);
	g_autofree char *merged = read_text(m);
	cr_assert_str_eq(merged, one);
	/* To standard output by default. */
	g_free(out);
	out = NULL;
	cr_assert_eq(t_lhsim(&out, NULL, "sweep-merge", sh[0], sh[1], sh[2], NULL), 0);
	cr_assert_str_eq(out, one);

	/* Killed halfway: the file has the header and the first 12 rows. Resuming runs the
	 * other 12 and leaves the whole file. */
	g_autofree char *r = g_build_filename(dir, "r.csv", NULL);
	const char *cut = one;
	for (int i = 0; i < 13; i++)
		cut = strchr(cut, '\n') + 1;
	g_autofree char *half = g_strndup(one, cut - one);
	cr_assert(g_file_set_contents(r, half, -1, NULL));
	g_free(err);
	err = NULL;
	cr_assert_eq(sweep(args, (const char *[]){"--resume", r, NULL}, NULL, &err), 0, "%s", err);
	cr_assert(strstr(err, "12 of 24 points done already"), "%s", err);
	g_autofree char *resumed = read_text(r);
	cr_assert_str_eq(resumed, one);
	/* A resumed file with every point runs nothing and changes nothing. */
	g_free(err);
	err = NULL;
	cr_assert_eq(sweep(args, (const char *[]){"--resume", r, NULL}, NULL, &err), 0, "%s", err);
	cr_assert(strstr(err, "24 of 24 points done already"), "%s", err);
	/* A shard's file resumes too, into the one-process file (--csv). */
	g_autofree char *r2 = g_build_filename(dir, "r2.csv", NULL);
	g_autofree char *s2 = read_text(sh[1]);
	cr_assert(g_file_set_contents(r2, s2, -1, NULL));
	g_autofree char *c3 = g_build_filename(dir, "c3.csv", NULL);
	g_free(err);
	err = NULL;
	cr_assert_eq(sweep(args, (const char *[]){"--resume", r2, "--csv", c3, NULL}, NULL, &err),
	             0, "%s", err);
	g_autofree char *t3 = read_text(c3);
	cr_assert_str_eq(t3, one);
	/* A missing file: every point runs. */
	g_autofree char *r4 = g_build_filename(dir, "new.csv", NULL);
	cr_assert_eq(sweep(args, (const char *[]){"--resume", r4, NULL}, NULL, NULL), 0);
	g_autofree char *t4 = read_text(r4);
	cr_assert_str_eq(t4, one);
	for (int k = 0; k < 3; k++)
		g_free(sh[k]);
}

Test(sweep_grid, failed_points_are_rows_in_every_mode)
{
	/* memory_gib = 0.000001 (1074 bytes) cannot hold k0's 4096 bytes: under --strict-memory
	 * every point on that hardware fails; on 1 GiB they succeed. */
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g = put(dir, "g.json", t_prefetch_graph_json);
	g_autofree char *hw = put(dir, "round.ini", hw_ini);
	const char *args[] = {g,          "--hw",
	                      hw,         "--strict-memory",
	                      "--sched",  "lhs",
	                      "--hw-set", "memory_gib=0.000001,1",
	                      "-p",       "async-compute-limit=1:2",
	                      NULL};
	g_autofree char *c1 = g_build_filename(dir, "one.csv", NULL);
	g_autofree char *err = NULL;
	cr_assert_eq(sweep(args, (const char *[]){"-j", "1", "--csv", c1, NULL}, NULL, &err), 1,
	             "%s", err);
	g_autofree char *one = read_text(c1);
	g_auto(GStrv) l = g_strsplit(one, "\n", -1);
	cr_assert_eq(g_strv_length(l), 1 + 4 + 1, "%s", one);
	cr_assert(g_str_has_prefix(l[1], "prefetch,round,lhs,0.000001,1,failed,,,,,,,"), "%s",
	          l[1]);
	cr_assert(strstr(l[1], "device memory exceeded"), "%s", l[1]);
	cr_assert(g_str_has_prefix(l[2], "prefetch,round,lhs,0.000001,2,failed,,,,,,,"), "%s",
	          l[2]);
	cr_assert(g_str_has_prefix(l[3], "prefetch,round,lhs,1,1,ok,"), "%s", l[3]);
	cr_assert(g_str_has_prefix(l[4], "prefetch,round,lhs,1,2,ok,"), "%s", l[4]);

	g_autofree char *c2 = g_build_filename(dir, "two.csv", NULL);
	cr_assert_eq(sweep(args, (const char *[]){"-j", "2", "--csv", c2, NULL}, NULL, NULL), 1);
	g_autofree char *two = read_text(c2);
	cr_assert_str_eq(two, one);
	char *sh[3];
	for (int k = 0; k < 3; k++) {
		sh[k] = g_strdup_printf("%s/s%d.csv", dir, k + 1);
		g_autofree char *spec = g_strdup_printf("%d/3", k + 1);
		/* Shard 1 has points 1 and 4 (failed, ok), 2 has 2 (failed), 3 has 3 (ok). */
		cr_assert_eq(sweep(args, (const char *[]){"--shard", spec, "--csv", sh[k], NULL},
		                   NULL, NULL),
		             k == 2 ? 0 : 1);
	}
	g_autofree char *m = g_build_filename(dir, "m.csv", NULL);
	cr_assert_eq(t_lhsim(NULL, NULL, "sweep-merge", sh[0], sh[1], sh[2], "-o", m, NULL), 1);
	g_autofree char *merged = read_text(m);
	cr_assert_str_eq(merged, one);
	/* Resumed from the first two rows (both failed): they stay, the rest run. */
	g_autofree char *r = g_build_filename(dir, "r.csv", NULL);
	g_autofree char *part = g_strjoin("\n", l[0], l[1], l[2], "", NULL);
	cr_assert(g_file_set_contents(r, part, -1, NULL));
	cr_assert_eq(sweep(args, (const char *[]){"--resume", r, NULL}, NULL, NULL), 1);
	g_autofree char *resumed = read_text(r);
	cr_assert_str_eq(resumed, one);
	for (int k = 0; k < 3; k++)
		g_free(sh[k]);
}

Test(sweep_grid, generator_axis_matches_gen_and_run)
{
	/* A point of --gen transformer:layers=1,2 is `lhsim gen transformer layers=2` run. */
	g_autofree char *dir = t_tmpdir();
	g_autofree char *csv = g_build_filename(dir, "s.csv", NULL);
	g_autofree char *err = NULL;
	const char *args[] = {"--gen", "transformer:layers=1,2:seq=512", "--sched", "lhs",
	                      "-p",    "async-compute-limit=1,2",        "--csv",   csv,
	                      NULL};
	cr_assert_eq(sweep(args, NULL, NULL, &err), 0, "%s", err);
	g_autofree char *text = read_text(csv);
	g_auto(GStrv) l = g_strsplit(text, "\n", -1);
	cr_assert_str_eq(l[0], "graph,hw,scheduler,gen.layers,async-compute-limit,status,"
	                       "makespan_ns,lower_bound_ns,ratio,peak_device_bytes,"
	                       "exposed_transfer_ns,overlap,error");
	cr_assert_eq(g_strv_length(l), 1 + 4 + 1, "%s", text);
	cr_assert(g_str_has_prefix(l[4], "transformer,H100 SXM,lhs,2,2,ok,"), "%s", l[4]);
	g_autofree char *gj = g_build_filename(dir, "t.json", NULL);
	cr_assert_eq(
	    t_lhsim(NULL, NULL, "gen", "transformer", "layers=2", "seq=512", "-o", gj, NULL), 0);
	g_autofree char *out = NULL;
	cr_assert_eq(t_lhsim(&out, NULL, "run", gj, "--sched", "lhs", "-p", "async-compute-limit=2",
	                     "--json", NULL),
	             0);
	g_auto(GStrv) f = g_strsplit(l[4], ",", -1);
	g_autofree char *key = g_strdup_printf("\"makespan_ns\": %s,", f[6]);
	cr_assert(strstr(out, key), "%s not in %s", key, out);
}

Test(sweep_grid, seeds_give_mean_and_spread)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *csv = g_build_filename(dir, "s.csv", NULL);
	g_autofree char *png = g_build_filename(dir, "s.png", NULL);
	g_autofree char *out = NULL, *err = NULL;
	const char *args[] = {
	    "--gen",    "random:ops=60:width=4", "--seeds", "1:3", "--sched", "serial",
	    "--hw-set", "pcie_gbs=55,64",        "--csv",   csv,   "-o",      png,
	    NULL};
	cr_assert_eq(sweep(args, NULL, &out, &err), 0, "%s", err);
	g_autofree char *text = read_text(csv);
	g_auto(GStrv) l = g_strsplit(text, "\n", -1);
	cr_assert_eq(g_strv_length(l), 1 + 6 + 1, "%s", text);
	cr_assert(g_str_has_prefix(l[0], "graph,hw,scheduler,hw.pcie_gbs,seed,status,"), "%s",
	          l[0]);
	/* The seed picks the graph: random-SEED-OPS. */
	for (int s = 1; s <= 3; s++) {
		g_autofree char *pre =
		    g_strdup_printf("random-%d-60,H100 SXM,serial,55,%d,ok,", s, s);
		cr_assert(g_str_has_prefix(l[s], pre), "%s", l[s]);
	}
	/* The table: the mean and the sample standard deviation of the three makespans. */
	double v[3], mean = 0, var = 0;
	for (int s = 0; s < 3; s++) {
		g_auto(GStrv) f = g_strsplit(l[s + 1], ",", -1);
		v[s] = g_ascii_strtod(f[6], NULL);
		mean += v[s] / 3;
	}
	for (int s = 0; s < 3; s++)
		var += (v[s] - mean) * (v[s] - mean) / 2;
	g_autofree char *ms = lh_format_ns(mean), *sd = lh_format_ns(sqrt(var));
	g_autofree char *want = g_strdup_printf("%s ± %s", ms, sd);
	cr_assert(strstr(out, want), "'%s' not in\n%s", want, out);
	cr_assert(strstr(out, "  3/3  "), "%s", out);
	cairo_surface_t *s = cairo_image_surface_create_from_png(png);
	cr_assert_eq(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
	cairo_surface_destroy(s);
}

Test(sweep_grid, heat_map_and_json)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g = put(dir, "g.json", t_prefetch_graph_json);
	g_autofree char *png = g_build_filename(dir, "h.png", NULL);
	g_autofree char *out = NULL, *err = NULL;
	const char *args[] = {g,
	                      "--sched",
	                      "lhs,cpath",
	                      "-p",
	                      "async-compute-limit=1:4",
	                      "-p",
	                      "memory-limit=0.5,1",
	                      "--metric",
	                      "peak",
	                      "-o",
	                      png,
	                      "--json",
	                      NULL};
	cr_assert_eq(sweep(args, NULL, &out, &err), 0, "%s", err);
	cairo_surface_t *s = cairo_image_surface_create_from_png(png);
	cr_assert_eq(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
	cr_assert_geq(cairo_image_surface_get_width(s), 1200);
	cairo_surface_destroy(s);
	/* --json instead of the table: every point with its coordinates and numbers. */
	g_autoptr(JsonParser) p = json_parser_new();
	cr_assert(json_parser_load_from_data(p, out, -1, NULL), "%s", out);
	JsonArray *pts =
	    json_object_get_array_member(json_node_get_object(json_parser_get_root(p)), "points");
	cr_assert_eq(json_array_get_length(pts), 2 * 4 * 2);
	JsonObject *o = json_array_get_object_element(pts, 3);
	cr_assert_str_eq(json_object_get_string_member(o, "scheduler"), "lhs");
	cr_assert_str_eq(json_object_get_string_member(o, "async-compute-limit"), "2");
	cr_assert_str_eq(json_object_get_string_member(o, "memory-limit"), "1");
	cr_assert_gt(json_object_get_int_member(o, "makespan_ns"), 0);
	cr_assert(json_object_get_null_member(o, "error"));
	cr_assert_eq(t_lhsim(NULL, NULL, "sweep", g, "-p", "async-compute-limit=1:2", "--metric",
	                     "speed", NULL),
	             2);
}

Test(sweep_grid, several_graphs_and_a_pattern)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *a = put(dir, "a.json", t_prefetch_graph_json);
	g_autofree char *b = put(dir, "b.json", t_prefetch_graph_json);
	g_autofree char *csv = g_build_filename(dir, "s.csv", NULL);
	g_autofree char *pat = g_build_filename(dir, "*.json", NULL);
	g_autofree char *err = NULL;
	cr_assert_eq(t_lhsim(NULL, &err, "sweep", pat, "--sched", "serial,lhs", "--csv", csv, NULL),
	             0, "%s", err);
	g_autofree char *text = read_text(csv);
	g_auto(GStrv) l = g_strsplit(text, "\n", -1);
	cr_assert_eq(g_strv_length(l), 1 + 4 + 1, "%s", text);
	cr_assert(g_str_has_prefix(l[0], "graph,hw,scheduler,file,status,"), "%s", l[0]);
	g_autofree char *r1 = g_strdup_printf("prefetch,H100 SXM,serial,%s,ok,", a);
	g_autofree char *r4 = g_strdup_printf("prefetch,H100 SXM,lhs,%s,ok,", b);
	cr_assert(g_str_has_prefix(l[1], r1), "%s", l[1]);
	cr_assert(g_str_has_prefix(l[4], r4), "%s", l[4]);
}

Test(sweep_grid, bad_grids_exit_2_naming_the_argument)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g = put(dir, "g.json", t_prefetch_graph_json);
	struct {
		const char *args[14];
		const char *msg;
	} cases[] = {
	    {{"-p", "no-such=1:2"}, "-p no-such=1:2: no scheduler has parameter 'no-such'"},
	    {{"-p", "no-such=1:2", "--sched", "lhs"},
	     "-p no-such=1:2: no listed scheduler has parameter 'no-such'"},
	    {{"-p", "async-compute-limit=3:1"}, "-p async-compute-limit=3:1: the range must go up"},
	    {{"-p", "async-compute-limit=1:4:0"},
	     "-p async-compute-limit=1:4:0: the range must go up (FIRST <= LAST) with a positive "
	     "STEP"},
	    {{"-p", "async-compute-limit=1:2", "--shard", "4/3"},
	     "--shard '4/3': K must be from 1 to N = 3"},
	    {{"-p", "async-compute-limit=1:2", "--shard", "0/3"}, "--shard '0/3'"},
	    {{"-p", "async-compute-limit=1:2", "--shard", "x"}, "--shard 'x': give K/N"},
	    {{"--hw-set", "pcie_speed=1,2"},
	     "--hw-set pcie_speed=1,2: unknown hardware key 'pcie_speed'"},
	    {{"--hw-set", "pcie_gbs=0,10"},
	     "--hw-set pcie_gbs=0,10: key 'pcie_gbs' = 0 is out of range"},
	    {{"--hw-set", "hw_queues=1.5,2"},
	     "--hw-set hw_queues=1.5,2: key 'hw_queues': '1.5' must be a whole number"},
	    {{"--hw-set", "pcie_gbs=10,55"}, "--hw-set at pcie_gbs=10:"},
	    {{"--gen", "moe-offload:offload=0:3"},
	     "--gen moe-offload:offload=0:3: moe-offload: option 'offload' = 3 is out of range [0, "
	     "2]"},
	    {{"--gen", "moe-offload:speed=1,2"},
	     "--gen moe-offload:speed=1,2: moe-offload: unknown option 'speed'"},
	    {{"--gen", "nope:a=1,2"}, "--gen 'nope:a=1,2': unknown workload 'nope'"},
	    {{"--seeds", "1:3", "--sched", "lhs"},
	     "--seeds 1:3: neither the workload nor a listed scheduler takes a seed"},
	    {{"--seeds", "1:0", "--gen", "random"}, "--seeds 1:0: the range must go up"},
	    {{"-p", "async-compute-limit=1:2", "-p", "p2p-limit=1,2", "-p", "memory-limit=0.5,1",
	      "--sched", "lhs", "-o", "x.png"},
	     "-o draws one swept axis (lines) or two (a heat map); this sweep has 3 "
	     "(async-compute-limit, p2p-limit, memory-limit)"},
	    {{"-p", "async-compute-limit=1:2", "--shard", "1/2", "-o", "x.png"},
	     "--shard writes rows only"},
	    {{"--sched", "lhs"}, "give the swept parameter"},
	};
	for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
		g_autofree char *out = NULL, *err = NULL;
		const char *args[16] = {g};
		guint n = 1;
		for (guint k = 0; cases[c].args[k]; k++)
			if (!strcmp(cases[c].args[k], "--gen"))
				n = 0; /* generated: no GRAPH */
		for (guint k = 0; cases[c].args[k]; k++)
			args[n++] = cases[c].args[k];
		args[n] = NULL;
		int rc = sweep(args, NULL, &out, &err);
		cr_assert_eq(rc, 2, "case %u: %d %s", c, rc, err);
		cr_assert(strstr(err, cases[c].msg), "case %u: %s", c, err);
		cr_assert_str_eq(out, "", "case %u", c);
	}
}

Test(sweep_grid, merge_refuses_what_does_not_fit)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g = put(dir, "g.json", t_prefetch_graph_json);
	const char *args[] = {g, "--sched", "lhs", "-p", "async-compute-limit=1:4", NULL};
	char *sh[2];
	for (int k = 0; k < 2; k++) {
		sh[k] = g_strdup_printf("%s/s%d.csv", dir, k + 1);
		g_autofree char *spec = g_strdup_printf("%d/2", k + 1);
		cr_assert_eq(sweep(args, (const char *[]){"--shard", spec, "--csv", sh[k], NULL},
		                   NULL, NULL),
		             0);
	}
	g_autofree char *full = g_build_filename(dir, "full.csv", NULL);
	cr_assert_eq(sweep(args, (const char *[]){"--csv", full, NULL}, NULL, NULL), 0);
	g_autofree char *m = g_build_filename(dir, "m.csv", NULL);
	struct {
		const char *a, *b, *msg;
	} cases[] = {
	    {sh[0], NULL,
	     "2 of the sweep's 4 points are in none of the files (the first: point 2)"},
	    {sh[0], sh[0], "point 1/4 is also in"},
	    {sh[0], full, "not a shard's file"},
	};
	for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
		g_autofree char *err = NULL;
		int rc = cases[c].b ? t_lhsim(NULL, &err, "sweep-merge", cases[c].a, cases[c].b,
		                              "-o", m, NULL)
		                    : t_lhsim(NULL, &err, "sweep-merge", cases[c].a, "-o", m, NULL);
		cr_assert_eq(rc, 2, "case %u: %s", c, err);
		cr_assert(strstr(err, cases[c].msg), "case %u: %s", c, err);
		cr_assert_not(g_file_test(m, G_FILE_TEST_EXISTS), "case %u", c);
	}
	/* A shard of another sweep: other columns. */
	const char *other[] = {g,         "--sched", "lhs",   "-p",  "p2p-limit=1:4",
	                       "--shard", "2/2",     "--csv", sh[1], NULL};
	cr_assert_eq(sweep(other, NULL, NULL, NULL), 0);
	g_autofree char *err = NULL;
	cr_assert_eq(t_lhsim(NULL, &err, "sweep-merge", sh[0], sh[1], "-o", m, NULL), 2);
	cr_assert(strstr(err, "come from different sweeps"), "%s", err);
	/* --resume of another sweep's file. */
	g_free(err);
	err = NULL;
	const char *res[] = {g, "--sched", "lhs", "-p", "p2p-limit=1:4", "--resume", full, NULL};
	cr_assert_eq(sweep(res, NULL, NULL, &err), 2);
	cr_assert(strstr(err, "are not this sweep's"), "%s", err);
	for (int k = 0; k < 2; k++)
		g_free(sh[k]);
}

Test(sweep_grid, seeds_of_a_scheduler)
{
	/* The test plugin `shuffle` runs every op on one stream in a seeded random order: on the
	 * round hardware every order takes 20 + 3 * 100 + 3 * 15 = 365 us, while the peak memory
	 * depends on the order. serial has no seed: one run, its rows n/a. */
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g = put(dir, "g.json", t_prefetch_graph_json);
	g_autofree char *hw = put(dir, "round.ini", hw_ini);
	g_autofree char *plugin =
	    g_build_filename(g_getenv("LHSIM_TEST_PLUGINS"), "shuffle.so", NULL);
	g_autofree char *csv = g_build_filename(dir, "s.csv", NULL);
	g_autofree char *out = NULL, *err = NULL;
	const char *args[] = {
	    g,         "--hw", hw,      "--plugin", plugin, "--sched", "shuffle,serial",
	    "--seeds", "1:3",  "--csv", csv,        NULL};
	cr_assert_eq(sweep(args, NULL, &out, &err), 0, "%s", err);
	g_autofree char *text = read_text(csv);
	g_auto(GStrv) l = g_strsplit(text, "\n", -1);
	cr_assert_eq(g_strv_length(l), 1 + 6 + 1, "%s", text);
	cr_assert_str_eq(l[0], "graph,hw,scheduler,seed,status,makespan_ns,lower_bound_ns,ratio,"
	                       "peak_device_bytes,exposed_transfer_ns,overlap,error");
	double peak[3], mean = 0, var = 0;
	for (int s = 1; s <= 3; s++) {
		g_autofree char *pre = g_strdup_printf("prefetch,round,shuffle,%d,ok,365000,", s);
		cr_assert(g_str_has_prefix(l[s], pre), "%s", l[s]);
		g_auto(GStrv) f = g_strsplit(l[s], ",", -1);
		peak[s - 1] = g_ascii_strtod(f[8], NULL);
		mean += peak[s - 1] / 3;
		g_autofree char *na = g_strdup_printf("prefetch,round,serial,%d,n/a,365000,", s);
		cr_assert(g_str_has_prefix(l[s + 3], na), "%s", l[s + 3]);
	}
	for (int s = 0; s < 3; s++)
		var += (peak[s] - mean) * (peak[s] - mean) / 2;
	cr_assert(strstr(out, "365.000 us ± 0 ns"), "%s", out);
	g_autofree char *pm = lh_format_bytes(mean), *ps = lh_format_bytes(sqrt(var));
	g_autofree char *want = g_strdup_printf("%s ± %s", pm, ps);
	cr_assert(strstr(out, want), "'%s' not in\n%s", want, out);
}
