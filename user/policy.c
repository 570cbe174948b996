// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Policy compiler: a YAML policy file (libyaml document API) -> struct
 * fg_config, validated and compiled into the fg_policy the XDP program
 * reads. Every error names the file, line and column of the node at fault.
 *
 * Nothing is partial: on error everything allocated is freed and *cfg is
 * zeroed, so a caller never has to free a half-built config.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <yaml.h>

#include "policy.h"
#include "prefix.h"
#include "units.h"

#define DEFAULT_MAX_SOURCES	(1u << 20)
#define MIN_MAX_SOURCES		1024u
#define MAX_MAX_SOURCES		(1u << 24)
#define MIN_FRAME		64	/* smallest Ethernet frame, bytes */
#define FULL_FRAME		1514	/* largest untagged 1500-MTU frame */
#define FRAG_RATE		100	/* default "fragments" rule: 100/s ... */
#define FRAG_BURST		200	/* ... burst 200 packets */

/* A source set: its canonical (sorted, unique) prefix list. */
struct pset {
	struct fg_pfx_src *v;
	size_t n;
};

struct ctx {
	yaml_document_t *doc;
	struct fg_config *cfg;
	struct fg_err *err;
	struct fg_pfx_src *pfx;	/* everything written, before flattening */
	size_t n_pfx, cap_pfx;
	size_t n_written;	/* prefixes as written, for FG_MAX_PREFIXES */
	struct pset sets[FG_MAX_SETS];
	int n_sets;
};

struct range {
	__u16 lo, hi;
};

/* One rule's match as written, before expansion into classes. */
struct msrc {
	int proto;		/* -1 any, else the IP protocol */
	struct range *sp, *dp;
	size_t nsp, ndp;
	int has_ports, has_flags;
	__u8 tcp_mask, tcp_val;
	int icmp_type;		/* -1 when absent */
	__u32 sets;
	int family;		/* 0, 4 or 6 */
};

/* ---- errors ----------------------------------------------------------- */

