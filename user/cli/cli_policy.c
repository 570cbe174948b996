// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* floodgate check, reload and detach: the policy file and the pin dir's lifetime. */
#include <errno.h>
#include <limits.h>
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
#include "lib/safefile.h"
#include "lib/sysutil.h"
#include <json-c/json.h>
#include "maps/fgmaps.h"
#include "maps/pdigest.h"
#include "maps/startstate.h"
#include "lists/escalate.h"
#include "shed/shedstate.h"
#include "policy/policy_kernel.h"

#define WAIT_STEP_MS   50    /* reload, detach --force: look every 50 ms */
#define RELOAD_WAIT_MS 60000 /* reload: the daemon's answer, at most */
#define RELOAD_NOTE_MS 5000  /* ... and a note that it waits after this */
#define STOP_WAIT_S    10    /* detach --force: SIGTERM, then SIGKILL */
#define STOP_WAIT_MS   (STOP_WAIT_S * 1000)
#define KILL_WAIT_MS   5000 /* after SIGKILL */
#define STR_(x)	       #x
#define STR(x)	       STR_(x)

/* --- check ---------------------------------------------------------------------- */

/* Line n (1-based) of path, without its newline, into buf; false if there is none. */
static bool source_line(const char *path, int n, char *buf, size_t len)
{
	FILE *f = n > 0 ? fg_fopen_regular(path, NULL) : NULL;
	bool found = false;

	for (int i = 1; f && fgets(buf, (int)len, f); i++) {
		size_t l = strlen(buf);
		bool whole = l && buf[l - 1] == '\n';

		if (i == n) {
			buf[strcspn(buf, "\r\n")] = 0;
			found = true;
			break;
		}
		while (!whole && fgets(buf, (int)len, f)) /* the rest of a long line */
			whole = (l = strlen(buf)) && buf[l - 1] == '\n';
	}
	if (f)
		fclose(f);
	return found;
}

/* As `nft -c` does: the offending line, and a caret under the column with a
 * tilde under the rest of its word. */
static void show_source(FILE *f, const char *path, int line, int col)
{
	char buf[512];
	int w = 1;

	if (!source_line(path, line, buf, sizeof(buf)) || col < 1 || col > (int)strlen(buf) + 1)
		return;
	for (const char *p = buf + col; *p && !strchr(" \t,:{}[]", *p); p++)
		w++;
	fprintf(f, "  %s\n  ", buf);
	for (int i = 1; i < col; i++)
		fputc(buf[i - 1] == '\t' ? '\t' : ' ', f);
	fputc('^', f);
	for (int i = 1; i < w; i++)
		fputc('~', f);
	fputc('\n', f);
}

/* Load path into cfg as the daemon would on this kernel (the SYN way and
 * what follows from it); on failure e says where and why. */
static int load_policy_at(const char *path, struct fg_config *cfg, struct fg_err *e)
{
	int err;

	memset(e, 0, sizeof(*e));
	err = fg_config_load(path, cfg, e);
	if (!err)
		fg_policy_kernel_fill(cfg, fg_kfeat_get());
	return err;
}

/* The error the way an operator reads it: file:line:col: why, the line, a caret. */
static void print_load_error(FILE *f, const struct fg_err *e)
{
	char msg[1024];

	fg_err_format(e, msg, sizeof(msg));
	if (isatty(fileno(f))) /* a terminal's 80 columns; a script gets one line */
		cli_wrap(f, msg, strlen(msg), CLI_WIDTH);
	else
		fprintf(f, "%s\n", msg);
	if (e->line > 0)
		show_source(f, e->file, e->line, e->col);
}

/* The IPv4 lists as apply will build them (mapimg.h); NULL after saying why. */
static struct fg_dir4_img *build_dir4(const struct fg_config *c)
{
	struct fg_dir4_img *img = malloc(sizeof(*img));
	int err = img ? fg_dir4_build(c->pfx, c->n_pfx, img) : -ENOMEM;

	if (err) {
		pr_err("check: building the IPv4 lists: %s", strerror(-err));
		free(img);
		return NULL;
	}
	return img;
}

/* What the policy's tables take in memory, in bytes. */
struct check_mem {
	__u64 src4, src6; /* the source tables: fg_src4 and fg_src6 */
	__u64 lists4;	  /* the IPv4 lists' blocks and /16 directory, one policy slot */
};

