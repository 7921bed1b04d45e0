/* lhsim — measured timelines against a graph (docs/measured.md): matching events to ops,
 * splitting steps, the per-op median and spread, the comparison with a prediction and the
 * attribution of the gap, and least-squares calibration of the hardware keys.
 */
#pragma once

#include <glib.h>
#include "models/measured.h"
#include "sim/graph.h"
#include "sim/hw.h"
#include "sim/plan.h"
#include "sim/trace.h"

G_BEGIN_DECLS

/* How an event was matched to an op (docs/measured.md, "Matching"). */
typedef enum {
	LH_MATCH_NONE,
	LH_MATCH_NAME,       /* the event's name is the op's name */
	LH_MATCH_ANNOTATION, /* the innermost enclosing range (NVTX, annotation, hlo_op) is */
	LH_MATCH_TOKEN,      /* the op's name is a token of the event's name or annotation */
	LH_MATCH_ORDER,      /* by position on its stream among the unmatched */
	LH_MATCH_N
} LhMatchHow;

const char *lh_match_how_name(LhMatchHow h);

typedef struct {
	const char *step_pattern; /* glob naming step ranges; NULL: ProfilerStep#N or xprof steps */
	gint32 device;            /* device to read; -1: the lowest with events */
} LhMatchOptions;

typedef struct {
	guint32 n_ops, n_steps;
	gint32 device;
	char *step_rule; /* how steps were split, for people */
	/* Per step: a trace indexed like the graph, on the prediction's clock (the step's first
	 * matched start placed at the prediction's first start); ops unseen in a step never ran. */
	LhTrace **steps;
	LhTrace *median; /* per op: median start offset, duration and issue over its steps */
	double *dur_med, *dur_lo, *dur_hi; /* per op, ns: median, min and max; NAN when unseen */
	guint32 *n_seen;                   /* per op: steps it was matched in */
	guint8 *how;                       /* per op: LhMatchHow of its first match */
	gint64 *span;     /* per step: last matched end - first matched start, ns */
	guint32 ev_total; /* events on the device that can be ops (memsets are not counted) */
	guint32 ev_matched, ev_other_device, ev_outside, ev_memset;
	guint32 by[LH_MATCH_N]; /* matched events per rule */
	guint32 ops_total;      /* ops that run (not inputs) */
	guint32 ops_matched;
} LhMatch;

/* Matches @m's events to @g's ops. @plan and @pred (the prediction of @plan) give each op's
 * stream and order, which matching by order needs. Fails (LH_MEASURED_ERROR_INVALID) when no
 * event matches any op. */
LhMatch *lh_match(const LhMeasured *m, const LhGraph *g, const LhPlan *plan, const LhTrace *pred,
                  const LhMatchOptions *opt, GError **error);
void lh_match_free(LhMatch *x); /* NULL is fine */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(LhMatch, lh_match_free)

/* The gap between a measured and a predicted step, in parts that add up to it. */
typedef enum {
	LH_GAP_KERNEL_MODEL,   /* kernel time not explained by overlap: the cost model */
	LH_GAP_KERNEL_OVERLAP, /* kernels slower (or faster) while overlapping other work */
	LH_GAP_COLLECTIVE,     /* exposed collective: a collective runs, no kernel */
	LH_GAP_COPY,           /* exposed copy: a copy runs, no kernel or collective */
	LH_GAP_HOST,           /* device idle because the next op was not issued yet */
	LH_GAP_IDLE,           /* idle main stream: device idle with the next op issued */
	LH_GAP_N
} LhGap;

const char *lh_gap_name(LhGap g);

typedef struct {
	double n, median, p90, max; /* over |error| (fractions) */
} LhErrSummary;

typedef struct {
	gint64 step_pred;                   /* predicted device span, ns */
	double step_meas, step_lo, step_hi; /* measured: median, min, max over steps, ns */
	double step_err;                    /* (meas - pred) / pred */
	gboolean step_noise; /* the prediction lies inside [lo, hi] with >= 2 steps */
	double *op_pred;     /* per op: predicted duration, ns (NAN for inputs) */
	double *op_err;      /* per op: (median - pred) / pred; NAN where not compared */
	guint8 *op_noise;    /* per op: inside the band [lo, hi] over >= 2 steps */
	LhErrSummary ops;    /* over compared ops */
	guint32 ops_noise;   /* compared ops inside their band */
	double gap_pred[LH_GAP_N], gap_meas[LH_GAP_N], gap_lo[LH_GAP_N], gap_hi[LH_GAP_N]; /* ns */
	double gap[LH_GAP_N]; /* meas - pred, ns; they add up to the step's difference */
	guint8 gap_noise[LH_GAP_N];
} LhValidation;

void lh_validate_measured(const LhGraph *g, const LhTrace *pred, const LhMatch *x,
                          LhValidation *out);
void lh_validation_clear(LhValidation *v);

/* One fitted hardware key. */
typedef struct {
	const char *key;  /* the .ini key */
	const char *unit; /* "", "ns", "GB/s" */
	double base, value;
	gboolean fitted;  /* FALSE: kept the base value (note says why) */
	guint32 n;        /* observations that determined it */
	double resid_ns;  /* RMS residual of its group's fit, ns */
	double resid_rel; /* ... relative to the group's mean measured time */
	char *note;
} LhFitKey;

/* Fits the keys the measurements determine (docs/measured.md, "Calibration") from the matched
 * ops of every @x[i] (each matched against @g and @plan), starting from @base. Returns the
 * fitted model; @keys receives an LhFitKey per key considered (the caller frees the notes with
 * lh_fit_keys_clear). */
LhHw *lh_calibrate_from(const LhGraph *g, const LhHw *base, const LhPlan *plan, LhMatch *const *x,
                        guint n, GArray *keys, GError **error);
void lh_fit_keys_clear(GArray *keys);

G_END_DECLS
