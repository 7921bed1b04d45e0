/* lhsim tests — the `xla` scheduler: XLA's own sequence of a scheduled module, emitted as it
 * stands (schedulers/xla.c). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "helpers.h"

/* A scheduled step, by hand. On t_hw (1000 FLOP/ns, PCIe 10 B/ns alone, no latencies, no host
 * costs): kernel 'a' takes 100 ns (duration); copy-h2d 'cp' moves 2000 B, 2000 / 10 = 200 ns;
 * kernel 'dot' does 3e5 FLOP, 3e5 / 1000 = 300 ns; kernel 'use' takes 50 ns and needs 'cp'
 * and 'dot'. XLA's sequence issues the copy after 'a' and waits for it after 'dot', so the
 * copy overlaps the dot. Program order (the ops array) is the same, without the overlap. */
static const char *const graph_json =
    "{\"format\": \"lhsim-graph\", \"version\": 1, \"name\": \"sched\",\n"
    " \"ops\": [\n"
    "  {\"name\": \"p0\", \"kind\": \"input\", \"out_bytes\": 1000},\n"
    "  {\"name\": \"a\", \"kind\": \"kernel\", \"deps\": [\"p0\"], \"duration_ns\": 100},\n"
    "  {\"name\": \"cp\", \"kind\": \"copy-h2d\", \"size\": 2000, \"out_bytes\": 2000},\n"
    "  {\"name\": \"dot\", \"kind\": \"kernel\", \"deps\": [\"a\"], \"flops\": 300000},\n"
    "  {\"name\": \"use\", \"kind\": \"kernel\", \"deps\": [\"cp\", \"dot\"], \"duration_ns\": "
    "50}\n"
    " ]%s}\n";

static const char *const good_schedule =
    ",\n \"schedule\": [\"p0\", \"a\", \"cp\", \"dot\", {\"done\": \"cp\"}, \"use\"]";

static LhGraph *load(const char *schedule)
{
	g_autofree char *text = g_strdup_printf(graph_json, schedule ? schedule : "");
	GError *e = NULL;
	LhGraph *g = lh_graph_new_from_json_data(text, -1, "sched.json", &e);
	cr_assert(g, "%s", e ? e->message : "?");
	return g;
}

static char *write_graph(const char *dir, const char *schedule)
{
	g_autofree char *text = g_strdup_printf(graph_json, schedule ? schedule : "");
	char *path = g_build_filename(dir, schedule ? "sched.json" : "unsched.json", NULL);
	cr_assert(g_file_set_contents(path, text, -1, NULL));
	return path;
}

static LhPlan *plan_of(const char *name, const LhGraph *g, const LhHw *hw, FILE *explain,
                       GError **error)
{
	const LhScheduler *s = lh_scheduler_find(name);
	cr_assert(s, "no scheduler '%s'", name);
	return lh_scheduler_run(s, g, hw, NULL, explain, error);
}

static gboolean overlaps(const LhTrace *t, guint32 i, guint32 j)
{
	return t->ops[i].start < t->ops[j].end && t->ops[j].start < t->ops[i].end;
}

Test(xla, overlaps_the_copy_where_xla_put_it)
{
	g_autoptr(LhGraph) g = load(good_schedule);
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	GError *e = NULL;
	g_autoptr(LhPlan) p = plan_of("xla", g, hw, NULL, &e);
	cr_assert(p, "%s", e ? e->message : "?");
	cr_assert(lh_plan_validate(p, g, "xla", &e), "%s", e ? e->message : "?");
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	guint32 a = t_id(g, "a"), cp = t_id(g, "cp"), dot = t_id(g, "dot"), use = t_id(g, "use");
	/* main: a [0, 100); the start after 'a' signals main, so the copy waits for 'a':
	 * cp [100, 300) on the h2d engine, dot [100, 400) on main at the same time; main then
	 * waits for the copy (done at 300, before dot ends), so use [400, 450). */
	cr_assert_eq(t->ops[a].start, 0);
	cr_assert_eq(t->ops[a].end, 100);
	cr_assert_eq(t->ops[cp].start, 100);
	cr_assert_eq(t->ops[cp].end, 300);
	cr_assert_eq(t->ops[dot].start, 100);
	cr_assert_eq(t->ops[dot].end, 400);
	cr_assert_eq(t->ops[use].start, 400);
	cr_assert_eq(t->ops[use].end, 450);
	cr_assert_eq(t_makespan(t), 450);
	cr_assert(overlaps(t, cp, dot), "the copy must overlap the dot under xla");
	cr_assert_neq(t->ops[cp].stream, t->ops[dot].stream);
	cr_assert_str_eq(lh_plan_stream(p, (guint32)t->ops[cp].stream)->name, "compute0");
	cr_assert_eq(lh_plan_stream(p, (guint32)t->ops[cp].stream)->role, LH_ROLE_ASYNC_COMPUTE);
}

