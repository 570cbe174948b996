// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* floodgate status: the daemon, interfaces, mode, bypass, policy, as text or JSON. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <json-c/json.h>
#include "cli.h"
#include "ctl.h"
#include "discover.h"
#include "log.h"
#include "sources.h"
#include "sysutil.h"

/* Everything status shows, read once. */
struct status {
	const char *dir;
	struct fg_ctl ctl;		/* ctl.mode is the file's global mode */
	__u32 mode;			/* the global mode in force */
	__u32 rule_mode[FG_MAX_RULES];	/* each rule's mode in force */
	__u32 rule_ovr[FG_MAX_RULES];	/* each rule's override (enum fg_ovr) */
	struct fg_meta meta;
	struct fg_policy pol;
	struct fg_name names[FG_MAX_IDS];
	bool attached[FG_MAX_IFS];	/* the filter runs on it */
	bool running;			/* meta.pid is a live floodgated (stopped or not) */
	enum fg_daemon_state state;	/* running, stopped (SIGSTOP) or none */
	size_t n4, n6;
	__u64 now;
};

/* fg_ctl as one snapshot of the mapping, and the modes in force in it (the
 * rule in include/floodgate.h, ctl.h's readers). */
static int status_modes(struct fg_maps *m, struct status *st)
{
	struct fg_ctl_map cm;
	int err = fg_ctl_map_open(&cm, m->fd[FGM_CTL]);

	if (err)
		return err;
	err = fg_ctl_snapshot(&cm, &st->ctl);
	fg_ctl_map_close(&cm);
	if (err)
		return err;
	st->mode = fg_ctl_mode_global(&st->ctl);
	for (__u32 i = 0; i < st->pol.nrules && i < FG_MAX_RULES; i++) {
		const struct fg_rule *r = &st->pol.rules[i];

		st->rule_ovr[i] = fg_ctl_mode_rule_ovr(&st->ctl, r->id);
		st->rule_mode[i] = fg_ctl_mode_rule(&st->ctl, r->id, r->mode);
	}
	return 0;
}

static int status_read(struct fg_maps *m, struct status *st)
{
	int err;

	st->now = fg_mono_coarse_ns();
	if ((err = fg_meta_read(m, &st->meta)) || (err = fg_policy_read_active(m, &st->pol)) ||
	    (err = fg_names_read(m, st->names)) || (err = status_modes(m, st)) ||
	    (err = fg_sources_count(m, &st->n4, &st->n6)))
		return err;
	st->state = fg_daemon_state(st->meta.pid);
	st->running = st->state != FG_DAEMON_NONE;
	st->meta.config[sizeof(st->meta.config) - 1] = 0;
	st->meta.reload_msg[sizeof(st->meta.reload_msg) - 1] = 0;
	for (__u32 i = 0; i < st->meta.n_ifs && i < FG_MAX_IFS; i++) {
		struct fg_meta_if *mi = &st->meta.ifs[i];

		mi->name[sizeof(mi->name) - 1] = 0;
		/* by ifindex, not by name or pin: renames and lost pins change nothing */
		st->attached[i] = fg_found_attached(m->fd[FGM_CTL], (int)mi->ifindex);
	}
	return 0;
}

static const char *xdp_mode_str(__u32 mode)
{
	return mode == 1 ? "native" : mode == 2 ? "generic" : "none";
}

static bool bypass_on(const struct status *st)
{
	return st->ctl.bypass && (!st->ctl.bypass_until || st->ctl.bypass_until > st->now);
}

static const char *rule_name_at(const struct status *st, const struct fg_rule *r)
{
	return r->id < FG_MAX_IDS && st->names[r->id].in_use ? st->names[r->id].name : "?";
}

static void print_daemon_text(const struct status *st)
{
	if (st->state == FG_DAEMON_STOPPED) {
		printf("daemon:    floodgated pid %u is STOPPED (SIGSTOP): the filter keeps "
		       "enforcing; kill -CONT %u\n", st->meta.pid, st->meta.pid);
	} else if (st->running) {
		time_t t = (time_t)st->meta.started;
		char ts[64];

		strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", localtime(&t));
		printf("daemon:    floodgated pid %u, running since %s\n", st->meta.pid, ts);
	} else {
		printf("daemon:    not running%s\n", st->meta.n_ifs ?
		       " (the pinned filter keeps enforcing the last policy)" : "");
	}
}

static void print_bypass_text(const struct status *st)
{
	const struct fg_ctl *c = &st->ctl;

	if (c->bypass && c->bypass_until && c->bypass_until <= st->now)
		printf("bypass:    off (expired %.0f s ago)\n", (st->now - c->bypass_until) / 1e9);
	else if (c->bypass && c->bypass_until)
		printf("bypass:    ON for another %.0f s: everything passes\n",
		       (c->bypass_until - st->now) / 1e9);
	else
		printf("bypass:    %s\n", c->bypass ? "ON until switched off: everything passes" : "off");
}

static const char *ovr_name(__u32 ovr)
{
	return ovr == FG_OVR_SHADOW ? "shadow" : "enforce";
}

