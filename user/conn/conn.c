// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Concurrency caps, userspace side of bpf/fgconn.bpf.c; see conn.h. */
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "conn/conn.h"
#include "conn/conn_int.h"
#include "fgconn.skel.h"
#include "lib/sysutil.h"

const char *const fg_conn_event_names[FGC_EV_MAX] = {
	[FGC_EV_OPEN] = "open",
	[FGC_EV_CLOSE] = "close",
	[FGC_EV_CONVERT] = "convert",
	[FGC_EV_SEED] = "seed",
	[FGC_EV_REKEY] = "rekey",
	[FGC_EV_FIX] = "fix",
	[FGC_EV_FIX_CONNS] = "fix_conns",
	[FGC_EV_STALE] = "stale",
	[FGC_EV_NOKEY] = "nokey",
	[FGC_EV_MAP_FULL] = "map_full",
	[FGC_EV_NO_STORAGE] = "no_storage",
	[FGC_EV_MULTI] = "multi",
	[FGC_EV_CONTENDED] = "contended",
	[FGC_EV_GONE] = "gone",
	[FGC_EV_RELEASE] = "release",
};

const char *const fg_conn_map_names[FGC_NMAPS] = {
	[FGC_M_CTL] = "fgc_ctl",     [FGC_M_CAPS] = "fgc_caps", [FGC_M_MARK] = "fgc_mark",
	[FGC_M_COUNT] = "fgc_count", [FGC_M_PEND] = "fgc_pend", [FGC_M_STATS] = "fgc_stats",
};

/* What each pinned map must look like (max_entries 0: any). */
static const struct {
	__u32 type, key_size, value_size, max_entries;
} conn_map_defs[FGC_NMAPS] = {
	[FGC_M_CTL] = { BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_conn_ctl), 1 },
	[FGC_M_CAPS] = { BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_conn_caps), 2 },
	[FGC_M_MARK] = { BPF_MAP_TYPE_SK_STORAGE, 4, sizeof(struct fg_conn_mark), 0 },
	[FGC_M_COUNT] = { BPF_MAP_TYPE_HASH, sizeof(struct fg_conn_key), sizeof(struct fg_conn_val),
			  0 },
	[FGC_M_PEND] = { BPF_MAP_TYPE_LRU_HASH, sizeof(struct fg_conn_key),
			 sizeof(struct fg_conn_val), 0 },
	[FGC_M_STATS] = { BPF_MAP_TYPE_PERCPU_ARRAY, 4, sizeof(struct fg_conn_stats), 1 },
};

static int conn_pin_path(char *buf, size_t len, const char *dir, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", dir, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The skeleton's maps, in enum fg_conn_map order. */
static void conn_maps(struct fgconn_bpf *s, struct bpf_map *m[FGC_NMAPS])
{
	m[FGC_M_CTL] = s->maps.fgc_ctl;
	m[FGC_M_CAPS] = s->maps.fgc_caps;
	m[FGC_M_MARK] = s->maps.fgc_mark;
	m[FGC_M_COUNT] = s->maps.fgc_count;
	m[FGC_M_PEND] = s->maps.fgc_pend;
	m[FGC_M_STATS] = s->maps.fgc_stats;
}

static void conn_fds_none(struct fg_conn *c)
{
	for (int i = 0; i < FGC_NMAPS; i++)
		c->fd[i] = -1;
}

static int netns_inode(__u32 *ino)
{
	struct stat st;

	if (stat("/proc/self/ns/net", &st))
		return -errno;
	*ino = (__u32)st.st_ino;
	return 0;
}

/* Before adopting dir's pins: same ABI, same namespace (its inode, and
 * its cookie, which no other namespace ever has, when both are known). */
static int conn_check_pins(const char *dir, __u32 netns, __u64 cookie, bool *present, char *why)
{
	struct fg_conn_ctl ctl;
	char p[512];
	__u32 k = 0;
	int fd, err;

	*present = false;
	err = conn_pin_path(p, sizeof(p), dir, "fgc_ctl");
	if (err)
		return err;
	fd = bpf_obj_get(p);
	if (fd < 0) {
		err = -errno;
		if (err == -ENOENT)
			return 0;
		fg_why(why, "%s: %s", p, strerror(-err));
		return err;
	}
	*present = true;
	if (bpf_map_lookup_elem(fd, &k, &ctl)) {
		err = -errno;
		fg_why(why, "%s: %s", p, strerror(-err));
	} else if (ctl.magic != FG_CONN_ABI_MAGIC || ctl.abi != FG_CONN_ABI_VERSION) {
		err = -EPROTO;
		fg_why(why,
		       "%s holds counting maps of another version (abi %u, this is %u): "
		       "remove them (floodgate detach) first",
		       dir, ctl.abi, FG_CONN_ABI_VERSION);
	} else if (ctl.netns != netns ||
		   (ctl.netns_cookie && cookie && ctl.netns_cookie != cookie)) {
		err = -EXDEV;
		fg_why(why,
		       "%s counts the sockets of network namespace %u (cookie %llu), this process "
		       "is in %u (cookie %llu)",
		       dir, ctl.netns, (unsigned long long)ctl.netns_cookie, netns,
		       (unsigned long long)cookie);
	}
	close(fd);
	return err;
}

/* A pinned hash keeps its size: adopt it, or libbpf refuses the reuse. */
static int conn_adopt_size(struct bpf_map *map, const char *path)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int fd = bpf_obj_get(path), err = 0;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		err = -errno;
	else
		err = bpf_map__set_max_entries(map, info.max_entries);
	close(fd);
	return err;
}

