/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The runtime switches in fg_ctl, lock-free.
 *
 * fg_ctl is BPF_F_MMAPABLE (include/floodgate.h, struct fg_ctl). Once
 * fg_ctl_init has written the whole value of a fresh pin dir, before any
 * program is attached, the fg_switch_* functions below are the only writers
 * of fg_ctl. Each stores only its own fields, with atomic stores into the
 * mapping: two writers never lose each other's fields, and nothing here
 * takes the pin dir's lock or waits, so the kill switch takes effect while
 * a policy write holds the lock or a daemon is wedged.
 *
 *   policy apply (daemon): fg_switch_slot, fg_switch_file_mode,
 *                          fg_switch_clear_rule_ovr_ids
 *   operator (CLI):        fg_switch_bypass, fg_switch_mode_ovr,
 *                          fg_switch_rule_ovr
 *   runtime lists (CLI, daemon; user/lists/rtlist.h): fg_switch_rt_active
 *
 * Order. Where the program reads two fields, the writer stores the second
 * one first and the first one with release: bypass_until then bypass, and
 * rule_ovr_shadow then rule_ovr_set. The program reads them in the other
 * order, so a packet sees the pair of one switch, or of the one being made.
 * Switching off clears only the first field (bypass, the set bit), so a
 * stale second field is never read as new. rule_ovr_n, which the program
 * reads before either bitmap, goes up before a bit is set and down only
 * after one was cleared (include/floodgate.h, struct fg_ctl). (x86 keeps loads in order; BPF
 * C under clang 14 has no acquire load, so on a weakly ordered CPU a packet
 * racing a switch may still see the previous bypass_until or shadow bit.)
 *
 * Every function returns 0 or a negative errno and logs nothing; bad input
 * is -EINVAL and changes nothing.
 */
#ifndef FG_CTL_H
#define FG_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include "floodgate.h"

/* A mapping of the fg_ctl map. */
struct fg_ctl_map {
	struct fg_ctl *ctl; /* NULL when closed */
	size_t len;
};

/*
 * Map fd (the fg_ctl map: type, sizes and BPF_F_MMAPABLE are checked;
 * -EPROTO for another layout or an ABI stamp of another version). The fd
 * may be closed afterwards; the mapping holds the map.
 */
int fg_ctl_map_open(struct fg_ctl_map *cm, int fd);
void fg_ctl_map_close(struct fg_ctl_map *cm);

/* Kill switch. on: until_ns is CLOCK_MONOTONIC ns (the program's clock),
 * 0 = until switched off. off: bypass only; bypass_until keeps its value
 * and is not read while bypass is 0. */
int fg_switch_bypass(struct fg_ctl_map *cm, bool on, __u64 until_ns);
/* Operator's global mode: FG_OVR_NONE (the file decides), _ENFORCE, _SHADOW. */
int fg_switch_mode_ovr(struct fg_ctl_map *cm, __u32 ovr);
/* Operator's mode for rule id (0..FG_MAX_IDS-1). */
int fg_switch_rule_ovr(struct fg_ctl_map *cm, __u32 id, __u32 ovr);
/* Apply: forget the overrides of the ids in mask (bit per id), when they
 * are freed or handed to a new rule: only ids that no packet can be judged
 * by (not in the active policy, or after the grace period). */
int fg_switch_clear_rule_ovr_ids(struct fg_ctl_map *cm, const __u64 mask[FG_OVR_WORDS]);
/* Apply: the active policy slot (0 or 1); the caller waits for the grace
 * period before it writes the old slot again. */
int fg_switch_slot(struct fg_ctl_map *cm, __u32 slot);
/* Apply: the policy file's global mode (enum fg_mode). */
int fg_switch_file_mode(struct fg_ctl_map *cm, __u32 mode);

/* Stamp a fresh fg_ctl (magic 0): the daemon's fields, magic last. The
 * operator's fields (bypass, overrides, runtime-list count), which the CLI
 * may have set before the stamp, are left as they are: a kill switch
 * thrown while a fresh daemon starts stays thrown. */
int fg_ctl_stamp(struct fg_ctl_map *cm, __u32 mode, __u32 src4_bits, __u64 seed4);
/* Before fg_ctl_stamp, on a fresh fg_ctl too: fg_src6's size and seed. */
int fg_ctl_stamp6(struct fg_ctl_map *cm, __u32 src6_bits, const __u64 seed6[2]);

/* Runtime lists: add delta (+1 before an insert, -1 after a delete) to
 * rt_active, atomically; the count of other writers is never lost. */
int fg_switch_rt_active(struct fg_ctl_map *cm, int delta);
/* The same for rt_scoped (the scoped entries of fg_rts4, fg_rts6). */
int fg_switch_rt_scoped(struct fg_ctl_map *cm, int delta);

/* Readers: what is in force, by the rule in include/floodgate.h. */

/* Readers: what is in force, by the rule in include/floodgate.h; the
 * fg_ctl_mode_* ones on a copy (fg_ctl_snapshot, fg_ctl_read), the others
 * on the mapping. */
/* The global mode in force in c (enum fg_mode). */
__u32 fg_ctl_mode_global(const struct fg_ctl *c);
/* Rule id's override in c (enum fg_ovr; FG_OVR_NONE for an id out of range). */
__u32 fg_ctl_mode_rule_ovr(const struct fg_ctl *c, __u32 id);
/* The mode in force in c for rule id whose file mode is file_mode. */
__u32 fg_ctl_mode_rule(const struct fg_ctl *c, __u32 id, __u32 file_mode);

/* The global mode in force (enum fg_mode). */
int fg_ctl_global_mode(const struct fg_ctl_map *cm, __u32 *mode);
/* Rule id's override (enum fg_ovr). */
int fg_ctl_rule_ovr(const struct fg_ctl_map *cm, __u32 id, __u32 *ovr);
/* The mode in force for rule id whose file mode is file_mode. */
int fg_ctl_rule_mode(const struct fg_ctl_map *cm, __u32 id, __u32 file_mode, __u32 *mode);
/* Every field, each read atomically (bypass before bypass_until). */
int fg_ctl_snapshot(const struct fg_ctl_map *cm, struct fg_ctl *out);

#endif /* FG_CTL_H */
