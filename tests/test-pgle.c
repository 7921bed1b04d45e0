/* lhsim tests — PGLE profiles (models/pgle.c): reading XLA's ProfiledInstructionsProto text,
 * applying it to a graph, exporting a graph's costs, and the --profile / export-pgle commands. */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"

static LhPgle *parse(const char *text)
{
	GError *e = NULL;
	LhPgle *p = lh_pgle_new_from_data(text, strlen(text), "p.pbtxt", &e);
	cr_assert(p, "%s", e ? e->message : "?");
	return p;
}

/* A graph with every kind of name a profile meets: kernels, an async collective and an async
 * copy named after their starts, two iterations of an unrolled loop body, a name with a quote,
 * and an input. Model costs on t_hw: k1 and k2 do 1e6 FLOP = 1000 ns each. */
static LhGraph *named_graph(void)
{
	LhGraph *g = lh_graph_new("named");
	guint32 p = lh_graph_add_op(g, "p", LH_OP_INPUT);
	lh_graph_op_mut(g, p)->out_bytes = 64;
	const char *kernels[] = {"k1", "k2", "fusion.3@0", "fusion.3@1", "we\"ird", "fusion.9"};
	guint32 prev = p;
	for (gsize i = 0; i < G_N_ELEMENTS(kernels); i++) {
		guint32 k = lh_graph_add_op(g, kernels[i], LH_OP_KERNEL);
		lh_graph_op_mut(g, k)->flops = 1e6;
		lh_graph_add_dep(g, k, prev);
		prev = k;
	}
	guint32 ag = t_op(g, "ag-start.1", LH_OP_ALL_GATHER, 8000);
	lh_graph_op_mut(g, ag)->group = 8;
	t_dep(g, ag, p);
	guint32 cp = t_op(g, "cp_start", LH_OP_COPY_H2D, 1000);
	t_dep(g, cp, p);
	t_finish(g);
	return g;
}

/* Comments, both message syntaxes, `< >`, a list, `;` and `,` separators, scientific, hex and
 * f-suffixed numbers, escapes, adjacent strings, a fingerprint prefix. */
static const char *const profile_text =
    "# a PGLE profile, by hand\n"
    "costs { name: \"k1\" cost_us: 12.5 }   # 12.5 us = 12500 ns\n"
    "costs: { name: 'k2', cost_us: 1.5e1 }  # 15 us\n"
    "costs < name: \"fusion.3\"; cost_us: 0.0015 >  # 1.5 ns, rounds to 2\n"
    "costs [ { name: \"we\\\"ird\" cost_us: 0x10 },\n"
    "        { name: \"fu\" \"sion.9\" cost_us: 2.5f } ]\n"
    "costs { name: \"ABCDEF::cp_start\" cost_us: 7 }\n"
    "costs { name: \"ag-start.1\" cost_us: 3 }\n"
    "latencies { source: \"ag-start.1\" target: \"ag-done.1\" latency_us: 40 }\n"
    "costs { name: \"ag-done.1\" cost_us: 1 }\n"
    "costs { name: \"nope.1\" cost_us: 1 }\n"
    "latencies { source: \"gone-start\" target: \"gone-done\" latency_us: 1 }\n";

