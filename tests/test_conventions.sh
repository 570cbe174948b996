#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The conventions of README's "Contributing" that a grep can hold:
# - one form for an error's reason: no function in user/, tools/ or tests/
#   takes a reason buffer with its length (`char *why, size_t len`, or an
#   err/msg/reason pointer so); a reason is `char *why` of FG_WHY_LEN bytes.
#   The one exception is fg_whyn(), the writer under fg_why(), which also
#   copies a reason into a smaller field; it is called with a sizeof.
# - commit subjects since 5f768ea (merges aside): at most 72 characters,
#   "area: summary", judged by tools/hooks/commit-msg itself. Skipped
#   without a git history that holds that commit.
# - the C files git tracks are formatted as .clang-format says (make
#   format-check; `make format` mends them). Skipped outside a git checkout.
# Last line: "N passed, N failed, N skipped". Needs no root.
set -u
cd "$(dirname "$0")/.." || exit 2
npass=0 nfail=0 nskip=0
ok() { echo "ok - $*"; npass=$((npass + 1)); }
bad() { echo "FAIL - $*"; nfail=$((nfail + 1)); }
skip() { echo "skip - $1: $2"; nskip=$((nskip + 1)); }

# --- a reason and its length ------------------------------------------------------------
out=$(python3 - <<'PY'
import os, re
# comments and string literals blanked (same length, lines kept)
strip = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
blank = lambda m: re.sub(r'[^\n]', ' ', m.group(0))
# a writable char pointer named for a reason, then a size_t, as parameters
pair = re.compile(r'(?<![\w*])(?<!const )char\s*\*\s*(\w*(?:why|reason|err|msg)\w*)\s*,\s*size_t\s+\w+\s*[,)]')
whyn = re.compile(r'\bfg_whyn\s*\(')
allowed = {("user/lib/sysutil.h", "fg_whyn"), ("user/lib/sysutil.c", "fg_whyn")}
files = pairs = calls = 0
for top in ("user", "tools", "tests"):
    for d, _, fs in sorted(os.walk(top)):
        for f in sorted(fs):
            if not f.endswith((".c", ".h")):
                continue
            p = os.path.join(d, f)
            s = strip.sub(blank, open(p, errors="replace").read())
            files += 1
            for m in pair.finditer(s):
                fn = re.search(r'(\w+)\s*\)?\s*\([^()]*$', s[:m.start()])
                name = fn.group(1) if fn else "?"
                ln = s.count("\n", 0, m.start()) + 1
                if (p, name) in allowed:
                    continue
                pairs += 1
                print("PAIR %s:%d: %s() takes %s" % (p, ln, name, " ".join(m.group(0).rstrip(",) \n\t").split())))
            if p in ("user/lib/sysutil.h", "user/lib/sysutil.c"):
                continue
            for m in whyn.finditer(s):
                args = s[m.end():m.end() + 200]
                if not re.match(r'[^,]*,\s*sizeof\b', args):
                    calls += 1
                    print("WHYN %s:%d: fg_whyn() with a length not a sizeof" %
                          (p, s.count("\n", 0, m.start()) + 1))
print("FILES %d" % files)
PY
)
files=$(echo "$out" | sed -n 's/^FILES //p')
pairs=$(echo "$out" | grep '^PAIR ' | sed 's/^PAIR //')
whyn=$(echo "$out" | grep '^WHYN ' | sed 's/^WHYN //')
if [ -z "$files" ] || [ "$files" -lt 100 ]; then
	bad "the C sources were read: expected 100 or more files, measured ${files:-none}"
elif [ -n "$pairs" ]; then
	bad "no function takes a reason with its length (char *why, FG_WHY_LEN bytes): measured $(echo "$pairs" | wc -l): $(echo "$pairs" | head -n 5 | tr '\n' ';')"
else
	ok "no function takes a reason with its length: $files files"
fi
if [ -n "$whyn" ]; then
	bad "fg_whyn() only with a sizeof of its buffer: measured $(echo "$whyn" | wc -l): $(echo "$whyn" | head -n 5 | tr '\n' ';')"
else
	ok "fg_whyn() only with a sizeof of its buffer"
fi

# --- commit subjects ------------------------------------------------------------------
base=5f768ea
hook=tools/hooks/commit-msg
if ! git rev-parse --git-dir > /dev/null 2>&1; then
	skip "commit subjects since $base" "not a git checkout"
elif [ "$(git rev-parse --is-shallow-repository 2>/dev/null)" = true ]; then
	skip "commit subjects since $base" "a shallow clone (git fetch --unshallow for the history)"
elif ! git cat-file -e "$base^{commit}" 2>/dev/null; then
	skip "commit subjects since $base" "the history does not hold $base"
elif ! git merge-base --is-ancestor "$base" HEAD; then
	skip "commit subjects since $base" "HEAD does not descend from $base"
else
	# on main before the hook came, over the rule; history is not rewritten
	known="4488dd037adbdc88e7099fd5f5eda8bc89580627" # 74 characters
	n=0 nknown=0 badlist=
	tmp=$(mktemp "${TMPDIR:-/tmp}/fgconv.XXXXXX")
	for c in $(git rev-list --no-merges "$base..HEAD"); do
		n=$((n + 1))
		case " $known " in *" $c "*) nknown=$((nknown + 1)); continue ;; esac
		git log -1 --format=%B "$c" > "$tmp"
		if ! why=$("$hook" "$tmp" 2>&1); then
			badlist="$badlist $(git rev-parse --short "$c") ($(echo "$why" | head -n 1 | sed 's/^commit-msg: //'));"
		fi
	done
	rm -f "$tmp"
	if [ -n "$badlist" ]; then
		bad "commit subjects since $base: at most 72 characters, \"area: summary\": $n commits, failing:$badlist"
	else
		ok "commit subjects since $base: at most 72 characters, \"area: summary\": $n commits ($nknown known over it)"
	fi
fi

# --- .clang-format ----------------------------------------------------------------------
if ! command -v clang-format > /dev/null; then
	skip "C files formatted" "no clang-format (tools/deps.sh installs it)"
elif ! srcs=$(git ls-files '*.c' '*.h' 2> /dev/null | grep -v '^vmlinux.h$') || [ -z "$srcs" ]; then
	skip "C files formatted" "not a git checkout"
elif out=$(clang-format --dry-run -Werror $srcs 2>&1); then
	ok "C files formatted as .clang-format says: $(wc -l <<< "$srcs") files"
else
	bad "C files formatted as .clang-format says (make format mends them):$(grep -o '^[^:]*\.[ch]:[0-9]*' <<< "$out" | sort -u | head -n 10 | sed 's/^/ /' | tr -d '\n')"
fi

echo "$npass passed, $nfail failed, $nskip skipped"
[ "$nfail" = 0 ]
