// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fg_config_print: a compiled policy, human readable (`floodgate check`). */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

#include "policy/admission.h"
#include "conn/conn.h"
#include "fleet/fleet_conf.h"
#include "policy/policy.h"
#include "lib/units.h"
#include "lib/sysutil.h"

#define MAX_SHOWN 8 /* match entries printed per rule */
/* One Redis executes about this many lease scripts a second (docs/fleet.md
 * section 7, the planning figure). */
#define REDIS_SCRIPTS_LO 20000
#define REDIS_SCRIPTS_HI 30000
#define BOUND_T		 10 /* seconds, for the printed bound */

/* fg_config_print's internals argument, for the whole printout: the
 * compiled figures (GCRA inc and tau, in 1/64 ns) besides the operator's */
static bool internals;

static void print_limit(FILE *f, const char *what, const struct fg_limit_src *s,
			const struct fg_limit *l, int bytes)
{
	char r[48], b[48];

	if (!s->set)
		return;
	fg_format_amount(r, sizeof(r), s->rate, bytes);
	fg_format_amount(b, sizeof(b), s->burst, bytes);
	if (internals)
		fprintf(f, "      %-10s %s/s burst %s  (inc %llu, tau %llu; refills in %.3g s)\n",
			what, r, b, (unsigned long long)l->inc, (unsigned long long)l->tau,
			(double)l->tau / (double)FG_TU_PER_SEC);
	else
		fprintf(f, "      %-10s %s/s burst %s (empty to full in %.3g s)\n", what, r, b,
			(double)l->tau / (double)FG_TU_PER_SEC);
}

static void print_flags(FILE *f, __u8 mask, __u8 val)
{
	size_t i;

	for (i = 0; i < FG_NTCP_FLAGS; i++)
		if (val & fg_tcp_flags[i].bit)
			fputc(fg_tcp_flags[i].letter, f);
	fputc('/', f);
	for (i = 0; i < FG_NTCP_FLAGS; i++)
		if (mask & fg_tcp_flags[i].bit)
			fputc(fg_tcp_flags[i].letter, f);
}

/* " dport 22" or " dport 1000-2000"; nothing for every port */
static void print_ports(FILE *f, const char *what, __u16 lo, __u16 hi)
{
	if (lo == 0 && hi == 65535)
		return;
	if (lo == hi && !internals)
		fprintf(f, " %s %u", what, lo);
	else
		fprintf(f, " %s %u-%u", what, lo, hi);
}

static void print_entry(FILE *f, int cls, const struct fg_match *e)
{
	fprintf(f, "      match %s", fg_class_names[cls]);
	/* the class says it: tcp 6, udp 17, icmp 1 or 58 */
	if (e->proto && (internals || cls == FG_CLASS_OTHER))
		fprintf(f, " proto %u", e->proto);
	if (e->flags & FG_M_FRAG)
		fprintf(f, " non-first-fragments");
	print_ports(f, "sport", e->sport_lo, e->sport_hi);
	print_ports(f, "dport", e->dport_lo, e->dport_hi);
	if (e->tcp_mask) {
		fprintf(f, " flags ");
		print_flags(f, e->tcp_mask, e->tcp_val);
	}
	if (e->flags & FG_M_ICMP_TYPE)
		fprintf(f, " icmp_type %u", e->icmp_type);
	if (e->flags & FG_M_V4)
		fprintf(f, " ipv4");
	if (e->flags & FG_M_V6)
		fprintf(f, " ipv6");
	if (e->sets)
		fprintf(f, " src-sets 0x%x", e->sets);
	fputc('\n', f);
}

