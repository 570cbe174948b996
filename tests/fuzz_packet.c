// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * libFuzzer over the packet parser, compiled for userspace from the same
 * header the XDP program uses. The input is the frame; ASan catches any
 * read outside it. Properties checked on every input:
 *   - the verdict is one of FG_P_IP / FG_P_NONIP / FG_P_MALFORMED;
 *   - an IP result has family 4 or 6 and its source address bytes appear
 *     at the right offset of the input (never charged to a wrong source);
 *   - a non-first fragment has no ports.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fg_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fg_pkt p;
	uint8_t *buf;
	int rc;

	if (size > 65536)
		return 0;
	buf = malloc(size ? size : 1); /* exact size: overreads trap */
	memcpy(buf, data, size);
	memset(&p, 0, sizeof(p));
	rc = fg_parse(buf, buf + size, (__u32)size, &p);
	if (rc != FG_P_IP && rc != FG_P_NONIP && rc != FG_P_MALFORMED)
		abort();
	if (rc == FG_P_IP) {
		size_t l3 = 14;

		if (p.family != 4 && p.family != 6)
			abort();
		while (l3 + 4 <= size && l3 < 14 + 4 * FG_MAX_VLAN &&
		       ((buf[l3 - 2] == 0x81 && buf[l3 - 1] == 0x00) ||
			(buf[l3 - 2] == 0x88 && buf[l3 - 1] == 0xa8)))
			l3 += 4;
		if (p.family == 4 && memcmp(p.saddr, buf + l3 + 12, 4))
			abort();
		if (p.family == 6 && memcmp(p.saddr, buf + l3 + 8, 16))
			abort();
		if (p.frag && (p.sport || p.dport || p.tcp_flags))
			abort();
	}
	free(buf);
	return 0;
}
