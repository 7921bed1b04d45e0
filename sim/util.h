/* lhsim — small shared helpers: reading inputs, writing outputs safely, JSON strings. */
#pragma once

#include <glib.h>
#include <stdio.h>

G_BEGIN_DECLS

#define LH_IO_ERROR (lh_io_error_quark())
GQuark lh_io_error_quark(void);

typedef enum {
	LH_IO_ERROR_READ,  /* an input cannot be read (missing, a directory, no permission) */
	LH_IO_ERROR_WRITE, /* an output cannot be written (no such directory, a full disk, ...) */
	LH_IO_ERROR_NAME,  /* a name that cannot name a file at all (empty) */
} LhIoError;

/* The name under which standard input appears in messages ("<stdin>:3:5: ..."). */
#define LH_STDIN_NAME "<stdin>"

/* Reads a whole input. @path "-" is standard input (read to its end); "" is an error; a
 * directory is an error that says so. Errors are LH_IO_ERROR_READ and name @path. */
gboolean lh_read_file(const char *path, char **data, gsize *len, GError **error);

/* Reads a whole input as lh_read_file does, as bytes followed by a '\0' that the size does not
 * count. A regular file whose size is not a multiple of the page size is mapped (mmap,
 * read-only) rather than copied: the page cache's own pages, so that a large graph costs no
 * copy and no fresh page per 4 KiB (a 151 MB graph: 0.03 s mapped against 0.6 s read on the
 * 2-core VM, bench/README.md); the bytes after its end, up to the page's end, are zeros by
 * mmap's definition, which gives the '\0'. Anything else is read by lh_read_file. While a
 * mapped input lives, lh_inputs_mapped() is not 0: a file truncated by another process then
 * ends this one with SIGBUS when a lost page is read, which a handler can name. */
GBytes *lh_read_bytes(const char *path, GError **error);
/* The mapping alone: @path mapped as lh_read_bytes maps it, or NULL, with no error, when it is
 * not a regular file of such a size or cannot be opened or mapped (read it another way then,
 * which also says what is wrong). */
GBytes *lh_map_file(const char *path);
/* The library's file readers (lh_graph_new_from_json_file, lh_plan_new_from_file): @path mapped
 * as lh_map_file maps it, or else read whole by g_file_get_contents, whose error (G_FILE_ERROR)
 * it gives; either way followed by a '\0'. Unlike lh_read_bytes, "-" is a file's name. */
GBytes *lh_file_bytes(const char *path, GError **error);
/* How many inputs lh_read_bytes has mapped and not yet released. Async-signal-safe. */
int lh_inputs_mapped(void);

/* An output being written. Where it goes depends on what @path is:
 *  - "-": standard output (never closed);
 *  - /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N (or a link to one): that descriptor
 *    of this process, written at its own offset like "-";
 *  - a device, a FIFO or a socket, or a file reached through /proc or /dev/fd (/dev/stdout):
 *    opened and written in place, since such a file cannot be replaced;
 *  - a symbolic link: followed to the file it names (which need not exist yet), which is then
 *    written like a regular file, so the link stays a link;
 *  - a regular file, or no file yet: a temporary file beside it, renamed over it once every
 *    byte is written, so a reader never sees a partial file; an existing file keeps its mode.
 * A directory is an error. While a temporary file exists it is in a registry that
 * lh_output_remove_temporaries() empties (for signal handlers). */
typedef struct LhOutput LhOutput;

LhOutput *lh_output_open(const char *path, GError **error);
/* Appends bytes; a failure is remembered and reported by lh_output_close. */
gboolean lh_output_write(LhOutput *o, const void *data, gsize len);
/* Finishes @o and frees it. With @ok TRUE and every write successful, the output is committed
 * (renamed into place, or flushed); otherwise a temporary file is removed. Returns whether the
 * output was written; errors are LH_IO_ERROR_WRITE naming the path. */
gboolean lh_output_close(LhOutput *o, gboolean ok, GError **error);
/* Checks, before any work, that @path can be written (a temporary file is made and removed
 * beside a regular file; a device or FIFO must be writable; nothing is opened). */
gboolean lh_output_check(const char *path, GError **error);
/* Whether @path is "-", standard input or output. */
gboolean lh_path_is_std(const char *path);

/* Removes every temporary file lh_output_open made and not yet committed or removed. Only
 * async-signal-safe calls: meant for a handler of SIGINT, SIGTERM and the like. */
void lh_output_remove_temporaries(void);

/* Writes @len bytes to @path through lh_output_open: atomically for a regular file, in place
 * for a device, to standard output for "-". On failure nothing is left behind (for a regular
 * file) and the error names @path. */
gboolean lh_write_file_atomic(const char *path, const char *data, gsize len, GError **error);

/* Appends @str to @s as a JSON string literal (quotes, escapes). NULL writes "". */
void lh_json_append_string(GString *s, const char *str);

G_END_DECLS
