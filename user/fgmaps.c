// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Pin dir access shared by floodgated and the floodgate CLI; see fgmaps.h. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/membarrier.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "fgmaps.h"
#include "floodgate.skel.h"

/* The reason for an operator; truncation is fine, so no snprintf warnings. */
static void __attribute__((format(printf, 2, 3))) WHY(char *why, const char *fmt, ...)
{
	va_list ap;

	if (!why)
		return;
	va_start(ap, fmt);
	vsnprintf(why, FG_WHY_LEN, fmt, ap);
	va_end(ap);
}

/* What each pinned map must look like: one place, checked on every open. */
static const struct {
	const char *name;
	__u32 type, key_size, value_size, max_entries;	/* max_entries 0: any */
} map_defs[FGM_NMAPS] = {
	[FGM_CTL]	= { "fg_ctl", BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_ctl), 1 },
	[FGM_POLICY]	= { "fg_policy", BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_policy), 2 },
	[FGM_PFX4]	= { "fg_pfx4", BPF_MAP_TYPE_LPM_TRIE, sizeof(struct fg_lpm4), sizeof(struct fg_pfx), 0 },
	[FGM_PFX6]	= { "fg_pfx6", BPF_MAP_TYPE_LPM_TRIE, sizeof(struct fg_lpm6), sizeof(struct fg_pfx), 0 },
	[FGM_DIR4]	= { "fg_dir4", BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_dir4), 2 },
	[FGM_PIDX]	= { "fg_pidx", BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_pidx), 2 },
	[FGM_SRC4]	= { "fg_src4", BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_set4), 0 },
	[FGM_SRC6]	= { "fg_src6", BPF_MAP_TYPE_LRU_HASH, sizeof(struct fg_key6), sizeof(struct fg_bucket), 0 },
	[FGM_AGG]	= { "fg_agg", BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_agg), FG_NAGG },
	[FGM_STATS]	= { "fg_stats", BPF_MAP_TYPE_PERCPU_ARRAY, 4, sizeof(struct fg_stats), FG_NROWS },
	[FGM_NAMES]	= { "fg_names", BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_name), FG_MAX_IDS },
	[FGM_META]	= { "fg_meta", BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_meta), 1 },
};

const char *const fg_outcome_names[FG_OUT_MAX] = {
	[FG_OUT_PASS] = "pass", [FG_OUT_DROP] = "drop", [FG_OUT_SHADOW] = "shadow",
	[FG_OUT_ALLOW] = "allow", [FG_OUT_DENY] = "deny", [FG_OUT_BYPASS] = "bypass",
	[FG_OUT_MALFORMED] = "malformed", [FG_OUT_NONIP] = "nonip",
};

const char *const fg_event_names[FG_EV_MAX] = {
	[FG_EV_INSERT] = "insert", [FG_EV_OVERFLOW] = "overflow",
	[FG_EV_INSERT_LIMITED] = "insert_limited", [FG_EV_INSERT_FAIL] = "insert_fail",
	[FG_EV_FULL_OPEN] = "full_open", [FG_EV_FULL_CLOSED] = "full_closed",
	[FG_EV_CONTENDED] = "contended", [FG_EV_AGG_DROP] = "agg_drop",
	[FG_EV_FRAG] = "frag", [FG_EV_BYPASS_EXPIRED] = "bypass_expired",
};

const char *fg_map_name(enum fg_map_id id)
{
	return id < FGM_NMAPS ? map_defs[id].name : "?";
}

const char *fg_pin_dir_choose(const char *arg)
{
	const char *env = getenv(FG_PIN_DIR_ENV);

	if (arg && *arg)
		return arg;
	if (env && *env)
		return env;
	return FG_PIN_DIR_DEFAULT;
}

/* The clock the XDP program reads (bpf_ktime_get_coarse_ns is
 * CLOCK_MONOTONIC_COARSE): bucket times and bypass expiry compare with it
 * exactly. CLOCK_MONOTONIC would run up to a tick (4 ms) ahead, and a
 * bucket at 1000/s would look as if it had a token to spare. */
__u64 fg_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

void fg_addr_str(int family, const __u8 *addr, char *buf, size_t len)
{
	if (!inet_ntop(family == 6 ? AF_INET6 : AF_INET, addr, buf, len))
		snprintf(buf, len, "?");
}