/* "2026-12-01 09:12:03", when the overrides last changed */
static void since_str(const struct status *st, char *buf, size_t len)
{
	time_t t = (time_t)st->ctl.ovr_since;

	if (!t || !strftime(buf, len, "%Y-%m-%d %H:%M:%S", localtime(&t)))
		snprintf(buf, len, "?");
}

/* mode: what runs; where an override makes it differ from the file, both */
static void print_mode_text(const struct status *st)
{
	const char *drops = st->mode == FG_MODE_SHADOW ? "; nothing is dropped" : "";
	char since[64];

	since_str(st, since, sizeof(since));
	if (!st->ctl.mode_ovr)
		printf("mode:      %s (the file's%s)\n", cli_mode_str(st->mode), drops);
	else if (st->mode != st->ctl.mode)
		printf("mode:      %s (CLI override, overrides last set %s; the file says %s: "
		       "'floodgate mode file' returns to it%s)\n", cli_mode_str(st->mode), since,
		       cli_mode_str(st->ctl.mode), drops);
	else
		printf("mode:      %s (CLI override, overrides last set %s; the same as the file%s)\n",
		       cli_mode_str(st->mode), since, drops);
}

static void print_rule_text(const struct status *st, __u32 i)
{
	const struct fg_rule *r = &st->pol.rules[i];
	char since[64];

	printf("  %-24s %s%s", rule_name_at(st, r), cli_action_str(r->action),
	       st->rule_mode[i] == FG_MODE_SHADOW ? " (shadow)" : "");
	since_str(st, since, sizeof(since));
	if (st->rule_ovr[i])
		printf(" - CLI override %s, overrides last set %s; the file says %s%s",
		       ovr_name(st->rule_ovr[i]), since, cli_mode_str(r->mode),
		       (st->rule_ovr[i] == FG_OVR_SHADOW) != (st->rule_mode[i] == FG_MODE_SHADOW) ?
		       "; the global mode wins" : "");
	else if (st->rule_mode[i] != r->mode)
		printf(" - the global mode wins; the file says %s", cli_mode_str(r->mode));
	printf("\n");
}

/* The daemon's last attempt to apply its file failed (an adopting start
 * or a reload): what runs is not what the file says. NULL when it did not. */
static const char *file_not_applied(const struct status *st)
{
	return st->meta.reload_err ? st->meta.reload_msg : NULL;
}

static void print_file_text(const struct status *st)
{
	const char *why = file_not_applied(st);

	if (why)
		printf("           the file %s was NOT applied: %s\n",
		       st->meta.config[0] ? st->meta.config : "-", why);
}

static void status_text(const struct status *st)
{
	const struct fg_policy *pol = &st->pol;

	printf("pin dir:   %s (ABI %u)\n", st->dir, st->ctl.abi);
	print_daemon_text(st);
	printf("config:    %s\n", st->meta.config[0] ? st->meta.config : "-");
	for (__u32 i = 0; i < st->meta.n_ifs && i < FG_MAX_IFS; i++) {
		const struct fg_meta_if *mi = &st->meta.ifs[i];

		printf("interface: %s (ifindex %u) %s XDP%s\n", mi->name, mi->ifindex,
		       mi->xdp_mode == 1 || mi->xdp_mode == 2 ? xdp_mode_str(mi->xdp_mode) : "no",
		       st->attached[i] ? ", attached" :
		       ", NOT attached (interface deleted, or detached)");
	}
	print_mode_text(st);
	print_bypass_text(st);
	printf("policy:    version %llu, slot %u, %u rules, default %s\n",
	       (unsigned long long)pol->version, st->ctl.slot, pol->nrules,
	       pol->default_verdict ? "drop" : "pass");
	print_file_text(st);
	for (__u32 i = 0; i < pol->nrules && i < FG_MAX_RULES; i++)
		print_rule_text(st, i);
	printf("sources:   %zu IPv4, %zu IPv6 (max %llu each)\n", st->n4, st->n6,
	       (unsigned long long)st->meta.max_sources);
}

/* {"running":bool,"state":s,"pid":n,"started":n}: running only when it
 * runs (not stopped); pid and started are 0 when there is none */
static struct json_object *daemon_json(const struct status *st, int *err)
{
	struct json_object *d = json_object_new_object();

	cli_json_add(err, d, "running", json_object_new_boolean(st->state == FG_DAEMON_RUNNING));
	cli_json_add(err, d, "state", json_object_new_string(fg_daemon_state_name(st->state)));
	cli_json_add(err, d, "pid", json_object_new_uint64(st->running ? st->meta.pid : 0));
	cli_json_add(err, d, "started", json_object_new_uint64(st->running ? st->meta.started : 0));
	return d;
}

static struct json_object *ifaces_json(const struct status *st, int *err)
{
	struct json_object *arr = json_object_new_array();

