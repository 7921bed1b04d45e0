/* lhsim — matching measured events to graph ops, steps and noise bands, the comparison with a
 * prediction, the gap's attribution, and least-squares calibration (docs/measured.md). */
#include "models/fit.h"
#include "sim/cost.h"
#include "sim/topo.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *lh_match_how_name(LhMatchHow h)
{
	static const char *const n[LH_MATCH_N] = {"none", "name", "annotation", "token", "order"};
	return h < LH_MATCH_N ? n[h] : "?";
}

const char *lh_gap_name(LhGap g)
{
	static const char *const n[LH_GAP_N] = {"kernel time (cost model)",
	                                        "kernels slower under overlap",
	                                        "exposed collective",
	                                        "exposed copy",
	                                        "host issue",
	                                        "idle main stream"};
	return g < LH_GAP_N ? n[g] : "?";
}

static LhEngine op_engine(LhOpKind k)
{
	switch (k) {
	case LH_OP_INPUT:
		return LH_ENGINE_NONE;
	case LH_OP_COPY_H2D:
		return LH_ENGINE_H2D;
	case LH_OP_COPY_D2H:
		return LH_ENGINE_D2H;
	case LH_OP_KERNEL:
	case LH_OP_COPY_D2D:
		return LH_ENGINE_SM;
	default:
		return LH_ENGINE_LINK;
	}
}

/* Whether an event of kind @ek can be op kind @ok. */
static gboolean compatible(LhMeasKind ek, LhOpKind ok)
{
	switch (ek) {
	case LH_MEV_KERNEL:
		return ok == LH_OP_KERNEL || ok == LH_OP_COPY_D2D;
	case LH_MEV_H2D:
		return ok == LH_OP_COPY_H2D;
	case LH_MEV_D2H:
		return ok == LH_OP_COPY_D2H;
	case LH_MEV_D2D:
		return ok == LH_OP_COPY_D2D;
	case LH_MEV_COLLECTIVE:
		return lh_op_kind_is_collective(ok);
	default:
		return FALSE;
	}
}

/* '.' and '-' (HLO names) become '_' (kernel names cannot hold them). */
static char *normalize(const char *s)
{
	char *n = g_strdup(s);
	for (char *c = n; *c; c++)
		if (*c == '.' || *c == '-')
			*c = '_';
	return n;
}

#define AMBIGUOUS G_MAXUINT32

typedef struct {
	const LhGraph *g;
	GHashTable *exact; /* op name -> index + 1 */
	GHashTable *norm;  /* normalized op name -> index + 1, or AMBIGUOUS */
	GHashTable *cache; /* event text -> index + 1 of its token match, or AMBIGUOUS (none) */
} Names;

static guint32 lookup(GHashTable *h, const char *k)
{
	return GPOINTER_TO_UINT(g_hash_table_lookup(h, k));
}

/* The op whose normalized name is the longest token of @text: a substring bounded by the
 * ends or by characters that are not letters or digits. Ties between ops: none. */
static guint32 token_match(Names *nm, const char *text)
{
	gpointer v;
	if (g_hash_table_lookup_extended(nm->cache, text, NULL, &v))
		return GPOINTER_TO_UINT(v);
	g_autofree char *s = normalize(text);
	gsize len = strlen(s);
	guint32 best = 0;
	gsize best_len = 0;
	gboolean tie = FALSE;
	for (gsize i = 0; i < len; i++) {
		if (!g_ascii_isalnum(s[i]) || (i > 0 && g_ascii_isalnum(s[i - 1])))
			continue;
		for (gsize j = i + 1; j <= len; j++) {
			if (j < len && g_ascii_isalnum(s[j]))
				continue;
			if (!g_ascii_isalnum(s[j - 1]) || j - i < best_len)
				continue;
			char save = s[j];
			s[j] = 0;
			guint32 k = lookup(nm->norm, s + i);
			s[j] = save;
			if (!k)
				continue;
			if (j - i > best_len) {
				best = k;
				best_len = j - i;
				tie = k == AMBIGUOUS;
			} else if (k != best) {
				tie = TRUE;
			}
		}
	}
	guint32 r = tie ? AMBIGUOUS : best;
	g_hash_table_insert(nm->cache, g_strdup(text), GUINT_TO_POINTER(r));
	return r;
}

/* The op an event names, by the rules in order (docs/measured.md); LH_NO_OP when none. */
static guint32 name_match(Names *nm, const LhMeasEvent *e, LhMatchHow *how)
{
	const char *texts[2] = {e->name, e->annotation};
	for (int rule = 0; rule < 3; rule++) {
		for (int t = 0; t < 2; t++) {
			if (!texts[t])
				continue;
			if (rule == 0 && t == 1)
				continue; /* annotation exact is rule 1 */
			if (rule == 1 && t == 0)
				continue;
			guint32 k =
			    rule < 2 ? lookup(nm->exact, texts[t]) : token_match(nm, texts[t]);
			if (!k || k == AMBIGUOUS)
				continue;
			if (!compatible(e->kind, lh_graph_op(nm->g, k - 1)->kind))
				continue;
			*how = rule == 0   ? LH_MATCH_NAME
			       : rule == 1 ? LH_MATCH_ANNOTATION
			                   : LH_MATCH_TOKEN;
			return k - 1;
		}
	}
	*how = LH_MATCH_NONE;
	return LH_NO_OP;
}

void lh_match_free(LhMatch *x)
{
	if (!x)
		return;
	for (guint32 s = 0; s < x->n_steps; s++)
		lh_trace_free(x->steps[s]);
	g_free(x->steps);
	lh_trace_free(x->median);
	g_free(x->dur_med);
	g_free(x->dur_lo);
	g_free(x->dur_hi);
	g_free(x->n_seen);
	g_free(x->how);
	g_free(x->span);
	g_free(x->step_rule);
	g_free(x);
}

