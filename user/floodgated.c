// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * floodgated: loads the XDP rate limiter, pins it, applies the policy file
 * and keeps the counters and the throttle log going.
 *
 * Lifetime. Maps and the per-interface bpf_links are pinned in the pin dir,
 * so the filter outlives the daemon: after SIGKILL it keeps enforcing, and
 * the next floodgated adopts the pinned maps (libbpf reuses them through
 * bpf_map__set_pin_path; buckets and counters survive) and swaps its
 * program into the pinned links with bpf_link__update_program. SIGTERM and
 * SIGINT detach and unpin everything unless --keep or detach_on_exit: false.
 * SIGHUP (or `floodgate reload`) re-reads the policy file.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <systemd/sd-daemon.h>
#include "floodgate.skel.h"
#include "fgmaps.h"
#include "log.h"
#include "metrics.h"
#include "policy.h"

#define TICK_MS			1000
#define THROTTLE_LOG_PER_SEC	10	/* throttle start/stop lines per second */
#define THROTTLE_QUIET_TICKS	3	/* no new drops this long: throttling stopped */
#define TRACK_MAX		65536	/* sources with drops tracked for the log */

static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t reload_requested;

struct opts {
	const char *config;
	const char *pin_dir;
	const char *metrics;
	bool foreground;
	bool keep;
	int verbose;
	char ifaces[FG_MAX_IFS][IF_NAMESIZE];
	int n_ifs;
};

/* Declared options: getopt_long's table and --help come from this. */
static const struct opt_desc {
	const char *name;
	int has_arg;
	int key;
	const char *arg;
	const char *help;
} opt_descs[] = {
	{ "config", required_argument, 'c', "FILE", "policy file (required)" },
	{ "pin-dir", required_argument, 'p', "DIR",
	  "pin dir (default $" FG_PIN_DIR_ENV " or " FG_PIN_DIR_DEFAULT ")" },
	{ "interface", required_argument, 'i', "IF",
	  "attach to IF (repeatable; overrides the file's interfaces)" },
	{ "metrics", required_argument, 'm', "ADDR:PORT",
	  "serve Prometheus metrics (overrides the file)" },
	{ "foreground", no_argument, 'f', NULL, "stay in the foreground, log to stderr" },
	{ "keep", no_argument, 'k', NULL, "leave the filter attached and pinned on SIGTERM" },
	{ "verbose", no_argument, 'v', NULL, "debug logging (libbpf too)" },
	{ "help", no_argument, 'h', NULL, "this help" },
};
#define N_OPTS (sizeof(opt_descs) / sizeof(opt_descs[0]))

static void usage(FILE *f)
{
	fprintf(f, "Usage: floodgated --config FILE [options]\n\n"
		   "Load the floodgate XDP rate limiter, apply FILE and keep it current.\n\n"
		   "Options:\n");
	for (size_t i = 0; i < N_OPTS; i++) {
		char left[48];

		snprintf(left, sizeof(left), "-%c, --%s%s%s", opt_descs[i].key, opt_descs[i].name,
			 opt_descs[i].arg ? " " : "", opt_descs[i].arg ? opt_descs[i].arg : "");
		fprintf(f, "  %-28s %s\n", left, opt_descs[i].help);
	}
	fprintf(f, "\nSignals: HUP reloads FILE; TERM/INT detach and exit (unless --keep);\n"
		   "after KILL the filter stays attached and the next start adopts it.\n");
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	struct option lopts[N_OPTS + 1] = {};
	char sopts[3 * N_OPTS + 1] = "", *sp = sopts;
	int c;

	for (size_t i = 0; i < N_OPTS; i++) {
		lopts[i] = (struct option){ opt_descs[i].name, opt_descs[i].has_arg, NULL,
					    opt_descs[i].key };
		*sp++ = (char)opt_descs[i].key;
		if (opt_descs[i].has_arg)
			*sp++ = ':';
	}
	while ((c = getopt_long(argc, argv, sopts, lopts, NULL)) != -1) {
		switch (c) {
		case 'c': o->config = optarg; break;
		case 'p': o->pin_dir = optarg; break;
		case 'm': o->metrics = optarg; break;
		case 'f': o->foreground = true; break;
		case 'k': o->keep = true; break;
		case 'v': o->verbose++; break;
		case 'i':
			if (o->n_ifs >= FG_MAX_IFS) {
				fprintf(stderr, "floodgated: at most %d interfaces\n", FG_MAX_IFS);
				return -EINVAL;
			}
			if (strlen(optarg) >= IF_NAMESIZE || !*optarg) {
				fprintf(stderr, "floodgated: bad interface name \"%s\"\n", optarg);
				return -EINVAL;
			}
			snprintf(o->ifaces[o->n_ifs++], IF_NAMESIZE, "%s", optarg);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "floodgated: unexpected argument \"%s\"\n", argv[optind]);
		return -EINVAL;
	}
	if (!o->config) {
		fprintf(stderr, "floodgated: --config FILE is required\n");
		usage(stderr);
		return -EINVAL;
	}
	return 0;
}

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		reload_requested = 1;
	else
		stop_signal = sig;
}

