// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The fleet lease engine (user/fleet/fleet.c) against a real redis-server that
 * this test starts on a Unix socket in a temporary directory and stops by
 * PID, also on failure. Nodes are simulated in-process: each has its own
 * engine and connection and a model of the program's token balance, which
 * spends what its demand offers from the lease it holds (or follows
 * on_loss once the lease has run out). Time is real, and so is Redis's
 * TIME, so windows are short (1-2 s). No root needed.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "fgtest.h"
#include "fleet/fleet.h"
#include "lib/sysutil.h"

#ifndef REDIS_BIN
#define REDIS_BIN "/usr/bin/redis-server"
#endif
#define IVAL_MS		 50
#define DEADLINE_MS	 40 /* generous: this VM's two cores are shared */
#define FAST_DEADLINE_MS 20 /* where the deadline itself is measured */
#define LEASE_MS	 (2 * IVAL_MS)
#define RATE		 2000.0
#define BURST		 1000.0
#define MS		 1000000ull

static char tmpdir[64];
static __u32 sim_lease_ms = LEASE_MS;	    /* lease of the engines sim_init makes */
static __u32 sim_deadline_ms = DEADLINE_MS; /* and their deadline */
static char sock_path[FG_REDIS_PATH_LEN];
static volatile pid_t redis_pid;
static int redis_stopped;

/* --- the server ------------------------------------------------------------------ */

static __u64 now_ns(void)
{
	return fg_redis_now_ns();
}

static void sleep_until(__u64 t)
{
	for (;;) {
		__u64 n = now_ns();
		struct timespec ts;

		if (n >= t)
			return;
		ts.tv_sec = (time_t)((t - n) / 1000000000ull);
		ts.tv_nsec = (long)((t - n) % 1000000000ull);
		nanosleep(&ts, NULL);
	}
}

static struct fg_redis_url test_url(void)
{
	struct fg_redis_url u = { .is_unix = true };

	snprintf(u.path, sizeof(u.path), "%s", sock_path);
	return u;
}

static char admin_path[FG_REDIS_PATH_LEN]; /* "" = sock_path */

/* One command on a fresh connection (1 s deadline); NULL on failure. */
static redisReply *admin(int argc, const char **argv)
{
	struct fg_redis_url u = test_url();

	if (admin_path[0])
		snprintf(u.path, sizeof(u.path), "%s", admin_path);
	struct fg_redis *r = fg_redis_new(&u);
	size_t len[40];
	redisReply *rep = NULL;
	char why[FG_WHY_LEN];
	__u64 dl = now_ns() + 1000 * MS;

	if (!r)
		return NULL;
	for (int i = 0; i < argc; i++)
		len[i] = strlen(argv[i]);
	if (fg_redis_connect(r, dl, why) || fg_redis_append(r, argc, argv, len) ||
	    fg_redis_exchange(r, &rep, 1, dl, why))
		rep = NULL;
	fg_redis_free(r);
	return rep;
}

static int admin_ok(int argc, const char **argv)
{
	redisReply *rep = admin(argc, argv);
	int ok = rep && rep->type != REDIS_REPLY_ERROR;

	if (rep)
		freeReplyObject(rep);
	return ok;
}

/* A bucket field as a double (NAN when absent). */
static double bucket_field(const char *key, const char *field)
{
	const char *av[3] = { "HGET", key, field };
	redisReply *rep = admin(3, av);
	double v = NAN;

	if (rep && rep->type == REDIS_REPLY_STRING)
		v = strtod(rep->str, NULL);
	if (rep)
		freeReplyObject(rep);
	return v;
}

static long long int_cmd(int argc, const char **argv)
{
	redisReply *rep = admin(argc, argv);
	long long v = -1;

	if (rep && rep->type == REDIS_REPLY_INTEGER)
		v = rep->integer;
	if (rep)
		freeReplyObject(rep);
	return v;
}

static int redis_start(void)
{
	pid_t pid;
	char log[128];

	snprintf(log, sizeof(log), "%s/redis.log", tmpdir);
	unlink(sock_path);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		FILE *lf = freopen(log, "a", stdout);

		(void)lf;
		dup2(1, 2);
		execl(REDIS_BIN, REDIS_BIN, "--port", "0", "--unixsocket", sock_path,
		      "--unixsocketperm", "700", "--save", "", "--appendonly", "no", "--daemonize",
		      "no", "--dir", tmpdir, "--logfile", "", (char *)NULL);
		_exit(127);
	}
	redis_pid = pid;
	redis_stopped = 0;
	for (int i = 0; i < 500; i++) {
		const char *av[1] = { "PING" };
		int st;

		if (admin_ok(1, av))
			return 0;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			redis_pid = 0;
			return -ECHILD;
		}
		usleep(10000);
	}
	return -ETIMEDOUT;
}

/* Stop our server: SIGKILL (hard) or SIGTERM, then reap it. */
static void redis_stop(int sig)
{
	pid_t pid = redis_pid;

	if (pid <= 0)
		return;
	if (redis_stopped)
		kill(pid, SIGCONT);
	kill(pid, sig);
	for (int i = 0; i < 300; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid) {
			redis_pid = 0;
			return;
		}
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	redis_pid = 0;
}

static void cleanup(void)
{
	char path[128];

	redis_stop(SIGTERM);
	snprintf(path, sizeof(path), "%s/redis.log", tmpdir);
	unlink(path);
	unlink(sock_path);
	if (admin_path[0])
		unlink(admin_path);
	if (tmpdir[0])
		rmdir(tmpdir);
}

static void on_fatal(int sig)
{
	if (redis_pid > 0) {
		kill(redis_pid, SIGCONT);
		kill(redis_pid, SIGKILL);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void flushall(void)
{
	const char *av[1] = { "FLUSHALL" };

	admin_ok(1, av);
}

/* --- simulated nodes ----------------------------------------------------------- */

struct sim {
	struct fg_fleet *f;
	const char *node;
	double demand; /* offered cost per second */
	double carry;
	__u64 last_ns;
	__u64 offered; /* since the last round */
	__s64 tokens;  /* the program's balance */
	__u64 expires; /* the program's lease_expires */
	__u64 taken, unleased;
	int on_loss;
	double lrate, lburst, ltok;
	__u64 lts;
	/* totals */
	__u64 admitted, admitted_fallback;
	struct fg_fleet_out out;
	int err;
	__u64 round_ns; /* duration of the last round */
};

static struct fg_fleet *engine(const char *node, __u32 ival, __u32 lease)
{
	struct fg_fleet_conf c = { .redis = test_url(),
				   .interval_ms = ival,
				   .deadline_ms = sim_deadline_ms,
				   .lease_ms = lease };
	char why[FG_WHY_LEN];
	struct fg_fleet *f;

	snprintf(c.node, sizeof(c.node), "%s", node);
	f = fg_fleet_new(&c, why);
	if (!f)
		printf("  fg_fleet_new: %s\n", why);
	return f;
}

/* A Redis flushed and an engine of node on it (default interval and lease),
 * checked as "engine"; NULL if there is none. */
static struct fg_fleet *fresh_engine(const char *node)
{
	struct fg_fleet *f;

	flushall();
	f = engine(node, IVAL_MS, LEASE_MS);
	ASSERT_TRUE(f != NULL, "engine");
	return f;
}

static int sim_init(struct sim *s, const char *node, const char *rule, double rate, double burst,
		    double demand, int on_loss)
{
	struct fg_fleet_rule_conf rc = { .rate = rate, .burst = burst, .on_loss = (__u8)on_loss };
	char why[FG_WHY_LEN];
	int err;

	memset(s, 0, sizeof(*s));
	snprintf(rc.name, sizeof(rc.name), "%s", rule);
	s->node = node;
	s->demand = demand;
	s->on_loss = on_loss;
	s->f = engine(node, IVAL_MS, sim_lease_ms);
	if (!s->f)
		return -EINVAL;
	err = fg_fleet_add_rule(s->f, &rc, why);
	if (err < 0) {
		printf("  fg_fleet_add_rule: %s\n", why);
		return err;
	}
	s->last_ns = now_ns() - IVAL_MS * MS;
	return 0;
}

static void sim_free(struct sim *s)
{
	fg_fleet_free(s->f);
	s->f = NULL;
}

/* What the program does between rounds: spend from the lease, or follow
 * on_loss (local: a bucket that starts empty when the lease runs out). */
static void sim_spend(struct sim *s, __u64 now)
{
	double want = s->demand * (double)(now - s->last_ns) / 1e9 + s->carry;
	__u64 off = (__u64)want;

	s->carry = want - (double)off;
	s->last_ns = now;
	s->offered += off;
	if (now < s->expires) {
		__u64 a = s->tokens > 0 ? ((__u64)s->tokens < off ? (__u64)s->tokens : off) : 0;

		s->tokens -= (__s64)a;
		s->admitted += a;
		return;
	}
	if (s->on_loss == FG_FLEET_LOSS_OPEN) {
		s->admitted += off;
		s->admitted_fallback += off;
		s->unleased += off;
	} else if (s->on_loss == FG_FLEET_LOSS_LOCAL) {
		__u64 a;

		if (s->lts < s->expires) {
			s->lts = s->expires;
			s->ltok = 0;
		}
		s->ltok = fmin(s->lburst, s->ltok + s->lrate * (double)(now - s->lts) / 1e9);
		s->lts = now;
		a = (__u64)fmin((double)off, floor(s->ltok));
		s->ltok -= (double)a;
		s->admitted += a;
		s->admitted_fallback += a;
		s->unleased += a;
	}
}

/* Spend, then one lease round, then write what it says like the daemon would. */
static int sim_step(struct sim *s)
{
	__u64 now = now_ns(), t0;
	struct fg_fleet_in in;
	__u64 take;

	sim_spend(s, now);
	in = (struct fg_fleet_in){
		.offered = s->offered, .held = s->tokens, .taken = s->taken, .unleased = s->unleased
	};
	s->offered = 0;
	s->unleased = 0;
	t0 = now_ns();
	s->err = fg_fleet_round(s->f, &in, &s->out);
	s->round_ns = now_ns() - t0;
	take = s->tokens > 0 ?
		       ((__u64)s->tokens < s->out.take_back ? (__u64)s->tokens : s->out.take_back) :
		       0;
	s->tokens -= (__s64)take;
	s->taken = take;
	s->tokens += (__s64)s->out.grant;
	s->expires = s->out.lease_expires;
	s->lrate = s->out.local_rate;
	s->lburst = s->out.local_burst;
	return s->err;
}

static struct fg_fleet_stats sim_stats(const struct sim *s)
{
	struct fg_fleet_stats st = {};

	fg_fleet_stats(s->f, 0, &st);
	return st;
}

/* Run every node once per interval for rounds intervals; grants[r][i] and
 * the Redis time of each round when the arrays are given. */
static void run_rounds(struct sim **n, int nn, int rounds, __u64 (*grants)[4], __u64 *rtime)
{
	__u64 next = now_ns();

	/* the pause comes after each round, so that calls in a row keep the pace */
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < nn; i++) {
			sim_step(n[i]);
			if (grants)
				grants[r][i] = n[i]->out.grant;
		}
		if (rtime)
			rtime[r] = sim_stats(n[0]).redis_time_us;
		next += IVAL_MS * MS;
		sleep_until(next);
	}
}

