/* lhsim command line — shared helpers for the subcommands. */
#pragma once

#include "lhsim.h"
#include "schedulers/placed.h"

#include <stdio.h>

/* Exit statuses, the same for every subcommand (and in `lhsim --help`). */
enum { LH_EXIT_OK = 0, LH_EXIT_FAILED = 1, LH_EXIT_BAD_INPUT = 2 };

#define CLI_EXIT_HELP                                                                              \
	"exit status:\n"                                                                           \
	"  0  success\n"                                                                           \
	"  1  a failed run (deadlock, memory with --strict-memory, a scheduler that made no\n"     \
	"     or an invalid plan, a replay that failed, a failed row of compare or sweep) or\n"    \
	"     an I/O failure (an output that cannot be written: no such directory, no\n"           \
	"     permission, a full disk)\n"                                                          \
	"  2  bad input: options, arguments, or a file that cannot be read or parsed\n"

/* Whether @e is a failure of the run (exit 1: deadlock, memory with --strict-memory, a replay
 * failure, a scheduler that could not plan, an output that cannot be written) rather than bad
 * input (exit 2). */
gboolean cli_error_is_failure(const GError *e);
/* Prints "lhsim: message" and returns the exit status for @e (cli_error_is_failure). Frees @e. */
int cli_fail(GError *e);
/* For usage errors: prints "lhsim SUB: message" and a hint, returns 2. */
int cli_usage(const char *sub, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

/* NULL means the built-in default workload; "-" standard input (JSON, or HLO text when it
 * starts with "HloModule"); "" is an error. */
LhGraph *cli_load_graph(const char *path, GError **error);
/* NULL means h100-sxm; "-" reads a description (.ini) from standard input. */
LhHw *cli_load_hw(const char *name, GError **error);
/* The hardware of a run (docs/cli.md, "Several devices"): --hw SPEC, one built-in name or .ini
 * for every device, or a map "0-3=h100-sxm,4-7=a100-sxm" that gives each device of a placed
 * graph its own; and --slow D=F (each value a comma list), a straggler factor F >= 1 on device
 * D's kernels. Resolved against @g's devices (1 for a graph without placement). */
typedef struct {
	LhHw *hw;          /* device 0's: reports, lower bounds, a graph without placement */
	char *label;       /* for reports: the hardware's name, or the map as given */
	guint32 n_devices; /* lh_graph_devices() of a placed graph, else 1 */
	LhHw **device_hw;  /* n_devices, or NULL when one description serves all */
	double *slow;      /* n_devices factors, or NULL when no --slow */
	GPtrArray *owned;  /* of LhHw * */
} CliHw;

/* Whether @spec is a map of devices ("0-3=NAME,..."): it starts with a device number or range
 * and '='. */
gboolean cli_hw_is_map(const char *spec);
/* Bad input is a G_OPTION_ERROR naming the option and the device (exit 2). */
CliHw *cli_hw_new(const char *spec, char **slow, const LhGraph *g, GError **error);
void cli_hw_free(CliHw *h); /* NULL is fine */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(CliHw, cli_hw_free)
/* Sets @o's device_hw and slow from @h (pointers into @h). */
void cli_hw_sim_options(const CliHw *h, LhSimOptions *o);
/* Schedules @g with @s on @h's devices (lh_scheduler_run_placed for a placed graph). */
LhPlan *cli_hw_schedule(const CliHw *h, const LhScheduler *s, const LhGraph *g,
                        const char *const *kv, FILE *explain, GError **error);

/* Whether @data starts like HLO text ("HloModule", after blank lines and // comments). */
gboolean cli_looks_like_hlo(const char *data);
/* A plan file, or "-" for standard input; its origin is set to the file. */
LhPlan *cli_load_plan(const char *path, const LhGraph *g, GError **error);
/* Standard input and output go to one reader and one writer per command: the first claim
 * (by @what, an option name) wins, a second one is an error. Paths other than "-" (or, for
 * output, png:-, svg:- and pdf:-) claim nothing. */
gboolean cli_claim_stdin(const char *what, const char *path, GError **error);
gboolean cli_claim_stdout(const char *what, const char *path, GError **error);
/* Where the report (table) goes: standard output, or standard error once a file output has
 * claimed standard output. */
FILE *cli_report_stream(void);
/* Claims standard output for "-" and writes @text to @path (lh_write_file_atomic). */
gboolean cli_write_output(const char *what, const char *path, const char *text, GError **error);
/* Loads every --plugin. */
gboolean cli_load_plugins(char **paths, GError **error);
/* Parses and strips options; on failure prints and returns FALSE with *status set. */
gboolean cli_parse(GOptionContext *ctx, int *argc, char ***argv, int *status);
/* --profile P (an XLA PGLE profile, docs/pgle.md): sets the measured costs on @g and says on
 * stderr how many ops, and what share of the serial time on @hw, came from it. A NULL @path
 * does nothing. */
gboolean cli_apply_profile(LhGraph *g, const char *path, const LhHw *hw, GError **error);
/* Appends @f to @s as one CSV field, quoted when it needs to be (RFC 4180). */
void cli_csv_field(GString *s, const char *f);
/* Whether stderr is a terminal (for progress output). */
gboolean cli_stderr_is_tty(void);
/* Progress for long work: on a terminal, and only for graphs of at least 20000 ops, shows
 * "lhsim: WHAT..." on stderr until the next call; NULL clears the line. */
void cli_phase(guint32 n_ops, const char *what);

/* Whether scheduler @s has the parameter named by @kv ("name" or "name=value"). */
gboolean cli_has_param(const LhScheduler *s, const char *kv);

/* One entry of --sched: "name" or "name:k=v:k=v". */
typedef struct {
	char *label; /* the entry as given, for tables and files */
	const LhScheduler *s;
	char **own; /* its own "k=v" (after colons), NULL-terminated */
} CliSched;

void cli_sched_free(CliSched *e);
/* "A,B:k=v,..." -> a GPtrArray of CliSched; an unknown scheduler, an empty entry or a k=v
 * without '=' is an error. The same scheduler may appear twice with different values. */
GPtrArray *cli_sched_parse(const char *spec, GError **error);
/* Whether entry @e sets the parameter named by @key ("name" or "name=value") itself. */
gboolean cli_sched_own(const CliSched *e, const char *key);
/* The parameters of one run of @e, NULL-terminated (g_strfreev): each -p value in @params that
 * its scheduler has and that neither its own values nor @last set, then its own values, then
 * @last (may be NULL). Each key appears once. */
char **cli_sched_params(const CliSched *e, char **params, const char *last);

/* A plan that a scheduler made and lh_plan_validate rejected is the scheduler's fault, not the
 * user's: turns such an error in *@error into a failed run (exit 1) naming the scheduler and,
 * for a plugin, its file. Other errors are left as they are. */
void cli_blame_scheduler(const LhScheduler *s, GError **error);

/* Subcommands: each takes argv with argv[0] = "lhsim SUB". */
int cli_run(int argc, char **argv);
int cli_list(int argc, char **argv);
int cli_sweep(int argc, char **argv);
int cli_compare(int argc, char **argv);
int cli_import(int argc, char **argv);
int cli_gen(int argc, char **argv);
int cli_replay(int argc, char **argv);
int cli_calibrate(int argc, char **argv);
int cli_export_pgle(int argc, char **argv);
int cli_validate(int argc, char **argv);

/* Measured timelines (cli/validate.c, cli/calibrate-from.c). */
int cli_measured_fail(GError *e); /* 2: an input that cannot be read or parsed */
void cli_measured_phase(guint32 n_events, const char *what);
void cli_measured_reading(const char *path); /* NULL clears the line */
LhPlan *cli_measured_plan(const char *sched, const char *plan_path, char **params, const LhGraph *g,
                          const LhHw *hw, GError **error);
int cli_calibrate_from(char **from, const char *graph, const char *hw_name, const char *sched,
                       char **params, const char *plan_path, const char *step, int device,
                       const char *out_path);

/* The help of --hw and --slow, the same in every command that takes them (run, compare). */
#define CLI_HW_HELP                                                                                \
	"hardware: a built-in name or an .ini file (default h100-sxm), or per device of a placed " \
	"graph: 0-3=h100-sxm,4-7=a100-sxm"
#define CLI_SLOW_HELP                                                                              \
	"a straggler: device D's kernels take F times as long (F >= 1), repeatable or a comma "    \
	"list"
