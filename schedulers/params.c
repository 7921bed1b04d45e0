/* lhsim — scheduler parameters: parsing "name=value" against a spec, and the explain sink. */
#include "schedulers/scheduler.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

struct _LhParams {
	const LhParamSpec *spec;
	guint n;
	char **value; /* per spec entry: the user's text or NULL */
	double *num;  /* parsed INT/DOUBLE/BOOL value, or the CHOICE index */
	FILE *explain;
};

static guint spec_len(const LhParamSpec *spec)
{
	guint n = 0;
	while (spec && spec[n].name)
		n++;
	return n;
}

static char *list_params(const LhParamSpec *spec)
{
	GString *s = g_string_new(NULL);
	for (guint i = 0; spec && spec[i].name; i++)
		g_string_append_printf(s, "%s%s", i ? ", " : "", spec[i].name);
	if (!s->len)
		g_string_append(s, "none");
	return g_string_free(s, FALSE);
}

/* Parses @text for spec entry @sp into *@out. */
static gboolean parse_value(const LhParamSpec *sp, const char *text, double *out, GError **error)
{
	char *end = NULL;
	switch (sp->type) {
	case LH_PARAM_INT: {
		errno = 0;
		gint64 v = g_ascii_strtoll(text, &end, 10);
		if (errno || end == text || *end) {
			g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PARAM,
			            "parameter '%s': '%s' is not an integer (valid: %g..%g)",
			            sp->name, text, sp->min, sp->max);
			return FALSE;
		}
		*out = (double)v;
		break;
	}
	case LH_PARAM_DOUBLE: {
		double v = g_ascii_strtod(text, &end);
		if (end == text || *end || !isfinite(v)) {
			g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PARAM,
			            "parameter '%s': '%s' is not a number (valid: %g..%g)",
			            sp->name, text, sp->min, sp->max);
			return FALSE;
		}
		*out = v;
		break;
	}
	case LH_PARAM_BOOL:
		if (!strcmp(text, "true") || !strcmp(text, "1") || !strcmp(text, "yes"))
			*out = 1;
		else if (!strcmp(text, "false") || !strcmp(text, "0") || !strcmp(text, "no"))
			*out = 0;
		else {
			g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PARAM,
			            "parameter '%s': '%s' is not a boolean (valid: true, false)",
			            sp->name, text);
			return FALSE;
		}
		return TRUE;
	case LH_PARAM_CHOICE: {
		g_auto(GStrv) ch = g_strsplit(sp->choices, "|", -1);
		for (guint i = 0; ch[i]; i++)
			if (strcmp(ch[i], text) == 0) {
				*out = i;
				return TRUE;
			}
		/* A last choice "*" takes any other non-empty name (search's start: a plugin
		 * scheduler's name is known only at run time); the scheduler checks it. */
		for (guint i = 0; ch[i]; i++)
			if (!ch[i + 1] && strcmp(ch[i], "*") == 0 && *text) {
				*out = i;
				return TRUE;
			}
		g_autofree char *valid = g_strjoinv(", ", ch);
		g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PARAM,
		            "parameter '%s': '%s' is not a valid choice (valid: %s)", sp->name,
		            text, valid);
		return FALSE;
	}
	}
	if (*out < sp->min || *out > sp->max) {
		g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PARAM,
		            "parameter '%s' = %s is out of range (valid: %g..%g)", sp->name, text,
		            sp->min, sp->max);
		return FALSE;
	}
	return TRUE;
}

