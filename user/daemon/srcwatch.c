// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* floodgated's watch over the source tables; see srcwatch.h. */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <bpf/libbpf.h>

#include "maps/fgmaps.h"
#include "daemon/srcwatch.h"
#include "lib/sysutil.h"

static int on_event(void *ctx, void *data, size_t len)
{
	struct fg_srcwatch *sw = ctx;

	if (len < sizeof(struct fg_tev))
		return 0;
	sw->events++;
	if (!sw->discard)
		fg_throttle_event(&sw->tr, data, sw->names);
	return 0;
}

/* The counts of a finished pass, into fg_meta (read, change, write: the
 * daemon's other writers of fg_meta run in the same thread). */
static int publish(struct fg_srcwatch *sw, int passes)
{
	__u64 now = (__u64)time(NULL);
	struct fg_meta meta;
	int err;

	if (passes & FG_SRCWALK_PASS4) {
		sw->count4 = sw->walk.count4;
		sw->at4 = now;
	}
	if (passes & FG_SRCWALK_PASS6) {
		sw->count6 = sw->walk.count6;
		sw->at6 = now;
	}
	sw->count_at = sw->at4 < sw->at6 ? sw->at4 : sw->at6;
	if ((err = fg_meta_read(sw->m, &meta)))
		return err;
	meta.src_count4 = sw->count4;
	meta.src_count6 = sw->count6;
	meta.src_count_at = sw->count_at;
	return fg_meta_write(sw->m, &meta);
}

int fg_srcwatch_start(struct fg_srcwatch *sw, struct fg_maps *m, size_t track_max)
{
	int err, rc, passes = 0;

	memset(sw, 0, sizeof(*sw));
	sw->m = m;
	if ((err = fg_throttle_init(&sw->tr, track_max)))
		return err;
	if ((err = fg_srcwalk_open(&sw->walk, m)))
		goto fail;
	sw->rb = ring_buffer__new(m->fd[FGM_TEV], on_event, sw, NULL);
	if (!sw->rb) {
		err = -errno;
		goto fail;
	}
	sw->discard = true;
	rc = ring_buffer__consume(sw->rb);
	sw->discard = false;
	if (rc < 0) {
		err = rc;
		goto fail;
	}
	/* one full pass now, so status has figures from the start */
	while ((rc = fg_srcwalk_step(&sw->walk, passes & FG_SRCWALK_PASS4 ? 0 : sw->walk.nsets,
				     passes & FG_SRCWALK_PASS6 ? 0 : sw->walk.nsets6)) >= 0 &&
	       (passes |= rc) != (FG_SRCWALK_PASS4 | FG_SRCWALK_PASS6))
		;
	if (rc < 0 || (err = publish(sw, passes))) {
		err = rc < 0 ? rc : err;
		goto fail;
	}
	return 0;
fail:
	fg_srcwatch_stop(sw);
	return err;
}

int fg_srcwatch_tick(struct fg_srcwatch *sw, const struct fg_policy *pol,
		     const struct fg_name *names)
{
	int err = 0, rc;

	if (!sw->rb)
		return -EBADF;
	fg_throttle_begin(&sw->tr);
	sw->tr.now_ns = fg_mono_coarse_ns();
	sw->names = names;
	rc = ring_buffer__consume(sw->rb);
	if (rc < 0)
		err = rc;
	sw->walk.pol = pol;
	sw->walk.now_tu = fg_mono_coarse_ns() << FG_TU_SHIFT;
	fg_throttle_recheck(&sw->tr, FG_SRCWATCH_RECHECK, fg_srcwalk_lookup, &sw->walk, names);
	rc = fg_srcwalk_step(&sw->walk, FG_SRCWATCH_SETS4, FG_SRCWATCH_SETS6);
	if (rc > 0)
		rc = publish(sw, rc);
	if (rc < 0 && !err)
		err = rc;
	sw->walk.pol = NULL;
	sw->names = NULL;
	return err;
}

void fg_srcwatch_stop(struct fg_srcwatch *sw)
{
	ring_buffer__free(sw->rb);
	sw->rb = NULL;
	fg_srcwalk_close(&sw->walk);
	fg_throttle_free(&sw->tr);
}
