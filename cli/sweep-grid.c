/* lhsim sweep — the grid (cli/sweep-grid.h). */
#include "cli/sweep-grid.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAX_POINTS 1000000
#define MAX_GRAPHS 10000

static void axis_free(Axis *a)
{
	if (!a)
		return;
	g_free(a->column);
	g_free(a->key);
	g_free(a->arg);
	if (a->values)
		g_ptr_array_free(a->values, TRUE);
	g_free(a);
}

void grid_free(Grid *g)
{
	if (!g)
		return;
	if (g->axes)
		g_ptr_array_free(g->axes, TRUE);
	if (g->scheds)
		g_ptr_array_free(g->scheds, TRUE);
	g_strfreev(g->fixed);
	if (g->graphs)
		g_ptr_array_free(g->graphs, TRUE);
	if (g->files)
		g_ptr_array_free(g->files, TRUE);
	if (g->hws)
		g_ptr_array_free(g->hws, TRUE);
	g_free(g->fixed_desc);
	g_free(g);
}

static Axis *ax(const Grid *g, guint k)
{
	return g_ptr_array_index(g->axes, k);
}

static const char *val(const Axis *a, guint i)
{
	return g_ptr_array_index(a->values, i);
}

/* ---- values ---- */

static gboolean parse_number(const char *s, double *out)
{
	char *end = NULL;
	g_autofree char *t = g_strstrip(g_strdup(s));
	if (!*t)
		return FALSE;
	*out = g_ascii_strtod(t, &end);
	return *end == '\0' && isfinite(*out);
}

static gboolean integral(double v)
{
	return v == floor(v) && fabs(v) < 9007199254740992.0; /* 2^53 */
}

static gboolean is_swept(const char *spec)
{
	return strpbrk(spec, ":,") != NULL;
}

/* "a:b[:step]" or "v1,v2,...": the values as text, in the order given; NULL after printing
 * what is wrong with @arg (the argument as given). */
static GPtrArray *parse_values(const char *arg, const char *spec)
{
	g_autoptr(GPtrArray) vals = g_ptr_array_new_with_free_func(g_free);
	if (strchr(spec, ':')) {
		g_auto(GStrv) f = g_strsplit(spec, ":", -1);
		guint nf = g_strv_length(f);
		double a, b, step = 1;
		if (nf < 2 || nf > 3 || !parse_number(f[0], &a) || !parse_number(f[1], &b) ||
		    (nf == 3 && !parse_number(f[2], &step))) {
			cli_usage("sweep",
			          "%s: a range is FIRST:LAST or FIRST:LAST:STEP, in numbers", arg);
			return NULL;
		}
		if (step <= 0 || b < a) {
			cli_usage("sweep",
			          "%s: the range must go up (FIRST <= LAST) with a positive "
			          "STEP",
			          arg);
			return NULL;
		}
		double count = floor((b - a) / step + 1e-9) + 1;
		if (count > MAX_POINTS) {
			cli_usage("sweep", "%s: %.0f values; a sweep takes at most %d", arg, count,
			          MAX_POINTS);
			return NULL;
		}
		gboolean ints = integral(a) && integral(b) && integral(step);
		for (guint i = 0; i < (guint)count; i++) {
			double v = a + (double)i * step;
			if (ints) {
				g_ptr_array_add(vals,
				                g_strdup_printf("%" G_GINT64_FORMAT, (gint64)v));
			} else {
				char buf[G_ASCII_DTOSTR_BUF_SIZE];
				/* 12 digits drop the residue of a + i * step (0.30000000000000004).
				 */
				g_ascii_formatd(buf, sizeof buf, "%.12g", v);
				g_ptr_array_add(vals, g_strdup(buf));
			}
		}
		return g_steal_pointer(&vals);
	}
	g_auto(GStrv) items = g_strsplit(spec, ",", -1);
	for (guint i = 0; items[i]; i++) {
		char *v = g_strstrip(items[i]);
		if (!*v) {
			cli_usage("sweep", "%s: value %u of the list is empty", arg, i + 1);
			return NULL;
		}
		for (guint k = 0; k < vals->len; k++)
			if (!strcmp(g_ptr_array_index(vals, k), v)) {
				cli_usage("sweep", "%s: value '%s' is listed twice", arg, v);
				return NULL;
			}
		g_ptr_array_add(vals, g_strdup(v));
	}
	return g_steal_pointer(&vals);
}

static Axis *axis_new(AxisKind kind, const char *column, const char *key, const char *arg,
                      GPtrArray *values)
{
	Axis *a = g_new0(Axis, 1);
	a->kind = kind;
	a->column = g_strdup(column);
	a->key = g_strdup(key);
	a->arg = g_strdup(arg);
	a->values = values;
	return a;
}

/* ---- coordinates ---- */

static void coords(const Grid *g, guint i, guint *idx)
{
	for (guint k = g->axes->len; k-- > 0;) {
		guint m = ax(g, k)->values->len;
		idx[k] = i % m;
		i /= m;
	}
}

static guint index_of(const Grid *g, const guint *idx)
{
	guint i = 0;
	for (guint k = 0; k < g->axes->len; k++)
		i = i * ax(g, k)->values->len + idx[k];
	return i;
}

static gboolean graph_axis(const Grid *g, const Axis *a)
{
	return a->kind == AX_FILE || a->kind == AX_GEN || (a->kind == AX_SEED && g->gen_seed);
}

static guint graph_index(const Grid *g, const guint *idx)
{
	guint gi = 0;
	for (guint k = 0; k < g->axes->len; k++)
		if (graph_axis(g, ax(g, k)))
			gi = gi * ax(g, k)->values->len + idx[k];
	return gi;
}

static guint hw_index(const Grid *g, const guint *idx)
{
	guint hi = 0;
	for (guint k = 0; k < g->axes->len; k++)
		if (ax(g, k)->kind == AX_HW)
			hi = hi * ax(g, k)->values->len + idx[k];
	return hi;
}

static const CliSched *sched_of(const Grid *g, const guint *idx)
{
	return g_ptr_array_index(g->scheds, idx[g->sched_axis]);
}

/* Whether scheduler @s's runs depend on axis @a. */
static gboolean depends(const Grid *g, const CliSched *s, const Axis *a)
{
	if (a->kind == AX_PARAM)
		return cli_has_param(s->s, a->key);
	if (a->kind == AX_SEED)
		return g->gen_seed || cli_has_param(s->s, "seed");
	return TRUE;
}

