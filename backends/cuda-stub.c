/* lhsim — the `cuda` backend's entry when lhsim is built without CUDA: it is listed, and
 * available() says why it cannot run. */
#include "backends/backend.h"

static gboolean stub_available(GError **error)
{
	g_set_error(error, LH_BACKEND_ERROR, LH_BACKEND_ERROR_UNAVAILABLE,
		    "no CUDA device: this lhsim was built without CUDA (configure with meson "
		    "-Dcuda=enabled, with nvcc and the CUDA runtime installed)");
	return FALSE;
}

static LhTrace *stub_replay(const LhGraph *g, const LhPlan *plan, const LhHw *hw,
			    const LhReplayOptions *opt, GError **error)
{
	(void)g;
	(void)plan;
	(void)hw;
	(void)opt;
	stub_available(error);
	return NULL;
}

static LhHw *stub_calibrate(const LhHw *base, const LhReplayOptions *opt, GHashTable *notes,
			    GError **error)
{
	(void)base;
	(void)opt;
	(void)notes;
	stub_available(error);
	return NULL;
}

const LhBackend lh_backend_cuda = {
	.version = LH_BACKEND_ABI,
	.name = "cuda",
	.available = stub_available,
	.replay = stub_replay,
	.summary = "CUDA streams, events and synthetic kernels on a GPU (not built in)",
	.calibrate = stub_calibrate,
};
