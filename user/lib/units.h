/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Numbers as an operator writes them, in a policy file or on the command
 * line: plain decimals, durations, rates and bursts in packets or bytes.
 * Strict: the whole string, no sign, no overflow. Nothing here knows about
 * YAML or maps.
 */
#ifndef FG_UNITS_H
#define FG_UNITS_H

#include <stddef.h>
#include <linux/types.h>

/* A decimal without sign or spaces; -ERANGE past 64 bits, -EINVAL otherwise. */
int fg_parse_u64(const char *s, __u64 *out);

/* "90s", "5m", "1h", "250ms", "2d"; a bare number is seconds. */
int fg_parse_duration(const char *s, __u64 *ns);

/*
 * "100/s", "60/min", "2/h", "10MB/s", "1.5 KiB/s", nft's "10/second",
 * "60/minute", "2/hour", "1/day": *rate in cost units per
 * second, *bytes whether a byte unit was given (else packets). -ERANGE when
 * the integer part does not fit 64 bits.
 */
int fg_parse_rate(const char *s, long double *rate, int *bytes);

/* "200" packets or "20MB", "1514B" bytes; as fg_parse_rate otherwise. */
int fg_parse_burst(const char *s, long double *burst, int *bytes);

/* The inverse, for printing: "200" packets, or bytes with the largest unit
 * of GB, MB, KB that needs at most two decimals ("20MB", "1.5KB", "1514B"). */
void fg_format_amount(char *buf, size_t len, double v, int bytes);

#endif /* FG_UNITS_H */
