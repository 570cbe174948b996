/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Data-path lookup images built from a compiled policy, each written whole
 * into one policy slot by apply.c: fg_dir4 and its blocks (IPv4 lists,
 * DIR-16-8-8) and fg_pidx (the first-match bitmaps, per port). Pure
 * functions: no map is touched here, so tests build the same images.
 */
#ifndef FG_MAPIMG_H
#define FG_MAPIMG_H

#include <stddef.h>
#include "floodgate.h"
#include "prefix.h"

/* A slot's IPv4 lists as DIR-16-8-8 (struct fg_dir4): the first level
 * and its nblk blocks, which go into the slot's fg_blk4 inner map. */
struct fg_dir4_img {
	struct fg_dir4 dir;
	struct fg_blk4 *blk;	/* nblk blocks, malloc'd; NULL when 0 */
	__u32 nblk;		/* blocks, also when refused: how many it needs */
	__u32 nleaf;		/* distinct (list, sets) values, leaf 0 included */
};

/* Build it from prefix entries (flattened or not: it mirrors a longest-
 * prefix match over them). -ENOSPC, nothing allocated, when it needs more
 * than FG_BLK4_MAX blocks (img->nblk says how many) or more than
 * FG_DIR4_LEAVES distinct values (img->nleaf > FG_DIR4_LEAVES); -ENOMEM. */
int fg_dir4_build(const struct fg_pfx_entry *pfx, size_t n, struct fg_dir4_img *img);

/* What the image gives the IPv4 address addr (host order), as the program reads it. */
struct fg_pfx fg_dir4_img_lookup(const struct fg_dir4_img *img, __u32 addr);

void fg_dir4_img_free(struct fg_dir4_img *img);

/* The first-match bitmaps of a compiled policy (struct fg_pidx); 0, or
 * -E2BIG if its classes hold more entries than FG_MAX_MATCH (the compiler
 * refuses such a policy first). */
int fg_pidx_build(const struct fg_policy *pol, struct fg_pidx *out);

#endif /* FG_MAPIMG_H */
