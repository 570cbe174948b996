/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Prometheus text endpoint for floodgated (libmicrohttpd, its own polling
 * thread). The daemon renders a page once per tick with fg_metrics_render
 * and hands it over with fg_metrics_publish; scrapes only copy that page,
 * so a scrape never touches the maps and a slow scraper never stalls the
 * daemon.
 */
#ifndef FG_METRICS_H
#define FG_METRICS_H

#include <stddef.h>
#include "floodgate.h"

struct fg_shedd;

struct fg_metrics;

/* The inputs of one page. */
struct fg_metrics_snap {
	const struct fg_stats *rows;		/* FG_NROWS, summed over CPUs */
	const struct fg_name *names;		/* FG_MAX_IDS */
	const struct fg_ctl *ctl;
	const struct fg_policy *pol;		/* active */
	size_t sources4, sources6;
	const struct fg_shedd *shed;		/* the adaptive shedder, NULL = none */
};

/* "host:port", "[v6]:port" or ":port" (all addresses). NULL with why set. */
struct fg_metrics *fg_metrics_start(const char *listen, char *why, size_t why_len);
void fg_metrics_stop(struct fg_metrics *mx);

/* Render a page; *out is malloc'd. 0 or -ENOMEM. */
int fg_metrics_render(const struct fg_metrics_snap *snap, char **out, size_t *len);
/* Take ownership of page (malloc'd) as what scrapes get from now on. */
void fg_metrics_publish(struct fg_metrics *mx, char *page, size_t len);

#endif /* FG_METRICS_H */
