/* lhsim — who takes part in an HLO collective (docs/hlo.md, "Collectives: who takes part").
 *
 * replica_groups (explicit {{0,1},{2,3}} or iota [G,S]<=[dims]T(perm)), source_target_pairs,
 * and the module's num_partitions and replica_count become a member set of global device ids
 * (flattened id = replica * num_partitions + partition, XLA's kFlattenedID numbering), under
 * XLA's collective group modes (xla/service/collective_ops_utils.h, GetCollectiveOpGroupMode):
 *   no channel_id                               cross-replica: ids are replica ids
 *   channel_id, no use_global_device_ids        cross-partition: ids are partition ids
 *   channel_id, use_global_device_ids=false     cross-replica-and-partition: replica ids,
 *                                               every partition of them takes part
 *   channel_id, use_global_device_ids=true      flattened ids, as they are
 */
#include "models/hlo-private.h"
#include "sim/topo.h"

#include <string.h>

#define MAX_MEMBERS (1u << 24) /* ids in one member set, after expansion */

typedef enum { MODE_REPLICA, MODE_PARTITION, MODE_REPLICA_AND_PARTITION, MODE_FLAT } Mode;

/* Parses "{{0,1},{2,3}}" (or "{}" / "{{}}": no groups) into @ids and the group sizes into
 * @sizes. FALSE on a syntax error. */
static gboolean parse_explicit(const char *v, GArray *ids, GArray *sizes)
{
	const char *p = v;
	while (*p == ' ')
		p++;
	if (*p++ != '{')
		return FALSE;
	for (;;) {
		while (*p == ' ' || *p == ',')
			p++;
		if (*p == '}')
			return TRUE;
		if (*p++ != '{')
			return FALSE;
		guint32 n = 0;
		for (;;) {
			while (*p == ' ' || *p == ',')
				p++;
			if (*p == '}') {
				p++;
				break;
			}
			if (!g_ascii_isdigit(*p))
				return FALSE;
			char *end;
			guint64 x = g_ascii_strtoull(p, &end, 10);
			if (x > G_MAXUINT32 - 1)
				return FALSE;
			guint32 d = (guint32)x;
			g_array_append_val(ids, d);
			n++;
			p = end;
		}
		if (n)
			g_array_append_val(sizes, n);
	}
}

/* Parses "[G,S]<=[d0,d1,...]" with an optional "T(p0,p1,...)": the iota 0 .. prod(d)-1
 * shaped as d, its dimensions permuted by p, read out in row-major order as G groups of S.
 * FALSE with *why on an error. */
static gboolean parse_iota(const char *v, GArray *ids, GArray *sizes, char **why)
{
	gint64 gs[MAX_RANK], d[MAX_RANK], perm[MAX_RANK];
	const char *le = strstr(v, "<=");
	if (!le) {
		*why = g_strdup("an iota replica_groups needs '<=': [G,S]<=[dims]");
		return FALSE;
	}
	g_autofree char *head = g_strndup(v, (gsize)(le - v));
	guint ng = hlo_int_list(head, gs, MAX_RANK);
	const char *tp = strchr(le, 'T');
	g_autofree char *dims = g_strndup(le + 2, tp ? (gsize)(tp - le - 2) : strlen(le + 2));
	guint nd = hlo_int_list(dims, d, MAX_RANK);
	guint np = tp ? hlo_int_list(tp + 1, perm, MAX_RANK) : 0;
	if (ng != 2 || nd < 1 || (tp && np != nd)) {
		*why = g_strdup("an iota replica_groups is [G,S]<=[dims] or [G,S]<=[dims]T(perm)");
		return FALSE;
	}
	gint64 total = 1;
	for (guint k = 0; k < nd; k++) {
		if (d[k] < 1 || d[k] > MAX_MEMBERS) {
			*why = g_strdup_printf(
			    "iota dimension %" G_GINT64_FORMAT " is out of range", d[k]);
			return FALSE;
		}
		total *= d[k];
		if (total > MAX_MEMBERS) {
			*why = g_strdup("the iota has too many devices");
			return FALSE;
		}
	}
	if (gs[0] < 1 || gs[1] < 1 || gs[0] * gs[1] != total) {
		*why = g_strdup_printf("uneven groups: [%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
		                       "] does not hold the iota's %" G_GINT64_FORMAT " devices",
		                       gs[0], gs[1], total);
		return FALSE;
	}
	if (!tp)
		for (guint k = 0; k < nd; k++)
			perm[k] = k;
	guint8 used[MAX_RANK] = {0};
	for (guint k = 0; k < nd; k++) {
		if (perm[k] < 0 || perm[k] >= nd || used[perm[k]]) {
			*why = g_strdup("the iota's T(...) is not a permutation of its dimensions");
			return FALSE;
		}
		used[perm[k]] = 1;
	}
	/* Output element i: its index t in the permuted shape (dims d[perm[k]]), row-major;
	 * the source index o has o[perm[k]] = t[k]; the value is o linearized in d. */
	gint64 t[MAX_RANK] = {0};
	for (gint64 i = 0; i < total; i++) {
		gint64 o[MAX_RANK];
		for (guint k = 0; k < nd; k++)
			o[perm[k]] = t[k];
		gint64 val = 0;
		for (guint k = 0; k < nd; k++)
			val = val * d[k] + o[k];
		guint32 u = (guint32)val;
		g_array_append_val(ids, u);
		for (gint k = (gint)nd - 1; k >= 0; k--) { /* next t, row-major */
			if (++t[k] < d[perm[k]])
				break;
			t[k] = 0;
		}
	}
	for (gint64 k = 0; k < gs[0]; k++) {
		guint32 s = (guint32)gs[1];
		g_array_append_val(sizes, s);
	}
	return TRUE;
}

