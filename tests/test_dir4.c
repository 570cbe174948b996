// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The IPv4 lists' DIR-16-8-8 table (struct fg_dir4, fg_blk4): the image
 * against a brute-force longest-prefix match on random prefix sets (/0 to
 * /32, allow, deny, sets), its two bounds, and the real program after a
 * real fg_policy_apply against the kernel's LPM trie of the same slot,
 * across reload flips; the block budget's fallback to that trie (a budget
 * forced small, and a real million /32s past the real one).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fgtest.h"
#include "pkt.h"
#include "floodgate.h"
#include "floodgate.skel.h"
#include "maps/apply.h"
#include "maps/ctl.h"
#include "maps/dir4map.h"
#include "maps/fgmaps.h"
#include "maps/mapimg.h"
#include "policy/policy.h"

static __u64 rng = 0x9e3779b97f4a7c15ull;

static __u32 rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (__u32)(rng >> 16);
}

static __u32 mask_of(int plen)
{
	return plen ? 0xffffffffu << (32 - plen) : 0;
}

static void entry4(struct fg_pfx_entry *e, __u32 net, int plen, __u32 list, __u32 sets)
{
	memset(e, 0, sizeof(*e));
	net &= mask_of(plen);
	e->family = 4;
	e->plen = (__u8)plen;
	e->addr[0] = net >> 24;
	e->addr[1] = net >> 16;
	e->addr[2] = net >> 8;
	e->addr[3] = net;
	e->list = list;
	e->sets = sets;
}

static __u32 entry_net(const struct fg_pfx_entry *e)
{
	return (__u32)e->addr[0] << 24 | (__u32)e->addr[1] << 16 | (__u32)e->addr[2] << 8 |
	       e->addr[3];
}

/* The reference: the longest prefix covering a; of equal ones the later. */
static struct fg_pfx ref_lookup(const struct fg_pfx_entry *v, size_t n, __u32 a)
{
	struct fg_pfx r = { FG_LIST_NONE, 0 };
	int best = -1;

	for (size_t i = 0; i < n; i++)
		if (v[i].family == 4 && (a & mask_of(v[i].plen)) == entry_net(&v[i]) &&
		    v[i].plen >= best) {
			best = v[i].plen;
			r.list = v[i].list;
			r.sets = v[i].sets;
		}
	return r;
}

/* An address near one of the prefixes (inside, or just past its end), or anywhere. */
static __u32 probe(const struct fg_pfx_entry *v, size_t n)
{
	const struct fg_pfx_entry *e = &v[rnd() % n];
	__u32 net = entry_net(e), span = e->plen ? ~mask_of(e->plen) : 0xffffffffu;

	switch (rnd() % 4) {
	case 0:
		return net;
	case 1:
		return net + span + 1;
	case 2:
		return net + (rnd() & span);
	default:
		return rnd() << 8 ^ rnd();
	}
}

/* Random prefixes in a few /8s (so they nest), /0 to /32, all three lists and sets. */
static void random_entries(struct fg_pfx_entry *v, size_t n)
{
	static const __u32 base[] = { 0x0a000000u, 0xc0a80000u, 0xcb000000u, 0x64400000u };

	for (size_t i = 0; i < n; i++) {
		int plen = rnd() % 8 == 0 ? (int)(rnd() % 17) : 16 + (int)(rnd() % 17);
		__u32 net = base[rnd() % 4] | (rnd() & 0x00ffffffu);

		if (rnd() % 16 == 0)
			net = rnd() << 8 ^ rnd(); /* anywhere */
		entry4(&v[i], net, plen, rnd() % 3, rnd() % 3 ? 0 : 1u << (rnd() % 32));
	}
}

