// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * floodgated: loads the XDP rate limiter, pins it, applies the policy file
 * and keeps the counters and the throttle log going.
 *
 * Lifetime. Maps and the per-interface bpf_links are pinned in the pin dir,
 * so the filter outlives the daemon: after SIGKILL it keeps enforcing, and
 * the next floodgated adopts the pinned maps (libbpf reuses them through
 * bpf_map__set_pin_path; buckets and counters survive) and swaps its
 * program into the pinned links (attach.c). SIGTERM and SIGINT detach and
 * unpin everything unless --keep or detach_on_exit: false. SIGHUP (or
 * `floodgate reload`) re-reads the policy file.
 *
 * main() is the lifecycle; each step is a function below it in the order
 * it runs. It knows no feature: each (concurrency caps, fleet, shedding,
 * the sources watch, escalation, the runtime lists, metrics) is a module
 * whose hooks the steps call (daemon.h, modules.c). Elsewhere: attach.c
 * (links), reload_log.c (what a reload changed), daemonize.c.
 */
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <systemd/sd-daemon.h>
#include "floodgate.skel.h"
#include "attach/attach.h"
#include "attach/discover.h"
#include "attach/pinwatch.h"
#include "attach/swap.h"
#include "attach/xdpattach.h"
#include "conn/conn.h"
#include "daemon/daemon.h"
#include "daemon/daemonize.h"
#include "daemon/reload_log.h"
#include "maps/pdigest.h"
#include "maps/startstate.h"
#include "lib/kfeat.h"
#include "lib/complete.h"
#include "lib/log.h"
#include "lib/opts.h"
#include "lib/sysutil.h"
#include "maps/apply.h"
#include "maps/fgmaps.h"
#include "policy/policy.h"
#include "policy/policy_kernel.h"

#define TICK_MS 1000
#define LOCK_MS 5000 /* waiting for the pin dir's lock */
/* the interfaces when no --interface is given: the unit's environment file sets it */
#define FG_IFACES_ENV "FLOODGATE_INTERFACES"
#define FG_ENV_FILE   "/etc/default/floodgated"
/* set (not "0"): an adopting start loads and swaps its program even when
 * the running one is this build (keep_running_prog), and rewrites the
 * policy even when the pinned one is the file's (adopt_unchanged) */
#define FG_ADOPT_RELOAD_ENV "FLOODGATE_ADOPT_RELOAD"

static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t reload_requested;

struct daemon_opts {
	const char *config;
	const char *pin_dir;
	const char *metrics;
	bool foreground;
	bool keep;
	int verbose;
	const char *completion; /* --completion SHELL */
	char ifaces[FG_MAX_IFS][IF_NAMESIZE];
	int n_ifs;
};

struct daemon {
	struct fgd g; /* what the modules see (daemon.h): dir, skel, maps, cfg, ... */
	struct daemon_opts o;
	bool started; /* the pin dir is ours to clean up */
	struct fg_iface ifs[FG_MAX_IFS];
	int n_ifs;
	struct fg_attach_conf ac; /* how to attach (xdp_attach:, attach.h) */
	struct fg_tick *tick;	  /* the counters, read once per tick for every module */
	int notify_fd;		  /* background start: write the status, then close */
	bool meta_dirty;	  /* fg_meta's interfaces need rewriting */
	struct fg_pinwatch pw;	  /* are the pins still ours (pinwatch.h) */
	__u64 max_sources;	  /* the maps' size: the file's, or as pinned when adopting */
	int not_applied; /* adopting start: the file was refused (-errno), the pinned policy kept */
	int kernel_err;	 /* adopting start: this kernel cannot run the file (check_kernel) */
	char kernel_why[FG_WHY_LEN];
	char not_applied_why[FG_WHY_LEN];
};

static int add_iface(const struct fg_opt *opt, const char *val, void *cfg, char *why)
{
	struct daemon_opts *o = cfg;

	(void)opt;
	if (o->n_ifs >= FG_MAX_IFS)
		return fg_opt_fail(why, "at most %d interfaces", FG_MAX_IFS);
	if (!*val || strlen(val) >= IF_NAMESIZE)
		return fg_opt_fail(why, "bad interface name \"%s\"", val);
	snprintf(o->ifaces[o->n_ifs++], IF_NAMESIZE, "%s", val);
	return 0;
}

#define O struct daemon_opts
static const struct fg_opt daemon_opts[] = {
	FG_OPT_STR("config", 'c', O, config, "FILE", "policy file (required)"),
	FG_OPT_STR("pin-dir", 'p', O, pin_dir, "DIR",
		   "pin dir (default $" FG_PIN_DIR_ENV " or " FG_PIN_DIR_DEFAULT ")"),
	FG_OPT_FUNC("interface", 'i', add_iface, 0, "IF",
		    "attach to IF (repeatable; overrides the file's interfaces)"),
	FG_OPT_STR("metrics", 'm', O, metrics, "ADDR:PORT",
		   "serve Prometheus metrics (overrides the file)"),
	FG_OPT_BOOL("foreground", 'f', O, foreground, "stay in the foreground, log to stderr"),
	FG_OPT_BOOL("keep", 'k', O, keep, "leave the filter attached and pinned on SIGTERM"),
	FG_OPT_COUNT("verbose", 'v', O, verbose, "debug logging (libbpf too)"),
	FG_OPT_STR("completion", 0, O, completion, "SHELL",
		   "print a bash or zsh completion script, and exit"),
	FG_OPT_VERSION,
	FG_OPT_HELP_END("this help"),
};
#undef O

FG_DEFINE_PROG(prog, "floodgated", "--config FILE [options]", daemon_opts,
	       .help = "Load the floodgate XDP rate limiter, apply FILE and keep it current.",
	       .epilog = "Signals: HUP reloads FILE; TERM/INT detach and exit (unless --keep);\n"
			 "after KILL the filter stays attached and the next start adopts it.\n");

/* --- start ------------------------------------------------------------------------ */

