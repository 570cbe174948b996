// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* floodgated's modules, in the order their hooks run (daemon.h). */
#include <stddef.h>
#include "daemon/daemon.h"

const struct fg_module *const fg_modules[] = {
	&fg_mod_conn,	  /* concurrency caps: shares maps with the program (open) */
	&fg_mod_fleet,	  /* fleet leases: before every flip */
	&fg_mod_shed,	  /* the adaptive shedder */
	&fg_mod_sources,  /* the throttle log and source counts: publishes d->tracker ... */
	&fg_mod_escalate, /* ... which escalation reads; it sweeps the runtime lists ... */
	&fg_mod_rtlist,	  /* ... or, when it did not, this does */
	&fg_mod_synauth,  /* SYN authentication: the secret, the tc program, the gauge */
	&fg_mod_metrics,  /* last: its tick renders what the others left in the snapshot */
	NULL,
};
