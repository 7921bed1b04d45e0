/* lhsim tests — readers and validation: every class of bad input in docs/graph-format.md#errors,
 * every kind of plan violation (docs/plan-format.md#validation), bad hardware descriptions; each error names
 * FILE:LINE:COL. Also round trips of the writers. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>

#include "helpers.h"

/* ---- graph JSON ---- */

typedef struct {
	char label[32];
	char json[400];
	char where[16];  /* expected "LINE:COL" after the file name */
	char needle[64]; /* expected in the message */
} BadGraph;

#define HDR "{\"format\": \"lhsim-graph\", \"version\": 1, \"ops\": [\n"

ParameterizedTestParameters(readers, bad_graph)
{
	static BadGraph cases[] = {
		{"syntax", HDR "{\"name\": \"a\" \"kind\": \"kernel\"}\n]}", "2:", "Parse error"},
		{"unknown kind", HDR "{\"name\": \"a\",\n \"kind\": \"kernal\", \"flops\": 1}\n]}",
		 "3:", "unknown kind 'kernal'"},
		{"unknown dep", HDR "{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 1,\n"
				    " \"deps\": [\"zz\"]}\n]}",
		 "3:", "unknown dep 'zz'"},
		{"duplicate", HDR "{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 1},\n"
				  "{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 1}\n]}",
		 "3:", "duplicate op name 'a'"},
		{"negative", HDR "{\"name\": \"a\", \"kind\": \"kernel\",\n \"flops\": -5}\n]}", "3:",
		 "'flops' must be finite and >= 0"},
		{"non-finite", HDR "{\"name\": \"a\", \"kind\": \"kernel\",\n \"bytes\": 1e999}\n]}", "3:",
		 "'bytes' must be finite"},
		{"sm range", HDR "{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 1,\n \"sm\": 1.5}\n]}",
		 "3:", "sm must be in (0, 1]"},
		{"cycle", HDR "{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 1, \"deps\": [\"b\"]},\n"
			      "{\"name\": \"b\", \"kind\": \"kernel\", \"flops\": 1, \"deps\": [\"a\"]}\n]}",
		 "3:", "cycle: 'b' -> 'a' -> 'b'"},
		{"missing name", HDR "{\"kind\": \"kernel\", \"flops\": 1}\n]}", "2:",
		 "missing required field 'name'"},
		{"missing kind", HDR "{\"name\": \"a\", \"flops\": 1}\n]}", "2:",
		 "missing required field 'kind'"},
		{"missing size", HDR "{\"name\": \"c\", \"kind\": \"copy-h2d\"}\n]}", "2:",
		 "missing required field 'size'"},
		{"missing group", HDR "{\"name\": \"c\", \"kind\": \"all-reduce\", \"size\": 8}\n]}", "2:",
		 "missing required field 'group'"},
		{"unknown field", HDR "{\"name\": \"a\", \"kind\": \"kernel\",\n \"flop\": 1}\n]}", "3:",
		 "unknown field 'flop'"},
		{"wrong type", HDR "{\"name\": \"a\", \"kind\": \"kernel\",\n \"flops\": \"many\"}\n]}",
		 "3:", "'flops' must be a number"},
		{"bad format", "{\"format\": \"other\", \"version\": 1, \"ops\": []}", "1:",
		 "\"format\" must be \"lhsim-graph\""},
		{"bad version", "{\"format\": \"lhsim-graph\",\n \"version\": 2, \"ops\": []}", "2:",
		 "\"version\" must be 1"},
		{"no ops", "{\"format\": \"lhsim-graph\", \"version\": 1}", "1:1",
		 "missing required field \"ops\""},
		{"fractional size", HDR "{\"name\": \"c\", \"kind\": \"copy-h2d\",\n \"size\": 1.5}\n]}",
		 "3:", "must be a whole number"},
		{"empty", "", "1:1", "the top level must be an object"},
	};
	return cr_make_param_array(BadGraph, cases, G_N_ELEMENTS(cases));
}