static void test_img_vs_reference(void)
{
	static struct fg_dir4_img img;
	const size_t sizes[] = { 1, 50, 3000 };

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k], wrong = 0, listed = 0, inset = 0;
		struct fg_pfx_entry *v = calloc(n, sizeof(*v));

		if (!ASSERT_TRUE(v, "calloc"))
			return;
		random_entries(v, n);
		if (ASSERT_OK(fg_dir4_build(v, n, &img), "fg_dir4_build")) {
			for (int i = 0; i < 100000; i++) {
				__u32 a = probe(v, n);
				struct fg_pfx want = ref_lookup(v, n, a),
					      got = fg_dir4_img_lookup(&img, a);

				wrong += got.list != want.list || got.sets != want.sets;
				listed += want.list != FG_LIST_NONE;
				inset += want.sets != 0;
			}
			ASSERT_EQ(wrong, 0,
				  "lookups differing from the reference longest-prefix match");
			if (n > 1) {
				ASSERT_GE(listed, 10000, "listed addresses exercised");
				ASSERT_GE(inset, 1000, "addresses in a set exercised");
			}
			ASSERT_LE(img.nblk, 2 * n, "at most two blocks a prefix");
		}
		fg_dir4_img_free(&img);
		free(v);
	}
}

/* Exactly FG_BLK4_MAX blocks: no fallback; one more /24: accepted, that one
 * /24 (of equal counts the highest address) answered by the trie. */
static void test_img_block_bound(void)
{
	static struct fg_dir4_img img;
	size_t n = 512 * 255 + 1, k = 0;
	struct fg_pfx_entry *v = calloc(n, sizeof(*v));
	struct fg_pfx r;

	if (!ASSERT_TRUE(v, "calloc"))
		return;
	/* 512 /16s, each with /25s in 255 of its /24s: 512 + 512 * 255 = 2^17 blocks */
	for (__u32 t = 0; t < 512; t++)
		for (__u32 u = 0; u < 255; u++)
			entry4(&v[k++], 0x20000000u | t << 16 | u << 8, 25, FG_LIST_DENY, 0);
	ASSERT_OK(fg_dir4_build(v, n - 1, &img), "2^17 blocks: accepted");
	ASSERT_EQ(img.nblk, FG_BLK4_MAX, "blocks used");
	ASSERT_TRUE(!(fg_dir4_img_fallback(&img)), "no range asks the trie");
	ASSERT_EQ(fg_dir4_img_lookup(&img, 0x20010280u).list, FG_LIST_NONE, "upper half of a /24");
	ASSERT_EQ(fg_dir4_img_lookup(&img, 0x2001027fu).list, FG_LIST_DENY, "lower half of a /24");
	fg_dir4_img_free(&img);
	entry4(&v[k], 0x2000ff00u, 25, FG_LIST_DENY, 0); /* the 256th /24 of 32.0/16 */
	ASSERT_OK(fg_dir4_build(v, n, &img), "one block more: accepted");
	ASSERT_EQ(img.nblk, FG_BLK4_MAX, "blocks used: the budget");
	ASSERT_EQ(img.n24, n, "/24s wanting a block");
	ASSERT_EQ(img.trie24, 1, "/24s answered by the trie");
	ASSERT_EQ(img.trie16, 0, "/16s answered by the trie");
	ASSERT_TRUE(!(fg_dir4_img_find(&img, 0x21fffe01u, &r)),
		    "the last /24 by address asks the trie");
	ASSERT_TRUE(fg_dir4_img_find(&img, 0x21fffd01u, &r) && r.list == FG_LIST_DENY,
		    "the /24 before it: its block");
	ASSERT_TRUE(fg_dir4_img_find(&img, 0x2000ff01u, &r) && r.list == FG_LIST_DENY,
		    "the added /24: its block");
	ASSERT_TRUE(fg_dir4_img_find(&img, 0x21fffe81u, &r) == false, "all of the fallback /24");
	ASSERT_TRUE(fg_dir4_img_find(&img, 0x21ffff01u, &r) && r.list == FG_LIST_NONE,
		    "a /24 without prefixes in that /16: its level-2 entry");
	fg_dir4_img_free(&img);
	ASSERT_EQ(fg_dir4_build_budget(v, n, FG_BLK4_MAX + 1, &img), -EINVAL,
		  "a budget past the bound");
	free(v);
}

/* FG_DIR4_LEAVES distinct values (leaf 0, "none", included) fit; a prefix
 * with one more is answered by the trie, the others stay in the table. */
