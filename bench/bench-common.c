/* lhsim bench — what bench-engine and bench-mdev share (bench-common.h). */
#include "bench-common.h"

LhGraph *bench_random_dag(guint32 n)
{
	LhRandomDagOptions o;
	lh_random_dag_options_init(&o);
	o.n_ops = n;
	o.width = 64;
	o.seed = 42;
	return lh_gen_random_dag(&o);
}

void bench_eight_streams(const LhGraph *b, LhPlan *p, const guint32 sid[BENCH_STREAMS], guint32 off)
{
	guint32 n = lh_graph_n_ops(b);
	guint32 *stream = g_new(guint32, n), *pos = g_new(guint32, n), *event = g_new(guint32, n);
	guint32 count[BENCH_STREAMS] = {0};
	/* waited[s][t]: stream s is already ordered after the first waited[s][t] ops of stream t */
	guint32 waited[BENCH_STREAMS][BENCH_STREAMS] = {{0}};
	const guint32 *topo = lh_graph_topo(b);
	guint32 rr = 0;
	for (guint32 k = 0; k < n; k++) {
		guint32 v = topo[k];
		stream[v] =
		    lh_graph_op(b, v)->kind == LH_OP_INPUT ? G_MAXUINT32 : rr++ % BENCH_STREAMS;
	}
	for (guint32 k = 0; k < n; k++) {
		guint32 v = topo[k];
		event[v] = G_MAXUINT32;
		guint32 s = stream[v];
		if (s == G_MAXUINT32)
			continue;
		guint32 nd;
		const guint32 *deps = lh_graph_deps(b, v, &nd);
		for (guint32 d = 0; d < nd; d++) {
			guint32 u = deps[d], t = stream[u];
			if (t == G_MAXUINT32 || t == s || waited[s][t] > pos[u])
				continue;
			lh_plan_wait(p, sid[s], event[u]);
			waited[s][t] = pos[u] + 1;
		}
		lh_plan_run(p, sid[s], off + v);
		pos[v] = count[s]++;
		guint32 ns;
		const guint32 *succ = lh_graph_succs(b, v, &ns);
		for (guint32 j = 0; j < ns; j++)
			if (stream[succ[j]] != s) {
				event[v] = lh_plan_new_event(p);
				lh_plan_signal(p, sid[s], event[v]);
				break;
			}
	}
	g_free(stream);
	g_free(pos);
	g_free(event);
}

gint64 bench_makespan(const LhTrace *t)
{
	gint64 m = 0;
	for (guint32 i = 0; i < t->n_ops; i++)
		m = MAX(m, t->ops[i].end);
	return m;
}