static int conn_set_pins(struct fg_conn *c, const char *dir)
{
	struct bpf_map *m[FGC_NMAPS];
	char p[512];
	int i, err;

	conn_maps(c->skel, m);
	for (i = 0; i < FGC_NMAPS; i++) {
		err = conn_pin_path(p, sizeof(p), dir, bpf_map__name(m[i]));
		if (!err)
			err = conn_adopt_size(m[i], p);
		if (!err)
			err = bpf_map__set_pin_path(m[i], p);
		if (err)
			return err;
	}
	return 0;
}

/* The programs of each way; the others are not loaded (a kernel that
 * refuses tracing refuses the whole object if one tracing program is in). */
static void conn_autoload(struct fgconn_bpf *s, enum fg_conn_way w, bool test_entry)
{
	bool tr = w == FG_CONN_WAY_TRACING, so = w == FG_CONN_WAY_SOCKOPS;

	bpf_program__set_autoload(s->progs.fgc_state, tr);
	bpf_program__set_autoload(s->progs.fgc_walk, tr);
	bpf_program__set_autoload(s->progs.fgc_sweep, tr);
	bpf_program__set_autoload(s->progs.fgc_sockops, so);
	bpf_program__set_autoload(s->progs.fgc_release, so);
	bpf_program__set_autoload(s->progs.fgc_swalk, so);
	bpf_program__set_autoload(s->progs.fgc_fix, so);
	bpf_program__set_autoload(s->progs.fgc_test, test_entry);
}

/* The way asked for: o->way, else the environment's, else automatic. */
static int conn_want_way(const struct fg_conn_opts *o, enum fg_conn_way *want, char *why)
{
	const char *e = getenv(FG_CONN_WAY_ENV);

	*want = o->way;
	if (*want != FG_CONN_WAY_NONE)
		return 0;
	if (fg_conn_way_parse(e, want)) {
		fg_why(why, "%s=%s: expected auto, tp_btf or sock_ops", FG_CONN_WAY_ENV, e);
		return -EINVAL;
	}
	return 0;
}

