/* lhsim — the scheduler interface, its parameters and the registry
 * (docs/design.md#scheduler-interface).
 *
 * A scheduler turns a finished graph into a plan. It is a versioned method table (docs/api.md,
 * "Scheduler plugins"). Plugins export
 *     const LhScheduler *lh_scheduler_plugin(void);
 * and are loaded with lh_scheduler_load_plugin(). The table's `version` says which layout of
 * LhScheduler the plugin was built with: the loader accepts every version from
 * LH_SCHEDULER_ABI_MIN to LH_SCHEDULER_ABI and reads only the slots that version has; a slot
 * added later is absent (NULL) for the plugin. New slots go at the end and bump
 * LH_SCHEDULER_ABI. What a plugin reads of the graph and the hardware goes through functions
 * (sim/op.h, lh_hw_get); LhOp, LhHw and LhStream only grow at their ends, so that a plugin of an
 * older version that reads their first fields directly keeps working.
 */
#pragma once

#include <stdio.h>
#include <glib.h>
#include "sim/graph.h"
#include "sim/op.h"
#include "sim/hw.h"
#include "sim/plan.h"

G_BEGIN_DECLS

/* The interface versions:
 * 1: the first table (version .. plan).
 * 2: same table; LhOp and LhHw grew fields in their middle (dtype, GEMM shape, transpose,
 *    alias, member sets; per-dtype peaks, the GEMM model, the cluster), so a plugin built
 *    against 1 reads them at the wrong offsets: 1 is refused, and 2 is the oldest accepted.
 * 3: the table gains `supports`; plugins read ops and hardware through accessors; LhPlan is
 *    opaque (its ABI-2 fields stay where they were). */
#define LH_SCHEDULER_ABI 3u
#define LH_SCHEDULER_ABI_MIN 2u

#define LH_SCHED_ERROR (lh_sched_error_quark())
GQuark lh_sched_error_quark(void);

typedef enum {
	LH_SCHED_ERROR_UNKNOWN,     /* unknown scheduler name */
	LH_SCHED_ERROR_PARAM,       /* unknown parameter, bad value, out of range */
	LH_SCHED_ERROR_PLUGIN,      /* a plugin failed to load or has the wrong ABI */
	LH_SCHED_ERROR_FAILED,      /* the scheduler could not make a plan */
	LH_SCHED_ERROR_UNSUPPORTED, /* the scheduler's `supports` turned the graph down */
} LhSchedError;

typedef enum {
	LH_PARAM_INT,
	LH_PARAM_DOUBLE,
	LH_PARAM_BOOL,
	LH_PARAM_CHOICE, /* one of `choices`, a '|'-separated list */
} LhParamType;

typedef struct {
	const char *name; /* NULL ends the table */
	LhParamType type;
	const char *deflt;   /* default as text; NULL means "no default" (getter's fallback) */
	double min, max;     /* INT and DOUBLE: inclusive range */
	const char *choices; /* CHOICE: "min-peak-memory|max-concurrency|debug" */
	const char *help;
} LhParamSpec;

/* Parameter values, checked against a spec. Holds the explain sink too: schedulers log
 * each decision with lh_params_explain(), which costs nothing when explaining is off. */
typedef struct _LhParams LhParams;

/* @kv: NULL-terminated "name=value" strings (may be NULL). Unknown names, unparsable values and
 * values out of range are errors listing the valid choices. Caller frees. */
LhParams *lh_params_new(const LhParamSpec *spec, const char *const *kv, GError **error);
void lh_params_free(LhParams *p); /* NULL is fine */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(LhParams, lh_params_free)

/* Getters return the value set, else the spec's default. Asking for a name that is not in the
 * spec is a caller bug. lh_params_is_set tells whether the user gave a value. */
gint64 lh_params_get_int(const LhParams *p, const char *name);
double lh_params_get_double(const LhParams *p, const char *name);
gboolean lh_params_get_bool(const LhParams *p, const char *name);
const char *lh_params_get_choice(const LhParams *p, const char *name);
gboolean lh_params_is_set(const LhParams *p, const char *name);
/* "a=1 b=2": the values the user set, in spec order; caller frees. */
char *lh_params_describe(const LhParams *p);

