/* lhsim — the hardware model: reading, checking and writing .ini descriptions. */
#include "sim/hw.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The quark's name is a string with dashes, which clang-format would space. */
/* clang-format off */
G_DEFINE_QUARK(lh-hw-error-quark, lh_hw_error)
/* clang-format on */

#define GROUP "hw"

typedef enum { K_DOUBLE, K_UINT } KeyType;

/* Whether a key must be present. Keys added after the first release may be absent, each with
 * the fallback docs/hw-format.md states (the behaviour before the key existed); an old key
 * that a newer one replaced is still read but never written. */
typedef enum { KEY_REQ, KEY_OPT, KEY_OLD } KeyNeed;

/* Every key, its type, where it lives in LhHw and its sane range. Rates have a floor well
 * above 0 (1 MB/s, 1 MFLOP/s): below it durations leave the engine's nanosecond range. */
static const struct {
	const char *key;
	KeyType type;
	gsize offset;
	double min, max;
	gboolean min_open; /* the minimum itself is not allowed (bandwidths, rates) */
	const char *unit;
	KeyNeed need;
} keys[] = {
/* One line per entry, which clang-format would split round the stringized key. */
/* clang-format off */
#define D(k, lo, hi, open, unit) {#k, K_DOUBLE, G_STRUCT_OFFSET(LhHw, k), lo, hi, open, unit, KEY_REQ}
#define U(k, lo, hi, unit) {#k, K_UINT, G_STRUCT_OFFSET(LhHw, k), lo, hi, FALSE, unit, KEY_REQ}
#define DO(k, lo, hi, unit, need) {#k, K_DOUBLE, G_STRUCT_OFFSET(LhHw, k), lo, hi, FALSE, unit, need}
#define UO(k, lo, hi, unit) {#k, K_UINT, G_STRUCT_OFFSET(LhHw, k), lo, hi, FALSE, unit, KEY_OPT}
    /* clang-format on */
    U(sm_count, 1, 100000, "SMs"),
    D(peak_tflops, 1e-6, 1e6, FALSE, "TFLOP/s"),
    DO(peak_f64_tflops, 1e-6, 1e6, "TFLOP/s", KEY_OPT),
    DO(peak_f32_tflops, 1e-6, 1e6, "TFLOP/s", KEY_OPT),
    DO(peak_tf32_tflops, 1e-6, 1e6, "TFLOP/s", KEY_OPT),
    DO(peak_fp8_tflops, 1e-6, 1e6, "TFLOP/s", KEY_OPT),
    DO(peak_int8_tops, 1e-6, 1e6, "TOP/s", KEY_OPT),
    D(compute_eff, 1e-3, 1, FALSE, "fraction"),
    DO(gemm_eff, 1e-3, 1, "fraction", KEY_OPT),
    UO(gemm_tile_m, 1, 65536, "rows"),
    UO(gemm_tile_n, 1, 65536, "columns"),
    UO(gemm_tile_k_bytes, 1, 65536, "bytes"),
    D(hbm_gbs, 1e-3, 1e6, FALSE, "GB/s"),
    D(hbm_eff, 1e-3, 1, FALSE, "fraction"),
    DO(hbm_transpose_eff, 1e-3, 1, "fraction", KEY_OPT),
    D(memory_gib, 1e-9, 1e6, FALSE, "GiB"),
    D(kernel_overhead_ns, 0, 1e9, FALSE, "ns"),
    D(launch_ns, 0, 1e9, FALSE, "ns"),
    D(event_ns, 0, 1e9, FALSE, "ns"),
    U(hw_queues, 1, 1024, "queues"),
    U(max_resident_kernels, 1, 1000000, "kernels"),
    U(copy_engines_h2d, 1, 64, "engines"),
    U(copy_engines_d2h, 1, 64, "engines"),
    D(pcie_gbs, 1e-3, 1e6, FALSE, "GB/s"),
    DO(pcie_duplex_gbs, 1e-3, 1e6, "GB/s", KEY_OLD),
    DO(pcie_duplex_h2d_gbs, 1e-3, 1e6, "GB/s", KEY_OPT),
    DO(pcie_duplex_d2h_gbs, 1e-3, 1e6, "GB/s", KEY_OPT),
    D(copy_latency_ns, 0, 1e9, FALSE, "ns"),
    D(link_gbs, 1e-3, 1e6, FALSE, "GB/s"),
    D(link_latency_ns, 0, 1e9, FALSE, "ns"),
    D(collective_sm, 1e-3, 1, FALSE, "fraction"),
    DO(step_overhead_ns, 0, 1e9, "ns", KEY_OPT),
    /* The cluster. The network's upper bound, 10 TB/s per GPU, is ten times the fastest NIC
     * bandwidth any GPU has (8 x 800 Gb/s ConnectX-8 per 8-GPU node is 100 GB/s per GPU):
     * more is a unit mistake (Gb/s for GB/s, or a node's total given per GPU many times). */
    UO(gpus_per_node, 1, 1000000, "GPUs"),
    {"nvlink_busbw_gbs", K_DOUBLE, G_STRUCT_OFFSET(LhHw, nvlink_busbw_gbs), 1e-3, 1e5, TRUE, "GB/s",
     KEY_OPT},
    {"net_gbs", K_DOUBLE, G_STRUCT_OFFSET(LhHw, net_gbs), 1e-3, 1e4, TRUE, "GB/s", KEY_OPT},
    DO(coll_base_latency_ns, 0, 1e9, "ns", KEY_OPT),
    DO(nvlink_latency_ns, 0, 1e9, "ns", KEY_OPT),
    DO(net_latency_ns, 0, 1e9, "ns", KEY_OPT),
#undef D
#undef U
#undef DO
#undef UO
};

