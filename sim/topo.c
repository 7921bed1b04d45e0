/* lhsim — the cluster and member sets (docs/engine.md, "Collectives on a cluster"). */
#include "sim/topo.h"

#include <string.h>

gboolean lh_hw_has_cluster(const LhHw *hw)
{
	return hw->gpus_per_node > 0;
}

guint32 lh_hw_node_of(const LhHw *hw, guint32 dev)
{
	return hw->gpus_per_node ? dev / hw->gpus_per_node : 0;
}

/* Nodes and the most members in one node of one group of @k devices. */
static void group_span(const LhHw *hw, const guint32 *dev, guint32 k, guint32 *nodes,
		       guint32 *per_node)
{
	*nodes = 0;
	*per_node = 0;
	for (guint32 i = 0; i < k; i++) {
		guint32 nd = lh_hw_node_of(hw, dev[i]), same = 0;
		gboolean seen = FALSE;
		for (guint32 j = 0; j < k; j++)
			if (lh_hw_node_of(hw, dev[j]) == nd) {
				same++;
				seen |= j < i;
			}
		if (!seen)
			(*nodes)++;
		*per_node = MAX(*per_node, same);
	}
}

LhSpan lh_op_span(const LhGraph *g, const LhOp *op, const LhHw *hw)
{
	LhSpan s = {MAX(op->group, 1u), 1, MAX(op->group, 1u)};
	gboolean p2p = op->kind == LH_OP_COLLECTIVE_PERMUTE || op->kind == LH_OP_SEND ||
		       op->kind == LH_OP_RECV;
	if (p2p)
		s.ranks = s.per_node = 2;
	const LhMemberSet *m = g ? lh_graph_op_members(g, op) : NULL;
	if (!m) {
		/* Devices 0 .. n-1: ceil(n / gpn) nodes, min(n, gpn) in the first. */
		guint32 gpn = hw->gpus_per_node;
		if (gpn && s.ranks > gpn) {
			s.nodes = (s.ranks + gpn - 1) / gpn;
			s.per_node = gpn;
		}
		return s;
	}
	s.ranks = m->group_size;
	s.nodes = 0;
	s.per_node = m->group_size;
	for (guint32 k = 0; k < m->n_groups; k++) {
		guint32 nodes, per;
		group_span(hw, m->dev + (gsize)k * m->group_size, m->group_size, &nodes, &per);
		if (nodes > s.nodes || (nodes == s.nodes && per < s.per_node)) {
			s.nodes = nodes;
			s.per_node = per;
		}
	}
	if (!s.nodes)
		s.nodes = 1;
	return s;
}

gboolean lh_op_is_scale_up(const LhGraph *g, const LhOp *op, const LhHw *hw)
{
	return lh_op_kind_is_collective(op->kind) && lh_op_span(g, op, hw).nodes <= 1;
}

/* Marks the devices of @op in @mark (size @n). */
static void mark_devices(const LhGraph *g, const LhOp *op, guint8 *mark, guint32 n)
{
	const LhMemberSet *m = lh_graph_op_members(g, op);
	if (!m) {
		guint32 k = op->kind == LH_OP_COLLECTIVE_PERMUTE || op->kind == LH_OP_SEND ||
				    op->kind == LH_OP_RECV
			    ? 2
			    : MAX(op->group, 1u);
		for (guint32 i = 0; i < k && i < n; i++)
			mark[i] = 1;
		return;
	}
	for (gsize i = 0; i < (gsize)m->n_groups * m->group_size; i++)
		if (m->dev[i] < n)
			mark[m->dev[i]] = 1;
}

static guint32 max_device(const LhGraph *g, const LhOp *op)
{
	const LhMemberSet *m = lh_graph_op_members(g, op);
	guint32 mx = MAX(op->group, 2u);
	for (gsize i = 0; m && i < (gsize)m->n_groups * m->group_size; i++)
		mx = MAX(mx, m->dev[i] + 1);
	return mx;
}

gboolean lh_ops_share_devices(const LhGraph *g, const LhOp *a, const LhOp *b)
{
	guint32 n = MAX(max_device(g, a), max_device(g, b));
	g_autofree guint8 *ma = g_new0(guint8, n);
	g_autofree guint8 *mb = g_new0(guint8, n);
	mark_devices(g, a, ma, n);
	mark_devices(g, b, mb, n);
	guint32 both = 0;
	for (guint32 i = 0; i < n; i++)
		both += ma[i] && mb[i];
	return both > 1;
}

gboolean lh_member_set_check(guint32 n_groups, guint32 group_size, gboolean pairs,
			     const guint32 *dev, guint32 devices, char **why, guint32 *bad)
{
	*why = NULL;
	*bad = 0;
	if (n_groups == 0 || group_size == 0) {
		*why = g_strdup("no members: give at least one group of at least one device");
		return FALSE;
	}
	if (pairs && group_size != 2) {
		*why = g_strdup("source-target pairs must have two devices each");
		return FALSE;
	}
	gsize n = (gsize)n_groups * group_size;
	guint32 limit = devices ? devices : pairs ? G_MAXUINT32 : (guint32)MIN(n, G_MAXUINT32);
	for (gsize i = 0; i < n; i++)
		if (dev[i] >= limit) {
			*bad = (guint32)i;
			*why = devices ? g_strdup_printf("device %u is outside the module's %u devices",
							 dev[i], devices)
				       : g_strdup_printf("device %u is outside 0 .. %u (the groups "
							 "cover %" G_GSIZE_FORMAT " devices)",
							 dev[i], limit - 1, n);
			return FALSE;
		}
	if (pairs) {
		for (gsize i = 0; i < n; i += 2)
			if (dev[i] == dev[i + 1]) {
				*bad = (guint32)i + 1;
				*why = g_strdup_printf("pair %" G_GSIZE_FORMAT " sends device %u to "
						       "itself",
						       i / 2, dev[i]);
				return FALSE;
			}
		return TRUE;
	}
	guint32 mx = 0;
	for (gsize i = 0; i < n; i++)
		mx = MAX(mx, dev[i]);
	g_autofree gint64 *first = g_new(gint64, (gsize)mx + 1);
	for (gsize i = 0; i <= mx; i++)
		first[i] = -1;
	for (gsize i = 0; i < n; i++) {
		if (first[dev[i]] >= 0) {
			*bad = (guint32)i;
			*why = g_strdup_printf("device %u appears twice (groups %" G_GINT64_FORMAT
					       " and %" G_GSIZE_FORMAT ")",
					       dev[i], first[dev[i]] / group_size, i / group_size);
			return FALSE;
		}
		first[dev[i]] = (gint64)i;
	}
	return TRUE;
}
