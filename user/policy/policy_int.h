/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Inside the policy compiler: what policy.c (the document, limits and
 * rules), policy_match.c (a rule's match:) and policy_yaml.c (libyaml
 * underneath, errors with a place) share. Nothing outside them includes
 * this; the compiler's interface is policy.h.
 */
#ifndef FG_POLICY_INT_H
#define FG_POLICY_INT_H

#include <stddef.h>
#include <yaml.h>
#include "policy/policy.h"
#include "lib/prefix.h"

/* A source set: its canonical (sorted, unique) prefix list. */
struct pol_set {
	struct fg_pfx_src *v;
	size_t n;
};

/* One compilation. */
struct pol_ctx {
	yaml_document_t *doc;
	struct fg_config *cfg;
	struct fg_err *err;
	struct fg_pfx_src *pfx; /* everything written, before flattening */
	size_t n_pfx, cap_pfx;
	size_t n_written; /* prefixes as written, for FG_MAX_PREFIXES */
	struct pol_set sets[FG_MAX_SETS];
	int n_sets;
	yaml_node_t *fleet_sec;		       /* the top-level fleet:, for errors */
	yaml_node_t *fleet_rule[FG_MAX_RULES]; /* each rule's fleet:, for errors */
	yaml_node_t *shed_sec;		       /* the top-level shedding:, for errors */
	yaml_node_t *syn_sec;		       /* the top-level syn_auth:, for warnings */
};

/* --- policy_yaml.c: errors, nodes, keys ------------------------------------ */

