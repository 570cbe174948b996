// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * SYN authentication in the CLI (docs/syn-auth.md): `floodgate verified
 * list [--json] | del ADDR` straight on the pinned verified tables, and
 * the syn_auth part of `status` and `top`: the way in force, the
 * responder's counters, the verified gauge, the tc program's results and
 * the first-connect delay.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>
#include "cli/cli.h"
#include "lib/log.h"
#include "lib/opts.h"
#include "lib/prefix.h"
#include "maps/fgmaps.h"
#include "synauth/synauth.h"

static const char *const way_names[3] = { "off", "handoff", "retransmit" };

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* What status shows, read once. */
struct sa_view {
	__u8 way;
	__u64 out[FG_OUT_MAX], ev[FG_EV_MAX]; /* summed over every row */
	bool have_ver;
	__u64 ver4, ver6, cap4, cap6;
	bool have_tc;
	__u64 tc[FG_SYN_NSTAT];
	bool have_dly;
	struct fg_sadly dly;
	char generic[FG_MAX_IFS * 17]; /* the interfaces in generic XDP (fg_meta), "" when none */
};

/* The interfaces fg_meta names as attached in generic XDP, space-separated. */
static void generic_ifs(struct fg_maps *m, char *buf, size_t len)
{
	struct fg_meta meta;
	size_t off = 0;

	buf[0] = 0;
	if (fg_meta_read(m, &meta))
		return;
	for (__u32 i = 0; i < meta.n_ifs && i < FG_MAX_IFS && off < len; i++)
		if (meta.ifs[i].xdp_mode == 2)
			off += (size_t)snprintf(buf + off, len - off, "%s%.16s", off ? " " : "",
						meta.ifs[i].name);
}

static void sa_read(struct fg_maps *m, const struct fg_policy *pol, const char *dir,
		    struct sa_view *v)
{
	static struct fg_stats rows[FG_NROWS];
	struct fg_ver ver;
	int fd;

	memset(v, 0, sizeof(*v));
	v->way = pol->sa.way;
	if (!fg_stats_read(m, rows))
		for (int r = 0; r < FG_NROWS; r++) {
			for (int o = 0; o < FG_OUT_MAX; o++)
				v->out[o] += rows[r].pkts[o];
			for (int e = 0; e < FG_EV_MAX; e++)
				v->ev[e] += rows[r].ev[e];
		}
	if (m->fd[FGM_VER4] >= 0 &&
	    !fg_ver_open(&ver, m->fd[FGM_VER4], m->fd[FGM_VER6], m->fd[FGM_SAKEY], false)) {
		fg_ver_count(&ver, mono_ns(), &v->ver4, &v->ver6);
		v->cap4 = (__u64)ver.sets4 * FG_VWAYS;
		v->cap6 = (__u64)ver.sets6 * FG_VWAYS;
		v->have_ver = true;
		fg_ver_close(&ver);
	}
	fd = fg_systat_find(dir);
	if (fd >= 0) {
		v->have_tc = !fg_systat_read(fd, v->tc);
		close(fd);
	}
	v->have_dly = m->fd[FGM_SADLY] >= 0 && !fg_sadly_read(m->fd[FGM_SADLY], &v->dly);
	generic_ifs(m, v->generic, sizeof(v->generic));
}

/* Count and mean (us) of a delay histogram; the median's bucket, in us. */
static __u64 dly_stats(const __u64 *h, __u64 sum_us, double *mean_us, __u64 *p50_us)
{
	__u64 n = 0, c = 0;

	for (int i = 0; i < FG_SA_HIST; i++)
		n += h[i];
	*mean_us = n ? (double)sum_us / (double)n : 0;
	*p50_us = 0;
	for (int i = 0; i < FG_SA_HIST && n; i++) {
		c += h[i];
		if (c * 2 >= n) {
			*p50_us = 1ull << i;
			break;
		}
	}
	return n;
}

void cli_synauth_status_text(struct fg_maps *m, const struct fg_policy *pol, const char *dir)
{
	struct sa_view v;
	double mean;
	__u64 p50, n;

	sa_read(m, pol, dir, &v);
	if (v.way == FG_SA_WAY_OFF && !v.out[FG_OUT_SA_ANSWER] && !v.ev[FG_EV_SA_VERIFIED])
		return;
	printf("syn_auth:  way %s; SYN-ACKs sent %llu, refused by the cap %llu; cookies valid "
	       "%llu, invalid %llu (dropped; %llu in shadow)\n",
	       v.way < 3 ? way_names[v.way] : "?", (unsigned long long)v.out[FG_OUT_SA_ANSWER],
	       (unsigned long long)v.out[FG_OUT_SA_CAPPED],
	       (unsigned long long)v.ev[FG_EV_SA_VALID],
	       (unsigned long long)v.out[FG_OUT_SA_BADCOOKIE],
	       (unsigned long long)v.out[FG_OUT_SA_BADCOOKIE_SHADOW]);
	printf("           verified %llu (events), RST proofs %llu, by socket %llu, shadow %llu, "
	       "no key %llu, failed %llu\n",
	       (unsigned long long)v.ev[FG_EV_SA_VERIFIED],
	       (unsigned long long)v.out[FG_OUT_SA_PROOF],
	       (unsigned long long)v.ev[FG_EV_SA_SOCKET], (unsigned long long)v.ev[FG_EV_SA_SHADOW],
	       (unsigned long long)v.ev[FG_EV_SA_NOKEY], (unsigned long long)v.ev[FG_EV_SA_FAIL]);
	if (v.have_ver)
		printf("           verified now: %llu IPv4 of %llu, %llu IPv6 of %llu\n",
		       (unsigned long long)v.ver4, (unsigned long long)v.cap4,
		       (unsigned long long)v.ver6, (unsigned long long)v.cap6);
	if (v.have_tc)
		printf("           tc: handed off %llu, no listener %llu, refused %llu\n",
		       (unsigned long long)v.tc[FG_SYN_HANDOFF],
		       (unsigned long long)v.tc[FG_SYN_NOLISTEN],
		       (unsigned long long)v.tc[FG_SYN_FAIL]);
	else if (v.way == FG_SA_WAY_HANDOFF)
		printf("           tc: no tcx link pinned (a clsact filter is not seen from here: "
		       "its counters are in the metrics; with neither, handed-off ACKs get an "
		       "RST)\n");
	if (v.generic[0] && v.way == FG_SA_WAY_HANDOFF)
		printf("           generic XDP on %s: the handoff does NOT work there (the listener "
		       "resets every proven connection); set xdp_mode: skb\n",
		       v.generic);
	else if (v.generic[0] && v.way == FG_SA_WAY_RETRANSMIT)
		printf("           generic XDP on %s: no handoff there (retransmit)\n", v.generic);
	if (!v.have_dly)
		return;
	if ((n = dly_stats(v.dly.handoff, v.dly.sum_us[0], &mean, &p50)))
		printf("           first connect (handoff): %llu measured, mean %.3f ms, median "
		       "about %.3f ms\n",
		       (unsigned long long)n, mean / 1e3, p50 / 1e3);
	if ((n = dly_stats(v.dly.retransmit, v.dly.sum_us[1], &mean, &p50)))
		printf("           first connect (retransmit): %llu measured, mean %.3f ms, median "
		       "about %.3f ms\n",
		       (unsigned long long)n, mean / 1e3, p50 / 1e3);
}

static struct json_object *dly_json(const __u64 *h, __u64 sum_us, int *err)
{
	struct json_object *o = json_object_new_object(), *b = json_object_new_array();
	double mean;
	__u64 p50, n = dly_stats(h, sum_us, &mean, &p50);

	cli_json_add(err, o, "count", json_object_new_uint64(n));
	cli_json_add(err, o, "mean_us", json_object_new_double(mean));
	cli_json_add(err, o, "median_us", json_object_new_uint64(p50));
	for (int i = 0; i < FG_SA_HIST; i++)
		cli_json_push(err, b, json_object_new_uint64(h[i]));
	cli_json_add(err, o, "log2_us_buckets", b);
	return o;
}

/* {"way", "syn_answered", "reply_capped", "cookie_valid", "cookie_invalid",
 *  "cookie_invalid_shadow", "rst_proof", "verified_events", "ack_socket",
 *  "syn_auth_shadow", "syn_auth_nokey", "syn_auth_fail", "cookie_dup",
 *  "verified": {"ipv4", "ipv6", "capacity_ipv4", "capacity_ipv6"} | null,
 *  "tc": {"handoff", ...} | null, "generic_xdp": "IFACE ..." | null (the
 *  interfaces in generic XDP, where handoff does not work),
 *  "first_connect": {"handoff", "retransmit"}} */
struct json_object *cli_synauth_status_json(struct fg_maps *m, const struct fg_policy *pol,
					    const char *dir, int *err)
{
	struct json_object *o = json_object_new_object(), *x;
	struct sa_view v;

	sa_read(m, pol, dir, &v);
	cli_json_add(err, o, "way", json_object_new_string(v.way < 3 ? way_names[v.way] : "?"));
	cli_json_add(err, o, "syn_answered", json_object_new_uint64(v.out[FG_OUT_SA_ANSWER]));
	cli_json_add(err, o, "reply_capped", json_object_new_uint64(v.out[FG_OUT_SA_CAPPED]));
	cli_json_add(err, o, "cookie_valid", json_object_new_uint64(v.ev[FG_EV_SA_VALID]));
	cli_json_add(err, o, "cookie_invalid", json_object_new_uint64(v.out[FG_OUT_SA_BADCOOKIE]));
	cli_json_add(err, o, "cookie_invalid_shadow",
		     json_object_new_uint64(v.out[FG_OUT_SA_BADCOOKIE_SHADOW]));
	cli_json_add(err, o, "rst_proof", json_object_new_uint64(v.out[FG_OUT_SA_PROOF]));
	cli_json_add(err, o, "verified_events", json_object_new_uint64(v.ev[FG_EV_SA_VERIFIED]));
	cli_json_add(err, o, "ack_socket", json_object_new_uint64(v.ev[FG_EV_SA_SOCKET]));
	cli_json_add(err, o, "syn_auth_shadow", json_object_new_uint64(v.ev[FG_EV_SA_SHADOW]));
	cli_json_add(err, o, "syn_auth_nokey", json_object_new_uint64(v.ev[FG_EV_SA_NOKEY]));
	cli_json_add(err, o, "syn_auth_fail", json_object_new_uint64(v.ev[FG_EV_SA_FAIL]));
	cli_json_add(err, o, "cookie_dup", json_object_new_uint64(v.ev[FG_EV_SA_DUP]));
	if (v.have_ver) {
		x = json_object_new_object();
		cli_json_add(err, x, "ipv4", json_object_new_uint64(v.ver4));
		cli_json_add(err, x, "ipv6", json_object_new_uint64(v.ver6));
		cli_json_add(err, x, "capacity_ipv4", json_object_new_uint64(v.cap4));
		cli_json_add(err, x, "capacity_ipv6", json_object_new_uint64(v.cap6));
		cli_json_add(err, o, "verified", x);
	} else {
		cli_json_add_null(err, o, "verified");
	}
	if (v.have_tc) {
		x = json_object_new_object();
		for (int i = 0; i < FG_SYN_NSTAT; i++)
			cli_json_add(err, x, fg_syn_stat_names[i], json_object_new_uint64(v.tc[i]));
		cli_json_add(err, o, "tc", x);
	} else {
		cli_json_add_null(err, o, "tc");
	}
	if (v.generic[0])
		cli_json_add(err, o, "generic_xdp", json_object_new_string(v.generic));
	else
		cli_json_add_null(err, o, "generic_xdp");
	x = json_object_new_object();
	cli_json_add(err, x, "handoff", dly_json(v.dly.handoff, v.dly.sum_us[0], err));
	cli_json_add(err, x, "retransmit", dly_json(v.dly.retransmit, v.dly.sum_us[1], err));
	cli_json_add(err, o, "first_connect", x);
	return o;
}

/* --- floodgate verified list | del ------------------------------------------------------ */

struct list_ctx {
	struct json_object *arr;
	int *err;
	__u64 n;
};

static void addr_str(const struct fg_ver_entry *e, char *buf, size_t len)
{
	inet_ntop(e->family == 4 ? AF_INET : AF_INET6, e->addr, buf, (socklen_t)len);
}

static int list_one(const struct fg_ver_entry *e, void *arg)
{
	struct list_ctx *c = arg;
	char a[INET6_ADDRSTRLEN];

	addr_str(e, a, sizeof(a));
	c->n++;
	if (c->arr) {
		struct json_object *o = json_object_new_object();

		cli_json_add(c->err, o, "address", json_object_new_string(a));
		cli_json_add(c->err, o, "family", json_object_new_int(e->family));
		cli_json_add(c->err, o, "left_s", json_object_new_double(e->left_ns / 1e9));
		cli_json_add(c->err, o, "verified_ago_s",
			     json_object_new_double(e->since_ago_ns / 1e9));
		cli_json_add(c->err, o, "synack_ago_s",
			     e->synack_ago_ns ? json_object_new_double(e->synack_ago_ns / 1e9) :
						NULL);
		cli_json_push(c->err, c->arr, o);
		return 0;
	}
	printf("%-40s %10.0f s left  verified %.0f s ago\n", a, e->left_ns / 1e9,
	       e->since_ago_ns / 1e9);
	return 0;
}

static int verified_open(const struct cli_args *a, struct fg_maps *m, struct fg_ver *v, bool write)
{
	int err;

	if (cli_open_maps(a, m))
		return -1;
	err = fg_ver_open(v, m->fd[FGM_VER4], m->fd[FGM_VER6], m->fd[FGM_SAKEY], write);
	if (err) {
		pr_warn("the verified tables in %s: %s", a->dir, strerror(-err));
		fg_maps_close(m);
		return -1;
	}
	return 0;
}

static int verified_del(const struct cli_args *a)
{
	struct fg_pfx_src p;
	const char *why = NULL;
	struct fg_maps m;
	struct fg_ver v;
	__be32 addr[4] = { 0 };
	int n;

	if (fg_prefix_parse(a->pos[1], &p, &why) || p.plen != (p.family == 4 ? 32 : 128)) {
		pr_warn("verified del: \"%s\": %s", a->pos[1],
			why ? why : "expected one address (a.b.c.d or x::y), not a prefix");
		return FG_EXIT_USAGE;
	}
	memcpy(addr, p.addr, p.family == 4 ? 4 : 16);
	if (verified_open(a, &m, &v, true))
		return 1;
	n = fg_ver_del(&v, p.family, addr);
	fg_ver_close(&v);
	fg_maps_close(&m);
	if (!n) {
		pr_warn("verified del: %s is not verified", a->pos[1]);
		return 1;
	}
	pr_info("verified del: %s removed: its next connection proves its address again",
		a->pos[1]);
	return 0;
}

int cli_verified(void *cfg)
{
	const struct cli_args *a = cfg;
	struct list_ctx c = { 0 };
	struct fg_maps m;
	struct fg_ver v;
	int err = 0;

	if (!strcmp(a->pos[0], "del")) {
		if (a->npos != 2 || a->json) {
			pr_warn("verified del: needs one ADDR (and takes no --json)");
			return FG_EXIT_USAGE;
		}
		return verified_del(a);
	}
	if (strcmp(a->pos[0], "list") || a->npos != 1) {
		pr_warn("verified: \"%s\": expected list [--json] or del ADDR", a->pos[0]);
		return FG_EXIT_USAGE;
	}
	if (verified_open(a, &m, &v, false))
		return 1;
	c.err = &err;
	if (a->json)
		c.arr = json_object_new_array();
	fg_ver_each(&v, mono_ns(), list_one, &c);
	fg_ver_close(&v);
	fg_maps_close(&m);
	if (a->json)
		return cli_json_print(c.arr, err) ? 1 : 0;
	printf("%llu verified source%s\n", (unsigned long long)c.n, c.n == 1 ? "" : "s");
	return 0;
}
