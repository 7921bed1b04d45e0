/* lhsim viz — timelines: one schedule, several stacked (comparison), predicted vs measured
 * (validation). All three are "blocks" of lanes on one shared time axis. */
#include "viz/viz-private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
	WIDTH = 1600,
	MARGIN = 20,
	RIGHT = 44, /* room for the last tick label */
	LANE_H = 24,
	BAR_PAD = 3, /* space above and below a bar inside its lane */
	MEM_H = 100, /* memory panel of a single timeline */
	MEM_H_SMALL = 64,
	BREAK_H = 16, /* strip above an axis break that holds a far-off capacity line */
	ERR_H = 110,  /* error panels of the validation view */
	BLOCK_GAP = 18,
	GUTTER_MIN = 150,
	GUTTER_MAX = 320,
};

static const guint32 INK = 0x222222, INK_SOFT = 0x666666, GRID = 0xe3e3e3, FRAME = 0xbdbdbd,
                     STRIPE = 0xf3f4f6, MEM_FILL = 0xa6cee3, MEM_LINE = 0x1f78b4,
                     CAPACITY = 0xd62728, DEVICE_BAND = 0xdde3ea;

typedef struct {
	const LhGraph *g;
	const LhTrace *t;
	LhLaneMap *lanes;
	char *header; /* NULL: no header line */
	double mem_h; /* 0: no memory panel */
	gint64 makespan;
	double bound; /* ns, <= 0: none */
	double y_header, y_marks, y_lanes, y_mem;
} Block;

typedef struct {
	char *label; /* two lines at most, '\n' between */
	double y, h;
	double *lo, *hi; /* per pixel column: the smallest and largest error there */
	guint8 *kind;    /* per column: kind of the op with the largest |error| */
	double max_abs;  /* ns */
} ErrPanel;

typedef struct {
	char *title;
	char *subtitle[2];
	const char *legend[LH_OP_N_KINDS];
	LhRgb legend_rgb[LH_OP_N_KINDS];
	guint n_legend;
	Block *blocks;
	guint n_blocks;
	ErrPanel err[2];
	guint n_err;
	double w, h, gutter, x0, x1, y_legend, y_axis;
	LhAxis axis;
	LhTicks ticks;
	double width, height; /* asked for (0: the defaults) */
	double scale;         /* PNG pixels per unit (dpi / 96) */
	gint64 t0, t1;        /* the window drawn; t1 <= t0: from 0 to the latest makespan */
	double lane_h;        /* LANE_H, or what a given height leaves per lane */
	double mem_top;       /* bytes at the top of the memory panels */
	double capacity;      /* bytes */
	char *mem_label[2];
} Fig;

static void fig_clear(Fig *f)
{
	g_free(f->title);
	g_free(f->subtitle[0]);
	g_free(f->subtitle[1]);
	g_free(f->mem_label[0]);
	g_free(f->mem_label[1]);
	for (guint i = 0; i < f->n_blocks; i++) {
		lh_lanes_free(f->blocks[i].lanes);
		g_free(f->blocks[i].header);
	}
	g_free(f->blocks);
	for (guint i = 0; i < f->n_err; i++) {
		g_free(f->err[i].label);
		g_free(f->err[i].lo);
		g_free(f->err[i].hi);
		g_free(f->err[i].kind);
	}
}

static gint64 trace_makespan(const LhTrace *t)
{
	gint64 m = 0;
	for (guint32 i = 0; i < t->n_ops; i++)
		if (t->ops[i].start >= 0 && t->ops[i].end > m)
			m = t->ops[i].end;
	return m;
}

static gboolean check_trace(const char *path, const LhGraph *g, const LhTrace *t, const char *what,
                            GError **error)
{
	if (t->n_ops != lh_graph_n_ops(g)) {
		g_set_error(error, LH_VIZ_ERROR, LH_VIZ_ERROR_INVALID,
		            "%s: the %strace has %u ops but the graph '%s' has %u", path, what,
		            t->n_ops, lh_graph_name(g), lh_graph_n_ops(g));
		return FALSE;
	}
	return TRUE;
}

static void legend_from_traces(Fig *f, const LhGraph *g)
{
	gboolean seen[LH_OP_N_KINDS] = {FALSE};
	for (guint b = 0; b < f->n_blocks; b++) {
		const LhTrace *t = f->blocks[b].t;
		for (guint32 i = 0; i < t->n_ops; i++)
			if (t->ops[i].start >= 0)
				seen[lh_graph_op(g, i)->kind] = TRUE;
	}
	for (int k = 0; k < LH_OP_N_KINDS; k++)
		if (seen[k]) {
			f->legend[f->n_legend] = lh_op_kind_name(k);
			f->legend_rgb[f->n_legend++] = lh__kind_rgb(k);
		}
}

/* ---- Layout ---- */

static double text_lines_w(LhPen *p, LhFont font, const char *s)
{
	g_auto(GStrv) l = g_strsplit(s, "\n", -1);
	double w = 0;
	for (guint i = 0; l[i]; i++)
		w = MAX(w, lh__text_w(p, font, l[i], -1));
	return w;
}

static void mem_ticks(const Fig *f, double h, LhTicks *tk)
{
	lh_ticks(0, f->mem_top, MAX(2, (guint)(h / 20)), LH_TICKS_BYTES, FALSE, tk);
}

/* The vertical layout from the legend (at f->y_legend) down, with lanes f->lane_h high: the
 * blocks, the error panels, the axis and the figure's height. */
