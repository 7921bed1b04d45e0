/* lhsim tests — readers and validation: every class of bad input in docs/graph-format.md#errors,
 * every kind of plan violation (docs/plan-format.md#validation), bad hardware descriptions; each
 * error names FILE:LINE:COL. Also round trips of the writers. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>

#include "helpers.h"

static LhGraph *plan_graph(void);

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
	    {"unknown dep",
	     HDR "{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 1,\n"
	         " \"deps\": [\"zz\"]}\n]}",
	     "3:", "unknown dep 'zz'"},
	    {"duplicate",
	     HDR "{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 1},\n"
	         "{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 1}\n]}",
	     "3:", "duplicate op name 'a'"},
	    {"negative", HDR "{\"name\": \"a\", \"kind\": \"kernel\",\n \"flops\": -5}\n]}",
	     "3:", "'flops' must be finite and >= 0"},
	    {"non-finite", HDR "{\"name\": \"a\", \"kind\": \"kernel\",\n \"bytes\": 1e999}\n]}",
	     "3:", "'bytes' must be finite"},
	    {"sm range",
	     HDR "{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 1,\n \"sm\": 1.5}\n]}",
	     "3:", "sm must be in (0, 1]"},
	    {"cycle",
	     HDR "{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 1, \"deps\": [\"b\"]},\n"
	         "{\"name\": \"b\", \"kind\": \"kernel\", \"flops\": 1, \"deps\": [\"a\"]}\n]}",
	     "3:", "cycle: 'b' -> 'a' -> 'b'"},
	    {"missing name", HDR "{\"kind\": \"kernel\", \"flops\": 1}\n]}",
	     "2:", "missing required field 'name'"},
	    {"missing kind", HDR "{\"name\": \"a\", \"flops\": 1}\n]}",
	     "2:", "missing required field 'kind'"},
	    {"missing size", HDR "{\"name\": \"c\", \"kind\": \"copy-h2d\"}\n]}",
	     "2:", "missing required field 'size'"},
	    {"missing group", HDR "{\"name\": \"c\", \"kind\": \"all-reduce\", \"size\": 8}\n]}",
	     "2:", "missing required field 'group'"},
	    {"unknown field", HDR "{\"name\": \"a\", \"kind\": \"kernel\",\n \"flop\": 1}\n]}",
	     "3:", "unknown field 'flop'"},
	    {"wrong type", HDR "{\"name\": \"a\", \"kind\": \"kernel\",\n \"flops\": \"many\"}\n]}",
	     "3:", "'flops' must be a number"},
	    {"bad format", "{\"format\": \"other\", \"version\": 1, \"ops\": []}",
	     "1:", "\"format\" must be \"lhsim-graph\""},
	    {"bad version", "{\"format\": \"lhsim-graph\",\n \"version\": 2, \"ops\": []}",
	     "2:", "\"version\" must be 1"},
	    {"no ops", "{\"format\": \"lhsim-graph\", \"version\": 1}", "1:1",
	     "missing required field \"ops\""},
	    {"fractional size",
	     HDR "{\"name\": \"c\", \"kind\": \"copy-h2d\",\n \"size\": 1.5}\n]}",
	     "3:", "must be a whole number"},
	    {"empty", "", "1:1", "the top level must be an object"},
	    /* json-glib keeps the last of repeated keys: in an op and at the top level. */
	    {"repeated key",
	     HDR "{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 1,\n"
	         " \"flops\": 2}\n]}",
	     "3:", "key \"flops\" appears twice"},
	    {"repeated top key",
	     "{\"format\": \"lhsim-graph\", \"version\": 1,\n"
	     " \"version\": 1, \"ops\": []}",
	     "2:", "key \"version\" appears twice"},
	    /* json-glib stops after the first object. */
	    {"second object",
	     "{\"format\": \"lhsim-graph\", \"version\": 1, \"ops\": []}\n"
	     "  {\"ops\": []}",
	     "2:3", "a second JSON value"},
	    /* json-glib ends the string at \u0000: the name would read "a". */
	    {"NUL in name", HDR "{\"kind\": \"kernel\", \"flops\": 1, \"name\": \"a\\u0000b\"}\n]}",
	     "2:42", "\\u0000"}, /* 19 + 12 + 8 + 2 chars before the backslash */
	    {"input with deps",
	     HDR "{\"name\": \"x\", \"kind\": \"input\"},\n"
	         "{\"name\": \"y\", \"kind\": \"input\", \"deps\": [\"x\"]}\n]}",
	     "3:", "op 'y': an input has no deps"},
	    /* Before: no position (the engine found it). */
	    {"huge flops", HDR "{\"name\": \"a\", \"kind\": \"kernel\",\n \"flops\": 1e300}\n]}",
	     "3:", "'flops' = 1e+300 is out of range"},
	    /* Before: json-glib wrapped it to -1, "must be finite and >= 0 (got -1)". */
	    {"size beyond 64 bits",
	     HDR "{\"name\": \"c\", \"kind\": \"copy-h2d\",\n"
	         " \"size\": 100000000000000000000000}\n]}",
	     "3:10", "the integer 100000000000000000000000 is beyond 64 bits"},
	    {"size 1e23", HDR "{\"name\": \"c\", \"kind\": \"copy-h2d\",\n \"size\": 1e23}\n]}",
	     "3:", "'size' = 1e+23 is out of range (at most 9e+18)"},
	    {"duration beyond range",
	     HDR "{\"name\": \"a\", \"kind\": \"kernel\",\n"
	         " \"duration_ns\": 200000000000000000}\n]}",
	     "3:", "'duration_ns' = 2e+17 is out of range (at most 1e+17)"},
	    /* json-glib reads 0x10 as 16. */
	    {"hex", HDR "{\"name\": \"a\", \"kind\": \"kernel\",\n \"flops\": 0x10}\n]}", "3:11",
	     "'0x10' is not a JSON number"},
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

