// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The Prometheus endpoint: renders the page each tick and serves it; see metrics.h. */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include "maps/ctl.h"
#include "lists/escalate.h"
#include "maps/fgmaps.h"
#include "daemon/metrics.h"
#include "daemon/shedd.h"
#include "lib/sysutil.h"
#include "lib/version.h"

#define FD_RESERVE 128 /* descriptors left for the rest of the daemon */
#define REAP_MS	   250 /* how often connections are held to their deadline */

/* A connection, from MHD's STARTED notification to CLOSED. */
struct mx_conn {
	struct mx_conn *prev, *next;
	int fd;
	__u64 since; /* ms: accepted, or its last request arrived */
};

struct fg_metrics {
	struct MHD_Daemon *mhd;
	pthread_mutex_t lock; /* page, len */
	char *page;
	size_t len;
	pthread_mutex_t conn_lock; /* conns, stop */
	pthread_cond_t wake;
	struct mx_conn conns; /* list head */
	__u64 timeout_ms;
	bool stop;
	bool reaping; /* the reaper thread runs */
	pthread_t reaper;
};

static __u64 mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000 + (__u64)ts.tv_nsec / 1000000;
}

static void on_conn(void *cls, struct MHD_Connection *conn, void **socket_context,
		    enum MHD_ConnectionNotificationCode toe)
{
	struct fg_metrics *mx = cls;
	struct mx_conn *c = *socket_context;
	const union MHD_ConnectionInfo *ci;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		c = ci ? calloc(1, sizeof(*c)) : NULL;
		if (!c)
			return; /* untracked: MHD's idle timeout still holds */
		c->fd = ci->connect_fd;
		c->since = mono_ms();
		pthread_mutex_lock(&mx->conn_lock);
		c->next = mx->conns.next;
		c->prev = &mx->conns;
		c->next->prev = c;
		mx->conns.next = c;
		pthread_mutex_unlock(&mx->conn_lock);
		*socket_context = c;
	} else if (c) {
		/* MHD closes the fd after this returns: the reaper, which
		 * shuts fds down under conn_lock, never touches a reused one */
		pthread_mutex_lock(&mx->conn_lock);
		c->prev->next = c->next;
		c->next->prev = c->prev;
		pthread_mutex_unlock(&mx->conn_lock);
		free(c);
		*socket_context = NULL;
	}
}

/* A request arrived: the connection has timeout again, for the next one. */
static void conn_request(struct fg_metrics *mx, struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct mx_conn *c = ci ? ci->socket_context : NULL;

	if (!c)
		return;
	pthread_mutex_lock(&mx->conn_lock);
	c->since = mono_ms();
	pthread_mutex_unlock(&mx->conn_lock);
}

/*
 * MHD's own timeout is an idle timeout: a client that trickles one byte
 * a second keeps its connection for ever. Here every connection must
 * deliver a request within timeout of the last; shutdown() makes MHD's
 * next read see the end and close it.
 */
static void *reaper(void *arg)
{
	struct fg_metrics *mx = arg;
	struct timespec ts;

	pthread_mutex_lock(&mx->conn_lock);
	while (!mx->stop) {
		__u64 now = mono_ms();

		for (struct mx_conn *c = mx->conns.next; c != &mx->conns; c = c->next) {
			if (now - c->since < mx->timeout_ms)
				continue;
			shutdown(c->fd, SHUT_RDWR);
			c->since = now; /* once per timeout, until MHD closes it */
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += REAP_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&mx->wake, &mx->conn_lock, &ts);
	}
	pthread_mutex_unlock(&mx->conn_lock);
	return NULL;
}