static void fig_layout_lanes(Fig *f, LhPen *p)
{
	double y = f->y_legend;
	y += lh__legend(p, MARGIN, y, f->w - MARGIN, f->legend, f->legend_rgb, f->n_legend, FALSE);
	y += 10;
	for (guint b = 0; b < f->n_blocks; b++) {
		Block *k = &f->blocks[b];
		if (k->header) {
			k->y_header = y;
			y += p->font_h[LH__FONT_HEADER] + 4;
		}
		k->y_marks = y;
		y += p->font_h[LH__FONT_SMALL] + 4;
		k->y_lanes = y;
		y += (double)k->lanes->n_lanes * f->lane_h;
		if (k->mem_h > 0) {
			y += 8;
			k->y_mem = y;
			y += k->mem_h;
		}
		y += BLOCK_GAP;
	}
	for (guint e = 0; e < f->n_err; e++) {
		f->err[e].y = y;
		f->err[e].h = ERR_H;
		y += ERR_H + BLOCK_GAP;
	}
	f->y_axis = y - BLOCK_GAP + 6;
	f->h = f->y_axis + 6 + p->font_h[LH__FONT_LABEL] + MARGIN;
}

static void fig_layout(Fig *f, LhPen *p)
{
	/* Gutter: the widest lane name, or memory label plus tick labels. */
	double gw = 0;
	for (guint b = 0; b < f->n_blocks; b++) {
		const LhLaneMap *m = f->blocks[b].lanes;
		for (guint32 l = 0; l < m->n_lanes; l++)
			gw = MAX(gw, lh__text_w(p, LH__FONT_LABEL, m->lanes[l].label, -1));
		if (f->blocks[b].mem_h > 0) {
			LhTicks tk;
			mem_ticks(f, f->blocks[b].mem_h, &tk);
			double tw = 0;
			char buf[64];
			for (guint i = 0; i < tk.n; i++)
				tw =
				    MAX(tw, lh__text_w(p, LH__FONT_SMALL,
				                       lh_tick_label(&tk, i, buf, sizeof buf), -1));
			double lw = MAX(lh__text_w(p, LH__FONT_LABEL, f->mem_label[0], -1),
			                lh__text_w(p, LH__FONT_SMALL, f->mem_label[1], -1));
			gw = MAX(gw, lw + tw + 18);
		}
	}
	for (guint e = 0; e < f->n_err; e++)
		gw = MAX(gw, text_lines_w(p, LH__FONT_LABEL, f->err[e].label) + 70);
	f->gutter = CLAMP(gw + 12, GUTTER_MIN, GUTTER_MAX);
	f->w = f->width > 0 ? f->width : WIDTH;
	f->lane_h = LANE_H;
	f->x0 = MARGIN + f->gutter;
	f->x1 = f->w - RIGHT;

	double y = MARGIN;
	y += p->font_h[LH__FONT_TITLE] + 4;
	for (int i = 0; i < 2; i++)
		if (f->subtitle[i])
			y += p->font_h[LH__FONT_SUBTITLE] + 2;
	y += 8;
	f->y_legend = y;
	fig_layout_lanes(f, p);
	if (f->height > 0 && f->lane_h == LANE_H) {
		/* The lanes take what a given height leaves (at least 8 px each): lay out again. */
		guint32 nl = 0;
		for (guint b = 0; b < f->n_blocks; b++)
			nl += f->blocks[b].lanes->n_lanes;
		double fixed = f->h - (double)nl * LANE_H;
		f->lane_h = nl ? MAX(8.0, (f->height - fixed) / nl) : LANE_H;
		fig_layout_lanes(f, p);
	}

	gint64 t_end = 1;
	for (guint b = 0; b < f->n_blocks; b++)
		t_end = MAX(t_end, f->blocks[b].makespan);
	double a0 = 0, a1 = (double)t_end;
	if (f->t1 > f->t0) {
		a0 = (double)f->t0;
		a1 = (double)f->t1;
	}
	f->axis = (LhAxis){a0, a1, f->x0, f->x1};
	lh_ticks(a0, a1, MAX(2, (guint)((f->x1 - f->x0) / 110)), LH_TICKS_TIME, FALSE, &f->ticks);
}

/* ---- Drawing ---- */

static void rect(cairo_t *cr, double x, double y, double w, double h, LhRgb c)
{
	lh__rgb(cr, c);
	cairo_rectangle(cr, x, y, w, h);
	cairo_fill(cr);
}

static void vline(cairo_t *cr, double x, double y0, double y1, double width, LhRgb c,
                  gboolean dashed)
{
	lh__rgb(cr, c);
	cairo_set_line_width(cr, width);
	if (dashed) {
		static const double d[] = {5, 3};
		cairo_set_dash(cr, d, 2, 0);
	}
	cairo_move_to(cr, x, y0);
	cairo_line_to(cr, x, y1);
	cairo_stroke(cr);
	cairo_set_dash(cr, NULL, 0, 0);
}

static int bar_cmp(const void *a, const void *b)
{
	const LhBar *x = a, *y = b;
	if (x->x0 != y->x0)
		return x->x0 < y->x0 ? -1 : 1;
	return (x->op > y->op) - (x->op < y->op);
}

static void draw_grid(Fig *f, LhPen *p, double y0, double y1)
{
	for (guint i = 0; i < f->ticks.n; i++) {
		double x = lh_axis_to_px(&f->axis, f->ticks.first + i * f->ticks.step);
		vline(p->cr, round(x) + 0.5, y0, y1, 1, lh__rgb_hex(GRID), FALSE);
	}
}