/* 100 000 nested '[' (200 KB) overflowed json-glib's recursion: a segfault. */
Test(readers, deep_nesting_is_an_error)
{
	GString *s = g_string_new("{\"format\": \"lhsim-graph\", \"version\": 1, \"ops\":\n");
	for (int i = 0; i < 100000; i++)
		g_string_append_c(s, '[');
	g_autoptr(GError) e = NULL;
	g_autoptr(LhGraph) g = lh_graph_new_from_json_data(s->str, s->len, "deep.json", &e);
	cr_assert_null(g);
	/* The top object is level 1, so the 64th '[' (column 64) is level 65. */
	cr_expect(g_str_has_prefix(e->message, "deep.json:2:64: objects and arrays nested deeper "
	                                       "than 64 levels"),
	          "%s", e->message);
	g_string_free(s, TRUE);
}

/* The nesting scan skips strings: brackets in a name are text. */
Test(readers, brackets_in_strings_are_text)
{
	GString *s = g_string_new("{\"format\": \"lhsim-graph\", \"version\": 1, \"name\": \"");
	for (int i = 0; i < 1000; i++)
		g_string_append(s, "[{");
	g_string_append(s, "\\\" /* [ */\", \"ops\": [{\"name\": \"a\", \"kind\": \"kernel\", "
	                   "\"flops\": 1}]}\n/* [[ ' */\n");
	g_autoptr(GError) e = NULL;
	g_autoptr(LhGraph) g = lh_graph_new_from_json_data(s->str, s->len, "ok.json", &e);
	cr_assert_not_null(g, "%s", e ? e->message : "");
	/* 1000 "[{", an escaped quote, then a space, slash-star, " [ ", star-slash (8 characters).
	 */
	cr_expect_eq(strlen(lh_graph_name(g)), 2000 + 1 + 8);
	g_string_free(s, TRUE);
}

