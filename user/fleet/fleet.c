// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The fleet lease engine: the Lua script, one pipelined round per interval, the per-rule state machine. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fleet/fleet.h"
#include "lib/sysutil.h"

/*
 * The lease script, run atomically by Redis for one rule and one node.
 * docs/fleet.md derives it; keep the two in step. Numbers in ARGV are
 * decimal strings; Redis turns the returned Lua numbers into integers.
 */
const char fg_fleet_lua[] =
	"-- floodgate fleet lease v1 (docs/fleet.md): one node asks one rule's\n"
	"-- fleet bucket for a slice in proportion to its demand, on Redis's clock.\n"
	"-- KEYS: bucket hash {tok, ts, sum, vt, rt, rb}, demand hash {node: cost/s},\n"
	"--       zset {node: expiry us}; one hash tag, so one Cluster slot.\n"
	"-- ARGV: node, rate (/s), burst, interval (us), lease (us), demand (/s),\n"
	"--       want, returned, debt, flags (1 known, 2 recovering, 4 leaving)\n"
	"-- Whatever the keys hold is untrusted (docs/fleet.md section 4): checked\n"
	"-- before use, repaired, and reported in the reply's last two numbers.\n"
	"local b, d, s = KEYS[1], KEYS[2], KEYS[3]\n"
	"local node = ARGV[1]\n"
	"local rate, burst = tonumber(ARGV[2]), tonumber(ARGV[3])\n"
	"local ival, lease = tonumber(ARGV[4]), tonumber(ARGV[5])\n"
	"local dem, want = tonumber(ARGV[6]), tonumber(ARGV[7])\n"
	"local ret, debt = tonumber(ARGV[8]), tonumber(ARGV[9])\n"
	"local flags = tonumber(ARGV[10])\n"
	"local known, recov, leaving = flags % 2 == 1, flags % 4 >= 2, flags % 8 >= 4\n"
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
	"local DMAX, HOLD = 1e15, 10 * ival\n"
	"local hi = now + 4 * ival -- the latest expiry a node writes (now + 3 I), and an interval\n"
	"local rep = 0             -- what this call repaired, bits (docs/fleet.md)\n"
	"local function num(v)     -- a finite number, or nil\n"
	"  local x = tonumber(v)\n"
	"  if x and x == x and x ~= math.huge and x ~= -math.huge then return x end\n"
	"  return nil\n"
	"end\n"
	"local function bad(v) return not v or v < 0 or v > DMAX end -- not a demand\n"
	"local function fix(m) rep = bit.bor(rep, m) end\n"
	"-- a key of another type (a hostile SET) would fail every call: reset it\n"
	"-- (pcall on the first use of each key, so no TYPE call when all is well)\n"
	"local function wrong(r, k)\n"
	"  if type(r) == 'table' and r.err then redis.call('DEL', k); fix(64); return true end\n"
	"  return false\n"
	"end\n"
	"\n"
	"local st = redis.pcall('HMGET', b, 'tok', 'ts', 'sum', 'vt', 'rt', 'rb')\n"
	"if wrong(st, b) then st = {} end\n"
	"local tok, ts, sum = num(st[1]), num(st[2]), num(st[3])\n"
	"local vt, rt, rb = num(st[4]), num(st[5]), num(st[6])\n"
	"if not st[1] and not st[2] and not st[3] then\n"
	"  -- no bucket: idle long enough to be full, unless this node held a\n"
	"  -- lease from it (restart, failover, eviction): then empty, no burst\n"
	"  tok, ts, sum, vt = known and 0 or burst, now, 0, nil\n"
	"  redis.call('DEL', d, s)\n"
	"else\n"
	"  if not tok or tok < 0 then tok = 0; fix(1) -- emptied: the safe side\n"
	"  elseif tok > burst then tok = burst; fix(2) end\n"
	"  if not ts or ts <= 0 or ts > now + lease then ts = now; fix(4) end\n"
	"  if not sum or sum < 0 then sum = nil; fix(8) end -- recomputed below\n"
	"end\n"
	"if vt and (vt <= 0 or vt > now + lease) then vt = nil; fix(128) end\n"
	"if rt and (rt <= 0 or rt > now + lease) then rt = nil; fix(128) end\n"
	"if rb and (rb < 0 or rb >= 512 or rb % 1 ~= 0) then rb = nil; fix(128) end\n"
	"-- refill; a clock that steps back refills nothing\n"
	"if now > ts then tok = math.min(burst, tok + rate * (now - ts) / 1e6) end\n"
	"-- back from fallback: what accrued while nodes decided alone is no burst\n"
	"-- to hand out, and what this node admitted alone is paid for\n"
	"if recov then tok = math.min(tok, rate * ival / 1e6) end\n"
	"tok = math.max(0, math.min(burst, tok + ret) - debt)\n"
	"\n"
	"-- expiries no node writes: gone (their demand entries go below)\n"
	"local gone = redis.pcall('ZREMRANGEBYSCORE', s, string.format('(%.0f', hi), '+inf')\n"
	"if wrong(gone, s) then sum = nil\n"
	"elseif gone > 0 then fix(32); sum = nil end\n"
	"local raw = redis.pcall('HGET', d, node)\n"
	"local old = nil\n"
	"if wrong(raw, d) then sum = nil\n"
	"elseif raw then\n"
	"  -- this node's own entry, when not a demand (NaN, a word, 1e300), is a\n"
	"  -- repair too: overwritten unnoticed, the sum would keep what it held\n"
	"  old = num(raw)\n"
	"  if bad(old) then redis.call('HDEL', d, node); fix(16); old, sum = nil, nil end\n"
	"end\n"
	"-- nodes that stopped asking stop counting (a bounded number per call)\n"
	"local dead = redis.call('ZRANGEBYSCORE', s, '-inf', now, 'LIMIT', 0, 32)\n"
	"for i = 1, #dead do\n"
	"  local v = num(redis.call('HGET', d, dead[i]))\n"
	"  if sum and not bad(v) then sum = sum - v end\n"
	"  redis.call('HDEL', d, dead[i])\n"
	"  redis.call('ZREM', s, dead[i])\n"
	"end\n"
	"-- the sum of the demands, checked against the demand entries once an\n"
	"-- interval (vt: when it last was), and whenever it cannot be right\n"
	"if not sum or not vt or now - vt >= ival then\n"
	"  local exp, live, all = {}, 0, 0\n"
	"  local z = redis.call('ZRANGE', s, 0, -1, 'WITHSCORES')\n"
	"  for i = 1, #z, 2 do exp[z[i]] = num(z[i + 1]) end\n"
	"  local h = redis.call('HGETALL', d)\n"
	"  for i = 1, #h, 2 do\n"
	"    local v, e = num(h[i + 1]), exp[h[i]]\n"
	"    if bad(v) or not e then\n"
	"      redis.call('HDEL', d, h[i]); fix(16) -- not a demand, or no node's\n"
	"    else\n"
	"      all = all + v\n"
	"      if e > now then live = live + v else redis.call('HDEL', d, h[i]) end\n"
	"    end\n"
	"  end\n"
	"  -- the incremental sum may still hold dead nodes not yet cleaned up\n"
	"  if sum and math.abs(sum - all) > 0.5 + 1e-9 * all and\n"
	"     math.abs(sum - live) > 0.5 + 1e-9 * live then fix(8) end\n"
	"  sum, vt = live, now\n"
	"  old = num(redis.call('HGET', d, node))\n"
	"end\n"
	"old = old or 0\n"
	"local prev = num(redis.call('ZSCORE', s, node))\n"
	"local dt = ival\n"
	"if prev then dt = math.max(0, math.min(2 * ival, now - prev + 3 * ival)) end\n"
	"if leaving then dem, want = 0, 0 end\n"
	"sum = math.max(dem, sum - old + dem)\n"
	"if dem > 0 then redis.call('HSET', d, node, dem)\n"
	"elseif old > 0 then redis.call('HDEL', d, node) end\n"
	"if leaving then redis.call('ZREM', s, node)\n"
	"else redis.call('ZADD', s, now + 3 * ival, node) end\n"
	"local nodes = redis.call('ZCOUNT', s, string.format('(%.0f', now), string.format('%.0f', hi))\n"
	"\n"
	"-- the slice: this node's share of the refill since its last call, plus\n"
	"-- the same share of what the bucket holds beyond one interval's refill\n"
	"local share, grant = 0, 0\n"
	"if sum > 0 then share = dem / sum end\n"
	"if want > 0 and share > 0 then\n"
	"  local slice = share * rate * dt / 1e6\n"
	"  if not recov then slice = slice + share * math.max(0, tok - rate * ival / 1e6) end\n"
	"  grant = math.max(0, math.floor(math.min(want, tok, slice)))\n"
	"  tok = tok - grant\n"
	"end\n"
	"-- what was repaired lately, by any node: every node reports it for HOLD\n"
	"local recent = 0\n"
	"if rt and rb and now - rt < HOLD then recent = rb end\n"
	"if rep > 0 then recent, rt = bit.bor(recent, rep), now end\n"
	"if recent > 0 then redis.call('HSET', b, 'tok', tok, 'ts', now, 'sum', sum, 'vt', vt, 'rt', rt, 'rb', recent)\n"
	"else\n"
	"  redis.call('HSET', b, 'tok', tok, 'ts', now, 'sum', sum, 'vt', vt)\n"
	"  if st[5] or st[6] then redis.call('HDEL', b, 'rt', 'rb') end\n"
	"end\n"
	"-- idle keys expire once the bucket would be full again anyway\n"
	"local ttl = math.min(1e12, math.ceil(burst / rate * 1000 + 10 * ival / 1000))\n"
	"redis.call('PEXPIRE', b, ttl)\n"
	"redis.call('PEXPIRE', d, ttl)\n"
	"redis.call('PEXPIRE', s, ttl)\n"
	"return {grant, lease, nodes, math.floor(tok), math.floor(share * 1e6),\n"
	"        tonumber(t[1]), tonumber(t[2]), rep, recent}\n";