/* Nodes n[0] and n[1] of rule (RATE, BURST) on a flushed Redis, their
 * engines with lease lease_ms and deadline deadline_ms, each with its
 * demand and on_loss, run 6 rounds; 1 when both started ("init"). */
static bool sim_two(struct sim **n, const char *rule, __u32 lease_ms, __u32 deadline_ms,
		    const char *na, double da, int la, const char *nb, double db, int lb)
{
	int err;

	flushall();
	sim_lease_ms = lease_ms;
	sim_deadline_ms = deadline_ms;
	err = sim_init(n[0], na, rule, RATE, BURST, da, la);
	if (!err)
		err = sim_init(n[1], nb, rule, RATE, BURST, db, lb);
	sim_lease_ms = LEASE_MS;
	sim_deadline_ms = DEADLINE_MS;
	if (!ASSERT_OK(err, "init"))
		return false;
	run_rounds(n, 2, 6, NULL, NULL);
	return true;
}

/* rounds rounds of nodes n[0] and n[1], each paced on its own: the tokens granted to both. */
static __u64 granted_rounds(struct sim **n, int rounds)
{
	__u64 g = 0;

	for (int r = 0; r < rounds; r++) {
		__u64 gr[1][4];

		run_rounds(n, 2, 1, gr, NULL);
		g += gr[0][0] + gr[0][1];
	}
	return g;
}

static int drain_events(struct fg_fleet *f, int kind)
{
	struct fg_fleet_event e;
	int n = 0;

	while (fg_fleet_next_event(f, &e))
		if (e.kind == kind)
			n++;
	return n;
}

/* --- tests ----------------------------------------------------------------------- */

static void test_url_parsing(void)
{
	static const struct {
		const char *url;
		int is_unix;
		const char *host, *path;
		int port, db;
		const char *user, *pass;
	} good[] = {
		{ "redis://127.0.0.1:6379", 0, "127.0.0.1", NULL, 6379, 0, "", "" },
		{ "redis://localhost", 0, "localhost", NULL, 6379, 0, "", "" },
		{ "redis://:secret@cache.example:6380/2", 0, "cache.example", NULL, 6380, 2, "",
		  "secret" },
		{ "redis://fg:p%40ss%2Fw@[::1]:7000/3", 0, "::1", NULL, 7000, 3, "fg", "p@ss/w" },
		{ "redis://[2001:db8::7]", 0, "2001:db8::7", NULL, 6379, 0, "", "" },
		{ "redis://10.0.0.1:1/", 0, "10.0.0.1", NULL, 1, 0, "", "" },
		{ "unix:/run/redis/redis.sock", 1, NULL, "/run/redis/redis.sock", 0, 0, "", "" },
		{ "unix:/tmp/r.sock?db=4", 1, NULL, "/tmp/r.sock", 0, 4, "", "" },
		{ "unix:/tmp/r.sock?user=fg", 1, NULL, "/tmp/r.sock", 0, 0, "fg", "" },
		{ "unix:/tmp/r.sock?db=2&user=fg%26x", 1, NULL, "/tmp/r.sock", 0, 2, "fg&x", "" },
		{ "unix:/tmp/r.sock?user=a.b-c_d&db=3", 1, NULL, "/tmp/r.sock", 0, 3, "a.b-c_d",
		  "" },
	};
	static const struct {
		const char *url;
		const char *why;
	} bad[] = {
		{ "", "empty" },
		{ "http://x:1", "starts with" },
		{ "redis://", "host" },
		{ "redis://:6379", "host" },
		{ "redis://host:0", "port" },
		{ "redis://host:65536", "port" },
		{ "redis://host:12x", "port" },
		{ "redis://host:", "port" },
		{ "redis://host/abc", "database" },
		{ "redis://host/99999999", "database" },
		{ "redis://ho st:1", "host" },
		{ "redis://secret@host", "password" },
		{ "redis://:@host", "password" },
		{ "redis://:a%zzb@host", "password" },
		{ "redis://[::1", "']'" },
		{ "redis://[zz::q]:1", "IPv6" },
		{ "redis://[::1]x", "port" },
		{ "unix:relative.sock", "absolute" },
		{ "unix:", "absolute" },
		{ "unix:/x?db=a", "db=N" },
		{ "unix:/x?foo=1", "db=N" },
		{ "unix:/x?", "nothing after" },
		{ "unix:/x?user=", "user=NAME" },
		{ "unix:/x?user=a%20b", "user name" },
		{ "unix:/x?db=1&", "after '&'" },
		{ "unix:/x?db=1&db=2", "each once" },
		{ "unix:/x?user=a&user=b", "each once" },
		{ "redis://a%20b:pw@host", "user name" },
		{ "rediss://h:1", "TLS" },
	};
	struct fg_redis_url u;
	char why[FG_WHY_LEN], name[160], shown[400], longp[200];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		memset(&u, 0x5a, sizeof(u));
		snprintf(name, sizeof(name), "parse %s", good[i].url);
		if (!ASSERT_OK(fg_redis_url_parse(good[i].url, &u, why), name))
			continue;
		ASSERT_EQ(u.is_unix, good[i].is_unix, name);
		if (good[i].host)
			ASSERT_STR_CONTAINS(u.host, good[i].host, name);
		if (good[i].path)
			ASSERT_EQ(strcmp(u.path, good[i].path), 0, name);
		if (!good[i].is_unix)
			ASSERT_EQ(u.port, good[i].port, name);
		ASSERT_EQ(u.db, good[i].db, name);
		ASSERT_EQ(strcmp(u.user, good[i].user), 0, name);
		ASSERT_EQ(strcmp(u.password, good[i].pass), 0, name);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fg_redis_url keep = { .port = 4242 };

		u = keep;
		why[0] = 0;
		snprintf(name, sizeof(name), "refuse \"%s\"", bad[i].url);
		ASSERT_EQ(fg_redis_url_parse(bad[i].url, &u, why), -EINVAL, name);
		ASSERT_STR_CONTAINS(why, bad[i].why, name);
		ASSERT_EQ(u.port, 4242, "a refused URL changes nothing");
	}
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = 0;
	snprintf(shown, sizeof(shown), "unix:%s", longp);
	ASSERT_EQ(fg_redis_url_parse(shown, &u, why), -EINVAL, "socket path too long");
	ASSERT_STR_CONTAINS(why, "longer than", "socket path too long: reason");
	/* passwords never show, neither in errors nor in the printed form */
	ASSERT_EQ(fg_redis_url_parse("redis://:hunter2@host:99999", &u, why), -EINVAL,
		  "bad port after a password");
	ASSERT_TRUE(!strstr(why, "hunter2"), "the reason does not show the password");
	ASSERT_OK(fg_redis_url_parse("redis://:hunter2@host:7/1", &u, why), "parse with password");
	fg_redis_url_str(&u, shown, sizeof(shown));
	ASSERT_TRUE(!strstr(shown, "hunter2"), "the printed URL hides the password");
	ASSERT_STR_CONTAINS(shown, "host:7/1", "the printed URL");
	ASSERT_OK(fg_redis_url_parse("unix:/r.sock?db=2&user=fg", &u, why),
		  "parse unix with a user");
	fg_redis_url_str(&u, shown, sizeof(shown));
	ASSERT_EQ(strcmp(shown, "unix:/r.sock?user=fg&db=2"), 0,
		  "the printed unix URL names its user");
}