/* Keys that come all together or not at all (docs/hw-format.md). */
static const char *const peak_group[] = {"peak_f64_tflops", "peak_f32_tflops", "peak_tf32_tflops",
                                         "peak_fp8_tflops", "peak_int8_tops",  NULL};
static const char *const gemm_group[] = {"gemm_eff", "gemm_tile_m", "gemm_tile_n",
                                         "gemm_tile_k_bytes", NULL};
static const char *const cluster_group[] = {
    "gpus_per_node",     "nvlink_busbw_gbs", "net_gbs", "coll_base_latency_ns",
    "nvlink_latency_ns", "net_latency_ns",   NULL};

static gsize key_index(const char *key)
{
	for (gsize i = 0; i < G_N_ELEMENTS(keys); i++)
		if (strcmp(keys[i].key, key) == 0)
			return i;
	g_assert_not_reached();
}

static gboolean in_group(const char *const *group, const char *key)
{
	for (; *group; group++)
		if (strcmp(*group, key) == 0)
			return TRUE;
	return FALSE;
}

/* Fills the fields left 0 with their fallbacks (not the GEMM model: 0 there means none). */
static void fill_fallbacks(LhHw *hw)
{
	double *peaks[] = {&hw->peak_f64_tflops, &hw->peak_f32_tflops, &hw->peak_tf32_tflops,
	                   &hw->peak_fp8_tflops, &hw->peak_int8_tops};
	for (gsize i = 0; i < G_N_ELEMENTS(peaks); i++)
		if (*peaks[i] <= 0)
			*peaks[i] = hw->peak_tflops;
	if (hw->hbm_transpose_eff <= 0)
		hw->hbm_transpose_eff = hw->hbm_eff;
	if (hw->pcie_duplex_h2d_gbs <= 0)
		hw->pcie_duplex_h2d_gbs = hw->pcie_duplex_gbs;
	if (hw->pcie_duplex_d2h_gbs <= 0)
		hw->pcie_duplex_d2h_gbs = hw->pcie_duplex_gbs;
}

double lh_hw_peak_tflops(const LhHw *hw, LhDtype dtype)
{
	double p = 0;
	switch (dtype) {
	case LH_DTYPE_F64:
		p = hw->peak_f64_tflops;
		break;
	case LH_DTYPE_F32:
		p = hw->peak_f32_tflops;
		break;
	case LH_DTYPE_TF32:
		p = hw->peak_tf32_tflops;
		break;
	case LH_DTYPE_FP8:
		p = hw->peak_fp8_tflops;
		break;
	case LH_DTYPE_INT8:
		p = hw->peak_int8_tops;
		break;
	default: /* NONE, BF16, F16 */
		break;
	}
	return p > 0 ? p : hw->peak_tflops;
}

double lh_hw_duplex_gbs(const LhHw *hw, gboolean d2h)
{
	double v = d2h ? hw->pcie_duplex_d2h_gbs : hw->pcie_duplex_h2d_gbs;
	return v > 0 ? v : hw->pcie_duplex_gbs;
}