#define FL_NREPLY    9	/* elements of the script's answer */
#define FL_RING	     16 /* recent grants remembered per rule */
#define FL_EVQ	     256
#define FL_F_KNOWN   1
#define FL_F_RECOV   2
#define FL_F_LEAVING 4

struct fl_grant {
	__u64 at_ns;
	__u64 n;
};

struct fl_rule {
	struct fg_fleet_rule_conf c;
	char key[3][FG_FLEET_KEY_LEN]; /* bucket, demand, nodes */
	int state;
	bool known;   /* has had an answer from this bucket */
	bool discard; /* the last take_back was stale: do not return it */
	__u64 last_round_ns;
	__u64 lease_ns; /* CLOCK_MONOTONIC deadline of the lease held */
	__u64 since_ns; /* start of the current grace or fallback */
	__u64 debt;	/* unleased cost not yet charged */
	__u32 nodes;
	struct fl_grant ring[FL_RING];
	int ring_next;
	struct fg_fleet_stats st;
	/* this round */
	char arg[9][24];
	int flags;
	__u64 ret, sent_debt;
	__s64 target;
	__u64 want; /* what this round asked for: a grant above it is impossible */
	bool leaving;
	/* the engine's own refusals of a reply (FG_FLEET_REP_REPLY), and when */
	__u32 ebits;
	__u64 ebits_ns;
	__u64 bits_ns; /* when the last round saw repair bits: degraded until degraded_min_ms */
	redisReply *rep;
	bool pending; /* waiting for its reply */
};