Test(xla, serial_does_not_overlap)
{
	g_autoptr(LhGraph) g = load(good_schedule);
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	GError *e = NULL;
	g_autoptr(LhPlan) p = plan_of("serial", g, hw, NULL, &e);
	cr_assert(p, "%s", e ? e->message : "?");
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	guint32 cp = t_id(g, "cp"), dot = t_id(g, "dot"), use = t_id(g, "use");
	/* One stream in program order: a [0, 100), cp [100, 300), dot [300, 600),
	 * use [600, 650). */
	cr_assert_eq(t->ops[cp].start, 100);
	cr_assert_eq(t->ops[cp].end, 300);
	cr_assert_eq(t->ops[dot].start, 300);
	cr_assert_eq(t->ops[dot].end, 600);
	cr_assert_eq(t->ops[use].end, 650);
	cr_assert_eq(t_makespan(t), 650);
	cr_assert_not(overlaps(t, cp, dot));
}

/* Rebuilds XLA's sequence from the plan: a run on main or on a side stream is the op (its
 * start), a wait on main for an event signaled on a side stream right after op X's run is X's
 * done. Inputs are not in the plan. */
static GArray *sequence_of_plan(const LhPlan *p)
{
	GArray *seq = g_array_new(FALSE, FALSE, sizeof(guint32));
	g_autofree guint32 *last_run = g_new(guint32, MAX(lh_plan_n_streams(p), 1));
	g_autofree guint32 *event_op = g_new(guint32, MAX(lh_plan_n_events(p), 1));
	for (guint32 s = 0; s < lh_plan_n_streams(p); s++)
		last_run[s] = G_MAXUINT32;
	for (guint32 ev = 0; ev < lh_plan_n_events(p); ev++)
		event_op[ev] = G_MAXUINT32;
	for (guint32 k = 0; k < lh_plan_n_cmds(p); k++) {
		const LhCmd *c = lh_plan_cmd(p, k);
		if (c->kind == LH_CMD_RUN) {
			guint32 e = (guint32)c->arg << 1;
			g_array_append_val(seq, e);
			last_run[c->stream] = (guint32)c->arg;
		} else if (c->kind == LH_CMD_SIGNAL && c->stream != 0) {
			event_op[c->arg] = last_run[c->stream];
		} else if (c->kind == LH_CMD_WAIT && c->stream == 0) {
			cr_assert_neq(event_op[c->arg], G_MAXUINT32,
			              "main waits for an unknown event");
			guint32 e = (event_op[c->arg] << 1) | LH_SCHED_DONE;
			g_array_append_val(seq, e);
		}
	}
	return seq;
}

