/* lhsim tests — buffers that alias (docs/graph-format.md "Buffers", docs/engine.md "Memory"):
 * an op with an alias allocates nothing, the aliased buffer lives until the last consumer of
 * the op that allocated it, or of any op aliasing it, has ended, and peak memory counts it
 * once. Every graph runs serially on one stream on t_hw() (no host costs, no overheads), with
 * kernels of fixed durations, so every time and byte count below is worked out by hand. */
#include <criterion/criterion.h>

#include "helpers.h"

/* Runs every op of @g on one stream in index order. */
static LhTrace *run_serial(const LhGraph *g)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 s = lh_plan_add_stream(p, "s", LH_ROLE_COMPUTE);
	for (guint32 i = 0; i < lh_graph_n_ops(g); i++)
		if (lh_graph_op(g, i)->kind != LH_OP_INPUT)
			lh_plan_run(p, s, i);
	return t_sim(g, hw, p);
}

/* Device bytes in use just after instant @t (the last memory point at or before @t). */
static gint64 dev_at(const LhTrace *t, gint64 at)
{
	gint64 v = 0;
	for (guint i = 0; i < t->mem->len; i++) {
		const LhMemPoint *m = &g_array_index(t->mem, LhMemPoint, i);
		if (m->t <= at)
			v = m->device_bytes;
	}
	return v;
}

static guint32 kern(LhGraph *g, const char *name, gint64 dur, guint64 out)
{
	guint32 k = t_kernel(g, name, dur, 1);
	lh_graph_op_mut(g, k)->out_bytes = out;
	return k;
}

static void set_alias(LhGraph *g, guint32 op, guint32 alias)
{
	lh_graph_op_mut(g, op)->alias = alias;
}

Test(buffers, in_place_update_allocates_nothing_and_counts_once)
{
	/* buf (100 B, 10 ns) -> upd (writes into buf in place, 10 ns) -> use (1 B, 10 ns).
	 * Without the alias: buf 100 + upd 100 live together while upd runs: peak 200.
	 * With it: upd allocates nothing; the buffer (100 B) lives until use, the last consumer
	 * of buf or upd, ends at 30. Peak = 100 (buffer) + 1 (use's output) = 101 at t = 20. */
	for (int aliased = 0; aliased < 2; aliased++) {
		g_autoptr(LhGraph) g = lh_graph_new("t");
		guint32 b = kern(g, "buf", 10, 100);
		guint32 u = kern(g, "upd", 10, 100);
		guint32 c = kern(g, "use", 10, 1);
		t_dep(g, u, b);
		t_dep(g, c, u);
		if (aliased)
			set_alias(g, u, b);
		t_finish(g);
		g_autoptr(LhTrace) t = run_serial(g);
		cr_assert_eq(t->ops[c].end, 30);
		if (!aliased) {
			/* 0-10: buf 100; 10-20: buf + upd = 200 (buf freed when upd ends at 20);
			 * 20-30: upd 100 + use 1; use frees upd at 30, its own 1 B stays. */
			cr_expect_eq(t->peak_device, 200);
			cr_expect_eq(dev_at(t, 15), 200);
			cr_expect_eq(dev_at(t, 30), 1);
		} else {
			/* 0-20: 100 (upd adds nothing); 20-30: 100 + 1; at 30 the buffer goes. */
			cr_expect_eq(t->peak_device, 101);
			cr_expect_eq(t->peak_device_t, 20);
			cr_expect_eq(dev_at(t, 15), 100);
			cr_expect_eq(dev_at(t, 25), 101);
			cr_expect_eq(dev_at(t, 30), 1);
		}
	}
}

