/* lhsim — the plan's layout (internal: sim/ only, not installed).
 *
 * Outside sim/, a plan is read through the accessors of sim/plan.h. The first fields keep the
 * order and types of the struct that sim/plan.h showed up to scheduler ABI 2, so that a
 * plugin built then which read them directly still works; new fields go at the end. The
 * built-in schedulers, in the same library, may use lh__plan_append() and the writers below. */
#pragma once

#include "sim/plan.h"

G_BEGIN_DECLS

struct _LhPlan {
	GArray *streams; /* of LhStream */
	GArray *cmds;    /* of LhCmd */
	guint32 n_events;
	char *scheduler; /* who made it, for titles; may be NULL */
	char *params;  /* the parameters it was made with ("async-compute-limit=2"); may be NULL */
	GArray *lines; /* of guint32: source line of each command when read from text, else NULL */
	char *source;  /* file it was read from, for error positions; may be NULL */
	GPtrArray
	    *event_names; /* of char *: the names a plan file gave its events, by id; or NULL */
};

/* Room for @n more commands at the end, returned for the caller to fill (every one of them)
 * before the next command is added: a scheduler that emits a command or more per op writes
 * them without a call each (issue 12: at 10^6 ops lhs made 2.3 M calls). Events still come
 * from lh_plan_new_event(). */
LhCmd *lh__plan_append(LhPlan *p, guint32 n);

/* Writes at @c the commands of lh_plan_run(@stream, @op): 1. */
static inline guint32 lh__cmds_run(LhCmd *c, guint32 stream, guint32 op)
{
	c[0] = (LhCmd){LH_CMD_RUN, stream, op};
	return 1;
}

/* Writes at @c the commands of lh_plan_link(@from, @to), with its event @e (from
 * lh_plan_new_event()): 2. */
static inline guint32 lh__cmds_link(LhCmd *c, guint32 from, guint32 to, guint32 e)
{
	c[0] = (LhCmd){LH_CMD_SIGNAL, from, e};
	c[1] = (LhCmd){LH_CMD_WAIT, to, e};
	return 2;
}

/* The device command @cmd runs on (docs/plan-format.md, "Several devices"): its stream's, or a
 * host command's own. */
guint32 lh__plan_cmd_device(const LhPlan *p, const LhCmd *cmd);

/* Each of @D devices' commands in plan order, as lists: @first[d] is device d's first command,
 * @dnext[c] the next command of c's device, @last[d] device d's last; the number of commands
 * ends a list (and is first[d] for a device without commands, whose last[d] is G_MAXUINT32).
 * Every command's device must be below @D. */
void lh__plan_device_lists(const LhPlan *p, guint32 D, guint32 *first, guint32 *dnext,
                           guint32 *last);

G_END_DECLS