struct fg_fleet {
	struct fg_fleet_conf c;
	struct fg_redis *r;
	char sha[41]; /* "" until SCRIPT LOAD answered on this connection */
	char urlstr[FG_REDIS_HOST_LEN + 64];
	int nrules;
	struct fl_rule rule[FG_FLEET_MAX_RULES];
	struct fg_fleet_event evq[FL_EVQ];
	int ev_head, ev_len;
	struct fg_fleet_conn_stats cs;
	char last_why[FG_FLEET_REASON_LEN]; /* the last round's first failure, "" if none */
};

const char *fg_fleet_ev_name(int kind)
{
	static const char *const n[] = { "grace",     "resumed",  "fallback",
					 "recovered", "degraded", "healed" };

	return kind >= 0 && kind < (int)(sizeof(n) / sizeof(n[0])) ? n[kind] : "?";
}

void fg_fleet_repair_str(__u32 bits, char *buf, size_t len)
{
	static const char *const what[] = {
		"tok emptied (not a number or negative)",
		"tok clamped to the burst",
		"ts set to now (not a time, or in the future)",
		"sum recomputed (unlike the demand entries)",
		"demand entries removed (not a demand, or no node's)",
		"node expiries removed (later than any node writes)",
		"a key of another type reset",
		"the script's marks reset (vt, rt or rb implausible)",
		"a reply out of range not used (grant, lease, node count or share)",
	};
	size_t o = 0;

	if (len)
		buf[0] = 0;
	for (size_t k = 0; k < sizeof(what) / sizeof(what[0]); k++) {
		int n;

		if (!(bits & (1u << k)) || o >= len)
			continue;
		n = snprintf(buf + o, len - o, "%s%s", o ? "; " : "", what[k]);
		if (n < 0)
			break;
		o += (size_t)n;
	}
}

const char *fg_fleet_loss_name(int on_loss)
{
	static const char *const n[] = { "local", "open", "closed" };

	return on_loss >= 0 && on_loss < 3 ? n[on_loss] : "?";
}

/* --- setup ------------------------------------------------------------------ */

struct fg_fleet *fg_fleet_new(const struct fg_fleet_conf *c, char *why)
{
	struct fg_fleet *f;
	int err;

