// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* floodgate mode and bypass: the runtime switches, each change audited. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "log.h"
#include "opts.h"
#include "apply.h"
#include "sysutil.h"

/* Which of two words (0 or 1) cmd's argument is; -1 after saying it is neither. */
static int one_of(const char *cmd, const char *word, const char *w0, const char *w1)
{
	if (!strcmp(word, w0))
		return 0;
	if (!strcmp(word, w1))
		return 1;
	pr_warn("%s: \"%s\": expected %s or %s", cmd, word, w0, w1);
	return -1;
}

static int set_mode(const struct cli_args *a, struct fg_maps *m, __u32 mode)
{
	char why[FG_WHY_LEN] = "";
	int err;

	err = cli_lock_maps(m);
	if (err)
		return err;
	if (a->rule)
		err = fg_rule_set_mode(m, a->rule, mode, why);
	else
		err = fg_set_mode(m, mode);
	if (err)
		pr_warn("mode: %s", why[0] ? why : strerror(-err));
	return err;
}

int cli_mode(void *cfg)
{
	const struct cli_args *a = cfg;
	const char *name = a->pos[0];
	struct fg_maps m;
	char w[128];
	int pick, err;

	pick = one_of("mode", name, "enforce", "shadow");
	if (pick < 0)
		return FG_EXIT_USAGE;
	if (cli_open_maps(a, &m))
		return 1;
	err = set_mode(a, &m, pick ? FG_MODE_SHADOW : FG_MODE_ENFORCE);
	fg_maps_close(&m);
	if (err)
		return 1;
	cli_who(w, sizeof(w));
	if (a->rule) {
		pr_info("rule %s is now in %s mode (until the next reload from the file)",
			a->rule, name);
		fg_log_audit("rule %s set to %s mode by %s", a->rule, name, w);
	} else {
		pr_info("global mode is now %s%s", name,
			pick ? ": nothing is dropped, would-be drops count as shadow" : "");
		fg_log_audit("global mode set to %s by %s", name, w);
	}
	return 0;
}

static void log_bypass(const struct cli_args *a, bool on)
{
	char w[128];

	cli_who(w, sizeof(w));
	if (on && a->bypass_for) {
		pr_info("bypass ON for %.0f s: every packet passes, nothing is counted per rule",
			a->bypass_ns / 1e9);
		fg_log_audit("bypass ON for %.0f s by %s (pin dir %s)", a->bypass_ns / 1e9, w, a->dir);
	} else if (on) {
		pr_info("bypass ON until 'floodgate bypass off': every packet passes");
		fg_log_audit("bypass ON (no expiry) by %s (pin dir %s)", w, a->dir);
	} else {
		pr_info("bypass off: the policy is enforced again");
		fg_log_audit("bypass off by %s (pin dir %s)", w, a->dir);
	}
}

int cli_bypass(void *cfg)
{
	const struct cli_args *a = cfg;
	__u64 until = 0;
	struct fg_maps m;
	int pick, err;
	bool on;

	pick = one_of("bypass", a->pos[0], "on", "off");
	if (pick < 0)
		return FG_EXIT_USAGE;
	on = pick == 0;
	if (a->bypass_for && !on) {
		pr_warn("bypass off takes no --for");
		return FG_EXIT_USAGE;
	}
	if (a->bypass_for)
		until = fg_mono_coarse_ns() + a->bypass_ns;
	if (cli_open_maps(a, &m))
		return 1;
	err = cli_lock_maps(&m);
	if (!err) {
		err = fg_set_bypass(&m, on, until);
		if (err)
			pr_warn("bypass: %s", strerror(-err));
	}
	fg_maps_close(&m);
	if (err)
		return 1;
	log_bypass(a, on);
	return 0;
}
