// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fg_config_print: a compiled policy, human readable (`floodgate check`). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "admission.h"
#include "conn.h"
#include "policy.h"
#include "units.h"

#define MAX_SHOWN	8	/* match entries printed per rule */

static void print_limit(FILE *f, const char *what, const struct fg_limit_src *s,
			const struct fg_limit *l, int bytes)
{
	char r[48], b[48];

	if (!s->set)
		return;
	fg_format_amount(r, sizeof(r), s->rate, bytes);
	fg_format_amount(b, sizeof(b), s->burst, bytes);
	fprintf(f, "      %-10s %s/s burst %s  (inc %llu, tau %llu; refills in %.3g s)\n",
		what, r, b, (unsigned long long)l->inc, (unsigned long long)l->tau,
		(double)l->tau / (double)FG_TU_PER_SEC);
}

static void print_flags(FILE *f, __u8 mask, __u8 val)
{
	size_t i;

	for (i = 0; i < FG_NTCP_FLAGS; i++)
		if (val & fg_tcp_flags[i].bit)
			fputc(fg_tcp_flags[i].letter, f);
	fputc('/', f);
	for (i = 0; i < FG_NTCP_FLAGS; i++)
		if (mask & fg_tcp_flags[i].bit)
			fputc(fg_tcp_flags[i].letter, f);
}

static void print_entry(FILE *f, int cls, const struct fg_match *e)
{
	fprintf(f, "      match %s", fg_class_names[cls]);
	if (e->proto)
		fprintf(f, " proto %u", e->proto);
	if (e->flags & FG_M_FRAG)
		fprintf(f, " non-first-fragments");
	if (e->sport_lo != 0 || e->sport_hi != 65535)
		fprintf(f, " sport %u-%u", e->sport_lo, e->sport_hi);
	if (e->dport_lo != 0 || e->dport_hi != 65535)
		fprintf(f, " dport %u-%u", e->dport_lo, e->dport_hi);
	if (e->tcp_mask) {
		fprintf(f, " flags ");
		print_flags(f, e->tcp_mask, e->tcp_val);
	}
	if (e->flags & FG_M_ICMP_TYPE)
		fprintf(f, " icmp_type %u", e->icmp_type);
	if (e->flags & FG_M_V4)
		fprintf(f, " ipv4");
	if (e->flags & FG_M_V6)
		fprintf(f, " ipv6");
	if (e->sets)
		fprintf(f, " src-sets 0x%x", e->sets);
	fputc('\n', f);
}

static void print_globals(FILE *f, const struct fg_config *cfg)
{
	const struct fg_policy *pol = &cfg->pol;
	size_t n4, n6;
	int k;

	fprintf(f, "policy %s\n", cfg->path[0] ? cfg->path : "(inline)");
	fprintf(f, "  interfaces:  ");
	if (!cfg->n_ifs)
		fprintf(f, "(none; set on the command line)");
	for (k = 0; k < cfg->n_ifs; k++)
		fprintf(f, "%s%s", k ? ", " : "", cfg->ifaces[k]);
	fprintf(f, "\n  xdp_mode:    %s\n",
		cfg->xdp_mode >= 0 && cfg->xdp_mode <= 2 ? fg_xdp_mode_names[cfg->xdp_mode] : "?");
	fprintf(f, "  mode:        %s\n", cfg->mode == FG_MODE_SHADOW ? "shadow" : "enforce");
	fprintf(f, "  max_sources: %llu per family\n", (unsigned long long)cfg->max_sources);
	fprintf(f, "  metrics:     %s\n", cfg->metrics[0] ? cfg->metrics : "off");
	fprintf(f, "  detach_on_exit: %s\n", cfg->detach_on_exit ? "yes" : "no");
	fprintf(f, "  default:     %s, malformed: %s\n",
		pol->default_verdict == FG_DROP ? "drop" : "pass",
		pol->malformed_verdict == FG_DROP ? "drop" : "pass");
	fg_pfx_count(cfg->pfx, cfg->n_pfx, &n4, &n6);
	fprintf(f, "  prefixes:    %zu allow, %zu deny as written; %zu flattened entries (%zu IPv4, %zu IPv6)\n",
		cfg->n_allow, cfg->n_deny, cfg->n_pfx, n4, n6);
}

