// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fgmaps, apply and sources: policy apply through the two slots, rule ids
 * by name, counters of surviving rules kept and of new ones zeroed,
 * the file's modes and the overrides of freed and reused ids, every rule
 * replaced in one apply, what was in force, max_sources refusal, per-CPU sums, failures after
 * the flip reported, the source walk's "limited" against the GCRA test,
 * no section map an adopting start could not keep.
 * Loads the real skeleton without attaching it or pinning anything.
 * FG_NEEDS_ROOT (BPF map creation).
 */
#include <errno.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "fgtest.h"
#include "attach/attach.h"
#include "maps/apply.h"
#include "maps/ctl.h"
#include "maps/fgmaps.h"
#include "sources/sources.h"
#include "sources/srcwalk.h"
#include "floodgate.skel.h"
#include "policy/policy.h"
#include "polfix.h"

static struct floodgate_bpf *skel;
static struct fg_maps maps;
static char tmpdir[] = "/tmp/fgmaps-test.XXXXXX";

static const char pol_a[] =
	"max_sources: 1024\n"
	"allow: [10.0.0.0/8, \"2001:db8::/32\"]\n"
	"rules:\n"
	"  - name: a\n    match: {proto: udp}\n    per_source: {rate: 10/s, burst: 10}\n"
	"  - name: b\n    match: {proto: tcp}\n    per_source: {rate: 10/s, burst: 10}\n";
static const char pol_b[] =
	"max_sources: 1024\n"
	"rules:\n"
	"  - name: b\n    match: {proto: tcp}\n    per_source: {rate: 20/s, burst: 20}\n"
	"  - name: c\n    match: {proto: icmp}\n    per_source: {rate: 10/s, burst: 10}\n";
static const char pol_b_only[] =
	"max_sources: 1024\n"
	"rules:\n"
	"  - name: b\n    match: {proto: tcp}\n    per_source: {rate: 20/s, burst: 20}\n";
static const char pol_c[] =
	"max_sources: 1024\n"
	"deny: [192.0.2.0/24]\n"
	"rules:\n"
	"  - name: a\n    match: {proto: udp}\n    per_source: {rate: 10/s, burst: 10}\n"
	"  - name: b\n    match: {proto: tcp}\n    per_source: {rate: 20/s, burst: 20}\n";

static int apply(const char *txt, char *why)
{
	return pf_apply(&maps, txt, why);
}

static int find_id(const char *name)
{
	struct fg_name names[FG_MAX_IDS];

	if (fg_names_read(&maps, names))
		return -2;
	for (int i = 0; i < FG_MAX_IDS; i++)
		if (names[i].in_use && !strcmp(names[i].name, name))
			return i;
	return -1;
}

static size_t count_lpm4(__u32 slot)
{
	struct fg_lpm4 k, *prev = NULL, cur;
	size_t n = 0;

	while (!bpf_map_get_next_key(maps.fd[FGM_PFX4], prev, &k)) {
		n += k.slot == slot;
		cur = k;
		prev = &cur;
	}
	return n;
}

static void set_stat(__u32 row, __u64 v)
{
	struct fg_stats *pc = calloc(maps.ncpus, sizeof(*pc));

	for (int c = 0; c < maps.ncpus; c++)
		pc[c].pkts[FG_OUT_DROP] = v;
	bpf_map_update_elem(maps.fd[FGM_STATS], &row, pc, BPF_ANY);
	free(pc);
}

static __u64 get_drop(__u32 row)
{
	static struct fg_stats rows[FG_NROWS];

	if (fg_stats_read(&maps, rows))
		return ~0ull;
	return rows[row].pkts[FG_OUT_DROP];
}

