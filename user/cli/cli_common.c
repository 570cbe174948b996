// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Helpers shared by the floodgate CLI's commands (see cli.h). */
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>
#include "cli/cli.h"
#include "attach/discover.h"
#include "lib/log.h"
#include "lib/sysutil.h"

/* "floodgated pid 12 still runs it (...)" or "no floodgated runs it" */
static const char *daemon_note(const struct fg_meta *meta, char *buf, size_t len)
{
	if (!fg_daemon_alive(meta->pid))
		snprintf(buf, len, "its daemon (pid %u) is not running", meta->pid);
	else if (fg_daemon_state(meta->pid) == FG_DAEMON_STOPPED)
		snprintf(buf, len,
			 "its daemon, floodgated pid %u, is stopped (SIGSTOP): it cannot "
			 "pin them again until continued",
			 meta->pid);
	else
		snprintf(buf, len,
			 "its daemon, floodgated pid %u, runs and pins them again within a "
			 "second unless it cannot write bpffs (see its log)",
			 meta->pid);
	return buf;
}

/* Discovery, then the filter of the pin dir a->dir, or the one on --interface. */
static int choose_found(const struct cli_args *a, struct fg_found *f, int *n, char *why)
{
	int err = fg_discover(f, why);

	if (err)
		return err;
	return a->iface ? fg_found_choose_iface(f, a->iface, n, why) :
			  fg_found_choose(f, a->dir, n, why);
}

/*
 * The filter on this namespace's interfaces whose pins are gone, for the
 * pin dir a->dir that is missing or incomplete (pin_why: what is missing).
 * -ENOENT, after saying so, when there is none.
 */
static int find_filter(const struct cli_args *a, const char *pin_why, struct fg_found *f, int *n)
{
	char why[FG_WHY_LEN] = "";
	int err;

	err = choose_found(a, f, n, why);
	if (err == -ENOENT && access(a->dir, F_OK))
		pr_warn("no floodgate pin dir at %s, and %s: is floodgated running? "
			"(see --pin-dir, $" FG_PIN_DIR_ENV ")",
			a->dir, why);
	else if (err == -ENOENT)
		pr_warn("%s; and %s", pin_why, why);
	else if (err)
		pr_warn("no usable pin dir at %s, and %s", a->dir, why);
	return err;
}

/* The maps of the filter found, and one line on how they were found. */
static int open_found(const struct cli_args *a, struct fg_found *f, int n, struct fg_maps *m)
{
	char why[FG_WHY_LEN] = "", how[64], note[160];
	const struct fg_found_if *at = &f->at[0];
	struct fg_meta meta = {};
	unsigned int gone;
	int err;

	err = fg_found_maps(at, m, &gone, why);
	if (err) {
		pr_warn("the pin dir %s is %s, and the maps of the floodgate program on %s cannot be "
			"used: %s",
			a->dir, access(a->dir, F_OK) ? "gone" : "incomplete", at->ifname, why);
		return err;
	}
	fg_meta_read(m, &meta);
	pr_warn("the pin dir %s is %s: found floodgate's maps through the XDP program on %s "
		"(ifindex %d, %s)%s%s; %s",
		a->dir, access(a->dir, F_OK) ? "gone" : "incomplete", at->ifname, at->ifindex,
		fg_found_how_str(at, how, sizeof(how)), n > 1 ? ", which also runs on " : "",
		n > 1 ? f->at[1].ifname : "",
		gone ? "its fg_meta and fg_names went with its pins and its daemon: no daemon, "
		       "interfaces or rule names to show" :
		       daemon_note(&meta, note, sizeof(note)));
	return 0;
}

/* CAP_BPF (39) or CAP_SYS_ADMIN (21) in the effective set: the bpf() calls
 * every map command makes (kernel.unprivileged_bpf_disabled refuses them
 * to anyone else). Unknown (no /proc): assume so, and let the call say. */
static bool bpf_capable(void)
{
	unsigned long long eff = 0;
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");
	bool known = false;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1) {
			known = true;
			break;
		}
	if (f)
		fclose(f);
	return !known || (eff >> 39 & 1) || (eff >> 21 & 1);
}

int cli_open_maps(const struct cli_args *a, struct fg_maps *m)
{
	char why[FG_WHY_LEN] = "";
	struct fg_found *f;
	int err, n;

	if (!bpf_capable()) {
		pr_err("'floodgate %s' reads floodgate's BPF maps, which needs root or CAP_BPF: "
		       "run it as root (su -c 'floodgate %s', or sudo floodgate %s where sudo is "
		       "installed)",
		       a->cmd ? a->cmd : "this command", a->cmd ? a->cmd : "...",
		       a->cmd ? a->cmd : "...");
		return -EPERM;
	}
	err = fg_maps_open(m, a->dir, why);

	if (err && err != -ENOENT) {
		pr_warn("%s", why[0] ? why : strerror(-err));
		return err;
	}
	if (!err)
		return 0;
	/* the pin dir is gone or partial: the filter may still run (issue 8) */
	f = malloc(sizeof(*f));
	if (!f) {
		pr_warn("out of memory");
		return -ENOMEM;
	}
	err = find_filter(a, why, f, &n);
	if (!err)
		err = open_found(a, f, n, m);
	free(f);
	return err;
}

