/* lhsim — the graph JSON reader's fast path (issue 12).
 *
 * A single pass over the text that builds the graph directly, for the files lhsim and other
 * tools write: plain JSON, no comments, strings without escapes, every field well-formed. It
 * checks everything the full reader (graph-json.c) checks, and at the first thing it does not
 * like, or does not handle, it gives up and returns NULL; the caller then runs the full reader,
 * which finds the same problem and says where it is (FILE:LINE:COL) in its own words. So the
 * fast path never reports an error itself, and a graph it returns is the graph the full reader
 * would have built: the same ops, fields, names, deps, aliases and schedule, built by the same
 * calls (lh_graph_add_op, lh_graph_add_dep, lh_graph_set_schedule, lh_graph_finish).
 *
 * What it gives up on (the full reader accepts some of these, rejects the others): a backslash
 * or a control character in a string, a byte sequence that is not UTF-8, comments, negative
 * numbers, null, an unknown or repeated key, a value of the wrong type or range, a dep or alias
 * that does not resolve, a graph lh_graph_finish() refuses, and a collective's "members" (the
 * full reader checks and stores member sets). It reads the top-level "devices" and the ops'
 * "device" and "sync" (placement, docs/graph-format.md "Several devices").
 */
#include "models/graph-json-private.h"
#include "sim/engine.h"
#include "sim/graph-private.h"

#include <math.h>
#include <string.h>

typedef struct {
	const char *p, *end;
} Rd;

typedef struct {
	const char *s;
	guint32 len;
} Slice;

static inline void ws(Rd *r)
{
	/* Every token starts above ' ', white space is at or below it: one test for the common
	 * case. */
	while (r->p < r->end && (unsigned char)*r->p <= ' ' &&
	       (*r->p == ' ' || *r->p == '\n' || *r->p == '\t' || *r->p == '\r'))
		r->p++;
}

static inline gboolean lit(Rd *r, char c)
{
	ws(r);
	if (r->p < r->end && *r->p == c) {
		r->p++;
		return TRUE;
	}
	return FALSE;
}

/* Bytes that end the plain run of a string: the quote, a backslash, control characters and
 * bytes above 0x7f (which need the UTF-8 check). */
/* clang-format off */
static const guint8 str_stop[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};
/* clang-format on */

/* A string without escapes or control characters; UTF-8 checked only when it has a byte
 * above 0x7f. */
static gboolean str(Rd *r, Slice *out)
{
	ws(r);
	if (r->p >= r->end || *r->p != '"')
		return FALSE;
	const char *s = ++r->p, *p = s, *end = r->end;
	gboolean high = FALSE;
	for (;;) {
		while (p < end && !str_stop[(unsigned char)*p])
			p++;
		if (p >= end)
			return FALSE;
		unsigned char c = (unsigned char)*p;
		if (c == '"')
			break;
		if (c < 0x80)
			return FALSE; /* a control character or a backslash */
		high = TRUE;
		p++;
	}
	out->s = s;
	out->len = (guint32)(p - s);
	r->p = p + 1;
	return !high || g_utf8_validate(s, out->len, NULL);
}

/* Whether @v is the string literal @lit: a macro, so that the length is a constant and the
 * compiler inlines the comparison (as a function it was a call to strlen and one to memcmp for
 * every key of every op). */
#define slice_is(v, lit) ((v).len == sizeof(lit) - 1 && memcmp((v).s, (lit), sizeof(lit) - 1) == 0)

/* The double nearest to @w * 10^@e10 (ties to even), as strtod rounds, or FALSE when it
 * cannot say cheaply (the caller then calls strtod). @w is not 0. */