bool fg_daemon_alive(__u32 pid)
{
	char path[64], comm[32] = "";
	FILE *f;

	if (!pid || (kill((pid_t)pid, 0) && errno == ESRCH))
		return false;
	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = 0;
	fclose(f);
	/* a recycled pid of another program is not our daemon */
	if (strncmp(comm, "floodgated", 10))
		return false;
	/* nor is a zombie (killed, not yet reaped) */
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	f = fopen(path, "re");
	if (f) {
		char st[256] = "", *rp;

		if (!fgets(st, sizeof(st), f))
			st[0] = 0;
		fclose(f);
		rp = strrchr(st, ')');
		if (rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'))
			return false;
	}
	return true;
}

static int pin_path(char *buf, size_t len, const char *dir, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", dir, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int fg_pin_dir_prepare(const char *dir, char *why)
{
	char tmp[256], *p;
	struct statfs sfs;

	if (statfs("/sys/fs/bpf", &sfs) || sfs.f_type != BPF_FS_MAGIC) {
		if (mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700")) {
			int err = -errno;

			WHY(why, "bpffs is not mounted on /sys/fs/bpf and mounting it failed: %s",
			    strerror(errno));
			return err;
		}
	}
	if (snprintf(tmp, sizeof(tmp), "%s", dir) >= (int)sizeof(tmp)) {
		WHY(why, "pin dir path too long");
		return -ENAMETOOLONG;
	}
	for (p = tmp + 1; ; p++) {
		char c = *p;

		if (c != '/' && c != 0)
			continue;
		*p = 0;
		if (mkdir(tmp, 0700) && errno != EEXIST) {
			int err = -errno;

			WHY(why, "mkdir %s: %s", tmp, strerror(errno));
			return err;
		}
		if (!c)
			break;
		*p = c;
	}
	if (statfs(dir, &sfs) || sfs.f_type != BPF_FS_MAGIC) {
		WHY(why, "%s is not on a bpf filesystem", dir);
		return -EINVAL;
	}
	return 0;
}

bool fg_pin_dir_populated(const char *dir)
{
	char p[512];

	return !pin_path(p, sizeof(p), dir, "fg_ctl") && access(p, F_OK) == 0;
}

static int array_lookup(int fd, __u32 idx, void *val)
{
	return bpf_map_lookup_elem(fd, &idx, val) ? -errno : 0;
}

static int array_update(int fd, __u32 idx, const void *val)
{
	return bpf_map_update_elem(fd, &idx, val, BPF_ANY) ? -errno : 0;
}

static int check_stamp(const struct fg_ctl *ctl, const struct fg_meta *meta,
		       const char *dir, char *why)
{
	/* magic 0: created but never initialised (a crash between load and
	 * the first apply); anything else must be exactly ours */
	if (ctl->magic == 0 && ctl->abi == 0)
		return 0;
	if (ctl->magic != FG_ABI_MAGIC || (meta && meta->magic && meta->magic != FG_ABI_MAGIC)) {
		WHY(why, "%s does not hold floodgate maps (magic %#x); refusing to touch it",
		    dir, ctl->magic);
		return -EPROTO;
	}
	if (ctl->abi != FG_ABI_VERSION || (meta && meta->abi && meta->abi != FG_ABI_VERSION)) {
		WHY(why, "%s was created by floodgate ABI version %u, this is version %u; "
		    "run the matching 'floodgate detach' (or remove the pin dir) first",
		    dir, ctl->abi, FG_ABI_VERSION);
		return -EPROTO;
	}
	return 0;
}

static int check_map(int fd, enum fg_map_id id, const char *dir, char *why)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (info.type != map_defs[id].type || info.key_size != map_defs[id].key_size ||
	    info.value_size != map_defs[id].value_size ||
	    (map_defs[id].max_entries && info.max_entries != map_defs[id].max_entries)) {
		WHY(why, "%s/%s has an incompatible layout (type %u key %u value %u entries %u); "
		    "it was pinned by another floodgate version", dir, map_defs[id].name,
		    info.type, info.key_size, info.value_size, info.max_entries);
		return -EPROTO;
	}
	return 0;
}

static void maps_init(struct fg_maps *m)
{
	memset(m, 0, sizeof(*m));
	m->dirfd = -1;
	for (int i = 0; i < FGM_NMAPS; i++)
		m->fd[i] = -1;
	m->ncpus = libbpf_num_possible_cpus();
}

static int open_dirfd(struct fg_maps *m, const char *dir)
{
	snprintf(m->dir, sizeof(m->dir), "%s", dir);
	m->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return m->dirfd < 0 ? -errno : 0;
}

int fg_pin_dir_check(const char *dir, __u64 max_sources, char *why)
{
	struct fg_maps m;
	struct fg_ctl ctl;
	struct fg_meta meta;
	int err;

	maps_init(&m);
	if (!fg_pin_dir_populated(dir))
		return 0;
	err = fg_maps_open(&m, dir, why);
	if (err)
		goto out;
	if ((err = fg_ctl_read(&m, &ctl)) || (err = fg_meta_read(&m, &meta)))
		goto out;
	err = check_stamp(&ctl, &meta, dir, why);
	if (err)
		goto out;
	if (meta.max_sources && meta.max_sources != max_sources) {
		WHY(why, "%s was created with max_sources %llu, the policy asks for %llu; "
		    "map sizes are fixed while pinned: detach first to change it",
		    dir, (unsigned long long)meta.max_sources, (unsigned long long)max_sources);
		err = -EPROTO;
	}
out:
	fg_maps_close(&m);
	return err;
}

int fg_maps_open(struct fg_maps *m, const char *dir, char *why)
{
	struct fg_ctl ctl;
	struct fg_meta meta;
	char p[512];
	int err;

	maps_init(m);
	err = open_dirfd(m, dir);
	if (err) {
		WHY(why, "%s: %s (is floodgated running? see --pin-dir)", dir, strerror(-err));
		return err;
	}
	for (int i = 0; i < FGM_NMAPS; i++) {
		err = pin_path(p, sizeof(p), dir, map_defs[i].name);
		if (err)
			goto fail;
		m->fd[i] = bpf_obj_get(p);
		if (m->fd[i] < 0) {
			err = -errno;
			WHY(why, "%s: %s (not a floodgate pin dir, or partly removed)", p,
			    strerror(errno));
			goto fail;
		}
		err = check_map(m->fd[i], i, dir, why);
		if (err)
			goto fail;
	}
	if ((err = fg_ctl_read(m, &ctl)) || (err = fg_meta_read(m, &meta)))
		goto fail;
	err = check_stamp(&ctl, &meta, dir, why);
	if (err)
		goto fail;
	return 0;
fail:
	fg_maps_close(m);
	return err;
}

void fg_skel_maps(struct floodgate_bpf *skel, struct bpf_map *maps[FGM_NMAPS])
{
	maps[FGM_CTL] = skel->maps.fg_ctl;
	maps[FGM_POLICY] = skel->maps.fg_policy;
	maps[FGM_PFX4] = skel->maps.fg_pfx4;
	maps[FGM_PFX6] = skel->maps.fg_pfx6;
	maps[FGM_DIR4] = skel->maps.fg_dir4;
	maps[FGM_PIDX] = skel->maps.fg_pidx;
	maps[FGM_SRC4] = skel->maps.fg_src4;
	maps[FGM_SRC6] = skel->maps.fg_src6;
	maps[FGM_AGG] = skel->maps.fg_agg;
	maps[FGM_STATS] = skel->maps.fg_stats;
	maps[FGM_NAMES] = skel->maps.fg_names;
	maps[FGM_META] = skel->maps.fg_meta;
}

int fg_maps_from_skel(struct fg_maps *m, struct floodgate_bpf *skel, const char *dir)
{
	struct bpf_map *maps[FGM_NMAPS];
	int err;

	fg_skel_maps(skel, maps);

	maps_init(m);
	err = open_dirfd(m, dir);
	if (err)
		return err;
	for (int i = 0; i < FGM_NMAPS; i++) {
		m->fd[i] = fcntl(bpf_map__fd(maps[i]), F_DUPFD_CLOEXEC, 3);
		if (m->fd[i] < 0) {
			err = -errno;
			fg_maps_close(m);
			return err;
		}
	}
	return 0;
}

void fg_maps_close(struct fg_maps *m)
{
	fg_maps_unlock(m);
	for (int i = 0; i < FGM_NMAPS; i++) {
		if (m->fd[i] >= 0)
			close(m->fd[i]);
		m->fd[i] = -1;
	}
	if (m->dirfd >= 0)
		close(m->dirfd);
	m->dirfd = -1;
}

int fg_maps_lock(struct fg_maps *m, int timeout_ms)
{
	for (int waited = 0; ; waited += 10) {
		if (!flock(m->dirfd, LOCK_EX | LOCK_NB)) {
			m->locked = true;
			return 0;
		}
		if (errno != EWOULDBLOCK)
			return -errno;
		if (waited >= timeout_ms)
			return -EWOULDBLOCK;
		usleep(10000);
	}
}

void fg_maps_unlock(struct fg_maps *m)
{
	if (m->locked && m->dirfd >= 0)
		flock(m->dirfd, LOCK_UN);
	m->locked = false;
}

int fg_ctl_read(struct fg_maps *m, struct fg_ctl *ctl)
{
	return array_lookup(m->fd[FGM_CTL], 0, ctl);
}

int fg_ctl_write(struct fg_maps *m, const struct fg_ctl *ctl)
{
	return array_update(m->fd[FGM_CTL], 0, ctl);
}

int fg_meta_read(struct fg_maps *m, struct fg_meta *meta)
{
	return array_lookup(m->fd[FGM_META], 0, meta);
}

int fg_meta_write(struct fg_maps *m, const struct fg_meta *meta)
{
	return array_update(m->fd[FGM_META], 0, meta);
}

int fg_names_read(struct fg_maps *m, struct fg_name names[FG_MAX_IDS])
{
	int err;

	for (__u32 i = 0; i < FG_MAX_IDS; i++) {
		err = array_lookup(m->fd[FGM_NAMES], i, &names[i]);
		if (err)
			return err;
		names[i].name[FG_NAME_LEN - 1] = 0;
	}
	return 0;
}

int fg_policy_read_active(struct fg_maps *m, struct fg_policy *pol)
{
	struct fg_ctl ctl;
	int err;

	err = fg_ctl_read(m, &ctl);
	if (err)
		return err;
	return array_lookup(m->fd[FGM_POLICY], ctl.slot & 1, pol);
}

int fg_stats_read(struct fg_maps *m, struct fg_stats rows[FG_NROWS])
{
	struct fg_stats *pc;
	int err = 0;

	if (m->ncpus <= 0)
		return m->ncpus ? m->ncpus : -EINVAL;
	pc = calloc(m->ncpus, sizeof(*pc));
	if (!pc)
		return -ENOMEM;
	memset(rows, 0, sizeof(*rows) * FG_NROWS);
	for (__u32 r = 0; r < FG_NROWS && !err; r++) {
		err = array_lookup(m->fd[FGM_STATS], r, pc);
		for (int c = 0; c < m->ncpus && !err; c++) {
			for (int o = 0; o < FG_OUT_MAX; o++) {
				rows[r].pkts[o] += pc[c].pkts[o];
				rows[r].bytes[o] += pc[c].bytes[o];
			}
			for (int e = 0; e < FG_EV_MAX; e++)
				rows[r].ev[e] += pc[c].ev[e];
		}
	}
	free(pc);
	return err;
}

__u32 fg_src4_sets(__u64 max_sources)
{
	__u32 bits = FG_SRC4_MIN_BITS;

	while (bits < FG_SRC4_MAX_BITS && ((__u64)FG_WAYS4 << bits) < max_sources)
		bits++;
	return 1u << bits;
}

int fg_ctl_init(struct fg_maps *m, __u32 mode)
{
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info), bits = 0;
	struct fg_ctl ctl;
	int err = fg_ctl_read(m, &ctl);

	if (err)
		return err;
	if (ctl.magic == FG_ABI_MAGIC)
		return 0;	/* adopted: keep slot, mode, bypass, the table's seed */
	if (bpf_obj_get_info_by_fd(m->fd[FGM_SRC4], &info, &ilen))
		return -errno;
	while (bits < 31 && (1u << bits) < info.max_entries)
		bits++;
	if ((1u << bits) != info.max_entries || bits < FG_SRC4_MIN_BITS || bits > FG_SRC4_MAX_BITS)
		return -EINVAL;	/* fg_src4 must have 2^7..2^24 sets */
	memset(&ctl, 0, sizeof(ctl));
	ctl.magic = FG_ABI_MAGIC;
	ctl.abi = FG_ABI_VERSION;
	ctl.mode = mode;
	ctl.src4_bits = bits;
	/* a random seed: a spoofer cannot aim sources at one set */
	if (getrandom(&ctl.seed4, sizeof(ctl.seed4), 0) != sizeof(ctl.seed4))
		return -errno;
	return fg_ctl_write(m, &ctl);
}

