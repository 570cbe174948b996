// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * floodgate shed off|on: the operator's switch for all adaptive shedding
 * (fg_shed_ctl.off), audited as bypass is. It stores that one word of the
 * mapped fg_shed and takes no lock, so it works with no daemon and while a
 * reload holds the pin dir. Pools (reserves, caps) and quotas still apply.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "lib/log.h"
#include "lib/opts.h"
#include "shed/shedstate.h"
#include "lib/sysutil.h"

/* What the program sheds now, as "normal 0.0%, bulk 40.0%, best-effort 100.0%". */
static void fracs_str(const struct fg_shed_ctl *v, char *buf, size_t len)
{
	double f[FG_NTIERS];

	fg_shedd_fracs(v, fg_mono_coarse_ns(), f);
	snprintf(buf, len, "normal %.1f%%, bulk %.1f%%, best-effort %.1f%%",
		 100 * f[FG_TIER_NORMAL], 100 * f[FG_TIER_BULK], 100 * f[FG_TIER_BEST_EFFORT]);
}

static void report(const struct cli_args *a, bool off, bool was, const char *before)
{
	char w[128];

	cli_who(w, sizeof(w));
	if (off)
		pr_info("shedding off%s: no tier is shed from the next packet (it was shedding %s); "
			"pools, reserves and quotas still apply; the controller is held at zero "
			"until 'floodgate shed on', across reloads and restarts",
			was ? " (it already was)" : "", before);
	else
		pr_info("shedding on%s: the controller starts again from zero, through its delay "
			"and ramp",
			was ? "" : " (it already was)");
	fg_log_audit("shedding %s (was %s) by %s (pin dir %s)", off ? "off" : "on",
		     was ? "off" : "on", w, a->dir);
}

int cli_shed(void *cfg)
{
	const struct cli_args *a = cfg;
	struct fg_shed_ctl *v = NULL;
	char before[96];
	struct fg_maps m;
	size_t len = 0;
	bool off, was = false;
	int err;

	if (strcmp(a->pos[0], "on") && strcmp(a->pos[0], "off")) {
		pr_warn("shed: \"%s\": expected on or off", a->pos[0]);
		return FG_EXIT_USAGE;
	}
	off = !strcmp(a->pos[0], "off");
	if (cli_open_maps(a, &m))
		return 1;
	err = fg_shed_map_open(m.fd[FGM_SHED], &v, &len);
	if (err) {
		pr_warn("mapping %s/fg_shed: %s", a->dir, strerror(-err));
		fg_maps_close(&m);
		return 1;
	}
	fracs_str(v, before, sizeof(before));
	err = fg_shed_switch_off(v, off, &was);
	fg_shed_map_close(&v, len);
	fg_maps_close(&m);
	if (err) {
		pr_warn("shed: %s", strerror(-err));
		return 1;
	}
	report(a, off, was, before);
	return 0;
}