int fg_conn_open(struct fg_conn *c, const struct fg_conn_opts *o, char *why)
{
	__u32 keys = o->max_keys ? o->max_keys : FG_CONN_KEYS_DEFAULT;
	__u32 pend = o->max_pending ? o->max_pending : keys, netns = 0, k = 0;
	enum fg_conn_way want;
	bool present = false;
	__u64 cookie = 0;
	long page = sysconf(_SC_PAGESIZE);
	void *ctl;
	int err;

	memset(c, 0, sizeof(*c));
	conn_fds_none(c);
	err = netns_inode(&netns);
	if (err) {
		fg_why(why, "/proc/self/ns/net: %s", strerror(-err));
		return err;
	}
	fg_conn_netns_cookie(&cookie); /* 0 before 5.14: no sock_ops way then */
	err = conn_want_way(o, &want, why);
	if (err)
		return err;
	if (o->pin_dir) {
		err = conn_check_pins(o->pin_dir, netns, cookie, &present, why);
		if (err)
			return err;
	}
	c->ncpus = libbpf_num_possible_cpus();
	if (c->ncpus <= 0)
		return c->ncpus ? c->ncpus : -EINVAL;
	c->skel = fgconn_bpf__open();
	if (!c->skel) {
		err = -errno;
		fg_why(why, "opening the counting program: %s", strerror(-err));
		return err;
	}
	c->way = fg_kfeat_conn_way_pick(fg_kfeat_get(), want, c->way_why);
	c->test_entry = o->test_entry;
	c->progs = !o->maps_only && c->way != FG_CONN_WAY_NONE;
	/* NONE (or maps_only): the maps alone */
	conn_autoload(c->skel, c->progs ? c->way : FG_CONN_WAY_NONE, o->test_entry);
	err = bpf_map__set_max_entries(c->skel->maps.fgc_count, keys);
	if (!err)
		err = bpf_map__set_max_entries(c->skel->maps.fgc_pend, pend);
	if (!err && o->pin_dir)
		err = conn_set_pins(c, o->pin_dir);
	if (!err)
		err = fgconn_bpf__load(c->skel);
	if (err) {
		fg_why(why, "loading the counting program: %s", strerror(-err));
		goto fail;
	}
	c->adopted = present;
	{
		struct bpf_map *m[FGC_NMAPS];

		conn_maps(c->skel, m);
		for (int i = 0; i < FGC_NMAPS; i++)
			c->fd[i] = bpf_map__fd(m[i]);
	}
	ctl = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED,
		   bpf_map__fd(c->skel->maps.fgc_ctl), 0);
	if (ctl == MAP_FAILED) {
		err = -errno;
		fg_why(why, "mmap fgc_ctl: %s", strerror(-err));
		goto fail;
	}
	c->ctl = ctl;
	if (!present) {
		struct fg_conn_ctl init = {
			.magic = FG_CONN_ABI_MAGIC,
			.abi = FG_CONN_ABI_VERSION,
			.netns = netns,
			.netns_cookie = cookie,
		};

		if (bpf_map_update_elem(bpf_map__fd(c->skel->maps.fgc_ctl), &k, &init, 0)) {
			err = -errno;
			fg_why(why, "fgc_ctl: %s", strerror(-err));
			goto fail;
		}
	} else if (!c->ctl->netns_cookie) {
		__atomic_store_n(&c->ctl->netns_cookie, cookie, __ATOMIC_RELEASE);
	}
	return 0;
fail:
	fg_conn_close(c);
	return err;
}

/*
 * c's maps under a new object that loads the way's programs (progs) or
 * none: its maps reuse c's (the pinned ones keep their pin paths, so
 * fg_conn_pin knows them), then the old object goes. The XDP program and
 * c->ctl (mmapped) hold the maps, not the object. A failure changes nothing.
 */
static int conn_unpin_one(const char *dir, const char *name);

static int conn_reobject(struct fg_conn *c, bool progs, char *why)
{
	struct bpf_map *om[FGC_NMAPS], *nm[FGC_NMAPS];
	struct fgconn_bpf *s = fgconn_bpf__open();
	int i, err = 0;

	if (!s) {
		err = -errno;
		fg_why(why, "opening the counting program: %s", strerror(-err));
		return err;
	}
	conn_autoload(s, progs ? c->way : FG_CONN_WAY_NONE, c->test_entry);
	conn_maps(c->skel, om);
	conn_maps(s, nm);
	for (i = 0; i < FGC_NMAPS && !err; i++) {
		err = bpf_map__reuse_fd(nm[i], c->fd[i]);
		if (!err && bpf_map__is_pinned(om[i]))
			err = bpf_map__set_pin_path(nm[i], bpf_map__pin_path(om[i]));
	}
	if (!err)
		err = fgconn_bpf__load(s);
	if (err) {
		fg_why(why, "loading the counting program (%s way): %s",
		       fg_conn_way_names[progs ? c->way : FG_CONN_WAY_NONE], strerror(-err));
		fgconn_bpf__destroy(s);
		return err;
	}
	fgconn_bpf__destroy(c->skel);
	c->skel = s;
	for (i = 0; i < FGC_NMAPS; i++)
		c->fd[i] = bpf_map__fd(nm[i]);
	c->progs = progs;
	return 0;
}

int fg_conn_load_way(struct fg_conn *c, char *why)
{
	if (!c->skel)
		return -EINVAL;
	if (c->progs || c->way == FG_CONN_WAY_NONE)
		return 0;
	return conn_reobject(c, true, why);
}

int fg_conn_unload_way(struct fg_conn *c, const char *dir, char *why)
{
	int err = 0;

	if (!c->skel)
		return -EINVAL;
	if (dir) {
		/* the pins first: with them gone our fds are the links' last */
		err = conn_unpin_one(dir, FG_CONN_LINK_PIN);
		if (!err)
			err = conn_unpin_one(dir, FG_CONN_RLINK_PIN);
		if (err) {
			fg_why(why, "removing the counter's link pins in %s: %s", dir,
			       strerror(-err));
			return err;
		}
	}
	bpf_link__destroy(c->release);
	bpf_link__destroy(c->sweep);
	bpf_link__destroy(c->walk);
	bpf_link__destroy(c->state);
	c->release = c->sweep = c->walk = c->state = NULL;
	if (c->ctl)
		__atomic_store_n(&c->ctl->way, (__u32)FG_CONN_WAY_NONE, __ATOMIC_RELEASE);
	return c->progs ? conn_reobject(c, false, why) : 0;
}

