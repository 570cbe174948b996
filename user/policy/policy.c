// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Policy compiler: a YAML policy file (libyaml document API) -> struct
 * fg_config, validated and compiled into the fg_policy the XDP program
 * reads. This file is the document: top-level keys, prefix lists, limits
 * and rules; a rule's match: is policy_match.c, the YAML plumbing
 * policy_yaml.c. Every error names the file, line and column at fault.
 *
 * Nothing is partial: on error everything allocated is freed and *cfg is
 * zeroed, so a caller never has to free a half-built config.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <netinet/in.h>

#include "conn/conn.h"
#include "policy/policy_int.h"
#include "lib/safefile.h"
#include "lib/units.h"
#include "lib/sysutil.h"

#define DEFAULT_MAX_SOURCES (1u << 20)
#define MIN_MAX_SOURCES	    1024u
#define MAX_MAX_SOURCES	    (1u << 24)
#define MIN_FRAME	    64	 /* smallest Ethernet frame, bytes */
#define FULL_FRAME	    1514 /* largest untagged 1500-MTU frame */
#define FRAG_RATE	    100	 /* default "fragments" rule: 100/s ... */
#define FRAG_BURST	    200	 /* ... burst 200 packets */

const char *const fg_mode_names[2] = { "enforce", "shadow" };
static const char *const verdict_names[] = { "pass", "drop" };
const char *const fg_action_names[3] = { "limit", "pass", "drop" };
const char *const fg_on_full_names[3] = { "overflow", "open", "closed" };
const char *const fg_xdp_mode_names[3] = { "auto", "native", "skb" };
const char *const fg_xdp_attach_names[3] = { "auto", "libxdp", "exclusive" };
const char *const fg_xdp_action_names[5] = { "aborted", "drop", "pass", "tx", "redirect" };

/* ---- prefixes ------------------------------------------------------------ */

int pol_pfx_push(struct pol_ctx *c, const struct fg_pfx_src *p)
{
	if (c->n_pfx == c->cap_pfx) {
		size_t cap = c->cap_pfx ? 2 * c->cap_pfx : 256;
		struct fg_pfx_src *n = realloc(c->pfx, cap * sizeof(*n));

		if (!n)
			return pol_fail_nomem(c);
		c->pfx = n;
		c->cap_pfx = cap;
	}
	c->pfx[c->n_pfx++] = *p;
	return 0;
}

/* Everything written, flattened into cfg->pfx (see fg_prefix_flatten). */
static int flatten(struct pol_ctx *c)
{
	struct fg_config *cfg = c->cfg;
	size_t n4, n6;

	if (fg_prefix_flatten(c->pfx, c->n_pfx, &cfg->pfx, &cfg->n_pfx))
		return pol_fail_nomem(c);
	fg_pfx_count(cfg->pfx, cfg->n_pfx, &n4, &n6);
	cfg->pol.lists = (n4 ? 1 : 0) | (n6 ? 2 : 0);
	return 0;
}

/* ---- top-level scalars ----------------------------------------------------- */

static int iface_item(struct pol_ctx *c, yaml_node_t *e, int idx, void *arg)
{
	struct fg_config *cfg = c->cfg;
	const char *s;
	size_t l;
	int i, err = pol_scalar(c, e, "interfaces", &s);

	(void)idx;
	(void)arg;
	if (err)
		return err;
	l = strlen(s);
	if (l == 0 || l >= sizeof(cfg->ifaces[0]))
		return FAIL(c, e, "interface name \"%.64s\" must be 1..%zu characters", s,
			    sizeof(cfg->ifaces[0]) - 1);
	if (strpbrk(s, "/: \t\n") || !strcmp(s, ".") || !strcmp(s, ".."))
		return FAIL(c, e, "\"%s\" is not a valid interface name", s);
	if (cfg->n_ifs == FG_MAX_IFS)
		return FAIL(c, e, "too many interfaces (at most %d)", FG_MAX_IFS);
	for (i = 0; i < cfg->n_ifs; i++)
		if (!strcmp(cfg->ifaces[i], s))
			return FAIL(c, e, "interface \"%s\" listed twice", s);
	memcpy(cfg->ifaces[cfg->n_ifs++], s, l + 1);
	return 0;
}

/* interfaces: [names]; the count is kept in cfg->n_ifs as they are read. */
static int parse_ifaces(struct pol_ctx *c, yaml_node_t *n)
{
	int count;

	return pol_each_item(c, n, "interfaces", 0, "", iface_item, NULL, &count);
}

/* metrics: "host:port", or {listen: "host:port", max_connections: N,
 * per_client: N, timeout: 3s} (metrics.h has the defaults). */
static const char *const metrics_keys[] = { "listen", "max_connections", "per_client", "timeout" };
enum {
	MX_LISTEN,
	MX_MAXCONN,
	MX_PERCLIENT,
	MX_TIMEOUT
};

static int parse_metrics_listen(struct pol_ctx *c, yaml_node_t *n)
{
	struct fg_config *cfg = c->cfg;
	const char *s, *colon;
	__u64 port;
	int err;

	err = pol_scalar(c, n, "metrics", &s);
	if (err)
		return err;
	if (!*s)
		return 0;
	if (strlen(s) >= sizeof(cfg->metrics))
		return FAIL(c, n, "metrics: address longer than %zu characters",
			    sizeof(cfg->metrics) - 1);
	colon = strrchr(s, ':');
	/* an IPv6 host is bracketed: "[::1]:9100" */
	if (!colon || colon == s || fg_parse_u64(colon + 1, &port) || port == 0 || port > 65535 ||
	    (memchr(s, ':', (size_t)(colon - s)) && (s[0] != '[' || colon[-1] != ']')))
		return FAIL(
			c, n,
			"metrics: expected \"host:port\" (e.g. \"127.0.0.1:9100\" or \"[::1]:9100\"), got \"%s\"",
			s);
	strcpy(cfg->metrics, s);
	return 0;
}

static int parse_metrics_timeout(struct pol_ctx *c, yaml_node_t *n)
{
	const char *s;
	__u64 ns;
	int err;

	err = pol_scalar(c, n, "metrics: timeout", &s);
	if (err)
		return err;
	if (fg_parse_duration(s, &ns) || ns % 1000000000ull || ns < 1000000000ull ||
	    ns > FG_METRICS_TIMEOUT_MAX * 1000000000ull)
		return FAIL(
			c, n,
			"metrics: timeout: expected whole seconds from 1s to %us (e.g. 3s), got \"%.64s\"",
			FG_METRICS_TIMEOUT_MAX, s);
	c->cfg->metrics_timeout_s = (unsigned int)(ns / 1000000000ull);
	return 0;
}

/* A connection count, 1..FG_METRICS_MAX_CONN_MAX, into *out when n is given. */
static int parse_metrics_count(struct pol_ctx *c, yaml_node_t *n, const char *what,
			       unsigned int *out)
{
	__u64 v;
	int err;

	if (!n)
		return 0;
	err = pol_parse_uint(c, n, what, 1, FG_METRICS_MAX_CONN_MAX, &v);
	if (!err)
		*out = (unsigned int)v;
	return err;
}