/* -1: go on; otherwise the exit status (0 after --help, 2 on bad usage). */
static int parse_args(int argc, char **argv, struct daemon_opts *o)
{
	struct fg_parsed p;
	int rc = fg_prog_args(&prog, argc, argv, o, &p);

	if (rc < 0 && o->completion) {
		if (!fg_prog_completion(stdout, &prog, o->completion))
			return 0;
		fprintf(stderr, "floodgated: --completion: \"%s\": expected bash or zsh\n",
			o->completion);
		return FG_EXIT_USAGE;
	}
	if (rc < 0 && !o->config) {
		fprintf(stderr, "floodgated: --config FILE is required\n");
		fg_prog_help(stderr, &prog, NULL);
		return FG_EXIT_USAGE;
	}
	return rc;
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
	    sigaction(SIGHUP, &sa, NULL)) {
		int err = -errno;

		pr_err("cannot set up signal handlers: %s", strerror(-err));
		return err;
	}
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/* The policy file into cfg; a signal that stops the daemon cuts the wait
 * short. On failure "file:line:col: why" is in msg. */
static int load_config(const char *path, struct fg_config *cfg, char *msg)
{
	struct fg_err e = {};
	int err;

	err = fg_config_load_until(path, cfg, &e, &stop_signal);
	if (err)
		fg_err_format(&e, msg, FG_WHY_LEN);
	return err;
}

/* The config in force lives on the heap (190 KB): d->g.cfg, NULL until
 * the file first loads. */
static int load_first_config(struct daemon *d)
{
	struct fg_config *c = calloc(1, sizeof(*c));
	char msg[FG_WHY_LEN];
	int err;

	if (!c) {
		pr_err("loading %s: out of memory", d->o.config);
		return -ENOMEM;
	}
	err = load_config(d->o.config, c, msg);
	if (err) {
		pr_err("%s", msg);
		free(c);
		return err;
	}
	d->g.cfg = c;
	d->g.config = d->o.config;
	d->g.metrics_listen = d->o.metrics;
	return 0;
}

/* Every module's hook for one step of the start, in list order; the first
 * failure stops the start (the module said why). */
#define run_start_step(d, hook)                                                                \
	({                                                                                     \
		int __err = 0;                                                                 \
		fgd_for_each_module(m) if ((*m)->hook && (__err = (*m)->hook(&(d)->g))) break; \
		__err;                                                                         \
	})

/* apply.h's before_flip: every module's, in order. */
static int modules_before_flip(void *ctx, struct fg_maps *mp, const struct fg_config *cfg,
			       char *why)
{
	struct daemon *d = ctx;
	int err = 0;

	(void)mp;
	fgd_for_each_module(m) if ((*m)->before_flip &&
				   (err = (*m)->before_flip(&d->g, cfg, why))) break;
	return err;
}

/*
 * --config as an absolute path, before fg_daemonize changes to "/": the
 * first load, every reload and fg_meta.config use it. Not realpath(): a
 * symlinked config stays a link, so a reload reads what it points to
 * then (deployments swap links, e.g. a Kubernetes ConfigMap).
 */
static int absolute_config(struct daemon *d)
{
	static char abs[PATH_MAX];
	const char *rel = d->o.config;
	char cwd[PATH_MAX];
	int err;

	if (rel[0] == '/')
		return 0;
	if (!getcwd(cwd, sizeof(cwd))) {
		err = -errno;
		pr_err("--config %s: cannot make the path absolute: %s", rel, strerror(-err));
		return err;
	}
	while (rel[0] == '.' && rel[1] == '/')
		rel += 2;
	if (snprintf(abs, sizeof(abs), "%s/%s", cwd, rel) >= (int)sizeof(abs)) {
		pr_err("--config %s: path too long once absolute", d->o.config);
		return -ENAMETOOLONG;
	}
	d->o.config = abs;
	return 0;
}

/* $FLOODGATE_INTERFACES ("eth0 eth1" or "eth0,eth1": the unit's environment
 * file sets it) into o's interfaces; 0 when unset or empty. */
static int env_ifaces(struct daemon_opts *o)
{
	const char *env = getenv(FG_IFACES_ENV);
	char buf[FG_MAX_IFS * (IF_NAMESIZE + 1) + 1], why[FG_WHY_LEN];
	char *save = NULL;

	if (!env || !*env)
		return 0;
	if (snprintf(buf, sizeof(buf), "%s", env) >= (int)sizeof(buf)) {
		pr_err("$" FG_IFACES_ENV ": too long (at most %d interfaces)", FG_MAX_IFS);
		return -EINVAL;
	}
	for (char *w = strtok_r(buf, " ,\t", &save); w; w = strtok_r(NULL, " ,\t", &save)) {
		if (add_iface(NULL, w, o, why)) {
			pr_err("$" FG_IFACES_ENV ": %s", why);
			return -EINVAL;
		}
	}
	return 0;
}

/* --interface, else $FLOODGATE_INTERFACES, else the file's; each must exist. */
static int choose_ifaces(struct daemon *d)
{
	bool cli = d->o.n_ifs > 0;
	int err = cli ? 0 : env_ifaces(&d->o);

	if (err)
		return err;
	if (!cli && d->o.n_ifs)
		pr_info("interfaces from $" FG_IFACES_ENV " (%s), not the file's",
			getenv(FG_IFACES_ENV));
	cli = d->o.n_ifs > 0;
	d->n_ifs = cli ? d->o.n_ifs : d->g.cfg->n_ifs;
	if (!d->n_ifs) {
		pr_err("no interfaces to filter: set " FG_IFACES_ENV " in " FG_ENV_FILE
		       " (systemd), interfaces: in %s, or pass --interface",
		       d->o.config);
		return -EINVAL;
	}
	for (int i = 0; i < d->n_ifs; i++) {
		const char *name = cli ? d->o.ifaces[i] : d->g.cfg->ifaces[i];
		/* by name, or the device its pinned link still holds (renamed) */
		err = fg_iface_init(&d->ifs[i], d->g.dir, name);

		if (err) {
			pr_err("interface %s: %s", name, strerror(-err));
			return err;
		}
		snprintf(d->g.ifnames[i], sizeof(d->g.ifnames[i]), "%s", name);
	}
	d->g.n_ifnames = d->n_ifs;
	return 0;
}

/* -EBUSY, after saying so, when a live floodgated other than us owns m. */
static int refuse_live_daemon(struct fg_maps *m, const char *dir, const char *hint)
{
	struct fg_meta meta;

	if (!fg_meta_read(m, &meta) && fg_daemon_alive(meta.pid) && meta.pid != (__u32)getpid()) {
		pr_err("floodgated (pid %u) is already running on %s%s", meta.pid, dir, hint);
		return -EBUSY;
	}
	return 0;
}

/*
 * Adopting: the maps keep the size they were pinned with (fg_meta), not
 * the file's max_sources; a file that asks for another size is refused at
 * apply (apply.c) and the pinned policy stays in force (keep_pinned_policy).
 */
