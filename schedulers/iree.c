/* lhsim — `iree`: IREE's reference partitioning (docs/design.md#iree).
 *
 * Written from a reading of IREE's
 * compiler/src/iree/compiler/Dialect/Stream/Analysis/Partitioning/ReferencePartitioning.cpp
 * (partitionStreamableOpsReference, partitionRegionConcurrencyReference); no IREE code is
 * copied. As in IREE, there are two separate steps, each chosen by its own parameter and
 * behind its own function table, so that a better algorithm for either plugs in alone:
 *
 *   regions=reference      execution regions (stream.async.execute). Ops are walked in
 *                          reverse program order; an op joins the first partition that
 *                          consumes it and that it can join without a hazard (a partition
 *                          that transitively depends on one it must precede), else any
 *                          partition it has no hazard with, else a new one. Every lhsim op is
 *                          streamable and the graph has one device, so this forms one region
 *                          per graph unless a better partitioner splits it; each region costs
 *                          one queue submission on the host (`submit-ns`).
 *   concurrency=reference  concurrency waves (stream.async.concurrent) inside each region.
 *                          Ops are walked in reverse; an op has a hazard with every wave that
 *                          holds one of its users (lhsim users read their producer's output,
 *                          which IREE's ResourceHazardAnalysis reports as a hazard) and with
 *                          every wave those users have hazards with. Of the waves left, it
 *                          joins the last (favor=min-peak-memory: the wave furthest from its
 *                          consumers created so far) or the first (favor=max-concurrency: the
 *                          one just before its consumers); with none left it opens a new wave.
 *                          favor=debug disables concurrency, as in IREE.
 *   concurrency=none       no waves: a region's ops run one after another on one stream (what
 *                          IREE does for debugging and single-core targets).
 *
 * The plan. A wave's ops run side by side on lanes (streams "lane0".."laneN", at most
 * `streams`; with more ops than lanes they are dealt round robin). A full barrier separates
 * one wave from the next: every lane of the wave signals an event and every lane of the next
 * wave waits on each of them (its own lane's is implied by stream order). A region's first
 * wave waits on the previous region's last wave the same way (regions are chained by
 * timepoints, not by host syncs).
 */
#include "schedulers/sched-util.h"
#include "sim/cost.h"

#include <string.h>

static const LhParamSpec iree_params[] = {
    {"favor", LH_PARAM_CHOICE, "min-peak-memory", 0, 0, "min-peak-memory|max-concurrency|debug",
     "IREE's #stream.partitioning_config favor"},
    {"regions", LH_PARAM_CHOICE, "reference", 0, 0, "reference",
     "execution partitioning algorithm"},
    {"concurrency", LH_PARAM_CHOICE, "reference", 0, 0, "reference|none",
     "concurrency (wave) partitioning algorithm"},
    {"streams", LH_PARAM_INT, "16", 1, 1024, NULL, "most lanes a wave runs on"},
    {"submit-ns", LH_PARAM_DOUBLE, NULL, 0, 1e12, NULL,
     "host cost of submitting one execution region, ns (default: the model's launch_ns)"},
    {NULL, 0, NULL, 0, 0, NULL, NULL},
};

/* A partition: a list of op indices in forward program order. */
typedef GArray Part; /* of guint32 */

/* Step 1: execution regions. Fills @regions (a GPtrArray of Part, forward order) from the
 * ops of @g in topological program order. */
typedef void (*RegionFunc)(const LhGraph *g, const LhParams *p, GPtrArray *regions);
/* Step 2: waves of one region. Fills @waves (GPtrArray of Part, forward order). */
typedef void (*WaveFunc)(const LhGraph *g, const LhParams *p, const Part *region,
                         guint32 region_index, GPtrArray *waves);

/* A small growable bitset. */
typedef struct {
	guint32 n;
	guint64 *w;
} Bits;

