/* lhsim tests — viz: the layout math as pure functions, then the pictures read back. */
#include <criterion/criterion.h>
#include <cairo.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "helpers.h"
#include "viz/layout.h"

/* Under ASan, fontconfig's own leak at configuration time (tests/lsan.supp) would fail every
 * process that draws text: suppress it for this program's workers and the lhsim it runs. */
__attribute__((constructor)) static void lsan_suppress_fontconfig(void)
{
	const char *src = g_getenv("LHSIM_SRC");
	if (!src || g_getenv("LSAN_OPTIONS"))
		return;
	g_autofree char *supp = g_build_filename(src, "tests", "lsan.supp", NULL);
	g_autofree char *opt = g_strdup_printf("suppressions=%s", supp);
	g_setenv("LSAN_OPTIONS", opt, TRUE);
}

/* ---- Lanes ---- */

static void set_op(LhTrace *t, guint32 i, gint32 stream, LhEngine e, guint8 idx, gint64 start,
                   gint64 end)
{
	t->ops[i].stream = stream;
	t->ops[i].engine = (guint8)e;
	t->ops[i].engine_index = idx;
	t->ops[i].issue = 0;
	t->ops[i].start = start;
	t->ops[i].end = end;
}

Test(lanes, streams_then_engines_with_link_rows)
{
	g_autoptr(LhPlan) p = lh_plan_new();
	lh_plan_add_stream(p, "main", LH_ROLE_COMPUTE);
	lh_plan_add_stream(p, "io", LH_ROLE_H2D);
	g_autoptr(LhTrace) t = lh_trace_new(7, 0);
	set_op(t, 0, -1, LH_ENGINE_NONE, 0, -1, -1); /* an input: never ran */
	set_op(t, 1, 0, LH_ENGINE_SM, 0, 0, 50);     /* kernel */
	set_op(t, 2, 1, LH_ENGINE_H2D, 0, 0, 30);    /* copy on H2D engine 0 */
	set_op(t, 3, 1, LH_ENGINE_D2H, 1, 30, 40);   /* copy on D2H engine 1 (so 2 D2H lanes) */
	set_op(t, 4, 0, LH_ENGINE_LINK, 0, 0, 10);   /* collectives a [0,10) */
	set_op(t, 5, 0, LH_ENGINE_LINK, 0, 5, 15);   /*             b [5,15) */
	set_op(t, 6, 0, LH_ENGINE_LINK, 0, 10, 20);  /*             c [10,20) */
	g_autoptr(LhLaneMap) m = lh_lanes_new(p, t);
	/* 2 streams + 1 H2D + 2 D2H + 2 link rows: a takes row 1; b starts at 5 while row 1 is
	 * busy until 10, so row 2; c starts at 10 when row 1 is free again (end 10 <= 10). */
	cr_assert_eq(m->n_lanes, 7);
	cr_assert_eq(m->n_stream_lanes, 2);
	cr_assert_str_eq(m->lanes[0].label, "main (compute)");
	cr_assert_str_eq(m->lanes[1].label, "io (h2d)");
	cr_assert_str_eq(m->lanes[2].label, "copy H2D");
	cr_assert_str_eq(m->lanes[3].label, "copy D2H 0");
	cr_assert_str_eq(m->lanes[4].label, "copy D2H 1");
	cr_assert_str_eq(m->lanes[5].label, "link 1");
	cr_assert_str_eq(m->lanes[6].label, "link 2");
	cr_assert_eq(m->lanes[4].kind, LH_LANE_D2H);
	cr_assert_eq(m->lanes[4].index, 1);
	gint32 stream[7] = {-1, 0, 1, 1, 0, 0, 0};
	gint32 engine[7] = {-1, -1, 2, 4, 5, 6, 5};
	for (int i = 0; i < 7; i++) {
		cr_assert_eq(m->stream_lane[i], stream[i], "op %d", i);
		cr_assert_eq(m->engine_lane[i], engine[i], "op %d", i);
	}
}

Test(lanes, link_rows_are_capped_and_reuse_the_first_free)
{
	g_autoptr(LhTrace) t = lh_trace_new(5, 0);
	/* Four collectives overlap: rows 1..4. The fifth starts at 4 while all four rows are
	 * busy; row ends are 100, 90, 80, 70, so it goes to the row that frees first, row 4. */
	gint64 end[4] = {100, 90, 80, 70};
	for (int i = 0; i < 4; i++)
		set_op(t, (guint32)i, 0, LH_ENGINE_LINK, 0, i, end[i]);
	set_op(t, 4, 0, LH_ENGINE_LINK, 0, 4, 50);
	g_autoptr(LhLaneMap) m = lh_lanes_new(NULL, t);
	cr_assert_eq(m->n_lanes, 1 + LH_LANES_MAX_LINK_ROWS);
	cr_assert_str_eq(m->lanes[0].label, "stream 0");
	for (int i = 0; i < 4; i++)
		cr_assert_eq(m->engine_lane[i], 1 + i);
	cr_assert_eq(m->engine_lane[4], 4);
}

