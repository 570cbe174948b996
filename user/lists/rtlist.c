// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The runtime allow/deny lists: add, delete, list, sweep; see rtlist.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "lists/rtlist.h"
#include "maps/fgmaps.h"
#include "lib/prefix.h"
#include "lib/sysutil.h"

/* A key of either family, whole or scoped; all start with the prefix length. */
union rt_key {
	__u32 prefixlen;
	struct fg_rt_key4 k4;
	struct fg_rt_key6 k6;
	struct fg_rts_key4 s4;
	struct fg_rts_key6 s6;
};

/* Map index fi: fg_rt4, fg_rt6, fg_rts4, fg_rts6. */
#define SCOPED(fi) ((fi) >= 2)
#define FAM6(fi)   ((fi)&1)
#define BASE(fi)   (SCOPED(fi) ? FG_RTS_ID_BITS : 0) /* the key's bits before the address */

/* What one walk over a family found. */
struct rt_scan {
	bool collect; /* keep the entries met in v */
	struct fg_rt_entry *v;
	size_t n, cap;
	size_t live;	      /* entries whose time is not over */
	unsigned int removed; /* expired entries removed */
};

static const char *list_name(__u32 list)
{
	return list == FG_LIST_ALLOW ? "allow" : list == FG_LIST_DENY ? "deny" : "?";
}

static int fam_idx(const struct fg_rt_entry *e)
{
	return (e->family == 6) + (e->scoped ? 2 : 0);
}

static const char *map_name(int fi)
{
	static const char *const n[] = { "fg_rt4", "fg_rt6", "fg_rts4", "fg_rts6" };

	return n[fi & 3];
}

/* rt_active or rt_scoped: the count of map fi */
static int count(struct fg_rt_maps *rt, int fi, int delta)
{
	return SCOPED(fi) ? fg_switch_rt_scoped(&rt->cm, delta) :
			    fg_switch_rt_active(&rt->cm, delta);
}

static int check_map(int fd, __u32 key_size)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (info.type != BPF_MAP_TYPE_LPM_TRIE || info.key_size != key_size ||
	    info.value_size != sizeof(struct fg_rt) || info.max_entries != FG_RT_MAX)
		return -EPROTO;
	return 0;
}

int fg_rt_open(struct fg_rt_maps *rt, int ctl_fd, int fd4, int fd6)
{
	int err;

	rt->fd[0] = rt->fd[1] = rt->fd[2] = rt->fd[3] = -1;
	rt->cm.ctl = NULL;
	rt->cm.len = 0;
	if ((err = check_map(fd4, sizeof(struct fg_rt_key4))) ||
	    (err = check_map(fd6, sizeof(struct fg_rt_key6))))
		return err;
	err = fg_ctl_map_open(&rt->cm, ctl_fd);
	if (err)
		return err;
	/* unstamped: fg_ctl_init is about to write the whole value, count included */
	if (!__atomic_load_n(&rt->cm.ctl->magic, __ATOMIC_ACQUIRE)) {
		fg_ctl_map_close(&rt->cm);
		return -ENODATA;
	}
	rt->fd[0] = fd4;
	rt->fd[1] = fd6;
	return 0;
}

int fg_rt_open_scoped(struct fg_rt_maps *rt, int fds4, int fds6)
{
	int err;

	if ((err = check_map(fds4, sizeof(struct fg_rts_key4))) ||
	    (err = check_map(fds6, sizeof(struct fg_rts_key6))))
		return err;
	rt->fd[2] = fds4;
	rt->fd[3] = fds6;
	return 0;
}

int fg_rt_open_maps(struct fg_rt_maps *rt, struct fg_maps *m)
{
	int err = fg_rt_open(rt, m->fd[FGM_CTL], m->fd[FGM_RT4], m->fd[FGM_RT6]);

	if (!err && (err = fg_rt_open_scoped(rt, m->fd[FGM_RTS4], m->fd[FGM_RTS6])))
		fg_rt_close(rt);
	return err;
}

