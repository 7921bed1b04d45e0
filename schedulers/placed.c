/* lhsim — scheduling a graph placed on several devices: one scheduler run per device's program,
 * merged into one plan (docs/schedulers.md, "Placed graphs"). */
#include "schedulers/placed.h"

#include <string.h>

/* The rendezvous of a collective: its sync (1 + index), else 0. Sends and recvs are ordered by
 * the chain of program order instead. */
static guint32 coll_sync(const LhOp *op)
{
	return op->kind == LH_OP_SEND || op->kind == LH_OP_RECV ? 0 : op->sync;
}

static gint u64_cmp(gconstpointer a, gconstpointer b)
{
	guint64 x = *(const guint64 *)a, y = *(const guint64 *)b;
	return (x > y) - (x < y);
}

/* Device @d's program; with @rank (per rendezvous, its place in the order the devices scheduled
 * before ran them, 0 = none yet), its rendezvous that have one are also chained in that order.
 * NULL with @error set when that order and the device's deps form a cycle. */
static LhGraph *device_program(const LhGraph *g, guint32 d, const guint32 *rank, guint32 **map_out,
                               GError **error)
{
	guint32 n = lh_graph_n_ops(g);
	g_autofree guint32 *sub_of = g_new(guint32, MAX(n, 1)); /* index in the result, or none */
	GArray *map = g_array_new(FALSE, FALSE, sizeof(guint32));
	for (guint32 i = 0; i < n; i++) {
		sub_of[i] = LH_NO_OP;
		if (lh_graph_op(g, i)->device == d) {
			sub_of[i] = map->len;
			g_array_append_val(map, i);
		}
	}
	g_autofree char *name = g_strdup_printf("%s.d%u", lh_graph_name(g), d);
	g_autoptr(LhGraph) sub = lh_graph_new(name);
	if (lh_graph_devices(g))
		lh_graph_set_devices(sub, lh_graph_devices(g)); /* member ids stay global */
	guint32 last_p2p = LH_NO_OP;                            /* the last send or recv so far */
	for (guint32 k = 0; k < map->len; k++) {
		guint32 i = g_array_index(map, guint32, k);
		const LhOp *op = lh_graph_op(g, i);
		guint32 id = lh_graph_add_op_copy(
		    sub, g, i, op->name, op->alias == LH_NO_OP ? LH_NO_OP : sub_of[op->alias]);
		guint32 ndep;
		const guint32 *deps = lh_graph_deps(g, i, &ndep);
		for (guint32 j = 0; j < ndep; j++)
			lh_graph_add_dep(sub, id, sub_of[deps[j]]); /* no dep crosses devices */
		if ((op->kind == LH_OP_SEND || op->kind == LH_OP_RECV) && op->sync) {
			if (last_p2p != LH_NO_OP)
				lh_graph_add_dep(sub, id, last_p2p);
			last_p2p = id;
		}
	}
	guint32 ns;
	const guint32 *seq = lh_graph_schedule(g, &ns);
	if (seq) {
		g_autoptr(GArray) mine = g_array_new(FALSE, FALSE, sizeof(guint32));
		for (guint32 k = 0; k < ns; k++) {
			guint32 op = seq[k] >> 1;
			if (sub_of[op] != LH_NO_OP) {
				guint32 e = sub_of[op] << 1 | (seq[k] & LH_SCHED_DONE);
				g_array_append_val(mine, e);
			}
		}
		lh_graph_set_schedule(sub, (const guint32 *)mine->data, mine->len);
	}
	if (rank) {
		g_autoptr(GArray) r = g_array_new(FALSE, FALSE, sizeof(guint64));
		for (guint32 k = 0; k < map->len; k++) {
			guint32 sy = coll_sync(lh_graph_op(g, g_array_index(map, guint32, k)));
			if (sy && rank[sy - 1]) {
				guint64 key = (guint64)rank[sy - 1] << 32 | k;
				g_array_append_val(r, key);
			}
		}
		g_array_sort(r, u64_cmp);
		for (guint k = 1; k < r->len; k++)
			lh_graph_add_dep(sub, (guint32)g_array_index(r, guint64, k),
			                 (guint32)g_array_index(r, guint64, k - 1));
	}
	GError *e = NULL;
	if (!lh_graph_finish(sub, NULL, &e)) {
		g_array_free(map, TRUE);
		if (!rank) /* a bug: the placed graph was checked */
			g_error("device %u's program of a finished placed graph is bad: %s", d,
			        e->message);
		g_set_error(
		    error, LH_SCHED_ERROR, LH_SCHED_ERROR_FAILED,
		    "device %u cannot run its collectives in the order the devices before it "
		    "do: %s",
		    d, e->message);
		g_error_free(e);
		return NULL;
	}
	if (map_out)
		*map_out = (guint32 *)g_array_free(map, FALSE);
	else
		g_array_free(map, TRUE);
	return g_steal_pointer(&sub);
}

LhGraph *lh_graph_device_program(const LhGraph *g, guint32 d, guint32 **map_out)
{
	g_return_val_if_fail(g && lh_graph_is_finished(g), NULL);
	return device_program(g, d, NULL, map_out, NULL);
}

/* Whether plan @p (ops @map) runs the rendezvous that have a rank in rank order. */
static gboolean in_rank_order(const LhGraph *g, const LhPlan *p, const guint32 *map,
                              const guint32 *rank)
{
	guint32 last = 0;
	for (guint32 c = 0; c < lh_plan_n_cmds(p); c++) {
		const LhCmd *cmd = lh_plan_cmd(p, c);
		guint32 sy = cmd->kind == LH_CMD_RUN ? coll_sync(lh_graph_op(g, map[cmd->arg])) : 0;
		if (!sy || !rank[sy - 1])
			continue;
		if (rank[sy - 1] < last)
			return FALSE;
		last = rank[sy - 1];
	}
	return TRUE;
}

