// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* floodgated's adaptive shedder loop: signal -> controller -> fg_shed (shedd.h). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "lib/log.h"
#include "daemon/shedd.h"
#include "shed/shedstate.h"
#include "lib/sysutil.h"

#define LOAD(p)	    __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/*
 * Field by field (the CLI owns `off`). Shedding more: thresholds first,
 * then the deadline. Shedding nothing: end = 0 first, which stops it at
 * once whatever thresholds a packet still reads.
 */
static void publish(struct fg_shedd *sd, __u64 now_ns)
{
	struct fg_shed_ctl *v = sd->map;
	__u64 end = 0;
	__u32 hshift = FG_SHED_HSHIFT_MIN;
	bool shed = sd->on && sd->hold == FG_SHEDD_RUN && sd->out.active;

	if (!v)
		return;
	STORE(&v->shadow, (__u32)sd->shadow);
	if (!shed) {
		STORE(&v->end, 0);
		for (int t = 0; t < FG_NTIERS; t++)
			for (int k = 0; k < FG_SHED_NKIND; k++)
				STORE(&v->thr[t][k], 0);
		return;
	}
	fg_shed_deadline(&sd->c, now_ns, &end, &hshift);
	for (int t = 0; t < FG_NTIERS; t++)
		for (int k = 0; k < FG_SHED_NKIND; k++)
			STORE(&v->thr[t][k], t == FG_TIER_CRITICAL ? 0 : sd->out.thr[t][k]);
	STORE(&v->hshift, hshift);
	STORE(&v->end, end);
}

/* The amount S whose output has these per-tier fractions: their sum over
 * the tiers in use (one is partial, those below it are full). */
static double amount_of(const struct fg_shed *c, const double frac[FG_NTIERS])
{
	double s = 0;

	for (int r = 0; r < c->ntiers; r++)
		s += frac[c->order[r]];
	return s > c->ntiers ? c->ntiers : s;
}

static void sig_name(const struct fg_signal *sig, char *buf, size_t len)
{
	fg_signal_name(sig, buf, len);
}

void fg_shedd_state_of(const struct fg_shedd *sd, struct fg_shedd_state *st)
{
	const struct fg_shed_cfg *c = &sd->c.cfg;

	memset(st, 0, sizeof(*st));
	st->pid = (__u32)getpid();
	sig_name(&sd->sig, st->signal, sizeof(st->signal));
	st->have_value = sd->have_value;
	st->value = sd->have_value ? sd->value : 0;
	st->sig_err = sd->sig_err;
	snprintf(st->phase, sizeof(st->phase), "%s", fg_shed_phase_name(sd->c.phase));
	snprintf(st->hold, sizeof(st->hold), "%s", fg_shedd_hold_name(sd->hold));
	st->amount = sd->c.amount;
	st->pressure = sd->c.pressure;
	st->ntiers = sd->c.ntiers;
#define COPY(f) st->f = c->f;
	SHED_CFG_FIELDS(COPY)
#undef COPY
	st->samples = sd->samples;
	st->lost = sd->lost;
}

static void state_print(FILE *f, const void *arg)
{
	fg_shedd_state_print(f, arg);
}

/* Written whole to a temporary name, then renamed: a reader sees one sample. */
static int state_write(const struct fg_shedd *sd)
{
	struct fg_shedd_state st;

	if (!sd->state_path[0])
		return 0;
	fg_shedd_state_of(sd, &st);
	return fg_file_replace(sd->state_path, state_print, &st);
}

static int open_signal(const struct fg_config *cfg, struct fg_signal *sig)
{
	*sig = cfg->shed_signal;
	sig->nl = -1;
	return fg_signal_open(sig);
}

static void close_signal(struct fg_shedd *sd)
{
	if (sd->on)
		fg_signal_close(&sd->sig);
}

static enum fg_shedd_hold hold_of(const struct fg_shedd *sd, struct fg_maps *m, __u64 now_ns)
{
	struct fg_ctl ctl;

	/* unreadable fg_ctl: run on; the deadline still bounds what is stored */
	if (!fg_ctl_read(m, &ctl) && ctl.bypass && (!ctl.bypass_until || ctl.bypass_until > now_ns))
		return FG_SHEDD_BYPASS;
	return LOAD(&sd->map->off) ? FG_SHEDD_OFF : FG_SHEDD_RUN;
}

