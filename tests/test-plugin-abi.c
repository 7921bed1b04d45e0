/* lhsim tests — the plugin ABI across versions and the plan builder, from a plugin's side
 * (docs/api.md). The plugins are built by tests/meson.build: plugin-abi2.c (the ABI-2 table
 * layout, and with versions 1 and 4, which must be refused) and plugin-builder.c (this ABI,
 * with the plan builder and a `supports` slot). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "helpers.h"

static char *plugin(const char *file)
{
	const char *dir = g_getenv("LHSIM_TEST_PLUGINS");
	cr_assert(dir, "LHSIM_TEST_PLUGINS is not set (run the tests through meson test)");
	return g_build_filename(dir, file, NULL);
}

/* w is an input; up is a host-to-device copy; a, b, c are kernels; down a device-to-host copy:
 *   a <- w;  b <- a, up;  down <- b;  c <- a, up.
 * Program order w a up b down c is also lh_graph_topo()'s order (every dep comes first). */
static LhGraph *copy_graph(void)
{
	LhGraph *g = lh_graph_new("copies");
	guint32 w = t_op(g, "w", LH_OP_INPUT, 0);
	guint32 a = t_kernel(g, "a", 10, 1);
	guint32 up = t_op(g, "up", LH_OP_COPY_H2D, 1000);
	guint32 b = t_kernel(g, "b", 10, 1);
	guint32 down = t_op(g, "down", LH_OP_COPY_D2H, 1000);
	guint32 c = t_kernel(g, "c", 10, 1);
	t_dep(g, a, w);
	t_dep(g, b, a);
	t_dep(g, b, up);
	t_dep(g, down, b);
	t_dep(g, c, a);
	t_dep(g, c, up);
	t_finish(g);
	return g;
}

/* The plan's commands as "run main a" lines, without the header and comments. */
static char *cmds_text(const LhPlan *p, const LhGraph *g)
{
	g_autofree char *text = lh_plan_to_data(p, g);
	GString *s = g_string_new(NULL);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l; l++)
		if (g_str_has_prefix(*l, "run ") || g_str_has_prefix(*l, "signal ") ||
		    g_str_has_prefix(*l, "wait ") || g_str_has_prefix(*l, "host ") ||
		    g_str_has_prefix(*l, "sync "))
			g_string_append_printf(s, "%s\n", *l);
	return g_string_free(s, FALSE);
}

Test(abi, old_plugin_loads_and_runs)
{
	g_autofree char *so = plugin("abi2-plugin.so");
	g_autoptr(GError) e = NULL;
	const LhScheduler *s = lh_scheduler_load_plugin(so, &e);
	cr_assert(s, "%s", e ? e->message : "");
	cr_assert_str_eq(s->name, "abi2");
	cr_assert_eq(s->version, 2, "the registry keeps the version the plugin was built for");
	cr_assert_null(s->supports, "a slot ABI 2 does not have is absent");
	cr_assert_str_eq(s->params[0].name, "unused");
	cr_assert_str_eq(lh_scheduler_plugin_path(s), so);
	cr_assert_eq(lh_scheduler_find("abi2"), s);

	g_autoptr(LhGraph) g = copy_graph();
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	cr_assert(lh_scheduler_supports(s, g, hw, &e), "no supports slot: every graph");
	g_autoptr(LhPlan) p = lh_scheduler_run(s, g, hw, NULL, NULL, &e);
	cr_assert(p, "%s", e ? e->message : "");
	cr_assert(lh_plan_validate(p, g, NULL, &e), "%s", e ? e->message : "");
	cr_assert_str_eq(lh_plan_scheduler(p), "abi2");
	/* By hand, in program order: a on main; up on copy, consumed on main (b, c): signal e0;
	 * b waits e0, runs, and signals e1 for down on copy; down waits e1; c waits e0 again
	 * (this plugin does not track what main already waited for). */
	g_autofree char *got = cmds_text(p, g);
	cr_assert_str_eq(got, "run main a\n"
	                      "run copy up\n"
	                      "signal copy e0\n"
	                      "wait main e0\n"
	                      "run main b\n"
	                      "signal main e1\n"
	                      "wait copy e1\n"
	                      "run copy down\n"
	                      "wait main e0\n"
	                      "run main c\n");
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	cr_assert_gt(t->ops[t_id(g, "c")].end, 0);
}