static void test_first_apply(void)
{
	char why[FG_WHY_LEN];
	struct fg_ctl ctl;
	struct fg_policy pol;

	if (!ASSERT_OK(fg_ctl_init(&maps, FG_MODE_ENFORCE), "ctl init"))
		return;
	if (!ASSERT_OK(apply(pol_a, why), "apply a"))
		return;
	ASSERT_OK(fg_ctl_read(&maps, &ctl), "read ctl");
	ASSERT_EQ(ctl.magic, FG_ABI_MAGIC, "magic");
	ASSERT_EQ(ctl.slot, 1, "first apply writes slot 1");
	ASSERT_OK(fg_policy_read_active(&maps, &pol), "read policy");
	ASSERT_EQ(pol.version, 1, "version");
	ASSERT_EQ(pol.nrules, 3, "a, b and the implicit fragments rule");
	ASSERT_EQ(find_id("a"), 0, "a gets id 0");
	ASSERT_EQ(find_id("b"), 1, "b gets id 1");
	ASSERT_EQ(pol.rules[0].id, 0, "rules[0].id");
	ASSERT_EQ(pol.rules[0].gen, 1, "rules[0].gen");
	ASSERT_EQ(count_lpm4(1), 1, "allow 10/8 in slot 1");
	ASSERT_EQ(count_lpm4(0), 0, "nothing in slot 0");
	ASSERT_TRUE(pol.lists & 1, "lists bit 0");
	ASSERT_TRUE(pol.lists & 2, "lists bit 1");
	ASSERT_NEQ(pol.ins.inc, 0, "admission set");
}

static void test_rename_keeps_survivors(void)
{
	char why[FG_WHY_LEN];
	struct fg_name names[FG_MAX_IDS];
	struct fg_policy pol;
	int b0 = find_id("b"), a0 = find_id("a");

	set_stat(b0, 7);
	set_stat(a0, 5);
	ASSERT_EQ(get_drop(b0), 7ull * maps.ncpus, "sum over CPUs");
	if (!ASSERT_OK(apply(pol_b, why), "apply b"))
		return;
	ASSERT_EQ(find_id("b"), b0, "b keeps its id");
	ASSERT_EQ(get_drop(b0), 7ull * maps.ncpus, "b keeps its counters");
	ASSERT_EQ(find_id("a"), -1, "a is freed after the flip");
	ASSERT_NEQ(find_id("c"), a0, "c does not take a's id in the same apply");
	ASSERT_EQ(get_drop(find_id("c")), 0, "c starts at zero");
	ASSERT_OK(fg_policy_read_active(&maps, &pol), "read policy");
	ASSERT_EQ(pol.version, 2, "version 2");
	ASSERT_EQ(count_lpm4(0), 0, "no prefixes in the new slot 0");
	ASSERT_EQ(pol.lists, 0, "no lists");
	/* a's id comes back with a new generation and zeroed counters */
	if (!ASSERT_OK(apply(pol_c, why), "apply c"))
		return;
	ASSERT_OK(fg_names_read(&maps, names), "names");
	ASSERT_EQ(find_id("a"), a0, "a takes the free id 0 again");
	ASSERT_EQ(names[a0].gen, 2, "with generation 2");
	ASSERT_EQ(get_drop(a0), 0, "and zeroed counters");
	ASSERT_EQ(count_lpm4(1), 1, "deny 192.0.2/24 in slot 1, old allow gone");
	ASSERT_EQ(find_id("c"), -1, "c freed");
}

static struct fg_ctl ctl_now(void)
{
	struct fg_ctl c = {};

	fg_ctl_read(&maps, &c);
	return c;
}

static bool ovr_bit(const __u64 *words, int id)
{
	return id >= 0 && id < FG_MAX_IDS && ((words[id / 64] >> (id % 64)) & 1);
}

/* The file's mode is applied by every apply; overrides stay, except on ids
 * that are freed or handed to a new rule. */
