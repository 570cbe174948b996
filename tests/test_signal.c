// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The shedder's utilization signals (user/shed/fgsignal.c): the parsers on
 * sample texts, then each reader on the real thing: /proc/stat with a busy
 * thread of our own, /proc/pressure/cpu under contention we make, a
 * listener on 127.0.0.1 whose accept queue we fill, and files. No root
 * needed (sock_diag dumps are unprivileged).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include "fgtest.h"
#include "shed/fgsignal.h"
#include "lib/sysutil.h"

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* --- specs --------------------------------------------------------------- */

static void test_spec_parse(void)
{
	static const struct {
		const char *spec;
		int kind;
	} good[] = {
		{ "cpu", FG_SIG_CPU },
		{ "cpu:1", FG_SIG_CPU },
		{ "psi", FG_SIG_PSI },
		{ "psi:/sys/fs/cgroup/web.slice/cpu.pressure", FG_SIG_PSI },
		{ "accept_queue:8080", FG_SIG_ACCEPTQ },
		{ "accept_queue:65535", FG_SIG_ACCEPTQ },
		{ "file:/run/floodgate/load", FG_SIG_FILE },
	};
	static const struct {
		const char *spec, *why;
	} bad[] = {
		{ "", "unknown signal" },
		{ "mem", "unknown signal" },
		{ "CPU", "unknown signal" },
		{ "cpu:", "CPU number" },
		{ "cpu:-1", "CPU number" },
		{ "cpu:1x", "CPU number" },
		{ "cpu:70000", "CPU number" },
		{ "psi:", "absolute" },
		{ "psi:cpu.pressure", "absolute" },
		{ "accept_queue:0", "1..65535" },
		{ "accept_queue:65536", "1..65535" },
		{ "accept_queue:", "1..65535" },
		{ "accept_queue:80 ", "1..65535" },
		{ "accept_queue:+80", "1..65535" },
		{ "file:", "absolute" },
		{ "file:load", "absolute" },
	};
	struct fg_signal s, before;
	char why[FG_WHY_LEN], name[PATH_MAX + 32];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ASSERT_OK(fg_signal_parse(good[i].spec, &s, why), good[i].spec);
		ASSERT_EQ(s.kind, good[i].kind, good[i].spec);
		fg_signal_name(&s, name, sizeof(name));
		ASSERT_TRUE(!strcmp(name, good[i].spec), "the name gives the spec back");
	}
	fg_signal_parse("cpu", &s, NULL);
	ASSERT_EQ(s.cpu, -1, "cpu: all CPUs");
	fg_signal_parse("cpu:1", &s, NULL);
	ASSERT_EQ(s.cpu, 1, "cpu:1");
	fg_signal_parse("psi", &s, NULL);
	ASSERT_TRUE(!strcmp(s.path, "/proc/pressure/cpu"), "psi: the host's pressure file");
	fg_signal_parse("accept_queue:8080", &s, NULL);
	ASSERT_EQ(s.port, 8080, "port");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&s, 0x3c, sizeof(s));
		before = s;
		why[0] = 0;
		ASSERT_EQ(fg_signal_parse(bad[i].spec, &s, why), -EINVAL, bad[i].spec);
		ASSERT_STR_CONTAINS(why, bad[i].why, bad[i].spec);
		ASSERT_TRUE(!memcmp(&s, &before, sizeof(s)), "a refused spec writes nothing");
	}
}

/* --- cpu ----------------------------------------------------------------- */

static const char stat_text[] = "cpu  30325 0 55369 226033 510 0 6147 20 0 0\n"
				"cpu0 13847 0 26421 115460 86 0 3311 9 0 0\n"
				"cpu1 16478 0 28947 110572 423 0 2836 11 5 0\n"
				"cpu10 1 1 1 1 1 1 1 1 0 0\n"
				"intr 1 2 3\n";

