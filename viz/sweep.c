/* lhsim viz — sweep plots: makespan and peak device memory against a parameter's value. */
#include "viz/viz-private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
	S_WIDTH = 1200,
	S_MARGIN = 20,
	S_RIGHT = 40,
	PANEL_H = 260,
	PANEL_GAP = 46,
	MARKER_R = 4,
};

static const guint32 INK = 0x222222, INK_SOFT = 0x666666, GRID = 0xe3e3e3, FRAME = 0xbdbdbd,
                     CAPACITY = 0xd62728;

typedef struct {
	const LhSweepPoint *pts;
	const LhSweepSpread *spread; /* NULL or n */
	guint n;
	const char *title, *param;
	double capacity;
	/* Series and x positions. */
	GPtrArray *scheds; /* of const char *, first-seen order */
	GPtrArray *values; /* of const char *: first-seen, or numeric order */
	gboolean numeric, integers;
	double *vx; /* values->len: x in data units (numeric) or the index */
	/* Geometry. */
	double w, h, x0, x1, y_legend, y_panel[2], y_axis;
	LhAxis ax;
	LhTicks xt;
	double lo[2], hi[2]; /* panel data ranges */
	gboolean cap_on_scale;
	double bound;    /* > 0: one bound shared by every point */
	guint n_failed;  /* points that failed: drawn as a cross on the panel's top edge */
	double y_failed; /* the line that explains the crosses, under the legend */
	LhRgb *rgb;
	const char **names;
} Plot;

static gboolean parse_num(const char *s, double *out)
{
	char *end = NULL;
	if (!s || !*s)
		return FALSE;
	*out = g_ascii_strtod(s, &end);
	return end && *end == '\0' && isfinite(*out);
}

static guint index_of(GPtrArray *a, const char *s)
{
	for (guint i = 0; i < a->len; i++)
		if (!strcmp(g_ptr_array_index(a, i), s))
			return i;
	return G_MAXUINT;
}

static int num_cmp(gconstpointer a, gconstpointer b)
{
	double x = g_ascii_strtod(*(const char *const *)a, NULL);
	double y = g_ascii_strtod(*(const char *const *)b, NULL);
	return (x > y) - (x < y);
}

static double point_val(const LhSweepPoint *p, int panel)
{
	return panel == 0 ? (double)p->makespan : (double)p->peak_device;
}

static void plot_prepare(Plot *P)
{
	P->scheds = g_ptr_array_new();
	P->values = g_ptr_array_new();
	P->numeric = TRUE;
	P->integers = TRUE;
	for (guint i = 0; i < P->n; i++) {
		const LhSweepPoint *p = &P->pts[i];
		if (index_of(P->scheds, p->scheduler) == G_MAXUINT)
			g_ptr_array_add(P->scheds, (gpointer)p->scheduler);
		if (index_of(P->values, p->value) == G_MAXUINT)
			g_ptr_array_add(P->values, (gpointer)p->value);
		double v;
		if (!parse_num(p->value, &v))
			P->numeric = P->integers = FALSE;
		else if (v != floor(v))
			P->integers = FALSE;
	}
	if (P->numeric)
		g_ptr_array_sort(P->values, num_cmp);
	P->vx = g_new(double, MAX(P->values->len, 1));
	for (guint i = 0; i < P->values->len; i++)
		P->vx[i] = P->numeric ? g_ascii_strtod(g_ptr_array_index(P->values, i), NULL) : i;
	P->rgb = g_new(LhRgb, MAX(P->scheds->len, 1));
	P->names = g_new(const char *, MAX(P->scheds->len, 1));
	for (guint i = 0; i < P->scheds->len; i++) {
		P->rgb[i] = lh__series_rgb(i);
		P->names[i] = g_ptr_array_index(P->scheds, i);
	}

	/* Data ranges, with the shared lower bound and the capacity when they are close. */
	double bound = -1;
	gboolean same_bound = TRUE;
	for (int k = 0; k < 2; k++) {
		P->lo[k] = INFINITY;
		P->hi[k] = -INFINITY;
	}
	for (guint i = 0; i < P->n; i++) {
		const LhSweepPoint *p = &P->pts[i];
		if (!p->ok) {
			P->n_failed++;
			continue;
		}
		for (int k = 0; k < 2; k++) {
			double sd = P->spread
			                ? (k == 0 ? P->spread[i].makespan_sd : P->spread[i].peak_sd)
			                : 0;
			P->lo[k] = MIN(P->lo[k], point_val(p, k) - MAX(sd, 0));
			P->hi[k] = MAX(P->hi[k], point_val(p, k) + MAX(sd, 0));
		}
		if (bound < 0)
			bound = p->bound;
		else if (p->bound != bound)
			same_bound = FALSE;
	}
	P->bound = same_bound && bound > 0 ? bound : 0;
	if (P->bound > 0 && P->lo[0] <= P->hi[0])
		P->lo[0] = MIN(P->lo[0], P->bound);
	P->cap_on_scale = P->capacity > 0 && P->hi[1] >= 0 && P->capacity <= 1.5 * P->hi[1];
	if (P->cap_on_scale)
		P->hi[1] = MAX(P->hi[1], P->capacity);
	for (int k = 0; k < 2; k++) {
		if (P->lo[k] > P->hi[k]) { /* no point succeeded */
			P->lo[k] = 0;
			P->hi[k] = 1;
		}
		double span = P->hi[k] - P->lo[k];
		double pad = span > 0 ? span * 0.08 : MAX(fabs(P->hi[k]) * 0.05, 1);
		P->lo[k] = MAX(0, P->lo[k] - pad);
		P->hi[k] += pad;
	}
}