static int adopt_pinned_size(struct daemon *d, char *why)
{
	struct fg_meta meta;
	struct fg_maps m;
	int err = fg_maps_open(&m, d->g.dir, why);

	if (err)
		return err;
	err = fg_meta_read(&m, &meta);
	fg_maps_close(&m);
	if (err) {
		fg_why(why, "%s: reading fg_meta: %s", d->g.dir, strerror(-err));
		return err;
	}
	if (meta.max_sources)
		d->max_sources = meta.max_sources;
	return 0;
}

/*
 * What this kernel allows, said once; a policy it cannot run (a feature
 * no way on this kernel provides, policy/policy_kernel.h) is refused
 * before anything is loaded, or, adopting, leaves the pinned policy in
 * force (lock_and_apply).
 */
static int check_kernel(struct daemon *d)
{
	const struct fg_kfeat *kf = fg_kfeat_get();
	char line[1024];
	int err;

	fg_kfeat_summary(kf, line, sizeof(line));
	pr_info("%s", line);
	err = fg_policy_kernel_check(d->g.cfg, kf, d->kernel_why);
	if (!err)
		fg_policy_kernel_fill(d->g.cfg, kf);
	if (err && !d->g.adopting) {
		pr_err("%s: %s", d->o.config, d->kernel_why);
		return err;
	}
	d->kernel_err = err;
	return 0;
}

/* The pin dir: bpffs, ours, compatible, not in use by a live daemon. */
static int check_pin_dir(struct daemon *d)
{
	char why[FG_WHY_LEN] = "";
	struct fg_maps m;
	int err;

	err = fg_pin_dir_prepare(d->g.dir, why);
	if (err)
		goto fail;
	d->g.adopting = fg_pin_dir_populated(d->g.dir);
	if (!d->g.adopting) {
		/* a filter whose pins are gone still holds our interfaces */
		err = fg_found_orphan(d->ifs, d->n_ifs, d->g.dir, why);
		if (err)
			goto fail;
		return 0;
	}
	/* a live daemon first: its pin dir is not ours to judge, and the
	 * max_sources advice below ("detach first") would stop it */
	err = fg_maps_open(&m, d->g.dir, why);
	if (err)
		goto fail;
	err = refuse_live_daemon(&m, d->g.dir, "; use 'floodgate reload' or stop it first");
	fg_maps_close(&m);
	if (err)
		return err;
	err = adopt_pinned_size(d, why);
	if (!err)
		err = fg_pin_dir_check(d->g.dir, d->max_sources, why);
	if (!err)
		return 0;
fail:
	pr_err("%s", why[0] ? why : strerror(-err));
	return err;
}

static int size_maps(struct daemon *d)
{
	int err;

	/* d->g.skel->rodata->fg_clock stays FG_CLOCK_COARSE; the tries are sized
	 * in their definitions (FG_PFX_ENTRIES, include/floodgate.h) */
	if ((err = bpf_map__set_max_entries(d->g.skel->maps.fg_src4,
					    fg_src4_sets(d->max_sources))) ||
	    (err = bpf_map__set_max_entries(d->g.skel->maps.fg_src6, fg_src6_sets(d->max_sources))))
		pr_err("max_sources %llu: %s", (unsigned long long)d->max_sources, strerror(-err));
	return err;
}

static int set_pin_paths(struct daemon *d)
{
	struct bpf_map *pinned[FGM_NMAPS];
	char path[512];
	int err;

	fg_skel_maps(d->g.skel, pinned);
	for (size_t i = 0; i < FGM_NMAPS; i++) {
		snprintf(path, sizeof(path), "%s/%s", d->g.dir, bpf_map__name(pinned[i]));
		err = bpf_map__set_pin_path(pinned[i], path);
		if (err) {
			pr_err("pin path %s: %s", path, strerror(-err));
			return err;
		}
	}
	return 0;
}

/* FNV-1a, 64 bits, from basis h */
static __u64 fnv1a64(__u64 h, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* rodata fg_build: this object's hash (two FNV-1a from different bases,
 * and its size), so the program carries which build it is. */
static void set_build(struct daemon *d)
{
	size_t sz = 0;
	const unsigned char *elf = floodgate_bpf__elf_bytes(&sz);
	volatile __u64 *b = (volatile __u64 *)d->g.skel->rodata->fg_build;

	b[0] = fnv1a64(0xcbf29ce484222325ull, elf, sz) ^ (__u64)sz;
	b[1] = fnv1a64(0x84222325cbf29ce4ull, elf, sz);
}

/*
 * Adopting with an exclusive link on every interface: if the pinned links
 * run this very build over these maps (fg_keep_running_prog), keep it and
 * do not load the XDP program at all; its verification is most of a
 * start (issue 25: about 0.6 s idle, several seconds on a loaded host).
 * Any difference loads and swaps as before, and says why.
 */
static void keep_running_prog(struct daemon *d)
{
	char why[FG_WHY_LEN] = "";
	int err;

	const char *env = getenv(FG_ADOPT_RELOAD_ENV);

	if (!d->g.adopting)
		return;
	if (env && *env && strcmp(env, "0")) {
		pr_info("adopting: loading the XDP program ($" FG_ADOPT_RELOAD_ENV "=%s)", env);
		return;
	}
	if (d->ac.how != FG_XDP_EXCLUSIVE) {
		pr_info("adopting: loading the XDP program (xdp_attach through libxdp wants "
			"a loaded object)");
		return;
	}
	err = fg_keep_running_prog(d->g.skel, d->g.dir, d->ifs, d->n_ifs, &d->ac.kept_fd,
				   &d->ac.kept_id, why);
	if (err) {
		pr_info("adopting: loading the XDP program: the running one is not kept: %s",
			why[0] ? why : strerror(-err));
		return;
	}
	bpf_program__set_autoload(d->g.skel->progs.floodgate, false);
	pr_info("adopting: program %u is this build over these maps: kept, not loaded again",
		d->ac.kept_id);
}

/*
 * A fresh start into libxdp's dispatcher: libxdp loads and verifies its own
 * copy of the program (as EXT, xdpattach.c), over the skeleton's maps, so
 * the skeleton loads the maps alone; loading its program too verified it
 * twice per start (issue 25). An adopting start still loads it: the
 * running component is kept when its code (tag) is this one's.
 */