double lh_hw_transpose_eff(const LhHw *hw)
{
	return hw->hbm_transpose_eff > 0 ? hw->hbm_transpose_eff : hw->hbm_eff;
}

/* 1-based line of "key =" in @data, or 0. GKeyFile does not keep positions. */
static int key_line(const char *data, const char *key)
{
	if (!data)
		return 0;
	int line = 1;
	gsize kl = strlen(key);
	for (const char *p = data; *p; line++) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncmp(p, key, kl) == 0) {
			const char *q = p + kl;
			while (*q == ' ' || *q == '\t')
				q++;
			if (*q == '=')
				return line;
		}
		p = strchr(p, '\n');
		if (!p)
			break;
		p++;
	}
	return 0;
}

static void set_err(GError **error, int code, const char *where, const char *data, const char *key,
                    const char *fmt, ...) G_GNUC_PRINTF(6, 7);

static void set_err(GError **error, int code, const char *where, const char *data, const char *key,
                    const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	int line = key ? key_line(data, key) : 0;
	if (line)
		g_set_error(error, LH_HW_ERROR, code, "%s:%d:1: %s", where, line, msg);
	else
		g_set_error(error, LH_HW_ERROR, code, "%s: %s", where, msg);
}

/* Whether @s is a plain decimal number: [+-]digits[.digits][(e|E)[+-]digits], or starting
 * with the point. g_ascii_strtod also takes hex, "inf" and "nan"; an .ini of lhsim does not. */
static gboolean is_decimal(const char *s)
{
	if (*s == '+' || *s == '-')
		s++;
	gboolean digits = FALSE;
	while (g_ascii_isdigit(*s))
		s++, digits = TRUE;
	if (*s == '.')
		for (s++; g_ascii_isdigit(*s); s++)
			digits = TRUE;
	if (!digits)
		return FALSE;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!g_ascii_isdigit(*s))
			return FALSE;
		while (g_ascii_isdigit(*s))
			s++;
	}
	return *s == 0;
}

static gboolean known_key(const char *k)
{
	if (strcmp(k, "name") == 0 || strcmp(k, "sm_sharing") == 0)
		return TRUE;
	for (gsize i = 0; i < G_N_ELEMENTS(keys); i++)
		if (strcmp(k, keys[i].key) == 0)
			return TRUE;
	return FALSE;
}

/* What GKeyFile accepts without a word: a key given twice in [hw] (the last wins), a key
 * nobody reads (a typo), NUL bytes. Checked on the text, which has the positions, as are the
 * lines GKeyFile rejects without one (not a group, a comment or key=value; a key before any
 * group). Sets *@hw_line to the line of the first [hw], or 0. */
static gboolean scan_keys(const char *data, gsize len, const char *where, guint *hw_line,
                          GError **error)
{
	g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	gboolean in_hw = FALSE, in_group = FALSE;
	*hw_line = 0;
	guint line = 1;
	for (const char *p = data, *end = data + len; p < end; line++) {
		const char *eol = memchr(p, '\n', end - p);
		if (!eol)
			eol = end;
		const char *nul = memchr(p, 0, eol - p);
		if (nul) {
			g_set_error(error, LH_HW_ERROR, LH_HW_ERROR_PARSE,
			            "%s:%u:%u: a NUL byte: an .ini file is text", where, line,
			            (guint)(nul - p) + 1);
			return FALSE;
		}
		const char *k = p;
		while (k < eol && (*k == ' ' || *k == '\t'))
			k++;
		const char *eq = memchr(k, '=', eol - k);
		gboolean blank = k == eol || (k + 1 == eol && *k == '\r');
		if (!blank && *k != '#' && *k != '[' && (!eq || !in_group)) {
			g_autofree char *l = g_strndup(k, MIN(eol - k, 40));
			g_set_error(error, LH_HW_ERROR, LH_HW_ERROR_PARSE, "%s:%u:%u: '%s' is %s",
			            where, line, (guint)(k - p) + 1, l,
			            eq ? "outside a group (the file starts with [" GROUP "])"
			               : "not 'key = value', a [group] or a # comment");
			return FALSE;
		}
		if (!blank && *k == '[') {
			const char *close = memchr(k, ']', eol - k);
			in_group = TRUE;
			in_hw = close && close - k - 1 == (int)strlen(GROUP) &&
			        strncmp(k + 1, GROUP, strlen(GROUP)) == 0;
			if (in_hw && !*hw_line)
				*hw_line = line;
		} else if (in_hw && !blank && *k != '#' && eq) {
			const char *ke = eq;
			while (ke > k && (ke[-1] == ' ' || ke[-1] == '\t'))
				ke--;
			g_autofree char *key = g_strndup(k, ke - k);
			guint col = (guint)(k - p) + 1;
			if (!known_key(key)) {
				GString *list = g_string_new("name");
				for (gsize i = 0; i < G_N_ELEMENTS(keys); i++)
					g_string_append_printf(list, ", %s", keys[i].key);
				g_string_append(list, ", sm_sharing");
				g_set_error(error, LH_HW_ERROR, LH_HW_ERROR_PARSE,
				            "%s:%u:%u: unknown key '%s' in [" GROUP "] (keys: %s)",
				            where, line, col, key, list->str);
				g_string_free(list, TRUE);
				return FALSE;
			}
			guint first = GPOINTER_TO_UINT(g_hash_table_lookup(seen, key));
			if (first) {
				g_set_error(error, LH_HW_ERROR, LH_HW_ERROR_PARSE,
				            "%s:%u:%u: key '%s' is given twice (first on line %u)",
				            where, line, col, key, first);
				return FALSE;
			}
			g_hash_table_insert(seen, g_steal_pointer(&key), GUINT_TO_POINTER(line));
		}
		p = eol + 1;
	}
	return TRUE;
}

