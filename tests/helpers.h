/* lhsim tests — shared helpers. */
#pragma once

#include "lhsim.h"

#include <gio/gio.h>

/* A hardware model with round numbers, so that expected values are easy to compute by hand:
 * 100 SMs, 1 TFLOP/s at eff 1 (1000 FLOP/ns), HBM 1000 GB/s at eff 1 (1000 B/ns), no overheads
 * or host costs, 8 queues, PCIe 10 GB/s alone and 8 GB/s duplex, link 100 GB/s, collectives
 * use 0.1 of the SMs, 1 GiB of memory. Tests change fields as they need. */
LhHw *t_hw(LhSmSharing sharing);

/* Adds a kernel with a fixed standalone duration (duration_ns) and SM share. */
guint32 t_kernel(LhGraph *g, const char *name, gint64 dur_ns, double sm);
guint32 t_op(LhGraph *g, const char *name, LhOpKind kind, guint64 size);
void t_dep(LhGraph *g, guint32 op, guint32 dep);
/* The index of the op named @name, or fails the test. */
guint32 t_id(const LhGraph *g, const char *name);
const LhOp *t_op_named(const LhGraph *g, const char *name);
/* Whether op @op depends directly on op @dep (both by name; fails the test if unknown). */
gboolean t_has_dep(const LhGraph *g, const char *op, const char *dep);
/* Finishes or fails the test. */
void t_finish(LhGraph *g);
/* Simulates or fails the test. */
LhTrace *t_sim(const LhGraph *g, const LhHw *hw, const LhPlan *p);
/* The timing in @t of the op named @name (fails the test if unknown). */
const LhOpTiming *t_timing(const LhTrace *t, const LhGraph *g, const char *name);
/* The latest op end of @t. */
gint64 t_makespan(const LhTrace *t);
/* Expects the op named @n to run from @s to @e in @t (needs <criterion/criterion.h>). */
#define T_SPAN(t, g, n, s, e)                                                                      \
	do {                                                                                       \
		const LhOpTiming *_x = t_timing(t, g, n);                                          \
		cr_expect_eq(_x->start, (gint64)(s), "%s start: %" G_GINT64_FORMAT " != %lld", n,  \
		             _x->start, (long long)(s));                                           \
		cr_expect_eq(_x->end, (gint64)(e), "%s end: %" G_GINT64_FORMAT " != %lld", n,      \
		             _x->end, (long long)(e));                                             \
	} while (0)
/* A random DAG of @n ops with every kind of op (tests/helpers.c): kernels of random SM share,
 * FLOPs, bytes (some HBM-bound beyond 1), GEMM shapes and fixed durations, copies both ways, d2d
 * copies, collectives, inputs, aliases; deps to any of the 40 earlier ops. With @devices > 0,
 * most collectives have a member set on that many devices (a multiple of 8; lh_graph_set_devices),
 * the others a group of up to 32. With @async, a third of the ops are async. Finished. */
LhGraph *t_random_graph(GRand *r, guint n, guint32 devices, gboolean async);
/* Random hardware for property tests: the round-number model of t_hw() with FIFO or fair
 * sharing, or a built-in model (h100-sxm, a100-sxm, h200-sxm) with either sharing; 1 - 8 hardware
 * queues, sometimes a limit on resident kernels, 1 - 2 copy engines each way, and half the time
 * a memory of 1 - 50 MB. With @host_costs, the round-number models get random launch, event and
 * step costs half the time (so that the host is not always done at t = 0). */
LhHw *t_random_hw(GRand *r, gboolean host_costs);
/* @v[0 .. @n) set to a random permutation of 0 .. @n - 1 (Fisher-Yates, from the last place). */
void t_permutation(GRand *r, guint32 *v, guint32 n);
/* Asserts that traces @a and @b are the same, bit for bit: every op's timing, every command's
 * issue time, the memory curve, the host's end, the peaks and the source. @b_name names @b in
 * the messages ("reference", "full run"). */
void t_same_trace(const LhTrace *a, const LhTrace *b, const char *what, const char *b_name);
/* A graph JSON of a first kernel, then three 1 MB host-to-device copies that three chained
 * kernels wait for: with async-compute-limit 1 the copies go one at a time, with 3 they may all
 * be in flight (the sweep tests' graph). */
extern const char *const t_prefetch_graph_json;
/* Runs `lhsim ARGS...` (NULL-terminated); returns exit status, captures stdout/stderr. */
int t_lhsim(char **out, char **err, const char *first, ...) G_GNUC_NULL_TERMINATED;
/* Like t_lhsim, with @in (may be NULL: empty) on stdin and @setup (may be NULL) run in the
 * child before exec (limits, signal dispositions). Returns the exit status, or 128 + the
 * signal that killed it. Captured output is cut at the first NUL. */
int t_lhsim_io(const char *in, GSpawnChildSetupFunc setup, char **out, char **err,
               const char *first, ...) G_GNUC_NULL_TERMINATED;
/* Path of a file under tests/data. Caller frees. */
char *t_data(const char *rel);
/* A fresh temporary directory (removed by the OS test harness; tests keep it small). */
char *t_tmpdir(void);
