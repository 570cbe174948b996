// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The concurrency caps in `floodgate top` (the sources holding connections,
 * those at their cap first) and `floodgate status` (the capped rules, the
 * counter, the reconcile's corrections), read from the counter's pins
 * (user/conn/conn.h) with or without a daemon. A pin dir without them (no
 * counter loaded) shows nothing in text and empty values in JSON.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <json-c/json.h>
#include "cli/cli.h"
#include "conn/conn.h"
#include "lib/log.h"
#include "lib/sysutil.h"

/* What both commands read: the counts, the active cap table, the events. */
struct conn_view {
	bool present;  /* the counter's maps are pinned here */
	bool counting; /* ... and its link */
	__u32 way;     /* enum fg_conn_way of the last attach (fgc_ctl) */
	struct fg_conn_caps caps;
	struct fg_conn_entry *e; /* every fgc_count entry */
	size_t n;
	struct fg_conn_stats st;
	__u64 reconciles;
	__u32 max_keys;
	struct fg_conn_rule_sum sum[FG_CONN_MAX_CAPS];
};

static int view_read(const char *dir, struct conn_view *v)
{
	char why[FG_CONN_WHY_LEN] = "", p[512];
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), k = 0;
	struct fg_conn_ctl ctl;
	struct fg_conn c;
	int err;

	memset(v, 0, sizeof(*v));
	err = fg_conn_open_pins(&c, dir, why);
	if (err == -ENOENT)
		return 0;
	if (err) {
		pr_warn("concurrency caps: %s", why[0] ? why : strerror(-err));
		return err;
	}
	v->present = true;
	snprintf(p, sizeof(p), "%s/%s", dir, FG_CONN_LINK_PIN);
	v->counting = access(p, F_OK) == 0;
	if ((err = fg_conn_caps_read(&c, &v->caps)) || (err = fg_conn_dump(&c, 0, &v->e, &v->n)) ||
	    (err = fg_conn_stats_read(&c, &v->st)))
		goto out;
	if (bpf_map_lookup_elem(c.fd[FGC_M_CTL], &k, &ctl) ||
	    bpf_obj_get_info_by_fd(c.fd[FGC_M_COUNT], &info, &len)) {
		err = -errno;
		goto out;
	}
	v->reconciles = ctl.reconciles;
	v->way = ctl.way;
	v->max_keys = info.max_entries;
	fg_conn_summarise(&v->caps, v->e, v->n, v->sum);
out:
	if (err)
		pr_warn("reading the connection counts in %s: %s", dir, strerror(-err));
	fg_conn_close(&c);
	return err;
}

static const char *way_name(const struct conn_view *v)
{
	return v->way < sizeof(fg_conn_way_names) / sizeof(fg_conn_way_names[0]) ?
		       fg_conn_way_names[v->way] :
		       "unknown";
}

static void view_free(struct conn_view *v)
{
	free(v->e);
	v->e = NULL;
}

static const struct fg_conn_cap *cap_of(const struct conn_view *v, const struct fg_conn_key *k)
{
	for (__u32 i = 0; i < v->caps.n && i < FG_CONN_MAX_CAPS; i++)
		if (v->caps.cap[i].rule == k->rule && v->caps.cap[i].gen == k->gen)
			return &v->caps.cap[i];
	return NULL;
}

static int mask_len(const __be32 *m, int words)
{
	int n = 0;

	for (int i = 0; i < words; i++)
		n += __builtin_popcount(m[i]);
	return n;
}

/* "10.0.0.0/24": the key as its rule groups sources. */
static void key_str(const struct conn_view *v, const struct fg_conn_key *k, char *buf, size_t len)
{
	const struct fg_conn_cap *c = cap_of(v, k);
	char ab[INET6_ADDRSTRLEN];
	int plen = k->family == 4 ? 32 : 128;

	if (c)
		plen = k->family == 4 ? mask_len(&c->mask4, 1) : mask_len(c->mask6, 4);
	fg_addr_str(k->family, (const __u8 *)k->addr, ab, sizeof(ab));
	snprintf(buf, len, "%s/%d", ab, plen);
}

static const struct conn_view *sort_view;