static int parse_metrics(struct pol_ctx *c, yaml_node_t *n)
{
	struct pol_keys ks = KEYS("metrics", metrics_keys);
	struct fg_config *cfg = c->cfg;
	int err;

	if (pol_is_null(n))
		return 0;
	if (n->type != YAML_MAPPING_NODE)
		return parse_metrics_listen(c, n);
	err = pol_read_map(c, n, "metrics",
			   "{listen: \"127.0.0.1:9100\", max_connections: 1024, "
			   "per_client: 8, timeout: 3s}",
			   &ks);
	if (err)
		return err;
	if (!ks.val[MX_LISTEN] || pol_is_null(ks.val[MX_LISTEN]))
		return FAIL(c, n, "metrics: missing listen (e.g. listen: \"127.0.0.1:9100\")");
	if ((err = parse_metrics_listen(c, ks.val[MX_LISTEN])))
		return err;
	if ((err = parse_metrics_count(c, ks.val[MX_MAXCONN], "metrics: max_connections",
				       &cfg->metrics_max_conn)) ||
	    (err = parse_metrics_count(c, ks.val[MX_PERCLIENT], "metrics: per_client",
				       &cfg->metrics_per_client)))
		return err;
	if (ks.val[MX_TIMEOUT] && (err = parse_metrics_timeout(c, ks.val[MX_TIMEOUT])))
		return err;
	if (cfg->metrics_per_client >
	    (cfg->metrics_max_conn ? cfg->metrics_max_conn : FG_METRICS_MAX_CONN))
		return FAIL(c, ks.val[MX_PERCLIENT],
			    "metrics: per_client %u is more than "
			    "max_connections %u",
			    cfg->metrics_per_client,
			    cfg->metrics_max_conn ? cfg->metrics_max_conn : FG_METRICS_MAX_CONN);
	return 0;
}

/* "10.1.2.3/8" means 10.0.0.0/8 (fg_prefix_parse masks it): say so, as
 * `floodgate deny add` does. */
static void host_bits_warn(struct pol_ctx *c, yaml_node_t *e, const char *what, const char *s,
			   const struct fg_pfx_src *p)
{
	char addr[INET6_ADDRSTRLEN + 4], masked[INET6_ADDRSTRLEN];
	unsigned char raw[16];
	struct fg_config *cfg = c->cfg;
	int n = (int)strcspn(s, "/");

	if (!s[n] || n >= (int)sizeof(addr))
		return;
	snprintf(addr, sizeof(addr), "%.*s", n, s);
	if (inet_pton(p->family == 4 ? AF_INET : AF_INET6, addr, raw) != 1 ||
	    !memcmp(raw, p->addr, p->family == 4 ? 4 : 16))
		return;
	inet_ntop(p->family == 4 ? AF_INET : AF_INET6, p->addr, masked, sizeof(masked));
	if (cfg->n_warn < FG_MAX_WARN) {
		struct fg_warn *w = &cfg->warn[cfg->n_warn];

		w->line = (int)e->start_mark.line + 1;
		w->col = (int)e->start_mark.column + 1;
		snprintf(w->msg, sizeof(w->msg), "%s: %.64s has host bits set: it means %s/%u",
			 what, s, masked, p->plen);
	}
	cfg->n_warn++;
}

/* One prefix of allow, deny or a source set, counted against FG_MAX_PREFIXES. */
static int parse_one_prefix(struct pol_ctx *c, yaml_node_t *e, const char *what, int allow,
			    int deny, struct fg_pfx_src *p)
{
	const char *s, *why;
	int err;

	err = pol_scalar(c, e, what, &s);
	if (err)
		return err;
	if (fg_prefix_parse(s, p, &why))
		return FAIL(c, e, "%s: bad prefix \"%.64s\": %s", what, s, why);
	host_bits_warn(c, e, what, s, p);
	if (allow)
		c->cfg->n_allow++;
	if (deny)
		c->cfg->n_deny++;
	if (++c->n_written > FG_MAX_PREFIXES)
		return FAIL(c, e, "too many prefixes (allow + deny + sets at most %u)",
			    FG_MAX_PREFIXES);
	p->allow = (__u8)allow;
	p->deny = (__u8)deny;
	return 0;
}

int pol_parse_prefixes(struct pol_ctx *c, yaml_node_t *n, const char *what, int allow, int deny,
		       struct fg_pfx_src **outv, size_t *outn)
{
	yaml_node_item_t *items = NULL;
	struct fg_pfx_src *v = NULL, p;
	size_t cnt = 1, nv = 0;
	int err = 0;

	if (pol_is_null(n))
		return 0;
	if (n->type != YAML_SCALAR_NODE) {
		err = pol_expect_seq(c, n, what);
		if (err)
			return err;
		items = n->data.sequence.items.start;
		cnt = (size_t)(n->data.sequence.items.top - items);
	}
	if (outv && !(v = calloc(cnt + 1, sizeof(*v))))
		return pol_fail_nomem(c);
	for (size_t i = 0; !err && i < cnt; i++) {
		yaml_node_t *e = items ? pol_node(c, items[i]) : n;

		if (!e) {
			err = FAIL(c, n, "%s: malformed list", what);
			break;
		}
		err = parse_one_prefix(c, e, what, allow, deny, &p);
		if (!err && outv)
			v[nv++] = p;
		else if (!err)
			err = pol_pfx_push(c, &p);
	}
	if (err) {
		free(v);
		return err;
	}
	if (outv) {
		*outv = v;
		*outn = nv;
	}
	return 0;
}

/* ---- limits ------------------------------------------------------------ */

const char *pol_unit_name(int bytes)
{
	return bytes ? "bytes" : "packets";
}

struct lim {
	int set; /* rate and burst given */
	int bytes;
	yaml_node_t *node;
	struct fg_limit l;
	struct fg_limit_src src;
	int plen4, plen6;
	/* per_source only: the concurrency cap (0: none) and where it is */
	__u32 conn_cap, conn_ttl_ms;
	yaml_node_t *conn_node;
};