ParameterizedTest(BadGraph *c, readers, bad_graph)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(LhGraph) g = lh_graph_new_from_json_data(c->json, -1, "bad.json", &e);
	cr_assert_null(g, "%s: accepted", c->label);
	cr_assert_not_null(e);
	g_autofree char *prefix = g_strdup_printf("bad.json:%s", c->where);
	cr_expect(g_str_has_prefix(e->message, prefix), "%s: '%s' does not start with '%s'",
		  c->label, e->message, prefix);
	/* FILE:LINE:COL: three fields, numbers in the last two. */
	g_auto(GStrv) parts = g_strsplit(e->message, ":", 4);
	cr_assert(g_strv_length(parts) >= 4, "%s: %s", c->label, e->message);
	cr_expect(g_ascii_isdigit(parts[1][0]) && g_ascii_isdigit(parts[2][0]), "%s: %s", c->label,
		  e->message);
	cr_expect(strstr(e->message, c->needle) != NULL, "%s: '%s' lacks '%s'", c->label,
		  e->message, c->needle);
}

Test(readers, graph_json_round_trip)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(LhGraph) g = lh_gen_workload("moe-offload", NULL, &e);
	cr_assert_not_null(g);
	g_autofree char *j1 = lh_graph_to_json(g);
	g_autoptr(LhGraph) g2 = lh_graph_new_from_json_data(j1, -1, "rt.json", &e);
	cr_assert_not_null(g2, "%s", e ? e->message : "");
	g_autofree char *j2 = lh_graph_to_json(g2);
	cr_expect_str_eq(j1, j2);
	cr_expect_eq(lh_graph_n_ops(g), lh_graph_n_ops(g2));
	/* Numbers survive exactly (shortest round-trip text). */
	for (guint32 i = 0; i < lh_graph_n_ops(g); i++) {
		cr_expect(lh_graph_op(g, i)->flops == lh_graph_op(g2, i)->flops);
		cr_expect(lh_graph_op(g, i)->bytes == lh_graph_op(g2, i)->bytes);
	}
}

/* ---- plan text ---- */

static LhGraph *plan_graph(void)
{
	LhGraph *g = lh_graph_new("pg");
	guint32 in = lh_graph_add_op(g, "in", LH_OP_INPUT);
	guint32 a = t_kernel(g, "a", 10, 1.0);
	guint32 b = t_kernel(g, "b", 10, 1.0);
	t_dep(g, a, in);
	t_dep(g, b, a);
	t_finish(g);
	return g;
}

typedef struct {
	char label[32];
	char text[300];
	char where[16];
	char needle[80];
} BadPlan;

#define PH "lhsim-plan 1\nstream s0 compute\nstream s1 compute\n"

ParameterizedTestParameters(readers, bad_plan)
{
	static BadPlan cases[] = {
		/* parse errors */
		{"header", "lhsim-plan 2\n", "1:12", "unsupported plan version"},
		{"no header", "stream s0 compute\n", "1:1", "expected the header"},
		{"unknown command", PH "launch s0 a\n", "4:1", "unknown command 'launch'"},
		{"unknown stream", PH "run s9 a\n", "4:5", "unknown stream 's9'"},
		{"unknown op", PH "run s0 zz\n", "4:8", "no op named 'zz'"},
		{"bad role", "lhsim-plan 1\nstream s0 gpu\n", "2:11", "unknown stream role"},
		{"host not number", PH "host -5\n", "4:6", "not a whole number"},
		{"too few words", PH "run s0\n", "4:1", "usage: run STREAM OP"},
		{"stream twice", PH "stream s0 compute\n", "4:8", "declared twice"},
		/* violations found by lh_plan_validate */
		{"runs twice", PH "run s0 a\nrun s0 a\nrun s0 b\n", "5:1", "runs twice"},
		{"never runs", PH "run s0 a\n", "4:1", "'b' (kernel) never runs"},
		{"input runs", PH "run s0 in\nrun s0 a\nrun s0 b\n", "4:1", "is an input"},
		{"unordered dep", PH "run s0 a\nrun s1 b\n", "5:1", "may start before its dep 'a'"},
		{"wrong order", PH "run s0 b\nrun s0 a\n", "4:1", "may start before its dep 'a'"},
		{"never signaled", PH "run s0 a\nwait s1 e7\nrun s1 b\n", "5:1", "never signaled"},
		{"named event", PH "run s0 a\nwait s1 ready\nrun s1 b\n", "5:1",
		 "'wait s1 ready': event ready is never signaled"},
		{"signaled twice", PH "run s0 a\nsignal s0 e1\nsignal s1 e1\nwait s1 e1\nrun s1 b\n",
		 "6:1", "signaled twice"},
		{"deadlock", PH "wait s0 e1\nrun s0 a\nsignal s0 e0\nwait s1 e0\nrun s1 b\nsignal s1 e1\n",
		 "4:1", "deadlocks"},
		{"sync deadlock", PH "run s0 a\nwait s1 e0\nsync s1\nsignal s0 e0\nrun s1 b\n", "5:1",
		 "deadlocks"},
	};
	return cr_make_param_array(BadPlan, cases, G_N_ELEMENTS(cases));
}

