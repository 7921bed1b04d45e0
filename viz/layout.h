/* lhsim — the layout math behind the pictures, as pure functions (no cairo, no I/O).
 *
 * The pictures in viz/viz.h are these functions plus drawing. Keeping the decisions here
 * (which op goes on which lane, where a time lands in pixels, which ticks to show, which bars
 * to merge, how much of a name fits) lets tests check them with numbers worked out by hand.
 * Internal: not installed, not exported from liblhsim (tests link the objects).
 */
#pragma once

#include <glib.h>
#include "sim/graph.h"
#include "sim/plan.h"
#include "sim/trace.h"
#include "viz/viz.h"

G_BEGIN_DECLS

/* ---- Lanes ---------------------------------------------------------------------------- */

typedef enum {
	LH_LANE_STREAM, /* one per stream of the plan, in stream-table order */
	LH_LANE_H2D,    /* one per host-to-device copy engine that ran a copy */
	LH_LANE_D2H,    /* one per device-to-host copy engine that ran a copy */
	LH_LANE_LINK,   /* the link; one row per concurrent collective (see below) */
	LH_LANE_NET,    /* the network: collectives that leave the node, rows as the link's */
	LH_LANE_DEVICE, /* several devices: the empty lane that heads a device's block, "device K"
	                 */
} LhLaneKind;

typedef struct {
	LhLaneKind kind;
	guint32 index;  /* stream index, copy-engine index or link row */
	char label[64]; /* "main (compute)", "copy H2D", "copy H2D 1", "link", "link 2"; on a
	                   graph placed on devices, engine lanes start "dK " */
	guint32 device; /* the device whose block the lane is in (0 without placement) */
} LhLane;

/* Where every op of a trace is drawn. An op that ran appears twice: on its stream's lane, and
 * (copies and collectives) on its engine's lane; kernels have no engine lane, since the
 * compute streams already show them. Lanes come in this order: streams, H2D engines, D2H
 * engines, link rows. Collectives share the link, so they can overlap in time: they are
 * packed onto rows first-fit in (start, op index) order, at most LH_LANES_MAX_LINK_ROWS rows;
 * when every row is busy an op goes to the row that frees first (and overlaps there). */
#define LH_LANES_MAX_LINK_ROWS 4

typedef struct {
	guint32 n_lanes;
	LhLane *lanes;
	guint32 n_stream_lanes; /* lanes[0 .. n_stream_lanes) are the streams */
	guint32 n_ops;
	gint32 *stream_lane; /* n_ops: lane of the op's stream, -1 when it did not run */
	gint32 *engine_lane; /* n_ops: lane of the op's engine, -1 for kernels and ops not run */
	/* Appended. Several devices (streams of a plan for a placed graph): one block of lanes per
	 * device, in device order, each a heading lane (LH_LANE_DEVICE) then laid out as above
	 * (its streams, its engines, its link and network rows); n_stream_lanes is then 0. One
	 * device: n_devices 1, one block. */
	guint32 n_devices;
	guint32 *dev_first;     /* n_devices + 1: the first lane of each block, then n_lanes */
	guint32 *dev_streams;   /* n_devices: the stream lanes that open each block */
	gint32 *stream_lane_of; /* per stream: its lane */
} LhLaneMap;

/* @plan gives the stream names and roles (may be NULL: streams are then named "stream N"
 * after the largest stream index in @t) and each stream's device: an op is on the device of
 * the stream it ran on. There are max(t->n_devices, the largest stream device + 1) devices.
 * Caller frees. */
LhLaneMap *lh_lanes_new(const LhPlan *plan, const LhTrace *t);
void lh_lanes_free(LhLaneMap *m); /* NULL is fine */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(LhLaneMap, lh_lanes_free)

/* ---- Time to pixels ------------------------------------------------------------------- */

/* A linear map from [t0, t1] onto [x0, x1]. */
typedef struct {
	double t0, t1; /* the times at the ends (ns, or any unit) */
	double x0, x1; /* the pixel positions of those ends */
} LhAxis;

