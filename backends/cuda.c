/* lhsim — the `cuda` replay backend and `lhsim calibrate`, built as a module of its own
 * (lhsim-cuda.so, the only part of lhsim linked with the CUDA runtime) that liblhsim loads
 * the first time the cuda backend is used (backends/cuda-proxy.c).
 *
 * One host thread issues the plan in command order with real CUDA streams and events: a `run`
 * launches a synthetic kernel or a cudaMemcpyAsync on the plan stream's CUDA stream, `signal`
 * is cudaEventRecord, `wait` is cudaStreamWaitEvent, `sync` is cudaStreamSynchronize and
 * `host NS` keeps the host busy NS nanoseconds. Ops become:
 *
 * - a kernel: compute-bound (its FLOP time on the model exceeds its byte time) -> an FMA loop;
 *   memory-bound -> a streaming read/write of its bytes; duration_ns -> a spin kernel of that
 *   length. It runs over ceil(sm * sm_count) blocks of LH_GPU_THREADS threads. The model gives
 *   a kernel its standalone time T whatever its SM share (the share only matters when kernels
 *   share the GPU), so an FMA kernel does the work of its share, sm * flops, on its blocks:
 *   each block does flops / sm_count. A streaming kernel moves all its bytes (HBM is a
 *   device-wide resource; a few SMs already draw much of it).
 * - copy-h2d / copy-d2h: cudaMemcpyAsync between pinned host memory and device memory.
 * - copy-d2d: a streaming kernel over 2 * size bytes on 10 % of the SMs, as the model has it.
 * - a collective: one GPU has no peers, so it is *emulated* by a spin kernel over
 *   ceil(collective_sm * sm_count) blocks lasting its predicted duration. The trace's source
 *   says "cuda (emulated collectives)".
 *
 * Timing: kernels stamp their first block's start and last block's end with %globaltimer;
 * copies are bracketed by CUDA events. A tiny kernel on an auxiliary stream reads
 * %globaltimer right after the run's start event, and an event recorded right after it
 * places that reading on the event clock, which aligns the two clocks within a microsecond
 * or two. After `warmup` untimed runs, `repeats` timed runs are made
 * and every time in the trace is the median over them.
 *
 * Every CUDA call and launch is checked. A failure stops the run, waits for the device,
 * frees every stream, event and buffer, and reports the op (or command) that failed.
 */
#include "backends/backend-private.h"
#include "backends/cuda-kernels.h"
#include <gmodule.h>
#include "sim/cost.h"
#include "sim/engine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#define MIB (1024.0 * 1024.0)

static gint64 now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (gint64)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void busy_wait(gint64 ns)
{
	gint64 end = now_ns() + ns;
	while (now_ns() < end)
		;
}

static gboolean cuda_fail(GError **error, cudaError_t rc, const char *what)
{
	g_set_error(error, LH_BACKEND_ERROR, LH_BACKEND_ERROR_FAILED, "%s: %s (%s)", what,
	            cudaGetErrorString(rc), cudaGetErrorName(rc));
	return FALSE;
}

/* Checks a CUDA call; on failure sets @error with @what and jumps to `fail`. */
#define CK(call, what)                                                                             \
	do {                                                                                       \
		cudaError_t rc_ = (call);                                                          \
		if (rc_ != cudaSuccess) {                                                          \
			cuda_fail(error, rc_, what);                                               \
			goto fail;                                                                 \
		}                                                                                  \
	} while (0)

static gboolean cuda_available(GError **error)
{
	int n = 0;
	cudaError_t rc = cudaGetDeviceCount(&n);
	if (rc != cudaSuccess) {
		g_set_error(error, LH_BACKEND_ERROR, LH_BACKEND_ERROR_UNAVAILABLE,
		            "no CUDA device: cudaGetDeviceCount failed: %s (%s); is the NVIDIA "
		            "driver loaded and a GPU visible?",
		            cudaGetErrorString(rc), cudaGetErrorName(rc));
		return FALSE;
	}
	if (n == 0) {
		g_set_error(error, LH_BACKEND_ERROR, LH_BACKEND_ERROR_UNAVAILABLE,
		            "no CUDA device: the driver reports 0 devices");
		return FALSE;
	}
	return TRUE;
}

/* Picks the device; sets CUDA_DEVICE_MAX_CONNECTIONS first (read when the context is made)
 * unless the user did, so that the GPU has the model's number of hardware queues. */