int fg_shedd_start(struct fg_shedd *sd, struct fg_maps *m, const struct fg_config *cfg,
		   const char *state_dir, __u64 now_ns)
{
	double frac[FG_NTIERS];
	int err;

	memset(sd, 0, sizeof(*sd));
	sd->sig.nl = -1;
	err = fg_shed_map_open(m->fd[FGM_SHED], &sd->map, &sd->map_len);
	if (err)
		return err;
	if (!cfg->has_shedding) {
		publish(sd, now_ns); /* a policy without shedding: nothing shed */
		return 0;
	}
	err = fg_shed_init(&sd->c, &cfg->shed);
	if (!err)
		err = open_signal(cfg, &sd->sig);
	if (err) {
		fg_shed_map_close(&sd->map, sd->map_len);
		return err;
	}
	sd->on = true;
	sd->shadow = cfg->shed_mode == FG_MODE_SHADOW;
	sd->interval_ns = (__u64)llround(cfg->shed.interval * 1e9);
	sd->next_ns = now_ns + sd->interval_ns;
	/* adopted: what the last daemon's thresholds decayed to, as the program
	 * sees them; zero while shed off or bypass holds it (the first sample logs why) */
	fg_shedd_fracs(sd->map, now_ns, frac);
	fg_shed_resume(&sd->c,
		       hold_of(sd, m, now_ns) == FG_SHEDD_RUN ? amount_of(&sd->c, frac) : 0);
	fg_shed_output(&sd->c, &sd->out);
	fg_shedd_state_path(state_dir, m->dir, sd->state_path, sizeof(sd->state_path));
	if (state_dir || !mkdir(FG_SHEDD_RUN_DIR, 0755) || errno == EEXIST)
		err = state_write(sd);
	else
		err = -errno;
	if (err)
		sd->state_path[0] = 0; /* status then shows only what the pins hold */
	publish(sd, now_ns);
	return 0;
}

static bool same_signal(const struct fg_signal *a, const struct fg_signal *b)
{
	char na[PATH_MAX + 32], nb[PATH_MAX + 32];

	sig_name(a, na, sizeof(na));
	sig_name(b, nb, sizeof(nb));
	return !strcmp(na, nb);
}

int fg_shedd_reload(struct fg_shedd *sd, const struct fg_config *cfg, __u64 now_ns)
{
	struct fg_shed c;
	struct fg_signal sig;
	double s = sd->on ? sd->c.amount : 0;
	bool reopen;
	int err;

	if (!cfg->has_shedding) {
		close_signal(sd);
		sd->on = false;
		sd->have_value = false;
		publish(sd, now_ns);
		if (sd->state_path[0])
			unlink(sd->state_path);
		return 0;
	}
	if (sd->on && same_signal(&sd->sig, &cfg->shed_signal) &&
	    !memcmp(&sd->c.cfg, &cfg->shed, sizeof(cfg->shed)) &&
	    sd->shadow == (cfg->shed_mode == FG_MODE_SHADOW))
		return 0;
	err = fg_shed_init(&c, &cfg->shed);
	if (err)
		return err;
	reopen = !sd->on || !same_signal(&sd->sig, &cfg->shed_signal);
	if (reopen) {
		err = open_signal(cfg, &sig);
		if (err)
			return err;
		close_signal(sd);
		sd->sig = sig;
		sd->have_value = false;
		sd->sig_err = 0;
	}
	sd->c = c;
	fg_shed_resume(&sd->c, s < c.ntiers ? s : c.ntiers);
	fg_shed_output(&sd->c, &sd->out);
	if (!sd->on)
		sd->last_ns = 0;
	sd->on = true;
	sd->shadow = cfg->shed_mode == FG_MODE_SHADOW;
	sd->interval_ns = (__u64)llround(cfg->shed.interval * 1e9);
	if (!sd->next_ns || sd->next_ns > now_ns + sd->interval_ns)
		sd->next_ns = now_ns + sd->interval_ns;
	publish(sd, now_ns);
	state_write(sd);
	return 0;
}

int fg_shedd_sample(struct fg_shedd *sd, struct fg_maps *m, __u64 now_ns,
		    struct fg_shedd_change *chg)
{
	__u32 was = sd->c.active;
	double dt, u = 0;
	int err;

