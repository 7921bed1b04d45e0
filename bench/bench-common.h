/* lhsim bench — what bench-engine and bench-mdev share: their random DAG and its mapping onto
 * 8 streams. */
#pragma once

#include "lhsim.h"

#define BENCH_STREAMS 8

/* A random layered DAG of @n ops (lh_gen_random_dag, width 64, seed 42). */
LhGraph *bench_random_dag(guint32 n);

/* Runs graph @b's ops (offset by @off in the plan's graph) on the plan streams @sid: round
 * robin in topological order, a signal after an op with a consumer on another stream, a wait
 * only where no earlier wait orders the dep. */
void bench_eight_streams(const LhGraph *b, LhPlan *p, const guint32 sid[BENCH_STREAMS],
                         guint32 off);

/* The latest op end of @t, ns. */
gint64 bench_makespan(const LhTrace *t);
