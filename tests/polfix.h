/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Policy fixture for the tests that apply YAML to a pin dir (test_fgmaps,
 * test_shed_pools): parse, then apply under the lock the way floodgated does.
 * Failures print one line ("  parse: ..." or "  apply: ...") and return -errno.
 * Also the check of a policy that must be refused (test_policy, test_xdpconf).
 */
#ifndef FG_TEST_POLFIX_H
#define FG_TEST_POLFIX_H

#include <stdbool.h>
#include "fgmaps.h"
#include "policy.h"

/* txt ("test.yaml") into *cfg, zeroed first; 0 or -errno. */
int pf_parse(const char *txt, struct fg_config *cfg);
/* txt parsed and applied to m under fg_maps_lock; why (FG_WHY_LEN bytes)
 * says why an apply failed. 0 or -errno. */
int pf_apply(struct fg_maps *m, const char *txt, char *why);

/* A policy that must be refused, where and with what message. */
struct pf_bad {
	const char *yaml;
	int line, col;		/* of the error */
	const char *msg;	/* a part of the error's message */
};

/* c->yaml parsed ("t.yaml") into *cfg (poisoned first) fails with -EINVAL
 * at c's line and column, saying c->msg (checked as name); true if it
 * failed at all, so the caller can check that nothing is left behind. */
bool pf_fails_as(const struct pf_bad *c, const char *name, struct fg_config *cfg);

#endif /* FG_TEST_POLFIX_H */
