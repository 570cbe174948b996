/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Address prefixes of allow, deny and source sets: parsing "a.b.c.d/n" and
 * "x::y/n", masking, ordering and covering, and flattening nested prefixes
 * so that the longest match carries everything that applies to an address
 * (see fg_pfx in include/floodgate.h). Nothing here knows about YAML or maps.
 */
#ifndef FG_PREFIX_H
#define FG_PREFIX_H

#include <stdbool.h>
#include <stddef.h>
#include "floodgate.h"

/* A prefix as written in allow, deny or a source set, with what named it. */
struct fg_pfx_src {
	__u8 family; /* 4 or 6 */
	__u8 plen;
	__u8 allow, deny; /* listed in allow / deny */
	__u32 sets;	  /* bit per source set that lists it */
	__u8 addr[16];	  /* masked, network order; IPv4 in addr[0..3] */
};

/* A flattened allow/deny/set prefix, ready for fg_pfx4/fg_pfx6. */
struct fg_pfx_entry {
	__u8 family; /* 4 or 6 */
	__u8 plen;   /* 0..32 or 0..128 */
	__u8 pad[2];
	__u8 addr[16]; /* network order, masked; IPv4 in addr[0..3] */
	__u32 list;    /* enum fg_list */
	__u32 sets;    /* bit per source set */
};

/* "a.b.c.d[/n]" or "x::y[/n]" into *p (allow, deny, sets cleared); host
 * bits are masked off. -EINVAL with *why set to the reason. */
int fg_prefix_parse(const char *s, struct fg_pfx_src *p, const char **why);

/* Clear the bits of addr (bytes long) past the first plen. */
void fg_prefix_mask(__u8 *addr, int plen, int bytes);

/* Source grouping masks for prefix lengths, network order. */
__be32 fg_mask4(int plen);
void fg_mask6(int plen, __be32 mask[4]);

/* qsort order: family, address, length. A prefix sorts before every
 * prefix it contains, and what it contains follows it contiguously. */
int fg_pfx_src_cmp(const void *a, const void *b);

/* Does a contain b (or equal it)? */
bool fg_pfx_src_covers(const struct fg_pfx_src *a, const struct fg_pfx_src *b);

/* Sort v and drop duplicates (by fg_pfx_src_cmp); returns the new count. */
size_t fg_pfx_src_unique(struct fg_pfx_src *v, size_t n);

/* Equal canonical lists (both from fg_pfx_src_unique)? */
bool fg_pfx_src_list_eq(const struct fg_pfx_src *a, size_t na, const struct fg_pfx_src *b,
			size_t nb);

/*
 * Flatten: sorts v and merges equal prefixes in place, then gives each
 * prefix the union of what every prefix containing it carries (allow wins
 * over deny). *out is malloc'd (NULL when n is 0). 0 or -ENOMEM.
 */
int fg_prefix_flatten(struct fg_pfx_src *v, size_t n, struct fg_pfx_entry **out, size_t *nout);

/* How many of the entries are IPv4 and IPv6. */
void fg_pfx_count(const struct fg_pfx_entry *pfx, size_t n, size_t *n4, size_t *n6);

#endif /* FG_PREFIX_H */