static void print_globals(FILE *f, const struct fg_config *cfg)
{
	const struct fg_policy *pol = &cfg->pol;
	size_t n4, n6;
	int k;

	fprintf(f, "policy %s\n", cfg->path[0] ? cfg->path : "(inline)");
	fprintf(f, "  interfaces:  ");
	if (!cfg->n_ifs)
		fprintf(f, "(none here: --interface or $FLOODGATE_INTERFACES sets them)");
	for (k = 0; k < cfg->n_ifs; k++)
		fprintf(f, "%s%s", k ? ", " : "", cfg->ifaces[k]);
	fprintf(f, "\n  xdp_mode:    %s\n",
		cfg->xdp_mode >= 0 && cfg->xdp_mode <= 2 ? fg_xdp_mode_names[cfg->xdp_mode] : "?");
	fprintf(f, "  xdp_attach:  %s",
		cfg->xdp_attach >= 0 && cfg->xdp_attach <= 2 ?
			fg_xdp_attach_names[cfg->xdp_attach] :
			"?");
	if (cfg->xdp_attach != FG_ATTACH_EXCLUSIVE) {
		fprintf(f, " (priority %u, chain on", cfg->xdp_priority);
		for (k = 0; k < 5; k++)
			if (cfg->xdp_chain & (1u << k))
				fprintf(f, " %s", fg_xdp_action_names[k]);
		fprintf(f, ")");
	}
	fprintf(f, "\n");
	fprintf(f, "  mode:        %s\n", cfg->mode == FG_MODE_SHADOW ? "shadow" : "enforce");
	fprintf(f, "  max_sources: %llu per family\n", (unsigned long long)cfg->max_sources);
	if (cfg->metrics[0])
		fprintf(f, "  metrics:     %s (max_connections %u, per_client %u, timeout %us)\n",
			cfg->metrics,
			cfg->metrics_max_conn ? cfg->metrics_max_conn : FG_METRICS_MAX_CONN,
			cfg->metrics_per_client ? cfg->metrics_per_client : FG_METRICS_PER_CLIENT,
			cfg->metrics_timeout_s ? cfg->metrics_timeout_s : FG_METRICS_TIMEOUT_S);
	else
		fprintf(f, "  metrics:     off\n");
	fprintf(f, "  detach_on_exit: %s\n", cfg->detach_on_exit ? "yes" : "no");
	fprintf(f, "  default:     %s, malformed: %s\n",
		pol->default_verdict == FG_DROP ? "drop" : "pass",
		pol->malformed_verdict == FG_DROP ? "drop" : "pass");
	fg_pfx_count(cfg->pfx, cfg->n_pfx, &n4, &n6);
	fprintf(f,
		"  prefixes:    %zu allow, %zu deny as written; %zu flattened entries (%zu IPv4, %zu IPv6)\n",
		cfg->n_allow, cfg->n_deny, cfg->n_pfx, n4, n6);
}

/* What the admission limit would be, computed on a copy (cfg is const). */
static void print_admission(FILE *f, const struct fg_config *cfg)
{
	struct fg_config *tmp = malloc(sizeof(*tmp));
	double rate;

	if (!tmp)
		return;
	*tmp = *cfg;
	if (!internals) {
		rate = fg_policy_set_admission(tmp);
		fprintf(f, "  admission:   %.6g new sources/s (%s)\n", rate,
			cfg->admission.set ? "explicit" :
					     "automatic: the tables' size over twice "
					     "the longest refill");
	} else if (cfg->admission.set) {
		rate = fg_policy_set_admission(tmp);
		fprintf(f,
			"  admission:   %.6g new sources/s burst %.6g (explicit; inc %llu, tau %llu)\n",
			rate, cfg->admission.burst, (unsigned long long)tmp->pol.ins.inc,
			(unsigned long long)tmp->pol.ins.tau);
	} else {
		rate = fg_policy_set_admission(tmp);
		fprintf(f, "  admission:   %.6g new sources/s (automatic; inc %llu, tau %llu)\n",
			rate, (unsigned long long)tmp->pol.ins.inc,
			(unsigned long long)tmp->pol.ins.tau);
	}
	free(tmp);
}

/* A concurrency cap: what the cap table gets (user/conn/conn.h). */
static void print_cap(FILE *f, const struct fg_policy *pol, __u32 r)
{
	const struct fg_rule *ru = &pol->rules[r];
	struct fg_conn_cap cap;
	int eph = 0;

	if (!ru->conn_cap)
		return;
	fprintf(f, "      %-10s %u connections per source, handshake_timeout %u ms", "concurrency",
		ru->conn_cap, ru->conn_ttl_ms);
	if (fg_conn_cap_of_rule(pol, r, &cap, NULL)) {
		fputc('\n', f);
		return;
	}
	fprintf(f, "\n        counts TCP%s to ports",
		cap.families == FG_CONN_F_V4 ? " over IPv4" :
		cap.families == FG_CONN_F_V6 ? " over IPv6" :
					       "");
	for (__u32 j = 0; j < cap.nranges; j++) {
		const struct fg_conn_range *d = &cap.dport[j];

		fprintf(f, d->lo == d->hi ? "%s%u" : "%s%u-%u", j ? "," : " ", d->lo, d->hi);
		eph |= d->hi >= 32768 && d->lo <= 60999;
	}
	fputc('\n', f);
	if (eph)
		fprintf(f,
			"      note: these ports overlap the default ephemeral range 32768-60999: "
			"this host's own outgoing connections from them count too\n");
}

