#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The libFuzzer targets (tests/fuzz_*.c, built by `make fuzz`):
#   1. replay: every file under tests/corpus/NAME/ (seeds and regressions)
#      runs once through fuzz_NAME; any crash, leak, timeout or sanitizer
#      report fails and names the file with its bytes in hex;
#   2. fuzz: each target runs for a bounded time on a copy of its corpus in
#      a temp dir (the repository's corpus is never modified), both targets
#      in parallel; any artifact (crash/leak/timeout/oom) fails and is saved
#      under $OUTPUT/fuzz-artifacts/ so it outlives the run.
# Time per target: 5 s by default (make test: a smoke on top of the whole
# replay, which is the regression set), 600 s with FG_GAMEDAY=1 (make
# gameday); FG_FUZZ_TIME=N overrides both. Fuzzer processes are ours,
# stopped by PID on exit.
# Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
fg_init
OUT=$FG_OUT
FZ=$OUT/fuzz
ART=$OUT/fuzz-artifacts
TMP=$FG_TMP

if [ -n "${FG_FUZZ_TIME:-}" ]; then
	T=$FG_FUZZ_TIME
elif [ -n "${FG_GAMEDAY:-}" ]; then
	T=600
else
	T=5
fi
RSS=2048
# -fsanitize=undefined recovers by default: make a UBSan report a crash, so
# libFuzzer saves the input, and the run fails
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1

touch "$TMP/start"

# hex of a file (first 512 bytes), one line
hexof() { od -An -tx1 -v -N512 "$1" | tr -s ' \n' ' ' | sed 's/^ //;s/ $//'; }

# --- build ---------------------------------------------------------------------
if ! make -s OUTPUT="$OUT" fuzz > "$TMP/build.log" 2>&1; then
	if grep -qiE "fsanitize=fuzzer|libclang_rt.fuzzer|cannot find.*fuzzer" "$TMP/build.log"; then
		skip "fuzz build" "clang has no libFuzzer runtime (install libclang-rt-dev): $(tail -n 2 "$TMP/build.log" | tr '\n' ' ')"
		summary; exit 0
	fi
	bad "make fuzz" "$(tail -n 5 "$TMP/build.log" | tr '\n' ' ')"
	fg_finish
fi
built=""
for b in "$FZ"/fuzz_*; do [ -x "$b" ] && [ "${b%.d}" = "$b" ] && built+=" $(basename "$b")"; done
ok "make fuzz builds$built"

targets=()
for src in tests/fuzz_*.c; do
	[ -f "$src" ] || continue
	t=$(basename "$src" .c)
	if [ -x "$FZ/$t" ]; then targets+=("$t"); else bad "$t built" "$FZ/$t missing after make fuzz"; fi
done

# --- 1. replay every corpus/regression file once -----------------------------------
for dir in tests/corpus/*/; do
	name=$(basename "$dir")
	bin=$FZ/fuzz_$name
	files=()
	while IFS= read -r -d '' f; do files+=("$f"); done < <(find "$dir" -type f -print0 | sort -z)
	if [ ! -x "$bin" ]; then
		skip "replay tests/corpus/$name" "no fuzzer fuzz_$name for it"; continue
	fi
	if [ ${#files[@]} = 0 ]; then
		skip "replay tests/corpus/$name" "empty"; continue
	fi
	log=$TMP/replay-$name.log
	"$bin" -rss_limit_mb=$RSS -timeout=10 -runs=1 "${files[@]}" > "$log" 2>&1
	rc=$?
	if [ $rc = 0 ] && ! grep -qE "ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:" "$log"; then
		ok "replay tests/corpus/$name: ${#files[@]} files through fuzz_$name, no crash"
		continue
	fi
	# the file running when it died is the last "Running:" line
	culprit=$(sed -nE 's/^Running: (.*)$/\1/p' "$log" | tail -n 1)
	what=$(grep -m1 -E "ERROR: |runtime error:|deadly signal" "$log")
	if [ -n "$culprit" ] && [ -f "$culprit" ]; then
		bad "replay tests/corpus/$name" "fuzz_$name exited $rc on $culprit ($what); hex: $(hexof "$culprit")"
	else
		bad "replay tests/corpus/$name" "fuzz_$name exited $rc ($what)"
	fi
	sed -n '/ERROR:\|runtime error:/,+25p' "$log" | head -n 40 | sed 's/^/    /'
done

# --- 2. bounded fuzzing on a copy of each corpus, in parallel ------------------------
mkdir -p "$ART"
for t in "${targets[@]}"; do
	name=${t#fuzz_}
	mkdir -p "$TMP/$t/corpus" "$TMP/$t/art"
	[ -d "tests/corpus/$name" ] && cp -r "tests/corpus/$name/." "$TMP/$t/corpus/"
	"$FZ/$t" -max_total_time="$T" -rss_limit_mb=$RSS -timeout=10 -print_final_stats=1 \
		-artifact_prefix="$TMP/$t/art/" "$TMP/$t/corpus" > "$TMP/$t/log" 2>&1 &
	fg_bg_adopt "$!"
	eval "pid_$t=\$FG_BG_PID"
done
echo "# fuzzing ${targets[*]} for $T s each (in parallel)"
for t in "${targets[@]}"; do
	eval "p=\$pid_$t"
	wait "$p"; rc=$?
	log=$TMP/$t/log
	execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log" | tail -n 1)
	cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9a-zA-Z]+' "$log" | tail -n 1)
	rate=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+)/\1/p' "$log" | tail -n 1)
	arts=()
	while IFS= read -r -d '' f; do arts+=("$f"); done < <(find "$TMP/$t/art" -type f -print0)
	if [ $rc = 0 ] && [ ${#arts[@]} = 0 ] && ! grep -qE "runtime error:|ERROR: " "$log"; then
		ok "$t: $T s, ${execs:-?} execs (${rate:-?}/s), $cov, no crash"
		continue
	fi
	what=$(grep -m1 -E "ERROR: |runtime error:|deadly signal" "$log")
	if [ ${#arts[@]} = 0 ]; then
		bad "$t" "exited $rc without an artifact ($what); last lines: $(tail -n 3 "$log" | tr '\n' ' ')"
	fi
	for a in "${arts[@]}"; do
		keep=$ART/$t-$(basename "$a")
		cp "$a" "$keep"
		bad "$t" "$(basename "$a" | cut -d- -f1) after ${execs:-?} execs ($what); input saved as $keep; hex: $(hexof "$a")"
	done
	sed -n '/ERROR:\|runtime error:/,+25p' "$log" | head -n 40 | sed 's/^/    /'
done

# --- the run left the repository's corpus alone ---------------------------------------
# libFuzzer names what it adds by SHA-1; none may appear in the repository
new=$(find tests/corpus -type f -newer "$TMP/start" -regextype posix-extended \
	-regex '.*/[0-9a-f]{40}' 2>/dev/null)
if [ -z "$new" ]; then ok "the repository's corpus is untouched by the run"
else bad "repository corpus untouched" "new files: $(echo "$new" | tr '\n' ' ')"; fi

fg_finish
