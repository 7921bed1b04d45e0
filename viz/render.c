/* lhsim viz — shared drawing helpers: fonts, colours, legends and atomic picture output. */
#include <stdio.h>
#include <unistd.h>
#include "viz/viz-private.h"

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <math.h>
#include <string.h>
#include "sim/util.h"

/* The quark's name is a string with dashes, which clang-format would space. */
/* clang-format off */
G_DEFINE_QUARK(lh-viz-error-quark, lh_viz_error)
/* clang-format on */

/* ---- Pen ---- */

static const struct {
	double px;
	gboolean bold;
} font_spec[LH__FONT_N] = {
    [LH__FONT_TITLE] = {20, TRUE},    [LH__FONT_SUBTITLE] = {14, FALSE},
    [LH__FONT_HEADER] = {15, TRUE},   [LH__FONT_LABEL] = {13, FALSE},
    [LH__FONT_SMALL] = {11.5, FALSE},
};

void lh__pen_init(LhPen *p, cairo_t *cr)
{
	memset(p, 0, sizeof *p);
	if (cr) {
		p->cr = cairo_reference(cr);
	} else {
		cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 4, 4);
		p->cr = cairo_create(s);
		cairo_surface_destroy(s);
	}
	/* A font map of our own, freed with the pen: pango's default one lives as long as the
	 * thread and holds fontconfig patterns that leak checkers report at exit. */
	p->fontmap = pango_cairo_font_map_new();
	PangoContext *pc = pango_font_map_create_context(p->fontmap);
	pango_cairo_update_context(p->cr, pc);
	p->layout = pango_layout_new(pc);
	g_object_unref(pc);
	/* Metrics without hinting: the same widths on every surface, so a layout sized with a
	 * measuring pen fits when drawn on PNG, SVG or PDF. */
	cairo_font_options_t *fo = cairo_font_options_create();
	cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_OFF);
	cairo_font_options_set_hint_style(fo, CAIRO_HINT_STYLE_NONE);
	cairo_font_options_set_antialias(fo, CAIRO_ANTIALIAS_GRAY);
	PangoContext *ctx = pango_layout_get_context(p->layout);
	pango_cairo_context_set_font_options(ctx, fo);
	pango_cairo_context_set_resolution(ctx, 96);
	pango_layout_context_changed(p->layout);
	cairo_font_options_destroy(fo);
	for (int f = 0; f < LH__FONT_N; f++) {
		p->font[f] = pango_font_description_from_string("Sans");
		pango_font_description_set_absolute_size(p->font[f], font_spec[f].px * PANGO_SCALE);
		if (font_spec[f].bold)
			pango_font_description_set_weight(p->font[f], PANGO_WEIGHT_BOLD);
		pango_layout_set_font_description(p->layout, p->font[f]);
		pango_layout_set_text(p->layout, "Hg", -1);
		int w, h;
		pango_layout_get_pixel_size(p->layout, &w, &h);
		p->font_h[f] = h;
	}
}

void lh__pen_clear(LhPen *p)
{
	for (int f = 0; f < LH__FONT_N; f++)
		if (p->font[f])
			pango_font_description_free(p->font[f]);
	if (p->layout)
		g_object_unref(p->layout);
	if (p->fontmap)
		g_object_unref(p->fontmap);
	if (p->cr)
		cairo_destroy(p->cr);
	memset(p, 0, sizeof *p);
}

static void set_text(LhPen *p, LhFont f, const char *s, gssize len)
{
	pango_layout_set_font_description(p->layout, p->font[f]);
	pango_layout_set_text(p->layout, s, (int)len);
}

double lh__text_w(LhPen *p, LhFont f, const char *s, gssize len)
{
	set_text(p, f, s, len);
	PangoRectangle log;
	pango_layout_get_extents(p->layout, NULL, &log);
	return (double)log.width / PANGO_SCALE;
}

