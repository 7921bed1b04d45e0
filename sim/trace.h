/* lhsim — what a simulation or a replay produces (docs/design.md#traces), and lower bounds
 * (#lower-bounds).
 *
 * An LhTrace is a plain record: per-op timings, per-command host issue times and the memory
 * curve. The simulator and the replay backends both fill one, so that the same writers,
 * metrics and pictures serve prediction and measurement. All times are integer nanoseconds
 * from the start of the run (t = 0 when the host issues its first command).
 */
#pragma once

#include <stdio.h>
#include <glib.h>
#include "sim/graph.h"
#include "sim/hw.h"
#include "sim/plan.h"

G_BEGIN_DECLS

typedef enum {
	LH_ENGINE_NONE, /* inputs: never run */
	LH_ENGINE_SM,   /* kernels, copy-d2d */
	LH_ENGINE_H2D,  /* copy engines, host to device */
	LH_ENGINE_D2H,  /* copy engines, device to host */
	LH_ENGINE_LINK, /* collectives, send/recv (they also hold an SM share) */
	LH_ENGINE_NET,  /* collectives and send/recv that leave the node (docs/engine.md) */
	LH_ENGINE_N
} LhEngine;

typedef struct {
	gint64 issue;        /* host finished issuing its run command */
	gint64 start;        /* entered its engine (output allocated); -1 if it never ran */
	gint64 end;          /* finished; -1 if it never ran */
	gint32 stream;       /* stream it ran on, -1 for inputs */
	guint8 engine;       /* LhEngine */
	guint8 engine_index; /* which copy engine of its direction; 0 otherwise */
	guint8 _pad[2];
} LhOpTiming;

typedef struct {
	gint64 t;
	gint64 device_bytes;
	gint64 host_bytes;
} LhMemPoint;

typedef struct _LhTrace {
	guint32 n_ops;
	LhOpTiming *ops; /* n_ops, indexed like the graph */
	guint32 n_cmds;
	gint64 *cmd_issue;  /* n_cmds: when the host finished issuing each command */
	GArray *mem;        /* of LhMemPoint, in time order, one point per change */
	gint64 host_end;    /* when the host issued its last command */
	gint64 peak_device; /* bytes */
	gint64 peak_device_t;
	gint64 peak_host;  /* bytes */
	gboolean measured; /* TRUE when it comes from a replay backend */
	char *source;      /* "simulated", "cpu", "cuda (emulated collectives)" */
	/* Per device, for a graph placed on devices (sim/graph.h); NULL arrays and n_devices 1
	 * otherwise: read them with lh_trace_dev_peak() and friends. peak_device above is then the
	 * largest of dev_peak (peak_device_t the time of the lowest device with it), host_end the
	 * latest of dev_host_end, mem the sum over devices at the end of each instant, and
	 * peak_host the largest summed host bytes (docs/engine.md, "Several devices").
	 * Appended fields. */
	guint32 n_devices;    /* lh_graph_devices() of a placed graph, else 1 */
	gint64 *dev_peak;     /* n_devices: peak device memory of each device, bytes */
	gint64 *dev_peak_t;   /* n_devices: when each peak was first reached, ns */
	gint64 *dev_host_end; /* n_devices: when each device's host issued its last command, ns */
} LhTrace;

LhTrace *lh_trace_new(guint32 n_ops, guint32 n_cmds); /* one device */
/* Sets the device count (>= 1) and allocates zeroed per-device arrays. */
void lh_trace_set_devices(LhTrace *t, guint32 n_devices);
/* Device @d's peak memory (bytes), its time (ns) and its host's last issue (ns); for a trace
 * without per-device arrays, the trace's own figures. */
gint64 lh_trace_dev_peak(const LhTrace *t, guint32 d);
gint64 lh_trace_dev_peak_t(const LhTrace *t, guint32 d);
gint64 lh_trace_dev_host_end(const LhTrace *t, guint32 d);
void lh_trace_free(LhTrace *t); /* NULL is fine */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(LhTrace, lh_trace_free)

/* Lower bounds (docs/design.md#lower-bounds), in ns. Each includes step_overhead_ns, paid
 * before the first command. */