int fg_limit_compile(long double rate, long double burst, int bytes, struct fg_limit *out,
		     char *why, int *burst_fault)
{
	long double inc;
	unsigned __int128 tau;
	int bf = 0;

#define LIM_FAIL(is_burst, ...)           \
	do {                              \
		bf = (is_burst);          \
		fg_why(why, __VA_ARGS__); \
		goto fail;                \
	} while (0)
	if (!(rate > 0))
		LIM_FAIL(0, "rate must be above 0");
	if (rate > (long double)FG_TU_PER_SEC)
		LIM_FAIL(0, "rate too high: at most %llu %s per second",
			 (unsigned long long)FG_TU_PER_SEC, pol_unit_name(bytes));
	/* rate <= FG_TU_PER_SEC, so inc >= 1 */
	inc = roundl((long double)FG_TU_PER_SEC / rate);
	/* the time unit is 1/64 ns: past ~1.28e9 per second the rounded
	 * cost per unit would be off by more than 1% of the rate */
	if (fabsl(inc - (long double)FG_TU_PER_SEC / rate) * 100 > inc)
		LIM_FAIL(0,
			 "rate too high for the bucket clock's resolution: "
			 "at most 1280000000 %s per second per bucket",
			 pol_unit_name(bytes));
	if (inc >= (long double)FG_MAX_TAU)
		LIM_FAIL(0, "rate too low");
	if (burst != floorl(burst))
		LIM_FAIL(1, "burst must be a whole number of %s", pol_unit_name(bytes));
	if (burst >= 18446744073709551616.0L)
		LIM_FAIL(1, "burst too large");
	if (!bytes && burst < 1)
		LIM_FAIL(1, "burst must be at least 1 packet");
	if (bytes && burst < MIN_FRAME)
		LIM_FAIL(1, "burst of %.0Lf bytes is below the smallest frame (%d bytes)", burst,
			 MIN_FRAME);
	if (bytes && burst < FULL_FRAME)
		LIM_FAIL(
			1,
			"burst of %.0Lf bytes is below %d bytes: a full-size frame could never pass",
			burst, FULL_FRAME);
	tau = (unsigned __int128)(__u64)burst * (__u64)inc;
	if (tau >= FG_MAX_TAU)
		LIM_FAIL(1,
			 "burst too large for this rate (burst/rate must stay below %llu seconds)",
			 (unsigned long long)(FG_MAX_TAU / FG_TU_PER_SEC));
#undef LIM_FAIL
	out->inc = (__u64)inc;
	out->tau = (__u64)tau;
	return 0;
fail:
	if (burst_fault)
		*burst_fault = bf;
	return -EINVAL;
}

int fg_limit_share(double rate, double burst, int bytes, struct fg_limit *out, char *why)
{
	long double b = floorl(burst);
	long double least = bytes ? FULL_FRAME : 1;

	if (!isfinite(rate) || !isfinite(burst)) {
		fg_why(why, "rate and burst must be finite");
		return -EINVAL;
	}
	if (b < least)
		b = least;
	return fg_limit_compile(rate, b, bytes, out, why, NULL);
}

int pol_compile_limit(struct pol_ctx *c, yaml_node_t *rate_n, yaml_node_t *burst_n,
		      long double rate, long double burst, int bytes, struct fg_limit *out)
{
	char why[FG_WHY_LEN];
	int bf = 0;

	if (!fg_limit_compile(rate, burst, bytes, out, why, &bf))
		return 0;
	if (bf ? !burst_n : !rate_n)
		return pol_fail_at(c, (yaml_mark_t){ 0 }, "%s", why);
	return FAIL(c, bf ? burst_n : rate_n, "%s", why);
}

static const char *const limit_keys[] = {
	"rate", "burst", "prefix_v4", "prefix_v6", "concurrency", "handshake_timeout",
};
static const char *const limit_keys_np[] = { "rate", "burst" };
enum {
	LK_RATE,
	LK_BURST,
	LK_PREFIX_V4,
	LK_PREFIX_V6,
	LK_CONN,
	LK_TTL
};

int pol_parse_rate_burst(struct pol_ctx *c, yaml_node_t *rate_n, yaml_node_t *burst_n,
			 long double *rate, long double *burst, int *bytes)
{
	const char *s;
	int bbytes, err;

	err = pol_scalar(c, rate_n, "rate", &s);
	if (err)
		return err;
	err = fg_parse_rate(s, rate, bytes);
	if (err == -ERANGE)
		return FAIL(c, rate_n, "rate \"%.64s\": number too large", s);
	if (err)
		return FAIL(c, rate_n,
			    "bad rate \"%.64s\" (expected N/s, N/m, N/h, nft's N/second, N/minute, "
			    "N/hour, N/day, or bytes like 10MB/s)",
			    s);
	err = pol_scalar(c, burst_n, "burst", &s);
	if (err)
		return err;
	err = fg_parse_burst(s, burst, &bbytes);
	if (err == -ERANGE)
		return FAIL(c, burst_n, "burst \"%.64s\": number too large", s);
	if (err)
		return FAIL(c, burst_n,
			    "bad burst \"%.64s\" (expected packets like 200 or bytes like 20MB)",
			    s);
	if (bbytes != *bytes)
		return FAIL(c, burst_n, "burst is in %s but rate is in %s", pol_unit_name(bbytes),
			    pol_unit_name(*bytes));
	return 0;
}

static int parse_plen(struct pol_ctx *c, yaml_node_t *n, const char *what, int max, int *out)
{
	__u64 v;
	int err = pol_parse_uint(c, n, what, 0, (__u64)max, &v);

	if (!err)
		*out = (int)v;
	return err;
}

/* A duration in milliseconds, lo..hi. */
static int parse_ms(struct pol_ctx *c, yaml_node_t *n, const char *what, __u64 lo, __u64 hi,
		    __u64 *ms)
{
	char beyond[64];
	__u64 ns;
	int err;

	snprintf(beyond, sizeof(beyond), "out of range %llums..%llus", (unsigned long long)lo,
		 (unsigned long long)(hi / 1000));
	err = pol_parse_duration_in(c, n, "", what, "expected e.g. 5s, 500ms, 2m", POL_DUR_WHOLE_MS,
				    lo * 1000000, hi * 1000000, beyond, &ns);
	if (!err)
		*ms = ns / 1000000;
	return err;
}

/* per_source's concurrency: N and handshake_timeout: (docs/concurrency.md). */
static int parse_conn(struct pol_ctx *c, yaml_node_t *n, yaml_node_t *cap_n, yaml_node_t *ttl_n,
		      struct lim *out)
{
	__u64 v, ttl = FG_CONN_TTL_DEFAULT_MS;
	int err;

	if (ttl_n && !cap_n)
		return FAIL(c, ttl_n,
			    "handshake_timeout belongs to a concurrency cap (add concurrency: N)");
	if (!cap_n)
		return 0;
	err = pol_parse_uint(c, cap_n, "concurrency", 1, FG_CONN_CAP_MAX, &v);
	if (!err && ttl_n)
		err = parse_ms(c, ttl_n, "handshake_timeout", FG_CONN_TTL_MIN_MS,
			       FG_CONN_TTL_MAX_MS, &ttl);
	if (err)
		return err;
	out->conn_cap = (__u32)v;
	out->conn_ttl_ms = (__u32)ttl;
	out->conn_node = cap_n;
	out->node = n;
	return 0;
}

/* {rate, burst} or, with_plen (per_source), {rate, burst, prefix_v4,
 * prefix_v6, concurrency, handshake_timeout}, where a concurrency cap may
 * stand without rate and burst. */
static int parse_limit(struct pol_ctx *c, yaml_node_t *n, const char *what, int with_plen,
		       struct lim *out)
{
	struct pol_keys ks = KEYS(what, limit_keys);
	struct pol_keys ks_np = KEYS(what, limit_keys_np);
	struct pol_keys *k = with_plen ? &ks : &ks_np;
	long double rate, burst;
	int bytes, err;

