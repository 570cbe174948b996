// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A rule's match: protocol, ports, TCP flags, ICMP type, family and source
 * sets, as written, expanded into the fg_match entries of each protocol
 * class the rule can match, in rule order (first match wins).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>

#include "policy/policy_int.h"
#include "lib/units.h"

struct port_range {
	__u16 lo, hi;
};

/* One rule's match as written, before expansion into classes. */
struct match_src {
	int proto; /* -1 any, else the IP protocol */
	struct port_range *sp, *dp;
	size_t nsp, ndp;
	int has_ports, has_flags;
	__u8 tcp_mask, tcp_val;
	int icmp_type; /* -1 when absent */
	__u32 sets;
	int family; /* 0, 4 or 6 */
};

static const char *const family_names[] = { "ipv4", "ipv6" };

static int parse_port(struct pol_ctx *c, yaml_node_t *e, const char *what, struct port_range *r)
{
	char buf[32];
	const char *s;
	char *dash;
	__u64 lo, hi;
	int err;

	err = pol_scalar(c, e, what, &s);
	if (err)
		return err;
	if (strlen(s) >= sizeof(buf))
		goto bad;
	strcpy(buf, s);
	dash = strchr(buf, '-');
	if (dash)
		*dash = 0;
	if (fg_parse_u64(buf, &lo) || lo > 65535)
		goto bad;
	hi = lo;
	if (dash && (fg_parse_u64(dash + 1, &hi) || hi > 65535 || hi < lo))
		goto bad;
	r->lo = (__u16)lo;
	r->hi = (__u16)hi;
	return 0;
bad:
	return FAIL(c, e, "%s: bad port \"%.64s\" (expected 0..65535 or a range \"lo-hi\")", what,
		    s);
}

static int parse_ports(struct pol_ctx *c, yaml_node_t *n, const char *what, struct port_range **out,
		       size_t *nout)
{
	yaml_node_item_t *it;
	struct port_range *v;
	size_t nv = 0, cnt;
	int err;

	if (n->type == YAML_SCALAR_NODE) {
		v = calloc(1, sizeof(*v));
		if (!v)
			return pol_fail_nomem(c);
		err = parse_port(c, n, what, v);
		if (err) {
			free(v);
			return err;
		}
		*out = v;
		*nout = 1;
		return 0;
	}
	err = pol_expect_seq(c, n, what);
	if (err)
		return err;
	cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (!cnt)
		return FAIL(c, n, "%s: empty port list", what);
	v = calloc(cnt, sizeof(*v));
	if (!v)
		return pol_fail_nomem(c);
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *e = pol_node(c, *it);

		if (!e) {
			err = FAIL(c, n, "%s: malformed list", what);
			goto out;
		}
		err = parse_port(c, e, what, &v[nv]);
		if (err)
			goto out;
		nv++;
	}
	*out = v;
	*nout = nv;
	return 0;
out:
	free(v);
	return err;
}

const struct fg_tcp_flag fg_tcp_flags[FG_NTCP_FLAGS] = {
	{ "fin", 'F', FG_TCP_FIN }, { "syn", 'S', FG_TCP_SYN }, { "rst", 'R', FG_TCP_RST },
	{ "psh", 'P', FG_TCP_PSH }, { "ack", 'A', FG_TCP_ACK }, { "urg", 'U', FG_TCP_URG },
	{ "ece", 'E', FG_TCP_ECE }, { "cwr", 'C', FG_TCP_CWR },
};

static int tcp_flag_word(const char *s, size_t len, __u8 *bit)
{
	size_t i;

	for (i = 0; i < FG_NTCP_FLAGS; i++) {
		if (strlen(fg_tcp_flags[i].name) == len &&
		    !strncasecmp(s, fg_tcp_flags[i].name, len)) {
			*bit = fg_tcp_flags[i].bit;
			return 0;
		}
	}
	return -EINVAL;
}