/* What / serves, as exporters do: a pointer to the metrics. */
static const char landing[] =
	"<!DOCTYPE html>\n<html><head><title>floodgated</title></head><body>\n"
	"<h1>floodgated</h1>\n<p>floodgate's XDP rate limiter: its counters for Prometheus.</p>\n"
	"<p><a href=\"/metrics\">Metrics</a></p>\n"
	"<p>Documentation: floodgated(8), floodgate(8).</p>\n</body></html>\n";

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **con_cls)
{
	struct fg_metrics *mx = cls;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	unsigned int status = MHD_HTTP_OK;
	char *copy;
	size_t len;

	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)con_cls;
	conn_request(mx, conn);
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		static const char msg[] = "method not allowed\n";

		resp = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg,
						       MHD_RESPMEM_PERSISTENT);
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (!strcmp(url, "/")) {
		resp = MHD_create_response_from_buffer(sizeof(landing) - 1, (void *)landing,
						       MHD_RESPMEM_PERSISTENT);
		if (resp)
			MHD_add_response_header(resp, "Content-Type", "text/html; charset=utf-8");
	} else if (strcmp(url, "/metrics")) {
		static const char msg[] = "not found; try /metrics\n";

		resp = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg,
						       MHD_RESPMEM_PERSISTENT);
		status = MHD_HTTP_NOT_FOUND;
	} else {
		pthread_mutex_lock(&mx->lock);
		len = mx->len;
		copy = malloc(len ? len : 1);
		if (copy && len)
			memcpy(copy, mx->page, len);
		pthread_mutex_unlock(&mx->lock);
		if (!copy)
			return MHD_NO;
		resp = MHD_create_response_from_buffer(len, copy, MHD_RESPMEM_MUST_FREE);
		if (resp)
			MHD_add_response_header(resp, "Content-Type",
						"text/plain; version=0.0.4; charset=utf-8");
		else
			free(copy);
	}
	if (!resp)
		return MHD_NO;
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* "host:port", "[v6]:port", ":port" -> one address to listen on. */
static int resolve(const char *listen, struct addrinfo **ai, char *why)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICSERV,
				  .ai_socktype = SOCK_STREAM };
	char host[128], *port;
	int rc;

	if (snprintf(host, sizeof(host), "%s", listen) >= (int)sizeof(host) ||
	    !(port = strrchr(host, ':'))) {
		fg_why(why, "metrics: \"%s\" is not host:port", listen);
		return -EINVAL;
	}
	*port++ = 0;
	if (host[0] == '[') {
		size_t l = strlen(host);

		if (l < 2 || host[l - 1] != ']') {
			fg_why(why, "metrics: bad IPv6 address in \"%s\"", listen);
			return -EINVAL;
		}
		host[l - 1] = 0;
		memmove(host, host + 1, l - 1);
	}
	rc = getaddrinfo(host[0] ? host : NULL, port, &hints, ai);
	if (rc) {
		fg_why(why, "metrics: %s: %s", listen, gai_strerror(rc));
		return -EINVAL;
	}
	return 0;
}

/* Bind once ourselves, for the errno MHD would not tell (in use, not local). */
static int probe_bind(const struct addrinfo *ai, const char *listen, char *why)
{
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, err = 0;

	if (fd < 0)
		err = -errno;
	else if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
		 bind(fd, ai->ai_addr, ai->ai_addrlen))
		err = -errno;
	if (fd >= 0)
		close(fd);
	if (err)
		fg_why(why, "metrics: cannot listen on %s: %s", listen, strerror(-err));
	return err;
}

static bool is_any6(const struct addrinfo *ai)
{
	const struct sockaddr_in6 *s6 = (const void *)ai->ai_addr;

	return ai->ai_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr);
}

/* The defaults, then room in RLIMIT_NOFILE for max_connections. */
static int settle_opts(struct fg_metrics_opts *o, char *why)
{
	struct rlimit rl;
	rlim_t need;

	if (!o->max_connections)
		o->max_connections = FG_METRICS_MAX_CONN;
	if (!o->per_client)
		o->per_client = FG_METRICS_PER_CLIENT;
	if (!o->timeout_s)
		o->timeout_s = FG_METRICS_TIMEOUT_S;
	if (o->max_connections > FG_METRICS_MAX_CONN_MAX || o->timeout_s > FG_METRICS_TIMEOUT_MAX) {
		fg_why(why, "metrics: max_connections %u or timeout %u s out of range",
		       o->max_connections, o->timeout_s);
		return -EINVAL;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 0;
	need = (rlim_t)o->max_connections + FD_RESERVE;
	if (rl.rlim_cur < need && rl.rlim_cur != RLIM_INFINITY) {
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need :
										   rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur < need) {
		if (rl.rlim_cur < FD_RESERVE + 2) {
			fg_why(why,
			       "metrics: RLIMIT_NOFILE %llu leaves no descriptors "
			       "for connections",
			       (unsigned long long)rl.rlim_cur);
			return -EMFILE;
		}
		o->max_connections = (unsigned int)(rl.rlim_cur - FD_RESERVE);
	}
	if (o->per_client > o->max_connections)
		o->per_client = o->max_connections;
	return 0;
}

static void mx_free(struct fg_metrics *mx)
{
	pthread_mutex_destroy(&mx->lock);
	pthread_mutex_destroy(&mx->conn_lock);
	pthread_cond_destroy(&mx->wake);
	free(mx->page);
	free(mx);
}

static struct fg_metrics *mx_new(unsigned int timeout_s)
{
	struct fg_metrics *mx = calloc(1, sizeof(*mx));
	pthread_condattr_t ca;

	if (!mx)
		return NULL;
	pthread_mutex_init(&mx->lock, NULL);
	pthread_mutex_init(&mx->conn_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&mx->wake, &ca);
	pthread_condattr_destroy(&ca);
	mx->conns.next = mx->conns.prev = &mx->conns;
	mx->timeout_ms = (__u64)timeout_s * 1000;
	return mx;
}

static struct MHD_Daemon *mhd_start(struct fg_metrics *mx, const struct fg_metrics_opts *o,
				    const struct addrinfo *ai)
{
	unsigned int backlog = o->max_connections < 4096 ? o->max_connections : 4096;

	return MHD_start_daemon(
		MHD_USE_EPOLL_INTERNAL_THREAD | (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0) |
			(is_any6(ai) ? MHD_USE_DUAL_STACK : 0),
		0, NULL, NULL, handle, mx, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
		MHD_OPTION_CONNECTION_LIMIT, o->max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
		o->per_client, MHD_OPTION_CONNECTION_TIMEOUT, o->timeout_s,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)FG_METRICS_REQ_MAX,
		MHD_OPTION_LISTEN_BACKLOG_SIZE, backlog, MHD_OPTION_NOTIFY_CONNECTION, on_conn, mx,
		MHD_OPTION_END);
}

