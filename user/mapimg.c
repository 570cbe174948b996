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

void fg_pidx_build(const struct fg_policy *pol, struct fg_pidx *out)
{
	for (int c = 0; c < FG_NPCLASS; c++) {
		unsigned n = pol->nmatch[c] < FG_MAX_MATCH ? pol->nmatch[c] : FG_MAX_MATCH;

		/* no entry holds the port: start past the end, nothing to scan */
		memset(out->start[c], n, sizeof(out->start[c]));
		/* backwards, so the earliest entry holding a port wins */
		for (int i = (int)n - 1; i >= 0; i--) {
			const struct fg_match *m = &pol->match[c][i];

			for (unsigned port = m->dport_lo; port <= m->dport_hi; port++)
				out->start[c][port] = (__u8)i;
		}
	}
}
