// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fg_dir4 and fg_pidx images of a compiled policy; see mapimg.h. */
#include <string.h>

#include "mapimg.h"

void fg_dir4_build(const struct fg_pfx_entry *pfx, size_t n, struct fg_dir4 *out)
{
	memset(out, 0, sizeof(*out));
	/* shorter prefixes first, so a longer one (<= 16) overrides them */
	for (int plen = 0; plen <= FG_DIR4_BITS; plen++) {
		for (size_t i = 0; i < n; i++) {
			const struct fg_pfx_entry *e = &pfx[i];
			__u32 top, span;

			if (e->family != 4 || e->plen != plen)
				continue;
			top = (__u32)e->addr[0] << 8 | e->addr[1];
			span = 1u << (FG_DIR4_BITS - plen);
			top &= ~(span - 1);
			for (__u32 j = 0; j < span; j++) {
				out->e[top + j].list = e->list;
				out->e[top + j].sets = e->sets;
			}
		}
	}
	for (size_t i = 0; i < n; i++) {
		const struct fg_pfx_entry *e = &pfx[i];

		if (e->family == 4 && e->plen > FG_DIR4_BITS)
			out->e[(__u32)e->addr[0] << 8 | e->addr[1]].list = FG_LIST_TRIE;
	}
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
