/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Small system helpers of the CLI and the daemon: the clock, pids, addresses. */
#ifndef FG_SYSUTIL_H
#define FG_SYSUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>

/* Room for an operator's reason: what failed and what to do about it. */
#define FG_WHY_LEN 512

/* The reason for an operator, into why (len bytes, or NULL): truncation is
 * fine, so no snprintf warnings at the callers. */
void fg_whyn(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The same into a buffer of FG_WHY_LEN bytes. */
#define fg_why(why, ...) fg_whyn((why), FG_WHY_LEN, __VA_ARGS__)

/*
 * CLOCK_MONOTONIC_COARSE now, in ns: the clock of the XDP program's default
 * FG_CLOCK_COARSE (bpf_ktime_get_coarse_ns), so bucket times and the bypass
 * expiry compare with it exactly.
 */
__u64 fg_mono_coarse_ns(void);
/* CLOCK_MONOTONIC, ns. */
__u64 fg_mono_ns(void);

/* Is pid a floodgated (not a zombie, not a recycled pid)? True also while
 * it is stopped (SIGSTOP): see fg_daemon_state. */
bool fg_daemon_alive(__u32 pid);

/* What pid is, from /proc/PID/stat's state letter. */
enum fg_daemon_state {
	FG_DAEMON_NONE = 0, /* no floodgated with that pid */
	FG_DAEMON_RUNNING,  /* running or sleeping: it answers signals */
	FG_DAEMON_STOPPED,  /* stopped (SIGSTOP, SIGTSTP) or traced: signals wait */
};
enum fg_daemon_state fg_daemon_state(__u32 pid);
/* "none", "running", "stopped" (status --json's daemon.state) */
const char *fg_daemon_state_name(enum fg_daemon_state st);

/* "1.2.3.4" / "2001:db8::1"; family 4 or 6, addr in network order. */
void fg_addr_str(int family, const __u8 *addr, char *buf, size_t len);

/* read(2) that retries on EINTR: bytes read, 0 at the end, or -errno. */
ssize_t fg_read_retry(int fd, void *buf, size_t len);

/* dir/kind-PIN.state, PIN the pin dir with its slashes as underscores
 * ("/sys/fs/bpf/x" -> "sys_fs_bpf_x"): one state file per floodgate instance. */
void fg_state_path(const char *dir, const char *kind, const char *pin_dir, char *buf, size_t len);

/* path replaced whole or not at all: fill(f, arg) writes path.tmp, which is
 * then renamed over path, so a reader sees the old file or the new one.
 * 0 or -errno (-EIO when a write failed); the temporary file is removed on
 * failure. */
int fg_file_replace(const char *path, void (*fill)(FILE *f, const void *arg), const void *arg);

#endif /* FG_SYSUTIL_H */
