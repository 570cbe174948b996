// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Pool bucket ids by name across applies (user/maps/apply.c, docs/shedding.md
 * section 5): two pools swapped in the file keep their own shared tat and
 * cap; a new pool gets an id the active policy does not use, its buckets
 * zeroed; a rule's pool index follows its pool's new place. Loads the real
 * skeleton without attaching or pinning anything. FG_NEEDS_ROOT.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "fgtest.h"
#include "maps/apply.h"
#include "maps/ctl.h"
#include "maps/fgmaps.h"
#include "floodgate.skel.h"
#include "policy/policy.h"
#include "polfix.h"

static struct floodgate_bpf *skel;
static struct fg_maps maps;
static char tmpdir[] = "/tmp/fgshedpools-test.XXXXXX";

#define RULES(p1, p2)                                                                 \
	"rules:\n"                                                                    \
	"  - {name: r1, match: {proto: udp, dport: 1}, tier: normal, pool: " p1 "}\n" \
	"  - {name: r2, match: {proto: udp, dport: 2}, tier: critical, pool: " p2 "}\n"
static const char pol_ab[] = "max_sources: 1024\n"
			     "pools:\n"
			     "  - {name: alpha, rate: 1000/s, burst: 100, reserve: 20%}\n"
			     "  - {name: beta, rate: 5000/s, burst: 500}\n" RULES("alpha", "beta");
static const char pol_ba[] = /* the same pools, the other way round */
	"max_sources: 1024\n"
	"pools:\n"
	"  - {name: beta, rate: 5000/s, burst: 500}\n"
	"  - {name: alpha, rate: 1000/s, burst: 100, reserve: 20%}\n" RULES("alpha", "beta");
static const char pol_ac[] = /* beta gone, gamma new */
	"max_sources: 1024\n"
	"pools:\n"
	"  - {name: gamma, rate: 2000/s, burst: 200}\n"
	"  - {name: alpha, rate: 1000/s, burst: 100, reserve: 20%}\n" RULES("alpha", "gamma");

static int apply(const char *txt)
{
	char why[FG_WHY_LEN];

	return pf_apply(&maps, txt, why);
}

/* The active policy's pool named name: its index, or -1. */
static int pool_index(const struct fg_policy *pol, const char *name)
{
	for (__u32 i = 0; i < pol->npools && i < FG_MAX_POOLS; i++)
		if (!strncmp(pol->pool_names[i], name, FG_NAME_LEN))
			return (int)i;
	return -1;
}

static __u64 agg_tat(__u32 idx)
{
	struct fg_agg a = {};

	if (fg_array_read(&maps, FGM_AGG, idx, &a))
		return ~0ull;
	return a.b.tat;
}

static int set_agg_tat(__u32 idx, __u64 tat)
{
	struct fg_agg a = { .b.tat = tat };

	return fg_array_write(&maps, FGM_AGG, idx, &a);
}

/* Apply txt (checked as what) and read the active policy into *pol; 1 when both held. */
static bool apply_read(const char *txt, const char *what, struct fg_policy *pol)
{
	return ASSERT_OK(apply(txt), what) &&
	       ASSERT_OK(fg_policy_read_active(&maps, pol), "read policy");
}

/* A pool the policy must have, at index `at` (checked as what). */
struct pool_at {
	const char *name;
	int at;
	const char *what;
};

/* apply_read, then the two pools of want[] where they must be; their
 * indexes into idx[]. 1 when all held. */
static bool apply_pools(const char *txt, const char *what, struct fg_policy *pol,
			const struct pool_at want[2], int idx[2])
{
	if (!apply_read(txt, what, pol))
		return false;
	for (int i = 0; i < 2; i++) {
		idx[i] = pool_index(pol, want[i].name);
		if (!ASSERT_EQ(idx[i], want[i].at, want[i].what))
			return false;
	}
	return true;
}

/* The rule named rule draws from the pool named pool (by the 1-based index). */
static bool rule_draws(const struct fg_policy *pol, int rule_idx, const char *pool)
{
	int p = pool_index(pol, pool);

	return p >= 0 && pol->rules[rule_idx].pool == p + 1;
}

static void test_reorder_keeps_state(void)
{
	static struct fg_policy pol;
	int ia, ib, idx[2];
	__u16 ida, idb;

	if (!ASSERT_OK(fg_ctl_init(&maps, FG_MODE_ENFORCE), "ctl init") ||
	    !apply_pools(pol_ab, "apply alpha, beta", &pol,
			 (const struct pool_at[]){ { "alpha", 0, "alpha first" },
						   { "beta", 1, "beta second" } },
			 idx))
		return;
	ia = idx[0];
	ib = idx[1];
	ida = pol.pools[ia].id;
	idb = pol.pools[ib].id;
	ASSERT_NEQ(ida, idb, "two pools, two ids");
	ASSERT_TRUE(ida < FG_POOL_IDS && idb < FG_POOL_IDS, "ids in range");
	/* each pool's own state: alpha's shared tat and cap, beta's tat */
	ASSERT_OK(set_agg_tat(FG_POOL_IDX(ida), 111111), "alpha tat");
	ASSERT_OK(set_agg_tat(FG_CAP_IDX(ida), 222222), "alpha cap");
	ASSERT_OK(set_agg_tat(FG_POOL_IDX(idb), 333333), "beta tat");

	if (!apply_pools(pol_ba, "apply beta, alpha (swapped)", &pol,
			 (const struct pool_at[]){ { "alpha", 1, "alpha now second" },
						   { "beta", 0, "beta now first" } },
			 idx))
		return;
	ia = idx[0];
	ib = idx[1];
	ASSERT_EQ(pol.pools[ia].id, ida, "alpha keeps its bucket id");
	ASSERT_EQ(pol.pools[ib].id, idb, "beta keeps its bucket id");
	ASSERT_EQ(pol.pools[ia].tau_low < pol.pools[ia].tau, 1,
		  "alpha's figures moved with it (reserve)");
	ASSERT_EQ(pol.pools[ib].cap.inc, 0, "beta has no cap (no reserve)");
	ASSERT_EQ(agg_tat(FG_POOL_IDX(ida)), 111111, "alpha's shared tat kept");
	ASSERT_EQ(agg_tat(FG_CAP_IDX(ida)), 222222, "alpha's cap kept");
	ASSERT_EQ(agg_tat(FG_POOL_IDX(idb)), 333333, "beta's shared tat kept");
	ASSERT_TRUE(rule_draws(&pol, 0, "alpha"), "r1 still draws from alpha (index 2)");
	ASSERT_TRUE(rule_draws(&pol, 1, "beta"), "r2 still draws from beta (index 1)");
}