static void test_modes_and_overrides(void)
{
	static const char shadow_b[] =
		"max_sources: 1024\nmode: shadow\n"
		"rules:\n"
		"  - name: b\n    match: {proto: tcp}\n    per_source: {rate: 20/s, burst: 20}\n";
	char why[FG_WHY_LEN] = "";
	struct fg_ctl_map cm;
	struct fg_ctl c;
	int a, b, stale = -1;

	if (!ASSERT_OK(fg_ctl_map_open(&cm, maps.fd[FGM_CTL]), "map fg_ctl"))
		return;
	ASSERT_OK(apply(pol_c, why), "apply c (file: enforce)");
	ASSERT_EQ(ctl_now().mode, FG_MODE_ENFORCE, "file mode enforce");
	b = find_id("b");
	a = find_id("a");
	ASSERT_OK(fg_switch_rule_ovr(&cm, (__u32)b, FG_OVR_SHADOW), "override b: shadow");
	ASSERT_OK(fg_switch_rule_ovr(&cm, (__u32)a, FG_OVR_ENFORCE), "override a: enforce");
	ASSERT_OK(fg_switch_mode_ovr(&cm, FG_OVR_ENFORCE), "global override: enforce");

	ASSERT_OK(apply(shadow_b, why), "apply shadow_b (file: shadow, a removed)");
	c = ctl_now();
	ASSERT_EQ(c.mode, FG_MODE_SHADOW, "the file's shadow is applied");
	ASSERT_EQ(c.mode_ovr, FG_OVR_ENFORCE, "the global override stays");
	ASSERT_EQ(find_id("b"), b, "b keeps its id");
	ASSERT_TRUE(ovr_bit(c.rule_ovr_set, b) && ovr_bit(c.rule_ovr_shadow, b),
		    "b's override survives the reload");
	ASSERT_TRUE(!ovr_bit(c.rule_ovr_set, a), "the freed id of a lost its override");

	/* a stale override on the id a new rule gets next (the lowest free one),
	 * as a crash between freeing and clearing would leave it */
	for (int id = 0; id < FG_MAX_IDS && stale < 0; id++)
		if (id != b && id != find_id("fragments"))
			stale = id;
	ASSERT_OK(fg_switch_rule_ovr(&cm, (__u32)stale, FG_OVR_SHADOW), "stale override");
	ASSERT_OK(apply(pol_c, why), "apply c again (file: enforce)");
	c = ctl_now();
	ASSERT_EQ(c.mode, FG_MODE_ENFORCE, "the file's enforce is applied");
	ASSERT_TRUE(ovr_bit(c.rule_ovr_set, b), "b's override survives a second reload");
	ASSERT_EQ(find_id("a"), stale, "a gets the id with the stale override");
	ASSERT_TRUE(!ovr_bit(c.rule_ovr_set, stale), "a new rule inherits no override");

	ASSERT_OK(apply(pol_a, why), "apply a (b kept, c removed)");
	ASSERT_OK(apply(pol_b_only, why), "apply b only (a removed)");
	ASSERT_OK(fg_switch_rule_ovr(&cm, (__u32)find_id("b"), FG_OVR_NONE), "clear b");
	ASSERT_OK(fg_switch_mode_ovr(&cm, FG_OVR_NONE), "clear global");
	ASSERT_OK(fg_switch_rule_ovr(&cm, (__u32)find_id("fragments"), FG_OVR_SHADOW),
		  "override fragments");
	c = ctl_now();
	ASSERT_TRUE(ovr_bit(c.rule_ovr_set, find_id("fragments")), "fragments overridden");
	fg_ctl_map_close(&cm);
}

/* A policy of n user rules named prefix0.. (plus the implicit fragments). */
static char *many_rules(const char *prefix, int n)
{
	size_t len = 64 + (size_t)n * 128, off = 0;
	char *t = malloc(len);

	if (!t)
		return NULL;
	off += snprintf(t + off, len - off, "max_sources: 1024\nrules:\n");
	for (int i = 0; i < n; i++)
		off += snprintf(t + off, len - off,
				"  - name: %s%d\n    match: {proto: udp, dport: %d}\n"
				"    per_source: {rate: 10/s, burst: 10}\n",
				prefix, i, 1000 + i);
	return t;
}

