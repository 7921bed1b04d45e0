/* lhsim bench — the engine on several devices against one device of the same total size
 * (issue 10).
 *
 * For each size N (default 10^5 and 10^6 ops) a child process simulates
 *   - one device: a random layered DAG of N ops (lh_gen_random_dag, width 64, seed 42) on 8
 *     streams, as bench-engine does;
 *   - 8 devices: 8 copies of a random layered DAG of N / 8 ops, placed one per device, each
 *     on 8 streams of its device, every collective a rendezvous of its 8 copies (data
 *     parallel: the same program on every device, each collective joins them);
 * on the H100 model, and prints simulated ops per second (simulation alone, best of a few
 * runs) for each and their ratio per simulated op.
 *
 * usage: bench-mdev [--only=1|--only=8] [N ...]
 *   --only=D simulates only the D-device case (for callgrind: valgrind --tool=callgrind
 *   --trace-children=yes --toggle-collect=lh_simulate bench-mdev --only=8 100000).
 */
#include "bench-common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEVICES 8

/* Runs base graph @b's ops (offset by @off in the plan's graph) on 8 new streams of device
 * @dev, as bench-engine does (bench_eight_streams). */
static void eight_streams(const LhGraph *b, LhPlan *p, guint32 dev, guint32 off)
{
	guint32 sid[BENCH_STREAMS];
	for (int s = 0; s < BENCH_STREAMS; s++) {
		char name[32];
		g_snprintf(name, sizeof name, "d%u.s%d", dev, s);
		sid[s] = lh_plan_add_stream_on(p, name, LH_ROLE_COMPUTE, dev);
	}
	bench_eight_streams(b, p, sid, off);
}

/* @D copies of @b, copy d on device d; the copies of each collective share a sync. */
static LhGraph *replicate(const LhGraph *b, guint32 D)
{
	guint32 n = lh_graph_n_ops(b);
	LhGraph *g = lh_graph_new("mdev");
	lh_graph_set_devices(g, D);
	lh_graph_set_placed(g, TRUE);
	for (guint32 d = 0; d < D; d++)
		for (guint32 i = 0; i < n; i++) {
			const LhOp *s = lh_graph_op(b, i);
			char name[64];
			g_snprintf(name, sizeof name, "d%u/%s", d, s->name);
			guint32 j = lh_graph_add_op(g, name, s->kind);
			LhOp *o = lh_graph_op_mut(g, j);
			o->flops = s->flops;
			o->bytes = s->bytes;
			o->sm = s->sm;
			o->size = s->size;
			o->out_bytes = s->out_bytes;
			o->duration_ns = s->duration_ns;
			o->out_space = s->out_space;
			o->async = s->async;
			o->dtype = s->dtype;
			o->transpose = s->transpose;
			o->gemm_m = s->gemm_m;
			o->gemm_n = s->gemm_n;
			o->gemm_k = s->gemm_k;
			o->gemm_batch = s->gemm_batch;
			o->alias = s->alias == LH_NO_OP ? LH_NO_OP : d * n + s->alias;
			o->device = d;
			if (lh_op_kind_is_collective(s->kind)) {
				if (s->kind == LH_OP_SEND || s->kind == LH_OP_RECV)
					o->kind = LH_OP_ALL_REDUCE; /* one kind for all parts */
				char key[32];
				g_snprintf(key, sizeof key, "c%u", i);
				o->group = D;
				o->sync = 1 + lh_graph_sync_add(g, key);
			}
		}
	for (guint32 d = 0; d < D; d++)
		for (guint32 i = 0; i < n; i++) {
			guint32 nd;
			const guint32 *deps = lh_graph_deps(b, i, &nd);
			for (guint32 k = 0; k < nd; k++)
				lh_graph_add_dep(g, d * n + i, d * n + deps[k]);
		}
	GError *e = NULL;
	if (!lh_graph_finish(g, NULL, &e)) {
		fprintf(stderr, "bench-mdev: %s\n", e->message);
		exit(1);
	}
	return g;
}