Test(xla, plan_order_is_the_schedule)
{
	/* Two copies in flight at once and a collective, so every pool is used. */
	const char *json =
	    "{\"format\": \"lhsim-graph\", \"version\": 1, \"name\": \"s2\", \"ops\": [\n"
	    "  {\"name\": \"w\", \"kind\": \"input\", \"out_bytes\": 64},\n"
	    "  {\"name\": \"ag\", \"kind\": \"all-gather\", \"deps\": [\"w\"], \"size\": 800, "
	    "\"group\": 8},\n"
	    "  {\"name\": \"c1\", \"kind\": \"copy-h2d\", \"size\": 100},\n"
	    "  {\"name\": \"c2\", \"kind\": \"copy-d2h\", \"deps\": [\"k1\"], \"size\": 100},\n"
	    "  {\"name\": \"k1\", \"kind\": \"kernel\", \"duration_ns\": 10},\n"
	    "  {\"name\": \"k2\", \"kind\": \"kernel\", \"deps\": [\"ag\", \"c1\"], "
	    "\"duration_ns\": 10}\n"
	    " ],\n"
	    " \"schedule\": [\"k1\", \"c2\", \"ag\", \"w\", \"c1\", {\"done\": \"c1\"}, "
	    "{\"done\": \"ag\"}, \"k2\", {\"done\": \"c2\"}]}\n";
	GError *e = NULL;
	g_autoptr(LhGraph) g = lh_graph_new_from_json_data(json, -1, "s2.json", &e);
	cr_assert(g, "%s", e ? e->message : "?");
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	g_autoptr(LhPlan) p = plan_of("xla", g, hw, NULL, &e);
	cr_assert(p, "%s", e ? e->message : "?");
	cr_assert(lh_plan_validate(p, g, "xla", &e), "%s", e ? e->message : "?");
	g_autoptr(GArray) got = sequence_of_plan(p);
	guint32 n;
	const guint32 *want = lh_graph_schedule(g, &n);
	/* The plan holds the sequence without the input 'w' (position 3). */
	guint32 k = 0;
	for (guint32 i = 0; i < n; i++) {
		if (lh_graph_op(g, want[i] >> 1)->kind == LH_OP_INPUT)
			continue;
		cr_assert_lt(k, got->len);
		cr_assert_eq(g_array_index(got, guint32, k), want[i],
		             "plan entry %u is %s%s, the schedule's is %s%s", k,
		             lh_graph_op(g, g_array_index(got, guint32, k) >> 1)->name,
		             g_array_index(got, guint32, k) & 1 ? " (done)" : "",
		             lh_graph_op(g, want[i] >> 1)->name, want[i] & 1 ? " (done)" : "");
		k++;
	}
	cr_assert_eq(k, got->len);
	cr_assert_eq(k, 8); /* 9 entries less the input */
	/* c1 and c2 are in flight together: compute0 and compute1; ag on collective0. */
	g_autoptr(LhTrace) t = t_sim(g, hw, p);
	const char *s1 = lh_plan_stream(p, (guint32)t->ops[t_id(g, "c1")].stream)->name;
	const char *s2 = lh_plan_stream(p, (guint32)t->ops[t_id(g, "c2")].stream)->name;
	const char *s3 = lh_plan_stream(p, (guint32)t->ops[t_id(g, "ag")].stream)->name;
	cr_assert_str_eq(s2, "compute0");
	cr_assert_str_eq(s1, "compute1");
	cr_assert_str_eq(s3, "collective0");
}

Test(xla, unscheduled_graph_is_an_error)
{
	g_autoptr(LhGraph) g = load(NULL);
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	GError *e = NULL;
	g_autoptr(LhPlan) p = plan_of("xla", g, hw, NULL, &e);
	cr_assert_null(p);
	cr_assert(e);
	cr_assert(g_error_matches(e, LH_GRAPH_ERROR, LH_GRAPH_ERROR_INVALID));
	cr_assert(strstr(e->message, "'sched' has no schedule"), "%s", e->message);
	cr_assert(strstr(e->message, "is_scheduled=true"), "%s", e->message);
	g_error_free(e);

	/* The supports slot says the same before any parameter is parsed, and says yes to a
	 * graph that has a schedule. */
	const LhScheduler *xla = lh_scheduler_find("xla");
	cr_assert_not_null(xla->supports, "xla fills the supports slot");
	e = NULL;
	cr_assert_not(lh_scheduler_supports(xla, g, hw, &e));
	cr_assert(g_error_matches(e, LH_GRAPH_ERROR, LH_GRAPH_ERROR_INVALID));
	cr_assert(strstr(e->message, "'sched' has no schedule"), "%s", e->message);
	g_error_free(e);
	g_autoptr(LhGraph) scheduled = load(good_schedule);
	cr_assert(lh_scheduler_supports(xla, scheduled, hw, NULL));

	/* The command line: bad input, exit 2, no plan file written. */
	g_autofree char *dir = t_tmpdir();
	g_autofree char *path = write_graph(dir, NULL);
	g_autofree char *plan = g_build_filename(dir, "p.plan", NULL);
	g_autofree char *err = NULL;
	int st = t_lhsim(NULL, &err, "run", path, "--sched", "xla", "--save-plan", plan, NULL);
	cr_assert_eq(st, 2, "exit %d: %s", st, err);
	cr_assert(strstr(err, "has no schedule"), "%s", err);
	cr_assert_not(g_file_test(plan, G_FILE_TEST_EXISTS));
}