guint grid_canonical(const Grid *g, guint i)
{
	guint idx[64] = {0};
	coords(g, i, idx);
	const CliSched *s = sched_of(g, idx);
	for (guint k = 0; k < g->axes->len; k++)
		if (!depends(g, s, ax(g, k)))
			idx[k] = 0;
	return index_of(g, idx);
}

/* The parameters of the run at @idx (g_strfreev). */
static char **point_params(const Grid *g, const guint *idx)
{
	const CliSched *s = sched_of(g, idx);
	GPtrArray *kv = g_ptr_array_new_with_free_func(g_free);
	for (char **q = g->fixed; q && *q; q++)
		g_ptr_array_add(kv, g_strdup(*q));
	for (guint k = 0; k < g->axes->len; k++) {
		const Axis *a = ax(g, k);
		if (a->kind == AX_PARAM || (a->kind == AX_SEED && cli_has_param(s->s, "seed")))
			g_ptr_array_add(kv, g_strdup_printf("%s=%s", a->key, val(a, idx[k])));
	}
	g_ptr_array_add(kv, NULL);
	char **r = cli_sched_params(s, (char **)kv->pdata, NULL);
	g_ptr_array_free(kv, TRUE);
	return r;
}

/* ---- building the grid ---- */

/* --gen W:k=v:k=a:b: the workload, and its options as "k=spec" (a token without '=' continues
 * the previous option's range). */
static gboolean parse_gen(const char *arg, char **workload, GPtrArray *opts)
{
	g_auto(GStrv) t = g_strsplit(arg, ":", -1);
	if (!t[0] || !*g_strstrip(t[0])) {
		cli_usage("sweep", "--gen '%s': give WORKLOAD[:OPTION=VALUE...]", arg);
		return FALSE;
	}
	*workload = g_strdup(t[0]);
	for (guint i = 1; t[i]; i++) {
		if (strchr(t[i], '=')) {
			if (t[i][0] == '=') {
				cli_usage("sweep", "--gen '%s': '%s' has no option name", arg,
				          t[i]);
				return FALSE;
			}
			g_ptr_array_add(opts, g_strdup(t[i]));
		} else if (opts->len) {
			char **last = (char **)&opts->pdata[opts->len - 1];
			char *s = g_strconcat(*last, ":", t[i], NULL);
			g_free(*last);
			*last = s;
		} else {
			cli_usage("sweep", "--gen '%s': '%s' is not of the form OPTION=VALUE", arg,
			          t[i]);
			return FALSE;
		}
	}
	return TRUE;
}

static gboolean key_taken(GPtrArray *keys, const char *key, const char *what)
{
	for (guint i = 0; i < keys->len; i++)
		if (!strcmp(g_ptr_array_index(keys, i), key)) {
			cli_usage("sweep", "%s '%s' is given twice", what, key);
			return TRUE;
		}
	g_ptr_array_add(keys, g_strdup(key));
	return FALSE;
}

static GPtrArray *new_axes(void)
{
	return g_ptr_array_new_with_free_func((GDestroyNotify)axis_free);
}

