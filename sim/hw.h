/* lhsim — the hardware model (docs/design.md#hardware-model).
 *
 * A plain struct: every field is public and documented with its unit. Read from a GKeyFile
 * .ini whose group is [hw]; every key of docs/hw-format.md is required, so that a description never
 * silently inherits a number it did not state. Bandwidths are GB/s (1e9 bytes/s), times ns.
 */
#pragma once

#include <glib.h>

#include "sim/graph.h"

G_BEGIN_DECLS

#define LH_HW_ERROR (lh_hw_error_quark())
GQuark lh_hw_error_quark(void);

typedef enum {
	LH_HW_ERROR_PARSE,   /* not a key file, or a value is not a number */
	LH_HW_ERROR_MISSING, /* a required key is absent */
	LH_HW_ERROR_RANGE,   /* a value is absurd: zero bandwidth, negative latency, ... */
	LH_HW_ERROR_NOT_FOUND,
} LhHwError;

typedef enum {
	LH_SHARING_FIFO, /* earlier kernel first */
	LH_SHARING_FAIR, /* max-min fair by progressive filling */
} LhSmSharing;

typedef struct {
	char *name;         /* description's name, e.g. "H100 SXM" */
	guint32 sm_count;   /* streaming multiprocessors */
	double peak_tflops; /* dense bf16/f16 peak, 1e12 FLOP/s (also dtype NONE) */
	/* Dense peaks of the other data types (docs/hw-format.md). 0 = not given: the type runs at
	 * peak_tflops, as every type did before these keys existed. */
	double peak_f64_tflops;  /* f64; the FP64 tensor-core figure where the GPU has one */
	double peak_f32_tflops;  /* full-precision f32, not on tensor cores */
	double peak_tf32_tflops; /* tf32 tensor cores */
	double peak_fp8_tflops;  /* fp8 tensor cores (the bf16 peak where there are none) */
	double peak_int8_tops;   /* int8 tensor cores, 1e12 OP/s */
	double compute_eff;      /* achievable fraction of peak for non-GEMM kernels, (0, 1] */
	/* The GEMM model (docs/engine.md): 0 in gemm_eff = no model, GEMMs use compute_eff. */
	double gemm_eff;           /* large-GEMM achievable fraction of the peak, (0, 1] */
	guint32 gemm_tile_m;       /* output tile rows of one thread block (one per SM at a time) */
	guint32 gemm_tile_n;       /* output tile columns */
	guint32 gemm_tile_k_bytes; /* K is padded to this many bytes of its element type */
	double hbm_gbs;            /* HBM bandwidth, GB/s */
	double hbm_eff;            /* achievable fraction of hbm_gbs, (0, 1] */
	double hbm_transpose_eff;  /* fraction of hbm_gbs for traffic that moves the minor
	                              dimension (op->transpose); 0 = not given: hbm_eff */
	double memory_gib;         /* device memory, GiB (2^30 bytes) */
	double kernel_overhead_ns; /* fixed device cost per kernel, ns */
	double launch_ns;          /* host cost to issue a kernel or copy, ns */
	double event_ns;           /* host cost to record or wait on an event, ns */
	guint32 hw_queues;         /* hardware work queues (CUDA_DEVICE_MAX_CONNECTIONS) */
	guint32 max_resident_kernels;
	guint32 copy_engines_h2d;   /* FIFO copy engines, host to device */
	guint32 copy_engines_d2h;   /* FIFO copy engines, device to host */
	double pcie_gbs;            /* per direction, one direction alone, GB/s */
	double pcie_duplex_gbs;     /* old single duplex rate: a direction whose own field below is
	                               0 uses it; read from old files, never written */
	double pcie_duplex_h2d_gbs; /* host to device while a device-to-host copy runs, GB/s */
	double pcie_duplex_d2h_gbs; /* device to host while a host-to-device copy runs, GB/s */
	double copy_latency_ns;     /* fixed cost of one copy, ns */
	double link_gbs;            /* collective bandwidth per GPU, GB/s */
	double link_latency_ns;     /* fixed latency of one collective, ns */
	double collective_sm;       /* fraction of SMs a collective kernel occupies, (0, 1] */
	double step_overhead_ns;    /* host cost of launching the executable, once per step, ns */
	/* The cluster (docs/hw-format.md, "Cluster"): all six keys or none. gpus_per_node 0 = not
	 * given: one node holding every device, collectives priced by link_gbs and
	 * link_latency_ns as before these keys existed. */
	guint32 gpus_per_node;   /* GPUs in one NVLink domain (a node) */
	double nvlink_busbw_gbs; /* achieved NCCL ring bus bandwidth per GPU inside a node, GB/s */
	double net_gbs;          /* network bandwidth per GPU leaving the node, one way, GB/s */
	double coll_base_latency_ns; /* NCCL base latency of a collective (ring, Simple), ns */
	double nvlink_latency_ns;    /* NCCL latency per algorithm step over NVLink (Simple), ns */
	double net_latency_ns; /* NCCL latency per algorithm step over the network (Simple), ns */
	LhSmSharing sm_sharing;
} LhHw;