ParameterizedTest(BadPlan *c, readers, bad_plan)
{
	g_autoptr(LhGraph) g = plan_graph();
	g_autoptr(GError) e = NULL;
	g_autoptr(LhPlan) p = lh_plan_new_from_data(c->text, strlen(c->text), "bad.plan", g, &e);
	if (p) {
		cr_assert(!lh_plan_validate(p, g, NULL, &e), "%s: accepted", c->label);
	}
	cr_assert_not_null(e, "%s", c->label);
	g_autofree char *prefix = g_strdup_printf("bad.plan:%s", c->where);
	cr_expect(g_str_has_prefix(e->message, prefix), "%s: '%s' does not start with '%s'",
		  c->label, e->message, prefix);
	cr_expect(g_regex_match_simple("^bad\\.plan:[0-9]+:[0-9]+: ", e->message, 0, 0),
		  "%s: no FILE:LINE:COL in '%s'", c->label, e->message);
	cr_expect(strstr(e->message, c->needle) != NULL, "%s: '%s' lacks '%s'", c->label,
		  e->message, c->needle);
}

Test(readers, good_plan_and_round_trip)
{
	g_autoptr(LhGraph) g = plan_graph();
	const char *text = PH "# a comment\nrun s0 a  # trailing comment\nsignal s0 done\n"
			      "wait s1 done\nhost 250\nrun s1 b\nsync s1\n";
	g_autoptr(GError) e = NULL;
	g_autoptr(LhPlan) p = lh_plan_new_from_data(text, strlen(text), "ok.plan", g, &e);
	cr_assert_not_null(p, "%s", e ? e->message : "");
	cr_assert(lh_plan_validate(p, g, NULL, &e), "%s", e ? e->message : "");
	cr_expect_eq(lh_plan_n_cmds(p), 6);
	cr_expect_eq(lh_plan_n_streams(p), 2);
	cr_expect_eq(p->n_events, 1);
	cr_expect_eq(lh_plan_cmd(p, 3)->kind, LH_CMD_HOST);
	cr_expect_eq(lh_plan_cmd(p, 3)->arg, 250);
	g_autofree char *out = lh_plan_to_data(p, g);
	g_autoptr(LhPlan) p2 = lh_plan_new_from_data(out, strlen(out), "rt.plan", g, &e);
	cr_assert_not_null(p2, "%s", e ? e->message : "");
	g_autofree char *out2 = lh_plan_to_data(p2, g);
	cr_expect_str_eq(out, out2);
	cr_expect(memcmp(p->cmds->data, p2->cmds->data, sizeof(LhCmd) * lh_plan_n_cmds(p)) == 0);
}

/* ---- hardware .ini ---- */

static char *hw_text(const char *key, const char *value)
{
	lh_models_init();
	const char *base = lh_hw_builtin_data("h100-sxm");
	cr_assert_not_null(base);
	GString *s = g_string_new(NULL);
	g_auto(GStrv) lines = g_strsplit(base, "\n", -1);
	for (guint i = 0; lines[i]; i++) {
		if (g_str_has_prefix(lines[i], key) && lines[i][strlen(key)] == ' ') {
			if (value)
				g_string_append_printf(s, "%s = %s\n", key, value);
			continue;
		}
		g_string_append_printf(s, "%s\n", lines[i]);
	}
	return g_string_free(s, FALSE);
}

typedef struct {
	char key[32];
	char value[16]; /* empty: remove the key */
	char needle[64];
} BadHw;