int grid_new(const GridSpec *sp, Grid **out)
{
	g_autoptr(Grid) g = g_new0(Grid, 1);
	g->axes = new_axes();
	GError *e = NULL;
	GString *fixed_desc = g_string_new(NULL);
	int rc = LH_EXIT_BAD_INPUT;
	g_autoptr(GPtrArray) pax = new_axes(), hax = new_axes(), gax = new_axes();
	g_autoptr(GPtrArray) fixed = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) hw_fixed = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) gen_fixed = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) seen = g_ptr_array_new_with_free_func(g_free);
	g_autofree char *workload = NULL;
	Axis *seed_ax = NULL;
	g_autoptr(LhHw) base = NULL;

	/* -p: fixed and swept parameters. */
	for (char **q = sp->params; q && *q; q++) {
		const char *eq = strchr(*q, '=');
		if (!eq || eq == *q) {
			cli_usage("sweep", "-p '%s' is not of the form NAME=VALUE", *q);
			goto fail;
		}
		g_autofree char *key = g_strndup(*q, eq - *q);
		if (key_taken(seen, key, "-p"))
			goto fail;
		if (!is_swept(eq + 1)) {
			g_ptr_array_add(fixed, g_strdup(*q));
			g_string_append_printf(fixed_desc, "%s%s", fixed_desc->len ? " " : "", *q);
			continue;
		}
		g_autofree char *arg = g_strdup_printf("-p %s", *q);
		GPtrArray *v = parse_values(arg, eq + 1);
		if (!v)
			goto fail;
		g_ptr_array_add(pax, axis_new(AX_PARAM, key, key, arg, v));
	}
	g_ptr_array_add(fixed, NULL);
	g->fixed = g_strdupv((char **)fixed->pdata);

	/* --hw-set */
	if (cli_hw_is_map(sp->hw_name)) {
		cli_usage("sweep",
		          "--hw %s: sweep takes one hardware for every device (a name or "
		          "an .ini, which --hw-set varies); a map of devices goes with run "
		          "and compare",
		          sp->hw_name);
		goto fail;
	}
	base = cli_load_hw(sp->hw_name, &e);
	if (!base)
		goto fail_e;
	g_ptr_array_set_size(seen, 0);
	for (char **q = sp->hw_sets; q && *q; q++) {
		const char *eq = strchr(*q, '=');
		if (!eq || eq == *q) {
			cli_usage("sweep", "--hw-set '%s' is not of the form KEY=VALUE", *q);
			goto fail;
		}
		g_autofree char *key = g_strndup(*q, eq - *q);
		if (key_taken(seen, key, "--hw-set"))
			goto fail;
		g_autofree char *arg = g_strdup_printf("--hw-set %s", *q);
		GPtrArray *v = is_swept(eq + 1) ? parse_values(arg, eq + 1) : NULL;
		if (is_swept(eq + 1) && !v)
			goto fail;
		if (!v) {
			v = g_ptr_array_new_with_free_func(g_free);
			g_ptr_array_add(v, g_strdup(eq + 1));
		}
		for (guint i = 0; i < v->len; i++) {
			g_autoptr(LhHw) t = lh_hw_copy(base);
			if (!lh_hw_set_key(t, key, g_ptr_array_index(v, i), &e)) {
				cli_usage("sweep", "%s: %s", arg, e->message);
				g_clear_error(&e);
				g_ptr_array_free(v, TRUE);
				goto fail;
			}
		}
		if (v->len == 1 && !is_swept(eq + 1)) {
			lh_hw_set_key(base, key, g_ptr_array_index(v, 0), NULL);
			g_ptr_array_add(hw_fixed, g_strdup(arg));
			g_string_append_printf(fixed_desc, "%shw.%s", fixed_desc->len ? " " : "",
			                       *q);
			g_ptr_array_free(v, TRUE);
			continue;
		}
		g_autofree char *col = g_strdup_printf("hw.%s", key);
		g_ptr_array_add(hax, axis_new(AX_HW, col, key, arg, v));
	}
	if (hw_fixed->len && !hax->len) {
		g_ptr_array_add(hw_fixed, NULL);
		g_autofree char *where = g_strjoinv(" ", (char **)hw_fixed->pdata);
		g_ptr_array_remove_index(hw_fixed, hw_fixed->len - 1);
		if (!lh_hw_validate(base, where, &e))
			goto fail_e;
	}

	/* --gen */
	g_ptr_array_set_size(seen, 0);
	for (char **q = sp->gens; q && *q; q++) {
		g_autofree char *w = NULL;
		g_autoptr(GPtrArray) opts = g_ptr_array_new_with_free_func(g_free);
		if (!parse_gen(*q, &w, opts))
			goto fail;
		if (workload && strcmp(workload, w) != 0) {
			cli_usage("sweep",
			          "--gen '%s': every --gen names the same workload (here "
			          "'%s'); sweep other workloads as GRAPH files",
			          *q, workload);
			goto fail;
		}
		if (!workload) {
			workload = g_strdup(w);
			if (!lh_gen_workload_help(w)) {
				const char *none[] = {NULL};
				lh_graph_free(lh_gen_workload(w, none, &e)); /* for its error */
				cli_usage("sweep", "--gen '%s': %s", *q,
				          e ? e->message : "unknown");
				g_clear_error(&e);
				goto fail;
			}
		}
		for (guint i = 0; i < opts->len; i++) {
			const char *o = g_ptr_array_index(opts, i);
			const char *eq = strchr(o, '=');
			g_autofree char *key = g_strndup(o, eq - o);
			g_autofree char *arg = g_strdup_printf("--gen %s:%s", w, o);
			if (!lh_gen_workload_has_option(w, key)) {
				const char *kv[] = {o, NULL};
				lh_graph_free(lh_gen_workload(w, kv, &e)); /* for its error */
				cli_usage("sweep", "%s: %s", arg,
				          e ? e->message : "no such option");
				g_clear_error(&e);
				goto fail;
			}
			if (key_taken(seen, key, "--gen option"))
				goto fail;
			if (!is_swept(eq + 1)) {
				g_ptr_array_add(gen_fixed, g_strdup(o));
				g_string_append_printf(fixed_desc, "%sgen.%s",
				                       fixed_desc->len ? " " : "", o);
				continue;
			}
			GPtrArray *v = parse_values(arg, eq + 1);
			if (!v)
				goto fail;
			g_autofree char *col = g_strdup_printf("gen.%s", key);
			g_ptr_array_add(gax, axis_new(AX_GEN, col, key, arg, v));
		}
	}

	/* --seeds */
	if (sp->seeds) {
		g_autofree char *arg = g_strdup_printf("--seeds %s", sp->seeds);
		GPtrArray *v = parse_values(arg, sp->seeds);
		if (!v)
			goto fail;
		seed_ax = axis_new(AX_SEED, "seed", "seed", arg, v);
		for (guint i = 0; i < v->len; i++) {
			double d;
			if (!parse_number(g_ptr_array_index(v, i), &d) || !integral(d) || d < 0) {
				cli_usage("sweep", "%s: '%s' is not a seed (a whole number >= 0)",
				          arg, (char *)g_ptr_array_index(v, i));
				goto fail;
			}
		}
		g->gen_seed = workload && lh_gen_workload_has_option(workload, "seed");
		if (g->gen_seed &&
		    g_ptr_array_find_with_equal_func(seen, "seed", g_str_equal, NULL)) {
			cli_usage("sweep", "%s: --gen sets the workload's seed already", arg);
			goto fail;
		}
	}

	/* The graphs: files, or generated; one per graph coordinate. */
	g->files = g_ptr_array_new_with_free_func(g_free);
	g->graphs = g_ptr_array_new_with_free_func((GDestroyNotify)lh_graph_free);
	if (sp->files->len >= 2) {
		GPtrArray *v = g_ptr_array_new_with_free_func(g_free);
		for (guint i = 0; i < sp->files->len; i++) {
			const char *f = g_ptr_array_index(sp->files, i);
			for (guint k = 0; k < v->len; k++)
				if (!strcmp(g_ptr_array_index(v, k), f)) {
					cli_usage("sweep", "GRAPH '%s' is given twice", f);
					g_ptr_array_free(v, TRUE);
					goto fail;
				}
			g_ptr_array_add(v, g_strdup(f));
		}
		g_ptr_array_add(g->axes, axis_new(AX_FILE, "file", "file", "GRAPH", v));
	}
	for (guint i = 0; i < gax->len; i++)
		g_ptr_array_add(g->axes, g_ptr_array_steal_index(gax, i--));
	if (g->gen_seed)
		g_ptr_array_add(g->axes, seed_ax); /* for now: the graph coordinates */
	guint64 ng = 1;
	for (guint k = 0; k < g->axes->len && ng <= MAX_GRAPHS; k++)
		ng *= ax(g, k)->values->len;
	if (ng > MAX_GRAPHS) {
		cli_usage("sweep",
		          "more than %d graphs to generate or load; a sweep takes at most "
		          "%d",
		          MAX_GRAPHS, MAX_GRAPHS);
		goto fail;
	}
	for (guint gi = 0; gi < (guint)ng; gi++) {
		guint idx[64] = {0};
		coords(g, gi, idx);
		LhGraph *gr = NULL;
		if (workload) {
			g_autoptr(GPtrArray) kv = g_ptr_array_new_with_free_func(g_free);
			for (guint k = 0; k < gen_fixed->len; k++)
				g_ptr_array_add(kv, g_strdup(g_ptr_array_index(gen_fixed, k)));
			for (guint k = 0; k < g->axes->len; k++) {
				const Axis *a = ax(g, k);
				g_ptr_array_add(kv,
				                g_strdup_printf("%s=%s", a->key, val(a, idx[k])));
			}
			g_ptr_array_add(kv, NULL);
			gr = lh_gen_workload(workload, (const char *const *)kv->pdata, &e);
			if (!gr) {
				/* Name the argument whose option the generator names. */
				const char *blame = NULL;
				for (guint k = 0; k < g->axes->len && !blame; k++) {
					g_autofree char *q = g_strdup_printf("'%s'", ax(g, k)->key);
					if (strstr(e->message, q))
						blame = ax(g, k)->arg;
				}
				for (guint k = 0; k < gen_fixed->len && !blame; k++) {
					const char *o = g_ptr_array_index(gen_fixed, k);
					g_autofree char *q =
					    g_strdup_printf("'%.*s'", (int)strcspn(o, "="), o);
					if (strstr(e->message, q))
						blame = o;
				}
				if (blame && !g_str_has_prefix(blame, "--"))
					cli_usage("sweep", "--gen %s:%s: %s", workload, blame,
					          e->message);
				else
					cli_usage("sweep", "%s: %s", blame ? blame : "--gen",
					          e->message);
				g_clear_error(&e);
				goto fail;
			}
		} else {
			const char *f = sp->files->len ? g_ptr_array_index(sp->files, gi) : NULL;
			gr = cli_load_graph(f, &e);
			if (!gr)
				goto fail_e;
		}
		g_ptr_array_add(g->graphs, gr);
		if (!cli_apply_profile(gr, sp->profile, base, &e))
			goto fail_e;
	}
	if (g->gen_seed)
		g_ptr_array_steal_index(g->axes, g->axes->len - 1); /* back at the end, below */

	/* The schedulers. */
	if (sp->sched) {
		g->scheds = cli_sched_parse(sp->sched, &e);
		if (!g->scheds)
			goto fail_e;
		for (guint i = 0; i < g->scheds->len; i++) {
			const CliSched *en = g_ptr_array_index(g->scheds, i);
			for (guint k = 0; k < pax->len; k++)
				if (cli_sched_own(en, ((Axis *)g_ptr_array_index(pax, k))->key)) {
					cli_usage(
					    "sweep", "--sched '%s' fixes '%s', a swept parameter",
					    en->label, ((Axis *)g_ptr_array_index(pax, k))->key);
					goto fail;
				}
			for (guint k = 0; k < i; k++)
				if (!strcmp(((CliSched *)g_ptr_array_index(g->scheds, k))->label,
				            en->label)) {
					cli_usage("sweep", "--sched lists '%s' twice", en->label);
					goto fail;
				}
		}
	} else {
		g->scheds = g_ptr_array_new_with_free_func((GDestroyNotify)cli_sched_free);
		g_autofree const LhScheduler **all = lh_scheduler_list();
		for (guint i = 0; all[i]; i++) {
			gboolean any = pax->len == 0;
			for (guint k = 0; k < pax->len; k++)
				any = any || cli_has_param(
				                 all[i], ((Axis *)g_ptr_array_index(pax, k))->key);
			if (!any)
				continue;
			CliSched *en = g_new0(CliSched, 1);
			en->label = g_strdup(all[i]->name);
			en->s = all[i];
			en->own = g_new0(char *, 1);
			g_ptr_array_add(g->scheds, en);
		}
		if (!g->scheds->len) {
			cli_usage("sweep", "%s: no scheduler has parameter '%s' (see 'lhsim list')",
			          ((Axis *)g_ptr_array_index(pax, 0))->arg,
			          ((Axis *)g_ptr_array_index(pax, 0))->key);
			goto fail;
		}
		/* `xla` joins only when a graph has XLA's sequence to replay. */
		gboolean any_seq = FALSE;
		for (guint i = 0; i < g->graphs->len; i++) {
			guint32 n_seq;
			any_seq =
			    any_seq || lh_graph_schedule(g_ptr_array_index(g->graphs, i), &n_seq);
		}
		if (g->scheds->len > 1 && !any_seq)
			for (guint i = g->scheds->len; i-- > 0;)
				if (((CliSched *)g_ptr_array_index(g->scheds, i))->s ==
				    &lh_sched_xla)
					g_ptr_array_remove_index(g->scheds, i);
	}
	for (char **q = sp->params; q && *q; q++) {
		gboolean any = FALSE;
		for (guint i = 0; i < g->scheds->len; i++)
			any = any ||
			      cli_has_param(((CliSched *)g_ptr_array_index(g->scheds, i))->s, *q);
		if (!any) {
			cli_usage("sweep",
			          "-p %s: no listed scheduler has parameter '%.*s' (see "
			          "'lhsim list')",
			          *q, (int)strcspn(*q, "="), *q);
			goto fail;
		}
	}
	if (seed_ax && !g->gen_seed) {
		gboolean any = FALSE;
		for (guint i = 0; i < g->scheds->len; i++)
			any = any || cli_has_param(((CliSched *)g_ptr_array_index(g->scheds, i))->s,
			                           "seed");
		if (!any) {
			cli_usage("sweep",
			          "%s: neither the workload nor a listed scheduler takes a "
			          "seed (generate one that does: --gen random)",
			          seed_ax->arg);
			goto fail;
		}
	}

	/* The rest of the axes: hardware, schedulers, parameters, seeds. */
	for (guint i = 0; i < hax->len; i++)
		g_ptr_array_add(g->axes, g_ptr_array_steal_index(hax, i--));
	g->sched_axis = g->axes->len;
	GPtrArray *labels = g_ptr_array_new_with_free_func(g_free);
	for (guint i = 0; i < g->scheds->len; i++)
		g_ptr_array_add(labels,
		                g_strdup(((CliSched *)g_ptr_array_index(g->scheds, i))->label));
	g_ptr_array_add(g->axes, axis_new(AX_SCHED, "scheduler", "scheduler", "--sched", labels));
	for (guint i = 0; i < pax->len; i++)
		g_ptr_array_add(g->axes, g_ptr_array_steal_index(pax, i--));
	if (seed_ax)
		g_ptr_array_add(g->axes, g_steal_pointer(&seed_ax));
	if (g->axes->len > 60) {
		cli_usage("sweep", "%u axes; a sweep takes at most 60", g->axes->len);
		goto fail;
	}
	guint64 n = 1;
	for (guint k = 0; k < g->axes->len && n <= MAX_POINTS; k++)
		n *= ax(g, k)->values->len;
	gboolean any_swept = FALSE;
	for (guint k = 0; k < g->axes->len; k++)
		any_swept = any_swept || ax(g, k)->kind != AX_SCHED;
	if (!any_swept) {
		cli_usage("sweep",
		          "give the swept parameter as -p NAME=FIRST:LAST[:STEP] or -p "
		          "NAME=V1,V2,..., or sweep --hw-set, --gen, several GRAPHs or --seeds");
		goto fail;
	}
	if (n > MAX_POINTS) {
		cli_usage("sweep",
		          "more than %d points: a sweep takes at most %d (cut the grid, or "
		          "sweep parts of it)",
		          MAX_POINTS, MAX_POINTS);
		goto fail;
	}
	g->n = (guint)n;

	/* The hardware of each hardware coordinate, checked whole. */
	g->hws = g_ptr_array_new_with_free_func((GDestroyNotify)lh_hw_free);
	guint nh = 1;
	for (guint k = 0; k < g->axes->len; k++)
		if (ax(g, k)->kind == AX_HW)
			nh *= ax(g, k)->values->len;
	for (guint hi = 0; hi < nh; hi++) {
		LhHw *hw = lh_hw_copy(base);
		g_ptr_array_add(g->hws, hw);
		guint r = hi;
		GString *what = g_string_new(NULL);
		for (guint k = g->axes->len; k-- > 0;) {
			const Axis *a = ax(g, k);
			if (a->kind != AX_HW)
				continue;
			const char *v = val(a, r % a->values->len);
			r /= a->values->len;
			lh_hw_set_key(hw, a->key, v, NULL);
			g_string_prepend(what, " ");
			g_string_prepend(what, v);
			g_string_prepend(what, "=");
			g_string_prepend(what, a->key);
		}
		if (!lh_hw_validate(hw, hw->name, &e)) {
			g_autofree char *w = g_string_free(what, FALSE);
			g_strchomp(w);
			cli_usage("sweep", "--hw-set at %s: %s", w, e->message);
			g_clear_error(&e);
			goto fail;
		}
		g_string_free(what, TRUE);
	}

	/* Every scheduler's parameters at every value, before anything runs, so that a value out
	 * of range is a usage error rather than a column of failures. */
	for (guint i = 0; i < g->n; i++) {
		guint idx[64] = {0};
		coords(g, i, idx);
		gboolean first = TRUE;
		for (guint k = 0; k < g->axes->len; k++)
			if (ax(g, k)->kind != AX_PARAM && ax(g, k)->kind != AX_SCHED &&
			    ax(g, k)->kind != AX_SEED && idx[k])
				first = FALSE;
		if (!first || grid_canonical(g, i) != i)
			continue;
		const CliSched *s = sched_of(g, idx);
		g_auto(GStrv) kv = point_params(g, idx);
		g_autoptr(LhParams) pp = lh_params_new(s->s->params, (const char *const *)kv, &e);
		if (!pp) {
			g_prefix_error(&e, "%s: ", s->label);
			goto fail_e;
		}
	}
	for (guint i = 0; i < g->scheds->len; i++) {
		const CliSched *en = g_ptr_array_index(g->scheds, i);
		for (guint k = 0; k < g->axes->len; k++)
			if (ax(g, k)->kind == AX_PARAM && !cli_has_param(en->s, ax(g, k)->key) &&
			    ax(g, k)->values->len > 1)
				fprintf(stderr,
				        "lhsim sweep: note: %s has no parameter '%s': it runs "
				        "once for its values\n",
				        en->s->name, ax(g, k)->key);
	}
	g->fixed_desc = g_string_free(g_steal_pointer(&fixed_desc), FALSE);
	*out = g_steal_pointer(&g);
	return 0;