struct fg_metrics *fg_metrics_start(struct fg_metrics_opts *o, char *why)
{
	struct fg_metrics *mx = NULL;
	struct addrinfo *ai = NULL;
	sigset_t all, old;
	int rc;

	if (settle_opts(o, why) || resolve(o->listen, &ai, why))
		return NULL;
	if (probe_bind(ai, o->listen, why))
		goto fail;
	mx = mx_new(o->timeout_s);
	if (!mx) {
		fg_why(why, "metrics: out of memory");
		goto fail;
	}
	/* MHD's thread and the reaper take no signals: the daemon's main loop does */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	mx->mhd = mhd_start(mx, o, ai);
	rc = mx->mhd ? pthread_create(&mx->reaper, NULL, reaper, mx) : 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!mx->mhd) {
		fg_why(why, "metrics: libmicrohttpd cannot serve %s", o->listen);
		goto fail;
	}
	if (rc) {
		fg_why(why, "metrics: cannot start a thread: %s", strerror(rc));
		goto fail;
	}
	mx->reaping = true;
	freeaddrinfo(ai);
	return mx;
fail:
	if (mx && mx->mhd)
		MHD_stop_daemon(mx->mhd);
	if (mx)
		mx_free(mx);
	freeaddrinfo(ai);
	return NULL;
}

void fg_metrics_stop(struct fg_metrics *mx)
{
	if (!mx)
		return;
	if (mx->reaping) {
		pthread_mutex_lock(&mx->conn_lock);
		mx->stop = true;
		pthread_cond_signal(&mx->wake);
		pthread_mutex_unlock(&mx->conn_lock);
		pthread_join(mx->reaper, NULL);
	}
	MHD_stop_daemon(mx->mhd); /* CLOSED for every connection: conns empty */
	mx_free(mx);
}

void fg_metrics_publish(struct fg_metrics *mx, char *page, size_t len)
{
	char *old;

	if (!mx) {
		free(page);
		return;
	}
	pthread_mutex_lock(&mx->lock);
	old = mx->page;
	mx->page = page;
	mx->len = len;
	pthread_mutex_unlock(&mx->lock);
	free(old);
}

struct buf {
	char *p;
	size_t len, cap;
	int err;
};

static void __attribute__((format(printf, 2, 3))) bprintf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		if (b->err)
			return;
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->err = -EINVAL;
			return;
		}
		if (b->len + n < b->cap) {
			b->len += n;
			return;
		}
		size_t nc = (b->cap ? b->cap * 2 : 8192) + n;
		char *np = realloc(b->p, nc);

		if (!np) {
			b->err = -ENOMEM;
			return;
		}
		b->p = np;
		b->cap = nc;
	}
}

/* Rule names are validated identifiers, but escape for the format anyway. */
static const char *label(const char *s, char *buf, size_t len)
{
	size_t o = 0;

	for (; *s && o + 3 < len; s++) {
		if (*s == '"' || *s == '\\')
			buf[o++] = '\\';
		buf[o++] = *s == '\n' ? ' ' : *s;
	}
	buf[o] = 0;
	return buf;
}

