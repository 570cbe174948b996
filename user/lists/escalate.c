// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Escalation: throttled too long -> the runtime deny list, bounded; see escalate.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lists/escalate.h"
#include "maps/ctl.h"
#include "maps/fgmaps.h"
#include "lib/log.h"
#include "policy/policy.h"
#include "lib/prefix.h"
#include "lib/safefile.h"
#include "lib/sysutil.h"

struct step {
	const struct fg_throttle *t;
	struct fg_esc *x;
	struct fg_esc_view *v;
	const struct fg_esc_ops *ops;
	size_t added, checked;
	bool full[2]; /* an add met a full runtime list (IPv4, IPv6) this step */
};

/* At most FG_ESC_LINES_PER_TICK lines a tick; the rest counted. */
#define elog(x, ...) \
	fg_log_budget(&(x)->lines, FG_ESC_LINES_PER_TICK, &(x)->suppressed, __VA_ARGS__)

bool fg_esc_overlap(const __u8 *a, int alen, const __u8 *b, int blen, int bytes)
{
	__u8 x[16] = {}, y[16] = {};
	int l = alen < blen ? alen : blen;

	memcpy(x, a, (size_t)bytes);
	memcpy(y, b, (size_t)bytes);
	fg_prefix_mask(x, l, bytes);
	fg_prefix_mask(y, l, bytes);
	return !memcmp(x, y, (size_t)bytes);
}

bool fg_esc_is_escalated(const struct fg_rt *r)
{
	return r->list == FG_LIST_DENY && !strncmp(r->who, FG_ESC_WHO, sizeof(r->who));
}

size_t fg_esc_count_live(const struct fg_rt_entry *v, size_t n)
{
	size_t live = 0;

	for (size_t i = 0; i < n; i++)
		live += !v[i].expired && fg_esc_is_escalated(&v[i].val);
	return live;
}

/* The deny entry a tracked source would get. */
static void entry_for(const struct fg_tracked *e, const struct fg_esc_rule *r,
		      const struct fg_esc_view *v, struct fg_rt_entry *out)
{
	int bytes = e->family == 4 ? 4 : 16;
	__u64 secs = (e->last_ns - e->since) / 1000000000ull;

	memset(out, 0, sizeof(*out));
	out->family = e->family;
	out->plen = e->family == 4 ? r->plen4 : r->plen6;
	memcpy(out->addr, e->addr, (size_t)bytes);
	fg_prefix_mask(out->addr, out->plen, bytes);
	out->scoped = !r->whole;
	out->rule = e->rule;
	out->val.list = FG_LIST_DENY;
	out->val.plen = out->plen;
	out->val.expires = v->now + r->for_ns;
	out->val.created = v->wall;
	snprintf(out->val.who, sizeof(out->val.who), "%s", FG_ESC_WHO);
	snprintf(out->val.comment, sizeof(out->val.comment),
		 "escalated: rule %.24s throttled %llus", r->name, (unsigned long long)secs);
}

/* Refused (counted once a stretch); *said: this reason's line was logged. */
static void refuse(struct step *s, struct fg_tracked *e, const char *p, const char *rule,
		   const char *why, bool *said)
{
	if (e->esc != FG_ESC_REFUSED) {
		s->x->n.refused++;
		e->esc = FG_ESC_REFUSED;
	}
	if (!*said) {
		elog(s->x,
		     "escalation: refusing %s (rule %s) and further escalations: %s "
		     "(counted as refused)",
		     p, rule, why);
		*said = true;
	}
}

