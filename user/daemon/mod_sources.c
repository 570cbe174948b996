// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The source tables' watch, as a module (daemon.h, srcwatch.h): the
 * throttle log and the source counts; it publishes the tracker of
 * throttled sources for escalation. */
#include <string.h>
#include "daemon/daemon.h"
#include "daemon/metrics.h"
#include "lib/log.h"
#include "daemon/srcwatch.h"

#define TRACK_MAX 65536 /* sources with drops tracked for the throttle log */

static struct fg_srcwatch sw;

static int sources_start(struct fgd *d)
{
	int err = fg_srcwatch_start(&sw, &d->maps, TRACK_MAX);

	if (err)
		pr_warn("throttle log and source counts: %s", strerror(-err));
	else
		d->tracker = &sw.tr;
	return err;
}

static void sources_tick(struct fgd *d, struct fg_tick *t)
{
	int err = fg_srcwatch_tick(&sw, &t->pol, t->names);

	(void)d;
	if (err)
		pr_warn("watching the source tables: %s", strerror(-err));
}

static void sources_snap(struct fgd *d, struct fg_metrics_snap *s)
{
	(void)d;
	s->sources4 = sw.count4;
	s->sources6 = sw.count6;
	s->sources_at = sw.count_at;
	s->source_reads = sw.walk.reads;
	s->throttle_events = sw.events;
}

static void sources_close(struct fgd *d, bool detach)
{
	(void)detach;
	d->tracker = NULL;
	fg_srcwatch_stop(&sw);
}

const struct fg_module fg_mod_sources = {
	.name = "sources watch",
	.start = sources_start,
	.tick = sources_tick,
	.snap = sources_snap,
	.close = sources_close,
};
