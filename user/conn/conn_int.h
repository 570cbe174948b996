/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Inside user/conn: what conn.c (both ways, the tp_btf way) and
 * conn_sock.c (the sock_ops way) share. Not for other folders: they use
 * conn.h.
 */
#ifndef FG_CONN_INT_H
#define FG_CONN_INT_H

#include <stdbool.h>
#include <stddef.h>
#include "conn/conn.h"

/* SO_NETNS_COOKIE of this process's network namespace (5.14). */
int fg_conn_netns_cookie(__u64 *cookie);

/* The sock_ops way: fgc_sockops on the cgroup v2 root, as c->state. */
int fg_conn_sock_attach(struct fg_conn *c, char *why);
/* Its reconcile's sweep (fgc_fix over every fgc_count key; del: delete
 * the keys left at zero, counted in *deleted) and walk (fgc_swalk over a
 * sock_diag dump of the counted states; *sockets: how many it held). */
int fg_conn_sock_sweep(struct fg_conn *c, bool del, __u64 *deleted);
int fg_conn_sock_walk(struct fg_conn *c, __u64 *sockets);

/* Delete those of keys[0..n) still at zero with no live slot. */
void fg_conn_delete_zero_keys(struct fg_conn *c, const struct fg_conn_key *keys, size_t n,
			      __u64 *deleted);

#endif /* FG_CONN_INT_H */