static void bits_grow(Bits *b, guint32 n)
{
	if (n <= b->n)
		return;
	guint32 old = (b->n + 63) / 64, nw = (n + 63) / 64;
	if (nw > old) {
		b->w = g_renew(guint64, b->w, nw);
		memset(b->w + old, 0, (nw - old) * sizeof(guint64));
	}
	b->n = n;
}
static gboolean bits_get(const Bits *b, guint32 i)
{
	return i < b->n && (b->w[i / 64] >> (i % 64)) & 1;
}
static void bits_set(Bits *b, guint32 i, gboolean v)
{
	bits_grow(b, i + 1);
	if (v)
		b->w[i / 64] |= (guint64)1 << (i % 64);
	else
		b->w[i / 64] &= ~((guint64)1 << (i % 64));
}
static void bits_or(Bits *a, const Bits *b)
{
	bits_grow(a, b->n);
	for (guint32 k = 0; k < (b->n + 63) / 64; k++)
		a->w[k] |= b->w[k];
}

static void parts_free(gpointer p)
{
	g_array_free((GArray *)p, TRUE);
}

/* IREE's partitionStreamableOpsReference, for a graph whose ops are all streamable and share
 * one affinity. */
static void regions_reference(const LhGraph *g, const LhParams *p, GPtrArray *regions)
{
	guint32 n = lh_graph_n_ops(g);
	const guint32 *topo = lh_graph_topo(g);
	g_autofree Bits *member = g_new0(Bits, n), *hazard = g_new0(Bits, n);
	GPtrArray *builders = g_ptr_array_new_with_free_func(parts_free); /* reverse order */
	GArray *bhaz = g_array_new(FALSE, TRUE, sizeof(Bits));
	g_autofree guint8 *visited = g_new0(guint8, n);
	for (guint32 k = n; k-- > 0;) {
		guint32 v = topo[k];
		if (lh_graph_op(g, v)->kind == LH_OP_INPUT)
			continue; /* like IREE's constants: no hazards to track */
		visited[v] = 1;
		guint32 nb = builders->len;
		Bits consumers = {0};
		bits_grow(&consumers, nb);
		bits_grow(&hazard[v], nb);
		guint32 ns;
		const guint32 *sc = lh_graph_succs(g, v, &ns);
		for (guint32 j = 0; j < ns; j++) {
			guint32 u = sc[j];
			if (!visited[u])
				continue;
			bits_or(&consumers, &member[u]);
			bits_or(&hazard[v], &member[u]);
			bits_or(&hazard[v], &hazard[u]);
		}
		/* candidates = (~hazards | consumers), then drop those that would need partition
		 * reordering or make a cycle between partitions. */
		gint32 chosen = -1;
		gboolean from_consumers = FALSE;
		for (int pass = 0; pass < 2 && chosen < 0; pass++) {
			for (guint32 c = 0; c < nb; c++) {
				gboolean cand = !bits_get(&hazard[v], c) || bits_get(&consumers, c);
				if (!cand || (pass == 0 && !bits_get(&consumers, c)))
					continue;
				gboolean ok = TRUE;
				for (guint32 h = 0; h < hazard[v].n && ok; h++) {
					if (!bits_get(&hazard[v], h))
						continue;
					if (c < h)
						ok = FALSE;
					else if (h != c &&
					         bits_get(&g_array_index(bhaz, Bits, h), c))
						ok = FALSE;
				}
				if (ok) {
					chosen = (gint32)c;
					from_consumers = pass == 0;
					break;
				}
			}
		}
		if (chosen < 0) {
			for (guint32 c = 0; c + 1 < nb; c++)
				bits_set(&hazard[v], c, TRUE);
			g_ptr_array_add(builders, g_array_new(FALSE, FALSE, sizeof(guint32)));
			Bits z = {0};
			g_array_append_val(bhaz, z);
			chosen = (gint32)builders->len - 1;
			lh_params_explain(p,
			                  "iree: %s '%s' opens region %d (no region it can join "
			                  "without a hazard)",
			                  lh_op_kind_name(lh_graph_op(g, v)->kind),
			                  lh_graph_op(g, v)->name, chosen);
		} else {
			lh_params_explain(p, "iree: %s '%s' joins region %d (%s)",
			                  lh_op_kind_name(lh_graph_op(g, v)->kind),
			                  lh_graph_op(g, v)->name, chosen,
			                  from_consumers ? "a region that consumes it"
			                                 : "no hazard with it");
		}
		bits_set(&member[v], (guint32)chosen, TRUE);
		if (bits_get(&hazard[v], (guint32)chosen))
			bits_set(&hazard[v], (guint32)chosen, FALSE);
		g_array_append_val((GArray *)g_ptr_array_index(builders, chosen), v);
		bits_or(&g_array_index(bhaz, Bits, chosen), &hazard[v]);
		g_free(consumers.w);
	}
	/* Forward order: builders reversed, each builder's ops reversed. */
	for (guint32 b = builders->len; b-- > 0;) {
		GArray *src = g_ptr_array_index(builders, b);
		GArray *dst = g_array_sized_new(FALSE, FALSE, sizeof(guint32), src->len);
		for (guint32 k = src->len; k-- > 0;)
			g_array_append_val(dst, g_array_index(src, guint32, k));
		g_ptr_array_add(regions, dst);
	}
	for (guint32 i = 0; i < n; i++) {
		g_free(member[i].w);
		g_free(hazard[i].w);
	}
	for (guint32 b = 0; b < bhaz->len; b++)
		g_free(g_array_index(bhaz, Bits, b).w);
	g_array_free(bhaz, TRUE);
	g_ptr_array_free(builders, TRUE);
}

