/* lhsim sweep — run schedulers over the values of one parameter: table, CSV, plot.
 *
 * Every point (scheduler x value) is planned and simulated on its own in a GLib thread pool.
 * The graph and hardware are shared read-only; each point builds its own parameters, plan,
 * trace and metrics, and its result is stored at its index, so nothing the sweep prints or
 * writes depends on -j or on which thread finished first. */
#include "cli/common.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAX_POINTS 10000

typedef struct {
	const LhScheduler *s;
	const char *label; /* the --sched entry: "iree:favor=max-concurrency" */
	char **kv;       /* NULL-terminated "name=value": the fixed -p it has, its own values,
			    then the swept one when it has that */
	guint sched, value;
	gboolean run;    /* FALSE: the scheduler lacks the swept parameter; copies point same_as */
	gboolean has_param; /* the scheduler has the swept parameter */
	guint same_as;
	/* Results, written by the worker that ran the point. */
	gboolean ok, over_memory;
	char *error;
	gint64 makespan, peak_device, exposed;
	double bound, ratio, overlap;
} Point;

typedef struct {
	const LhGraph *g;
	const LhHw *hw;
	gboolean strict;
	GMutex lock;
	GCond cond;
	guint done;
} Ctx;

static void run_point(gpointer data, gpointer user)
{
	Point *pt = data;
	Ctx *c = user;
	GError *e = NULL;
	LhPlan *plan = lh_scheduler_run(pt->s, c->g, c->hw, (const char *const *)pt->kv, NULL, &e);
	if (plan && lh_plan_validate(plan, c->g, NULL, &e)) {
		LhSimOptions opt = {.strict_memory = c->strict, .skip_validate = TRUE};
		LhTrace *tr = lh_simulate(c->g, c->hw, plan, &opt, &pt->over_memory, &e);
		if (tr) {
			LhMetrics m;
			lh_metrics_compute(tr, c->g, c->hw, plan, &m);
			pt->ok = TRUE;
			pt->makespan = m.makespan;
			pt->peak_device = m.peak_device;
			pt->exposed = m.exposed_transfer;
			pt->bound = m.bounds.bound;
			pt->ratio = m.ratio;
			pt->overlap = m.overlap;
			lh_metrics_clear(&m);
			lh_trace_free(tr);
		}
	}
	if (plan && !pt->ok)
		cli_blame_scheduler(pt->s, &e);
	if (!pt->ok)
		pt->error = g_strdup(e ? e->message : "the run failed and gave no reason");
	g_clear_error(&e);
	lh_plan_free(plan);
	g_mutex_lock(&c->lock);
	c->done++;
	g_cond_signal(&c->cond);
	g_mutex_unlock(&c->lock);
}

static gboolean parse_number(const char *s, double *out)
{
	char *end = NULL;
	g_autofree char *t = g_strstrip(g_strdup(s));
	if (!*t)
		return FALSE;
	*out = g_ascii_strtod(t, &end);
	return *end == '\0' && isfinite(*out);
}

static gboolean integral(double v)
{
	return v == floor(v) && fabs(v) < 9007199254740992.0; /* 2^53 */
}

static GPtrArray *fail(GPtrArray *vals)
{
	g_ptr_array_free(vals, TRUE);
	return NULL;
}

