/* lhsim tests — measured timelines (docs/measured.md): the Chrome trace readers (Kineto, XLA,
 * lhsim), the Nsight Systems SQLite reader on a database the test builds, matching by name,
 * annotation, token and order, split steps with median and spread, the round trip of lhsim's
 * own trace, calibration that recovers perturbed hardware numbers, and bad inputs. */
#include <criterion/criterion.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <math.h>
#include <sqlite3.h>
#include <string.h>

#include "helpers.h"

/* The small graph every hand-written trace describes, on t_hw() (no launch, overhead or latency
 * costs), scheduled serially on one stream "main":
 *   fusion.1   kernel, 1000 ns          0 ..  1000
 *   fusion.12  kernel, 2000 ns       1000 ..  3000
 *   copy.3     copy-h2d of 10000 B at 10 GB/s (10 B/ns) = 1000 ns   3000 .. 4000
 * Predicted device span: 4000 ns. */
static LhGraph *small_graph(void)
{
	LhGraph *g = lh_graph_new("small");
	guint32 a = t_kernel(g, "fusion.1", 1000, 1);
	guint32 b = t_kernel(g, "fusion.12", 2000, 1);
	guint32 c = t_op(g, "copy.3", LH_OP_COPY_H2D, 10000);
	t_dep(g, b, a);
	t_dep(g, c, b);
	t_finish(g);
	return g;
}

typedef struct {
	LhGraph *g;
	LhHw *hw;
	LhPlan *plan;
	LhTrace *pred;
} Fix;

static void fix_init(Fix *f)
{
	f->g = small_graph();
	f->hw = t_hw(LH_SHARING_FIFO);
	GError *e = NULL;
	f->plan = lh_scheduler_run(lh_scheduler_find("serial"), f->g, f->hw, NULL, NULL, &e);
	cr_assert(f->plan, "%s", e ? e->message : "");
	f->pred = t_sim(f->g, f->hw, f->plan);
	/* The hand-computed prediction above. */
	cr_assert_eq(f->pred->ops[t_id(f->g, "fusion.1")].start, 0);
	cr_assert_eq(f->pred->ops[t_id(f->g, "fusion.12")].end, 3000);
	cr_assert_eq(f->pred->ops[t_id(f->g, "copy.3")].start, 3000);
	cr_assert_eq(f->pred->ops[t_id(f->g, "copy.3")].end, 4000);
}

static void fix_clear(Fix *f)
{
	lh_trace_free(f->pred);
	lh_plan_free(f->plan);
	lh_hw_free(f->hw);
	lh_graph_free(f->g);
}

static char *write_tmp(const char *name, const char *text)
{
	g_autofree char *dir = t_tmpdir();
	char *p = g_build_filename(dir, name, NULL);
	cr_assert(g_file_set_contents(p, text, -1, NULL));
	return p;
}

static LhMeasured *load_ok(const char *path)
{
	GError *e = NULL;
	LhMeasured *m = lh_measured_load(path, &e);
	cr_assert(m, "load: %s", e ? e->message : "");
	return m;
}

static LhMatch *match_ok(const LhMeasured *m, const Fix *f)
{
	GError *e = NULL;
	LhMatch *x = lh_match(m, f->g, f->plan, f->pred, NULL, &e);
	cr_assert(x, "match: %s", e ? e->message : "");
	return x;
}

/* ---- Kineto: two steps, every matching rule, median and spread ---- */

/* Step 0 starts at 100 us, step 1 at 200 us (ts and dur are microseconds):
 *   step 0: "sm90_gemm" inside gpu_user_annotation "fusion.1"  100.000 + 1.100 (annotation)
 *           "loop_fusion_12_kernel" 101.500 + 2.000  (token: fusion_12 bounded by '_')
 *           "Memcpy HtoD (Pinned -> Device)" 104.000 + 1.000  (no name: by order -> copy.3)
 *   step 1: "fusion.1" 200.000 + 0.900 (name)
 *           "loop_fusion_12_kernel" 201.000 + 2.400 (token)
 *           "Memcpy HtoD ..." 204.000 + 1.200 (order)
 * A cudaLaunchKernel with correlation 7 ends at 101.200 us: step 0's fusion.12 was issued then.
 * fusion.1 and fusion.12 are named twice each: two steps, starting at 100 and 200 us. */
static const char *kineto =
    "{\"schemaVersion\": 1, \"traceEvents\": [\n"
    "{\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"fusion.1\", \"pid\": 0, "
    "\"tid\": 7, \"ts\": 99.5, \"dur\": 2.0, \"args\": {\"device\": 0, \"stream\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"sm90_gemm\", \"pid\": 0, \"tid\": 7, \"ts\": "
    "100.0, \"dur\": 1.1, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 6}},\n"
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, "
    "\"tid\": 1, \"ts\": 101.0, \"dur\": 0.2, \"args\": {\"correlation\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"loop_fusion_12_kernel\", \"pid\": 0, "
    "\"tid\": 7, \"ts\": 101.5, \"dur\": 2.0, \"args\": {\"device\": 0, \"stream\": 7, "
    "\"correlation\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pinned -> Device)\", "
    "\"pid\": 0, \"tid\": 7, \"ts\": 104.0, \"dur\": 1.0, \"args\": {\"device\": 0, \"stream\": 7, "
    "\"bytes\": 10000}},\n"
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": "
    "150.0, \"dur\": 5.0},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"fusion.1\", \"pid\": 0, \"tid\": 7, \"ts\": "
    "200.0, \"dur\": 0.9, \"args\": {\"device\": 0, \"stream\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"loop_fusion_12_kernel\", \"pid\": 0, "
    "\"tid\": 7, \"ts\": 201.0, \"dur\": 2.4, \"args\": {\"device\": 0, \"stream\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pinned -> Device)\", "
    "\"pid\": 0, \"tid\": 7, \"ts\": 204.0, \"dur\": 1.2, \"args\": {\"device\": 0, \"stream\": 7, "
    "\"bytes\": 10000}}\n"
    "]}\n";

