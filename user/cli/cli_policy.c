// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* floodgate check, reload and detach: the policy file and the pin dir's lifetime. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "attach/attach.h"
#include "cli/cli.h"
#include "lib/kfeat.h"
#include "lib/log.h"
#include "maps/mapimg.h"
#include "policy/policy.h"
#include "lib/sysutil.h"

#define WAIT_STEP_MS   50    /* reload, detach --force: look every 50 ms */
#define RELOAD_WAIT_MS 60000 /* reload: the daemon's answer, at most */
#define RELOAD_NOTE_MS 5000  /* ... and a note that it waits after this */
#define STOP_WAIT_S    10    /* detach --force: SIGTERM, then SIGKILL */
#define STOP_WAIT_MS   (STOP_WAIT_S * 1000)
#define KILL_WAIT_MS   5000 /* after SIGKILL */
#define STR_(x)	       #x
#define STR(x)	       STR_(x)

/* Load path into cfg; on failure the message (file:line:col: ...) is in msg. */
static int load_policy(const char *path, struct fg_config *cfg, char *msg, size_t len)
{
	struct fg_err e = {};
	int err;

	err = fg_config_load(path, cfg, &e);
	if (err)
		fg_err_format(&e, msg, len);
	return err;
}

/* The IPv4 lists as apply will build them: blocks, memory, what the trie answers. */
static int check_dir4(const struct fg_config *c)
{
	struct fg_dir4_img *img = malloc(sizeof(*img));
	char line[256];
	int err = img ? fg_dir4_build(c->pfx, c->n_pfx, img) : -ENOMEM;

	if (err) {
		pr_warn("check: building the IPv4 lists: %s", strerror(-err));
	} else {
		fg_dir4_describe(img, line, sizeof(line));
		printf("%s\n", line);
		fg_dir4_img_free(img);
	}
	free(img);
	return err;
}

int cli_check(void *cfg)
{
	const struct cli_args *a = cfg;
	struct fg_config *c = calloc(1, sizeof(*c));
	char msg[1024];
	int err;

	if (!c) {
		pr_warn("check: out of memory");
		return 1;
	}
	if (load_policy(a->pos[0], c, msg, sizeof(msg))) {
		fprintf(stderr, "%s\n", msg);
		free(c);
		return 1;
	}
	fg_config_print(stdout, c);
	err = check_dir4(c);
	/* what floodgated would refuse on this machine's kernel */
	if (cli_needs_text(stdout, c, fg_kfeat_get()))
		err = err ? err : -EOPNOTSUPP;
	fg_config_free(c);
	free(c);
	return err ? 1 : 0;
}

/* The daemon's file must compile here first: the error is where the operator is. */
static int reload_precheck(const struct fg_meta *meta)
{
	struct fg_config *c;
	char msg[1024];

	if (!meta->config[0])
		return 0;
	if (strlen(meta->config) == sizeof(meta->config) - 1) {
		pr_debug("reload: the recorded path may be cut; the daemon checks the file alone");
		return 0;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		pr_warn("reload: out of memory");
		return -ENOMEM;
	}
	if (load_policy(meta->config, c, msg, sizeof(msg))) {
		pr_warn("%s", msg);
		pr_warn("not reloading: the running policy stays");
		free(c);
		return -EINVAL;
	}
	fg_config_free(c);
	free(c);
	return 0;
}

/* --- the daemon as a process --------------------------------------------------------- */

/* A pidfd keeps naming the process we checked, even if it exits and its
 * pid is reused; without pidfds (before 5.3) the pid is used as is. */
struct proc {
	__u32 pid;
	int pidfd;
};

static void proc_open(struct proc *p, __u32 pid)
{
	p->pid = pid;
	p->pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
}

static void proc_close(struct proc *p)
{
	if (p->pidfd >= 0)
		close(p->pidfd);
	p->pidfd = -1;
}

static int proc_signal(const struct proc *p, int sig)
{
	int rc = p->pidfd >= 0 ? (int)syscall(SYS_pidfd_send_signal, p->pidfd, sig, NULL, 0) :
				 kill((pid_t)p->pid, sig);

	return rc ? -errno : 0;
}

/* Exited (a zombie counts), after waiting at most ms for it. */
static bool proc_exited(const struct proc *p, int ms)
{
	struct pollfd pfd = { .fd = p->pidfd, .events = POLLIN };

	if (p->pidfd < 0) {
		if (ms > 0)
			usleep((useconds_t)ms * 1000);
		return !fg_daemon_alive(p->pid);
	}
	return poll(&pfd, 1, ms) > 0;
}

static enum fg_daemon_state proc_state(const struct proc *p)
{
	return proc_exited(p, 0) ? FG_DAEMON_NONE : fg_daemon_state(p->pid);
}

static __u64 now_ms(void)
{
	return fg_mono_coarse_ns() / 1000000;
}

/* --- reload ------------------------------------------------------------------------ */

