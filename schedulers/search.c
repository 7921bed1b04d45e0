/* lhsim — `search`: local search over a starting plan with the engine in the loop
 * (docs/schedulers.md#search).
 *
 * The start scheduler's plan gives each op a stream and a priority (its run's place in the
 * command sequence, a topological order). A move either shifts one op's priority to another
 * place between its last dep and its first consumer (within a window), or puts it on another
 * stream of its class (a stream the start plan ran an op of that class on). A candidate is
 * emitted as a stream program (runs in priority order, a signal/wait pair for each
 * cross-stream dep no earlier wait covers) and simulated in full by lh_simulate(); it
 * replaces the current one when its makespan is no longer, and the best valid one is kept.
 * The start plan itself is the first best, so the result is never worse than it.
 *
 * limits=keep: an async op of a class with limit k waits for the end of the k-th op of that
 * class before it (in priority order), so that at most k run at once, as with the start
 * scheduler's own limits. memory-limit: a candidate whose simulated peak is over it is not
 * valid.
 *
 * Stopping: `evals` candidate simulations or `budget` seconds of wall time, whichever comes
 * first; with `evals` and no `budget`, no clock is read and the result depends only on the
 * inputs, `seed` and `evals`.
 */
#include "schedulers/sched-util.h"
#include "sim/engine-private.h"
#include "sim/engine.h"
#include "sim/trace.h"

#include <string.h>

static const LhParamSpec search_params[] = {
    {"start", LH_PARAM_CHOICE, "lhs", 0, 0, "lhs|serial|iree|iree-cost|heft|cpath|xla|*",
     "the scheduler whose plan the search starts from: a built-in or any registered plugin "
     "(*)"},
    {"budget", LH_PARAM_DOUBLE, "10", -1e9, 1e9, NULL,
     "wall-time budget, seconds (> 0); not read when only evals is given"},
    {"evals", LH_PARAM_INT, NULL, -1000000000, 1000000000, NULL,
     "most candidate simulations (> 0); alone, it makes the result independent of the clock"},
    {"seed", LH_PARAM_INT, "1", 0, G_MAXINT32, NULL, "random seed of the moves"},
    {"limits", LH_PARAM_CHOICE, "keep", 0, 0, "keep|free",
     "keep: at most the start scheduler's async limits in flight per class"},
    {"window", LH_PARAM_INT, "16", 1, 100000, NULL, "farthest a priority move shifts an op"},
    {"memory-limit", LH_PARAM_DOUBLE, NULL, 0, 1e9, NULL,
     "peak device memory a plan may reach, GiB (default: none)"},
    {"incremental", LH_PARAM_CHOICE, "on", 0, 0, "on|off",
     "on: simulate a candidate from the current plan's latest valid checkpoint; off: in full "
     "(the same result, slower)"},
    {"checkpoint-every", LH_PARAM_INT, "0", 0, 1000000000, NULL,
     "instants between two checkpoints (0: about 16 per run)"},
    /* Passed to the start scheduler when set and when it has them. */
    {"streams", LH_PARAM_INT, NULL, 1, 1024, NULL, "for the start scheduler"},
    {"collective-limit", LH_PARAM_INT, NULL, 1, 1024, NULL, "for the start scheduler"},
    {"p2p-limit", LH_PARAM_INT, NULL, 1, 1024, NULL, "for the start scheduler"},
    {"async-compute-limit", LH_PARAM_INT, NULL, 1, 1024, NULL, "for the start scheduler"},
    {"memcpy-limit", LH_PARAM_INT, NULL, 0, 1024, NULL, "for the start scheduler"},
    {"compute-streams", LH_PARAM_INT, NULL, 1, 1024, NULL, "for the start scheduler"},
    {NULL, 0, NULL, 0, 0, NULL, NULL},
};

static const char *const passed[] = {"streams",      "collective-limit",
                                     "p2p-limit",    "async-compute-limit",
                                     "memcpy-limit", "compute-streams"};

static gboolean spec_has(const LhParamSpec *spec, const char *name)
{
	for (const LhParamSpec *s = spec; s && s->name; s++)
		if (strcmp(s->name, name) == 0)
			return TRUE;
	return FALSE;
}

