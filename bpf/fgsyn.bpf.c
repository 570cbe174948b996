// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fgsyn: the tc ingress half of SYN authentication's handoff way
 * (docs/syn-auth.md). An ACK that the XDP program admitted with a valid
 * cookie carries its approval in XDP metadata (struct fg_sameta); this
 * program finds the listener and hands it the connection with
 * bpf_sk_assign_tcp_reqsk (6.9+). Everything else passes untouched.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "floodgate.h"
#include "fg_common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Counters per CPU (enum fg_syn_stat); read by the daemon. */
FG_MAP(fg_systat, BPF_MAP_TYPE_PERCPU_ARRAY, 1, 0, __u32, struct fg_systat);

SEC("tc")
int fg_syn(struct __sk_buff *skb)
{
	return 0; /* TC_ACT_OK: the handoff is not written yet */
}