int fg_conn_open_pins(struct fg_conn *c, const char *dir, char *why)
{
	struct fg_conn_ctl ctl;
	__u32 k = 0;
	char p[512];
	int err = 0;

	memset(c, 0, sizeof(*c));
	conn_fds_none(c);
	c->ncpus = libbpf_num_possible_cpus();
	if (c->ncpus <= 0)
		return c->ncpus ? c->ncpus : -EINVAL;
	for (int i = 0; i < FGC_NMAPS && !err; i++) {
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);

		if (i == FGC_M_MARK)
			continue; /* socket storage: nothing for a reader */
		err = conn_pin_path(p, sizeof(p), dir, fg_conn_map_names[i]);
		if (err)
			break;
		c->fd[i] = bpf_obj_get(p);
		if (c->fd[i] < 0) {
			err = -errno;
			fg_why(why, "%s: %s", p, strerror(-err));
		} else if (bpf_obj_get_info_by_fd(c->fd[i], &info, &len)) {
			err = -errno;
		} else if (info.type != conn_map_defs[i].type ||
			   info.key_size != conn_map_defs[i].key_size ||
			   info.value_size != conn_map_defs[i].value_size ||
			   (conn_map_defs[i].max_entries &&
			    info.max_entries != conn_map_defs[i].max_entries)) {
			err = -EPROTO;
			fg_why(why, "%s is not a counting map of this version", p);
		}
	}
	if (!err && bpf_map_lookup_elem(c->fd[FGC_M_CTL], &k, &ctl))
		err = -errno;
	if (!err && (ctl.magic != FG_CONN_ABI_MAGIC || ctl.abi != FG_CONN_ABI_VERSION)) {
		err = -EPROTO;
		fg_why(why, "%s holds counting maps of another version (abi %u, this is %u)", dir,
		       ctl.abi, FG_CONN_ABI_VERSION);
	}
	if (err)
		fg_conn_close(c);
	return err;
}

static int conn_attach_tracing(struct fg_conn *c)
{
	LIBBPF_OPTS(bpf_iter_attach_opts, opts);
	union bpf_iter_link_info linfo = {};
	const char *what = "tp_btf/inet_sock_set_state";
	int err = 0;

	if (!c->state) {
		c->state = bpf_program__attach(c->skel->progs.fgc_state);
		err = c->state ? 0 : -errno;
	}
	if (!err && !c->walk) {
		what = "iter/tcp";
		c->walk = bpf_program__attach_iter(c->skel->progs.fgc_walk, NULL);
		err = c->walk ? 0 : -errno;
	}
	if (!err && !c->sweep) {
		what = "iter/bpf_map_elem";
		linfo.map.map_fd = bpf_map__fd(c->skel->maps.fgc_count);
		opts.link_info = &linfo;
		opts.link_info_len = sizeof(linfo);
		c->sweep = bpf_program__attach_iter(c->skel->progs.fgc_sweep, &opts);
		err = c->sweep ? 0 : -errno;
	}
	if (err)
		fg_why(c->way_why, "attaching %s: %s", what, strerror(-err));
	return err;
}

int fg_conn_attach(struct fg_conn *c)
{
	int err;

	if (!c->skel)
		return -EINVAL;
	if (c->way == FG_CONN_WAY_NONE)
		return 0; /* nothing to attach: no capped policy is accepted */
	if (!c->progs) {
		fg_why(c->way_why, "the %s way's programs are not loaded",
		       fg_conn_way_names[c->way]);
		return -EINVAL;
	}
	if (c->way == FG_CONN_WAY_TRACING)
		err = conn_attach_tracing(c);
	else
		err = fg_conn_sock_attach(c, c->way_why);
	if (!err)
		__atomic_store_n(&c->ctl->way, (__u32)c->way, __ATOMIC_RELEASE);
	return err;
}

bool fg_conn_ready(const struct fg_conn *c)
{
	if (!c->skel || !c->state)
		return false;
	return c->way == FG_CONN_WAY_SOCKOPS || (c->walk && c->sweep);
}

static int conn_unpin_one(const char *dir, const char *name)
{
	char p[512];
	int err = conn_pin_path(p, sizeof(p), dir, name);

	if (!err && unlink(p) && errno != ENOENT)
		err = -errno;
	return err;
}