Test(measured, kineto_steps_and_rules)
{
	Fix f;
	fix_init(&f);
	g_autofree char *p = write_tmp("k.json", kineto);
	g_autoptr(LhMeasured) m = load_ok(p);
	cr_assert_str_eq(m->format, "chrome (kineto)");
	cr_assert_eq(m->events->len, 6);
	g_autoptr(LhMatch) x = match_ok(m, &f);
	cr_assert_eq(x->n_steps, 2);
	cr_assert_eq(x->ev_total, 6);
	cr_assert_eq(x->ev_matched, 6);
	cr_assert_eq(x->by[LH_MATCH_NAME], 1);
	cr_assert_eq(x->by[LH_MATCH_ANNOTATION], 1);
	cr_assert_eq(x->by[LH_MATCH_TOKEN], 2);
	cr_assert_eq(x->by[LH_MATCH_ORDER], 2);
	cr_assert_eq(x->ops_matched, 3);
	guint32 a = t_id(f.g, "fusion.1"), b = t_id(f.g, "fusion.12"), c = t_id(f.g, "copy.3");
	/* fusion.1: {1100, 900} ns: median (1100 + 900) / 2 = 1000, band 900 .. 1100. */
	cr_assert_float_eq(x->dur_med[a], 1000, 1e-9);
	cr_assert_float_eq(x->dur_lo[a], 900, 1e-9);
	cr_assert_float_eq(x->dur_hi[a], 1100, 1e-9);
	/* fusion.12: {2000, 2400}: median 2200; copy.3: {1000, 1200}: median 1100. */
	cr_assert_float_eq(x->dur_med[b], 2200, 1e-9);
	cr_assert_float_eq(x->dur_med[c], 1100, 1e-9);
	/* Step 0 rebased to the prediction's first start (0): fusion.12 was issued at
	 * 101.200 us - 100.000 us = 1200 ns and starts at 1500 ns. */
	cr_assert_eq(x->steps[0]->ops[b].issue, 1200);
	cr_assert_eq(x->steps[0]->ops[b].start, 1500);
	/* Spans: step 0 100.000 .. 105.000 = 5000 ns; step 1 200.000 .. 205.200 = 5200 ns. */
	cr_assert_eq(x->span[0], 5000);
	cr_assert_eq(x->span[1], 5200);

	LhValidation v;
	lh_validate_measured(f.g, f.pred, x, &v);
	/* Step: median (5000 + 5200) / 2 = 5100 against 4000: +27.5 %, outside 5000 .. 5200. */
	cr_assert_eq(v.step_pred, 4000);
	cr_assert_float_eq(v.step_meas, 5100, 1e-9);
	cr_assert_float_eq(v.step_err, 0.275, 1e-12);
	cr_assert_not(v.step_noise);
	/* Ops: errors 0, +10 %, +10 %; each prediction lies inside its band. */
	cr_assert_float_eq(v.op_err[a], 0, 1e-12);
	cr_assert_float_eq(v.op_err[b], 0.1, 1e-12);
	cr_assert_float_eq(v.op_err[c], 0.1, 1e-12);
	cr_assert_eq(v.ops_noise, 3);
	cr_assert_float_eq(v.ops.median, 0.1, 1e-12);
	cr_assert_float_eq(v.ops.max, 0.1, 1e-12);
	/* The parts add up to the step's difference. */
	double sum = 0;
	for (int k = 0; k < LH_GAP_N; k++)
		sum += v.gap[k];
	cr_assert_float_eq(sum, v.step_meas - (double)v.step_pred, 1e-6);
	lh_validation_clear(&v);
	fix_clear(&f);
}

/* Kineto's ProfilerStep#N ranges, on the host (user_annotation, 0 .. 50 and 50 .. 100 us) and
 * again on the device (gpu_user_annotation, 10 .. 50 and 60 .. 100 us): two steps, not four.
 * Each step runs the prediction exactly: fusion.1 1 us, fusion.12 2 us, the copy 1 us. */
static const char *profsteps =
    "{\"traceEvents\": [\n"
    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#0\", \"ts\": 0, "
    "\"dur\": 50},\n"
    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", \"ts\": 50, "
    "\"dur\": 50},\n"
    "{\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"ProfilerStep#0\", \"ts\": 10, "
    "\"dur\": 40, \"args\": {\"device\": 0, \"stream\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"ProfilerStep#1\", \"ts\": 60, "
    "\"dur\": 40, \"args\": {\"device\": 0, \"stream\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"fusion.1\", \"ts\": 10, \"dur\": 1, "
    "\"args\": {\"device\": 0, \"stream\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"fusion.12\", \"ts\": 11, \"dur\": 2, "
    "\"args\": {\"device\": 0, \"stream\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD\", \"ts\": 13, \"dur\": 1, "
    "\"args\": {\"device\": 0, \"stream\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"fusion.1\", \"ts\": 60, \"dur\": 1, "
    "\"args\": {\"device\": 0, \"stream\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"fusion.12\", \"ts\": 61, \"dur\": 2, "
    "\"args\": {\"device\": 0, \"stream\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD\", \"ts\": 63, \"dur\": 1, "
    "\"args\": {\"device\": 0, \"stream\": 7}}\n"
    "]}\n";

Test(measured, kineto_profiler_steps)
{
	Fix f;
	fix_init(&f);
	g_autofree char *p = write_tmp("ps.json", profsteps);
	g_autoptr(LhMeasured) m = load_ok(p);
	g_autoptr(LhMatch) x = match_ok(m, &f);
	cr_assert_eq(x->n_steps, 2);
	cr_assert(strstr(x->step_rule, "2 ranges"), "%s", x->step_rule);
	cr_assert_eq(x->by[LH_MATCH_NAME], 4);
	cr_assert_eq(x->by[LH_MATCH_ORDER], 2);
	cr_assert_eq(x->span[0], 4000);
	cr_assert_eq(x->span[1], 4000);
	fix_clear(&f);
}

/* The Kineto trace above, gzipped as PyTorch writes it (.pt.trace.json.gz): the same events;
 * cut short, an error naming the file. */