static int setup_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) || sigaction(SIGINT, &sa, NULL) ||
	    sigaction(SIGHUP, &sa, NULL))
		return -errno;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

static int load_config(const char *path, struct fg_config *cfg)
{
	struct fg_err e = {};
	char msg[1024];
	int err;

	err = fg_config_load(path, cfg, &e);
	if (err) {
		fg_err_format(&e, msg, sizeof(msg));
		pr_warn("%s", msg);
	}
	return err;
}

/* --- attach -------------------------------------------------------------------- */

struct iface {
	char name[IF_NAMESIZE];
	int ifindex;
	__u32 xdp_mode;		/* 1 native, 2 generic, 0 detached (interface gone) */
	struct bpf_link *link;
	int failed_ifindex;	/* attaching to this ifindex failed: do not retry */
};

static int link_path(char *buf, size_t len, const char *dir, const char *ifname)
{
	int n = snprintf(buf, len, "%s/" FG_LINK_PREFIX "%s", dir, ifname);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static __u32 link_xdp_mode(int link_fd)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(link_fd, &info, &len))
		return 0;
	/* the link info carries no mode; ask the device */
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	if (bpf_xdp_query(info.xdp.ifindex, 0, &q))
		return 0;
	return q.attach_mode == XDP_ATTACHED_SKB ? 2 : q.attach_mode == XDP_ATTACHED_DRV ? 1 : 0;
}

/* The ifindex an XDP link is attached to; 0 once the kernel severed it
 * (device unregistered) or on error. */
static int link_ifindex(int link_fd)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(link_fd, &info, &len))
		return 0;
	return (int)info.xdp.ifindex;
}

/*
 * One interface: swap our program into a pinned link left by a previous
 * daemon, or create a link (native first when auto) and pin it. A link
 * made with bpf_link_create rather than bpf_program__attach_xdp because
 * libbpf 1.1's attach_xdp takes no XDP_FLAGS_* and the mode is the point.
 */
static int attach_iface(struct floodgate_bpf *skel, const char *dir, int xdp_mode,
			struct iface *ifc)
{
	int prog_fd = bpf_program__fd(skel->progs.floodgate);
	static const __u32 try_flags[] = { XDP_FLAGS_DRV_MODE, XDP_FLAGS_SKB_MODE };
	char path[512];
	int err, fd = -1;

	err = link_path(path, sizeof(path), dir, ifc->name);
	if (err)
		return err;
	if (access(path, F_OK) == 0) {
		ifc->link = bpf_link__open(path);
		if (!ifc->link) {
			err = -errno;
			pr_warn("%s: cannot open pinned link %s: %s", ifc->name, path, strerror(-err));
			return err;
		}
		if (link_ifindex(bpf_link__fd(ifc->link)) != ifc->ifindex) {
			/* the interface was deleted (and maybe created again)
			 * since the link was pinned: the kernel severed it */
			pr_warn("%s: pinned link %s is severed (the interface was deleted); attaching anew",
				ifc->name, path);
			bpf_link__destroy(ifc->link);
			ifc->link = NULL;
			unlink(path);
		} else {
			err = bpf_link__update_program(ifc->link, skel->progs.floodgate);
			if (err) {
				pr_warn("%s: cannot swap the program into pinned link %s: %s",
					ifc->name, path, strerror(-err));
				return err;
			}
			ifc->xdp_mode = link_xdp_mode(bpf_link__fd(ifc->link));
			pr_info("%s: adopted pinned link, program swapped atomically", ifc->name);
			return 0;
		}
	}
	for (int i = 0; i < 2; i++) {
		if ((xdp_mode == FG_XDP_NATIVE && i == 1) || (xdp_mode == FG_XDP_SKB && i == 0))
			continue;
		LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = try_flags[i]);
		fd = bpf_link_create(prog_fd, ifc->ifindex, BPF_XDP, &lo);
		if (fd >= 0) {
			ifc->xdp_mode = i + 1;
			break;
		}
		err = -errno;
		pr_debug("%s: %s attach failed: %s", ifc->name, i ? "generic" : "native",
			 strerror(-err));
	}
	if (fd < 0) {
		pr_warn("%s: cannot attach XDP (%s): %s%s", ifc->name,
			xdp_mode == FG_XDP_NATIVE ? "native" : xdp_mode == FG_XDP_SKB ? "generic" :
			"native or generic", strerror(-err),
			err == -EBUSY || err == -EEXIST ?
			" (another XDP program is attached; floodgate does not share devices)" : "");
		return err;
	}
	if (bpf_obj_pin(fd, path)) {
		err = -errno;
		pr_warn("%s: cannot pin link at %s: %s", ifc->name, path, strerror(-err));
		close(fd);
		return err;
	}
	close(fd);	/* the pin holds it; reopen as a libbpf link */
	ifc->link = bpf_link__open(path);
	if (!ifc->link)
		return -errno;
	pr_info("%s: attached (%s XDP)", ifc->name, ifc->xdp_mode == 1 ? "native" : "generic");
	return 0;
}