/* Every rule replaced at once: the full policy renamed in one apply. */
static void test_replace_every_rule(void)
{
	char why[FG_WHY_LEN] = "", *p1 = many_rules("old", FG_MAX_RULES - 1),
	     *p2 = many_rules("new", FG_MAX_RULES - 1);
	struct fg_inforce was;
	struct fg_policy pol;
	static struct fg_config cfg;
	int frag;

	if (!ASSERT_TRUE(p1 && p2, "policies"))
		goto out;
	if (!ASSERT_OK(apply(p1, why), "FG_MAX_RULES - 1 rules + fragments"))
		goto out;
	frag = find_id("fragments");
	set_stat((__u32)frag, 3);
	ASSERT_OK(apply(p2, why), "all renamed: one apply");
	ASSERT_OK(fg_policy_read_active(&maps, &pol), "read policy");
	ASSERT_EQ(pol.nrules, FG_MAX_RULES, "FG_MAX_RULES rules active");
	ASSERT_EQ(find_id("old0"), -1, "old ids freed");
	ASSERT_NEQ(find_id("new62"), -1, "new62 has an id");
	ASSERT_EQ(find_id("fragments"), frag, "fragments keeps its id");
	ASSERT_EQ(get_drop((__u32)frag), 3ull * maps.ncpus, "and its counters");
	/* and back, with what was in force */
	if (!ASSERT_OK(pf_parse(p1, &cfg), "parse"))
		goto out;
	ASSERT_OK(fg_maps_lock(&maps, 1000), "lock");
	ASSERT_OK(fg_policy_apply(&maps, &cfg,
				  &(struct fg_apply_opts){ .sz = sizeof(struct fg_apply_opts),
							   .was = &was },
				  why),
		  "renamed back");
	fg_maps_unlock(&maps);
	ASSERT_EQ(was.pol.nrules, FG_MAX_RULES, "was: FG_MAX_RULES rules");
	ASSERT_EQ(was.pol.version, pol.version, "was: the version in force");
	ASSERT_STR_CONTAINS(was.names[was.pol.rules[0].id].name, "new0", "was: names");
	fg_inforce_free(&was);
	fg_config_free(&cfg);
out:
	free(p1);
	free(p2);
}

/* Prefixes: what was in force is read back from the trie. */
static void test_inforce_prefixes(void)
{
	static const char two[] = "max_sources: 1024\nallow: [10.0.0.0/8, \"2001:db8::/32\"]\n"
				  "deny: [192.0.2.0/24]\nrules: []\n";
	static struct fg_config cfg;
	char why[FG_WHY_LEN] = "";
	struct fg_inforce was;
	int allow = 0, deny = 0, v6 = 0;

	if (!ASSERT_OK(apply(two, why), "apply lists") ||
	    !ASSERT_OK(pf_parse(pol_b_only, &cfg), "parse"))
		return;
	ASSERT_OK(fg_maps_lock(&maps, 1000), "lock");
	ASSERT_OK(fg_policy_apply(&maps, &cfg,
				  &(struct fg_apply_opts){ .sz = sizeof(struct fg_apply_opts),
							   .was = &was },
				  why),
		  "apply without lists");
	fg_maps_unlock(&maps);
	ASSERT_EQ(was.n_pfx, 3, "three entries were in force");
	for (size_t i = 0; i < was.n_pfx; i++) {
		allow += was.pfx[i].list == FG_LIST_ALLOW;
		deny += was.pfx[i].list == FG_LIST_DENY && was.pfx[i].plen == 24 &&
			was.pfx[i].addr[0] == 192 && was.pfx[i].addr[2] == 2;
		v6 += was.pfx[i].family == 6 && was.pfx[i].plen == 32 && was.pfx[i].addr[0] == 0x20;
	}
	ASSERT_EQ(allow, 2, "two allow entries");
	ASSERT_EQ(deny, 1, "deny 192.0.2.0/24");
	ASSERT_EQ(v6, 1, "2001:db8::/32");
	ASSERT_EQ(count_lpm4(ctl_now().slot), 0, "no IPv4 entry in the active slot");
	fg_inforce_free(&was);
	fg_config_free(&cfg);
}

