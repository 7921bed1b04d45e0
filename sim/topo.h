/* lhsim — the cluster: which node each device sits in, how far a collective's members spread
 * (docs/engine.md, "Collectives on a cluster"), and NCCL-style costs by level. */
#pragma once

#include <glib.h>

#include "sim/graph.h"
#include "sim/hw.h"

G_BEGIN_DECLS

/* How a collective's members spread over nodes: its most spread group (the one that spans
 * the most nodes; among those, the one with the fewest members in one node). */
typedef struct {
	guint32 ranks;    /* members of one group (2 for pairs) */
	guint32 nodes;    /* nodes that group spans (1: it never leaves the node) */
	guint32 per_node; /* most members of that group in one node */
} LhSpan;

/* Whether @hw describes a cluster (gpus_per_node given). Without one every device is in one
 * node. */
gboolean lh_hw_has_cluster(const LhHw *hw);
/* Node of device @dev: dev / gpus_per_node (0 without a cluster). */
guint32 lh_hw_node_of(const LhHw *hw, guint32 dev);

/* The span of collective @op in graph @g (NULL: no member sets) on @hw. Without a member set a
 * group of n is the devices 0 .. n-1 (permute, send and recv: 0 and 1). */
LhSpan lh_op_span(const LhGraph *g, const LhOp *op, const LhHw *hw);
/* A collective whose every group sits in one node: XLA's scale-up (NVLink domain) collective. */
gboolean lh_op_is_scale_up(const LhGraph *g, const LhOp *op, const LhHw *hw);

/* Whether two collectives share more than one device: XLA does not overlap them
 * (openxla/xla#47467, after #19026: they could form cyclic NCCL launch dependencies). Ops
 * without member sets use devices 0 .. group-1. */
gboolean lh_ops_share_devices(const LhGraph *g, const LhOp *a, const LhOp *b);

/* Checks a member set before it goes into a graph. @devices: the device count, or 0 when
 * unknown (then ids must be below n_groups * group_size for a partition, and anything for
 * pairs). On failure *why (caller frees) says what is wrong and *bad is the index in @dev of
 * the offending id (or of the first id of an uneven group). */
gboolean lh_member_set_check(guint32 n_groups, guint32 group_size, gboolean pairs,
                             const guint32 *dev, guint32 devices, char **why, guint32 *bad);

/* NCCL-style cost of a collective on a cluster (docs/engine.md). */
typedef enum { LH_PROTO_LL, LH_PROTO_LL128, LH_PROTO_SIMPLE } LhProto;
typedef struct {
	double latency_ns; /* the protocol's latency term: base + per-step latencies */
	double nvl_ns;     /* bytes over NVLink at the protocol's bandwidth */
	double net_ns;     /* bytes over the network at the protocol's bandwidth */
	double wire_ns;    /* max(nvl_ns, net_ns): the pipelined transfer */
	LhProto proto;     /* the protocol NCCL's model picks (least latency + wire) */
	LhSpan span;
} LhCollCost;

/* The cost of collective @op with span @sp on @hw, which has a cluster. */
LhCollCost lh_coll_cost(const LhOp *op, LhSpan sp, const LhHw *hw);

G_END_DECLS