/* How a per-rule fleet metric shows its field of struct fg_fleet_rule_status. */
enum rule_val {
	RV_COUNT,   /* an unsigned integer as it is */
	RV_SIGNED,  /* a signed 64-bit integer */
	RV_LEFT,    /* a CLOCK_MONOTONIC ns deadline: the seconds left, 0 when past */
	RV_SECONDS, /* ns, as seconds */
	RV_PPM,	    /* parts per million, as a fraction */
	RV_STATE,   /* enum fg_fleet_state: a line per state, 1 for the rule's own */
	RV_LOSS,    /* a rule id: its packets decided under on_loss (fg_stats) */
};

struct rule_metric {
	const char *name, *type, *help;
	enum rule_val how;
	size_t off, size; /* the field in struct fg_fleet_rule_status */
};

#define RULE_METRIC(name, type, how, field, help)                                    \
	{                                                                            \
		name, type, help, how, offsetof(struct fg_fleet_rule_status, field), \
			sizeof(((struct fg_fleet_rule_status *)0)->field)            \
	}

/* The per-rule fleet metrics, floodgate_fleet_<name>{rule="..."}, in page order: the lease
 * the program spends and what it decided without one, then the engine's state ... */
static const struct rule_metric rule_metrics[] = {
	RULE_METRIC("lease_seconds", "gauge", RV_LEFT, lease.lease_expires,
		    "Time left of the lease the program spends (0: on_loss applies)."),
	RULE_METRIC("tokens", "gauge", RV_SIGNED, lease.tokens,
		    "Tokens the program holds (cost units)."),
	RULE_METRIC("loss_packets_total", "counter", RV_LOSS, id,
		    "Packets the program decided under on_loss (event fleet_loss), daemon or not."),
	RULE_METRIC("state", "gauge", RV_STATE, st.state,
		    "1 for the rule's state: init ok grace fallback recovering."),
	RULE_METRIC("nodes", "gauge", RV_COUNT, st.nodes, "Nodes with this rule, last known."),
	RULE_METRIC("share", "gauge", RV_PPM, st.share_ppm,
		    "This node's share of the fleet's demand (0..1)."),
	RULE_METRIC("fallback_seconds_total", "counter", RV_SECONDS, st.fallback_ns,
		    "Time spent in fallback, the current spell included."),
	RULE_METRIC("degraded", "gauge", RV_COUNT, st.degraded,
		    "1 while values Redis held for the rule were repaired lately (docs/fleet.md)."),
};

/* ... and its counters (struct fg_fleet_stats), after them. */
#define FLEET_COUNTER(name, field, help) RULE_METRIC(name, "counter", RV_COUNT, st.field, help)
static const struct rule_metric rule_counters[] = {
	FLEET_COUNTER("granted_total", granted, "Tokens Redis granted this node."),
	FLEET_COUNTER("returned_total", returned, "Tokens handed back to the fleet bucket."),
	FLEET_COUNTER("discarded_total", discarded,
		      "Tokens taken back and not returned (stale, or Redis down)."),
	FLEET_COUNTER("debt_total", debt,
		      "Cost admitted under on_loss, charged to the bucket on recovery."),
	FLEET_COUNTER("grace_total", grace_entries,
		      "Entries into grace (Redis failed, the lease still runs)."),
	FLEET_COUNTER("fallbacks_total", fallbacks,
		      "Entries into fallback (the lease ran out: on_loss applies)."),
	FLEET_COUNTER("rounds_total", rounds, "Lease rounds the rule took part in."),
	FLEET_COUNTER("failed_total", failed, "Rounds without an answer for the rule."),
	FLEET_COUNTER("timeouts_total", timeouts, "Rounds that ended at the deadline."),
	FLEET_COUNTER("repairs_total", repairs,
		      "Answers in which this node's call repaired an implausible value Redis held."),
};

static void fleet_head(struct buf *b, const char *name, const char *type, const char *help)
{
	bprintf(b, "# HELP floodgate_fleet_%s %s\n# TYPE floodgate_fleet_%s %s\n", name, help, name,
		type);
}

/* The metric's field of rs, widened (the fields are integers of 1, 4 or 8 bytes). */
static __u64 rule_field(const struct fg_fleet_rule_status *rs, const struct rule_metric *m)
{
	const char *p = (const char *)rs + m->off;
	__u64 v64;
	__u32 v32;

	if (m->size == sizeof(__u8))
		return *(const __u8 *)p;
	if (m->size == sizeof(v32)) {
		memcpy(&v32, p, sizeof(v32));
		return v32;
	}
	memcpy(&v64, p, sizeof(v64));
	return v64;
}

