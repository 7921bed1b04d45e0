/* lhsim — the scheduler registry, plugin loading and the plan pipeline. */
#include "schedulers/scheduler.h"
#include "schedulers/placed.h"

#include <gmodule.h>
#include <string.h>

/* The quark's name is a string with dashes, which clang-format would space. */
/* clang-format off */
G_DEFINE_QUARK(lh-sched-error-quark, lh_sched_error)
/* clang-format on */

/* Built-ins in a static table, found by name; plugins are appended at run time. */
static const LhScheduler *const builtin[] = {
    &lh_sched_serial, &lh_sched_lhs,   &lh_sched_iree, &lh_sched_iree_cost,
    &lh_sched_heft,   &lh_sched_cpath, &lh_sched_xla,  &lh_sched_search,
};

static GMutex plugin_lock;
static GPtrArray *plugins;       /* of LhScheduler *: the registry's copies, never freed */
static GPtrArray *plugin_tables; /* of const void *: each plugin's own table, same index */
static GPtrArray *plugin_paths;  /* of char *: the file each was loaded from, same index */

/* The bytes of LhScheduler a plugin of each version has: its table ends there, and the loader
 * must not read further (the slots after are not the plugin's). Index: version. */
static const gsize table_size[] = {
    [2] = G_STRUCT_OFFSET(LhScheduler, supports),
    [3] = sizeof(LhScheduler),
};
G_STATIC_ASSERT(G_N_ELEMENTS(table_size) == LH_SCHEDULER_ABI + 1);

const LhScheduler *lh_scheduler_find(const char *name)
{
	if (!name)
		return NULL;
	for (gsize i = 0; i < G_N_ELEMENTS(builtin); i++)
		if (strcmp(builtin[i]->name, name) == 0)
			return builtin[i];
	const LhScheduler *found = NULL;
	g_mutex_lock(&plugin_lock);
	for (guint i = 0; plugins && i < plugins->len && !found; i++) {
		const LhScheduler *s = g_ptr_array_index(plugins, i);
		if (strcmp(s->name, name) == 0)
			found = s;
	}
	g_mutex_unlock(&plugin_lock);
	return found;
}

const LhScheduler **lh_scheduler_list(void)
{
	g_mutex_lock(&plugin_lock);
	guint np = plugins ? plugins->len : 0;
	const LhScheduler **l = g_new0(const LhScheduler *, G_N_ELEMENTS(builtin) + np + 1);
	guint k = 0;
	for (gsize i = 0; i < G_N_ELEMENTS(builtin); i++)
		l[k++] = builtin[i];
	for (guint i = 0; i < np; i++)
		l[k++] = g_ptr_array_index(plugins, i);
	g_mutex_unlock(&plugin_lock);
	return l;
}

const LhScheduler *lh_scheduler_lookup(const char *name, GError **error)
{
	if (!name)
		name = ""; /* an empty entry in a list ("lhs,,heft") */
	const LhScheduler *s = lh_scheduler_find(name);
	if (s)
		return s;
	g_autofree const LhScheduler **l = lh_scheduler_list();
	GString *names = g_string_new(NULL);
	for (guint i = 0; l[i]; i++)
		g_string_append_printf(names, "%s%s", i ? ", " : "", l[i]->name);
	g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_UNKNOWN,
	            "unknown scheduler '%s' (schedulers: %s)", name, names->str);
	g_string_free(names, TRUE);
	return NULL;
}

const char *lh_scheduler_plugin_path(const LhScheduler *s)
{
	const char *path = NULL;
	g_mutex_lock(&plugin_lock);
	for (guint i = 0; plugins && i < plugins->len && !path; i++)
		if (g_ptr_array_index(plugins, i) == s)
			path = g_ptr_array_index(plugin_paths, i);
	g_mutex_unlock(&plugin_lock);
	return path;
}

/* A plugin's parameter table is checked when it loads, so that a mistake in it is an error
 * naming the plugin, not an abort in the middle of a run. Each default is parsed by
 * lh_params_new itself, as a value given for a copy of the entry without a default. */