static void draw_lanes(Fig *f, LhPen *p, Block *k)
{
	cairo_t *cr = p->cr;
	const LhLaneMap *m = k->lanes;
	double LH = f->lane_h;
	double lanes_h = (double)m->n_lanes * LH;
	for (guint32 l = 0; l < m->n_lanes; l++) {
		double y = k->y_lanes + (double)l * LH;
		if (l % 2)
			rect(cr, f->x0, y, f->x1 - f->x0, LH, lh__rgb_hex(STRIPE));
		double ty = y + (LH - p->font_h[LH__FONT_LABEL]) / 2;
		double avail = f->gutter - 10;
		double tw = lh__text_w(p, LH__FONT_LABEL, m->lanes[l].label, -1);
		if (m->lanes[l].kind == LH_LANE_DEVICE) {
			/* A device's block opens with its name, left in the gutter, on a band. */
			rect(cr, MARGIN, y, f->x1 - MARGIN, LH, lh__rgb_hex(DEVICE_BAND));
			lh__text(p, LH__FONT_LABEL, MARGIN + 2, ty, 0, m->lanes[l].label, -1,
			         lh__rgb_hex(INK));
		} else if (tw <= avail)
			lh__text(p, LH__FONT_LABEL, f->x0 - 8, ty, 1, m->lanes[l].label, -1,
			         lh__rgb_hex(INK));
		else
			lh__text_fit(p, LH__FONT_LABEL, f->x0 - 8 - avail, ty, avail, 1,
			             m->lanes[l].label, lh__rgb_hex(INK));
	}
	draw_grid(f, p, k->y_lanes, k->y_lanes + lanes_h);

	/* Bars, lane by lane. */
	guint *off = g_new0(guint, m->n_lanes + 1);
	/* Only ops that overlap the window are drawn (all of them without one). */
	gboolean win = f->t1 > f->t0;
#define IN_WINDOW(tm) ((tm)->start >= 0 && (!win || ((tm)->end >= f->t0 && (tm)->start <= f->t1)))
	for (guint32 i = 0; i < m->n_ops; i++) {
		if (!IN_WINDOW(&k->t->ops[i]))
			continue;
		if (m->stream_lane[i] >= 0)
			off[m->stream_lane[i] + 1]++;
		if (m->engine_lane[i] >= 0)
			off[m->engine_lane[i] + 1]++;
	}
	for (guint32 l = 0; l < m->n_lanes; l++)
		off[l + 1] += off[l];
	guint total = off[m->n_lanes];
	LhBar *bars = g_new(LhBar, MAX(total, 1));
	guint *fill = g_memdup2(off, sizeof(guint) * (m->n_lanes + 1));
	for (guint32 i = 0; i < m->n_ops; i++) {
		const LhOpTiming *tm = &k->t->ops[i];
		if (!IN_WINDOW(tm))
			continue;
		/* Cut at the window's edges. */
		LhBar b = {MAX(lh_axis_to_px(&f->axis, (double)tm->start), f->x0),
		           MIN(lh_axis_to_px(&f->axis, (double)tm->end), f->x1),
		           i,
		           1,
		           lh_graph_op(k->g, i)->kind,
		           0,
		           {0},
		           1};
		if (m->stream_lane[i] >= 0 && (guint32)m->stream_lane[i] < m->n_lanes)
			bars[fill[m->stream_lane[i]]++] = b;
		if (m->engine_lane[i] >= 0)
			bars[fill[m->engine_lane[i]]++] = b;
	}
	for (guint32 l = 0; l < m->n_lanes; l++) {
		LhBar *lb = bars + off[l];
		guint n = off[l + 1] - off[l];
		qsort(lb, n, sizeof *lb, bar_cmp);
		n = lh_bars_merge(lb, n, 1.0, lb);
		double y = k->y_lanes + (double)l * LH + BAR_PAD, h = LH - 2 * BAR_PAD;
		for (guint j = 0; j < n; j++) {
			const LhBar *b = &lb[j];
			double w = b->x1 - b->x0;
			LhRgb c = lh__kind_rgb(b->kind);
			/* A hairline of white between wide neighbours shows where one op ends. Bars
			 * merged from ops narrower than a pixel are as opaque as the ops are dense
			 * in them, so that 10^6 ops still show where a lane is busy. */
			if (b->n > 1 && b->density < 1) {
				cairo_set_source_rgba(cr, c.r, c.g, c.b, 0.25 + 0.75 * b->density);
				cairo_rectangle(cr, b->x0, y, MAX(w, 1), h);
				cairo_fill(cr);
			} else {
				rect(cr, b->x0, y, w > 4 ? w - 0.75 : MAX(w, 1), h, c);
			}
			if (b->n == 1 && w >= 36 && h >= p->font_h[LH__FONT_SMALL]) {
				const char *name = lh_graph_op(k->g, b->op)->name;
				lh__text_fit(p, LH__FONT_SMALL, b->x0 + 4,
				             y + (h - p->font_h[LH__FONT_SMALL]) / 2, w - 8, 5,
				             name, lh__text_on(c));
			}
		}
	}
#undef IN_WINDOW
	g_free(fill);
	g_free(bars);
	g_free(off);

	/* Frame, and a rule between streams and engines. */
	lh__rgb(cr, lh__rgb_hex(FRAME));
	cairo_set_line_width(cr, 1);
	cairo_rectangle(cr, f->x0 - 0.5, k->y_lanes - 0.5, f->x1 - f->x0 + 1, lanes_h + 1);
	cairo_stroke(cr);
	if (m->n_stream_lanes > 0 && m->n_stream_lanes < m->n_lanes) {
		double y = k->y_lanes + (double)m->n_stream_lanes * LH;
		lh__rgb(cr, lh__rgb_hex(0x8c8c8c));
		cairo_set_line_width(cr, 1.5);
		cairo_move_to(cr, MARGIN, y);
		cairo_line_to(cr, f->x1, y);
		cairo_stroke(cr);
	}
	/* Several devices: a strong rule above each block, a light one after its streams. */
	for (guint32 d = 0; m->n_devices > 1 && d < m->n_devices; d++) {
		double y = k->y_lanes + (double)m->dev_first[d] * LH;
		lh__rgb(cr, lh__rgb_hex(0x404040));
		cairo_set_line_width(cr, 2);
		cairo_move_to(cr, MARGIN, y);
		cairo_line_to(cr, f->x1, y);
		cairo_stroke(cr);
		guint32 se = m->dev_first[d] + 1 + m->dev_streams[d];
		if (se < m->dev_first[d + 1]) {
			y = k->y_lanes + (double)se * LH;
			lh__rgb(cr, lh__rgb_hex(0x8c8c8c));
			cairo_set_line_width(cr, 1);
			cairo_move_to(cr, MARGIN, y);
			cairo_line_to(cr, f->x1, y);
			cairo_stroke(cr);
		}
	}
}

