// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* floodgate status: the daemon, interfaces, mode, bypass, policy, fleet leases, as text or JSON. */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <json-c/json.h>
#include "cli/cli.h"
#include "maps/startstate.h"
#include "lib/kfeat.h"
#include "maps/ctl.h"
#include "attach/discover.h"
#include "lists/escalate.h"
#include "fleet/fleet_status.h"
#include "lib/log.h"
#include "shed/shedstate.h"
#include "lib/sysutil.h"
#include "lib/version.h"
#include "attach/xdpattach.h"

/* A fleet rule of the active policy: what the program holds (fg_lease,
 * fg_stats), daemon or not, and the daemon's engine if one runs. */
struct fleet_rule_view {
	const struct fg_rule *rule;
	struct fg_lease lease;
	const struct fg_stats *row;
	const struct fg_fleet_rule_status *eng; /* NULL: no daemon's view */
};

struct fleet_view {
	int n; /* fleet rules in the active policy */
	struct fleet_rule_view r[FG_MAX_RULES];
	struct fg_stats rows[FG_NROWS];
	struct fg_fleet_status ds; /* the daemon's status file */
	int ds_err;		   /* 0: ds is the running daemon's */
	char ds_path[512];
};

/* Everything status shows, read once. */
struct status {
	const char *dir;
	struct fg_maps *m;	       /* open while status runs (syn_auth reads its tables) */
	struct fg_ctl ctl;	       /* ctl.mode is the file's global mode */
	__u32 mode;		       /* the global mode in force */
	__u32 rule_mode[FG_MAX_RULES]; /* each rule's mode in force */
	__u32 rule_ovr[FG_MAX_RULES];  /* each rule's override (enum fg_ovr) */
	struct fg_meta meta;
	struct fg_policy pol;
	struct fg_name names[FG_MAX_IDS];
	bool attached[FG_MAX_IFS];	    /* the filter runs on it */
	struct fg_xdp_list xdp[FG_MAX_IFS]; /* every XDP program there, in run order */
	int xdp_err[FG_MAX_IFS];	    /* reading them failed (-errno) */
	bool running;			    /* meta.pid is a live floodgated (stopped or not) */
	enum fg_daemon_state state;	    /* running, stopped (SIGSTOP) or none */
	struct fg_start_state start;	    /* a floodgated starting or adopting here ... */
	bool starting;			    /* ... while none runs (startstate.h) */
	__u64 n4, n6;	  /* the daemon's last count (fg_meta.src_count*): no table is read */
	__u64 counted_at; /* CLOCK_REALTIME s of that count, 0 = never */
	__u64 now;
	struct fleet_view fleet;
	struct fg_shed_ctl shed; /* the pinned thresholds */
	double thr[FG_NTIERS];	 /* ... as decayed now */
	double frac[FG_NTIERS];	 /* what the program sheds now: thr, or 0 (idle says why) */
	enum fg_shed_idle idle;
	struct fg_shedd_state sst; /* the running daemon's shedder */
	bool have_sst;
	bool shed_rules;		     /* a rule has a tier other than critical, or a pool */
	struct fg_stats shed_rows[FG_NROWS]; /* read when shed_rules */
	size_t esc_live;		     /* escalated entries live on the runtime deny list */
	int esc_err;			     /* reading the runtime lists failed (-errno) */
	struct fg_escd_state est;	     /* the running daemon's escalation */
	bool have_est;
};

static bool bypass_on(const struct status *st);

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

static const struct fg_fleet_rule_status *fleet_engine_rule(const struct fg_fleet_status *ds,
							    const struct fg_rule *r)
{
	for (__u32 i = 0; i < ds->nrules; i++)
		if (ds->rule[i].id == r->id && ds->rule[i].gen == r->gen)
			return &ds->rule[i];
	return NULL;
}

/* The fleet rules' leases and counters, and the daemon's status file when
 * the daemon that wrote it is the one running. */
static int fleet_read(struct fg_maps *m, struct status *st)
{
	struct fleet_view *fv = &st->fleet;
	int err;

	for (__u32 i = 0; i < st->pol.nrules && i < FG_MAX_RULES; i++)
		if (st->pol.rules[i].fleet && st->pol.rules[i].id < FG_MAX_IDS)
			fv->r[fv->n++].rule = &st->pol.rules[i];
	if (!fv->n)
		return 0;
	err = fg_stats_read(m, fv->rows);
	for (int i = 0; i < fv->n && !err; i++) {
		fv->r[i].row = &fv->rows[fv->r[i].rule->id];
		err = fg_array_read(m, FGM_LEASE, fv->r[i].rule->id, &fv->r[i].lease);
	}
	if (err)
		return err;
	fv->ds_err = fg_fleet_status_path(st->dir, fv->ds_path, sizeof(fv->ds_path));
	if (!fv->ds_err)
		fv->ds_err = fg_fleet_status_read(fv->ds_path, &fv->ds);
	if (!fv->ds_err && (!st->running || fv->ds.pid != st->meta.pid))
		fv->ds_err = -ESRCH; /* left by a daemon that is gone */
	for (int i = 0; i < fv->n && !fv->ds_err; i++)
		fv->r[i].eng = fleet_engine_rule(&fv->ds, fv->r[i].rule);
	return 0;
}

/* The pinned fg_shed, and the daemon's state file while that daemon runs. */
static int shed_read(struct fg_maps *m, struct status *st)
{
	char path[PATH_MAX];
	int err = fg_array_read(m, FGM_SHED, 0, &st->shed);

	if (err)
		return err;
	for (__u32 i = 0; i < st->pol.nrules && i < FG_MAX_RULES; i++)
		st->shed_rules |= st->pol.rules[i].tier != FG_TIER_CRITICAL ||
				  st->pol.rules[i].pool != FG_POOL_NONE;
	if (st->shed_rules && (err = fg_stats_read(m, st->shed_rows)))
		return err;
	fg_shedd_fracs(&st->shed, st->now, st->thr);
	st->idle = fg_shedd_shedding(&st->shed, st->now, bypass_on(st), st->mode == FG_MODE_SHADOW,
				     st->frac);
	fg_shedd_state_path(getenv("FLOODGATE_RUN_DIR"), st->dir, path, sizeof(path));
	st->have_sst = st->running && !fg_shedd_state_read(path, &st->sst) &&
		       st->sst.pid == st->meta.pid;
	return 0;
}