static int fail_at(struct ctx *c, yaml_mark_t m, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail_at(struct ctx *c, yaml_mark_t m, const char *fmt, ...)
{
	va_list ap;

	c->err->line = (int)m.line + 1;
	c->err->col = (int)m.column + 1;
	va_start(ap, fmt);
	vsnprintf(c->err->msg, sizeof(c->err->msg), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

#define FAIL(c, n, ...) fail_at((c), (n)->start_mark, __VA_ARGS__)

static int fail_nomem(struct ctx *c)
{
	c->err->line = 0;
	c->err->col = 0;
	snprintf(c->err->msg, sizeof(c->err->msg), "out of memory");
	return -ENOMEM;
}

void fg_err_format(const struct fg_err *err, char *buf, size_t len)
{
	if (!len)
		return;
	if (err->line > 0)
		snprintf(buf, len, "%s:%d:%d: %s", err->file, err->line,
			 err->col, err->msg);
	else
		snprintf(buf, len, "%s: %s", err->file, err->msg);
}

/* ---- prefixes ------------------------------------------------------------ */

static int pfx_push(struct ctx *c, const struct fg_pfx_src *p)
{
	if (c->n_pfx == c->cap_pfx) {
		size_t cap = c->cap_pfx ? 2 * c->cap_pfx : 256;
		struct fg_pfx_src *n = realloc(c->pfx, cap * sizeof(*n));

		if (!n)
			return fail_nomem(c);
		c->pfx = n;
		c->cap_pfx = cap;
	}
	c->pfx[c->n_pfx++] = *p;
	return 0;
}

/* Everything written, flattened into cfg->pfx (see fg_prefix_flatten). */
static int flatten(struct ctx *c)
{
	struct fg_config *cfg = c->cfg;
	size_t n4, n6;

	if (fg_prefix_flatten(c->pfx, c->n_pfx, &cfg->pfx, &cfg->n_pfx))
		return fail_nomem(c);
	fg_pfx_count(cfg->pfx, cfg->n_pfx, &n4, &n6);
	cfg->pol.lists = (n4 ? 1 : 0) | (n6 ? 2 : 0);
	return 0;
}

/* ---- YAML helpers ---------------------------------------------------------- */

static yaml_node_t *node(struct ctx *c, int idx)
{
	return yaml_document_get_node(c->doc, idx);
}

static const char *kind(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_SCALAR_NODE:
		return "a scalar";
	case YAML_SEQUENCE_NODE:
		return "a list";
	case YAML_MAPPING_NODE:
		return "a mapping";
	default:
		return "nothing";
	}
}

static int is_null(const yaml_node_t *n)
{
	const char *v;

	if (n->type != YAML_SCALAR_NODE ||
	    n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	v = (const char *)n->data.scalar.value;
	return !strcmp(v, "") || !strcmp(v, "~") || !strcmp(v, "null") ||
	       !strcmp(v, "Null") || !strcmp(v, "NULL");
}

static int scalar(struct ctx *c, yaml_node_t *n, const char *what,
		  const char **out)
{
	if (n->type != YAML_SCALAR_NODE)
		return FAIL(c, n, "%s: expected a scalar, got %s", what, kind(n));
	if (strlen((const char *)n->data.scalar.value) != n->data.scalar.length)
		return FAIL(c, n, "%s: NUL character in value", what);
	*out = (const char *)n->data.scalar.value;
	return 0;
}

static int expect_map(struct ctx *c, yaml_node_t *n, const char *what,
		      const char *example)
{
	if (n->type == YAML_MAPPING_NODE)
		return 0;
	return FAIL(c, n, "%s: expected a mapping like %s, got %s", what,
		    example, kind(n));
}

static int expect_seq(struct ctx *c, yaml_node_t *n, const char *what)
{
	if (n->type == YAML_SEQUENCE_NODE)
		return 0;
	return FAIL(c, n, "%s: expected a list, got %s", what, kind(n));
}

/* The keys a mapping may have; each at most once. */
struct keys {
	const char *where;
	const char *const *names;
	int n;
	unsigned int seen;
	int first_line[16];
	yaml_node_t *val[16];
};

#define KEYS(where, names) \
	{ where, names, (int)(sizeof(names) / sizeof(names[0])), 0, { 0 }, { 0 } }

/* Walk a mapping, recording each known key's value in ks->val. */
static int read_keys(struct ctx *c, yaml_node_t *map, struct keys *ks)
{
	yaml_node_pair_t *p;

	for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node(c, p->key), *v = node(c, p->value);
		const char *s;
		char list[256];
		size_t off = 0;
		int i, err;

		if (!k || !v)
			return FAIL(c, map, "%s: malformed mapping", ks->where);
		if (k->type != YAML_SCALAR_NODE)
			return FAIL(c, k, "%s: a key must be a word, got %s",
				    ks->where, kind(k));
		err = scalar(c, k, ks->where, &s);
		if (err)
			return err;
		for (i = 0; i < ks->n; i++)
			if (!strcmp(s, ks->names[i]))
				break;
		if (i == ks->n) {
			list[0] = 0;
			for (i = 0; i < ks->n && off < sizeof(list); i++)
				off += snprintf(list + off, sizeof(list) - off,
						"%s%s", i ? ", " : "", ks->names[i]);
			return FAIL(c, k, "unknown key \"%.64s\" in %s (expected %s)",
				    s, ks->where, list);
		}
		if (ks->seen & (1u << i))
			return FAIL(c, k, "duplicate key \"%s\" in %s (first at line %d)",
				    s, ks->where, ks->first_line[i]);
		ks->seen |= 1u << i;
		ks->first_line[i] = (int)k->start_mark.line + 1;
		ks->val[i] = v;
	}
	return 0;
}

static int parse_enum(struct ctx *c, yaml_node_t *n, const char *what,
		      const char *const *names, int nnames, int *out)
{
	char list[128];
	size_t off = 0;
	const char *s;
	int i, err;

	err = scalar(c, n, what, &s);
	if (err)
		return err;
	for (i = 0; i < nnames; i++) {
		if (!strcmp(s, names[i])) {
			*out = i;
			return 0;
		}
	}
	list[0] = 0;
	for (i = 0; i < nnames && off < sizeof(list); i++)
		off += snprintf(list + off, sizeof(list) - off, "%s%s",
				i ? " | " : "", names[i]);
	return FAIL(c, n, "%s: bad value \"%.64s\" (expected %s)", what, s, list);
}

#define ENUM(c, n, what, names, out) \
	parse_enum(c, n, what, names, (int)(sizeof(names) / sizeof(names[0])), out)

const char *const fg_mode_names[2] = { "enforce", "shadow" };
static const char *const verdict_names[] = { "pass", "drop" };
const char *const fg_action_names[3] = { "limit", "pass", "drop" };
const char *const fg_on_full_names[3] = { "overflow", "open", "closed" };
const char *const fg_xdp_mode_names[3] = { "auto", "native", "skb" };
static const char *const family_names[] = { "ipv4", "ipv6" };

static int parse_bool(struct ctx *c, yaml_node_t *n, const char *what, int *out)
{
	static const char *const t[] = { "true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON" };
	static const char *const f[] = { "false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF" };
	const char *s;
	size_t i;
	int err;

	err = scalar(c, n, what, &s);
	if (err)
		return err;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (!strcmp(s, t[i])) {
			*out = 1;
			return 0;
		}
		if (!strcmp(s, f[i])) {
			*out = 0;
			return 0;
		}
	}
	return FAIL(c, n, "%s: expected true or false, got \"%.64s\"", what, s);
}

static int parse_uint(struct ctx *c, yaml_node_t *n, const char *what,
		      __u64 lo, __u64 hi, __u64 *out)
{
	const char *s;
	int err;

	err = scalar(c, n, what, &s);
	if (err)
		return err;
	err = fg_parse_u64(s, out);
	if (err == -ERANGE || (!err && (*out < lo || *out > hi)))
		return FAIL(c, n, "%s: %.64s is out of range %llu..%llu", what, s,
			    (unsigned long long)lo, (unsigned long long)hi);
	if (err)
		return FAIL(c, n, "%s: expected a number, got \"%.64s\"", what, s);
	return 0;
}

/* ---- top-level scalars ----------------------------------------------------- */

static int parse_ifaces(struct ctx *c, yaml_node_t *n)
{
	struct fg_config *cfg = c->cfg;
	yaml_node_item_t *it;
	int i, err;

	if (is_null(n))
		return 0;
	err = expect_seq(c, n, "interfaces");
	if (err)
		return err;
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *e = node(c, *it);
		const char *s;
		size_t l;

		if (!e)
			return FAIL(c, n, "interfaces: malformed list");
		err = scalar(c, e, "interfaces", &s);
		if (err)
			return err;
		l = strlen(s);
		if (l == 0 || l >= sizeof(cfg->ifaces[0]))
			return FAIL(c, e, "interface name \"%.64s\" must be 1..%zu characters",
				    s, sizeof(cfg->ifaces[0]) - 1);
		if (strpbrk(s, "/: \t\n") || !strcmp(s, ".") || !strcmp(s, ".."))
			return FAIL(c, e, "\"%s\" is not a valid interface name", s);
		if (cfg->n_ifs == FG_MAX_IFS)
			return FAIL(c, e, "too many interfaces (at most %d)", FG_MAX_IFS);
		for (i = 0; i < cfg->n_ifs; i++)
			if (!strcmp(cfg->ifaces[i], s))
				return FAIL(c, e, "interface \"%s\" listed twice", s);
		memcpy(cfg->ifaces[cfg->n_ifs++], s, l + 1);
	}
	return 0;
}

static int parse_metrics(struct ctx *c, yaml_node_t *n)
{
	struct fg_config *cfg = c->cfg;
	const char *s, *colon;
	__u64 port;
	int err;

	if (is_null(n))
		return 0;
	err = scalar(c, n, "metrics", &s);
	if (err)
		return err;
	if (!*s)
		return 0;
	if (strlen(s) >= sizeof(cfg->metrics))
		return FAIL(c, n, "metrics: address longer than %zu characters",
			    sizeof(cfg->metrics) - 1);
	colon = strrchr(s, ':');
	/* an IPv6 host is bracketed: "[::1]:9100" */
	if (!colon || colon == s || fg_parse_u64(colon + 1, &port) ||
	    port == 0 || port > 65535 ||
	    (memchr(s, ':', (size_t)(colon - s)) &&
	     (s[0] != '[' || colon[-1] != ']')))
		return FAIL(c, n, "metrics: expected \"host:port\" (e.g. \"127.0.0.1:9100\" or \"[::1]:9100\"), got \"%s\"", s);
	strcpy(cfg->metrics, s);
	return 0;
}

