/* lhsim sweep — run schedulers over a grid of scheduler parameters, hardware keys, generator
 * options, graphs and seeds: table, CSV, JSON, plot; in slices (--shard) and resumable.
 *
 * The grid is the cartesian product of its axes, in a fixed order (outermost first): the
 * graphs, the generator options, the hardware keys, the schedulers, the scheduler parameters,
 * the seeds. Point i is the i-th combination in that order. Every point is planned and
 * simulated on its own in a GLib thread pool; the graphs and hardware are built once, before
 * any point runs, and shared read-only; each point's result is stored at its index, so that
 * nothing the sweep prints or writes depends on -j, on which thread finished first, on the
 * shards it was cut into, or on how often it was resumed. */
#include "cli/sweep.h"
#include "cli/sweep-grid.h"

#include <fcntl.h>
#include <glob.h>
#include <unistd.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static gpointer local_worker(gpointer data)
{
	SweepRun *r = data;
	guint i;
	while (sweep_run_take(r, &i)) {
		grid_run_point(r->grid, i, r->strict, &r->res[i]);
		sweep_run_finish(r, i);
	}
	return NULL;
}

/* What the thread that waits does now and then: progress on a terminal, and checkpoints of
 * the --resume file. */
typedef struct {
	SweepRun *run;
	const Grid *grid;
	char **header;
	char ***rows;
	const GArray *sel;
	const char *resume;
	gboolean sharded, tty;
	guint resumed;
	gint64 t0, last_save, last_show;
} Tick;

static char *csv_text(const Grid *g, char **header, char ***rows, const GArray *sel,
                      gboolean shard);

static void tick(gpointer data)
{
	Tick *t = data;
	gint64 now = g_get_monotonic_time();
	g_mutex_lock(&t->run->lock);
	guint done = t->run->done, n = t->run->n_jobs;
	if (t->tty && now - t->last_show >= G_TIME_SPAN_SECOND / 4) {
		fprintf(stderr, "\rlhsim sweep: %u/%u points, %.0f s", done + t->resumed,
		        n + t->resumed, (now - t->t0) / 1e6);
		t->last_show = now;
	}
	if (!t->resume || now - t->last_save < 5 * G_TIME_SPAN_SECOND) {
		g_mutex_unlock(&t->run->lock);
		return;
	}
	/* A checkpoint: the rows known so far, so that a killed sweep resumes. */
	for (guint k = 0; k < t->sel->len; k++) {
		guint i = g_array_index(t->sel, guint, k);
		guint c = grid_canonical(t->grid, i);
		if (!t->rows[i] && t->run->finished[c])
			t->rows[i] = grid_row(t->grid, i, &t->run->res[c]);
	}
	g_mutex_unlock(&t->run->lock);
	g_autofree char *text = csv_text(t->grid, t->header, t->rows, t->sel, t->sharded);
	GError *e = NULL;
	if (!lh_write_file_atomic(t->resume, text, strlen(text), &e)) {
		fprintf(stderr, "\nlhsim: warning: %s\n", e->message);
		g_error_free(e);
	}
	t->last_save = g_get_monotonic_time();
}

/* The CSV of the rows in @sel (point indexes, grid order) that have fields. */
static char *csv_text(const Grid *g, char **header, char ***rows, const GArray *sel, gboolean shard)
{
	GString *s = g_string_new(NULL);
	if (shard)
		g_string_append(s, "point,");
	sweep_csv_line(s, 0, 0, header);
	for (guint k = 0; k < sel->len; k++) {
		guint i = g_array_index(sel, guint, k);
		if (rows[i])
			sweep_csv_line(s, shard ? i + 1 : 0, g->n, rows[i]);
	}
	return g_string_free(s, FALSE);
}

static int parse_shard(const char *spec, guint *k, guint *n)
{
	char *end = NULL;
	guint64 a = g_ascii_strtoull(spec, &end, 10);
	if (end == spec || *end != '/')
		return cli_usage("sweep", "--shard '%s': give K/N, the K-th of N slices", spec);
	const char *t = end + 1;
	guint64 b = g_ascii_strtoull(t, &end, 10);
	if (end == t || *end || b < 1 || b > 1000000)
		return cli_usage("sweep", "--shard '%s': give K/N, the K-th of N slices (N >= 1)",
		                 spec);
	if (a < 1 || a > b)
		return cli_usage(
		    "sweep", "--shard '%s': K must be from 1 to N = %" G_GUINT64_FORMAT, spec, b);
	*k = (guint)a;
	*n = (guint)b;
	return 0;
}

