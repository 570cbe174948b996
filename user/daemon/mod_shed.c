// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The adaptive shedder's module (daemon.h, shedd.h): it samples on its
 * own interval (poll), between the daemon's ticks. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "daemon/daemon.h"
#include "daemon/metrics.h"
#include "daemon/shedd.h"
#include "lib/log.h"
#include "lib/sysutil.h"
#include "policy/policy.h"

static struct fg_shedd shed;

static int shed_start(struct fgd *d)
{
	int err = fg_shedd_start(&shed, &d->maps, d->cfg, getenv("FLOODGATE_RUN_DIR"),
				 fg_mono_coarse_ns());

	if (err) {
		char name[PATH_MAX + 32];

		fg_signal_name(&d->cfg->shed_signal, name, sizeof(name));
		pr_warn("shedding: cannot start (signal %s): %s", name, strerror(-err));
	} else if (shed.on) {
		pr_info("shedding: signal sampled every %gs, amount %.3f of %d tiers%s",
			d->cfg->shed.interval, shed.c.amount, shed.c.ntiers,
			shed.shadow ? ", shadow" : "");
	}
	return err;
}

static void shed_reloaded(struct fgd *d, const struct fg_config *old, const struct fg_config *ncfg)
{
	int err = fg_shedd_reload(&shed, ncfg, fg_mono_coarse_ns());

	(void)d;
	(void)old;
	if (err)
		pr_warn("reload: shedding: %s; the shedder keeps its previous settings",
			strerror(-err));
}

static __u64 shed_poll(struct fgd *d, __u64 now_ns)
{
	struct fg_shedd_change chg;

	fg_shedd_sample(&shed, &d->maps, now_ns, &chg);
	fg_shedd_log(&shed, &chg);
	return shed.on ? shed.next_ns : 0;
}

static void shed_snap(struct fgd *d, struct fg_metrics_snap *s)
{
	(void)d;
	s->shed = &shed;
}

static void shed_close(struct fgd *d, bool detach)
{
	(void)d;
	(void)detach;
	fg_shedd_stop(&shed);
}

const struct fg_module fg_mod_shed = {
	.name = "shedding",
	.start = shed_start,
	.reloaded = shed_reloaded,
	.poll = shed_poll,
	.snap = shed_snap,
	.close = shed_close,
};