fail_e:
	rc = cli_fail(e);
fail:
	if (seed_ax && (!g->axes->len || g_ptr_array_index(g->axes, g->axes->len - 1) != seed_ax))
		axis_free(seed_ax);
	if (fixed_desc)
		g_string_free(fixed_desc, TRUE);
	return rc;
}

gboolean grid_parse_metric(const char *s, Metric *m)
{
	static const char *const names[] = {"makespan", "peak", "exposed"};
	for (guint i = 0; i < G_N_ELEMENTS(names); i++)
		if (!strcmp(s, names[i])) {
			*m = (Metric)i;
			return TRUE;
		}
	return FALSE;
}

/* The axes a plot shows: every one but the schedulers and the seeds. */
static guint plot_dims(const Grid *g, guint *dims)
{
	guint nd = 0;
	for (guint k = 0; k < g->axes->len; k++)
		if (ax(g, k)->kind != AX_SCHED && ax(g, k)->kind != AX_SEED) {
			if (nd < 8)
				dims[nd] = k;
			nd++;
		}
	return nd;
}

int grid_check_plot(const Grid *g)
{
	guint dims[8], nd = plot_dims(g, dims);
	if (nd == 1 || nd == 2)
		return 0;
	if (nd == 0)
		return cli_usage("sweep", "-o draws against a swept axis: this sweep varies only "
		                          "the schedulers or the seeds (use the table or --csv)");
	GString *s = g_string_new(NULL);
	for (guint k = 0; k < nd && k < 8; k++)
		g_string_append_printf(s, "%s%s", k ? ", " : "", ax(g, dims[k])->column);
	g_autofree char *l = g_string_free(s, FALSE);
	return cli_usage("sweep",
	                 "-o draws one swept axis (lines) or two (a heat map); this "
	                 "sweep has %u (%s): use --csv",
	                 nd, l);
}