static void plot_clear(Plot *P)
{
	g_ptr_array_free(P->scheds, TRUE);
	g_ptr_array_free(P->values, TRUE);
	g_free(P->vx);
	g_free(P->rgb);
	g_free(P->names);
}

static void yticks(const Plot *P, int k, LhTicks *tk)
{
	lh_ticks(P->lo[k], P->hi[k], 7, k == 0 ? LH_TICKS_TIME : LH_TICKS_BYTES, FALSE, tk);
}

static void plot_layout(Plot *P, LhPen *p)
{
	double gw = 0;
	char buf[64];
	for (int k = 0; k < 2; k++) {
		LhTicks tk;
		yticks(P, k, &tk);
		for (guint i = 0; i < tk.n; i++)
			gw = MAX(gw, lh__text_w(p, LH__FONT_LABEL,
			                        lh_tick_label(&tk, i, buf, sizeof buf), -1));
	}
	P->w = S_WIDTH;
	P->x0 = S_MARGIN + gw + 10;
	P->x1 = P->w - S_RIGHT;
	double y = S_MARGIN + p->font_h[LH__FONT_TITLE] + 4 + p->font_h[LH__FONT_SUBTITLE] + 10;
	P->y_legend = y;
	y += lh__legend(p, S_MARGIN, y, P->w - S_MARGIN, P->names, P->rgb, P->scheds->len, TRUE);
	P->y_failed = y;
	if (P->n_failed)
		y += p->font_h[LH__FONT_LABEL] + 4;
	for (int k = 0; k < 2; k++) {
		y += 8 + p->font_h[LH__FONT_HEADER] + 6;
		P->y_panel[k] = y;
		y += PANEL_H;
		if (k == 0)
			y +=
			    p->font_h[LH__FONT_LABEL] + 12; /* x labels under the first panel too */
	}
	P->y_axis = y;
	y += 6 + p->font_h[LH__FONT_LABEL] + 6 + p->font_h[LH__FONT_HEADER] + S_MARGIN;
	P->h = y;

	/* The x axis: data range with half a step of room, or categories. */
	guint nv = P->values->len;
	double lo = P->vx[0], hi = P->vx[MAX(nv, 1) - 1];
	if (!P->numeric || nv < 2 || hi <= lo) {
		double pad = P->numeric && nv >= 2 ? 0 : 0.5;
		if (P->numeric && hi <= lo)
			pad = MAX(fabs(lo) * 0.1, 1);
		lo -= pad;
		hi += pad;
	} else {
		double pad = (hi - lo) * 0.04;
		lo -= pad;
		hi += pad;
	}
	P->ax = (LhAxis){lo, hi, P->x0 + 10, P->x1 - 10};
	if (P->numeric)
		lh_ticks(lo, hi, MAX(2, (guint)((P->x1 - P->x0) / 80)), LH_TICKS_PLAIN, P->integers,
		         &P->xt);
}

