// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The runtime lists in the data-path fixture; see dp_rt.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include "dp_rt.h"
#include "dpcheck.h"
#include "fgtest.h"
#include "maps/fgmaps.h"
#include "lib/prefix.h"

int dp_rt_open(struct dp *d, struct fg_rt_maps *rt)
{
	int err = fg_rt_open(rt, bpf_map__fd(d->skel->maps.fg_ctl),
			     bpf_map__fd(d->skel->maps.fg_rt4), bpf_map__fd(d->skel->maps.fg_rt6));

	if (!err && (err = fg_rt_open_scoped(rt, bpf_map__fd(d->skel->maps.fg_rts4),
					     bpf_map__fd(d->skel->maps.fg_rts6))))
		fg_rt_close(rt);
	return err;
}

struct fg_rt_entry dp_rt_entry(const char *cidr, __u32 list, __u64 expires, const char *comment)
{
	struct fg_rt_entry e = {};
	struct fg_pfx_src p;
	const char *why;

	if (!fg_prefix_parse(cidr, &p, &why)) {
		e.family = p.family;
		e.plen = p.plen;
		memcpy(e.addr, p.addr, 16);
	}
	e.val.list = list;
	e.val.expires = expires;
	e.val.created = 1700000000;
	snprintf(e.val.who, sizeof(e.val.who), "uid 0 (test)");
	snprintf(e.val.comment, sizeof(e.val.comment), "%s", comment ? comment : "");
	return e;
}

int dp_rt_add(struct dp *d, struct fg_rt_maps *rt, const char *cidr, __u32 list, __u64 expires)
{
	struct fg_rt_entry e = dp_rt_entry(cidr, list, expires, "test");
	char why[FG_WHY_LEN];
	bool updated;

	return fg_rt_add(rt, &e, dp_now(d), &updated, why);
}

__u32 dp_rt_count(struct dp *d, int family)
{
	int fd = family == 4 ? bpf_map__fd(d->skel->maps.fg_rt4) :
			       bpf_map__fd(d->skel->maps.fg_rt6);
	struct fg_rt_key6 k, next;
	__u32 n = 0;

	if (bpf_map_get_next_key(fd, NULL, &next))
		return 0;
	do {
		n++;
		k = next;
	} while (!bpf_map_get_next_key(fd, &k, &next) && n < 4 * FG_RT_MAX);
	return n;
}

__u32 dp_rt_active(struct dp *d)
{
	struct fg_ctl c;

	return fg_ctl_snapshot(&d->cm, &c) ? 0xffffffffu : c.rt_active;
}

int dp_rt_raw(struct dp *d, const struct fg_rt_entry *e)
{
	struct fg_rt v = e->val;

	v.plen = e->plen;
	if (e->family == 4) {
		struct fg_rt_key4 k = { .prefixlen = e->plen };

		memcpy(&k.addr, e->addr, 4);
		return bpf_map_update_elem(bpf_map__fd(d->skel->maps.fg_rt4), &k, &v, 0) ? -errno :
											   0;
	} else {
		struct fg_rt_key6 k = { .prefixlen = e->plen };

		memcpy(k.addr, e->addr, 16);
		return bpf_map_update_elem(bpf_map__fd(d->skel->maps.fg_rt6), &k, &v, 0) ? -errno :
											   0;
	}
}

int dp_rt_fill4(struct dp *d, __u32 n, __u32 list)
{
	struct fg_rt v = { .list = list, .plen = 32 };
	int fd = bpf_map__fd(d->skel->maps.fg_rt4);

	for (__u32 i = 0; i < n; i++) {
		struct fg_rt_key4 k = { .prefixlen = 32, .addr = htonl(0x64400000u + i) };
		int err = fg_switch_rt_active(&d->cm, 1);

		if (err)
			return err;
		if (bpf_map_update_elem(fd, &k, &v, BPF_NOEXIST)) {
			err = -errno;
			fg_switch_rt_active(&d->cm, -1);
			return err;
		}
	}
	return 0;
}

int dp_rt_check_open(struct dp *d, struct fg_rt_maps *rt, __u32 max_sources)
{
	int err;

	if (dp_check_open(d, max_sources))
		return -1;
	err = dp_rt_open(d, rt);
	if (err) {
		fg_test_fail(__FILE__, __LINE__, "dp_rt_open: %d (%s)", err, strerror(-err));
		dp_close(d);
		return -1;
	}
	return 0;
}
