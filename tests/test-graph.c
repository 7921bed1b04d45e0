/* lhsim tests — the graph: building, checking, JSON reading and writing. */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"

Test(graph, builds_csr_and_topo_in_program_order)
{
	g_autoptr(LhGraph) g = lh_graph_new("g");
	guint32 a = t_kernel(g, "a", 10, 1);
	guint32 b = t_kernel(g, "b", 10, 1);
	guint32 c = t_kernel(g, "c", 10, 1);
	t_dep(g, c, a);
	t_dep(g, c, b);
	t_dep(g, c, a); /* duplicate: removed */
	t_dep(g, a, b); /* b must come before a */
	t_finish(g);
	guint32 n;
	const guint32 *d = lh_graph_deps(g, c, &n);
	cr_assert_eq(n, 2);
	cr_assert_eq(d[0], a);
	cr_assert_eq(d[1], b);
	lh_graph_succs(g, b, &n);
	cr_assert_eq(n, 2);
	const guint32 *topo = lh_graph_topo(g);
	/* b is the only op without deps, then a, then c. */
	cr_assert_eq(topo[0], b);
	cr_assert_eq(topo[1], a);
	cr_assert_eq(topo[2], c);
	guint32 idx;
	cr_assert(lh_graph_find(g, "c", &idx));
	cr_assert_eq(idx, c);
	cr_assert_not(lh_graph_find(g, "zz", NULL));
}

/* A graph built an op at a time past the point where the op array is given room ahead and
 * its pages are made present by a helper (sim/graph.c, add_op: from 32 768 ops of 128 bytes,
 * 4 MiB, on; the room moves as it grows): every op keeps what was set on it. 200 000 ops,
 * op i a kernel "k<i>" of i + 1 ns that depends on op i - 1, and each set through
 * lh_graph_op_mut right after its add. */
Test(graph, many_ops_keep_their_fields)
{
	const guint32 n = 200000;
	g_autoptr(LhGraph) g = lh_graph_new("many");
	for (guint32 i = 0; i < n; i++) {
		char name[16];
		g_snprintf(name, sizeof name, "k%u", i);
		guint32 id = lh_graph_add_op(g, name, LH_OP_KERNEL);
		cr_assert_eq(id, i);
		LhOp *op = lh_graph_op_mut(g, id);
		op->duration_ns = (gint64)i + 1;
		op->out_bytes = (gint64)i * 3;
		if (i)
			lh_graph_add_dep(g, i, i - 1);
	}
	t_finish(g);
	cr_assert_eq(lh_graph_n_ops(g), n);
	for (guint32 i = 0; i < n; i++) {
		const LhOp *op = lh_graph_op(g, i);
		char name[16];
		g_snprintf(name, sizeof name, "k%u", i);
		cr_assert_str_eq(op->name, name);
		cr_assert_eq(op->kind, LH_OP_KERNEL);
		cr_assert_eq(op->duration_ns, (gint64)i + 1, "op %u", i);
		cr_assert_eq(op->out_bytes, (gint64)i * 3, "op %u", i);
		guint32 nd;
		const guint32 *d = lh_graph_deps(g, i, &nd);
		cr_assert_eq(nd, i ? 1u : 0u);
		if (i)
			cr_assert_eq(d[0], i - 1);
	}
}

Test(graph, cycle_names_its_ops)
{
	g_autoptr(LhGraph) g = lh_graph_new("g");
	guint32 a = t_kernel(g, "a", 1, 1), b = t_kernel(g, "b", 1, 1), c = t_kernel(g, "c", 1, 1);
	t_kernel(g, "free", 1, 1);
	t_dep(g, b, a);
	t_dep(g, c, b);
	t_dep(g, a, c);
	g_autoptr(GError) e = NULL;
	cr_assert_not(lh_graph_finish(g, "x.json", &e));
	cr_assert_eq(e->code, LH_GRAPH_ERROR_CYCLE);
	cr_assert(strstr(e->message, "'a'") && strstr(e->message, "'b'") &&
	              strstr(e->message, "'c'"),
	          "%s", e->message);
	cr_assert_null(strstr(e->message, "free"), "%s", e->message);
}

