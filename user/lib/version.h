/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What was built: floodgate's version (git describe at build time, from
 * $(OUTPUT)/fg_version.h) and the libbpf and libxdp it was built with, for
 * --version, `status --json` and the floodgate_build_info metric.
 */
#ifndef FG_VERSION_H
#define FG_VERSION_H

#include <stdio.h>

const char *fg_version(void);	     /* "69cf335", "v1.0-3-g69cf335-dirty", "unknown" */
const char *fg_libbpf_version(void); /* the libbpf it runs with: "1.1.2" */
const char *fg_libxdp_version(void); /* the libxdp it was built with: "1.3.1" */

/* "floodgate version 69cf335 (ABI 7), libbpf 1.1.2, libxdp 1.3.1\n" */
void fg_version_print(FILE *f, const char *prog);

#endif /* FG_VERSION_H */