static void test_new_pool_starts_full(void)
{
	static struct fg_policy pol;
	int ia, ig, idx[2];
	__u16 ida, idb = FG_POOL_IDS, idg;

	if (!apply_read(pol_ab, "apply alpha, beta", &pol))
		return;
	ida = pol.pools[pool_index(&pol, "alpha")].id;
	idb = pol.pools[pool_index(&pol, "beta")].id;
	/* dirty every other id's buckets: a new pool must not inherit any */
	for (__u32 id = 0; id < FG_POOL_IDS; id++) {
		if (id == ida || id == idb)
			continue;
		set_agg_tat(FG_POOL_IDX(id), 999000 + id);
		set_agg_tat(FG_CAP_IDX(id), 999000 + id);
	}
	ASSERT_OK(set_agg_tat(FG_POOL_IDX(ida), 444444), "alpha tat");
	ASSERT_OK(set_agg_tat(FG_POOL_IDX(idb), 555555), "beta tat");

	if (!apply_pools(pol_ac, "apply gamma, alpha (beta removed)", &pol,
			 (const struct pool_at[]){ { "gamma", 0, "gamma first" },
						   { "alpha", 1, "alpha second" } },
			 idx))
		return;
	ig = idx[0];
	ia = idx[1];
	idg = pol.pools[ig].id;
	ASSERT_EQ(pol.pools[ia].id, ida, "alpha keeps its id");
	ASSERT_NEQ(idg, ida, "gamma does not take alpha's id");
	ASSERT_NEQ(idg, idb, "gamma does not take beta's (in use until the flip)");
	ASSERT_EQ(agg_tat(FG_POOL_IDX(idg)), 0, "gamma's shared tat starts at 0 (full)");
	ASSERT_EQ(agg_tat(FG_CAP_IDX(idg)), 0, "gamma's cap starts at 0");
	ASSERT_EQ(agg_tat(FG_POOL_IDX(ida)), 444444, "alpha's tat kept");
	ASSERT_TRUE(rule_draws(&pol, 1, "gamma"), "r2 draws from gamma");

	/* beta back: a new pool again, whatever id it gets, from a full bucket */
	if (!apply_read(pol_ab, "apply alpha, beta again", &pol))
		return;
	idb = pol.pools[pool_index(&pol, "beta")].id;
	ASSERT_EQ(pol.pools[pool_index(&pol, "alpha")].id, ida, "alpha keeps its id a third time");
	ASSERT_NEQ(idb, idg, "beta does not take gamma's id (in use until the flip)");
	ASSERT_EQ(agg_tat(FG_POOL_IDX(idb)), 0, "beta back: starts full, not at its old 555555");
}

static void test_names_in_the_policy(void)
{
	static struct fg_config cfg;

	if (!ASSERT_OK(pf_parse(pol_ba, &cfg), "parse"))
		return;
	ASSERT_EQ(strcmp(cfg.pol.pool_names[0], "beta"), 0, "compiled name 0 is beta");
	ASSERT_EQ(strcmp(cfg.pol.pool_names[1], "alpha"), 0, "compiled name 1 is alpha");
	ASSERT_EQ(cfg.pol.pool_names[2][0], 0, "no name past npools");
	fg_config_free(&cfg);
}

int main(int argc, char **argv)
{
	fg_test_init(argc, argv);
	FG_RUN(test_names_in_the_policy);
	if (geteuid() != 0)
		return fg_test_skip_all("shed_pools", "needs root to create BPF maps");
	skel = floodgate_bpf__open();
	if (!skel || bpf_map__set_max_entries(skel->maps.fg_src4, 1024) ||
	    bpf_map__set_max_entries(skel->maps.fg_src6, 1024) || floodgate_bpf__load(skel) ||
	    !mkdtemp(tmpdir) || fg_maps_from_skel(&maps, skel, tmpdir)) {
		printf("setup failed: %s\n", strerror(errno));
		fg_test_begin("setup");
		fg_test_fail(__FILE__, __LINE__, "skeleton load");
		fg_test_end();
		floodgate_bpf__destroy(skel);
		return fg_test_summary();
	}
	FG_RUN(test_reorder_keeps_state);
	FG_RUN(test_new_pool_starts_full);
	fg_maps_close(&maps);
	floodgate_bpf__destroy(skel);
	rmdir(tmpdir);
	return fg_test_summary();
}