Test(xla, a_schedule_that_breaks_a_dep_is_an_error)
{
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	struct {
		const char *schedule, *want;
	} cases[] = {
	    /* 'use' needs the copy, whose done comes after it. */
	    {",\"schedule\": [\"p0\", \"a\", \"cp\", \"dot\", \"use\", {\"done\": \"cp\"}]",
	     "it issues kernel 'use' before the done of async copy-h2d 'cp', which 'use' needs"},
	    /* 'dot' needs 'a', issued after it. */
	    {",\"schedule\": [\"p0\", \"cp\", \"dot\", \"a\", {\"done\": \"cp\"}, \"use\"]",
	     "it issues kernel 'dot' before kernel 'a', which 'dot' needs"},
	};
	for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(LhGraph) g = load(cases[i].schedule);
		GError *e = NULL;
		g_autoptr(LhPlan) p = plan_of("xla", g, hw, NULL, &e);
		cr_assert_null(p);
		cr_assert(e && g_error_matches(e, LH_GRAPH_ERROR, LH_GRAPH_ERROR_INVALID));
		cr_assert(strstr(e->message, cases[i].want), "case %zu: %s", i, e->message);
		g_error_free(e);
	}
}

Test(xla, explain_names_every_position)
{
	g_autoptr(LhGraph) g = load(good_schedule);
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FAIR);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	GError *e = NULL;
	g_autoptr(LhPlan) p = plan_of("xla", g, hw, f, &e);
	fclose(f);
	cr_assert(p, "%s", e ? e->message : "?");
	/* One line per sequence position (6) and one header line. */
	guint lines = 0;
	for (char *c = buf; *c; c++)
		lines += *c == '\n';
	cr_assert_eq(lines, 7, "%s", buf);
	cr_assert(strstr(buf, "xla: sequence position 0: input 'p0' is live from t = 0"), "%s",
	          buf);
	cr_assert(strstr(buf, "xla: sequence position 2: copy-h2d 'cp' starts on compute0"), "%s",
	          buf);
	cr_assert(strstr(buf, "xla: sequence position 4: main waits for the done of copy-h2d 'cp'"),
	          "%s", buf);
	free(buf);
}

Test(xla, command_line_compare_save_plan_and_replan)
{
	g_autofree char *dir = t_tmpdir();
	g_autofree char *path = write_graph(dir, good_schedule);
	g_autofree char *plan = g_build_filename(dir, "x.plan", NULL);
	g_autofree char *out = NULL, *err = NULL;
	int st = t_lhsim(&out, &err, "compare", path, "--sched",
	                 "xla,lhs,lhs:async-compute-limit=4", "--hw", "h100-sxm", NULL);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	cr_assert(strstr(out, "\n  xla "), "%s", out);
	cr_assert(strstr(out, "lhs:async-compute-limit=4"), "%s", out);

	g_free(out);
	g_free(err);
	st =
	    t_lhsim(&out, &err, "run", path, "--sched", "xla", "--save-plan", plan, "--json", NULL);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	g_autofree char *text = NULL;
	cr_assert(g_file_get_contents(plan, &text, NULL, NULL));
	cr_assert(strstr(text, "# scheduler: xla"), "%s", text);
	cr_assert(strstr(text, "stream compute0 async-compute"), "%s", text);
	cr_assert(strstr(text, "run compute0 cp"), "%s", text);
	/* The saved plan reads back and simulates to the same numbers. */
	g_autofree char *out2 = NULL;
	g_free(err);
	st = t_lhsim(&out2, &err, "run", path, "--plan", plan, "--json", NULL);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	const char *m1 = strstr(out, "\"makespan"), *m2 = strstr(out2, "\"makespan");
	cr_assert(m1 && m2, "%s", out);
	cr_assert_eq(strncmp(m1, m2, 40), 0, "%.40s vs %.40s", m1, m2);
}

