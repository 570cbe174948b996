// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Pin dir access shared by floodgated and the floodgate CLI; see fgmaps.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "conn/conn.h"
#include "maps/ctl.h"
#include "maps/fgmaps.h"
#include "maps/pdigest.h"
#include "lib/log.h"
#include "floodgate.skel.h"

/*
 * Every pinned map, in enum fg_map_id order: its id, its name in the
 * skeleton and the pin dir, and what it must look like (checked on every
 * open; max_entries 0: any; flags: those that must be set, mmapped maps
 * need BPF_F_MMAPABLE). One place: map_defs and fg_skel_maps expand it.
 */
#define FG_MAPS(X)                                                                                 \
	X(FGM_CTL, fg_ctl, BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_ctl), 1, BPF_F_MMAPABLE)        \
	X(FGM_POLICY, fg_policy, BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_policy), 2, 0)            \
	X(FGM_PFX4, fg_pfx4, BPF_MAP_TYPE_LPM_TRIE, sizeof(struct fg_lpm4), sizeof(struct fg_pfx), \
	  0, 0)                                                                                    \
	X(FGM_PFX6, fg_pfx6, BPF_MAP_TYPE_LPM_TRIE, sizeof(struct fg_lpm6), sizeof(struct fg_pfx), \
	  0, 0)                                                                                    \
	X(FGM_DIR4, fg_dir4, BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_dir4), 2, 0)                  \
	X(FGM_PIDX, fg_pidx, BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_pidx), 2, 0)                  \
	X(FGM_SRC4, fg_src4, BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_set4), 0, BPF_F_MMAPABLE)     \
	X(FGM_SRC6, fg_src6, BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_set6), 0, BPF_F_MMAPABLE)     \
	X(FGM_AGG, fg_agg, BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_agg), FG_NAGG, 0)               \
	X(FGM_STATS, fg_stats, BPF_MAP_TYPE_PERCPU_ARRAY, 4, sizeof(struct fg_stats), FG_NROWS, 0) \
	X(FGM_NAMES, fg_names, BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_name), FG_MAX_IDS, 0)       \
	X(FGM_META, fg_meta, BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_meta), 1, 0)                  \
	X(FGM_RT4, fg_rt4, BPF_MAP_TYPE_LPM_TRIE, sizeof(struct fg_rt_key4), sizeof(struct fg_rt), \
	  FG_RT_MAX, 0)                                                                            \
	X(FGM_RT6, fg_rt6, BPF_MAP_TYPE_LPM_TRIE, sizeof(struct fg_rt_key6), sizeof(struct fg_rt), \
	  FG_RT_MAX, 0)                                                                            \
	X(FGM_RTS4, fg_rts4, BPF_MAP_TYPE_LPM_TRIE, sizeof(struct fg_rts_key4),                    \
	  sizeof(struct fg_rt), FG_RT_MAX, 0)                                                      \
	X(FGM_RTS6, fg_rts6, BPF_MAP_TYPE_LPM_TRIE, sizeof(struct fg_rts_key6),                    \
	  sizeof(struct fg_rt), FG_RT_MAX, 0)                                                      \
	X(FGM_LEASE, fg_lease, BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_lease), FG_MAX_IDS,         \
	  BPF_F_MMAPABLE)                                                                          \
	X(FGM_SHED, fg_shed, BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_shed_ctl), 1, BPF_F_MMAPABLE) \
	X(FGM_TEV, fg_tev, BPF_MAP_TYPE_RINGBUF, 0, 0, FG_TEV_RING, 0)                             \
	X(FGM_BLK4, fg_blk4, BPF_MAP_TYPE_ARRAY_OF_MAPS, 4, 4, 2, 0)                               \
	X(FGM_CLK, fg_clk, BPF_MAP_TYPE_PERCPU_ARRAY, 4, sizeof(struct fg_clk), 1, 0)              \
	X(FGM_SAKEY, fg_sakey, BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_sakey), 1, 0)               \
	X(FGM_VER4, fg_ver4, BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_vset4), 0, BPF_F_MMAPABLE)    \
	X(FGM_VER6, fg_ver6, BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_vset6), 0, BPF_F_MMAPABLE)    \
	X(FGM_SACAP, fg_sacap, BPF_MAP_TYPE_ARRAY, 4, sizeof(struct fg_agg), FG_SA_CAP_N, 0)       \
	X(FGM_SADUP, fg_sadup, BPF_MAP_TYPE_LRU_HASH, sizeof(struct fg_sadup_key), 8, FG_SA_DUP_N, \
	  0)                                                                                       \
	X(FGM_SADLY, fg_sadly, BPF_MAP_TYPE_PERCPU_ARRAY, 4, sizeof(struct fg_sadly), 1, 0)

