/* lhsim — reading inputs and writing outputs: standard streams, devices, symbolic links,
 * atomic replacement of regular files and the removal of temporaries on a signal. */
#include "sim/util.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The quark's name is a string with dashes, which clang-format would space. */
/* clang-format off */
G_DEFINE_QUARK(lh-io-error-quark, lh_io_error)
/* clang-format on */

gboolean lh_path_is_std(const char *path)
{
	return path && !strcmp(path, "-");
}

/* ---- Reading ---- */

static gboolean read_fd(int fd, GString *s, int *err)
{
	char buf[65536];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n == 0)
			return TRUE;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			*err = errno;
			return FALSE;
		}
		g_string_append_len(s, buf, n);
	}
}

gboolean lh_read_file(const char *path, char **data, gsize *len, GError **error)
{
	g_return_val_if_fail(path && data, FALSE);
	*data = NULL;
	if (!*path) {
		g_set_error(error, LH_IO_ERROR, LH_IO_ERROR_NAME,
		            "an empty file name (use '-' for standard input)");
		return FALSE;
	}
	if (lh_path_is_std(path)) {
		GString *s = g_string_new(NULL);
		int e = 0;
		if (!read_fd(0, s, &e)) {
			g_string_free(s, TRUE);
			g_set_error(error, LH_IO_ERROR, LH_IO_ERROR_READ,
			            "%s: cannot read standard input: %s", LH_STDIN_NAME,
			            g_strerror(e));
			return FALSE;
		}
		if (len)
			*len = s->len;
		*data = g_string_free(s, FALSE);
		return TRUE;
	}
	struct stat st;
	if (stat(path, &st) != 0) {
		int e = errno;
		g_set_error(error, LH_IO_ERROR, LH_IO_ERROR_READ, "%s: cannot read: %s", path,
		            g_strerror(e));
		return FALSE;
	}
	if (S_ISDIR(st.st_mode)) {
		g_set_error(error, LH_IO_ERROR, LH_IO_ERROR_READ, "%s: is a directory, not a file",
		            path);
		return FALSE;
	}
	/* Read through a descriptor rather than g_file_get_contents, which wants a size up front
	 * and so cannot read a FIFO or a device. */
	int fd = g_open(path, O_RDONLY | O_CLOEXEC, 0);
	GString *s = g_string_new(NULL);
	int e = 0;
	if (fd < 0 || !read_fd(fd, s, &e)) {
		if (fd < 0)
			e = errno;
		else
			close(fd);
		g_string_free(s, TRUE);
		g_set_error(error, LH_IO_ERROR, LH_IO_ERROR_READ, "%s: cannot read: %s", path,
		            g_strerror(e));
		return FALSE;
	}
	close(fd);
	if (len)
		*len = s->len;
	*data = g_string_free(s, FALSE);
	return TRUE;
}

static gint n_mapped; /* inputs mapped by lh_map_file and not yet released */

int lh_inputs_mapped(void)
{
	return g_atomic_int_get(&n_mapped);
}

typedef struct {
	void *addr;
	gsize len;
} Mapping;

static void unmap(gpointer data)
{
	Mapping *m = data;
	munmap(m->addr, m->len);
	g_free(m);
	g_atomic_int_add(&n_mapped, -1);
}

GBytes *lh_map_file(const char *path)
{
	g_return_val_if_fail(path, NULL);
	long page = sysconf(_SC_PAGESIZE);
	struct stat st;
	/* Only a regular file is opened here: opening a FIFO would wait for its writer, and the
	 * bytes it then sent would be lost to lh_read_file's reading. */
	if (!*path || lh_path_is_std(path) || page <= 0 || g_stat(path, &st) != 0 ||
	    !S_ISREG(st.st_mode))
		return NULL;
	int fd = g_open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0);
	if (fd < 0)
		return NULL;
	void *addr = MAP_FAILED;
	/* The size of the open file itself, so that a file replaced meanwhile is not mixed up. */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && st.st_size % page != 0)
		addr = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd); /* the mapping keeps the file */
	if (addr == MAP_FAILED)
		return NULL;
	/* Parsers read the file once from start to end. */
	madvise(addr, (size_t)st.st_size, MADV_SEQUENTIAL);
	Mapping *m = g_new(Mapping, 1);
	m->addr = addr;
	m->len = (gsize)st.st_size;
	g_atomic_int_inc(&n_mapped);
	return g_bytes_new_with_free_func(addr, m->len, unmap, m);
}