static gboolean decimal_to_double(guint64 w, int e10, double *out)
{
	static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
	                             1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
	                             1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
	/* Digits below 2^53 and a power of ten within 22 either way: both are exact doubles, so
	 * one IEEE operation, correctly rounded, gives strtod's double (Clinger's fast path). */
	if (w <= (G_GUINT64_CONSTANT(1) << 53) && e10 >= -22 && e10 <= 22) {
		*out = e10 < 0 ? (double)w / p10[-e10] : (double)w * p10[e10];
		return TRUE;
	}
#ifdef __SIZEOF_INT128__
	/* Up to 19 digits and a power of ten within 27 either way: w * 10^e10 = w * 5^e10 *
	 * 2^e10, where 5^27 < 2^63, so that w * 5^e10 (e10 >= 0) or a quotient by 5^-e10 with 64
	 * or 65 bits (e10 < 0) is computed exactly in 128-bit integers, with the remainder. Its
	 * first 53 bits, rounded to nearest with ties to even by the bits after them and the
	 * remainder, are the double's (the value lies between 10^-27 and 10^47: a normal double
	 * whatever the rounding). */
	if (e10 < -27 || e10 > 27)
		return FALSE;
	typedef unsigned __int128 U128;
	static const guint64 pow5[28] = {1,
	                                 5,
	                                 25,
	                                 125,
	                                 625,
	                                 3125,
	                                 15625,
	                                 78125,
	                                 390625,
	                                 1953125,
	                                 9765625,
	                                 48828125,
	                                 244140625,
	                                 1220703125,
	                                 6103515625,
	                                 30517578125,
	                                 152587890625,
	                                 762939453125,
	                                 3814697265625,
	                                 19073486328125,
	                                 95367431640625,
	                                 476837158203125,
	                                 2384185791015625,
	                                 11920928955078125,
	                                 59604644775390625,
	                                 298023223876953125,
	                                 1490116119384765625,
	                                 7450580596923828125};
	guint64 p5 = pow5[e10 < 0 ? -e10 : e10];
	U128 q;
	gboolean sticky; /* nonzero bits below q */
	int e2;          /* the value is (q + sticky fraction) * 2^e2 */
	if (e10 >= 0) {
		q = (U128)w * p5;
		sticky = FALSE;
		e2 = e10;
	} else {
		int bw = 64 - __builtin_clzll(w), bd = 64 - __builtin_clzll(p5);
		int s = 64 + bd - bw; /* q in [2^63, 2^65): w << s < 2^(64 + bd) <= 2^127 */
		U128 num = (U128)w << s;
		q = num / p5;
		sticky = num - q * p5 != 0;
		e2 = e10 - s;
	}
	guint64 hi = (guint64)(q >> 64);
	int nb = hi ? 128 - __builtin_clzll(hi) : 64 - __builtin_clzll((guint64)q);
	guint64 m;
	if (nb <= 53) {
		m = (guint64)q << (53 - nb);
		e2 -= 53 - nb;
	} else {
		int drop = nb - 53;
		m = (guint64)(q >> drop);
		U128 rest = q & (((U128)1 << drop) - 1), half = (U128)1 << (drop - 1);
		e2 += drop;
		if (rest > half || (rest == half && (sticky || (m & 1)))) {
			if (++m == G_GUINT64_CONSTANT(1) << 53) {
				m >>= 1;
				e2++;
			}
		}
	}
	/* m in [2^52, 2^53): the double m * 2^e2, built from its fields. */
	guint64 bits =
	    ((guint64)(e2 + 52 + 1023) << 52) | (m & ((G_GUINT64_CONSTANT(1) << 52) - 1));
	memcpy(out, &bits, sizeof bits);
	return TRUE;
#else
	return FALSE;
#endif
}

/* An ASCII digit (one comparison, where g_ascii_isdigit reads a table). */
#define DIGIT(c) ((guint)((c) - '0') < 10)

/* A JSON number that is not negative: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? without
 * the sign. An integer (no fraction or exponent) must fit 63 bits and reads as json-glib's
 * int64 does, the rest as a double correctly rounded as json-glib's (g_ascii_strtod, which
 * decimal_to_double agrees with where it answers). One pass: the first 19 significant digits
 * go into @w, and the power of ten they are to be scaled by into @e10. */
