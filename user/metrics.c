// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include "fgmaps.h"
#include "metrics.h"
#include "shedd.h"
#include "sysutil.h"

#define FG_METRICS_MAX_CONN	16	/* scrapers are few; cap what a peer can hold */

struct fg_metrics {
	struct MHD_Daemon *mhd;
	pthread_mutex_t lock;
	char *page;
	size_t len;
};

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version,
			      const char *upload_data, size_t *upload_data_size,
			      void **con_cls)
{
	struct fg_metrics *mx = cls;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	unsigned int status = MHD_HTTP_OK;
	char *copy;
	size_t len;

	(void)version; (void)upload_data; (void)upload_data_size; (void)con_cls;
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		static const char msg[] = "method not allowed\n";

		resp = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg,
						       MHD_RESPMEM_PERSISTENT);
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (strcmp(url, "/metrics") && strcmp(url, "/")) {
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

struct fg_metrics *fg_metrics_start(const char *listen, char *why, size_t why_len)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICSERV,
				  .ai_socktype = SOCK_STREAM }, *ai = NULL;
	char host[128], *port;
	struct fg_metrics *mx;
	int rc;

	if (snprintf(host, sizeof(host), "%s", listen) >= (int)sizeof(host) ||
	    !(port = strrchr(host, ':'))) {
		snprintf(why, why_len, "metrics: \"%s\" is not host:port", listen);
		return NULL;
	}
	*port++ = 0;
	if (host[0] == '[') {
		size_t l = strlen(host);

		if (l < 2 || host[l - 1] != ']') {
			snprintf(why, why_len, "metrics: bad IPv6 address in \"%s\"", listen);
			return NULL;
		}
		host[l - 1] = 0;
		memmove(host, host + 1, l - 1);
	}
	rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
	if (rc) {
		snprintf(why, why_len, "metrics: %s: %s", listen, gai_strerror(rc));
		return NULL;
	}
	mx = calloc(1, sizeof(*mx));
	if (!mx) {
		freeaddrinfo(ai);
		snprintf(why, why_len, "metrics: out of memory");
		return NULL;
	}
	pthread_mutex_init(&mx->lock, NULL);
	mx->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
				   (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				   0, NULL, NULL, handle, mx,
				   MHD_OPTION_SOCK_ADDR, ai->ai_addr,
				   MHD_OPTION_CONNECTION_LIMIT, (unsigned int)FG_METRICS_MAX_CONN,
				   MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10,
				   MHD_OPTION_END);
	freeaddrinfo(ai);
	if (!mx->mhd) {
		snprintf(why, why_len, "metrics: cannot listen on %s (in use? bad address?)",
			 listen);
		pthread_mutex_destroy(&mx->lock);
		free(mx);
		return NULL;
	}
	return mx;
}