	memset(out, 0, sizeof(*out));
	out->plen4 = 32;
	out->plen6 = 64;
	err = pol_read_map(c, n, what, "{rate: 100/s, burst: 200}", k);
	if (err)
		return err;
	/* without with_plen, k has no cap keys and these stay NULL */
	if (with_plen && (err = parse_conn(c, n, k->val[LK_CONN], k->val[LK_TTL], out)))
		return err;
	if (out->conn_cap && !k->val[LK_RATE] && !k->val[LK_BURST])
		goto plen;
	if (!k->val[LK_RATE])
		return FAIL(c, n, "%s: missing rate (e.g. rate: 100/s)", what);
	if (!k->val[LK_BURST])
		return FAIL(c, n, "%s: missing burst (e.g. burst: 200)", what);
	err = pol_parse_rate_burst(c, k->val[LK_RATE], k->val[LK_BURST], &rate, &burst, &bytes);
	if (!err)
		err = pol_compile_limit(c, k->val[LK_RATE], k->val[LK_BURST], rate, burst, bytes,
					&out->l);
	if (err)
		return err;
	out->set = 1;
	out->bytes = bytes;
	out->node = n;
	out->src.set = 1;
	out->src.rate = (double)rate;
	out->src.burst = (double)burst;
plen:
	/* without with_plen, k has no prefix keys and these stay NULL */
	if (k->val[LK_PREFIX_V4] &&
	    (err = parse_plen(c, k->val[LK_PREFIX_V4], "prefix_v4", 32, &out->plen4)))
		return err;
	if (k->val[LK_PREFIX_V6] &&
	    (err = parse_plen(c, k->val[LK_PREFIX_V6], "prefix_v6", 128, &out->plen6)))
		return err;
	return 0;
}

/* ---- rules ------------------------------------------------------------ */

static const char *const rule_keys[] = {
	"name",	   "mode",  "action", "match", "per_source", "aggregate", "overflow",
	"on_full", "fleet", "tier",   "pool",  "escalate",   "syn_auth",
};
enum {
	RK_NAME,
	RK_MODE,
	RK_ACTION,
	RK_MATCH,
	RK_SRC,
	RK_AGG,
	RK_OVF,
	RK_FULL,
	RK_FLEET,
	RK_TIER,
	RK_POOL,
	RK_ESC,
	RK_SYN
};

static int valid_name(const char *s)
{
	size_t l = strlen(s);

	if (!l || l >= FG_NAME_LEN)
		return 0;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == l;
}

/* What one rule says, before it is compiled into rules[idx]. */
struct rule_in {
	struct pol_keys ks;
	struct lim src, agg, ovf;
	struct pol_fleet_lim fleet;
	int action, mode, on_full;
	int tier, pool; /* enum fg_tier; 1-based pool, FG_POOL_NONE */
};

/* The rule's name into rs->name: given and unique, or "fragments". */
static int rule_name(struct pol_ctx *c, yaml_node_t *n, const struct pol_keys *ks, int idx,
		     int implicit)
{
	struct fg_rule_src *rs = &c->cfg->rules[idx];
	yaml_node_t *v = ks->val[RK_NAME];
	const char *name;
	int i, err;

	if (implicit) {
		if (v)
			return FAIL(c, v, "fragments: the rule's name is always \"fragments\"");
		if (ks->val[RK_MATCH])
			return FAIL(
				c, ks->val[RK_MATCH],
				"fragments: the rule always matches non-first fragments; it takes no match");
		strcpy(rs->name, "fragments");
		rs->implicit = 1;
		return 0;
	}
	err = pol_need_scalar(c, n, v, "name", "rule without a name", &name);
	if (err)
		return err;
	if (!valid_name(name))
		return FAIL(c, v, "bad rule name \"%.64s\" (1..%d characters of A-Z a-z 0-9 _ . -)",
			    name, FG_NAME_LEN - 1);
	if (!strcmp(name, "fragments"))
		return FAIL(
			c, v,
			"rule name \"fragments\" is reserved for the implicit fragments rule (configure it with the top-level fragments: key)");
	for (i = 0; i < idx; i++)
		if (!strcmp(c->cfg->rules[i].name, name))
			return FAIL(c, v, "duplicate rule name \"%s\" (first at line %d)", name,
				    c->cfg->rules[i].line);
	strcpy(rs->name, name);
	return 0;
}

/* The fragments rule without a fragments: key: 100/s burst 200 per source. */
static int fragments_default(struct pol_ctx *c, struct lim *src)
{
	int err = pol_compile_limit(c, NULL, NULL, FRAG_RATE, FRAG_BURST, 0, &src->l);

	if (err)
		return err;
	src->set = 1;
	src->plen4 = 32;
	src->plen6 = 64;
	src->src.set = 1;
	src->src.rate = FRAG_RATE;
	src->src.burst = FRAG_BURST;
	return 0;
}

/* mode, action, on_full and the three limits. */
static int rule_options(struct pol_ctx *c, struct rule_in *ri)
{
	yaml_node_t *const *val = ri->ks.val;
	int err;

	if (val[RK_MODE] && (err = ENUM(c, val[RK_MODE], "mode", fg_mode_names, &ri->mode)))
		return err;
	if (val[RK_ACTION] &&
	    (err = ENUM(c, val[RK_ACTION], "action", fg_action_names, &ri->action)))
		return err;
	if (val[RK_FULL] &&
	    (err = ENUM(c, val[RK_FULL], "on_full", fg_on_full_names, &ri->on_full)))
		return err;
	if (val[RK_SRC] && (err = parse_limit(c, val[RK_SRC], "per_source", 1, &ri->src)))
		return err;
	if (val[RK_AGG] && (err = parse_limit(c, val[RK_AGG], "aggregate", 0, &ri->agg)))
		return err;
	if (val[RK_OVF] && (err = parse_limit(c, val[RK_OVF], "overflow", 0, &ri->ovf)))
		return err;
	if (val[RK_FLEET] && (err = pol_parse_fleet_rule(c, val[RK_FLEET], &ri->fleet)))
		return err;
	return pol_parse_rule_shed(c, val[RK_TIER], val[RK_POOL], &ri->tier, &ri->pool);
}

