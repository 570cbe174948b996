// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Helpers shared by the floodgate CLI's commands (see cli.h). */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>
#include "cli.h"
#include "log.h"

int cli_open_maps(const struct cli_args *a, struct fg_maps *m)
{
	char why[FG_WHY_LEN] = "";
	int err = fg_maps_open(m, a->dir, why);

	if (err == -ENOENT)
		pr_warn("no floodgate pin dir at %s: is floodgated running? "
			"(see --pin-dir, $" FG_PIN_DIR_ENV ")", a->dir);
	else if (err)
		pr_warn("%s", why[0] ? why : strerror(-err));
	return err;
}

int cli_lock_maps(struct fg_maps *m)
{
	int err = fg_maps_lock(m, 5000);

	if (err)
		pr_warn("cannot lock %s: %s (another floodgate command or a reload is running)",
			m->dir, strerror(-err));
	return err;
}

const char *cli_who(char *buf, size_t len)
{
	const char *sudo = getenv("SUDO_USER");
	struct passwd *pw = getpwuid(getuid());
	const char *login = getlogin();

	snprintf(buf, len, "uid %u (%s)%s%s", getuid(), pw ? pw->pw_name : "?",
		 sudo ? " via sudo by " : login ? " login " : "", sudo ? sudo : login ? login : "");
	return buf;
}

void cli_fmt_num(char *buf, size_t len, double v)
{
	static const char *suf[] = { "", "k", "M", "G", "T", "P" };
	int i = 0;

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
	s = err ? NULL : json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
							    JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!err && !s)
		err = -ENOMEM;
	if (!err && printf("%s\n", s) < 0)
		err = -EIO;
	json_object_put(obj);
	return err;
}
