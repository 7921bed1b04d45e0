/* lhsim tests — shared helpers. */
#include "helpers.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

LhHw *t_hw(LhSmSharing sharing)
{
	LhHw *hw = g_new0(LhHw, 1);
	hw->name = g_strdup("test");
	hw->sm_count = 100;
	hw->peak_tflops = 1;
	hw->compute_eff = 1;
	hw->hbm_gbs = 1000;
	hw->hbm_eff = 1;
	hw->memory_gib = 1;
	hw->hw_queues = 8;
	hw->max_resident_kernels = 128;
	hw->copy_engines_h2d = 1;
	hw->copy_engines_d2h = 1;
	hw->pcie_gbs = 10;
	hw->pcie_duplex_gbs = 8;
	hw->link_gbs = 100;
	hw->collective_sm = 0.1;
	hw->sm_sharing = sharing;
	return hw;
}

guint32 t_kernel(LhGraph *g, const char *name, gint64 dur_ns, double sm)
{
	guint32 i = lh_graph_add_op(g, name, LH_OP_KERNEL);
	LhOp *op = lh_graph_op_mut(g, i);
	op->duration_ns = dur_ns;
	op->sm = sm;
	return i;
}

guint32 t_op(LhGraph *g, const char *name, LhOpKind kind, guint64 size)
{
	guint32 i = lh_graph_add_op(g, name, kind);
	LhOp *op = lh_graph_op_mut(g, i);
	op->size = size;
	if (lh_op_kind_is_collective(kind))
		op->group = 2;
	return i;
}

void t_dep(LhGraph *g, guint32 op, guint32 dep)
{
	lh_graph_add_dep(g, op, dep);
}

guint32 t_id(const LhGraph *g, const char *name)
{
	guint32 i;
	cr_assert(lh_graph_find(g, name, &i), "no op '%s'", name);
	return i;
}

const LhOp *t_op_named(const LhGraph *g, const char *name)
{
	return lh_graph_op(g, t_id(g, name));
}

gboolean t_has_dep(const LhGraph *g, const char *op, const char *dep)
{
	guint32 n, d = t_id(g, dep);
	const guint32 *ds = lh_graph_deps(g, t_id(g, op), &n);
	for (guint32 k = 0; k < n; k++)
		if (ds[k] == d)
			return TRUE;
	return FALSE;
}

void t_finish(LhGraph *g)
{
	GError *e = NULL;
	if (!lh_graph_finish(g, "test", &e))
		cr_assert_fail("graph: %s", e->message);
}

LhTrace *t_sim(const LhGraph *g, const LhHw *hw, const LhPlan *p)
{
	GError *e = NULL;
	LhTrace *t = lh_simulate(g, hw, p, NULL, NULL, &e);
	if (!t)
		cr_assert_fail("simulate: %s", e->message);
	return t;
}

const LhOpTiming *t_timing(const LhTrace *t, const LhGraph *g, const char *name)
{
	return &t->ops[t_id(g, name)];
}

gint64 t_makespan(const LhTrace *t)
{
	gint64 m = 0;
	for (guint32 i = 0; i < t->n_ops; i++)
		m = MAX(m, t->ops[i].end);
	return m;
}