static void range_err(gsize i, double v, const char *where, const char *data, GError **error)
{
	set_err(error, LH_HW_ERROR_RANGE, where, data, keys[i].key,
	        "key '%s' = %g is out of range: it must be %s %g and <= %g %s", keys[i].key, v,
	        keys[i].min_open ? ">" : ">=", keys[i].min, keys[i].max, keys[i].unit);
}

/* @given: whether the key was present (file), or NULL to check a set value (an optional key
 * left 0 in a struct is not given). */
static gboolean check_value(const LhHw *hw, gsize i, const char *where, const char *data,
                            const gboolean *given, GError **error)
{
	double v = keys[i].type == K_UINT ? (double)G_STRUCT_MEMBER(guint32, hw, keys[i].offset)
	                                  : G_STRUCT_MEMBER(double, hw, keys[i].offset);
	if (keys[i].need != KEY_REQ && (given ? !given[i] : v == 0))
		return TRUE;

	gboolean low = keys[i].min_open ? v <= keys[i].min : v < keys[i].min;
	if (!isfinite(v) || low || v > keys[i].max) {
		range_err(i, v, where, data, error);
		return FALSE;
	}
	return TRUE;
}

static gboolean validate(const LhHw *hw, const char *where, const char *data, const gboolean *given,
                         GError **error)
{
	for (gsize i = 0; i < G_N_ELEMENTS(keys); i++)
		if (!check_value(hw, i, where, data, given, error))
			return FALSE;
	for (int d2h = 0; d2h < 2; d2h++) {
		/* Name the key the description used: the old single one, or this direction's. */
		double own = d2h ? hw->pcie_duplex_d2h_gbs : hw->pcie_duplex_h2d_gbs;
		gboolean old = given ? given[key_index("pcie_duplex_gbs")] : !(own > 0);
		const char *key = old   ? "pcie_duplex_gbs"
		                  : d2h ? "pcie_duplex_d2h_gbs"
		                        : "pcie_duplex_h2d_gbs";
		double v = lh_hw_duplex_gbs(hw, d2h);
		if (!(v > 0)) {
			set_err(error, LH_HW_ERROR_MISSING, where, data, NULL,
			        "missing key '%s' (GB/s): the %s rate while the other direction "
			        "also runs",
			        d2h ? "pcie_duplex_d2h_gbs" : "pcie_duplex_h2d_gbs",
			        d2h ? "device-to-host" : "host-to-device");
			return FALSE;
		}
		if (v > hw->pcie_gbs) {
			set_err(error, LH_HW_ERROR_RANGE, where, data, key,
			        "key '%s' = %g GB/s exceeds pcie_gbs = %g GB/s: a direction "
			        "cannot get faster when the other one also runs",
			        key, v, hw->pcie_gbs);
			return FALSE;
		}
	}
	if (hw->hbm_transpose_eff > hw->hbm_eff) {
		set_err(error, LH_HW_ERROR_RANGE, where, data, "hbm_transpose_eff",
		        "key 'hbm_transpose_eff' = %g exceeds hbm_eff = %g: traffic that moves the "
		        "minor dimension cannot stream faster than contiguous traffic",
		        hw->hbm_transpose_eff, hw->hbm_eff);
		return FALSE;
	}
	if (hw->gpus_per_node && (!(hw->nvlink_busbw_gbs > 0) || !(hw->net_gbs > 0))) {
		set_err(error, LH_HW_ERROR_RANGE, where, data, NULL,
		        "a cluster (gpus_per_node) needs nvlink_busbw_gbs and net_gbs > 0");
		return FALSE;
	}
	if (hw->gemm_eff > 0 && (!hw->gemm_tile_m || !hw->gemm_tile_n || !hw->gemm_tile_k_bytes)) {
		set_err(error, LH_HW_ERROR_RANGE, where, data, NULL,
		        "the GEMM model needs gemm_tile_m, gemm_tile_n and gemm_tile_k_bytes >= 1 "
		        "with gemm_eff");
		return FALSE;
	}
	return TRUE;
}

