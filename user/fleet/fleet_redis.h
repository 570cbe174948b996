/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The fleet's Redis client: server URLs, one connection, pipelined commands
 * with one deadline for a whole exchange (connect included). hiredis 0.14
 * formats the commands and parses the replies; the socket is ours and
 * non-blocking, because hiredis 0.14's sync timeout applies to each read()
 * (a server that trickles bytes stretches it) and its async API has no
 * timeout at all. Nothing here logs: errors come back as -errno plus a
 * reason in the caller's buffer. See docs/fleet.md.
 */
#ifndef FG_FLEET_REDIS_H
#define FG_FLEET_REDIS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include <hiredis/hiredis.h>
#include "fleet/redis_url.h"

struct fg_redis;

/* A connection object for u (not connected yet); NULL with errno. */
struct fg_redis *fg_redis_new(const struct fg_redis_url *u);
void fg_redis_free(struct fg_redis *r);

bool fg_redis_connected(const struct fg_redis *r);

/* Connect, then AUTH and SELECT as the URL says, all before deadline
 * (CLOCK_MONOTONIC ns). 0 or -errno (-ETIMEDOUT, -ECONNREFUSED, -ENOENT,
 * -EACCES for a refused password, ...) with the reason in why. A host name
 * is resolved with getaddrinfo(), which the deadline does not cover. */
int fg_redis_connect(struct fg_redis *r, __u64 deadline_ns, char *why);

/* Drop the connection (after a timeout the pipeline is out of step). */
void fg_redis_close(struct fg_redis *r);

/* Queue one command (binary-safe argv) for the next exchange. */
int fg_redis_append(struct fg_redis *r, int argc, const char **argv, const size_t *lens);

/* Send everything queued and read n replies into rep[0..n), all before
 * deadline. 0 (every reply read; error replies are replies) or -errno, in
 * which case the connection is closed and rep[] holds nothing. The caller
 * frees each reply with freeReplyObject(). */
int fg_redis_exchange(struct fg_redis *r, redisReply **rep, int n, __u64 deadline_ns, char *why);

/* CLOCK_MONOTONIC in ns. */
__u64 fg_redis_now_ns(void);

#endif /* FG_FLEET_REDIS_H */
