// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Walks over the source tables fg_src4 and fg_src6; see sources.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>

#include "fg_gcra.h"
#include "maps/fgmaps.h"
#include "sources/sources.h"

bool fg_source_limited(const struct fg_policy *pol, __u16 rule, __u16 gen, __u64 tat, __u64 now_tu)
{
	__u64 next;

	for (__u32 i = 0; i < pol->nrules && i < FG_MAX_RULES; i++) {
		const struct fg_rule *r = &pol->rules[i];

		if (r->id != rule || r->gen != gen)
			continue;
		if (!r->src.inc)
			return false;
		return !fg_gcra_step(tat, now_tu, r->src.inc, r->src.tau, &next);
	}
	return false;
}

/* What a walk over the source tables collects; out NULL: count only. */
struct src_walk {
	const struct fg_policy *pol;
	__u64 now_tu, min_drops;
	size_t max, *n, cap;
	struct fg_source **out;
	struct fg_src_scan *scan;
};

/* Room for one more source in *w->out. */
static int src_grow(struct src_walk *w)
{
	size_t nc;
	struct fg_source *na;

	if (*w->n < w->cap)
		return 0;
	nc = w->cap ? w->cap * 2 : 256;
	na = realloc(*w->out, nc * sizeof(**w->out));
	if (!na)
		return -ENOMEM;
	*w->out = na;
	w->cap = nc;
	return 0;
}

/* One bucket seen by a walk: count it, keep it if it qualifies. */
static int src_take(struct src_walk *w, int fam, const void *addr, __u16 rule, __u16 gen, __u64 tat,
		    __u64 drops)
{
	struct fg_source *s;
	int err;

	if (fam == 4)
		w->scan->all4++;
	else
		w->scan->all6++;
	drops = FG_DROPS(drops); /* without the throttle-event tag */
	if (!w->out || drops < w->min_drops)
		return 0;
	w->scan->matched++;
	if (*w->n >= w->max)
		return 0;
	err = src_grow(w);
	if (err)
		return err;
	s = &(*w->out)[(*w->n)++];
	memset(s, 0, sizeof(*s));
	s->family = fam;
	memcpy(s->addr, addr, fam == 4 ? 4 : 16);
	s->rule = rule;
	s->gen = gen;
	s->drops = drops;
	s->tat = tat;
	s->limited = fg_source_limited(w->pol, rule, gen, tat, w->now_tu);
	return 0;
}

int fg_src_table_map(struct fg_maps *m, int id, size_t set_size, const void **sets, __u32 *nsets,
		     size_t *len)
{
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);
	long pg = sysconf(_SC_PAGESIZE);
	void *p;

	if (bpf_obj_get_info_by_fd(m->fd[id], &info, &ilen))
		return -errno;
	if (info.value_size != set_size)
		return -EPROTO;
	*nsets = info.max_entries;
	*len = ((size_t)info.max_entries * set_size + pg - 1) / pg * pg;
	p = mmap(NULL, *len, PROT_READ, MAP_SHARED, m->fd[id], 0);
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
	int err = fg_src_table_map(m, FGM_SRC4, sizeof(*sets), (const void **)&sets, &nsets, &len);

	if (err)
		return err;
	for (__u32 i = 0; i < nsets && !err; i++) {
		for (int k = 0; k < FG_WAYS4 && !err; k++) {
			struct fg_wkey4 key = sets[i].key[k];

			if (key.rule & FG_WKEY4_USED)
				err = src_take(w, 4, &key.addr, (__u16)(key.rule & ~FG_WKEY4_USED),
					       key.gen, sets[i].tat[k], sets[i].drops[k]);
		}
	}
	munmap((void *)sets, len);
	return err;
}

/* One way of fg_src6: shown only if its copy of the owner is the key's
 * (a claimer writes it after its CAS, include/floodgate.h). */
static int src6_take(struct src_walk *w, const struct fg_set6 *set, int k, const __u64 seed6[2])
{
	__u64 key = __atomic_load_n(&set->way[k].key, __ATOMIC_ACQUIRE);
	struct fg_who6 who;

	if (!key)
		return 0;
	memcpy(&who, &set->who[k], sizeof(who));
	if (fg_who6_digest(&who, seed6) != key) {
		w->scan->all6++;
		w->scan->claiming6++;
		return 0;
	}
	return src_take(w, 6, who.addr, who.rule, who.gen, set->way[k].tat, set->drops[k]);
}

static int walk_src6(struct fg_maps *m, struct src_walk *w)
{
	const struct fg_set6 *sets = NULL;
	__u32 nsets = 0;
	size_t len = 0;
	struct fg_ctl ctl;
	int err = fg_ctl_read(m, &ctl);

	if (!err)
		err = fg_src_table_map(m, FGM_SRC6, sizeof(*sets), (const void **)&sets, &nsets,
				       &len);
	if (err)
		return err;
	for (__u32 i = 0; i < nsets && !err; i++)
		for (int k = 0; k < FG_WAYS6 && !err; k++)
			err = src6_take(w, &sets[i], k, ctl.seed6);
	munmap((void *)sets, len);
	return err;
}

static int walk_both(struct fg_maps *m, struct src_walk *w)
{
	int err = walk_src4(m, w);

	return err ? err : walk_src6(m, w);
}

int fg_sources_read(struct fg_maps *m, const struct fg_policy *pol, __u64 now_ns, __u64 min_drops,
		    size_t max, struct fg_source **out, size_t *n, struct fg_src_scan *scan)
{
	struct src_walk w = {
		.pol = pol,
		.now_tu = now_ns << FG_TU_SHIFT,
		.min_drops = min_drops,
		.max = max,
		.n = n,
		.out = out,
		.scan = scan,
	};
	int err;

	*out = NULL;
	*n = 0;
	memset(scan, 0, sizeof(*scan));
	err = walk_both(m, &w);
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
	size_t n = 0;
	struct src_walk w = { .n = &n, .scan = &scan };
	int err = walk_both(m, &w);

	*n4 = scan.all4;
	*n6 = scan.all6;
	return err;
}
