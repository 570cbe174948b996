// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * user/maps/ctl.c, the lock-free switches, against the real fg_ctl map of the
 * real program (tests/dp.c loads it with the test clock): concurrent
 * writers lose nothing, no reader (a thread, or the program itself) sees a
 * torn kill switch, and the kill switch takes effect at once while another
 * process holds the pin dir's lock for a long policy write. Also fg_meta's
 * reload fields, read whole under BPF_F_LOCK. FG_NEEDS_ROOT.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>
#include "fgtest.h"
#include "dp.h"
#include "dpcheck.h"
#include "maps/ctl.h"

#define NS	 1000000000ull
#define N_WRITES 100000

static struct dp D;

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * NS + ts.tv_nsec;
}

static int pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu % (int)sysconf(_SC_NPROCESSORS_ONLN), &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

static void unpin(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	for (int i = 0; i < CPU_SETSIZE; i++)
		CPU_SET(i, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static int setup(void)
{
	return dp_check_open(&D, 1024);
}

/* setup() with one rule that drops everything, applied. */
static int setup_drop_all(void)
{
	struct fg_rule drop = { .action = FG_ACT_DROP };

	if (setup())
		return -1;
	dp_rule(&D, &drop, &M_ANY, C_ALL);
	dp_apply(&D);
	return 0;
}

/* ---- the API: bad input changes nothing ---------------------------------- */

static void test_bad_input(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, mmapable, .map_flags = BPF_F_MMAPABLE);
	struct fg_ctl before, after;
	struct fg_ctl_map closed = {}, cm;
	__u64 mask[FG_OVR_WORDS] = { 1, 1 };
	__u32 v;
	int fd;

	if (setup())
		return;
	ASSERT_OK(fg_ctl_snapshot(&D.cm, &before), "snapshot");
	ASSERT_EQ(fg_switch_mode_ovr(&D.cm, 3), -EINVAL, "global override 3");
	ASSERT_EQ(fg_switch_rule_ovr(&D.cm, FG_MAX_IDS, FG_OVR_SHADOW), -EINVAL,
		  "rule id FG_MAX_IDS");
	ASSERT_EQ(fg_switch_rule_ovr(&D.cm, 0, 3), -EINVAL, "rule override 3");
	ASSERT_EQ(fg_switch_slot(&D.cm, 2), -EINVAL, "slot 2");
	ASSERT_EQ(fg_switch_file_mode(&D.cm, 2), -EINVAL, "file mode 2");
	ASSERT_EQ(fg_switch_clear_rule_ovr_ids(&D.cm, NULL), -EINVAL, "no mask");
	ASSERT_EQ(fg_ctl_rule_ovr(&D.cm, FG_MAX_IDS, &v), -EINVAL, "read rule id FG_MAX_IDS");
	ASSERT_EQ(fg_ctl_rule_mode(&D.cm, 0, 2, &v), -EINVAL, "file rule mode 2");
	ASSERT_OK(fg_ctl_snapshot(&D.cm, &after), "snapshot");
	ASSERT_EQ(memcmp(&before, &after, sizeof(before)), 0, "refused switches changed nothing");

	ASSERT_EQ(fg_switch_bypass(&closed, true, 0), -EBADF, "closed mapping");
	ASSERT_EQ(fg_switch_clear_rule_ovr_ids(&closed, mask), -EBADF, "closed mapping");
	ASSERT_EQ(fg_ctl_global_mode(&closed, &v), -EBADF, "closed mapping");

	/* not an fg_ctl: another size; the v4 layout (48 bytes, not mmapable) */
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "fg_ctl", 4, 64, 1, &mmapable);
	if (ASSERT_TRUE(fd >= 0, "an mmapable array of 64-byte values")) {
		ASSERT_EQ(fg_ctl_map_open(&cm, fd), -EPROTO, "wrong value size");
		ASSERT_TRUE(cm.ctl == NULL, "nothing mapped");
		close(fd);
	}
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "fg_ctl", 4, sizeof(struct fg_ctl), 1, NULL);
	if (ASSERT_TRUE(fd >= 0, "an array like fg_ctl, not mmapable")) {
		ASSERT_EQ(fg_ctl_map_open(&cm, fd), -EPROTO, "not mmapable");
		close(fd);
	}
	/* a stamp of another ABI version */
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "fg_ctl", 4, sizeof(struct fg_ctl), 1, &mmapable);
	if (ASSERT_TRUE(fd >= 0, "an mmapable fg_ctl")) {
		struct fg_ctl old = { .magic = FG_ABI_MAGIC, .abi = FG_ABI_VERSION - 1 };
		__u32 k = 0;

		ASSERT_OK(fg_ctl_map_open(&cm, fd), "fresh (unstamped) map opens");
		fg_ctl_map_close(&cm);
		ASSERT_OK(bpf_map_update_elem(fd, &k, &old, 0) ? -errno : 0, "stamp ABI 4");
		ASSERT_EQ(fg_ctl_map_open(&cm, fd), -EPROTO, "ABI 4 stamp");
		close(fd);
	}
	dp_close(&D);
}