int cli_lock_maps(struct fg_maps *m)
{
	int err;

	if (m->dirfd < 0) {
		pr_debug("no pin dir to lock: the maps were found through an interface");
		return 0;
	}
	err = fg_maps_lock(m, 5000);
	if (err)
		pr_warn("cannot lock %s: %s (another floodgate command or a reload is running)",
			m->dir, strerror(-err));
	return err;
}

/* SIGTERM the daemon; wait (5 s) for it unless it is stopped. */
/* Detach every interface of the filter; how many are still attached. */
static int detach_found(struct fg_found *f, int n)
{
	char why[FG_WHY_LEN], how[64];
	int left = 0;

	for (int i = 0; i < n; i++) {
		const struct fg_found_if *at = &f->at[i];
		int err;

		why[0] = 0;
		err = fg_found_detach(at, why);
		/* gone meanwhile (the daemon detached on SIGTERM): that is detached too */
		if (err == -ENOENT || err == -ESTALE)
			err = 0;
		if (err)
			pr_warn("detach: %s", why[0] ? why : strerror(-err));
		else
			pr_info("%s: floodgate detached (%s)", at->ifname,
				fg_found_how_str(at, how, sizeof(how)));
		left += err != 0;
	}
	return left;
}

/* Interfaces still running the filter whose fg_ctl had ctl_id. */
static int still_attached(__u32 ctl_id)
{
	struct fg_found f;
	int left = 0;

	if (fg_discover(&f, NULL))
		return 0;
	for (int i = 0; i < f.n; i++)
		if (f.at[i].ctl_id == ctl_id) {
			pr_warn("%s: floodgate (program %u) is still attached", f.at[i].ifname,
				f.at[i].prog_id);
			left++;
		}
	return left;
}

/* What is left of the pin dir, if anything. */
static int remove_rest(const struct cli_args *a)
{
	char why[FG_WHY_LEN] = "";
	int err;

	if (access(a->dir, F_OK))
		return 0;
	err = fg_pin_dir_remove(a->dir, why);
	if (err)
		pr_warn("detach: %s", why[0] ? why : strerror(-err));
	else
		pr_info("removed what was left of %s", a->dir);
	return err;
}

int cli_detach_found(const struct cli_args *a)
{
	char why[FG_WHY_LEN] = "";
	struct fg_meta meta = {};
	struct fg_found *f = malloc(sizeof(*f));
	struct fg_maps m;
	__u32 ctl_id;
	int n, err, left;

	if (!f) {
		pr_warn("detach: out of memory");
		return 1;
	}
	err = choose_found(a, f, &n, why);
	if (err) {
		bool other = f->n > 0; /* filters that are not this pin dir's */

		free(f);
		if (access(a->dir, F_OK)) {
			pr_warn("nothing to detach: no pin dir at %s, and %s", a->dir, why);
			return 1;
		}
		if (other)
			pr_warn("%s", why);
		return remove_rest(a) ? 1 : 0; /* a partial pin dir, no filter of its own */
	}
	if (!fg_found_maps(&f->at[0], &m, NULL, why)) {
		fg_meta_read(&m, &meta);
		fg_maps_close(&m);
	} else {
		pr_debug("%s", why);
	}
	ctl_id = f->at[0].ctl_id;
	pr_warn("the pin dir %s is %s: detaching the floodgate filter found on %s", a->dir,
		access(a->dir, F_OK) ? "gone" : "incomplete", f->at[0].ifname);
	if (fg_daemon_alive(meta.pid)) {
		if (!a->force) {
			pr_warn("floodgated (pid %u) still runs that filter: stop it, or use --force to "
				"stop it and detach",
				meta.pid);
			free(f);
			return 1;
		}
		if (cli_stop_daemon(meta.pid)) { /* leaves no signal pending */
			free(f);
			return 1;
		}
	}
	left = detach_found(f, n);
	free(f);
	err = remove_rest(a);
	left += still_attached(ctl_id);
	if (left || err)
		return 1;
	pr_info("detached: no floodgate XDP program is left on the interfaces it ran on");
	return 0;
}

const char *cli_who(char *buf, size_t len)
{
	const char *sudo = getenv("SUDO_USER");
	struct passwd *pw = getpwuid(getuid());
	const char *login = getlogin();

	snprintf(buf, len, "uid %u (%s)%s%s", getuid(), pw ? pw->pw_name : "?",
		 sudo  ? " via sudo by " :
		 login ? " login " :
			 "",
		 sudo  ? sudo :
		 login ? login :
			 "");
	return buf;
}