static void check_memory(const struct fg_config *c, const struct fg_dir4_img *img,
			 struct check_mem *m)
{
	m->src4 = (__u64)fg_src4_sets(c->max_sources) * sizeof(struct fg_set4);
	m->src6 = (__u64)fg_src6_sets(c->max_sources) * sizeof(struct fg_set6);
	m->lists4 = (__u64)img->nblk * sizeof(struct fg_blk4) + sizeof(struct fg_dir4);
}

/* 1536 -> "1.5 KB", 25165824 -> "24 MB" (binary units, as the kernel's memlock is) */
static const char *mem_str(__u64 b, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KB", "MB", "GB" };
	double v = (double)b;
	int u = 0;

	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, v < 10 && u ? "%.1f %s" : "%.0f %s", v, unit[u]);
	return buf;
}

static void check_text_tables(const struct fg_config *c, const struct fg_dir4_img *img)
{
	struct check_mem m;
	char a[32], b[32], l[32], line[512];

	check_memory(c, img, &m);
	printf("tables (memory in the kernel):\n");
	printf("  sources    %llu per family: IPv4 %s, IPv6 %s\n",
	       (unsigned long long)c->max_sources, mem_str(m.src4, a, sizeof(a)),
	       mem_str(m.src6, b, sizeof(b)));
	printf("  lists      %zu allow and deny prefixes; IPv4 in %u blocks, %s for each of the "
	       "2 policy slots\n",
	       c->n_pfx, img->nblk, mem_str(m.lists4, l, sizeof(l)));
	if (fg_dir4_img_fallback(img)) {
		fg_dir4_describe(img, line, sizeof(line));
		printf("  note       %s\n", line);
	}
}

static void print_warnings(FILE *f, const struct fg_config *c)
{
	for (int i = 0; i < c->n_warn && i < FG_MAX_WARN; i++) {
		fprintf(f, "%s:%d:%d: warning: %s\n", c->path, c->warn[i].line, c->warn[i].col,
			c->warn[i].msg);
		show_source(f, c->path, c->warn[i].line, c->warn[i].col);
	}
	if (c->n_warn > FG_MAX_WARN)
		fprintf(f, "%s: %d more warnings\n", c->path, c->n_warn - FG_MAX_WARN);
}

/* {"rate": n, "burst": n, "unit": "packets"|"bytes", "refill_s": n} or null */
static struct json_object *limit_json(const struct fg_limit_src *l, const struct fg_limit *cl,
				      int bytes, int *err)
{
	struct json_object *o;

	if (!l->set)
		return NULL;
	o = json_object_new_object();
	cli_json_add(err, o, "rate", json_object_new_double(l->rate));
	cli_json_add(err, o, "burst", json_object_new_double(l->burst));
	cli_json_add(err, o, "unit", json_object_new_string(bytes ? "bytes" : "packets"));
	cli_json_add(err, o, "refill_s",
		     json_object_new_double((double)cl->tau / (double)FG_TU_PER_SEC));
	return o;
}

static void add_limit(int *err, struct json_object *o, const char *key,
		      const struct fg_limit_src *l, const struct fg_limit *cl, int bytes)
{
	struct json_object *v = limit_json(l, cl, bytes, err);

	if (v)
		cli_json_add(err, o, key, v);
	else
		cli_json_add_null(err, o, key);
}

static struct json_object *rules_json(const struct fg_config *c, int *err)
{
	struct json_object *arr = json_object_new_array();

	for (__u32 r = 0; r < c->pol.nrules && r < FG_MAX_RULES; r++) {
		const struct fg_rule *ru = &c->pol.rules[r];
		const struct fg_rule_src *rs = &c->rules[r];
		struct json_object *o = json_object_new_object();
		int bytes = ru->cost == FG_COST_BYTES;

		cli_json_add(err, o, "name", json_object_new_string(rs->name));
		cli_json_add(err, o, "action", json_object_new_string(cli_action_str(ru->action)));
		cli_json_add(err, o, "mode", json_object_new_string(cli_mode_str(ru->mode)));
		cli_json_add(err, o, "implicit", json_object_new_boolean(rs->implicit));
		cli_json_add(err, o, "prefix_v4", json_object_new_int(rs->plen4));
		cli_json_add(err, o, "prefix_v6", json_object_new_int(rs->plen6));
		add_limit(err, o, "per_source", &rs->per_source, &ru->src, bytes);
		add_limit(err, o, "aggregate", &rs->aggregate, &ru->agg, bytes);
		cli_json_add(err, o, "concurrency", json_object_new_uint64(ru->conn_cap));
		cli_json_add(err, o, "fleet", json_object_new_boolean(ru->fleet));
		cli_json_add(err, o, "escalate", json_object_new_boolean(c->esc[r].set));
		cli_json_add(err, o, "syn_auth", json_object_new_boolean(c->syn_auth[r]));
		cli_json_push(err, arr, o);
	}
	return arr;
}

