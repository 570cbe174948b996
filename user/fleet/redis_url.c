// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Redis server URLs: parsed and printed without hiredis (redis_url.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include "fleet/redis_url.h"
#include "lib/sysutil.h"

/* --- URLs --------------------------------------------------------------- */

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decode [s, s+n) into out (NUL-terminated); -EINVAL if malformed
 * or too long, or if it decodes to a NUL. */
static int pct_decode(const char *s, size_t n, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];

		if (c == '%') {
			int h, l;

			if (i + 2 >= n)
				return -EINVAL;
			h = hexval((unsigned char)s[i + 1]);
			l = hexval((unsigned char)s[i + 2]);
			if (h < 0 || l < 0)
				return -EINVAL;
			c = h * 16 + l;
			if (!c)
				return -EINVAL;
			i += 2;
		}
		if (o + 1 >= outlen)
			return -EINVAL;
		out[o++] = (char)c;
	}
	out[o] = 0;
	return 0;
}

/* Strict decimal in [lo, hi] over [s, s+n). */
static int parse_dec(const char *s, size_t n, long lo, long hi, long *out)
{
	long v = 0;

	if (!n || n > 9)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	if (v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

static int valid_hostname(const char *h)
{
	if (!*h)
		return 0;
	for (const char *p = h; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_'))
			return 0;
	return 1;
}

static int valid_v6(const char *h)
{
	struct in6_addr a;

	return inet_pton(AF_INET6, h, &a) == 1;
}

/* A Redis ACL user name: printable, no blanks (ACL SETUSER's own rule for
 * names given on one line). */
static int valid_user(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s <= ' ' || *s > '~')
			return 0;
	return 1;
}

/* unix:'s options: ?db=N and user=NAME (percent-encoded), joined by '&'. */
static int parse_unix_opts(const char *q, struct fg_redis_url *u, char *why)
{
	bool seen_db = false, seen_user = false;

	for (;;) {
		const char *amp = strchr(q, '&');
		size_t n = amp ? (size_t)(amp - q) : strlen(q);
		long db;

		if (n > 3 && !strncmp(q, "db=", 3) && !seen_db &&
		    !parse_dec(q + 3, n - 3, 0, FG_REDIS_MAX_DB, &db)) {
			u->db = (int)db;
			seen_db = true;
		} else if (n > 5 && !strncmp(q, "user=", 5) && !seen_user) {
			if (pct_decode(q + 5, n - 5, u->user, sizeof(u->user)) ||
			    !valid_user(u->user)) {
				fg_why(why,
				       "unix socket URL: bad or too long user name (1..%zu "
				       "printable characters, no blanks; percent-encode '&' and '%%')",
				       sizeof(u->user) - 1);
				return -EINVAL;
			}
			seen_user = true;
		} else {
			fg_why(why,
			       "unix socket URL: the options are ?db=N (0..%d) and user=NAME "
			       "(an ACL user), each once, joined by '&'",
			       FG_REDIS_MAX_DB);
			return -EINVAL;
		}
		q += n;
		if (!*q)
			return 0;
		if (!*++q) { /* past the '&' */
			fg_why(why, "unix socket URL: an option after '&' is missing");
			return -EINVAL;
		}
	}
}

static int parse_unix(const char *s, struct fg_redis_url *u, char *why)
{
	const char *q = strchr(s, '?');
	size_t plen = q ? (size_t)(q - s) : strlen(s);

	if (!plen || s[0] != '/') {
		fg_why(why, "unix: needs an absolute socket path (unix:/run/redis/redis.sock)");
		return -EINVAL;
	}
	if (plen >= sizeof(u->path)) {
		fg_why(why, "unix socket path is longer than %zu bytes", sizeof(u->path) - 1);
		return -EINVAL;
	}
	memcpy(u->path, s, plen);
	u->path[plen] = 0;
	u->is_unix = true;
	if (!q)
		return 0;
	if (!q[1]) {
		fg_why(why, "unix socket URL: nothing after '?' (?db=N, user=NAME)");
		return -EINVAL;
	}
	return parse_unix_opts(q + 1, u, why);
}

static int parse_tcp(const char *s, struct fg_redis_url *u, char *why)
{
	const char *slash = strchr(s, '/');
	const char *end = slash ? slash : s + strlen(s);
	const char *at = NULL, *hp, *colon = NULL;
	long v;

	for (const char *p = s; p < end; p++)
		if (*p == '@')
			at = p;
	if (at) {
		const char *c = memchr(s, ':', (size_t)(at - s));

		if (!c) {
			fg_why(why, "redis URL: write the password as :password@host "
				    "(or user:password@host)");
			return -EINVAL;
		}
		if (pct_decode(s, (size_t)(c - s), u->user, sizeof(u->user)) ||
		    (u->user[0] && !valid_user(u->user))) {
			fg_why(why, "redis URL: bad or too long user name");
			return -EINVAL;
		}
		if (pct_decode(c + 1, (size_t)(at - c - 1), u->password, sizeof(u->password)) ||
		    !u->password[0]) {
			fg_why(why, "redis URL: bad, empty or too long password "
				    "(percent-encode '@', '/' and '%%')");
			return -EINVAL;
		}
		hp = at + 1;
	} else {
		hp = s;
	}
	if (hp < end && *hp == '[') {
		const char *rb = memchr(hp, ']', (size_t)(end - hp));
		size_t hl;

		if (!rb) {
			fg_why(why, "redis URL: IPv6 address without its closing ']'");
			return -EINVAL;
		}
		hl = (size_t)(rb - hp - 1);
		if (hl >= sizeof(u->host)) {
			fg_why(why, "redis URL: host too long");
			return -EINVAL;
		}
		memcpy(u->host, hp + 1, hl);
		u->host[hl] = 0;
		if (!valid_v6(u->host)) {
			fg_why(why, "redis URL: \"%s\" is not an IPv6 address", u->host);
			return -EINVAL;
		}
		if (rb + 1 < end) {
			if (rb[1] != ':') {
				fg_why(why, "redis URL: expected :port after the IPv6 address");
				return -EINVAL;
			}
			colon = rb + 1;
		}
	} else {
		size_t hl;

		colon = memchr(hp, ':', (size_t)(end - hp));
		hl = (size_t)((colon ? colon : end) - hp);
		if (hl >= sizeof(u->host)) {
			fg_why(why, "redis URL: host too long");
			return -EINVAL;
		}
		memcpy(u->host, hp, hl);
		u->host[hl] = 0;
		if (!valid_hostname(u->host)) {
			fg_why(why, "redis URL: missing or bad host name \"%.64s\"", u->host);
			return -EINVAL;
		}
	}
	u->port = FG_REDIS_PORT;
	if (colon) {
		if (parse_dec(colon + 1, (size_t)(end - colon - 1), 1, 65535, &v)) {
			fg_why(why, "redis URL: the port must be 1..65535");
			return -EINVAL;
		}
		u->port = (__u16)v;
	}
	if (slash && slash[1]) {
		if (parse_dec(slash + 1, strlen(slash + 1), 0, FG_REDIS_MAX_DB, &v)) {
			fg_why(why, "redis URL: the database after '/' must be 0..%d",
			       FG_REDIS_MAX_DB);
			return -EINVAL;
		}
		u->db = (int)v;
	}
	return 0;
}

int fg_redis_url_parse(const char *s, struct fg_redis_url *u, char *why)
{
	struct fg_redis_url t = {};
	int err;

	if (!s || !*s) {
		fg_why(why, "empty redis URL");
		return -EINVAL;
	}
	if (!strncmp(s, "unix:", 5))
		err = parse_unix(s + 5, &t, why);
	else if (!strncmp(s, "redis://", 8))
		err = parse_tcp(s + 8, &t, why);
	else if (!strncmp(s, "rediss://", 9)) {
		/* Debian's hiredis (0.14) has no TLS */
		fg_why(why, "rediss:// (TLS) is not supported by this build's Redis client: use a "
			    "unix socket or a TLS tunnel");
		err = -EINVAL;
	} else {
		fg_why(why, "a redis URL starts with redis:// or unix:/");
		err = -EINVAL;
	}
	if (!err)
		*u = t;
	return err;
}

bool fg_redis_valid_user(const char *s)
{
	return valid_user(s);
}

void fg_redis_url_str(const struct fg_redis_url *u, char *buf, size_t len)
{
	const char *pw = u->password[0] ? "***" : "";
	const char *at = u->user[0] || u->password[0] ? "@" : "";
	const char *colon = u->password[0] ? ":" : "";

	if (u->is_unix)
		snprintf(buf, len, "unix:%s%s%s%s%s", u->path, u->user[0] || u->db ? "?" : "",
			 u->user[0] ? "user=" : "", u->user, u->user[0] && u->db ? "&" : "");
	else if (strchr(u->host, ':'))
		snprintf(buf, len, "redis://%s%s%s%s[%s]:%u", u->user, colon, pw, at, u->host,
			 u->port);
	else
		snprintf(buf, len, "redis://%s%s%s%s%s:%u", u->user, colon, pw, at, u->host,
			 u->port);
	if (u->db) {
		size_t l = strlen(buf);

		snprintf(buf + l, len > l ? len - l : 0, u->is_unix ? "db=%d" : "/%d", u->db);
	}
}