static int n_fleet_rules(const struct fg_config *cfg)
{
	int n = 0;

	for (__u32 r = 0; r < cfg->pol.nrules && r < FG_MAX_RULES; r++)
		n += cfg->pol.rules[r].fleet;
	return n;
}

/* The fleet: section and the Redis load it makes (docs/fleet.md section 7). */
static void print_fleet(FILE *f, const struct fg_config *cfg)
{
	const struct fg_fleet_conf *fc = &cfg->fleet;
	double per_node;
	char url[512];
	int n;

	if (!cfg->has_fleet) {
		fprintf(f, "  fleet:       off (no fleet: section; no Redis needed)\n");
		return;
	}
	n = n_fleet_rules(cfg);
	fg_redis_url_str(&fc->redis, url, sizeof(url));
	fprintf(f, "  fleet:       redis %s%s, node %s, key prefix %s\n", url,
		fc->redis.password[0] ? " (with a password)" : "", fc->node, fc->prefix);
	fprintf(f,
		"               lease_interval %u ms, deadline %u ms, lease %u ms; %d fleet rule%s\n",
		fc->interval_ms, fc->deadline_ms, fc->lease_ms, n, n == 1 ? "" : "s");
	if (!n || !fc->interval_ms)
		return;
	per_node = n * 1000.0 / fc->interval_ms;
	fprintf(f,
		"               redis load: %.4g scripts/s per node in %.4g round trips/s "
		"(%d rules / %u ms); a Redis at %d-%d scripts/s serves about %.0f-%.0f such nodes\n",
		per_node, 1000.0 / fc->interval_ms, n, fc->interval_ms, REDIS_SCRIPTS_LO,
		REDIS_SCRIPTS_HI, REDIS_SCRIPTS_LO / per_node, REDIS_SCRIPTS_HI / per_node);
}

