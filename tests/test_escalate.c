// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Escalation (user/lists/escalate.c, user/policy/policy_escalate.c): the policy keys
 * escalate: and escalation: (defaults, bad input refused at line:col), and
 * the decision over the real throttle tracker with a fake clock and a fake
 * runtime list: after, for, the prefix, logged once, the cap (counted once
 * a source, never past it, room again when an entry ends), a full runtime
 * list, shadow, the kill switch, allow-listed and already-listed prefixes,
 * rule generations. The log lines are read back from stderr. No root needed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include "fgtest.h"
#include "trfix.h"
#include "lists/escalate.h"
#include "lib/log.h"
#include "policy/policy.h"
#include "lib/prefix.h"

#define SEC 1000000000ull

static struct fg_name names[FG_MAX_IDS];

/* --- a fake runtime list ---------------------------------------------------------- */

#define FAKE_MAX 128
struct fake {
	struct fg_rt_entry list[FAKE_MAX]; /* what is "on the runtime lists" */
	int n, room;			   /* entries; add fails with -ENOSPC at room */
	int adds, add_calls;
};

static bool f_allowed(void *arg, const struct fg_rt_entry *e)
{
	struct fake *f = arg;

	for (int i = 0; i < f->n; i++)
		if (f->list[i].val.list == FG_LIST_ALLOW && f->list[i].family == e->family &&
		    fg_esc_overlap(f->list[i].addr, f->list[i].plen, e->addr, e->plen,
				   e->family == 4 ? 4 : 16))
			return true;
	return false;
}

static bool f_listed(void *arg, const struct fg_rt_entry *e)
{
	struct fake *f = arg;

	for (int i = 0; i < f->n; i++)
		if (f->list[i].family == e->family && f->list[i].plen == e->plen &&
		    !memcmp(f->list[i].addr, e->addr, 16))
			return true;
	return false;
}

static int f_add(void *arg, const struct fg_rt_entry *e, char *why)
{
	struct fake *f = arg;

	f->add_calls++;
	if (f->n >= f->room || f->n >= FAKE_MAX) {
		snprintf(why, FG_WHY_LEN, "the runtime lists hold %d IPv4 entries already", f->n);
		return -ENOSPC;
	}
	f->list[f->n++] = *e;
	f->adds++;
	return 0;
}

/* --- the tracker and the view --------------------------------------------------------- */

struct rig {
	struct fg_throttle t;
	struct fg_esc x;
	struct fg_esc_view v;
	struct fake f;
	struct fg_esc_ops ops;
};

static struct rig R;
static __u64 drops4[256]; /* each source's sampled drops, growing */

static void rig_init(__u32 max)
{
	struct fg_esc_rule *r = &R.v.rule[1];

	fg_throttle_free(&R.t);
	memset(&R, 0, sizeof(R));
	memset(drops4, 0, sizeof(drops4));
	fg_throttle_init(&R.t, 1024);
	R.f.room = FAKE_MAX;
	R.ops = (struct fg_esc_ops){ f_allowed, f_listed, f_add, &R.f };
	R.v.max = max;
	R.v.wall = 1700000000;
	r->on = 1;
	r->gen = 1;
	r->plen4 = 24;
	r->plen6 = 64;
	r->after_ns = 30 * SEC;
	r->for_ns = 600 * SEC;
	snprintf(r->name, sizeof(r->name), "udp9");
}

/* A throttle event for 10.1.<n>.0/24 (rule 1, gen 1) at now (s), with new drops. */
static void event4(int n, __u64 now_s)
{
	struct fg_tev e = { .rule = 1, .gen = 1, .family = 4 };

	e.drops = drops4[n & 255] += 16;
	e.addr[0] = 10;
	e.addr[1] = 1;
	e.addr[2] = (__u8)n;
	R.t.now_ns = now_s * SEC;
	fg_throttle_event(&R.t, &e, names);
}

/* Throttled from from_s to to_s: an event a second. */
static void flood4(int n, __u64 from_s, __u64 to_s)
{
	for (__u64 t = from_s; t <= to_s; t++)
		event4(n, t);
}

static size_t step_at(__u64 now_s)
{
	R.v.now = now_s * SEC;
	return fg_esc_step(&R.x, &R.t, &R.v, &R.ops);
}

