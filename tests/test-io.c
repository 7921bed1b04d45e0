/* lhsim tests — where outputs go and where inputs come from: "-" for the standard streams,
 * symbolic links followed, devices and FIFOs written in place, failed and killed writes that
 * leave nothing behind, and the exit status of each. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

/* k1 (1000 ns) -> d2h copy c (10 kB) -> k2 (500 ns), and an all-reduce r after k1: the graph
 * of test-cli.c, whose serial makespan on h100-sxm is 42655 ns (worked out there). */
static const char *small_json =
    "{\"format\": \"lhsim-graph\", \"version\": 1, \"name\": \"small\", \"ops\": [\n"
    " {\"name\": \"k1\", \"kind\": \"kernel\", \"duration_ns\": 1000, \"out_bytes\": 4096},\n"
    " {\"name\": \"c\", \"kind\": \"copy-d2h\", \"size\": 10000, \"deps\": [\"k1\"]},\n"
    " {\"name\": \"r\", \"kind\": \"all-reduce\", \"size\": 8192, \"group\": 8, \"deps\": "
    "[\"k1\"]},\n"
    " {\"name\": \"k2\", \"kind\": \"kernel\", \"duration_ns\": 500, \"deps\": [\"c\", \"r\"]}\n"
    "]}\n";

static char *write_tmp(const char *dir, const char *name, const char *text)
{
	char *path = g_build_filename(dir, name, NULL);
	cr_assert(g_file_set_contents(path, text, -1, NULL));
	return path;
}

static char *slurp(const char *path)
{
	char *s = NULL;
	cr_assert(g_file_get_contents(path, &s, NULL, NULL), "cannot read %s", path);
	return s;
}

static guint dir_entries(const char *dir)
{
	g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
	guint n = 0;
	while (g_dir_read_name(d))
		n++;
	return n;
}

static gboolean is_link(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

static gboolean is_chardev(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

static gint64 makespan_of(const char *json)
{
	g_autoptr(JsonParser) p = json_parser_new();
	cr_assert(json_parser_load_from_data(p, json, -1, NULL), "not JSON:\n%s", json);
	return json_object_get_int_member(json_node_get_object(json_parser_get_root(p)),
	                                  "makespan_ns");
}

Test(io, symlinked_output_is_written_through)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g = write_tmp(dir, "g.json", small_json);
	/* A relative link to a file that does not exist yet, and one to a file that does. */
	g_autofree char *link = g_build_filename(dir, "link.plan", NULL);
	g_autofree char *real = g_build_filename(dir, "real.plan", NULL);
	cr_assert_eq(symlink("real.plan", link), 0);
	g_autofree char *err = NULL;
	cr_assert_eq(t_lhsim(NULL, &err, "run", g, "--save-plan", link, NULL), 0, "%s", err);
	cr_assert(is_link(link), "the link was replaced by a file");
	g_autofree char *text = slurp(real);
	cr_assert(g_str_has_prefix(text, "lhsim-plan 1\n"), "%s", text);
	g_autofree char *tlink = g_build_filename(dir, "t.json", NULL);
	g_autofree char *treal = write_tmp(dir, "trace-real.json", "old");
	cr_assert_eq(symlink(treal, tlink), 0);
	g_free(err);
	err = NULL;
	cr_assert_eq(t_lhsim(NULL, &err, "run", g, "--trace", tlink, NULL), 0, "%s", err);
	cr_assert(is_link(tlink));
	g_autofree char *trace = slurp(treal);
	cr_assert(strstr(trace, "traceEvents"), "the link's target was not written: %s", trace);
	/* g.json, the two links, their two targets; no temporary left. */
	cr_assert_eq(dir_entries(dir), 5);
}

Test(io, device_behind_a_link_is_written_in_place)
{
	if (!is_chardev("/dev/null") || !is_chardev("/dev/full"))
		cr_skip_test("no /dev/null or /dev/full");
	g_autofree char *dir = t_tmpdir();
	g_autofree char *null = g_build_filename(dir, "null", NULL);
	g_autofree char *full = g_build_filename(dir, "full", NULL);
	cr_assert_eq(symlink("/dev/null", null), 0);
	cr_assert_eq(symlink("/dev/full", full), 0);
	g_autofree char *err = NULL;
	cr_assert_eq(t_lhsim(NULL, &err, "run", "--sched", "lhs", "--save-plan", null, NULL), 0,
	             "%s", err);
	cr_assert(is_link(null) && is_chardev("/dev/null"));
	g_free(err);
	err = NULL;
	/* A full device: the write fails, an I/O failure (1), and the device stays one. */
	cr_assert_eq(t_lhsim(NULL, &err, "run", "--trace", full, NULL), 1, "%s", err);
	cr_assert(strstr(err, full) && strstr(err, g_strerror(ENOSPC)), "%s", err);
	cr_assert(is_link(full) && is_chardev("/dev/full"));
	g_free(err);
	err = NULL;
	cr_assert_eq(t_lhsim(NULL, &err, "run", "-o", "svg:/dev/full", NULL), 1, "%s", err);
	cr_assert(is_chardev("/dev/full"));
	cr_assert_eq(dir_entries(dir), 2);
}

Test(io, fifo_is_written_in_place)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *fifo = g_build_filename(dir, "p.fifo", NULL);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	/* Open the reading end first (without waiting for a writer), so that lhsim's open for
	 * writing returns at once; the plan of the default workload fits in the pipe's buffer. */
	int fd = open(fifo, O_RDONLY | O_NONBLOCK);
	cr_assert(fd >= 0);
	g_autofree char *err = NULL;
	cr_assert_eq(t_lhsim(NULL, &err, "run", "--save-plan", fifo, NULL), 0, "%s", err);
	char buf[64] = {0};
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	cr_assert(n > 0 && g_str_has_prefix(buf, "lhsim-plan 1\n"), "read %zd: '%s'", n, buf);
	struct stat st;
	cr_assert(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode), "the FIFO was replaced");
	cr_assert_eq(dir_entries(dir), 1);
}