static void x_labels(Plot *P, LhPen *p, double y)
{
	cairo_t *cr = p->cr;
	char buf[64];
	lh__rgb(cr, lh__rgb_hex(INK));
	cairo_set_line_width(cr, 1);
	if (P->numeric) {
		for (guint i = 0; i < P->xt.n; i++) {
			double x = round(lh_axis_to_px(&P->ax, P->xt.first + i * P->xt.step)) + 0.5;
			cairo_move_to(cr, x, y);
			cairo_line_to(cr, x, y + 5);
			cairo_stroke(cr);
			lh__text(p, LH__FONT_LABEL, x, y + 6, 0.5,
			         lh_tick_label(&P->xt, i, buf, sizeof buf), -1, lh__rgb_hex(INK));
		}
		return;
	}
	/* Categories: every label, or every k-th when they would touch. */
	guint nv = P->values->len;
	double wmax = 0;
	for (guint i = 0; i < nv; i++)
		wmax =
		    MAX(wmax, lh__text_w(p, LH__FONT_LABEL, g_ptr_array_index(P->values, i), -1));
	double slot = nv > 1 ? (lh_axis_to_px(&P->ax, 1) - lh_axis_to_px(&P->ax, 0)) : 1e9;
	guint every = MAX(1, (guint)ceil((wmax + 12) / slot));
	for (guint i = 0; i < nv; i += every) {
		double x = round(lh_axis_to_px(&P->ax, (double)i)) + 0.5;
		cairo_move_to(cr, x, y);
		cairo_line_to(cr, x, y + 5);
		cairo_stroke(cr);
		lh__text(p, LH__FONT_LABEL, x, y + 6, 0.5, g_ptr_array_index(P->values, i), -1,
		         lh__rgb_hex(INK));
	}
}

static double point_x(const Plot *P, const LhSweepPoint *pt)
{
	guint vi = index_of(P->values, pt->value);
	return lh_axis_to_px(&P->ax, P->vx[vi]);
}

static void draw_cross(cairo_t *cr, LhRgb c, double x, double y)
{
	cairo_set_source_rgb(cr, c.r, c.g, c.b);
	cairo_set_line_width(cr, 2);
	cairo_move_to(cr, x - 4, y - 4);
	cairo_line_to(cr, x + 4, y + 4);
	cairo_move_to(cr, x + 4, y - 4);
	cairo_line_to(cr, x - 4, y + 4);
	cairo_stroke(cr);
}

