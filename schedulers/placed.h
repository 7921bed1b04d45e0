/* lhsim — scheduling a graph placed on several devices (docs/schedulers.md, "Placed graphs").
 *
 * Every scheduler plans one device's program. For a placed graph (sim/graph.h), the graph is
 * split into one graph without placement per device, each is scheduled on that device's
 * hardware, and the plans are merged: device K's streams become "d<K>.<name>" on device K, its
 * events are renumbered, its host commands go to its own host. lh_scheduler_run() does this
 * for a placed graph with one hardware for all devices.
 */
#pragma once

#include "schedulers/scheduler.h"

G_BEGIN_DECLS

/* Schedules placed graph @g with @s on each device: @device_hw holds lh_graph_devices(@g)
 * descriptions (NULL: @hw for all). @explain, when not NULL, gets each device's decisions
 * after a line "placed: device K". Returns the merged plan, or NULL with @error set (the
 * first device whose scheduler failed is named). Caller frees. */
LhPlan *lh_scheduler_run_placed(const LhScheduler *s, const LhGraph *g, const LhHw *hw,
                                const LhHw *const *device_hw, const char *const *kv, FILE *explain,
                                GError **error);

/* Device @d's program as a finished graph without placement: its ops in program order, every
 * field kept but device and sync (0), deps and aliases among them, member sets copied, the
 * XLA schedule's entries of its ops in their order. A send or recv also depends on the
 * previous send or recv (program order) that the device exchanges with the same peer: ops on
 * one NCCL communicator run in the order they were issued, one at a time (PyTorch keeps one
 * communicator per pair of ranks for point-to-point), so a per-device plan keeps the order
 * the graph states and two devices never wait for each other's later transfer. *@map_out
 * (may be NULL) receives, per op of the result, its index in @g (g_free). */
LhGraph *lh_graph_device_program(const LhGraph *g, guint32 d, guint32 **map_out);

G_END_DECLS