Test(io, file_behind_proc_fd_is_written_in_place)
{
	/* /dev/fd/1 names the open file of standard output (here a regular file the shell
	 * opened): writing in place reaches it; a temporary file cannot be made there. */
	g_autofree char *dir = t_tmpdir();
	g_autofree char *out = g_build_filename(dir, "out.txt", NULL);
	g_autofree char *cmd =
	    g_strdup_printf("exec \"$LHSIM\" run --save-plan /dev/fd/1 > '%s'", out);
	int status = 0;
	g_autofree char *err = NULL;
	const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	cr_assert(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, &err,
	                       &status, NULL));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", err);
	g_autofree char *text = slurp(out);
	cr_assert(g_str_has_prefix(text, "lhsim-plan 1\n"), "%s", text);
	/* The report moved to stderr only for "-"; here it follows the plan on stdout. */
	cr_assert(strstr(text, "makespan"), "%s", text);
}

Test(io, dash_is_standard_output_for_every_writer)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g = write_tmp(dir, "g.json", small_json);
	g_unlink("-");
	struct {
		const char *args[7];
		const char *prefix;
	} cases[] = {
	    {{"run", g, "--save-plan", "-", NULL}, "lhsim-plan 1\n"},
	    {{"run", g, "--trace", "-", NULL}, "{"},
	    {{"run", g, "-o", "svg:-", NULL}, "<?xml"},
	    {{"run", g, "-o", "-", NULL}, "\x89PNG\r\n\x1a\n"},
	    {{"run", g, "-o", "pdf:-", NULL}, "%PDF"},
	    {{"gen", "transformer", "layers=1", "-o", "-", NULL}, "{\"format\": \"lhsim-graph\""},
	    {{"compare", g, "--sched", "serial", "--csv", "-", NULL}, "graph,hw,scheduler"},
	    {{"sweep", g, "-p", "async-compute-limit=1:2", "--csv", "-", NULL}, "graph,hw,"},
	};
	for (gsize c = 0; c < G_N_ELEMENTS(cases); c++) {
		const char *const *a = cases[c].args;
		g_autofree char *out = NULL, *err = NULL;
		int st = t_lhsim_io(NULL, NULL, &out, &err, a[0], a[1], a[2], a[3], a[4], a[5],
		                    a[6], NULL);
		cr_assert_eq(st, 0, "%s %s: %s", a[0], a[2], err);
		cr_assert(g_str_has_prefix(out, cases[c].prefix), "%s %s %s: stdout '%.60s'", a[0],
		          a[2], a[3], out);
		/* The table moved to stderr, out of the file's way. */
		if (!strcmp(a[0], "run"))
			cr_assert(strstr(err, "makespan"), "%s", err);
	}
	gboolean made = g_file_test("-", G_FILE_TEST_EXISTS);
	g_unlink("-"); /* what a writer that took '-' for a name left in the working directory */
	cr_assert_not(made, "a file named '-' was made");
	cr_assert_eq(dir_entries(dir), 1);
	/* One stream, one writer; and --json needs standard output to itself. */
	g_autofree char *err = NULL;
	cr_assert_eq(t_lhsim(NULL, &err, "run", g, "--trace", "-", "--save-plan", "-", NULL), 2);
	cr_assert(strstr(err, "--trace and --save-plan cannot both be standard output"), "%s", err);
	g_free(err);
	err = NULL;
	cr_assert_eq(t_lhsim(NULL, &err, "run", g, "--trace", "-", "--json", NULL), 2);
	cr_assert(strstr(err, "--json"), "%s", err);
}

