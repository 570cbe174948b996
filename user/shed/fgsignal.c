// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Utilization signals for the adaptive shedder: /proc/stat, pressure
 * files, listener accept queues through sock_diag, and plain files. See
 * fgsignal.h for the specs and docs/shedding.md for the choices.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include "shed/fgsignal.h"
#include "lib/safefile.h"
#include "lib/sysutil.h"

#define WHY(...)                                  \
	({                                        \
		if (why)                          \
			fg_why(why, __VA_ARGS__); \
		-EINVAL;                          \
	})

#define PSI_MIN_NS 10000000ull /* 10 ms: 1% resolution of a us counter */
#define CPU_MAX	   65535

/* A whole unsigned decimal, at most max; no sign, no blanks. */
static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	unsigned long v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = v * 10 + (unsigned long)(*s - '0');
		if (v > max)
			return -EINVAL;
	}
	*out = v;
	return 0;
}

static const char *after(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);

	return strncmp(s, prefix, n) ? NULL : s + n;
}

static int set_path(struct fg_signal *s, const char *path, const char *kind, char *why)
{
	if (path[0] != '/')
		return WHY("%s: the path must be absolute, not '%s'", kind, path);
	if (strlen(path) >= sizeof(s->path))
		return WHY("%s: the path is too long", kind);
	strcpy(s->path, path);
	return 0;
}

int fg_signal_parse(const char *spec, struct fg_signal *sig, char *why)
{
	struct fg_signal s;
	unsigned long v;
	const char *arg;
	int err = 0;

	memset(&s, 0, sizeof(s));
	s.nl = -1;
	s.cpu = -1;
	if (!strcmp(spec, "cpu")) {
		s.kind = FG_SIG_CPU;
	} else if ((arg = after(spec, "cpu:"))) {
		s.kind = FG_SIG_CPU;
		if (parse_uint(arg, CPU_MAX, &v))
			return WHY("cpu:N: N must be a CPU number, not '%s'", arg);
		s.cpu = (int)v;
	} else if (!strcmp(spec, "psi")) {
		s.kind = FG_SIG_PSI;
		strcpy(s.path, FG_SIG_PSI_DEFAULT);
	} else if ((arg = after(spec, "psi:"))) {
		s.kind = FG_SIG_PSI;
		err = set_path(&s, arg, "psi", why);
	} else if ((arg = after(spec, "accept_queue:"))) {
		s.kind = FG_SIG_ACCEPTQ;
		if (parse_uint(arg, 65535, &v) || v == 0)
			return WHY("accept_queue:PORT: PORT must be 1..65535, not '%s'", arg);
		s.port = (__u16)v;
	} else if ((arg = after(spec, "file:"))) {
		s.kind = FG_SIG_FILE;
		err = set_path(&s, arg, "file", why);
	} else {
		return WHY("unknown signal '%s': expected cpu, cpu:N, psi, psi:PATH, "
			   "accept_queue:PORT or file:PATH",
			   spec);
	}
	if (err)
		return err;
	*sig = s;
	return 0;
}

void fg_signal_name(const struct fg_signal *s, char *buf, size_t len)
{
	switch (s->kind) {
	case FG_SIG_CPU:
		if (s->cpu < 0)
			snprintf(buf, len, "cpu");
		else
			snprintf(buf, len, "cpu:%d", s->cpu);
		break;
	case FG_SIG_PSI:
		if (!strcmp(s->path, FG_SIG_PSI_DEFAULT))
			snprintf(buf, len, "psi");
		else
			snprintf(buf, len, "psi:%s", s->path);
		break;
	case FG_SIG_ACCEPTQ:
		snprintf(buf, len, "accept_queue:%u", s->port);
		break;
	case FG_SIG_FILE:
		snprintf(buf, len, "file:%s", s->path);
		break;
	default:
		snprintf(buf, len, "?");
	}
}

/* --- text parsers ------------------------------------------------------ */

/* One decimal: digits, optionally '.' and digits. Advances *p. No sign, no
 * exponent, no hex, no inf/nan: strtod would take all of those. */