int t_lhsim(char **out, char **err, const char *first, ...)
{
	GPtrArray *argv = g_ptr_array_new();
	const char *exe = g_getenv("LHSIM");
	cr_assert(exe, "LHSIM is not set (run the tests through meson test)");
	g_ptr_array_add(argv, (gpointer)exe);
	va_list ap;
	va_start(ap, first);
	for (const char *a = first; a; a = va_arg(ap, const char *))
		g_ptr_array_add(argv, (gpointer)a);
	va_end(ap);
	g_ptr_array_add(argv, NULL);
	int status = 0;
	GError *e = NULL;
	char *o = NULL, *r = NULL;
	if (!g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, &o, &r,
	                  &status, &e))
		cr_assert_fail("spawn lhsim: %s", e->message);
	g_ptr_array_free(argv, TRUE);
	if (out)
		*out = o;
	else
		g_free(o);
	if (err)
		*err = r;
	else
		g_free(r);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int t_lhsim_io(const char *in, GSpawnChildSetupFunc setup, char **out, char **err,
               const char *first, ...)
{
	GPtrArray *argv = g_ptr_array_new();
	const char *exe = g_getenv("LHSIM");
	cr_assert(exe, "LHSIM is not set (run the tests through meson test)");
	g_ptr_array_add(argv, (gpointer)exe);
	va_list ap;
	va_start(ap, first);
	for (const char *a = first; a; a = va_arg(ap, const char *))
		g_ptr_array_add(argv, (gpointer)a);
	va_end(ap);
	g_ptr_array_add(argv, NULL);
	g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(
	    G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE |
	    G_SUBPROCESS_FLAGS_STDERR_PIPE);
	if (setup)
		g_subprocess_launcher_set_child_setup(l, setup, NULL, NULL);
	GError *e = NULL;
	g_autoptr(GSubprocess) p =
	    g_subprocess_launcher_spawnv(l, (const char *const *)argv->pdata, &e);
	g_ptr_array_free(argv, TRUE);
	cr_assert(p, "spawn lhsim: %s", e ? e->message : "");
	g_autoptr(GBytes) bin = g_bytes_new(in ? in : "", in ? strlen(in) : 0);
	g_autoptr(GBytes) bo = NULL, be = NULL;
	/* A child that dies early closes its stdin: the error of writing to it is not ours. */
	g_subprocess_communicate(p, bin, NULL, &bo, &be, NULL);
	g_subprocess_wait(p, NULL, NULL);
	/* An empty GBytes may hold NULL. */
	if (out)
		*out = bo && g_bytes_get_size(bo)
		           ? g_strndup(g_bytes_get_data(bo, NULL), g_bytes_get_size(bo))
		           : g_strdup("");
	if (err)
		*err = be && g_bytes_get_size(be)
		           ? g_strndup(g_bytes_get_data(be, NULL), g_bytes_get_size(be))
		           : g_strdup("");
	if (g_subprocess_get_if_signaled(p))
		return 128 + g_subprocess_get_term_sig(p);
	return g_subprocess_get_exit_status(p);
}

char *t_data(const char *rel)
{
	const char *d = g_getenv("LHSIM_TEST_DATA");
	cr_assert(d, "LHSIM_TEST_DATA is not set (run the tests through meson test)");
	return g_build_filename(d, rel, NULL);
}

char *t_tmpdir(void)
{
	GError *e = NULL;
	char *d = g_dir_make_tmp("lhsim-test-XXXXXX", &e);
	cr_assert(d, "tmpdir: %s", e ? e->message : "?");
	return d;
}

LhHw *t_random_hw(GRand *r, gboolean host_costs)
{
	static const char *const names[] = {"h100-sxm", "a100-sxm", "h200-sxm"};
	int k = g_rand_int_range(r, 0, 4);
	LhHw *hw = k == 0   ? t_hw(LH_SHARING_FIFO)
	           : k == 1 ? t_hw(LH_SHARING_FAIR)
	                    : lh_hw_lookup(names[g_rand_int_range(r, 0, 3)], NULL);
	if (k >= 2)
		hw->sm_sharing = g_rand_int_range(r, 0, 2) ? LH_SHARING_FAIR : LH_SHARING_FIFO;
	if (host_costs && k < 2 && g_rand_int_range(r, 0, 2)) {
		hw->launch_ns = g_rand_int_range(r, 0, 5000);
		hw->event_ns = g_rand_int_range(r, 0, 2000);
		hw->step_overhead_ns = g_rand_int_range(r, 0, 10000);
	}
	hw->hw_queues = (guint32)g_rand_int_range(r, 1, 9);
	if (g_rand_int_range(r, 0, 3) == 0)
		hw->max_resident_kernels = (guint32)g_rand_int_range(r, 1, 5);
	hw->copy_engines_h2d = (guint32)g_rand_int_range(r, 1, 3);
	hw->copy_engines_d2h = (guint32)g_rand_int_range(r, 1, 3);
	if (g_rand_int_range(r, 0, 2))
		hw->memory_gib = g_rand_double_range(r, 0.001, 0.05);
	return hw;
}

void t_permutation(GRand *r, guint32 *v, guint32 n)
{
	for (guint32 i = 0; i < n; i++)
		v[i] = i;
	for (guint32 i = n; i-- > 1;) {
		guint32 j = (guint32)g_rand_int_range(r, 0, (gint32)i + 1), t = v[i];
		v[i] = v[j];
		v[j] = t;
	}
}

/* A member set for collective @o on @devices devices (a multiple of 8, so several nodes of 8
 * GPUs): disjoint groups of a random size from a random permutation of the devices, or for a
 * permute, send or recv random (source, target) pairs. Sets its group to match. */
