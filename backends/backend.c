/* lhsim — the backend registry and what every backend shares: the plan check, the time
 * scale, the memory curve of a measured trace, and the comparison with a prediction. */
#include "backends/backend.h"
#include "backends/backend-private.h"
#include "sim/engine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The quark's name is a string with dashes, which clang-format would space. */
/* clang-format off */
G_DEFINE_QUARK(lh-backend-error-quark, lh_backend_error)
/* clang-format on */

static const LhBackend *const builtin[] = {&lh_backend_cpu, &lh_backend_cuda, NULL};

const LhBackend *const *lh_backend_list(void)
{
	return builtin;
}

const LhBackend *lh_backend_find(const char *name)
{
	g_return_val_if_fail(name != NULL, NULL);
	for (gsize i = 0; builtin[i]; i++)
		if (strcmp(builtin[i]->name, name) == 0)
			return builtin[i];
	return NULL;
}

const LhBackend *lh_backend_lookup(const char *name, GError **error)
{
	const LhBackend *b = lh_backend_find(name);
	if (b)
		return b;
	GString *known = g_string_new(NULL);
	for (gsize i = 0; builtin[i]; i++)
		g_string_append_printf(known, "%s%s", i ? ", " : "", builtin[i]->name);
	g_set_error(error, LH_BACKEND_ERROR, LH_BACKEND_ERROR_UNKNOWN,
	            "unknown backend '%s' (known: %s)", name, known->str);
	g_string_free(known, TRUE);
	return NULL;
}

void lh_replay_options_init(LhReplayOptions *o)
{
	g_return_if_fail(o != NULL);
	memset(o, 0, sizeof *o);
	o->time_scale = 0;
	o->warmup = 2;
	o->repeats = 5;
	o->device = 0;
	o->predicted = NULL;
}

/* "plan.txt:12:1" when the plan was read from text, else "plan: command 12". */
static char *cmd_pos(const LhPlan *p, guint32 c)
{
	const char *where = lh_plan_source(p) ? lh_plan_source(p) : "plan";
	if (lh_plan_cmd_line(p, c))
		return g_strdup_printf("%s:%u:1", where, lh_plan_cmd_line(p, c));
	return g_strdup_printf("%s: command %u", where, c + 1);
}

gboolean lh_backend_check_plan(const LhGraph *g, const LhPlan *plan, GError **error)
{
	g_return_val_if_fail(g && plan, FALSE);
	if (!lh_plan_validate(plan, g, NULL, error))
		return FALSE;
	guint32 n = lh_plan_n_cmds(plan);
	g_autofree guint8 *signaled = g_new0(guint8, MAX(lh_plan_n_events(plan), 1));
	g_autofree guint32 *sig_cmd = g_new0(guint32, MAX(lh_plan_n_events(plan), 1));
	for (guint32 c = 0; c < n; c++) {
		const LhCmd *cmd = lh_plan_cmd(plan, c);
		if (cmd->kind == LH_CMD_SIGNAL) {
			signaled[cmd->arg] = 1;
			sig_cmd[cmd->arg] = c;
		}
	}
	memset(signaled, 0, MAX(lh_plan_n_events(plan), 1));
	for (guint32 c = 0; c < n; c++) {
		const LhCmd *cmd = lh_plan_cmd(plan, c);
		if (cmd->kind == LH_CMD_SIGNAL) {
			signaled[cmd->arg] = 1;
		} else if (cmd->kind == LH_CMD_WAIT && !signaled[cmd->arg]) {
			/* lh_plan_validate guarantees the event is signaled somewhere. */
			guint32 sc = sig_cmd[cmd->arg];
			g_autofree char *pos = cmd_pos(plan, c);
			g_autofree char *spos = cmd_pos(plan, sc);
			g_set_error(
			    error, LH_BACKEND_ERROR, LH_BACKEND_ERROR_PLAN,
			    "%s: 'wait %s e%" G_GUINT64_FORMAT "' comes before its 'signal "
			    "%s e%" G_GUINT64_FORMAT "' (%s) in command order: on a GPU, "
			    "waiting on an event not yet recorded waits for nothing, so this "
			    "plan cannot be replayed faithfully (issue the signal first)",
			    pos, lh_plan_stream(plan, cmd->stream)->name, cmd->arg,
			    lh_plan_stream(plan, lh_plan_cmd(plan, sc)->stream)->name, cmd->arg,
			    spos);
			return FALSE;
		}
	}
	return TRUE;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double lh_replay_time_scale(const LhReplayOptions *opt, const LhGraph *g, const LhTrace *predicted)
{
	if (opt && opt->time_scale > 0)
		return opt->time_scale;
	if (!predicted)
		return 1;
	/* Sleeps must stand well above OS jitter (tens to hundreds of microseconds): aim for a
	 * median op of 5 ms, but keep the whole replay near 20 s at most. */
	guint32 n_ops = lh_graph_n_ops(g), k = 0;
	g_autofree double *d = g_new(double, MAX(n_ops, 1));
	gint64 makespan = 0;
	for (guint32 i = 0; i < n_ops && i < predicted->n_ops; i++) {
		const LhOpTiming *t = &predicted->ops[i];
		if (t->start < 0 || t->end < t->start)
			continue;
		makespan = MAX(makespan, t->end);
		if (t->end > t->start)
			d[k++] = (double)(t->end - t->start);
	}
	if (k == 0)
		return 1;
	qsort(d, k, sizeof(double), dbl_cmp);
	double scale = MAX(1.0, 5e6 / d[(k - 1) / 2]);
	if (makespan > 0 && (double)makespan * scale > 20e9)
		scale = MAX(1.0, 20e9 / (double)makespan);
	return scale;
}

/* ---- memory curve ---- */

typedef struct {
	gint64 t;
	gint32 free; /* 0 frees first at one instant (the engine's order: ends, then starts) */
	guint32 op;
	gint64 dev, host;
} MemEv;

static int memev_cmp(const void *a, const void *b)
{
	const MemEv *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->free != y->free)
		return x->free < y->free ? -1 : 1;
	return (x->op > y->op) - (x->op < y->op);
}