/* @path mapped (lh_map_file), or else read whole by @read, whose data ends in a '\0' and whose
 * error is the caller's. */
static GBytes *map_or_read(const char *path,
                           gboolean (*read)(const char *, char **, gsize *, GError **),
                           GError **error)
{
	g_return_val_if_fail(path, NULL);
	GBytes *b = lh_map_file(path);
	if (b)
		return b;
	char *data = NULL;
	gsize len = 0;
	if (!read(path, &data, &len, error))
		return NULL;
	return g_bytes_new_take(data, len);
}

GBytes *lh_read_bytes(const char *path, GError **error)
{
	return map_or_read(path, lh_read_file, error);
}

GBytes *lh_file_bytes(const char *path, GError **error)
{
	return map_or_read(path, g_file_get_contents, error);
}

/* ---- Temporaries that a signal handler can remove ---- */

#define N_SLOTS 64
#define SLOT_PATH 4096
static char slot_path[N_SLOTS][SLOT_PATH];
static gint slot_state[N_SLOTS]; /* 0 free, 1 being written, 2 holds a live temporary */

static int slot_take(const char *path)
{
	if (strlen(path) >= SLOT_PATH)
		return -1;
	for (int i = 0; i < N_SLOTS; i++)
		if (g_atomic_int_compare_and_exchange(&slot_state[i], 0, 1)) {
			strcpy(slot_path[i], path);
			g_atomic_int_set(&slot_state[i], 2);
			return i;
		}
	return -1; /* more than N_SLOTS at once: still written, only not removed on a signal */
}

static void slot_drop(int i)
{
	if (i >= 0)
		g_atomic_int_set(&slot_state[i], 0);
}

void lh_output_remove_temporaries(void)
{
	for (int i = 0; i < N_SLOTS; i++)
		if (g_atomic_int_get(&slot_state[i]) == 2)
			unlink(slot_path[i]);
}

/* ---- Writing ---- */

struct LhOutput {
	char *path;   /* as given, for messages */
	char *target; /* the regular file a temporary is renamed over; NULL when in place */
	char *tmp;    /* the temporary, or NULL */
	int slot;
	FILE *f;
	gboolean is_stdout;
	int err; /* errno of the first failed write, or 0 */
};

static mode_t new_file_mode(void)
{
	static gsize once;
	static mode_t mask;
	if (g_once_init_enter(&once)) {
		mask = umask(0); /* reading the umask means setting it: once, then put back */
		umask(mask);
		g_once_init_leave(&once, 1);
	}
	return 0666 & ~mask;
}

static gboolean in_proc(const char *path)
{
	g_autofree char *dir = g_path_get_dirname(path);
	g_autofree char *real = realpath(dir, NULL);
	return real && (!strcmp(real, "/proc") || g_str_has_prefix(real, "/proc/"));
}

typedef enum { DEST_STDOUT, DEST_FD, DEST_IN_PLACE, DEST_REPLACE } Dest;

/* The descriptor of this process that @path names (/dev/stdout, /dev/stderr, /dev/fd/N,
 * /proc/self/fd/N, /proc/PID/fd/N with our PID), or -1. Writing to it directly, at its own
 * offset, is what the name means: opening it anew would start again at offset 0 of a
 * redirected file and write over what else goes there. */
static int own_fd(const char *path)
{
	if (!strcmp(path, "/dev/stdout"))
		return 1;
	if (!strcmp(path, "/dev/stderr"))
		return 2;
	g_autofree char *self = g_strdup_printf("/proc/%d/fd/", (int)getpid());
	const char *prefixes[] = {"/dev/fd/", "/proc/self/fd/", self};
	for (gsize i = 0; i < G_N_ELEMENTS(prefixes); i++) {
		if (!g_str_has_prefix(path, prefixes[i]))
			continue;
		const char *n = path + strlen(prefixes[i]);
		char *end;
		long fd = strtol(n, &end, 10);
		if (g_ascii_isdigit(*n) && !*end && fd >= 0 && fd < 65536 &&
		    fcntl((int)fd, F_GETFD) >= 0)
			return (int)fd;
	}
	return -1;
}

/* Where @path's bytes must go; for DEST_REPLACE, *target is the regular file (symbolic links
 * followed) that need not exist yet, and *st_out its status when it exists. */
