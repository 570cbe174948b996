// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * floodgate: the operator CLI. Works straight from the pinned maps, whether
 * floodgated runs or not (after a SIGKILL the filter still enforces and
 * `stats`, `bypass` or `detach` still work).
 *
 * Exit status: 0 ok, 1 runtime failure, 2 bad usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "fgmaps.h"
#include "log.h"
#include "policy.h"

#define EXIT_USAGE	2
#define TOP_SCAN_MAX	(1u << 22)	/* sources kept in memory by `top` */

/* --- declared options ---------------------------------------------------------- */

enum opt_key {
	O_PIN_DIR, O_HELP, O_JSON, O_WATCH, O_N, O_RULE, O_FOR, O_FORCE, O_VERBOSE,
	O_NKEYS,
};

enum arg_kind { ARG_NONE, ARG_REQ, ARG_OPT_NUM };	/* OPT_NUM: "--watch [SECS]" */

struct opt {
	enum opt_key key;
	const char *lname;
	char sname;
	enum arg_kind arg;
	const char *argname;
	const char *help;
};

static const struct opt global_opts[] = {
	{ O_PIN_DIR, "pin-dir", 'p', ARG_REQ, "DIR",
	  "pin dir (default $" FG_PIN_DIR_ENV " or " FG_PIN_DIR_DEFAULT ")" },
	{ O_VERBOSE, "verbose", 'v', ARG_NONE, NULL, "debug output" },
	{ O_HELP, "help", 'h', ARG_NONE, NULL, "help for the command" },
	{ 0 },
};

struct args {
	bool set[O_NKEYS];
	const char *val[O_NKEYS];
	const char *pos[4];
	int npos;
	const char *dir;
};

struct cmd {
	const char *name;
	const char *usage;	/* after the name */
	const char *help;
	int min_pos, max_pos;
	const struct opt *opts;	/* { 0 }-terminated */
	int (*fn)(struct args *a);
};

/* --- helpers --------------------------------------------------------------------- */

static int open_maps(struct args *a, struct fg_maps *m)
{
	char why[FG_WHY_LEN] = "";
	int err = fg_maps_open(m, a->dir, why);

	if (err == -ENOENT)
		pr_warn("no floodgate pin dir at %s: is floodgated running? "
			"(see --pin-dir, $" FG_PIN_DIR_ENV ")", a->dir);
	else if (err)
		pr_warn("%s", why[0] ? why : strerror(-err));
	return err;
}

static int lock_maps(struct fg_maps *m)
{
	int err = fg_maps_lock(m, 5000);

	if (err)
		pr_warn("cannot lock %s: %s (another floodgate command or a reload is running)",
			m->dir, strerror(-err));
	return err;
}

static const char *who(char *buf, size_t len)
{
	const char *sudo = getenv("SUDO_USER");
	struct passwd *pw = getpwuid(getuid());
	const char *login = getlogin();

	snprintf(buf, len, "uid %u (%s)%s%s", getuid(), pw ? pw->pw_name : "?",
		 sudo ? " via sudo by " : login ? " login " : "", sudo ? sudo : login ? login : "");
	return buf;
}

