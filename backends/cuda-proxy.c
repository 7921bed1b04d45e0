/* lhsim — the `cuda` backend as liblhsim sees it: a table that loads the real backend, the
 * module lhsim-cuda.so (backends/cuda.c with the CUDA runtime), the first time it is used, and
 * forwards to it. So liblhsim, its pkg-config file and every plugin stay free of the CUDA
 * runtime; only a replay or a calibration on a GPU needs it. Without CUDA at build time there
 * is no module, and available() says so.
 *
 * The module is looked for, in order: $LHSIM_CUDA_MODULE (a file); beside liblhsim as
 * installed (LIBDIR/lhsim/lhsim-cuda.so); in the build tree (backends/module/ under the
 * directory of liblhsim); in the configured install directory. */
#include "backends/backend.h"
#include "lh-config.h"

#include <dlfcn.h>
#include <gmodule.h>
#include <string.h>

#define MODULE_FILE "lhsim-cuda.so"

typedef const LhBackend *(*ModuleFunc)(void);

static GMutex lock;
static gboolean tried;
static const LhBackend *real;
static char *why; /* why it cannot be loaded */

#if LH_HAVE_CUDA
static GPtrArray *candidates(void)
{
	GPtrArray *c = g_ptr_array_new_with_free_func(g_free);
	const char *env = g_getenv("LHSIM_CUDA_MODULE");
	if (env && *env) {
		g_ptr_array_add(c, g_strdup(env));
		return c; /* the user's choice, and only it */
	}
	Dl_info info;
	if (dladdr((const void *)&lh_backend_cuda, &info) && info.dli_fname) {
		g_autofree char *dir = g_path_get_dirname(info.dli_fname);
		g_ptr_array_add(c, g_build_filename(dir, "lhsim", MODULE_FILE, NULL));
		g_ptr_array_add(c, g_build_filename(dir, "backends", "module", MODULE_FILE, NULL));
	}
	g_ptr_array_add(c, g_build_filename(LH_MODULE_DIR, MODULE_FILE, NULL));
	return c;
}
#endif

static const LhBackend *load(GError **error)
{
	g_mutex_lock(&lock);
	if (!tried) {
		tried = TRUE;
#if LH_HAVE_CUDA
		g_autoptr(GPtrArray) c = candidates();
		GString *fails = g_string_new(NULL);
		for (guint i = 0; i < c->len && !real; i++) {
			const char *path = g_ptr_array_index(c, i);
			if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
				g_string_append_printf(fails, "%s%s: not there",
				                       fails->len ? "; " : "", path);
				continue;
			}
			GModule *m = g_module_open(path, G_MODULE_BIND_LOCAL);
			ModuleFunc fn = NULL;
			if (!m) {
				/* Typically: the CUDA runtime library is not on this machine. */
				g_string_append_printf(fails, "%s%s", fails->len ? "; " : "",
				                       g_module_error());
				continue;
			}
			if (!g_module_symbol(m, "lh_backend_cuda_module", (gpointer *)&fn) || !fn ||
			    !fn() || fn()->version != LH_BACKEND_ABI) {
				g_string_append_printf(fails,
				                       "%s%s: not lhsim's CUDA backend (or of "
				                       "another version)",
				                       fails->len ? "; " : "", path);
				g_module_close(m);
				continue;
			}
			g_module_make_resident(m);
			real = fn();
		}
		if (!real)
			why = g_strdup_printf("the CUDA backend cannot be loaded: %s", fails->str);
		g_string_free(fails, TRUE);
#else
		why = g_strdup("no CUDA device: this lhsim was built without CUDA (configure with "
		               "meson -Dcuda=enabled, with nvcc and the CUDA runtime installed)");
#endif
	}
	const LhBackend *b = real;
	if (!b)
		g_set_error(error, LH_BACKEND_ERROR, LH_BACKEND_ERROR_UNAVAILABLE, "%s", why);
	g_mutex_unlock(&lock);
	return b;
}

static gboolean proxy_available(GError **error)
{
	const LhBackend *b = load(error);
	return b && b->available(error);
}

static LhTrace *proxy_replay(const LhGraph *g, const LhPlan *plan, const LhHw *hw,
                             const LhReplayOptions *opt, GError **error)
{
	const LhBackend *b = load(error);
	return b ? b->replay(g, plan, hw, opt, error) : NULL;
}

static LhHw *proxy_calibrate(const LhHw *base, const LhReplayOptions *opt, GHashTable *notes,
                             GError **error)
{
	const LhBackend *b = load(error);
	return b && b->calibrate ? b->calibrate(base, opt, notes, error) : NULL;
}

const LhBackend lh_backend_cuda = {
    .version = LH_BACKEND_ABI,
    .name = "cuda",
    .available = proxy_available,
    .replay = proxy_replay,
#if LH_HAVE_CUDA
    .summary = "CUDA streams, events and synthetic kernels on a GPU (collectives emulated)",
#else
    .summary = "CUDA streams, events and synthetic kernels on a GPU (not built in)",
#endif
    .calibrate = proxy_calibrate,
};
