// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * FG_MAX_FILE_RULES (256) written rules plus the implicit fragments rule,
 * through the compiler, apply and the real program: a policy of 256 rules
 * loads and each rule limits in its own row; 257 is refused by the compiler
 * with the limit in its message, and by apply, changing nothing; a reload
 * that renames all 256 at once takes fresh ids (some past the old 511) and
 * counts in them, while fragments keeps its id and its counters. Also the
 * batch reader of fg_stats and fg_names against one lookup per row.
 * FG_NEEDS_ROOT (BPF map creation, BPF_PROG_TEST_RUN).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "fgtest.h"
#include "maps/apply.h"
#include "maps/fgmaps.h"
#include "floodgate.skel.h"
#include "pkt.h"
#include "policy/policy.h"

static struct floodgate_bpf *skel;
static struct fg_maps maps;
static char tmpdir[] = "/tmp/test_rules256.XXXXXX";
static struct fg_stats rows[FG_NROWS];
static struct fg_name names[FG_MAX_IDS];

/* n rules named prefix0.., rule i on UDP dport 1000 + i, 2 packets a
 * minute per source: a source's third packet is dropped. */
static char *rules_yaml(const char *prefix, int n)
{
	size_t len = 64 + (size_t)n * 128, off;
	char *y = malloc(len);

	if (!y)
		return NULL;
	off = (size_t)snprintf(y, len, "max_sources: 1024\nrules:\n");
	for (int i = 0; i < n; i++)
		off += (size_t)snprintf(y + off, len - off,
					"  - {name: %s%d, match: {proto: udp, dport: %d}, "
					"per_source: {rate: 1/m, burst: 2}}\n",
					prefix, i, 1000 + i);
	return y;
}

static int parse(const char *y, struct fg_config *cfg, struct fg_err *e)
{
	memset(e, 0, sizeof(*e));
	return fg_config_parse(y, strlen(y), "rules256.yaml", cfg, e);
}

/* The YAML applied as floodgated applies it (the scratch dir is locked). */
static int apply_yaml(const char *y, char *why)
{
	static struct fg_config cfg;
	struct fg_err e;
	int err = parse(y, &cfg, &e);

	if (err) {
		fg_err_format(&e, why, FG_WHY_LEN);
		return err;
	}
	err = fg_policy_apply(&maps, &cfg, NULL, why);
	fg_config_free(&cfg);
	return err;
}

/* The id fg_names gives name, or -1. */
static int id_of(const char *name)
{
	for (int i = 0; i < FG_MAX_IDS; i++)
		if (names[i].in_use && !strcmp(names[i].name, name))
			return i;
	return -1;
}

/* A frame through the program: UDP from 192.0.2.9 to dport, or a non-first fragment. */
static int send_udp(__u16 dport, int frag_off)
{
	struct pkt_spec s = { .family = 4,
			      .src = "192.0.2.9",
			      .dst = "198.51.100.1",
			      .proto = 17,
			      .sport = 4000,
			      .dport = dport,
			      .payload = 8,
			      .frag_off = frag_off };
	__u8 buf[512];
	int len = pkt_build(&s, buf, sizeof(buf));
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = buf,
		    .data_size_in = (__u32)(len > 0 ? len : 0), .repeat = 1);

	if (len < 0)
		return -EINVAL;
	return bpf_prog_test_run_opts(bpf_program__fd(skel->progs.floodgate), &o);
}

/* Three packets to each of the n rules' ports; the rules of prefix whose
 * rows do not show 2 passed and 1 dropped, and the ids they hold. */
static int rules_wrong(const char *prefix, int n, int ids[FG_MAX_FILE_RULES])
{
	char name[FG_NAME_LEN];
	int wrong = 0;

	for (int i = 0; i < n; i++)
		for (int k = 0; k < 3; k++)
			if (send_udp((__u16)(1000 + i), 0))
				return -1;
	if (fg_stats_read(&maps, rows) || fg_names_read(&maps, names))
		return -1;
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s%d", prefix, i);
		ids[i] = id_of(name);
		wrong += ids[i] < 0 || rows[ids[i]].pkts[FG_OUT_PASS] != 2 ||
			 rows[ids[i]].pkts[FG_OUT_DROP] != 1;
	}
	return wrong;
}