static void fmt_num(char *buf, size_t len, double v)
{
	static const char *suf[] = { "", "k", "M", "G", "T", "P" };
	int i = 0;

	while (v >= 10000 && i < 5) {
		v /= 1000;
		i++;
	}
	if (i)
		snprintf(buf, len, "%.1f%s", v, suf[i]);
	else
		snprintf(buf, len, "%.0f", v);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static const char *row_name(const struct fg_name *names, int r)
{
	if (r == FG_ROW_GLOBAL)
		return "_global";
	return names[r].in_use ? names[r].name : NULL;
}

static int mask_plen(const __u8 *mask, int bytes)
{
	int n = 0;

	for (int i = 0; i < bytes; i++)
		n += __builtin_popcount(mask[i]);
	return n;
}

/* --- status ---------------------------------------------------------------------- */

static int cmd_status(struct args *a)
{
	struct fg_maps m;
	struct fg_ctl ctl;
	struct fg_meta meta;
	struct fg_policy *pol = NULL;
	struct fg_name names[FG_MAX_IDS];
	size_t n4 = 0, n6 = 0;
	__u64 now = fg_now_ns();
	int err;

	err = open_maps(a, &m);
	if (err)
		return 1;
	pol = malloc(sizeof(*pol));
	if (!pol || (err = fg_ctl_read(&m, &ctl)) || (err = fg_meta_read(&m, &meta)) ||
	    (err = fg_policy_read_active(&m, pol)) || (err = fg_names_read(&m, names)) ||
	    (err = fg_sources_count(&m, &n4, &n6))) {
		pr_warn("reading %s: %s", a->dir, strerror(err ? -err : ENOMEM));
		goto out;
	}
	printf("pin dir:   %s (ABI %u)\n", a->dir, ctl.abi);
	if (fg_daemon_alive(meta.pid)) {
		time_t t = (time_t)meta.started;
		char ts[64];

		strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", localtime(&t));
		printf("daemon:    floodgated pid %u, running since %s\n", meta.pid, ts);
	} else {
		printf("daemon:    not running%s\n", meta.n_ifs ?
		       " (the pinned filter keeps enforcing the last policy)" : "");
	}
	printf("config:    %s\n", meta.config[0] ? meta.config : "-");
	for (__u32 i = 0; i < meta.n_ifs && i < FG_MAX_IFS; i++) {
		char path[512];
		bool pinned;

		meta.ifs[i].name[sizeof(meta.ifs[i].name) - 1] = 0;
		snprintf(path, sizeof(path), "%s/" FG_LINK_PREFIX "%s", a->dir, meta.ifs[i].name);
		pinned = access(path, F_OK) == 0;
		if (pinned) {
			/* a pinned link outlives its interface: the kernel severs
			 * it (ifindex 0) when the device is deleted */
			struct bpf_link_info li = {};
			__u32 ll = sizeof(li);
			int lfd = bpf_obj_get(path);

			if (lfd >= 0 && !bpf_obj_get_info_by_fd(lfd, &li, &ll) && !li.xdp.ifindex)
				pinned = false;
			if (lfd >= 0)
				close(lfd);
		}
		printf("interface: %s (ifindex %u) %s XDP%s\n", meta.ifs[i].name, meta.ifs[i].ifindex,
		       meta.ifs[i].xdp_mode == 1 ? "native" : meta.ifs[i].xdp_mode == 2 ?
		       "generic" : "no", pinned ? ", link pinned" :
		       ", NOT attached (interface deleted, or no pinned link)");
	}
	printf("mode:      %s\n", ctl.mode == FG_MODE_SHADOW ? "shadow (nothing is dropped)" :
	       "enforce");
	if (ctl.bypass && ctl.bypass_until && ctl.bypass_until <= now)
		printf("bypass:    off (expired %.0f s ago)\n", (now - ctl.bypass_until) / 1e9);
	else if (ctl.bypass && ctl.bypass_until)
		printf("bypass:    ON for another %.0f s: everything passes\n",
		       (ctl.bypass_until - now) / 1e9);
	else
		printf("bypass:    %s\n", ctl.bypass ? "ON until switched off: everything passes"
		       : "off");
	printf("policy:    version %llu, slot %u, %u rules, default %s\n",
	       (unsigned long long)pol->version, ctl.slot, pol->nrules,
	       pol->default_verdict ? "drop" : "pass");
	for (__u32 i = 0; i < pol->nrules && i < FG_MAX_RULES; i++) {
		const struct fg_rule *r = &pol->rules[i];
		const char *nm = r->id < FG_MAX_IDS && names[r->id].in_use ? names[r->id].name : "?";

		printf("  %-24s %s%s\n", nm,
		       r->action == FG_ACT_PASS ? "pass" : r->action == FG_ACT_DROP ? "drop" : "limit",
		       r->mode == FG_MODE_SHADOW ? " (shadow)" : "");
	}
	printf("sources:   %zu IPv4, %zu IPv6 (max %llu each)\n", n4, n6,
	       (unsigned long long)meta.max_sources);
out:
	free(pol);
	fg_maps_close(&m);
	return err ? 1 : 0;
}

/* --- stats ----------------------------------------------------------------------- */

static void stats_json(const struct fg_stats *rows, const struct fg_name *names)
{
	bool first = true;

	printf("{\"rules\":[");
	for (int r = 0; r < FG_NROWS; r++) {
		const char *nm = row_name(names, r);

		if (!nm)
			continue;
		printf("%s{\"rule\":", first ? "" : ",");
		first = false;
		json_str(stdout, nm);
		printf(",\"id\":%d,\"packets\":{", r);
		for (int o = 0; o < FG_OUT_MAX; o++)
			printf("%s\"%s\":%llu", o ? "," : "", fg_outcome_names[o],
			       (unsigned long long)rows[r].pkts[o]);
		printf("},\"bytes\":{");
		for (int o = 0; o < FG_OUT_MAX; o++)
			printf("%s\"%s\":%llu", o ? "," : "", fg_outcome_names[o],
			       (unsigned long long)rows[r].bytes[o]);
		printf("},\"events\":{");
		for (int e = 0; e < FG_EV_MAX; e++)
			printf("%s\"%s\":%llu", e ? "," : "", fg_event_names[e],
			       (unsigned long long)rows[r].ev[e]);
		printf("}}");
	}
	printf("]}\n");
}

/* rates: NULL prev prints totals; otherwise per-second rates over dt */
static void stats_table(const struct fg_stats *rows, const struct fg_stats *prev, double dt,
			const struct fg_name *names)
{
	char b[32];

	printf("%-24s", prev ? "RULE (per second)" : "RULE (packets)");
	for (int o = 0; o < FG_OUT_MAX; o++)
		printf(" %9s", fg_outcome_names[o]);
	printf("\n");
	for (int r = 0; r < FG_NROWS; r++) {
		const char *nm = row_name(names, r);

		if (!nm)
			continue;
		printf("%-24s", nm);
		for (int o = 0; o < FG_OUT_MAX; o++) {
			double v = rows[r].pkts[o];

			if (prev)
				v = (rows[r].pkts[o] - prev[r].pkts[o]) / dt;
			fmt_num(b, sizeof(b), v);
			printf(" %9s", b);
		}
		printf("\n");
	}
	for (int r = 0; r < FG_NROWS && !prev; r++) {
		const char *nm = row_name(names, r);
		bool any = false;

		if (!nm)
			continue;
		for (int e = 0; e < FG_EV_MAX; e++) {
			if (!rows[r].ev[e])
				continue;
			printf("%s%s=%llu", any ? " " : "events ", fg_event_names[e],
			       (unsigned long long)rows[r].ev[e]);
			if (!any)
				any = true;
		}
		if (any)
			printf(" (%s)\n", nm);
	}
}

static int cmd_stats(struct args *a)
{
	static struct fg_stats rows[FG_NROWS], prev[FG_NROWS];
	struct fg_name names[FG_MAX_IDS];
	struct fg_maps m;
	__u64 secs = 1;
	int err;

	if (a->set[O_WATCH] && a->val[O_WATCH] &&
	    (fg_parse_u64(a->val[O_WATCH], &secs) || !secs || secs > 3600)) {
		pr_warn("--watch: \"%s\" is not a number of seconds (1..3600)", a->val[O_WATCH]);
		return EXIT_USAGE;
	}
	err = open_maps(a, &m);
	if (err)
		return 1;
	if ((err = fg_names_read(&m, names)) || (err = fg_stats_read(&m, rows))) {
		pr_warn("reading counters: %s", strerror(-err));
		goto out;
	}
	if (!a->set[O_WATCH]) {
		if (a->set[O_JSON])
			stats_json(rows, names);
		else
			stats_table(rows, NULL, 0, names);
		goto out;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (;;) {
		__u64 t0 = fg_now_ns(), t1;

		memcpy(prev, rows, sizeof(rows));
		sleep((unsigned int)secs);
		if ((err = fg_names_read(&m, names)) || (err = fg_stats_read(&m, rows))) {
			pr_warn("reading counters: %s (pin dir removed?)", strerror(-err));
			goto out;
		}
		t1 = fg_now_ns();
		if (a->set[O_JSON]) {
			stats_json(rows, names);
		} else {
			time_t now = time(NULL);
			char ts[32];

			strftime(ts, sizeof(ts), "%H:%M:%S", localtime(&now));
			printf("--- %s\n", ts);
			stats_table(rows, prev, (t1 - t0) / 1e9, names);
		}
		fflush(stdout);
	}
out:
	fg_maps_close(&m);
	return err ? 1 : 0;
}

/* --- top ------------------------------------------------------------------------- */

static int cmp_src(const void *x, const void *y)
{
	const struct fg_source *a = x, *b = y;

	if (a->drops != b->drops)
		return a->drops < b->drops ? 1 : -1;
	return (int)b->limited - (int)a->limited;
}

static int cmd_top(struct args *a)
{
	struct fg_name names[FG_MAX_IDS];
	struct fg_policy *pol = malloc(sizeof(*pol));
	struct fg_source *src = NULL;
	struct fg_src_scan scan;
	struct fg_maps m;
	__u64 top_n = 10;
	size_t n = 0;
	int err;

	if (!pol)
		return 1;
	if (a->set[O_N] && (fg_parse_u64(a->val[O_N], &top_n) || !top_n || top_n > 100000)) {
		pr_warn("-n: \"%s\" is not a count (1..100000)", a->val[O_N]);
		free(pol);
		return EXIT_USAGE;
	}
	err = open_maps(a, &m);
	if (err) {
		free(pol);
		return 1;
	}
	if ((err = fg_names_read(&m, names)) || (err = fg_policy_read_active(&m, pol)) ||
	    (err = fg_sources_read(&m, pol, fg_now_ns(), 1, TOP_SCAN_MAX, &src, &n, &scan))) {
		pr_warn("reading sources: %s", strerror(-err));
		goto out;
	}
	if (n)
		qsort(src, n, sizeof(*src), cmp_src);
	if (n > top_n)
		n = top_n;
	if (!a->set[O_JSON])
		printf("%-44s %-20s %12s %s\n", "SOURCE", "RULE", "DROPS(~)", "LIMITED");
	else
		printf("{\"sources\":[");
	for (size_t i = 0; i < n; i++) {
		const struct fg_source *s = &src[i];
		char addr[INET6_ADDRSTRLEN + 16], ab[INET6_ADDRSTRLEN];
		const char *nm = s->rule < FG_MAX_IDS && names[s->rule].in_use &&
				 names[s->rule].gen == s->gen ? names[s->rule].name : "(removed)";
		int plen = s->family == 4 ? 32 : 128;

		for (__u32 r = 0; r < pol->nrules && r < FG_MAX_RULES; r++)
			if (pol->rules[r].id == s->rule && pol->rules[r].gen == s->gen)
				plen = s->family == 4 ?
				       mask_plen((const __u8 *)&pol->rules[r].mask4, 4) :
				       mask_plen((const __u8 *)pol->rules[r].mask6, 16);
		fg_addr_str(s->family, s->addr, ab, sizeof(ab));
		snprintf(addr, sizeof(addr), "%s/%d", ab, plen);
		if (a->set[O_JSON]) {
			printf("%s{\"source\":\"%s\",\"rule\":", i ? "," : "", addr);
			json_str(stdout, nm);
			printf(",\"drops_sampled\":%llu,\"limited\":%s}",
			       (unsigned long long)s->drops, s->limited ? "true" : "false");
		} else {
			printf("%-44s %-20s %12llu %s\n", addr, nm, (unsigned long long)s->drops,
			       s->limited ? "yes" : "no");
		}
	}
	if (a->set[O_JSON])
		printf("],\"throttled_sources\":%zu,\"sources\":%zu}\n", scan.matched,
		       scan.all4 + scan.all6);
	else
		printf("%zu of %zu sources have drops (sampled 1 in %d, so counts are "
		       "approximate; exact totals: floodgate stats)\n", scan.matched,
		       scan.all4 + scan.all6, FG_DROP_SAMPLE);
out:
	free(src);
	free(pol);
	fg_maps_close(&m);
	return err ? 1 : 0;
}

/* --- mode, bypass ---------------------------------------------------------------- */

static int cmd_mode(struct args *a)
{
	char why[FG_WHY_LEN] = "", w[128];
	struct fg_maps m;
	__u32 mode;
	int err;

	if (!strcmp(a->pos[0], "enforce"))
		mode = FG_MODE_ENFORCE;
	else if (!strcmp(a->pos[0], "shadow"))
		mode = FG_MODE_SHADOW;
	else {
		pr_warn("mode: \"%s\": expected enforce or shadow", a->pos[0]);
		return EXIT_USAGE;
	}
	if (open_maps(a, &m))
		return 1;
	err = lock_maps(&m);
	if (err)
		goto out;
	if (a->set[O_RULE])
		err = fg_rule_set_mode(&m, a->val[O_RULE], mode, why);
	else
		err = fg_set_mode(&m, mode);
	if (err) {
		pr_warn("mode: %s", why[0] ? why : strerror(-err));
		goto out;
	}
	who(w, sizeof(w));
	if (a->set[O_RULE]) {
		pr_info("rule %s is now in %s mode (until the next reload from the file)",
			a->val[O_RULE], a->pos[0]);
		fg_log_audit("rule %s set to %s mode by %s", a->val[O_RULE], a->pos[0], w);
	} else {
		pr_info("global mode is now %s%s", a->pos[0],
			mode == FG_MODE_SHADOW ? ": nothing is dropped, would-be drops count as shadow"
			: "");
		fg_log_audit("global mode set to %s by %s", a->pos[0], w);
	}
out:
	fg_maps_close(&m);
	return err ? 1 : 0;
}

static int cmd_bypass(struct args *a)
{
	struct fg_maps m;
	__u64 dur = 0, until = 0;
	char w[128];
	bool on;
	int err;

	if (!strcmp(a->pos[0], "on"))
		on = true;
	else if (!strcmp(a->pos[0], "off"))
		on = false;
	else {
		pr_warn("bypass: \"%s\": expected on or off", a->pos[0]);
		return EXIT_USAGE;
	}
	if (a->set[O_FOR]) {
		if (!on) {
			pr_warn("bypass off takes no --for");
			return EXIT_USAGE;
		}
		if (fg_parse_duration(a->val[O_FOR], &dur) || !dur) {
			pr_warn("--for: \"%s\" is not a duration (e.g. 90s, 5m, 1h)", a->val[O_FOR]);
			return EXIT_USAGE;
		}
		until = fg_now_ns() + dur;
	}
	if (open_maps(a, &m))
		return 1;
	err = lock_maps(&m);
	if (!err)
		err = fg_set_bypass(&m, on, until);
	if (err) {
		pr_warn("bypass: %s", strerror(-err));
		goto out;
	}
	who(w, sizeof(w));
	if (on && dur) {
		pr_info("bypass ON for %.0f s: every packet passes, nothing is counted per rule",
			dur / 1e9);
		fg_log_audit("bypass ON for %.0f s by %s (pin dir %s)", dur / 1e9, w, a->dir);
	} else if (on) {
		pr_info("bypass ON until 'floodgate bypass off': every packet passes");
		fg_log_audit("bypass ON (no expiry) by %s (pin dir %s)", w, a->dir);
	} else {
		pr_info("bypass off: the policy is enforced again");
		fg_log_audit("bypass off by %s (pin dir %s)", w, a->dir);
	}
out:
	fg_maps_close(&m);
	return err ? 1 : 0;
}

/* --- check, reload, detach --------------------------------------------------------- */

static int cmd_check(struct args *a)
{
	struct fg_config *cfg = calloc(1, sizeof(*cfg));
	struct fg_err e = {};
	char msg[1024];
	int err;

	if (!cfg)
		return 1;
	err = fg_config_load(a->pos[0], cfg, &e);
	if (err) {
		fg_err_format(&e, msg, sizeof(msg));
		fprintf(stderr, "%s\n", msg);
		free(cfg);
		return 1;
	}
	fg_config_print(stdout, cfg);
	fg_config_free(cfg);
	free(cfg);
	return 0;
}

static int cmd_reload(struct args *a)
{
	struct fg_policy *pol = malloc(sizeof(*pol));
	struct fg_config *cfg = calloc(1, sizeof(*cfg));
	struct fg_meta meta;
	struct fg_maps m;
	struct fg_err e = {};
	char msg[1024];
	__u64 v0;
	int err = 1;

	if (!pol || !cfg || open_maps(a, &m)) {
		free(pol);
		free(cfg);
		return 1;
	}
	if (fg_meta_read(&m, &meta) || fg_policy_read_active(&m, pol)) {
		pr_warn("reading %s failed", a->dir);
		goto out;
	}
	if (!fg_daemon_alive(meta.pid)) {
		pr_warn("floodgated is not running for %s: nothing to reload "
			"(start it, e.g. systemctl start floodgated)", a->dir);
		goto out;
	}
	meta.config[sizeof(meta.config) - 1] = 0;
	/* the same check the daemon will do, with the error where the operator is */
	if (meta.config[0] && fg_config_load(meta.config, cfg, &e)) {
		fg_err_format(&e, msg, sizeof(msg));
		pr_warn("%s", msg);
		pr_warn("not reloading: the running policy stays");
		goto out;
	}
	fg_config_free(cfg);
	v0 = pol->version;
	if (kill((pid_t)meta.pid, SIGHUP)) {
		pr_warn("cannot signal floodgated pid %u: %s", meta.pid, strerror(errno));
		goto out;
	}
	for (int i = 0; i < 100; i++) {
		usleep(50000);
		if (!fg_policy_read_active(&m, pol) && pol->version != v0) {
			printf("reloaded %s: policy version %llu\n", meta.config,
			       (unsigned long long)pol->version);
			err = 0;
			goto out;
		}
	}
	pr_warn("floodgated (pid %u) did not apply a new policy within 5 s; see its log "
		"(journalctl -u floodgated)", meta.pid);
out:
	free(pol);
	free(cfg);
	fg_maps_close(&m);
	return err;
}

static int cmd_detach(struct args *a)
{
	struct fg_meta meta = {};
	struct fg_maps m;
	char why[FG_WHY_LEN] = "";
	int err;

	if (access(a->dir, F_OK)) {
		pr_warn("no floodgate pin dir at %s: nothing to detach", a->dir);
		return 1;
	}
	/* a pin dir we cannot vet (other version, half removed) may still be removed */
	if (!fg_maps_open(&m, a->dir, why)) {
		fg_meta_read(&m, &meta);
		fg_maps_close(&m);
	} else {
		pr_debug("%s", why);
	}
	if (fg_daemon_alive(meta.pid)) {
		if (!a->set[O_FORCE]) {
			pr_warn("floodgated (pid %u) is running: stop it instead (it detaches on exit), "
				"or use --force to stop it and detach", meta.pid);
			return 1;
		}
		kill((pid_t)meta.pid, SIGTERM);
		for (int i = 0; i < 100 && fg_daemon_alive(meta.pid); i++)
			usleep(50000);
		if (fg_daemon_alive(meta.pid)) {
			pr_warn("floodgated (pid %u) did not exit within 5 s", meta.pid);
			return 1;
		}
		if (access(a->dir, F_OK)) {
			pr_info("floodgated detached and removed %s", a->dir);
			return 0;
		}
	}
	why[0] = 0;
	err = fg_pin_dir_remove(a->dir, why);
	if (err) {
		pr_warn("detach: %s", why[0] ? why : strerror(-err));
		return 1;
	}
	for (__u32 i = 0; i < meta.n_ifs && i < FG_MAX_IFS; i++) {
		__u32 prog_id = 0;

		if (!bpf_xdp_query_id(meta.ifs[i].ifindex, 0, &prog_id) && prog_id)
			pr_warn("%.16s: an XDP program (id %u) is still attached: not floodgate's "
				"pinned link, or held open by another process", meta.ifs[i].name, prog_id);
	}
	pr_info("detached and removed %s", a->dir);
	return 0;
}

/* --- the table --------------------------------------------------------------------- */

static const struct opt stats_opts[] = {
	{ O_JSON, "json", 'j', ARG_NONE, NULL, "JSON output" },
	{ O_WATCH, "watch", 'w', ARG_OPT_NUM, "SECS", "print rates every SECS (default 1)" },
	{ 0 },
};
static const struct opt top_opts[] = {
	{ O_N, "count", 'n', ARG_REQ, "N", "show N sources (default 10)" },
	{ O_JSON, "json", 'j', ARG_NONE, NULL, "JSON output" },
	{ 0 },
};
static const struct opt mode_opts[] = {
	{ O_RULE, "rule", 'r', ARG_REQ, "NAME", "only this rule (until the next reload)" },
	{ 0 },
};
static const struct opt bypass_opts[] = {
	{ O_FOR, "for", 'f', ARG_REQ, "DURATION", "switch off by itself after DURATION (90s, 5m, 1h)" },
	{ 0 },
};
static const struct opt detach_opts[] = {
	{ O_FORCE, "force", 'f', ARG_NONE, NULL, "stop a running floodgated first (SIGTERM)" },
	{ 0 },
};
static const struct opt no_opts[] = { { 0 } };

static const struct cmd cmds[] = {
	{ "status", "", "daemon, interfaces, mode, bypass, policy", 0, 0, no_opts, cmd_status },
	{ "stats", "[--json] [--watch [SECS]]", "per-rule counters (summed over CPUs)", 0, 0,
	  stats_opts, cmd_stats },
	{ "top", "[-n N] [--json]", "most throttled sources", 0, 0, top_opts, cmd_top },
	{ "mode", "enforce|shadow [--rule NAME]", "enforce, or only count would-be drops", 1, 1,
	  mode_opts, cmd_mode },
	{ "bypass", "on [--for DURATION] | off", "kill switch: pass everything", 1, 1,
	  bypass_opts, cmd_bypass },
	{ "check", "FILE", "validate a policy file and print what it compiles to", 1, 1, no_opts,
	  cmd_check },
	{ "reload", "", "make floodgated re-read its policy file", 0, 0, no_opts, cmd_reload },
	{ "detach", "[--force]", "detach from all interfaces and remove the pin dir", 0, 0,
	  detach_opts, cmd_detach },
};
#define N_CMDS (sizeof(cmds) / sizeof(cmds[0]))

static void print_opts(FILE *f, const struct opt *o)
{
	for (; o->lname; o++) {
		char left[48];

		snprintf(left, sizeof(left), "-%c, --%s%s%s%s", o->sname, o->lname,
			 o->arg == ARG_OPT_NUM ? " [" : o->arg ? " " : "", o->argname ? o->argname : "",
			 o->arg == ARG_OPT_NUM ? "]" : "");
		fprintf(f, "  %-26s %s\n", left, o->help);
	}
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: floodgate [--pin-dir DIR] COMMAND [ARGS]\n\nCommands "
		   "(any unique prefix works):\n");
	for (size_t i = 0; i < N_CMDS; i++) {
		char left[64];

		snprintf(left, sizeof(left), "%s %s", cmds[i].name, cmds[i].usage);
		fprintf(f, "  %-40s %s\n", left, cmds[i].help);
	}
	fprintf(f, "\nOptions for every command:\n");
	print_opts(f, global_opts);
	fprintf(f, "\n'floodgate COMMAND --help' shows a command's options.\n");
}

static void cmd_usage(FILE *f, const struct cmd *c)
{
	fprintf(f, "Usage: floodgate %s %s\n%s\n\nOptions:\n", c->name, c->usage, c->help);
	print_opts(f, c->opts);
	print_opts(f, global_opts);
}

static const struct opt *find_opt(const struct opt *tabs[2], const char *l, char s)
{
	for (int t = 0; t < 2; t++)
		for (const struct opt *o = tabs[t]; o->lname; o++)
			if ((l && !strcmp(o->lname, l)) || (!l && o->sname == s))
				return o;
	return NULL;
}

/* Options anywhere among the arguments, "--" ends them. */
static int parse(const struct cmd *c, int argc, char **argv, struct args *a)
{
	const struct opt *tabs[2] = { c ? c->opts : no_opts, global_opts };

	for (int i = 0; i < argc; i++) {
		char *arg = argv[i], lname[32];
		const char *val = NULL;
		const struct opt *o;

		if (!strcmp(arg, "--")) {
			for (i++; i < argc; i++) {
				if (a->npos >= 4)
					return -E2BIG;
				a->pos[a->npos++] = argv[i];
			}
			break;
		}
		if (arg[0] != '-' || !arg[1]) {
			if (a->npos >= 4)
				return -E2BIG;
			a->pos[a->npos++] = arg;
			continue;
		}
		if (arg[1] == '-') {
			const char *eq = strchr(arg + 2, '=');
			size_t l = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);

			if (l >= sizeof(lname))
				l = sizeof(lname) - 1;
			memcpy(lname, arg + 2, l);
			lname[l] = 0;
			o = find_opt(tabs, lname, 0);
			val = eq ? eq + 1 : NULL;
		} else {
			if (arg[2]) {
				fprintf(stderr, "floodgate: unknown option %s\n", arg);
				return -EINVAL;
			}
			o = find_opt(tabs, NULL, arg[1]);
		}
		if (!o) {
			fprintf(stderr, "floodgate: unknown option %s%s%s\n", arg,
				c ? " for " : "", c ? c->name : "");
			return -EINVAL;
		}
		if (o->arg == ARG_REQ && !val) {
			if (i + 1 >= argc) {
				fprintf(stderr, "floodgate: %s needs %s\n", arg, o->argname);
				return -EINVAL;
			}
			val = argv[++i];
		} else if (o->arg == ARG_OPT_NUM && !val && i + 1 < argc &&
			   argv[i + 1][0] >= '0' && argv[i + 1][0] <= '9') {
			val = argv[++i];
		} else if (o->arg == ARG_NONE && val) {
			fprintf(stderr, "floodgate: %s takes no value\n", arg);
			return -EINVAL;
		}
		a->set[o->key] = true;
		a->val[o->key] = val;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct args a;
	const struct cmd *c = NULL;
	int i, nmatch = 0;

	fg_log_init("floodgate", FG_LOG_INFO, false);
	/* global options before the command */
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		}
		if ((!strcmp(argv[i], "--pin-dir") || !strcmp(argv[i], "-p")) && i + 1 < argc) {
			a.val[O_PIN_DIR] = argv[++i];
			a.set[O_PIN_DIR] = true;
		} else if (!strncmp(argv[i], "--pin-dir=", 10)) {
			a.val[O_PIN_DIR] = argv[i] + 10;
			a.set[O_PIN_DIR] = true;
		} else if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			a.set[O_VERBOSE] = true;
		} else {
			fprintf(stderr, "floodgate: unknown option %s before the command\n", argv[i]);
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	for (size_t k = 0; k < N_CMDS; k++) {
		if (!strcmp(cmds[k].name, argv[i])) {
			c = &cmds[k];
			nmatch = 1;
			break;
		}
		if (!strncmp(cmds[k].name, argv[i], strlen(argv[i]))) {
			c = &cmds[k];
			nmatch++;
		}
	}
	if (nmatch != 1) {
		fprintf(stderr, "floodgate: %s command \"%s\"", nmatch ? "ambiguous" : "unknown",
			argv[i]);
		if (nmatch) {
			fprintf(stderr, ": could be");
			for (size_t k = 0; k < N_CMDS; k++)
				if (!strncmp(cmds[k].name, argv[i], strlen(argv[i])))
					fprintf(stderr, " %s", cmds[k].name);
		}
		fprintf(stderr, "\n");
		if (!nmatch)
			usage(stderr);
		return EXIT_USAGE;
	}
	if (parse(c, argc - i - 1, argv + i + 1, &a)) {
		cmd_usage(stderr, c);
		return EXIT_USAGE;
	}
	if (a.set[O_HELP]) {
		cmd_usage(stdout, c);
		return 0;
	}
	if (a.npos < c->min_pos || a.npos > c->max_pos) {
		fprintf(stderr, "floodgate %s: expected %s\n", c->name,
			c->usage[0] ? c->usage : "no arguments");
		return EXIT_USAGE;
	}
	if (a.set[O_VERBOSE])
		fg_log_set_level(FG_LOG_DEBUG);
	a.dir = fg_pin_dir_choose(a.val[O_PIN_DIR]);
	return c->fn(&a);
}
