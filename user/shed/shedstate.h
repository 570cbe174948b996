/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What of the adaptive shedder lives outside the daemon: the pinned
 * fg_shed (struct fg_shed_ctl) as the program applies it, the operator's
 * off switch, and the small state file floodgated writes for `floodgate
 * status` (the signal and the controller's phase are not the program's
 * business). The daemon's loop is daemon/shedd.h.
 */
#ifndef FG_SHEDSTATE_H
#define FG_SHEDSTATE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "floodgate.h"

#define FG_SHEDD_RUN_DIR "/run/floodgate"

/* The controller's settings the state file carries: fields of both struct
 * fg_shed_cfg and struct fg_shedd_state, each a line "NAME %.6f". */
#define SHED_CFG_FIELDS(X) X(interval) X(delay) X(ramp) X(decay) X(good) X(bad) X(orphan)

/* Why the controller is held at zero. */
enum fg_shedd_hold {
	FG_SHEDD_RUN = 0,
	FG_SHEDD_BYPASS, /* the kill switch is on */
	FG_SHEDD_OFF,	 /* fg_shed_ctl.off */
};

/* The daemon's state, as the state file has it (fg_shedd_state_read). */
struct fg_shedd_state {
	__u32 pid;
	char signal[PATH_MAX + 32];
	bool have_value;
	double value;
	int sig_err;
	char phase[16];
	char hold[16];
	double amount, pressure;
	int ntiers;
	double interval, delay, ramp, decay, good, bad, orphan;
	__u64 samples, lost;
};

/* The pinned fg_shed as the program applies it at now_ns: the fraction of
 * each tier's non-TCP packets shed (critical: 0). For status and metrics. */
void fg_shedd_fracs(const struct fg_shed_ctl *v, __u64 now_ns, double frac[FG_NTIERS]);

/* The state file of the daemon on pin dir (NULL: FG_SHEDD_RUN_DIR). */
void fg_shedd_state_path(const char *state_dir, const char *pin_dir, char *buf, size_t len);
/* 0, -ENOENT (none), -EINVAL (not a state file). */
int fg_shedd_state_read(const char *path, struct fg_shedd_state *st);

const char *fg_shedd_hold_name(enum fg_shedd_hold h);

/* Map the pinned fg_shed (fd; type, sizes and BPF_F_MMAPABLE checked:
 * -EPROTO otherwise) read-write into *v, *len bytes. */
int fg_shed_map_open(int fd, struct fg_shed_ctl **v, size_t *len);
void fg_shed_map_close(struct fg_shed_ctl **v, size_t len);
/* The operator's switch (floodgate shed off|on): stores fg_shed_ctl.off
 * alone, so the daemon's field-by-field writes never undo it; *was is
 * what it held. The program stops tier shedding at the next packet; a
 * running daemon holds its controller at zero from its next sample. */
int fg_shed_switch_off(struct fg_shed_ctl *v, bool off, bool *was);

/* The state file's lines for st (the daemon writes them whole, then renames). */
void fg_shedd_state_print(FILE *f, const struct fg_shedd_state *st);

#endif /* FG_SHEDSTATE_H */