/* --- the decision ----------------------------------------------------------------------- */

static void test_after_and_for(void)
{
	const char *log;
	struct fg_rt_entry *e;

	rig_init(8);
	tf_begin();
	flood4(7, 100, 129); /* one stretch: since stays 100 */
	ASSERT_EQ(step_at(129), 0, "throttled 29 s of after: 30s: nothing yet");
	ASSERT_EQ(step_at(140), 0, "tracked for 40 s but its last drops at 29 s: nothing yet");
	event4(7, 130);
	ASSERT_EQ(step_at(130), 1, "drops 30 s after the first: escalated");
	ASSERT_EQ(step_at(131), 0, "the next second: not again");
	ASSERT_EQ(step_at(200), 0, "much later: not again");
	log = tf_end();
	ASSERT_EQ(R.f.adds, 1, "one entry added");
	ASSERT_EQ(R.x.n.escalated, 1, "escalations counted");
	ASSERT_EQ(R.v.live, 1, "live escalated entries");
	ASSERT_EQ(tf_count(log, "escalating 10.1.7.0/24 (rule udp9): throttled for 30 s"), 1,
		  "logged once, with the prefix and how long");
	e = &R.f.list[0];
	ASSERT_EQ(e->family, 4, "family");
	ASSERT_EQ(e->plen, 24, "the rule's prefix_v4");
	ASSERT_EQ(e->val.list, FG_LIST_DENY, "on the deny list");
	ASSERT_EQ(e->val.expires, 730 * SEC, "expires after for: 600s from the escalation");
	ASSERT_EQ(e->val.created, 1700000000, "created: the wall clock");
	ASSERT_TRUE(!strcmp(e->val.who, FG_ESC_WHO), "who: the escalation's author mark");
	ASSERT_TRUE(!strcmp(e->val.comment, "escalated: rule udp9 throttled 30s"),
		    "comment names the rule and how long");
	ASSERT_TRUE(e->scoped, "scope rule, the default: a scoped entry");
	ASSERT_EQ(e->rule, 1, "scoped to the rule that escalated it");
	ASSERT_EQ(tf_count(log, "for this rule's traffic only"), 1, "the log says the scope");
}

/* escalate: {scope: address}: a whole-address entry, as deny add. */
static void test_scope_address(void)
{
	const char *log;

	rig_init(8);
	R.v.rule[1].whole = 1;
	tf_begin();
	flood4(7, 100, 130);
	ASSERT_EQ(step_at(130), 1, "escalated");
	log = tf_end();
	ASSERT_EQ(R.f.adds, 1, "one entry");
	ASSERT_TRUE(!R.f.list[0].scoped, "scope address: not scoped");
	ASSERT_EQ(tf_count(log, "the whole address"), 1, "the log says so");
}

/* A lookup that says every bucket expired. */
static int lookup_gone(void *arg, struct fg_source *s)
{
	(void)arg;
	(void)s;
	return -ENOENT;
}

static void test_break_resets_since(void)
{
	rig_init(8);
	tf_begin();
	event4(3, 100);
	for (int i = 0; i < FG_THROTTLE_QUIET_TICKS; i++)
		fg_throttle_begin(&R.t);
	fg_throttle_recheck(&R.t, 100, lookup_gone, NULL, names);
	ASSERT_EQ(R.t.n, 0, "the quiet source with no bucket is forgotten: the stretch ended");
	flood4(3, 120, 140); /* throttled again: a new stretch from 120 */
	ASSERT_EQ(step_at(140), 0,
		  "40 s after the first event, 20 s into the new stretch: nothing");
	flood4(3, 141, 150);
	ASSERT_EQ(step_at(150), 1, "30 s into the new stretch: escalated");
	tf_end();
}

static void test_still_dropping(void)
{
	rig_init(8);
	tf_begin();
	flood4(4, 0, 30);
	for (int i = 0; i < FG_THROTTLE_QUIET_TICKS; i++)
		fg_throttle_begin(&R.t); /* no new drops for 3 ticks: tracked, but quiet */
	ASSERT_EQ(step_at(33), 0, "a source that stopped dropping is not escalated");
	event4(4, 34); /* it drops again, the same stretch */
	ASSERT_EQ(step_at(34), 1, "dropping again within the stretch: escalated");
	tf_end();
}