/* ---- Axis and ticks ---- */

Test(axis, maps_time_to_pixels_and_back)
{
	LhAxis a = {0, 1000, 100, 600};
	/* 100 + 250 * (600 - 100) / 1000 = 225 */
	cr_assert_float_eq(lh_axis_to_px(&a, 250), 225, 1e-9);
	cr_assert_float_eq(lh_axis_from_px(&a, 225), 250, 1e-9);
	cr_assert_float_eq(lh_axis_to_px(&a, 1000), 600, 1e-9);
	LhAxis flat = {5, 5, 10, 20};
	cr_assert_float_eq(lh_axis_to_px(&flat, 7), 10, 1e-9);
}

Test(ticks, nice_steps)
{
	/* The smallest of {1, 2, 5} x 10^k at or above the input. */
	double in[] = {0.3, 1, 1.1, 3, 7, 20, 0.0021};
	double out[] = {0.5, 1, 2, 5, 10, 20, 0.005};
	for (guint i = 0; i < G_N_ELEMENTS(in); i++)
		cr_assert_float_eq(lh_nice_step(in[i]), out[i], 1e-12, "%g", in[i]);
}

Test(ticks, time_axis_in_milliseconds)
{
	LhTicks tk;
	char buf[32];
	/* 0..83.915 ms, at most 13 ticks: a 5 ms step needs floor(83.915 / 5) + 1 = 17 ticks,
	 * too many; 10 ms needs 9. */
	lh_ticks(0, 83.915e6, 13, LH_TICKS_TIME, FALSE, &tk);
	cr_assert_float_eq(tk.step, 10e6, 1e-6);
	cr_assert_eq(tk.n, 9);
	cr_assert_eq(tk.decimals, 0);
	cr_assert_str_eq(lh_tick_label(&tk, 0, buf, sizeof buf), "0 ms");
	cr_assert_str_eq(lh_tick_label(&tk, 8, buf, sizeof buf), "80 ms");
}

Test(ticks, decimals_and_negative_values)
{
	LhTicks tk;
	char buf[32];
	/* 0..1500 ns shows in us; at most 4 ticks: 0.5 us gives 0, 0.5, 1, 1.5 (4 ticks). */
	lh_ticks(0, 1500, 4, LH_TICKS_TIME, FALSE, &tk);
	cr_assert_float_eq(tk.step, 500, 1e-9);
	cr_assert_eq(tk.n, 4);
	cr_assert_str_eq(lh_tick_label(&tk, 1, buf, sizeof buf), "0.5 us");
	cr_assert_str_eq(lh_tick_label(&tk, 3, buf, sizeof buf), "1.5 us");
	/* -2..2 us, at most 5 ticks: 0.5 us would need 9, 1 us needs 5. */
	lh_ticks(-2000, 2000, 5, LH_TICKS_TIME, FALSE, &tk);
	cr_assert_eq(tk.n, 5);
	cr_assert_str_eq(lh_tick_label(&tk, 0, buf, sizeof buf), "-2 us");
	cr_assert_str_eq(lh_tick_label(&tk, 2, buf, sizeof buf), "0 us");
}

Test(ticks, bytes_and_integers)
{
	LhTicks tk;
	char buf[32];
	/* 0..9.65 GiB in at most 5 ticks: 2 GiB gives 0, 2, 4, 6, 8. */
	lh_ticks(0, 9.65 * 1073741824.0, 5, LH_TICKS_BYTES, FALSE, &tk);
	cr_assert_eq(tk.n, 5);
	cr_assert_float_eq(tk.step, 2 * 1073741824.0, 1);
	cr_assert_str_eq(lh_tick_label(&tk, 4, buf, sizeof buf), "8 GiB");
	/* 0.8..4.2 with up to 20 ticks would step by 0.2; integer axes step by 1: 1, 2, 3, 4. */
	lh_ticks(0.8, 4.2, 20, LH_TICKS_PLAIN, TRUE, &tk);
	cr_assert_float_eq(tk.first, 1, 1e-12);
	cr_assert_float_eq(tk.step, 1, 1e-12);
	cr_assert_eq(tk.n, 4);
	cr_assert_str_eq(lh_tick_label(&tk, 3, buf, sizeof buf), "4");
}

/* ---- Bars ---- */

static LhBar bar(double x0, double x1, guint32 op, LhOpKind k)
{
	LhBar b = {x0, x1, op, 1, (guint8)k, 0, {0}, 1};
	return b;
}

