// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * floodgate mode and bypass: the runtime switches, each change audited.
 * They take no lock: each stores its own fields of the mapped fg_ctl
 * (ctl.h), so they take effect at once while a reload holds the pin dir's
 * lock or the daemon is stopped.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "maps/ctl.h"
#include "lib/log.h"
#include "lib/opts.h"
#include "lib/sysutil.h"

/* Which of n words cmd's argument is; -1 after saying it is none of them. */
static int pick_word(const char *cmd, const char *word, const char *const *words, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(word, words[i]))
			return i;
	pr_warn("%s: \"%s\": expected %s", cmd, word,
		n == 2 ? "on or off" : "enforce, shadow or file");
	return -1;
}

/* The pin dir's maps and fg_ctl mapped; logs why not. */
static int open_ctl(const struct cli_args *a, struct fg_maps *m, struct fg_ctl_map *cm)
{
	int err = cli_open_maps(a, m);

	if (err)
		return err;
	err = fg_ctl_map_open(cm, m->fd[FGM_CTL]);
	if (err) {
		pr_warn("mapping %s/fg_ctl: %s", a->dir, strerror(-err));
		fg_maps_close(m);
	}
	return err;
}

static const char *ovr_str(__u32 ovr)
{
	return ovr == FG_OVR_SHADOW ? "shadow" : ovr == FG_OVR_ENFORCE ? "enforce" : "file";
}

static void report_global(const struct cli_args *a, const struct fg_ctl *c, __u32 ovr)
{
	const char *file = cli_mode_str(c->mode);
	char w[128];

	cli_who(w, sizeof(w));
	if (ovr == FG_OVR_NONE) {
		pr_info("global mode: the file's, %s%s", file,
			c->mode == FG_MODE_SHADOW ?
				": nothing is dropped, would-be drops count as shadow" :
				"");
		fg_log_audit("global mode override cleared (the file says %s) by %s (pin dir %s)",
			     file, w, a->dir);
		return;
	}
	pr_info("global mode is now %s%s; an override of the file (which says %s) until "
		"'floodgate mode file', across reloads and restarts",
		ovr_str(ovr), ovr == FG_OVR_SHADOW ? " (nothing is dropped)" : "", file);
	fg_log_audit("global mode override %s (the file says %s) by %s (pin dir %s)", ovr_str(ovr),
		     file, w, a->dir);
}

/* The id and generation of the rule named name (fg_names), or -ENOENT. */
static int rule_id(struct fg_maps *m, const char *name, struct fg_name *found)
{
	struct fg_name names[FG_MAX_IDS];
	int err = fg_names_read(m, names);

	if (err)
		return err;
	for (int id = 0; id < FG_MAX_IDS; id++) {
		if (names[id].in_use && !strncmp(names[id].name, name, FG_NAME_LEN)) {
			*found = names[id];
			return id;
		}
	}
	return -ENOENT;
}

/*
 * A rule's override by name. The apply may free the id or give it to a new
 * rule between our lookup and our store: it writes the name before it
 * clears the id's overrides, so reading the name again after the store
 * tells; then the store is undone (a new rule never inherits an override
 * meant for another) and -ESTALE returned.
 */
static int set_rule_ovr(struct fg_maps *m, struct fg_ctl_map *cm, const char *name, __u32 ovr,
			__u32 *id_out)
{
	struct fg_name was, now;
	int id = rule_id(m, name, &was), err;

	if (id < 0)
		return id;
	err = fg_switch_rule_ovr(cm, (__u32)id, ovr);
	if (err)
		return err;
	err = fg_array_read(m, FGM_NAMES, (__u32)id, &now);
	if (err || !now.in_use || now.gen != was.gen || strncmp(now.name, was.name, FG_NAME_LEN)) {
		fg_switch_rule_ovr(cm, (__u32)id, FG_OVR_NONE);
		return err ? err : -ESTALE;
	}
	*id_out = (__u32)id;
	return 0;
}