typedef struct {
	double critical_path; /* longest chain of standalone durations */
	double sm_work;       /* sum of standalone T * sm share */
	double h2d_work;      /* copy-engine work host to device, divided by engines */
	double d2h_work;
	double link_work;    /* collectives' wire work on the link (wire / link rate * link use; a
	                        duration_ns whole); network work is in no bound yet */
	double host_issue;   /* the plan's issue costs (runs, signals and waits, host commands);
	                        without a plan, one launch per non-input op */
	double bound;        /* the maximum of the above and of the class bounds below */
	const char *binding; /* name of the bound that binds */
	/* Per engine class, what cannot overlap: for the ops that use it and start no earlier
	 * than some h, h + their work on it + the shortest chain after any of them (and the
	 * mirror image by chains after), the best h; counted in bound and binding. Added at the
	 * end so that the fields above keep their places. */
	double class_sm, class_hbm, class_h2d, class_d2h, class_link;
} LhBounds;

/* @plan may be NULL: host_issue then counts one launch per non-input op. For a graph placed on
 * devices, each bound is the largest of the devices' (each device's own ops on its own
 * hardware: lh_bounds_devices, @device_hw NULL = @hw for all). */
void lh_bounds(const LhGraph *g, const LhHw *hw, const LhPlan *plan, LhBounds *out);
void lh_bounds_devices(const LhGraph *g, const LhHw *hw, const LhHw *const *device_hw,
                       const LhPlan *plan, LhBounds *out);

/* One device's share of a run (a graph placed on devices; docs/cli.md, "Several devices"). */
typedef struct {
	gint64 end;              /* its last op's end, ns */
	gint64 compute_busy;     /* time with at least one of its kernels on its SMs, ns */
	double bubble;           /* 1 - compute_busy / makespan: the share of the step its
	                            compute is idle (the pipeline bubble, for a pipeline) */
	gint64 transfer_time;    /* time with one of its copies or collectives running, ns */
	gint64 exposed_transfer; /* ... while none of its kernels runs, ns */
	gint64 peak_device;      /* bytes */
	gint64 peak_device_t;    /* ns */
	gint64 host_end;         /* its host's last issue, ns */
} LhDeviceMetrics;

typedef struct {
	gint64 makespan; /* latest op end, ns */
	gint64 host_end; /* host's last issue, ns */
	LhBounds bounds;
	double ratio;            /* makespan / bounds.bound */
	gint64 kernel_time;      /* time with at least one kernel running, ns */
	gint64 transfer_time;    /* time with a copy or collective running, ns */
	gint64 exposed_transfer; /* copy or collective running while no kernel runs, ns */
	double overlap;          /* 1 - exposed / transfer (1 when no transfer) */
	gint64 peak_device;      /* bytes */
	gint64 peak_device_t;    /* ns */
	gint64 peak_host;        /* bytes */
	gint64 host_bound;       /* time the device was idle while the host was issuing, ns */
	guint32 n_streams;
	gint64 *stream_busy;             /* n_streams: union of op intervals per stream, ns */
	gint64 engine_busy[LH_ENGINE_N]; /* union of op intervals per engine kind, ns */
	guint32 streams_used;            /* streams that ran at least one op */
	/* Appended. A graph placed on devices: placed TRUE, one entry per device in dev; the
	 * fields above are the step as a whole (kernel_time, transfer_time, exposed_transfer
	 * and engine_busy count time when any device is busy, peak_device is the largest
	 * device's). Otherwise placed FALSE, n_devices 1 and dev[0] the one device. */
	gboolean placed;
	guint32 n_devices;
	LhDeviceMetrics *dev; /* n_devices */
	double bubble;        /* the step: 1 - sum of compute_busy / (n_devices * makespan) */
} LhMetrics;

void lh_metrics_compute(const LhTrace *t, const LhGraph *g, const LhHw *hw, const LhPlan *plan,
                        LhMetrics *out);
/* The same with each device's hardware for the bounds (@device_hw NULL = @hw for all). */
void lh_metrics_compute_devices(const LhTrace *t, const LhGraph *g, const LhHw *hw,
                                const LhHw *const *device_hw, const LhPlan *plan, LhMetrics *out);
void lh_metrics_clear(LhMetrics *m); /* frees stream_busy and dev */

/* Writers. The table and JSON are for people and scripts; Chrome trace-event JSON loads in
 * Perfetto and chrome://tracing with one track per stream and one per engine. */
void lh_metrics_print_table(FILE *f, const LhMetrics *m, const LhPlan *plan, const LhHw *hw);
char *lh_metrics_to_json(const LhMetrics *m, const LhPlan *plan, const LhGraph *g, const LhHw *hw);
char *lh_trace_to_chrome_json(const LhTrace *t, const LhGraph *g, const LhPlan *plan);

const char *lh_engine_name(LhEngine e);

/* Human units: "1.234 ms", "12.0 GiB". Return a static-free g_strdup'd string. */
char *lh_format_ns(double ns);
char *lh_format_bytes(double bytes);

G_END_DECLS
