/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Policy fixture for the tests that apply YAML to a pin dir (test_fgmaps,
 * test_shed_pools): parse, then apply under the lock the way floodgated does.
 * Failures print one line ("  parse: ..." or "  apply: ...") and return -errno.
 * Also the check of a policy that must be refused (test_policy, test_xdpconf).
 */
#ifndef FG_TEST_POLFIX_H
#define FG_TEST_POLFIX_H

#include <stddef.h>
#include "maps/fgmaps.h"
#include "policy/policy.h"

/* txt ("test.yaml") into *cfg, zeroed first; 0 or -errno. */
int pf_parse(const char *txt, struct fg_config *cfg);
/* txt parsed and applied to m under fg_maps_lock; why (FG_WHY_LEN bytes)
 * says why an apply failed. 0 or -errno. */
int pf_apply(struct fg_maps *m, const char *txt, char *why);

/* A policy that must be refused, where and with what message. */
struct pf_bad {
	const char *yaml;
	int line, col;	 /* of the error */
	const char *msg; /* a part of the error's message */
};

/* Each of the n policies of table (named so in the checks), parsed into a
 * poisoned config, fails with -EINVAL at its line and column saying its msg,
 * and leaves nothing behind: no prefixes, rules, pools, fleet (nor its
 * password) or shedding. */
void pf_check_refused(const struct pf_bad *bad, size_t n, const char *table);

#endif /* FG_TEST_POLFIX_H */
