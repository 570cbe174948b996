// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* What this kernel allows, probed once (see kfeat.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "lib/kfeat.h"
#include "lib/sysutil.h"

const char *const fg_kf_names[FG_KF_MAX] = {
	[FG_KF_XDP] = "xdp",
	[FG_KF_XDP_FRAGS] = "xdp_frags",
	[FG_KF_BTF] = "btf",
	[FG_KF_TRACING] = "tracing",
	[FG_KF_EXT] = "ext",
	[FG_KF_SOCK_OPS] = "sock_ops",
	[FG_KF_SCHED_CLS] = "tc",
	[FG_KF_CGROUP2] = "cgroup2",
	[FG_KF_RINGBUF] = "ringbuf",
	[FG_KF_MMAP] = "mmap",
	[FG_KF_SK_STORAGE] = "sk_storage",
	[FG_KF_TP_SOCK_STATE] = "tp_sock_state",
	[FG_KF_ITER_TCP] = "iter_tcp",
	[FG_KF_SYNCOOKIE] = "syncookie",
	[FG_KF_SKC_LOOKUP] = "skc_lookup",
	[FG_KF_TCP_REQSK] = "tcp_reqsk",
	[FG_KF_CT_LOOKUP] = "ct_lookup",
	[FG_KF_NETNS_COOKIE] = "netns_cookie",
};

const char *const fg_kf_desc[FG_KF_MAX] = {
	[FG_KF_XDP] = "XDP programs",
	[FG_KF_XDP_FRAGS] = "XDP programs for multi-buffer frames (xdp.frags, 5.18)",
	[FG_KF_BTF] = "the kernel's BTF (/sys/kernel/btf/vmlinux)",
	[FG_KF_TRACING] = "BPF tracing programs (tp_btf, fentry, iterators)",
	[FG_KF_EXT] = "BPF freplace programs (type ext: libxdp's dispatcher)",
	[FG_KF_SOCK_OPS] = "sock_ops programs (TCP state callbacks)",
	[FG_KF_SCHED_CLS] = "tc programs (sched_cls)",
	[FG_KF_CGROUP2] = "a cgroup v2 hierarchy",
	[FG_KF_RINGBUF] = "BPF ring buffers",
	[FG_KF_MMAP] = "mmapable BPF arrays",
	[FG_KF_SK_STORAGE] = "socket storage maps",
	[FG_KF_TP_SOCK_STATE] = "the sock:inet_sock_set_state tracepoint in BTF",
	[FG_KF_ITER_TCP] = "the BPF TCP socket iterator",
	[FG_KF_SYNCOOKIE] = "the raw SYN cookie helpers in XDP (6.0)",
	[FG_KF_SKC_LOOKUP] = "socket lookup (bpf_skc_lookup_tcp) in XDP",
	[FG_KF_TCP_REQSK] =
		"bpf_sk_assign_tcp_reqsk (6.9: a tc program hands a cookie to the listener)",
	[FG_KF_CT_LOOKUP] = "conntrack lookup from XDP (bpf_xdp_ct_lookup)",
	[FG_KF_NETNS_COOKIE] = "bpf_get_netns_cookie in sock_ops (5.15)",
};

const char *const fg_conn_way_names[3] = {
	[FG_CONN_WAY_NONE] = "none",
	[FG_CONN_WAY_TRACING] = "tp_btf",
	[FG_CONN_WAY_SOCKOPS] = "sock_ops",
};