/* A list of prefixes (or a single one) appended to c->pfx with attrs. */
static int parse_prefixes(struct ctx *c, yaml_node_t *n, const char *what,
			  int allow, int deny, struct fg_pfx_src **outv, size_t *outn)
{
	yaml_node_item_t *it, *start, *top;
	struct fg_pfx_src *v = NULL;
	size_t nv = 0;
	int single = n->type == YAML_SCALAR_NODE && !is_null(n);
	int err;

	if (is_null(n))
		return 0;
	if (!single) {
		err = expect_seq(c, n, what);
		if (err)
			return err;
		start = n->data.sequence.items.start;
		top = n->data.sequence.items.top;
		if (outv) {
			v = calloc((size_t)(top - start) + 1, sizeof(*v));
			if (!v)
				return fail_nomem(c);
		}
	} else {
		start = top = NULL;
		if (outv) {
			v = calloc(1, sizeof(*v));
			if (!v)
				return fail_nomem(c);
		}
	}
	for (it = start; single || it < top; it++) {
		yaml_node_t *e = single ? n : node(c, *it);
		const char *s, *why;
		struct fg_pfx_src p;

		if (!e) {
			err = FAIL(c, n, "%s: malformed list", what);
			goto out;
		}
		err = scalar(c, e, what, &s);
		if (err)
			goto out;
		if (fg_prefix_parse(s, &p, &why)) {
			err = FAIL(c, e, "%s: bad prefix \"%.64s\": %s", what, s, why);
			goto out;
		}
		if (allow)
			c->cfg->n_allow++;
		if (deny)
			c->cfg->n_deny++;
		if (++c->n_written > FG_MAX_PREFIXES) {
			err = FAIL(c, e, "too many prefixes (allow + deny + sets at most %u)",
				   FG_MAX_PREFIXES);
			goto out;
		}
		p.allow = (__u8)allow;
		p.deny = (__u8)deny;
		if (outv) {
			v[nv++] = p;
		} else {
			err = pfx_push(c, &p);
			if (err)
				goto out;
		}
		if (single)
			break;
	}
	if (outv) {
		*outv = v;
		*outn = nv;
	}
	return 0;
out:
	free(v);
	return err;
}

/* ---- limits ------------------------------------------------------------ */

static const char *unit_name(int bytes)
{
	return bytes ? "bytes" : "packets";
}

struct lim {
	int set;
	int bytes;
	yaml_node_t *node;
	struct fg_limit l;
	struct fg_limit_src src;
	int plen4, plen6;
};

static int compile_limit(struct ctx *c, yaml_node_t *rate_n,
			 yaml_node_t *burst_n, long double rate,
			 long double burst, int bytes, struct fg_limit *out)
{
	long double inc;
	unsigned __int128 tau;

	if (rate <= 0)
		return FAIL(c, rate_n, "rate must be above 0");
	if (rate > (long double)FG_TU_PER_SEC)
		return FAIL(c, rate_n, "rate too high: at most %llu %s per second",
			    (unsigned long long)FG_TU_PER_SEC, unit_name(bytes));
	/* rate <= FG_TU_PER_SEC, so inc >= 1 */
	inc = roundl((long double)FG_TU_PER_SEC / rate);
	/* the time unit is 1/64 ns: past ~1.28e9 per second the rounded
	 * cost per unit would be off by more than 1% of the rate */
	if (fabsl(inc - (long double)FG_TU_PER_SEC / rate) * 100 > inc)
		return FAIL(c, rate_n, "rate too high for the bucket clock's resolution: "
			    "at most 1280000000 %s per second per bucket", unit_name(bytes));
	if (inc >= (long double)FG_MAX_TAU)
		return FAIL(c, rate_n, "rate too low");
	if (burst != floorl(burst))
		return FAIL(c, burst_n, "burst must be a whole number of %s",
			    unit_name(bytes));
	if (burst >= 18446744073709551616.0L)
		return FAIL(c, burst_n, "burst too large");
	if (!bytes && burst < 1)
		return FAIL(c, burst_n, "burst must be at least 1 packet");
	if (bytes && burst < MIN_FRAME)
		return FAIL(c, burst_n, "burst of %.0Lf bytes is below the smallest frame (%d bytes)",
			    burst, MIN_FRAME);
	if (bytes && burst < FULL_FRAME)
		return FAIL(c, burst_n, "burst of %.0Lf bytes is below %d bytes: a full-size frame could never pass",
			    burst, FULL_FRAME);
	out->inc = (__u64)inc;
	tau = (unsigned __int128)(__u64)burst * out->inc;
	if (tau >= FG_MAX_TAU)
		return FAIL(c, burst_n, "burst too large for this rate (burst/rate must stay below %llu seconds)",
			    (unsigned long long)(FG_MAX_TAU / FG_TU_PER_SEC));
	out->tau = (__u64)tau;
	return 0;
}

static const char *const limit_keys[] = { "rate", "burst", "prefix_v4", "prefix_v6" };
static const char *const limit_keys_np[] = { "rate", "burst" };