Test(buffers, buffer_waits_for_consumers_of_every_op_in_the_chain)
{
	/* An input w (1000 B, live from 0) updated in place twice: u1 aliases w, u2 aliases u1
	 * (a chain: u2's buffer is w's). r reads w itself and runs last (t 20-30); u2's output is
	 * read by s (t 30-40, 5 B). Order: u1 0-10, u2 10-20, r 20-30, s 30-40.
	 * The buffer's consumers: of w: u1, r; of u1: u2; of u2: s. It is freed when s ends at 40,
	 * not when r (w's last direct consumer) ends at 30. Peak: 1000 + s's 5 = 1005 at 30. */
	g_autoptr(LhGraph) g = lh_graph_new("t");
	guint32 w = t_op(g, "w", LH_OP_INPUT, 0);
	lh_graph_op_mut(g, w)->out_bytes = 1000;
	guint32 u1 = kern(g, "u1", 10, 1000);
	guint32 u2 = kern(g, "u2", 10, 1000);
	guint32 r = kern(g, "r", 10, 0);
	guint32 s = kern(g, "s", 10, 5);
	t_dep(g, u1, w);
	t_dep(g, u2, u1);
	t_dep(g, r, w);
	t_dep(g, r, u2); /* r after u2, so the order is fixed by deps too */
	t_dep(g, s, u2);
	t_dep(g, s, r);
	set_alias(g, u1, w);
	set_alias(g, u2, u1);
	t_finish(g);
	g_autoptr(LhTrace) t = run_serial(g);
	cr_assert_eq(t->ops[s].end, 40);
	cr_expect_eq(dev_at(t, 0), 1000);  /* w from t = 0 */
	cr_expect_eq(dev_at(t, 15), 1000); /* u1, u2 add nothing */
	cr_expect_eq(dev_at(t, 35), 1005); /* still there after r, the last reader of w */
	cr_expect_eq(dev_at(t, 40), 5);    /* freed when s ends */
	cr_expect_eq(t->peak_device, 1005);
	cr_expect_eq(t->peak_device_t, 30);
}

Test(buffers, an_unconsumed_alias_keeps_the_buffer_to_the_end)
{
	/* a (64 B) -> b aliases a, and nobody reads b (a module output written in place). c reads
	 * only a and ends at 30 (the one stream runs a, b, c in that order). Counting a's
	 * consumers alone, the buffer would go at 30; it lives to the end, like any output nobody
	 * consumes. */
	g_autoptr(LhGraph) g = lh_graph_new("t");
	guint32 a = kern(g, "a", 10, 64);
	guint32 b = kern(g, "b", 10, 64);
	guint32 c = kern(g, "c", 10, 0);
	t_dep(g, b, a);
	t_dep(g, c, a);
	set_alias(g, b, a);
	t_finish(g);
	g_autoptr(LhTrace) t = run_serial(g);
	cr_assert_eq(t->ops[c].end, 30);
	cr_expect_eq(dev_at(t, 30), 64);
	cr_expect_eq(t->peak_device, 64);
}

Test(buffers, host_buffers_alias_in_host_memory)
{
	/* h is a 4096 B host buffer (copy-d2h of k's 4096 B); hu updates it in place (a d2h of
	 * 16 B into it, aliasing h). Host peak 4096, not 8192. Times (t_hw: PCIe 10 GB/s = 10 B/ns,
	 * no latency): k 0-10, h 10-420 (4096 / 10 = 409.6, rounded up), hu 420-422 (16 / 10). */
	g_autoptr(LhGraph) g = lh_graph_new("t");
	guint32 k = kern(g, "k", 10, 4096);
	guint32 h = t_op(g, "h", LH_OP_COPY_D2H, 4096);
	lh_graph_op_mut(g, h)->out_bytes = 4096;
	guint32 hu = t_op(g, "hu", LH_OP_COPY_D2H, 16);
	lh_graph_op_mut(g, hu)->out_bytes = 4096;
	t_dep(g, h, k);
	t_dep(g, hu, h);
	set_alias(g, hu, h);
	t_finish(g);
	g_autoptr(LhTrace) t = run_serial(g);
	cr_assert_eq(t->ops[hu].end, 422);
	cr_expect_eq(t->peak_host, 4096);
}

