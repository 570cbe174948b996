// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Point lookups and an incremental count of the source tables; see srcwalk.h. */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>

#include "maps/fgmaps.h"
#include "sources/srcwalk.h"

int fg_srcwalk_open(struct fg_srcwalk *w, struct fg_maps *m)
{
	struct fg_ctl ctl;
	int err;

	memset(w, 0, sizeof(*w));
	w->m = m;
	if ((err = fg_ctl_read(m, &ctl)))
		return err;
	w->seed4 = ctl.seed4;
	w->bits4 = ctl.src4_bits;
	w->seed6[0] = ctl.seed6[0];
	w->seed6[1] = ctl.seed6[1];
	w->bits6 = ctl.src6_bits;
	if ((err = fg_src_table_map(m, FGM_SRC4, sizeof(struct fg_set4), (const void **)&w->sets,
				    &w->nsets, &w->len)) ||
	    (err = fg_src_table_map(m, FGM_SRC6, sizeof(struct fg_set6), (const void **)&w->sets6,
				    &w->nsets6, &w->len6)))
		goto fail;
	/* the program would not use a table of another size either */
	if (w->bits4 < FG_SRC4_MIN_BITS || w->bits4 > FG_SRC4_MAX_BITS ||
	    (1ull << w->bits4) > w->nsets || w->bits6 < FG_SRC6_MIN_BITS ||
	    w->bits6 > FG_SRC6_MAX_BITS || (1ull << w->bits6) > w->nsets6) {
		err = -EPROTO;
		goto fail;
	}
	return 0;
fail:
	fg_srcwalk_close(w);
	return err;
}

void fg_srcwalk_close(struct fg_srcwalk *w)
{
	if (w->sets)
		munmap((void *)w->sets, w->len);
	if (w->sets6)
		munmap((void *)w->sets6, w->len6);
	memset(w, 0, sizeof(*w));
}

/* A way's key as one word, as the program claims it (floodgate.h). */
static __u64 key_word(const struct fg_set4 *set, int k)
{
	return ((const volatile __u64 *)set->key)[k];
}

/* At the end of a table (cur past nsets): publish the pass's count, start
 * the next pass and return its bit; 0 while the pass goes on. */
static int pass_done(__u32 *cur, __u32 nsets, __u64 *acc, __u64 *count, int bit)
{
	if (*cur < nsets)
		return 0;
	*count = *acc;
	*acc = 0;
	*cur = 0;
	return bit;
}

/* The next n sets of fg_src4: only their key line is read. */
static int step4(struct fg_srcwalk *w, __u32 n)
{
	for (; n && w->cur4 < w->nsets; n--, w->cur4++) {
		const struct fg_set4 *set = &w->sets[w->cur4];

		for (int k = 0; k < FG_WAYS4; k++)
			w->acc4 += key_word(set, k) != 0; /* an all-zero key: an empty way */
		w->reads += FG_WAYS4;
	}
	return pass_done(&w->cur4, w->nsets, &w->acc4, &w->count4, FG_SRCWALK_PASS4);
}

/* The next n sets of fg_src6: only their key words are read. */
static int step6(struct fg_srcwalk *w, __u32 n)
{
	for (; n && w->cur6 < w->nsets6; n--, w->cur6++) {
		const struct fg_set6 *set = &w->sets6[w->cur6];

		for (int k = 0; k < FG_WAYS6; k++)
			w->acc6 += __atomic_load_n(&set->way[k].key, __ATOMIC_RELAXED) != 0;
		w->reads += FG_WAYS6;
	}
	return pass_done(&w->cur6, w->nsets6, &w->acc6, &w->count6, FG_SRCWALK_PASS6);
}

int fg_srcwalk_step(struct fg_srcwalk *w, __u32 sets4, __u32 sets6)
{
	if (!w->sets || !w->sets6)
		return -EBADF;
	return step4(w, sets4) | step6(w, sets6);
}

/* A source's way in fg_src4, as the program finds it: its set, its key. */
static int lookup4(struct fg_srcwalk *w, struct fg_source *s)
{
	union {
		struct fg_wkey4 k;
		__u64 u;
	} key = { .k = { .rule = (__u16)(FG_WKEY4_USED | s->rule), .gen = s->gen } };
	const struct fg_set4 *set;

	memcpy(&key.k.addr, s->addr, 4);
	set = &w->sets[fg_hash4(key.u, w->seed4, w->bits4)];
	w->reads += FG_WAYS4;
	for (int k = 0; k < FG_WAYS4; k++) {
		if (key_word(set, k) != key.u)
			continue;
		s->tat = ((const volatile __u64 *)set->tat)[k];
		s->drops = FG_DROPS(((const volatile __u64 *)set->drops)[k]);
		return 0;
	}
	return -ENOENT;
}

/* A source's way in fg_src6, as the program finds it: its digest's set and key. */
static int lookup6(struct fg_srcwalk *w, struct fg_source *s)
{
	__be32 a[4];
	__u64 key;
	const struct fg_set6 *set;

	memcpy(a, s->addr, sizeof(a));
	key = fg_digest6(a, s->rule, s->gen, w->seed6[0], w->seed6[1]);
	set = &w->sets6[fg_set6_of(key, w->bits6)];
	w->reads += FG_WAYS6;
	for (int k = 0; k < FG_WAYS6; k++) {
		if (__atomic_load_n(&set->way[k].key, __ATOMIC_ACQUIRE) != key)
			continue;
		s->tat = __atomic_load_n(&set->way[k].tat, __ATOMIC_RELAXED);
		s->drops = FG_DROPS(__atomic_load_n(&set->drops[k], __ATOMIC_RELAXED));
		return 0;
	}
	return -ENOENT;
}

int fg_srcwalk_lookup(void *arg, struct fg_source *s)
{
	struct fg_srcwalk *w = arg;
	int err;

	if (!w->sets || !w->sets6 || !w->pol)
		return -EBADF;
	w->lookups++;
	err = s->family == 4 ? lookup4(w, s) : lookup6(w, s);
	if (!err)
		s->limited = fg_source_limited(w->pol, s->rule, s->gen, s->tat, w->now_tu);
	return err;
}