static void test_img_leaf_bound(void)
{
	static struct fg_dir4_img img;
	size_t n = FG_DIR4_LEAVES;
	struct fg_pfx_entry *v = calloc(n + 1, sizeof(*v));
	struct fg_pfx r;

	if (!ASSERT_TRUE(v, "calloc"))
		return;
	for (size_t i = 0; i < n; i++) /* distinct /16s, distinct values */
		entry4(&v[i], 0x30000000u + ((__u32)i << 16), 16, i % 3, (__u32)(i / 3 + 1));
	/* a /24 in the last /16, with a value seen before: a leaf again */
	entry4(&v[n], 0x30000000u + ((__u32)(n - 1) << 16) + 0x100, 24, FG_LIST_DENY, 1);
	ASSERT_OK(fg_dir4_build(v, n - 1, &img), "4095 values + none: accepted");
	ASSERT_EQ(img.nleaf, FG_DIR4_LEAVES, "leaves used");
	ASSERT_EQ(fg_dir4_img_lookup(&img, 0x30050001u).sets, 5 / 3 + 1, "a leaf's sets");
	ASSERT_TRUE(!(fg_dir4_img_fallback(&img)), "no range asks the trie");
	fg_dir4_img_free(&img);
	ASSERT_OK(fg_dir4_build(v, n + 1, &img), "one value more: accepted");
	ASSERT_EQ(img.nleaf, FG_DIR4_LEAVES, "leaves used");
	ASSERT_EQ(img.trie_pfx, 1, "prefixes answered by the trie");
	ASSERT_TRUE(!(fg_dir4_img_find(&img, 0x3fff0001u, &r)), "the /16 with the 4097th value");
	ASSERT_TRUE(fg_dir4_img_find(&img, 0x3fff0101u, &r) && r.list == FG_LIST_DENY,
		    "a longer prefix inside it, with a known value");
	ASSERT_TRUE(fg_dir4_img_find(&img, 0x3ffe0001u, &r) && r.sets == 4094 / 3 + 1,
		    "the /16 before it");
	fg_dir4_img_free(&img);
	free(v);
}

/* Prefixes longer than the range key shifts off, per /16 (shift 16) or /24 (8). */
static size_t ranges_of(const struct fg_pfx_entry *v, size_t n, int shift, __u32 *keys, __u32 *cnt)
{
	size_t m = 0;

	for (size_t i = 0; i < n; i++) {
		__u32 key = entry_net(&v[i]) >> shift;
		size_t j;

		if (v[i].plen <= 32 - shift)
			continue;
		for (j = 0; j < m && keys[j] != key; j++)
			;
		if (j == m) {
			keys[m] = key;
			cnt[m++] = 0;
		}
		cnt[j]++;
	}
	return m;
}

/* Budgets from none to all it wants: the table answers as the brute-force
 * longest-prefix match wherever it does not ask the trie, stays within the
 * budget, and gives its blocks to the ranges with the most long prefixes. */