/* A fleet rule's lease arithmetic (docs/fleet.md sections 3 and 6). */
static void print_fleet_rule(FILE *f, const struct fg_config *cfg, __u32 r,
			     const struct fg_fleet_conf *fl, int fi)
{
	const struct fg_fleet_rule_conf *rc = &cfg->fleet_rules[r];
	const struct fg_fleet_conf *fc = &cfg->fleet;
	const struct fg_limit *loc = &cfg->fleet_local[r];
	int bytes = rc->cost == FG_COST_BYTES;
	double i_s = fc->interval_ms / 1000.0, l_s = fc->lease_ms / 1000.0;
	double w_s = l_s + (l_s > 2 * i_s ? l_s : 2 * i_s);
	double ideal = rc->burst + rc->rate * BOUND_T, out = rc->rate * w_s;
	char a[48], b[48], c[48], d[48], key[3][FG_FLEET_KEY_LEN];

	fg_format_amount(a, sizeof(a), rc->rate, bytes);
	fg_format_amount(b, sizeof(b), rc->burst, bytes);
	fprintf(f, "      %-10s %s/s burst %s fleet-wide, on_loss %s\n", "fleet", a, b,
		fg_on_loss_names[rc->on_loss < 3 ? rc->on_loss : 0]);
	(void)fi;
	if (fl) {
		fg_fleet_rule_keys(fl, rc, key);
		fprintf(f, "        key        %s (and :d, :n)\n", key[0]);
	}
	fg_format_amount(a, sizeof(a), rc->rate * i_s, bytes);
	fg_format_amount(b, sizeof(b), out, bytes);
	fprintf(f,
		"        lease      refill %s per interval (rate x %u ms); outstanding at most %s "
		"(rate x W, W = L + max(L, 2 I) = %.0f ms)\n",
		a, fc->interval_ms, b, w_s * 1000);
	fg_format_amount(a, sizeof(a), ideal + out, bytes);
	fg_format_amount(b, sizeof(b), rc->burst, bytes);
	fg_format_amount(c, sizeof(c), rc->rate * BOUND_T, bytes);
	fg_format_amount(d, sizeof(d), out, bytes);
	fprintf(f,
		"        bound      over any %d s the fleet admits at most %s = burst %s + "
		"rate x %d s %s + outstanding %s (+%.1f%%)\n",
		BOUND_T, a, b, BOUND_T, c, d, 100 * out / ideal);
	switch (rc->on_loss) {
	case FG_LOSS_LOCAL:
		if (loc->inc) {
			fg_format_amount(a, sizeof(a), rc->local_rate, bytes);
			fg_format_amount(b, sizeof(b), (double)loc->tau / (double)loc->inc, bytes);
			fprintf(f, "        on_loss    local: this node alone %s/s burst %s", a, b);
			if (internals)
				fprintf(f, " (inc %llu, tau %llu)", (unsigned long long)loc->inc,
					(unsigned long long)loc->tau);
			fputc('\n', f);
		} else {
			fg_format_amount(a, sizeof(a), rc->rate / 10, bytes);
			fg_format_amount(b, sizeof(b), rc->burst / 10, bytes);
			fprintf(f,
				"        on_loss    local: rate and burst / the last known node count "
				"(%s/s burst %s with 10 nodes)\n",
				a, b);
		}
		break;
	case FG_LOSS_OPEN:
		fprintf(f,
			"        on_loss    open: during an outage only the local limits apply\n");
		break;
	default:
		fprintf(f,
			"        on_loss    closed: during an outage what reaches the fleet check is dropped\n");
	}
	fprintf(f, "        redis      %.4g scripts/s per node\n", 1000.0 / fc->interval_ms);
}

/* The pools (docs/shedding.md section 4): what each tier may take. */
static void print_pools(FILE *f, const struct fg_config *cfg)
{
	if (!cfg->pol.npools) {
		fprintf(f, "  pools:       none\n");
		return;
	}
	fprintf(f, "  pools (%u):\n", cfg->pol.npools);
	for (__u32 i = 0; i < cfg->pol.npools && i < FG_MAX_POOLS; i++) {
		const struct fg_pool_src *ps = &cfg->pools[i];
		const struct fg_pool *pl = &cfg->pol.pools[i];
		double keep = 1 - ps->reserve / 100;
		char r[48], b[48], lr[48], lb[48];
		int nr = 0;

		for (__u32 k = 0; k < cfg->pol.nrules && k < FG_MAX_RULES; k++)
			nr += cfg->pol.rules[k].pool == i + 1;
		fg_format_amount(r, sizeof(r), ps->lim.rate, ps->bytes);
		fg_format_amount(b, sizeof(b), ps->lim.burst, ps->bytes);
		fg_format_amount(lr, sizeof(lr), ps->lim.rate * keep, ps->bytes);
		fg_format_amount(lb, sizeof(lb), (double)pl->tau_low / (double)pl->inc, ps->bytes);
		fprintf(f, "    %-20s %s/s burst %s, reserve %g%%, shedding %s; %d rule%s\n",
			ps->name, r, b, ps->reserve, ps->noshed ? "off" : "on", nr,
			nr == 1 ? "" : "s");
		fprintf(f, "      critical   the whole pool");
		if (internals)
			fprintf(f, " (inc %llu, tau %llu)", (unsigned long long)pl->inc,
				(unsigned long long)pl->tau);
		fprintf(f,
			"\n      others     together at most %s/s, and only while more than the reserve "
			"is left (burst %s",
			lr, lb);
		if (internals)
			fprintf(f, "; cap inc %llu, tau_low %llu", (unsigned long long)pl->cap.inc,
				(unsigned long long)pl->tau_low);
		fprintf(f, ")\n");
	}
}

