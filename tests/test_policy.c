// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Policy compiler tests: good policies compile to the exact fg_policy the
 * XDP program expects, bad ones fail at the exact line:col with a message
 * that names the problem, and prefix flattening agrees with a brute-force
 * reference on random nested lists. The longer policies, good and bad, are
 * YAML in tests/policies/cases/ (the format: tests/polcase.h); "spec" there
 * is the format's reference example.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "fgtest.h"
#include "policy/policy.h"
#include "policy/admission.h"
#include "lib/units.h"
#include "conn/conn.h"
#include "lib/sysutil.h"
#include "maps/mapimg.h"
#include "polcase.h"
#include "policy/policy_kernel.h"

#define TU FG_TU_PER_SEC

static int parse(const char *yaml, struct fg_config *cfg, struct fg_err *err)
{
	return fg_config_parse(yaml, strlen(yaml), "t.yaml", cfg, err);
}

/* Parse a policy that must be good; prints the error if it is not. */
static int parse_ok(const char *yaml, struct fg_config *cfg)
{
	struct fg_err err;
	char buf[1024];
	int r = parse(yaml, cfg, &err);

	if (r) {
		fg_err_format(&err, buf, sizeof(buf));
		printf("  unexpected error: %s\n", buf);
	}
	return r;
}

/* The policy of one rule, "rules:\n  - name: NAME\n" and the rule's lines
 * from a format, parsed into *cfg: ASSERT_OK(..., what). */
static int __attribute__((format(printf, 4, 5)))
parse_rule_okf(struct fg_config *cfg, const char *what, const char *name, const char *fmt, ...)
{
	char y[1024];
	int off = snprintf(y, sizeof(y), "rules:\n  - name: %s\n", name);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(y + off, sizeof(y) - (size_t)off, fmt, ap);
	va_end(ap);
	return ASSERT_OK(parse_ok(y, cfg), what);
}

/* For each row i of table t: the one-rule policy of parse_rule_okf(&cfg,
 * ...) and, when it parsed, the statement that follows on cfg; then cfg is
 * freed. */
#define FOR_EACH_RULE_ROW(t, i, cfg, ...)                                             \
	for (size_t i = 0; i < sizeof(t) / sizeof((t)[0]); i++)                       \
		for (struct fg_config cfg,                                            \
		     *cfg##_parsed = parse_rule_okf(&cfg, __VA_ARGS__) ? &cfg : NULL; \
		     cfg##_parsed; fg_config_free(&cfg), cfg##_parsed = NULL)

static const struct fg_match *entry(const struct fg_config *cfg, int cls, int i)
{
	return &cfg->pol.match[cls][i];
}

static int rule_index(const struct fg_config *cfg, const char *name)
{
	__u32 i;

	for (i = 0; i < cfg->pol.nrules; i++)
		if (!strcmp(cfg->rules[i].name, name))
			return (int)i;
	return -1;
}

/* The named policies of tests/policies/cases/policy.cases, read by main. */
static struct pc_file policies;

/* The policy called name there; "" (which fails to parse) if it has none. */
static const char *policy(const char *name)
{
	const char *y = pc_yaml(&policies, name);

	if (!y)
		fg_test_fail(__FILE__, __LINE__,
			     "no policy \"%s\" in tests/policies/cases/policy.cases", name);
	return y ? y : "";
}

/* A test of one policy from policy.cases: parsed (checked as "parse"), its
 * checks run on the result, then freed. */
static void policy_test(const char *name, void (*checks)(const struct fg_config *cfg))
{
	struct fg_config cfg;

	if (!ASSERT_OK(parse_ok(policy(name), &cfg), "parse"))
		return;
	checks(&cfg);
	fg_config_free(&cfg);
}

/* The test function test, of policy name; the checks' body follows, on cfg. */
#define POLICY_TEST(test, name)                                 \
	static void test##_checks(const struct fg_config *cfg); \
	static void test(void)                                  \
	{                                                       \
		policy_test(name, test##_checks);               \
	}                                                       \
	static void test##_checks(const struct fg_config *cfg)

/* fg_policy.hint4 as the compiler writes it (fg_policy_hints) */
static __u16 hint_of(const struct fg_config *cfg, int cls)
{
	return cfg->pol.hint4[cls];
}

/* ---- the format's reference example -------------------------------------- */

static void test_spec_globals(void)
{
	struct fg_config cfg;

	if (!ASSERT_OK(parse_ok(policy("spec"), &cfg), "parse"))
		return;
	ASSERT_EQ(cfg.n_ifs, 1, "n_ifs");
	ASSERT_STR_CONTAINS(cfg.ifaces[0], "eth0", "ifaces[0]");
	ASSERT_EQ(cfg.xdp_mode, FG_XDP_NATIVE, "xdp_mode");
	ASSERT_EQ(cfg.mode, FG_MODE_SHADOW, "mode");
	ASSERT_EQ(cfg.max_sources, 1048576, "max_sources");
	ASSERT_TRUE(!strcmp(cfg.metrics, "127.0.0.1:9100"), "metrics");
	ASSERT_EQ(cfg.detach_on_exit, 0, "detach_on_exit");
	ASSERT_EQ(cfg.pol.malformed_verdict, FG_PASS, "malformed");
	ASSERT_EQ(cfg.pol.default_verdict, FG_DROP, "default");
	ASSERT_EQ(cfg.n_allow, 2, "n_allow");
	ASSERT_EQ(cfg.n_deny, 1, "n_deny");
	ASSERT_EQ(cfg.n_pfx, 3, "n_pfx");
	ASSERT_EQ(cfg.pol.lists, 3, "lists: v4 and v6");
	ASSERT_EQ(cfg.admission.set, 1, "admission.set");
	ASSERT_EQ((long long)cfg.admission.rate, 50000, "admission.rate");
	ASSERT_EQ((long long)cfg.admission.burst, 1000, "admission.burst");
	ASSERT_EQ(cfg.pol.ins.inc, 0, "ins left for fg_policy_set_admission");
	ASSERT_EQ(cfg.pol.nrules, 4, "nrules incl. fragments");
	ASSERT_TRUE(!strcmp(cfg.path, "t.yaml"), "path");
	fg_config_free(&cfg);
	ASSERT_TRUE(cfg.pfx == NULL, "free clears pfx");
}

POLICY_TEST(test_spec_limits, "spec")
{
	const struct fg_rule *r;

	r = &cfg->pol.rules[0];
	ASSERT_TRUE(!strcmp(cfg->rules[0].name, "ssh-syn"), "rule 0 name");
	ASSERT_EQ(cfg->rules[0].line, 14, "rule 0 line");
	ASSERT_EQ(r->src.inc, TU / 10, "ssh inc = TU/10");
	ASSERT_EQ(r->src.tau, 20 * (TU / 10), "ssh tau = 20 inc");
	ASSERT_EQ(r->ovf.inc, r->src.inc, "overflow defaults to per_source inc");
	ASSERT_EQ(r->ovf.tau, r->src.tau, "overflow defaults to per_source tau");
	ASSERT_EQ(r->agg.inc, 0, "no aggregate");
	ASSERT_EQ(r->cost, FG_COST_PKTS, "ssh cost");
	ASSERT_EQ(r->mode, FG_MODE_ENFORCE, "ssh mode");
	ASSERT_EQ(r->action, FG_ACT_LIMIT, "ssh action");
	ASSERT_EQ(r->on_full, FG_FULL_OVERFLOW, "ssh on_full");
	ASSERT_EQ(r->mask4, htonl(0xffffffff), "ssh mask4 /32");
	ASSERT_EQ(r->mask6[0], 0xffffffff, "ssh mask6[0]");
	ASSERT_EQ(r->mask6[1], 0xffffffff, "ssh mask6[1]");
	ASSERT_EQ(r->mask6[2], 0, "ssh mask6[2] (/64)");
	ASSERT_EQ(r->mask6[3], 0, "ssh mask6[3]");
	ASSERT_EQ(r->id, 0, "id left to the daemon");
	ASSERT_EQ(r->gen, 0, "gen left to the daemon");

	r = &cfg->pol.rules[1];
	ASSERT_EQ(r->src.inc, TU / 1000, "dns inc");
	ASSERT_EQ(r->src.tau, 2000 * (TU / 1000), "dns tau");
	ASSERT_EQ(r->agg.inc, TU / 50000, "dns agg inc");
	ASSERT_EQ(r->agg.tau, 100000 * (TU / 50000), "dns agg tau");
	ASSERT_EQ(r->mask4, htonl(0xffffff00), "dns mask4 /24");
	ASSERT_EQ(cfg->rules[1].plen4, 24, "plen4");
	ASSERT_EQ(cfg->rules[1].plen6, 64, "plen6");
	ASSERT_EQ((long long)cfg->rules[1].aggregate.rate, 50000, "aggregate.rate as written");

	r = &cfg->pol.rules[2];
	ASSERT_EQ(r->cost, FG_COST_BYTES, "udp-bulk cost bytes");
	ASSERT_EQ(r->mode, FG_MODE_SHADOW, "udp-bulk shadow");
	ASSERT_EQ(r->src.inc, TU / 10000000, "10MB/s inc = 6400");
	ASSERT_EQ(r->src.tau, 20000000ull * 6400, "20MB tau");
	ASSERT_EQ((long long)cfg->rules[2].per_source.rate, 10000000, "per_source.rate in B/s");

	r = &cfg->pol.rules[3];
	ASSERT_TRUE(!strcmp(cfg->rules[3].name, "fragments"), "fragments last");
	ASSERT_EQ(cfg->rules[3].implicit, 1, "fragments implicit");
	ASSERT_EQ(r->src.inc, TU / 50, "fragments from fragments: key");
	ASSERT_EQ(r->src.tau, 70 * (TU / 50), "fragments tau");
}

POLICY_TEST(test_spec_match, "spec")
{
	const struct fg_match *m;
	static const __u16 dns[] = { 53, 123, 1900, 11211 };
	int i;

	ASSERT_EQ(cfg->pol.nmatch[FG_CLASS_TCP], 2, "tcp: ssh + fragments");
	ASSERT_EQ(cfg->pol.nmatch[FG_CLASS_UDP], 6, "udp: 4 dns + bulk + fragments");
	ASSERT_EQ(cfg->pol.nmatch[FG_CLASS_ICMP], 1, "icmp: fragments");
	ASSERT_EQ(cfg->pol.nmatch[FG_CLASS_OTHER], 1, "other: fragments");
	ASSERT_EQ(hint_of(cfg, FG_CLASS_TCP), 1, "spec: tcp hint, ssh (0) + 1");
	ASSERT_EQ(hint_of(cfg, FG_CLASS_UDP), 2, "spec: udp hint, dns (1) + 1");

	m = entry(cfg, FG_CLASS_TCP, 0);
	ASSERT_EQ(m->rule, 0, "tcp[0] rule");
	ASSERT_EQ(m->proto, 6, "tcp[0] proto");
	ASSERT_EQ(m->dport_lo, 22, "dport_lo");
	ASSERT_EQ(m->dport_hi, 22, "dport_hi");
	ASSERT_EQ(m->sport_lo, 0, "sport_lo any");
	ASSERT_EQ(m->sport_hi, 65535, "sport_hi any");
	ASSERT_EQ(m->tcp_mask, FG_TCP_SYN | FG_TCP_ACK, "syn: mask SYN|ACK");
	ASSERT_EQ(m->tcp_val, FG_TCP_SYN, "syn: val SYN");
	ASSERT_EQ(m->flags, FG_M_L4, "tcp[0] flags");
	ASSERT_EQ(m->sets, 0, "no sets");

	for (i = 0; i < 4; i++) {
		m = entry(cfg, FG_CLASS_UDP, i);
		ASSERT_EQ(m->rule, 1, "dns entries first, in order");
		ASSERT_EQ(m->sport_lo, dns[i], "dns sport_lo");
		ASSERT_EQ(m->sport_hi, dns[i], "dns sport_hi");
		ASSERT_EQ(m->dport_lo, 0, "dns dport_lo");
		ASSERT_EQ(m->dport_hi, 65535, "dns dport_hi");
		ASSERT_EQ(m->flags, FG_M_L4, "dns L4");
		ASSERT_EQ(m->proto, 17, "dns proto");
	}
	m = entry(cfg, FG_CLASS_UDP, 4);
	ASSERT_EQ(m->rule, 2, "udp-bulk after dns");
	ASSERT_EQ(m->flags, 0, "udp-bulk: no L4 (fragments of it match)");
	ASSERT_EQ(m->proto, 17, "udp-bulk proto");

	for (i = 0; i < FG_NCLASS; i++) {
		m = entry(cfg, i, cfg->pol.nmatch[i] - 1);
		ASSERT_EQ(m->rule, 3, "fragments entry last in class");
		ASSERT_EQ(m->flags, FG_M_FRAG, "fragments flags");
		ASSERT_EQ(m->proto, 0, "fragments proto 0");
		ASSERT_EQ(m->sport_hi, 65535, "fragments sport_hi");
		ASSERT_EQ(m->dport_hi, 65535, "fragments dport_hi");
	}
}

/* ---- defaults and expansion ------------------------------------------------- */

static void test_defaults(void)
{
	struct fg_config cfg;
	const struct fg_rule *r;

	if (!ASSERT_OK(parse_ok("rules: []\n", &cfg), "parse"))
		return;
	ASSERT_EQ(cfg.n_ifs, 0, "no interfaces");
	ASSERT_EQ(cfg.xdp_mode, FG_XDP_AUTO, "xdp auto");
	ASSERT_EQ(cfg.mode, FG_MODE_ENFORCE, "enforce");
	ASSERT_EQ(cfg.max_sources, 1u << 20, "max_sources default");
	ASSERT_EQ(cfg.detach_on_exit, 1, "detach default");
	ASSERT_EQ(cfg.metrics[0], 0, "metrics off");
	ASSERT_EQ(cfg.pol.default_verdict, FG_PASS, "default pass");
	ASSERT_EQ(cfg.pol.malformed_verdict, FG_DROP, "malformed drop");
	ASSERT_EQ(cfg.pol.nrules, 1, "only fragments");
	ASSERT_EQ(cfg.pol.lists, 0, "no lists");
	ASSERT_EQ(cfg.n_pfx, 0, "no prefixes");
	ASSERT_EQ(cfg.admission.set, 0, "no explicit admission");
	r = &cfg.pol.rules[0];
	ASSERT_EQ(r->src.inc, TU / 100, "fragments default 100/s");
	ASSERT_EQ(r->src.tau, 200 * (TU / 100), "fragments default burst 200");
	ASSERT_EQ(cfg.pol.nmatch[FG_CLASS_TCP], 1, "one fragments entry");
	fg_config_free(&cfg);

	/* empty values mean "the default" where that is meaningful */
	if (ASSERT_OK(
		    parse_ok(
			    "interfaces:\nrules:\nallow: ~\nadmission:\nfragments:\nmetrics: \"\"\n",
			    &cfg),
		    "nulls")) {
		ASSERT_EQ(cfg.pol.nrules, 1, "nulls: only fragments");
		ASSERT_EQ(cfg.pol.rules[0].src.inc, TU / 100, "nulls: default fragments");
		ASSERT_EQ(cfg.admission.set, 0, "nulls: automatic admission");
		ASSERT_EQ(cfg.metrics[0], 0, "nulls: metrics off");
	}
	fg_config_free(&cfg);

	/* metrics: the plain string, or a mapping with its limits */
	if (ASSERT_OK(parse_ok("metrics: {listen: \"[::1]:9100\", max_connections: 64, "
			       "per_client: 4, timeout: 2s}\n",
			       &cfg),
		      "metrics mapping")) {
		ASSERT_TRUE(!strcmp(cfg.metrics, "[::1]:9100"), "metrics mapping: listen");
		ASSERT_EQ(cfg.metrics_max_conn, 64, "metrics mapping: max_connections");
		ASSERT_EQ(cfg.metrics_per_client, 4, "metrics mapping: per_client");
		ASSERT_EQ(cfg.metrics_timeout_s, 2, "metrics mapping: timeout");
	}
	fg_config_free(&cfg);
	if (ASSERT_OK(parse_ok("metrics: {listen: \"0.0.0.0:9100\"}\n", &cfg),
		      "metrics mapping, listen only")) {
		ASSERT_TRUE(!strcmp(cfg.metrics, "0.0.0.0:9100"), "listen only: listen");
		ASSERT_EQ(cfg.metrics_max_conn + cfg.metrics_per_client + cfg.metrics_timeout_s, 0,
			  "listen only: the limits left to metrics.h's defaults");
	}
	fg_config_free(&cfg);

	/* an empty mapping is a valid, empty policy too */
	if (ASSERT_OK(parse_ok("{}\n", &cfg), "parse {}")) {
		ASSERT_EQ(cfg.pol.nrules, 1, "{}: only fragments");
		ASSERT_EQ(hint_of(&cfg, FG_CLASS_TCP) + hint_of(&cfg, FG_CLASS_UDP), 0,
			  "{}: the fragments rule's entries give no hint");
	}
	fg_config_free(&cfg);
}

/* The first IPv4-capable entry's rule, when it is a per-source limit. */
POLICY_TEST(test_hints, "hints")
{
	ASSERT_EQ(hint_of(cfg, FG_CLASS_UDP), 2,
		  "udp: an IPv6-only entry passed over, dns (1) + 1");
	ASSERT_EQ(hint_of(cfg, FG_CLASS_TCP), 0,
		  "tcp: the first entry is a pass rule: no hint, not the later limit");
}

/*
 * fg_policy.whole: set for a port class only when its first entry tests
 * nothing, since the program then takes that entry's rule for every frame
 * of the class without the index. Each case: a policy, the bits wanted.
 */
static void test_whole_class(void)
{
	static const struct {
		const char *yaml;
		unsigned want;
		const char *what;
	} c[] = {
		{ "rules:\n  - {name: a, match: {proto: udp}, per_source: {rate: 2/s, burst: 4}}\n",
		  1u << FG_CLASS_UDP, "proto udp alone: udp whole" },
		{ "rules:\n  - {name: a, match: {proto: tcp}, action: pass}\n", 1u << FG_CLASS_TCP,
		  "proto tcp, a pass rule: tcp whole (any action)" },
		{ "rules:\n  - {name: a, per_source: {rate: 2/s, burst: 4}}\n",
		  1u << FG_CLASS_TCP | 1u << FG_CLASS_UDP, "no match at all: both classes whole" },
		{ "rules:\n  - {name: a, match: {proto: udp, dport: 53}, action: drop}\n"
		  "  - {name: b, match: {proto: udp}, action: pass}\n",
		  0, "a port first: not whole, whatever follows" },
		{ "rules:\n  - {name: a, match: {proto: udp, sport: 1024-65535}, action: drop}\n",
		  0, "a source port range: not whole" },
		{ "rules:\n  - {name: a, match: {proto: tcp, tcp_flags: syn}, action: drop}\n", 0,
		  "tcp flags: not whole" },
		{ "rules:\n  - {name: a, match: {proto: udp, family: ipv4}, action: drop}\n", 0,
		  "one family: not whole" },
		{ "rules:\n  - {name: a, match: {proto: udp, src: [10.0.0.0/8]}, action: drop}\n",
		  0, "a source set: not whole" },
		{ "{}\n", 0, "only the fragments rule (fragments only): not whole" },
	};
	struct fg_config cfg;

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		if (ASSERT_OK(parse_ok(c[i].yaml, &cfg), c[i].what))
			ASSERT_EQ(cfg.pol.whole, c[i].want, c[i].what);
		fg_config_free(&cfg);
	}
}

POLICY_TEST(test_proto_any_every_class, "proto_any")
{
	int c;
	ASSERT_EQ(hint_of(cfg, FG_CLASS_TCP), 0, "proto_any: tcp's first rule passes: no hint");
	ASSERT_EQ(hint_of(cfg, FG_CLASS_UDP), 2,
		  "proto_any: udp's first rule is everything (1) + 1");

	ASSERT_EQ(cfg->pol.nmatch[FG_CLASS_TCP], 4, "tcp: first, everything, v6only, fragments");
	ASSERT_EQ(entry(cfg, FG_CLASS_TCP, 0)->rule, 0, "tcp order 0");
	ASSERT_EQ(entry(cfg, FG_CLASS_TCP, 1)->rule, 1, "tcp order 1");
	ASSERT_EQ(entry(cfg, FG_CLASS_TCP, 2)->rule, 2, "tcp order 2");
	for (c = FG_CLASS_UDP; c < FG_NCLASS; c++) {
		ASSERT_EQ(cfg->pol.nmatch[c], 3, "other classes: everything, v6only, fragments");
		ASSERT_EQ(entry(cfg, c, 0)->rule, 1, "everything first");
		ASSERT_EQ(entry(cfg, c, 0)->proto, 0, "any: proto 0");
		ASSERT_EQ(entry(cfg, c, 0)->flags, 0, "any: no flags");
		ASSERT_EQ(entry(cfg, c, 1)->rule, 2, "v6only second");
		ASSERT_EQ(entry(cfg, c, 1)->flags, FG_M_V6, "family ipv6 flag");
	}
	ASSERT_EQ(cfg->pol.rules[0].action, FG_ACT_PASS, "action pass");
	ASSERT_EQ(cfg->pol.rules[0].src.inc, 0, "pass: no limit");
	ASSERT_EQ(cfg->pol.rules[2].action, FG_ACT_DROP, "action drop");
}

POLICY_TEST(test_port_cross_product, "port_cross")
{
	static const __u16 exp[4][4] = {
		{ 1, 1, 3, 3 },
		{ 1, 1, 10, 20 },
		{ 2, 2, 3, 3 },
		{ 2, 2, 10, 20 },
	};
	int i;

	ASSERT_EQ(cfg->pol.nmatch[FG_CLASS_TCP], 5, "4 entries + fragments");
	for (i = 0; i < 4; i++) {
		const struct fg_match *m = entry(cfg, FG_CLASS_TCP, i);

		ASSERT_EQ(m->sport_lo, exp[i][0], "sport_lo");
		ASSERT_EQ(m->sport_hi, exp[i][1], "sport_hi");
		ASSERT_EQ(m->dport_lo, exp[i][2], "dport_lo");
		ASSERT_EQ(m->dport_hi, exp[i][3], "dport_hi");
		ASSERT_EQ(m->rule, 0, "rule");
	}
	ASSERT_EQ(entry(cfg, FG_CLASS_UDP, 0)->dport_lo, 1024, "range lo");
	ASSERT_EQ(entry(cfg, FG_CLASS_UDP, 0)->dport_hi, 65535, "range hi");
	ASSERT_EQ(cfg->pol.rules[1].src.inc, 0, "aggregate-only: no per-source limit");
	ASSERT_EQ(cfg->pol.rules[1].ovf.inc, 0, "aggregate-only: no overflow");
	ASSERT_EQ(cfg->pol.rules[1].agg.inc, TU, "1/s");
	ASSERT_EQ(hint_of(cfg, FG_CLASS_TCP), 1, "port_cross: tcp's rule x (0) + 1");
	ASSERT_EQ(hint_of(cfg, FG_CLASS_UDP), 0, "port_cross: aggregate-only: no per-source set");
}

static void test_tcp_flags_forms(void)
{
	static const struct {
		const char *flags;
		__u8 mask, val;
	} t[] = {
		{ "syn", FG_TCP_SYN | FG_TCP_ACK, FG_TCP_SYN },
		{ "SYN", FG_TCP_SYN | FG_TCP_ACK, FG_TCP_SYN },
		{ "syn+ack", FG_TCP_SYN | FG_TCP_ACK, FG_TCP_SYN | FG_TCP_ACK },
		{ "[syn, ack]", FG_TCP_SYN | FG_TCP_ACK, FG_TCP_SYN | FG_TCP_ACK },
		{ "[syn]", FG_TCP_SYN | FG_TCP_ACK, FG_TCP_SYN },
		{ "rst", FG_TCP_RST, FG_TCP_RST },
		{ "fin", FG_TCP_FIN, FG_TCP_FIN },
		{ "S/SA", FG_TCP_SYN | FG_TCP_ACK, FG_TCP_SYN },
		{ "/R", FG_TCP_RST, 0 },
		{ "SA/SAFR", FG_TCP_SYN | FG_TCP_ACK | FG_TCP_FIN | FG_TCP_RST,
		  FG_TCP_SYN | FG_TCP_ACK },
		{ "ece+cwr", FG_TCP_ECE | FG_TCP_CWR, FG_TCP_ECE | FG_TCP_CWR },
	};
	FOR_EACH_RULE_ROW(t, i, cfg, t[i].flags, "f",
			  "    match: {proto: tcp, tcp_flags: %s}\n"
			  "    per_source: {rate: 1/s, burst: 1}\n",
			  t[i].flags)
	{
		ASSERT_EQ(entry(&cfg, FG_CLASS_TCP, 0)->tcp_mask, t[i].mask, t[i].flags);
		ASSERT_EQ(entry(&cfg, FG_CLASS_TCP, 0)->tcp_val, t[i].val, t[i].flags);
		ASSERT_EQ(entry(&cfg, FG_CLASS_TCP, 0)->flags, FG_M_L4, "flags need L4");
	}
}

POLICY_TEST(test_icmp_and_numeric_proto, "icmp")
{
	const struct fg_match *m;

	ASSERT_EQ(cfg->pol.nmatch[FG_CLASS_ICMP], 4, "icmp class: 3 + fragments");
	m = entry(cfg, FG_CLASS_ICMP, 0);
	ASSERT_EQ(m->proto, 1, "echo4 proto");
	ASSERT_EQ(m->icmp_type, 8, "echo4 type");
	ASSERT_EQ(m->flags, FG_M_L4 | FG_M_ICMP_TYPE | FG_M_V4, "echo4 flags");
	m = entry(cfg, FG_CLASS_ICMP, 1);
	ASSERT_EQ(m->proto, 58, "echo6 proto");
	ASSERT_EQ(m->icmp_type, 128, "echo6 type");
	ASSERT_EQ(m->flags, FG_M_L4 | FG_M_ICMP_TYPE | FG_M_V6, "echo6 flags");
	m = entry(cfg, FG_CLASS_ICMP, 2);
	ASSERT_EQ(m->proto, 1, "proto 1 is icmp");
	ASSERT_EQ(m->flags, FG_M_V4, "icmp implies v4, no L4");
	ASSERT_EQ(cfg->pol.nmatch[FG_CLASS_OTHER], 3, "other: gre, sctp6, fragments");
	m = entry(cfg, FG_CLASS_OTHER, 0);
	ASSERT_EQ(m->proto, 47, "gre proto");
	ASSERT_EQ(m->flags, FG_M_V4, "gre v4");
	ASSERT_EQ(cfg->pol.rules[3].src.inc, TU * 60, "1/m");
	m = entry(cfg, FG_CLASS_OTHER, 1);
	ASSERT_EQ(m->proto, 132, "sctp proto");
	ASSERT_EQ(m->flags, FG_M_V6, "sctp v6");
	ASSERT_EQ(cfg->pol.rules[4].src.inc, TU * 1800, "2/h");
	m = entry(cfg, FG_CLASS_TCP, 0);
	ASSERT_EQ(m->proto, 6, "numeric tcp lands in tcp class");
	ASSERT_EQ(m->dport_lo, 80, "numeric tcp takes ports");
}

/* nft's spellings of a rate: 10/second, /minute, /hour, /day (issue 23). */
static void test_nft_rates(void)
{
	static const struct {
		const char *rate;
		double per_s;
	} t[] = {
		{ "10/second", 10 },
		{ "60/minute", 1 },
		{ "3600/hour", 1 },
		{ "86400/day", 1 },
	};
	char yaml[256];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct fg_config cfg;

		snprintf(yaml, sizeof(yaml),
			 "rules:\n  - name: a\n    per_source: {rate: %s, burst: 5}\n", t[i].rate);
		if (!ASSERT_OK(parse_ok(yaml, &cfg), t[i].rate))
			continue;
		ASSERT_NEAR(cfg.rules[0].per_source.rate, t[i].per_s, 1e-9, t[i].rate);
		fg_config_free(&cfg);
	}
}

