/* libFuzzer harness for the Chrome trace reader of measured timelines (models/measured.c).
 * A trace that loads must have its events sorted by (device, stream, start) with no two on a
 * stream overlapping, and every end at or after its start. Build and run (clang):
 *   mkdir -p build-fuzz && clang -std=c11 -D_GNU_SOURCE -g -O1 \
 *     -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I. \
 *     $(pkg-config --cflags glib-2.0 gio-2.0 json-glib-1.0 sqlite3) \
 *     -o build-fuzz/fuzz-measured tests/fuzz/fuzz-measured.c models/measured.c \
 *     $(pkg-config --libs glib-2.0 gio-2.0 json-glib-1.0 sqlite3) -lm
 *   build-fuzz/fuzz-measured -max_total_time=60 -max_len=65536 CORPUS_DIR */
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