static gboolean num(Rd *r, double *out, gboolean *integer, gint64 *ival)
{
	ws(r);
	const char *s = r->p, *q = s, *e = r->end;
	if (q >= e || !g_ascii_isdigit(*q))
		return FALSE;
	guint64 w = 0;
	int nd = 0, e10 = 0;
	gboolean many = FALSE; /* a nonzero digit after the first 19 significant ones */
	if (*q == '0') {
		q++;
	} else {
		const char *lim = e - q > 19 ? q + 19 : e;
		for (; q < lim && DIGIT(*q); q++)
			w = w * 10 + (guint)(*q - '0');
		nd = (int)(q - s);
		for (; q < e && DIGIT(*q); q++) {
			many = TRUE; /* an integer of 20 digits is above 2^63 anyway */
			e10++;
		}
	}
	gboolean in = TRUE;
	if (q < e && *q == '.') {
		in = FALSE;
		q++;
		if (q >= e || !DIGIT(*q))
			return FALSE;
		if (nd == 0) /* leading zeros */
			for (; q < e && *q == '0'; q++)
				e10--;
		const char *f0 = q, *lim = e - q > 19 - nd ? q + (19 - nd) : e;
		for (; q < lim && DIGIT(*q); q++)
			w = w * 10 + (guint)(*q - '0');
		nd += (int)(q - f0);
		e10 -= (int)(q - f0);
		for (; q < e && DIGIT(*q); q++)
			many |= *q != '0';
	}
	if (q < e && (*q == 'e' || *q == 'E')) {
		in = FALSE;
		q++;
		gboolean neg = FALSE;
		if (q < e && (*q == '+' || *q == '-'))
			neg = *q++ == '-';
		if (q >= e || !DIGIT(*q))
			return FALSE;
		int x = 0;
		for (; q < e && DIGIT(*q); q++)
			if (x < 100000)
				x = x * 10 + (*q - '0');
		e10 += neg ? -x : x;
	}
	/* What follows a number: white space or a delimiter (not "1x", "01", "1.2.3"). */
	if (q < e && !(*q == ' ' || *q == '\n' || *q == '\t' || *q == '\r' || *q == ',' ||
	               *q == '}' || *q == ']'))
		return FALSE;
	if (in) {
		if (many || w > (guint64)G_MAXINT64)
			return FALSE;
		*ival = (gint64)w;
		*out = (double)(gint64)w;
	} else {
		*ival = 0;
		if (w == 0 && !many) {
			*out = 0.0;
		} else if (many || !decimal_to_double(w, e10, out)) {
			char buf[64];
			if (q - s >= (gssize)sizeof buf)
				return FALSE;
			memcpy(buf, s, q - s);
			buf[q - s] = 0;
			*out = g_ascii_strtod(buf, NULL);
		}
	}
	*integer = in;
	r->p = q;
	return TRUE;
}

static gboolean boolean(Rd *r, gboolean *out)
{
	ws(r);
	if (r->end - r->p >= 4 && memcmp(r->p, "true", 4) == 0) {
		r->p += 4;
		*out = TRUE;
	} else if (r->end - r->p >= 5 && memcmp(r->p, "false", 5) == 0) {
		r->p += 5;
		*out = FALSE;
	} else {
		return FALSE;
	}
	/* "trueish" is not a literal. */
	return r->p >= r->end || !g_ascii_isalnum(*r->p);
}

/* A number field as the full reader's num(): finite, >= 0, <= max, whole when @integral. */
static gboolean field_num(Rd *r, gboolean integral, double max, double *out)
{
	gboolean in;
	gint64 iv;
	if (!num(r, out, &in, &iv))
		return FALSE;
	double v = *out;
	return isfinite(v) && v >= 0 && (!integral || v == floor(v)) && v <= max;
}

/* Bounds as in graph-json.c. */
#define MAX_FLOPS 1e30
#define MAX_BYTES 1e24
#define MAX_INT 9.0e18
#define MAX_DURATION ((double)LH_MAX_OP_NS)

/* Field bits, to refuse a repeated key. */
enum {
	F_NAME = 1 << 0,
	F_KIND = 1 << 1,
	F_DEPS = 1 << 2,
	F_FLOPS = 1 << 3,
	F_BYTES = 1 << 4,
	F_SM = 1 << 5,
	F_SIZE = 1 << 6,
	F_GROUP = 1 << 7,
	F_DUR = 1 << 8,
	F_OUT_BYTES = 1 << 9,
	F_OUT_SPACE = 1 << 10,
	F_ASYNC = 1 << 11,
	F_OPCODE = 1 << 12,
	F_DTYPE = 1 << 13,
	F_GEMM = 1 << 14,
	F_TRANSPOSE = 1 << 15,
	F_ALIAS = 1 << 16,
	F_DEVICE = 1 << 17,
	F_SYNC = 1 << 18,
};