/* The live escalated entries (by their author, from the runtime lists:
 * reading them removes the expired ones, as deny list does), and the
 * daemon's escalation counters while that daemon runs. */
static void esc_read(struct fg_maps *m, struct status *st)
{
	char path[PATH_MAX];
	struct fg_rt_entry *v = NULL;
	struct fg_rt_maps rt;
	size_t n = 0;

	st->esc_err = fg_rt_open_maps(&rt, m);
	if (!st->esc_err) {
		st->esc_err = fg_rt_list(&rt, FG_LIST_DENY, st->now, &v, &n, NULL, NULL);
		fg_rt_close(&rt);
	}
	if (st->esc_err == -ENODATA)
		st->esc_err = 0; /* not stamped yet: no entries */
	st->esc_live = fg_esc_count_live(v, n);
	free(v);
	fg_escd_state_path(st->dir, path, sizeof(path));
	st->have_est = st->running && !fg_escd_state_read(path, &st->est) &&
		       st->est.pid == st->meta.pid;
}

/* Is mi's device in this network namespace? An ifindex names another
 * device (or none) in another one: then its programs are not listed. */
static bool xdp_here(const struct fg_meta_if *mi)
{
	char now[IF_NAMESIZE];

	return mi->ifindex && if_indextoname(mi->ifindex, now) &&
	       !strncmp(now, mi->name, sizeof(mi->name));
}

static int status_read(struct fg_maps *m, struct status *st)
{
	int err;

	st->now = fg_mono_coarse_ns();
	if ((err = fg_meta_read(m, &st->meta)) || (err = fg_policy_read_active(m, &st->pol)) ||
	    (err = fg_names_read(m, st->names)) || (err = status_modes(m, st)))
		return err;
	st->n4 = st->meta.src_count4;
	st->n6 = st->meta.src_count6;
	st->counted_at = st->meta.src_count_at;
	st->state = fg_daemon_state(st->meta.pid);
	st->running = st->state != FG_DAEMON_NONE;
	st->starting = !st->running && !fg_start_state_read(st->dir, &st->start);
	if ((err = shed_read(m, st)))
		return err;
	esc_read(m, st);
	st->meta.config[sizeof(st->meta.config) - 1] = 0;
	st->meta.reload_msg[sizeof(st->meta.reload_msg) - 1] = 0;
	for (__u32 i = 0; i < st->meta.n_ifs && i < FG_MAX_IFS; i++) {
		struct fg_meta_if *mi = &st->meta.ifs[i];

		mi->name[sizeof(mi->name) - 1] = 0;
		/* by ifindex, not by name or pin: renames and lost pins change nothing */
		st->attached[i] = fg_found_attached(m->fd[FGM_CTL], (int)mi->ifindex);
		st->xdp_err[i] = xdp_here(mi) ? fg_xdp_list((int)mi->ifindex, FG_PROG_NAME,
							    &st->xdp[i], NULL) :
						-ENODEV;
		/* a dispatcher component: fg_found_attached sees only the dispatcher */
		if (!st->attached[i] && !st->xdp_err[i] && st->xdp[i].dispatcher_id &&
		    fg_xdp_list_ours(&st->xdp[i]))
			st->attached[i] = true;
	}
	return fleet_read(m, st);
}

/* s until the pinned thresholds are zero if nobody rewrites them; 0 = zero now */
static double shed_left_s(const struct status *st)
{
	return st->shed.end > st->now ? (st->shed.end - st->now) / 1e9 : 0;
}

static const char *rule_name_at(const struct status *st, const struct fg_rule *r);

static bool pool_exempt(const struct fg_policy *pol, __u32 i)
{
	return pol->pools[i].flags & FG_POOL_NOSHED;
}

/* The pools (the exempt ones say so), and the shed packets of each rule
 * that can be shed (tier shedding and pool refusals: outcome shed). */
static void print_shed_pools_text(const struct status *st)
{
	const struct fg_policy *pol = &st->pol;
	const char *sep = "";

	if (pol->npools) {
		printf("           pools:");
		for (__u32 i = 0; i < pol->npools && i < FG_MAX_POOLS; i++)
			printf("%s %.*s (id %u%s)", i ? "," : "", FG_NAME_LEN, pol->pool_names[i],
			       pol->pools[i].id,
			       pool_exempt(pol, i) ? ", exempt: shedding: off" : "");
		printf("\n");
	}
	if (!st->shed_rules)
		return;
	printf("           shed packets:");
	for (__u32 i = 0; i < pol->nrules && i < FG_MAX_RULES; i++) {
		const struct fg_rule *r = &pol->rules[i];

		if ((r->tier == FG_TIER_CRITICAL && r->pool == FG_POOL_NONE) || r->id >= FG_MAX_IDS)
			continue;
		printf("%s %s %llu", sep, rule_name_at(st, r),
		       (unsigned long long)st->shed_rows[r->id].pkts[FG_OUT_SHED]);
		sep = ",";
	}
	printf("\n");
}

