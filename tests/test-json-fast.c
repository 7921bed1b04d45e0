/* lhsim tests — the graph JSON reader's fast path (models/graph-json-fast.c) against the full
 * reader: a graph the fast path returns is the one the full reader builds (compared through
 * the writer, which prints every field and every double in its shortest exact form), and the
 * fast path does take the files lhsim writes. Error messages and positions are the full
 * reader's (test-readers, test-graph). */
#include "helpers.h"
#include "models/graph-json-private.h"
#include "sim/graph-private.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

/* Both paths on @text: the same graph, and the fast path took it when @must_be_fast. */
static void same(const char *text, gboolean must_be_fast, const char *what)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(LhGraph) fast = lh__graph_json_fast(text, strlen(text));
	g_autoptr(LhGraph) full = lh__graph_json_full(text, -1, "t.json", &e);
	if (must_be_fast)
		cr_assert_not_null(fast, "%s: the fast path gave up", what);
	if (!fast)
		return;
	cr_assert_not_null(full, "%s: the fast path took what the full reader refuses: %s", what,
	                   e->message);
	g_autofree char *a = lh_graph_to_json(fast);
	g_autofree char *b = lh_graph_to_json(full);
	cr_assert_str_eq(a, b, "%s", what);
	cr_assert_str_eq(lh_graph_name(fast), lh_graph_name(full), "%s", what);
}

Test(json_fast, built_in_workloads_and_examples)
{
	lh_models_init();
	for (const char *const *w = lh_gen_workload_names(); *w; w++) {
		g_autoptr(GError) e = NULL;
		g_autoptr(LhGraph) g = lh_gen_workload(*w, NULL, &e);
		cr_assert_not_null(g, "%s", *w);
		g_autofree char *text = lh_graph_to_json(g);
		same(text, TRUE, *w);
	}
	const char *src = g_getenv("LHSIM_SRC");
	const char *ex[] = {"moe-offload", "pipeline", "random", "transformer"};
	for (guint i = 0; src && i < G_N_ELEMENTS(ex); i++) {
		g_autofree char *path = g_strdup_printf("%s/examples/%s.json", src, ex[i]);
		g_autofree char *text = NULL;
		cr_assert(g_file_get_contents(path, &text, NULL, NULL), "%s", path);
		same(text, TRUE, path);
	}
}

/* Random fields of every kind, written by lhsim's writer (shortest doubles), and some by
 * hand: fields in another order, white space, unicode names, a schedule, forward deps. */