static const struct {
	const char *name;
	__u32 type, key_size, value_size, max_entries, flags;
} map_defs[FGM_NMAPS] = {
#define MAP_DEF(id, name, type, ksz, vsz, max, flags) [id] = { #name, type, ksz, vsz, max, flags },
	FG_MAPS(MAP_DEF)
#undef MAP_DEF
};

const char *const fg_outcome_names[FG_OUT_MAX] = {
	[FG_OUT_PASS] = "pass",
	[FG_OUT_DROP] = "drop",
	[FG_OUT_SHADOW] = "shadow",
	[FG_OUT_ALLOW] = "allow",
	[FG_OUT_DENY] = "deny",
	[FG_OUT_BYPASS] = "bypass",
	[FG_OUT_MALFORMED] = "malformed",
	[FG_OUT_NONIP] = "nonip",
	[FG_OUT_RT_ALLOW] = "rt_allow",
	[FG_OUT_RT_DENY] = "rt_deny",
	[FG_OUT_CAP] = "cap",
	[FG_OUT_SHED] = "shed",
	[FG_OUT_SHED_SHADOW] = "shed_shadow",
	[FG_OUT_DENY_SHADOW] = "deny_shadow",
	[FG_OUT_RT_DENY_SHADOW] = "rt_deny_shadow",
	[FG_OUT_MALFORMED_SHADOW] = "malformed_shadow",
	[FG_OUT_CAP_SHADOW] = "cap_shadow",
	[FG_OUT_SA_ANSWER] = "syn_answered",
	[FG_OUT_SA_CAPPED] = "reply_capped",
	[FG_OUT_SA_BADCOOKIE] = "cookie_invalid",
	[FG_OUT_SA_BADCOOKIE_SHADOW] = "cookie_invalid_shadow",
	[FG_OUT_SA_PROOF] = "rst_proof",
};

const char *const fg_event_names[FG_EV_MAX] = {
	[FG_EV_INSERT] = "insert",
	[FG_EV_OVERFLOW] = "overflow",
	[FG_EV_INSERT_LIMITED] = "insert_limited",
	[FG_EV_INSERT_FAIL] = "insert_fail",
	[FG_EV_FULL_OPEN] = "full_open",
	[FG_EV_FULL_CLOSED] = "full_closed",
	[FG_EV_CONTENDED] = "contended",
	[FG_EV_AGG_DROP] = "agg_drop",
	[FG_EV_FRAG] = "frag",
	[FG_EV_BYPASS_EXPIRED] = "bypass_expired",
	[FG_EV_RT_EXPIRED] = "rt_expired",
	[FG_EV_FLEET_DROP] = "fleet_drop",
	[FG_EV_FLEET_LOSS] = "fleet_loss",
	[FG_EV_CAP_SHADOW] = "cap_shadow",
	[FG_EV_CAP_NOSLOT] = "cap_noslot",
	[FG_EV_CAP_CONTENDED] = "cap_contended",
	[FG_EV_CAP_NOMEM] = "cap_nomem",
	[FG_EV_SHED_TIER] = "shed_tier",
	[FG_EV_SHED_CAP] = "shed_cap",
	[FG_EV_SHED_POOL] = "shed_pool",
	[FG_EV_TEV_CAPPED] = "tev_capped",
	[FG_EV_TEV_LOST] = "tev_lost",
	[FG_EV_SA_SHADOW] = "syn_auth_shadow",
	[FG_EV_SA_VALID] = "cookie_valid",
	[FG_EV_SA_VERIFIED] = "verified",
	[FG_EV_SA_NOKEY] = "syn_auth_nokey",
	[FG_EV_SA_SOCKET] = "ack_socket",
	[FG_EV_SA_DUP] = "cookie_dup",
	[FG_EV_SA_FAIL] = "syn_auth_fail",
};