Test(bars, merges_runs_narrower_than_a_pixel)
{
	LhBar b[] = {
	    bar(0, 0.25, 0, LH_OP_KERNEL),        /* narrow */
	    bar(0.5, 0.75, 1, LH_OP_KERNEL),      /* gap 0.25 < 1: joins */
	    bar(0.875, 1.125, 2, LH_OP_KERNEL),   /* gap 0.125: joins -> [0, 1.125], 3 ops */
	    bar(5, 20, 3, LH_OP_KERNEL),          /* 15 px wide: kept */
	    bar(20.25, 20.5, 4, LH_OP_COPY_H2D),  /* narrow h2d 0.25 */
	    bar(20.5, 20.625, 5, LH_OP_COPY_D2H), /* d2h 0.125 */
	    bar(20.75, 20.95, 6, LH_OP_COPY_D2H), /* d2h 0.2: d2h covers 0.325 > 0.25 */
	    bar(30, 30.5, 7, LH_OP_KERNEL),       /* 9 px after the group: alone */
	};
	guint n = lh_bars_merge(b, G_N_ELEMENTS(b), 1.0, b); /* in place */
	cr_assert_eq(n, 4);
	cr_assert_float_eq(b[0].x0, 0, 1e-12);
	cr_assert_float_eq(b[0].x1, 1.125, 1e-12);
	cr_assert_eq(b[0].n, 3);
	cr_assert_eq(b[0].op, 0);
	cr_assert_eq(b[0].kind, LH_OP_KERNEL);
	cr_assert_not(b[0].mixed);
	cr_assert_eq(b[1].op, 3);
	cr_assert_eq(b[1].n, 1);
	cr_assert_float_eq(b[2].x0, 20.25, 1e-12);
	cr_assert_float_eq(b[2].x1, 20.95, 1e-12);
	cr_assert_eq(b[2].n, 3);
	cr_assert_eq(b[2].kind, LH_OP_COPY_D2H);
	cr_assert(b[2].mixed);
	cr_assert_eq(b[3].op, 7);
	cr_assert_eq(b[3].n, 1);
}

Test(bars, ties_go_to_the_lower_kind)
{
	/* Equal cover (0.25 px each): kernel (1) is lower than copy-h2d (2). */
	LhBar b[] = {bar(0, 0.25, 0, LH_OP_COPY_H2D), bar(0.5, 0.75, 1, LH_OP_KERNEL)};
	LhBar out[2];
	cr_assert_eq(lh_bars_merge(b, 2, 1.0, out), 1);
	cr_assert_eq(out[0].kind, LH_OP_KERNEL);
	cr_assert_eq(out[0].n, 2);
}

/* ---- Labels ---- */

/* A monospace stand-in for Pango: 10 px per character. */
static double mono(const char *text, gsize len, gpointer data)
{
	(void)data;
	return 10.0 * (double)g_utf8_strlen(text, (gssize)len);
}

Test(labels, fit_whole_cut_or_nothing)
{
	gboolean ell;
	/* "attention" is 9 chars = 90 px. */
	cr_assert_eq(lh_label_fit("attention", 100, 3, mono, NULL, &ell), 9);
	cr_assert_not(ell);
	/* 80 px: k chars + the ellipsis (10 px) <= 80 -> k = 7, "attenti…". */
	cr_assert_eq(lh_label_fit("attention", 80, 3, mono, NULL, &ell), 7);
	cr_assert(ell);
	/* 35 px: k <= 2.5 -> 2 chars, fewer than the 3 required: nothing. */
	cr_assert_eq(lh_label_fit("attention", 35, 3, mono, NULL, &ell), 0);
	cr_assert_not(ell);
	/* 40 px: exactly 3 chars + ellipsis. */
	cr_assert_eq(lh_label_fit("attention", 40, 3, mono, NULL, &ell), 3);
	/* Whole characters: "héllo" is 5 chars in 6 bytes; 3 chars "hél" are 4 bytes. */
	cr_assert_eq(lh_label_fit("h\u00e9llo", 40, 1, mono, NULL, &ell), 4);
	cr_assert_eq(lh_label_fit("", 100, 1, mono, NULL, &ell), 0);
}

/* ---- Memory envelope ---- */

Test(curves, envelope_keeps_subpixel_peaks)
{
	/* 10 ns per pixel over 4 columns. The curve: 100 on [0,10), 300 on [10,11), 50 on
	 * [11,30), 0 from 30. Column 0 = [0,10): 100. Column 1 = [10,20): max(300, 50) = 300,
	 * though the 300 lasts a tenth of a pixel. Column 2 = [20,30): 50. Column 3: 0. */
	LhMemPoint pts[] = {{0, 100, 0}, {10, 300, 0}, {11, 50, 0}, {30, 0, 0}};
	LhAxis a = {0, 40, 0, 4};
	double out[4];
	lh_mem_envelope(pts, 4, &a, 4, out);
	double want[4] = {100, 300, 50, 0};
	for (int c = 0; c < 4; c++)
		cr_assert_float_eq(out[c], want[c], 1e-9, "column %d", c);
}

