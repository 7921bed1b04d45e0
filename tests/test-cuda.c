/* lhsim tests — the cuda backend on a real GPU (suite 'gpu').
 *
 * Without a usable device (no driver, no GPU, or lhsim built without CUDA) the program prints
 * the reason and exits 77, which meson reports as SKIP. The probe runs in a child process:
 * criterion forks a worker per test, and a process that has initialized CUDA cannot use it in
 * a forked child, so the parent must not touch CUDA; each test creates its own context.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "lh-config.h"
#if LH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

/* Deps and events hold in the measured times, up to @slack (clock alignment between CUDA
 * events and %globaltimer: a launch latency). */
static void check_order(const LhGraph *g, const LhPlan *p, const LhTrace *t, gint64 slack)
{
	for (guint32 v = 0; v < lh_graph_n_ops(g); v++) {
		if (lh_graph_op(g, v)->kind == LH_OP_INPUT)
			continue;
		cr_assert_geq(t->ops[v].start, 0, "op %s never ran", lh_graph_op(g, v)->name);
		cr_assert_geq(t->ops[v].end, t->ops[v].start);
		guint32 nd;
		const guint32 *d = lh_graph_deps(g, v, &nd);
		for (guint32 k = 0; k < nd; k++)
			if (lh_graph_op(g, d[k])->kind != LH_OP_INPUT)
				cr_assert_leq(t->ops[d[k]].end, t->ops[v].start + slack, "%s -> %s",
				              lh_graph_op(g, d[k])->name, lh_graph_op(g, v)->name);
	}
	guint32 S = lh_plan_n_streams(p);
	g_autofree gint64 *last_end = g_new0(gint64, S), *gate = g_new0(gint64, S);
	g_autofree gint64 *ev = g_new0(gint64, MAX(lh_plan_n_events(p), 1));
	for (guint32 c = 0; c < lh_plan_n_cmds(p); c++) {
		const LhCmd *cmd = lh_plan_cmd(p, c);
		if (cmd->kind == LH_CMD_RUN) {
			const LhOpTiming *o = &t->ops[cmd->arg];
			cr_assert_geq(o->start + slack,
			              MAX(gate[cmd->stream], last_end[cmd->stream]), "op %s",
			              lh_graph_op(g, (guint32)cmd->arg)->name);
			last_end[cmd->stream] = MAX(last_end[cmd->stream], o->end);
		} else if (cmd->kind == LH_CMD_SIGNAL) {
			ev[cmd->arg] = MAX(last_end[cmd->stream], gate[cmd->stream]);
		} else if (cmd->kind == LH_CMD_WAIT) {
			gate[cmd->stream] = MAX(gate[cmd->stream], ev[cmd->arg]);
		}
	}
}

static LhHw *h200(void)
{
	lh_models_init();
	GError *e = NULL;
	LhHw *hw = lh_hw_lookup("h200-sxm", &e);
	cr_assert(hw, "%s", e ? e->message : "");
	return hw;
}

/* up (H2D 64 MiB) -> k1 (FMA) -> k2 (streaming) -> down (D2H 64 MiB) on s0/s1/s2 with
 * events, an all-reduce on a collective stream in parallel, and a 2 ms spin kernel. */