/* Links pinned for interfaces we no longer attach to: unpin (detaches). */
static void drop_stale_links(const char *dir, const struct iface *ifs, int n)
{
	char path[512];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		const char *ifn = de->d_name + strlen(FG_LINK_PREFIX);
		bool ours = false;

		if (strncmp(de->d_name, FG_LINK_PREFIX, strlen(FG_LINK_PREFIX)))
			continue;
		for (int i = 0; i < n; i++)
			ours |= !strcmp(ifs[i].name, ifn);
		if (ours || link_path(path, sizeof(path), dir, ifn))
			continue;
		if (unlink(path))
			pr_warn("%s: cannot unpin stale link: %s", path, strerror(errno));
		else
			pr_info("%s: no longer configured, detached", ifn);
	}
	closedir(d);
}

/* --- reload diff ----------------------------------------------------------------- */

static const char *action_str(int a)
{
	return a == FG_ACT_PASS ? "pass" : a == FG_ACT_DROP ? "drop" : "limit";
}

static void limit_diff(const char *rule, const char *what, const struct fg_limit_src *a,
		       const struct fg_limit_src *b)
{
	if (a->set == b->set && (!a->set || (a->rate == b->rate && a->burst == b->burst)))
		return;
	if (!a->set)
		pr_info("reload: rule %s: %s added: rate %g burst %g", rule, what, b->rate, b->burst);
	else if (!b->set)
		pr_info("reload: rule %s: %s removed (was rate %g burst %g)", rule, what,
			a->rate, a->burst);
	else
		pr_info("reload: rule %s: %s rate %g -> %g, burst %g -> %g", rule, what,
			a->rate, b->rate, a->burst, b->burst);
}

static void log_diff(const struct fg_config *o, const struct fg_config *n)
{
	int changes = 0;

	for (__u32 i = 0; i < n->pol.nrules; i++) {
		const struct fg_rule_src *ns = &n->rules[i];
		const struct fg_rule *nr = &n->pol.rules[i];
		int j;

		for (j = 0; j < (int)o->pol.nrules; j++)
			if (!strcmp(o->rules[j].name, ns->name))
				break;
		if (j == (int)o->pol.nrules) {
			pr_info("reload: rule %s added (id %u, line %d)", ns->name, nr->id, ns->line);
			changes++;
			continue;
		}
		const struct fg_rule_src *os = &o->rules[j];
		const struct fg_rule *or = &o->pol.rules[j];

		if (memcmp(or, nr, sizeof(*nr)) || memcmp(&os->per_source, &ns->per_source,
		    3 * sizeof(ns->per_source)) || os->plen4 != ns->plen4 || os->plen6 != ns->plen6)
			changes++;
		else if (i != (__u32)j)
			changes++;
		if (i != (__u32)j)
			pr_info("reload: rule %s moved from position %d to %u", ns->name, j + 1, i + 1);
		limit_diff(ns->name, "per_source", &os->per_source, &ns->per_source);
		limit_diff(ns->name, "aggregate", &os->aggregate, &ns->aggregate);
		limit_diff(ns->name, "overflow", &os->overflow, &ns->overflow);
		if (os->plen4 != ns->plen4 || os->plen6 != ns->plen6)
			pr_info("reload: rule %s: source grouping /%d,/%d -> /%d,/%d", ns->name,
				os->plen4, os->plen6, ns->plen4, ns->plen6);
		if (or->action != nr->action)
			pr_info("reload: rule %s: action %s -> %s", ns->name, action_str(or->action),
				action_str(nr->action));
		if (or->mode != nr->mode)
			pr_info("reload: rule %s: mode %s -> %s", ns->name,
				or->mode ? "shadow" : "enforce", nr->mode ? "shadow" : "enforce");
		if (or->cost != nr->cost)
			pr_info("reload: rule %s: cost %s -> %s", ns->name,
				or->cost ? "bytes" : "packets", nr->cost ? "bytes" : "packets");
		if (or->on_full != nr->on_full)
			pr_info("reload: rule %s: on_full %u -> %u", ns->name, or->on_full, nr->on_full);
	}
	for (__u32 j = 0; j < o->pol.nrules; j++) {
		__u32 i;

		for (i = 0; i < n->pol.nrules; i++)
			if (!strcmp(o->rules[j].name, n->rules[i].name))
				break;
		if (i == n->pol.nrules) {
			pr_info("reload: rule %s removed (its counters and buckets are dropped)",
				o->rules[j].name);
			changes++;
		}
	}
	if (memcmp(o->pol.match, n->pol.match, sizeof(n->pol.match)) ||
	    memcmp(o->pol.nmatch, n->pol.nmatch, sizeof(n->pol.nmatch))) {
		pr_info("reload: match entries changed (%u/%u/%u/%u per class)",
			n->pol.nmatch[0], n->pol.nmatch[1], n->pol.nmatch[2], n->pol.nmatch[3]);
		changes++;
	}
	if (o->pol.default_verdict != n->pol.default_verdict) {
		pr_info("reload: default %s -> %s", o->pol.default_verdict ? "drop" : "pass",
			n->pol.default_verdict ? "drop" : "pass");
		changes++;
	}
	if (o->pol.malformed_verdict != n->pol.malformed_verdict) {
		pr_info("reload: malformed %s -> %s", o->pol.malformed_verdict ? "drop" : "pass",
			n->pol.malformed_verdict ? "drop" : "pass");
		changes++;
	}
	if (o->n_pfx != n->n_pfx || o->n_allow != n->n_allow || o->n_deny != n->n_deny ||
	    (n->n_pfx && memcmp(o->pfx, n->pfx, n->n_pfx * sizeof(*n->pfx)))) {
		pr_info("reload: prefixes: allow %zu -> %zu, deny %zu -> %zu, entries %zu -> %zu",
			o->n_allow, n->n_allow, o->n_deny, n->n_deny, o->n_pfx, n->n_pfx);
		changes++;
	}
	if (o->pol.ins.inc != n->pol.ins.inc || o->pol.ins.tau != n->pol.ins.tau) {
		pr_info("reload: new-source admission changed");
		changes++;
	}
	if (!changes)
		pr_info("reload: no policy changes");
}