/* Do the action and the limits go together? */
static int rule_check(struct pol_ctx *c, yaml_node_t *n, const struct rule_in *ri)
{
	yaml_node_t *const *val = ri->ks.val;
	const struct lim *src = &ri->src, *agg = &ri->agg, *ovf = &ri->ovf;
	const struct pol_fleet_lim *fl = &ri->fleet;

	if (fl->set && !c->cfg->has_fleet)
		return FAIL(c, fl->node,
			    "a fleet limit needs the top-level fleet: section "
			    "(fleet: {redis: redis://host:6379})");
	if (ri->action != FG_ACT_LIMIT) {
		yaml_node_t *lim = val[RK_SRC] ? val[RK_SRC] :
				   val[RK_AGG] ? val[RK_AGG] :
				   val[RK_OVF] ? val[RK_OVF] :
						 val[RK_FLEET];

		if (lim)
			return FAIL(c, lim, "action %s takes no limits (only action: limit does)",
				    fg_action_names[ri->action]);
		if (val[RK_TIER] || val[RK_POOL])
			return FAIL(
				c, val[RK_TIER] ? val[RK_TIER] : val[RK_POOL],
				"action %s takes no %s (only action: limit is shed or draws from a pool)",
				fg_action_names[ri->action], val[RK_TIER] ? "tier" : "pool");
		if (val[RK_FULL])
			return FAIL(c, val[RK_FULL], "on_full needs action: limit with per_source");
		return 0;
	}
	/* a tier alone is a traffic class: shed under overload, never rate limited */
	if (!src->set && !agg->set && !fl->set && !src->conn_cap && ri->pool == FG_POOL_NONE &&
	    !val[RK_TIER])
		return FAIL(c, n,
			    "a limit rule needs per_source, aggregate, fleet and/or pool "
			    "(or a tier alone: shed under overload, not rate limited)");
	if (src->set && agg->set && src->bytes != agg->bytes)
		return FAIL(
			c, agg->node,
			"aggregate is in %s but per_source is in %s: a rule charges one kind of unit",
			pol_unit_name(agg->bytes), pol_unit_name(src->bytes));
	if (fl->set && (src->set || agg->set) && fl->bytes != (src->set ? src->bytes : agg->bytes))
		return FAIL(c, fl->node,
			    "fleet is in %s but %s is in %s: a rule charges one kind of unit",
			    pol_unit_name(fl->bytes), src->set ? "per_source" : "aggregate",
			    pol_unit_name(src->set ? src->bytes : agg->bytes));
	if (val[RK_OVF] && !src->set)
		return FAIL(c, val[RK_OVF], "overflow needs per_source");
	if (val[RK_OVF] && ri->on_full != FG_FULL_OVERFLOW)
		return FAIL(c, val[RK_OVF], "overflow is only used with on_full: overflow");
	if (val[RK_FULL] && !src->set && !src->conn_cap)
		return FAIL(c, val[RK_FULL], "on_full needs per_source");
	if (ovf->set && ovf->bytes != src->bytes)
		return FAIL(c, ovf->node, "overflow is in %s but per_source is in %s",
			    pol_unit_name(ovf->bytes), pol_unit_name(src->bytes));
	return 0;
}

/* A checked rule into pol.rules[idx] and rules[idx]. */
static void rule_compile(struct fg_config *cfg, int idx, struct rule_in *ri)
{
	struct fg_rule *r = &cfg->pol.rules[idx];
	struct fg_rule_src *rs = &cfg->rules[idx];

	/* without an overflow: limit, sources without a bucket share one
	 * bucket of the per-source limit */
	if (ri->src.set && !ri->ovf.set) {
		ri->ovf.set = 1;
		ri->ovf.l = ri->src.l;
		ri->ovf.src = ri->src.src;
	}
	r->src = ri->src.l;
	r->agg = ri->agg.l;
	r->ovf = ri->ovf.l;
	if (ri->src.set || ri->src.conn_cap) {
		rs->plen4 = ri->src.plen4;
		rs->plen6 = ri->src.plen6;
	}
	r->conn_cap = ri->src.conn_cap;
	r->conn_ttl_ms = ri->src.conn_cap ? ri->src.conn_ttl_ms : 0;
	r->mask4 = fg_mask4(rs->plen4);
	fg_mask6(rs->plen6, r->mask6);
	r->action = (__u8)ri->action;
	r->mode = (__u8)ri->mode;
	r->cost = (ri->src.set ? ri->src.bytes :
		   ri->agg.set ? ri->agg.bytes :
				 ri->fleet.bytes) ?
			  FG_COST_BYTES :
			  FG_COST_PKTS;
	r->on_full = (__u8)ri->on_full;
	r->tier = (__u8)ri->tier;
	r->pool = (__u8)ri->pool;
	if (ri->fleet.set) {
		r->fleet = 1;
		cfg->fleet_rules[idx] = ri->fleet.rc;
		memcpy(cfg->fleet_rules[idx].name, rs->name, sizeof(rs->name));
		cfg->fleet_local[idx] = ri->fleet.local;
	}
	rs->per_source = ri->src.src;
	rs->aggregate = ri->agg.src;
	rs->overflow = ri->ovf.src;
}

/* The fragments rule matches non-first fragments, one entry per class
 * (expand_match keeps one free in each). */
static void fragments_match(struct fg_policy *pol, int idx)
{
	for (int cls = 0; cls < FG_NCLASS; cls++) {
		struct fg_match *e = &pol->match[cls][pol->nmatch[cls]++];

		memset(e, 0, sizeof(*e));
		e->sport_hi = e->dport_hi = 65535;
		e->flags = FG_M_FRAG;
		e->rule = (__u16)idx;
	}
}

/*
 * A concurrency cap counts TCP connections to the rule's destination ports
 * (the cap table of docs/concurrency.md): every match entry of the rule is
 * TCP, a SYN without ACK can match it, and its destination ports fit the
 * table's FG_CONN_RANGES ranges.
 */
static int rule_cap_check(struct pol_ctx *c, const struct rule_in *ri, int idx)
{
	const struct fg_policy *pol = &c->cfg->pol;
	yaml_node_t *at = ri->src.conn_node;
	struct fg_conn_cap cap;
	char why[FG_CONN_WHY_LEN];
	int cls, k;

	for (cls = 0; cls < FG_NCLASS; cls++) {
		for (k = 0; k < pol->nmatch[cls] && k < FG_MAX_MATCH; k++) {
			const struct fg_match *e = &pol->match[cls][k];

			if (e->rule != idx)
				continue;
			if (cls != FG_CLASS_TCP || e->proto != IPPROTO_TCP)
				return FAIL(
					c, at,
					"concurrency caps count TCP connections: the rule needs match: {proto: tcp} (UDP and other protocols have no connections to count)");
			if ((FG_TCP_SYN & e->tcp_mask) != e->tcp_val &&
			    ((FG_TCP_SYN | FG_TCP_ECE | FG_TCP_CWR) & e->tcp_mask) != e->tcp_val)
				return FAIL(
					c, at,
					"concurrency: the rule's tcp_flags never match a SYN, so the cap could never refuse a connection");
		}
	}
	if (fg_conn_cap_of_rule(pol, (__u32)idx, &cap, why))
		return FAIL(c, at, "concurrency: %s", why);
	return 0;
}

/*
 * One rule into rules[idx] and its match entries. implicit: the
 * "fragments" rule, n may be NULL (all defaults), name and match are
 * fixed.
 */
