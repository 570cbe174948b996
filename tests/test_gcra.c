// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The bucket arithmetic on its own, in userspace, on synthetic time: the
 * same header the XDP program compiles (bpf/fg_gcra.h). No root needed.
 */
#include <pthread.h>
#include <stdlib.h>
#include <math.h>
#include "fgtest.h"
#include "fg_gcra.h"

#define NS     1000000000ull
#define TU(ns) ((__u64)(ns) << FG_TU_SHIFT)

static __u64 inc_for(double rate)
{
	return (__u64)llround((double)FG_TU_PER_SEC / rate);
}

/* admitted count when offering n requests of cost c at time now */
static int offer(__u64 *tat, __u64 now_ns, __u64 inc, __u64 tau, __u64 cost, int n)
{
	int ok = 0;

	for (int i = 0; i < n; i++)
		ok += fg_gcra_spend(tat, TU(now_ns), inc * cost, tau) == 1;
	return ok;
}

static void test_burst_exact(void)
{
	for (int burst = 1; burst <= 1000; burst *= 7) {
		for (double rate = 1; rate <= 1e7; rate *= 31) {
			__u64 tat = 0, inc = inc_for(rate), tau = inc * burst;
			char name[96];

			snprintf(name, sizeof(name),
				 "rate %.0f burst %d: first instant admits the burst", rate, burst);
			ASSERT_EQ(offer(&tat, 5 * NS, inc, tau, 1, burst * 2 + 5), burst, name);
		}
	}
}

/* Over a long flood with steps of dt, admitted = burst + rate * T, within
 * one packet; checked against a reference token bucket in doubles. */
static void test_long_run_matches_rate(void)
{
	const double rates[] = { 1, 10, 999, 12345, 1e6 };

	for (size_t k = 0; k < sizeof(rates) / sizeof(rates[0]); k++) {
		double rate = rates[k];
		/* the burst covers one step's refill, so the bucket never
		 * saturates between steps and nothing is capped away */
		__u64 t0 = 100 * NS, T = 10 * NS, dt = NS / 1000;
		__u64 burst = 50 + (__u64)(rate * dt / NS) * 2;
		__u64 inc = inc_for(rate), tau = inc * burst, tat = 0;
		long admitted = 0;

		for (__u64 t = t0; t <= t0 + T; t += dt)
			admitted += offer(&tat, t, inc, tau, 1, (int)(rate / 1000) + 3);
		double expect = burst + rate * (double)T / NS;
		char name[64];

		snprintf(name, sizeof(name), "rate %.0f over 10 s", rate);
		ASSERT_LE(fabs(admitted - expect), 1.0 + expect * 1e-6, name);
	}
}

static void test_bytes_subnanosecond(void)
{
	/* 10 GB/s: 0.1 ns per byte, 6.4 time units per byte */
	__u64 inc = inc_for(1e10), tau = inc * 20000000ull, tat = 0;
	long bytes = 0;

	ASSERT_EQ(inc, 6, "10 GB/s rounds to 6 tu/byte (6.4): +6.7% of rate, documented bound");
	inc = inc_for(1e9); /* 1 GB/s: 64 tu per byte, exact */
	tau = inc * 3000;
	ASSERT_EQ(offer(&tat, NS, inc, tau, 1000, 10), 3, "3000-byte burst, 1000-byte frames");
	tat = 0;
	/* offered at twice the rate: admitted = burst + rate * T, in bytes */
	for (int i = 0; i < 1000; i++)
		bytes += 64 * offer(&tat, NS + (__u64)i * 64, inc, tau, 64, 2);
	/* elapsed is 999 x 64 ns; admitted is a multiple of 64 */
	ASSERT_LE(labs(bytes - (3000 + 999 * 64)), 63, "1 GB/s, 64-byte frames at 2x the rate");
}

static void test_clock_edges(void)
{
	__u64 inc = inc_for(10), tau = inc * 20, tat = 0;

	ASSERT_EQ(offer(&tat, 10 * NS, inc, tau, 1, 100), 20, "burst");
	/* clocks of two CPUs can disagree by up to a coarse tick (4 ms) */
	ASSERT_EQ(offer(&tat, 10 * NS - 4000000, inc, tau, 1, 100), 0,
		  "time 4 ms behind tat: zero elapsed");
	ASSERT_EQ(offer(&tat, 10 * NS + NS / 10, inc, tau, 1, 100), 1, "100 ms later: one");
	/* idle until the end of the representable range */
	__u64 far = (1ull << 58) - 1; /* ns; now_tu just below 2^64 */
	ASSERT_EQ(offer(&tat, far - 10 * NS, inc, tau, 1, 100), 20,
		  "near the wrap: burst, no overflow");
	/* a cost above the burst never passes and writes nothing */
	__u64 before = tat;
	ASSERT_EQ(offer(&tat, far - 9 * NS, inc, tau, 21, 1), 0, "cost > burst");
	ASSERT_EQ(tat, before, "refused request writes nothing");
}

/* A reload raising the rate (smaller inc and tau) under an empty bucket:
 * the new rate applies at once, and no fresh burst is handed out. */
static void test_rate_change_applies_at_once(void)
{
	__u64 inc1 = inc_for(1000), tau1 = inc1 * 5000, tat = 0;
	__u64 inc2 = inc_for(3000), tau2 = inc2 * 5000;
	__u64 t = 50 * NS;

	ASSERT_EQ(offer(&tat, t, inc1, tau1, 1, 20000), 5000, "old policy: burst 5000");
	/* empty now; 5 s of debt at the old rate, 1.67 s worth at the new */
	ASSERT_EQ(offer(&tat, t, inc2, tau2, 1, 100), 0, "new policy: still empty, no fresh burst");
	ASSERT_EQ(offer(&tat, t + NS / 10, inc2, tau2, 1, 1000), 300,
		  "100 ms at the new 3000/s: 300");
	/* within the slack, a lagging clock never clamps */
	tat = 0;
	offer(&tat, t, inc1, tau1, 1, 5000);
	ASSERT_EQ(offer(&tat, t - 4000000, inc1, tau1, 1, 10), 0,
		  "a reader 4 ms behind gains nothing");
	ASSERT_EQ(tat, TU(t) + tau1, "and leaves tat as it was");
}

/* Real threads racing on one bucket with frozen time: exactly the burst. */
struct racer {
	__u64 *tat;
	__u64 inc, tau;
	long admitted;
	int n;
};

static void *race(void *arg)
{
	struct racer *r = arg;

	for (int i = 0; i < r->n; i++)
		r->admitted += fg_gcra_spend(r->tat, TU(NS), r->inc, r->tau) == 1;
	return NULL;
}

static void test_threads_exact(void)
{
	__u64 tat = 0, inc = inc_for(1000);
	struct racer rs[4];
	pthread_t th[4];
	long total = 0;

	for (int i = 0; i < 4; i++) {
		rs[i] = (struct racer){ .tat = &tat, .inc = inc, .tau = inc * 200000, .n = 1000000 };
		pthread_create(&th[i], NULL, race, &rs[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		total += rs[i].admitted;
	}
	ASSERT_EQ(total, 200000, "4 threads, one bucket: exactly the burst");
}

int main(int argc, char **argv)
{
	fg_test_init(argc, argv);
	FG_RUN_EACH(test_burst_exact, test_long_run_matches_rate, test_bytes_subnanosecond,
		    test_clock_edges, test_rate_change_applies_at_once, test_threads_exact);
	return fg_test_summary();
}
