// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The start-in-progress file: see startstate.h. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "maps/startstate.h"
#include "lib/sysutil.h"

#define FG_START_RUN_DIR "/run/floodgate"

const char *fg_start_phase_name(enum fg_start_phase p)
{
	return p == FG_START_FRESH ? "starting" : p == FG_START_ADOPTING ? "adopting" : "none";
}

const char *fg_run_dir(void)
{
	const char *dir = getenv("FLOODGATE_RUN_DIR");

	return dir && *dir ? dir : FG_START_RUN_DIR;
}

void fg_start_state_path(const char *pin_dir, char *buf, size_t len)
{
	fg_state_path(fg_run_dir(), "start", pin_dir, buf, len);
}

static void state_print(FILE *f, const void *arg)
{
	const struct fg_start_state *s = arg;

	fprintf(f, "pid %u\nphase %u\nsince %llu\n", s->pid, (unsigned)s->phase,
		(unsigned long long)s->since);
}

int fg_start_state_write(const char *pin_dir, const struct fg_start_state *s)
{
	char path[PATH_MAX];

	if (mkdir(fg_run_dir(), 0755) && errno != EEXIST)
		return -errno;
	fg_start_state_path(pin_dir, path, sizeof(path));
	return fg_file_replace(path, state_print, s);
}

int fg_start_state_read(const char *pin_dir, struct fg_start_state *s)
{
	unsigned long long val;
	char path[PATH_MAX], key[32];
	int fields = 0;
	FILE *f;

	memset(s, 0, sizeof(*s));
	fg_start_state_path(pin_dir, path, sizeof(path));
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fscanf(f, "%31s %llu", key, &val) == 2) {
		if (!strcmp(key, "pid") && val && val <= UINT32_MAX)
			s->pid = (__u32)val, fields++;
		else if (!strcmp(key, "phase") &&
			 (val == FG_START_FRESH || val == FG_START_ADOPTING))
			s->phase = (enum fg_start_phase)val, fields++;
		else if (!strcmp(key, "since"))
			s->since = val, fields++;
	}
	fclose(f);
	if (fields != 3 || !fg_daemon_alive(s->pid)) {
		memset(s, 0, sizeof(*s));
		return -ENOENT;
	}
	return 0;
}

void fg_start_state_remove(const char *pin_dir, __u32 pid)
{
	struct fg_start_state s;
	char path[PATH_MAX];

	fg_start_state_path(pin_dir, path, sizeof(path));
	if (!fg_start_state_read(pin_dir, &s) && s.pid != pid)
		return; /* another daemon's start */
	unlink(path);
}