void fg_rt_close(struct fg_rt_maps *rt)
{
	fg_ctl_map_close(&rt->cm);
	rt->fd[0] = rt->fd[1] = rt->fd[2] = rt->fd[3] = -1;
}

bool fg_rt_is_expired(const struct fg_rt *v, __u64 now)
{
	return v->expires && now >= v->expires; /* the program: live while now < expires */
}

void fg_rt_prefix_str(const struct fg_rt_entry *e, char *buf, size_t len)
{
	char a[64];

	fg_addr_str(e->family, e->addr, a, sizeof(a));
	snprintf(buf, len, "%s/%u", a, e->plen);
}

static void key_of(const struct fg_rt_entry *e, union rt_key *k)
{
	memset(k, 0, sizeof(*k));
	if (e->scoped) {
		k->prefixlen = FG_RTS_ID_BITS + e->plen;
		if (e->family == 4) {
			k->s4.id = e->rule;
			memcpy(&k->s4.addr, e->addr, 4);
		} else {
			k->s6.id = e->rule;
			memcpy(k->s6.addr, e->addr, 16);
		}
		return;
	}
	k->prefixlen = e->plen;
	if (e->family == 4)
		memcpy(&k->k4.addr, e->addr, 4);
	else
		memcpy(k->k6.addr, e->addr, 16);
}

static void entry_of(int fi, const union rt_key *k, const struct fg_rt *v, bool expired,
		     struct fg_rt_entry *e)
{
	memset(e, 0, sizeof(*e));
	e->family = FAM6(fi) ? 6 : 4;
	e->plen = (__u8)(k->prefixlen - BASE(fi));
	e->scoped = SCOPED(fi);
	if (SCOPED(fi)) {
		e->rule = FAM6(fi) ? k->s6.id : k->s4.id;
		if (FAM6(fi))
			memcpy(e->addr, k->s6.addr, 16);
		else
			memcpy(e->addr, &k->s4.addr, 4);
	} else if (FAM6(fi)) {
		memcpy(e->addr, k->k6.addr, 16);
	} else {
		memcpy(e->addr, &k->k4.addr, 4);
	}
	e->expired = expired;
	e->val = *v;
}

/* NUL-terminated within cap, printable ASCII only (it is printed, logged
 * and written as JSON). */
static bool text_ok(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	if (n == cap)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

static int check_prefix(const struct fg_rt_entry *e, char *why)
{
	int bytes = e->family == 4 ? 4 : 16, max = e->family == 4 ? 32 : 128;
	__u8 m[16];

	if (e->family != 4 && e->family != 6) {
		fg_why(why, "address family %u: expected IPv4 or IPv6", e->family);
		return -EINVAL;
	}
	if (e->plen > max) {
		fg_why(why, "prefix length %u: IPv%u prefixes are 0..%d long", e->plen, e->family,
		       max);
		return -EINVAL;
	}
	memcpy(m, e->addr, 16);
	fg_prefix_mask(m, e->plen, bytes);
	if (memcmp(m, e->addr, bytes)) {
		fg_why(why, "host bits set past /%u", e->plen);
		return -EINVAL;
	}
	if (e->val.list != FG_LIST_ALLOW && e->val.list != FG_LIST_DENY) {
		fg_why(why, "list %u: expected allow or deny", e->val.list);
		return -EINVAL;
	}
	if (e->scoped && e->val.list != FG_LIST_DENY) {
		fg_why(why,
		       "a scoped entry is a deny entry (allow entries are for the whole address)");
		return -EINVAL;
	}
	if (e->scoped && e->rule >= FG_MAX_IDS) {
		fg_why(why, "rule id %u: ids are below %u", e->rule, FG_MAX_IDS);
		return -EINVAL;
	}
	return 0;
}

static int check_value(const struct fg_rt *v, __u64 now, char *why)
{
	if (v->expires && v->expires <= now) {
		fg_why(why, "the expiry is not in the future");
		return -EINVAL;
	}
	if (!text_ok(v->who, sizeof(v->who))) {
		fg_why(why, "who: at most %zu printable ASCII characters", sizeof(v->who) - 1);
		return -EINVAL;
	}
	if (!text_ok(v->comment, sizeof(v->comment))) {
		fg_why(why, "comment: at most %zu printable ASCII characters",
		       sizeof(v->comment) - 1);
		return -EINVAL;
	}
	return 0;
}

/*
 * The entry of exactly k's prefix. A lookup in an LPM trie returns the
 * longest entry covering k, so the one found is k's own only if its plen
 * (which every writer sets to the key's length) is k's. 0, -ENOENT or -errno.
 */
static int lookup_exact(int fd, int fi, const union rt_key *k, struct fg_rt *v)
{
	if (bpf_map_lookup_elem(fd, k, v))
		return -errno;
	return v->plen + BASE(fi) == k->prefixlen ? 0 : -ENOENT;
}

/*
 * Remove an expired entry that was read as *seen: read it again and delete
 * it only if it is unchanged. 1 removed, 0 gone already (whoever removed it
 * counted it), 2 changed (*seen is the new value), or -errno.
 */
static int remove_expired(struct fg_rt_maps *rt, int fi, const union rt_key *k, struct fg_rt *seen)
{
	struct fg_rt cur;
	int fd = rt->fd[fi], err;

	err = lookup_exact(fd, fi, k, &cur);
	if (err)
		return err == -ENOENT ? 0 : err;
	if (memcmp(&cur, seen, sizeof(cur))) {
		*seen = cur;
		return 2;
	}
	if (bpf_map_delete_elem(fd, k))
		return errno == ENOENT ? 0 : -errno;
	err = count(rt, fi, -1);
	return err ? err : 1;
}

static int key_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(union rt_key));
}