static int tcp_flag_letters(const char *s, size_t len, __u8 *bits)
{
	size_t i, j;

	*bits = 0;
	if (!len)
		return -EINVAL;
	for (j = 0; j < len; j++) {
		for (i = 0; i < FG_NTCP_FLAGS; i++)
			if (s[j] == fg_tcp_flags[i].letter)
				break;
		if (i == FG_NTCP_FLAGS)
			return -EINVAL;
		*bits |= fg_tcp_flags[i].bit;
	}
	return 0;
}

static const char tcp_flags_bad[] =
	"expected syn, ack, fin, rst, psh, urg, ece, cwr joined by '+', a list of them, or \"flags/mask\" like S/SA";

/* [syn, ack]: the flags named. */
static int tcp_flags_list(struct pol_ctx *c, yaml_node_t *n, __u8 *bits)
{
	yaml_node_item_t *it;
	const char *s;
	__u8 b = 0;
	int err;

	if (n->data.sequence.items.top == n->data.sequence.items.start)
		return FAIL(c, n, "tcp_flags: empty list");
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *e = pol_node(c, *it);

		if (!e)
			return FAIL(c, n, "tcp_flags: malformed list");
		err = pol_scalar(c, e, "tcp_flags", &s);
		if (err)
			return err;
		if (tcp_flag_word(s, strlen(s), &b))
			return FAIL(c, e, "tcp_flags: unknown flag \"%.32s\" (%s)", s,
				    tcp_flags_bad);
		*bits |= b;
	}
	return 0;
}

/* "S/SA": letters that must be set / the letters tested. */
static int tcp_flags_slash(struct pol_ctx *c, yaml_node_t *n, const char *s, const char *slash,
			   __u8 *mask, __u8 *val)
{
	__u8 b = 0, m;

	/* the value may be empty: "/R" is "RST clear" */
	if ((slash > s && tcp_flag_letters(s, (size_t)(slash - s), &b)) ||
	    tcp_flag_letters(slash + 1, strlen(slash + 1), &m))
		return FAIL(c, n, "tcp_flags: bad \"%.32s\" (%s)", s, tcp_flags_bad);
	if (b & ~m)
		return FAIL(c, n, "tcp_flags: \"%.32s\" tests flags outside its mask", s);
	*mask = m;
	*val = b;
	return 0;
}

/* "syn+ack": the flags named. */
static int tcp_flags_words(struct pol_ctx *c, yaml_node_t *n, const char *s, __u8 *bits)
{
	const char *p, *q;
	__u8 b;

	for (p = s;; p = q + 1) {
		q = strchr(p, '+');
		if (!q)
			q = p + strlen(p);
		if (tcp_flag_word(p, (size_t)(q - p), &b))
			return FAIL(c, n, "tcp_flags: bad \"%.32s\" (%s)", s, tcp_flags_bad);
		*bits |= b;
		if (!*q)
			return 0;
	}
}

/* "syn" (SYN without ACK), "syn+ack", "rst", [syn, ack], "S/SA". */
static int parse_tcp_flags(struct pol_ctx *c, yaml_node_t *n, __u8 *mask, __u8 *val)
{
	const char *s, *slash;
	__u8 bits = 0;
	int err;

	if (n->type == YAML_SEQUENCE_NODE) {
		err = tcp_flags_list(c, n, &bits);
	} else {
		err = pol_scalar(c, n, "tcp_flags", &s);
		if (err)
			return err;
		slash = strchr(s, '/');
		if (slash)
			return tcp_flags_slash(c, n, s, slash, mask, val);
		err = tcp_flags_words(c, n, s, &bits);
	}
	if (err)
		return err;
	/* named flags must be set; "syn" alone is a connection request: SYN
	 * without ACK */
	*mask = bits == FG_TCP_SYN ? FG_TCP_SYN | FG_TCP_ACK : bits;
	*val = bits;
	return 0;
}

