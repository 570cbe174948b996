// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* What a reload changed against what was in force (see reload_log.h). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "maps/ctl.h"
#include "lib/log.h"
#include "daemon/reload_log.h"

static const char *action_str(int a)
{
	return a == FG_ACT_PASS ? "pass" : a == FG_ACT_DROP ? "drop" : "limit";
}

static const char *mode_str(unsigned int m)
{
	return m == FG_MODE_SHADOW ? "shadow" : "enforce";
}

static const char *verdict_str(int v)
{
	return v ? "drop" : "pass";
}

static bool limit_eq(const struct fg_limit *a, const struct fg_limit *b)
{
	return a->inc == b->inc && a->tau == b->tau;
}

/* A compiled limit as written: cost units per second, and the burst. */
static double limit_rate(const struct fg_limit *l)
{
	return l->inc ? (double)FG_TU_PER_SEC / (double)l->inc : 0;
}

static double limit_burst(const struct fg_limit *l)
{
	return l->inc ? (double)l->tau / (double)l->inc : 0;
}

static int mask_plen(const void *mask, int bytes)
{
	const __u8 *b = mask;
	int n = 0;

	for (int i = 0; i < bytes; i++)
		n += __builtin_popcount(b[i]);
	return n;
}

static bool match_eq(const struct fg_match *a, const struct fg_match *b)
{
	return a->sport_lo == b->sport_lo && a->sport_hi == b->sport_hi &&
	       a->dport_lo == b->dport_lo && a->dport_hi == b->dport_hi && a->sets == b->sets &&
	       a->proto == b->proto && a->tcp_mask == b->tcp_mask && a->tcp_val == b->tcp_val &&
	       a->icmp_type == b->icmp_type && a->flags == b->flags && a->rule == b->rule;
}

static bool matches_eq(const struct fg_policy *a, const struct fg_policy *b)
{
	for (int c = 0; c < FG_NCLASS; c++) {
		if (a->nmatch[c] != b->nmatch[c])
			return false;
		for (int i = 0; i < a->nmatch[c] && i < FG_MAX_MATCH; i++)
			if (!match_eq(&a->match[c][i], &b->match[c][i]))
				return false;
	}
	return true;
}

/* --- rules -------------------------------------------------------------------------- */

/* The name of rule r of the policy in force, or NULL when fg_names no longer has it. */
static const char *was_name(const struct fg_inforce *w, const struct fg_rule *r)
{
	const struct fg_name *nm = r->id < FG_MAX_IDS ? &w->names[r->id] : NULL;

	return nm && nm->in_use && nm->gen == r->gen ? nm->name : NULL;
}

static int was_index(const struct fg_inforce *w, const char *name)
{
	for (__u32 j = 0; j < w->pol.nrules && j < FG_MAX_RULES; j++) {
		const char *nm = was_name(w, &w->pol.rules[j]);

		if (nm && !strncmp(nm, name, FG_NAME_LEN))
			return (int)j;
	}
	return -1;
}

static int new_index(const struct fg_config *c, const char *name)
{
	for (__u32 i = 0; i < c->pol.nrules && i < FG_MAX_RULES; i++)
		if (!strncmp(c->rules[i].name, name, FG_NAME_LEN))
			return (int)i;
	return -1;
}

static int limit_diff(const char *what, const char *rule, const char *lname,
		      const struct fg_limit *a, const struct fg_limit *b)
{
	if (limit_eq(a, b))
		return 0;
	if (!a->inc)
		pr_info("%s: rule %s: %s added: rate %g burst %g", what, rule, lname, limit_rate(b),
			limit_burst(b));
	else if (!b->inc)
		pr_info("%s: rule %s: %s removed (was rate %g burst %g)", what, rule, lname,
			limit_rate(a), limit_burst(a));
	else
		pr_info("%s: rule %s: %s rate %g -> %g, burst %g -> %g", what, rule, lname,
			limit_rate(a), limit_rate(b), limit_burst(a), limit_burst(b));
	return 1;
}