static void test_config_refused(void)
{
	struct fg_fleet_conf c = { .redis = test_url(), .interval_ms = 100, .deadline_ms = 100 };
	struct fg_fleet_rule_conf rc = { .name = "r", .rate = 0, .burst = 10 };
	struct fg_fleet *f;
	char why[FG_WHY_LEN];

	snprintf(c.node, sizeof(c.node), "n1");
	f = fg_fleet_new(&c, why);
	ASSERT_TRUE(!f && errno == EINVAL, "deadline >= interval is refused");
	ASSERT_STR_CONTAINS(why, "deadline", "deadline: reason");
	c.deadline_ms = 10;
	c.lease_ms = 100;
	f = fg_fleet_new(&c, why);
	ASSERT_TRUE(!f, "a lease not longer than interval + deadline is refused");
	ASSERT_STR_CONTAINS(why, "lease", "lease: reason");
	c.lease_ms = 0;
	snprintf(c.node, sizeof(c.node), "bad node");
	f = fg_fleet_new(&c, why);
	ASSERT_TRUE(!f, "a node name with a space is refused");
	snprintf(c.node, sizeof(c.node), "n1");
	f = fg_fleet_new(&c, why);
	if (!ASSERT_TRUE(f != NULL, "a good configuration"))
		return;
	ASSERT_EQ(fg_fleet_add_rule(f, &rc, why), -EINVAL, "rate 0 is refused");
	ASSERT_EQ(fg_fleet_nrules(f), 0, "a refused rule is not added");
	rc.rate = 10;
	ASSERT_EQ(fg_fleet_add_rule(f, &rc, why), 0, "first rule gets index 0");
	ASSERT_EQ(fg_fleet_add_rule(f, &rc, why), -EINVAL, "the same rule twice is refused");
	fg_fleet_free(f);
}

/* SCRIPT LOAD on connect; after SCRIPT FLUSH the next round still gets
 * its lease (NOSCRIPT -> load -> resend), in the same round, same connection. */
static void test_noscript_reload(void)
{
	const char *flush[2] = { "SCRIPT", "FLUSH" };
	struct fg_fleet_conn_stats cs;
	struct sim a;

	flushall();
	if (!ASSERT_OK(sim_init(&a, "n1", "noscript", RATE, BURST, 5000, FG_FLEET_LOSS_CLOSED),
		       "init"))
		return;
	ASSERT_OK(sim_step(&a), "first round");
	ASSERT_TRUE(a.out.grant > 0, "first round grants");
	fg_fleet_conn_stats(a.f, &cs);
	ASSERT_EQ(cs.script_loads, 1, "script loaded once on connect");
	ASSERT_TRUE(admin_ok(2, flush), "SCRIPT FLUSH");
	usleep(IVAL_MS * 1000);
	ASSERT_OK(sim_step(&a), "round after SCRIPT FLUSH");
	ASSERT_EQ(a.out.renewed, 1, "the lease was renewed");
	fg_fleet_conn_stats(a.f, &cs);
	ASSERT_EQ(cs.noscript, 1, "one NOSCRIPT seen");
	ASSERT_EQ(cs.script_loads, 2, "loaded again");
	ASSERT_EQ(cs.connects, 1, "on the same connection");
	ASSERT_EQ(sim_stats(&a).state, FG_FLEET_OK, "state ok");
	sim_free(&a);
}

/* The extremes the engine accepts also work in the script (the key
 * expiry of a bucket that takes 30 years to refill is capped, not refused). */
static void test_extreme_limits(void)
{
	struct fg_fleet_rule_conf slow = { .name = "slow", .rate = 1e-3, .burst = 1e15 };
	struct fg_fleet_rule_conf fast = {
		.name = "fast", .rate = 1e15, .burst = 1, .cost = FG_COST_BYTES
	};
	struct fg_fleet_in in[2] = { { .offered = 1000 }, { .offered = 1000 } };
	struct fg_fleet_out out[2];
	struct fg_fleet *f;
	char why[FG_WHY_LEN];
	int err;

	f = fresh_engine("x1");
	if (!f)
		return;
	ASSERT_EQ(fg_fleet_add_rule(f, &slow, why), 0, "slow rule");
	ASSERT_EQ(fg_fleet_add_rule(f, &fast, why), 1, "fast rule");
	err = fg_fleet_round(f, in, out);
	if (err) {
		struct fg_fleet_stats st;

		fg_fleet_stats(f, 0, &st);
		printf("  %s\n", st.reason);
	}
	ASSERT_OK(err, "one round for both");
	ASSERT_TRUE(out[0].renewed && out[1].renewed, "both answered");
	ASSERT_TRUE(out[0].grant > 0, "the slow rule's full bucket grants");
	fg_fleet_free(f);
}

/* Demand 10:1 gets about 10:1 (tolerance: 8..12.5 over the last 20
 * rounds); a node with no demand gets nothing. */
static void test_share_by_demand(void)
{
	struct sim a, b, c;
	struct sim *n[3] = { &a, &b, &c };
	static __u64 g[40][4];
	__u64 ga = 0, gb = 0, gc = 0, ga_all = 0;
	double ratio;

	flushall();
	if (!ASSERT_OK(sim_init(&a, "big", "share", RATE, BURST, 20000, FG_FLEET_LOSS_CLOSED),
		       "a") ||
	    !ASSERT_OK(sim_init(&b, "small", "share", RATE, BURST, 2000, FG_FLEET_LOSS_CLOSED),
		       "b") ||
	    !ASSERT_OK(sim_init(&c, "idle", "share", RATE, BURST, 0, FG_FLEET_LOSS_CLOSED), "c"))
		return;
	run_rounds(n, 3, 30, g, NULL);
	for (int r = 0; r < 30; r++) {
		ga_all += g[r][0];
		if (r >= 10) {
			ga += g[r][0];
			gb += g[r][1];
			gc += g[r][2];
		}
	}
	ratio = gb ? (double)ga / (double)gb : 0;
	printf("  demand 10:1:0 -> granted %llu : %llu : %llu over 1 s (ratio %.2f); %u nodes\n",
	       (unsigned long long)ga, (unsigned long long)gb, (unsigned long long)gc, ratio,
	       sim_stats(&a).nodes);
	ASSERT_TRUE(ratio >= 8.0 && ratio <= 12.5, "10x the demand gets 8..12.5x the slice");
	ASSERT_EQ(gc, 0, "a node with no demand gets nothing");
	ASSERT_EQ(c.tokens, 0, "and holds nothing");
	ASSERT_EQ(sim_stats(&a).nodes, 3, "three nodes known");
	ASSERT_TRUE(ga + gb >= 0.9 * RATE * 20 * IVAL_MS / 1000.0,
		    "the two busy nodes use the rate");
	ASSERT_TRUE(ga_all >= BURST, "the first node took the initial burst");
	sim_free(&a);
	sim_free(&b);
	sim_free(&c);
}

/* A node joining a busy fleet gets its share of one interval, no burst,
 * and is at its fair share within a few intervals. */
static void test_join_no_burst(void)
{
	struct sim a, b;
	struct sim *n[2] = { &a, &b };
	static __u64 g[40][4];
	__u64 ra = 0, rb = 0;
	double slice = RATE * IVAL_MS / 1000.0; /* one interval's refill: 100 */

	flushall();
	if (!ASSERT_OK(sim_init(&a, "old", "join", RATE, BURST, 20000, FG_FLEET_LOSS_CLOSED),
		       "a") ||
	    !ASSERT_OK(sim_init(&b, "new", "join", RATE, BURST, 20000, FG_FLEET_LOSS_CLOSED), "b"))
		return;
	run_rounds(n, 1, 12, NULL, NULL); /* a alone drains the burst */
	run_rounds(n, 2, 12, g, NULL);
	printf("  joining node's first grants: %llu %llu %llu (one interval's refill: %.0f)\n",
	       (unsigned long long)g[0][1], (unsigned long long)g[1][1],
	       (unsigned long long)g[2][1], slice);
	ASSERT_LE(g[0][1], (long long)(0.6 * slice + 1),
		  "first grant: at most its share of one interval");
	ASSERT_LE(g[0][0] + g[0][1], (long long)(1.3 * slice + 1),
		  "the join round hands out no burst");
	for (int r = 3; r < 12; r++) {
		ra += g[r][0];
		rb += g[r][1];
	}
	printf("  after 3 intervals: %llu : %llu\n", (unsigned long long)ra,
	       (unsigned long long)rb);
	ASSERT_TRUE(rb >= 0.4 * (ra + rb) && rb <= 0.6 * (ra + rb),
		    "equal demand: 40..60% each after 3 intervals");
	ASSERT_TRUE(ra + rb <= 1.1 * slice * 9 + 2, "the pair gets the rate, not more");
	sim_free(&a);
	sim_free(&b);
}

/*
 * The bound. Fresh bucket (full), three nodes at 20000, 6000 and 2000/s
 * for 2 s: everything handed out minus what came back is at most
 * burst + rate * T on Redis's clock; the nodes admit at most that, and
 * use at least 85% of it; any window between rounds stays within
 * burst + rate * T + rate * W, W = L + max(L, 2I) (docs/fleet.md).
 */