/* Lower bound and makespan: lines through the lanes, labels in the row above them. */
static void draw_marks(Fig *f, LhPen *p, Block *k)
{
	double ty = k->y_marks, y1 = k->y_lanes + (double)k->lanes->n_lanes * f->lane_h;
	double xm = lh_axis_to_px(&f->axis, (double)k->makespan);
	/* A window may leave the makespan or the bound out: no line then. */
	if (xm < f->x0 - 0.5 || xm > f->x1 + 0.5)
		return;
	g_autofree char *ms = lh_format_ns((double)k->makespan);
	g_autofree char *mt = g_strdup_printf("makespan %s", ms);
	double wm = lh__text_w(p, LH__FONT_SMALL, mt, -1);
	/* The makespan's name right of its line when it fits there, else left of it; the bound's
	 * left of its own line, pushed further left if the makespan's is in the way. */
	gboolean m_right = xm + 4 + wm <= f->x1;
	double mleft = m_right ? xm + 4 : MAX(xm - 4 - wm, f->x0);
	/* The lines start below the labels' row, so that no label is crossed by the other line. */
	double yl = k->y_lanes - 3;
	vline(p->cr, round(xm) + 0.5, yl, y1, 1.5, lh__rgb_hex(INK), FALSE);
	lh__text(p, LH__FONT_SMALL, mleft, ty, 0, mt, -1, lh__rgb_hex(INK));
	if (k->bound <= 0)
		return;
	double xb = lh_axis_to_px(&f->axis, k->bound);
	if (xb < f->x0 - 0.5 || xb > f->x1 + 0.5)
		return;
	vline(p->cr, round(xb) + 0.5, yl, y1, 1.2, lh__rgb_hex(INK_SOFT), TRUE);
	g_autofree char *bs = lh_format_ns(k->bound);
	g_autofree char *bt = g_strdup_printf("lower bound %s", bs);
	double wb = lh__text_w(p, LH__FONT_SMALL, bt, -1);
	double right = m_right ? xb - 4 : MIN(xb - 4, mleft - 12);
	if (right - wb >= f->x0)
		lh__text(p, LH__FONT_SMALL, right - wb, ty, 0, bt, -1, lh__rgb_hex(INK_SOFT));
}

