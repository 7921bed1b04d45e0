/* lhsim — the CUDA backend's synthetic kernels; see cuda-kernels.h. */
#include "cuda-kernels.h"

static __device__ __forceinline__ unsigned long long globaltimer()
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

static __device__ __forceinline__ void stamp_begin(LhGpuStamp *st)
{
	if (st && threadIdx.x == 0)
		atomicMin(&st->start, globaltimer());
}

static __device__ __forceinline__ void stamp_end(LhGpuStamp *st)
{
	if (!st)
		return;
	__syncthreads();
	if (threadIdx.x == 0)
		atomicMin(&st->end_neg, ~globaltimer());
}

static __global__ void fma_kernel(unsigned long long iters, float *sink, LhGpuStamp *st)
{
	stamp_begin(st);
	float a[LH_GPU_FMA_ILP];
#pragma unroll
	for (int j = 0; j < LH_GPU_FMA_ILP; j++)
		a[j] = 1.0f + 1e-3f * (float)(threadIdx.x + j);
	const float m = 0.999999f, c = 1e-6f;
	for (unsigned long long i = 0; i < iters; i++) {
#pragma unroll
		for (int j = 0; j < LH_GPU_FMA_ILP; j++)
			a[j] = fmaf(a[j], m, c);
	}
	float s = 0;
#pragma unroll
	for (int j = 0; j < LH_GPU_FMA_ILP; j++)
		s += a[j];
	/* Never true for these inputs, but the compiler cannot know: keeps the loop. */
	if (s == 1234.5f)
		sink[blockIdx.x] = s;
	stamp_end(st);
}

static __global__ void stream_kernel(const float4 *src, float4 *dst, unsigned long long n,
				     unsigned long long buf, unsigned long long off,
				     LhGpuStamp *st)
{
	stamp_begin(st);
	unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
	unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
	for (unsigned long long base = 0; base < n; base += buf) {
		unsigned long long m = n - base < buf ? n - base : buf;
		unsigned long long o = off + m <= buf ? off : 0;
		for (unsigned long long j = tid; j < m; j += stride) {
			float4 v = src[o + j];
			v.x += 1.0f;
			dst[o + j] = v;
		}
	}
	stamp_end(st);
}

static __global__ void spin_kernel(unsigned long long ns, LhGpuStamp *st)
{
	unsigned long long t0 = globaltimer();
	if (st && threadIdx.x == 0)
		atomicMin(&st->start, t0);
	if (threadIdx.x == 0)
		while (globaltimer() - t0 < ns)
			__nanosleep(256);
	stamp_end(st);
}

static __global__ void now_kernel(unsigned long long *out)
{
	*out = globaltimer();
}

extern "C" cudaError_t lh__gpu_fma(cudaStream_t s, unsigned blocks, unsigned long long iters,
				   float *sink, LhGpuStamp *stamp)
{
	fma_kernel<<<blocks, LH_GPU_THREADS, 0, s>>>(iters, sink, stamp);
	return cudaGetLastError();
}

extern "C" cudaError_t lh__gpu_stream(cudaStream_t s, unsigned blocks, const void *src,
				      void *dst, unsigned long long n_vec,
				      unsigned long long buf_vec, unsigned long long off,
				      LhGpuStamp *stamp)
{
	stream_kernel<<<blocks, LH_GPU_THREADS, 0, s>>>((const float4 *)src, (float4 *)dst, n_vec,
							 buf_vec, off, stamp);
	return cudaGetLastError();
}

extern "C" cudaError_t lh__gpu_spin(cudaStream_t s, unsigned blocks, unsigned long long ns,
				    LhGpuStamp *stamp)
{
	spin_kernel<<<blocks, LH_GPU_THREADS, 0, s>>>(ns, stamp);
	return cudaGetLastError();
}

extern "C" cudaError_t lh__gpu_now(cudaStream_t s, unsigned long long *out)
{
	now_kernel<<<1, 1, 0, s>>>(out);
	return cudaGetLastError();
}