Test(json_fast, random_graphs_read_the_same)
{
	g_autoptr(GRand) r = g_rand_new_with_seed(5);
	for (int trial = 0; trial < 200; trial++) {
		g_autoptr(LhGraph) g = lh_graph_new(trial & 1 ? "r\xc3\xa9seau" : "g");
		guint n = (guint)g_rand_int_range(r, 2, 60);
		for (guint i = 0; i < n; i++) {
			char name[32];
			g_snprintf(name, sizeof name, trial & 2 ? "op.%u/\xce\xbb" : "o%u", i);
			LhOpKind kind =
			    i == 0 ? LH_OP_INPUT : (LhOpKind)g_rand_int_range(r, 1, LH_OP_N_KINDS);
			guint32 id = lh_graph_add_op(g, name, kind);
			LhOp *o = lh_graph_op_mut(g, id);
			o->out_bytes = (guint64)g_rand_double_range(r, 0, 9e18);
			if (kind == LH_OP_KERNEL) {
				o->flops = g_rand_double_range(r, 0, 1e29) * g_rand_double(r);
				/* Short decimals (read without strtod) and full-length ones. */
				static const double scale[] = {1,   0.1,  1e-3,  1e-7,
				                               1e5, 1e14, 1e-22, 3e-30};
				int pick = g_rand_int_range(r, 0, 3);
				o->bytes = pick == 0   ? g_rand_double(r) * 1e6
				           : pick == 1 ? (double)g_rand_int(r)
				                       : (double)g_rand_int_range(r, 0, 1 << 30) *
				                             scale[g_rand_int_range(r, 0, 8)];
				if (g_rand_int_range(r, 0, 3) == 0)
					o->flops = (double)g_rand_int_range(r, 0, 99999) *
					           scale[g_rand_int_range(r, 0, 6)];
				o->sm = g_rand_double_range(r, 1e-3, 1);
				o->dtype = (guint8)g_rand_int_range(r, 0, LH_DTYPE_N);
				o->transpose = g_rand_boolean(r);
				if (g_rand_boolean(r)) {
					o->gemm_batch = (guint32)g_rand_int_range(r, 1, 1 << 30);
					o->gemm_m = (guint64)g_rand_int_range(r, 1, G_MAXINT32);
					o->gemm_n = 1;
					o->gemm_k = 1ull << 40;
				}
			} else if (kind != LH_OP_INPUT) {
				o->size = (guint64)g_rand_double_range(r, 0, 9e18);
				o->group = (guint32)g_rand_int_range(r, 1, 1000001);
			}
			if (kind != LH_OP_INPUT && g_rand_int_range(r, 0, 3) == 0)
				o->duration_ns = (gint64)g_rand_double_range(r, 0, 1e17);
			if (g_rand_int_range(r, 0, 4) == 0)
				o->async = !o->async;
			if (g_rand_int_range(r, 0, 4) == 0)
				lh_graph_set_opcode(g, id, "fusion:kLoop");
			if (kind != LH_OP_INPUT) {
				guint32 d = (guint32)g_rand_int_range(r, 0, (gint32)i);
				lh_graph_add_dep(g, id, d);
				lh_graph_add_dep(g, id, (guint32)g_rand_int_range(r, 0, (gint32)i));
				o = lh_graph_op_mut(g, id);
				if (g_rand_int_range(r, 0, 4) == 0 &&
				    lh_graph_op(g, d)->out_space == o->out_space)
					o->alias = d;
			}
		}
		if (trial % 3 == 1) /* the top-level "devices" (the writer prints it) */
			lh_graph_set_devices(g, (guint32)(trial % 7 == 1 ? 1000000 : 1 + trial));
		if (trial % 5 == 0) {
			g_autofree guint32 *seq = g_new(guint32, n);
			for (guint i = 0; i < n; i++)
				seq[i] = i << 1;
			lh_graph_set_schedule(g, seq, n);
		}
		g_autoptr(GError) e = NULL;
		if (!lh_graph_finish(g, NULL, &e))
			continue; /* a random schedule or alias the graph refuses */
		g_autofree char *text = lh_graph_to_json(g);
		same(text, TRUE, "random");
		/* The ops in reverse order in the file: every dep names a later op. */
		g_autofree char *rev = NULL;
		{
			char *ops = strstr(text, "\"ops\": [");
			char *endops = strstr(text, "\n ]");
			cr_assert(ops && endops);
			g_auto(GStrv) lines = NULL;
			g_autofree char *body = g_strndup(ops + 8, endops - ops - 8);
			lines = g_strsplit(body, ",\n", -1);
			GString *s = g_string_new_len(text, ops + 8 - text);
			for (int k = (int)g_strv_length(lines) - 1; k >= 0; k--) {
				g_strstrip(lines[k]);
				g_string_append_printf(
				    s, "%s\n\t%s", k == (int)g_strv_length(lines) - 1 ? "" : ",",
				    lines[k]);
			}
			g_string_append(s, endops);
			rev = g_string_free(s, FALSE);
		}
		same(rev, TRUE, "reversed");
	}
}

/* Inputs the fast path gives up on (the full reader reports them or reads them). */
Test(json_fast, gives_up_on_what_it_does_not_handle)
{
	const char *head = "{\"format\": \"lhsim-graph\", \"version\": 1, \"ops\": [";
	const char *bad[] = {
	    "{\"name\": \"a\\u0041\", \"kind\": \"input\"}]}",
	    "{\"name\": \"a\", \"kind\": \"input\", \"name\": \"b\"}]}",
	    "{\"name\": \"a\", \"kind\": \"input\"} /* c */]}",
	    "{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": -0}]}",
	    "{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 01}]}",
	    "{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 1e400}]}",
	    "{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 1, \"sm\": 0}]}",
	    "{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 1, \"gemm\": [1, 1, 1, 1.0]}]}",
	    "{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 1, \"deps\": [\"a\"]}]}",
	    "{\"name\": \"a\", \"kind\": \"kernel\", \"flops\": 1, \"deps\": [\"b\"]}]}",
	    "{\"name\": \"a b\", \"kind\": \"input\"}]}",
	    "{\"name\": \"a\", \"kind\": \"input\"}]} {}",
	    "{\"name\": \"a\", \"kind\": \"input\", \"members\": 1}]}",
	    "{\"name\": \"a\", \"kind\": \"copy-h2d\"}]}",
	    "{\"name\": \"a\", \"kind\": \"input\"}, {\"name\": \"a\", \"kind\": \"input\"}]}",
	    /* members on a collective (the full reader reads them): not handled */
	    "{\"name\": \"a\", \"kind\": \"all-reduce\", \"size\": 8, \"members\": [[0, 1]]}]}",
	    "{\"name\": \"a\", \"kind\": \"send\", \"size\": 8, \"members\": [[0, 9]]}]}",
	    /* devices out of range, not an integer literal, repeated */
	    "{\"name\": \"a\", \"kind\": \"input\"}], \"devices\": 0}",
	    "{\"name\": \"a\", \"kind\": \"input\"}], \"devices\": 1000001}",
	    "{\"name\": \"a\", \"kind\": \"input\"}], \"devices\": 8.0}",
	    "{\"name\": \"a\", \"kind\": \"input\"}], \"devices\": 1e1}",
	    "{\"name\": \"a\", \"kind\": \"input\"}], \"devices\": \"8\"}",
	    "{\"name\": \"a\", \"kind\": \"input\"}], \"devices\": 8, \"devices\": 8}",
	    "{\"name\": \"a\", \"kind\": \"input\"}], \"devicez\": 8}",
	};
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autofree char *text = g_strconcat(head, bad[i], NULL);
		g_autoptr(LhGraph) g = lh__graph_json_fast(text, strlen(text));
		cr_assert_null(g, "%s", text);
	}
	const char *good =
	    "{\"format\": \"lhsim-graph\", \"version\": 1, \"ops\": [{\"name\": \"a\", "
	    "\"kind\": \"input\"}]}";
	g_autoptr(LhGraph) g = lh__graph_json_fast(good, strlen(good));
	cr_assert_not_null(g);
}