/* --- LPM entries of one slot ------------------------------------------------ */

/* Keys of fg_pfx4 (fam 4) or fg_pfx6 whose slot field is `slot` (or all
 * keys if slot is -1); *keys is malloc'd, key_size bytes each. */
static int lpm_keys(int fd, int fam, int slot, void **keys, size_t *n, size_t *total)
{
	size_t ksz = fam == 4 ? sizeof(struct fg_lpm4) : sizeof(struct fg_lpm6);
	union { struct fg_lpm4 k4; struct fg_lpm6 k6; } cur, next;
	size_t cap = 0, cnt = 0, all = 0;
	char *arr = NULL;
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		__u32 s = fam == 4 ? next.k4.slot : next.k6.slot;

		all++;
		if (slot < 0 || s == (__u32)slot) {
			if (cnt == cap) {
				char *na = realloc(arr, (cap = cap ? cap * 2 : 256) * ksz);

				if (!na) {
					free(arr);
					return -ENOMEM;
				}
				arr = na;
			}
			memcpy(arr + cnt * ksz, &next, ksz);
			cnt++;
		}
		memcpy(&cur, &next, ksz);
		prev = &cur;
	}
	if (errno != ENOENT) {
		int err = -errno;

		free(arr);
		return err;
	}
	*keys = arr;
	*n = cnt;
	if (total)
		*total = all;
	return 0;
}