Test(pgle, a_profile_sets_the_named_durations_exactly)
{
	g_autoptr(LhPgle) p = parse(profile_text);
	cr_assert_eq(lh_pgle_n_costs(p), 9);
	cr_assert_eq(lh_pgle_n_latencies(p), 2);
	g_autoptr(LhGraph) g = named_graph();
	LhPgleReport r;
	lh_pgle_apply(g, p, &r);
	cr_assert_eq(t_op_named(g, "k1")->duration_ns, 12500);
	cr_assert_eq(t_op_named(g, "k2")->duration_ns, 15000);
	/* Both loop iterations take fusion.3's cost: 0.0015 us = 1.5 ns, to the nearest: 2. */
	cr_assert_eq(t_op_named(g, "fusion.3@0")->duration_ns, 2);
	cr_assert_eq(t_op_named(g, "fusion.3@1")->duration_ns, 2);
	cr_assert_eq(t_op_named(g, "we\"ird")->duration_ns, 16000); /* 0x10 us */
	cr_assert_eq(t_op_named(g, "fusion.9")->duration_ns, 2500);
	/* The async collective takes its start-to-done latency (40 us), not its start's cost;
	 * the copy, with no latency entry, its start's cost (XLA's fallback), the fingerprint
	 * prefix stripped. */
	cr_assert_eq(t_op_named(g, "ag-start.1")->duration_ns, 40000);
	cr_assert_eq(t_op_named(g, "cp_start")->duration_ns, 7000);
	cr_assert_eq(t_op_named(g, "p")->duration_ns, -1);
	/* 8 ops of 8 that run. 11 entries: applied k1, k2, fusion.3, we"ird, fusion.9, cp_start,
	 * the ag latency = 7; unused: ag-start.1's cost (3 us, shadowed by the latency), the
	 * done's cost = 2; unknown: nope.1, gone-start = 2. */
	cr_assert_eq(r.n_ops, 8);
	cr_assert_eq(r.n_entries, 11);
	cr_assert_eq(r.n_applied, 7);
	cr_assert_eq(r.n_unused, 2);
	cr_assert_eq(r.n_unknown, 2);
	cr_assert_str_eq(r.first_unknown, "nope.1");
	/* Share of the serial time on t_hw: every op is profiled, so 1. */
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	double in, all;
	cr_assert_float_eq(lh_pgle_share(g, hw, &r, &in, &all), 1.0, 1e-12);
	/* 12500 + 15000 + 2 + 2 + 16000 + 2500 + 40000 + 7000 = 93004 ns. */
	cr_assert_float_eq(all, 93004.0, 1e-9);
	lh_pgle_report_clear(&r);
}

Test(pgle, unprofiled_ops_keep_model_costs_and_count_in_the_share)
{
	g_autoptr(LhPgle) p = parse("costs { name: \"k1\" cost_us: 3 }\n");
	g_autoptr(LhGraph) g = named_graph();
	LhPgleReport r;
	lh_pgle_apply(g, p, &r);
	cr_assert_eq(r.n_ops, 1);
	cr_assert_eq(t_op_named(g, "k2")->duration_ns, -1);
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	double in, all;
	double share = lh_pgle_share(g, hw, &r, &in, &all);
	/* k1 3000 ns from the profile; the model: five kernels of 1e6 FLOP at 1000 FLOP/ns =
	 * 5000 ns, the all-gather 7/8 * 8000 B / 100 B/ns = 70 ns, the copy 1000 B / 10 B/ns =
	 * 100 ns: total 3000 + 5000 + 70 + 100 = 8170 ns; share 3000 / 8170. */
	cr_assert_float_eq(in, 3000.0, 1e-9);
	cr_assert_float_eq(all, 8170.0, 1e-9);
	cr_assert_float_eq(share, 3000.0 / 8170.0, 1e-12);
	lh_pgle_report_clear(&r);
}