static void random_members(GRand *r, LhGraph *g, LhOp *o, guint32 devices)
{
	g_autofree guint32 *perm = g_new(guint32, devices);
	t_permutation(r, perm, devices);
	/* Some sets keep every group inside a node (the link alone): groups of consecutive
	 * devices, at most 8, aligned. */
	gboolean in_node = g_rand_int_range(r, 0, 4) == 0;
	if (in_node)
		for (guint32 d = 0; d < devices; d++)
			perm[d] = d;
	if (o->kind == LH_OP_COLLECTIVE_PERMUTE || o->kind == LH_OP_SEND || o->kind == LH_OP_RECV) {
		guint32 np = (guint32)g_rand_int_range(r, 1, 9);
		g_autofree guint32 *dev = g_new(guint32, 2 * np);
		for (guint32 k = 0; k < np; k++) {
			guint32 s = (guint32)g_rand_int_range(r, 0, (gint32)devices);
			guint32 t = (guint32)g_rand_int_range(r, 0, (gint32)devices - 1);
			if (in_node)
				t = (s / 8) * 8 +
				    (s % 8 + 1 + (guint32)g_rand_int_range(r, 0, 7)) % 8;
			else if (t >= s)
				t++;
			dev[2 * k] = s;
			dev[2 * k + 1] = t;
		}
		g_autofree char *why = NULL;
		guint32 bad;
		cr_assert(lh_member_set_check(np, 2, TRUE, dev, devices, &why, &bad), "%s", why);
		o->members = 1 + lh_graph_add_member_set(g, np, 2, TRUE, dev);
		o->group = 2;
		return;
	}
	static const guint32 sizes[] = {1, 2, 4, 8, 16, 32};
	guint32 gs;
	do
		gs = sizes[g_rand_int_range(r, 0, G_N_ELEMENTS(sizes))];
	while (devices % gs || (in_node && gs > 8));
	/* Every group, or only the first few (the others' devices stay out). */
	guint32 ng = devices / gs;
	if (g_rand_int_range(r, 0, 3) == 0)
		ng = 1 + (guint32)g_rand_int_range(r, 0, (gint32)ng);
	g_autofree char *why = NULL;
	guint32 bad;
	cr_assert(lh_member_set_check(ng, gs, FALSE, perm, devices, &why, &bad), "%s", why);
	o->members = 1 + lh_graph_add_member_set(g, ng, gs, FALSE, perm);
	o->group = gs;
}

LhGraph *t_random_graph(GRand *r, guint n, guint32 devices, gboolean async)
{
	LhGraph *g = lh_graph_new("r");
	for (guint i = 0; i < n; i++) {
		char name[16];
		g_snprintf(name, sizeof name, "o%u", i);
		int pick = g_rand_int_range(r, 0, 20);
		LhOpKind kind =
		    i < 2 || pick == 0 ? LH_OP_INPUT
		    : pick < 11        ? LH_OP_KERNEL
		    : pick < 13        ? LH_OP_COPY_H2D
		    : pick < 15        ? LH_OP_COPY_D2H
		    : pick < 16        ? LH_OP_COPY_D2D
		                : (LhOpKind)g_rand_int_range(r, LH_OP_ALL_REDUCE, LH_OP_RECV + 1);
		guint32 id = lh_graph_add_op(g, name, kind);
		LhOp *o = lh_graph_op_mut(g, id);
		o->out_bytes = (guint64)g_rand_int_range(r, 0, 1 << 20) * 64;
		if (async)
			o->async = g_rand_int_range(r, 0, 3) == 0;
		if (kind == LH_OP_KERNEL) {
			o->flops = g_rand_double_range(r, 0, 2e9);
			o->bytes = g_rand_double_range(r, 0, 4e6);
			o->sm = g_rand_int_range(r, 0, 3) ? 1.0 : g_rand_double_range(r, 0.05, 1);
			o->dtype = (guint8)g_rand_int_range(r, 0, LH_DTYPE_N);
			o->transpose = g_rand_int_range(r, 0, 6) == 0;
			if (g_rand_int_range(r, 0, 4) == 0) {
				o->gemm_batch = 1 + g_rand_int_range(r, 0, 3);
				o->gemm_m = 1 + g_rand_int_range(r, 0, 4096);
				o->gemm_n = 1 + g_rand_int_range(r, 0, 4096);
				o->gemm_k = 1 + g_rand_int_range(r, 0, 4096);
			}
		} else if (kind != LH_OP_INPUT) {
			o->size = (guint64)g_rand_int_range(r, 1, 1 << 24);
			o->group = 1 + g_rand_int_range(r, 0, 8);
			if (devices && lh_op_kind_is_collective(kind)) {
				if (g_rand_int_range(r, 0, 4))
					random_members(r, g, o, devices);
				else
					o->group = 1 + g_rand_int_range(r, 0, (gint32)devices);
			}
		}
		if (kind != LH_OP_INPUT && g_rand_int_range(r, 0, 8) == 0)
			o->duration_ns = g_rand_int_range(r, 0, 20000);
		if (kind != LH_OP_INPUT && i > 0) {
			guint nd = (guint)g_rand_int_range(r, 0, 4);
			for (guint k = 0; k < nd; k++) {
				guint32 lo = i > 40 ? i - 40 : 0;
				guint32 d = (guint32)g_rand_int_range(r, lo, i);
				lh_graph_add_dep(g, id, d);
				/* An alias: a dep's buffer in the same space, written in place. */
				const LhOp *od = lh_graph_op(g, d);
				o = lh_graph_op_mut(g, id);
				if (k == 0 && g_rand_int_range(r, 0, 5) == 0 &&
				    od->out_space == o->out_space)
					o->alias = d;
			}
		}
	}
	if (devices)
		lh_graph_set_devices(g, devices);
	g_autoptr(GError) e = NULL;
	cr_assert(lh_graph_finish(g, NULL, &e), "%s", e ? e->message : "");
	return g;
}