static void test_bound(void)
{
	struct sim a, b, c;
	struct sim *n[3] = { &a, &b, &c };
	static __u64 rt[64], adm[64];
	__u64 granted = 0, returned = 0, admitted = 0;
	/* the outstanding bound in a saturated fleet: rate * W, W = L + max(L, 2I) */
	double T, bound,
		slack = RATE * (LEASE_MS + (LEASE_MS > 2 * IVAL_MS ? LEASE_MS : 2 * IVAL_MS)) /
			1000.0;
	int rounds = 40, bad = 0;
	__u64 next, failed = 0;

	flushall();
	if (!ASSERT_OK(sim_init(&a, "a", "bound", RATE, BURST, 20000, FG_FLEET_LOSS_CLOSED), "a") ||
	    !ASSERT_OK(sim_init(&b, "b", "bound", RATE, BURST, 6000, FG_FLEET_LOSS_CLOSED), "b") ||
	    !ASSERT_OK(sim_init(&c, "c", "bound", RATE, BURST, 2000, FG_FLEET_LOSS_CLOSED), "c"))
		return;
	next = now_ns();
	for (int r = 0; r < rounds; r++) {
		__u64 before = a.admitted + b.admitted + c.admitted;

		sleep_until(next);
		for (int i = 0; i < 3; i++)
			sim_step(n[i]);
		rt[r] = sim_stats(&a).redis_time_us;
		adm[r] = a.admitted + b.admitted + c.admitted - before;
		next += IVAL_MS * MS;
	}
	for (int i = 0; i < 3; i++) {
		struct fg_fleet_stats st = sim_stats(n[i]);

		granted += st.granted;
		returned += st.returned;
		admitted += n[i]->admitted;
		failed += st.failed;
	}
	T = (double)(rt[rounds - 1] - rt[0]) / 1e6;
	bound = BURST + RATE * T;
	printf("  T %.3f s (Redis TIME): granted %llu - returned %llu = %llu; admitted %llu; "
	       "burst + rate*T = %.0f\n",
	       T, (unsigned long long)granted, (unsigned long long)returned,
	       (unsigned long long)(granted - returned), (unsigned long long)admitted, bound);
	ASSERT_LE(granted - returned, (long long)(bound + 1),
		  "granted - returned <= burst + rate*T");
	ASSERT_LE(admitted, (long long)(bound + 1),
		  "admitted <= burst + rate*T (nothing held at the start)");
	/* a round that timed out may have been granted and lost: less is then
	 * admitted, which is the safe side, and only this check can tell */
	if (failed)
		printf("  %llu rounds failed on a loaded host: the usage check does not apply\n",
		       (unsigned long long)failed);
	else
		ASSERT_GE(admitted, (long long)(0.85 * bound),
			  "the fleet uses the budget (>= 85%)");
	/* every window [round i, round j] */
	for (int i = 0; i < rounds; i++) {
		__u64 sum = 0;

		for (int j = i; j < rounds; j++) {
			sum += adm[j];
			if ((double)sum > BURST + RATE * (double)(rt[j] - rt[i]) / 1e6 + slack + 1)
				bad++;
		}
	}
	ASSERT_EQ(bad, 0, "no window exceeds burst + rate*T + rate*W");
	for (int i = 0; i < 3; i++)
		sim_free(n[i]);
}

/* Unspent tokens come back: demand falls to 0, the engine takes the lease
 * back and returns it; release hands back the rest and withdraws the
 * node's demand at once. */
static void test_returns(void)
{
	struct sim a, b;
	struct sim *n[2] = { &a, &b };
	char key[FG_FLEET_KEY_LEN], nkey[FG_FLEET_KEY_LEN];
	double tok0, ts0, tok1, ts1, expect;
	struct fg_fleet_in in = {};
	__u64 held, ret;
	const char *zcard[2] = { "ZCARD", nkey };
	const char *hset[4] = { "HSET", key, "tok", "0" };

	flushall();
	if (!ASSERT_OK(sim_init(&a, "r1", "ret", RATE, 5000, 1000, FG_FLEET_LOSS_CLOSED), "a") ||
	    !ASSERT_OK(sim_init(&b, "r2", "ret", RATE, 5000, 1000, FG_FLEET_LOSS_CLOSED), "b"))
		return;
	fg_fleet_key(a.f, 0, key, sizeof(key));
	snprintf(nkey, sizeof(nkey), "%.*sn", (int)strlen(key) - 1, key);
	run_rounds(n, 2, 8, NULL, NULL);
	held = (__u64)a.tokens;
	ASSERT_TRUE(held >= 50, "a holds about two intervals of its demand");
	a.demand = 0;
	run_rounds(n, 1, 1, NULL, NULL); /* offered 0: take back */
	ASSERT_EQ(a.out.take_back, held, "everything held is taken back when demand stops");
	ASSERT_EQ(a.tokens, 0, "the program holds nothing");
	/* empty the bucket by hand, so the return is not hidden by the cap */
	ASSERT_TRUE(admin_ok(4, hset), "HSET tok 0");
	tok0 = bucket_field(key, "tok");
	ts0 = bucket_field(key, "ts");
	ret = sim_stats(&a).returned;
	run_rounds(n, 1, 1, NULL, NULL); /* returns them */
	tok1 = bucket_field(key, "tok");
	ts1 = bucket_field(key, "ts");
	ret = sim_stats(&a).returned - ret;
	expect = tok0 + RATE * (ts1 - ts0) / 1e6 + (double)held;
	printf("  returned %llu: bucket %.1f -> %.1f (expected %.1f)\n", (unsigned long long)ret,
	       tok0, tok1, expect);
	ASSERT_EQ(ret, held, "returned = what was taken back");
	ASSERT_TRUE(fabs(tok1 - expect) <= 1.0, "the bucket got them back");
	/* release: b hands back what it holds and leaves at once */
	ASSERT_EQ(int_cmd(2, zcard), 2, "two nodes before release");
	in.taken = (__u64)b.tokens;
	tok0 = bucket_field(key, "tok");
	ts0 = bucket_field(key, "ts");
	ASSERT_OK(fg_fleet_release(b.f, &in), "release");
	tok1 = bucket_field(key, "tok");
	ts1 = bucket_field(key, "ts");
	expect = fmin(5000, tok0 + RATE * (ts1 - ts0) / 1e6 + (double)in.taken);
	ASSERT_TRUE(fabs(tok1 - expect) <= 1.0, "release returns the lease");
	ASSERT_EQ(int_cmd(2, zcard), 1, "the released node no longer counts");
	sim_free(&a);
	sim_free(&b);
}

/* An edited rule (other rate: other namespace) starts on its own keys,
 * with a full bucket and no nodes from the old definition. */
static void test_namespace(void)
{
	struct sim a, a2;
	struct sim *n[1] = { &a };
	char k1[FG_FLEET_KEY_LEN], k2[FG_FLEET_KEY_LEN];

	flushall();
	if (!ASSERT_OK(sim_init(&a, "n1", "edit", 1000, 500, 20000, FG_FLEET_LOSS_CLOSED), "old"))
		return;
	run_rounds(n, 1, 6, NULL, NULL);
	fg_fleet_key(a.f, 0, k1, sizeof(k1));
	ASSERT_TRUE(bucket_field(k1, "tok") < 250, "the old bucket is drained");
	if (!ASSERT_OK(sim_init(&a2, "n1", "edit", 2000, 500, 20000, FG_FLEET_LOSS_CLOSED),
		       "edited"))
		return;
	fg_fleet_key(a2.f, 0, k2, sizeof(k2));
	printf("  keys: %s -> %s\n", k1, k2);
	ASSERT_NEQ(strcmp(k1, k2), 0, "the edited rule has other keys");
	ASSERT_TRUE(strchr(k2, '{') && strchr(k2, '}'), "keys carry a hash tag");
	ASSERT_OK(sim_step(&a2), "edited rule's first round");
	ASSERT_GE(a2.out.grant, 450, "it starts from a full bucket of its own");
	ASSERT_EQ(a2.out.nodes, 1, "with no nodes inherited");
	ASSERT_TRUE(bucket_field(k1, "tok") < 500, "the old bucket is untouched by the new one");
	sim_free(&a);
	sim_free(&a2);
}

/* A restarted daemon adopts the lease the program holds: it keeps the
 * tokens while the lease runs, and, since it held a lease from this
 * bucket, a bucket lost meanwhile comes back empty, not full. */
static int adopt(struct sim *s, const char *node, const char *rule)
{
	struct fg_fleet_rule_conf rc = { .rate = RATE,
					 .burst = BURST,
					 .on_loss = FG_FLEET_LOSS_CLOSED,
					 .nodes_hint = s->out.nodes,
					 .adopted_expires = s->expires,
					 .adopted_tokens = s->tokens > 0 ? (__u64)s->tokens : 0 };
	char why[FG_WHY_LEN];

	snprintf(rc.name, sizeof(rc.name), "%s", rule);
	fg_fleet_free(s->f);
	s->f = engine(node, IVAL_MS, LEASE_MS);
	if (!s->f)
		return -EINVAL;
	return fg_fleet_add_rule(s->f, &rc, why);
}

