/* lhsim tests — the cuda backend's host side (backends/cuda.c) against a simulated CUDA
 * runtime, so that CI machines without a GPU still check how plans become stream and event
 * calls, how timings are read back, that a failure mid-replay frees everything and names the
 * op, and the calibration's arithmetic. Built only when the CUDA headers are there; this
 * program compiles its own copy of backends/cuda.c (its backend renamed, see
 * tests/meson.build, so that it does not clash with the library's) and defines the runtime
 * calls it makes, which take precedence over the CUDA library's.
 *
 * The simulated device runs one thing at a time, in issue order, on a virtual clock (ns):
 * an op starts when the device is free, its stream has finished its previous work, and the
 * events the stream waits for have fired. Costs: a kernel launch 1000 ns before its work; the
 * FMA kernel 1 ns per iteration; the streaming kernel 2000 bytes/ns (2000 GB/s); a spin
 * kernel its nanoseconds; a host<->device copy 2000 ns plus 10 bytes/ns (10 GB/s); a
 * device-to-device copy 2000 ns plus 1250 bytes/ns of size (2500 GB/s of read + write).
 * What runs on a real GPU is in test-cuda.c.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cuda_runtime_api.h>

#include "backends/cuda-kernels.h"
#include "helpers.h"

/* ---- the simulated runtime ---- */

struct CUstream_st {
	long long t; /* when the stream's last op ends */
};
struct CUevent_st {
	long long t;
	int recorded;
};

static long long device_free_at; /* the device is busy until then */
static long long sync_floor;     /* the host last waited for the device then: events
                                    recorded afterwards on idle streams fire no earlier */
static int n_allocs, n_streams, n_events, n_calls;
static struct CUstream_st null_stream;
#define G0 1000000000000LL /* %globaltimer at virtual time 0 */

static struct CUstream_st *S(cudaStream_t s)
{
	return s ? s : &null_stream;
}

/* Runs @dur ns of work on @s after @lat ns of latency; returns the start. */
static long long run_on(cudaStream_t s, long long lat, long long dur)
{
	long long start = MAX(device_free_at, S(s)->t) + lat;
	device_free_at = S(s)->t = start + dur;
	return start;
}

cudaError_t cudaGetDeviceCount(int *n)
{
	*n = 1;
	return cudaSuccess;
}
cudaError_t cudaSetDevice(int d)
{
	return d == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}
cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr a, int d)
{
	(void)d;
	*v = a == cudaDevAttrMultiProcessorCount ? 132 : 1;
	return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int d)
{
	(void)d;
	memset(p, 0, sizeof *p);
	strcpy(p->name, "Simulated GPU");
	p->major = 9;
	return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t *f, size_t *t)
{
	*f = 1ull << 30;
	*t = 141ull << 30;
	return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned f)
{
	(void)f;
	*s = g_new0(struct CUstream_st, 1);
	n_streams++;
	n_calls++;
	return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s)
{
	g_free(s);
	n_streams--;
	return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *e)
{
	*e = g_new0(struct CUevent_st, 1);
	n_events++;
	n_calls++;
	return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned f)
{
	(void)f;
	return cudaEventCreate(e);
}
cudaError_t cudaEventDestroy(cudaEvent_t e)
{
	g_free(e);
	n_events--;
	return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
	e->t = MAX(S(s)->t, sync_floor);
	e->recorded = 1;
	return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned f)
{
	(void)f;
	if (e->recorded)
		S(s)->t = MAX(S(s)->t, e->t);
	return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
	if (!a->recorded || !b->recorded)
		return cudaErrorInvalidResourceHandle;
	*ms = (float)((double)(b->t - a->t) / 1e6);
	return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
	(void)e;
	return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
	sync_floor = MAX(sync_floor, S(s)->t);
	return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void)
{
	sync_floor = device_free_at;
	return cudaSuccess;
}
/* Buffers are mapped, not malloc'd: the backend asks for up to a few GiB that the simulated
 * device never touches, and pages are only made when the host writes them (malloc under
 * MALLOC_PERTURB_, as meson runs tests, would write them all). */
static GHashTable *mapped; /* pointer -> size */

