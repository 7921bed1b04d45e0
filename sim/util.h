/* lhsim — small shared helpers: atomic file writes. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define LH_IO_ERROR (lh_io_error_quark())
GQuark lh_io_error_quark(void);

/* Writes @len bytes to a temporary file beside @path, then renames it over @path, so a reader
 * never sees a partial file. On failure nothing is left behind and the error names @path. */
gboolean lh_write_file_atomic(const char *path, const char *data, gsize len, GError **error);

/* For writers that need a path of their own (cairo surfaces): lh_atomic_begin returns a fresh
 * temporary path beside @path (caller frees); lh_atomic_commit renames it over @path, or with
 * @ok FALSE removes it. Both report errors naming @path. */
char *lh_atomic_begin(const char *path, GError **error);
gboolean lh_atomic_commit(const char *tmp, const char *path, gboolean ok, GError **error);

/* Appends @str to @s as a JSON string literal (quotes, escapes). NULL writes "". */
void lh_json_append_string(GString *s, const char *str);

G_END_DECLS
