/* lhsim calibrate — measure the device and write a hardware model (.ini) for --hw. */
#include "cli/common.h"

#include <stdio.h>
#include <string.h>

int cli_calibrate(int argc, char **argv)
{
	g_autofree char *backend = NULL, *hw_name = NULL, *out_path = NULL;
	g_autofree char *sched = NULL, *plan_path = NULL, *step = NULL;
	g_auto(GStrv) from = NULL, params = NULL;
	int device = -1;
	GOptionEntry entries[] = {
	    {"backend", 'b', 0, G_OPTION_ARG_STRING, &backend,
	     "what to measure: cuda (required unless --from)", "B"},
	    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &out_path, "the .ini to write (required)",
	     "FILE"},
	    {"hw", 0, 0, G_OPTION_ARG_STRING, &hw_name,
	     "base model for what one device cannot measure (the collective link), or where the "
	     "--from fit starts (default h100-sxm)",
	     "H"},
	    {"device", 0, 0, G_OPTION_ARG_INT, &device,
	     "cuda: device ordinal (default 0); --from: the device to read (default: the lowest in "
	     "each file)",
	     "N"},
	    {"from", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &from,
	     "fit to this measured timeline instead of measuring (Chrome trace or Nsight SQLite), "
	     "repeatable; takes the GRAPH it measured",
	     "FILE"},
	    {"sched", 's', 0, G_OPTION_ARG_STRING, &sched,
	     "--from: scheduler that gives each op its stream (default serial)", "S"},
	    {"param", 'p', 0, G_OPTION_ARG_STRING_ARRAY, &params,
	     "--from: scheduler parameter, repeatable", "K=V"},
	    {"plan", 0, 0, G_OPTION_ARG_FILENAME, &plan_path,
	     "--from: the plan instead of a scheduler", "P"},
	    {"step", 0, 0, G_OPTION_ARG_STRING, &step,
	     "--from: glob naming step ranges (see 'lhsim validate --help')", "GLOB"},
	    {NULL, 0, 0, 0, NULL, NULL, NULL},
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("[GRAPH]");
	g_option_context_set_summary(
	    ctx,
	    "Measures the GPU with the replay's own kernels and copies: HBM bandwidth (a large\n"
	    "device-to-device copy), PCIe bandwidth each way alone and duplex, copy latency,\n"
	    "launch and event cost, FMA rate, kernel overhead, copy engines, and how two\n"
	    "concurrent kernels share (sm_sharing). Writes an .ini that --hw reads, each value\n"
	    "commented with how it was measured. Takes a few seconds.\n"
	    "With --from FILE [--from FILE ...] GRAPH it measures nothing: it fits the keys that\n"
	    "the measured timelines of GRAPH determine (docs/measured.md) by least squares,\n"
	    "starting from --hw, and keeps every key no measurement touches.");
	g_option_context_add_main_entries(ctx, entries, NULL);
	int status;
	if (!cli_parse(ctx, &argc, &argv, &status))
		return status;
	if (from) {
		if (backend)
			return cli_usage("calibrate", "--from and --backend exclude each other");
		if (argc > 2)
			return cli_usage("calibrate", "expected at most one GRAPH, got %d",
			                 argc - 1);
		if (!out_path)
			return cli_usage("calibrate", "-o FILE.ini is required");
		if (plan_path && (sched || params))
			return cli_usage("calibrate",
			                 "--plan replaces the scheduler: drop --sched and -p");
		return cli_calibrate_from(from, argc > 1 ? argv[1] : NULL, hw_name, sched, params,
		                          plan_path, step, device, out_path);
	}
	if (argc > 1)
		return cli_usage("calibrate", "unexpected argument '%s'", argv[1]);
	if (sched || plan_path || params || step)
		return cli_usage("calibrate", "--sched, --plan, -p and --step go with --from");
	if (device < 0)
		device = 0;
	if (!backend)
		return cli_usage("calibrate", "--backend (cuda) or --from FILE is required");
	if (!out_path)
		return cli_usage("calibrate", "-o FILE.ini is required");

	GError *e = NULL;
	if (!cli_claim_stdout("--output", out_path, &e) || !lh_output_check(out_path, &e))
		return cli_fail(e);
	const LhBackend *be = lh_backend_lookup(backend, &e);
	if (!be)
		return cli_fail(e);
	if (!be->calibrate)
		return cli_usage("calibrate", "the %s backend cannot calibrate (only cuda can)",
		                 be->name);
	g_autoptr(LhHw) base = cli_load_hw(hw_name, &e);
	if (!base)
		return cli_fail(e);
	/* Hardware queues are fixed when CUDA starts; unless the user chose, the base's. */
	g_autofree char *queues = g_strdup_printf("%u", base->hw_queues);
	g_setenv("CUDA_DEVICE_MAX_CONNECTIONS", queues, FALSE);
	if (!be->available(&e)) {
		fprintf(stderr, "lhsim: %s\n", e->message);
		g_error_free(e);
		return LH_EXIT_FAILED;
	}
	LhReplayOptions opt;
	lh_replay_options_init(&opt);
	opt.device = device;
	g_autoptr(GHashTable) notes =
	    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	g_autoptr(LhHw) hw = be->calibrate(base, &opt, notes, &e);
	if (!hw) {
		fprintf(stderr, "lhsim: %s\n", e->message);
		g_error_free(e);
		return LH_EXIT_FAILED;
	}
	g_autoptr(GDateTime) now = g_date_time_new_now_utc();
	g_autofree char *when = g_date_time_format(now, "%Y-%m-%d %H:%M UTC");
	g_autofree char *header = g_strdup_printf(
	    "%s, measured by `lhsim calibrate --backend %s` on %s.\n"
	    "The compute and memory numbers describe the replay's synthetic kernels (fp32 FMA\n"
	    "loop, float4 streaming), so that a model read with --hw predicts what the cuda\n"
	    "backend runs; link numbers come from the base model %s.",
	    hw->name, be->name, when, base->name);
	g_autofree char *text = lh_calibration_to_ini(hw, notes, header);
	/* What we write must be what --hw reads. */
	g_autoptr(LhHw) back = lh_hw_new_from_data(text, strlen(text), out_path, &e);
	if (!back) {
		fprintf(stderr, "lhsim: calibration produced an unreadable model (a bug): %s\n",
		        e->message);
		g_error_free(e);
		return LH_EXIT_FAILED;
	}
	if (!lh_write_file_atomic(out_path, text, strlen(text), &e))
		return cli_fail(e);
	if (cli_report_stream() == stdout)
		fputs(text, stdout);
	return 0;
}
