/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Data-path lookup images built from a compiled policy, each written whole
 * into one policy slot by apply.c: fg_dir4 and its blocks (IPv4 lists,
 * DIR-16-8-8) and fg_pidx (the first-match bitmaps, per port). Pure
 * functions: no map is touched here, so tests build the same images.
 */
#ifndef FG_MAPIMG_H
#define FG_MAPIMG_H

#include <stdbool.h>
#include <stddef.h>
#include "floodgate.h"
#include "lib/prefix.h"

/* A slot's IPv4 lists as DIR-16-8-8 (struct fg_dir4): the first level
 * and its nblk blocks, which go into the slot's fg_blk4 inner map, and how
 * much of it the trie answers (floodgate.h, "the block budget"). */
struct fg_dir4_img {
	struct fg_dir4 dir;
	struct fg_blk4 *blk;  /* nblk blocks, malloc'd; NULL when 0 */
	__u32 nblk;	      /* blocks used, at most budget */
	__u32 nleaf;	      /* distinct (list, sets) values, leaf 0 included */
	__u32 budget;	      /* blocks it was allowed */
	__u32 n16, n24;	      /* /16s and /24s that want a block (hold a longer prefix) */
	__u32 trie16, trie24; /* of those, answered by the trie (FG_DIR4_TRIE) */
	__u32 trie_pfx;	      /* prefixes answered by the trie: no leaf left for their value */
};

/* Build it from prefix entries (flattened or not: it mirrors a longest-
 * prefix match over them) with at most budget blocks (<= FG_BLK4_MAX,
 * else -EINVAL): ranges that get no block, and prefixes beyond
 * FG_DIR4_LEAVES distinct values, are marked FG_DIR4_TRIE. -ENOMEM. Tests
 * lower the budget; everything else uses fg_dir4_build (FG_BLK4_MAX). */
int fg_dir4_build_budget(const struct fg_pfx_entry *pfx, size_t n, __u32 budget,
			 struct fg_dir4_img *img);
int fg_dir4_build(const struct fg_pfx_entry *pfx, size_t n, struct fg_dir4_img *img);

/* What the image gives the IPv4 address addr (host order), as the program
 * reads it: true with *out, or false where the program asks the trie. */
bool fg_dir4_img_find(const struct fg_dir4_img *img, __u32 addr, struct fg_pfx *out);
/* The same, leaf 0 (no list, no set) where the trie answers. */
struct fg_pfx fg_dir4_img_lookup(const struct fg_dir4_img *img, __u32 addr);

/* Whether any range or prefix is answered by the trie. */
bool fg_dir4_img_fallback(const struct fg_dir4_img *img);
/* One line for the operator: blocks, memory, what the trie answers and the
 * budget. snprintf's result. */
int fg_dir4_describe(const struct fg_dir4_img *img, char *buf, size_t len);

void fg_dir4_img_free(struct fg_dir4_img *img);

/* The first-match bitmaps of a compiled policy (struct fg_pidx); 0, or
 * -E2BIG if its classes hold more entries than FG_MAX_MATCH (the compiler
 * refuses such a policy first). */
int fg_pidx_build(const struct fg_policy *pol, struct fg_pidx *out);

#endif /* FG_MAPIMG_H */