static int lpm_clear_slot(struct fg_maps *m, int fam, __u32 slot)
{
	int fd = m->fd[fam == 4 ? FGM_PFX4 : FGM_PFX6];
	size_t ksz = fam == 4 ? sizeof(struct fg_lpm4) : sizeof(struct fg_lpm6);
	void *keys = NULL;
	size_t n = 0;
	int err;

	err = lpm_keys(fd, fam, slot, &keys, &n, NULL);
	for (size_t i = 0; !err && i < n; i++)
		if (bpf_map_delete_elem(fd, (char *)keys + i * ksz) && errno != ENOENT)
			err = -errno;
	free(keys);
	return err;
}

/* Copy slot `from`'s entries to slot `to` (rule mode change). */
static int lpm_copy_slot(struct fg_maps *m, int fam, __u32 from, __u32 to)
{
	int fd = m->fd[fam == 4 ? FGM_PFX4 : FGM_PFX6];
	size_t ksz = fam == 4 ? sizeof(struct fg_lpm4) : sizeof(struct fg_lpm6);
	void *keys = NULL;
	size_t n = 0;
	int err;

	err = lpm_keys(fd, fam, from, &keys, &n, NULL);
	for (size_t i = 0; !err && i < n; i++) {
		union { struct fg_lpm4 k4; struct fg_lpm6 k6; } k;
		struct fg_pfx v;

		memcpy(&k, (char *)keys + i * ksz, ksz);
		if (bpf_map_lookup_elem(fd, &k, &v)) {
			if (errno == ENOENT)
				continue;
			err = -errno;
			break;
		}
		if (fam == 4)
			k.k4.slot = to;
		else
			k.k6.slot = to;
		if (bpf_map_update_elem(fd, &k, &v, BPF_ANY))
			err = -errno;
	}
	free(keys);
	return err;
}

static int map_max_entries(int fd, __u32 *max)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	*max = info.max_entries;
	return 0;
}