/* The all-or-nothing groups and the duplex keys, old or new form; then the fallbacks. */
static gboolean resolve_optional(LhHw *hw, const gboolean *given, const char *where,
                                 const char *data, GError **error)
{
	const char *const *groups[] = {peak_group, gemm_group, cluster_group};
	const char *why[] = {"any per-dtype peak", "any GEMM model key", "any cluster key"};
	for (gsize g = 0; g < G_N_ELEMENTS(groups); g++) {
		guint n = 0, have = 0;
		const char *missing = NULL, *present = NULL;
		for (const char *const *k = groups[g]; *k; k++, n++) {
			if (given[key_index(*k)]) {
				have++;
				present = present ? present : *k;
			} else
				missing = missing ? missing : *k;
		}
		if (have && have < n) {
			g_autofree char *all = g_strjoinv(", ", (char **)groups[g]);
			set_err(error, LH_HW_ERROR_MISSING, where, data, present,
			        "missing key '%s' (%s) in [" GROUP "]: a description that gives %s "
			        "('%s') must give all of %s (docs/hw-format.md)",
			        missing, keys[key_index(missing)].unit, why[g], present, all);
			return FALSE;
		}
	}
	gboolean old = given[key_index("pcie_duplex_gbs")];
	gboolean h2d = given[key_index("pcie_duplex_h2d_gbs")];
	gboolean d2h = given[key_index("pcie_duplex_d2h_gbs")];
	if (old && (h2d || d2h)) {
		set_err(error, LH_HW_ERROR_PARSE, where, data, "pcie_duplex_gbs",
		        "key 'pcie_duplex_gbs' is the old form of pcie_duplex_h2d_gbs and "
		        "pcie_duplex_d2h_gbs: give either it or those two, not both");
		return FALSE;
	}
	if (!old && h2d != d2h) {
		const char *m = h2d ? "pcie_duplex_d2h_gbs" : "pcie_duplex_h2d_gbs";
		set_err(error, LH_HW_ERROR_MISSING, where, data,
		        h2d ? "pcie_duplex_h2d_gbs" : "pcie_duplex_d2h_gbs",
		        "missing key '%s' (GB/s) in [" GROUP "]: the duplex rate is given per "
		        "direction, pcie_duplex_h2d_gbs and pcie_duplex_d2h_gbs",
		        m);
		return FALSE;
	}
	if (!old && !h2d) {
		set_err(error, LH_HW_ERROR_MISSING, where, NULL, NULL,
		        "missing key 'pcie_duplex_h2d_gbs' (GB/s) in [" GROUP "]: give "
		        "pcie_duplex_h2d_gbs and pcie_duplex_d2h_gbs (or the old pcie_duplex_gbs "
		        "for both directions)");
		return FALSE;
	}
	fill_fallbacks(hw);
	return TRUE;
}

gboolean lh_hw_validate(const LhHw *hw, const char *where, GError **error)
{
	return validate(hw, where ? where : "hw", NULL, NULL, error);
}