/* A prefix with host bits set works (masked) and is warned about, with its place. */
static void test_host_bits_warned(void)
{
	struct fg_config cfg;

	if (!ASSERT_OK(parse_ok("allow: [10.1.2.3/8, 192.0.2.0/24]\nrules:\n  - name: a\n"
				"    match: {src: [\"2001:db8::1/64\"]}\n"
				"    per_source: {rate: 1/s, burst: 1}\n",
				&cfg),
		       "host bits: accepted"))
		return;
	ASSERT_EQ(cfg.n_warn, 2, "host bits: two warnings (192.0.2.0/24 has none)");
	ASSERT_EQ(cfg.warn[0].line, 1, "host bits: line of the first");
	ASSERT_EQ(cfg.warn[0].col, 9, "host bits: column of the first");
	ASSERT_STR_CONTAINS(cfg.warn[0].msg,
			    "allow: 10.1.2.3/8 has host bits set: it means 10.0.0.0/8",
			    "host bits: the first says what it means");
	ASSERT_STR_CONTAINS(cfg.warn[1].msg,
			    "src: 2001:db8::1/64 has host bits set: it means 2001:db8::/64",
			    "host bits: IPv6 too");
	ASSERT_EQ(cfg.warn[1].line, 4, "host bits: line of the second");
	fg_config_free(&cfg);
}

