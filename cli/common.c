/* lhsim command line — shared helpers. */
#include "cli/common.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

gboolean cli_error_is_failure(const GError *e)
{
	return (e->domain == LH_ENGINE_ERROR && e->code != LH_ENGINE_ERROR_INVALID) ||
	       (e->domain == LH_SCHED_ERROR && e->code == LH_SCHED_ERROR_FAILED) ||
	       (e->domain == LH_IO_ERROR && e->code == LH_IO_ERROR_WRITE);
}

int cli_fail(GError *e)
{
	int status = cli_error_is_failure(e) ? LH_EXIT_FAILED : LH_EXIT_BAD_INPUT;
	fprintf(stderr, "lhsim: %s\n", e->message);
	g_error_free(e);
	return status;
}

int cli_usage(const char *sub, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	fprintf(stderr, "lhsim %s: %s\nTry 'lhsim %s --help'.\n", sub, msg, sub);
	return LH_EXIT_BAD_INPUT;
}

/* Standard input and output can each be claimed once per command. */
static const char *stdin_owner, *stdout_owner;

static gboolean is_stdout_path(const char *path)
{
	static const char *const std[] = {"-", "png:-", "svg:-", "pdf:-"};
	for (gsize i = 0; path && i < G_N_ELEMENTS(std); i++)
		if (!g_ascii_strcasecmp(path, std[i]))
			return TRUE;
	return FALSE;
}

static gboolean claim(const char **owner, const char *what, const char *stream, GError **error)
{
	if (*owner && strcmp(*owner, what) != 0) {
		g_set_error(error, LH_IO_ERROR, LH_IO_ERROR_READ,
		            "%s and %s cannot both be standard %s ('-')", *owner, what, stream);
		return FALSE;
	}
	*owner = what;
	return TRUE;
}

gboolean cli_claim_stdin(const char *what, const char *path, GError **error)
{
	return !lh_path_is_std(path) || claim(&stdin_owner, what, "input", error);
}

gboolean cli_claim_stdout(const char *what, const char *path, GError **error)
{
	return !is_stdout_path(path) || claim(&stdout_owner, what, "output", error);
}

FILE *cli_report_stream(void)
{
	return stdout_owner ? stderr : stdout;
}

/* HLO text starts with "HloModule" (after blank lines or comments); lhsim's JSON with '{'. */
gboolean cli_looks_like_hlo(const char *data)
{
	const char *p = data;
	for (;;) {
		while (g_ascii_isspace(*p))
			p++;
		if (p[0] == '/' && p[1] == '/') {
			p = strchr(p, '\n');
			if (!p)
				return FALSE;
			continue;
		}
		return g_str_has_prefix(p, "HloModule");
	}
}

LhGraph *cli_load_graph(const char *path, GError **error)
{
	if (!path)
		return lh_default_workload();
	if (!cli_claim_stdin("GRAPH", path, error))
		return NULL;
	if (g_str_has_suffix(path, ".stg"))
		return lh_graph_load(path, error); /* says how to import it */
	/* Mapped, not copied, when it is a regular file (lh_read_bytes): 0.6 s less for a graph
	 * of 10^6 ops on the 2-core VM. */
	g_autoptr(GBytes) bytes = lh_read_bytes(path, error);
	if (!bytes)
		return NULL;
	gsize len = 0;
	const char *data = g_bytes_get_data(bytes, &len);
	gboolean std = lh_path_is_std(path);
	const char *where = std ? LH_STDIN_NAME : path;
	if (std ? cli_looks_like_hlo(data)
	        : g_str_has_suffix(path, ".hlo") || g_str_has_suffix(path, ".hlo.txt")) {
		g_autoptr(GPtrArray) warn = g_ptr_array_new_with_free_func(g_free);
		LhGraph *g = lh_hlo_import_data(data, len, where, warn, error);
		for (guint i = 0; g && i < warn->len; i++)
			g_printerr("lhsim: warning: %s\n", (char *)warn->pdata[i]);
		return g;
	}
	return lh_graph_new_from_json_data(data, (gssize)len, where, error);
}