/* Pin link as dir/name, replacing what an earlier process pinned there. */
static int conn_pin_link(struct bpf_link *link, const char *dir, const char *name)
{
	char p[512];
	int err = conn_unpin_one(dir, name);

	if (!err)
		err = conn_pin_path(p, sizeof(p), dir, name);
	return err ? err : bpf_link__pin(link, p);
}

/*
 * Pin the maps (if open did not) and the tracepoint link. A link pinned by
 * an earlier process is replaced: ours is attached already, and while both
 * run each transition is applied twice, which the marks make harmless (a
 * second open uncounts and recounts, a second close finds nothing).
 */
int fg_conn_pin(struct fg_conn *c, const char *dir)
{
	struct bpf_map *m[FGC_NMAPS];
	char p[512];
	int i, err;

	if (!c->skel || (!c->state && c->progs))
		return -EINVAL;
	conn_maps(c->skel, m);
	for (i = 0; i < FGC_NMAPS; i++) {
		if (bpf_map__is_pinned(m[i]))
			continue;
		err = conn_pin_path(p, sizeof(p), dir, bpf_map__name(m[i]));
		if (!err)
			err = bpf_map__pin(m[i], p);
		if (err)
			return err;
	}
	if (!c->state)
		return 0; /* FG_CONN_WAY_NONE, or no program loaded: the maps only */
	err = conn_pin_link(c->state, dir, FG_CONN_LINK_PIN);
	if (!err)
		/* another way's daemon may have pinned one: ours, or none */
		err = c->release ? conn_pin_link(c->release, dir, FG_CONN_RLINK_PIN) :
				   conn_unpin_one(dir, FG_CONN_RLINK_PIN);
	return err;
}

int fg_conn_unpin(const char *dir)
{
	int err = 0;

	/* the links first: unpinning them stops the counting */
	for (int i = -2; i < FGC_NMAPS; i++) {
		int e = conn_unpin_one(dir, i == -2 ? FG_CONN_LINK_PIN :
					    i == -1 ? FG_CONN_RLINK_PIN :
						      fg_conn_map_names[i]);

		if (e && !err)
			err = e;
	}
	return err;
}

void fg_conn_close(struct fg_conn *c)
{
	if (!c->skel) { /* opened from pins: the fds are ours */
		for (int i = 0; i < FGC_NMAPS; i++)
			if (c->fd[i] >= 0)
				close(c->fd[i]);
	}
	if (c->ctl)
		munmap(c->ctl, sysconf(_SC_PAGESIZE));
	bpf_link__destroy(c->release);
	bpf_link__destroy(c->sweep);
	bpf_link__destroy(c->walk);
	bpf_link__destroy(c->state);
	fgconn_bpf__destroy(c->skel);
	memset(c, 0, sizeof(*c));
	conn_fds_none(c);
}

static int conn_check_cap(const struct fg_conn_cap *cap, __u32 i, char *why)
{
	if (!cap->families || (cap->families & ~(FG_CONN_F_V4 | FG_CONN_F_V6))) {
		fg_why(why, "cap %u (rule %u): families must be v4, v6 or both", i, cap->rule);
		return -EINVAL;
	}
	if (!cap->nranges || cap->nranges > FG_CONN_RANGES) {
		fg_why(why, "cap %u (rule %u): %u port ranges, expected 1..%u", i, cap->rule,
		       cap->nranges, FG_CONN_RANGES);
		return -EINVAL;
	}
	for (__u32 j = 0; j < cap->nranges; j++) {
		if (cap->dport[j].lo > cap->dport[j].hi) {
			fg_why(why, "cap %u (rule %u): port range %u-%u is empty", i, cap->rule,
			       cap->dport[j].lo, cap->dport[j].hi);
			return -EINVAL;
		}
	}
	if (!cap->cap) {
		fg_why(why, "cap %u (rule %u): a cap of 0 connections", i, cap->rule);
		return -EINVAL;
	}
	return 0;
}

