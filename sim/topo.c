/* lhsim — the cluster and member sets (docs/engine.md, "Collectives on a cluster"). */
#include "sim/topo.h"

#include <stdlib.h>
#include <string.h>

gboolean lh_hw_has_cluster(const LhHw *hw)
{
	return hw->gpus_per_node > 0;
}

guint32 lh_hw_node_of(const LhHw *hw, guint32 dev)
{
	return hw->gpus_per_node ? dev / hw->gpus_per_node : 0;
}

static int u64_cmp(const void *a, const void *b)
{
	guint64 x = *(const guint64 *)a, y = *(const guint64 *)b;
	return (x > y) - (x < y);
}

static int u32_cmp(const void *a, const void *b)
{
	guint32 x = *(const guint32 *)a, y = *(const guint32 *)b;
	return (x > y) - (x < y);
}

/* Nodes and the most members in one node of one group of @k devices: the group's nodes,
 * sorted, counted in runs (O(k log k)). */
static void group_span(const LhHw *hw, const guint32 *dev, guint32 k, guint32 *nodes,
                       guint32 *per_node)
{
	g_autofree guint32 *nd = g_new(guint32, MAX(k, 1u));
	for (guint32 i = 0; i < k; i++)
		nd[i] = lh_hw_node_of(hw, dev[i]);
	qsort(nd, k, sizeof *nd, u32_cmp);
	*nodes = 0;
	*per_node = 0;
	for (guint32 i = 0, run = 0; i < k; i++) {
		run = i > 0 && nd[i] == nd[i - 1] ? run + 1 : 1;
		*nodes += run == 1;
		*per_node = MAX(*per_node, run);
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

/* The devices of @op, sorted, without repeats (*n of them; caller frees). */
static guint32 *op_devices(const LhGraph *g, const LhOp *op, guint32 *n)
{
	const LhMemberSet *m = lh_graph_op_members(g, op);
	guint32 *d;
	if (!m) {
		guint32 k = op->kind == LH_OP_COLLECTIVE_PERMUTE || op->kind == LH_OP_SEND ||
		                    op->kind == LH_OP_RECV
		                ? 2
		                : MAX(op->group, 1u);
		d = g_new(guint32, k);
		for (guint32 i = 0; i < k; i++)
			d[i] = i;
		*n = k;
		return d;
	}
	gsize k = (gsize)m->n_groups * m->group_size;
	d = g_memdup2(m->dev, MAX(k, 1) * sizeof *d);
	qsort(d, k, sizeof *d, u32_cmp);
	guint32 w = 0;
	for (gsize i = 0; i < k; i++)
		if (!w || d[i] != d[w - 1])
			d[w++] = d[i];
	*n = w;
	return d;
}

gboolean lh_ops_share_devices(const LhGraph *g, const LhOp *a, const LhOp *b)
{
	guint32 na, nb;
	g_autofree guint32 *da = op_devices(g, a, &na);
	g_autofree guint32 *db = op_devices(g, b, &nb);
	guint32 both = 0;
	for (guint32 i = 0, j = 0; i < na && j < nb && both < 2;) {
		if (da[i] == db[j]) {
			both++;
			i++;
			j++;
		} else if (da[i] < db[j]) {
			i++;
		} else {
			j++;
		}
	}
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
			*why = devices
			           ? g_strdup_printf("device %u is outside the module's %u devices",
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
				*why =
				    g_strdup_printf("pair %" G_GSIZE_FORMAT " sends device %u to "
				                    "itself",
				                    i / 2, dev[i]);
				return FALSE;
			}
		return TRUE;
	}
	/* A device twice: sort (id, position) pairs and compare neighbours. */
	g_autofree guint64 *key = g_new(guint64, n);
	for (gsize i = 0; i < n; i++)
		key[i] = (guint64)dev[i] << 32 | (guint64)i;
	qsort(key, n, sizeof *key, u64_cmp);
	for (gsize i = 1; i < n; i++)
		if (key[i] >> 32 == key[i - 1] >> 32) {
			gsize a = (gsize)(key[i - 1] & 0xffffffffu),
			      b = (gsize)(key[i] & 0xffffffffu);
			*bad = (guint32)b;
			*why = g_strdup_printf("device %u appears twice (groups %" G_GSIZE_FORMAT
			                       " and %" G_GSIZE_FORMAT ")",
			                       dev[b], a / group_size, b / group_size);
			return FALSE;
		}
	return TRUE;
}