/* --- throttle log ---------------------------------------------------------------- */

struct track {
	__u8 used, throttled;
	__u8 family;
	__u16 rule, gen;
	__u8 addr[16];
	__u64 drops;
	__u64 last_grow;	/* tick */
};

struct tracker {
	struct track *tab, *next;	/* open addressing, 2 * TRACK_MAX slots */
	size_t n;
	__u64 tick;
	int lines;			/* logged this tick */
	__u64 suppressed;
	bool full_warned;
	bool primed;			/* first scan only records */
};

#define TRACK_SLOTS (2 * TRACK_MAX)

static size_t track_hash(const struct fg_source *s)
{
	__u64 h = 1469598103934665603ull;
	const __u8 *p = s->addr;

	for (int i = 0; i < 16; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	h = (h ^ s->rule ^ ((__u64)s->gen << 16) ^ ((__u64)s->family << 32)) * 1099511628211ull;
	return h % TRACK_SLOTS;
}

static struct track *track_find(struct track *tab, const struct fg_source *s, bool insert)
{
	for (size_t i = track_hash(s), k = 0; k < TRACK_SLOTS; k++, i = (i + 1) % TRACK_SLOTS) {
		struct track *t = &tab[i];

		if (!t->used)
			return insert ? t : NULL;
		if (t->family == s->family && t->rule == s->rule && t->gen == s->gen &&
		    !memcmp(t->addr, s->addr, 16))
			return t;
	}
	return NULL;
}

static void __attribute__((format(printf, 2, 3))) tlog(struct tracker *tr, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (tr->lines >= THROTTLE_LOG_PER_SEC) {
		tr->suppressed++;
		return;
	}
	tr->lines++;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pr_info("%s", msg);
}

static const char *rule_name(const struct fg_name *names, __u16 id, __u16 gen)
{
	if (id < FG_MAX_IDS && names[id].in_use && names[id].gen == gen)
		return names[id].name;
	return "(removed rule)";
}

static void track_scan(struct tracker *tr, const struct fg_source *src, size_t n,
		       const struct fg_name *names)
{
	char a[INET6_ADDRSTRLEN];
	size_t kept = 0;

	tr->tick++;
	tr->lines = 0;
	if (tr->suppressed) {
		pr_info("throttle log: suppressed %llu messages in the last second",
			(unsigned long long)tr->suppressed);
		tr->suppressed = 0;
	}
	memset(tr->next, 0, TRACK_SLOTS * sizeof(*tr->next));
	for (size_t i = 0; i < n; i++) {
		const struct fg_source *s = &src[i];
		struct track *old = track_find(tr->tab, s, false), *t;

		if (kept >= TRACK_MAX) {
			if (!tr->full_warned)
				pr_warn("throttle log: more than %d sources with drops; "
					"tracking the first %d", TRACK_MAX, TRACK_MAX);
			tr->full_warned = true;
			break;
		}
		t = track_find(tr->next, s, true);
		if (!t)
			break;
		kept++;
		t->used = 1;
		t->family = s->family;
		t->rule = s->rule;
		t->gen = s->gen;
		memcpy(t->addr, s->addr, 16);
		t->drops = s->drops;
		t->throttled = old ? old->throttled : 0;
		t->last_grow = old ? old->last_grow : tr->tick;
		if (!tr->primed)
			continue;
		if (!old || s->drops > old->drops) {
			t->last_grow = tr->tick;
			if (!t->throttled) {
				t->throttled = 1;
				fg_addr_str(s->family, s->addr, a, sizeof(a));
				tlog(tr, "throttling %s (rule %s)", a,
				     rule_name(names, s->rule, s->gen));
			}
		} else if (t->throttled && !s->limited &&
			   tr->tick - t->last_grow >= THROTTLE_QUIET_TICKS) {
			t->throttled = 0;
			fg_addr_str(s->family, s->addr, a, sizeof(a));
			tlog(tr, "no longer throttling %s (rule %s), ~%llu drops sampled", a,
			     rule_name(names, s->rule, s->gen), (unsigned long long)s->drops);
		}
	}
	/* throttled sources whose bucket was evicted */
	for (size_t i = 0; tr->primed && i < TRACK_SLOTS; i++) {
		struct track *t = &tr->tab[i];
		struct fg_source s;

		if (!t->used || !t->throttled)
			continue;
		s.family = t->family;
		s.rule = t->rule;
		s.gen = t->gen;
		memcpy(s.addr, t->addr, 16);
		if (!track_find(tr->next, &s, false)) {
			fg_addr_str(t->family, t->addr, a, sizeof(a));
			tlog(tr, "no longer throttling %s (rule %s): bucket expired", a,
			     rule_name(names, t->rule, t->gen));
		}
	}
	struct track *sw = tr->tab;

	tr->tab = tr->next;
	tr->next = sw;
	tr->n = kept;
	tr->primed = true;
}

/* --- the daemon ------------------------------------------------------------------ */

struct daemon {
	struct opts o;
	const char *dir;
	struct floodgate_bpf *skel;
	struct fg_maps maps;
	struct fg_config cfg;
	bool have_cfg;
	struct iface ifs[FG_MAX_IFS];
	int n_ifs;
	struct fg_metrics *mx;
	struct tracker tr;
	int notify_fd;		/* background start: write the status, then close */
	bool meta_dirty;	/* fg_meta's interfaces need rewriting */
};

/*
 * Interfaces come and go: when one is deleted the kernel severs its XDP
 * link and the filter is gone with it. Every tick, notice that (logged
 * once) and attach again as soon as an interface of that name exists,
 * keeping buckets and counters (they live in the maps, not the link).
 */
static void watch_ifaces(struct daemon *d)
{
	for (int i = 0; i < d->n_ifs; i++) {
		struct iface *ifc = &d->ifs[i];
		int now = (int)if_nametoindex(ifc->name);

		if (ifc->link && link_ifindex(bpf_link__fd(ifc->link)) == ifc->ifindex && now == ifc->ifindex)
			continue;
		if (ifc->link) {
			char path[512];

			pr_warn("%s: interface deleted: the filter is detached from it; "
				"will attach again when it returns", ifc->name);
			bpf_link__destroy(ifc->link);
			ifc->link = NULL;
			ifc->xdp_mode = 0;
			ifc->failed_ifindex = 0;
			if (!link_path(path, sizeof(path), d->dir, ifc->name))
				unlink(path);
			d->meta_dirty = true;
		}
		if (!now || now == ifc->failed_ifindex)
			continue;	/* gone, or a retry would fail (and log) again */
		ifc->ifindex = now;
		if (attach_iface(d->skel, d->dir, d->cfg.xdp_mode, ifc) == 0) {
			pr_info("%s: interface is back (ifindex %d): attached again", ifc->name, now);
			d->meta_dirty = true;
		} else {
			ifc->failed_ifindex = now;
		}
	}
	if (d->meta_dirty) {
		struct fg_meta meta;

		if (!fg_meta_read(&d->maps, &meta)) {
			for (int i = 0; i < d->n_ifs && i < FG_MAX_IFS; i++) {
				meta.ifs[i].ifindex = d->ifs[i].ifindex;
				meta.ifs[i].xdp_mode = d->ifs[i].xdp_mode;
			}
			if (!fg_meta_write(&d->maps, &meta))
				d->meta_dirty = false;
		}
	}
}

static void tick(struct daemon *d)
{
	static struct fg_stats rows[FG_NROWS];
	struct fg_name names[FG_MAX_IDS];
	struct fg_policy pol;
	struct fg_ctl ctl;
	struct fg_source *src = NULL;
	struct fg_src_scan scan = {};
	size_t n = 0;
	int err;

	if ((err = fg_ctl_read(&d->maps, &ctl)) || (err = fg_names_read(&d->maps, names)) ||
	    (err = fg_policy_read_active(&d->maps, &pol)) ||
	    (err = fg_stats_read(&d->maps, rows))) {
		pr_warn("reading counters: %s", strerror(-err));
		return;
	}
	err = fg_sources_read(&d->maps, &pol, fg_now_ns(), 1, TRACK_MAX + 1, &src, &n, &scan);
	if (err)
		pr_warn("scanning sources: %s", strerror(-err));
	else
		track_scan(&d->tr, src, n, names);
	free(src);
	if (d->mx) {
		struct fg_metrics_snap s = { .rows = rows, .names = names, .ctl = &ctl, .pol = &pol,
					     .sources4 = scan.all4, .sources6 = scan.all6 };
		char *page;
		size_t len;

		if (!fg_metrics_render(&s, &page, &len))
			fg_metrics_publish(d->mx, page, len);
	}
}

static void do_reload(struct daemon *d)
{
	struct fg_config ncfg;
	char why[FG_WHY_LEN] = "";
	int err;

	sd_notify(0, "RELOADING=1");
	pr_info("reload: reading %s", d->o.config);
	memset(&ncfg, 0, sizeof(ncfg));
	if (load_config(d->o.config, &ncfg)) {
		pr_warn("reload: %s is invalid; the running policy is unchanged", d->o.config);
		goto out;
	}
	err = fg_maps_lock(&d->maps, 5000);
	if (err) {
		pr_warn("reload: cannot lock %s: %s; policy unchanged", d->dir, strerror(-err));
		fg_config_free(&ncfg);
		goto out;
	}
	err = fg_policy_apply(&d->maps, &ncfg, why);
	if (err) {
		fg_maps_unlock(&d->maps);
		pr_warn("reload: %s; the running policy is unchanged", why[0] ? why : strerror(-err));
		fg_config_free(&ncfg);
		goto out;
	}
	if (ncfg.mode != d->cfg.mode) {
		fg_set_mode(&d->maps, ncfg.mode);
		pr_info("reload: global mode %s -> %s", d->cfg.mode ? "shadow" : "enforce",
			ncfg.mode ? "shadow" : "enforce");
	}
	fg_maps_unlock(&d->maps);
	log_diff(&d->cfg, &ncfg);
	if (ncfg.n_ifs != d->cfg.n_ifs || memcmp(ncfg.ifaces, d->cfg.ifaces, sizeof(ncfg.ifaces)) ||
	    ncfg.xdp_mode != d->cfg.xdp_mode)
		pr_warn("reload: interfaces/xdp_mode changed in the file; they take effect on restart");
	if (strcmp(ncfg.metrics, d->cfg.metrics))
		pr_warn("reload: metrics address changed in the file; it takes effect on restart");
	pr_info("reload: policy version %llu active", (unsigned long long)ncfg.pol.version);
	fg_config_free(&d->cfg);
	d->cfg = ncfg;
out:
	sd_notify(0, "READY=1");
}

static void tell_parent(struct daemon *d, char status)
{
	if (d->notify_fd >= 0) {
		if (write(d->notify_fd, &status, 1) != 1)
			pr_debug("notifying the parent failed");
		close(d->notify_fd);
		d->notify_fd = -1;
	}
}

/* Without --foreground: fork, the parent waits until the child says it is
 * attached (exit 0) or failed (exit 1), so errors still reach the shell. */
static int daemonize(struct daemon *d)
{
	int p[2];
	pid_t pid;
	char c = 1;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			c = 1;
		if (c)
			fprintf(stderr, "floodgated: start failed; the reason is in the system log "
				"(or run with --foreground)\n");
		exit(c ? 1 : 0);
	}
	close(p[0]);
	d->notify_fd = p[1];
	setsid();
	if (chdir("/"))
		return -errno;
	return 0;
}

