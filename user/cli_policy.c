// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* floodgate check, reload and detach: the policy file and the pin dir's lifetime. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cli.h"
#include "log.h"
#include "policy.h"
#include "sysutil.h"

#define WAIT_STEP_US	50000	/* reload, detach --force: poll every 50 ms ... */
#define WAIT_STEPS	100	/* ... for 5 s */

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

int cli_check(void *cfg)
{
	const struct cli_args *a = cfg;
	struct fg_config *c = calloc(1, sizeof(*c));
	char msg[1024];

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
	fg_config_free(c);
	free(c);
	return 0;
}

/* The daemon's file must compile here first: the error is where the operator is. */
static int reload_precheck(const struct fg_meta *meta)
{
	struct fg_config *c;
	char msg[1024];

	if (!meta->config[0])
		return 0;
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

/* SIGHUP the daemon and wait for a policy version other than v0. */
static int reload_signal(struct fg_maps *m, const struct fg_meta *meta, struct fg_policy *pol)
{
	__u64 v0 = pol->version;

	if (kill((pid_t)meta->pid, SIGHUP)) {
		int err = -errno;

		pr_warn("cannot signal floodgated pid %u: %s", meta->pid, strerror(-err));
		return err;
	}
	for (int i = 0; i < WAIT_STEPS; i++) {
		usleep(WAIT_STEP_US);
		if (!fg_policy_read_active(m, pol) && pol->version != v0) {
			printf("reloaded %s: policy version %llu\n", meta->config,
			       (unsigned long long)pol->version);
			return 0;
		}
	}
	pr_warn("floodgated (pid %u) did not apply a new policy within 5 s; see its log "
		"(journalctl -u floodgated)", meta->pid);
	return -ETIMEDOUT;
}

int cli_reload(void *cfg)
{
	const struct cli_args *a = cfg;
	struct fg_policy *pol = malloc(sizeof(*pol));
	struct fg_meta meta;
	struct fg_maps m;
	int err = -EINVAL;

	if (!pol || cli_open_maps(a, &m)) {
		free(pol);
		return 1;
	}
	if (fg_meta_read(&m, &meta) || fg_policy_read_active(&m, pol)) {
		pr_warn("reading %s failed", a->dir);
		goto out;
	}
	if (!fg_daemon_alive(meta.pid)) {
		pr_warn("floodgated is not running for %s: nothing to reload "
			"(start it, e.g. systemctl start floodgated)", a->dir);
		goto out;
	}
	meta.config[sizeof(meta.config) - 1] = 0;
	err = reload_precheck(&meta);
	if (!err)
		err = reload_signal(&m, &meta, pol);
out:
	free(pol);
	fg_maps_close(&m);
	return err ? 1 : 0;
}

/* detach --force: SIGTERM the daemon, which detaches by itself on exit. */
static int stop_daemon(__u32 pid)
{
	kill((pid_t)pid, SIGTERM);
	for (int i = 0; i < WAIT_STEPS && fg_daemon_alive(pid); i++)
		usleep(WAIT_STEP_US);
	if (fg_daemon_alive(pid)) {
		pr_warn("floodgated (pid %u) did not exit within 5 s", pid);
		return -ETIMEDOUT;
	}
	return 0;
}

/* After removing the pin dir: anything still attached is not ours to remove. */
static void warn_leftover_xdp(const struct fg_meta *meta)
{
	for (__u32 i = 0; i < meta->n_ifs && i < FG_MAX_IFS; i++) {
		__u32 prog_id = 0;

		if (!bpf_xdp_query_id(meta->ifs[i].ifindex, 0, &prog_id) && prog_id)
			pr_warn("%.16s: an XDP program (id %u) is still attached: not floodgate's "
				"pinned link, or held open by another process", meta->ifs[i].name, prog_id);
	}
}

int cli_detach(void *cfg)
{
	const struct cli_args *a = cfg;
	struct fg_meta meta = {};
	char why[FG_WHY_LEN] = "";
	struct fg_maps m;
	int err;

	/* a pin dir we cannot vet (other version) may still be removed */
	err = fg_maps_open(&m, a->dir, why);
	if (err == -ENOENT)	/* gone or partial: find the filter through its interfaces */
		return cli_detach_found(a);
	if (!err) {
		fg_meta_read(&m, &meta);
		fg_maps_close(&m);
	} else {
		pr_debug("%s", why);
	}
	if (fg_daemon_alive(meta.pid)) {
		if (!a->force) {
			pr_warn("floodgated (pid %u) is running: stop it instead (it detaches on exit), "
				"or use --force to stop it and detach", meta.pid);
			return 1;
		}
		if (stop_daemon(meta.pid))
			return 1;
		if (access(a->dir, F_OK)) {
			pr_info("floodgated detached and removed %s", a->dir);
			return 0;
		}
	}
	why[0] = 0;
	err = fg_pin_dir_remove(a->dir, why);
	if (err) {
		pr_warn("detach: %s", why[0] ? why : strerror(-err));
		return 1;
	}
	warn_leftover_xdp(&meta);
	pr_info("detached and removed %s", a->dir);
	return 0;
}