static void draw_panel(Plot *P, LhPen *p, int k)
{
	cairo_t *cr = p->cr;
	double y0 = P->y_panel[k], y1 = y0 + PANEL_H;
	LhAxis ay = {P->lo[k], P->hi[k], y1, y0};
	static const char *const head[2] = {"makespan", "peak device memory"};
	lh__text(p, LH__FONT_HEADER, P->x0, y0 - p->font_h[LH__FONT_HEADER] - 6, 0, head[k], -1,
	         lh__rgb_hex(0x111111));
	LhTicks tk;
	yticks(P, k, &tk);
	char buf[64];
	for (guint i = 0; i < tk.n; i++) {
		double v = tk.first + i * tk.step;
		double y = round(lh_axis_to_px(&ay, v)) + 0.5;
		lh__rgb(cr, lh__rgb_hex(GRID));
		cairo_set_line_width(cr, 1);
		cairo_move_to(cr, P->x0, y);
		cairo_line_to(cr, P->x1, y);
		cairo_stroke(cr);
		lh__text(p, LH__FONT_LABEL, P->x0 - 6, y - p->font_h[LH__FONT_LABEL] / 2, 1,
		         lh_tick_label(&tk, i, buf, sizeof buf), -1, lh__rgb_hex(INK_SOFT));
	}
	if (P->numeric)
		for (guint i = 0; i < P->xt.n; i++) {
			double x = round(lh_axis_to_px(&P->ax, P->xt.first + i * P->xt.step)) + 0.5;
			lh__rgb(cr, lh__rgb_hex(GRID));
			cairo_move_to(cr, x, y0);
			cairo_line_to(cr, x, y1);
			cairo_stroke(cr);
		}

	/* Reference line: the lower bound, or the device's capacity. */
	double ref = k == 0 ? P->bound : (P->cap_on_scale ? P->capacity : 0);
	if (ref > 0) {
		double y = round(lh_axis_to_px(&ay, ref)) + 0.5;
		static const double d[] = {6, 4};
		LhRgb c = lh__rgb_hex(k == 0 ? INK_SOFT : CAPACITY);
		lh__rgb(cr, c);
		cairo_set_line_width(cr, 1.5);
		cairo_set_dash(cr, d, 2, 0);
		cairo_move_to(cr, P->x0, y);
		cairo_line_to(cr, P->x1, y);
		cairo_stroke(cr);
		cairo_set_dash(cr, NULL, 0, 0);
		g_autofree char *v = k == 0 ? lh_format_ns(ref) : lh_format_bytes(ref);
		g_autofree char *t =
		    g_strdup_printf("%s %s", k == 0 ? "lower bound" : "capacity", v);
		/* Above the line when there is room, else below it. */
		double ty = y - p->font_h[LH__FONT_SMALL] - 2;
		if (ty < y0 + 2)
			ty = y + 3;
		lh__text(p, LH__FONT_SMALL, P->x1 - 6, ty, 1, t, -1, c);
	} else if (k == 1 && P->capacity > 0) {
		/* Above the panel, where no point can hide it. */
		g_autofree char *v = lh_format_bytes(P->capacity);
		g_autofree char *t = g_strdup_printf("capacity %s (off scale)", v);
		lh__text(p, LH__FONT_SMALL, P->x1, y0 - p->font_h[LH__FONT_SMALL] - 4, 1, t, -1,
		         lh__rgb_hex(CAPACITY));
	}

	/* One line per scheduler, broken where a point failed, markers on top. */
	cairo_new_path(cr);
	for (guint s = 0; s < P->scheds->len; s++) {
		const char *name = g_ptr_array_index(P->scheds, s);
		GArray *xs = g_array_new(FALSE, FALSE, sizeof(double));
		GArray *ys = g_array_new(FALSE, FALSE, sizeof(double));
		GPtrArray *pps = g_ptr_array_new(); /* the point drawn at each x */
		/* In x order: walk the values and find this scheduler's point for each. */
		for (guint v = 0; v < P->values->len; v++) {
			const char *val = g_ptr_array_index(P->values, v);
			const LhSweepPoint *pt = NULL;
			for (guint i = 0; i < P->n && !pt; i++)
				if (!strcmp(P->pts[i].scheduler, name) &&
				    !strcmp(P->pts[i].value, val))
					pt = &P->pts[i];
			double x = pt ? point_x(P, pt) : NAN;
			double y = pt && pt->ok ? lh_axis_to_px(&ay, point_val(pt, k)) : NAN;
			if (!pt)
				continue;
			g_array_append_val(xs, x);
			g_array_append_val(ys, y);
			g_ptr_array_add(pps, (gpointer)pt);
		}
		lh__rgb(cr, P->rgb[s]);
		cairo_set_line_width(cr, 2.2);
		gboolean pen_down = FALSE;
		for (guint i = 0; i < xs->len; i++) {
			double x = g_array_index(xs, double, i), y = g_array_index(ys, double, i);
			/* Categories have no order to draw a line along: markers only. */
			if (isnan(y) || !P->numeric) {
				pen_down = FALSE;
				continue;
			}
			if (pen_down)
				cairo_line_to(cr, x, y);
			else
				cairo_move_to(cr, x, y);
			pen_down = TRUE;
		}
		cairo_stroke(cr);
		for (guint i = 0; i < xs->len; i++) {
			double x = g_array_index(xs, double, i), y = g_array_index(ys, double, i);
			if (isnan(y)) {
				/* A failed point has no value: a cross on the panel's top edge,
				 * away from the data (the floor would read as a result below the
				 * bound), explained under the legend. */
				draw_cross(cr, P->rgb[s], x, y0 + 8);
				continue;
			}
			const LhSweepPoint *pt = g_ptr_array_index(pps, i);
			const LhSweepSpread *spr = P->spread ? &P->spread[pt - P->pts] : NULL;
			double sd = spr ? (k == 0 ? spr->makespan_sd : spr->peak_sd) : 0;
			if (sd > 0) {
				/* The spread over seeds: +- one standard deviation, with caps. */
				double ya = lh_axis_to_px(&ay, point_val(pt, k) - sd);
				double yb = lh_axis_to_px(&ay, point_val(pt, k) + sd);
				lh__rgb(cr, P->rgb[s]);
				cairo_set_line_width(cr, 1.5);
				cairo_move_to(cr, x, ya);
				cairo_line_to(cr, x, yb);
				cairo_move_to(cr, x - 5, ya);
				cairo_line_to(cr, x + 5, ya);
				cairo_move_to(cr, x - 5, yb);
				cairo_line_to(cr, x + 5, yb);
				cairo_stroke(cr);
			}
			lh__marker(cr, s, x, y, P->numeric ? MARKER_R : 1.5 * MARKER_R);
			lh__rgb(cr, P->rgb[s]);
			cairo_fill_preserve(cr);
			cairo_set_source_rgb(cr, 1, 1, 1);
			cairo_set_line_width(cr, 1);
			cairo_stroke(cr);
		}
		g_array_free(xs, TRUE);
		g_array_free(ys, TRUE);
		g_ptr_array_free(pps, TRUE);
	}
	lh__rgb(cr, lh__rgb_hex(FRAME));
	cairo_set_line_width(cr, 1);
	cairo_rectangle(cr, P->x0 - 0.5, y0 - 0.5, P->x1 - P->x0 + 1, PANEL_H + 1);
	cairo_stroke(cr);
	x_labels(P, p, y1);
}