LhHw *lh_hw_new_from_data(const char *data, gsize len, const char *where, GError **error)
{
	g_return_val_if_fail(data != NULL, NULL);
	where = where ? where : "hw";
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GError) e = NULL;
	guint hw_line; /* where [hw] starts: missing keys are reported there */
	if (!scan_keys(data, len, where, &hw_line, error))
		return NULL;
	if (!g_key_file_load_from_data(kf, data, len, G_KEY_FILE_NONE, &e)) {
		g_set_error(error, LH_HW_ERROR, LH_HW_ERROR_PARSE, "%s: not a valid .ini file: %s",
		            where, e->message);
		return NULL;
	}
	if (!g_key_file_has_group(kf, GROUP) || !hw_line) {
		g_set_error(error, LH_HW_ERROR, LH_HW_ERROR_MISSING, "%s:1:1: no [" GROUP "] group",
		            where);
		return NULL;
	}
	g_autofree char *text = g_strndup(data, len);
	g_autoptr(LhHw) hw = g_new0(LhHw, 1);
	/* The name is taken as written (no GKeyFile escapes), so that lh_hw_to_data writes it
	 * back unchanged. */
	hw->name = g_key_file_get_value(kf, GROUP, "name", NULL);
	if (hw->name) {
		g_strstrip(hw->name);
		for (const char *c = hw->name; *c; c++)
			if (*c == '\\' || (guchar)*c < 0x20 || *c == 0x7f) {
				set_err(error, LH_HW_ERROR_PARSE, where, text, "name",
				        "key 'name': '%s' must be plain text, without backslash "
				        "escapes or control characters",
				        hw->name);
				return NULL;
			}
		if (!*hw->name) {
			set_err(error, LH_HW_ERROR_PARSE, where, text, "name",
			        "key 'name' is empty (leave it out to use the file's name)");
			return NULL;
		}
	} else {
		hw->name = g_path_get_basename(where);
	}
	gboolean given[G_N_ELEMENTS(keys)] = {0};
	for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) {
		g_autofree char *s = g_key_file_get_value(kf, GROUP, keys[i].key, NULL);
		if (!s && keys[i].need != KEY_REQ)
			continue; /* resolve_optional() says what absence means */
		if (!s) {
			g_set_error(error, LH_HW_ERROR, LH_HW_ERROR_MISSING,
			            "%s:%u:1: missing key '%s' (%s) in [" GROUP "]", where, hw_line,
			            keys[i].key, keys[i].unit);
			return NULL;
		}
		g_strstrip(s);
		char *end = NULL;
		double v = g_ascii_strtod(s, &end);
		if (end == s || *end || !is_decimal(s)) {
			set_err(error, LH_HW_ERROR_PARSE, where, text, keys[i].key,
			        "key '%s': '%s' is not a number", keys[i].key, s);
			return NULL;
		}
		if (keys[i].type == K_UINT) {
			if (v != floor(v)) {
				set_err(error, LH_HW_ERROR_RANGE, where, text, keys[i].key,
				        "key '%s': '%s' must be a whole number", keys[i].key, s);
				return NULL;
			}
			if (v < keys[i].min || v > keys[i].max) {
				range_err(i, v, where, text, error);
				return NULL;
			}
			G_STRUCT_MEMBER(guint32, hw, keys[i].offset) = (guint32)v;
		} else {
			G_STRUCT_MEMBER(double, hw, keys[i].offset) = v;
		}
		given[i] = TRUE;
	}
	g_autofree char *sh = g_key_file_get_string(kf, GROUP, "sm_sharing", NULL);
	if (!sh) {
		g_set_error(error, LH_HW_ERROR, LH_HW_ERROR_MISSING,
		            "%s:%u:1: missing key 'sm_sharing' (fifo or fair) in [" GROUP "]",
		            where, hw_line);
		return NULL;
	}
	g_strstrip(sh);
	if (strcmp(sh, "fifo") == 0)
		hw->sm_sharing = LH_SHARING_FIFO;
	else if (strcmp(sh, "fair") == 0)
		hw->sm_sharing = LH_SHARING_FAIR;
	else {
		set_err(error, LH_HW_ERROR_RANGE, where, text, "sm_sharing",
		        "key 'sm_sharing': '%s' is not one of fifo, fair", sh);
		return NULL;
	}
	/* Ranges of what the file says first, so that an explicit 0 is an error, not absence. */
	for (gsize i = 0; i < G_N_ELEMENTS(keys); i++)
		if (!check_value(hw, i, where, text, given, error))
			return NULL;
	if (!resolve_optional(hw, given, where, text, error))
		return NULL;
	if (!validate(hw, where, text, given, error))
		return NULL;
	return g_steal_pointer(&hw);
}