void lh_trace_rebuild_memory(LhTrace *t, const LhGraph *g)
{
	g_return_if_fail(t && g && t->n_ops == lh_graph_n_ops(g));
	guint32 n = t->n_ops;
	g_array_set_size(t->mem, 0);
	t->peak_device = t->peak_host = t->peak_device_t = 0;
	GArray *ev = g_array_new(FALSE, FALSE, sizeof(MemEv));
	gint64 dev = 0, host = 0;
	/* Per buffer (the op that allocated it, docs/graph-format.md "Buffers"): the last end of
	 * a consumer of any op in its alias chain, and whether every such op has consumers that
	 * all ran. An op with an alias allocates nothing. */
	g_autofree guint32 *root = g_new(guint32, n ? n : 1);
	g_autofree gint64 *last = g_new(gint64, n ? n : 1);
	g_autofree gboolean *all = g_new(gboolean, n ? n : 1);
	const guint32 *topo = lh_graph_topo(g);
	for (guint32 k = 0; k < n; k++) {
		guint32 i = topo[k];
		const LhOp *op = lh_graph_op(g, i);
		root[i] = op->alias != LH_NO_OP ? root[op->alias] : i;
		if (root[i] == i) {
			last[i] = -1;
			all[i] = TRUE;
		}
		guint32 r = root[i], ns;
		const guint32 *succ = lh_graph_succs(g, i, &ns);
		if (ns == 0)
			all[r] = FALSE; /* nobody consumes it: kept to the end */
		for (guint32 j = 0; j < ns; j++) {
			if (t->ops[succ[j]].end < 0)
				all[r] = FALSE; /* a consumer never ran */
			else
				last[r] = MAX(last[r], t->ops[succ[j]].end);
		}
	}
	for (guint32 i = 0; i < n; i++) {
		const LhOp *op = lh_graph_op(g, i);
		if (root[i] != i)
			continue;
		gint64 b = (gint64)op->out_bytes;
		gint64 dv = op->out_space == LH_SPACE_HOST ? 0 : b;
		gint64 hv = op->out_space == LH_SPACE_HOST ? b : 0;
		if (op->kind == LH_OP_INPUT) {
			dev += dv;
			host += hv;
		} else if (t->ops[i].start >= 0) {
			MemEv a = {t->ops[i].start, 1, i, dv, hv};
			g_array_append_val(ev, a);
		} else {
			continue;
		}
		if (all[i]) {
			MemEv f = {last[i], 0, i, -dv, -hv};
			g_array_append_val(ev, f);
		}
	}
	LhMemPoint p0 = {0, dev, host};
	g_array_append_val(t->mem, p0);
	t->peak_device = dev;
	t->peak_host = host;
	g_array_sort(ev, memev_cmp);
	for (guint i = 0; i < ev->len; i++) {
		const MemEv *e = &g_array_index(ev, MemEv, i);
		dev += e->dev;
		host += e->host;
		if (dev > t->peak_device) {
			t->peak_device = dev;
			t->peak_device_t = e->t;
		}
		t->peak_host = MAX(t->peak_host, host);
		LhMemPoint *last = &g_array_index(t->mem, LhMemPoint, t->mem->len - 1);
		if (last->t == e->t) {
			last->device_bytes = dev;
			last->host_bytes = host;
		} else if (last->device_bytes != dev || last->host_bytes != host) {
			LhMemPoint p = {e->t, dev, host};
			g_array_append_val(t->mem, p);
		}
	}
	g_array_unref(ev);
}

/* ---- comparison ---- */

