/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What this kernel allows: BPF program types, map types, helpers, kfuncs
 * and the file systems floodgate's features use, probed once per process
 * (a few ms: one small program or map per item) and never assumed.
 *
 *   const struct fg_kfeat *kf = fg_kfeat_get();
 *   if (!kf->f[FG_KF_TRACING].ok) ... kf->f[FG_KF_TRACING].why
 *
 * Each item says what it is, what in floodgate needs it and, when the
 * kernel refuses it, why (the probe's own finding, not libbpf's generic
 * hints). Which way a feature takes on this kernel (the concurrency
 * counter's, the libxdp dispatcher's) is derived from these items by the
 * feature's own code and by policy/policy_kernel.c.
 */
#ifndef FG_KFEAT_H
#define FG_KFEAT_H

#include <stdbool.h>
#include <stddef.h>

enum fg_kf {
	FG_KF_XDP = 0,	     /* program type xdp: the filter itself */
	FG_KF_XDP_FRAGS,     /* xdp.frags programs (5.18) */
	FG_KF_BTF,	     /* /sys/kernel/btf/vmlinux */
	FG_KF_TRACING,	     /* program type tracing: tp_btf, fentry, iterators */
	FG_KF_EXT,	     /* program type ext (freplace): libxdp's dispatcher */
	FG_KF_SOCK_OPS,	     /* program type sock_ops */
	FG_KF_SCHED_CLS,     /* program type sched_cls (tc) */
	FG_KF_CGROUP2,	     /* a cgroup v2 hierarchy (mounted, or mountable) */
	FG_KF_RINGBUF,	     /* map type ringbuf (5.8) */
	FG_KF_MMAP,	     /* mmapable arrays (5.5) */
	FG_KF_SK_STORAGE,    /* map type sk_storage (5.2) */
	FG_KF_TP_SOCK_STATE, /* BTF of the sock:inet_sock_set_state tracepoint */
	FG_KF_ITER_TCP,	     /* BTF of the tcp iterator (5.9) */
	FG_KF_SYNCOOKIE,     /* bpf_tcp_raw_{gen,check}_syncookie_* in XDP (6.0) */
	FG_KF_SKC_LOOKUP,    /* bpf_skc_lookup_tcp in XDP and tc */
	FG_KF_TCP_REQSK,     /* kfunc bpf_sk_assign_tcp_reqsk (6.9) */
	FG_KF_CT_LOOKUP,     /* kfunc bpf_xdp_ct_lookup (conntrack, 6.0) */
	FG_KF_NETNS_COOKIE,  /* bpf_get_netns_cookie in sock_ops (5.15) */
	FG_KF_MAX,
};

struct fg_kf_item {
	bool ok;
	char why[128]; /* when !ok: what the probe found */
};

struct fg_kfeat {
	char release[65]; /* uname -r */
	struct fg_kf_item f[FG_KF_MAX];
};

/* The probe's result, probed on the first call (thread-safe only before
 * threads start: call it from main). */
const struct fg_kfeat *fg_kfeat_get(void);

/* Probe again into *out (tests; a kernel does not change under us). */
void fg_kfeat_probe(struct fg_kfeat *out);

/* "tracing", "ext", ...: short names (status, JSON keys). */
extern const char *const fg_kf_names[FG_KF_MAX];
/* What each is, in an operator's words ("BPF tracing programs (tp_btf,
 * fentry, iterators)"). */
extern const char *const fg_kf_desc[FG_KF_MAX];

/* One line for the log: "6.18.44: has xdp, ...; refuses tracing (why), ..."
 * Items everything needs are left out when present. */
void fg_kfeat_summary(const struct fg_kfeat *kf, char *buf, size_t len);

/* The concurrency counter's ways, best first, and the one it takes on this
 * kernel (user/conn implements them): FG_CONN_WAY_NONE with *why naming
 * the refused kernel features when none. */
enum fg_conn_way {
	FG_CONN_WAY_NONE = 0,
	FG_CONN_WAY_TRACING, /* tp_btf/inet_sock_set_state + iter/tcp */
	FG_CONN_WAY_SOCKOPS, /* sock_ops state callbacks on cgroup v2 + sock_diag dumps */
};
extern const char *const fg_conn_way_names[3];

/* The environment variable that forces a way (operators, tests):
 * "auto" (or unset), "tp_btf" or "sock_ops". */
#define FG_CONN_WAY_ENV "FLOODGATE_CONN_WAY"

/* "auto" (or NULL, ""): FG_CONN_WAY_NONE, meaning the best; "tp_btf" or
 * "sock_ops": that way. -EINVAL for anything else. */
int fg_conn_way_parse(const char *s, enum fg_conn_way *out);

/* Can this kernel run that way? If not, *why says which feature it
 * refuses, and why. */
bool fg_kfeat_conn_way_ok(const struct fg_kfeat *kf, enum fg_conn_way w, char *why);

/* The way to take: want (FG_CONN_WAY_NONE: the best this kernel allows)
 * if this kernel allows it, else FG_CONN_WAY_NONE with *why. */
enum fg_conn_way fg_kfeat_conn_way_pick(const struct fg_kfeat *kf, enum fg_conn_way want,
					char *why);

/* fg_kfeat_conn_way_pick for what FG_CONN_WAY_ENV asks (unset: the best);
 * an unknown value gives FG_CONN_WAY_NONE, *why naming it. */
enum fg_conn_way fg_kfeat_conn_way(const struct fg_kfeat *kf, char *why);

#endif /* FG_KFEAT_H */
