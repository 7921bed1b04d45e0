/* lhsim — NCCL-style collective costs on a cluster (docs/engine.md, "Collectives on a
 * cluster").
 *
 * The model is NCCL's own tuning model, ncclTopoTuneModel() and ncclTopoGetAlgoTime() in
 * NVIDIA/nccl src/graph/tuning.cc (read at commit b6475625fbcaa2c3c0e50eed2fa1255d7514d4a2), for
 * the ring algorithm, with its bandwidths replaced by two levels: NVLink inside a node
 * (nvlink_busbw_gbs) and the network leaving it (net_gbs per GPU). Not modelled: the tree,
 * NVLS (NVLink SHARP) and CollNet algorithms, LL128's per-channel cap, NCCL's per-CPU network
 * overhead and the net plugin's extra latency.
 */
#include "sim/topo.h"

#include <math.h>

/* tuning.cc at b647562: baseLat[Ring] = {LL 6.6, LL128 14.0, Simple 8.4} us;
 * hwLat[NVLINK][Ring] = {0.6, 1.9, 3.4} us; hwLat[NET][Ring] = {2.7, 4.0, 14.0} us. The .ini
 * gives the Simple column (coll_base_latency_ns, nvlink_latency_ns, net_latency_ns); LL and
 * LL128 keep NCCL's ratio to Simple, so a file that states NCCL's numbers gets NCCL's table. */
static const double base_us[3] = {6.6, 14.0, 8.4};
static const double nvl_us[3] = {0.6, 1.9, 3.4};
static const double net_us[3] = {2.7, 4.0, 14.0};
enum { P_LL, P_LL128, P_SIMPLE };

LhCollCost lh_coll_cost(const LhOp *op, LhSpan sp, const LhHw *hw)
{
	LhCollCost best = {0};
	best.span = sp;
	best.proto = LH_PROTO_SIMPLE;
	double n = sp.ranks, N = sp.nodes, m = sp.per_node, S = (double)op->size;
	if (sp.ranks <= 1)
		return best; /* tuning.cc: "if (nRanks <= 1) return": nothing to move */
	/* Algorithm steps and those that cross the network (tuning.cc: nsteps, nInterSteps). */
	double nsteps, ninter, nvl_bytes, net_bytes;
	switch ((LhOpKind)op->kind) {
	case LH_OP_ALL_REDUCE:
		/* Ring all-reduce: a reduce-scatter then an all-gather, 2(n-1) steps; every link
		 * of the ring carries the bus bytes 2(n-1)/n * S (nccl-tests PERFORMANCE.md). */
		nsteps = 2 * (n - 1);
		ninter = N > 1 ? 2 * N : 0;
		nvl_bytes = 2 * (n - 1) / n * S;
		net_bytes = nvl_bytes;
		break;
	case LH_OP_ALL_GATHER:
	case LH_OP_REDUCE_SCATTER:
		nsteps = n - 1;
		ninter = N - 1;
		nvl_bytes = (n - 1) / n * S;
		net_bytes = nvl_bytes;
		break;
	case LH_OP_ALL_TO_ALL:
		/* Every member sends S/n to each other member at once: one step. Its bus bytes
		 * (n-1)/n * S split into (m-1)/n * S to members in its node and (n-m)/n * S to
		 * members elsewhere, through its own NIC. */
		nsteps = 1;
		ninter = N > 1 ? 1 : 0;
		nvl_bytes = (m - 1) / n * S;
		net_bytes = (n - m) / n * S;
		break;
	default: /* collective-permute, send, recv: S to one peer, one step */
		nsteps = 1;
		ninter = N > 1 ? 1 : 0;
		nvl_bytes = N > 1 ? 0 : S;
		net_bytes = N > 1 ? S : 0;
		break;
	}
	/* A ring crosses each node boundary once per channel; NCCL gives every channel its own
	 * NIC, so the m members of a node share the crossing traffic over their m NICs: each
	 * NIC carries 1/m of the bus bytes. (With m = 8 rails of 50 GB/s that is 400 GB/s of
	 * bus bandwidth per node, the nccl-tests figure for 8 x 400 Gb/s nodes.) */
	if (op->kind == LH_OP_ALL_REDUCE || op->kind == LH_OP_ALL_GATHER ||
	    op->kind == LH_OP_REDUCE_SCATTER) {
		net_bytes = N > 1 ? net_bytes / m : 0;
		if (m <= 1)
			nvl_bytes = 0;
	}
	double scale[3] = {hw->coll_base_latency_ns / (base_us[P_SIMPLE] * 1e3),
	                   hw->nvlink_latency_ns / (nvl_us[P_SIMPLE] * 1e3),
	                   hw->net_latency_ns / (net_us[P_SIMPLE] * 1e3)};
	gboolean first = TRUE;
	double best_t = 0;
	for (int p = 0; p < 3; p++) {
		/* Bandwidth per protocol (tuning.cc, "Various model refinements"): LL carries
		 * 1/4 of the bus bandwidth (1/3 for a one-node gather or scatter), LL128 0.92
		 * (0.7 with one GPU per node), Simple all of it. */
		double f = 1;
		if (p == P_LL)
			f = (N > 1 || op->kind == LH_OP_ALL_REDUCE) ? 1.0 / 4.0 : 1.0 / 3.0;
		else if (p == P_LL128)
			f = m < 2 ? 0.7 : 0.92;
		double intra = nvl_us[p] * 1e3 * scale[1];
		double inter = net_us[p] * 1e3 * scale[2];
		double lat =
		    base_us[p] * 1e3 * scale[0] + MAX(nsteps - ninter, 0) * intra + ninter * inter;
		/* ncclTopoGetAlgoTime: the "plateau effect of ring", Simple all-reduce across
		 * nodes from n/16 * 64 KiB up. */
		if (p == P_SIMPLE && N > 1 && op->kind == LH_OP_ALL_REDUCE && S >= n / 16.0 * 65536)
			lat *= 1.9;
		double tn = nvl_bytes > 0 ? nvl_bytes / (hw->nvlink_busbw_gbs * f) : 0;
		double tw = net_bytes > 0 ? net_bytes / (hw->net_gbs * f) : 0;
		double t = lat + MAX(tn, tw);
		if (first || t < best_t) {
			first = FALSE;
			best_t = t;
			best.latency_ns = lat;
			best.nvl_ns = tn;
			best.net_ns = tw;
			best.wire_ns = MAX(tn, tw);
			best.proto = p == P_LL      ? LH_PROTO_LL
			             : p == P_LL128 ? LH_PROTO_LL128
			                            : LH_PROTO_SIMPLE;
		}
	}
	return best;
}
