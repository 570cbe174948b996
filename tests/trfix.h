/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Fixture for the tests that drive the throttle tracker and read back what it
 * logged (test_throttle, test_escalate): the test and the log set up with one
 * named rule, and stderr captured (tf_begin, the calls, then tf_end gives the
 * lines written in between).
 */
#ifndef FG_TEST_TRFIX_H
#define FG_TEST_TRFIX_H

#include "policy/policy.h"

/* fg_test_init, logging at info as prog, and names[1] in use as rule (generation 1). */
void tf_init(int argc, char **argv, const char *prog, struct fg_name *names, const char *rule);
/* From now on fd 2 writes to a temporary file. */
void tf_begin(void);
/* fd 2 restored; what was written since tf_begin (at most 64 KiB), valid until the next tf_end. */
const char *tf_end(void);
/* How many times needle stands in hay, without overlaps. */
int tf_count(const char *hay, const char *needle);

#endif /* FG_TEST_TRFIX_H */
