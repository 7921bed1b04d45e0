/* lhsim — `lhs`: XLA's latency-hiding scheduler, re-implemented (docs/design.md#lhs).
 *
 * Written from a reading of xla/service/latency_hiding_scheduler.cc (DefaultSchedulerCore,
 * ReadySetLt, HloScheduleGraph, ApproximateLatencyEstimator) and
 * xla/service/gpu/gpu_latency_hiding_scheduler.cc (GpuAsyncTracker, the GPU resources, the
 * GPU scheduler config). No XLA code is copied.
 *
 * The schedule graph. Every op the scheduler may move off the main stream (op->async, and a
 * resource class other than none: collectives, send/recv, host-offload copies and async
 * kernels, device-to-device copies) becomes an async start/done pair, as XLA's async ops are;
 * every other op is one node on the main stream. Edges: producer's last node -> consumer's
 * first node, with the estimator's low latency; start -> done with the op's latency. A done
 * *occupies* the op's resource class and a start *releases* it (scheduling is bottom-up, so a
 * resource is held from its done, seen first, to its start).
 *
 * Bottom-up list scheduling (DefaultSchedulerCore::ScheduleComputation): the ready set holds
 * nodes whose users are all scheduled; each step picks the best ready node by the rules below,
 * sets its time to max(now, its ready time), advances now by its cost and releases its
 * predecessors, whose ready time is the latest of (now, user's time + edge latency). A done
 * whose class already has `limit` ops in flight is not a candidate (XLA's overlap-limit
 * check). The reverse of the picked sequence is the program order.
 *
 * The ready-set rules, in XLA's order (ReadySetLt::operator()):
 *   kForceEarly                      left out: lhsim graphs carry no scheduling annotations.
 *   kForceDelay                      implemented for one case only, behind
 *                                    delay-offload-start=true (off by default): the start of
 *                                    a copy to host memory (copy-d2h, XLA's MoveToHost async
 *                                    start) is force-delayed, i.e. picked last bottom-up, so
 *                                    it is issued as early as its operands allow. This is our
 *                                    reading of XLA's "delayMoveToHost" heuristic (openxla/xla
 *                                    PR #33240), which makes XLA's test
 *                                    DelayMoveToHostAsyncStart pass (tests/test-sched-xla.c);
 *                                    we could not read that PR's code in full, so it is not
 *                                    the default. Source annotations are not imported.
 *   kOnlyDecreaseMemoryOverLimit,
 *   kDepthOverLimit                  left out: they need depth_based_memory_pressure_reduction,
 *                                    which the GPU config leaves off.
 *   kDecreaseMemoryOverLimit         implemented (usage at or over the limit).
 *   kMemoryPeakOverLimit             implemented. Both memory rules, and kDecreaseMemory
 *                                    below, only count once usage passes half the limit, as
 *                                    in XLA.
 *   early target rule                left out: the GPU backend passes none.
 *   kScheduleDone                    implemented: a done (occupies a resource) first.
 *   kReleaseNonextendable            left out: lhsim has no non-extendable resource.
 *   kScheduleStart                   left out: enable_release_start_policy is off by default.
 *   kLessStall                       implemented: the node whose ready time is nearest.
 *   kLessSerialResourceConflict      left out: resource_serializing is off by default.
 *   kStartAtZeroDepth                implemented (the GPU config sets
 *                                    aggressive_scheduling_policies; async depth is not put
 *                                    before stall): delay a start with async depth 0 whose
 *                                    resource is not backed up.
 *   kFreeBackedupResource            implemented: a start whose class is at its limit with
 *                                    dones waiting in the ready set.
 *   kAsyncDepth                      implemented (aggressive): the longest async latency above.
 *   kAvoidWaste                      implemented (aggressive): a node whose cost best fills
 *                                    the time until the next node becomes ready.
 *   kUnlockDone                      implemented: a node with a done among its operands.
 *   target rule                      left out: the GPU backend passes none.
 *   kNotValuableForSelectiveOverlap  left out: selective resources are off by default.
 *   kCreatesMoreReadyNodes           implemented (aggressive).
 *   kDecreaseMemory                  implemented.
 *   kOriginalOrder                   implemented: the later op in program order first
 *                                    (bottom-up), so ties keep the source order.
 * GPU overlap-limit rules (xla/service/gpu/gpu_latency_hiding_scheduler.cc; openxla/xla#19026
 * and #47467): collectives whose every group sits in one NVLink domain occupy their own
 * resource, limited by scale-up-collective-limit (XLA's
 * xla_gpu_experimental_parallel_scale_up_collective_overlap_limit, default 1, 0 = unlimited);
 * the others keep collective-limit. lhsim counts a collective as scale-up when the hardware
 * has a cluster (gpus_per_node) and the graph gives its member set. Across both resources,
 * a collective that shares more than one device with one in flight is not overlapped with
 * it (its done is held back: two NCCL kernels launched in different orders on two shared
 * ranks could wait on each other). Collectives without member sets are not compared (a group
 * size says nothing of which devices): collective-limit 2 does let two of them overlap.
 *
 * Costs. estimator=model: a node costs the op's standalone time on the hardware model and an
 * async pair's latency is the async op's standalone time. estimator=xla: XLA's
 * ApproximateLatencyEstimator: 1 per node, 1000 for a loop fusion ("fusion:kLoop"), 5000 for
 * an output fusion or a convolution, and 5000 between an async start and its done; 1 on
 * other edges.
 *
 * Memory. The engine's rule (docs/engine.md), seen bottom-up as XLA's MemoryPressureTracker
 * sees its buffers (mem_model): a device buffer is live from the first scheduled node that
 * uses it to the node that allocates it (an op's kernel, or its start); an async op's done
 * uses its operands as well as its output (the engine frees operands when the op ends);
 * inputs are live from t = 0 and outputs nobody reads to the end. memory-limit defaults to
 * the device capacity. XLA's rules alone do not keep to it on modules whose loops the
 * importer unrolled (512 GiB where serial needs 85 on hlo_llama31_70b_bf16_16x8); the memory
 * guard (see "The memory guard") bounds the order by max(memory-limit, serial's peak).
 *
 * The plan. Main stream "main". A start: signal main, then wait and run on a side stream of
 * the op's class; a done: signal the side stream, wait on main. Side streams per class:
 * collectives up to collective-limit, send/recv up to p2p-limit, async compute
 * compute-streams (default async-compute-limit), memcpy as many as are in flight. A start
 * takes the member stream with the fewest ops in flight, so the plan uses as many side
 * streams of a class as the limit lets ops overlap.
 */
#include "schedulers/sched-util.h"
#include "sim/cost.h"
#include "sim/topo.h"

#include <math.h>
#include <string.h>

enum { NODE_KERNEL, NODE_START, NODE_DONE };

/* lhs's resources: XLA's classes (LhOpClass) and, after them, the scale-up collectives
 * (XLA's kGpuAsyncStreamScaleUpCollectives, openxla/xla#47467): collectives whose every group
 * sits in one NVLink domain, on hardware with a cluster, in a graph that says who takes part. */
#define LHS_SCALE_UP LH_CLASS_N
#define LHS_NCLASS (LH_CLASS_N + 1)

static const char *lhs_class_name(guint c)
{
	return c == LHS_SCALE_UP ? "scale-up collective" : lh_op_class_name((LhOpClass)c);
}

static const LhParamSpec lhs_params[] = {
	{"collective-limit", LH_PARAM_INT, "1", 1, 64, NULL,
	 "collectives in flight at once (XLA: kGpuAsyncStreamCollectives)"},
	{"scale-up-collective-limit", LH_PARAM_INT, "1", 0, 64, NULL,
	 "collectives inside one NVLink domain in flight at once, a resource apart from "
	 "collective-limit; 0 = unlimited "
	 "(xla_gpu_experimental_parallel_scale_up_collective_overlap_limit)"},
	{"p2p-limit", LH_PARAM_INT, "4", 1, 64, NULL, "send/recv in flight at once"},
	{"async-compute-limit", LH_PARAM_INT, "2", 1, 64, NULL,
	 "async compute in flight: host-offload copies and async kernels "
	 "(xla_gpu_experimental_parallel_async_compute_limit)"},
	{"memcpy-limit", LH_PARAM_INT, "0", 0, 1024, NULL,
	 "device-to-device copies in flight; 0 = unlimited"},
	{"compute-streams", LH_PARAM_INT, NULL, 1, 64, NULL,
	 "side streams for async compute (default: async-compute-limit)"},
	{"memory-limit", LH_PARAM_DOUBLE, NULL, 1e-9, 1e9, NULL,
	 "soft device memory limit in GiB (default: the device capacity); the peak stays within "
	 "the larger of it and serial's peak"},
	{"delay-offload-start", LH_PARAM_BOOL, "false", 0, 1, NULL,
	 "force-delay the start of copies to host (XLA's delayMoveToHost), issuing them early"},
	{"estimator", LH_PARAM_CHOICE, "model", 0, 0, "model|xla",
	 "costs: the hardware model, or XLA's constant ApproximateLatencyEstimator"},
	{NULL, 0, NULL, 0, 0, NULL, NULL},
};

typedef struct {
	const LhGraph *g;
	const LhParams *p;
	guint32 n_ops, n_nodes;
	/* Nodes. */
	guint32 *node_op;
	guint8 *node_type;
	guint8 *node_class; /* LhOpClass of the resource a start/done uses; NONE for kernels */
	double *cost;
	guint64 *position; /* original order */
	double *async_depth;
	gboolean *unlock_done; /* has a done among its predecessors */
	gboolean *force_delay; /* XLA's ForceDelay: picked last (see kForceDelay above) */
	guint32 *first, *last; /* per op: first and last node; G_MAXUINT32 for inputs */
	/* Edges, CSR both ways. */
	guint32 *pred_at, *pred;
	double *pred_lat;
	guint32 *succ_at, *succ;
	double *succ_lat;
	/* Scheduling state. */
	guint32 *outdeg;
	double *ready_time;
	double now;
	guint32 in_flight[LHS_NCLASS];
	guint32 limit[LHS_NCLASS];
	guint32 waiting_dones[LHS_NCLASS]; /* dones of each class in the ready set */
	GArray *coll_in_flight; /* ops of the collectives in flight (a done scheduled, not its
	                           start), for XLA's rule on shared devices */
	/* Memory (bytes), see mem_model(). Per buffer: 0 = not live yet, 1 = live, 2 = freed. */
	guint8 *buf;
	double *buf_bytes;       /* per buffer: bytes allocated by the op that starts it */
	guint32 *buf_of;         /* per op: the buffer its output lives in */
	guint32 *freer;          /* per buffer: the node that frees it bottom-up, or G_MAXUINT32 */
	gboolean *to_end;        /* per buffer: no op depends on it, so it lives to the end */
	guint32 *nbuf_at, *nbuf; /* per node, CSR: the buffers it uses (each once) */
	guint32 *user_at, *user; /* per buffer, CSR: the nodes that use it */
	double usage, limit_bytes;
	double max_use;      /* most bytes any node's used buffers hold (a bound on its peak) */
	gboolean mem_active; /* usage > limit / 2 at this step */
	double next_ready;   /* earliest ready time above now among ready nodes, or -1 */
	/* The memory index (see "Memory pressure" below): kept from the first step that needs
	 * it on (mem_index), if it can be (mem_index_ok). */
	gboolean mem_index_ok, mem_index;
	double *mem_inc;         /* per ready node: memory_change()'s net change */
	double *mem_peak;        /* per ready node: memory_change()'s peak change */
	/* The memory guard (see "The memory guard" below), when guard is set. */
	gboolean guard;
	guint32 gn;             /* leaves of the tree: a power of two >= n_nodes */
	double *gmx, *gsum;     /* the tree (gt_add) */
	guint32 *gpos;          /* per node: its position in serial's order */
	guint32 *gdef, *gend;   /* per buffer: its first and (while unused) last position */
	double cap;             /* max(limit, the serial order's peak) */
	double p0;              /* the serial order's peak (the model) */
	double peak_done;       /* the peak of the steps taken so far (the model) */
	GArray *gheap;          /* ready nodes, max-heap by gpos (lazy) */
	guint32 n_veto;         /* picks the guard replaced */
} Lhs;