static int parse_limit(struct ctx *c, yaml_node_t *n, const char *what,
		       int with_plen, struct lim *out)
{
	struct keys ks = KEYS(what, limit_keys);
	struct keys ks_np = KEYS(what, limit_keys_np);
	struct keys *k = with_plen ? &ks : &ks_np;
	long double rate, burst;
	const char *s;
	int bytes, bbytes, err;
	__u64 v;

	memset(out, 0, sizeof(*out));
	out->plen4 = 32;
	out->plen6 = 64;
	err = expect_map(c, n, what, "{rate: 100/s, burst: 200}");
	if (err)
		return err;
	err = read_keys(c, n, k);
	if (err)
		return err;
	if (!k->val[0])
		return FAIL(c, n, "%s: missing rate (e.g. rate: 100/s)", what);
	if (!k->val[1])
		return FAIL(c, n, "%s: missing burst (e.g. burst: 200)", what);
	err = scalar(c, k->val[0], "rate", &s);
	if (err)
		return err;
	err = fg_parse_rate(s, &rate, &bytes);
	if (err == -ERANGE)
		return FAIL(c, k->val[0], "rate \"%.64s\": number too large", s);
	if (err)
		return FAIL(c, k->val[0], "bad rate \"%.64s\" (expected N/s, N/m, N/h or bytes like 10MB/s)", s);
	err = scalar(c, k->val[1], "burst", &s);
	if (err)
		return err;
	err = fg_parse_burst(s, &burst, &bbytes);
	if (err == -ERANGE)
		return FAIL(c, k->val[1], "burst \"%.64s\": number too large", s);
	if (err)
		return FAIL(c, k->val[1], "bad burst \"%.64s\" (expected packets like 200 or bytes like 20MB)", s);
	if (bbytes != bytes)
		return FAIL(c, k->val[1], "burst is in %s but rate is in %s",
			    unit_name(bbytes), unit_name(bytes));
	err = compile_limit(c, k->val[0], k->val[1], rate, burst, bytes, &out->l);
	if (err)
		return err;
	if (with_plen && ks.val[2]) {
		err = parse_uint(c, ks.val[2], "prefix_v4", 0, 32, &v);
		if (err)
			return err;
		out->plen4 = (int)v;
	}
	if (with_plen && ks.val[3]) {
		err = parse_uint(c, ks.val[3], "prefix_v6", 0, 128, &v);
		if (err)
			return err;
		out->plen6 = (int)v;
	}
	out->set = 1;
	out->bytes = bytes;
	out->node = n;
	out->src.set = 1;
	out->src.rate = (double)rate;
	out->src.burst = (double)burst;
	return 0;
}

/* ---- match --------------------------------------------------------------- */

static int parse_port(struct ctx *c, yaml_node_t *e, const char *what,
		      struct range *r)
{
	char buf[32];
	const char *s;
	char *dash;
	__u64 lo, hi;
	int err;

	err = scalar(c, e, what, &s);
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
	return FAIL(c, e, "%s: bad port \"%.64s\" (expected 0..65535 or a range \"lo-hi\")",
		    what, s);
}

static int parse_ports(struct ctx *c, yaml_node_t *n, const char *what,
		       struct range **out, size_t *nout)
{
	yaml_node_item_t *it;
	struct range *v;
	size_t nv = 0, cnt;
	int err;

	if (n->type == YAML_SCALAR_NODE) {
		v = calloc(1, sizeof(*v));
		if (!v)
			return fail_nomem(c);
		err = parse_port(c, n, what, v);
		if (err) {
			free(v);
			return err;
		}
		*out = v;
		*nout = 1;
		return 0;
	}
	err = expect_seq(c, n, what);
	if (err)
		return err;
	cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (!cnt)
		return FAIL(c, n, "%s: empty port list", what);
	v = calloc(cnt, sizeof(*v));
	if (!v)
		return fail_nomem(c);
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *e = node(c, *it);

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
	{ "fin", 'F', FG_TCP_FIN }, { "syn", 'S', FG_TCP_SYN },
	{ "rst", 'R', FG_TCP_RST }, { "psh", 'P', FG_TCP_PSH },
	{ "ack", 'A', FG_TCP_ACK }, { "urg", 'U', FG_TCP_URG },
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

/* "syn" (SYN without ACK), "syn+ack", "rst", [syn, ack], "S/SA". */
static int parse_tcp_flags(struct ctx *c, yaml_node_t *n, __u8 *mask, __u8 *val)
{
	const char *bad = "expected syn, ack, fin, rst, psh, urg, ece, cwr joined by '+', a list of them, or \"flags/mask\" like S/SA";
	__u8 bits = 0, b = 0;
	const char *s, *slash, *p, *q;
	int err;

	if (n->type == YAML_SEQUENCE_NODE) {
		yaml_node_item_t *it;

		if (n->data.sequence.items.top == n->data.sequence.items.start)
			return FAIL(c, n, "tcp_flags: empty list");
		for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
			yaml_node_t *e = node(c, *it);

			if (!e)
				return FAIL(c, n, "tcp_flags: malformed list");
			err = scalar(c, e, "tcp_flags", &s);
			if (err)
				return err;
			if (tcp_flag_word(s, strlen(s), &b))
				return FAIL(c, e, "tcp_flags: unknown flag \"%.32s\" (%s)", s, bad);
			bits |= b;
		}
		goto words;
	}
	err = scalar(c, n, "tcp_flags", &s);
	if (err)
		return err;
	slash = strchr(s, '/');
	if (slash) {
		__u8 m;

		/* the value may be empty: "/R" is "RST clear" */
		if ((slash > s && tcp_flag_letters(s, (size_t)(slash - s), &b)) ||
		    tcp_flag_letters(slash + 1, strlen(slash + 1), &m))
			return FAIL(c, n, "tcp_flags: bad \"%.32s\" (%s)", s, bad);
		if (b & ~m)
			return FAIL(c, n, "tcp_flags: \"%.32s\" tests flags outside its mask", s);
		*mask = m;
		*val = b;
		return 0;
	}
	for (p = s;; p = q + 1) {
		q = strchr(p, '+');
		if (!q)
			q = p + strlen(p);
		if (tcp_flag_word(p, (size_t)(q - p), &b))
			return FAIL(c, n, "tcp_flags: bad \"%.32s\" (%s)", s, bad);
		bits |= b;
		if (!*q)
			break;
	}
words:
	if (bits == FG_TCP_SYN) {
		/* a connection request: SYN without ACK */
		*mask = FG_TCP_SYN | FG_TCP_ACK;
		*val = FG_TCP_SYN;
	} else {
		*mask = bits;
		*val = bits;
	}
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

static int parse_proto(struct ctx *c, yaml_node_t *n, int *proto)
{
	static const struct {
		const char *s;
		int p;
	} names[] = {
		{ "any", -1 }, { "tcp", IPPROTO_TCP }, { "udp", IPPROTO_UDP },
		{ "icmp", IPPROTO_ICMP }, { "icmpv6", IPPROTO_ICMPV6 },
	};
	const char *s;
	size_t i;
	__u64 v;
	int err;

	err = scalar(c, n, "proto", &s);
	if (err)
		return err;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(s, names[i].s)) {
			*proto = names[i].p;
			return 0;
		}
	}
	if (fg_parse_u64(s, &v) || v > 255)
		return FAIL(c, n, "proto: bad value \"%.64s\" (expected tcp | udp | icmp | icmpv6 | any | 1..255)", s);
	if (v == 0)
		return FAIL(c, n, "proto: 0 is not a transport protocol (use any)");
	*proto = (int)v;
	return 0;
}

