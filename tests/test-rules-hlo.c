/* lhsim tests — rules of the HLO importer (docs/hlo.md, models/hlo-*.c) that no other test
 * pinned down (issue 15, item 5): the `N > i` loop condition and a counter that does not start
 * at 0, `ragged-all-to-all`, and the default collective group from `num_partitions`. The
 * modules are small hand-written ones in tests/data/rules (tests/data/SOURCES); what each
 * should give is worked out in the comments. */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"

static LhGraph *import(const char *file, GPtrArray *warn)
{
	g_autofree char *path = t_data(file);
	GError *e = NULL;
	LhGraph *g = lh_hlo_import_file(path, warn, &e);
	cr_assert(g, "%s: %s", file, e ? e->message : "?");
	return g;
}

/* The warnings other than "looks unoptimized" (every hand-written module is unfused). */
static guint other_warnings(GPtrArray *w)
{
	guint n = 0;
	for (guint i = 0; i < w->len; i++)
		n += strstr(w->pdata[i], "looks unoptimized") == NULL;
	return n;
}

/* while_gt.hlo: i = constant(0); cond: constant(5) > i (compare(n, i), direction=GT); body:
 * i + 1, y = exponential(x). The counter runs 0, 1, 2, 3, 4: 5 trips, each with two kernels
 * (y and next = i + 1): 1 input + 5 * 2 = 11 ops, y@0 .. y@4 and no y@5. */
Test(rules_hlo, n_greater_than_i_loop_condition)
{
	g_autoptr(GPtrArray) w = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(LhGraph) g = import("rules/while_gt.hlo", w);
	cr_expect_eq(other_warnings(w), 0, "%s", w->len ? (char *)w->pdata[0] : "");
	cr_expect_eq(lh_graph_n_ops(g), 11);
	t_op_named(g, "y@4");
	cr_expect_not(lh_graph_find(g, "y@5", NULL));
	/* Each trip reads the last one's state. */
	cr_expect(t_has_dep(g, "y@4", "y@3"));
	cr_expect(t_has_dep(g, "y@0", "a"));
}

/* while_lt_from_2.hlo: the same loop written i < constant(5), with i from constant(2): trips
 * 5 - 2 = 3: 1 + 3 * 2 = 7 ops, y@0 .. y@2. */
Test(rules_hlo, i_less_than_n_loop_counts_from_its_initial_value)
{
	g_autoptr(GPtrArray) w = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(LhGraph) g = import("rules/while_lt_from_2.hlo", w);
	cr_expect_eq(other_warnings(w), 0, "%s", w->len ? (char *)w->pdata[0] : "");
	cr_expect_eq(lh_graph_n_ops(g), 7);
	t_op_named(g, "y@2");
	cr_expect_not(lh_graph_find(g, "y@3", NULL));
}

/* ragged_all_to_all.hlo: ragged-all-to-all over replica_groups={{0,1,2,3}} (channel_id, so
 * partition ids; num_partitions=4): an all-to-all of the group of 4, members {0,1,2,3}, and
 * no unknown-opcode warning. 6 parameters + 1 = 7 ops. */
Test(rules_hlo, ragged_all_to_all_is_an_all_to_all)
{
	g_autoptr(GPtrArray) w = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(LhGraph) g = import("rules/ragged_all_to_all.hlo", w);
	cr_expect_eq(other_warnings(w), 0, "%s", w->len ? (char *)w->pdata[0] : "");
	cr_expect_eq(lh_graph_n_ops(g), 7);
	const LhOp *r = t_op_named(g, "r");
	cr_expect_eq(r->kind, LH_OP_ALL_TO_ALL);
	cr_expect_eq(r->group, 4);
	const LhMemberSet *m = lh_graph_op_members(g, r);
	cr_assert_not_null(m);
	cr_expect_eq(m->n_groups, 1);
	cr_expect_eq(m->group_size, 4);
	for (guint32 k = 0; k < 4; k++)
		cr_expect_eq(m->dev[k], k);
	/* Only the input moves (XLA's semantics: output, offsets and sizes stay): f32[1024] is
	 * 1024 x 4 = 4096 B, not the 4096 + 4096 + 4 x 16 = 8256 B of every operand. */
	cr_expect_eq(r->size, 4096);
	/* Its operands are its deps: 6 parameters. */
	guint32 nd;
	lh_graph_deps(g, t_id(g, "r"), &nd);
	cr_expect_eq(nd, 6);
}

/* default_group.hlo: `HloModule ..., num_partitions=4`, an all-reduce with channel_id and
 * use_global_device_ids=true but no replica_groups: every device in one group: 4 x 1 = 4
 * devices, group 4, members {0,1,2,3}; the graph has 4 devices. f32[1024]: size 4096 B. */
Test(rules_hlo, default_group_is_every_partition)
{
	g_autoptr(LhGraph) g = import("rules/default_group.hlo", NULL);
	const LhOp *ar = t_op_named(g, "ar");
	cr_expect_eq(ar->kind, LH_OP_ALL_REDUCE);
	cr_expect_eq(ar->size, 4096);
	cr_expect_eq(ar->group, 4);
	cr_expect_eq(lh_graph_devices(g), 4);
	const LhMemberSet *m = lh_graph_op_members(g, ar);
	cr_assert_not_null(m);
	cr_expect_eq(m->group_size, 4);
}

/* default_group_none.hlo: the same without num_partitions (nor replica_count): the counts
 * default to 1 x 1, so the group is 1 device, and the graph states no device count. */
Test(rules_hlo, default_group_without_counts_is_one)
{
	g_autoptr(LhGraph) g = import("rules/default_group_none.hlo", NULL);
	const LhOp *ar = t_op_named(g, "ar");
	cr_expect_eq(ar->group, 1);
	cr_expect_eq(lh_graph_devices(g), 0);
}