static void plot_draw(LhPen *p, gpointer data)
{
	Plot *P = data;
	double avail = P->w - 2 * S_MARGIN;
	lh__text_fit(p, LH__FONT_TITLE, S_MARGIN, S_MARGIN, avail, 1, P->title,
	             lh__rgb_hex(0x111111));
	gboolean spread = FALSE;
	for (guint i = 0; P->spread && i < P->n; i++)
		spread = spread || P->spread[i].makespan_sd > 0 || P->spread[i].peak_sd > 0;
	g_autofree char *sub = g_strdup_printf(
	    "makespan and peak device memory against %s; %u scheduler%s, %u value%s%s%s", P->param,
	    P->scheds->len, P->scheds->len == 1 ? "" : "s", P->values->len,
	    P->values->len == 1 ? "" : "s", P->numeric ? "" : " (categories)",
	    spread ? "; mean over seeds, bars +- one standard deviation" : "");
	lh__text_fit(p, LH__FONT_SUBTITLE, S_MARGIN, S_MARGIN + p->font_h[LH__FONT_TITLE] + 4,
	             avail, 1, sub, lh__rgb_hex(0x444444));
	lh__legend(p, S_MARGIN, P->y_legend, P->w - S_MARGIN, P->names, P->rgb, P->scheds->len,
	           TRUE);
	if (P->n_failed) {
		double mid = P->y_failed + p->font_h[LH__FONT_LABEL] / 2;
		draw_cross(p->cr, lh__rgb_hex(INK_SOFT), S_MARGIN + 13, mid);
		g_autofree char *t = g_strdup_printf(
		    "%u failed point%s, drawn on the top edge of each panel: no value (the table "
		    "or CSV says why)",
		    P->n_failed, P->n_failed == 1 ? "" : "s");
		lh__text(p, LH__FONT_LABEL, S_MARGIN + 32, P->y_failed, 0, t, -1,
		         lh__rgb_hex(INK_SOFT));
	}
	for (int k = 0; k < 2; k++)
		draw_panel(P, p, k);
	lh__text(p, LH__FONT_HEADER, (P->x0 + P->x1) / 2,
	         P->y_axis + 6 + p->font_h[LH__FONT_LABEL] + 6, 0.5, P->param, -1,
	         lh__rgb_hex(INK));
}

gboolean lh_viz_sweep(const char *path, const char *title, const char *param,
                      const LhSweepPoint *points, guint n, double capacity_bytes, GError **error)
{
	return lh_viz_sweep_spread(path, title, param, points, NULL, n, capacity_bytes, error);
}

gboolean lh_viz_sweep_spread(const char *path, const char *title, const char *param,
                             const LhSweepPoint *points, const LhSweepSpread *spread, guint n,
                             double capacity_bytes, GError **error)
{
	g_return_val_if_fail(path && title && param && (points || !n), FALSE);
	if (!lh__viz_check_path(path, error))
		return FALSE;
	if (n == 0) {
		g_set_error(error, LH_VIZ_ERROR, LH_VIZ_ERROR_INVALID, "%s: a sweep with no points",
		            path);
		return FALSE;
	}
	Plot P = {.pts = points,
	          .spread = spread,
	          .n = n,
	          .title = title,
	          .param = param,
	          .capacity = capacity_bytes};
	plot_prepare(&P);
	LhPen pen;
	lh__pen_init(&pen, NULL);
	plot_layout(&P, &pen);
	lh__pen_clear(&pen);
	gboolean ok = lh__viz_write(path, P.w, P.h, plot_draw, &P, error);
	plot_clear(&P);
	return ok;
}

/* ---- heat maps ---- */

enum { H_CELL_MAX_W = 90, H_CELL_MIN_W = 14, H_CELL_H = 28, H_BAR_W = 18, H_PANEL_GAP = 30 };

typedef struct {
	const char *title, *metric, *x_name, *y_name;
	LhTickUnit unit;
	const char *const *xv, *const *yv;
	guint nx, ny;
	const LhHeatCell *cells;
	guint n;
	GPtrArray *panels; /* of const char *, first-seen order */
	double lo, hi;     /* colour scale */
	guint n_failed;
	/* Geometry. */
	double w, h, x0, cw, ch, y_top, panel_h, bar_x, ylab_w;
	guint x_every;
} Heat;

/* A perceptually ordered scale (viridis at five stops), @t in [0, 1]. */
static LhRgb heat_rgb(double t)
{
	static const guint32 stops[] = {0x440154, 0x3b528b, 0x21918c, 0x5ec962, 0xfde725};
	t = CLAMP(t, 0, 1) * (G_N_ELEMENTS(stops) - 1);
	guint i = MIN((guint)t, G_N_ELEMENTS(stops) - 2);
	double f = t - i;
	LhRgb a = lh__rgb_hex(stops[i]), b = lh__rgb_hex(stops[i + 1]);
	return (LhRgb){a.r + f * (b.r - a.r), a.g + f * (b.g - a.g), a.b + f * (b.b - a.b)};
}