static void test_refusals(void)
{
	static const char bigger[] = "max_sources: 2048\nrules: []\n";
	char why[FG_WHY_LEN];
	struct fg_ctl c0, c1;
	struct fg_policy p0, p1;

	fg_ctl_read(&maps, &c0);
	fg_policy_read_active(&maps, &p0);
	ASSERT_EQ(apply(bigger, why), -EINVAL, "max_sources change refused");
	ASSERT_STR_CONTAINS(why, "max_sources", "the reason");
	fg_ctl_read(&maps, &c1);
	fg_policy_read_active(&maps, &p1);
	ASSERT_EQ(c1.slot, c0.slot, "slot unchanged");
	ASSERT_EQ(p1.version, p0.version, "version unchanged");
	ASSERT_EQ(fg_policy_apply(&maps, NULL, NULL, why), -ENOLCK, "apply needs the lock");
}

/* A read-only fd of the map behind fd: writes through it fail with EPERM. */
static int rdonly_fd(int fd)
{
	LIBBPF_OPTS(bpf_get_fd_by_id_opts, o, .open_flags = BPF_F_RDONLY);
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	return bpf_map_get_fd_by_id_opts(info.id, &o);
}

/* Apply txt with maps.fd[id] read-only; *slot_changed: did it flip? */
static int apply_readonly(enum fg_map_id id, const char *txt, char *why, int *flipped)
{
	int fd = rdonly_fd(maps.fd[id]), saved = maps.fd[id], err;
	struct fg_ctl c0, c1;

	if (fd < 0)
		return fd;
	fg_ctl_read(&maps, &c0);
	maps.fd[id] = fd;
	err = apply(txt, why);
	maps.fd[id] = saved;
	close(fd);
	fg_ctl_read(&maps, &c1);
	*flipped = c1.slot != c0.slot;
	return err;
}

static void test_failures_after_the_flip(void)
{
	char why[FG_WHY_LEN];
	int flipped = 0;

	/* active: a and b; b alone frees a's id only after the flip */
	if (!ASSERT_NEQ(find_id("a"), -1, "a is in use"))
		return;
	ASSERT_EQ(apply_readonly(FGM_NAMES, pol_b_only, why, &flipped), -EPERM,
		  "fg_names read-only: freeing a's id fails");
	ASSERT_STR_CONTAINS(why, "the new policy is active", "why says what happened");
	ASSERT_STR_CONTAINS(why, "\"a\"", "and names the rule");
	ASSERT_TRUE(flipped, "the new policy is active");
	ASSERT_NEQ(find_id("a"), -1, "a's id is still taken");
	if (ASSERT_OK(apply(pol_b_only, why), "apply b again"))
		ASSERT_EQ(find_id("a"), -1, "the next apply frees it");

	ASSERT_EQ(apply_readonly(FGM_META, pol_c, why, &flipped), -EPERM,
		  "fg_meta read-only: stamping it fails");
	ASSERT_STR_CONTAINS(why, "the new policy is active, but writing fg_meta", "why");
	ASSERT_TRUE(flipped, "the new policy is active");
	ASSERT_NEQ(find_id("a"), -1, "with a back");
}

/* A way of fg_src4's set 0, as the XDP program would have written it. */
static void set_way(struct fg_set4 *set, int k, __u32 addr, const struct fg_rule *r, __u64 tat)
{
	set->key[k].addr = htonl(addr);
	set->key[k].rule = (__u16)(FG_WKEY4_USED | r->id);
	set->key[k].gen = r->gen;
	set->tat[k] = tat;
	set->drops[k] = FG_DROP_SAMPLE;
}

static const struct fg_source *find_src(const struct fg_source *v, size_t n, __u32 addr)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].family == 4 && !memcmp(v[i].addr, &(__be32){ htonl(addr) }, 4))
			return &v[i];
	return NULL;
}