static int parse_decimal(const char **p, double *out)
{
	const char *s = *p, *start = s;
	char tmp[64];

	while (*s >= '0' && *s <= '9')
		s++;
	if (s == start)
		return -EINVAL;
	if (*s == '.') {
		const char *frac = ++s;

		while (*s >= '0' && *s <= '9')
			s++;
		if (s == frac)
			return -EINVAL;
	}
	if ((size_t)(s - start) >= sizeof(tmp))
		return -EINVAL;
	/* the text is validated: strtod reads exactly it (the C locale is
	 * never changed in floodgate, so '.' is the decimal point) */
	memcpy(tmp, start, (size_t)(s - start));
	tmp[s - start] = 0;
	*out = strtod(tmp, NULL);
	*p = s;
	return 0;
}

static int parse_u64_field(const char **p, __u64 *out)
{
	const char *s = *p;
	__u64 v = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (~0ull - 9) / 10)
			return -EINVAL;
		v = v * 10 + (__u64)(*s - '0');
	}
	*out = v;
	*p = s;
	return 0;
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int fg_value_parse(const char *text, double *u)
{
	const char *p = text;
	double v;

	while (is_blank(*p))
		p++;
	if (parse_decimal(&p, &v))
		return -EINVAL;
	while (is_blank(*p))
		p++;
	if (*p)
		return -EINVAL;
	if (v > 1)
		return -ERANGE;
	*u = v;
	return 0;
}

/*
 * "cpu  user nice system idle iowait irq softirq steal guest guest_nice",
 * or "cpuN ...". guest and guest_nice are already inside user and nice
 * (kernel/sched/cputime.c account_guest_time), so they are not added.
 * Returns -ENOENT if the line is another CPU's.
 */
enum {
	F_USER,
	F_NICE,
	F_SYSTEM,
	F_IDLE,
	F_IOWAIT,
	F_IRQ,
	F_SOFTIRQ,
	F_STEAL,
	NFIELD
};

static int parse_cpu_line(const char *line, int cpu, struct fg_cpu_times *out)
{
	const char *p = line + 3;
	__u64 f[NFIELD] = { 0 };
	int n;

	if (strncmp(line, "cpu", 3))
		return -ENOENT;
	if (*p == ' ') {
		if (cpu >= 0)
			return -ENOENT;
	} else {
		__u64 id;

		if (parse_u64_field(&p, &id) || *p != ' ')
			return -EINVAL;
		if (cpu < 0 || id != (__u64)cpu)
			return -ENOENT;
	}
	for (n = 0;; n++) {
		__u64 v;

		while (*p == ' ')
			p++;
		if (!*p || *p == '\n')
			break;
		if (parse_u64_field(&p, &v) || (*p && *p != ' ' && *p != '\n'))
			return -EINVAL;
		if (n < NFIELD)
			f[n] = v;
	}
	if (n < 4) /* user nice system idle: every kernel since 2.4 */
		return -EINVAL;
	out->busy = f[F_USER] + f[F_NICE] + f[F_SYSTEM] + f[F_IRQ] + f[F_SOFTIRQ] + f[F_STEAL];
	out->idle = f[F_IDLE] + f[F_IOWAIT];
	return 0;
}

int fg_cpu_parse(const char *text, int cpu, struct fg_cpu_times *out)
{
	const char *line = text;

	while (*line) {
		int err = parse_cpu_line(line, cpu, out);

		if (err != -ENOENT)
			return err;
		line = strchr(line, '\n');
		if (!line)
			break;
		line++;
	}
	return -ENOENT;
}

/* A counter that went backwards (iowait can, on NOHZ) counts as no time. */
static __u64 delta(__u64 prev, __u64 cur)
{
	return cur > prev ? cur - prev : 0;
}

int fg_cpu_util(const struct fg_cpu_times *prev, const struct fg_cpu_times *cur, double *u)
{
	__u64 busy = delta(prev->busy, cur->busy);
	__u64 total = busy + delta(prev->idle, cur->idle);

	if (!total)
		return -EAGAIN;
	*u = (double)busy / (double)total;
	return 0;
}