Test(measured, gzip)
{
	g_autoptr(GOutputStream) mem = g_memory_output_stream_new_resizable();
	g_autoptr(GZlibCompressor) z = g_zlib_compressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP, -1);
	g_autoptr(GOutputStream) out = g_converter_output_stream_new(mem, G_CONVERTER(z));
	cr_assert(g_output_stream_write_all(out, kineto, strlen(kineto), NULL, NULL, NULL));
	cr_assert(g_output_stream_close(out, NULL, NULL));
	gsize n = g_memory_output_stream_get_data_size(G_MEMORY_OUTPUT_STREAM(mem));
	const char *gz = g_memory_output_stream_get_data(G_MEMORY_OUTPUT_STREAM(mem));
	g_autofree char *dir = t_tmpdir();
	g_autofree char *p = g_build_filename(dir, "k.pt.trace.json.gz", NULL);
	cr_assert(g_file_set_contents(p, gz, (gssize)n, NULL));
	g_autoptr(LhMeasured) m = load_ok(p);
	cr_assert_str_eq(m->format, "chrome (kineto)");
	cr_assert_eq(m->events->len, 6);
	g_autofree char *q = g_build_filename(dir, "cut.json.gz", NULL);
	cr_assert(g_file_set_contents(q, gz, (gssize)(n / 2), NULL));
	GError *e = NULL;
	cr_assert_null(lh_measured_load(q, &e));
	cr_assert(g_str_has_prefix(e->message, q), "%s", e->message);
	cr_assert(strstr(e->message, "gzip"), "%s", e->message);
	g_error_free(e);
}

/* fusion.12 launches two kernels per step ("fusion_12_a" 1 us, "fusion_12_b" 1 us, back to
 * back): each run counts as one occurrence, so fusion.1 and fusion.12 are both named twice and
 * the trace has two steps (counting kernels would give fusion.12 four). The op's interval is
 * from its first kernel's start to its last one's end: 2000 ns, the prediction. */
static const char *twokernels =
    "{\"traceEvents\": [\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"fusion.1\", \"ts\": 10, \"dur\": 1, "
    "\"args\": {\"device\": 0, \"stream\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"fusion_12_a\", \"ts\": 11, \"dur\": 1, "
    "\"args\": {\"device\": 0, \"stream\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"fusion_12_b\", \"ts\": 12, \"dur\": 1, "
    "\"args\": {\"device\": 0, \"stream\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD\", \"ts\": 13, \"dur\": 1, "
    "\"args\": {\"device\": 0, \"stream\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"fusion.1\", \"ts\": 30, \"dur\": 1, "
    "\"args\": {\"device\": 0, \"stream\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"fusion_12_a\", \"ts\": 31, \"dur\": 1, "
    "\"args\": {\"device\": 0, \"stream\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"fusion_12_b\", \"ts\": 32, \"dur\": 1, "
    "\"args\": {\"device\": 0, \"stream\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD\", \"ts\": 33, \"dur\": 1, "
    "\"args\": {\"device\": 0, \"stream\": 7}}\n"
    "]}\n";

Test(measured, op_of_two_kernels)
{
	Fix f;
	fix_init(&f);
	g_autofree char *p = write_tmp("two.json", twokernels);
	g_autoptr(LhMeasured) m = load_ok(p);
	g_autoptr(LhMatch) x = match_ok(m, &f);
	cr_assert_eq(x->n_steps, 2, "%s", x->step_rule);
	cr_assert_eq(x->by[LH_MATCH_TOKEN], 4);
	cr_assert_eq(x->by[LH_MATCH_ORDER], 2);
	cr_assert_float_eq(x->dur_med[t_id(f.g, "fusion.12")], 2000, 1e-9);
	cr_assert_eq(x->span[0], 4000);
	cr_assert_eq(x->span[1], 4000);
	fix_clear(&f);
}

/* ---- the gap's parts, by hand ---- */

/* One step (ns after rebasing at 10 us): fusion.1 0 .. 1000; the device idles 1000 .. 1500;
 * fusion.12 was issued at 1300 (its cudaLaunchKernel ends at 11.300 us) and runs 1500 .. 3500;
 * the copy runs 3500 .. 4700 (1200 ns, the prediction 1000). Span 4700 against 4000: +700 ns =
 * host issue 1000 .. 1300 (300) + idle main stream 1300 .. 1500 (200) + exposed copy
 * 1200 - 1000 (200). Kernel time 1000 + 2000 = 3000 both: no kernel part. */
static const char *gaps =
    "{\"traceEvents\": [\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"fusion.1\", \"ts\": 10.0, \"dur\": 1.0, "
    "\"args\": {\"device\": 0, \"stream\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"ts\": 11.0, "
    "\"dur\": 0.3, \"args\": {\"correlation\": 2}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"fusion.12\", \"ts\": 11.5, \"dur\": 2.0, "
    "\"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 2}},\n"
    "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD\", \"ts\": 13.5, \"dur\": "
    "1.2, \"args\": {\"device\": 0, \"stream\": 7}}\n"
    "]}\n";

/* fusion.12 on stream 7 runs 1000 .. 3500 (2500 ns, +500) while the copy runs on stream 8 at
 * 1000 .. 2000. Stream 8 has no name match and the serial plan no second stream, so its copy
 * is matched by order against every stream's ops. Span 3500 against 4000: -500 ns = kernels
 * slower under overlap +500 (fusion.12 overlaps the copy) + exposed copy 0 - 1000. Kernel time
 * 3500 - 3000 = +500, all of it the overlap: the cost-model part is 0. */
static const char *overlap =
    "{\"traceEvents\": [\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"fusion.1\", \"ts\": 10.0, \"dur\": 1.0, "
    "\"args\": {\"device\": 0, \"stream\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"fusion.12\", \"ts\": 11.0, \"dur\": 2.5, "
    "\"args\": {\"device\": 0, \"stream\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD\", \"ts\": 11.0, \"dur\": "
    "1.0, \"args\": {\"device\": 0, \"stream\": 8}}\n"
    "]}\n";

Test(measured, gap_parts_by_hand)
{
	Fix f;
	fix_init(&f);
	struct {
		const char *text;
		double gap[LH_GAP_N];
		double step;
	} cases[] = {
	    {gaps, {[LH_GAP_HOST] = 300, [LH_GAP_IDLE] = 200, [LH_GAP_COPY] = 200}, 4700},
	    {overlap, {[LH_GAP_KERNEL_OVERLAP] = 500, [LH_GAP_COPY] = -1000}, 3500},
	};
	for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *p = write_tmp("gap.json", cases[i].text);
		g_autoptr(LhMeasured) m = load_ok(p);
		g_autoptr(LhMatch) x = match_ok(m, &f);
		cr_assert_eq(x->ops_matched, 3, "case %zu", i);
		LhValidation v;
		lh_validate_measured(f.g, f.pred, x, &v);
		cr_assert_float_eq(v.step_meas, cases[i].step, 1e-9, "case %zu", i);
		for (int k = 0; k < LH_GAP_N; k++)
			cr_assert_float_eq(v.gap[k], cases[i].gap[k], 1e-9, "case %zu: %s: %g", i,
			                   lh_gap_name((LhGap)k), v.gap[k]);
		/* One step: nothing is within noise. */
		cr_assert_not(v.step_noise);
		lh_validation_clear(&v);
	}
	fix_clear(&f);
}

