/* lhsim — XLA HLO text import, private to models/hlo-*.c.
 *
 * hlo-read.c turns the text into computations of instructions (names, shapes, opcodes,
 * operands, raw attribute values, source positions); hlo-cost.c holds the cost rules (flops
 * and bytes from shapes); hlo-lower.c walks the entry computation, inlines while bodies and
 * calls, and adds ops to an LhGraph. */
#pragma once

#include "models/hlo.h"

#define MAX_DEPTH 64     /* nesting of tuple shapes, computations and inlining */
#define MAX_RANK 32      /* dimensions of an array shape */
#define MAX_OPS 5000000u /* ops in one imported graph, after unrolling */
#define HOST_SPACE 5     /* XLA's memory space for pinned host memory, S(5) */

/* ---- shapes ---- */

typedef struct _Shape Shape;
struct _Shape {
	double elems; /* array: number of elements; tuple: 0 */
	double bytes; /* array: elems * element size; tuple: sum of its elements */
	guint rank;
	gint64 dims[MAX_RANK];
	gboolean tuple;
	gboolean host;        /* array in memory space S(5) */
	const char *type;     /* array: element type name ("bf16"; static storage); NULL else */
	gboolean has_layout;  /* m2m holds the layout; else XLA's default {rank-1, ..., 0} */
	guint8 m2m[MAX_RANK]; /* minor_to_major: m2m[0] is the fastest-varying dimension */
	guint n_sub;
	Shape *sub; /* tuple elements */
};

/* ---- parsed module ---- */

typedef struct {
	char *key;
	char *value; /* raw text */
	gsize at;    /* offset of the key */
} Attr;

typedef struct {
	char *name;
	char *opcode;
	Shape shape;
	gboolean has_shape;
	gboolean root;
	gsize at;            /* offset of the name */
	gsize op_at;         /* offset of the opcode */
	GPtrArray *operands; /* char *, names (a parameter's number for parameter) */
	GArray *operand_at;  /* gsize offsets */
	GArray *attrs;       /* Attr */
	char *literal;       /* constant: the text between the parens */
	gint *ops;           /* resolved operand instruction indices (after parse) */
} Instr;

typedef struct {
	char *name;
	gsize at;
	gboolean entry;
	GPtrArray *instrs; /* Instr * */
	GHashTable *index; /* name -> index + 1 */
	gint root;
	gint n_params;
	gint *param_of; /* parameter number -> instruction index, -1 if none */
	/* emitter state */
	gboolean busy; /* being inlined (recursion guard) */
	gboolean cost_done, cost_busy;
	double flops; /* sum of instruction flops, fusions included */
	gboolean bytes_done;
	double bytes; /* as a fusion: HBM bytes read and written (hlo-cost.c) */
} Comp;

typedef struct {
	const char *data;
	gsize len, pos;
	const char *where;
	GPtrArray *comps;       /* Comp * */
	GHashTable *comp_index; /* name -> Comp * */
	Comp *entry;
	gboolean scheduled;
	gint64 num_partitions, replica_count;
	char *module_name;
	char *io_alias;    /* the header's input_output_alias={...}, raw; NULL if none */
	gsize io_alias_at; /* offset of its value */
	GError *error;
} Parser;

#define MAX_ALIAS_INDEX 8

/* One entry of output_to_operand_aliasing={{OUT}: (OPERAND, {INDEX})} or of the header's
 * input_output_alias={ {OUT}: (PARAMETER, {INDEX}, may-alias) }. */
typedef struct {
	gint64 out[MAX_ALIAS_INDEX]; /* the output's shape index */
	guint n_out;
	gint64 operand;                /* operand (or parameter) number */
	gint64 index[MAX_ALIAS_INDEX]; /* shape index within it */
	guint n_index;
	gsize at; /* offset of the entry */
} HloAlias;

/* What the hardware model needs beyond flops and bytes (sim/graph.h, LhOp). */
typedef struct {
	LhDtype dtype; /* the math's element type; NONE if unknown */
	guint32 batch; /* a GEMM's [batch, m, n, k]; all 0 when not a GEMM */
	guint64 m, n, k;
	gboolean transpose; /* the memory traffic moves the minor dimension */
} HloTraits;

/* ---- hlo-read.c ---- */

