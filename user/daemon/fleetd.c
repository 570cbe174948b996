// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* floodgated's fleet glue: the lease engine's worker on the mmap'd fg_lease map; see fleetd.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "daemon/fleetd.h"
#include "lib/log.h"
#include "lib/sysutil.h"

#define LOAD(p)	      __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v)   __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define RELAXED(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

/* One fleet rule as the worker sees it. */
struct fd_rule {
	char name[FG_NAME_LEN];
	__u32 id;
	__u16 gen;
	__u8 cost;    /* enum fg_cost */
	__u8 on_loss; /* enum fg_on_loss */
	double rate, burst;
	struct fg_limit conf_local; /* local_rate as written, compiled; inc 0: rate / nodes */
	/* worker thread only */
	double local_rate, local_burst; /* what `local` was compiled from */
	struct fg_limit local;
	__u64 last_offered, last_unleased; /* fg_stats at the last collect */
	__u64 taken;			   /* what the last apply took back */
	bool leasing;			   /* the last apply renewed the lease */
	__u64 lapses, lapse_ns;		   /* renewed leases that ran out before the next round */
};

struct fg_fleetd {
	struct fg_maps *m;
	struct fg_lease *lease; /* FG_MAX_IDS entries, shared with the program */
	size_t maplen;
	char status_path[PATH_MAX];
	struct fg_fleet_worker *w; /* NULL: no fleet rule runs */
	int n;
	struct fd_rule r[FG_FLEET_MAX_RULES];
	struct fg_stats *pc;	   /* one stats row per CPU: the worker's buffer */
	struct fg_fleet_status st; /* the last tick's */
	bool status_warned;
};

/* --- the lease entries ------------------------------------------------------- */

/* The local share's limit for rate/burst (cost/s, cost); 0 or -EINVAL. */
static int share_limit(const struct fd_rule *r, double rate, double burst, struct fg_limit *out)
{
	char why[FG_WHY_LEN];

	if (r->conf_local.inc) {
		*out = r->conf_local;
		return 0;
	}
	return fg_limit_share(rate, burst, r->cost == FG_COST_BYTES, out, why);
}

/* The engine's default share before any answer: the whole rate (no node
 * count known yet), as the engine's own local_limit does. */
static void first_share(const struct fd_rule *r, __u32 nodes, struct fg_limit *out)
{
	double n = nodes ? nodes : 1;

	if (share_limit(r, r->rate / n, r->burst / n, out))
		memset(out, 0, sizeof(*out)); /* inc 0: the program drops */
}

/* A fresh entry nobody reads yet (its gen is not in the active policy). */
static void lease_fresh(struct fg_lease *e, const struct fd_rule *r)
{
	struct fg_limit lim;
	__u64 now = fg_mono_coarse_ns();

	first_share(r, 0, &lim);
	RELAXED(&e->lease_expires, 0);
	RELAXED(&e->tokens, 0);
	RELAXED(&e->local.inc, lim.inc);
	RELAXED(&e->local.tau, lim.tau);
	/* the local bucket starts empty: no burst while on_loss applies */
	RELAXED(&e->tat, (now << FG_TU_SHIFT) + lim.tau);
	RELAXED(&e->nodes, 0);
	RELAXED(&e->on_loss, r->on_loss);
	STORE(&e->gen, r->gen);
}

/* Is cfg's rule i a fleet rule? 1 yes, 0 no, -EINVAL (why) if its id is
 * out of range. */
static int is_fleet_rule(const struct fg_config *cfg, __u32 i, char *why)
{
	const struct fg_rule *pr = &cfg->pol.rules[i];

	if (!pr->fleet)
		return 0;
	if (pr->id >= FG_MAX_IDS) {
		fg_why(why, "fleet rule %s: rule id %u out of range", cfg->fleet_rules[i].name,
		       pr->id);
		return -EINVAL;
	}
	return 1;
}

/* The next fleet rule of cfg from *i on: 1 with *i at it, 0 at the end, -EINVAL (why) on a bad id. */
static int next_fleet_rule(const struct fg_config *cfg, __u32 *i, char *why)
{
	for (; *i < cfg->pol.nrules && *i < FG_MAX_RULES; (*i)++) {
		int is = is_fleet_rule(cfg, *i, why);

		if (is)
			return is;
	}
	return 0;
}

/* The fields a fleet rule carries from the config (id and gen from ids, the
 * rest from conf) into struct fd_rule and from there into the status file. */
#define RULE_FIELDS(dst, ids, conf)                                                  \
	((dst)->id = (ids)->id, (dst)->gen = (ids)->gen, (dst)->cost = (conf)->cost, \
	 (dst)->on_loss = (conf)->on_loss, (dst)->rate = (conf)->rate,               \
	 (dst)->burst = (conf)->burst)