/* Reads @path. Errors name the file, the line where possible, and the key. Caller frees. */
LhHw *lh_hw_new_from_file(const char *path, GError **error);
/* Parses key-file text; @where names it in errors. Caller frees. */
LhHw *lh_hw_new_from_data(const char *data, gsize len, const char *where, GError **error);
/* Finds a description by name: a built-in ("h100-sxm") registered with lh_hw_register_builtin,
 * else a file path. Caller frees. */
LhHw *lh_hw_lookup(const char *name_or_path, GError **error);
/* Built-ins are registered by the models module (compiled-in .ini text). @data is static. */
void lh_hw_register_builtin(const char *name, const char *data);
/* The models module sets this when liblhsim loads: a function that registers every built-in
 * (idempotent), called on the first lookup, so no explicit initialisation is needed. */
void lh_hw_set_builtin_loader(void (*load)(void));
/* NULL-terminated array of built-in names, sorted; caller frees the array (g_free) only. */
const char **lh_hw_builtin_names(void);
const char *lh_hw_builtin_data(const char *name);

LhHw *lh_hw_copy(const LhHw *hw);
void lh_hw_free(LhHw *hw); /* NULL is fine */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(LhHw, lh_hw_free)

/* Checks ranges; the error names the key. */
gboolean lh_hw_validate(const LhHw *hw, const char *where, GError **error);
/* Sets one key of @hw by its .ini name (docs/hw-format.md) from text, as a file would give it:
 * a number of the key's type and range, or fifo/fair for sm_sharing. The old key
 * pcie_duplex_gbs sets both duplex directions. Errors (LH_HW_ERROR_PARSE, _RANGE, _NOT_FOUND for
 * an unknown key) name the key; the whole description is not re-checked (lh_hw_validate). */
gboolean lh_hw_set_key(LhHw *hw, const char *key, const char *value, GError **error);
/* NULL-terminated list of the keys lh_hw_set_key knows, in file order; static. */
const char *const *lh_hw_key_names(void);
/* Writes the description as an .ini (the keys of docs/hw-format.md). */
char *lh_hw_to_data(const LhHw *hw);

const char *lh_sm_sharing_name(LhSmSharing s);

/* A key's value by its .ini name (docs/hw-format.md), as stored (0 for an optional key not
 * given; sm_sharing: 0 fifo, 1 fair); NaN for a key this lhsim does not know. For plugins: the
 * key names are the contract, not LhHw's layout (docs/api.md). */
double lh_hw_get(const LhHw *hw, const char *key);
const char *lh_hw_name(const LhHw *hw); /* the description's name; owned by @hw */

/* Effective values, with the documented fallback for a field left 0 (a hand-built LhHw, or an
 * .ini written before the key existed). */
double lh_hw_peak_tflops(const LhHw *hw, LhDtype dtype); /* NONE, BF16, F16: peak_tflops */
double lh_hw_duplex_gbs(const LhHw *hw, gboolean d2h);   /* per direction, both running */
double lh_hw_transpose_eff(const LhHw *hw);

G_END_DECLS