static void test_cap(void)
{
	const char *log;

	rig_init(2);
	tf_begin();
	for (int i = 0; i < 5; i++)
		flood4(i, 0, 30);
	ASSERT_EQ(step_at(30), 2, "five sources past after, max_entries 2: two added");
	ASSERT_EQ(R.x.n.refused, 3, "three refused, counted");
	ASSERT_EQ(R.v.live, 2, "live never past the cap");
	ASSERT_EQ(step_at(31), 0, "the next second: none added");
	ASSERT_EQ(R.x.n.refused, 3, "a refused source is counted once");
	log = tf_end();
	ASSERT_EQ(tf_count(log, "further escalations: at the cap of 2 escalated entries"), 1,
		  "the cap is logged once");
	ASSERT_EQ(tf_count(log, "escalating "), 2, "two escalation lines");
	/* one escalated entry ended (expired or deny del): room for one more */
	R.v.live = 1;
	tf_begin();
	ASSERT_EQ(step_at(40), 1, "room again: one refused source escalates");
	ASSERT_EQ(R.x.n.refused, 3, "retrying it counts no new refusal");
	ASSERT_EQ(R.v.live, 2, "back at the cap");
	ASSERT_EQ(step_at(41), 0, "and no more");
	flood4(9, 11, 41); /* a new source at the cap again */
	ASSERT_EQ(step_at(41), 0, "a new source at the cap: refused");
	ASSERT_EQ(R.x.n.refused, 4, "and counted");
	log = tf_end();
	ASSERT_EQ(tf_count(log, "at the cap of 2"), 1, "the cap logged again once reached again");
	ASSERT_EQ(R.f.adds, 3, "three entries added in all");
	ASSERT_EQ(R.f.add_calls, 3, "no add was tried past the cap");
}

static void test_budget(void)
{
	int n = FG_ESC_ADDS_PER_TICK + 6;

	rig_init(FG_ESC_MAX_MAX);
	tf_begin();
	for (int i = 0; i < n; i++)
		flood4(i, 0, 30);
	ASSERT_EQ(step_at(30), FG_ESC_ADDS_PER_TICK, "at most FG_ESC_ADDS_PER_TICK adds a step");
	ASSERT_EQ(R.x.n.refused, 0, "the others are not refused: they wait");
	ASSERT_EQ(step_at(31), 6, "the next step adds the rest");
	tf_end();
}

static void test_full_list(void)
{
	rig_init(8);
	R.f.room = 1;
	tf_begin();
	flood4(1, 0, 30);
	flood4(2, 0, 30);
	ASSERT_EQ(step_at(30), 1, "the runtime list has room for one");
	ASSERT_EQ(R.x.n.refused, 1, "the other is refused: the list is full");
	ASSERT_TRUE(strstr(tf_end(), "hold 1 IPv4 entries already") != NULL,
		    "the refusal says why (fg_rt_add's reason)");
}

static void test_shadow(void)
{
	const char *log;

	rig_init(8);
	R.v.rule[1].shadow = 1;
	tf_begin();
	flood4(1, 0, 30);
	flood4(2, 0, 30);
	ASSERT_EQ(step_at(30), 0, "shadow: nothing added");
	ASSERT_EQ(step_at(31), 0, "nor the next second");
	log = tf_end();
	ASSERT_EQ(R.f.add_calls, 0, "the list was never written");
	ASSERT_EQ(R.x.n.shadow, 2, "two would-escalate, counted once each");
	ASSERT_EQ(tf_count(log, "would escalate 10.1."), 2, "logged as would escalate");
	R.v.rule[1].shadow = 0; /* the operator: floodgate mode enforce */
	tf_begin();
	ASSERT_EQ(step_at(32), 2, "enforcing again: both escalate");
	tf_end();
	ASSERT_EQ(R.x.n.shadow, 2, "no more would-escalate");
}

static void test_bypass(void)
{
	rig_init(8);
	R.v.bypass = true;
	tf_begin();
	flood4(1, 0, 60);
	ASSERT_EQ(step_at(60), 0, "kill switch on: no escalation");
	ASSERT_EQ(R.x.n.escalated + R.x.n.refused + R.x.n.shadow, 0, "nothing counted");
	R.v.bypass = false;
	ASSERT_EQ(step_at(61), 1, "kill switch off, still throttled: escalated");
	tf_end();
}

