// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* floodgate stats (per-rule counters) and top (the most throttled sources). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>
#include "cli/cli.h"
#include "lib/log.h"
#include "sources/sources.h"
#include "lib/sysutil.h"

#define TOP_SCAN_MAX (1u << 22) /* sources kept in memory by `top` */

/* --- stats ----------------------------------------------------------------------- */

/* {outcome or event name: count, ...} */
static struct json_object *counts_json(const __u64 *v, const char *const *names, int n, int *err)
{
	struct json_object *o = json_object_new_object();

	for (int i = 0; i < n; i++)
		cli_json_add(err, o, names[i], json_object_new_uint64(v[i]));
	return o;
}

/* The schema is documented in floodgate(8), JSON OUTPUT. */
static int stats_json(const struct fg_stats *rows, const struct fg_name *names)
{
	struct json_object *root = json_object_new_object(), *arr = json_object_new_array();
	int err = 0;

	for (int r = 0; r < FG_NROWS; r++) {
		const char *nm = cli_row_name(names, r);
		struct json_object *o;

		if (!nm)
			continue;
		o = json_object_new_object();
		cli_json_add(&err, o, "rule", json_object_new_string(nm));
		cli_json_add(&err, o, "id", json_object_new_int(r));
		cli_json_add(&err, o, "packets",
			     counts_json(rows[r].pkts, fg_outcome_names, FG_OUT_MAX, &err));
		cli_json_add(&err, o, "bytes",
			     counts_json(rows[r].bytes, fg_outcome_names, FG_OUT_MAX, &err));
		cli_json_add(&err, o, "events",
			     counts_json(rows[r].ev, fg_event_names, FG_EV_MAX, &err));
		cli_json_push(&err, arr, o);
	}
	cli_json_add(&err, root, "rules", arr);
	return cli_json_print(root, err);
}

static void stats_events_text(const struct fg_stats *rows, const struct fg_name *names)
{
	for (int r = 0; r < FG_NROWS; r++) {
		const char *nm = cli_row_name(names, r);
		bool any = false;

		if (!nm)
			continue;
		for (int e = 0; e < FG_EV_MAX; e++) {
			if (!rows[r].ev[e])
				continue;
			printf("%s%s=%llu", any ? " " : "events ", fg_event_names[e],
			       (unsigned long long)rows[r].ev[e]);
			any = true;
		}
		if (any)
			printf(" (%s)\n", nm);
	}
}

#define NUM_W	   10 /* a number column: "1234567890", "123.5k" */
#define NAME_W_MAX 24 /* the rule column's room at least; a longer name is cut with '~' */

/* The columns: -o's outcomes, else those any row has counted (pass when none has). */
static int stats_columns(const struct cli_args *a, const struct fg_stats *rows,
			 const struct fg_name *names, int *cols)
{
	int n = 0;

	if (a->ncols) {
		memcpy(cols, a->cols, sizeof(a->cols[0]) * (size_t)a->ncols);
		return a->ncols;
	}
	for (int o = 0; o < FG_OUT_MAX; o++) {
		bool seen = false;

		for (int r = 0; r < FG_NROWS && !seen; r++)
			seen = cli_row_name(names, r) && rows[r].pkts[o];
		if (seen)
			cols[n++] = o;
	}
	if (!n)
		cols[n++] = FG_OUT_PASS;
	return n;
}

/* The rule column: the longest name, within what the number columns leave of 80 (at least
 * NAME_W_MAX). */
static int name_width(const struct fg_name *names, const char *title, int ncols)
{
	int fit = (CLI_WIDTH - NAME_W_MAX) / (NUM_W + 1);
	int cap = CLI_WIDTH - (NUM_W + 1) * (ncols < fit ? ncols : fit);
	int w = (int)strlen(title);

	for (int r = 0; r < FG_NROWS; r++) {
		const char *nm = cli_row_name(names, r);

		if (nm && (int)strlen(nm) > w)
			w = (int)strlen(nm);
	}
	return w > cap ? cap : w;
}

/* A number as the column shows it: exact unless stdout is a terminal. */
static void stats_num(char *buf, size_t len, double v)
{
	if (cli_tty())
		cli_fmt_num(buf, len, v);
	else
		snprintf(buf, len, "%.0f", v);
}

/* prev NULL prints totals and events; otherwise per-second rates over dt.
 * The columns that do not fit 80 go into a further table below. */