typedef struct {
	guint32 op;
	Slice name;
} Pending; /* a dep (or alias) naming an op not read yet */

typedef struct {
	LhGraph *g;
	/* Op names -> index: open addressing over the graph's own name strings, looked up by
	 * slice, without a copy. An entry holds the name's hash (high 32 bits) and index + 1 (low
	 * 32 bits, 0 for empty), so that a probe reads the op's name only when the hashes agree. */
	guint64 *tab;
	guint32 tab_mask;
	guint32 n_names;
	const char **name; /* per op: its name in the graph (NUL-terminated) */
	guint32 name_cap;
	char *key; /* scratch: a slice with its NUL */
	gsize key_cap;
	Slice *deps;    /* the current op's deps (n_deps of deps_cap) */
	guint32 *dep_h; /* ... and their hashes */
	guint32 n_deps, deps_cap;
	GArray *pending;       /* of Pending */
	GArray *pending_alias; /* of Pending */
	guint32 n_placed;      /* ops that name a device */
	guint32 n_sync;        /* ops that name a sync */
} Fast;

static const char *cstr(Fast *f, Slice s)
{
	if (s.len + 1 > f->key_cap) {
		f->key_cap = MAX(2 * f->key_cap, s.len + 1);
		f->key = g_realloc(f->key, f->key_cap);
	}
	memcpy(f->key, s.s, s.len);
	f->key[s.len] = 0;
	return f->key;
}

static inline guint32 slice_hash(Slice s)
{
	guint32 h = 2166136261u; /* FNV-1a */
	for (guint32 i = 0; i < s.len; i++)
		h = (h ^ (guchar)s.s[i]) * 16777619u;
	return h;
}

/* Whether the NUL-terminated @nm is the slice @s. A slice has no NUL (str() refuses control
 * characters), so the loop stops at @nm's end at the latest. Inline: names are short, a call
 * to strncmp costs more than the comparison. */
static inline gboolean name_is(const char *nm, Slice s)
{
	guint32 j = 0;
	while (j < s.len && nm[j] == s.s[j])
		j++;
	return j == s.len && nm[j] == 0;
}

/* The index + 1 of the op named @s, whose hash is @h, or 0. */
static guint32 lookup_h(Fast *f, Slice s, guint32 h)
{
	for (guint32 i = h & f->tab_mask;; i = (i + 1) & f->tab_mask) {
		guint64 v = f->tab[i];
		if (!v)
			return 0;
		if ((guint32)(v >> 32) == h) {
			const char *nm = f->name[(guint32)v - 1];
			if (name_is(nm, s))
				return (guint32)v;
		}
	}
}

static guint32 lookup(Fast *f, Slice s)
{
	return lookup_h(f, s, slice_hash(s));
}

/* Starts loading the table slot of hash @h: at 10^6 ops the table (16 MB) is read at random,
 * and an op's lookups (its name, its deps) wait at its end for slots requested while the rest
 * of it was read. */
static inline void prefetch_slot(Fast *f, guint32 h)
{
#if defined(__GNUC__) || defined(__clang__)
	__builtin_prefetch(&f->tab[h & f->tab_mask]);
#else
	(void)f;
	(void)h;
#endif
}

static inline void tab_put(Fast *f, guint32 idx, guint32 h)
{
	guint32 i = h & f->tab_mask;
	while (f->tab[i])
		i = (i + 1) & f->tab_mask;
	f->tab[i] = (guint64)h << 32 | (idx + 1);
}

