/* lhsim benchmark peer — the same DAG simulated by SimGrid (issue 12), run by bench-run.
 *
 * simgrid-peer GRAPH [--dag] [--upfront] reads an lhsim graph JSON with lhsim's own reader (so that both
 * simulators start from the same file and the same parse), builds it as SimGrid 3.32 s4u
 * activities with their dependencies (the DAG API that replaced SimDag), runs SimGrid's engine
 * to the end and prints one line: ops, activities, edges, read, build, run and total wall
 * time, the simulated makespan, the RSS after reading and the peak RSS. The platform is
 * built in code, nothing is read from a platform file.
 *
 * What maps to what (each op's SimGrid time alone equals lhsim's standalone duration,
 * lh_op_standalone_ns_in on h100-sxm):
 *   kernel, copy-d2d      an Exec on host "gpu" (1e9 flop/s) of as many flops as the op's
 *                         standalone ns; concurrent Execs share the host max-min fairly, as
 *                         lhsim's `sm_sharing = fair` shares the SMs
 *   copy-h2d, copy-d2h    a Comm cpu -> gpu (gpu -> cpu) of `size` bytes over a link of
 *                         pcie_gbs with copy_latency_ns, one link per direction
 *   collectives, p2p      a Comm gpu -> peer over a link "nvlink" of link_gbs, of as many bytes
 *                         as take the op's standalone time (NCCL latency and wire phase) at
 *                         that rate: the latency depends on the op, a link has one
 *   input                 nothing: lhsim never runs inputs (their outputs are live at t = 0),
 *                         so edges from inputs are dropped too
 * Every dependency between ops that run is an s4u dependency (add_successor). By default each op
 * also depends on the one before it in lhsim's program order (lh_graph_topo), which is the
 * schedule of `lhsim run GRAPH --sched serial`; --dag leaves the DAG alone, so SimGrid runs every
 * ready activity at once. The network model is CM02 without cross-traffic, so that a Comm alone
 * takes latency + size / bandwidth exactly (SimGrid's --help-models: "CM02: ... without
 * corrective factors"; the default LV08 multiplies latency by 13.01 and bandwidth by .97).
 *
 * Activities are created just in time, when the last of their deps has started, with a
 * dependency on each dep not finished by then: SimGrid 3.32 keeps every activity in a list of
 * the actor that created it (here the maestro) and each completion removes itself by a linear
 * scan, so building all 10^6 activities first makes the run quadratic (bench/README.md).
 * --upfront builds them all first, as SimGrid's own DAG loaders do, to show it.
 */
#include "lhsim.h"

#include <simgrid/s4u.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

namespace sg4 = simgrid::s4u;

static double now()
{
	return (double)g_get_monotonic_time() / 1e6;
}

/* Resident set now, MiB, from /proc/self/status (VmRSS). */
static double rss_mib()
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return 0;
	char line[256];
	double kib = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %lf kB", &kib) == 1)
			break;
	fclose(f);
	return kib / 1024.0;
}

/* The graph and its activities. act[i] is op i's activity (null for inputs, which never run,
 * and, until it is created, for an op not yet due). */
static struct {
	LhGraph *g;
	LhHw *hw;
	sg4::Host *cpu, *gpu, *peer;
	std::vector<sg4::ActivityPtr> act;
	std::vector<guint32> chain_prev, chain_next; /* the serial order's extra edges */
	std::vector<guint32> pending; /* deps (and chain predecessor) not yet created and started */
	std::vector<guint32> op_of; /* op_of[i] = i: an activity's user data points to its op */
	size_t n_act, n_edges, finished;
} dag;

/* add_successor is public only on the typed activities (Exec, Comm), not on Activity. */
static void depend(const sg4::ActivityPtr &from, const sg4::ActivityPtr &to)
{
	if (auto *c = dynamic_cast<sg4::Comm *>(from.get()))
		c->add_successor(to);
	else
		static_cast<sg4::Exec *>(from.get())->add_successor(to);
}

static void started(sg4::Activity const &a);

/* Creates op @i's activity with a dependency on each of its deps that has not finished yet, and
 * starts it when none is left (with @start; the up-front build starts the roots itself). */