/* A raw NUL byte inside a name: the name would end there. */
Test(readers, nul_bytes_are_errors)
{
	static const char j[] = HDR "{\"name\": \"a\0b\", \"kind\": \"kernel\", \"flops\": 1}\n]}";
	g_autoptr(GError) e = NULL;
	g_autoptr(LhGraph) g = lh_graph_new_from_json_data(j, sizeof j - 1, "nul.json", &e);
	cr_assert_null(g);
	cr_expect(g_str_has_prefix(e->message, "nul.json:2:12: a NUL byte inside a string"), "%s",
	          e->message);
	g_autoptr(LhGraph) pg = plan_graph();
	static const char pl[] = "lhsim-plan 1\nstream s0 compute\nrun s0 a\0b\n";
	g_autoptr(LhPlan) p = lh_plan_new_from_data(pl, sizeof pl - 1, "nul.plan", pg, NULL);
	cr_assert_null(p);
	g_clear_error(&e);
	p = lh_plan_new_from_data(pl, sizeof pl - 1, "nul.plan", pg, &e);
	cr_expect(g_str_has_prefix(e->message, "nul.plan:3:9: a NUL byte"), "%s", e->message);
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
	    {"deadlock",
	     PH "wait s0 e1\nrun s0 a\nsignal s0 e0\nwait s1 e0\nrun s1 b\nsignal s1 e1\n", "4:1",
	     "deadlocks"},
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
	cr_expect_eq(lh_plan_n_events(p), 1);
	cr_expect_eq(lh_plan_cmd(p, 3)->kind, LH_CMD_HOST);
	cr_expect_eq(lh_plan_cmd(p, 3)->arg, 250);
	g_autofree char *out = lh_plan_to_data(p, g);
	g_autoptr(LhPlan) p2 = lh_plan_new_from_data(out, strlen(out), "rt.plan", g, &e);
	cr_assert_not_null(p2, "%s", e ? e->message : "");
	g_autofree char *out2 = lh_plan_to_data(p2, g);
	cr_expect_str_eq(out, out2);
	cr_expect(memcmp(lh_plan_cmds(p, NULL), lh_plan_cmds(p2, NULL),
	                 sizeof(LhCmd) * lh_plan_n_cmds(p)) == 0);
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
	    /* Before: "must be a whole number". */
	    {"sm_count", "-1", "'sm_count' = -1 is out of range: it must be >= 1"},
	    /* g_ascii_strtod reads hex (and inf, nan). */
	    {"hbm_gbs", "0x10", "'hbm_gbs': '0x10' is not a number"},
	    {"launch_ns", "nan", "'launch_ns': 'nan' is not a number"},
	    {"name", "a\\nb", "'name': 'a\\nb' must be plain text"},
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

/* GKeyFile keeps the last of repeated keys and ignores keys nobody reads. */
Test(readers, hw_unknown_and_repeated_keys)
{
	g_autofree char *base = hw_text("launch_ns", "5");
	struct {
		const char *extra, *needle;
	} cases[] = {
	    {"hbm_gbz = 3000\n", "unknown key 'hbm_gbz' in [hw]"},
	    {"  launch_ns = 7\n", "key 'launch_ns' is given twice (first on line "},
	    {"[hw]\nlaunch_ns=7\n", "key 'launch_ns' is given twice"},
	};
	guint lines = 1;
	for (const char *c = base; *c; c++)
		lines += *c == '\n';
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *text = g_strconcat(base, cases[i].extra, NULL);
		g_autoptr(GError) e = NULL;
		g_autoptr(LhHw) hw = lh_hw_new_from_data(text, strlen(text), "gpu.ini", &e);
		cr_assert_null(hw, "%s accepted", cases[i].extra);
		cr_expect(strstr(e->message, cases[i].needle) != NULL, "'%s' lacks '%s'",
		          e->message, cases[i].needle);
		/* The extra key is on the base's last (empty) line, or the one after [hw]. */
		guint line = lines + (i == 2), col = i == 1 ? 3 : 1;
		g_autofree char *at = g_strdup_printf("gpu.ini:%u:%u: ", line, col);
		cr_expect(g_str_has_prefix(e->message, at), "'%s' not at %s", e->message, at);
	}
	/* Keys of other groups are not ours to judge. */
	g_autofree char *other = g_strconcat(base, "[notes]\nhbm_gbz = 1\n", NULL);
	g_autoptr(GError) e = NULL;
	g_autoptr(LhHw) hw = lh_hw_new_from_data(other, strlen(other), "gpu.ini", &e);
	cr_expect_not_null(hw, "%s", e ? e->message : "");
}

/* ---- STG ---- */

/* 18446744073709552 * 1000 ns wrapped to 384 ns (signed overflow); 9223372036854775 * 1000
 * fit in 64 bits but made JSON lhsim then refused (above 9e18). Both are beyond the engine's
 * 1e17 ns: at most 1e17 / 1000 = 100000000000000 units. */