void lh__text(LhPen *p, LhFont f, double x, double y, double align, const char *s, gssize len,
              LhRgb c)
{
	set_text(p, f, s, len);
	PangoRectangle log;
	pango_layout_get_extents(p->layout, NULL, &log);
	double w = (double)log.width / PANGO_SCALE;
	lh__rgb(p->cr, c);
	cairo_move_to(p->cr, x - align * w, y);
	pango_cairo_show_layout(p->cr, p->layout);
}

typedef struct {
	LhPen *p;
	LhFont f;
} Measure;

static double measure_cb(const char *text, gsize len, gpointer data)
{
	Measure *m = data;
	return lh__text_w(m->p, m->f, text, (gssize)len);
}

double lh__text_fit(LhPen *p, LhFont f, double x, double y, double avail, guint min_chars,
                    const char *s, LhRgb c)
{
	Measure m = {p, f};
	gboolean ell;
	gsize n = lh_label_fit(s, avail, min_chars, measure_cb, &m, &ell);
	if (!n)
		return 0;
	if (!ell) {
		lh__text(p, f, x, y, 0, s, (gssize)n, c);
		return lh__text_w(p, f, s, (gssize)n);
	}
	g_autofree char *t = g_strdup_printf("%.*s\u2026", (int)n, s);
	lh__text(p, f, x, y, 0, t, -1, c);
	return lh__text_w(p, f, t, -1);
}

/* ---- Colours ---- */

void lh__rgb(cairo_t *cr, LhRgb c)
{
	cairo_set_source_rgb(cr, c.r, c.g, c.b);
}

LhRgb lh__rgb_hex(guint32 hex)
{
	LhRgb c = {((hex >> 16) & 0xff) / 255.0, ((hex >> 8) & 0xff) / 255.0, (hex & 0xff) / 255.0};
	return c;
}

/* Tableau 10, which stays apart for the common colour-vision deficiencies better than most;
 * copies are green (in) and orange (out), collectives the purples, reds and browns. */
LhRgb lh__kind_rgb(LhOpKind k)
{
	static const guint32 hex[LH_OP_N_KINDS] = {
	    [LH_OP_INPUT] = 0xbab0ac,      [LH_OP_KERNEL] = 0x4e79a7,
	    [LH_OP_COPY_H2D] = 0x59a14f,   [LH_OP_COPY_D2H] = 0xf28e2b,
	    [LH_OP_COPY_D2D] = 0x76b7b2,   [LH_OP_ALL_REDUCE] = 0xb07aa1,
	    [LH_OP_ALL_GATHER] = 0xe15759, [LH_OP_REDUCE_SCATTER] = 0xff9da7,
	    [LH_OP_ALL_TO_ALL] = 0x9c755f, [LH_OP_COLLECTIVE_PERMUTE] = 0xedc948,
	    [LH_OP_SEND] = 0x79706e,       [LH_OP_RECV] = 0xd4a6c8,
	};
	return lh__rgb_hex(k < LH_OP_N_KINDS ? hex[k] : 0x999999);
}

LhRgb lh__text_on(LhRgb bg)
{
	double y = 0.299 * bg.r + 0.587 * bg.g + 0.114 * bg.b;
	return y < 0.5 ? lh__rgb_hex(0xffffff) : lh__rgb_hex(0x1a1a1a);
}

LhRgb lh__series_rgb(guint i)
{
	static const guint32 hex[] = {0x4e79a7, 0xe15759, 0x59a14f, 0xf28e2b, 0xb07aa1,
	                              0x76b7b2, 0x9c755f, 0xedc948, 0xff9da7, 0x79706e};
	return lh__rgb_hex(hex[i % G_N_ELEMENTS(hex)]);
}