Test(io, dash_is_standard_input_for_graph_plan_and_hw)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g = write_tmp(dir, "g.json", small_json);
	g_autofree char *out = NULL, *err = NULL;
	/* The graph: the same makespan as from the file (42655 ns, test-cli.c's
	 * json_metrics_parse_and_match_the_engine). */
	cr_assert_eq(t_lhsim_io(small_json, NULL, &out, &err, "run", "-", "--json", NULL), 0, "%s",
	             err);
	cr_assert_eq(makespan_of(out), 42655);
	g_clear_pointer(&out, g_free);
	g_clear_pointer(&err, g_free);
	/* A plan: k1, r, c, k2 in that order on one stream. After the 15000 ns step overhead
	 * the host issues at 19000, 23000, 27000, 31000 (4000 ns each); k1 19000-20000; r
	 * 23000-38155 (NCCL's LL ring on one node: 15000 latency + 154.98 wire, worked out in
	 * test-cli.c); c after r on the same stream, 38155-40337 (2181.818 ns); k2 issued at
	 * 31000, waits for c: 40337-40837. */
	const char *plan = "lhsim-plan 1\nstream s compute\nrun s k1\nrun s r\nrun s c\nrun s k2\n";
	cr_assert_eq(t_lhsim_io(plan, NULL, &out, &err, "run", g, "--plan", "-", "--json", NULL), 0,
	             "%s", err);
	cr_assert_eq(makespan_of(out), 40837);
	g_clear_pointer(&out, g_free);
	g_clear_pointer(&err, g_free);
	/* Errors in it are placed in <stdin>. */
	cr_assert_eq(t_lhsim_io("lhsim-plan 1\nrun nowhere k1\n", NULL, &out, &err, "run", g,
	                        "--plan", "-", NULL),
	             2);
	cr_assert(g_str_has_prefix(err, "lhsim: <stdin>:2:"), "%s", err);
	g_clear_pointer(&out, g_free);
	g_clear_pointer(&err, g_free);
	/* Hardware: h100-sxm's own description read from stdin gives h100-sxm's answer. */
	lh_models_init();
	const char *ini = lh_hw_builtin_data("h100-sxm");
	cr_assert(ini);
	cr_assert_eq(t_lhsim_io(ini, NULL, &out, &err, "run", g, "--hw", "-", "--json", NULL), 0,
	             "%s", err);
	cr_assert_eq(makespan_of(out), 42655);
	g_clear_pointer(&out, g_free);
	g_clear_pointer(&err, g_free);
	/* HLO text is recognised by its first word. */
	g_autofree char *hlo_path = t_data("hlo/lhs_test_AllGatherAsyncSimple.hlo");
	g_autofree char *hlo = slurp(hlo_path);
	g_autofree char *want = NULL;
	cr_assert_eq(t_lhsim(&want, NULL, "run", hlo_path, "--json", NULL), 0);
	cr_assert_eq(t_lhsim_io(hlo, NULL, &out, &err, "run", "-", "--json", NULL), 0, "%s", err);
	cr_assert_eq(makespan_of(out), makespan_of(want));
	g_clear_pointer(&out, g_free);
	g_clear_pointer(&err, g_free);
	/* compare and sweep read it too (before, all three ran the default workload). */
	cr_assert_eq(
	    t_lhsim_io(small_json, NULL, &out, &err, "compare", "-", "--sched", "serial", NULL), 0,
	    "%s", err);
	cr_assert(g_str_has_prefix(out, "small (4 ops)"), "%s", out);
	g_clear_pointer(&out, g_free);
	g_clear_pointer(&err, g_free);
	cr_assert_eq(t_lhsim_io(small_json, NULL, &out, &err, "sweep", "-", "-p",
	                        "async-compute-limit=1,2", NULL),
	             0, "%s", err);
	cr_assert(g_str_has_prefix(out, "small (4 ops)"), "%s", out);
	g_clear_pointer(&out, g_free);
	g_clear_pointer(&err, g_free);
	/* One reader of stdin. */
	cr_assert_eq(t_lhsim_io(small_json, NULL, &out, &err, "run", "-", "--plan", "-", NULL), 2);
	cr_assert(strstr(err, "cannot both be standard input"), "%s", err);
	g_clear_pointer(&out, g_free);
	g_clear_pointer(&err, g_free);
	/* An empty name is an error, not the default workload. */
	const char *subs[] = {"run", "compare", "sweep"};
	for (gsize i = 0; i < G_N_ELEMENTS(subs); i++) {
		int st = !strcmp(subs[i], "run")
		             ? t_lhsim_io(NULL, NULL, &out, &err, "run", "", NULL)
		         : !strcmp(subs[i], "compare")
		             ? t_lhsim_io(NULL, NULL, &out, &err, "compare", "", "--sched",
		                          "serial", NULL)
		             : t_lhsim_io(NULL, NULL, &out, &err, "sweep", "", "-p",
		                          "async-compute-limit=1,2", NULL);
		cr_assert_eq(st, 2, "%s: %s", subs[i], err);
		cr_assert(strstr(err, "empty file name"), "%s: %s", subs[i], err);
		cr_assert_str_empty(out);
		g_clear_pointer(&out, g_free);
		g_clear_pointer(&err, g_free);
	}
}