static void test_rate_units(void)
{
	static const struct {
		const char *rate, *burst;
		__u64 inc, tau;
		int cost;
	} t[] = {
		{ "1/s", "1", TU, TU, FG_COST_PKTS },
		{ "3/s", "1", 21333333333ull, 21333333333ull, FG_COST_PKTS }, /* rounded */
		{ "2/s", "1", TU / 2, TU / 2, FG_COST_PKTS },
		{ "60/min", "5", TU, 5 * TU, FG_COST_PKTS },
		{ "1/h", "2", 3600 * TU, 7200 * TU, FG_COST_PKTS },
		{ "1.5/s", "3", 42666666667ull, 3 * 42666666667ull, FG_COST_PKTS },
		{ "1000B/s", "1514B", TU / 1000, 1514 * (TU / 1000), FG_COST_BYTES },
		{ "1KB/s", "2KB", TU / 1000, 2000 * (TU / 1000), FG_COST_BYTES },
		{ "1KiB/s", "2KiB", 62500000, 2048ull * 62500000, FG_COST_BYTES },
		{ "1MiB/s", "1MiB", 61035, 1048576ull * 61035, FG_COST_BYTES }, /* 61035.15 */
		{ "1GB/s", "1GB", 64, 64000000000ull, FG_COST_BYTES },
		{ "10GiB/s", "1GiB", 6, 6ull << 30, FG_COST_BYTES }, /* 5.96 */
		{ "64000000000/s", "1", 1, 1, FG_COST_PKTS },	     /* the fastest */
		{ "1.5 MB/s", "1.5MB", 42667, 1500000ull * 42667, FG_COST_BYTES },
	};
	FOR_EACH_RULE_ROW(t, i, cfg, t[i].rate, "r",
			  "    per_source: {rate: \"%s\", burst: \"%s\"}\n", t[i].rate, t[i].burst)
	{
		ASSERT_EQ(cfg.pol.rules[0].src.inc, t[i].inc, t[i].rate);
		ASSERT_EQ(cfg.pol.rules[0].src.tau, t[i].tau, t[i].burst);
		ASSERT_EQ(cfg.pol.rules[0].cost, t[i].cost, "cost");
	}
}

static void test_masks(void)
{
	static const struct {
		int p4, p6;
		__u32 m4, m6[4];
	} t[] = {
		{ 0, 0, 0, { 0, 0, 0, 0 } },
		{ 8, 48, 0xff000000, { 0xffffffff, 0xffff0000, 0, 0 } },
		{ 31, 128, 0xfffffffe, { 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff } },
		{ 32, 96, 0xffffffff, { 0xffffffff, 0xffffffff, 0xffffffff, 0 } },
		{ 17, 1, 0xffff8000, { 0x80000000, 0, 0, 0 } },
	};
	FOR_EACH_RULE_ROW(t, i, cfg, "parse", "r",
			  "    per_source: {rate: 1/s, burst: 1, prefix_v4: %d, prefix_v6: %d}\n",
			  t[i].p4, t[i].p6)
	{
		ASSERT_EQ(cfg.pol.rules[0].mask4, htonl(t[i].m4), "mask4");
		for (int k = 0; k < 4; k++)
			ASSERT_EQ(cfg.pol.rules[0].mask6[k], htonl(t[i].m6[k]), "mask6");
	}
}

POLICY_TEST(test_rule_options, "rule_options")
{
	const struct fg_rule *r;

	r = &cfg->pol.rules[0];
	ASSERT_EQ(r->ovf.inc, TU / 100, "explicit overflow inc");
	ASSERT_EQ(r->ovf.tau, 100 * (TU / 100), "explicit overflow tau");
	ASSERT_EQ(cfg->pol.rules[1].on_full, FG_FULL_CLOSED, "closed");
	ASSERT_EQ(cfg->pol.rules[2].on_full, FG_FULL_OPEN, "open");
	ASSERT_EQ(cfg->pol.nrules, 4, "nrules");
	ASSERT_EQ(cfg->pol.rules[3].action, FG_ACT_DROP, "fragments: drop");
	ASSERT_EQ(cfg->pol.rules[3].src.inc, 0, "fragments drop: no limit");
}

/* ---- source sets and flattening -------------------------------------------- */

static const struct fg_pfx_entry *find_pfx(const struct fg_config *cfg, const char *s)
{
	char buf[64];
	char *slash;
	__u8 addr[16] = { 0 };
	int fam, plen;
	size_t i;

	snprintf(buf, sizeof(buf), "%s", s);
	slash = strchr(buf, '/');
	*slash = 0;
	plen = atoi(slash + 1);
	fam = strchr(buf, ':') ? 6 : 4;
	if (inet_pton(fam == 6 ? AF_INET6 : AF_INET, buf, addr) != 1)
		return NULL;
	for (i = 0; i < cfg->n_pfx; i++)
		if (cfg->pfx[i].family == fam && cfg->pfx[i].plen == plen &&
		    !memcmp(cfg->pfx[i].addr, addr, 16))
			return &cfg->pfx[i];
	return NULL;
}

static void check_pfx(const struct fg_config *cfg, const char *p, int list, __u32 sets)
{
	const struct fg_pfx_entry *e = find_pfx(cfg, p);

	if (!ASSERT_TRUE(e != NULL, p))
		return;
	ASSERT_EQ(e->list, list, p);
	ASSERT_EQ(e->sets, sets, p);
}

static void test_flatten_nested(void)
{
	struct fg_config cfg;
	const struct fg_match *m;

	if (!ASSERT_OK(parse_ok(policy("flatten_nested"), &cfg), "parse"))
		return;
	ASSERT_EQ(cfg.n_allow, 4, "n_allow as written");
	ASSERT_EQ(cfg.n_deny, 4, "n_deny as written");
	check_pfx(&cfg, "10.0.0.0/8", FG_LIST_DENY, 0);
	check_pfx(&cfg, "10.1.0.0/16", FG_LIST_ALLOW, 0);
	check_pfx(&cfg, "10.1.2.0/24", FG_LIST_ALLOW, 0);   /* allow wins */
	check_pfx(&cfg, "10.1.2.128/25", FG_LIST_ALLOW, 1); /* set a */
	check_pfx(&cfg, "192.168.0.0/16", FG_LIST_ALLOW, 0);
	check_pfx(&cfg, "192.168.1.1/32", FG_LIST_ALLOW, 0); /* allowlisted deny */
	check_pfx(&cfg, "172.16.0.0/12", FG_LIST_NONE, 1);
	check_pfx(&cfg, "172.16.5.0/24", FG_LIST_NONE, 3); /* sets a and b */
	check_pfx(&cfg, "2001:db8::/32", FG_LIST_DENY, 2); /* deny + set b */
	check_pfx(&cfg, "2001:db8:1::/48", FG_LIST_ALLOW, 2);
	check_pfx(&cfg, "2001:db8:0:1::/64", FG_LIST_DENY, 2);
	ASSERT_EQ(cfg.n_pfx, 11, "distinct prefixes");
	ASSERT_EQ(cfg.pol.lists, 3, "lists");
	/* c's list is a's in another order, host bits set: the same set */
	m = entry(&cfg, FG_CLASS_TCP, 0);
	ASSERT_EQ(m->sets, 1, "a: set bit 0");
	m = entry(&cfg, FG_CLASS_TCP, 1);
	ASSERT_EQ(m->sets, 2, "b: set bit 1");
	m = entry(&cfg, FG_CLASS_TCP, 2);
	ASSERT_EQ(m->sets, 1, "c: same set as a");
	fg_config_free(&cfg);

	if (ASSERT_OK(parse_ok("deny: [\"::/0\"]\n", &cfg), "v6 only")) {
		ASSERT_EQ(cfg.pol.lists, 2, "lists: v6 only");
		check_pfx(&cfg, "::/0", FG_LIST_DENY, 0);
	}
	fg_config_free(&cfg);
	if (ASSERT_OK(parse_ok("allow: 10.9.8.7/8\n", &cfg), "single scalar")) {
		ASSERT_EQ(cfg.pol.lists, 1, "lists: v4 only");
		check_pfx(&cfg, "10.0.0.0/8", FG_LIST_ALLOW, 0); /* masked */
	}
	fg_config_free(&cfg);
}

static void test_max_sets(void)
{
	char *y = malloc(64 * 1024);
	size_t off = 0;
	struct fg_config cfg;
	struct fg_err err;
	int i;

	off += sprintf(y + off, "rules:\n");
	for (i = 0; i < FG_MAX_SETS + 1; i++)
		off += sprintf(y + off,
			       "  - name: r%d\n"
			       "    match: {src: [10.%d.0.0/16]}\n"
			       "    per_source: {rate: 1/s, burst: 1}\n",
			       i, i);
	ASSERT_EQ(parse(y, &cfg, &err), -EINVAL, "33 sets");
	ASSERT_EQ(err.line, 2 + 3 * FG_MAX_SETS + 1, "line of the 33rd set");
	ASSERT_EQ(err.col, 18, "col");
	ASSERT_STR_CONTAINS(err.msg, "too many distinct source sets", "msg");
	/* 32 is fine, and the same list again reuses a bit */
	y[0] = 0;
	off = sprintf(y, "rules:\n");
	for (i = 0; i < FG_MAX_SETS + 5; i++)
		off += sprintf(y + off,
			       "  - name: r%d\n"
			       "    match: {src: [10.%d.0.0/16]}\n"
			       "    per_source: {rate: 1/s, burst: 1}\n",
			       i, i % FG_MAX_SETS);
	if (ASSERT_OK(parse_ok(y, &cfg), "32 sets")) {
		ASSERT_EQ(entry(&cfg, FG_CLASS_UDP, 31)->sets, 1u << 31, "bit 31");
		ASSERT_EQ(entry(&cfg, FG_CLASS_UDP, 33)->sets, 1u << 1, "reused bit");
	}
	fg_config_free(&cfg);
	free(y);
}

/* Brute force: for each distinct prefix, scan every written prefix. */
struct wp {
	int fam, plen, allow, deny;
	__u32 sets;
	__u8 addr[16];
};

static int wp_covers(const struct wp *a, const struct fg_pfx_entry *b)
{
	int i;

	if (a->fam != b->family || a->plen > b->plen)
		return 0;
	for (i = 0; i < a->plen; i++) {
		int bit = 0x80 >> (i % 8);

		if ((a->addr[i / 8] & bit) != (b->addr[i / 8] & bit))
			return 0;
	}
	return 1;
}

static void test_flatten_random_vs_reference(void)
{
	enum {
		NW = 1500
	};
	struct wp *w = calloc(NW, sizeof(*w));
	char *y = malloc(NW * 64 + 4096);
	char *lists[3];
	size_t off[3], sz = NW * 64;
	struct fg_config cfg;
	unsigned int seed = 12345;
	int i, j, k, bad = 0;

	for (k = 0; k < 3; k++) {
		lists[k] = malloc(sz);
		off[k] = 0;
	}
	/* small address space so that prefixes nest a lot */
	for (i = 0; i < NW; i++) {
		char a[64];
		int kind;

		seed = seed * 1103515245 + 12345;
		kind = (seed >> 16) % 3; /* allow, deny, set */
		w[i].fam = ((seed >> 8) & 1) ? 6 : 4;
		seed = seed * 1103515245 + 12345;
		w[i].plen = w[i].fam == 4 ? 8 + (int)((seed >> 16) % 25) :
					    16 + (int)((seed >> 16) % 113);
		seed = seed * 1103515245 + 12345;
		if (w[i].fam == 4) {
			w[i].addr[0] = 10;
			w[i].addr[1] = (__u8)((seed >> 16) & 3);
			w[i].addr[2] = (__u8)((seed >> 20) & 7);
			w[i].addr[3] = (__u8)((seed >> 24) & 0x81);
		} else {
			w[i].addr[0] = 0x20;
			w[i].addr[1] = 0x01;
			w[i].addr[2] = (__u8)((seed >> 16) & 3);
			w[i].addr[7] = (__u8)((seed >> 20) & 3);
			w[i].addr[15] = (__u8)((seed >> 24) & 3);
		}
		inet_ntop(w[i].fam == 4 ? AF_INET : AF_INET6, w[i].addr, a, sizeof(a));
		/* mask after printing: the compiler must mask host bits too */
		for (j = w[i].plen; j < 128; j++)
			w[i].addr[j / 8] &= (__u8) ~(0x80 >> (j % 8));
		w[i].allow = kind == 0;
		w[i].deny = kind == 1;
		w[i].sets = kind == 2 ? 1u << (i % 4) : 0;
		if (kind < 2)
			off[kind] += snprintf(lists[kind] + off[kind], sz - off[kind],
					      "%s\"%s/%d\"", off[kind] ? ", " : "", a, w[i].plen);
	}
	/* the sets: set s holds the written set prefixes with i % 4 == s */
	k = sprintf(y, "allow: [%s]\ndeny: [%s]\nrules:\n", off[0] ? lists[0] : "",
		    off[1] ? lists[1] : "");
	for (int s = 0; s < 4; s++) {
		size_t o = 0;

		for (i = 0; i < NW; i++) {
			char a[64];

			if (!w[i].sets || i % 4 != s)
				continue;
			inet_ntop(w[i].fam == 4 ? AF_INET : AF_INET6, w[i].addr, a, sizeof(a));
			o += snprintf(lists[2] + o, sz - o, "%s\"%s/%d\"", o ? ", " : "", a,
				      w[i].plen);
		}
		k += sprintf(y + k, "  - name: s%d\n    match: {src: [%s]}\n    action: pass\n", s,
			     lists[2]);
	}
	if (!ASSERT_OK(parse_ok(y, &cfg), "parse"))
		goto out;
	/* rule s got set bit s, since the lists are distinct and in order */
	for (i = 0; i < 4; i++)
		ASSERT_EQ(entry(&cfg, FG_CLASS_TCP, i)->sets, 1u << i, "set bit order");
	for (i = 0; i < (int)cfg.n_pfx; i++) {
		const struct fg_pfx_entry *e = &cfg.pfx[i];
		int allow = 0, deny = 0, found = 0;
		__u32 sets = 0;
		int list;

		for (j = 0; j < NW; j++) {
			if (!wp_covers(&w[j], e))
				continue;
			allow |= w[j].allow;
			deny |= w[j].deny;
			sets |= w[j].sets;
			found |= w[j].plen == e->plen;
		}
		list = allow ? FG_LIST_ALLOW : deny ? FG_LIST_DENY : FG_LIST_NONE;
		if (!found || e->list != (__u32)list || e->sets != sets)
			bad++;
	}
	ASSERT_EQ(bad, 0, "entries that differ from the brute-force reference");
	/* and every written prefix has its entry */
	for (i = 0, bad = 0; i < NW; i++) {
		for (j = 0; j < (int)cfg.n_pfx; j++)
			if (cfg.pfx[j].family == w[i].fam && cfg.pfx[j].plen == w[i].plen &&
			    !memcmp(cfg.pfx[j].addr, w[i].addr, 16))
				break;
		bad += j == (int)cfg.n_pfx;
	}
	ASSERT_EQ(bad, 0, "written prefixes without an entry");
	ASSERT_LE(cfg.n_pfx, NW, "n_pfx");
	ASSERT_GE(cfg.n_pfx, 100, "n_pfx (the data really nests and repeats)");
	fg_config_free(&cfg);
out:
	for (k = 0; k < 3; k++)
		free(lists[k]);
	free(y);
	free(w);
}