static void test_adopt(void)
{
	struct sim a;
	struct sim *n[1] = { &a };
	struct fg_fleet_event e;
	__s64 held;

	flushall();
	if (!ASSERT_OK(sim_init(&a, "d1", "adopt", RATE, BURST, 1000, FG_FLEET_LOSS_CLOSED),
		       "init"))
		return;
	run_rounds(n, 1, 6, NULL, NULL);
	held = a.tokens;
	ASSERT_TRUE(held > 0, "the program holds a lease");
	if (!ASSERT_OK(adopt(&a, "d1", "adopt"), "adopted"))
		return;
	ASSERT_EQ(sim_stats(&a).state, FG_FLEET_INIT, "not asked yet");
	ASSERT_EQ(sim_stats(&a).lease_expires, a.expires, "the adopted lease");
	ASSERT_OK(sim_step(&a), "first round after the restart");
	ASSERT_EQ(a.out.take_back, 0, "the adopted tokens are kept");
	ASSERT_EQ(sim_stats(&a).state, FG_FLEET_OK, "ok");
	ASSERT_EQ(fg_fleet_next_event(a.f, &e), 0, "no event: nothing failed");
	/* the same with the bucket lost while the daemon was down */
	run_rounds(n, 1, 3, NULL, NULL);
	if (!ASSERT_OK(adopt(&a, "d1", "adopt"), "adopted again"))
		return;
	flushall();
	a.demand = 20000;
	ASSERT_OK(sim_step(&a), "first round, bucket lost");
	printf("  adopted %lld tokens; after a lost bucket the first grant is %llu (burst %.0f)\n",
	       (long long)held, (unsigned long long)a.out.grant, BURST);
	ASSERT_LE(a.out.grant, (long long)(RATE * IVAL_MS / 1000.0), "recreated empty: no burst");
	sim_free(&a);
}

/* Redis killed: the call fails at once (well within the deadline); the
 * rule spends its lease (grace), falls back when it runs out; Redis back
 * empty: recovered, no burst. */
static void test_redis_killed(void)
{
	struct sim a;
	struct sim *n[1] = { &a };
	struct fg_fleet_stats st;
	__u64 lease_end, g = 0, t0, t1;
	int err;

	flushall();
	if (!ASSERT_OK(sim_init(&a, "k1", "killed", RATE, BURST, 20000, FG_FLEET_LOSS_LOCAL),
		       "init"))
		return;
	run_rounds(n, 1, 6, NULL, NULL);
	ASSERT_EQ(sim_stats(&a).state, FG_FLEET_OK, "leasing");
	lease_end = a.expires;
	redis_stop(SIGKILL);
	err = sim_step(&a);
	printf("  call to a killed redis failed in %.2f ms: %s\n", (double)a.round_ns / 1e6,
	       sim_stats(&a).reason);
	ASSERT_TRUE(err < 0, "the round fails");
	ASSERT_LE(a.round_ns, 50 * MS, "within 50 ms");
	st = sim_stats(&a);
	ASSERT_EQ(st.state, FG_FLEET_GRACE, "grace: the lease still runs");
	ASSERT_EQ(drain_events(a.f, FG_FLEET_EV_GRACE), 1, "one grace event");
	ASSERT_EQ(a.expires, lease_end, "the lease is not extended");
	sleep_until(lease_end + MS);
	sim_step(&a);
	st = sim_stats(&a);
	ASSERT_EQ(st.state, FG_FLEET_FALLBACK, "fallback once the lease ran out");
	ASSERT_EQ(st.fallbacks, 1, "counted once");
	ASSERT_EQ(drain_events(a.f, FG_FLEET_EV_FALLBACK), 1, "one fallback event");
	ASSERT_TRUE(a.out.local_rate > 0 && a.out.local_rate <= RATE,
		    "local share from the node count");
	run_rounds(n, 1, 4, NULL, NULL);
	ASSERT_EQ(drain_events(a.f, FG_FLEET_EV_FALLBACK), 0, "logged once, not per round");
	ASSERT_TRUE(a.admitted_fallback > 0, "on_loss local admits its share meanwhile");
	if (!ASSERT_OK(redis_start(), "redis back (empty)"))
		return;
	t0 = now_ns();
	run_rounds(n, 1, 1, NULL, NULL);
	st = sim_stats(&a);
	ASSERT_EQ(st.state, FG_FLEET_RECOVERING, "recovering");
	ASSERT_EQ(drain_events(a.f, FG_FLEET_EV_RECOVERED), 1, "one recovered event");
	ASSERT_TRUE(st.fallback_ns >= 200 * MS, "time in fallback counted");
	for (int r = 0; r < 6; r++) {
		run_rounds(n, 1, 1, NULL, NULL);
		g += a.out.grant;
	}
	t1 = now_ns();
	printf("  after recovery: %llu tokens in %.0f ms (rate*T = %.0f); %.0f ms in fallback\n",
	       (unsigned long long)g, (double)(t1 - t0) / 1e6, RATE * (double)(t1 - t0) / 1e9,
	       (double)st.fallback_ns / 1e6);
	ASSERT_LE(g, (long long)(RATE * (double)(t1 - t0) / 1e9 + 1), "no burst after recovery");
	ASSERT_EQ(sim_stats(&a).state, FG_FLEET_OK, "ok again");
	sim_free(&a);
}

/* Nodes a and b (n) after an outage: six rounds back to ok, and no
 * burst: at most the rate since, plus one interval; a (local) paid for
 * what it admitted alone; once, if once, its recovery event. */
static void recovered(struct sim **n, const char *label, bool once)
{
	struct sim *a = n[0], *b = n[1];
	__u64 g = 0, t0, t1;

	t0 = now_ns();
	g += granted_rounds(n, 6);
	t1 = now_ns();
	printf("  %s: %llu tokens in %.0f ms (rate*T = %.0f, burst %.0f); debt paid %llu\n", label,
	       (unsigned long long)g, (double)(t1 - t0) / 1e6, RATE * (double)(t1 - t0) / 1e9,
	       BURST, (unsigned long long)sim_stats(a).debt);
	ASSERT_EQ(sim_stats(a).state, FG_FLEET_OK, "a ok again");
	ASSERT_EQ(sim_stats(b).state, FG_FLEET_OK, "b ok again");
	if (once)
		ASSERT_EQ(drain_events(a->f, FG_FLEET_EV_RECOVERED), 1, "recovered once");
	ASSERT_LE(g, (long long)(RATE * (double)(t1 - t0) / 1e9 + RATE * IVAL_MS / 1000.0 + 1),
		  "no burst: at most the rate since, plus one interval");
	ASSERT_TRUE(sim_stats(a).debt > 0, "what a admitted in fallback was charged");
}

/* Redis frozen (SIGSTOP): the round gives up at the deadline; grace, then
 * fallback; SIGCONT: both nodes recover without a burst although the
 * bucket refilled while frozen: a (on_loss local) pays for what it admitted
 * alone, and b (closed, no debt) finds the refill clamped to one interval. */
static void test_redis_stopped(void)
{
	struct sim a, b;
	struct sim *n[2] = { &a, &b };
	__u64 worst = 0;
	int err;

	if (!sim_two(n, "stopped", LEASE_MS, FAST_DEADLINE_MS, "s1", 20000, FG_FLEET_LOSS_LOCAL,
		     "s2", 20000, FG_FLEET_LOSS_CLOSED))
		return;
	kill(redis_pid, SIGSTOP);
	redis_stopped = 1;
	err = sim_step(&a);
	printf("  call to a stopped redis gave up after %.2f ms (deadline %d ms): %s\n",
	       (double)a.round_ns / 1e6, FAST_DEADLINE_MS, sim_stats(&a).reason);
	ASSERT_EQ(err, -ETIMEDOUT, "timed out");
	ASSERT_GE(a.round_ns, (FAST_DEADLINE_MS - 1) * MS, "not before the deadline");
	ASSERT_LE(a.round_ns, 50 * MS, "within 50 ms");
	ASSERT_EQ(sim_stats(&a).state, FG_FLEET_GRACE, "grace");
	sim_step(&b);
	for (int r = 0; r < 8; r++) { /* 400 ms frozen */
		run_rounds(n, 2, 1, NULL, NULL);
		if (a.round_ns > worst)
			worst = a.round_ns;
		if (b.round_ns > worst)
			worst = b.round_ns;
	}
	ASSERT_EQ(sim_stats(&a).state, FG_FLEET_FALLBACK, "a in fallback");
	ASSERT_EQ(sim_stats(&b).state, FG_FLEET_FALLBACK, "b in fallback");
	ASSERT_EQ(sim_stats(&a).timeouts, 9, "every round timed out");
	ASSERT_LE(worst, 50 * MS, "reconnects to a frozen server also respect the deadline");
	ASSERT_TRUE(a.admitted_fallback > 0, "a admitted its local share meanwhile");
	kill(redis_pid, SIGCONT);
	redis_stopped = 0;
	recovered(n, "after SIGCONT", true);
	ASSERT_EQ(sim_stats(&b).debt, 0, "b (closed) admitted nothing alone");
	sim_free(&a);
	sim_free(&b);
}

/* The path to Redis cut (the socket renamed and every client connection
 * killed, so nothing queues): both nodes fall back; when the path returns
 * the bucket has refilled, but that is no burst: the refill is clamped to
 * one interval, and a (local) pays for what it admitted alone. */
static void test_partition(void)
{
	struct sim a, b;
	struct sim *n[2] = { &a, &b };
	const char *kill_clients[4] = { "CLIENT", "KILL", "TYPE", "normal" };
	char hidden[FG_REDIS_PATH_LEN];

	flushall();
	if (!ASSERT_OK(sim_init(&a, "p1", "partition", RATE, BURST, 20000, FG_FLEET_LOSS_LOCAL),
		       "a") ||
	    !ASSERT_OK(sim_init(&b, "p2", "partition", RATE, BURST, 20000, FG_FLEET_LOSS_CLOSED),
		       "b"))
		return;
	run_rounds(n, 2, 6, NULL, NULL);
	snprintf(hidden, sizeof(hidden), "%s/hidden.sock", tmpdir);
	if (!ASSERT_OK(rename(sock_path, hidden) ? -errno : 0, "cut: hide the socket"))
		return;
	snprintf(admin_path, sizeof(admin_path), "%s", hidden);
	ASSERT_TRUE(admin_ok(4, kill_clients), "cut: kill the connections");
	run_rounds(n, 2, 8, NULL, NULL); /* 400 ms cut */
	ASSERT_EQ(sim_stats(&a).state, FG_FLEET_FALLBACK, "a in fallback");
	ASSERT_EQ(sim_stats(&b).state, FG_FLEET_FALLBACK, "b in fallback");
	ASSERT_STR_CONTAINS(sim_stats(&a).reason, "No such file", "the reason names the failure");
	ASSERT_OK(rename(hidden, sock_path) ? -errno : 0, "path back");
	admin_path[0] = 0;
	recovered(n, "after the cut", false);
	sim_free(&a);
	sim_free(&b);
}

