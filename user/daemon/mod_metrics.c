// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The Prometheus endpoint's module (daemon.h, metrics.h): every tick the
 * page is rendered from the counters and what each module adds (snap,
 * metrics), and published; scrapes never wait on the main loop. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "daemon/daemon.h"
#include "daemon/metrics.h"
#include "lib/log.h"
#include "policy/policy.h"
#include "lib/sysutil.h"

static struct fg_metrics *mx;

static int metrics_start(struct fgd *d)
{
	const struct fg_config *c = d->cfg;
	struct fg_metrics_opts mo = {
		.listen = d->metrics_listen ? d->metrics_listen : c->metrics,
		.max_connections = c->metrics_max_conn,
		.per_client = c->metrics_per_client,
		.timeout_s = c->metrics_timeout_s,
	};
	char why[FG_WHY_LEN];

	if (!mo.listen || !*mo.listen)
		return 0;
	mx = fg_metrics_start(&mo, why);
	if (!mx) {
		pr_err("%s", why);
		return -EADDRNOTAVAIL;
	}
	pr_info("metrics on http://%s/metrics (at most %u connections, %u per client, "
		"%u s per request)",
		mo.listen, mo.max_connections, mo.per_client, mo.timeout_s);
	return 0;
}

static void metrics_tick(struct fgd *d, struct fg_tick *t)
{
	struct fg_metrics_snap s = { .rows = t->rows,
				     .names = t->names,
				     .ctl = &t->ctl,
				     .pol = &t->pol,
				     .ipv4_blocks = d->dir4[0],
				     .ipv4_trie16 = d->dir4[1],
				     .ipv4_trie24 = d->dir4[2],
				     .ipv4_trie_pfx = d->dir4[3] };
	char *page, *extra = NULL;
	size_t len, elen = 0;
	FILE *f;

	if (!mx)
		return;
	f = open_memstream(&extra, &elen);
	fgd_for_each_module(m)
	{
		if ((*m)->snap)
			(*m)->snap(d, &s);
		if (f && (*m)->metrics)
			(*m)->metrics(d, t, f);
	}
	if (f && !fclose(f)) {
		s.extra = extra;
		s.extra_len = elen;
	}
	if (!fg_metrics_render(&s, &page, &len))
		fg_metrics_publish(mx, page, len);
	free(extra);
}

static void metrics_close(struct fgd *d, bool detach)
{
	(void)d;
	(void)detach;
	fg_metrics_stop(mx);
	mx = NULL;
}

const struct fg_module fg_mod_metrics = {
	.name = "metrics",
	.start = metrics_start,
	.tick = metrics_tick,
	.close = metrics_close,
};