static void fill_meta(struct daemon *d, struct fg_meta *meta)
{
	char rp[PATH_MAX];

	memset(meta, 0, sizeof(*meta));
	meta->magic = FG_ABI_MAGIC;
	meta->abi = FG_ABI_VERSION;
	meta->pid = getpid();
	meta->started = time(NULL);
	meta->max_sources = d->cfg.max_sources;
	meta->n_ifs = d->n_ifs;
	for (int i = 0; i < d->n_ifs; i++) {
		meta->ifs[i].ifindex = d->ifs[i].ifindex;
		meta->ifs[i].xdp_mode = d->ifs[i].xdp_mode;
		snprintf(meta->ifs[i].name, sizeof(meta->ifs[i].name), "%s", d->ifs[i].name);
	}
	const char *cp = realpath(d->o.config, rp) ? rp : d->o.config;

	/* a longer path is cut: fg_meta.config is informational */
	memcpy(meta->config, cp, strnlen(cp, sizeof(meta->config) - 1));
}

int main(int argc, char **argv)
{
	static struct daemon dd = { .notify_fd = -1 };
	struct daemon *d = &dd;
	char why[FG_WHY_LEN] = "", p[512];
	bool adopted = true, started = false, detach;
	struct fg_meta meta;
	int err;

	err = parse_args(argc, argv, &d->o);
	if (err)
		return 2;
	d->dir = fg_pin_dir_choose(d->o.pin_dir);
	fg_log_init("floodgated", d->o.verbose ? FG_LOG_DEBUG : FG_LOG_INFO, !d->o.foreground);
	for (int i = 0; i < FGM_NMAPS; i++)
		d->maps.fd[i] = -1;
	d->maps.dirfd = -1;

	if (!d->o.foreground) {
		err = daemonize(d);
		if (err) {
			pr_warn("cannot daemonize: %s", strerror(-err));
			goto cleanup;
		}
	}
	err = setup_signals();
	if (err)
		goto cleanup;
	err = load_config(d->o.config, &d->cfg);
	if (err)
		goto cleanup;
	d->have_cfg = true;

	/* interfaces: the command line wins over the file */
	if (d->o.n_ifs) {
		d->n_ifs = d->o.n_ifs;
		for (int i = 0; i < d->n_ifs; i++)
			snprintf(d->ifs[i].name, IF_NAMESIZE, "%s", d->o.ifaces[i]);
	} else {
		d->n_ifs = d->cfg.n_ifs;
		for (int i = 0; i < d->n_ifs; i++)
			snprintf(d->ifs[i].name, IF_NAMESIZE, "%s", d->cfg.ifaces[i]);
	}
	if (!d->n_ifs) {
		pr_warn("no interfaces: set interfaces: in %s or pass --interface", d->o.config);
		err = -EINVAL;
		goto cleanup;
	}
	for (int i = 0; i < d->n_ifs; i++) {
		d->ifs[i].ifindex = if_nametoindex(d->ifs[i].name);
		if (!d->ifs[i].ifindex) {
			err = -errno;
			pr_warn("interface %s: %s", d->ifs[i].name, strerror(-err));
			goto cleanup;
		}
	}

	/* the pin dir: bpffs, ours, compatible, not in use by a live daemon */
	err = fg_pin_dir_prepare(d->dir, why);
	if (err) {
		pr_warn("%s", why);
		goto cleanup;
	}
	adopted = fg_pin_dir_populated(d->dir);
	if (adopted) {
		struct fg_maps m;

		/* a live daemon first: its pin dir is not ours to judge, and the
		 * max_sources advice below ("detach first") would stop it */
		err = fg_maps_open(&m, d->dir, why);
		if (err) {
			pr_warn("%s", why);
			goto cleanup;
		}
		err = fg_meta_read(&m, &meta);
		fg_maps_close(&m);
		if (!err && fg_daemon_alive(meta.pid) && meta.pid != (__u32)getpid()) {
			pr_warn("floodgated (pid %u) is already running on %s; "
				"use 'floodgate reload' or stop it first", meta.pid, d->dir);
			err = -EBUSY;
			goto cleanup;
		}
		err = fg_pin_dir_check(d->dir, d->cfg.max_sources, why);
		if (err) {
			pr_warn("%s", why);
			goto cleanup;
		}
	}

	d->skel = floodgate_bpf__open();
	if (!d->skel) {
		err = -errno;
		pr_warn("cannot open the BPF object: %s", strerror(-err));
		goto cleanup;
	}
	/* d->skel->rodata->fg_clock stays FG_CLOCK_COARSE */
	if ((err = bpf_map__set_max_entries(d->skel->maps.fg_src4,
					    fg_src4_sets(d->cfg.max_sources))) ||
	    (err = bpf_map__set_max_entries(d->skel->maps.fg_src6, d->cfg.max_sources))) {
		pr_warn("max_sources %llu: %s", (unsigned long long)d->cfg.max_sources,
			strerror(-err));
		goto cleanup;
	}
	{
		/* both slots live in one trie: room for twice the policy's prefixes;
		 * an adopted trie keeps its size (reuse needs equal max_entries) */
		struct bpf_map *tries[2] = { d->skel->maps.fg_pfx4, d->skel->maps.fg_pfx6 };
		size_t need[2] = {};

		for (size_t i = 0; i < d->cfg.n_pfx; i++)
			need[d->cfg.pfx[i].family == 6]++;
		for (int f = 0; f < 2; f++) {
			__u32 cur = bpf_map__max_entries(tries[f]);
			struct bpf_map_info info = {};
			__u32 len = sizeof(info);
			int fd;

			snprintf(p, sizeof(p), "%s/%s", d->dir, bpf_map__name(tries[f]));
			fd = adopted ? bpf_obj_get(p) : -1;
			if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
				cur = info.max_entries;
			else if (2 * need[f] > cur)
				cur = 2 * need[f];
			if (fd >= 0)
				close(fd);
			err = bpf_map__set_max_entries(tries[f], cur);
			if (err)
				goto cleanup;
		}
	}
	{
		struct bpf_map *pinned[FGM_NMAPS];

		fg_skel_maps(d->skel, pinned);
		for (size_t i = 0; i < sizeof(pinned) / sizeof(pinned[0]); i++) {
			snprintf(p, sizeof(p), "%s/%s", d->dir, bpf_map__name(pinned[i]));
			err = bpf_map__set_pin_path(pinned[i], p);
			if (err) {
				pr_warn("pin path %s: %s", p, strerror(-err));
				goto cleanup;
			}
		}
	}
	err = floodgate_bpf__load(d->skel);
	if (err) {
		pr_warn("cannot load the BPF program: %s%s", strerror(-err),
			adopted ? " (the pinned maps may not match this version: "
				  "'floodgate detach' and start again)" : "");
		goto cleanup;
	}
	err = fg_maps_from_skel(&d->maps, d->skel, d->dir);
	if (err) {
		pr_warn("pin dir %s: %s", d->dir, strerror(-err));
		goto cleanup;
	}
	err = fg_maps_lock(&d->maps, 5000);
	if (err) {
		pr_warn("%s is locked by another floodgate process: %s", d->dir, strerror(-err));
		goto cleanup;
	}
	/* again under the lock: two daemons started at once */
	if (!fg_meta_read(&d->maps, &meta) && fg_daemon_alive(meta.pid) &&
	    meta.pid != (__u32)getpid()) {
		pr_warn("floodgated (pid %u) is already running on %s", meta.pid, d->dir);
		err = -EBUSY;
		goto cleanup;
	}
	started = true;	/* from here on the pin dir is ours to clean up */
	err = fg_ctl_init(&d->maps, d->cfg.mode);
	if (!err)
		err = fg_policy_apply(&d->maps, &d->cfg, why);
	if (err) {
		pr_warn("applying %s: %s", d->o.config, why[0] ? why : strerror(-err));
		goto cleanup;
	}
	for (int i = 0; i < d->n_ifs; i++) {
		err = attach_iface(d->skel, d->dir, d->cfg.xdp_mode, &d->ifs[i]);
		if (err)
			goto cleanup;
	}
	drop_stale_links(d->dir, d->ifs, d->n_ifs);
	fill_meta(d, &meta);
	err = fg_meta_write(&d->maps, &meta);
	fg_maps_unlock(&d->maps);
	if (err) {
		pr_warn("writing fg_meta: %s", strerror(-err));
		goto cleanup;
	}
	{
		const char *mx = d->o.metrics ? d->o.metrics : d->cfg.metrics;

		if (mx && *mx) {
			char mwhy[256];

			d->mx = fg_metrics_start(mx, mwhy, sizeof(mwhy));
			if (!d->mx) {
				pr_warn("%s", mwhy);
				err = -EADDRNOTAVAIL;
				goto cleanup;
			}
			pr_info("metrics on http://%s/metrics", mx);
		}
	}
	d->tr.tab = calloc(TRACK_SLOTS, sizeof(*d->tr.tab));
	d->tr.next = calloc(TRACK_SLOTS, sizeof(*d->tr.next));
	if (!d->tr.tab || !d->tr.next) {
		err = -ENOMEM;
		goto cleanup;
	}
	pr_info("%s policy version %llu from %s on %d interface(s), pin dir %s (pid %d)",
		adopted ? "adopted pinned state;" : "started;",
		(unsigned long long)d->cfg.pol.version, d->o.config, d->n_ifs, d->dir, getpid());
	sd_notify(0, "READY=1");
	tell_parent(d, 0);

	while (!stop_signal) {
		struct timespec ts = { TICK_MS / 1000, (TICK_MS % 1000) * 1000000L };

		if (reload_requested) {
			reload_requested = 0;
			do_reload(d);
		}
		watch_ifaces(d);
		tick(d);
		nanosleep(&ts, NULL);	/* a signal cuts it short */
	}
	pr_info("signal %d: stopping", (int)stop_signal);
	sd_notify(0, "STOPPING=1");
	err = 0;

cleanup:
	detach = started && !d->o.keep && (!d->have_cfg || d->cfg.detach_on_exit);
	if (started && err) {
		/* a failed start leaves a pin dir we made; an adopted one stays */
		detach = !adopted;
	}
	if (started && !detach && d->maps.fd[FGM_META] >= 0 && !fg_meta_read(&d->maps, &meta) &&
	    meta.pid == (__u32)getpid()) {
		meta.pid = 0;	/* the filter keeps running; nobody tends it */
		fg_meta_write(&d->maps, &meta);
	}
	fg_metrics_stop(d->mx);
	fg_maps_close(&d->maps);
	if (detach) {
		err = fg_pin_dir_remove(d->dir, why) ? (err ? err : -EIO) : err;
		if (why[0])
			pr_warn("detach: %s", why);
		else
			pr_info("detached and unpinned %s", d->dir);
	} else if (started) {
		pr_info("left the filter attached and pinned in %s", d->dir);
	} else if (d->dir && !adopted) {
		rmdir(d->dir);	/* a dir we made for a start that failed; only if empty */
	}
	for (int i = 0; i < d->n_ifs; i++)
		bpf_link__destroy(d->ifs[i].link);	/* closes our fd; a pin keeps the link */
	floodgate_bpf__destroy(d->skel);
	if (d->have_cfg)
		fg_config_free(&d->cfg);
	free(d->tr.tab);
	free(d->tr.next);
	tell_parent(d, err ? 1 : 0);
	return err ? 1 : 0;
}