static void stats_table(const struct cli_args *a, const struct fg_stats *rows,
			const struct fg_stats *prev, double dt, const struct fg_name *names)
{
	const char *title = prev ? "RULE (per second)" : "RULE";
	int cols[FG_OUT_MAX], ncols = stats_columns(a, rows, names, cols);
	int nw = name_width(names, prev ? "RULE" : title, ncols), cw[FG_OUT_MAX];
	char b[32];

	if (prev && nw < (int)strlen(title))
		title = "RULE (/s)";
	if (nw < (int)strlen(title))
		nw = (int)strlen(title);
	for (int c = 0; c < ncols; c++) { /* a column is as wide as its name, at least NUM_W */
		int l = (int)strlen(fg_outcome_names[cols[c]]);

		cw[c] = l > NUM_W ? l : NUM_W;
	}
	for (int c0 = 0, c1; c0 < ncols; c0 = c1) {
		int used = nw + 1 + cw[c0];

		for (c1 = c0 + 1; c1 < ncols && used + 1 + cw[c1] <= CLI_WIDTH; c1++)
			used += 1 + cw[c1];
		if (c0)
			printf("\n");
		printf("%-*s", nw, title);
		for (int c = c0; c < c1; c++)
			printf(" %*s", cw[c], fg_outcome_names[cols[c]]);
		printf("\n");
		for (int r = 0; r < FG_NROWS; r++) {
			const char *nm = cli_row_name(names, r);

			if (!nm)
				continue;
			if ((int)strlen(nm) > nw)
				printf("%.*s~", nw - 1, nm);
			else
				printf("%-*s", nw, nm);
			for (int c = c0; c < c1; c++) {
				int o = cols[c];
				double v = rows[r].pkts[o];

				if (prev)
					v = (rows[r].pkts[o] - prev[r].pkts[o]) / dt;
				stats_num(b, sizeof(b), v);
				printf(" %*s", cw[c], b);
			}
			printf("\n");
		}
	}
	if (!prev)
		stats_events_text(rows, names);
}

static int read_counters(struct fg_maps *m, struct fg_name *names, struct fg_stats *rows)
{
	int err;

	if ((err = fg_names_read(m, names)) || (err = fg_stats_read(m, rows)))
		return err;
	return 0;
}

/* --watch: rates (or a JSON object) every secs, until interrupted or the
 * pin dir goes away. */
static int stats_watch(const struct cli_args *a, struct fg_maps *m, struct fg_name *names,
		       struct fg_stats *rows)
{
	static struct fg_stats prev[FG_NROWS];
	int err;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (;;) {
		__u64 t0 = fg_mono_coarse_ns(), t1;

		memcpy(prev, rows, sizeof(prev));
		sleep((unsigned int)a->watch_secs);
		err = read_counters(m, names, rows);
		if (err) {
			pr_warn("reading counters: %s (pin dir removed?)", strerror(-err));
			return err;
		}
		t1 = fg_mono_coarse_ns();
		if (a->json) {
			err = stats_json(rows, names);
			if (err) {
				pr_warn("stats --json: %s", strerror(-err));
				return err;
			}
		} else {
			time_t now = time(NULL);
			char ts[32];

			strftime(ts, sizeof(ts), "%H:%M:%S", localtime(&now));
			printf("--- %s\n", ts);
			cli_wrap_begin();
			stats_table(a, rows, prev, (t1 - t0) / 1e9, names);
			cli_wrap_end();
		}
		fflush(stdout);
	}
}

int cli_stats(void *cfg)
{
	static struct fg_stats rows[FG_NROWS];
	const struct cli_args *a = cfg;
	struct fg_name names[FG_MAX_IDS];
	struct fg_maps m;
	int err;

	if (cli_open_maps(a, &m))
		return 1;
	err = read_counters(&m, names, rows);
	if (err)
		pr_warn("reading counters: %s", strerror(-err));
	else if (a->watch)
		err = stats_watch(a, &m, names, rows);
	else if (!a->json) {
		cli_wrap_begin();
		stats_table(a, rows, NULL, 0, names);
		cli_wrap_end();
	} else if ((err = stats_json(rows, names)))
		pr_warn("stats --json: %s", strerror(-err));
	fg_maps_close(&m);
	return err ? 1 : 0;
}

/* --- top ------------------------------------------------------------------------- */

static int cmp_src(const void *x, const void *y)
{
	const struct fg_source *a = x, *b = y;

	if (a->drops != b->drops)
		return a->drops < b->drops ? 1 : -1;
	return (int)b->limited - (int)a->limited;
}

static int mask_plen(const __u8 *mask, int bytes)
{
	int n = 0;

	for (int i = 0; i < bytes; i++)
		n += __builtin_popcount(mask[i]);
	return n;
}

/* "10.0.0.0/24": the source as its rule groups it (the rule's mask, if the
 * rule is still in the active policy; else the whole address). */
static void source_str(const struct fg_source *s, const struct fg_policy *pol, char *buf,
		       size_t len)
{
	char ab[INET6_ADDRSTRLEN];
	int plen = s->family == 4 ? 32 : 128;

	for (__u32 r = 0; r < pol->nrules && r < FG_MAX_RULES; r++)
		if (pol->rules[r].id == s->rule && pol->rules[r].gen == s->gen)
			plen = s->family == 4 ? mask_plen((const __u8 *)&pol->rules[r].mask4, 4) :
						mask_plen((const __u8 *)pol->rules[r].mask6, 16);
	fg_addr_str(s->family, s->addr, ab, sizeof(ab));
	snprintf(buf, len, "%s/%d", ab, plen);
}