Test(abi, old_plugin_runs_from_the_command_line)
{
	g_autofree char *so = plugin("abi2-plugin.so");
	g_autofree char *out = NULL, *err = NULL;
	int rc = t_lhsim(&out, &err, "run", "--plugin", so, "--sched", "abi2", "--json", NULL);
	cr_assert_eq(rc, 0, "%s", err);
	cr_assert(strstr(out, "\"scheduler\": \"abi2\""), "%s", out);
}

Test(abi, versions_outside_the_range_are_refused)
{
	const char *files[] = {"abi1-plugin.so", "abi4-plugin.so"};
	const guint32 version[] = {1, 4};
	for (guint k = 0; k < 2; k++) {
		g_autofree char *so = plugin(files[k]);
		g_autoptr(GError) e = NULL;
		cr_assert_null(lh_scheduler_load_plugin(so, &e), "%s loaded", files[k]);
		cr_assert(g_error_matches(e, LH_SCHED_ERROR, LH_SCHED_ERROR_PLUGIN));
		g_autofree char *want = g_strdup_printf(
		    "%s: wrong ABI version: the plugin was built for scheduler ABI %u, this "
		    "lhsim loads ABI %u to %u",
		    so, version[k], LH_SCHEDULER_ABI_MIN, LH_SCHEDULER_ABI);
		cr_assert(g_str_has_prefix(e->message, want), "%s", e->message);
	}
	cr_assert_null(lh_scheduler_find("abi2"), "a refused plugin is not registered");
}

Test(abi, builder_plugin_plans_and_supports)
{
	g_autofree char *so = plugin("builder-plugin.so");
	g_autoptr(GError) e = NULL;
	const LhScheduler *s = lh_scheduler_load_plugin(so, &e);
	cr_assert(s, "%s", e ? e->message : "");
	cr_assert_eq(s->version, LH_SCHEDULER_ABI);
	cr_assert_not_null(s->supports);
	g_autoptr(LhGraph) g = copy_graph();
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(LhPlan) p = lh_scheduler_run(s, g, hw, NULL, NULL, &e);
	cr_assert(p, "%s", e ? e->message : "");
	cr_assert(lh_plan_validate(p, g, NULL, &e), "%s", e ? e->message : "");
	/* The builder, by hand, in topological order w a up b down c (stream positions in
	 * brackets): a main[0], no cross deps, its consumers b and c are on main: no signal.
	 * up copy[0]: consumers on main: signal e0. b main[1]: dep up is copy[0], main has
	 * waited for nothing on copy: wait e0 (main covers copy up to position 0); consumer
	 * down is on copy: signal e1. down copy[1]: dep b is main[1]: wait e1. c main[2]: dep
	 * up is copy[0], already covered by main's wait on e0: no wait; no consumer: no
	 * signal. */
	g_autofree char *got = cmds_text(p, g);
	cr_assert_str_eq(got, "run main a\n"
	                      "run copy up\n"
	                      "signal copy e0\n"
	                      "wait main e0\n"
	                      "run main b\n"
	                      "signal main e1\n"
	                      "wait copy e1\n"
	                      "run copy down\n"
	                      "run main c\n");
	cr_assert_eq(lh_plan_n_events(p), 2);

	/* A collective: turned down by the plugin's supports slot, before planning. */
	g_autoptr(LhGraph) g2 = lh_graph_new("coll");
	guint32 k = t_kernel(g2, "k", 10, 1);
	guint32 ar = t_op(g2, "ar", LH_OP_ALL_REDUCE, 1000);
	t_dep(g2, ar, k);
	t_finish(g2);
	g_clear_error(&e);
	cr_assert_not(lh_scheduler_supports(s, g2, hw, &e));
	cr_assert(g_error_matches(e, LH_SCHED_ERROR, LH_SCHED_ERROR_UNSUPPORTED));
	g_clear_error(&e);
	cr_assert_null(lh_scheduler_run(s, g2, hw, NULL, NULL, &e));
	cr_assert(g_error_matches(e, LH_SCHED_ERROR, LH_SCHED_ERROR_UNSUPPORTED));
	cr_assert(strstr(e->message, "op 'ar' is a all-reduce"), "%s", e->message);
}

