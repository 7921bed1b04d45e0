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
#include "schedulers/lhs-guard.h"
#include "schedulers/lhs-ready.h"
#include "sim/cost-private.h"
#include "sim/graph-private.h"
#include "sim/plan-private.h"
#include "sim/topo.h"

#include <math.h>
#include <string.h>

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

/* What build_graph finds in its one pass over the ops, so that mem_model does not read them
 * again (issue 12: at 10^6 ops the op records are 128 MB, and each of the seven passes lhs made
 * over them took 20 - 45 ms). An op's deps are read from the graph's CSR rows
 * (lh__graph_dep_at), not from its record. */
typedef struct {
	LhPages *early;   /* Lhs.dsrc's pages, made present ahead; freed before it */
	gboolean aliases; /* some op has an alias */
	double total;     /* the bytes of every buffer, summed in op order */
	guint64 most;     /* the nodes and their ops' deps: a bound on the buffers they use */
} LhsScan;

/* The device bytes op @op's output allocates, by mem_model's rule (see there): its out_bytes
 * in device space, nothing for an op with an alias (it writes in place). */
static double alloc_bytes(const LhOp *op)
{
	return op->alias == LH_NO_OP && op->out_space == LH_SPACE_DEVICE ? (double)op->out_bytes
	                                                                 : 0;
}

/* Op @i's last node: its done for an async op (its first node is then a start), else its
 * first; G_MAXUINT32 for an input. */
static guint32 lhs_last(const Lhs *s, guint32 i)
{
	guint32 a = s->first[i];
	return a == G_MAXUINT32 ? a : a + (s->nd[a].type == NODE_START);
}

/* Nodes made present ahead of the ones build_graph writes, beyond the ops' count (3 MB). */
#define NODES_AHEAD ((gsize)1 << 17)

/* The nodes and edges. Issue 12: the ops are read once, in one pass that numbers the nodes,
 * writes them and keeps what mem_model needs (LhsScan); the edges then come from the graph's
 * dep array in one more pass, which also takes the async depth when every op comes after its
 * deps (as in every generated graph: op order is then a topological order). */
static void build_graph(Lhs *s, const LhHw *hw, gboolean xla, LhsScan *sc)
{
	const LhGraph *g = s->g;
	const LhOp *ops = lh__graph_ops(g);
	const guint32 *deps = lh__graph_dep_array(g), *dep_at = lh__graph_dep_at(g);
	guint32 n = s->n_ops;
	gboolean fd_on = lh_params_get_bool(s->p, "delay-offload-start");
	LhCostCtx cx;
	lh__cost_ctx_init(&cx, hw);
	s->first = lh__pages_alloc(s->pages, guint32, n);
	/* At most two nodes per op: sized so, the nodes are written in the pass that numbers
	 * them; the pages past the last node (and NODES_AHEAD more: below) are never touched. */
	gsize most_nodes = 2 * (gsize)MAX(n, 1);
	s->nd = g_aligned_alloc(most_nodes, sizeof(LhsNode), 64);
	/* As many as there are ops made present ahead, then NODES_AHEAD more at a time while the
	 * nodes come (below): most graphs have more nodes than ops (async pairs), a graph of
	 * many inputs fewer, and then a few pages are made present for nothing. */
	gsize handed = n;
	lh__pages_add(s->pages, s->nd, sizeof(LhsNode) * handed);
	/* Freed before the loop, so handed to a helper of their own, joined before. */
	sc->early = lh__pages_new();
	/* mem_model's buffers, one per op, each written whole here. */
	s->bf = g_aligned_alloc(n ? n : 1, sizeof(LhsBuf), 64);
	lh__pages_add(s->pages, s->bf, sizeof(LhsBuf) * (gsize)n);
	guint32 m = 0;
	guint64 ne = 0; /* a bound on the edges: the deps of ops with nodes, and start -> done */
	for (guint32 i = 0; i < n; i++) {
		const LhOp *op = &ops[i];
		sc->aliases |= op->alias != LH_NO_OP;
		double bytes = alloc_bytes(op);
		sc->total += bytes;
		if (op->kind == LH_OP_INPUT) {
			s->bf[i] = (LhsBuf){.bytes = bytes, .freer = G_MAXUINT32};
			s->first[i] = G_MAXUINT32;
			continue;
		}
		s->bf[i] = (LhsBuf){.bytes = bytes, .freer = m}; /* its first node */
		guint32 a = m;
		/* From the cost model's constants (issue 12: a fifth of build_graph at 10^6 ops
		 * went to lh_op_standalone_ns_in's general tests). */
		double t = xla ? 0 : lh__standalone_ns(&cx, g, op);
		if (is_async(op)) {
			guint8 cls = lhs_class(g, op, hw);
			double c = xla ? 1 : 0;
			s->nd[a] = (LhsNode){.cost = c,
			                     .op = i,
			                     .type = NODE_START,
			                     .cls = cls,
			                     .fd = fd_on && op->kind == LH_OP_COPY_D2H,
			                     .own = op->alias == LH_NO_OP};
			/* The done's cost field holds the pair's latency (lhs_edge_lat). */
			s->nd[a + 1] = (LhsNode){
			    .cost = xla ? 5000 : t, .op = i, .type = NODE_DONE, .cls = cls};
			m += 2;
			ne += (guint64)op->n_deps + 1;
			sc->most += 2 * ((guint64)op->n_deps + 1);
			s->n_pairs++;
		} else {
			s->nd[a] = (LhsNode){.cost = xla ? xla_node_cost(op) : t,
			                     .op = i,
			                     .type = NODE_KERNEL,
			                     .own = op->alias == LH_NO_OP};
			m += 1;
			ne += op->n_deps;
			sc->most += (guint64)op->n_deps + 1;
		}
		s->first[i] = a;
		if (m + NODES_AHEAD > handed && handed < most_nodes) {
			/* Issue 12: at 10^6 ops the 325 000 nodes past the ops' count were 1 900
			 * page faults on the scheduler's core. */
			gsize more = MIN(most_nodes - handed, NODES_AHEAD);
			lh__pages_add(s->pages, s->nd + handed, sizeof(LhsNode) * more);
			handed += more;
		}
	}
	s->n_nodes = m;
	/* Edges, each node's in a row (CSR), in node order: the nodes are numbered in op order.
	 * Per op: its first node's edges from its deps' last nodes, then a done's from its start.
	 */
	s->at = lh__pages_alloc(s->pages, LhsAt, m + 1);
	s->succ_at = lh__pages_alloc0(s->pages, guint32, m + 1);
	s->pred = lh__pages_alloc(s->pages, guint32, MAX(ne, 1));
	s->dsrc = lh__pages_alloc(sc->early, guint32, MAX(m, 1));
	s->low = xla ? 1 : 0;
	s->pair_cost = xla ? 1 : 0;
	gboolean ordered = TRUE; /* every op's deps come before it so far */
	guint32 e = 0;
	for (guint32 i = 0; i < n; i++) {
		guint32 a = s->first[i];
		if (a == G_MAXUINT32)
			continue;
		guint32 nd_i = dep_at[i + 1] - dep_at[i];
		const guint32 *d = deps + dep_at[i];
		/* Async depth (see below): a start or kernel takes its deps' deepest, a done adds
		 * its pair's latency to its start's; dsrc keeps the done each depth came from. */
		LhsNode *na = &s->nd[a];
		s->at[a].pred = e;
		s->dsrc[a] = G_MAXUINT32;
		for (guint32 k = 0; k < nd_i; k++) {
			guint32 dk = d[k];
			ordered &= dk < i;
			if (s->first[dk] == G_MAXUINT32)
				continue;
			guint32 u = lhs_last(s, dk);
			s->pred[e++] = u;
			s->succ_at[u + 1]++;
			if (s->nd[u].depth > na->depth) {
				na->depth = s->nd[u].depth;
				s->dsrc[a] = s->dsrc[u];
			}
			if (s->nd[u].type == NODE_DONE)
				na->ud = TRUE;
		}
		if (na->type == NODE_START) {
			guint32 b = a + 1;
			double lat = s->nd[b].cost; /* see above */
			s->at[b].pred = e;
			s->pred[e++] = a;
			s->succ_at[a + 1]++;
			gboolean deep = na->depth + lat > 0;
			s->nd[b].depth = deep ? na->depth + lat : 0;
			s->dsrc[b] = deep ? b : G_MAXUINT32;
		}
	}
	s->at[m].pred = e;
	for (guint32 k = 0; k < m; k++)
		s->succ_at[k + 1] += s->succ_at[k];
	if (ordered)
		return;
	/* Async depth, in topological order of ops (nodes of an op follow its deps): the pass
	 * above read depths not yet final. */
	for (guint32 v = 0; v < m; v++) {
		s->nd[v].depth = 0;
		s->nd[v].ud = FALSE;
		s->dsrc[v] = G_MAXUINT32;
	}
	const guint32 *topo = lh_graph_topo(g);
	for (guint32 k = 0; k < n; k++) {
		guint32 i = topo[k];
		if (s->first[i] == G_MAXUINT32)
			continue;
		for (guint32 v = s->first[i], last = lhs_last(s, i); v <= last; v++)
			for (guint32 e = s->at[v].pred; e < s->at[v + 1].pred; e++) {
				guint32 u = s->pred[e];
				double d = s->nd[u].depth;
				if (s->nd[v].type == NODE_DONE)
					d += lhs_edge_lat(s, v);
				if (d > s->nd[v].depth) {
					s->nd[v].depth = d;
					s->dsrc[v] = s->nd[v].type == NODE_DONE ? v : s->dsrc[u];
				}
				if (s->nd[u].type == NODE_DONE)
					s->nd[v].ud = TRUE;
			}
	}
}

