// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Compiled config -> the inactive slot written -> switch -> commit; see apply.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>

#include "policy/admission.h"
#include "maps/apply.h"
#include "maps/ctl.h"
#include "maps/fgmaps.h"
#include "maps/dir4map.h"
#include "maps/mapimg.h"
#include "policy/policy.h"

/*
 * Entries per batch syscall on the LPM tries. Linux 6.18 serves batch
 * lookups, updates and deletes on LPM tries with the generic batch code (one
 * element at a time in the kernel, no syscall each): a million prefixes
 * take about 1 s to write, not 2, and a walk with values 0.75 s a million.
 */
#define LPM_BATCH 65536

/* --- LPM entries of both slots ---------------------------------------------- */

union lpm_key {
	struct fg_lpm4 k4;
	struct fg_lpm6 k6;
};

/* fam: 0 = IPv4 (fg_pfx4), 1 = IPv6 (fg_pfx6) */
static int lpm_fd(struct fg_maps *m, int fam)
{
	return m->fd[fam ? FGM_PFX6 : FGM_PFX4];
}

static size_t lpm_key_size(int fam)
{
	return fam ? sizeof(struct fg_lpm6) : sizeof(struct fg_lpm4);
}

/* One trie's entries, by slot: the active slot's keys and values (the
 * capacity check, the reload log), the inactive slot's keys (to clear). */
struct lpm_slots {
	char *akeys;
	struct fg_pfx *avals;
	size_t na, cap_ak, cap_av;
	char *ikeys;
	size_t ni, cap_i;
};

static void lpm_slots_free(struct lpm_slots *s)
{
	free(s->akeys);
	free(s->avals);
	free(s->ikeys);
	memset(s, 0, sizeof(*s));
}

/* Room for one more element of size sz in *p (cap elements now). */
static int grow(void **p, size_t *cap, size_t n, size_t sz)
{
	size_t nc;
	void *np;

	if (n < *cap)
		return 0;
	nc = *cap ? *cap * 2 : 1024;
	np = realloc(*p, nc * sz);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = nc;
	return 0;
}

static int slots_add(struct lpm_slots *s, int fam, __u32 active, const void *key,
		     const struct fg_pfx *val)
{
	size_t ksz = lpm_key_size(fam);
	union lpm_key k;
	int err;

	memcpy(&k, key, ksz);
	if ((fam ? k.k6.slot : k.k4.slot) != active) {
		err = grow((void **)&s->ikeys, &s->cap_i, s->ni, ksz);
		if (!err)
			memcpy(s->ikeys + s->ni++ * ksz, key, ksz);
		return err;
	}
	err = grow((void **)&s->akeys, &s->cap_ak, s->na, ksz);
	if (!err)
		err = grow((void **)&s->avals, &s->cap_av, s->na, sizeof(*val));
	if (err)
		return err;
	memcpy(s->akeys + s->na * ksz, key, ksz);
	s->avals[s->na++] = *val;
	return 0;
}

struct lpm_scan_ctx {
	struct lpm_slots *s;
	int fam;
	__u32 active;
};

static int lpm_scan_one(const void *key, const void *val, void *arg)
{
	struct lpm_scan_ctx *c = arg;

	return slots_add(c->s, c->fam, c->active, key, val);
}

/* Every entry of one trie, in batches, split by slot into *s. */
static int lpm_scan(struct fg_maps *m, int fam, __u32 active, struct lpm_slots *s)
{
	struct lpm_scan_ctx c = { .s = s, .fam = fam, .active = active };

	return fg_map_dump(lpm_fd(m, fam), lpm_key_size(fam), sizeof(struct fg_pfx), LPM_BATCH,
			   lpm_scan_one, &c);
}