typedef struct {
	guint32 node;
	double mem_inc, mem_peak; /* valid when mem_active */
} Cand;

static double xla_node_cost(const LhOp *op)
{
	const char *oc = op->opcode;
	if (!oc)
		return 1;
	if (strcmp(oc, "fusion:kLoop") == 0)
		return 1000;
	if (strcmp(oc, "fusion:kOutput") == 0 || strcmp(oc, "convolution") == 0)
		return 5000;
	return 1;
}

/* The resource an async op occupies: its class, or the scale-up collectives (see
 * LHS_SCALE_UP). */
static guint8 lhs_class(const LhGraph *g, const LhOp *op, const LhHw *hw)
{
	LhOpClass c = lh_op_class(op);
	if (c == LH_CLASS_COLLECTIVE && lh_hw_has_cluster(hw) && lh_graph_op_members(g, op) &&
	    lh_op_is_scale_up(g, op, hw))
		return LHS_SCALE_UP;
	return (guint8)c;
}

static gboolean is_async(const LhOp *op)
{
	return op->kind != LH_OP_INPUT && op->async && lh_op_class(op) != LH_CLASS_NONE;
}

static void build_graph(Lhs *s, const LhHw *hw, gboolean xla)
{
	const LhGraph *g = s->g;
	guint32 n = s->n_ops;
	s->first = g_new(guint32, n);
	s->last = g_new(guint32, n);
	guint32 m = 0;
	for (guint32 i = 0; i < n; i++) {
		const LhOp *op = lh_graph_op(g, i);
		if (op->kind == LH_OP_INPUT) {
			s->first[i] = s->last[i] = G_MAXUINT32;
			continue;
		}
		s->first[i] = m;
		m += is_async(op) ? 2 : 1;
		s->last[i] = m - 1;
	}
	s->n_nodes = m;
	s->node_op = g_new(guint32, m);
	s->node_type = g_new(guint8, m);
	s->node_class = g_new0(guint8, m);
	s->cost = g_new0(double, m);
	s->position = g_new(guint64, m);
	for (guint32 i = 0; i < n; i++) {
		const LhOp *op = lh_graph_op(g, i);
		if (op->kind == LH_OP_INPUT)
			continue;
		guint32 a = s->first[i];
		double t = lh_op_standalone_ns_in(g, op, hw);
		if (is_async(op)) {
			s->node_op[a] = s->node_op[a + 1] = i;
			s->node_type[a] = NODE_START;
			s->node_type[a + 1] = NODE_DONE;
			s->node_class[a] = s->node_class[a + 1] = lhs_class(g, op, hw);
			s->cost[a] = s->cost[a + 1] = xla ? 1 : 0;
			s->position[a] = 2 * (guint64)i;
			s->position[a + 1] = 2 * (guint64)i + 1;
		} else {
			s->node_op[a] = i;
			s->node_type[a] = NODE_KERNEL;
			s->cost[a] = xla ? xla_node_cost(op) : t;
			s->position[a] = 2 * (guint64)i + 1;
		}
	}
	/* Edges: count, then fill. */
	s->pred_at = g_new0(guint32, m + 1);
	s->succ_at = g_new0(guint32, m + 1);
	double low = xla ? 1 : 0;
	for (guint32 i = 0; i < n; i++) {
		if (s->first[i] == G_MAXUINT32)
			continue;
		guint32 nd;
		const guint32 *d = lh_graph_deps(g, i, &nd);
		for (guint32 k = 0; k < nd; k++)
			if (s->first[d[k]] != G_MAXUINT32) {
				s->pred_at[s->first[i] + 1]++;
				s->succ_at[s->last[d[k]] + 1]++;
			}
		if (s->first[i] != s->last[i]) {
			s->pred_at[s->last[i] + 1]++;
			s->succ_at[s->first[i] + 1]++;
		}
	}
	for (guint32 k = 0; k < m; k++) {
		s->pred_at[k + 1] += s->pred_at[k];
		s->succ_at[k + 1] += s->succ_at[k];
	}
	guint32 ne = s->pred_at[m];
	s->pred = g_new(guint32, ne ? ne : 1);
	s->succ = g_new(guint32, ne ? ne : 1);
	s->pred_lat = g_new(double, ne ? ne : 1);
	s->succ_lat = g_new(double, ne ? ne : 1);
	g_autofree guint32 *pf = g_memdup2(s->pred_at, sizeof(guint32) * (m + 1));
	g_autofree guint32 *sf = g_memdup2(s->succ_at, sizeof(guint32) * (m + 1));
	for (guint32 i = 0; i < n; i++) {
		if (s->first[i] == G_MAXUINT32)
			continue;
		const LhOp *op = lh_graph_op(g, i);
		if (s->first[i] != s->last[i]) {
			double lat = xla ? 5000 : lh_op_standalone_ns_in(g, op, hw);
			guint32 a = s->first[i], b = s->last[i];
			s->pred[pf[b]] = a;
			s->pred_lat[pf[b]++] = lat;
			s->succ[sf[a]] = b;
			s->succ_lat[sf[a]++] = lat;
		}
		guint32 nd;
		const guint32 *d = lh_graph_deps(g, i, &nd);
		for (guint32 k = 0; k < nd; k++) {
			if (s->first[d[k]] == G_MAXUINT32)
				continue;
			guint32 from = s->last[d[k]], to = s->first[i];
			s->pred[pf[to]] = from;
			s->pred_lat[pf[to]++] = low;
			s->succ[sf[from]] = to;
			s->succ_lat[sf[from]++] = low;
		}
	}
	/* Async depth, in topological order of ops (nodes of an op follow its deps). */
	s->async_depth = g_new0(double, m);
	s->unlock_done = g_new0(gboolean, m);
	s->force_delay = g_new0(gboolean, m);
	for (guint32 v = 0; v < m && lh_params_get_bool(s->p, "delay-offload-start"); v++)
		s->force_delay[v] = s->node_type[v] == NODE_START &&
				    lh_graph_op(g, s->node_op[v])->kind == LH_OP_COPY_D2H;
	const guint32 *topo = lh_graph_topo(g);
	for (guint32 k = 0; k < n; k++) {
		guint32 i = topo[k];
		if (s->first[i] == G_MAXUINT32)
			continue;
		for (guint32 v = s->first[i]; v <= s->last[i]; v++)
			for (guint32 e = s->pred_at[v]; e < s->pred_at[v + 1]; e++) {
				guint32 u = s->pred[e];
				double d = s->async_depth[u];
				if (s->node_type[v] == NODE_DONE)
					d += s->pred_lat[e];
				if (d > s->async_depth[v])
					s->async_depth[v] = d;
				if (s->node_type[u] == NODE_DONE)
					s->unlock_done[v] = TRUE;
			}
	}
}

static void lhs_free(Lhs *s)
{
	g_free(s->node_op);
	g_free(s->node_type);
	g_free(s->node_class);
	g_free(s->cost);
	g_free(s->position);
	g_free(s->async_depth);
	g_free(s->unlock_done);
	g_free(s->force_delay);
	g_free(s->first);
	g_free(s->last);
	g_free(s->pred_at);
	g_free(s->pred);
	g_free(s->pred_lat);
	g_free(s->succ_at);
	g_free(s->succ);
	g_free(s->succ_lat);
	g_free(s->outdeg);
	g_free(s->ready_time);
	g_free(s->buf);
	g_free(s->buf_bytes);
	g_free(s->buf_of);
	g_free(s->freer);
	g_free(s->to_end);
	g_free(s->nbuf_at);
	g_free(s->nbuf);
	g_free(s->mem_inc);
	g_free(s->mem_peak);
	g_free(s->gmx);
	g_free(s->gsum);
	g_free(s->gpos);
	g_free(s->gdef);
	g_free(s->gend);
	if (s->gheap)
		g_array_free(s->gheap, TRUE);
	g_free(s->user_at);
	g_free(s->user);
}

/* The buffers a node uses (mem_model): calls BODY with @b set to each, once. */
#define FOR_EACH_USED_BUFFER(s, v, b, BODY)                                                  \
	do {                                                                                 \
		for (guint32 k_ = (s)->nbuf_at[v]; k_ < (s)->nbuf_at[(v) + 1]; k_++) {       \
			guint32 b = (s)->nbuf[k_];                                           \
			BODY;                                                                \
		}                                                                            \
	} while (0)

/* The buffer @v frees bottom-up (it allocates it), or G_MAXUINT32. */
static guint32 node_frees(const Lhs *s, guint32 v)
{
	if (s->node_type[v] == NODE_DONE)
		return G_MAXUINT32;
	guint32 b = s->buf_of[s->node_op[v]];
	return s->freer[b] == v ? b : G_MAXUINT32;
}

/* The engine's memory rule (docs/engine.md, "Memory"), seen bottom-up; the one place that
 * says which bytes an op allocates and which node frees them. Op i's output lives in buffer
 * buf_of[i] (its own, numbered i, or for an op with an alias the aliased dep's), of buf_bytes bytes (its out_bytes in device
 * space) allocated when i starts. A buffer lives until the last op that depends on it ends;
 * one nobody depends on lives to the end (to_end), inputs from t = 0. Bottom-up, a node
 * *uses* the buffers that must be live while it runs: a kernel and a start its op's operands;
 * a done its op's operands too (the engine frees them when the async op ends, and XLA's done
 * reads the start's tuple, which holds them) and its own op's output (written while in
 * flight). The first user scheduled makes a buffer live; the node that allocates it (the
 * kernel or start of its op: freer) frees it. Buffers that live to the end are live from the
 * first step; inputs are never freed (their allocation at t = 0 is nobody's to move). An op
 * that wrote its output in place into a dep's buffer would get buf_of[i] = that buffer and
 * buf_bytes 0 (nothing allocated): its users then keep the dep's buffer live, and the dep's
 * node still frees it. That is what an op with an alias gets. */
