#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The soak's smoke for `make test` (about 30 s): tests/gameday_soak.sh in
# its smoke mode: 2,000 sources at 3x their limit for 20 s, a reload every
# 4 s, the daemon's CPU and RSS sampled, accuracy and no counter lost.
# Needs root. Last line: "N passed, N failed, N skipped".
cd "$(dirname "$0")/.." || exit 2
SOAK_MODE=smoke exec bash tests/gameday_soak.sh