LhHw *lh_hw_new_from_file(const char *path, GError **error)
{
	g_autofree char *data = NULL;
	gsize len = 0;
	g_autoptr(GError) e = NULL;
	if (!g_file_get_contents(path, &data, &len, &e)) {
		g_set_error(error, LH_HW_ERROR, LH_HW_ERROR_NOT_FOUND, "%s", e->message);
		return NULL;
	}
	return lh_hw_new_from_data(data, len, path, error);
}

static int strptr_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static GMutex builtin_lock;
static GHashTable *builtins; /* name -> static data */

/* Set by the models module when the library loads (models/models.c): registers the built-in
 * descriptions on first use, so that lh_hw_lookup("h100-sxm") works without an explicit
 * lh_models_init(). Called outside builtin_lock, since it registers under it. */
static void (*builtin_loader)(void);

void lh_hw_set_builtin_loader(void (*load)(void))
{
	builtin_loader = load;
}

static void load_builtins(void)
{
	if (builtin_loader)
		builtin_loader();
}

void lh_hw_register_builtin(const char *name, const char *data)
{
	g_mutex_lock(&builtin_lock);
	if (!builtins)
		builtins = g_hash_table_new(g_str_hash, g_str_equal);
	g_hash_table_insert(builtins, (gpointer)name, (gpointer)data);
	g_mutex_unlock(&builtin_lock);
}

const char *lh_hw_builtin_data(const char *name)
{
	load_builtins();
	g_mutex_lock(&builtin_lock);
	const char *d = builtins ? g_hash_table_lookup(builtins, name) : NULL;
	g_mutex_unlock(&builtin_lock);
	return d;
}

const char **lh_hw_builtin_names(void)
{
	load_builtins();
	g_mutex_lock(&builtin_lock);
	guint n = 0;
	const char **names = builtins ? (const char **)g_hash_table_get_keys_as_array(builtins, &n)
	                              : g_new0(const char *, 1);
	g_mutex_unlock(&builtin_lock);
	qsort(names, n, sizeof(char *), strptr_cmp);
	return names;
}

LhHw *lh_hw_lookup(const char *name, GError **error)
{
	const char *data = lh_hw_builtin_data(name);
	if (data) {
		g_autofree char *where = g_strdup_printf("%s.ini", name);
		return lh_hw_new_from_data(data, strlen(data), where, error);
	}
	if (g_file_test(name, G_FILE_TEST_EXISTS))
		return lh_hw_new_from_file(name, error);
	g_autofree const char **names = lh_hw_builtin_names();
	g_autofree char *list = g_strjoinv(", ", (char **)names);
	g_set_error(error, LH_HW_ERROR, LH_HW_ERROR_NOT_FOUND,
	            "%s: no such hardware description (built-ins: %s; or give an .ini path)", name,
	            list);
	return NULL;
}

LhHw *lh_hw_copy(const LhHw *hw)
{
	LhHw *c = g_memdup2(hw, sizeof *hw);
	c->name = g_strdup(hw->name);
	return c;
}

void lh_hw_free(LhHw *hw)
{
	if (!hw)
		return;
	g_free(hw->name);
	g_free(hw);
}

char *lh_hw_to_data(const LhHw *hw)
{
	/* Effective values: a field left 0 is written as its fallback, so that the text states
	 * every number it stands for; the GEMM model is written only when there is one. */
	LhHw e = *hw;
	fill_fallbacks(&e);
	GString *s = g_string_new("[" GROUP "]\n");
	g_string_append_printf(s, "name = %s\n", hw->name ? hw->name : "hw");
	for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) {
		char buf[G_ASCII_DTOSTR_BUF_SIZE];
		if (keys[i].need == KEY_OLD ||
		    (e.gemm_eff <= 0 && in_group(gemm_group, keys[i].key)) ||
		    (!e.gpus_per_node && in_group(cluster_group, keys[i].key)))
			continue;
		if (keys[i].type == K_UINT)
			g_string_append_printf(s, "%s = %u\n", keys[i].key,
			                       G_STRUCT_MEMBER(guint32, &e, keys[i].offset));
		else
			g_string_append_printf(
			    s, "%s = %s\n", keys[i].key,
			    g_ascii_dtostr(buf, sizeof buf,
			                   G_STRUCT_MEMBER(double, &e, keys[i].offset)));
	}
	g_string_append_printf(s, "sm_sharing = %s\n", lh_sm_sharing_name(hw->sm_sharing));
	return g_string_free(s, FALSE);
}

