// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The fleet's Redis client: URLs, a non-blocking connection, deadline-bound pipelines. */
#include <errno.h>
#include <stdarg.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include "fleet/fleet_redis.h"
#include "lib/safefile.h"
#include "lib/sysutil.h"

#define FG_REDIS_MAX_REPLY (1u << 20) /* bytes read per exchange, at most */
#define FG_REDIS_MAX_QUEUE (1u << 20) /* bytes of queued commands, at most */

struct fg_redis {
	struct fg_redis_url url;
	int fd; /* -1 when not connected */
	redisReader *rd;
	char *obuf; /* queued commands, RESP */
	size_t olen, ocap;
	int queued;
};

__u64 fg_redis_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* --- the connection ------------------------------------------------------- */

struct fg_redis *fg_redis_new(const struct fg_redis_url *u)
{
	struct fg_redis *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->url = *u;
	r->fd = -1;
	return r;
}

bool fg_redis_connected(const struct fg_redis *r)
{
	return r->fd >= 0;
}

void fg_redis_close(struct fg_redis *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	if (r->rd)
		redisReaderFree(r->rd);
	r->rd = NULL;
	r->olen = 0;
	r->queued = 0;
}

void fg_redis_free(struct fg_redis *r)
{
	if (!r)
		return;
	fg_redis_close(r);
	free(r->obuf);
	explicit_bzero(r->url.password, sizeof(r->url.password));
	free(r);
}

/* Wait for events on fd until deadline; 0 = ready, -ETIMEDOUT, -errno. */
static int wait_fd(int fd, short events, __u64 deadline_ns, short *revents)
{
	for (;;) {
		__u64 now = fg_redis_now_ns();
		struct pollfd p = { .fd = fd, .events = events };
		struct timespec ts;
		int n;

		if (now >= deadline_ns)
			return -ETIMEDOUT;
		ts.tv_sec = (time_t)((deadline_ns - now) / 1000000000ull);
		ts.tv_nsec = (long)((deadline_ns - now) % 1000000000ull);
		n = ppoll(&p, 1, &ts, NULL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ETIMEDOUT;
		*revents = p.revents;
		return 0;
	}
}

/* A non-blocking connect to one address, finished before deadline. */
static int connect_addr(int family, const struct sockaddr *sa, socklen_t salen, __u64 deadline_ns,
			int *fdp)
{
	int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int err = 0, one = 1;
	socklen_t elen = sizeof(err);
	short rev = 0;

	if (fd < 0)
		return -errno;
	if (connect(fd, sa, salen) < 0) {
		if (errno != EINPROGRESS) {
			err = -errno;
			goto fail;
		}
		err = wait_fd(fd, POLLOUT, deadline_ns, &rev);
		if (err)
			goto fail;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0) {
			err = -errno;
			goto fail;
		}
		if (err) {
			err = -err;
			goto fail;
		}
	}
	if (family != AF_UNIX) {
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	}
	*fdp = fd;
	return 0;
fail:
	close(fd);
	return err;
}

/* connect(2) to a path that is no socket (a FIFO, a file) fails at once
 * with ECONNREFUSED, which would send the operator after a dead server:
 * say what the path is. */
static void unix_why(const char *path, int err, char *why)
{
	struct stat st;

	if (err == -ECONNREFUSED && !stat(path, &st) && !S_ISSOCK(st.st_mode))
		fg_why(why, "connect unix:%s: is %s, not a socket", path, fg_file_type(st.st_mode));
	else if (err == -ELOOP)
		fg_why(why, "connect unix:%s: too many levels of symbolic links (a loop?)", path);
	else
		fg_why(why, "connect unix:%s: %s", path,
		       err == -ETIMEDOUT ? "timed out" : strerror(-err));
}