/* ---- XLA (xprof) export: by order only, steps from the Steps line ---- */

/* GPU 0's process holds "Stream #12(Compute)" and "Steps" (two steps of 10 us). No event name
 * or hlo_op names an op, so all six match by order; every duration equals the prediction:
 * kernels 1 and 2 us, the copy 1 us. The "XLA Ops" line repeats ops and is left out. */
static const char *xprof =
    "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n"
    "{\"ph\": \"M\", \"pid\": 3, \"name\": \"process_name\", \"args\": {\"name\": "
    "\"/device:GPU:0\"}},\n"
    "{\"ph\": \"M\", \"pid\": 3, \"tid\": 12, \"name\": \"thread_name\", \"args\": {\"name\": "
    "\"Stream #12(Compute)\"}},\n"
    "{\"ph\": \"M\", \"pid\": 3, \"tid\": 1, \"name\": \"thread_name\", \"args\": {\"name\": "
    "\"Steps\"}},\n"
    "{\"ph\": \"M\", \"pid\": 3, \"tid\": 2, \"name\": \"thread_name\", \"args\": {\"name\": \"XLA "
    "Ops\"}},\n"
    "{\"ph\": \"X\", \"pid\": 3, \"tid\": 1, \"name\": \"0\", \"ts\": 0, \"dur\": 10},\n"
    "{\"ph\": \"X\", \"pid\": 3, \"tid\": 1, \"name\": \"1\", \"ts\": 10, \"dur\": 10},\n"
    "{\"ph\": \"X\", \"pid\": 3, \"tid\": 2, \"name\": \"fusion.1\", \"ts\": 1, \"dur\": 1},\n"
    "{\"ph\": \"X\", \"pid\": 3, \"tid\": 12, \"name\": \"input_reduce_a\", \"ts\": 1, \"dur\": "
    "1},\n"
    "{\"ph\": \"X\", \"pid\": 3, \"tid\": 12, \"name\": \"input_reduce_b\", \"ts\": 2, \"dur\": "
    "2},\n"
    "{\"ph\": \"X\", \"pid\": 3, \"tid\": 12, \"name\": \"MemcpyHtoD\", \"ts\": 4, \"dur\": 1},\n"
    "{\"ph\": \"X\", \"pid\": 3, \"tid\": 12, \"name\": \"input_reduce_a\", \"ts\": 11, \"dur\": "
    "1},\n"
    "{\"ph\": \"X\", \"pid\": 3, \"tid\": 12, \"name\": \"input_reduce_b\", \"ts\": 12, \"dur\": "
    "2},\n"
    "{\"ph\": \"X\", \"pid\": 3, \"tid\": 12, \"name\": \"MemcpyHtoD\", \"ts\": 14, \"dur\": 1}\n"
    "]}\n";

Test(measured, xla_order_and_step_ranges)
{
	Fix f;
	fix_init(&f);
	g_autofree char *p = write_tmp("x.json", xprof);
	g_autoptr(LhMeasured) m = load_ok(p);
	cr_assert_str_eq(m->format, "chrome (xla)");
	cr_assert_eq(m->events->len, 6);
	g_autoptr(LhMatch) x = match_ok(m, &f);
	cr_assert_eq(x->n_steps, 2);
	cr_assert(strstr(x->step_rule, "2 ranges"), "%s", x->step_rule);
	cr_assert_eq(x->by[LH_MATCH_ORDER], 6);
	cr_assert_eq(x->ops_matched, 3);
	/* First kernel -> fusion.1 (1 us), second -> fusion.12 (2 us), the copy -> copy.3. */
	cr_assert_float_eq(x->dur_med[t_id(f.g, "fusion.1")], 1000, 1e-9);
	cr_assert_float_eq(x->dur_med[t_id(f.g, "fusion.12")], 2000, 1e-9);
	cr_assert_float_eq(x->dur_med[t_id(f.g, "copy.3")], 1000, 1e-9);
	LhValidation v;
	lh_validate_measured(f.g, f.pred, x, &v);
	/* Spans 1 .. 5 us and 11 .. 15 us: 4000 ns, the prediction: no error, no gap, and the
	 * prediction inside the (empty) band. */
	cr_assert_float_eq(v.step_err, 0, 1e-12);
	cr_assert(v.step_noise);
	for (int k = 0; k < LH_GAP_N; k++)
		cr_assert_float_eq(v.gap[k], 0, 1e-9, "%s", lh_gap_name((LhGap)k));
	lh_validation_clear(&v);
	fix_clear(&f);
}

/* ---- Nsight Systems SQLite, built here with the schema subset docs/measured.md lists ---- */

static void sql(sqlite3 *db, const char *s)
{
	char *err = NULL;
	cr_assert_eq(sqlite3_exec(db, s, NULL, NULL, &err), SQLITE_OK, "%s: %s", s, err);
}

static char *make_db(const char *name, const char *script)
{
	g_autofree char *dir = t_tmpdir();
	char *p = g_build_filename(dir, name, NULL);
	sqlite3 *db;
	cr_assert_eq(sqlite3_open(p, &db), SQLITE_OK);
	sql(db, script);
	sqlite3_close(db);
	return p;
}

#define NSYS_TABLES                                                                                \
	"CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"                    \
	"CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,"   \
	" deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER,"           \
	" globalPid INTEGER, demangledName INTEGER, shortName INTEGER, mangledName INTEGER);"      \
	"CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,"   \
	" deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER,"           \
	" globalPid INTEGER, bytes INTEGER, copyKind INTEGER, srcKind INTEGER, dstKind INTEGER);"  \
	"CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL,"   \
	" deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER,"           \
	" globalPid INTEGER, value INTEGER, bytes INTEGER);"                                       \
	"CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,"  \
	" eventClass INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER,"           \
	" returnValue INTEGER);"                                                                   \
	"CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER,"        \
	" rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,"         \
	" endGlobalTid INTEGER, textId INTEGER, domainId INTEGER);"