static void top_text(const struct fg_source *src, size_t n, const struct fg_src_scan *scan,
		     const struct fg_policy *pol, const struct fg_name *names)
{
	char addr[INET6_ADDRSTRLEN + 16];
	int aw = (int)strlen("SOURCE"), rw = (int)strlen("RULE");

	/* columns as wide as what they hold: an IPv4 source needs 18, not 44 */
	for (size_t i = 0; i < n; i++) {
		const char *nm = cli_rule_name(names, src[i].rule, src[i].gen);

		source_str(&src[i], pol, addr, sizeof(addr));
		if ((int)strlen(addr) > aw)
			aw = (int)strlen(addr);
		if ((int)strlen(nm ? nm : "(removed)") > rw)
			rw = (int)strlen(nm ? nm : "(removed)");
	}
	printf("%-*s %-*s %12s %s\n", aw, "SOURCE", rw, "RULE", "DROPS(~)", "LIMITED");
	for (size_t i = 0; i < n; i++) {
		const struct fg_source *s = &src[i];
		const char *nm = cli_rule_name(names, s->rule, s->gen);

		source_str(s, pol, addr, sizeof(addr));
		printf("%-*s %-*s %12llu %s\n", aw, addr, rw, nm ? nm : "(removed)",
		       (unsigned long long)s->drops, s->limited ? "yes" : "no");
	}
	printf("%zu of %zu sources have drops (sampled 1 in %d, so counts are "
	       "approximate; exact totals: floodgate stats)\n",
	       scan->matched, scan->all4 + scan->all6, FG_DROP_SAMPLE);
}

/* The schema is documented in floodgate(8), JSON OUTPUT. */
static int top_json(const struct cli_args *a, struct fg_maps *m, const struct fg_source *src,
		    size_t n, const struct fg_src_scan *scan, const struct fg_policy *pol,
		    const struct fg_name *names)
{
	struct json_object *root = json_object_new_object(), *arr = json_object_new_array();
	char addr[INET6_ADDRSTRLEN + 16];
	int err = 0;

	for (size_t i = 0; i < n; i++) {
		const struct fg_source *s = &src[i];
		const char *nm = cli_rule_name(names, s->rule, s->gen);
		struct json_object *o = json_object_new_object();

		source_str(s, pol, addr, sizeof(addr));
		cli_json_add(&err, o, "source", json_object_new_string(addr));
		cli_json_add(&err, o, "rule", json_object_new_string(nm ? nm : "(removed)"));
		cli_json_add(&err, o, "drops_sampled", json_object_new_uint64(s->drops));
		cli_json_add(&err, o, "limited", json_object_new_boolean(s->limited));
		cli_json_push(&err, arr, o);
	}
	cli_json_add(&err, root, "sources", arr);
	cli_json_add(&err, root, "throttled_sources", json_object_new_uint64(scan->matched));
	cli_json_add(&err, root, "tracked_sources",
		     json_object_new_uint64(scan->all4 + scan->all6));
	cli_conn_top_json(a, names, root, &err);
	if (pol->sa.way != FG_SA_WAY_OFF)
		cli_json_add(&err, root, "syn_auth", cli_synauth_status_json(m, pol, a->dir, &err));
	return cli_json_print(root, err);
}

int cli_top(void *cfg)
{
	const struct cli_args *a = cfg;
	struct fg_name names[FG_MAX_IDS];
	struct fg_policy *pol = malloc(sizeof(*pol));
	struct fg_source *src = NULL;
	struct fg_src_scan scan;
	struct fg_maps m;
	size_t n = 0;
	int err;

	if (!pol || cli_open_maps(a, &m)) {
		free(pol);
		return 1;
	}
	if ((err = fg_names_read(&m, names)) || (err = fg_policy_read_active(&m, pol)) ||
	    (err = fg_sources_read(&m, pol, fg_mono_coarse_ns(), 1, TOP_SCAN_MAX, &src, &n,
				   &scan))) {
		pr_warn("reading sources: %s", strerror(-err));
		goto out;
	}
	if (n)
		qsort(src, n, sizeof(*src), cmp_src);
	if (n > a->top_n)
		n = a->top_n;
	if (!a->json) {
		cli_wrap_begin();
		top_text(src, n, &scan, pol, names);
		cli_conn_top_text(a, names);
		cli_synauth_status_text(&m, pol, a->dir);
		cli_wrap_end();
	} else if ((err = top_json(a, &m, src, n, &scan, pol, names))) {
		pr_warn("top --json: %s", strerror(-err));
	}
out:
	free(src);
	free(pol);
	fg_maps_close(&m);
	return err ? 1 : 0;
}