static void print_shedding_text(const struct status *st)
{
	const struct fg_shedd_state *s = &st->sst;

	if (st->have_sst) {
		printf("shedding:  signal %s = ", s->signal);
		if (s->have_value)
			printf("%.3f", s->value);
		else
			printf("unreadable (%s)",
			       s->sig_why[0] ? s->sig_why : strerror(-s->sig_err));
		printf(", %s, amount %.3f of %d tiers%s%s\n", s->phase, s->amount, s->ntiers,
		       strcmp(s->hold, "running") ? ", held at zero: " : "",
		       strcmp(s->hold, "running") ? s->hold : "");
		printf("           good %g, bad %g, interval %gs, delay %gs, ramp %gs, decay %gs\n",
		       s->good, s->bad, s->interval, s->delay, s->ramp, s->decay);
	} else if (st->thr[FG_TIER_NORMAL] + st->thr[FG_TIER_BULK] + st->thr[FG_TIER_BEST_EFFORT] ==
			   0 &&
		   !st->shed.off) {
		printf("shedding:  none (no controller, nothing shed)\n");
		print_shed_pools_text(st);
		return;
	} else {
		printf("shedding:  no controller running (the pinned thresholds decay by themselves)\n");
	}
	printf("           shed now: normal %.1f%%, bulk %.1f%%, best-effort %.1f%%\n",
	       100 * st->frac[FG_TIER_NORMAL], 100 * st->frac[FG_TIER_BULK],
	       100 * st->frac[FG_TIER_BEST_EFFORT]);
	if (st->idle != FG_SHED_APPLIES)
		printf("           thresholds pinned: normal %.1f%%, bulk %.1f%%, best-effort %.1f%% "
		       "(%s: %s)\n",
		       100 * st->thr[FG_TIER_NORMAL], 100 * st->thr[FG_TIER_BULK],
		       100 * st->thr[FG_TIER_BEST_EFFORT], fg_shed_idle_name(st->idle),
		       st->idle == FG_SHED_IDLE_SHADOW ? "counted as would-shed, not shed" :
		       st->idle == FG_SHED_IDLE_BYPASS ? "bypass passes everything" :
							 "not applied");
	if (st->shed.off)
		printf("           OFF: the operator switched shedding off ('floodgate shed on' resumes): "
		       "no tier is shed; pools and quotas still apply\n");
	else if (shed_left_s(st) > 0)
		printf("           the thresholds fall to zero by themselves in %.1f s unless rewritten\n",
		       shed_left_s(st));
	print_shed_pools_text(st);
}

static const char *xdp_mode_str(__u32 mode)
{
	return mode == 1 ? "native" : mode == 2 ? "generic" : "none";
}

/* How floodgate is attached to the device whose programs are l. */
static const char *attach_kind(const struct fg_xdp_list *l)
{
	if (!fg_xdp_list_ours(l))
		return "none";
	return l->dispatcher_id ? "dispatcher" : l->via_link ? "exclusive" : "alone";
}

static const char *attach_kind_text(const struct fg_xdp_list *l)
{
	if (!fg_xdp_list_ours(l))
		return "floodgate is not there";
	if (l->dispatcher_id)
		return "floodgate is a component of libxdp's dispatcher";
	return l->via_link ? "floodgate alone, its exclusive bpf_link" :
			     "floodgate alone, attached by libxdp without a dispatcher (netlink)";
}

/* floodgate's place in run order (1-based), 0 when it is not there. */
static int ours_position(const struct fg_xdp_list *l)
{
	for (int i = 0; i < l->n; i++)
		if (l->e[i].ours)
			return i + 1;
	return 0;
}

static void chain_text(__u32 bits, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = 0;
	for (int a = 0; a < 5 && o < len; a++)
		if (bits & (1u << a))
			o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? "," : "",
					      fg_xdp_action_names[a]);
}

static void print_xdp_text(const struct status *st, __u32 i)
{
	const struct fg_xdp_list *l = &st->xdp[i];
	int pos = ours_position(l);

	if (st->xdp_err[i] == -ENODEV) {
		printf("           xdp: not listed: no device %s (ifindex %u) in this network "
		       "namespace; run status in the interface's namespace\n",
		       st->meta.ifs[i].name, st->meta.ifs[i].ifindex);
		return;
	}
	if (st->xdp_err[i]) {
		printf("           xdp: cannot list its programs: %s\n", strerror(-st->xdp_err[i]));
		return;
	}
	if (!l->n) {
		printf("           xdp: no XDP program on the device\n");
		return;
	}
	printf("           xdp: %d program(s), %s", l->n, fg_xdp_mode_str(l->mode));
	if (l->dispatcher_id)
		printf(", libxdp dispatcher id %u%s", l->dispatcher_id, l->frags ? ", frags" : "");
	printf("; %s", attach_kind_text(l));
	if (pos)
		printf(", %d of %d in run order", pos, l->n);
	printf("\n");
	for (int k = 0; k < l->n; k++) {
		const struct fg_xdp_entry *e = &l->e[k];
		char chain[64];

		printf("             %d. %s (id %u", k + 1, e->name, e->id);
		if (e->run_prio != FG_XDP_PRIO_NONE) {
			chain_text(e->chain_actions, chain, sizeof(chain));
			printf(", priority %u, continues on %s", e->run_prio,
			       chain[0] ? chain : "nothing");
		}
		printf(")%s\n", e->ours ? " <- floodgate" : "");
	}
}

static bool bypass_on(const struct status *st)
{
	return st->ctl.bypass && (!st->ctl.bypass_until || st->ctl.bypass_until > st->now);
}

static const char *rule_name_at(const struct status *st, const struct fg_rule *r)
{
	return r->id < FG_MAX_IDS && st->names[r->id].in_use ? st->names[r->id].name : "?";
}

/* Seconds since the daemon's last count; -1: never counted. */
static long long counted_ago(const struct status *st)
{
	time_t now = time(NULL);

	if (!st->counted_at)
		return -1;
	return (__u64)now > st->counted_at ? (long long)((__u64)now - st->counted_at) : 0;
}

/* From the daemon's last pass over the tables (docs/operators-guide.md,
 * "The daemon's own cost"): status itself reads no table. */
static void print_sources_text(const struct status *st)
{
	long long ago = counted_ago(st);

	if (ago < 0) {
		printf("sources:   not counted yet (floodgated counts them as it runs; max %llu each)\n",
		       (unsigned long long)st->meta.max_sources);
		return;
	}
	printf("sources:   %llu IPv4, %llu IPv6 (max %llu each; counted %lld s ago%s)\n",
	       (unsigned long long)st->n4, (unsigned long long)st->n6,
	       (unsigned long long)st->meta.max_sources, ago,
	       st->running ? "" : " by a daemon that is gone");
}