/* What the switches store, read back through the readers and the map. */
/* A kill switch thrown while a fresh daemon starts (fg_ctl pinned, not yet
 * stamped) survives the stamp: fg_ctl_init writes only its own fields. */
static void test_stamp_keeps_operator_fields(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, mmapable, .map_flags = BPF_F_MMAPABLE);
	struct fg_ctl_map cm;
	struct fg_ctl c;
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "fg_ctl", 4, sizeof(struct fg_ctl), 1,
				&mmapable);

	if (!ASSERT_GE(fd, 0, "a fresh fg_ctl map"))
		return;
	if (!ASSERT_OK(fg_ctl_map_open(&cm, fd), "an unstamped fg_ctl maps")) {
		close(fd);
		return;
	}
	ASSERT_OK(fg_switch_bypass(&cm, true, 0), "bypass on before the stamp");
	ASSERT_OK(fg_switch_mode_ovr(&cm, FG_OVR_SHADOW), "shadow override before the stamp");
	ASSERT_OK(fg_ctl_stamp(&cm, FG_MODE_ENFORCE, 10, 0x1234), "stamp");
	ASSERT_OK(fg_ctl_snapshot(&cm, &c), "snapshot");
	ASSERT_EQ(c.magic, FG_ABI_MAGIC, "stamped");
	ASSERT_EQ(c.abi, FG_ABI_VERSION, "ABI");
	ASSERT_EQ(c.bypass, 1, "the operator's bypass survives the stamp");
	ASSERT_EQ(c.mode_ovr, FG_OVR_SHADOW, "the operator's override survives the stamp");
	ASSERT_EQ(c.src4_bits, 10, "the daemon's fields");
	ASSERT_EQ(fg_ctl_stamp(&cm, FG_MODE_SHADOW, 10, 1), -EEXIST, "a second stamp is refused");
	ASSERT_OK(fg_ctl_snapshot(&cm, &c), "snapshot");
	ASSERT_EQ(c.mode, FG_MODE_ENFORCE, "and changes nothing");
	fg_ctl_map_close(&cm);
	close(fd);
}

static void test_switches_store_their_fields(void)
{
	struct fg_ctl c;
	__u32 k = 0, v = 0;
	time_t t0 = time(NULL);

	if (setup())
		return;
	ASSERT_OK(fg_switch_bypass(&D.cm, true, 12345), "bypass on");
	ASSERT_OK(fg_switch_mode_ovr(&D.cm, FG_OVR_SHADOW), "global override shadow");
	ASSERT_OK(fg_switch_rule_ovr(&D.cm, 70, FG_OVR_ENFORCE), "rule 70 enforce");
	ASSERT_OK(fg_switch_rule_ovr(&D.cm, 3, FG_OVR_SHADOW), "rule 3 shadow");
	ASSERT_OK(fg_switch_file_mode(&D.cm, FG_MODE_SHADOW), "file shadow");
	/* through the syscall, as bpftool and the CLI's status read it */
	ASSERT_OK(bpf_map_lookup_elem(bpf_map__fd(D.skel->maps.fg_ctl), &k, &c) ? -errno : 0,
		  "lookup");
	ASSERT_EQ(c.bypass, 1, "bypass");
	ASSERT_EQ(c.bypass_until, 12345, "bypass_until");
	ASSERT_EQ(c.mode_ovr, FG_OVR_SHADOW, "mode_ovr");
	ASSERT_EQ(c.mode, FG_MODE_SHADOW, "mode");
	ASSERT_EQ(c.rule_ovr_set[0], 1ull << 3, "rule_ovr_set[0]");
	ASSERT_EQ(c.rule_ovr_set[1], 1ull << 6, "rule_ovr_set[1]");
	ASSERT_EQ(c.rule_ovr_shadow[0], 1ull << 3, "rule_ovr_shadow[0]");
	ASSERT_EQ(c.rule_ovr_shadow[1], 0, "rule_ovr_shadow[1]");
	ASSERT_GE(c.ovr_since, t0, "ovr_since stamped");
	ASSERT_EQ(c.magic, FG_ABI_MAGIC, "stamp kept");
	ASSERT_EQ(c.seed4, 0x5eed5eed5eed5eedull, "seed kept");
	ASSERT_OK(fg_ctl_rule_ovr(&D.cm, 70, &v), "read rule 70");
	ASSERT_EQ(v, FG_OVR_ENFORCE, "rule 70");
	ASSERT_OK(fg_ctl_rule_mode(&D.cm, 70, FG_MODE_ENFORCE, &v), "rule 70 in force");
	ASSERT_EQ(v, FG_MODE_SHADOW, "global shadow wins over a rule's enforce override");
	ASSERT_OK(fg_switch_mode_ovr(&D.cm, FG_OVR_ENFORCE), "global override enforce");
	ASSERT_OK(fg_ctl_global_mode(&D.cm, &v), "global mode");
	ASSERT_EQ(v, FG_MODE_ENFORCE, "the override beats the file's shadow");
	ASSERT_OK(fg_ctl_rule_mode(&D.cm, 3, FG_MODE_ENFORCE, &v), "rule 3 in force");
	ASSERT_EQ(v, FG_MODE_SHADOW, "rule 3's shadow override");
	ASSERT_OK(fg_switch_bypass(&D.cm, false, 0), "bypass off");
	ASSERT_OK(fg_ctl_snapshot(&D.cm, &c), "snapshot");
	ASSERT_EQ(c.bypass, 0, "bypass off");
	ASSERT_EQ(c.bypass_until, 12345, "off leaves bypass_until (not read while off)");
	dp_close(&D);
}