char **grid_header(const Grid *g)
{
	GPtrArray *h = g_ptr_array_new();
	g_ptr_array_add(h, g_strdup("graph"));
	g_ptr_array_add(h, g_strdup("hw"));
	g_ptr_array_add(h, g_strdup("scheduler"));
	for (guint k = 0; k < g->axes->len; k++)
		if (ax(g, k)->kind != AX_SCHED)
			g_ptr_array_add(h, g_strdup(ax(g, k)->column));
	g_auto(GStrv) m = g_strsplit(SWEEP_METRICS, ",", -1);
	for (guint i = 0; m[i]; i++)
		g_ptr_array_add(h, g_strdup(m[i]));
	g_ptr_array_add(h, NULL);
	return (char **)g_ptr_array_free(h, FALSE);
}

void grid_run_point(const Grid *g, guint i, gboolean strict, Result *r)
{
	guint idx[64] = {0};
	coords(g, i, idx);
	const CliSched *s = sched_of(g, idx);
	const LhGraph *gr = g_ptr_array_index(g->graphs, graph_index(g, idx));
	const LhHw *hw = g_ptr_array_index(g->hws, hw_index(g, idx));
	g_auto(GStrv) kv = point_params(g, idx);
	GError *e = NULL;
	memset(r, 0, sizeof *r);
	LhPlan *plan = lh_scheduler_run(s->s, gr, hw, (const char *const *)kv, NULL, &e);
	if (plan && lh_plan_validate(plan, gr, NULL, &e)) {
		LhSimOptions opt = {.strict_memory = strict, .skip_validate = TRUE};
		LhTrace *tr = lh_simulate(gr, hw, plan, &opt, &r->over_memory, &e);
		if (tr) {
			LhMetrics m;
			lh_metrics_compute(tr, gr, hw, plan, &m);
			r->ok = TRUE;
			r->makespan = m.makespan;
			r->peak_device = m.peak_device;
			r->exposed = m.exposed_transfer;
			r->bound = m.bounds.bound;
			r->ratio = m.ratio;
			r->overlap = m.overlap;
			lh_metrics_clear(&m);
			lh_trace_free(tr);
		}
	}
	if (plan && !r->ok)
		cli_blame_scheduler(s->s, &e);
	if (!r->ok)
		r->error = g_strdup(e ? e->message : "the run failed and gave no reason");
	g_clear_error(&e);
	lh_plan_free(plan);
}

