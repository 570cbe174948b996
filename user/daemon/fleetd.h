/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * floodgated's fleet glue (docs/fleet.md, section 8): the lease engine
 * (fleet.h) on its worker thread, spending into the pinned fg_lease map
 * through a shared mapping. Per round the worker collects each fleet rule's
 * offered and unleased cost from fg_stats and its balance from fg_lease,
 * and applies the answer: take back (compare-and-swap), add the grant, then
 * the local share, its empty bucket and the node count, and the expiry
 * last. The daemon's main loop only calls fg_fleetd_tick, which never waits
 * on Redis: it logs the engine's events, once each, and refreshes the
 * status (the file `floodgate status` reads, fleet_status.h, and the
 * metrics). A policy without fleet rules starts nothing.
 */
#ifndef FG_FLEETD_H
#define FG_FLEETD_H

#include <stdbool.h>
#include <stddef.h>
#include "maps/apply.h"
#include "maps/fgmaps.h"
#include "fleet/fleet.h"
#include "fleet/fleet_status.h"
#include "policy/policy.h"

struct fg_fleetd;

/* Map m's fg_lease (m stays open while *out lives). 0 or -errno. */
int fg_fleetd_open(struct fg_fleetd **out, struct fg_maps *m, const char *pin_dir);

/*
 * Inside every apply (apply.h, before_flip): every fleet rule whose
 * fg_lease entry is not its own (another gen: a new rule, or one that just
 * became a fleet rule) gets a fresh one: gen, on_loss, the local share with
 * an empty bucket, no lease (on_loss applies until the first answer). An
 * entry that is the rule's own keeps its lease (a surviving rule, an
 * adopted pin dir); only its on_loss follows the file.
 */
int fg_fleetd_before_flip(struct fg_fleetd *fl, const struct fg_config *cfg, char *why);

/* After the policy is applied: start the engine for cfg's fleet rules,
 * adopting each pinned lease whose gen matches (its tokens are kept while
 * it runs; a Redis bucket lost meanwhile comes back empty). Nothing to do
 * without fleet rules. 0 or -errno, the reason in why. */
int fg_fleetd_start(struct fg_fleetd *fl, const struct fg_config *cfg, char *why);

/* After a reload applied ncfg over old: a changed fleet: section or fleet
 * rule stops the engine, handing its leases back, and starts a new one (an
 * edited rule has new keys anyway). 1 restarted, 0 nothing changed, -errno. */
int fg_fleetd_reload(struct fg_fleetd *fl, const struct fg_config *old,
		     const struct fg_config *ncfg, char *why);

/* Once per daemon tick: the engine's events logged, the status refreshed. */
void fg_fleetd_tick(struct fg_fleetd *fl);

/* The last tick's status; NULL when no fleet rule runs. */
const struct fg_fleet_status *fg_fleetd_status(const struct fg_fleetd *fl);

/* Stop and unmap; the status file goes too. release: hand the leases back
 * (detaching); otherwise they run out in the program (--keep, a restart
 * that adopts them). NULL is a no-op. */
void fg_fleetd_close(struct fg_fleetd *fl, bool release);

#endif /* FG_FLEETD_H */
