// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The fleet leases' module (daemon.h, fleetd.h). */
#include <string.h>
#include "daemon/daemon.h"
#include "daemon/fleetd.h"
#include "daemon/metrics.h"
#include "lib/log.h"
#include "lib/sysutil.h"

static struct fg_fleetd *fleet;

static int fleet_init(struct fgd *d)
{
	int err = fg_fleetd_open(&fleet, &d->maps, d->dir);

	if (err)
		pr_warn("fleet: mapping fg_lease in %s: %s", d->dir, strerror(-err));
	return err;
}

static int fleet_before_flip(struct fgd *d, const struct fg_config *ncfg, char *why)
{
	(void)d;
	return fg_fleetd_before_flip(fleet, ncfg, why);
}

static int fleet_start(struct fgd *d)
{
	char why[FG_WHY_LEN] = "";
	int err = fg_fleetd_start(fleet, d->cfg, why);

	if (err)
		pr_warn("fleet: %s", why[0] ? why : strerror(-err));
	return err;
}

static void fleet_reloaded(struct fgd *d, const struct fg_config *old, const struct fg_config *ncfg)
{
	char why[FG_WHY_LEN] = "";
	int err = fg_fleetd_reload(fleet, old, ncfg, why);

	(void)d;
	if (err < 0)
		pr_warn("reload: fleet: %s; fleet rules apply on_loss once their leases run out",
			why[0] ? why : strerror(-err));
}

static void fleet_tick(struct fgd *d, struct fg_tick *t)
{
	(void)d;
	(void)t;
	fg_fleetd_tick(fleet);
}

static void fleet_snap(struct fgd *d, struct fg_metrics_snap *s)
{
	(void)d;
	s->fleet = fg_fleetd_status(fleet);
}

/* detaching hands the leases back */
static void fleet_close(struct fgd *d, bool detach)
{
	(void)d;
	fg_fleetd_close(fleet, detach);
	fleet = NULL;
}

const struct fg_module fg_mod_fleet = {
	.name = "fleet",
	.init = fleet_init,
	.before_flip = fleet_before_flip,
	.start = fleet_start,
	.reloaded = fleet_reloaded,
	.tick = fleet_tick,
	.snap = fleet_snap,
	.close = fleet_close,
};