/* "floodgated pid N is adopting the pinned filter (for 2 s)", a start
 * that fg_meta does not name yet */
static void print_start_text(const struct fg_start_state *s, bool pinned)
{
	__u64 now = (__u64)time(NULL);
	long long took = now > s->since ? (long long)(now - s->since) : 0;

	if (s->phase == FG_START_ADOPTING)
		printf("daemon:    floodgated pid %u is adopting the pinned filter (for %lld s); "
		       "the filter keeps enforcing the last policy meanwhile\n",
		       s->pid, took);
	else
		printf("daemon:    floodgated pid %u is starting (for %lld s)%s\n", s->pid, took,
		       pinned ? ": not attached yet" : ": nothing loaded or attached yet");
}

static void print_daemon_text(const struct status *st)
{
	if (st->starting) {
		print_start_text(&st->start, true);
	} else if (st->state == FG_DAEMON_STOPPED) {
		printf("daemon:    floodgated pid %u is STOPPED (SIGSTOP): the filter keeps "
		       "enforcing; kill -CONT %u\n",
		       st->meta.pid, st->meta.pid);
	} else if (st->running) {
		time_t t = (time_t)st->meta.started;
		char ts[64];

		strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", localtime(&t));
		printf("daemon:    floodgated pid %u, running since %s\n", st->meta.pid, ts);
	} else {
		printf("daemon:    not running%s\n",
		       st->meta.n_ifs ? " (the pinned filter keeps enforcing the last policy)" :
					"");
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
		printf("bypass:    %s\n",
		       c->bypass ? "ON until switched off: everything passes" : "off");
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
		       "'floodgate mode file' returns to it%s)\n",
		       cli_mode_str(st->mode), since, cli_mode_str(st->ctl.mode), drops);
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
			       "; the global mode wins" :
			       "");
	else if (st->rule_mode[i] != r->mode)
		printf(" - the global mode wins; the file says %s", cli_mode_str(r->mode));
	printf("\n");
}

static const char *on_loss_str(__u8 on_loss)
{
	return on_loss == FG_LOSS_OPEN	 ? "open" :
	       on_loss == FG_LOSS_CLOSED ? "closed" :
	       on_loss == FG_LOSS_LOCAL	 ? "local" :
					   "?";
}

/* Seconds since a CLOCK_MONOTONIC ns of the daemon's (the same clock). */
static double ago_s(__u64 ns)
{
	__u64 now = fg_mono_ns();

	return now > ns ? (now - ns) / 1e9 : 0;
}

/* What the program does with the rule now: "leased", "on_loss", or
 * "stale" (the entry is another rule's: it drops). */
static const char *fleet_program_str(const struct status *st, const struct fleet_rule_view *v)
{
	if (v->lease.gen != v->rule->gen)
		return "stale";
	return v->lease.lease_expires > st->now ? "leased" : "on_loss";
}

static void fleet_rule_text(const struct status *st, const struct fleet_rule_view *v)
{
	const struct fg_fleet_rule_status *e = v->eng;
	const char *prog = fleet_program_str(st, v);

	printf("  %-24s ", rule_name_at(st, v->rule));
	if (!strcmp(prog, "leased"))
		printf("leased: %lld tokens, %.2f s left; on_loss %s", (long long)v->lease.tokens,
		       (v->lease.lease_expires - st->now) / 1e9, on_loss_str(v->lease.on_loss));
	else if (!strcmp(prog, "stale"))
		printf("lease entry is another rule's: the program drops");
	else if (v->lease.lease_expires)
		printf("on_loss %s applies (the lease ran out %.1f s ago)",
		       on_loss_str(v->lease.on_loss), (st->now - v->lease.lease_expires) / 1e9);
	else
		printf("on_loss %s applies (no lease yet)", on_loss_str(v->lease.on_loss));
	printf("; %u nodes\n", v->lease.nodes);
	printf("  %-24s decided under on_loss %llu packets, fleet drops %llu\n", "",
	       (unsigned long long)v->row->ev[FG_EV_FLEET_LOSS],
	       (unsigned long long)v->row->ev[FG_EV_FLEET_DROP]);
	if (!e)
		return;
	/* the share is Redis's last answer: history unless the engine is ok */
	printf("  %-24s engine %s, share %.1f%%%s, granted %llu, returned %llu, discarded %llu, "
	       "fallbacks %llu (%.1f s), timeouts %llu\n",
	       "", fg_fleet_state_name(e->st.state), e->st.share_ppm / 1e4,
	       e->st.state == FG_FLEET_OK ? "" : " (last answer)",
	       (unsigned long long)e->st.granted, (unsigned long long)e->st.returned,
	       (unsigned long long)e->st.discarded, (unsigned long long)e->st.fallbacks,
	       e->st.fallback_ns / 1e9, (unsigned long long)e->st.timeouts);
	if (e->st.reason[0])
		printf("  %-24s error now: %s\n", "", e->st.reason);
	else if (e->st.last_error[0])
		printf("  %-24s last error %.1f s ago (history: redis answers now): %s\n", "",
		       ago_s(e->st.last_error_ns), e->st.last_error);
	if (e->st.degraded)
		printf("  %-24s DEGRADED: redis held implausible values, repaired (%llu by this "
		       "node): %s\n",
		       "", (unsigned long long)e->st.repairs, e->st.health);
}