static void test_20000_prefixes(void)
{
	enum {
		N = 20000
	};
	char *y = malloc(N * 32 + 4096);
	size_t off = 0;
	struct fg_config cfg;
	int i, ok = 1;

	off += sprintf(y, "deny: [10.0.0.0/8, \"2001:db8::/32\"]\nallow:\n");
	for (i = 0; i < N / 2; i++)
		off += sprintf(y + off, "  - 10.%d.%d.0/24\n", i >> 8, i & 255);
	for (i = 0; i < N / 2; i++)
		off += sprintf(y + off, "  - \"2001:db8:%x::/48\"\n", i);
	if (!ASSERT_OK(parse_ok(y, &cfg), "parse"))
		goto out;
	ASSERT_EQ(cfg.n_allow, N, "n_allow");
	ASSERT_EQ(cfg.n_deny, 2, "n_deny");
	ASSERT_EQ(cfg.n_pfx, N + 2, "n_pfx");
	for (i = 0; i < (int)cfg.n_pfx; i++) {
		const struct fg_pfx_entry *e = &cfg.pfx[i];
		int cover = (e->family == 4 && e->plen == 8) || (e->family == 6 && e->plen == 32);

		ok &= e->list == (__u32)(cover ? FG_LIST_DENY : FG_LIST_ALLOW);
	}
	ASSERT_TRUE(ok, "every /24 and /48 allowed, the covers denied");
	check_pfx(&cfg, "10.39.15.0/24", FG_LIST_ALLOW, 0);
	check_pfx(&cfg, "2001:db8:270f::/48", FG_LIST_ALLOW, 0);
	fg_config_free(&cfg);
out:
	free(y);
}

/* ---- concurrency caps ---------------------------------------------------- */

static void test_concurrency(void)
{
	struct fg_conn_cap cap;
	struct fg_config cfg;
	const struct fg_rule *r;
	char why[FG_CONN_WHY_LEN];

	if (!ASSERT_OK(parse_ok(policy("concurrency"), &cfg), "parse"))
		return;
	r = &cfg.pol.rules[0];
	ASSERT_EQ(r->conn_cap, 10, "web: cap alone");
	ASSERT_EQ(r->conn_ttl_ms, FG_CONN_TTL_DEFAULT_MS, "web: default handshake_timeout");
	ASSERT_EQ(r->src.inc, 0, "web: no rate");
	ASSERT_EQ(r->ovf.inc, 0, "web: no overflow bucket");
	ASSERT_EQ(r->action, FG_ACT_LIMIT, "web: a limit rule");
	ASSERT_EQ(r->mask4, htonl(0xffffff00), "web: prefix_v4 groups the cap's key");
	ASSERT_EQ(r->mask6[1], htonl(0xffff0000), "web: prefix_v6 48");
	ASSERT_EQ(cfg.rules[0].per_source.set, 0, "web: no rate as written");
	r = &cfg.pol.rules[1];
	ASSERT_EQ(r->conn_cap, 3, "ssh: cap with a rate");
	ASSERT_EQ(r->conn_ttl_ms, 750, "ssh: handshake_timeout 750ms");
	ASSERT_EQ(r->src.inc, TU / 10, "ssh: the rate too");
	ASSERT_EQ(cfg.pol.rules[2].conn_cap, 0, "udp: no cap");
	ASSERT_EQ(cfg.conn_reconcile_ms, FG_CONN_RECONCILE_DEFAULT_MS, "reconcile default");
	ASSERT_EQ(cfg.conn_max_keys, FG_CONN_KEYS_DEFAULT, "max_keys default");

	/* what the daemon's cap table gets */
	if (ASSERT_OK(fg_conn_cap_of_rule(&cfg.pol, 0, &cap, why), "cap of web")) {
		ASSERT_EQ(cap.nranges, 3, "web: three port ranges");
		ASSERT_EQ(cap.dport[2].lo, 8000, "web: range lo");
		ASSERT_EQ(cap.dport[2].hi, 8099, "web: range hi");
		ASSERT_EQ(cap.families, FG_CONN_F_V4 | FG_CONN_F_V6, "web: both families");
		ASSERT_EQ(cap.cap, 10, "web: cap in the table");
		ASSERT_EQ(cap.mask4, htonl(0xffffff00), "web: mask in the table");
	}
	if (ASSERT_OK(fg_conn_cap_of_rule(&cfg.pol, 1, &cap, why), "cap of ssh")) {
		ASSERT_EQ(cap.nranges, 1, "ssh: one range");
		ASSERT_EQ(cap.families, FG_CONN_F_V6, "ssh: IPv6 only");
	}
	ASSERT_EQ(fg_conn_cap_of_rule(&cfg.pol, 2, &cap, why), -EINVAL, "udp has no cap");
	fg_config_free(&cfg);

	/* sport x dport expands to entries with the same dport: one range each */
	if (ASSERT_OK(
		    parse_ok("concurrency: {reconcile: 3s, max_keys: 8192}\n"
			     "rules:\n  - name: a\n"
			     "    match: {proto: tcp, sport: [1-1023, 2000], dport: [1, 2, 3, 4, 5, 6, 7, 8]}\n"
			     "    per_source: {concurrency: 1}\n",
			     &cfg),
		    "8 ranges x 2 sports")) {
		ASSERT_EQ(cfg.conn_reconcile_ms, 3000, "reconcile 3s");
		ASSERT_EQ(cfg.conn_max_keys, 8192, "max_keys");
		if (ASSERT_OK(fg_conn_cap_of_rule(&cfg.pol, 0, &cap, why), "cap of a"))
			ASSERT_EQ(cap.nranges, 8, "duplicates of one dport are one range");
		fg_config_free(&cfg);
	}
	/* on_full may go with a cap alone (it says what a refused pending entry does) */
	if (ASSERT_OK(parse_ok("rules:\n  - name: a\n    match: {proto: tcp}\n"
			       "    per_source: {concurrency: 2}\n    on_full: closed\n",
			       &cfg),
		      "on_full")) {
		ASSERT_EQ(cfg.pol.rules[0].on_full, FG_FULL_CLOSED, "on_full closed");
		fg_config_free(&cfg);
	}
}

/* ---- bad policies ------------------------------------------------------- */

static void test_bad_policies(void)
{
	pc_check_refused("tests/policies/cases/refused.cases", "bad");
}

static void test_error_format(void)
{
	struct fg_config cfg;
	struct fg_err err;
	char buf[1024];

	ASSERT_EQ(fg_config_parse("mode: x\n", 8, "p.yaml", &cfg, &err), -EINVAL, "parse");
	fg_err_format(&err, buf, sizeof(buf));
	ASSERT_STR_CONTAINS(buf, "p.yaml:1:7: mode: bad value \"x\"", "with a place");
	err.line = 0;
	fg_err_format(&err, buf, sizeof(buf));
	ASSERT_TRUE(!strncmp(buf, "p.yaml: mode", 12), "without a place");
	/* a NULL err is allowed */
	ASSERT_EQ(fg_config_parse("mode: x\n", 8, "p.yaml", &cfg, NULL), -EINVAL, "NULL err");
	/* a reader error (invalid UTF-8) gets a place from its offset */
	ASSERT_EQ(fg_config_parse("mode: enforce\nx: \xff\n", 18, "u.yaml", &cfg, &err), -EINVAL,
		  "utf8");
	ASSERT_EQ(err.line, 2, "utf8 line");
	ASSERT_EQ(err.col, 4, "utf8 col");
}

static void test_limits_on_counts(void)
{
	char *y = malloc(1 << 20);
	struct fg_config cfg;
	struct fg_err err;
	size_t off;
	int i;

	/* FG_MAX_RULES - 1 rules fit; one more does not */
	off = sprintf(y, "rules:\n");
	for (i = 0; i < FG_MAX_RULES - 1; i++)
		off += sprintf(y + off, "  - {name: r%d, action: pass}\n", i);
	if (ASSERT_OK(parse_ok(y, &cfg), "FG_MAX_RULES - 1 rules")) {
		ASSERT_EQ(cfg.pol.nrules, FG_MAX_RULES, "256 + fragments");
		ASSERT_EQ(cfg.pol.nmatch[FG_CLASS_OTHER], FG_MAX_RULES, "one entry each");
	}
	fg_config_free(&cfg);
	sprintf(y + off, "  - {name: r%d, action: pass}\n", i);
	ASSERT_EQ(parse(y, &cfg, &err), -EINVAL, "FG_MAX_RULES rules");
	ASSERT_EQ(err.line, 2 + FG_MAX_RULES - 1, "line of rule 257");
	ASSERT_EQ(err.col, 5, "col");
	ASSERT_STR_CONTAINS(err.msg,
			    "too many rules (at most 256, besides the implicit fragments rule)",
			    "msg");

	/* FG_MAX_MATCH - 1 entries per class fit (one kept for fragments), one more does not */
	off = sprintf(y, "rules:\n  - name: a\n    action: drop\n    match: {proto: udp, dport: [");
	for (i = 0; i < FG_MAX_MATCH - 1; i++)
		off += sprintf(y + off, "%s%d", i ? ", " : "", i + 1);
	strcpy(y + off, "]}\n");
	if (ASSERT_OK(parse_ok(y, &cfg), "1023 entries"))
		ASSERT_EQ(cfg.pol.nmatch[FG_CLASS_UDP], FG_MAX_MATCH, "full class");
	fg_config_free(&cfg);
	strcpy(y + off, ", 999]}\n");
	ASSERT_EQ(parse(y, &cfg, &err), -EINVAL, "1024 entries");
	ASSERT_EQ(err.line, 4, "line");
	ASSERT_EQ(err.col, 12, "col: the match");
	ASSERT_STR_CONTAINS(err.msg, "too many match entries in class udp", "msg");
	/* the cross product counts, across rules: a takes all but 117 */
	off = sprintf(
		y,
		"rules:\n  - {name: a, action: drop, match: {proto: tcp, dport: \"1-9\", sport: [");
	for (i = 0; i < FG_MAX_MATCH - 1 - 117; i++)
		off += sprintf(y + off, "%s%d", i ? ", " : "", i + 1);
	strcpy(y + off,
	       "]}}\n"
	       "  - {name: b, action: drop, match: {proto: tcp, sport: [1,2,3,4,5,6,7,8,9,10,11,12], dport: [1,2,3,4,5,6,7,8,9,10]}}\n"
	       "  - {name: c, action: drop, match: {proto: tcp}}\n");
	ASSERT_EQ(parse(y, &cfg, &err), -EINVAL, "906 + 120 entries");
	ASSERT_EQ(err.line, 3, "second rule overflows");
	ASSERT_STR_CONTAINS(err.msg, "needs 120, 117 left", "msg");

	/* interfaces: FG_MAX_IFS fit */
	off = sprintf(y, "interfaces: [");
	for (i = 0; i < FG_MAX_IFS; i++)
		off += sprintf(y + off, "%seth%d", i ? ", " : "", i);
	strcpy(y + off, "]\n");
	if (ASSERT_OK(parse_ok(y, &cfg), "16 interfaces"))
		ASSERT_EQ(cfg.n_ifs, FG_MAX_IFS, "n_ifs");
	strcpy(y + off, ", ethX]\n");
	ASSERT_EQ(parse(y, &cfg, &err), -EINVAL, "17 interfaces");
	ASSERT_STR_CONTAINS(err.msg, "too many interfaces", "msg");
	ASSERT_EQ(err.col, (int)off + 3, "col of the 17th");
	free(y);
}

static void test_too_many_prefixes(void)
{
	size_t n = FG_MAX_PREFIXES + 1, off, i;
	char *y = malloc(n * 16 + 64);
	struct fg_config cfg;
	struct fg_err err;

	off = sprintf(y, "allow:\n");
	for (i = 0; i < n; i++)
		off += sprintf(y + off, "- 1.%zu.%zu.0\n", (i >> 8) & 255, i & 255);
	ASSERT_LE(off, FG_MAX_FILE_SIZE, "fits the file size limit");
	ASSERT_EQ(parse(y, &cfg, &err), -EINVAL, "too many");
	ASSERT_EQ(err.line, (int)n + 1, "line of the last one");
	ASSERT_EQ(err.col, 3, "col");
	ASSERT_STR_CONTAINS(err.msg, "too many prefixes", "msg");
	free(y);
}

static void test_file_size_and_load(void)
{
	char path[] = "/tmp/fgpolicyXXXXXX", fifo[64];
	struct fg_config cfg;
	struct fg_err err;
	char *big;
	int fd, r;

	big = malloc(FG_MAX_FILE_SIZE + 1);
	memset(big, ' ', FG_MAX_FILE_SIZE + 1);
	ASSERT_EQ(fg_config_parse(big, FG_MAX_FILE_SIZE + 1, "big", &cfg, &err), -EFBIG,
		  "parse big");
	ASSERT_EQ(err.line, 0, "no place");
	ASSERT_EQ(cfg.path[0], 0, "an error leaves *cfg zeroed");
	free(big);

	ASSERT_EQ(fg_config_load("/nonexistent/policy.yaml", &cfg, &err), -ENOENT, "missing file");
	ASSERT_STR_CONTAINS(err.file, "/nonexistent/policy.yaml", "file named");
	ASSERT_EQ(fg_config_load("/tmp", &cfg, &err), -EISDIR, "directory");
	/* what is not a regular file is refused at once: reading it could block */
	ASSERT_EQ(fg_config_load("/dev/zero", &cfg, &err), -EINVAL, "character device");
	ASSERT_STR_CONTAINS(err.msg, "character device, not a regular file", "device named");
	snprintf(fifo, sizeof(fifo), "/tmp/fg-test-policy-fifo.%d", (int)getpid());
	if (ASSERT_OK(mkfifo(fifo, 0600), "mkfifo")) {
		__u64 t0 = fg_mono_coarse_ns();

		ASSERT_EQ(fg_config_load(fifo, &cfg, &err), -EINVAL, "FIFO");
		ASSERT_STR_CONTAINS(err.msg, "FIFO (named pipe), not a regular file", "FIFO named");
		ASSERT_LE(fg_mono_coarse_ns() - t0, 500000000ull,
			  "FIFO refused without waiting for a writer");
		unlink(fifo);
	}

	fd = mkstemp(path);
	if (!ASSERT_GE(fd, 0, "mkstemp"))
		return;
	ASSERT_OK(ftruncate(fd, FG_MAX_FILE_SIZE + 1), "ftruncate");
	ASSERT_EQ(fg_config_load(path, &cfg, &err), -EFBIG, "load big");
	ASSERT_OK(ftruncate(fd, 0), "ftruncate 0");
	ASSERT_EQ(write(fd, "mode: shadow\nrules: [{name: x, action: drop}]\n", 46), 46, "write");
	r = fg_config_load(path, &cfg, &err);
	if (ASSERT_OK(r, "load")) {
		ASSERT_EQ(cfg.mode, FG_MODE_SHADOW, "loaded mode");
		ASSERT_TRUE(!strcmp(cfg.path, path), "path");
		fg_config_free(&cfg);
	}
	ASSERT_OK(ftruncate(fd, 0), "ftruncate 0");
	ASSERT_OK(lseek(fd, 0, SEEK_SET), "lseek");
	ASSERT_EQ(write(fd, "mode: shadow\nxdp_mode: fast\n", 28), 28, "write");
	ASSERT_EQ(fg_config_load(path, &cfg, &err), -EINVAL, "load bad");
	ASSERT_EQ(err.line, 2, "line");
	ASSERT_EQ(err.col, 11, "col");
	ASSERT_TRUE(!strcmp(err.file, path), "err.file");
	close(fd);
	unlink(path);
}

/* ---- example, admission, printing, helpers ---------------------------------- */