int fg_conn_set_caps(struct fg_conn *c, const struct fg_conn_cap *caps, __u32 n, char *why)
{
	struct fg_conn_caps *t;
	__u32 cur, next, i;
	int fd = c->fd[FGC_M_CAPS], err = 0;

	if (!c->skel)
		return -EINVAL;
	if (n > FG_CONN_MAX_CAPS) {
		fg_why(why, "%u capped rules, at most %u", n, FG_CONN_MAX_CAPS);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		err = conn_check_cap(&caps[i], i, why);
		if (err)
			return err;
		for (__u32 j = 0; j < i; j++) {
			if (caps[j].rule == caps[i].rule) {
				fg_why(why, "rule %u has two caps", caps[i].rule);
				return -EINVAL;
			}
		}
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	cur = __atomic_load_n(&c->ctl->slot, __ATOMIC_ACQUIRE) & 1;
	next = cur ^ 1;
	if (bpf_map_lookup_elem(fd, &cur, t)) {
		err = -errno;
		goto out;
	}
	t->version++;
	t->n = n;
	memset(t->cap, 0, sizeof(t->cap));
	if (n)
		memcpy(t->cap, caps, n * sizeof(*caps));
	if (bpf_map_update_elem(fd, &next, t, 0)) {
		err = -errno;
		goto out;
	}
	__atomic_store_n(&c->ctl->slot, next, __ATOMIC_RELEASE);
	/* the programs run under rcu_read_lock; MEMBARRIER_CMD_GLOBAL waits
	 * for a grace period (synchronize_rcu) */
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0))
		err = -errno;
out:
	free(t);
	return err;
}

/* Run an iterator to its end; what it prints goes to out (may be NULL). */
static int conn_run_iter(struct bpf_link *link, void (*out)(const void *, size_t, void *),
			 void *arg)
{
	char buf[4096] __attribute__((aligned(8)));
	size_t have = 0;
	int fd, err = 0;
	ssize_t r;

	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0)
		return -errno;
	for (;;) {
		r = fg_read_retry(fd, buf + have, sizeof(buf) - have);
		if (r <= 0) {
			err = (int)r;
			break;
		}
		have += (size_t)r;
		if (out) {
			size_t whole = have - have % sizeof(struct fg_conn_key);

			out(buf, whole, arg);
			memmove(buf, buf + whole, have - whole);
			have -= whole;
		} else {
			have = 0;
		}
	}
	close(fd);
	return err;
}

struct conn_del {
	struct fg_conn *c;
	__u64 deleted;
};

/* The window between this lookup and the delete is docs/concurrency.md's
 * one race. */
void fg_conn_delete_zero_keys(struct fg_conn *c, const struct fg_conn_key *k, size_t n,
			      __u64 *deleted)
{
	int fd = c->fd[FGC_M_COUNT];
	struct fg_conn_val v;

	for (size_t i = 0; i < n; i++) {
		if (bpf_map_lookup_elem(fd, &k[i], &v))
			continue;
		if (v.est != FG_CONN_EST_ZERO || fg_conn_pending(&v, c->test_now))
			continue;
		if (!bpf_map_delete_elem(fd, &k[i]))
			(*deleted)++;
	}
}

/* Keys the sweep found at zero: delete those still at zero. */
static void conn_delete_zero(const void *buf, size_t len, void *arg)
{
	struct conn_del *d = arg;

	fg_conn_delete_zero_keys(d->c, buf, len / sizeof(struct fg_conn_key), &d->deleted);
}

/* One sweep of either way: the half not current reset, expired slots
 * cleared; del: the keys left at zero deleted. */
static int conn_sweep(struct fg_conn *c, bool del, struct conn_del *d)
{
	if (c->way == FG_CONN_WAY_SOCKOPS)
		return fg_conn_sock_sweep(c, del, &d->deleted);
	c->skel->bss->sweep_now = c->test_now;
	c->skel->bss->sweep_emit = del;
	return conn_run_iter(c->sweep, del ? conn_delete_zero : NULL, d);
}

int fg_conn_reconcile(struct fg_conn *c, struct fg_conn_rec *rec)
{
	struct fg_conn_stats before, after;
	struct conn_del d = { .c = c };
	__u32 epoch;
	int err;

	if (c->skel && (c->way == FG_CONN_WAY_NONE || !c->progs)) {
		if (rec)
			memset(rec, 0, sizeof(*rec)); /* nothing counts, nothing to reconcile */
		return 0;
	}
	if (!fg_conn_ready(c))
		return -EINVAL;
	err = fg_conn_stats_read(c, &before);
	if (err)
		return err;
	err = conn_sweep(c, false, &d); /* the half about to become current */
	if (err)
		return err;
	epoch = __atomic_load_n(&c->ctl->epoch, __ATOMIC_ACQUIRE) + 1;
	__atomic_store_n(&c->ctl->epoch, epoch, __ATOMIC_SEQ_CST);
	if (c->way == FG_CONN_WAY_SOCKOPS)
		err = fg_conn_sock_walk(c, NULL);
	else
		err = conn_run_iter(c->walk, NULL, NULL);
	if (err)
		return err;
	err = conn_sweep(c, true, &d); /* the half just left */
	if (err)
		return err;
	__atomic_fetch_add(&c->ctl->reconciles, 1, __ATOMIC_RELAXED);
	err = fg_conn_stats_read(c, &after);
	if (err)
		return err;
	if (rec) {
		rec->seeded = after.ev[FGC_EV_SEED] - before.ev[FGC_EV_SEED];
		rec->rekeyed = after.ev[FGC_EV_REKEY] - before.ev[FGC_EV_REKEY];
		rec->fixed_keys = after.ev[FGC_EV_FIX] - before.ev[FGC_EV_FIX];
		rec->fixed_conns = after.ev[FGC_EV_FIX_CONNS] - before.ev[FGC_EV_FIX_CONNS];
		rec->deleted = d.deleted;
		rec->epoch = epoch;
	}
	return 0;
}

