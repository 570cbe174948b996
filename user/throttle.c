// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The throttle log: which sources start and stop being throttled (see throttle.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "log.h"
#include "throttle.h"
#include "sources.h"
#include "sysutil.h"

int fg_throttle_init(struct fg_throttle *t, size_t max)
{
	memset(t, 0, sizeof(*t));
	t->cur = calloc(max, sizeof(*t->cur));
	t->next = calloc(max, sizeof(*t->next));
	if (!t->cur || !t->next) {
		fg_throttle_free(t);
		return -ENOMEM;
	}
	t->max = max;
	return 0;
}

void fg_throttle_free(struct fg_throttle *t)
{
	free(t->cur);
	free(t->next);
	t->cur = t->next = NULL;
	t->n = t->max = 0;
}

/* Order of the keys: family, rule, generation, address. */
static int cmp_key(const void *x, const void *y)
{
	const struct fg_tracked *a = x, *b = y;

	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	if (a->rule != b->rule)
		return a->rule < b->rule ? -1 : 1;
	if (a->gen != b->gen)
		return a->gen < b->gen ? -1 : 1;
	return memcmp(a->addr, b->addr, sizeof(a->addr));
}

static const struct fg_tracked *find(const struct fg_tracked *sorted, size_t n,
				     const struct fg_tracked *key)
{
	return n ? bsearch(key, sorted, n, sizeof(*sorted), cmp_key) : NULL;
}

static void __attribute__((format(printf, 2, 3))) tlog(struct fg_throttle *t, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (t->lines >= FG_THROTTLE_LINES_PER_TICK) {
		t->suppressed++;
		return;
	}
	t->lines++;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pr_info("%s", msg);
}

static const char *rule_name(const struct fg_name *names, __u16 id, __u16 gen)
{
	if (id < FG_MAX_IDS && names[id].in_use && names[id].gen == gen)
		return names[id].name;
	return "(removed rule)";
}

/* Did e (this tick's state of s; old: last tick's, or NULL) start or stop? */
static void judge(struct fg_throttle *t, struct fg_tracked *e, const struct fg_tracked *old,
		  const struct fg_source *s, const struct fg_name *names)
{
	char a[INET6_ADDRSTRLEN];

	if (!old || s->drops > old->drops) {
		e->last_grow = t->tick;
		if (e->throttled)
			return;
		e->throttled = 1;
		fg_addr_str(s->family, s->addr, a, sizeof(a));
		tlog(t, "throttling %s (rule %s)", a, rule_name(names, s->rule, s->gen));
	} else if (e->throttled && !s->limited && t->tick - e->last_grow >= FG_THROTTLE_QUIET_TICKS) {
		e->throttled = 0;
		fg_addr_str(s->family, s->addr, a, sizeof(a));
		tlog(t, "no longer throttling %s (rule %s), ~%llu drops sampled", a,
		     rule_name(names, s->rule, s->gen), (unsigned long long)s->drops);
	}
}

/* Throttled sources of the last tick whose bucket is gone (evicted or expired). */
static void log_expired(struct fg_throttle *t, size_t kept, const struct fg_name *names)
{
	char a[INET6_ADDRSTRLEN];

	for (size_t i = 0; i < t->n; i++) {
		const struct fg_tracked *e = &t->cur[i];

		if (!e->throttled || find(t->next, kept, e))
			continue;
		fg_addr_str(e->family, e->addr, a, sizeof(a));
		tlog(t, "no longer throttling %s (rule %s): bucket expired", a,
		     rule_name(names, e->rule, e->gen));
	}
}

static void begin_tick(struct fg_throttle *t)
{
	t->tick++;
	t->lines = 0;
	if (t->suppressed) {
		pr_info("throttle log: suppressed %llu messages in the last second",
			(unsigned long long)t->suppressed);
		t->suppressed = 0;
	}
}

void fg_throttle_scan(struct fg_throttle *t, const struct fg_source *src, size_t n,
		      const struct fg_name *names)
{
	struct fg_tracked *sw;
	size_t kept = 0;

	begin_tick(t);
	for (size_t i = 0; i < n; i++) {
		const struct fg_source *s = &src[i];
		const struct fg_tracked *old;
		struct fg_tracked *e;

		if (kept >= t->max) {
			if (!t->full_warned)
				pr_warn("throttle log: more than %zu sources with drops; "
					"tracking the first %zu", t->max, t->max);
			t->full_warned = true;
			break;
		}
		e = &t->next[kept++];
		memset(e, 0, sizeof(*e));
		e->family = s->family;
		e->rule = s->rule;
		e->gen = s->gen;
		memcpy(e->addr, s->addr, sizeof(e->addr));
		old = find(t->cur, t->n, e);
		e->drops = s->drops;
		e->throttled = old ? old->throttled : 0;
		e->last_grow = old ? old->last_grow : t->tick;
		if (t->primed)
			judge(t, e, old, s, names);
	}
	qsort(t->next, kept, sizeof(*t->next), cmp_key);
	if (t->primed)
		log_expired(t, kept, names);
	sw = t->cur;
	t->cur = t->next;
	t->next = sw;
	t->n = kept;
	t->primed = true;
}