/* IREE's partitionRegionConcurrencyReference. With every user a hazard, an op's hazards are
 * always the waves 0..H-1 (a prefix, in bottom-up ordinals), so one integer per op holds
 * them: H = 1 + the highest wave holding one of its users or one its users have hazards
 * with. */
static void waves_reference(const LhGraph *g, const LhParams *p, const Part *region,
                            guint32 region_index, GPtrArray *waves)
{
	const char *favor = lh_params_get_choice(p, "favor");
	guint32 n = lh_graph_n_ops(g);
	if (strcmp(favor, "debug") == 0) {
		/* IREE: "Disable partitioning when favoring debuggability." */
		for (guint32 k = 0; k < region->len; k++) {
			GArray *w = g_array_new(FALSE, FALSE, sizeof(guint32));
			g_array_append_val(w, g_array_index(region, guint32, k));
			g_ptr_array_add(waves, w);
		}
		lh_params_explain(p, "iree: region %u: favor=debug, no concurrency waves",
		                  region_index);
		return;
	}
	gboolean max_conc = strcmp(favor, "max-concurrency") == 0;
	g_autofree guint32 *wave = g_new(guint32, n); /* bottom-up ordinal, or G_MAXUINT32 */
	g_autofree guint32 *hzd = g_new0(guint32, n); /* hazards: waves [0, hzd) */
	for (guint32 k = 0; k < region->len; k++)
		wave[g_array_index(region, guint32, k)] = G_MAXUINT32;
	g_autofree guint8 *in_region = g_new0(guint8, n);
	for (guint32 k = 0; k < region->len; k++)
		in_region[g_array_index(region, guint32, k)] = 1;
	GPtrArray *builders = g_ptr_array_new();
	for (guint32 k = region->len; k-- > 0;) {
		guint32 v = g_array_index(region, guint32, k);
		guint32 ns, h = 0;
		const guint32 *sc = lh_graph_succs(g, v, &ns);
		for (guint32 j = 0; j < ns; j++) {
			guint32 u = sc[j];
			if (!in_region[u] || wave[u] == G_MAXUINT32)
				continue;
			h = MAX(h, wave[u] + 1);
			h = MAX(h, hzd[u]);
		}
		guint32 nb = builders->len, chosen;
		if (h < nb) {
			chosen = max_conc ? h : nb - 1;
			hzd[v] = chosen;
			lh_params_explain(p,
			                  "iree: %s '%s' -> wave %u of region %u (hazards with "
			                  "waves below %u; favor=%s takes the %s candidate)",
			                  lh_op_kind_name(lh_graph_op(g, v)->kind),
			                  lh_graph_op(g, v)->name, chosen, region_index, h, favor,
			                  max_conc ? "first" : "last");
		} else {
			chosen = nb;
			hzd[v] = nb;
			g_ptr_array_add(builders, g_array_new(FALSE, FALSE, sizeof(guint32)));
			lh_params_explain(p,
			                  "iree: %s '%s' opens wave %u of region %u (hazards with "
			                  "every wave so far)",
			                  lh_op_kind_name(lh_graph_op(g, v)->kind),
			                  lh_graph_op(g, v)->name, chosen, region_index);
		}
		wave[v] = chosen;
		g_array_append_val((GArray *)g_ptr_array_index(builders, chosen), v);
	}
	for (guint32 b = builders->len; b-- > 0;) {
		GArray *src = g_ptr_array_index(builders, b);
		GArray *dst = g_array_sized_new(FALSE, FALSE, sizeof(guint32), src->len);
		for (guint32 k = src->len; k-- > 0;)
			g_array_append_val(dst, g_array_index(src, guint32, k));
		g_ptr_array_add(waves, dst);
		g_array_free(src, TRUE);
	}
	g_ptr_array_free(builders, TRUE);
}