/* What the daemon answered: its message, exit status by its result. */
static int reload_result(const struct fg_meta *meta)
{
	char msg[sizeof(meta->reload_msg) + 1];

	memcpy(msg, meta->reload_msg, sizeof(meta->reload_msg));
	msg[sizeof(meta->reload_msg)] = 0;
	if (!meta->reload_err) {
		printf("reloaded %s: %s\n", meta->config, msg[0] ? msg : "done");
		return 0;
	}
	pr_warn("floodgated (pid %u) refused the reload: %s", meta->pid,
		msg[0] ? msg : strerror((int)meta->reload_err));
	return -(int)meta->reload_err;
}

/* The note after RELOAD_NOTE_MS: what the wait is waiting for. */
static void reload_note(const struct proc *p)
{
	if (proc_state(p) == FG_DAEMON_STOPPED)
		pr_info("floodgated (pid %u) is STOPPED (SIGSTOP): the reload waits until it "
			"continues (kill -CONT %u); giving up after %d s",
			p->pid, p->pid, RELOAD_WAIT_MS / 1000);
	else
		pr_info("still waiting for floodgated (pid %u) to finish the reload (a large "
			"policy takes a while); giving up after %d s",
			p->pid, RELOAD_WAIT_MS / 1000);
}

/* SIGHUP, then wait until the daemon counts the request as handled. */
static int reload_signal(struct fg_maps *m, const struct fg_meta *meta0, const struct proc *p)
{
	__u64 t0 = now_ms();
	struct fg_meta meta;
	bool noted = false;
	int err;

	err = proc_signal(p, SIGHUP);
	if (err) {
		pr_warn("cannot signal floodgated pid %u: %s", p->pid, strerror(-err));
		return err;
	}
	for (;;) {
		bool gone = proc_exited(p, WAIT_STEP_MS);
		__u64 waited = now_ms() - t0;

		err = fg_meta_read(m, &meta);
		if (err) {
			pr_warn("reading fg_meta: %s", strerror(-err));
			return err;
		}
		meta.config[sizeof(meta.config) - 1] = 0;
		if (meta.pid == p->pid && meta.reload_seq != meta0->reload_seq)
			return reload_result(&meta);
		if (gone || meta.pid != p->pid) {
			pr_warn("floodgated (pid %u) exited before it finished the reload: see its "
				"log (journalctl -u floodgated); the policy in force is in "
				"'floodgate status'",
				p->pid);
			return -ESRCH;
		}
		if (waited >= RELOAD_WAIT_MS) {
			pr_warn("floodgated (pid %u) did not finish the reload within %d s: it may "
				"still; see 'floodgate status' and its log",
				p->pid, RELOAD_WAIT_MS / 1000);
			return -ETIMEDOUT;
		}
		if (!noted && waited >= RELOAD_NOTE_MS) {
			reload_note(p);
			noted = true;
		}
	}
}

int cli_reload(void *cfg)
{
	const struct cli_args *a = cfg;
	struct proc p = { .pidfd = -1 };
	struct fg_meta meta;
	struct fg_maps m;
	int err = -EINVAL;

	if (cli_open_maps(a, &m))
		return 1;
	if (fg_meta_read(&m, &meta)) {
		pr_warn("reading %s failed", a->dir);
		goto out;
	}
	proc_open(&p, meta.pid);
	/* checked after the pidfd is open: it names this daemon from here on */
	if (!meta.pid || proc_state(&p) == FG_DAEMON_NONE) {
		pr_warn("floodgated is not running for %s: nothing to reload "
			"(start it, e.g. systemctl start floodgated)",
			a->dir);
		goto out;
	}
	meta.config[sizeof(meta.config) - 1] = 0;
	err = reload_precheck(&meta);
	if (!err)
		err = reload_signal(&m, &meta, &p);
out:
	proc_close(&p);
	fg_maps_close(&m);
	return err ? 1 : 0;
}

/* --- detach ------------------------------------------------------------------------ */

/*
 * detach --force: afterwards the daemon is gone and no signal is left
 * pending that would act later. A stopped daemon would only act on
 * SIGTERM when continued (and then detach whatever is attached by then),
 * so it gets SIGKILL, which ends even a stopped process; so does a
 * daemon that does not exit within STOP_WAIT_MS of SIGTERM, or stops
 * meanwhile. After SIGKILL the caller removes the pin dir.
 */