/* The same story from a scheduled HLO module: XLA put the copy to host memory (copy-start
 * into an S(5) buffer) before the dot and its copy-done after it. The importer records XLA's
 * sequence of a scheduled module (docs/hlo.md); xla replays it. */
static const char *const offload_hlo =
    "HloModule offload, is_scheduled=true\n"
    "\n"
    "ENTRY %main (p0: f32[1024,1024], p1: f32[1024,1024]) -> (f32[1024,1024], "
    "f32[1024,1024]) {\n"
    "  %p0 = f32[1024,1024]{1,0} parameter(0)\n"
    "  %p1 = f32[1024,1024]{1,0} parameter(1)\n"
    "  %copy-start = (f32[1024,1024]{1,0:S(5)}, f32[1024,1024]{1,0}, u32[]) "
    "copy-start(%p0)\n"
    "  %dot = f32[1024,1024]{1,0} dot(%p1, %p1), lhs_contracting_dims={1}, "
    "rhs_contracting_dims={0}\n"
    "  %copy-done = f32[1024,1024]{1,0:S(5)} copy-done(%copy-start)\n"
    "  ROOT %t = (f32[1024,1024]{1,0}, f32[1024,1024]{1,0:S(5)}) tuple(%dot, %copy-done)\n"
    "}\n";

Test(xla, scheduled_hlo_module)
{
	GError *e = NULL;
	g_autoptr(LhGraph) g =
	    lh_hlo_import_data(offload_hlo, strlen(offload_hlo), "offload.hlo", NULL, &e);
	cr_assert(g, "%s", e ? e->message : "?");
	guint32 n;
	const guint32 *seq = lh_graph_schedule(g, &n);
	cr_assert_not_null(seq, "a scheduled module must keep XLA's sequence");
	/* Without the parameters: copy-start, dot, the copy's done. */
	guint32 cp = t_id(g, "copy-start"), dot = t_id(g, "dot");
	guint32 want[] = {cp << 1, dot << 1, (cp << 1) | LH_SCHED_DONE}, k = 0;
	for (guint32 i = 0; i < n; i++) {
		if (lh_graph_op(g, seq[i] >> 1)->kind == LH_OP_INPUT)
			continue;
		cr_assert_lt(k, 3);
		cr_assert_eq(seq[i], want[k], "schedule entry %u", i);
		k++;
	}
	cr_assert_eq(k, 3);
	lh_models_init();
	g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", &e);
	cr_assert(hw, "%s", e ? e->message : "?");
	g_autoptr(LhPlan) px = plan_of("xla", g, hw, NULL, &e);
	cr_assert(px, "%s", e ? e->message : "?");
	g_autoptr(LhPlan) ps = plan_of("serial", g, hw, NULL, &e);
	cr_assert(ps, "%s", e ? e->message : "?");
	g_autoptr(LhTrace) tx = t_sim(g, hw, px);
	g_autoptr(LhTrace) ts = t_sim(g, hw, ps);
	/* The copy (4 MiB over PCIe, tens of us) runs under the dot with xla, before it with
	 * serial; so xla's step is shorter. */
	cr_assert(overlaps(tx, cp, dot));
	cr_assert_not(overlaps(ts, cp, dot));
	cr_assert_lt(t_makespan(tx), t_makespan(ts));
}

Test(xla, sweep_takes_xla_only_on_a_scheduled_graph)
{
	/* Without --sched, a sweep runs every scheduler with the swept parameter: lhs and xla
	 * both have compute-streams, but xla only has something to replay on a scheduled graph. */
	g_autofree char *dir = t_tmpdir();
	g_autofree char *sched = write_graph(dir, good_schedule);
	g_autofree char *unsched = write_graph(dir, NULL);
	g_autofree char *out = NULL, *err = NULL;
	int st = t_lhsim(&out, &err, "sweep", unsched, "-p", "compute-streams=1:2", NULL);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	cr_assert(strstr(out, "\n  lhs "), "%s", out);
	cr_assert_null(strstr(out, "\n  xla "), "%s", out);
	g_free(out);
	g_free(err);
	st = t_lhsim(&out, &err, "sweep", sched, "-p", "compute-streams=1:2", NULL);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	cr_assert(strstr(out, "\n  lhs "), "%s", out);
	cr_assert(strstr(out, "\n  xla "), "%s", out);
}
