// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The concurrency caps' module (daemon.h, connd.h): the counter's maps are
 * loaded before the XDP program so that both share them; its programs only
 * when a policy has a cap (inside that apply, before the flip: a refusal
 * leaves the running policy), since verifying them is a fifth of a fresh
 * start (issue 25). Started once the first policy has its rule ids; after
 * every reload's flip the cap table again, counting started by the first
 * cap and stopped (links unpinned, programs unloaded) with the last;
 * reconciled every period while it counts.
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
static bool conn_failed;	       /* the counter would not load: caps refused */
static char conn_why[FG_CONN_WHY_LEN]; /* ... why */

static void log_rec(const char *when, int err, const struct fg_conn_rec *rec, const char *why)
{
	char msg[256];

	if (err)
		pr_warn("concurrency caps: %s: %s", when, why && why[0] ? why : strerror(-err));
	else if (fg_connd_rec_msg(rec, msg, sizeof(msg)))
		pr_info("concurrency caps: %s: %s", when, msg);
}

/* An optional program never stops the filter: a counter that will not
 * load (a verifier that refuses it, a map type missing) leaves the XDP
 * program its own small placeholder maps, and a policy with caps is
 * refused at its apply (conn_before_flip) with the reason. */
static int conn_open(struct fgd *d)
{
	int err = fg_connd_open(&conn, d->skel, d->dir, d->cfg->conn_max_keys,
				d->cfg->conn_reconcile_ms, conn_why);

	if (err) {
		if (!conn_why[0])
			snprintf(conn_why, sizeof(conn_why), "%s", strerror(-err));
		pr_warn("concurrency caps: unavailable: %s; a policy with per_source "
			"concurrency is refused",
			conn_why);
		conn_failed = true;
	}
	return 0;
}

/* The first rule with a cap, or -1. */
static int first_cap(const struct fg_config *cfg)
{
	for (__u32 i = 0; i < cfg->pol.nrules && i < FG_MAX_RULES; i++)
		if (cfg->pol.rules[i].conn_cap)
			return (int)i;
	return -1;
}

static int conn_before_flip(struct fgd *d, const struct fg_config *ncfg, char *why)
{
	char lwhy[FG_CONN_WHY_LEN] = "";
	int r = first_cap(ncfg), err;

	(void)d;
	if (r < 0)
		return 0;
	if (conn_failed) {
		snprintf(why, FG_WHY_LEN,
			 "rule %s has a concurrency cap, but the connection counter could "
			 "not be loaded: %.300s",
			 ncfg->rules[r].name, conn_why);
		return -EOPNOTSUPP;
	}
	err = fg_connd_load(&conn, lwhy);
	if (err)
		snprintf(why, FG_WHY_LEN,
			 "rule %s has a concurrency cap, but the connection counter's programs "
			 "could not be loaded: %.300s",
			 ncfg->rules[r].name, lwhy[0] ? lwhy : strerror(-err));
	return err;
}

static void log_counting(bool was)
{
	if (fg_connd_counting(&conn) && !was)
		pr_info("concurrency caps: counting through %s", fg_conn_way_names[conn.c.way]);
	else if (!fg_connd_counting(&conn) && conn.c.way != FG_CONN_WAY_NONE)
		pr_info("concurrency caps: no rule has a cap: the %s counter is %s",
			fg_conn_way_names[conn.c.way],
			was ? "stopped and unloaded (it loads again with a cap)" :
			      "not loaded (it loads with the first cap)");
}

static int conn_start(struct fgd *d)
{
	char why[FG_CONN_WHY_LEN] = "";
	const struct fg_policy *pol = &d->cfg->pol;
	struct fg_policy *inforce = NULL;
	struct fg_conn_rec rec;
	int err;

	if (conn_failed)
		return 0;
	if (d->not_applied) {
		/* the pinned policy runs: count for its caps */
		inforce = malloc(sizeof(*inforce));
		err = inforce ? fg_policy_read_active(&d->maps, inforce) : -ENOMEM;
		if (err) {
			pr_err("concurrency caps: reading the policy in force: %s", strerror(-err));
			free(inforce);
			return err;
		}
		pol = inforce;
	}
	err = fg_connd_start(&conn, pol, d->dir, &rec, why);
	free(inforce);
	if (!err && conn.c.way == FG_CONN_WAY_NONE)
		pr_info("concurrency caps: unavailable (%s); a policy with "
			"per_source concurrency is refused",
			conn.c.way_why);
	else if (!err)
		log_counting(false);
	log_rec("seed", err, &rec, why);
	return err;
}

/* A failure leaves the counter on the old cap table; XDP has the new caps. */
static void conn_after_flip(struct fgd *d, const struct fg_config *ncfg)
{
	char why[FG_CONN_WHY_LEN] = "";
	struct fg_conn_rec rec;
	int err;

	bool was = fg_connd_counting(&conn);

	if (conn_failed)
		return; /* conn_before_flip refused any cap */
	err = fg_connd_policy(&conn, &ncfg->pol, d->dir, &rec, why);
	if (!err && was != fg_connd_counting(&conn))
		log_counting(was);
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
	.before_flip = conn_before_flip,
	.start = conn_start,
	.after_flip = conn_after_flip,
	.tick = conn_tick,
	.metrics = conn_metrics,
	.close = conn_close,
};