/* The rule scan's start index for a policy, into slot `slot`. */
static int pidx_write(struct fg_maps *m, const struct fg_policy *pol, __u32 slot)
{
	struct fg_pidx *x = malloc(sizeof(*x));
	int err;

	if (!x)
		return -ENOMEM;
	fg_pidx_build(pol, x);
	err = array_update(m->fd[FGM_PIDX], slot, x);
	free(x);
	return err;
}

static int dir4_copy_slot(struct fg_maps *m, __u32 from, __u32 to)
{
	struct fg_dir4 *dir = malloc(sizeof(*dir));
	int err;

	if (!dir)
		return -ENOMEM;
	err = array_lookup(m->fd[FGM_DIR4], from, dir);
	if (!err)
		err = array_update(m->fd[FGM_DIR4], to, dir);
	free(dir);
	return err;
}

/* Flip fg_ctl.slot to `slot` and wait until no packet uses the old one. */
static int flip_slot(struct fg_maps *m, __u32 slot)
{
	struct fg_ctl ctl;
	int err;

	err = fg_ctl_read(m, &ctl);
	if (err)
		return err;
	if (ctl.magic != FG_ABI_MAGIC) {
		ctl.magic = FG_ABI_MAGIC;
		ctl.abi = FG_ABI_VERSION;
	}
	ctl.slot = slot;
	err = fg_ctl_write(m, &ctl);
	if (err)
		return err;
	/*
	 * MEMBARRIER_CMD_GLOBAL calls synchronize_rcu() (kernel/sched/membarrier.c)
	 * and XDP programs run in an RCU read-side section, so when it returns
	 * every packet that could have read the old slot number is done. It is
	 * refused with nohz_full CPUs: then fall back to a generous sleep.
	 */
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0))
		usleep(200000);
	return 0;
}

static int zero_rule_state(struct fg_maps *m, __u32 id)
{
	struct fg_stats *zero = calloc(m->ncpus > 0 ? m->ncpus : 1, sizeof(*zero));
	struct fg_agg agg = {};
	int err;

	if (!zero)
		return -ENOMEM;
	err = array_update(m->fd[FGM_STATS], id, zero);
	free(zero);
	if (!err)
		err = array_update(m->fd[FGM_AGG], FG_AGG_IDX(id), &agg);
	if (!err)
		err = array_update(m->fd[FGM_AGG], FG_OVF_IDX(id), &agg);
	return err;
}