static void lhs_free(Lhs *s)
{
	lh__pages_free(s->pages);
	g_aligned_free(s->nd);
	g_free(s->first);
	g_free(s->at);
	g_free(s->pred);
	g_free(s->succ_at);
	g_free(s->rel);
	g_aligned_free(s->bf);
	g_free(s->buf_of);
	g_free(s->nbuf);
	g_free(s->mc);
	lh__tree_free(s->tree);
	g_free(s->gnode);
	g_free(s->gend);
	g_free(s->gpos);
	if (s->guard)
		lh__bits_clear(&s->gready);
	g_free(s->user_at);
	g_free(s->user);
	g_free(s->dsrc);
}

/* The buffer op @i's output lives in (see mem_model). */
static guint32 lhs_buf_of(const Lhs *s, guint32 i)
{
	return s->buf_of ? s->buf_of[i] : i;
}

/* The buffer @v frees bottom-up (it allocates it), or G_MAXUINT32. */
static guint32 node_frees_of(const Lhs *s, guint32 v)
{
	if (s->nd[v].type == NODE_DONE)
		return G_MAXUINT32;
	guint32 b = lhs_buf_of(s, s->nd[v].op);
	return s->bf[b].freer == v ? b : G_MAXUINT32;
}

/* A buffer that lives to the end is live from the first step (see mem_model). */
static void live_to_end(Lhs *s, guint32 b)
{
	if (s->bf[b].to_end && s->bf[b].bytes > 0) {
		s->bf[b].state = 1;
		s->usage += s->bf[b].bytes;
	}
}

/* The same, from the node's record (issue 12: looking it up was a cache miss per node
 * scheduled or ready, on the op's buffer number): a kernel or start of an op without an alias
 * frees buffer op (its own: buf_of[op] = op, and its first node is the freer); an op with an
 * alias allocates nothing (its buffer is another op's, freed by that op's node). */
static guint32 node_frees(const Lhs *s, guint32 v)
{
	return s->nd[v].own ? s->nd[v].op : G_MAXUINT32;
}

/* The engine's memory rule (docs/engine.md, "Memory"), seen bottom-up; the one place that
 * says which bytes an op allocates and which node frees them. Op i's output lives in buffer
 * buf_of[i] (its own, numbered i, or for an op with an alias the aliased dep's), of
 * bf[].bytes bytes (its out_bytes in device space) allocated when i starts. A buffer lives until
 * the last op that depends on it ends; one nobody depends on lives to the end (to_end), inputs from
 * t = 0. Bottom-up, a node *uses* the buffers that must be live while it runs: a kernel and a start
 * its op's operands; a done its op's operands too (the engine frees them when the async op ends,
 * and XLA's done reads the start's tuple, which holds them) and its own op's output (written while
 * in flight). The first user scheduled makes a buffer live; the node that allocates it (the kernel
 * or start of its op: freer) frees it. Buffers that live to the end are live from the first step;
 * inputs are never freed (their allocation at t = 0 is nobody's to move). An op that wrote its
 * output in place into a dep's buffer would get buf_of[i] = that buffer and bf[].bytes 0 (nothing
 * allocated): its users then keep the dep's buffer live, and the dep's node still frees it. That is
 * what an op with an alias gets. */
