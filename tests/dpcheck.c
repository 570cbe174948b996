// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* tests/dpcheck.h: the fixture opened, and what each on_full mode passes and counts. */
#include <string.h>
#include "dpcheck.h"
#include "fgtest.h"

int dp_check_open(struct dp *d, __u32 max_sources)
{
	int err = dp_open(d, max_sources);

	if (err) {
		fg_test_fail(__FILE__, __LINE__, "dp_open: %d (%s)", err, strerror(-err));
		return -1;
	}
	return 0;
}

void dp_check_on_full(struct dp *d, const char *what, int mode, __u64 passed, __u64 sent, __u64 own,
		      __u64 refused, __u64 ovf_burst)
{
	static const struct {
		const char *pass, *count;
		__u32 ev;
	} m[] = {
		[FG_FULL_OVERFLOW] = { "own buckets pass, the rest share the overflow's burst",
				       "overflow charges counted", FG_EV_OVERFLOW },
		[FG_FULL_OPEN] = { "fail open passes all", "fail-open counted", FG_EV_FULL_OPEN },
		[FG_FULL_CLOSED] = { "fail closed drops the refused", "fail-closed counted",
				     FG_EV_FULL_CLOSED },
	};
	__u64 want = mode == FG_FULL_OVERFLOW ? own + ovf_burst : mode == FG_FULL_OPEN ? sent : own;
	char name[160];

	if (mode < 0 || mode >= (int)(sizeof(m) / sizeof(m[0]))) {
		fg_test_fail(__FILE__, __LINE__, "%s: no on_full mode %d", what, mode);
		return;
	}
	snprintf(name, sizeof(name), "%s: %s", what, m[mode].pass);
	ASSERT_EQ(passed, want, name);
	snprintf(name, sizeof(name), "%s: %s", what, m[mode].count);
	ASSERT_EQ(dp_row_ev(d, 0, m[mode].ev), refused, name);
}