/* A rule in both: what changed in it; returns how many fields. */
static int rule_diff(const char *what, const char *nm, const struct fg_rule * or,
		     const struct fg_rule *nr)
{
	int n = limit_diff(what, nm, "per_source", & or->src, &nr->src) +
		limit_diff(what, nm, "aggregate", & or->agg, &nr->agg) +
		limit_diff(what, nm, "overflow", & or->ovf, &nr->ovf);

	if (or->mask4 != nr->mask4 || memcmp(or->mask6, nr->mask6, sizeof(or->mask6))) {
		pr_info("%s: rule %s: source grouping /%d,/%d -> /%d,/%d", what, nm,
			mask_plen(& or->mask4, 4), mask_plen(or->mask6, 16),
			mask_plen(&nr->mask4, 4), mask_plen(nr->mask6, 16));
		n++;
	}
	if (or->action != nr->action) {
		pr_info("%s: rule %s: action %s -> %s", what, nm, action_str(or->action),
			action_str(nr->action));
		n++;
	}
	if (or->mode != nr->mode) {
		pr_info("%s: rule %s: mode %s -> %s", what, nm, mode_str(or->mode),
			mode_str(nr->mode));
		n++;
	}
	if (or->cost != nr->cost) {
		pr_info("%s: rule %s: cost %s -> %s", what, nm, or->cost ? "bytes" : "packets",
			nr->cost ? "bytes" : "packets");
		n++;
	}
	if (or->on_full != nr->on_full) {
		pr_info("%s: rule %s: on_full %u -> %u", what, nm, or->on_full, nr->on_full);
		n++;
	}
	if (or->conn_cap != nr->conn_cap || or->conn_ttl_ms != nr->conn_ttl_ms) {
		pr_info("%s: rule %s: concurrency %u -> %u connections, handshake_timeout %u -> %u ms "
			"(a lower cap refuses new connections until the count is under it; none is cut)",
			what, nm, or->conn_cap, nr->conn_cap, or->conn_ttl_ms, nr->conn_ttl_ms);
		n++;
	}
	return n;
}

/* Rule index ri has syn_auth (fg_synauth.rules, a bit per index). */
static bool sa_rule(const struct fg_synauth *sa, __u32 ri)
{
	return ri / 64 < FG_SA_RULE_WORDS && (sa->rules[ri / 64] >> (ri % 64) & 1);
}

static const char *sa_way_str(unsigned int w)
{
	return w == FG_SA_WAY_HANDOFF	 ? "handoff" :
	       w == FG_SA_WAY_RETRANSMIT ? "retransmit" :
					   "off";
}

/* syn_auth's shared settings (a rule's own switch: rules_diff); returns how many. */
static int sa_diff(const char *what, const struct fg_synauth *a, const struct fg_synauth *b)
{
	int n = 0;

	if (a->way != b->way) {
		pr_info("%s: syn_auth way %s -> %s", what, sa_way_str(a->way), sa_way_str(b->way));
		n++;
	}
	if (a->way == FG_SA_WAY_OFF || b->way == FG_SA_WAY_OFF)
		return n; /* the settings of a policy without syn_auth are not read */
	if (a->verified_ns != b->verified_ns) {
		pr_info("%s: syn_auth verified_for %g s -> %g s", what, a->verified_ns / 1e9,
			b->verified_ns / 1e9);
		n++;
	}
	if (!limit_eq(&a->reply, &b->reply) || !limit_eq(&a->reply_pfx, &b->reply_pfx)) {
		pr_info("%s: syn_auth reply cap %g/s burst %g -> %g/s burst %g, per prefix "
			"%g/s -> %g/s",
			what, limit_rate(&a->reply), limit_burst(&a->reply), limit_rate(&b->reply),
			limit_burst(&b->reply), limit_rate(&a->reply_pfx),
			limit_rate(&b->reply_pfx));
		n++;
	}
	return n;
}

/* Rules added, moved, changed and removed; returns how many. */
static int rules_diff(const char *what, const struct fg_inforce *w, const struct fg_config *n)
{
	int changes = 0;

	for (__u32 i = 0; i < n->pol.nrules && i < FG_MAX_RULES; i++) {
		const struct fg_rule_src *ns = &n->rules[i];
		const struct fg_rule *nr = &n->pol.rules[i];
		int j = was_index(w, ns->name);
		__u32 ovr;

		if (j < 0) {
			pr_info("%s: rule %s added (id %u, line %d)", what, ns->name, nr->id,
				ns->line);
			changes++;
			continue;
		}
		if (i != (__u32)j) {
			pr_info("%s: rule %s moved from position %d to %u", what, ns->name, j + 1,
				i + 1);
			changes++;
		}
		changes += rule_diff(what, ns->name, &w->pol.rules[j], nr);
		if (sa_rule(&w->pol.sa, (__u32)j) != sa_rule(&n->pol.sa, i)) {
			pr_info("%s: rule %s: syn_auth %s -> %s", what, ns->name,
				sa_rule(&w->pol.sa, (__u32)j) ? "cookie" : "off",
				sa_rule(&n->pol.sa, i) ? "cookie" : "off");
			changes++;
		}
		ovr = fg_ctl_mode_rule_ovr(&w->ctl, nr->id);
		if (ovr && (ovr == FG_OVR_SHADOW) != (nr->mode == FG_MODE_SHADOW))
			pr_info("%s: rule %s: a CLI override keeps it in %s (the file says %s; "
				"'floodgate mode file --rule %s' returns to the file)",
				what, ns->name, ovr == FG_OVR_SHADOW ? "shadow" : "enforce",
				mode_str(nr->mode), ns->name);
	}
	for (__u32 j = 0; j < w->pol.nrules && j < FG_MAX_RULES; j++) {
		const char *nm = was_name(w, &w->pol.rules[j]);

		if (!nm || new_index(n, nm) >= 0)
			continue;
		pr_info("%s: rule %s removed (its counters and buckets are dropped)", what, nm);
		changes++;
	}
	return changes;
}