/* Device 0, stream 7 (times in ns):
 *   kernel "gemm_kernel" 1000 .. 2000, correlation 1, launched by cudaLaunchKernel 500 .. 600
 *     on thread 42 inside the NVTX push/pop range "fusion.1" (400 .. 700, textId 3): by
 *     annotation -> fusion.1, issued at 600;
 *   kernel "fusion_12" 2000 .. 4000: its whole name is fusion.12 normalized: by token;
 *   memcpy HtoD (copyKind 1) 10000 B 4000 .. 5000: by order -> copy.3;
 *   a memset 5000 .. 5100 (never an op), and a kernel on device 1 (left out).
 * Every duration is the prediction's, and the span 1000 .. 5000 is 4000 ns. */
static const char *nsys_rows =
    "INSERT INTO StringIds VALUES (1, 'gemm_kernel'), (2, 'fusion_12'), (3, 'fusion.1'),"
    " (4, 'other');"
    "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, correlationId,"
    " demangledName, shortName) VALUES (1000, 2000, 0, 7, 1, 1, 1), (2000, 4000, 0, 7, 2, 2, 2),"
    " (0, 100, 1, 7, 9, 4, 4);"
    "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, streamId, correlationId,"
    " bytes, copyKind) VALUES (4000, 5000, 0, 7, 3, 10000, 1);"
    "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, streamId, correlationId,"
    " value, bytes) VALUES (5000, 5100, 0, 7, 4, 0, 64);"
    "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, globalTid, correlationId) VALUES"
    " (500, 600, 42, 1);"
    "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId) VALUES"
    " (400, 700, 59, NULL, 42, 3), (0, 10000, 59, 'outer', 42, NULL);";

Test(measured, nsys_sqlite)
{
	Fix f;
	fix_init(&f);
	g_autofree char *script = g_strconcat(NSYS_TABLES, nsys_rows, NULL);
	g_autofree char *p = make_db("r.sqlite", script);
	g_autoptr(LhMeasured) m = load_ok(p);
	cr_assert_str_eq(m->format, "nsys sqlite");
	cr_assert_eq(m->events->len, 5);
	g_autoptr(LhMatch) x = match_ok(m, &f);
	cr_assert_eq(x->ev_other_device, 1);
	cr_assert_eq(x->ev_memset, 1);
	cr_assert_eq(x->ev_total, 3);
	cr_assert_eq(x->by[LH_MATCH_ANNOTATION], 1);
	cr_assert_eq(x->by[LH_MATCH_TOKEN], 1);
	cr_assert_eq(x->by[LH_MATCH_ORDER], 1);
	cr_assert_eq(x->n_steps, 1);
	guint32 a = t_id(f.g, "fusion.1");
	cr_assert_eq(x->how[a], LH_MATCH_ANNOTATION);
	/* Issued at 600 ns, 400 ns before its start at 1000 ns: on the prediction's clock
	 * 600 - 1000 + 0 < 0, so 0. */
	cr_assert_eq(x->steps[0]->ops[a].issue, 0);
	LhValidation v;
	lh_validate_measured(f.g, f.pred, x, &v);
	cr_assert_float_eq(v.step_err, 0, 1e-12);
	cr_assert_float_eq(v.ops.max, 0, 1e-12);
	lh_validation_clear(&v);
	fix_clear(&f);
}

/* ---- round trip: lhsim's own trace validates with zero error and no gap ---- */

Test(measured, round_trip_own_trace)
{
	g_autoptr(LhGraph) g = lh_default_workload();
	lh_models_init();
	GError *e = NULL;
	g_autoptr(LhHw) hw = lh_hw_lookup("h100-sxm", &e);
	cr_assert(hw);
	g_autoptr(LhPlan) plan = lh_scheduler_run(lh_scheduler_find("lhs"), g, hw, NULL, NULL, &e);
	cr_assert(plan, "%s", e ? e->message : "");
	g_autoptr(LhTrace) pred = t_sim(g, hw, plan);
	g_autofree char *json = lh_trace_to_chrome_json(pred, g, plan);
	g_autofree char *p = write_tmp("own.json", json);
	g_autoptr(LhMeasured) m = load_ok(p);
	cr_assert_str_eq(m->format, "chrome (lhsim)");
	g_autoptr(LhMatch) x = lh_match(m, g, plan, pred, NULL, &e);
	cr_assert(x, "%s", e ? e->message : "");
	cr_assert_eq(x->ev_matched, x->ev_total);
	cr_assert_eq(x->by[LH_MATCH_NAME], x->ev_total);
	cr_assert_eq(x->ops_matched, x->ops_total);
	LhValidation v;
	lh_validate_measured(g, pred, x, &v);
	cr_assert_eq((double)v.step_pred, v.step_meas);
	cr_assert_eq(v.step_err, 0);
	cr_assert_eq(v.ops.max, 0);
	for (int k = 0; k < LH_GAP_N; k++)
		cr_assert_eq(v.gap[k], 0, "%s: %g", lh_gap_name((LhGap)k), v.gap[k]);
	/* The measured trace is the prediction, op by op. */
	for (guint32 i = 0; i < lh_graph_n_ops(g); i++) {
		cr_assert_eq(x->median->ops[i].start, pred->ops[i].start);
		cr_assert_eq(x->median->ops[i].end, pred->ops[i].end);
		cr_assert_eq(x->median->ops[i].issue,
		             pred->ops[i].start >= 0 ? pred->ops[i].issue : -1);
	}
	lh_validation_clear(&v);

	/* The command says so too. */
	g_autofree char *dir = t_tmpdir();
	g_autofree char *csv = g_build_filename(dir, "v.csv", NULL);
	char *out = NULL, *err = NULL;
	int st =
	    t_lhsim(&out, &err, "validate", "--sched", "lhs", "--measured", p, "--csv", csv, NULL);
	cr_assert_eq(st, 0, "%s", err);
	cr_assert(strstr(out, "gap: none"), "%s", out);
	cr_assert(strstr(out, "error +0.0 %"), "%s", out);
	cr_assert(g_file_test(csv, G_FILE_TEST_EXISTS));
	g_free(out);
	g_free(err);
}