/* ---- concurrent writers and a torn-pair reader ------------------------------ */

/*
 * The operator's thread, step i (i % 4): 0 bypass on with no expiry (passes),
 * 1 off, 2 on with an expiry in the past (must not pass), 3 off; and the
 * global override, and the override of even rule id 2 * (i % 64). A
 * seqcount of the test's own (seq = 2i + 1 while step i is being written,
 * 2i + 2 after) tells the reader which steps a read overlapped.
 */
struct race {
	struct fg_ctl_map *cm;
	int whole_value;  /* control: read-modify-write the whole value by syscall */
	int bypass_first; /* control: store bypass before bypass_until */
	int ctl_fd;
	pthread_barrier_t go;
	__u64 seq;
	int writers_done;
	/* results */
	long lost_op, lost_apply;
	long reads, reads_on, torn;
	__u32 want_ovr[FG_MAX_IDS];
	int err;
};

static __u64 step_until(long i)
{
	return i % 4 == 2 ? (__u64)(1 + i) : 0; /* expired: the test clock is at 1 s */
}

static int whole_rmw(struct race *r, void (*set)(struct fg_ctl *, long), long i)
{
	struct fg_ctl c;
	__u32 k = 0;

	if (bpf_map_lookup_elem(r->ctl_fd, &k, &c))
		return -errno;
	set(&c, i);
	return bpf_map_update_elem(r->ctl_fd, &k, &c, 0) ? -errno : 0;
}

static void set_op(struct fg_ctl *c, long i)
{
	c->bypass_until = step_until(i);
	c->bypass = i % 2 == 0;
	c->mode_ovr = (__u32)((i + 1) % 3);
}

static void set_apply(struct fg_ctl *c, long j)
{
	c->slot = (__u32)(j & 1);
	c->mode = (__u32)((j >> 1) & 1);
}

static int op_step(struct race *r, long i)
{
	__u32 id = 2 * (__u32)(i % 64), ovr = (__u32)((i / 64) % 3);
	int err;

	if (r->whole_value)
		return whole_rmw(r, set_op, i);
	if (r->bypass_first && i % 2 == 0) {
		/* the wrong order, for the control: bypass, the other
		 * switches, then bypass_until */
		__atomic_store_n(&r->cm->ctl->bypass, 1, __ATOMIC_RELEASE);
		err = fg_switch_mode_ovr(r->cm, (__u32)((i + 1) % 3));
		if (!err)
			err = fg_switch_rule_ovr(r->cm, id, ovr);
		__atomic_store_n(&r->cm->ctl->bypass_until, step_until(i), __ATOMIC_RELEASE);
		r->want_ovr[id] = ovr;
		return err;
	}
	err = fg_switch_bypass(r->cm, i % 2 == 0, step_until(i));
	if (!err)
		err = fg_switch_mode_ovr(r->cm, (__u32)((i + 1) % 3));
	if (!err)
		err = fg_switch_rule_ovr(r->cm, id, ovr);
	r->want_ovr[id] = ovr;
	return err;
}

static int op_readback(struct race *r, long i)
{
	struct fg_ctl c;
	__u32 ovr = 0;
	int bad;

	fg_ctl_snapshot(r->cm, &c);
	bad = c.bypass != (i % 2 == 0) || (c.bypass && c.bypass_until != step_until(i)) ||
	      c.mode_ovr != (__u32)((i + 1) % 3);
	if (!r->whole_value) {
		fg_ctl_rule_ovr(r->cm, 2 * (__u32)(i % 64), &ovr);
		bad |= ovr != (__u32)((i / 64) % 3);
	}
	return bad;
}

