// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* tests/polfix.h: YAML parsed and applied to a pin dir, for the tests. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "maps/apply.h"
#include "fgtest.h"
#include "polfix.h"

int pf_parse(const char *txt, struct fg_config *cfg)
{
	struct fg_err e = {};
	char msg[1024];
	int err;

	memset(cfg, 0, sizeof(*cfg));
	err = fg_config_parse(txt, strlen(txt), "test.yaml", cfg, &e);
	if (err) {
		fg_err_format(&e, msg, sizeof(msg));
		printf("  parse: %s\n", msg);
	}
	return err;
}

int pf_apply(struct fg_maps *m, const char *txt, char *why)
{
	struct fg_config *cfg = malloc(sizeof(*cfg));
	int err;

	if (!cfg)
		return -ENOMEM;
	err = pf_parse(txt, cfg);
	if (err)
		goto out;
	why[0] = 0;
	err = fg_maps_lock(m, 1000);
	if (!err)
		err = fg_policy_apply(m, cfg, NULL, why);
	fg_maps_unlock(m);
	if (err && why[0])
		printf("  apply: %s\n", why);
	fg_config_free(cfg);
out:
	free(cfg);
	return err;
}

/* c->yaml fails as c says (checked as name); true if it failed at all. */
static bool pf_fails_as(const struct pf_bad *c, const char *name, struct fg_config *cfg)
{
	struct fg_err err;

	memset(cfg, 0xa5, sizeof(*cfg));
	if (!ASSERT_EQ(fg_config_parse(c->yaml, strlen(c->yaml), "t.yaml", cfg, &err), -EINVAL,
		       name))
		return false;
	ASSERT_EQ(err.line, c->line, name);
	ASSERT_EQ(err.col, c->col, name);
	ASSERT_STR_CONTAINS(err.msg, c->msg, name);
	return true;
}

void pf_check_refused(const struct pf_bad *bad, size_t n, const char *table)
{
	for (size_t i = 0; i < n; i++) {
		struct fg_config cfg;
		char name[160];

		snprintf(name, sizeof(name), "%s[%zu] line %d (%s)", table, i, bad[i].line,
			 bad[i].msg);
		if (!pf_fails_as(&bad[i], name, &cfg))
			continue;
		ASSERT_TRUE(cfg.pfx == NULL && cfg.pol.nrules == 0 && cfg.pol.npools == 0 &&
				    !cfg.has_fleet && !cfg.has_shedding,
			    "no partial result");
		ASSERT_EQ(cfg.fleet.redis.password[0], 0, "no password left behind");
	}
}