/* One rule's line of metric m (a line per state for RV_STATE). */
static void render_rule_value(struct buf *b, const struct fg_metrics_snap *s,
			      const struct rule_metric *m, const char *rule, __u64 v, __u64 now)
{
	if (m->how == RV_STATE) {
		for (int k = 0; k < FG_FLEET_NSTATES; k++)
			bprintf(b, "floodgate_fleet_%s{rule=\"%s\",state=\"%s\"} %d\n", m->name,
				rule, fg_fleet_state_name(k), v == (__u64)k);
		return;
	}
	bprintf(b, "floodgate_fleet_%s{rule=\"%s\"} ", m->name, rule);
	switch (m->how) {
	case RV_SIGNED:
		bprintf(b, "%lld\n", (long long)v);
		break;
	case RV_LEFT:
		bprintf(b, "%.3f\n", v > now ? (v - now) / 1e9 : 0.0);
		break;
	case RV_SECONDS:
		bprintf(b, "%.3f\n", v / 1e9);
		break;
	case RV_PPM:
		bprintf(b, "%.6f\n", v / 1e6);
		break;
	case RV_LOSS:
		bprintf(b, "%llu\n",
			(unsigned long long)(v < FG_MAX_IDS ? s->rows[v].ev[FG_EV_FLEET_LOSS] : 0));
		break;
	default:
		bprintf(b, "%llu\n", (unsigned long long)v);
	}
}

/* Each metric of table (n of them) with its head and a line per rule. */
static void render_rule_metrics(struct buf *b, const struct fg_metrics_snap *s,
				const struct rule_metric *table, size_t n, __u64 now)
{
	const struct fg_fleet_status *fs = s->fleet;
	char lb[2 * FG_NAME_LEN + 4];

	for (const struct rule_metric *m = table; m < table + n; m++) {
		fleet_head(b, m->name, m->type, m->help);
		for (__u32 i = 0; i < fs->nrules; i++)
			render_rule_value(b, s, m, label(fs->rule[i].name, lb, sizeof(lb)),
					  rule_field(&fs->rule[i], m), now);
	}
}

/* Every per-rule fleet metric. */
static void render_fleet_rules(struct buf *b, const struct fg_metrics_snap *s)
{
	__u64 now = fg_mono_ns();

	render_rule_metrics(b, s, rule_metrics, sizeof(rule_metrics) / sizeof(rule_metrics[0]),
			    now);
	render_rule_metrics(b, s, rule_counters, sizeof(rule_counters) / sizeof(rule_counters[0]),
			    now);
}

/* The Redis connection: one per daemon. */
static void render_fleet_conn(struct buf *b, const struct fg_fleet_conn_stats *cs)
{
	fleet_head(b, "round_seconds", "gauge", "Duration of the last lease round trip.");
	bprintf(b, "floodgate_fleet_round_seconds %.6f\n", cs->last_round_ns / 1e9);
	fleet_head(b, "round_seconds_max", "gauge", "Longest lease round trip.");
	bprintf(b, "floodgate_fleet_round_seconds_max %.6f\n", cs->max_round_ns / 1e9);
	fleet_head(b, "conn_total", "counter", "Redis connection events and commands sent.");
	bprintf(b,
		"floodgate_fleet_conn_total{event=\"round\"} %llu\n"
		"floodgate_fleet_conn_total{event=\"connect\"} %llu\n"
		"floodgate_fleet_conn_total{event=\"connect_failure\"} %llu\n"
		"floodgate_fleet_conn_total{event=\"script_load\"} %llu\n"
		"floodgate_fleet_conn_total{event=\"noscript\"} %llu\n"
		"floodgate_fleet_conn_total{event=\"evalsha\"} %llu\n",
		(unsigned long long)cs->rounds, (unsigned long long)cs->connects,
		(unsigned long long)cs->connect_failures, (unsigned long long)cs->script_loads,
		(unsigned long long)cs->noscript, (unsigned long long)cs->commands);
}

/* The operator's switch and the pools exempt from shedding (their shedding: off). */
static void render_shed_switches(struct buf *b, const struct fg_shedd *sd,
				 const struct fg_policy *pol)
{
	bprintf(b,
		"# HELP floodgate_shed_off 1 while the operator has switched adaptive shedding off (floodgate shed off).\n"
		"# TYPE floodgate_shed_off gauge\nfloodgate_shed_off %u\n",
		sd->map ? (unsigned int)(__atomic_load_n(&sd->map->off, __ATOMIC_ACQUIRE) != 0) :
			  0);
	if (!pol || !pol->npools)
		return;
	bprintf(b,
		"# HELP floodgate_shed_pool_exempt 1: the pool's rules are never shed by the adaptive shedder (shedding: off).\n"
		"# TYPE floodgate_shed_pool_exempt gauge\n");
	for (__u32 i = 0; i < pol->npools && i < FG_MAX_POOLS; i++)
		bprintf(b, "floodgate_shed_pool_exempt{pool=\"%.*s\"} %d\n", FG_NAME_LEN,
			pol->pool_names[i], (pol->pools[i].flags & FG_POOL_NOSHED) != 0);
}