Test(pgle, bad_profiles_are_errors_with_their_position)
{
	struct {
		const char *text, *want;
		int code;
	} cases[] = {
	    /* "costs { name: \"a\" cost_us: " is 27 characters: the '-' is column 28. */
	    {"costs { name: \"a\" cost_us: -1 }", "p.pbtxt:1:28: 'cost_us' must be >= 0",
	     LH_GRAPH_ERROR_INVALID},
	    {"costs { name: \"a\" cost_us: 1 }\ncosts { name \"b\" }",
	     "p.pbtxt:2:14: expected ':' after 'name'", LH_GRAPH_ERROR_PARSE},
	    /* Truncated: the message opened at column 7 is still open at the end, column 29. */
	    {"costs { name: \"a\" cost_us: 3",
	     "p.pbtxt:1:29: truncated: the InstructionCost opened at 1:7 is not closed with '}'",
	     LH_GRAPH_ERROR_PARSE},
	    {"costs { name: \"a\" cost_us: \"3\" }",
	     "p.pbtxt:1:28: 'cost_us' needs a number, not a string", LH_GRAPH_ERROR_PARSE},
	    {"costs { name: \"a\" cost_us: inf }",
	     "p.pbtxt:1:28: 'cost_us' must be a finite number", LH_GRAPH_ERROR_INVALID},
	    {"costs { name: \"a\" cost_us: 1.2.3 }", "p.pbtxt:1:28: 'cost_us': malformed number",
	     LH_GRAPH_ERROR_PARSE},
	    {"costs { nme: \"a\" }",
	     "p.pbtxt:1:9: InstructionCost has no field 'nme' (its fields: name, cost_us)",
	     LH_GRAPH_ERROR_PARSE},
	    {"\n  cost { }", "p.pbtxt:2:3: ProfiledInstructionsProto has no field 'cost'",
	     LH_GRAPH_ERROR_PARSE},
	    {"costs { name: \"a }", "p.pbtxt:1:15: unterminated string", LH_GRAPH_ERROR_PARSE},
	    {"costs { name: \"a\\q\" }", "p.pbtxt:1:17: unknown escape '\\q'",
	     LH_GRAPH_ERROR_PARSE},
	    {"costs { name: \"a\" name: \"b\" }",
	     "p.pbtxt:1:19: 'name' is given twice in one InstructionCost", LH_GRAPH_ERROR_PARSE},
	    {"costs { name: \"F1::a\" }\ncosts { name: \"F2::b\" }",
	     "p.pbtxt:2:7: the profile holds costs of two modules (fingerprints 'F1' and 'F2')",
	     LH_GRAPH_ERROR_INVALID},
	    {"latencies { source: \"a\" latency_us: 1e30 }",
	     "p.pbtxt:1:37: 'latency_us' is 1e+30 us, beyond the engine's range",
	     LH_GRAPH_ERROR_INVALID},
	    {"costs [ { name: \"a\" } { name: \"b\" } ]",
	     "p.pbtxt:1:23: expected ',' or ']' in the list of 'costs'", LH_GRAPH_ERROR_PARSE},
	};
	for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
		GError *e = NULL;
		LhPgle *p =
		    lh_pgle_new_from_data(cases[i].text, strlen(cases[i].text), "p.pbtxt", &e);
		cr_assert_null(p, "case %zu parsed", i);
		cr_assert(e);
		cr_assert(g_str_has_prefix(e->message, cases[i].want),
		          "case %zu: got '%s', want '%s'", i, e->message, cases[i].want);
		cr_assert(g_error_matches(e, LH_GRAPH_ERROR, cases[i].code), "case %zu: code %d", i,
		          e->code);
		g_error_free(e);
	}
	/* A binary profile (.pb) has NUL bytes. */
	GError *e = NULL;
	cr_assert_null(lh_pgle_new_from_data("\x08\x05\0\0", 4, "p.pb", &e));
	cr_assert(strstr(e->message, "p.pb:1:3: a NUL byte"), "%s", e->message);
	g_error_free(e);
}

Test(pgle, done_names)
{
	const char *pairs[][2] = {
	    {"all-gather-start.1", "all-gather-done.1"},
	    {"copy-start", "copy-done"},
	    {"async-start.12", "async-done.12"},
	    {"send.2", "send-done.2"},
	    {"recv", "recv-done"},
	    {"cp_start", "cp_done"},
	};
	for (gsize i = 0; i < G_N_ELEMENTS(pairs); i++) {
		g_autofree char *d = lh_pgle_done_name(pairs[i][0]);
		cr_assert_str_eq(d, pairs[i][1]);
	}
	cr_assert_null(lh_pgle_done_name("fusion.3"));
	cr_assert_null(lh_pgle_done_name("sender"));
	cr_assert_null(lh_pgle_done_name("x-started"));
}

