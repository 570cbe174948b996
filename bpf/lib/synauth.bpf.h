/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * SYN authentication (include/floodgate.h, "SYN authentication";
 * docs/syn-auth.md): the cookie, the verified tables, the reflector cap,
 * the SYN-ACK, and the ACK pre-search.
 */
#ifndef FG_LIB_SYNAUTH_BPF_H
#define FG_LIB_SYNAUTH_BPF_H

/* The secret and the verified tables' sizes (struct fg_sakey): daemon only. */
FG_MAP(fg_sakey, BPF_MAP_TYPE_ARRAY, 1, 0, __u32, struct fg_sakey);

/* Verified sources, IPv4 (struct fg_vset4): written here on proof only;
 * 1 << fg_sakey.ver4_bits sets, sized by userspace from max_verified. */
FG_MAP(fg_ver4, BPF_MAP_TYPE_ARRAY, 1 << 10, BPF_F_MMAPABLE, __u32, struct fg_vset4);

/* Verified sources, IPv6 (struct fg_vset6): as fg_ver4. */
FG_MAP(fg_ver6, BPF_MAP_TYPE_ARRAY, 1 << 10, BPF_F_MMAPABLE, __u32, struct fg_vset6);

/* The reflector cap's buckets ([0] global, [1 + h] per destination prefix). */
FG_MAP(fg_sacap, BPF_MAP_TYPE_ARRAY, FG_SA_CAP_N, 0, __u32, struct fg_agg);

/* Handshakes charged, by 4-tuple (struct fg_sadup_key -> ns): filled here on a charge only. */
FG_MAP(fg_sadup, BPF_MAP_TYPE_LRU_HASH, FG_SA_DUP_N, 0, struct fg_sadup_key, __u64);

/* First-connect delay histograms, per CPU (struct fg_sadly); read by the daemon. */
FG_MAP(fg_sadly, BPF_MAP_TYPE_PERCPU_ARRAY, 1, 0, __u32, struct fg_sadly);

#endif /* FG_LIB_SYNAUTH_BPF_H */