static void test_example_loads(void)
{
	struct fg_config cfg;
	struct fg_err err;
	char buf[1024];
	int r, i;

	r = fg_config_load("examples/policy.yaml", &cfg, &err);
	fg_err_format(&err, buf, sizeof(buf));
	if (!ASSERT_OK(r, r ? buf : "load"))
		return;
	ASSERT_EQ(cfg.n_ifs, 0, "interfaces empty (command line sets them)");
	ASSERT_EQ(cfg.max_sources, 65536, "modest table");
	ASSERT_GE(rule_index(&cfg, "ssh-syn"), 0, "ssh-syn");
	ASSERT_GE(rule_index(&cfg, "dns-reflection"), 0, "dns-reflection");
	ASSERT_GE(rule_index(&cfg, "udp-bulk"), 0, "udp-bulk");
	i = rule_index(&cfg, "icmp-echo");
	if (ASSERT_GE(i, 0, "icmp-echo"))
		ASSERT_EQ(cfg.pol.rules[i].src.inc, TU / 100, "icmp-echo 100/s");
	ASSERT_EQ(rule_index(&cfg, "fragments"), (int)cfg.pol.nrules - 1, "fragments last");
	ASSERT_EQ(cfg.pol.lists & 2, 2, "an IPv6 prefix");
	for (i = 0, r = 0; i < cfg.pol.nmatch[FG_CLASS_ICMP]; i++)
		r |= entry(&cfg, FG_CLASS_ICMP, i)->flags & FG_M_V6;
	ASSERT_TRUE(r, "an IPv6 rule");
	fg_config_free(&cfg);
}

static void test_admission(void)
{
	struct fg_config cfg;
	double r;

	/* longest refill 2 s (ssh: 20 at 10/s; fragments 70 at 50/s is 1.4 s) */
	if (!ASSERT_OK(parse_ok(policy("admission"), &cfg), "parse"))
		return;
	r = fg_policy_set_admission(&cfg);
	/* 1048576 / (2 * 2 s) = 262144/s: no LRU slack, both tables are set-associative */
	ASSERT_EQ((long long)(r + 0.5), 262144, "R_ins");
	ASSERT_EQ(cfg.pol.ins.inc, 244141, "ins.inc = TU / 262144, rounded"); /* 244140.625 */
	ASSERT_EQ(cfg.pol.ins.tau, 244141ull * 26214, "ins.tau = inc * R/10");
	fg_config_free(&cfg);

	/* tiny table */
	if (!ASSERT_OK(parse_ok("max_sources: 1024\nrules: []\n", &cfg), "parse"))
		return;
	r = fg_policy_set_admission(&cfg);
	/* fragments default: 200 at 100/s = 2 s; 1024 / 4 = 256/s */
	ASSERT_EQ((long long)(r + 0.5), 256, "R_ins small table");
	ASSERT_EQ(cfg.pol.ins.inc, TU / 256, "inc");
	ASSERT_EQ(cfg.pol.ins.tau, 64 * (TU / 256), "burst at least 64");
	fg_config_free(&cfg);

	/* no per-source rule at all: T_refill = 1 s */
	if (!ASSERT_OK(parse_ok("max_sources: 100000\n"
				"fragments: {aggregate: {rate: 10/s, burst: 100}}\n",
				&cfg),
		       "parse"))
		return;
	r = fg_policy_set_admission(&cfg);
	ASSERT_EQ((long long)(r + 0.5), 100000 / 2, "T_refill 1 s");
	fg_config_free(&cfg);

	/* explicit admission wins */
	if (!ASSERT_OK(parse_ok("admission: {rate: 50000/s, burst: 1000}\n", &cfg), "parse"))
		return;
	r = fg_policy_set_admission(&cfg);
	ASSERT_EQ((long long)r, 50000, "explicit rate");
	ASSERT_EQ(cfg.pol.ins.inc, TU / 50000, "explicit inc");
	ASSERT_EQ(cfg.pol.ins.tau, 1000 * (TU / 50000), "explicit tau");
	fg_config_free(&cfg);
}

/* cfg as `floodgate check` prints it, in a string to free; NULL (a
 * failed check) if the stream cannot be opened. */
static char *printed(const struct fg_config *cfg)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!ASSERT_TRUE(f != NULL, "open_memstream"))
		return NULL;
	fg_config_print(f, cfg, true);
	fclose(f);
	return out;
}

/* yaml parsed into *cfg (checked as what) and printed: printed(). */
static char *parse_print(const char *yaml, struct fg_config *cfg, const char *what)
{
	if (!ASSERT_OK(parse_ok(yaml, cfg), what))
		return NULL;
	return printed(cfg);
}

/* yaml parsed (checked as what) and printed: every want[] in the printout,
 * none of absent[] (na of them). */
static void check_printed(const char *yaml, const char *what, const struct fg_want *want, size_t n,
			  const struct fg_want *absent, size_t na)
{
	struct fg_config cfg;
	char *out = parse_print(yaml, &cfg, what);

	if (!out)
		return;
	fg_test_contains_all(__FILE__, __LINE__, out, want, n);
	for (size_t i = 0; i < na; i++)
		ASSERT_TRUE(strstr(out, absent[i].needle) == NULL, absent[i].name);
	free(out);
	fg_config_free(&cfg);
}
#define CHECK_PRINTED(yaml, what, want) \
	check_printed(yaml, what, want, sizeof(want) / sizeof((want)[0]), NULL, 0)
#define CHECK_PRINTED_NOT(yaml, what, want, absent)                               \
	check_printed(yaml, what, want, sizeof(want) / sizeof((want)[0]), absent, \
		      sizeof(absent) / sizeof((absent)[0]))

static void test_print(void)
{
	static const struct fg_want spec_print[] = {
		{ "eth0", "interfaces" },
		{ "shadow", "mode" },
		{ "1048576", "table size" },
		{ "ssh-syn", "rule name" },
		{ "dport 22-22 flags S/SA", "match" },
		{ "10/s burst 20", "limit in operator units" },
		{ "inc 6400000000, tau 128000000000", "inc/tau" },
		{ "10MB/s burst 20MB", "bytes in operator units" },
		{ "2 allow, 1 deny", "prefix counts" },
		{ "50000 new sources/s", "admission" },
		{ "fragments", "implicit rule" },
	};
	static const struct fg_want cap_print[] = {
		{ "concurrency: 1 capped rules; reconcile every 10 s", "globals" },
		{ "concurrency 7 connections per source, handshake_timeout 2000 ms\n"
		  "        counts TCP to ports 80,30000-40000",
		  "the cap" },
		{ "overlap the default ephemeral range", "ephemeral note" },
	};

	CHECK_PRINTED(policy("spec"), "parse", spec_print);
	/* a cap, with the note about the ephemeral port range */
	CHECK_PRINTED("rules:\n  - name: web\n    match: {proto: tcp, dport: [80, 30000-40000]}\n"
		      "    per_source: {concurrency: 7, handshake_timeout: 2s}\n",
		      "parse cap", cap_print);
}

static void test_parse_u64(void)
{
	__u64 v = 0;

	ASSERT_OK(fg_parse_u64("0", &v), "0");
	ASSERT_EQ(v, 0, "0");
	ASSERT_OK(fg_parse_u64("18446744073709551615", &v), "max");
	ASSERT_TRUE(v == ~0ull, "max value");
	ASSERT_EQ(fg_parse_u64("18446744073709551616", &v), -ERANGE, "overflow");
	ASSERT_EQ(fg_parse_u64("", &v), -EINVAL, "empty");
	ASSERT_EQ(fg_parse_u64("abc", &v), -EINVAL, "abc");
	ASSERT_EQ(fg_parse_u64("12abc", &v), -EINVAL, "12abc");
	ASSERT_EQ(fg_parse_u64("-1", &v), -EINVAL, "-1");
	ASSERT_EQ(fg_parse_u64(" 1", &v), -EINVAL, "leading space");
	ASSERT_EQ(fg_parse_u64("+1", &v), -EINVAL, "+1");
	ASSERT_EQ(fg_parse_u64("1 ", &v), -EINVAL, "trailing space");
	ASSERT_EQ(fg_parse_u64(NULL, &v), -EINVAL, "NULL");
}

static void test_parse_duration(void)
{
	static const struct {
		const char *s;
		int err;
		__u64 ns;
	} t[] = {
		{ "250ms", 0, 250000000ull },
		{ "90s", 0, 90000000000ull },
		{ "5m", 0, 300000000000ull },
		{ "1h", 0, 3600000000000ull },
		{ "2d", 0, 172800000000000ull },
		{ "10", 0, 10000000000ull },
		{ "0", 0, 0 },
		{ "7us", 0, 7000 },
		{ "9ns", 0, 9 },
		{ "", -EINVAL, 0 },
		{ "s", -EINVAL, 0 },
		{ "5x", -EINVAL, 0 },
		{ "5 s", -EINVAL, 0 },
		{ "-5s", -EINVAL, 0 },
		{ "1.5s", -EINVAL, 0 },
		{ "18446744073709551615", -ERANGE, 0 }, /* seconds overflow ns */
		{ "213504d", -ERANGE, 0 },
		{ "99999999999999999999ns", -ERANGE, 0 },
		{ "18446744073709551615ns", 0, 18446744073709551615ull },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		__u64 ns = 12345;
		int r = fg_parse_duration(t[i].s, &ns);

		ASSERT_EQ(r, t[i].err, t[i].s);
		if (!t[i].err)
			ASSERT_TRUE(ns == t[i].ns, t[i].s);
	}
}

/* tests/policies/good_*.yaml load; bad_*.yaml fail where a comment in
 * their header says: "# expect: LINE:COL: message substring". */
static void test_policy_fixtures(void)
{
	glob_t g;
	size_t i;
	int ngood = 0, nbad = 0;

	if (glob("tests/policies/*.yaml", 0, NULL, &g)) {
		fg_test_fail(__FILE__, __LINE__,
			     "no fixtures in tests/policies (run from the repo root)");
		return;
	}
	for (i = 0; i < g.gl_pathc; i++) {
		const char *p = g.gl_pathv[i], *base = strrchr(p, '/') + 1;
		struct fg_config cfg;
		struct fg_err err;
		char first[512] = "", buf[1024], msg[512];
		int line, col, r;
		FILE *f = fopen(p, "r");

		if (!ASSERT_TRUE(f != NULL, p))
			continue;
		while (fgets(first, sizeof(first), f) && first[0] == '#' &&
		       strncmp(first, "# expect:", 9))
			;
		fclose(f);
		first[strcspn(first, "\n")] = 0;
		r = fg_config_load(p, &cfg, &err);
		fg_err_format(&err, buf, sizeof(buf));
		if (!strncmp(base, "good_", 5)) {
			ngood++;
			ASSERT_OK(r, r ? buf : p);
			fg_config_free(&cfg);
			continue;
		}
		nbad++;
		if (!ASSERT_EQ(sscanf(first, "# expect: %d:%d: %511[^\n]", &line, &col, msg), 3, p))
			continue;
		ASSERT_EQ(r, -EINVAL, p);
		ASSERT_EQ(err.line, line, buf);
		ASSERT_EQ(err.col, col, buf);
		ASSERT_STR_CONTAINS(err.msg, msg, buf);
	}
	globfree(&g);
	ASSERT_GE(ngood, 1, "good fixtures");
	ASSERT_GE(nbad, 1, "bad fixtures");
}

/* Deep flow nesting is refused before libyaml's quadratic scanner runs:
 * 100,000 levels answer at once, with the place of level 65. */
static void test_deep_nesting_refused_fast(void)
{
	size_t n = 100000, len = 7 + 2 * n;
	char *buf = malloc(len + 1);
	struct fg_config cfg;
	struct fg_err err;
	struct timespec t0, t1;

	if (!ASSERT_TRUE(buf != NULL, "malloc"))
		return;
	memcpy(buf, "rules: ", 7);
	memset(buf + 7, '[', n);
	memset(buf + 7 + n, ']', n);
	buf[len] = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ASSERT_EQ(fg_config_parse(buf, len, "deep.yaml", &cfg, &err), -EINVAL, "refused");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ASSERT_EQ(err.line, 1, "line");
	ASSERT_EQ(err.col, 7 + 65, "column of the 65th level");
	ASSERT_STR_CONTAINS(err.msg, "nested deeper than 64", "message");
	/* generous: the quadratic path took 45 s here */
	ASSERT_LE((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000, 1000,
		  "answered within a second");
	/* 64 levels inside a quoted string or a comment are not nesting */
	const char *ok =
		"# [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n"
		"interfaces: [\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"]\n";
	int rc = fg_config_parse(ok, strlen(ok), "ok.yaml", &cfg, &err);

	ASSERT_NEQ(err.col == 0 && rc == -EINVAL && strstr(err.msg, "nested"), 1,
		   "brackets in comments and quotes do not count");
	if (!rc)
		fg_config_free(&cfg);
	free(buf);
}

/* ---- fleet-wide limits (docs/fleet.md section 6) -------------------------- */

#define FLEET_SEC "fleet: {redis: unix:/run/redis.sock}\n"

static const struct fleet_good {
	const char *name;
	const char *yaml;
	/* the section; node NULL: the host name */
	const char *url_host, *url_path, *password, *node, *prefix;
	int db;
	__u32 interval, deadline, lease;
	/* rule 0's fleet limit */
	double rate, burst, local_rate, local_burst;
	int cost, on_loss;
	__u64 local_inc, local_tau;
} fleet_good[] = {
	{ "defaults", FLEET_SEC "rules:\n  - name: a\n    fleet: {rate: 5000/s, burst: 10000}\n",
	  "", "/run/redis.sock", "", NULL, "floodgate", 0, 200, 30, 400, 5000, 10000, 0, 0,
	  FG_COST_PKTS, FG_LOSS_LOCAL, 0, 0 },
	{ "everything written",
	  "fleet:\n  redis: redis://:pw@10.0.0.5:6380/3\n  password: other\n  db: 4\n"
	  "  node: web-17\n  prefix: fg-prod\n  lease_interval: 100ms\n  deadline: 20ms\n"
	  "  lease: 300ms\n"
	  "rules:\n  - name: a\n    per_source: {rate: 10/s, burst: 20}\n"
	  "    fleet: {rate: 100/s, burst: 200, on_loss: closed}\n",
	  "10.0.0.5", "", "other", "web-17", "fg-prod", 4, 100, 20, 300, 100, 200, 0, 0,
	  FG_COST_PKTS, FG_LOSS_CLOSED, 0, 0 },
	{ "lease defaults to 2 intervals",
	  "fleet: {redis: redis://h, lease_interval: 1s, deadline: 50ms}\n"
	  "rules:\n  - name: a\n    aggregate: {rate: 1/s, burst: 1}\n    fleet: {rate: 1/s, burst: 1, on_loss: open}\n",
	  "h", "", "", NULL, "floodgate", 0, 1000, 50, 2000, 1, 1, 0, 0, FG_COST_PKTS, FG_LOSS_OPEN,
	  0, 0 },
	{ "bytes, a local rate: the burst scaled like it",
	  FLEET_SEC
	  "rules:\n  - name: a\n    fleet: {rate: 100MB/s, burst: 200MB, local_rate: 10MB/s}\n",
	  "", "/run/redis.sock", "", NULL, "floodgate", 0, 200, 30, 400, 100e6, 200e6, 10e6, 0,
	  FG_COST_BYTES, FG_LOSS_LOCAL, TU / 10000000, 20000000 * (TU / 10000000) },
	{ "a local rate and burst",
	  FLEET_SEC
	  "rules:\n  - name: a\n    per_source: {rate: 1/s, burst: 5}\n"
	  "    fleet: {rate: 1000/s, burst: 1000, on_loss: local, local_rate: 100/s, local_burst: 50}\n",
	  "", "/run/redis.sock", "", NULL, "floodgate", 0, 200, 30, 400, 1000, 1000, 100, 50,
	  FG_COST_PKTS, FG_LOSS_LOCAL, TU / 100, 50 * (TU / 100) },
	{ "a derived local burst is rounded down, at least 1",
	  FLEET_SEC "rules:\n  - name: a\n    fleet: {rate: 1000/s, burst: 5, local_rate: 10/s}\n",
	  "", "/run/redis.sock", "", NULL, "floodgate", 0, 200, 30, 400, 1000, 5, 10, 0,
	  FG_COST_PKTS, FG_LOSS_LOCAL, TU / 10, 1 * (TU / 10) },
};