/* The fleet lines: the connection, then each fleet rule. */
static void fleet_text(const struct status *st)
{
	const struct fleet_view *fv = &st->fleet;
	const struct fg_fleet_status *ds = &fv->ds;

	if (!fv->n)
		return;
	if (!fv->ds_err)
		printf("fleet:     node %s, redis %s, lease interval %u ms, lease %u ms, deadline %u ms; "
		       "last round %.2f ms (max %.2f)\n",
		       ds->node, ds->redis, ds->interval_ms, ds->lease_ms, ds->deadline_ms,
		       ds->cs.last_round_ns / 1e6, ds->cs.max_round_ns / 1e6);
	else if (!st->running)
		printf("fleet:     no daemon: each rule spends its last lease, then the program applies "
		       "its on_loss\n");
	else
		printf("fleet:     the daemon's fleet status is not available (%s: %s)\n",
		       fv->ds_path,
		       fv->ds_err == -EPROTO ? "another version" : strerror(-fv->ds_err));
	for (int i = 0; i < fv->n; i++)
		fleet_rule_text(st, &fv->r[i]);
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

static void print_escalation_text(const struct status *st)
{
	const struct fg_esc_counts *n = &st->est.n;

	if (st->esc_err) {
		printf("escalation: cannot read the runtime lists: %s\n", strerror(-st->esc_err));
		return;
	}
	if (!st->have_est) {
		printf("escalation: %zu escalated entries live on the runtime deny list; no daemon's "
		       "counters (none are added without floodgated)\n",
		       st->esc_live);
		return;
	}
	if (!n->rules && !st->esc_live) {
		printf("escalation: off (no rule of the active policy has escalate:)\n");
		return;
	}
	printf("escalation: %u rules escalate; %zu escalated entries live (at most %u); "
	       "escalated %llu, refused at the cap %llu, would escalate (shadow) %llu\n",
	       n->rules, st->esc_live, n->max, (unsigned long long)n->escalated,
	       (unsigned long long)n->refused, (unsigned long long)n->shadow);
	if (st->esc_live >= n->max && n->rules)
		printf("            at the cap: new escalations are refused (and counted) until "
		       "one ends\n");
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
		print_xdp_text(st, i);
	}
	print_mode_text(st);
	print_bypass_text(st);
	printf("policy:    version %llu, slot %u, %u rules, default %s\n",
	       (unsigned long long)pol->version, st->ctl.slot, pol->nrules,
	       pol->default_verdict ? "drop" : "pass");
	print_file_text(st);
	for (__u32 i = 0; i < pol->nrules && i < FG_MAX_RULES; i++)
		print_rule_text(st, i);
	print_sources_text(st);
	fleet_text(st);
	print_shedding_text(st);
	print_escalation_text(st);
	cli_kernel_text(stdout, fg_kfeat_get(), false);
}

/* status --json's daemon of a start in progress (startstate.h) */
static struct json_object *start_json(const struct fg_start_state *s, int *err)
{
	struct json_object *d = json_object_new_object();

	cli_json_add(err, d, "running", json_object_new_boolean(false));
	cli_json_add(err, d, "state", json_object_new_string(fg_start_phase_name(s->phase)));
	cli_json_add(err, d, "pid", json_object_new_uint64(s->pid));
	cli_json_add(err, d, "started", json_object_new_uint64(s->since));
	return d;
}

/* {"running":bool,"state":s,"pid":n,"started":n}: running only when it
 * runs (not stopped); state "starting" or "adopting" while a daemon's
 * start is in progress (its pid, and when it began); pid and started are
 * 0 when there is none */
static struct json_object *daemon_json(const struct status *st, int *err)
{
	struct json_object *d;

	if (st->starting)
		return start_json(&st->start, err);
	d = json_object_new_object();

	cli_json_add(err, d, "running", json_object_new_boolean(st->state == FG_DAEMON_RUNNING));
	cli_json_add(err, d, "state", json_object_new_string(fg_daemon_state_name(st->state)));
	cli_json_add(err, d, "pid", json_object_new_uint64(st->running ? st->meta.pid : 0));
	cli_json_add(err, d, "started", json_object_new_uint64(st->running ? st->meta.started : 0));
	return d;
}

/* "attach": none|dispatcher|exclusive|alone|unknown (not readable here:
 * another network namespace), "position": n|null,
 * "dispatcher_id": n, "programs": [{id, name, priority|null, chain, mode, ours}] */
static void xdp_json(const struct status *st, __u32 i, struct json_object *o, int *err)
{
	const struct fg_xdp_list *l = &st->xdp[i];
	struct json_object *progs = json_object_new_array();
	int pos = st->xdp_err[i] ? 0 : ours_position(l);

	cli_json_add(err, o, "attach",
		     json_object_new_string(st->xdp_err[i] ? "unknown" : attach_kind(l)));
	if (pos)
		cli_json_add(err, o, "position", json_object_new_uint64((__u64)pos));
	else
		cli_json_add_null(err, o, "position");
	cli_json_add(err, o, "dispatcher_id", json_object_new_uint64(l->dispatcher_id));
	for (int k = 0; !st->xdp_err[i] && k < l->n; k++) {
		const struct fg_xdp_entry *e = &l->e[k];
		struct json_object *p = json_object_new_object(), *chain = json_object_new_array();

		cli_json_add(err, p, "id", json_object_new_uint64(e->id));
		cli_json_add(err, p, "name", json_object_new_string(e->name));
		if (e->run_prio != FG_XDP_PRIO_NONE)
			cli_json_add(err, p, "priority", json_object_new_uint64(e->run_prio));
		else
			cli_json_add_null(err, p, "priority");
		for (int a = 0; a < 5; a++)
			if (e->chain_actions & (1u << a))
				cli_json_push(err, chain,
					      json_object_new_string(fg_xdp_action_names[a]));
		cli_json_add(err, p, "chain", chain);
		cli_json_add(err, p, "mode",
			     json_object_new_string(l->mode == FG_XDP_SKB ? "generic" : "native"));
		cli_json_add(err, p, "ours", json_object_new_boolean(e->ours));
		cli_json_push(err, progs, p);
	}
	cli_json_add(err, o, "programs", progs);
}

static struct json_object *ifaces_json(const struct status *st, int *err)
{
	struct json_object *arr = json_object_new_array();

