// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Escalation in floodgated: the runtime lists read once a tick, the engine
 * stepped over the throttle tracker, the state file written (escd.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "daemon/escd.h"
#include "lib/log.h"
#include "lib/prefix.h"
#include "lib/sysutil.h"
#include "maps/ctl.h"
#include "maps/fgmaps.h"
#include "policy/policy.h"

static void pfx_of(const struct fg_rt_entry *e, struct fg_esc_pfx *p)
{
	memset(p, 0, sizeof(*p));
	p->family = e->family;
	p->plen = e->plen;
	memcpy(p->addr, e->addr, 16);
}

/* The runtime lists as read this tick, and the allow prefixes. */
struct world {
	struct fg_rt_maps rt;
	bool open;
	struct fg_rt_entry *v; /* both lists, live and expired (fg_rt_list: sorted) */
	size_t n;
	struct fg_esc_pfx *listed; /* v's live entries */
	size_t nlisted;
	struct fg_esc_pfx *rt_allow; /* v's live allow entries */
	size_t nrt_allow;
	const struct fg_escd *d; /* the file's allow prefixes */
	__u64 now;
};

static int world_index(struct world *w)
{
	w->listed = calloc(w->n ? w->n : 1, sizeof(*w->listed));
	w->rt_allow = calloc(w->n ? w->n : 1, sizeof(*w->rt_allow));
	if (!w->listed || !w->rt_allow)
		return -ENOMEM;
	for (size_t i = 0; i < w->n; i++) {
		if (w->v[i].expired)
			continue;
		pfx_of(&w->v[i], &w->listed[w->nlisted++]);
		if (w->v[i].val.list == FG_LIST_ALLOW)
			pfx_of(&w->v[i], &w->rt_allow[w->nrt_allow++]);
	}
	return 0;
}

static bool w_allowed(void *arg, const struct fg_rt_entry *e)
{
	const struct world *w = arg;
	struct fg_esc_pfx k;

	pfx_of(e, &k);
	return fg_esc_pfx_overlap(w->rt_allow, w->nrt_allow, &k) ||
	       fg_esc_pfx_overlap(w->d->allow, w->d->nallow, &k);
}

static bool w_listed(void *arg, const struct fg_rt_entry *e)
{
	const struct world *w = arg;
	struct fg_esc_pfx k;
	size_t i;

	pfx_of(e, &k);
	i = fg_esc_pfx_lower_bound(w->listed, w->nlisted, &k);
	return i < w->nlisted && !fg_esc_pfx_cmp(&w->listed[i], &k);
}

/* The file's allow prefixes, sorted, when the config is a new one. */
static int file_allow(struct fg_escd *d, const struct fg_config *cfg)
{
	struct fg_esc_pfx *v;
	size_t n = 0;

	if (d->allow_of == cfg->pfx && d->allow_n == cfg->n_pfx &&
	    d->allow_ver == cfg->pol.version && (d->allow || !cfg->n_pfx))
		return 0;
	v = calloc(cfg->n_pfx ? cfg->n_pfx : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < cfg->n_pfx; i++) {
		const struct fg_pfx_entry *a = &cfg->pfx[i];

		if (a->list != FG_LIST_ALLOW)
			continue;
		v[n].family = a->family;
		v[n].plen = a->plen;
		memcpy(v[n].addr, a->addr, 16);
		n++;
	}
	qsort(v, n, sizeof(*v), fg_esc_pfx_qcmp);
	free(d->allow);
	d->allow = v;
	d->nallow = n;
	d->allow_of = cfg->pfx;
	d->allow_n = cfg->n_pfx;
	d->allow_ver = cfg->pol.version;
	return 0;
}

static int w_add(void *arg, const struct fg_rt_entry *e, char *why)
{
	struct world *w = arg;
	bool updated;
	int err;

	if (!w->open)
		return -EBADF;
	err = fg_rt_add(&w->rt, e, w->now, &updated, why);
	/* updated: listed since the read (a second rule, same prefix): one entry, counted once */
	return !err && updated ? -EEXIST : err;
}

static unsigned int popcount_be(const __be32 *m, int words)
{
	unsigned int n = 0;

	for (int i = 0; i < words; i++)
		n += (unsigned int)__builtin_popcount(ntohl(m[i]));
	return n;
}

/* The active policy's escalating rules, by id; how many. */
static __u32 build_view(struct fg_esc_view *v, const struct fg_config *cfg,
			const struct fg_policy *pol, const struct fg_name *names,
			const struct fg_ctl *ctl)
{
	__u32 any = 0;

	memset(v->rule, 0, sizeof(v->rule));
	for (__u32 k = 0; k < pol->nrules && k < FG_MAX_RULES; k++) {
		const struct fg_rule *ru = &pol->rules[k];
		struct fg_esc_rule *r;
		const char *name;
		int i;

		if (ru->id >= FG_MAX_IDS || !names[ru->id].in_use || names[ru->id].gen != ru->gen)
			continue;
		name = names[ru->id].name;
		for (i = 0; i < (int)cfg->pol.nrules && i < FG_MAX_RULES; i++)
			if (!strncmp(cfg->rules[i].name, name, FG_NAME_LEN))
				break;
		if (i >= (int)cfg->pol.nrules || i >= FG_MAX_RULES || !cfg->esc[i].set)
			continue;
		r = &v->rule[ru->id];
		r->on = 1;
		r->gen = ru->gen;
		r->shadow = fg_ctl_mode_rule(ctl, ru->id, ru->mode) == FG_MODE_SHADOW;
		r->plen4 = (__u8)popcount_be(&ru->mask4, 1);
		r->plen6 = (__u8)popcount_be(ru->mask6, 4);
		r->after_ns = cfg->esc[i].after_ns;
		r->for_ns = cfg->esc[i].for_ns;
		snprintf(r->name, sizeof(r->name), "%.*s", FG_NAME_LEN - 1, name);
		any++;
	}
	return any;
}

static void state_print(FILE *f, const void *arg)
{
	const struct fg_esc_counts *n = arg;

	fprintf(f,
		"pid %d\nrules %u\nmax %u\nlive %zu\nescalated %llu\nrefused %llu\n"
		"shadow %llu\nfailed %llu\n",
		(int)getpid(), n->rules, n->max, n->live, (unsigned long long)n->escalated,
		(unsigned long long)n->refused, (unsigned long long)n->shadow,
		(unsigned long long)n->failed);
}

/* Written whole to a temporary name, then renamed: a reader sees one tick. */
static int state_write(const struct fg_escd *d)
{
	return fg_file_replace(d->state_path, state_print, &d->x.n);
}

void fg_escd_init(struct fg_escd *d, const char *pin_dir)
{
	const char *env = getenv("FLOODGATE_RUN_DIR");

	memset(d, 0, sizeof(*d));
	if (!(env && *env) && mkdir(FG_ESC_RUN_DIR, 0755) && errno != EEXIST)
		return; /* no state file: status shows the live entries only */
	fg_escd_state_path(pin_dir, d->state_path, sizeof(d->state_path));
}

int fg_escd_tick(struct fg_escd *d, struct fg_maps *m, struct fg_throttle *t,
		 const struct fg_config *cfg, const struct fg_policy *pol,
		 const struct fg_name *names, const struct fg_ctl *ctl, bool *swept)
{
	static struct fg_esc_view v;
	struct world w = { .d = d };
	struct fg_esc_ops ops = { w_allowed, w_listed, w_add, &w };
	int err = 0;

	*swept = false;
	w.now = fg_mono_coarse_ns();
	d->x.n.max = cfg->esc_max;
	d->x.n.rules = build_view(&v, cfg, pol, names, ctl);
	if (!d->x.n.rules) {
		d->x.n.live = 0;
		goto out;
	}
	v.now = w.now;
	v.wall = (__u64)time(NULL);
	v.max = cfg->esc_max;
	v.bypass = ctl->bypass && (!ctl->bypass_until || ctl->bypass_until > w.now);
	err = fg_rt_open_maps(&w.rt, m);
	if (err)
		goto out; /* -ENODATA: not stamped yet, next tick */
	w.open = true;
	err = fg_rt_list(&w.rt, FG_LIST_NONE, w.now, &w.v, &w.n, NULL, NULL);
	if (err)
		goto out;
	*swept = true;
	v.live = fg_esc_count_live(w.v, w.n);
	if ((err = world_index(&w)) || (err = file_allow(d, cfg)))
		goto out;
	fg_esc_step(&d->x, t, &v, &ops);
out:
	if (w.open)
		fg_rt_close(&w.rt);
	free(w.v);
	free(w.listed);
	free(w.rt_allow);
	if (d->state_path[0] && state_write(d))
		d->state_path[0] = 0; /* status then shows the live entries only */
	return err;
}

void fg_escd_stop(struct fg_escd *d)
{
	free(d->allow);
	d->allow = NULL;
	d->nallow = 0;
	if (d->state_path[0])
		unlink(d->state_path);
	d->state_path[0] = 0;
}