static int proto_class(int proto)
{
	switch (proto) {
	case IPPROTO_TCP:
		return FG_CLASS_TCP;
	case IPPROTO_UDP:
		return FG_CLASS_UDP;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		return FG_CLASS_ICMP;
	default:
		return FG_CLASS_OTHER;
	}
}

const char *const fg_class_names[FG_NCLASS] = { "tcp", "udp", "icmp", "other" };

static int parse_proto(struct pol_ctx *c, yaml_node_t *n, int *proto)
{
	static const struct {
		const char *s;
		int p;
	} names[] = {
		{ "any", -1 },
		{ "tcp", IPPROTO_TCP },
		{ "udp", IPPROTO_UDP },
		{ "icmp", IPPROTO_ICMP },
		{ "icmpv6", IPPROTO_ICMPV6 },
	};
	const char *s;
	size_t i;
	__u64 v;
	int err;

	err = pol_scalar(c, n, "proto", &s);
	if (err)
		return err;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(s, names[i].s)) {
			*proto = names[i].p;
			return 0;
		}
	}
	if (fg_parse_u64(s, &v) || v > 255) {
		static const char *const words[] = { "tcp", "udp", "icmp", "icmpv6", "any" };
		const char *near = pol_nearest(s, words, 5);

		return FAIL(
			c, n,
			"proto: bad value \"%.64s\"%s%s%s (expected tcp | udp | icmp | icmpv6 | "
			"any | 1..255)",
			s, near ? ": did you mean " : "", near ? near : "", near ? "?" : "");
	}
	if (v == 0)
		return FAIL(c, n, "proto: 0 is not a transport protocol (use any)");
	*proto = (int)v;
	return 0;
}

/* A match's src list: a source set, one bit per distinct prefix list. */
static int parse_src_set(struct pol_ctx *c, yaml_node_t *n, __u32 *bit)
{
	struct fg_pfx_src *v = NULL;
	size_t nv = 0, i;
	int k, err;

	if (pol_is_null(n) || (n->type == YAML_SEQUENCE_NODE &&
			       n->data.sequence.items.top == n->data.sequence.items.start))
		return FAIL(c, n, "src: empty prefix list (leave src out to match every source)");
	err = pol_parse_prefixes(c, n, "src", 0, 0, &v, &nv);
	if (err)
		return err;
	nv = fg_pfx_src_unique(v, nv);
	for (k = 0; k < c->n_sets; k++) {
		if (fg_pfx_src_list_eq(c->sets[k].v, c->sets[k].n, v, nv)) {
			free(v);
			*bit = 1u << k;
			return 0;
		}
	}
	if (c->n_sets == FG_MAX_SETS) {
		free(v);
		return FAIL(c, n, "src: too many distinct source sets (at most %d)", FG_MAX_SETS);
	}
	k = c->n_sets;
	for (i = 0; i < nv; i++) {
		struct fg_pfx_src p = v[i];

		p.sets = 1u << k;
		err = pol_pfx_push(c, &p);
		if (err) {
			free(v);
			return err;
		}
	}
	c->sets[k].v = v;
	c->sets[k].n = nv;
	c->n_sets++;
	*bit = 1u << k;
	return 0;
}

/* sport or dport: only TCP and UDP have ports. */
static int match_ports(struct pol_ctx *c, yaml_node_t *n, const char *what, int tcpudp,
		       struct port_range **out, size_t *nout)
{
	if (!tcpudp)
		return FAIL(c, n, "%s needs proto: tcp or udp", what);
	return parse_ports(c, n, what, out, nout);
}

/* family: ipv4 | ipv6, which an ICMP version may contradict. */
static int parse_family(struct pol_ctx *c, yaml_node_t *n, struct match_src *m)
{
	int fam, err;

	err = ENUM(c, n, "family", family_names, &fam);
	if (err)
		return err;
	m->family = fam ? 6 : 4;
	if ((m->proto == IPPROTO_ICMP && m->family == 6) ||
	    (m->proto == IPPROTO_ICMPV6 && m->family == 4))
		return FAIL(c, n, "family %s contradicts proto %s", fam ? "ipv6" : "ipv4",
			    fam ? "icmp" : "icmpv6");
	return 0;
}

