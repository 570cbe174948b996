// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* What a reload changed, rule by rule and field by field (see reload_log.h). */
#include <stdbool.h>
#include <string.h>
#include "log.h"
#include "reload_log.h"

static const char *action_str(int a)
{
	return a == FG_ACT_PASS ? "pass" : a == FG_ACT_DROP ? "drop" : "limit";
}

static const char *mode_str(int m)
{
	return m ? "shadow" : "enforce";
}

static const char *verdict_str(int v)
{
	return v ? "drop" : "pass";
}

static bool limit_eq(const struct fg_limit *a, const struct fg_limit *b)
{
	return a->inc == b->inc && a->tau == b->tau;
}

static bool rule_eq(const struct fg_rule *a, const struct fg_rule *b)
{
	return limit_eq(&a->src, &b->src) && limit_eq(&a->agg, &b->agg) &&
	       limit_eq(&a->ovf, &b->ovf) && a->mask4 == b->mask4 &&
	       !memcmp(a->mask6, b->mask6, sizeof(a->mask6)) && a->id == b->id &&
	       a->gen == b->gen && a->action == b->action && a->mode == b->mode &&
	       a->cost == b->cost && a->on_full == b->on_full &&
	       a->conn_cap == b->conn_cap && a->conn_ttl_ms == b->conn_ttl_ms;
}

static bool limit_src_eq(const struct fg_limit_src *a, const struct fg_limit_src *b)
{
	return a->set == b->set && (!a->set || (a->rate == b->rate && a->burst == b->burst));
}

