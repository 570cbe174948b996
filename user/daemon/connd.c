// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Concurrency caps in floodgated: open, start, reload, reconcile; see connd.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/libbpf.h>
#include "daemon/connd.h"
#include "floodgate.skel.h"
#include "lib/sysutil.h"

int fg_connd_open(struct fg_connd *cd, struct floodgate_bpf *skel, const char *dir, __u32 max_keys,
		  __u64 period_ms, char *why)
{
	/* the way's programs load with the first cap (fg_connd_load) */
	struct fg_conn_opts o = {
		.max_keys = max_keys, .max_pending = max_keys, .pin_dir = dir, .maps_only = true
	};
	int err;

	memset(cd, 0, sizeof(*cd));
	err = fg_conn_open(&cd->c, &o, why);
	if (err)
		return err;
	cd->open = true;
	cd->period_ns = period_ms * 1000000ull;
	/* one set of counts: the XDP program reads the counter's own maps */
	err = bpf_map__reuse_fd(skel->maps.fgc_count, cd->c.fd[FGC_M_COUNT]);
	if (!err)
		err = bpf_map__reuse_fd(skel->maps.fgc_pend, cd->c.fd[FGC_M_PEND]);
	if (err) {
		fg_why(why, "sharing fgc_count and fgc_pend with the XDP program: %s",
		       strerror(-err));
		fg_connd_close(cd);
	}
	return err;
}

/* The cap table of pol (rule ids assigned), then a reconcile: counted
 * sockets move to their new keys, and a lowered cap refuses new SYNs at
 * once while existing connections stay. */
static int connd_caps(struct fg_connd *cd, const struct fg_policy *pol, struct fg_conn_rec *rec,
		      char *why)
{
	static struct fg_conn_cap caps[FG_CONN_MAX_CAPS];
	__u32 n;
	int err;

	err = fg_conn_caps_of_policy(pol, caps, &n, why);
	if (!err)
		err = fg_conn_set_caps(&cd->c, caps, n, why);
	if (err) {
		if (why && !why[0])
			fg_why(why, "writing the cap table: %s", strerror(-err));
		return err;
	}
	err = fg_connd_reconcile(cd, rec);
	if (err)
		fg_why(why, "reconciling the connection counts: %s", strerror(-err));
	return err;
}

int fg_connd_load(struct fg_connd *cd, char *why)
{
	return cd->open ? fg_conn_load_way(&cd->c, why) : -EINVAL;
}

/* No cap in force: the maps alone stay pinned (XDP shares them); the
 * links, ours or an earlier daemon's, and the programs go. */
/* An empty cap table, written only if the active one is not (a write
 * waits for a grace period). */
static int connd_no_caps(struct fg_connd *cd, char *why)
{
	struct fg_conn_caps *t = calloc(1, sizeof(*t));
	int err = t ? fg_conn_caps_read(&cd->c, t) : -ENOMEM;

	if (!err && t->n)
		err = fg_conn_set_caps(&cd->c, NULL, 0, why);
	if (err && why && !why[0])
		fg_why(why, "emptying the cap table: %s", strerror(-err));
	free(t);
	return err;
}

static int connd_idle(struct fg_connd *cd, const char *dir, struct fg_conn_rec *rec, char *why)
{
	int err = connd_no_caps(cd, why);

	memset(rec, 0, sizeof(*rec));
	if (!err)
		err = fg_conn_unload_way(&cd->c, dir, why);
	if (!err && (err = fg_conn_pin(&cd->c, dir)))
		fg_why(why, "pinning the counting maps in %s: %s", dir, strerror(-err));
	return err;
}

static int connd_count(struct fg_connd *cd, const struct fg_policy *pol, const char *dir,
		       struct fg_conn_rec *rec, char *why)
{
	int err = fg_conn_load_way(&cd->c, why);

	if (err)
		return err;
	err = fg_conn_attach(&cd->c);
	if (err) {
		fg_why(why, "attaching the connection counter (%s way): %s",
		       fg_conn_way_names[cd->c.way],
		       cd->c.way_why[0] ? cd->c.way_why : strerror(-err));
		return err;
	}
	err = fg_conn_pin(&cd->c, dir);
	if (err) {
		fg_why(why, "pinning the connection counter in %s: %s", dir, strerror(-err));
		return err;
	}
	/* the first reconcile is the seed: sockets that exist already, or
	 * that opened or closed while no counter was attached */
	return connd_caps(cd, pol, rec, why);
}

static bool policy_has_cap(const struct fg_policy *pol)
{
	for (__u32 i = 0; i < pol->nrules && i < FG_MAX_RULES; i++)
		if (pol->rules[i].conn_cap)
			return true;
	return false;
}