static gboolean resolve(const char *path, Dest *dest, int *fd, char **target, struct stat *st_out,
                        gboolean *exists, GError **error)
{
	*target = NULL;
	*exists = FALSE;
	if (!path || !*path) {
		g_set_error(error, LH_IO_ERROR, LH_IO_ERROR_NAME,
		            "an empty output file name (use '-' for standard output)");
		return FALSE;
	}
	if (lh_path_is_std(path)) {
		*dest = DEST_STDOUT;
		return TRUE;
	}
	if ((*fd = own_fd(path)) >= 0) {
		*dest = DEST_FD;
		return TRUE;
	}
	struct stat st;
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			g_set_error(error, LH_IO_ERROR, LH_IO_ERROR_WRITE,
			            "%s: is a directory; give a file name", path);
			return FALSE;
		}
		if (!S_ISREG(st.st_mode)) {
			*dest = DEST_IN_PLACE;
			return TRUE;
		}
	}
	/* Follow symbolic links by hand: the last one may point to a file not made yet. */
	char *cur = g_strdup(path);
	for (int depth = 0;; depth++) {
		if (in_proc(cur)) {
			/* /dev/stdout, /dev/fd/N, /proc/self/fd/N: the open file of a process,
			 * which only writing in place reaches. */
			g_free(cur);
			*dest = DEST_IN_PLACE;
			return TRUE;
		}
		struct stat lst;
		if (lstat(cur, &lst) != 0 || !S_ISLNK(lst.st_mode)) {
			if (lstat(cur, &lst) == 0) {
				*exists = TRUE;
				*st_out = lst;
			}
			break;
		}
		if (depth == 40) {
			g_set_error(error, LH_IO_ERROR, LH_IO_ERROR_WRITE,
			            "%s: too many levels of symbolic links", path);
			g_free(cur);
			return FALSE;
		}
		g_autoptr(GError) e = NULL;
		g_autofree char *link = g_file_read_link(cur, &e);
		if (!link) {
			g_set_error(error, LH_IO_ERROR, LH_IO_ERROR_WRITE, "%s: %s", path,
			            e->message);
			g_free(cur);
			return FALSE;
		}
		char *next;
		if (g_path_is_absolute(link)) {
			next = g_strdup(link);
		} else {
			g_autofree char *dir = g_path_get_dirname(cur);
			next = g_build_filename(dir, link, NULL);
		}
		g_free(cur);
		cur = next;
		if ((*fd = own_fd(cur)) >= 0) {
			g_free(cur);
			*dest = DEST_FD;
			return TRUE;
		}
	}
	if (*exists && S_ISDIR(st_out->st_mode)) {
		g_set_error(error, LH_IO_ERROR, LH_IO_ERROR_WRITE,
		            "%s: is a directory; give a file name", path);
		g_free(cur);
		return FALSE;
	}
	*dest = DEST_REPLACE;
	*target = cur;
	return TRUE;
}

/* A fresh temporary file beside @target; returns its descriptor, or -1 with an error. */
static int make_temp(const char *path, const char *target, char **tmp_out, GError **error)
{
	g_autofree char *dir = g_path_get_dirname(target);
	g_autofree char *base = g_path_get_basename(target);
	g_autofree char *tmpl = g_strdup_printf(".%s.XXXXXX", base);
	char *tmp = g_build_filename(dir, tmpl, NULL);
	int fd = g_mkstemp_full(tmp, O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0) {
		int e = errno;
		g_set_error(error, LH_IO_ERROR, LH_IO_ERROR_WRITE,
		            "%s: cannot create a file there: %s", path, g_strerror(e));
		g_free(tmp);
		return -1;
	}
	*tmp_out = tmp;
	return fd;
}