static void mem_model(Lhs *s)
{
	const LhGraph *g = s->g;
	guint32 n = s->n_ops, m = s->n_nodes;
	s->buf = g_new0(guint8, n);
	s->buf_bytes = g_new0(double, n);
	s->buf_of = g_new(guint32, n);
	s->freer = g_new(guint32, n);
	s->to_end = g_new0(gboolean, n);
	g_autofree guint32 *consumers = g_new0(guint32, n);
	/* In topological order, so that a chain of aliases resolves to the buffer its first op
	 * allocated (docs/graph-format.md, "Buffers"). */
	const guint32 *topo = lh_graph_topo(g);
	for (guint32 t = 0; t < n; t++) {
		guint32 i = topo[t];
		const LhOp *op = lh_graph_op(g, i);
		s->freer[i] = s->first[i]; /* G_MAXUINT32 for an input */
		if (op->alias != LH_NO_OP) {
			s->buf_of[i] = s->buf_of[op->alias]; /* in place: allocates nothing */
		} else {
			s->buf_of[i] = i;
			if (op->out_space == LH_SPACE_DEVICE)
				s->buf_bytes[i] = (double)op->out_bytes;
		}
		guint32 nd;
		const guint32 *d = lh_graph_deps(g, i, &nd);
		for (guint32 k = 0; k < nd; k++)
			consumers[d[k]]++;
	}
	for (guint32 i = 0; i < n; i++)
		if (consumers[i] == 0)
			s->to_end[s->buf_of[i]] = TRUE;
	for (guint32 b = 0; b < n; b++)
		if (s->to_end[b] && s->buf_bytes[b] > 0) {
			s->buf[b] = 1;
			s->usage += s->buf_bytes[b];
		}
	/* Per node, the buffers it uses, each once; then the same the other way round. */
	g_autofree guint32 *seen = g_new(guint32, n);
	memset(seen, 0xff, sizeof(guint32) * n);
	guint64 most = m;
	for (guint32 v = 0; v < m; v++)
		most += lh_graph_op(g, s->node_op[v])->n_deps;
	s->nbuf = g_new(guint32, most ? most : 1);
	s->nbuf_at = g_new(guint32, m + 1);
	s->user_at = g_new0(guint32, n + 1);
	guint32 len = 0;
	for (guint32 v = 0; v < m; v++) {
		s->nbuf_at[v] = len;
		guint32 i = s->node_op[v], nd;
		const guint32 *d = lh_graph_deps(g, i, &nd);
		for (guint32 k = 0; k <= nd; k++) {
			guint32 b;
			if (k < nd)
				b = s->buf_of[d[k]];
			else if (s->node_type[v] == NODE_DONE)
				b = s->buf_of[i];
			else
				break;
			if (seen[b] == v)
				continue;
			seen[b] = v;
			s->nbuf[len++] = b;
			s->user_at[b + 1]++;
		}
	}
	s->nbuf_at[m] = len;
	for (guint32 b = 0; b < n; b++)
		s->user_at[b + 1] += s->user_at[b];
	s->user = g_new(guint32, s->user_at[n] ? s->user_at[n] : 1);
	g_autofree guint32 *at = g_memdup2(s->user_at, sizeof(guint32) * (n + 1));
	for (guint32 v = 0; v < m; v++)
		FOR_EACH_USED_BUFFER(s, v, b, s->user[at[b]++] = v);
}

/* XLA's GetMemoryPressureChanges: (net change, peak change) if @v were scheduled now. */
static void memory_change(const Lhs *s, guint32 v, double *inc, double *peak)
{
	double add = 0, freed = 0;
	FOR_EACH_USED_BUFFER(s, v, b, {
		if (s->buf[b] == 0)
			add += s->buf_bytes[b];
	});
	guint32 f = node_frees(s, v);
	if (f != G_MAXUINT32 && s->buf[f] == 1)
		freed = s->buf_bytes[f];
	*inc = add - freed;
	*peak = add;
}

static gboolean releases(const Lhs *s, guint32 v)
{
	return s->node_type[v] == NODE_START;
}

/* XLA's IsResourceConstrained: the node's resource is fully in use and dones of its class
 * wait in the ready set. */
static gboolean constrained(const Lhs *s, guint32 v)
{
	if (s->node_type[v] == NODE_KERNEL)
		return FALSE;
	guint8 c = s->node_class[v];
	return s->in_flight[c] >= s->limit[c] && s->waiting_dones[c] > 0;
}

static int ready_if_scheduled(const Lhs *s, guint32 v)
{
	int k = 0;
	for (guint32 e = s->pred_at[v]; e < s->pred_at[v + 1]; e++)
		if (s->outdeg[s->pred[e]] == 1)
			k++;
	return k;
}

/* One rule: a wins when only @ca holds, b wins when only @cb holds, else undecided. */
#define RULE(ca, cb, name)                                                                   \
	do {                                                                                 \
		gboolean a_ = (ca), b_ = (cb);                                               \
		if (a_ != b_) {                                                              \
			*reason = name;                                                      \
			return a_;                                                           \
		}                                                                            \
	} while (0)

/* The leading rules, each a key of one node (a flag, or a number compared with < or >), taken
 * in order, i.e. one lexicographic comparison of key tuples: 1 when @a is preferred, -1 when
 * @b is, 0 when they tie on all of them (then *@reason is left alone). */
#define LEAD(ca, cb, name)                                                                   \
	do {                                                                                 \
		gboolean a_ = (ca), b_ = (cb);                                               \
		if (a_ != b_) {                                                              \
			*reason = name;                                                      \
			return a_ ? 1 : -1;                                                  \
		}                                                                            \
	} while (0)

static int prefer_lead(const Lhs *s, const Cand *ca, const Cand *cb, const char **reason)
{
	guint32 a = ca->node, b = cb->node;
	LEAD(!s->force_delay[a], !s->force_delay[b], "kForceDelay");
	if (s->mem_active) {
		if (s->usage >= s->limit_bytes)
			LEAD(ca->mem_inc < cb->mem_inc, cb->mem_inc < ca->mem_inc,
			     "kDecreaseMemoryOverLimit");
		LEAD(ca->mem_peak + s->usage <= s->limit_bytes,
		     cb->mem_peak + s->usage <= s->limit_bytes, "kMemoryPeakOverLimit");
	}
	LEAD(s->node_type[a] == NODE_DONE, s->node_type[b] == NODE_DONE, "kScheduleDone");
	double ra = MAX(s->ready_time[a] - s->now, 0), rb = MAX(s->ready_time[b] - s->now, 0);
	LEAD(ra < rb, rb < ra, "kLessStall");
	LEAD(!(releases(s, a) && s->async_depth[a] == 0 && !constrained(s, a)),
	     !(releases(s, b) && s->async_depth[b] == 0 && !constrained(s, b)),
	     "kStartAtZeroDepth");
	LEAD(releases(s, a) && constrained(s, a), releases(s, b) && constrained(s, b),
	     "kFreeBackedupResource");
	LEAD(s->async_depth[a] > s->async_depth[b], s->async_depth[b] > s->async_depth[a],
	     "kAsyncDepth");
	return 0;
}

/* TRUE when @a is preferred over @b; *@reason names the rule that decided. */
static gboolean prefer(const Lhs *s, const Cand *ca, const Cand *cb, const char **reason)
{
	guint32 a = ca->node, b = cb->node;
	int lead = prefer_lead(s, ca, cb, reason);
	if (lead != 0)
		return lead > 0;
	if (s->next_ready >= 0) {
		double da = fabs(s->next_ready - s->now - s->cost[a]);
		double db = fabs(s->next_ready - s->now - s->cost[b]);
		RULE(!releases(s, a) && da < db, !releases(s, b) && db < da, "kAvoidWaste");
	}
	RULE(s->unlock_done[a], s->unlock_done[b], "kUnlockDone");
	int na = ready_if_scheduled(s, a), nb = ready_if_scheduled(s, b);
	RULE(na > nb, nb > na, "kCreatesMoreReadyNodes");
	if (s->mem_active)
		RULE(ca->mem_inc < 0, cb->mem_inc < 0, "kDecreaseMemory");
	*reason = "kOriginalOrder";
	return s->position[a] > s->position[b];
}

/* The ready set, kept so that each step only compares the candidates that can win.
 *
 * XLA compares every ready node with the best so far, rule by rule. The first rules are plain
 * keys: kForceDelay, kScheduleDone (a done whose class has a free slot; a done without one is
 * no candidate at all), kLessStall (nodes ready now tie at 0), kStartAtZeroDepth and
 * kFreeBackedupResource (which together put the starts of a backed-up class first, then
 * kernels and starts with async depth > 0, then starts with depth 0), kAsyncDepth (the
 * highest). A node that loses on one of these keys never wins, and the winner of the scan is
 * the winner of the same scan over the nodes that tie on them; so only those are compared,
 * with the full rule list, in ascending node order. When memory pressure is active the memory
 * rules come first, and the memory index finds the candidates instead (see "Memory pressure"
 * below). With the test hook LHSIM_LHS_REFERENCE set every ready node is compared (ready_all),
 * as XLA does; tests/test-sched-props.c checks that both give the same plans.
 *
 * Structures: dones by class; force-delayed nodes; nodes not ready yet in a min-heap by ready
 * time; nodes ready now: kernels and starts with async depth > 0 in a tree by (depth, node),
 * starts with depth 0 in a list, and every ready-now start also in a list of its class. */
typedef struct {
	guint32 n;               /* ready nodes in all */
	GTree *dnow[LHS_NCLASS];  /* ready-now dones by class, key node+1, by (depth, node) */
	GArray *dheap[LHS_NCLASS]; /* dones not ready yet, min-heap by ready time (lazy) */
	GArray *fd;              /* force-delayed */
	GArray *heap;            /* of guint32, min ready_time then node */
	GTree *deep;             /* ready now: kernels, starts with depth > 0; key node+1 */
	GArray *zero;            /* ready now: starts with async depth 0 */
	GArray *starts[LHS_NCLASS]; /* ready now: starts by class */
	double early_t;          /* ready time of nodes moved in before it came, or -1 */
	GArray *later;           /* min-heap of dones and fd nodes by ready time (lazy) */
	double stale_t;          /* ready time of nodes moved in ahead of time and not picked
	                            when now did not reach it (see ready_advance); -1 if none */
	guint8 *where;           /* per node: 0 none, 1 done, 2 fd, 3 heap, 4 now */
	guint32 *slot;           /* position in dones/fd/zero list */
	guint32 *sslot;          /* position in starts[c] */
	/* The memory index, kept when s->mem_index is set: every ready node that is not
	 * force-delayed, by (mem_inc, deepest, node): kernels and starts in one tree, dones in
	 * one per class; and the same nodes in a list. */
	GTree *by_inc;
	GTree *dones_by_inc[LHS_NCLASS];
	GArray *plain;           /* ready, not force-delayed */
	guint32 *pslot;          /* position in plain */
	/* And a min-tree over deep's order (async depth, deepest first, then node) of all
	 * kernels and starts: a leaf holds the node's mem_peak while it is in deep, else
	 * infinity; so the first node of deep that passes kMemoryPeakOverLimit is found in
	 * O(log n) (seg_find). */
	double *seg;
	guint32 seg_n;           /* leaves, a power of two */
	guint32 *deep_rank;      /* per kernel or start: its leaf */
	guint32 *rank_node;      /* per leaf: the node */
	const Lhs *s;
} Ready;

enum { W_NONE, W_DONE, W_FD, W_HEAP, W_NOW, W_DNOW };

static int deep_cmp(gconstpointer pa, gconstpointer pb, gpointer data)
{
	const Lhs *s = data;
	guint32 a = GPOINTER_TO_UINT(pa) - 1, b = GPOINTER_TO_UINT(pb) - 1;
	if (s->async_depth[a] != s->async_depth[b])
		return s->async_depth[a] > s->async_depth[b] ? -1 : 1; /* deepest first */
	return (a > b) - (a < b);
}

static int inc_cmp(gconstpointer pa, gconstpointer pb, gpointer data)
{
	const Lhs *s = data;
	guint32 a = GPOINTER_TO_UINT(pa) - 1, b = GPOINTER_TO_UINT(pb) - 1;
	if (s->mem_inc[a] != s->mem_inc[b])
		return s->mem_inc[a] < s->mem_inc[b] ? -1 : 1;
	if (s->async_depth[a] != s->async_depth[b])
		return s->async_depth[a] > s->async_depth[b] ? -1 : 1; /* deepest first */
	return (a > b) - (a < b);
}

static int rank_cmp(gconstpointer pa, gconstpointer pb, gpointer data)
{
	return deep_cmp(GUINT_TO_POINTER(*(const guint32 *)pa + 1),
			GUINT_TO_POINTER(*(const guint32 *)pb + 1), data);
}