static void create(guint32 i, bool start)
{
	const LhOp *op = lh_graph_op(dag.g, i);
	double ns = lh_op_standalone_ns_in(dag.g, op, dag.hw);
	sg4::ActivityPtr a;
	if (op->kind == LH_OP_COPY_H2D || op->kind == LH_OP_COPY_D2H) {
		bool up = op->kind == LH_OP_COPY_H2D;
		a = sg4::Comm::sendto_init(up ? dag.cpu : dag.gpu, up ? dag.gpu : dag.cpu)
			    ->set_payload_size(op->size)
			    ->set_name(op->name);
	} else if (lh_op_kind_is_collective((LhOpKind)op->kind)) {
		a = sg4::Comm::sendto_init(dag.gpu, dag.peer)
			    ->set_payload_size((uint64_t)(ns * 1e-9 * dag.hw->link_gbs * 1e9 + 0.5))
			    ->set_name(op->name);
	} else {
		a = sg4::Exec::init()->set_flops_amount(ns)->set_host(dag.gpu)->set_name(op->name);
	}
	a->set_data(&dag.op_of[i]);
	dag.act[i] = a;
	dag.n_act++;
	guint32 nd;
	const guint32 *deps = lh_graph_deps(dag.g, i, &nd);
	for (guint32 d = 0; d <= nd; d++) {
		guint32 dep = d < nd ? deps[d] : dag.chain_prev[i];
		if (dep == LH_NO_OP || lh_graph_op(dag.g, dep)->kind == LH_OP_INPUT)
			continue;
		/* Up front every dep is created, just in time every dep has started; one that has
		 * finished already needs no edge. */
		const sg4::ActivityPtr &from = dag.act[dep];
		if (from && from->get_state() != sg4::Activity::State::FINISHED) {
			depend(from, a);
			dag.n_edges++;
		}
	}
	if (start && a->dependencies_solved()) {
		a->start();
		started(*a);
	}
}

/* Just in time: when an activity starts, each successor whose deps have now all started is
 * created, so that SimGrid holds only the activities running or next in line. */
static void started(sg4::Activity const &a)
{
	guint32 i = *a.get_data<guint32>();
	guint32 ns;
	const guint32 *succs = lh_graph_succs(dag.g, i, &ns);
	for (guint32 s = 0; s <= ns; s++) {
		guint32 succ = s < ns ? succs[s] : dag.chain_next[i];
		if (succ != LH_NO_OP && --dag.pending[succ] == 0)
			create(succ, true);
	}
}