static void mem_model(Lhs *s, const LhsScan *sc)
{
	const guint32 *deps = lh__graph_dep_array(s->g), *dep_at = lh__graph_dep_at(s->g);
	guint32 n = s->n_ops, m = s->n_nodes;
	/* bf: build_graph wrote each op's buffer (alloc_bytes, its first node frees it, to_end
	 * 0). Without aliases op i's buffer is buffer i, and buf_of is not kept. */
	if (sc->aliases) {
		s->buf_of = lh__pages_alloc(s->pages, guint32, n);
		for (guint32 i = 0; i < n; i++)
			s->buf_of[i] = i;
		/* In topological order, so that a chain of aliases resolves to the buffer its
		 * first op allocated (docs/graph-format.md, "Buffers"). */
		const guint32 *topo = lh_graph_topo(s->g);
		const LhOp *ops = lh__graph_ops(s->g);
		for (guint32 t = 0; t < n; t++) {
			guint32 i = topo[t];
			if (ops[i].alias != LH_NO_OP)
				s->buf_of[i] = s->buf_of[ops[i].alias];
		}
	}
	for (guint32 i = 0; i < n; i++) {
		guint32 users;
		lh_graph_succs(s->g, i, &users); /* the ops that depend on it */
		if (sc->aliases) {
			if (users == 0)
				s->bf[s->buf_of[i]].to_end = TRUE;
			continue;
		}
		/* Without aliases to_end is final here, and the loop below's step i is taken now,
		 * in its order. */
		s->bf[i].to_end = users == 0;
		live_to_end(s, i);
	}
	for (guint32 b = 0; b < n && sc->aliases; b++)
		live_to_end(s, b);
	/* Per node, the buffers it uses, each once, and the most bytes they hold (max_use); then
	 * the same the other way round. Without aliases every op's buffer is its own, so a node's
	 * are distinct already (the graph's deps are; no op depends on itself): seen[] is
	 * needed only with aliases (issue 12). */
	g_autofree guint32 *seen = NULL;
	if (sc->aliases) {
		seen = g_new(guint32, MAX(n, 1));
		memset(seen, 0xff, sizeof(guint32) * n);
	}
	s->nbuf = lh__pages_alloc(s->pages, guint32, sc->most ? sc->most : 1);
	s->user_at = lh__pages_alloc0(s->pages, guint32, n + 1);
	guint32 len = 0;
	for (guint32 i = 0; i < n; i++) {
		if (s->first[i] == G_MAXUINT32)
			continue;
		const guint32 *d = deps + dep_at[i];
		guint32 nd = dep_at[i + 1] - dep_at[i];
		for (guint32 v = s->first[i], last = lhs_last(s, i); v <= last; v++) {
			s->at[v].nbuf = len;
			/* LhsNode.own is node_frees_of's rule: every test's graph checks it. */
			if (m <= 1u << 17)
				g_assert(node_frees(s, v) == node_frees_of(s, v));
			double use = 0;
			for (guint32 k = 0; k <= nd; k++) {
				guint32 b;
				if (k < nd)
					b = lhs_buf_of(s, d[k]);
				else if (s->nd[v].type == NODE_DONE)
					b = lhs_buf_of(s, i);
				else
					break;
				if (seen) {
					if (seen[b] == v)
						continue;
					seen[b] = v;
				}
				s->nbuf[len++] = b;
				s->user_at[b]++; /* see below */
				use += s->bf[b].bytes;
			}
			s->max_use = MAX(s->max_use, use);
		}
	}
	s->at[m].nbuf = len;
	/* user_at[b] is where b's list ends, then, filled from the last node back, where it
	 * starts: no copy of the offsets to fill from (issue 12). */
	for (guint32 b = 1; b < n; b++)
		s->user_at[b] += s->user_at[b - 1];
	s->user_at[n] = n ? s->user_at[n - 1] : 0;
	s->user = lh__pages_alloc(s->pages, guint32, s->user_at[n] ? s->user_at[n] : 1);
	for (guint32 v = m; v-- > 0;)
		FOR_EACH_USED_BUFFER(s, v, b, s->user[--s->user_at[b]] = v);
}

/* XLA's GetMemoryPressureChanges: (net change, peak change) if @v were scheduled now. */
void lh__lhs_memory_change(const Lhs *s, guint32 v, double *inc, double *peak)
{
	double add = 0, freed = 0;
	FOR_EACH_USED_BUFFER(s, v, b, {
		if (s->bf[b].state == 0)
			add += s->bf[b].bytes;
	});
	guint32 f = node_frees(s, v);
	if (f != G_MAXUINT32 && s->bf[f].state == 1)
		freed = s->bf[f].bytes;
	*inc = add - freed;
	*peak = add;
}

static int ready_if_scheduled(const Lhs *s, guint32 v)
{
	int k = 0;
	for (guint32 e = s->at[v].pred; e < s->at[v + 1].pred; e++)
		if (s->rel[s->pred[e]].outdeg == 1)
			k++;
	return k;
}

/* One rule: a wins when only @ca holds, b wins when only @cb holds, else undecided. */
#define RULE(ca, cb, name)                                                                         \
	do {                                                                                       \
		gboolean a_ = (ca), b_ = (cb);                                                     \
		if (a_ != b_) {                                                                    \
			*reason = name;                                                            \
			return a_;                                                                 \
		}                                                                                  \
	} while (0)

/* The leading rules, each a key of one node (a flag, or a number compared with < or >), taken
 * in order, i.e. one lexicographic comparison of key tuples: 1 when @a is preferred, -1 when
 * @b is, 0 when they tie on all of them (then *@reason is left alone). */
#define LEAD(ca, cb, name)                                                                         \
	do {                                                                                       \
		gboolean a_ = (ca), b_ = (cb);                                                     \
		if (a_ != b_) {                                                                    \
			*reason = name;                                                            \
			return a_ ? 1 : -1;                                                        \
		}                                                                                  \
	} while (0)