static void test_256_rules_load_and_limit(void)
{
	char why[FG_WHY_LEN] = "", *y = rules_yaml("old", FG_MAX_FILE_RULES);
	static struct fg_config cfg;
	int ids[FG_MAX_FILE_RULES], frag;
	struct fg_policy pol;
	struct fg_err e;

	if (!ASSERT_TRUE(y, "yaml"))
		return;
	if (ASSERT_OK(parse(y, &cfg, &e), "256 written rules compile")) {
		ASSERT_EQ(cfg.pol.nrules, FG_MAX_RULES, "256 + fragments");
		ASSERT_EQ(strcmp(cfg.rules[FG_MAX_RULES - 1].name, "fragments"), 0,
			  "fragments last");
		fg_config_free(&cfg);
	}
	if (!ASSERT_OK(apply_yaml(y, why), why))
		goto out;
	ASSERT_OK(fg_policy_read_active(&maps, &pol), "read the active policy");
	ASSERT_EQ(pol.nrules, FG_MAX_RULES, "all 257 rules active");
	ASSERT_EQ(rules_wrong("old", FG_MAX_FILE_RULES, ids), 0,
		  "rules whose row is not 2 passed, 1 dropped");
	ASSERT_EQ(ids[FG_MAX_FILE_RULES - 1], FG_MAX_FILE_RULES - 1, "the 256th rule: id 255");
	frag = id_of("fragments");
	ASSERT_EQ(frag, FG_MAX_FILE_RULES, "fragments: id 256");
	ASSERT_OK(send_udp(1000, 64), "a non-first fragment");
	ASSERT_OK(fg_stats_read(&maps, rows), "stats");
	ASSERT_EQ(rows[frag].pkts[FG_OUT_PASS], 1, "counted by fragments");
out:
	free(y);
}

/* Everything a refused policy must leave as it was. */
struct state {
	struct fg_ctl ctl;
	__u64 version;
	struct fg_name names[FG_MAX_IDS];
	struct fg_stats rows[FG_NROWS];
};

static int state_read(struct state *s)
{
	struct fg_policy pol;
	int err = fg_ctl_read(&maps, &s->ctl);

	if (!err)
		err = fg_policy_read_active(&maps, &pol);
	s->version = pol.version;
	if (!err)
		err = fg_names_read(&maps, s->names);
	return err ? err : fg_stats_read(&maps, s->rows);
}

static void test_257_refused_changes_nothing(void)
{
	static struct state before, after;
	static struct fg_config cfg;
	char why[FG_WHY_LEN] = "", *y = rules_yaml("new", FG_MAX_FILE_RULES + 1);
	struct fg_err e;

	if (!ASSERT_TRUE(y, "yaml") || !ASSERT_OK(state_read(&before), "state before"))
		goto out;
	ASSERT_EQ(parse(y, &cfg, &e), -EINVAL, "257 written rules");
	ASSERT_EQ(e.line, 3 + FG_MAX_FILE_RULES, "the line of rule 257");
	ASSERT_STR_CONTAINS(e.msg,
			    "too many rules (at most 256, besides the implicit fragments rule)",
			    "message");
	ASSERT_EQ(apply_yaml(y, why), -EINVAL, "a reload of it");
	/* apply's own check, for a config that did not come from the compiler */
	free(y);
	y = rules_yaml("new", FG_MAX_FILE_RULES);
	if (!ASSERT_TRUE(y, "yaml") || !ASSERT_OK(parse(y, &cfg, &e), "256 rules"))
		goto out;
	cfg.pol.nrules = FG_MAX_RULES + 1;
	ASSERT_EQ(fg_policy_apply(&maps, &cfg, NULL, why), -E2BIG, "apply: FG_MAX_RULES + 1 rules");
	ASSERT_STR_CONTAINS(why, "policy has 258 rules, at most 257", "apply's reason");
	cfg.pol.nrules = FG_MAX_RULES;
	fg_config_free(&cfg);
	if (!ASSERT_OK(state_read(&after), "state after"))
		goto out;
	ASSERT_EQ(after.ctl.slot, before.ctl.slot, "the same slot");
	ASSERT_EQ(after.version, before.version, "the same policy version");
	ASSERT_EQ(memcmp(after.names, before.names, sizeof(after.names)), 0, "fg_names unchanged");
	ASSERT_EQ(memcmp(after.rows, before.rows, sizeof(after.rows)), 0, "fg_stats unchanged");
out:
	free(y);
}

