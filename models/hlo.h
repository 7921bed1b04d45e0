/* lhsim — XLA HLO text import (`lhsim import FILE.hlo`).
 *
 * Reads the subset of the HLO text format that real dumps use (module header and attributes,
 * the optional stack-frame tables, computations with ENTRY, multi-line statements, shapes with
 * layouts, tiling, element sizes and memory spaces, tuples, nested attribute values) and turns
 * the entry computation into an LhGraph:
 *
 * - ENTRY parameters become `input` ops; constants, tuples, get-tuple-element, bitcasts (and
 *   transposes that are bitcasts), tokens and other free ops become no op: their users depend
 *   on what produced their operands.
 * - Each `*-start`/`*-done` pair (collectives, copy-start/done, send/recv, async-start/done
 *   with calls=) becomes one op named after the start.
 * - A fusion, a custom-call, and every other computing instruction become one kernel whose
 *   flops and bytes come from shapes (see hlo-cost.c), with its dtype, GEMM shape and
 *   transpose flag. Unknown opcodes become memory-bound kernels with a warning that lists them.
 * - Ops that write into an operand's buffer (dynamic-update-slice, output_to_operand_aliasing,
 *   input_output_alias, while-loop state) get that operand's op as their alias.
 * - A scheduled module (is_scheduled=true) keeps XLA's sequence as the graph's schedule; a
 *   module with no fusion that is not scheduled gets a warning (it looks unoptimized).
 * - Transfers between device and host memory (`S(5)` layouts, MoveToHost/MoveToDevice
 *   custom-calls, dynamic-(update-)slice into or out of host buffers) become copy-d2h or
 *   copy-h2d, which lh_op_class() puts in the async-compute class as XLA's GPU backend does.
 * - A while loop is unrolled by its trip count: backend_config known_trip_count, or, failing
 *   that, the canonical counter pattern (i from a constant, i+1 per iteration, i < constant)
 *   that XLA's while-loop analysis also recognises. Otherwise the body is imported once, with
 *   a warning. Ops of iteration k of a loop body are named "NAME@k".
 * - Operands and control-predecessors become deps; ops keep their HLO names.
 *
 * docs/hlo.md states every rule with its source.
 *
 * Every malformed input is a GError "FILE:LINE:COL: message near 'text'" (LH_GRAPH_ERROR,
 * LH_GRAPH_ERROR_PARSE), never a crash. */
#pragma once

#include "sim/graph.h"

G_BEGIN_DECLS

/* @warnings: if not NULL, receives one newly allocated string per warning (create it with
 * g_ptr_array_new_with_free_func(g_free)). @where names the input in messages. Caller frees
 * the graph, which is finished. */
LhGraph *lh_hlo_import_data(const char *data, gsize len, const char *where, GPtrArray *warnings,
                            GError **error);
LhGraph *lh_hlo_import_file(const char *path, GPtrArray *warnings, GError **error);

G_END_DECLS