	memset(chg, 0, sizeof(*chg));
	if (!sd->on || now_ns < sd->next_ns)
		return 0;
	chg->sampled = true;
	/* the first sample after start or adoption counts one interval */
	dt = sd->last_ns ? (now_ns - sd->last_ns) / 1e9 : sd->c.cfg.interval;
	if (!(dt > 0))
		dt = 1e-6;
	sd->last_ns = now_ns;
	sd->next_ns += sd->interval_ns;
	if (sd->next_ns <= now_ns) /* late: skip what was missed */
		sd->next_ns = now_ns + sd->interval_ns;
	sd->samples++;
	chg->hold_was = sd->hold;
	sd->hold = hold_of(sd, m, now_ns);
	chg->hold = sd->hold;

	err = fg_signal_read(&sd->sig, &u);
	if (err) {
		sd->lost++;
		if (err != sd->sig_err)
			chg->sig_err = err;
		sd->sig_err = err;
		sd->have_value = false;
	} else {
		chg->sig_back = sd->sig_err != 0;
		sd->sig_err = 0;
		sd->value = u;
		sd->have_value = true;
	}
	if (sd->hold != FG_SHEDD_RUN) {
		fg_shed_resume(&sd->c, 0); /* held at zero: start again through the delay */
		fg_shed_output(&sd->c, &sd->out);
	} else if (err) {
		fg_shed_lost(&sd->c, dt, &sd->out);
	} else {
		fg_shed_step(&sd->c, u, dt, &sd->out);
	}
	chg->entered = sd->c.active & ~was;
	chg->left = was & ~sd->c.active;
	publish(sd, now_ns);
	err = state_write(sd);
	if (err && !sd->state_failed)
		chg->state_err = err; /* said once, until it works again */
	sd->state_failed = err != 0;
	return 0;
}

void fg_shedd_stop(struct fg_shedd *sd)
{
	if (sd->map) {
		bool on = sd->on;

		sd->on = false;
		publish(sd, 0); /* end = 0: nothing shed from now on */
		sd->on = on;
		fg_shed_map_close(&sd->map, sd->map_len);
	}
	close_signal(sd);
	sd->on = false;
	if (sd->state_path[0])
		unlink(sd->state_path);
	sd->state_path[0] = 0;
}

void fg_shedd_log(const struct fg_shedd *sd, const struct fg_shedd_change *chg)
{
	char name[PATH_MAX + 32];

	if (!chg->sampled)
		return;
	if (chg->hold != chg->hold_was) {
		if (chg->hold == FG_SHEDD_RUN)
			pr_info("shedding: %s is over: the controller starts again from zero",
				chg->hold_was == FG_SHEDD_BYPASS ?
					"bypass" :
					"the operator's 'floodgate shed off'");
		else
			pr_warn("shedding: %s: nothing is shed, the controller is held at zero",
				chg->hold == FG_SHEDD_BYPASS ?
					"bypass is on" :
					"switched off by the operator ('floodgate shed off'; 'shed on' resumes)");
	}
	sig_name(&sd->sig, name, sizeof(name));
	if (chg->sig_err)
		pr_warn("shedding: signal %s cannot be read: %s; shedding decays (fail-open)", name,
			strerror(-chg->sig_err));
	if (chg->sig_back)
		pr_info("shedding: signal %s readable again (%.3f)", name, sd->value);
	for (int t = FG_NTIERS - 1; t > FG_TIER_CRITICAL; t--) {
		if (chg->entered & FG_TIER_BIT(t))
			pr_warn("shedding: tier %s: shedding starts (signal %s %.3f, amount %.3f of %d)%s",
				fg_tier_name(t), name, sd->have_value ? sd->value : NAN,
				sd->c.amount, sd->c.ntiers,
				sd->shadow ? " in shadow: counted, not shed" : "");
		if (chg->left & FG_TIER_BIT(t))
			pr_info("shedding: tier %s: no longer shed (amount %.3f of %d)",
				fg_tier_name(t), sd->c.amount, sd->c.ntiers);
	}
	if (chg->state_err)
		pr_warn("shedding: writing %s: %s (floodgate status will not show the signal)",
			sd->state_path, strerror(-chg->state_err));
}
