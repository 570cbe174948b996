/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * stderr captured for the tests that read back what the code logged
 * (test_throttle, test_escalate): lc_begin, the calls, then lc_end gives the
 * lines written in between.
 */
#ifndef FG_TEST_LOGCAP_H
#define FG_TEST_LOGCAP_H

/* From now on fd 2 writes to a temporary file. */
void lc_begin(void);
/* fd 2 restored; what was written since lc_begin (at most 64 KiB), valid until the next lc_end. */
const char *lc_end(void);
/* How many times needle stands in hay, without overlaps. */
int lc_count(const char *hay, const char *needle);

#endif /* FG_TEST_LOGCAP_H */
