/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The pin dir: everything floodgated and the floodgate CLI do to the pinned
 * maps goes through here, so both agree on names, locking and the ABI check.
 *
 * A pin dir (default /sys/fs/bpf/floodgate) holds one pinned map per BTF map
 * of bpf/floodgate.bpf.c, under the map's name, and one pinned bpf_link per
 * interface, link_<ifname>. Policy writers (daemon apply, detach) take
 * flock(LOCK_EX) on the directory's fd; readers take no lock, and neither
 * do the runtime switches in fg_ctl (bypass, mode overrides: ctl.h).
 *
 * Functions return 0 or a negative errno and log nothing; those that can
 * fail for a reason an operator must read fill `why` (may be NULL).
 * Writing a policy is apply.h, reading the source tables sources.h.
 */
#ifndef FG_MAPS_H
#define FG_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "floodgate.h"
#include "lib/sysutil.h"

#define FG_PIN_DIR_DEFAULT "/sys/fs/bpf/floodgate"
#define FG_PIN_DIR_ENV	   "FLOODGATE_PIN_DIR"
#define FG_LINK_PREFIX	   "link_"
#define FG_TC_LINK_PREFIX  "tclink_" /* the handoff way's tc links (user/synauth) */

enum fg_map_id {
	FGM_CTL = 0,
	FGM_POLICY,
	FGM_PFX4,
	FGM_PFX6,
	FGM_DIR4,
	FGM_PIDX,
	FGM_SRC4,
	FGM_SRC6,
	FGM_AGG,
	FGM_STATS,
	FGM_NAMES,
	FGM_META,
	FGM_RT4,
	FGM_RT6,
	FGM_RTS4, /* scoped runtime deny entries (struct fg_rts_key4) */
	FGM_RTS6,
	FGM_LEASE,
	FGM_SHED,
	FGM_TEV,  /* ring buffer of throttle events (struct fg_tev) */
	FGM_BLK4, /* IPv4 list blocks, an inner array per slot (struct fg_blk4) */
	FGM_CLK,  /* the program's per-CPU clock cache (struct fg_clk) */
	/* SYN authentication (include/floodgate.h; user/synauth) */
	FGM_SAKEY, /* the cookie secret (struct fg_sakey): the daemon writes it */
	FGM_VER4,  /* verified IPv4 sources (struct fg_vset4) */
	FGM_VER6,  /* verified IPv6 sources (struct fg_vset6) */
	FGM_SACAP, /* the reflector cap's buckets (struct fg_agg) */
	FGM_SADUP, /* handshakes charged, by 4-tuple */
	FGM_SADLY, /* first-connect delay histograms, per CPU (struct fg_sadly) */
	FGM_NMAPS,
};

struct fg_maps {
	char dir[256];
	int dirfd; /* O_DIRECTORY fd, flock()ed while locked */
	bool locked;
	int fd[FGM_NMAPS];
	int ncpus; /* libbpf_num_possible_cpus() */
};

struct floodgate_bpf;

/* --pin-dir if given, else $FLOODGATE_PIN_DIR, else the default. */
const char *fg_pin_dir_choose(const char *arg);

/* Mount bpffs on /sys/fs/bpf if nothing is mounted there, then mkdir -p dir. */
int fg_pin_dir_prepare(const char *dir, char *why);

/* Does dir hold pinned maps already (dir/fg_ctl exists)? */
bool fg_pin_dir_populated(const char *dir);

/*
 * Before loading over an existing pin dir: libbpf would reuse maps whose
 * sizes match, but it cannot see a layout change of equal size, so check
 * fg_ctl's magic and ABI version, and that fg_meta.max_sources matches (the
 * source tables' sizes are fixed once created). -EPROTO with why on a
 * mismatch.
 */
int fg_pin_dir_check(const char *dir, __u64 max_sources, char *why);

/* Open the pinned maps of dir (CLI). Checks map types and sizes against
 * include/floodgate.h and the ABI stamp; -ENOENT if nothing is pinned,
 * -EPROTO if the pin dir is of another version. */
int fg_maps_open(struct fg_maps *m, const char *dir, char *why);

/* A map's name ("fg_ctl", ...: its pin in the pin dir), and back
 * (-ENOENT for a name that is not one of ours). */
const char *fg_map_name(enum fg_map_id id);
int fg_map_id_of(const char *name);
/* What map id must look like (max_entries 0: any). */
void fg_map_shape(enum fg_map_id id, __u32 *type, __u32 *key_size, __u32 *value_size,
		  __u32 *max_entries);

/* Maps found without a pin dir (discover.h): fd[i] is map i or -1. Each
 * is checked as fg_maps_open checks a pinned one; m takes the fds (and
 * closes them on failure), m->dir is where (for messages), m->dirfd -1:
 * there is no pin dir to lock. */
