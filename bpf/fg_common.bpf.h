/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * BPF-only pieces that bpf/floodgate.bpf.c and bpf/fg_conn.bpf.h (hence
 * bpf/fgconn.bpf.c) share: the BTF map definition every plain map repeats,
 * a load that is done once, and a source address masked as a rule groups
 * sources. Include after vmlinux.h and bpf_helpers.h.
 */
#ifndef FG_COMMON_BPF_H
#define FG_COMMON_BPF_H

/* A BTF-style map (type, size, flags, key and value types); maps with
 * inner maps, sizes instead of types or no key are written out. */
#define FG_MAP(_name, _type, _entries, _flags, _key, _value) \
	struct {                                             \
		__uint(type, _type);                         \
		__uint(max_entries, _entries);               \
		__uint(map_flags, _flags);                   \
		__type(key, _key);                           \
		__type(value, _value);                       \
	} _name SEC(".maps")

/* One load, not merged with or moved across another FG_READ_ONCE: fields
 * of fg_ctl change under the program (user/maps/ctl.h). */
#define FG_READ_ONCE(x) (*(const volatile __typeof__(x) *)&(x))

/* x's value hidden from clang, so that a check or mask of it that clang
 * could prove redundant stays in the code for the verifier (the
 * selftests' barrier_var). */
#define FG_OPAQUE(x) asm volatile("" : "+r"(x))

/* saddr masked by mask4 (family 4: out[0] only, out[1..3] untouched) or
 * by mask6. */
static __always_inline void fg_mask_src(__be32 *out, int family, const __be32 *saddr, __be32 mask4,
					const __be32 *mask6)
{
	int i;

	if (family == 4) {
		out[0] = saddr[0] & mask4;
		return;
	}
	for (i = 0; i < 4; i++)
		out[i] = saddr[i] & mask6[i];
}

/* An XDP frame's length, fragments included, without a helper call where
 * the kernel lets the program see its own xdp_buff (bpf_cast_to_kern_ctx,
 * 6.2; a weak kfunc: where it is missing, libbpf leaves the test false and
 * the verifier drops the branch, so 6.1 loads it): a frame without
 * fragments is its linear part. Elsewhere, and for a frame with fragments,
 * bpf_xdp_get_buff_len, a call whose return costs ~10 ns a packet here
 * (SRSO's safe return; bench micro, fg_throttled). floodgate and the
 * bench's floor both read it so. */
extern void *bpf_cast_to_kern_ctx(void *obj) __ksym __weak;

static __always_inline __u64 fg_frame_len(struct xdp_md *ctx)
{
	if (bpf_cast_to_kern_ctx) {
		struct xdp_buff *xb = bpf_cast_to_kern_ctx(ctx);

		if (!(xb->flags & XDP_FLAGS_HAS_FRAGS))
			return (__u64)(ctx->data_end - ctx->data);
	}
	return bpf_xdp_get_buff_len(ctx);
}

#endif /* FG_COMMON_BPF_H */
