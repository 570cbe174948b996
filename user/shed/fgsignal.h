/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Utilization signals for the adaptive shedder (issue 11): each sample is a
 * value in [0, 1] or a negative errno. The policy names one:
 *
 *   cpu                 /proc/stat, all CPUs: busy / (busy + idle), where
 *                       busy = user + nice + system + irq + softirq + steal
 *   cpu:N               the same for CPU N (the one an RX queue floods)
 *   psi                 /proc/pressure/cpu, "some": the share of the last
 *                       interval with a task waiting for a CPU
 *   psi:PATH            the same from a cgroup's cpu.pressure
 *   accept_queue:PORT   TCP listeners on PORT in this network namespace
 *                       (sock_diag): queued / backlog, the fullest listener
 *   file:PATH           a number in [0, 1] read from a file
 *
 * Parsers are separate from the readers so tests can feed them text. The
 * choices (why steal is busy, why PSI uses the delta of total) are in
 * docs/shedding.md. Not named signal.h: with -Iuser that would shadow the
 * system's <signal.h> for every file that includes it.
 */
#ifndef FG_FGSIGNAL_H
#define FG_FGSIGNAL_H

#include <limits.h>
#include <stddef.h>
#include <linux/types.h>

enum fg_signal_kind {
	FG_SIG_CPU = 0,
	FG_SIG_PSI,
	FG_SIG_ACCEPTQ,
	FG_SIG_FILE,
};

#define FG_SIG_PSI_DEFAULT "/proc/pressure/cpu"
#define FG_SIG_FILE_MAX	   128 /* bytes a file signal may hold */
#define FG_SIG_WHY_LEN	   160

/* Cumulative CPU time in USER_HZ ticks, from one /proc/stat line. */
struct fg_cpu_times {
	__u64 busy;
	__u64 idle; /* idle + iowait: the CPU could have run something */
};

struct fg_psi {
	double avg10, avg60, avg300; /* percent, as printed */
	__u64 total;		     /* us stalled, cumulative */
};

struct fg_signal {
	enum fg_signal_kind kind;
	int cpu;		  /* FG_SIG_CPU: -1 for all, else the CPU number */
	__u16 port;		  /* FG_SIG_ACCEPTQ */
	char path[PATH_MAX];	  /* FG_SIG_PSI, FG_SIG_FILE */
	int nl;			  /* FG_SIG_ACCEPTQ: sock_diag socket, -1 when closed */
	__u32 seq;		  /* netlink sequence number */
	struct fg_cpu_times prev; /* FG_SIG_CPU: the last sample */
	__u64 psi_total;	  /* FG_SIG_PSI: the last sample's total ... */
	__u64 psi_ns;		  /* ... and when (CLOCK_MONOTONIC) */
	char why[FG_SIG_WHY_LEN]; /* the last failed read's reason, "" after a good one */
};

/* Parse a spec (see above) into *sig, which then needs fg_signal_open.
 * 0 or -EINVAL with a reason in why (may be NULL); *sig untouched on error. */
int fg_signal_parse(const char *spec, struct fg_signal *sig, char *why);

/* Take what later reads compare against (cpu, psi) or open the netlink
 * socket (accept_queue). 0 or -errno. */
int fg_signal_open(struct fg_signal *sig);

/* One sample into *value, in [0, 1]. cpu and psi give the average since
 * the previous read (or the open). -EAGAIN: no time passed to measure;
 * -ENOENT: no listener on the port, or no such file; -EINVAL/-ERANGE: a
 * file that is not a number in [0, 1]; other -errno from the system. */
int fg_signal_read(struct fg_signal *sig, double *value);

void fg_signal_close(struct fg_signal *sig);

/* The spec back, "accept_queue:8080" and so on. */
void fg_signal_name(const struct fg_signal *sig, char *buf, size_t len);

/* Text parsers, exposed for tests. cpu: -1 for the "cpu" line, else cpuN;
 * -ENOENT if that line is missing, -EINVAL if malformed. */
int fg_cpu_parse(const char *text, int cpu, struct fg_cpu_times *out);
/* busy share between two samples; -EAGAIN if no tick passed */
int fg_cpu_util(const struct fg_cpu_times *prev, const struct fg_cpu_times *cur, double *u);
/* the "some" line of a pressure file; -EINVAL if missing or malformed */
int fg_psi_parse(const char *text, struct fg_psi *out);
/* stall share over [prev_ns, cur_ns]; -EAGAIN when under 100 ms apart */
int fg_psi_util(__u64 prev_total, __u64 prev_ns, __u64 cur_total, __u64 cur_ns, double *u);
/* a whole file signal's text: optional blanks, a decimal number, optional
 * blanks. -EINVAL if anything else, -ERANGE outside [0, 1]. */
int fg_value_parse(const char *text, double *u);

#endif /* FG_FGSIGNAL_H */