/* Sorted keys without duplicates; the new count. */
static size_t unique_keys(union rt_key *v, size_t n)
{
	size_t w = 0;

	for (size_t i = 0; i < n; i++)
		if (!w || key_cmp(&v[w - 1], &v[i]))
			v[w++] = v[i];
	return w;
}

/*
 * Every key of a family. The keys are read first and the values after, so
 * deleting does not disturb the walk; a walk that meets a key deleted by
 * someone else starts over (the trie's get_next_key does), so duplicates
 * are dropped and the walk is bounded.
 */
static int read_keys(int fd, union rt_key **out, size_t *nout)
{
	size_t cap = 2 * FG_RT_MAX + 2, n = 0;
	union rt_key *v = calloc(cap, sizeof(*v)), cur, last;
	bool first = true;
	int err = 0;

	*out = NULL;
	*nout = 0;
	if (!v)
		return -ENOMEM;
	for (size_t steps = 0;; steps++) {
		if (steps > 8 * FG_RT_MAX) {
			err = -EAGAIN; /* changing faster than it can be read */
			break;
		}
		memset(&cur, 0, sizeof(cur));
		if (bpf_map_get_next_key(fd, first ? NULL : &last, &cur)) {
			if (errno != ENOENT)
				err = -errno;
			break;
		}
		first = false;
		last = cur;
		if (n == cap) {
			qsort(v, n, sizeof(*v), key_cmp);
			n = unique_keys(v, n);
			if (n == cap) {
				err = -EOVERFLOW;
				break;
			}
		}
		v[n++] = cur;
	}
	if (err) {
		free(v);
		return err;
	}
	qsort(v, n, sizeof(*v), key_cmp);
	*nout = unique_keys(v, n);
	*out = v;
	return 0;
}

static int scan_push(struct rt_scan *s, int fi, const union rt_key *k, const struct fg_rt *v,
		     bool expired)
{
	if (!s->collect)
		return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct fg_rt_entry *nv = realloc(s->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->cap = cap;
	}
	entry_of(fi, k, v, expired, &s->v[s->n++]);
	return 0;
}

/*
 * Walk family fi: count the live entries, remove the expired ones, and
 * with s->collect, keep every entry met (the removed ones flagged expired).
 */