	for (__u32 i = 0; i < st->meta.n_ifs && i < FG_MAX_IFS; i++) {
		const struct fg_meta_if *mi = &st->meta.ifs[i];
		struct json_object *o = json_object_new_object();

		cli_json_add(err, o, "name", json_object_new_string(mi->name));
		cli_json_add(err, o, "ifindex", json_object_new_uint64(mi->ifindex));
		cli_json_add(err, o, "xdp_mode", json_object_new_string(xdp_mode_str(mi->xdp_mode)));
		cli_json_add(err, o, "attached", json_object_new_boolean(st->attached[i]));
		cli_json_push(err, arr, o);
	}
	return arr;
}

/* {"on":bool,"expires_in_s":number|null}: null when off or without expiry */
static struct json_object *bypass_json(const struct status *st, int *err)
{
	struct json_object *b = json_object_new_object();
	bool on = bypass_on(st);

	cli_json_add(err, b, "on", json_object_new_boolean(on));
	if (on && st->ctl.bypass_until) {
		double left = (st->ctl.bypass_until - st->now) / 1e9;
		char txt[32];

		/* milliseconds are enough, and "%.17g" would print 29.827999999999999 */
		snprintf(txt, sizeof(txt), "%.3f", left);
		cli_json_add(err, b, "expires_in_s", json_object_new_double_s(left, txt));
	} else
		cli_json_add_null(err, b, "expires_in_s");
	return b;
}

static struct json_object *policy_json(const struct status *st, int *err)
{
	struct json_object *p = json_object_new_object(), *rules = json_object_new_array();
	const struct fg_policy *pol = &st->pol;

	cli_json_add(err, p, "version", json_object_new_uint64(pol->version));
	cli_json_add(err, p, "slot", json_object_new_uint64(st->ctl.slot));
	cli_json_add(err, p, "default", json_object_new_string(pol->default_verdict ? "drop" : "pass"));
	for (__u32 i = 0; i < pol->nrules && i < FG_MAX_RULES; i++) {
		const struct fg_rule *r = &pol->rules[i];
		struct json_object *o = json_object_new_object();

		cli_json_add(err, o, "name", json_object_new_string(rule_name_at(st, r)));
		cli_json_add(err, o, "action", json_object_new_string(cli_action_str(r->action)));
		cli_json_add(err, o, "mode", json_object_new_string(cli_mode_str(st->rule_mode[i])));
		cli_json_add(err, o, "mode_file", json_object_new_string(cli_mode_str(r->mode)));
		if (st->rule_ovr[i])
			cli_json_add(err, o, "override",
				     json_object_new_string(ovr_name(st->rule_ovr[i])));
		else
			cli_json_add_null(err, o, "override");
		cli_json_push(err, rules, o);
	}
	cli_json_add(err, p, "rules", rules);
	return p;
}

/* The schema is documented in floodgate(8), JSON OUTPUT. */
static int status_json(const struct status *st)
{
	struct json_object *root = json_object_new_object(), *src = json_object_new_object();
	int err = 0;

	cli_json_add(&err, root, "pin_dir", json_object_new_string(st->dir));
	cli_json_add(&err, root, "abi", json_object_new_uint64(st->ctl.abi));
	cli_json_add(&err, root, "daemon", daemon_json(st, &err));
	cli_json_add(&err, root, "config", json_object_new_string(st->meta.config));
	cli_json_add(&err, root, "interfaces", ifaces_json(st, &err));
	cli_json_add(&err, root, "mode", json_object_new_string(cli_mode_str(st->mode)));
	cli_json_add(&err, root, "mode_file", json_object_new_string(cli_mode_str(st->ctl.mode)));
	if (st->ctl.mode_ovr)
		cli_json_add(&err, root, "mode_override",
			     json_object_new_string(ovr_name(st->ctl.mode_ovr)));
	else
		cli_json_add_null(&err, root, "mode_override");
	cli_json_add(&err, root, "override_since", json_object_new_uint64(st->ctl.ovr_since));
	cli_json_add(&err, root, "bypass", bypass_json(st, &err));
	cli_json_add(&err, root, "policy", policy_json(st, &err));
	if (file_not_applied(st))
		cli_json_add(&err, root, "file_not_applied",
			     json_object_new_string(file_not_applied(st)));
	else
		cli_json_add_null(&err, root, "file_not_applied");
	cli_json_add(&err, src, "ipv4", json_object_new_uint64(st->n4));
	cli_json_add(&err, src, "ipv6", json_object_new_uint64(st->n6));
	cli_json_add(&err, src, "max", json_object_new_uint64(st->meta.max_sources));
	cli_json_add(&err, root, "sources", src);
	return cli_json_print(root, err);
}

int cli_status(void *cfg)
{
	const struct cli_args *a = cfg;
	struct status *st = calloc(1, sizeof(*st));
	struct fg_maps m;
	int err;

	if (!st) {
		pr_warn("status: out of memory");
		return 1;
	}
	st->dir = a->dir;
	err = cli_open_maps(a, &m);
	if (err) {
		free(st);
		return 1;
	}
	err = status_read(&m, st);
	if (err) {
		pr_warn("reading %s: %s", a->dir, strerror(-err));
	} else if (a->json) {
		err = status_json(st);
		if (err)
			pr_warn("status --json: %s", strerror(-err));
	} else {
		status_text(st);
	}
	fg_maps_close(&m);
	free(st);
	return err ? 1 : 0;
}