void fg_metrics_stop(struct fg_metrics *mx)
{
	if (!mx)
		return;
	MHD_stop_daemon(mx->mhd);
	pthread_mutex_destroy(&mx->lock);
	free(mx->page);
	free(mx);
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

/* The signal, the controller's state and the shed fraction per tier; shed
 * packets per rule are the outcome "shed" of floodgate_packets_total. */
static void render_shedding(struct buf *b, const struct fg_shedd *sd)
{
	double frac[FG_NTIERS];

	bprintf(b, "# HELP floodgate_shed_controller 1 while the adaptive shedder runs (a shedding: section).\n"
		   "# TYPE floodgate_shed_controller gauge\nfloodgate_shed_controller %d\n", sd->on);
	if (!sd->on || !sd->map)
		return;
	bprintf(b, "# HELP floodgate_shed_signal The last utilization sample, in [0, 1] (NaN: unreadable).\n"
		   "# TYPE floodgate_shed_signal gauge\n");
	if (sd->have_value)
		bprintf(b, "floodgate_shed_signal %.6g\n", sd->value);
	else
		bprintf(b, "floodgate_shed_signal NaN\n");
	bprintf(b, "# HELP floodgate_shed_amount The shed amount S in [0, tiers]: tier of rank r is shed by clamp(S - r, 0, 1).\n"
		   "# TYPE floodgate_shed_amount gauge\nfloodgate_shed_amount %.6f\n"
		   "# HELP floodgate_shed_tiers The sheddable tiers the policy uses.\n"
		   "# TYPE floodgate_shed_tiers gauge\nfloodgate_shed_tiers %d\n",
		sd->c.amount, sd->c.ntiers);
	bprintf(b, "# HELP floodgate_shed_pressure_seconds Pressure counted toward the delay.\n"
		   "# TYPE floodgate_shed_pressure_seconds gauge\nfloodgate_shed_pressure_seconds %.3f\n",
		sd->c.pressure);
	bprintf(b, "# HELP floodgate_shed_phase The controller's phase (1 for the current one).\n"
		   "# TYPE floodgate_shed_phase gauge\n");
	for (int p = FG_SHED_IDLE; p <= FG_SHED_NOSIGNAL; p++)
		bprintf(b, "floodgate_shed_phase{phase=\"%s\"} %d\n", fg_shed_phase_name(p),
			sd->c.phase == (enum fg_shed_phase)p);
	bprintf(b, "# HELP floodgate_shed_held 1 while the kill switch or shed off holds the controller at zero.\n"
		   "# TYPE floodgate_shed_held gauge\nfloodgate_shed_held %d\n"
		   "# HELP floodgate_shed_shadow 1: shedding counts what it would shed and sheds nothing.\n"
		   "# TYPE floodgate_shed_shadow gauge\nfloodgate_shed_shadow %d\n",
		sd->hold != FG_SHEDD_RUN, sd->shadow);
	fg_shedd_fracs(sd->map, fg_mono_coarse_ns(), frac);
	bprintf(b, "# HELP floodgate_shed_fraction Share of a tier's packets shed now (SYNs go first at twice it, established TCP at 2f - 1).\n"
		   "# TYPE floodgate_shed_fraction gauge\n");
	for (int t = FG_TIER_NORMAL; t < FG_NTIERS; t++)
		bprintf(b, "floodgate_shed_fraction{tier=\"%s\"} %.6f\n", fg_tier_name(t), frac[t]);
	bprintf(b, "# HELP floodgate_shed_samples_total Signal samples taken, and those that could not be read.\n"
		   "# TYPE floodgate_shed_samples_total counter\n"
		   "floodgate_shed_samples_total{result=\"ok\"} %llu\n"
		   "floodgate_shed_samples_total{result=\"lost\"} %llu\n",
		(unsigned long long)(sd->samples - sd->lost), (unsigned long long)sd->lost);
}

int fg_metrics_render(const struct fg_metrics_snap *s, char **out, size_t *len)
{
	struct buf b = {};
	char lb[2 * FG_NAME_LEN + 4];

	bprintf(&b, "# HELP floodgate_packets_total Packets by rule and outcome (rule=\"_global\": before any rule).\n"
		    "# TYPE floodgate_packets_total counter\n");
	for (int pass = 0; pass < 3; pass++) {
		if (pass == 1)
			bprintf(&b, "# HELP floodgate_bytes_total Bytes by rule and outcome.\n"
				    "# TYPE floodgate_bytes_total counter\n");
		if (pass == 2)
			bprintf(&b, "# HELP floodgate_events_total Events by rule (counted besides the outcome).\n"
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
					bprintf(&b, "floodgate_%s_total{rule=\"%s\",outcome=\"%s\"} %llu\n",
						pass ? "bytes" : "packets", name, fg_outcome_names[o],
						(unsigned long long)(pass ? s->rows[r].bytes[o]
									  : s->rows[r].pkts[o]));
			} else {
				for (int e = 0; e < FG_EV_MAX; e++)
					bprintf(&b, "floodgate_events_total{rule=\"%s\",event=\"%s\"} %llu\n",
						name, fg_event_names[e],
						(unsigned long long)s->rows[r].ev[e]);
			}
		}
	}
	bprintf(&b, "# HELP floodgate_bypass 1 while the kill switch passes everything.\n"
		    "# TYPE floodgate_bypass gauge\nfloodgate_bypass %u\n",
		s->ctl->bypass && (!s->ctl->bypass_until || s->ctl->bypass_until > fg_mono_coarse_ns()));
	bprintf(&b, "# HELP floodgate_mode Global mode: 0 enforce, 1 shadow.\n"
		    "# TYPE floodgate_mode gauge\nfloodgate_mode %u\n", s->ctl->mode);
	bprintf(&b, "# HELP floodgate_policy_version Version of the active policy.\n"
		    "# TYPE floodgate_policy_version gauge\nfloodgate_policy_version %llu\n",
		(unsigned long long)s->pol->version);
	bprintf(&b, "# HELP floodgate_sources Source buckets in the tables.\n"
		    "# TYPE floodgate_sources gauge\n"
		    "floodgate_sources{family=\"ipv4\"} %zu\nfloodgate_sources{family=\"ipv6\"} %zu\n",
		s->sources4, s->sources6);
	if (s->shed)
		render_shedding(&b, s->shed);
	if (b.err) {
		free(b.p);
		return b.err;
	}
	*out = b.p;
	*len = b.len;
	return 0;
}