/* A match's src list: a source set, one bit per distinct prefix list. */
static int parse_src_set(struct ctx *c, yaml_node_t *n, __u32 *bit)
{
	struct fg_pfx_src *v = NULL;
	size_t nv = 0, i;
	int k, err;

	if (is_null(n) || (n->type == YAML_SEQUENCE_NODE &&
			   n->data.sequence.items.top == n->data.sequence.items.start))
		return FAIL(c, n, "src: empty prefix list (leave src out to match every source)");
	err = parse_prefixes(c, n, "src", 0, 0, &v, &nv);
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
		err = pfx_push(c, &p);
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

static const char *const match_keys[] = {
	"proto", "sport", "dport", "tcp_flags", "icmp_type", "src", "family",
};
enum { MK_PROTO, MK_SPORT, MK_DPORT, MK_FLAGS, MK_ICMP, MK_SRC, MK_FAMILY };

static int parse_match(struct ctx *c, yaml_node_t *n, struct msrc *m)
{
	struct keys ks = KEYS("match", match_keys);
	int tcpudp, icmp, err, fam;
	__u64 v;

	m->proto = -1;
	m->icmp_type = -1;
	if (!n || is_null(n))
		return 0;
	err = expect_map(c, n, "match", "{proto: tcp, dport: 22}");
	if (err)
		return err;
	err = read_keys(c, n, &ks);
	if (err)
		return err;
	if (ks.val[MK_PROTO]) {
		err = parse_proto(c, ks.val[MK_PROTO], &m->proto);
		if (err)
			return err;
	}
	tcpudp = m->proto == IPPROTO_TCP || m->proto == IPPROTO_UDP;
	icmp = m->proto == IPPROTO_ICMP || m->proto == IPPROTO_ICMPV6;
	if (ks.val[MK_SPORT]) {
		if (!tcpudp)
			return FAIL(c, ks.val[MK_SPORT], "sport needs proto: tcp or udp");
		err = parse_ports(c, ks.val[MK_SPORT], "sport", &m->sp, &m->nsp);
		if (err)
			return err;
		m->has_ports = 1;
	}
	if (ks.val[MK_DPORT]) {
		if (!tcpudp)
			return FAIL(c, ks.val[MK_DPORT], "dport needs proto: tcp or udp");
		err = parse_ports(c, ks.val[MK_DPORT], "dport", &m->dp, &m->ndp);
		if (err)
			return err;
		m->has_ports = 1;
	}
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
		err = parse_uint(c, ks.val[MK_ICMP], "icmp_type", 0, 255, &v);
		if (err)
			return err;
		m->icmp_type = (int)v;
	}
	if (ks.val[MK_SRC]) {
		err = parse_src_set(c, ks.val[MK_SRC], &m->sets);
		if (err)
			return err;
	}
	if (ks.val[MK_FAMILY]) {
		err = ENUM(c, ks.val[MK_FAMILY], "family", family_names, &fam);
		if (err)
			return err;
		m->family = fam ? 6 : 4;
		if ((m->proto == IPPROTO_ICMP && m->family == 6) ||
		    (m->proto == IPPROTO_ICMPV6 && m->family == 4))
			return FAIL(c, ks.val[MK_FAMILY], "family %s contradicts proto %s",
				    fam ? "ipv6" : "ipv4", fam ? "icmp" : "icmpv6");
	}
	return 0;
}

/* Expand a rule's match into entries, in rule order, per class. */
static int expand_match(struct ctx *c, yaml_node_t *where, const struct msrc *m,
			int rule)
{
	static const struct range any = { 0, 65535 };
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
			return FAIL(c, where, "too many match entries in class %s: this rule needs %zu, %d left (at most %d per class, one kept for fragments; a port list expands to sport x dport entries)",
				    fg_class_names[cls], nsp * ndp,
				    FG_MAX_MATCH - 1 - pol->nmatch[cls], FG_MAX_MATCH);
		for (i = 0; i < nsp; i++) {
			for (j = 0; j < ndp; j++) {
				struct fg_match *e = &pol->match[cls][pol->nmatch[cls]++];
				const struct range *sr = m->nsp ? &m->sp[i] : &any;
				const struct range *dr = m->ndp ? &m->dp[j] : &any;

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
				e->rule = (__u8)rule;
			}
		}
	}
	return 0;
}

/* ---- rules ------------------------------------------------------------ */

static const char *const rule_keys[] = {
	"name", "mode", "action", "match", "per_source", "aggregate",
	"overflow", "on_full",
};
enum { RK_NAME, RK_MODE, RK_ACTION, RK_MATCH, RK_SRC, RK_AGG, RK_OVF, RK_FULL };

static int valid_name(const char *s)
{
	size_t l = strlen(s);

	if (!l || l >= FG_NAME_LEN)
		return 0;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == l;
}

/* What one rule says, before it is compiled into rules[idx]. */
struct rule_in {
	struct keys ks;
	struct lim src, agg, ovf;
	int action, mode, on_full;
};

/* The rule's name into rs->name: given and unique, or "fragments". */
static int rule_name(struct ctx *c, yaml_node_t *n, const struct keys *ks, int idx,
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
			return FAIL(c, ks->val[RK_MATCH], "fragments: the rule always matches non-first fragments; it takes no match");
		strcpy(rs->name, "fragments");
		rs->implicit = 1;
		return 0;
	}
	if (!v)
		return FAIL(c, n, "rule without a name");
	err = scalar(c, v, "name", &name);
	if (err)
		return err;
	if (!valid_name(name))
		return FAIL(c, v, "bad rule name \"%.64s\" (1..%d characters of A-Z a-z 0-9 _ . -)",
			    name, FG_NAME_LEN - 1);
	if (!strcmp(name, "fragments"))
		return FAIL(c, v, "rule name \"fragments\" is reserved for the implicit fragments rule (configure it with the top-level fragments: key)");
	for (i = 0; i < idx; i++)
		if (!strcmp(c->cfg->rules[i].name, name))
			return FAIL(c, v, "duplicate rule name \"%s\" (first at line %d)",
				    name, c->cfg->rules[i].line);
	strcpy(rs->name, name);
	return 0;
}