static void set(struct fg_kfeat *kf, enum fg_kf i, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void set(struct fg_kfeat *kf, enum fg_kf i, bool ok, const char *fmt, ...)
{
	va_list ap;

	kf->f[i].ok = ok;
	kf->f[i].why[0] = 0;
	if (ok || !fmt)
		return;
	va_start(ap, fmt);
	vsnprintf(kf->f[i].why, sizeof(kf->f[i].why), fmt, ap);
	va_end(ap);
}

/* libbpf's probes answer 1 (yes), 0 (no) or -errno; EPERM means we could
 * not ask (no CAP_BPF), not that the kernel refuses. */
static void probe_answer(struct fg_kfeat *kf, enum fg_kf i, int r, const char *what)
{
	if (r == 1)
		set(kf, i, true, NULL);
	else if (r == 0)
		set(kf, i, false, "this kernel refuses %s", what);
	else if (r == -EPERM || r == -EACCES)
		set(kf, i, false, "could not probe %s: %s (needs root or CAP_BPF)", what,
		    strerror(-r));
	else
		set(kf, i, false, "probing %s: %s", what, strerror(-r));
}

static void probe_prog(struct fg_kfeat *kf, enum fg_kf i, enum bpf_prog_type t)
{
	char what[64];

	snprintf(what, sizeof(what), "program type %s", libbpf_bpf_prog_type_str(t));
	probe_answer(kf, i, libbpf_probe_bpf_prog_type(t, NULL), what);
}

static void probe_map(struct fg_kfeat *kf, enum fg_kf i, enum bpf_map_type t)
{
	char what[64];

	snprintf(what, sizeof(what), "map type %s", libbpf_bpf_map_type_str(t));
	probe_answer(kf, i, libbpf_probe_bpf_map_type(t, NULL), what);
}

static void probe_helper(struct fg_kfeat *kf, enum fg_kf i, enum bpf_prog_type t,
			 enum bpf_func_id id, const char *name)
{
	char what[96];

	snprintf(what, sizeof(what), "helper %s in %s programs", name, libbpf_bpf_prog_type_str(t));
	probe_answer(kf, i, libbpf_probe_bpf_helper(t, id, NULL), what);
}

/* mov r0, 2 (XDP_PASS); exit: loaded with the given flags. */
static void probe_xdp_frags(struct fg_kfeat *kf)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 2 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, o, .prog_flags = BPF_F_XDP_HAS_FRAGS);
	int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, NULL, "GPL", insns, 2, &o);

	if (fd >= 0) {
		close(fd);
		set(kf, FG_KF_XDP_FRAGS, true, NULL);
		return;
	}
	set(kf, FG_KF_XDP_FRAGS, false, "loading an xdp.frags program: %s", strerror(errno));
}

static void probe_mmap(struct fg_kfeat *kf)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_MMAPABLE);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, NULL, 4, 8, 1, &o);

	if (fd >= 0) {
		close(fd);
		set(kf, FG_KF_MMAP, true, NULL);
		return;
	}
	set(kf, FG_KF_MMAP, false, "creating an mmapable array: %s", strerror(errno));
}

static void probe_cgroup2(struct fg_kfeat *kf)
{
	struct statfs st;
	char line[128];
	bool known = false;
	FILE *f;

	if (!statfs("/sys/fs/cgroup", &st) && st.f_type == CGROUP2_SUPER_MAGIC) {
		set(kf, FG_KF_CGROUP2, true, NULL);
		return;
	}
	f = fopen("/proc/filesystems", "re");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "\tcgroup2\n"))
			known = true;
	if (f)
		fclose(f);
	/* not mounted at /sys/fs/cgroup (a v1 host): mountable where known */
	set(kf, FG_KF_CGROUP2, known, "the kernel has no cgroup2 file system");
}

/* A name in the kernel's BTF (vmlinux, then the module of that name). */
static bool btf_has(struct btf *vmlinux, const char *module, const char *name, __u32 kind)
{
	char path[128];
	struct btf *m;
	bool found;

	if (vmlinux && btf__find_by_name_kind(vmlinux, name, kind) >= 0)
		return true;
	if (!vmlinux || !module)
		return false;
	snprintf(path, sizeof(path), "/sys/kernel/btf/%s", module);
	if (access(path, R_OK))
		return false;
	m = btf__parse_split(path, vmlinux);
	found = m && btf__find_by_name_kind(m, name, kind) >= 0;
	btf__free(m);
	return found;
}