/* The signal, the controller's state and the shed fraction per tier; shed
 * packets per rule are the outcome "shed" of floodgate_packets_total. */
static void render_shedding(struct buf *b, const struct fg_shedd *sd, const struct fg_policy *pol)
{
	double frac[FG_NTIERS];

	bprintf(b,
		"# HELP floodgate_shed_controller 1 while the adaptive shedder runs (a shedding: section).\n"
		"# TYPE floodgate_shed_controller gauge\nfloodgate_shed_controller %d\n",
		sd->on);
	render_shed_switches(b, sd, pol);
	if (!sd->on || !sd->map)
		return;
	bprintf(b,
		"# HELP floodgate_shed_signal The last utilization sample, in [0, 1] (NaN: unreadable).\n"
		"# TYPE floodgate_shed_signal gauge\n");
	if (sd->have_value)
		bprintf(b, "floodgate_shed_signal %.6g\n", sd->value);
	else
		bprintf(b, "floodgate_shed_signal NaN\n");
	bprintf(b,
		"# HELP floodgate_shed_amount The shed amount S in [0, tiers]: tier of rank r is shed by clamp(S - r, 0, 1).\n"
		"# TYPE floodgate_shed_amount gauge\nfloodgate_shed_amount %.6f\n"
		"# HELP floodgate_shed_tiers The sheddable tiers the policy uses.\n"
		"# TYPE floodgate_shed_tiers gauge\nfloodgate_shed_tiers %d\n",
		sd->c.amount, sd->c.ntiers);
	bprintf(b,
		"# HELP floodgate_shed_pressure_seconds Pressure counted toward the delay.\n"
		"# TYPE floodgate_shed_pressure_seconds gauge\nfloodgate_shed_pressure_seconds %.3f\n",
		sd->c.pressure);
	bprintf(b, "# HELP floodgate_shed_phase The controller's phase (1 for the current one).\n"
		   "# TYPE floodgate_shed_phase gauge\n");
	for (int p = FG_SHED_IDLE; p <= FG_SHED_NOSIGNAL; p++)
		bprintf(b, "floodgate_shed_phase{phase=\"%s\"} %d\n", fg_shed_phase_name(p),
			sd->c.phase == (enum fg_shed_phase)p);
	bprintf(b,
		"# HELP floodgate_shed_held 1 while the kill switch or shed off holds the controller at zero.\n"
		"# TYPE floodgate_shed_held gauge\nfloodgate_shed_held %d\n"
		"# HELP floodgate_shed_shadow 1: shedding counts what it would shed and sheds nothing.\n"
		"# TYPE floodgate_shed_shadow gauge\nfloodgate_shed_shadow %d\n",
		sd->hold != FG_SHEDD_RUN, sd->shadow);
	/* what the program sheds: nothing while off or in shedding's shadow */
	fg_shedd_shedding(sd->map, fg_mono_coarse_ns(), sd->hold == FG_SHEDD_BYPASS, false, frac);
	bprintf(b,
		"# HELP floodgate_shed_fraction Share of a tier's packets shed now (SYNs go first at twice it, established TCP at 2f - 1).\n"
		"# TYPE floodgate_shed_fraction gauge\n");
	for (int t = FG_TIER_NORMAL; t < FG_NTIERS; t++)
		bprintf(b, "floodgate_shed_fraction{tier=\"%s\"} %.6f\n", fg_tier_name(t), frac[t]);
	bprintf(b,
		"# HELP floodgate_shed_samples_total Signal samples taken, and those that could not be read.\n"
		"# TYPE floodgate_shed_samples_total counter\n"
		"floodgate_shed_samples_total{result=\"ok\"} %llu\n"
		"floodgate_shed_samples_total{result=\"lost\"} %llu\n",
		(unsigned long long)(sd->samples - sd->lost), (unsigned long long)sd->lost);
}