/* The shedding: section and the controller's figures (docs/shedding.md section 2). */
static void print_shedding(FILE *f, const struct fg_config *cfg)
{
	const struct fg_shed_cfg *sc = &cfg->shed;
	char sig[PATH_MAX + 32];
	__u32 h = FG_SHED_HSHIFT_MIN;
	int sep = 0;

	if (!cfg->has_shedding) {
		fprintf(f, "  shedding:    off (no shedding: section; tiers are never shed)\n");
		return;
	}
	fg_signal_name(&cfg->shed_signal, sig, sizeof(sig));
	fprintf(f, "  shedding:    signal %s, %s; tiers shed in order:", sig,
		fg_mode_names[cfg->shed_mode == FG_MODE_SHADOW]);
	for (int t = FG_NTIERS - 1; t > FG_TIER_CRITICAL; t--)
		if (sc->tiers & FG_TIER_BIT(t))
			fprintf(f, "%s %s", sep++ ? "," : "", fg_tier_name(t));
	fprintf(f, "; critical never\n");
	fprintf(f, "               interval %gs, delay %gs, ramp %gs, decay %gs, good %g, bad %g\n",
		sc->interval, sc->delay, sc->ramp, sc->decay, sc->good, sc->bad);
	while (h < FG_SHED_HSHIFT_MAX && (double)(1ull << h) < sc->orphan * 1e9)
		h++;
	fprintf(f,
		"               full shed after %gs at utilization 1; a dead daemon's shedding "
		"ends within %gs + %.3gs (orphan %gs, rounded up to 2^%u ns)\n",
		sc->delay + sc->ramp, 2 * sc->interval, (double)(1ull << h) / 1e9, sc->orphan, h);
}

static void print_rule(FILE *f, const struct fg_config *cfg, __u32 r,
		       const struct fg_fleet_conf *fl, int fi)
{
	const struct fg_policy *pol = &cfg->pol;
	const struct fg_rule *ru = &pol->rules[r];
	const struct fg_rule_src *rs = &cfg->rules[r];
	int bytes = ru->cost == FG_COST_BYTES;
	int k, cls, shown = 0;

	/* a tier or pool alone: a traffic class, not a rate limit */
	bool nolimit = ru->action == FG_ACT_LIMIT && !ru->src.inc && !ru->agg.inc && !ru->fleet &&
		       !ru->conn_cap;

	fprintf(f, "    %2u %s%s: %s, %s", r, rs->name, rs->implicit ? " (implicit)" : "",
		ru->mode == FG_MODE_SHADOW ? "shadow" : "enforce",
		nolimit	       ? "no rate limit" :
		ru->action < 3 ? fg_action_names[ru->action] :
				 "?");
	if (nolimit)
		fprintf(f, " (only %s)",
			ru->pool != FG_POOL_NONE ? "its pool, and shedding by tier" :
						   "shed by its tier under overload");
	else if (ru->action == FG_ACT_LIMIT)
		fprintf(f, " %s per source /%d (v4) /%d (v6), on_full %s",
			bytes ? "bytes" : "packets", rs->plen4, rs->plen6,
			ru->on_full < 3 ? fg_on_full_names[ru->on_full] : "?");
	if (ru->tier != FG_TIER_CRITICAL || ru->pool != FG_POOL_NONE)
		fprintf(f, ", tier %s", fg_tier_name(ru->tier));
	if (ru->pool != FG_POOL_NONE && ru->pool <= cfg->pol.npools)
		fprintf(f, ", pool %s", cfg->pools[ru->pool - 1].name);
	fputc('\n', f);
	for (cls = 0; cls < FG_NCLASS; cls++) {
		for (k = 0; k < pol->nmatch[cls] && k < FG_MAX_MATCH; k++) {
			if (pol->match[cls][k].rule != r)
				continue;
			if (shown++ < MAX_SHOWN)
				print_entry(f, cls, &pol->match[cls][k]);
		}
	}
	if (shown > MAX_SHOWN)
		fprintf(f, "      ... %d match entries in all\n", shown);
	print_limit(f, "per_source", &rs->per_source, &ru->src, bytes);
	print_limit(f, "aggregate", &rs->aggregate, &ru->agg, bytes);
	if (rs->per_source.set && ru->on_full == FG_FULL_OVERFLOW)
		print_limit(f, "overflow", &rs->overflow, &ru->ovf, bytes);
	print_cap(f, pol, r);
	if (ru->fleet)
		print_fleet_rule(f, cfg, r, fl, fi);
	if (cfg->syn_auth[r])
		fprintf(f,
			"      %-10s cookie: a SYN is answered by floodgate; only a source that "
			"returns the cookie is charged and reaches the listener\n",
			"syn_auth");
	if (cfg->esc[r].set)
		fprintf(f,
			"      %-10s throttled for %.6g s without a break: the source's /%d (v4) "
			"/%d (v6) on the runtime deny list for %.6g s, %s\n",
			"escalate", cfg->esc[r].after_ns / 1e9, rs->plen4, rs->plen6,
			cfg->esc[r].for_ns / 1e9,
			cfg->esc[r].scope == FG_ESC_SCOPE_ADDRESS ?
				"the whole address (scope: address)" :
				"for this rule's traffic only (scope: rule)");
}

