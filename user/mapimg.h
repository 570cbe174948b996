/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Data-path lookup images built from a compiled policy, each written whole
 * into one policy slot by apply.c: fg_dir4 (IPv4 lists by /16, in front of
 * the LPM trie) and fg_pidx (the first-match bitmaps, per port). Pure
 * functions: no map is touched here, so tests build the same images.
 */
#ifndef FG_MAPIMG_H
#define FG_MAPIMG_H

#include <stddef.h>
#include "floodgate.h"
#include "prefix.h"

/* The IPv4 /16 directory from prefix entries (flattened or not: it
 * mirrors a longest-prefix match over them). */
void fg_dir4_build(const struct fg_pfx_entry *pfx, size_t n, struct fg_dir4 *out);

/* The first-match bitmaps of a compiled policy (struct fg_pidx); 0, or
 * -E2BIG if its classes hold more entries than FG_MAX_MATCH (the compiler
 * refuses such a policy first). */
int fg_pidx_build(const struct fg_policy *pol, struct fg_pidx *out);

#endif /* FG_MAPIMG_H */
