/* lhsim — layout math for the pictures: lanes, axes, ticks, bar merging, label fitting. */
#include "viz/layout.h"

#include <math.h>
#include <string.h>

/* ---- Lanes ---- */

typedef struct {
	gint64 start;
	guint32 op;
} LinkOp;

static int link_op_cmp(gconstpointer a, gconstpointer b)
{
	const LinkOp *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->op > y->op) - (x->op < y->op);
}

static void lane_add(GArray *lanes, LhLaneKind kind, guint32 index, const char *label)
{
	LhLane l = {.kind = kind, .index = index};
	g_strlcpy(l.label, label, sizeof l.label);
	g_array_append_val(lanes, l);
}

static gboolean ran(const LhOpTiming *tm)
{
	return tm->start >= 0 && tm->end >= tm->start;
}

/* Rows of one level (link or network), first fit in start order. */
static void link_rows(GArray *lanes, LhLaneMap *m, const LhTrace *t, GArray *ops, LhLaneKind kind,
                      const char *name)
{
	char buf[64];
	guint32 at = lanes->len;
	gint64 row_end[LH_LANES_MAX_LINK_ROWS];
	guint32 n_rows = 0;
	g_array_sort(ops, link_op_cmp);
	for (guint k = 0; k < ops->len; k++) {
		const LinkOp *l = &g_array_index(ops, LinkOp, k);
		guint32 r = 0;
		while (r < n_rows && row_end[r] > l->start)
			r++;
		if (r == n_rows) {
			if (n_rows < LH_LANES_MAX_LINK_ROWS) {
				n_rows++;
			} else {
				r = 0;
				for (guint32 q = 1; q < n_rows; q++)
					if (row_end[q] < row_end[r])
						r = q;
			}
		}
		row_end[r] = t->ops[l->op].end;
		m->engine_lane[l->op] = (gint32)(at + r);
	}
	for (guint32 r = 0; r < n_rows; r++) {
		if (n_rows == 1)
			g_strlcpy(buf, name, sizeof buf);
		else
			g_snprintf(buf, sizeof buf, "%s %u", name, r + 1);
		lane_add(lanes, kind, r, buf);
	}
}

/* The device of op timing @tm: its stream's. */
static guint32 op_device(const LhPlan *plan, const LhOpTiming *tm)
{
	if (!plan || tm->stream < 0 || (guint32)tm->stream >= lh_plan_n_streams(plan))
		return 0;
	return lh_plan_stream(plan, (guint32)tm->stream)->device;
}

/* The lanes of device @d: its streams, its copy engines, its link and network rows. With one
 * device, every stream and op is its. */