/* ---- Pictures ---- */

/* A small graph: k0 -> h2d -> k1 -> all-gather -> k2, d2h off k1. */
static LhGraph *small_graph(void)
{
	LhGraph *g = lh_graph_new("small");
	guint32 k0 = t_kernel(g, "k0", 40000, 1);
	guint32 c = t_op(g, "load", LH_OP_COPY_H2D, 100000);
	guint32 k1 = t_kernel(g, "k1", 60000, 1);
	guint32 ag = t_op(g, "gather", LH_OP_ALL_GATHER, 1000000);
	guint32 k2 = t_kernel(g, "k2", 30000, 1);
	guint32 d = t_op(g, "save", LH_OP_COPY_D2H, 100000);
	lh_graph_op_mut(g, k0)->out_bytes = 1 << 20;
	lh_graph_op_mut(g, k1)->out_bytes = 1 << 21;
	t_dep(g, c, k0);
	t_dep(g, k1, c);
	t_dep(g, ag, k1);
	t_dep(g, k2, ag);
	t_dep(g, d, k1);
	t_finish(g);
	return g;
}

typedef struct {
	cairo_surface_t *s;
	int w, h;
} Png;

/* The title (20 px font), subtitle (14 px) and one legend row (13 px) end above this row. */
#define LANES_Y 100

static Png png_read(const char *path)
{
	Png p;
	p.s = cairo_image_surface_create_from_png(path);
	cr_assert_eq(cairo_surface_status(p.s), CAIRO_STATUS_SUCCESS, "%s: %s", path,
	             cairo_status_to_string(cairo_surface_status(p.s)));
	p.w = cairo_image_surface_get_width(p.s);
	p.h = cairo_image_surface_get_height(p.s);
	return p;
}

/* Pixels of exactly colour @rgb (opaque) in rows [y0, y1). */
static guint count_rgb(Png *p, guint32 rgb, int y0, int y1)
{
	cairo_surface_flush(p->s);
	const unsigned char *d = cairo_image_surface_get_data(p->s);
	int stride = cairo_image_surface_get_stride(p->s);
	guint n = 0;
	for (int y = MAX(y0, 0); y < MIN(y1, p->h); y++) {
		const guint32 *row = (const guint32 *)(d + (gsize)y * stride);
		for (int x = 0; x < p->w; x++)
			if (row[x] == (0xff000000u | rgb))
				n++;
	}
	return n;
}

/* Dark pixels (text) in rows [y0, y1): every channel below 0x60. */
static guint count_dark(Png *p, int y0, int y1)
{
	const unsigned char *d = cairo_image_surface_get_data(p->s);
	int stride = cairo_image_surface_get_stride(p->s);
	guint n = 0;
	for (int y = MAX(y0, 0); y < MIN(y1, p->h); y++) {
		const guint32 *row = (const guint32 *)(d + (gsize)y * stride);
		for (int x = 0; x < p->w; x++) {
			guint32 v = row[x];
			if (((v >> 16) & 0xff) < 0x60 && ((v >> 8) & 0xff) < 0x60 &&
			    (v & 0xff) < 0x60)
				n++;
		}
	}
	return n;
}

typedef struct {
	LhGraph *g;
	LhHw *hw;
	LhPlan *plan;
	LhTrace *t;
	LhMetrics m;
} Run;

static void run_small(Run *r)
{
	r->g = small_graph();
	r->hw = t_hw(LH_SHARING_FIFO);
	r->hw->launch_ns = 1000;
	GError *e = NULL;
	r->plan = lh_scheduler_run(&lh_sched_serial, r->g, r->hw, NULL, NULL, &e);
	cr_assert(r->plan, "%s", e ? e->message : "");
	r->t = t_sim(r->g, r->hw, r->plan);
	lh_metrics_compute(r->t, r->g, r->hw, r->plan, &r->m);
}

static void run_clear(Run *r)
{
	lh_metrics_clear(&r->m);
	lh_trace_free(r->t);
	lh_plan_free(r->plan);
	lh_hw_free(r->hw);
	lh_graph_free(r->g);
}

static guint dir_entries(const char *dir)
{
	GDir *d = g_dir_open(dir, 0, NULL);
	cr_assert(d);
	guint n = 0;
	while (g_dir_read_name(d))
		n++;
	g_dir_close(d);
	return n;
}