/* x0 + (t - t0) * (x1 - x0) / (t1 - t0); x0 when t1 == t0. Not clamped. */
double lh_axis_to_px(const LhAxis *a, double t);
/* The inverse; t0 when x1 == x0. */
double lh_axis_from_px(const LhAxis *a, double x);

/* ---- Ticks ---------------------------------------------------------------------------- */

/* The smallest "round" step, 1, 2 or 5 times a power of ten, that is >= @raw (> 0). */
double lh_nice_step(double raw);

/* LhTickUnit is in viz/viz.h: the heat map takes one. */

typedef struct {
	double first;     /* the first tick, >= lo (in the input's unit: ns, bytes) */
	double step;      /* distance between ticks, > 0 */
	guint n;          /* ticks: first + i * step for i < n, all <= hi */
	double scale;     /* the display unit in input units: 1e6 for ms, 2^30 for GiB */
	const char *unit; /* "ms", "GiB", "" */
	int decimals;     /* digits after the point so that every tick label differs */
} LhTicks;

/* Round ticks over [lo, hi] (lo < hi), at most @max_ticks (>= 2) of them, as many as that
 * allows: the step is the smallest round step (1, 2 or 5 x 10^k in the display unit) that
 * keeps the count within @max_ticks. The display unit is chosen from max(|lo|, |hi|). With
 * @integers, the step is at least 1 (for integer-valued axes). */
void lh_ticks(double lo, double hi, guint max_ticks, LhTickUnit unit, gboolean integers,
              LhTicks *out);
/* Label of tick @i: "20 ms", "1.5 GiB", "4". Returns @buf. */
char *lh_tick_label(const LhTicks *tk, guint i, char *buf, gsize len);

/* ---- Bars ----------------------------------------------------------------------------- */

typedef struct {
	double x0, x1; /* pixels, x0 <= x1 */
	guint32 op;    /* the op (for merged bars: the first op of the group) */
	guint32 n;     /* ops the bar stands for (1 unless merged) */
	guint8 kind;   /* LhOpKind (for merged bars: the kind covering most pixels) */
	guint8 mixed;  /* merged bar whose ops are of more than one kind */
	guint8 _pad[2];
	float density; /* merged bars: the pixels its ops cover over its width, at most 1 (a lane
	                  of bars narrower than a pixel shows how busy it is); 1 otherwise */
} LhBar;

/* Merges bars narrower than @min_px so that a lane of 10^5 ops draws as a few hundred
 * rectangles without losing what it shows. @bars are sorted by x0. A bar at least @min_px
 * wide is kept as it is. Consecutive narrow bars form a group while the gap between the
 * group's right end and the next narrow bar is below @min_px; a group becomes one bar from
 * its first x0 to its largest x1, of the kind that covers the most pixels (ties: the lower
 * kind). Writes to @out (which may be @bars itself) and returns how many bars it holds. */
guint lh_bars_merge(const LhBar *bars, guint n, double min_px, LhBar *out);

/* ---- Labels --------------------------------------------------------------------------- */

/* Width in pixels of the first @len bytes of @text. */
typedef double (*LhMeasureFunc)(const char *text, gsize len, gpointer data);

/* How much of @text fits in @avail pixels: returns strlen(text) when it all fits; else the
 * longest prefix (whole UTF-8 characters, at least @min_chars of them) whose width plus the
 * width of "…" fits, with *@ellipsis set; else 0 (draw nothing). @ellipsis may be NULL. */
gsize lh_label_fit(const char *text, double avail, guint min_chars, LhMeasureFunc measure,
                   gpointer data, gboolean *ellipsis);

/* ---- Curves --------------------------------------------------------------------------- */

/* The upper envelope of the device-memory curve per pixel column. The curve is a step
 * function: pts[i].device_bytes from pts[i].t until pts[i + 1].t, the last value until @a's
 * t1, 0 before pts[0].t. Column c covers the times whose pixel lies in [a->x0 + c,
 * a->x0 + c + 1); @out[c] (of @n_cols) is the largest value the curve takes there, so the
 * drawn curve never hides a peak narrower than a pixel. Times must be non-decreasing. */
void lh_mem_envelope(const LhMemPoint *pts, guint n, const LhAxis *a, guint n_cols, double *out);

G_END_DECLS