static void test_cpu_parse(void)
{
	static const struct {
		const char *what, *text;
		int cpu, err;
		__u64 busy, idle;
	} cases[] = {
		/* busy = user + nice + system + irq + softirq + steal; idle = idle + iowait */
		{ "all CPUs", stat_text, -1, 0, 30325 + 55369 + 6147 + 20, 226033 + 510 },
		{ "cpu1: guest (5) is inside user already", stat_text, 1, 0,
		  16478 + 28947 + 2836 + 11, 110572 + 423 },
		{ "cpu10 is not cpu1's prefix", stat_text, 10, 0, 6, 2 },
		{ "no cpu2", stat_text, 2, -ENOENT, 0, 0 },
		{ "a 2.4 kernel's four fields", "cpu  1 2 3 4\n", -1, 0, 6, 4 },
		{ "softirq alone is busy", "cpu  0 0 0 10 0 0 30 0 0 0\n", -1, 0, 30, 10 },
		{ "three fields", "cpu  1 2 3\n", -1, -EINVAL, 0, 0 },
		{ "not a number", "cpu  1 2 x 4 5 6 7 8\n", -1, -EINVAL, 0, 0 },
		{ "overflow", "cpu  99999999999999999999 0 0 0\n", -1, -EINVAL, 0, 0 },
		{ "negative", "cpu  -1 0 0 0\n", -1, -EINVAL, 0, 0 },
		{ "no cpu line", "intr 1 2 3\n", -1, -ENOENT, 0, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fg_cpu_times t = { 0 };

		if (!ASSERT_EQ(fg_cpu_parse(cases[i].text, cases[i].cpu, &t), cases[i].err,
			       cases[i].what) ||
		    cases[i].err)
			continue;
		ASSERT_EQ(t.busy, cases[i].busy, cases[i].what);
		ASSERT_EQ(t.idle, cases[i].idle, cases[i].what);
	}

	struct fg_cpu_times a = { 100, 900 }, b = { 150, 950 }, c = { 150, 890 };
	double u = -1;

	ASSERT_OK(fg_cpu_util(&a, &b, &u), "util");
	ASSERT_NEAR(u, 0.5, 0, "50 busy of 100 ticks");
	ASSERT_OK(fg_cpu_util(&a, &c, &u), "idle went backwards");
	ASSERT_NEAR(u, 1, 0, "a backwards counter counts as no time");
	ASSERT_EQ(fg_cpu_util(&a, &a, &u), -EAGAIN, "no tick passed");
}

static volatile int spin_stop;

static void *spin(void *arg)
{
	int cpu = (int)(long)arg;

	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	while (!spin_stop)
		;
	return NULL;
}

static int first_allowed_cpu(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			return c;
	return -1;
}

/* One sample over ms milliseconds. */
static int sample(struct fg_signal *s, long ms, double *u)
{
	int err = fg_signal_read(s, u); /* restart the window */

	if (err && err != -EAGAIN)
		return err;
	sleep_ms(ms);
	return fg_signal_read(s, u);
}

static void test_cpu_busy_thread(void)
{
	struct fg_signal one, all;
	double base = -1, busy = -1, busy_all = -1;
	int cpu = first_allowed_cpu();
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	char spec[32];
	pthread_t th;

	if (!ASSERT_GE(cpu, 0, "an allowed CPU"))
		return;
	snprintf(spec, sizeof(spec), "cpu:%d", cpu);
	ASSERT_OK(fg_signal_parse(spec, &one, NULL), spec);
	ASSERT_OK(fg_signal_parse("cpu", &all, NULL), "cpu");
	if (!ASSERT_OK(fg_signal_open(&one), "open cpu:N") ||
	    !ASSERT_OK(fg_signal_open(&all), "open cpu"))
		return;
	ASSERT_OK(sample(&one, 500, &base), "baseline sample");
	spin_stop = 0;
	if (!ASSERT_OK(pthread_create(&th, NULL, spin, (void *)(long)cpu), "busy thread"))
		return;
	sleep_ms(50);
	fg_signal_read(&all, &busy_all); /* restart both windows together */
	ASSERT_OK(sample(&one, 500, &busy), "busy sample");
	ASSERT_OK(fg_signal_read(&all, &busy_all), "all-CPU sample");
	spin_stop = 1;
	pthread_join(th, NULL);
	printf("  %s: %.3f idle, %.3f with a thread spinning on it; all %ld CPUs: %.3f\n", spec,
	       base, busy, n, busy_all);
	ASSERT_TRUE(base >= 0 && base <= 1, "baseline in [0, 1]");
	ASSERT_GE(busy * 1000, 900, "a CPU with a spinning thread reads >= 0.9");
	if (base < 0.85)
		ASSERT_GE((busy - base) * 1000, 50, "and the value rose");
	else
		printf("  (that CPU was already %.0f%% busy from others: only the level is checked)\n",
		       base * 100);
	ASSERT_GE(busy_all * n * 1000, 900, "all CPUs: at least our thread's share, 0.9 / n");
	ASSERT_TRUE(busy_all <= 1, "all CPUs: at most 1");
	fg_signal_close(&one);
	fg_signal_close(&all);
}

/* --- psi ----------------------------------------------------------------- */

static void test_psi_parse(void)
{
	static const struct {
		const char *what, *text;
		int err;
		double avg10;
		__u64 total;
	} cases[] = {
		{ "host file",
		  "some avg10=1.98 avg60=6.38 avg300=5.60 total=60224654\n"
		  "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		  0, 1.98, 60224654 },
		{ "some only, no newline", "some avg10=100.00 avg60=0.00 avg300=0.00 total=7", 0,
		  100, 7 },
		{ "full first",
		  "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
		  "some avg10=0.50 avg60=0.00 avg300=0.00 total=9\n",
		  0, 0.5, 9 },
		{ "empty", "", -EINVAL, 0, 0 },
		{ "no some line", "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", -EINVAL, 0,
		  0 },
		{ "avg300 missing", "some avg10=1.98 avg60=6.38 total=5\n", -EINVAL, 0, 0 },
		{ "avg10 not a number", "some avg10=abc avg60=0.00 avg300=0.00 total=5\n", -EINVAL,
		  0, 0 },
		{ "avg10 negative", "some avg10=-1.00 avg60=0.00 avg300=0.00 total=5\n", -EINVAL, 0,
		  0 },
		{ "avg10 above 100", "some avg10=100.01 avg60=0.00 avg300=0.00 total=5\n", -EINVAL,
		  0, 0 },
		{ "exponent", "some avg10=1e1 avg60=0.00 avg300=0.00 total=5\n", -EINVAL, 0, 0 },
		{ "total empty", "some avg10=1.98 avg60=6.38 avg300=5.60 total=\n", -EINVAL, 0, 0 },
		{ "total trailing junk", "some avg10=1.98 avg60=6.38 avg300=5.60 total=12x\n",
		  -EINVAL, 0, 0 },
		{ "some without a space", "someavg10=1.98 avg60=6.38 avg300=5.60 total=1\n",
		  -EINVAL, 0, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fg_psi p = { 0 };

		if (!ASSERT_EQ(fg_psi_parse(cases[i].text, &p), cases[i].err, cases[i].what) ||
		    cases[i].err)
			continue;
		ASSERT_NEAR(p.avg10, cases[i].avg10, 1e-12, cases[i].what);
		ASSERT_EQ(p.total, cases[i].total, cases[i].what);
	}

	double u = -1;

	ASSERT_OK(fg_psi_util(1000, 0, 251000, 1000000000, &u), "delta of total");
	ASSERT_NEAR(u, 0.25, 1e-12, "250 ms stalled in 1 s");
	ASSERT_OK(fg_psi_util(1000, 0, 3000000, 1000000000, &u), "more stall than time");
	ASSERT_NEAR(u, 1, 0, "clamped to 1");
	ASSERT_OK(fg_psi_util(5000, 0, 1000, 1000000000, &u), "total went backwards");
	ASSERT_NEAR(u, 0, 0, "counts as no stall");
	ASSERT_EQ(fg_psi_util(0, 0, 100, 5000000, &u), -EAGAIN, "5 ms apart: too short to measure");
	ASSERT_EQ(fg_psi_util(0, 10, 100, 5, &u), -EAGAIN, "clock backwards");
}

static void test_psi_host(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	double idle = -1, busy = -1;
	struct fg_signal s;
	pthread_t th[64];
	int nth = (int)(2 * n < 64 ? 2 * n : 64), started = 0;

	if (access(FG_SIG_PSI_DEFAULT, R_OK)) {
		fg_test_skip("%s: %s (kernel without CONFIG_PSI or booted with psi=0)",
			     FG_SIG_PSI_DEFAULT, strerror(errno));
		return;
	}
	ASSERT_OK(fg_signal_parse("psi", &s, NULL), "psi");
	if (!ASSERT_OK(fg_signal_open(&s), "open psi"))
		return;
	ASSERT_OK(sample(&s, 300, &idle), "sample without load of ours");
	/* two spinning threads per CPU: every CPU always has one waiting */
	spin_stop = 0;
	for (int i = 0; i < nth; i++)
		started += !pthread_create(&th[i], NULL, spin, (void *)-1L);
	sleep_ms(50);
	ASSERT_OK(sample(&s, 400, &busy), "sample under contention");
	spin_stop = 1;
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	printf("  psi some: %.3f, with %d threads spinning on %ld CPUs: %.3f\n", idle, started, n,
	       busy);
	ASSERT_TRUE(idle >= 0 && idle <= 1, "in [0, 1]");
	ASSERT_TRUE(busy >= 0 && busy <= 1, "in [0, 1]");
	ASSERT_GE(busy * 1000, 500, "contention we made shows");
	fg_signal_close(&s);
}

/* Where cgroup v2 is mounted: /sys/fs/cgroup, or .../unified on a hybrid host. */
static int cgroup2_mount(char *out, size_t len)
{
	char line[1024], mnt[512];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int found = 0;

	while (f && !found && fgets(line, sizeof(line), f)) {
		if (strstr(line, " - cgroup2 ") &&
		    sscanf(line, "%*s %*s %*s %*s %511s", mnt) == 1) {
			snprintf(out, len, "%s", mnt);
			found = 1;
		}
	}
	if (f)
		fclose(f);
	return found;
}

/* Our own cgroup's cpu.pressure, through psi:PATH. */
static void test_psi_cgroup(void)
{
	char line[PATH_MAX], mnt[512], path[PATH_MAX + 600], spec[PATH_MAX + 700];
	struct fg_signal s;
	double u = -1;
	FILE *f;
	int found = 0;

	if (!cgroup2_mount(mnt, sizeof(mnt))) {
		fg_test_skip("cgroup v2 is not mounted");
		return;
	}
	f = fopen("/proc/self/cgroup", "re");
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = 0;
			snprintf(path, sizeof(path), "%s%s%scpu.pressure", mnt, line + 3,
				 line[strlen(line) - 1] == '/' ? "" : "/");
			found = 1;
		}
	}
	if (f)
		fclose(f);
	if (!found || access(path, R_OK)) {
		fg_test_skip("no cgroup v2 cpu.pressure for this process (%s)",
			     found ? path : "no 0:: line in /proc/self/cgroup");
		return;
	}
	snprintf(spec, sizeof(spec), "psi:%s", path);
	ASSERT_OK(fg_signal_parse(spec, &s, NULL), spec);
	ASSERT_OK(fg_signal_open(&s), "open");
	ASSERT_OK(sample(&s, 100, &u), "sample");
	ASSERT_TRUE(u >= 0 && u <= 1, "in [0, 1]");
	printf("  %s: %.3f\n", path, u);
	fg_signal_close(&s);
}

/* --- accept queue -------------------------------------------------------- */

static int listener(int family, int backlog, __u16 *port)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		len = sizeof(*a);
	}
	if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, backlog) ||
	    getsockname(fd, (struct sockaddr *)&ss, &len)) {
		int err = -errno;

		close(fd);
		return err;
	}
	*port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port :
					  ((struct sockaddr_in6 *)&ss)->sin6_port);
	return fd;
}