/* The fragments rule without a fragments: key: 100/s burst 200 per source. */
static int fragments_default(struct ctx *c, struct lim *src)
{
	int err = compile_limit(c, NULL, NULL, FRAG_RATE, FRAG_BURST, 0, &src->l);

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
static int rule_options(struct ctx *c, struct rule_in *ri)
{
	yaml_node_t *const *val = ri->ks.val;
	int err;

	if (val[RK_MODE] && (err = ENUM(c, val[RK_MODE], "mode", fg_mode_names, &ri->mode)))
		return err;
	if (val[RK_ACTION] && (err = ENUM(c, val[RK_ACTION], "action", fg_action_names, &ri->action)))
		return err;
	if (val[RK_FULL] && (err = ENUM(c, val[RK_FULL], "on_full", fg_on_full_names, &ri->on_full)))
		return err;
	if (val[RK_SRC] && (err = parse_limit(c, val[RK_SRC], "per_source", 1, &ri->src)))
		return err;
	if (val[RK_AGG] && (err = parse_limit(c, val[RK_AGG], "aggregate", 0, &ri->agg)))
		return err;
	if (val[RK_OVF] && (err = parse_limit(c, val[RK_OVF], "overflow", 0, &ri->ovf)))
		return err;
	return 0;
}

/* Do the action and the limits go together? */
static int rule_check(struct ctx *c, yaml_node_t *n, const struct rule_in *ri)
{
	yaml_node_t *const *val = ri->ks.val;
	const struct lim *src = &ri->src, *agg = &ri->agg, *ovf = &ri->ovf;

	if (ri->action != FG_ACT_LIMIT) {
		yaml_node_t *lim = val[RK_SRC] ? val[RK_SRC] : val[RK_AGG] ? val[RK_AGG] : val[RK_OVF];

		if (lim)
			return FAIL(c, lim, "action %s takes no limits (only action: limit does)",
				    fg_action_names[ri->action]);
		if (val[RK_FULL])
			return FAIL(c, val[RK_FULL], "on_full needs action: limit with per_source");
		return 0;
	}
	if (!src->set && !agg->set)
		return FAIL(c, n, "a limit rule needs per_source and/or aggregate");
	if (src->set && agg->set && src->bytes != agg->bytes)
		return FAIL(c, agg->node, "aggregate is in %s but per_source is in %s: a rule charges one kind of unit",
			    unit_name(agg->bytes), unit_name(src->bytes));
	if (val[RK_OVF] && !src->set)
		return FAIL(c, val[RK_OVF], "overflow needs per_source");
	if (val[RK_OVF] && ri->on_full != FG_FULL_OVERFLOW)
		return FAIL(c, val[RK_OVF], "overflow is only used with on_full: overflow");
	if (val[RK_FULL] && !src->set)
		return FAIL(c, val[RK_FULL], "on_full needs per_source");
	if (ovf->set && ovf->bytes != src->bytes)
		return FAIL(c, ovf->node, "overflow is in %s but per_source is in %s",
			    unit_name(ovf->bytes), unit_name(src->bytes));
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
	if (ri->src.set) {
		rs->plen4 = ri->src.plen4;
		rs->plen6 = ri->src.plen6;
	}
	r->mask4 = fg_mask4(rs->plen4);
	fg_mask6(rs->plen6, r->mask6);
	r->action = (__u8)ri->action;
	r->mode = (__u8)ri->mode;
	r->cost = (ri->src.set ? ri->src.bytes : ri->agg.bytes) ? FG_COST_BYTES : FG_COST_PKTS;
	r->on_full = (__u8)ri->on_full;
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
		e->rule = (__u8)idx;
	}
}

static int rule_match(struct ctx *c, yaml_node_t *n, yaml_node_t *match, int idx)
{
	struct msrc m = { 0 };
	int err;

	err = parse_match(c, match, &m);
	if (!err)
		err = expand_match(c, match ? match : n, &m, idx);
	free(m.sp);
	free(m.dp);
	return err;
}

/*
 * One rule into rules[idx] and its match entries. implicit: the
 * "fragments" rule, n may be NULL (all defaults), name and match are
 * fixed.
 */
static int parse_rule(struct ctx *c, yaml_node_t *n, int idx, int implicit)
{
	struct fg_rule_src *rs = &c->cfg->rules[idx];
	struct rule_in ri = {
		.ks = KEYS(implicit ? "fragments" : "rule", rule_keys),
		.action = FG_ACT_LIMIT, .mode = FG_MODE_ENFORCE, .on_full = FG_FULL_OVERFLOW,
	};
	int err;

	rs->plen4 = 32;
	rs->plen6 = 64;
	if (n) {
		err = expect_map(c, n, implicit ? "fragments" : "rule",
				 implicit ? "{per_source: {rate: 100/s, burst: 200}}"
					  : "{name: ssh, match: {proto: tcp, dport: 22}, per_source: {rate: 10/s, burst: 20}}");
		if (err)
			return err;
		err = read_keys(c, n, &ri.ks);
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
	rule_compile(c->cfg, idx, &ri);
	if (implicit) {
		fragments_match(&c->cfg->pol, idx);
		return 0;
	}
	return rule_match(c, n, ri.ks.val[RK_MATCH], idx);
}

static int parse_rules(struct ctx *c, yaml_node_t *n)
{
	yaml_node_item_t *it;
	int idx = 0, err;

	if (is_null(n))
		return 0;
	err = expect_seq(c, n, "rules");
	if (err)
		return err;
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *e = node(c, *it);

		if (!e)
			return FAIL(c, n, "rules: malformed list");
		if (idx == FG_MAX_RULES - 1)
			return FAIL(c, e, "too many rules (at most %d; one id is kept for fragments)",
				    FG_MAX_RULES - 1);
		err = parse_rule(c, e, idx, 0);
		if (err)
			return err;
		idx++;
	}
	c->cfg->pol.nrules = (__u32)idx;
	return 0;
}