LhHw *cli_load_hw(const char *name, GError **error)
{
	lh_models_init();
	if (name && (!*name || lh_path_is_std(name))) {
		if (!cli_claim_stdin("--hw", name, error))
			return NULL;
		g_autofree char *data = NULL;
		gsize len = 0;
		if (!lh_read_file(name, &data, &len, error))
			return NULL;
		return lh_hw_new_from_data(data, len, LH_STDIN_NAME, error);
	}
	if (name && !lh_hw_builtin_data(name) && g_file_test(name, G_FILE_TEST_IS_DIR)) {
		g_set_error(error, LH_IO_ERROR, LH_IO_ERROR_READ, "%s: is a directory, not a file",
		            name);
		return NULL;
	}
	return lh_hw_lookup(name ? name : "h100-sxm", error);
}

gboolean cli_hw_is_map(const char *spec)
{
	if (!spec || !g_ascii_isdigit(*spec))
		return FALSE;
	const char *p = spec;
	while (g_ascii_isdigit(*p))
		p++;
	if (*p == '-') {
		p++;
		if (!g_ascii_isdigit(*p))
			return FALSE;
		while (g_ascii_isdigit(*p))
			p++;
	}
	return *p == '=';
}

void cli_hw_free(CliHw *h)
{
	if (!h)
		return;
	g_free(h->label);
	g_free(h->device_hw);
	g_free(h->slow);
	g_ptr_array_unref(h->owned);
	g_free(h);
}

static gboolean hw_bad(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static gboolean hw_bad(GError **error, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error_literal(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, msg);
	return FALSE;
}

/* A device number: decimal digits only, below 2^31. */
static gboolean parse_device(const char *s, gsize len, guint32 *out)
{
	if (!len || len > 10)
		return FALSE;
	guint64 v = 0;
	for (gsize i = 0; i < len; i++) {
		if (!g_ascii_isdigit(s[i]))
			return FALSE;
		v = v * 10 + (guint64)(s[i] - '0');
	}
	if (v > G_MAXINT32)
		return FALSE;
	*out = (guint32)v;
	return TRUE;
}

/* "devices 0-3" or "a graph without placement (device 0)". */
static char *devices_desc(guint32 n, gboolean placed)
{
	if (!placed)
		return g_strdup("the graph is not placed on devices: it is one device, 0");
	return n == 1 ? g_strdup("the graph has 1 device, 0")
	              : g_strdup_printf("the graph has %u devices, 0-%u", n, n - 1);
}

static gboolean parse_hw_map(CliHw *h, const char *spec, gboolean placed, GError **error)
{
	guint32 n = h->n_devices;
	g_autofree int *from = g_new(int, n); /* the item that gave each device, or -1 */
	for (guint32 d = 0; d < n; d++)
		from[d] = -1;
	h->device_hw = g_new0(LhHw *, n);
	g_auto(GStrv) items = g_strsplit(spec, ",", -1);
	g_autoptr(GHashTable) loaded = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g_autofree char *desc = devices_desc(n, placed);
	for (int k = 0; items[k]; k++) {
		const char *it = items[k], *eq = strchr(it, '=');
		const char *dash = eq ? memchr(it, '-', (gsize)(eq - it)) : NULL;
		guint32 a, b;
		if (!eq || !eq[1] || !parse_device(it, (gsize)((dash ? dash : eq) - it), &a) ||
		    !(dash ? parse_device(dash + 1, (gsize)(eq - dash - 1), &b) : (b = a, TRUE)))
			return hw_bad(error,
			              "--hw %s: '%s' is not DEVICE=HW or FIRST-LAST=HW (device "
			              "numbers from 0, HW a built-in name or an .ini file)",
			              spec, it);
		if (b < a)
			return hw_bad(error, "--hw %s: '%s': the range ends before it starts", spec,
			              it);
		if (b >= n)
			return hw_bad(error, "--hw %s: '%s' names device %u, but %s", spec, it,
			              MAX(a, n), desc);
		LhHw *hw = g_hash_table_lookup(loaded, eq + 1);
		if (!hw) {
			GError *e = NULL;
			hw = cli_load_hw(eq + 1, &e);
			if (!hw) {
				g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
				            "--hw %s: %s", spec, e->message);
				g_error_free(e);
				return FALSE;
			}
			g_ptr_array_add(h->owned, hw);
			g_hash_table_insert(loaded, g_strdup(eq + 1), hw);
		}
		for (guint32 d = a; d <= b; d++) {
			if (from[d] >= 0)
				return hw_bad(error,
				              "--hw %s: device %u is given twice ('%s' and '%s')",
				              spec, d, items[from[d]], it);
			from[d] = k;
			h->device_hw[d] = hw;
		}
	}
	for (guint32 d = 0; d < n; d++)
		if (from[d] < 0)
			return hw_bad(
			    error,
			    "--hw %s: device %u has no hardware: the map must cover every "
			    "device once (%s)",
			    spec, d, desc);
	h->hw = h->device_hw[0];
	h->label = g_strdup(spec);
	gboolean one = TRUE;
	for (guint32 d = 1; d < n; d++)
		one = one && h->device_hw[d] == h->hw;
	if (one) { /* one description for all: as --hw NAME */
		g_clear_pointer(&h->device_hw, g_free);
		g_free(h->label);
		h->label = g_strdup(h->hw->name);
	}
	return TRUE;
}