/* The point's coordinates as row fields (a GPtrArray to append the rest to). */
static GPtrArray *coord_fields(const Grid *g, const guint *idx)
{
	GPtrArray *f = g_ptr_array_new();
	g_ptr_array_add(f,
	                g_strdup(lh_graph_name(g_ptr_array_index(g->graphs, graph_index(g, idx)))));
	g_ptr_array_add(f, g_strdup(((LhHw *)g_ptr_array_index(g->hws, hw_index(g, idx)))->name));
	g_ptr_array_add(f, g_strdup(sched_of(g, idx)->label));
	for (guint k = 0; k < g->axes->len; k++)
		if (ax(g, k)->kind != AX_SCHED)
			g_ptr_array_add(f, g_strdup(val(ax(g, k), idx[k])));
	return f;
}

char **grid_row(const Grid *g, guint i, const Result *r)
{
	guint idx[64] = {0};
	coords(g, i, idx);
	GPtrArray *f = coord_fields(g, idx);
	const CliSched *s = sched_of(g, idx);
	GString *lacks = g_string_new(NULL);
	for (guint k = 0; k < g->axes->len; k++)
		if ((ax(g, k)->kind == AX_PARAM || ax(g, k)->kind == AX_SEED) &&
		    !depends(g, s, ax(g, k)))
			g_string_append_printf(lacks, "%s'%s'", lacks->len ? " or " : "",
			                       ax(g, k)->key);
	if (!r->ok) {
		g_ptr_array_add(f, g_strdup("failed"));
		for (int k = 0; k < 6; k++)
			g_ptr_array_add(f, g_strdup(""));
		g_ptr_array_add(f, g_strdup(r->error));
	} else {
		g_ptr_array_add(f, g_strdup(lacks->len       ? "n/a"
		                            : r->over_memory ? "over-memory"
		                                             : "ok"));
		g_ptr_array_add(f, g_strdup_printf("%" G_GINT64_FORMAT, r->makespan));
		g_ptr_array_add(f, g_strdup_printf("%.3f", r->bound));
		g_ptr_array_add(f, g_strdup_printf("%.6f", r->ratio));
		g_ptr_array_add(f, g_strdup_printf("%" G_GINT64_FORMAT, r->peak_device));
		g_ptr_array_add(f, g_strdup_printf("%" G_GINT64_FORMAT, r->exposed));
		g_ptr_array_add(f, g_strdup_printf("%.6f", r->overlap));
		g_ptr_array_add(f, lacks->len
		                       ? g_strdup_printf("%s has no parameter %s (one run "
		                                         "repeated for every value)%s",
		                                         s->s->name, lacks->str,
		                                         r->over_memory ? " (over memory)" : "")
		                       : g_strdup(""));
	}
	g_string_free(lacks, TRUE);
	g_ptr_array_add(f, NULL);
	return (char **)g_ptr_array_free(f, FALSE);
}

static char *coord_key(char **fields, guint nc)
{
	GString *s = g_string_new(NULL);
	for (guint c = 0; c < nc; c++) {
		g_string_append(s, fields[c]);
		g_string_append_c(s, '\x1f');
	}
	return g_string_free(s, FALSE);
}

int grid_resume(const Grid *g, const char *path, char **header, const GArray *sel, char ***rows,
                guint *n_resumed)
{
	*n_resumed = 0;
	if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
		fprintf(stderr, "lhsim sweep: --resume %s: no such file yet; every point runs\n",
		        path);
		return 0;
	}
	GError *e = NULL;
	g_autofree char *data = NULL;
	gsize len = 0;
	if (!lh_read_file(path, &data, &len, &e))
		return cli_fail(e);
	if (len == 0) {
		fprintf(stderr, "lhsim sweep: --resume %s: empty; every point runs\n", path);
		return 0;
	}
	g_autoptr(SweepRows) r = sweep_rows_parse(data, len, path, &e);
	if (!r)
		return cli_fail(e);
	if (!g_strv_equal((const char *const *)header, (const char *const *)r->header)) {
		g_autofree char *h1 = g_strjoinv(",", header), *h2 = g_strjoinv(",", r->header);
		fprintf(stderr, "lhsim: --resume %s: its columns (%s) are not this sweep's (%s)\n",
		        path, h2, h1);
		return LH_EXIT_BAD_INPUT;
	}
	guint nc = sweep_n_coords(header);
	g_autoptr(GHashTable) where = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g_autofree gboolean *in_sel = g_new0(gboolean, g->n);
	for (guint k = 0; k < sel->len; k++)
		in_sel[g_array_index(sel, guint, k)] = TRUE;
	for (guint i = 0; i < g->n; i++) {
		guint idx[64] = {0};
		coords(g, i, idx);
		GPtrArray *f = coord_fields(g, idx);
		g_ptr_array_add(f, NULL);
		char **fs = (char **)g_ptr_array_free(f, FALSE);
		g_hash_table_insert(where, coord_key(fs, nc), GUINT_TO_POINTER(i + 1));
		g_strfreev(fs);
	}
	for (guint k = 0; k < r->rows->len; k++) {
		char **f = g_ptr_array_index(r->rows, k);
		g_autofree char *key = coord_key(f, nc);
		guint i = GPOINTER_TO_UINT(g_hash_table_lookup(where, key));
		if (!i) {
			g_autofree char *c = g_strjoinv(",", f);
			fprintf(stderr,
			        "lhsim: --resume %s: row %u (%s) is not a point of this "
			        "sweep\n",
			        path, k + 1, c);
			return LH_EXIT_BAD_INPUT;
		}
		if (!in_sel[i - 1])
			continue; /* another shard's */
		if (rows[i - 1]) {
			fprintf(stderr, "lhsim: --resume %s: row %u repeats a point\n", path,
			        k + 1);
			return LH_EXIT_BAD_INPUT;
		}
		rows[i - 1] = g_strdupv(f);
		(*n_resumed)++;
	}
	fprintf(stderr, "lhsim sweep: --resume %s: %u of %u points done already\n", path,
	        *n_resumed, sel->len);
	return 0;
}