static bool rule_src_eq(const struct fg_rule_src *a, const struct fg_rule_src *b)
{
	return limit_src_eq(&a->per_source, &b->per_source) &&
	       limit_src_eq(&a->aggregate, &b->aggregate) &&
	       limit_src_eq(&a->overflow, &b->overflow) &&
	       a->plen4 == b->plen4 && a->plen6 == b->plen6;
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

static bool pfx_eq(const struct fg_pfx_entry *a, const struct fg_pfx_entry *b)
{
	return a->family == b->family && a->plen == b->plen &&
	       !memcmp(a->addr, b->addr, sizeof(a->addr)) && a->list == b->list &&
	       a->sets == b->sets;
}

static bool prefixes_eq(const struct fg_config *o, const struct fg_config *n)
{
	if (o->n_pfx != n->n_pfx || o->n_allow != n->n_allow || o->n_deny != n->n_deny)
		return false;
	for (size_t i = 0; i < n->n_pfx; i++)
		if (!pfx_eq(&o->pfx[i], &n->pfx[i]))
			return false;
	return true;
}

static void limit_diff(const char *rule, const char *what, const struct fg_limit_src *a,
		       const struct fg_limit_src *b)
{
	if (limit_src_eq(a, b))
		return;
	if (!a->set)
		pr_info("reload: rule %s: %s added: rate %g burst %g", rule, what, b->rate, b->burst);
	else if (!b->set)
		pr_info("reload: rule %s: %s removed (was rate %g burst %g)", rule, what,
			a->rate, a->burst);
	else
		pr_info("reload: rule %s: %s rate %g -> %g, burst %g -> %g", rule, what,
			a->rate, b->rate, a->burst, b->burst);
}

/* A rule that is in both: what changed in it. */
static void rule_diff(const struct fg_rule_src *os, const struct fg_rule *or,
		      const struct fg_rule_src *ns, const struct fg_rule *nr)
{
	const char *nm = ns->name;

	limit_diff(nm, "per_source", &os->per_source, &ns->per_source);
	limit_diff(nm, "aggregate", &os->aggregate, &ns->aggregate);
	limit_diff(nm, "overflow", &os->overflow, &ns->overflow);
	if (os->plen4 != ns->plen4 || os->plen6 != ns->plen6)
		pr_info("reload: rule %s: source grouping /%d,/%d -> /%d,/%d", nm,
			os->plen4, os->plen6, ns->plen4, ns->plen6);
	if (or->action != nr->action)
		pr_info("reload: rule %s: action %s -> %s", nm, action_str(or->action),
			action_str(nr->action));
	if (or->mode != nr->mode)
		pr_info("reload: rule %s: mode %s -> %s", nm, mode_str(or->mode), mode_str(nr->mode));
	if (or->cost != nr->cost)
		pr_info("reload: rule %s: cost %s -> %s", nm, or->cost ? "bytes" : "packets",
			nr->cost ? "bytes" : "packets");
	if (or->on_full != nr->on_full)
		pr_info("reload: rule %s: on_full %u -> %u", nm, or->on_full, nr->on_full);
	if (or->conn_cap != nr->conn_cap || or->conn_ttl_ms != nr->conn_ttl_ms)
		pr_info("reload: rule %s: concurrency %u -> %u connections, handshake_timeout %u -> %u ms "
			"(a lower cap refuses new connections until the count is under it; none is cut)",
			nm, or->conn_cap, nr->conn_cap, or->conn_ttl_ms, nr->conn_ttl_ms);
}

/* Index of the rule named name in c, or -1. */
static int rule_index(const struct fg_config *c, const char *name)
{
	for (__u32 i = 0; i < c->pol.nrules && i < FG_MAX_RULES; i++)
		if (!strcmp(c->rules[i].name, name))
			return (int)i;
	return -1;
}

/* Rules added, moved, changed and removed; returns how many. */
static int rules_diff(const struct fg_config *o, const struct fg_config *n)
{
	int changes = 0;

	for (__u32 i = 0; i < n->pol.nrules && i < FG_MAX_RULES; i++) {
		const struct fg_rule_src *ns = &n->rules[i];
		int j = rule_index(o, ns->name);

		if (j < 0) {
			pr_info("reload: rule %s added (id %u, line %d)", ns->name,
				n->pol.rules[i].id, ns->line);
			changes++;
			continue;
		}
		if (!rule_eq(&o->pol.rules[j], &n->pol.rules[i]) || !rule_src_eq(&o->rules[j], ns) ||
		    i != (__u32)j)
			changes++;
		if (i != (__u32)j)
			pr_info("reload: rule %s moved from position %d to %u", ns->name, j + 1, i + 1);
		rule_diff(&o->rules[j], &o->pol.rules[j], ns, &n->pol.rules[i]);
	}
	for (__u32 j = 0; j < o->pol.nrules && j < FG_MAX_RULES; j++) {
		if (rule_index(n, o->rules[j].name) >= 0)
			continue;
		pr_info("reload: rule %s removed (its counters and buckets are dropped)",
			o->rules[j].name);
		changes++;
	}
	return changes;
}

void fg_reload_log(const struct fg_config *o, const struct fg_config *n)
{
	const struct fg_policy *op = &o->pol, *np = &n->pol;
	int changes = rules_diff(o, n);

	if (!matches_eq(op, np)) {
		pr_info("reload: match entries changed (%u/%u/%u/%u per class)",
			np->nmatch[0], np->nmatch[1], np->nmatch[2], np->nmatch[3]);
		changes++;
	}
	if (op->default_verdict != np->default_verdict) {
		pr_info("reload: default %s -> %s", verdict_str(op->default_verdict),
			verdict_str(np->default_verdict));
		changes++;
	}
	if (op->malformed_verdict != np->malformed_verdict) {
		pr_info("reload: malformed %s -> %s", verdict_str(op->malformed_verdict),
			verdict_str(np->malformed_verdict));
		changes++;
	}
	if (!prefixes_eq(o, n)) {
		pr_info("reload: prefixes: allow %zu -> %zu, deny %zu -> %zu, entries %zu -> %zu",
			o->n_allow, n->n_allow, o->n_deny, n->n_deny, o->n_pfx, n->n_pfx);
		changes++;
	}
	if (!limit_eq(&op->ins, &np->ins)) {
		pr_info("reload: new-source admission changed");
		changes++;
	}
	if (!changes)
		pr_info("reload: no policy changes");
}
