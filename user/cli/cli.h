/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The floodgate CLI's commands, by group: cli_status.c (status),
 * cli_stats.c (stats, top), cli_switch.c (mode, bypass), cli_shed.c (shed), cli_policy.c
 * (check, reload, detach), cli_lists.c (allow, deny), cli_conn.c (the
 * concurrency caps' part of top and status); the helpers they share are in cli_common.c, the
 * command table and the option tables in floodgate.c.
 *
 * Each command returns the process's exit status: 0 ok, 1 runtime failure,
 * 2 (FG_EXIT_USAGE) bad usage. Commands are the CLI's top level: they log.
 */
#ifndef FG_CLI_H
#define FG_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "floodgate.h"
#include "maps/fgmaps.h"

struct json_object;

/* Every option of every command; each command's table says which it takes. */
struct cli_args {
	const char *pin_dir; /* --pin-dir; NULL: $FLOODGATE_PIN_DIR or the default */
	bool verbose;
	bool json;	     /* stats, top, status, check, kernel, lists */
	bool quiet;	     /* check --quiet: nothing when the file is good */
	bool watch;	     /* stats --watch */
	__u64 watch_secs;    /* stats --watch SECS (default 1) */
	__u64 top_n;	     /* top -n (default 10) */
	const char *rule;    /* mode --rule */
	bool bypass_for;     /* bypass --for given */
	__u64 bypass_ns;     /* its duration */
	bool force;	     /* detach --force */
	bool rt_for;	     /* allow/deny add --for given */
	__u64 rt_ns;	     /* its duration */
	const char *comment; /* allow/deny add --comment */
	const char *pos[2];  /* positional words */
	int npos;
	const char *dir;      /* the pin dir in use */
	const char *iface;    /* --interface: discovery picks the filter on it */
	const char *cmd;      /* the command's name, for messages */
	int cols[FG_OUT_MAX]; /* stats -o: the outcomes to show, in order */
	int ncols;	      /* 0: those that happened */
};

int cli_status(void *cfg);
int cli_stats(void *cfg);
int cli_top(void *cfg);
int cli_mode(void *cfg);
int cli_bypass(void *cfg);
int cli_shed(void *cfg);
int cli_check(void *cfg);
int cli_verified(void *cfg);
struct fg_maps;
struct fg_policy;
/* The syn_auth part of status (cli_synauth.c); text prints nothing while
 * the policy has no syn_auth and nothing was ever answered. */
void cli_synauth_status_text(struct fg_maps *m, const struct fg_policy *pol, const char *dir);
struct json_object *cli_synauth_status_json(struct fg_maps *m, const struct fg_policy *pol,
					    const char *dir, int *err);
int cli_reload(void *cfg);
int cli_detach(void *cfg);
int cli_allow(void *cfg);
int cli_deny(void *cfg);
int cli_kernel(void *cfg);

/* --- cli_kernel.c: what this kernel allows (lib/kfeat.h) --- */
struct fg_kfeat;
struct fg_config;
/* all: every item, else only the refused ones */
void cli_kernel_text(FILE *f, const struct fg_kfeat *kf, bool all);
struct json_object *cli_kernel_json(const struct fg_kfeat *kf, int *err);
/* A policy's features here (policy/policy_kernel.h); returns how many cannot run. */
int cli_needs_text(FILE *f, const struct fg_config *cfg, const struct fg_kfeat *kf);
struct json_object *cli_needs_json(const struct fg_config *cfg, const struct fg_kfeat *kf,
				   int *err);

/* --- cli_conn.c: the concurrency caps in top and status --- */
void cli_conn_top_text(const struct cli_args *a, const struct fg_name *names);
void cli_conn_top_json(const struct cli_args *a, const struct fg_name *names,
		       struct json_object *root, int *err);
void cli_conn_status_text(const struct cli_args *a, const struct fg_name *names);
struct json_object *cli_conn_status_json(const struct cli_args *a, const struct fg_name *names,
					 int *err);

/* --- cli_common.c --- */

/* Open the pin dir's maps; logs why not. When the pin dir is missing or
 * incomplete, the maps of the floodgate program on an interface of this
 * network namespace instead (discover.h), saying so; m->dirfd is then -1. */
int cli_open_maps(const struct cli_args *a, struct fg_maps *m);
/* Take the pin dir's lock (5 s); logs why not. No pin dir (maps found
 * through an interface): nothing to lock, 0. */
int cli_lock_maps(struct fg_maps *m);
/* detach without a (complete) pin dir: remove the floodgate program found
 * on this namespace's interfaces, SIGTERM its live daemon (--force), and
 * what is left of the pin dir; the exit status. */
int cli_detach_found(const struct cli_args *a);
/* detach --force: stop floodgated pid so that no signal is left pending
 * (SIGTERM, SIGKILL if it stops or does not exit; SIGKILL at once if
 * stopped); 0 once it is gone. */
int cli_stop_daemon(__u32 pid);
/* "uid 0 (root) via sudo by alice", for the audit log */
const char *cli_who(char *buf, size_t len);
/* 12345 -> "12345", 123456 -> "123.5k" */
void cli_fmt_num(char *buf, size_t len, double v);
/* A stats row's name: "_global", the rule's, or NULL for an unused id. */
const char *cli_row_name(const struct fg_name *names, int row);
/* The rule holding (id, gen), or NULL. */
const char *cli_rule_name(const struct fg_name *names, __u16 id, __u16 gen);
const char *cli_action_str(__u8 action);
const char *cli_mode_str(__u32 mode);

/*
 * JSON output through json-c. cli_json_add and cli_json_push take ownership
 * of val; a NULL val (json-c's allocation failed) or an earlier failure
 * leaves -ENOMEM in *err, so a builder checks once, at the end.
 */
void cli_json_add(int *err, struct json_object *obj, const char *key, struct json_object *val);
void cli_json_add_null(int *err, struct json_object *obj, const char *key);
void cli_json_push(int *err, struct json_object *arr, struct json_object *val);
/* Print obj as one line to stdout and release it; 0 or -ENOMEM/-EIO. */
int cli_json_print(struct json_object *obj, int err);

/*
 * 80 columns. cli_wrap writes text with each line longer than width broken
 * at spaces, continued 4 columns further in than it started. cli_wrap_begin
 * captures stdout until cli_wrap_end, which writes it wrapped at CLI_WIDTH:
 * 80 columns, or $COLUMNS when that is set (40 to 1000, as ls and ps take it):
 * for commands whose lines are printed all over (status). cli_tty: stdout
 * (the real one while captured) is a terminal.
 */
#define CLI_WIDTH cli_width()
int cli_width(void);
void cli_wrap(FILE *out, const char *text, size_t len, int width);
int cli_wrap_begin(void);
void cli_wrap_end(void);
bool cli_tty(void);

#endif /* FG_CLI_H */