static void test_img_budget_vs_reference(void)
{
	static struct fg_dir4_img img;
	static __u32 k16[4000], c16[4000], k24[4000], c24[4000];
	const size_t n = 3000;
	struct fg_pfx_entry *v = calloc(n, sizeof(*v));
	__u32 need, budgets[7];
	size_t m16, m24;

	if (!ASSERT_TRUE(v, "calloc"))
		return;
	random_entries(v, n);
	m16 = ranges_of(v, n, 16, k16, c16);
	m24 = ranges_of(v, n, 8, k24, c24);
	need = (__u32)(m16 + m24);
	budgets[0] = 0;
	budgets[1] = 1;
	budgets[2] = (__u32)m16 / 2;
	budgets[3] = (__u32)m16;
	budgets[4] = (__u32)m16 + (__u32)m24 / 3;
	budgets[5] = need - 1;
	budgets[6] = need;
	for (int b = 0; b < 7; b++) {
		size_t wrong = 0, trie = 0, table = 0;
		__u32 min_kept16 = ~0u, max_trie16 = 0, min_kept24 = ~0u, max_trie24 = 0;
		char name[96];

		if (!ASSERT_OK(fg_dir4_build_budget(v, n, budgets[b], &img),
			       "fg_dir4_build_budget"))
			break;
		snprintf(name, sizeof(name), "budget %u of %u: blocks used", budgets[b], need);
		ASSERT_EQ(img.nblk, budgets[b] < need ? budgets[b] : need, name);
		ASSERT_EQ(img.n16, m16, "/16s wanting a block");
		ASSERT_EQ(img.n24, m24, "/24s wanting a block");
		for (int i = 0; i < 100000; i++) {
			__u32 a = probe(v, n);
			struct fg_pfx want = ref_lookup(v, n, a), got;

			if (!fg_dir4_img_find(&img, a, &got)) {
				trie++;
				continue;
			}
			table++;
			wrong += got.list != want.list || got.sets != want.sets;
		}
		ASSERT_EQ(wrong, 0,
			  "table answers differing from the reference longest-prefix match");
		ASSERT_GE(table, 10000, "probes the table answers");
		if (budgets[b] < need)
			ASSERT_GE(trie, 1, "probes the trie answers");
		else
			ASSERT_EQ(trie, 0, "probes the trie answers, with the budget it wants");
		/* the choice: no fallback range holds more long prefixes than a kept one */
		for (size_t i = 0; i < m16; i++) {
			bool kept = img.dir.e[k16[i]] & FG_DIR4_BLK;

			if (kept && c16[i] < min_kept16)
				min_kept16 = c16[i];
			if (!kept && c16[i] > max_trie16)
				max_trie16 = c16[i];
		}
		for (size_t i = 0; i < m24; i++) {
			__u32 up = img.dir.e[k24[i] >> 8], e;

			if (!(up & FG_DIR4_BLK))
				continue; /* its /16 asks the trie whole */
			e = img.blk[up & ~FG_DIR4_BLK].e[k24[i] & 0xff];
			if ((e & FG_DIR4_BLK) && c24[i] < min_kept24)
				min_kept24 = c24[i];
			if (!(e & FG_DIR4_BLK) && c24[i] > max_trie24)
				max_trie24 = c24[i];
		}
		ASSERT_LE(max_trie16, min_kept16,
			  "a fallback /16 holds no more long prefixes than a kept one");
		ASSERT_LE(max_trie24, min_kept24,
			  "a fallback /24 holds no more long prefixes than a kept one");
		fg_dir4_img_free(&img);
	}
	free(v);
}

/* ---- the real program after a real apply ------------------------------------- */

struct inst {
	struct floodgate_bpf *skel;
	struct fg_maps maps;
	char dir[64];
};

static int inst_open(struct inst *g)
{
	memset(g, 0, sizeof(*g));
	g->maps.dirfd = -1;
	for (int i = 0; i < FGM_NMAPS; i++)
		g->maps.fd[i] = -1;
	g->skel = floodgate_bpf__open_and_load();
	if (!g->skel)
		return -errno;
	snprintf(g->dir, sizeof(g->dir), "/tmp/test_dir4.XXXXXX");
	return fg_maps_scratch(&g->maps, g->skel, g->dir);
}

static void inst_close(struct inst *g)
{
	fg_maps_close(&g->maps);
	floodgate_bpf__destroy(g->skel);
	if (g->dir[0])
		rmdir(g->dir);
}

/* One random prefix as a YAML list item after indent, its length clamped to
 * [lo, hi]; returns what snprintf wrote. */
static size_t random_item(char *y, size_t cap, const char *indent, int lo, int hi)
{
	struct fg_pfx_entry e;
	__u32 net;

	random_entries(&e, 1);
	net = entry_net(&e);
	return (size_t)snprintf(y, cap, "%s- %u.%u.%u.%u/%u\n", indent, net >> 24, net >> 16 & 255,
				net >> 8 & 255, net & 255,
				e.plen < lo ? lo :
				e.plen < hi ? e.plen :
					      hi);
}

/* A policy: random allow and deny prefixes, one rule that passes sources in
 * a random source set, unmatched sources dropped; list prefixes from
 * minplen to maxplen long. Returns the YAML (malloc'd). */
static char *policy_yaml(size_t nlist, size_t nset, int minplen, int maxplen)
{
	size_t cap = (nlist + nset) * 32 + 4096, o = 0;
	char *y = malloc(cap);

	if (!y)
		return NULL;
	for (int l = 0; l < 2; l++) {
		o += (size_t)snprintf(y + o, cap - o, "%s:\n", l ? "deny" : "allow");
		for (size_t i = 0; i < nlist / 2; i++)
			o += random_item(y + o, cap - o, "  ", minplen, maxplen);
	}
	o += (size_t)snprintf(y + o, cap - o,
			      "default: drop\nrules:\n  - name: inset\n"
			      "    action: pass\n    match:\n      src:\n");
	for (size_t i = 0; i < nset; i++)
		o += random_item(y + o, cap - o, "        ", 8, maxplen);
	return y;
}