Test(pictures, timeline_png_has_bars_text_and_size)
{
	Run r;
	run_small(&r);
	g_autofree char *dir = t_tmpdir();
	g_autofree char *path = g_build_filename(dir, "t.png", NULL);
	GError *e = NULL;
	cr_assert(lh_viz_timeline(path, r.g, r.hw, r.plan, r.t, &r.m, &e), "%s",
	          e ? e->message : "");
	Png p = png_read(path);
	cr_assert_eq(p.w, 1600);
	/* Title, legend, one stream + 3 engine lanes, memory panel, axis: at least 300 px. */
	cr_assert_geq(p.h, 300);
	/* Below the title and legend (the legend's swatches are 13 x 13 = 169 px and end above
	 * row LANES_Y), the kernels (40 + 60 + 30 us of a ~140 us run on a plot over 1200 px wide,
	 * 18 px high bars) paint thousands of pixels in the kernel colour; the copies and the
	 * collective paint theirs, on their stream's lane and on their engine's. */
	cr_assert_geq(count_rgb(&p, 0x4e79a7, LANES_Y, p.h), 5000);
	cr_assert_geq(count_rgb(&p, 0x59a14f, LANES_Y, p.h), 200); /* copy-h2d */
	cr_assert_geq(count_rgb(&p, 0xf28e2b, LANES_Y, p.h), 200); /* copy-d2h */
	cr_assert_geq(count_rgb(&p, 0xe15759, LANES_Y, p.h), 200); /* all-gather */
	/* The title's text (fonts present and drawn) in its first 45 rows. */
	cr_assert_geq(count_dark(&p, 0, 45), 200);
	cairo_surface_destroy(p.s);
	cr_assert_eq(dir_entries(dir), 1, "a temporary file was left behind");
	run_clear(&r);
}

Test(pictures, svg_and_pdf_by_extension)
{
	Run r;
	run_small(&r);
	g_autofree char *dir = t_tmpdir();
	const char *names[] = {"t.svg", "t.PDF"};
	const char *magic[] = {"<?xml", "%PDF"};
	for (int i = 0; i < 2; i++) {
		g_autofree char *path = g_build_filename(dir, names[i], NULL);
		GError *e = NULL;
		cr_assert(lh_viz_timeline(path, r.g, r.hw, r.plan, r.t, NULL, &e), "%s",
		          e ? e->message : "");
		g_autofree char *data = NULL;
		gsize len;
		cr_assert(g_file_get_contents(path, &data, &len, NULL));
		cr_assert(len > 1000 && g_str_has_prefix(data, magic[i]), "%s", names[i]);
	}
	run_clear(&r);
}

Test(pictures, errors_leave_no_file)
{
	Run r;
	run_small(&r);
	g_autofree char *dir = t_tmpdir();
	GError *e = NULL;
	/* An unknown extension. */
	g_autofree char *gif = g_build_filename(dir, "t.gif", NULL);
	cr_assert_not(lh_viz_timeline(gif, r.g, r.hw, r.plan, r.t, NULL, &e));
	cr_assert(g_error_matches(e, LH_VIZ_ERROR, LH_VIZ_ERROR_FORMAT));
	cr_assert(strstr(e->message, "t.gif"), "%s", e->message);
	g_clear_error(&e);
	/* A directory that is a file: nothing can be created there. */
	g_autofree char *file = g_build_filename(dir, "plain", NULL);
	cr_assert(g_file_set_contents(file, "x", 1, NULL));
	g_autofree char *bad = g_build_filename(file, "t.png", NULL);
	cr_assert_not(lh_viz_timeline(bad, r.g, r.hw, r.plan, r.t, NULL, &e));
	cr_assert(strstr(e->message, bad), "%s", e->message);
	g_clear_error(&e);
	/* A trace of another graph. */
	g_autoptr(LhTrace) other = lh_trace_new(2, 0);
	g_autofree char *png = g_build_filename(dir, "t.png", NULL);
	cr_assert_not(lh_viz_timeline(png, r.g, r.hw, r.plan, other, NULL, &e));
	cr_assert(g_error_matches(e, LH_VIZ_ERROR, LH_VIZ_ERROR_INVALID));
	g_clear_error(&e);
	cr_assert_eq(dir_entries(dir), 1); /* only "plain" */
	run_clear(&r);
}

Test(pictures, check_path_before_the_work)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *ok = g_build_filename(dir, "a.SVG", NULL);
	g_autofree char *gif = g_build_filename(dir, "a.gif", NULL);
	g_autofree char *none = g_build_filename(dir, "no", "a.png", NULL);
	GError *e = NULL;
	cr_assert(lh_viz_check_path(ok, &e));
	cr_assert_not(lh_viz_check_path(gif, &e));
	cr_assert(g_error_matches(e, LH_VIZ_ERROR, LH_VIZ_ERROR_FORMAT));
	g_clear_error(&e);
	cr_assert_not(lh_viz_check_path(none, &e));
	cr_assert(strstr(e->message, none), "%s", e->message);
	g_clear_error(&e);
	cr_assert_eq(dir_entries(dir), 0, "the check left a file behind");
}

