/* lhsim — the stream program (docs/design.md#plan).
 *
 * A plan is one global command sequence plus a stream table. Every command but `host` belongs
 * to a stream. Events are numbered by the plan (lh_plan_new_event) and each must be signaled
 * exactly once. The plan refers to ops by their index in the graph it was made for.
 */
#pragma once

#include <glib.h>
#include "sim/graph.h"

G_BEGIN_DECLS

#define LH_PLAN_ERROR (lh_plan_error_quark())
GQuark lh_plan_error_quark(void);

typedef enum {
	LH_PLAN_ERROR_PARSE,   /* the text is malformed */
	LH_PLAN_ERROR_INVALID, /* lh_plan_validate: the plan breaks a rule against its graph */
	LH_PLAN_ERROR_IO,
} LhPlanError;

/* The longest `host` command a plan may hold, ns: far below the engine's time range. */
#define LH_PLAN_MAX_HOST_NS 1000000000000000ull

typedef enum {
	LH_CMD_RUN,    /* run op `arg` on `stream` */
	LH_CMD_SIGNAL, /* event `arg` fires when every earlier command of `stream` completed */
	LH_CMD_WAIT,   /* later commands of `stream` wait until event `arg` fired */
	LH_CMD_HOST,   /* the host is busy `arg` ns; `stream` holds the host's device (0 unless
	                  the graph is placed on devices) */
	LH_CMD_SYNC,   /* the host blocks until every command issued on `stream` completed */
} LhCmdKind;

typedef struct {
	guint32 kind;   /* LhCmdKind */
	guint32 stream; /* index into the stream table */
	guint64 arg;    /* op index, event id or nanoseconds */
} LhCmd;

typedef enum {
	LH_ROLE_COMPUTE,
	LH_ROLE_ASYNC_COMPUTE,
	LH_ROLE_COLLECTIVE,
	LH_ROLE_P2P,
	LH_ROLE_H2D,
	LH_ROLE_D2H,
	LH_ROLE_MEMCPY,
	LH_ROLE_N
} LhStreamRole;

typedef struct {
	char *name; /* unique, no white space */
	LhStreamRole role;
	guint32 device; /* the device whose queues it feeds (placed graphs, docs/plan-format.md);
	                   0 otherwise. Appended: older plugins never read it. */
} LhStream;

/* Opaque: read a plan through the accessors below (docs/api.md). The layout a plugin built
 * against ABI 2 could read directly is kept (sim/plan-private.h), but no longer promised. */
typedef struct _LhPlan LhPlan;

LhPlan *lh_plan_new(void);
void lh_plan_free(LhPlan *p); /* NULL is fine */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(LhPlan, lh_plan_free)

guint32 lh_plan_add_stream(LhPlan *p, const char *name, LhStreamRole role);
/* A stream of device @device (a graph placed on devices, sim/graph.h); add_stream is device 0. */
guint32 lh_plan_add_stream_on(LhPlan *p, const char *name, LhStreamRole role, guint32 device);
guint32 lh_plan_n_streams(const LhPlan *p);
const LhStream *lh_plan_stream(const LhPlan *p, guint32 s);
guint32 lh_plan_n_cmds(const LhPlan *p);
const LhCmd *lh_plan_cmd(const LhPlan *p, guint32 i);
/* All commands as one array of lh_plan_n_cmds() (*@n), owned by the plan; valid until the next
 * command is added. May be NULL when there is none. */
const LhCmd *lh_plan_cmds(const LhPlan *p, guint32 *n);
/* Events numbered so far (lh_plan_new_event, or a plan file's events): ids 0 .. n - 1. */
guint32 lh_plan_n_events(const LhPlan *p);
/* Who made the plan and with which parameters (lh_plan_set_origin); NULL when unknown. Owned
 * by the plan. */