static int i64_cmp(const void *a, const void *b)
{
	gint64 x = *(const gint64 *)a, y = *(const gint64 *)b;
	return (x > y) - (x < y);
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Median of @n values (sorted in place): the mean of the middle two for even n. */
static gint64 median_i64(gint64 *v, guint32 n)
{
	qsort(v, n, sizeof *v, i64_cmp);
	return n % 2 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
}

typedef struct {
	gint64 start, end, issue;
	gint32 mstream; /* measured stream */
	guint8 how;
} Cell;

typedef struct {
	guint32 ev;
	gint64 t;
} EvT;

static int evt_cmp(const void *a, const void *b)
{
	const EvT *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return (x->ev > y->ev) - (x->ev < y->ev);
}

static void cell_add(Cell *c, const LhMeasEvent *e, LhMatchHow how)
{
	if (c->start < 0) {
		c->start = e->start;
		c->end = e->end;
		c->issue = e->issue;
		c->mstream = e->stream;
		c->how = (guint8)how;
		return;
	}
	c->start = MIN(c->start, e->start);
	c->end = MAX(c->end, e->end);
	if (e->issue >= 0 && (c->issue < 0 || e->issue < c->issue))
		c->issue = e->issue;
}

typedef struct {
	gint32 stream;
	guint32 plan;
	guint32 votes;
} Vote;

LhMatch *lh_match(const LhMeasured *m, const LhGraph *g, const LhPlan *plan, const LhTrace *pred,
                  const LhMatchOptions *opt, GError **error)
{
	guint32 n_ops = lh_graph_n_ops(g);
	g_return_val_if_fail(pred && pred->n_ops == n_ops, NULL);
	LhMatchOptions dflt = {NULL, -1};
	if (!opt)
		opt = &dflt;
	const GArray *evs = m->events;
	gint32 device = opt->device;
	if (device < 0)
		device = g_array_index(evs, LhMeasEvent, 0).device; /* sorted by device */

	Names nm = {g, g_hash_table_new(g_str_hash, g_str_equal),
	            g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
	            g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL)};
	guint32 ops_total = 0;
	for (guint32 i = 0; i < n_ops; i++) {
		const LhOp *op = lh_graph_op(g, i);
		if (op->kind == LH_OP_INPUT)
			continue;
		ops_total++;
		g_hash_table_insert(nm.exact, (gpointer)op->name, GUINT_TO_POINTER(i + 1));
		char *k = normalize(op->name);
		guint32 old = lookup(nm.norm, k);
		g_hash_table_insert(nm.norm, k, GUINT_TO_POINTER(old ? AMBIGUOUS : i + 1));
	}

	LhMatch *x = g_new0(LhMatch, 1);
	x->n_ops = n_ops;
	x->device = device;
	x->ops_total = ops_total;
	guint32 ne = evs->len;
	g_autofree guint32 *op_of = g_new(guint32, MAX(ne, 1));
	g_autofree guint8 *how_of = g_new0(guint8, MAX(ne, 1));
	g_autofree guint8 *use = g_new0(guint8, MAX(ne, 1));
	for (guint32 i = 0; i < ne; i++) {
		const LhMeasEvent *e = &g_array_index(evs, LhMeasEvent, i);
		op_of[i] = LH_NO_OP;
		if (e->device != device) {
			x->ev_other_device++;
			continue;
		}
		if (e->kind == LH_MEV_MEMSET) {
			x->ev_memset++;
			continue;
		}
		use[i] = 1;
		x->ev_total++;
		LhMatchHow h;
		op_of[i] = name_match(&nm, e, &h);
		how_of[i] = (guint8)h;
	}
	g_hash_table_unref(nm.exact);
	g_hash_table_unref(nm.norm);
	g_hash_table_unref(nm.cache);

	/* Steps. */
	g_autofree gint32 *step_of = g_new(gint32, MAX(ne, 1));
	guint32 n_steps = 1;
	g_autoptr(GArray) marks = g_array_new(FALSE, FALSE, sizeof(LhMeasRange));
	for (guint i = 0; i < m->ranges->len; i++) {
		const LhMeasRange *r = &g_array_index(m->ranges, LhMeasRange, i);
		gboolean hit = opt->step_pattern
		                   ? g_pattern_match_simple(opt->step_pattern, r->name)
		                   : g_pattern_match_simple("ProfilerStep#*", r->name) ||
		                         g_pattern_match_simple("Steps/*", r->name);
		if (hit)
			g_array_append_val(marks, *r);
	}
	/* Kineto writes ProfilerStep#N on the host and, as gpu_user_annotation, on the device:
	 * the device's ranges, when there are any, are the steps. */
	gboolean dev_marks = FALSE;
	for (guint i = 0; i < marks->len; i++)
		dev_marks |= g_array_index(marks, LhMeasRange, i).on_device;
	for (guint i = marks->len; dev_marks && i-- > 0;)
		if (!g_array_index(marks, LhMeasRange, i).on_device)
			g_array_remove_index(marks, i);
	if (marks->len) {
		n_steps = marks->len;
		x->step_rule = g_strdup_printf("%u ranges named '%s'", marks->len,
		                               opt->step_pattern ? opt->step_pattern
		                                                 : "ProfilerStep#*' or 'Steps/*");
		for (guint32 i = 0; i < ne; i++) {
			step_of[i] = -1;
			if (!use[i])
				continue;
			const LhMeasEvent *e = &g_array_index(evs, LhMeasEvent, i);
			for (guint s = 0; s < marks->len; s++) {
				const LhMeasRange *r = &g_array_index(marks, LhMeasRange, s);
				gint64 t = r->on_device || e->issue < 0 ? e->start : e->issue;
				if (t >= r->start && t < r->end) {
					step_of[i] = (gint32)s;
					break;
				}
			}
		}
	} else {
		/* Occurrences: k = the most common number of times an op is named. A run of
		 * name matches to one op, consecutive in start order over the device (an op that
		 * launches several kernels), counts once. */
		g_autoptr(GArray) order = g_array_new(FALSE, FALSE, sizeof(EvT));
		for (guint32 i = 0; i < ne; i++)
			if (use[i] && op_of[i] != LH_NO_OP) {
				EvT t = {i, g_array_index(evs, LhMeasEvent, i).start};
				g_array_append_val(order, t);
			}
		g_array_sort(order, evt_cmp);
		g_autofree guint32 *count = g_new0(guint32, MAX(n_ops, 1));
		guint32 prev = LH_NO_OP;
		for (guint j = 0; j < order->len; j++) {
			guint32 o = op_of[g_array_index(order, EvT, j).ev];
			if (o != prev)
				count[o]++;
			prev = o;
		}
		g_autoptr(GHashTable) freq = g_hash_table_new(g_direct_hash, g_direct_equal);
		guint32 k = 1, best = 0;
		for (guint32 i = 0; i < n_ops; i++) {
			if (!count[i])
				continue;
			guint32 f = GPOINTER_TO_UINT(
			                g_hash_table_lookup(freq, GUINT_TO_POINTER(count[i]))) +
			            1;
			g_hash_table_insert(freq, GUINT_TO_POINTER(count[i]), GUINT_TO_POINTER(f));
			if (f > best || (f == best && count[i] > k)) {
				best = f;
				k = count[i];
			}
		}
		n_steps = k;
		g_autofree gint64 *bound = g_new(gint64, k);
		for (guint32 s = 0; s < k; s++)
			bound[s] = G_MAXINT64;
		if (k > 1) {
			/* Step s starts at the earliest s-th occurrence among ops named k times. */
			g_autofree guint32 *seen = g_new0(guint32, MAX(n_ops, 1));
			prev = LH_NO_OP;
			for (guint j = 0; j < order->len; j++) {
				const EvT *t = &g_array_index(order, EvT, j);
				guint32 o = op_of[t->ev];
				if (o != prev && count[o] == k) {
					guint32 s = seen[o]++;
					bound[s] = MIN(bound[s], t->t);
				}
				prev = o;
			}
			for (guint32 s = 1; s < k; s++)
				bound[s] = MAX(bound[s], bound[s - 1]);
			x->step_rule = g_strdup_printf("%u steps: ops named %u times in the trace "
			                               "(the most common count)",
			                               k, k);
		} else {
			bound[0] = G_MININT64;
			x->step_rule =
			    g_strdup("one step: no step ranges, each op named at most once");
		}
		/* Each event in the last step starting at or before it (bounds ascend). */
		for (guint32 i = 0; i < ne; i++) {
			step_of[i] = -1;
			if (!use[i])
				continue;
			gint64 t = g_array_index(evs, LhMeasEvent, i).start;
			guint32 lo = 0, hi = k; /* first bound > t */
			while (lo < hi) {
				guint32 mid = lo + (hi - lo) / 2;
				if (bound[mid] <= t)
					lo = mid + 1;
				else
					hi = mid;
			}
			step_of[i] = (gint32)lo - 1;
		}
	}
	for (guint32 i = 0; i < ne; i++)
		if (use[i] && step_of[i] < 0) {
			x->ev_outside++;
			use[i] = 0;
		}

	/* Measured stream -> plan stream, by the votes of name matches. */
	guint32 n_pstreams = plan ? lh_plan_n_streams(plan) : 1;
	g_autoptr(GHashTable) votes =
	    g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
	g_autoptr(GArray) mstreams = g_array_new(FALSE, FALSE, sizeof(gint32));
	for (guint32 i = 0; i < ne; i++) {
		if (!use[i])
			continue;
		const LhMeasEvent *e = &g_array_index(evs, LhMeasEvent, i);
		gint64 key = e->stream;
		guint32 *v = g_hash_table_lookup(votes, &key);
		if (!v) {
			gint64 *k = g_new(gint64, 1);
			*k = key;
			v = g_new0(guint32, n_pstreams);
			g_hash_table_insert(votes, k, v);
			g_array_append_val(mstreams, e->stream);
		}
		if (op_of[i] != LH_NO_OP) {
			gint32 ps = pred->ops[op_of[i]].stream;
			if (ps >= 0 && (guint32)ps < n_pstreams)
				v[ps]++;
		}
	}
	g_autofree gint32 *map = g_new(gint32, MAX(mstreams->len, 1));
	g_autofree guint8 *taken = g_new0(guint8, n_pstreams);
	for (guint s = 0; s < mstreams->len; s++) {
		gint64 key = g_array_index(mstreams, gint32, s);
		guint32 *v = g_hash_table_lookup(votes, &key);
		map[s] = -1;
		guint32 best = 0;
		for (guint32 p = 0; p < n_pstreams; p++)
			if (v[p] > best) {
				best = v[p];
				map[s] = (gint32)p;
			}
		if (map[s] >= 0)
			taken[map[s]] = 1;
	}
	for (guint s = 0; s < mstreams->len; s++)
		if (map[s] < 0)
			for (guint32 p = 0; p < n_pstreams; p++)
				if (!taken[p]) {
					map[s] = (gint32)p;
					taken[p] = 1;
					break;
				}
	g_autoptr(GHashTable) sidx = g_hash_table_new(g_direct_hash, g_direct_equal);
	for (guint s = 0; s < mstreams->len; s++)
		g_hash_table_insert(sidx, GINT_TO_POINTER(g_array_index(mstreams, gint32, s)),
		                    GUINT_TO_POINTER(s));

	/* Plan streams' ops in predicted start order. */
	g_autoptr(GArray) porder = g_array_new(FALSE, FALSE, sizeof(EvT));
	for (guint32 i = 0; i < n_ops; i++)
		if (pred->ops[i].start >= 0 && pred->ops[i].stream >= 0) {
			EvT t = {i, pred->ops[i].start};
			g_array_append_val(porder, t);
		}
	g_array_sort(porder, evt_cmp);

	/* Cells: per step and op. */
	if ((guint64)n_steps * MAX(n_ops, 1) > (8u << 20)) {
		g_set_error(error, LH_MEASURED_ERROR, LH_MEASURED_ERROR_INVALID,
		            "%s: %u steps of a graph of %u ops is more than lhsim compares at once "
		            "(%u op-steps); %s; mark the steps with --step GLOB or trim the trace",
		            m->path, n_steps, n_ops, 8u << 20, x->step_rule);
		x->n_steps = 0;
		lh_match_free(x);
		return NULL;
	}
	Cell *cells = g_new(Cell, (gsize)n_steps * MAX(n_ops, 1));
	for (gsize c = 0; c < (gsize)n_steps * n_ops; c++) {
		Cell z = {-1, -1, -1, -1, 0};
		cells[c] = z;
	}
	for (guint32 i = 0; i < ne; i++)
		if (use[i] && op_of[i] != LH_NO_OP) {
			cell_add(&cells[(gsize)step_of[i] * n_ops + op_of[i]],
			         &g_array_index(evs, LhMeasEvent, i), (LhMatchHow)how_of[i]);
			x->by[how_of[i]]++;
		}
	/* By order: per step and measured stream, the unmatched events against the unmatched ops
	 * of its plan stream, both in time order; an event no op fits is skipped. The unmatched
	 * events are bucketed by step, each bucket in (stream, start) order, the events' own. */
	{
		g_autofree guint32 *at = g_new0(guint32, n_steps + 1);
		for (guint32 i = 0; i < ne; i++)
			if (use[i] && op_of[i] == LH_NO_OP)
				at[step_of[i] + 1]++;
		for (guint32 st = 0; st < n_steps; st++)
			at[st + 1] += at[st];
		g_autofree guint32 *fill = g_memdup2(at, sizeof(guint32) * (n_steps + 1));
		g_autofree guint32 *bucket = g_new(guint32, MAX(at[n_steps], 1));
		for (guint32 i = 0; i < ne; i++)
			if (use[i] && op_of[i] == LH_NO_OP)
				bucket[fill[step_of[i]]++] = i;
		g_autoptr(GArray) os = g_array_new(FALSE, FALSE, sizeof(guint32));
		for (guint32 st = 0; st < n_steps; st++) {
			for (guint32 r = at[st]; r < at[st + 1];) {
				gint32 ms = g_array_index(evs, LhMeasEvent, bucket[r]).stream;
				guint32 r_end = r;
				while (r_end < at[st + 1] &&
				       g_array_index(evs, LhMeasEvent, bucket[r_end]).stream == ms)
					r_end++;
				gint32 ps = map[GPOINTER_TO_UINT(
				    g_hash_table_lookup(sidx, GINT_TO_POINTER(ms)))];
				g_array_set_size(os, 0);
				for (guint j = 0; j < porder->len; j++) {
					guint32 o = g_array_index(porder, EvT, j).ev;
					/* A stream left without a plan stream takes from all. */
					if ((ps < 0 || pred->ops[o].stream == ps) &&
					    cells[(gsize)st * n_ops + o].start < 0)
						g_array_append_val(os, o);
				}
				guint k = 0;
				for (; r < r_end && k < os->len; r++) {
					const LhMeasEvent *e =
					    &g_array_index(evs, LhMeasEvent, bucket[r]);
					guint32 o = g_array_index(os, guint32, k);
					if (!compatible(e->kind, lh_graph_op(g, o)->kind))
						continue;
					cell_add(&cells[(gsize)st * n_ops + o], e, LH_MATCH_ORDER);
					x->by[LH_MATCH_ORDER]++;
					k++;
				}
				r = r_end;
			}
		}
	}
	for (int h = 1; h < LH_MATCH_N; h++)
		x->ev_matched += x->by[h];
	if (x->ev_matched == 0) {
		g_set_error(error, LH_MEASURED_ERROR, LH_MEASURED_ERROR_INVALID,
		            "%s: none of its %u events on device %d matches an op of graph '%s' by "
		            "name, annotation, token or stream order (docs/measured.md, "
		            "\"Matching\")",
		            m->path, x->ev_total, device, lh_graph_name(g));
		g_free(cells);
		x->n_steps = 0;
		lh_match_free(x);
		return NULL;
	}

	/* Step traces on the prediction's clock. */
	gint64 pfirst = G_MAXINT64;
	for (guint32 i = 0; i < n_ops; i++)
		if (pred->ops[i].start >= 0)
			pfirst = MIN(pfirst, pred->ops[i].start);
	if (pfirst == G_MAXINT64)
		pfirst = 0;
	x->n_steps = n_steps;
	x->steps = g_new0(LhTrace *, n_steps);
	x->span = g_new0(gint64, n_steps);
	for (guint32 st = 0; st < n_steps; st++) {
		LhTrace *t = lh_trace_new(n_ops, 0);
		t->measured = TRUE;
		t->source = g_strdup(m->format);
		gint64 base = G_MAXINT64, last = G_MININT64;
		for (guint32 o = 0; o < n_ops; o++) {
			const Cell *c = &cells[(gsize)st * n_ops + o];
			if (c->start >= 0) {
				base = MIN(base, c->start);
				last = MAX(last, c->end);
			}
		}
		x->span[st] = base == G_MAXINT64 ? 0 : last - base;
		for (guint32 o = 0; o < n_ops; o++) {
			const Cell *c = &cells[(gsize)st * n_ops + o];
			if (c->start < 0)
				continue;
			LhOpTiming *tm = &t->ops[o];
			tm->start = c->start - base + pfirst;
			tm->end = c->end - base + pfirst;
			tm->issue = c->issue >= 0 ? MAX(c->issue - base + pfirst, 0) : -1;
			gpointer si;
			gint32 ps = -1;
			if (g_hash_table_lookup_extended(sidx, GINT_TO_POINTER(c->mstream), NULL,
			                                 &si))
				ps = map[GPOINTER_TO_UINT(si)];
			tm->stream = ps >= 0 ? ps : pred->ops[o].stream;
			tm->engine = (guint8)op_engine(lh_graph_op(g, o)->kind);
			t->host_end = MAX(t->host_end, tm->issue);
		}
		x->steps[st] = t;
	}
	/* Medians and bands. */
	x->median = lh_trace_new(n_ops, 0);
	x->median->measured = TRUE;
	x->median->source = g_strdup(m->format);
	x->dur_med = g_new(double, MAX(n_ops, 1));
	x->dur_lo = g_new(double, MAX(n_ops, 1));
	x->dur_hi = g_new(double, MAX(n_ops, 1));
	x->n_seen = g_new0(guint32, MAX(n_ops, 1));
	x->how = g_new0(guint8, MAX(n_ops, 1));
	g_autofree gint64 *vs = g_new(gint64, n_steps), *vd = g_new(gint64, n_steps),
	                  *vi = g_new(gint64, n_steps);
	for (guint32 o = 0; o < n_ops; o++) {
		guint32 k = 0, ki = 0;
		gint32 stream = -1;
		for (guint32 st = 0; st < n_steps; st++) {
			const LhOpTiming *tm = &x->steps[st]->ops[o];
			if (tm->start < 0)
				continue;
			if (!k) {
				x->how[o] = cells[(gsize)st * n_ops + o].how;
				stream = tm->stream;
			}
			vs[k] = tm->start;
			vd[k++] = tm->end - tm->start;
			if (tm->issue >= 0)
				vi[ki++] = tm->issue;
		}
		x->n_seen[o] = k;
		if (!k) {
			x->dur_med[o] = x->dur_lo[o] = x->dur_hi[o] = NAN;
			continue;
		}
		x->ops_matched++;
		LhOpTiming *tm = &x->median->ops[o];
		gint64 d = median_i64(vd, k);
		x->dur_med[o] = (double)d;
		x->dur_lo[o] = (double)vd[0];
		x->dur_hi[o] = (double)vd[k - 1];
		tm->start = median_i64(vs, k);
		tm->end = tm->start + d;
		tm->issue = ki ? median_i64(vi, ki) : -1;
		tm->stream = stream;
		tm->engine = (guint8)op_engine(lh_graph_op(g, o)->kind);
		x->median->host_end = MAX(x->median->host_end, tm->issue);
	}
	g_free(cells);
	return x;
}