static void seg_set(Ready *r, guint32 v, double x)
{
	guint32 k = r->seg_n + r->deep_rank[v];
	r->seg[k] = x;
	for (k /= 2; k > 0; k /= 2)
		r->seg[k] = MIN(r->seg[2 * k], r->seg[2 * k + 1]);
}

/* The first leaf at or after @from under tree node @k (leaves @lo..@hi) whose mem_peak passes
 * kMemoryPeakOverLimit, or G_MAXUINT32. A subtree holds one that passes iff its least does:
 * rounding keeps x + usage monotonic in x. */
static guint32 seg_find_in(const Ready *r, const Lhs *s, guint32 k, guint32 lo, guint32 hi,
			   guint32 from)
{
	if (hi <= from || !(r->seg[k] + s->usage <= s->limit_bytes))
		return G_MAXUINT32;
	if (hi - lo == 1)
		return lo;
	guint32 mid = lo + (hi - lo) / 2;
	guint32 x = seg_find_in(r, s, 2 * k, lo, mid, from);
	return x != G_MAXUINT32 ? x : seg_find_in(r, s, 2 * k + 1, mid, hi, from);
}

static guint32 seg_find(const Ready *r, const Lhs *s, guint32 from)
{
	return seg_find_in(r, s, 1, 0, r->seg_n, from);
}

static gboolean in_deep(const Ready *r, const Lhs *s, guint32 v)
{
	return r->where[v] == W_NOW && !(s->node_type[v] == NODE_START && s->async_depth[v] == 0);
}

static void list_add(GArray *l, guint32 *slot, guint32 v)
{
	slot[v] = l->len;
	g_array_append_val(l, v);
}

static void list_del(GArray *l, guint32 *slot, guint32 v)
{
	guint32 k = slot[v], last = g_array_index(l, guint32, l->len - 1);
	g_array_index(l, guint32, k) = last;
	slot[last] = k;
	g_array_set_size(l, l->len - 1);
}

static gboolean heap_less(const Lhs *s, guint32 a, guint32 b)
{
	if (s->ready_time[a] != s->ready_time[b])
		return s->ready_time[a] < s->ready_time[b];
	return a < b;
}

static void heap_push(GArray *h, const Lhs *s, guint32 v)
{
	g_array_append_val(h, v);
	guint32 *d = (guint32 *)h->data;
	for (guint32 k = h->len - 1; k > 0;) {
		guint32 up = (k - 1) / 2;
		if (!heap_less(s, d[k], d[up]))
			break;
		guint32 t = d[k];
		d[k] = d[up];
		d[up] = t;
		k = up;
	}
}

static guint32 heap_pop(GArray *h, const Lhs *s)
{
	guint32 *d = (guint32 *)h->data, top = d[0], n = h->len - 1;
	d[0] = d[n];
	g_array_set_size(h, n);
	for (guint32 k = 0;;) {
		guint32 l = 2 * k + 1, r = l + 1, m = k;
		if (l < n && heap_less(s, d[l], d[m]))
			m = l;
		if (r < n && heap_less(s, d[r], d[m]))
			m = r;
		if (m == k)
			break;
		guint32 t = d[k];
		d[k] = d[m];
		d[m] = t;
		k = m;
	}
	return top;
}

static void ready_init(Ready *r, const Lhs *s)
{
	memset(r, 0, sizeof *r);
	r->s = s;
	for (guint c = 0; c < LHS_NCLASS; c++) {
		r->dnow[c] = g_tree_new_full(deep_cmp, (gpointer)s, NULL, NULL);
		r->dheap[c] = g_array_new(FALSE, FALSE, sizeof(guint32));
		r->starts[c] = g_array_new(FALSE, FALSE, sizeof(guint32));
	}
	r->fd = g_array_new(FALSE, FALSE, sizeof(guint32));
	r->heap = g_array_new(FALSE, FALSE, sizeof(guint32));
	r->later = g_array_new(FALSE, FALSE, sizeof(guint32));
	r->zero = g_array_new(FALSE, FALSE, sizeof(guint32));
	r->deep = g_tree_new_full(deep_cmp, (gpointer)s, NULL, NULL);
	r->stale_t = -1;
	r->where = g_new0(guint8, s->n_nodes);
	r->slot = g_new0(guint32, s->n_nodes);
	r->sslot = g_new0(guint32, s->n_nodes);
}

static void ready_clear(Ready *r)
{
	for (guint c = 0; c < LHS_NCLASS; c++) {
		g_tree_destroy(r->dnow[c]);
		g_array_free(r->dheap[c], TRUE);
		g_array_free(r->starts[c], TRUE);
	}
	g_array_free(r->fd, TRUE);
	g_array_free(r->heap, TRUE);
	g_array_free(r->later, TRUE);
	g_array_free(r->zero, TRUE);
	g_tree_destroy(r->deep);
	g_free(r->where);
	g_free(r->slot);
	g_free(r->sslot);
	if (r->by_inc) {
		g_tree_destroy(r->by_inc);
		for (guint c = 0; c < LHS_NCLASS; c++)
			g_tree_destroy(r->dones_by_inc[c]);
		g_array_free(r->plain, TRUE);
		g_free(r->pslot);
		g_free(r->seg);
		g_free(r->deep_rank);
		g_free(r->rank_node);
	}
}

/* The memory index's tree of @v (not force-delayed). */
static GTree *inc_tree(const Ready *r, const Lhs *s, guint32 v)
{
	return s->node_type[v] == NODE_DONE ? r->dones_by_inc[s->node_class[v]] : r->by_inc;
}

/* Before now_add(), or for a node already in its place (index_build). */
static void index_add(Ready *r, Lhs *s, guint32 v)
{
	memory_change(s, v, &s->mem_inc[v], &s->mem_peak[v]);
	if (s->force_delay[v])
		return;
	g_tree_insert(inc_tree(r, s, v), GUINT_TO_POINTER(v + 1), GUINT_TO_POINTER(1));
	list_add(r->plain, r->pslot, v);
	if (in_deep(r, s, v))
		seg_set(r, v, s->mem_peak[v]);
}

static void index_remove(Ready *r, const Lhs *s, guint32 v)
{
	if (s->force_delay[v])
		return;
	g_tree_remove(inc_tree(r, s, v), GUINT_TO_POINTER(v + 1));
	list_del(r->plain, r->pslot, v);
}

/* A ready node's memory change moves by (@d_inc, @d_peak) bytes. */
static void index_move(Ready *r, Lhs *s, guint32 v, double d_inc, double d_peak)
{
	if (!s->force_delay[v])
		g_tree_remove(inc_tree(r, s, v), GUINT_TO_POINTER(v + 1));
	s->mem_inc[v] += d_inc;
	s->mem_peak[v] += d_peak;
	if (!s->force_delay[v])
		g_tree_insert(inc_tree(r, s, v), GUINT_TO_POINTER(v + 1), GUINT_TO_POINTER(1));
	if (in_deep(r, s, v))
		seg_set(r, v, s->mem_peak[v]);
}

/* Buffer @b leaves state 0 (not live yet) for state @to (1 live, 2 freed). memory_change()
 * counts it for a node that uses it only in state 0, so every ready user now needs its bytes
 * less; and the node that frees it (its freer) counts it as freed only in state 1. (Neither can happen in fact while that node is ready, since all users of
 * a buffer are scheduled before its producer is ready; it is handled all the same.) */
static void index_buffer(Ready *r, Lhs *s, guint32 b, guint8 to)
{
	double bytes = s->buf_bytes[b];
	if (bytes == 0)
		return;
	for (guint32 k = s->user_at[b]; k < s->user_at[b + 1]; k++)
		if (r->where[s->user[k]] != W_NONE)
			index_move(r, s, s->user[k], -bytes, -bytes);
	guint32 v = s->freer[b];
	if (to == 1 && v != G_MAXUINT32 && r->where[v] != W_NONE)
		index_move(r, s, v, -bytes, 0);
}

/* Marks the buffers @v uses live and frees its own (bottom-up, its producer is scheduled);
 * keeps the memory index. @v has left the ready set. */
static void memory_schedule(Ready *r, Lhs *s, guint32 v)
{
	FOR_EACH_USED_BUFFER(s, v, b, {
		if (s->buf[b] == 0) {
			s->buf[b] = 1;
			s->usage += s->buf_bytes[b];
			if (s->mem_index)
				index_buffer(r, s, b, 1);
		}
	});
	guint32 f = node_frees(s, v);
	if (f != G_MAXUINT32) {
		if (s->buf[f] == 1)
			s->usage -= s->buf_bytes[f];
		else if (s->buf[f] == 0 && s->mem_index)
			index_buffer(r, s, f, 2);
		s->buf[f] = 2;
	}
}

static void now_add(Ready *r, const Lhs *s, guint32 v)
{
	r->where[v] = W_NOW;
	if (s->node_type[v] == NODE_START) {
		list_add(r->starts[s->node_class[v]], r->sslot, v);
		if (s->async_depth[v] == 0) {
			list_add(r->zero, r->slot, v);
			return;
		}
	}
	g_tree_insert(r->deep, GUINT_TO_POINTER(v + 1), GUINT_TO_POINTER(1));
	if (r->seg)
		seg_set(r, v, s->mem_peak[v]);
}

static void gheap_push(Lhs *s, guint32 v);

static void ready_add(Ready *r, Lhs *s, guint32 v)
{
	r->n++;
	if (s->guard)
		gheap_push(s, v);
	if (s->mem_index)
		index_add(r, s, v);
	if (s->node_type[v] == NODE_DONE) {
		s->waiting_dones[s->node_class[v]]++;
		if (s->ready_time[v] > s->now) {
			r->where[v] = W_DONE;
			heap_push(r->dheap[s->node_class[v]], s, v);
			heap_push(r->later, s, v);
		} else {
			r->where[v] = W_DNOW;
			g_tree_insert(r->dnow[s->node_class[v]], GUINT_TO_POINTER(v + 1),
				      GUINT_TO_POINTER(1));
		}
	} else if (s->force_delay[v]) {
		r->where[v] = W_FD;
		list_add(r->fd, r->slot, v);
		if (s->ready_time[v] > s->now)
			heap_push(r->later, s, v);
	} else if (s->ready_time[v] <= s->now) {
		now_add(r, s, v);
	} else {
		r->where[v] = W_HEAP;
		heap_push(r->heap, s, v);
	}
}

static void heap_clean(Ready *r, const Lhs *s)
{
	while (r->heap->len && r->where[g_array_index(r->heap, guint32, 0)] != W_HEAP)
		heap_pop(r->heap, s);
}

/* Moves nodes whose ready time has come from the heap to the ready-now structures. When no
 * done can run and nothing is ready now, the nodes that become ready first all tie on
 * kLessStall, so they join the ready-now structures too: whichever is picked, now then
 * reaches their ready time, so they are all ready now again at the next step. */
static void dheap_clean(Ready *r, const Lhs *s, guint c)
{
	GArray *h = r->dheap[c];
	while (h->len && r->where[g_array_index(h, guint32, 0)] != W_DONE)
		heap_pop(h, s);
}

static void dnow_add(Ready *r, const Lhs *s, guint c)
{
	guint32 v = heap_pop(r->dheap[c], s);
	r->where[v] = W_DNOW;
	g_tree_insert(r->dnow[c], GUINT_TO_POINTER(v + 1), GUINT_TO_POINTER(1));
	dheap_clean(r, s, c);
}

static gboolean class_free(const Lhs *s, guint c)
{
	return s->in_flight[c] < s->limit[c];
}

