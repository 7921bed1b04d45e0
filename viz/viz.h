/* lhsim — pictures of schedules (docs/design.md#viz).
 *
 * Every function draws with cairo + pango into a PNG, SVG or PDF chosen by the extension of
 * @path (".png", ".svg", ".pdf", case-insensitive), or by a prefix that names it outright
 * ("svg:-", "pdf:/dev/stdout", "png:out.img"); "-" alone is standard output as PNG (PNG and PDF
 * are refused on a terminal). Anything else is an error. The picture is written through
 * lh_output_open (sim/util.h): to a temporary file beside a regular @path that is renamed over
 * it only once cairo reports success, so a failed draw or an unwritable path leaves nothing
 * behind; through a symbolic link to the file it names; in place to a device or FIFO. A failed
 * write is an LH_IO_ERROR_WRITE. The inputs are only read; the caller keeps ownership of
 * everything it passes.
 * The pure layout functions behind these pictures are in viz/layout.h.
 */
#pragma once

#include <glib.h>
#include "sim/graph.h"
#include "sim/hw.h"
#include "sim/plan.h"
#include "sim/trace.h"

G_BEGIN_DECLS

#define LH_VIZ_ERROR (lh_viz_error_quark())
GQuark lh_viz_error_quark(void);

typedef enum {
	LH_VIZ_ERROR_FORMAT,  /* the path's extension names no supported format */
	LH_VIZ_ERROR_INVALID, /* inputs that do not fit together (trace vs graph, empty sweep) */
	LH_VIZ_ERROR_DRAW,    /* cairo failed (the message is cairo's status string) */
	LH_VIZ_ERROR_IO,      /* unused: a file that cannot be written is an LH_IO_ERROR_WRITE */
} LhVizError;

/* Checks before any work is done that @path names a supported format and that it can be
 * written (lh_output_check), so that a long run does not end in an unwritable path. The
 * writers below check again when they write. */
gboolean lh_viz_check_path(const char *path, GError **error);

/* A timeline: one lane per stream of @plan and per engine (each copy engine of each direction,
 * the link), bars coloured by op kind with a legend, names on bars where they fit, a time axis
 * with round ticks, the device-memory curve with the capacity of @hw under the lanes, and a
 * title with the workload, hardware, scheduler, makespan and lower bound. @metrics may be NULL
 * (it is then computed). Bars narrower than a pixel are merged, so 10^5 ops stay fast. */
gboolean lh_viz_timeline(const char *path, const LhGraph *g, const LhHw *hw, const LhPlan *plan,
                         const LhTrace *trace, const LhMetrics *metrics, GError **error);

/* The size and time range of a timeline (lh_viz_timeline_opt). Zero fields take the defaults. */
typedef struct {
	guint width;   /* pixels (at 96 dpi); 0: 1600. At least 400. */
	guint height;  /* pixels (at 96 dpi); 0: as the lanes need. The lanes take what is left
	                  after the title, legend, memory panel and axis (at least 8 px a lane). */
	double dpi;    /* PNG resolution; 0: 96. A PNG is width * dpi / 96 pixels wide; SVG and
	                  PDF are vector pictures and ignore it. */
	gint64 t0, t1; /* the window drawn, ns; t1 <= t0: the whole run. Only ops overlapping
	                  it are drawn, cut at its edges; the cost of drawing grows with the
	                  pixels, not the ops outside it. */
} LhVizOptions;

/* lh_viz_timeline() with a size and a time window; @opt may be NULL (the defaults). An invalid
 * option (width below 400, dpi outside 10..2400, a window outside the run) is an
 * LH_VIZ_ERROR_INVALID. */
gboolean lh_viz_timeline_opt(const char *path, const LhGraph *g, const LhHw *hw, const LhPlan *plan,
                             const LhTrace *trace, const LhMetrics *metrics,
                             const LhVizOptions *opt, GError **error);

/* Several schedules of one graph stacked on one shared time axis; each block is labelled with
 * its scheduler, parameters, makespan and ratio to the lower bound. @n >= 1; @metrics may be
 * NULL (computed), or an array of @n. */
gboolean lh_viz_comparison(const char *path, const LhGraph *g, const LhHw *hw, guint n,
                           const LhPlan *const *plans, const LhTrace *const *traces,
                           const LhMetrics *const *metrics, GError **error);

/* One point of a parameter sweep. */
typedef struct {
	const char *scheduler; /* one line per distinct scheduler, in first-seen order */
	const char *value;     /* the parameter's value as text; numeric values give a numeric
	                          x axis, otherwise the values are categories in first-seen order */
	gboolean ok;           /* FALSE: the point failed (plan or simulation); not drawn */
	gint64 makespan;       /* ns */
	gint64 peak_device;    /* bytes */
	double bound;          /* lower bound, ns (drawn as a dashed line when all agree) */
} LhSweepPoint;

/* The spread of a sweep point over seeds: > 0 draws an error bar of +- this. */
typedef struct {
	double makespan_sd; /* ns */
	double peak_sd;     /* bytes */
} LhSweepSpread;

/* Makespan and peak device memory against the parameter's value, one line per scheduler, in
 * two panels sharing the x axis. @title names the graph and hardware; @param the parameter.
 * @capacity_bytes (> 0) draws the device-memory capacity on the memory panel. */
gboolean lh_viz_sweep(const char *path, const char *title, const char *param,
                      const LhSweepPoint *points, guint n, double capacity_bytes, GError **error);
/* The same with error bars: @spread is NULL or has one entry per point (the spread over
 * seeds, drawn as +- bars around the mean the point holds). */
gboolean lh_viz_sweep_spread(const char *path, const char *title, const char *param,
                             const LhSweepPoint *points, const LhSweepSpread *spread, guint n,
                             double capacity_bytes, GError **error);

/* The unit of an axis's numbers, which picks how ticks are labelled. */
typedef enum {
	LH_TICKS_PLAIN, /* numbers as they are */
	LH_TICKS_TIME,  /* nanoseconds shown in ns, us, ms or s */
	LH_TICKS_BYTES, /* bytes shown in B, KiB, MiB, GiB or TiB (steps round in that unit) */
} LhTickUnit;

/* One cell of a heat map: a point of a two-axis sweep. */
typedef struct {
	const char *panel; /* a map per distinct panel (the scheduler), in first-seen order */
	guint x, y;        /* column (index into x_values) and row (index into y_values) */
	gboolean ok;       /* FALSE: the point failed; drawn grey and crossed, no value */
	double value;      /* the metric, in the unit of @unit (ns or bytes) */
} LhHeatCell;

/* A heat map of @metric over two swept axes, one map per panel on one shared colour scale (a
 * bar with ticks in the metric's unit); lower is better and the lowest cell of each map is
 * outlined and labelled "best". Cells wide enough show their value. A cell that no entry of
 * @cells fills stays white. */
gboolean lh_viz_heatmap(const char *path, const char *title, const char *metric, LhTickUnit unit,
                        const char *x_name, const char *const *x_values, guint nx,
                        const char *y_name, const char *const *y_values, guint ny,
                        const LhHeatCell *cells, guint n, GError **error);

/* Draws the predicted and the measured timeline of one plan on one time axis, and marks each
 * op's error (measured - predicted duration, and start shift). PNG/SVG/PDF by extension,
 * written atomically. */
gboolean lh_viz_validation(const char *path, const LhGraph *g, const LhHw *hw, const LhPlan *plan,
                           const LhTrace *predicted, const LhTrace *measured, GError **error);

G_END_DECLS