Test(io, odd_paths_are_clear_errors)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g = write_tmp(dir, "g.json", small_json);
	g_autofree char *err = NULL;
	/* Inputs: bad input (2), named. */
	cr_assert_eq(t_lhsim(NULL, &err, "run", dir, NULL), 2);
	cr_assert(strstr(err, dir) && strstr(err, "is a directory"), "%s", err);
	g_free(err);
	err = NULL;
	cr_assert_eq(t_lhsim(NULL, &err, "run", g, "--plan", dir, NULL), 2);
	cr_assert(strstr(err, "is a directory"), "%s", err);
	g_free(err);
	err = NULL;
	cr_assert_eq(t_lhsim(NULL, &err, "run", g, "--hw", dir, NULL), 2);
	cr_assert(strstr(err, "is a directory"), "%s", err);
	g_free(err);
	err = NULL;
	/* Outputs: an I/O failure (1), named, before the work. */
	const char *opts[] = {"--trace", "--save-plan"};
	for (gsize i = 0; i < G_N_ELEMENTS(opts); i++) {
		g_autofree char *out = NULL;
		cr_assert_eq(t_lhsim(&out, &err, "run", g, opts[i], dir, NULL), 1, "%s", err);
		cr_assert(strstr(err, "is a directory"), "%s", err);
		cr_assert_str_empty(out);
		g_free(err);
		err = NULL;
	}
	/* An empty output name is bad input (2), not an I/O failure. */
	const char *named[] = {"--trace", "--save-plan", "-o"};
	for (gsize i = 0; i < G_N_ELEMENTS(named); i++) {
		cr_assert_eq(t_lhsim(NULL, &err, "run", g, named[i], "", NULL), 2, "%s: %s",
		             named[i], err);
		g_free(err);
		err = NULL;
	}
	cr_assert_eq(dir_entries(dir), 1);
}