/* Explaining. @sink NULL turns it off (default). */
void lh_params_set_explain(LhParams *p, FILE *sink);
gboolean lh_params_explaining(const LhParams *p);
void lh_params_explain(const LhParams *p, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

typedef struct {
	guint32 version;     /* LH_SCHEDULER_ABI when built; the loader reads the rest by it */
	const char *name;    /* used with --sched */
	const char *summary; /* one line for `lhsim list` */
	const LhParamSpec *params; /* NULL-terminated by name; may be NULL (no parameters) */
	/* Returns a plan valid for @g, or NULL with @error set. Caller frees the plan. Called from
	 * any thread, possibly from several at once (sweeps): keep no unlocked global state. */
	LhPlan *(*plan)(const LhGraph *g, const LhHw *hw, const LhParams *p, GError **error);
	/* ---- ABI 3 ---- */
	/* Optional (NULL: every finished graph). Whether the scheduler can plan @g on @hw at all,
	 * asked before parameters are parsed; FALSE with @error set says why (a graph without
	 * what the scheduler needs, such as XLA's schedule). lh_scheduler_run() asks it first. */
	gboolean (*supports)(const LhGraph *g, const LhHw *hw, GError **error);
} LhScheduler;

typedef const LhScheduler *(*LhSchedulerPluginFunc)(void);

const LhScheduler *lh_scheduler_find(const char *name); /* NULL when unknown */
/* Like find, with an error listing the known names. */
const LhScheduler *lh_scheduler_lookup(const char *name, GError **error);
/* Built-ins then plugins, in registration order; NULL-terminated; caller frees array only. */
const LhScheduler **lh_scheduler_list(void);
/* Loads a shared object, checks its interface version (LH_SCHEDULER_ABI_MIN ..
 * LH_SCHEDULER_ABI) and its parameter table (names, types, ranges, that each default parses)
 * and registers its scheduler. Loading the same file again returns the scheduler already
 * loaded; another scheduler of the same name is an error. Returns the registry's copy of the
 * plugin's table, in this version's layout (slots the plugin's version lacks are NULL), which
 * lives as long as the process. */
const LhScheduler *lh_scheduler_load_plugin(const char *path, GError **error);
/* Asks @s's `supports` slot; TRUE when the scheduler has none (a plugin of ABI 2, or a
 * built-in that plans every graph). FALSE with @error (LH_SCHED_ERROR_UNSUPPORTED, or the
 * scheduler's own) otherwise. */
gboolean lh_scheduler_supports(const LhScheduler *s, const LhGraph *g, const LhHw *hw,
                               GError **error);
/* The file a plugin scheduler was loaded from (as given to lh_scheduler_load_plugin), or NULL
 * for a built-in. */
const char *lh_scheduler_plugin_path(const LhScheduler *s);

/* The whole pipeline: parse @kv against the scheduler's spec, plan, stamp the plan's origin.
 * @explain may be NULL. */
LhPlan *lh_scheduler_run(const LhScheduler *s, const LhGraph *g, const LhHw *hw,
                         const char *const *kv, FILE *explain, GError **error);

/* IREE's two partitioning steps, exported so that a plugin can replace one and reuse the other
 * (docs/schedulers.md#iree-steps). The driver lh_iree_partition() calls the region step once,
 * then the wave step on each region, and emits the plan: one `host` submit per region, regions
 * ordered by timepoints on the regions they depend on (not by host syncs), waves separated by
 * full barriers on lanes. Additive: the scheduler ABI is unchanged. */
typedef struct {
	const LhGraph *g;
	const LhHw *hw;
	const LhParams *p;        /* the steps read their parameters from it (see each step) */
	const double *cost;       /* standalone ns of each op (lh_op_standalone_ns) */
	const double *blevel;     /* longest chain of costs from each op to an exit, own included */
	const guint32 *region_of; /* region of each op (G_MAXUINT32: input, or not yet known);
	                             filled by the driver after the region step */
	double memory_budget;     /* device bytes the waves may keep live; 0 = no bound */
	guint32 lanes;            /* most lanes a wave runs on */
	GArray *tracks;           /* of guint32: a region step may append one track (a group of
	                             lanes regions run on, in order) per region; when it leaves
	                             it empty, the driver picks them */
} LhIreeCtx;

typedef struct {
	const char *name;
	/* Fills @regions (GPtrArray of GArray of guint32 op indices, each in a topological order)
	 * so that every non-input op is in exactly one region and every region comes after the
	 * regions holding its deps. FALSE with @error set when it cannot. */
	gboolean (*regions)(const LhIreeCtx *c, GPtrArray *regions, GError **error);
} LhIreeRegionStep;

typedef struct {
	const char *name;
	/* Fills @waves (GPtrArray of GArray of guint32) with the ops of @region, each op in a
	 * later wave than every dep it has in the region. */
	gboolean (*waves)(const LhIreeCtx *c, const GArray *region, guint32 region_index,
	                  GPtrArray *waves, GError **error);
} LhIreeWaveStep;

/* Reference steps (schedulers/iree.c; they read "favor") and cost-aware ones
 * (schedulers/iree-cost.c; they read nothing from @p). */
extern const LhIreeRegionStep lh_iree_regions_reference;
extern const LhIreeRegionStep lh_iree_regions_cost; /* "split" */
extern const LhIreeRegionStep lh_iree_regions_list;
extern const LhIreeWaveStep lh_iree_waves_reference;
extern const LhIreeWaveStep lh_iree_waves_cost;

/* The driver: fills an LhIreeCtx (cost, b-level, lanes = @lanes, memory_budget = @budget
 * bytes), runs the steps, checks what they return (an op missing or twice, a dep in a later
 * region or wave: LH_SCHED_ERROR_FAILED naming the step) and emits the plan. @submit_ns is the
 * host cost of one region's submission. */
LhPlan *lh_iree_partition(const LhGraph *g, const LhHw *hw, const LhParams *p,
                          const LhIreeRegionStep *regions, const LhIreeWaveStep *waves,
                          guint32 lanes, double budget, double submit_ns, GError **error);

/* Built-ins, defined one per file. */
extern const LhScheduler lh_sched_serial;
extern const LhScheduler lh_sched_lhs;
extern const LhScheduler lh_sched_iree;
extern const LhScheduler lh_sched_heft;
extern const LhScheduler lh_sched_cpath;
extern const LhScheduler lh_sched_xla;
extern const LhScheduler lh_sched_iree_cost;
extern const LhScheduler lh_sched_search;

G_END_DECLS
