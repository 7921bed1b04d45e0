/* lhsim — the command: `lhsim SUBCOMMAND ...`. One file per subcommand. */
#include "cli/common.h"

#include <locale.h>
#include <stdio.h>
#include <string.h>

typedef struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} Sub;

static const Sub subs[] = {
	{"run", cli_run, "schedule a graph and simulate it: table, JSON, trace, picture"},
	{"compare", cli_compare, "compare schedulers on one graph: makespan, bound, transfer, memory"},
	{"sweep", cli_sweep, "sweep one scheduler parameter: table, CSV and plot, in parallel"},
	{"list", cli_list, "list schedulers with their parameters, hardware and workloads"},
	{"import", cli_import, "import an XLA HLO module or an STG task graph as graph JSON"},
	{"gen", cli_gen, "generate a built-in workload (transformer, moe-offload, ...) as JSON"},
	{"replay", cli_replay, "replay plans on a backend (cpu, cuda) and compare with the prediction"},
	{"calibrate", cli_calibrate, "measure a GPU and write its hardware model (.ini) for --hw"},
	{"validate", cli_validate, "compare a prediction with a measured trace (Kineto, XLA, Nsight)"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: lhsim SUBCOMMAND [options]\n\n"
		   "lhsim simulates latency-hiding schedules of ML compiler graphs on GPUs.\n\n"
		   "subcommands:\n");
	for (gsize i = 0; i < G_N_ELEMENTS(subs); i++)
		fprintf(f, "  %-10s %s\n", subs[i].name, subs[i].summary);
	fprintf(f, "\n'lhsim SUBCOMMAND --help' describes each. With no GRAPH, commands use the\n"
		   "built-in default workload (moe-offload).\n");
}

int main(int argc, char **argv)
{
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
