#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The BPF object must build and pass the kernel verifier with both supported
# compilers: tools/verify-clang.sh (clang 14 and clang-19, temp OUTPUT,
# bpftool -d prog loadall, processed-instruction counts, unpinned after).
# A compiler that is not installed is a skip here (tools/deps.sh gameday
# installs clang-19); `make verify-clang` makes it a failure.
# Needs root. Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
fg_require_root
# verify-clang.sh counts, cleans up and prints the summary line itself
FG_VERIFY_MISSING=skip exec tools/verify-clang.sh
