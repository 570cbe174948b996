// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The sock_ops way of the connection counter (docs/concurrency.md, "The
 * sock_ops way"): its program on the cgroup v2 root, and its reconcile,
 * which walks a sock_diag dump and sweeps the count table through two tc
 * programs run with BPF_PROG_TEST_RUN (bpf/fgconn.bpf.c: fgc_swalk,
 * fgc_fix), so that every write is an atomic one in the kernel, never a
 * map update from here racing the counting program and XDP.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <linux/inet_diag.h>
#include <linux/magic.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "conn/conn.h"
#include "conn/conn_int.h"
#include "fgconn.skel.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

int fg_conn_netns_cookie(__u64 *cookie)
{
	socklen_t len = sizeof(*cookie);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	*cookie = 0;
	if (fd < 0)
		return -errno;
	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, cookie, &len))
		err = -errno; /* before 5.14: the sock_ops way needs 5.15 anyway */
	close(fd);
	return err;
}

/*
 * A fresh cgroup2 mount in a child's private mount namespace: its root
 * directory's fd comes back over a socket, and the mount vanishes with the
 * child, so nothing is left mounted whatever happens. Only system calls in
 * the child (the parent may have threads).
 */
static int cgroup2_private_root(char *why)
{
	static const char *const at[] = { "/sys/fs/cgroup", "/mnt", "/tmp", "/" };
	char cbuf[CMSG_SPACE(sizeof(int))] __attribute__((aligned(8))) = { 0 };
	struct iovec iov;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;
	int sv[2], status, e = 0, fd = -1;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv))
		return -errno;
	pid = fork();
	if (pid < 0) {
		e = -errno;
		close(sv[0]);
		close(sv[1]);
		return e;
	}
	if (pid == 0) {
		close(sv[0]);
		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
			e = errno;
		for (size_t i = 0; !e && fd < 0 && i < sizeof(at) / sizeof(at[0]); i++) {
			if (mount("cgroup2", at[i], "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC,
				  NULL))
				continue;
			fd = open(at[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (fd < 0)
				e = errno;
		}
		if (!e && fd < 0)
			e = errno ? errno : ENOENT;
		iov.iov_base = &e;
		iov.iov_len = sizeof(e);
		if (fd >= 0) {
			mh.msg_control = cbuf;
			mh.msg_controllen = sizeof(cbuf);
			cm = CMSG_FIRSTHDR(&mh);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cm), &fd, sizeof(int));
		}
		_exit(sendmsg(sv[1], &mh, 0) < 0 ? 1 : 0);
	}
	close(sv[1]);
	iov.iov_base = &e;
	iov.iov_len = sizeof(e);
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof(cbuf);
	if (recvmsg(sv[0], &mh, MSG_CMSG_CLOEXEC) != sizeof(e))
		e = EIO;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	close(sv[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (e || fd < 0) {
		if (fd >= 0)
			close(fd);
		fg_why(why, "mounting cgroup2 in a private mount namespace: %s",
		       strerror(e ? e : EIO));
		return -(e ? e : EIO);
	}
	return fd;
}

/* The cgroup v2 root: where it is mounted (a v2 or hybrid host), else a
 * private mount of it (a v1 host: every process is still in the v2 root). */
static int cgroup2_root(char *why)
{
	static const char *const where[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
	struct statfs st;

	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		if (statfs(where[i], &st) || st.f_type != CGROUP2_SUPER_MAGIC)
			continue;
		int fd = open(where[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (fd >= 0)
			return fd;
	}
	return cgroup2_private_root(why);
}

int fg_conn_sock_attach(struct fg_conn *c, char *why)
{
	int fd, err;

	if (c->state && c->release)
		return 0;
	fd = cgroup2_root(why);
	if (fd < 0)
		return fd;
	/* links: several programs on the root at once (one per daemon, per
	 * namespace), each detached only by its own link */
	if (!c->state)
		c->state = bpf_program__attach_cgroup(c->skel->progs.fgc_sockops, fd);
	err = c->state ? 0 : -errno;
	if (err) {
		fg_why(why, "attaching sock_ops to the cgroup v2 root: %s", strerror(-err));
	} else if (!c->release) {
		c->release = bpf_program__attach_cgroup(c->skel->progs.fgc_release, fd);
		err = c->release ? 0 : -errno;
		if (err)
			fg_why(why, "attaching cgroup/sock_release to the cgroup v2 root: %s",
			       strerror(-err));
	}
	close(fd);
	return err;
}

/* ---- test runs ------------------------------------------------------------- */

/* Run a tc program of the counter on frame (len bytes; written back). */
static int conn_test_run(int prog, void *frame, __u32 len)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = len, .data_out = frame,
		    .data_size_out = len, .repeat = 1);

	if (bpf_prog_test_run_opts(prog, &o))
		return -errno;
	if (o.retval != 0 || o.data_size_out != len)
		return -EPROTO; /* the program refused the frame */
	return 0;
}

/* ---- the sweep ------------------------------------------------------------------- */

struct fix_frame {
	struct fg_conn_batch b;
	struct fg_conn_fix f[FG_CONN_BATCH];
};

static int sweep_flush(struct fg_conn *c, struct fix_frame *fr, bool del, __u64 *deleted)
{
	struct fg_conn_key zero[FG_CONN_BATCH];
	size_t nz = 0;
	int err;

	if (!fr->b.n)
		return 0;
	err = conn_test_run(bpf_program__fd(c->skel->progs.fgc_fix), fr,
			    sizeof(fr->b) + fr->b.n * sizeof(fr->f[0]));
	for (__u32 i = 0; !err && i < fr->b.n; i++)
		if (fr->f[i].found && fr->f[i].zero)
			zero[nz++] = fr->f[i].key;
	if (!err && del)
		fg_conn_delete_zero_keys(c, zero, nz, deleted);
	fr->b.n = 0;
	return err;
}

/*
 * Every fgc_count key through fgc_fix, FG_CONN_BATCH at a time: the half
 * that is not current is reset, expired slots cleared, and with del the
 * keys left at zero deleted (after their batch: a key is looked up again
 * before its delete, docs/concurrency.md's one race). A key inserted during
 * the listing may be missed: it holds counts of the current half only.
 */
int fg_conn_sock_sweep(struct fg_conn *c, bool del, __u64 *deleted)
{
	static struct fix_frame fr;
	struct fg_conn_key k, next;
	void *prev = NULL;
	int fd = c->fd[FGC_M_COUNT], err = 0;

	memset(&fr, 0, sizeof(fr));
	fr.b.now_ns = c->test_now;
	while (!err && !bpf_map_get_next_key(fd, prev, &next)) {
		k = next;
		prev = &k;
		memset(&fr.f[fr.b.n], 0, sizeof(fr.f[0]));
		fr.f[fr.b.n++].key = k;
		if (fr.b.n == FG_CONN_BATCH)
			err = sweep_flush(c, &fr, del, deleted);
	}
	if (!err && errno != ENOENT && prev)
		err = -errno;
	if (!err)
		err = sweep_flush(c, &fr, del, deleted);
	return err;
}

/* ---- the walk: a sock_diag dump ------------------------------------------------- */

struct walk_frame {
	struct fg_conn_batch b;
	struct fg_conn_walk_sock s[FG_CONN_BATCH];
};

struct walk_ctx {
	struct fg_conn *c;
	struct walk_frame fr;
	__u64 seen;
	int err;
};

static int walk_flush(struct walk_ctx *w)
{
	int err = 0;

	if (w->fr.b.n)
		err = conn_test_run(bpf_program__fd(w->c->skel->progs.fgc_swalk), &w->fr,
				    sizeof(w->fr.b) + w->fr.b.n * sizeof(w->fr.s[0]));
	w->fr.b.n = 0;
	return err;
}

/* One socket of the dump into the batch; an IPv4-mapped IPv6 socket is
 * looked up as IPv4, as its packets are. */
static int walk_add(struct walk_ctx *w, const struct inet_diag_msg *m)
{
	struct fg_conn_walk_sock *s = &w->fr.s[w->fr.b.n];
	const __be32 *src = m->id.idiag_src, *dst = m->id.idiag_dst;

	memset(s, 0, sizeof(*s));
	s->lport = m->id.idiag_sport;
	s->rport = m->id.idiag_dport;
	if (m->idiag_family == AF_INET) {
		s->family = 4;
		s->laddr[0] = src[0];
		s->raddr[0] = dst[0];
	} else if (!dst[0] && !dst[1] && dst[2] == htonl(0xffff)) {
		s->family = 4;
		s->laddr[0] = src[3];
		s->raddr[0] = dst[3];
	} else {
		s->family = 6;
		memcpy(s->laddr, src, 16);
		memcpy(s->raddr, dst, 16);
	}
	w->seen++;
	if (++w->fr.b.n == FG_CONN_BATCH)
		return walk_flush(w);
	return 0;
}

/* Dump the TCP sockets of family in the given states (a bit per state)
 * of this process's namespace, each one to walk_add. */
static int diag_dump(int family, __u32 states, struct walk_ctx *w)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req = {
		.nlh = { .nlmsg_len = sizeof(req),
			 .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			 .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
			 .nlmsg_seq = 1 },
		.r = { .sdiag_family = (__u8)family,
		       .sdiag_protocol = IPPROTO_TCP,
		       .idiag_states = states },
	};
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };
	size_t cap = 64 * 1024;
	char *buf = malloc(cap);
	int fd, err = 0, done = 0;

	if (!buf)
		return -ENOMEM;
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&nl, sizeof(nl)) < 0) {
		err = -errno;
		goto out;
	}
	while (!done && !err) {
		ssize_t n = recv(fd, buf, cap, 0);
		struct nlmsghdr *h;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (n == 0) {
			err = -EPIPE;
			break;
		}
		for (h = (struct nlmsghdr *)buf; !err && NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE) {
				done = 1;
				break;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				err = e->error ? e->error : -EPROTO;
				break;
			}
			if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
			    h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
				continue;
			err = walk_add(w, NLMSG_DATA(h));
		}
	}
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return err;
}

int fg_conn_sock_walk(struct fg_conn *c, __u64 *sockets)
{
	static struct walk_ctx w;
	int err;

	memset(&w, 0, sizeof(w));
	w.c = c;
	err = diag_dump(AF_INET, FG_CONN_COUNTED_STATES, &w);
	if (!err)
		err = diag_dump(AF_INET6, FG_CONN_COUNTED_STATES, &w);
	if (!err)
		err = walk_flush(&w);
	if (sockets)
		*sockets = w.seen;
	return err;
}