/* The fleet: section with the daemon's defaults, for the keys; NULL
 * without one (or when it cannot be resolved: the compiler said why). */
static const struct fg_fleet_conf *fleet_resolved(const struct fg_config *cfg,
						  struct fg_fleet_conf *out)
{
	char why[FG_WHY_LEN];

	if (!cfg->has_fleet || fg_fleet_conf_resolve(&cfg->fleet, out, why))
		return NULL;
	return out;
}

/* The syn_auth: section, when a rule authenticates (docs/syn-auth.md). */
static void print_synauth(FILE *f, const struct fg_config *cfg)
{
	const struct fg_synauth_conf *s = &cfg->syn;

	if (!s->nrules)
		return;
	fprintf(f,
		"  syn_auth:    %d rule%s authenticate%s; way %s; a proven address stays "
		"verified %.6g s, at most %u per family\n",
		s->nrules, s->nrules == 1 ? "" : "s", s->nrules == 1 ? "s" : "",
		fg_syn_way_names[s->way], s->verified_for_ns / 1e9, s->max_verified);
	fprintf(f,
		"               SYN-ACKs at most %.6g/s burst %.6g, and %.6g/s burst %.6g to one "
		"/%d (v4) /%d (v6)\n",
		s->reply_src.rate, s->reply_src.burst, s->per_prefix_src.rate,
		s->per_prefix_src.burst, s->prefix_v4, s->prefix_v6);
	if (internals)
		fprintf(f,
			"               (reply inc %llu tau %llu; per prefix inc %llu tau %llu)\n",
			(unsigned long long)s->reply.inc, (unsigned long long)s->reply.tau,
			(unsigned long long)s->per_prefix.inc,
			(unsigned long long)s->per_prefix.tau);
}

void fg_config_print(FILE *f, const struct fg_config *cfg, bool with_internals)
{
	struct fg_fleet_conf fc;
	const struct fg_fleet_conf *fl = fleet_resolved(cfg, &fc);
	__u32 caps = 0, escs = 0;
	int fi = 0;

	internals = with_internals;
	print_globals(f, cfg);
	print_admission(f, cfg);
	print_fleet(f, cfg);
	for (__u32 r = 0; r < cfg->pol.nrules && r < FG_MAX_RULES; r++)
		caps += cfg->pol.rules[r].conn_cap != 0;
	if (caps)
		fprintf(f,
			"  concurrency: %u capped rules; reconcile every %.3g s; %u count keys\n",
			caps, cfg->conn_reconcile_ms / 1e3, cfg->conn_max_keys);
	print_pools(f, cfg);
	print_shedding(f, cfg);
	for (__u32 r = 0; r < cfg->pol.nrules && r < FG_MAX_RULES; r++)
		escs += cfg->esc[r].set != 0;
	if (escs)
		fprintf(f,
			"  escalation:  %u rules escalate; at most %u escalated entries at once "
			"(both families)\n",
			escs, cfg->esc_max);
	print_synauth(f, cfg);
	fprintf(f, "  rules (%u, first match wins):\n", cfg->pol.nrules);
	for (__u32 r = 0; r < cfg->pol.nrules && r < FG_MAX_RULES; r++) {
		print_rule(f, cfg, r, fl, fi);
		fi += cfg->pol.rules[r].fleet;
	}
	explicit_bzero(&fc, sizeof(fc));
}
