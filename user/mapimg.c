// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fg_dir4 and fg_pidx images of a compiled policy; see mapimg.h. */
#include <errno.h>
#include <stdlib.h>
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

/* A bitmap and its summary word: every entry of the class whose range
 * in dimension dim (0 dport, 1 sport; -1 any) holds port. */
static __u16 pbm_fill(const struct fg_match *e, unsigned n, int dim, unsigned port,
		      struct fg_pbm *bm)
{
	__u16 sum = 0;

	memset(bm, 0, sizeof(*bm));
	for (unsigned i = 0; i < n; i++) {
		unsigned lo = dim ? e[i].sport_lo : e[i].dport_lo;
		unsigned hi = dim ? e[i].sport_hi : e[i].dport_hi;

		if (dim < 0 || (port >= lo && port <= hi)) {
			bm->w[i / 64] |= 1ull << (i % 64);
			sum |= (__u16)(1u << (i / 64));
		}
	}
	return sum;
}

/* The ports where some range of dimension dim starts or ends (+1): the
 * candidates are the same from one such port up to the next. */
static void pbm_cuts(const struct fg_match *e, unsigned n, int dim, __u8 cut[65536])
{
	memset(cut, 0, 65536);
	cut[0] = 1;
	for (unsigned i = 0; i < n; i++) {
		unsigned lo = dim ? e[i].sport_lo : e[i].dport_lo;
		unsigned hi = dim ? e[i].sport_hi : e[i].dport_hi;

		cut[lo] = 1;
		if (hi < 65535)
			cut[hi + 1] = 1;
	}
}

int fg_pidx_build(const struct fg_policy *pol, struct fg_pidx *out)
{
	__u8 *cut = malloc(65536);
	__u32 nb = 0;

	if (!cut)
		return -ENOMEM;
	memset(out, 0, sizeof(*out));
	for (int c = 0; c < FG_NCLASS; c++) {
		unsigned n = pol->nmatch[c] < FG_MAX_MATCH ? pol->nmatch[c] : FG_MAX_MATCH;

		out->all[c] = (__u16)nb;
		out->sum[nb] = pbm_fill(pol->match[c], n, -1, 0, &out->bm[nb]);
		nb++;
	}
	for (int c = 0; c < FG_NPCLASS; c++) {
		unsigned n = pol->nmatch[c] < FG_MAX_MATCH ? pol->nmatch[c] : FG_MAX_MATCH;

		for (int dim = 0; dim < 2; dim++) {
			pbm_cuts(pol->match[c], n, dim, cut);
			for (unsigned port = 0; port < 65536; port++) {
				if (cut[port]) {
					/* n ranges make at most 2n + 1 intervals */
					if (nb >= FG_PBM_N) {
						free(cut);
						return -E2BIG;
					}
					out->sum[nb] = pbm_fill(pol->match[c], n, dim, port, &out->bm[nb]);
					nb++;
				}
				out->cls[c][dim][port] = (__u16)(nb - 1);
			}
		}
	}
	free(cut);
	return 0;
}