typedef struct {
	const LhGraph *g;
	const LhHw *hw;
	const LhPlan *start; /* its stream table is every candidate's */
	guint32 n, m;        /* ops, non-input ops */
	guint32 limit[LH_CLASS_N];
	guint8 *cls;      /* class of each op whose in-flight count is limited, else NONE */
	double mem_limit; /* bytes; 0 = none */
	/* incremental=on */
	guint32 every;                   /* instants between checkpoints; 0 until the first run */
	guint64 instants, full_instants; /* simulated by candidates; of a full run */
	guint32 restored;                /* candidates restored from a checkpoint */
	/* scratch for emission */
	guint32 *spos, *event, *len, *covered, *cseq, *cidx;
	guint8 *need;
} Ctx;

/* The plan of (@order, @stream). */
static LhPlan *emit(Ctx *c, const guint32 *order, const guint32 *stream)
{
	const LhGraph *g = c->g;
	guint32 ns = lh_plan_n_streams(c->start);
	LhPlan *plan = lh_plan_new();
	for (guint32 s = 0; s < ns; s++)
		lh_plan_add_stream(plan, lh_plan_stream(c->start, s)->name,
		                   lh_plan_stream(c->start, s)->role);
	/* Class sequences and which ops must signal. */
	guint32 cn[LH_CLASS_N] = {0};
	for (guint32 k = 0; k < c->m; k++) {
		guint32 v = order[k];
		c->need[v] = 0;
		c->event[v] = G_MAXUINT32;
		if (c->cls[v] != LH_CLASS_NONE) {
			c->cidx[v] = cn[c->cls[v]];
			c->cseq[c->cls[v] * c->n + cn[c->cls[v]]++] = v;
		}
	}
	for (guint32 k = 0; k < c->m; k++) {
		guint32 v = order[k], nd;
		const guint32 *d = lh_graph_deps(g, v, &nd);
		for (guint32 j = 0; j < nd; j++)
			if (lh_graph_op(g, d[j])->kind != LH_OP_INPUT && stream[d[j]] != stream[v])
				c->need[d[j]] = 1;
		guint8 C = c->cls[v];
		if (C != LH_CLASS_NONE && c->cidx[v] >= c->limit[C]) {
			guint32 u = c->cseq[C * c->n + c->cidx[v] - c->limit[C]];
			if (stream[u] != stream[v])
				c->need[u] = 1;
		}
	}
	memset(c->len, 0, ns * sizeof(guint32));
	memset(c->covered, 0, (gsize)ns * ns * sizeof(guint32));
	for (guint32 k = 0; k < c->m; k++) {
		guint32 v = order[k], s = stream[v], nd;
		const guint32 *d = lh_graph_deps(g, v, &nd);
		for (guint32 j = 0; j <= nd; j++) {
			guint32 u;
			if (j < nd) {
				u = d[j];
				if (lh_graph_op(g, u)->kind == LH_OP_INPUT)
					continue;
			} else {
				guint8 C = c->cls[v];
				if (C == LH_CLASS_NONE || c->cidx[v] < c->limit[C])
					break;
				u = c->cseq[C * c->n + c->cidx[v] - c->limit[C]];
			}
			guint32 t = stream[u];
			if (t == s || c->covered[(gsize)s * ns + t] > c->spos[u])
				continue;
			g_assert(c->event[u] != G_MAXUINT32);
			lh_plan_wait(plan, s, c->event[u]);
			c->covered[(gsize)s * ns + t] = c->spos[u] + 1;
		}
		lh_plan_run(plan, s, v);
		c->spos[v] = c->len[s]++;
		if (c->need[v]) {
			c->event[v] = lh_plan_new_event(plan);
			lh_plan_signal(plan, s, c->event[v]);
		}
	}
	return plan;
}

/* @t's makespan, or G_MAXINT64 when there is no trace or it breaks the memory limit (*peak is
 * set when there is one). */
static gint64 score(Ctx *c, const LhTrace *t, gint64 *peak)
{
	if (!t)
		return G_MAXINT64;
	*peak = t->peak_device;
	if (c->mem_limit > 0 && (double)t->peak_device > c->mem_limit)
		return G_MAXINT64;
	gint64 mk = 0;
	for (guint32 i = 0; i < t->n_ops; i++)
		mk = MAX(mk, t->ops[i].end);
	return mk;
}

