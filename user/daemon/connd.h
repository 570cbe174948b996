/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Concurrency caps in floodgated: the steps docs/concurrency.md ("What the
 * daemon must do") asks of the daemon, on top of user/conn/conn.h, in the order
 * floodgated calls them. Each returns 0 or a negative errno and logs
 * nothing; why (FG_CONN_WHY_LEN, may be NULL) says what an operator must
 * read.
 *
 *   fg_connd_open(cd, skel, dir, ...)   before floodgate_bpf__load: load or
 *                                       adopt bpf/fgconn.bpf.c (this
 *                                       process's network namespace is the
 *                                       one counted) and make the XDP
 *                                       skeleton's fgc_count and fgc_pend
 *                                       its maps (bpf_map__reuse_fd)
 *                                       (the maps only: the way's programs
 *                                       wait for a cap)
 *   fg_connd_load(cd, why)              inside an apply whose policy has a
 *                                       cap, before the flip: the way's
 *                                       programs (the verifier's part)
 *   fg_connd_start(cd, pol, dir, ...)   under the pin dir's lock, once the
 *                                       policy is applied (rule ids set):
 *                                       a cap: load, attach, pin, cap table,
 *                                       seed; none: the maps pinned, links
 *                                       (an earlier daemon's too) and
 *                                       programs gone
 *   fg_connd_policy(cd, pol, dir, ...)  every reload, under the lock: the
 *                                       same, from what runs: the new cap
 *                                       table and a reconcile, counting
 *                                       started by the first cap, stopped
 *                                       (unloaded) with the last
 *   fg_connd_due / fg_connd_reconcile   the periodic reconcile (the caller
 *                                       holds the lock)
 *   fg_connd_metrics                    Prometheus lines
 *   fg_connd_close                      our fds; the pins keep counting
 * Unpinning is fg_pin_dir_remove's (fg_conn_unpin).
 */
#ifndef FG_CONND_H
#define FG_CONND_H

#include <stdbool.h>
#include <stddef.h>
#include "conn/conn.h"

struct floodgate_bpf;
struct fg_name;

struct fg_connd {
	struct fg_conn c;
	bool open;
	__u64 period_ns; /* reconcile every period_ns */
	__u64 next_ns;	 /* CLOCK_MONOTONIC_COARSE of the next one */
	__u64 last_ns;	 /* how long the last one took */
	/* from the last reconcile, for the metrics */
	struct fg_conn_caps caps;
	struct fg_conn_rule_sum sum[FG_CONN_MAX_CAPS];
	size_t keys; /* fgc_count entries after it */
};

int fg_connd_open(struct fg_connd *cd, struct floodgate_bpf *skel, const char *dir, __u32 max_keys,
		  __u64 period_ms, char *why);
int fg_connd_start(struct fg_connd *cd, const struct fg_policy *pol, const char *dir,
		   struct fg_conn_rec *rec, char *why);
int fg_connd_load(struct fg_connd *cd, char *why);
int fg_connd_policy(struct fg_connd *cd, const struct fg_policy *pol, const char *dir,
		    struct fg_conn_rec *rec, char *why);
/* The counter's programs are attached: it counts (the metrics' way). */
bool fg_connd_counting(const struct fg_connd *cd);
bool fg_connd_due(const struct fg_connd *cd, __u64 now_ns);
int fg_connd_reconcile(struct fg_connd *cd, struct fg_conn_rec *rec);

/* What a reconcile did worth a log line ("seeded 3 connections; corrected
 * 2 keys by 5 connections"), into buf; false when nothing. */
bool fg_connd_rec_msg(const struct fg_conn_rec *rec, char *buf, size_t len);

/* The counter's events, reconcile corrections, misses and, from the last
 * reconcile, per capped rule the sources, those at the cap and their
 * connections (names: fg_names, for the rule label); *out is malloc'd. */
int fg_connd_metrics(struct fg_connd *cd, const struct fg_name *names, char **out, size_t *len);

void fg_connd_close(struct fg_connd *cd);

#endif /* FG_CONND_H */