static int scan_family(struct rt_scan *s, struct fg_rt_maps *rt, int fi, __u64 now)
{
	union rt_key *keys;
	size_t nkeys;
	int err;

	err = read_keys(rt->fd[fi], &keys, &nkeys);
	if (err)
		return err;
	for (size_t i = 0; i < nkeys && !err; i++) {
		struct fg_rt v;
		int r = 2;

		err = lookup_exact(rt->fd[fi], fi, &keys[i], &v);
		if (err) {
			err = err == -ENOENT ? 0 : err;
			continue; /* deleted meanwhile */
		}
		/* an entry that changed under the removal is judged again, a few times */
		for (int tries = 0; r == 2 && tries < 4; tries++) {
			if (!fg_rt_is_expired(&v, now))
				break;
			r = remove_expired(rt, fi, &keys[i], &v);
		}
		if (r < 0) {
			err = r;
		} else if (r == 1) {
			s->removed++;
			err = scan_push(s, fi, &keys[i], &v, true);
		} else if (r == 2 && !fg_rt_is_expired(&v, now)) {
			s->live++;
			err = scan_push(s, fi, &keys[i], &v, false);
		}
	}
	free(keys);
	return err;
}

int fg_rt_add(struct fg_rt_maps *rt, const struct fg_rt_entry *e, __u64 now, bool *updated,
	      char *why)
{
	struct fg_rt_entry n = *e;
	struct rt_scan s = {};
	char p[80];
	union rt_key k;
	int fi, fd, err;

	*updated = false;
	n.val.plen = n.plen;
	n.expired = false;
	if ((err = check_prefix(&n, why)) || (err = check_value(&n.val, now, why)))
		return err;
	if (!rt->cm.ctl)
		return -EBADF;
	fi = fam_idx(&n);
	fd = rt->fd[fi];
	if (fd < 0) {
		fg_why(why, "no %s map here", map_name(fi));
		return -EBADF;
	}
	key_of(&n, &k);
	fg_rt_prefix_str(&n, p, sizeof(p));
	err = scan_family(&s, rt, fi, now);
	if (err) {
		fg_why(why, "reading %s: %s", map_name(fi), strerror(-err));
		return err;
	}
	for (int attempt = 0; attempt < 3; attempt++) {
		struct fg_rt cur;
		bool found;

		err = lookup_exact(fd, fi, &k, &cur);
		if (err && err != -ENOENT)
			return err;
		found = !err;
		if (found && fg_rt_is_expired(&cur, now)) {
			err = remove_expired(rt, fi, &k, &cur);
			if (err < 0)
				return err;
			continue; /* judge it again */
		}
		if (found && cur.list != n.val.list) {
			fg_why(why, "%s is on the runtime %s list: 'floodgate %s del %s' first", p,
			       list_name(cur.list), list_name(cur.list), p);
			return -EEXIST;
		}
		if (found) {
			if (bpf_map_update_elem(fd, &k, &n.val, BPF_EXIST)) {
				if (errno != ENOENT)
					return -errno;
				continue; /* deleted meanwhile: insert it */
			}
			*updated = true;
		} else {
			if (s.live >= FG_RT_MAX) {
				fg_why(why,
				       "the runtime lists hold %zu IPv%u entries already, the most "
				       "there may be (%u): delete some first",
				       s.live, n.family, FG_RT_MAX);
				return -ENOSPC;
			}
			/* counted before it is there, so the program never misses it */
			err = count(rt, fi, 1);
			if (err)
				return err;
			if (bpf_map_update_elem(fd, &k, &n.val, BPF_NOEXIST)) {
				err = -errno;
				count(rt, fi, -1);
				if (err == -EEXIST)
					continue; /* added meanwhile: update it */
				if (err == -ENOSPC)
					fg_why(why, "%s is full (%u entries)", map_name(fi),
					       FG_RT_MAX);
				return err;
			}
			*updated = false;
		}
		/* still there? a sweep that read the old entry may have removed ours */
		err = lookup_exact(fd, fi, &k, &cur);
		if (err != -ENOENT)
			return err;
	}
	fg_why(why,
	       "%s was removed again while being added (a concurrent delete or expiry "
	       "sweep); nothing is listed for it now",
	       p);
	return -EAGAIN;
}