static void test_fleet_good(void)
{
	char host[256] = "", name[128];

	gethostname(host, sizeof(host) - 1);
	for (size_t i = 0; i < sizeof(fleet_good) / sizeof(fleet_good[0]); i++) {
		const struct fleet_good *g = &fleet_good[i];
		const struct fg_fleet_conf *fc;
		const struct fg_fleet_rule_conf *rc;
		struct fg_config cfg;

#define CHECK(what, cond) \
	(snprintf(name, sizeof(name), "%s: %s", g->name, what), ASSERT_TRUE(cond, name))
#define CHECK_EQ(what, got, exp) \
	(snprintf(name, sizeof(name), "%s: %s", g->name, what), ASSERT_EQ(got, exp, name))
		if (!CHECK("parses", parse_ok(g->yaml, &cfg) == 0))
			continue;
		fc = &cfg.fleet;
		rc = &cfg.fleet_rules[0];
		CHECK_EQ("has_fleet", cfg.has_fleet, 1);
		CHECK("redis host", !strcmp(fc->redis.host, g->url_host));
		CHECK("redis path", !strcmp(fc->redis.path, g->url_path));
		CHECK_EQ("unix socket", fc->redis.is_unix, !!g->url_path[0]);
		CHECK("password", !strcmp(fc->redis.password, g->password));
		CHECK_EQ("db", fc->redis.db, g->db);
		CHECK("node", !strcmp(fc->node, g->node ? g->node : host));
		CHECK("prefix", !strcmp(fc->prefix, g->prefix));
		CHECK_EQ("lease_interval", fc->interval_ms, g->interval);
		CHECK_EQ("deadline", fc->deadline_ms, g->deadline);
		CHECK_EQ("lease", fc->lease_ms, g->lease);
		CHECK_EQ("fg_rule.fleet", cfg.pol.rules[0].fleet, 1);
		CHECK_EQ("fragments has no fleet", cfg.pol.rules[1].fleet, 0);
		CHECK("fleet rule name", !strcmp(rc->name, "a"));
		CHECK_EQ("rate", rc->rate, g->rate);
		CHECK_EQ("burst", rc->burst, g->burst);
		CHECK_EQ("cost", rc->cost, g->cost);
		CHECK_EQ("rule cost", cfg.pol.rules[0].cost, g->cost);
		CHECK_EQ("on_loss", rc->on_loss, g->on_loss);
		CHECK_EQ("local_rate", rc->local_rate, g->local_rate);
		CHECK_EQ("local_burst", rc->local_burst, g->local_burst);
		CHECK_EQ("local inc", cfg.fleet_local[0].inc, g->local_inc);
		CHECK_EQ("local tau", cfg.fleet_local[0].tau, g->local_tau);
#undef CHECK
#undef CHECK_EQ
		fg_config_free(&cfg);
		ASSERT_EQ(cfg.fleet.redis.password[0], 0, "fg_config_free wipes the password");
	}
}

/* A policy without fleet: is what it was: nothing fleet in it. */
static void test_fleet_absent(void)
{
	static const char zero[sizeof(struct fg_fleet_conf)];
	static const char zrules[sizeof(((struct fg_config *)0)->fleet_rules)];
	static const char zlocal[sizeof(((struct fg_config *)0)->fleet_local)];
	struct fg_config cfg;

	if (!ASSERT_OK(parse_ok(policy("spec"), &cfg), "spec policy"))
		return;
	ASSERT_EQ(cfg.has_fleet, 0, "no fleet section");
	ASSERT_EQ(memcmp(&cfg.fleet, zero, sizeof(zero)), 0, "fleet conf all zero");
	ASSERT_EQ(memcmp(cfg.fleet_rules, zrules, sizeof(zrules)), 0, "no fleet rules");
	ASSERT_EQ(memcmp(cfg.fleet_local, zlocal, sizeof(zlocal)), 0, "no local shares");
	for (__u32 r = 0; r < cfg.pol.nrules; r++)
		ASSERT_EQ(cfg.pol.rules[r].fleet | cfg.pol.rules[r].tier | cfg.pol.rules[r].pool |
				  cfg.pol.rules[r].pad,
			  0, "fg_rule.fleet, tier, pool and padding 0");
	fg_config_free(&cfg);
	/* a section without fleet rules is fine (the daemon then leases nothing) */
	if (ASSERT_OK(parse_ok(FLEET_SEC
			       "rules:\n  - name: a\n    per_source: {rate: 1/s, burst: 1}\n",
			       &cfg),
		      "section without fleet rules")) {
		ASSERT_EQ(cfg.has_fleet, 1, "has_fleet");
		ASSERT_EQ(cfg.pol.rules[0].fleet, 0, "no fleet rule");
		fg_config_free(&cfg);
	}
}

static void test_fleet_bad(void)
{
	pc_check_refused("tests/policies/cases/fleet_refused.cases", "fleet_bad");
}

/* `floodgate check`: the lease arithmetic of docs/fleet.md, for the defaults. */
static void test_fleet_print(void)
{
	static const struct fg_want fleet_print[] = {
		{ "(with a password)", "but that there is one" },
		{ "node web-17, key prefix floodgate", "node and prefix" },
		{ "lease_interval 200 ms, deadline 30 ms, lease 400 ms; 2 fleet rules", "timing" },
		{ "10 scripts/s per node in 5 round trips/s", "redis load per node" },
		{ "serves about 2000-3000 such nodes", "nodes per Redis" },
		{ "key        floodgate:{auth-syn.", "the key, hash-tagged" },
		{ "refill 1000 per interval (rate x 200 ms)", "refill per interval" },
		{ "outstanding at most 4000", "outstanding bound" },
		{ "W = L + max(L, 2 I) = 800 ms", "its window" },
		{ "over any 10 s the fleet admits at most 64000 = burst 10000 + rate x 10 s 50000 + outstanding 4000 (+6.7%)",
		  "the bound over 10 s (docs/fleet.md section 3)" },
		{ "(500/s burst 1000 with 10 nodes)", "local share by node count" },
		{ "this node alone 10MB/s burst 20MB", "explicit local share" },
		{ "refill 20MB per interval", "bytes in operator units" },
	};
	static const struct fg_want fleet_secret[] = {
		{ "s3cret", "the password is never printed" },
	};
	static const struct fg_want fleet_off[] = {
		{ "fleet:       off", "no fleet" },
	};

	CHECK_PRINTED_NOT(
		"fleet: {redis: \"redis://:s3cret@10.0.0.5:6379\", node: web-17}\n"
		"rules:\n  - name: auth-syn\n    per_source: {rate: 10/s, burst: 20}\n"
		"    fleet: {rate: 5000/s, burst: 10000, on_loss: local}\n"
		"  - name: api\n    fleet: {rate: 100MB/s, burst: 200MB, local_rate: 10MB/s}\n",
		"parse", fleet_print, fleet_secret);
	/* without fleet: says so */
	CHECK_PRINTED(policy("spec"), "spec policy", fleet_off);
}

/* ---- load shedding: pools, tiers, shedding: (docs/shedding.md) ------------- */

#define SHED_POLICY                                                                                  \
	"pools:\n"                                                                                   \
	"  - {name: syn, rate: 10000/s, burst: 1000, reserve: 20%}\n"                                \
	"  - {name: backend, rate: 10MB/s, burst: 1MB, reserve: 12.5, shedding: off}\n"              \
	"shedding:\n"                                                                                \
	"  signal: accept_queue:8080\n"                                                              \
	"  interval: 1s\n"                                                                           \
	"  delay: 3s\n"                                                                              \
	"  ramp: 10s\n"                                                                              \
	"  decay: 5s\n"                                                                              \
	"  orphan: 1s\n"                                                                             \
	"  good: 60%\n"                                                                              \
	"  bad: 0.9\n"                                                                               \
	"  mode: shadow\n"                                                                           \
	"rules:\n"                                                                                   \
	"  - name: web\n    match: {proto: tcp, dport: 443}\n    tier: critical\n    pool: syn\n"    \
	"    per_source: {rate: 100/s, burst: 200}\n"                                                \
	"  - name: analytics\n    match: {proto: tcp, dport: 9000}\n    tier: bulk\n    pool: syn\n" \
	"  - name: api\n    match: {proto: udp}\n    tier: best-effort\n    pool: backend\n"         \
	"    aggregate: {rate: 1MB/s, burst: 100KB}\n"                                               \
	"  - name: plain\n    per_source: {rate: 1/s, burst: 1}\n"

static void test_shed_good(void)
{
	struct fg_config cfg;
	const struct fg_pool *p0, *p1;
	char name[64];

	if (!ASSERT_OK(parse_ok(SHED_POLICY, &cfg), "a policy with pools, tiers and shedding"))
		return;
	p0 = &cfg.pol.pools[0];
	p1 = &cfg.pol.pools[1];
	ASSERT_EQ(cfg.pol.npools, 2, "two pools");
	ASSERT_STR_CONTAINS(cfg.pools[0].name, "syn", "pool 0 is syn");
	ASSERT_EQ(p0->inc, FG_TU_PER_SEC / 10000, "syn: inc 1/10000 s");
	ASSERT_EQ(p0->tau, 1000 * p0->inc, "syn: tau 1000 * inc");
	ASSERT_EQ(p0->tau_low, 800 * p0->inc, "syn: tau_low, the 20% reserve kept");
	ASSERT_EQ(p0->cap.inc, FG_TU_PER_SEC / 8000, "syn: the cap at 8000/s");
	ASSERT_EQ(p0->cost, FG_COST_PKTS, "syn counts packets");
	ASSERT_EQ(p0->flags, 0, "syn is shed");
	ASSERT_EQ(p0->id, 0, "syn: bucket id 0");
	ASSERT_EQ(p1->cost, FG_COST_BYTES, "backend counts bytes");
	ASSERT_EQ(p1->flags, FG_POOL_NOSHED, "backend: shedding off");
	ASSERT_EQ(p1->id, 1, "backend: bucket id 1");
	ASSERT_TRUE(cfg.pools[1].reserve == 12.5, "a bare number is a percentage");
	ASSERT_EQ(p1->tau_low, (__u64)((double)p1->tau * 0.875), "backend: 12.5% reserve");
	ASSERT_EQ(cfg.pol.rules[0].tier, FG_TIER_CRITICAL, "web critical");
	ASSERT_EQ(cfg.pol.rules[0].pool, 1, "web in syn (1-based)");
	ASSERT_EQ(cfg.pol.rules[1].tier, FG_TIER_BULK, "analytics bulk");
	ASSERT_EQ(cfg.pol.rules[1].pool, 1, "analytics in syn");
	ASSERT_EQ(cfg.pol.rules[1].src.inc | cfg.pol.rules[1].agg.inc, 0,
		  "a pool alone is the limit");
	ASSERT_EQ(cfg.pol.rules[2].tier, FG_TIER_BEST_EFFORT, "api best-effort");
	ASSERT_EQ(cfg.pol.rules[2].pool, 2, "api in backend");
	ASSERT_EQ(cfg.pol.rules[3].tier | cfg.pol.rules[3].pool, 0, "plain: no tier, no pool");
	ASSERT_EQ(cfg.pol.rules[4].tier | cfg.pol.rules[4].pool, 0, "fragments: no tier, no pool");
	ASSERT_EQ(cfg.has_shedding, 1, "shedding section");
	ASSERT_EQ(cfg.shed_signal.kind, FG_SIG_ACCEPTQ, "signal accept_queue");
	ASSERT_EQ(cfg.shed_signal.port, 8080, "on 8080");
	ASSERT_TRUE(cfg.shed.interval == 1 && cfg.shed.delay == 3 && cfg.shed.ramp == 10 &&
			    cfg.shed.decay == 5 && cfg.shed.orphan == 1,
		    "interval, delay, ramp, decay, orphan");
	ASSERT_TRUE(fabs(cfg.shed.good - 0.6) < 1e-12 && cfg.shed.bad == 0.9, "good 60%, bad 0.9");
	ASSERT_EQ(cfg.shed.tiers, FG_TIER_BIT(FG_TIER_BULK) | FG_TIER_BIT(FG_TIER_BEST_EFFORT),
		  "the tiers in use: bulk and best-effort");
	ASSERT_EQ(cfg.shed_mode, FG_MODE_SHADOW, "shedding in shadow");
	fg_config_free(&cfg);
	/* the signals fgsignal parses */
	static const char *const sigs[] = { "cpu", "cpu:1", "psi",
					    "psi:/sys/fs/cgroup/a/cpu.pressure", "file:/run/load" };
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		char y[256];

		snprintf(y, sizeof(y),
			 "shedding: {signal: \"%s\"}\nrules:\n  - name: a\n    tier: normal\n"
			 "    per_source: {rate: 1/s, burst: 1}\n",
			 sigs[i]);
		snprintf(name, sizeof(name), "signal %s", sigs[i]);
		if (ASSERT_OK(parse_ok(y, &cfg), name)) {
			ASSERT_EQ(cfg.shed.interval, 8, "default interval");
			ASSERT_EQ(cfg.shed.delay, 28, "default delay");
			ASSERT_EQ(cfg.shed.tiers, FG_TIER_BIT(FG_TIER_NORMAL), "normal only");
			ASSERT_EQ(cfg.shed_mode, FG_MODE_ENFORCE, "enforce by default");
			fg_config_free(&cfg);
		}
	}
}

/* Without pools:, tiers or shedding: the compiled policy is as before. */
static void test_shed_absent(void)
{
	static const char zpools[sizeof(((struct fg_policy *)0)->pools)];
	static const char zsrc[sizeof(((struct fg_config *)0)->pools)];
	static const char zshed[sizeof(struct fg_shed_cfg)];
	struct fg_config cfg;

	if (!ASSERT_OK(parse_ok(policy("spec"), &cfg), "spec policy"))
		return;
	ASSERT_EQ(cfg.pol.npools, 0, "no pools");
	ASSERT_EQ(memcmp(cfg.pol.pools, zpools, sizeof(zpools)), 0, "pools all zero");
	ASSERT_EQ(memcmp(cfg.pools, zsrc, sizeof(zsrc)), 0, "pool sources all zero");
	ASSERT_EQ(cfg.has_shedding, 0, "no shedding section");
	ASSERT_EQ(memcmp(&cfg.shed, zshed, sizeof(zshed)), 0, "controller config all zero");
	for (__u32 r = 0; r < cfg.pol.nrules; r++)
		ASSERT_EQ(cfg.pol.rules[r].tier | cfg.pol.rules[r].pool, 0, "no tier, no pool");
	fg_config_free(&cfg);
	/* tiers without shedding: are fine (pools still apply, nothing is shed) */
	if (ASSERT_OK(
		    parse_ok(
			    "rules:\n  - name: a\n    tier: bulk\n    per_source: {rate: 1/s, burst: 1}\n",
			    &cfg),
		    "a tier without shedding:")) {
		ASSERT_EQ(cfg.pol.rules[0].tier, FG_TIER_BULK, "bulk");
		ASSERT_EQ(cfg.has_shedding, 0, "no controller");
		fg_config_free(&cfg);
	}
}

