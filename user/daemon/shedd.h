/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * floodgated's adaptive shedder loop (issue 11): every `interval` read the
 * policy's signal (fgsignal.h), step the controller (shed.h) and store the
 * thresholds into the pinned fg_shed (struct fg_shed_ctl, through its mmap)
 * with a deadline, so that the program decays a dead daemon's shedding to
 * zero by itself (docs/shedding.md section 5).
 *
 * Kill switch (bypass) and `fg_shed_ctl.off`: the program already ignores
 * the thresholds; the loop also holds the controller at zero and stores
 * zero thresholds, so that ending a bypass never resumes at a level reached
 * while nothing was filtered: shedding starts again through the delay and
 * the ramp. Shadow (shedding: mode: shadow, or the global mode): the
 * program counts what it would shed (FG_OUT_SHED_SHADOW) and sheds nothing;
 * the controller runs as in enforce, so the counts show what enforce would
 * do. A pool with `shedding: off` is left alone by the program.
 *
 * The CLI has no channel to the daemon but the pins, and the signal and
 * the controller's phase are not the program's business: the daemon also
 * writes them to a small state file (fg_shedd_state_path) that `floodgate
 * status` reads while that daemon lives.
 *
 * Functions return 0 or -errno and log nothing; fg_shedd_log says what a
 * sample changed (each change of tier once), for the daemon's top level.
 */
#ifndef FG_SHEDD_H
#define FG_SHEDD_H

#include <stdbool.h>
#include <stdio.h>
#include "maps/fgmaps.h"
#include "shed/fgsignal.h"
#include "policy/policy.h"
#include "shed/shed.h"
#include "shed/shedstate.h"

struct fg_shedd {
	bool on;		 /* the policy has a shedding: section */
	bool shadow;		 /* fg_shed_ctl.shadow as stored */
	struct fg_shed c;	 /* the controller */
	struct fg_signal sig;	 /* open while on */
	struct fg_shed_ctl *map; /* the mmap of fg_shed, NULL when closed */
	size_t map_len;
	char state_path[PATH_MAX]; /* "" = none */
	bool state_failed;	   /* the last write of it failed (logged once) */
	__u64 interval_ns;
	__u64 last_ns; /* CLOCK_MONOTONIC_COARSE of the last sample, 0 = none yet */
	__u64 next_ns; /* the next sample is due */
	__u64 samples; /* taken since start */
	__u64 lost;    /* of which the signal could not be read */
	double value;  /* the last sample, valid when have_value */
	bool have_value;
	int sig_err; /* the last read's -errno, 0 after a good one */
	enum fg_shedd_hold hold;
	struct fg_shed_out out; /* the last step */
};

/* What one sample did, for fg_shedd_log. */
struct fg_shedd_change {
	bool sampled;
	__u32 entered, left; /* tiers that started / stopped being shed */
	int sig_err;	     /* nonzero: the signal went bad ... */
	bool sig_back;	     /* ... or came back */
	enum fg_shedd_hold hold_was, hold;
	int state_err; /* writing the state file failed (first time only) */
};

/* Map fg_shed and start from cfg's shedding: section. An adopted pin dir
 * resumes from what the pinned thresholds decayed to by now_ns. Without a
 * shedding: section the thresholds are zeroed and nothing else happens.
 * state_dir: where the state file goes (NULL: FG_SHEDD_RUN_DIR). 0 or
 * -errno (fg_shed unmappable, the signal cannot be opened). */
int fg_shedd_start(struct fg_shedd *sd, struct fg_maps *m, const struct fg_config *cfg,
		   const char *state_dir, __u64 now_ns);

/* A reload: a changed section re-initialises the controller and resumes
 * from the current amount (clamped to the new tiers); a changed signal is
 * reopened. On error sd is unchanged and still runs the old section. */
int fg_shedd_reload(struct fg_shedd *sd, const struct fg_config *cfg, __u64 now_ns);

/* One sample if one is due at now_ns (else chg->sampled false). */
int fg_shedd_sample(struct fg_shedd *sd, struct fg_maps *m, __u64 now_ns,
		    struct fg_shedd_change *chg);

/* Zero the thresholds (end = 0: nothing shed from now on), remove the
 * state file, close the signal and the mapping. */
void fg_shedd_stop(struct fg_shedd *sd);

/* The daemon's log lines for chg (each tier change once). */
void fg_shedd_log(const struct fg_shedd *sd, const struct fg_shedd_change *chg);

/* From a live sd, as the file would have it. */
void fg_shedd_state_of(const struct fg_shedd *sd, struct fg_shedd_state *st);

#endif /* FG_SHEDD_H */
