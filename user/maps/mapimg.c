// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fg_dir4 (with its blocks) and fg_pidx images of a compiled policy; see mapimg.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maps/mapimg.h"

/* --- fg_dir4: DIR-16-8-8 ---------------------------------------------------- */

/* The leaf table while building: (list, sets) -> index, open addressing. */
#define LEAF_SLOTS (2 * FG_DIR4_LEAVES)
struct leaves {
	__u64 key[LEAF_SLOTS];
	__u32 idx[LEAF_SLOTS]; /* index + 1; 0 = empty slot */
};

/* The leaf index of (list, sets), added if new; -1 when the table is full. */
static int leaf_of(struct leaves *lv, struct fg_dir4_img *img, __u32 list, __u32 sets)
{
	__u64 key = (__u64)list << 32 | sets;
	__u32 h = (__u32)((key * 0x9e3779b97f4a7c15ull) >> 51) & (LEAF_SLOTS - 1);

	while (lv->idx[h]) {
		if (lv->key[h] == key)
			return (int)lv->idx[h] - 1;
		h = (h + 1) & (LEAF_SLOTS - 1);
	}
	if (img->nleaf >= FG_DIR4_LEAVES)
		return -1;
	lv->key[h] = key;
	lv->idx[h] = img->nleaf + 1;
	img->dir.leaf[img->nleaf].list = list;
	img->dir.leaf[img->nleaf].sets = sets;
	return (int)img->nleaf++;
}

static __u32 pfx_addr4(const struct fg_pfx_entry *e)
{
	return (__u32)e->addr[0] << 24 | (__u32)e->addr[1] << 16 | (__u32)e->addr[2] << 8 |
	       e->addr[3];
}

/* A range that wants a block: a /16 (key = top 16 bits) or a /24 (top 24),
 * and how many prefixes longer than it lie in it. */
struct range {
	__u32 key, n;
};

/* Most prefixes first, then by address: deterministic, so a reload of the
 * same file gives the same image. */
static int by_count(const void *x, const void *y)
{
	const struct range *a = x, *b = y;

	if (a->n != b->n)
		return a->n > b->n ? -1 : 1;
	return a->key < b->key ? -1 : a->key > b->key;
}

static int by_key(const void *x, const void *y)
{
	const struct range *a = x, *b = y;

	return a->key < b->key ? -1 : a->key > b->key;
}

static bool bit_get(const __u8 *m, __u32 i)
{
	return m[i >> 3] & (1u << (i & 7));
}

static void bit_set(__u8 *m, __u32 i)
{
	m[i >> 3] |= 1u << (i & 7);
}

/* The block plan: which /16s and /24s get a block, within budget.
 * Level-2 blocks first (each resolves a whole /16, against a /24 for a
 * level-3 block), then level-3 blocks, in both cases for the ranges holding
 * the most long prefixes (see floodgate.h, "the block budget"). */
struct plan {
	__u8 *keep16; /* bit per /16 given a block */
	__u8 *keep24; /* bit per /24 given a block */
};

static void plan_free(struct plan *pl)
{
	free(pl->keep16);
	free(pl->keep24);
}

static int plan_make(const struct fg_pfx_entry *pfx, size_t n, struct fg_dir4_img *img,
		     struct plan *pl)
{
	struct range *r16 = NULL, *r24 = NULL;
	__u32 *c16 = calloc(1u << 16, sizeof(*c16)), n16 = 0, left;
	size_t n24 = 0, m24 = 0;
	int err = -ENOMEM;

