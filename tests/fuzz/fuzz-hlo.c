/* libFuzzer harness for the HLO text importer (models/hlo-*.c). Build and run: tests/fuzz/run.sh.
 * Every input must give a graph or a GError whose message starts with "fuzz.hlo:LINE:COL:". */
#include "models/hlo.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	GPtrArray *warn = g_ptr_array_new_with_free_func(g_free);
	GError *e = NULL;
	LhGraph *g = lh_hlo_import_data((const char *)data, size, "fuzz.hlo", warn, &e);
	if (g) {
		lh_graph_free(g);
	} else {
		if (!e || (!g_str_has_prefix(e->message, "fuzz.hlo:")))
			abort(); /* every failure must say where */
		g_error_free(e);
	}
	g_ptr_array_unref(warn);
	return 0;
}