static int parse_rule(struct pol_ctx *c, yaml_node_t *n, int idx, int implicit)
{
	struct fg_rule_src *rs = &c->cfg->rules[idx];
	struct rule_in ri = {
		.ks = KEYS(implicit ? "fragments" : "rule", rule_keys),
		.action = FG_ACT_LIMIT,
		.mode = FG_MODE_ENFORCE,
		.on_full = FG_FULL_OVERFLOW,
	};
	int err;

	rs->plen4 = 32;
	rs->plen6 = 64;
	if (n) {
		err = pol_read_map(
			c, n, implicit ? "fragments" : "rule",
			implicit ?
				"{per_source: {rate: 100/s, burst: 200}}" :
				"{name: ssh, match: {proto: tcp, dport: 22}, per_source: {rate: 10/s, burst: 20}}",
			&ri.ks);
		if (err)
			return err;
		rs->line = (int)n->start_mark.line + 1;
	}
	if ((err = rule_name(c, n, &ri.ks, idx, implicit)) || (err = rule_options(c, &ri)))
		return err;
	if (implicit && !n && (err = fragments_default(c, &ri.src)))
		return err;
	err = rule_check(c, n, &ri);
	if (err)
		return err;
	if (implicit && ri.ks.val[RK_SYN])
		return FAIL(c, ri.ks.val[RK_SYN],
			    "fragments: non-first fragments carry no TCP header: no syn_auth");
	if (implicit && ri.src.conn_cap)
		return FAIL(
			c, ri.src.conn_node,
			"fragments: non-first fragments carry no TCP header: no concurrency cap");
	err = pol_parse_rule_escalate(c, ri.ks.val[RK_ESC], idx,
				      ri.action == FG_ACT_LIMIT && ri.src.set);
	if (err)
		return err;
	rule_compile(c->cfg, idx, &ri);
	c->fleet_rule[idx] = ri.fleet.node;
	if (implicit) {
		fragments_match(&c->cfg->pol, idx);
		return 0;
	}
	err = pol_rule_match(c, n, ri.ks.val[RK_MATCH], idx);
	if (!err && ri.src.conn_cap)
		err = rule_cap_check(c, &ri, idx);
	if (!err)
		err = pol_parse_rule_synauth(c, ri.ks.val[RK_SYN], idx, ri.action);
	return err;
}

static int rule_item(struct pol_ctx *c, yaml_node_t *e, int idx, void *arg)
{
	(void)arg;
	return parse_rule(c, e, idx, 0);
}

static int parse_rules(struct pol_ctx *c, yaml_node_t *n)
{
	int count, err = pol_each_item(c, n, "rules", FG_MAX_FILE_RULES,
				       ", besides the implicit fragments rule", rule_item, NULL,
				       &count);

	if (!err)
		c->cfg->pol.nrules = (__u32)count;
	return err;
}

/* ---- the document -------------------------------------------------------- */

static const char *const top_keys[] = {
	"interfaces",	"xdp_mode",  "mode",	    "max_sources", "metrics",	"detach_on_exit",
	"allow",	"deny",	     "malformed",   "default",	   "fragments", "admission",
	"fleet",	"rules",     "concurrency", "pools",	   "shedding",	"xdp_attach",
	"xdp_priority", "xdp_chain", "escalation",  "syn_auth",
};
enum {
	TK_IFACES,
	TK_XDP,
	TK_MODE,
	TK_MAXSRC,
	TK_METRICS,
	TK_DETACH,
	TK_ALLOW,
	TK_DENY,
	TK_MALFORMED,
	TK_DEFAULT,
	TK_FRAG,
	TK_ADMISSION,
	TK_FLEET,
	TK_RULES,
	TK_CONN,
	TK_POOLS,
	TK_SHEDDING,
	TK_XDP_ATTACH,
	TK_XDP_PRIO,
	TK_XDP_CHAIN,
	TK_ESCALATION,
	TK_SYN,
};

/* xdp_chain: [pass, ...], the verdicts on which libxdp runs the next program. */
static int parse_xdp_chain(struct pol_ctx *c, yaml_node_t *n)
{
	yaml_node_item_t *it;
	__u32 bits = 0;
	int v, err;

	err = pol_expect_seq(c, n, "xdp_chain");
	if (err)
		return err;
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *e = pol_node(c, *it);

		if (!e)
			return FAIL(c, n, "xdp_chain: malformed list");
		err = ENUM(c, e, "xdp_chain", fg_xdp_action_names, &v);
		if (err)
			return err;
		if (bits & (1u << v))
			return FAIL(c, e, "xdp_chain: %s is listed twice", fg_xdp_action_names[v]);
		bits |= 1u << v;
	}
	if (!bits)
		return FAIL(c, n,
			    "xdp_chain: name at least one verdict (libxdp's default is [pass])");
	c->cfg->xdp_chain = bits;
	return 0;
}

/* xdp_attach, xdp_priority, xdp_chain: how floodgated attaches (attach.h). */
static int parse_attach(struct pol_ctx *c, yaml_node_t *const *val)
{
	struct fg_config *cfg = c->cfg;
	__u64 prio;
	int err;

	if (val[TK_XDP_ATTACH] && (err = ENUM(c, val[TK_XDP_ATTACH], "xdp_attach",
					      fg_xdp_attach_names, &cfg->xdp_attach)))
		return err;
	if (val[TK_XDP_PRIO]) {
		err = pol_parse_uint(c, val[TK_XDP_PRIO], "xdp_priority", 0, FG_XDP_PRIO_MAX,
				     &prio);
		if (err)
			return err;
		cfg->xdp_priority = (unsigned int)prio;
	}
	if (val[TK_XDP_CHAIN] && (err = parse_xdp_chain(c, val[TK_XDP_CHAIN])))
		return err;
	if ((val[TK_XDP_PRIO] || val[TK_XDP_CHAIN]) && cfg->xdp_attach == FG_ATTACH_EXCLUSIVE)
		return FAIL(c, val[TK_XDP_PRIO] ? val[TK_XDP_PRIO] : val[TK_XDP_CHAIN],
			    "%s applies to libxdp's dispatcher; xdp_attach: exclusive has none",
			    val[TK_XDP_PRIO] ? "xdp_priority" : "xdp_chain");
	return 0;
}

/* interfaces, xdp_mode, mode, max_sources, metrics, detach_on_exit */
static int parse_globals(struct pol_ctx *c, yaml_node_t *const *val)
{
	static const int xdp_modes[] = { FG_XDP_AUTO, FG_XDP_NATIVE, FG_XDP_SKB };
	struct fg_config *cfg = c->cfg;
	int v, err;

	if (val[TK_IFACES] && (err = parse_ifaces(c, val[TK_IFACES])))
		return err;
	if (val[TK_XDP]) {
		err = ENUM(c, val[TK_XDP], "xdp_mode", fg_xdp_mode_names, &v);
		if (err)
			return err;
		cfg->xdp_mode = xdp_modes[v];
	}
	if (val[TK_MODE] && (err = ENUM(c, val[TK_MODE], "mode", fg_mode_names, &cfg->mode)))
		return err;
	if (val[TK_MAXSRC] &&
	    (err = pol_parse_uint(c, val[TK_MAXSRC], "max_sources", MIN_MAX_SOURCES,
				  MAX_MAX_SOURCES, &cfg->max_sources)))
		return err;
	if (val[TK_METRICS] && (err = parse_metrics(c, val[TK_METRICS])))
		return err;
	if (val[TK_DETACH] &&
	    (err = pol_parse_bool(c, val[TK_DETACH], "detach_on_exit", &cfg->detach_on_exit)))
		return err;
	return parse_attach(c, val);
}

static int parse_verdict(struct pol_ctx *c, yaml_node_t *n, const char *what, __u8 *out)
{
	int v, err = ENUM(c, n, what, verdict_names, &v);

	if (!err)
		*out = (__u8)v;
	return err;
}

/* admission: an explicit new-key limit, in keys per second. */
static int parse_admission(struct pol_ctx *c, yaml_node_t *n)
{
	struct lim a;
	int err;

	err = parse_limit(c, n, "admission", 0, &a);
	if (err)
		return err;
	if (a.bytes)
		return FAIL(
			c, n,
			"admission counts new sources: rate and burst are in keys (packets), not bytes");
	c->cfg->admission = a.src;
	return 0;
}