static int open_socket(const struct fg_redis_url *u, __u64 deadline_ns, int *fdp, char *why)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL, *ai;
	char port[8];
	int err, gai;

	if (u->is_unix) {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };

		memcpy(sun.sun_path, u->path,
		       sizeof(u->path) < sizeof(sun.sun_path) ? sizeof(u->path) :
								sizeof(sun.sun_path));
		sun.sun_path[sizeof(sun.sun_path) - 1] = 0;
		err = connect_addr(AF_UNIX, (struct sockaddr *)&sun, sizeof(sun), deadline_ns, fdp);
		if (err)
			unix_why(u->path, err, why);
		return err;
	}
	snprintf(port, sizeof(port), "%u", u->port);
	gai = getaddrinfo(u->host, port, &hints, &res);
	if (gai) {
		fg_why(why, "resolving %s: %s", u->host, gai_strerror(gai));
		return gai == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
	}
	err = -EHOSTUNREACH;
	for (ai = res; ai; ai = ai->ai_next) {
		err = connect_addr(ai->ai_family, ai->ai_addr, ai->ai_addrlen, deadline_ns, fdp);
		if (!err || err == -ETIMEDOUT)
			break;
	}
	freeaddrinfo(res);
	if (err)
		fg_why(why, "connect %s:%u: %s", u->host, u->port,
		       err == -ETIMEDOUT ? "timed out" : strerror(-err));
	return err;
}

int fg_redis_append(struct fg_redis *r, int argc, const char **argv, const size_t *lens)
{
	char *cmd = NULL;
	int n = redisFormatCommandArgv(&cmd, argc, argv, lens);

	if (n < 0)
		return -ENOMEM;
	if (r->olen + (size_t)n > FG_REDIS_MAX_QUEUE) {
		redisFreeCommand(cmd);
		return -E2BIG;
	}
	if (r->olen + (size_t)n > r->ocap) {
		size_t cap = r->ocap ? r->ocap : 4096;
		char *nb;

		while (cap < r->olen + (size_t)n)
			cap *= 2;
		nb = realloc(r->obuf, cap);
		if (!nb) {
			redisFreeCommand(cmd);
			return -ENOMEM;
		}
		r->obuf = nb;
		r->ocap = cap;
	}
	memcpy(r->obuf + r->olen, cmd, (size_t)n);
	r->olen += (size_t)n;
	r->queued++;
	redisFreeCommand(cmd);
	return 0;
}

static void free_replies(redisReply **rep, int n)
{
	for (int i = 0; i < n; i++) {
		if (rep[i])
			freeReplyObject(rep[i]);
		rep[i] = NULL;
	}
}

