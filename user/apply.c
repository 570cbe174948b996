// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Compiled config -> the inactive slot written -> flip -> commit; see apply.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>

#include "admission.h"
#include "apply.h"
#include "fgmaps.h"
#include "mapimg.h"
#include "policy.h"

/* --- LPM entries of one slot ------------------------------------------------ */

union lpm_key {
	struct fg_lpm4 k4;
	struct fg_lpm6 k6;
};

static int lpm_fd(struct fg_maps *m, int fam)
{
	return m->fd[fam == 4 ? FGM_PFX4 : FGM_PFX6];
}

static size_t lpm_key_size(int fam)
{
	return fam == 4 ? sizeof(struct fg_lpm4) : sizeof(struct fg_lpm6);
}

/* Keys of fg_pfx4 (fam 4) or fg_pfx6 whose slot field is `slot`; *keys is
 * malloc'd, lpm_key_size(fam) bytes each. */
static int lpm_keys(struct fg_maps *m, int fam, __u32 slot, void **keys, size_t *n)
{
	size_t ksz = lpm_key_size(fam), cap = 0, cnt = 0;
	int fd = lpm_fd(m, fam);
	union lpm_key cur, next;
	char *arr = NULL;
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		if ((fam == 4 ? next.k4.slot : next.k6.slot) == slot) {
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
	return 0;
}

static int lpm_count(struct fg_maps *m, int fam, __u32 slot, size_t *n)
{
	void *keys = NULL;
	int err = lpm_keys(m, fam, slot, &keys, n);

	free(keys);
	return err;
}

static int lpm_clear_slot(struct fg_maps *m, int fam, __u32 slot)
{
	size_t ksz = lpm_key_size(fam), n = 0;
	void *keys = NULL;
	int err = lpm_keys(m, fam, slot, &keys, &n);

	for (size_t i = 0; !err && i < n; i++)
		if (bpf_map_delete_elem(lpm_fd(m, fam), (char *)keys + i * ksz) && errno != ENOENT)
			err = -errno;
	free(keys);
	return err;
}

/* Copy slot `from`'s entries to slot `to` (rule mode change). */
static int lpm_copy_slot(struct fg_maps *m, int fam, __u32 from, __u32 to)
{
	size_t ksz = lpm_key_size(fam), n = 0;
	int fd = lpm_fd(m, fam);
	void *keys = NULL;
	int err = lpm_keys(m, fam, from, &keys, &n);

	for (size_t i = 0; !err && i < n; i++) {
		union lpm_key k;
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

static int lpm_write(struct fg_maps *m, const struct fg_pfx_entry *e, __u32 slot)
{
	struct fg_pfx v = { .list = e->list, .sets = e->sets };
	union lpm_key k;

	memset(&k, 0, sizeof(k));
	if (e->family == 6) {
		k.k6.prefixlen = 32 + e->plen;
		k.k6.slot = slot;
		memcpy(k.k6.addr, e->addr, 16);
	} else {
		k.k4.prefixlen = 32 + e->plen;
		k.k4.slot = slot;
		memcpy(&k.k4.addr, e->addr, 4);
	}
	return bpf_map_update_elem(lpm_fd(m, e->family == 6 ? 6 : 4), &k, &v, BPF_ANY) ? -errno : 0;
}

/* --- the other slotted maps ------------------------------------------------- */

/* The rule scan's start index for a policy, into slot `slot`. */
static int pidx_write(struct fg_maps *m, const struct fg_policy *pol, __u32 slot)
{
	struct fg_pidx *x = malloc(sizeof(*x));
	int err;

	if (!x)
		return -ENOMEM;
	fg_pidx_build(pol, x);
	err = fg_array_write(m, FGM_PIDX, slot, x);
	free(x);
	return err;
}

static int dir4_write(struct fg_maps *m, const struct fg_config *cfg, __u32 slot)
{
	struct fg_dir4 *dir = malloc(sizeof(*dir));
	int err;

	if (!dir)
		return -ENOMEM;
	fg_dir4_build(cfg->pfx, cfg->n_pfx, dir);
	err = fg_array_write(m, FGM_DIR4, slot, dir);
	free(dir);
	return err;
}

static int dir4_copy_slot(struct fg_maps *m, __u32 from, __u32 to)
{
	struct fg_dir4 *dir = malloc(sizeof(*dir));
	int err;

	if (!dir)
		return -ENOMEM;
	err = fg_array_read(m, FGM_DIR4, from, dir);
	if (!err)
		err = fg_array_write(m, FGM_DIR4, to, dir);
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

/* --- fg_policy_apply, step by step ------------------------------------------- */

/* One apply's state, shared by its steps. */
struct apply {
	struct fg_maps *m;
	struct fg_config *cfg;
	char *why;
	struct fg_ctl ctl;
	struct fg_meta meta;
	struct fg_policy active;		/* the policy packets read now */
	__u32 slot, inactive;			/* active and inactive slot */
	size_t n4, n6;				/* the new policy's prefixes */
	struct fg_name names[FG_MAX_IDS];	/* fg_names as found */
	struct fg_name newnames[FG_MAX_IDS];	/* fg_names once applied */
	bool claimed[FG_MAX_IDS];		/* ids the new policy uses */
	bool fresh[FG_MAX_IDS];		/* ids given to new names */
};

/* What is there now: fg_ctl, fg_meta, fg_names and the active policy. */
static int apply_read(struct apply *a)
{
	int err;

	if ((err = fg_ctl_read(a->m, &a->ctl)) || (err = fg_meta_read(a->m, &a->meta)) ||
	    (err = fg_names_read(a->m, a->names))) {
		fg_why(a->why, "reading the pin dir: %s", strerror(-err));
		return err;
	}
	if (a->meta.max_sources && a->meta.max_sources != a->cfg->max_sources) {
		fg_why(a->why, "max_sources changed from %llu to %llu: map sizes are fixed while "
		       "pinned; restart with 'floodgate detach' first (this drops all buckets)",
		       (unsigned long long)a->meta.max_sources,
		       (unsigned long long)a->cfg->max_sources);
		return -EINVAL;
	}
	a->slot = a->ctl.slot & 1;
	a->inactive = a->slot ^ 1;
	return fg_policy_read(a->m, a->slot, &a->active);
}

/* The tries hold both slots: the new prefixes must fit next to the active ones. */
static int apply_capacity(struct apply *a)
{
	__u32 max4 = 0, max6 = 0;
	size_t act4 = 0, act6 = 0;
	int err;

	fg_pfx_count(a->cfg->pfx, a->cfg->n_pfx, &a->n4, &a->n6);
	if ((err = fg_map_max_entries(a->m, FGM_PFX4, &max4)) ||
	    (err = fg_map_max_entries(a->m, FGM_PFX6, &max6)) ||
	    (err = lpm_count(a->m, 4, a->slot, &act4)) ||
	    (err = lpm_count(a->m, 6, a->slot, &act6)))
		return err;
	if (act4 + a->n4 > max4 || act6 + a->n6 > max6) {
		fg_why(a->why, "policy has %zu IPv4 / %zu IPv6 prefixes; with the active policy's "
		       "%zu / %zu they do not fit in fg_pfx4/fg_pfx6 (%u / %u entries, both slots); "
		       "restart floodgated (detach) to size the tries for it",
		       a->n4, a->n6, act4, act6, max4, max6);
		return -ENOSPC;
	}
	return 0;
}

static int name_find(const struct fg_name names[FG_MAX_IDS], const char *name)
{
	for (int j = 0; j < FG_MAX_IDS; j++)
		if (names[j].in_use && !strncmp(names[j].name, name, FG_NAME_LEN))
			return j;
	return -1;
}

/* A new name gets an id free now, not one the old policy still uses until
 * the flip, and the id's next generation. */
static int new_id(struct apply *a, const char *name)
{
	struct fg_name *nn;
	int id = -1;

	for (int j = 0; j < FG_MAX_IDS && id < 0; j++)
		if (!a->names[j].in_use && !a->claimed[j])
			id = j;
	if (id < 0) {
		fg_why(a->why, "no free rule id for \"%s\": ids of removed rules are freed "
		       "only after the switch; apply the removal first, then the additions", name);
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

static int write_fresh_ids(struct apply *a)
{
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
	return 0;
}

static int write_prefixes(struct apply *a)
{
	int err;

	if ((err = lpm_clear_slot(a->m, 4, a->inactive)) ||
	    (err = lpm_clear_slot(a->m, 6, a->inactive))) {
		fg_why(a->why, "clearing the inactive slot's prefixes: %s", strerror(-err));
		return err;
	}
	for (size_t i = 0; i < a->cfg->n_pfx; i++) {
		err = lpm_write(a->m, &a->cfg->pfx[i], a->inactive);
		if (err) {
			fg_why(a->why, "writing prefix %zu: %s", i, strerror(-err));
			return err;
		}
	}
	err = dir4_write(a->m, a->cfg, a->inactive);
	if (err)
		fg_why(a->why, "writing the IPv4 directory: %s", strerror(-err));
	return err;
}

/* The inactive slot: nothing reads it (the previous apply waited). */
static int apply_write_inactive(struct apply *a)
{
	struct fg_policy *pol = &a->cfg->pol;
	int err;

	if ((err = write_fresh_ids(a)) || (err = write_prefixes(a)))
		return err;
	/* sets need the trie too: mark a family if it has any entry */
	pol->lists = (a->n4 ? 1 : 0) | (a->n6 ? 2 : 0);
	fg_policy_set_admission(a->cfg, a->m->ncpus);
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

/* Before the flip: the active slot was never touched; give back the ids we took. */
static void apply_rollback(struct apply *a)
{
	char first[FG_WHY_LEN];
	int e;

	for (int id = 0; id < FG_MAX_IDS; id++) {
		if (!a->fresh[id] || !(e = fg_name_write(a->m, id, &a->names[id])) || !a->why)
			continue;
		snprintf(first, sizeof(first), "%s", a->why);
		fg_why(a->why, "%s; giving back rule id %d failed too: %s (it stays taken "
		       "until the next apply)", first, id, strerror(-e));
	}
}

/* After the flip: free the ids of removed rules, stamp fg_meta. */
static int apply_commit(struct apply *a)
{
	int err = 0, e;

	for (int id = 0; id < FG_MAX_IDS; id++) {
		if (!a->names[id].in_use || a->claimed[id])
			continue;
		a->newnames[id].in_use = 0;
		e = fg_name_write(a->m, id, &a->newnames[id]);
		if (e && !err) {
			err = e;
			fg_why(a->why, "the new policy is active, but freeing the id of removed rule "
			       "\"%s\" failed: %s", a->names[id].name, strerror(-e));
		}
	}
	a->meta.max_sources = a->cfg->max_sources;
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

int fg_policy_apply(struct fg_maps *m, struct fg_config *cfg, char *why)
{
	return fg_policy_apply_hook(m, cfg, NULL, why);
}

int fg_policy_apply_hook(struct fg_maps *m, struct fg_config *cfg, const struct fg_apply_hook *hook,
			 char *why)
{
	struct apply st = { .m = m, .cfg = cfg, .why = why }, *a = &st;
	int err;

	if (!m->locked)
		return -ENOLCK;
	if (!cfg)
		return -EINVAL;
	if (cfg->pol.nrules > FG_MAX_RULES) {
		fg_why(why, "policy has %u rules, at most %d", cfg->pol.nrules, FG_MAX_RULES);
		return -E2BIG;
	}
	/* everything that can fail for a reason, before any write */
	if ((err = apply_read(a)) || (err = apply_capacity(a)) || (err = apply_assign_ids(a)))
		return err;
	err = apply_write_inactive(a);
	if (!err && hook && hook->before_flip)
		err = hook->before_flip(hook->ctx, m, cfg, why);
	if (!err && (err = flip_slot(m, a->inactive)))
		fg_why(why, "switching slots: %s", strerror(-err));
	if (err) {
		apply_rollback(a);
		return err;
	}
	return apply_commit(a);
}

/* --- per-rule mode ---------------------------------------------------------- */

/* The active policy with rule `name`'s mode changed, into *pol. */
static int policy_with_mode(struct fg_maps *m, __u32 slot, const char *name, __u32 mode,
			    struct fg_policy *pol, char *why)
{
	struct fg_name names[FG_MAX_IDS];
	int err, id = -1, hit = 0;

	err = fg_names_read(m, names);
	if (err)
		return err;
	for (int j = 0; j < FG_MAX_IDS; j++)
		if (names[j].in_use && !strncmp(names[j].name, name, FG_NAME_LEN))
			id = j;
	if (id < 0) {
		fg_why(why, "no rule named \"%s\" in the active policy", name);
		return -ENOENT;
	}
	err = fg_policy_read(m, slot, pol);
	if (err)
		return err;
	for (__u32 i = 0; i < pol->nrules && i < FG_MAX_RULES; i++)
		if (pol->rules[i].id == id && pol->rules[i].gen == names[id].gen) {
			pol->rules[i].mode = mode;
			hit++;
		}
	if (!hit) {
		fg_why(why, "rule \"%s\" is named but not in the active policy", name);
		return -ENOENT;
	}
	pol->version++;
	return 0;
}

int fg_rule_set_mode(struct fg_maps *m, const char *name, __u32 mode, char *why)
{
	struct fg_policy pol;
	struct fg_ctl ctl;
	__u32 slot, inactive;
	int err;

	if (!m->locked)
		return -ENOLCK;
	err = fg_ctl_read(m, &ctl);
	if (err)
		return err;
	slot = ctl.slot & 1;
	inactive = slot ^ 1;
	err = policy_with_mode(m, slot, name, mode, &pol, why);
	if (err)
		return err;
	if ((err = lpm_clear_slot(m, 4, inactive)) || (err = lpm_clear_slot(m, 6, inactive)) ||
	    (err = lpm_copy_slot(m, 4, slot, inactive)) ||
	    (err = lpm_copy_slot(m, 6, slot, inactive)) ||
	    (err = dir4_copy_slot(m, slot, inactive)) ||
	    (err = pidx_write(m, &pol, inactive)) ||
	    (err = fg_policy_write(m, inactive, &pol))) {
		fg_why(why, "writing the inactive slot: %s", strerror(-err));
		return err;
	}
	return flip_slot(m, inactive);
}