/* The value of frontend attribute @key inside frontend_attributes={...}, as a new string. */
static char *frontend_attr(const Instr *in, const char *key)
{
	const char *fa = hlo_attr_get(in, "frontend_attributes");
	if (!fa)
		return NULL;
	g_autofree char *pat = g_strdup_printf("%s=", key);
	const char *p = strstr(fa, pat);
	if (!p)
		return NULL;
	p += strlen(pat);
	if (*p == '"')
		p++;
	int depth = 0;
	const char *q = p;
	for (; *q; q++) {
		if (*q == '{')
			depth++;
		else if (*q == '}' && --depth == 0) {
			q++;
			break;
		}
	}
	return g_strndup(p, (gsize)(q - p));
}

static gsize value_at(const Instr *in, const char *key)
{
	for (guint i = 0; in->attrs && i < in->attrs->len; i++) {
		const Attr *a = &g_array_index(in->attrs, Attr, i);
		if (strcmp(a->key, key) == 0)
			return a->at;
	}
	return in->op_at;
}

gboolean hlo_members(Parser *ps, const Instr *in, LhOpKind kind, LhGraph *g, guint32 *members)
{
	*members = 0;
	gboolean pairs =
	    kind == LH_OP_COLLECTIVE_PERMUTE || kind == LH_OP_SEND || kind == LH_OP_RECV;
	guint32 P = (guint32)CLAMP(ps->num_partitions, 1, G_MAXUINT32);
	guint32 R = (guint32)CLAMP(ps->replica_count, 1, G_MAXUINT32);
	gboolean known = ps->num_partitions > 0 || ps->replica_count > 0;
	gboolean channel = hlo_attr_get(in, "channel_id") != NULL;
	const char *ug = hlo_attr_get(in, "use_global_device_ids");
	Mode mode = !channel                  ? MODE_REPLICA
	            : !ug                     ? MODE_PARTITION
	            : strcmp(ug, "true") == 0 ? MODE_FLAT
	                                      : MODE_REPLICA_AND_PARTITION;
	/* send and recv are always cross-partition (XLA: they carry a channel). */
	if (kind == LH_OP_SEND || kind == LH_OP_RECV)
		mode = MODE_PARTITION;
	const char *key = pairs ? "source_target_pairs" : "replica_groups";
	g_autofree char *fv = NULL;
	const char *v = hlo_attr_get(in, key);
	if (!v && pairs) {
		fv = frontend_attr(in, "_xla_send_recv_source_target_pairs");
		v = fv;
		key = "frontend_attributes";
	}
	gsize at = value_at(in, key);
	g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(guint32));
	g_autoptr(GArray) sizes = g_array_new(FALSE, FALSE, sizeof(guint32));
	g_autofree char *why = NULL;
	if (v && v[0] == '[') {
		if (!parse_iota(v, ids, sizes, &why))
			return hlo_fail_at(ps, at, "'%s': %s", in->name, why);
	} else if (v && !parse_explicit(v, ids, sizes)) {
		return hlo_fail_at(ps, at, "'%s': %s is not a list of groups like {{0,1},{2,3}}",
		                   in->name, key);
	}
	/* The domain the ids number: replicas, partitions, or all devices. */
	if ((guint64)P * R > MAX_MEMBERS)
		return hlo_fail_at(ps, value_at(in, "replica_groups"),
		                   "'%s': num_partitions x replica_count = %" G_GUINT64_FORMAT
		                   " devices is more than lhsim takes (%u)",
		                   in->name, (guint64)P * R, MAX_MEMBERS);
	guint32 domain = mode == MODE_REPLICA || mode == MODE_REPLICA_AND_PARTITION ? R
	                 : mode == MODE_PARTITION                                   ? P
	                                                                            : P * R;
	if (sizes->len == 0) {
		if (pairs || !known)
			return TRUE; /* no pairs, or "all devices" of a module that does not say
			              * how many: the group count alone (docs/hlo.md) */
		for (guint32 i = 0; i < domain; i++)
			g_array_append_val(ids, i);
		g_array_append_val(sizes, domain);
	}
	guint32 gsz = g_array_index(sizes, guint32, 0);
	for (guint k = 1; k < sizes->len; k++)
		if (g_array_index(sizes, guint32, k) != gsz)
			return hlo_fail_at(ps, at,
			                   "'%s': uneven groups in %s: group 0 has %u devices, "
			                   "group %u has %u (lhsim needs groups of one size)",
			                   in->name, key, gsz, k, g_array_index(sizes, guint32, k));
	guint32 ng = sizes->len;
	/* Check in the ids' own domain (when the module states it), then expand. Ids beyond
	 * that domain but within all P x R devices are read as flattened ids: hand-written
	 * modules (XLA's own scheduler tests among them) leave out channel_id on collectives
	 * over partitions. */
	guint32 bad;
	if (known && mode != MODE_FLAT &&
	    !lh_member_set_check(ng, gsz, pairs, (const guint32 *)ids->data, domain, &why, &bad)) {
		g_clear_pointer(&why, g_free);
		mode = MODE_FLAT;
		domain = P * R;
	}
	if (!lh_member_set_check(ng, gsz, pairs, (const guint32 *)ids->data, known ? domain : 0,
	                         &why, &bad))
		return hlo_fail_at(ps, at, "'%s': %s: %s", in->name, key, why);
	g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(guint32));
	guint32 out_ng = ng, out_gs = gsz;
	const guint32 *id = (const guint32 *)ids->data;
	if (mode == MODE_FLAT || (mode == MODE_REPLICA && P == 1) ||
	    (mode == MODE_PARTITION && R == 1)) {
		g_array_append_vals(out, id, ids->len);
	} else if (mode == MODE_REPLICA_AND_PARTITION) {
		/* Each group of replicas, with every partition of each: size gsz * P. */
		if ((guint64)ids->len * P > MAX_MEMBERS)
			return hlo_fail_at(ps, at, "'%s': too many devices", in->name);
		out_gs = gsz * P;
		for (guint32 k = 0; k < ng; k++)
			for (guint32 j = 0; j < gsz; j++)
				for (guint32 p = 0; p < P; p++) {
					guint32 d = id[k * gsz + j] * P + p;
					g_array_append_val(out, d);
				}
	} else {
		/* Cross-replica groups repeat in every partition, cross-partition groups in
		 * every replica. */
		guint32 other = mode == MODE_REPLICA ? P : R;
		if ((guint64)ids->len * other > MAX_MEMBERS)
			return hlo_fail_at(ps, at, "'%s': too many devices", in->name);
		out_ng = ng * other;
		for (guint32 o = 0; o < other; o++)
			for (guint32 i = 0; i < ids->len; i++) {
				guint32 d = mode == MODE_REPLICA ? id[i] * P + o : o * P + id[i];
				g_array_append_val(out, d);
			}
	}
	*members =
	    1 + lh_graph_add_member_set(g, out_ng, out_gs, pairs, (const guint32 *)out->data);
	return TRUE;
}
