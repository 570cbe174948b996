// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * floodgate allow|deny add|del|list: the runtime lists (user/lists/rtlist.h),
 * straight on the pinned maps, daemon or not, each change audited.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>
#include <json-c/json.h>
#include "cli/cli.h"
#include "lists/escalate.h"
#include "lib/log.h"
#include "lib/opts.h"
#include "lib/prefix.h"
#include "lists/rtlist.h"
#include "lib/sysutil.h"

enum {
	RT_ADD,
	RT_DEL,
	RT_LIST
};

static const char *list_word(__u32 list)
{
	return list == FG_LIST_ALLOW ? "allow" : "deny";
}

/* The subcommand and its arguments; -1 after saying what is wrong. */
static int parse_sub(const struct cli_args *a, const char *cmd)
{
	static const char *const subs[] = { [RT_ADD] = "add", [RT_DEL] = "del", [RT_LIST] = "list" };
	int sub = -1;

	for (int i = 0; i < 3; i++)
		if (!strcmp(a->pos[0], subs[i]))
			sub = i;
	if (sub < 0) {
		pr_warn("%s: \"%s\": expected add, del or list", cmd, a->pos[0]);
		return -1;
	}
	if (sub != RT_LIST && a->npos != 2) {
		pr_warn("%s %s: needs one PREFIX (a.b.c.d/n or x::y/n)", cmd, subs[sub]);
		return -1;
	}
	if (sub == RT_LIST && a->npos != 1) {
		pr_warn("%s list takes no PREFIX", cmd);
		return -1;
	}
	if (sub != RT_ADD && (a->rt_for || a->comment)) {
		pr_warn("%s %s takes no --for or --comment", cmd, subs[sub]);
		return -1;
	}
	if (sub != RT_LIST && a->json) {
		pr_warn("%s %s takes no --json", cmd, subs[sub]);
		return -1;
	}
	return sub;
}

/* The prefix argument, host bits masked off (and said so); -1 after saying why not. */
static int parse_prefix(const char *cmd, const char *arg, struct fg_rt_entry *e)
{
	struct fg_pfx_src p, exact;
	const char *why = NULL;
	char masked[80];

	if (fg_prefix_parse(arg, &p, &why)) {
		pr_warn("%s: \"%s\": %s", cmd, arg, why);
		return -1;
	}
	memset(e, 0, sizeof(*e));
	e->family = p.family;
	e->plen = p.plen;
	memcpy(e->addr, p.addr, sizeof(e->addr));
	/* fg_prefix_parse masks: parse the address alone to see what was given */
	exact = p;
	if (strchr(arg, '/')) {
		char a[64];

		snprintf(a, sizeof(a), "%.*s", (int)(strchr(arg, '/') - arg), arg);
		if (fg_prefix_parse(a, &exact, &why))
			exact = p;
	}
	if (memcmp(exact.addr, p.addr, sizeof(p.addr))) {
		fg_rt_prefix_str(e, masked, sizeof(masked));
		pr_warn("%s: %s has host bits set: using %s", cmd, arg, masked);
	}
	return 0;
}

/* "2h 5m", "5m 3s", "42s", "0.250s" */
static void fmt_left(char *buf, size_t len, __u64 ns)
{
	__u64 s = ns / 1000000000ull;

	if (s >= 86400)
		snprintf(buf, len, "%llud %lluh", s / 86400, s % 86400 / 3600);
	else if (s >= 3600)
		snprintf(buf, len, "%lluh %llum", s / 3600, s % 3600 / 60);
	else if (s >= 60)
		snprintf(buf, len, "%llum %llus", s / 60, s % 60);
	else if (ns % 1000000000ull == 0)
		snprintf(buf, len, "%llus", s);
	else
		snprintf(buf, len, "%.3fs", ns / 1e9);
}

static void fmt_created(char *buf, size_t len, __u64 created)
{
	time_t t = (time_t)created;
	struct tm tm;

	if (!created || !localtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, len, "-");
}

/* src into dst (cap bytes), cut if longer, NUL-terminated */
static void copy_text(char *dst, size_t cap, const char *src)
{
	size_t n = strnlen(src, cap - 1);

	memcpy(dst, src, n);
	dst[n] = 0;
}

static int open_lists(const struct cli_args *a, struct fg_maps *m, struct fg_rt_maps *rt)
{
	int err;

	if (cli_open_maps(a, m))
		return -1;
	err = fg_rt_open_maps(rt, m);
	if (err == -ENODATA)
		pr_warn("%s is not initialised yet (floodgated is starting?): try again", a->dir);
	else if (err)
		pr_warn("runtime lists in %s: %s", a->dir, strerror(-err));
	if (err)
		fg_maps_close(m);
	return err ? -1 : 0;
}