/* Adds op @idx's name (not there yet) with hash @h. */
static void name_add(Fast *f, guint32 idx, const char *name, guint32 h)
{
	if (idx >= f->name_cap) {
		f->name_cap = MAX(2 * f->name_cap, 1024);
		f->name = g_renew(const char *, f->name, f->name_cap);
	}
	f->name[idx] = name;
	if (2 * (f->n_names + 1) > f->tab_mask + 1) { /* at most half full */
		guint32 size = 2 * (f->tab_mask + 1);
		guint64 *old = f->tab;
		f->tab = g_new0(guint64, size);
		f->tab_mask = size - 1;
		for (guint32 k = 0; k <= f->tab_mask / 2; k++)
			if (old[k])
				tab_put(f, (guint32)old[k] - 1, (guint32)(old[k] >> 32));
		g_free(old);
	}
	tab_put(f, idx, h);
	f->n_names++;
}

/* The kind named @s, as lh_op_kind_from_name() finds it. */
static gboolean kind_from_slice(Slice s, LhOpKind *out)
{
	for (int k = 0; k < LH_OP_N_KINDS; k++) {
		if (name_is(lh_op_kind_name(k), s)) {
			*out = k;
			return TRUE;
		}
	}
	return FALSE;
}

/* In read_op: whether the key at q (after its opening quote, @left bytes to the end) is @key;
 * if so, reads it and the colon after it. */
#define KEY(key)                                                                                   \
	(left >= sizeof(key) && memcmp(q, key "\"", sizeof(key)) == 0 &&                           \
	 (r->p = q + sizeof(key), lit(r, ':')))