static void device_block(GArray *lanes, LhLaneMap *m, const LhPlan *plan, const LhTrace *t,
                         guint32 d, guint32 n_streams, gboolean several)
{
	guint32 n_h2d = 0, n_d2h = 0;
	g_autoptr(GArray) link = g_array_new(FALSE, FALSE, sizeof(LinkOp));
	g_autoptr(GArray) net = g_array_new(FALSE, FALSE, sizeof(LinkOp));
	for (guint32 i = 0; i < t->n_ops; i++) {
		const LhOpTiming *tm = &t->ops[i];
		if (!ran(tm) || op_device(plan, tm) != d)
			continue;
		if (tm->engine == LH_ENGINE_H2D)
			n_h2d = MAX(n_h2d, tm->engine_index + 1u);
		else if (tm->engine == LH_ENGINE_D2H)
			n_d2h = MAX(n_d2h, tm->engine_index + 1u);
		else if (tm->engine == LH_ENGINE_LINK || tm->engine == LH_ENGINE_NET) {
			LinkOp l = {tm->start, i};
			g_array_append_val(tm->engine == LH_ENGINE_NET ? net : link, l);
		}
	}
	char buf[64], pre[16] = "";
	if (several)
		g_snprintf(pre, sizeof pre, "d%u ", d);
	guint32 first = lanes->len;
	m->dev_first[d] = first;
	if (several) {
		g_snprintf(buf, sizeof buf, "device %u", d);
		lane_add(lanes, LH_LANE_DEVICE, d, buf);
	}
	for (guint32 s = 0; s < n_streams; s++) {
		if (plan && s < lh_plan_n_streams(plan)) {
			const LhStream *st = lh_plan_stream(plan, s);
			if (st->device != d)
				continue;
			g_snprintf(buf, sizeof buf, "%s (%s)", st->name,
			           lh_stream_role_name(st->role));
		} else {
			if (d != 0)
				continue;
			g_snprintf(buf, sizeof buf, "stream %u", s);
		}
		m->stream_lane_of[s] = (gint32)lanes->len;
		lane_add(lanes, LH_LANE_STREAM, s, buf);
	}
	m->dev_streams[d] = lanes->len - first - (several ? 1 : 0);
	guint32 h2d_at = lanes->len;
	for (guint32 e = 0; e < n_h2d; e++) {
		if (n_h2d == 1)
			g_snprintf(buf, sizeof buf, "%scopy H2D", pre);
		else
			g_snprintf(buf, sizeof buf, "%scopy H2D %u", pre, e);
		lane_add(lanes, LH_LANE_H2D, e, buf);
	}
	guint32 d2h_at = lanes->len;
	for (guint32 e = 0; e < n_d2h; e++) {
		if (n_d2h == 1)
			g_snprintf(buf, sizeof buf, "%scopy D2H", pre);
		else
			g_snprintf(buf, sizeof buf, "%scopy D2H %u", pre, e);
		lane_add(lanes, LH_LANE_D2H, e, buf);
	}
	g_snprintf(buf, sizeof buf, "%slink", pre);
	link_rows(lanes, m, t, link, LH_LANE_LINK, buf);
	g_snprintf(buf, sizeof buf, "%snetwork", pre);
	link_rows(lanes, m, t, net, LH_LANE_NET, buf);
	for (guint32 i = 0; i < t->n_ops; i++) {
		const LhOpTiming *tm = &t->ops[i];
		if (!ran(tm) || op_device(plan, tm) != d)
			continue;
		if (tm->engine == LH_ENGINE_H2D)
			m->engine_lane[i] = (gint32)(h2d_at + tm->engine_index);
		else if (tm->engine == LH_ENGINE_D2H)
			m->engine_lane[i] = (gint32)(d2h_at + tm->engine_index);
	}
	for (guint32 l = first; l < lanes->len; l++)
		g_array_index(lanes, LhLane, l).device = d;
}

LhLaneMap *lh_lanes_new(const LhPlan *plan, const LhTrace *t)
{
	g_return_val_if_fail(t != NULL, NULL);
	guint32 n_streams = plan ? lh_plan_n_streams(plan) : 0;
	guint32 n_dev = MAX(t->n_devices, 1);
	for (guint32 s = 0; s < n_streams; s++)
		n_dev = MAX(n_dev, lh_plan_stream(plan, s)->device + 1);
	for (guint32 i = 0; i < t->n_ops; i++)
		if (ran(&t->ops[i]) && t->ops[i].stream >= 0)
			n_streams = MAX(n_streams, (guint32)t->ops[i].stream + 1);

	LhLaneMap *m = g_new0(LhLaneMap, 1);
	m->n_ops = t->n_ops;
	m->stream_lane = g_new(gint32, MAX(t->n_ops, 1));
	m->engine_lane = g_new(gint32, MAX(t->n_ops, 1));
	m->stream_lane_of = g_new(gint32, MAX(n_streams, 1));
	m->n_devices = n_dev;
	m->dev_first = g_new0(guint32, (gsize)n_dev + 1);
	m->dev_streams = g_new0(guint32, n_dev);
	for (guint32 i = 0; i < t->n_ops; i++)
		m->engine_lane[i] = -1;
	GArray *lanes = g_array_new(FALSE, FALSE, sizeof(LhLane));
	for (guint32 d = 0; d < n_dev; d++)
		device_block(lanes, m, plan, t, d, n_streams, n_dev > 1);
	m->dev_first[n_dev] = lanes->len;
	m->n_stream_lanes = n_dev > 1 ? 0 : m->dev_streams[0];
	for (guint32 i = 0; i < t->n_ops; i++) {
		const LhOpTiming *tm = &t->ops[i];
		m->stream_lane[i] = ran(tm) && tm->stream >= 0 ? m->stream_lane_of[tm->stream] : -1;
	}
	m->n_lanes = lanes->len;
	m->lanes = (LhLane *)g_array_free(lanes, FALSE);
	return m;
}

void lh_lanes_free(LhLaneMap *m)
{
	if (!m)
		return;
	g_free(m->lanes);
	g_free(m->stream_lane);
	g_free(m->engine_lane);
	g_free(m->stream_lane_of);
	g_free(m->dev_first);
	g_free(m->dev_streams);
	g_free(m);
}