static void test_allow_listed(void)
{
	struct fg_rt_entry a = { .family = 4, .plen = 32 };
	const char *log;

	rig_init(8);
	a.addr[0] = 10;
	a.addr[1] = 1;
	a.addr[2] = 5;
	a.addr[3] = 9; /* a partner's host inside 10.1.5.0/24 */
	a.val.list = FG_LIST_ALLOW;
	R.f.list[R.f.n++] = a;
	tf_begin();
	flood4(5, 0, 30);
	ASSERT_EQ(step_at(30), 0, "a prefix that holds an allow entry is not escalated");
	ASSERT_EQ(step_at(100), 0, "not later either");
	log = tf_end();
	ASSERT_EQ(R.f.add_calls, 0, "the list was never written");
	ASSERT_EQ(tf_count(log, "not escalating 10.1.5.0/24 (rule udp9): it overlaps an allow"), 1,
		  "said once");
}

static void test_already_listed(void)
{
	struct fg_rt_entry d = { .family = 4, .plen = 24 };

	rig_init(8);
	d.addr[0] = 10;
	d.addr[1] = 1;
	d.addr[2] = 6;
	d.val.list = FG_LIST_DENY;
	d.val.expires = 5 * SEC;
	snprintf(d.val.comment, sizeof(d.val.comment), "incident 7");
	R.f.list[R.f.n++] = d;
	tf_begin();
	flood4(6, 0, 30);
	ASSERT_EQ(step_at(30), 0, "the operator's entry for the prefix is left as it is");
	tf_end();
	ASSERT_EQ(R.f.add_calls, 0, "never rewritten");
	ASSERT_TRUE(!strcmp(R.f.list[0].val.comment, "incident 7"), "its comment unchanged");
	ASSERT_EQ(R.x.n.escalated + R.x.n.refused, 0, "neither escalated nor refused");
}

static void test_rules_and_generations(void)
{
	struct fg_tev e = { .rule = 1, .gen = 2, .family = 4, .drops = 16 };
	struct fg_tev o = { .rule = 2, .gen = 1, .family = 4, .drops = 16 };

	rig_init(8);
	tf_begin();
	e.addr[0] = 10;
	o.addr[0] = 11;
	for (int i = 0; i <= 1; i++) {
		R.t.now_ns = i * 3600 * SEC;
		e.drops = o.drops = 16 * (i + 1);
		fg_throttle_event(&R.t, &e, names); /* a reused id's new rule: another generation */
		fg_throttle_event(&R.t, &o, names); /* a rule without escalate: */
	}
	ASSERT_EQ(step_at(3600), 0, "neither escalates");
	tf_end();
}

static void test_ipv6(void)
{
	struct fg_tev e = { .rule = 1, .gen = 1, .family = 6, .drops = 16 };
	char p[80];

	rig_init(8);
	tf_begin();
	inet_pton(AF_INET6, "2001:db8:1:2::", e.addr);
	fg_throttle_event(&R.t, &e, names);
	R.t.now_ns = 30 * SEC;
	e.drops = 32;
	fg_throttle_event(&R.t, &e, names);
	ASSERT_EQ(step_at(30), 1, "an IPv6 source escalates");
	tf_end();
	fg_rt_prefix_str(&R.f.list[0], p, sizeof(p));
	ASSERT_TRUE(!strcmp(p, "2001:db8:1:2::/64"), "its rule's prefix_v6");
}