static gboolean read_op(Fast *f, Rd *r, guint32 idx)
{
	if (!lit(r, '{'))
		return FALSE;
	guint32 seen = 0;
	Slice name = {0}, kind_s = {0}, out_space = {0}, opcode = {0}, dtype_s = {0}, alias = {0};
	Slice sync = {0};
	double flops = 0, bytes = 0, sm = 1, size = 0, group = 1, dur = -1, out_bytes = 0,
	       device = 0;
	gboolean async = FALSE, transpose = FALSE;
	gint64 gemm[4] = {0, 0, 0, 0};
	guint32 nh = 0; /* the name's hash */
	f->n_deps = 0;
	if (!lit(r, '}')) {
		do {
			/* The key, matched in place (with its closing quote and the colon) rather
			 * than scanned as a string and then compared: any other key, or anything
			 * that is not a plain string, is one the fast path gives up on either way.
			 */
			ws(r);
			if (r->p >= r->end || *r->p != '"')
				return FALSE;
			const char *q = r->p + 1;
			gsize left = (gsize)(r->end - q);
			guint32 bit;
			gboolean ok;
			switch (left ? *q : 0) {
			case 'n':
				ok = KEY("name") && str(r, &name);
				if (ok) /* the table slot it is looked up in at the end of the op */
					prefetch_slot(f, nh = slice_hash(name));
				bit = F_NAME;
				break;
			case 'k':
				ok = KEY("kind") && str(r, &kind_s);
				bit = F_KIND;
				break;
			case 'd':
				if (KEY("deps")) {
					bit = F_DEPS;
					ok = lit(r, '[');
					if (ok && !lit(r, ']')) {
						do {
							Slice d;
							if (!(ok = str(r, &d)))
								break;
							if (f->n_deps == f->deps_cap) {
								f->deps_cap =
								    MAX(2 * f->deps_cap, 16);
								f->deps = g_renew(Slice, f->deps,
								                  f->deps_cap);
								f->dep_h = g_renew(
								    guint32, f->dep_h, f->deps_cap);
							}
							f->dep_h[f->n_deps] = slice_hash(d);
							prefetch_slot(f, f->dep_h[f->n_deps]);
							f->deps[f->n_deps++] = d;
						} while (lit(r, ','));
						ok = ok && lit(r, ']');
					}
				} else if (KEY("duration_ns")) {
					bit = F_DUR;
					ok = field_num(r, TRUE, MAX_DURATION, &dur);
				} else if (KEY("device")) {
					bit = F_DEVICE;
					ok = field_num(r, TRUE, LH_JSON_MAX_DEVICE, &device);
				} else {
					bit = F_DTYPE;
					ok = KEY("dtype") && str(r, &dtype_s);
				}
				break;
			case 'f':
				bit = F_FLOPS;
				ok = KEY("flops") && field_num(r, FALSE, MAX_FLOPS, &flops);
				break;
			case 'b':
				bit = F_BYTES;
				ok = KEY("bytes") && field_num(r, FALSE, MAX_BYTES, &bytes);
				break;
			case 's':
				if (KEY("sm")) {
					bit = F_SM;
					ok = field_num(r, FALSE, G_MAXDOUBLE, &sm) && sm > 0 &&
					     sm <= 1;
				} else if (KEY("sync")) {
					bit = F_SYNC;
					ok = str(r, &sync) && sync.len > 0;
				} else {
					bit = F_SIZE;
					ok = KEY("size") && field_num(r, TRUE, MAX_INT, &size);
				}
				break;
			case 'g':
				if (KEY("group")) {
					bit = F_GROUP;
					ok = field_num(r, TRUE, MAX_INT, &group) && group >= 1 &&
					     group <= 1e6;
				} else {
					bit = F_GEMM;
					ok = KEY("gemm") && lit(r, '[');
					for (int j = 0; ok && j < 4; j++) {
						double v;
						gboolean in;
						ok = (j == 0 || lit(r, ',')) &&
						     num(r, &v, &in, &gemm[j]) && in &&
						     gemm[j] >= 1 &&
						     gemm[j] <= (j ? (gint64)1 << 40
						                   : (gint64)G_MAXUINT32);
					}
					ok = ok && lit(r, ']');
				}
				break;
			case 'o':
				if (KEY("out_bytes")) {
					bit = F_OUT_BYTES;
					ok = field_num(r, TRUE, MAX_INT, &out_bytes);
				} else if (KEY("out_space")) {
					bit = F_OUT_SPACE;
					ok = str(r, &out_space) && (slice_is(out_space, "device") ||
					                            slice_is(out_space, "host"));
				} else {
					bit = F_OPCODE;
					ok = KEY("opcode") && str(r, &opcode);
				}
				break;
			case 'a':
				if (KEY("async")) {
					bit = F_ASYNC;
					ok = boolean(r, &async);
				} else {
					bit = F_ALIAS;
					ok = KEY("alias") && str(r, &alias);
				}
				break;
			case 't':
				bit = F_TRANSPOSE;
				ok = KEY("transpose") && boolean(r, &transpose);
				break;
			default:
				return FALSE;
			}
			if (!ok || (seen & bit))
				return FALSE;
			seen |= bit;
		} while (lit(r, ','));
		if (!lit(r, '}'))
			return FALSE;
	}
	/* name and kind, as the full reader checks them: no white space in a name (str() has
	 * refused the other white space characters, control characters all). */
	if (!(seen & F_NAME) || !(seen & F_KIND) || name.len == 0 || memchr(name.s, ' ', name.len))
		return FALSE;
	LhOpKind kind;
	if (!kind_from_slice(kind_s, &kind))
		return FALSE;
	if (lookup_h(f, name, nh))
		return FALSE; /* a duplicate name */
	guint32 i = lh__graph_add_op_unique(f->g, name.s, name.len, kind);
	if (i != idx)
		return FALSE;
	LhOp *op = lh_graph_op_mut(f->g, i);
	name_add(f, idx, op->name, nh);
	if (seen & F_FLOPS)
		op->flops = flops;
	if (seen & F_BYTES)
		op->bytes = bytes;
	if (seen & F_SIZE)
		op->size = (guint64)size;
	if (seen & F_OUT_BYTES)
		op->out_bytes = (guint64)out_bytes;
	if (seen & F_DUR)
		op->duration_ns = (gint64)dur;
	if (seen & F_GROUP)
		op->group = (guint32)group;
	if (seen & F_SM)
		op->sm = sm;
	if (seen & F_OUT_SPACE)
		op->out_space = slice_is(out_space, "host") ? LH_SPACE_HOST : LH_SPACE_DEVICE;
	if (seen & F_ASYNC)
		op->async = async;
	if (seen & F_DTYPE) {
		LhDtype d;
		if (!lh_dtype_from_name(cstr(f, dtype_s), &d))
			return FALSE;
		op->dtype = d;
	}
	if (seen & F_GEMM) {
		if (kind != LH_OP_KERNEL)
			return FALSE;
		op->gemm_batch = (guint32)gemm[0];
		op->gemm_m = (guint64)gemm[1];
		op->gemm_n = (guint64)gemm[2];
		op->gemm_k = (guint64)gemm[3];
	}
	if (seen & F_TRANSPOSE) {
		if (transpose && kind != LH_OP_KERNEL && kind != LH_OP_COPY_D2D)
			return FALSE;
		op->transpose = transpose;
	}
	if (seen & F_DEVICE) {
		op->device = (guint32)device;
		f->n_placed++;
	}
	if (seen & F_SYNC) { /* in op order, as the full reader adds them */
		op->sync = 1 + lh_graph_sync_add(f->g, cstr(f, sync));
		f->n_sync++;
	}
	if (seen & F_OPCODE)
		lh_graph_set_opcode(f->g, i, cstr(f, opcode)); /* op is stale after this */
	/* What each kind cannot do without. */
	gboolean has_dur = (seen & F_DUR) != 0;
	if (kind == LH_OP_KERNEL && !(seen & (F_FLOPS | F_BYTES)) && !has_dur)
		return FALSE;
	if ((lh_op_kind_is_copy(kind) || kind == LH_OP_COPY_D2D ||
	     lh_op_kind_is_collective(kind)) &&
	    !(seen & F_SIZE) && !has_dur)
		return FALSE;
	if ((kind == LH_OP_ALL_REDUCE || kind == LH_OP_ALL_GATHER || kind == LH_OP_REDUCE_SCATTER ||
	     kind == LH_OP_ALL_TO_ALL) &&
	    !(seen & F_GROUP) && !has_dur)
		return FALSE;
	/* Deps: names of other ops; an input has none. Those not read yet wait for the end. */
	if (f->n_deps && kind == LH_OP_INPUT)
		return FALSE;
	gboolean alias_in_deps = FALSE;
	for (guint k = 0; k < f->n_deps; k++) {
		Slice d = f->deps[k];
		guint32 dh = f->dep_h[k];
		if (seen & F_ALIAS)
			alias_in_deps |= d.len == alias.len && memcmp(d.s, alias.s, d.len) == 0;
		guint32 di = lookup_h(f, d, dh);
		if (di == idx + 1)
			return FALSE; /* depends on itself */
		if (di) {
			lh_graph_add_dep(f->g, idx, di - 1);
		} else {
			Pending pd = {idx, d};
			g_array_append_val(f->pending, pd);
		}
	}
	if (seen & F_ALIAS) {
		if (!alias_in_deps)
			return FALSE;
		Pending pd = {idx, alias};
		g_array_append_val(f->pending_alias, pd);
	}
	return TRUE;
}

