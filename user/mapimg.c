// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fg_dir4 (with its blocks) and fg_pidx images of a compiled policy; see mapimg.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mapimg.h"

/* --- fg_dir4: DIR-16-8-8 ---------------------------------------------------- */

/* The leaf table while building: (list, sets) -> index, open addressing. */
#define LEAF_SLOTS	(2 * FG_DIR4_LEAVES)
struct leaves {
	__u64 key[LEAF_SLOTS];
	__u32 idx[LEAF_SLOTS];	/* index + 1; 0 = empty slot */
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
	if (img->nleaf >= FG_DIR4_LEAVES) {
		img->nleaf = FG_DIR4_LEAVES + 1;
		return -1;
	}
	lv->key[h] = key;
	lv->idx[h] = img->nleaf + 1;
	img->dir.leaf[img->nleaf].list = list;
	img->dir.leaf[img->nleaf].sets = sets;
	return (int)img->nleaf++;
}

static __u32 pfx_addr4(const struct fg_pfx_entry *e)
{
	return (__u32)e->addr[0] << 24 | (__u32)e->addr[1] << 16 | (__u32)e->addr[2] << 8 | e->addr[3];
}

/* Blocks needed: one per /16 holding a prefix longer than /16, one per /24
 * holding one longer than /24. */
static int count_blocks(const struct fg_pfx_entry *pfx, size_t n, __u32 *nblk)
{
	__u8 *seen16 = calloc(1, 1u << 13), *seen24 = calloc(1, 1u << 21);
	__u32 c = 0;

	if (!seen16 || !seen24) {
		free(seen16);
		free(seen24);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		__u32 a = pfx_addr4(&pfx[i]), t = a >> 16, u = a >> 8;

		if (pfx[i].family != 4 || pfx[i].plen <= 16)
			continue;
		if (!(seen16[t >> 3] & (1u << (t & 7)))) {
			seen16[t >> 3] |= 1u << (t & 7);
			c++;
		}
		if (pfx[i].plen > 24 && !(seen24[u >> 3] & (1u << (u & 7)))) {
			seen24[u >> 3] |= 1u << (u & 7);
			c++;
		}
	}
	free(seen16);
	free(seen24);
	*nblk = c;
	return 0;
}

/* The block under entry *e, made (filled with the leaf *e held) if *e is a leaf. */
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
	return *a < *b ? -1 : *a > *b;	/* stable: a later duplicate wins, as in the trie */
}

/* Paint prefixes shortest first, so a longer one overrides what it lies in;
 * a block starts as a copy of the leaf above it, which is final by then. */
static int dir4_paint(const struct fg_pfx_entry **v, size_t n4, struct fg_dir4_img *img)
{
	struct leaves *lv = calloc(1, sizeof(*lv));
	__u32 used = 0;
	int err = 0;

	if (!lv)
		return -ENOMEM;
	leaf_of(lv, img, FG_LIST_NONE, 0);	/* leaf 0: no list, no set */
	for (size_t i = 0; i < n4; i++) {
		const struct fg_pfx_entry *e = v[i];
		__u32 a = pfx_addr4(e), *base, lo, span;
		int leaf = leaf_of(lv, img, e->list, e->sets);

		if (leaf < 0) {
			err = -ENOSPC;
			break;
		}
		if (e->plen <= 16) {
			base = img->dir.e;
			span = 1u << (16 - e->plen);
			lo = (a >> 16) & ~(span - 1);
		} else {
			struct fg_blk4 *b = block_under(img, &img->dir.e[a >> 16], &used);

			if (e->plen > 24)
				b = block_under(img, &b->e[(a >> 8) & 0xff], &used);
			base = b->e;
			span = 1u << ((e->plen > 24 ? 32 : 24) - e->plen);
			lo = (e->plen > 24 ? a : a >> 8) & 0xff & ~(span - 1);
		}
		for (__u32 j = 0; j < span; j++)
			base[lo + j] = (__u32)leaf;
	}
	free(lv);
	return err;
}

int fg_dir4_build(const struct fg_pfx_entry *pfx, size_t n, struct fg_dir4_img *img)
{
	const struct fg_pfx_entry **v = NULL;
	size_t n4 = 0;
	int err;

	memset(img, 0, sizeof(*img));
	err = count_blocks(pfx, n, &img->nblk);
	if (err)
		return err;
	if (img->nblk > FG_BLK4_MAX)
		return -ENOSPC;
	if (img->nblk && !(img->blk = calloc(img->nblk, sizeof(*img->blk))))
		return -ENOMEM;
	if (n && !(v = calloc(n, sizeof(*v)))) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (pfx[i].family == 4 && pfx[i].plen <= 32)
			v[n4++] = &pfx[i];
	if (n4)	/* qsort(NULL, 0) is undefined */
		qsort(v, n4, sizeof(*v), by_plen);
	err = dir4_paint(v, n4, img);
out:
	free(v);
	if (err) {
		free(img->blk);
		img->blk = NULL;
	}
	return err;
}

struct fg_pfx fg_dir4_img_lookup(const struct fg_dir4_img *img, __u32 addr)
{
	__u32 e = img->dir.e[addr >> 16];

	if ((e & FG_DIR4_BLK) && (e & ~FG_DIR4_BLK) < img->nblk) {
		e = img->blk[e & ~FG_DIR4_BLK].e[(addr >> 8) & 0xff];
		if ((e & FG_DIR4_BLK) && (e & ~FG_DIR4_BLK) < img->nblk)
			e = img->blk[e & ~FG_DIR4_BLK].e[addr & 0xff];
	}
	return img->dir.leaf[e & (FG_DIR4_LEAVES - 1)];
}

void fg_dir4_img_free(struct fg_dir4_img *img)
{
	free(img->blk);
	img->blk = NULL;
	img->nblk = 0;
}

/* What an entry holds in dimension dim: the range lo..hi. */
enum pdim { PD_DPORT, PD_SPORT, PD_ICMP, PD_PROTO, PD_ANY };

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
		err = pbm_dim(pol->match[c], class_n(pol, c), PD_DPORT, out->cls[c][0], 65536, out, &nb, cut);
		if (!err)
			err = pbm_dim(pol->match[c], class_n(pol, c), PD_SPORT, out->cls[c][1], 65536,
				      out, &nb, cut);
	}
	if (!err)
		err = pbm_dim(pol->match[FG_CLASS_ICMP], class_n(pol, FG_CLASS_ICMP), PD_ICMP, out->k8[0],
			      256, out, &nb, cut);
	if (!err)
		err = pbm_dim(pol->match[FG_CLASS_OTHER], class_n(pol, FG_CLASS_OTHER), PD_PROTO,
			      out->k8[1], 256, out, &nb, cut);
	free(cut);
	return err;
}