/* ---- calibration recovers perturbed hardware numbers ---- */

/* Memory-bound kernels (bytes only), compute-bound kernels (flops only), copies both ways and
 * all-reduces, each in four sizes, run serially: each alone, so each is its standalone time. */
static LhGraph *calib_graph(double scale)
{
	LhGraph *g = lh_graph_new("calib");
	guint32 prev = LH_NO_OP;
	for (int s = 1; s <= 4; s++) {
		char nm[32];
		guint32 i;
		g_snprintf(nm, sizeof nm, "mem%d", s);
		i = lh_graph_add_op(g, nm, LH_OP_KERNEL);
		lh_graph_op_mut(g, i)->bytes = 5e7 * s * scale; /* 50 .. 200 MB at scale 1 */
		if (prev != LH_NO_OP)
			t_dep(g, i, prev);
		prev = i;
		g_snprintf(nm, sizeof nm, "mm%d", s);
		i = lh_graph_add_op(g, nm, LH_OP_KERNEL);
		lh_graph_op_mut(g, i)->flops = 2e11 * s * scale; /* 0.2 .. 0.8 TFLOP */
		t_dep(g, i, prev);
		prev = i;
		g_snprintf(nm, sizeof nm, "h2d%d", s);
		i = t_op(g, nm, LH_OP_COPY_H2D, (guint64)(4e6 * s * scale));
		t_dep(g, i, prev);
		prev = i;
		g_snprintf(nm, sizeof nm, "d2h%d", s);
		i = t_op(g, nm, LH_OP_COPY_D2H, (guint64)(3e6 * s * scale));
		t_dep(g, i, prev);
		prev = i;
		g_snprintf(nm, sizeof nm, "ar%d", s);
		i = t_op(g, nm, LH_OP_ALL_REDUCE, (guint64)(8e6 * s * scale));
		t_dep(g, i, prev);
		prev = i;
	}
	t_finish(g);
	return g;
}

static double key_value(GArray *keys, const char *k, gboolean *fitted)
{
	for (guint i = 0; i < keys->len; i++) {
		const LhFitKey *f = &g_array_index(keys, LhFitKey, i);
		if (!strcmp(f->key, k)) {
			*fitted = f->fitted;
			return f->value;
		}
	}
	cr_assert_fail("no key %s", k);
	return 0;
}

Test(measured, calibration_recovers_perturbed_hw)
{
	lh_models_init();
	GError *e = NULL;
	g_autoptr(LhHw) base = lh_hw_lookup("h100-sxm", &e);
	cr_assert(base);
	/* The built-in describes a DGX node (a cluster), whose collectives are costed by NVLink
	 * bus bandwidth and NCCL's latencies, not by link_gbs: take the cluster out, so that
	 * link_gbs and link_latency_ns decide the collectives (checked with the cluster below). */
	base->gpus_per_node = 0;
	base->nvlink_busbw_gbs = base->net_gbs = 0;
	base->coll_base_latency_ns = base->nvlink_latency_ns = base->net_latency_ns = 0;
	g_autoptr(LhHw) truth = lh_hw_copy(base);
	truth->hbm_eff = 0.6;                   /* base 0.85 */
	truth->compute_eff = 0.5;               /* base 0.7 */
	truth->kernel_overhead_ns = 3500;       /* base 2000 */
	truth->launch_ns = 2 * base->launch_ns; /* doubled: 8000 */
	truth->pcie_gbs = 40;                   /* base 55 */
	truth->copy_latency_ns = 3000;          /* base 2000 */
	truth->link_gbs = 500;                  /* base 750 */
	truth->link_latency_ns = 9000;          /* base 5000 */
	g_autoptr(LhGraph) g = calib_graph(1);
	g_autoptr(LhPlan) plan =
	    lh_scheduler_run(lh_scheduler_find("serial"), g, base, NULL, NULL, &e);
	cr_assert(plan);
	/* The measurement: the perturbed model's run, written as a trace and read back. */
	g_autoptr(LhTrace) meas = t_sim(g, truth, plan);
	g_autofree char *json = lh_trace_to_chrome_json(meas, g, plan);
	g_autofree char *p = write_tmp("perturbed.json", json);
	g_autoptr(LhMeasured) m = load_ok(p);
	g_autoptr(LhTrace) pred = t_sim(g, base, plan);
	g_autoptr(LhMatch) x = lh_match(m, g, plan, pred, NULL, &e);
	cr_assert(x, "%s", e ? e->message : "");
	g_autoptr(GArray) keys = g_array_new(FALSE, FALSE, sizeof(LhFitKey));
	LhMatch *xs[1] = {x};
	g_autoptr(LhHw) fit = lh_calibrate_from(g, base, plan, xs, 1, keys, &e);
	cr_assert(fit, "%s", e ? e->message : "");
	struct {
		const char *key;
		double want;
	} want[] = {{"hbm_eff", 0.6},    {"compute_eff", 0.5},     {"kernel_overhead_ns", 3500},
	            {"launch_ns", 8000}, {"pcie_gbs", 40},         {"copy_latency_ns", 3000},
	            {"link_gbs", 500},   {"link_latency_ns", 9000}};
	for (gsize i = 0; i < G_N_ELEMENTS(want); i++) {
		gboolean fitted = FALSE;
		double v = key_value(keys, want[i].key, &fitted);
		cr_assert(fitted, "%s not fitted", want[i].key);
		cr_assert(fabs(v - want[i].want) <= 0.02 * want[i].want, "%s: fitted %g, want %g",
		          want[i].key, v, want[i].want);
	}
	/* With the cluster the link keys decide nothing: calibration keeps them and says why. */
	g_autoptr(LhHw) dgx = lh_hw_lookup("h100-sxm", &e);
	cr_assert(dgx);
	g_autoptr(GArray) keys2 = g_array_new(FALSE, FALSE, sizeof(LhFitKey));
	g_autoptr(LhHw) fit2 = lh_calibrate_from(g, dgx, plan, xs, 1, keys2, &e);
	cr_assert(fit2, "%s", e ? e->message : "");
	for (guint i = 0; i < keys2->len; i++) {
		const LhFitKey *f = &g_array_index(keys2, LhFitKey, i);
		if (strcmp(f->key, "link_gbs") && strcmp(f->key, "link_latency_ns"))
			continue;
		cr_assert_not(f->fitted, "%s fitted on a cluster", f->key);
		cr_assert(f->note && strstr(f->note, "cluster model"), "%s", f->key);
	}
	cr_assert_eq(fit2->link_gbs, dgx->link_gbs);
	lh_fit_keys_clear(keys2);
	/* No GEMM shapes and no transposes: those keys are refused and keep the base. */
	gboolean fitted = TRUE;
	cr_assert_eq(key_value(keys, "gemm_eff", &fitted), base->gemm_eff);
	cr_assert_not(fitted);
	cr_assert_eq(fit->gemm_eff, base->gemm_eff);
	/* The serial plan has no events between launches: event_ns is refused. */
	key_value(keys, "event_ns", &fitted);
	cr_assert_not(fitted);
	lh_fit_keys_clear(keys);

	/* Held apart, through the commands: fit on this file, then validate the fitted model on
	 * another graph (every size 1.7 times larger) measured on the same perturbed hardware. */
	g_autofree char *dir = t_tmpdir();
	g_autofree char *gpath = g_build_filename(dir, "calib.json", NULL);
	g_autofree char *g2path = g_build_filename(dir, "calib2.json", NULL);
	g_autofree char *ini = g_build_filename(dir, "fit.ini", NULL);
	cr_assert(lh_graph_write_json_file(g, gpath, &e));
	g_autoptr(LhGraph) g2 = calib_graph(1.7);
	cr_assert(lh_graph_write_json_file(g2, g2path, &e));
	g_autoptr(LhPlan) plan2 =
	    lh_scheduler_run(lh_scheduler_find("serial"), g2, base, NULL, NULL, &e);
	g_autoptr(LhTrace) meas2 = t_sim(g2, truth, plan2);
	g_autofree char *json2 = lh_trace_to_chrome_json(meas2, g2, plan2);
	g_autofree char *p2 = write_tmp("held-apart.json", json2);
	char *out = NULL, *err = NULL;
	int st = t_lhsim(&out, &err, "calibrate", "--from", p, gpath, "-o", ini, NULL);
	cr_assert_eq(st, 0, "%s", err);
	cr_assert(strstr(out, "hbm_eff"), "%s", out);
	cr_assert(strstr(out, "no measured kernel is bound by this term: kept"), "%s", out);
	g_free(out);
	g_free(err);
	st = t_lhsim(&out, &err, "validate", g2path, "--hw", ini, "--measured", p2, NULL);
	cr_assert_eq(st, 0, "%s", err);
	g_free(out);
	g_free(err);
	/* The same comparison in code: the fitted model predicts the held-apart run's step within
	 * 2 %; the base model, 25 % or more off (hbm_eff 0.85 vs 0.6 alone is 1 - 0.6 / 0.85 =
	 * 29 % on memory-bound kernels). */
	g_autoptr(LhHw) fitted_hw = lh_hw_new_from_file(ini, &e);
	cr_assert(fitted_hw, "%s", e ? e->message : "");
	g_autoptr(LhMeasured) m2 = load_ok(p2);
	const LhHw *models[2] = {fitted_hw, base};
	for (int k = 0; k < 2; k++) {
		g_autoptr(LhTrace) pr = t_sim(g2, models[k], plan2);
		g_autoptr(LhMatch) x2 = lh_match(m2, g2, plan2, pr, NULL, &e);
		cr_assert(x2);
		LhValidation v;
		lh_validate_measured(g2, pr, x2, &v);
		if (k == 0)
			cr_assert(fabs(v.step_err) < 0.02, "fitted: step error %g", v.step_err);
		else
			cr_assert(fabs(v.step_err) > 0.25, "base: step error %g", v.step_err);
		lh_validation_clear(&v);
	}
}