/* A tier alone (or a pool alone) is a traffic class: shed under overload,
 * not rate limited (issue 22, item 5). A rule with nothing is still refused. */
static void test_tier_alone(void)
{
	static const char *const tiers[] = { "critical", "normal", "bulk", "best-effort" };
	struct fg_config cfg;
	char y[256], name[96];

	for (size_t i = 0; i < sizeof(tiers) / sizeof(tiers[0]); i++) {
		snprintf(y, sizeof(y), "%srules:\n  - {name: a, match: {proto: udp}, tier: %s}\n",
			 i ? "shedding: {signal: cpu}\n" : "", tiers[i]);
		snprintf(name, sizeof(name), "a rule with only tier: %s", tiers[i]);
		if (!ASSERT_OK(parse_ok(y, &cfg), name))
			continue;
		ASSERT_EQ(cfg.pol.rules[0].action, FG_ACT_LIMIT, "its action: limit");
		ASSERT_EQ(cfg.pol.rules[0].tier, (__u8)i, "its tier");
		ASSERT_EQ(cfg.pol.rules[0].src.inc | cfg.pol.rules[0].agg.inc |
				  cfg.pol.rules[0].fleet | cfg.pol.rules[0].pool |
				  cfg.pol.rules[0].conn_cap,
			  0, "no bucket, no fleet, no pool, no cap");
		fg_config_free(&cfg);
	}
	if (ASSERT_OK(parse_ok("pools:\n  - {name: p, rate: 10/s, burst: 10}\n"
			       "rules:\n  - {name: a, match: {proto: udp}, pool: p}\n",
			       &cfg),
		      "a rule with only a pool")) {
		ASSERT_EQ(cfg.pol.rules[0].pool, 1, "its pool");
		fg_config_free(&cfg);
	}
}

static void test_shed_bad(void)
{
	pc_check_refused("tests/policies/cases/shed_refused.cases", "shed_bad");
}

/* `floodgate check`: pools, what each tier may take, the controller, and
 * each rule's tier and pool. */
static void test_shed_print(void)
{
	static const struct fg_want shed_print[] = {
		{ "pools (2):", "the pools" },
		{ "syn                  10000/s burst 1000, reserve 20%, shedding on; 2 rules",
		  "syn: its figures and rules" },
		{ "together at most 8000/s, and only while more than the reserve is left (burst 800",
		  "what the other tiers may take" },
		{ "backend              10MB/s burst 1MB, reserve 12.5%, shedding off; 1 rule",
		  "backend: bytes, shedding off" },
		{ "signal accept_queue:8080, shadow; tiers shed in order: best-effort, bulk; critical never",
		  "the signal, mode and tier order" },
		{ "interval 1s, delay 3s, ramp 10s, decay 5s, good 0.6, bad 0.9",
		  "the controller" },
		{ "full shed after 13s at utilization 1; a dead daemon's shedding ends within 2s + 1.07s (orphan 1s, rounded up to 2^30 ns)",
		  "its times" },
		{ "tier critical, pool syn", "web's tier and pool" },
		{ "tier bulk, pool syn", "analytics'" },
		{ "tier best-effort, pool backend", "api's" },
	};
	static const struct fg_want shed_off[] = {
		{ "pools:       none", "no pools" },
		{ "shedding:    off", "no shedding" },
	};
	static const struct fg_want no_tier[] = {
		{ ", tier ", "no rule prints a tier" },
	};

	CHECK_PRINTED(SHED_POLICY, "parse", shed_print);
	CHECK_PRINTED_NOT(policy("spec"), "spec policy", shed_off, no_tier);
}

/* The first entry of class c holding both ports, by a scan; -1 for none. */
static int pidx_ref(const struct fg_policy *pol, int c, unsigned sp, unsigned dp)
{
	for (unsigned i = 0; i < pol->nmatch[c]; i++) {
		const struct fg_match *m = &pol->match[c][i];

		if (dp >= m->dport_lo && dp <= m->dport_hi && sp >= m->sport_lo &&
		    sp <= m->sport_hi)
			return (int)i;
	}
	return -1;
}

/* ... and by fg_pidx's bitmaps, as the program reads them. */
static int pidx_first(const struct fg_pidx *x, int c, unsigned sp, unsigned dp)
{
	const struct fg_pbm *d = &x->bm[x->cls[c][0][dp]], *s = &x->bm[x->cls[c][1][sp]];

	for (int j = 0; j < FG_MATCH_WORDS; j++) {
		__u64 w = d->w[j] & s->w[j];

		if (((x->sum[x->cls[c][0][dp]] >> j) & 1) != !!d->w[j])
			return -2; /* a summary bit that lies */
		if (w)
			return j * 64 + __builtin_ctzll(w);
	}
	return -1;
}

/* FG_MAX_RULES - 1 rules, all but the last with four entries each (a 2 x 2
 * port cross product; four for the last too would pass FG_MAX_MATCH),
 * compile, and their first-match bitmaps agree with a scan. */
static void test_rules_max_compile(void)
{
	size_t len = 128 + (size_t)FG_MAX_RULES * 128, off;
	char *y = malloc(len);
	struct fg_pidx *x = malloc(sizeof(*x));
	static struct fg_config cfg;
	int wrong = 0;

	if (!ASSERT_TRUE(y && x, "buffers"))
		goto out;
	off = (size_t)snprintf(y, len, "rules:\n");
	for (int i = 0; i < FG_MAX_RULES - 2; i++)
		off += (size_t)snprintf(
			y + off, len - off,
			"  - {name: r%d, action: drop, match: {proto: udp, sport: [%d, %d], dport: [%d, \"%d-%d\"]}}\n",
			i, 2000 + i, 9000 + i / 2, 3000 + i, 5000, 5000 + i);
	off += (size_t)snprintf(y + off, len - off,
				"  - {name: r%d, action: drop, match: {proto: udp, dport: 7}}\n",
				FG_MAX_RULES - 2);
	if (!ASSERT_OK(parse_ok(y, &cfg), "255 rules of 4 entries and one of 1"))
		goto out;
	ASSERT_EQ(cfg.pol.nrules, FG_MAX_RULES, "256 + fragments");
	ASSERT_EQ(cfg.pol.nmatch[FG_CLASS_UDP], 4 * (FG_MAX_RULES - 2) + 2,
		  "4 a rule, 1, fragments");
	ASSERT_EQ(cfg.pol.match[FG_CLASS_UDP][4 * (FG_MAX_RULES - 2) - 1].rule, FG_MAX_RULES - 3,
		  "the last rule's last entry");
	ASSERT_EQ(cfg.pol.match[FG_CLASS_UDP][4 * (FG_MAX_RULES - 2)].rule, FG_MAX_RULES - 2,
		  "the one-entry rule after it");
	ASSERT_EQ(cfg.pol.match[FG_CLASS_UDP][4 * (FG_MAX_RULES - 2) + 1].rule, FG_MAX_RULES - 1,
		  "fragments last");
	if (!ASSERT_OK(fg_pidx_build(&cfg.pol, x), "fg_pidx image"))
		goto out;
	srand(256);
	for (int k = 0; k < 20000; k++) {
		unsigned sp = k < 10000 ? (unsigned)(rand() % 10000) :
					  2000 + (unsigned)(rand() % 300);
		unsigned dp = k % 2 ? (unsigned)(rand() % 65536) : 2900 + (unsigned)(rand() % 2500);

		wrong += pidx_first(x, FG_CLASS_UDP, sp, dp) !=
			 pidx_ref(&cfg.pol, FG_CLASS_UDP, sp, dp);
	}
	ASSERT_EQ(wrong, 0, "ports whose first candidate differs from a scan");
	ASSERT_EQ(pidx_first(x, FG_CLASS_UDP, 2000 + FG_MAX_RULES - 3, 3000 + FG_MAX_RULES - 3),
		  4 * (FG_MAX_RULES - 3), "the last rule by its first entry");
	ASSERT_EQ(pidx_first(x, FG_CLASS_UDP, 1, 7), 4 * (FG_MAX_RULES - 2), "the 256th rule");
	ASSERT_EQ(x->cls[FG_CLASS_TCP][0][80], x->cls[FG_CLASS_TCP][0][0],
		  "tcp: one class of ports");
	fg_config_free(&cfg);
	/* one more rule is one too many, and says how many fit */
	off += (size_t)snprintf(y + off, len - off, "  - {name: r%d, action: pass}\n",
				FG_MAX_RULES - 1);
	ASSERT_EQ(fg_config_parse(y, off, "max.yaml", &cfg, NULL), -EINVAL,
		  "FG_MAX_RULES written rules");
out:
	free(y);
	free(x);
}

/* ---- SYN authentication (docs/syn-auth.md) ------------------------------------ */

#define SYN_POLICY                                                                \
	"syn_auth: {verified_for: 5m, max_verified: 4096, reply_rate: 20000/s,\n" \
	"           reply_per_prefix: {rate: 500/s, burst: 50}, prefix_v4: 22,\n" \
	"           prefix_v6: 56, way: retransmit}\n"                            \
	"rules:\n"                                                                \
	"  - name: web\n"                                                         \
	"    match: {proto: tcp, dport: [80, 443], tcp_flags: syn}\n"             \
	"    syn_auth: cookie\n"                                                  \
	"    per_source: {rate: 10/s, burst: 20}\n"                               \
	"  - name: ssh\n"                                                         \
	"    match: {proto: tcp, dport: 22}\n"                                    \
	"    syn_auth: cookie\n"                                                  \
	"    per_source: {rate: 5/s, burst: 5}\n"                                 \
	"  - name: dns\n"                                                         \
	"    match: {proto: udp, dport: 53}\n"                                    \
	"    syn_auth: off\n"                                                     \
	"    per_source: {rate: 10/s, burst: 20}\n"

static void test_synauth_good(void)
{
	const struct fg_synauth_conf *s;
	struct fg_config cfg;

	if (!ASSERT_OK(parse_ok(SYN_POLICY, &cfg), "a policy with syn_auth"))
		return;
	s = &cfg.syn;
	ASSERT_EQ(s->set, 1, "the section is written");
	ASSERT_EQ(s->nrules, 2, "web and ssh authenticate");
	ASSERT_TRUE(cfg.syn_auth[0] && cfg.syn_auth[1], "web and ssh marked");
	ASSERT_EQ(cfg.syn_auth[2], 0, "dns: syn_auth: off");
	ASSERT_EQ(cfg.syn_auth[3], 0, "fragments never");
	ASSERT_EQ(s->way, FG_SYN_WAY_RETRANSMIT, "way: retransmit");
	ASSERT_EQ(s->verified_for_ns, 300ull * 1000000000ull, "verified_for 5m");
	ASSERT_EQ(s->max_verified, 4096, "max_verified");
	ASSERT_EQ(s->prefix_v4, 22, "prefix_v4");
	ASSERT_EQ(s->prefix_v6, 56, "prefix_v6");
	ASSERT_EQ(s->reply.inc, FG_TU_PER_SEC / 20000, "reply_rate 20000/s");
	ASSERT_EQ(s->reply.tau, 2000 * s->reply.inc, "a scalar rate: a tenth of a second's burst");
	ASSERT_EQ(s->per_prefix.inc, FG_TU_PER_SEC / 500, "reply_per_prefix 500/s");
	ASSERT_EQ(s->per_prefix.tau, 50 * s->per_prefix.inc, "burst 50 as written");
	ASSERT_EQ(cfg.n_warn, 0, "no warnings");
	/* what the program reads: pol.sa */
	ASSERT_EQ(cfg.pol.sa.way, FG_SA_WAY_RETRANSMIT, "sa.way retransmit");
	ASSERT_EQ(cfg.pol.sa.verified_ns, 300ull * 1000000000ull, "sa.verified_ns");
	ASSERT_EQ(cfg.pol.sa.reply.inc, s->reply.inc, "sa.reply");
	ASSERT_EQ(cfg.pol.sa.reply_pfx.tau, s->per_prefix.tau, "sa.reply_pfx");
	ASSERT_EQ(cfg.pol.sa.pfx_mask4, htonl(0xfffffc00u), "sa.pfx_mask4 /22");
	ASSERT_TRUE(cfg.pol.sa.pfx_mask6[0] == 0xffffffffu &&
			    cfg.pol.sa.pfx_mask6[1] == htonl(0xffffff00u) &&
			    !cfg.pol.sa.pfx_mask6[2],
		    "sa.pfx_mask6 /56");
	ASSERT_EQ(cfg.pol.sa.rules[0], 3, "sa.rules: web (0) and ssh (1)");
	ASSERT_EQ(cfg.pol.sa.nmatch, 3, "sa.nmatch: web's two ports, ssh's one");
	for (int k = 0; k < cfg.pol.sa.nmatch; k++) {
		const struct fg_match *e = entry(&cfg, FG_CLASS_TCP, cfg.pol.sa.match[k]);

		ASSERT_TRUE(e->rule == (k < 2 ? 0 : 1),
			    "sa.match: the rules' TCP entries, in order");
	}
	ASSERT_EQ(entry(&cfg, FG_CLASS_TCP, cfg.pol.sa.match[2])->dport_lo, 22, "ssh's entry");
	fg_config_free(&cfg);
}

