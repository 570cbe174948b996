// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fgdump: what the shell tests read from a pin dir besides `floodgate stats
 * --json`, through the project's own library (user/maps/fgmaps.h) and ABI header,
 * so that no test carries a second copy of struct layouts or of fg_hash4.
 *
 *   fgdump [-p DIR] bucket4 ADDR RULE
 *       the IPv4 source bucket of ADDR under the rule named RULE (ADDR is
 *       masked with the rule's prefix, as the XDP program does), one JSON
 *       object: {"rule","id","gen","set","found","tat","drops"}; tat and
 *       drops are null when the source holds no way.
 *   fgdump [-p DIR] bucket6 ADDR RULE
 *       the same for an IPv6 source in fg_src6, with "key" (its digest,
 *       hex) and "who" (the way's copy of its owner, null when none or
 *       while it is being claimed).
 *   fgdump [-p DIR] watch ROW STOPFILE [--quiet SECS] [--source ADDR]
 *       sample stats row ROW (rule id; summed over CPUs) about every
 *       0.2 ms, one line per sample:
 *           BEFORE_NS AFTER_NS TOTAL PASS DROP COARSE_NS TAT
 *       BEFORE/AFTER: CLOCK_MONOTONIC around the counter read; TOTAL: all
 *       outcomes; COARSE_NS: CLOCK_MONOTONIC_COARSE (the program's clock);
 *       TAT: the bucket of --source under rule ROW (0 when it holds no
 *       way, -1 when it cannot be read; 0 without --source). Stops once
 *       STOPFILE exists and TOTAL has not moved for SECS (default 0.3),
 *       or on SIGTERM/SIGINT.
 *
 * Exit status: 0, 1 on an error, 2 on a usage error.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/resource.h>
#include <bpf/bpf.h>
#include <json-c/json.h>

#include "floodgate.h"
#include "maps/fgmaps.h"
#include "lib/opts.h"
#include "lib/sysutil.h"

#define WATCH_SLEEP_NS 200000L /* between two samples */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Where one IPv4 source's bucket lives: its set in fg_src4 and its key word. */
struct src4_ref {
	int fd;
	__u32 set;
	__u64 key;
	__u16 gen;
};

static __u64 clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static int parse_u32(const char *s, __u32 max, __u32 *out)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9') /* no sign, no space */
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = (__u32)v;
	return 0;
}

/* The rule id of NAME from fg_names, -ENOENT if no rule holds that name. */
static int rule_id(struct fg_maps *m, const char *name, __u32 *id)
{
	struct fg_name names[FG_MAX_IDS];
	int err = fg_names_read(m, names);

	if (err)
		return err;
	for (__u32 i = 0; i < FG_MAX_IDS; i++) {
		names[i].name[FG_NAME_LEN - 1] = 0;
		if (names[i].in_use && !strcmp(names[i].name, name)) {
			*id = i;
			return 0;
		}
	}
	return -ENOENT;
}

/* The active policy's rule with id (a copy in *out), -ENOENT if none. */
static int active_rule(struct fg_maps *m, __u32 id, struct fg_rule *out)
{
	static struct fg_policy pol; /* too large for the stack; fgdump is one thread */
	int err = fg_policy_read_active(m, &pol);

	if (err)
		return err;
	for (__u32 r = 0; r < pol.nrules && r < FG_MAX_RULES; r++) {
		if (pol.rules[r].id == id) {
			*out = pol.rules[r];
			return 0;
		}
	}
	return -ENOENT;
}

/* What a source key of ADDR (IPv4 or IPv6, by family) under rule id is made
 * of: ADDR's bytes into a, the active rule and fg_ctl, its table size checked.
 * 0, -EINVAL (ADDR or id), -ENOENT (no such rule), -EPROTO or -errno. */
static int key_parts(struct fg_maps *m, int family, const char *addr, __u32 id, void *a,
		     struct fg_rule *rule, struct fg_ctl *ctl)
{
	bool v4 = family == AF_INET;
	int err;

	if (inet_pton(family, addr, a) != 1 || id >= FG_MAX_IDS)
		return -EINVAL;
	err = active_rule(m, id, rule);
	if (!err)
		err = fg_ctl_read(m, ctl);
	if (err)
		return err;
	if (v4 ? ctl->src4_bits < FG_SRC4_MIN_BITS || ctl->src4_bits > FG_SRC4_MAX_BITS :
		 ctl->src6_bits < FG_SRC6_MIN_BITS || ctl->src6_bits > FG_SRC6_MAX_BITS)
		return -EPROTO;
	return 0;
}

/* The set and key word of ADDR under rule id, from the active policy (mask,
 * generation) and fg_ctl (seed, table size), as the XDP program forms them. */
static int src4_locate(struct fg_maps *m, const char *addr, __u32 id, struct src4_ref *ref)
{
	union {
		struct fg_wkey4 s;
		__u64 u;
	} k = {};
	struct fg_rule rule;
	struct fg_ctl ctl;
	__be32 a;
	int err;

	err = key_parts(m, AF_INET, addr, id, &a, &rule, &ctl);
	if (err)
		return err;
	k.s.addr = a & rule.mask4;
	k.s.rule = (__u16)(FG_WKEY4_USED | id);
	k.s.gen = rule.gen;
	ref->fd = m->fd[FGM_SRC4];
	ref->set = fg_hash4(k.u, ctl.seed4, ctl.src4_bits);
	ref->key = k.u;
	ref->gen = rule.gen;
	return 0;
}

/* The way of ref in its set: 0 and *found, or 0 and !*found, or -errno. */
static int src4_read(const struct src4_ref *ref, struct fg_bucket *b, bool *found)
{
	struct fg_set4 set;

	*found = false;
	if (bpf_map_lookup_elem(ref->fd, &ref->set, &set))
		return -errno;
	for (int w = 0; w < FG_WAYS4; w++) {
		__u64 kw;

		memcpy(&kw, &set.key[w], sizeof(kw));
		if (kw == ref->key) {
			b->tat = set.tat[w];
			b->drops = set.drops[w];
			*found = true;
			return 0;
		}
	}
	return 0;
}

static int cmd_bucket4(struct fg_maps *m, const char *addr, const char *rule)
{
	struct fg_bucket b = {};
	struct src4_ref ref;
	struct json_object *o;
	bool found;
	__u32 id;
	int err;

	err = rule_id(m, rule, &id);
	if (!err)
		err = src4_locate(m, addr, id, &ref);
	if (!err)
		err = src4_read(&ref, &b, &found);
	if (err)
		return err;
	o = json_object_new_object();
	if (!o)
		return -ENOMEM;
	json_object_object_add(o, "rule", json_object_new_string(rule));
	json_object_object_add(o, "id", json_object_new_int64(id));
	json_object_object_add(o, "gen", json_object_new_int64(ref.gen));
	json_object_object_add(o, "set", json_object_new_int64(ref.set));
	json_object_object_add(o, "found", json_object_new_boolean(found));
	json_object_object_add(o, "tat", found ? json_object_new_int64((int64_t)b.tat) : NULL);
	json_object_object_add(o, "drops", found ? json_object_new_int64((int64_t)b.drops) : NULL);
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return 0;
}

struct watch_opts {
	__u32 row;
	const char *stopfile;
	__u64 quiet_ns;
	const char *source; /* NULL: no bucket */
};

static int cmd_watch(struct fg_maps *m, const struct watch_opts *o)
{
	const struct timespec nap = { .tv_nsec = WATCH_SLEEP_NS };
	struct src4_ref ref;
	__u64 last_total = 0, last_change = 0;
	bool changed = false, first = true;
	int err;

	if (o->source) {
		err = src4_locate(m, o->source, o->row, &ref);
		if (err)
			return err;
	}
	/* as close to the packets as the scheduler lets a reader be; where
	 * that is not allowed, sample at normal priority */
	setpriority(PRIO_PROCESS, 0, -20);
	while (!stop) {
		__u64 before, after, coarse, total = 0;
		struct fg_stats row;
		long long tat = 0;

		/* the row and the bucket both between before and after: a reader
		 * interrupted between them (softirqs on a flooded CPU) shows it
		 * in the read time the tests allow for */
		before = clock_ns(CLOCK_MONOTONIC);
		err = fg_stats_read_row(m, o->row, &row);
		if (!err && o->source) {
			struct fg_bucket b;
			bool found;

			if (src4_read(&ref, &b, &found))
				tat = -1;
			else if (found)
				tat = (long long)b.tat;
		}
		after = clock_ns(CLOCK_MONOTONIC);
		if (err)
			return err;
		coarse = clock_ns(CLOCK_MONOTONIC_COARSE);
		for (int i = 0; i < FG_OUT_MAX; i++)
			total += row.pkts[i];
		printf("%llu %llu %llu %llu %llu %llu %lld\n", (unsigned long long)before,
		       (unsigned long long)after, (unsigned long long)total,
		       (unsigned long long)row.pkts[FG_OUT_PASS],
		       (unsigned long long)row.pkts[FG_OUT_DROP], (unsigned long long)coarse, tat);
		if (first) {
			last_total = total;
			first = false;
		} else if (total != last_total) {
			last_total = total;
			last_change = after;
			changed = true;
		}
		if (!access(o->stopfile, F_OK) && (!changed || after - last_change > o->quiet_ns))
			break;
		nanosleep(&nap, NULL);
	}
	return fflush(stdout) ? -errno : 0;
}

/* An IPv6 source's way, found as the XDP program finds it (floodgate.h,
 * struct fg_set6). */
struct src6_ref {
	__u32 set;
	__u64 key;
	__u16 gen;
	bool found;
	struct fg_bucket b;
	bool who_ok; /* the way's copy of its owner is the key's */
	struct fg_who6 who;
};

static int src6_find(struct fg_maps *m, const char *addr, __u32 id, struct src6_ref *ref)
{
	struct fg_who6 who = { .rule = (__u16)id };
	struct fg_rule rule;
	struct fg_ctl ctl;
	struct fg_set6 set;
	int err;

	memset(ref, 0, sizeof(*ref));
	err = key_parts(m, AF_INET6, addr, id, who.addr, &rule, &ctl);
	if (err)
		return err;
	for (int i = 0; i < 4; i++)
		who.addr[i] &= rule.mask6[i];
	who.gen = rule.gen;
	ref->gen = rule.gen;
	ref->key = fg_who6_digest(&who, ctl.seed6);
	ref->set = fg_set6_of(ref->key, ctl.src6_bits);
	if (bpf_map_lookup_elem(m->fd[FGM_SRC6], &ref->set, &set))
		return -errno;
	for (int w = 0; w < FG_WAYS6; w++) {
		if (set.way[w].key != ref->key)
			continue;
		ref->found = true;
		ref->b.tat = set.way[w].tat;
		ref->b.drops = set.drops[w];
		ref->who = set.who[w];
		ref->who_ok = fg_who6_digest(&set.who[w], ctl.seed6) == ref->key;
	}
	return 0;
}

static int cmd_bucket6(struct fg_maps *m, const char *addr, const char *rule)
{
	struct src6_ref ref;
	struct json_object *o, *who = NULL;
	char a[INET6_ADDRSTRLEN], key[24];
	__u32 id;
	int err;

	err = rule_id(m, rule, &id);
	if (!err)
		err = src6_find(m, addr, id, &ref);
	if (err)
		return err;
	o = json_object_new_object();
	if (!o)
		return -ENOMEM;
	if (ref.found && ref.who_ok && inet_ntop(AF_INET6, ref.who.addr, a, sizeof(a))) {
		who = json_object_new_object();
		json_object_object_add(who, "addr", json_object_new_string(a));
		json_object_object_add(who, "rule", json_object_new_int64(ref.who.rule));
		json_object_object_add(who, "gen", json_object_new_int64(ref.who.gen));
	}
	snprintf(key, sizeof(key), "%016llx", (unsigned long long)ref.key);
	json_object_object_add(o, "rule", json_object_new_string(rule));
	json_object_object_add(o, "id", json_object_new_int64(id));
	json_object_object_add(o, "gen", json_object_new_int64(ref.gen));
	json_object_object_add(o, "set", json_object_new_int64(ref.set));
	json_object_object_add(o, "key", json_object_new_string(key));
	json_object_object_add(o, "found", json_object_new_boolean(ref.found));
	json_object_object_add(o, "tat",
			       ref.found ? json_object_new_int64((int64_t)ref.b.tat) : NULL);
	json_object_object_add(o, "drops",
			       ref.found ? json_object_new_int64((int64_t)ref.b.drops) : NULL);
	json_object_object_add(o, "who", who);
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return 0;
}

/* The command line: the pin dir, the command's words, watch's options. */
struct dump_args {
	const char *pin_dir;
	const char *pos[2];
	struct watch_opts w;
};

/* Opens the pin dir, runs fn on it with what, closes it: the exit status, after
 * saying what failed (fn's -ENOENT as missing). */
static int with_maps(const struct dump_args *a, const char *cmd, const char *missing,
		     int (*fn)(struct fg_maps *m, const struct dump_args *a, int what), int what)
{
	const char *dir = fg_pin_dir_choose(a->pin_dir);
	char why[FG_WHY_LEN] = "";
	struct fg_maps m;
	int err;

	err = fg_maps_open(&m, dir, why);
	if (err) {
		fprintf(stderr, "fgdump: %s: %s\n", dir, why[0] ? why : strerror(-err));
		return 1;
	}
	err = fn(&m, a, what);
	fg_maps_close(&m);
	if (err == -ENOENT)
		fprintf(stderr, "fgdump %s: %s in the active policy\n", cmd, missing);
	else if (err)
		fprintf(stderr, "fgdump %s: %s\n", cmd, strerror(-err));
	return err ? 1 : 0;
}

static int bucket(struct fg_maps *m, const struct dump_args *a, int family)
{
	return family == AF_INET ? cmd_bucket4(m, a->pos[0], a->pos[1]) :
				   cmd_bucket6(m, a->pos[0], a->pos[1]);
}

static int run_bucket(const struct dump_args *a, int family)
{
	char missing[FG_NAME_LEN + 32];

	snprintf(missing, sizeof(missing), "no rule named \"%s\"", a->pos[1]);
	return with_maps(a, family == AF_INET ? "bucket4" : "bucket6", missing, bucket, family);
}
static int run_bucket4(void *cfg)
{
	return run_bucket(cfg, AF_INET);
}
static int run_bucket6(void *cfg)
{
	return run_bucket(cfg, AF_INET6);
}

static int watch(struct fg_maps *m, const struct dump_args *a, int unused)
{
	(void)unused;
	return cmd_watch(m, &a->w);
}

static int run_watch(void *cfg)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
	struct dump_args *a = cfg;
	char missing[48];
	struct in_addr ad;

	if (parse_u32(a->pos[0], FG_NROWS - 1, &a->w.row)) {
		fprintf(stderr, "fgdump: watch: \"%s\" is not a stats row (0..%d)\n", a->pos[0],
			FG_NROWS - 1);
		return FG_EXIT_USAGE;
	}
	if (a->w.source && (a->w.row >= FG_MAX_IDS || inet_pton(AF_INET, a->w.source, &ad) != 1)) {
		fprintf(stderr, "fgdump: watch: --source needs an IPv4 address and a rule row\n");
		return FG_EXIT_USAGE;
	}
	a->w.stopfile = a->pos[1];
	snprintf(missing, sizeof(missing), "no rule with id %u", a->w.row);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	return with_maps(a, "watch", missing, watch, 0);
}

static int opt_quiet(const struct fg_opt *opt, const char *val, void *cfg, char *why)
{
	struct dump_args *a = cfg;
	char *end;
	double s;

	(void)opt;
	errno = 0;
	s = strtod(val, &end);
	if (errno || end == val || *end || !(s >= 0 && s <= 60))
		return fg_opt_fail(why, "\"%s\" is not 0..60 seconds", val);
	a->w.quiet_ns = (__u64)(s * 1e9);
	return 0;
}

#define A struct dump_args
static const struct fg_opt dump_opts[] = {
	FG_OPT_STR("pin-dir", 'p', A, pin_dir, "DIR",
		   "pin dir (default $" FG_PIN_DIR_ENV ", else " FG_PIN_DIR_DEFAULT ")"),
	FG_OPT_HELP_END("help for the command"),
};
static const struct fg_opt watch_opts[] = {
	FG_OPT_FUNC(
		"quiet", 0, opt_quiet, 0, "SECS",
		"stop once STOPFILE exists and the row has not moved for SECS (default 0.3, at most 60)"),
	FG_OPT_STR("source", 0, A, w.source, "ADDR", "also sample ADDR's IPv4 bucket of rule ROW"),
	FG_OPT_END,
};
#undef A

static const struct fg_cmd dump_cmds[] = {
	{ "bucket4", "ADDR RULE", "ADDR's IPv4 source bucket under the rule named RULE (JSON)", 2,
	  2, NULL, run_bucket4 },
	{ "bucket6", "ADDR RULE", "the same for an IPv6 source, with its key and owner", 2, 2, NULL,
	  run_bucket6 },
	{ "watch", "ROW STOPFILE [--quiet SECS] [--source ADDR]",
	  "sample stats row ROW about every 0.2 ms, until STOPFILE exists and the row is quiet", 2,
	  2, watch_opts, run_watch },
	{ NULL },
};

FG_DEFINE_PROG(dump_prog, "fgdump", "[-p DIR] COMMAND [ARGS]", dump_opts, .cmds = dump_cmds);

int main(int argc, char **argv)
{
	struct dump_args a = { .w.quiet_ns = 300000000ull };
	struct fg_parsed p;
	int rc;

	rc = fg_prog_args(&dump_prog, argc, argv, &a, &p);
	if (rc >= 0)
		return rc;
	a.pos[0] = p.pos[0];
	a.pos[1] = p.pos[1];
	return p.cmd->fn(&a);
}
