// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The runtime switches in fg_ctl, lock-free; see ctl.h. */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "maps/ctl.h"

#define LOAD(p)	    __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

int fg_ctl_map_open(struct fg_ctl_map *cm, int fd)
{
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);
	long page = sysconf(_SC_PAGESIZE);
	struct fg_ctl *c;
	size_t len;

	cm->ctl = NULL;
	cm->len = 0;
	if (page <= 0)
		return -EINVAL;
	if (bpf_obj_get_info_by_fd(fd, &info, &ilen))
		return -errno;
	if (info.type != BPF_MAP_TYPE_ARRAY || info.key_size != 4 || info.max_entries != 1 ||
	    info.value_size != sizeof(struct fg_ctl) || !(info.map_flags & BPF_F_MMAPABLE))
		return -EPROTO;
	len = (sizeof(struct fg_ctl) + (size_t)page - 1) & ~((size_t)page - 1);
	c = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (c == MAP_FAILED)
		return -errno;
	/* magic 0: a fresh map that fg_ctl_init has not stamped yet */
	if (LOAD(&c->magic) &&
	    (LOAD(&c->magic) != FG_ABI_MAGIC || LOAD(&c->abi) != FG_ABI_VERSION)) {
		munmap(c, len);
		return -EPROTO;
	}
	cm->ctl = c;
	cm->len = len;
	return 0;
}

void fg_ctl_map_close(struct fg_ctl_map *cm)
{
	if (cm->ctl)
		munmap(cm->ctl, cm->len);
	cm->ctl = NULL;
	cm->len = 0;
}

static void stamp_ovr(struct fg_ctl *c)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	__atomic_store_n(&c->ovr_since, (__u64)ts.tv_sec, __ATOMIC_RELAXED);
}

int fg_switch_bypass(struct fg_ctl_map *cm, bool on, __u64 until_ns)
{
	if (!cm->ctl)
		return -EBADF;
	if (on) {
		__atomic_store_n(&cm->ctl->bypass_until, until_ns, __ATOMIC_RELAXED);
		STORE(&cm->ctl->bypass, 1);
	} else {
		STORE(&cm->ctl->bypass, 0);
	}
	return 0;
}

/* v, at most max, into the fg_ctl word at off: the switches that store one word. */
static int store_word(struct fg_ctl_map *cm, size_t off, __u32 v, __u32 max)
{
	if (!cm->ctl)
		return -EBADF;
	if (v > max)
		return -EINVAL;
	STORE((__u32 *)((char *)cm->ctl + off), v);
	return 0;
}

int fg_switch_mode_ovr(struct fg_ctl_map *cm, __u32 ovr)
{
	int err = store_word(cm, offsetof(struct fg_ctl, mode_ovr), ovr, FG_OVR_SHADOW);

	if (!err)
		stamp_ovr(cm->ctl);
	return err;
}

int fg_switch_rule_ovr(struct fg_ctl_map *cm, __u32 id, __u32 ovr)
{
	struct fg_ctl *c = cm->ctl;
	__u64 bit;
	__u32 w;

	if (!c)
		return -EBADF;
	if (id >= FG_MAX_IDS || ovr > FG_OVR_SHADOW)
		return -EINVAL;
	w = id / 64;
	bit = 1ull << (id % 64);
	if (ovr == FG_OVR_NONE) {
		if (__atomic_fetch_and(&c->rule_ovr_set[w], ~bit, __ATOMIC_SEQ_CST) & bit)
			__atomic_fetch_sub(&c->rule_ovr_n, 1u, __ATOMIC_SEQ_CST);
		stamp_ovr(c);
		return 0;
	}
	/* counted before the bit is set, and taken back if it was set already:
	 * rule_ovr_n never counts too few */
	__atomic_fetch_add(&c->rule_ovr_n, 1u, __ATOMIC_SEQ_CST);
	if (ovr == FG_OVR_ENFORCE)
		__atomic_fetch_and(&c->rule_ovr_shadow[w], ~bit, __ATOMIC_RELAXED);
	else
		__atomic_fetch_or(&c->rule_ovr_shadow[w], bit, __ATOMIC_RELAXED);
	if (__atomic_fetch_or(&c->rule_ovr_set[w], bit, __ATOMIC_SEQ_CST) & bit)
		__atomic_fetch_sub(&c->rule_ovr_n, 1u, __ATOMIC_SEQ_CST);
	stamp_ovr(c);
	return 0;
}