/* What the admission limit would be, computed on a copy (cfg is const). */
static void print_admission(FILE *f, const struct fg_config *cfg)
{
	struct fg_config *tmp = malloc(sizeof(*tmp));
	double rate;

	if (!tmp)
		return;
	*tmp = *cfg;
	if (cfg->admission.set) {
		rate = fg_policy_set_admission(tmp, 1);
		fprintf(f, "  admission:   %.6g new sources/s burst %.6g (explicit; inc %llu, tau %llu)\n",
			rate, cfg->admission.burst,
			(unsigned long long)tmp->pol.ins.inc,
			(unsigned long long)tmp->pol.ins.tau);
	} else {
		long nc = sysconf(_SC_NPROCESSORS_CONF);

		rate = fg_policy_set_admission(tmp, nc > 0 ? (int)nc : 1);
		fprintf(f, "  admission:   %.6g new sources/s (automatic for %ld CPUs; inc %llu, tau %llu)\n",
			rate, nc > 0 ? nc : 1L,
			(unsigned long long)tmp->pol.ins.inc,
			(unsigned long long)tmp->pol.ins.tau);
	}
	free(tmp);
}

/* A concurrency cap: what the cap table gets (user/conn.h). */
static void print_cap(FILE *f, const struct fg_policy *pol, __u32 r)
{
	const struct fg_rule *ru = &pol->rules[r];
	struct fg_conn_cap cap;
	int eph = 0;

	if (!ru->conn_cap)
		return;
	fprintf(f, "      %-10s %u connections per source, handshake_timeout %u ms",
		"concurrency", ru->conn_cap, ru->conn_ttl_ms);
	if (fg_conn_cap_of_rule(pol, r, &cap, NULL)) {
		fputc('\n', f);
		return;
	}
	fprintf(f, "; counts TCP%s to ports", cap.families == FG_CONN_F_V4 ? " over IPv4" :
		cap.families == FG_CONN_F_V6 ? " over IPv6" : "");
	for (__u32 j = 0; j < cap.nranges; j++) {
		const struct fg_conn_range *d = &cap.dport[j];

		fprintf(f, d->lo == d->hi ? "%s%u" : "%s%u-%u", j ? "," : " ", d->lo, d->hi);
		eph |= d->hi >= 32768 && d->lo <= 60999;
	}
	fputc('\n', f);
	if (eph)
		fprintf(f, "      note: these ports overlap the default ephemeral range 32768-60999: "
			"this host's own outgoing connections from them count too\n");
}

static void print_rule(FILE *f, const struct fg_config *cfg, __u32 r)
{
	const struct fg_policy *pol = &cfg->pol;
	const struct fg_rule *ru = &pol->rules[r];
	const struct fg_rule_src *rs = &cfg->rules[r];
	int bytes = ru->cost == FG_COST_BYTES;
	int k, cls, shown = 0;

	fprintf(f, "    %2u %-20s %s %s%s", r, rs->name,
		ru->mode == FG_MODE_SHADOW ? "shadow" : "enforce",
		ru->action < 3 ? fg_action_names[ru->action] : "?",
		rs->implicit ? " (implicit)" : "");
	if (ru->action == FG_ACT_LIMIT)
		fprintf(f, " by %s, source /%d (v4) /%d (v6), on_full %s",
			bytes ? "bytes" : "packets", rs->plen4, rs->plen6,
			ru->on_full < 3 ? fg_on_full_names[ru->on_full] : "?");
	fputc('\n', f);
	for (cls = 0; cls < FG_NCLASS; cls++) {
		for (k = 0; k < pol->nmatch[cls] && k < FG_MAX_MATCH; k++) {
			if (pol->match[cls][k].rule != r)
				continue;
			if (shown++ < MAX_SHOWN)
				print_entry(f, cls, &pol->match[cls][k]);
		}
	}
	if (shown > MAX_SHOWN)
		fprintf(f, "      ... %d match entries in all\n", shown);
	print_limit(f, "per_source", &rs->per_source, &ru->src, bytes);
	print_limit(f, "aggregate", &rs->aggregate, &ru->agg, bytes);
	if (rs->per_source.set && ru->on_full == FG_FULL_OVERFLOW)
		print_limit(f, "overflow", &rs->overflow, &ru->ovf, bytes);
	print_cap(f, pol, r);
}

void fg_config_print(FILE *f, const struct fg_config *cfg)
{
	__u32 caps = 0;

	print_globals(f, cfg);
	print_admission(f, cfg);
	for (__u32 r = 0; r < cfg->pol.nrules && r < FG_MAX_RULES; r++)
		caps += cfg->pol.rules[r].conn_cap != 0;
	if (caps)
		fprintf(f, "  concurrency: %u capped rules; reconcile every %.3g s; %u count keys\n",
			caps, cfg->conn_reconcile_ms / 1e3, cfg->conn_max_keys);
	fprintf(f, "  rules (%u, first match wins):\n", cfg->pol.nrules);
	for (__u32 r = 0; r < cfg->pol.nrules && r < FG_MAX_RULES; r++)
		print_rule(f, cfg, r);
}