/* Simulates @plan in full: its score. */
static gint64 evaluate(Ctx *c, const LhPlan *plan, gboolean validated, gint64 *peak)
{
	LhSimOptions opt = {.skip_validate = validated};
	g_autoptr(LhTrace) t = lh_simulate(c->g, c->hw, plan, &opt, NULL, NULL);
	return score(c, t, peak);
}

/* Simulates @plan, incremental: from the latest valid checkpoint of @from (NULL: in full),
 * keeping checkpoints in *@run (NULL when it failed). The score is evaluate()'s: the engine
 * gives the same trace bit for bit (docs/engine.md, "Checkpoints and incremental runs"). */
static gint64 evaluate_from(Ctx *c, const LhPlan *plan, const LhSimRun *from, LhSimRun **run,
                            gint64 *peak)
{
	LhSimOptions opt = {.skip_validate = TRUE};
	*run = lh__sim_run(c->g, c->hw, plan, &opt, from, c->every, NULL, NULL);
	if (!*run)
		return G_MAXINT64;
	LhSimRunInfo info;
	lh__sim_run_info(*run, &info);
	c->instants += info.instants;
	c->restored += info.t_from >= 0;
	if (!c->full_instants) {
		/* The first run is a full one. Auto: about 16 checkpoints over a full run. */
		c->full_instants = MAX(info.instants, 1);
		if (!c->every)
			c->every = (guint32)MAX(info.instants / 16, 1);
	}
	return score(c, lh__sim_run_trace(*run), peak);
}