Test(io, replaced_file_keeps_its_mode)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *p = write_tmp(dir, "p.plan", "old");
	cr_assert_eq(g_chmod(p, 0640), 0);
	cr_assert_eq(t_lhsim(NULL, NULL, "run", "--save-plan", p, NULL), 0);
	struct stat st;
	cr_assert_eq(stat(p, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0640, "mode %o", st.st_mode & 0777);
}

/* A file-size limit of 4 kB: writes beyond it fail with EFBIG (SIGXFSZ ignored) ... */
static void limit_fsize_ignore(gpointer data)
{
	(void)data;
	struct rlimit r = {4096, 4096};
	setrlimit(RLIMIT_FSIZE, &r);
	signal(SIGXFSZ, SIG_IGN);
}

/* ... or kill the writer with SIGXFSZ (no core file). */
static void limit_fsize_kill(gpointer data)
{
	(void)data;
	struct rlimit r = {4096, 4096}, core = {0, 0};
	setrlimit(RLIMIT_FSIZE, &r);
	setrlimit(RLIMIT_CORE, &core);
	signal(SIGXFSZ, SIG_DFL);
}

Test(io, failed_write_exits_1_and_leaves_nothing)
{
	/* The default workload's trace is far over 4 kB. */
	g_autofree char *dir = t_tmpdir();
	g_autofree char *t = g_build_filename(dir, "t.json", NULL);
	g_autofree char *s = g_build_filename(dir, "t.svg", NULL);
	g_autofree char *out = NULL, *err = NULL;
	cr_assert_eq(t_lhsim_io(NULL, limit_fsize_ignore, &out, &err, "run", "--trace", t, NULL), 1,
	             "%s", err);
	cr_assert(strstr(err, t) && strstr(err, g_strerror(EFBIG)), "%s", err);
	g_clear_pointer(&out, g_free);
	g_clear_pointer(&err, g_free);
	cr_assert_eq(t_lhsim_io(NULL, limit_fsize_ignore, &out, &err, "run", "-o", s, NULL), 1,
	             "%s", err);
	cr_assert(strstr(err, s) && strstr(err, g_strerror(EFBIG)), "%s", err);
	cr_assert_eq(dir_entries(dir), 0);
}

Test(io, killed_writer_leaves_no_temporary)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *s = g_build_filename(dir, "x.svg", NULL);
	g_autofree char *out = NULL, *err = NULL;
	int st = t_lhsim_io(NULL, limit_fsize_kill, &out, &err, "run", "-o", s, NULL);
	cr_assert_eq(st, 128 + SIGXFSZ, "status %d: %s", st, err);
	cr_assert_eq(dir_entries(dir), 0, "a temporary file was left behind");
}

