/* lhsim — replay backends (docs/design.md#backends).
 *
 * A backend runs a stream program (LhPlan) for real and returns a *measured* LhTrace, so that
 * every prediction of the engine can be checked against a measurement of the same plan. The
 * built-ins live in a static table found by name (lh_backend_find): `cpu` replays the plan
 * with threads and timed sleeps on any machine; `cuda` replays it with CUDA streams, events
 * and synthetic kernels on a GPU (present only when lhsim was built with CUDA; otherwise the
 * entry is there and available() says why it cannot run).
 *
 * Measured traces use the same clock as predicted ones: integer nanoseconds from the moment
 * the host starts issuing. The cpu backend divides its wall-clock times by the time scale, so
 * its traces are directly comparable with the prediction.
 */
#pragma once

#include <glib.h>
#include "sim/graph.h"
#include "sim/hw.h"
#include "sim/plan.h"
#include "sim/trace.h"

G_BEGIN_DECLS

#define LH_BACKEND_ABI 1u

#define LH_BACKEND_ERROR (lh_backend_error_quark())
GQuark lh_backend_error_quark(void);

typedef enum {
	LH_BACKEND_ERROR_UNKNOWN,     /* no backend of that name */
	LH_BACKEND_ERROR_UNAVAILABLE, /* the backend cannot run here (no device, not built) */
	LH_BACKEND_ERROR_PLAN,   /* the plan cannot be replayed (invalid, wait before signal) */
	LH_BACKEND_ERROR_OPTION, /* a replay option is out of range */
	LH_BACKEND_ERROR_FAILED, /* the replay failed while running (names the op) */
} LhBackendError;

/* How to replay. Initialize with lh_replay_options_init(), then change fields. */
typedef struct {
	/* cpu: wall-clock ns per predicted ns (1 = real time). 0 means "choose": the smallest
	 * scale that makes the median op sleep at least 5 ms, capped so that the whole replay
	 * takes at most about 20 s (lh_replay_time_scale tells which scale that is). */
	double time_scale;
	guint32 warmup;  /* untimed runs before measuring (cuda: JIT, clocks, caches); default 2 */
	guint32 repeats; /* timed runs; each per-op time is the median over them; default 5 */
	int device;      /* cuda: device ordinal; default 0 */
	/* The engine's trace of this very plan (lh_simulate). Required by the cpu backend (its
	 * sleeps last the predicted durations) and by the cuda backend (emulated collectives
	 * last their predicted durations). Borrowed. */
	const LhTrace *predicted;
} LhReplayOptions;

void lh_replay_options_init(LhReplayOptions *o);

typedef struct {
	guint32 version;  /* LH_BACKEND_ABI; new slots go at the end */
	const char *name; /* "cpu", "cuda" */
	/* TRUE when the backend can run here; otherwise FALSE with an error
	 * (LH_BACKEND_ERROR_UNAVAILABLE) that gives the reason. */
	gboolean (*available)(GError **error);
	/* Replays @plan (which must pass lh_backend_check_plan against @g) on @hw. Returns a
	 * measured trace (measured = TRUE), caller frees; or NULL with @error set, having freed
	 * everything it allocated. */
	LhTrace *(*replay)(const LhGraph *g, const LhPlan *plan, const LhHw *hw,
	                   const LhReplayOptions *opt, GError **error);
	const char *summary; /* one line for help texts */
	/* Optional (NULL: not supported). Measures the device and returns a hardware model,
	 * starting from @base for what one device cannot measure (the collective link). For
	 * every key it sets, @notes (string -> string, owned by the caller, which gives
	 * g_free destructors) receives how the value was measured. */
	LhHw *(*calibrate)(const LhHw *base, const LhReplayOptions *opt, GHashTable *notes,
	                   GError **error);
} LhBackend;

/* Registry: the built-ins, found by name. NULL when unknown. */
const LhBackend *lh_backend_find(const char *name);
/* Like find, with an error listing the known names. */
const LhBackend *lh_backend_lookup(const char *name, GError **error);
/* NULL-terminated, static. */
const LhBackend *const *lh_backend_list(void);