static gboolean parse_slow(CliHw *h, char **slow, gboolean placed, GError **error)
{
	guint32 n = h->n_devices;
	h->slow = g_new(double, n);
	g_autofree gboolean *set = g_new0(gboolean, n);
	for (guint32 d = 0; d < n; d++)
		h->slow[d] = 1.0;
	g_autofree char *desc = devices_desc(n, placed);
	for (char **q = slow; *q; q++) {
		if (!**q)
			return hw_bad(error, "--slow '': give DEVICE=FACTOR (3=1.2)");
		g_auto(GStrv) items = g_strsplit(*q, ",", -1);
		for (int k = 0; items[k]; k++) {
			const char *it = items[k], *eq = strchr(it, '=');
			guint32 d;
			char *end = NULL;
			double f = eq ? g_ascii_strtod(eq + 1, &end) : 0;
			if (!eq || !parse_device(it, (gsize)(eq - it), &d) || end == eq + 1 ||
			    *end || !isfinite(f))
				return hw_bad(error,
				              "--slow %s: '%s' is not DEVICE=FACTOR (1.2: that "
				              "device's kernels take 20 %% longer)",
				              *q, it);
			if (f < 1)
				return hw_bad(error,
				              "--slow %s: factor %s is below 1 (a straggler is "
				              "slower, never faster)",
				              *q, eq + 1);
			if (f > 1e6)
				return hw_bad(error, "--slow %s: factor %s is above 1e6", *q,
				              eq + 1);
			if (d >= n)
				return hw_bad(error, "--slow %s: device %u, but %s", *q, d, desc);
			if (set[d])
				return hw_bad(error, "--slow: device %u is given twice", d);
			set[d] = TRUE;
			h->slow[d] = f;
		}
	}
	return TRUE;
}

CliHw *cli_hw_new(const char *spec, char **slow, const LhGraph *g, GError **error)
{
	g_autoptr(CliHw) h = g_new0(CliHw, 1);
	h->owned = g_ptr_array_new_with_free_func((GDestroyNotify)lh_hw_free);
	gboolean placed = g && lh_graph_placed(g);
	h->n_devices = placed ? MAX(lh_graph_devices(g), 1) : 1;
	if (cli_hw_is_map(spec)) {
		if (!parse_hw_map(h, spec, placed, error))
			return NULL;
	} else {
		h->hw = cli_load_hw(spec, error);
		if (!h->hw)
			return NULL;
		g_ptr_array_add(h->owned, h->hw);
		h->label = g_strdup(h->hw->name);
	}
	if (slow && *slow && !parse_slow(h, slow, placed, error))
		return NULL;
	return g_steal_pointer(&h);
}

