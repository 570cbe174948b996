// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* A policy's features against this kernel (see policy_kernel.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "policy/policy_kernel.h"
#include "lib/sysutil.h"

const char *const fg_need_state_names[3] = { "ok", "degraded", "unavailable" };

static struct fg_need *need(struct fg_need *out, int *n, const char *feature)
{
	struct fg_need *d = &out[*n];

	if (*n >= FG_NEEDS_MAX)
		return NULL;
	memset(d, 0, sizeof(*d));
	d->feature = feature;
	(*n)++;
	return d;
}

static void say(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

/* The XDP program itself: xdp.frags, a ring buffer (throttle events),
 * mmapable arrays (fg_ctl, the source tables): no other way. */
static void need_filter(const struct fg_kfeat *kf, struct fg_need *d)
{
	static const enum fg_kf req[] = { FG_KF_XDP, FG_KF_XDP_FRAGS, FG_KF_RINGBUF, FG_KF_MMAP };

	snprintf(d->how, sizeof(d->how), "XDP (native where the driver has it, else generic)");
	for (size_t i = 0; i < sizeof(req) / sizeof(req[0]); i++) {
		if (kf->f[req[i]].ok)
			continue;
		d->state = FG_NEED_UNAVAILABLE;
		say(d->why, sizeof(d->why), "%s: %s", fg_kf_desc[req[i]], kf->f[req[i]].why);
		return;
	}
}

static bool has_caps(const struct fg_config *cfg)
{
	for (__u32 i = 0; i < cfg->pol.nrules && i < FG_MAX_RULES; i++)
		if (cfg->pol.rules[i].conn_cap)
			return true;
	return false;
}

static void need_caps(const struct fg_kfeat *kf, struct fg_need *d)
{
	char why[FG_WHY_LEN];
	enum fg_conn_way w = fg_kfeat_conn_way(kf, why);

	switch (w) {
	case FG_CONN_WAY_TRACING:
		snprintf(d->how, sizeof(d->how), "tp_btf/inet_sock_set_state + iter/tcp");
		break;
	case FG_CONN_WAY_SOCKOPS:
		snprintf(d->how, sizeof(d->how), "sock_ops on cgroup v2 + sock_diag dumps");
		d->state = FG_NEED_DEGRADED;
		/* docs/concurrency.md, "The sock_ops way": what it sees later */
		if (fg_kfeat_conn_way_ok(kf, FG_CONN_WAY_TRACING, why))
			snprintf(why, sizeof(why), "chosen by %s", FG_CONN_WAY_ENV);
		say(d->why, sizeof(d->why),
		    "connections older than the counter come off the count at their release or "
		    "the next reconcile; %s%s",
		    strncmp(why, "chosen", 6) ? "no tp_btf way: " : "", why);
		break;
	default:
		d->state = FG_NEED_UNAVAILABLE;
		fg_whyn(d->why, sizeof(d->why), "%s", why);
	}
}

static void need_libxdp(const struct fg_config *cfg, const struct fg_kfeat *kf, struct fg_need *d)
{
	if (kf->f[FG_KF_EXT].ok) {
		snprintf(d->how, sizeof(d->how), "libxdp's dispatcher (freplace)");
		return;
	}
	snprintf(d->how, sizeof(d->how), "floodgate's own bpf_link, alone on each device");
	/* auto and libxdp both attach alone where no dispatcher can be built
	 * (docs/libxdp.md): no other XDP program can join floodgate there */
	d->state = FG_NEED_DEGRADED;
	say(d->why, sizeof(d->why), "no dispatcher: %s%s", kf->f[FG_KF_EXT].why,
	    cfg->xdp_attach == FG_ATTACH_AUTO ? "" : "; no other XDP program can share a device");
}

static void need_psi(const struct fg_config *cfg, struct fg_need *d)
{
	const char *p = cfg->shed_signal.path[0] ? cfg->shed_signal.path : "/proc/pressure/cpu";

	say(d->how, sizeof(d->how), "%s", p);
	if (access(p, R_OK)) {
		d->state = FG_NEED_UNAVAILABLE;
		say(d->why, sizeof(d->why),
		    "%s: %s (the kernel has no pressure stall information: "
		    "CONFIG_PSI, or psi=0 on its command line)",
		    p, strerror(errno));
	}
}

/* The first of the kernel items a way needs that this kernel lacks, into why. */
static bool way_lacks(const struct fg_kfeat *kf, const enum fg_kf *req, size_t n, char *why)
{
	for (size_t i = 0; i < n; i++)
		if (!kf->f[req[i]].ok) {
			if (why)
				fg_why(why, "%s: %s", fg_kf_desc[req[i]], kf->f[req[i]].why);
			return true;
		}
	return false;
}

enum fg_syn_way fg_synauth_way(const struct fg_kfeat *kf, int want, char *why)
{
	static const enum fg_kf handoff[] = { FG_KF_SCHED_CLS, FG_KF_SKC_LOOKUP, FG_KF_TCP_REQSK };
	static const enum fg_kf retransmit[] = { FG_KF_SKC_LOOKUP };
	char hwhy[FG_WHY_LEN] = "";

	if (why)
		why[0] = 0;
	if (want != FG_SYN_WAY_RETRANSMIT &&
	    !way_lacks(kf, handoff, sizeof(handoff) / sizeof(handoff[0]), hwhy))
		return FG_SYN_WAY_HANDOFF;
	if (want == FG_SYN_WAY_HANDOFF) {
		if (why)
			fg_why(why, "way handoff needs %s", hwhy);
		return FG_SYN_WAY_AUTO;
	}
	if (!way_lacks(kf, retransmit, 1, why)) {
		/* auto without handoff: say what handoff lacked */
		if (want == FG_SYN_WAY_AUTO && why)
			fg_why(why, "no handoff: %s", hwhy);
		return FG_SYN_WAY_RETRANSMIT;
	}
	return FG_SYN_WAY_AUTO;
}

enum fg_syn_way fg_synauth_way_cfg(const struct fg_config *cfg, const struct fg_kfeat *kf,
				   char *why)
{
	enum fg_syn_way w = fg_synauth_way(kf, cfg->syn.way, why);

	if (w != FG_SYN_WAY_HANDOFF || cfg->xdp_mode != FG_XDP_SKB)
		return w;
	/* generic XDP hands nothing off on 6.18 (tests/e2e_synauth_modes.sh):
	 * the XDP metadata reaches tc only for some skbs, and even a handoff the
	 * kfunc took was answered with an RST */
	if (cfg->syn.way == FG_SYN_WAY_HANDOFF) {
		if (why)
			fg_why(why, "way handoff needs native XDP (with xdp_mode: skb, generic "
				    "XDP, the listener resets every proven connection)");
		return FG_SYN_WAY_AUTO;
	}
	if (why)
		fg_why(why, "no handoff: xdp_mode: skb (in generic XDP the listener resets "
			    "every proven connection)");
	return FG_SYN_WAY_RETRANSMIT;
}

/* SYN authentication: the way it takes (docs/syn-auth.md, "The ways"). */
static void need_synauth(const struct fg_config *cfg, const struct fg_kfeat *kf, struct fg_need *d)
{
	char why[FG_WHY_LEN];

	switch (fg_synauth_way_cfg(cfg, kf, why)) {
	case FG_SYN_WAY_HANDOFF:
		snprintf(d->how, sizeof(d->how),
			 "handoff: XDP answers every SYN, tc hands proven ones to the listener");
		break;
	case FG_SYN_WAY_RETRANSMIT:
		snprintf(d->how, sizeof(d->how),
			 "retransmit: XDP verifies the address, the client's next SYN passes");
		d->state = FG_NEED_DEGRADED;
		say(d->why, sizeof(d->why),
		    "a new client's first connect waits for its SYN retransmission, and a "
		    "verified address can be spent in its name for verified_for; %s",
		    cfg->syn.way == FG_SYN_WAY_RETRANSMIT ? "chosen by syn_auth: way: retransmit" :
							    why);
		break;
	default:
		d->state = FG_NEED_UNAVAILABLE;
		say(d->why, sizeof(d->why), "%s", why);
	}
}

int fg_policy_kernel_needs(const struct fg_config *cfg, const struct fg_kfeat *kf,
			   struct fg_need *out)
{
	struct fg_need *d;
	int n = 0;

	if ((d = need(out, &n, "filter")))
		need_filter(kf, d);
	if (has_caps(cfg) && (d = need(out, &n, "concurrency caps")))
		need_caps(kf, d);
	if (cfg->xdp_attach != FG_ATTACH_EXCLUSIVE &&
	    (d = need(out, &n,
		      cfg->xdp_attach == FG_ATTACH_AUTO ? "xdp_attach: auto" :
							  "xdp_attach: libxdp")))
		need_libxdp(cfg, kf, d);
	if (cfg->syn.nrules && (d = need(out, &n, "syn_auth")))
		need_synauth(cfg, kf, d);
	if (cfg->has_shedding && cfg->shed_signal.kind == FG_SIG_PSI &&
	    (d = need(out, &n, "shedding signal psi")))
		need_psi(cfg, d);
	return n;
}

int fg_policy_kernel_check(const struct fg_config *cfg, const struct fg_kfeat *kf, char *why)
{
	struct fg_need nd[FG_NEEDS_MAX];
	int n = fg_policy_kernel_needs(cfg, kf, nd), bad = 0;
	size_t off = 0;

	if (why)
		why[0] = 0;
	for (int i = 0; i < n; i++) {
		if (nd[i].state != FG_NEED_UNAVAILABLE)
			continue;
		if (why && off < FG_WHY_LEN)
			off += snprintf(why + off, FG_WHY_LEN - off,
					"%s%s: this kernel cannot run it: %s", bad ? "; " : "",
					nd[i].feature, nd[i].why);
		bad++;
	}
	return bad ? -EOPNOTSUPP : 0;
}

void fg_policy_kernel_fill(struct fg_config *cfg, const struct fg_kfeat *kf)
{
	enum fg_syn_way w = cfg->syn.nrules ? fg_synauth_way_cfg(cfg, kf, NULL) : FG_SYN_WAY_AUTO;

	if (w == FG_SYN_WAY_HANDOFF)
		cfg->pol.sa.way = FG_SA_WAY_HANDOFF;
	else if (w == FG_SYN_WAY_RETRANSMIT)
		cfg->pol.sa.way = FG_SA_WAY_RETRANSMIT;
	/* escalation's default scope follows what the way proves */
	for (__u32 i = 0; i < cfg->pol.nrules && i < FG_MAX_RULES; i++)
		if (cfg->esc[i].after_ns && !cfg->esc[i].scope_set)
			cfg->esc[i].scope = fg_esc_default_scope(cfg, (int)i);
}