/* Adds the rendezvous of device @d's plan @p (ops @map) to the global @order (sync indices)
 * and renumbers @rank (1 + position in @order, 0 = not in it): @p runs the ones already
 * ranked in rank order (they were chained), and each new one goes after the ranked one @p ran
 * before it, so @order stays one order that every device scheduled so far keeps. */
static void rank_add(const LhGraph *g, const LhPlan *p, const guint32 *map, GArray *order,
                     guint32 *rank)
{
	g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(guint32));
	guint32 next = 0; /* the first element of @order not yet copied */
	for (guint32 c = 0; c < lh_plan_n_cmds(p); c++) {
		const LhCmd *cmd = lh_plan_cmd(p, c);
		if (cmd->kind != LH_CMD_RUN)
			continue;
		guint32 sy = coll_sync(lh_graph_op(g, map[cmd->arg]));
		if (!sy)
			continue;
		if (!rank[sy - 1]) {
			guint32 v = sy - 1;
			g_array_append_val(out, v);
			rank[sy - 1] = G_MAXUINT32; /* placed; renumbered below */
			continue;
		}
		if (rank[sy - 1] == G_MAXUINT32)
			continue;
		for (; next < rank[sy - 1]; next++)
			g_array_append_val(out, g_array_index(order, guint32, next));
	}
	for (; next < order->len; next++)
		g_array_append_val(out, g_array_index(order, guint32, next));
	g_array_set_size(order, 0);
	g_array_append_vals(order, out->data, out->len);
	for (guint32 k = 0; k < order->len; k++)
		rank[g_array_index(order, guint32, k)] = k + 1;
}

/* Appends device @d's plan @p (made for its program, whose op k is @map[k] of the placed graph)
 * to @out. */
static void merge(LhPlan *out, const LhPlan *p, guint32 d, const guint32 *map)
{
	guint32 s0 = lh_plan_n_streams(out), e0 = lh_plan_n_events(out);
	for (guint32 s = 0; s < lh_plan_n_streams(p); s++) {
		const LhStream *st = lh_plan_stream(p, s);
		g_autofree char *name = g_strdup_printf("d%u.%s", d, st->name);
		lh_plan_add_stream_on(out, name, st->role, d);
	}
	for (guint32 e = 0; e < lh_plan_n_events(p); e++)
		lh_plan_new_event(out); /* ids e0 .. e0 + n - 1 */
	for (guint32 c = 0; c < lh_plan_n_cmds(p); c++) {
		const LhCmd *cmd = lh_plan_cmd(p, c);
		switch ((LhCmdKind)cmd->kind) {
		case LH_CMD_RUN:
			lh_plan_run(out, s0 + cmd->stream, map[cmd->arg]);
			break;
		case LH_CMD_SIGNAL:
			lh_plan_signal(out, s0 + cmd->stream, e0 + (guint32)cmd->arg);
			break;
		case LH_CMD_WAIT:
			lh_plan_wait(out, s0 + cmd->stream, e0 + (guint32)cmd->arg);
			break;
		case LH_CMD_HOST:
			lh_plan_host_on(out, d, cmd->arg);
			break;
		case LH_CMD_SYNC:
			lh_plan_sync(out, s0 + cmd->stream);
			break;
		}
	}
}

LhPlan *lh_scheduler_run_placed(const LhScheduler *s, const LhGraph *g, const LhHw *hw,
                                const LhHw *const *device_hw, const char *const *kv, FILE *explain,
                                GError **error)
{
	g_return_val_if_fail(s && g && hw && lh_graph_placed(g), NULL);
	guint32 nd = lh_graph_devices(g);
	g_autoptr(LhPlan) out = lh_plan_new();
	g_autofree guint32 *rank = g_new0(guint32, MAX(lh_graph_n_syncs(g), 1));
	g_autoptr(GArray) order = g_array_new(FALSE, FALSE, sizeof(guint32));
	for (guint32 d = 0; d < nd; d++) {
		/* First as it stands; again with its ranked rendezvous chained only when its plan
		 * runs them out of the order the devices before it keep. */
		g_autofree guint32 *map = NULL;
		g_autoptr(LhPlan) p = NULL;
		for (int chained = 0; chained < 2 && !p; chained++) {
			g_clear_pointer(&map, g_free);
			g_autoptr(LhGraph) sub =
			    device_program(g, d, chained ? rank : NULL, &map, error);
			if (!sub)
				return NULL;
			if (explain)
				fprintf(explain, "placed: device %u (%u ops)%s\n", d,
				        lh_graph_n_ops(sub),
				        chained
				            ? ", its rendezvous chained in the other devices' order"
				            : "");
			GError *e = NULL;
			p = lh_scheduler_run(s, sub, device_hw ? device_hw[d] : hw, kv, explain,
			                     &e);
			if (!p) {
				if (e->domain != LH_SCHED_ERROR || e->code != LH_SCHED_ERROR_PARAM)
					g_prefix_error(
					    &e, "device %u: ", d); /* a parameter is everyone's */
				g_propagate_error(error, e);
				return NULL;
			}
			if (!chained && !in_rank_order(g, p, map, rank))
				g_clear_pointer(&p, lh_plan_free);
		}
		merge(out, p, d, map);
		rank_add(g, p, map, order, rank);
		if (d == 0)
			lh_plan_set_origin(out, lh_plan_scheduler(p), lh_plan_params(p));
	}
	return g_steal_pointer(&out);
}