LhParams *lh_params_new(const LhParamSpec *spec, const char *const *kv, GError **error)
{
	g_autoptr(LhParams) p = g_new0(LhParams, 1);
	p->spec = spec;
	p->n = spec_len(spec);
	p->value = g_new0(char *, p->n + 1);
	p->num = g_new0(double, p->n + 1);
	for (guint i = 0; i < p->n; i++)
		if (spec[i].deflt && !parse_value(&spec[i], spec[i].deflt, &p->num[i], error))
			g_error("parameter '%s' has a bad default '%s'", spec[i].name,
			        spec[i].deflt); /* a bug in the scheduler's table */
	for (const char *const *k = kv; k && *k; k++) {
		const char *eq = strchr(*k, '=');
		if (!eq || eq == *k) {
			g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PARAM,
			            "'%s' is not of the form name=value", *k);
			return NULL;
		}
		g_autofree char *name = g_strndup(*k, eq - *k);
		guint i = 0;
		while (i < p->n && strcmp(spec[i].name, name) != 0)
			i++;
		if (i == p->n) {
			g_autofree char *valid = list_params(spec);
			g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PARAM,
			            "unknown parameter '%s' (valid: %s)", name, valid);
			return NULL;
		}
		if (p->value[i]) {
			g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PARAM,
			            "parameter '%s' is given twice (%s=%s, then %s)", name, name,
			            p->value[i], *k);
			return NULL;
		}
		if (!parse_value(&spec[i], eq + 1, &p->num[i], error))
			return NULL;
		g_free(p->value[i]);
		p->value[i] = g_strdup(eq + 1);
	}
	return g_steal_pointer(&p);
}

void lh_params_free(LhParams *p)
{
	if (!p)
		return;
	if (p->value)
		for (guint i = 0; i < p->n; i++)
			g_free(p->value[i]);
	g_free(p->value);
	g_free(p->num);
	g_free(p);
}

static guint idx(const LhParams *p, const char *name, LhParamType t)
{
	for (guint i = 0; i < p->n; i++)
		if (strcmp(p->spec[i].name, name) == 0) {
			g_return_val_if_fail(p->spec[i].type == t, i);
			return i;
		}
	g_critical("parameter '%s' is not in the scheduler's table", name);
	return G_MAXUINT;
}

gint64 lh_params_get_int(const LhParams *p, const char *name)
{
	guint i = idx(p, name, LH_PARAM_INT);
	return i == G_MAXUINT ? 0 : (gint64)p->num[i];
}

double lh_params_get_double(const LhParams *p, const char *name)
{
	guint i = idx(p, name, LH_PARAM_DOUBLE);
	return i == G_MAXUINT ? 0 : p->num[i];
}

gboolean lh_params_get_bool(const LhParams *p, const char *name)
{
	guint i = idx(p, name, LH_PARAM_BOOL);
	return i == G_MAXUINT ? FALSE : p->num[i] != 0;
}

const char *lh_params_get_choice(const LhParams *p, const char *name)
{
	static GMutex lock;
	static GHashTable *interned;
	guint i = idx(p, name, LH_PARAM_CHOICE);
	if (i == G_MAXUINT)
		return "";
	g_auto(GStrv) ch = g_strsplit(p->spec[i].choices, "|", -1);
	/* Return a string that lives as long as the process, like the spec's own text. */
	g_mutex_lock(&lock);
	if (!interned)
		interned = g_hash_table_new(g_str_hash, g_str_equal);
	/* "*": the name given (or the default). */
	const char *want = strcmp(ch[(guint)p->num[i]], "*") == 0
	                       ? (p->value[i] ? p->value[i] : p->spec[i].deflt)
	                       : ch[(guint)p->num[i]];
	const char *s = g_hash_table_lookup(interned, want);
	if (!s) {
		char *c = g_strdup(want);
		g_hash_table_insert(interned, c, c);
		s = c;
	}
	g_mutex_unlock(&lock);
	return s;
}

gboolean lh_params_is_set(const LhParams *p, const char *name)
{
	for (guint i = 0; i < p->n; i++)
		if (strcmp(p->spec[i].name, name) == 0)
			return p->value[i] != NULL;
	return FALSE;
}

char *lh_params_describe(const LhParams *p)
{
	GString *s = g_string_new(NULL);
	for (guint i = 0; i < p->n; i++)
		if (p->value[i])
			g_string_append_printf(s, "%s%s=%s", s->len ? " " : "", p->spec[i].name,
			                       p->value[i]);
	return g_string_free(s, FALSE);
}

void lh_params_set_explain(LhParams *p, FILE *sink)
{
	p->explain = sink;
}

gboolean lh_params_explaining(const LhParams *p)
{
	return p && p->explain;
}

void lh_params_explain(const LhParams *p, const char *fmt, ...)
{
	if (!p || !p->explain)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(p->explain, fmt, ap);
	va_end(ap);
	fputc('\n', p->explain);
}