static void test_overlap_and_count(void)
{
	__u8 a[16] = { 10, 1, 2, 0 }, b[16] = { 10, 1, 2, 9 }, c[16] = { 10, 1, 3, 0 };
	struct fg_rt_entry v[3] = {};

	ASSERT_TRUE(fg_esc_overlap(a, 24, b, 32, 4), "a /24 holds a host inside it");
	ASSERT_TRUE(fg_esc_overlap(b, 32, a, 24, 4), "either way round");
	ASSERT_TRUE(!fg_esc_overlap(a, 24, c, 24, 4), "two /24s side by side do not overlap");
	ASSERT_TRUE(fg_esc_overlap(a, 8, c, 24, 4), "a /8 holds both");
	for (int i = 0; i < 3; i++)
		v[i].val.list = FG_LIST_DENY;
	snprintf(v[0].val.who, sizeof(v[0].val.who), "%s", FG_ESC_WHO);
	snprintf(v[1].val.who, sizeof(v[1].val.who), "%s", FG_ESC_WHO);
	v[1].expired = true;
	snprintf(v[2].val.who, sizeof(v[2].val.who), "uid 0 (root)");
	ASSERT_EQ(fg_esc_count_live(v, 3), 1, "live escalated entries: by author, not expired");
}

static void test_sorted_overlap(void)
{
	static const char *const list[] = { "10.0.0.0/8", "192.0.2.77/32", "198.51.100.0/24",
					    "2001:db8::/32" };
	static const struct {
		const char *p;
		bool overlaps;
	} q[] = {
		{ "10.9.9.0/24", true },				   /* inside the /8 */
		{ "192.0.2.0/24", true },				   /* holds the /32 */
		{ "192.0.3.0/24", false },    { "198.51.100.0/24", true }, /* the same prefix */
		{ "198.51.101.0/24", false }, { "2001:db8:1::/48", true },
		{ "2001:db9::/64", false },   { "11.0.0.0/8", false },
	};
	struct fg_esc_pfx v[4], k;
	struct fg_pfx_src ps;
	const char *why;
	char name[96];

	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(fg_prefix_parse(list[i], &ps, &why), 0, list[i]);
		memset(&v[i], 0, sizeof(v[i]));
		v[i].family = ps.family;
		v[i].plen = ps.plen;
		memcpy(v[i].addr, ps.addr, 16);
	}
	for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
		ASSERT_EQ(fg_prefix_parse(q[i].p, &ps, &why), 0, q[i].p);
		memset(&k, 0, sizeof(k));
		k.family = ps.family;
		k.plen = ps.plen;
		memcpy(k.addr, ps.addr, 16);
		snprintf(name, sizeof(name), "%s overlaps the list: %d", q[i].p, q[i].overlaps);
		ASSERT_EQ(fg_esc_pfx_overlap(v, 4, &k), q[i].overlaps, name);
	}
}

/* --- the policy keys ---------------------------------------------------------------- */

static int parse(const char *yaml, struct fg_config *cfg, struct fg_err *err)
{
	return fg_config_parse(yaml, strlen(yaml), "t.yaml", cfg, err);
}

#define RULE \
	"rules:\n  - name: u\n    match: {proto: udp}\n    per_source: {rate: 10/s, burst: 10}\n"

static void test_policy_keys(void)
{
	static struct fg_config cfg;
	struct fg_err err;

	if (!ASSERT_EQ(parse(RULE
			     "    escalate: {after: 5s, for: 2m}\nescalation: {max_entries: 16}\n",
			     &cfg, &err),
		       0, err.msg))
		return;
	ASSERT_EQ(cfg.esc[0].set, 1, "the rule escalates");
	ASSERT_EQ(cfg.esc[0].after_ns, 5 * SEC, "after");
	ASSERT_EQ(cfg.esc[0].for_ns, 120 * SEC, "for");
	ASSERT_EQ(cfg.esc_max, 16, "max_entries");
	ASSERT_EQ(cfg.esc[1].set, 0, "fragments does not");
	ASSERT_EQ(cfg.esc[0].scope, FG_ESC_SCOPE_RULE, "scope's default: the rule");
	ASSERT_EQ(cfg.esc[0].scope_set, 0, "not said by the file");
	fg_config_free(&cfg);
	if (!ASSERT_EQ(parse(RULE "    escalate: {scope: address}\n", &cfg, &err), 0, err.msg))
		return;
	ASSERT_EQ(cfg.esc[0].scope, FG_ESC_SCOPE_ADDRESS, "scope: address");
	ASSERT_EQ(cfg.esc[0].scope_set, 1, "said by the file");
	fg_config_free(&cfg);
	if (!ASSERT_EQ(parse(RULE "    escalate: {scope: rule}\n", &cfg, &err), 0, err.msg))
		return;
	ASSERT_EQ(cfg.esc[0].scope, FG_ESC_SCOPE_RULE, "scope: rule");
	fg_config_free(&cfg);
	if (!ASSERT_EQ(parse(RULE "    escalate: {}\n", &cfg, &err), 0, err.msg))
		return;
	ASSERT_EQ(cfg.esc[0].after_ns, FG_ESC_AFTER_DEFAULT_NS, "after's default, 30s");
	ASSERT_EQ(cfg.esc[0].for_ns, FG_ESC_FOR_DEFAULT_NS, "for's default, 10m");
	ASSERT_EQ(cfg.esc_max, FG_ESC_MAX_DEFAULT, "max_entries' default");
	fg_config_free(&cfg);
	if (!ASSERT_EQ(parse(RULE, &cfg, &err), 0, err.msg))
		return;
	ASSERT_EQ(cfg.esc[0].set, 0, "no escalate: no escalation");
	fg_config_free(&cfg);
}