/* A graph with member sets and devices: the fast path leaves it to the full reader, which
 * keeps every member set; the same graph without members is the fast path's, devices and all. */
Test(json_fast, members_go_to_the_full_reader)
{
	const char *text =
	    "{\"format\": \"lhsim-graph\", \"version\": 1, \"devices\": 16, \"ops\": [\n"
	    "{\"name\": \"x\", \"kind\": \"input\", \"out_bytes\": 64},\n"
	    "{\"name\": \"ar\", \"kind\": \"all-reduce\", \"size\": 1048576, \"deps\": [\"x\"], "
	    "\"members\": [[0, 8], [1, 9]]},\n"
	    "{\"name\": \"p\", \"kind\": \"collective-permute\", \"size\": 64, \"deps\": [\"ar\"], "
	    "\"members\": [[0, 15], [15, 0]]}]}";
	g_autoptr(LhGraph) fast = lh__graph_json_fast(text, strlen(text));
	cr_assert_null(fast);
	g_autoptr(GError) e = NULL;
	g_autoptr(LhGraph) g = lh_graph_new_from_json_data(text, -1, "t.json", &e);
	cr_assert_not_null(g, "%s", e ? e->message : "");
	cr_expect_eq(lh_graph_devices(g), 16);
	const LhMemberSet *m = lh_graph_op_members(g, lh_graph_op(g, 1));
	cr_assert_not_null(m);
	cr_expect_eq(m->n_groups, 2);
	cr_expect_eq(m->group_size, 2);
	cr_expect_eq(lh_graph_op(g, 1)->group, 2);
	m = lh_graph_op_members(g, lh_graph_op(g, 2));
	cr_assert_not_null(m);
	cr_expect(m->pairs);
	/* Written back it still has its members: the fast path gives up again, the full reader
	 * reads the same graph. */
	g_autofree char *w = lh_graph_to_json(g);
	cr_assert_null(lh__graph_json_fast(w, strlen(w)));
	g_autoptr(LhGraph) g2 = lh_graph_new_from_json_data(w, -1, "w.json", &e);
	cr_assert_not_null(g2, "%s", e ? e->message : "");
	g_autofree char *w2 = lh_graph_to_json(g2);
	cr_expect_str_eq(w, w2);
	/* Without members (and with a group instead), devices and all: the fast path's. */
	const char *plain =
	    "{\"format\": \"lhsim-graph\", \"version\": 1, \"devices\": 16, \"ops\": [\n"
	    "{\"name\": \"x\", \"kind\": \"input\", \"out_bytes\": 64},\n"
	    "{\"name\": \"ar\", \"kind\": \"all-reduce\", \"size\": 1048576, \"group\": 16, "
	    "\"deps\": [\"x\"]}]}";
	same(plain, TRUE, "devices without members");
	g_autoptr(LhGraph) pf = lh__graph_json_fast(plain, strlen(plain));
	cr_expect_eq(lh_graph_devices(pf), 16);
}

/* Numbers the fast path converts itself (in 128-bit integers where Clinger's fast path does not
 * apply: more than 15 digits, or a power of ten beyond 22) must be the doubles the full reader
 * gets from strtod. Among them the hardest: decimals exactly halfway between two doubles (ties
 * go to the even one) and their neighbours one unit away in the last digit. */
