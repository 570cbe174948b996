// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Policy compiler, SYN authentication (docs/syn-auth.md): a rule's
 * syn_auth: cookie and the top-level syn_auth: {verified_for, max_verified,
 * reply_rate, reply_per_prefix, prefix_v4, prefix_v6, way}. Which way this
 * kernel gives is policy_kernel.c's; the daemon's side is
 * daemon/mod_synauth.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>

#include "policy/policy_int.h"
#include "lib/units.h"

const char *const fg_syn_way_names[3] = { "auto", "handoff", "retransmit" };
static const char *const rule_auth_names[] = { "off", "cookie" };

static const char *const syn_keys[] = {
	"verified_for", "max_verified", "reply_rate", "reply_per_prefix",
	"prefix_v4",	"prefix_v6",	"way",
};
enum {
	SK_VERIFIED_FOR,
	SK_MAX_VERIFIED,
	SK_REPLY_RATE,
	SK_PER_PREFIX,
	SK_PREFIX_V4,
	SK_PREFIX_V6,
	SK_WAY
};

static const char *const cap_keys[] = { "rate", "burst" };

/* A cap of rate SYN-ACKs a second with a tenth of a second's burst (at least 1). */
static int cap_default(struct pol_ctx *c, long double rate, struct fg_limit_src *src,
		       struct fg_limit *out)
{
	long double burst = rate >= 10 ? (long double)(__u64)(rate / 10) : 1;
	int err = pol_compile_limit(c, NULL, NULL, rate, burst, 0, out);

	if (!err)
		*src = (struct fg_limit_src){ .set = 1,
					      .rate = (double)rate,
					      .burst = (double)burst };
	return err;
}

int pol_synauth_defaults(struct pol_ctx *c)
{
	struct fg_synauth_conf *s = &c->cfg->syn;
	int err;

	s->way = FG_SYN_WAY_AUTO;
	s->verified_for_ns = FG_SYN_VERIFIED_FOR_DEFAULT_NS;
	s->max_verified = FG_SYN_MAX_VERIFIED_DEFAULT;
	s->prefix_v4 = FG_SYN_PREFIX_V4_DEFAULT;
	s->prefix_v6 = FG_SYN_PREFIX_V6_DEFAULT;
	err = cap_default(c, FG_SYN_REPLY_RATE_DEFAULT, &s->reply_src, &s->reply);
	return err ? err :
		     cap_default(c, FG_SYN_PER_PREFIX_DEFAULT, &s->per_prefix_src, &s->per_prefix);
}

/* reply_rate: 10000/s, or {rate: 10000/s, burst: 1000}: in packets (SYN-ACKs). */
static int parse_cap(struct pol_ctx *c, yaml_node_t *n, const char *what, struct fg_limit_src *src,
		     struct fg_limit *out)
{
	struct pol_keys ks = KEYS(what, cap_keys);
	long double rate, burst;
	const char *s;
	int bytes, err;

	if (n->type == YAML_SCALAR_NODE) {
		err = pol_scalar(c, n, what, &s);
		if (err)
			return err;
		err = fg_parse_rate(s, &rate, &bytes);
		if (err || bytes)
			return FAIL(c, n,
				    "syn_auth: %s: expected SYN-ACKs a second like 10000/s, or "
				    "{rate: 10000/s, burst: 1000}; got \"%.64s\"",
				    what, s);
		err = cap_default(c, rate, src, out);
		if (err == -EINVAL) {
			char why[sizeof(c->err->msg)];

			snprintf(why, sizeof(why), "%s", c->err->msg);
			return FAIL(c, n, "syn_auth: %s: %.200s", what, why);
		}
		return err;
	}
	err = pol_read_map(c, n, what, "{rate: 10000/s, burst: 1000}", &ks);
	if (err)
		return err;
	if (!ks.val[0] || !ks.val[1])
		return FAIL(c, n, "syn_auth: %s: missing %s (e.g. {rate: 10000/s, burst: 1000})",
			    what, ks.val[0] ? "burst" : "rate");
	err = pol_parse_rate_burst(c, ks.val[0], ks.val[1], &rate, &burst, &bytes);
	if (err)
		return err;
	if (bytes)
		return FAIL(c, ks.val[0], "syn_auth: %s counts SYN-ACKs (packets), not bytes",
			    what);
	err = pol_compile_limit(c, ks.val[0], ks.val[1], rate, burst, 0, out);
	if (!err)
		*src = (struct fg_limit_src){ .set = 1,
					      .rate = (double)rate,
					      .burst = (double)burst };
	return err;
}