static void test_rename_all_256(void)
{
	char why[FG_WHY_LEN] = "", *y = rules_yaml("new", FG_MAX_FILE_RULES);
	int ids[FG_MAX_FILE_RULES], frag, high = 0, reused = 0;
	__u64 frag_pass;

	if (!ASSERT_TRUE(y, "yaml") || !ASSERT_OK(fg_names_read(&maps, names), "names") ||
	    !ASSERT_GE(frag = id_of("fragments"), 0, "fragments has an id"))
		goto out;
	ASSERT_OK(fg_stats_read(&maps, rows), "stats");
	frag_pass = rows[frag].pkts[FG_OUT_PASS];
	if (!ASSERT_OK(apply_yaml(y, why), why))
		goto out;
	ASSERT_EQ(rules_wrong("new", FG_MAX_FILE_RULES, ids), 0,
		  "renamed rules whose row is not 2 passed, 1 dropped (fresh buckets)");
	for (int i = 0; i < FG_MAX_FILE_RULES; i++) {
		high += ids[i] >= 512;
		reused += ids[i] >= 0 && ids[i] < FG_MAX_RULES;
	}
	ASSERT_EQ(reused, 0, "no new rule took an id the old policy held at the flip");
	ASSERT_EQ(high, 1, "id 512 (257 + 256 - 1): past the old FG_MAX_IDS");
	ASSERT_EQ(id_of("old0"), -1, "the old names are freed");
	ASSERT_EQ(id_of("fragments"), frag, "fragments keeps its id");
	ASSERT_OK(send_udp(1000, 64), "a non-first fragment");
	ASSERT_OK(fg_stats_read(&maps, rows), "stats");
	ASSERT_EQ(rows[frag].pkts[FG_OUT_PASS], frag_pass + 1, "fragments keeps counting");
out:
	free(y);
}

/* fg_stats_read and fg_names_read (batch) against one lookup per row. */
static void test_batch_read_matches_rows(void)
{
	struct fg_stats *pc = calloc((size_t)maps.ncpus, sizeof(*pc)), sum;
	struct fg_name nm;
	int wrong = 0;

	if (!ASSERT_TRUE(pc, "buffer") || !ASSERT_OK(fg_stats_read(&maps, rows), "batch") ||
	    !ASSERT_OK(fg_names_read(&maps, names), "names"))
		goto out;
	for (__u32 r = 0; r < FG_NROWS; r++) {
		memset(&sum, 0, sizeof(sum));
		if (fg_array_read(&maps, FGM_STATS, r, pc))
			wrong++;
		for (int c = 0; c < maps.ncpus; c++) {
			for (int o = 0; o < FG_OUT_MAX; o++)
				sum.pkts[o] += pc[c].pkts[o];
			sum.bytes[FG_OUT_PASS] += pc[c].bytes[FG_OUT_PASS];
		}
		wrong += memcmp(sum.pkts, rows[r].pkts, sizeof(sum.pkts)) ||
			 sum.bytes[FG_OUT_PASS] != rows[r].bytes[FG_OUT_PASS];
	}
	ASSERT_EQ(wrong, 0, "stats rows that differ from a lookup of the row");
	wrong = 0;
	for (__u32 i = 0; i < FG_MAX_IDS; i++)
		wrong += fg_array_read(&maps, FGM_NAMES, i, &nm) ||
			 memcmp(&nm, &names[i], sizeof(nm));
	ASSERT_EQ(wrong, 0, "names that differ from a lookup of the id");
	/* a batch that starts in the middle: row 512, ncpus values */
	memset(&sum, 0, sizeof(sum));
	if (ASSERT_OK(fg_array_read_rows(&maps, FGM_STATS, 512, 1, pc), "row 512 alone"))
		for (int c = 0; c < maps.ncpus; c++)
			sum.pkts[FG_OUT_PASS] += pc[c].pkts[FG_OUT_PASS];
	ASSERT_EQ(sum.pkts[FG_OUT_PASS], rows[512].pkts[FG_OUT_PASS],
		  "row 512 from a batch that starts there");
	ASSERT_EQ(rows[512].pkts[FG_OUT_PASS], 2, "row 512: a renamed rule's two passes");
	ASSERT_EQ(fg_array_read_rows(&maps, FGM_NAMES, FG_MAX_IDS - 2, 4, names), -ENOENT,
		  "a range past the map's end");
out:
	free(pc);
}

int main(int argc, char **argv)
{
	int err;

	if (fg_test_init_root(argc, argv, "rules256", "needs root to create BPF maps"))
		return 0;
	skel = floodgate_bpf__open_and_load(); /* the map definitions' sizes: 8192 sets a family */
	if (!skel)
		return FG_FAIL_ALL("setup", "skeleton load: %s", strerror(errno));
	err = fg_maps_scratch(&maps, skel, tmpdir);
	if (err) { /* the process ends: whatever it opened goes with it */
		err = FG_FAIL_ALL("setup", "scratch maps: %s", strerror(-err));
	} else {
		FG_RUN(test_256_rules_load_and_limit);
		FG_RUN(test_257_refused_changes_nothing);
		FG_RUN(test_rename_all_256);
		FG_RUN(test_batch_read_matches_rows);
		err = fg_test_summary();
		fg_maps_close(&maps);
	}
	floodgate_bpf__destroy(skel);
	rmdir(tmpdir);
	return err;
}