/* Redis restarted empty between two rounds: the node notices, comes back
 * within its lease (no fallback), and the lost bucket is recreated empty. */
static void test_redis_restarted_empty(void)
{
	struct sim a, b;
	struct sim *n[2] = { &a, &b };
	__u64 g = 0, t0, t1;

	/* a lease longer than a restart takes */
	if (!sim_two(n, "restart", 8 * IVAL_MS, DEADLINE_MS, "e1", 20000, FG_FLEET_LOSS_CLOSED,
		     "e2", 8000, FG_FLEET_LOSS_CLOSED))
		return;
	t0 = now_ns();
	redis_stop(SIGTERM);
	if (!ASSERT_OK(redis_start(), "restarted empty"))
		return;
	printf("  restart took %.0f ms\n", (double)(now_ns() - t0) / 1e6);
	t0 = now_ns();
	g += granted_rounds(n, 8);
	t1 = now_ns();
	printf("  after an empty restart: %llu tokens in %.0f ms (rate*T = %.0f, burst %.0f); "
	       "states %s/%s\n",
	       (unsigned long long)g, (double)(t1 - t0) / 1e6, RATE * (double)(t1 - t0) / 1e9,
	       BURST, fg_fleet_state_name(sim_stats(&a).state),
	       fg_fleet_state_name(sim_stats(&b).state));
	ASSERT_LE(g, (long long)(RATE * (double)(t1 - t0) / 1e9 + 1),
		  "no burst: the bucket starts empty");
	ASSERT_GE(g, (long long)(0.5 * RATE * (double)(t1 - t0) / 1e9), "and refills at the rate");
	ASSERT_EQ(sim_stats(&a).state, FG_FLEET_OK, "a ok");
	ASSERT_EQ(sim_stats(&b).state, FG_FLEET_OK, "b ok");
	ASSERT_EQ(sim_stats(&a).fallbacks, 0, "back within the lease: no fallback");
	sim_free(&a);
	sim_free(&b);
}

/* The worker: the main thread's accessors never wait while the worker
 * is stuck on a frozen Redis; events reach it; stop hands leases back. */
struct wsim {
	pthread_mutex_t mu;
	struct sim s;
};

static int w_collect(void *ctx, struct fg_fleet_in *in, int n)
{
	struct wsim *w = ctx;

	(void)n;
	pthread_mutex_lock(&w->mu);
	sim_spend(&w->s, now_ns());
	in[0] = (struct fg_fleet_in){ .offered = w->s.offered,
				      .held = w->s.tokens,
				      .taken = w->s.taken,
				      .unleased = w->s.unleased };
	w->s.offered = 0;
	w->s.unleased = 0;
	pthread_mutex_unlock(&w->mu);
	return 0;
}

static void w_apply(void *ctx, const struct fg_fleet_out *out, int n)
{
	struct wsim *w = ctx;
	__u64 take;

	(void)n;
	pthread_mutex_lock(&w->mu);
	take = w->s.tokens > 0 ? ((__u64)w->s.tokens < out[0].take_back ? (__u64)w->s.tokens :
									  out[0].take_back) :
				 0;
	w->s.tokens -= (__s64)take;
	w->s.taken = take;
	w->s.tokens += (__s64)out[0].grant;
	w->s.expires = out[0].lease_expires;
	w->s.lrate = out[0].local_rate;
	w->s.lburst = out[0].local_burst;
	pthread_mutex_unlock(&w->mu);
}

static int w_take_all(void *ctx, struct fg_fleet_in *in, int n)
{
	struct wsim *w = ctx;

	(void)n;
	pthread_mutex_lock(&w->mu);
	in[0].taken = w->s.tokens > 0 ? (__u64)w->s.tokens : 0;
	w->s.tokens -= (__s64)in[0].taken;
	w->s.expires = 0;
	pthread_mutex_unlock(&w->mu);
	return 0;
}

static void test_worker_never_blocks(void)
{
	static struct wsim w = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct fg_fleet_ops ops = { .collect = w_collect,
				    .apply = w_apply,
				    .take_all = w_take_all };
	struct fg_fleet_worker *wk;
	struct fg_fleet_event ev[16];
	struct fg_fleet_stats st;
	char key[FG_FLEET_KEY_LEN], nkey[FG_FLEET_KEY_LEN];
	const char *zcard[2] = { "ZCARD", nkey };
	__u64 worst = 0, calls = 0, t_end;
	int kinds[8] = {};

	flushall();
	if (!ASSERT_OK(sim_init(&w.s, "w1", "worker", RATE, BURST, 20000, FG_FLEET_LOSS_OPEN),
		       "init"))
		return;
	fg_fleet_key(w.s.f, 0, key, sizeof(key));
	snprintf(nkey, sizeof(nkey), "%.*sn", (int)strlen(key) - 1, key);
	wk = fg_fleet_worker_start(w.s.f, &ops, &w);
	if (!ASSERT_TRUE(wk != NULL, "worker started")) {
		sim_free(&w.s);
		return;
	}
	w.s.f = NULL; /* the worker owns it */
	usleep(300000);
	fg_fleet_worker_stats(wk, 0, &st);
	ASSERT_EQ(st.state, FG_FLEET_OK, "worker leasing");
	ASSERT_TRUE(st.granted > 0, "worker got tokens");
	kill(redis_pid, SIGSTOP);
	redis_stopped = 1;
	t_end = now_ns() + 400 * MS;
	while (now_ns() < t_end) {
		__u64 t0 = now_ns(), d;
		int k;

		fg_fleet_worker_stats(wk, 0, &st);
		k = fg_fleet_worker_events(wk, ev, 16);
		for (int i = 0; i < k; i++)
			kinds[ev[i].kind & 7]++;
		d = now_ns() - t0;
		if (d > worst)
			worst = d;
		calls++;
		usleep(500);
	}
	kill(redis_pid, SIGCONT);
	redis_stopped = 0;
	printf("  main thread: %llu calls while redis was frozen, slowest %.3f ms\n",
	       (unsigned long long)calls, (double)worst / 1e6);
	ASSERT_LE(worst, 5 * MS, "the main thread never waits on redis");
	ASSERT_EQ(st.state, FG_FLEET_FALLBACK, "the worker fell back");
	usleep(300000);
	for (int k; (k = fg_fleet_worker_events(wk, ev, 16)) > 0;)
		for (int i = 0; i < k; i++)
			kinds[ev[i].kind & 7]++;
	ASSERT_EQ(kinds[FG_FLEET_EV_GRACE], 1, "grace event seen by the main thread");
	ASSERT_EQ(kinds[FG_FLEET_EV_FALLBACK], 1, "fallback event");
	ASSERT_EQ(kinds[FG_FLEET_EV_RECOVERED], 1, "recovered event");
	ASSERT_EQ(int_cmd(2, zcard), 1, "the node is in the fleet");
	ASSERT_OK(fg_fleet_worker_stop(wk, true, NULL), "stop with release");
	ASSERT_EQ(int_cmd(2, zcard), 0, "released: the node left at once");
	ASSERT_EQ(w.s.tokens, 0, "nothing left in the program");
}

/*
 * Everything read from Redis is untrusted (issue 22, item 2): one hostile
 * write of each field of a rule's keys, in the middle of a saturated fleet
 * of three nodes of equal demand. The documented bound (docs/fleet.md
 * section 4): a single write holds a node below its share of the refill
 * for at most one lease. Checked: from one lease after the write on, each
 * node is granted its share (rate / 3 per second, within 25 %, for load);
 * the repair is reported by every node (degraded, the reason), counted by
 * the one whose call made it, and the keys hold sane values again. Before
 * the checks `HSET ...:b sum 1e300` granted nothing, for ever.
 */
struct hostile {
	const char *what;
	char key;	   /* 'b', 'd' or 'n' */
	const char *cmd;   /* HSET, ZADD or SET */
	const char *a, *b; /* its arguments after the key */
	__u32 bits;	   /* what must be reported repaired (any of them) */
};

