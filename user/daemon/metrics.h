/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Prometheus text endpoint for floodgated (libmicrohttpd, its own epoll
 * thread). The daemon renders a page once per tick with fg_metrics_render
 * and hands it over with fg_metrics_publish; scrapes only copy that page,
 * so a scrape never touches the maps and a slow scraper never stalls the
 * daemon.
 */
#ifndef FG_METRICS_H
#define FG_METRICS_H

#include <stddef.h>
#include "floodgate.h"
#include "policy/policy.h"
#include "fleet/fleet_status.h"

struct fg_shedd;
struct fg_esc_counts;

struct fg_metrics;

/* The inputs of one page. */
struct fg_metrics_snap {
	const struct fg_stats *rows; /* FG_NROWS, summed over CPUs */
	const struct fg_name *names; /* FG_MAX_IDS */
	const struct fg_ctl *ctl;
	const struct fg_policy *pol;	     /* active */
	size_t sources4, sources6;	     /* the daemon's last pass over the tables */
	__u64 sources_at;		     /* CLOCK_REALTIME s that pass ended */
	__u64 source_reads;		     /* table entries the daemon has read (srcwalk.h) */
	__u64 throttle_events;		     /* throttle events read from the ring */
	const struct fg_fleet_status *fleet; /* NULL: no fleet rule runs */
	const char *extra;		     /* more lines, appended as they are (connd.h) */
	size_t extra_len;
	const struct fg_shedd *shed;	 /* the adaptive shedder, NULL = none */
	const struct fg_esc_counts *esc; /* escalation (escalate.h), NULL = none */
	/* the IPv4 lists as last applied (apply.h): blocks, and the /16s, /24s
	 * and prefixes the LPM trie answers past the block budget */
	__u32 ipv4_blocks, ipv4_trie16, ipv4_trie24, ipv4_trie_pfx;
};

/*
 * Hostile load. An epoll thread serves up to max_connections at once; one
 * client address holds at most per_client of them; a connection must
 * deliver each request within timeout seconds of its start or of its
 * previous request, however slowly it trickles bytes (a slow-loris is cut
 * then, and an idle one too); a request's headers are capped at
 * FG_METRICS_REQ_MAX bytes. So 16 idle sockets, or a thousand from one
 * address, never keep a scraper from another address out, and not for
 * longer than timeout from the same one.
 */
/* FG_METRICS_MAX_CONN ... FG_METRICS_TIMEOUT_MAX: the metrics: section's defaults and
 * bounds, in policy/policy.h */
#define FG_METRICS_REQ_MAX 16384 /* bytes a connection may buffer: request line + headers */

struct fg_metrics_opts {
	const char *listen;	      /* "host:port", "[v6]:port" or ":port" (all addresses) */
	unsigned int max_connections; /* 0: the default; on return, what is in force */
	unsigned int per_client;      /* 0: the default; on return, what is in force */
	unsigned int timeout_s;	      /* 0: the default; on return, what is in force */
};

/* Listen and serve; NULL with why set. May raise RLIMIT_NOFILE's soft limit
 * to make room for max_connections, or lower max_connections to fit the
 * hard limit (o says what is in force). */
struct fg_metrics *fg_metrics_start(struct fg_metrics_opts *o, char *why);
void fg_metrics_stop(struct fg_metrics *mx);

/* Render a page; *out is malloc'd. 0 or -ENOMEM. */
int fg_metrics_render(const struct fg_metrics_snap *snap, char **out, size_t *len);
/* Take ownership of page (malloc'd) as what scrapes get from now on. */
void fg_metrics_publish(struct fg_metrics *mx, char *page, size_t len);

#endif /* FG_METRICS_H */