static char *heat_format(const Heat *H, double v)
{
	if (H->unit == LH_TICKS_BYTES)
		return lh_format_bytes(v);
	if (H->unit == LH_TICKS_TIME)
		return lh_format_ns(v);
	return g_strdup_printf("%.4g", v);
}

static void heat_prepare(Heat *H)
{
	H->panels = g_ptr_array_new();
	H->lo = INFINITY;
	H->hi = -INFINITY;
	for (guint i = 0; i < H->n; i++) {
		const LhHeatCell *c = &H->cells[i];
		if (index_of(H->panels, c->panel) == G_MAXUINT)
			g_ptr_array_add(H->panels, (gpointer)c->panel);
		if (!c->ok) {
			H->n_failed++;
			continue;
		}
		H->lo = MIN(H->lo, c->value);
		H->hi = MAX(H->hi, c->value);
	}
	if (H->lo > H->hi) {
		H->lo = 0;
		H->hi = 1;
	}
	if (H->hi <= H->lo)
		H->hi = H->lo + MAX(fabs(H->lo) * 0.01, 1);
}

static void heat_layout(Heat *H, LhPen *p)
{
	H->ylab_w = lh__text_w(p, LH__FONT_LABEL, H->y_name, -1);
	for (guint i = 0; i < H->ny; i++)
		H->ylab_w = MAX(H->ylab_w, lh__text_w(p, LH__FONT_LABEL, H->yv[i], -1));
	H->w = S_WIDTH;
	H->x0 = S_MARGIN + H->ylab_w + 10;
	double bar_room = 30 + H_BAR_W + 90;
	double avail = H->w - H->x0 - S_RIGHT - bar_room;
	H->cw = CLAMP(floor(avail / MAX(H->nx, 1)), H_CELL_MIN_W, H_CELL_MAX_W);
	if (H->cw * H->nx > avail) /* many columns: widen the picture */
		H->w = H->x0 + H->cw * H->nx + bar_room + S_RIGHT;
	H->ch = H->ny > 30 ? 16 : H_CELL_H;
	double xw = 0;
	for (guint i = 0; i < H->nx; i++)
		xw = MAX(xw, lh__text_w(p, LH__FONT_LABEL, H->xv[i], -1));
	H->x_every = MAX(1, (guint)ceil((xw + 8) / H->cw));
	H->bar_x = H->w - S_RIGHT - 90 - H_BAR_W;
	H->y_top = S_MARGIN + p->font_h[LH__FONT_TITLE] + 4 + p->font_h[LH__FONT_SUBTITLE] + 10;
	if (H->n_failed)
		H->y_top += p->font_h[LH__FONT_LABEL] + 4;
	H->panel_h = p->font_h[LH__FONT_HEADER] + 6 + H->ch * H->ny + 6 +
	             p->font_h[LH__FONT_LABEL] + 4 + p->font_h[LH__FONT_HEADER] + H_PANEL_GAP;
	H->h = H->y_top + H->panels->len * H->panel_h + S_MARGIN;
	H->h = MAX(H->h, H->y_top + 260);
}

static void heat_cross(cairo_t *cr, double x, double y, double w, double h)
{
	lh__rgb(cr, lh__rgb_hex(0x888888));
	cairo_set_line_width(cr, 1.2);
	cairo_move_to(cr, x + 3, y + 3);
	cairo_line_to(cr, x + w - 3, y + h - 3);
	cairo_move_to(cr, x + w - 3, y + 3);
	cairo_line_to(cr, x + 3, y + h - 3);
	cairo_stroke(cr);
}