	pl->keep16 = calloc(1, 1u << 13);
	pl->keep24 = calloc(1, 1u << 21);
	if (!c16 || !pl->keep16 || !pl->keep24)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (pfx[i].family != 4 || pfx[i].plen <= 16)
			continue;
		c16[pfx_addr4(&pfx[i]) >> 16]++;
		n24 += pfx[i].plen > 24;
	}
	r16 = malloc((1u << 16) * sizeof(*r16));
	r24 = malloc((n24 ? n24 : 1) * sizeof(*r24));
	if (!r16 || !r24)
		goto out;
	for (__u32 t = 0; t < 1u << 16; t++)
		if (c16[t])
			r16[n16++] = (struct range){ t, c16[t] };
	/* the /24s holding a prefix longer than /24, counted: sort, then runs */
	for (size_t i = 0, k = 0; i < n; i++)
		if (pfx[i].family == 4 && pfx[i].plen > 24)
			r24[k++] = (struct range){ pfx_addr4(&pfx[i]) >> 8, 1 };
	qsort(r24, n24, sizeof(*r24), by_key);
	for (size_t i = 0; i < n24; i++) {
		if (m24 && r24[m24 - 1].key == r24[i].key)
			r24[m24 - 1].n++;
		else
			r24[m24++] = r24[i];
	}
	img->n16 = n16;
	img->n24 = (__u32)m24;
	if (n16 > img->budget)
		qsort(r16, n16, sizeof(*r16), by_count);
	img->trie16 = n16 > img->budget ? n16 - img->budget : 0;
	for (__u32 i = 0; i < n16 - img->trie16; i++)
		bit_set(pl->keep16, r16[i].key);
	left = img->budget - (n16 - img->trie16);
	if (m24 > left)
		qsort(r24, m24, sizeof(*r24), by_count);
	for (size_t i = 0; i < m24; i++) {
		if (!bit_get(pl->keep16, r24[i].key >> 8)) {
			img->trie24++; /* under a /16 the trie answers whole */
		} else if (left) {
			bit_set(pl->keep24, r24[i].key);
			left--;
		} else {
			img->trie24++;
		}
	}
	img->nblk = (n16 - img->trie16) + ((__u32)m24 - img->trie24);
	err = 0;
out:
	free(c16);
	free(r16);
	free(r24);
	if (err)
		plan_free(pl);
	return err;
}

/* The block under entry *e, made (filled with the entry *e held) if *e is
 * not a block yet. */
static struct fg_blk4 *block_under(struct fg_dir4_img *img, __u32 *e, __u32 *used)
{
	struct fg_blk4 *b;

	if (*e & FG_DIR4_BLK)
		return &img->blk[*e & ~FG_DIR4_BLK];
	b = &img->blk[*used];
	for (int i = 0; i < 256; i++)
		b->e[i] = *e;
	*e = FG_DIR4_BLK | (*used)++;
	return b;
}

static int by_plen(const void *x, const void *y)
{
	const struct fg_pfx_entry *const *a = x, *const *b = y;

	if ((*a)->plen != (*b)->plen)
		return (*a)->plen - (*b)->plen;
	return *a < *b ? -1 : *a > *b; /* stable: a later duplicate wins, as in the trie */
}

/* Paint prefixes shortest first, so a longer one overrides what it lies in;
 * a block starts as a copy of the entry above it, which is final by then.
 * A range the plan gives no block, and a prefix whose value finds no leaf,
 * is painted FG_DIR4_TRIE: the trie holds the same prefixes, so its answer
 * there is the one the table would have given. */
static int dir4_paint(const struct fg_pfx_entry **v, size_t n4, const struct plan *pl,
		      struct fg_dir4_img *img)
{
	struct leaves *lv = calloc(1, sizeof(*lv));
	__u32 used = 0;

	if (!lv)
		return -ENOMEM;
	leaf_of(lv, img, FG_LIST_NONE, 0); /* leaf 0: no list, no set */
	for (size_t i = 0; i < n4; i++) {
		const struct fg_pfx_entry *e = v[i];
		__u32 a = pfx_addr4(e), *base, lo, span, val, *up;
		int leaf = leaf_of(lv, img, e->list, e->sets);

		img->trie_pfx += leaf < 0;
		val = leaf < 0 ? FG_DIR4_TRIE : (__u32)leaf;
		if (e->plen <= 16) {
			base = img->dir.e;
			span = 1u << (16 - e->plen);
			lo = (a >> 16) & ~(span - 1);
		} else {
			struct fg_blk4 *b;

			up = &img->dir.e[a >> 16];
			if (!bit_get(pl->keep16, a >> 16)) {
				*up = FG_DIR4_TRIE;
				continue;
			}
			b = block_under(img, up, &used);
			if (e->plen > 24) {
				up = &b->e[(a >> 8) & 0xff];
				if (!bit_get(pl->keep24, a >> 8)) {
					*up = FG_DIR4_TRIE;
					continue;
				}
				b = block_under(img, up, &used);
			}
			base = b->e;
			span = 1u << ((e->plen > 24 ? 32 : 24) - e->plen);
			lo = (e->plen > 24 ? a : a >> 8) & 0xff & ~(span - 1);
		}
		for (__u32 j = 0; j < span; j++)
			base[lo + j] = val;
	}
	free(lv);
	return used == img->nblk ? 0 : -EFAULT; /* the plan and the paint disagree: a bug */
}