static void test_policy_errors(void)
{
	static const struct {
		const char *yaml, *msg;
		int line, col;
	} bad[] = {
		{ RULE "    escalate: {after: 5s, fr: 1m}\n", "unknown key", 5, 27 },
		{ RULE "    escalate: {after: 5x}\n", "escalate: after: bad duration \"5x\"", 5,
		  23 },
		{ RULE "    escalate: {after: 2d}\n", "after: 2d is out of range (1s..1d)", 5, 23 },
		{ RULE "    escalate: {for: 0s}\n", "escalate: for: bad duration", 5, 21 },
		{ RULE "    escalate: {for: 8d}\n", "for: 8d is out of range (1s..7d)", 5, 21 },
		{ RULE "    escalate: 30s\n", "escalate", 5, 15 },
		{ RULE "    escalate: {scope: host}\n",
		  "escalate: scope: bad value \"host\" (expected rule | address)", 5, 23 },
		{ "rules:\n  - name: u\n    match: {proto: udp}\n    aggregate: {rate: 10/s, burst: 10}\n"
		  "    escalate: {after: 5s}\n",
		  "escalate needs action: limit with a per_source rate", 5, 15 },
		{ "rules:\n  - name: u\n    action: drop\n    escalate: {after: 5s}\n",
		  "escalate needs action: limit", 4, 15 },
		{ "escalation: {max_entries: 0}\n", "max_entries: 0 is out of range 1..2048", 1,
		  27 },
		{ "escalation: {max_entries: 4096}\n", "out of range 1..2048", 1, 27 },
		{ "escalation: {max: 5}\n", "unknown key", 1, 14 },
	};
	static struct fg_config cfg;
	struct fg_err err;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char name[1200];
		int rc = parse(bad[i].yaml, &cfg, &err);

		snprintf(name, sizeof(name), "case %zu (%s): refused", i, bad[i].msg);
		if (!ASSERT_EQ(rc, -EINVAL, name))
			continue;
		snprintf(name, sizeof(name), "case %zu: says \"%s\", said \"%s\"", i, bad[i].msg,
			 err.msg);
		ASSERT_TRUE(strstr(err.msg, bad[i].msg) != NULL, name);
		snprintf(name, sizeof(name), "case %zu: line (%s)", i, err.msg);
		ASSERT_EQ(err.line, bad[i].line, name);
		snprintf(name, sizeof(name), "case %zu: column (%s)", i, err.msg);
		ASSERT_EQ(err.col, bad[i].col, name);
		ASSERT_EQ(cfg.esc_max + cfg.esc[0].set + cfg.pol.nrules, 0,
			  "a refused policy leaves nothing behind (cfg zeroed)");
	}
}

int main(int argc, char **argv)
{
	tf_init(argc, argv, "test_escalate", names, "udp9");
	FG_RUN_EACH(test_after_and_for, test_scope_address, test_break_resets_since,
		    test_still_dropping, test_cap, test_budget, test_full_list, test_shadow,
		    test_bypass, test_allow_listed, test_already_listed, test_rules_and_generations,
		    test_ipv6, test_overlap_and_count, test_sorted_overlap, test_policy_keys,
		    test_policy_errors);
	fg_throttle_free(&R.t);
	return fg_test_summary();
}