/* Model costs that are whole ns on t_hw (1000 FLOP/ns, HBM 1000 B/ns, PCIe 10 B/ns, link
 * 100 B/ns, no latencies or overheads): k.a 5e5 FLOP = 500 ns; k.b 2e5 B = 200 ns; the copy
 * 1000 B = 100 ns; the all-gather 7/8 * 8000 B / 100 = 70 ns; fusion.1@0 and @1 3e5 FLOP =
 * 300 ns each. */
static LhGraph *whole_ns_graph(void)
{
	LhGraph *g = lh_graph_new("whole");
	guint32 w = lh_graph_add_op(g, "w", LH_OP_INPUT);
	lh_graph_op_mut(g, w)->out_bytes = 100;
	guint32 a = lh_graph_add_op(g, "k.a", LH_OP_KERNEL);
	lh_graph_op_mut(g, a)->flops = 5e5;
	t_dep(g, a, w);
	guint32 b = lh_graph_add_op(g, "k.b", LH_OP_KERNEL);
	lh_graph_op_mut(g, b)->bytes = 2e5;
	t_dep(g, b, a);
	guint32 cp = t_op(g, "copy-start.4", LH_OP_COPY_H2D, 1000);
	lh_graph_op_mut(g, cp)->out_bytes = 1000;
	guint32 ag = t_op(g, "all-gather-start.2", LH_OP_ALL_GATHER, 8000);
	lh_graph_op_mut(g, ag)->group = 8;
	t_dep(g, ag, w);
	guint32 f0 = lh_graph_add_op(g, "fusion.1@0", LH_OP_KERNEL);
	lh_graph_op_mut(g, f0)->flops = 3e5;
	t_dep(g, f0, b);
	t_dep(g, f0, cp);
	guint32 f1 = lh_graph_add_op(g, "fusion.1@1", LH_OP_KERNEL);
	lh_graph_op_mut(g, f1)->flops = 3e5;
	t_dep(g, f1, f0);
	t_dep(g, f1, ag);
	t_finish(g);
	return g;
}

static gint64 makespan_of(const char *sched, const LhGraph *g, const LhHw *hw)
{
	GError *e = NULL;
	g_autoptr(LhPlan) p = lh_scheduler_run(lh_scheduler_find(sched), g, hw, NULL, NULL, &e);
	cr_assert(p, "%s", e ? e->message : "?");
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	return t_makespan(t);
}

Test(pgle, export_then_import_gives_the_same_prediction)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	g_autoptr(LhGraph) g = whole_ns_graph();
	guint32 averaged = 99;
	GError *e = NULL;
	g_autofree char *text = lh_pgle_export(g, hw, &averaged, &e);
	cr_assert(text, "%s", e ? e->message : "?");
	cr_assert_eq(averaged, 0);
	/* One cost per HLO instruction (the loop's two iterations are one), a latency per
	 * async op with a start name. */
	cr_assert(strstr(text, "costs { name: \"k.a\" cost_us: 0.5 }\n"), "%s", text);
	cr_assert(strstr(text, "costs { name: \"k.b\" cost_us: 0.2 }\n"), "%s", text);
	cr_assert(strstr(text, "costs { name: \"fusion.1\" cost_us: 0.3 }\n"), "%s", text);
	cr_assert_null(strstr(text, "fusion.1@"), "%s", text);
	cr_assert(strstr(text, "latencies { source: \"copy-start.4\" target: \"copy-done.4\" "
	                       "latency_us: 0.1 }\n"),
	          "%s", text);
	cr_assert(strstr(text, "latencies { source: \"all-gather-start.2\" target: "
	                       "\"all-gather-done.2\" latency_us: 0.07 }\n"),
	          "%s", text);
	g_autoptr(LhPgle) p = parse(text);
	cr_assert_eq(lh_pgle_n_costs(p), 5);
	cr_assert_eq(lh_pgle_n_latencies(p), 2);

	g_autoptr(LhGraph) g2 = whole_ns_graph();
	LhPgleReport r;
	lh_pgle_apply(g2, p, &r);
	cr_assert_eq(r.n_ops, 6);
	cr_assert_eq(r.n_unknown, 0);
	cr_assert_eq(r.n_unused, 0);
	lh_pgle_report_clear(&r);
	for (guint32 i = 0; i < lh_graph_n_ops(g); i++) {
		const LhOp *op = lh_graph_op(g, i);
		if (op->kind == LH_OP_INPUT)
			continue;
		cr_assert_eq((double)lh_graph_op(g2, i)->duration_ns, lh_op_standalone_ns(op, hw),
		             "op %s", op->name);
	}
	/* serial: 500 + 200 + 100 + 70 + 300 + 300 = 1470 ns, with model costs and with the
	 * profile. */
	cr_assert_eq(makespan_of("serial", g, hw), 1470);
	cr_assert_eq(makespan_of("serial", g2, hw), 1470);
	const char *scheds[] = {"lhs", "heft", "cpath", "iree"};
	for (gsize i = 0; i < G_N_ELEMENTS(scheds); i++)
		cr_assert_eq(makespan_of(scheds[i], g, hw), makespan_of(scheds[i], g2, hw), "%s",
		             scheds[i]);
}

