// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The cookie secret (struct fg_sakey, include/floodgate.h): the daemon is
 * its only writer. Keys come from getrandom and nowhere else; the pinned
 * map keeps them across restarts, so cookies in flight stay valid.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <bpf/bpf.h>
#include "synauth/synauth.h"

__u32 fg_ver_bits(__u32 max_verified)
{
	__u32 sets = (max_verified + FG_VWAYS - 1) / FG_VWAYS, bits = 0;

	while (bits < FG_VER_MAX_BITS && (1u << bits) < sets)
		bits++;
	return bits < FG_VER_MIN_BITS ? FG_VER_MIN_BITS : bits;
}

/* n random bytes into p, all or nothing (getrandom blocks only before the
 * pool is first initialised, at boot). */
static int random_fill(void *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = getrandom((char *)p + got, n - got, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		got += (size_t)r;
	}
	return 0;
}

static int put(int fd, const struct fg_sakey *k)
{
	__u32 zero = 0;

	return bpf_map_update_elem(fd, &zero, k, BPF_ANY) ? -errno : 0;
}

/* Entry E (epoch E) with a fresh key: k[] written first with the entry
 * empty, then its epoch, so no reader takes a half-written key. */
static int fill(int fd, struct fg_sakey *k, __u64 e)
{
	struct fg_sakey_ent *ent = &k->key[e & 1];
	__u64 fresh[2];
	int err = random_fill(fresh, sizeof(fresh));

	if (err)
		return err;
	ent->epoch = 0;
	memcpy(ent->k, fresh, sizeof(fresh));
	explicit_bzero(fresh, sizeof(fresh));
	err = put(fd, k);
	if (!err) {
		ent->epoch = e + 1;
		err = put(fd, k);
	}
	return err;
}

int fg_sakey_tend(int fd, __u64 now_ns, __u32 ver4_bits, __u32 ver6_bits, struct fg_sakey_rec *rec)
{
	__u64 slot = FG_SA_SLOT(now_ns), e = FG_SA_EPOCH(slot);
	__u32 zero = 0;
	struct fg_sakey k;
	int err = 0;

	memset(rec, 0, sizeof(*rec));
	rec->epoch = e;
	if (bpf_map_lookup_elem(fd, &zero, &k))
		return -errno;
	if (!k.seed[0] && !k.seed[1]) {
		/* the seeds key the verified tables: set once, while they are empty */
		err = random_fill(k.seed, sizeof(k.seed));
		if (!err && !(err = put(fd, &k)))
			rec->seeded = true;
	}
	if (!err && (k.ver4_bits != ver4_bits || k.ver6_bits != ver6_bits)) {
		k.ver4_bits = ver4_bits;
		k.ver6_bits = ver6_bits;
		if (!(err = put(fd, &k)))
			rec->bits_set = true;
	}
	for (__u64 E = e; !err && E <= e + 1; E++) {
		/* the entry of e - 1 becomes e + 1's only once its cookies are dead
		 * (valid in the slot they were made in and the next one) */
		if (k.key[E & 1].epoch == E + 1 || (E > e && slot < (e << FG_SA_EPOCH_SLOTS) + 2))
			continue;
		if (!(err = fill(fd, &k, E)))
			rec->filled++;
	}
	rec->have_cur = k.key[e & 1].epoch == e + 1;
	explicit_bzero(&k, sizeof(k));
	return err;
}