int fg_connd_start(struct fg_connd *cd, const struct fg_policy *pol, const char *dir,
		   struct fg_conn_rec *rec, char *why)
{
	if (cd->c.way == FG_CONN_WAY_NONE) {
		/* the shared maps only; policy_kernel.h refuses capped policies */
		int err = fg_conn_pin(&cd->c, dir);

		if (err)
			fg_why(why, "pinning the counting maps in %s: %s", dir, strerror(-err));
		memset(rec, 0, sizeof(*rec));
		return err;
	}
	if (!policy_has_cap(pol))
		return connd_idle(cd, dir, rec, why);
	return connd_count(cd, pol, dir, rec, why);
}

int fg_connd_policy(struct fg_connd *cd, const struct fg_policy *pol, const char *dir,
		    struct fg_conn_rec *rec, char *why)
{
	bool want = policy_has_cap(pol);

	if (cd->c.way == FG_CONN_WAY_NONE && want) {
		fg_why(why, "this kernel allows no way to count connections: %s", cd->c.way_why);
		return -EOPNOTSUPP;
	}
	if (!want && !cd->c.progs) {
		memset(rec, 0, sizeof(*rec));
		return connd_no_caps(cd, why);
	}
	if (!want)
		return connd_idle(cd, dir, rec, why);
	if (!fg_conn_ready(&cd->c))
		return connd_count(cd, pol, dir, rec, why);
	return connd_caps(cd, pol, rec, why);
}

bool fg_connd_counting(const struct fg_connd *cd)
{
	return cd->open && fg_conn_ready(&cd->c);
}