int fg_dir4_build_budget(const struct fg_pfx_entry *pfx, size_t n, __u32 budget,
			 struct fg_dir4_img *img)
{
	const struct fg_pfx_entry **v = NULL;
	struct plan pl = {};
	size_t n4 = 0;
	int err;

	memset(img, 0, sizeof(*img));
	img->budget = budget;
	if (budget > FG_BLK4_MAX)
		return -EINVAL;
	err = plan_make(pfx, n, img, &pl);
	if (err)
		return err;
	if (img->nblk && !(img->blk = calloc(img->nblk, sizeof(*img->blk)))) {
		err = -ENOMEM;
		goto out;
	}
	if (n && !(v = calloc(n, sizeof(*v)))) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (pfx[i].family == 4 && pfx[i].plen <= 32)
			v[n4++] = &pfx[i];
	if (n4) /* qsort(NULL, 0) is undefined */
		qsort(v, n4, sizeof(*v), by_plen);
	err = dir4_paint(v, n4, &pl, img);
out:
	free(v);
	plan_free(&pl);
	if (err) {
		free(img->blk);
		img->blk = NULL;
	}
	return err;
}

int fg_dir4_build(const struct fg_pfx_entry *pfx, size_t n, struct fg_dir4_img *img)
{
	return fg_dir4_build_budget(pfx, n, FG_BLK4_MAX, img);
}

bool fg_dir4_img_find(const struct fg_dir4_img *img, __u32 addr, struct fg_pfx *out)
{
	__u32 e = img->dir.e[addr >> 16];

	if ((e & FG_DIR4_BLK) && (e & ~FG_DIR4_BLK) < img->nblk) {
		e = img->blk[e & ~FG_DIR4_BLK].e[(addr >> 8) & 0xff];
		if ((e & FG_DIR4_BLK) && (e & ~FG_DIR4_BLK) < img->nblk)
			e = img->blk[e & ~FG_DIR4_BLK].e[addr & 0xff];
	}
	if (e & FG_DIR4_TRIE)
		return false;
	*out = img->dir.leaf[e & (FG_DIR4_LEAVES - 1)];
	return true;
}

struct fg_pfx fg_dir4_img_lookup(const struct fg_dir4_img *img, __u32 addr)
{
	struct fg_pfx v = img->dir.leaf[0];

	fg_dir4_img_find(img, addr, &v);
	return v;
}

bool fg_dir4_img_fallback(const struct fg_dir4_img *img)
{
	return img->trie16 || img->trie24 || img->trie_pfx;
}

int fg_dir4_describe(const struct fg_dir4_img *img, char *buf, size_t len)
{
	size_t mb = ((size_t)img->nblk * sizeof(struct fg_blk4) + sizeof(struct fg_dir4)) >> 20;
	int o = snprintf(buf, len,
			 "IPv4 lists: %u blocks of 1 KB (%zu MB a slot, with the "
			 "/16 directory)",
			 img->nblk, mb);

	if (img->trie16 && o >= 0 && (size_t)o < len)
		o += snprintf(buf + o, len - (size_t)o,
			      "; %u of %u /16 ranges answered by the trie", img->trie16, img->n16);
	if (img->trie24 && o >= 0 && (size_t)o < len)
		o += snprintf(buf + o, len - (size_t)o,
			      "; %u of %u /24 ranges answered by the trie", img->trie24, img->n24);
	if ((img->trie16 || img->trie24) && o >= 0 && (size_t)o < len)
		o += snprintf(buf + o, len - (size_t)o, ": the block budget is %u", img->budget);
	if (img->trie_pfx && o >= 0 && (size_t)o < len)
		o += snprintf(buf + o, len - (size_t)o,
			      "; %u prefixes answered by the trie: more "
			      "than %u distinct (list, sets) values",
			      img->trie_pfx, FG_DIR4_LEAVES);
	return o;
}

void fg_dir4_img_free(struct fg_dir4_img *img)
{
	free(img->blk);
	img->blk = NULL;
	img->nblk = 0;
}

/* What an entry holds in dimension dim: the range lo..hi. */
enum pdim {
	PD_DPORT,
	PD_SPORT,
	PD_ICMP,
	PD_PROTO,
	PD_ANY
};

