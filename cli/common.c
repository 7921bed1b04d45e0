/* lhsim command line — shared helpers. */
#include "cli/common.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

int cli_fail(GError *e)
{
	int status = LH_EXIT_BAD_INPUT;
	if ((e->domain == LH_ENGINE_ERROR && e->code != LH_ENGINE_ERROR_INVALID) ||
	    (e->domain == LH_SCHED_ERROR && e->code == LH_SCHED_ERROR_FAILED))
		status = LH_EXIT_FAILED;
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

LhGraph *cli_load_graph(const char *path, GError **error)
{
	if (!path || !*path || g_strcmp0(path, "-") == 0)
		return lh_default_workload();
	return lh_graph_load(path, error);
}

LhHw *cli_load_hw(const char *name, GError **error)
{
	lh_models_init();
	return lh_hw_lookup(name ? name : "h100-sxm", error);
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
		fprintf(stderr, "; %u name%s a done, an input, or an op another entry set", r.n_unused,
			r.n_unused == 1 ? "s" : "");
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