/* "a:b[:step]" or "v1,v2,...": the values as text, in the order given. */
static GPtrArray *parse_values(const char *name, const char *spec, GError **error)
{
	GPtrArray *vals = g_ptr_array_new_with_free_func(g_free);
	if (strchr(spec, ':')) {
		g_auto(GStrv) f = g_strsplit(spec, ":", -1);
		guint nf = g_strv_length(f);
		double a, b, step = 1;
		if (nf < 2 || nf > 3 || !parse_number(f[0], &a) || !parse_number(f[1], &b) ||
		    (nf == 3 && !parse_number(f[2], &step))) {
			g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PARAM,
				    "-p %s=%s: a range is FIRST:LAST or FIRST:LAST:STEP, in numbers",
				    name, spec);
			return fail(vals);
		}
		if (step <= 0 || b < a) {
			g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PARAM,
				    "-p %s=%s: the range must go up (FIRST <= LAST) with a positive "
				    "STEP",
				    name, spec);
			return fail(vals);
		}
		double count = floor((b - a) / step + 1e-9) + 1;
		if (count > MAX_POINTS) {
			g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PARAM,
				    "-p %s=%s: %.0f values; a sweep takes at most %d", name, spec,
				    count, MAX_POINTS);
			return fail(vals);
		}
		gboolean ints = integral(a) && integral(b) && integral(step);
		for (guint i = 0; i < (guint)count; i++) {
			double v = a + (double)i * step;
			if (ints) {
				g_ptr_array_add(vals, g_strdup_printf("%" G_GINT64_FORMAT, (gint64)v));
			} else {
				char buf[G_ASCII_DTOSTR_BUF_SIZE];
				/* 12 digits drop the residue of a + i * step (0.30000000000000004). */
				g_ascii_formatd(buf, sizeof buf, "%.12g", v);
				g_ptr_array_add(vals, g_strdup(buf));
			}
		}
		return vals;
	}
	g_auto(GStrv) items = g_strsplit(spec, ",", -1);
	for (guint i = 0; items[i]; i++) {
		char *v = g_strstrip(items[i]);
		if (!*v) {
			g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PARAM,
				    "-p %s=%s: value %u of the list is empty", name, spec, i + 1);
			return fail(vals);
		}
		for (guint k = 0; k < vals->len; k++)
			if (!strcmp(g_ptr_array_index(vals, k), v)) {
				g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PARAM,
					    "-p %s=%s: value '%s' is listed twice", name, spec, v);
				return fail(vals);
			}
		g_ptr_array_add(vals, g_strdup(v));
	}
	return vals;
}

static gsize key_len(const char *kv)
{
	const char *eq = strchr(kv, '=');
	return eq ? (gsize)(eq - kv) : strlen(kv);
}

static void csv_field(GString *s, const char *f)
{
	if (!strpbrk(f, ",\"\n\r")) {
		g_string_append(s, f);
		return;
	}
	g_string_append_c(s, '"');
	for (const char *p = f; *p; p++) {
		if (*p == '"')
			g_string_append_c(s, '"');
		g_string_append_c(s, *p);
	}
	g_string_append_c(s, '"');
}

/* One row per point. A scheduler without the swept parameter ran once: its rows say "n/a"
 * with the reason, and carry that one run's numbers, the same on every row. */
static char *csv_text(const Point *pts, guint n, const char *graph, const char *hw,
		      const char *param, GPtrArray *values)
{
	GString *s = g_string_new("graph,hw,scheduler,");
	csv_field(s, param);
	g_string_append(s, ",status,makespan_ns,lower_bound_ns,ratio,peak_device_bytes,"
			   "exposed_transfer_ns,overlap,error\n");
	for (guint i = 0; i < n; i++) {
		const Point *p = &pts[i];
		csv_field(s, graph);
		g_string_append_c(s, ',');
		csv_field(s, hw);
		g_string_append_c(s, ',');
		csv_field(s, p->label);
		g_string_append_c(s, ',');
		csv_field(s, g_ptr_array_index(values, p->value));
		gboolean na = !p->has_param;
		if (p->ok) {
			g_string_append_printf(s,
					       ",%s,%" G_GINT64_FORMAT ",%.3f,%.6f,%" G_GINT64_FORMAT
					       ",%" G_GINT64_FORMAT ",%.6f,",
					       na ? "n/a" : p->over_memory ? "over-memory" : "ok",
					       p->makespan, p->bound, p->ratio, p->peak_device,
					       p->exposed, p->overlap);
			if (na) {
				g_autofree char *why = g_strdup_printf(
					"%s has no parameter '%s' (one run repeated for every value)%s",
					p->s->name, param, p->over_memory ? " (over memory)" : "");
				csv_field(s, why);
			}
			g_string_append_c(s, '\n');
		} else {
			g_string_append(s, ",failed,,,,,,,");
			csv_field(s, p->error);
			g_string_append_c(s, '\n');
		}
	}
	return g_string_free(s, FALSE);
}