__u32 fg_conn_pending(const struct fg_conn_val *v, __u64 now_ns)
{
	__u32 now_tu, n = 0;
	struct timespec ts;

	if (!now_ns) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now_ns = (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
	}
	now_tu = fg_conn_tu(now_ns);
	for (int i = 0; i < FG_CONN_SLOTS; i++)
		n += fg_conn_slot_live(v->slot[i], now_tu);
	return n;
}

int fg_conn_lookup(struct fg_conn *c, const struct fg_conn_key *k, __u64 now_ns, __s64 *est,
		   __u32 *pending)
{
	struct fg_conn_val v;

	if (!bpf_map_lookup_elem(c->fd[FGC_M_COUNT], k, &v)) {
		*est = fg_conn_est_total(v.est);
	} else if (errno == ENOENT && !bpf_map_lookup_elem(c->fd[FGC_M_PEND], k, &v)) {
		*est = 0;
	} else {
		return -errno;
	}
	*pending = fg_conn_pending(&v, now_ns);
	return 0;
}

int fg_conn_dump(struct fg_conn *c, __u64 now_ns, struct fg_conn_entry **out, size_t *n)
{
	int fd = c->fd[FGC_M_COUNT], err = 0;
	struct fg_conn_entry *e = NULL, *t;
	struct fg_conn_key k, next;
	struct fg_conn_val v;
	size_t cap = 0, used = 0;
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(fd, &k, &v))
			continue; /* deleted meanwhile */
		if (used == cap) {
			cap = cap ? 2 * cap : 64;
			t = realloc(e, cap * sizeof(*e));
			if (!t) {
				err = -ENOMEM;
				break;
			}
			e = t;
		}
		e[used].key = k;
		e[used].est = fg_conn_est_total(v.est);
		e[used].pending = fg_conn_pending(&v, now_ns);
		e[used].pad = 0;
		used++;
	}
	if (!err && errno != ENOENT)
		err = -errno;
	if (err) {
		free(e);
		return err;
	}
	*out = e;
	*n = used;
	return 0;
}

int fg_conn_stats_read(struct fg_conn *c, struct fg_conn_stats *out)
{
	struct fg_conn_stats *per;
	__u32 k = 0;
	int err = 0;

	per = calloc(c->ncpus, sizeof(*per));
	if (!per)
		return -ENOMEM;
	memset(out, 0, sizeof(*out));
	if (bpf_map_lookup_elem(c->fd[FGC_M_STATS], &k, per)) {
		err = -errno;
	} else {
		for (int cpu = 0; cpu < c->ncpus; cpu++)
			for (int e = 0; e < FGC_EV_MAX; e++)
				out->ev[e] += per[cpu].ev[e];
	}
	free(per);
	return err;
}

int fg_conn_misses(struct fg_conn *c, __u64 *misses)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (!c->skel || c->way == FG_CONN_WAY_NONE || !c->progs)
		return -EINVAL;
	if (bpf_obj_get_info_by_fd(bpf_program__fd(c->way == FG_CONN_WAY_TRACING ?
							   c->skel->progs.fgc_state :
							   c->skel->progs.fgc_sockops),
				   &info, &len))
		return -errno;
	*misses = info.recursion_misses;
	return 0;
}

int fg_conn_caps_read(struct fg_conn *c, struct fg_conn_caps *out)
{
	struct fg_conn_ctl ctl;
	__u32 k = 0;

	if (bpf_map_lookup_elem(c->fd[FGC_M_CTL], &k, &ctl))
		return -errno;
	k = ctl.slot & 1;
	if (bpf_map_lookup_elem(c->fd[FGC_M_CAPS], &k, out))
		return -errno;
	return 0;
}

void fg_conn_key_of(struct fg_conn_key *k, int family, const __be32 saddr[4],
		    const struct fg_conn_cap *cap)
{
	memset(k, 0, sizeof(*k));
	if (family == 4) {
		k->addr[0] = saddr[0] & cap->mask4;
	} else {
		for (int i = 0; i < 4; i++)
			k->addr[i] = saddr[i] & cap->mask6[i];
	}
	k->rule = cap->rule;
	k->gen = cap->gen;
	k->family = (__u8)family;
}