Test(readers, stg_processing_time_range)
{
	static const char *const costs[] = {"18446744073709552", "9223372036854775",
	                                    "100000000000001", "99999999999999999999"};
	for (guint i = 0; i < G_N_ELEMENTS(costs); i++) {
		g_autofree char *text = g_strdup_printf("1\n0 0 0\n1 %s 1 0\n2 0 1 1\n", costs[i]);
		g_autoptr(GError) e = NULL;
		g_autoptr(LhGraph) g =
		    lh_stg_import_data(text, strlen(text), "big.stg", 2, LH_STG_UNIT_NS, &e);
		cr_assert_null(g, "%s accepted", costs[i]);
		cr_expect(g_str_has_prefix(e->message, "big.stg:3:3: "), "%s", e->message);
		cr_expect(strstr(e->message, "out of range") != NULL, "%s", e->message);
	}
	/* The largest that fits: 1e14 units of 1000 ns = 1e17 ns, and it reads back as JSON. */
	const char *ok = "1\n0 0 0\n1 100000000000000 1 0\n2 0 1 1\n";
	g_autoptr(GError) e = NULL;
	g_autoptr(LhGraph) g = lh_stg_import_data(ok, strlen(ok), "ok.stg", 2, LH_STG_UNIT_NS, &e);
	cr_assert_not_null(g, "%s", e ? e->message : "");
	cr_expect_eq(lh_graph_op(g, 0)->duration_ns, G_GINT64_CONSTANT(100000000000000000));
	g_autofree char *j = lh_graph_to_json(g);
	g_autoptr(LhGraph) g2 = lh_graph_new_from_json_data(j, -1, "ok.json", &e);
	cr_expect_not_null(g2, "%s", e ? e->message : "");
}

/* Errors without a position before: a missing key, a line GKeyFile cannot read, a key before
 * any group, no [hw] at all. h100-sxm.ini has four comment lines, then [hw] on line 5. */
Test(readers, hw_errors_have_positions)
{
	g_autofree char *no_launch = hw_text("launch_ns", NULL);
	g_autofree char *garbage = hw_text("launch_ns", "5\nthis line has no equals sign");
	/* A missing key is placed at the [hw] line, whichever line the built-in's header comment
	 * leaves it on. */
	guint hw_line = 1;
	for (const char *c = no_launch; !g_str_has_prefix(c, "[hw]"); c++)
		hw_line += *c == '\n';
	g_autofree char *want_missing =
	    g_strdup_printf("gpu.ini:%u:1: missing key 'launch_ns' (ns) in [hw]", hw_line);
	cr_assert(strstr(no_launch, "\n[hw]\n"), "%s", no_launch);
	struct {
		const char *text, *want;
	} cases[] = {
	    {no_launch, want_missing},
	    {"# x\n  k = 1\n[hw]\n", "gpu.ini:2:3: 'k = 1' is outside a group"},
	    {"[other]\nk = 1\n", "gpu.ini:1:1: no [hw] group"},
	};
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GError) e = NULL;
		g_autoptr(LhHw) hw =
		    lh_hw_new_from_data(cases[i].text, strlen(cases[i].text), "gpu.ini", &e);
		cr_assert_null(hw);
		cr_expect(g_str_has_prefix(e->message, cases[i].want), "'%s' is not '%s'",
		          e->message, cases[i].want);
	}
	g_autoptr(GError) e = NULL;
	g_autoptr(LhHw) hw = lh_hw_new_from_data(garbage, strlen(garbage), "gpu.ini", &e);
	cr_assert_null(hw);
	cr_expect(g_regex_match_simple("^gpu\\.ini:[0-9]+:1: 'this line has no equals sign' is not "
	                               "'key = value', a \\[group\\] or a # comment$",
	                               e->message, 0, 0),
	          "%s", e->message);
}

/* The nesting scan must read strings as json-glib does, or it counts brackets json-glib never
 * sees as text and misses the ones it parses: json-glib takes raw line ends inside strings,
 * and a single-quoted string has no escapes ('x\' is x\). Each text below hides 100 000 '['
 * from a scan that stopped strings at a line end or took \' as an escape: a segfault. */
Test(readers, deep_nesting_after_odd_strings_is_an_error)
{
	static const char *const heads[] = {
	    "{\"format\": \"lhsim-graph\", \"name\": \"two\nlines\", \"ops\":\n",
	    "{\"format\": \"lhsim-graph\", \"name\": 'x\\', \"ops\":\n",
	};
	for (guint i = 0; i < G_N_ELEMENTS(heads); i++) {
		GString *s = g_string_new(heads[i]);
		for (int k = 0; k < 100000; k++)
			g_string_append_c(s, '[');
		g_autoptr(GError) e = NULL;
		g_autoptr(LhGraph) g = lh_graph_new_from_json_data(s->str, s->len, "deep.json", &e);
		cr_assert_null(g);
		/* Line 3 (the first string spans two) or 2; the top object is level 1. */
		const char *want = i == 0 ? "deep.json:3:64: objects and arrays nested deeper"
		                          : "deep.json:2:64: objects and arrays nested deeper";
		cr_expect(g_str_has_prefix(e->message, want), "%s", e->message);
		g_string_free(s, TRUE);
	}
}