/* ---- comparison and attribution ---- */

typedef struct {
	gint64 t;
	gint32 delta;
	guint8 engine;
} Edge;

static int edge_cmp(const void *a, const void *b)
{
	const Edge *x = a, *y = b;
	return (x->t > y->t) - (x->t < y->t);
}

typedef struct {
	gint64 start, issue;
} StartIssue;

static int si_cmp(const void *a, const void *b)
{
	const StartIssue *x = a, *y = b;
	return (x->start > y->start) - (x->start < y->start);
}

/* Splits @t's device span (first start to last end) into kernel time, exposed collective,
 * exposed copy, host issue and idle (out[LH_GAP_KERNEL_MODEL] gets the kernel time; the
 * overlap part is split off by the caller). Returns the span. */
static gint64 classify(const LhTrace *t, double out[LH_GAP_N])
{
	memset(out, 0, sizeof(double) * LH_GAP_N);
	g_autoptr(GArray) e = g_array_new(FALSE, FALSE, sizeof(Edge));
	g_autoptr(GArray) si = g_array_new(FALSE, FALSE, sizeof(StartIssue));
	for (guint32 i = 0; i < t->n_ops; i++) {
		const LhOpTiming *o = &t->ops[i];
		if (o->start < 0 || o->end < o->start || o->engine == LH_ENGINE_NONE)
			continue;
		Edge a = {o->start, 1, o->engine}, b = {o->end, -1, o->engine};
		g_array_append_val(e, a);
		g_array_append_val(e, b);
		StartIssue s = {o->start, o->issue};
		g_array_append_val(si, s);
	}
	if (!e->len)
		return 0;
	g_array_sort(e, edge_cmp);
	g_array_sort(si, si_cmp);
	int depth[LH_ENGINE_N] = {0};
	gint64 first = g_array_index(e, Edge, 0).t, last = first;
	guint k = 0; /* into si */
	for (guint i = 0; i < e->len; i++) {
		const Edge *x = &g_array_index(e, Edge, i);
		gint64 dt = x->t - last;
		if (dt > 0) {
			if (depth[LH_ENGINE_SM])
				out[LH_GAP_KERNEL_MODEL] += (double)dt;
			else if (depth[LH_ENGINE_LINK])
				out[LH_GAP_COLLECTIVE] += (double)dt;
			else if (depth[LH_ENGINE_H2D] || depth[LH_ENGINE_D2H])
				out[LH_GAP_COPY] += (double)dt;
			else {
				/* Idle until x->t, where an op starts: the host's part is until the
				 * earliest issue among the ops starting then. */
				while (k < si->len && g_array_index(si, StartIssue, k).start < x->t)
					k++;
				gint64 iss = G_MAXINT64;
				gboolean known = FALSE;
				for (guint j = k;
				     j < si->len && g_array_index(si, StartIssue, j).start == x->t;
				     j++) {
					gint64 v = g_array_index(si, StartIssue, j).issue;
					if (v >= 0) {
						known = TRUE;
						iss = MIN(iss, v);
					}
				}
				double host = known ? (double)CLAMP(iss - last, 0, dt) : 0;
				out[LH_GAP_HOST] += host;
				out[LH_GAP_IDLE] += (double)dt - host;
			}
		}
		last = x->t;
		depth[x->engine] += x->delta;
	}
	return last - first;
}

