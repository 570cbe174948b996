// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Point lookups and an incremental count of the source tables; see srcwalk.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>

#include "fgmaps.h"
#include "srcwalk.h"

int fg_srcwalk_open(struct fg_srcwalk *w, struct fg_maps *m, __u32 batch6)
{
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);
	long pg = sysconf(_SC_PAGESIZE);
	struct fg_ctl ctl;
	void *p;
	int err;

	memset(w, 0, sizeof(*w));
	w->m = m;
	if ((err = fg_ctl_read(m, &ctl)))
		return err;
	w->seed4 = ctl.seed4;
	w->bits4 = ctl.src4_bits;
	if (bpf_obj_get_info_by_fd(m->fd[FGM_SRC4], &info, &ilen))
		return -errno;
	w->nsets = info.max_entries;
	if (w->bits4 < FG_SRC4_MIN_BITS || w->bits4 > FG_SRC4_MAX_BITS ||
	    (1ull << w->bits4) > w->nsets)
		return -EPROTO;	/* the program would not use the table either */
	w->len = ((size_t)w->nsets * sizeof(struct fg_set4) + pg - 1) / pg * pg;
	p = mmap(NULL, w->len, PROT_READ, MAP_SHARED, m->fd[FGM_SRC4], 0);
	if (p == MAP_FAILED)
		return -errno;
	w->sets = p;
	w->batch6 = batch6 ? batch6 : 1;
	w->keys6 = calloc(w->batch6, sizeof(struct fg_key6));
	w->vals6 = calloc(w->batch6, sizeof(struct fg_bucket));
	if (!w->keys6 || !w->vals6) {
		fg_srcwalk_close(w);
		return -ENOMEM;
	}
	return 0;
}

void fg_srcwalk_close(struct fg_srcwalk *w)
{
	if (w->sets)
		munmap((void *)w->sets, w->len);
	free(w->keys6);
	free(w->vals6);
	memset(w, 0, sizeof(*w));
}

/* A way's key as one word, as the program claims it (floodgate.h). */
static __u64 key_word(const struct fg_set4 *set, int k)
{
	return ((const volatile __u64 *)set->key)[k];
}

/* The next n sets of fg_src4: only their key line is read. */
static int step4(struct fg_srcwalk *w, __u32 n)
{
	for (; n && w->cur4 < w->nsets; n--, w->cur4++) {
		const struct fg_set4 *set = &w->sets[w->cur4];

		for (int k = 0; k < FG_WAYS4; k++)
			w->acc4 += key_word(set, k) != 0;	/* an all-zero key: an empty way */
		w->reads += FG_WAYS4;
	}
	if (w->cur4 >= w->nsets) {
		w->count4 = w->acc4;
		w->acc4 = 0;
		w->cur4 = 0;
		return FG_SRCWALK_PASS4;
	}
	return 0;
}

/* One batch of fg_src6, from where the last one stopped (the kernel's
 * token: a hash bucket number, valid however the map changed since). */
static int step6(struct fg_srcwalk *w)
{
	__u32 cnt = w->batch6;
	int rc = bpf_map_lookup_batch(w->m->fd[FGM_SRC6], w->mid6 ? w->tok6[0] : NULL, w->tok6[1],
				      w->keys6, w->vals6, &cnt, NULL);

	if (rc && rc != -ENOENT)
		return rc;
	w->acc6 += cnt;
	w->reads += cnt;
	if (rc == -ENOENT) {	/* the last batch */
		w->count6 = w->acc6;
		w->acc6 = 0;
		w->mid6 = false;
		return FG_SRCWALK_PASS6;
	}
	memcpy(w->tok6[0], w->tok6[1], sizeof(w->tok6[0]));
	w->mid6 = true;
	return 0;
}

int fg_srcwalk_step(struct fg_srcwalk *w, __u32 sets4, bool ents6)
{
	int done, rc = 0;

	if (!w->sets)
		return -EBADF;
	done = step4(w, sets4);
	if (ents6 && (rc = step6(w)) < 0)
		return rc;
	return done | rc;
}

/* A source's way in fg_src4, as the program finds it: its set, its key. */
static int lookup4(struct fg_srcwalk *w, struct fg_source *s)
{
	union {
		struct fg_wkey4 k;
		__u64 u;
	} key = { .k = { .rule = (__u8)s->rule, .used = 1, .gen = s->gen } };
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

static int lookup6(struct fg_srcwalk *w, struct fg_source *s)
{
	struct fg_key6 key = { .rule = s->rule, .gen = s->gen };
	struct fg_bucket b = {};	/* valgrind does not see the syscall write it */

	memcpy(key.addr, s->addr, sizeof(key.addr));
	w->reads++;
	if (bpf_map_lookup_elem(w->m->fd[FGM_SRC6], &key, &b))
		return -errno;
	s->tat = b.tat;
	s->drops = FG_DROPS(b.drops);
	return 0;
}

int fg_srcwalk_lookup(void *arg, struct fg_source *s)
{
	struct fg_srcwalk *w = arg;
	int err;

	if (!w->sets || !w->pol)
		return -EBADF;
	w->lookups++;
	err = s->family == 4 ? lookup4(w, s) : lookup6(w, s);
	if (!err)
		s->limited = fg_source_limited(w->pol, s->rule, s->gen, s->tat, w->now_tu);
	return err;
}
