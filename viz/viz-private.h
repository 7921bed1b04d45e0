/* lhsim viz — internals shared by the picture writers (not installed). */
#pragma once

#include <cairo.h>
#include <pango/pangocairo.h>
#include "viz/layout.h"
#include "viz/viz.h"

typedef struct {
	double r, g, b;
} LhRgb;

/* Fonts, in pixels (PNG) or points (SVG, PDF): one unit either way. */
typedef enum {
	LH__FONT_TITLE,
	LH__FONT_SUBTITLE,
	LH__FONT_HEADER, /* block headers */
	LH__FONT_LABEL,  /* lane names, legend, tick labels */
	LH__FONT_SMALL,  /* names on bars, annotations */
	LH__FONT_N
} LhFont;

/* A cairo context with text helpers. Text is measured with hinting off, so that a layout
 * measured on one surface draws the same on any other (PNG, SVG or PDF). */
typedef struct {
	cairo_t *cr;
	PangoFontMap *fontmap;
	PangoLayout *layout;
	PangoFontDescription *font[LH__FONT_N];
	double font_h[LH__FONT_N]; /* line height of each font */
} LhPen;

/* @cr NULL: a measuring pen on a small scratch surface. Free with lh__pen_clear. */
void lh__pen_init(LhPen *p, cairo_t *cr);
void lh__pen_clear(LhPen *p);
double lh__text_w(LhPen *p, LhFont f, const char *s, gssize len);
/* Draws @s with its top at @y; @align: 0 left of x, 0.5 centred on x, 1 right of x. */
void lh__text(LhPen *p, LhFont f, double x, double y, double align, const char *s, gssize len,
              LhRgb c);
/* Draws (left-aligned at x) as much of @s as fits in @avail, cut with "…" and keeping at least
 * @min_chars characters, else nothing; returns the width drawn. */
double lh__text_fit(LhPen *p, LhFont f, double x, double y, double avail, guint min_chars,
                    const char *s, LhRgb c);

void lh__rgb(cairo_t *cr, LhRgb c);
LhRgb lh__rgb_hex(guint32 hex);
/* Colour of an op kind, and a text colour that reads on it. */
LhRgb lh__kind_rgb(LhOpKind k);
LhRgb lh__text_on(LhRgb bg);
/* Colour of the i-th line of a plot (schedulers in a sweep). */
LhRgb lh__series_rgb(guint i);

/* Adds a marker path (shape i % 4: circle, square, triangle, diamond) of radius @r. */
void lh__marker(cairo_t *cr, guint shape, double x, double y, double r);

/* Draws a legend of swatches and names from (x, y), wrapping at @x_max; returns its height.
 * With @lines, item i is a line with marker shape i, as the sweep plot draws its series.
 * On a measuring pen (lh__pen_init with NULL) the same call only sizes it. */
double lh__legend(LhPen *p, double x, double y, double x_max, const char *const *names,
                  const LhRgb *colors, guint n, gboolean lines);

typedef void (*LhDrawFunc)(LhPen *p, gpointer data);

/* Writes a @w x @h picture to @path (PNG, SVG or PDF by extension) through a temporary file:
 * calls @draw on a white page, checks cairo's status, renames. Nothing is left on failure. */
/* As lh__viz_write, with a PNG drawn at @scale pixels per unit (dpi / 96); SVG and PDF keep
 * their size in points. */
gboolean lh__viz_write_scaled(const char *path, double w, double h, double scale, LhDrawFunc draw,
                              gpointer data, GError **error);
gboolean lh__viz_write(const char *path, double w, double h, LhDrawFunc draw, gpointer data,
                       GError **error);
/* Checks the extension; error LH_VIZ_ERROR_FORMAT otherwise. */
gboolean lh__viz_check_path(const char *path, GError **error);