LhOutput *lh_output_open(const char *path, GError **error)
{
	Dest dest;
	int own = -1;
	g_autofree char *target = NULL;
	struct stat st;
	gboolean exists;
	if (!resolve(path, &dest, &own, &target, &st, &exists, error))
		return NULL;
	LhOutput *o = g_new0(LhOutput, 1);
	o->path = g_strdup(path);
	o->slot = -1;
	if (dest == DEST_STDOUT) {
		o->f = stdout;
		o->is_stdout = TRUE;
		return o;
	}
	int fd;
	if (dest == DEST_FD) {
		/* What was printed to the stream before goes first. */
		if (own == 1)
			fflush(stdout);
		fd = fcntl(own, F_DUPFD_CLOEXEC, 3);
		if (fd < 0) {
			int e = errno;
			g_set_error(error, LH_IO_ERROR, LH_IO_ERROR_WRITE, "%s: cannot write: %s",
			            path, g_strerror(e));
			g_free(o->path);
			g_free(o);
			return NULL;
		}
	} else if (dest == DEST_IN_PLACE) {
		fd = g_open(path, O_WRONLY | O_TRUNC | O_NOCTTY | O_CLOEXEC, 0);
		if (fd < 0) {
			int e = errno;
			g_set_error(error, LH_IO_ERROR, LH_IO_ERROR_WRITE, "%s: cannot write: %s",
			            path, g_strerror(e));
			g_free(o->path);
			g_free(o);
			return NULL;
		}
	} else {
		fd = make_temp(path, target, &o->tmp, error);
		if (fd < 0) {
			g_free(o->path);
			g_free(o);
			return NULL;
		}
		o->slot = slot_take(o->tmp);
		/* mkstemp makes the file 0600: give it the mode of the file it replaces, or the
		 * mode any new file gets. Not fatal: the file then stays private to its owner. */
		if (fchmod(fd, exists ? (st.st_mode & 07777) : new_file_mode()) != 0) {
		}
		o->target = g_steal_pointer(&target);
	}
	o->f = fdopen(fd, "wb");
	if (!o->f) {
		o->err = errno;
		close(fd);
	}
	return o;
}

gboolean lh_output_write(LhOutput *o, const void *data, gsize len)
{
	g_return_val_if_fail(o != NULL, FALSE);
	if (o->err || !o->f)
		return FALSE;
	if (len && fwrite(data, 1, len, o->f) != len) {
		o->err = errno ? errno : EIO;
		return FALSE;
	}
	return TRUE;
}

static void output_free(LhOutput *o)
{
	slot_drop(o->slot);
	g_free(o->path);
	g_free(o->target);
	g_free(o->tmp);
	g_free(o);
}

gboolean lh_output_close(LhOutput *o, gboolean ok, GError **error)
{
	g_return_val_if_fail(o != NULL, FALSE);
	if (o->f) {
		errno = 0;
		if (fflush(o->f) != 0 && !o->err)
			o->err = errno ? errno : EIO;
		if (!o->is_stdout && fclose(o->f) != 0 && !o->err)
			o->err = errno ? errno : EIO;
		o->f = NULL;
	}
	if (ok && o->err)
		g_set_error(error, LH_IO_ERROR, LH_IO_ERROR_WRITE, "%s: cannot write: %s",
		            o->is_stdout ? "standard output" : o->path, g_strerror(o->err));
	gboolean done = ok && !o->err;
	if (o->tmp) {
		if (done && g_rename(o->tmp, o->target) != 0) {
			int e = errno;
			g_set_error(error, LH_IO_ERROR, LH_IO_ERROR_WRITE, "%s: cannot write: %s",
			            o->path, g_strerror(e));
			done = FALSE;
		}
		if (!done)
			g_unlink(o->tmp);
	}
	output_free(o);
	return done;
}

gboolean lh_output_check(const char *path, GError **error)
{
	Dest dest;
	int own = -1;
	g_autofree char *target = NULL;
	struct stat st;
	gboolean exists;
	if (!resolve(path, &dest, &own, &target, &st, &exists, error))
		return FALSE;
	if (dest == DEST_STDOUT || dest == DEST_FD)
		return TRUE;
	if (dest == DEST_IN_PLACE) {
		/* Opening a FIFO would wait for its reader: only ask for permission. */
		if (access(path, W_OK) != 0) {
			int e = errno;
			g_set_error(error, LH_IO_ERROR, LH_IO_ERROR_WRITE, "%s: cannot write: %s",
			            path, g_strerror(e));
			return FALSE;
		}
		return TRUE;
	}
	g_autofree char *tmp = NULL;
	int fd = make_temp(path, target, &tmp, error);
	if (fd < 0)
		return FALSE;
	close(fd);
	g_unlink(tmp);
	return TRUE;
}

gboolean lh_write_file_atomic(const char *path, const char *data, gsize len, GError **error)
{
	LhOutput *o = lh_output_open(path, error);
	if (!o)
		return FALSE;
	lh_output_write(o, data, len);
	return lh_output_close(o, TRUE, error);
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