Test(json_fast, numbers_round_as_strtod)
{
	g_autoptr(GRand) r = g_rand_new_with_seed(12);
	for (int trial = 0; trial < 40; trial++) {
		GString *s =
		    g_string_new("{\"format\": \"lhsim-graph\", \"version\": 1, \"ops\": [");
		for (int i = 0; i < 200; i++) {
			char num[96];
			int pick = g_rand_int_range(r, 0, 4);
			if (pick == 0) {
				/* 16 to 19 significant digits, the point anywhere, an exponent. */
				int nd = g_rand_int_range(r, 16, 20),
				    pt = g_rand_int_range(r, 1, nd + 1);
				char *p = num;
				for (int k = 0; k < nd; k++) {
					*p++ = (char)('0' + (k ? g_rand_int_range(r, 0, 10)
					                       : g_rand_int_range(r, 1, 10)));
					if (k == pt - 1 && k < nd - 1)
						*p++ = '.';
				}
				g_snprintf(p, sizeof num - (p - num), "e%d",
				           g_rand_int_range(r, -30, 11));
			} else if (pick == 1) {
				/* A double written with 17 digits. */
				double v = g_rand_double(r) * pow(10, g_rand_int_range(r, -25, 25));
				g_snprintf(num, sizeof num, "%.17g", v);
			} else {
				/* (2m + 1) * 2^(e - 1) with m of 53 bits, halfway between the
				 * doubles m * 2^e and (m + 1) * 2^e, written exactly in decimal
				 * with at most 19 significant digits: for e >= 1 an integer (then
				 * ".0"), for e < 1 with 1 - e digits after the point ((2m + 1) *
				 * 5^(1 - e) / 10^(1 - e)). pick 3: its last digit one up or down,
				 * just off the tie. */
				guint64 m = ((guint64)g_rand_int(r) << 21 ^ g_rand_int(r)) |
				            G_GUINT64_CONSTANT(1) << 52;
				m &= (G_GUINT64_CONSTANT(1) << 53) - 1;
				int e = g_rand_int_range(r, -1, 11), f = e >= 1 ? 0 : 1 - e;
				unsigned __int128 v = 2 * (unsigned __int128)m + 1;
				v <<= e >= 1 ? e - 1 : 0;
				for (int k = 0; k < f; k++)
					v *= 5;
				char dig[64] = {0};
				int len = 0;
				for (; v; v /= 10)
					dig[len++] = (char)('0' + (int)(v % 10));
				if (pick == 3 && dig[0] > '0' && dig[0] < '9')
					dig[0] = (char)(dig[0] + (g_rand_boolean(r) ? 1 : -1));
				char *p = num;
				for (int k = len - 1; k >= 0; k--) {
					*p++ = dig[k];
					if (k == f && k > 0)
						*p++ = '.';
				}
				strcpy(p, f ? "" : ".0");
			}
			g_string_append_printf(
			    s, "%s{\"name\": \"k%d\", \"kind\": \"%s\", \"flops\": %s}",
			    i ? ", " : "", i, "kernel", num);
		}
		g_string_append(s, "]}");
		same(s->str, TRUE, s->str);
		g_string_free(s, TRUE);
	}
}

/* Ops added without interning (lh__graph_add_op_unique, the fast path's way) and interned ones
 * in one graph: lh_graph_finish cannot compare name pointers then, and must still find a name
 * given both ways. */
Test(json_fast, duplicate_name_across_both_ways_of_adding)
{
	g_autoptr(LhGraph) g = lh_graph_new("g");
	lh__graph_add_op_unique(g, "a", 1, LH_OP_INPUT);
	lh__graph_add_op_unique(g, "bx", 1, LH_OP_INPUT); /* "b": the length counts */
	lh_graph_add_op(g, "c", LH_OP_INPUT);
	lh_graph_add_op(g, "a", LH_OP_INPUT);
	g_autoptr(GError) e = NULL;
	cr_assert_not(lh_graph_finish(g, "t", &e));
	cr_assert_str_eq(e->message, "t: duplicate op name 'a'");
	cr_assert_str_eq(lh_graph_op(g, 1)->name, "b");

	g_autoptr(LhGraph) h = lh_graph_new("h");
	lh__graph_add_op_unique(h, "a", 1, LH_OP_INPUT);
	lh_graph_add_op(h, "b", LH_OP_INPUT);
	cr_assert(lh_graph_finish(h, "t", NULL));
}