int fg_conn_cap_of_rule(const struct fg_policy *pol, __u32 idx, struct fg_conn_cap *out, char *why)
{
	const struct fg_rule *r;
	__u32 n = 0;

	if (idx >= FG_MAX_RULES || !pol->rules[idx].conn_cap) {
		fg_why(why, "rule %u has no concurrency cap", idx);
		return -EINVAL;
	}
	r = &pol->rules[idx];
	memset(out, 0, sizeof(*out));
	out->mask4 = r->mask4;
	memcpy(out->mask6, r->mask6, sizeof(out->mask6));
	out->rule = r->id;
	out->gen = r->gen;
	out->cap = r->conn_cap;
	for (__u32 k = 0; k < pol->nmatch[FG_CLASS_TCP] && k < FG_MAX_MATCH; k++) {
		const struct fg_match *e = &pol->match[FG_CLASS_TCP][k];
		__u32 j;

		if (e->rule != idx)
			continue;
		out->families |= e->flags & FG_M_V4 ? FG_CONN_F_V4 :
				 e->flags & FG_M_V6 ? FG_CONN_F_V6 :
						      FG_CONN_F_V4 | FG_CONN_F_V6;
		for (j = 0; j < n; j++)
			if (out->dport[j].lo == e->dport_lo && out->dport[j].hi == e->dport_hi)
				break;
		if (j < n)
			continue;
		if (n == FG_CONN_RANGES) {
			fg_why(why, "a capped rule matches at most %u destination-port ranges",
			       FG_CONN_RANGES);
			return -E2BIG;
		}
		out->dport[n].lo = e->dport_lo;
		out->dport[n].hi = e->dport_hi;
		n++;
	}
	if (!n) {
		fg_why(why, "rule %u matches no TCP packet", idx);
		return -EINVAL;
	}
	out->nranges = (__u8)n;
	return 0;
}

int fg_conn_caps_of_policy(const struct fg_policy *pol, struct fg_conn_cap *caps, __u32 *n,
			   char *why)
{
	int err;

	*n = 0;
	for (__u32 i = 0; i < pol->nrules && i < FG_MAX_RULES; i++) {
		if (!pol->rules[i].conn_cap)
			continue;
		if (*n == FG_CONN_MAX_CAPS) {
			fg_why(why, "more than %u capped rules", FG_CONN_MAX_CAPS);
			return -E2BIG;
		}
		err = fg_conn_cap_of_rule(pol, i, &caps[*n], why);
		if (err)
			return err;
		(*n)++;
	}
	return 0;
}

__u32 fg_conn_cap_of_key(const struct fg_conn_caps *caps, const struct fg_conn_key *k)
{
	for (__u32 i = 0; i < caps->n && i < FG_CONN_MAX_CAPS; i++)
		if (caps->cap[i].rule == k->rule && caps->cap[i].gen == k->gen)
			return caps->cap[i].cap;
	return 0;
}

bool fg_conn_entry_at_cap(const struct fg_conn_caps *caps, const struct fg_conn_entry *e)
{
	__u32 cap = fg_conn_cap_of_key(caps, &e->key);

	return cap && e->est + e->pending >= (__s64)cap;
}

void fg_conn_summarise(const struct fg_conn_caps *caps, const struct fg_conn_entry *e, size_t n,
		       struct fg_conn_rule_sum sum[FG_CONN_MAX_CAPS])
{
	memset(sum, 0, FG_CONN_MAX_CAPS * sizeof(*sum));
	for (__u32 i = 0; i < caps->n && i < FG_CONN_MAX_CAPS; i++) {
		sum[i].rule = caps->cap[i].rule;
		sum[i].gen = caps->cap[i].gen;
		sum[i].cap = caps->cap[i].cap;
	}
	for (size_t j = 0; j < n; j++) {
		for (__u32 i = 0; i < caps->n && i < FG_CONN_MAX_CAPS; i++) {
			if (sum[i].rule != e[j].key.rule || sum[i].gen != e[j].key.gen)
				continue;
			if (e[j].est <= 0 && !e[j].pending)
				break; /* at zero, left for the reconcile to delete */
			sum[i].sources++;
			sum[i].at_cap += e[j].est + e[j].pending >= (__s64)sum[i].cap;
			sum[i].conns += e[j].est > 0 ? (__u64)e[j].est : 0;
			sum[i].pending += e[j].pending;
			break;
		}
	}
}