void lh__marker(cairo_t *cr, guint shape, double x, double y, double r)
{
	cairo_new_sub_path(cr);
	switch (shape % 4) {
	case 0:
		cairo_arc(cr, x, y, r, 0, 2 * G_PI);
		break;
	case 1:
		cairo_rectangle(cr, x - r * 0.9, y - r * 0.9, 1.8 * r, 1.8 * r);
		break;
	case 2:
		cairo_move_to(cr, x, y - r * 1.2);
		cairo_line_to(cr, x + r * 1.1, y + r * 0.8);
		cairo_line_to(cr, x - r * 1.1, y + r * 0.8);
		cairo_close_path(cr);
		break;
	default:
		cairo_move_to(cr, x, y - r * 1.25);
		cairo_line_to(cr, x + r * 1.25, y);
		cairo_line_to(cr, x, y + r * 1.25);
		cairo_line_to(cr, x - r * 1.25, y);
		cairo_close_path(cr);
		break;
	}
}

double lh__legend(LhPen *p, double x, double y, double x_max, const char *const *names,
                  const LhRgb *colors, guint n, gboolean lines)
{
	const double sw = lines ? 26 : 13, gap = 6, item_gap = 20;
	double line_h = MAX(p->font_h[LH__FONT_LABEL], 14) + 4;
	double cx = x, cy = y;
	for (guint i = 0; i < n; i++) {
		double w = sw + gap + lh__text_w(p, LH__FONT_LABEL, names[i], -1);
		if (cx > x && cx + w > x_max) {
			cx = x;
			cy += line_h;
		}
		double mid = cy + p->font_h[LH__FONT_LABEL] / 2;
		lh__rgb(p->cr, colors[i]);
		if (lines) {
			cairo_set_line_width(p->cr, 2.5);
			cairo_move_to(p->cr, cx, mid);
			cairo_line_to(p->cr, cx + sw, mid);
			cairo_stroke(p->cr);
			lh__marker(p->cr, i, cx + sw / 2, mid, 4);
			cairo_fill(p->cr);
		} else {
			cairo_rectangle(p->cr, cx, mid - sw / 2, sw, sw);
			cairo_fill(p->cr);
		}
		lh__text(p, LH__FONT_LABEL, cx + sw + gap, cy, 0, names[i], -1,
		         lh__rgb_hex(0x222222));
		cx += w + item_gap;
	}
	return n ? cy - y + line_h : 0;
}

/* ---- Output ---- */

typedef enum { FMT_PNG, FMT_SVG, FMT_PDF } Format;

static const char *const fmt_name[] = {"png", "svg", "pdf"};

/* The format of @path and the file it names: "FMT:FILE" (FMT png, svg or pdf) says it outright,
 * "-" is standard output as PNG, otherwise the extension decides. */
static gboolean format_of(const char *path, Format *out, const char **file)
{
	for (int f = 0; f < 3; f++) {
		gsize n = strlen(fmt_name[f]);
		if (!g_ascii_strncasecmp(path, fmt_name[f], n) && path[n] == ':' && path[n + 1]) {
			*out = (Format)f;
			*file = path + n + 1;
			return TRUE;
		}
	}
	*file = path;
	if (lh_path_is_std(path)) {
		*out = FMT_PNG;
		return TRUE;
	}
	const char *dot = strrchr(path, '.');
	const char *slash = strrchr(path, '/');
	if (!dot || (slash && dot < slash))
		return FALSE;
	if (!g_ascii_strcasecmp(dot, ".png"))
		*out = FMT_PNG;
	else if (!g_ascii_strcasecmp(dot, ".svg"))
		*out = FMT_SVG;
	else if (!g_ascii_strcasecmp(dot, ".pdf"))
		*out = FMT_PDF;
	else
		return FALSE;
	return TRUE;
}

static gboolean check_format(const char *path, Format *fmt, const char **file, GError **error)
{
	if (!format_of(path, fmt, file)) {
		g_set_error(error, LH_VIZ_ERROR, LH_VIZ_ERROR_FORMAT,
		            "%s: unknown picture format (the name must end in .png, .svg or .pdf, "
		            "or start with png:, svg: or pdf:)",
		            path);
		return FALSE;
	}
	/* A binary picture on a terminal is only noise. */
	if (lh_path_is_std(*file) && *fmt != FMT_SVG && isatty(1)) {
		g_set_error(error, LH_VIZ_ERROR, LH_VIZ_ERROR_FORMAT,
		            "%s: will not write a %s picture to a terminal; redirect standard "
		            "output, or write svg:-",
		            path, *fmt == FMT_PNG ? "PNG" : "PDF");
		return FALSE;
	}
	return TRUE;
}