/* Delete n keys; one that is already gone is skipped. */
static int lpm_delete(struct fg_maps *m, int fam, const char *keys, size_t n)
{
	size_t ksz = lpm_key_size(fam), done = 0;

	while (done < n) {
		__u32 cnt = n - done > LPM_BATCH ? LPM_BATCH : (__u32)(n - done);
		int rc = bpf_map_delete_batch(lpm_fd(m, fam), keys + done * ksz, &cnt, NULL);

		done += cnt; /* the kernel says how many it did, also on error */
		if (rc == -ENOENT)
			done++;
		else if (rc)
			return rc;
	}
	return 0;
}

static int lpm_update(struct fg_maps *m, int fam, const char *keys, const struct fg_pfx *vals,
		      size_t n)
{
	size_t ksz = lpm_key_size(fam), done = 0;

	while (done < n) {
		__u32 cnt = n - done > LPM_BATCH ? LPM_BATCH : (__u32)(n - done);
		int rc = bpf_map_update_batch(lpm_fd(m, fam), keys + done * ksz, vals + done, &cnt,
					      NULL);

		if (rc)
			return rc;
		done += cnt;
	}
	return 0;
}

/* The new policy's entries of one family, as keys of slot `slot`. */
static int lpm_build(const struct fg_config *cfg, int fam, __u32 slot, size_t n, char **keys,
		     struct fg_pfx **vals)
{
	size_t ksz = lpm_key_size(fam), j = 0;

	*keys = malloc((n ? n : 1) * ksz);
	*vals = malloc((n ? n : 1) * sizeof(**vals));
	if (!*keys || !*vals)
		return -ENOMEM;
	for (size_t i = 0; i < cfg->n_pfx && j < n; i++) {
		const struct fg_pfx_entry *e = &cfg->pfx[i];
		union lpm_key k;

		if ((e->family == 6) != fam)
			continue;
		memset(&k, 0, sizeof(k));
		if (fam) {
			k.k6.prefixlen = 32 + e->plen;
			k.k6.slot = slot;
			memcpy(k.k6.addr, e->addr, 16);
		} else {
			k.k4.prefixlen = 32 + e->plen;
			k.k4.slot = slot;
			memcpy(&k.k4.addr, e->addr, 4);
		}
		memcpy(*keys + j * ksz, &k, ksz);
		(*vals)[j].list = e->list;
		(*vals)[j].sets = e->sets;
		j++;
	}
	return 0;
}

/* The active slot's entries of *s as prefix entries, appended to out. */
static void lpm_entries(const struct lpm_slots *s, int fam, struct fg_pfx_entry *out)
{
	size_t ksz = lpm_key_size(fam);

	for (size_t i = 0; i < s->na; i++) {
		struct fg_pfx_entry *e = &out[i];
		union lpm_key k;

		memcpy(&k, s->akeys + i * ksz, ksz);
		memset(e, 0, sizeof(*e));
		e->family = fam ? 6 : 4;
		e->plen = (__u8)((fam ? k.k6.prefixlen : k.k4.prefixlen) - 32);
		if (fam)
			memcpy(e->addr, k.k6.addr, 16);
		else
			memcpy(e->addr, &k.k4.addr, 4);
		e->list = s->avals[i].list;
		e->sets = s->avals[i].sets;
	}
}

/* --- the other slotted maps ------------------------------------------------- */

/* The first-match bitmaps of a policy, into slot `slot`. */
static int pidx_write(struct fg_maps *m, const struct fg_policy *pol, __u32 slot)
{
	struct fg_pidx *x = malloc(sizeof(*x));
	int err;

	if (!x)
		return -ENOMEM;
	err = fg_pidx_build(pol, x);
	if (!err)
		err = fg_array_write(m, FGM_PIDX, slot, x);
	free(x);
	return err;
}

/* --- fg_policy_apply, step by step ------------------------------------------- */