int lh__lhs_prefer_lead(const Lhs *s, const LhsCand *ca, const LhsCand *cb, const char **reason)
{
	guint32 a = ca->node, b = cb->node;
	LEAD(!s->nd[a].fd, !s->nd[b].fd, "kForceDelay");
	if (s->mem_active) {
		if (s->usage >= s->limit_bytes)
			LEAD(ca->mem_inc < cb->mem_inc, cb->mem_inc < ca->mem_inc,
			     "kDecreaseMemoryOverLimit");
		LEAD(lhs_peak_fits(s, ca->mem_peak), lhs_peak_fits(s, cb->mem_peak),
		     "kMemoryPeakOverLimit");
	}
	LEAD(s->nd[a].type == NODE_DONE, s->nd[b].type == NODE_DONE, "kScheduleDone");
	double ra = MAX(s->rel[a].rt - s->now, 0), rb = MAX(s->rel[b].rt - s->now, 0);
	LEAD(ra < rb, rb < ra, "kLessStall");
	LEAD(!(lhs_releases(s, a) && s->nd[a].depth == 0 && !lhs_constrained(s, a)),
	     !(lhs_releases(s, b) && s->nd[b].depth == 0 && !lhs_constrained(s, b)),
	     "kStartAtZeroDepth");
	LEAD(lhs_releases(s, a) && lhs_constrained(s, a),
	     lhs_releases(s, b) && lhs_constrained(s, b), "kFreeBackedupResource");
	LEAD(s->nd[a].depth > s->nd[b].depth, s->nd[b].depth > s->nd[a].depth, "kAsyncDepth");
	return 0;
}

/* The node's place in the original order (kOriginalOrder): an async op's start, then its
 * done; a kernel where a done would be. From the node's record, which the rules have read
 * already (issue 12: an array of these was 10 MB at 10^6 ops, and a cache miss per tie). */
static guint64 lhs_position(const Lhs *s, guint32 v)
{
	return 2 * (guint64)s->nd[v].op + (s->nd[v].type != NODE_START);
}

/* TRUE when @a is preferred over @b; *@reason names the rule that decided. */
static gboolean prefer(const Lhs *s, const LhsCand *ca, const LhsCand *cb, const char **reason)
{
	guint32 a = ca->node, b = cb->node;
	int lead = lh__lhs_prefer_lead(s, ca, cb, reason);
	if (lead != 0)
		return lead > 0;
	if (s->next_ready >= 0) {
		double da = fabs(s->next_ready - s->now - lhs_cost(s, a));
		double db = fabs(s->next_ready - s->now - lhs_cost(s, b));
		RULE(!lhs_releases(s, a) && da < db, !lhs_releases(s, b) && db < da, "kAvoidWaste");
	}
	RULE(s->nd[a].ud, s->nd[b].ud, "kUnlockDone");
	int na = ready_if_scheduled(s, a), nb = ready_if_scheduled(s, b);
	RULE(na > nb, nb > na, "kCreatesMoreReadyNodes");
	if (s->mem_active)
		RULE(ca->mem_inc < 0, cb->mem_inc < 0, "kDecreaseMemory");
	*reason = "kOriginalOrder";
	return lhs_position(s, a) > lhs_position(s, b);
}

/* Marks the buffers @v uses live and frees its own (bottom-up, its producer is scheduled);
 * keeps the memory index. @v has left the ready set. */