/* ---- the table ---- */

typedef struct {
	guint n, n_ok;
	double sum[4], sq[4]; /* makespan, ratio, peak, exposed */
	const char *error;    /* the first failure's */
	gboolean over, na;
} Agg;

static void agg_add(Agg *a, char **f, guint nc)
{
	a->n++;
	const char *st = f[nc];
	if (!strcmp(st, "failed")) {
		if (!a->error)
			a->error = f[nc + 7];
		return;
	}
	a->n_ok++;
	a->over = a->over || !strcmp(st, "over-memory") || strstr(f[nc + 7], "(over memory)");
	a->na = a->na || !strcmp(st, "n/a");
	const guint col[4] = {1, 3, 4, 5};
	for (int k = 0; k < 4; k++) {
		double v = g_ascii_strtod(f[nc + col[k]], NULL);
		a->sum[k] += v;
		a->sq[k] += v * v;
	}
}

static double agg_mean(const Agg *a, int k)
{
	return a->n_ok ? a->sum[k] / a->n_ok : 0;
}

/* Sample standard deviation over the successful seeds. */
static double agg_sd(const Agg *a, int k)
{
	if (a->n_ok < 2)
		return 0;
	double m = agg_mean(a, k);
	double v = (a->sq[k] - a->n_ok * m * m) / (a->n_ok - 1);
	return v > 0 ? sqrt(v) : 0;
}

/* "mean ± sd", right-aligned in @w characters (not bytes: "±" takes two). */
static char *mean_sd(const Agg *a, int k, gboolean bytes, int w)
{
	double m = agg_mean(a, k), sd = agg_sd(a, k);
	g_autofree char *ms = bytes ? lh_format_bytes(m) : lh_format_ns(m);
	g_autofree char *ss = bytes ? lh_format_bytes(sd) : lh_format_ns(sd);
	g_autofree char *t = g_strdup_printf("%s ± %s", ms, ss);
	int pad = w - (int)g_utf8_strlen(t, -1);
	return g_strdup_printf("%*s%s", MAX(pad, 0), "", t);
}

static guint n_seeds(const Grid *g)
{
	const Axis *last = ax(g, g->axes->len - 1);
	return last->kind == AX_SEED ? last->values->len : 1;
}

static char *title_of(const Grid *g)
{
	GString *s = g_string_new(NULL);
	if (g->graphs->len == 1) {
		const LhGraph *gr = g_ptr_array_index(g->graphs, 0);
		g_string_append_printf(s, "%s (%u ops)", lh_graph_name(gr), lh_graph_n_ops(gr));
	} else {
		g_string_append_printf(s, "%u graphs", g->graphs->len);
	}
	g_string_append_printf(s, " on %s", ((LhHw *)g_ptr_array_index(g->hws, 0))->name);
	if (g->hws->len > 1)
		g_string_append_printf(s, " (%u variants)", g->hws->len);
	return g_string_free(s, FALSE);
}