static int do_add(const struct cli_args *a, const char *cmd, __u32 list)
{
	char why[FG_WHY_LEN] = "", w[128], p[80], left[32];
	struct fg_rt_entry e;
	struct fg_rt_maps rt;
	struct fg_maps m;
	bool updated;
	__u64 now;
	int err;

	if (parse_prefix(cmd, a->pos[1], &e))
		return FG_EXIT_USAGE;
	if (a->comment && strlen(a->comment) >= sizeof(e.val.comment)) {
		pr_warn("%s: --comment is %zu characters long, at most %zu fit", cmd,
			strlen(a->comment), sizeof(e.val.comment) - 1);
		return FG_EXIT_USAGE;
	}
	if (open_lists(a, &m, &rt))
		return 1;
	now = fg_mono_coarse_ns();
	e.val.list = list;
	e.val.expires = a->rt_for ? now + a->rt_ns : 0;
	e.val.created = (__u64)time(NULL);
	cli_who(w, sizeof(w));
	copy_text(e.val.who, sizeof(e.val.who), w); /* the audit line has it whole */
	copy_text(e.val.comment, sizeof(e.val.comment), a->comment ? a->comment : "");
	err = fg_rt_add(&rt, &e, now, &updated, why);
	fg_rt_close(&rt);
	fg_maps_close(&m);
	fg_rt_prefix_str(&e, p, sizeof(p));
	if (err) {
		pr_warn("%s add %s: %s; nothing changed", cmd, p, why[0] ? why : strerror(-err));
		return err == -EINVAL ? FG_EXIT_USAGE : 1;
	}
	fmt_left(left, sizeof(left), a->rt_ns);
	if (a->rt_for)
		pr_info("%s %s on the runtime %s list for %s (it ends by itself; "
			"'floodgate %s del %s' ends it now)",
			p, updated ? "is again" : "is", cmd, left, cmd, p);
	else
		pr_info("%s %s on the runtime %s list until 'floodgate %s del %s'", p,
			updated ? "is again" : "is", cmd, cmd, p);
	fg_log_audit("runtime %s %s %s %s%s%s%s by %s (pin dir %s)", cmd,
		     updated ? "update" : "add", p, a->rt_for ? "for " : "until deleted",
		     a->rt_for ? left : "", a->comment ? ", comment: " : "",
		     a->comment ? a->comment : "", w, a->dir);
	return 0;
}

static int do_del(const struct cli_args *a, const char *cmd, __u32 list)
{
	char why[FG_WHY_LEN] = "", w[128], p[80];
	struct fg_rt_entry e;
	struct fg_rt_maps rt;
	struct fg_maps m;
	bool expired;
	int err;

	if (parse_prefix(cmd, a->pos[1], &e))
		return FG_EXIT_USAGE;
	e.val.list = list;
	if (open_lists(a, &m, &rt))
		return 1;
	err = fg_rt_del(&rt, &e, fg_mono_coarse_ns(), &expired, why);
	fg_rt_close(&rt);
	fg_maps_close(&m);
	fg_rt_prefix_str(&e, p, sizeof(p));
	if (err) {
		pr_warn("%s del %s: %s; nothing changed", cmd, p, why[0] ? why : strerror(-err));
		return 1;
	}
	cli_who(w, sizeof(w));
	pr_info("%s is off the runtime %s list%s", p, cmd,
		expired ? " (its time was over already)" : "");
	fg_log_audit("runtime %s del %s by %s (pin dir %s)", cmd, p, w, a->dir);
	return 0;
}