/* Same inputs, same output, bit for bit. */
Test(measured, deterministic_output)
{
	g_autofree char *p = write_tmp("k.json", kineto);
	g_autofree char *dir = t_tmpdir();
	g_autofree char *gpath = g_build_filename(dir, "small.json", NULL);
	g_autoptr(LhGraph) g = small_graph();
	GError *e = NULL;
	cr_assert(lh_graph_write_json_file(g, gpath, &e));
	char *a = NULL, *b = NULL;
	cr_assert_eq(t_lhsim(&a, NULL, "validate", gpath, "--measured", p, "--json", NULL), 0);
	cr_assert_eq(t_lhsim(&b, NULL, "validate", gpath, "--measured", p, "--json", NULL), 0);
	cr_assert_str_eq(a, b);
	cr_assert(strstr(a, "\"by_token\" : 2"), "%s", a);
	g_free(a);
	g_free(b);
}

/* ---- bad inputs ---- */

typedef struct {
	const char *label, *text, *where, *needle;
} Bad;

static const Bad bad_json[] = {
    {"truncated", "{\"traceEvents\": [\n{\"ph\": \"X\", \"cat\": \"ker",
     ":2:", "truncated or not JSON"},
    {"missing stream",
     "{\"traceEvents\": [\n{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1, "
     "\"dur\": 1,"
     " \"args\": {\"device\": 0}}\n]}",
     ":2:", "the stream is missing"},
    {"unknown phase",
     "{\"traceEvents\": [\n{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1, "
     "\"dur\": 1,"
     " \"args\": {\"device\": 0, \"stream\": 7}},\n{\"ph\": \"Q\", \"name\": \"z\"}\n]}",
     ":3:", "unknown event phase 'Q'"},
    {"unknown lhsim kind",
     "{\"otherData\": {\"graph\": \"g\", \"source\": \"simulated\"}, \"traceEvents\": [\n"
     "{\"ph\": \"X\", \"cat\": \"kernal\", \"name\": \"k\", \"pid\": 1, \"tid\": 0, \"ts\": 1, "
     "\"dur\": 1}\n]}",
     ":2:", "unknown op kind 'kernal'"},
    {"overlap on a stream",
     "{\"traceEvents\": [\n"
     "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"a\", \"ts\": 1, \"dur\": 5, \"args\": "
     "{\"device\": 0, \"stream\": 7}},\n"
     "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"b\", \"ts\": 3, \"dur\": 1, \"args\": "
     "{\"device\": 0, \"stream\": 7}}\n]}",
     ":3:", "timestamps are not monotonic"},
    {"negative duration",
     "{\"traceEvents\": [\n{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"a\", \"ts\": 1,\n "
     "\"dur\": -5,"
     " \"args\": {\"device\": 0, \"stream\": 7}}\n]}",
     ":3:", "negative duration"},
    {"no traceEvents", "{\"foo\": 1}", ":1:1", "no \"traceEvents\""},
    {"no GPU events",
     "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"ts\": 1, \"dur\": "
     "1}]}",
     ": no GPU events", "no GPU events"},
    {"too deep",
     "{\"traceEvents\": "
     "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
     ":1:", "nested deeper"},
};