/* At the cap first, then by connections. */
static int cmp_entry(const void *x, const void *y)
{
	const struct fg_conn_entry *a = x, *b = y;
	bool ca = fg_conn_entry_at_cap(&sort_view->caps, a);
	bool cb = fg_conn_entry_at_cap(&sort_view->caps, b);

	if (ca != cb)
		return ca ? -1 : 1;
	if (a->est != b->est)
		return a->est < b->est ? 1 : -1;
	return (int)b->pending - (int)a->pending;
}

/* The entries worth showing (holding connections or pending handshakes),
 * sorted; returns how many. */
static size_t view_sorted(struct conn_view *v)
{
	size_t m = 0;

	for (size_t i = 0; i < v->n; i++)
		if (v->e[i].est > 0 || v->e[i].pending)
			v->e[m++] = v->e[i];
	sort_view = v;
	if (m)
		qsort(v->e, m, sizeof(*v->e), cmp_entry);
	return m;
}

static __u32 total_at_cap(const struct conn_view *v)
{
	__u32 n = 0;

	for (__u32 i = 0; i < v->caps.n && i < FG_CONN_MAX_CAPS; i++)
		n += v->sum[i].at_cap;
	return n;
}

/* --- top ------------------------------------------------------------------------ */

void cli_conn_top_text(const struct cli_args *a, const struct fg_name *names)
{
	char src[INET6_ADDRSTRLEN + 16];
	struct conn_view v;
	size_t m;

	if (view_read(a->dir, &v) || !v.present || !v.caps.n) {
		view_free(&v);
		return;
	}
	m = view_sorted(&v);
	printf("\n%-44s %-20s %8s %8s %8s %s\n", "SOURCE (concurrency caps)", "RULE", "CONNS",
	       "PENDING", "CAP", "AT CAP");
	for (size_t i = 0; i < m && i < a->top_n; i++) {
		const struct fg_conn_entry *e = &v.e[i];
		const char *nm = cli_rule_name(names, e->key.rule, e->key.gen);
		__u32 cap = fg_conn_cap_of_key(&v.caps, &e->key);

		key_str(&v, &e->key, src, sizeof(src));
		printf("%-44s %-20s %8lld %8u %8u %s\n", src, nm ? nm : "(removed)",
		       (long long)e->est, e->pending, cap,
		       fg_conn_entry_at_cap(&v.caps, e) ? "yes" : "no");
	}
	printf("%zu source%s hold%s connections to capped rules, %u at the cap\n", m,
	       m == 1 ? "" : "s", m == 1 ? "s" : "", total_at_cap(&v));
	view_free(&v);
}

/* "connections": [{source, rule, connections, pending, cap, at_cap}],
 * "connection_sources", "sources_at_cap" (floodgate(8), JSON OUTPUT). */
void cli_conn_top_json(const struct cli_args *a, const struct fg_name *names,
		       struct json_object *root, int *err)
{
	struct json_object *arr = json_object_new_array();
	char src[INET6_ADDRSTRLEN + 16];
	struct conn_view v;
	size_t m = 0;

	if (view_read(a->dir, &v))
		*err = *err ? *err : -EIO;
	else if (v.present)
		m = view_sorted(&v);
	for (size_t i = 0; i < m && i < a->top_n; i++) {
		const struct fg_conn_entry *e = &v.e[i];
		const char *nm = cli_rule_name(names, e->key.rule, e->key.gen);
		struct json_object *o = json_object_new_object();

		key_str(&v, &e->key, src, sizeof(src));
		cli_json_add(err, o, "source", json_object_new_string(src));
		cli_json_add(err, o, "rule", json_object_new_string(nm ? nm : "(removed)"));
		cli_json_add(err, o, "connections", json_object_new_int64(e->est));
		cli_json_add(err, o, "pending", json_object_new_uint64(e->pending));
		cli_json_add(err, o, "cap",
			     json_object_new_uint64(fg_conn_cap_of_key(&v.caps, &e->key)));
		cli_json_add(err, o, "at_cap",
			     json_object_new_boolean(fg_conn_entry_at_cap(&v.caps, e)));
		cli_json_push(err, arr, o);
	}
	cli_json_add(err, root, "connections", arr);
	cli_json_add(err, root, "connection_sources", json_object_new_uint64(m));
	cli_json_add(err, root, "sources_at_cap", json_object_new_uint64(total_at_cap(&v)));
	view_free(&v);
}

/* --- status ----------------------------------------------------------------------- */