G_GNUC_INTERNAL void hlo_shape_clear(Shape *s);
G_GNUC_INTERNAL void hlo_shape_copy(Shape *dst, const Shape *src);
/* The largest array in a (possibly tuple) shape: a start's output, a gemm's result. */
G_GNUC_INTERNAL const Shape *hlo_shape_largest(const Shape *s);
G_GNUC_INTERNAL const Shape *hlo_shape_first_array(const Shape *s);
G_GNUC_INTERNAL gboolean hlo_shape_any_host(const Shape *s);
G_GNUC_INTERNAL const char *hlo_attr_get(const Instr *in, const char *key);
G_GNUC_INTERNAL gboolean hlo_is_ident_char(char c);
/* Line and column (from 1) of byte offset @at. */
G_GNUC_INTERNAL void hlo_pos_of(const char *data, gsize len, gsize at, int *line, int *col);
/* Sets ps->error to "WHERE:LINE:COL: message near 'text'" (the first error wins); FALSE. */
G_GNUC_INTERNAL gboolean hlo_fail_at(Parser *ps, gsize at, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
/* Parses the whole text into ps->comps; resolves operands, roots and parameters. */
G_GNUC_INTERNAL gboolean hlo_parse_module(Parser *ps);
G_GNUC_INTERNAL void hlo_parser_clear(Parser *ps);
/* Parses an aliasing attribute's value @v (at offset @at of the text) into HloAlias entries
 * appended to @out; a malformed one is an error at its position. */
G_GNUC_INTERNAL gboolean hlo_parse_aliases(Parser *ps, const char *v, gsize at, GArray *out);

/* ---- hlo-groups.c ---- */

/* The member set of collective @in of kind @kind (docs/hlo.md, "Collectives: who takes
 * part"), added to @g: *members = 1 + its index, or 0 when the module does not say who takes
 * part. A malformed, uneven or out-of-range group is an error at its attribute (FALSE). */
G_GNUC_INTERNAL gboolean hlo_members(Parser *ps, const Instr *in, LhOpKind kind, LhGraph *g,
                                     guint32 *members);

/* ---- hlo-cost.c ---- */

/* The computation named by attribute @key (the first of a list); NULL if none. */
G_GNUC_INTERNAL Comp *hlo_called(Parser *ps, const Instr *in, const char *key);
G_GNUC_INTERNAL const Shape *hlo_operand_shape(const Comp *c, const Instr *in, guint k);
/* Parses the integers of "{1,2}" into @out; returns the count. */
G_GNUC_INTERNAL guint hlo_int_list(const char *v, gint64 *out, guint max);
G_GNUC_INTERNAL gboolean hlo_str_has(const char *s, const char *sub);
/* Opcodes the importer knows; others become memory-bound kernels with a warning. */
G_GNUC_INTERNAL gboolean hlo_is_known(const char *op);
/* Floating-point operations of one instruction, and of a whole computation, from shapes. */
G_GNUC_INTERNAL double hlo_instr_flops(Parser *ps, const Comp *c, const Instr *in, int depth);
G_GNUC_INTERNAL double hlo_comp_flops(Parser *ps, Comp *c, int depth);
/* HBM bytes of a kernel: its operands plus its output, except for slices, in-place updates
 * and fusions of them (hlo-cost.c, docs/hlo.md). */
G_GNUC_INTERNAL double hlo_instr_bytes(Parser *ps, const Comp *c, const Instr *in);
/* dtype, GEMM shape and transpose of a kernel's instruction (hlo-cost.c, docs/hlo.md); a
 * malformed precision config or fft attribute is an error at its position (FALSE). */
G_GNUC_INTERNAL gboolean hlo_kernel_traits(Parser *ps, const Comp *c, const Instr *in,
                                           HloTraits *t);
/* A transpose whose output has the operand's bytes in the operand's order (the dimensions
 * longer than 1 keep their physical order): a bitcast, as XLA's ShapeUtil::TransposeIsBitcast
 * says and its algebraic simplifier rewrites it. */
G_GNUC_INTERNAL gboolean hlo_transpose_is_bitcast(const Comp *c, const Instr *in);
/* A copy from @src to @dst (same dimensions) whose fastest-varying dimension (of those
 * longer than 1) changes: its reads or writes stride. */
G_GNUC_INTERNAL gboolean hlo_copy_moves_minor(const Shape *src, const Shape *dst);
/* Passes of a dot's algorithm (3 for dot_bf16_bf16_f32_x3); 1 if unset. */
G_GNUC_INTERNAL int hlo_dot_passes(const Instr *in);
/* An fft's flops, and the bytes its inverse scaling pass adds (docs/hlo.md, "FFT"). */
G_GNUC_INTERNAL double hlo_fft_flops(const Comp *c, const Instr *in);
G_GNUC_INTERNAL double hlo_fft_extra_bytes(const Comp *c, const Instr *in);
/* The parameter number instruction @i of @c is, through bitcasts; -1 if it is not one. */
G_GNUC_INTERNAL gint hlo_param_number(const Comp *c, gint i);
/* The parameter whose buffer the root of @f updates in place (a dynamic-update-slice of it,
 * through bitcasts), with the update's size; -1 if none. */
G_GNUC_INTERNAL gint hlo_in_place_param(const Comp *f, double *update_bytes);