/* The top-level "schedule": names and {"done": NAME}, resolved after the ops. */
static gboolean read_schedule(Rd *r, GArray *sched)
{
	if (!lit(r, '[') || lit(r, ']'))
		return FALSE; /* not an array, or empty */
	do {
		Pending e = {0, {0}};
		ws(r);
		if (r->p < r->end && *r->p == '{') {
			Slice k;
			r->p++;
			if (!str(r, &k) || !slice_is(k, "done") || !lit(r, ':') ||
			    !str(r, &e.name) || !lit(r, '}'))
				return FALSE;
			e.op = LH_SCHED_DONE;
		} else if (!str(r, &e.name)) {
			return FALSE;
		}
		g_array_append_val(sched, e);
	} while (lit(r, ','));
	return lit(r, ']');
}

LhGraph *lh__graph_json_fast(const char *data, gsize len)
{
	Rd r = {data, data + len};
	Fast f = {0};
	f.g = lh_graph_new("graph");
	f.tab = g_new0(guint64, 1024);
	f.tab_mask = 1023;
	f.pending = g_array_new(FALSE, FALSE, sizeof(Pending));
	f.pending_alias = g_array_new(FALSE, FALSE, sizeof(Pending));
	GArray *sched = g_array_new(FALSE, FALSE, sizeof(Pending));
	gboolean ok = FALSE, has_format = FALSE, has_version = FALSE, has_name = FALSE,
	         has_ops = FALSE, has_sched = FALSE, has_devices = FALSE;
	gint64 devices = 0;
	Slice gname = {0};
	if (!lit(&r, '{'))
		goto out;
	if (!lit(&r, '}')) {
		do {
			Slice k;
			if (!str(&r, &k) || !lit(&r, ':'))
				goto out;
			if (slice_is(k, "format")) {
				Slice v;
				if (has_format || !str(&r, &v) || !slice_is(v, "lhsim-graph"))
					goto out;
				has_format = TRUE;
			} else if (slice_is(k, "version")) {
				double v;
				gboolean in;
				gint64 iv;
				if (has_version || !num(&r, &v, &in, &iv) || !in || iv != 1)
					goto out;
				has_version = TRUE;
			} else if (slice_is(k, "name")) {
				if (has_name || !str(&r, &gname))
					goto out;
				has_name = TRUE;
			} else if (slice_is(k, "ops")) {
				if (has_ops || !lit(&r, '['))
					goto out;
				has_ops = TRUE;
				if (!lit(&r, ']')) {
					guint32 idx = 0;
					do {
						if (!read_op(&f, &r, idx++))
							goto out;
					} while (lit(&r, ','));
					if (!lit(&r, ']'))
						goto out;
				}
			} else if (slice_is(k, "schedule")) {
				if (has_sched || !read_schedule(&r, sched))
					goto out;
				has_sched = TRUE;
			} else if (slice_is(k, "devices")) {
				/* As the full reader's: a whole number (an integer literal) from 1
				 * to 10^6. */
				double v;
				gboolean in;
				if (has_devices || !num(&r, &v, &in, &devices) || !in ||
				    devices < 1 || devices > 1000000)
					goto out;
				has_devices = TRUE;
			} else {
				goto out;
			}
		} while (lit(&r, ','));
		if (!lit(&r, '}'))
			goto out;
	}
	ws(&r);
	if (r.p != r.end || !has_format || !has_version || !has_ops)
		goto out;
	/* Deps and aliases that named later ops; then the schedule. */
	for (guint k = 0; k < f.pending->len; k++) {
		Pending *pd = &g_array_index(f.pending, Pending, k);
		guint32 di = lookup(&f, pd->name);
		if (!di || di == pd->op + 1)
			goto out;
		lh_graph_add_dep(f.g, pd->op, di - 1);
	}
	for (guint k = 0; k < f.pending_alias->len; k++) {
		Pending *pd = &g_array_index(f.pending_alias, Pending, k);
		guint32 di = lookup(&f, pd->name);
		if (!di)
			goto out;
		lh_graph_op_mut(f.g, pd->op)->alias = di - 1;
	}
	if (has_devices)
		lh_graph_set_devices(f.g, (guint32)devices);
	/* Placement: all ops or none name a device; a placed graph declares its devices; a sync
	 * needs placement (the full reader says which op breaks which rule). */
	if (f.n_placed) {
		if (f.n_placed != lh_graph_n_ops(f.g) || !has_devices)
			goto out;
		lh_graph_set_placed(f.g, TRUE);
	} else if (f.n_sync) {
		goto out;
	}
	if (has_sched) {
		g_autofree guint32 *seq = g_new(guint32, sched->len);
		for (guint j = 0; j < sched->len; j++) {
			Pending *e = &g_array_index(sched, Pending, j);
			guint32 di = lookup(&f, e->name);
			if (!di)
				goto out;
			seq[j] = ((di - 1) << 1) | e->op;
		}
		lh_graph_set_schedule(f.g, seq, sched->len);
	}
	if (has_name)
		lh_graph_set_name(f.g, cstr(&f, gname));
	ok = lh_graph_finish(f.g, NULL, NULL);
out:
	g_free(f.tab);
	g_free(f.name);
	g_free(f.key);
	g_free(f.deps);
	g_free(f.dep_h);
	g_array_unref(f.pending);
	g_array_unref(f.pending_alias);
	g_array_unref(sched);
	if (!ok) {
		lh_graph_free(f.g);
		return NULL;
	}
	return f.g;
}