int fg_policy_apply(struct fg_maps *m, struct fg_config *cfg, char *why)
{
	struct fg_name names[FG_MAX_IDS], newnames[FG_MAX_IDS];
	bool claimed[FG_MAX_IDS] = {}, fresh[FG_MAX_IDS] = {};
	struct fg_policy *pol, active;
	size_t n4 = 0, n6 = 0, act4 = 0, act6 = 0, tot;
	__u32 max4 = 0, max6 = 0, slot, inactive;
	struct fg_ctl ctl;
	struct fg_meta meta;
	void *keys;
	int err;

	if (!m->locked)
		return -ENOLCK;
	if (!cfg)
		return -EINVAL;
	pol = &cfg->pol;
	if (pol->nrules > FG_MAX_RULES) {
		WHY(why, "policy has %u rules, at most %d", pol->nrules, FG_MAX_RULES);
		return -E2BIG;
	}

	/* 1. everything that can fail for a reason, before any write */
	if ((err = fg_ctl_read(m, &ctl)) || (err = fg_meta_read(m, &meta)) ||
	    (err = fg_names_read(m, names))) {
		WHY(why, "reading the pin dir: %s", strerror(-err));
		return err;
	}
	if (meta.max_sources && meta.max_sources != cfg->max_sources) {
		WHY(why, "max_sources changed from %llu to %llu: map sizes are fixed while "
		    "pinned; restart with 'floodgate detach' first (this drops all buckets)",
		    (unsigned long long)meta.max_sources, (unsigned long long)cfg->max_sources);
		return -EINVAL;
	}
	slot = ctl.slot & 1;
	inactive = slot ^ 1;
	err = array_lookup(m->fd[FGM_POLICY], slot, &active);
	if (err)
		return err;
	for (size_t i = 0; i < cfg->n_pfx; i++)
		cfg->pfx[i].family == 6 ? n6++ : n4++;
	if ((err = map_max_entries(m->fd[FGM_PFX4], &max4)) ||
	    (err = map_max_entries(m->fd[FGM_PFX6], &max6)))
		return err;
	keys = NULL;
	err = lpm_keys(m->fd[FGM_PFX4], 4, slot, &keys, &act4, &tot);
	free(keys);
	keys = NULL;
	if (!err)
		err = lpm_keys(m->fd[FGM_PFX6], 6, slot, &keys, &act6, &tot);
	free(keys);
	if (err)
		return err;
	if (act4 + n4 > max4 || act6 + n6 > max6) {
		WHY(why, "policy has %zu IPv4 / %zu IPv6 prefixes; with the active policy's "
		    "%zu / %zu they do not fit in fg_pfx4/fg_pfx6 (%u / %u entries, both slots); "
		    "restart floodgated (detach) to size the tries for it",
		    n4, n6, act4, act6, max4, max6);
		return -ENOSPC;
	}

	/* rule ids by name: survivors keep id and gen (buckets, counters) */
	memcpy(newnames, names, sizeof(names));
	for (__u32 i = 0; i < pol->nrules; i++) {
		const char *name = cfg->rules[i].name;
		int id = -1;

		for (int j = 0; j < FG_MAX_IDS; j++)
			if (names[j].in_use && !strncmp(names[j].name, name, FG_NAME_LEN)) {
				id = j;
				break;
			}
		if (id >= 0 && claimed[id]) {
			WHY(why, "rule name \"%s\" is used twice", name);
			return -EINVAL;
		}
		if (id < 0) {
			/* a new name: an id free now (not one the old policy still
			 * uses until the flip) */
			for (int j = 0; j < FG_MAX_IDS && id < 0; j++)
				if (!names[j].in_use && !claimed[j])
					id = j;
			if (id < 0) {
				WHY(why, "no free rule id for \"%s\": ids of removed rules are freed "
				    "only after the switch; apply the removal first, then the additions",
				    name);
				return -ENOSPC;
			}
			fresh[id] = true;
			memset(&newnames[id], 0, sizeof(newnames[id]));
			snprintf(newnames[id].name, FG_NAME_LEN, "%s", name);
			newnames[id].gen = (__u16)(names[id].gen + 1);
			if (!newnames[id].gen)
				newnames[id].gen = 1;
			newnames[id].in_use = 1;
		}
		claimed[id] = true;
		pol->rules[i].id = id;
		pol->rules[i].gen = newnames[id].gen;
	}

	/* 2. the inactive slot: nothing reads it (previous apply waited) */
	for (int id = 0; id < FG_MAX_IDS; id++) {
		if (!fresh[id])
			continue;
		err = zero_rule_state(m, id);
		if (!err)
			err = array_update(m->fd[FGM_NAMES], id, &newnames[id]);
		if (err) {
			WHY(why, "initialising rule id %d: %s", id, strerror(-err));
			goto rollback;
		}
	}
	if ((err = lpm_clear_slot(m, 4, inactive)) || (err = lpm_clear_slot(m, 6, inactive))) {
		WHY(why, "clearing the inactive slot's prefixes: %s", strerror(-err));
		goto rollback;
	}
	pol->lists = 0;
	for (size_t i = 0; i < cfg->n_pfx; i++) {
		const struct fg_pfx_entry *e = &cfg->pfx[i];
		struct fg_pfx v = { .list = e->list, .sets = e->sets };

		if (e->list)
			pol->lists |= e->family == 6 ? 2 : 1;
		if (e->family == 6) {
			struct fg_lpm6 k = { .prefixlen = 32 + e->plen, .slot = inactive };

			memcpy(k.addr, e->addr, 16);
			err = bpf_map_update_elem(m->fd[FGM_PFX6], &k, &v, BPF_ANY) ? -errno : 0;
		} else {
			struct fg_lpm4 k = { .prefixlen = 32 + e->plen, .slot = inactive };

			memcpy(&k.addr, e->addr, 4);
			err = bpf_map_update_elem(m->fd[FGM_PFX4], &k, &v, BPF_ANY) ? -errno : 0;
		}
		if (err) {
			WHY(why, "writing prefix %zu: %s", i, strerror(-err));
			goto rollback;
		}
	}
	{
		struct fg_dir4 *dir = malloc(sizeof(*dir));

		if (!dir) {
			err = -ENOMEM;
			WHY(why, "building the IPv4 directory: %s", strerror(-err));
			goto rollback;
		}
		fg_dir4_build(cfg->pfx, cfg->n_pfx, dir);
		err = array_update(m->fd[FGM_DIR4], inactive, dir);
		free(dir);
		if (err) {
			WHY(why, "writing the IPv4 directory: %s", strerror(-err));
			goto rollback;
		}
	}
	/* sets need the trie too: mark the family if any entry exists */
	if (n4)
		pol->lists |= 1;
	if (n6)
		pol->lists |= 2;
	fg_policy_set_admission(cfg, m->ncpus);
	pol->version = active.version + 1;
	err = pidx_write(m, pol, inactive);
	if (err) {
		WHY(why, "writing the rule index: %s", strerror(-err));
		goto rollback;
	}
	err = array_update(m->fd[FGM_POLICY], inactive, pol);
	if (err) {
		WHY(why, "writing the policy: %s", strerror(-err));
		goto rollback;
	}

	/* 3. switch, wait out the old slot's readers, then free removed ids */
	err = flip_slot(m, inactive);
	if (err) {
		WHY(why, "switching slots: %s", strerror(-err));
		goto rollback;
	}
	for (int id = 0; id < FG_MAX_IDS; id++) {
		if (names[id].in_use && !claimed[id]) {
			newnames[id].in_use = 0;
			array_update(m->fd[FGM_NAMES], id, &newnames[id]);
		}
	}
	meta.max_sources = cfg->max_sources;
	if (!meta.magic) {
		meta.magic = FG_ABI_MAGIC;
		meta.abi = FG_ABI_VERSION;
	}
	fg_meta_write(m, &meta);
	return 0;

rollback:
	/* the active slot was never touched; give back the ids we took */
	for (int id = 0; id < FG_MAX_IDS; id++)
		if (fresh[id])
			array_update(m->fd[FGM_NAMES], id, &names[id]);
	return err;
}

