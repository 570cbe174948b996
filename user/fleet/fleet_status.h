/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What floodgated's fleet engine knows and the pinned maps do not (state,
 * last reason, counters, the Redis connection): a snapshot the daemon writes
 * once per tick to a file under FG_RUN_DIR, for `floodgate status` and the
 * metrics page. The lease itself (tokens, expiry, on_loss) is in fg_lease
 * and the packets decided under on_loss in fg_stats: the CLI reads those
 * from the maps, daemon or not. Userspace only; both sides are one build.
 */
#ifndef FG_FLEET_STATUS_H
#define FG_FLEET_STATUS_H

#include <stddef.h>
#include <linux/types.h>
#include "floodgate.h"
#include "fleet/fleet_conf.h"

#define FG_RUN_DIR		"/run/floodgate"
#define FG_FLEET_STATUS_MAGIC	0x46474653u /* "FGFS" */
#define FG_FLEET_STATUS_VERSION 1u
#define FG_FLEET_URL_LEN	(FG_REDIS_HOST_LEN + 64)

struct fg_fleet_stats {
	__u64 rounds;	 /* rounds this rule took part in */
	__u64 answered;	 /* ... with an answer */
	__u64 failed;	 /* ... without (timeout, connection, error reply) */
	__u64 timeouts;	 /* failed because the deadline passed */
	__u64 granted;	 /* tokens received */
	__u64 returned;	 /* tokens handed back to the fleet bucket */
	__u64 discarded; /* tokens taken back but not returned (stale or Redis down) */
	__u64 debt;	 /* cost admitted under on_loss, charged on recovery */
	__u64 grace_entries;
	__u64 fallbacks;      /* entries into fallback */
	__u64 fallback_ns;    /* time spent in fallback, the current spell included */
	__u64 lease_expires;  /* CLOCK_MONOTONIC ns of the lease the program holds */
	__u64 last_answer_ns; /* CLOCK_MONOTONIC ns of the last answer */
	__u64 redis_time_us;  /* Redis TIME of the last answer */
	__u64 last_grant;
	__s64 bucket;	 /* tokens left in the fleet bucket at the last answer */
	__u32 nodes;	 /* nodes with this rule, last known */
	__u32 share_ppm; /* this node's share of the fleet's demand */
	__u8 state;	 /* enum fg_fleet_state */
	__u8 pad[7];
	char reason[FG_FLEET_REASON_LEN]; /* the last failure */
};

/* Connection-level counters, for metrics. */
struct fg_fleet_conn_stats {
	__u64 rounds;
	__u64 connects; /* successful connects */
	__u64 connect_failures;
	__u64 script_loads;  /* SCRIPT LOAD sent (new connection or NOSCRIPT) */
	__u64 noscript;	     /* NOSCRIPT replies (script cache flushed, failover) */
	__u64 commands;	     /* EVALSHA sent */
	__u64 last_round_ns; /* duration of the last round */
	__u64 max_round_ns;
	__u64 events_lost; /* events dropped because the queue was full */
};

/* "init", "ok", ...: enum fg_fleet_state by name */
const char *fg_fleet_state_name(int state);

struct fg_fleet_rule_status {
	char name[FG_NAME_LEN];
	char key[FG_FLEET_KEY_LEN]; /* the bucket's Redis key */
	__u32 id;		    /* rule id: fg_lease and fg_stats index */
	__u16 gen;
	__u8 on_loss;		  /* enum fg_on_loss */
	__u8 cost;		  /* enum fg_cost */
	double rate, burst;	  /* fleet-wide, cost units */
	struct fg_fleet_stats st; /* the engine's counters and state */
	struct fg_lease lease;	  /* fg_lease[id] when the snapshot was taken */
	__u64 lapses;		  /* leases that ran out between two answers (a late round) */
	__u64 lapse_ns;		  /* the time they were out, as seen at the next round */
};

struct fg_fleet_status {
	__u32 magic;	  /* FG_FLEET_STATUS_MAGIC */
	__u32 version;	  /* FG_FLEET_STATUS_VERSION */
	__u32 size;	  /* sizeof(struct fg_fleet_status) */
	__u32 pid;	  /* the daemon that wrote it */
	__u64 updated_ns; /* CLOCK_MONOTONIC of that tick */
	char node[FG_FLEET_NODE_LEN];
	char redis[FG_FLEET_URL_LEN]; /* without the password */
	__u32 interval_ms, deadline_ms, lease_ms;
	__u32 nrules;
	struct fg_fleet_conn_stats cs;
	struct fg_fleet_rule_status rule[FG_FLEET_MAX_RULES];
};

/* The status file of pin dir `pin_dir`: FG_RUN_DIR/<basename>-<hash of the
 * absolute path>.fleet. Compute it while the pin dir exists (realpath). */
int fg_fleet_status_path(const char *pin_dir, char *buf, size_t len);
/* Write s to path atomically (a temporary file, then rename); 0 or -errno. */
int fg_fleet_status_write(const char *path, const struct fg_fleet_status *s);
/* Read it back; -ENOENT when there is none, -EPROTO for another version. */
int fg_fleet_status_read(const char *path, struct fg_fleet_status *s);
int fg_fleet_status_remove(const char *path);

#endif /* FG_FLEET_STATUS_H */