void cli_hw_sim_options(const CliHw *h, LhSimOptions *o)
{
	o->device_hw = (const LhHw *const *)h->device_hw;
	o->slow = h->slow;
}

LhPlan *cli_hw_schedule(const CliHw *h, const LhScheduler *s, const LhGraph *g,
                        const char *const *kv, FILE *explain, GError **error)
{
	if (lh_graph_placed(g))
		return lh_scheduler_run_placed(s, g, h->hw, (const LhHw *const *)h->device_hw, kv,
		                               explain, error);
	return lh_scheduler_run(s, g, h->hw, kv, explain, error);
}

LhPlan *cli_load_plan(const char *path, const LhGraph *g, GError **error)
{
	if (!cli_claim_stdin("--plan", path, error))
		return NULL;
	g_autoptr(GBytes) bytes = lh_read_bytes(path, error);
	if (!bytes)
		return NULL;
	gsize len = 0;
	const char *data = g_bytes_get_data(bytes, &len);
	const char *where = lh_path_is_std(path) ? LH_STDIN_NAME : path;
	LhPlan *p = lh_plan_new_from_data(data, len, where, g, error);
	if (p)
		lh_plan_set_origin(p, "plan", where);
	return p;
}

gboolean cli_write_output(const char *what, const char *path, const char *text, GError **error)
{
	return cli_claim_stdout(what, path, error) &&
	       lh_write_file_atomic(path, text, strlen(text), error);
}

gboolean cli_load_plugins(char **paths, GError **error)
{
	for (char **p = paths; p && *p; p++)
		if (!lh_scheduler_load_plugin(*p, error))
			return FALSE;
	return TRUE;
}

gboolean cli_parse(GOptionContext *ctx, int *argc, char ***argv, int *status)
{
	g_autoptr(GError) e = NULL;
	if (!g_option_context_get_description(ctx))
		g_option_context_set_description(ctx, CLI_EXIT_HELP);
	if (!g_option_context_parse(ctx, argc, argv, &e)) {
		fprintf(stderr, "%s: %s\nTry '%s --help'.\n", (*argv)[0], e->message, (*argv)[0]);
		*status = LH_EXIT_BAD_INPUT;
		return FALSE;
	}
	return TRUE;
}

gboolean cli_apply_profile(LhGraph *g, const char *path, const LhHw *hw, GError **error)
{
	if (!path)
		return TRUE;
	g_autoptr(LhPgle) prof = lh_pgle_new_from_file(path, error);
	if (!prof)
		return FALSE;
	LhPgleReport r;
	lh_pgle_apply(g, prof, &r);
	guint32 n_run = 0;
	for (guint32 i = 0; i < lh_graph_n_ops(g); i++)
		n_run += lh_graph_op(g, i)->kind != LH_OP_INPUT;
	double share = lh_pgle_share(g, hw, &r, NULL, NULL);
	fprintf(stderr,
	        "lhsim: profile %s: %u of %u ops take their cost from it, %.1f %% of the serial "
	        "time on %s (the sum of standalone durations)",
	        path, r.n_ops, n_run, 100.0 * share, hw->name);
	if (r.n_unknown)
		fprintf(stderr, "; %u of its %u entries name nothing in the graph (first: '%s')",
		        r.n_unknown, r.n_entries, r.first_unknown);
	if (r.n_unused)
		fprintf(stderr, "; %u name%s a done, an input, or an op another entry set",
		        r.n_unused, r.n_unused == 1 ? "s" : "");
	fputc('\n', stderr);
	lh_pgle_report_clear(&r);
	return TRUE;
}

gboolean cli_stderr_is_tty(void)
{
	return isatty(2);
}

void cli_phase(guint32 n_ops, const char *what)
{
	static gboolean shown;
	if (n_ops < 20000 || !cli_stderr_is_tty())
		return;
	if (shown)
		fputs("\r\033[K", stderr);
	shown = what != NULL;
	if (what)
		fprintf(stderr, "lhsim: %s (%u ops)...", what, n_ops);
	fflush(stderr);
}