static const char *const match_keys[] = {
	"proto", "sport", "dport", "tcp_flags", "icmp_type", "src", "family",
};
enum {
	MK_PROTO,
	MK_SPORT,
	MK_DPORT,
	MK_FLAGS,
	MK_ICMP,
	MK_SRC,
	MK_FAMILY
};

static int parse_match(struct pol_ctx *c, yaml_node_t *n, struct match_src *m)
{
	struct pol_keys ks = KEYS("match", match_keys);
	int tcpudp, icmp, err;
	__u64 v;

	m->proto = -1;
	m->icmp_type = -1;
	if (!n || pol_is_null(n))
		return 0;
	err = pol_read_map(c, n, "match", "{proto: tcp, dport: 22}", &ks);
	if (err)
		return err;
	if (ks.val[MK_PROTO]) {
		err = parse_proto(c, ks.val[MK_PROTO], &m->proto);
		if (err)
			return err;
	}
	tcpudp = m->proto == IPPROTO_TCP || m->proto == IPPROTO_UDP;
	icmp = m->proto == IPPROTO_ICMP || m->proto == IPPROTO_ICMPV6;
	if (ks.val[MK_SPORT] &&
	    (err = match_ports(c, ks.val[MK_SPORT], "sport", tcpudp, &m->sp, &m->nsp)))
		return err;
	if (ks.val[MK_DPORT] &&
	    (err = match_ports(c, ks.val[MK_DPORT], "dport", tcpudp, &m->dp, &m->ndp)))
		return err;
	m->has_ports = ks.val[MK_SPORT] || ks.val[MK_DPORT];
	if (ks.val[MK_FLAGS]) {
		if (m->proto != IPPROTO_TCP)
			return FAIL(c, ks.val[MK_FLAGS], "tcp_flags needs proto: tcp");
		err = parse_tcp_flags(c, ks.val[MK_FLAGS], &m->tcp_mask, &m->tcp_val);
		if (err)
			return err;
		m->has_flags = 1;
	}
	if (ks.val[MK_ICMP]) {
		if (!icmp)
			return FAIL(c, ks.val[MK_ICMP], "icmp_type needs proto: icmp or icmpv6");
		err = pol_parse_uint(c, ks.val[MK_ICMP], "icmp_type", 0, 255, &v);
		if (err)
			return err;
		m->icmp_type = (int)v;
	}
	if (ks.val[MK_SRC]) {
		err = parse_src_set(c, ks.val[MK_SRC], &m->sets);
		if (err)
			return err;
	}
	if (ks.val[MK_FAMILY])
		return parse_family(c, ks.val[MK_FAMILY], m);
	return 0;
}

