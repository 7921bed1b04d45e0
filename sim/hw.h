/* lhsim — the hardware model (DESIGN.md section 3).
 *
 * A plain struct: every field is public and documented with its unit. Read from a GKeyFile
 * .ini whose group is [hw]; every key of DESIGN 3 is required, so that a description never
 * silently inherits a number it did not state. Bandwidths are GB/s (1e9 bytes/s), times ns.
 */
#pragma once

#include <glib.h>

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
	char *name;                /* description's name, e.g. "H100 SXM" */
	guint32 sm_count;          /* streaming multiprocessors */
	double peak_tflops;        /* dense bf16, 1e12 FLOP/s */
	double compute_eff;        /* achievable fraction of peak, (0, 1] */
	double hbm_gbs;            /* HBM bandwidth, GB/s */
	double hbm_eff;            /* achievable fraction of hbm_gbs, (0, 1] */
	double memory_gib;         /* device memory, GiB (2^30 bytes) */
	double kernel_overhead_ns; /* fixed device cost per kernel, ns */
	double launch_ns;          /* host cost to issue a kernel or copy, ns */
	double event_ns;           /* host cost to record or wait on an event, ns */
	guint32 hw_queues;         /* hardware work queues (CUDA_DEVICE_MAX_CONNECTIONS) */
	guint32 max_resident_kernels;
	guint32 copy_engines_h2d;  /* FIFO copy engines, host to device */
	guint32 copy_engines_d2h;  /* FIFO copy engines, device to host */
	double pcie_gbs;           /* per direction, one direction alone, GB/s */
	double pcie_duplex_gbs;    /* per direction while the other direction also runs, GB/s */
	double copy_latency_ns;    /* fixed cost of one copy, ns */
	double link_gbs;           /* collective bandwidth per GPU, GB/s */
	double link_latency_ns;    /* fixed latency of one collective, ns */
	double collective_sm;      /* fraction of SMs a collective kernel occupies, (0, 1] */
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
/* NULL-terminated array of built-in names, sorted; caller frees the array (g_free) only. */
const char **lh_hw_builtin_names(void);
const char *lh_hw_builtin_data(const char *name);

LhHw *lh_hw_copy(const LhHw *hw);
void lh_hw_free(LhHw *hw); /* NULL is fine */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(LhHw, lh_hw_free)

/* Checks ranges; the error names the key. */
gboolean lh_hw_validate(const LhHw *hw, const char *where, GError **error);
/* Writes the description as an .ini (keys of DESIGN 3). */
char *lh_hw_to_data(const LhHw *hw);

const char *lh_sm_sharing_name(LhSmSharing s);

G_END_DECLS
