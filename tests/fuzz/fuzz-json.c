/* libFuzzer harness for the graph JSON reader (models/graph-json.c). Build and run:
 * tests/fuzz/run.sh. Every input must give a graph or a GError whose message starts with
 * "fuzz.json:"; a graph that loads must write back to JSON that loads again; and where the
 * fast path (models/graph-json-fast.c) takes an input, the full reader must build the same
 * graph from it. */
#include "models/graph-json-private.h"
#include "models/graph-json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	GError *e = NULL;
	LhGraph *fast = lh__graph_json_fast((const char *)data, size);
	if (fast) {
		LhGraph *full =
		    lh__graph_json_full((const char *)data, (gssize)size, "fuzz.json", &e);
		if (!full)
			abort(); /* the fast path took what the full reader refuses */
		char *a = lh_graph_to_json(fast), *b = lh_graph_to_json(full);
		if (strcmp(a, b) != 0 || strcmp(lh_graph_name(fast), lh_graph_name(full)) != 0)
			abort(); /* not the same graph */
		g_free(a);
		g_free(b);
		lh_graph_free(full);
		lh_graph_free(fast);
	}
	LhGraph *g = lh_graph_new_from_json_data((const char *)data, (gssize)size, "fuzz.json", &e);
	if (!g) {
		if (!e || !g_str_has_prefix(e->message, "fuzz.json:"))
			abort(); /* every failure must say where */
		g_error_free(e);
		return 0;
	}
	char *j = lh_graph_to_json(g);
	LhGraph *g2 = lh_graph_new_from_json_data(j, -1, "rt.json", &e);
	if (!g2)
		abort(); /* what we write, we must read */
	char *j2 = lh_graph_to_json(g2);
	if (strcmp(j, j2) != 0)
		abort();
	g_free(j);
	g_free(j2);
	lh_graph_free(g2);
	lh_graph_free(g);
	return 0;
}
