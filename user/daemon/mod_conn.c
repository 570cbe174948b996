// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The concurrency caps' module (daemon.h, connd.h): the counter is loaded
 * before the XDP program so that both share its maps; started once the
 * first policy has its rule ids; the cap table again after every reload's
 * flip; reconciled every period.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "daemon/connd.h"
#include "daemon/daemon.h"
#include "lib/log.h"
#include "lib/sysutil.h"
#include "policy/policy.h"

static struct fg_connd conn;

static void log_rec(const char *when, int err, const struct fg_conn_rec *rec, const char *why)
{
	char msg[256];

	if (err)
		pr_warn("concurrency caps: %s: %s", when, why && why[0] ? why : strerror(-err));
	else if (fg_connd_rec_msg(rec, msg, sizeof(msg)))
		pr_info("concurrency caps: %s: %s", when, msg);
}

static int conn_open(struct fgd *d)
{
	char why[FG_CONN_WHY_LEN] = "";
	int err = fg_connd_open(&conn, d->skel, d->dir, d->cfg->conn_max_keys,
				d->cfg->conn_reconcile_ms, why);

	if (err)
		pr_warn("concurrency caps: %s", why[0] ? why : strerror(-err));
	return err;
}

static int conn_start(struct fgd *d)
{
	char why[FG_CONN_WHY_LEN] = "";
	struct fg_conn_rec rec;
	int err = fg_connd_start(&conn, &d->cfg->pol, d->dir, &rec, why);

	if (!err && conn.c.way == FG_CONN_WAY_NONE)
		pr_info("concurrency caps: unavailable on this kernel (%s); a policy with "
			"per_source concurrency is refused",
			conn.c.way_why);
	else if (!err)
		pr_info("concurrency caps: counting through %s", fg_conn_way_names[conn.c.way]);
	log_rec("seed", err, &rec, why);
	return err;
}

/* A failure leaves the counter on the old cap table; XDP has the new caps. */
static void conn_after_flip(struct fgd *d, const struct fg_config *ncfg)
{
	char why[FG_CONN_WHY_LEN] = "";
	struct fg_conn_rec rec;
	int err = fg_connd_policy(&conn, &ncfg->pol, &rec, why);

	(void)d;
	log_rec("reload", err, &rec, why);
}

static void conn_tick(struct fgd *d, struct fg_tick *t)
{
	struct fg_conn_rec rec;
	int err;

	/* under the lock; held by a CLI command: the next tick tries again */
	if (!fg_connd_due(&conn, t->now_ns) || fg_maps_lock(&d->maps, 0))
		return;
	err = fg_connd_reconcile(&conn, &rec);
	fg_maps_unlock(&d->maps);
	log_rec("reconcile", err, &rec, NULL);
}

static void conn_metrics(struct fgd *d, const struct fg_tick *t, FILE *f)
{
	char *txt = NULL;
	size_t len = 0;

	(void)d;
	if (!fg_connd_metrics(&conn, t->names, &txt, &len))
		fwrite(txt, 1, len, f);
	free(txt);
}

static void conn_close(struct fgd *d, bool detach)
{
	(void)d;
	(void)detach; /* a pinned counter keeps counting; detaching unpins it (fgmaps.c) */
	fg_connd_close(&conn);
}

const struct fg_module fg_mod_conn = {
	.name = "concurrency caps",
	.open = conn_open,
	.start = conn_start,
	.after_flip = conn_after_flip,
	.tick = conn_tick,
	.metrics = conn_metrics,
	.close = conn_close,
};