static int apply_yaml(struct inst *g, const char *y, struct fg_config *cfg, char *why)
{
	struct fg_err e = {};
	int err = fg_config_parse(y, strlen(y), "<test_dir4>", cfg, &e);

	if (err) {
		fg_err_format(&e, why, FG_WHY_LEN);
		return err;
	}
	return fg_policy_apply(&g->maps, cfg, NULL, why);
}

/* What the kernel's LPM trie of slot holds for a: the outcome it implies. */
static int trie_outcome(struct inst *g, __u32 slot, __u32 a)
{
	struct fg_lpm4 k = { .prefixlen = 64, .slot = slot, .addr = htonl(a) };
	struct fg_pfx v;

	if (bpf_map_lookup_elem(g->maps.fd[FGM_PFX4], &k, &v))
		return FG_OUT_DROP; /* on no list, in no set: the default */
	if (v.list == FG_LIST_ALLOW)
		return FG_OUT_ALLOW;
	if (v.list == FG_LIST_DENY)
		return FG_OUT_DENY;
	return v.sets ? FG_OUT_PASS : FG_OUT_DROP;
}

/* The rows a packet can be counted in: FG_ROW_GLOBAL and each rule id of
 * the active policy (the program's v->row); -1 when it cannot be read. */
static int active_rows(struct inst *g, __u32 rows[FG_MAX_RULES + 1])
{
	static struct fg_policy pol;
	int n = 0;

	if (fg_policy_read_active(&g->maps, &pol))
		return -1;
	rows[n++] = FG_ROW_GLOBAL;
	for (__u32 i = 0; i < pol.nrules && i < FG_MAX_RULES; i++)
		rows[n++] = pol.rules[i].id & (FG_MAX_IDS - 1);
	return n;
}

/* The outcome the program gives a UDP frame from a. Only the rows it can
 * count in are read, before and after: a read of all FG_NROWS rows per
 * probe was most of this binary's time. */
static int prog_outcome(struct inst *g, __u32 a)
{
	static struct fg_stats before[FG_MAX_RULES + 1], after[FG_MAX_RULES + 1];
	static __u32 rows[FG_MAX_RULES + 1];
	struct in_addr ia = { .s_addr = htonl(a) };
	char src[INET_ADDRSTRLEN];
	struct pkt_spec s = { .family = 4,
			      .src = src,
			      .dst = "10.200.0.2",
			      .proto = 17,
			      .sport = 4000,
			      .dport = 7,
			      .payload = 8 };
	__u8 buf[512]; /* pkt_build wants room for its largest frame */
	int len, n, out = -1;

	inet_ntop(AF_INET, &ia, src, sizeof(src));
	len = pkt_build(&s, buf, sizeof(buf));
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = buf, .data_size_in = (__u32)len, .repeat = 1);
	if (len < 0)
		return -1;
	n = active_rows(g, rows);
	if (n < 0)
		return -2;
	for (int r = 0; r < n; r++)
		if (fg_stats_read_row(&g->maps, rows[r], &before[r]))
			return -2;
	if (bpf_prog_test_run_opts(bpf_program__fd(g->skel->progs.floodgate), &o))
		return -3;
	for (int r = 0; r < n; r++)
		if (fg_stats_read_row(&g->maps, rows[r], &after[r]))
			return -4;
	for (int r = 0; r < n; r++)
		for (int k = 0; k < FG_OUT_MAX; k++)
			if (after[r].pkts[k] != before[r].pkts[k])
				out = k;
	return out;
}

/* n probes near cfg's prefixes: the program against the trie; 0 or the mismatches. */
static size_t check_against_trie(struct inst *g, const struct fg_config *cfg, int n,
				 int seen[FG_OUT_MAX])
{
	struct fg_ctl ctl;
	size_t wrong = 0;

	if (fg_ctl_read(&g->maps, &ctl))
		return (size_t)n;
	for (int i = 0; i < n; i++) {
		__u32 a = probe(cfg->pfx, cfg->n_pfx);
		int want = trie_outcome(g, ctl.slot & 1, a), got = prog_outcome(g, a);

		if (got != want && !wrong)
			printf("  first mismatch: %#x: program %d, trie %d\n", a, got, want);
		wrong += got != want;
		if (want >= 0 && want < FG_OUT_MAX)
			seen[want]++;
	}
	return wrong;
}