/* Nothing to do for e now? The cheap tests, before any lookup. */
static bool idle(const struct step *s, const struct fg_tracked *e, const struct fg_esc_rule *r)
{
	const struct fg_esc_view *v = s->v;

	if (!r->on || r->gen != e->gen || e->esc == FG_ESC_DONE || e->esc == FG_ESC_ALLOWED ||
	    v->bypass)
		return true;
	/* throttled for after, first drops to the last, and still dropping: new drops
	 * (an event an epoch, ~1 s) within the quiet window */
	if (e->last_ns < e->since || e->last_ns - e->since < r->after_ns ||
	    s->t->tick - e->last_grow >= FG_THROTTLE_QUIET_TICKS)
		return true;
	if (e->esc == FG_ESC_SHADOW && r->shadow)
		return true; /* counted already */
	/* refused: tried again only when there is room */
	return e->esc == FG_ESC_REFUSED &&
	       (v->live >= v->max || s->full[e->family == 6] || s->added >= FG_ESC_ADDS_PER_TICK);
}

static void decide(void *arg, struct fg_tracked *e)
{
	struct step *s = arg;
	struct fg_esc_view *v = s->v;
	const struct fg_esc_rule *r;
	struct fg_rt_entry ent;
	char p[80], why[FG_WHY_LEN] = "";
	double secs;
	int err;

	if (e->rule >= FG_MAX_IDS || idle(s, e, r = &v->rule[e->rule]) ||
	    s->checked >= FG_ESC_CHECKS_PER_TICK)
		return; /* over the budget: the next step looks again */
	s->checked++;
	entry_for(e, r, v, &ent);
	fg_rt_prefix_str(&ent, p, sizeof(p));
	secs = (double)(e->last_ns - e->since) / 1e9;
	if (s->ops->allowed(s->ops->arg, &ent)) {
		e->esc = FG_ESC_ALLOWED;
		elog(s->x, "not escalating %s (rule %s): it overlaps an allow entry", p, r->name);
		return;
	}
	if (r->shadow) {
		if (e->esc != FG_ESC_SHADOW) {
			s->x->n.shadow++;
			e->esc = FG_ESC_SHADOW;
			elog(s->x,
			     "would escalate %s (rule %s, shadow): throttled for %.0f s; "
			     "nothing added",
			     p, r->name, secs);
		}
		return;
	}
	if (s->ops->listed(s->ops->arg, &ent)) {
		e->esc = FG_ESC_DONE; /* an operator's entry, or ours from before: left as it is */
		return;
	}
	if (v->live >= v->max) {
		char w[64];

		snprintf(w, sizeof(w), "at the cap of %u escalated entries", v->max);
		refuse(s, e, p, r->name, w, &s->x->at_cap);
		return;
	}
	if (s->full[e->family == 6] || s->added >= FG_ESC_ADDS_PER_TICK)
		return; /* not refused: tried again next step */
	err = s->ops->add(s->ops->arg, &ent, why);
	if (err == -EEXIST) {
		e->esc = FG_ESC_DONE; /* listed meanwhile */
		return;
	}
	if (err == -ENOSPC) {
		s->full[e->family == 6] = true;
		refuse(s, e, p, r->name, why[0] ? why : "the runtime list is full",
		       &s->x->list_full);
		return;
	}
	if (err) {
		s->x->n.failed++;
		elog(s->x, "escalating %s (rule %s): %s (tried again next second)", p, r->name,
		     why[0] ? why : strerror(-err));
		return;
	}
	e->esc = FG_ESC_DONE;
	s->x->list_full = false;
	v->live++;
	s->added++;
	s->x->n.escalated++;
	elog(s->x,
	     "escalating %s (rule %s): throttled for %.0f s; on the runtime deny list for "
	     "%.6g s, %s (%zu of at most %u escalated entries)",
	     p, r->name, secs, r->for_ns / 1e9,
	     r->whole ? "the whole address" : "for this rule's traffic only", v->live, v->max);
}

size_t fg_esc_step(struct fg_esc *x, struct fg_throttle *t, struct fg_esc_view *v,
		   const struct fg_esc_ops *ops)
{
	struct step s = { .t = t, .x = x, .v = v, .ops = ops };

	x->lines = 0;
	if (x->suppressed) {
		pr_info("escalation: suppressed %llu messages in the last second",
			(unsigned long long)x->suppressed);
		x->suppressed = 0;
	}
	if (v->live < v->max)
		x->at_cap = false;
	fg_throttle_each(t, decide, &s);
	x->n.live = v->live;
	x->n.max = v->max;
	return s.added;
}

