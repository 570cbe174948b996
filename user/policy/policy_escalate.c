// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Policy compiler, escalation (docs/floodgate.yaml.5, ESCALATION): a rule's
 * escalate: {after, for, scope} and the top-level escalation: {max_entries}. The
 * daemon's side is user/lists/escalate.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "policy/policy_int.h"

static const char *const esc_rule_keys[] = { "after", "for", "scope" };
enum {
	EK_AFTER,
	EK_FOR,
	EK_SCOPE
};

/* enum fg_esc_scope's names */
static const char *const esc_scopes[] = { "rule", "address" };

int fg_esc_default_scope(const struct fg_config *cfg, int idx)
{
	/* A source that nothing proved can be forged: a spoofed flood could
	 * frame any address, so it loses only the rule's traffic. A rule with
	 * SYN authentication in the handoff way counts only handshakes whose
	 * cookie came back (docs/syn-auth.md): its evidence proves the address,
	 * so the whole address goes. The retransmit way lets a verified
	 * address's SYNs through unproven, so its rules stay scoped. The way is
	 * known once the daemon has probed its kernel (fg_policy_kernel_fill
	 * calls this again); until then it is the way the file asked for. */
	if (idx >= 0 && idx < FG_MAX_RULES && cfg->syn_auth[idx] &&
	    cfg->pol.sa.way == FG_SA_WAY_HANDOFF)
		return FG_ESC_SCOPE_ADDRESS;
	return FG_ESC_SCOPE_RULE;
}

static const char *const esc_keys[] = { "max_entries" };
enum {
	EK_MAX
};

/* A duration key of escalate: within [lo, hi] ns (beyond: "out of range (1s..1d)"). */
static int esc_duration(struct pol_ctx *c, yaml_node_t *n, const char *what, __u64 lo, __u64 hi,
			const char *beyond, __u64 *out)
{
	return pol_parse_duration_in(c, n, "escalate: ", what, "e.g. 30s, 10m, 1h", POL_DUR_NONZERO,
				     lo, hi, beyond, out);
}

int pol_parse_rule_escalate(struct pol_ctx *c, yaml_node_t *n, int idx, int has_rate)
{
	struct pol_keys ks = KEYS("escalate", esc_rule_keys);
	struct fg_esc_rule_conf e = {
		.set = 1,
		.after_ns = FG_ESC_AFTER_DEFAULT_NS,
		.for_ns = FG_ESC_FOR_DEFAULT_NS,
	};
	int err;

	if (!n || pol_is_null(n))
		return 0;
	err = pol_read_map(c, n, "escalate", "{after: 30s, for: 10m, scope: rule}", &ks);
	if (err)
		return err;
	if (!has_rate)
		return FAIL(c, n,
			    "escalate needs action: limit with a per_source rate: a source is "
			    "escalated for being throttled by its own bucket");
	if (ks.val[EK_AFTER] &&
	    (err = esc_duration(c, ks.val[EK_AFTER], "after", FG_ESC_AFTER_MIN_NS,
				FG_ESC_AFTER_MAX_NS, "out of range (1s..1d)", &e.after_ns)))
		return err;
	if (ks.val[EK_FOR] &&
	    (err = esc_duration(c, ks.val[EK_FOR], "for", FG_ESC_FOR_MIN_NS, FG_ESC_FOR_MAX_NS,
				"out of range (1s..7d)", &e.for_ns)))
		return err;
	if (ks.val[EK_SCOPE]) {
		err = ENUM(c, ks.val[EK_SCOPE], "escalate: scope", esc_scopes, &e.scope);
		if (err)
			return err;
		e.scope_set = 1;
	} else {
		e.scope = fg_esc_default_scope(c->cfg, idx);
	}
	c->cfg->esc[idx] = e;
	return 0;
}

int pol_parse_escalation(struct pol_ctx *c, yaml_node_t *n)
{
	struct pol_keys ks = KEYS("escalation", esc_keys);
	int err = pol_read_map(c, n, "escalation", "{max_entries: 256}", &ks);

	return err ? err :
		     pol_parse_u32_opt(c, ks.val[EK_MAX], "escalation: max_entries", 1,
				       FG_ESC_MAX_MAX, &c->cfg->esc_max);
}