static void libxdp_copy_only(struct daemon *d)
{
	if (d->g.adopting || d->ac.how != FG_XDP_LIBXDP || !d->ac.dispatcher)
		return;
	bpf_program__set_autoload(d->g.skel->progs.floodgate, false);
	pr_info("xdp_attach: libxdp's dispatcher: the program is verified once, as its "
		"component");
}

static int load_skel(struct daemon *d)
{
	int err;

	set_build(d);
	keep_running_prog(d);
	libxdp_copy_only(d);
	err = floodgate_bpf__load(d->g.skel);

	if (err && d->g.skel->rodata->fg_sa_on)
		/* the steps add to the verifier's work (683k insns on 6.1, 372k on 6.18) */
		pr_err("cannot load the BPF program with syn_auth's steps: %s: this kernel's "
		       "verifier does not take them (Debian 12's 6.1 and 6.18 do, see "
		       "docs/syn-auth.md); remove 'syn_auth: cookie' from the policy to filter "
		       "here",
		       strerror(-err));
	else if (err)
		pr_err("cannot load the BPF program: %s%s", strerror(-err),
		       d->g.adopting ? " (the pinned maps may not match this version: "
				       "'floodgate detach' and start again)" :
				       "");
	return err;
}

/*
 * An adopting start whose file cannot be applied: the pinned policy stays
 * in force and the daemon comes up to tend it, saying why once here, in
 * fg_meta's reload fields and so in `floodgate status`; a `floodgate
 * reload` of a fixed file applies it (issue 8: the adopting path must
 * never be worse than the fresh one).
 */
static int keep_pinned_policy(struct daemon *d, int err, const char *why, __u32 slot0)
{
	struct fg_policy pol;
	struct fg_ctl c1;
	__u64 version = 0;
	/* a failure after the slot flip leaves the file's policy in force */
	bool flipped = !fg_ctl_read(&d->g.maps, &c1) && c1.slot != slot0;

	if (!fg_policy_read_active(&d->g.maps, &pol))
		version = pol.version;
	d->not_applied = err;
	d->g.not_applied = true;
	snprintf(d->not_applied_why, sizeof(d->not_applied_why), "%s; policy version %llu %s",
		 why[0] ? why : strerror(-err), (unsigned long long)version,
		 flipped ? "from the file is in force" : "from the pinned state stays in force");
	pr_warn("%s was NOT applied: %s; fix the file and run 'floodgate reload'", d->o.config,
		d->not_applied_why);
	return 0;
}

/* After a successful apply: the IPv4 lists' figures for metrics, and a log
 * line when the trie answers part of them (floodgate.h, "the block budget"). */
static void dir4_applied(struct daemon *d, const struct fg_inforce *was, const char *what)
{
	d->g.dir4[0] = was->dir4_blocks;
	d->g.dir4[1] = was->dir4_trie16;
	d->g.dir4[2] = was->dir4_trie24;
	d->g.dir4[3] = was->dir4_trie_pfx;
	if (was->dir4_note[0])
		pr_info("%s: %s", what, was->dir4_note);
}

/*
 * fg_policy_apply with the digest of what it applies kept beside the pin
 * dir (pdigest.h): gone before anything is written, saved once it is all
 * in force. A digest that cannot be made or saved only costs the next
 * adoption its shortcut.
 */
static int apply_digested(struct daemon *d, struct fg_config *cfg, struct fg_inforce *was,
			  char *why)
{
	struct fg_pdigest dg;
	int derr = fg_pdigest_of(cfg, &dg), err;

	FG_APPLY_OPTS(o, .before_flip = modules_before_flip, .ctx = d, .was = was);
	fg_pdigest_forget(d->g.dir);
	err = fg_policy_apply(&d->g.maps, cfg, &o, why);
	if (!err && !derr) {
		__u32 dir4[4] = { was->dir4_blocks, was->dir4_trie16, was->dir4_trie24,
				  was->dir4_trie_pfx };

		derr = fg_pdigest_save(&d->g.maps, d->g.dir, &dg, dir4);
	}
	if (!err && derr)
		pr_debug("the applied policy's digest not kept (%s): the next adoption rewrites it",
			 strerror(-derr));
	return err;
}

/*
 * Adopting, when the pin dir holds exactly what the file compiles to
 * (pdigest.h): nothing is rewritten (1M prefixes: most of 2 s), the
 * modules' before_flip still run (with the ids in force), and the log says
 * so. 1: kept; 0: apply as usual, why logged.
 */
static int adopt_unchanged(struct daemon *d, char *why)
{
	char nwhy[FG_WHY_LEN] = "";
	const char *env = getenv(FG_ADOPT_RELOAD_ENV);
	struct fg_pdigest dg;
	__u32 dir4[4];
	int err;

	if (!d->g.adopting || (env && *env && strcmp(env, "0")))
		return 0;
	err = fg_pdigest_of(d->g.cfg, &dg);
	if (!err)
		err = fg_pdigest_check(&d->g.maps, d->g.dir, d->g.cfg, &dg, dir4, nwhy);
	if (err) {
		pr_info("adopt: rewriting the pinned policy: %s", nwhy[0] ? nwhy : strerror(-err));
		return 0;
	}
	err = modules_before_flip(d, &d->g.maps, d->g.cfg, why);
	if (err)
		return err;
	d->g.dir4[0] = dir4[0];
	d->g.dir4[1] = dir4[1];
	d->g.dir4[2] = dir4[2];
	d->g.dir4[3] = dir4[3];
	pr_info("adopt: the pinned policy (version %llu) is what %s compiles to: kept, not "
		"rewritten",
		(unsigned long long)d->g.cfg->pol.version, d->o.config);
	return 1;
}

/* The file's policy into the maps (or this kernel's refusal of it), what
 * was in force before in was; 1: adopting, the pinned policy is the
 * file's and stays as it is. */
static int apply_file(struct daemon *d, struct fg_inforce *was, char *why, struct fg_ctl *c0)
{
	int kept;

	if (fg_ctl_read(&d->g.maps, c0))
		c0->slot = ~0u;
	if (d->kernel_err) {
		snprintf(why, FG_WHY_LEN, "%s", d->kernel_why);
		return d->kernel_err;
	}
	kept = adopt_unchanged(d, why);
	if (kept)
		return kept;
	return apply_digested(d, d->g.cfg, was, why);
}

/* Lock the loaded pin dir, then fg_ctl and the policy, then the modules'
 * start; the lock is held until attach_all is done. From here on the pin
 * dir is ours (started). */