guint grid_report(const Grid *g, char **header, char ***rows, const GArray *sel, FILE *f)
{
	guint nc = sweep_n_coords(header), ns = n_seeds(g);
	gboolean seeds = ax(g, g->axes->len - 1)->kind == AX_SEED;
	guint failed = 0, over = 0;
	/* Columns: the scheduler and the axes (not the seed, which is aggregated). */
	g_autoptr(GArray) cols = g_array_new(FALSE, FALSE, sizeof(guint)); /* row field index */
	guint c2 = 3;
	g_array_append_val(cols, (guint){2});
	for (guint k = 0; k < g->axes->len; k++) {
		if (ax(g, k)->kind == AX_SCHED)
			continue;
		if (ax(g, k)->kind != AX_SEED)
			g_array_append_val(cols, c2);
		c2++;
	}
	g_autofree int *w = g_new0(int, cols->len);
	for (guint c = 0; c < cols->len; c++)
		w[c] = MAX((int)strlen(header[g_array_index(cols, guint, c)]), c == 0 ? 9 : 1);
	for (guint k = 0; k < sel->len; k++) {
		char **r = rows[g_array_index(sel, guint, k)];
		for (guint c = 0; c < cols->len; c++)
			w[c] = MAX(w[c], (int)g_utf8_strlen(r[g_array_index(cols, guint, c)], -1));
		failed += !strcmp(r[nc], "failed");
		over += !strcmp(r[nc], "over-memory") || strstr(r[nc + 7], "(over memory)");
	}
	if (f) {
		g_autofree char *t = title_of(g);
		GString *axes = g_string_new(NULL);
		guint n_axes = 0;
		for (guint k = 0; k < g->axes->len; k++)
			if (ax(g, k)->kind != AX_SCHED) {
				g_string_append_printf(axes, "%s%s (%u)", n_axes ? " x " : "",
				                       ax(g, k)->column, ax(g, k)->values->len);
				n_axes++;
			}
		const Axis *only = NULL;
		for (guint k = 0; k < g->axes->len && n_axes == 1; k++)
			if (ax(g, k)->kind != AX_SCHED)
				only = ax(g, k);
		g_autofree char *ad =
		    only ? g_strdup_printf("%s over %u value%s", only->column, only->values->len,
		                           only->values->len == 1 ? "" : "s")
		         : g_strdup_printf("%s x %u scheduler%s = %u points", axes->str,
		                           g->scheds->len, g->scheds->len == 1 ? "" : "s", g->n);
		g_string_free(axes, TRUE);
		fprintf(f, "%s: %s%s%s%s\n", t, ad, *g->fixed_desc ? ", " : "", g->fixed_desc,
		        sel->len < g->n ? "" : "");
		if (sel->len < g->n)
			fprintf(f, "  (this shard: %u of the %u points)\n", sel->len, g->n);
		fputs(" ", f);
		for (guint c = 0; c < cols->len; c++)
			fprintf(f, " %-*s ", w[c], header[g_array_index(cols, guint, c)]);
		if (seeds)
			fprintf(f, " %5s  %23s  %7s  %24s  %23s\n", "seeds", "makespan (mean ± sd)",
			        "ratio", "peak memory (mean ± sd)", "exposed (mean ± sd)");
		else
			fprintf(f, " %12s  %7s  %11s  %16s\n", "makespan", "ratio", "peak memory",
			        "exposed transfer");
	}
	for (guint k = 0; f && k < sel->len;) {
		guint i = g_array_index(sel, guint, k);
		char **r = rows[i];
		/* A group: the seeds of one point (consecutive in grid order). */
		Agg a = {0};
		guint k2 = k;
		while (k2 < sel->len && g_array_index(sel, guint, k2) / ns == i / ns)
			agg_add(&a, rows[g_array_index(sel, guint, k2++)], nc);
		fputs(" ", f);
		for (guint c = 0; c < cols->len; c++) {
			const char *v = r[g_array_index(cols, guint, c)];
			/* %-*s pads bytes; pad by characters for names like "±". */
			int pad = w[c] - (int)g_utf8_strlen(v, -1);
			fprintf(f, " %s%*s ", v, MAX(pad, 0), "");
		}
		if (!a.n_ok) {
			fprintf(f, " failed: %s\n", a.error);
		} else if (seeds) {
			g_autofree char *ms = mean_sd(&a, 0, FALSE, 22),
			                *pk = mean_sd(&a, 2, TRUE, 23),
			                *ex = mean_sd(&a, 3, FALSE, 22);
			g_autofree char *cnt = g_strdup_printf("%u/%u", a.n_ok, a.n);
			fprintf(f, " %5s  %s  %7.3f  %s  %s%s%s", cnt, ms, agg_mean(&a, 1), pk, ex,
			        a.over ? "  over memory" : "",
			        a.na ? "  (no such parameter: same run)" : "");
			if (a.error)
				fprintf(f, "  %u failed: %s", a.n - a.n_ok, a.error);
			fputc('\n', f);
		} else {
			g_autofree char *ms = lh_format_ns(agg_mean(&a, 0));
			g_autofree char *pk = lh_format_bytes(agg_mean(&a, 2));
			g_autofree char *ex = lh_format_ns(agg_mean(&a, 3));
			fprintf(f, " %12s  %7.3f  %11s  %16s%s%s\n", ms, agg_mean(&a, 1), pk, ex,
			        a.over ? "  over memory" : "",
			        a.na ? "  (no such parameter: same run)" : "");
		}
		k = k2;
	}
	if (over) {
		const LhHw *hw = g_ptr_array_index(g->hws, 0);
		if (g->hws->len == 1)
			fprintf(stderr,
			        "lhsim: warning: %u point%s exceed %s's %.1f GiB of device "
			        "memory (use --strict-memory to make this an error)\n",
			        over, over == 1 ? "" : "s", hw->name, hw->memory_gib);
		else
			fprintf(stderr,
			        "lhsim: warning: %u point%s exceed their device's memory (use "
			        "--strict-memory to make this an error)\n",
			        over, over == 1 ? "" : "s");
	}
	return failed;
}

/* ---- the plot ---- */

int grid_plot(const Grid *g, char **header, char ***rows, const char *path, Metric met)
{
	guint dims[8], nd = plot_dims(g, dims);
	guint nc = sweep_n_coords(header), ns = n_seeds(g);
	GError *e = NULL;
	g_autofree char *t = title_of(g);
	g_autofree char *title =
	    g_strdup_printf("%s%s%s", t, *g->fixed_desc ? ", " : "", g->fixed_desc);
	guint ngroups = g->n / ns;
	gboolean ok;
	const LhHw *hw0 = g_ptr_array_index(g->hws, 0);
	if (nd == 1) {
		const Axis *d = ax(g, dims[0]);
		g_autofree LhSweepPoint *sp = g_new0(LhSweepPoint, ngroups);
		g_autofree LhSweepSpread *sd = g_new0(LhSweepSpread, ngroups);
		for (guint j = 0; j < ngroups; j++) {
			guint idx[64] = {0};
			coords(g, j * ns, idx);
			Agg a = {0};
			double bsum = 0;
			for (guint s = 0; s < ns; s++) {
				char **r = rows[j * ns + s];
				agg_add(&a, r, nc);
				if (strcmp(r[nc], "failed") != 0)
					bsum += g_ascii_strtod(r[nc + 2], NULL);
			}
			sp[j].scheduler = sched_of(g, idx)->label;
			sp[j].value = val(d, idx[dims[0]]);
			sp[j].ok = a.n_ok == a.n;
			sp[j].makespan = (gint64)llround(agg_mean(&a, 0));
			sp[j].peak_device = (gint64)llround(agg_mean(&a, 2));
			sp[j].bound = a.n_ok ? bsum / a.n_ok : 0;
			sd[j].makespan_sd = agg_sd(&a, 0);
			sd[j].peak_sd = agg_sd(&a, 2);
		}
		ok = lh_viz_sweep_spread(path, title, d->column, sp, ns > 1 ? sd : NULL, ngroups,
		                         hw0->memory_gib * 1073741824.0, &e);
	} else {
		/* Two axes: the inner one across, the outer one down; a map per scheduler. */
		const Axis *dy = ax(g, dims[0]), *dx = ax(g, dims[1]);
		g_autofree LhHeatCell *cells = g_new0(LhHeatCell, ngroups);
		static const int mk[] = {0, 2, 3};
		for (guint j = 0; j < ngroups; j++) {
			guint idx[64] = {0};
			coords(g, j * ns, idx);
			Agg a = {0};
			for (guint s = 0; s < ns; s++)
				agg_add(&a, rows[j * ns + s], nc);
			cells[j].panel = sched_of(g, idx)->label;
			cells[j].x = idx[dims[1]];
			cells[j].y = idx[dims[0]];
			cells[j].ok = a.n_ok == a.n;
			cells[j].value = agg_mean(&a, mk[met]);
		}
		static const char *const mname[] = {"makespan", "peak device memory",
		                                    "exposed transfer"};
		ok = lh_viz_heatmap(
		    path, title, mname[met], met == METRIC_PEAK ? LH_TICKS_BYTES : LH_TICKS_TIME,
		    dx->column, (const char *const *)dx->values->pdata, dx->values->len, dy->column,
		    (const char *const *)dy->values->pdata, dy->values->len, cells, ngroups, &e);
	}
	return ok ? 0 : cli_fail(e);
}