/* "some avg10=1.98 avg60=6.38 avg300=5.60 total=60224654" */
int fg_psi_parse(const char *text, struct fg_psi *out)
{
	static const char *const keys[] = { "avg10=", "avg60=", "avg300=" };
	const char *p = text;
	double avg[3];
	__u64 total;

	while (p && strncmp(p, "some ", 5)) {
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	if (!p)
		return -EINVAL;
	p += 5;
	for (int i = 0; i < 3; i++) {
		const char *q = after(p, keys[i]);

		if (!q || parse_decimal(&q, &avg[i]) || *q != ' ' || avg[i] > 100)
			return -EINVAL;
		p = q + 1;
	}
	p = after(p, "total=");
	if (!p || parse_u64_field(&p, &total) || (*p && *p != '\n'))
		return -EINVAL;
	*out = (struct fg_psi){ .avg10 = avg[0], .avg60 = avg[1], .avg300 = avg[2], .total = total };
	return 0;
}

/*
 * The delta of total over the interval, not avg10: it is exact over our
 * own sampling window (the file's totals are brought up to date on every
 * read), where avg10 is a 10 s exponential average, updated every 2 s,
 * that would add its own lag to the controller's delay.
 */
int fg_psi_util(__u64 prev_total, __u64 prev_ns, __u64 cur_total, __u64 cur_ns, double *u)
{
	double v;

	if (cur_ns <= prev_ns || cur_ns - prev_ns < PSI_MIN_NS)
		return -EAGAIN;
	v = (double)delta(prev_total, cur_total) * 1000.0 / (double)(cur_ns - prev_ns);
	*u = v > 1 ? 1 : v;
	return 0;
}

/* --- readers ------------------------------------------------------------ */

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* The whole of a small file into buf (NUL-terminated), through the
 * helper that opens nothing but a regular file (a FIFO would block the
 * daemon's loop in open(2)); -EFBIG if longer than cap - 1 bytes; the
 * reason in s->why. */
static int read_small(struct fg_signal *s, char *buf, size_t cap)
{
	char why[FG_WHY_LEN] = "";
	ssize_t n = fg_read_small(s->path, buf, cap, why);

	if (why[0])
		snprintf(s->why, sizeof(s->why), "%s", why);
	return n < 0 ? (int)n : 0;
}

/* /proc/stat line by line: cpuN sits at line N + 2 of a file whose "intr"
 * line alone can be tens of kilobytes, so no fixed buffer. */
static int read_cpu(int cpu, struct fg_cpu_times *out)
{
	char *line = NULL;
	size_t cap = 0;
	int err = -ENOENT;
	FILE *f;

	f = fopen("/proc/stat", "re");
	if (!f)
		return -errno;
	errno = 0;
	while (getline(&line, &cap, f) > 0) {
		if (strncmp(line, "cpu", 3))
			break; /* the cpu lines come first */
		err = parse_cpu_line(line, cpu, out);
		if (err != -ENOENT)
			break;
	}
	if (err == -ENOENT && ferror(f))
		err = errno ? -errno : -EIO;
	free(line);
	fclose(f);
	return err;
}

static int read_psi(struct fg_signal *s, __u64 *total)
{
	char buf[512];
	struct fg_psi psi;
	int err;

	err = read_small(s, buf, sizeof(buf));
	if (err)
		return err == -EFBIG ? -EINVAL : err;
	err = fg_psi_parse(buf, &psi);
	if (err) {
		snprintf(s->why, sizeof(s->why), "no \"some avg10=... total=N\" line");
		return err;
	}
	*total = psi.total;
	return 0;
}

static int read_file(struct fg_signal *s, double *u)
{
	char buf[FG_SIG_FILE_MAX + 1];
	int err;

	err = read_small(s, buf, sizeof(buf));
	if (err)
		return err == -EFBIG ? -EINVAL : err;
	err = fg_value_parse(buf, u);
	if (err)
		snprintf(s->why, sizeof(s->why), "%s",
			 err == -ERANGE ? "a number outside [0, 1]" : "not a number in [0, 1]");
	return err;
}

/*
 * One sock_diag dump of the TCP listeners of a family. The kernel filters
 * listeners by idiag_sport; the check below makes that not matter. For a
 * listener, idiag_rqueue is the accept queue's length (sk_ack_backlog) and
 * idiag_wqueue the backlog it was given (sk_max_ack_backlog; tcp_diag.c).
 */
static int diag_dump(struct fg_signal *s, int family, double *worst, int *found)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req = {
		.nlh = {
			.nlmsg_len = sizeof(req),
			.nlmsg_type = SOCK_DIAG_BY_FAMILY,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
			.nlmsg_seq = ++s->seq,
		},
		.r = {
			.sdiag_family = (__u8)family,
			.sdiag_protocol = IPPROTO_TCP,
			.idiag_states = 1u << TCP_LISTEN,
			.id.idiag_sport = htons(s->port),
		},
	};
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	long buf[8192 / sizeof(long)];

	if (sendto(s->nl, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	for (;;) {
		ssize_t r = recv(s->nl, buf, sizeof(buf), 0);
		size_t left, off;

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EIO;
		/* NLMSG_OK/NEXT by hand: the macros mix signedness (clang -Wextra) */
		for (off = 0, left = (size_t)r; left >= sizeof(struct nlmsghdr);) {
			const struct nlmsghdr *h =
				(const struct nlmsghdr *)((const char *)buf + off);
			const struct inet_diag_msg *m;
			size_t step;
			double v;

			if (h->nlmsg_len < sizeof(*h) || h->nlmsg_len > left)
				return -EIO; /* a truncated or corrupt message */
			step = NLMSG_ALIGN(h->nlmsg_len);
			off += step;
			left = step < left ? left - step : 0;
			if (h->nlmsg_seq != s->seq)
				continue; /* a late answer to an earlier dump */
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
					return -EIO;
				return e->error ? e->error : -EIO;
			}
			if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
			    h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
				continue;
			m = NLMSG_DATA(h);
			if (m->idiag_state != TCP_LISTEN || ntohs(m->id.idiag_sport) != s->port)
				continue;
			/* the queue holds up to backlog + 1 (sk_acceptq_is_full
			 * is ">"): a full one reads as 1 */
			if (m->idiag_wqueue)
				v = (double)m->idiag_rqueue / m->idiag_wqueue;
			else
				v = m->idiag_rqueue ? 1 : 0;
			if (v > 1)
				v = 1;
			if (!*found || v > *worst)
				*worst = v;
			*found = 1;
		}
	}
}

static int read_acceptq(struct fg_signal *s, double *u)
{
	static const int families[] = { AF_INET, AF_INET6 };
	double worst = 0;
	int found = 0;

	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		int err = diag_dump(s, families[i], &worst, &found);

		/* a kernel without IPv6 has no AF_INET6 handler */
		if (err == -ENOENT && families[i] == AF_INET6)
			continue;
		if (err)
			return err;
	}
	if (!found)
		return -ENOENT;
	*u = worst;
	return 0;
}

int fg_signal_open(struct fg_signal *s)
{
	struct timeval tv = { .tv_sec = 1 };
	int err;

	switch (s->kind) {
	case FG_SIG_CPU:
		return read_cpu(s->cpu, &s->prev);
	case FG_SIG_PSI:
		s->why[0] = 0;
		err = read_psi(s, &s->psi_total);
		s->psi_ns = mono_ns();
		return err;
	case FG_SIG_ACCEPTQ:
		s->nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
		if (s->nl < 0)
			return -errno;
		/* a sampler must not hang on a kernel that never answers */
		if (setsockopt(s->nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))) {
			err = -errno;
			close(s->nl);
			s->nl = -1;
			return err;
		}
		return 0;
	case FG_SIG_FILE:
		return 0; /* read each time; a missing file is a lost sample */
	}
	return -EINVAL;
}

int fg_signal_read(struct fg_signal *s, double *u)
{
	struct fg_cpu_times cur;
	__u64 total, now;
	int err;

	s->why[0] = 0;
	switch (s->kind) {
	case FG_SIG_CPU:
		err = read_cpu(s->cpu, &cur);
		if (err)
			return err;
		err = fg_cpu_util(&s->prev, &cur, u);
		if (!err)
			s->prev = cur;
		return err;
	case FG_SIG_PSI:
		err = read_psi(s, &total);
		now = mono_ns();
		if (err)
			return err;
		err = fg_psi_util(s->psi_total, s->psi_ns, total, now, u);
		if (!err) {
			s->psi_total = total;
			s->psi_ns = now;
		}
		return err;
	case FG_SIG_ACCEPTQ:
		if (s->nl < 0)
			return -EBADF;
		return read_acceptq(s, u);
	case FG_SIG_FILE:
		return read_file(s, u);
	}
	return -EINVAL;
}

void fg_signal_close(struct fg_signal *s)
{
	if (s->nl >= 0)
		close(s->nl);
	s->nl = -1;
}