static LhPlan *search_plan(const LhGraph *g, const LhHw *hw, const LhParams *p, GError **error)
{
	double budget = lh_params_get_double(p, "budget");
	gboolean has_evals = lh_params_is_set(p, "evals");
	gint64 evals = has_evals ? lh_params_get_int(p, "evals") : G_MAXINT64;
	if (budget <= 0) {
		g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PARAM,
		            "search: budget=%g: the budget must be more than 0 seconds", budget);
		return NULL;
	}
	if (evals <= 0) {
		g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PARAM,
		            "search: evals=%" G_GINT64_FORMAT ": the number of evaluations must be "
		            "more than 0",
		            evals);
		return NULL;
	}
	/* Wall time only when asked for, or when there is no evaluation count. */
	gboolean use_clock = lh_params_is_set(p, "budget") || !has_evals;
	const char *sname = lh_params_get_choice(p, "start");
	const LhScheduler *ss = lh_scheduler_find(sname);
	if (!ss || ss->plan == search_plan) {
		/* The registry's names, plugins included, for the message. */
		g_autofree const LhScheduler **all = lh_scheduler_list();
		GString *names = g_string_new(NULL);
		for (guint k = 0; all[k]; k++)
			if (all[k]->plan != search_plan)
				g_string_append_printf(names, "%s%s", names->len ? ", " : "",
				                       all[k]->name);
		g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PARAM,
		            "search: start=%s: %s (valid: %s; a plugin's name once it is loaded "
		            "with --plugin)",
		            sname, ss ? "search cannot start from itself" : "no such scheduler",
		            names->str);
		g_string_free(names, TRUE);
		return NULL;
	}
	GPtrArray *kv = g_ptr_array_new_with_free_func(g_free);
	for (gsize k = 0; k < G_N_ELEMENTS(passed); k++)
		if (lh_params_is_set(p, passed[k]) && spec_has(ss->params, passed[k]))
			g_ptr_array_add(kv, g_strdup_printf("%s=%" G_GINT64_FORMAT, passed[k],
			                                    lh_params_get_int(p, passed[k])));
	g_ptr_array_add(kv, NULL);
	g_autoptr(GError) se = NULL;
	LhPlan *start = lh_scheduler_run(ss, g, hw, (const char *const *)kv->pdata, NULL, &se);
	/* The start scheduler's limits, its defaults included. */
	Ctx c = {0};
	c.g = g;
	c.hw = hw;
	for (int k = 0; k < LH_CLASS_N; k++)
		c.limit[k] = G_MAXUINT32;
	if (start && strcmp(lh_params_get_choice(p, "limits"), "keep") == 0) {
		g_autoptr(LhParams) sp =
		    lh_params_new(ss->params, (const char *const *)kv->pdata, NULL);
		static const struct {
			const char *name;
			LhOpClass cls;
		} lim[] = {{"collective-limit", LH_CLASS_COLLECTIVE},
		           {"p2p-limit", LH_CLASS_P2P},
		           {"async-compute-limit", LH_CLASS_ASYNC_COMPUTE},
		           {"memcpy-limit", LH_CLASS_MEMCPY}};
		for (gsize k = 0; sp && k < G_N_ELEMENTS(lim); k++)
			if (spec_has(ss->params, lim[k].name)) {
				gint64 v = lh_params_get_int(sp, lim[k].name);
				c.limit[lim[k].cls] = v > 0 ? (guint32)v : G_MAXUINT32;
			}
	}
	g_ptr_array_free(kv, TRUE);
	if (!start) {
		g_set_error(error, LH_SCHED_ERROR, se->code, "search: start=%s: %s", sname,
		            se->message);
		return NULL;
	}
	guint32 n = lh_graph_n_ops(g), ns = lh_plan_n_streams(start);
	c.start = start;
	c.n = n;
	c.mem_limit = lh_params_is_set(p, "memory-limit")
	                  ? lh_params_get_double(p, "memory-limit") * 1073741824.0
	                  : 0;
	c.cls = g_new0(guint8, MAX(n, 1));
	for (guint32 v = 0; v < n; v++) {
		const LhOp *op = lh_graph_op(g, v);
		LhOpClass k = lh_op_class(op);
		c.cls[v] = op->async && c.limit[k] != G_MAXUINT32 ? (guint8)k : LH_CLASS_NONE;
	}
	/* Order and streams from the start plan; the streams each class ran on. */
	g_autofree guint32 *order = g_new(guint32, MAX(n, 1));
	g_autofree guint32 *stream = g_new0(guint32, MAX(n, 1));
	g_autofree guint8 *ok_stream = g_new0(guint8, (gsize)LH_CLASS_N * MAX(ns, 1));
	guint32 m = 0;
	for (guint32 k = 0; k < lh_plan_n_cmds(start); k++) {
		const LhCmd *cmd = lh_plan_cmd(start, k);
		if (cmd->kind != LH_CMD_RUN)
			continue;
		guint32 v = (guint32)cmd->arg;
		order[m++] = v;
		stream[v] = cmd->stream;
		ok_stream[lh_op_class(lh_graph_op(g, v)) * ns + cmd->stream] = 1;
	}
	c.m = m;
	/* Put the run order in a topological order (a plan may run an op before its dep on
	 * another stream): Kahn's algorithm, the earliest run first. */
	{
		g_autofree guint32 *rank = g_new0(guint32, MAX(n, 1));
		g_autofree guint32 *indeg = g_new0(guint32, MAX(n, 1));
		for (guint32 k = 0; k < m; k++)
			rank[order[k]] = k;
		for (guint32 k = 0; k < m; k++) {
			guint32 v = order[k], nd;
			const guint32 *d = lh_graph_deps(g, v, &nd);
			for (guint32 j = 0; j < nd; j++)
				indeg[v] += lh_graph_op(g, d[j])->kind != LH_OP_INPUT;
		}
		GArray *heap = g_array_new(FALSE, FALSE, sizeof(guint32)); /* sorted small list */
		g_autofree guint32 *out = g_new(guint32, MAX(m, 1));
		guint32 o = 0;
		/* A simple sweep: repeatedly take the lowest-ranked ready op. */
		g_autofree guint8 *ready = g_new0(guint8, MAX(m, 1));
		for (guint32 k = 0; k < m; k++)
			if (!indeg[order[k]])
				ready[k] = 1;
		guint32 lo = 0;
		while (o < m) {
			while (lo < m && !ready[lo])
				lo++;
			g_assert(lo < m);
			guint32 v = order[lo];
			ready[lo] = 0;
			out[o++] = v;
			guint32 nsucc;
			const guint32 *sc = lh_graph_succs(g, v, &nsucc);
			for (guint32 j = 0; j < nsucc; j++)
				if (--indeg[sc[j]] == 0) {
					ready[rank[sc[j]]] = 1;
					lo = MIN(lo, rank[sc[j]]);
				}
		}
		g_array_free(heap, TRUE);
		memcpy(order, out, m * sizeof(guint32));
	}
	c.spos = g_new0(guint32, MAX(n, 1));
	c.event = g_new0(guint32, MAX(n, 1));
	c.len = g_new0(guint32, MAX(ns, 1));
	c.covered = g_new0(guint32, (gsize)MAX(ns, 1) * MAX(ns, 1));
	c.cseq = g_new0(guint32, (gsize)LH_CLASS_N * MAX(n, 1));
	c.cidx = g_new0(guint32, MAX(n, 1));
	c.need = g_new0(guint8, MAX(n, 1));

	/* Streams an op may move to: those of its class in the start plan. */
	g_autofree guint32 *alts = g_new0(guint32, LH_CLASS_N);
	for (int k = 0; k < LH_CLASS_N; k++)
		for (guint32 s = 0; s < ns; s++)
			alts[k] += ok_stream[k * ns + s];

	gint64 t0 = use_clock ? g_get_monotonic_time() : 0;
	gint64 peak = 0, best_peak = G_MAXINT64;
	LhPlan *best = start;
	gint64 best_mk = evaluate(&c, start, FALSE, &peak);
	if (peak)
		best_peak = peak;
	gint64 n_evals = 0;
	gboolean incr = strcmp(lh_params_get_choice(p, "incremental"), "on") == 0;
	c.every = (guint32)lh_params_get_int(p, "checkpoint-every");
	LhSimRun *cur_run = NULL, *cand_run = NULL; /* incremental: the current plan's run */
	LhPlan *cur_plan = emit(&c, order, stream);
	gint64 cur = incr ? evaluate_from(&c, cur_plan, NULL, &cur_run, &peak)
	                  : evaluate(&c, cur_plan, TRUE, &peak);
	guint64 first_instants = c.instants;
	n_evals++;
	best_peak = MIN(best_peak, peak);
	if (cur < best_mk) {
		best = cur_plan;
		best_mk = cur;
	} else
		lh_plan_free(cur_plan);
	g_autofree guint32 *pos = g_new0(guint32, MAX(n, 1));
	for (guint32 k = 0; k < m; k++)
		pos[order[k]] = k;
	GRand *rng = g_rand_new_with_seed((guint32)lh_params_get_int(p, "seed"));
	guint32 W = (guint32)lh_params_get_int(p, "window");
	guint32 accepted = 0, improved = 0;
	/* Draws that give no move (an op pinned between its dep and its consumer, on the only
	 * stream of its class) in a row; past 10 m + 1000 of them, no move is left to try. */
	guint32 idle = 0;
	while (m > 1 && n_evals < evals && idle <= 10 * m + 1000) {
		if (use_clock && (g_get_monotonic_time() - t0) >= (gint64)(budget * 1e6))
			break;
		guint32 i = g_rand_int_range(rng, 0, (gint32)m), v = order[i];
		guint32 cls = lh_op_class(lh_graph_op(g, v));
		gboolean smove = alts[cls] > 1 && g_rand_int_range(rng, 0, 3) == 0;
		guint32 old_s = stream[v], j = i;
		if (smove) {
			guint32 pick = g_rand_int_range(rng, 0, (gint32)alts[cls] - 1);
			for (guint32 s = 0; s < ns; s++)
				if (ok_stream[cls * ns + s] && s != old_s && pick-- == 0) {
					stream[v] = s;
					break;
				}
		} else {
			guint32 nd, nsc;
			const guint32 *d = lh_graph_deps(g, v, &nd);
			const guint32 *sc = lh_graph_succs(g, v, &nsc);
			gint64 lo = (gint64)i - W, hi = (gint64)i + W;
			lo = MAX(lo, 0);
			hi = MIN(hi, (gint64)m - 1);
			for (guint32 k = 0; k < nd; k++)
				if (lh_graph_op(g, d[k])->kind != LH_OP_INPUT)
					lo = MAX(lo, (gint64)pos[d[k]] + 1);
			for (guint32 k = 0; k < nsc; k++)
				hi = MIN(hi, (gint64)pos[sc[k]] - 1);
			if (hi <= lo) {
				idle++;
				continue;
			}
			j = (guint32)g_rand_int_range(rng, (gint32)lo, (gint32)hi);
			if (j >= i)
				j++;
			if (j > (guint32)hi) {
				idle++;
				continue;
			}
			/* Shift v from i to j. */
			if (j < i)
				memmove(order + j + 1, order + j, (i - j) * sizeof(guint32));
			else
				memmove(order + i, order + i + 1, (j - i) * sizeof(guint32));
			order[j] = v;
			for (guint32 k = MIN(i, j); k <= MAX(i, j); k++)
				pos[order[k]] = k;
		}
		idle = 0;
		LhPlan *cand = emit(&c, order, stream);
		gint64 mk = incr ? evaluate_from(&c, cand, cur_run, &cand_run, &peak)
		                 : evaluate(&c, cand, TRUE, &peak);
		n_evals++;
		if (peak)
			best_peak = MIN(best_peak, peak);
		if (mk != G_MAXINT64 && mk <= cur) {
			accepted++;
			cur = mk;
			lh__sim_run_free(cur_run);
			cur_run = cand_run;
			cand_run = NULL;
			if (mk < best_mk) {
				improved++;
				if (best != start)
					lh_plan_free(best);
				best = cand;
				best_mk = mk;
				continue;
			}
		} else {
			/* Undo. */
			stream[v] = old_s;
			if (j != i) {
				if (j < i)
					memmove(order + j, order + j + 1,
					        (i - j) * sizeof(guint32));
				else
					memmove(order + i + 1, order + i,
					        (j - i) * sizeof(guint32));
				order[i] = v;
				for (guint32 k = MIN(i, j); k <= MAX(i, j); k++)
					pos[order[k]] = k;
			}
		}
		lh__sim_run_free(cand_run);
		cand_run = NULL;
		lh_plan_free(cand);
	}
	g_rand_free(rng);
	lh__sim_run_free(cur_run);
	if (incr && c.full_instants && n_evals > 1)
		lh_params_explain(p,
		                  "search: incremental: %u of %" G_GINT64_FORMAT
		                  " candidates restored from a checkpoint (every %u instants); "
		                  "%.1f %% of a full run's instants simulated per candidate",
		                  c.restored, n_evals - 1, c.every,
		                  100.0 * (double)(c.instants - first_instants) /
		                      ((double)(n_evals - 1) * (double)c.full_instants));
	double secs = use_clock ? (double)(g_get_monotonic_time() - t0) / 1e6 : 0;
	if (use_clock)
		lh_params_explain(p,
		                  "search: %" G_GINT64_FORMAT " evaluations in %.2f s (%.0f/s), "
		                  "%u accepted, %u improvements",
		                  n_evals, secs, secs > 0 ? (double)n_evals / secs : 0.0, accepted,
		                  improved);
	else
		lh_params_explain(p,
		                  "search: %" G_GINT64_FORMAT " evaluations, %u accepted, %u "
		                  "improvements",
		                  n_evals, accepted, improved);
	g_free(c.cls);
	g_free(c.spos);
	g_free(c.event);
	g_free(c.len);
	g_free(c.covered);
	g_free(c.cseq);
	g_free(c.cidx);
	g_free(c.need);
	if (best_mk == G_MAXINT64) {
		if (best != start)
			lh_plan_free(best);
		lh_plan_free(start);
		g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PARAM,
		            "search: no plan found within memory-limit=%g GiB; the smallest peak "
		            "found is %.4f GiB",
		            lh_params_get_double(p, "memory-limit"),
		            (double)best_peak / 1073741824.0);
		return NULL;
	}
	lh_params_explain(p, "search: start %s, best makespan %" G_GINT64_FORMAT " ns", sname,
	                  best_mk);
	if (best != start)
		lh_plan_free(start);
	else {
		/* Hand back a copy without the start's origin: the pipeline stamps ours. */
		lh_plan_set_origin(best, NULL, NULL);
	}
	return best;
}

const LhScheduler lh_sched_search = {
    .version = LH_SCHEDULER_ABI,
    .name = "search",
    .summary = "local search over priorities and streams of a start plan, each candidate "
               "simulated by the engine; never worse than its start",
    .params = search_params,
    .plan = search_plan,
};