const char *lh_plan_scheduler(const LhPlan *p);
const char *lh_plan_params(const LhPlan *p);
/* The file the plan was read from (lh_plan_new_from_file), for messages; NULL otherwise. */
const char *lh_plan_source(const LhPlan *p);
/* The line of the plan file command @c came from (1-based); 0 for a plan not read from text. */
guint32 lh_plan_cmd_line(const LhPlan *p, guint32 c);

void lh_plan_run(LhPlan *p, guint32 stream, guint32 op);
guint32 lh_plan_new_event(LhPlan *p);
void lh_plan_signal(LhPlan *p, guint32 stream, guint32 event);
void lh_plan_wait(LhPlan *p, guint32 stream, guint32 event);
/* Convenience: a new event signaled on @from and waited on @to. Returns the event. */
guint32 lh_plan_link(LhPlan *p, guint32 from, guint32 to);
void lh_plan_host(LhPlan *p, guint64 ns);
/* The host of device @device is busy @ns (placed graphs: each device has its own host thread,
 * which issues the commands of that device's streams in plan order). A host command keeps its
 * device in LhCmd.stream; lh_plan_host is device 0. */
void lh_plan_host_on(LhPlan *p, guint32 device, guint64 ns);
void lh_plan_sync(LhPlan *p, guint32 stream);
/* Stamps who made the plan: both copied; NULL (and "" for @params) clears. */
void lh_plan_set_origin(LhPlan *p, const char *scheduler, const char *params);

/* The plan builder (docs/api.md#the-plan-builder): appends the commands of a list schedule.
 * Each non-input op i runs on plan stream @stream[i] (@stream has lh_graph_n_ops(@g) entries;
 * those of inputs are ignored), and ops are issued in the order of @order (@n op indices;
 * every non-input op exactly once, after all of its deps; inputs may appear and are skipped,
 * so lh_graph_topo() is a valid order). The builder adds the synchronisation: after an op that
 * has a successor on another stream, a signal of a new event on the op's stream; before an
 * op, a wait on that event for each dep on another stream, unless an earlier wait of the same
 * stream already covers it (it waited for that dep's stream at the dep's position or later).
 * On bad input (a stream not in @p, an op missing, twice or before one of its deps, an index
 * out of range) it appends nothing and fails with LH_PLAN_ERROR_INVALID naming the op. @g must
 * be finished. The built-in list schedulers (cpath, heft) emit their plans with it. */
gboolean lh_plan_add_list_schedule(LhPlan *p, const LhGraph *g, const guint32 *stream,
                                   const guint32 *order, guint32 n, GError **error);

/* Checks the plan against its graph (docs/design.md#plan-validation): every non-input op runs
 * exactly once, no input runs, every dep is ordered by stream order or a signal/wait chain, every
 * waited event is signaled exactly once, no event is signaled twice, no wait-for cycle. The error
 * names the ops, streams and events. @where prefixes messages (a file name) or NULL. */
gboolean lh_plan_validate(const LhPlan *p, const LhGraph *g, const char *where, GError **error);

/* Text format (docs/plan-format.md). The reader resolves op names against @g and reports
 * errors as "FILE:LINE:COL: message". */
LhPlan *lh_plan_new_from_file(const char *path, const LhGraph *g, GError **error);
LhPlan *lh_plan_new_from_data(const char *data, gsize len, const char *where, const LhGraph *g,
                              GError **error);
char *lh_plan_to_data(const LhPlan *p, const LhGraph *g);
gboolean lh_plan_write_file(const LhPlan *p, const LhGraph *g, const char *path, GError **error);

/* The event's name for messages: the plan file's name for it, else "e<id>". Returns @buf or a
 * name owned by the plan. */
const char *lh_plan_event_name(const LhPlan *p, guint64 e, char buf[32]);

const char *lh_stream_role_name(LhStreamRole r);
gboolean lh_stream_role_from_name(const char *s, LhStreamRole *out);
const char *lh_cmd_kind_name(LhCmdKind k);

G_END_DECLS