Test(io, output_registry_and_discard)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *path = g_build_filename(dir, "a.txt", NULL);
	GError *e = NULL;
	/* Discarded: neither the file nor a temporary. */
	LhOutput *o = lh_output_open(path, &e);
	cr_assert(o, "%s", e ? e->message : "");
	cr_assert(lh_output_write(o, "abc", 3));
	cr_assert_eq(dir_entries(dir), 1); /* the temporary */
	cr_assert_not(lh_output_close(o, FALSE, &e));
	cr_assert_null(e);
	cr_assert_eq(dir_entries(dir), 0);
	/* What a signal handler calls removes the temporary of an output being written; the
	 * output then cannot be committed, and says so. */
	o = lh_output_open(path, &e);
	cr_assert(o);
	lh_output_write(o, "abc", 3);
	lh_output_remove_temporaries();
	cr_assert_eq(dir_entries(dir), 0);
	cr_assert_not(lh_output_close(o, TRUE, &e));
	cr_assert(g_error_matches(e, LH_IO_ERROR, LH_IO_ERROR_WRITE) && strstr(e->message, path),
	          "%s", e ? e->message : "");
	g_clear_error(&e);
	/* Committed: the bytes, and nothing else. */
	o = lh_output_open(path, &e);
	lh_output_write(o, "abc", 3);
	cr_assert(lh_output_close(o, TRUE, &e), "%s", e ? e->message : "");
	g_autofree char *text = slurp(path);
	cr_assert_str_eq(text, "abc");
	cr_assert_eq(dir_entries(dir), 1);
	/* Checks make nothing. */
	cr_assert(lh_output_check(path, &e));
	cr_assert(lh_output_check("-", &e));
	cr_assert_not(lh_output_check(dir, &e));
	cr_assert(g_error_matches(e, LH_IO_ERROR, LH_IO_ERROR_WRITE));
	g_clear_error(&e);
	cr_assert_not(lh_output_check("", &e));
	cr_assert(g_error_matches(e, LH_IO_ERROR, LH_IO_ERROR_NAME));
	g_clear_error(&e);
	cr_assert_eq(dir_entries(dir), 1);
}

/* @read (lh_read_bytes or lh_file_bytes) of @podd (@odd bytes, not whole pages: mapped) and
 * @peven (@even bytes, whole pages: read): the first @odd and @even bytes of @text, a '\0'
 * after them, and a mapping only while the first's bytes live. */
static void expect_mapped_or_read(GBytes *(*read)(const char *, GError **), const char *podd,
                                  gsize odd, const char *peven, gsize even, const char *text)
{
	GError *e = NULL;
	const char *paths[] = {podd, peven};
	const gsize sizes[] = {odd, even};
	for (int i = 0; i < 2; i++) {
		GBytes *b = read(paths[i], &e);
		cr_assert(b, "%s", e ? e->message : "");
		cr_assert_eq(lh_inputs_mapped(), i == 0 ? 1 : 0); /* whole pages are read */
		gsize n = 0;
		const char *d = g_bytes_get_data(b, &n);
		cr_assert_eq(n, sizes[i]);
		cr_assert_eq(memcmp(d, text, n), 0);
		cr_assert_eq(d[n], '\0');
		g_bytes_unref(b);
	}
	cr_assert_eq(lh_inputs_mapped(), 0);
}

/* lh_map_file maps a regular file whose size is not a multiple of the page size, and the byte
 * after its end is '\0' (mmap fills the rest of the last page with zeros); other files are left
 * to lh_read_file, whose data also ends in '\0'. lh_inputs_mapped counts live mappings. */