/* Best simulation time of a few runs, s; *@makespan the trace's. */
static double best_sim(const LhGraph *g, const LhHw *hw, const LhPlan *p, int reps,
                       gint64 *makespan)
{
	GError *e = NULL;
	if (!lh_plan_validate(p, g, NULL, &e)) {
		fprintf(stderr, "bench-mdev: %s\n", e->message);
		exit(1);
	}
	LhSimOptions opt = {.skip_validate = TRUE};
	double best = 1e30;
	for (int r = 0; r < reps; r++) {
		gint64 a = g_get_monotonic_time();
		LhTrace *t = lh_simulate(g, hw, p, &opt, NULL, &e);
		gint64 b = g_get_monotonic_time();
		if (!t) {
			fprintf(stderr, "bench-mdev: %s\n", e->message);
			exit(1);
		}
		*makespan = bench_makespan(t);
		lh_trace_free(t);
		best = MIN(best, (double)(b - a) / 1e6);
	}
	return best;
}

static int only; /* 0 = both */

static void one_size(guint32 n)
{
	lh_models_init();
	LhHw *hw = lh_hw_lookup("h100-sxm", NULL);
	int reps = n <= 100000 ? 5 : 2;
	/* One device, N ops. */
	LhGraph *g1 = bench_random_dag(n);
	LhPlan *p1 = lh_plan_new();
	eight_streams(g1, p1, 0, 0);
	gint64 m1 = 0;
	double t1 = only == DEVICES ? 1 : best_sim(g1, hw, p1, reps, &m1);
	/* 8 devices, N / 8 ops each. */
	LhGraph *b = bench_random_dag(n / DEVICES);
	LhGraph *g8 = replicate(b, DEVICES);
	LhPlan *p8 = lh_plan_new();
	for (guint32 d = 0; d < DEVICES; d++)
		eight_streams(b, p8, d, d * lh_graph_n_ops(b));
	gint64 m8 = 0;
	double t8 = only == 1 ? 1 : best_sim(g8, hw, p8, reps, &m8);
	guint32 n8 = lh_graph_n_ops(g8), nr = lh_graph_n_syncs(g8);
	double r1 = lh_graph_n_ops(g1) / t1, r8 = n8 / t8;
	printf("%9u ops", n);
	if (only != DEVICES)
		printf("  1 device: %7.3f s %6.2f M ops/s (makespan %.3f ms)", t1, r1 / 1e6,
		       m1 / 1e6);
	if (only != 1)
		printf("  %u devices: %7.3f s %6.2f M ops/s, %u ops, %u rendezvous (makespan %.3f "
		       "ms)",
		       DEVICES, t8, r8 / 1e6, n8, nr, m8 / 1e6);
	if (!only)
		printf("  time per op x%.2f", r1 / r8);
	printf("\n");
	fflush(stdout);
	lh_plan_free(p1);
	lh_plan_free(p8);
	lh_graph_free(g1);
	lh_graph_free(g8);
	lh_graph_free(b);
}

int main(int argc, char **argv)
{
	guint32 sizes[16] = {100000, 1000000};
	int ns = 2;
	int first = 1;
	if (argc > 1 && g_str_has_prefix(argv[1], "--only=")) {
		only = atoi(argv[1] + 7);
		if (only != 1 && only != DEVICES) {
			fprintf(stderr, "bench-mdev: --only=1 or --only=%d\n", DEVICES);
			return 2;
		}
		first = 2;
	}
	if (argc > first) {
		ns = 0;
		for (int i = first; i < argc && ns < 16; i++)
			sizes[ns++] = (guint32)strtoul(argv[i], NULL, 10);
	}
	printf("bench-mdev: random layered DAG, width 64, 8 streams per device, h100-sxm\n");
	fflush(stdout);
	for (int i = 0; i < ns; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			one_size(sizes[i]);
			_exit(0);
		}
		int st;
		waitpid(pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
	}
	return 0;
}