int fg_switch_clear_rule_ovr_ids(struct fg_ctl_map *cm, const __u64 mask[FG_OVR_WORDS])
{
	if (!cm->ctl)
		return -EBADF;
	if (!mask)
		return -EINVAL;
	for (int w = 0; w < FG_OVR_WORDS; w++) {
		__u64 was;

		if (!mask[w])
			continue;
		was = __atomic_fetch_and(&cm->ctl->rule_ovr_set[w], ~mask[w], __ATOMIC_SEQ_CST);
		__atomic_fetch_sub(&cm->ctl->rule_ovr_n, (__u32)__builtin_popcountll(was & mask[w]),
				   __ATOMIC_SEQ_CST);
		__atomic_fetch_and(&cm->ctl->rule_ovr_shadow[w], ~mask[w], __ATOMIC_RELAXED);
	}
	return 0;
}

int fg_switch_slot(struct fg_ctl_map *cm, __u32 slot)
{
	return store_word(cm, offsetof(struct fg_ctl, slot), slot, 1);
}

int fg_ctl_stamp(struct fg_ctl_map *cm, __u32 mode, __u32 src4_bits, __u64 seed4)
{
	if (!cm->ctl)
		return -EBADF;
	if (mode > FG_MODE_SHADOW || src4_bits < FG_SRC4_MIN_BITS || src4_bits > FG_SRC4_MAX_BITS)
		return -EINVAL;
	if (LOAD(&cm->ctl->magic))
		return -EEXIST;
	STORE(&cm->ctl->abi, FG_ABI_VERSION);
	STORE(&cm->ctl->slot, 0u);
	STORE(&cm->ctl->mode, mode);
	STORE(&cm->ctl->src4_bits, src4_bits);
	STORE(&cm->ctl->seed4, seed4);
	STORE(&cm->ctl->magic, FG_ABI_MAGIC);
	return 0;
}

int fg_ctl_stamp6(struct fg_ctl_map *cm, __u32 src6_bits, const __u64 seed6[2])
{
	if (!cm->ctl)
		return -EBADF;
	if (src6_bits < FG_SRC6_MIN_BITS || src6_bits > FG_SRC6_MAX_BITS)
		return -EINVAL;
	if (LOAD(&cm->ctl->magic))
		return -EEXIST;
	STORE(&cm->ctl->src6_bits, src6_bits);
	STORE(&cm->ctl->seed6[0], seed6[0]);
	STORE(&cm->ctl->seed6[1], seed6[1]);
	return 0;
}

int fg_switch_file_mode(struct fg_ctl_map *cm, __u32 mode)
{
	return store_word(cm, offsetof(struct fg_ctl, mode), mode, FG_MODE_SHADOW);
}

int fg_switch_rt_active(struct fg_ctl_map *cm, int delta)
{
	if (!cm->ctl)
		return -EBADF;
	if (delta != 1 && delta != -1)
		return -EINVAL;
	/* seq_cst: the add is visible before the insert that follows it */
	__atomic_fetch_add(&cm->ctl->rt_active, (__u32)delta, __ATOMIC_SEQ_CST);
	return 0;
}

int fg_switch_rt_scoped(struct fg_ctl_map *cm, int delta)
{
	if (!cm->ctl)
		return -EBADF;
	if (delta != 1 && delta != -1)
		return -EINVAL;
	__atomic_fetch_add(&cm->ctl->rt_scoped, (__u32)delta, __ATOMIC_SEQ_CST);
	return 0;
}

__u32 fg_ctl_mode_global(const struct fg_ctl *c)
{
	if (c->mode_ovr)
		return c->mode_ovr == FG_OVR_SHADOW ? FG_MODE_SHADOW : FG_MODE_ENFORCE;
	return c->mode == FG_MODE_SHADOW ? FG_MODE_SHADOW : FG_MODE_ENFORCE;
}