static void draw_memory(Fig *f, LhPen *p, Block *k)
{
	cairo_t *cr = p->cr;
	double y0 = k->y_mem, h = k->mem_h, y1 = y0 + h;
	/* A capacity far above the peak sits on a strip above a break in the axis, so that the
	 * curve keeps the panel's height. hs: the height of the part drawn to scale. */
	gboolean broken = f->capacity > f->mem_top;
	double hs = broken ? h - BREAK_H : h;
	LhTicks tk;
	mem_ticks(f, hs, &tk);
	char buf[64];
	for (guint i = 0; i < tk.n; i++) {
		double v = tk.first + i * tk.step;
		double y = y1 - v / f->mem_top * hs;
		lh__rgb(cr, lh__rgb_hex(GRID));
		cairo_set_line_width(cr, 1);
		cairo_move_to(cr, f->x0, round(y) + 0.5);
		cairo_line_to(cr, f->x1, round(y) + 0.5);
		cairo_stroke(cr);
		double ty = CLAMP(y - p->font_h[LH__FONT_SMALL] / 2, y1 - hs - 4,
		                  y1 - p->font_h[LH__FONT_SMALL] + 4);
		lh__text(p, LH__FONT_SMALL, f->x0 - 6, ty, 1,
		         lh_tick_label(&tk, i, buf, sizeof buf), -1, lh__rgb_hex(INK_SOFT));
	}
	draw_grid(f, p, y0, y1);
	double ly = y0 + h / 2 - p->font_h[LH__FONT_LABEL];
	lh__text(p, LH__FONT_LABEL, MARGIN, ly, 0, f->mem_label[0], -1, lh__rgb_hex(INK));
	lh__text(p, LH__FONT_SMALL, MARGIN, ly + p->font_h[LH__FONT_LABEL] + 1, 0, f->mem_label[1],
	         -1, lh__rgb_hex(INK_SOFT));

	/* The curve, as its per-column upper envelope up to the makespan. */
	double xe = MIN(lh_axis_to_px(&f->axis, (double)k->makespan), f->x1);
	guint n_cols = (guint)MAX(0, ceil(xe - f->x0));
	if (n_cols && k->t->mem->len) {
		double *env = g_new(double, n_cols);
		lh_mem_envelope((const LhMemPoint *)k->t->mem->data, k->t->mem->len, &f->axis,
		                n_cols, env);
		cairo_move_to(cr, f->x0, y1);
		for (guint c = 0; c < n_cols; c++) {
			double y = y1 - env[c] / f->mem_top * hs;
			cairo_line_to(cr, f->x0 + c, y);
			cairo_line_to(cr, MIN(f->x0 + c + 1, xe), y);
		}
		cairo_line_to(cr, xe, y1);
		cairo_close_path(cr);
		LhRgb fc = lh__rgb_hex(MEM_FILL);
		cairo_set_source_rgba(cr, fc.r, fc.g, fc.b, 0.85);
		cairo_fill(cr);
		cairo_move_to(cr, f->x0, y1 - env[0] / f->mem_top * hs);
		for (guint c = 0; c < n_cols; c++) {
			double y = y1 - env[c] / f->mem_top * hs;
			cairo_line_to(cr, f->x0 + c, y);
			cairo_line_to(cr, MIN(f->x0 + c + 1, xe), y);
		}
		lh__rgb(cr, lh__rgb_hex(MEM_LINE));
		cairo_set_line_width(cr, 1.2);
		cairo_stroke(cr);
		g_free(env);
	}
	double cap_box[4] = {0, 0, 0, 0}; /* x, y, w, h of the capacity's label */
	if (f->capacity > 0) {
		double y = broken ? y0 + 6.5 : round(y1 - f->capacity / f->mem_top * hs) + 0.5;
		static const double d[] = {6, 4};
		lh__rgb(cr, lh__rgb_hex(CAPACITY));
		cairo_set_line_width(cr, 1.5);
		cairo_set_dash(cr, d, 2, 0);
		cairo_move_to(cr, f->x0, y);
		cairo_line_to(cr, f->x1, y);
		cairo_stroke(cr);
		cairo_set_dash(cr, NULL, 0, 0);
		/* Its value on the line's right end, on a white box that interrupts the line. */
		g_autofree char *cap = lh_format_bytes(f->capacity);
		g_autofree char *ct = g_strdup_printf("capacity %s", cap);
		double w = lh__text_w(p, LH__FONT_SMALL, ct, -1), fh = p->font_h[LH__FONT_SMALL];
		double tx = f->x1 - 8 - w, ty = MAX(y - fh / 2, y0 - 1);
		cairo_set_source_rgb(cr, 1, 1, 1);
		cairo_rectangle(cr, tx - 3, ty, w + 6, fh);
		cairo_fill(cr);
		lh__text(p, LH__FONT_SMALL, tx, ty, 0, ct, -1, lh__rgb_hex(CAPACITY));
		cap_box[0] = tx - 3;
		cap_box[1] = ty;
		cap_box[2] = w + 6;
		cap_box[3] = fh;
	}
	/* The peak: a dot and its value, beside it on the side with room. */
	if (k->t->peak_device > 0 && k->t->n_devices <= 1) { /* per device: the table */
		double px = lh_axis_to_px(&f->axis, (double)k->t->peak_device_t);
		double py = y1 - (double)k->t->peak_device / f->mem_top * hs;
		lh__rgb(cr, lh__rgb_hex(MEM_LINE));
		cairo_arc(cr, px, py, 3.5, 0, 2 * G_PI);
		cairo_fill(cr);
		g_autofree char *pb = lh_format_bytes((double)k->t->peak_device);
		g_autofree char *pt = g_strdup_printf("peak %s", pb);
		double w = lh__text_w(p, LH__FONT_SMALL, pt, -1);
		double tx = px + 7 + w <= f->x1 ? px + 7 : px - 7 - w;
		double ty = MAX(py - p->font_h[LH__FONT_SMALL] / 2, y0);
		/* Below the dot when beside it would cover the capacity's label. */
		if (cap_box[2] > 0 && tx - 2 < cap_box[0] + cap_box[2] && tx + w + 2 > cap_box[0] &&
		    ty < cap_box[1] + cap_box[3] && ty + p->font_h[LH__FONT_SMALL] > cap_box[1])
			ty = MAX(ty, cap_box[1] + cap_box[3] + 1);
		LhRgb bg = lh__rgb_hex(0xffffff);
		cairo_set_source_rgba(cr, bg.r, bg.g, bg.b, 0.8);
		cairo_rectangle(cr, tx - 2, ty, w + 4, p->font_h[LH__FONT_SMALL]);
		cairo_fill(cr);
		lh__text(p, LH__FONT_SMALL, tx, ty, 0, pt, -1, lh__rgb_hex(0x08306b));
	}
	lh__rgb(cr, lh__rgb_hex(FRAME));
	cairo_set_line_width(cr, 1);
	cairo_rectangle(cr, f->x0 - 0.5, y0 - 0.5, f->x1 - f->x0 + 1, h + 1);
	cairo_stroke(cr);
	if (broken) {
		/* The break: a gap in the left edge between two slanted strokes. */
		double yb = y0 + BREAK_H - 6;
		cairo_set_source_rgb(cr, 1, 1, 1);
		cairo_rectangle(cr, f->x0 - 3, yb - 2, 6, 5);
		cairo_fill(cr);
		lh__rgb(cr, lh__rgb_hex(INK_SOFT));
		cairo_set_line_width(cr, 1.2);
		for (int i = 0; i < 2; i++) {
			cairo_move_to(cr, f->x0 - 6, yb + 1 + 4 * i);
			cairo_line_to(cr, f->x0 + 6, yb - 3 + 4 * i);
		}
		cairo_stroke(cr);
	}
}

static void draw_err(Fig *f, LhPen *p, ErrPanel *e)
{
	cairo_t *cr = p->cr;
	double y0 = e->y, h = e->h, mid = y0 + h / 2;
	double m = e->max_abs > 0 ? e->max_abs : 1;
	LhTicks tk;
	lh_ticks(-m, m, 5, LH_TICKS_TIME, FALSE, &tk);
	char buf[64];
	for (guint i = 0; i < tk.n; i++) {
		double v = tk.first + i * tk.step;
		double y = mid - v / m * (h / 2 - 4);
		lh__rgb(cr, lh__rgb_hex(GRID));
		cairo_set_line_width(cr, 1);
		cairo_move_to(cr, f->x0, round(y) + 0.5);
		cairo_line_to(cr, f->x1, round(y) + 0.5);
		cairo_stroke(cr);
		lh__text(p, LH__FONT_SMALL, f->x0 - 6, y - p->font_h[LH__FONT_SMALL] / 2, 1,
		         lh_tick_label(&tk, i, buf, sizeof buf), -1, lh__rgb_hex(INK_SOFT));
	}
	draw_grid(f, p, y0, y0 + h);
	g_auto(GStrv) lines = g_strsplit(e->label, "\n", -1);
	guint nl = g_strv_length(lines);
	double ly = mid - nl * p->font_h[LH__FONT_LABEL] / 2;
	for (guint i = 0; i < nl; i++)
		lh__text(p, i ? LH__FONT_SMALL : LH__FONT_LABEL, MARGIN,
		         ly + i * p->font_h[LH__FONT_LABEL], 0, lines[i], -1,
		         lh__rgb_hex(i ? INK_SOFT : INK));
	guint n_cols = (guint)ceil(f->x1 - f->x0);
	for (guint c = 0; c < n_cols; c++) {
		if (e->lo[c] > e->hi[c])
			continue; /* no op starts here */
		double a = mid - MIN(e->hi[c], 0) / m * (h / 2 - 4);
		double b = mid - MAX(e->hi[c], 0) / m * (h / 2 - 4);
		double lo = mid - MIN(e->lo[c], 0) / m * (h / 2 - 4);
		double top = MIN(b, a), bottom = MAX(lo, a);
		rect(cr, f->x0 + c, top, 1.5, MAX(bottom - top, 1), lh__kind_rgb(e->kind[c]));
	}
	lh__rgb(cr, lh__rgb_hex(INK_SOFT));
	cairo_set_line_width(cr, 1);
	cairo_move_to(cr, f->x0, round(mid) + 0.5);
	cairo_line_to(cr, f->x1, round(mid) + 0.5);
	cairo_stroke(cr);
	lh__rgb(cr, lh__rgb_hex(FRAME));
	cairo_rectangle(cr, f->x0 - 0.5, y0 - 0.5, f->x1 - f->x0 + 1, h + 1);
	cairo_stroke(cr);
}