gboolean lh__viz_check_path(const char *path, GError **error)
{
	Format f;
	const char *file;
	return check_format(path, &f, &file, error);
}

gboolean lh_viz_check_path(const char *path, GError **error)
{
	g_return_val_if_fail(path != NULL, FALSE);
	Format f;
	const char *file;
	return check_format(path, &f, &file, error) && lh_output_check(file, error);
}

static cairo_status_t stream_write(void *closure, const unsigned char *data, unsigned int len)
{
	return lh_output_write(closure, data, len) ? CAIRO_STATUS_SUCCESS
	                                           : CAIRO_STATUS_WRITE_ERROR;
}

gboolean lh__viz_write(const char *path, double w, double h, LhDrawFunc draw, gpointer data,
                       GError **error)
{
	return lh__viz_write_scaled(path, w, h, 1, draw, data, error);
}

gboolean lh__viz_write_scaled(const char *path, double w, double h, double scale, LhDrawFunc draw,
                              gpointer data, GError **error)
{
	Format fmt;
	const char *file;
	if (!check_format(path, &fmt, &file, error))
		return FALSE;
	if (fmt != FMT_PNG)
		scale = 1;
	w = ceil(w * scale);
	h = ceil(h * scale);
	/* cairo's image surfaces stop at 32767 pixels a side. */
	if (w < 1 || h < 1 || w > 32767 || h > 32767) {
		g_set_error(error, LH_VIZ_ERROR, LH_VIZ_ERROR_INVALID,
		            "%s: the picture would be %.0f x %.0f pixels, beyond what can be drawn "
		            "(at most 32767 a side)",
		            path, w, h);
		return FALSE;
	}
	/* Every format writes through our own stream: cairo's file output does not report a
	 * failed write at close (a full disk gave a truncated PDF and success), and the stream
	 * reaches standard output, devices and symbolic links the way every writer does. */
	LhOutput *out = lh_output_open(file, error);
	if (!out)
		return FALSE;
	cairo_surface_t *s;
	switch (fmt) {
	case FMT_SVG:
		s = cairo_svg_surface_create_for_stream(stream_write, out, w, h);
		break;
	case FMT_PDF:
		s = cairo_pdf_surface_create_for_stream(stream_write, out, w, h);
		break;
	default:
		s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, (int)w, (int)h);
		break;
	}
	cairo_status_t st = cairo_surface_status(s);
	if (st == CAIRO_STATUS_SUCCESS) {
		cairo_t *cr = cairo_create(s);
		cairo_set_source_rgb(cr, 1, 1, 1);
		cairo_paint(cr);
		if (scale != 1)
			cairo_scale(cr, scale, scale);
		LhPen pen;
		lh__pen_init(&pen, cr);
		draw(&pen, data);
		lh__pen_clear(&pen);
		st = cairo_status(cr);
		cairo_destroy(cr);
	}
	if (st == CAIRO_STATUS_SUCCESS) {
		if (fmt == FMT_PNG)
			st = cairo_surface_write_to_png_stream(s, stream_write, out);
		else {
			cairo_surface_finish(s);
			st = cairo_surface_status(s);
		}
	}
	cairo_surface_destroy(s);
	if (st != CAIRO_STATUS_SUCCESS && st != CAIRO_STATUS_WRITE_ERROR) {
		g_set_error(error, LH_VIZ_ERROR, LH_VIZ_ERROR_DRAW,
		            "%s: cannot draw the picture: %s", path, cairo_status_to_string(st));
		lh_output_close(out, FALSE, NULL);
		return FALSE;
	}
	/* A failed write is reported by the output itself, with its errno. */
	return lh_output_close(out, TRUE, error);
}