/* One apply's state, shared by its steps. */
struct apply {
	struct fg_maps *m;
	struct fg_config *cfg;
	struct fg_inforce *was;
	const struct fg_apply_opts *opts; /* may be NULL */
	char *why;
	struct fg_ctl_map cm; /* fg_ctl, mapped */
	struct fg_ctl ctl;    /* as found */
	struct fg_meta meta;
	struct fg_policy active;	     /* the policy packets read now */
	__u32 slot, inactive;		     /* active and inactive slot */
	size_t n4, n6;			     /* the new policy's prefixes */
	struct lpm_slots lpm[2];	     /* the tries as found: IPv4, IPv6 */
	struct fg_dir4_img *dir4;	     /* the new IPv4 lists, DIR-16-8-8 */
	struct fg_name names[FG_MAX_IDS];    /* fg_names as found */
	struct fg_name newnames[FG_MAX_IDS]; /* fg_names once applied */
	bool claimed[FG_MAX_IDS];	     /* ids the new policy uses */
	bool fresh[FG_MAX_IDS];		     /* ids given to new names */
	bool pool_claimed[FG_POOL_IDS];	     /* pool ids the new policy uses */
	bool pool_fresh[FG_POOL_IDS];	     /* pool ids given to new pool names */
};

/* What is there now: fg_ctl, fg_meta, fg_names and the active policy. */
static int apply_read(struct apply *a)
{
	int err;

	err = fg_ctl_map_open(&a->cm, a->m->fd[FGM_CTL]);
	if (!err)
		err = fg_ctl_snapshot(&a->cm, &a->ctl);
	if (!err && a->ctl.magic != FG_ABI_MAGIC)
		err = -EPROTO; /* fg_ctl_init stamps it before any apply */
	if (err || (err = fg_meta_read(a->m, &a->meta)) || (err = fg_names_read(a->m, a->names))) {
		fg_why(a->why, "reading the pin dir: %s", strerror(-err));
		return err;
	}
	if (a->meta.max_sources && a->meta.max_sources != a->cfg->max_sources) {
		fg_why(a->why,
		       "max_sources changed from %llu to %llu: map sizes are fixed while "
		       "pinned; restart with 'floodgate detach' first (this drops all buckets)",
		       (unsigned long long)a->meta.max_sources,
		       (unsigned long long)a->cfg->max_sources);
		return -EINVAL;
	}
	a->slot = a->ctl.slot & 1;
	a->inactive = a->slot ^ 1;
	return fg_policy_read(a->m, a->slot, &a->active);
}

/* The IPv4 lists' DIR-16-8-8 image, built before anything is written,
 * within FG_BLK4_MAX blocks: the ranges past it ask the slot's trie, which
 * write_prefixes fills with the same prefixes (floodgate.h, "the block budget"). */