static void heat_panel(Heat *H, LhPen *p, guint pi)
{
	cairo_t *cr = p->cr;
	const char *name = g_ptr_array_index(H->panels, pi);
	double y = H->y_top + pi * H->panel_h;
	lh__text(p, LH__FONT_HEADER, H->x0, y, 0, name, -1, lh__rgb_hex(0x111111));
	y += p->font_h[LH__FONT_HEADER] + 6;
	double gy = y;
	/* The best (lowest) successful cell of this map. */
	const LhHeatCell *best = NULL;
	for (guint i = 0; i < H->n; i++) {
		const LhHeatCell *c = &H->cells[i];
		if (strcmp(c->panel, name) != 0 || c->x >= H->nx || c->y >= H->ny)
			continue;
		double cx = H->x0 + c->x * H->cw, cy = gy + c->y * H->ch;
		if (!c->ok) {
			lh__rgb(cr, lh__rgb_hex(0xeeeeee));
			cairo_rectangle(cr, cx, cy, H->cw, H->ch);
			cairo_fill(cr);
			heat_cross(cr, cx, cy, H->cw, H->ch);
			continue;
		}
		if (!best || c->value < best->value)
			best = c;
		LhRgb col = heat_rgb((c->value - H->lo) / (H->hi - H->lo));
		lh__rgb(cr, col);
		cairo_rectangle(cr, cx, cy, H->cw, H->ch);
		cairo_fill(cr);
		g_autofree char *t = heat_format(H, c->value);
		if (lh__text_w(p, LH__FONT_SMALL, t, -1) + 6 <= H->cw)
			lh__text(p, LH__FONT_SMALL, cx + H->cw / 2,
			         cy + (H->ch - p->font_h[LH__FONT_SMALL]) / 2, 0.5, t, -1,
			         lh__text_on(col));
	}
	lh__rgb(cr, lh__rgb_hex(FRAME));
	cairo_set_line_width(cr, 1);
	cairo_rectangle(cr, H->x0 - 0.5, gy - 0.5, H->cw * H->nx + 1, H->ch * H->ny + 1);
	cairo_stroke(cr);
	if (best) {
		double cx = H->x0 + best->x * H->cw, cy = gy + best->y * H->ch;
		cairo_set_source_rgb(cr, 0, 0, 0);
		cairo_set_line_width(cr, 3);
		cairo_rectangle(cr, cx + 1.5, cy + 1.5, H->cw - 3, H->ch - 3);
		cairo_stroke(cr);
		cairo_set_source_rgb(cr, 1, 1, 1);
		cairo_set_line_width(cr, 1);
		cairo_rectangle(cr, cx + 3.5, cy + 3.5, H->cw - 7, H->ch - 7);
		cairo_stroke(cr);
		g_autofree char *v = heat_format(H, best->value);
		g_autofree char *t = g_strdup_printf("best: %s = %s, %s = %s: %s", H->x_name,
		                                     H->xv[best->x], H->y_name, H->yv[best->y], v);
		double tx = H->x0 + lh__text_w(p, LH__FONT_HEADER, name, -1) + 16;
		lh__text_fit(p, LH__FONT_LABEL, tx, gy - p->font_h[LH__FONT_HEADER] - 6,
		             H->bar_x - 20 - tx, 8, t, lh__rgb_hex(INK_SOFT));
	}
	/* Row labels, column labels, axis names. */
	for (guint j = 0; j < H->ny; j++)
		lh__text(p, LH__FONT_LABEL, H->x0 - 6,
		         gy + j * H->ch + (H->ch - p->font_h[LH__FONT_LABEL]) / 2, 1, H->yv[j], -1,
		         lh__rgb_hex(INK));
	lh__text(p, LH__FONT_LABEL, H->x0 - 6, gy - p->font_h[LH__FONT_LABEL] - 4, 1, H->y_name, -1,
	         lh__rgb_hex(INK_SOFT));
	double ly = gy + H->ch * H->ny + 4;
	for (guint i = 0; i < H->nx; i += H->x_every)
		lh__text(p, LH__FONT_LABEL, H->x0 + (i + 0.5) * H->cw, ly, 0.5, H->xv[i], -1,
		         lh__rgb_hex(INK));
	lh__text(p, LH__FONT_HEADER, H->x0 + H->cw * H->nx / 2, ly + p->font_h[LH__FONT_LABEL] + 2,
	         0.5, H->x_name, -1, lh__rgb_hex(INK));
}

