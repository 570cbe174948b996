/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Policy files: YAML (libyaml) -> struct fg_config, a validated, compiled
 * policy that userspace can write into the maps (apply.h). Nothing here
 * touches BPF. The compiler is policy.c (the document, limits, rules),
 * policy_match.c (a rule's match:), policy_fleet.c (fleet-wide limits) and
 * policy_shed.c (pools, tiers and the shedding: section),
 * policy_escalate.c (a rule's escalate: and the escalation: section),
 * policy_synauth.c (a rule's syn_auth: and the syn_auth: section) and
 * policy_yaml.c (libyaml, placed errors); the printer is policy_print.c.
 */
#ifndef FG_POLICY_H
#define FG_POLICY_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "floodgate.h"
#include "shed/fgsignal.h"
#include "fleet/fleet_conf.h"
#include "lib/prefix.h"
#include "shed/shed.h"

enum fg_xdp_mode {
	FG_XDP_AUTO = 0, /* native, else generic */
	FG_XDP_NATIVE = 1,
	FG_XDP_SKB = 2,
};

/* How floodgated attaches (xdp_attach:; attach.h, docs/libxdp.md). */
enum fg_xdp_attach {
	FG_ATTACH_AUTO = 0,	 /* libxdp when the kernel can build a dispatcher, else exclusive */
	FG_ATTACH_LIBXDP = 1,	 /* a component of libxdp's dispatcher (alone where it cannot) */
	FG_ATTACH_EXCLUSIVE = 2, /* floodgate's own pinned bpf_link */
};

#define FG_XDP_PRIO_DEFAULT 1	 /* xdp_priority: first, drops before anything expensive */
#define FG_XDP_PRIO_MAX	    1000 /* libxdp's default is 50; xdp-filter's 10 */

/* An error with its place in the file; line and col are 1-based, 0 when
 * the error is not tied to a place (file unreadable, too large). */
struct fg_err {
	char file[256];
	int line;
	int col;
	char msg[512];
};

/* What the operator wrote for a limit, for `check` and logs. */
struct fg_limit_src {
	int set;      /* 0: no such limit */
	double rate;  /* per second, in cost units */
	double burst; /* cost units */
};

struct fg_rule_src {
	char name[FG_NAME_LEN];
	int line; /* where the rule starts */
	struct fg_limit_src per_source, aggregate, overflow;
	int plen4, plen6;
	int implicit; /* 1 for the built-in "fragments" rule */
};

/* A capacity pool as written (docs/shedding.md section 4); compiled into
 * cfg->pol.pools[i] at the same index. */
struct fg_pool_src {
	char name[FG_NAME_LEN];
	int line;		 /* where the pool starts */
	struct fg_limit_src lim; /* rate and burst, in the pool's unit */
	int bytes;		 /* 1: the unit is bytes (pol.pools[i].cost) */
	double reserve;		 /* percent kept for the critical tier, [0, 100) */
	int noshed;		 /* shedding: off (FG_POOL_NOSHED) */
};

/* Escalation (docs/floodgate.yaml.5, ESCALATION): a source throttled by a
 * rule for after goes onto the runtime deny list for dur (user/lists/escalate.h). */
#define FG_ESC_AFTER_DEFAULT_NS (30ull * 1000000000ull)	   /* escalate: after: 30s */
#define FG_ESC_FOR_DEFAULT_NS	(600ull * 1000000000ull)   /* escalate: for: 10m */
#define FG_ESC_AFTER_MIN_NS	(1ull * 1000000000ull)	   /* the daemon looks once a second */
#define FG_ESC_AFTER_MAX_NS	(86400ull * 1000000000ull) /* 1d */
#define FG_ESC_FOR_MIN_NS	(1ull * 1000000000ull)
#define FG_ESC_FOR_MAX_NS	(7ull * 86400ull * 1000000000ull) /* 7d */
#define FG_ESC_MAX_DEFAULT	256 /* escalation: max_entries, both families together */
#define FG_ESC_MAX_MAX		(FG_RT_MAX / 2) /* half a family's runtime list stays the operator's */

/* What an escalated entry denies (escalate: {scope}). */
enum fg_esc_scope {
	FG_ESC_SCOPE_RULE = 0,	  /* the rule's traffic only (a scoped runtime entry) */
	FG_ESC_SCOPE_ADDRESS = 1, /* every protocol of the address (a whole-address entry) */
};

struct fg_esc_rule_conf {
	int set;	/* the rule has escalate: */
	__u64 after_ns; /* throttled this long without a break ... */
	__u64 for_ns;	/* ... denied this long */
	int scope;	/* enum fg_esc_scope: the file's, or fg_esc_default_scope's */
	int scope_set;	/* the file said it */
};

struct fg_config;
/*
 * The scope of a rule's escalation when the file does not say: the rule's
 * traffic (FG_ESC_SCOPE_RULE), as long as the evidence it escalates on can
 * be forged (a source address that nothing proved: UDP, ICMP, a TCP rule
 * without SYN authentication). The hook for rules whose sources prove
 * their address (syn_auth: cookie): those will default to the whole
 * address. Called once the rule's other keys are compiled.
 */
int fg_esc_default_scope(const struct fg_config *cfg, int idx);

/* SYN authentication (docs/syn-auth.md): a rule's syn_auth: cookie and the
 * top-level syn_auth: section, whose defaults apply when it is absent. */
enum fg_syn_way {
	FG_SYN_WAY_AUTO = 0,	   /* as asked: the best this kernel gives; as taken: none */
	FG_SYN_WAY_HANDOFF = 1,	   /* XDP answers every SYN, tc hands the proof to the listener */
	FG_SYN_WAY_RETRANSMIT = 2, /* XDP verifies the address, the client's next SYN passes */
};
#define FG_SYN_VERIFIED_FOR_DEFAULT_NS (600ull * 1000000000ull) /* verified_for: 10m */
#define FG_SYN_VERIFIED_FOR_MIN_NS     (1ull * 1000000000ull)
#define FG_SYN_VERIFIED_FOR_MAX_NS     (7ull * 86400ull * 1000000000ull) /* 7d */
#define FG_SYN_MAX_VERIFIED_DEFAULT    65536u
#define FG_SYN_MAX_VERIFIED_MIN	       1024u
#define FG_SYN_MAX_VERIFIED_MAX	       (FG_VWAYS << FG_VER_MAX_BITS)
#define FG_SYN_REPLY_RATE_DEFAULT      100000 /* SYN-ACKs a second, all destinations */
#define FG_SYN_PER_PREFIX_DEFAULT      1000   /* SYN-ACKs a second to one destination prefix */
#define FG_SYN_PREFIX_V4_DEFAULT       24
#define FG_SYN_PREFIX_V6_DEFAULT       48

struct fg_synauth_conf {
	int set;		  /* the section is written */
	int nrules;		  /* rules with syn_auth: cookie */
	int way;		  /* enum fg_syn_way, as asked */
	__u64 verified_for_ns;	  /* a proven address stays verified this long */
	__u32 max_verified;	  /* the verified table's size, per family */
	int prefix_v4, prefix_v6; /* reply_per_prefix's destination prefix */
	/* the reflector caps (a burst of a tenth of a second when only a rate
	 * is written), as written and compiled */
	struct fg_limit_src reply_src, per_prefix_src;
	struct fg_limit reply, per_prefix;
};

/* metrics: {max_connections, per_client, timeout} (daemon/metrics.h) */
#define FG_METRICS_MAX_CONN	1024 /* default max_connections */
#define FG_METRICS_MAX_CONN_MAX 65536
#define FG_METRICS_PER_CLIENT	8 /* default per_client */
#define FG_METRICS_TIMEOUT_S	3 /* default timeout */
#define FG_METRICS_TIMEOUT_MAX	300

#define FG_MAX_FILE_SIZE   (16u << 20) /* policy files larger are refused */
#define FG_READ_TIMEOUT_MS 3000	       /* opening and reading a policy file, at most */
/* FG_MAX_PREFIXES (allow + deny + set prefixes) is in floodgate.h */

#define FG_MAX_WARN 16

struct fg_config {
	char path[256];
	char ifaces[FG_MAX_IFS][16];
	int n_ifs;
	int xdp_mode;		   /* enum fg_xdp_mode */
	int xdp_attach;		   /* enum fg_xdp_attach */
	unsigned int xdp_priority; /* libxdp run priority, 0..FG_XDP_PRIO_MAX, lower first */
	__u32 xdp_chain;   /* bit 1 << XDP_x per chain-call action; 1 << XDP_PASS by default */
	int mode;	   /* enum fg_mode, global */
	__u64 max_sources; /* size of fg_src4 and of fg_src6 */
	char metrics[128]; /* "host:port" for Prometheus, "" = off */
	/* metrics: {max_connections, per_client, timeout}; 0: metrics.h's default */
	unsigned int metrics_max_conn, metrics_per_client, metrics_timeout_s;
	int detach_on_exit; /* SIGTERM detaches and unpins (default 1) */
	/* compiled policy: rules[i].id and .gen are left 0, the daemon
	 * assigns them by name; ins is left 0, see fg_policy_set_admission */
	struct fg_policy pol;
	struct fg_rule_src rules[FG_MAX_RULES]; /* parallel to pol.rules */
	struct fg_pfx_entry *pfx;		/* flattened, malloc'd */
	size_t n_pfx;
	size_t n_allow, n_deny;	       /* as written, before flattening */
	struct fg_limit_src admission; /* explicit new-key limit, if set */
	/* fleet-wide limits (docs/fleet.md): the top-level fleet: section;
	 * has_fleet 0 (the section absent) leaves fleet all zero */
	int has_fleet;
	struct fg_fleet_conf fleet;
	/* parallel to pol.rules: a rule's fleet limit where pol.rules[i].fleet
	 * is 1 (name, rate, burst, cost, on_loss, local_rate/burst as written:
	 * 0 = rate / nodes), else all zero. fleet_local[i] is that local share
	 * compiled like the rule's other limits; inc 0 when it follows the
	 * node count (the daemon compiles rate / nodes with fg_limit_share) */
	struct fg_fleet_rule_conf fleet_rules[FG_MAX_RULES];
	struct fg_limit fleet_local[FG_MAX_RULES];
	/* concurrency: the counting side of the caps (docs/concurrency.md) */
	__u64 conn_reconcile_ms; /* reconcile period */
	__u32 conn_max_keys;	 /* fgc_count and fgc_pend entries each */
	/* load shedding (docs/shedding.md): the pools (pol.pools, pol.npools
	 * compiled; rules' tier and pool in pol.rules) and the top-level
	 * shedding: section. has_shedding 0 (absent): shed and shed_signal
	 * are all zero and the daemon runs no controller; tiers then do
	 * nothing, pools still apply */
	struct fg_pool_src pools[FG_MAX_POOLS]; /* parallel to pol.pools */
	int has_shedding;
	struct fg_shed_cfg shed;      /* validated with fg_shed_cfg_check; tiers = those in use */
	struct fg_signal shed_signal; /* parsed, not opened (fg_signal_open it) */
	int shed_mode; /* enum fg_mode: shadow counts what would be shed (fg_shed_ctl.shadow) */
	/* escalation (user/lists/escalate.h): parallel to pol.rules, and the cap of
	 * the escalation: section (FG_ESC_MAX_DEFAULT when absent) */
	struct fg_esc_rule_conf esc[FG_MAX_RULES];
	__u32 esc_max;
	/* SYN authentication: the section (defaults filled in) and, parallel to
	 * pol.rules, 1 for a rule with syn_auth: cookie */
	struct fg_synauth_conf syn;
	__u8 syn_auth[FG_MAX_RULES];
	/* what the file says that works but is likely not what was meant
	 * ("allow: 10.1.2.3/8 has host bits set: it means 10.0.0.0/8" at line,
	 * col), for `floodgate check`; the first FG_MAX_WARN, n_warn counts
	 * them all */
	int n_warn;
	struct fg_warn {
		int line, col; /* 1-based */
		char msg[160];
	} warn[FG_MAX_WARN];
};

/* Parse and validate; 0 or -EINVAL/-ENOMEM/-EFBIG/-errno with *err set. On
 * error *cfg is zeroed: nothing in it needs freeing. fg_config_load never
 * blocks for long: only a regular file is read (a FIFO, a device, a socket
 * is refused with -EINVAL, a directory with -EISDIR), opened without
 * blocking, and opening plus reading take at most FG_READ_TIMEOUT_MS
 * (-ETIMEDOUT: a hung file system); -EINTR when a signal interrupts the
 * wait, so a daemon can act on it. */
int fg_config_load(const char *path, struct fg_config *cfg, struct fg_err *err);
/* The same, and a signal that leaves *stop non-zero ends the wait (-EINTR). */
int fg_config_load_until(const char *path, struct fg_config *cfg, struct fg_err *err,
			 const volatile sig_atomic_t *stop);
int fg_config_parse(const char *buf, size_t len, const char *name, struct fg_config *cfg,
		    struct fg_err *err);
void fg_config_free(struct fg_config *cfg);
/* Free a malloc'd list of prefix entries and leave it empty (NULL, 0). */
void fg_pfx_list_free(struct fg_pfx_entry **pfx, size_t *n);

/* "file:line:col: msg" (or "file: msg") into buf. */
void fg_err_format(const struct fg_err *err, char *buf, size_t len);

/*
 * A GCRA limit from rate (cost units per second) and burst (cost units,
 * whole), the arithmetic of every limit in a policy: 0, or -EINVAL with
 * the reason in why and, in *burst_fault (may be NULL), 1 when the burst is
 * at fault, 0 when the rate is.
 */
int fg_limit_compile(long double rate, long double burst, int bytes, struct fg_limit *out,
		     char *why, int *burst_fault);
/* The same for a derived share (rate / nodes): the burst is rounded down
 * and raised to the least its unit allows (1 packet, one full frame). */
int fg_limit_share(double rate, double burst, int bytes, struct fg_limit *out, char *why);

/* Print what would be loaded, human readable (policy_print.c). */
void fg_config_print(FILE *f, const struct fg_config *cfg, bool internals);

/* fg_policy.hint4 from the policy's match entries and rules
 * (policy_match.c): fg_config_parse writes it; a policy built by hand (the
 * datapath tests') calls it as the compiler would. */
void fg_policy_hints(struct fg_policy *pol);

/* The policy's words, shared by the parser and the printer; indexed by
 * enum fg_mode, fg_action, fg_on_full, fg_on_loss, fg_xdp_mode and fg_class. */
extern const char *const fg_mode_names[2];
extern const char *const fg_action_names[3];
extern const char *const fg_on_full_names[3];
extern const char *const fg_on_loss_names[3]; /* enum fg_on_loss */
extern const char *const fg_xdp_mode_names[3];
extern const char *const fg_xdp_attach_names[3]; /* enum fg_xdp_attach */
extern const char *const fg_xdp_action_names[5]; /* XDP_ABORTED..XDP_REDIRECT */
extern const char *const fg_class_names[FG_NCLASS];
extern const char *const fg_syn_way_names[3]; /* enum fg_syn_way */

/* TCP flags by name ("syn") and by letter ("S", as in "S/SA"). */
struct fg_tcp_flag {
	const char *name;
	char letter;
	__u8 bit; /* FG_TCP_* */
};
#define FG_NTCP_FLAGS 8
extern const struct fg_tcp_flag fg_tcp_flags[FG_NTCP_FLAGS];

#endif /* FG_POLICY_H */