bool fg_connd_due(const struct fg_connd *cd, __u64 now_ns)
{
	return cd->open && fg_conn_ready(&cd->c) && now_ns >= cd->next_ns;
}

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* After a reconcile: per capped rule, sources, those at the cap,
 * connections (the metrics' gauges). A failure leaves the last ones. */
static void connd_summary(struct fg_connd *cd)
{
	struct fg_conn_entry *e = NULL;
	size_t n = 0;

	if (fg_conn_caps_read(&cd->c, &cd->caps) || fg_conn_dump(&cd->c, 0, &e, &n))
		return;
	fg_conn_summarise(&cd->caps, e, n, cd->sum);
	cd->keys = n;
	free(e);
}

int fg_connd_reconcile(struct fg_connd *cd, struct fg_conn_rec *rec)
{
	__u64 t0 = mono_ns();
	int err;

	memset(rec, 0, sizeof(*rec));
	err = fg_conn_reconcile(&cd->c, rec);
	cd->last_ns = mono_ns() - t0;
	/* a failed one is tried again a period later, not every tick */
	cd->next_ns = fg_mono_coarse_ns() + cd->period_ns;
	if (!err)
		connd_summary(cd);
	return err;
}

bool fg_connd_rec_msg(const struct fg_conn_rec *rec, char *buf, size_t len)
{
	int n = 0;

	buf[0] = 0;
	if (rec->seeded)
		n += snprintf(buf + n, len - n, "seeded %llu connection%s the counter had not seen",
			      (unsigned long long)rec->seeded, rec->seeded == 1 ? "" : "s");
	if (rec->fixed_keys && (size_t)n < len)
		n += snprintf(buf + n, len - n,
			      "%scorrected %llu key%s by %llu connection%s in all", n ? "; " : "",
			      (unsigned long long)rec->fixed_keys, rec->fixed_keys == 1 ? "" : "s",
			      (unsigned long long)rec->fixed_conns,
			      rec->fixed_conns == 1 ? "" : "s");
	if (rec->rekeyed && (size_t)n < len)
		snprintf(buf + n, len - n, "%smoved %llu connection%s to new keys", n ? "; " : "",
			 (unsigned long long)rec->rekeyed, rec->rekeyed == 1 ? "" : "s");
	return buf[0] != 0;
}

/* A rule's label: its name while it holds its id, else "id-N". */
static const char *rule_label(const struct fg_name *names, __u16 id, __u16 gen, char *buf,
			      size_t len)
{
	if (id < FG_MAX_IDS && names[id].in_use && names[id].gen == gen) {
		snprintf(buf, len, "%.*s", FG_NAME_LEN - 1, names[id].name);
		/* rule names are [A-Za-z0-9_.-]: nothing to escape */
		return buf;
	}
	snprintf(buf, len, "id-%u", id);
	return buf;
}

int fg_connd_metrics(struct fg_connd *cd, const struct fg_name *names, char **out, size_t *len)
{
	struct fg_conn_stats st;
	__u64 misses = 0;
	char lb[FG_NAME_LEN + 8];
	FILE *f;
	int err;

	if (!cd->open)
		return -ENOENT;
	err = fg_conn_stats_read(&cd->c, &st);
	if (err)
		return err;
	fg_conn_misses(&cd->c, &misses);
	f = open_memstream(out, len);
	if (!f)
		return -errno;
	fprintf(f,
		"# HELP floodgate_conn_events_total Events of the connection counter of the concurrency caps.\n"
		"# TYPE floodgate_conn_events_total counter\n");
	for (int e = 0; e < FGC_EV_MAX; e++)
		fprintf(f, "floodgate_conn_events_total{event=\"%s\"} %llu\n",
			fg_conn_event_names[e], (unsigned long long)st.ev[e]);
	fprintf(f,
		"# HELP floodgate_conn_reconcile_corrections_total What reconciles found wrong and corrected: keys, and connections in all.\n"
		"# TYPE floodgate_conn_reconcile_corrections_total counter\n"
		"floodgate_conn_reconcile_corrections_total{unit=\"keys\"} %llu\n"
		"floodgate_conn_reconcile_corrections_total{unit=\"connections\"} %llu\n",
		(unsigned long long)st.ev[FGC_EV_FIX], (unsigned long long)st.ev[FGC_EV_FIX_CONNS]);
	fprintf(f,
		"# HELP floodgate_conn_reconciles_total Reconciles of the connection counts.\n"
		"# TYPE floodgate_conn_reconciles_total counter\nfloodgate_conn_reconciles_total %llu\n",
		(unsigned long long)__atomic_load_n(&cd->c.ctl->reconciles, __ATOMIC_RELAXED));
	fprintf(f,
		"# HELP floodgate_conn_reconcile_seconds How long the last reconcile took.\n"
		"# TYPE floodgate_conn_reconcile_seconds gauge\nfloodgate_conn_reconcile_seconds %.6f\n",
		cd->last_ns / 1e9);
	fprintf(f,
		"# HELP floodgate_conn_missed_total TCP state changes the counter missed (recursion), repaired by the next reconcile.\n"
		"# TYPE floodgate_conn_missed_total counter\nfloodgate_conn_missed_total %llu\n",
		(unsigned long long)misses);
	fprintf(f,
		"# HELP floodgate_conn_way How the connection counter counts (1 for the way taken: tp_btf, sock_ops; none: not at all).\n"
		"# TYPE floodgate_conn_way gauge\nfloodgate_conn_way{way=\"%s\"} 1\n",
		fg_conn_way_names[fg_connd_counting(cd) ? cd->c.way : FG_CONN_WAY_NONE]);
	fprintf(f,
		"# HELP floodgate_conn_keys Source keys in the count table (last reconcile).\n"
		"# TYPE floodgate_conn_keys gauge\nfloodgate_conn_keys %zu\n",
		cd->keys);
	fprintf(f,
		"# HELP floodgate_conn_sources Sources holding connections, per capped rule (last reconcile).\n"
		"# TYPE floodgate_conn_sources gauge\n");
	for (__u32 i = 0; i < cd->caps.n && i < FG_CONN_MAX_CAPS; i++)
		fprintf(f, "floodgate_conn_sources{rule=\"%s\"} %u\n",
			rule_label(names, cd->sum[i].rule, cd->sum[i].gen, lb, sizeof(lb)),
			cd->sum[i].sources);
	fprintf(f,
		"# HELP floodgate_conn_sources_at_cap Sources at their cap, per capped rule (last reconcile).\n"
		"# TYPE floodgate_conn_sources_at_cap gauge\n");
	for (__u32 i = 0; i < cd->caps.n && i < FG_CONN_MAX_CAPS; i++)
		fprintf(f, "floodgate_conn_sources_at_cap{rule=\"%s\"} %u\n",
			rule_label(names, cd->sum[i].rule, cd->sum[i].gen, lb, sizeof(lb)),
			cd->sum[i].at_cap);
	fprintf(f,
		"# HELP floodgate_conn_connections Connections counted, per capped rule (last reconcile).\n"
		"# TYPE floodgate_conn_connections gauge\n");
	for (__u32 i = 0; i < cd->caps.n && i < FG_CONN_MAX_CAPS; i++)
		fprintf(f, "floodgate_conn_connections{rule=\"%s\"} %llu\n",
			rule_label(names, cd->sum[i].rule, cd->sum[i].gen, lb, sizeof(lb)),
			(unsigned long long)cd->sum[i].conns);
	if (fclose(f)) {
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

void fg_connd_close(struct fg_connd *cd)
{
	if (cd->open)
		fg_conn_close(&cd->c);
	cd->open = false;
}