/* ---- the document -------------------------------------------------------- */

static const char *const top_keys[] = {
	"interfaces", "xdp_mode", "mode", "max_sources", "metrics",
	"detach_on_exit", "allow", "deny", "malformed", "default",
	"fragments", "admission", "rules",
};
enum {
	TK_IFACES, TK_XDP, TK_MODE, TK_MAXSRC, TK_METRICS, TK_DETACH,
	TK_ALLOW, TK_DENY, TK_MALFORMED, TK_DEFAULT, TK_FRAG, TK_ADMISSION,
	TK_RULES,
};

static int parse_root(struct ctx *c, yaml_node_t *root)
{
	struct fg_config *cfg = c->cfg;
	struct keys ks = KEYS("policy", top_keys);
	int v, err;

	cfg->xdp_mode = FG_XDP_AUTO;
	cfg->mode = FG_MODE_ENFORCE;
	cfg->max_sources = DEFAULT_MAX_SOURCES;
	cfg->detach_on_exit = 1;
	cfg->pol.default_verdict = FG_PASS;
	cfg->pol.malformed_verdict = FG_DROP;

	err = expect_map(c, root, "policy", "{interfaces: [eth0], rules: [...]}");
	if (err)
		return err;
	err = read_keys(c, root, &ks);
	if (err)
		return err;
	if (ks.val[TK_IFACES] && (err = parse_ifaces(c, ks.val[TK_IFACES])))
		return err;
	if (ks.val[TK_XDP]) {
		static const int xdp_modes[] = { FG_XDP_AUTO, FG_XDP_NATIVE, FG_XDP_SKB };

		err = ENUM(c, ks.val[TK_XDP], "xdp_mode", fg_xdp_mode_names, &v);
		if (err)
			return err;
		cfg->xdp_mode = xdp_modes[v];
	}
	if (ks.val[TK_MODE] && (err = ENUM(c, ks.val[TK_MODE], "mode", fg_mode_names, &cfg->mode)))
		return err;
	if (ks.val[TK_MAXSRC] &&
	    (err = parse_uint(c, ks.val[TK_MAXSRC], "max_sources", MIN_MAX_SOURCES,
			      MAX_MAX_SOURCES, &cfg->max_sources)))
		return err;
	if (ks.val[TK_METRICS] && (err = parse_metrics(c, ks.val[TK_METRICS])))
		return err;
	if (ks.val[TK_DETACH] &&
	    (err = parse_bool(c, ks.val[TK_DETACH], "detach_on_exit", &cfg->detach_on_exit)))
		return err;
	if (ks.val[TK_ALLOW] &&
	    (err = parse_prefixes(c, ks.val[TK_ALLOW], "allow", 1, 0, NULL, NULL)))
		return err;
	if (ks.val[TK_DENY] &&
	    (err = parse_prefixes(c, ks.val[TK_DENY], "deny", 0, 1, NULL, NULL)))
		return err;
	if (ks.val[TK_MALFORMED]) {
		err = ENUM(c, ks.val[TK_MALFORMED], "malformed", verdict_names, &v);
		if (err)
			return err;
		cfg->pol.malformed_verdict = (__u8)v;
	}
	if (ks.val[TK_DEFAULT]) {
		err = ENUM(c, ks.val[TK_DEFAULT], "default", verdict_names, &v);
		if (err)
			return err;
		cfg->pol.default_verdict = (__u8)v;
	}
	if (ks.val[TK_ADMISSION] && !is_null(ks.val[TK_ADMISSION])) {
		struct lim a;

		err = parse_limit(c, ks.val[TK_ADMISSION], "admission", 0, &a);
		if (err)
			return err;
		if (a.bytes)
			return FAIL(c, ks.val[TK_ADMISSION], "admission counts new sources: rate and burst are in keys (packets), not bytes");
		cfg->admission = a.src;
	}
	if (ks.val[TK_RULES] && (err = parse_rules(c, ks.val[TK_RULES])))
		return err;
	/* the implicit fragments rule is always last */
	err = parse_rule(c, ks.val[TK_FRAG] && !is_null(ks.val[TK_FRAG]) ?
			 ks.val[TK_FRAG] : NULL, (int)cfg->pol.nrules, 1);
	if (err)
		return err;
	cfg->pol.nrules++;
	return flatten(c);
}

/* Byte offset -> 1-based line and column, for reader errors. */
static void offset_mark(const char *buf, size_t len, size_t off, struct fg_err *err)
{
	size_t i;

	err->line = 1;
	err->col = 1;
	for (i = 0; i < off && i < len; i++) {
		if (buf[i] == '\n') {
			err->line++;
			err->col = 1;
		} else {
			err->col++;
		}
	}
}

static int yaml_fail(yaml_parser_t *p, const char *buf, size_t len, struct fg_err *err)
{
	if (p->error == YAML_MEMORY_ERROR) {
		snprintf(err->msg, sizeof(err->msg), "out of memory");
		return -ENOMEM;
	}
	if (p->error == YAML_READER_ERROR) {
		offset_mark(buf, len, p->problem_offset, err);
		snprintf(err->msg, sizeof(err->msg), "%s", p->problem ? p->problem : "cannot read");
		return -EINVAL;
	}
	err->line = (int)p->problem_mark.line + 1;
	err->col = (int)p->problem_mark.column + 1;
	if (p->context)
		snprintf(err->msg, sizeof(err->msg), "YAML: %s (%s started at %d:%d)",
			 p->problem ? p->problem : "syntax error", p->context,
			 (int)p->context_mark.line + 1, (int)p->context_mark.column + 1);
	else
		snprintf(err->msg, sizeof(err->msg), "YAML: %s",
			 p->problem ? p->problem : "syntax error");
	return -EINVAL;
}

static void ctx_free(struct ctx *c)
{
	int i;

	for (i = 0; i < c->n_sets; i++)
		free(c->sets[i].v);
	free(c->pfx);
}

