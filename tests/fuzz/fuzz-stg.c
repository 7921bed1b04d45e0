/* libFuzzer harness for the STG importer (models/stg.c). Build and run: tests/fuzz/run.sh.
 * Every input must give a graph or a GError whose message starts with "fuzz.stg:". STG has no
 * writer: a graph that imports must write graph JSON that lhsim reads back to the same text. */
#include "models/graph-json.h"
#include "models/stg.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	GError *e = NULL;
	LhGraph *g =
	    lh_stg_import_data((const char *)data, size, "fuzz.stg", 3, LH_STG_UNIT_NS, &e);
	if (!g) {
		if (!e || !g_str_has_prefix(e->message, "fuzz.stg:"))
			abort(); /* every failure must say where */
		g_error_free(e);
		return 0;
	}
	char *j = lh_graph_to_json(g);
	LhGraph *g2 = lh_graph_new_from_json_data(j, -1, "rt.json", &e);
	if (!g2)
		abort(); /* what we import, we must read back */
	char *j2 = lh_graph_to_json(g2);
	if (strcmp(j, j2) != 0)
		abort();
	g_free(j);
	g_free(j2);
	lh_graph_free(g2);
	lh_graph_free(g);
	return 0;
}
