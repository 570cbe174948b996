/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Policy fixture for the tests that apply YAML to a pin dir (test_fgmaps,
 * test_shed_pools): parse, then apply under the lock the way floodgated does.
 * Failures print one line ("  parse: ..." or "  apply: ...") and return -errno.
 */
#ifndef FG_TEST_POLFIX_H
#define FG_TEST_POLFIX_H

#include "fgmaps.h"
#include "policy.h"

/* txt ("test.yaml") into *cfg, zeroed first; 0 or -errno. */
int pf_parse(const char *txt, struct fg_config *cfg);
/* txt parsed and applied to m under fg_maps_lock; why (FG_WHY_LEN bytes)
 * says why an apply failed. 0 or -errno. */
int pf_apply(struct fg_maps *m, const char *txt, char *why);

#endif /* FG_TEST_POLFIX_H */
