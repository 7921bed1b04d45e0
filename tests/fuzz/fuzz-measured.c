/* libFuzzer harness for the Chrome trace reader of measured timelines (models/measured.c).
 * A trace that loads must have its events sorted by (device, stream, start) with no two on a
 * stream overlapping, and every end at or after its start. Build and run: tests/fuzz/run.sh
 * measured SECONDS (meson -Dfuzz=true with clang). */
#include "models/measured.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	GError *e = NULL;
	LhMeasured *m = lh_measured_new_from_json((const char *)data, size, "fuzz.json", &e);
	if (!m) {
		if (!e)
			abort();
		g_error_free(e);
		return 0;
	}
	for (guint i = 0; i < m->events->len; i++) {
		const LhMeasEvent *x = &g_array_index(m->events, LhMeasEvent, i);
		if (x->end < x->start || !x->name)
			abort();
		if (i == 0)
			continue;
		const LhMeasEvent *p = &g_array_index(m->events, LhMeasEvent, i - 1);
		if (p->device == x->device && p->stream == x->stream && x->start < p->end)
			abort();
	}
	lh_measured_free(m);
	return 0;
}