Test(io, inputs_are_mapped_or_read_and_end_in_nul)
{
	g_autofree char *dir = t_tmpdir();
	long page = sysconf(_SC_PAGESIZE);
	cr_assert(page > 0);
	/* page + 904 bytes (5000 with 4 KiB pages) of a repeated pattern, and exactly 2 pages. */
	gsize odd = (gsize)page + 904, even = 2 * (gsize)page;
	g_autofree char *text = g_malloc(even + 1);
	for (gsize i = 0; i < even; i++)
		text[i] = (char)('a' + i % 26);
	g_autofree char *podd = g_build_filename(dir, "odd", NULL);
	g_autofree char *peven = g_build_filename(dir, "even", NULL);
	cr_assert(g_file_set_contents(podd, text, (gssize)odd, NULL));
	cr_assert(g_file_set_contents(peven, text, (gssize)even, NULL));
	cr_assert_eq(lh_inputs_mapped(), 0);

	GBytes *m = lh_map_file(podd);
	cr_assert(m, "a regular file of %zu bytes is mapped", odd);
	cr_assert_eq(lh_inputs_mapped(), 1);
	gsize n = 0;
	const char *d = g_bytes_get_data(m, &n);
	cr_assert_eq(n, odd);
	cr_assert_eq(memcmp(d, text, odd), 0);
	cr_assert_eq(d[n], '\0');
	g_bytes_unref(m);
	cr_assert_eq(lh_inputs_mapped(), 0);

	/* Whole pages, a directory, "-", "" and a missing file are not mapped. */
	cr_assert_null(lh_map_file(peven));
	cr_assert_null(lh_map_file(dir));
	cr_assert_null(lh_map_file("-"));
	cr_assert_null(lh_map_file(""));
	g_autofree char *missing = g_build_filename(dir, "missing", NULL);
	cr_assert_null(lh_map_file(missing));
	cr_assert_eq(lh_inputs_mapped(), 0);

	/* lh_read_bytes: mapped or read, the same bytes and a '\0' after them. */
	expect_mapped_or_read(lh_read_bytes, podd, odd, peven, even, text);
	GError *e = NULL;
	/* Errors are lh_read_file's. */
	cr_assert_null(lh_read_bytes(missing, &e));
	cr_assert(g_error_matches(e, LH_IO_ERROR, LH_IO_ERROR_READ) && strstr(e->message, missing),
	          "%s", e ? e->message : "");
	g_clear_error(&e);
	cr_assert_null(lh_read_bytes(dir, &e));
	cr_assert(e && strstr(e->message, "is a directory"), "%s", e ? e->message : "");
	g_clear_error(&e);
}

/* A FIFO given as GRAPH is read to its end. lh_map_file opens regular files alone: a FIFO
 * opened and closed there could lose what its writer sent meanwhile (that race is not forced
 * here; the reading is). */
Test(io, fifo_graph_is_read_to_its_end, .timeout = 60)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *fifo = g_build_filename(dir, "g.fifo", NULL);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	pid_t w = fork();
	cr_assert(w >= 0);
	if (w == 0) {
		/* The writer: waits for lhsim to open the FIFO, writes the graph, closes it. */
		int fd = open(fifo, O_WRONLY);
		gsize len = strlen(small_json);
		_exit(fd >= 0 && write(fd, small_json, len) == (ssize_t)len && close(fd) == 0 ? 0
		                                                                              : 1);
	}
	g_autofree char *out = NULL, *err = NULL;
	int rc = t_lhsim(&out, &err, "run", fifo, "--json", NULL);
	int st = 0;
	cr_assert_eq(waitpid(w, &st, 0), w);
	cr_assert_eq(rc, 0, "%s", err);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the writer failed: status %d", st);
	/* The same makespan as from a file (42655 ns, test-cli.c). */
	cr_assert_eq(makespan_of(out), 42655);
}

/* Whether /proc/PID/maps lists a mapping of @path. */
static gboolean maps_file(pid_t pid, const char *path)
{
	char name[64];
	g_snprintf(name, sizeof name, "/proc/%d/maps", (int)pid);
	g_autofree char *maps = NULL;
	return g_file_get_contents(name, &maps, NULL, NULL) && strstr(maps, path);
}

/* A graph truncated by another process while lhsim has it mapped (docs/cli.md, Inputs): lhsim
 * says so and exits 2, with no core and no signal death. The truncation must land while the
 * graph is being parsed (about 0.2 s for these 200 000 ops): the test waits for the mapping to
 * appear in /proc/PID/maps and then truncates the file. A run whose parse ended first cannot
 * show it and is tried again, with a new file; one of 5 must. */
