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
	cr_assert(strstr(e->message, "'a'") && strstr(e->message, "'b'") && strstr(e->message, "'c'"),
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