/* GRAPH arguments: a name with a wildcard that names no file is expanded (sorted). */
static int expand_graphs(int argc, char **argv, GPtrArray *out)
{
	for (int a = 1; a < argc; a++) {
		const char *p = argv[a];
		if (strpbrk(p, "*?[") && !g_file_test(p, G_FILE_TEST_EXISTS)) {
			glob_t gl;
			int r = glob(p, 0, NULL, &gl);
			if (r != 0 || gl.gl_pathc == 0) {
				if (r == 0)
					globfree(&gl);
				return cli_usage("sweep", "GRAPH '%s': the pattern matches no file",
				                 p);
			}
			for (gsize k = 0; k < gl.gl_pathc; k++)
				g_ptr_array_add(out, g_strdup(gl.gl_pathv[k]));
			globfree(&gl);
		} else {
			g_ptr_array_add(out, g_strdup(p));
		}
	}
	return 0;
}

int cli_sweep(int argc, char **argv)
{
	g_autofree char *hw_name = NULL, *sched = NULL, *csv_path = NULL, *out_path = NULL,
	                *profile = NULL, *seeds = NULL, *shard = NULL, *resume = NULL,
	                *metric = NULL;
	g_auto(GStrv) params = NULL, plugins = NULL, hw_sets = NULL, gens = NULL;
	gboolean strict = FALSE, json = FALSE;
	int jobs = 0;
	GOptionEntry entries[] = {
	    {"hw", 0, 0, G_OPTION_ARG_STRING, &hw_name,
	     "hardware: a built-in name or an .ini file (default h100-sxm)", "H"},
	    {"sched", 's', 0, G_OPTION_ARG_STRING, &sched,
	     "schedulers, comma-separated (default: every scheduler that has a swept parameter)",
	     "A,B,..."},
	    {"param", 'p', 0, G_OPTION_ARG_STRING_ARRAY, &params,
	     "a scheduler parameter: NAME=FIRST:LAST[:STEP] or NAME=V1,V2,... is swept, NAME=V "
	     "fixed; repeatable (a grid)",
	     "K=V"},
	    {"hw-set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &hw_sets,
	     "a hardware key (docs/hw-format.md), swept or fixed like -p: pcie_gbs=55,64; "
	     "repeatable",
	     "KEY=V"},
	    {"gen", 0, 0, G_OPTION_ARG_STRING_ARRAY, &gens,
	     "generate the graph: a workload with options, swept or fixed like -p: "
	     "moe-offload:offload=0:2:layers=2; repeatable",
	     "W:K=V"},
	    {"seeds", 0, 0, G_OPTION_ARG_STRING, &seeds,
	     "seeds for a generated workload's or a scheduler's 'seed': FIRST:LAST or a list; the "
	     "table shows mean and spread",
	     "A:B"},
	    {"shard", 0, 0, G_OPTION_ARG_STRING, &shard,
	     "run only the K-th of N slices of the points (1 <= K <= N); merge the files with "
	     "sweep-merge",
	     "K/N"},
	    {"resume", 0, 0, G_OPTION_ARG_FILENAME, &resume,
	     "skip the points FILE already has, keep FILE up to date as points finish, leave the "
	     "whole CSV in it",
	     "FILE"},
	    {"plugin", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &plugins,
	     "load a scheduler plugin (.so), repeatable", "F.so"},
	    {"jobs", 'j', 0, G_OPTION_ARG_INT, &jobs,
	     "points run in parallel (default: the number of cores)", "N"},
	    {"csv", 0, 0, G_OPTION_ARG_FILENAME, &csv_path, "write every point as CSV", "FILE"},
	    {"json", 0, 0, G_OPTION_ARG_NONE, &json,
	     "print every point as JSON instead of the table", NULL},
	    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &out_path,
	     "plot: one swept axis, lines; two, a heat map per scheduler (.png, .svg or .pdf)",
	     "FILE"},
	    {"metric", 0, 0, G_OPTION_ARG_STRING, &metric,
	     "the heat map's metric: makespan (default), peak or exposed", "M"},
	    {"profile", 0, 0, G_OPTION_ARG_FILENAME, &profile,
	     "XLA PGLE profile (ProfiledInstructionsProto text): measured op costs replace the "
	     "model's",
	     "P.pbtxt"},
	    {"strict-memory", 0, 0, G_OPTION_ARG_NONE, &strict,
	     "a point that exceeds device memory fails", NULL},
	    {NULL, 0, 0, 0, NULL, NULL, NULL},
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("[GRAPH...]");
	g_option_context_set_summary(
	    ctx,
	    "Schedules each GRAPH (default: the built-in workload; a quoted pattern such as\n"
	    "'graphs/*.json' is expanded) with each scheduler at each point of a grid of\n"
	    "scheduler parameters (-p), hardware keys (--hw-set), generator options (--gen)\n"
	    "and seeds (--seeds), simulates every point and prints a table. A scheduler that\n"
	    "lacks a swept parameter runs once and its rows say n/a. The exit status is 1\n"
	    "when any point failed (its row says why), after the table and files are written.");
	g_option_context_add_main_entries(ctx, entries, NULL);
	int status;
	if (!cli_parse(ctx, &argc, &argv, &status))
		return status;
	if (jobs < 0)
		return cli_usage("sweep", "-j must be at least 1 (0 means the number of cores)");
	Metric met = METRIC_MAKESPAN;
	if (metric && !grid_parse_metric(metric, &met))
		return cli_usage("sweep", "--metric '%s': one of makespan, peak, exposed", metric);
	guint shard_k = 1, shard_n = 1;
	if (shard && (status = parse_shard(shard, &shard_k, &shard_n)))
		return status;
	gboolean sharded = shard != NULL;
	if (sharded && out_path)
		return cli_usage("sweep", "--shard writes rows only: draw the merged sweep instead "
		                          "(-o needs every point)");
	if (json && csv_path && lh_path_is_std(csv_path))
		return cli_usage("sweep", "--json prints on standard output: give --csv a file");
	if (json && out_path && (!strcmp(out_path, "-") || g_str_has_suffix(out_path, ":-")))
		return cli_usage("sweep", "--json prints on standard output: give -o a file");
	if (gens && argc > 1)
		return cli_usage("sweep", "give either GRAPH files or --gen, not both");
	g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(g_free);
	if ((status = expand_graphs(argc, argv, files)))
		return status;

	/* Under mpirun every rank gets here with the same arguments and builds the same grid;
	 * only rank 0 speaks, reads and writes files. */
	guint mpi_rank = sweep_mpi_rank();
	gboolean mpi = sweep_mpi_size() > 1;
	if (mpi && mpi_rank > 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, 2);
			close(null);
		}
	}
	if (mpi && !sweep_mpi_built())
		return sweep_mpi_init(); /* says how to build it, exits 2 */
	GError *e = NULL;
	if (!cli_load_plugins(plugins, &e))
		return cli_fail(e);
	GridSpec spec = {.files = files,
	                 .params = params,
	                 .hw_sets = hw_sets,
	                 .gens = gens,
	                 .seeds = seeds,
	                 .sched = sched,
	                 .hw_name = hw_name,
	                 .profile = profile};
	g_autoptr(Grid) grid = NULL;
	if ((status = grid_new(&spec, &grid)))
		return status;
	if (out_path && (status = grid_check_plot(grid)))
		return status;
	if (mpi && mpi_rank > 0) {
		if ((status = sweep_mpi_init()))
			return status;
		status = sweep_mpi_work(grid, strict);
		sweep_mpi_finalize();
		return status;
	}

	/* Unwritable outputs fail now, not after every point has run. */
	if (!cli_claim_stdout("--csv", csv_path, &e) || !cli_claim_stdout("--output", out_path, &e))
		return cli_fail(e);
	if (out_path && !lh_viz_check_path(out_path, &e))
		return cli_fail(e);
	if (csv_path && !lh_output_check(csv_path, &e))
		return cli_fail(e);
	if (resume && lh_path_is_std(resume))
		return cli_usage("sweep", "--resume needs a file, not standard input or output");
	if (resume && !lh_output_check(resume, &e))
		return cli_fail(e);

	guint n = grid->n;
	g_auto(GStrv) header = grid_header(grid);
	g_autofree char ***rows = g_new0(char **, n); /* by point: its fields once known */
	g_autoptr(GArray) sel = g_array_new(FALSE, FALSE, sizeof(guint)); /* this shard's points */
	for (guint i = shard_k - 1; i < n; i += shard_n)
		g_array_append_val(sel, i);
	int rc = 0;
	guint resumed = 0;
	if (resume && (rc = grid_resume(grid, resume, header, sel, rows, &resumed))) {
		for (guint i = 0; i < n; i++)
			g_strfreev(rows[i]);
		return rc;
	}

	/* The jobs: the point each selected row takes its numbers from, once each. */
	g_autofree Result *res = g_new0(Result, n);
	g_autofree gboolean *finished = g_new0(gboolean, n);
	g_autofree gboolean *queued = g_new0(gboolean, n);
	g_autoptr(GArray) jobs_a = g_array_new(FALSE, FALSE, sizeof(guint));
	for (guint k = 0; k < sel->len; k++) {
		guint i = g_array_index(sel, guint, k);
		guint c = grid_canonical(grid, i);
		if (!rows[i] && !queued[c]) {
			queued[c] = TRUE;
			g_array_append_val(jobs_a, c);
		}
	}
	if (mpi && (rc = sweep_mpi_init())) {
		for (guint i = 0; i < n; i++)
			g_strfreev(rows[i]);
		return rc;
	}
	SweepRun run = {.grid = grid,
	                .strict = strict,
	                .res = res,
	                .finished = finished,
	                .jobs = (const guint *)jobs_a->data,
	                .n_jobs = jobs_a->len};
	g_mutex_init(&run.lock);
	g_cond_init(&run.cond);
	Tick tk = {.run = &run,
	           .grid = grid,
	           .header = header,
	           .rows = rows,
	           .sel = sel,
	           .resume = resume,
	           .sharded = sharded,
	           .tty = cli_stderr_is_tty(),
	           .resumed = resumed,
	           .t0 = g_get_monotonic_time()};
	tk.last_save = tk.t0;
	if (mpi) {
		/* Rank 0 runs points on one thread of its own while it serves the other ranks. */
		GThread *th = g_thread_new("sweep", local_worker, &run);
		rc = sweep_mpi_serve(&run, tick, &tk);
		g_thread_join(th);
		sweep_mpi_finalize();
	} else if (run.n_jobs) {
		guint threads = jobs > 0 ? (guint)jobs : MAX(g_get_num_processors(), 1u);
		threads = MIN(threads, run.n_jobs);
		GThread **th = g_new(GThread *, threads);
		for (guint t = 0; t < threads; t++)
			th[t] = g_thread_new("sweep", local_worker, &run);
		g_mutex_lock(&run.lock);
		while (run.done < run.n_jobs) {
			g_mutex_unlock(&run.lock);
			tick(&tk);
			g_mutex_lock(&run.lock);
			if (run.done < run.n_jobs)
				g_cond_wait_until(&run.cond, &run.lock,
				                  g_get_monotonic_time() + G_TIME_SPAN_SECOND / 4);
		}
		g_mutex_unlock(&run.lock);
		for (guint t = 0; t < threads; t++)
			g_thread_join(th[t]);
		g_free(th);
	}
	if (tk.tty && run.n_jobs)
		fprintf(stderr, "\r\033[K");
	for (guint k = 0; k < sel->len; k++) {
		guint i = g_array_index(sel, guint, k);
		if (!rows[i])
			rows[i] = grid_row(grid, i, &res[grid_canonical(grid, i)]);
	}

	guint failed = grid_report(grid, header, rows, sel, json ? NULL : cli_report_stream());
	g_autofree char *text = csv_text(grid, header, rows, sel, sharded);
	if (resume && !lh_write_file_atomic(resume, text, strlen(text), &e))
		rc = cli_fail(e);
	if (!rc && csv_path && (!resume || strcmp(csv_path, resume) != 0) &&
	    !lh_write_file_atomic(csv_path, text, strlen(text), &e))
		rc = cli_fail(e);
	if (!rc && json) {
		g_autoptr(GPtrArray) rs = g_ptr_array_new();
		g_autofree guint *pts = g_new0(guint, MAX(sel->len, 1));
		for (guint k = 0; k < sel->len; k++) {
			guint i = g_array_index(sel, guint, k);
			g_ptr_array_add(rs, rows[i]);
			pts[k] = i + 1;
		}
		g_autofree char *j = sweep_json_text(header, rs, sharded ? pts : NULL, n);
		fputs(j, stdout);
	}
	if (!rc && out_path)
		rc = grid_plot(grid, header, rows, out_path, met);
	for (guint i = 0; i < n; i++)
		g_free(res[i].error);
	g_mutex_clear(&run.lock);
	g_cond_clear(&run.cond);
	if (!rc && failed)
		rc = LH_EXIT_FAILED;
	for (guint i = 0; i < n; i++)
		g_strfreev(rows[i]);
	return rc;
}