/* cfg's rule i as the worker keeps it (ids and gens from the apply). */
static void rule_of(const struct fg_config *cfg, __u32 i, struct fd_rule *r)
{
	const struct fg_rule *pr = &cfg->pol.rules[i];
	const struct fg_fleet_rule_conf *rc = &cfg->fleet_rules[i];

	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", rc->name);
	RULE_FIELDS(r, pr, rc);
	r->conf_local = cfg->fleet_local[i];
}

/* cfg's fleet rules into fl->r[]. */
static int rules_from_cfg(struct fg_fleetd *fl, const struct fg_config *cfg, char *why)
{
	int is;

	fl->n = 0;
	for (__u32 i = 0; (is = next_fleet_rule(cfg, &i, why)) > 0; i++)
		rule_of(cfg, i, &fl->r[fl->n++]);
	return is;
}

int fg_fleetd_before_flip(struct fg_fleetd *fl, const struct fg_config *cfg, char *why)
{
	struct fd_rule r;
	int is;

	if (!fl)
		return 0;
	for (__u32 i = 0; (is = next_fleet_rule(cfg, &i, why)) > 0; i++) {
		struct fg_lease *e;

		rule_of(cfg, i, &r);
		e = &fl->lease[r.id];
		if (LOAD(&e->gen) == r.gen) {
			/* its own: the lease runs on; on_loss is a per-node choice */
			STORE(&e->on_loss, r.on_loss);
			continue;
		}
		lease_fresh(e, &r);
	}
	return is;
}

/* --- the worker's callbacks ---------------------------------------------------- */

/* Rule id's fleet counters summed over CPUs. */
static int read_costs(struct fg_fleetd *fl, __u32 id, __u64 *offered, __u64 *unleased)
{
	int ncpus = fl->m->ncpus > 0 ? fl->m->ncpus : 1;

	if (bpf_map_lookup_elem(fl->m->fd[FGM_STATS], &id, fl->pc))
		return -errno;
	*offered = *unleased = 0;
	for (int c = 0; c < ncpus; c++) {
		*offered += fl->pc[c].fleet_offered;
		*unleased += fl->pc[c].fleet_unleased;
	}
	return 0;
}

/* A lease renewed at the last round that has run out by this one: the
 * round came late (a stalled host), and on_loss applied meanwhile. */
static void lapse_check(struct fd_rule *r, const struct fg_lease *e)
{
	__u64 exp = LOAD(&e->lease_expires), now = fg_mono_coarse_ns();

	/* the main thread reads the two counters for the status */
	if (r->leasing && exp && exp < now) {
		RELAXED(&r->lapses, r->lapses + 1);
		RELAXED(&r->lapse_ns, r->lapse_ns + (now - exp));
	}
}

static int collect(void *ctx, struct fg_fleet_in *in, int n)
{
	struct fg_fleetd *fl = ctx;

	for (int i = 0; i < n && i < fl->n; i++) {
		struct fd_rule *r = &fl->r[i];
		__u64 off, unl;
		int err = read_costs(fl, r->id, &off, &unl);

		if (err)
			return err; /* the round is skipped: the lease runs out on its own */
		/* counters only grow while the id is this rule's */
		in[i].offered = off >= r->last_offered ? off - r->last_offered : off;
		in[i].unleased = unl >= r->last_unleased ? unl - r->last_unleased : unl;
		r->last_offered = off;
		r->last_unleased = unl;
		lapse_check(r, &fl->lease[r->id]);
		in[i].held = LOAD(&fl->lease[r->id].tokens);
		in[i].taken = r->taken;
		r->taken = 0;
	}
	return 0;
}