/* concurrency: the counting side of the caps, {reconcile: 10s, max_keys: N}. */
static const char *const conn_keys[] = { "reconcile", "max_keys" };

static int parse_concurrency(struct pol_ctx *c, yaml_node_t *n)
{
	struct pol_keys ks = KEYS("concurrency", conn_keys);
	int err;

	err = pol_read_map(c, n, "concurrency", "{reconcile: 10s, max_keys: 65536}", &ks);
	if (err)
		return err;
	if (ks.val[0] && (err = parse_ms(c, ks.val[0], "reconcile", FG_CONN_RECONCILE_MIN_MS,
					 FG_CONN_RECONCILE_MAX_MS, &c->cfg->conn_reconcile_ms)))
		return err;
	return pol_parse_u32_opt(c, ks.val[1], "max_keys", FG_CONN_KEYS_MIN, FG_CONN_KEYS_MAX,
				 &c->cfg->conn_max_keys);
}

static int parse_root(struct pol_ctx *c, yaml_node_t *root)
{
	struct fg_config *cfg = c->cfg;
	struct pol_keys ks = KEYS("policy", top_keys);
	yaml_node_t *const *val = ks.val;
	/* the sections read after the lists and verdicts, in this order;
	 * null_absent: "key: ~" reads as no key at all */
	static const struct {
		int key, null_absent;
		int (*parse)(struct pol_ctx *c, yaml_node_t *n);
	} sections[] = {
		{ TK_ADMISSION, 1, parse_admission },	{ TK_FLEET, 1, pol_parse_fleet },
		{ TK_CONN, 1, parse_concurrency },	{ TK_POOLS, 0, pol_parse_pools },
		{ TK_SHEDDING, 1, pol_parse_shedding }, { TK_ESCALATION, 1, pol_parse_escalation },
		{ TK_SYN, 1, pol_parse_synauth },	{ TK_RULES, 0, parse_rules },
	};
	int err;

	cfg->xdp_mode = FG_XDP_AUTO;
	cfg->xdp_attach = FG_ATTACH_AUTO;
	cfg->xdp_priority = FG_XDP_PRIO_DEFAULT;
	cfg->xdp_chain = 1u << 2; /* XDP_PASS */
	cfg->mode = FG_MODE_ENFORCE;
	cfg->max_sources = DEFAULT_MAX_SOURCES;
	cfg->detach_on_exit = 1;
	cfg->pol.default_verdict = FG_PASS;
	cfg->pol.malformed_verdict = FG_DROP;
	cfg->conn_reconcile_ms = FG_CONN_RECONCILE_DEFAULT_MS;
	cfg->conn_max_keys = FG_CONN_KEYS_DEFAULT;
	cfg->esc_max = FG_ESC_MAX_DEFAULT;

	err = pol_read_map(c, root, "policy", "{interfaces: [eth0], rules: [...]}", &ks);
	if (!err)
		err = pol_synauth_defaults(c);
	if (err)
		return err;
	if ((err = parse_globals(c, val)))
		return err;
	if (val[TK_ALLOW] &&
	    (err = pol_parse_prefixes(c, val[TK_ALLOW], "allow", 1, 0, NULL, NULL)))
		return err;
	if (val[TK_DENY] && (err = pol_parse_prefixes(c, val[TK_DENY], "deny", 0, 1, NULL, NULL)))
		return err;
	if (val[TK_MALFORMED] &&
	    (err = parse_verdict(c, val[TK_MALFORMED], "malformed", &cfg->pol.malformed_verdict)))
		return err;
	if (val[TK_DEFAULT] &&
	    (err = parse_verdict(c, val[TK_DEFAULT], "default", &cfg->pol.default_verdict)))
		return err;
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		yaml_node_t *v = val[sections[i].key];

		if (v && !(sections[i].null_absent && pol_is_null(v)) &&
		    (err = sections[i].parse(c, v)))
			return err;
	}
	/* the implicit fragments rule is always last */
	err = parse_rule(c, val[TK_FRAG] && !pol_is_null(val[TK_FRAG]) ? val[TK_FRAG] : NULL,
			 (int)cfg->pol.nrules, 1);
	if (err)
		return err;
	cfg->pol.nrules++;
	if ((err = pol_fleet_check(c)) || (err = pol_shed_check(c)) || (err = pol_synauth_check(c)))
		return err;
	return flatten(c);
}

static void ctx_free(struct pol_ctx *c)
{
	int i;

	for (i = 0; i < c->n_sets; i++)
		free(c->sets[i].v);
	free(c->pfx);
}

int fg_config_parse(const char *buf, size_t len, const char *name, struct fg_config *cfg,
		    struct fg_err *err)
{
	struct pol_ctx c = { .cfg = cfg };
	struct fg_err dummy;
	yaml_document_t doc;
	int ret;

	if (!err)
		err = &dummy;
	memset(err, 0, sizeof(*err));
	memset(cfg, 0, sizeof(*cfg));
	snprintf(err->file, sizeof(err->file), "%s", name ? name : "<policy>");
	snprintf(cfg->path, sizeof(cfg->path), "%s", name ? name : "");
	if (len > FG_MAX_FILE_SIZE) {
		snprintf(err->msg, sizeof(err->msg),
			 "policy is %zu bytes, larger than the limit of %u", len, FG_MAX_FILE_SIZE);
		ret = -EFBIG;
		goto out;
	}
	ret = pol_load_document(buf, len, &doc, err);
	if (ret)
		goto out;
	c.doc = &doc;
	c.err = err;
	ret = parse_root(&c, yaml_document_get_root_node(&doc));
	if (!ret)
		fg_policy_hints(&cfg->pol);
	ctx_free(&c);
	yaml_document_delete(&doc);
out:
	if (ret) {
		free(cfg->pfx);
		explicit_bzero(cfg, sizeof(*cfg));
	}
	return ret;
}

/* ---- reading the file ------------------------------------------------------ */

static int __attribute__((format(printf, 3, 4)))
load_err(struct fg_err *err, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return ret;
}

/* All of fd into *buf (malloc'd), to EOF and not to st_size (/proc and
 * /sys report 0 or a page), but never more than FG_MAX_FILE_SIZE + 1 bytes. */
static int read_all(int fd, char **buf, size_t *len, struct fg_err *err)
{
	size_t cap = 0;
	ssize_t r;

	for (*len = 0;; *len += (size_t)r) {
		if (*len > FG_MAX_FILE_SIZE)
			return load_err(err, -EFBIG, "policy is larger than the limit of %u bytes",
					FG_MAX_FILE_SIZE);
		if (*len == cap) {
			size_t ncap = cap ? 2 * cap : 65536;
			char *n;

			if (ncap > FG_MAX_FILE_SIZE + 1)
				ncap = FG_MAX_FILE_SIZE + 1;
			n = realloc(*buf, ncap);
			if (!n)
				return load_err(err, -ENOMEM, "out of memory");
			*buf = n;
			cap = ncap;
		}
		do
			r = read(fd, *buf + *len, cap - *len);
		while (r < 0 && errno == EINTR);
		if (r < 0 && errno == EAGAIN)
			return load_err(err, -EAGAIN, "reading would block: not an ordinary file");
		if (r < 0)
			return load_err(err, -errno, "cannot read: %s", strerror(errno));
		if (r == 0)
			return 0;
	}
}