static void fig_draw(LhPen *p, gpointer data)
{
	Fig *f = data;
	cairo_t *cr = p->cr;
	double avail = f->w - 2 * MARGIN;
	double y = MARGIN;
	lh__text_fit(p, LH__FONT_TITLE, MARGIN, y, avail, 1, f->title, lh__rgb_hex(0x111111));
	y += p->font_h[LH__FONT_TITLE] + 4;
	for (int i = 0; i < 2; i++)
		if (f->subtitle[i]) {
			lh__text_fit(p, LH__FONT_SUBTITLE, MARGIN, y, avail, 1, f->subtitle[i],
			             lh__rgb_hex(0x444444));
			y += p->font_h[LH__FONT_SUBTITLE] + 2;
		}
	lh__legend(p, MARGIN, f->y_legend, f->w - MARGIN, f->legend, f->legend_rgb, f->n_legend,
	           FALSE);
	for (guint b = 0; b < f->n_blocks; b++) {
		Block *k = &f->blocks[b];
		if (k->header)
			lh__text_fit(p, LH__FONT_HEADER, MARGIN, k->y_header, avail, 1, k->header,
			             lh__rgb_hex(0x111111));
		draw_lanes(f, p, k);
		draw_marks(f, p, k);
		if (k->mem_h > 0)
			draw_memory(f, p, k);
	}
	for (guint e = 0; e < f->n_err; e++)
		draw_err(f, p, &f->err[e]);

	/* The shared time axis. */
	double ya = f->y_axis;
	lh__rgb(cr, lh__rgb_hex(INK));
	cairo_set_line_width(cr, 1);
	cairo_move_to(cr, f->x0, ya + 0.5);
	cairo_line_to(cr, f->x1, ya + 0.5);
	cairo_stroke(cr);
	char buf[64];
	for (guint i = 0; i < f->ticks.n; i++) {
		double x = round(lh_axis_to_px(&f->axis, f->ticks.first + i * f->ticks.step)) + 0.5;
		cairo_move_to(cr, x, ya);
		cairo_line_to(cr, x, ya + 5);
		cairo_stroke(cr);
		lh__text(p, LH__FONT_LABEL, x, ya + 6, 0.5,
		         lh_tick_label(&f->ticks, i, buf, sizeof buf), -1, lh__rgb_hex(INK));
	}
}

static void set_memory(Fig *f, const LhHw *hw)
{
	gint64 peak = 0;
	guint32 n_dev = 1;
	for (guint b = 0; b < f->n_blocks; b++) {
		const LhTrace *t = f->blocks[b].t;
		peak = MAX(peak, t->peak_device);
		n_dev = MAX(n_dev, t->n_devices);
		/* Several devices: the curve is their sum (sim/trace.h), above any one's peak. */
		for (guint i = 0; t->n_devices > 1 && i < t->mem->len; i++)
			peak = MAX(peak, g_array_index(t->mem, LhMemPoint, i).device_bytes);
	}
	/* One device's capacity is no line for a sum over several. */
	f->capacity = hw && n_dev == 1 ? hw->memory_gib * 1073741824.0 : 0;
	/* Scale to the peak, with room above it; take the capacity in when it is close enough
	 * that the curve stays readable (within 2x of the peak). */
	f->mem_top = MAX((double)peak * 1.2, 1024);
	if (f->capacity > 0 && f->capacity <= 2 * (double)peak)
		f->mem_top = MAX(f->mem_top, f->capacity * 1.08);
	f->mem_label[0] = g_strdup("device memory");
	f->mem_label[1] =
	    n_dev > 1 ? g_strdup_printf("the sum of %u devices", n_dev)
	              : g_strdup(f->capacity > f->mem_top ? "axis broken below capacity" : "");
}

static void fig_measure(Fig *f)
{
	LhPen pen;
	lh__pen_init(&pen, NULL);
	fig_layout(f, &pen);
	lh__pen_clear(&pen);
}

static gboolean fig_write(const char *path, Fig *f, GError **error)
{
	fig_measure(f);
	return lh__viz_write_scaled(path, f->w, f->h, f->scale > 0 ? f->scale : 1, fig_draw, f,
	                            error);
}

static char *plan_desc(const LhPlan *plan)
{
	const char *s = plan && lh_plan_scheduler(plan) ? lh_plan_scheduler(plan) : "plan";
	if (plan && lh_plan_params(plan) && *lh_plan_params(plan))
		return g_strdup_printf("%s (%s)", s, lh_plan_params(plan));
	return g_strdup(s);
}

/* ---- Public ---- */

gboolean lh_viz_timeline(const char *path, const LhGraph *g, const LhHw *hw, const LhPlan *plan,
                         const LhTrace *trace, const LhMetrics *metrics, GError **error)
{
	return lh_viz_timeline_opt(path, g, hw, plan, trace, metrics, NULL, error);
}

