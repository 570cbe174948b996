#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The operator's first hour (issue 23), without a daemon: --version, help
# and check within 80 columns, check's caret, suggestion, nft rates, host
# bits, --json and --quiet, kernel --json, bash completion driven as bash
# drives it, the zsh script's syntax, the installed unit verified by
# systemd-analyze (and what it runs), and the non-root message of a map
# command. Needs no network namespace; the non-root check needs root (to
# drop to nobody) and is skipped otherwise.
# Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
fg_init "$FG" "$FGD"
unset COLUMNS	# the default width is what is checked here

# widest NAME FILE: a check that every line of FILE fits 80 columns
widest() {
	local w
	w=$(awk '{ if (length($0) > m) { m = length($0); l = $0 } } END { printf "%d", m }' "$2")
	if [ "${w:-0}" -le 80 ]; then ok "$1: fits 80 columns (widest line $w)"
	else bad "$1: fits 80 columns" "widest line $w: $(awk 'length($0) > 80' "$2" | head -3 | one_line 300)"; fi
}

# --- versions ------------------------------------------------------------------------
for b in "$FG" "$FGD"; do
	out=$("$b" --version 2>&1); rc=$?
	if [ $rc = 0 ] && echo "$out" | grep -qE "^$(basename "$b") version [^ ]+ \(ABI [0-9]+\), libbpf [0-9.]+, libxdp [0-9.]+$"; then
		ok "$(basename "$b") --version: exit 0, \"$out\""
	else
		bad "$(basename "$b") --version" "exit $rc: $out"
	fi
done

# --- help: 80 columns --------------------------------------------------------------------
"$FG" --help > "$FG_TMP/help" 2>&1
for c in status stats top mode bypass shed deny allow check reload detach kernel completion; do
	"$FG" "$c" --help >> "$FG_TMP/help" 2>&1
done
widest "floodgate --help and every command's --help" "$FG_TMP/help"
"$FGD" --help > "$FG_TMP/dhelp" 2>&1
widest "floodgated --help" "$FG_TMP/dhelp"
make -s help > "$FG_TMP/mhelp" 2>&1
widest "make help" "$FG_TMP/mhelp"

# --- check ---------------------------------------------------------------------------------
"$FG" check examples/policy.yaml > "$FG_TMP/check" 2>&1; rc=$?
check_cmp "check examples/policy.yaml: exit 0" "$rc" = 0
widest "check examples/policy.yaml" "$FG_TMP/check"
if grep -qE 'inc [0-9]+|tau [0-9]+|blocks of 1 KB' "$FG_TMP/check"; then
	bad "check speaks the operator's terms" "$(grep -E 'inc [0-9]+|tau [0-9]+|blocks of' "$FG_TMP/check" | head -2 | one_line)"
else
	ok "check speaks the operator's terms: no inc/tau, no 'blocks of 1 KB'"
fi
check "check: rates, bursts and refill" grep -q "per_source 10/s burst 20 (empty to full in 2 s)" "$FG_TMP/check"
check "check: the tables' memory" grep -qE "^  sources +65536 per family: IPv4 [0-9.]+ MB, IPv6 [0-9.]+ MB" "$FG_TMP/check"
"$FG" --verbose check examples/policy.yaml 2>/dev/null | grep -q "inc 6400000000, tau 128000000000"
check_cmp "check -v: the compiled figures too" "$?" = 0
out=$("$FG" check --quiet examples/policy.yaml 2>&1); rc=$?
check_cmp "check --quiet of a good file: exit 0, prints nothing [$out]" "$rc:${#out}" = "0:0"

cat > "$FG_TMP/typo.yaml" <<'EOF'
rules:
  - name: ssh
    match: {proto: tcp, dport: 22}
    per_sorce: {rate: 10/s, burst: 20}
EOF
out=$("$FG" check "$FG_TMP/typo.yaml" 2>&1); rc=$?
want="$FG_TMP/typo.yaml:4:5: unknown key \"per_sorce\" in rule: did you mean per_source?"
if [ $rc = 1 ] && [ "$(echo "$out" | sed -n 1p | cut -c1-${#want})" = "$want" ] &&
   [ "$(echo "$out" | sed -n 2p)" = "      per_sorce: {rate: 10/s, burst: 20}" ] &&
   [ "$(echo "$out" | sed -n 3p)" = "      ^~~~~~~~~" ]; then
	ok "check: a typo: exit 1, file:line:col, did you mean, the line and a caret under it"