const char *fg_pin_dir_choose(const char *arg)
{
	const char *env = getenv(FG_PIN_DIR_ENV);

	if (arg && *arg)
		return arg;
	if (env && *env)
		return env;
	return FG_PIN_DIR_DEFAULT;
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

			fg_why(why,
			       "bpffs is not mounted on /sys/fs/bpf and mounting it failed: %s",
			       strerror(errno));
			return err;
		}
	}
	if (snprintf(tmp, sizeof(tmp), "%s", dir) >= (int)sizeof(tmp)) {
		fg_why(why, "pin dir path too long");
		return -ENAMETOOLONG;
	}
	for (p = tmp + 1;; p++) {
		char c = *p;

		if (c != '/' && c != 0)
			continue;
		*p = 0;
		if (mkdir(tmp, 0700) && errno != EEXIST) {
			int err = -errno;

			fg_why(why, "mkdir %s: %s", tmp, strerror(errno));
			return err;
		}
		if (!c)
			break;
		*p = c;
	}
	if (statfs(dir, &sfs) || sfs.f_type != BPF_FS_MAGIC) {
		fg_why(why, "%s is not on a bpf filesystem", dir);
		return -EINVAL;
	}
	return 0;
}

bool fg_pin_dir_populated(const char *dir)
{
	char p[512];

	return !pin_path(p, sizeof(p), dir, "fg_ctl") && access(p, F_OK) == 0;
}

int fg_array_read(struct fg_maps *m, enum fg_map_id id, __u32 idx, void *val)
{
	return bpf_map_lookup_elem(m->fd[id], &idx, val) ? -errno : 0;
}

int fg_array_write(struct fg_maps *m, enum fg_map_id id, __u32 idx, const void *val)
{
	return bpf_map_update_elem(m->fd[id], &idx, val, BPF_ANY) ? -errno : 0;
}

/* A row of map id as the kernel copies it out: per-CPU maps give one
 * value per possible CPU, each rounded up to 8 bytes (kernel/bpf/arraymap.c
 * bpf_percpu_array_copy). */
static size_t row_size(const struct fg_maps *m, enum fg_map_id id)
{
	size_t v = map_defs[id].value_size;

	if (map_defs[id].type != BPF_MAP_TYPE_PERCPU_ARRAY)
		return v;
	return (size_t)(m->ncpus > 0 ? m->ncpus : 1) * ((v + 7) & ~(size_t)7);
}

/* The kernel has no batch operations for the map (or none at all):
 * EINVAL from kernels before them, ENOTSUPP (524, kernel-internal) from a
 * map type without them. */
static bool batch_refused(int err)
{
	return err == -EINVAL || err == -EOPNOTSUPP || err == -524;
}

/* Rows first.. of an array map with BPF_MAP_LOOKUP_BATCH: the key before
 * first starts the walk, each call goes on from the last key it returned. */
static int rows_batch(int fd, __u32 first, __u32 n, void *vals, size_t rsz)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u32 *keys = calloc(n ? n : 1, sizeof(*keys));
	__u32 done = 0, in, out, count;
	int err = 0;

	if (!keys)
		return -ENOMEM;
	while (done < n) {
		in = first + done - 1;
		count = n - done;
		err = bpf_map_lookup_batch(fd, first + done ? &in : NULL, &out, keys + done,
					   (char *)vals + (size_t)done * rsz, &count, &opts);
		if (err && err != -ENOENT)
			break;
		if (count && keys[done] != first + done) {
			err = -EIO; /* an array walks its keys in order */
			break;
		}
		done += count;
		if (err == -ENOENT || !count) { /* the map ended: short of row first + n? */
			err = done < n ? -ENOENT : 0;
			break;
		}
	}
	free(keys);
	return err;
}

int fg_array_read_rows(struct fg_maps *m, enum fg_map_id id, __u32 first, __u32 n, void *vals)
{
	static bool told[FGM_NMAPS];
	size_t rsz;
	int err;

	if (id >= FGM_NMAPS || map_defs[id].key_size != sizeof(__u32) ||
	    (map_defs[id].type != BPF_MAP_TYPE_ARRAY &&
	     map_defs[id].type != BPF_MAP_TYPE_PERCPU_ARRAY))
		return -EINVAL; /* rows of an array, keyed by index */
	rsz = row_size(m, id);
	/* defined even where the kernel wrote nothing, and for valgrind, which
	 * does not know that a batch lookup writes its values */
	memset(vals, 0, (size_t)n * rsz);
	err = rows_batch(m->fd[id], first, n, vals, rsz);
	if (!batch_refused(err))
		return err;
	if (!told[id]) {
		told[id] = true;
		pr_debug("%s: the kernel refuses batch lookups (%s): one lookup per row",
			 map_defs[id].name, strerror(-err));
	}
	err = 0;
	for (__u32 r = 0; r < n && !err; r++)
		err = fg_array_read(m, id, first + r, (char *)vals + (size_t)r * rsz);
	return err;
}