static void test_sources_limited(void)
{
	const __u64 now_ns = 1000000000000ull, now = now_ns << FG_TU_SHIFT;
	struct fg_set4 set = {}, zero = {};
	struct fg_source *src = NULL;
	struct fg_src_scan scan;
	struct fg_policy pol;
	const struct fg_rule *r;
	const struct fg_source *s;
	size_t n = 0, n4 = 0, n6 = 0;
	__u32 key = 0;

	if (!ASSERT_OK(fg_policy_read_active(&maps, &pol), "read policy"))
		return;
	r = &pol.rules[0];
	if (!ASSERT_NEQ(r->src.inc, 0, "rule 0 has a per-source limit"))
		return;
	set_way(&set, 0, 0x0a000001, r, now - 1);			/* full */
	set_way(&set, 1, 0x0a000002, r, now + r->src.tau - r->src.inc); /* one token */
	set_way(&set, 2, 0x0a000003, r, now + r->src.tau - r->src.inc + 1);
	set_way(&set, 3, 0x0a000004, r, now + r->src.tau); /* empty */
	if (!ASSERT_OK(bpf_map_update_elem(maps.fd[FGM_SRC4], &key, &set, BPF_ANY), "write set"))
		return;
	ASSERT_OK(fg_sources_count(&maps, &n4, &n6), "count");
	ASSERT_EQ(n4, 4, "four IPv4 ways");
	ASSERT_EQ(n6, 0, "no IPv6 source");
	if (ASSERT_OK(fg_sources_read(&maps, &pol, now_ns, 1, 100, &src, &n, &scan), "read")) {
		ASSERT_EQ(n, 4, "all four have drops");
		ASSERT_EQ(scan.matched, 4, "matched");
		s = find_src(src, n, 0x0a000001);
		ASSERT_TRUE(s && !s->limited, "a full bucket admits");
		s = find_src(src, n, 0x0a000002);
		ASSERT_TRUE(s && !s->limited, "one token left admits");
		s = find_src(src, n, 0x0a000003);
		ASSERT_TRUE(s && s->limited, "one time unit short refuses");
		s = find_src(src, n, 0x0a000004);
		ASSERT_TRUE(s && s->limited, "an empty bucket refuses");
		ASSERT_TRUE(s && s->drops == FG_DROP_SAMPLE && s->rule == r->id, "drops and rule");
	}
	free(src);
	bpf_map_update_elem(maps.fd[FGM_SRC4], &key, &zero, BPF_ANY);
}

static void test_pin_dir_open_refuses_missing(void)
{
	char why[FG_WHY_LEN] = "";
	struct fg_maps m;

	ASSERT_EQ(fg_maps_open(&m, "/sys/fs/bpf/fg-does-not-exist", why), -ENOENT, "missing");
}

/* fg_src4's set of an IPv4 source under rule r, as the program finds it (floodgate.h). */
static __u32 set_of(const struct fg_ctl *ctl, __u32 addr, const struct fg_rule *r)
{
	union {
		struct fg_wkey4 k;
		__u64 u;
	} key = {
		.k = { .addr = htonl(addr), .rule = (__u16)(FG_WKEY4_USED | r->id), .gen = r->gen }
	};

	return fg_hash4(key.u, ctl->seed4, ctl->src4_bits);
}

/* The daemon's incremental walk counts what a full walk counts, one slice
 * at a time, and its point lookups find a source as the program does,
 * with the throttle-event tag masked out of drops (user/sources/srcwalk.h). */
/* Puts a source into a free way of its fg_src6 set, as the program claims
 * one (the key, then the copy of its owner); *idx: the set. */
static void put6(const struct fg_ctl *ctl, const __u8 addr[16], const struct fg_rule *r, __u64 tat,
		 __u64 drops, __u32 *idx)
{
	struct fg_who6 who = { .rule = r->id, .gen = r->gen };
	struct fg_set6 set = {};
	__u64 key;

	memcpy(who.addr, addr, sizeof(who.addr));
	key = fg_who6_digest(&who, ctl->seed6);
	*idx = fg_set6_of(key, ctl->src6_bits);
	bpf_map_lookup_elem(maps.fd[FGM_SRC6], idx, &set);
	for (int k = 0; k < FG_WAYS6; k++) {
		if (set.way[k].key)
			continue;
		set.way[k].key = key;
		set.way[k].tat = tat;
		set.drops[k] = drops;
		set.who[k] = who;
		break;
	}
	ASSERT_OK(bpf_map_update_elem(maps.fd[FGM_SRC6], idx, &set, BPF_ANY), "write v6 set");
}