/* Escalation to the runtime deny list (escalate.h). */
static void render_escalation(struct buf *b, const struct fg_esc_counts *n)
{
	bprintf(b,
		"# HELP floodgate_escalations_total Sources put on the runtime deny list by escalation.\n"
		"# TYPE floodgate_escalations_total counter\nfloodgate_escalations_total %llu\n"
		"# HELP floodgate_escalations_refused_total Escalations refused at the cap (escalation: max_entries) or a full runtime list.\n"
		"# TYPE floodgate_escalations_refused_total counter\nfloodgate_escalations_refused_total %llu\n"
		"# HELP floodgate_escalations_shadow_total Escalations a rule in shadow would have made (nothing added).\n"
		"# TYPE floodgate_escalations_shadow_total counter\nfloodgate_escalations_shadow_total %llu\n"
		"# HELP floodgate_escalated_entries Escalated entries live on the runtime deny list.\n"
		"# TYPE floodgate_escalated_entries gauge\nfloodgate_escalated_entries %zu\n"
		"# HELP floodgate_escalation_max_entries The cap on escalated entries (escalation: max_entries).\n"
		"# TYPE floodgate_escalation_max_entries gauge\nfloodgate_escalation_max_entries %u\n",
		(unsigned long long)n->escalated, (unsigned long long)n->refused,
		(unsigned long long)n->shadow, n->live, n->max);
}

/* /proc/self/stat's fields from utime (14) on; 0 or -errno */
static int proc_stat(unsigned long long *utime, unsigned long long *stime,
		     unsigned long long *start, unsigned long long *vsize, long long *rss)
{
	char buf[1024], *p;
	FILE *f = fopen("/proc/self/stat", "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
	if (!p || sscanf(p + 2,
			 "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d "
			 "%*d %*d %llu %llu %lld",
			 utime, stime, start, vsize, rss) != 5)
		return -EPROTO;
	return 0;
}

/* The boot time, CLOCK_REALTIME s (btime in /proc/stat); 0 if unknown. */
static unsigned long long boot_time(void)
{
	unsigned long long bt = 0;
	char line[256];
	FILE *f = fopen("/proc/stat", "re");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %llu", &bt) == 1)
			break;
	if (f)
		fclose(f);
	return bt;
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* opendir's own */
}

/* The standard process metrics, as Prometheus' client libraries name them. */
static void render_process(struct buf *b)
{
	unsigned long long ut, st, start, vsize;
	long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	struct rlimit rl;
	long long rss;
	int fds = open_fds();

	if (tck <= 0 || page <= 0 || proc_stat(&ut, &st, &start, &vsize, &rss))
		return; /* not Linux /proc: nothing rather than wrong figures */
	bprintf(b,
		"# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
		"# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.2f\n"
		"# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
		"# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %lld\n"
		"# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
		"# TYPE process_virtual_memory_bytes gauge\nprocess_virtual_memory_bytes %llu\n"
		"# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
		"# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %.2f\n",
		(double)(ut + st) / (double)tck, rss * page, vsize,
		(double)boot_time() + (double)start / (double)tck);
	if (fds >= 0)
		bprintf(b,
			"# HELP process_open_fds Number of open file descriptors.\n"
			"# TYPE process_open_fds gauge\nprocess_open_fds %d\n",
			fds);
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY)
		bprintf(b,
			"# HELP process_max_fds Maximum number of open file descriptors.\n"
			"# TYPE process_max_fds gauge\nprocess_max_fds %llu\n",
			(unsigned long long)rl.rlim_cur);
}