int fg_rule_set_mode(struct fg_maps *m, const char *name, __u32 mode, char *why)
{
	struct fg_name names[FG_MAX_IDS];
	struct fg_policy pol;
	struct fg_ctl ctl;
	__u32 slot, inactive;
	int err, id = -1, hit = 0;

	if (!m->locked)
		return -ENOLCK;
	if ((err = fg_ctl_read(m, &ctl)) || (err = fg_names_read(m, names)))
		return err;
	for (int j = 0; j < FG_MAX_IDS; j++)
		if (names[j].in_use && !strncmp(names[j].name, name, FG_NAME_LEN))
			id = j;
	if (id < 0) {
		WHY(why, "no rule named \"%s\" in the active policy", name);
		return -ENOENT;
	}
	slot = ctl.slot & 1;
	inactive = slot ^ 1;
	err = array_lookup(m->fd[FGM_POLICY], slot, &pol);
	if (err)
		return err;
	for (__u32 i = 0; i < pol.nrules && i < FG_MAX_RULES; i++)
		if (pol.rules[i].id == id && pol.rules[i].gen == names[id].gen) {
			pol.rules[i].mode = mode;
			hit++;
		}
	if (!hit) {
		WHY(why, "rule \"%s\" is named but not in the active policy", name);
		return -ENOENT;
	}
	pol.version++;
	if ((err = lpm_clear_slot(m, 4, inactive)) || (err = lpm_clear_slot(m, 6, inactive)) ||
	    (err = lpm_copy_slot(m, 4, slot, inactive)) ||
	    (err = lpm_copy_slot(m, 6, slot, inactive)) ||
	    (err = dir4_copy_slot(m, slot, inactive)) ||
	    (err = pidx_write(m, &pol, inactive)) ||
	    (err = array_update(m->fd[FGM_POLICY], inactive, &pol))) {
		WHY(why, "writing the inactive slot: %s", strerror(-err));
		return err;
	}
	return flip_slot(m, inactive);
}

int fg_set_bypass(struct fg_maps *m, bool on, __u64 until)
{
	struct fg_ctl ctl;
	int err = fg_ctl_read(m, &ctl);

	if (err)
		return err;
	ctl.bypass = on;
	ctl.bypass_until = on ? until : 0;
	return fg_ctl_write(m, &ctl);
}

int fg_set_mode(struct fg_maps *m, __u32 mode)
{
	struct fg_ctl ctl;
	int err = fg_ctl_read(m, &ctl);

	if (err)
		return err;
	ctl.mode = mode;
	return fg_ctl_write(m, &ctl);
}

/* --- sources ----------------------------------------------------------------- */

static bool src_limited(const struct fg_policy *pol, __u16 rule, __u16 gen, __u64 tat,
			__u64 now_tu)
{
	for (__u32 i = 0; pol && i < pol->nrules && i < FG_MAX_RULES; i++) {
		const struct fg_rule *r = &pol->rules[i];

		if (r->id != rule || r->gen != gen)
			continue;
		if (!r->src.inc)
			return false;
		/* GCRA: admit iff max(tat, now) + inc - now <= tau */
		return tat > now_tu && tat - now_tu + r->src.inc > r->src.tau;
	}
	return false;
}

/* What a walk over the source tables collects. */
struct src_walk {
	const struct fg_policy *pol;
	__u64 now_tu, min_drops;
	size_t max, *n, cap;
	struct fg_source **out;
	struct fg_src_scan *scan;
};

/* One bucket seen by a walk: count it, keep it if it qualifies. */
static int src_take(struct src_walk *w, int fam, const void *addr, __u16 rule, __u16 gen,
		    __u64 tat, __u64 drops)
{
	struct fg_source *s;

	if (fam == 4)
		w->scan->all4++;
	else
		w->scan->all6++;
	if (drops < w->min_drops)
		return 0;
	w->scan->matched++;
	if (*w->n >= w->max)
		return 0;
	if (*w->n == w->cap) {
		size_t nc = w->cap ? w->cap * 2 : 256;
		struct fg_source *na = realloc(*w->out, nc * sizeof(**w->out));

		if (!na)
			return -ENOMEM;
		*w->out = na;
		w->cap = nc;
	}
	s = &(*w->out)[(*w->n)++];
	memset(s, 0, sizeof(*s));
	s->family = fam;
	memcpy(s->addr, addr, fam == 4 ? 4 : 16);
	s->rule = rule;
	s->gen = gen;
	s->drops = drops;
	s->tat = tat;
	s->limited = src_limited(w->pol, rule, gen, tat, w->now_tu);
	return 0;
}

/* fg_src4 is mmapable: map it read-only and scan it in place. */
static int src4_map(struct fg_maps *m, const struct fg_set4 **sets, __u32 *nsets, size_t *len)
{
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);
	long pg = sysconf(_SC_PAGESIZE);
	void *p;

	if (bpf_obj_get_info_by_fd(m->fd[FGM_SRC4], &info, &ilen))
		return -errno;
	*nsets = info.max_entries;
	*len = ((size_t)info.max_entries * sizeof(struct fg_set4) + pg - 1) / pg * pg;
	p = mmap(NULL, *len, PROT_READ, MAP_SHARED, m->fd[FGM_SRC4], 0);
	if (p == MAP_FAILED)
		return -errno;
	*sets = p;
	return 0;
}