__u32 fg_ctl_mode_rule_ovr(const struct fg_ctl *c, __u32 id)
{
	__u64 bit = 1ull << (id % 64);

	if (id >= FG_MAX_IDS || !(c->rule_ovr_set[id / 64] & bit))
		return FG_OVR_NONE;
	return c->rule_ovr_shadow[id / 64] & bit ? FG_OVR_SHADOW : FG_OVR_ENFORCE;
}

__u32 fg_ctl_mode_rule(const struct fg_ctl *c, __u32 id, __u32 file_mode)
{
	__u32 ovr = fg_ctl_mode_rule_ovr(c, id);

	if (fg_ctl_mode_global(c) == FG_MODE_SHADOW) /* global shadow wins over every rule */
		return FG_MODE_SHADOW;
	if (ovr)
		return ovr == FG_OVR_SHADOW ? FG_MODE_SHADOW : FG_MODE_ENFORCE;
	return file_mode == FG_MODE_SHADOW ? FG_MODE_SHADOW : FG_MODE_ENFORCE;
}

/* The fields the mode rule reads, each loaded atomically (the set bit before its shadow bit). */
static void mode_fields(const struct fg_ctl *live, __u32 id, struct fg_ctl *c)
{
	memset(c, 0, sizeof(*c));
	c->mode_ovr = LOAD(&live->mode_ovr);
	c->mode = LOAD(&live->mode);
	if (id < FG_MAX_IDS) {
		c->rule_ovr_set[id / 64] = LOAD(&live->rule_ovr_set[id / 64]);
		c->rule_ovr_shadow[id / 64] = LOAD(&live->rule_ovr_shadow[id / 64]);
	}
}

int fg_ctl_global_mode(const struct fg_ctl_map *cm, __u32 *mode)
{
	struct fg_ctl c;

	if (!cm->ctl)
		return -EBADF;
	mode_fields(cm->ctl, FG_MAX_IDS, &c);
	*mode = fg_ctl_mode_global(&c);
	return 0;
}

int fg_ctl_rule_ovr(const struct fg_ctl_map *cm, __u32 id, __u32 *ovr)
{
	struct fg_ctl c;

	if (!cm->ctl)
		return -EBADF;
	if (id >= FG_MAX_IDS)
		return -EINVAL;
	mode_fields(cm->ctl, id, &c);
	*ovr = fg_ctl_mode_rule_ovr(&c, id);
	return 0;
}

int fg_ctl_rule_mode(const struct fg_ctl_map *cm, __u32 id, __u32 file_mode, __u32 *mode)
{
	struct fg_ctl c;

	if (!cm->ctl)
		return -EBADF;
	if (id >= FG_MAX_IDS || file_mode > FG_MODE_SHADOW)
		return -EINVAL;
	mode_fields(cm->ctl, id, &c);
	*mode = fg_ctl_mode_rule(&c, id, file_mode);
	return 0;
}

int fg_ctl_snapshot(const struct fg_ctl_map *cm, struct fg_ctl *out)
{
	const struct fg_ctl *c = cm->ctl;

	if (!c)
		return -EBADF;
	memset(out, 0, sizeof(*out));
	out->magic = LOAD(&c->magic);
	out->abi = LOAD(&c->abi);
	out->slot = LOAD(&c->slot);
	out->mode = LOAD(&c->mode);
	out->bypass = LOAD(&c->bypass);
	out->bypass_until = LOAD(&c->bypass_until);
	out->mode_ovr = LOAD(&c->mode_ovr);
	out->seed4 = LOAD(&c->seed4);
	out->src4_bits = LOAD(&c->src4_bits);
	out->rt_active = LOAD(&c->rt_active);
	out->rt_scoped = LOAD(&c->rt_scoped);
	out->rule_ovr_n = LOAD(&c->rule_ovr_n);
	for (int w = 0; w < FG_OVR_WORDS; w++) {
		out->rule_ovr_set[w] = LOAD(&c->rule_ovr_set[w]);
		out->rule_ovr_shadow[w] = LOAD(&c->rule_ovr_shadow[w]);
	}
	out->ovr_since = LOAD(&c->ovr_since);
	out->seed6[0] = LOAD(&c->seed6[0]);
	out->seed6[1] = LOAD(&c->seed6[1]);
	out->src6_bits = LOAD(&c->src6_bits);
	return 0;
}