	for (__u32 i = 0; i < st->meta.n_ifs && i < FG_MAX_IFS; i++) {
		const struct fg_meta_if *mi = &st->meta.ifs[i];
		struct json_object *o = json_object_new_object();

		cli_json_add(err, o, "name", json_object_new_string(mi->name));
		cli_json_add(err, o, "ifindex", json_object_new_uint64(mi->ifindex));
		cli_json_add(err, o, "xdp_mode",
			     json_object_new_string(xdp_mode_str(mi->xdp_mode)));
		cli_json_add(err, o, "attached", json_object_new_boolean(st->attached[i]));
		xdp_json(st, i, o, err);
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
 *  "thresholds": {the same}, "not_shedding": "off"|"bypass"|"shadow"|null,
 *  "shadow": bool, "off": bool, "decays_in_s": number,
 *  "pools": [{"name": str, "id": n, "exempt": bool}], "shed_pkts": {"RULE": n}}
 * controller: the running daemon runs one (its fields null otherwise);
 * shed: fractions in [0, 1] the program sheds now (0 while off, bypass or
 * shadow: not_shedding says which); thresholds: the pinned ones as decayed
 * now, whatever holds them off; off: the
 * operator's switch (floodgate shed off); exempt: the pool's shedding: off;
 * shed_pkts: outcome shed of each rule with a tier other than critical or a pool.
 */
static struct json_object *shed_pools_json(const struct status *st, int *err)
{
	struct json_object *a = json_object_new_array();
	const struct fg_policy *pol = &st->pol;

	for (__u32 i = 0; i < pol->npools && i < FG_MAX_POOLS; i++) {
		struct json_object *p = json_object_new_object();
		char name[FG_NAME_LEN + 1];

		snprintf(name, sizeof(name), "%.*s", FG_NAME_LEN, pol->pool_names[i]);
		cli_json_add(err, p, "name", json_object_new_string(name));
		cli_json_add(err, p, "id", json_object_new_uint64(pol->pools[i].id));
		cli_json_add(err, p, "exempt", json_object_new_boolean(pool_exempt(pol, i)));
		cli_json_push(err, a, p);
	}
	return a;
}

static struct json_object *shed_pkts_json(const struct status *st, int *err)
{
	struct json_object *o = json_object_new_object();
	const struct fg_policy *pol = &st->pol;

	for (__u32 i = 0; st->shed_rules && i < pol->nrules && i < FG_MAX_RULES; i++) {
		const struct fg_rule *r = &pol->rules[i];

		if ((r->tier == FG_TIER_CRITICAL && r->pool == FG_POOL_NONE) || r->id >= FG_MAX_IDS)
			continue;
		cli_json_add(err, o, rule_name_at(st, r),
			     json_object_new_uint64(st->shed_rows[r->id].pkts[FG_OUT_SHED]));
	}
	return o;
}

static struct json_object *shedding_json(const struct status *st, int *err)
{
	struct json_object *o = json_object_new_object(), *f = json_object_new_object();
	struct json_object *th = json_object_new_object();
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
			cli_json_add(err, o, "signal_error",
				     json_object_new_string(s->sig_why[0] ? s->sig_why :
									    strerror(-s->sig_err)));
		}
		cli_json_add(err, o, "phase", json_object_new_string(s->phase));
		cli_json_add(err, o, "hold", json_object_new_string(s->hold));
		cli_json_add(err, o, "amount", num_json(s->amount, "%.10g"));
		cli_json_add(err, o, "tiers", json_object_new_uint64((__u64)s->ntiers));
		cli_json_add(err, o, "pressure_s", num_json(s->pressure, "%.6g"));
	} else {
		static const char *const keys[] = { "signal", "value",	"signal_error", "phase",
						    "hold",   "amount", "pressure_s" };

		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			cli_json_add_null(err, o, keys[i]);
		cli_json_add(err, o, "tiers", json_object_new_uint64(0));
	}
	for (int t = 0; t < FG_NTIERS; t++) {
		cli_json_add(err, f, fg_tier_name(t), num_json(st->frac[t], "%.10g"));
		cli_json_add(err, th, fg_tier_name(t), num_json(st->thr[t], "%.10g"));
	}
	cli_json_add(err, o, "shed", f);
	cli_json_add(err, o, "thresholds", th);
	if (st->idle != FG_SHED_APPLIES)
		cli_json_add(err, o, "not_shedding",
			     json_object_new_string(fg_shed_idle_name(st->idle)));
	else
		cli_json_add_null(err, o, "not_shedding");
	cli_json_add(err, o, "shadow", json_object_new_boolean(st->shed.shadow != 0));
	cli_json_add(err, o, "off", json_object_new_boolean(st->shed.off != 0));
	cli_json_add(err, o, "decays_in_s", num_json(shed_left_s(st), "%.4g"));
	cli_json_add(err, o, "pools", shed_pools_json(st, err));
	cli_json_add(err, o, "shed_pkts", shed_pkts_json(st, err));
	return o;
}

static struct json_object *policy_json(const struct status *st, int *err)
{
	struct json_object *p = json_object_new_object(), *rules = json_object_new_array();
	const struct fg_policy *pol = &st->pol;