/* The syn_auth: section, null when no rule authenticates; "way" as asked,
 * the way this kernel gives is in "kernel" */
static struct json_object *synauth_json(const struct fg_config *c, int *err)
{
	const struct fg_synauth_conf *s = &c->syn;
	struct json_object *o;

	if (!s->nrules)
		return NULL;
	o = json_object_new_object();
	cli_json_add(err, o, "rules", json_object_new_int(s->nrules));
	cli_json_add(err, o, "way", json_object_new_string(fg_syn_way_names[s->way]));
	cli_json_add(err, o, "verified_for_s", json_object_new_double(s->verified_for_ns / 1e9));
	cli_json_add(err, o, "max_verified", json_object_new_uint64(s->max_verified));
	cli_json_add(err, o, "reply_rate", json_object_new_double(s->reply_src.rate));
	cli_json_add(err, o, "reply_burst", json_object_new_double(s->reply_src.burst));
	cli_json_add(err, o, "reply_per_prefix", json_object_new_double(s->per_prefix_src.rate));
	cli_json_add(err, o, "reply_per_prefix_burst",
		     json_object_new_double(s->per_prefix_src.burst));
	cli_json_add(err, o, "prefix_v4", json_object_new_int(s->prefix_v4));
	cli_json_add(err, o, "prefix_v6", json_object_new_int(s->prefix_v6));
	return o;
}

static struct json_object *warnings_json(const struct fg_config *c, int *err)
{
	struct json_object *arr = json_object_new_array();

	for (int i = 0; i < c->n_warn && i < FG_MAX_WARN; i++) {
		struct json_object *o = json_object_new_object();

		cli_json_add(err, o, "line", json_object_new_int(c->warn[i].line));
		cli_json_add(err, o, "col", json_object_new_int(c->warn[i].col));
		cli_json_add(err, o, "message", json_object_new_string(c->warn[i].msg));
		cli_json_push(err, arr, o);
	}
	return arr;
}

/* {"file", "ok": true, "warnings", "interfaces", "mode", "max_sources", "rules",
 *  "memory": {"src4_bytes", "src6_bytes", "lists4_bytes"}, "kernel": [...],
 *  "error": null}; the schema is in floodgate(8), JSON OUTPUT */
static int check_json_ok(const struct fg_config *c, const struct fg_dir4_img *img, int bad)
{
	struct json_object *root = json_object_new_object(), *ifs = json_object_new_array();
	struct json_object *mem = json_object_new_object();
	struct check_mem m;
	int err = 0;

	check_memory(c, img, &m);
	cli_json_add(&err, root, "file", json_object_new_string(c->path));
	cli_json_add(&err, root, "ok", json_object_new_boolean(!bad));
	cli_json_add_null(&err, root, "error");
	cli_json_add(&err, root, "warnings", warnings_json(c, &err));
	for (int i = 0; i < c->n_ifs; i++)
		cli_json_push(&err, ifs, json_object_new_string(c->ifaces[i]));
	cli_json_add(&err, root, "interfaces", ifs);
	cli_json_add(&err, root, "mode", json_object_new_string(cli_mode_str((__u32)c->mode)));
	cli_json_add(&err, root, "max_sources", json_object_new_uint64(c->max_sources));
	cli_json_add(&err, root, "rules", rules_json(c, &err));
	if (c->syn.nrules)
		cli_json_add(&err, root, "syn_auth", synauth_json(c, &err));
	else
		cli_json_add_null(&err, root, "syn_auth");
	cli_json_add(&err, mem, "src4_bytes", json_object_new_uint64(m.src4));
	cli_json_add(&err, mem, "src6_bytes", json_object_new_uint64(m.src6));
	cli_json_add(&err, mem, "lists4_bytes", json_object_new_uint64(m.lists4));
	cli_json_add(&err, root, "memory", mem);
	cli_json_add(&err, root, "kernel", cli_needs_json(c, fg_kfeat_get(), &err));
	return cli_json_print(root, err);
}