static void pipeline(const LhHw *hw, LhGraph **gp, LhPlan **pp)
{
	LhGraph *g = lh_graph_new("pipeline");
	guint32 up = t_op(g, "up", LH_OP_COPY_H2D, 64u << 20);
	guint32 k1 = lh_graph_add_op(g, "k1", LH_OP_KERNEL);
	/* 1 ms of FLOPs on this model. */
	lh_graph_op_mut(g, k1)->flops = hw->peak_tflops * 1e3 * hw->compute_eff * 1e6;
	guint32 k2 = lh_graph_add_op(g, "k2", LH_OP_KERNEL);
	lh_graph_op_mut(g, k2)->bytes = 2e9; /* about 0.5 ms of HBM on an H200 */
	guint32 spin = t_kernel(g, "spin", 2000000, 0.25);
	guint32 down = t_op(g, "down", LH_OP_COPY_D2H, 64u << 20);
	guint32 ar = t_op(g, "ar", LH_OP_ALL_REDUCE, 64u << 20);
	t_dep(g, k1, up);
	t_dep(g, k2, k1);
	t_dep(g, down, k2);
	t_dep(g, spin, k1);
	t_finish(g);
	LhPlan *p = lh_plan_new();
	guint32 s0 = lh_plan_add_stream(p, "main", LH_ROLE_COMPUTE);
	guint32 h = lh_plan_add_stream(p, "h2d", LH_ROLE_H2D);
	guint32 d = lh_plan_add_stream(p, "d2h", LH_ROLE_D2H);
	guint32 c = lh_plan_add_stream(p, "coll", LH_ROLE_COLLECTIVE);
	guint32 s1 = lh_plan_add_stream(p, "side", LH_ROLE_ASYNC_COMPUTE);
	lh_plan_run(p, c, ar);
	lh_plan_run(p, h, up);
	lh_plan_link(p, h, s0);
	lh_plan_run(p, s0, k1);
	lh_plan_link(p, s0, s1);
	lh_plan_run(p, s1, spin);
	lh_plan_run(p, s0, k2);
	lh_plan_link(p, s0, d);
	lh_plan_run(p, d, down);
	*gp = g;
	*pp = p;
}

Test(cuda, replays_a_plan_in_order)
{
	GError *e = NULL;
	g_autoptr(LhHw) hw = h200();
	g_autoptr(LhGraph) g = NULL;
	g_autoptr(LhPlan) p = NULL;
	pipeline(hw, &g, &p);
	LhReplayOptions o;
	lh_replay_options_init(&o);
	o.warmup = 1;
	o.repeats = 3;
	g_autoptr(LhTrace) t = lh_backend_cuda.replay(g, p, hw, &o, &e);
	cr_assert(t, "%s", e ? e->message : "");
	cr_assert(t->measured);
	cr_assert_str_eq(t->source, "cuda (emulated collectives)");
	check_order(g, p, t, 20000);
	guint32 spin;
	lh_graph_find(g, "spin", &spin);
	/* A spin kernel reads %globaltimer until 2 ms have passed: 2 ms within 10 %. */
	gint64 d = t->ops[spin].end - t->ops[spin].start;
	cr_assert(d >= 1800000 && d <= 2200000, "spin took %" G_GINT64_FORMAT " ns", d);
}

Test(cuda, failure_mid_replay_frees_everything_and_names_the_op)
{
	g_autoptr(LhHw) hw = h200();
	g_autoptr(LhGraph) g = NULL;
	g_autoptr(LhPlan) p = NULL;
	pipeline(hw, &g, &p);
#if LH_HAVE_CUDA
	cr_assert_eq(cudaSetDevice(0), cudaSuccess);
	size_t free0 = 0, free1 = 0, total = 0;
	cr_assert_eq(cudaMemGetInfo(&free0, &total), cudaSuccess);
#endif
	g_setenv("LHSIM_CUDA_FAULT_OP", "k2", TRUE);
	LhReplayOptions o;
	lh_replay_options_init(&o);
	o.warmup = 0;
	o.repeats = 1;
	g_autoptr(GError) err = NULL;
	cr_assert_null(lh_backend_cuda.replay(g, p, hw, &o, &err));
	g_unsetenv("LHSIM_CUDA_FAULT_OP");
	cr_assert(g_error_matches(err, LH_BACKEND_ERROR, LH_BACKEND_ERROR_FAILED));
	cr_assert(strstr(err->message, "op 'k2'"), "%s", err->message);
#if LH_HAVE_CUDA
	/* The replay allocated over 1 GiB (scratch, copy buffers); all of it is back, give or
	 * take the allocator's granularity. */
	cr_assert_eq(cudaMemGetInfo(&free1, &total), cudaSuccess);
	cr_assert(free1 + (64u << 20) >= free0, "free before %zu, after %zu", free0, free1);
#endif
}