Test(io, input_truncated_while_mapped_is_a_clear_error, .timeout = 240)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *g = g_build_filename(dir, "big.json", NULL);
	g_autofree char *errf = g_build_filename(dir, "err", NULL);
	const char *exe = g_getenv("LHSIM");
	cr_assert(exe, "LHSIM is not set (run the tests through meson test)");
	long page = sysconf(_SC_PAGESIZE);
	int hits = 0;
	for (int attempt = 0; attempt < 5 && !hits; attempt++) {
		g_autofree char *err = NULL;
		cr_assert_eq(t_lhsim(NULL, &err, "gen", "random", "ops=200000", "width=64",
		                     "seed=1", "-o", g, NULL),
		             0, "%s", err);
		struct stat st;
		cr_assert_eq(stat(g, &st), 0);
		if (st.st_size % page == 0) { /* whole pages are read, not mapped: one byte more */
			FILE *f = fopen(g, "a");
			cr_assert(f && fputc('\n', f) == '\n' && fclose(f) == 0);
		}
		pid_t pid = fork();
		cr_assert(pid >= 0);
		if (pid == 0) {
			int e = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
			int o = open("/dev/null", O_WRONLY);
			if (e < 0 || o < 0 || dup2(e, 2) < 0 || dup2(o, 1) < 0)
				_exit(99);
			execl(exe, exe, "run", g, "--sched", "serial", (char *)NULL);
			_exit(98);
		}
		gboolean truncated = FALSE, reaped = FALSE;
		int status = 0;
		for (int i = 0; i < 200000 && !truncated; i++) { /* up to about 20 s */
			if (waitpid(pid, &status, WNOHANG) == pid) {
				reaped = TRUE; /* it ended before its graph was seen mapped */
				break;
			}
			if (maps_file(pid, g)) {
				cr_assert_eq(truncate(g, 0), 0);
				truncated = TRUE;
			} else
				g_usleep(100);
		}
		if (!reaped)
			cr_assert_eq(waitpid(pid, &status, 0), pid);
		g_autofree char *msg = slurp(errf);
		cr_assert(WIFEXITED(status), "lhsim died of signal %d:\n%s", WTERMSIG(status), msg);
		if (WEXITSTATUS(status) == 2) {
			cr_assert(truncated, "exit 2 without a truncation:\n%s", msg);
			cr_assert(strstr(msg, "shrank while it was being read"), "%s", msg);
			hits++;
		} else
			cr_assert_eq(WEXITSTATUS(status), 0, "%s", msg); /* the parse ended first */
	}
	cr_assert_eq(hits, 1, "no run was truncated while its graph was mapped");
}

/* lh_file_bytes, the library's file readers' (lh_graph_new_from_json_file and friends): mapped
 * as lh_map_file maps, else g_file_get_contents' bytes and error; "-" names a file. */
Test(io, library_file_bytes_map_or_read)
{
	g_autofree char *dir = t_tmpdir();
	long page = sysconf(_SC_PAGESIZE);
	cr_assert(page > 0);
	gsize odd = (gsize)page + 7, even = (gsize)page;
	g_autofree char *text = g_strnfill(odd, 'x');
	g_autofree char *podd = g_build_filename(dir, "odd", NULL);
	g_autofree char *peven = g_build_filename(dir, "even", NULL);
	cr_assert(g_file_set_contents(podd, text, (gssize)odd, NULL));
	cr_assert(g_file_set_contents(peven, text, (gssize)even, NULL));
	expect_mapped_or_read(lh_file_bytes, podd, odd, peven, even, text);
	GError *e = NULL;
	g_autofree char *missing = g_build_filename(dir, "missing", NULL);
	cr_assert_null(lh_file_bytes(missing, &e));
	cr_assert(g_error_matches(e, G_FILE_ERROR, G_FILE_ERROR_NOENT), "%s", e ? e->message : "");
	g_clear_error(&e);
	/* "-" is a file's name here, not standard input: none in this directory. */
	g_autofree char *cwd = g_get_current_dir();
	cr_assert_eq(chdir(dir), 0);
	cr_assert_null(lh_file_bytes("-", &e));
	cr_assert(g_error_matches(e, G_FILE_ERROR, G_FILE_ERROR_NOENT), "%s", e ? e->message : "");
	g_clear_error(&e);
	cr_assert_eq(chdir(cwd), 0);
}