void t_same_trace(const LhTrace *a, const LhTrace *b, const char *what, const char *b_name)
{
	cr_assert_eq(a->n_ops, b->n_ops, "%s", what);
	cr_assert_eq(a->n_cmds, b->n_cmds, "%s", what);
	for (guint32 i = 0; i < a->n_ops; i++)
		cr_assert(memcmp(&a->ops[i], &b->ops[i], sizeof a->ops[i]) == 0,
		          "%s: op %u: issue %" G_GINT64_FORMAT " start %" G_GINT64_FORMAT
		          " end %" G_GINT64_FORMAT " stream %d (%s: %" G_GINT64_FORMAT
		          " %" G_GINT64_FORMAT " %" G_GINT64_FORMAT " %d)",
		          what, i, a->ops[i].issue, a->ops[i].start, a->ops[i].end,
		          a->ops[i].stream, b_name, b->ops[i].issue, b->ops[i].start, b->ops[i].end,
		          b->ops[i].stream);
	for (guint32 c = 0; c < a->n_cmds; c++)
		cr_assert_eq(a->cmd_issue[c], b->cmd_issue[c],
		             "%s: command %u issued at %" G_GINT64_FORMAT " (%s: %" G_GINT64_FORMAT
		             ")",
		             what, c, a->cmd_issue[c], b_name, b->cmd_issue[c]);
	cr_assert_eq(a->mem->len, b->mem->len, "%s: memory points %u vs %u", what, a->mem->len,
	             b->mem->len);
	cr_assert(memcmp(a->mem->data, b->mem->data, sizeof(LhMemPoint) * a->mem->len) == 0, "%s",
	          what);
	cr_assert_eq(a->host_end, b->host_end, "%s", what);
	cr_assert_eq(a->peak_device, b->peak_device, "%s", what);
	cr_assert_eq(a->peak_device_t, b->peak_device_t, "%s", what);
	cr_assert_eq(a->peak_host, b->peak_host, "%s", what);
	cr_assert_str_eq(a->source, b->source, "%s", what);
}

const char *const t_prefetch_graph_json =
    "{\"format\": \"lhsim-graph\", \"version\": 1, \"name\": \"prefetch\", \"ops\": [\n"
    " {\"name\": \"k0\", \"kind\": \"kernel\", \"duration_ns\": 20000, \"out_bytes\": 4096},\n"
    " {\"name\": \"h1\", \"kind\": \"copy-h2d\", \"size\": 1000000, \"out_bytes\": 1000000},\n"
    " {\"name\": \"h2\", \"kind\": \"copy-h2d\", \"size\": 1000000, \"out_bytes\": 1000000},\n"
    " {\"name\": \"h3\", \"kind\": \"copy-h2d\", \"size\": 1000000, \"out_bytes\": 1000000},\n"
    " {\"name\": \"k1\", \"kind\": \"kernel\", \"duration_ns\": 15000, \"deps\": [\"k0\", "
    "\"h1\"]},\n"
    " {\"name\": \"k2\", \"kind\": \"kernel\", \"duration_ns\": 15000, \"deps\": [\"k1\", "
    "\"h2\"]},\n"
    " {\"name\": \"k3\", \"kind\": \"kernel\", \"duration_ns\": 15000, \"deps\": [\"k2\", "
    "\"h3\"]}\n"
    "]}\n";