int fg_maps_open_fds(struct fg_maps *m, int fd[FGM_NMAPS], const char *where, char *why);

/* Use a loaded skeleton's maps (daemon); the fds are dup()ed. */
struct bpf_map;
/* The skeleton's maps, indexed by enum fg_map_id. */
void fg_skel_maps(struct floodgate_bpf *skel, struct bpf_map *maps[FGM_NMAPS]);
int fg_maps_from_skel(struct fg_maps *m, struct floodgate_bpf *skel, const char *dir);
/* The same behind a new mkdtemp(dir) scratch dir, locked, mode enforce. */
int fg_maps_scratch(struct fg_maps *m, struct floodgate_bpf *skel, char *dir);

void fg_maps_close(struct fg_maps *m);

/* flock(LOCK_EX) the pin dir, waiting at most timeout_ms. */
int fg_maps_lock(struct fg_maps *m, int timeout_ms);
void fg_maps_unlock(struct fg_maps *m);

/* One value of an array map. */
int fg_array_read(struct fg_maps *m, enum fg_map_id id, __u32 idx, void *val);
int fg_array_write(struct fg_maps *m, enum fg_map_id id, __u32 idx, const void *val);
int fg_map_max_entries(struct fg_maps *m, enum fg_map_id id, __u32 *max);
/* Rows first..first+n-1 of an array map into vals, as the kernel copies
 * them: a row is the value (per-CPU maps: ncpus values, each rounded up to
 * 8 bytes). One BPF_MAP_LOOKUP_BATCH, or one lookup per row where the
 * kernel refuses batch operations (logged once, at debug). */
int fg_array_read_rows(struct fg_maps *m, enum fg_map_id id, __u32 first, __u32 n, void *vals);

/* A copy of fg_ctl; it is written only through ctl.h, and by fg_ctl_init. */
int fg_ctl_read(struct fg_maps *m, struct fg_ctl *ctl);
int fg_meta_read(struct fg_maps *m, struct fg_meta *meta);
int fg_meta_write(struct fg_maps *m, const struct fg_meta *meta);
int fg_names_read(struct fg_maps *m, struct fg_name names[FG_MAX_IDS]);
int fg_name_write(struct fg_maps *m, __u32 id, const struct fg_name *name);
/* The policy of one slot (0 or 1), or of the one fg_ctl.slot names. */
int fg_policy_read(struct fg_maps *m, __u32 slot, struct fg_policy *pol);
int fg_policy_write(struct fg_maps *m, __u32 slot, const struct fg_policy *pol);
int fg_policy_read_active(struct fg_maps *m, struct fg_policy *pol);

/* Per-CPU counters summed over CPUs, all FG_NROWS rows. */
int fg_stats_read(struct fg_maps *m, struct fg_stats rows[FG_NROWS]);
/* One row of them: one lookup, for a reader that must be quick (a sample). */
int fg_stats_read_row(struct fg_maps *m, __u32 row, struct fg_stats *st);

/* Names for labels and JSON: "pass", "drop", ...; "insert", "overflow", ... */
extern const char *const fg_outcome_names[FG_OUT_MAX];
extern const char *const fg_event_names[FG_EV_MAX];

/* Sets of fg_src4 for max_sources ways (a power of two, 2^7..2^24). */
__u32 fg_src4_sets(__u64 max_sources);
/* Sets of fg_src6 for max_sources ways (a power of two, 2^7..2^24). */
__u32 fg_src6_sets(__u64 max_sources);

/* Stamp fg_ctl of a fresh pin dir, the one whole write it ever gets,
 * before any program is attached: magic, ABI, slot 0, mode, the source
 * tables' geometry and their random seeds. An already stamped one is kept whole
 * (adoption: slot, bypass, overrides); the apply then stores the file's
 * mode (apply.h). */
int fg_ctl_init(struct fg_maps *m, __u32 mode);

/* Unpin the connection counter's link and maps (fg_conn_unpin), every
 * link_* (which detaches XDP if nothing else holds the link) and every
 * map, then remove dir. Takes the lock itself. */
int fg_pin_dir_remove(const char *dir, char *why);

/* Every entry of the map fd (keys of ksz, values of vsz bytes), batch at
 * a time through BPF_MAP_LOOKUP_BATCH, each handed to each(key, value,
 * arg); the first error, its or each's, ends the walk and is returned. */
typedef int (*fg_map_each_fn)(const void *key, const void *val, void *arg);
int fg_map_dump(int fd, size_t ksz, size_t vsz, __u32 batch, fg_map_each_fn each, void *arg);

#endif /* FG_MAPS_H */