double lh_hw_get(const LhHw *hw, const char *key)
{
	g_return_val_if_fail(hw != NULL && key != NULL, NAN);
	if (!strcmp(key, "sm_sharing"))
		return hw->sm_sharing == LH_SHARING_FAIR ? 1 : 0;
	for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) {
		if (strcmp(keys[i].key, key) != 0)
			continue;
		const char *at = (const char *)hw + keys[i].offset;
		if (keys[i].type == K_UINT)
			return *(const guint32 *)(const void *)at;
		return *(const double *)(const void *)at;
	}
	return NAN;
}

const char *lh_hw_name(const LhHw *hw)
{
	g_return_val_if_fail(hw != NULL, NULL);
	return hw->name;
}

const char *lh_sm_sharing_name(LhSmSharing s)
{
	return s == LH_SHARING_FAIR ? "fair" : "fifo";
}

const char *const *lh_hw_key_names(void)
{
	static const char *names[G_N_ELEMENTS(keys) + 2];
	static gsize done;
	if (g_once_init_enter(&done)) {
		gsize n = 0;
		for (gsize i = 0; i < G_N_ELEMENTS(keys); i++)
			if (keys[i].need != KEY_OLD)
				names[n++] = keys[i].key;
		names[n++] = "sm_sharing";
		names[n] = NULL;
		g_once_init_leave(&done, 1);
	}
	return names;
}

gboolean lh_hw_set_key(LhHw *hw, const char *key, const char *value, GError **error)
{
	g_return_val_if_fail(hw && key && value, FALSE);
	g_autofree char *v = g_strstrip(g_strdup(value));
	if (!strcmp(key, "sm_sharing")) {
		if (!strcmp(v, "fifo") || !strcmp(v, "fair")) {
			hw->sm_sharing = !strcmp(v, "fair") ? LH_SHARING_FAIR : LH_SHARING_FIFO;
			return TRUE;
		}
		g_set_error(error, LH_HW_ERROR, LH_HW_ERROR_RANGE,
		            "key 'sm_sharing': '%s' is not one of fifo, fair", v);
		return FALSE;
	}
	gsize i = 0;
	while (i < G_N_ELEMENTS(keys) && strcmp(keys[i].key, key) != 0)
		i++;
	if (i == G_N_ELEMENTS(keys)) {
		g_autofree char *list = g_strjoinv(", ", (char **)lh_hw_key_names());
		g_set_error(error, LH_HW_ERROR, LH_HW_ERROR_NOT_FOUND,
		            "unknown hardware key '%s' (keys: %s)", key, list);
		return FALSE;
	}
	char *end = NULL;
	double d = g_ascii_strtod(v, &end);
	if (!*v || end == v || *end) {
		g_set_error(error, LH_HW_ERROR, LH_HW_ERROR_PARSE, "key '%s': '%s' is not a number",
		            key, v);
		return FALSE;
	}
	if (keys[i].type == K_UINT && (d != floor(d) || d < 0 || d > G_MAXUINT32)) {
		g_set_error(error, LH_HW_ERROR, LH_HW_ERROR_RANGE,
		            "key '%s': '%s' must be a whole number", key, v);
		return FALSE;
	}
	gboolean low = keys[i].min_open ? d <= keys[i].min : d < keys[i].min;
	if (!isfinite(d) || low || d > keys[i].max) {
		g_set_error(error, LH_HW_ERROR, LH_HW_ERROR_RANGE,
		            "key '%s' = %g is out of range: it must be %s %g and <= %g %s", key, d,
		            keys[i].min_open ? ">" : ">=", keys[i].min, keys[i].max, keys[i].unit);
		return FALSE;
	}
	if (keys[i].type == K_UINT)
		G_STRUCT_MEMBER(guint32, hw, keys[i].offset) = (guint32)d;
	else
		G_STRUCT_MEMBER(double, hw, keys[i].offset) = d;
	if (keys[i].need == KEY_OLD) /* the old single duplex rate stands for both directions */
		hw->pcie_duplex_h2d_gbs = hw->pcie_duplex_d2h_gbs = d;
	return TRUE;
}