static void entry_range(const struct fg_match *e, enum pdim dim, unsigned *lo, unsigned *hi)
{
	switch (dim) {
	case PD_DPORT:
		*lo = e->dport_lo;
		*hi = e->dport_hi;
		return;
	case PD_SPORT:
		*lo = e->sport_lo;
		*hi = e->sport_hi;
		return;
	case PD_ICMP:
		*lo = e->flags & FG_M_ICMP_TYPE ? e->icmp_type : 0;
		*hi = e->flags & FG_M_ICMP_TYPE ? e->icmp_type : 255;
		return;
	case PD_PROTO:
		*lo = e->proto ? e->proto : 0;
		*hi = e->proto ? e->proto : 255;
		return;
	default:
		*lo = 0;
		*hi = 65535;
	}
}

/* A bitmap and its summary word: every entry of the class whose range in
 * dim holds v. */
static __u16 pbm_fill(const struct fg_match *e, unsigned n, enum pdim dim, unsigned v,
		      struct fg_pbm *bm)
{
	__u16 sum = 0;

	memset(bm, 0, sizeof(*bm));
	for (unsigned i = 0; i < n; i++) {
		unsigned lo, hi;

		entry_range(&e[i], dim, &lo, &hi);
		if (v >= lo && v <= hi) {
			bm->w[i / 64] |= 1ull << (i % 64);
			sum |= (__u16)(1u << (i / 64));
		}
	}
	return sum;
}

/*
 * The value -> bitmap map of one dimension, out[0..nv-1], its bitmaps from
 * *nb on. A new bitmap starts where some range starts or ends (+1): the
 * candidates are the same from one such value up to the next, so n ranges
 * make at most 2n + 1 bitmaps. -E2BIG past FG_PBM_N.
 */
static int pbm_dim(const struct fg_match *e, unsigned n, enum pdim dim, __u16 *out, unsigned nv,
		   struct fg_pidx *x, __u32 *nb, __u8 *cut)
{
	memset(cut, 0, nv);
	cut[0] = 1;
	for (unsigned i = 0; i < n; i++) {
		unsigned lo, hi;

		entry_range(&e[i], dim, &lo, &hi);
		if (lo < nv)
			cut[lo] = 1;
		if (hi + 1 < nv)
			cut[hi + 1] = 1;
	}
	for (unsigned v = 0; v < nv; v++) {
		if (cut[v]) {
			if (*nb >= FG_PBM_N)
				return -E2BIG;
			x->sum[*nb] = pbm_fill(e, n, dim, v, &x->bm[*nb]);
			(*nb)++;
		}
		out[v] = (__u16)(*nb - 1);
	}
	return 0;
}

static unsigned class_n(const struct fg_policy *pol, int c)
{
	return pol->nmatch[c] < FG_MAX_MATCH ? pol->nmatch[c] : FG_MAX_MATCH;
}

int fg_pidx_build(const struct fg_policy *pol, struct fg_pidx *out)
{
	__u8 *cut = malloc(65536);
	__u32 nb = 0;
	int err = 0;

	if (!cut)
		return -ENOMEM;
	memset(out, 0, sizeof(*out));
	for (int c = 0; c < FG_NCLASS; c++) {
		out->all[c] = (__u16)nb;
		out->sum[nb] = pbm_fill(pol->match[c], class_n(pol, c), PD_ANY, 0, &out->bm[nb]);
		nb++;
	}
	for (int c = 0; c < FG_NPCLASS && !err; c++) {
		err = pbm_dim(pol->match[c], class_n(pol, c), PD_DPORT, out->cls[c][0], 65536, out,
			      &nb, cut);
		if (!err)
			err = pbm_dim(pol->match[c], class_n(pol, c), PD_SPORT, out->cls[c][1],
				      65536, out, &nb, cut);
	}
	if (!err)
		err = pbm_dim(pol->match[FG_CLASS_ICMP], class_n(pol, FG_CLASS_ICMP), PD_ICMP,
			      out->k8[0], 256, out, &nb, cut);
	if (!err)
		err = pbm_dim(pol->match[FG_CLASS_OTHER], class_n(pol, FG_CLASS_OTHER), PD_PROTO,
			      out->k8[1], 256, out, &nb, cut);
	free(cut);
	return err;
}