static int parse_plen(struct pol_ctx *c, yaml_node_t *n, const char *what, int lo, int max,
		      int *out)
{
	__u64 v;
	int err = n ? pol_parse_uint(c, n, what, (__u64)lo, (__u64)max, &v) : 0;

	if (n && !err)
		*out = (int)v;
	return err;
}

int pol_parse_synauth(struct pol_ctx *c, yaml_node_t *n)
{
	struct pol_keys ks = KEYS("syn_auth", syn_keys);
	struct fg_synauth_conf *s = &c->cfg->syn;
	yaml_node_t *const *v = ks.val;
	int err;

	err = pol_read_map(c, n, "syn_auth",
			   "{verified_for: 10m, max_verified: 65536, reply_rate: 100000/s, "
			   "reply_per_prefix: 1000/s, way: auto}",
			   &ks);
	if (err)
		return err;
	s->set = 1;
	c->syn_sec = n;
	if (v[SK_VERIFIED_FOR] &&
	    (err = pol_parse_duration_in(c, v[SK_VERIFIED_FOR], "syn_auth: ", "verified_for",
					 "e.g. 10m, 1h", POL_DUR_NONZERO,
					 FG_SYN_VERIFIED_FOR_MIN_NS, FG_SYN_VERIFIED_FOR_MAX_NS,
					 "out of range (1s..7d)", &s->verified_for_ns)))
		return err;
	if ((err = pol_parse_u32_opt(c, v[SK_MAX_VERIFIED], "syn_auth: max_verified",
				     FG_SYN_MAX_VERIFIED_MIN, FG_SYN_MAX_VERIFIED_MAX,
				     &s->max_verified)))
		return err;
	if (v[SK_REPLY_RATE] &&
	    (err = parse_cap(c, v[SK_REPLY_RATE], "reply_rate", &s->reply_src, &s->reply)))
		return err;
	if (v[SK_PER_PREFIX] && (err = parse_cap(c, v[SK_PER_PREFIX], "reply_per_prefix",
						 &s->per_prefix_src, &s->per_prefix)))
		return err;
	/* a prefix of 0 would make reply_per_prefix a second global cap: refused */
	if ((err = parse_plen(c, v[SK_PREFIX_V4], "syn_auth: prefix_v4", 8, 32, &s->prefix_v4)) ||
	    (err = parse_plen(c, v[SK_PREFIX_V6], "syn_auth: prefix_v6", 16, 128, &s->prefix_v6)))
		return err;
	if (v[SK_WAY] && (err = ENUM(c, v[SK_WAY], "syn_auth: way", fg_syn_way_names, &s->way)))
		return err;
	/* the default per-prefix cap never exceeds a lower reply_rate written */
	if (!v[SK_PER_PREFIX] && s->per_prefix_src.rate > s->reply_src.rate) {
		s->per_prefix_src = s->reply_src;
		s->per_prefix = s->reply;
	}
	if (s->per_prefix_src.rate > s->reply_src.rate)
		return FAIL(c, v[SK_PER_PREFIX],
			    "syn_auth: reply_per_prefix (%.6g/s) is above reply_rate (%.6g/s): "
			    "one prefix could take every SYN-ACK",
			    s->per_prefix_src.rate, s->reply_src.rate);
	return 0;
}

/* Can entry e match a SYN without ACK (the only packet the responder answers)? */
static bool matches_syn(const struct fg_match *e)
{
	return (FG_TCP_SYN & e->tcp_mask) == e->tcp_val ||
	       ((FG_TCP_SYN | FG_TCP_ECE | FG_TCP_CWR) & e->tcp_mask) == e->tcp_val;
}

/* Rule idx into pol.sa: its bit, and its TCP match entries for the ACK
 * pre-search (at most FG_SA_MAX_MATCH over every syn_auth rule). */