int fg_redis_exchange(struct fg_redis *r, redisReply **rep, int n, __u64 deadline_ns, char *why)
{
	size_t off = 0, nread = 0;
	int got = 0, err = 0;

	for (int i = 0; i < n; i++)
		rep[i] = NULL;
	if (r->fd < 0 || !r->rd) {
		fg_why(why, "not connected");
		r->olen = 0;
		r->queued = 0;
		return -ENOTCONN;
	}
	while (got < n) {
		short rev = 0;

		while (off < r->olen) {
			ssize_t w = send(r->fd, r->obuf + off, r->olen - off,
					 MSG_NOSIGNAL | MSG_DONTWAIT);

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			if (w < 0) {
				err = -errno;
				fg_why(why, "send: %s", strerror(errno));
				goto fail;
			}
			off += (size_t)w;
		}
		for (;;) {
			void *rp = NULL;

			if (got >= n)
				break;
			if (redisReaderGetReply(r->rd, &rp) != REDIS_OK) {
				err = -EPROTO;
				fg_why(why, "protocol error: %s", r->rd->errstr);
				goto fail;
			}
			if (!rp)
				break;
			rep[got++] = rp;
		}
		if (got >= n)
			break;
		err = wait_fd(r->fd, (short)(POLLIN | (off < r->olen ? POLLOUT : 0)), deadline_ns,
			      &rev);
		if (err) {
			if (err == -ETIMEDOUT)
				fg_why(why, "no answer within the deadline (%d of %d replies)", got,
				       n);
			else
				fg_why(why, "poll: %s", strerror(-err));
			goto fail;
		}
		if (rev & (POLLIN | POLLHUP | POLLERR)) {
			char buf[16384];
			ssize_t rd = recv(r->fd, buf, sizeof(buf), MSG_DONTWAIT);

			if (rd < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
				continue;
			if (rd < 0) {
				err = -errno;
				fg_why(why, "recv: %s", strerror(errno));
				goto fail;
			}
			if (rd == 0) {
				err = -ECONNRESET;
				fg_why(why, "connection closed by the server");
				goto fail;
			}
			nread += (size_t)rd;
			if (nread > FG_REDIS_MAX_REPLY) {
				err = -EMSGSIZE;
				fg_why(why, "replies larger than %u bytes", FG_REDIS_MAX_REPLY);
				goto fail;
			}
			if (redisReaderFeed(r->rd, buf, (size_t)rd) != REDIS_OK) {
				err = -ENOMEM;
				fg_why(why, "reader: %s", r->rd->errstr);
				goto fail;
			}
		}
	}
	r->olen = 0;
	r->queued = 0;
	return 0;
fail:
	free_replies(rep, got);
	fg_redis_close(r);
	return err;
}

/* AUTH and SELECT, pipelined, as the URL says. */
static int handshake(struct fg_redis *r, __u64 deadline_ns, char *why)
{
	redisReply *rep[2] = {};
	char db[16];
	int n = 0, err;

	/* an ACL user without a password is a nopass user: AUTH takes any */
	if (r->url.password[0] || r->url.user[0]) {
		const char *av[3] = { "AUTH", r->url.user, r->url.password };
		size_t al[3] = { 4, strlen(r->url.user), strlen(r->url.password) };

		if (r->url.user[0])
			err = fg_redis_append(r, 3, av, al);
		else {
			av[1] = r->url.password;
			al[1] = al[2];
			err = fg_redis_append(r, 2, av, al);
		}
		if (err)
			return err;
		n++;
	}
	if (r->url.db > 0) {
		const char *av[2] = { "SELECT", db };
		size_t al[2] = { 6, 0 };

		al[1] = (size_t)snprintf(db, sizeof(db), "%d", r->url.db);
		err = fg_redis_append(r, 2, av, al);
		if (err)
			return err;
		n++;
	}
	if (!n)
		return 0;
	err = fg_redis_exchange(r, rep, n, deadline_ns, why);
	if (err)
		return err;
	for (int i = 0; i < n; i++) {
		if (rep[i]->type == REDIS_REPLY_ERROR) {
			int auth = (r->url.password[0] || r->url.user[0]) && i == 0;

			if (auth && r->url.user[0])
				fg_why(why, "AUTH as user %s refused: %.*s", r->url.user,
				       (int)(rep[i]->len > 140 ? 140 : rep[i]->len), rep[i]->str);
			else
				fg_why(why, "%s refused: %.*s", auth ? "AUTH" : "SELECT",
				       (int)(rep[i]->len > 160 ? 160 : rep[i]->len), rep[i]->str);
			err = auth ? -EACCES : -EINVAL;
			break;
		}
	}
	free_replies(rep, n);
	if (err)
		fg_redis_close(r);
	return err;
}

int fg_redis_connect(struct fg_redis *r, __u64 deadline_ns, char *why)
{
	int err, fd = -1;

	fg_redis_close(r);
	err = open_socket(&r->url, deadline_ns, &fd, why);
	if (err)
		return err;
	r->rd = redisReaderCreate();
	if (!r->rd) {
		close(fd);
		fg_why(why, "out of memory");
		return -ENOMEM;
	}
	r->fd = fd;
	return handshake(r, deadline_ns, why);
}
