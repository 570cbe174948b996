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
#include "lib/sysutil.h"

#define LOAD(p)	    __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

static const char *const hold_names[] = {
	[FG_SHEDD_RUN] = "running",
	[FG_SHEDD_BYPASS] = "bypass",
	[FG_SHEDD_OFF] = "off",
};

const char *fg_shedd_hold_name(enum fg_shedd_hold h)
{
	return h <= FG_SHEDD_OFF ? hold_names[h] : "?";
}

void fg_shedd_fracs(const struct fg_shed_ctl *v, __u64 now_ns, double frac[FG_NTIERS])
{
	__u64 end = LOAD(&v->end);
	__u32 hshift = LOAD(&v->hshift);

	for (int t = 0; t < FG_NTIERS; t++)
		frac[t] = t == FG_TIER_CRITICAL ?
				  0 :
				  (double)fg_shed_decayed(LOAD(&v->thr[t][FG_SHED_ANY]), end,
							  hshift, now_ns) /
					  FG_SHED_ONE;
}

int fg_shed_map_open(int fd, struct fg_shed_ctl **v, size_t *len)
{
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	if (page <= 0)
		return -EINVAL;
	if (bpf_obj_get_info_by_fd(fd, &info, &ilen))
		return -errno;
	if (info.type != BPF_MAP_TYPE_ARRAY || info.max_entries != 1 ||
	    info.value_size != sizeof(struct fg_shed_ctl) || !(info.map_flags & BPF_F_MMAPABLE))
		return -EPROTO;
	*len = (sizeof(struct fg_shed_ctl) + (size_t)page - 1) & ~((size_t)page - 1);
	p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	*v = p;
	return 0;
}

void fg_shed_map_close(struct fg_shed_ctl **v, size_t len)
{
	if (*v)
		munmap(*v, len);
	*v = NULL;
}

int fg_shed_switch_off(struct fg_shed_ctl *v, bool off, bool *was)
{
	if (!v)
		return -EINVAL;
	*was = LOAD(&v->off) != 0;
	STORE(&v->off, off ? 1u : 0u);
	return 0;
}

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

void fg_shedd_state_path(const char *state_dir, const char *pin_dir, char *buf, size_t len)
{
	fg_state_path(state_dir ? state_dir : FG_SHEDD_RUN_DIR, "shed", pin_dir, buf, len);
}

/* The controller's settings the state file carries: fields of both struct
 * fg_shed_cfg and struct fg_shedd_state, each a line "NAME %.6f". */
#define SHED_CFG_FIELDS(X) X(interval) X(delay) X(ramp) X(decay) X(good) X(bad) X(orphan)

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

/* The state file, one "key value" line a field in this order (fg_shedd_state_read). */
enum {
	SF_U32,
	SF_INT,
	SF_U64,
	SF_STR,
	SF_VALUE,
	SF_D6,
	SF_D9
};
#define SF(key, type, field)                                        \
	{                                                           \
		key, type, offsetof(struct fg_shedd_state, field),  \
			sizeof(((struct fg_shedd_state *)0)->field) \
	}
static const struct {
	const char *key;
	int type;
	size_t off, size;
} state_fields[] = {
	SF("pid", SF_U32, pid),
	SF("signal", SF_STR, signal),
	SF("value", SF_VALUE, value),
	SF("signal_error", SF_INT, sig_err),
	SF("phase", SF_STR, phase),
	SF("hold", SF_STR, hold),
	SF("amount", SF_D9, amount),
	SF("pressure", SF_D6, pressure),
	SF("tiers", SF_INT, ntiers),
#define SF_CFG(f) SF(#f, SF_D6, f),
	SHED_CFG_FIELDS(SF_CFG)
#undef SF_CFG
		SF("samples", SF_U64, samples),
	SF("lost", SF_U64, lost),
};
#undef SF

static void state_field_print(FILE *f, const struct fg_shedd_state *st, int i)
{
	const void *p = (const char *)st + state_fields[i].off;

	fprintf(f, "%s ", state_fields[i].key);
	switch (state_fields[i].type) {
	case SF_U32:
		fprintf(f, "%u\n", *(const __u32 *)p);
		break;
	case SF_INT:
		fprintf(f, "%d\n", *(const int *)p);
		break;
	case SF_U64:
		fprintf(f, "%llu\n", (unsigned long long)*(const __u64 *)p);
		break;
	case SF_STR:
		fprintf(f, "%s\n", (const char *)p);
		break;
	case SF_VALUE:
		fprintf(f, "%s%.6f\n", st->have_value ? "" : "-", st->value);
		break;
	case SF_D6:
		fprintf(f, "%.6f\n", *(const double *)p);
		break;
	default:
		fprintf(f, "%.9f\n", *(const double *)p);
		break;
	}
}

static void state_field_parse(struct fg_shedd_state *st, int i, const char *val)
{
	void *p = (char *)st + state_fields[i].off;
	unsigned long long u;

	switch (state_fields[i].type) {
	case SF_U32:
		if (sscanf(val, "%llu", &u) == 1)
			*(__u32 *)p = (__u32)u;
		break;
	case SF_INT:
		*(int *)p = atoi(val);
		break;
	case SF_U64:
		if (sscanf(val, "%llu", &u) == 1)
			*(__u64 *)p = u;
		break;
	case SF_STR:
		snprintf(p, state_fields[i].size, "%s", val);
		break;
	case SF_VALUE:
		st->have_value = val[0] != '-' && sscanf(val, "%lf", &st->value) == 1;
		break;
	default:
		*(double *)p = strtod(val, NULL);
		break;
	}
}

static void state_print(FILE *f, const void *arg)
{
	for (size_t i = 0; i < sizeof(state_fields) / sizeof(state_fields[0]); i++)
		state_field_print(f, arg, (int)i);
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

int fg_shedd_state_read(const char *path, struct fg_shedd_state *st)
{
	char line[PATH_MAX + 64], key[32], val[PATH_MAX + 32];
	int fields = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return -errno;
	memset(st, 0, sizeof(*st));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%31s %4127[^\n]", key, val) != 2)
			continue;
		fields++;
		for (size_t i = 0; i < sizeof(state_fields) / sizeof(state_fields[0]); i++)
			if (!strcmp(key, state_fields[i].key)) {
				state_field_parse(st, (int)i, val);
				break;
			}
	}
	fclose(f);
	return st->pid && st->phase[0] && fields >= 6 ? 0 : -EINVAL;
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