/* ---- Axis ---- */

double lh_axis_to_px(const LhAxis *a, double t)
{
	if (a->t1 == a->t0)
		return a->x0;
	return a->x0 + (t - a->t0) * (a->x1 - a->x0) / (a->t1 - a->t0);
}

double lh_axis_from_px(const LhAxis *a, double x)
{
	if (a->x1 == a->x0)
		return a->t0;
	return a->t0 + (x - a->x0) * (a->t1 - a->t0) / (a->x1 - a->x0);
}

/* ---- Ticks ---- */

/* Splits a round step into mantissa (1, 2 or 5) and power of ten. */
static double nice_split(double raw, double *pow10)
{
	double p = pow(10, floor(log10(raw)));
	double f = raw / p;
	const double eps = 1e-9;
	if (f <= 1 + eps)
		f = 1;
	else if (f <= 2 + eps)
		f = 2;
	else if (f <= 5 + eps)
		f = 5;
	else {
		f = 1;
		p *= 10;
	}
	*pow10 = p;
	return f;
}

double lh_nice_step(double raw)
{
	g_return_val_if_fail(raw > 0 && isfinite(raw), 1);
	double p;
	double f = nice_split(raw, &p);
	return f * p;
}

static double next_nice(double s)
{
	double p;
	double f = nice_split(s, &p);
	return f == 1 ? 2 * p : f == 2 ? 5 * p : 10 * p;
}

static guint tick_count(double lo, double hi, double s)
{
	double first = ceil(lo / s - 1e-9) * s;
	if (first > hi + s * 1e-9)
		return 0;
	return (guint)floor((hi - first) / s + 1e-9) + 1;
}

void lh_ticks(double lo, double hi, guint max_ticks, LhTickUnit unit, gboolean integers,
              LhTicks *out)
{
	g_return_if_fail(out != NULL && lo < hi && max_ticks >= 2);
	double m = MAX(fabs(lo), fabs(hi));
	out->scale = 1;
	out->unit = "";
	if (unit == LH_TICKS_TIME) {
		static const struct {
			double scale;
			const char *name;
		} tu[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "us"}, {1, "ns"}};
		for (guint i = 0; i < G_N_ELEMENTS(tu); i++)
			if (m >= tu[i].scale || i + 1 == G_N_ELEMENTS(tu)) {
				out->scale = tu[i].scale;
				out->unit = tu[i].name;
				break;
			}
	} else if (unit == LH_TICKS_BYTES) {
		static const char *const bu[] = {"B", "KiB", "MiB", "GiB", "TiB"};
		guint k = 0;
		while (k + 1 < G_N_ELEMENTS(bu) && m >= ldexp(1, 10 * (int)(k + 1)))
			k++;
		out->scale = ldexp(1, 10 * (int)k);
		out->unit = bu[k];
	}
	double L = lo / out->scale, H = hi / out->scale;
	/* Start a little below the step that surely fits, and climb the 1-2-5 ladder. */
	double s = lh_nice_step((H - L) / (double)(max_ticks - 1) / 2);
	while (tick_count(L, H, s) > max_ticks)
		s = next_nice(s);
	if (integers && s * out->scale < 1)
		s = 1 / out->scale;
	double first = ceil(L / s - 1e-9) * s;
	out->first = first * out->scale;
	out->step = s * out->scale;
	out->n = tick_count(L, H, s);
	double k = floor(log10(s) + 1e-9);
	out->decimals = k < 0 ? (int)-k : 0;
}

char *lh_tick_label(const LhTicks *tk, guint i, char *buf, gsize len)
{
	double s = tk->step / tk->scale;
	double v = tk->first / tk->scale + (double)i * s;
	if (fabs(v) < s * 1e-6)
		v = 0; /* no "-0" */
	if (*tk->unit)
		g_snprintf(buf, len, "%.*f %s", tk->decimals, v, tk->unit);
	else
		g_snprintf(buf, len, "%.*f", tk->decimals, v);
	return buf;
}

/* ---- Bars ---- */