Test(pgle, export_of_an_imported_module_is_a_fixed_point)
{
	/* Model costs of an imported module are fractional ns: the first export rounds them to
	 * the ns; from then on, export -> import -> export gives the same text. */
	g_autofree char *path = t_data("hlo/lhs_test_AllGatherAsyncSimple.hlo");
	GError *e = NULL;
	g_autoptr(LhGraph) g = lh_graph_load(path, &e);
	cr_assert(g, "%s", e ? e->message : "?");
	lh_models_init();
	g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", &e);
	cr_assert(hw, "%s", e ? e->message : "?");
	g_autofree char *t1 = lh_pgle_export(g, hw, NULL, &e);
	cr_assert(t1);
	cr_assert(strstr(t1, "latencies { source: \"ag-start\" target: \"ag-done\""), "%s", t1);
	g_autoptr(LhPgle) p1 = parse(t1);
	LhPgleReport r;
	lh_pgle_apply(g, p1, &r);
	cr_assert_eq(r.n_unknown, 0);
	cr_assert_eq(r.n_unused, 0);
	lh_pgle_report_clear(&r);
	g_autofree char *t2 = lh_pgle_export(g, hw, NULL, &e);
	cr_assert_str_eq(t1, t2);
	gint64 m1 = makespan_of("lhs", g, hw);
	g_autoptr(LhPgle) p2 = parse(t2);
	lh_pgle_apply(g, p2, NULL);
	cr_assert_eq(makespan_of("lhs", g, hw), m1);
}

static char *write_text(const char *dir, const char *name, const char *text)
{
	char *path = g_build_filename(dir, name, NULL);
	cr_assert(g_file_set_contents(path, text, -1, NULL));
	return path;
}

