// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Logging: one sink (stderr or syslog) for floodgate's own lines and for
 * libbpf's and libxdp's, and the audit trail of operator actions. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <syslog.h>
#include <sys/stat.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "lib/log.h"

static enum fg_log_level log_level = FG_LOG_INFO;
static bool log_syslog;
static bool log_journal; /* stderr is the journal's stream: "<N>" prefixes */
static int log_width;	 /* fg_log_wrap: a terminal's lines wrapped at this */
static char log_ident[32] = "floodgate";
static char log_last_warn[512]; /* fg_log_last_warn */

/* systemd sets JOURNAL_STREAM=dev:inode for a service whose stderr is the
 * journal; a child whose stderr was redirected elsewhere inherits the
 * variable, hence the comparison (sd_journal_stream_fd(3), systemd.exec(5)). */
static bool stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	return js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && !fstat(2, &st) &&
	       (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/* The journal's stream takes "<N>" before a line as its priority
 * (systemd.exec(5), SyslogLevelPrefix=, on by default). Through the stream,
 * not sd_journal_send(): a short-lived process (ExecReload's floodgate
 * reload) may be gone before journald reads its cgroup from a datagram,
 * and its lines would lose their unit; a stream is the unit's from the
 * start. */
static void journal_vlog(int prio, const char *fmt, va_list ap)
{
	char msg[2048];
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	if (n && msg[n - 1] == '\n')
		msg[--n] = 0;
	for (char *l = msg, *nl; l; l = nl) {
		nl = strchr(l, '\n');
		if (nl)
			*nl++ = 0;
		fprintf(stderr, "<%d>%s\n", prio, l);
	}
}

/* "ident: message" broken at spaces to fit log_width, continued 4 columns in */
static void wrap_vlog(const char *fmt, va_list ap)
{
	char msg[2048];
	const char *p = msg;
	int col = fprintf(stderr, "%s: ", log_ident);

	vsnprintf(msg, sizeof(msg), fmt, ap);
	while (*p) {
		size_t n = strcspn(p, " \n");

		if (col > 4 && col + 1 + (int)n > log_width) {
			fprintf(stderr, "\n   ");
			col = 3;
		}
		if (*p == '\n')
			break;
		col += fprintf(stderr, "%s%.*s", col > 4 && p != msg ? " " : "", (int)n, p);
		p += n;
		p += strspn(p, " ");
	}
	fputc('\n', stderr);
}

static void fg_vlog(enum fg_log_level level, const char *fmt, va_list ap)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };

	if (level <= FG_LOG_WARN) {
		va_list cp;
		size_t n;

		va_copy(cp, ap);
		vsnprintf(log_last_warn, sizeof(log_last_warn), fmt, cp);
		va_end(cp);
		n = strlen(log_last_warn);
		if (n && log_last_warn[n - 1] == '\n')
			log_last_warn[n - 1] = 0;
	}
	if (level > log_level)
		return;
	if (log_syslog) {
		vsyslog(prio[level], fmt, ap);
		return;
	}
	if (log_journal) {
		journal_vlog(prio[level], fmt, ap);
		return;
	}
	if (log_width && isatty(STDERR_FILENO)) {
		wrap_vlog(fmt, ap);
		return;
	}
	fprintf(stderr, "%s: ", log_ident);
	vfprintf(stderr, fmt, ap);
	/* callers write one message without the newline; libbpf's carry it */
	if (!*fmt || fmt[strlen(fmt) - 1] != '\n')
		fputc('\n', stderr);
}

void fg_log(enum fg_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fg_vlog(level, fmt, ap);
	va_end(ap);
}

void fg_log_budget(int *lines, int max, __u64 *suppressed, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (*lines >= max) {
		(*suppressed)++;
		return;
	}
	(*lines)++;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pr_info("%s", msg);
}

void fg_log_audit(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsyslog(LOG_AUTHPRIV | LOG_NOTICE, fmt, ap);
	va_end(ap);
}

static int libbpf_print_fn(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	enum fg_log_level l;

	switch (level) {
	case LIBBPF_WARN:
		l = FG_LOG_WARN;
		break;
	case LIBBPF_INFO:
		/* libbpf's info lines are load details: debug for us */
	default:
		l = FG_LOG_DEBUG;
		break;
	}
	/* libbpf blames RLIMIT_MEMLOCK for every EPERM; since 5.11 BPF memory
	 * is charged to the memory cgroup and the limit plays no part, so on
	 * the kernels floodgate supports the hint only points the wrong way
	 * (the caller says what the kernel refused, from lib/kfeat.h) */
	if (strstr(fmt, "ulimit -l"))
		l = FG_LOG_DEBUG;
	fg_vlog(l, fmt, ap);
	return 0;
}

/* libxdp's levels are libbpf's (libxdp.h says so) */
static int libxdp_print_fn(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	return libbpf_print_fn((enum libbpf_print_level)level, fmt, ap);
}

void fg_log_init(const char *ident, enum fg_log_level level, bool use_syslog)
{
	snprintf(log_ident, sizeof(log_ident), "%s", ident);
	log_level = level;
	log_syslog = use_syslog;
	log_journal = !use_syslog && stderr_is_journal();
	openlog(log_ident, LOG_PID, LOG_DAEMON);
	libbpf_set_print(libbpf_print_fn);
	libxdp_set_print(libxdp_print_fn);
}

void fg_log_wrap(int width)
{
	log_width = width;
}

void fg_log_set_level(enum fg_log_level level)
{
	log_level = level;
}

const char *fg_log_last_warn(void)
{
	return log_last_warn;
}