/* Take up to want tokens away from the program; what was taken. */
static __u64 take_back(struct fg_lease *e, __u64 want)
{
	__s64 cur = LOAD(&e->tokens);

	while (want && cur > 0) {
		__s64 take = cur < (__s64)want ? cur : (__s64)want;

		if (__atomic_compare_exchange_n(&e->tokens, &cur, cur - take, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return (__u64)take;
	}
	return 0;
}

static void apply(void *ctx, const struct fg_fleet_out *out, int n)
{
	struct fg_fleetd *fl = ctx;

	for (int i = 0; i < n && i < fl->n; i++) {
		struct fd_rule *r = &fl->r[i];
		const struct fg_fleet_out *o = &out[i];
		struct fg_lease *e = &fl->lease[r->id];

		if (o->take_back)
			r->taken += take_back(e, o->take_back);
		if (o->grant)
			__atomic_fetch_add(&e->tokens, (__s64)o->grant, __ATOMIC_ACQ_REL);
		r->leasing = o->renewed;
		if (!o->renewed)
			continue; /* grace or fallback: the program decides by itself */
		if (o->local_rate != r->local_rate || o->local_burst != r->local_burst) {
			struct fg_limit lim;

			if (!share_limit(r, o->local_rate, o->local_burst, &lim)) {
				r->local = lim;
				r->local_rate = o->local_rate;
				r->local_burst = o->local_burst;
			}
		}
		RELAXED(&e->local.inc, r->local.inc);
		RELAXED(&e->local.tau, r->local.tau);
		/* empty at the expiry: no burst when on_loss takes over */
		RELAXED(&e->tat, (o->lease_expires << FG_TU_SHIFT) + r->local.tau);
		RELAXED(&e->nodes, o->nodes);
		STORE(&e->lease_expires, o->lease_expires);
	}
}

static int take_all(void *ctx, struct fg_fleet_in *in, int n)
{
	struct fg_fleetd *fl = ctx;

	for (int i = 0; i < n && i < fl->n; i++) {
		struct fg_lease *e = &fl->lease[fl->r[i].id];
		__s64 old;

		STORE(&e->lease_expires, 0);
		old = __atomic_exchange_n(&e->tokens, 0, __ATOMIC_ACQ_REL);
		in[i].taken = old > 0 ? (__u64)old : 0;
	}
	return 0;
}

static const struct fg_fleet_ops ops = { .collect = collect, .apply = apply, .take_all = take_all };

/* --- lifecycle ------------------------------------------------------------------ */

int fg_fleetd_open(struct fg_fleetd **out, struct fg_maps *m, const char *pin_dir)
{
	long page = sysconf(_SC_PAGESIZE);
	struct fg_fleetd *fl;
	int err;

	*out = NULL;
	if (page <= 0)
		return -EINVAL;
	fl = calloc(1, sizeof(*fl));
	if (!fl)
		return -ENOMEM;
	fl->m = m;
	err = fg_fleet_status_path(pin_dir, fl->status_path, sizeof(fl->status_path));
	if (err)
		goto fail;
	fl->pc = calloc(m->ncpus > 0 ? m->ncpus : 1, sizeof(*fl->pc));
	if (!fl->pc) {
		err = -ENOMEM;
		goto fail;
	}
	fl->maplen = (FG_MAX_IDS * sizeof(struct fg_lease) + (size_t)page - 1) &
		     ~((size_t)page - 1);
	fl->lease = mmap(NULL, fl->maplen, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd[FGM_LEASE], 0);
	if (fl->lease == MAP_FAILED) {
		err = -errno;
		fl->lease = NULL;
		goto fail;
	}
	*out = fl;
	return 0;
fail:
	free(fl->pc);
	free(fl);
	return err;
}

static void log_adopted(const struct fd_rule *r, const struct fg_fleet_rule_conf *rc)
{
	__u64 now = fg_mono_coarse_ns();

	if (rc->adopted_expires > now)
		pr_info("fleet rule %s: adopted the pinned lease: %llu tokens for another %llu ms, "
			"%u nodes",
			r->name, (unsigned long long)rc->adopted_tokens,
			(unsigned long long)((rc->adopted_expires - now) / 1000000),
			rc->nodes_hint);
	else
		pr_info("fleet rule %s: adopted a pinned lease that ran out %.1f s ago "
			"(on_loss %s applied meanwhile), %u nodes",
			r->name, (double)(now - rc->adopted_expires) / 1e9,
			fg_fleet_loss_name(r->on_loss), rc->nodes_hint);
}

/* The engine for fl->r[], its rules adopting what the map holds. */
static int engine_new(struct fg_fleetd *fl, const struct fg_config *cfg, struct fg_fleet **out,
		      char *why)
{
	struct fg_fleet *f = fg_fleet_new(&cfg->fleet, why);
	const struct fg_fleet_conf *c;
	int err;

	if (!f)
		return -errno;
	for (int i = 0; i < fl->n; i++) {
		struct fd_rule *r = &fl->r[i];
		struct fg_lease *e = &fl->lease[r->id];
		struct fg_fleet_rule_conf rc = {};
		struct fg_fleet_rule_status *rs = &fl->st.rule[i];
		__s64 tok;

		for (__u32 k = 0; k < cfg->pol.nrules; k++)
			if (cfg->pol.rules[k].fleet && cfg->pol.rules[k].id == r->id)
				rc = cfg->fleet_rules[k];
		if (LOAD(&e->gen) == r->gen && LOAD(&e->lease_expires)) {
			rc.adopted_expires = LOAD(&e->lease_expires);
			tok = LOAD(&e->tokens);
			rc.adopted_tokens = tok > 0 ? (__u64)tok : 0;
			rc.nodes_hint = LOAD(&e->nodes);
			log_adopted(r, &rc);
		}
		/* leases are by difference from here on */
		err = read_costs(fl, r->id, &r->last_offered, &r->last_unleased);
		if (err) {
			fg_why(why, "fleet rule %s: reading its counters: %s", r->name,
			       strerror(-err));
			goto fail;
		}
		r->local_rate = r->local_burst = -1; /* compiled at the first answer */
		first_share(r, rc.nodes_hint, &r->local);
		err = fg_fleet_add_rule(f, &rc, why);
		if (err < 0)
			goto fail;
		memset(rs, 0, sizeof(*rs));
		snprintf(rs->name, sizeof(rs->name), "%s", r->name);
		fg_fleet_key(f, err, rs->key, sizeof(rs->key));
		RULE_FIELDS(rs, r, r);
	}
	c = fg_fleet_conf(f);
	fl->st.magic = FG_FLEET_STATUS_MAGIC;
	fl->st.version = FG_FLEET_STATUS_VERSION;
	fl->st.size = sizeof(fl->st);
	fl->st.pid = (__u32)getpid();
	fl->st.nrules = (__u32)fl->n;
	snprintf(fl->st.node, sizeof(fl->st.node), "%s", c->node);
	fg_redis_url_str(&c->redis, fl->st.redis, sizeof(fl->st.redis));
	fl->st.interval_ms = c->interval_ms;
	fl->st.deadline_ms = c->deadline_ms;
	fl->st.lease_ms = c->lease_ms;
	*out = f;
	return 0;
fail:
	fg_fleet_free(f);
	return err;
}

int fg_fleetd_start(struct fg_fleetd *fl, const struct fg_config *cfg, char *why)
{
	struct fg_fleet *f = NULL;
	int err;

	if (!fl || fl->w)
		return fl ? -EALREADY : -EINVAL;
	/* the pin dir is ours: a status file a killed daemon left is stale */
	fg_fleet_status_remove(fl->status_path);
	err = rules_from_cfg(fl, cfg, why);
	if (err || !fl->n) {
		fl->n = 0;
		return err;
	}
	if (!cfg->has_fleet) {
		fg_why(why, "rule %s has a fleet limit but the policy has no fleet: section",
		       fl->r[0].name);
		fl->n = 0;
		return -EINVAL;
	}
	memset(&fl->st, 0, sizeof(fl->st));
	err = engine_new(fl, cfg, &f, why);
	if (err) {
		fl->n = 0;
		return err;
	}
	fl->w = fg_fleet_worker_start(f, &ops, fl);
	if (!fl->w) {
		err = -errno;
		fg_why(why, "starting the fleet worker: %s", strerror(errno));
		fg_fleet_free(f);
		fl->n = 0;
		return err;
	}
	pr_info("fleet: node %s, redis %s, %d rule(s), lease interval %u ms, lease %u ms, "
		"deadline %u ms",
		fl->st.node, fl->st.redis, fl->n, fl->st.interval_ms, fl->st.lease_ms,
		fl->st.deadline_ms);
	fg_fleetd_tick(fl);
	return 0;
}

static void stop_worker(struct fg_fleetd *fl, bool release)
{
	char why[FG_WHY_LEN];
	int err;

	if (!fl->w)
		return;
	fg_fleetd_tick(fl); /* the last events */
	err = fg_fleet_worker_stop(fl->w, release, why);
	fl->w = NULL;
	fl->n = 0;
	if (release && err)
		pr_warn("fleet: handing the leases back failed (%s); they return to the fleet "
			"when they expire in Redis",
			why);
	else if (release)
		pr_info("fleet: leases handed back, node withdrawn");
	fg_fleet_status_remove(fl->status_path);
}

static bool same_url(const struct fg_redis_url *a, const struct fg_redis_url *b)
{
	return a->is_unix == b->is_unix && !strcmp(a->host, b->host) && a->port == b->port &&
	       !strcmp(a->path, b->path) && !strcmp(a->user, b->user) &&
	       !strcmp(a->password, b->password) && a->db == b->db;
}

static bool same_fleet(const struct fg_config *a, const struct fg_config *b)
{
	const struct fg_fleet_conf *x = &a->fleet, *y = &b->fleet;
	__u32 i = 0, j = 0;

	if (a->has_fleet != b->has_fleet)
		return false;
	if (a->has_fleet && (!same_url(&x->redis, &y->redis) || strcmp(x->node, y->node) ||
			     strcmp(x->prefix, y->prefix) || x->interval_ms != y->interval_ms ||
			     x->deadline_ms != y->deadline_ms || x->lease_ms != y->lease_ms))
		return false;
	/* the fleet rules, in order: name, id, definition, local choice */
	for (;;) {
		const struct fg_fleet_rule_conf *p, *q;

		while (i < a->pol.nrules && !a->pol.rules[i].fleet)
			i++;
		while (j < b->pol.nrules && !b->pol.rules[j].fleet)
			j++;
		if (i >= a->pol.nrules || j >= b->pol.nrules)
			return i >= a->pol.nrules && j >= b->pol.nrules;
		p = &a->fleet_rules[i];
		q = &b->fleet_rules[j];
		if (strcmp(p->name, q->name) || a->pol.rules[i].id != b->pol.rules[j].id ||
		    a->pol.rules[i].gen != b->pol.rules[j].gen || p->rate != q->rate ||
		    p->burst != q->burst || p->cost != q->cost || p->on_loss != q->on_loss ||
		    p->local_rate != q->local_rate || p->local_burst != q->local_burst)
			return false;
		i++;
		j++;
	}
}

int fg_fleetd_reload(struct fg_fleetd *fl, const struct fg_config *old,
		     const struct fg_config *ncfg, char *why)
{
	int err;

	if (!fl)
		return -EINVAL;
	if (same_fleet(old, ncfg))
		return 0;
	pr_info("reload: the fleet configuration changed: restarting the lease engine");
	stop_worker(fl, true);
	err = fg_fleetd_start(fl, ncfg, why);
	return err ? err : 1;
}

/* --- per tick ------------------------------------------------------------------- */

static void log_event(const struct fg_fleet_event *ev)
{
	switch (ev->kind) {
	case FG_FLEET_EV_GRACE:
	case FG_FLEET_EV_FALLBACK:
	case FG_FLEET_EV_DEGRADED:
		pr_warn("fleet rule %s: %s: %s", ev->name, fg_fleet_ev_name(ev->kind), ev->reason);
		break;
	default:
		pr_info("fleet rule %s: %s: %s", ev->name, fg_fleet_ev_name(ev->kind), ev->reason);
		break;
	}
}

static void lease_snapshot(const struct fg_lease *e, struct fg_lease *out)
{
	memset(out, 0, sizeof(*out));
	out->lease_expires = LOAD(&e->lease_expires);
	out->tokens = LOAD(&e->tokens);
	out->tat = LOAD(&e->tat);
	out->local.inc = LOAD(&e->local.inc);
	out->local.tau = LOAD(&e->local.tau);
	out->gen = LOAD(&e->gen);
	out->on_loss = LOAD(&e->on_loss);
	out->nodes = LOAD(&e->nodes);
}

void fg_fleetd_tick(struct fg_fleetd *fl)
{
	struct fg_fleet_event ev[16];
	int n, err;

	if (!fl || !fl->w)
		return;
	while ((n = fg_fleet_worker_events(fl->w, ev, 16)) > 0)
		for (int i = 0; i < n; i++)
			log_event(&ev[i]);
	for (int i = 0; i < fl->n; i++) {
		fg_fleet_worker_stats(fl->w, i, &fl->st.rule[i].st);
		lease_snapshot(&fl->lease[fl->r[i].id], &fl->st.rule[i].lease);
		fl->st.rule[i].lapses = __atomic_load_n(&fl->r[i].lapses, __ATOMIC_RELAXED);
		fl->st.rule[i].lapse_ns = __atomic_load_n(&fl->r[i].lapse_ns, __ATOMIC_RELAXED);
	}
	fg_fleet_worker_conn_stats(fl->w, &fl->st.cs);
	fl->st.updated_ns = fg_mono_ns();
	err = fg_fleet_status_write(fl->status_path, &fl->st);
	if (err && !fl->status_warned)
		pr_warn("fleet: cannot write %s: %s; `floodgate status` shows only what the maps "
			"hold",
			fl->status_path, strerror(-err));
	fl->status_warned = err != 0;
}

const struct fg_fleet_status *fg_fleetd_status(const struct fg_fleetd *fl)
{
	return fl && fl->w ? &fl->st : NULL;
}

void fg_fleetd_close(struct fg_fleetd *fl, bool release)
{
	if (!fl)
		return;
	stop_worker(fl, release);
	fg_fleet_status_remove(fl->status_path);
	if (fl->lease)
		munmap(fl->lease, fl->maplen);
	free(fl->pc);
	free(fl);
}