ParameterizedTestParameters(readers, bad_hw)
{
	static BadHw cases[] = {
		{"hbm_gbs", "0", "'hbm_gbs' = 0 is out of range"},
		{"pcie_gbs", "-3", "'pcie_gbs' = -3 is out of range"},
		{"copy_latency_ns", "-1", "'copy_latency_ns' = -1 is out of range"},
		{"compute_eff", "1.5", "'compute_eff' = 1.5 is out of range"},
		{"sm_count", "12.5", "'sm_count': '12.5' must be a whole number"},
		{"link_gbs", "fast", "'link_gbs': 'fast' is not a number"},
		{"sm_sharing", "random", "'sm_sharing': 'random' is not one of fifo, fair"},
		{"pcie_duplex_h2d_gbs", "60", "'pcie_duplex_h2d_gbs' = 60 GB/s exceeds pcie_gbs"},
		{"pcie_duplex_d2h_gbs", "", "missing key 'pcie_duplex_d2h_gbs'"},
		{"peak_fp8_tflops", "", "missing key 'peak_fp8_tflops'"},
		{"gemm_tile_n", "", "missing key 'gemm_tile_n'"},
		{"gemm_eff", "0", "'gemm_eff' = 0 is out of range"},
		{"gemm_tile_m", "0", "'gemm_tile_m' = 0 is out of range"},
		{"peak_f64_tflops", "-1", "'peak_f64_tflops' = -1 is out of range"},
		{"hbm_transpose_eff", "0.9", "'hbm_transpose_eff' = 0.9 exceeds hbm_eff"},
		{"step_overhead_ns", "-5", "'step_overhead_ns' = -5 is out of range"},
		{"launch_ns", "", "missing key 'launch_ns'"},
		/* A rate this small would put op durations beyond the engine's time range. */
		{"link_gbs", "1e-300", "'link_gbs' = 1e-300 is out of range"},
		{"hbm_eff", "1e-9", "'hbm_eff' = 1e-09 is out of range"},
	};
	return cr_make_param_array(BadHw, cases, G_N_ELEMENTS(cases));
}

ParameterizedTest(BadHw *c, readers, bad_hw)
{
	g_autofree char *text = hw_text(c->key, c->value[0] ? c->value : NULL);
	g_autoptr(GError) e = NULL;
	g_autoptr(LhHw) hw = lh_hw_new_from_data(text, strlen(text), "gpu.ini", &e);
	cr_assert_null(hw, "%s=%s accepted", c->key, c->value);
	cr_expect(strstr(e->message, c->needle) != NULL, "'%s' lacks '%s'", e->message, c->needle);
	cr_expect(g_str_has_prefix(e->message, "gpu.ini:"), "%s", e->message);
	if (c->value[0]) /* a present key is located: gpu.ini:LINE:1 */
		cr_expect(g_regex_match_simple("^gpu\\.ini:[0-9]+:1: ", e->message, 0, 0), "%s",
			  e->message);
}

Test(readers, builtin_hw_round_trip)
{
	lh_models_init();
	g_autofree const char **names = lh_hw_builtin_names();
	guint n = 0;
	for (; names[n]; n++) {
		g_autoptr(GError) e = NULL;
		g_autoptr(LhHw) hw = lh_hw_lookup(names[n], &e);
		cr_assert_not_null(hw, "%s: %s", names[n], e ? e->message : "");
		g_autofree char *text = lh_hw_to_data(hw);
		g_autoptr(LhHw) hw2 = lh_hw_new_from_data(text, strlen(text), "rt.ini", &e);
		cr_assert_not_null(hw2, "%s", e ? e->message : "");
		g_autofree char *text2 = lh_hw_to_data(hw2);
		cr_expect_str_eq(text, text2);
	}
	cr_expect_geq(n, 4); /* a100-sxm, h100-sxm, h200-sxm, ideal */
	g_autoptr(LhHw) h100 = lh_hw_lookup("h100-sxm", NULL);
	cr_expect_eq(h100->sm_count, 132);
	cr_expect_float_eq(h100->hbm_gbs, 3350, 1e-9);
	g_autoptr(GError) e = NULL;
	cr_expect_null(lh_hw_lookup("h900", &e));
	cr_expect(strstr(e->message, "h100-sxm") != NULL, "%s", e->message);
}