int fg_map_max_entries(struct fg_maps *m, enum fg_map_id id, __u32 *max)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(m->fd[id], &info, &len))
		return -errno;
	*max = info.max_entries;
	return 0;
}

static int check_stamp(const struct fg_ctl *ctl, const struct fg_meta *meta, const char *dir,
		       char *why)
{
	/* magic 0: created but never initialised (a crash between load and
	 * the first apply); anything else must be exactly ours */
	if (ctl->magic == 0 && ctl->abi == 0)
		return 0;
	if (ctl->magic != FG_ABI_MAGIC || (meta->magic && meta->magic != FG_ABI_MAGIC)) {
		fg_why(why, "%s does not hold floodgate maps (magic %#x); refusing to touch it",
		       dir, ctl->magic);
		return -EPROTO;
	}
	if (ctl->abi != FG_ABI_VERSION || (meta->abi && meta->abi != FG_ABI_VERSION)) {
		fg_why(why,
		       "%s was created by floodgate ABI version %u, this is version %u; "
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
	    (map_defs[id].max_entries && info.max_entries != map_defs[id].max_entries) ||
	    (info.map_flags & map_defs[id].flags) != map_defs[id].flags) {
		fg_why(why,
		       "%s/%s has an incompatible layout (type %u key %u value %u entries %u "
		       "flags 0x%x); it was pinned by another floodgate version",
		       dir, map_defs[id].name, info.type, info.key_size, info.value_size,
		       info.max_entries, info.map_flags);
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
		fg_why(why,
		       "%s was created with max_sources %llu, the policy asks for %llu; "
		       "map sizes are fixed while pinned: detach first to change it",
		       dir, (unsigned long long)meta.max_sources, (unsigned long long)max_sources);
		err = -EPROTO;
	}
out:
	fg_maps_close(&m);
	return err;
}

/* The stamp in fg_ctl and fg_meta, once every map is open and checked. */
static int check_opened(struct fg_maps *m, const char *where, char *why)
{
	struct fg_ctl ctl;
	struct fg_meta meta;
	int err;

	if ((err = fg_ctl_read(m, &ctl)) || (err = fg_meta_read(m, &meta)))
		return err;
	return check_stamp(&ctl, &meta, where, why);
}

int fg_maps_open(struct fg_maps *m, const char *dir, char *why)
{
	char p[512];
	int err;

	maps_init(m);
	err = open_dirfd(m, dir);
	if (err) {
		fg_why(why, "%s: %s (is floodgated running? see --pin-dir)", dir, strerror(-err));
		return err;
	}
	for (int i = 0; i < FGM_NMAPS; i++) {
		err = pin_path(p, sizeof(p), dir, map_defs[i].name);
		if (err)
			goto fail;
		m->fd[i] = bpf_obj_get(p);
		if (m->fd[i] < 0) {
			err = -errno;
			fg_why(why, "%s: %s (not a floodgate pin dir, or partly removed)", p,
			       strerror(errno));
			goto fail;
		}
		err = check_map(m->fd[i], i, dir, why);
		if (err)
			goto fail;
	}
	err = check_opened(m, dir, why);
	if (err)
		goto fail;
	return 0;
fail:
	fg_maps_close(m);
	return err;
}

const char *fg_map_name(enum fg_map_id id)
{
	return id < FGM_NMAPS ? map_defs[id].name : "?";
}

void fg_map_shape(enum fg_map_id id, __u32 *type, __u32 *key_size, __u32 *value_size,
		  __u32 *max_entries)
{
	*type = map_defs[id].type;
	*key_size = map_defs[id].key_size;
	*value_size = map_defs[id].value_size;
	*max_entries = map_defs[id].max_entries;
}

int fg_map_id_of(const char *name)
{
	for (int i = 0; i < FGM_NMAPS; i++)
		if (!strcmp(name, map_defs[i].name))
			return i;
	return -ENOENT;
}

int fg_maps_open_fds(struct fg_maps *m, int fd[FGM_NMAPS], const char *where, char *why)
{
	int err = 0;

	maps_init(m);
	snprintf(m->dir, sizeof(m->dir), "%s", where);
	for (int i = 0; i < FGM_NMAPS; i++) {
		m->fd[i] = fd[i];
		fd[i] = -1;
		if (m->fd[i] < 0 && !err) {
			fg_why(why, "%s has no map %s: not this floodgate's program", where,
			       map_defs[i].name);
			err = -EPROTO;
		}
		if (m->fd[i] >= 0 && !err)
			err = check_map(m->fd[i], i, where, why);
	}
	if (!err)
		err = check_opened(m, where, why);
	if (err)
		fg_maps_close(m);
	return err;
}

void fg_skel_maps(struct floodgate_bpf *skel, struct bpf_map *maps[FGM_NMAPS])
{
#define SKEL_MAP(id, name, ...) maps[id] = skel->maps.name;
	FG_MAPS(SKEL_MAP)
#undef SKEL_MAP
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

/* A skeleton's maps behind a fresh, unpinned scratch directory (tools and
 * tests): dir holds a mkdtemp template on entry and the directory made on
 * return; it is locked and the control word set to enforce. */
int fg_maps_scratch(struct fg_maps *m, struct floodgate_bpf *skel, char *dir)
{
	int err;

	if (!mkdtemp(dir))
		return -errno;
	err = fg_maps_from_skel(m, skel, dir);
	if (!err)
		err = fg_maps_lock(m, 1000);
	if (!err)
		err = fg_ctl_init(m, FG_MODE_ENFORCE);
	return err;
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
	for (int waited = 0;; waited += 10) {
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
	return fg_array_read(m, FGM_CTL, 0, ctl);
}

/* fg_meta carries a bpf_spin_lock: whole values under it, never half of two */
int fg_meta_read(struct fg_maps *m, struct fg_meta *meta)
{
	__u32 k = 0;

	return bpf_map_lookup_elem_flags(m->fd[FGM_META], &k, meta, BPF_F_LOCK) ? -errno : 0;
}

int fg_meta_write(struct fg_maps *m, const struct fg_meta *meta)
{
	__u32 k = 0;

	return bpf_map_update_elem(m->fd[FGM_META], &k, meta, BPF_F_LOCK) ? -errno : 0;
}

int fg_names_read(struct fg_maps *m, struct fg_name names[FG_MAX_IDS])
{
	int err = fg_array_read_rows(m, FGM_NAMES, 0, FG_MAX_IDS, names);

	for (__u32 i = 0; i < FG_MAX_IDS && !err; i++)
		names[i].name[FG_NAME_LEN - 1] = 0;
	return err;
}

int fg_name_write(struct fg_maps *m, __u32 id, const struct fg_name *name)
{
	return fg_array_write(m, FGM_NAMES, id, name);
}

int fg_policy_read(struct fg_maps *m, __u32 slot, struct fg_policy *pol)
{
	return fg_array_read(m, FGM_POLICY, slot, pol);
}

int fg_policy_write(struct fg_maps *m, __u32 slot, const struct fg_policy *pol)
{
	return fg_array_write(m, FGM_POLICY, slot, pol);
}

int fg_policy_read_active(struct fg_maps *m, struct fg_policy *pol)
{
	struct fg_ctl ctl;
	int err;

	err = fg_ctl_read(m, &ctl);
	if (err)
		return err;
	return fg_policy_read(m, ctl.slot & 1, pol);
}

static void stats_add(struct fg_stats *sum, const struct fg_stats *pc)
{
	for (int o = 0; o < FG_OUT_MAX; o++) {
		sum->pkts[o] += pc->pkts[o];
		sum->bytes[o] += pc->bytes[o];
	}
	for (int e = 0; e < FG_EV_MAX; e++)
		sum->ev[e] += pc->ev[e];
	sum->fleet_offered += pc->fleet_offered;
	sum->fleet_unleased += pc->fleet_unleased;
}

/* Rows per batch call: as many as fit in this, so the buffer stays small
 * and warm whatever the CPU count (on 2 CPUs: 80 rows a call, 13 calls;
 * one buffer of all 1025 rows cost more in page faults than it saved). */
#define STATS_BATCH_BYTES (64u << 10)
_Static_assert(sizeof(struct fg_stats) % 8 == 0, "per-CPU values are 8-byte aligned as copied");

int fg_stats_read_row(struct fg_maps *m, __u32 row, struct fg_stats *st)
{
	struct fg_stats *pc;
	int err;

	if (m->ncpus <= 0)
		return m->ncpus ? m->ncpus : -EINVAL;
	if (row >= FG_NROWS)
		return -ERANGE;
	pc = calloc((size_t)m->ncpus, sizeof(*pc));
	if (!pc)
		return -ENOMEM;
	memset(st, 0, sizeof(*st));
	err = fg_array_read(m, FGM_STATS, row, pc);
	for (int c = 0; c < m->ncpus && !err; c++)
		stats_add(st, &pc[c]);
	free(pc);
	return err;
}

int fg_stats_read(struct fg_maps *m, struct fg_stats rows[FG_NROWS])
{
	size_t rsz = row_size(m, FGM_STATS);
	__u32 chunk = (__u32)(STATS_BATCH_BYTES / rsz), n;
	char *buf;
	int err = 0;

	if (m->ncpus <= 0)
		return m->ncpus ? m->ncpus : -EINVAL;
	chunk = chunk < 1 ? 1 : chunk > FG_NROWS ? FG_NROWS : chunk;
	buf = malloc(chunk * rsz);
	if (!buf)
		return -ENOMEM;
	memset(rows, 0, sizeof(*rows) * FG_NROWS);
	for (__u32 first = 0; first < FG_NROWS && !err; first += n) {
		n = FG_NROWS - first < chunk ? FG_NROWS - first : chunk;
		err = fg_array_read_rows(m, FGM_STATS, first, n, buf);
		for (__u32 r = 0; r < n && !err; r++)
			for (int c = 0; c < m->ncpus; c++)
				stats_add(&rows[first + r],
					  (const struct fg_stats *)(buf + r * rsz +
								    c * sizeof(struct fg_stats)));
	}
	free(buf);
	return err;
}

__u32 fg_src4_sets(__u64 max_sources)
{
	__u32 bits = FG_SRC4_MIN_BITS;

	while (bits < FG_SRC4_MAX_BITS && ((__u64)FG_WAYS4 << bits) < max_sources)
		bits++;
	return 1u << bits;
}

__u32 fg_src6_sets(__u64 max_sources)
{
	__u32 bits = FG_SRC6_MIN_BITS;

	while (bits < FG_SRC6_MAX_BITS && ((__u64)FG_WAYS6 << bits) < max_sources)
		bits++;
	return 1u << bits;
}

/* log2 of a source table's sets, which must be a power of two in [lo, hi]. */
static int table_bits(struct fg_maps *m, enum fg_map_id id, __u32 lo, __u32 hi, __u32 *bits)
{
	__u32 nsets = 0, b = 0;
	int err = fg_map_max_entries(m, id, &nsets);

	if (err)
		return err;
	while (b < 31 && (1u << b) < nsets)
		b++;
	if ((1u << b) != nsets || b < lo || b > hi)
		return -EINVAL;
	*bits = b;
	return 0;
}

int fg_ctl_init(struct fg_maps *m, __u32 mode)
{
	__u32 bits = 0, bits6 = 0;
	struct fg_ctl_map cm;
	struct fg_ctl ctl;
	__u64 seed, seed6[2];
	int err = fg_ctl_read(m, &ctl);

	if (err)
		return err;
	if (ctl.magic == FG_ABI_MAGIC)
		return 0; /* adopted: keep slot, bypass, overrides, the tables' seeds */
	err = table_bits(m, FGM_SRC4, FG_SRC4_MIN_BITS, FG_SRC4_MAX_BITS, &bits);
	if (!err)
		err = table_bits(m, FGM_SRC6, FG_SRC6_MIN_BITS, FG_SRC6_MAX_BITS, &bits6);
	if (err)
		return err;
	/* random seeds: a spoofer cannot aim sources at one set */
	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed) ||
	    getrandom(seed6, sizeof(seed6), 0) != sizeof(seed6))
		return -errno;
	/* field by field: a bypass the CLI set meanwhile is kept (ctl.h) */
	err = fg_ctl_map_open(&cm, m->fd[FGM_CTL]);
	if (err)
		return err;
	err = fg_ctl_stamp6(&cm, bits6, seed6);
	if (!err)
		err = fg_ctl_stamp(&cm, mode, bits, seed);
	fg_ctl_map_close(&cm);
	return err == -EEXIST ? 0 : err;
}

/* --- removal ----------------------------------------------------------------- */

/* Only ever unlink inside bpffs: a mistyped --pin-dir must not cost
 * anybody a file named like a map. */
static int on_bpffs(int fd)
{
	struct statfs sfs;

	return !fstatfs(fd, &sfs) && sfs.f_type == BPF_FS_MAGIC;
}

static bool is_map_name(const char *name)
{
	for (int i = 0; i < FGM_NMAPS; i++)
		if (!strcmp(name, map_defs[i].name))
			return true;
	return false;
}

/* Unlink dir's links (pass 0: unpinning the last reference detaches the
 * program) or its maps (pass 1); other files are left alone. */
static int unpin_pass(DIR *d, const char *dir, int pass, char *why)
{
	struct dirent *de;
	char p[512];
	int err = 0;

	rewinddir(d);
	while ((de = readdir(d))) {
		bool is_link = !strncmp(de->d_name, FG_LINK_PREFIX, strlen(FG_LINK_PREFIX)) ||
			       !strncmp(de->d_name, FG_TC_LINK_PREFIX, strlen(FG_TC_LINK_PREFIX));

		if (pass == 0 ? !is_link : !is_map_name(de->d_name))
			continue;
		if (pin_path(p, sizeof(p), dir, de->d_name))
			continue;
		if (unlink(p) && errno != ENOENT) {
			err = -errno;
			fg_why(why, "unlink %s: %s", p, strerror(errno));
		}
	}
	return err;
}

/* Unpin links, then maps, through a second handle on the locked dir. */
static int unpin_all(struct fg_maps *m, const char *dir, char *why)
{
	int fd = dup(m->dirfd), links, err;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		err = -errno;
		if (fd >= 0)
			close(fd);
		return err;
	}
	links = unpin_pass(d, dir, 0, why);
	err = unpin_pass(d, dir, 1, why);
	closedir(d);
	return err ? err : links;
}

