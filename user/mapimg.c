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