static void probe_btf(struct fg_kfeat *kf)
{
	struct btf *v = NULL;
	int err = 0;

	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		err = -errno;
	} else {
		v = btf__load_vmlinux_btf();
		if (!v)
			err = -errno;
	}
	if (err)
		set(kf, FG_KF_BTF, false, "/sys/kernel/btf/vmlinux: %s", strerror(-err));
	else
		set(kf, FG_KF_BTF, true, NULL);

	set(kf, FG_KF_TP_SOCK_STATE,
	    btf_has(v, NULL, "btf_trace_inet_sock_set_state", BTF_KIND_TYPEDEF),
	    v ? "no sock:inet_sock_set_state tracepoint in the kernel's BTF" : "no kernel BTF");
	set(kf, FG_KF_ITER_TCP, btf_has(v, NULL, "bpf_iter_tcp", BTF_KIND_FUNC),
	    v ? "no TCP iterator in the kernel's BTF (5.9)" : "no kernel BTF");
	set(kf, FG_KF_TCP_REQSK, btf_has(v, NULL, "bpf_sk_assign_tcp_reqsk", BTF_KIND_FUNC),
	    v ? "no kfunc bpf_sk_assign_tcp_reqsk in the kernel's BTF (6.9)" : "no kernel BTF");
	set(kf, FG_KF_CT_LOOKUP, btf_has(v, "nf_conntrack", "bpf_xdp_ct_lookup", BTF_KIND_FUNC),
	    v ? "no kfunc bpf_xdp_ct_lookup (nf_conntrack not loaded, or before 6.0)" :
		"no kernel BTF");
	btf__free(v);
}

void fg_kfeat_probe(struct fg_kfeat *kf)
{
	struct utsname u;

	memset(kf, 0, sizeof(*kf));
	if (!uname(&u))
		snprintf(kf->release, sizeof(kf->release), "%s", u.release);
	probe_prog(kf, FG_KF_XDP, BPF_PROG_TYPE_XDP);
	probe_xdp_frags(kf);
	probe_prog(kf, FG_KF_TRACING, BPF_PROG_TYPE_TRACING);
	probe_prog(kf, FG_KF_EXT, BPF_PROG_TYPE_EXT);
	probe_prog(kf, FG_KF_SOCK_OPS, BPF_PROG_TYPE_SOCK_OPS);
	probe_prog(kf, FG_KF_SCHED_CLS, BPF_PROG_TYPE_SCHED_CLS);
	probe_cgroup2(kf);
	probe_map(kf, FG_KF_RINGBUF, BPF_MAP_TYPE_RINGBUF);
	probe_mmap(kf);
	probe_map(kf, FG_KF_SK_STORAGE, BPF_MAP_TYPE_SK_STORAGE);
	probe_btf(kf);
	probe_helper(kf, FG_KF_SYNCOOKIE, BPF_PROG_TYPE_XDP, BPF_FUNC_tcp_raw_gen_syncookie_ipv4,
		     "tcp_raw_gen_syncookie_ipv4");
	probe_helper(kf, FG_KF_SKC_LOOKUP, BPF_PROG_TYPE_XDP, BPF_FUNC_skc_lookup_tcp,
		     "skc_lookup_tcp");
	probe_helper(kf, FG_KF_NETNS_COOKIE, BPF_PROG_TYPE_SOCK_OPS, BPF_FUNC_get_netns_cookie,
		     "get_netns_cookie");
}

const struct fg_kfeat *fg_kfeat_get(void)
{
	static struct fg_kfeat kf;
	static bool done;

	if (!done) {
		fg_kfeat_probe(&kf);
		done = true;
	}
	return &kf;
}

int fg_conn_way_parse(const char *s, enum fg_conn_way *out)
{
	if (!s || !*s || !strcmp(s, "auto"))
		*out = FG_CONN_WAY_NONE;
	else if (!strcmp(s, "tp_btf"))
		*out = FG_CONN_WAY_TRACING;
	else if (!strcmp(s, "sock_ops"))
		*out = FG_CONN_WAY_SOCKOPS;
	else
		return -EINVAL;
	return 0;
}