static int lock_and_apply(struct daemon *d)
{
	char why[FG_WHY_LEN] = "";
	struct fg_inforce *was;
	struct fg_ctl c0;
	bool kept;
	int err;

	err = fg_maps_from_skel(&d->g.maps, d->g.skel, d->g.dir);
	if (err) {
		pr_err("pin dir %s: %s", d->g.dir, strerror(-err));
		return err;
	}
	if ((err = run_start_step(d, init)))
		return err;
	err = fg_maps_lock(&d->g.maps, LOCK_MS);
	if (err) {
		pr_err("%s is locked by another floodgate process: %s", d->g.dir, strerror(-err));
		return err;
	}
	/* again under the lock: two daemons started at once */
	err = refuse_live_daemon(&d->g.maps, d->g.dir, "");
	if (err)
		return err;
	d->started = true;
	err = fg_ctl_init(&d->g.maps, d->g.cfg->mode);
	if (err) {
		pr_err("initialising fg_ctl in %s: %s", d->g.dir, strerror(-err));
		return err;
	}
	was = calloc(1, sizeof(*was)); /* 163 KB: not on the stack */
	if (!was)
		return -ENOMEM;
	err = apply_file(d, was, why, &c0);
	kept = err == 1;
	if (kept)
		err = 0;
	else if (err && d->g.adopting)
		err = keep_pinned_policy(d, err, why, c0.slot);
	else if (err)
		pr_err("applying %s: %s", d->o.config, why[0] ? why : strerror(-err));
	else if (d->g.adopting)
		fg_reload_log("adopt", was, d->g.cfg); /* the file against the pinned state */
	if (!err && !d->not_applied && !kept)
		dir4_applied(d, was, d->g.adopting ? "adopt" : "start");
	fg_inforce_free(was);
	free(was);
	if (!err)
		err = run_start_step(d, start);
	return err;
}

static void log_renamed(const struct fg_iface *ifc)
{
	if (ifc->change & FG_IF_RENAMED)
		pr_warn("%s is now called %s (ifindex %d); still attached", ifc->was, ifc->name,
			ifc->ifindex);
}

static void log_attached(const struct fg_iface *ifc)
{
	log_renamed(ifc);
	if (ifc->severed)
		pr_warn("%s: its pinned link was severed (the interface was deleted); attached anew",
			ifc->name);
	if (ifc->repinned)
		pr_info("%s: our link was pinned as " FG_LINK_PREFIX
			"%s (the interface was renamed); "
			"re-pinned as " FG_LINK_PREFIX "%s",
			ifc->name, ifc->pinned_as, ifc->conf);
	char how[96];

	fg_iface_how_str(ifc, how, sizeof(how));
	if (ifc->how_kept)
		pr_warn("%s: floodgate was attached as %s by an earlier daemon: kept that way "
			"(xdp_attach takes effect after 'floodgate detach')",
			ifc->name, how);
	if (ifc->adopted && ifc->how == FG_XDP_LIBXDP)
		pr_info("%s: adopted floodgate's program (%s XDP, %s)", ifc->name,
			ifc->xdp_mode == 1 ? "native" : "generic", how);
	else if (ifc->kept)
		pr_info("%s: adopted pinned link, its program kept", ifc->name);
	else if (ifc->adopted)
		pr_info("%s: adopted pinned link, program swapped atomically", ifc->name);
	else
		pr_info("%s: attached (%s XDP, %s)", ifc->name,
			ifc->xdp_mode == 1 ? "native" : "generic", how);
}

/* xdp_attach: resolved once, and said once. */
static int choose_attach(struct daemon *d)
{
	const struct fg_config *c = d->g.cfg;
	struct fg_attach_conf *ac = &d->ac;
	int err =
		fg_attach_conf_init(ac, c->xdp_mode, c->xdp_attach, c->xdp_priority, c->xdp_chain);

	if (err) {
		pr_err("xdp_attach %d, xdp_priority %u: %s", c->xdp_attach, c->xdp_priority,
		       strerror(-err));
		return err;
	}
	if (c->xdp_attach == FG_ATTACH_EXCLUSIVE)
		pr_info("xdp_attach: exclusive (floodgate's own pinned bpf_link)");
	else if (ac->dispatcher)
		pr_info("xdp_attach: %s: libxdp's dispatcher (this kernel can build one), "
			"priority %u",
			fg_xdp_attach_names[c->xdp_attach], ac->run_prio);
	else if (ac->from_auto)
		pr_info("xdp_attach: auto: exclusive bpf_link, because %s", ac->probe);
	else
		pr_warn("xdp_attach: libxdp, but %s: floodgate attaches alone and no other XDP "
			"program can join it on this kernel",
			ac->probe);
	return 0;
}

static void log_stale_link(const char *ifname, int err)
{
	if (err)
		pr_warn("%s: cannot unpin stale link: %s", ifname, strerror(-err));
	else
		pr_info("%s: no longer configured, detached", ifname);
}

static void fill_meta(struct daemon *d, struct fg_meta *meta)
{
	bool found = !fg_meta_read(&d->g.maps, meta);
	__u32 seq = found ? meta->reload_seq : 0;
	__u32 file_mode = found && d->not_applied ? meta->file_mode : (__u32)d->g.cfg->mode;

	memset(meta, 0, sizeof(*meta));
	/* `floodgate reload` waits for a change: never back to a number seen */
	meta->reload_seq = seq;
	meta->magic = FG_ABI_MAGIC;
	meta->abi = FG_ABI_VERSION;
	meta->pid = getpid();
	meta->started = time(NULL);
	meta->max_sources = d->max_sources;
	meta->file_mode = file_mode; /* as the apply just stored it, or as pinned */
	if (d->not_applied) {
		/* what `floodgate status` shows until a reload applies the file */
		meta->reload_err = (__u32)-d->not_applied;
		meta->reload_done = (__u64)time(NULL);
		snprintf(meta->reload_msg, sizeof(meta->reload_msg), "%.*s",
			 (int)sizeof(meta->reload_msg) - 1, d->not_applied_why);
	}
	meta->n_ifs = d->n_ifs;
	for (int i = 0; i < d->n_ifs; i++) {
		meta->ifs[i].ifindex = d->ifs[i].ifindex;
		meta->ifs[i].xdp_mode = d->ifs[i].xdp_mode;
		snprintf(meta->ifs[i].name, sizeof(meta->ifs[i].name), "%s", d->ifs[i].name);
	}
	/* absolute (absolute_config); a longer path is cut, and `reload`
	 * then skips its check of the file */
	memcpy(meta->config, d->o.config, strnlen(d->o.config, sizeof(meta->config) - 1));
}

