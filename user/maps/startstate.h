/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A floodgated between its exec and the moment fg_meta names it (issue
 * 25): it writes $FLOODGATE_RUN_DIR (default /run/floodgate)
 * /start-PIN.state first thing, says there whether it starts fresh or
 * adopts a pinned filter, and removes the file once fg_meta carries its
 * pid (or when the start fails). `floodgate status` reads it, so a start
 * in progress is "starting" or "adopting (pid N)", not "not running".
 * A file whose pid is no live floodgated says nothing (a crash mid-start).
 */
#ifndef FG_STARTSTATE_H
#define FG_STARTSTATE_H

#include <stddef.h>
#include <linux/types.h>

enum fg_start_phase {
	FG_START_NONE = 0, /* no start in progress */
	FG_START_FRESH,	   /* nothing pinned: loading, then attaching */
	FG_START_ADOPTING, /* a pinned filter keeps enforcing while this one takes over */
};

struct fg_start_state {
	__u32 pid;
	enum fg_start_phase phase;
	__u64 since; /* CLOCK_REALTIME s: when the start began */
};

/* $FLOODGATE_RUN_DIR, else /run/floodgate: where the state files live */
const char *fg_run_dir(void);
/* "starting", "adopting" ("none" for FG_START_NONE) */
const char *fg_start_phase_name(enum fg_start_phase p);

void fg_start_state_path(const char *pin_dir, char *buf, size_t len);
/* Write (replace) the file; 0 or -errno (the start goes on without it). */
int fg_start_state_write(const char *pin_dir, const struct fg_start_state *s);
/* The file, if its pid is a live floodgated: 0, else -ENOENT (or -errno). */
int fg_start_state_read(const char *pin_dir, struct fg_start_state *s);
/* Remove it, if it is pid's. */
void fg_start_state_remove(const char *pin_dir, __u32 pid);

#endif /* FG_STARTSTATE_H */