/* Fill c->err at mark m; returns -EINVAL. */
int pol_fail_at(struct pol_ctx *c, yaml_mark_t m, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define FAIL(c, n, ...) pol_fail_at((c), (n)->start_mark, __VA_ARGS__)
int pol_fail_nomem(struct pol_ctx *c);

/*
 * The one YAML document of buf into *doc (the caller deletes it), after
 * refusing collections nested too deep for libyaml's scanner. -EINVAL with
 * *err placed on a syntax error, an empty text or a second document.
 */
int pol_load_document(const char *buf, size_t len, yaml_document_t *doc, struct fg_err *err);

yaml_node_t *pol_node(struct pol_ctx *c, int idx);
int pol_is_null(const yaml_node_t *n);
int pol_scalar(struct pol_ctx *c, yaml_node_t *n, const char *what, const char **out);
int pol_expect_seq(struct pol_ctx *c, yaml_node_t *n, const char *what);
/* The list n ("what:"; null is empty) item by item through fn(c, item, its index, arg), into
 * *count on success; more than max items (0: no limit) fail as "too many what (at most max more)". */
typedef int pol_item_fn(struct pol_ctx *c, yaml_node_t *e, int idx, void *arg);
int pol_each_item(struct pol_ctx *c, yaml_node_t *n, const char *what, int max, const char *more,
		  pol_item_fn *fn, void *arg, int *count);

/* The keys a mapping may have; each at most once. */
struct pol_keys {
	const char *where;
	const char *const *names;
	int n;
	unsigned int seen;
	int first_line[32];
	yaml_node_t *val[32]; /* by index in names; NULL when absent (seen: a bit each) */
};

#define KEYS(where, names)                                                       \
	{                                                                        \
		where, names, (int)(sizeof(names) / sizeof(names[0])), 0, { 0 }, \
		{                                                                \
			0                                                        \
		}                                                                \
	}

/* n must be a mapping (example: what one looks like) of known keys, each
 * at most once: their values into ks->val. */
/* The name of names closest to s if s looks like a typo of it, else NULL. */
const char *pol_nearest(const char *s, const char *const *names, int n);
int pol_read_map(struct pol_ctx *c, yaml_node_t *n, const char *what, const char *example,
		 struct pol_keys *ks);

int pol_parse_enum(struct pol_ctx *c, yaml_node_t *n, const char *what, const char *const *names,
		   int nnames, int *out);
#define ENUM(c, n, what, names, out) \
	pol_parse_enum(c, n, what, names, (int)(sizeof(names) / sizeof(names[0])), out)
int pol_parse_bool(struct pol_ctx *c, yaml_node_t *n, const char *what, int *out);
/* n as a duration (fg_parse_duration) into *ns, its text into *s; one that is not, or breaks
 * flags, fails as "<sec><what>: bad duration "text" (<eg>)"; the caller checks its range. */
enum {
	POL_DUR_WHOLE_MS = 1,
	POL_DUR_NONZERO = 2
};
int pol_parse_duration(struct pol_ctx *c, yaml_node_t *n, const char *sec, const char *what,
		       const char *eg, unsigned int flags, const char **s, __u64 *ns);
/* The scalar v of a key the mapping map must have: absent (NULL), it fails at map with missing. */
int pol_need_scalar(struct pol_ctx *c, yaml_node_t *map, yaml_node_t *v, const char *what,
		    const char *missing, const char **s);
int pol_parse_uint(struct pol_ctx *c, yaml_node_t *n, const char *what, __u64 lo, __u64 hi,
		   __u64 *out);

/* An optional key: n (NULL when absent: *out is left as it is) as a number lo..hi (at most
 * UINT32_MAX) into *out; written only when it parses. */
static inline int pol_parse_u32_opt(struct pol_ctx *c, yaml_node_t *n, const char *what, __u32 lo,
				    __u32 hi, __u32 *out)
{
	__u64 v;
	int err = n ? pol_parse_uint(c, n, what, lo, hi, &v) : 0;

	if (n && !err)
		*out = (__u32)v;
	return err;
}

/* pol_parse_duration, then lo..hi ns: outside, it fails as "<sec><what>: text is <beyond>"
 * (beyond: the range as the section words it, e.g. "out of range (1s..1d)"). */
static inline int pol_parse_duration_in(struct pol_ctx *c, yaml_node_t *n, const char *sec,
					const char *what, const char *eg, unsigned int flags,
					__u64 lo, __u64 hi, const char *beyond, __u64 *ns)
{
	const char *s;
	int err = pol_parse_duration(c, n, sec, what, eg, flags, &s, ns);

	if (!err && (*ns < lo || *ns > hi))
		err = FAIL(c, n, "%s%s: %.64s is %s", sec, what, s, beyond);
	return err;
}

/* --- policy.c: prefix lists ------------------------------------------------- */

/* A list of prefixes (or a single one), each marked allow and/or deny:
 * appended to c->pfx, or, with outv, returned in a malloc'd array. */
int pol_parse_prefixes(struct pol_ctx *c, yaml_node_t *n, const char *what, int allow, int deny,
		       struct fg_pfx_src **outv, size_t *outn);
int pol_pfx_push(struct pol_ctx *c, const struct fg_pfx_src *p);

/* --- policy.c: limits ------------------------------------------------------ */

const char *pol_unit_name(int bytes); /* "bytes" or "packets" */
/* rate: and burst:, both in packets or both in bytes. */
int pol_parse_rate_burst(struct pol_ctx *c, yaml_node_t *rate_n, yaml_node_t *burst_n,
			 long double *rate, long double *burst, int *bytes);
/* fg_limit_compile, the error placed at the rate or the burst node. */
int pol_compile_limit(struct pol_ctx *c, yaml_node_t *rate_n, yaml_node_t *burst_n,
		      long double rate, long double burst, int bytes, struct fg_limit *out);

/* --- policy_fleet.c ---------------------------------------------------------- */

/* A rule's fleet: limit, parsed; compiled by pol_fleet_rule_compile. */
struct pol_fleet_lim {
	int set;
	int bytes;
	yaml_node_t *node;
	struct fg_fleet_rule_conf rc; /* rate, burst, on_loss, local_rate, local_burst */
	struct fg_limit local;	      /* compiled local share; inc 0 = rate / nodes */
};

/* The top-level fleet: section into cfg->fleet (defaults filled in). */
int pol_parse_fleet(struct pol_ctx *c, yaml_node_t *n);
/* A rule's fleet: {rate, burst, on_loss, local_rate, local_burst}. */
int pol_parse_fleet_rule(struct pol_ctx *c, yaml_node_t *n, struct pol_fleet_lim *out);
/* After every rule: the fleet engine accepts the section and each fleet rule. */
int pol_fleet_check(struct pol_ctx *c);

/* --- policy_shed.c ----------------------------------------------------------- */

/* The top-level pools: list into cfg->pools and pol.pools (before the rules). */
int pol_parse_pools(struct pol_ctx *c, yaml_node_t *n);
/* The top-level shedding: section into cfg->shed, shed_signal, shed_mode. */
int pol_parse_shedding(struct pol_ctx *c, yaml_node_t *n);
/* A rule's tier: and pool: (either may be NULL): enum fg_tier, and the
 * 1-based pool (FG_POOL_NONE when absent). */
int pol_parse_rule_shed(struct pol_ctx *c, yaml_node_t *tier_n, yaml_node_t *pool_n, int *tier,
			int *pool);
/* After every rule: the tiers in use into cfg->shed.tiers, and the shedding
 * section checked with fg_shed_cfg_check. */
int pol_shed_check(struct pol_ctx *c);

/* --- policy_escalate.c -------------------------------------------------------- */

/* The top-level escalation: {max_entries: N} into cfg->esc_max. */
int pol_parse_escalation(struct pol_ctx *c, yaml_node_t *n);
/* Rule idx's escalate: {after: 30s, for: 10m} into cfg->esc[idx]; only a
 * rule that limits per source (has_rate: action limit, a per_source rate). */
int pol_parse_rule_escalate(struct pol_ctx *c, yaml_node_t *n, int idx, int has_rate);

/* --- policy_synauth.c --------------------------------------------------------- */

/* The defaults of the syn_auth: section into cfg->syn (before the sections). */
int pol_synauth_defaults(struct pol_ctx *c);
/* The top-level syn_auth: {verified_for, max_verified, reply_rate, ...}. */
int pol_parse_synauth(struct pol_ctx *c, yaml_node_t *n);
/* Rule idx's syn_auth: (NULL: none), after its match: is expanded; action
 * is the rule's enum fg_action. */
int pol_parse_rule_synauth(struct pol_ctx *c, yaml_node_t *n, int idx, int action);
/* After every rule: how many authenticate, and a section nothing uses. */
int pol_synauth_check(struct pol_ctx *c);

/* --- policy_match.c ---------------------------------------------------------- */

/* Rule idx's match: (NULL: matches everything) into its entries, per
 * protocol class; errors without a match node are placed at rule. */
int pol_rule_match(struct pol_ctx *c, yaml_node_t *rule, yaml_node_t *match, int idx);

#endif /* FG_POLICY_INT_H */