Test(measured, bad_json_inputs)
{
	for (gsize i = 0; i < G_N_ELEMENTS(bad_json); i++) {
		const Bad *b = &bad_json[i];
		g_autofree char *p = write_tmp("bad.json", b->text);
		GError *e = NULL;
		LhMeasured *m = lh_measured_load(p, &e);
		cr_assert_null(m, "%s: accepted", b->label);
		cr_assert(g_str_has_prefix(e->message, p), "%s: %s", b->label, e->message);
		cr_assert(strstr(e->message + strlen(p), b->where), "%s: want '%s' in %s", b->label,
		          b->where, e->message);
		cr_assert(strstr(e->message, b->needle), "%s: want '%s' in %s", b->label, b->needle,
		          e->message);
		g_error_free(e);
		/* The command: exit 2 and the same message. */
		char *err = NULL;
		int st = t_lhsim(NULL, &err, "validate", "--measured", p, NULL);
		cr_assert_eq(st, 2, "%s: exit %d: %s", b->label, st, err);
		cr_assert(strstr(err, b->needle), "%s: %s", b->label, err);
		g_free(err);
	}
}

static const Bad bad_sql[] = {
    {"no tables", "CREATE TABLE foo (a INTEGER);", ": no table CUPTI_ACTIVITY_KIND_KERNEL",
     "not an Nsight Systems export"},
    {"no StringIds",
     "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,"
     " streamId INTEGER, correlationId INTEGER, shortName INTEGER);",
     ": no table StringIds", "names the kernels"},
    {"no column",
     "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);"
     "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,"
     " streamId INTEGER, correlationId INTEGER);",
     ": table CUPTI_ACTIVITY_KIND_KERNEL:", "no such column: k.shortName"},
    {"missing stream",
     "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);"
     "INSERT INTO StringIds VALUES (1, 'k');"
     "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,"
     " streamId INTEGER, correlationId INTEGER, shortName INTEGER);"
     "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 2, 0, NULL, 1, 1);",
     ": table CUPTI_ACTIVITY_KIND_KERNEL row 1:", "the stream is missing"},
    {"end before start",
     "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER, end INTEGER, deviceId INTEGER,"
     " streamId INTEGER, correlationId INTEGER, bytes INTEGER);"
     "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (10, 2, 0, 7, 1, 8);",
     ": table CUPTI_ACTIVITY_KIND_MEMSET row 1:", "not monotonic"},
};

Test(measured, bad_sqlite_inputs)
{
	for (gsize i = 0; i < G_N_ELEMENTS(bad_sql); i++) {
		const Bad *b = &bad_sql[i];
		g_autofree char *p = make_db("bad.sqlite", b->text);
		GError *e = NULL;
		LhMeasured *m = lh_measured_load(p, &e);
		cr_assert_null(m, "%s: accepted", b->label);
		cr_assert(strstr(e->message, b->where), "%s: want '%s' in %s", b->label, b->where,
		          e->message);
		cr_assert(strstr(e->message, b->needle), "%s: want '%s' in %s", b->label, b->needle,
		          e->message);
		g_error_free(e);
		char *err = NULL;
		int st = t_lhsim(NULL, &err, "validate", "--measured", p, NULL);
		cr_assert_eq(st, 2, "%s: exit %d: %s", b->label, st, err);
		g_free(err);
	}
}

Test(measured, cli_errors)
{
	char *err = NULL;
	/* An input that cannot be read is bad input (2), as for every input of lhsim. */
	int st = t_lhsim(NULL, &err, "validate", "--measured", "/nonexistent/t.json", NULL);
	cr_assert_eq(st, 2, "%s", err);
	cr_assert(strstr(err, "/nonexistent/t.json"), "%s", err);
	g_free(err);
	/* A trace whose events match nothing in the graph: bad input, and no output files. */
	g_autofree char *dir = t_tmpdir();
	g_autofree char *p = g_build_filename(dir, "x.json", NULL);
	g_autofree char *csv = g_build_filename(dir, "x.csv", NULL);
	cr_assert(g_file_set_contents(
	    p,
	    "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"gpu_memset\", \"name\": \"Memset\","
	    " \"ts\": 1, \"dur\": 1, \"args\": {\"device\": 0, \"stream\": 7}}]}",
	    -1, NULL));
	st = t_lhsim(NULL, &err, "validate", "--measured", p, "--csv", csv, NULL);
	cr_assert_eq(st, 2, "%s", err);
	cr_assert(strstr(err, "matches an op"), "%s", err);
	cr_assert_not(g_file_test(csv, G_FILE_TEST_EXISTS));
	g_free(err);
	/* An unwritable CSV is a failed run (1), and the picture drawn before it goes too. */
	g_autofree char *own = g_build_filename(dir, "own.json", NULL);
	g_autofree char *png = g_build_filename(dir, "v.png", NULL);
	st = t_lhsim(NULL, &err, "run", "--trace", own, NULL);
	cr_assert_eq(st, 0, "%s", err);
	g_free(err);
	st = t_lhsim(NULL, &err, "validate", "--measured", own, "-o", png, "--csv",
	             "/nonexistent/dir/v.csv", NULL);
	cr_assert_eq(st, 1, "%s", err);
	cr_assert_not(g_file_test(png, G_FILE_TEST_EXISTS));
	g_free(err);
	st = t_lhsim(NULL, &err, "validate", NULL);
	cr_assert_eq(st, 2);
	g_free(err);
	st = t_lhsim(NULL, &err, "calibrate", "--from", p, "--backend", "cuda", "-o", csv, NULL);
	cr_assert_eq(st, 2);
	g_free(err);
}