	cli_json_add(err, p, "version", json_object_new_uint64(pol->version));
	cli_json_add(err, p, "slot", json_object_new_uint64(st->ctl.slot));
	cli_json_add(err, p, "default",
		     json_object_new_string(pol->default_verdict ? "drop" : "pass"));
	for (__u32 i = 0; i < pol->nrules && i < FG_MAX_RULES; i++) {
		const struct fg_rule *r = &pol->rules[i];
		struct json_object *o = json_object_new_object();

		cli_json_add(err, o, "name", json_object_new_string(rule_name_at(st, r)));
		cli_json_add(err, o, "action", json_object_new_string(cli_action_str(r->action)));
		cli_json_add(err, o, "mode",
			     json_object_new_string(cli_mode_str(st->rule_mode[i])));
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

static struct json_object *json_ms(double v)
{
	char txt[32];

	snprintf(txt, sizeof(txt), "%.3f", v);
	return json_object_new_double_s(v, txt);
}

/* The engine's fields of one rule, null without a daemon's view. */
static void fleet_engine_json(const struct fg_fleet_rule_status *e, struct json_object *o, int *err)
{
	static const char *const keys[] = { "key",	  "state",
					    "share",	  "granted",
					    "returned",	  "discarded",
					    "debt",	  "grace_entries",
					    "fallbacks",  "fallback_s",
					    "rounds",	  "failed",
					    "timeouts",	  "lapses",
					    "lapse_s",	  "reason",
					    "last_error", "last_error_s_ago",
					    "degraded",	  "degraded_reason",
					    "repairs",	  "last_repair_s_ago" };

	if (!e) {
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			cli_json_add_null(err, o, keys[k]);
		return;
	}
	cli_json_add(err, o, "key", json_object_new_string(e->key));
	cli_json_add(err, o, "state", json_object_new_string(fg_fleet_state_name(e->st.state)));
	cli_json_add(err, o, "share", json_ms(e->st.share_ppm / 1e6));
	cli_json_add(err, o, "granted", json_object_new_uint64(e->st.granted));
	cli_json_add(err, o, "returned", json_object_new_uint64(e->st.returned));
	cli_json_add(err, o, "discarded", json_object_new_uint64(e->st.discarded));
	cli_json_add(err, o, "debt", json_object_new_uint64(e->st.debt));
	cli_json_add(err, o, "grace_entries", json_object_new_uint64(e->st.grace_entries));
	cli_json_add(err, o, "fallbacks", json_object_new_uint64(e->st.fallbacks));
	cli_json_add(err, o, "fallback_s", json_ms(e->st.fallback_ns / 1e9));
	cli_json_add(err, o, "rounds", json_object_new_uint64(e->st.rounds));
	cli_json_add(err, o, "failed", json_object_new_uint64(e->st.failed));
	cli_json_add(err, o, "timeouts", json_object_new_uint64(e->st.timeouts));
	cli_json_add(err, o, "lapses", json_object_new_uint64(e->lapses));
	cli_json_add(err, o, "lapse_s", json_ms(e->lapse_ns / 1e9));
	/* the failure now; the last one is history, with its age */
	if (e->st.reason[0])
		cli_json_add(err, o, "reason", json_object_new_string(e->st.reason));
	else
		cli_json_add_null(err, o, "reason");
	if (e->st.last_error_ns) {
		cli_json_add(err, o, "last_error", json_object_new_string(e->st.last_error));
		cli_json_add(err, o, "last_error_s_ago", json_ms(ago_s(e->st.last_error_ns)));
	} else {
		cli_json_add_null(err, o, "last_error");
		cli_json_add_null(err, o, "last_error_s_ago");
	}
	cli_json_add(err, o, "degraded", json_object_new_boolean(e->st.degraded != 0));
	if (e->st.degraded)
		cli_json_add(err, o, "degraded_reason", json_object_new_string(e->st.health));
	else
		cli_json_add_null(err, o, "degraded_reason");
	cli_json_add(err, o, "repairs", json_object_new_uint64(e->st.repairs));
	if (e->st.repaired_ns)
		cli_json_add(err, o, "last_repair_s_ago", json_ms(ago_s(e->st.repaired_ns)));
	else
		cli_json_add_null(err, o, "last_repair_s_ago");
}

static struct json_object *fleet_rule_json(const struct status *st, const struct fleet_rule_view *v,
					   int *err)
{
	struct json_object *o = json_object_new_object();
	const struct fg_lease *l = &v->lease;

	cli_json_add(err, o, "name", json_object_new_string(rule_name_at(st, v->rule)));
	cli_json_add(err, o, "id", json_object_new_uint64(v->rule->id));
	cli_json_add(err, o, "on_loss", json_object_new_string(on_loss_str(l->on_loss)));
	cli_json_add(err, o, "program", json_object_new_string(fleet_program_str(st, v)));
	cli_json_add(err, o, "tokens", json_object_new_int64(l->tokens));
	cli_json_add(err, o, "lease_left_s",
		     json_ms(l->lease_expires > st->now ? (l->lease_expires - st->now) / 1e9 : 0));
	if (l->lease_expires && l->lease_expires <= st->now)
		cli_json_add(err, o, "lease_expired_s_ago",
			     json_ms((st->now - l->lease_expires) / 1e9));
	else
		cli_json_add_null(err, o, "lease_expired_s_ago");
	cli_json_add(err, o, "nodes", json_object_new_uint64(l->nodes));
	cli_json_add(err, o, "offered", json_object_new_uint64(v->row->fleet_offered));
	cli_json_add(err, o, "unleased", json_object_new_uint64(v->row->fleet_unleased));
	cli_json_add(err, o, "decided_under_on_loss",
		     json_object_new_uint64(v->row->ev[FG_EV_FLEET_LOSS]));
	cli_json_add(err, o, "fleet_drops", json_object_new_uint64(v->row->ev[FG_EV_FLEET_DROP]));
	fleet_engine_json(v->eng, o, err);
	return o;
}

/* Some rule's engine repaired values Redis held lately. */
static bool fleet_degraded(const struct fleet_view *fv)
{
	for (int i = 0; i < fv->n; i++)
		if (fv->r[i].eng && fv->r[i].eng->st.degraded)
			return true;
	return false;
}

/* null without fleet rules; the schema is in floodgate(8), JSON OUTPUT */
static struct json_object *fleet_json(const struct status *st, int *err)
{
	const struct fleet_view *fv = &st->fleet;
	const struct fg_fleet_status *ds = &fv->ds;
	struct json_object *f, *rules;
	bool have = !fv->ds_err;

	if (!fv->n)
		return NULL;
	f = json_object_new_object();
	rules = json_object_new_array();
	cli_json_add(err, f, "daemon", json_object_new_boolean(have));
	if (have) {
		cli_json_add(err, f, "node", json_object_new_string(ds->node));
		cli_json_add(err, f, "redis", json_object_new_string(ds->redis));
		cli_json_add(err, f, "lease_interval_ms", json_object_new_uint64(ds->interval_ms));
		cli_json_add(err, f, "lease_ms", json_object_new_uint64(ds->lease_ms));
		cli_json_add(err, f, "deadline_ms", json_object_new_uint64(ds->deadline_ms));
		cli_json_add(err, f, "updated_s_ago",
			     json_ms((fg_mono_ns() - ds->updated_ns) / 1e9));
		cli_json_add(err, f, "round_ms", json_ms(ds->cs.last_round_ns / 1e6));
		cli_json_add(err, f, "round_max_ms", json_ms(ds->cs.max_round_ns / 1e6));
		cli_json_add(err, f, "evalsha", json_object_new_uint64(ds->cs.commands));
		cli_json_add(err, f, "degraded", json_object_new_boolean(fleet_degraded(fv)));
	} else {
		static const char *const keys[] = { "node",	"redis",	"lease_interval_ms",
						    "lease_ms", "deadline_ms",	"updated_s_ago",
						    "round_ms", "round_max_ms", "evalsha",
						    "degraded" };

		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			cli_json_add_null(err, f, keys[k]);
	}
	for (int i = 0; i < fv->n; i++)
		cli_json_push(err, rules, fleet_rule_json(st, &fv->r[i], err));
	cli_json_add(err, f, "rules", rules);
	return f;
}

/* {"live": n, "rules", "max", "escalated", "refused", "would_escalate": n|null
 * (null: no running daemon's counters)} */
static struct json_object *escalation_json(const struct status *st, int *err)
{
	struct json_object *o = json_object_new_object();
	const struct fg_esc_counts *n = &st->est.n;
	const char *keys[] = { "rules", "max", "escalated", "refused", "would_escalate" };
	__u64 vals[] = { n->rules, n->max, n->escalated, n->refused, n->shadow };

	cli_json_add(err, o, "live", json_object_new_uint64(st->esc_live));
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (st->have_est)
			cli_json_add(err, o, keys[i], json_object_new_uint64(vals[i]));
		else
			cli_json_add_null(err, o, keys[i]);
	}
	return o;
}

/* {"floodgate": s, "libbpf": s, "libxdp": s}: this CLI's build (lib/version.h) */
static struct json_object *version_json(int *err)
{
	struct json_object *o = json_object_new_object();