int fg_rt_del(struct fg_rt_maps *rt, const struct fg_rt_entry *e, __u64 now, bool *was_expired,
	      char *why)
{
	struct fg_rt cur;
	union rt_key k;
	char p[80];
	int fi, err;

	if (was_expired)
		*was_expired = false;
	err = check_prefix(e, why);
	if (err)
		return err;
	if (!rt->cm.ctl)
		return -EBADF;
	fi = fam_idx(e);
	if (rt->fd[fi] < 0)
		return -EBADF;
	key_of(e, &k);
	fg_rt_prefix_str(e, p, sizeof(p));
	err = lookup_exact(rt->fd[fi], fi, &k, &cur);
	if (err && err != -ENOENT)
		return err;
	if (err) {
		fg_why(why, "%s is not on the runtime %s list", p, list_name(e->val.list));
		return -ENOENT;
	}
	if (cur.list != e->val.list) {
		fg_why(why, "%s is on the runtime %s list, not on the %s list", p,
		       list_name(cur.list), list_name(e->val.list));
		return -ENOENT;
	}
	if (bpf_map_delete_elem(rt->fd[fi], &k)) {
		if (errno != ENOENT)
			return -errno;
		fg_why(why, "%s was removed meanwhile (a concurrent delete or expiry sweep)", p);
		return -ENOENT;
	}
	if (was_expired)
		*was_expired = fg_rt_is_expired(&cur, now);
	return count(rt, fi, -1);
}

static int entry_cmp(const void *a, const void *b)
{
	const struct fg_rt_entry *x = a, *y = b;
	int c;

	if (x->family != y->family)
		return x->family - y->family;
	c = memcmp(x->addr, y->addr, 16);
	if (c || x->plen != y->plen)
		return c ? c : x->plen - y->plen;
	if (x->scoped != y->scoped)
		return x->scoped - y->scoped;
	return x->rule < y->rule ? -1 : x->rule > y->rule;
}

int fg_rt_list(struct fg_rt_maps *rt, __u32 list, __u64 now, struct fg_rt_entry **out, size_t *n,
	       size_t *n4, size_t *n6)
{
	struct rt_scan s = {};
	size_t live[2] = { 0, 0 }, w = 0;
	int err = 0;

	*out = NULL;
	*n = 0;
	if (!rt->cm.ctl)
		return -EBADF;
	s.collect = true;
	for (int fi = 0; fi < 4 && !err; fi++) {
		size_t before = s.live;

		if (rt->fd[fi] < 0)
			continue;
		err = scan_family(&s, rt, fi, now);
		if (fi < 2)
			live[fi] = s.live - before;
	}
	if (err) {
		free(s.v);
		return err;
	}
	for (size_t i = 0; i < s.n; i++)
		if (list == FG_LIST_NONE || s.v[i].val.list == list)
			s.v[w++] = s.v[i];
	if (w) {
		qsort(s.v, w, sizeof(*s.v), entry_cmp);
		*out = s.v;
	} else {
		free(s.v);
	}
	*n = w;
	if (n4)
		*n4 = live[0];
	if (n6)
		*n6 = live[1];
	return 0;
}

int fg_rt_gc(struct fg_rt_maps *rt, __u64 now, unsigned int *removed)
{
	struct rt_scan s = {};
	int err = 0;

	if (!rt->cm.ctl)
		return -EBADF;
	for (int fi = 0; fi < 4 && !err; fi++)
		if (rt->fd[fi] >= 0)
			err = scan_family(&s, rt, fi, now);
	if (removed)
		*removed = s.removed;
	return err;
}

int fg_rt_gc_maps(struct fg_maps *m, __u64 now, unsigned int *removed)
{
	struct fg_rt_maps rt;
	struct fg_ctl c;
	int err;

	if (removed)
		*removed = 0;
	err = fg_rt_open_maps(&rt, m);
	if (err == -ENODATA)
		return 0; /* not stamped yet: no entries either */
	if (err)
		return err;
	err = fg_ctl_snapshot(&rt.cm, &c);
	if (!err && (c.rt_active || c.rt_scoped))
		err = fg_rt_gc(&rt, now, removed);
	fg_rt_close(&rt);
	return err;
}