/* Every 256 steps, right after a step that leaves bypass on, let the
 * reader see it on at least once (at most 200 ms): on 2 CPUs shared by 3
 * threads, and more under load, it could otherwise run only after the
 * writers, or only while bypass is off. */
static void wait_reader(struct race *r, __u64 *budget_ns)
{
	long seen = __atomic_load_n(&r->reads_on, __ATOMIC_RELAXED);
	__u64 t0 = mono_ns(), waited = 0;

	/* enough seen, or 2 s spent waiting in all (the controls' writes may
	 * keep bypass off): stop waiting */
	if (seen >= 1000 || *budget_ns >= 2000000000ull)
		return;
	while (__atomic_load_n(&r->reads_on, __ATOMIC_RELAXED) == seen &&
	       (waited = mono_ns() - t0) < 200000000ull)
		sched_yield();
	*budget_ns += waited;
}

static void *op_thread(void *arg)
{
	struct race *r = arg;
	__u64 budget_ns = 0;

	if ((r->err = pin_cpu(0)))
		return NULL;
	pthread_barrier_wait(&r->go);
	for (long i = 0; i < N_WRITES && !r->err; i++) {
		__atomic_store_n(&r->seq, 2 * (__u64)i + 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		r->err = op_step(r, i);
		__atomic_store_n(&r->seq, 2 * (__u64)i + 2, __ATOMIC_RELEASE);
		if (i % 256 == 2) /* an even step: bypass is on until the next one */
			wait_reader(r, &budget_ns);
		r->lost_op += op_readback(r, i);
	}
	__atomic_fetch_add(&r->writers_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Policy apply's thread, step j: slot j & 1, file mode (j >> 1) & 1, and
 * the overrides of every odd rule id forgotten (ids the operator's thread
 * never touches: an and that is not atomic would wipe its bits). */
static void *apply_thread(void *arg)
{
	struct race *r = arg;
	const __u64 odd[FG_OVR_WORDS] = { 0xaaaaaaaaaaaaaaaaull, 0xaaaaaaaaaaaaaaaaull };
	int err = pin_cpu(1);

	pthread_barrier_wait(&r->go);
	for (long j = 0; j < N_WRITES && !err; j++) {
		struct fg_ctl c;

		if (r->whole_value) {
			err = whole_rmw(r, set_apply, j);
		} else {
			err = fg_switch_slot(r->cm, (__u32)(j & 1));
			if (!err)
				err = fg_switch_file_mode(r->cm, (__u32)((j >> 1) & 1));
			if (!err)
				err = fg_switch_clear_rule_ovr_ids(r->cm, odd);
		}
		fg_ctl_snapshot(r->cm, &c);
		r->lost_apply += c.slot != (__u32)(j & 1) || c.mode != (__u32)((j >> 1) & 1);
	}
	if (err)
		r->err = err;
	__atomic_fetch_add(&r->writers_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Did any step the read overlapped (first..last) leave a bypass that passes? */
static int pass_allowed(long first, long last)
{
	for (long i = first < 0 ? 0 : first; i <= last; i++)
		if (i % 4 == 0)
			return 1;
	return 0;
}

/* The program's test: bypass, then bypass_until, each read once. */
static void *reader_thread(void *arg)
{
	struct race *r = arg;
	const __u64 now = 1000000000ull; /* the test clock */

	pthread_barrier_wait(&r->go);
	while (__atomic_load_n(&r->writers_done, __ATOMIC_ACQUIRE) < 2) {
		__u64 s1 = __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE), s2, until;
		__u32 on = __atomic_load_n(&r->cm->ctl->bypass, __ATOMIC_ACQUIRE);

		until = __atomic_load_n(&r->cm->ctl->bypass_until, __ATOMIC_ACQUIRE);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&r->seq, __ATOMIC_RELAXED);
		__atomic_store_n(&r->reads, r->reads + 1, __ATOMIC_RELAXED);
		if (!on)
			continue;
		__atomic_store_n(&r->reads_on, r->reads_on + 1, __ATOMIC_RELAXED);
		/* the state after step s1/2 - 1 up to the one s2 was writing */
		if ((!until || now < until) &&
		    !pass_allowed((long)(s1 / 2) - 1, (long)(s2 / 2) - !(s2 & 1)))
			r->torn++;
	}
	return NULL;
}

static int race_run(struct race *r)
{
	pthread_t th[3];

	r->cm = &D.cm;
	r->ctl_fd = bpf_map__fd(D.skel->maps.fg_ctl);
	pthread_barrier_init(&r->go, NULL, 3);
	pthread_create(&th[0], NULL, op_thread, r);
	pthread_create(&th[1], NULL, apply_thread, r);
	pthread_create(&th[2], NULL, reader_thread, r);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&r->go);
	return r->err;
}

static void test_concurrent_writers(void)
{
	struct race *r;
	struct fg_ctl c;
	long wrong = 0;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fg_test_skip("needs 2 online CPUs, this machine has 1");
		return;
	}
	r = calloc(1, sizeof(*r));
	if (!ASSERT_TRUE(r, "memory") || setup()) {
		free(r);
		return;
	}
	ASSERT_OK(race_run(r), "both writers ran");
	ASSERT_OK(fg_ctl_snapshot(&D.cm, &c), "snapshot");
	printf("  %d + %d writes; read back wrong: operator %ld, apply %ld; reader: %ld reads, "
	       "%ld with bypass on, %ld torn\n",
	       N_WRITES, N_WRITES, r->lost_op, r->lost_apply, r->reads, r->reads_on, r->torn);
	ASSERT_EQ(r->lost_op, 0, "operator's fields read back as written, every time");
	ASSERT_EQ(r->lost_apply, 0, "apply's fields read back as written, every time");
	/* the last steps: operator 99998 (on until 99999 ns) and 99999 (off),
	 * apply 99999 */
	ASSERT_EQ(c.bypass, 0, "operator's last bypass");
	ASSERT_EQ(c.bypass_until, step_until(N_WRITES - 2), "operator's last bypass_until");
	ASSERT_EQ(c.mode_ovr, N_WRITES % 3, "operator's last global override");
	ASSERT_EQ(c.slot, (N_WRITES - 1) & 1, "apply's last slot");
	ASSERT_EQ(c.mode, ((N_WRITES - 1) >> 1) & 1, "apply's last file mode");
	for (__u32 id = 0; id < FG_MAX_IDS; id++) {
		__u32 ovr;

		fg_ctl_rule_ovr(&D.cm, id, &ovr);
		wrong += ovr != (id & 1 ? FG_OVR_NONE : r->want_ovr[id]);
	}
	ASSERT_EQ(wrong, 0, "every rule id's override is its last write");
	{
		struct fg_ctl c2;
		__u32 bits = 0;

		ASSERT_OK(fg_ctl_snapshot(&D.cm, &c2), "snapshot after the race");
		for (int w = 0; w < FG_OVR_WORDS; w++)
			bits += (__u32)__builtin_popcountll(c2.rule_ovr_set[w]);
		ASSERT_EQ(c2.rule_ovr_n, bits,
			  "rule_ovr_n counts the set bits once both writers are done");
	}
	ASSERT_EQ(r->torn, 0, "no read saw a bypass pass that no overlapping step allowed");
	ASSERT_GE(r->reads_on, 100, "the reader did see the switch on");
	dp_close(&D);

	/* controls, to show the checks can fail: the old whole-value rewrite
	 * (lost fields), and bypass stored before its expiry (torn pairs) */
	memset(r, 0, sizeof(*r));
	r->whole_value = 1;
	if (!setup()) {
		race_run(r);
		printf("  control, whole-value rewrites: %ld + %ld writes lost\n", r->lost_op,
		       r->lost_apply);
		dp_close(&D);
	}
	memset(r, 0, sizeof(*r));
	r->bypass_first = 1;
	if (!setup()) {
		race_run(r);
		printf("  control, bypass stored before bypass_until: %ld torn reads of %ld\n",
		       r->torn, r->reads_on);
		dp_close(&D);
	}
	free(r);
}

/* ---- the program as the reader ------------------------------------------- */

struct prog_race {
	int done, err;
	long runs;
};

static void *flood_thread(void *arg)
{
	struct prog_race *pr = arg;
	struct pkt_spec s = { .family = 4, .src = "192.0.2.50", .proto = 17, .dport = 7 };
	uint8_t buf[256];
	int len = pkt_build(&s, buf, sizeof(buf));

	if ((pr->err = pin_cpu(1)))
		return NULL;
	while (!__atomic_load_n(&pr->done, __ATOMIC_ACQUIRE)) {
		__u32 ret;

		if ((pr->err = dp_run(&D, buf, len, &ret)))
			break;
		pr->runs++;
	}
	return NULL;
}

/* Toggle i of test_program_never_sees_torn_bypass: go on? The event
 * counter is read once every 4096 toggles. */
static int keep_toggling(long i, struct prog_race *pr, __u64 t0)
{
	__u64 dt;

	if (i < N_WRITES || i % 4096)
		return 1;
	dt = mono_ns() - t0;
	if (__atomic_load_n(&pr->runs, __ATOMIC_RELAXED) < 20000 && dt < 5 * NS)
		return 1;
	return dt < 60 * NS && !dp_row_ev(&D, 0, FG_EV_BYPASS_EXPIRED);
}

/* The operator toggles bypass between on-with-an-expired-time and off
 * while another CPU runs the program: no packet may be bypassed. At least
 * 100,000 toggles, and on until 20,000 packets have run (at most 5 s) and
 * the program has seen the switch on (at most 60 s: on a loaded machine the
 * two threads may take turns rather than overlap for a while). */
static void test_program_never_sees_torn_bypass(void)
{
	struct prog_race pr = {};
	pthread_t th;
	__u64 t0;
	long i;
	int err = 0;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fg_test_skip("needs 2 online CPUs, this machine has 1");
		return;
	}
	if (setup_drop_all())
		return;
	pthread_create(&th, NULL, flood_thread, &pr);
	pin_cpu(0);
	while (!__atomic_load_n(&pr.runs, __ATOMIC_RELAXED) && !pr.err)
		sched_yield();
	t0 = mono_ns();
	for (i = 0; !err && !pr.err && keep_toggling(i, &pr, t0); i++)
		err = fg_switch_bypass(&D.cm, i % 2 == 0, 1 + (__u64)i);
	__atomic_store_n(&pr.done, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	ASSERT_OK(err, "toggles");
	ASSERT_OK(pr.err, "program runs");
	ASSERT_GE(i, N_WRITES, "100,000 toggles or more");
	printf("  %ld packets during %ld toggles: %llu bypassed, %llu saw an expired bypass\n",
	       pr.runs, i, (unsigned long long)dp_row_pkts(&D, FG_ROW_GLOBAL, FG_OUT_BYPASS),
	       (unsigned long long)dp_row_ev(&D, 0, FG_EV_BYPASS_EXPIRED));
	ASSERT_EQ(dp_row_pkts(&D, FG_ROW_GLOBAL, FG_OUT_BYPASS), 0, "no packet bypassed");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_DROP), (__u64)pr.runs,
		  "every packet judged by the rule");
	ASSERT_GE(dp_row_ev(&D, 0, FG_EV_BYPASS_EXPIRED), 1, "the program did see the switch on");
	unpin();
	dp_close(&D);
}