/* Every interface, stale links gone, fg_meta written; then unlock. */
static int attach_all(struct daemon *d)
{
	struct fg_meta meta;
	int err;

	for (int i = 0; i < d->n_ifs; i++) {
		struct fg_iface *ifc = &d->ifs[i];

		err = fg_attach_iface(d->g.skel, d->g.dir, &d->ac, ifc);
		if (err) {
			pr_err("%s: %s", ifc->name, ifc->why);
			return err;
		}
		log_attached(ifc);
		/* xdp_mode: skb takes the retransmit way; auto fell back here */
		if (ifc->xdp_mode == 2 && d->g.cfg->pol.sa.way == FG_SA_WAY_HANDOFF)
			pr_err("%s: generic XDP: syn_auth's handoff way does not work here (the "
			       "listener resets every proven connection); set xdp_mode: skb to "
			       "take the retransmit way",
			       ifc->name);
	}
	fg_drop_stale_links(d->g.dir, d->ifs, d->n_ifs, log_stale_link);
	fill_meta(d, &meta);
	err = fg_meta_write(&d->g.maps, &meta);
	fg_maps_unlock(&d->g.maps);
	if (!err) /* fg_meta names us now */
		fg_start_state_remove(d->g.dir, (__u32)getpid());
	if (err)
		pr_err("writing fg_meta: %s", strerror(-err));
	else if ((err = fg_pinwatch_init(&d->pw, &d->g.maps)))
		pr_err("watching the pins in %s: %s", d->g.dir, strerror(-err));
	return err;
}

/* --- serve ------------------------------------------------------------------------ */

/* fgd.swap_prog: a module's second instance of the program on every interface. */
static int swap_prog(struct fgd *g, const struct fg_swap_opts *o, struct fg_swap_res *res,
		     char *why)
{
	struct daemon *d = (struct daemon *)g; /* g is its first member */

	return fg_swap_program(&d->g.skel, d->ifs, d->n_ifs, &d->ac, o, res, why);
}

static void rewrite_meta_ifaces(struct daemon *d)
{
	struct fg_meta meta;

	if (fg_meta_read(&d->g.maps, &meta))
		return;
	for (int i = 0; i < d->n_ifs && i < FG_MAX_IFS; i++) {
		meta.ifs[i].ifindex = d->ifs[i].ifindex;
		meta.ifs[i].xdp_mode = d->ifs[i].xdp_mode;
		memcpy(meta.ifs[i].name, d->ifs[i].name, sizeof(meta.ifs[i].name));
	}
	if (!fg_meta_write(&d->g.maps, &meta))
		d->meta_dirty = false;
}

/* Interfaces deleted and back (attach.c), logged once each. */
static void watch_ifaces(struct daemon *d)
{
	if (fg_watch_ifaces(d->ifs, d->n_ifs, d->g.skel, d->g.dir, &d->ac)) {
		for (int i = 0; i < d->n_ifs; i++) {
			const struct fg_iface *ifc = &d->ifs[i];

			if (ifc->change & FG_IF_LOST)
				pr_warn("%s: interface deleted: the filter is detached from it; "
					"will attach again when an interface named %s (the "
					"configured name) appears",
					ifc->name, ifc->conf);
			if (ifc->change & FG_IF_BACK)
				pr_info("%s: interface is back (ifindex %d): attached again",
					ifc->name, ifc->ifindex);
			if (ifc->change & FG_IF_FAILED)
				pr_warn("%s: %s", ifc->name, ifc->why);
			log_renamed(ifc);
			/* FAILED too: status then looks at the device it tried */
			if (ifc->change & (FG_IF_LOST | FG_IF_BACK | FG_IF_RENAMED | FG_IF_FAILED))
				d->meta_dirty = true;
		}
	}
	if (d->meta_dirty)
		rewrite_meta_ifaces(d);
}

/* Pins removed under us: put them back from our fds, or say why not. */
static void watch_pins(struct daemon *d)
{
	if (fg_pinwatch_check(&d->pw, &d->g.maps, d->ifs, d->n_ifs, fg_mono_coarse_ns()))
		pr_warn("%s", d->pw.msg);
}

/* The counters, read once, then every module's tick in order. */
static void tick(struct daemon *d)
{
	struct fg_tick *t = d->tick;
	int err;

	if ((err = fg_ctl_read(&d->g.maps, &t->ctl)) ||
	    (err = fg_names_read(&d->g.maps, t->names)) ||
	    (err = fg_policy_read_active(&d->g.maps, &t->pol)) ||
	    (err = fg_stats_read(&d->g.maps, t->rows))) {
		pr_warn("reading counters: %s", strerror(-err));
		return;
	}
	t->now_ns = fg_mono_coarse_ns();
	t->rt_swept = false;
	fgd_for_each_module(m) if ((*m)->tick)(*m)->tick(&d->g, t);
}

/* Under the lock: the new policy, with the file's modes (apply.h), the
 * modules' after_flip; then what changed against what was in force. On
 * failure msg says why and whether the running policy stayed. */
static int reload_apply(struct daemon *d, struct fg_config *ncfg, char *msg)
{
	struct fg_inforce *was = calloc(1, sizeof(*was)); /* 163 KB: not on the stack */
	char why[FG_WHY_LEN] = "";
	struct fg_ctl c0, c1;
	int err;

	if (!was) {
		fg_why(msg, "out of memory; the running policy is unchanged");
		return -ENOMEM;
	}
	err = fg_maps_lock(&d->g.maps, LOCK_MS);
	if (err) {
		fg_why(msg, "cannot lock %s: %s; the running policy is unchanged", d->g.dir,
		       strerror(-err));
		free(was);
		return err;
	}
	if (fg_ctl_read(&d->g.maps, &c0))
		c0.slot = ~0u;
	err = apply_digested(d, ncfg, was, why);
	if (err) {
		/* a failure after the slot flip leaves the new policy in force */
		bool flipped = c0.slot != ~0u && !fg_ctl_read(&d->g.maps, &c1) &&
			       c1.slot != c0.slot;

		fg_maps_unlock(&d->g.maps);
		fg_why(msg, "%s; %s", why[0] ? why : strerror(-err),
		       flipped ? "the new policy is in force" : "the running policy is unchanged");
		free(was);
		return err;
	}
	fgd_for_each_module(m) if ((*m)->after_flip)(*m)->after_flip(&d->g, ncfg);
	fg_maps_unlock(&d->g.maps);
	fg_reload_log("reload", was, ncfg);
	dir4_applied(d, was, "reload");
	fg_inforce_free(was);
	free(was);
	return 0;
}

