// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * What this kernel allows (lib/kfeat.h), for `floodgate kernel` and the
 * kernel parts of `status` and `check`: each item, and for a policy each
 * feature it uses, the way it takes here or why it cannot run.
 */
#include <stdio.h>
#include <json-c/json.h>
#include "cli/cli.h"
#include "lib/kfeat.h"
#include "policy/policy_kernel.h"

void cli_kernel_text(FILE *f, const struct fg_kfeat *kf, bool all)
{
	char why[512];

	fprintf(f, "kernel:    %s\n", kf->release);
	for (int i = 0; i < FG_KF_MAX; i++) {
		if (kf->f[i].ok && !all)
			continue;
		fprintf(f, "  %-13s %-3s %s%s%s\n", fg_kf_names[i], kf->f[i].ok ? "yes" : "no",
			fg_kf_desc[i], kf->f[i].ok ? "" : ": ", kf->f[i].why);
	}
	fprintf(f, "  concurrency caps count through: %s",
		fg_conn_way_names[fg_kfeat_conn_way(kf, why)]);
	if (fg_kfeat_conn_way(kf, NULL) == FG_CONN_WAY_NONE)
		fprintf(f, " (%s)", why);
	fputc('\n', f);
}

struct json_object *cli_kernel_json(const struct fg_kfeat *kf, int *err)
{
	struct json_object *o = json_object_new_object(), *fs = json_object_new_object();

	cli_json_add(err, o, "release", json_object_new_string(kf->release));
	for (int i = 0; i < FG_KF_MAX; i++) {
		struct json_object *it = json_object_new_object();

		cli_json_add(err, it, "ok", json_object_new_boolean(kf->f[i].ok));
		cli_json_add(err, it, "what", json_object_new_string(fg_kf_desc[i]));
		cli_json_add(err, it, "why", json_object_new_string(kf->f[i].why));
		cli_json_add(err, fs, fg_kf_names[i], it);
	}
	cli_json_add(err, o, "features", fs);
	cli_json_add(err, o, "conn_way",
		     json_object_new_string(fg_conn_way_names[fg_kfeat_conn_way(kf, NULL)]));
	return o;
}

int cli_needs_text(FILE *f, const struct fg_config *cfg, const struct fg_kfeat *kf)
{
	struct fg_need nd[FG_NEEDS_MAX];
	int n = fg_policy_kernel_needs(cfg, kf, nd), bad = 0;

	fprintf(f, "on this kernel (%s):\n", kf->release);
	for (int i = 0; i < n; i++) {
		fprintf(f, "  %-24s %s", nd[i].feature, fg_need_state_names[nd[i].state]);
		if (nd[i].state != FG_NEED_UNAVAILABLE)
			fprintf(f, ", %s", nd[i].how);
		if (nd[i].why[0])
			fprintf(f, " (%s)", nd[i].why);
		fputc('\n', f);
		bad += nd[i].state == FG_NEED_UNAVAILABLE;
	}
	if (bad)
		fprintf(f,
			"floodgated would refuse this policy here: %d feature%s this kernel "
			"cannot run\n",
			bad, bad == 1 ? "" : "s");
	return bad;
}

struct json_object *cli_needs_json(const struct fg_config *cfg, const struct fg_kfeat *kf, int *err)
{
	struct fg_need nd[FG_NEEDS_MAX];
	int n = fg_policy_kernel_needs(cfg, kf, nd);
	struct json_object *a = json_object_new_array();

	for (int i = 0; i < n; i++) {
		struct json_object *o = json_object_new_object();

		cli_json_add(err, o, "feature", json_object_new_string(nd[i].feature));
		cli_json_add(err, o, "state",
			     json_object_new_string(fg_need_state_names[nd[i].state]));
		cli_json_add(err, o, "how", json_object_new_string(nd[i].how));
		cli_json_add(err, o, "why", json_object_new_string(nd[i].why));
		cli_json_push(err, a, o);
	}
	return a;
}

int cli_kernel(void *cfg)
{
	const struct cli_args *a = cfg;
	const struct fg_kfeat *kf = fg_kfeat_get();
	int err = 0;

	if (a->json)
		return cli_json_print(cli_kernel_json(kf, &err), err) ? 1 : 0;
	cli_wrap_begin();
	cli_kernel_text(stdout, kf, true);
	cli_wrap_end();
	return 0;
}