static gboolean check_params(const LhScheduler *s, const char *path, GError **error)
{
	const char *why = NULL;
	g_autofree char *msg = NULL;
	guint i = 0;
	for (const LhParamSpec *sp = s->params; sp && sp->name; sp++, i++) {
		if (!*sp->name || strpbrk(sp->name, "=:, \t\n")) {
			why = "is not a valid parameter name (empty, or with '=', ':', ',' or "
			      "white space)";
			break;
		}
		for (const LhParamSpec *q = s->params; q < sp && !why; q++)
			if (!strcmp(q->name, sp->name))
				why = "appears twice";
		if (why)
			break;
		if (sp->type > LH_PARAM_CHOICE) {
			why = "has an unknown type";
			break;
		}
		if (sp->type == LH_PARAM_CHOICE && (!sp->choices || !*sp->choices)) {
			why = "is a choice without choices";
			break;
		}
		if ((sp->type == LH_PARAM_INT || sp->type == LH_PARAM_DOUBLE) &&
		    !(sp->min <= sp->max)) {
			why = "has a range whose minimum is above its maximum";
			break;
		}
		if (sp->deflt) {
			LhParamSpec one[2] = {*sp, {0}};
			one[0].deflt = NULL;
			g_autofree char *kv = g_strdup_printf("%s=%s", sp->name, sp->deflt);
			const char *const kvs[] = {kv, NULL};
			g_autoptr(GError) pe = NULL;
			g_autoptr(LhParams) pp = lh_params_new(one, kvs, &pe);
			if (!pp) {
				msg = g_strdup_printf("has a bad default: %s", pe->message);
				why = msg;
				break;
			}
		}
	}
	if (!why)
		return TRUE;
	g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PLUGIN,
	            "%s: scheduler '%s': parameter %u ('%s') %s; fix the plugin's parameter table",
	            path, s->name, i + 1, s->params[i].name ? s->params[i].name : "", why);
	return FALSE;
}