	cli_json_add(err, o, "floodgate", json_object_new_string(fg_version()));
	cli_json_add(err, o, "libbpf", json_object_new_string(fg_libbpf_version()));
	cli_json_add(err, o, "libxdp", json_object_new_string(fg_libxdp_version()));
	return o;
}

/* The schema is documented in floodgate(8), JSON OUTPUT. */
static int status_json(const struct cli_args *a, const struct status *st)
{
	struct json_object *root = json_object_new_object(), *src = json_object_new_object();
	int err = 0;

	cli_json_add(&err, root, "pin_dir", json_object_new_string(st->dir));
	cli_json_add(&err, root, "abi", json_object_new_uint64(st->ctl.abi));
	cli_json_add(&err, root, "version", version_json(&err));
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
	cli_json_add(&err, root, "kernel", cli_kernel_json(fg_kfeat_get(), &err));
	if (file_not_applied(st))
		cli_json_add(&err, root, "file_not_applied",
			     json_object_new_string(file_not_applied(st)));
	else
		cli_json_add_null(&err, root, "file_not_applied");
	cli_json_add(&err, src, "ipv4", json_object_new_uint64(st->n4));
	cli_json_add(&err, src, "ipv6", json_object_new_uint64(st->n6));
	cli_json_add(&err, src, "max", json_object_new_uint64(st->meta.max_sources));
	if (st->counted_at)
		cli_json_add(&err, src, "counted_at", json_object_new_uint64(st->counted_at));
	else
		cli_json_add_null(&err, src, "counted_at");
	cli_json_add(&err, root, "sources", src);
	if (st->fleet.n)
		cli_json_add(&err, root, "fleet", fleet_json(st, &err));
	else
		cli_json_add_null(&err, root, "fleet");
	cli_json_add(&err, root, "concurrency", cli_conn_status_json(a, st->names, &err));
	cli_json_add(&err, root, "shedding", shedding_json(st, &err));
	cli_json_add(&err, root, "escalation", escalation_json(st, &err));
	cli_json_add(&err, root, "syn_auth",
		     cli_synauth_status_json(st->m, &st->pol, st->dir, &err));
	return cli_json_print(root, err);
}

/* Nothing pinned yet, a daemon starting: the pin dir and the daemon only. */
static int status_starting(const struct cli_args *a, const struct status *st)
{
	struct json_object *root;
	int err = 0;

	if (!a->json) {
		printf("pin dir:   %s (nothing pinned yet)\n", st->dir);
		print_start_text(&st->start, false);
		return 0;
	}
	root = json_object_new_object();
	cli_json_add(&err, root, "pin_dir", json_object_new_string(st->dir));
	cli_json_add(&err, root, "daemon", start_json(&st->start, &err));
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
	st->m = &m;
	if (!fg_pin_dir_populated(a->dir) && !fg_start_state_read(a->dir, &st->start)) {
		/* a fresh start that has pinned nothing yet */
		err = status_starting(a, st);
		free(st);
		return err ? 1 : 0;
	}
	err = cli_open_maps(a, &m);
	if (err) {
		free(st);
		return 1;
	}
	err = status_read(&m, st);
	if (err) {
		pr_warn("reading %s: %s", a->dir, strerror(-err));
	} else if (a->json) {
		err = status_json(a, st);
		if (err)
			pr_warn("status --json: %s", strerror(-err));
	} else {
		cli_wrap_begin();
		status_text(st);
		cli_conn_status_text(a, st->names);
		cli_synauth_status_text(&m, &st->pol, a->dir);
		cli_wrap_end();
	}
	fg_maps_close(&m);
	free(st);
	return err ? 1 : 0;
}
