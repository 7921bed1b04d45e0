/* lhsim — atomic file writes. */
#include "sim/util.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

G_DEFINE_QUARK(lh-io-error-quark, lh_io_error)

char *lh_atomic_begin(const char *path, GError **error)
{
	g_return_val_if_fail(path != NULL, NULL);
	g_autofree char *dir = g_path_get_dirname(path);
	g_autofree char *base = g_path_get_basename(path);
	g_autofree char *tmpl = g_strdup_printf(".%s.XXXXXX", base);
	char *tmp = g_build_filename(dir, tmpl, NULL);
	int fd = g_mkstemp(tmp);
	if (fd < 0) {
		int e = errno;
		g_set_error(error, LH_IO_ERROR, 0, "%s: cannot create a file there: %s", path,
			    g_strerror(e));
		g_free(tmp);
		return NULL;
	}
	/* mkstemp makes the file 0600; the result should get the mode any new file gets. */
	static gsize mask_once;
	static mode_t mask;
	if (g_once_init_enter(&mask_once)) {
		mask = umask(0); /* reading the umask means setting it: once, then put back */
		umask(mask);
		g_once_init_leave(&mask_once, 1);
	}
	if (fchmod(fd, 0666 & ~mask) != 0) {
		/* not fatal: the file stays private to its owner */
	}
	close(fd);
	return tmp;
}

gboolean lh_atomic_commit(const char *tmp, const char *path, gboolean ok, GError **error)
{
	if (!ok) {
		g_unlink(tmp);
		return FALSE;
	}
	if (g_rename(tmp, path) != 0) {
		int e = errno;
		g_unlink(tmp);
		g_set_error(error, LH_IO_ERROR, 0, "%s: cannot write: %s", path, g_strerror(e));
		return FALSE;
	}
	return TRUE;
}

gboolean lh_write_file_atomic(const char *path, const char *data, gsize len, GError **error)
{
	g_autofree char *tmp = lh_atomic_begin(path, error);
	if (!tmp)
		return FALSE;
	FILE *f = fopen(tmp, "wb");
	gboolean ok = f != NULL;
	int e = errno;
	if (ok && len && fwrite(data, 1, len, f) != len) {
		ok = FALSE;
		e = errno;
	}
	if (f && fclose(f) != 0 && ok) {
		ok = FALSE;
		e = errno;
	}
	if (!ok) {
		g_set_error(error, LH_IO_ERROR, 0, "%s: cannot write: %s", path, g_strerror(e));
		lh_atomic_commit(tmp, path, FALSE, NULL);
		return FALSE;
	}
	return lh_atomic_commit(tmp, path, TRUE, error);
}

void lh_json_append_string(GString *s, const char *str)
{
	g_string_append_c(s, '"');
	for (const unsigned char *p = (const unsigned char *)(str ? str : ""); *p; p++) {
		if (*p == '"' || *p == '\\')
			g_string_append_printf(s, "\\%c", *p);
		else if (*p < 0x20)
			g_string_append_printf(s, "\\u%04x", *p);
		else
			g_string_append_c(s, (char)*p);
	}
	g_string_append_c(s, '"');
}