gboolean lh_viz_timeline_opt(const char *path, const LhGraph *g, const LhHw *hw, const LhPlan *plan,
                             const LhTrace *trace, const LhMetrics *metrics,
                             const LhVizOptions *opt, GError **error)
{
	g_return_val_if_fail(path && g && hw && trace, FALSE);
	LhVizOptions dflt = {0};
	if (!opt)
		opt = &dflt;
	if (opt->width && (opt->width < 400 || opt->width > 32767)) {
		g_set_error(error, LH_VIZ_ERROR, LH_VIZ_ERROR_INVALID,
		            "%s: width %u is out of range (400 to 32767 pixels)", path, opt->width);
		return FALSE;
	}
	if (opt->height > 32767 || (opt->dpi != 0 && !(opt->dpi >= 10 && opt->dpi <= 2400))) {
		g_set_error(error, LH_VIZ_ERROR, LH_VIZ_ERROR_INVALID,
		            "%s: height must be at most 32767 pixels and dpi from 10 to 2400",
		            path);
		return FALSE;
	}
	if (opt->t1 > opt->t0 && (opt->t0 < 0 || opt->t0 >= trace_makespan(trace))) {
		g_autofree char *a = lh_format_ns((double)opt->t0);
		g_autofree char *m = lh_format_ns((double)trace_makespan(trace));
		g_set_error(error, LH_VIZ_ERROR, LH_VIZ_ERROR_INVALID,
		            "%s: the window starts at %s, outside the run (0 to %s)", path, a, m);
		return FALSE;
	}
	if (!lh__viz_check_path(path, error) || !check_trace(path, g, trace, "", error))
		return FALSE;
	LhMetrics own;
	if (!metrics) {
		lh_metrics_compute(trace, g, hw, plan, &own);
		metrics = &own;
	}
	Fig f = {0};
	f.width = opt->width;
	f.height = opt->height;
	f.scale = opt->dpi > 0 ? opt->dpi / 96 : 1;
	f.t0 = opt->t0;
	f.t1 = opt->t1;
	f.n_blocks = 1;
	f.blocks = g_new0(Block, 1);
	Block *k = &f.blocks[0];
	k->g = g;
	k->t = trace;
	k->lanes = lh_lanes_new(plan, trace);
	k->mem_h = MEM_H;
	k->makespan = metrics->makespan;
	k->bound = metrics->bounds.bound;
	set_memory(&f, hw);
	legend_from_traces(&f, g);
	g_autofree char *who = plan_desc(plan);
	f.title = g_strdup_printf("%s on %s, scheduler %s", lh_graph_name(g), hw->name, who);
	g_autofree char *ms = lh_format_ns((double)metrics->makespan);
	g_autofree char *lb = lh_format_ns(metrics->bounds.bound);
	g_autofree char *pk = lh_format_bytes((double)metrics->peak_device);
	f.subtitle[0] = g_strdup_printf(
	    "%u ops  \u00b7  makespan %s  \u00b7  lower bound %s (%s)  \u00b7  %.2f\u00d7 the "
	    "bound  \u00b7  peak device memory %s  \u00b7  overlap %.0f %%",
	    lh_graph_n_ops(g), ms, lb, metrics->bounds.binding ? metrics->bounds.binding : "?",
	    metrics->ratio, pk, 100 * metrics->overlap);
	gboolean ok = fig_write(path, &f, error);
	fig_clear(&f);
	if (metrics == &own)
		lh_metrics_clear(&own);
	return ok;
}

