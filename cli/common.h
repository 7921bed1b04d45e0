/* lhsim command line — shared helpers for the subcommands. */
#pragma once

#include "lhsim.h"

/* Exit statuses (DESIGN 8). */
enum { LH_EXIT_OK = 0, LH_EXIT_FAILED = 1, LH_EXIT_BAD_INPUT = 2 };

/* Prints "lhsim: message" and returns the exit status for @e: 1 when the run itself failed
 * (deadlock, memory with --strict-memory, a replay failure), 2 for bad input. Frees @e. */
int cli_fail(GError *e);
/* For usage errors: prints "lhsim SUB: message" and a hint, returns 2. */
int cli_usage(const char *sub, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

/* NULL or "-" means the built-in default workload. */
LhGraph *cli_load_graph(const char *path, GError **error);
/* NULL means h100-sxm. */
LhHw *cli_load_hw(const char *name, GError **error);
/* Loads every --plugin. */
gboolean cli_load_plugins(char **paths, GError **error);
/* Parses and strips options; on failure prints and returns FALSE with *status set. */
gboolean cli_parse(GOptionContext *ctx, int *argc, char ***argv, int *status);
/* Whether stderr is a terminal (for progress output). */
gboolean cli_stderr_is_tty(void);
/* Progress for long work: on a terminal, and only for graphs of at least 20000 ops, shows
 * "lhsim: WHAT..." on stderr until the next call; NULL clears the line. */
void cli_phase(guint32 n_ops, const char *what);

/* Subcommands: each takes argv with argv[0] = "lhsim SUB". */
int cli_run(int argc, char **argv);
int cli_list(int argc, char **argv);
int cli_sweep(int argc, char **argv);
int cli_compare(int argc, char **argv);
int cli_import(int argc, char **argv);
int cli_gen(int argc, char **argv);
int cli_replay(int argc, char **argv);
int cli_calibrate(int argc, char **argv);
int cli_validate(int argc, char **argv);

/* Measured timelines (cli/validate.c, cli/calibrate-from.c). */
int cli_measured_fail(GError *e); /* 2: an input that cannot be read or parsed */
void cli_measured_phase(guint32 n_events, const char *what);
void cli_measured_reading(const char *path); /* NULL clears the line */
LhPlan *cli_measured_plan(const char *sched, const char *plan_path, char **params,
			  const LhGraph *g, const LhHw *hw, GError **error);
int cli_calibrate_from(char **from, const char *graph, const char *hw_name, const char *sched,
		       char **params, const char *plan_path, const char *step, int device,
		       const char *out_path);