Test(pictures, existing_file_is_replaced_whole)
{
	Run r;
	run_small(&r);
	g_autofree char *dir = t_tmpdir();
	g_autofree char *path = g_build_filename(dir, "t.png", NULL);
	cr_assert(g_file_set_contents(path, "old", 3, NULL));
	GError *e = NULL;
	cr_assert(lh_viz_timeline(path, r.g, r.hw, r.plan, r.t, NULL, &e));
	Png p = png_read(path);
	cr_assert_eq(p.w, 1600);
	cairo_surface_destroy(p.s);
	cr_assert_eq(dir_entries(dir), 1);
	run_clear(&r);
}

Test(pictures, comparison_stacks_blocks)
{
	Run a, b;
	run_small(&a);
	run_small(&b);
	g_autofree char *dir = t_tmpdir();
	g_autofree char *one = g_build_filename(dir, "one.png", NULL);
	g_autofree char *two = g_build_filename(dir, "two.png", NULL);
	const LhPlan *plans[2] = {a.plan, b.plan};
	const LhTrace *traces[2] = {a.t, b.t};
	GError *e = NULL;
	cr_assert(lh_viz_comparison(one, a.g, a.hw, 1, plans, traces, NULL, &e), "%s",
	          e ? e->message : "");
	cr_assert(lh_viz_comparison(two, a.g, a.hw, 2, plans, traces, NULL, &e), "%s",
	          e ? e->message : "");
	Png p1 = png_read(one), p2 = png_read(two);
	/* A second block adds its header, marks row, 4 lanes of 24 px and a 64 px memory panel:
	 * more than 4 * 24 + 64 = 160 px. */
	cr_assert_gt(p2.h - p1.h, 160);
	/* And twice the kernel pixels, the same schedule drawn twice on the same axis. */
	guint k1 = count_rgb(&p1, 0x4e79a7, LANES_Y, p1.h),
	      k2 = count_rgb(&p2, 0x4e79a7, LANES_Y, p2.h);
	cr_assert(k2 > 2 * k1 - k1 / 20 && k2 < 2 * k1 + k1 / 20, "%u vs %u", k1, k2);
	cairo_surface_destroy(p1.s);
	cairo_surface_destroy(p2.s);
	run_clear(&a);
	run_clear(&b);
}

Test(pictures, validation_marks_errors)
{
	Run r;
	run_small(&r);
	/* "Measured": every op 10 % longer and 5 us later. */
	g_autoptr(LhTrace) m = lh_trace_new(r.t->n_ops, r.t->n_cmds);
	for (guint32 i = 0; i < r.t->n_ops; i++) {
		m->ops[i] = r.t->ops[i];
		if (m->ops[i].start < 0)
			continue;
		gint64 d = r.t->ops[i].end - r.t->ops[i].start;
		m->ops[i].start += 5000;
		m->ops[i].end = m->ops[i].start + d + d / 10;
	}
	m->measured = TRUE;
	m->source = g_strdup("test");
	g_autofree char *dir = t_tmpdir();
	g_autofree char *path = g_build_filename(dir, "v.png", NULL);
	GError *e = NULL;
	cr_assert(lh_viz_validation(path, r.g, r.hw, r.plan, r.t, m, &e), "%s",
	          e ? e->message : "");
	Png p = png_read(path);
	cr_assert_eq(p.w, 1600);
	/* Two blocks of 4 lanes and two 110 px error panels: over 2 * 96 + 2 * 110 px. */
	cr_assert_gt(p.h, 2 * 96 + 2 * 110);
	/* The error panels (the bottom 2 * 128 px above the axis) hold kernel-coloured marks. */
	cr_assert_gt(count_rgb(&p, 0x4e79a7, p.h - 300, p.h), 0);
	cairo_surface_destroy(p.s);
	g_autoptr(LhTrace) wrong = lh_trace_new(1, 0);
	cr_assert_not(lh_viz_validation(path, r.g, r.hw, r.plan, r.t, wrong, &e));
	cr_assert(g_error_matches(e, LH_VIZ_ERROR, LH_VIZ_ERROR_INVALID));
	g_clear_error(&e);
	run_clear(&r);
}