/* Without the section: the defaults; a section no rule uses is a warning. */
static void test_synauth_defaults(void)
{
	const struct fg_synauth_conf *s;
	struct fg_config cfg;

	if (!ASSERT_OK(parse_ok("rules:\n  - name: a\n    match: {proto: tcp, dport: 80}\n"
				"    syn_auth: cookie\n    per_source: {rate: 1/s, burst: 1}\n",
				&cfg),
		       "syn_auth without the section"))
		return;
	s = &cfg.syn;
	ASSERT_EQ(s->set, 0, "no section");
	ASSERT_EQ(s->nrules, 1, "one rule");
	ASSERT_EQ(s->way, FG_SYN_WAY_AUTO, "way auto");
	ASSERT_EQ(s->verified_for_ns, FG_SYN_VERIFIED_FOR_DEFAULT_NS, "verified_for 10m");
	ASSERT_EQ(s->max_verified, FG_SYN_MAX_VERIFIED_DEFAULT, "max_verified");
	ASSERT_EQ(s->prefix_v4, 24, "prefix_v4 24");
	ASSERT_EQ(s->prefix_v6, 48, "prefix_v6 48");
	ASSERT_EQ(s->reply.inc, FG_TU_PER_SEC / FG_SYN_REPLY_RATE_DEFAULT, "reply_rate default");
	ASSERT_EQ(s->per_prefix.inc, FG_TU_PER_SEC / FG_SYN_PER_PREFIX_DEFAULT,
		  "reply_per_prefix default");
	ASSERT_EQ(cfg.pol.sa.way, FG_SA_WAY_RETRANSMIT,
		  "auto compiles as retransmit until the daemon resolves it");
	ASSERT_EQ(cfg.pol.sa.pfx_mask4, htonl(0xffffff00u), "/24");
	fg_config_free(&cfg);
	/* a reply_rate below the default per-prefix cap lowers that cap with it */
	if (ASSERT_OK(
		    parse_ok(
			    "syn_auth: {reply_rate: 200/s}\nrules:\n  - name: a\n"
			    "    match: {proto: tcp}\n    syn_auth: cookie\n    per_source: {rate: 1/s, burst: 1}\n",
			    &cfg),
		    "a low reply_rate alone")) {
		ASSERT_EQ(cfg.syn.per_prefix.inc, cfg.syn.reply.inc, "per prefix = reply_rate");
		ASSERT_EQ(cfg.syn.per_prefix.tau, 20 * cfg.syn.reply.inc, "burst 20");
		fg_config_free(&cfg);
	}
	if (ASSERT_OK(parse_ok("syn_auth: {way: handoff}\nrules:\n  - {name: a, action: pass}\n",
			       &cfg),
		      "a section no rule uses")) {
		ASSERT_EQ(cfg.syn.nrules, 0, "no rule");
		ASSERT_EQ(cfg.n_warn, 1, "one warning");
		ASSERT_STR_CONTAINS(cfg.warn[0].msg, "no rule has syn_auth: cookie",
				    "the warning says why");
		ASSERT_EQ(cfg.warn[0].line, 1, "at the section");
		fg_config_free(&cfg);
	}
	/* the spec policy is unchanged by the feature */
	if (ASSERT_OK(parse_ok(policy("spec"), &cfg), "spec policy")) {
		ASSERT_EQ(cfg.syn.nrules, 0, "spec: nothing authenticates");
		ASSERT_EQ(cfg.pol.sa.way, FG_SA_WAY_OFF, "spec: sa.way off");
		ASSERT_EQ(cfg.pol.sa.nmatch | cfg.pol.sa.rules[0], 0, "spec: sa empty");
		for (__u32 r = 0; r < cfg.pol.nrules; r++)
			ASSERT_EQ(cfg.syn_auth[r], 0, "spec: no rule marked");
		fg_config_free(&cfg);
	}
}

static void test_synauth_bad(void)
{
	pc_check_refused("tests/policies/cases/synauth_refused.cases", "synauth_bad");
}

/* A kernel with every item, then without some (lib/kfeat.h). */
static void kf_all(struct fg_kfeat *kf)
{
	memset(kf, 0, sizeof(*kf));
	snprintf(kf->release, sizeof(kf->release), "test");
	for (int i = 0; i < FG_KF_MAX; i++)
		kf->f[i].ok = true;
}

static void kf_lacks(struct fg_kfeat *kf, enum fg_kf i, const char *why)
{
	kf->f[i].ok = false;
	snprintf(kf->f[i].why, sizeof(kf->f[i].why), "%s", why);
}

/* The syn_auth need of cfg on kf, or NULL. */
static const struct fg_need *syn_need(const struct fg_config *cfg, const struct fg_kfeat *kf,
				      struct fg_need *nd)
{
	int n = fg_policy_kernel_needs(cfg, kf, nd);

	for (int i = 0; i < n; i++)
		if (!strcmp(nd[i].feature, "syn_auth"))
			return &nd[i];
	return NULL;
}

static void test_synauth_kernel(void)
{
	static const char *const y = "syn_auth: {way: %s}\nrules:\n  - name: a\n"
				     "    match: {proto: tcp, dport: 80}\n    syn_auth: cookie\n"
				     "    per_source: {rate: 1/s, burst: 1}\n";
	struct fg_need nd[FG_NEEDS_MAX];
	const struct fg_need *d;
	struct fg_config cfg;
	struct fg_kfeat kf;
	char why[FG_WHY_LEN], buf[256];

	kf_all(&kf);
	ASSERT_EQ(fg_synauth_way(&kf, FG_SYN_WAY_AUTO, why), FG_SYN_WAY_HANDOFF,
		  "6.9+: auto is handoff");
	ASSERT_EQ(fg_synauth_way(&kf, FG_SYN_WAY_RETRANSMIT, why), FG_SYN_WAY_RETRANSMIT,
		  "retransmit when asked");
	kf_lacks(&kf, FG_KF_TCP_REQSK,
		 "no kfunc bpf_sk_assign_tcp_reqsk in the kernel's BTF (6.9)");
	ASSERT_EQ(fg_synauth_way(&kf, FG_SYN_WAY_AUTO, why), FG_SYN_WAY_RETRANSMIT,
		  "6.1: auto is retransmit");
	ASSERT_STR_CONTAINS(why, "bpf_sk_assign_tcp_reqsk", "... saying what handoff lacks");
	ASSERT_EQ(fg_synauth_way(&kf, FG_SYN_WAY_HANDOFF, why), FG_SYN_WAY_AUTO, "6.1: no handoff");
	ASSERT_STR_CONTAINS(why, "way handoff needs bpf_sk_assign_tcp_reqsk",
			    "... naming the kernel feature");
	kf_all(&kf);
	kf_lacks(&kf, FG_KF_SCHED_CLS, "this kernel refuses program type sched_cls");
	ASSERT_EQ(fg_synauth_way(&kf, FG_SYN_WAY_AUTO, why), FG_SYN_WAY_RETRANSMIT,
		  "no tc: retransmit");
	ASSERT_STR_CONTAINS(why, "sched_cls", "... because of tc");
	kf_lacks(&kf, FG_KF_SKC_LOOKUP, "the verifier refuses bpf_skc_lookup_tcp in XDP");
	ASSERT_EQ(fg_synauth_way(&kf, FG_SYN_WAY_RETRANSMIT, why), FG_SYN_WAY_AUTO,
		  "no socket lookup: no way");
	ASSERT_STR_CONTAINS(why, "bpf_skc_lookup_tcp", "... naming it");

	/* as floodgate check shows it, per way asked */
	snprintf(buf, sizeof(buf), y, "auto");
	if (ASSERT_OK(parse_ok(buf, &cfg), "way auto")) {
		kf_all(&kf);
		d = syn_need(&cfg, &kf, nd);
		if (ASSERT_TRUE(d != NULL, "auto: a syn_auth need")) {
			ASSERT_EQ(d->state, FG_NEED_OK, "auto on 6.18: ok");
			ASSERT_STR_CONTAINS(d->how, "handoff", "... handoff");
		}
		kf_lacks(&kf, FG_KF_TCP_REQSK, "no kfunc (6.9)");
		d = syn_need(&cfg, &kf, nd);
		if (ASSERT_TRUE(d != NULL, "auto on 6.1")) {
			ASSERT_EQ(d->state, FG_NEED_DEGRADED, "auto on 6.1: degraded");
			ASSERT_STR_CONTAINS(d->how, "retransmit", "... retransmit");
			ASSERT_STR_CONTAINS(d->why, "SYN retransmission", "... what it costs");
			ASSERT_STR_CONTAINS(d->why, "no handoff: bpf_sk_assign_tcp_reqsk",
					    "... and why");
		}
		ASSERT_OK(fg_policy_kernel_check(&cfg, &kf, why), "auto on 6.1 is not refused");
		kf_lacks(&kf, FG_KF_SKC_LOOKUP, "refused");
		ASSERT_EQ(fg_policy_kernel_check(&cfg, &kf, why), -EOPNOTSUPP,
			  "no way at all: refused");
		ASSERT_STR_CONTAINS(why, "syn_auth: this kernel cannot run it: socket lookup",
				    "... naming the feature");
		fg_config_free(&cfg);
	}
	snprintf(buf, sizeof(buf), y, "handoff");
	if (ASSERT_OK(parse_ok(buf, &cfg), "way handoff")) {
		kf_all(&kf);
		ASSERT_OK(fg_policy_kernel_check(&cfg, &kf, why), "handoff on 6.18");
		kf_lacks(&kf, FG_KF_TCP_REQSK, "no kfunc (6.9)");
		ASSERT_EQ(fg_policy_kernel_check(&cfg, &kf, why), -EOPNOTSUPP,
			  "handoff on 6.1: refused");
		ASSERT_STR_CONTAINS(why, "way handoff needs bpf_sk_assign_tcp_reqsk",
				    "... with the kfunc named");
		kf_all(&kf);
		cfg.xdp_mode = FG_XDP_SKB;
		ASSERT_EQ(fg_policy_kernel_check(&cfg, &kf, why), -EOPNOTSUPP,
			  "handoff in generic XDP (xdp_mode: skb): refused");
		ASSERT_STR_CONTAINS(why, "way handoff needs native XDP", "... saying why");
		fg_config_free(&cfg);
	}
	/* generic XDP hands nothing off (tests/e2e_synauth_modes.sh): auto retransmits */
	snprintf(buf, sizeof(buf), y, "auto");
	if (ASSERT_OK(parse_ok(buf, &cfg), "way auto, xdp_mode skb")) {
		kf_all(&kf);
		cfg.xdp_mode = FG_XDP_SKB;
		d = syn_need(&cfg, &kf, nd);
		if (ASSERT_TRUE(d != NULL, "auto in generic XDP")) {
			ASSERT_EQ(d->state, FG_NEED_DEGRADED, "... degraded");
			ASSERT_STR_CONTAINS(d->how, "retransmit", "... retransmit");
			ASSERT_STR_CONTAINS(d->why, "no handoff: xdp_mode: skb", "... and why");
		}
		fg_policy_kernel_fill(&cfg, &kf);
		ASSERT_EQ(cfg.pol.sa.way, FG_SA_WAY_RETRANSMIT, "... as applied");
		cfg.xdp_mode = FG_XDP_NATIVE;
		fg_policy_kernel_fill(&cfg, &kf);
		ASSERT_EQ(cfg.pol.sa.way, FG_SA_WAY_HANDOFF, "native XDP: handoff");
		fg_config_free(&cfg);
	}
	snprintf(buf, sizeof(buf), y, "retransmit");
	if (ASSERT_OK(parse_ok(buf, &cfg), "way retransmit")) {
		kf_all(&kf);
		d = syn_need(&cfg, &kf, nd);
		if (ASSERT_TRUE(d != NULL, "retransmit on 6.18")) {
			ASSERT_EQ(d->state, FG_NEED_DEGRADED, "retransmit: degraded");
			ASSERT_STR_CONTAINS(d->why, "chosen by syn_auth: way: retransmit",
					    "... by choice");
		}
		fg_config_free(&cfg);
	}
	/* fg_policy_kernel_fill: auto becomes handoff where the kernel gives it */
	snprintf(buf, sizeof(buf), y, "auto");
	if (ASSERT_OK(parse_ok(buf, &cfg), "way auto, filled")) {
		kf_all(&kf);
		fg_policy_kernel_fill(&cfg, &kf);
		ASSERT_EQ(cfg.pol.sa.way, FG_SA_WAY_HANDOFF, "6.18: handoff");
		kf_lacks(&kf, FG_KF_TCP_REQSK, "none");
		fg_policy_kernel_fill(&cfg, &kf);
		ASSERT_EQ(cfg.pol.sa.way, FG_SA_WAY_RETRANSMIT, "6.1: retransmit");
		fg_config_free(&cfg);
	}
	/* a policy without syn_auth needs nothing of it */
	if (ASSERT_OK(parse_ok(policy("spec"), &cfg), "spec")) {
		kf_all(&kf);
		kf_lacks(&kf, FG_KF_TCP_REQSK, "none");
		kf_lacks(&kf, FG_KF_SKC_LOOKUP, "none");
		ASSERT_TRUE(syn_need(&cfg, &kf, nd) == NULL, "spec: no syn_auth need");
		fg_config_free(&cfg);
	}
}

static void test_synauth_print(void)
{
	static const struct fg_want want[] = {
		{ "syn_auth:    2 rules authenticate; way retransmit; a proven address stays "
		  "verified 300 s, at most 4096 per family",
		  "the section" },
		{ "SYN-ACKs at most 20000/s burst 2000, and 500/s burst 50 to one /22 (v4) /56 (v6)",
		  "the caps" },
		{ "syn_auth   cookie: a SYN is answered by floodgate", "the rule's line" },
	};
	static const struct fg_want absent[] = {
		{ "syn_auth:", "no section line without a rule" },
	};

	CHECK_PRINTED(SYN_POLICY, "syn_auth printed", want);
	check_printed("rules:\n  - {name: a, action: pass}\n", "no syn_auth", NULL, 0, absent, 1);
}

int main(int argc, char **argv)
{
	int err;

	fg_test_init(argc, argv);
	err = pc_load("tests/policies/cases/policy.cases", &policies);
	if (err)
		return FG_FAIL_ALL("policies",
				   "tests/policies/cases/policy.cases: %s (run from the repo root)",
				   strerror(-err));
	FG_RUN(test_spec_globals);
	FG_RUN(test_spec_limits);
	FG_RUN(test_spec_match);
	FG_RUN(test_defaults);
	FG_RUN(test_proto_any_every_class);
	FG_RUN(test_hints);
	FG_RUN(test_whole_class);
	FG_RUN(test_port_cross_product);
	FG_RUN(test_tcp_flags_forms);
	FG_RUN(test_icmp_and_numeric_proto);
	FG_RUN(test_rate_units);
	FG_RUN(test_masks);
	FG_RUN(test_rule_options);
	FG_RUN(test_flatten_nested);
	FG_RUN(test_max_sets);
	FG_RUN(test_flatten_random_vs_reference);
	FG_RUN(test_20000_prefixes);
	FG_RUN(test_concurrency);
	FG_RUN(test_bad_policies);
	FG_RUN(test_error_format);
	FG_RUN(test_limits_on_counts);
	FG_RUN(test_too_many_prefixes);
	FG_RUN(test_file_size_and_load);
	FG_RUN(test_example_loads);
	FG_RUN(test_admission);
	FG_RUN(test_print);
	FG_RUN(test_parse_u64);
	FG_RUN(test_parse_duration);
	FG_RUN(test_policy_fixtures);
	FG_RUN(test_deep_nesting_refused_fast);
	FG_RUN(test_fleet_good);
	FG_RUN(test_fleet_absent);
	FG_RUN(test_fleet_bad);
	FG_RUN(test_fleet_print);
	FG_RUN(test_shed_good);
	FG_RUN(test_shed_absent);
	FG_RUN(test_tier_alone);
	FG_RUN(test_shed_bad);
	FG_RUN(test_shed_print);
	FG_RUN(test_rules_max_compile);
	FG_RUN(test_nft_rates);
	FG_RUN(test_host_bits_warned);
	FG_RUN(test_synauth_good);
	FG_RUN(test_synauth_defaults);
	FG_RUN(test_synauth_bad);
	FG_RUN(test_synauth_kernel);
	FG_RUN(test_synauth_print);
	pc_free(&policies);
	return fg_test_summary();
}