static int rule_compile(struct pol_ctx *c, yaml_node_t *n, int idx)
{
	struct fg_policy *pol = &c->cfg->pol;
	struct fg_synauth *sa = &pol->sa;

	for (int k = 0; k < pol->nmatch[FG_CLASS_TCP] && k < FG_MAX_MATCH; k++) {
		if (pol->match[FG_CLASS_TCP][k].rule != idx)
			continue;
		if (sa->nmatch >= FG_SA_MAX_MATCH)
			return FAIL(
				c, n,
				"syn_auth: the rules with syn_auth expand to more than %d match "
				"entries (ports and port ranges of each); use fewer ports or "
				"ranges",
				FG_SA_MAX_MATCH);
		sa->match[sa->nmatch++] = (__u16)k;
	}
	sa->rules[idx / 64] |= 1ull << (idx % 64);
	c->cfg->syn_auth[idx] = 1;
	c->cfg->syn.nrules++;
	return 0;
}

int pol_parse_rule_synauth(struct pol_ctx *c, yaml_node_t *n, int idx, int action)
{
	const struct fg_policy *pol = &c->cfg->pol;
	int v, err, syn = 0;

	if (!n || pol_is_null(n))
		return 0;
	err = ENUM(c, n, "syn_auth", rule_auth_names, &v);
	if (err || !v)
		return err;
	if (action != FG_ACT_LIMIT)
		return FAIL(c, n,
			    "syn_auth: needs action: limit (a source proves its address to be "
			    "charged; action %s charges nothing)",
			    fg_action_names[action]);
	for (int cls = 0; cls < FG_NCLASS; cls++)
		for (int k = 0; k < pol->nmatch[cls] && k < FG_MAX_MATCH; k++) {
			const struct fg_match *e = &pol->match[cls][k];

			if (e->rule != idx)
				continue;
			if (cls != FG_CLASS_TCP || e->proto != IPPROTO_TCP)
				return FAIL(c, n,
					    "syn_auth: cookie authenticates TCP handshakes: the "
					    "rule needs match: {proto: tcp} (UDP, ICMP and other "
					    "protocols have no handshake to prove an address)");
			if (!matches_syn(e))
				return FAIL(c, n,
					    "syn_auth: the rule's tcp_flags never match a SYN, so "
					    "there is no handshake to answer");
			syn = 1;
		}
	if (!syn) /* a rule whose match expands to nothing */
		return FAIL(c, n, "syn_auth: the rule matches no TCP packet");
	return rule_compile(c, n, idx);
}

/* The section into pol.sa once something authenticates; way as asked,
 * auto as retransmit (what every kernel with XDP gives) until the daemon
 * resolves it for its kernel (fg_policy_kernel_fill). */
static void section_compile(struct fg_config *cfg)
{
	const struct fg_synauth_conf *s = &cfg->syn;
	struct fg_synauth *sa = &cfg->pol.sa;

	sa->way = s->way == FG_SYN_WAY_HANDOFF ? FG_SA_WAY_HANDOFF : FG_SA_WAY_RETRANSMIT;
	sa->verified_ns = s->verified_for_ns;
	sa->reply = s->reply;
	sa->reply_pfx = s->per_prefix;
	sa->pfx_mask4 = fg_mask4(s->prefix_v4);
	fg_mask6(s->prefix_v6, sa->pfx_mask6);
}

static void synauth_warn(struct pol_ctx *c, yaml_node_t *at, const char *msg)
{
	struct fg_config *cfg = c->cfg;

	if (cfg->n_warn < FG_MAX_WARN) {
		struct fg_warn *w = &cfg->warn[cfg->n_warn];

		w->line = (int)at->start_mark.line + 1;
		w->col = (int)at->start_mark.column + 1;
		snprintf(w->msg, sizeof(w->msg), "%s", msg);
	}
	cfg->n_warn++;
}

int pol_synauth_check(struct pol_ctx *c)
{
	struct fg_synauth_conf *s = &c->cfg->syn;

	if (s->nrules)
		section_compile(c->cfg);
	if (s->set && !s->nrules)
		synauth_warn(
			c, c->syn_sec,
			"syn_auth: no rule has syn_auth: cookie, so these settings do nothing");
	return 0;
}