/* What each way needs, in the order a refusal is reported. The sock_ops
 * way's reconcile walk is a tc program run with BPF_PROG_TEST_RUN (socket
 * lookup by tuple, socket storage), its sweep too. */
static const enum fg_kf way_tracing[] = { FG_KF_TRACING, FG_KF_TP_SOCK_STATE, FG_KF_ITER_TCP,
					  FG_KF_SK_STORAGE };
static const enum fg_kf way_sockops[] = { FG_KF_SOCK_OPS, FG_KF_CGROUP2, FG_KF_NETNS_COOKIE,
					  FG_KF_SK_STORAGE, FG_KF_SCHED_CLS };

bool fg_kfeat_conn_way_ok(const struct fg_kfeat *kf, enum fg_conn_way w, char *why)
{
	const enum fg_kf *need = w == FG_CONN_WAY_TRACING ? way_tracing : way_sockops;
	size_t n = w == FG_CONN_WAY_TRACING ? sizeof(way_tracing) / sizeof(way_tracing[0]) :
					      sizeof(way_sockops) / sizeof(way_sockops[0]);

	if (w != FG_CONN_WAY_TRACING && w != FG_CONN_WAY_SOCKOPS) {
		if (why)
			fg_why(why, "no such way");
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		if (kf->f[need[i]].ok)
			continue;
		if (why)
			fg_why(why, "%s: %s", fg_kf_desc[need[i]], kf->f[need[i]].why);
		return false;
	}
	return true;
}

enum fg_conn_way fg_kfeat_conn_way_pick(const struct fg_kfeat *kf, enum fg_conn_way want, char *why)
{
	char wa[FG_WHY_LEN], wb[FG_WHY_LEN];

	if (want != FG_CONN_WAY_NONE) {
		if (fg_kfeat_conn_way_ok(kf, want, wa))
			return want;
		if (why)
			fg_why(why, "%s=%s, and this kernel cannot count that way: %s",
			       FG_CONN_WAY_ENV, fg_conn_way_names[want], wa);
		return FG_CONN_WAY_NONE;
	}
	if (fg_kfeat_conn_way_ok(kf, FG_CONN_WAY_TRACING, wa))
		return FG_CONN_WAY_TRACING;
	if (fg_kfeat_conn_way_ok(kf, FG_CONN_WAY_SOCKOPS, wb))
		return FG_CONN_WAY_SOCKOPS;
	if (why)
		fg_why(why,
		       "counting connections needs BPF tracing (%s) or sock_ops on cgroup v2 (%s)",
		       wa, wb);
	return FG_CONN_WAY_NONE;
}

enum fg_conn_way fg_kfeat_conn_way(const struct fg_kfeat *kf, char *why)
{
	const char *e = getenv(FG_CONN_WAY_ENV);
	enum fg_conn_way want;

	if (fg_conn_way_parse(e, &want)) {
		if (why)
			fg_why(why, "%s=%s: expected auto, tp_btf or sock_ops", FG_CONN_WAY_ENV, e);
		return FG_CONN_WAY_NONE;
	}
	return fg_kfeat_conn_way_pick(kf, want, why);
}

void fg_kfeat_summary(const struct fg_kfeat *kf, char *buf, size_t len)
{
	size_t n = 0;
	int have = 0, lack = 0;

	n += snprintf(buf, len, "kernel %s: ", kf->release);
	for (int i = 0; i < FG_KF_MAX && n < len; i++)
		if (kf->f[i].ok)
			n += snprintf(buf + n, len - n, "%s%s", have++ ? " " : "", fg_kf_names[i]);
	for (int i = 0; i < FG_KF_MAX && n < len; i++)
		if (!kf->f[i].ok)
			n += snprintf(buf + n, len - n, "%s%s", lack++ ? ", " : "; lacks ",
				      fg_kf_names[i]);
	if (!lack && n < len)
		snprintf(buf + n, len - n, "; lacks nothing floodgate uses");
}
