#!/bin/sh
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Regenerate vmlinux.h from the running kernel's BTF. The kernel it came from
# is written on the first line, so a reader knows which types it describes.
set -eu
out=${1:-vmlinux.h}
btf=${BTF:-/sys/kernel/btf/vmlinux}
bpftool=${BPFTOOL:-bpftool}
[ -r "$btf" ] || { echo "gen-vmlinux: $btf not readable (kernel without CONFIG_DEBUG_INFO_BTF?)" >&2; exit 1; }
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
	echo "/* vmlinux.h: dumped from Linux $(uname -r) ($(uname -m)) BTF by tools/gen-vmlinux.sh on $(date -u +%Y-%m-%d) */"
	"$bpftool" btf dump file "$btf" format c
} >"$tmp"
mv "$tmp" "$out"
trap - EXIT
echo "wrote $out ($(wc -l <"$out") lines)"
