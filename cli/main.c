/* lhsim — the command: `lhsim SUBCOMMAND ...`. One file per subcommand. */
#include "cli/common.h"
#include "cli/sweep.h"

#include <limits.h>
#include <locale.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} Sub;

static const Sub subs[] = {
    {"run", cli_run, "schedule a graph and simulate it: table, JSON, trace, picture"},
    {"compare", cli_compare, "compare schedulers on one graph: makespan, bound, transfer, memory"},
    {"sweep", cli_sweep,
     "sweep a grid of parameters, hardware keys, workloads, seeds: table, CSV, plot"},
    {"sweep-merge", cli_sweep_merge, "merge the shards of a sweep (--shard K/N) into one CSV"},
    {"list", cli_list, "list schedulers with their parameters, hardware and workloads"},
    {"import", cli_import, "import an XLA HLO module or an STG task graph as graph JSON"},
    {"gen", cli_gen, "generate a built-in workload (transformer, moe-offload, ...) as JSON"},
    {"replay", cli_replay, "replay plans on a backend (cpu, cuda) and compare with the prediction"},
    {"calibrate", cli_calibrate, "measure a GPU and write its hardware model (.ini) for --hw"},
    {"export-pgle", cli_export_pgle,
     "write a graph's op costs as an XLA PGLE profile (.pbtxt) for XLA"},
    {"validate", cli_validate, "compare a prediction with a measured trace (Kineto, XLA, Nsight)"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: lhsim SUBCOMMAND [options]\n\n"
	           "lhsim simulates latency-hiding schedules of ML compiler graphs on GPUs.\n\n"
	           "subcommands:\n");
	for (gsize i = 0; i < G_N_ELEMENTS(subs); i++)
		fprintf(f, "  %-12s %s\n", subs[i].name, subs[i].summary);
	fprintf(f,
	        "\n'lhsim SUBCOMMAND --help' describes each. With no GRAPH, commands use the\n"
	        "built-in default workload (moe-offload). '-' is standard input for a GRAPH,\n"
	        "--plan or --hw, and standard output for a file to write.\n\n%s",
	        CLI_EXIT_HELP);
}

/* A signal that ends the process first removes the temporary files of outputs being written
 * (lh_output_open), then ends it the way the signal would have. */
static void on_fatal_signal(int sig)
{
	lh_output_remove_temporaries();
	signal(sig, SIG_DFL);
	raise(sig); /* delivered when the handler returns: the signal is blocked until then */
}

/* SIGBUS while an input is mapped (lh_read_bytes) means, on Linux, that another process
 * truncated that file under lhsim: a file that cannot be read, exit 2, with the temporaries
 * removed. Any other SIGBUS ends the process as it would have. */
static void on_bus_error(int sig)
{
	if (lh_inputs_mapped() > 0) {
		static const char msg[] =
		    "lhsim: an input file (GRAPH or --plan) shrank while it was "
		    "being read: another process truncated it (SIGBUS)\n";
		lh_output_remove_temporaries();
		ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1); /* if it fails, so be it */
		(void)w;
		_exit(2);
	}
	on_fatal_signal(sig);
}

static void catch_fatal_signals(void)
{
	struct sigaction bus = {0};
	bus.sa_handler = on_bus_error;
	sigemptyset(&bus.sa_mask);
	sigaction(SIGBUS, &bus, NULL);

	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ};
	for (gsize i = 0; i < G_N_ELEMENTS(sigs); i++) {
		struct sigaction old, sa = {0};
		/* A signal the caller ignores (nohup, a shell's background job) stays ignored. */
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		sa.sa_handler = on_fatal_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(sigs[i], &sa, NULL);
	}
}

/* Memory that one phase of a run frees (the reader's, a scheduler's, the engine's arrays) is
 * kept for the next phase's arrays rather than given back to the kernel and taken again as
 * fresh pages, each of which faults on its first write: blocks under 32 MiB come from malloc's
 * heap rather than a mapping of their own, and the heap is not trimmed (glibc's mallopt(3):
 * M_MMAP_THRESHOLD, whose maximum on 64-bit is 32 MiB, and M_TRIM_THRESHOLD). `lhsim run` on
 * bench-run's graph of 10^6 ops: 106.9 k -> 93.5 k page faults with --sched serial, 148.5 k ->
 * 120.8 k with lhs, 144.3 k -> 114.4 k with heft; the peak RSS moves by less than 1 %
 * (bench/README.md). */
static void keep_freed_memory(void)
{
#if defined(__GLIBC__)
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
}

int main(int argc, char **argv)
{
	keep_freed_memory();
	catch_fatal_signals();
	setlocale(LC_ALL, "");
	/* Numbers in files must not depend on the user's locale. */
	setlocale(LC_NUMERIC, "C");
	lh_models_init();
	if (argc < 2) {
		usage(stderr);
		return LH_EXIT_BAD_INPUT;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("lhsim " LH_VERSION "\n");
		return 0;
	}
	for (gsize i = 0; i < G_N_ELEMENTS(subs); i++) {
		if (strcmp(argv[1], subs[i].name) != 0)
			continue;
		g_autofree char *prog = g_strdup_printf("lhsim %s", subs[i].name);
		argv[1] = prog;
		return subs[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "lhsim: unknown subcommand '%s'\n\n", argv[1]);
	usage(stderr);
	return LH_EXIT_BAD_INPUT;
}
