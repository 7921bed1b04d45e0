/* libFuzzer harness for the hardware .ini reader (sim/hw.c). Build and run: tests/fuzz/run.sh.
 * Every input must give a description or a GError whose message starts with "fuzz.ini:". A
 * description that loads must write an .ini that loads again and writes the same text. */
#include "sim/hw.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	GError *e = NULL;
	LhHw *hw = lh_hw_new_from_data((const char *)data, size, "fuzz.ini", &e);
	if (!hw) {
		if (!e || !g_str_has_prefix(e->message, "fuzz.ini:"))
			abort(); /* every failure must say where */
		g_error_free(e);
		return 0;
	}
	char *t = lh_hw_to_data(hw);
	LhHw *hw2 = lh_hw_new_from_data(t, strlen(t), "rt.ini", &e);
	if (!hw2)
		abort(); /* what we write, we must read */
	char *t2 = lh_hw_to_data(hw2);
	if (strcmp(t, t2) != 0)
		abort();
	g_free(t);
	g_free(t2);
	lh_hw_free(hw2);
	lh_hw_free(hw);
	return 0;
}
