// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * floodgate: the operator CLI. Works straight from the pinned maps, whether
 * floodgated runs or not (after a SIGKILL the filter still enforces and
 * `stats`, `bypass` or `detach` still work). This file holds the command
 * and option tables; the commands are in cli_*.c (see cli.h).
 *
 * Exit status: 0 ok, 1 runtime failure, 2 bad usage.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "lib/complete.h"
#include "lib/log.h"
#include "lib/opts.h"
#include "policy/policy.h"
#include "lib/units.h"

#define A struct cli_args

/* --for DURATION: "90s", "5m", "1h" */
static int opt_for(const struct fg_opt *o, const char *val, void *cfg, char *why)
{
	struct cli_args *a = cfg;

	(void)o;
	if (fg_parse_duration(val, &a->bypass_ns) || !a->bypass_ns)
		return fg_opt_fail(why, "\"%s\" is not a duration (e.g. 90s, 5m, 1h)", val);
	a->bypass_for = true;
	return 0;
}

/* allow/deny add --for DURATION: up to FG_RT_MAX_FOR */
#define FG_RT_MAX_FOR (366ull * 86400 * 1000000000ull)
static int opt_rt_for(const struct fg_opt *o, const char *val, void *cfg, char *why)
{
	struct cli_args *a = cfg;

	(void)o;
	if (fg_parse_duration(val, &a->rt_ns) || !a->rt_ns || a->rt_ns > FG_RT_MAX_FOR)
		return fg_opt_fail(why, "\"%s\" is not a duration (e.g. 90s, 5m, 1h; at most 366d)",
				   val);
	a->rt_for = true;
	return 0;
}

/* stats -o pass,drop,rt_deny: outcome names from the counters' own table */
static int opt_cols(const struct fg_opt *o, const char *val, void *cfg, char *why)
{
	struct cli_args *a = cfg;
	char buf[256], *save = NULL;
	size_t used = 0;

	(void)o;
	a->ncols = 0;
	if (!strcmp(val, "all")) {
		for (int i = 0; i < FG_OUT_MAX; i++)
			a->cols[a->ncols++] = i;
		return 0;
	}
	snprintf(buf, sizeof(buf), "%s", val);
	for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		int i;

		for (i = 0; i < FG_OUT_MAX && strcmp(w, fg_outcome_names[i]); i++)
			;
		if (i < FG_OUT_MAX && a->ncols < FG_OUT_MAX) {
			a->cols[a->ncols++] = i;
			continue;
		}
		char list[256];

		for (int k = 0; k < FG_OUT_MAX && used < sizeof(list); k++)
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
						 k ? "," : "", fg_outcome_names[k]);
		return fg_opt_fail(why, "\"%s\" is not an outcome (all, or a list of: %s)", w,
				   list);
	}
	if (!a->ncols)
		return fg_opt_fail(why, "no outcome named");
	return 0;
}

static const struct fg_opt global_opts[] = {
	FG_OPT_STR("pin-dir", 'p', A, pin_dir, "DIR",
		   "pin dir (default $" FG_PIN_DIR_ENV " or " FG_PIN_DIR_DEFAULT ")"),
	FG_OPT_BOOL("verbose", 'v', A, verbose, "debug output"),
	FG_OPT_STR("interface", 'i', A, iface, "IF",
		   "without a pin dir: the filter running on IF (when several lost their pins)"),
	FG_OPT_VERSION,
	FG_OPT_HELP_END("help for the command"),
};

#define OPT_JSON FG_OPT_BOOL("json", 'j', A, json, "JSON output (schema in floodgate(8))")