else
	bad "check: a typo" "exit $rc: $(echo "$out" | one_line 400)"
fi
"$FG" check --json "$FG_TMP/typo.yaml" > "$FG_TMP/typo.json" 2>&1
fg_json_check "check --json of a refused file" check_error "$FG_TMP/typo.json"
check_cmp "check --json of a refused file: its line" "$(fg_json_get "$FG_TMP/typo.json" ok error.line error.col)" = "false 4 5"

cat > "$FG_TMP/nft.yaml" <<'EOF'
allow: [10.1.2.3/8]
rules:
  - name: a
    match: {proto: udp, dport: 53}
    per_source: {rate: 10/second, burst: 20}
  - name: b
    match: {proto: tcp}
    per_source: {rate: 600/minute, burst: 20}
    aggregate: {rate: 7200/hour, burst: 10}
EOF
out=$("$FG" check "$FG_TMP/nft.yaml" 2>&1 >/dev/null); rc=$?
check_cmp "check: nft's 10/second, /minute, /hour are rates" "$rc" = 0
if echo "$out" | grep -q "nft.yaml:1:9: warning: allow: 10.1.2.3/8 has host bits set: it means 10.0.0.0/8" &&
   echo "$out" | grep -qx '          ^~~~~~~~~~'; then
	ok "check: host bits warned, with the place and a caret"
else
	bad "check: host bits warned" "$(echo "$out" | one_line 300)"
fi
"$FG" check --json "$FG_TMP/nft.yaml" > "$FG_TMP/nft.json" 2>&1
fg_json_check "check --json" check "$FG_TMP/nft.json"
check_cmp "check --json: rates per second, the warning" \
	"$(fg_json_get "$FG_TMP/nft.json" rules.0.per_source.rate rules.1.per_source.rate rules.1.aggregate.rate warnings.0.line)" = "10.0 10.0 2.0 1"
"$FG" check --json examples/policy.yaml > "$FG_TMP/ex.json" 2>&1
fg_json_check "check --json examples/policy.yaml" check "$FG_TMP/ex.json"

# --- kernel --------------------------------------------------------------------------------
"$FG" kernel > "$FG_TMP/kernel" 2>&1
widest "floodgate kernel" "$FG_TMP/kernel"
"$FG" kernel --json > "$FG_TMP/kernel.json" 2>&1
fg_json_check "kernel --json" kernel "$FG_TMP/kernel.json"

# --- completion ----------------------------------------------------------------------------
"$FG" completion bash > "$FG_TMP/floodgate.bash"
check "completion bash: valid bash" bash -n "$FG_TMP/floodgate.bash"
"$FG" completion zsh > "$FG_TMP/_floodgate"
if command -v zsh > /dev/null; then
	check "completion zsh: valid zsh" zsh -n "$FG_TMP/_floodgate"
else
	skip "completion zsh: valid zsh" "zsh is not installed"
fi
"$FG" completion fish > /dev/null 2>&1
check_cmp "completion fish: a usage error" "$?" = 2
# complete LINE: what the generated function offers for the words of LINE
# (the last one being completed), as bash calls it on TAB
complete_line() {
	bash -c '. "$1"; read -ra COMP_WORDS <<< "$2"; [ "${2: -1}" = " " ] && COMP_WORDS+=("");
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _floodgate;
		printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " " | sed "s/ $//"' _ "$FG_TMP/floodgate.bash" "$1"
}
mkdir -p "$FG_TMP/cdir" && touch "$FG_TMP/cdir/p1.yaml" "$FG_TMP/cdir/p2.yaml"
while IFS='|' read -r line want; do
	got=$(cd "$FG_TMP/cdir" && complete_line "$line")
	check_cmp "bash completes '$line'" "$got" = "$want"
done <<'EOF'
floodgate st|stats status
floodgate mode |enforce file shadow
floodgate bypass |off on
floodgate deny |add del list
floodgate --pin-dir /tmp sh|shed
floodgate check |p1.yaml p2.yaml
floodgate bypass on --f|--for
floodgate detach -f |
floodgate top -n 5 --j|--json
floodgate completion |bash zsh
EOF