static int apply_dir4(struct apply *a)
{
	int err;

	a->dir4 = malloc(sizeof(*a->dir4));
	if (!a->dir4) {
		fg_why(a->why, "building the IPv4 lists: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	err = fg_dir4_build(a->cfg->pfx, a->cfg->n_pfx, a->dir4);
	if (err)
		fg_why(a->why, "building the IPv4 lists: %s", strerror(-err));
	return err;
}

/* The tries hold both slots (FG_PFX_ENTRIES each: two of the largest
 * policy): the new prefixes must fit next to the active ones. */
static int apply_capacity(struct apply *a)
{
	__u32 max4 = 0, max6 = 0;
	int err;

	fg_pfx_count(a->cfg->pfx, a->cfg->n_pfx, &a->n4, &a->n6);
	if ((err = fg_map_max_entries(a->m, FGM_PFX4, &max4)) ||
	    (err = fg_map_max_entries(a->m, FGM_PFX6, &max6)) ||
	    (err = lpm_scan(a->m, 0, a->slot, &a->lpm[0])) ||
	    (err = lpm_scan(a->m, 1, a->slot, &a->lpm[1]))) {
		fg_why(a->why, "reading the prefix tries: %s", strerror(-err));
		return err;
	}
	if (a->lpm[0].na + a->n4 > max4 || a->lpm[1].na + a->n6 > max6) {
		fg_why(a->why,
		       "policy has %zu IPv4 / %zu IPv6 prefix entries; next to the active "
		       "policy's %zu / %zu they do not fit in fg_pfx4/fg_pfx6 (%u / %u entries for "
		       "both slots)",
		       a->n4, a->n6, a->lpm[0].na, a->lpm[1].na, max4, max6);
		return -ENOSPC;
	}
	return apply_dir4(a);
}

static int name_find(const struct fg_name names[FG_MAX_IDS], const char *name)
{
	for (int j = 0; j < FG_MAX_IDS; j++)
		if (names[j].in_use && !strncmp(names[j].name, name, FG_NAME_LEN))
			return j;
	return -1;
}

/* A new name gets an id free now, not one the old policy still uses until
 * the switch, and the id's next generation. */
static int new_id(struct apply *a, const char *name)
{
	struct fg_name *nn;
	int id = -1;

	for (int j = 0; j < FG_MAX_IDS && id < 0; j++)
		if (!a->names[j].in_use && !a->claimed[j])
			id = j;
	if (id < 0) {
		fg_why(a->why, "no free rule id for \"%s\" (all %d in use)", name, FG_MAX_IDS);
		return -ENOSPC;
	}
	a->fresh[id] = true;
	nn = &a->newnames[id];
	memset(nn, 0, sizeof(*nn));
	snprintf(nn->name, FG_NAME_LEN, "%s", name);
	nn->gen = (__u16)(a->names[id].gen + 1);
	if (!nn->gen)
		nn->gen = 1;
	nn->in_use = 1;
	return id;
}

/* Rule ids by name: survivors keep id and gen (buckets, counters). */
static int apply_assign_ids(struct apply *a)
{
	struct fg_policy *pol = &a->cfg->pol;

	memcpy(a->newnames, a->names, sizeof(a->names));
	for (__u32 i = 0; i < pol->nrules; i++) {
		const char *name = a->cfg->rules[i].name;
		int id = name_find(a->names, name);

		if (id >= 0 && a->claimed[id]) {
			fg_why(a->why, "rule name \"%s\" is used twice", name);
			return -EINVAL;
		}
		if (id < 0 && (id = new_id(a, name)) < 0)
			return id;
		a->claimed[id] = true;
		pol->rules[i].id = id;
		pol->rules[i].gen = a->newnames[id].gen;
	}
	return 0;
}

/* The active policy's pool id for name, or -1. */
static int pool_find(const struct fg_policy *old, const char *name)
{
	for (__u32 j = 0; j < old->npools && j < FG_MAX_POOLS; j++)
		if (name[0] && old->pools[j].id < FG_POOL_IDS &&
		    !strncmp(old->pool_names[j], name, FG_NAME_LEN))
			return old->pools[j].id;
	return -1;
}

/* Pool bucket ids by name, as rule ids: a pool that stays keeps its shared
 * tat and cap whatever its place in the file; a new name gets an id the
 * active policy does not use (FG_POOL_IDS is twice FG_MAX_POOLS, so there
 * is always one), its buckets zeroed before the flip (write_fresh_pools). */
static int apply_assign_pool_ids(struct apply *a)
{
	struct fg_policy *pol = &a->cfg->pol;
	bool used[FG_POOL_IDS] = {};

	if (pol->npools > FG_MAX_POOLS) {
		fg_why(a->why, "policy has %u pools, at most %d", pol->npools, FG_MAX_POOLS);
		return -E2BIG;
	}
	for (__u32 j = 0; j < a->active.npools && j < FG_MAX_POOLS; j++)
		if (a->active.pools[j].id < FG_POOL_IDS)
			used[a->active.pools[j].id] = true;
	for (__u32 i = 0; i < pol->npools; i++) {
		const char *name = pol->pool_names[i];
		int id = pool_find(&a->active, name);

		if (id >= 0 && a->pool_claimed[id]) {
			fg_why(a->why, "pool name \"%.*s\" is used twice", FG_NAME_LEN, name);
			return -EINVAL;
		}
		for (int j = 0; j < FG_POOL_IDS && id < 0; j++)
			if (!used[j] && !a->pool_claimed[j])
				id = j;
		if (id < 0) { /* not reached: at most FG_MAX_POOLS are used and claimed each */
			fg_why(a->why, "no free pool id (all %d in use)", FG_POOL_IDS);
			return -ENOSPC;
		}
		a->pool_fresh[id] = !used[id];
		a->pool_claimed[id] = true;
		pol->pools[i].id = (__u16)id;
	}
	return 0;
}

/* What was in force, for the caller's reload log. */
static int apply_snapshot(struct apply *a)
{
	struct fg_inforce *w = a->was;

	if (!w)
		return 0;
	memset(w, 0, sizeof(*w));
	w->pol = a->active;
	memcpy(w->names, a->names, sizeof(w->names));
	w->ctl = a->ctl;
	w->n_pfx = a->lpm[0].na + a->lpm[1].na;
	w->pfx = calloc(w->n_pfx ? w->n_pfx : 1, sizeof(*w->pfx));
	if (!w->pfx) {
		fg_why(a->why, "out of memory");
		return -ENOMEM;
	}
	lpm_entries(&a->lpm[0], 0, w->pfx);
	lpm_entries(&a->lpm[1], 1, w->pfx + a->lpm[0].na);
	return 0;
}

/* Counters and shared buckets of a new rule id start at zero. */
static int zero_rule_state(struct fg_maps *m, __u32 id)
{
	struct fg_stats *zero = calloc(m->ncpus > 0 ? m->ncpus : 1, sizeof(*zero));
	struct fg_agg agg = {};
	int err;

	if (!zero)
		return -ENOMEM;
	err = fg_array_write(m, FGM_STATS, id, zero);
	free(zero);
	if (!err)
		err = fg_array_write(m, FGM_AGG, FG_AGG_IDX(id), &agg);
	if (!err)
		err = fg_array_write(m, FGM_AGG, FG_OVF_IDX(id), &agg);
	return err;
}

/* Bit per id where want[id]. */
static void id_mask(const bool want[FG_MAX_IDS], __u64 mask[FG_OVR_WORDS])
{
	memset(mask, 0, FG_OVR_WORDS * sizeof(*mask));
	for (int id = 0; id < FG_MAX_IDS; id++)
		if (want[id])
			mask[id / 64] |= 1ull << (id % 64);
}

/* New ids: zeroed state, the new name, then no override (no packet reads
 * them yet). The name first: an operator's override racing this sees the
 * new name when it checks again, and undoes itself (cli_switch.c). */
static int write_fresh_ids(struct apply *a)
{
	__u64 mask[FG_OVR_WORDS];
	int err;

	for (int id = 0; id < FG_MAX_IDS; id++) {
		if (!a->fresh[id])
			continue;
		err = zero_rule_state(a->m, id);
		if (!err)
			err = fg_name_write(a->m, id, &a->newnames[id]);
		if (err) {
			fg_why(a->why, "initialising rule id %d: %s", id, strerror(-err));
			return err;
		}
	}
	id_mask(a->fresh, mask);
	err = fg_switch_clear_rule_ovr_ids(&a->cm, mask);
	if (err)
		fg_why(a->why, "clearing the overrides of new rule ids: %s", strerror(-err));
	return err;
}

/* New pool ids start full: their shared tat and cap zeroed (no packet reads them yet). */
static int write_fresh_pools(struct apply *a)
{
	struct fg_agg agg = {};
	int err = 0;

	for (int id = 0; id < FG_POOL_IDS && !err; id++) {
		if (!a->pool_fresh[id])
			continue;
		err = fg_array_write(a->m, FGM_AGG, FG_POOL_IDX(id), &agg);
		if (!err)
			err = fg_array_write(a->m, FGM_AGG, FG_CAP_IDX(id), &agg);
		if (err)
			fg_why(a->why, "initialising pool id %d: %s", id, strerror(-err));
	}
	return err;
}

static int write_prefixes(struct apply *a)
{
	size_t want[2] = { a->n4, a->n6 };
	int err = 0;

	for (int fam = 0; fam < 2 && !err; fam++) {
		struct lpm_slots *s = &a->lpm[fam];
		struct fg_pfx *vals = NULL;
		char *keys = NULL;

		err = lpm_delete(a->m, fam, s->ikeys, s->ni);
		if (err) {
			fg_why(a->why, "clearing the inactive slot's prefixes: %s", strerror(-err));
			break;
		}
		err = lpm_build(a->cfg, fam, a->inactive, want[fam], &keys, &vals);
		if (!err)
			err = lpm_update(a->m, fam, keys, vals, want[fam]);
		if (err)
			fg_why(a->why, "writing the IPv%d prefixes: %s", fam ? 6 : 4,
			       strerror(-err));
		free(keys);
		free(vals);
	}
	if (err)
		return err;
	err = fg_dir4_write(a->m->fd[FGM_DIR4], a->m->fd[FGM_BLK4], a->inactive, a->dir4);
	if (err)
		fg_why(a->why, "writing the IPv4 lists (fg_dir4, fg_blk4): %s", strerror(-err));
	return err;
}

/* The inactive slot: nothing reads it (the previous apply waited). */
static int apply_write_inactive(struct apply *a)
{
	struct fg_policy *pol = &a->cfg->pol;
	int err;

	if ((err = write_fresh_ids(a)) || (err = write_fresh_pools(a)) || (err = write_prefixes(a)))
		return err;
	/* sets need the trie too: mark a family if it has any entry */
	pol->lists = (a->n4 ? 1 : 0) | (a->n6 ? 2 : 0);
	fg_policy_set_admission(a->cfg);
	pol->version = a->active.version + 1;
	err = pidx_write(a->m, pol, a->inactive);
	if (err) {
		fg_why(a->why, "writing the rule index: %s", strerror(-err));
		return err;
	}
	err = fg_policy_write(a->m, a->inactive, pol);
	if (err)
		fg_why(a->why, "writing the policy: %s", strerror(-err));
	return err;
}

/*
 * The switch: the slot and the file's global mode, then the grace period.
 * Two stores cannot be one; the moment between them is spent in shadow
 * (shadow is stored first, enforce last), never enforcing what the file
 * does not ask for.
 */
static int apply_switch(struct apply *a)
{
	__u32 mode = (__u32)a->cfg->mode;
	int err = 0;

	if (mode == FG_MODE_SHADOW)
		err = fg_switch_file_mode(&a->cm, mode);
	if (!err && (err = fg_switch_slot(&a->cm, a->inactive)))
		fg_switch_file_mode(&a->cm, a->ctl.mode);
	if (!err && mode != FG_MODE_SHADOW)
		err = fg_switch_file_mode(&a->cm, mode);
	if (err) {
		fg_why(a->why, "switching slots: %s", strerror(-err));
		return err;
	}
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

/* Before the switch: the active slot was never touched; give back the ids we took. */
static void apply_rollback(struct apply *a)
{
	char first[FG_WHY_LEN];
	int e;

	for (int id = 0; id < FG_MAX_IDS; id++) {
		if (!a->fresh[id] || !(e = fg_name_write(a->m, id, &a->names[id])) || !a->why)
			continue;
		snprintf(first, sizeof(first), "%s", a->why);
		fg_why(a->why,
		       "%s; giving back rule id %d failed too: %s (it stays taken "
		       "until the next apply)",
		       first, id, strerror(-e));
	}
}

/* After the switch and the grace period: free the ids of removed rules
 * (name, then overrides), stamp fg_meta. */
static int apply_commit(struct apply *a)
{
	bool freed[FG_MAX_IDS] = {};
	__u64 mask[FG_OVR_WORDS];
	int err = 0, e;

	for (int id = 0; id < FG_MAX_IDS; id++) {
		if (!a->names[id].in_use || a->claimed[id])
			continue;
		a->newnames[id].in_use = 0;
		e = fg_name_write(a->m, id, &a->newnames[id]);
		freed[id] = !e;
		if (e && !err) {
			err = e;
			fg_why(a->why,
			       "the new policy is active, but freeing the id of removed rule "
			       "\"%s\" failed: %s",
			       a->names[id].name, strerror(-e));
		}
	}
	id_mask(freed, mask);
	e = fg_switch_clear_rule_ovr_ids(&a->cm, mask);
	if (e && !err) {
		err = e;
		fg_why(a->why,
		       "the new policy is active, but clearing the overrides of removed "
		       "rules failed: %s",
		       strerror(-e));
	}
	a->meta.max_sources = a->cfg->max_sources;
	a->meta.file_mode = (__u32)a->cfg->mode;
	if (!a->meta.magic) {
		a->meta.magic = FG_ABI_MAGIC;
		a->meta.abi = FG_ABI_VERSION;
	}
	e = fg_meta_write(a->m, &a->meta);
	if (e && !err) {
		err = e;
		fg_why(a->why, "the new policy is active, but writing fg_meta failed: %s",
		       strerror(-e));
	}
	return err;
}

static int apply_run(struct apply *a)
{
	struct fg_config *cfg = a->cfg;
	int err;

	if (cfg->pol.nrules > FG_MAX_RULES) {
		fg_why(a->why, "policy has %u rules, at most %d", cfg->pol.nrules, FG_MAX_RULES);
		return -E2BIG;
	}
	if (cfg->mode != FG_MODE_ENFORCE && cfg->mode != FG_MODE_SHADOW) {
		fg_why(a->why, "bad global mode %d", cfg->mode);
		return -EINVAL;
	}
	/* everything that can fail for a reason, before any write */
	if ((err = apply_read(a)) || (err = apply_capacity(a)) || (err = apply_assign_ids(a)) ||
	    (err = apply_assign_pool_ids(a)) || (err = apply_snapshot(a)))
		return err;
	err = apply_write_inactive(a);
	if (!err && a->opts && a->opts->before_flip)
		err = a->opts->before_flip(a->opts->ctx, a->m, cfg, a->why);
	if (!err)
		err = apply_switch(a);
	if (err) {
		apply_rollback(a);
		return err;
	}
	return apply_commit(a);
}

int fg_policy_apply(struct fg_maps *m, struct fg_config *cfg, const struct fg_apply_opts *opts,
		    char *why)
{
	struct fg_inforce *was = opts ? opts->was : NULL;
	struct apply *a;
	int err;

	if (opts && opts->sz != sizeof(*opts))
		return -EINVAL;
	if (was)
		memset(was, 0, sizeof(*was));
	if (!m->locked)
		return -ENOLCK;
	if (!cfg)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->m = m;
	a->cfg = cfg;
	a->was = was;
	a->opts = opts;
	a->why = why;
	err = apply_run(a);
	if (!err && was && a->dir4) {
		was->dir4_blocks = a->dir4->nblk;
		was->dir4_trie16 = a->dir4->trie16;
		was->dir4_trie24 = a->dir4->trie24;
		was->dir4_trie_pfx = a->dir4->trie_pfx;
		if (fg_dir4_img_fallback(a->dir4))
			fg_dir4_describe(a->dir4, was->dir4_note, sizeof(was->dir4_note));
	}
	fg_ctl_map_close(&a->cm);
	lpm_slots_free(&a->lpm[0]);
	lpm_slots_free(&a->lpm[1]);
	if (a->dir4)
		fg_dir4_img_free(a->dir4);
	free(a->dir4);
	free(a);
	if (err && was)
		fg_inforce_free(was);
	return err;
}

void fg_inforce_free(struct fg_inforce *was)
{
	if (was)
		fg_pfx_list_free(&was->pfx, &was->n_pfx);
}
