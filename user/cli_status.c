// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* floodgate status: the daemon, interfaces, mode, bypass, policy, as text or JSON. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <json-c/json.h>
#include "cli.h"
#include "log.h"
#include "shedd.h"
#include "sources.h"
#include "sysutil.h"

/* Everything status shows, read once. */
struct status {
	const char *dir;
	struct fg_ctl ctl;
	struct fg_meta meta;
	struct fg_policy pol;
	struct fg_name names[FG_MAX_IDS];
	bool attached[FG_MAX_IFS];	/* link pinned and not severed */
	bool running;			/* meta.pid is a live floodgated */
	size_t n4, n6;
	__u64 now;
	struct fg_shed_ctl shed;	/* the pinned thresholds */
	double frac[FG_NTIERS];		/* ... as the program applies them now */
	struct fg_shedd_state sst;	/* the running daemon's shedder */
	bool have_sst;
};

/* A pinned link outlives its interface: the kernel severs it (ifindex 0)
 * when the device is deleted. */
static bool link_attached(const char *dir, const char *ifname)
{
	struct bpf_link_info li = {};
	__u32 ll = sizeof(li);
	char path[512];
	bool attached;
	int fd;

	snprintf(path, sizeof(path), "%s/" FG_LINK_PREFIX "%s", dir, ifname);
	attached = access(path, F_OK) == 0;
	if (!attached)
		return false;
	fd = bpf_obj_get(path);
	if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &li, &ll) && !li.xdp.ifindex)
		attached = false;
	if (fd >= 0)
		close(fd);
	return attached;
}

/* The pinned fg_shed, and the daemon's state file while that daemon runs. */
static int shed_read(struct fg_maps *m, struct status *st)
{
	char path[PATH_MAX];
	int err = fg_array_read(m, FGM_SHED, 0, &st->shed);

	if (err)
		return err;
	fg_shedd_fracs(&st->shed, st->now, st->frac);
	fg_shedd_state_path(getenv("FLOODGATE_RUN_DIR"), st->dir, path, sizeof(path));
	st->have_sst = st->running && !fg_shedd_state_read(path, &st->sst) &&
		       st->sst.pid == st->meta.pid;
	return 0;
}

static int status_read(struct fg_maps *m, struct status *st)
{
	int err;

	st->now = fg_mono_coarse_ns();
	if ((err = fg_ctl_read(m, &st->ctl)) || (err = fg_meta_read(m, &st->meta)) ||
	    (err = fg_policy_read_active(m, &st->pol)) || (err = fg_names_read(m, st->names)) ||
	    (err = fg_sources_count(m, &st->n4, &st->n6)))
		return err;
	st->running = fg_daemon_alive(st->meta.pid);
	if ((err = shed_read(m, st)))
		return err;
	st->meta.config[sizeof(st->meta.config) - 1] = 0;
	for (__u32 i = 0; i < st->meta.n_ifs && i < FG_MAX_IFS; i++) {
		struct fg_meta_if *mi = &st->meta.ifs[i];

		mi->name[sizeof(mi->name) - 1] = 0;
		st->attached[i] = link_attached(st->dir, mi->name);
	}
	return 0;
}

/* s until the pinned thresholds are zero if nobody rewrites them; 0 = zero now */
static double shed_left_s(const struct status *st)
{
	return st->shed.end > st->now ? (st->shed.end - st->now) / 1e9 : 0;
}

static void print_shedding_text(const struct status *st)
{
	const struct fg_shedd_state *s = &st->sst;

	if (st->have_sst) {
		printf("shedding:  signal %s = ", s->signal);
		if (s->have_value)
			printf("%.3f", s->value);
		else
			printf("unreadable (%s)", strerror(-s->sig_err));
		printf(", %s, amount %.3f of %d tiers%s%s\n", s->phase, s->amount, s->ntiers,
		       strcmp(s->hold, "running") ? ", held at zero: " : "",
		       strcmp(s->hold, "running") ? s->hold : "");
		printf("           good %g, bad %g, interval %gs, delay %gs, ramp %gs, decay %gs\n",
		       s->good, s->bad, s->interval, s->delay, s->ramp, s->decay);
	} else if (st->frac[FG_TIER_NORMAL] + st->frac[FG_TIER_BULK] +
		   st->frac[FG_TIER_BEST_EFFORT] == 0 && !st->shed.off) {
		printf("shedding:  none (no controller, nothing shed)\n");
		return;
	} else {
		printf("shedding:  no controller running (the pinned thresholds decay by themselves)\n");
	}
	printf("           shed now: normal %.1f%%, bulk %.1f%%, best-effort %.1f%%%s%s\n",
	       100 * st->frac[FG_TIER_NORMAL], 100 * st->frac[FG_TIER_BULK],
	       100 * st->frac[FG_TIER_BEST_EFFORT], st->shed.shadow ? " (shadow: counted, not shed)" : "",
	       st->shed.off ? " (off: the operator switched shedding off)" : "");
	if (shed_left_s(st) > 0)
		printf("           the thresholds fall to zero by themselves in %.1f s unless rewritten\n",
		       shed_left_s(st));
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
	if (st->running) {
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
		       st->attached[i] ? ", link pinned" :
		       ", NOT attached (interface deleted, or no pinned link)");
	}
	printf("mode:      %s\n", st->ctl.mode == FG_MODE_SHADOW ? "shadow (nothing is dropped)" :
	       "enforce");
	print_bypass_text(st);
	printf("policy:    version %llu, slot %u, %u rules, default %s\n",
	       (unsigned long long)pol->version, st->ctl.slot, pol->nrules,
	       pol->default_verdict ? "drop" : "pass");
	for (__u32 i = 0; i < pol->nrules && i < FG_MAX_RULES; i++) {
		const struct fg_rule *r = &pol->rules[i];

		printf("  %-24s %s%s\n", rule_name_at(st, r), cli_action_str(r->action),
		       r->mode == FG_MODE_SHADOW ? " (shadow)" : "");
	}
	printf("sources:   %zu IPv4, %zu IPv6 (max %llu each)\n", st->n4, st->n6,
	       (unsigned long long)st->meta.max_sources);
	print_shedding_text(st);
}