static void ready_advance(Ready *r, const Lhs *s)
{
	/* Nodes moved in ahead of time are picked first unless a memory rule picked another
	 * node; then now may not have reached their ready time, and they stay (see
	 * ready_exact). */
	if (r->early_t > s->now)
		r->stale_t = MAX(r->stale_t, r->early_t);
	r->early_t = -1;
	/* Dones: those whose time has come; then, if no done with a free slot is ready now,
	 * the free-slot dones that become ready first (they tie on kLessStall and win
	 * kScheduleDone over everything else). */
	gboolean done_now = FALSE, done_later = FALSE;
	double dt = G_MAXDOUBLE;
	for (guint c = 0; c < LHS_NCLASS; c++) {
		dheap_clean(r, s, c);
		while (r->dheap[c]->len &&
		       s->ready_time[g_array_index(r->dheap[c], guint32, 0)] <= s->now)
			dnow_add(r, s, c);
		if (!class_free(s, c))
			continue;
		if (g_tree_nnodes(r->dnow[c]) > 0)
			done_now = TRUE;
		if (r->dheap[c]->len) {
			done_later = TRUE;
			dt = MIN(dt, s->ready_time[g_array_index(r->dheap[c], guint32, 0)]);
		}
	}
	if (!done_now && done_later) {
		for (guint c = 0; c < LHS_NCLASS; c++)
			while (class_free(s, c) && r->dheap[c]->len &&
			       s->ready_time[g_array_index(r->dheap[c], guint32, 0)] == dt)
				dnow_add(r, s, c);
		r->early_t = dt;
	}
	heap_clean(r, s);
	while (r->heap->len && s->ready_time[g_array_index(r->heap, guint32, 0)] <= s->now) {
		now_add(r, s, heap_pop(r->heap, s));
		heap_clean(r, s);
	}
	if (!r->heap->len || g_tree_nnodes(r->deep) > 0 || r->zero->len > 0)
		return;
	if (done_now || done_later)
		return;
	double t = s->ready_time[g_array_index(r->heap, guint32, 0)];
	r->early_t = t;
	while (r->heap->len && s->ready_time[g_array_index(r->heap, guint32, 0)] == t) {
		now_add(r, s, heap_pop(r->heap, s));
		heap_clean(r, s);
	}
}

static void ready_remove(Ready *r, Lhs *s, guint32 v)
{
	r->n--;
	if (s->mem_index)
		index_remove(r, s, v);
	switch (r->where[v]) {
	case W_DONE: /* lazy, like W_HEAP */
		s->waiting_dones[s->node_class[v]]--;
		break;
	case W_DNOW:
		s->waiting_dones[s->node_class[v]]--;
		g_tree_remove(r->dnow[s->node_class[v]], GUINT_TO_POINTER(v + 1));
		break;
	case W_FD:
		list_del(r->fd, r->slot, v);
		break;
	case W_HEAP:
		/* Lazy deletion: the entry stays in the heap, dead (where != W_HEAP), and is
		 * dropped when it reaches the top. Only the reference scan picks from the heap. */
		break;
	case W_NOW:
		if (s->node_type[v] == NODE_START) {
			list_del(r->starts[s->node_class[v]], r->sslot, v);
			if (s->async_depth[v] == 0) {
				list_del(r->zero, r->slot, v);
				break;
			}
		}
		g_tree_remove(r->deep, GUINT_TO_POINTER(v + 1));
		if (r->seg)
			seg_set(r, v, INFINITY);
		break;
	}
	r->where[v] = W_NONE;
}

/* kAvoidWaste's "next ready": the earliest ready time above now among ready nodes. */
static double ready_next_time(Ready *r, const Lhs *s)
{
	double t = -1;
	if (r->heap->len) /* heap_clean()ed by ready_advance */
		t = s->ready_time[g_array_index(r->heap, guint32, 0)];
	if (r->early_t > s->now) /* nodes in the ready-now structures ahead of time */
		t = r->early_t;
	/* Dones and force-delayed nodes: drop entries picked already or ready by now. */
	while (r->later->len) {
		guint32 v = g_array_index(r->later, guint32, 0);
		if ((r->where[v] == W_DONE || r->where[v] == W_FD) && s->ready_time[v] > s->now)
			break;
		heap_pop(r->later, s);
	}
	if (r->later->len) {
		double rt = s->ready_time[g_array_index(r->later, guint32, 0)];
		if (t < 0 || rt < t)
			t = rt;
	}
	return t;
}

static int u32_cmp(gconstpointer a, gconstpointer b)
{
	guint32 x = *(const guint32 *)a, y = *(const guint32 *)b;
	return (x > y) - (x < y);
}

static gboolean collect_tree(gpointer key, gpointer value, gpointer data)
{
	(void)value;
	g_array_append_val((GArray *)data, *(guint32[]){GPOINTER_TO_UINT(key) - 1});
	return FALSE;
}

/* Every ready node a rule could pick (the reference scan), ascending. */
static void ready_all(const Ready *r, const Lhs *s, GArray *out)
{
	g_array_set_size(out, 0);
	for (guint c = 0; c < LHS_NCLASS; c++) {
		g_tree_foreach(r->dnow[c], collect_tree, out);
		for (guint32 k = 0; k < r->dheap[c]->len; k++)
			if (r->where[g_array_index(r->dheap[c], guint32, k)] == W_DONE)
				g_array_append_val(out, g_array_index(r->dheap[c], guint32, k));
	}
	g_array_append_vals(out, r->fd->data, r->fd->len);
	for (guint32 k = 0; k < r->heap->len; k++)
		if (r->where[g_array_index(r->heap, guint32, k)] == W_HEAP)
			g_array_append_val(out, g_array_index(r->heap, guint32, k));
	g_array_append_vals(out, r->zero->data, r->zero->len);
	g_tree_foreach(r->deep, collect_tree, out);
	g_array_sort(out, u32_cmp);
	(void)s;
}

/* The nodes that tie on the plain leading keys (see above), ascending. Returns the rule that
 * set them apart from the other ready nodes (the reason --explain shows when one is left). */
static const char *ready_candidates(const Ready *r, const Lhs *s, GArray *out)
{
	const char *rule = "kScheduleDone";
	g_array_set_size(out, 0);
	/* kScheduleDone: dones with a free slot, all ready now (ready_advance); kLessStall ties;
	 * kAsyncDepth: the deepest. */
	double best = -1;
	for (guint c = 0; c < LHS_NCLASS; c++)
		if (class_free(s, c) && g_tree_nnodes(r->dnow[c]) > 0) {
			guint32 v = GPOINTER_TO_UINT(g_tree_node_key(g_tree_node_first(r->dnow[c]))) - 1;
			best = MAX(best, s->async_depth[v]);
		}
	for (guint c = 0; c < LHS_NCLASS && best >= 0; c++) {
		if (!class_free(s, c))
			continue;
		for (GTreeNode *nd = g_tree_node_first(r->dnow[c]); nd; nd = g_tree_node_next(nd)) {
			guint32 v = GPOINTER_TO_UINT(g_tree_node_key(nd)) - 1;
			if (s->async_depth[v] != best)
				break;
			g_array_append_val(out, v);
		}
	}
	if (!out->len) {
		gboolean any_now = g_tree_nnodes(r->deep) > 0 || r->zero->len > 0;
		if (any_now) {
			/* kLessStall ties at 0; kFreeBackedupResource: starts of a backed-up
			 * class (they also pass kStartAtZeroDepth). */
			rule = r->heap->len ? "kLessStall" : "kFreeBackedupResource";
			for (guint c = 0; c < LHS_NCLASS; c++)
				if (s->in_flight[c] >= s->limit[c] && s->waiting_dones[c] > 0)
					g_array_append_vals(out, r->starts[c]->data,
							    r->starts[c]->len);
			if (!out->len && g_tree_nnodes(r->deep) > 0) {
				/* kAsyncDepth: the deepest kernels and starts. */
				rule = r->zero->len ? "kStartAtZeroDepth" : "kAsyncDepth";
				GTreeNode *nd = g_tree_node_first(r->deep);
				guint32 top = GPOINTER_TO_UINT(g_tree_node_key(nd)) - 1;
				for (; nd; nd = g_tree_node_next(nd)) {
					guint32 v = GPOINTER_TO_UINT(g_tree_node_key(nd)) - 1;
					if (s->async_depth[v] != s->async_depth[top])
						break;
					g_array_append_val(out, v);
				}
				return rule; /* the tree gives them in ascending order */
			}
			if (!out->len) /* only starts of depth 0 are ready now */
				g_array_append_vals(out, r->zero->data, r->zero->len);
		}
	}
	if (!out->len) { /* kForceDelay: force-delayed nodes last */
		g_array_append_vals(out, r->fd->data, r->fd->len);
		rule = "kForceDelay";
	}
	g_array_sort(out, u32_cmp);
	return rule;
}

/* Memory pressure.
 *
 * Once usage passes half the limit and some node could take it over the limit (mem_rules in
 * lhs_plan), XLA's memory rules come before the plain keys, and the plain candidates above
 * may miss the winner. The reference scan then compares every ready node at every step
 * (O(ops x ready nodes): 19 s at 10^5 ops in bench-sched). The memory index instead keeps
 * every ready node's memory_change() up to date as buffers become live (index_buffer: only
 * the ready users of that buffer change), the nodes that are not force-delayed ordered by
 * (net change, deepest first), and each step feeds only a few nodes to prefer_lead.
 *
 * Why the winner is the same. The leading rules (prefer_lead: kForceDelay, the two memory
 * rules, the plain keys kScheduleDone .. kAsyncDepth) are each a key of one node (a flag, or
 * a number compared with < or >), so together they compare key tuples lexicographically.
 * pick() scans its candidates in ascending node order keeping the best so far, and the best
 * always holds the highest tuple seen so far (a higher tuple wins, a lower one loses, an
 * equal one goes on to the later rules, which keep the tuple). So from the first node with
 * the highest tuple on, only the nodes with that tuple (the set M) can replace the best, each
 * compared with the best exactly as in a scan of M alone. Hence scanning ANY ascending set of
 * eligible nodes that holds M picks what the scan of every ready node picks, whatever the
 * later rules (kAvoidWaste is not a key) do. Lead below keeps, of the nodes fed to it, those
 * with the highest tuple: M, once every node of M has been fed. The cases:
 *   usage >= limit (mem_over_candidates): kDecreaseMemoryOverLimit is the second key, so M
 *     lies among the eligible nodes that are not force-delayed with the least net change:
 *     the first ones of the kernel-and-start tree and of the done trees of classes with a
 *     free slot. If there are none, every eligible node is force-delayed, and all of those
 *     are the candidates.
 *   usage < limit (mem_fit_candidates): the keys are kForceDelay, kMemoryPeakOverLimit, then
 *     the plain keys. If some node passes kMemoryPeakOverLimit, M is among the nodes that
 *     pass; they are walked in order of their plain keys, as far as one can still tie with
 *     the best. If none passes, all tie on it, and the plain candidates hold M.
 *   no memory rule (usage + the largest use of any node within the limit): every node passes
 *     kMemoryPeakOverLimit and kDecreaseMemoryOverLimit needs usage at the limit (where the
 *     largest use is 0), so the plain candidates hold M, as without memory pressure.
 * The stored changes are memory_change()'s exactly: buffer sizes are whole numbers and all of
 * them together stay below 2^53 (the index is kept only then), so every sum and difference of
 * them is exact in a double, in whatever order it is taken. pick() asserts it.
 *
 * ready_advance moves nodes to the ready-now structures ahead of their time when they tie on
 * kLessStall as the best nodes; without memory rules one of them is picked and now reaches
 * their time. A memory rule may pick another node, and then nodes that are not ready stay in
 * the ready-now structures, which ready_candidates and mem_fit_candidates do not allow for.
 * Until now reaches their time (ready_exact), lead_scan feeds every ready node to
 * prefer_lead (mem_over_candidates does not use those structures). With build_graph's costs
 * this does not happen (a released node is ready at once unless it is a start waiting out its
 * async latency, since no other edge's latency exceeds its user's cost; and starts are moved
 * ahead only when no other node that is not force-delayed is eligible); the guard is cheap. */