int cli_sweep(int argc, char **argv)
{
	g_autofree char *hw_name = NULL, *sched = NULL, *csv_path = NULL, *out_path = NULL,
			*profile = NULL;
	g_auto(GStrv) params = NULL, plugins = NULL;
	gboolean strict = FALSE;
	int jobs = 0;
	GOptionEntry entries[] = {
		{"hw", 0, 0, G_OPTION_ARG_STRING, &hw_name, "hardware: a built-in name or an .ini file (default h100-sxm)", "H"},
		{"sched", 's', 0, G_OPTION_ARG_STRING, &sched, "schedulers, comma-separated (default: every scheduler that has the swept parameter)", "A,B,..."},
		{"param", 'p', 0, G_OPTION_ARG_STRING_ARRAY, &params, "the swept parameter, NAME=FIRST:LAST[:STEP] or NAME=V1,V2,...; other -p K=V are fixed", "K=V"},
		{"plugin", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &plugins, "load a scheduler plugin (.so), repeatable", "F.so"},
		{"jobs", 'j', 0, G_OPTION_ARG_INT, &jobs, "points run in parallel (default: the number of cores)", "N"},
		{"csv", 0, 0, G_OPTION_ARG_FILENAME, &csv_path, "write every point as CSV", "FILE"},
		{"output", 'o', 0, G_OPTION_ARG_FILENAME, &out_path, "plot makespan and peak memory against the value (.png, .svg or .pdf)", "FILE"},
		{"profile", 0, 0, G_OPTION_ARG_FILENAME, &profile, "XLA PGLE profile (ProfiledInstructionsProto text): measured op costs replace the model's", "P.pbtxt"},
		{"strict-memory", 0, 0, G_OPTION_ARG_NONE, &strict, "a point that exceeds device memory fails", NULL},
		{NULL, 0, 0, 0, NULL, NULL, NULL},
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("[GRAPH]");
	g_option_context_set_summary(
		ctx, "Schedules GRAPH (default: the built-in workload) with each scheduler at each value\n"
		     "of one parameter, simulates every point and prints a table. A scheduler that\n"
		     "lacks the swept parameter runs once and appears as a flat line. The exit status\n"
		     "is 1 when any point failed (its row says why), after the table and files are\n"
		     "written.");
	g_option_context_add_main_entries(ctx, entries, NULL);
	int status;
	if (!cli_parse(ctx, &argc, &argv, &status))
		return status;
	if (argc > 2)
		return cli_usage("sweep", "expected at most one GRAPH, got %d", argc - 1);
	if (jobs < 0)
		return cli_usage("sweep", "-j must be at least 1 (0 means the number of cores)");

	/* The swept parameter: the one -p whose value is a range or a list. */
	const char *swept = NULL;
	for (char **q = params; q && *q; q++) {
		const char *eq = strchr(*q, '=');
		if (!eq || eq == *q)
			return cli_usage("sweep", "-p '%s' is not of the form NAME=VALUE", *q);
		if (!strpbrk(eq + 1, ":,"))
			continue;
		if (swept)
			return cli_usage("sweep", "only one parameter can be swept; got '%s' and '%s'",
					 swept, *q);
		swept = *q;
	}
	if (!swept)
		return cli_usage("sweep", "give the swept parameter as -p NAME=FIRST:LAST[:STEP] or "
					  "-p NAME=V1,V2,...");
	gsize nlen = key_len(swept);
	g_autofree char *name = g_strndup(swept, nlen);
	GError *e = NULL;
	g_autoptr(GPtrArray) values = parse_values(name, swept + nlen + 1, &e);
	if (!values)
		return cli_fail(e);

	if (!cli_load_plugins(plugins, &e))
		return cli_fail(e);
	g_autoptr(GPtrArray) scheds = NULL; /* of CliSched */
	if (sched) {
		scheds = cli_sched_parse(sched, &e);
		if (!scheds)
			return cli_fail(e);
		for (guint i = 0; i < scheds->len; i++) {
			const CliSched *en = g_ptr_array_index(scheds, i);
			if (cli_sched_own(en, name))
				return cli_usage("sweep", "--sched '%s' fixes '%s', the swept parameter",
						 en->label, name);
			for (guint k = 0; k < i; k++)
				if (!strcmp(((CliSched *)g_ptr_array_index(scheds, k))->label,
					    en->label))
					return cli_usage("sweep", "--sched lists '%s' twice",
							 en->label);
		}
	} else {
		scheds = g_ptr_array_new_with_free_func((GDestroyNotify)cli_sched_free);
		g_autofree const LhScheduler **all = lh_scheduler_list();
		for (guint i = 0; all[i]; i++)
			if (cli_has_param(all[i], name)) {
				CliSched *en = g_new0(CliSched, 1);
				en->label = g_strdup(all[i]->name);
				en->s = all[i];
				en->own = g_new0(char *, 1);
				g_ptr_array_add(scheds, en);
			}
		if (!scheds->len)
			return cli_usage("sweep", "no scheduler has parameter '%s' (see 'lhsim list')",
					 name);
	}
	for (char **q = params; q && *q; q++) {
		gboolean any = FALSE;
		for (guint i = 0; i < scheds->len; i++)
			any = any || cli_has_param(((CliSched *)g_ptr_array_index(scheds, i))->s, *q);
		if (!any)
			return cli_usage("sweep", "no listed scheduler has parameter '%.*s' (see "
						  "'lhsim list')",
					 (int)key_len(*q), *q);
	}

	/* Unwritable outputs fail now, not after every point has run. */
	if (!cli_claim_stdout("--csv", csv_path, &e) || !cli_claim_stdout("--output", out_path, &e))
		return cli_fail(e);
	if (out_path && !lh_viz_check_path(out_path, &e))
		return cli_fail(e);
	if (csv_path && !lh_output_check(csv_path, &e))
		return cli_fail(e);
	g_autoptr(LhGraph) g = cli_load_graph(argc > 1 ? argv[1] : NULL, &e);
	if (!g)
		return cli_fail(e);
	g_autoptr(LhHw) hw = cli_load_hw(hw_name, &e);
	if (!hw)
		return cli_fail(e);
	if (!cli_apply_profile(g, profile, hw, &e))
		return cli_fail(e);
	/* Without --sched, `xla` joins only when the graph has XLA's sequence to replay. */
	guint32 n_seq;
	if (!sched && scheds->len > 1 && !lh_graph_schedule(g, &n_seq))
		for (guint i = scheds->len; i-- > 0;)
			if (((CliSched *)g_ptr_array_index(scheds, i))->s == &lh_sched_xla)
				g_ptr_array_remove_index(scheds, i);

	/* The points, scheduler-major; their parameters are checked here, before anything runs,
	 * so that a value out of range is a usage error rather than a column of failures. */
	guint nv = values->len, n = scheds->len * nv;
	if (n > MAX_POINTS)
		return cli_usage("sweep", "%u points; a sweep takes at most %d", n, MAX_POINTS);
	g_autofree Point *pts = g_new0(Point, n);
	int rc = 0;
	for (guint s = 0; s < scheds->len; s++) {
		const CliSched *en = g_ptr_array_index(scheds, s);
		const LhScheduler *sc = en->s;
		gboolean has = cli_has_param(sc, name);
		if (!has && nv > 1)
			fprintf(stderr, "lhsim sweep: note: %s has no parameter '%s': it runs once and "
					"is drawn flat\n",
				sc->name, name);
		for (guint v = 0; v < nv; v++) {
			Point *p = &pts[s * nv + v];
			p->s = sc;
			p->label = en->label;
			p->sched = s;
			p->value = v;
			p->run = has || v == 0;
			p->has_param = has;
			p->same_as = has ? s * nv + v : s * nv;
			g_autofree char *last =
				has ? g_strdup_printf("%s=%s", name,
						      (char *)g_ptr_array_index(values, v))
				    : NULL;
			p->kv = cli_sched_params(en, params, last);
			if (!p->run || rc)
				continue;
			g_autoptr(LhParams) pp = lh_params_new(sc->params, (const char *const *)p->kv,
							       &e);
			if (!pp) {
				g_prefix_error(&e, "%s: ", en->label);
				rc = cli_fail(e);
			}
		}
	}

	Ctx c = {.g = g, .hw = hw, .strict = strict};
	g_mutex_init(&c.lock);
	g_cond_init(&c.cond);
	guint n_run = 0;
	for (guint i = 0; i < n; i++)
		n_run += pts[i].run;
	if (!rc) {
		guint threads = jobs > 0 ? (guint)jobs : MAX(g_get_num_processors(), 1u);
		threads = MIN(threads, MAX(n_run, 1u));
		GThreadPool *pool = g_thread_pool_new(run_point, &c, (gint)threads, FALSE, NULL);
		for (guint i = 0; i < n; i++)
			if (pts[i].run)
				g_thread_pool_push(pool, &pts[i], NULL);
		gboolean tty = cli_stderr_is_tty();
		g_mutex_lock(&c.lock);
		while (c.done < n_run) {
			if (tty)
				fprintf(stderr, "\rlhsim sweep: %u/%u points", c.done, n_run);
			g_cond_wait(&c.cond, &c.lock);
		}
		g_mutex_unlock(&c.lock);
		if (tty)
			fprintf(stderr, "\r\033[K");
		g_thread_pool_free(pool, FALSE, TRUE);
	}

	guint failed = 0, over = 0;
	/* The fixed parameters, for the titles. */
	GString *fx = g_string_new(NULL);
	for (char **q = params; q && *q; q++)
		if (*q != swept)
			g_string_append_printf(fx, "%s%s", fx->len ? " " : "", *q);
	g_autofree char *fixed = g_string_free(fx, FALSE);
	if (!rc) {
		for (guint i = 0; i < n; i++) {
			Point *p = &pts[i];
			if (!p->run) {
				const Point *q = &pts[p->same_as];
				p->ok = q->ok;
				p->over_memory = q->over_memory;
				p->error = g_strdup(q->error);
				p->makespan = q->makespan;
				p->peak_device = q->peak_device;
				p->exposed = q->exposed;
				p->bound = q->bound;
				p->ratio = q->ratio;
				p->overlap = q->overlap;
			}
			failed += !p->ok;
			over += p->ok && p->over_memory;
		}

		/* The table (on stderr when standard output takes a file). */
		FILE *rep = cli_report_stream();
		int ws = 9, wv = (int)strlen(name);
		for (guint i = 0; i < n; i++)
			ws = MAX(ws, (int)strlen(pts[i].label));
		for (guint v = 0; v < nv; v++)
			wv = MAX(wv, (int)strlen(g_ptr_array_index(values, v)));
		fprintf(rep, "%s (%u ops) on %s: %s over %u value%s%s%s\n", lh_graph_name(g),
		       lh_graph_n_ops(g), hw->name, name, nv, nv == 1 ? "" : "s", *fixed ? ", " : "",
		       fixed);
		fprintf(rep, "  %-*s  %-*s  %12s  %7s  %11s  %16s\n", ws, "scheduler", wv, name, "makespan",
		       "ratio", "peak memory", "exposed transfer");
		for (guint i = 0; i < n; i++) {
			const Point *p = &pts[i];
			const char *val = g_ptr_array_index(values, p->value);
			if (!p->ok) {
				fprintf(rep, "  %-*s  %-*s  failed: %s\n", ws, p->label, wv, val, p->error);
				continue;
			}
			g_autofree char *ms = lh_format_ns((double)p->makespan);
			g_autofree char *pk = lh_format_bytes((double)p->peak_device);
			g_autofree char *ex = lh_format_ns((double)p->exposed);
			fprintf(rep, "  %-*s  %-*s  %12s  %7.3f  %11s  %16s%s%s\n", ws, p->label, wv, val, ms,
			       p->ratio, pk, ex, p->over_memory ? "  over memory" : "",
			       p->run ? "" : "  (no such parameter: same run)");
		}
		if (over)
			fprintf(stderr, "lhsim: warning: %u point%s exceed %s's %.1f GiB of device "
					"memory (use --strict-memory to make this an error)\n",
				over, over == 1 ? "" : "s", hw->name, hw->memory_gib);
	}
	if (!rc && csv_path) {
		g_autofree char *t = csv_text(pts, n, lh_graph_name(g), hw->name, name, values);
		if (!lh_write_file_atomic(csv_path, t, strlen(t), &e))
			rc = cli_fail(e);
	}
	if (!rc && out_path) {
		g_autofree LhSweepPoint *sp = g_new0(LhSweepPoint, n);
		for (guint i = 0; i < n; i++) {
			sp[i].scheduler = pts[i].label;
			sp[i].value = g_ptr_array_index(values, pts[i].value);
			sp[i].ok = pts[i].ok;
			sp[i].makespan = pts[i].makespan;
			sp[i].peak_device = pts[i].peak_device;
			sp[i].bound = pts[i].bound;
		}
		g_autofree char *title = g_strdup_printf("%s (%u ops) on %s%s%s", lh_graph_name(g),
							 lh_graph_n_ops(g), hw->name,
							 *fixed ? ", " : "", fixed);
		if (!lh_viz_sweep(out_path, title, name, sp, n, hw->memory_gib * 1073741824.0, &e))
			rc = cli_fail(e);
	}
	for (guint i = 0; i < n; i++) {
		g_strfreev(pts[i].kv);
		g_free(pts[i].error);
	}
	g_mutex_clear(&c.lock);
	g_cond_clear(&c.cond);
	if (!rc && failed)
		rc = LH_EXIT_FAILED;
	return rc;
}