/* fg_meta's reload fields, which `floodgate reload` waits for and prints:
 * after every request, success or not. */
static void report_reload(struct daemon *d, int err, const char *msg)
{
	struct fg_meta meta;
	int werr = fg_meta_read(&d->g.maps, &meta);

	if (!werr) {
		meta.reload_seq++;
		meta.reload_err = (__u32)(err < 0 ? -err : err);
		meta.reload_done = (__u64)time(NULL);
		snprintf(meta.reload_msg, sizeof(meta.reload_msg), "%s", msg);
		werr = fg_meta_write(&d->g.maps, &meta);
	}
	if (werr)
		pr_warn("reload: cannot record the result in fg_meta: %s ('floodgate reload' "
			"will not see it)",
			strerror(-werr));
}

/* What a reload cannot change while running: said, not applied. */
static void reload_restart_only(const struct fg_config *old, const struct fg_config *ncfg)
{
	if (ncfg->n_ifs != old->n_ifs || memcmp(ncfg->ifaces, old->ifaces, sizeof(ncfg->ifaces)) ||
	    ncfg->xdp_mode != old->xdp_mode || ncfg->xdp_attach != old->xdp_attach ||
	    ncfg->xdp_priority != old->xdp_priority || ncfg->xdp_chain != old->xdp_chain)
		pr_warn("reload: interfaces/xdp_mode/xdp_attach changed in the file; they take "
			"effect on restart");
	if (strcmp(ncfg->metrics, old->metrics) ||
	    ncfg->metrics_max_conn != old->metrics_max_conn ||
	    ncfg->metrics_per_client != old->metrics_per_client ||
	    ncfg->metrics_timeout_s != old->metrics_timeout_s)
		pr_warn("reload: metrics changed in the file; it takes effect on restart");
}

/* The file again, checked against this kernel, applied; on any failure the
 * running policy stays and msg says why (fg_meta's reload fields). The new
 * config is on the heap (190 KB) and replaces the old by pointer. */
static int reload_file(struct daemon *d, struct fg_config **out, char *msg)
{
	struct fg_config *ncfg = calloc(1, sizeof(*ncfg));
	int err, xdp_mode;

	*out = NULL;
	if (!ncfg) {
		fg_why(msg, "out of memory; the running policy is unchanged");
		return -ENOMEM;
	}
	err = load_config(d->o.config, ncfg, msg);
	if (err) {
		pr_err("%s", msg);
		pr_err("reload: %s is invalid; the running policy is unchanged", d->o.config);
		strncat(msg, "; the running policy is unchanged", FG_WHY_LEN - strlen(msg) - 1);
		free(ncfg);
		return err;
	}
	/* xdp_mode changes at the next start: the way follows the mode in force */
	xdp_mode = ncfg->xdp_mode;
	ncfg->xdp_mode = d->g.cfg->xdp_mode;
	err = fg_policy_kernel_check(ncfg, fg_kfeat_get(), msg);
	if (!err)
		fg_policy_kernel_fill(ncfg, fg_kfeat_get());
	ncfg->xdp_mode = xdp_mode;
	if (err) {
		msg[FG_WHY_LEN - 41] = '\0'; /* room for the rest, as before */
		strncat(msg, "; the running policy is unchanged", FG_WHY_LEN - strlen(msg) - 1);
		pr_err("reload: %s: %s", d->o.config, msg);
	} else if ((err = reload_apply(d, ncfg, msg))) {
		pr_err("reload: %s", msg);
	}
	if (err) {
		fg_config_free(ncfg);
		free(ncfg);
		return err;
	}
	*out = ncfg;
	return 0;
}

static void do_reload(struct daemon *d)
{
	struct fg_config *ncfg, *old = d->g.cfg;
	char msg[FG_WHY_LEN];
	int err;

	sd_notify(0, "RELOADING=1");
	pr_info("reload: reading %s", d->o.config);
	err = reload_file(d, &ncfg, msg);
	if (err) {
		report_reload(d, err, msg);
		sd_notify(0, "READY=1");
		return;
	}
	fgd_for_each_module(m) if ((*m)->reloaded)(*m)->reloaded(&d->g, old, ncfg);
	reload_restart_only(old, ncfg);
	snprintf(msg, sizeof(msg), "policy version %llu active",
		 (unsigned long long)ncfg->pol.version);
	pr_info("reload: %s", msg);
	report_reload(d, 0, msg);
	d->not_applied = 0;
	d->g.not_applied = false;
	d->g.cfg = ncfg;
	fg_config_free(old);
	free(old);
	sd_notify(0, "READY=1");
}

/* One tick's sleep; modules that poll (the shedder samples on its own
 * interval) are called meanwhile, each when it asked to be. */
static void rest(struct daemon *d, const struct timespec *tick_len)
{
	__u64 now = fg_mono_coarse_ns();
	__u64 until = now + (__u64)tick_len->tv_sec * 1000000000ull + (__u64)tick_len->tv_nsec;

	while (!stop_signal && !reload_requested && now < until) {
		__u64 wake = until;
		struct timespec ts;

		fgd_for_each_module(m)
		{
			__u64 next = (*m)->poll ? (*m)->poll(&d->g, now) : 0;

			if (next && next < wake)
				wake = next;
		}
		if (wake > now) {
			ts.tv_sec = (time_t)((wake - now) / 1000000000ull);
			ts.tv_nsec = (long)((wake - now) % 1000000000ull);
			nanosleep(&ts, NULL); /* a signal cuts it short */
		}
		now = fg_mono_coarse_ns();
	}
}

static void serve(struct daemon *d)
{
	if (d->not_applied)
		pr_warn("adopted pinned state; %s NOT applied, the pinned policy in force, on %d "
			"interface(s), pin dir %s (pid %d)",
			d->o.config, d->n_ifs, d->g.dir, getpid());
	else
		pr_info("%s policy version %llu from %s on %d interface(s), pin dir %s (pid %d)",
			d->g.adopting ? "adopted pinned state;" : "started;",
			(unsigned long long)d->g.cfg->pol.version, d->o.config, d->n_ifs, d->g.dir,
			getpid());
	sd_notify(0, "READY=1");
	fg_daemonize_done(&d->notify_fd, 0, NULL);
	while (!stop_signal) {
		struct timespec ts = { TICK_MS / 1000, (TICK_MS % 1000) * 1000000L };

		if (reload_requested) {
			reload_requested = 0;
			do_reload(d);
		}
		watch_ifaces(d);
		watch_pins(d);
		tick(d);
		rest(d, &ts);
	}
	pr_info("signal %d: stopping", (int)stop_signal);
	sd_notify(0, "STOPPING=1");
}