/* ---- the kill switch while the pin dir is locked --------------------------- */

struct holder {
	const char *dir;
	int held, stop, err;
	long writes;
};

/* Another writer: takes the pin dir's lock as floodgated's apply does and
 * keeps writing the inactive policy slot (a reload of a large policy) until
 * told to stop, at most 5 s. */
static void *holder_thread(void *arg)
{
	struct holder *h = arg;
	int fd = open(h->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct fg_ctl c;
	__u64 t0 = mono_ns();

	if (fd < 0 || flock(fd, LOCK_EX)) {
		h->err = -errno;
		__atomic_store_n(&h->held, -1, __ATOMIC_RELEASE);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	__atomic_store_n(&h->held, 1, __ATOMIC_RELEASE);
	fg_ctl_snapshot(&D.cm, &c);
	while (!__atomic_load_n(&h->stop, __ATOMIC_ACQUIRE) && mono_ns() - t0 < 5 * NS) {
		__u32 slot = c.slot ^ 1;

		if (bpf_map_update_elem(bpf_map__fd(D.skel->maps.fg_policy), &slot, &D.pol, 0)) {
			h->err = -errno;
			break;
		}
		h->writes++;
	}
	flock(fd, LOCK_UN);
	close(fd);
	return NULL;
}

static int locked_by_other(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), locked;

	if (fd < 0)
		return -errno;
	locked = flock(fd, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK;
	if (!locked)
		flock(fd, LOCK_UN);
	close(fd);
	return locked;
}

/* Issue 8 item 1: bypass on while another process's policy write holds the
 * pin dir's lock: from opening the pinned fg_ctl to the first bypassed
 * packet, well under 10 ms. */
static void test_bypass_while_pin_dir_locked(void)
{
	struct pkt_spec s = { .family = 4, .src = "192.0.2.51", .proto = 17, .dport = 7 };
	struct holder h = {};
	struct fg_ctl_map cm = {};
	struct statfs sf;
	char dir[64], pin[96];
	pthread_t th;
	__u64 t0, t1;
	int fd, v = 0, tries = 0;

	if (statfs("/sys/fs/bpf", &sf) || sf.f_type != BPF_FS_MAGIC) {
		fg_test_skip("no bpffs on /sys/fs/bpf");
		return;
	}
	if (setup_drop_all())
		return;
	snprintf(dir, sizeof(dir), "/sys/fs/bpf/fg-test-ctl-%d", (int)getpid());
	snprintf(pin, sizeof(pin), "%s/fg_ctl", dir);
	if (!ASSERT_OK(mkdir(dir, 0700) ? -errno : 0, "pin dir") ||
	    !ASSERT_OK(bpf_obj_pin(bpf_map__fd(D.skel->maps.fg_ctl), pin), "pin fg_ctl"))
		goto out;
	h.dir = dir;
	pthread_create(&th, NULL, holder_thread, &h);
	while (!__atomic_load_n(&h.held, __ATOMIC_ACQUIRE))
		usleep(1000);
	if (!ASSERT_EQ(h.held, 1, "the other writer holds the lock"))
		goto join;
	usleep(20000); /* well into its policy write */
	ASSERT_EQ(locked_by_other(dir), 1, "the pin dir is locked");

	t0 = mono_ns();
	fd = bpf_obj_get(pin);
	if (!ASSERT_TRUE(fd >= 0, "open the pinned fg_ctl"))
		goto join;
	v = fg_ctl_map_open(&cm, fd);
	close(fd);
	if (!ASSERT_OK(v, "map it") || !ASSERT_OK(fg_switch_bypass(&cm, true, 0), "bypass on"))
		goto join;
	do {
		v = dp_send(&D, &s);
		tries++;
	} while (v != XDP_PASS && tries < 1000);
	t1 = mono_ns();
	printf("  bypass on with the lock held: first bypassed packet after %.3f ms (%d packets), "
	       "the other writer wrote %ld policies meanwhile\n",
	       (t1 - t0) / 1e6, tries, h.writes);
	ASSERT_EQ(v, XDP_PASS, "the kill switch took effect");
	ASSERT_EQ(tries, 1, "on the very next packet");
	ASSERT_LE(t1 - t0, 10 * 1000000ull, "within 10 ms");
	ASSERT_EQ(locked_by_other(dir), 1, "while the pin dir was still locked");
	ASSERT_EQ(dp_row_pkts(&D, FG_ROW_GLOBAL, FG_OUT_BYPASS), 1, "counted as bypassed");
	ASSERT_OK(fg_switch_bypass(&cm, false, 0), "bypass off");
	ASSERT_EQ(dp_send(&D, &s), XDP_DROP, "and off again, still locked");
join:
	__atomic_store_n(&h.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	ASSERT_OK(h.err, "the other writer");
	fg_ctl_map_close(&cm);
out:
	unlink(pin);
	rmdir(dir);
	ASSERT_EQ(access(dir, F_OK), -1, "pin dir removed");
	dp_close(&D);
}

/* ---- fg_meta's reload fields, read whole ------------------------------------ */

struct meta_race {
	int fd, flags, done, err;
	long reads, torn;
};

static void meta_fill(struct fg_meta *m, __u32 seq)
{
	memset(m, 0, sizeof(*m));
	m->magic = FG_ABI_MAGIC;
	m->abi = FG_ABI_VERSION;
	m->reload_seq = seq;
	m->reload_err = seq % 7;
	m->reload_done = seq;
	/* a message whose every byte depends on seq */
	for (size_t i = 0; i + 1 < sizeof(m->reload_msg); i++)
		m->reload_msg[i] = (char)('a' + (seq + i) % 26);
}

static void *meta_reader(void *arg)
{
	struct meta_race *mr = arg;
	struct fg_meta m, want;
	__u32 k = 0;

	while (!__atomic_load_n(&mr->done, __ATOMIC_ACQUIRE)) {
		if (bpf_map_lookup_elem_flags(mr->fd, &k, &m, mr->flags)) {
			mr->err = -errno;
			break;
		}
		meta_fill(&want, m.reload_seq);
		mr->reads++;
		mr->torn += m.reload_err != want.reload_err || m.reload_done != want.reload_done ||
			    memcmp(m.reload_msg, want.reload_msg, sizeof(m.reload_msg));
	}
	return NULL;
}

static long meta_race_run(int flags, long *reads, int *err)
{
	struct meta_race mr = { .fd = bpf_map__fd(D.skel->maps.fg_meta), .flags = flags };
	struct fg_meta m;
	pthread_t th;
	__u32 k = 0;

	/* the first update before the reader starts: the map's zeroes are no
	 * update's fields, and a reader scheduled before the writer (a loaded
	 * machine) counted each read of them as torn */
	meta_fill(&m, 1);
	*err = bpf_map_update_elem(mr.fd, &k, &m, flags) ? -errno : 0;
	*reads = 0;
	if (*err)
		return 0;
	pthread_create(&th, NULL, meta_reader, &mr);
	for (__u32 seq = 2; seq <= N_WRITES && !*err; seq++) {
		meta_fill(&m, seq);
		*err = bpf_map_update_elem(mr.fd, &k, &m, flags) ? -errno : 0;
	}
	__atomic_store_n(&mr.done, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	if (!*err)
		*err = mr.err;
	*reads = mr.reads;
	return mr.torn;
}

/* Item 8: `floodgate reload` reports the daemon's reason from fg_meta. With
 * BPF_F_LOCK on both sides (fg_meta carries a bpf_spin_lock) a reader sees
 * the reload fields of one update, never the message of one and the
 * result of another. */
static void test_meta_reload_fields_whole(void)
{
	long reads = 0, torn;
	int err;

	if (setup())
		return;
	torn = meta_race_run(BPF_F_LOCK, &reads, &err);
	ASSERT_OK(err, "BPF_F_LOCK updates and lookups of fg_meta");
	printf("  %d locked updates: %ld locked reads, %ld torn\n", N_WRITES, reads, torn);
	ASSERT_EQ(torn, 0, "no torn reload fields under BPF_F_LOCK");
	ASSERT_GE(reads, 100, "the reader ran alongside");
	torn = meta_race_run(0, &reads, &err);
	printf("  control, no lock: %ld torn reads of %ld\n", torn, reads);
	dp_close(&D);
}

/* rule_ovr_n, which lets the program skip the bitmaps: one per id whose
 * override is set, over all FG_OVR_WORDS words, whatever the order of
 * sets, repeated sets and clears. */
static void test_rule_ovr_count(void)
{
	__u64 mask[FG_OVR_WORDS] = {};
	struct fg_ctl c;
	__u32 v;

	if (setup())
		return;
	ASSERT_OK(fg_ctl_snapshot(&D.cm, &c), "snapshot");
	ASSERT_EQ(c.rule_ovr_n, 0, "fresh: no override");
	ASSERT_OK(fg_switch_rule_ovr(&D.cm, 0, FG_OVR_SHADOW), "id 0 shadow");
	ASSERT_OK(fg_switch_rule_ovr(&D.cm, 300, FG_OVR_ENFORCE), "id 300 enforce");
	ASSERT_OK(fg_switch_rule_ovr(&D.cm, FG_MAX_IDS - 1, FG_OVR_SHADOW), "last id shadow");
	ASSERT_OK(fg_switch_rule_ovr(&D.cm, 300, FG_OVR_SHADOW), "id 300 again, now shadow");
	ASSERT_OK(fg_ctl_snapshot(&D.cm, &c), "snapshot");
	ASSERT_EQ(c.rule_ovr_n, 3, "three ids, one set twice");
	ASSERT_EQ(c.rule_ovr_set[FG_OVR_WORDS - 1], 1ull << 63, "the last word's last bit");
	ASSERT_OK(fg_ctl_rule_ovr(&D.cm, 300, &v), "read id 300");
	ASSERT_EQ(v, FG_OVR_SHADOW, "id 300: the last write");
	ASSERT_OK(fg_switch_rule_ovr(&D.cm, 7, FG_OVR_NONE), "clear an id never set");
	ASSERT_OK(fg_switch_rule_ovr(&D.cm, 0, FG_OVR_NONE), "clear id 0");
	ASSERT_OK(fg_switch_rule_ovr(&D.cm, 0, FG_OVR_NONE), "clear id 0 again");
	ASSERT_OK(fg_ctl_snapshot(&D.cm, &c), "snapshot");
	ASSERT_EQ(c.rule_ovr_n, 2, "two left");
	mask[300 / 64] = 1ull << (300 % 64) | 1ull << 1; /* and an id never set */
	mask[FG_OVR_WORDS - 1] = 1ull << 63;
	ASSERT_OK(fg_switch_clear_rule_ovr_ids(&D.cm, mask), "apply forgets 300 and the last id");
	ASSERT_OK(fg_ctl_snapshot(&D.cm, &c), "snapshot");
	ASSERT_EQ(c.rule_ovr_n, 0, "none left");
	for (int w = 0; w < FG_OVR_WORDS; w++)
		ASSERT_EQ(c.rule_ovr_set[w], 0, "no bit left");
	dp_close(&D);
}

static const struct fg_test_case cases[] = {
	FG_CASE(test_bad_input),
	FG_CASE(test_stamp_keeps_operator_fields),
	FG_CASE(test_switches_store_their_fields),
	FG_CASE(test_concurrent_writers),
	FG_CASE(test_program_never_sees_torn_bypass),
	FG_CASE(test_bypass_while_pin_dir_locked),
	FG_CASE(test_meta_reload_fields_whole),
	FG_CASE(test_rule_ovr_count),
};

FG_MAIN_BPF("test_ctl", "needs root for BPF maps and BPF_PROG_TEST_RUN", cases)