typedef struct {
	Cand best;   /* a node with the highest key tuple so far */
	GArray *out; /* the nodes that tie with it */
	gboolean have;
	const char *why;
} Lead;

static void lead_add(Lead *l, const Lhs *s, guint32 v)
{
	/* The overlap limit: a done needs a free slot of its class (as in pick). */
	if (s->node_type[v] == NODE_DONE && !class_free(s, s->node_class[v]))
		return;
	Cand c = {.node = v, .mem_inc = s->mem_inc[v], .mem_peak = s->mem_peak[v]};
	int w = l->have ? prefer_lead(s, &l->best, &c, &l->why) : -1;
	if (w > 0)
		return;
	if (w < 0) {
		g_array_set_size(l->out, 0);
		l->best = c;
		l->have = TRUE;
	}
	g_array_append_val(l->out, v);
}

/* Every eligible ready node is force-delayed: all of them. */
static const char *fd_candidates(const Ready *r, GArray *out)
{
	g_array_set_size(out, 0);
	g_array_append_vals(out, r->fd->data, r->fd->len);
	g_array_sort(out, u32_cmp);
	return "kForceDelay";
}

/* Whether @v passes kMemoryPeakOverLimit (as prefer_lead computes it). */
static gboolean fits(const Lhs *s, guint32 v)
{
	return s->mem_peak[v] + s->usage <= s->limit_bytes;
}

static gboolean ready_exact(const Ready *r, const Lhs *s)
{
	return r->stale_t <= s->now;
}

/* Whether no node can beat @v before kAsyncDepth, among those tied with it on
 * kForceDelay and kDecreaseMemoryOverLimit, with usage at or over the limit: it passes
 * kMemoryPeakOverLimit or none can (over the limit, mem_peak >= 0 fails it), it is a done
 * (dones tie on kStartAtZeroDepth and kFreeBackedupResource, at the top of both), and it has
 * no stall. */
static gboolean over_top(const Lhs *s, guint32 v)
{
	return (s->usage > s->limit_bytes || fits(s, v)) && s->node_type[v] == NODE_DONE &&
	       MAX(s->ready_time[v] - s->now, 0) == 0;
}

/* usage >= limit: M, ascending, from the nodes with the least net change (see "Memory
 * pressure"). Each tree holds them deepest first; once the best so far is over_top(), a less
 * deep done loses to it (on kAsyncDepth), and so do all kernels and starts (on kScheduleDone),
 * so the walk stops there. */
static const char *mem_over_candidates(const Ready *r, const Lhs *s, GArray *out)
{
	GTree *t[1 + LHS_NCLASS];
	guint nt = 0;
	t[nt++] = r->by_inc;
	for (guint c = 0; c < LHS_NCLASS; c++)
		if (class_free(s, c))
			t[nt++] = r->dones_by_inc[c];
	gboolean any = FALSE;
	double lo = 0;
	for (guint i = 0; i < nt; i++) {
		GTreeNode *nd = g_tree_node_first(t[i]);
		if (!nd)
			continue;
		guint32 v = GPOINTER_TO_UINT(g_tree_node_key(nd)) - 1;
		if (!any || s->mem_inc[v] < lo)
			lo = s->mem_inc[v];
		any = TRUE;
	}
	if (!any)
		return fd_candidates(r, out);
	Lead l = {.out = out, .why = "kDecreaseMemoryOverLimit"};
	g_array_set_size(out, 0);
	for (guint i = nt; i-- > 0;) /* the done trees first */
		for (GTreeNode *nd = g_tree_node_first(t[i]); nd; nd = g_tree_node_next(nd)) {
			guint32 v = GPOINTER_TO_UINT(g_tree_node_key(nd)) - 1;
			if (s->mem_inc[v] != lo)
				break;
			if (l.have && over_top(s, l.best.node) &&
			    (i == 0 || s->async_depth[v] < s->async_depth[l.best.node]))
				break;
			lead_add(&l, s, v);
		}
	g_array_sort(out, u32_cmp);
	return l.why;
}

/* M, ascending, from every ready node that is not force-delayed (or the force-delayed ones
 * if no other node is eligible). */
static const char *lead_scan(const Ready *r, const Lhs *s, GArray *out)
{
	Lead l = {.out = out, .why = "kMemoryPeakOverLimit"};
	g_array_set_size(out, 0);
	for (guint32 k = 0; k < r->plain->len; k++)
		lead_add(&l, s, g_array_index(r->plain, guint32, k));
	if (!l.have)
		return fd_candidates(r, out);
	g_array_sort(out, u32_cmp);
	return l.why;
}

/* Feeds @v to prefer_lead if it passes kMemoryPeakOverLimit. */
static void lead_add_fit(Lead *l, const Lhs *s, guint32 v)
{
	if (fits(s, v))
		lead_add(l, s, v);
}

/* Walks a tree of nodes that tie on the plain keys but kAsyncDepth, deepest first, up to the
 * depth of the best node so far (the rest lose to it). */
static void fit_walk_tree(Lead *l, const Lhs *s, GTree *t)
{
	for (GTreeNode *nd = g_tree_node_first(t); nd; nd = g_tree_node_next(nd)) {
		guint32 v = GPOINTER_TO_UINT(g_tree_node_key(nd)) - 1;
		if (l->have && s->async_depth[v] < s->async_depth[l->best.node])
			break;
		lead_add_fit(l, s, v);
	}
}

/* usage < limit (see "Memory pressure"): M, ascending. If a node passes
 * kMemoryPeakOverLimit, M is among those that do, and only those are fed to prefer_lead.
 * The eligible nodes that are not force-delayed fall into tiers, each ranked above the next
 * by a plain key on which all its nodes tie (see ready_candidates for why the structures
 * hold these sets): (1) ready-now dones with a free slot; (2) the other dones with a free
 * slot (more stall); (3) ready-now backed-up starts; (4) other ready-now kernels and starts
 * of async depth > 0 (below 3 on kFreeBackedupResource); (5) other ready-now starts of depth
 * 0 (below on kStartAtZeroDepth); (6) nodes not ready now (more stall). Within tiers 1 and 4
 * only kAsyncDepth is left among the plain keys, and their trees are deepest first. So once
 * a node that passes is found, no node of a later tier, nor a less deep one of its own
 * tier, can reach its key tuple, and the walk stops there. If none passes, all tie on
 * kMemoryPeakOverLimit, and the plain candidates hold M. Tier 4 can hold thousands of nodes
 * that do not pass ahead of the first that does (bench-sched at 10^6 ops): the min-tree
 * (seg_find) goes from one node that passes to the next in deep's order. */
static const char *mem_fit_candidates(const Ready *r, const Lhs *s, GArray *out)
{
	Lead l = {.out = out, .why = "kMemoryPeakOverLimit"};
	g_array_set_size(out, 0);
	for (guint c = 0; c < LHS_NCLASS; c++) /* 1 */
		if (class_free(s, c))
			fit_walk_tree(&l, s, r->dnow[c]);
	if (l.have)
		goto found;
	for (guint c = 0; c < LHS_NCLASS; c++) /* 2 */
		for (guint32 k = 0; class_free(s, c) && k < r->dheap[c]->len; k++)
			if (r->where[g_array_index(r->dheap[c], guint32, k)] == W_DONE)
				lead_add_fit(&l, s, g_array_index(r->dheap[c], guint32, k));
	if (l.have)
		goto found;
	for (guint c = 0; c < LHS_NCLASS; c++) /* 3 */
		if (s->in_flight[c] >= s->limit[c] && s->waiting_dones[c] > 0)
			for (guint32 k = 0; k < r->starts[c]->len; k++)
				lead_add_fit(&l, s, g_array_index(r->starts[c], guint32, k));
	if (l.have)
		goto found;
	/* 4: deep's nodes that pass, deepest first, from the min-tree (as fit_walk_tree). */
	for (guint32 k = seg_find(r, s, 0); k != G_MAXUINT32; k = seg_find(r, s, k + 1)) {
		guint32 v = r->rank_node[k];
		if (l.have && s->async_depth[v] < s->async_depth[l.best.node])
			break;
		if (!(releases(s, v) && constrained(s, v)))
			lead_add(&l, s, v);
	}
	if (l.have)
		goto found;
	for (guint32 k = 0; k < r->zero->len; k++) { /* 5 */
		guint32 v = g_array_index(r->zero, guint32, k);
		if (!constrained(s, v))
			lead_add_fit(&l, s, v);
	}
	if (l.have)
		goto found;
	for (guint32 k = 0; k < r->heap->len; k++) /* 6 */
		if (r->where[g_array_index(r->heap, guint32, k)] == W_HEAP)
			lead_add_fit(&l, s, g_array_index(r->heap, guint32, k));
	if (!l.have)
		return ready_candidates(r, s, out);
found:
	g_array_sort(out, u32_cmp);
	return l.why;
}

/* Starts keeping the memory index: the first step with the memory rules (see "Memory
 * pressure"), so that runs without memory pressure do not pay for it. */
static void index_build(Ready *r, Lhs *s)
{
	s->mem_index = TRUE;
	s->mem_inc = g_new0(double, s->n_nodes);
	s->mem_peak = g_new0(double, s->n_nodes);
	r->by_inc = g_tree_new_full(inc_cmp, (gpointer)s, NULL, NULL);
	for (guint c = 0; c < LHS_NCLASS; c++)
		r->dones_by_inc[c] = g_tree_new_full(inc_cmp, (gpointer)s, NULL, NULL);
	r->plain = g_array_new(FALSE, FALSE, sizeof(guint32));
	r->pslot = g_new0(guint32, s->n_nodes);
	GArray *ranked = g_array_new(FALSE, FALSE, sizeof(guint32));
	for (guint32 v = 0; v < s->n_nodes; v++)
		if (s->node_type[v] != NODE_DONE)
			g_array_append_val(ranked, v);
	g_array_sort_with_data(ranked, rank_cmp, (gpointer)s);
	r->deep_rank = g_new0(guint32, s->n_nodes);
	for (guint32 k = 0; k < ranked->len; k++)
		r->deep_rank[g_array_index(ranked, guint32, k)] = k;
	r->rank_node = (guint32 *)(void *)g_array_free(ranked, FALSE);
	for (r->seg_n = 1; r->seg_n < s->n_nodes; r->seg_n *= 2)
		;
	r->seg = g_new(double, 2 * r->seg_n);
	for (guint32 k = 0; k < 2 * r->seg_n; k++)
		r->seg[k] = INFINITY;
	GArray *all = g_array_new(FALSE, FALSE, sizeof(guint32));
	ready_all(r, s, all);
	for (guint32 k = 0; k < all->len; k++)
		index_add(r, s, g_array_index(all, guint32, k));
	g_array_free(all, TRUE);
}