/* A curve of 200 001 points, longer than the stretches of room that the engine's helper writes
 * ahead of the engine (sim/engine.c, mem_room: 4 MiB, 174 762 points, at a time), checked
 * point by point. A chain of N = 200 000 kernels of 1000 ns, op k's output k + 1 bytes, each
 * consumed by the next op only:
 * - t = 0: op 0 starts, 1 byte in use;
 * - t = 1000 k (0 < k < N): op k - 1 ends and frees op k - 2's output (its last consumer),
 *   op k starts: outputs k - 1 and k live, k + (k + 1) = 2k + 1 bytes;
 * - t = 1000 N: op N - 1 ends and frees output N - 2; its own (N bytes) has no consumer and
 *   stays to the end.
 * Every instant's total differs from the one before, so each is a point: N + 1 of them. The
 * peak is the last start's, 2 (N - 1) + 1 bytes at 1000 (N - 1).
 * The op timings and issue times (6.4 MB and 1.6 MB, also written first by that helper,
 * sim/trace-private.h) are checked too: t_hw() has no host costs, so the host issues
 * every command at 0; op k runs from 1000 k to 1000 (k + 1) on stream 0, on the SMs. An input
 * of no bytes, added last, never runs: its timing is the unset one. */
Test(buffers, long_run_has_every_point_and_timing)
{
	/* The engine's helper sleeps 2 ms before each 256 KiB it writes (sim/pages-private.h):
	 * the host, which issues every command at 0, and the curve overtake it and must wait. */
	g_setenv("LHSIM_PAGES_LAG_US", "2000", TRUE);
	const guint32 N = 200000;
	g_autoptr(LhGraph) g = lh_graph_new("chain");
	for (guint32 k = 0; k < N; k++) {
		char name[32];
		g_snprintf(name, sizeof name, "k%u", k);
		kern(g, name, 1000, k + 1);
		if (k)
			t_dep(g, k, k - 1);
	}
	guint32 in = t_op(g, "in", LH_OP_INPUT, 0);
	t_finish(g);
	g_autoptr(LhTrace) t = run_serial(g);
	cr_assert_eq(t->n_cmds, N);
	for (guint32 k = 0; k < N; k++) {
		const LhOpTiming *o = &t->ops[k];
		if (t->cmd_issue[k] != 0 || o->issue != 0 || o->start != 1000 * (gint64)k ||
		    o->end != 1000 * (gint64)(k + 1) || o->stream != 0 ||
		    o->engine != LH_ENGINE_SM || o->engine_index != 0)
			cr_assert_fail("op %u: issued %" G_GINT64_FORMAT
			               " (command %" G_GINT64_FORMAT "), %" G_GINT64_FORMAT
			               " - %" G_GINT64_FORMAT " on stream %d, engine %u",
			               k, o->issue, t->cmd_issue[k], o->start, o->end, o->stream,
			               o->engine);
	}
	const LhOpTiming *oi = &t->ops[in];
	cr_assert(oi->issue == -1 && oi->start == -1 && oi->end == -1 && oi->stream == -1 &&
	          oi->engine == LH_ENGINE_NONE && oi->engine_index == 0);
	cr_assert_eq(t->mem->len, N + 1);
	const LhMemPoint *m = (const LhMemPoint *)(const void *)t->mem->data;
	cr_assert_eq(m[0].t, 0);
	cr_assert_eq(m[0].device_bytes, 1);
	for (guint32 k = 1; k < N; k++) {
		if (m[k].t != 1000 * (gint64)k || m[k].device_bytes != 2 * (gint64)k + 1 ||
		    m[k].host_bytes != 0)
			cr_assert_fail("point %u: t %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
			               " B device, %" G_GINT64_FORMAT " B host",
			               k, m[k].t, m[k].device_bytes, m[k].host_bytes);
	}
	cr_assert_eq(m[N].t, 1000 * (gint64)N);
	cr_assert_eq(m[N].device_bytes, N);
	cr_assert_eq(t->peak_device, 2 * (gint64)(N - 1) + 1);
	cr_assert_eq(t->peak_device_t, 1000 * (gint64)(N - 1));
}