/* Kernels x, y, z, q (finished): y <- x; z <- x; q <- y, z. */
static LhGraph *diamond(guint32 *x, guint32 *y, guint32 *z, guint32 *q)
{
	LhGraph *g = lh_graph_new("diamond");
	*x = t_kernel(g, "x", 10, 1);
	*y = t_kernel(g, "y", 10, 1);
	*z = t_kernel(g, "z", 10, 1);
	*q = t_kernel(g, "q", 10, 1);
	t_dep(g, *y, *x);
	t_dep(g, *z, *x);
	t_dep(g, *q, *y);
	t_dep(g, *q, *z);
	t_finish(g);
	return g;
}

/* The builder called directly: three streams, an order that is not program order. */
Test(builder, three_streams_by_hand)
{
	/* x, y, z, q kernels: y <- x; z <- x; q <- y, z. Streams: x s0, y s1, z s2, q s0.
	 * Order x, z, y, q. x s0[0]: consumers y (s1) and z (s2): signal e0. z s2[0]: wait e0;
	 * consumer q on s0: signal e1. y s1[0]: wait e0; consumer q on s0: signal e2.
	 * q s0[1]: dep y s1[0]: wait e2; dep z s2[0]: wait e1 (deps in graph order: y, z). */
	guint32 x, y, z, q;
	g_autoptr(LhGraph) g = diamond(&x, &y, &z, &q);
	g_autoptr(LhPlan) p = lh_plan_new();
	for (guint32 i = 0; i < 3; i++) {
		g_autofree char *name = g_strdup_printf("s%u", i);
		lh_plan_add_stream(p, name, LH_ROLE_COMPUTE);
	}
	guint32 stream[4];
	stream[x] = 0;
	stream[y] = 1;
	stream[z] = 2;
	stream[q] = 0;
	const guint32 order[] = {x, z, y, q};
	g_autoptr(GError) e = NULL;
	cr_assert(lh_plan_add_list_schedule(p, g, stream, order, 4, &e), "%s", e ? e->message : "");
	cr_assert(lh_plan_validate(p, g, NULL, &e), "%s", e ? e->message : "");
	g_autofree char *got = cmds_text(p, g);
	cr_assert_str_eq(got, "run s0 x\n"
	                      "signal s0 e0\n"
	                      "wait s2 e0\n"
	                      "run s2 z\n"
	                      "signal s2 e1\n"
	                      "wait s1 e0\n"
	                      "run s1 y\n"
	                      "signal s1 e2\n"
	                      "wait s0 e2\n"
	                      "wait s0 e1\n"
	                      "run s0 q\n");
}

/* A bad order found only after commands and events were made (the builder issues as it
 * checks): the plan is left as it was, commands and events, and a good call after it numbers
 * its events from there. */
Test(builder, bad_order_late_leaves_the_plan_as_it_was)
{
	guint32 x, y, z, q;
	g_autoptr(LhGraph) g = diamond(&x, &y, &z, &q);
	g_autoptr(LhPlan) p = lh_plan_new();
	lh_plan_add_stream(p, "s0", LH_ROLE_COMPUTE);
	lh_plan_add_stream(p, "s1", LH_ROLE_COMPUTE);
	lh_plan_host(p, 7);
	cr_assert_eq(lh_plan_new_event(p), 0);
	guint32 stream[4];
	stream[x] = 0;
	stream[y] = 1;
	stream[z] = 0;
	stream[q] = 0;
	/* x signals (y is on s1), y waits and runs: then q is missing. */
	const guint32 bad[] = {x, y, z};
	g_autoptr(GError) e = NULL;
	cr_assert_not(lh_plan_add_list_schedule(p, g, stream, bad, 3, &e));
	cr_assert(strstr(e->message, "op 'q' is missing from the order"), "%s", e->message);
	cr_assert_eq(lh_plan_n_cmds(p), 1);
	cr_assert_eq(lh_plan_n_events(p), 1);
	/* x s0[0] signals e1 (its consumer y is on s1); y waits e1 and signals e2 (its
	 * consumer q is on s0); z s0[1] needs nothing; q s0[2] waits e2 (dep y), not for z. */
	const guint32 good[] = {x, y, z, q};
	g_clear_error(&e);
	cr_assert(lh_plan_add_list_schedule(p, g, stream, good, 4, &e), "%s", e ? e->message : "");
	g_autofree char *got = cmds_text(p, g);
	cr_assert_str_eq(got, "host 7\n"
	                      "run s0 x\n"
	                      "signal s0 e1\n"
	                      "wait s1 e1\n"
	                      "run s1 y\n"
	                      "signal s1 e2\n"
	                      "run s0 z\n"
	                      "wait s0 e2\n"
	                      "run s0 q\n");
	cr_assert_eq(lh_plan_n_events(p), 3);
}