static const struct fg_opt status_opts[] = {
	OPT_JSON,
	FG_OPT_END,
};
static const struct fg_opt stats_opts[] = {
	OPT_JSON,
	FG_OPT_FLAG_U64("watch", 'w', A, watch, watch_secs, "SECS", 1, 3600, "a number of seconds",
			"print rates every SECS (default 1)"),
	FG_OPT_FUNC("output", 'o', opt_cols, 0, "LIST",
		    "the outcome columns, e.g. pass,drop,rt_deny, or all (default: those that "
		    "happened)"),
	FG_OPT_END,
};
static const struct fg_opt top_opts[] = {
	FG_OPT_U64("count", 'n', A, top_n, "N", 1, 100000, "a count",
		   "show N sources (default 10)"),
	OPT_JSON,
	FG_OPT_END,
};
static const struct fg_opt mode_opts[] = {
	FG_OPT_STR("rule", 'r', A, rule, "NAME", "only this rule"),
	FG_OPT_END,
};
static const struct fg_opt bypass_opts[] = {
	FG_OPT_FUNC("for", 'f', opt_for, 0, "DURATION",
		    "switch off by itself after DURATION (90s, 5m, 1h)"),
	FG_OPT_END,
};
static const struct fg_opt list_opts[] = {
	FG_OPT_FUNC(
		"for", 'f', opt_rt_for, 0, "DURATION",
		"add: the entry ends by itself after DURATION (90s, 5m, 1h; default: until deleted)"),
	FG_OPT_STR("comment", 'c', A, comment, "TEXT", "add: why (up to 63 printable characters)"),
	OPT_JSON,
	FG_OPT_END,
};
static const struct fg_opt kernel_opts[] = {
	OPT_JSON,
	FG_OPT_END,
};
static const struct fg_opt check_opts[] = {
	OPT_JSON,
	FG_OPT_BOOL("quiet", 'q', A, quiet,
		    "nothing on success (errors, warnings and what the kernel cannot run still)"),
	FG_OPT_END,
};
static const struct fg_opt detach_opts[] = {
	FG_OPT_BOOL("force", 'f', A, force, "stop a running floodgated first (SIGTERM)"),
	FG_OPT_END,
};

static int cli_completion(void *cfg);

static const struct fg_cmd cmds[] = {
	{ "status", "[--json]", "daemon, interfaces, mode, bypass, policy", 0, 0, status_opts,
	  cli_status },
	{ "stats", "[--json] [--watch [SECS]] [-o LIST]", "per-rule counters (summed over CPUs)", 0,
	  0, stats_opts, cli_stats },
	{ "top", "[-n N] [--json]", "most throttled sources", 0, 0, top_opts, cli_top },
	{ "mode", "[enforce|shadow|file] [--rule NAME]",
	  "the mode in force; or override the file's (until 'mode file')", 0, 1, mode_opts,
	  cli_mode },
	{ "bypass", "[on [--for DURATION] | off]", "kill switch: pass everything; alone: its state",
	  0, 1, bypass_opts, cli_bypass },
	{ "shed", "off | on",
	  "adaptive shedding off at once, daemon or not (quotas, pools stay), or on", 1, 1, NULL,
	  cli_shed },
	{ "deny", "add PREFIX [--for D] [--comment T] | del PREFIX | list [--json]",
	  "incident-time deny entries, before the file's lists", 1, 2, list_opts, cli_deny },
	{ "allow", "add PREFIX [--for D] [--comment T] | del PREFIX | list [--json]",
	  "incident-time allow entries, before the file's lists", 1, 2, list_opts, cli_allow },
	{ "verified", "list [--json] | del ADDR",
	  "sources whose address SYN authentication proved (docs/syn-auth.md)", 1, 2, kernel_opts,
	  cli_verified },
	{ "check", "[--json] [--quiet] FILE",
	  "validate a policy file and say what it does (-v: the compiled figures too)", 1, 1,
	  check_opts, cli_check },
	{ "reload", "", "make floodgated re-read its policy file", 0, 0, NULL, cli_reload },
	{ "detach", "[--force]", "detach from all interfaces and remove the pin dir", 0, 0,
	  detach_opts, cli_detach },
	{ "kernel", "[--json]", "what this kernel allows, and what floodgate does without the rest",
	  0, 0, kernel_opts, cli_kernel },
	{ "completion", "bash|zsh", "print a shell completion script (make install installs both)",
	  1, 1, NULL, cli_completion },
	{ NULL },
};

FG_DEFINE_PROG(prog, "floodgate", "[--pin-dir DIR] COMMAND [ARGS]", global_opts, .cmds = cmds);

/* From the tables above: every command, option and first word there is. */
static int cli_completion(void *cfg)
{
	const struct cli_args *a = cfg;

	if (fg_prog_completion(stdout, &prog, a->pos[0])) {
		pr_err("completion: \"%s\": expected bash or zsh", a->pos[0]);
		return FG_EXIT_USAGE;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct cli_args a = { .top_n = 10, .watch_secs = 1 };
	struct fg_parsed p;
	int rc;

	fg_log_init("floodgate", FG_LOG_INFO, false);
	fg_log_wrap(CLI_WIDTH);
	rc = fg_prog_args(&prog, argc, argv, &a, &p);
	if (rc >= 0)
		return rc;
	if (a.verbose)
		fg_log_set_level(FG_LOG_DEBUG);
	for (int i = 0; i < p.npos && i < (int)(sizeof(a.pos) / sizeof(a.pos[0])); i++)
		a.pos[i] = p.pos[i];
	a.npos = p.npos;
	a.cmd = p.cmd->name;
	a.dir = fg_pin_dir_choose(a.pin_dir);
	return p.cmd->fn(&a);
}