/* The memory guard.
 *
 * XLA's memory rules are greedy: over the limit they take the ready node that adds least now.
 * On a module whose loops the importer unrolled, that is a trap XLA itself never meets (it
 * schedules each while body on its own): bottom-up, the gradient chain of the backward loop
 * (a dynamic-update-slice per iteration, each step adding a few MB) lets lhs open all 80
 * iterations' weight-gradient ops at once, each pinning the activations it reads until its
 * iteration's own producers come, which they do only after the whole chain: 512 GiB where
 * serial needs 85 (hlo_llama31_70b_bf16_16x8, issue 17). The guard bounds lhs by the base
 * schedule XLA expects to start from (LatencyHidingScheduler::Run: "a schedule that
 * minimizes memory pressure is provided as a base"), here serial's order.
 *
 * Its pressure estimate is the peak of the whole program if the nodes not yet scheduled ran
 * in serial's order before the ones scheduled so far: the most of (the peak of the steps
 * taken, the profile of the rest in serial's order). The profile is kept in a tree over the
 * positions of serial's order (range add, max): a buffer adds its bytes from the position
 * of its freer (0 for an input) to its last user's (gend), or to the last position once a
 * user has been scheduled (it is then live into the scheduled part) or if it lives to the
 * end; its freer's step removes it; a scheduled node's own position no longer counts. At
 * the start this is the serial order's peak exactly (p0: the engine's peak for serial, whose
 * one stream runs each op alone), and cap = max(limit, p0).
 *
 * Each pick is checked: if taking it would put the estimate above cap, the guard takes
 * instead the ready node latest in serial's order, which never raises it (all the users of
 * that node come later in serial's order, so the rest of the order does not change). If
 * that node is a done whose class is full, the in-flight start of that class that raises the
 * estimate least is taken (the one case the bound does not cover; it frees the slot). So the
 * schedule's peak stays within cap as the model counts it, and the model does not
 * undercount the engine for lhs's plans: every async op's side stream starts it after the
 * main stream passes its start and the main stream waits for it at its done, so a buffer is
 * live in the engine only while it is live in the model at the main stream's position. The
 * guard is off when all buffers together fit under the limit (it could not act), and when
 * they reach 2^53 bytes (sums would no longer be exact). */
/* The tree holds, per position, the change of the profile there (a buffer adds its bytes at
 * its first position and takes them off after its last), and per subtree its sum and the
 * largest running sum at a position that still counts (-infinity at the others), so the
 * root holds the profile's peak over the rest. Every change is one leaf and its path. */
static void gt_pull(Lhs *s, guint32 k)
{
	for (k /= 2; k > 0; k /= 2) {
		s->gsum[k] = s->gsum[2 * k] + s->gsum[2 * k + 1];
		s->gmx[k] = MAX(s->gmx[2 * k], s->gsum[2 * k] + s->gmx[2 * k + 1]);
	}
}

/* Adds @x to the profile from position @q on (nothing past the last position). */
static void gt_add(Lhs *s, guint32 q, double x)
{
	if (q >= s->n_nodes)
		return;
	guint32 k = q + s->gn;
	s->gsum[k] += x;
	if (s->gmx[k] != -INFINITY)
		s->gmx[k] = s->gsum[k];
	gt_pull(s, k);
}

/* Position @q stops counting (@on FALSE) or counts again. */
static void gt_count(Lhs *s, guint32 q, gboolean on)
{
	guint32 k = q + s->gn;
	s->gmx[k] = on ? s->gsum[k] : -INFINITY;
	gt_pull(s, k);
}

static void guard_init(Lhs *s)
{
	guint32 n = s->n_ops, m = s->n_nodes;
	const guint32 *topo = lh_graph_topo(s->g);
	s->gpos = g_new(guint32, m);
	guint32 p = 0;
	for (guint32 k = 0; k < n; k++)
		for (guint32 i = topo[k], v = s->first[i]; v != G_MAXUINT32 && v <= s->last[i]; v++)
			s->gpos[v] = p++;
	guint32 top = m - 1;
	s->gdef = g_new0(guint32, n);
	s->gend = g_new0(guint32, n);
	g_autofree double *diff = g_new0(double, m + 1);
	for (guint32 b = 0; b < n; b++) {
		if (s->buf_bytes[b] == 0)
			continue;
		s->gdef[b] = s->freer[b] == G_MAXUINT32 ? 0 : s->gpos[s->freer[b]];
		s->gend[b] = s->to_end[b] ? top : s->gdef[b];
		for (guint32 k = s->user_at[b]; k < s->user_at[b + 1]; k++)
			s->gend[b] = MAX(s->gend[b], s->gpos[s->user[k]]);
		diff[s->gdef[b]] += s->buf_bytes[b];
		diff[s->gend[b] + 1] -= s->buf_bytes[b];
	}
	for (s->gn = 1; s->gn < m; s->gn *= 2)
		;
	s->gmx = g_new(double, 2 * s->gn);
	s->gsum = g_new0(double, 2 * s->gn);
	for (guint32 k = 0; k < s->gn; k++) {
		s->gsum[s->gn + k] = k < m ? diff[k] : 0;
		s->gmx[s->gn + k] = k < m ? diff[k] : -INFINITY;
	}
	for (guint32 k = s->gn; k-- > 1;) {
		s->gsum[k] = s->gsum[2 * k] + s->gsum[2 * k + 1];
		s->gmx[k] = MAX(s->gmx[2 * k], s->gsum[2 * k] + s->gmx[2 * k + 1]);
	}
	s->p0 = s->gmx[1];
	s->cap = MAX(s->limit_bytes, s->p0);
	s->peak_done = s->usage;
	s->gheap = g_array_new(FALSE, FALSE, sizeof(guint32));
}

/* Moves @v from the rest to the scheduled part in the tree (@sign 1), or back (-1), before
 * memory_schedule(). */
static void guard_shift(Lhs *s, guint32 v, double sign)
{
	if (sign < 0)
		gt_count(s, s->gpos[v], TRUE);
	FOR_EACH_USED_BUFFER(s, v, b, {
		if (s->buf[b] == 0 && s->buf_bytes[b] > 0)
			gt_add(s, s->gend[b] + 1, sign * s->buf_bytes[b]);
	});
	guint32 f = node_frees(s, v);
	if (f != G_MAXUINT32 && s->buf_bytes[f] > 0 && s->buf[f] != 2) {
		gt_add(s, s->gdef[f], -sign * s->buf_bytes[f]);
		if (s->buf[f] == 0)
			gt_add(s, s->gend[f] + 1, sign * s->buf_bytes[f]);
	}
	if (sign > 0)
		gt_count(s, s->gpos[v], FALSE);
}

/* The estimate with @v taken next, the tree already shifted; @peak: memory_change()'s. */
static double guard_estimate(const Lhs *s, double peak)
{
	return MAX(s->usage + peak, s->gmx[1]);
}

static gboolean gheap_less(const Lhs *s, const GArray *h, guint32 a, guint32 b)
{
	return s->gpos[g_array_index(h, guint32, a)] < s->gpos[g_array_index(h, guint32, b)];
}

static void gheap_swap(GArray *h, guint32 a, guint32 b)
{
	guint32 t = g_array_index(h, guint32, a);
	g_array_index(h, guint32, a) = g_array_index(h, guint32, b);
	g_array_index(h, guint32, b) = t;
}

static void gheap_push(Lhs *s, guint32 v)
{
	GArray *h = s->gheap;
	g_array_append_val(h, v);
	for (guint32 k = h->len - 1; k > 0 && gheap_less(s, h, (k - 1) / 2, k); k = (k - 1) / 2)
		gheap_swap(h, k, (k - 1) / 2);
}

static void gheap_pop(Lhs *s)
{
	GArray *h = s->gheap;
	guint32 n = h->len - 1;
	gheap_swap(h, 0, n);
	g_array_set_size(h, n);
	for (guint32 k = 0;;) {
		guint32 l = 2 * k + 1, r = l + 1, m = k;
		if (l < n && gheap_less(s, h, m, l))
			m = l;
		if (r < n && gheap_less(s, h, m, r))
			m = r;
		if (m == k)
			break;
		gheap_swap(h, k, m);
		k = m;
	}
}

/* Checks @v, XLA's pick, and commits the node to take to the tree (see "The memory guard"). */
static guint32 guard_check(Lhs *s, const guint8 *where, guint32 v, const char **why)
{
	double inc, peak;
	memory_change(s, v, &inc, &peak);
	guard_shift(s, v, 1);
	if (guard_estimate(s, peak) <= s->cap)
		goto done;
	guard_shift(s, v, -1);
	s->n_veto++;
	while (where[g_array_index(s->gheap, guint32, 0)] == W_NONE)
		gheap_pop(s);
	v = g_array_index(s->gheap, guint32, 0);
	*why = "memory guard: serial's order";
	guint8 c = s->node_class[v];
	if (s->node_type[v] == NODE_DONE && s->in_flight[c] >= s->limit[c]) {
		guint32 best = G_MAXUINT32;
		double best_est = 0;
		for (guint32 k = 0; k < s->gheap->len; k++) {
			guint32 u = g_array_index(s->gheap, guint32, k);
			if (where[u] == W_NONE || s->node_type[u] != NODE_START || s->node_class[u] != c)
				continue;
			memory_change(s, u, &inc, &peak);
			guard_shift(s, u, 1);
			double e = guard_estimate(s, peak);
			guard_shift(s, u, -1);
			if (best == G_MAXUINT32 || e < best_est ||
			    (e == best_est && s->gpos[u] > s->gpos[best])) {
				best = u;
				best_est = e;
			}
		}
		g_assert(best != G_MAXUINT32); /* the starts of in-flight ops are always ready */
		v = best;
		*why = "memory guard: an in-flight start";
	}
	memory_change(s, v, &inc, &peak);
	guard_shift(s, v, 1);
done:
	s->peak_done = MAX(s->peak_done, s->usage + peak);
	return v;
}

static gboolean is_coll_class(guint8 c)
{
	return c == LH_CLASS_COLLECTIVE || c == LHS_SCALE_UP;
}

/* Whether the done @v of a collective shares more than one device with a collective in
 * flight. Only collectives whose graph says who takes part are compared (without members a
 * group is a count, and lhs keeps its old per-class limits). */
static gboolean shares_devices(const Lhs *s, guint32 v)
{
	if (s->node_type[v] != NODE_DONE || !is_coll_class(s->node_class[v]))
		return FALSE;
	const LhOp *a = lh_graph_op(s->g, s->node_op[v]);
	if (!lh_graph_op_members(s->g, a))
		return FALSE;
	for (guint32 k = 0; k < s->coll_in_flight->len; k++) {
		const LhOp *b = lh_graph_op(s->g, g_array_index(s->coll_in_flight, guint32, k));
		if (lh_graph_op_members(s->g, b) && lh_ops_share_devices(s->g, a, b))
			return TRUE;
	}
	return FALSE;
}

/* Removes from @cand the dones shares_devices() holds back; returns how many are left. */
static guint32 drop_shared(const Lhs *s, GArray *cand)
{
	guint32 w = 0;
	for (guint32 k = 0; k < cand->len; k++) {
		guint32 v = g_array_index(cand, guint32, k);
		if (shares_devices(s, v)) {
			lh_params_explain(s->p, "lhs: done '%s' waits: it shares more than one "
						"device with a collective in flight",
					  lh_graph_op(s->g, s->node_op[v])->name);
			continue;
		}
		g_array_index(cand, guint32, w++) = v;
	}
	g_array_set_size(cand, w);
	return w;
}

/* Keeps coll_in_flight: a collective's done puts its op in, its start takes it out. */
static void coll_track(Lhs *s, guint32 v)
{
	if (!is_coll_class(s->node_class[v]))
		return;
	guint32 op = s->node_op[v];
	if (s->node_type[v] == NODE_DONE) {
		g_array_append_val(s->coll_in_flight, op);
		return;
	}
	for (guint32 k = 0; k < s->coll_in_flight->len; k++)
		if (g_array_index(s->coll_in_flight, guint32, k) == op) {
			g_array_remove_index(s->coll_in_flight, k);
			return;
		}
}