/* Expand a rule's match into entries, in rule order, per class. */
static int expand_match(struct pol_ctx *c, yaml_node_t *where, const struct match_src *m, int rule)
{
	static const struct port_range any = { 0, 65535 };
	struct fg_policy *pol = &c->cfg->pol;
	size_t nsp = m->nsp ? m->nsp : 1, ndp = m->ndp ? m->ndp : 1, i, j;
	int cls, lo = 0, hi = FG_NCLASS - 1;
	__u8 flags = 0;

	if (m->proto >= 0)
		lo = hi = proto_class(m->proto);
	if (m->has_ports || m->has_flags || m->icmp_type >= 0)
		flags |= FG_M_L4;
	if (m->icmp_type >= 0)
		flags |= FG_M_ICMP_TYPE;
	if (m->family == 4 || m->proto == IPPROTO_ICMP)
		flags |= FG_M_V4;
	if (m->family == 6 || m->proto == IPPROTO_ICMPV6)
		flags |= FG_M_V6;
	for (cls = lo; cls <= hi; cls++) {
		/* one entry per class stays free for the fragments rule */
		if (nsp * ndp > (size_t)(FG_MAX_MATCH - 1 - pol->nmatch[cls]))
			return FAIL(
				c, where,
				"too many match entries in class %s: this rule needs %zu, %d left (at most %d per class, one kept for fragments; a port list expands to sport x dport entries)",
				fg_class_names[cls], nsp * ndp, FG_MAX_MATCH - 1 - pol->nmatch[cls],
				FG_MAX_MATCH);
		for (i = 0; i < nsp; i++) {
			for (j = 0; j < ndp; j++) {
				struct fg_match *e = &pol->match[cls][pol->nmatch[cls]++];
				const struct port_range *sr = m->nsp ? &m->sp[i] : &any;
				const struct port_range *dr = m->ndp ? &m->dp[j] : &any;

				memset(e, 0, sizeof(*e));
				e->sport_lo = sr->lo;
				e->sport_hi = sr->hi;
				e->dport_lo = dr->lo;
				e->dport_hi = dr->hi;
				e->sets = m->sets;
				e->proto = m->proto < 0 ? 0 : (__u8)m->proto;
				e->tcp_mask = m->tcp_mask;
				e->tcp_val = m->tcp_val;
				e->icmp_type = m->icmp_type < 0 ? 0 : (__u8)m->icmp_type;
				e->flags = flags;
				e->rule = (__u16)rule;
			}
		}
	}
	return 0;
}

int pol_rule_match(struct pol_ctx *c, yaml_node_t *n, yaml_node_t *match, int idx)
{
	struct match_src m = { 0 };
	int err;

	err = parse_match(c, match, &m);
	if (!err)
		err = expand_match(c, match ? match : n, &m, idx);
	free(m.sp);
	free(m.dp);
	return err;
}

/* An entry of port class cls that every frame of the class matches: no
 * port range, TCP flag, protocol beyond the class's own, family, fragment,
 * ICMP type or source set condition. */
static bool match_holds_class(const struct fg_match *e, int cls)
{
	__u8 own = cls == FG_CLASS_TCP ? IPPROTO_TCP : IPPROTO_UDP;

	return e->sport_lo == 0 && e->sport_hi == 65535 && e->dport_lo == 0 &&
	       e->dport_hi == 65535 && e->tcp_mask == 0 && e->tcp_val == 0 &&
	       (e->proto == 0 || e->proto == own) && e->flags == 0 && e->sets == 0;
}

/*
 * fg_policy.hint4, for each port class: the rule of its first match entry
 * that can take IPv4 (an IPv6-only entry and the fragments rule's are passed
 * over) when that rule is a limit with a per-source bucket; 0 when it is
 * not. The program starts that rule's set read before the lists and the
 * scan. fg_config_parse writes it, so every copy of a compiled policy
 * carries it (the apply's, the adoption's digest check). The first entry
 * is the one a frame of the class meets first, and the matched rule of
 * every frame when the class's first rule holds every port; a wrong guess
 * costs a hash and a line read, never a decision.
 *
 * And fg_policy.whole: the port classes whose first entry holds every
 * frame (match_holds_class), which the program then tests without the
 * index's reads.
 */
void fg_policy_hints(struct fg_policy *pol)
{
	pol->whole = 0;
	for (int cls = 0; cls < FG_NPCLASS; cls++) {
		pol->hint4[cls] = 0;
		for (int k = 0; k < pol->nmatch[cls] && k < FG_MAX_MATCH; k++) {
			const struct fg_match *e = &pol->match[cls][k];
			const struct fg_rule *r;

			if (e->flags & (FG_M_V6 | FG_M_FRAG))
				continue;
			if (e->rule >= pol->nrules || e->rule >= FG_MAX_RULES)
				break;
			if (k == 0 && match_holds_class(e, cls))
				pol->whole |= (__u8)(1u << cls);
			r = &pol->rules[e->rule];
			if (r->action == FG_ACT_LIMIT && r->src.inc)
				pol->hint4[cls] = (__u16)(e->rule + 1);
			break;
		}
	}
}
