// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Escalation's module (daemon.h, lists/escalate.h): sources the sources
 * watch tracks as throttled past a rule's escalate: after go onto the
 * runtime deny list. */
#include <string.h>
#include "daemon/daemon.h"
#include "daemon/metrics.h"
#include "lib/log.h"
#include "daemon/escd.h"

static struct fg_escd esc;

static int esc_start(struct fgd *d)
{
	fg_escd_init(&esc, d->dir);
	return 0;
}

static void esc_tick(struct fgd *d, struct fg_tick *t)
{
	int err;

	if (!d->tracker)
		return;
	err = fg_escd_tick(&esc, &d->maps, d->tracker, d->cfg, &t->pol, t->names, &t->ctl,
			   &t->rt_swept);
	if (err && !esc.warned)
		pr_warn("escalation: reading the runtime lists: %s (said once)", strerror(-err));
	esc.warned |= err != 0;
}

static void esc_snap(struct fgd *d, struct fg_metrics_snap *s)
{
	(void)d;
	s->esc = &esc.x.n;
}

static void esc_close(struct fgd *d, bool detach)
{
	(void)d;
	(void)detach;
	fg_escd_stop(&esc);
}

const struct fg_module fg_mod_escalate = {
	.name = "escalation",
	.start = esc_start,
	.tick = esc_tick,
	.snap = esc_snap,
	.close = esc_close,
};