const LhScheduler *lh_scheduler_load_plugin(const char *path, GError **error)
{
	if (!g_module_supported()) {
		g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PLUGIN,
		            "%s: plugins are not supported on this platform", path);
		return NULL;
	}
	/* A path without a directory would be searched in the library path; make it explicit. */
	g_autofree char *full = g_path_is_absolute(path) || strchr(path, '/')
	                            ? g_strdup(path)
	                            : g_strconcat("./", path, NULL);
	/* GModule would try PATH.so too, and report that name: say what is wrong with PATH. */
	if (!g_file_test(full, G_FILE_TEST_EXISTS) || g_file_test(full, G_FILE_TEST_IS_DIR)) {
		g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PLUGIN,
		            "%s: cannot load the plugin: %s", path,
		            g_file_test(full, G_FILE_TEST_IS_DIR) ? "a directory, not a .so file"
		                                                  : "no such file");
		return NULL;
	}
	GModule *mod = g_module_open(full, G_MODULE_BIND_LOCAL);
	if (!mod) {
		g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PLUGIN,
		            "%s: cannot load the plugin: %s", path, g_module_error());
		return NULL;
	}
	LhSchedulerPluginFunc fn = NULL;
	if (!g_module_symbol(mod, "lh_scheduler_plugin", (gpointer *)&fn) || !fn) {
		g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PLUGIN,
		            "%s: not an lhsim scheduler plugin: it does not export "
		            "lh_scheduler_plugin()",
		            path);
		g_module_close(mod);
		return NULL;
	}
	/* Only the version is read before it is known to be one this loader understands: the
	 * rest of the table has that version's layout. */
	const void *table = fn();
	guint32 version = table ? *(const guint32 *)table : 0;
	if (!table) {
		g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PLUGIN,
		            "%s: lh_scheduler_plugin() returned NULL", path);
		g_module_close(mod);
		return NULL;
	}
	if (version < LH_SCHEDULER_ABI_MIN || version > LH_SCHEDULER_ABI) {
		g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PLUGIN,
		            "%s: wrong ABI version: the plugin was built for scheduler ABI %u, "
		            "this lhsim loads ABI %u to %u; rebuild it against this lhsim",
		            path, version, LH_SCHEDULER_ABI_MIN, LH_SCHEDULER_ABI);
		g_module_close(mod);
		return NULL;
	}
	/* This version's layout: the plugin's slots, and NULL for the ones it does not have. */
	LhScheduler layout = {0};
	memcpy(&layout, table, table_size[version]);
	const LhScheduler *s = &layout;
	if (!s->name || !*s->name || !s->plan) {
		g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PLUGIN,
		            "%s: its scheduler has no name or no plan function", path);
		g_module_close(mod);
		return NULL;
	}
	g_mutex_lock(&plugin_lock);
	const LhScheduler *again = NULL;
	for (guint i = 0; plugin_tables && i < plugin_tables->len && !again; i++)
		if (g_ptr_array_index(plugin_tables, i) == table)
			again = g_ptr_array_index(plugins, i);
	g_mutex_unlock(&plugin_lock);
	if (again) {
		/* The same file again (by any path): already loaded, nothing to do. */
		g_module_close(mod);
		return again;
	}
	const LhScheduler *same = lh_scheduler_find(s->name);
	if (same) {
		const char *other = lh_scheduler_plugin_path(same);
		if (other)
			g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PLUGIN,
			            "%s: a scheduler named '%s' is already loaded from %s", path,
			            s->name, other);
		else
			g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_PLUGIN,
			            "%s: a scheduler named '%s' already exists (built in)", path,
			            s->name);
		g_module_close(mod);
		return NULL;
	}
	if (!check_params(s, path, error)) {
		g_module_close(mod);
		return NULL;
	}
	g_module_make_resident(mod);
	LhScheduler *copy = g_memdup2(&layout, sizeof layout);
	g_mutex_lock(&plugin_lock);
	if (!plugins) {
		plugins = g_ptr_array_new();
		plugin_tables = g_ptr_array_new();
		plugin_paths = g_ptr_array_new();
	}
	g_ptr_array_add(plugins, copy);
	g_ptr_array_add(plugin_tables, (gpointer)table);
	g_ptr_array_add(plugin_paths, g_strdup(path));
	g_mutex_unlock(&plugin_lock);
	return copy;
}

gboolean lh_scheduler_supports(const LhScheduler *s, const LhGraph *g, const LhHw *hw,
                               GError **error)
{
	g_return_val_if_fail(s && g && hw, FALSE);
	if (!s->supports)
		return TRUE;
	GError *e = NULL;
	if (s->supports(g, hw, &e))
		return TRUE;
	if (e)
		g_propagate_error(error, e);
	else
		g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_UNSUPPORTED,
		            "%s: the scheduler cannot plan graph '%s' and gave no reason", s->name,
		            lh_graph_name(g));
	return FALSE;
}

LhPlan *lh_scheduler_run(const LhScheduler *s, const LhGraph *g, const LhHw *hw,
                         const char *const *kv, FILE *explain, GError **error)
{
	g_return_val_if_fail(s && g && hw, NULL);
	if (!lh_scheduler_supports(s, g, hw, error))
		return NULL;
	if (lh_graph_placed(g)) /* each device's program on its own (schedulers/placed.c) */
		return lh_scheduler_run_placed(s, g, hw, NULL, kv, explain, error);
	g_autoptr(GError) pe = NULL;
	g_autoptr(LhParams) p = lh_params_new(s->params, kv, &pe);
	if (!p) {
		g_set_error(error, LH_SCHED_ERROR, pe->code, "%s: %s", s->name, pe->message);
		return NULL;
	}
	lh_params_set_explain(p, explain);
	LhPlan *plan = s->plan(g, hw, p, error);
	if (!plan) {
		if (error && !*error)
			g_set_error(error, LH_SCHED_ERROR, LH_SCHED_ERROR_FAILED,
			            "%s: the scheduler made no plan and gave no reason", s->name);
		return NULL;
	}
	g_autofree char *desc = lh_params_describe(p);
	lh_plan_set_origin(plan, s->name, desc);
	return plan;
}