static void heat_bar(Heat *H, LhPen *p)
{
	cairo_t *cr = p->cr;
	double y0 = H->y_top + p->font_h[LH__FONT_HEADER] + 6;
	double bh = MAX(MIN(H->ch * H->ny, 400), 160);
	lh__text(p, LH__FONT_LABEL, H->bar_x, y0 - p->font_h[LH__FONT_LABEL] - 4, 0, H->metric, -1,
	         lh__rgb_hex(INK));
	/* Low (best) at the bottom, high at the top. */
	for (int k = 0; k < (int)bh; k++) {
		lh__rgb(cr, heat_rgb(1.0 - (k + 0.5) / bh));
		cairo_rectangle(cr, H->bar_x, y0 + k, H_BAR_W, 1.2);
		cairo_fill(cr);
	}
	lh__rgb(cr, lh__rgb_hex(FRAME));
	cairo_set_line_width(cr, 1);
	cairo_rectangle(cr, H->bar_x - 0.5, y0 - 0.5, H_BAR_W + 1, bh + 1);
	cairo_stroke(cr);
	LhAxis a = {H->lo, H->hi, y0 + bh, y0};
	LhTicks tk;
	lh_ticks(H->lo, H->hi, 6, H->unit, FALSE, &tk);
	char buf[64];
	for (guint i = 0; i < tk.n; i++) {
		double v = tk.first + i * tk.step;
		double y = round(lh_axis_to_px(&a, v)) + 0.5;
		lh__rgb(cr, lh__rgb_hex(INK));
		cairo_move_to(cr, H->bar_x + H_BAR_W, y);
		cairo_line_to(cr, H->bar_x + H_BAR_W + 4, y);
		cairo_stroke(cr);
		lh__text(p, LH__FONT_LABEL, H->bar_x + H_BAR_W + 7,
		         y - p->font_h[LH__FONT_LABEL] / 2, 0,
		         lh_tick_label(&tk, i, buf, sizeof buf), -1, lh__rgb_hex(INK_SOFT));
	}
	/* The ends, when no tick marks them. */
	g_autofree char *lo = heat_format(H, H->lo), *hi = heat_format(H, H->hi);
	g_autofree char *tl = g_strdup_printf("min %s", lo), *th = g_strdup_printf("max %s", hi);
	lh__text(p, LH__FONT_SMALL, H->bar_x, y0 + bh + 4, 0, tl, -1, lh__rgb_hex(INK_SOFT));
	lh__text(p, LH__FONT_SMALL, H->bar_x, y0 + bh + 4 + p->font_h[LH__FONT_SMALL], 0, th, -1,
	         lh__rgb_hex(INK_SOFT));
}

static void heat_draw(LhPen *p, gpointer data)
{
	Heat *H = data;
	double avail = H->w - 2 * S_MARGIN;
	lh__text_fit(p, LH__FONT_TITLE, S_MARGIN, S_MARGIN, avail, 1, H->title,
	             lh__rgb_hex(0x111111));
	g_autofree char *sub = g_strdup_printf(
	    "%s over %s (%u) and %s (%u); lower is better, the best cell of each map outlined",
	    H->metric, H->x_name, H->nx, H->y_name, H->ny);
	lh__text_fit(p, LH__FONT_SUBTITLE, S_MARGIN, S_MARGIN + p->font_h[LH__FONT_TITLE] + 4,
	             avail, 1, sub, lh__rgb_hex(0x444444));
	if (H->n_failed) {
		double y = H->y_top - p->font_h[LH__FONT_LABEL] - 4;
		heat_cross(p->cr, S_MARGIN, y, 16, p->font_h[LH__FONT_LABEL]);
		g_autofree char *t = g_strdup_printf(
		    "%u failed point%s, grey and crossed: no value (the table or CSV says why)",
		    H->n_failed, H->n_failed == 1 ? "" : "s");
		lh__text(p, LH__FONT_LABEL, S_MARGIN + 22, y, 0, t, -1, lh__rgb_hex(INK_SOFT));
	}
	for (guint i = 0; i < H->panels->len; i++)
		heat_panel(H, p, i);
	heat_bar(H, p);
}

gboolean lh_viz_heatmap(const char *path, const char *title, const char *metric, LhTickUnit unit,
                        const char *x_name, const char *const *x_values, guint nx,
                        const char *y_name, const char *const *y_values, guint ny,
                        const LhHeatCell *cells, guint n, GError **error)
{
	g_return_val_if_fail(path && title && metric && x_name && y_name, FALSE);
	g_return_val_if_fail((x_values || !nx) && (y_values || !ny) && (cells || !n), FALSE);
	if (!lh__viz_check_path(path, error))
		return FALSE;
	if (n == 0 || nx == 0 || ny == 0) {
		g_set_error(error, LH_VIZ_ERROR, LH_VIZ_ERROR_INVALID,
		            "%s: a heat map with no cells", path);
		return FALSE;
	}
	Heat H = {.title = title,
	          .metric = metric,
	          .x_name = x_name,
	          .y_name = y_name,
	          .unit = unit,
	          .xv = x_values,
	          .yv = y_values,
	          .nx = nx,
	          .ny = ny,
	          .cells = cells,
	          .n = n};
	heat_prepare(&H);
	LhPen pen;
	lh__pen_init(&pen, NULL);
	heat_layout(&H, &pen);
	lh__pen_clear(&pen);
	gboolean ok = lh__viz_write(path, H.w, H.h, heat_draw, &H, error);
	g_ptr_array_free(H.panels, TRUE);
	return ok;
}
