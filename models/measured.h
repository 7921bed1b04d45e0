/* lhsim — measured timelines: Chrome trace JSON (PyTorch/Kineto, JAX/XLA profiler, lhsim's own
 * --trace) and Nsight Systems' SQLite export (docs/measured.md lists the subset read).
 *
 * A reader turns a file into plain intervals: per device and stream, what ran (a kernel, a copy,
 * a memset, a collective), when (ns), with its name, the innermost annotation range enclosing it
 * (NVTX, Kineto's gpu_user_annotation, XLA's hlo_op) and, where the file links it, when the host
 * finished issuing it. Every bad input is a GError "FILE:LINE:COL: what" (JSON) or
 * "FILE: table T: what" (SQLite) in LH_MEASURED_ERROR.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define LH_MEASURED_ERROR (lh_measured_error_quark())
GQuark lh_measured_error_quark(void);

typedef enum {
	LH_MEASURED_ERROR_PARSE,   /* not JSON / not SQLite / truncated */
	LH_MEASURED_ERROR_INVALID, /* a field, a table or a timestamp that breaks the format */
	LH_MEASURED_ERROR_EMPTY,   /* no device events at all */
	LH_MEASURED_ERROR_IO,      /* cannot read the file */
} LhMeasuredError;

typedef enum {
	LH_MEV_KERNEL,
	LH_MEV_H2D, /* memcpy host to device */
	LH_MEV_D2H, /* memcpy device to host */
	LH_MEV_D2D, /* memcpy device to device (and peer to peer) */
	LH_MEV_MEMSET,
	LH_MEV_COLLECTIVE, /* NCCL kernels ("nccl..."), or lhsim collectives */
	LH_MEV_N
} LhMeasKind;

typedef struct {
	const char *name;       /* kernel or copy name (interned in the LhMeasured) */
	const char *annotation; /* innermost enclosing range name, or NULL */
	gint64 start, end;      /* ns on the file's clock */
	gint64 issue;           /* host finished issuing it (runtime call end), ns; -1 unknown */
	guint64 bytes;          /* copies and memsets; 0 otherwise */
	gint32 device, stream;
	guint32 line, col; /* JSON: position of the event; SQLite: rowid in line, col 0 */
	guint8 kind;       /* LhMeasKind */
	guint8 _pad[3];
} LhMeasEvent;

/* A range that may mark a step (Kineto "ProfilerStep#N", an NVTX range, xprof's Steps line). */
typedef struct {
	const char *name;
	gint64 start, end;  /* ns */
	gboolean on_device; /* on a GPU timeline (compare with event starts), else host (issue) */
} LhMeasRange;

typedef struct {
	char *path;
	char *format;      /* "chrome (kineto)", "chrome (xla)", "chrome (lhsim)", "nsys sqlite" */
	GArray *events;    /* LhMeasEvent, sorted by (device, stream, start) */
	GArray *ranges;    /* LhMeasRange: every named range read, in start order */
	guint32 n_ignored; /* device events of kinds not modelled (memcpy to arrays, ...) */
	GStringChunk *strings;
} LhMeasured;

/* Reads @path, telling the format by content: the SQLite header, else JSON. Caller frees. */
LhMeasured *lh_measured_load(const char *path, GError **error);
/* For Chrome JSON text already in memory; @where names it in errors. */
LhMeasured *lh_measured_new_from_json(const char *data, gsize len, const char *where,
                                      GError **error);
void lh_measured_free(LhMeasured *m); /* NULL is fine */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(LhMeasured, lh_measured_free)

const char *lh_meas_kind_name(LhMeasKind k); /* "kernel", "memcpy-h2d", ... */

G_END_DECLS