/* Only a regular file: a FIFO or a device could block or never end
 * (lib/safefile.h, shared with every file a user can point at). Symlinks
 * are followed (linked configs are normal); what counts is what the
 * opened fd is. */
static int read_policy(const char *path, char **buf, size_t *len, struct fg_err *err)
{
	struct stat st;
	int fd, ret;

	fd = fg_open_regular(path, err->msg);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st))
		ret = load_err(err, -errno, "cannot stat: %s", strerror(errno));
	else if (st.st_size > (off_t)FG_MAX_FILE_SIZE)
		ret = load_err(err, -EFBIG, "policy is %lld bytes, larger than the limit of %u",
			       (long long)st.st_size, FG_MAX_FILE_SIZE);
	else
		ret = read_all(fd, buf, len, err);
	close(fd);
	return ret;
}

/*
 * O_NONBLOCK does nothing for a regular file on a hung file system (a dead
 * NFS server, a FUSE daemon that never answers): open() and read() block
 * there. So the file is read by a thread of its own, and the caller waits
 * at most FG_READ_TIMEOUT_MS. A reader still stuck is left behind; the
 * last of the two to let go of the job frees it.
 */
#define MAX_STUCK_READS 4 /* readers left behind before loads are refused */

enum {
	JOB_RUNNING,
	JOB_DONE,
	JOB_ABANDONED
};

static int stuck_reads; /* readers left behind and still running (atomic) */

struct read_job {
	int refs;    /* the caller and the reader (atomic) */
	int state;   /* JOB_* (atomic) */
	int done[2]; /* pipe: the reader writes a byte when it is done */
	int ret;
	char *buf;
	size_t len;
	struct fg_err err;
	char path[];
};

static void job_put(struct read_job *j)
{
	if (__atomic_sub_fetch(&j->refs, 1, __ATOMIC_ACQ_REL))
		return;
	free(j->buf);
	close(j->done[0]);
	close(j->done[1]);
	free(j);
}

static void *reader(void *arg)
{
	struct read_job *j = arg;
	char c = 0;

	j->ret = read_policy(j->path, &j->buf, &j->len, &j->err);
	if (__atomic_exchange_n(&j->state, JOB_DONE, __ATOMIC_ACQ_REL) == JOB_ABANDONED)
		__atomic_sub_fetch(&stuck_reads, 1, __ATOMIC_RELAXED);
	if (write(j->done[1], &c, 1) != 1) {
		/* a pipe with room for 64 KiB: cannot fail; the state says it anyway */
	}
	job_put(j);
	return NULL;
}

static __u64 mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000 + (__u64)ts.tv_nsec / 1000000;
}

/* The reader with every signal blocked: signals go to the caller, whose
 * poll() they interrupt. */
static int start_reader(struct read_job *j, pthread_t *t)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(t, NULL, reader, j);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -rc;
}

/* Wait for the reader until the deadline or *stop; 0 when it is done. */
static int wait_reader(struct read_job *j, const volatile sig_atomic_t *stop)
{
	__u64 deadline = mono_ms() + FG_READ_TIMEOUT_MS;
	struct pollfd pfd = { .fd = j->done[0], .events = POLLIN };

	for (;;) {
		__u64 now = mono_ms();
		int r = poll(&pfd, 1, now < deadline ? (int)(deadline - now) : 0);

		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r < 0 && stop && *stop)
			return -EINTR;
		if (r == 0)
			return -ETIMEDOUT;
	}
}

static int read_bounded(const char *path, char **buf, size_t *len, struct fg_err *err,
			const volatile sig_atomic_t *stop)
{
	int stuck = __atomic_load_n(&stuck_reads, __ATOMIC_RELAXED), ret;
	struct read_job *j;
	pthread_t t;

	if (stuck >= MAX_STUCK_READS)
		return load_err(err, -EBUSY,
				"%d earlier reads of policy files have not returned "
				"(a hung file system?): not trying again until one does",
				stuck);
	j = calloc(1, sizeof(*j) + strlen(path) + 1);
	if (!j)
		return load_err(err, -ENOMEM, "out of memory");
	strcpy(j->path, path);
	if (pipe2(j->done, O_CLOEXEC)) {
		ret = -errno;
		free(j);
		return load_err(err, ret, "cannot read: pipe: %s", strerror(-ret));
	}
	j->refs = 2;
	ret = start_reader(j, &t);
	if (ret) {
		j->refs = 1;
		job_put(j);
		return load_err(err, ret, "cannot start a reader thread: %s", strerror(-ret));
	}
	ret = wait_reader(j, stop);
	if (ret && __atomic_exchange_n(&j->state, JOB_ABANDONED, __ATOMIC_ACQ_REL) == JOB_DONE)
		ret = 0; /* it finished just now */
	if (!ret)
		pthread_join(t, NULL); /* done: it only has to return (no thread left behind) */
	else
		pthread_detach(t); /* stuck: it goes on in the background */
	if (!ret) {
		__atomic_load_n(&j->state, __ATOMIC_ACQUIRE); /* the reader's results */
		ret = j->ret;
		*buf = j->buf;
		*len = j->len;
		j->buf = NULL;
		if (ret)
			memcpy(err->msg, j->err.msg, sizeof(err->msg));
	} else {
		__atomic_add_fetch(&stuck_reads, 1, __ATOMIC_RELAXED);
		if (ret == -ETIMEDOUT)
			load_err(err, ret,
				 "not read within %d ms (a hung file system?): refused; "
				 "the attempt goes on in the background",
				 FG_READ_TIMEOUT_MS);
		else if (ret == -EINTR)
			load_err(err, ret, "reading interrupted by a signal");
		else
			load_err(err, ret, "waiting for the read: %s", strerror(-ret));
	}
	job_put(j);
	return ret;
}

int fg_config_load_until(const char *path, struct fg_config *cfg, struct fg_err *err,
			 const volatile sig_atomic_t *stop)
{
	struct fg_err dummy;
	char *buf = NULL;
	size_t len = 0;
	int ret;

	if (!err)
		err = &dummy;
	memset(err, 0, sizeof(*err));
	memset(cfg, 0, sizeof(*cfg));
	snprintf(err->file, sizeof(err->file), "%s", path);
	ret = read_bounded(path, &buf, &len, err, stop);
	if (!ret)
		ret = fg_config_parse(buf, len, path, cfg, err);
	free(buf);
	return ret;
}

int fg_config_load(const char *path, struct fg_config *cfg, struct fg_err *err)
{
	return fg_config_load_until(path, cfg, err, NULL);
}

void fg_pfx_list_free(struct fg_pfx_entry **pfx, size_t *n)
{
	free(*pfx);
	*pfx = NULL;
	*n = 0;
}

void fg_config_free(struct fg_config *cfg)
{
	if (!cfg)
		return;
	fg_pfx_list_free(&cfg->pfx, &cfg->n_pfx);
	explicit_bzero(cfg->fleet.redis.password, sizeof(cfg->fleet.redis.password));
}