/* --- prefixes, sorted as fg_rt_list sorts ----------------------------------------- */

/* Prefixes sorted by family, address, length (as fg_rt_list sorts). */
int fg_esc_pfx_cmp(const struct fg_esc_pfx *x, const struct fg_esc_pfx *y)
{
	int c;

	if (x->family != y->family)
		return x->family - y->family;
	c = memcmp(x->addr, y->addr, 16);
	if (c || x->plen != y->plen)
		return c ? c : x->plen - y->plen;
	return x->scope < y->scope ? -1 : x->scope > y->scope;
}

int fg_esc_pfx_qcmp(const void *a, const void *b)
{
	return fg_esc_pfx_cmp(a, b);
}

/* The first index of v (sorted, n) not below k. */
size_t fg_esc_pfx_lower_bound(const struct fg_esc_pfx *v, size_t n, const struct fg_esc_pfx *k)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (fg_esc_pfx_cmp(&v[mid], k) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool fg_esc_pfx_overlap(const struct fg_esc_pfx *v, size_t n, const struct fg_esc_pfx *e)
{
	int bytes = e->family == 4 ? 4 : 16;
	struct fg_esc_pfx k = *e;
	size_t i;

	k.scope = 0; /* v: whole-address prefixes */
	i = fg_esc_pfx_lower_bound(v, n, &k);

	/* inside e: canonical prefixes in e's range sort from e's own key on */
	if (i < n && v[i].family == e->family && v[i].plen >= e->plen &&
	    fg_esc_overlap(v[i].addr, v[i].plen, e->addr, e->plen, bytes))
		return true;
	/* covering e: one exact search per shorter length */
	for (int l = 0; l < e->plen; l++) {
		memcpy(k.addr, e->addr, 16);
		fg_prefix_mask(k.addr, l, bytes);
		k.plen = (__u8)l;
		i = fg_esc_pfx_lower_bound(v, n, &k);
		if (i < n && !fg_esc_pfx_cmp(&v[i], &k))
			return true;
	}
	return false;
}

/* --- the state file the daemon writes (daemon/escd.c) and status reads ------------ */

void fg_escd_state_path(const char *pin_dir, char *buf, size_t len)
{
	const char *dir = getenv("FLOODGATE_RUN_DIR");

	fg_state_path(dir && *dir ? dir : FG_ESC_RUN_DIR, "escalate", pin_dir, buf, len);
}

int fg_escd_state_read(const char *path, struct fg_escd_state *st)
{
	char key[32];
	unsigned long long val;
	int fields = 0;
	/* a FIFO or a device at the path must not block `floodgate status` */
	FILE *f = fg_fopen_regular(path, NULL);
	int lines = 0;

	if (!f)
		return -errno;
	memset(st, 0, sizeof(*st));
	while (lines++ < 64 && fscanf(f, "%31s %llu", key, &val) == 2) {
		fields++;
		if (!strcmp(key, "pid"))
			st->pid = (__u32)val;
		else if (!strcmp(key, "rules"))
			st->n.rules = (__u32)val;
		else if (!strcmp(key, "max"))
			st->n.max = (__u32)val;
		else if (!strcmp(key, "live"))
			st->n.live = (size_t)val;
		else if (!strcmp(key, "escalated"))
			st->n.escalated = val;
		else if (!strcmp(key, "refused"))
			st->n.refused = val;
		else if (!strcmp(key, "shadow"))
			st->n.shadow = val;
		else if (!strcmp(key, "failed"))
			st->n.failed = val;
		else
			fields--;
	}
	fclose(f);
	return fields == 8 && st->pid ? 0 : -EPROTO;
}
