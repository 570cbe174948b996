/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Logging for floodgated and the floodgate CLI: pr_err/pr_warn/pr_info/
 * pr_debug with printf checking, to stderr (default) or to syslog. Each
 * line keeps its syslog priority wherever it goes: through syslog(3), or,
 * when stderr is the journal (systemd's $JOURNAL_STREAM names it), with the
 * "<N>" prefix the journal's stream reads as the line's priority, so
 * `journalctl -p err` finds what stopped a start or refused a reload. libbpf's own messages are routed through
 * the same sink by fg_log_init (libbpf_set_print), warnings always, debug
 * output only at FG_LOG_DEBUG.
 *
 * pr_err is for what stops a start or refuses a request (a reload, a
 * command); pr_warn for what goes on, degraded or with a caveat.
 */
#ifndef FG_LOG_H
#define FG_LOG_H

#include <stdbool.h>
#include <linux/types.h>

enum fg_log_level {
	FG_LOG_ERR = 0,
	FG_LOG_WARN = 1,
	FG_LOG_INFO = 2,
	FG_LOG_DEBUG = 3,
};

/* ident: program name for syslog and the stderr prefix; use_syslog: send
 * everything to syslog(LOG_DAEMON) instead of stderr. */
void fg_log_init(const char *ident, enum fg_log_level level, bool use_syslog);
void fg_log_set_level(enum fg_log_level level);
/* On a terminal, break stderr's lines at spaces to fit width columns (the
 * CLI: 80); a pipe or a file gets each message on one line, as before. */
void fg_log_wrap(int width);

void fg_log(enum fg_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The last error or warning logged (whatever the level shown), "" if none:
 * what a failed background start hands its parent to print. */
const char *fg_log_last_warn(void);

#define pr_err(fmt, ...)   fg_log(FG_LOG_ERR, fmt, ##__VA_ARGS__)
#define pr_warn(fmt, ...)  fg_log(FG_LOG_WARN, fmt, ##__VA_ARGS__)
#define pr_info(fmt, ...)  fg_log(FG_LOG_INFO, fmt, ##__VA_ARGS__)
#define pr_debug(fmt, ...) fg_log(FG_LOG_DEBUG, fmt, ##__VA_ARGS__)

/* Also write one line to syslog(LOG_AUTHPRIV|LOG_NOTICE) whatever the sink:
 * for operator actions (bypass, mode) that must leave an audit trail. */
void fg_log_audit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line at info within a budget: logged while *lines < max (and
 * counted in *lines), else only counted in *suppressed; the caller resets
 * *lines each tick and says how many were suppressed. */
void fg_log_budget(int *lines, int max, __u64 *suppressed, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif /* FG_LOG_H */