/* A text field from the map, printable whatever wrote it. */
static const char *clean(char *s, size_t cap)
{
	s[cap - 1] = 0;
	for (char *c = s; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
			*c = '?';
	return s;
}

static void list_text(const char *cmd, struct fg_rt_entry *v, size_t n, size_t n4, size_t n6,
		      __u64 now)
{
	size_t expired = 0;

	/* a line per entry within 80 columns; who and why on the next, indented */
	printf("%-30s %-5s %-16s %s\n", "PREFIX", "LIST", "LEFT", "CREATED");
	for (size_t i = 0; i < n; i++) {
		char p[80], left[32], created[32];
		struct fg_rt *r = &v[i].val;

		fg_rt_prefix_str(&v[i], p, sizeof(p));
		if (v[i].expired)
			snprintf(left, sizeof(left), "expired");
		else if (!r->expires)
			snprintf(left, sizeof(left), "until deleted");
		else
			fmt_left(left, sizeof(left), r->expires - now);
		fmt_created(created, sizeof(created), r->created);
		expired += v[i].expired;
		printf("%-30s %-5s %-16s %s\n", p, list_word(r->list), left, created);
		printf("    by %s", clean(r->who, sizeof(r->who)));
		if (r->comment[0])
			printf(": %s", clean(r->comment, sizeof(r->comment)));
		printf("\n");
	}
	printf("%zu on the %s list; IPv4 %zu, IPv6 %zu of %u entries per family in use "
	       "(allow and deny)%s\n",
	       n - expired, cmd, n4, n6, FG_RT_MAX,
	       expired ? "; the expired ones shown were removed now" : "");
	if (fg_esc_count_live(v, n))
		printf("%zu of them escalated by floodgated (who: %s): ordinary entries, "
		       "'floodgate deny del PREFIX' removes one\n",
		       fg_esc_count_live(v, n), FG_ESC_WHO);
}

static struct json_object *entry_json(struct fg_rt_entry *e, __u64 now, int *err)
{
	struct json_object *o = json_object_new_object();
	struct fg_rt *r = &e->val;
	char p[80];

	fg_rt_prefix_str(e, p, sizeof(p));
	cli_json_add(err, o, "prefix", json_object_new_string(p));
	cli_json_add(err, o, "list", json_object_new_string(list_word(r->list)));
	cli_json_add(err, o, "expired", json_object_new_boolean(e->expired));
	if (e->expired) {
		cli_json_add(err, o, "expires_in_s", json_object_new_double_s(0, "0"));
	} else if (r->expires) {
		double left = (r->expires - now) / 1e9;
		char txt[32];

		snprintf(txt, sizeof(txt), "%.3f", left);
		cli_json_add(err, o, "expires_in_s", json_object_new_double_s(left, txt));
	} else {
		cli_json_add_null(err, o, "expires_in_s");
	}
	cli_json_add(err, o, "created", json_object_new_uint64(r->created));
	cli_json_add(err, o, "who", json_object_new_string(clean(r->who, sizeof(r->who))));
	cli_json_add(err, o, "comment",
		     json_object_new_string(clean(r->comment, sizeof(r->comment))));
	cli_json_add(err, o, "escalated", json_object_new_boolean(fg_esc_is_escalated(r)));
	return o;
}

static int list_json(__u32 list, struct fg_rt_entry *v, size_t n, size_t n4, size_t n6, __u64 now)
{
	struct json_object *root = json_object_new_object(), *arr = json_object_new_array();
	int err = 0;

	for (size_t i = 0; i < n; i++)
		cli_json_push(&err, arr, entry_json(&v[i], now, &err));
	cli_json_add(&err, root, "list", json_object_new_string(list_word(list)));
	cli_json_add(&err, root, "entries", arr);
	cli_json_add(&err, root, "ipv4", json_object_new_uint64(n4));
	cli_json_add(&err, root, "ipv6", json_object_new_uint64(n6));
	cli_json_add(&err, root, "max_per_family", json_object_new_uint64(FG_RT_MAX));
	cli_json_add(&err, root, "escalated", json_object_new_uint64(fg_esc_count_live(v, n)));
	return cli_json_print(root, err);
}

static int do_list(const struct cli_args *a, const char *cmd, __u32 list)
{
	struct fg_rt_entry *v = NULL;
	struct fg_rt_maps rt;
	struct fg_maps m;
	size_t n = 0, n4 = 0, n6 = 0;
	__u64 now;
	int err;

	if (open_lists(a, &m, &rt))
		return 1;
	now = fg_mono_coarse_ns();
	err = fg_rt_list(&rt, list, now, &v, &n, &n4, &n6);
	fg_rt_close(&rt);
	fg_maps_close(&m);
	if (err) {
		pr_warn("%s list: %s", cmd, strerror(-err));
		return 1;
	}
	if (a->json) {
		err = list_json(list, v, n, n4, n6, now);
		if (err)
			pr_warn("%s list --json: %s", cmd, strerror(-err));
	} else {
		cli_wrap_begin();
		list_text(cmd, v, n, n4, n6, now);
		cli_wrap_end();
	}
	free(v);
	return err ? 1 : 0;
}

static int cli_rtlist(const struct cli_args *a, __u32 list)
{
	const char *cmd = list_word(list);

	switch (parse_sub(a, cmd)) {
	case RT_ADD:
		return do_add(a, cmd, list);
	case RT_DEL:
		return do_del(a, cmd, list);
	case RT_LIST:
		return do_list(a, cmd, list);
	default:
		return FG_EXIT_USAGE;
	}
}

int cli_allow(void *cfg)
{
	return cli_rtlist(cfg, FG_LIST_ALLOW);
}

int cli_deny(void *cfg)
{
	return cli_rtlist(cfg, FG_LIST_DENY);
}