static int walk_src4(struct fg_maps *m, struct src_walk *w)
{
	const struct fg_set4 *sets = NULL;
	__u32 nsets = 0;
	size_t len = 0;
	int err = src4_map(m, &sets, &nsets, &len);

	if (err)
		return err;
	for (__u32 i = 0; i < nsets && !err; i++) {
		for (int k = 0; k < FG_WAYS4 && !err; k++) {
			struct fg_wkey4 key = sets[i].key[k];

			if (key.used)
				err = src_take(w, 4, &key.addr, key.rule, key.gen,
					       sets[i].tat[k], sets[i].drops[k]);
		}
	}
	munmap((void *)sets, len);
	return err;
}

/* fg_src6 in batches of SRC6_BATCH keys (one syscall each, not two per
 * key: at a million sources the daemon walks it every second). */
#define SRC6_BATCH 4096
static int walk_src6(struct fg_maps *m, struct src_walk *w)
{
	struct fg_key6 *keys = calloc(SRC6_BATCH, sizeof(*keys));
	struct fg_bucket *vals = calloc(SRC6_BATCH, sizeof(*vals));
	__u64 in_batch = 0, out_batch = 0;
	bool first = true;
	int err = 0;

	if (!keys || !vals) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		__u32 cnt = SRC6_BATCH;
		int rc = bpf_map_lookup_batch(m->fd[FGM_SRC6], first ? NULL : &in_batch,
					      &out_batch, keys, vals, &cnt, NULL);

		if (rc && rc != -ENOENT) {
			err = rc;
			break;
		}
		for (__u32 i = 0; i < cnt && !err; i++)
			err = src_take(w, 6, keys[i].addr, keys[i].rule, keys[i].gen,
				       vals[i].tat, vals[i].drops);
		if (rc == -ENOENT || err)
			break;	/* the last batch */
		in_batch = out_batch;
		first = false;
	}
out:
	free(keys);
	free(vals);
	return err;
}

int fg_sources_read(struct fg_maps *m, const struct fg_policy *pol, __u64 now_ns,
		    __u64 min_drops, size_t max, struct fg_source **out, size_t *n,
		    struct fg_src_scan *scan)
{
	struct src_walk w = {
		.pol = pol, .now_tu = now_ns << FG_TU_SHIFT, .min_drops = min_drops,
		.max = max, .n = n, .out = out, .scan = scan,
	};
	int err;

	*out = NULL;
	*n = 0;
	memset(scan, 0, sizeof(*scan));
	err = walk_src4(m, &w);
	if (!err)
		err = walk_src6(m, &w);
	if (err) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return err;
}

int fg_sources_count(struct fg_maps *m, size_t *n4, size_t *n6)
{
	struct fg_src_scan scan = {};
	struct fg_source *none = NULL;
	size_t n = 0;
	struct src_walk w = {
		.min_drops = ~0ull, .max = 0, .n = &n, .out = &none, .scan = &scan,
	};
	int err = walk_src4(m, &w);

	if (!err)
		err = walk_src6(m, &w);
	free(none);
	*n4 = scan.all4;
	*n6 = scan.all6;
	return err;
}

/* --- removal ----------------------------------------------------------------- */

int fg_pin_dir_remove(const char *dir, char *why)
{
	struct fg_maps m;
	struct dirent *de;
	char p[512];
	DIR *d;
	int err = 0;

	maps_init(&m);
	if (open_dirfd(&m, dir)) {
		err = -errno;
		WHY(why, "%s: %s", dir, strerror(errno));
		return err;
	}
	/* only ever unlink inside bpffs: a mistyped --pin-dir must not
	 * cost anybody a file named like a map */
	{
		struct statfs sfs;

		if (fstatfs(m.dirfd, &sfs) || sfs.f_type != BPF_FS_MAGIC) {
			err = -ENOTDIR;
			WHY(why, "%s is not on a BPF filesystem: not a floodgate pin dir, nothing removed", dir);
			goto out;
		}
	}
	err = fg_maps_lock(&m, 5000);
	if (err) {
		WHY(why, "%s is locked by another floodgate process", dir);
		goto out;
	}
	d = fdopendir(dup(m.dirfd));
	if (!d) {
		err = -errno;
		goto out;
	}
	/* links first: unpinning the last reference detaches the program */
	for (int pass = 0; pass < 2; pass++) {
		rewinddir(d);
		while ((de = readdir(d))) {
			bool is_link = !strncmp(de->d_name, FG_LINK_PREFIX, strlen(FG_LINK_PREFIX));
			bool is_map = false;

			for (int i = 0; i < FGM_NMAPS; i++)
				is_map |= !strcmp(de->d_name, map_defs[i].name);
			if ((pass == 0 && !is_link) || (pass == 1 && !is_map))
				continue;
			if (pin_path(p, sizeof(p), dir, de->d_name))
				continue;
			if (unlink(p) && errno != ENOENT) {
				err = -errno;
				WHY(why, "unlink %s: %s", p, strerror(errno));
			}
		}
	}
	closedir(d);
	if (!err && rmdir(dir)) {
		err = -errno;
		WHY(why, "rmdir %s: %s (files floodgate does not own are left)", dir,
		    strerror(errno));
	}
out:
	fg_maps_close(&m);
	return err;
}
