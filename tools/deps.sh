#!/bin/sh
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Install the Debian packages floodgate needs, if any are missing.
#   tools/deps.sh            build + test dependencies
#   tools/deps.sh bench      + nftables, iptables, gnuplot
#   tools/deps.sh gameday    + hping3, clang-19, valgrind; mandoc, promtool
#                            (prometheus), zsh for the man, metrics and completion checks
#   tools/deps.sh vm         + qemu-system-x86, busybox-static, kmod, and the
#                            guest's kernel (tools/vm/setup: linux-image-amd64's
#                            current one, downloaded into the cache, not installed)
# Run as root on a fresh machine; a machine that has everything needs nothing.
set -eu
pkgs="clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev libyaml-dev
libmicrohttpd-dev libsystemd-dev libjson-c-dev libhiredis-dev libxdp-dev xdp-tools
redis-server pkg-config iproute2 make gcc libclang-rt-dev ethtool util-linux curl clang-format
python3 iputils-ping"
vm=0
for extra in "$@"; do
	case "$extra" in
	bench) pkgs="$pkgs nftables iptables gnuplot-nox linux-perf" ;;
	gameday) pkgs="$pkgs hping3 clang-19 valgrind tcpdump mandoc prometheus zsh" ;;
	vm) pkgs="$pkgs qemu-system-x86 busybox-static kmod xz-utils"; vm=1 ;;
	*) echo "deps.sh: unknown set '$extra'" >&2; exit 2 ;;
	esac
done
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# the guest's kernel: after the packages (setup needs kmod), every time,
# so a new linux-image-amd64 is fetched; nothing when the cache has it
vm_setup() {
	[ "$vm" = 1 ] || return 0
	[ "$(id -u)" = 0 ] || { echo "deps.sh: the guest's kernel needs root (tools/vm/setup)" >&2; return 1; }
	FG_VM_QUIET=${FG_VM_QUIET:-1} "$(dirname "$0")/vm/setup"
}
if [ -z "$missing" ]; then
	vm_setup
	exit
fi
if [ "$(id -u)" != 0 ]; then
	echo "deps.sh: missing Debian packages:$missing (run as root to install them)" >&2
	exit 1
fi
echo "deps.sh: installing$missing"
export DEBIAN_FRONTEND=noninteractive
# Packages such as redis-server start a system service on install; the tests
# start their own servers, so none may start here (invoke-rc.d honours 101).
rcd=/usr/sbin/policy-rc.d
own_rcd=0
if [ ! -e "$rcd" ]; then
	printf '#!/bin/sh\nexit 101\n' > "$rcd" && chmod 755 "$rcd" && own_rcd=1
fi
trap '[ "$own_rcd" = 1 ] && rm -f "$rcd"' EXIT
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
vm_setup