/* Compares the candidates in order with XLA's rules; returns the winner. */
static guint32 pick(const Lhs *s, const GArray *cand, const char **why)
{
	gboolean have = FALSE;
	Cand best = {0};
	for (guint32 k = 0; k < cand->len; k++) {
		guint32 v = g_array_index(cand, guint32, k);
		/* The overlap limit: a done needs a free slot of its class. */
		if (s->node_type[v] == NODE_DONE && s->in_flight[s->node_class[v]] >= s->limit[s->node_class[v]])
			continue;
		Cand c = {.node = v};
		if (s->mem_active) {
			memory_change(s, v, &c.mem_inc, &c.mem_peak);
			/* The memory index is exact (see "Memory pressure"). */
			g_assert(!s->mem_index ||
				 (c.mem_inc == s->mem_inc[v] && c.mem_peak == s->mem_peak[v]));
		}
		if (!have) {
			best = c;
			have = TRUE;
			continue;
		}
		const char *r;
		if (!prefer(s, &best, &c, &r))
			best = c;
		*why = r;
	}
	g_assert(have); /* the starts of in-flight ops are always ready */
	return best.node;
}

static const char *node_type_name(guint8 t)
{
	return t == NODE_START ? "start" : t == NODE_DONE ? "done" : "run";
}

static LhPlan *lhs_plan(const LhGraph *g, const LhHw *hw, const LhParams *p, GError **error)
{
	(void)error;
	gboolean xla = strcmp(lh_params_get_choice(p, "estimator"), "xla") == 0;
	Lhs s = {.g = g, .p = p, .n_ops = lh_graph_n_ops(g)};
	build_graph(&s, hw, xla);
	lh__class_limits(p, s.limit);
	gint64 su = lh_params_get_int(p, "scale-up-collective-limit");
	s.limit[LHS_SCALE_UP] = su == 0 ? G_MAXUINT32 : (guint32)su;
	s.coll_in_flight = g_array_new(FALSE, FALSE, sizeof(guint32));
	guint32 m = s.n_nodes;
	s.limit_bytes = (lh_params_is_set(p, "memory-limit") ? lh_params_get_double(p, "memory-limit")
							     : hw->memory_gib) *
			1073741824.0;
	mem_model(&s);
	for (guint32 v = 0; v < m; v++) {
		double use = 0;
		FOR_EACH_USED_BUFFER(&s, v, b, use += s.buf_bytes[b]);
		s.max_use = MAX(s.max_use, use);
	}
	gboolean reference = g_getenv("LHSIM_LHS_REFERENCE") != NULL;
	/* The memory index (see "Memory pressure"): needed only if usage, at most every buffer
	 * at once, can pass half the limit; exact while that total stays below 2^53 bytes. */
	double total = 0;
	for (guint32 i = 0; i < s.n_ops; i++)
		total += s.buf_bytes[i];
	s.mem_index_ok = !reference && total > s.limit_bytes / 2 && total < 9007199254740992.0;
	s.guard = total > s.limit_bytes && total < 9007199254740992.0;
	if (s.guard)
		guard_init(&s);
	s.outdeg = g_new(guint32, m);
	s.ready_time = g_new0(double, m);
	Ready r;
	ready_init(&r, &s);
	for (guint32 v = 0; v < m; v++) {
		s.outdeg[v] = s.succ_at[v + 1] - s.succ_at[v];
		if (s.outdeg[v] == 0)
			ready_add(&r, &s, v);
	}
	g_autofree char *su_text = su == 0 ? g_strdup("unlimited")
					   : g_strdup_printf("%" G_GINT64_FORMAT, su);
	lh_params_explain(p, "lhs: %u ops -> %u nodes; estimator %s; limits: collective %u, "
			     "scale-up collective %s, p2p %u, "
			     "async-compute %u, memcpy %s; memory limit %.3f GiB; scheduling "
			     "bottom-up (the last op first)",
			  s.n_ops, m, xla ? "xla" : "model", s.limit[LH_CLASS_COLLECTIVE],
			  su_text,
			  s.limit[LH_CLASS_P2P], s.limit[LH_CLASS_ASYNC_COMPUTE],
			  s.limit[LH_CLASS_MEMCPY] == G_MAXUINT32 ? "unlimited" : "limited",
			  s.limit_bytes / 1073741824.0);
	guint32 *order = g_new(guint32, m); /* reversed program order */
	GArray *cand = g_array_new(FALSE, FALSE, sizeof(guint32));
	guint32 n_mem = 0, n_over = 0; /* steps with the memory rules, at or over the limit */
	for (guint32 step = 0; step < m; step++) {
		g_assert(r.n > 0);
		s.mem_active = s.usage > s.limit_bytes / 2;
		ready_advance(&r, &s);
		s.next_ready = ready_next_time(&r, &s);
		const char *why = r.n == 1 ? "only candidate" : "kScheduleDone";
		/* Under memory pressure the memory rules come first; they cannot set nodes apart
		 * while even the largest use of any node fits under the limit (every node passes
		 * kMemoryPeakOverLimit, and kDecreaseMemoryOverLimit needs usage at the limit),
		 * so the plain keys still prune. Otherwise see "Memory pressure"; without the
		 * memory index, every ready node is compared. */
		gboolean mem_rules = s.mem_active && s.usage + s.max_use > s.limit_bytes;
		gboolean exact = ready_exact(&r, &s);
		if (s.mem_index_ok && !s.mem_index && (mem_rules || !exact))
			index_build(&r, &s);
		n_mem += mem_rules;
		n_over += mem_rules && s.usage >= s.limit_bytes;
		if (reference || (!s.mem_index && (mem_rules || !exact))) {
			ready_all(&r, &s, cand);
		} else if (mem_rules && s.usage >= s.limit_bytes) {
			why = mem_over_candidates(&r, &s, cand);
		} else if (!exact) {
			why = lead_scan(&r, &s, cand);
		} else if (mem_rules) {
			why = mem_fit_candidates(&r, &s, cand);
		} else {
			why = ready_candidates(&r, &s, cand);
		}
		if (r.n == 1)
			why = "only candidate";
		/* XLA's rule (openxla/xla#19026, #47467): a collective that shares more than one
		 * device with one in flight waits; the start of the one in flight is always
		 * ready, so some node is left. */
		if (s.coll_in_flight->len && !drop_shared(&s, cand)) {
			ready_all(&r, &s, cand);
			drop_shared(&s, cand);
			why = "a collective sharing devices is in flight";
		}
		guint32 v = pick(&s, cand, &why);
		if (s.guard)
			v = guard_check(&s, r.where, v, &why);
		ready_remove(&r, &s, v);
		double t = MAX(s.now, s.ready_time[v]);
		s.ready_time[v] = t;
		s.now = t + s.cost[v];
		if (s.node_type[v] == NODE_DONE)
			s.in_flight[s.node_class[v]]++;
		else if (s.node_type[v] == NODE_START)
			s.in_flight[s.node_class[v]]--;
		coll_track(&s, v);
		memory_schedule(&r, &s, v);
		order[step] = v;
		if (lh_params_explaining(p))
			lh_params_explain(p, "lhs: t=%.0f %s %s %s '%s' (%s)", t,
					  xla ? "cost units" : "ns",
					  node_type_name(s.node_type[v]),
					  lh_op_kind_name(lh_graph_op(g, s.node_op[v])->kind),
					  lh_graph_op(g, s.node_op[v])->name, why);
		for (guint32 e = s.pred_at[v]; e < s.pred_at[v + 1]; e++) {
			guint32 u = s.pred[e];
			if (--s.outdeg[u] > 0)
				continue;
			double rt = s.now;
			for (guint32 f = s.succ_at[u]; f < s.succ_at[u + 1]; f++) {
				double et = s.ready_time[s.succ[f]] + s.succ_lat[f];
				if (et > rt)
					rt = et;
			}
			s.ready_time[u] = rt;
			ready_add(&r, &s, u);
		}
	}
	g_array_free(cand, TRUE);
	g_array_free(s.coll_in_flight, TRUE);
	ready_clear(&r);
	lh_params_explain(p, "lhs: memory rules at %u of %u steps, %u of them at or over the limit",
			  n_mem, m, n_over);
	if (s.guard)
		lh_params_explain(p, "lhs: memory guard: serial's order peaks at %.0f B, bound %.0f "
				     "B; this order at %.0f B; %u picks replaced",
				  s.p0, s.cap, s.peak_done, s.n_veto);

	/* Emit in program order. */
	LhPlan *plan = lh_plan_new();
	guint32 main_s = lh_plan_add_stream(plan, "main", LH_ROLE_COMPUTE);
	guint32 cstreams = lh_params_is_set(p, "compute-streams")
				   ? (guint32)lh_params_get_int(p, "compute-streams")
				   : s.limit[LH_CLASS_ASYNC_COMPUTE];
	LhStreamPool pool[LHS_NCLASS];
	lh__pool_init(&pool[LH_CLASS_COLLECTIVE], "collective", LH_ROLE_COLLECTIVE,
		      s.limit[LH_CLASS_COLLECTIVE]);
	lh__pool_init(&pool[LHS_SCALE_UP], "scaleup", LH_ROLE_COLLECTIVE,
		      s.limit[LHS_SCALE_UP] == G_MAXUINT32 ? 0 : s.limit[LHS_SCALE_UP]);
	lh__pool_init(&pool[LH_CLASS_P2P], "p2p", LH_ROLE_P2P, s.limit[LH_CLASS_P2P]);
	lh__pool_init(&pool[LH_CLASS_ASYNC_COMPUTE], "compute", LH_ROLE_ASYNC_COMPUTE, cstreams);
	lh__pool_init(&pool[LH_CLASS_MEMCPY], "memcpy", LH_ROLE_MEMCPY,
		      s.limit[LH_CLASS_MEMCPY] == G_MAXUINT32 ? 0 : s.limit[LH_CLASS_MEMCPY]);
	g_autofree guint32 *member = g_new0(guint32, s.n_ops);
	for (guint32 k = m; k-- > 0;) {
		guint32 v = order[k], op = s.node_op[v];
		switch (s.node_type[v]) {
		case NODE_KERNEL:
			lh_plan_run(plan, main_s, op);
			break;
		case NODE_START: {
			LhStreamPool *pl = &pool[s.node_class[v]];
			member[op] = lh__pool_acquire(pl, plan);
			guint32 side = lh__pool_stream(pl, member[op]);
			lh_plan_link(plan, main_s, side);
			lh_plan_run(plan, side, op);
			lh_params_explain(p, "lhs: %s '%s' runs on %s (%s)",
					  lh_op_kind_name(lh_graph_op(g, op)->kind),
					  lh_graph_op(g, op)->name, lh_plan_stream(plan, side)->name,
					  lhs_class_name(s.node_class[v]));
			break;
		}
		case NODE_DONE: {
			LhStreamPool *pl = &pool[s.node_class[v]];
			lh_plan_link(plan, lh__pool_stream(pl, member[op]), main_s);
			lh__pool_release(pl, member[op]);
			break;
		}
		}
	}
	for (guint32 c = 0; c < LHS_NCLASS; c++)
		if (c != LH_CLASS_NONE)
			lh__pool_clear(&pool[c]);
	g_free(order);
	lhs_free(&s);
	return plan;
}

const LhScheduler lh_sched_lhs = {
	.version = LH_SCHEDULER_ABI,
	.name = "lhs",
	.summary = "XLA's latency-hiding scheduler: bottom-up list scheduling, async start/done "
		   "pairs, per-class in-flight limits",
	.params = lhs_params,
	.plan = lhs_plan,
};