/* Sum over kernels of @t that overlap any other op of (measured duration - predicted). */
static double overlap_slowdown(const LhTrace *t, const LhTrace *pred)
{
	g_autoptr(GArray) iv = g_array_new(FALSE, FALSE, sizeof(EvT));
	for (guint32 i = 0; i < t->n_ops; i++)
		if (t->ops[i].start >= 0 && t->ops[i].engine != LH_ENGINE_NONE) {
			EvT x = {i, t->ops[i].start};
			g_array_append_val(iv, x);
		}
	g_array_sort(iv, evt_cmp);
	double sum = 0;
	gint64 max_end = G_MININT64;
	for (guint j = 0; j < iv->len; j++) {
		guint32 i = g_array_index(iv, EvT, j).ev;
		const LhOpTiming *o = &t->ops[i];
		gboolean ov = o->start < max_end ||
		              (j + 1 < iv->len && g_array_index(iv, EvT, j + 1).t < o->end);
		max_end = MAX(max_end, o->end);
		if (!ov || o->engine != LH_ENGINE_SM || pred->ops[i].start < 0)
			continue;
		sum += (double)((o->end - o->start) - (pred->ops[i].end - pred->ops[i].start));
	}
	return sum;
}

static void attribution(const LhTrace *t, const LhTrace *pred, double out[LH_GAP_N])
{
	classify(t, out);
	double ov = overlap_slowdown(t, pred);
	out[LH_GAP_KERNEL_OVERLAP] = ov;
	out[LH_GAP_KERNEL_MODEL] -= ov;
}