guint lh_bars_merge(const LhBar *bars, guint n, double min_px, LhBar *out)
{
	guint o = 0, i = 0;
	while (i < n) {
		LhBar b = bars[i];
		if (b.x1 - b.x0 >= min_px) {
			b.density = 1;
			out[o++] = b;
			i++;
			continue;
		}
		double covered = (b.n > 1 ? b.density : 1) * (b.x1 - b.x0);
		double cover[LH_OP_N_KINDS] = {0};
		gboolean present[LH_OP_N_KINDS] = {FALSE};
		guint8 k0 = MIN(b.kind, LH_OP_N_KINDS - 1);
		gboolean mixed = b.mixed;
		cover[k0] += b.x1 - b.x0;
		present[k0] = TRUE;
		guint j = i + 1;
		for (; j < n; j++) {
			const LhBar *c = &bars[j];
			if (c->x1 - c->x0 >= min_px || c->x0 - b.x1 >= min_px)
				break;
			guint8 k = MIN(c->kind, LH_OP_N_KINDS - 1);
			b.x1 = MAX(b.x1, c->x1);
			b.n += c->n;
			covered += (c->n > 1 ? c->density : 1) * (c->x1 - c->x0);
			cover[k] += c->x1 - c->x0;
			present[k] = TRUE;
			mixed |= c->mixed || k != k0;
		}
		/* Ascending with a strict '>' picks the lowest kind among equals. */
		gint best = -1;
		for (gint k = 0; k < LH_OP_N_KINDS; k++)
			if (present[k] && (best < 0 || cover[k] > cover[best]))
				best = k;
		b.kind = (guint8)best;
		b.mixed = mixed;
		/* A lone narrow bar stays solid: it is one op, drawn a pixel wide. */
		b.density = b.n > 1 && b.x1 > b.x0 ? (float)MIN(1.0, covered / (b.x1 - b.x0)) : 1;
		out[o++] = b;
		i = j;
	}
	return o;
}

/* ---- Labels ---- */

gsize lh_label_fit(const char *text, double avail, guint min_chars, LhMeasureFunc measure,
                   gpointer data, gboolean *ellipsis)
{
	if (ellipsis)
		*ellipsis = FALSE;
	gsize len = strlen(text);
	if (len == 0 || avail <= 0)
		return 0;
	if (measure(text, len, data) <= avail)
		return len;
	static const char ell[] = "\u2026";
	double ew = measure(ell, sizeof ell - 1, data);
	/* Byte offset after each of the first n-1 characters. */
	glong n_chars = g_utf8_strlen(text, (gssize)len);
	guint lo = MAX(min_chars, 1), hi = (guint)MAX(n_chars - 1, 0);
	gsize best = 0;
	while (lo <= hi) {
		guint mid = lo + (hi - lo) / 2;
		gsize off = (gsize)(g_utf8_offset_to_pointer(text, mid) - text);
		if (measure(text, off, data) + ew <= avail) {
			best = off;
			lo = mid + 1;
		} else {
			if (mid == 0)
				break;
			hi = mid - 1;
		}
	}
	if (best && ellipsis)
		*ellipsis = TRUE;
	return best;
}

/* ---- Curves ---- */

static void env_fill(const LhAxis *a, double ta, double tb, double v, guint n_cols, double *out)
{
	double pa = isinf(ta) ? -INFINITY : lh_axis_to_px(a, ta) - a->x0;
	double pb = isinf(tb) ? INFINITY : lh_axis_to_px(a, tb) - a->x0;
	if (pb <= 0 || pa >= n_cols)
		return;
	guint c0 = pa <= 0 ? 0 : (guint)floor(pa);
	guint c1 = pb >= n_cols ? n_cols - 1 : (guint)(ceil(pb) - 1);
	c1 = MAX(c1, c0); /* a segment thinner than a pixel still lies in its column */
	for (guint c = c0; c <= c1 && c < n_cols; c++)
		if (v > out[c])
			out[c] = v;
}

void lh_mem_envelope(const LhMemPoint *pts, guint n, const LhAxis *a, guint n_cols, double *out)
{
	for (guint c = 0; c < n_cols; c++)
		out[c] = 0;
	if (n_cols == 0)
		return;
	if (n == 0)
		return;
	/* Before the first point the curve is 0, which the initial value already says. */
	for (guint i = 0; i < n; i++) {
		double ta = (double)pts[i].t;
		double tb = i + 1 < n ? (double)pts[i + 1].t : INFINITY;
		if (tb <= ta)
			continue;
		env_fill(a, ta, tb, (double)pts[i].device_bytes, n_cols, out);
	}
}