static void test_prog_vs_trie_and_flips(void)
{
	static struct fg_config cfg[3];
	char why[FG_WHY_LEN] = "";
	struct inst g;
	char *y[3] = { policy_yaml(3000, 300, 1, 32), policy_yaml(40, 4, 1, 32),
		       policy_yaml(60, 6, 1, 16) };
	int seen[FG_OUT_MAX] = { 0 }, fd;
	__u32 k, inner;

	if (!ASSERT_TRUE(y[0] && y[1] && y[2], "policies") || !ASSERT_OK(inst_open(&g), "load"))
		goto out;
	/* A, then B, then one without blocks (no prefix past /16), then A again:
	 * each flip serves the new lists */
	for (int step = 0; step < 4; step++) {
		int p = step == 3 ? 0 : step;

		fg_config_free(&cfg[p]);
		memset(&cfg[p], 0, sizeof(cfg[p]));
		if (!ASSERT_OK(apply_yaml(&g, y[p], &cfg[p], why), why))
			break;
		ASSERT_EQ(check_against_trie(&g, &cfg[p], 3000, seen), 0,
			  "outcomes differing from the kernel's LPM trie of the active slot");
	}
	ASSERT_GE(seen[FG_OUT_ALLOW], 300, "allowlisted probes");
	ASSERT_GE(seen[FG_OUT_DENY], 300, "denylisted probes");
	ASSERT_GE(seen[FG_OUT_PASS], 100, "probes in the set");
	ASSERT_GE(seen[FG_OUT_DROP], 300, "unlisted probes");
	/* the slot that held the block-free policy has none left */
	fd = g.maps.fd[FGM_BLK4];
	k = 0;
	{
		struct fg_ctl ctl;

		ASSERT_OK(fg_ctl_read(&g.maps, &ctl), "fg_ctl");
		k = (ctl.slot & 1) ^ 1; /* A is active again, in the slot B had */
	}
	ASSERT_EQ(bpf_map_lookup_elem(fd, &k, &inner), -ENOENT,
		  "the block-free slot's blocks are freed");
	k ^= 1;
	ASSERT_OK(bpf_map_lookup_elem(fd, &k, &inner) ? -errno : 0,
		  "the active slot has its blocks");
out:
	for (int i = 0; i < 3; i++) {
		fg_config_free(&cfg[i]);
		free(y[i]);
	}
	inst_close(&g);
}

/* The outcome a brute-force longest-prefix match over cfg's prefixes implies. */
static int ref_outcome(const struct fg_config *cfg, __u32 a)
{
	struct fg_pfx v = ref_lookup(cfg->pfx, cfg->n_pfx, a);

	if (v.list == FG_LIST_ALLOW)
		return FG_OUT_ALLOW;
	if (v.list == FG_LIST_DENY)
		return FG_OUT_DENY;
	return v.sets ? FG_OUT_PASS : FG_OUT_DROP;
}

/* The active slot's IPv4 lists rebuilt within `budget` blocks and written
 * over those apply wrote (no packet is in flight in a test). */
static int write_budget(struct inst *g, const struct fg_config *cfg, __u32 budget,
			struct fg_dir4_img *img)
{
	struct fg_ctl ctl;
	int err = fg_ctl_read(&g->maps, &ctl);

	if (!err)
		err = fg_dir4_build_budget(cfg->pfx, cfg->n_pfx, budget, img);
	if (!err)
		err = fg_dir4_write(g->maps.fd[FGM_DIR4], g->maps.fd[FGM_BLK4], ctl.slot & 1, img);
	return err;
}

/* A small block budget across reload flips: the program's outcomes equal the
 * brute-force match and the active slot's trie, for sources the table
 * answers and for sources in ranges that ask the trie. */