static void summarize(const double *v, guint32 n, LhErrSummary *s)
{
	memset(s, 0, sizeof *s);
	if (!n)
		return;
	g_autofree double *a = g_new(double, n);
	for (guint32 i = 0; i < n; i++)
		a[i] = fabs(v[i]);
	qsort(a, n, sizeof *a, dbl_cmp);
	s->n = n;
	s->median = n % 2 ? a[n / 2] : (a[n / 2 - 1] + a[n / 2]) / 2;
	guint32 r = (guint32)ceil(0.9 * n);
	s->p90 = a[MAX(r, 1u) - 1];
	s->max = a[n - 1];
}

void lh_validate_measured(const LhGraph *g, const LhTrace *pred, const LhMatch *x, LhValidation *v)
{
	memset(v, 0, sizeof *v);
	guint32 n = lh_graph_n_ops(g);
	gint64 a = G_MAXINT64, b = G_MININT64;
	for (guint32 i = 0; i < n; i++)
		if (pred->ops[i].start >= 0) {
			a = MIN(a, pred->ops[i].start);
			b = MAX(b, pred->ops[i].end);
		}
	v->step_pred = a == G_MAXINT64 ? 0 : b - a;
	g_autofree gint64 *sp = g_memdup2(x->span, sizeof(gint64) * MAX(x->n_steps, 1));
	guint32 ns = x->n_steps;
	qsort(sp, ns, sizeof(gint64), i64_cmp);
	v->step_meas =
	    ns % 2 ? (double)sp[ns / 2] : ((double)sp[ns / 2 - 1] + (double)sp[ns / 2]) / 2;
	v->step_lo = (double)sp[0];
	v->step_hi = (double)sp[ns - 1];
	v->step_err =
	    v->step_pred > 0 ? (v->step_meas - (double)v->step_pred) / (double)v->step_pred : 0;
	v->step_noise = x->n_steps >= 2 && v->step_lo <= (double)v->step_pred &&
	                (double)v->step_pred <= v->step_hi;

	v->op_pred = g_new(double, MAX(n, 1));
	v->op_err = g_new(double, MAX(n, 1));
	v->op_noise = g_new0(guint8, MAX(n, 1));
	g_autofree double *errs = g_new(double, MAX(n, 1));
	guint32 k = 0;
	for (guint32 i = 0; i < n; i++) {
		const LhOpTiming *p = &pred->ops[i];
		v->op_pred[i] = p->start >= 0 ? (double)(p->end - p->start) : NAN;
		v->op_err[i] = NAN;
		if (p->start < 0 || !x->n_seen[i] || v->op_pred[i] <= 0)
			continue;
		v->op_err[i] = (x->dur_med[i] - v->op_pred[i]) / v->op_pred[i];
		v->op_noise[i] = x->n_seen[i] >= 2 && x->dur_lo[i] <= v->op_pred[i] &&
		                 v->op_pred[i] <= x->dur_hi[i];
		v->ops_noise += v->op_noise[i];
		errs[k++] = v->op_err[i];
	}
	summarize(errs, k, &v->ops);

	attribution(pred, pred, v->gap_pred);
	attribution(x->median, pred, v->gap_meas);
	for (int c = 0; c < LH_GAP_N; c++) {
		v->gap_lo[c] = INFINITY;
		v->gap_hi[c] = -INFINITY;
	}
	for (guint32 s = 0; s < x->n_steps; s++) {
		double q[LH_GAP_N];
		attribution(x->steps[s], pred, q);
		for (int c = 0; c < LH_GAP_N; c++) {
			v->gap_lo[c] = MIN(v->gap_lo[c], q[c]);
			v->gap_hi[c] = MAX(v->gap_hi[c], q[c]);
		}
	}
	for (int c = 0; c < LH_GAP_N; c++) {
		v->gap[c] = v->gap_meas[c] - v->gap_pred[c];
		v->gap_noise[c] = x->n_steps >= 2 && v->gap_lo[c] <= v->gap_pred[c] &&
		                  v->gap_pred[c] <= v->gap_hi[c];
	}
}

void lh_validation_clear(LhValidation *v)
{
	g_free(v->op_pred);
	g_free(v->op_err);
	g_free(v->op_noise);
	memset(v, 0, sizeof *v);
}

/* ---- calibration ---- */

#define MAXC 5

/* Least squares y ~ A x over the columns set in @active (at most MAXC), by the normal equations
 * on unit-norm columns with partial pivoting. FALSE when they are singular. */