static void waves_none(const LhGraph *g, const LhParams *p, const Part *region,
                       guint32 region_index, GPtrArray *waves)
{
	(void)g;
	lh_params_explain(p, "iree: region %u: concurrency=none, ops run in order on one stream",
	                  region_index);
	GArray *w = g_array_new(FALSE, FALSE, sizeof(guint32));
	g_array_append_vals(w, region->data, region->len);
	g_ptr_array_add(waves, w);
	/* One "wave" that runs serially: mark it by a single lane (see plan below). */
}

typedef struct {
	const char *name;
	RegionFunc fn;
} RegionAlgo;
typedef struct {
	const char *name;
	WaveFunc fn;
	gboolean serial; /* its waves run on one lane, in order */
} WaveAlgo;

static const RegionAlgo region_algos[] = {{"reference", regions_reference}};
static const WaveAlgo wave_algos[] = {{"reference", waves_reference, FALSE},
                                      {"none", waves_none, TRUE}};

static LhPlan *iree_plan(const LhGraph *g, const LhHw *hw, const LhParams *p, GError **error)
{
	(void)error;
	const char *rname = lh_params_get_choice(p, "regions");
	const char *cname = lh_params_get_choice(p, "concurrency");
	const RegionAlgo *ra = &region_algos[0];
	const WaveAlgo *wa = &wave_algos[0];
	for (gsize k = 0; k < G_N_ELEMENTS(region_algos); k++)
		if (strcmp(region_algos[k].name, rname) == 0)
			ra = &region_algos[k];
	for (gsize k = 0; k < G_N_ELEMENTS(wave_algos); k++)
		if (strcmp(wave_algos[k].name, cname) == 0)
			wa = &wave_algos[k];
	guint32 L = (guint32)lh_params_get_int(p, "streams");
	double submit =
	    lh_params_is_set(p, "submit-ns") ? lh_params_get_double(p, "submit-ns") : hw->launch_ns;

	GPtrArray *regions = g_ptr_array_new_with_free_func(parts_free);
	ra->fn(g, p, regions);
	LhPlan *plan = lh_plan_new();
	g_autofree guint32 *lane = g_new(guint32, L);
	guint32 n_lanes = 0;
	lane[n_lanes++] = lh_plan_add_stream(plan, "lane0", LH_ROLE_COMPUTE);
	/* Lanes of the previous wave and whether each ran something. */
	g_autofree guint8 *prev_used = g_new0(guint8, L);
	g_autofree guint8 *used = g_new0(guint8, L);
	g_autofree guint32 *ev = g_new(guint32, L);
	guint32 total_waves = 0;
	for (guint32 r = 0; r < regions->len; r++) {
		const Part *region = g_ptr_array_index(regions, r);
		GPtrArray *waves = g_ptr_array_new_with_free_func(parts_free);
		wa->fn(g, p, region, r, waves);
		if (lh_params_explaining(p))
			for (guint32 w = 0; w < waves->len; w++) {
				const Part *wave = g_ptr_array_index(waves, w);
				GString *l = g_string_new(NULL);
				for (guint32 k = 0; k < wave->len; k++)
					g_string_append_printf(
					    l, " %s",
					    lh_graph_op(g, g_array_index(wave, guint32, k))->name);
				lh_params_explain(p, "iree: region %u wave %u:%s", r, w, l->str);
				g_string_free(l, TRUE);
			}
		lh_plan_host(plan, (guint64)(submit + 0.5));
		for (guint32 w = 0; w < waves->len; w++) {
			const Part *wave = g_ptr_array_index(waves, w);
			guint32 width = wa->serial ? 1 : MIN(wave->len, L);
			while (n_lanes < width) {
				g_autofree char *name = g_strdup_printf("lane%u", n_lanes);
				lane[n_lanes++] = lh_plan_add_stream(plan, name, LH_ROLE_COMPUTE);
			}
			/* Barrier from the previous wave. */
			gboolean any_prev = FALSE;
			for (guint32 s = 0; s < L; s++)
				if (prev_used[s]) {
					any_prev = TRUE;
					break;
				}
			if (any_prev) {
				/* Only lanes that have others to sync with need an event. */
				for (guint32 s = 0; s < n_lanes; s++) {
					ev[s] = G_MAXUINT32;
					gboolean needed = FALSE;
					for (guint32 t = 0; t < width; t++)
						if (t != s)
							needed = TRUE;
					if (prev_used[s] && needed) {
						ev[s] = lh_plan_new_event(plan);
						lh_plan_signal(plan, lane[s], ev[s]);
					}
				}
				for (guint32 t = 0; t < width; t++)
					for (guint32 s = 0; s < n_lanes; s++)
						if (s != t && ev[s] != G_MAXUINT32)
							lh_plan_wait(plan, lane[t], ev[s]);
			}
			memset(used, 0, L);
			for (guint32 k = 0; k < wave->len; k++) {
				guint32 s = k % width;
				lh_plan_run(plan, lane[s], g_array_index(wave, guint32, k));
				used[s] = 1;
			}
			memcpy(prev_used, used, L);
			total_waves++;
		}
		g_ptr_array_free(waves, TRUE);
	}
	lh_params_explain(p,
	                  "iree: %u region(s), %u wave(s), %u lane(s); regions=%s "
	                  "concurrency=%s",
	                  regions->len, total_waves, n_lanes, rname, cname);
	g_ptr_array_free(regions, TRUE);
	return plan;
}

const LhScheduler lh_sched_iree = {
    .version = LH_SCHEDULER_ABI,
    .name = "iree",
    .summary = "IREE's reference partitioning: execution regions, then concurrency waves "
               "with full barriers",
    .params = iree_params,
    .plan = iree_plan,
};

/* The two reference steps behind the exported step tables (scheduler.h, LhIreeRegionStep and
 * LhIreeWaveStep), for lh_iree_partition() and plugins. The wave step reads "favor". */
static gboolean step_regions_reference(const LhIreeCtx *c, GPtrArray *regions, GError **error)
{
	(void)error;
	regions_reference(c->g, c->p, regions);
	return TRUE;
}

static gboolean step_waves_reference(const LhIreeCtx *c, const GArray *region, guint32 region_index,
                                     GPtrArray *waves, GError **error)
{
	(void)error;
	waves_reference(c->g, c->p, region, region_index, waves);
	return TRUE;
}

const LhIreeRegionStep lh_iree_regions_reference = {"reference", step_regions_reference};
const LhIreeWaveStep lh_iree_waves_reference = {"reference", step_waves_reference};