cudaError_t cudaMalloc(void **p, size_t n)
{
	void *m = mmap(NULL, MAX(n, 1), PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	n_calls++;
	if (m == MAP_FAILED)
		return cudaErrorMemoryAllocation;
	if (!mapped)
		mapped = g_hash_table_new(g_direct_hash, g_direct_equal);
	g_hash_table_insert(mapped, m, GSIZE_TO_POINTER(MAX(n, 1)));
	n_allocs++;
	*p = m;
	return cudaSuccess;
}
cudaError_t cudaMallocHost(void **p, size_t n)
{
	return cudaMalloc(p, n);
}
cudaError_t cudaFree(void *p)
{
	gpointer size;
	if (!mapped || !g_hash_table_lookup_extended(mapped, p, NULL, &size))
		return cudaErrorInvalidValue;
	g_hash_table_remove(mapped, p);
	munmap(p, GPOINTER_TO_SIZE(size));
	n_allocs--;
	return cudaSuccess;
}
cudaError_t cudaFreeHost(void *p)
{
	return cudaFree(p);
}
cudaError_t cudaMemset(void *p, int v, size_t n)
{
	if (n <= (1u << 20)) /* the timing stamps; large scratch memsets are not needed */
		memset(p, v, n);
	return cudaSuccess;
}
cudaError_t cudaMemcpy(void *d, const void *s, size_t n, enum cudaMemcpyKind k)
{
	(void)k;
	memcpy(d, s, n);
	return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k,
                            cudaStream_t st)
{
	if (!d || !s)
		return cudaErrorInvalidValue;
	double rate = k == cudaMemcpyDeviceToDevice ? 1250 : 10;
	run_on(st, 0, 2000 + (long long)((double)n / rate));
	return cudaSuccess;
}
const char *cudaGetErrorString(cudaError_t e)
{
	return e == cudaErrorInvalidConfiguration ? "invalid configuration argument" : "error";
}
const char *cudaGetErrorName(cudaError_t e)
{
	return e == cudaErrorInvalidConfiguration ? "cudaErrorInvalidConfiguration" : "cudaError";
}

static void kernel(cudaStream_t s, long long dur, LhGpuStamp *st)
{
	long long start = run_on(s, 1000, dur);
	if (st) {
		unsigned long long a = (unsigned long long)(start + G0);
		unsigned long long b = (unsigned long long)(start + dur + G0);
		st->start = MIN(st->start, a);
		st->end_neg = MIN(st->end_neg, ~b);
	}
}

cudaError_t lh__gpu_fma(cudaStream_t s, unsigned blocks, unsigned long long iters, float *sink,
                        LhGpuStamp *stamp)
{
	(void)sink;
	if (!blocks)
		return cudaErrorInvalidConfiguration;
	kernel(s, (long long)iters, stamp);
	return cudaSuccess;
}

cudaError_t lh__gpu_stream(cudaStream_t s, unsigned blocks, const void *src, void *dst,
                           unsigned long long n_vec, unsigned long long buf_vec,
                           unsigned long long off, LhGpuStamp *stamp)
{
	if (!blocks || !src || !dst || off + MIN(n_vec, buf_vec) > buf_vec)
		return cudaErrorInvalidConfiguration;
	kernel(s, (long long)((double)n_vec * LH_GPU_BYTES_PER_VEC / 2000), stamp);
	return cudaSuccess;
}

cudaError_t lh__gpu_spin(cudaStream_t s, unsigned blocks, unsigned long long ns, LhGpuStamp *stamp)
{
	if (!blocks)
		return cudaErrorInvalidConfiguration;
	kernel(s, (long long)ns, stamp);
	return cudaSuccess;
}

cudaError_t lh__gpu_now(cudaStream_t s, unsigned long long *out)
{
	*out = (unsigned long long)(run_on(s, 1000, 0) + G0);
	return cudaSuccess;
}

/* ---- tests ---- */

static void reset(void)
{
	device_free_at = sync_floor = 0;
	null_stream.t = 0;
	n_allocs = n_streams = n_events = n_calls = 0;
}

/* s0: run a (spin 1 ms); signal e0; run k (FMA); run m (streaming)
 * s1: wait e0; run b (spin 1 ms); run ar (all-reduce, emulated)
 * s2: run up (copy-h2d 1 MB) */
static void plan(LhGraph **gp, LhPlan **pp)
{
	LhGraph *g = lh_graph_new("host");
	guint32 up = t_op(g, "up", LH_OP_COPY_H2D, 1000000);
	guint32 a = t_kernel(g, "a", 1000000, 1), b = t_kernel(g, "b", 1000000, 0.5);
	guint32 k = lh_graph_add_op(g, "k", LH_OP_KERNEL);
	lh_graph_op_mut(g, k)->flops = 1e9;
	guint32 m = lh_graph_add_op(g, "m", LH_OP_KERNEL);
	lh_graph_op_mut(g, m)->bytes = 1e8;
	guint32 ar = t_op(g, "ar", LH_OP_ALL_REDUCE, 1000000);
	t_dep(g, a, up);
	t_dep(g, b, a);
	t_dep(g, k, a);
	t_dep(g, m, k);
	t_finish(g);
	LhPlan *p = lh_plan_new();
	guint32 s0 = lh_plan_add_stream(p, "s0", LH_ROLE_COMPUTE);
	guint32 s1 = lh_plan_add_stream(p, "s1", LH_ROLE_ASYNC_COMPUTE);
	guint32 s2 = lh_plan_add_stream(p, "s2", LH_ROLE_H2D);
	lh_plan_run(p, s2, up);
	lh_plan_link(p, s2, s0);
	lh_plan_run(p, s0, a);
	guint32 e0 = lh_plan_new_event(p);
	lh_plan_signal(p, s0, e0);
	lh_plan_run(p, s0, k);
	lh_plan_run(p, s0, m);
	lh_plan_wait(p, s1, e0);
	lh_plan_run(p, s1, b);
	lh_plan_run(p, s1, ar);
	*gp = g;
	*pp = p;
}

Test(cuda_host, replay_maps_the_plan_and_reads_times_back)
{
	reset();
	g_autoptr(LhGraph) g = NULL;
	g_autoptr(LhPlan) p = NULL;
	plan(&g, &p);
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	LhReplayOptions o;
	lh_replay_options_init(&o);
	o.warmup = 1;
	o.repeats = 3;
	GError *e = NULL;
	g_autoptr(LhTrace) t = lh_backend_cuda.replay(g, p, hw, &o, &e);
	cr_assert(t, "%s", e ? e->message : "");
	cr_assert(t->measured);
	cr_assert_str_eq(t->source, "cuda (emulated collectives)");
	guint32 up, a, b, k, m, ar;
	lh_graph_find(g, "up", &up);
	lh_graph_find(g, "a", &a);
	lh_graph_find(g, "b", &b);
	lh_graph_find(g, "k", &k);
	lh_graph_find(g, "m", &m);
	lh_graph_find(g, "ar", &ar);
	/* Times come back within the float precision of event times (tens of ns here). */
	const gint64 eps = 100;
	/* Spin kernels last their duration_ns. */
	cr_assert(llabs(t->ops[a].end - t->ops[a].start - 1000000) <= eps);
	cr_assert(llabs(t->ops[b].end - t->ops[b].start - 1000000) <= eps);
	/* k: 1e9 FLOPs on t_hw (1000 FLOP/ns) is compute-bound; each of the 132 blocks does
	 * 1e9 / 132 FLOPs = ceil(1e9 / 132 / (1024 * 8)) = 925 iterations = 925 ns here. */
	cr_assert(llabs(t->ops[k].end - t->ops[k].start - 925) <= eps, "%" G_GINT64_FORMAT,
	          t->ops[k].end - t->ops[k].start);
	/* m: 1e8 bytes, memory-bound: ceil(1e8 / 32) = 3125000 float4 at 2000 B/ns = 50000 ns. */
	cr_assert(llabs(t->ops[m].end - t->ops[m].start - 50000) <= eps);
	/* up: 2000 + 1e6 / 10 = 102000 ns. Its start event fires when its stream reaches it;
	 * the simulated device first finishes the 1000 ns clock kernel, which the event
	 * bracket includes (as a real one includes waiting for a copy engine). */
	gint64 d_up = t->ops[up].end - t->ops[up].start;
	cr_assert(d_up >= 102000 - eps && d_up <= 103000 + eps, "%" G_GINT64_FORMAT, d_up);
	/* ar is emulated by a spin kernel of its predicted length. */
	g_autoptr(LhTrace) pred = t_sim(g, hw, p);
	cr_assert(llabs((t->ops[ar].end - t->ops[ar].start) -
	                (pred->ops[ar].end - pred->ops[ar].start)) <= eps);
	/* Order: up before a (event), a before b (event), a before k before m (stream). */
	cr_assert_geq(t->ops[a].start + eps, t->ops[up].end);
	cr_assert_geq(t->ops[b].start + eps, t->ops[a].end);
	cr_assert_geq(t->ops[k].start + eps, t->ops[a].end);
	cr_assert_geq(t->ops[m].start + eps, t->ops[k].end);
	cr_assert_eq(t->ops[b].stream, 1);
	cr_assert_eq(t->ops[up].engine, LH_ENGINE_H2D);
	cr_assert_eq(t->ops[ar].engine, LH_ENGINE_LINK);
	/* Everything was given back. */
	cr_assert_eq(n_allocs, 0);
	cr_assert_eq(n_streams, 0);
	cr_assert_eq(n_events, 0);
}

Test(cuda_host, failure_mid_replay_frees_everything_and_names_the_op)
{
	reset();
	g_autoptr(LhGraph) g = NULL;
	g_autoptr(LhPlan) p = NULL;
	plan(&g, &p);
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	const char *ops[] = {"m", "up"};
	for (gsize i = 0; i < G_N_ELEMENTS(ops); i++) {
		g_setenv("LHSIM_CUDA_FAULT_OP", ops[i], TRUE);
		g_autoptr(GError) e = NULL;
		cr_assert_null(lh_backend_cuda.replay(g, p, hw, NULL, &e));
		g_unsetenv("LHSIM_CUDA_FAULT_OP");
		cr_assert(g_error_matches(e, LH_BACKEND_ERROR, LH_BACKEND_ERROR_FAILED));
		g_autofree char *want = g_strdup_printf("op '%s'", ops[i]);
		cr_assert(strstr(e->message, want), "%s", e->message);
		cr_assert_eq(n_allocs, 0);
		cr_assert_eq(n_streams, 0);
		cr_assert_eq(n_events, 0);
	}
}

Test(cuda_host, unreplayable_plan_touches_no_device)
{
	reset();
	g_autoptr(LhGraph) g = lh_graph_new("g");
	guint32 a = t_kernel(g, "a", 1000, 1), b = t_kernel(g, "b", 1000, 1);
	t_dep(g, b, a);
	t_finish(g);
	g_autoptr(LhPlan) p = lh_plan_new();
	guint32 s0 = lh_plan_add_stream(p, "s0", LH_ROLE_COMPUTE);
	guint32 s1 = lh_plan_add_stream(p, "s1", LH_ROLE_COMPUTE);
	guint32 e0 = lh_plan_new_event(p);
	lh_plan_wait(p, s1, e0);
	lh_plan_run(p, s0, a);
	lh_plan_signal(p, s0, e0);
	lh_plan_run(p, s1, b);
	g_autoptr(LhHw) hw = t_hw(LH_SHARING_FIFO);
	g_autoptr(GError) e = NULL;
	cr_assert_null(lh_backend_cuda.replay(g, p, hw, NULL, &e));
	cr_assert(g_error_matches(e, LH_BACKEND_ERROR, LH_BACKEND_ERROR_PLAN), "%s", e->message);
	cr_assert_eq(n_calls, 0);
}

Test(cuda_host, calibration_arithmetic)
{
	reset();
	lh_models_init();
	g_autoptr(LhHw) base = lh_hw_lookup("h200-sxm", NULL);
	g_autoptr(GHashTable) notes =
	    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	GError *e = NULL;
	g_autoptr(LhHw) hw = lh_backend_cuda.calibrate(base, NULL, notes, &e);
	cr_assert(hw, "%s", e ? e->message : "");
	cr_assert_eq(n_allocs, 0);
	cr_assert_eq(hw->sm_count, 132);
	cr_assert_str_eq(hw->name, "Simulated GPU (calibrated)");
	cr_assert_float_eq(hw->memory_gib, 141, 1e-9);
	/* HBM: 1 GiB D2D = 2000 + 2^30 / 1250 = 2000 + 858993 = 860993 ns for 2^31 bytes read and
	 * written: 2147483648 / 860993 = 2494.19 GB/s. */
	cr_assert_float_eq(hw->hbm_gbs, 2147483648.0 / 860993, 1e-3);
	/* Streaming kernel: 2^26 float4 = 2^31 bytes at 2000 B/ns = 1073741 ns, plus the 1000 ns
	 * launch the events also bracket: 2^31 / 1074741 = 1998.14 GB/s; hbm_eff = 1998.14 /
	 * 2494.19 = 0.8011. */
	cr_assert_float_eq(hw->hbm_eff, (2147483648.0 / 1074741) / (2147483648.0 / 860993), 1e-4);
	/* FMA: 100000 more iterations take 100000 ns more and do 100000 * 132 * 1024 * 8 FLOPs:
	 * 132 * 1024 * 8 = 1081344 FLOP/ns = 1081.344 TFLOP/s; compute_eff 1. */
	cr_assert_float_eq(hw->peak_tflops, 1081.344, 1e-2);
	cr_assert_float_eq(hw->compute_eff, 1, 0);
	/* An empty kernel: its 1000 ns launch latency. */
	cr_assert_float_eq(hw->kernel_overhead_ns, 1000, 0.5);
	/* PCIe: 256 MiB at 10 B/ns + 2000 ns = 26845545 ns: 268435456 / 26845545 = 9.99925 GB/s
	 * each way. The simulated device runs one copy at a time, so the "duplex" pair is slower
	 * per direction; the model requires duplex <= alone. */
	cr_assert_float_eq(hw->pcie_gbs, 268435456.0 / 26845545, 1e-4);
	for (int d2h = 0; d2h < 2; d2h++)
		cr_assert(lh_hw_duplex_gbs(hw, d2h) > 0 &&
		          lh_hw_duplex_gbs(hw, d2h) <= hw->pcie_gbs);
	/* Every data type runs as the same FMA kernel in the replay; it has no GEMM tiles, no
	 * transpose penalty and no per-step launch. */
	cr_assert_float_eq(hw->peak_f64_tflops, hw->peak_tflops, 0);
	cr_assert_float_eq(hw->peak_fp8_tflops, hw->peak_tflops, 0);
	cr_assert_float_eq(hw->gemm_eff, 0, 0);
	cr_assert_float_eq(hw->hbm_transpose_eff, hw->hbm_eff, 0);
	cr_assert_float_eq(hw->step_overhead_ns, 0, 0);
	cr_assert_float_eq(hw->copy_latency_ns, 2000, 0.5);
	/* Two copies one after the other: the first ends at half the total: one engine. */
	cr_assert_eq(hw->copy_engines_h2d, 1);
	cr_assert_eq(hw->copy_engines_d2h, 1);
	/* Kernels one after the other: fifo. */
	cr_assert_eq(hw->sm_sharing, LH_SHARING_FIFO);
	/* What one GPU cannot measure comes from the base, and every value has a note. */
	cr_assert_float_eq(hw->link_gbs, base->link_gbs, 0);
	const char *keys[] = {
	    "sm_count",         "peak_tflops",     "compute_eff",          "hbm_gbs",
	    "hbm_eff",          "memory_gib",      "kernel_overhead_ns",   "launch_ns",
	    "event_ns",         "hw_queues",       "max_resident_kernels", "copy_engines_h2d",
	    "copy_engines_d2h", "pcie_gbs",        "pcie_duplex_h2d_gbs",  "pcie_duplex_d2h_gbs",
	    "copy_latency_ns",  "link_gbs",        "link_latency_ns",      "collective_sm",
	    "sm_sharing",       "peak_f64_tflops", "peak_f32_tflops",      "peak_tf32_tflops",
	    "peak_fp8_tflops",  "peak_int8_tops",  "hbm_transpose_eff",    "step_overhead_ns"};
	for (gsize i = 0; i < G_N_ELEMENTS(keys); i++)
		cr_assert(g_hash_table_contains(notes, keys[i]), "no note for %s", keys[i]);
	g_autofree char *ini = lh_calibration_to_ini(hw, notes, "simulated");
	g_autoptr(LhHw) back = lh_hw_new_from_data(ini, strlen(ini), "gpu.ini", &e);
	cr_assert(back, "%s", e ? e->message : "");
	/* Every key that has a value is written, each with its note; the GEMM model is not. */
	for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) {
		g_autofree char *line = g_strdup_printf("\n%s = ", keys[i]);
		cr_assert(strstr(ini, line), "%s not written", keys[i]);
	}
	/* ... but the base model's GEMM lines are there, commented, to copy in. */
	cr_assert_null(strstr(ini, "\ngemm_eff ="), "%s", ini);
	cr_assert(strstr(ini, "\n# gemm_eff = 0.828\n# gemm_tile_m = 256\n# gemm_tile_n = 128\n"
	                      "# gemm_tile_k_bytes = 128\n"),
	          "%s", ini);
	cr_assert_null(strstr(ini, "pcie_duplex_gbs"), "%s", ini);
}