int fg_pin_dir_remove(const char *dir, char *why)
{
	struct fg_maps m;
	int err;

	maps_init(&m);
	err = open_dirfd(&m, dir);
	if (err) {
		fg_why(why, "%s: %s", dir, strerror(-err));
		return err;
	}
	if (!on_bpffs(m.dirfd)) {
		err = -ENOTDIR;
		fg_why(why,
		       "%s is not on a BPF filesystem: not a floodgate pin dir, nothing removed",
		       dir);
		goto out;
	}
	err = fg_maps_lock(&m, 5000);
	if (err) {
		fg_why(why, "%s is locked by another floodgate process", dir);
		goto out;
	}
	fg_pdigest_forget(dir); /* what it described is going */
	/* the connection counter's link and maps first (conn.h) */
	err = fg_conn_unpin(dir);
	if (err)
		fg_why(why, "unpinning the connection counter in %s: %s", dir, strerror(-err));
	else
		err = unpin_all(&m, dir, why);
	if (!err && rmdir(dir)) {
		err = -errno;
		fg_why(why, "rmdir %s: %s (files floodgate does not own are left)", dir,
		       strerror(errno));
	}
out:
	fg_maps_close(&m);
	return err;
}

int fg_map_dump(int fd, size_t ksz, size_t vsz, __u32 batch, fg_map_each_fn each, void *arg)
{
	/* a trie's batch token is a key, a hash map's a bucket number */
	size_t tsz = ksz > sizeof(__u64) ? ksz : sizeof(__u64);
	/* zeroed: valgrind does not know that the batch lookup writes them */
	char *keys = calloc(batch, ksz), *vals = calloc(batch, vsz);
	char *in = calloc(2, tsz), *out = in ? in + tsz : NULL;
	bool first = true;
	int err = 0;

	if (!keys || !vals || !in) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		__u32 cnt = batch;
		int rc = bpf_map_lookup_batch(fd, first ? NULL : in, out, keys, vals, &cnt, NULL);

		if (rc && rc != -ENOENT) {
			err = rc;
			break;
		}
		for (__u32 i = 0; i < cnt && !err; i++)
			err = each(keys + i * ksz, vals + i * vsz, arg);
		if (rc == -ENOENT || err)
			break; /* the last batch */
		memcpy(in, out, tsz);
		first = false;
	}
out:
	free(keys);
	free(vals);
	free(in);
	return err;
}
