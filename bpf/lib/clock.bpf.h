/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The program's clock (enum fg_clock): coarse, cached per CPU; precise; or a test's. */
#ifndef FG_LIB_CLOCK_BPF_H
#define FG_LIB_CLOCK_BPF_H

/*
 * The coarse clock, called once per tick per CPU: the helper is a call
 * (~17 ns here, docs/concurrency.md; SRSO makes every return dear) while
 * bpf_jiffies64 is one load (the verifier inlines it on x86-64) and the
 * coarse clock only moves when jiffies does, both at the tick. A CPU
 * reuses its cached time while jiffies reads as when it was cached, so
 * every value is one the helper returned this tick. A read in the window
 * where jiffies has moved and the timekeeper not yet (same ns as cached)
 * leaves the cache as it is, so the next packet asks again. The hit is
 * inline in fg_now_ns (a call and its return cost ~8 ns here); the refresh
 * is a global function, verified once (all of it inline took clang 14's
 * count from 326k to 564k; this way 459k, clang-19's 404k).
 */
__noinline __u64 fg_coarse_refresh(void)
{
	struct fg_clk *c;
	__u32 k = 0;
	__u64 j, ns;

	c = bpf_map_lookup_elem(&fg_clk, &k);
	j = bpf_jiffies64();
	ns = bpf_ktime_get_coarse_ns();
	if (c && ns != c->ns) {
		c->jiffies = j;
		c->ns = ns;
	}
	return ns;
}

static __always_inline __u64 fg_now_ns(void)
{
	struct fg_clk *c;
	__u32 k = 0;

	if (fg_clock == FG_CLOCK_TEST)
		return fake_now;
	if (fg_clock == FG_CLOCK_PRECISE)
		return bpf_ktime_get_ns();
	c = bpf_map_lookup_elem(&fg_clk, &k);
	if (c && c->jiffies == bpf_jiffies64())
		return c->ns;
	return fg_coarse_refresh();
}

#endif /* FG_LIB_CLOCK_BPF_H */
