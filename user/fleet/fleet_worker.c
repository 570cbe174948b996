// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The fleet worker: a thread that runs the lease rounds, so the daemon's main loop never waits on Redis. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "fleet/fleet.h"
#include "lib/sysutil.h"

#define FW_EVQ 256

struct fg_fleet_worker {
	struct fg_fleet *f;
	struct fg_fleet_ops ops;
	void *ctx;
	int n;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* under mu */
	bool stop, release;
	int release_err;
	char release_why[FG_FLEET_REASON_LEN];
	struct fg_fleet_stats st[FG_FLEET_MAX_RULES];
	struct fg_fleet_conn_stats cs;
	struct fg_fleet_event ev[FW_EVQ];
	int ev_head, ev_len;
	__u64 ev_lost;
	/* worker thread only */
	struct fg_fleet_in in[FG_FLEET_MAX_RULES];
	struct fg_fleet_out out[FG_FLEET_MAX_RULES];
};

/* Copy the engine's counters and events into the snapshot (mu held). */
static void publish(struct fg_fleet_worker *w)
{
	struct fg_fleet_event e;

	for (int i = 0; i < w->n; i++)
		fg_fleet_stats(w->f, i, &w->st[i]);
	fg_fleet_conn_stats(w->f, &w->cs);
	while (fg_fleet_next_event(w->f, &e)) {
		if (w->ev_len >= FW_EVQ) {
			w->ev_lost++;
			continue;
		}
		w->ev[(w->ev_head + w->ev_len++) % FW_EVQ] = e;
	}
	w->cs.events_lost += w->ev_lost;
}

static void ts_at(struct timespec *ts, __u64 ns)
{
	ts->tv_sec = (time_t)(ns / 1000000000ull);
	ts->tv_nsec = (long)(ns % 1000000000ull);
}

static void *worker_main(void *arg)
{
	struct fg_fleet_worker *w = arg;
	__u64 period = (__u64)fg_fleet_conf(w->f)->interval_ms * 1000000ull;
	__u64 next = fg_redis_now_ns();
	bool release;

	for (;;) {
		__u64 now;

		pthread_mutex_lock(&w->mu);
		while (!w->stop && fg_redis_now_ns() < next) {
			struct timespec ts;

			ts_at(&ts, next);
			pthread_cond_timedwait(&w->cv, &w->mu, &ts);
		}
		if (w->stop) {
			pthread_mutex_unlock(&w->mu);
			break;
		}
		pthread_mutex_unlock(&w->mu);

		memset(w->in, 0, sizeof(w->in[0]) * (size_t)w->n);
		if (!w->ops.collect || w->ops.collect(w->ctx, w->in, w->n) == 0) {
			fg_fleet_round(w->f, w->in, w->out);
			if (w->ops.apply)
				w->ops.apply(w->ctx, w->out, w->n);
		}
		pthread_mutex_lock(&w->mu);
		publish(w);
		pthread_mutex_unlock(&w->mu);

		/* a fixed rate; rounds missed (a stalled host) are skipped, not bunched */
		next += period;
		now = fg_redis_now_ns();
		if (next <= now)
			next = now + period;
	}
	pthread_mutex_lock(&w->mu);
	release = w->release;
	pthread_mutex_unlock(&w->mu);
	if (release) {
		int err;

		memset(w->in, 0, sizeof(w->in[0]) * (size_t)w->n);
		err = w->ops.take_all ? w->ops.take_all(w->ctx, w->in, w->n) : -EOPNOTSUPP;
		if (!err)
			err = fg_fleet_release(w->f, w->in);
		pthread_mutex_lock(&w->mu);
		w->release_err = err;
		snprintf(w->release_why, sizeof(w->release_why), "%s",
			 !err		 ? "" :
			 w->ops.take_all ? fg_fleet_last_error(w->f) :
					   "the caller cannot take the leases back");
		publish(w);
		pthread_mutex_unlock(&w->mu);
	}
	return NULL;
}

struct fg_fleet_worker *fg_fleet_worker_start(struct fg_fleet *f, const struct fg_fleet_ops *ops,
					      void *ctx)
{
	struct fg_fleet_worker *w = calloc(1, sizeof(*w));
	pthread_condattr_t ca;
	int err;

	if (!w) {
		errno = ENOMEM;
		return NULL;
	}
	w->f = f;
	w->ops = *ops;
	w->ctx = ctx;
	w->n = fg_fleet_nrules(f);
	for (int i = 0; i < w->n; i++)
		fg_fleet_stats(f, i, &w->st[i]);
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	err = pthread_create(&w->th, NULL, worker_main, w);
	if (err) {
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		free(w);
		errno = err;
		return NULL;
	}
	return w;
}

int fg_fleet_worker_events(struct fg_fleet_worker *w, struct fg_fleet_event *ev, int max)
{
	int n = 0;

	pthread_mutex_lock(&w->mu);
	while (n < max && w->ev_len) {
		ev[n++] = w->ev[w->ev_head];
		w->ev_head = (w->ev_head + 1) % FW_EVQ;
		w->ev_len--;
	}
	pthread_mutex_unlock(&w->mu);
	return n;
}

int fg_fleet_worker_stats(struct fg_fleet_worker *w, int rule, struct fg_fleet_stats *st)
{
	int err = 0;

	pthread_mutex_lock(&w->mu);
	if (rule < 0 || rule >= w->n)
		err = -ENOENT;
	else
		*st = w->st[rule];
	pthread_mutex_unlock(&w->mu);
	return err;
}

void fg_fleet_worker_conn_stats(struct fg_fleet_worker *w, struct fg_fleet_conn_stats *st)
{
	pthread_mutex_lock(&w->mu);
	*st = w->cs;
	pthread_mutex_unlock(&w->mu);
}

int fg_fleet_worker_stop(struct fg_fleet_worker *w, bool release, char *why)
{
	int err;

	if (!w)
		return 0;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	w->release = release;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->th, NULL);
	err = w->release_err;
	if (why)
		fg_why(why, "%s", w->release_why[0] ? w->release_why : err ? strerror(-err) : "");
	fg_fleet_free(w->f);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
	return err;
}