static gboolean lsq(const GArray *rows, guint ncol, const gboolean *active, double *xout)
{
	/* rows: doubles, ncol + 1 per row (the columns, then y). */
	guint w = ncol + 1, nr = rows->len / w;
	const double *r = (const double *)(const void *)rows->data;
	double scale[MAXC] = {0};
	int idx[MAXC], k = 0;
	for (guint c = 0; c < ncol; c++) {
		if (!active[c])
			continue;
		double s = 0;
		for (guint i = 0; i < nr; i++)
			s += r[i * w + c] * r[i * w + c];
		if (s <= 0)
			return FALSE;
		scale[c] = sqrt(s);
		idx[k++] = (int)c;
	}
	double M[MAXC][MAXC + 1] = {{0}};
	for (int a = 0; a < k; a++) {
		for (int b = 0; b < k; b++) {
			double s = 0;
			for (guint i = 0; i < nr; i++)
				s += r[i * w + idx[a]] * r[i * w + idx[b]];
			M[a][b] = s / (scale[idx[a]] * scale[idx[b]]);
		}
		double s = 0;
		for (guint i = 0; i < nr; i++)
			s += r[i * w + idx[a]] * r[i * w + ncol];
		M[a][k] = s / scale[idx[a]];
	}
	for (int c = 0; c < k; c++) {
		int p = c;
		for (int q = c + 1; q < k; q++)
			if (fabs(M[q][c]) > fabs(M[p][c]))
				p = q;
		if (fabs(M[p][c]) < 1e-9)
			return FALSE;
		for (int q = 0; q <= k; q++) {
			double t = M[c][q];
			M[c][q] = M[p][q];
			M[p][q] = t;
		}
		for (int q = 0; q < k; q++) {
			if (q == c)
				continue;
			double f = M[q][c] / M[c][c];
			for (int z = c; z <= k; z++)
				M[q][z] -= f * M[c][z];
		}
	}
	for (int c = 0; c < k; c++)
		xout[idx[c]] = M[c][k] / M[c][c] / scale[idx[c]];
	return TRUE;
}

/* RMS of y - A x over the active columns, and that relative to the mean y. */
static void resid(const GArray *rows, guint ncol, const gboolean *active, const double *xv,
                  double *rms, double *rel)
{
	guint w = ncol + 1, nr = rows->len / w;
	const double *r = (const double *)(const void *)rows->data;
	double ss = 0, sy = 0;
	for (guint i = 0; i < nr; i++) {
		double f = 0;
		for (guint c = 0; c < ncol; c++)
			if (active[c])
				f += r[i * w + c] * xv[c];
		double y = r[i * w + ncol];
		ss += (y - f) * (y - f);
		sy += y;
	}
	*rms = nr ? sqrt(ss / nr) : 0;
	*rel = sy > 0 ? *rms / (sy / nr) : 0;
}

static LhFitKey *key_add(GArray *keys, const char *key, const char *unit, double base)
{
	LhFitKey k = {key, unit, base, base, FALSE, 0, 0, 0, NULL};
	g_array_append_val(keys, k);
	return &g_array_index(keys, LhFitKey, keys->len - 1);
}

static LhFitKey *key_get(GArray *keys, const char *key)
{
	for (guint i = 0; i < keys->len; i++)
		if (!strcmp(g_array_index(keys, LhFitKey, i).key, key))
			return &g_array_index(keys, LhFitKey, i);
	return NULL;
}

void lh_fit_keys_clear(GArray *keys)
{
	for (guint i = 0; i < keys->len; i++)
		g_free(g_array_index(keys, LhFitKey, i).note);
	g_array_set_size(keys, 0);
}

/* An observation: op @op took @y ns alone, in one file. */
typedef struct {
	guint32 op;
	double y;
} Obs;

/* Ops of @t that overlap no other op of the engines in @mask. */
static void alone(const LhTrace *t, guint mask, guint8 *out)
{
	g_autoptr(GArray) iv = g_array_new(FALSE, FALSE, sizeof(EvT));
	for (guint32 i = 0; i < t->n_ops; i++)
		if (t->ops[i].start >= 0 && (mask >> t->ops[i].engine) & 1) {
			EvT x = {i, t->ops[i].start};
			g_array_append_val(iv, x);
		}
	g_array_sort(iv, evt_cmp);
	gint64 max_end = G_MININT64;
	for (guint j = 0; j < iv->len; j++) {
		guint32 i = g_array_index(iv, EvT, j).ev;
		const LhOpTiming *o = &t->ops[i];
		gboolean ov = o->start < max_end ||
		              (j + 1 < iv->len && g_array_index(iv, EvT, j + 1).t < o->end);
		max_end = MAX(max_end, o->end);
		out[i] = !ov;
	}
}

/* Two-parameter line y = lat + bytes / gbs over @obs; sets both keys. */
static void fit_line(GArray *obs, const LhGraph *g, gboolean wire, LhFitKey *kg, LhFitKey *kl,
                     const char *what)
{
	if (!obs->len) {
		kg->note = g_strdup_printf("no %s measured alone: kept", what);
		kl->note = g_strdup_printf("no %s measured alone: kept", what);
		return;
	}
	g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(double));
	double xmin = INFINITY, xmax = -INFINITY;
	for (guint i = 0; i < obs->len; i++) {
		const Obs *o = &g_array_index(obs, Obs, i);
		const LhOp *op = lh_graph_op(g, o->op);
		double b = wire ? lh_op_wire_bytes(op) : (double)op->size;
		double row[3] = {b, 1, o->y};
		g_array_append_vals(rows, row, 3);
		xmin = MIN(xmin, b);
		xmax = MAX(xmax, b);
	}
	gboolean act[2] = {TRUE, xmax > xmin};
	double xv[2] = {0, 0};
	double lat = kl->base;
	if (!act[1]) {
		/* One size: the latency cannot be told from the bandwidth; keep the base's. */
		for (guint i = 0; i < obs->len; i++)
			g_array_index(rows, double, i * 3 + 2) -= lat;
		kl->note = g_strdup_printf(
		    "all %s move the same bytes: latency not separable, kept", what);
	}
	if (!lsq(rows, 2, act, xv) || xv[0] <= 0) {
		kg->note = g_strdup_printf("the %s fit gives no positive bandwidth: kept", what);
		if (!kl->note)
			kl->note = g_strdup(kg->note);
		return;
	}
	double rms, rel;
	resid(rows, 2, act, xv, &rms, &rel);
	kg->value = 1.0 / xv[0];
	kg->fitted = TRUE;
	kg->n = obs->len;
	kg->resid_ns = rms;
	kg->resid_rel = rel;
	if (act[1]) {
		if (xv[1] < 0) {
			kl->note =
			    g_strdup_printf("the %s fit gives a negative latency: kept", what);
		} else {
			kl->value = xv[1];
			kl->fitted = TRUE;
			kl->n = obs->len;
			kl->resid_ns = rms;
			kl->resid_rel = rel;
		}
	}
}