static void ports_str(const struct fg_conn_cap *c, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = 0;
	for (__u32 j = 0; j < c->nranges && j < FG_CONN_RANGES && o < len; j++)
		o += snprintf(buf + o, len - o,
			      c->dport[j].lo == c->dport[j].hi ? "%s%u" : "%s%u-%u", j ? "," : "",
			      c->dport[j].lo, c->dport[j].hi);
}

void cli_conn_status_text(const struct cli_args *a, const struct fg_name *names)
{
	char ports[128];
	struct conn_view v;

	if (view_read(a->dir, &v) || !v.present) {
		view_free(&v);
		return;
	}
	if (!v.counting && !v.caps.n) {
		/* floodgated loads the counter with the first cap (docs/concurrency.md) */
		printf("concurrency: not counting: no rule has a cap, %zu keys kept (max %u)\n",
		       v.n, v.max_keys);
		view_free(&v);
		return;
	}
	printf("concurrency: %s through %s, %zu keys tracked (max %u), %llu reconciles, "
	       "corrections %llu keys / %llu connections\n",
	       v.counting ? "counting (link pinned)" : "NOT counting (no pinned link)",
	       way_name(&v), v.n, v.max_keys, (unsigned long long)v.reconciles,
	       (unsigned long long)v.st.ev[FGC_EV_FIX],
	       (unsigned long long)v.st.ev[FGC_EV_FIX_CONNS]);
	for (__u32 i = 0; i < v.caps.n && i < FG_CONN_MAX_CAPS; i++) {
		const struct fg_conn_cap *c = &v.caps.cap[i];
		const char *nm = cli_rule_name(names, c->rule, c->gen);

		ports_str(c, ports, sizeof(ports));
		printf("  %-24s cap %u per source, ports %s: %u sources, %u at the cap, "
		       "%llu connections, %llu pending\n",
		       nm ? nm : "(removed)", c->cap, ports, v.sum[i].sources, v.sum[i].at_cap,
		       (unsigned long long)v.sum[i].conns, (unsigned long long)v.sum[i].pending);
	}
	view_free(&v);
}

/* "concurrency": {counting, way, keys, max_keys, reconciles, corrections:
 * {keys, connections}, rules: [{name, cap, ports, sources, at_cap,
 * connections, pending}]} (floodgate(8), JSON OUTPUT). */
struct json_object *cli_conn_status_json(const struct cli_args *a, const struct fg_name *names,
					 int *err)
{
	struct json_object *o = json_object_new_object(), *fix = json_object_new_object();
	struct json_object *rules = json_object_new_array();
	char ports[128];
	struct conn_view v;

	if (view_read(a->dir, &v))
		*err = *err ? *err : -EIO;
	cli_json_add(err, o, "counting", json_object_new_boolean(v.counting));
	cli_json_add(err, o, "way", json_object_new_string(way_name(&v)));
	cli_json_add(err, o, "keys", json_object_new_uint64(v.n));
	cli_json_add(err, o, "max_keys", json_object_new_uint64(v.max_keys));
	cli_json_add(err, o, "reconciles", json_object_new_uint64(v.reconciles));
	cli_json_add(err, fix, "keys", json_object_new_uint64(v.st.ev[FGC_EV_FIX]));
	cli_json_add(err, fix, "connections", json_object_new_uint64(v.st.ev[FGC_EV_FIX_CONNS]));
	cli_json_add(err, o, "corrections", fix);
	for (__u32 i = 0; i < v.caps.n && i < FG_CONN_MAX_CAPS; i++) {
		const struct fg_conn_cap *c = &v.caps.cap[i];
		const char *nm = cli_rule_name(names, c->rule, c->gen);
		struct json_object *r = json_object_new_object();

		ports_str(c, ports, sizeof(ports));
		cli_json_add(err, r, "name", json_object_new_string(nm ? nm : "(removed)"));
		cli_json_add(err, r, "cap", json_object_new_uint64(c->cap));
		cli_json_add(err, r, "ports", json_object_new_string(ports));
		cli_json_add(err, r, "sources", json_object_new_uint64(v.sum[i].sources));
		cli_json_add(err, r, "at_cap", json_object_new_uint64(v.sum[i].at_cap));
		cli_json_add(err, r, "connections", json_object_new_uint64(v.sum[i].conns));
		cli_json_add(err, r, "pending", json_object_new_uint64(v.sum[i].pending));
		cli_json_push(err, rules, r);
	}
	cli_json_add(err, o, "rules", rules);
	view_free(&v);
	return o;
}