Test(graph, wire_bytes_by_kind)
{
	g_autoptr(LhGraph) g = lh_graph_new("g");
	guint32 ar = t_op(g, "ar", LH_OP_ALL_REDUCE, 800);
	guint32 ag = t_op(g, "ag", LH_OP_ALL_GATHER, 800);
	guint32 cp = t_op(g, "cp", LH_OP_COLLECTIVE_PERMUTE, 800);
	lh_graph_op_mut(g, ar)->group = 8;
	lh_graph_op_mut(g, ag)->group = 8;
	t_finish(g);
	/* all-reduce 2(n-1)/n * size = 2*7/8*800 = 1400; all-gather 7/8*800 = 700; permute 800 */
	cr_assert_float_eq(lh_op_wire_bytes(lh_graph_op(g, ar)), 1400, 1e-9);
	cr_assert_float_eq(lh_op_wire_bytes(lh_graph_op(g, ag)), 700, 1e-9);
	cr_assert_float_eq(lh_op_wire_bytes(lh_graph_op(g, cp)), 800, 1e-9);
}

/* dtype, gemm, transpose, alias and schedule read, check and write back bit for bit. */
Test(graph, json_dtype_gemm_alias_schedule_round_trip)
{
	const char *text =
	    "{\"format\": \"lhsim-graph\", \"version\": 1, \"name\": \"x\",\n"
	    " \"ops\": [\n"
	    "  {\"name\": \"buf\", \"kind\": \"input\", \"out_bytes\": 4096},\n"
	    "  {\"name\": \"cp\", \"kind\": \"copy-h2d\", \"size\": 64, \"out_bytes\": 64},\n"
	    "  {\"name\": \"mm\", \"kind\": \"kernel\", \"deps\": [\"buf\"], \"flops\": 2e6, "
	    "\"dtype\": \"tf32\", \"gemm\": [2, 100, 50, 100]},\n"
	    "  {\"name\": \"t\", \"kind\": \"kernel\", \"deps\": [\"mm\"], \"bytes\": 800, "
	    "\"transpose\": true},\n"
	    "  {\"name\": \"dus\", \"kind\": \"kernel\", \"deps\": [\"buf\", \"cp\"], \"bytes\": "
	    "128, \"out_bytes\": 4096, \"alias\": \"buf\"}\n"
	    " ],\n"
	    " \"schedule\": [\"buf\", \"cp\", \"mm\", {\"done\": \"cp\"}, \"t\", \"dus\"]}\n";
	g_autoptr(GError) e = NULL;
	g_autoptr(LhGraph) g = lh_graph_new_from_json_data(text, -1, "x.json", &e);
	cr_assert_not_null(g, "%s", e ? e->message : "");
	const LhOp *mm = t_op_named(g, "mm");
	cr_assert_eq(mm->dtype, LH_DTYPE_TF32);
	cr_assert_eq(mm->gemm_batch, 2);
	cr_assert_eq(mm->gemm_m, 100);
	cr_assert_eq(mm->gemm_n, 50);
	cr_assert_eq(mm->gemm_k, 100);
	cr_assert(t_op_named(g, "t")->transpose);
	cr_assert_eq(t_op_named(g, "dus")->alias, t_id(g, "buf"));
	cr_assert_eq(mm->alias, LH_NO_OP);
	guint32 n;
	const guint32 *seq = lh_graph_schedule(g, &n);
	cr_assert_eq(n, 6);
	/* Entry 3 is the done of op 1 (cp): (1 << 1) | 1 = 3. */
	cr_assert_eq(seq[3], (t_id(g, "cp") << 1) | LH_SCHED_DONE);
	cr_assert_eq(seq[4], t_id(g, "t") << 1);
	g_autofree char *out = lh_graph_to_json(g);
	g_autoptr(LhGraph) g2 = lh_graph_new_from_json_data(out, -1, "y.json", &e);
	cr_assert_not_null(g2, "%s", e ? e->message : "");
	g_autofree char *out2 = lh_graph_to_json(g2);
	cr_assert_str_eq(out, out2);
	cr_assert(strstr(out, "\"gemm\": [2, 100, 50, 100]"), "%s", out);
	cr_assert(strstr(out, "{\"done\": \"cp\"}"), "%s", out);
}