Test(pictures, sweep_plot_draws_each_series)
{
	LhSweepPoint pts[] = {
	    {"a", "1", TRUE, 1000000, 1 << 30, 500000},
	    {"a", "2", TRUE, 800000, 3 << 29, 500000},
	    {"a", "4", TRUE, 700000, (gint64)1 << 31, 500000},
	    {"b", "1", TRUE, 900000, 1 << 30, 500000},
	    {"b", "2", FALSE, 0, 0, 0},
	    {"b", "4", TRUE, 600000, 1 << 30, 500000},
	};
	g_autofree char *dir = t_tmpdir();
	g_autofree char *path = g_build_filename(dir, "s.png", NULL);
	GError *e = NULL;
	cr_assert(
	    lh_viz_sweep(path, "test sweep", "limit", pts, G_N_ELEMENTS(pts), 8.0 * (1 << 30), &e),
	    "%s", e ? e->message : "");
	Png p = png_read(path);
	cr_assert_eq(p.w, 1200);
	/* Series colours: the first scheduler blue, the second red. */
	cr_assert_gt(count_rgb(&p, 0x4e79a7, 0, p.h), 100);
	cr_assert_gt(count_rgb(&p, 0xe15759, 0, p.h), 100);
	cairo_surface_destroy(p.s);
	cr_assert_not(lh_viz_sweep(path, "t", "limit", pts, 0, 0, &e));
	cr_assert(g_error_matches(e, LH_VIZ_ERROR, LH_VIZ_ERROR_INVALID));
	g_clear_error(&e);
	/* Values that are not numbers are categories. */
	LhSweepPoint cat[] = {{"a", "min-peak-memory", TRUE, 100, 10, 50},
	                      {"a", "max-concurrency", TRUE, 90, 20, 50}};
	cr_assert(lh_viz_sweep(path, "t", "favor", cat, 2, 0, &e));
}

Test(pictures, sweep_failed_point_is_off_the_data)
{
	/* One series: value 1 ran, value 2 failed. A lone point sits mid-panel (its range is
	 * padded on both sides). The failed one must not be drawn near the floor, where it read
	 * as a result better than the lower bound: every pixel of the series colour lies well
	 * above the bottom edge of the lower panel (its frame, the lowest long run of the frame
	 * colour). */
	LhSweepPoint pts[] = {{"a", "1", TRUE, 1000000, 1 << 30, 500000},
	                      {"a", "2", FALSE, 0, 0, 0}};
	g_autofree char *dir = t_tmpdir();
	g_autofree char *path = g_build_filename(dir, "s.png", NULL);
	GError *e = NULL;
	cr_assert(lh_viz_sweep(path, "t", "limit", pts, 2, 0, &e), "%s", e ? e->message : "");
	Png p = png_read(path);
	int frame = -1, lowest = -1;
	for (int y = 0; y < p.h; y++) {
		if (count_rgb(&p, 0xbdbdbd, y, y + 1) > 500)
			frame = y;
		if (count_rgb(&p, 0x4e79a7, y, y + 1) > 0)
			lowest = y;
	}
	cairo_surface_destroy(p.s);
	cr_assert(frame > 0 && lowest > 0);
	cr_assert_lt(lowest, frame - 60, "series colour at row %d, the panel ends at %d", lowest,
	             frame);
}

Test(pictures, lhsim_run_draws_and_rejects_bad_names)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *png = g_build_filename(dir, "run.png", NULL);
	g_autofree char *err = NULL;
	int rc = t_lhsim(NULL, &err, "run", "-o", png, NULL);
	cr_assert_eq(rc, 0, "%s", err);
	Png p = png_read(png);
	cr_assert_eq(p.w, 1600);
	cairo_surface_destroy(p.s);
	g_free(err);
	g_autofree char *gif = g_build_filename(dir, "run.gif", NULL);
	rc = t_lhsim(NULL, &err, "run", "-o", gif, NULL);
	cr_assert_eq(rc, 2);
	cr_assert(strstr(err, "unknown picture format"), "%s", err);
	cr_assert_not(g_file_test(gif, G_FILE_TEST_EXISTS));
}

Test(pictures, lhsim_compare_draws_one_block_per_scheduler)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *one = g_build_filename(dir, "one.png", NULL);
	g_autofree char *two = g_build_filename(dir, "two.png", NULL);
	g_autofree char *err = NULL;
	cr_assert_eq(t_lhsim(NULL, &err, "compare", "--sched", "serial", "-o", one, NULL), 0, "%s",
	             err);
	g_free(err);
	err = NULL;
	cr_assert_eq(t_lhsim(NULL, &err, "compare", "--sched", "serial,serial", "-o", two, NULL), 0,
	             "%s", err);
	Png p1 = png_read(one), p2 = png_read(two);
	cr_assert_eq(p1.w, 1600);
	/* The second block repeats the first: header, marks, lanes and memory panel, more than
	 * 64 px of memory panel plus one 24 px lane. */
	cr_assert_gt(p2.h - p1.h, 64 + 24);
	cairo_surface_destroy(p1.s);
	cairo_surface_destroy(p2.s);
}