void lh_error_summarize(const double *v, guint32 n, LhErrorSummary *out)
{
	g_return_if_fail(out != NULL);
	memset(out, 0, sizeof *out);
	out->n = n;
	if (n == 0)
		return;
	g_autofree double *a = g_new(double, n);
	for (guint32 i = 0; i < n; i++)
		a[i] = fabs(v[i]);
	qsort(a, n, sizeof(double), dbl_cmp);
	/* Nearest rank: the value at rank ceil(q * n), 1-based. */
	guint32 r50 = (guint32)ceil(0.5 * n), r90 = (guint32)ceil(0.9 * n);
	out->median = a[MAX(r50, 1) - 1];
	out->p90 = a[MAX(r90, 1) - 1];
	out->max = a[n - 1];
}

static gint64 trace_makespan(const LhTrace *t)
{
	gint64 m = 0;
	for (guint32 i = 0; i < t->n_ops; i++)
		m = MAX(m, t->ops[i].end);
	return m;
}

gboolean lh_replay_compare(const LhGraph *g, const LhTrace *pred, const LhTrace *meas,
                           double min_dur_ns, LhReplayStats *out, GError **error)
{
	g_return_val_if_fail(g && pred && meas && out, FALSE);
	memset(out, 0, sizeof *out);
	guint32 n = lh_graph_n_ops(g);
	if (pred->n_ops != n || meas->n_ops != n) {
		g_set_error(error, LH_BACKEND_ERROR, LH_BACKEND_ERROR_PLAN,
		            "cannot compare traces of %u and %u ops with graph '%s' of %u ops",
		            pred->n_ops, meas->n_ops, lh_graph_name(g), n);
		return FALSE;
	}
	out->makespan_pred = trace_makespan(pred);
	out->makespan_meas = trace_makespan(meas);
	out->makespan_err =
	    out->makespan_pred > 0
	        ? (double)(out->makespan_meas - out->makespan_pred) / (double)out->makespan_pred
	        : 0;
	out->dur_err = g_new(double, MAX(n, 1));
	out->end_err = g_new(double, MAX(n, 1));
	g_autofree double *d = g_new(double, MAX(n, 1));
	g_autofree double *e = g_new(double, MAX(n, 1));
	guint32 nd = 0, ne = 0;
	double span = MAX((double)out->makespan_pred, 1.0);
	for (guint32 i = 0; i < n; i++) {
		const LhOpTiming *p = &pred->ops[i], *m = &meas->ops[i];
		out->dur_err[i] = out->end_err[i] = NAN;
		if (p->start < 0 || p->end < 0 || m->start < 0 || m->end < 0)
			continue;
		out->n_ops++;
		double pd = (double)(p->end - p->start), md = (double)(m->end - m->start);
		if (pd > 0)
			out->dur_err[i] = (md - pd) / pd;
		out->end_err[i] = (double)(m->end - p->end) / span;
		e[ne++] = out->end_err[i];
		if (pd > 0 && pd >= min_dur_ns)
			d[nd++] = out->dur_err[i];
	}
	lh_error_summarize(d, nd, &out->dur);
	lh_error_summarize(e, ne, &out->end);
	return TRUE;
}

void lh_replay_stats_clear(LhReplayStats *s)
{
	if (!s)
		return;
	g_clear_pointer(&s->dur_err, g_free);
	g_clear_pointer(&s->end_err, g_free);
}

gboolean lh_ranking_same(const double *pred, const double *meas, guint32 n, double tie,
                         guint32 *bad_i, guint32 *bad_j)
{
	for (guint32 i = 0; i < n; i++) {
		for (guint32 j = i + 1; j < n; j++) {
			double hi = MAX(pred[i], pred[j]);
			if (fabs(pred[i] - pred[j]) <= tie * hi)
				continue;
			gboolean p_less = pred[i] < pred[j];
			gboolean m_less = meas[i] < meas[j];
			if (p_less != m_less || meas[i] == meas[j]) {
				if (bad_i)
					*bad_i = i;
				if (bad_j)
					*bad_j = j;
				return FALSE;
			}
		}
	}
	return TRUE;
}

/* ---- calibration output ---- */

char *lh_calibration_to_ini(const LhHw *hw, GHashTable *notes, const char *header)
{
	g_return_val_if_fail(hw != NULL, NULL);
	g_autofree char *body = lh_hw_to_data(hw);
	GString *s = g_string_new(NULL);
	if (header) {
		g_auto(GStrv) hl = g_strsplit(header, "\n", -1);
		for (char **l = hl; *l; l++)
			g_string_append_printf(s, "# %s\n", *l);
	}
	g_auto(GStrv) lines = g_strsplit(body, "\n", -1);
	for (char **l = lines; *l; l++) {
		if (!**l)
			continue;
		const char *eq = strchr(*l, '=');
		if (eq && notes && (*l)[0] != '[') {
			g_autofree char *key = g_strstrip(g_strndup(*l, (gsize)(eq - *l)));
			const char *note = g_hash_table_lookup(notes, key);
			if (note) {
				g_auto(GStrv) nl = g_strsplit(note, "\n", -1);
				for (char **k = nl; *k; k++)
					g_string_append_printf(s, "# %s\n", *k);
			}
		}
		g_string_append_printf(s, "%s\n", *l);
	}
	return g_string_free(s, FALSE);
}