/* The rule's mode in the active policy's file: FG_MODE_*, or -1 if it is not there. */
static int rule_file_mode(struct fg_maps *m, __u32 id)
{
	static struct fg_policy pol;
	struct fg_name n;

	if (fg_policy_read_active(m, &pol) || fg_array_read(m, FGM_NAMES, id, &n))
		return -1;
	for (__u32 i = 0; i < pol.nrules && i < FG_MAX_RULES; i++)
		if (pol.rules[i].id == id && pol.rules[i].gen == n.gen)
			return pol.rules[i].mode;
	return -1;
}

static void report_rule(const struct cli_args *a, struct fg_maps *m, const struct fg_ctl_map *cm,
			__u32 id, __u32 ovr)
{
	int fmode = rule_file_mode(m, id);
	const char *file = fmode < 0 ? "nothing yet: the rule is not in the active policy" :
				       cli_mode_str((__u32)fmode);
	__u32 global = FG_MODE_ENFORCE;
	char w[128];

	fg_ctl_global_mode(cm, &global);
	cli_who(w, sizeof(w));
	if (ovr == FG_OVR_NONE)
		pr_info("rule %s: mode is the file's (%s)", a->rule, file);
	else
		pr_info("rule %s: mode %s, an override of the file (which says %s) until "
			"'floodgate mode file --rule %s', across reloads and restarts",
			a->rule, ovr_str(ovr), file, a->rule);
	if (global == FG_MODE_SHADOW && ovr != FG_OVR_SHADOW)
		pr_info("note: the global mode is shadow and wins over every rule: nothing is dropped");
	fg_log_audit("rule %s mode override %s (the file says %s) by %s (pin dir %s)", a->rule,
		     ovr_str(ovr), file, w, a->dir);
}

/* `floodgate mode` alone: the global mode in force and every rule whose own differs or is
 * overridden. */
static int show_mode(const struct cli_args *a)
{
	static struct fg_policy pol;
	struct fg_name names[FG_MAX_IDS];
	struct fg_ctl_map cm;
	struct fg_maps m;
	struct fg_ctl c;
	__u32 g;
	int err;

	if (open_ctl(a, &m, &cm))
		return 1;
	err = fg_ctl_snapshot(&cm, &c);
	if (!err)
		err = fg_policy_read_active(&m, &pol);
	if (!err)
		err = fg_names_read(&m, names);
	if (err) {
		pr_err("mode: reading %s: %s", a->dir, strerror(-err));
		goto out;
	}
	g = fg_ctl_mode_global(&c);
	if (c.mode_ovr)
		printf("mode: %s, a CLI override ('floodgate mode file' returns to the file's, %s)\n",
		       cli_mode_str(g), cli_mode_str(c.mode));
	else
		printf("mode: %s (the file's)\n", cli_mode_str(g));
	for (__u32 i = 0; i < pol.nrules && i < FG_MAX_RULES; i++) {
		const struct fg_rule *r = &pol.rules[i];
		__u32 ovr = fg_ctl_mode_rule_ovr(&c, r->id);
		const char *nm = cli_rule_name(names, r->id, r->gen);

		if (!ovr && r->mode == FG_MODE_ENFORCE)
			continue;
		printf("  rule %s: %s%s%s\n", nm ? nm : "?",
		       ovr ? ovr_str(ovr) : cli_mode_str(r->mode),
		       ovr ? ", a CLI override" : " (the file's)",
		       g == FG_MODE_SHADOW &&
				       (ovr ? ovr != FG_OVR_SHADOW : r->mode != FG_MODE_SHADOW) ?
			       "; the global shadow wins" :
			       "");
	}
out:
	fg_ctl_map_close(&cm);
	fg_maps_close(&m);
	return err ? 1 : 0;
}