static const struct hostile hostile[] = {
	{ "b.sum 1e300 (the drill of the issue)", 'b', "HSET", "sum", "1e300", FG_FLEET_REP_SUM },
	{ "b.sum negative", 'b', "HSET", "sum", "-5", FG_FLEET_REP_SUM },
	{ "b.sum NaN", 'b', "HSET", "sum", "nan", FG_FLEET_REP_SUM },
	{ "b.sum infinite", 'b', "HSET", "sum", "inf", FG_FLEET_REP_SUM },
	{ "b.sum not a number", 'b', "HSET", "sum", "lots", FG_FLEET_REP_SUM },
	{ "b.sum ten times the demand", 'b', "HSET", "sum", "60000", FG_FLEET_REP_SUM },
	{ "b.tok -1e300", 'b', "HSET", "tok", "-1e300", FG_FLEET_REP_TOK_BAD },
	{ "b.tok NaN", 'b', "HSET", "tok", "nan", FG_FLEET_REP_TOK_BAD },
	{ "b.tok 1e300", 'b', "HSET", "tok", "1e300", FG_FLEET_REP_TOK_HIGH },
	{ "b.ts in the far future", 'b', "HSET", "ts", "1e300", FG_FLEET_REP_TS },
	{ "b.ts negative", 'b', "HSET", "ts", "-1", FG_FLEET_REP_TS },
	{ "b.vt in the future (no verification)", 'b', "HSET", "vt", "1e300", FG_FLEET_REP_MARK },
	{ "b.rb out of range", 'b', "HSET", "rb", "99999", FG_FLEET_REP_MARK },
	{ "d: n1's demand 1e300", 'd', "HSET", "n1", "1e300", FG_FLEET_REP_DEMAND },
	{ "d: n2's demand NaN", 'd', "HSET", "n2", "nan", FG_FLEET_REP_DEMAND },
	/* n1 calls first in a round: its own entry, not a number, is read by
	 * its own call before any other's (once overwritten unnoticed) */
	{ "d: n1's own demand NaN", 'd', "HSET", "n1", "nan", FG_FLEET_REP_DEMAND },
	{ "d: n1's own demand a word", 'd', "HSET", "n1", "lots", FG_FLEET_REP_DEMAND },
	{ "d: a ghost's demand 1e300, no expiry", 'd', "HSET", "ghost", "1e300",
	  FG_FLEET_REP_DEMAND },
	{ "n: a ghost expiring in the far future", 'n', "ZADD", "1e300", "ghost",
	  FG_FLEET_REP_EXPIRY },
	{ "n: n3 expiring never (+inf)", 'n', "ZADD", "+inf", "n3", FG_FLEET_REP_EXPIRY },
	{ "b is a string", 'b', "SET", "x", NULL, FG_FLEET_REP_TYPE },
	{ "d is a string", 'd', "SET", "x", NULL, FG_FLEET_REP_TYPE },
	{ "n is a string", 'n', "SET", "x", NULL, FG_FLEET_REP_TYPE },
};

#define HOSTILE_WARM  6	 /* rounds before the write: a saturated fleet */
#define HOSTILE_AFTER 10 /* rounds after it */

static int hostile_write(const struct hostile *h, const char *bkey)
{
	char key[FG_FLEET_KEY_LEN];
	const char *del[2] = { "DEL", key };
	const char *av[4] = { h->cmd, key, h->a, h->b };

	snprintf(key, sizeof(key), "%.*s%c", (int)strlen(bkey) - 1, bkey, h->key);
	if (!strcmp(h->cmd, "SET") && !admin_ok(2, del))
		return 0;
	return admin_ok(h->b ? 4 : 3, av);
}

static void hostile_case(const struct hostile *h, bool heal)
{
	struct sim a, b, c;
	struct sim *n[3] = { &a, &b, &c };
	static __u64 g[HOSTILE_WARM + HOSTILE_AFTER + 16][4];
	char name[160], bkey[FG_FLEET_KEY_LEN];
	int lease_rounds = LEASE_MS / IVAL_MS, degraded = 0, ev_deg = 0, ev_heal = 0;
	__u64 repairs = 0, got[3] = {};
	double want;

	flushall();
	if (!ASSERT_OK(sim_init(&a, "n1", "hostile", RATE, BURST, RATE, FG_FLEET_LOSS_CLOSED) ||
			       sim_init(&b, "n2", "hostile", RATE, BURST, RATE,
					FG_FLEET_LOSS_CLOSED) ||
			       sim_init(&c, "n3", "hostile", RATE, BURST, RATE,
					FG_FLEET_LOSS_CLOSED),
		       "three nodes"))
		return;
	fg_fleet_key(a.f, 0, bkey, sizeof(bkey));
	run_rounds(n, 3, HOSTILE_WARM, g, NULL);
	snprintf(name, sizeof(name), "%s: the write", h->what);
	ASSERT_TRUE(hostile_write(h, bkey), name);
	run_rounds(n, 3, HOSTILE_AFTER, g + HOSTILE_WARM, NULL);
	/* from one lease after the write on, each node its share of the refill */
	want = RATE / 3.0 * (HOSTILE_AFTER - lease_rounds) * IVAL_MS / 1000.0;
	for (int r = HOSTILE_WARM + lease_rounds; r < HOSTILE_WARM + HOSTILE_AFTER; r++)
		for (int i = 0; i < 3; i++)
			got[i] += g[r][i];
	for (int i = 0; i < 3; i++) {
		struct fg_fleet_stats st = sim_stats(n[i]);
		struct fg_fleet_event e;

		snprintf(name, sizeof(name), "%s: %s granted its share one lease after the write",
			 h->what, n[i]->node);
		if (!ASSERT_GE(got[i], (__u64)(want * 0.75), name))
			printf("  %s: %s got %llu in %d rounds, share %.0f; reason %s\n", h->what,
			       n[i]->node, (unsigned long long)got[i], HOSTILE_AFTER - lease_rounds,
			       want, st.reason);
		degraded += st.degraded && (st.repair_bits & h->bits) && st.health[0];
		repairs += st.repairs;
		while (fg_fleet_next_event(n[i]->f, &e)) {
			ev_deg += e.kind == FG_FLEET_EV_DEGRADED;
			ev_heal += e.kind == FG_FLEET_EV_HEALED;
		}
	}
	snprintf(name, sizeof(name), "%s: every node reports the fleet degraded, with the repair",
		 h->what);
	if (!ASSERT_EQ(degraded, 3, name)) {
		struct fg_fleet_stats st = sim_stats(&a);

		printf("  n1: degraded %u bits %#x health \"%s\"\n", st.degraded, st.repair_bits,
		       st.health);
	}
	snprintf(name, sizeof(name), "%s: the repair counted (by the node that made it)", h->what);
	ASSERT_GE(repairs, 1, name);
	snprintf(name, sizeof(name), "%s: one degraded event per node", h->what);
	ASSERT_EQ(ev_deg, 3, name);
	if (h->key == 'b' && strcmp(h->cmd, "SET")) {
		double v = bucket_field(bkey, h->a);

		snprintf(name, sizeof(name), "%s: the bucket's %s is sane again (%g)", h->what,
			 h->a, v);
		ASSERT_TRUE(v == v && v >= 0 && v < 1e17, name);
	}
	if (heal) {
		struct fg_fleet_event e;

		run_rounds(n, 3, FG_FLEET_HOLD_IVALS + 2, NULL, NULL);
		for (int i = 0; i < 3; i++)
			while (fg_fleet_next_event(n[i]->f, &e))
				ev_heal += e.kind == FG_FLEET_EV_HEALED;
		snprintf(name, sizeof(name), "%s: healthy again %d intervals after the repair",
			 h->what, FG_FLEET_HOLD_IVALS);
		ASSERT_EQ(sim_stats(&a).degraded + sim_stats(&b).degraded + sim_stats(&c).degraded,
			  0, name);
		ASSERT_EQ(ev_heal, 3, "one healed event per node");
	}
	sim_free(&a);
	sim_free(&b);
	sim_free(&c);
}

static void test_hostile_values(void)
{
	for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++)
		hostile_case(&hostile[i], i == 0);
}

/*
 * Redis ACL users (issue 22, item 4), on the Unix socket: the user the
 * docs give (docs/fleet.md, "Redis users"), with exactly the rights listed
 * there, leases; a wrong password, a user short of one right and keys
 * outside its pattern fail with a reason that says so; a nopass user needs
 * no password; a release refused by AUTH names the refusal.
 */
static const char *const acl_rights[] = {
	"resetkeys", "~floodgate:*",   "resetchannels",
	"-@all",     "+evalsha",       "+script|load",
	"+select",   "+time",	       "+hget",
	"+hmget",    "+hset",	       "+hdel",
	"+hgetall",  "+del",	       "+zadd",
	"+zrem",     "+zscore",	       "+zcount",
	"+zrange",   "+zrangebyscore", "+zremrangebyscore",
	"+pexpire",
};
#define NRIGHTS (sizeof(acl_rights) / sizeof(acl_rights[0]))

/* ACL SETUSER user reset on PASS (">pw" or "nopass") and rights[0..n) but skip */
static int acl_user(const char *user, const char *pass, const char *skip)
{
	const char *av[40] = { "ACL", "SETUSER", user, "reset", "on", pass };
	int n = 6;

	for (size_t i = 0; i < NRIGHTS; i++)
		if (!skip || strcmp(acl_rights[i], skip))
			av[n++] = acl_rights[i];
	return admin_ok(n, av);
}

static struct fg_fleet *acl_engine(const char *user, const char *pass, const char *prefix)
{
	struct fg_fleet_conf c = { .redis = test_url(),
				   .interval_ms = IVAL_MS,
				   .deadline_ms = DEADLINE_MS };
	struct fg_fleet_rule_conf rc = { .name = "acl", .rate = RATE, .burst = BURST };
	char why[FG_WHY_LEN];
	struct fg_fleet *f;

