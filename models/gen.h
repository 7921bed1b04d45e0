/* lhsim — built-in workload generators (`lhsim gen`). */
#pragma once

#include "sim/graph.h"

G_BEGIN_DECLS

#define LH_GEN_ERROR (lh_gen_error_quark())
GQuark lh_gen_error_quark(void);

typedef enum {
	LH_GEN_ERROR_UNKNOWN, /* unknown workload */
	LH_GEN_ERROR_OPTION,  /* unknown option or value out of range */
} LhGenError;

/* A seeded random layered DAG of kernels, copies and collectives (bench, property tests). */
typedef struct {
	guint64 seed;
	guint32 n_ops;       /* total ops, inputs included */
	guint32 width;       /* ops per layer (>= 1) */
	guint32 max_deps;    /* deps per op drawn from 1..max_deps in the previous 2 layers */
	double p_copy;       /* probability an op is a copy (h2d or d2h) */
	double p_collective; /* probability an op is a collective */
	double p_async;      /* probability a kernel is async */
} LhRandomDagOptions;

void lh_random_dag_options_init(LhRandomDagOptions *o); /* sensible defaults */
LhGraph *lh_gen_random_dag(const LhRandomDagOptions *o);

/* Generates a named workload with "key=value" options (NULL-terminated, may be NULL). The
 * error for an unknown workload or option lists the valid ones. Caller frees. */
LhGraph *lh_gen_workload(const char *name, const char *const *kv, GError **error);
/* NULL-terminated list of workload names; static. */
const char *const *lh_gen_workload_names(void);
/* Whether workload @name has option @option (FALSE for an unknown workload). */
gboolean lh_gen_workload_has_option(const char *name, const char *option);
/* Help text for a workload's options; static. NULL if unknown. */
const char *lh_gen_workload_help(const char *name);

G_END_DECLS
