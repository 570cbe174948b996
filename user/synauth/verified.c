// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The verified tables (fg_ver4, fg_ver6: include/floodgate.h), written by
 * the program on proof only; read here through a mapping of each (they
 * are BPF_F_MMAPABLE arrays, so a pass over them costs no syscall per
 * entry), for the gauge, `floodgate verified list` and `... del`.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include "synauth/synauth.h"

static void *map_table(int fd, size_t vsz, bool write, __u32 *sets, size_t *len)
{
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);
	long pg = sysconf(_SC_PAGESIZE);
	void *p;

	if (bpf_obj_get_info_by_fd(fd, &info, &ilen))
		return NULL;
	if (info.value_size != vsz) {
		errno = EPROTO;
		return NULL;
	}
	*sets = info.max_entries;
	*len = ((size_t)info.max_entries * vsz + (size_t)pg - 1) / (size_t)pg * (size_t)pg;
	p = mmap(NULL, *len, write ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

int fg_ver_open(struct fg_ver *v, int fd4, int fd6, int keyfd, bool write)
{
	struct fg_sakey k;
	__u32 zero = 0;
	int err;

	memset(v, 0, sizeof(*v));
	if (bpf_map_lookup_elem(keyfd, &zero, &k))
		return -errno;
	memcpy(v->seed, k.seed, sizeof(v->seed));
	explicit_bzero(&k, sizeof(k));
	v->v4 = map_table(fd4, sizeof(struct fg_vset4), write, &v->sets4, &v->len4);
	if (!v->v4)
		goto fail;
	v->v6 = map_table(fd6, sizeof(struct fg_vset6), write, &v->sets6, &v->len6);
	if (!v->v6)
		goto fail;
	return 0;
fail:
	err = -errno;
	fg_ver_close(v);
	return err;
}

void fg_ver_close(struct fg_ver *v)
{
	if (v->v4)
		munmap(v->v4, v->len4);
	if (v->v6)
		munmap(v->v6, v->len6);
	memset(v, 0, sizeof(*v));
}

/* FG_VMS units (2^20 ns) before now, 0 when t is 0 (never); the clock is
 * 32 bits of those units (73 min), so the difference wraps as theirs does */
static __u64 vms_ago(__u32 t, __u64 now_ns)
{
	return t ? (__u64)(__u32)(FG_VMS(now_ns) - t) << 20 : 0;
}

static __u64 vt_left(__u32 until, __u64 now_ns)
{
	__u32 now = FG_VT(now_ns);

	return until > now ? (__u64)(until - now) << 30 : 0;
}

int fg_ver_each(const struct fg_ver *v, __u64 now_ns, fg_ver_fn *fn, void *arg)
{
	__u32 now = FG_VT(now_ns);
	int ret;

	for (__u32 s = 0; s < v->sets4; s++) {
		const struct fg_vset4 *set = &v->v4[s];

		for (int w = 0; w < FG_VWAYS; w++) {
			__u64 key = __atomic_load_n(&set->key[w], __ATOMIC_RELAXED);
			struct fg_ver_entry e = { .family = 4 };
			__u32 a = (__u32)key;

			if (!key || (__u32)(key >> 32) <= now)
				continue;
			memcpy(&e.addr[0], &a, 4);
			e.left_ns = vt_left((__u32)(key >> 32), now_ns);
			e.since_ago_ns = vms_ago(set->since[w] & ~1u, now_ns);
			e.synack_ago_ns = vms_ago(set->synack[w], now_ns);
			if ((ret = fn(&e, arg)))
				return ret;
		}
	}
	for (__u32 s = 0; s < v->sets6; s++) {
		const struct fg_vset6 *set = &v->v6[s];

		for (int w = 0; w < FG_VWAYS; w++) {
			__u64 key = __atomic_load_n(&set->key[w], __ATOMIC_RELAXED);
			struct fg_ver_entry e = { .family = 6 };

			if (!key || set->until[w] <= now)
				continue;
			memcpy(e.addr, set->who[w], sizeof(e.addr));
			/* who is written after the claim: skip a way caught in between */
			if (fg_digest6(e.addr, 0, 0, v->seed[0], v->seed[1]) != key)
				continue;
			e.left_ns = vt_left(set->until[w], now_ns);
			e.since_ago_ns = vms_ago(set->since[w] & ~1u, now_ns);
			e.synack_ago_ns = vms_ago(set->synack[w], now_ns);
			if ((ret = fn(&e, arg)))
				return ret;
		}
	}
	return 0;
}

void fg_ver_count(const struct fg_ver *v, __u64 now_ns, __u64 *n4, __u64 *n6)
{
	__u32 now = FG_VT(now_ns);

	*n4 = *n6 = 0;
	for (__u32 s = 0; s < v->sets4; s++)
		for (int w = 0; w < FG_VWAYS; w++) {
			__u64 key = __atomic_load_n(&v->v4[s].key[w], __ATOMIC_RELAXED);

			*n4 += key && (__u32)(key >> 32) > now;
		}
	for (__u32 s = 0; s < v->sets6; s++)
		for (int w = 0; w < FG_VWAYS; w++)
			*n6 += v->v6[s].key[w] && v->v6[s].until[w] > now;
}

int fg_ver_del(struct fg_ver *v, int family, const __be32 addr[4])
{
	int n = 0;

	if (family == 4) {
		/* every set: the set index needs the program's hash; a pass is cheap */
		for (__u32 s = 0; s < v->sets4; s++)
			for (int w = 0; w < FG_VWAYS; w++) {
				__u64 key = __atomic_load_n(&v->v4[s].key[w], __ATOMIC_RELAXED);
				__u32 a = (__u32)key;

				if (key && !memcmp(&a, &addr[0], 4) &&
				    __atomic_compare_exchange_n(&v->v4[s].key[w], &key, 0, false,
								__ATOMIC_RELAXED, __ATOMIC_RELAXED))
					n++;
			}
		return n;
	}
	__u64 d = fg_digest6(addr, 0, 0, v->seed[0], v->seed[1]);

	for (__u32 s = 0; s < v->sets6; s++)
		for (int w = 0; w < FG_VWAYS; w++) {
			__u64 key = d;

			if (__atomic_compare_exchange_n(&v->v6[s].key[w], &key, 0, false,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED))
				n++;
		}
	return n;
}