static void test_srcwalk_counts_and_lookups(void)
{
	const __u64 now_ns = 1000000000000ull, now = now_ns << FG_TU_SHIFT;
	const __u32 addrs[3] = { 0x0a000101, 0x0a000102, 0x0a000203 };
	__u8 a6[2][16] = { { 0x20, 0x01, 0x0d, 0xb8, 1 }, { 0x20, 0x01, 0x0d, 0xb8, 2 } };
	struct fg_set4 set, zero = {};
	struct fg_set6 zero6 = {};
	struct fg_source q = { .family = 4 };
	struct fg_srcwalk w;
	struct fg_policy pol;
	const struct fg_rule *r;
	struct fg_ctl ctl;
	size_t n4 = 0, n6 = 0, steps = 0, steps6 = 0;
	__u32 idx[3], idx6[2] = { 0, 0 };
	int rc;

	if (!ASSERT_OK(fg_policy_read_active(&maps, &pol), "read policy") ||
	    !ASSERT_OK(fg_ctl_read(&maps, &ctl), "read fg_ctl"))
		return;
	r = &pol.rules[0];
	for (int i = 0; i < 3; i++) {
		idx[i] = set_of(&ctl, addrs[i], r);
		memset(&set, 0, sizeof(set));
		bpf_map_lookup_elem(maps.fd[FGM_SRC4], &idx[i], &set);
		for (int k = 0; k < FG_WAYS4; k++) {
			if (set.key[k].rule & FG_WKEY4_USED)
				continue;
			set_way(&set, k, addrs[i], r, now + r->src.tau); /* empty: limited */
			set.drops[k] = FG_DROP_SAMPLE + 9;		 /* a tag in the low bits */
			break;
		}
		ASSERT_OK(bpf_map_update_elem(maps.fd[FGM_SRC4], &idx[i], &set, BPF_ANY),
			  "write set");
	}
	for (int i = 0; i < 2; i++) /* a full bucket, a tag in the drops word */
		put6(&ctl, a6[i], r, now - 1, 2 * FG_DROP_SAMPLE + 9, &idx6[i]);
	ASSERT_OK(fg_sources_count(&maps, &n4, &n6), "full count");
	if (!ASSERT_OK(fg_srcwalk_open(&w, &maps), "open"))
		goto out;
	/* one set of each table a step: each pass ends after its table's sets */
	while (((rc = fg_srcwalk_step(&w, 1, 0)) & FG_SRCWALK_PASS4) == 0 && rc >= 0 &&
	       steps < (1u << FG_SRC4_MAX_BITS))
		steps++;
	ASSERT_TRUE(rc >= 0 && (rc & FG_SRCWALK_PASS4), "the IPv4 pass ends");
	ASSERT_EQ(steps + 1, w.nsets, "one set a step: the IPv4 pass takes every set once");
	while (((rc = fg_srcwalk_step(&w, 0, 1)) & FG_SRCWALK_PASS6) == 0 && rc >= 0 &&
	       steps6 < (1u << FG_SRC6_MAX_BITS))
		steps6++;
	ASSERT_TRUE(rc >= 0 && (rc & FG_SRCWALK_PASS6), "the IPv6 pass ends");
	ASSERT_EQ(steps6 + 1, w.nsets6, "one set a step: the IPv6 pass takes every set once");
	ASSERT_EQ(w.count4, n4, "IPv4: as the full walk counts");
	ASSERT_EQ(w.count6, n6, "IPv6: as the full walk counts");
	ASSERT_EQ(w.count4, 3, "the three IPv4 sources");
	ASSERT_EQ(w.count6, 2, "the two IPv6 sources");
	w.pol = &pol;
	w.now_tu = now;
	q.rule = r->id;
	q.gen = r->gen;
	memcpy(q.addr, &(__be32){ htonl(addrs[2]) }, 4);
	ASSERT_OK(fg_srcwalk_lookup(&w, &q), "IPv4 lookup finds the source");
	ASSERT_EQ(q.drops, FG_DROP_SAMPLE, "drops without the tag");
	ASSERT_TRUE(q.limited, "an empty bucket is limited");
	memcpy(q.addr, &(__be32){ htonl(0x0a0009ff) }, 4);
	ASSERT_EQ(fg_srcwalk_lookup(&w, &q), -ENOENT, "IPv4: an unknown source has no bucket");
	q.family = 6;
	memcpy(q.addr, a6[1], 16);
	ASSERT_OK(fg_srcwalk_lookup(&w, &q), "IPv6 lookup finds the source");
	ASSERT_EQ(q.drops, 2 * FG_DROP_SAMPLE, "IPv6 drops without the tag");
	ASSERT_TRUE(!q.limited, "a full bucket is not limited");
	q.addr[4] = 9;
	ASSERT_EQ(fg_srcwalk_lookup(&w, &q), -ENOENT, "IPv6: an unknown source has no bucket");
	ASSERT_EQ(w.lookups, 4, "four lookups counted");
	fg_srcwalk_close(&w);
out:
	for (int i = 0; i < 3; i++)
		bpf_map_update_elem(maps.fd[FGM_SRC4], &idx[i], &zero, BPF_ANY);
	for (int i = 0; i < 2; i++)
		bpf_map_update_elem(maps.fd[FGM_SRC6], &idx6[i], &zero6, BPF_ANY);
}