	snprintf(c.node, sizeof(c.node), "acl1");
	snprintf(c.redis.user, sizeof(c.redis.user), "%s", user);
	snprintf(c.redis.password, sizeof(c.redis.password), "%s", pass);
	if (prefix)
		snprintf(c.prefix, sizeof(c.prefix), "%s", prefix);
	f = fg_fleet_new(&c, why);
	if (f && fg_fleet_add_rule(f, &rc, why) < 0) {
		fg_fleet_free(f);
		f = NULL;
	}
	if (!f)
		printf("  acl engine: %s\n", why);
	return f;
}

/* One round of a fresh engine: its result and the rule's reason in why. */
static int acl_round(const char *user, const char *pass, const char *prefix, char *why)
{
	struct fg_fleet_in in = { .offered = 100 };
	struct fg_fleet_out out;
	struct fg_fleet_stats st = {};
	struct fg_fleet *f = acl_engine(user, pass, prefix);
	int err;

	if (!f)
		return -ENOMEM;
	err = fg_fleet_round(f, &in, &out);
	fg_fleet_stats(f, 0, &st);
	fg_why(why, "%s", st.reason);
	if (!err && !(out.renewed && out.grant > 0))
		err = -EPROTO;
	fg_fleet_free(f);
	return err;
}

static int nop_collect(void *ctx, struct fg_fleet_in *in, int n)
{
	(void)ctx;
	for (int i = 0; i < n; i++)
		in[i].offered = 50;
	return 0;
}

static void nop_apply(void *ctx, const struct fg_fleet_out *out, int n)
{
	(void)ctx;
	(void)out;
	(void)n;
}

static int nop_take_all(void *ctx, struct fg_fleet_in *in, int n)
{
	(void)ctx;
	(void)in;
	(void)n;
	return 0;
}

static void test_acl_user(void)
{
	const char *kill_user[4] = { "CLIENT", "KILL", "USER", "fgnode" };
	const char *del[5] = { "ACL", "DELUSER", "fgnode", "fgweak", "fgopen" };
	const char *newpass[5] = { "ACL", "SETUSER", "fgnode", "resetpass", ">changed" };
	struct fg_fleet_ops ops = { .collect = nop_collect,
				    .apply = nop_apply,
				    .take_all = nop_take_all };
	struct fg_fleet_worker *wk;
	struct fg_fleet_stats st;
	char why[FG_WHY_LEN];
	struct fg_fleet *f;
	int err;

	flushall();
	if (!ASSERT_TRUE(acl_user("fgnode", ">s3cret", NULL),
			 "ACL SETUSER fgnode (the docs' rights)"))
		return;
	err = acl_round("fgnode", "s3cret", NULL, why);
	if (!ASSERT_OK(err, "user fgnode with the documented rights leases"))
		printf("  reason: %s\n", why);

	err = acl_round("fgnode", "wrong", NULL, why);
	ASSERT_EQ(err, -EACCES, "a wrong password is refused");
	ASSERT_STR_CONTAINS(why, "AUTH as user fgnode refused: WRONGPASS", "its reason");

	ASSERT_TRUE(acl_user("fgweak", ">pw", "+zadd"), "ACL SETUSER fgweak (all but +zadd)");
	err = acl_round("fgweak", "pw", NULL, why);
	ASSERT_EQ(err, -EPROTO, "a user short of a right fails the round");
	/* Redis 7.0 names the script line, not the command */
	ASSERT_STR_CONTAINS(why, "can't run this command", "the reason is Redis's own");
	err = acl_round("fgnode", "s3cret", "otherfleet", why);
	ASSERT_EQ(err, -EPROTO, "keys outside ~floodgate:* fail the round");
	ASSERT_STR_CONTAINS(why, "NOPERM", "the reason says NOPERM");

	ASSERT_TRUE(acl_user("fgopen", "nopass", NULL), "ACL SETUSER fgopen nopass");
	f = acl_engine("fgopen", "", NULL);
	if (ASSERT_TRUE(f != NULL, "nopass engine")) {
		struct fg_fleet_in in = { .offered = 100 };
		struct fg_fleet_out out;
		const char *list[2] = { "CLIENT", "LIST" };
		redisReply *rep;

		ASSERT_OK(fg_fleet_round(f, &in, &out), "a nopass user leases without a password");
		rep = admin(2, list);
		ASSERT_TRUE(rep && rep->type == REDIS_REPLY_STRING &&
				    strstr(rep->str, "user=fgopen"),
			    "... connected as fgopen, not as the default user");
		if (rep)
			freeReplyObject(rep);
		fg_fleet_free(f);
	}

	/* the password changes under a running worker: its release names AUTH */
	f = acl_engine("fgnode", "s3cret", NULL);
	if (!ASSERT_TRUE(f != NULL, "worker engine"))
		goto out;
	wk = fg_fleet_worker_start(f, &ops, NULL);
	if (!ASSERT_TRUE(wk != NULL, "worker started")) {
		fg_fleet_free(f);
		goto out;
	}
	usleep(4 * IVAL_MS * 1000);
	fg_fleet_worker_stats(wk, 0, &st);
	ASSERT_EQ(st.state, FG_FLEET_OK, "the worker leases as fgnode");
	ASSERT_TRUE(admin_ok(5, newpass), "ACL SETUSER fgnode resetpass >changed");
	ASSERT_TRUE(int_cmd(4, kill_user) >= 1, "CLIENT KILL USER fgnode");
	usleep(3 * IVAL_MS * 1000);
	err = fg_fleet_worker_stop(wk, true, why);
	ASSERT_EQ(err, -EACCES, "handing the leases back is refused by AUTH");
	ASSERT_STR_CONTAINS(why, "AUTH as user fgnode refused: WRONGPASS",
			    "the release's reason names the AUTH refusal");
out:
	admin_ok(5, del);
}

/* Script throughput and round-trip latency on this machine (loopback
 * Unix socket, one client pipelining 64 rules a round). */
static void test_throughput(void)
{
	struct fg_fleet_in in[64];
	struct fg_fleet_out out[64];
	struct fg_fleet_conn_stats cs;
	struct fg_fleet *f;
	__u64 t0, t1, lat[200];
	char why[FG_WHY_LEN];
	double sps;

	f = fresh_engine("tp");
	if (!f)
		return;
	for (int i = 0; i < 64; i++) {
		struct fg_fleet_rule_conf rc = { .rate = 1e6, .burst = 1e6 };

		snprintf(rc.name, sizeof(rc.name), "tp%d", i);
		fg_fleet_add_rule(f, &rc, why);
		in[i] = (struct fg_fleet_in){ .offered = 1000 };
	}
	fg_fleet_round(f, in, out);
	t0 = now_ns();
	while (now_ns() - t0 < 1000 * MS)
		ASSERT_OK(fg_fleet_round(f, in, out), "pipelined round");
	t1 = now_ns();
	fg_fleet_conn_stats(f, &cs);
	sps = (double)(cs.commands - 64) / ((double)(t1 - t0) / 1e9);
	fg_fleet_free(f);
	f = engine("lat", IVAL_MS, LEASE_MS);
	if (!ASSERT_TRUE(f != NULL, "engine"))
		return;
	{
		struct fg_fleet_rule_conf rc = { .name = "lat", .rate = 1e6, .burst = 1e6 };

		fg_fleet_add_rule(f, &rc, why);
	}
	for (int i = 0; i < 200; i++) {
		t0 = now_ns();
		fg_fleet_round(f, in, out);
		lat[i] = now_ns() - t0;
	}
	fg_fleet_free(f);
	for (int i = 1; i < 200; i++)
		for (int j = i; j > 0 && lat[j] < lat[j - 1]; j--) {
			__u64 x = lat[j];

			lat[j] = lat[j - 1];
			lat[j - 1] = x;
		}
	printf("  lease scripts: %.0f/s (64 rules a round trip); one-rule round trip p50 %.0f us, "
	       "p99 %.0f us\n",
	       sps, (double)lat[100] / 1e3, (double)lat[198] / 1e3);
	ASSERT_GE((long long)sps, 2000, "at least 2,000 lease scripts/s");
	ASSERT_LE(lat[100], 5 * MS, "median round trip under 5 ms on loopback");
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_fatal };
	int err;

	fg_test_init(argc, argv);
	if (access(REDIS_BIN, X_OK))
		return fg_test_skip_all(
			"test_fleet", "%s not installed (apt-get install redis-server)", REDIS_BIN);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/fg-fleet-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(sock_path, sizeof(sock_path), "%s/redis.sock", tmpdir);
	atexit(cleanup);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGABRT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	err = redis_start();
	if (err)
		return FG_FAIL_ALL("redis tests", "cannot start %s: %s", REDIS_BIN, strerror(-err));
	FG_RUN(test_url_parsing);
	FG_RUN(test_config_refused);
	FG_RUN(test_noscript_reload);
	FG_RUN(test_extreme_limits);
	FG_RUN(test_share_by_demand);
	FG_RUN(test_join_no_burst);
	FG_RUN(test_bound);
	FG_RUN(test_returns);
	FG_RUN(test_namespace);
	FG_RUN(test_adopt);
	FG_RUN(test_redis_killed);
	if (!redis_pid && redis_start())
		return fg_test_summary();
	FG_RUN(test_redis_stopped);
	FG_RUN(test_partition);
	FG_RUN(test_redis_restarted_empty);
	FG_RUN(test_hostile_values);
	if (!redis_pid && redis_start())
		return fg_test_summary();
	FG_RUN(test_worker_never_blocks);
	FG_RUN(test_acl_user);
	FG_RUN(test_throughput);
	return fg_test_summary();
}