int main(int argc, char **argv)
{
	bool chain = true, upfront = false;
	for (int k = 2; k < argc; k++) {
		if (strcmp(argv[k], "--dag") == 0)
			chain = false;
		else if (strcmp(argv[k], "--upfront") == 0)
			upfront = true;
		else
			argc = 0;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: simgrid-peer GRAPH [--dag] [--upfront]\n");
		return 2;
	}
	const char *path = argv[1];

	/* SimGrid's own options; its log goes to stderr, only warnings and up. */
	int sg_argc = 4;
	char a0[] = "simgrid-peer", a1[] = "--cfg=network/model:CM02",
	     a2[] = "--cfg=network/crosstraffic:0", a3[] = "--log=root.thres:warning";
	char *sg_argv[] = {a0, a1, a2, a3, nullptr};
	sg4::Engine e(&sg_argc, sg_argv);

	lh_models_init();
	GError *err = nullptr;
	LhHw *hw = lh_hw_lookup("h100-sxm", &err);
	if (!hw) {
		fprintf(stderr, "simgrid-peer: %s\n", err->message);
		return 1;
	}

	double t0 = now();
	LhGraph *g = lh_graph_load(path, &err);
	if (!g) {
		fprintf(stderr, "simgrid-peer: %s\n", err->message);
		return 1;
	}
	double t1 = now();
	double rss_read = rss_mib();

	/* The platform: units are SimGrid's, flop/s, bytes/s and seconds. */
	auto *zone = sg4::create_full_zone("lhsim");
	sg4::Host *gpu = zone->create_host("gpu", 1e9)->seal();
	sg4::Host *cpu = zone->create_host("cpu", 1e9)->seal();
	sg4::Host *peer = zone->create_host("peer", 1e9)->seal();
	sg4::Link *h2d = zone->create_link("pcie-h2d", hw->pcie_gbs * 1e9)
				 ->set_latency(hw->copy_latency_ns * 1e-9)
				 ->seal();
	sg4::Link *d2h = zone->create_link("pcie-d2h", hw->pcie_gbs * 1e9)
				 ->set_latency(hw->copy_latency_ns * 1e-9)
				 ->seal();
	sg4::Link *nvlink = zone->create_link("nvlink", hw->link_gbs * 1e9)->set_latency(0)->seal();
	zone->add_route(cpu->get_netpoint(), gpu->get_netpoint(), nullptr, nullptr,
			{sg4::LinkInRoute(h2d)}, false);
	zone->add_route(gpu->get_netpoint(), cpu->get_netpoint(), nullptr, nullptr,
			{sg4::LinkInRoute(d2h)}, false);
	zone->add_route(gpu->get_netpoint(), peer->get_netpoint(), nullptr, nullptr,
			{sg4::LinkInRoute(nvlink)}, true);
	zone->seal();

	guint32 n = lh_graph_n_ops(g);
	const guint32 *topo = lh_graph_topo(g);
	dag.g = g;
	dag.hw = hw;
	dag.cpu = cpu;
	dag.gpu = gpu;
	dag.peer = peer;
	dag.act.resize(n);
	dag.chain_prev.assign(n, LH_NO_OP);
	dag.chain_next.assign(n, LH_NO_OP);
	dag.pending.assign(n, 0);
	dag.op_of.resize(n);
	for (guint32 i = 0; i < n; i++)
		dag.op_of[i] = i;
	guint32 prev = LH_NO_OP, n_inputs = 0;
	for (guint32 k = 0; k < n; k++) {
		guint32 i = topo[k];
		if (lh_graph_op(g, i)->kind == LH_OP_INPUT) {
			n_inputs++;
			continue;
		}
		guint32 nd;
		const guint32 *deps = lh_graph_deps(g, i, &nd);
		bool chained = !chain || prev == LH_NO_OP;
		for (guint32 d = 0; d < nd; d++) {
			if (lh_graph_op(g, deps[d])->kind == LH_OP_INPUT)
				continue;
			dag.pending[i]++;
			chained = chained || deps[d] == prev;
		}
		/* s4u refuses a dependency given twice, so the chain edge only where it is new. */
		if (!chained) {
			dag.chain_prev[i] = prev;
			dag.chain_next[prev] = i;
			dag.pending[i]++;
		}
		prev = i;
	}
	if (upfront) {
		for (guint32 k = 0; k < n; k++)
			if (lh_graph_op(g, topo[k])->kind != LH_OP_INPUT)
				create(topo[k], false);
		for (guint32 k = 0; k < n; k++)
			if (dag.act[topo[k]] && dag.act[topo[k]]->dependencies_solved())
				dag.act[topo[k]]->start();
	} else {
		/* SimGrid 3.32 declares Comm::on_start but does not export it, so starts are found
		 * where they happen: in create(), and when an activity completes, its successors
		 * that wait for it alone start (Activity::complete runs the completion callbacks
		 * first, then releases the successors). */
		sg4::Activity::on_completion_cb([](sg4::Activity const &a) {
			for (const auto &b : a.get_successors())
				if (b->get_dependencies().size() == 1)
					started(*b);
		});
		/* The roots first, then create them: creating one may bring others' counts to 0. */
		std::vector<guint32> roots;
		for (guint32 k = 0; k < n; k++)
			if (lh_graph_op(g, topo[k])->kind != LH_OP_INPUT && dag.pending[topo[k]] == 0)
				roots.push_back(topo[k]);
		for (guint32 r : roots)
			create(r, true);
	}
	sg4::Activity::on_completion_cb([](sg4::Activity const &) { dag.finished++; });
	double t2 = now();

	e.run();
	double t3 = now();
	double makespan = sg4::Engine::get_clock();

	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("%9u  %10zu  %9zu  %7.3f s  %7.3f s  %7.3f s  %7.3f s  %10.3f ms  %7.0f MiB  %7.0f MiB\n",
	       n, dag.n_act, dag.n_edges, t1 - t0, t2 - t1, t3 - t2, t3 - t0, makespan * 1e3,
	       rss_read, ru.ru_maxrss / 1024.0);
	if (dag.finished != dag.n_act || dag.n_act != n - n_inputs) {
		fprintf(stderr, "simgrid-peer: %zu of %zu activities finished, %u ops to run\n",
			dag.finished, dag.n_act, n - n_inputs);
		return 1;
	}
	fflush(stdout);
	/* Tearing down 10^6 activities is not part of the run, and lhsim's child is not timed
	 * freeing its trace either. */
	_exit(0);
}