extern const LhBackend lh_backend_cpu;
extern const LhBackend lh_backend_cuda;

/* What every backend checks before it replays: lh_plan_validate (ops, deps, events, and no
 * deadlock), and that every event is signaled before any wait on it in command order. The
 * second rule comes from CUDA: cudaStreamWaitEvent on an event not yet recorded waits for
 * nothing, so such a plan cannot be replayed faithfully. Validation errors keep their
 * LH_PLAN_ERROR; the order rule fails with LH_BACKEND_ERROR_PLAN; both name the command, the
 * stream and the event. */
gboolean lh_backend_check_plan(const LhGraph *g, const LhPlan *plan, GError **error);

/* The time scale the cpu backend uses for @opt (resolves time_scale 0 from @predicted). */
double lh_replay_time_scale(const LhReplayOptions *opt, const LhGraph *g, const LhTrace *predicted);

/* Rebuilds @t's memory curve and peaks from its op start and end times with the engine's
 * rule (docs/engine.md#memory): inputs live from 0, an output is allocated at its op's start and
 * freed when its last consumer ends; an op with an alias allocates nothing and keeps the aliased
 * buffer until its own consumers end. Backends call it on the traces they measure. */
void lh_trace_rebuild_memory(LhTrace *t, const LhGraph *g);

/* ---- comparing a prediction with a measurement ---- */

/* Median, 90th percentile and maximum of a set of errors (fractions; 0.05 = 5 %). */
typedef struct {
	guint32 n;
	double median, p90, max;
} LhErrorSummary;

/* Summarizes |v[i]| for i < n (nearest-rank percentiles: the value at rank ceil(q * n)).
 * n = 0 gives all zeros. */
void lh_error_summarize(const double *v, guint32 n, LhErrorSummary *out);

typedef struct {
	gint64 makespan_pred, makespan_meas; /* latest op end, ns */
	double makespan_err;                 /* (meas - pred) / pred, signed */
	guint32 n_ops;                       /* ops compared: every op that ran in both */
	/* Per op, indexed like the graph; NAN where the op did not run (inputs):
	 * dur_err = (measured duration - predicted) / predicted duration, signed;
	 * end_err = (measured end - predicted end) / predicted makespan, signed. The first says
	 * whether each op took as long as predicted, the second whether it finished when
	 * predicted, on a scale where short ops do not blow up. */
	double *dur_err;
	double *end_err;
	LhErrorSummary dur; /* over |dur_err| of ops with a predicted duration
	                       of at least min_dur_ns (shorter ones are noise) */
	LhErrorSummary end; /* over |end_err| */
} LhReplayStats;

/* Compares @meas with @pred op by op. Ops whose predicted duration is below @min_dur_ns are
 * left out of the duration summary (still in dur_err). Both traces must describe @g. */
gboolean lh_replay_compare(const LhGraph *g, const LhTrace *pred, const LhTrace *meas,
                           double min_dur_ns, LhReplayStats *out, GError **error);
void lh_replay_stats_clear(LhReplayStats *s); /* frees the arrays */

/* Whether two makespan lists rank the same way: for every pair i, j whose predicted makespans
 * differ by more than @tie (a fraction of the larger), the measured ones are ordered the
 * same way. Pairs within @tie count as ties and are not checked. When FALSE, *bad_i and
 * *bad_j (may be NULL) get the first pair that flips. */
gboolean lh_ranking_same(const double *pred, const double *meas, guint32 n, double tie,
                         guint32 *bad_i, guint32 *bad_j);

/* ---- calibration output ---- */

/* The .ini text of @hw (the format `--hw FILE.ini` reads) with each key preceded by a
 * comment taken from @notes (key -> how it was measured) when there is one, and @header as
 * the file's leading comment (may be NULL). Caller frees. */
char *lh_calibration_to_ini(const LhHw *hw, GHashTable *notes, const char *header);

G_END_DECLS
