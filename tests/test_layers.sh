#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The include graph of user/ runs one way: each folder includes only its
# own headers and those of the layers below it, and no header includes
# itself through others. The layers, lowest first (README, "Layout"):
#   lib < conn fleet shed < policy < maps < sources < lists attach < daemon cli
# daemon and cli never include each other. A new folder must be given a
# layer here, or this test fails.
# Last line: "N passed, N failed, N skipped". Needs no root.
set -u
cd "$(dirname "$0")/.." || exit 2
exec python3 - <<'PY'
import os, re, sys
layer = {"lib": 0, "conn": 1, "fleet": 1, "shed": 1, "policy": 2, "maps": 3,
         "sources": 4, "lists": 5, "attach": 5, "synauth": 5, "daemon": 6, "cli": 6}
apart = {("daemon", "cli"), ("cli", "daemon")}
inc, npass, nfail = {}, 0, 0
def ok(m):
    global npass; npass += 1; print("ok - " + m)
def bad(m):
    global nfail; nfail += 1; print("FAIL - " + m)
for d, _, fs in os.walk("user"):
    for f in fs:
        if f.endswith((".c", ".h")):
            p = os.path.join(d, f)
            inc[p[5:]] = re.findall(r'^#include "([a-z_0-9]+/[a-z_0-9]+\.h)"', open(p).read(), re.M)
folders = sorted({p.split("/")[0] for p in inc})
unknown = [f for f in folders if f not in layer]
if unknown:
    bad("every folder of user/ has a layer: expected one for each, measured none for " + ", ".join(unknown))
else:
    ok("every folder of user/ has a layer: %d folders" % len(folders))
up = []
for a, hs in sorted(inc.items()):
    fa = a.split("/")[0]
    for h in hs:
        fb = h.split("/")[0]
        if fb == fa or fa not in layer:
            continue
        if fb not in layer or layer[fb] > layer[fa] or (fa, fb) in apart:
            up.append("%s includes %s" % (a, h))
if up:
    bad("no include reaches up a layer: expected none, measured %d: %s" % (len(up), "; ".join(up[:10])))
else:
    ok("no include reaches up a layer: %d files, %d includes" % (len(inc), sum(map(len, inc.values()))))
missing = [(a, h) for a, hs in inc.items() for h in hs if h not in inc]
if missing:
    bad("every included user header exists: measured %s" % missing[:5])
else:
    ok("every included user header exists")
cycles, state = [], {}
def dfs(n, path):
    state[n] = 1
    for m in inc.get(n, []):
        if state.get(m) == 1:
            cycles.append(" -> ".join(path[path.index(m):] + [m]))
        elif m not in state:
            dfs(m, path + [m])
    state[n] = 2
for h in sorted(x for x in inc if x.endswith(".h")):
    if h not in state:
        dfs(h, [h])
if cycles:
    bad("no header includes itself through others: measured " + "; ".join(cycles[:5]))
else:
    ok("no header includes itself through others")
print("%d passed, %d failed, 0 skipped" % (npass, nfail))
sys.exit(1 if nfail else 0)
PY