/* Every map libbpf makes from a section of the object (.rodata, .bss, and
 * any constant pool clang emits for a large initializer, .rodata.cst16)
 * is one an adopting start knows every load makes anew: any other one
 * stops fg_keep_running_prog keeping the running program, and every
 * adopting restart reloads it (e2e_start's "program kept" checks). */
static void test_internal_maps_adoptable(void)
{
	struct bpf_map *m;
	int internal = 0;

	bpf_object__for_each_map(m, skel->obj) {
		if (!bpf_map__is_internal(m))
			continue;
		internal++;
		ASSERT_TRUE(fg_map_per_load(bpf_map__name(m)), bpf_map__name(m));
	}
	ASSERT_TRUE(internal >= 1, "floodgate has its .rodata");
	ASSERT_TRUE(fg_map_per_load(".rodata") && fg_map_per_load("fg_sascr"), "kept kinds");
	ASSERT_TRUE(!fg_map_per_load(".rodata.cst16") && !fg_map_per_load("fg_src4"),
		    "a constant pool and a pinned map are not made per load");
}

int main(int argc, char **argv)
{
	int err;

	if (fg_test_init_root(argc, argv, "fgmaps", "needs root to create BPF maps"))
		return 0;
	skel = floodgate_bpf__open();
	if (!skel || bpf_map__set_max_entries(skel->maps.fg_src4, 1024) ||
	    bpf_map__set_max_entries(skel->maps.fg_src6, 1024) || floodgate_bpf__load(skel) ||
	    !mkdtemp(tmpdir) || fg_maps_from_skel(&maps, skel, tmpdir)) {
		printf("setup failed: %s\n", strerror(errno));
		err = FG_FAIL_ALL("setup", "skeleton load");
		floodgate_bpf__destroy(skel);
		return err;
	}
	FG_RUN(test_first_apply);
	FG_RUN(test_rename_keeps_survivors);
	FG_RUN(test_refusals);
	FG_RUN(test_failures_after_the_flip);
	FG_RUN(test_modes_and_overrides);
	FG_RUN(test_replace_every_rule);
	FG_RUN(test_inforce_prefixes);
	FG_RUN(test_sources_limited);
	FG_RUN(test_pin_dir_open_refuses_missing);
	FG_RUN(test_srcwalk_counts_and_lookups);
	FG_RUN(test_internal_maps_adoptable);
	fg_maps_close(&maps);
	floodgate_bpf__destroy(skel);
	rmdir(tmpdir);
	return fg_test_summary();
}