static void test_prog_budget_flips(void)
{
	static struct fg_config cfg[2];
	static struct fg_dir4_img img;
	/* ~0: every /16 its block and half the /24s theirs, so /24s ask the trie from a block */
	const __u32 budget[4] = { 40, 0, 7, ~0u };
	char why[FG_WHY_LEN] = "";
	char *y[2] = { policy_yaml(3000, 300, 16, 32), policy_yaml(800, 80, 16, 32) };
	int seen[FG_OUT_MAX] = { 0 };
	struct inst g;

	if (!ASSERT_TRUE(y[0] && y[1], "policies") || !ASSERT_OK(inst_open(&g), "load"))
		goto out;
	for (int step = 0; step < 4; step++) {
		int p = step & 1;
		size_t wrong = 0, trie = 0, trie24 = 0, table = 0;
		__u32 b = budget[step];
		struct fg_ctl ctl;

		fg_config_free(&cfg[p]);
		memset(&cfg[p], 0, sizeof(cfg[p]));
		if (!ASSERT_OK(apply_yaml(&g, y[p], &cfg[p], why), why))
			break;
		if (b == ~0u) {
			if (!ASSERT_OK(fg_dir4_build(cfg[p].pfx, cfg[p].n_pfx, &img),
				       "the full table"))
				break;
			b = img.n16 + img.n24 / 2;
			fg_dir4_img_free(&img);
		}
		if (!ASSERT_OK(write_budget(&g, &cfg[p], b, &img), "the table within the budget") ||
		    !ASSERT_OK(fg_ctl_read(&g.maps, &ctl), "fg_ctl"))
			break;
		ASSERT_TRUE(fg_dir4_img_fallback(&img), "some ranges ask the trie");
		for (int i = 0; i < 3000; i++) {
			__u32 a = probe(cfg[p].pfx, cfg[p].n_pfx);
			struct fg_pfx dummy;
			int want = ref_outcome(&cfg[p], a), got = prog_outcome(&g, a);

			if (got != want && !wrong)
				printf("  first mismatch: %#x: program %d, reference %d\n", a, got,
				       want);
			wrong += got != want || trie_outcome(&g, ctl.slot & 1, a) != want;
			if (fg_dir4_img_find(&img, a, &dummy))
				table++;
			else
				trie++, trie24 += !!(img.dir.e[a >> 16] & FG_DIR4_BLK);
			if (want >= 0 && want < FG_OUT_MAX)
				seen[want]++;
		}
		ASSERT_EQ(wrong, 0,
			  "outcomes differing from the longest-prefix match (program or trie)");
		ASSERT_GE(trie, 200, "probes in ranges that ask the trie");
		ASSERT_GE(table, 200, "probes the table answers");
		if (budget[step] == ~0u) {
			ASSERT_EQ(img.trie16, 0, "every /16 has its block");
			ASSERT_GE(trie24, 200, "probes in /24s that ask the trie from a block");
		}
		fg_dir4_img_free(&img);
	}
	ASSERT_GE(seen[FG_OUT_ALLOW], 300, "allowlisted probes");
	ASSERT_GE(seen[FG_OUT_DENY], 300, "denylisted probes");
	ASSERT_GE(seen[FG_OUT_PASS], 100, "probes in the set");
	ASSERT_GE(seen[FG_OUT_DROP], 300, "unlisted probes");
out:
	for (int i = 0; i < 2; i++) {
		fg_config_free(&cfg[i]);
		free(y[i]);
	}
	inst_close(&g);
}

static int cmp_u32(const void *x, const void *y)
{
	__u32 a = *(const __u32 *)x, b = *(const __u32 *)y;

	return a < b ? -1 : a > b;
}

/* The blocks of the active slot's fg_blk4 inner map, or -errno. */
static long active_blocks(struct inst *g)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), id, slot;
	struct fg_ctl ctl;
	int fd, err;

	if (fg_ctl_read(&g->maps, &ctl))
		return -EIO;
	slot = ctl.slot & 1;
	if (bpf_map_lookup_elem(g->maps.fd[FGM_BLK4], &slot, &id))
		return -errno;
	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0)
		return -errno;
	err = bpf_obj_get_info_by_fd(fd, &info, &len);
	close(fd);
	return err ? err : (long)info.max_entries;
}

/* A threat feed of a million random /32s: applied (the trie answers the /24s
 * past the block budget), the apply says so, and a sample of listed and
 * unlisted sources gets the right outcome from the program. */