/* Any stream number is a stream, to be checked: 0xfffffffe is not taken for "an input". */
Test(builder, every_stream_number_is_checked)
{
	g_autoptr(LhGraph) g = lh_graph_new("pair");
	guint32 a = t_kernel(g, "a", 10, 1), b = t_kernel(g, "b", 10, 1);
	t_dep(g, b, a);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	lh_plan_add_stream(p, "s0", LH_ROLE_COMPUTE);
	guint32 stream[2];
	stream[a] = 0xfffffffe;
	stream[b] = 0;
	const guint32 order[] = {a, b};
	g_autoptr(GError) e = NULL;
	cr_assert_not(lh_plan_add_list_schedule(p, g, stream, order, 2, &e));
	cr_assert(
	    strstr(e->message, "op 'a' is assigned stream 4294967294, but the plan has 1 streams"),
	    "%s", e->message);
	cr_assert_eq(lh_plan_n_cmds(p), 0);
}

Test(builder, bad_input_appends_nothing)
{
	g_autoptr(LhGraph) g = copy_graph();
	guint32 n = lh_graph_n_ops(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	lh_plan_add_stream(p, "main", LH_ROLE_COMPUTE);
	g_autofree guint32 *stream = g_new0(guint32, n);
	struct {
		const char *order;  /* op names, space-separated */
		guint32 bad_stream; /* op index given stream 5, or G_MAXUINT32 */
		const char *want;
	} cases[] = {
	    {"a up b down", G_MAXUINT32, "op 'c' is missing from the order"},
	    {"a up b down c a", G_MAXUINT32, "op 'a' appears twice in the order (entries 0 and 5)"},
	    {"a b up down c", G_MAXUINT32, "op 'b' comes before its dep 'up' in the order"},
	    {"a up b down c", 1, "op 'a' is assigned stream 5, but the plan has 1 streams"},
	};
	for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
		g_auto(GStrv) names = g_strsplit(cases[k].order, " ", -1);
		guint32 m = g_strv_length(names);
		g_autofree guint32 *order = g_new(guint32, m);
		for (guint32 i = 0; i < m; i++)
			order[i] = t_id(g, names[i]);
		for (guint32 i = 0; i < n; i++)
			stream[i] = cases[k].bad_stream == i ? 5 : 0;
		g_autoptr(GError) e = NULL;
		cr_assert_not(lh_plan_add_list_schedule(p, g, stream, order, m, &e), "case %u", k);
		cr_assert(g_error_matches(e, LH_PLAN_ERROR, LH_PLAN_ERROR_INVALID));
		cr_assert(strstr(e->message, cases[k].want), "case %u: %s", k, e->message);
		cr_assert_eq(lh_plan_n_cmds(p), 0, "case %u appended commands", k);
	}
	const guint32 out_of_range[] = {99};
	g_autoptr(GError) e = NULL;
	cr_assert_not(lh_plan_add_list_schedule(p, g, stream, out_of_range, 1, &e));
	cr_assert(strstr(e->message, "order entry 0 is op 99, but the graph has 6 ops"), "%s",
	          e->message);
}

/* The op and hardware accessors a plugin reads instead of struct fields. */
Test(builder, accessors_read_the_fields)
{
	g_autoptr(LhGraph) g = copy_graph();
	const LhOp *up = t_op_named(g, "up"), *a = t_op_named(g, "a");
	cr_assert_str_eq(lh_op_name(up), "up");
	cr_assert_eq(lh_op_kind(up), LH_OP_COPY_H2D);
	cr_assert_eq(lh_op_size(up), 1000);
	cr_assert_eq(lh_op_duration_ns(a), 10);
	cr_assert_eq(lh_op_kind(a), LH_OP_KERNEL);
	cr_assert_not(lh_op_gemm_shape(a, NULL, NULL, NULL, NULL));
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	cr_assert_eq(lh_hw_get(hw, "sm_count"), (double)hw->sm_count);
	cr_assert_eq(lh_hw_get(hw, "pcie_gbs"), hw->pcie_gbs);
	cr_assert_eq(lh_hw_get(hw, "sm_sharing"), 1);
	cr_assert(isnan(lh_hw_get(hw, "no_such_key")));
	cr_assert_str_eq(lh_hw_name(hw), hw->name);
}
