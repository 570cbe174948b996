// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Prefix parsing, ordering and flattening; see prefix.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "lib/prefix.h"
#include "lib/units.h"

void fg_prefix_mask(__u8 *addr, int plen, int bytes)
{
	int i;

	for (i = 0; i < bytes; i++) {
		int bits = plen - 8 * i;

		if (bits >= 8)
			continue;
		addr[i] &= bits <= 0 ? 0 : (__u8)(0xff << (8 - bits));
	}
}

__be32 fg_mask4(int plen)
{
	return htonl(plen ? 0xffffffffu << (32 - plen) : 0);
}

void fg_mask6(int plen, __be32 mask[4])
{
	int i;

	for (i = 0; i < 4; i++) {
		int bits = plen - 32 * i;

		mask[i] = htonl(bits >= 32 ? 0xffffffffu :
				bits <= 0  ? 0 :
					     0xffffffffu << (32 - bits));
	}
}

int fg_prefix_parse(const char *s, struct fg_pfx_src *p, const char **why)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	int max;

	memset(p, 0, sizeof(*p));
	*why = "not an IPv4 or IPv6 address";
	if (alen == 0 || alen >= INET6_ADDRSTRLEN)
		return -EINVAL;
	memcpy(buf, s, alen);
	buf[alen] = 0;
	if (strchr(buf, ':')) {
		p->family = 6;
		max = 128;
		if (inet_pton(AF_INET6, buf, p->addr) != 1)
			return -EINVAL;
	} else {
		p->family = 4;
		max = 32;
		if (inet_pton(AF_INET, buf, p->addr) != 1)
			return -EINVAL;
	}
	p->plen = max;
	if (slash) {
		__u64 v;

		*why = p->family == 4 ? "prefix length must be 0..32" :
					"prefix length must be 0..128";
		if (strlen(slash + 1) > 3 || fg_parse_u64(slash + 1, &v) || v > (__u64)max)
			return -EINVAL;
		p->plen = (__u8)v;
	}
	fg_prefix_mask(p->addr, p->plen, 16);
	return 0;
}

int fg_pfx_src_cmp(const void *a, const void *b)
{
	const struct fg_pfx_src *x = a, *y = b;
	int r;

	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	r = memcmp(x->addr, y->addr, 16);
	if (r)
		return r;
	return (int)x->plen - (int)y->plen;
}

bool fg_pfx_src_covers(const struct fg_pfx_src *a, const struct fg_pfx_src *b)
{
	int full = a->plen / 8, rest = a->plen % 8;

	if (a->family != b->family || a->plen > b->plen)
		return false;
	if (memcmp(a->addr, b->addr, full))
		return false;
	if (rest) {
		__u8 m = (__u8)(0xff << (8 - rest));

		if ((a->addr[full] & m) != (b->addr[full] & m))
			return false;
	}
	return true;
}

size_t fg_pfx_src_unique(struct fg_pfx_src *v, size_t n)
{
	size_t i, j;

	qsort(v, n, sizeof(*v), fg_pfx_src_cmp);
	for (i = j = 0; i < n; i++)
		if (!j || fg_pfx_src_cmp(&v[j - 1], &v[i]))
			v[j++] = v[i];
	return j;
}

bool fg_pfx_src_list_eq(const struct fg_pfx_src *a, size_t na, const struct fg_pfx_src *b,
			size_t nb)
{
	size_t i;

	if (na != nb)
		return false;
	for (i = 0; i < na; i++)
		if (fg_pfx_src_cmp(&a[i], &b[i]))
			return false;
	return true;
}

static void pfx_src_add(struct fg_pfx_src *to, const struct fg_pfx_src *from)
{
	to->allow |= from->allow;
	to->deny |= from->deny;
	to->sets |= from->sets;
}

/* Sort, then merge equal prefixes (what named each) in place; the new count. */
static size_t merge_equal(struct fg_pfx_src *v, size_t n)
{
	size_t i, j, k = 0;

	qsort(v, n, sizeof(*v), fg_pfx_src_cmp);
	for (i = 0; i < n; i = j) {
		struct fg_pfx_src m = v[i];

		for (j = i + 1; j < n && !fg_pfx_src_cmp(&v[j], &m); j++)
			pfx_src_add(&m, &v[j]);
		v[k++] = m;
	}
	return k;
}

/*
 * In sorted order every prefix comes after all prefixes that contain it,
 * and everything it contains follows it contiguously, so a stack of the
 * enclosing chain gives each prefix the union of what applies to it.
 * O(n log n).
 */
int fg_prefix_flatten(struct fg_pfx_src *v, size_t n, struct fg_pfx_entry **out, size_t *nout)
{
	struct fg_pfx_src stack[130]; /* plen strictly grows along a chain: depth <= 129 */
	struct fg_pfx_entry *e;
	size_t i;
	int sp = 0;

	*out = NULL;
	*nout = 0;
	if (!n)
		return 0;
	n = merge_equal(v, n);
	e = calloc(n, sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct fg_pfx_src acc = v[i];

		while (sp > 0 && !fg_pfx_src_covers(&stack[sp - 1], &acc))
			sp--;
		if (sp > 0)
			pfx_src_add(&acc, &stack[sp - 1]);
		stack[sp++] = acc;
		e[i].family = acc.family;
		e[i].plen = acc.plen;
		memcpy(e[i].addr, acc.addr, 16);
		e[i].list = acc.allow ? FG_LIST_ALLOW : acc.deny ? FG_LIST_DENY : FG_LIST_NONE;
		e[i].sets = acc.sets;
	}
	*out = e;
	*nout = n;
	return 0;
}

void fg_pfx_count(const struct fg_pfx_entry *pfx, size_t n, size_t *n4, size_t *n6)
{
	size_t i;

	*n4 = *n6 = 0;
	for (i = 0; i < n; i++)
		*(pfx[i].family == 6 ? n6 : n4) += 1;
}