static void test_apply_1m_random32(void)
{
	static struct fg_config cfg;
	static struct fg_inforce was;
	static struct fg_dir4_img img;
	const size_t n = 1000000;
	size_t cap = n * 20 + 256, o = 0, wrong = 0, trie = 0, table = 0;
	char *y = malloc(cap), why[FG_WHY_LEN] = "";
	__u32 *addr = malloc(n * sizeof(*addr));
	struct fg_err e = {};
	struct inst g;

	if (!ASSERT_OK(inst_open(&g), "load") || !ASSERT_TRUE(y && addr, "memory"))
		goto out;
	/* flow style, no spaces: 14.6 MB, within FG_MAX_FILE_SIZE */
	o += (size_t)snprintf(y + o, cap - o, "deny: [");
	for (size_t i = 0; i < n; i++) {
		addr[i] = rnd() << 8 ^ rnd();
		o += (size_t)snprintf(y + o, cap - o, "%s%u.%u.%u.%u", i ? "," : "", addr[i] >> 24,
				      addr[i] >> 16 & 255, addr[i] >> 8 & 255, addr[i] & 255);
	}
	o += (size_t)snprintf(y + o, cap - o,
			      "]\nrules:\n  - name: r\n    action: pass\n"
			      "    match: {proto: udp}\n");
	if (!ASSERT_OK(fg_config_parse(y, o, "<test_dir4 1M>", &cfg, &e), "parse 1M /32s"))
		goto out;
	if (!ASSERT_OK(fg_policy_apply(&g.maps, &cfg,
				       &(struct fg_apply_opts){ .sz = sizeof(struct fg_apply_opts),
								.was = &was },
				       why),
		       why))
		goto out;
	ASSERT_STR_CONTAINS(was.dir4_note, "/24 ranges answered by the trie: the block budget is",
			    "the apply's note");
	printf("  apply: %s\n", was.dir4_note);
	if (!ASSERT_OK(fg_dir4_build(cfg.pfx, cfg.n_pfx, &img), "the image apply built"))
		goto out;
	ASSERT_EQ(img.nblk, FG_BLK4_MAX, "blocks: the whole budget");
	ASSERT_EQ(active_blocks(&g), FG_BLK4_MAX, "the active slot's inner map");
	printf("  1M random /32s: %u /16s and %u /24s want a block; %u /24s ask the trie; "
	       "%zu MB a slot\n",
	       img.n16, img.n24, img.trie24,
	       ((size_t)img.nblk * sizeof(struct fg_blk4) + sizeof(struct fg_dir4)) >> 20);
	qsort(addr, n, sizeof(*addr), cmp_u32);
	for (int i = 0; i < 4000; i++) {
		__u32 a = i & 1 ? addr[rnd() % n] : rnd() << 8 ^ rnd();
		bool listed = bsearch(&a, addr, n, sizeof(*addr), cmp_u32);
		int want = listed ? FG_OUT_DENY : FG_OUT_PASS, got = prog_outcome(&g, a);
		struct fg_pfx dummy;

		if (got != want && !wrong)
			printf("  first mismatch: %#x: program %d, expected %d\n", a, got, want);
		wrong += got != want;
		if (fg_dir4_img_find(&img, a, &dummy))
			table++;
		else
			trie++;
	}
	ASSERT_EQ(wrong, 0, "outcomes differing from the list, of 4000");
	ASSERT_GE(trie, 1000, "sampled sources in ranges that ask the trie");
	ASSERT_GE(table, 200, "sampled sources the table answers");
out:
	fg_dir4_img_free(&img);
	fg_inforce_free(&was);
	fg_config_free(&cfg);
	free(y);
	free(addr);
	inst_close(&g);
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

int main(int argc, char **argv)
{
	libbpf_set_print(libbpf_quiet);
	fg_test_init(argc, argv);
	FG_RUN(test_img_vs_reference);
	FG_RUN(test_img_block_bound);
	FG_RUN(test_img_leaf_bound);
	FG_RUN(test_img_budget_vs_reference);
	FG_RUN(test_prog_vs_trie_and_flips);
	FG_RUN(test_prog_budget_flips);
	FG_RUN(test_apply_1m_random32);
	return fg_test_summary();
}
