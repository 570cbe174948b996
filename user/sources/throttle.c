// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The throttle log: which sources start and stop being throttled (see throttle.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/log.h"
#include "sources/throttle.h"
#include "lib/sysutil.h"

int fg_throttle_init(struct fg_throttle *t, size_t max)
{
	size_t ns = 16;

	memset(t, 0, sizeof(*t));
	while (ns < 2 * max) /* at most half full: short probes */
		ns *= 2;
	t->slot = calloc(ns, sizeof(*t->slot));
	if (!t->slot)
		return -ENOMEM;
	t->nslots = ns;
	t->max = max;
	return 0;
}

void fg_throttle_free(struct fg_throttle *t)
{
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

static bool same_key(const struct fg_tracked *e, __u8 family, __u16 rule, __u16 gen,
		     const __u8 *addr)
{
	return e->family == family && e->rule == rule && e->gen == gen &&
	       !memcmp(e->addr, addr, sizeof(e->addr));
}

/* FNV-1a over the key, then a murmur3 finaliser for the low bits. */
static size_t home_of(const struct fg_throttle *t, __u8 family, __u16 rule, __u16 gen,
		      const __u8 *addr)
{
	__u64 h = 0xcbf29ce484222325ull;
	__u8 k[21];

	memcpy(k, addr, 16);
	k[16] = family;
	memcpy(k + 17, &rule, 2);
	memcpy(k + 19, &gen, 2);
	for (size_t i = 0; i < sizeof(k); i++)
		h = (h ^ k[i]) * 0x100000001b3ull;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return (size_t)h & (t->nslots - 1);
}

/* The slot holding the key, or the empty one where it would go. */
static struct fg_tracked *probe(struct fg_throttle *t, __u8 family, __u16 rule, __u16 gen,
				const __u8 *addr)
{
	size_t i = home_of(t, family, rule, gen, addr);

	while (t->slot[i].used && !same_key(&t->slot[i], family, rule, gen, addr))
		i = (i + 1) & (t->nslots - 1);
	return &t->slot[i];
}

/* Empty slot i, shifting back the entries after it that probed past it. */
static void forget(struct fg_throttle *t, size_t i)
{
	size_t mask = t->nslots - 1, j = i;

	t->slot[i].used = 0;
	t->n--;
	for (;;) {
		struct fg_tracked *e;
		size_t home;

		j = (j + 1) & mask;
		e = &t->slot[j];
		if (!e->used)
			return;
		home = home_of(t, e->family, e->rule, e->gen, e->addr);
		/* e may move to i iff i lies on its probe path, home .. j */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			t->slot[i] = *e;
			e->used = 0;
			i = j;
		}
	}
}

/* At most FG_THROTTLE_LINES_PER_TICK lines a tick; the rest counted. */
#define tlog(t, ...) \
	fg_log_budget(&(t)->lines, FG_THROTTLE_LINES_PER_TICK, &(t)->suppressed, __VA_ARGS__)

static const char *rule_name(const struct fg_name *names, __u16 id, __u16 gen)
{
	if (id < FG_MAX_IDS && names[id].in_use && names[id].gen == gen)
		return names[id].name;
	return "(removed rule)";
}

void fg_throttle_begin(struct fg_throttle *t)
{
	t->tick++;
	t->lines = 0;
	if (t->suppressed) {
		pr_info("throttle log: suppressed %llu messages in the last second",
			(unsigned long long)t->suppressed);
		t->suppressed = 0;
	}
}

void fg_throttle_event(struct fg_throttle *t, const struct fg_tev *ev, const struct fg_name *names)
{
	struct fg_tracked *e;
	char a[INET6_ADDRSTRLEN];

	if (ev->family != 4 && ev->family != 6)
		return;
	e = probe(t, ev->family, ev->rule, ev->gen, ev->addr);
	if (e->used) {
		if (ev->drops > e->drops) {
			e->drops = ev->drops;
			e->last_grow = t->tick;
			e->last_ns = t->now_ns;
		}
		return;
	}
	if (t->n >= t->max) {
		if (!t->full_warned)
			pr_warn("throttle log: more than %zu sources with drops; "
				"tracking the first %zu",
				t->max, t->max);
		t->full_warned = true;
		t->untracked++;
		return;
	}
	memset(e, 0, sizeof(*e));
	e->used = 1;
	e->family = ev->family;
	e->rule = ev->rule;
	e->gen = ev->gen;
	memcpy(e->addr, ev->addr, sizeof(e->addr));
	e->drops = ev->drops;
	e->last_grow = e->last_check = t->tick;
	e->since = e->last_ns = t->now_ns;
	t->n++;
	fg_addr_str(e->family, e->addr, a, sizeof(a));
	tlog(t, "throttling %s (rule %s)", a, rule_name(names, e->rule, e->gen));
}

/* One lookup of slot i; true when it stopped and was forgotten. */
static bool recheck_one(struct fg_throttle *t, size_t i, fg_throttle_lookup_fn lookup, void *arg,
			const struct fg_name *names)
{
	struct fg_tracked *e = &t->slot[i];
	struct fg_source s = { .family = e->family, .rule = e->rule, .gen = e->gen };
	char a[INET6_ADDRSTRLEN];
	int err;

	memcpy(s.addr, e->addr, sizeof(s.addr));
	e->last_check = t->tick;
	err = lookup(arg, &s);
	if (err && err != -ENOENT)
		return false;
	fg_addr_str(e->family, e->addr, a, sizeof(a));
	if (err == -ENOENT) {
		tlog(t, "no longer throttling %s (rule %s): bucket expired", a,
		     rule_name(names, e->rule, e->gen));
	} else if (s.drops > e->drops) {
		e->drops = s.drops;
		e->last_grow = t->tick;
		e->last_ns = t->now_ns;
		return false;
	} else if (s.limited) {
		return false;
	} else {
		tlog(t, "no longer throttling %s (rule %s), ~%llu drops sampled", a,
		     rule_name(names, e->rule, e->gen), (unsigned long long)s.drops);
	}
	forget(t, i);
	return true;
}

size_t fg_throttle_recheck(struct fg_throttle *t, size_t budget, fg_throttle_lookup_fn lookup,
			   void *arg, const struct fg_name *names)
{
	size_t done = 0, i = t->cursor;

	/* one lap at most; a forgotten slot is visited again (another entry may have moved in) */
	for (size_t seen = 0; seen < t->nslots && done < budget && t->n; seen++) {
		struct fg_tracked *e = &t->slot[i];

		if (e->used && e->last_check != t->tick &&
		    t->tick - e->last_grow >= FG_THROTTLE_QUIET_TICKS) {
			done++;
			if (recheck_one(t, i, lookup, arg, names))
				continue;
		}
		i = (i + 1) & (t->nslots - 1);
	}
	t->cursor = i;
	return done;
}

void fg_throttle_each(struct fg_throttle *t, void (*fn)(void *arg, struct fg_tracked *e), void *arg)
{
	for (size_t i = 0, seen = 0; i < t->nslots && seen < t->n; i++)
		if (t->slot[i].used) {
			seen++;
			fn(arg, &t->slot[i]);
		}
}
