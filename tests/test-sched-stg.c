/* lhsim tests — schedulers against known optima: Kasahara STG task graphs (P | prec | Cmax)
 * with the published optimal schedule lengths in tests/data/stg/OPTIMA.md. A graph whose
 * kernels each use sm = 1/P on the ideal machine behaves as P identical processors, so no
 * scheduler's simulated makespan may be below the optimum (that would mean a wrong engine),
 * and the mean gap to the optimum measures the scheduler. Target for cpath: at most 5 %. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

typedef struct {
	char file[32];
	guint P;
	double lower; /* optimum, or the best lower bound for open instances (STG units) */
	double best;  /* optimum, or the best known schedule length */
} Opt;

/* Reads the table of OPTIMA.md: "| 50/rand0000.stg | bytes | tasks | edges | work | CP |
 * p=2 | p=4 | p=8 | p=16 |". A cell is "131 = ✓", "**94** (LB 89) ✓" or "132–134 (...)". */
static GArray *read_optima(void)
{
	g_autofree char *path = t_data("stg/OPTIMA.md");
	g_autofree char *text = NULL;
	cr_assert(g_file_get_contents(path, &text, NULL, NULL), "cannot read %s", path);
	GArray *a = g_array_new(FALSE, TRUE, sizeof(Opt));
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	static const guint Ps[4] = {2, 4, 8, 16};
	for (guint i = 0; lines[i]; i++) {
		if (!g_str_has_prefix(lines[i], "| 50/") && !g_str_has_prefix(lines[i], "| 100/"))
			continue;
		g_auto(GStrv) cell = g_strsplit(lines[i], "|", -1);
		cr_assert_geq(g_strv_length(cell), 11, "%s", lines[i]);
		for (guint k = 0; k < 4; k++) {
			Opt o = {0};
			g_strlcpy(o.file, g_strstrip(cell[1]), sizeof o.file);
			o.P = Ps[k];
			const char *c = cell[7 + k];
			while (*c && !g_ascii_isdigit(*c))
				c++;
			char *end;
			o.lower = o.best = strtod(c, &end);
			cr_assert(end != c, "no number in '%s'", cell[7 + k]);
			if (g_str_has_prefix(end, "\xe2\x80\x93")) /* en dash: lower–upper */
				o.best = strtod(end + 3, NULL);
			g_array_append_val(a, o);
		}
	}
	cr_assert_eq(a->len, 80, "expected 20 graphs x 4 processor counts, read %u", a->len);
	return a;
}

static const char *const scheds[] = {"serial", "lhs", "iree", "heft", "cpath"};

Test(stg, never_below_the_optimum_and_cpath_within_5_percent, .timeout = 120)
{
	lh_models_init();
	GError *e = NULL;
	g_autoptr(LhHw) hw = lh_hw_lookup("ideal", &e);
	cr_assert(hw, "%s", e ? e->message : "?");
	g_autoptr(GArray) opt = read_optima();
	double gap[G_N_ELEMENTS(scheds)] = {0};
	guint worst_cp = 0;
	double worst_cp_gap = 0;
	for (guint i = 0; i < opt->len; i++) {
		const Opt *o = &g_array_index(opt, Opt, i);
		g_autofree char *rel = g_build_filename("stg", o->file, NULL);
		g_autofree char *path = t_data(rel);
		g_autoptr(LhGraph) g = lh_stg_import_file(path, o->P, &e);
		cr_assert(g, "%s", e ? e->message : "?");
		char streams[32];
		g_snprintf(streams, sizeof streams, "streams=%u", o->P);
		for (guint k = 0; k < G_N_ELEMENTS(scheds); k++) {
			const LhScheduler *s = lh_scheduler_find(scheds[k]);
			const char *kv[] = {strcmp(scheds[k], "serial") && strcmp(scheds[k], "lhs")
			                        ? streams
			                        : NULL,
			                    NULL};
			g_autoptr(LhPlan) p = lh_scheduler_run(s, g, hw, kv, NULL, &e);
			cr_assert(p, "%s", e ? e->message : "?");
			g_autoptr(LhTrace) t = t_sim(g, hw, p);
			LhMetrics m;
			lh_metrics_compute(t, g, hw, p, &m);
			double units = (double)m.makespan / LH_STG_UNIT_NS;
			lh_metrics_clear(&m);
			cr_assert_geq(units, o->lower, "%s on %s P=%u: %.3f below the optimum %.0f",
			              scheds[k], o->file, o->P, units, o->lower);
			double gk = units / o->best - 1;
			gap[k] += gk;
			if (k == G_N_ELEMENTS(scheds) - 1 && gk > worst_cp_gap) {
				worst_cp_gap = gk;
				worst_cp = i;
			}
		}
	}
	for (guint k = 0; k < G_N_ELEMENTS(scheds); k++)
		fprintf(stderr, "stg: %-6s mean gap to the optimum %.2f %% over %u instances\n",
		        scheds[k], 100 * gap[k] / opt->len, opt->len);
	const Opt *w = &g_array_index(opt, Opt, worst_cp);
	fprintf(stderr, "stg: cpath worst gap %.2f %% (%s, P=%u)\n", 100 * worst_cp_gap, w->file,
	        w->P);
	cr_assert_leq(gap[G_N_ELEMENTS(scheds) - 1] / opt->len, 0.05,
	              "cpath's mean gap %.2f %% exceeds 5 %%", 100 * gap[4] / opt->len);
}