int cli_stop_daemon(__u32 pid)
{
	struct proc p;
	enum fg_daemon_state st;
	int err = 0;

	proc_open(&p, pid);
	st = proc_state(&p);
	if (st == FG_DAEMON_RUNNING) {
		__u64 t0 = now_ms();

		proc_signal(&p, SIGTERM);
		while (!proc_exited(&p, WAIT_STEP_MS)) {
			if ((st = proc_state(&p)) == FG_DAEMON_STOPPED ||
			    now_ms() - t0 >= STOP_WAIT_MS)
				break;
		}
		if (proc_state(&p) != FG_DAEMON_NONE)
			pr_warn("floodgated (pid %u) %s: SIGKILL, then detaching here", pid,
				st == FG_DAEMON_STOPPED ?
					"stopped after SIGTERM" :
					"did not exit within " STR(STOP_WAIT_S) " s of SIGTERM");
	} else if (st == FG_DAEMON_STOPPED) {
		pr_info("floodgated (pid %u) is STOPPED (SIGSTOP): SIGKILL (a stopped process "
			"takes it), then detaching here",
			pid);
	}
	if (proc_state(&p) != FG_DAEMON_NONE) {
		proc_signal(&p, SIGKILL);
		if (!proc_exited(&p, KILL_WAIT_MS) && proc_state(&p) != FG_DAEMON_NONE) {
			pr_warn("floodgated (pid %u) has not died of SIGKILL within %d s (stuck in the "
				"kernel?): nothing detached; when it dies the filter stays attached",
				pid, KILL_WAIT_MS / 1000);
			err = -ETIMEDOUT;
		}
	}
	proc_close(&p);
	return err;
}

/* After removing the pin dir: anything still attached is not ours to remove.
 * The kernel frees an unpinned link from a work queue, so a link may take
 * a moment to leave its device: look for up to LEFTOVER_WAIT_MS. */
#define LEFTOVER_WAIT_MS 500
static void warn_leftover_xdp(const struct fg_meta *meta)
{
	for (__u32 i = 0; i < meta->n_ifs && i < FG_MAX_IFS; i++) {
		__u32 prog_id = 0;

		for (int t = 0; t < LEFTOVER_WAIT_MS / WAIT_STEP_MS; t++) {
			if (bpf_xdp_query_id(meta->ifs[i].ifindex, 0, &prog_id) || !prog_id)
				break;
			poll(NULL, 0, WAIT_STEP_MS);
		}
		prog_id = 0;

		if (!bpf_xdp_query_id(meta->ifs[i].ifindex, 0, &prog_id) && prog_id)
			pr_warn("%.16s: an XDP program (id %u) is still attached: not floodgate's "
				"pinned link, or held open by another process",
				meta->ifs[i].name, prog_id);
	}
}

/* floodgate off its devices first: attached through libxdp (no link pin
 * to remove), and by its pinned links. */
static int detach_libxdp(const char *dir)
{
	char why[FG_WHY_LEN] = "";
	struct fg_maps m;
	int n;

	if (fg_maps_open(&m, dir, NULL))
		return 0; /* cannot vet it: fg_pin_dir_remove says why */
	n = fg_detach_unlinked(m.fd[FGM_CTL], why);
	fg_maps_close(&m);
	if (n >= 0) {
		/* off the devices now: unpinning frees a link only later */
		int links = fg_detach_pinned_links(dir, why);

		n = links < 0 ? links : n;
	}
	if (n < 0) {
		pr_warn("detach: %s", why[0] ? why : strerror(-n));
		return n;
	}
	if (n)
		pr_debug("detached floodgate attached through libxdp from %d interface(s)", n);
	return 0;
}

int cli_detach(void *cfg)
{
	const struct cli_args *a = cfg;
	struct fg_meta meta = {};
	char why[FG_WHY_LEN] = "";
	enum fg_daemon_state st;
	struct fg_maps m;
	int err;

	/* a pin dir we cannot vet (other version) may still be removed */
	err = fg_maps_open(&m, a->dir, why);
	if (err == -ENOENT) /* gone or partial: find the filter through its interfaces */
		return cli_detach_found(a);
	if (!err) {
		fg_meta_read(&m, &meta);
		fg_maps_close(&m);
	} else {
		pr_debug("%s", why);
	}
	st = fg_daemon_state(meta.pid);
	if (st != FG_DAEMON_NONE) {
		if (!a->force && st == FG_DAEMON_STOPPED) {
			pr_warn("floodgated (pid %u) is STOPPED (SIGSTOP): continue and stop it "
				"(kill -CONT %u; kill %u), or use --force to kill it and detach",
				meta.pid, meta.pid, meta.pid);
			return 1;
		}
		if (!a->force) {
			pr_warn("floodgated (pid %u) is running: stop it instead (it detaches on exit), "
				"or use --force to stop it and detach",
				meta.pid);
			return 1;
		}
		if (cli_stop_daemon(meta.pid))
			return 1;
		if (access(a->dir, F_OK)) {
			pr_info("floodgated detached and removed %s", a->dir);
			return 0;
		}
	}
	why[0] = 0;
	if (detach_libxdp(a->dir))
		return 1;
	err = fg_pin_dir_remove(a->dir, why);
	if (err) {
		pr_warn("detach: %s", why[0] ? why : strerror(-err));
		return 1;
	}
	warn_leftover_xdp(&meta);
	pr_info("detached and removed %s", a->dir);
	return 0;
}