static gboolean open_device(int dev, guint32 hw_queues, int *sm_count, GError **error)
{
	g_autofree char *q = g_strdup_printf("%u", hw_queues);
	g_setenv("CUDA_DEVICE_MAX_CONNECTIONS", q, FALSE);
	if (!cuda_available(error))
		return FALSE;
	int n = 0;
	CK(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
	if (dev < 0 || dev >= n) {
		g_set_error(error, LH_BACKEND_ERROR, LH_BACKEND_ERROR_OPTION,
		            "CUDA device %d does not exist (there are %d)", dev, n);
		return FALSE;
	}
	CK(cudaSetDevice(dev), "cudaSetDevice");
	CK(cudaDeviceGetAttribute(sm_count, cudaDevAttrMultiProcessorCount, dev),
	   "cudaDeviceGetAttribute(multiProcessorCount)");
	return TRUE;
fail:
	return FALSE;
}

/* ---- replay ---- */

typedef enum { K_NONE, K_FMA, K_STREAM, K_SPIN, K_H2D, K_D2H } Kind;

typedef struct {
	Kind kind;
	unsigned blocks;
	unsigned long long work; /* FMA iterations, float4 count, or ns; copies: bytes */
	unsigned long long off;  /* streaming kernels: offset into the scratch buffers */
} OpLaunch;

typedef struct {
	const LhGraph *g;
	const LhPlan *p;
	const LhHw *hw;
	guint32 S, E, n_ops, n_cmds;
	int sm_count;
	OpLaunch *ops;
	cudaStream_t *streams, aux;
	cudaEvent_t *events;          /* the plan's events */
	cudaEvent_t t0;               /* start of a run */
	cudaEvent_t t_base;           /* right after the clock kernel read %globaltimer */
	cudaEvent_t *cp_beg, *cp_end; /* per op, copies only */
	LhGpuStamp *d_stamps, *h_stamps;
	unsigned long long *d_base, *h_base;
	void *h_src, *h_dst; /* pinned: source of H2D copies, target of D2H ones */
	void *d_cp;          /* device end of copies */
	void *d_scratch;     /* streaming kernels: 2 * buf_vec float4 */
	float *d_sink;
	unsigned long long buf_vec;
	gsize max_copy;
	guint32 fault_op; /* test hook: this op's launch is made invalid */
	/* one run's results, ns from the start event */
	gint64 *issue, *start, *end, *cmd_issue;
} Gpu;

static unsigned blocks_for(double share, int sm_count)
{
	double b = ceil(share * sm_count - 1e-9);
	return (unsigned)CLAMP(b, 1, sm_count);
}

/* Turns each op into a launch (see the top of the file). */
static void plan_launches(Gpu *x, const LhTrace *pred)
{
	const LhHw *hw = x->hw;
	unsigned long long max_vec = 0;
	for (guint32 i = 0; i < x->n_ops; i++) {
		const LhOp *op = lh_graph_op(x->g, i);
		OpLaunch *L = &x->ops[i];
		L->kind = K_NONE;
		if (op->kind == LH_OP_INPUT)
			continue;
		if (op->kind == LH_OP_COPY_H2D || op->kind == LH_OP_COPY_D2H) {
			L->kind = op->kind == LH_OP_COPY_H2D ? K_H2D : K_D2H;
			L->work = op->size;
			x->max_copy = MAX(x->max_copy, op->size);
			continue;
		}
		if (lh_op_kind_is_collective(op->kind)) {
			const LhOpTiming *t = &pred->ops[i];
			L->kind = K_SPIN;
			L->blocks = blocks_for(hw->collective_sm, x->sm_count);
			L->work = (unsigned long long)MAX(t->end - t->start, 0);
			continue;
		}
		if (op->duration_ns >= 0) {
			L->kind = K_SPIN;
			L->blocks = blocks_for(lh_op_sm_share(op, hw), x->sm_count);
			L->work = (unsigned long long)op->duration_ns;
			continue;
		}
		double flops = op->flops, bytes = op->bytes, sm = op->sm;
		if (op->kind == LH_OP_COPY_D2D) {
			flops = 0;
			bytes = 2.0 * (double)op->size;
			sm = lh_op_sm_share(op, hw);
		}
		L->blocks = blocks_for(sm, x->sm_count);
		double t_f = flops / (hw->peak_tflops * 1e3 * hw->compute_eff);
		double t_b = bytes / (hw->hbm_gbs * hw->hbm_eff);
		if (flops > 0 && t_f >= t_b) {
			L->kind = K_FMA;
			double per_block = flops / x->sm_count;
			L->work = (unsigned long long)ceil(
			    per_block / ((double)LH_GPU_THREADS * LH_GPU_FLOPS_PER_ITER));
		} else if (bytes > 0) {
			L->kind = K_STREAM;
			L->work = (unsigned long long)ceil(bytes / LH_GPU_BYTES_PER_VEC);
			max_vec = MAX(max_vec, L->work);
		} else {
			L->kind = K_SPIN; /* no work: an empty kernel, its overhead only */
			L->work = 0;
		}
	}
	/* Scratch buffers of at least 256 MiB (several times any L2) and at most 1 GiB each;
	 * successive streaming kernels take successive regions so that one does not find the
	 * previous one's data in L2. */
	unsigned long long lo = (unsigned long long)(256 * MIB / 16),
	                   hi = (unsigned long long)(1024 * MIB / 16);
	x->buf_vec = CLAMP(max_vec, lo, hi);
	unsigned long long cursor = 0;
	for (guint32 i = 0; i < x->n_ops; i++) {
		OpLaunch *L = &x->ops[i];
		if (L->kind != K_STREAM)
			continue;
		unsigned long long m = MIN(L->work, x->buf_vec);
		if (cursor + m > x->buf_vec)
			cursor = 0;
		L->off = cursor;
		cursor += m;
	}
}

static void gpu_free(Gpu *x)
{
	/* Wait for whatever is in flight before freeing what it uses; errors are ignored here,
	 * the one that matters has been reported. */
	cudaDeviceSynchronize();
	for (guint32 s = 0; x->streams && s < x->S; s++)
		if (x->streams[s])
			cudaStreamDestroy(x->streams[s]);
	if (x->aux)
		cudaStreamDestroy(x->aux);
	for (guint32 e = 0; x->events && e < x->E; e++)
		if (x->events[e])
			cudaEventDestroy(x->events[e]);
	if (x->t0)
		cudaEventDestroy(x->t0);
	if (x->t_base)
		cudaEventDestroy(x->t_base);
	for (guint32 i = 0; x->cp_beg && i < x->n_ops; i++) {
		if (x->cp_beg[i])
			cudaEventDestroy(x->cp_beg[i]);
		if (x->cp_end[i])
			cudaEventDestroy(x->cp_end[i]);
	}
	if (x->d_stamps)
		cudaFree(x->d_stamps);
	if (x->h_stamps)
		cudaFreeHost(x->h_stamps);
	if (x->d_base)
		cudaFree(x->d_base);
	if (x->h_base)
		cudaFreeHost(x->h_base);
	if (x->h_src)
		cudaFreeHost(x->h_src);
	if (x->h_dst)
		cudaFreeHost(x->h_dst);
	if (x->d_cp)
		cudaFree(x->d_cp);
	if (x->d_scratch)
		cudaFree(x->d_scratch);
	if (x->d_sink)
		cudaFree(x->d_sink);
	g_free(x->ops);
	g_free(x->streams);
	g_free(x->events);
	g_free(x->cp_beg);
	g_free(x->cp_end);
	g_free(x->issue);
	g_free(x->start);
	g_free(x->end);
	g_free(x->cmd_issue);
}

static gboolean gpu_alloc(Gpu *x, GError **error)
{
	x->streams = g_new0(cudaStream_t, MAX(x->S, 1));
	x->events = g_new0(cudaEvent_t, MAX(x->E, 1));
	x->cp_beg = g_new0(cudaEvent_t, MAX(x->n_ops, 1));
	x->cp_end = g_new0(cudaEvent_t, MAX(x->n_ops, 1));
	for (guint32 s = 0; s < x->S; s++)
		CK(cudaStreamCreateWithFlags(&x->streams[s], cudaStreamNonBlocking),
		   "cudaStreamCreateWithFlags");
	CK(cudaStreamCreateWithFlags(&x->aux, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
	for (guint32 e = 0; e < x->E; e++)
		CK(cudaEventCreateWithFlags(&x->events[e], cudaEventDisableTiming),
		   "cudaEventCreateWithFlags");
	CK(cudaEventCreate(&x->t0), "cudaEventCreate");
	CK(cudaEventCreate(&x->t_base), "cudaEventCreate");
	for (guint32 i = 0; i < x->n_ops; i++) {
		if (x->ops[i].kind != K_H2D && x->ops[i].kind != K_D2H)
			continue;
		CK(cudaEventCreate(&x->cp_beg[i]), "cudaEventCreate");
		CK(cudaEventCreate(&x->cp_end[i]), "cudaEventCreate");
	}
	gsize stamps = sizeof(LhGpuStamp) * MAX(x->n_ops, 1);
	CK(cudaMalloc((void **)&x->d_stamps, stamps), "cudaMalloc(stamps)");
	CK(cudaMallocHost((void **)&x->h_stamps, stamps), "cudaMallocHost(stamps)");
	CK(cudaMalloc((void **)&x->d_base, sizeof(unsigned long long)), "cudaMalloc(base)");
	CK(cudaMallocHost((void **)&x->h_base, sizeof(unsigned long long)), "cudaMallocHost(base)");
	CK(cudaMalloc((void **)&x->d_sink, sizeof(float) * (gsize)x->sm_count), "cudaMalloc(sink)");
	if (x->max_copy) {
		g_autofree char *what = g_strdup_printf("cudaMallocHost(%.0f MiB copy buffers)",
		                                        (double)x->max_copy / MIB);
		CK(cudaMallocHost(&x->h_src, x->max_copy), what);
		CK(cudaMallocHost(&x->h_dst, x->max_copy), what);
		memset(x->h_src, 1, x->max_copy);
		CK(cudaMalloc(&x->d_cp, x->max_copy), "cudaMalloc(copy buffer)");
	}
	CK(cudaMalloc(&x->d_scratch, 2 * x->buf_vec * 16), "cudaMalloc(scratch)");
	CK(cudaMemset(x->d_scratch, 0, 2 * x->buf_vec * 16), "cudaMemset(scratch)");
	CK(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
	return TRUE;
fail:
	return FALSE;
}

static cudaError_t issue_run(Gpu *x, guint32 s, guint32 op, gboolean timed)
{
	const OpLaunch *L = &x->ops[op];
	cudaStream_t st = x->streams[s];
	LhGpuStamp *stamp = timed ? x->d_stamps + op : NULL;
	cudaError_t rc = cudaSuccess;
	if (op == x->fault_op) {
		/* A genuinely invalid call, so that the failure path is the real one: a launch of
		 * zero blocks (cudaErrorInvalidConfiguration), or a copy to NULL. */
		if (L->kind == K_H2D || L->kind == K_D2H)
			return cudaMemcpyAsync(NULL, x->h_src, L->work, cudaMemcpyHostToDevice, st);
		return lh__gpu_spin(st, 0, 0, stamp);
	}
	switch (L->kind) {
	case K_FMA:
		return lh__gpu_fma(st, L->blocks, L->work, x->d_sink, stamp);
	case K_STREAM: {
		char *base = x->d_scratch;
		return lh__gpu_stream(st, L->blocks, base, base + x->buf_vec * 16, L->work,
		                      x->buf_vec, L->off, stamp);
	}
	case K_SPIN:
		return lh__gpu_spin(st, L->blocks, L->work, stamp);
	case K_H2D:
	case K_D2H:
		if (timed && (rc = cudaEventRecord(x->cp_beg[op], st)) != cudaSuccess)
			return rc;
		rc = L->kind == K_H2D
		         ? cudaMemcpyAsync(x->d_cp, x->h_src, L->work, cudaMemcpyHostToDevice, st)
		         : cudaMemcpyAsync(x->h_dst, x->d_cp, L->work, cudaMemcpyDeviceToHost, st);
		if (rc == cudaSuccess && timed)
			rc = cudaEventRecord(x->cp_end[op], st);
		return rc;
	case K_NONE:
		break;
	}
	return rc;
}

static const char *op_name(const Gpu *x, guint32 op)
{
	return lh_graph_op(x->g, op)->name;
}

/* One run of the plan. Timed runs fill x->issue/start/end/cmd_issue. */
static gboolean run_once(Gpu *x, gboolean timed, GError **error)
{
	CK(cudaDeviceSynchronize(), "cudaDeviceSynchronize before a run");
	if (timed)
		CK(cudaMemset(x->d_stamps, 0xff, sizeof(LhGpuStamp) * MAX(x->n_ops, 1)),
		   "cudaMemset(stamps)");
	CK(cudaDeviceSynchronize(), "cudaDeviceSynchronize before a run");
	gint64 h0 = now_ns();
	CK(cudaEventRecord(x->t0, x->aux), "cudaEventRecord(start)");
	CK(lh__gpu_now(x->aux, x->d_base), "launch of the clock kernel");
	CK(cudaEventRecord(x->t_base, x->aux), "cudaEventRecord(clock)");
	for (guint32 c = 0; c < x->n_cmds; c++) {
		const LhCmd *cmd = lh_plan_cmd(x->p, c);
		cudaError_t rc = cudaSuccess;
		switch ((LhCmdKind)cmd->kind) {
		case LH_CMD_RUN:
			rc = issue_run(x, cmd->stream, (guint32)cmd->arg, timed);
			break;
		case LH_CMD_SIGNAL:
			rc = cudaEventRecord(x->events[cmd->arg], x->streams[cmd->stream]);
			break;
		case LH_CMD_WAIT:
			rc = cudaStreamWaitEvent(x->streams[cmd->stream], x->events[cmd->arg], 0);
			break;
		case LH_CMD_HOST:
			busy_wait((gint64)cmd->arg);
			break;
		case LH_CMD_SYNC:
			rc = cudaStreamSynchronize(x->streams[cmd->stream]);
			break;
		}
		if (rc != cudaSuccess) {
			const LhStream *st =
			    cmd->kind == LH_CMD_HOST ? NULL : lh_plan_stream(x->p, cmd->stream);
			g_autofree char *what =
			    cmd->kind == LH_CMD_RUN
			        ? g_strdup_printf("cuda replay: op '%s' (command %u, stream "
			                          "'%s') failed",
			                          op_name(x, (guint32)cmd->arg), c + 1, st->name)
			        : g_strdup_printf("cuda replay: '%s' (command %u, stream '%s') "
			                          "failed",
			                          lh_cmd_kind_name(cmd->kind), c + 1,
			                          st ? st->name : "-");
			return cuda_fail(error, rc, what);
		}
		if (timed) {
			x->cmd_issue[c] = now_ns() - h0;
			if (cmd->kind == LH_CMD_RUN)
				x->issue[cmd->arg] = x->cmd_issue[c];
		}
	}
	{
		cudaError_t rc = cudaDeviceSynchronize();
		if (rc != cudaSuccess)
			return cuda_fail(error, rc,
			                 "cuda replay: a kernel or copy of the plan failed on the "
			                 "device (reported when the run completed)");
	}
	if (!timed)
		return TRUE;
	CK(cudaMemcpy(x->h_stamps, x->d_stamps, sizeof(LhGpuStamp) * MAX(x->n_ops, 1),
	              cudaMemcpyDeviceToHost),
	   "cudaMemcpy(stamps)");
	CK(cudaMemcpy(x->h_base, x->d_base, sizeof *x->h_base, cudaMemcpyDeviceToHost),
	   "cudaMemcpy(base)");
	/* %globaltimer's base was read a moment before t_base fired: place it there on the
	 * event clock (within a microsecond or two). */
	float base_ms = 0;
	CK(cudaEventElapsedTime(&base_ms, x->t0, x->t_base), "cudaEventElapsedTime");
	gint64 base_ns = (gint64)llround((double)base_ms * 1e6);
	for (guint32 i = 0; i < x->n_ops; i++) {
		const OpLaunch *L = &x->ops[i];
		x->start[i] = x->end[i] = -1;
		if (L->kind == K_NONE)
			continue;
		if (L->kind == K_H2D || L->kind == K_D2H) {
			float a = 0, b = 0;
			CK(cudaEventElapsedTime(&a, x->t0, x->cp_beg[i]), "cudaEventElapsedTime");
			CK(cudaEventElapsedTime(&b, x->t0, x->cp_end[i]), "cudaEventElapsedTime");
			x->start[i] = (gint64)llround((double)a * 1e6);
			x->end[i] = (gint64)llround((double)b * 1e6);
		} else {
			const LhGpuStamp *st = &x->h_stamps[i];
			unsigned long long e = ~st->end_neg;
			if (st->start == ~0ULL || e < st->start) {
				g_set_error(error, LH_BACKEND_ERROR, LH_BACKEND_ERROR_FAILED,
				            "cuda replay: op '%s' left no timing stamps",
				            op_name(x, i));
				return FALSE;
			}
			/* Signed: a kernel on another stream may start before the clock kernel. */
			x->start[i] = MAX(0, (gint64)st->start - (gint64)*x->h_base + base_ns);
			x->end[i] = MAX(x->start[i], (gint64)e - (gint64)*x->h_base + base_ns);
		}
	}
	return TRUE;
fail:
	return FALSE;
}

static LhTrace *cuda_replay(const LhGraph *g, const LhPlan *plan, const LhHw *hw,
                            const LhReplayOptions *opt, GError **error)
{
	g_return_val_if_fail(g && plan && hw, NULL);
	LhReplayOptions dflt;
	if (!opt) {
		lh_replay_options_init(&dflt);
		opt = &dflt;
	}
	if (opt->repeats < 1) {
		g_set_error(error, LH_BACKEND_ERROR, LH_BACKEND_ERROR_OPTION,
		            "cuda replay: repeats must be >= 1");
		return NULL;
	}
	if (!lh_backend_check_plan(g, plan, error))
		return NULL;
	guint32 n_ops = lh_graph_n_ops(g), n = lh_plan_n_cmds(plan);
	g_autoptr(LhTrace) own_pred = NULL;
	const LhTrace *pred =
	    lh_replay_prediction("cuda replay", g, hw, plan, opt, &own_pred, error);
	if (!pred)
		return NULL;
	Gpu x = {0};
	x.g = g;
	x.p = plan;
	x.hw = hw;
	x.S = lh_plan_n_streams(plan);
	x.E = lh_plan_n_events(plan);
	x.n_ops = n_ops;
	x.n_cmds = n;
	/* Test hook (tests/test-cuda.c): LHSIM_CUDA_FAULT_OP=NAME makes that op's launch fail,
	 * to check that a failure mid-replay frees everything and names the op. */
	x.fault_op = G_MAXUINT32;
	const char *fault = g_getenv("LHSIM_CUDA_FAULT_OP");
	if (fault && !lh_graph_find(g, fault, &x.fault_op))
		x.fault_op = G_MAXUINT32;
	if (!open_device(opt->device, hw->hw_queues, &x.sm_count, error))
		return NULL;
	x.ops = g_new0(OpLaunch, MAX(n_ops, 1));
	plan_launches(&x, pred);
	x.issue = g_new(gint64, MAX(n_ops, 1));
	x.start = g_new(gint64, MAX(n_ops, 1));
	x.end = g_new(gint64, MAX(n_ops, 1));
	x.cmd_issue = g_new0(gint64, MAX(n, 1));
	if (!gpu_alloc(&x, error)) {
		gpu_free(&x);
		return NULL;
	}
	for (guint32 r = 0; r < opt->warmup; r++) {
		if (!run_once(&x, FALSE, error)) {
			gpu_free(&x);
			return NULL;
		}
	}
	guint32 R = opt->repeats;
	gsize stride = 3 * (gsize)MAX(n_ops, 1) + MAX(n, 1);
	g_autofree gint64 *all = g_new(gint64, R * stride);
	for (guint32 r = 0; r < R; r++) {
		for (guint32 i = 0; i < n_ops; i++)
			x.issue[i] = -1;
		if (!run_once(&x, TRUE, error)) {
			gpu_free(&x);
			return NULL;
		}
		gint64 *row = all + r * stride;
		memcpy(row, x.issue, sizeof(gint64) * n_ops);
		memcpy(row + n_ops, x.start, sizeof(gint64) * n_ops);
		memcpy(row + 2 * (gsize)n_ops, x.end, sizeof(gint64) * n_ops);
		memcpy(row + 3 * (gsize)n_ops, x.cmd_issue, sizeof(gint64) * n);
	}
	gboolean emulated = FALSE;
	for (guint32 i = 0; i < n_ops; i++)
		emulated |= lh_op_kind_is_collective(lh_graph_op(g, i)->kind);
	LhTrace *t = lh_trace_new(n_ops, n);
	t->measured = TRUE;
	t->source = g_strdup(emulated ? "cuda (emulated collectives)" : "cuda");
	lh_replay_fill_medians(t, all, R, g, plan, 1.0);
	t->host_end = n ? t->cmd_issue[n - 1] : 0;
	lh_trace_rebuild_memory(t, g);
	gpu_free(&x);
	return t;
}

/* ---- calibration ---- */

typedef struct {
	int sm_count;
	cudaStream_t s[2];
	cudaEvent_t ev[4];
	void *d_a, *d_b, *h_a, *h_b;
	float *sink;
	LhGpuStamp *stamps;
	gsize big, pci;
} Cal;

static void note(GHashTable *notes, const char *key, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static void note(GHashTable *notes, const char *key, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_hash_table_insert(notes, g_strdup(key), g_strdup_vprintf(fmt, ap));
	va_end(ap);
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median5(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), dbl_cmp);
	return v[(n - 1) / 2];
}

static float elapsed_ms(cudaEvent_t a, cudaEvent_t b, cudaError_t *rc)
{
	float ms = 0;
	cudaError_t r = cudaEventElapsedTime(&ms, a, b);
	if (r != cudaSuccess)
		*rc = r;
	return ms;
}

#define REPS 5

static LhHw *cuda_calibrate(const LhHw *base, const LhReplayOptions *opt, GHashTable *notes,
                            GError **error)
{
	g_return_val_if_fail(base && notes, NULL);
	int dev = opt ? opt->device : 0;
	Cal c = {0};
	if (!open_device(dev, base->hw_queues, &c.sm_count, error))
		return NULL;
	g_autoptr(LhHw) hw = lh_hw_copy(base);
	struct cudaDeviceProp prop;
	cudaError_t rc = cudaSuccess;
	CK(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
	g_free(hw->name);
	hw->name = g_strdup_printf("%s (calibrated)", prop.name);
	size_t mem_free = 0, mem_total = 0;
	CK(cudaMemGetInfo(&mem_free, &mem_total), "cudaMemGetInfo");
	hw->sm_count = (guint32)c.sm_count;
	note(notes, "sm_count", "cudaDevAttrMultiProcessorCount of device %d (%s, cc %d.%d)", dev,
	     prop.name, prop.major, prop.minor);
	hw->memory_gib = (double)mem_total / (1024.0 * MIB);
	note(notes, "memory_gib", "cudaMemGetInfo total: %zu bytes", mem_total);
	const char *q = g_getenv("CUDA_DEVICE_MAX_CONNECTIONS");
	hw->hw_queues = q ? (guint32)MAX(1, atoi(q)) : 8;
	note(notes, "hw_queues", "CUDA_DEVICE_MAX_CONNECTIONS as set for this process");
	note(notes, "max_resident_kernels",
	     "not measured: CUDA programming guide limit on resident grids, from the base model");

	c.big = (gsize)(1024 * MIB);
	c.pci = (gsize)(256 * MIB);
	for (int i = 0; i < 2; i++)
		CK(cudaStreamCreateWithFlags(&c.s[i], cudaStreamNonBlocking), "cudaStreamCreate");
	for (int i = 0; i < 4; i++)
		CK(cudaEventCreate(&c.ev[i]), "cudaEventCreate");
	CK(cudaMalloc(&c.d_a, c.big), "cudaMalloc(1 GiB)");
	CK(cudaMalloc(&c.d_b, c.big), "cudaMalloc(1 GiB)");
	CK(cudaMemset(c.d_a, 1, c.big), "cudaMemset");
	CK(cudaMallocHost(&c.h_a, c.pci), "cudaMallocHost(256 MiB)");
	CK(cudaMallocHost(&c.h_b, c.pci), "cudaMallocHost(256 MiB)");
	memset(c.h_a, 1, c.pci);
	memset(c.h_b, 1, c.pci);
	CK(cudaMalloc((void **)&c.sink, sizeof(float) * (gsize)c.sm_count), "cudaMalloc");
	CK(cudaMalloc((void **)&c.stamps, 2 * sizeof(LhGpuStamp)), "cudaMalloc");
	CK(cudaDeviceSynchronize(), "cudaDeviceSynchronize");

	double v[REPS], w[REPS];
	cudaStream_t s0 = c.s[0], s1 = c.s[1];

	/* HBM: a 1 GiB device-to-device copy reads and writes 1 GiB each. */
	for (int r = 0; r < REPS + 1; r++) {
		CK(cudaEventRecord(c.ev[0], s0), "cudaEventRecord");
		CK(cudaMemcpyAsync(c.d_b, c.d_a, c.big, cudaMemcpyDeviceToDevice, s0),
		   "cudaMemcpyAsync(D2D)");
		CK(cudaEventRecord(c.ev[1], s0), "cudaEventRecord");
		CK(cudaEventSynchronize(c.ev[1]), "cudaEventSynchronize");
		double ms = elapsed_ms(c.ev[0], c.ev[1], &rc);
		CK(rc, "cudaEventElapsedTime");
		if (r > 0)
			v[r - 1] = 2.0 * (double)c.big / (ms * 1e6);
	}
	hw->hbm_gbs = median5(v, REPS);
	note(notes, "hbm_gbs",
	     "cudaMemcpyAsync device to device of 1 GiB, (read + write bytes) / time, median of "
	     "%d after one warm-up",
	     REPS);

	/* The streaming kernel that memory-bound ops become, over all SMs. */
	unsigned long long nvec = c.big / 16; /* 1 GiB read from d_a, 1 GiB written to d_b */
	for (int r = 0; r < REPS + 1; r++) {
		CK(cudaEventRecord(c.ev[0], s0), "cudaEventRecord");
		CK(lh__gpu_stream(s0, (unsigned)c.sm_count, c.d_a, c.d_b, nvec, c.big / 16, 0,
		                  NULL),
		   "launch of the streaming kernel");
		CK(cudaEventRecord(c.ev[1], s0), "cudaEventRecord");
		CK(cudaEventSynchronize(c.ev[1]), "cudaEventSynchronize");
		double ms = elapsed_ms(c.ev[0], c.ev[1], &rc);
		CK(rc, "cudaEventElapsedTime");
		if (r > 0)
			v[r - 1] = (double)nvec * LH_GPU_BYTES_PER_VEC / (ms * 1e6);
	}
	double stream_gbs = median5(v, REPS);
	hw->hbm_eff = CLAMP(stream_gbs / hw->hbm_gbs, 0.01, 1.0);
	note(notes, "hbm_eff",
	     "the replay's streaming kernel (%d blocks x %d threads, float4 read + write) moved "
	     "%.1f GB/s, median of %d; this is that over hbm_gbs",
	     c.sm_count, LH_GPU_THREADS, stream_gbs, REPS);
	hw->hbm_transpose_eff = hw->hbm_eff;
	note(notes, "hbm_transpose_eff",
	     "= hbm_eff: the replay streams a transposing kernel with the same contiguous kernel, "
	     "so that is its rate (a real transpose is slower: see models/hw)");

	/* FMA rate: two lengths of the replay's FMA kernel; the difference removes the fixed
	 * cost. peak_tflops is then the rate of *that* kernel (fp32 FMA, not tensor cores), so
	 * compute_eff is 1: a calibrated model predicts the synthetic kernels the replay runs. */
	unsigned long long it1 = 20000, it2 = 120000;
	for (int r = 0; r < REPS + 1; r++) {
		double ms[2];
		unsigned long long its[2] = {it1, it2};
		for (int k = 0; k < 2; k++) {
			CK(cudaEventRecord(c.ev[0], s0), "cudaEventRecord");
			CK(lh__gpu_fma(s0, (unsigned)c.sm_count, its[k], c.sink, NULL),
			   "launch of the FMA kernel");
			CK(cudaEventRecord(c.ev[1], s0), "cudaEventRecord");
			CK(cudaEventSynchronize(c.ev[1]), "cudaEventSynchronize");
			ms[k] = elapsed_ms(c.ev[0], c.ev[1], &rc);
			CK(rc, "cudaEventElapsedTime");
		}
		double flops =
		    (double)(it2 - it1) * c.sm_count * LH_GPU_THREADS * LH_GPU_FLOPS_PER_ITER;
		if (r > 0)
			v[r - 1] = flops / MAX((ms[1] - ms[0]) * 1e-3, 1e-9) / 1e12;
	}
	hw->peak_tflops = median5(v, REPS);
	hw->compute_eff = 1.0;
	note(notes, "peak_tflops",
	     "the replay's FMA kernel (%d blocks x %d threads x %d fp32 FMA chains) at %llu and "
	     "%llu iterations: FLOP difference / time difference, median of %d. This is the "
	     "synthetic kernel's rate, not the tensor-core peak",
	     c.sm_count, LH_GPU_THREADS, LH_GPU_FMA_ILP, it1, it2, REPS);
	/* The replay runs every kernel's FLOPs, whatever its dtype, as that FMA kernel. */
	hw->peak_f64_tflops = hw->peak_f32_tflops = hw->peak_tf32_tflops = hw->peak_tflops;
	hw->peak_fp8_tflops = hw->peak_int8_tops = hw->peak_tflops;
	const char *dt_keys[] = {"peak_f64_tflops", "peak_f32_tflops", "peak_tf32_tflops",
	                         "peak_fp8_tflops", "peak_int8_tops"};
	for (gsize i = 0; i < G_N_ELEMENTS(dt_keys); i++)
		note(notes, dt_keys[i],
		     "= peak_tflops: the replay runs the FLOPs of every data type as the same FMA "
		     "kernel, so this is the rate it measured for them (the datasheet peak of the "
		     "type is in models/hw)");
	/* GEMMs too are that FMA loop spread over all SMs, with no tiles: no GEMM shape model
	 * describes the replay, so it is left out (to_data omits it; GEMMs use compute_eff). */
	hw->gemm_eff = 0;
	hw->gemm_tile_m = hw->gemm_tile_n = hw->gemm_tile_k_bytes = 0;
	if (base->gemm_eff > 0)
		note(notes, "compute_eff",
		     "1: peak_tflops already is the achieved FMA rate. GEMM kernels use it too: "
		     "the replay runs a GEMM as the same FMA loop over all SMs, without tiles, so "
		     "the GEMM shape model is not written. To predict real cuBLAS GEMMs instead, "
		     "add the base model's (not measured here):\ngemm_eff = %g\ngemm_tile_m = "
		     "%u\ngemm_tile_n = %u\ngemm_tile_k_bytes = %u",
		     base->gemm_eff, base->gemm_tile_m, base->gemm_tile_n, base->gemm_tile_k_bytes);
	else
		note(notes, "compute_eff",
		     "1: peak_tflops already is the achieved FMA rate. GEMM kernels use it too: "
		     "the replay runs a GEMM as the same FMA loop over all SMs, without tiles, so "
		     "no GEMM shape model is written");

	/* Kernel overhead: back-to-back empty kernels over all SMs, device time per kernel. */
	for (int r = 0; r < REPS + 1; r++) {
		const int N = 200;
		CK(cudaEventRecord(c.ev[0], s0), "cudaEventRecord");
		for (int k = 0; k < N; k++)
			CK(lh__gpu_spin(s0, (unsigned)c.sm_count, 0, NULL),
			   "launch of empty kernel");
		CK(cudaEventRecord(c.ev[1], s0), "cudaEventRecord");
		CK(cudaEventSynchronize(c.ev[1]), "cudaEventSynchronize");
		double ms = elapsed_ms(c.ev[0], c.ev[1], &rc);
		CK(rc, "cudaEventElapsedTime");
		if (r > 0)
			v[r - 1] = ms * 1e6 / N;
	}
	hw->kernel_overhead_ns = median5(v, REPS);
	note(notes, "kernel_overhead_ns",
	     "200 back-to-back empty kernels of %d blocks on one stream, device time per kernel "
	     "between events, median of %d",
	     c.sm_count, REPS);

	/* Host costs: the time the host thread spends in the calls the replay makes. */
	for (int r = 0; r < REPS + 1; r++) {
		const int N = 200;
		CK(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
		gint64 h0 = now_ns();
		for (int k = 0; k < N; k++)
			CK(lh__gpu_spin(s0, 1, 0, NULL), "launch of empty kernel");
		gint64 h1 = now_ns();
		for (int k = 0; k < N; k++) {
			CK(cudaEventRecord(c.ev[2], s0), "cudaEventRecord");
			CK(cudaStreamWaitEvent(s1, c.ev[2], 0), "cudaStreamWaitEvent");
		}
		gint64 h2 = now_ns();
		if (r > 0) {
			v[r - 1] = (double)(h1 - h0) / N;
			w[r - 1] = (double)(h2 - h1) / (2 * N);
		}
	}
	CK(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
	hw->launch_ns = median5(v, REPS);
	hw->event_ns = median5(w, REPS);
	note(notes, "launch_ns", "host time per kernel launch over 200 launches, median of %d",
	     REPS);
	note(notes, "event_ns",
	     "host time per call over 200 cudaEventRecord + cudaStreamWaitEvent pairs, median of "
	     "%d",
	     REPS);

	/* PCIe: 256 MiB each way alone, then both at once on two streams. */
	double h2d[REPS], d2h[REPS], dup_h[REPS], dup_d[REPS];
	for (int r = 0; r < REPS + 1; r++) {
		for (int dir = 0; dir < 2; dir++) {
			CK(cudaEventRecord(c.ev[0], s0), "cudaEventRecord");
			CK(dir == 0
			       ? cudaMemcpyAsync(c.d_a, c.h_a, c.pci, cudaMemcpyHostToDevice, s0)
			       : cudaMemcpyAsync(c.h_b, c.d_b, c.pci, cudaMemcpyDeviceToHost, s0),
			   "cudaMemcpyAsync");
			CK(cudaEventRecord(c.ev[1], s0), "cudaEventRecord");
			CK(cudaEventSynchronize(c.ev[1]), "cudaEventSynchronize");
			double ms = elapsed_ms(c.ev[0], c.ev[1], &rc);
			CK(rc, "cudaEventElapsedTime");
			if (r > 0)
				(dir == 0 ? h2d : d2h)[r - 1] = (double)c.pci / (ms * 1e6);
		}
		CK(cudaEventRecord(c.ev[0], s0), "cudaEventRecord");
		CK(cudaMemcpyAsync(c.d_a, c.h_a, c.pci, cudaMemcpyHostToDevice, s0),
		   "cudaMemcpyAsync");
		CK(cudaEventRecord(c.ev[1], s0), "cudaEventRecord");
		CK(cudaEventRecord(c.ev[2], s1), "cudaEventRecord");
		CK(cudaMemcpyAsync(c.h_b, c.d_b, c.pci, cudaMemcpyDeviceToHost, s1),
		   "cudaMemcpyAsync");
		CK(cudaEventRecord(c.ev[3], s1), "cudaEventRecord");
		CK(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
		double a = elapsed_ms(c.ev[0], c.ev[1], &rc), b = elapsed_ms(c.ev[2], c.ev[3], &rc);
		CK(rc, "cudaEventElapsedTime");
		if (r > 0) {
			dup_h[r - 1] = (double)c.pci / (a * 1e6);
			dup_d[r - 1] = (double)c.pci / (b * 1e6);
		}
	}
	double bh = median5(h2d, REPS), bd = median5(d2h, REPS);
	double dh = median5(dup_h, REPS), dd = median5(dup_d, REPS);
	hw->pcie_gbs = (bh + bd) / 2;
	hw->pcie_duplex_gbs = 0; /* the old single key: written per direction below */
	hw->pcie_duplex_h2d_gbs = MIN(dh, hw->pcie_gbs);
	hw->pcie_duplex_d2h_gbs = MIN(dd, hw->pcie_gbs);
	note(notes, "pcie_gbs",
	     "256 MiB cudaMemcpyAsync from/to pinned host memory, alone: H2D %.1f GB/s, D2H %.1f "
	     "GB/s (medians of %d); the model has one value per direction, this is their mean",
	     bh, bd, REPS);
	note(notes, "pcie_duplex_h2d_gbs",
	     "the same H2D and D2H copies at once on two streams: H2D %.1f GB/s (median of %d), "
	     "at most pcie_gbs",
	     dh, REPS);
	note(notes, "pcie_duplex_d2h_gbs",
	     "the same H2D and D2H copies at once on two streams: D2H %.1f GB/s (median of %d), "
	     "at most pcie_gbs",
	     dd, REPS);

	/* Copy latency: a 4-byte H2D copy between events. */
	for (int r = 0; r < REPS + 1; r++) {
		CK(cudaEventRecord(c.ev[0], s0), "cudaEventRecord");
		CK(cudaMemcpyAsync(c.d_a, c.h_a, 4, cudaMemcpyHostToDevice, s0), "cudaMemcpyAsync");
		CK(cudaEventRecord(c.ev[1], s0), "cudaEventRecord");
		CK(cudaEventSynchronize(c.ev[1]), "cudaEventSynchronize");
		double ms = elapsed_ms(c.ev[0], c.ev[1], &rc);
		CK(rc, "cudaEventElapsedTime");
		if (r > 0)
			v[r - 1] = ms * 1e6;
	}
	hw->copy_latency_ns = median5(v, REPS);
	note(notes, "copy_latency_ns", "a 4-byte H2D cudaMemcpyAsync between events, median of %d",
	     REPS);

	/* Copy engines per direction: two equal copies of one direction on two streams. One
	 * FIFO engine finishes the first at half the total time; two engines finish both
	 * together. */
	for (int dir = 0; dir < 2; dir++) {
		gsize half = c.pci / 2;
		for (int r = 0; r < REPS + 1; r++) {
			CK(cudaEventRecord(c.ev[0], s0), "cudaEventRecord");
			CK(cudaStreamWaitEvent(s1, c.ev[0], 0), "cudaStreamWaitEvent");
			for (int k = 0; k < 2; k++) {
				cudaStream_t st = c.s[k];
				char *dp = (char *)c.d_a + (gsize)k * half;
				char *hp = (char *)c.h_a + (gsize)k * half;
				CK(dir == 0
				       ? cudaMemcpyAsync(dp, hp, half, cudaMemcpyHostToDevice, st)
				       : cudaMemcpyAsync(hp, dp, half, cudaMemcpyDeviceToHost, st),
				   "cudaMemcpyAsync");
				CK(cudaEventRecord(c.ev[2 + k], st), "cudaEventRecord");
			}
			CK(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
			double a = elapsed_ms(c.ev[0], c.ev[2], &rc),
			       b = elapsed_ms(c.ev[0], c.ev[3], &rc);
			CK(rc, "cudaEventElapsedTime");
			if (r > 0)
				v[r - 1] = MIN(a, b) / MAX(MAX(a, b), 1e-9);
		}
		double ratio = median5(v, REPS);
		guint32 engines = ratio < 0.75 ? 1 : 2;
		if (dir == 0)
			hw->copy_engines_h2d = engines;
		else
			hw->copy_engines_d2h = engines;
		note(notes, dir == 0 ? "copy_engines_h2d" : "copy_engines_d2h",
		     "two 128 MiB %s copies on two streams: first end / last end = %.2f (median of "
		     "%d); about 0.5 means one FIFO engine, about 1 two engines sharing",
		     dir == 0 ? "H2D" : "D2H", ratio, REPS);
	}

	/* SM sharing: kernel A (FMA, all SMs, ~2 units) then kernel B (~1 unit) on another
	 * stream. fifo: A finishes first and B after both, B's end - A's start = A + B; fair:
	 * both run at half rate, B ends at 2B = (A + B) * 2/3 for these lengths. */
	{
		unsigned long long ia = 80000, ib = 40000;
		double a_ms = 0, b_ms = 0;
		for (int k = 0; k < 2; k++) {
			CK(cudaEventRecord(c.ev[0], s0), "cudaEventRecord");
			CK(lh__gpu_fma(s0, (unsigned)c.sm_count, k ? ib : ia, c.sink, NULL),
			   "launch");
			CK(cudaEventRecord(c.ev[1], s0), "cudaEventRecord");
			CK(cudaEventSynchronize(c.ev[1]), "cudaEventSynchronize");
			double ms = elapsed_ms(c.ev[0], c.ev[1], &rc);
			if (k)
				b_ms = ms;
			else
				a_ms = ms;
			CK(rc, "cudaEventElapsedTime");
		}
		for (int r = 0; r < REPS + 1; r++) {
			CK(cudaMemset(c.stamps, 0xff, 2 * sizeof(LhGpuStamp)), "cudaMemset");
			CK(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
			CK(lh__gpu_fma(s0, (unsigned)c.sm_count, ia, c.sink, c.stamps), "launch");
			CK(lh__gpu_fma(s1, (unsigned)c.sm_count, ib, c.sink, c.stamps + 1),
			   "launch");
			CK(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
			LhGpuStamp st[2];
			CK(cudaMemcpy(st, c.stamps, sizeof st, cudaMemcpyDeviceToHost),
			   "cudaMemcpy");
			/* Signed: if B somehow ran first, the ratio comes out small (fair). */
			double span = (double)((gint64)~st[1].end_neg - (gint64)st[0].start) / 1e6;
			if (r > 0)
				v[r - 1] = span / MAX(a_ms + b_ms, 1e-9);
		}
		double ratio = median5(v, REPS);
		hw->sm_sharing = ratio > 0.83 ? LH_SHARING_FIFO : LH_SHARING_FAIR;
		note(
		    notes, "sm_sharing",
		    "FMA kernel A (%.2f ms alone) then B (%.2f ms alone) on two streams: B's end - "
		    "A's start = %.2f x (A + B), median of %d. fifo would give 1.0, fair 0.67; "
		    "the threshold is 0.83",
		    a_ms, b_ms, ratio, REPS);
	}
	note(notes, "link_gbs", "not measured: one GPU has no peer; from the base model");
	note(notes, "link_latency_ns", "not measured: one GPU has no peer; from the base model");
	note(notes, "collective_sm",
	     "not measured: collectives are emulated on one GPU; from the base model");
	hw->step_overhead_ns = 0;
	note(notes, "step_overhead_ns",
	     "0: the replay's clock starts at its first command, so it has no per-executable "
	     "launch to charge (the base model's figure describes XLA's, not the replay's)");

	{
		GError *ve = NULL;
		if (!lh_hw_validate(hw, "calibration", &ve)) {
			g_set_error(error, LH_BACKEND_ERROR, LH_BACKEND_ERROR_FAILED,
			            "calibration measured an absurd value: %s", ve->message);
			g_error_free(ve);
			goto fail;
		}
	}
	goto done;
fail:
	g_clear_pointer(&hw, lh_hw_free);
done:
	cudaDeviceSynchronize();
	for (int i = 0; i < 2; i++)
		if (c.s[i])
			cudaStreamDestroy(c.s[i]);
	for (int i = 0; i < 4; i++)
		if (c.ev[i])
			cudaEventDestroy(c.ev[i]);
	if (c.d_a)
		cudaFree(c.d_a);
	if (c.d_b)
		cudaFree(c.d_b);
	if (c.h_a)
		cudaFreeHost(c.h_a);
	if (c.h_b)
		cudaFreeHost(c.h_b);
	if (c.sink)
		cudaFree(c.sink);
	if (c.stamps)
		cudaFree(c.stamps);
	return g_steal_pointer(&hw);
}

/* The table itself; liblhsim's lh_backend_cuda (cuda-proxy.c) loads this module and forwards
 * to it through lh_backend_cuda_module(). */
const LhBackend lh__cuda_backend = {
    .version = LH_BACKEND_ABI,
    .name = "cuda",
    .available = cuda_available,
    .replay = cuda_replay,
    .summary = "CUDA streams, events and synthetic kernels on a GPU (collectives emulated)",
    .calibrate = cuda_calibrate,
};

G_MODULE_EXPORT const LhBackend *lh_backend_cuda_module(void);
G_MODULE_EXPORT const LhBackend *lh_backend_cuda_module(void)
{
	return &lh__cuda_backend;
}