# floodgated's, from its option table
"$FGD" --completion bash > "$FG_TMP/floodgated.bash"
check "floodgated --completion bash: valid bash" bash -n "$FG_TMP/floodgated.bash"
dcomplete() {
	bash -c '. "$1"; read -ra COMP_WORDS <<< "$2"; [ "${2: -1}" = " " ] && COMP_WORDS+=("");
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _floodgated;
		printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " " | sed "s/ $//"' _ "$FG_TMP/floodgated.bash" "$1"
}
check_cmp "bash completes 'floodgated --con'" "$(dcomplete 'floodgated --con')" = "--config"
check_cmp "bash completes 'floodgated --config '" "$(cd "$FG_TMP/cdir" && dcomplete 'floodgated --config ')" = "p1.yaml p2.yaml"

# --- the unit, installed -------------------------------------------------------------------
root=$FG_TMP/root
if make -s install DESTDIR="$root" > "$FG_TMP/install.log" 2>&1; then
	ok "make install DESTDIR=...: exit 0"
else
	bad "make install DESTDIR=..." "$(tail -5 "$FG_TMP/install.log" | one_line)"
fi
unit=$root/usr/local/lib/systemd/system/floodgated.service
for f in "$unit" "$root/etc/default/floodgated" "$root/etc/floodgate/policy.yaml" \
	"$root/usr/local/share/bash-completion/completions/floodgate" \
	"$root/usr/local/share/zsh/site-functions/_floodgate" "$root/usr/local/share/man/man8/floodgate.8" \
	"$root/usr/local/share/bash-completion/completions/floodgated" \
	"$root/usr/local/share/zsh/site-functions/_floodgated"; do
	check "installed ${f#"$root"}" test -s "$f"
done
check "the unit reloads through floodgate reload (validated)" grep -qx 'ExecReload=/usr/local/sbin/floodgate reload' "$unit"
check "the unit checks quietly before the start" grep -qx 'ExecStartPre=/usr/local/sbin/floodgate check --quiet /etc/floodgate/policy.yaml' "$unit"
check "the unit reads the environment file" grep -qx 'EnvironmentFile=-/etc/default/floodgated' "$unit"
check "the environment file has the one setting" grep -qx 'FLOODGATE_INTERFACES=""' "$root/etc/default/floodgated"
if command -v systemd-analyze > /dev/null; then
	# the installed unit, its binaries and man pages where DESTDIR put them
	sed "s|/usr/local/sbin|$root/usr/local/sbin|g" "$unit" > "$FG_TMP/floodgated.service"
	out=$(MANPATH=$root/usr/local/share/man systemd-analyze verify "$FG_TMP/floodgated.service" 2>&1); rc=$?
	check_cmp "systemd-analyze verify of the installed unit: clean [$(echo "$out" | one_line 200)]" "$rc:${#out}" = "0:0"
	sed 's/^ExecReload=/ExecReloadd=/' "$FG_TMP/floodgated.service" > "$FG_TMP/bad.service"
	out=$(MANPATH=$root/usr/local/share/man systemd-analyze verify "$FG_TMP/bad.service" 2>&1)
	check "systemd-analyze verify: the check can fail (a bad key is reported)" test -n "$out"
else
	skip "systemd-analyze verify" "systemd-analyze is not installed"
fi
out=$(env -u FLOODGATE_INTERFACES "$FGD" --config "$root/etc/floodgate/policy.yaml" --foreground --pin-dir /nonexistent/fg 2>&1); rc=$?
if [ $rc = 1 ] && echo "$out" | grep -q "set FLOODGATE_INTERFACES in /etc/default/floodgated"; then
	ok "the installed policy without interfaces: floodgated says where to set them"
else
	bad "the installed policy without interfaces" "exit $rc: $(echo "$out" | one_line)"
fi
out=$(FLOODGATE_INTERFACES="fgnosuch0" "$FGD" --config "$root/etc/floodgate/policy.yaml" --foreground --pin-dir /nonexistent/fg 2>&1); rc=$?
if [ $rc = 1 ] && echo "$out" | grep -q "interface fgnosuch0: No such device"; then
	ok "FLOODGATE_INTERFACES names the interfaces ($(echo "$out" | tail -1))"
else
	bad "FLOODGATE_INTERFACES names the interfaces" "exit $rc: $(echo "$out" | one_line)"
fi

# --- not root ------------------------------------------------------------------------------
if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null; then
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$FG" status 2>&1); rc=$?
	if [ $rc = 1 ] && echo "$out" | grep -q "needs root or CAP_BPF: run it as root"; then
		ok "status as nobody: says it needs root or CAP_BPF, and how"
	else
		bad "status as nobody" "exit $rc: $out"
	fi
else
	skip "status as nobody" "needs root (to drop to nobody) and setpriv"
fi

fg_finish