	f = calloc(1, sizeof(*f));
	if (!f) {
		fg_why(why, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	err = fg_fleet_conf_resolve(c, &f->c, why);
	if (err)
		goto fail;
	f->r = fg_redis_new(&f->c.redis);
	if (!f->r) {
		err = -ENOMEM;
		fg_why(why, "out of memory");
		goto fail;
	}
	fg_redis_url_str(&f->c.redis, f->urlstr, sizeof(f->urlstr));
	return f;
fail:
	explicit_bzero(f->c.redis.password, sizeof(f->c.redis.password));
	free(f);
	errno = -err;
	return NULL;
}

void fg_fleet_free(struct fg_fleet *f)
{
	if (!f)
		return;
	for (int i = 0; i < f->nrules; i++)
		if (f->rule[i].rep)
			freeReplyObject(f->rule[i].rep);
	fg_redis_free(f->r);
	explicit_bzero(f->c.redis.password, sizeof(f->c.redis.password));
	free(f);
}

int fg_fleet_add_rule(struct fg_fleet *f, const struct fg_fleet_rule_conf *rc, char *why)
{
	struct fl_rule *r;
	int err;

	if (f->nrules >= FG_FLEET_MAX_RULES) {
		fg_why(why, "more than %d fleet rules", FG_FLEET_MAX_RULES);
		return -ENOSPC;
	}
	err = fg_fleet_rule_check(rc, why);
	if (err)
		return err;
	for (int i = 0; i < f->nrules; i++)
		if (!strcmp(f->rule[i].c.name, rc->name)) {
			fg_why(why, "fleet rule %s added twice", rc->name);
			return -EINVAL;
		}
	r = &f->rule[f->nrules];
	memset(r, 0, sizeof(*r));
	r->c = *rc;
	fg_fleet_rule_keys(&f->c, rc, r->key);
	r->nodes = rc->nodes_hint;
	r->lease_ns = rc->adopted_expires;
	if (rc->adopted_expires) {
		/* held a lease from this bucket: if it is gone, it is recreated
		 * empty; the tokens count as granted when that lease was */
		r->known = true;
		__u64 at = rc->adopted_expires + FG_FLEET_LEASE_MARGIN_NS;

		r->ring[0].at_ns = at > (__u64)f->c.lease_ms * 1000000ull ?
					   at - (__u64)f->c.lease_ms * 1000000ull :
					   0;
		r->ring[0].n = rc->adopted_tokens;
		r->ring_next = 1;
	}
	r->state = FG_FLEET_INIT;
	r->st.state = FG_FLEET_INIT;
	r->st.lease_expires = rc->adopted_expires;
	r->st.nodes = rc->nodes_hint;
	return f->nrules++;
}

int fg_fleet_nrules(const struct fg_fleet *f)
{
	return f->nrules;
}

const struct fg_fleet_conf *fg_fleet_conf(const struct fg_fleet *f)
{
	return &f->c;
}

int fg_fleet_key(const struct fg_fleet *f, int rule, char *buf, size_t len)
{
	if (rule < 0 || rule >= f->nrules)
		return -ENOENT;
	snprintf(buf, len, "%s", f->rule[rule].key[0]);
	return 0;
}

/* --- events and the state machine ------------------------------------------- */

static void ev_push(struct fg_fleet *f, int rule, int kind, __u64 now, __u64 span, const char *fmt,
		    ...) __attribute__((format(printf, 6, 7)));
static void ev_push(struct fg_fleet *f, int rule, int kind, __u64 now, __u64 span, const char *fmt,
		    ...)
{
	struct fg_fleet_event *e;
	va_list ap;

	if (f->ev_len >= FL_EVQ) {
		f->cs.events_lost++;
		return;
	}
	e = &f->evq[(f->ev_head + f->ev_len++) % FL_EVQ];
	memset(e, 0, sizeof(*e));
	e->rule = rule;
	e->kind = kind;
	e->at_ns = now;
	e->span_ns = span;
	memcpy(e->name, f->rule[rule].c.name, sizeof(e->name));
	e->name[sizeof(e->name) - 1] = 0;
	va_start(ap, fmt);
	vsnprintf(e->reason, sizeof(e->reason), fmt, ap);
	va_end(ap);
}

int fg_fleet_next_event(struct fg_fleet *f, struct fg_fleet_event *ev)
{
	if (!f->ev_len)
		return 0;
	*ev = f->evq[f->ev_head];
	f->ev_head = (f->ev_head + 1) % FL_EVQ;
	f->ev_len--;
	return 1;
}

static void enter_fallback(struct fg_fleet *f, int i, __u64 now, __u64 since, const char *why)
{
	struct fl_rule *r = &f->rule[i];

	r->state = FG_FLEET_FALLBACK;
	r->since_ns = since;
	r->st.fallbacks++;
	ev_push(f, i, FG_FLEET_EV_FALLBACK, now, 0, "%s; on_loss %s applies: %s",
		r->lease_ns ? "the lease ran out" : "no lease yet",
		fg_fleet_loss_name(r->c.on_loss), why);
}

static void on_failure(struct fg_fleet *f, int i, __u64 now, const char *why, int err)
{
	struct fl_rule *r = &f->rule[i];

	r->st.failed++;
	if (err == -ETIMEDOUT)
		r->st.timeouts++;
	fg_whyn(r->st.reason, sizeof(r->st.reason), "%s", why);
	fg_whyn(r->st.last_error, sizeof(r->st.last_error), "%s", why);
	r->st.last_error_ns = now;
	switch (r->state) {
	case FG_FLEET_INIT:
	case FG_FLEET_OK:
	case FG_FLEET_RECOVERING:
		if (now < r->lease_ns) {
			r->state = FG_FLEET_GRACE;
			r->since_ns = now;
			r->st.grace_entries++;
			ev_push(f, i, FG_FLEET_EV_GRACE, now, 0,
				"spending the lease held (%llu ms left): %s",
				(unsigned long long)((r->lease_ns - now) / 1000000), why);
		} else {
			enter_fallback(f, i, now, r->lease_ns ? r->lease_ns : now, why);
		}
		break;
	case FG_FLEET_GRACE:
		if (now >= r->lease_ns)
			enter_fallback(f, i, now, r->lease_ns, why);
		break;
	default:
		break;
	}
}

static void on_answer(struct fg_fleet *f, int i, __u64 now)
{
	struct fl_rule *r = &f->rule[i];

	switch (r->state) {
	case FG_FLEET_FALLBACK:
		r->st.fallback_ns += now - r->since_ns;
		ev_push(f, i, FG_FLEET_EV_RECOVERED, now, now - r->since_ns,
			"redis answered after %.1f s in fallback (last error: %s)",
			(double)(now - r->since_ns) / 1e9, r->st.reason);
		r->state = FG_FLEET_RECOVERING;
		break;
	case FG_FLEET_GRACE:
		ev_push(f, i, FG_FLEET_EV_RESUMED, now, now - r->since_ns,
			"redis answered after %llu ms; the lease never ran out",
			(unsigned long long)((now - r->since_ns) / 1000000));
		r->state = FG_FLEET_OK;
		break;
	default:
		r->state = FG_FLEET_OK;
		break;
	}
	r->st.reason[0] = 0; /* the failure is over; last_error keeps it */
}

/* --- one round ---------------------------------------------------------------- */

static __u64 recent_grants(const struct fl_rule *r, __u64 now, __u64 window)
{
	__u64 sum = 0;

	for (int k = 0; k < FL_RING; k++)
		if (r->ring[k].n && r->ring[k].at_ns + window > now)
			sum += r->ring[k].n;
	return sum;
}

static __u64 u64_arg(double v)
{
	if (!(v > 0))
		return 0;
	if (v > 1e18)
		return 1000000000000000000ull;
	return (__u64)ceil(v);
}

/* This rule's EVALSHA arguments for a round starting at now. */
static void prepare(struct fg_fleet *f, struct fl_rule *r, const struct fg_fleet_in *in, __u64 now,
		    bool leaving)
{
	__u64 el = r->last_round_ns && now > r->last_round_ns ?
			   now - r->last_round_ns :
			   (__u64)f->c.interval_ms * 1000000ull;
	double dem, target;
	__s64 want;

	if (el < 1000000)
		el = 1000000;
	dem = (double)in->offered * 1e9 / (double)el;
	if (dem > FG_FLEET_DEMAND_MAX)
		dem = FG_FLEET_DEMAND_MAX; /* the script treats more as not a demand */
	/* hold enough for two intervals of the demand seen: the next round
	 * may come late by up to the deadline */
	target = dem * 2.0 * f->c.interval_ms / 1000.0;
	r->target = (__s64)u64_arg(target);
	want = r->target - in->held;
	if (want < 0 || leaving)
		want = 0;
	r->want = (__u64)want;
	r->leaving = leaving;
	r->ret = r->discard ? 0 : in->taken;
	if (r->discard)
		r->st.discarded += in->taken;
	r->discard = false;
	r->debt += in->unleased;
	r->sent_debt = r->debt;
	r->flags = (r->known ? FL_F_KNOWN : 0) | (r->state == FG_FLEET_FALLBACK ? FL_F_RECOV : 0) |
		   (leaving ? FL_F_LEAVING : 0);
	snprintf(r->arg[0], sizeof(r->arg[0]), "%.17g", r->c.rate);
	snprintf(r->arg[1], sizeof(r->arg[1]), "%.17g", r->c.burst);
	snprintf(r->arg[2], sizeof(r->arg[2]), "%llu",
		 (unsigned long long)f->c.interval_ms * 1000ull);
	snprintf(r->arg[3], sizeof(r->arg[3]), "%llu", (unsigned long long)f->c.lease_ms * 1000ull);
	snprintf(r->arg[4], sizeof(r->arg[4]), "%llu",
		 (unsigned long long)(leaving ? 0 : u64_arg(dem)));
	snprintf(r->arg[5], sizeof(r->arg[5]), "%lld", (long long)want);
	snprintf(r->arg[6], sizeof(r->arg[6]), "%llu", (unsigned long long)r->ret);
	snprintf(r->arg[7], sizeof(r->arg[7]), "%llu", (unsigned long long)r->sent_debt);
	snprintf(r->arg[8], sizeof(r->arg[8]), "%d", r->flags);
	r->last_round_ns = now;
}

static int append_eval(struct fg_fleet *f, struct fl_rule *r)
{
	const char *av[16];
	size_t al[16];
	int n = 0;

	av[n++] = "EVALSHA";
	av[n++] = f->sha;
	av[n++] = "3";
	for (int k = 0; k < 3; k++)
		av[n++] = r->key[k];
	av[n++] = f->c.node;
	for (int k = 0; k < 9; k++)
		av[n++] = r->arg[k];
	for (int k = 0; k < n; k++)
		al[k] = strlen(av[k]);
	f->cs.commands++;
	return fg_redis_append(f->r, n, av, al);
}

/* SCRIPT LOAD on this connection; the SHA1 it returns names the script. */
static int load_script(struct fg_fleet *f, __u64 deadline, char *why)
{
	const char *av[3] = { "SCRIPT", "LOAD", fg_fleet_lua };
	size_t al[3] = { 6, 4, sizeof(fg_fleet_lua) - 1 };
	redisReply *rep = NULL;
	int err;

	f->cs.script_loads++;
	err = fg_redis_append(f->r, 3, av, al);
	if (!err)
		err = fg_redis_exchange(f->r, &rep, 1, deadline, why);
	if (err)
		return err;
	if (rep->type != REDIS_REPLY_STRING || rep->len != 40) {
		fg_why(why, "SCRIPT LOAD: %.*s",
		       rep->type == REDIS_REPLY_ERROR ? (int)(rep->len > 120 ? 120 : rep->len) : 14,
		       rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
		freeReplyObject(rep);
		fg_redis_close(f->r);
		return -EPROTO;
	}
	memcpy(f->sha, rep->str, 40);
	f->sha[40] = 0;
	freeReplyObject(rep);
	return 0;
}

static int is_noscript(const redisReply *rep)
{
	return rep && rep->type == REDIS_REPLY_ERROR && rep->len >= 8 &&
	       !strncmp(rep->str, "NOSCRIPT", 8);
}

/* Send EVALSHA for every pending rule and collect the replies; after
 * NOSCRIPT (script cache flushed, a failover) load it again and resend
 * those, within the same deadline. */
static int exchange_evals(struct fg_fleet *f, __u64 deadline, char *why)
{
	redisReply *rep[FG_FLEET_MAX_RULES];
	int idx[FG_FLEET_MAX_RULES];

	for (int attempt = 0; attempt < 2; attempt++) {
		int n = 0, noscript = 0, err;

		for (int i = 0; i < f->nrules; i++) {
			if (!f->rule[i].pending)
				continue;
			err = append_eval(f, &f->rule[i]);
			if (err) {
				fg_redis_close(f->r);
				fg_why(why, "queueing EVALSHA: %s", strerror(-err));
				return err;
			}
			idx[n++] = i;
		}
		if (!n)
			return 0;
		err = fg_redis_exchange(f->r, rep, n, deadline, why);
		if (err)
			return err;
		for (int k = 0; k < n; k++) {
			struct fl_rule *r = &f->rule[idx[k]];

			if (is_noscript(rep[k])) {
				f->cs.noscript++;
				noscript++;
				freeReplyObject(rep[k]);
				continue;
			}
			r->rep = rep[k];
			r->pending = false;
		}
		if (!noscript)
			return 0;
		if (attempt)
			break;
		f->sha[0] = 0;
		err = load_script(f, deadline, why);
		if (err)
			return err;
	}
	fg_why(why, "NOSCRIPT again right after SCRIPT LOAD");
	return -EPROTO;
}

/* Parse one rule's answer; 0, or -EPROTO with the reason. */
static int parse_answer(const redisReply *rep, long long v[FL_NREPLY], char *why)
{
	if (rep->type == REDIS_REPLY_ERROR) {
		fg_why(why, "redis: %.*s", (int)(rep->len > 140 ? 140 : rep->len), rep->str);
		return -EPROTO;
	}
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements != FL_NREPLY) {
		fg_why(why, "unexpected reply to the lease script (type %d)", rep->type);
		return -EPROTO;
	}
	for (int k = 0; k < FL_NREPLY; k++) {
		if (rep->element[k]->type != REDIS_REPLY_INTEGER || rep->element[k]->integer < 0) {
			fg_why(why, "unexpected element %d in the lease script's reply", k);
			return -EPROTO;
		}
		v[k] = rep->element[k]->integer;
	}
	return 0;
}

static void local_limit(const struct fl_rule *r, struct fg_fleet_out *o)
{
	double n = r->nodes ? r->nodes : 1;

	o->local_rate = r->c.local_rate > 0 ? r->c.local_rate : r->c.rate / n;
	o->local_burst = r->c.local_burst > 0 ? r->c.local_burst :
						o->local_rate * r->c.burst / r->c.rate;
	if (o->local_burst < 1)
		o->local_burst = 1;
}

/*
 * The reply checked as untrusted input: nothing the script can answer is
 * used beyond its range. A grant above what was asked, a lease other than
 * the one sent, no node or an absurd node count, tokens above the burst, a
 * share above 1: the impossible part is not used (no grant, the shorter
 * lease, the last node count) and FG_FLEET_REP_REPLY is set.
 */
static __u32 check_reply(const struct fg_fleet *f, const struct fl_rule *r, long long v[FL_NREPLY])
{
	long long lease_us = (long long)f->c.lease_ms * 1000;
	__u32 bad = 0;

	if ((__u64)v[0] > r->want || (double)v[0] > r->c.burst) {
		v[0] = 0;
		bad = FG_FLEET_REP_REPLY;
	}
	if (v[1] != lease_us) {
		if (v[1] > lease_us)
			v[1] = lease_us;
		bad = FG_FLEET_REP_REPLY;
	}
	if ((!v[2] && !r->leaving) || v[2] > FG_FLEET_MAX_NODES) {
		v[2] = r->nodes;
		bad = FG_FLEET_REP_REPLY;
	}
	if ((double)v[3] > r->c.burst) {
		v[3] = (long long)r->c.burst;
		bad = FG_FLEET_REP_REPLY;
	}
	if (v[4] > 1000000) {
		v[4] = 1000000;
		bad = FG_FLEET_REP_REPLY;
	}
	if (v[7] > FG_FLEET_REP_ALL || v[8] > FG_FLEET_REP_ALL) {
		v[7] &= FG_FLEET_REP_ALL;
		v[8] &= FG_FLEET_REP_ALL;
		bad = FG_FLEET_REP_REPLY;
	}
	return bad;
}

/* What was repaired lately (the fleet's, from the script, and the
 * engine's own): degraded while there is any, one event on the way in
 * and one on the way out. */
static void health(struct fg_fleet *f, int i, __u32 fleet_bits, __u32 own, __u64 now)
{
	struct fl_rule *r = &f->rule[i];
	__u64 hold = (__u64)FG_FLEET_HOLD_IVALS * f->c.interval_ms * 1000000ull;
	__u32 bits = fleet_bits;

	if (own) {
		r->st.repairs++;
		r->st.repaired_ns = now;
	}
	if (own & FG_FLEET_REP_REPLY) {
		r->ebits = FG_FLEET_REP_REPLY;
		r->ebits_ns = now;
	}
	if (r->ebits && now - r->ebits_ns < hold)
		bits |= r->ebits;
	r->st.repair_bits = bits;
	if (bits)
		r->bits_ns = now;
	/* the bits last hold intervals after a repair; degraded stays for at
	 * least degraded_min_ms after it, so that a status written once a
	 * second shows it */
	if (!bits && r->st.degraded &&
	    now - r->bits_ns + hold < (__u64)f->c.degraded_min_ms * 1000000ull)
		return;
	if (bits) {
		fg_fleet_repair_str(bits, r->st.health, sizeof(r->st.health));
		if (!r->st.degraded)
			ev_push(f, i, FG_FLEET_EV_DEGRADED, now, 0,
				"redis held implausible values for this rule, repaired: %s",
				r->st.health);
		r->st.degraded = 1;
	} else if (r->st.degraded) {
		ev_push(f, i, FG_FLEET_EV_HEALED, now, 0,
			"no implausible value in redis for %u intervals (%llu repairs by this node "
			"so far)",
			FG_FLEET_HOLD_IVALS, (unsigned long long)r->st.repairs);
		r->st.degraded = 0;
		r->st.health[0] = 0;
	}
}

/* Redis answered for rule i: grant, take back, renew. */
static void answered(struct fg_fleet *f, int i, long long v[FL_NREPLY], __u64 t_send, __u64 now,
		     const struct fg_fleet_in *in, struct fg_fleet_out *o)
{
	struct fl_rule *r = &f->rule[i];
	__u32 bad = check_reply(f, r, v);
	__u64 lease_ns = (__u64)v[1] * 1000ull;
	__u64 window = (__u64)f->c.lease_ms * 1000000ull;
	bool was_fallback = r->state == FG_FLEET_FALLBACK;
	__s64 keep;

	r->known = true;
	r->nodes = (__u32)v[2];
	r->st.answered++;
	r->st.returned += r->ret;
	r->st.debt += r->sent_debt;
	r->debt -= r->sent_debt;
	r->st.granted += (__u64)v[0];
	r->st.last_grant = (__u64)v[0];
	r->st.bucket = v[3];
	r->st.share_ppm = (__u32)v[4];
	r->st.redis_time_us = (__u64)v[5] * 1000000ull + (__u64)v[6];
	r->st.last_answer_ns = now;
	/* tokens the program holds that were not granted within the last
	 * lease are stale and go back; so do those beyond twice the target
	 * (demand fell). After a fallback everything held is stale. */
	if (was_fallback) {
		keep = 0;
		r->discard = true;
	} else {
		keep = (__s64)recent_grants(r, t_send, window);
		if (keep > 2 * r->target)
			keep = 2 * r->target;
	}
	o->take_back = in->held > keep ? (__u64)(in->held - keep) : 0;
	if (v[0]) {
		r->ring[r->ring_next].at_ns = t_send;
		r->ring[r->ring_next].n = (__u64)v[0];
		r->ring_next = (r->ring_next + 1) % FL_RING;
	}
	o->grant = (__u64)v[0];
	/* Redis's lease, counted from when the request left: conservative by
	 * the round trip, and by a tick of the program's coarse clock */
	r->lease_ns = lease_ns > FG_FLEET_LEASE_MARGIN_NS ?
			      t_send + lease_ns - FG_FLEET_LEASE_MARGIN_NS :
			      t_send;
	o->renewed = 1;
	on_answer(f, i, now);
	health(f, i, (__u32)v[8], (__u32)v[7] | bad, now);
}

static void finish(struct fg_fleet *f, int i, struct fg_fleet_out *o)
{
	struct fl_rule *r = &f->rule[i];

	o->lease_expires = r->lease_ns;
	o->nodes = r->nodes;
	o->state = (__u8)r->state;
	local_limit(r, o);
	r->st.state = (__u8)r->state;
	r->st.lease_expires = r->lease_ns;
	r->st.nodes = r->nodes;
}

static int run_round(struct fg_fleet *f, const struct fg_fleet_in *in, struct fg_fleet_out *out,
		     bool leaving)
{
	char why[FG_WHY_LEN] = "";
	__u64 t_send = fg_redis_now_ns(), now;
	__u64 deadline = t_send + (__u64)f->c.deadline_ms * 1000000ull;
	int err = 0, first = 0;

	f->cs.rounds++;
	for (int i = 0; i < f->nrules; i++) {
		struct fl_rule *r = &f->rule[i];

		prepare(f, r, &in[i], t_send, leaving);
		r->pending = true;
		r->rep = NULL;
		r->st.rounds++;
		if (out)
			memset(&out[i], 0, sizeof(out[i]));
	}
	if (!fg_redis_connected(f->r)) {
		f->sha[0] = 0;
		err = fg_redis_connect(f->r, deadline, why);
		if (err)
			f->cs.connect_failures++;
		else
			f->cs.connects++;
	}
	if (!err && !f->sha[0])
		err = load_script(f, deadline, why);
	if (!err)
		err = exchange_evals(f, deadline, why);
	now = fg_redis_now_ns();
	f->last_why[0] = 0;
	for (int i = 0; i < f->nrules; i++) {
		struct fl_rule *r = &f->rule[i];
		struct fg_fleet_out tmp = {};
		struct fg_fleet_out *o = out ? &out[i] : &tmp;
		char rwhy[FG_WHY_LEN];
		long long v[FL_NREPLY];
		int rerr = err;

		if (!rerr && r->rep)
			rerr = parse_answer(r->rep, v, rwhy);
		else
			snprintf(rwhy, sizeof(rwhy), "%s", why[0] ? why : "no reply");
		if (!rerr && !r->rep)
			rerr = -EPROTO;
		if (r->rep)
			freeReplyObject(r->rep);
		r->rep = NULL;
		r->pending = false;
		if (rerr) {
			/* nothing reached Redis for sure: returns are lost, debt waits */
			r->st.discarded += r->ret;
			on_failure(f, i, now, rwhy, rerr);
			if (!first) {
				first = rerr;
				fg_whyn(f->last_why, sizeof(f->last_why), "%s", rwhy);
			}
		} else {
			answered(f, i, v, t_send, now, &in[i], o);
		}
		finish(f, i, o);
	}
	f->cs.last_round_ns = now - t_send;
	if (f->cs.last_round_ns > f->cs.max_round_ns)
		f->cs.max_round_ns = f->cs.last_round_ns;
	return first;
}

int fg_fleet_round(struct fg_fleet *f, const struct fg_fleet_in *in, struct fg_fleet_out *out)
{
	return run_round(f, in, out, false);
}

int fg_fleet_release(struct fg_fleet *f, const struct fg_fleet_in *in)
{
	int err = run_round(f, in, NULL, true);

	for (int i = 0; i < f->nrules; i++) {
		f->rule[i].ring_next = 0;
		memset(f->rule[i].ring, 0, sizeof(f->rule[i].ring));
	}
	return err;
}

const char *fg_fleet_last_error(const struct fg_fleet *f)
{
	return f->last_why;
}

int fg_fleet_stats(const struct fg_fleet *f, int rule, struct fg_fleet_stats *st)
{
	const struct fl_rule *r;

	if (rule < 0 || rule >= f->nrules)
		return -ENOENT;
	r = &f->rule[rule];
	*st = r->st;
	if (r->state == FG_FLEET_FALLBACK) {
		__u64 now = fg_redis_now_ns();

		if (now > r->since_ns)
			st->fallback_ns += now - r->since_ns;
	}
	return 0;
}

void fg_fleet_conn_stats(const struct fg_fleet *f, struct fg_fleet_conn_stats *st)
{
	*st = f->cs;
}