int fg_metrics_render(const struct fg_metrics_snap *s, char **out, size_t *len)
{
	struct buf b = {};
	char lb[2 * FG_NAME_LEN + 4];
	__u32 mode;

	bprintf(&b,
		"# HELP floodgate_packets_total Packets by rule and outcome (rule=\"_global\": before any rule; outcomes shadow and *_shadow: what enforce refuses, passed in shadow mode).\n"
		"# TYPE floodgate_packets_total counter\n");
	for (int pass = 0; pass < 3; pass++) {
		if (pass == 1)
			bprintf(&b, "# HELP floodgate_bytes_total Bytes by rule and outcome.\n"
				    "# TYPE floodgate_bytes_total counter\n");
		if (pass == 2)
			bprintf(&b,
				"# HELP floodgate_events_total Events by rule (counted besides the outcome).\n"
				"# TYPE floodgate_events_total counter\n");
		for (int r = 0; r < FG_NROWS; r++) {
			const char *name;

			if (r == FG_ROW_GLOBAL)
				name = "_global";
			else if (s->names[r].in_use)
				name = label(s->names[r].name, lb, sizeof(lb));
			else
				continue;
			if (pass < 2) {
				for (int o = 0; o < FG_OUT_MAX; o++)
					bprintf(&b,
						"floodgate_%s_total{rule=\"%s\",outcome=\"%s\"} %llu\n",
						pass ? "bytes" : "packets", name,
						fg_outcome_names[o],
						(unsigned long long)(pass ? s->rows[r].bytes[o] :
									    s->rows[r].pkts[o]));
			} else {
				for (int e = 0; e < FG_EV_MAX; e++)
					bprintf(&b,
						"floodgate_events_total{rule=\"%s\",event=\"%s\"} %llu\n",
						name, fg_event_names[e],
						(unsigned long long)s->rows[r].ev[e]);
			}
		}
	}
	bprintf(&b,
		"# HELP floodgate_build_info The running floodgated's version and libraries (always 1).\n"
		"# TYPE floodgate_build_info gauge\n"
		"floodgate_build_info{version=\"%s\",libbpf=\"%s\",libxdp=\"%s\",abi=\"%u\"} 1\n",
		label(fg_version(), lb, sizeof(lb)), fg_libbpf_version(), fg_libxdp_version(),
		FG_ABI_VERSION);
	bprintf(&b,
		"# HELP floodgate_bypass 1 while the kill switch passes everything.\n"
		"# TYPE floodgate_bypass gauge\nfloodgate_bypass %u\n",
		s->ctl->bypass &&
			(!s->ctl->bypass_until || s->ctl->bypass_until > fg_mono_coarse_ns()));
	mode = fg_ctl_mode_global(s->ctl);
	bprintf(&b,
		"# HELP floodgate_mode The global mode in force, overrides included (1 for the current one).\n"
		"# TYPE floodgate_mode gauge\nfloodgate_mode{mode=\"enforce\"} %d\n"
		"floodgate_mode{mode=\"shadow\"} %d\n",
		mode != FG_MODE_SHADOW, mode == FG_MODE_SHADOW);
	bprintf(&b,
		"# HELP floodgate_policy_version Version of the active policy.\n"
		"# TYPE floodgate_policy_version gauge\nfloodgate_policy_version %llu\n",
		(unsigned long long)s->pol->version);
	bprintf(&b,
		"# HELP floodgate_sources Source buckets in the tables.\n"
		"# TYPE floodgate_sources gauge\n"
		"floodgate_sources{family=\"ipv4\"} %zu\nfloodgate_sources{family=\"ipv6\"} %zu\n",
		s->sources4, s->sources6);
	bprintf(&b,
		"# HELP floodgate_sources_counted_timestamp_seconds When the daemon's last pass "
		"over the source tables ended (floodgate_sources), Unix time.\n"
		"# TYPE floodgate_sources_counted_timestamp_seconds gauge\n"
		"floodgate_sources_counted_timestamp_seconds %llu\n",
		(unsigned long long)s->sources_at);
	bprintf(&b,
		"# HELP floodgate_daemon_source_reads_total Source table entries the daemon "
		"has read (incremental walk and re-checks).\n"
		"# TYPE floodgate_daemon_source_reads_total counter\n"
		"floodgate_daemon_source_reads_total %llu\n",
		(unsigned long long)s->source_reads);
	bprintf(&b,
		"# HELP floodgate_ipv4_list_blocks Blocks of the IPv4 lists' table (1 KB each).\n"
		"# TYPE floodgate_ipv4_list_blocks gauge\nfloodgate_ipv4_list_blocks %u\n"
		"# HELP floodgate_ipv4_list_trie Ranges and prefixes of the IPv4 lists the LPM trie "
		"answers, past the block budget.\n# TYPE floodgate_ipv4_list_trie gauge\n"
		"floodgate_ipv4_list_trie{range=\"16\"} %u\nfloodgate_ipv4_list_trie{range=\"24\"} %u\n"
		"floodgate_ipv4_list_trie{range=\"prefix\"} %u\n",
		s->ipv4_blocks, s->ipv4_trie16, s->ipv4_trie24, s->ipv4_trie_pfx);
	bprintf(&b,
		"# HELP floodgate_throttle_events_total Throttle events read from the ring.\n"
		"# TYPE floodgate_throttle_events_total counter\n"
		"floodgate_throttle_events_total %llu\n",
		(unsigned long long)s->throttle_events);
	if (s->fleet) {
		render_fleet_rules(&b, s);
		render_fleet_conn(&b, &s->fleet->cs);
	}
	if (s->extra && s->extra_len)
		bprintf(&b, "%.*s", (int)s->extra_len, s->extra);
	if (s->shed)
		render_shedding(&b, s->shed, s->pol);
	if (s->esc)
		render_escalation(&b, s->esc);
	render_process(&b);
	if (b.err) {
		free(b.p);
		return b.err;
	}
	*out = b.p;
	*len = b.len;
	return 0;
}