gboolean cli_has_param(const LhScheduler *s, const char *kv)
{
	gsize len = strcspn(kv, "=");
	for (const LhParamSpec *sp = s->params; sp && sp->name; sp++)
		if (strlen(sp->name) == len && strncmp(sp->name, kv, len) == 0)
			return TRUE;
	return FALSE;
}

static gboolean same_key(const char *a, const char *b)
{
	gsize la = strcspn(a, "="), lb = strcspn(b, "=");
	return la == lb && strncmp(a, b, la) == 0;
}

void cli_sched_free(CliSched *e)
{
	if (!e)
		return;
	g_free(e->label);
	g_strfreev(e->own);
	g_free(e);
}

GPtrArray *cli_sched_parse(const char *spec, GError **error)
{
	GPtrArray *list = g_ptr_array_new_with_free_func((GDestroyNotify)cli_sched_free);
	g_auto(GStrv) items = g_strsplit(spec, ",", -1);
	for (guint i = 0; items[i]; i++) {
		char *item = g_strstrip(items[i]);
		if (!*item) {
			g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_UNKNOWN,
			            "--sched '%s': entry %u is empty", spec, i + 1);
			g_ptr_array_free(list, TRUE);
			return NULL;
		}
		g_auto(GStrv) parts = g_strsplit(item, ":", -1);
		CliSched *e = g_new0(CliSched, 1);
		g_ptr_array_add(list, e);
		e->label = g_strdup(item);
		e->s = lh_scheduler_lookup(parts[0], error);
		if (!e->s) {
			g_ptr_array_free(list, TRUE);
			return NULL;
		}
		GPtrArray *own = g_ptr_array_new();
		for (guint k = 1; parts[k]; k++) {
			if (!strchr(parts[k], '=') || parts[k][0] == '=') {
				g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PARAM,
				            "--sched '%s': '%s' is not of the form NAME=VALUE",
				            item, parts[k]);
				g_ptr_array_add(own, NULL);
				g_strfreev((char **)g_ptr_array_free(own, FALSE));
				g_ptr_array_free(list, TRUE);
				return NULL;
			}
			g_ptr_array_add(own, g_strdup(parts[k]));
		}
		g_ptr_array_add(own, NULL);
		e->own = (char **)g_ptr_array_free(own, FALSE);
	}
	return list;
}

gboolean cli_sched_own(const CliSched *e, const char *key)
{
	for (char **q = e->own; q && *q; q++)
		if (same_key(*q, key))
			return TRUE;
	return FALSE;
}

char **cli_sched_params(const CliSched *e, char **params, const char *last)
{
	GPtrArray *kv = g_ptr_array_new();
	for (char **q = params; q && *q; q++)
		if (cli_has_param(e->s, *q) && !cli_sched_own(e, *q) &&
		    !(last && same_key(*q, last)))
			g_ptr_array_add(kv, g_strdup(*q));
	for (char **q = e->own; q && *q; q++)
		g_ptr_array_add(kv, g_strdup(*q));
	if (last)
		g_ptr_array_add(kv, g_strdup(last));
	g_ptr_array_add(kv, NULL);
	return (char **)g_ptr_array_free(kv, FALSE);
}

void cli_blame_scheduler(const LhScheduler *s, GError **error)
{
	if (!error || !*error || (*error)->domain != LH_PLAN_ERROR)
		return;
	const char *path = lh_scheduler_plugin_path(s);
	g_autofree char *who = path ? g_strdup_printf("plugin %s (scheduler '%s')", path, s->name)
	                            : g_strdup_printf("scheduler '%s'", s->name);
	GError *e = g_error_new(LH_SCHED_ERROR, LH_SCHED_ERROR_FAILED,
	                        "%s made an invalid plan (a bug in the scheduler, not in the "
	                        "input): %s",
	                        who, (*error)->message);
	g_error_free(*error);
	*error = e;
}

/* Appends @f as one CSV field (RFC 4180): quoted, with quotes doubled, when it holds a comma,
 * a quote or a line end. Shared by compare, validate and sweep. */
void cli_csv_field(GString *s, const char *f)
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
