/* lhsim — the CUDA backend's synthetic kernels (internal, not installed).
 *
 * Kernels that stand in for the graph's ops: an FMA loop for compute-bound kernels, a
 * streaming read/write for memory-bound ones, a spin on %globaltimer for ops with a fixed
 * duration and for emulated collectives. Each can stamp its first block's start and its last
 * block's end (%globaltimer, ns) into an LhGpuStamp; the launchers return the launch's
 * cudaError_t. Plain C interface so that the host side stays C11.
 */
#pragma once

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Threads per block of every synthetic kernel, and independent FMA chains per thread. */
#define LH_GPU_THREADS 1024
#define LH_GPU_FMA_ILP 4
/* FLOPs one thread does per loop iteration of the FMA kernel (an FMA is 2 FLOPs). */
#define LH_GPU_FLOPS_PER_ITER (2 * LH_GPU_FMA_ILP)
/* Bytes of HBM traffic per element of the streaming kernel: a float4 read and written. */
#define LH_GPU_BYTES_PER_VEC 32

/* Fill with 0xff before a run: start is the minimum %globaltimer over blocks; end_neg holds
 * the bitwise complement of the maximum end, so that one memset initializes both. */
typedef struct {
	unsigned long long start;
	unsigned long long end_neg;
} LhGpuStamp;

cudaError_t lh__gpu_fma(cudaStream_t s, unsigned blocks, unsigned long long iters, float *sink,
                        LhGpuStamp *stamp);
/* Moves n_vec float4 from src to dst, in passes over [off, off + n) of buffers of buf_vec
 * elements (n_vec may exceed buf_vec: it then makes several passes). */
cudaError_t lh__gpu_stream(cudaStream_t s, unsigned blocks, const void *src, void *dst,
                           unsigned long long n_vec, unsigned long long buf_vec,
                           unsigned long long off, LhGpuStamp *stamp);
/* Each block spins until @ns have passed since it started (0: an empty kernel). */
cudaError_t lh__gpu_spin(cudaStream_t s, unsigned blocks, unsigned long long ns, LhGpuStamp *stamp);
/* One thread writes %globaltimer to *out. */
cudaError_t lh__gpu_now(cudaStream_t s, unsigned long long *out);

#ifdef __cplusplus
}
#endif