/* {"file", "ok": false, "error": {"line", "col", "message", "source"}, ...} */
static int check_json_error(const char *path, const struct fg_err *e)
{
	struct json_object *root = json_object_new_object(), *o = json_object_new_object();
	char src[512];
	int err = 0;

	cli_json_add(&err, root, "file", json_object_new_string(path));
	cli_json_add(&err, root, "ok", json_object_new_boolean(false));
	cli_json_add(&err, o, "line", json_object_new_int(e->line));
	cli_json_add(&err, o, "col", json_object_new_int(e->col));
	cli_json_add(&err, o, "message", json_object_new_string(e->msg));
	if (e->line > 0 && source_line(e->file, e->line, src, sizeof(src)))
		cli_json_add(&err, o, "source", json_object_new_string(src));
	else
		cli_json_add_null(&err, o, "source");
	cli_json_add(&err, root, "error", o);
	return cli_json_print(root, err);
}

/* How many of the policy's features this kernel cannot run (policy_kernel.h). */
static int needs_unavailable(const struct fg_config *c)
{
	struct fg_need nd[FG_NEEDS_MAX];
	int n = fg_policy_kernel_needs(c, fg_kfeat_get(), nd), bad = 0;

	for (int i = 0; i < n; i++)
		bad += nd[i].state == FG_NEED_UNAVAILABLE;
	return bad;
}

int cli_check(void *cfg)
{
	const struct cli_args *a = cfg;
	struct fg_config *c = calloc(1, sizeof(*c));
	struct fg_dir4_img *img = NULL;
	struct fg_err e;
	int err = 0, bad;

	if (!c) {
		pr_err("check: out of memory");
		return 1;
	}
	if (load_policy_at(a->pos[0], c, &e)) {
		if (a->json)
			check_json_error(a->pos[0], &e);
		else
			print_load_error(stderr, &e);
		free(c);
		return 1;
	}
	img = build_dir4(c);
	if (!img) {
		fg_config_free(c);
		free(c);
		return 1;
	}
	/* what floodgated would refuse on this machine's kernel */
	bad = needs_unavailable(c);
	if (a->json) {
		err = check_json_ok(c, img, bad);
	} else {
		print_warnings(stderr, c);
		if (!a->quiet || bad) {
			/* -v: the compiled figures, a line each for scripts that read them */
			if (!a->verbose)
				cli_wrap_begin();
			if (!a->quiet) {
				fg_config_print(stdout, c, a->verbose);
				check_text_tables(c, img);
			}
			cli_needs_text(stdout, c, fg_kfeat_get());
			cli_wrap_end();
		}
	}
	fg_dir4_img_free(img);
	free(img);
	fg_config_free(c);
	free(c);
	return err || bad ? 1 : 0;
}

/* The daemon's file must compile here first: the error is where the operator is. */
static int reload_precheck(const struct fg_meta *meta)
{
	struct fg_err e;
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
	if (load_policy_at(meta->config, c, &e)) {
		fg_err_format(&e, msg, sizeof(msg));
		pr_err("%s", msg);
		if (e.line > 0)
			show_source(stderr, e.file, e.line, e.col);
		pr_err("not reloading: the running policy stays");
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
	pr_err("floodgated (pid %u) refused the reload: %s", meta->pid,
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
		pr_info("floodgated (pid %u) is still applying the reload (a large policy "
			"takes a while; the old one enforces until then); waiting up to %d s",
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
		pr_err("cannot signal floodgated pid %u: %s", p->pid, strerror(-err));
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
			pr_err("floodgated (pid %u) exited before it finished the reload: see its "
			       "log (journalctl -u floodgated); the policy in force is in "
			       "'floodgate status'",
			       p->pid);
			return -ESRCH;
		}
		if (waited >= RELOAD_WAIT_MS) {
			pr_err("floodgated (pid %u) did not finish the reload within %d s: it may "
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
		pr_err("floodgated is not running for %s: nothing to reload "
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

/* The pin dir's state files in the run dir (a daemon removes its own on
 * exit; one that was SIGKILLed left them): they name a pin dir that is
 * gone, and a later pin dir of the same path must not read them. */
static void remove_state_files(const char *dir)
{
	char path[3][PATH_MAX];

	fg_start_state_path(dir, path[0], sizeof(path[0]));
	fg_escd_state_path(dir, path[1], sizeof(path[1]));
	fg_shedd_state_path(getenv("FLOODGATE_RUN_DIR"), dir, path[2], sizeof(path[2]));
	fg_pdigest_forget(dir);
	for (int i = 0; i < 3; i++)
		if (unlink(path[i]) && errno != ENOENT)
			pr_warn("detach: %s: %s", path[i], strerror(errno));
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
	remove_state_files(a->dir);
	warn_leftover_xdp(&meta);
	pr_info("detached and removed %s", a->dir);
	return 0;
}
