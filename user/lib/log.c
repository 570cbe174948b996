// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Logging: one sink (stderr or syslog) for floodgate's own lines and for
 * libbpf's and libxdp's, and the audit trail of operator actions. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "lib/log.h"

static enum fg_log_level log_level = FG_LOG_INFO;
static bool log_syslog;
static char log_ident[32] = "floodgate";
static char log_last_warn[512]; /* fg_log_last_warn */

static void fg_vlog(enum fg_log_level level, const char *fmt, va_list ap)
{
	static const int prio[] = { LOG_WARNING, LOG_INFO, LOG_DEBUG };

	if (level == FG_LOG_WARN) {
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
	openlog(log_ident, LOG_PID, LOG_DAEMON);
	libbpf_set_print(libbpf_print_fn);
	libxdp_set_print(libxdp_print_fn);
}

void fg_log_set_level(enum fg_log_level level)
{
	log_level = level;
}

const char *fg_log_last_warn(void)
{
	return log_last_warn;
}
