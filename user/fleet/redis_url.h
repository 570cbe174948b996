/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Redis server URLs (the fleet: section's redis:), with no hiredis: the
 * policy compiler and the CLI use them; the client is fleet_redis.h. */
#ifndef FG_REDIS_URL_H
#define FG_REDIS_URL_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#define FG_REDIS_PORT	  6379
#define FG_REDIS_MAX_DB	  65535
#define FG_REDIS_HOST_LEN 256
#define FG_REDIS_PATH_LEN 108 /* sizeof(sun_path) */
#define FG_REDIS_PASS_LEN 256
#define FG_REDIS_USER_LEN 64

/* redis://[[user]:password@]host[:port][/db] (host may be [v6]) or
 * unix:/path/to.sock[?db=N][&user=NAME]; a password for unix: comes from
 * the policy's password: (AUTH user password, or AUTH password alone) */
struct fg_redis_url {
	bool is_unix;
	char host[FG_REDIS_HOST_LEN];
	__u16 port;
	char path[FG_REDIS_PATH_LEN];
	char user[FG_REDIS_USER_LEN];	  /* ACL user; "" = default user (AUTH password) */
	char password[FG_REDIS_PASS_LEN]; /* "" = no AUTH */
	int db;				  /* SELECT db when > 0 */
};

/* Parse s into *u. 0, or -EINVAL with a one-line reason in why. */
int fg_redis_url_parse(const char *s, struct fg_redis_url *u, char *why);

/* An ACL user name as the URL and the policy take it: 1..63 printable
 * characters, no blanks. */
bool fg_redis_valid_user(const char *s);

/* The URL without its password, for logs and status. */
void fg_redis_url_str(const struct fg_redis_url *u, char *buf, size_t len);

#endif /* FG_REDIS_URL_H */