/* --- prefixes ----------------------------------------------------------------------- */

static int pfx_cmp(const void *x, const void *y)
{
	const struct fg_pfx_entry *a = x, *b = y;
	int c;

	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	c = memcmp(a->addr, b->addr, a->family == 6 ? 16 : 4);
	if (c)
		return c;
	return (int)a->plen - (int)b->plen;
}

static bool pfx_sorted(const struct fg_pfx_entry *v, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (pfx_cmp(&v[i - 1], &v[i]) > 0)
			return false;
	return true;
}

static void pfx_families(const struct fg_pfx_entry *v, size_t n, size_t *n4, size_t *n6)
{
	*n4 = *n6 = 0;
	for (size_t i = 0; i < n; i++)
		(*(v[i].family == 6 ? n6 : n4))++;
}

/* Entries added, removed and changed (same prefix, other list or sets),
 * by a merge of the two sorted lists; 1 if any, 0 if none, -1 out of memory. */
static int prefixes_diff(const char *what, struct fg_inforce *w, const struct fg_config *n)
{
	const struct fg_pfx_entry *nv = n->pfx;
	struct fg_pfx_entry *copy = NULL;
	size_t i = 0, j = 0, add = 0, del = 0, chg = 0, o4, o6, n4, n6;

	qsort(w->pfx, w->n_pfx, sizeof(*w->pfx), pfx_cmp);
	if (!pfx_sorted(nv, n->n_pfx)) {
		copy = malloc(n->n_pfx * sizeof(*copy));
		if (!copy)
			return -1;
		memcpy(copy, nv, n->n_pfx * sizeof(*copy));
		qsort(copy, n->n_pfx, sizeof(*copy), pfx_cmp);
		nv = copy;
	}
	while (i < w->n_pfx || j < n->n_pfx) {
		int c = i == w->n_pfx ? 1 : j == n->n_pfx ? -1 : pfx_cmp(&w->pfx[i], &nv[j]);

		if (c < 0) {
			del++;
			i++;
		} else if (c > 0) {
			add++;
			j++;
		} else {
			chg += w->pfx[i].list != nv[j].list || w->pfx[i].sets != nv[j].sets;
			i++;
			j++;
		}
	}
	free(copy);
	if (!add && !del && !chg)
		return 0;
	pfx_families(w->pfx, w->n_pfx, &o4, &o6);
	pfx_families(n->pfx, n->n_pfx, &n4, &n6);
	pr_info("%s: prefix entries: IPv4 %zu -> %zu, IPv6 %zu -> %zu: %zu added, %zu removed, "
		"%zu changed (allow %zu, deny %zu as written)",
		what, o4, n4, o6, n6, add, del, chg, n->n_allow, n->n_deny);
	return 1;
}

/* --- the whole policy ---------------------------------------------------------------- */

static int mode_diff(const char *what, const struct fg_inforce *w, const struct fg_config *n)
{
	int changes = 0;

	if (w->ctl.mode != (__u32)n->mode) {
		pr_info("%s: global mode %s -> %s", what, mode_str(w->ctl.mode), mode_str(n->mode));
		changes++;
	}
	if (w->ctl.mode_ovr && (w->ctl.mode_ovr == FG_OVR_SHADOW) != (n->mode == FG_MODE_SHADOW))
		pr_info("%s: a CLI override keeps the global mode %s (the file says %s; "
			"'floodgate mode file' returns to the file)",
			what, w->ctl.mode_ovr == FG_OVR_SHADOW ? "shadow" : "enforce",
			mode_str(n->mode));
	return changes;
}

void fg_reload_log(const char *what, struct fg_inforce *was, const struct fg_config *n)
{
	const struct fg_policy *op = &was->pol, *np = &n->pol;
	int changes = rules_diff(what, was, n) + mode_diff(what, was, n) +
		      sa_diff(what, &was->pol.sa, &n->pol.sa),
	    p;

	if (!matches_eq(op, np)) {
		pr_info("%s: match entries changed (%u/%u/%u/%u per class)", what, np->nmatch[0],
			np->nmatch[1], np->nmatch[2], np->nmatch[3]);
		changes++;
	}
	if (op->default_verdict != np->default_verdict) {
		pr_info("%s: default %s -> %s", what, verdict_str(op->default_verdict),
			verdict_str(np->default_verdict));
		changes++;
	}
	if (op->malformed_verdict != np->malformed_verdict) {
		pr_info("%s: malformed %s -> %s", what, verdict_str(op->malformed_verdict),
			verdict_str(np->malformed_verdict));
		changes++;
	}
	p = prefixes_diff(what, was, n);
	if (p < 0)
		pr_info("%s: prefix entries: %zu -> %zu (not compared: out of memory)", what,
			was->n_pfx, n->n_pfx);
	changes += p != 0;
	if (!limit_eq(&op->ins, &np->ins)) {
		pr_info("%s: new-source admission changed", what);
		changes++;
	}
	if (!changes)
		pr_info("%s: no policy changes", what);
}