int cli_mode(void *cfg)
{
	static const char *const words[] = { "enforce", "shadow", "file" };
	static const __u32 ovrs[] = { FG_OVR_ENFORCE, FG_OVR_SHADOW, FG_OVR_NONE };
	const struct cli_args *a = cfg;
	struct fg_ctl_map cm;
	struct fg_maps m;
	struct fg_ctl c;
	__u32 id = 0;
	int pick, err;

	if (!a->npos && !a->rule)
		return show_mode(a);
	if (!a->npos) {
		pr_err("mode --rule %s: expected enforce, shadow or file", a->rule);
		return FG_EXIT_USAGE;
	}
	pick = pick_word("mode", a->pos[0], words, 3);
	if (pick < 0)
		return FG_EXIT_USAGE;
	if (open_ctl(a, &m, &cm))
		return 1;
	if (a->rule)
		err = set_rule_ovr(&m, &cm, a->rule, ovrs[pick], &id);
	else
		err = fg_switch_mode_ovr(&cm, ovrs[pick]);
	if (err == -ENOENT)
		pr_warn("mode: no rule named \"%s\" ('floodgate status' lists them)", a->rule);
	else if (err == -ESTALE)
		pr_warn("mode: rule \"%s\" was replaced by a reload meanwhile; nothing changed, "
			"try again",
			a->rule);
	else if (err)
		pr_warn("mode: %s", strerror(-err));
	else if (a->rule)
		report_rule(a, &m, &cm, id, ovrs[pick]);
	else if (!fg_ctl_snapshot(&cm, &c))
		report_global(a, &c, ovrs[pick]);
	fg_ctl_map_close(&cm);
	fg_maps_close(&m);
	return err ? 1 : 0;
}

static void log_bypass(const struct cli_args *a, bool on)
{
	char w[128];

	cli_who(w, sizeof(w));
	if (on && a->bypass_for) {
		pr_info("bypass ON for %.0f s: every packet passes, nothing is counted per rule",
			a->bypass_ns / 1e9);
		fg_log_audit("bypass ON for %.0f s by %s (pin dir %s)", a->bypass_ns / 1e9, w,
			     a->dir);
	} else if (on) {
		pr_info("bypass ON until 'floodgate bypass off': every packet passes");
		fg_log_audit("bypass ON (no expiry) by %s (pin dir %s)", w, a->dir);
	} else {
		pr_info("bypass off: the policy is enforced again");
		fg_log_audit("bypass off by %s (pin dir %s)", w, a->dir);
	}
}

/* `floodgate bypass` alone: on or off, and for how long. */
static int show_bypass(const struct cli_args *a)
{
	struct fg_ctl_map cm;
	struct fg_maps m;
	struct fg_ctl c;
	__u64 now = fg_mono_coarse_ns();
	int err;

	if (open_ctl(a, &m, &cm))
		return 1;
	err = fg_ctl_snapshot(&cm, &c);
	if (err)
		pr_err("bypass: reading %s: %s", a->dir, strerror(-err));
	else if (c.bypass && c.bypass_until && c.bypass_until <= now)
		printf("bypass: off (expired %.0f s ago)\n", (now - c.bypass_until) / 1e9);
	else if (c.bypass && c.bypass_until)
		printf("bypass: ON for another %.0f s: everything passes\n",
		       (c.bypass_until - now) / 1e9);
	else if (c.bypass)
		printf("bypass: ON until 'floodgate bypass off': everything passes\n");
	else
		printf("bypass: off\n");
	fg_ctl_map_close(&cm);
	fg_maps_close(&m);
	return err ? 1 : 0;
}

int cli_bypass(void *cfg)
{
	static const char *const words[] = { "on", "off" };
	const struct cli_args *a = cfg;
	struct fg_ctl_map cm;
	struct fg_maps m;
	__u64 until = 0;
	int pick, err;
	bool on;

	if (!a->npos && !a->bypass_for)
		return show_bypass(a);
	if (!a->npos) {
		pr_err("bypass --for: expected on");
		return FG_EXIT_USAGE;
	}
	pick = pick_word("bypass", a->pos[0], words, 2);
	if (pick < 0)
		return FG_EXIT_USAGE;
	on = pick == 0;
	if (a->bypass_for && !on) {
		pr_warn("bypass off takes no --for");
		return FG_EXIT_USAGE;
	}
	if (open_ctl(a, &m, &cm))
		return 1;
	if (a->bypass_for)
		until = fg_mono_coarse_ns() + a->bypass_ns;
	err = fg_switch_bypass(&cm, on, until);
	if (err)
		pr_warn("bypass: %s", strerror(-err));
	fg_ctl_map_close(&cm);
	fg_maps_close(&m);
	if (err)
		return 1;
	log_bypass(a, on);
	return 0;
}