/* Each bad use of the new fields is an error with the position of the offending value. */
Test(graph, json_dtype_gemm_alias_schedule_errors)
{
	static const struct {
		const char *ops, *sched, *want;
	} cases[] = {
	    {"{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 1, \"dtype\": \"f128\"}", NULL,
	     "x.json:3:61: op 'a': dtype must be one of"},
	    {"{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 1, \"gemm\": [1, 2, 3]}", NULL,
	     "op 'a': gemm must be [batch, m, n, k]"},
	    {"{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 1, \"gemm\": [1, 2, 0, 4]}", NULL,
	     "op 'a': gemm[2] must be a whole number from 1 to 2^40"},
	    {"{\"name\": \"a\", \"kind\": \"copy-h2d\", \"size\": 1, \"gemm\": [1, 2, 3, 4]}", NULL,
	     "op 'a': only a kernel can be a GEMM"},
	    {"{\"name\": \"a\", \"kind\": \"copy-h2d\", \"size\": 1, \"transpose\": true}", NULL,
	     "op 'a': only a kernel or copy-d2d can transpose"},
	    {"{\"name\": \"a\", \"kind\": \"input\"}, {\"name\": \"b\", \"kind\": \"kernel\", "
	     "\"flops\": 1, \"alias\": \"a\"}",
	     NULL, "op 'b': alias 'a' is not one of its deps"},
	    {"{\"name\": \"a\", \"kind\": \"input\", \"out_space\": \"host\"}, {\"name\": \"b\", "
	     "\"kind\": \"kernel\", \"deps\": [\"a\"], \"flops\": 1, \"alias\": \"a\"}",
	     NULL, "op 'b': alias 'a' is in host memory, the op's output in device"},
	    {"{\"name\": \"a\", \"kind\": \"copy-h2d\", \"size\": 1}", "[\"a\"]",
	     "the schedule lacks the done of async op 'a'"},
	    {"{\"name\": \"a\", \"kind\": \"copy-h2d\", \"size\": 1}", "[{\"done\": \"a\"}, \"a\"]",
	     "schedule[0]: the done of 'a' comes before its start"},
	    {"{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 1}", "[\"a\", {\"done\": \"a\"}]",
	     "schedule[1]: op 'a' is not async, so it has no done"},
	    {"{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 1}", "[\"a\", \"zz\"]",
	     "schedule[1]: unknown op 'zz'"},
	    {"{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 1}", "[]",
	     "\"schedule\" is empty"},
	};
	for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
		g_autofree char *text = g_strdup_printf(
		    "{\"format\": \"lhsim-graph\", \"version\": 1,\n \"ops\": [\n  %s\n ]%s%s}\n",
		    cases[c].ops, cases[c].sched ? ",\n \"schedule\": " : "",
		    cases[c].sched ? cases[c].sched : "");
		g_autoptr(GError) e = NULL;
		g_autoptr(LhGraph) g = lh_graph_new_from_json_data(text, -1, "x.json", &e);
		cr_assert_null(g, "case %u loaded", c);
		cr_assert(g_str_has_prefix(e->message, "x.json:"), "case %u: %s", c, e->message);
		cr_assert(strstr(e->message, cases[c].want), "case %u: %s", c, e->message);
	}
}

/* A typo at the top level ("shedule") is an error at its position, not silently dropped. */
Test(graph, json_unknown_top_level_field)
{
	const char *text = "{\"format\": \"lhsim-graph\", \"version\": 1,\n"
	                   " \"ops\": [{\"name\": \"a\", \"kind\": \"copy-h2d\", \"size\": 1}],\n"
	                   " \"shedule\": [\"a\", {\"done\": \"a\"}]}\n";
	g_autoptr(GError) e = NULL;
	g_autoptr(LhGraph) g = lh_graph_new_from_json_data(text, -1, "x.json", &e);
	cr_assert_null(g);
	cr_assert(g_str_has_prefix(e->message, "x.json:3:"), "%s", e->message);
	cr_assert(strstr(e->message, "unknown top-level field 'shedule' (fields: format, version, "
	                             "name, ops, schedule, devices)"),
	          "%s", e->message);
}

/* The library initialises itself: a program that never calls lh_models_init() still finds
 * the built-in descriptions (before, the lookup failed as an unknown file). Criterion runs
 * each test in a fresh process, and nothing here calls lh_models_init(). */
Test(graph, builtin_hardware_without_explicit_init)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", &e);
	cr_assert_not_null(hw, "%s", e ? e->message : "");
	cr_assert_str_eq(hw->name, "H100 SXM");
	g_autofree const char **names = lh_hw_builtin_names();
	cr_assert(names[0] != NULL);
}
