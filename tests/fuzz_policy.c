// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * libFuzzer target for the policy compiler: any input either compiles or
 * fails with a placed error, never crashes or leaks. Seeds in
 * tests/corpus/policy/.
 *   make .output/fuzz/fuzz_policy
 *   .output/fuzz/fuzz_policy -max_total_time=60 tests/corpus/policy
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/admission.h"
#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static struct fg_config cfg;
	struct fg_err err;
	char buf[1024];
	FILE *f;
	size_t i;

	if (fg_config_parse((const char *)d, n, "fuzz.yaml", &cfg, &err)) {
		/* an error has a message, and a place unless out of memory */
		if (!err.msg[0])
			abort();
		fg_err_format(&err, buf, sizeof(buf));
		if (cfg.pfx || cfg.pol.nrules)
			abort(); /* no partial result */
		return 0;
	}
	/* invariants every compiled policy keeps */
	if (cfg.pol.nrules < 1 || cfg.pol.nrules > FG_MAX_RULES)
		abort();
	for (i = 0; i < FG_NCLASS; i++) {
		size_t k;

		if (cfg.pol.nmatch[i] < 1 || cfg.pol.nmatch[i] > FG_MAX_MATCH)
			abort();
		for (k = 0; k < cfg.pol.nmatch[i]; k++)
			if (cfg.pol.match[i][k].rule >= cfg.pol.nrules)
				abort();
	}
	for (i = 0; i < cfg.pol.nrules; i++) {
		const struct fg_rule *r = &cfg.pol.rules[i];

		if (r->src.tau >= FG_MAX_TAU || r->agg.tau >= FG_MAX_TAU ||
		    r->ovf.tau >= FG_MAX_TAU)
			abort();
		if (r->src.inc && r->src.tau < r->src.inc)
			abort();
	}
	fg_policy_set_admission(&cfg);
	f = fopen("/dev/null", "w");
	if (f) {
		fg_config_print(f, &cfg, true);
		fclose(f);
	}
	fg_config_free(&cfg);
	return 0;
}