static int connect_to(int family, __u16 port, int nonblock)
{
	struct sockaddr_in a4 = { .sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6,
				   .sin6_port = htons(port),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);

	if (fd < 0)
		return -errno;
	if (connect(fd, family == AF_INET ? (struct sockaddr *)&a4 : (struct sockaddr *)&a6,
		    family == AF_INET ? sizeof(a4) : sizeof(a6)) &&
	    errno != EINPROGRESS) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* The handshake's last ACK may still be in flight: wait up to 1 s for want. */
static double settle(struct fg_signal *s, double want, int *err)
{
	double u = -1;

	for (int i = 0; i < 100; i++) {
		*err = fg_signal_read(s, &u);
		if (!*err && fabs(u - want) < 1e-12)
			break;
		sleep_ms(10);
	}
	return u;
}

static void test_accept_queue(void)
{
	int lfd, cfd[12], nc = 0, err;
	struct fg_signal s;
	char spec[32];
	__u16 port;
	double u;

	lfd = listener(AF_INET, 8, &port);
	if (!ASSERT_GE(lfd, 0, "listener on 127.0.0.1, backlog 8"))
		return;
	snprintf(spec, sizeof(spec), "accept_queue:%u", port);
	ASSERT_OK(fg_signal_parse(spec, &s, NULL), spec);
	if (!ASSERT_OK(fg_signal_open(&s), "open sock_diag"))
		goto out;
	u = settle(&s, 0, &err);
	ASSERT_OK(err, "read with an empty queue");
	ASSERT_NEAR(u, 0, 0, "empty queue");
	for (int i = 0; i < 6; i++) {
		cfd[nc] = connect_to(AF_INET, port, 0);
		if (ASSERT_GE(cfd[nc], 0, "connect"))
			nc++;
	}
	u = settle(&s, 6.0 / 8, &err);
	ASSERT_OK(err, "read");
	ASSERT_NEAR(u, 6.0 / 8, 1e-12, "6 connections not accepted, backlog 8");
	for (int i = 0; i < 3; i++)
		close(accept(lfd, NULL, NULL));
	u = settle(&s, 3.0 / 8, &err);
	ASSERT_NEAR(u, 3.0 / 8, 1e-12, "3 accepted: 3 of 8");
	/* past the backlog: the queue holds one more than its backlog, the
	 * value stops at 1 */
	for (int i = 0; i < 6; i++) {
		cfd[nc] = connect_to(AF_INET, port, 1);
		if (ASSERT_GE(cfd[nc], 0, "non-blocking connect"))
			nc++;
	}
	u = settle(&s, 1, &err);
	ASSERT_OK(err, "read");
	ASSERT_NEAR(u, 1, 0, "a full queue reads 1, never more");
	fg_signal_close(&s);
out:
	while (nc > 0)
		close(cfd[--nc]);
	close(lfd);
}

/* The fullest listener of the port counts, IPv6 included. */
static void test_accept_queue_v6(void)
{
	int l6, c[2] = { -1, -1 }, err;
	struct fg_signal s;
	char spec[32];
	__u16 port;
	double u;

	l6 = listener(AF_INET6, 4, &port);
	if (l6 < 0) {
		fg_test_skip("no IPv6 loopback listener: %s", strerror(-l6));
		return;
	}
	snprintf(spec, sizeof(spec), "accept_queue:%u", port);
	fg_signal_parse(spec, &s, NULL);
	ASSERT_OK(fg_signal_open(&s), "open");
	for (int i = 0; i < 2; i++)
		c[i] = connect_to(AF_INET6, port, 0);
	ASSERT_TRUE(c[0] >= 0 && c[1] >= 0, "two connections to [::1]");
	u = settle(&s, 0.5, &err);
	ASSERT_OK(err, "read");
	ASSERT_NEAR(u, 0.5, 1e-12, "[::1] backlog 4, 2 waiting");
	fg_signal_close(&s);
	for (int i = 0; i < 2; i++)
		if (c[i] >= 0)
			close(c[i]);
	close(l6);
}

static void test_accept_queue_none(void)
{
	struct fg_signal s;
	char spec[32];
	__u16 port;
	double u;
	int fd = listener(AF_INET, 1, &port);

	if (!ASSERT_GE(fd, 0, "listener"))
		return;
	close(fd); /* the port is free again: nobody listens on it */
	snprintf(spec, sizeof(spec), "accept_queue:%u", port);
	fg_signal_parse(spec, &s, NULL);
	ASSERT_OK(fg_signal_open(&s), "open");
	ASSERT_EQ(fg_signal_read(&s, &u), -ENOENT, "no listener on the port");
	fg_signal_close(&s);
	ASSERT_EQ(fg_signal_read(&s, &u), -EBADF, "closed");
}

/* --- files --------------------------------------------------------------- */

static void test_value_parse(void)
{
	static const struct {
		const char *text;
		int err;
		double v;
	} cases[] = {
		{ "0", 0, 0 },
		{ "1", 0, 1 },
		{ "0.5\n", 0, 0.5 },
		{ "  0.25 \n", 0, 0.25 },
		{ "1.000", 0, 1 },
		{ "0.7", 0, 0.7 },
		{ "\t0.95\r\n", 0, 0.95 },
		{ "00.1", 0, 0.1 },
		{ "", -EINVAL, 0 },
		{ "\n", -EINVAL, 0 },
		{ "abc", -EINVAL, 0 },
		{ "0.5x", -EINVAL, 0 },
		{ "nan", -EINVAL, 0 },
		{ "inf", -EINVAL, 0 },
		{ "1e-1", -EINVAL, 0 },
		{ "0x1", -EINVAL, 0 },
		{ "0.5 0.6", -EINVAL, 0 },
		{ "-0.1", -EINVAL, 0 },
		{ "+0.5", -EINVAL, 0 },
		{ ".5", -EINVAL, 0 },
		{ "1.", -EINVAL, 0 },
		{ "0,5", -EINVAL, 0 },
		{ "1.5", -ERANGE, 0 },
		{ "2", -ERANGE, 0 },
		{ "1.0000001", -ERANGE, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double v = -1;
		char name[64];

		snprintf(name, sizeof(name), "'%s'", cases[i].text);
		if (ASSERT_EQ(fg_value_parse(cases[i].text, &v), cases[i].err, name) &&
		    !cases[i].err)
			ASSERT_NEAR(v, cases[i].v, 0, name);
	}
}

static int write_file(const char *path, const void *buf, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ssize_t w;

	if (fd < 0)
		return -errno;
	w = write(fd, buf, n);
	close(fd);
	return w == (ssize_t)n ? 0 : -EIO;
}

static void test_file_signal(void)
{
	char dir[] = "/tmp/fg-test-signal.XXXXXX", path[64], spec[80], big[300];
	static const struct {
		const char *what;
		const char *text;
		size_t n;
		int err;
		double v;
	} cases[] = {
		{ "0.95 and a newline", "0.95\n", 5, 0, 0.95 },
		{ "0", "0", 1, 0, 0 },
		{ "above 1", "1.5\n", 4, -ERANGE, 0 },
		{ "words", "high\n", 5, -EINVAL, 0 },
		{ "empty", "", 0, -EINVAL, 0 },
		{ "a NUL inside",
		  "0.5\0"
		  "9",
		  5, -EINVAL, 0 },
	};
	struct fg_signal s;
	double v;

	if (!ASSERT_TRUE(mkdtemp(dir) != NULL, "temporary directory"))
		return;
	snprintf(path, sizeof(path), "%s/load", dir);
	snprintf(spec, sizeof(spec), "file:%s", path);
	ASSERT_OK(fg_signal_parse(spec, &s, NULL), spec);
	ASSERT_OK(fg_signal_open(&s), "open");
	ASSERT_EQ(fg_signal_read(&s, &v), -ENOENT, "no file yet");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		v = -1;
		ASSERT_OK(write_file(path, cases[i].text, cases[i].n), "write");
		if (ASSERT_EQ(fg_signal_read(&s, &v), cases[i].err, cases[i].what) && !cases[i].err)
			ASSERT_NEAR(v, cases[i].v, 0, cases[i].what);
	}
	memset(big, ' ', sizeof(big));
	memcpy(big + sizeof(big) - 4, "0.5\n", 4);
	ASSERT_OK(write_file(path, big, sizeof(big)), "write");
	ASSERT_EQ(fg_signal_read(&s, &v), -EINVAL, "longer than 128 bytes");
	unlink(path);
	ASSERT_OK(mkdir(path, 0700), "a directory in its place");
	ASSERT_EQ(fg_signal_read(&s, &v), -EISDIR, "a directory is not a value");
	rmdir(path);
	fg_signal_close(&s);
	ASSERT_OK(rmdir(dir), "temporary directory removed");
}

int main(int argc, char **argv)
{
	fg_test_init(argc, argv);
	FG_RUN(test_spec_parse);
	FG_RUN(test_cpu_parse);
	FG_RUN(test_cpu_busy_thread);
	FG_RUN(test_psi_parse);
	FG_RUN(test_psi_host);
	FG_RUN(test_psi_cgroup);
	FG_RUN(test_accept_queue);
	FG_RUN(test_accept_queue_v6);
	FG_RUN(test_accept_queue_none);
	FG_RUN(test_value_parse);
	FG_RUN(test_file_signal);
	return fg_test_summary();
}