/* Calibrate, then check the model predicts a serial chain of the replay's own kernels. */
Test(cuda, calibrated_model_predicts_a_kernel_chain)
{
	GError *e = NULL;
	g_autoptr(LhHw) base = h200();
	g_autoptr(GHashTable) notes =
	    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	g_autoptr(LhHw) hw = lh_backend_cuda.calibrate(base, NULL, notes, &e);
	cr_assert(hw, "%s", e ? e->message : "");
	cr_assert(lh_hw_validate(hw, "calibrated", &e), "%s", e ? e->message : "");
	const char *keys[] = {"hbm_gbs",
	                      "hbm_eff",
	                      "pcie_gbs",
	                      "pcie_duplex_h2d_gbs",
	                      "pcie_duplex_d2h_gbs",
	                      "copy_latency_ns",
	                      "launch_ns",
	                      "event_ns",
	                      "peak_tflops",
	                      "kernel_overhead_ns",
	                      "sm_sharing"};
	for (gsize i = 0; i < G_N_ELEMENTS(keys); i++)
		cr_assert(g_hash_table_contains(notes, keys[i]), "no note for %s", keys[i]);
	g_autofree char *ini = lh_calibration_to_ini(hw, notes, "test");
	g_autoptr(LhHw) back = lh_hw_new_from_data(ini, strlen(ini), "gpu.ini", &e);
	cr_assert(back, "%s", e ? e->message : "");

	/* Four FMA kernels of 2 ms each on the calibrated model, one stream. */
	g_autoptr(LhGraph) g = lh_graph_new("chain");
	guint32 prev = G_MAXUINT32;
	for (int i = 0; i < 4; i++) {
		char n[8];
		g_snprintf(n, sizeof n, "k%d", i);
		guint32 k = lh_graph_add_op(g, n, LH_OP_KERNEL);
		lh_graph_op_mut(g, k)->flops = hw->peak_tflops * 1e3 * hw->compute_eff * 2e6;
		if (prev != G_MAXUINT32)
			t_dep(g, k, prev);
		prev = k;
	}
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 s = lh_plan_add_stream(p, "main", LH_ROLE_COMPUTE);
	for (guint32 i = 0; i < 4; i++)
		lh_plan_run(p, s, i);
	g_autoptr(LhTrace) pred = t_sim(g, hw, p);
	LhReplayOptions o;
	lh_replay_options_init(&o);
	g_autoptr(LhTrace) t = lh_backend_cuda.replay(g, p, hw, &o, &e);
	cr_assert(t, "%s", e ? e->message : "");
	check_order(g, p, t, 20000);
	double mp = (double)t_makespan(pred), mm = (double)t_makespan(t);
	/* The prediction is 4 x (2 ms + overhead) plus a launch; measured within 10 %. */
	cr_assert(fabs(mm - mp) <= 0.10 * mp, "predicted %.0f ns, measured %.0f ns", mp, mm);
}

/* CUDA must stay uninitialized in this process: probe in a child. */
static gboolean probe(char *why, gsize len)
{
	int fd[2];
	if (pipe(fd) != 0) {
		g_strlcpy(why, "pipe failed", len);
		return FALSE;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(fd[0]);
		GError *e = NULL;
		gboolean ok = lh_backend_cuda.available(&e);
		if (!ok && write(fd[1], e->message, strlen(e->message)) < 0)
			_exit(2);
		_exit(ok ? 0 : 1);
	}
	close(fd[1]);
	gsize n = 0;
	ssize_t r;
	while (n + 1 < len && (r = read(fd[0], why + n, len - 1 - n)) > 0)
		n += (gsize)r;
	why[n] = 0;
	close(fd[0]);
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return FALSE;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(int argc, char **argv)
{
	char why[1024] = "";
	if (!probe(why, sizeof why)) {
		printf("SKIP: the cuda backend cannot run here: %s\n", why);
		return 77;
	}
	struct criterion_test_set *tests = criterion_initialize();
	int result = 0;
	if (criterion_handle_args(argc, argv, true))
		result = !criterion_run_all_tests(tests);
	criterion_finalize(tests);
	return result;
}
