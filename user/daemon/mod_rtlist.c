// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The runtime lists' module (daemon.h, lists/rtlist.h): expired entries
 * end in the program by themselves; the daemon removes them from the maps,
 * unless escalation did this tick. */
#include <string.h>
#include "daemon/daemon.h"
#include "lib/log.h"
#include "lists/rtlist.h"

static void rtlist_tick(struct fgd *d, struct fg_tick *t)
{
	int err;

	if (t->rt_swept || !t->ctl.rt_active)
		return;
	err = fg_rt_gc_maps(&d->maps, t->now_ns, NULL);
	if (err)
		pr_warn("runtime lists: removing expired entries: %s", strerror(-err));
}

const struct fg_module fg_mod_rtlist = {
	.name = "runtime lists",
	.tick = rtlist_tick,
};