Test(pgle, command_line)
{
	g_autofree char *dir = t_tmpdir();
	const char *graph =
	    "{\"format\": \"lhsim-graph\", \"version\": 1, \"name\": \"cl\", \"ops\": [\n"
	    " {\"name\": \"a\", \"kind\": \"kernel\", \"duration_ns\": 100000},\n"
	    " {\"name\": \"b\", \"kind\": \"kernel\", \"deps\": [\"a\"], \"duration_ns\": "
	    "300000}]}\n";
	g_autofree char *gpath = write_text(dir, "g.json", graph);
	g_autofree char *ppath = write_text(dir, "p.pbtxt",
	                                    "costs { name: \"a\" cost_us: 700 }\n"
	                                    "costs { name: \"zzz\" cost_us: 1 }\n");
	g_autofree char *out = NULL, *err = NULL;
	int st = t_lhsim(&out, &err, "run", gpath, "--profile", ppath, "--json", NULL);
	cr_assert_eq(st, 0, "%s", err);
	/* a: 700 us from the profile, b: 300 us: 700 / 1000 of the serial time. */
	cr_assert(strstr(err, "1 of 2 ops take their cost from it, 70.0 % of the serial time"),
	          "%s", err);
	cr_assert(strstr(err, "1 of its 2 entries name nothing in the graph (first: 'zzz')"), "%s",
	          err);
	/* 'a' runs 700 us instead of 100 on one stream: the step is 600 us longer. */
	g_autofree char *out0 = NULL;
	cr_assert_eq(t_lhsim(&out0, NULL, "run", gpath, "--json", NULL), 0);
	const char *m = strstr(out, "\"makespan_ns\": "), *m0 = strstr(out0, "\"makespan_ns\": ");
	cr_assert(m && m0, "%s", out);
	cr_assert_eq(g_ascii_strtoll(m + 15, NULL, 10) - g_ascii_strtoll(m0 + 15, NULL, 10), 600000,
	             "%.40s vs %.40s", m, m0);
	g_free(out);
	g_free(err);
	st = t_lhsim(&out, &err, "compare", gpath, "--profile", ppath, "--sched", "serial,lhs",
	             NULL);
	cr_assert_eq(st, 0, "%s", err);
	cr_assert(strstr(err, "1 of 2 ops take their cost from it"), "%s", err);
	g_free(out);
	g_free(err);

	/* A bad profile: exit 2 with its position, nothing written. */
	g_autofree char *bad = write_text(dir, "bad.pbtxt", "costs { name: \"a\" cost_us: -1 }\n");
	g_autofree char *json = g_build_filename(dir, "out.json", NULL);
	g_autofree char *hlo = t_data("hlo/lhs_test_AllGatherAsyncSimple.hlo");
	st = t_lhsim(&out, &err, "import", hlo, "--profile", bad, "-o", json, NULL);
	cr_assert_eq(st, 2, "%s", err);
	g_autofree char *want = g_strdup_printf("%s:1:28: 'cost_us' must be >= 0", bad);
	cr_assert(strstr(err, want), "%s", err);
	cr_assert_not(g_file_test(json, G_FILE_TEST_EXISTS));
	g_free(out);
	g_free(err);
	st = t_lhsim(&out, &err, "sweep", gpath, "--profile", bad, "-p", "async-compute-limit=1:2",
	             "--sched", "lhs", NULL);
	cr_assert_eq(st, 2, "%s", err);
	g_free(out);
	g_free(err);

	/* export-pgle, then import with the profile: the module's ops carry its costs. */
	g_autofree char *exp = g_build_filename(dir, "m.pbtxt", NULL);
	st = t_lhsim(&out, &err, "export-pgle", hlo, "-o", exp, NULL);
	cr_assert_eq(st, 0, "%s", err);
	cr_assert(strstr(out, "6 costs, 1 latencies"), "%s", out);
	g_free(out);
	g_free(err);
	g_autofree char *agp = write_text(dir, "ag.pbtxt",
	                                  "latencies { source: \"ag-start\" target: \"ag-done\" "
	                                  "latency_us: 123.456 }\n");
	st = t_lhsim(&out, &err, "import", hlo, "--profile", agp, "-o", json, NULL);
	cr_assert_eq(st, 0, "%s", err);
	cr_assert(strstr(err, "1 of 6 ops take their cost from it"), "%s", err);
	GError *e = NULL;
	g_autoptr(LhGraph) g = lh_graph_load(json, &e);
	cr_assert(g, "%s", e ? e->message : "?");
	cr_assert_eq(t_op_named(g, "ag-start")->duration_ns, 123456);
	g_free(out);
	g_free(err);
	/* export-pgle needs -o. */
	st = t_lhsim(&out, &err, "export-pgle", gpath, NULL);
	cr_assert_eq(st, 2);
	cr_assert(strstr(err, "-o P.pbtxt is required"), "%s", err);
}