/* Size, resolution and a time window (issue 12). In the small run (serial: load, k0, k1,
 * gather, save, k2 with 1 us launches), a window on k1 alone draws k1 across the plot and
 * none of load's or gather's colour; width and dpi set the PNG's size; a taller picture gives
 * the lanes the height. */
Test(pictures, timeline_size_dpi_and_window)
{
	Run r;
	run_small(&r);
	g_autofree char *dir = t_tmpdir();
	g_autofree char *path = g_build_filename(dir, "t.png", NULL);
	GError *e = NULL;
	LhVizOptions o = {800, 0, 192, 0, 0};
	cr_assert(lh_viz_timeline_opt(path, r.g, r.hw, r.plan, r.t, &r.m, &o, &e), "%s",
	          e ? e->message : "");
	Png p = png_read(path);
	cr_assert_eq(p.w, 1600, "800 px at 192 dpi is 1600 pixels wide, not %d", p.w);
	int h2 = p.h;
	cairo_surface_destroy(p.s);

	o = (LhVizOptions){800, 0, 0, 0, 0};
	cr_assert(lh_viz_timeline_opt(path, r.g, r.hw, r.plan, r.t, &r.m, &o, &e));
	p = png_read(path);
	cr_assert_eq(p.w, 800);
	cr_assert_eq(h2, 2 * p.h, "192 dpi doubles the height too: %d vs %d", h2, p.h);
	int h1 = p.h;
	cairo_surface_destroy(p.s);

	o = (LhVizOptions){800, (guint)h1 + 200, 0, 0, 0};
	cr_assert(lh_viz_timeline_opt(path, r.g, r.hw, r.plan, r.t, &r.m, &o, &e));
	p = png_read(path);
	cr_assert_eq(p.h, h1 + 200, "the height asked for: %d", p.h);
	cairo_surface_destroy(p.s);

	const LhOpTiming *k1 = &r.t->ops[t_id(r.g, "k1")];
	o = (LhVizOptions){0, 0, 0, k1->start + 100, k1->end - 100};
	cr_assert(lh_viz_timeline_opt(path, r.g, r.hw, r.plan, r.t, &r.m, &o, &e));
	p = png_read(path);
	/* k1 fills its lane across the plot (over 1200 px, 18 px high); load and gather are
	 * outside the window: none of their colour below the legend. */
	cr_assert_geq(count_rgb(&p, 0x4e79a7, LANES_Y, p.h), 1200 * 18);
	cr_assert_eq(count_rgb(&p, 0x59a14f, LANES_Y, p.h), 0);
	cr_assert_eq(count_rgb(&p, 0xe15759, LANES_Y, p.h), 0);
	cairo_surface_destroy(p.s);

	/* Out of range: errors, and no file. */
	g_autofree char *bad = g_build_filename(dir, "bad.png", NULL);
	o = (LhVizOptions){100, 0, 0, 0, 0};
	cr_assert_not(lh_viz_timeline_opt(bad, r.g, r.hw, r.plan, r.t, &r.m, &o, &e));
	cr_assert(g_error_matches(e, LH_VIZ_ERROR, LH_VIZ_ERROR_INVALID));
	g_clear_error(&e);
	o = (LhVizOptions){0, 0, 0, r.m.makespan + 10, r.m.makespan + 20};
	cr_assert_not(lh_viz_timeline_opt(bad, r.g, r.hw, r.plan, r.t, &r.m, &o, &e));
	cr_assert(strstr(e->message, "outside the run"), "%s", e->message);
	g_clear_error(&e);
	cr_assert_not(g_file_test(bad, G_FILE_TEST_EXISTS));
	run_clear(&r);
}

/* Merged bars carry how much of their width their ops cover (issue 12: density). */
Test(bars, merged_bars_carry_their_density)
{
	LhBar sparse[4], dense[10], out[10];
	for (guint i = 0; i < 4; i++)
		sparse[i] = bar(0.5 * i, 0.5 * i + 0.2, i, LH_OP_KERNEL);
	cr_assert_eq(lh_bars_merge(sparse, 4, 1.0, out), 1);
	cr_assert_eq(out[0].n, 4);
	cr_assert_float_eq(out[0].density, 0.8 / 1.7, 1e-6);
	for (guint i = 0; i < 10; i++)
		dense[i] = bar(0.2 * i, 0.2 * i + 0.2, i, LH_OP_KERNEL);
	cr_assert_eq(lh_bars_merge(dense, 10, 1.0, out), 1);
	cr_assert_float_eq(out[0].density, 1.0, 1e-6);
	LhBar wide = bar(0, 10, 0, LH_OP_KERNEL);
	cr_assert_eq(lh_bars_merge(&wide, 1, 1.0, out), 1);
	cr_assert_float_eq(out[0].density, 1.0, 1e-6);
}