static void memory_schedule(LhsReady *r, Lhs *s, guint32 v)
{
	FOR_EACH_USED_BUFFER(s, v, b, {
		if (s->bf[b].state == 0) {
			s->bf[b].state = 1;
			s->usage += s->bf[b].bytes;
			if (s->mem_index)
				lh__ready_buffer(r, s, b, 1);
		}
	});
	guint32 f = node_frees(s, v);
	if (f != G_MAXUINT32) {
		if (s->bf[f].state == 1)
			s->usage -= s->bf[f].bytes;
		else if (s->bf[f].state == 0 && s->mem_index)
			lh__ready_buffer(r, s, f, 2);
		s->bf[f].state = 2;
	}
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
/* The bound on the profile's peak. The tree's peak is needed only when a bound does not
 * settle a check (guard_fits). gub bounds it from above: each shift (of a node, guard_shift)
 * raises it by what its records can add to the peak: their positive part, or, when @ordered
 * (every change that takes bytes off lies at or before every change that adds some), only
 * what they add in all: the running sum at any position then changes by (the adds up to it) -
 * (all the takes) <= gup - gdown. Scheduling a node is such a shift, and its net is the node's
 * memory change, at most 0 when XLA's rules take the node that frees most (issue 12: counting
 * only the adds, the bound passed cap every 20 steps or so at 10^6 ops, and each time the tree
 * was pulled). A shift that makes a position count again may raise the peak by any amount:
 * its bound is infinite. The bound is exact arithmetic below 2^53 (whole bytes), and at or
 * above 2^53 it is above cap, so it never decides wrongly.
 *
 * With the tree's helper (lhs-guard.h), a peak it published a few shifts ago, plus the
 * raises of the shifts since, is a bound too, and most often a close one: the last LHS_GSH
 * shifts' raises are kept (gsh_seq, gsh_up) for it. */
static void guard_bound(Lhs *s, gboolean ordered, gboolean recount)
{
	double up = recount ? INFINITY : ordered ? MAX(0, s->gup - s->gdown) : s->gup;
	s->gup = s->gdown = 0;
	s->gub += up;
	guint32 k = (guint32)(s->gsh++ % LHS_GSH);
	s->gsh_seq[k] = lh__tree_commit(s->tree);
	s->gsh_up[k] = up;
}

/* A change of @x bytes to the profile, for the shift's bound (guard_bound). */
static void guard_tally(Lhs *s, double x)
{
	if (x > 0)
		s->gup += x;
	else
		s->gdown -= x;
}

/* Adds @x bytes to the profile from position @q on (nothing past the last position). */
static void guard_add(Lhs *s, guint32 q, double x)
{
	if (q >= s->n_nodes)
		return;
	lh__tree_add(s->tree, q, x);
	guard_tally(s, x);
}

/* The same from the position after buffer @b's last (its gend + 1). A buffer that lives to the
 * end has its last at the last position (guard_init), so nothing changes. Others may too (a
 * last user at the last position); the bound then counts bytes the tree does not, which only
 * loosens it: gend is the tree's to read (issue 12: one cache miss less per buffer here). */
static void guard_add_after(Lhs *s, guint32 b, double x)
{
	if (s->bf[b].to_end)
		return;
	lh__tree_add_after(s->tree, b, x);
	guard_tally(s, x);
}

/* A bound from the tree's latest peak: the raises since (guard_bound), or INFINITY if they
 * are no longer kept. */
static double guard_latest(Lhs *s)
{
	guint64 seq;
	double peak = lh__tree_latest(s->tree, &seq), up = 0;
	for (guint64 i = s->gsh; i-- > 0;) {
		if (s->gsh - i > LHS_GSH)
			return INFINITY;
		if (s->gsh_seq[i % LHS_GSH] <= seq)
			break;
		up += s->gsh_up[i % LHS_GSH];
	}
	return peak + up;
}

/* Node @v's position in serial's order, and the node at position @q. */
static guint32 gpos_of(const Lhs *s, guint32 v)
{
	return s->gpos ? s->gpos[v] : v;
}

static guint32 gnode_of(const Lhs *s, guint32 q)
{
	return s->gnode ? s->gnode[q] : q;
}

/* The first position at which buffer @b counts in the profile: its freer's (0 for an
 * input). */
static guint32 buf_gdef(const Lhs *s, guint32 b)
{
	return s->bf[b].freer == G_MAXUINT32 ? 0 : gpos_of(s, s->bf[b].freer);
}

static void guard_init(Lhs *s)
{
	guint32 n = s->n_ops, m = s->n_nodes;
	const guint32 *topo = lh_graph_topo(s->g);
	/* Serial's order is node order (as in every generated graph) when the ops with nodes
	 * come in op order in the topological order: then positions are nodes, and gpos and
	 * gnode are not kept (issue 12: 10 MB less at 10^6 ops, and a cache miss less per node
	 * that comes or goes in the ready set). */
	gboolean ident = TRUE;
	guint32 p = 0;
	for (guint32 k = 0; k < n && ident; k++) {
		guint32 i = topo[k];
		if (s->first[i] != G_MAXUINT32) {
			ident = s->first[i] == p;
			p = lhs_last(s, i) + 1;
		}
	}
	if (!ident) {
		s->gpos = lh__pages_alloc(s->pages, guint32, m);
		p = 0;
		for (guint32 k = 0; k < n; k++)
			for (guint32 i = topo[k], v = s->first[i], last = lhs_last(s, i);
			     v != G_MAXUINT32 && v <= last; v++)
				s->gpos[v] = p++;
	}
	guint32 top = m - 1;
	double *gd = lh__tree_profile(m, s->pages);
	s->gend = lh__pages_alloc(s->pages, guint32, n);
	for (guint32 b = 0; b < n; b++) {
		if (s->bf[b].bytes == 0)
			continue;
		guint32 gdef = buf_gdef(s, b);
		s->gend[b] = s->bf[b].to_end ? top : gdef;
		guint32 k0 = s->user_at[b], k1 = s->user_at[b + 1];
		/* A buffer's users are listed in node order (mem_model): with positions in node
		 * order too, the last is the latest (issue 12: reading them all was half of this
		 * function at 10^6 ops). */
		if (ident && k1 > k0)
			k0 = k1 - 1;
		for (guint32 k = k0; k < k1; k++)
			s->gend[b] = MAX(s->gend[b], gpos_of(s, s->user[k]));
		gd[gdef] += s->bf[b].bytes;
		if (s->gend[b] + 1 < m)
			gd[s->gend[b] + 1] -= s->bf[b].bytes;
	}
	s->tree = lh__tree_new(gd, m, s->gend, s->pages);
	s->p0 = s->gub = lh__tree_peak(s->tree);
	s->cap = MAX(s->limit_bytes, s->p0);
	s->peak_done = s->usage;
	if (!ident) {
		s->gnode = lh__pages_alloc(s->pages, guint32, m);
		for (guint32 v = 0; v < m; v++)
			s->gnode[s->gpos[v]] = v;
	}
	lh__bits_init(&s->gready, m);
}

/* Moves @v from the rest to the scheduled part in the tree (@sign 1), or back (-1), before
 * memory_schedule(). */
static void guard_shift(Lhs *s, guint32 v, double sign)
{
	/* Taking the node (@sign 1): the bytes its buffer frees come off from its own position
	 * (gdef of what it frees is its gpos), the bytes of the buffers it makes live are added
	 * after their last user (gend + 1), and it uses them, so gend >= its gpos: every take
	 * lies at or before every add (guard_bound). Giving it back reverses them. */
	if (sign < 0)
		lh__tree_count(s->tree, gpos_of(s, v), TRUE);
	FOR_EACH_USED_BUFFER(s, v, b, {
		if (s->bf[b].state == 0 && s->bf[b].bytes > 0)
			guard_add_after(s, b, sign * s->bf[b].bytes);
	});
	guint32 f = node_frees(s, v);
	if (f != G_MAXUINT32 && s->bf[f].bytes > 0 && s->bf[f].state != 2) {
		guard_add(s, buf_gdef(s, f), -sign * s->bf[f].bytes);
		if (s->bf[f].state == 0)
			guard_add_after(s, f, sign * s->bf[f].bytes);
	}
	if (sign > 0)
		lh__tree_count(s->tree, gpos_of(s, v), FALSE);
	guard_bound(s, sign > 0, sign < 0);
}

/* The estimate with @v taken next, the tree already shifted; @peak: lh__lhs_memory_change()'s. */
static double guard_estimate(Lhs *s, double peak)
{
	s->gub = lh__tree_peak(s->tree);
	return MAX(s->usage + peak, s->gub);
}

/* Whether guard_estimate(@peak) <= cap, reading the tree's peak only when a bound does not
 * say: gub, then the tree's latest peak and the raises since, then the peak itself (waiting
 * for the helper, if it runs). */
static gboolean guard_fits(Lhs *s, double peak)
{
	if (s->usage + peak > s->cap)
		return FALSE;
	if (s->n_nodes <= 1u << 17) {            /* every test's graph: check the bounds */
		double latest = guard_latest(s); /* before the wait: a peak a few shifts old */
		double exact = lh__tree_peak(s->tree);
		g_assert(exact <= s->gub && exact <= latest);
	}
	if (s->gub <= s->cap)
		return TRUE;
	s->gub = MIN(s->gub, guard_latest(s));
	if (s->gub <= s->cap)
		return TRUE;
	s->gub = lh__tree_peak(s->tree);
	return s->gub <= s->cap;
}

/* lh__lhs_memory_change() of a ready node: the memory index holds it exactly when it is kept
 * (pick() asserts the two agree), and reading it there saves a pass over the node's
 * buffers. */
static void change_of(const Lhs *s, guint32 v, double *inc, double *peak)
{
	if (s->mem_index) {
		*inc = s->mc[v].inc;
		*peak = s->mc[v].peak;
	} else {
		lh__lhs_memory_change(s, v, inc, peak);
	}
}

/* Checks @v, XLA's pick, and commits the node to take to the tree (see "The memory guard"). */
static guint32 guard_check(Lhs *s, guint32 v, const char **why)
{
	double inc, peak;
	change_of(s, v, &inc, &peak);
	guard_shift(s, v, 1);
	if (guard_fits(s, peak))
		goto done;
	guard_shift(s, v, -1);
	s->n_veto++;
	v = gnode_of(s, lh__bits_last(&s->gready));
	*why = "memory guard: serial's order";
	guint8 c = s->nd[v].cls;
	if (s->nd[v].type == NODE_DONE && !lhs_class_free(s, c)) {
		guint32 best = G_MAXUINT32;
		double best_est = 0;
		/* Every ready node (in any order: (estimate, position) decides). */
		for (guint32 k = lh__bits_first(&s->gready); k != G_MAXUINT32;
		     k = lh__bits_next(&s->gready, k)) {
			guint32 u = gnode_of(s, k);
			if (s->nd[u].type != NODE_START || s->nd[u].cls != c)
				continue;
			change_of(s, u, &inc, &peak);
			guard_shift(s, u, 1);
			double e = guard_estimate(s, peak);
			guard_shift(s, u, -1);
			if (best == G_MAXUINT32 || e < best_est ||
			    (e == best_est && gpos_of(s, u) > gpos_of(s, best))) {
				best = u;
				best_est = e;
			}
		}
		g_assert(best != G_MAXUINT32); /* the starts of in-flight ops are always ready */
		v = best;
		*why = "memory guard: an in-flight start";
	}
	change_of(s, v, &inc, &peak);
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
	if (s->nd[v].type != NODE_DONE || !is_coll_class(s->nd[v].cls))
		return FALSE;
	const LhOp *a = lh_graph_op(s->g, s->nd[v].op);
	if (!lh_graph_op_members(s->g, a))
		return FALSE;
	for (guint32 k = 0; k < s->coll_in_flight->len; k++) {
		const LhOp *b = lh_graph_op(s->g, s->coll_in_flight->d[k]);
		if (lh_graph_op_members(s->g, b) && lh_ops_share_devices(s->g, a, b))
			return TRUE;
	}
	return FALSE;
}

/* Removes from @cand the dones shares_devices() holds back; returns how many are left. */
static guint32 drop_shared(const Lhs *s, LhsVec *cand)
{
	guint32 w = 0;
	for (guint32 k = 0; k < cand->len; k++) {
		guint32 v = cand->d[k];
		if (shares_devices(s, v)) {
			lh_params_explain(s->p,
			                  "lhs: done '%s' waits: it shares more than one "
			                  "device with a collective in flight",
			                  lh_graph_op(s->g, s->nd[v].op)->name);
			continue;
		}
		cand->d[w++] = v;
	}
	cand->len = w;
	return w;
}

/* Keeps coll_in_flight: a collective's done puts its op in, its start takes it out. */
static void coll_track(Lhs *s, guint32 v)
{
	if (!is_coll_class(s->nd[v].cls))
		return;
	guint32 op = s->nd[v].op;
	if (s->nd[v].type == NODE_DONE) {
		lhs_vec_push(s->coll_in_flight, op);
		return;
	}
	for (guint32 k = 0; k < s->coll_in_flight->len; k++)
		if (s->coll_in_flight->d[k] == op) {
			lhs_vec_remove(s->coll_in_flight, k);
			return;
		}
}

/* Compares the candidates in order with XLA's rules; returns the winner. */
static guint32 pick(const Lhs *s, const LhsVec *cand, const char **why)
{
	gboolean have = FALSE;
	LhsCand best = {0};
	for (guint32 k = 0; k < cand->len; k++) {
		guint32 v = cand->d[k];
		/* The overlap limit: a done needs a free slot of its class. */
		if (s->nd[v].type == NODE_DONE && !lhs_class_free(s, s->nd[v].cls))
			continue;
		LhsCand c = {.node = v};
		if (s->mem_active && s->mem_index) {
			/* The memory index is exact (see "Memory pressure" in lhs-ready.c). The
			 * check recounts the node's buffers, a cache miss each: on graphs up to
			 * 2^17 nodes (every test's) only (issue 12: it was a tenth of lhs's time
			 * at 10^6 ops). */
			c.mem_inc = s->mc[v].inc;
			c.mem_peak = s->mc[v].peak;
			if (s->n_nodes <= 1u << 17) {
				double inc, peak;
				lh__lhs_memory_change(s, v, &inc, &peak);
				g_assert(inc == c.mem_inc && peak == c.mem_peak);
			}
		} else if (s->mem_active) {
			lh__lhs_memory_change(s, v, &c.mem_inc, &c.mem_peak);
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

/* Fetches what scheduling @v reads (its buffers and where their users are listed, for a
 * buffer that goes live; the nodes it depends on, whose records lh__lhs_memory_change reads
 * when they become ready) before it is read: the records lie anywhere, and the loops that
 * read them branch on each, so without this each is a cache miss of its own (issue 12). The
 * guard may pick another node; then this is wasted, and nothing else. */
static void prefetch_node(const Lhs *s, guint32 v)
{
	FOR_EACH_USED_BUFFER(s, v, b, {
		__builtin_prefetch(&s->bf[b], 1);
		__builtin_prefetch(&s->user_at[b]);
	});
	for (guint32 e = s->at[v].pred; e < s->at[v + 1].pred; e++) {
		__builtin_prefetch(&s->rel[s->pred[e]], 1);
		__builtin_prefetch(&s->at[s->pred[e]]);
		__builtin_prefetch(&s->nd[s->pred[e]]);
	}
}

/* A node joins the ready set (and the guard's set of ready nodes by serial position). */
static void add_ready(LhsReady *r, Lhs *s, guint32 v)
{
	if (s->guard)
		lh__bits_add(&s->gready, gpos_of(s, v));
	lh__ready_add(r, s, v);
}

static void remove_ready(LhsReady *r, Lhs *s, guint32 v)
{
	if (s->guard)
		lh__bits_del(&s->gready, gpos_of(s, v));
	lh__ready_remove(r, s, v);
}

/* Whether the memory guard's tree gets a helper thread (lhs-guard.h): only when
 * LHSIM_LHS_GUARD_THREAD=1 is in the environment (the tests run both ways and compare the
 * plans). Issue 12: whether it pays depends on what moving a cache line between two cores
 * costs, which no portable call tells. At 10^6 ops (bench-sched -s lhs -r 1 1000000,
 * alternating runs; bench/README.md, the seventh and eighth rounds) it took the median from
 * 1.036 to 0.924 s on one VM, and from 1.074 to 1.276 s the other way on another, where a
 * cache line took 350 ns to move between the cores (710 ns a ping-pong round trip). The
 * helper also spins while it waits, a core's worth of CPU time during the steps. So it is the
 * user's choice, off unless asked for. */
static gboolean guard_thread(void)
{
	const char *e = g_getenv("LHSIM_LHS_GUARD_THREAD");
	return e && strcmp(e, "1") == 0;
}

/* How many nodes ahead the emit loop fetches. */
#define EMIT_AHEAD 16

static LhPlan *lhs_plan(const LhGraph *g, const LhHw *hw, const LhParams *p, GError **error)
{
	(void)error;
	gboolean xla = strcmp(lh_params_get_choice(p, "estimator"), "xla") == 0;
	Lhs s = {.g = g, .p = p, .n_ops = lh_graph_n_ops(g), .pages = lh__pages_new()};
	LhsScan sc = {0};
	build_graph(&s, hw, xla, &sc);
	lh__class_limits(p, s.limit);
	gint64 su = lh_params_get_int(p, "scale-up-collective-limit");
	s.limit[LHS_SCALE_UP] = su == 0 ? G_MAXUINT32 : (guint32)su;
	s.coll_in_flight = lhs_vec_new();
	guint32 m = s.n_nodes;
	s.limit_bytes =
	    (lh_params_is_set(p, "memory-limit") ? lh_params_get_double(p, "memory-limit")
	                                         : hw->memory_gib) *
	    1073741824.0;
	mem_model(&s, &sc);
	lh__pages_free(sc.early); /* before dsrc is freed; long done */
	gboolean reference = g_getenv("LHSIM_LHS_REFERENCE") != NULL;
	/* The memory index (see "Memory pressure" in lhs-ready.c): needed only if usage, at most
	 * every buffer at once, can pass half the limit; exact while that total stays below 2^53
	 * bytes. */
	double total = sc.total;
	s.mem_index_ok = !reference && total > s.limit_bytes / 2 && total < 9007199254740992.0;
	/* A graph of inputs alone has no node, no position for the guard to bound. */
	s.guard = m > 0 && total > s.limit_bytes && total < 9007199254740992.0;
	/* The memory index's per-node changes: allocated now, though the index starts at the
	 * first step that needs it, so that their pages are made present while the guard and
	 * the ready set are set up (issue 12: at 10^6 ops the index starts at step 0, with
	 * 135 000 nodes ready, and wrote them page fault by page fault). A run whose usage never
	 * brings the memory rules in holds them for nothing: 20 bytes a node. */
	if (s.mem_index_ok)
		s.mc = lh__pages_alloc0(s.pages, LhsMemChange, m);
	if (s.guard)
		guard_init(&s);
	s.rel = lh__pages_alloc(s.pages, LhsRel, m);
	LhsReady r;
	lh__ready_init(&r, &s);
	g_clear_pointer(&s.dsrc, g_free); /* the rank order's alone */
	for (guint32 v = 0; v < m; v++) {
		guint32 od = s.succ_at[v + 1] - s.succ_at[v];
		s.rel[v] = (LhsRel){od ? -INFINITY : 0, od};
		if (s.rel[v].outdeg == 0)
			add_ready(&r, &s, v);
	}
	g_autofree char *su_text =
	    su == 0 ? g_strdup("unlimited") : g_strdup_printf("%" G_GINT64_FORMAT, su);
	lh_params_explain(p,
	                  "lhs: %u ops -> %u nodes; estimator %s; limits: collective %u, "
	                  "scale-up collective %s, p2p %u, "
	                  "async-compute %u, memcpy %s; memory limit %.3f GiB; scheduling "
	                  "bottom-up (the last op first)",
	                  s.n_ops, m, xla ? "xla" : "model", s.limit[LH_CLASS_COLLECTIVE], su_text,
	                  s.limit[LH_CLASS_P2P], s.limit[LH_CLASS_ASYNC_COMPUTE],
	                  s.limit[LH_CLASS_MEMCPY] == G_MAXUINT32 ? "unlimited" : "limited",
	                  s.limit_bytes / 1073741824.0);
	guint32 *order = lh__pages_alloc(s.pages, guint32, m); /* reversed program order */
	/* The plan's commands, written in place (lh__plan_append) once the order is known, as
	 * lh_plan_run and lh_plan_link write them: a kernel runs on main (1 command); a start
	 * links main to its side stream and runs there (3); a done links the side stream to
	 * main (2). Made now, so that their pages are made present during the steps. */
	LhPlan *plan = lh_plan_new();
	guint32 main_s = lh_plan_add_stream(plan, "main", LH_ROLE_COMPUTE);
	guint32 n_cmds = m + 3 * s.n_pairs;
	LhCmd *cmd = lh__pages_hand(s.pages, lh__plan_append(plan, n_cmds), sizeof(LhCmd) * n_cmds);
	g_autofree guint32 *member = lh__pages_alloc0(s.pages, guint32, s.n_ops);
	LhsVec *cand = lhs_vec_new();
	guint32 n_mem = 0, n_over = 0; /* steps with the memory rules, at or over the limit */
	if (s.guard && guard_thread())
		lh__tree_start(s.tree);
	for (guint32 step = 0; step < m; step++) {
		g_assert(r.n > 0);
		s.mem_active = s.usage > s.limit_bytes / 2;
		lh__ready_advance(&r, &s);
		s.next_ready = lh__ready_next_time(&r, &s);
		const char *why = r.n == 1 ? "only candidate" : "kScheduleDone";
		/* Under memory pressure the memory rules come first; they cannot set nodes apart
		 * while even the largest use of any node fits under the limit (every node passes
		 * kMemoryPeakOverLimit, and kDecreaseMemoryOverLimit needs usage at the limit),
		 * so the plain keys still prune. Otherwise see "Memory pressure" in lhs-ready.c;
		 * without the memory index, every ready node is compared. */
		gboolean mem_rules = s.mem_active && s.usage + s.max_use > s.limit_bytes;
		gboolean exact = lh__ready_exact(&r, &s);
		if (s.mem_index_ok && !s.mem_index && (mem_rules || !exact))
			lh__ready_index_build(&r, &s);
		n_mem += mem_rules;
		n_over += mem_rules && s.usage >= s.limit_bytes;
		if (reference || (!s.mem_index && (mem_rules || !exact))) {
			lh__ready_all(&r, cand);
		} else if (mem_rules && s.usage >= s.limit_bytes) {
			why = lh__ready_over_candidates(&r, &s, cand);
		} else if (!exact) {
			why = lh__ready_scan(&r, &s, cand);
		} else if (mem_rules) {
			why = lh__ready_fit_candidates(&r, &s, cand);
		} else {
			why = lh__ready_candidates(&r, &s, cand);
		}
		if (r.n == 1)
			why = "only candidate";
		/* XLA's rule (openxla/xla#19026, #47467): a collective that shares more than one
		 * device with one in flight waits; the start of the one in flight is always
		 * ready, so some node is left. */
		if (s.coll_in_flight->len && !drop_shared(&s, cand)) {
			lh__ready_all(&r, cand);
			drop_shared(&s, cand);
			why = "a collective sharing devices is in flight";
		}
		guint32 v = pick(&s, cand, &why);
		prefetch_node(&s, v);
		if (s.guard)
			v = guard_check(&s, v, &why);
		remove_ready(&r, &s, v);
		double t = MAX(s.now, s.rel[v].rt);
		s.rel[v].rt = t;
		s.now = t + lhs_cost(&s, v);
		if (s.nd[v].type == NODE_DONE)
			s.in_flight[s.nd[v].cls]++;
		else if (s.nd[v].type == NODE_START)
			s.in_flight[s.nd[v].cls]--;
		coll_track(&s, v);
		memory_schedule(&r, &s, v);
		order[step] = v;
		if (lh_params_explaining(p))
			lh_params_explain(p, "lhs: t=%.0f %s %s %s '%s' (%s)", t,
			                  xla ? "cost units" : "ns", node_type_name(s.nd[v].type),
			                  lh_op_kind_name(lh_graph_op(g, s.nd[v].op)->kind),
			                  lh_graph_op(g, s.nd[v].op)->name, why);
		/* A node is ready when its last user is scheduled, at the latest of now and its
		 * users' times plus the edges' latencies: the maximum is taken as the users come
		 * (the same sums, so the same maximum as over the users at the end). */
		double et = t + lhs_edge_lat(&s, v);
		for (guint32 e = s.at[v].pred; e < s.at[v + 1].pred; e++) {
			guint32 un = s.pred[e];
			LhsRel *u = &s.rel[un];
			if (et > u->rt)
				u->rt = et;
			if (--u->outdeg > 0)
				continue;
			u->rt = MAX(s.now, u->rt);
			add_ready(&r, &s, un);
		}
		if (s.mem_index)
			lh__ready_ahead(&r, &s);
	}
	lhs_vec_free(cand);
	lhs_vec_free(s.coll_in_flight);
	lh__pages_free(s.pages); /* before the arrays handed over are freed; long done */
	s.pages = NULL;
	g_clear_pointer(&s.tree, lh__tree_free); /* its helper's core is free again */
	lh__ready_clear(&r);
	lh_params_explain(p, "lhs: memory rules at %u of %u steps, %u of them at or over the limit",
	                  n_mem, m, n_over);
	if (s.guard)
		lh_params_explain(p,
		                  "lhs: memory guard: serial's order peaks at %.0f B, bound %.0f "
		                  "B; this order at %.0f B; %u picks replaced",
		                  s.p0, s.cap, s.peak_done, s.n_veto);

	/* Emit in program order. */
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
	guint32 w = 0;
	for (guint32 k = m; k-- > 0;) {
		/* The nodes lie anywhere in program order: fetched ahead, their misses overlap
		 * (issue 12). */
		if (k >= EMIT_AHEAD)
			__builtin_prefetch(&s.nd[order[k - EMIT_AHEAD]]);
		guint32 v = order[k], op = s.nd[v].op;
		switch (s.nd[v].type) {
		case NODE_KERNEL:
			w += lh__cmds_run(cmd + w, main_s, op);
			break;
		case NODE_START: {
			LhStreamPool *pl = &pool[s.nd[v].cls];
			/* May add a stream to the plan, never a command: cmd stays valid. */
			member[op] = lh__pool_acquire(pl, plan);
			guint32 side = lh__pool_stream(pl, member[op]);
			w += lh__cmds_link(cmd + w, main_s, side, lh_plan_new_event(plan));
			w += lh__cmds_run(cmd + w, side, op);
			if (lh_params_explaining(p)) /* the arguments read the op: a cache miss */
				lh_params_explain(p, "lhs: %s '%s' runs on %s (%s)",
				                  lh_op_kind_name(lh_graph_op(g, op)->kind),
				                  lh_graph_op(g, op)->name,
				                  lh_plan_stream(plan, side)->name,
				                  lhs_class_name(s.nd[v].cls));
			break;
		}
		case NODE_DONE: {
			LhStreamPool *pl = &pool[s.nd[v].cls];
			w += lh__cmds_link(cmd + w, lh__pool_stream(pl, member[op]), main_s,
			                   lh_plan_new_event(plan));
			lh__pool_release(pl, member[op]);
			break;
		}
		}
	}
	g_assert(w == m + 3 * s.n_pairs);
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