/* {"running":bool,"pid":n,"started":n}: pid and started are 0 when none runs */
static struct json_object *daemon_json(const struct status *st, int *err)
{
	struct json_object *d = json_object_new_object();

	cli_json_add(err, d, "running", json_object_new_boolean(st->running));
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

static struct json_object *num_json(double v, const char *fmt)
{
	char txt[32];

	snprintf(txt, sizeof(txt), fmt, v);
	return json_object_new_double_s(v, txt);
}

/*
 * {"controller": bool, "signal": str|null, "value": number|null,
 *  "signal_error": str|null, "phase": str|null, "hold": str|null,
 *  "amount": number|null, "tiers": n, "pressure_s": number|null,
 *  "shed": {"critical": f, "normal": f, "bulk": f, "best-effort": f},
 *  "shadow": bool, "off": bool, "decays_in_s": number}
 * controller: the running daemon runs one (its fields null otherwise);
 * shed: fractions in [0, 1] as the program applies them now.
 */
static struct json_object *shedding_json(const struct status *st, int *err)
{
	struct json_object *o = json_object_new_object(), *f = json_object_new_object();
	const struct fg_shedd_state *s = &st->sst;
	bool c = st->have_sst;

	cli_json_add(err, o, "controller", json_object_new_boolean(c));
	if (c) {
		cli_json_add(err, o, "signal", json_object_new_string(s->signal));
		if (s->have_value) {
			cli_json_add(err, o, "value", num_json(s->value, "%.6g"));
			cli_json_add_null(err, o, "signal_error");
		} else {
			cli_json_add_null(err, o, "value");
			cli_json_add(err, o, "signal_error", json_object_new_string(strerror(-s->sig_err)));
		}
		cli_json_add(err, o, "phase", json_object_new_string(s->phase));
		cli_json_add(err, o, "hold", json_object_new_string(s->hold));
		cli_json_add(err, o, "amount", num_json(s->amount, "%.10g"));
		cli_json_add(err, o, "tiers", json_object_new_uint64((__u64)s->ntiers));
		cli_json_add(err, o, "pressure_s", num_json(s->pressure, "%.6g"));
	} else {
		static const char *const keys[] = { "signal", "value", "signal_error", "phase",
						     "hold", "amount", "pressure_s" };

		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			cli_json_add_null(err, o, keys[i]);
		cli_json_add(err, o, "tiers", json_object_new_uint64(0));
	}
	for (int t = 0; t < FG_NTIERS; t++)
		cli_json_add(err, f, fg_tier_name(t), num_json(st->frac[t], "%.10g"));
	cli_json_add(err, o, "shed", f);
	cli_json_add(err, o, "shadow", json_object_new_boolean(st->shed.shadow != 0));
	cli_json_add(err, o, "off", json_object_new_boolean(st->shed.off != 0));
	cli_json_add(err, o, "decays_in_s", num_json(shed_left_s(st), "%.4g"));
	return o;
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
		cli_json_add(err, o, "mode", json_object_new_string(cli_mode_str(r->mode)));
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
	cli_json_add(&err, root, "mode", json_object_new_string(cli_mode_str(st->ctl.mode)));
	cli_json_add(&err, root, "bypass", bypass_json(st, &err));
	cli_json_add(&err, root, "policy", policy_json(st, &err));
	cli_json_add(&err, src, "ipv4", json_object_new_uint64(st->n4));
	cli_json_add(&err, src, "ipv6", json_object_new_uint64(st->n6));
	cli_json_add(&err, src, "max", json_object_new_uint64(st->meta.max_sources));
	cli_json_add(&err, root, "sources", src);
	cli_json_add(&err, root, "shedding", shedding_json(st, &err));
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