/* --- stop ------------------------------------------------------------------------- */

/* Every module's close, last first (each is safe on a module that never
 * started); detach: the filter is being removed (fleet hands its leases
 * back), else it keeps running. Before the maps close. */
static void close_modules(struct daemon *d, bool detach)
{
	size_t n = 0;

	while (fg_modules[n])
		n++;
	while (n--)
		if (fg_modules[n]->close)
			fg_modules[n]->close(&d->g, detach);
}

/* Does stopping (after err) detach and unpin? */
static bool will_detach(const struct daemon *d, int err)
{
	if (d->started && err)
		return !d->g.adopting; /* a failed start removes only a pin dir it made */
	return d->started && !d->o.keep && (!d->g.cfg || d->g.cfg->detach_on_exit);
}

static void log_iface_detach(const struct fg_iface *ifc, int err, const char *why)
{
	if (err && err != -ENOENT)
		pr_warn("%s: detaching floodgate: %s", ifc->name, why[0] ? why : strerror(-err));
}

/* Detach and unpin, or leave the filter running untended; returns err, or
 * the removal's error if that failed after a clean run. */
static int release_pin_dir(struct daemon *d, int err)
{
	bool detach = will_detach(d, err);
	char why[FG_WHY_LEN] = "";
	struct fg_meta meta;

	if (d->started && !detach && d->g.maps.fd[FGM_META] >= 0 &&
	    !fg_meta_read(&d->g.maps, &meta) && meta.pid == (__u32)getpid()) {
		meta.pid = 0; /* the filter keeps running; nobody tends it */
		fg_meta_write(&d->g.maps, &meta);
	}
	fg_maps_close(&d->g.maps);
	if (detach)
		fg_detach_ifaces(d->ifs, d->n_ifs, log_iface_detach);
	if (detach) {
		int rerr = fg_pin_dir_remove(d->g.dir, why);

		if (rerr) {
			pr_warn("removing the pin dir %s: %s", d->g.dir,
				why[0] ? why : strerror(-rerr));
			return err ? err : -EIO;
		}
		pr_info("detached and unpinned %s%s", d->g.dir,
			err ? " after the failed start" : "");
	} else if (d->started) {
		pr_info("left the filter attached and pinned in %s", d->g.dir);
	} else if (d->g.dir && !d->g.adopting) {
		fg_conn_unpin(d->g.dir); /* the counter loads first */
		rmdir(d->g.dir);	 /* a dir we made for a start that failed; only if empty */
	}
	return err;
}

/* The start file (startstate.h): `floodgate status` says "starting" or
 * "adopting" with our pid until fg_meta names us. Without it (no /run)
 * status says "not running" meanwhile, as before: said once. */
static void say_starting(struct daemon *d)
{
	struct fg_start_state s = {
		.pid = (__u32)getpid(),
		.phase = fg_pin_dir_populated(d->g.dir) ? FG_START_ADOPTING : FG_START_FRESH,
		.since = (__u64)time(NULL),
	};
	int err = fg_start_state_write(d->g.dir, &s);

	if (err)
		pr_warn("cannot write the start file (status will say \"not running\" until the "
			"start is done): %s",
			strerror(-err));
}

static void init_daemon(struct daemon *d)
{
	d->notify_fd = -1;
	d->ac.kept_fd = -1;
	d->g.maps.dirfd = -1;
	for (int i = 0; i < FGM_NMAPS; i++)
		d->g.maps.fd[i] = -1;
	d->g.dir = fg_pin_dir_choose(d->o.pin_dir);
	d->g.swap_prog = swap_prog;
	fg_log_init("floodgated", d->o.verbose ? FG_LOG_DEBUG : FG_LOG_INFO, !d->o.foreground);
}

int main(int argc, char **argv)
{
	static struct daemon dd;
	struct daemon *d = &dd;
	int err;

	err = parse_args(argc, argv, &d->o);
	if (err >= 0)
		return err;
	init_daemon(d);
	if ((err = absolute_config(d)))
		goto cleanup;
	if (!d->o.foreground && (err = fg_daemonize(&d->notify_fd))) {
		pr_err("cannot daemonize: %s", strerror(-err));
		goto cleanup;
	}
	say_starting(d);
	if ((err = setup_signals()) || (err = load_first_config(d)))
		goto cleanup;
	d->max_sources = d->g.cfg->max_sources;
	if ((err = choose_ifaces(d)) || (err = check_pin_dir(d)) || (err = check_kernel(d)) ||
	    (err = choose_attach(d)))
		goto cleanup;
	d->g.skel = floodgate_bpf__open();
	if (!d->g.skel) {
		err = -errno;
		pr_err("cannot open the BPF object: %s", strerror(-err));
		goto cleanup;
	}
	if ((err = size_maps(d)) || (err = set_pin_paths(d)) || (err = run_start_step(d, open)) ||
	    (err = load_skel(d)))
		goto cleanup;
	if ((err = lock_and_apply(d)) || (err = attach_all(d)))
		goto cleanup;
	d->tick = calloc(1, sizeof(*d->tick)); /* 160 KB: not on the stack */
	if (!d->tick) {
		err = -ENOMEM;
		pr_warn("out of memory");
		goto cleanup;
	}
	serve(d);
	err = 0;

cleanup:
	fg_start_state_remove(d->g.dir, (__u32)getpid());
	close_modules(d, will_detach(d, err));
	err = release_pin_dir(d, err);
	for (int i = 0; i < d->n_ifs; i++)
		bpf_link__destroy(d->ifs[i].link); /* closes our fd; a pin keeps the link */
	floodgate_bpf__destroy(d->g.skel);
	if (d->ac.kept_fd >= 0)
		close(d->ac.kept_fd);
	if (d->g.cfg)
		fg_config_free(d->g.cfg);
	free(d->g.cfg);
	free(d->tick);
	fg_daemonize_done(&d->notify_fd, err, fg_log_last_warn());
	return err ? 1 : 0;
}