LhHw *lh_calibrate_from(const LhGraph *g, const LhHw *base, const LhPlan *plan, LhMatch *const *xs,
                        guint nx, GArray *keys, GError **error)
{
	(void)error;
	guint32 n = lh_graph_n_ops(g);
	LhHw *hw = lh_hw_copy(base);
	gboolean gemm_model = base->gemm_eff > 0;
	gboolean tr_own = base->hbm_transpose_eff > 0;
	LhFitKey *k_hbm = key_add(keys, "hbm_eff", "", base->hbm_eff);
	LhFitKey *k_ce = key_add(keys, "compute_eff", "", base->compute_eff);
	if (gemm_model)
		key_add(keys, "gemm_eff", "", base->gemm_eff);
	if (tr_own)
		key_add(keys, "hbm_transpose_eff", "", base->hbm_transpose_eff);
	key_add(keys, "kernel_overhead_ns", "ns", base->kernel_overhead_ns);
	key_add(keys, "launch_ns", "ns", base->launch_ns);
	key_add(keys, "event_ns", "ns", base->event_ns);
	key_add(keys, "pcie_gbs", "GB/s", base->pcie_gbs);
	key_add(keys, "copy_latency_ns", "ns", base->copy_latency_ns);
	key_add(keys, "link_gbs", "GB/s", base->link_gbs);
	key_add(keys, "link_latency_ns", "ns", base->link_latency_ns);
	(void)k_hbm;
	(void)k_ce;

	/* Observations: each file's median duration of each op measured alone. */
	g_autoptr(GArray) kern = g_array_new(FALSE, FALSE, sizeof(Obs));
	g_autoptr(GArray) copy = g_array_new(FALSE, FALSE, sizeof(Obs));
	g_autoptr(GArray) coll = g_array_new(FALSE, FALSE, sizeof(Obs));
	g_autofree guint8 *a_sm = g_new0(guint8, MAX(n, 1));
	g_autofree guint8 *a_cp = g_new0(guint8, MAX(n, 1));
	g_autofree guint8 *a_ln = g_new0(guint8, MAX(n, 1));
	g_autoptr(GArray) host = g_array_new(FALSE, FALSE, sizeof(double)); /* runs, events, y */
	for (guint f = 0; f < nx; f++) {
		const LhMatch *x = xs[f];
		memset(a_sm, 0, MAX(n, 1));
		memset(a_cp, 0, MAX(n, 1));
		memset(a_ln, 0, MAX(n, 1));
		alone(x->median, (1u << LH_ENGINE_SM) | (1u << LH_ENGINE_LINK), a_sm);
		alone(x->median, (1u << LH_ENGINE_H2D) | (1u << LH_ENGINE_D2H), a_cp);
		/* Collectives hold SMs too (collective_sm): with kernels beside them they slow. */
		alone(x->median, (1u << LH_ENGINE_SM) | (1u << LH_ENGINE_LINK), a_ln);
		for (guint32 i = 0; i < n; i++) {
			const LhOp *op = lh_graph_op(g, i);
			if (!x->n_seen[i] || op->duration_ns >= 0 || op->kind == LH_OP_INPUT)
				continue;
			Obs o = {i, x->dur_med[i]};
			if ((op->kind == LH_OP_KERNEL || op->kind == LH_OP_COPY_D2D) && a_sm[i])
				g_array_append_val(kern, o);
			else if (lh_op_kind_is_copy(op->kind) && a_cp[i])
				g_array_append_val(copy, o);
			else if (lh_op_kind_is_collective(op->kind) && a_ln[i])
				g_array_append_val(coll, o);
		}
		/* Host: consecutive run commands with only signal/wait between, both issued. */
		if (!plan)
			continue;
		gint64 prev = -1;
		double ev = 0;
		for (guint32 c = 0; c < lh_plan_n_cmds(plan); c++) {
			const LhCmd *cmd = lh_plan_cmd(plan, c);
			if (cmd->kind == LH_CMD_SIGNAL || cmd->kind == LH_CMD_WAIT) {
				ev++;
				continue;
			}
			if (cmd->kind != LH_CMD_RUN) {
				prev = -1;
				continue;
			}
			gint64 is = x->median->ops[cmd->arg].issue;
			if (prev >= 0 && is >= 0) {
				double row[3] = {1, ev, (double)(is - prev)};
				g_array_append_vals(host, row, 3);
			}
			prev = is;
			ev = 0;
		}
	}

	/* Kernels: T = max(compute, memory) + overhead is linear in 1/eff of the binding term
	 * and the overhead. Classify by the current estimate, fit, reclassify until stable. */
	enum { C_HBM, C_CE, C_GEMM, C_TR, C_OV };
	double xv[MAXC] = {1.0 / base->hbm_eff, 1.0 / base->compute_eff,
	                   gemm_model ? 1.0 / base->gemm_eff : 0,
	                   tr_own ? 1.0 / base->hbm_transpose_eff : 0, base->kernel_overhead_ns};
	LhHw *unit = lh_hw_copy(base);
	unit->gemm_eff = 1;
	gboolean act[MAXC] = {0};
	double rms = 0, rel = 0;
	guint32 cnt[MAXC] = {0};
	gboolean fitted = FALSE;
	g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(double));
	g_autofree guint8 *cls = g_new0(guint8, MAX(kern->len, 1));
	for (int iter = 0; iter < 20 && kern->len; iter++) {
		g_array_set_size(rows, 0);
		memset(cnt, 0, sizeof cnt);
		gboolean changed = FALSE;
		for (guint j = 0; j < kern->len; j++) {
			const Obs *o = &g_array_index(kern, Obs, j);
			const LhOp *op = lh_graph_op(g, o->op);
			double row[MAXC + 1] = {0};
			double bytes =
			    op->kind == LH_OP_COPY_D2D ? 2.0 * (double)op->size : op->bytes;
			int mcol = op->transpose && tr_own ? C_TR : C_HBM;
			double xm = bytes / base->hbm_gbs;
			double xc = 0;
			int ccol = C_CE;
			LhGemmCost gc;
			if (op->kind == LH_OP_KERNEL && gemm_model &&
			    lh_gemm_shape_cost(op, unit, &gc)) {
				xc = gc.compute_ns;
				ccol = C_GEMM;
			} else if (op->kind == LH_OP_KERNEL) {
				xc =
				    op->flops / (lh_hw_peak_tflops(base, (LhDtype)op->dtype) * 1e3);
			}
			int c = xm * xv[mcol] >= xc * xv[ccol] ? mcol : ccol;
			if (iter > 0 && cls[j] != c)
				changed = TRUE;
			cls[j] = (guint8)c;
			row[c] = c == mcol ? xm : xc;
			row[C_OV] = 1;
			row[MAXC] = o->y;
			if (row[c] > 0)
				cnt[c]++;
			g_array_append_vals(rows, row, MAXC + 1);
		}
		if (iter > 0 && !changed)
			break;
		for (int c = 0; c < MAXC; c++)
			act[c] = c == C_OV || cnt[c] > 0;
		double nxv[MAXC];
		memcpy(nxv, xv, sizeof nxv);
		gboolean ok = lsq(rows, MAXC, act, nxv);
		if (!ok) {
			/* Sizes too alike to separate the overhead: keep the base's. */
			act[C_OV] = FALSE;
			for (guint j = 0; j < kern->len; j++)
				g_array_index(rows, double, j *(MAXC + 1) + MAXC) -=
				    base->kernel_overhead_ns;
			ok = lsq(rows, MAXC, act, nxv);
			for (guint j = 0; j < kern->len; j++)
				g_array_index(rows, double, j *(MAXC + 1) + MAXC) +=
				    base->kernel_overhead_ns;
			nxv[C_OV] = base->kernel_overhead_ns;
		}
		if (!ok)
			break;
		memcpy(xv, nxv, sizeof xv);
		fitted = TRUE;
		resid(rows, MAXC, act, xv, &rms, &rel);
		if (!act[C_OV]) {
			/* resid() above included the overhead as a column. */
			gboolean all[MAXC];
			memcpy(all, act, sizeof all);
			all[C_OV] = TRUE;
			resid(rows, MAXC, all, xv, &rms, &rel);
		}
	}
	lh_hw_free(unit);
	const char *kcol[MAXC] = {"hbm_eff", "compute_eff", "gemm_eff", "hbm_transpose_eff",
	                          "kernel_overhead_ns"};
	for (int c = 0; c < MAXC; c++) {
		LhFitKey *k = key_get(keys, kcol[c]);
		if (!k)
			continue;
		if (!kern->len) {
			k->note = g_strdup("no kernel measured alone: kept");
			continue;
		}
		if (!fitted || !act[c]) {
			k->note = g_strdup(
			    c == C_OV ? "kernel sizes too alike to separate the overhead: kept"
			              : "no measured kernel is bound by this term: kept");
			continue;
		}
		double v = c == C_OV ? xv[c] : 1.0 / xv[c];
		if (!(v > 0 && (c == C_OV || v <= 1.0))) {
			k->note = g_strdup_printf("the fit gives %g, out of range: kept", v);
			continue;
		}
		k->value = v;
		k->fitted = TRUE;
		k->n = c == C_OV ? kern->len : cnt[c];
		k->resid_ns = rms;
		k->resid_rel = rel;
	}
	fit_line(copy, g, FALSE, key_get(keys, "pcie_gbs"), key_get(keys, "copy_latency_ns"),
	         "host-device copies");
	if (lh_hw_has_cluster(base)) {
		/* Collectives follow the cluster model (NVLink bus bandwidth, network, NCCL's
		 * latencies: docs/engine.md, "Collectives on a cluster"), where link_gbs and
		 * link_latency_ns play no part; fitting that model is not done yet. */
		const char *why =
		    "the description has a cluster (gpus_per_node): collectives are "
		    "costed by the cluster model, which calibration does not fit: kept";
		key_get(keys, "link_gbs")->note = g_strdup(why);
		key_get(keys, "link_latency_ns")->note = g_strdup(why);
	} else {
		fit_line(coll, g, TRUE, key_get(keys, "link_gbs"), key_get(keys, "link_latency_ns"),
		         "collectives");
	}

	/* Host: issue gaps = runs * launch_ns + events * event_ns. */
	LhFitKey *kla = key_get(keys, "launch_ns"), *kev = key_get(keys, "event_ns");
	guint nh = host->len / 3;
	if (!nh) {
		kla->note = g_strdup("no consecutive launches with issue times: kept");
		kev->note = g_strdup("no consecutive launches with issue times: kept");
	} else {
		gboolean evs = FALSE, noev = FALSE;
		for (guint i = 0; i < nh; i++) {
			if (g_array_index(host, double, i * 3 + 1) > 0)
				evs = TRUE;
			else
				noev = TRUE;
		}
		gboolean hact[2] = {TRUE, evs && noev};
		double hx[2] = {0, 0};
		if (!hact[1])
			for (guint i = 0; i < nh; i++)
				g_array_index(host, double, i * 3 + 2) -=
				    g_array_index(host, double, i * 3 + 1) * base->event_ns;
		if (lsq(host, 2, hact, hx) && hx[0] >= 0) {
			double hr, hrel;
			resid(host, 2, hact, hx, &hr, &hrel);
			kla->value = hx[0];
			kla->fitted = TRUE;
			kla->n = nh;
			kla->resid_ns = hr;
			kla->resid_rel = hrel;
			if (hact[1] && hx[1] >= 0) {
				kev->value = hx[1];
				kev->fitted = TRUE;
				kev->n = nh;
				kev->resid_ns = hr;
				kev->resid_rel = hrel;
			} else {
				kev->note = g_strdup(evs ? "every launch gap holds events: not "
				                           "separable from launch_ns, kept"
				                         : "no event between launches: kept");
			}
		} else {
			kla->note = g_strdup("the launch fit is singular or negative: kept");
			kev->note = g_strdup("the launch fit is singular or negative: kept");
		}
	}
	/* The duplex rates (both directions running) scale with the fitted one-way rate: a copy
	 * measured alone says nothing about them, and they cannot exceed it. */
	LhFitKey *kp = key_get(keys, "pcie_gbs");
	if (kp->fitted) {
		double r = kp->value / base->pcie_gbs;
		hw->pcie_duplex_gbs *= r;
		hw->pcie_duplex_h2d_gbs *= r;
		hw->pcie_duplex_d2h_gbs *= r;
	}
	/* Likewise a transpose rate no transpose determined follows the fitted hbm_eff. */
	LhFitKey *kh = key_get(keys, "hbm_eff"), *kt = key_get(keys, "hbm_transpose_eff");
	if (kh->fitted && kt && !kt->fitted) {
		kt->value = MIN(kt->base * kh->value / kh->base, kh->value);
		g_free(kt->note);
		kt->note = g_strdup("no transpose measured alone: scaled with hbm_eff");
	}
	for (guint i = 0; i < keys->len; i++) {
		const LhFitKey *k = &g_array_index(keys, LhFitKey, i);
		double *f = !strcmp(k->key, "hbm_eff")              ? &hw->hbm_eff
		            : !strcmp(k->key, "compute_eff")        ? &hw->compute_eff
		            : !strcmp(k->key, "gemm_eff")           ? &hw->gemm_eff
		            : !strcmp(k->key, "hbm_transpose_eff")  ? &hw->hbm_transpose_eff
		            : !strcmp(k->key, "kernel_overhead_ns") ? &hw->kernel_overhead_ns
		            : !strcmp(k->key, "launch_ns")          ? &hw->launch_ns
		            : !strcmp(k->key, "event_ns")           ? &hw->event_ns
		            : !strcmp(k->key, "pcie_gbs")           ? &hw->pcie_gbs
		            : !strcmp(k->key, "copy_latency_ns")    ? &hw->copy_latency_ns
		            : !strcmp(k->key, "link_gbs")           ? &hw->link_gbs
		                                                    : &hw->link_latency_ns;
		*f = k->value;
	}
	return hw;
}