/*
 * libyaml's scanner is quadratic in the depth of flow collections ([ and
 * {): 100,000 nested brackets in 200 KB took 45 s of CPU, during which a
 * reloading daemon ignored SIGTERM. No policy nests deeper than a few
 * levels, so refuse depth > FG_MAX_FLOW_DEPTH before libyaml sees the text.
 * The scan skips quoted strings and comments; brackets inside plain
 * scalars count, which only matters past 64 unbalanced ones.
 */
#define FG_MAX_FLOW_DEPTH 64
static int flow_depth_check(const char *buf, size_t len, struct fg_err *err)
{
	int depth = 0, line = 1, col = 0;
	char quote = 0, prev = '\n';
	int comment = 0;

	for (size_t i = 0; i < len; i++) {
		char ch = buf[i];

		col++;
		if (ch == '\n') {
			line++;
			col = 0;
			comment = 0;	/* quoted scalars may span lines */
		} else if (comment) {
			;
		} else if (quote) {
			if (quote == '"' && ch == '\\' && i + 1 < len)
				i++, col++;
			else if (ch == quote)
				quote = 0;
		} else if (ch == '#' && (prev == ' ' || prev == '\t' || prev == '\n')) {
			comment = 1;
		} else if (ch == '\'' || ch == '"') {
			quote = ch;
		} else if (ch == '[' || ch == '{') {
			if (++depth > FG_MAX_FLOW_DEPTH) {
				err->line = line;
				err->col = col;
				snprintf(err->msg, sizeof(err->msg),
					 "collections nested deeper than %d levels", FG_MAX_FLOW_DEPTH);
				return -EINVAL;
			}
		} else if ((ch == ']' || ch == '}') && depth > 0) {
			depth--;
		}
		prev = ch;
	}
	return 0;
}

int fg_config_parse(const char *buf, size_t len, const char *name,
		    struct fg_config *cfg, struct fg_err *err)
{
	struct fg_err dummy;
	yaml_parser_t parser;
	yaml_document_t doc, doc2;
	yaml_node_t *root;
	struct ctx c;
	int ret;

	if (!err)
		err = &dummy;
	memset(err, 0, sizeof(*err));
	memset(cfg, 0, sizeof(*cfg));
	snprintf(err->file, sizeof(err->file), "%s", name ? name : "<policy>");
	snprintf(cfg->path, sizeof(cfg->path), "%s", name ? name : "");
	if (len > FG_MAX_FILE_SIZE) {
		snprintf(err->msg, sizeof(err->msg), "policy is %zu bytes, larger than the limit of %u",
			 len, FG_MAX_FILE_SIZE);
		return -EFBIG;
	}
	ret = flow_depth_check(buf, len, err);
	if (ret)
		return ret;
	if (!yaml_parser_initialize(&parser)) {
		snprintf(err->msg, sizeof(err->msg), "out of memory");
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&parser, &doc)) {
		ret = yaml_fail(&parser, buf, len, err);
		yaml_parser_delete(&parser);
		return ret;
	}
	memset(&c, 0, sizeof(c));
	c.doc = &doc;
	c.cfg = cfg;
	c.err = err;
	root = yaml_document_get_root_node(&doc);
	if (!root) {
		err->line = 1;
		err->col = 1;
		snprintf(err->msg, sizeof(err->msg), "empty policy (expected a mapping with rules:)");
		ret = -EINVAL;
		goto out;
	}
	/* a second document would be silently ignored: refuse it */
	if (!yaml_parser_load(&parser, &doc2)) {
		ret = yaml_fail(&parser, buf, len, err);
		goto out;
	}
	if (yaml_document_get_root_node(&doc2)) {
		ret = FAIL(&c, yaml_document_get_root_node(&doc2),
			   "a policy file holds one YAML document, found a second");
		yaml_document_delete(&doc2);
		goto out;
	}
	yaml_document_delete(&doc2);
	ret = parse_root(&c, root);
out:
	ctx_free(&c);
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (ret) {
		free(cfg->pfx);
		memset(cfg, 0, sizeof(*cfg));
	}
	return ret;
}

int fg_config_load(const char *path, struct fg_config *cfg, struct fg_err *err)
{
	struct fg_err dummy;
	size_t len = 0, cap = 0;
	char *buf = NULL;
	struct stat st;
	int fd, ret;

	if (!err)
		err = &dummy;
	memset(err, 0, sizeof(*err));
	memset(cfg, 0, sizeof(*cfg));
	snprintf(err->file, sizeof(err->file), "%s", path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err->msg, sizeof(err->msg), "cannot open: %s", strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		snprintf(err->msg, sizeof(err->msg), "cannot stat: %s", strerror(-ret));
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		ret = -EISDIR;
		snprintf(err->msg, sizeof(err->msg), "is a directory");
		goto out;
	}
	if (S_ISREG(st.st_mode) && st.st_size > (off_t)FG_MAX_FILE_SIZE) {
		ret = -EFBIG;
		snprintf(err->msg, sizeof(err->msg), "policy is %lld bytes, larger than the limit of %u",
			 (long long)st.st_size, FG_MAX_FILE_SIZE);
		goto out;
	}
	/* read to EOF, not to st_size: pipes and /proc report 0 */
	for (;;) {
		ssize_t r;

		if (len == cap) {
			size_t ncap = cap ? 2 * cap : 65536;
			char *n;

			if (cap > FG_MAX_FILE_SIZE) {
				ret = -EFBIG;
				snprintf(err->msg, sizeof(err->msg), "policy is larger than the limit of %u bytes",
					 FG_MAX_FILE_SIZE);
				goto out;
			}
			n = realloc(buf, ncap);
			if (!n) {
				ret = -ENOMEM;
				snprintf(err->msg, sizeof(err->msg), "out of memory");
				goto out;
			}
			buf = n;
			cap = ncap;
		}
		r = read(fd, buf + len, cap - len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			snprintf(err->msg, sizeof(err->msg), "cannot read: %s", strerror(-ret));
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	ret = fg_config_parse(buf, len, path, cfg, err);
out:
	free(buf);
	close(fd);
	return ret;
}

void fg_config_free(struct fg_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->pfx);
	cfg->pfx = NULL;
	cfg->n_pfx = 0;
}
