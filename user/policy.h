/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Policy files: YAML (libyaml) -> struct fg_config, a validated, compiled
 * policy that userspace can write into the maps. Nothing here touches BPF.
 */
#ifndef FG_POLICY_H
#define FG_POLICY_H

#include <stddef.h>
#include <stdio.h>
#include "floodgate.h"

enum fg_xdp_mode {
	FG_XDP_AUTO = 0,	/* native, else generic */
	FG_XDP_NATIVE = 1,
	FG_XDP_SKB = 2,
};

/* An error with its place in the file; line and col are 1-based, 0 when
 * the error is not tied to a place (file unreadable, too large). */
struct fg_err {
	char file[256];
	int line;
	int col;
	char msg[512];
};

/* A flattened allow/deny/set prefix, ready for fg_pfx4/fg_pfx6. */
struct fg_pfx_entry {
	__u8 family;		/* 4 or 6 */
	__u8 plen;		/* 0..32 or 0..128 */
	__u8 pad[2];
	__u8 addr[16];		/* network order, masked; IPv4 in addr[0..3] */
	__u32 list;		/* enum fg_list */
	__u32 sets;		/* bit per source set */
};

/* What the operator wrote for a limit, for `check` and logs. */
struct fg_limit_src {
	int set;		/* 0: no such limit */
	double rate;		/* per second, in cost units */
	double burst;		/* cost units */
};

struct fg_rule_src {
	char name[FG_NAME_LEN];
	int line;		/* where the rule starts */
	struct fg_limit_src per_source, aggregate, overflow;
	int plen4, plen6;
	int implicit;		/* 1 for the built-in "fragments" rule */
};

#define FG_MAX_FILE_SIZE	(16u << 20)	/* policy files larger are refused */
/* FG_MAX_PREFIXES (allow + deny + set prefixes) is in floodgate.h */

struct fg_config {
	char path[256];
	char ifaces[FG_MAX_IFS][16];
	int n_ifs;
	int xdp_mode;			/* enum fg_xdp_mode */
	int mode;			/* enum fg_mode, global */
	__u64 max_sources;		/* size of fg_src4 and of fg_src6 */
	char metrics[128];		/* "host:port" for Prometheus, "" = off */
	int detach_on_exit;		/* SIGTERM detaches and unpins (default 1) */
	/* compiled policy: rules[i].id and .gen are left 0, the daemon
	 * assigns them by name; ins is left 0, see fg_policy_set_admission */
	struct fg_policy pol;
	struct fg_rule_src rules[FG_MAX_RULES];	/* parallel to pol.rules */
	struct fg_pfx_entry *pfx;	/* flattened, malloc'd */
	size_t n_pfx;
	size_t n_allow, n_deny;		/* as written, before flattening */
	struct fg_limit_src admission;	/* explicit new-key limit, if set */
};

/* Parse and validate; 0 or -EINVAL/-ENOMEM/-EFBIG/-errno with *err set. On
 * error nothing in *cfg needs freeing. */
int fg_config_load(const char *path, struct fg_config *cfg, struct fg_err *err);
int fg_config_parse(const char *buf, size_t len, const char *name,
		    struct fg_config *cfg, struct fg_err *err);
void fg_config_free(struct fg_config *cfg);

/* "file:line:col: msg" (or "file: msg") into buf. */
void fg_err_format(const struct fg_err *err, char *buf, size_t len);

/* Print what would be loaded, human readable. */
void fg_config_print(FILE *f, const struct fg_config *cfg);

/*
 * The eviction invariant. New source keys are admitted at most at rate
 * R_ins = (max_sources - slack) / (2 * T_refill), T_refill being the longest
 * time any rule's per-source bucket takes to refill from empty (burst/rate),
 * slack = 2 * 128 * ncpus nodes the LRU may hold in per-CPU free lists. So
 * under any churn an entry lives at least 2 * T_refill after its last use
 * before it can be evicted, by which time its bucket is full again: an
 * eviction gives nothing away. Sets pol->ins; returns the insert rate per
 * second it chose (or the explicit admission limit if the file set one).
 */
double fg_policy_set_admission(struct fg_config *cfg, int ncpus);

/* Build the IPv4 /16 directory (struct fg_dir4) from prefix entries
 * (flattened or not: it mirrors a longest-prefix match over them). */
void fg_dir4_build(const struct fg_pfx_entry *pfx, size_t n, struct fg_dir4 *out);

/* Build the scan start index (struct fg_pidx) of a compiled policy. */
void fg_pidx_build(const struct fg_policy *pol, struct fg_pidx *out);

/* Number parsing helpers (strict: whole string, no overflow). */
int fg_parse_u64(const char *s, __u64 *out);
int fg_parse_duration(const char *s, __u64 *ns);	/* "90s", "5m", "1h", "250ms", "10" = s */

#endif /* FG_POLICY_H */