void cli_fmt_num(char *buf, size_t len, double v)
{
	static const char *suf[] = { "", "k", "M", "G", "T", "P" };
	int i = 0;

	if (!cli_tty()) { /* a script reads it: exact */
		snprintf(buf, len, "%.0f", v);
		return;
	}
	while (v >= 10000 && i < 5) {
		v /= 1000;
		i++;
	}
	if (i)
		snprintf(buf, len, "%.1f%s", v, suf[i]);
	else
		snprintf(buf, len, "%.0f", v);
}

const char *cli_row_name(const struct fg_name *names, int row)
{
	if (row == FG_ROW_GLOBAL)
		return "_global";
	return names[row].in_use ? names[row].name : NULL;
}

const char *cli_rule_name(const struct fg_name *names, __u16 id, __u16 gen)
{
	if (id < FG_MAX_IDS && names[id].in_use && names[id].gen == gen)
		return names[id].name;
	return NULL;
}

const char *cli_action_str(__u8 action)
{
	return action == FG_ACT_PASS ? "pass" : action == FG_ACT_DROP ? "drop" : "limit";
}

const char *cli_mode_str(__u32 mode)
{
	return mode == FG_MODE_SHADOW ? "shadow" : "enforce";
}

void cli_json_add(int *err, struct json_object *obj, const char *key, struct json_object *val)
{
	if (*err || !obj || !val || json_object_object_add(obj, key, val)) {
		json_object_put(val);
		*err = -ENOMEM;
	}
}

void cli_json_add_null(int *err, struct json_object *obj, const char *key)
{
	/* json-c's null is the NULL object */
	if (*err || !obj || json_object_object_add(obj, key, NULL))
		*err = -ENOMEM;
}

void cli_json_push(int *err, struct json_object *arr, struct json_object *val)
{
	if (*err || !arr || !val || json_object_array_add(arr, val)) {
		json_object_put(val);
		*err = -ENOMEM;
	}
}

int cli_json_print(struct json_object *obj, int err)
{
	const char *s;

	if (!obj)
		return -ENOMEM;
	s = err ? NULL :
		  json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
							      JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!err && !s)
		err = -ENOMEM;
	if (!err && printf("%s\n", s) < 0)
		err = -EIO;
	json_object_put(obj);
	return err;
}

/* --- 80 columns ----------------------------------------------------------------- */

static FILE *wrap_real; /* stdout while cli_wrap_begin captures it */
static char *wrap_buf;
static size_t wrap_len;

int cli_width(void)
{
	static int width;
	const char *env = getenv("COLUMNS");
	char *end;
	long v;

	if (width)
		return width;
	width = 80;
	if (env && *env) {
		v = strtol(env, &end, 10);
		if (!*end && v >= 40 && v <= 1000)
			width = (int)v;
	}
	return width;
}

bool cli_tty(void)
{
	return isatty(wrap_real ? fileno(wrap_real) : STDOUT_FILENO);
}

/* One line of at most width columns per output line: a longer one breaks at
 * its last space that fits, and goes on indented 4 past where it started. */
static void wrap_line(FILE *out, const char *l, size_t n, int width)
{
	size_t indent = strspn(l, " "), at = 0;
	bool first = true;

	while (n - at > (size_t)width - (first ? 0 : indent + 4)) {
		size_t room = (size_t)width - (first ? 0 : indent + 4), cut = room;

		while (cut > indent && l[at + cut] != ' ')
			cut--;
		if (cut <= (first ? indent : 0)) /* one long word: leave it whole */
			break;
		fprintf(out, "%*s%.*s\n", first ? 0 : (int)indent + 4, "", (int)cut, l + at);
		at += cut;
		at += strspn(l + at, " ");
		first = false;
	}
	fprintf(out, "%*s%.*s\n", first ? 0 : (int)indent + 4, "", (int)(n - at), l + at);
}

void cli_wrap(FILE *out, const char *text, size_t len, int width)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		wrap_line(out, p, n, width);
		p += n + 1;
	}
}

int cli_wrap_begin(void)
{
	FILE *mem = open_memstream(&wrap_buf, &wrap_len);

	if (!mem)
		return -errno;
	fflush(stdout);
	wrap_real = stdout;
	stdout = mem; /* glibc's stdout is an assignable FILE * */
	return 0;
}

void cli_wrap_end(void)
{
	if (!wrap_real)
		return;
	fclose(stdout);
	stdout = wrap_real;
	wrap_real = NULL;
	cli_wrap(stdout, wrap_buf, wrap_len, CLI_WIDTH);
	free(wrap_buf);
	wrap_buf = NULL;
	wrap_len = 0;
}