gboolean lh_viz_comparison(const char *path, const LhGraph *g, const LhHw *hw, guint n,
                           const LhPlan *const *plans, const LhTrace *const *traces,
                           const LhMetrics *const *metrics, GError **error)
{
	g_return_val_if_fail(path && g && hw && n >= 1 && plans && traces, FALSE);
	if (!lh__viz_check_path(path, error))
		return FALSE;
	for (guint i = 0; i < n; i++)
		if (!check_trace(path, g, traces[i], "", error))
			return FALSE;
	Fig f = {0};
	f.n_blocks = n;
	f.blocks = g_new0(Block, n);
	double bound = 0;
	const char *binding = NULL;
	for (guint i = 0; i < n; i++) {
		LhMetrics own;
		const LhMetrics *m = metrics ? metrics[i] : NULL;
		if (!m) {
			lh_metrics_compute(traces[i], g, hw, plans[i], &own);
			m = &own;
		}
		Block *k = &f.blocks[i];
		k->g = g;
		k->t = traces[i];
		k->lanes = lh_lanes_new(plans[i], traces[i]);
		k->mem_h = MEM_H_SMALL;
		k->makespan = m->makespan;
		k->bound = m->bounds.bound;
		if (i == 0 || m->bounds.bound < bound) {
			bound = m->bounds.bound;
			binding = m->bounds.binding;
		}
		g_autofree char *who = plan_desc(plans[i]);
		g_autofree char *ms = lh_format_ns((double)m->makespan);
		g_autofree char *pk = lh_format_bytes((double)m->peak_device);
		k->header = g_strdup_printf("%s  \u2014  makespan %s, %.2f\u00d7 the lower bound, "
		                            "peak memory %s",
		                            who, ms, m->ratio, pk);
		if (m == &own)
			lh_metrics_clear(&own);
	}
	set_memory(&f, hw);
	legend_from_traces(&f, g);
	f.title = g_strdup_printf("%s on %s: %u schedule%s on one time axis", lh_graph_name(g),
	                          hw->name, n, n == 1 ? "" : "s");
	g_autofree char *lb = lh_format_ns(bound);
	f.subtitle[0] = g_strdup_printf("%u ops  \u00b7  lower bound %s (%s)", lh_graph_n_ops(g),
	                                lb, binding ? binding : "?");
	gboolean ok = fig_write(path, &f, error);
	fig_clear(&f);
	return ok;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void err_panel(Fig *f, ErrPanel *e, const LhGraph *g, const LhTrace *pr, const LhTrace *me,
                      gboolean shift)
{
	guint n_cols = (guint)ceil(f->x1 - f->x0);
	e->lo = g_new(double, n_cols);
	e->hi = g_new(double, n_cols);
	e->kind = g_new0(guint8, n_cols);
	double *best = g_new0(double, n_cols);
	for (guint c = 0; c < n_cols; c++) {
		e->lo[c] = INFINITY;
		e->hi[c] = -INFINITY;
	}
	for (guint32 i = 0; i < pr->n_ops; i++) {
		const LhOpTiming *a = &pr->ops[i], *b = &me->ops[i];
		if (a->start < 0 || b->start < 0)
			continue;
		double v = shift ? (double)(b->start - a->start)
		                 : (double)((b->end - b->start) - (a->end - a->start));
		double x = lh_axis_to_px(&f->axis, (double)b->start) - f->x0;
		guint c = (guint)CLAMP(floor(x), 0, (double)n_cols - 1);
		e->lo[c] = MIN(e->lo[c], v);
		e->hi[c] = MAX(e->hi[c], v);
		if (fabs(v) >= best[c]) {
			best[c] = fabs(v);
			e->kind[c] = lh_graph_op(g, i)->kind;
		}
		e->max_abs = MAX(e->max_abs, fabs(v));
	}
	g_free(best);
}

gboolean lh_viz_validation(const char *path, const LhGraph *g, const LhHw *hw, const LhPlan *plan,
                           const LhTrace *predicted, const LhTrace *measured, GError **error)
{
	g_return_val_if_fail(path && g && hw && predicted && measured, FALSE);
	if (!lh__viz_check_path(path, error) ||
	    !check_trace(path, g, predicted, "predicted ", error) ||
	    !check_trace(path, g, measured, "measured ", error))
		return FALSE;
	Fig f = {0};
	f.n_blocks = 2;
	f.blocks = g_new0(Block, 2);
	const LhTrace *tr[2] = {predicted, measured};
	LhBounds bounds;
	lh_bounds(g, hw, plan, &bounds);
	for (int i = 0; i < 2; i++) {
		Block *k = &f.blocks[i];
		k->g = g;
		k->t = tr[i];
		k->lanes = lh_lanes_new(plan, tr[i]);
		k->makespan = trace_makespan(tr[i]);
		k->bound = i == 0 ? bounds.bound : 0;
		g_autofree char *ms = lh_format_ns((double)k->makespan);
		const char *src = tr[i]->source ? tr[i]->source : (i ? "measured" : "simulated");
		k->header = g_strdup_printf("%s (%s)  \u2014  makespan %s",
		                            i ? "measured" : "predicted", src, ms);
	}
	legend_from_traces(&f, g);

	/* Per-op errors, and the summary line. */
	double worst_d = 0, worst_s = 0;
	guint32 wd = 0, ws = 0, n_both = 0;
	GArray *rel = g_array_new(FALSE, FALSE, sizeof(double));
	for (guint32 i = 0; i < predicted->n_ops; i++) {
		const LhOpTiming *a = &predicted->ops[i], *b = &measured->ops[i];
		if (a->start < 0 || b->start < 0)
			continue;
		n_both++;
		double pd = (double)(a->end - a->start), d = (double)(b->end - b->start) - pd;
		double sh = (double)(b->start - a->start);
		if (fabs(d) > fabs(worst_d)) {
			worst_d = d;
			wd = i;
		}
		if (fabs(sh) > fabs(worst_s)) {
			worst_s = sh;
			ws = i;
		}
		if (pd > 0) {
			double r = fabs(d) / pd;
			g_array_append_val(rel, r);
		}
	}
	double median = 0;
	if (rel->len) {
		qsort(rel->data, rel->len, sizeof(double), dcmp);
		median = g_array_index(rel, double, rel->len / 2);
		if (rel->len % 2 == 0)
			median = (median + g_array_index(rel, double, rel->len / 2 - 1)) / 2;
	}
	g_array_free(rel, TRUE);
	g_autofree char *pm = lh_format_ns((double)f.blocks[0].makespan);
	g_autofree char *mm = lh_format_ns((double)f.blocks[1].makespan);
	g_autofree char *wds = lh_format_ns(worst_d);
	g_autofree char *wss = lh_format_ns(worst_s);
	double mk_err = f.blocks[0].makespan > 0
	                    ? 100.0 * (double)(f.blocks[1].makespan - f.blocks[0].makespan) /
	                          (double)f.blocks[0].makespan
	                    : 0;
	f.subtitle[0] = g_strdup_printf("makespan predicted %s, measured %s (%+.1f %%)  \u00b7  "
	                                "%u ops in both",
	                                pm, mm, mk_err, n_both);
	if (n_both)
		f.subtitle[1] = g_strdup_printf(
		    "op duration error: median %.1f %%, worst '%s' %s%s  \u00b7  start shift: "
		    "worst '%s' %s%s",
		    100 * median, lh_graph_op(g, wd)->name, worst_d > 0 ? "+" : "", wds,
		    lh_graph_op(g, ws)->name, worst_s > 0 ? "+" : "", wss);
	f.n_err = 2;
	f.err[0].label = g_strdup("duration error\nmeasured \u2212 predicted");
	f.err[1].label = g_strdup("start shift\nmeasured \u2212 predicted");
	g_autofree char *who = plan_desc(plan);
	f.title = g_strdup_printf("%s on %s, scheduler %s: predicted vs measured", lh_graph_name(g),
	                          hw->name, who);
	fig_measure(&f);
	err_panel(&f, &f.err[0], g, predicted, measured, FALSE);
	err_panel(&f, &f.err[1], g, predicted, measured, TRUE);
	gboolean ok = lh__viz_write(path, f.w, f.h, fig_draw, &f, error);
	fig_clear(&f);
	return ok;
}
