# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# shellcheck shell=bash
#
# What tools/vm/setup and tools/vm/run share: where the cache is, which
# kernel it holds, and the initramfs built from it. Sourced, never run.
#
# The cache ($FG_VM_CACHE, default /var/cache/floodgate-vm, outside any
# work tree) holds, per kernel version KVER (e.g. 6.1.0-57-amd64):
#   kernel/KVER/            linux-image-KVER's files (dpkg -x, never
#                           installed: nothing in /boot, no hooks), depmod'ed
#   kernel/KVER/boot/vmlinux-KVER   the ELF image inside vmlinuz (PVH boot)
#   kernel/KVER/.complete   written last: the .deb's name and sha256
#   initrd-KVER-HASH.cpio   static busybox, tools/vm/init and stage2, the
#                           modules that mount the root; HASH covers every
#                           input, so an edit of init rebuilds it
#   current                 KVER that setup resolved last

FG_VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
FG_VM_CACHE=${FG_VM_CACHE:-/var/cache/floodgate-vm}
# the modules the initramfs loads before it can mount the root (their
# dependencies follow from modules.dep)
FG_VM_MODULES="virtio_pci 9pnet_virtio 9p overlay virtio_console"
# bump when the initramfs' layout changes in a way the hash cannot see
FG_VM_LAYOUT=1

fgvm_die() { echo "${FG_VM_ME:-fgvm}: $*" >&2; exit "${FG_VM_DIE_RC:-1}"; }
fgvm_note() { [ "${FG_VM_QUIET:-0}" = 1 ] || echo "${FG_VM_ME:-fgvm}: $*" >&2; }

# fgvm_kernel_ok KVER: the cache holds a complete unpacked KVER
fgvm_kernel_ok() {
	local k=$FG_VM_CACHE/kernel/$1
	[ -s "$k/.complete" ] && [ -s "$k/lib/modules/$1/modules.dep" ] &&
		{ [ -s "$k/boot/vmlinux-$1" ] || [ -s "$k/boot/vmlinuz-$1" ]; }
}

# fgvm_kver: the kernel to boot: $FG_VM_KVER, else the one setup resolved
# last, else the newest complete one in the cache; empty when none
fgvm_kver() {
	local v
	if [ -n "${FG_VM_KVER:-}" ]; then
		echo "$FG_VM_KVER"
		return
	fi
	v=$(cat "$FG_VM_CACHE/current" 2>/dev/null)
	if [ -n "$v" ] && fgvm_kernel_ok "$v"; then
		echo "$v"
		return
	fi
	for v in $(ls -1 "$FG_VM_CACHE/kernel" 2>/dev/null | sort -rV); do
		fgvm_kernel_ok "$v" && { echo "$v"; return; }
	done
}

# fgvm_image KVER: the file QEMU boots: the ELF vmlinux (PVH entry, no
# decompression inside the emulated guest), else the bzImage
fgvm_image() {
	local b=$FG_VM_CACHE/kernel/$1/boot
	if [ -s "$b/vmlinux-$1" ]; then echo "$b/vmlinux-$1"; else echo "$b/vmlinuz-$1"; fi
}

# fgvm_busybox: a statically linked busybox (busybox-static), or nothing
fgvm_busybox() {
	local b
	for b in /bin/busybox /usr/bin/busybox; do
		[ -x "$b" ] && LC_ALL=C readelf -l "$b" > /dev/null 2>&1 || continue
		LC_ALL=C readelf -l "$b" | grep -q 'program interpreter' && continue
		echo "$b"
		return
	done
}

# fgvm_initrd_modules KVER: the .ko files to insmod, dependencies first, one
# per line (built-in ones print nothing)
fgvm_initrd_modules() {
	local root=$FG_VM_CACHE/kernel/$1 m
	for m in $FG_VM_MODULES; do
		modprobe -d "$root" -S "$1" --show-depends "$m" || return 1
	done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }'
}

# fgvm_initrd_path KVER: the initramfs for KVER and the current inputs
fgvm_initrd_path() {
	local mods h
	mods=$(fgvm_initrd_modules "$1") || return 1
	h=$({
		echo "layout $FG_VM_LAYOUT kernel $1"
		echo "$mods"
		cat "$FG_VM_DIR/init" "$FG_VM_DIR/stage2"
		sha256sum < "$(fgvm_busybox)"
	} | sha256sum | cut -c1-16)
	echo "$FG_VM_CACHE/initrd-$1-$h.cpio"
}

# fgvm_initrd_build KVER: build the initramfs fgvm_initrd_path names, if it
# is not there; removes KVER's older ones. Prints its path.
fgvm_initrd_build() {
	local kver=$1 out bb t f b
	out=$(fgvm_initrd_path "$kver") || { echo "fgvm: modprobe cannot resolve $FG_VM_MODULES for $kver" >&2; return 1; }
	[ -s "$out" ] && { echo "$out"; return 0; }
	bb=$(fgvm_busybox)
	[ -n "$bb" ] || { echo "fgvm: no static busybox (apt-get install busybox-static)" >&2; return 1; }
	t=$(mktemp -d "$FG_VM_CACHE/.initrd.XXXXXX") || return 1
	mkdir -p "$t/bin" "$t/lib/fgvm" "$t/dev" "$t/proc" "$t/sys" "$t/mnt" "$t/newroot"
	cp "$bb" "$t/bin/busybox"
	cp "$FG_VM_DIR/init" "$t/init"
	cp "$FG_VM_DIR/stage2" "$t/lib/fgvm/stage2"
	chmod 755 "$t/init" "$t/bin/busybox"
	: > "$t/lib/fgvm/modules"
	while read -r f; do
		[ -n "$f" ] || continue
		b=$(basename "$f")
		case $f in
		*.ko) cp "$f" "$t/lib/fgvm/$b" ;;
		*.ko.xz) xz -dc "$f" > "$t/lib/fgvm/${b%.xz}"; b=${b%.xz} ;;
		*.ko.zst) zstd -qdc "$f" > "$t/lib/fgvm/${b%.zst}"; b=${b%.zst} ;;
		*.ko.gz) gzip -dc "$f" > "$t/lib/fgvm/${b%.gz}"; b=${b%.gz} ;;
		*) echo "fgvm: unknown module file $f" >&2; rm -rf "$t"; return 1 ;;
		esac
		echo "$b" >> "$t/lib/fgvm/modules"
	done < <(fgvm_initrd_modules "$kver")
	if ! (cd "$t" && find . -mindepth 1 | LC_ALL=C sort | "$bb" cpio -o -H newc 2>/dev/null) > "$t.cpio"; then
		rm -rf "$t" "$t.cpio"
		echo "fgvm: cpio failed" >&2
		return 1
	fi
	rm -rf "$t"
	# others of this kernel are stale now (a changed init, modules or busybox)
	for f in "$FG_VM_CACHE/initrd-$kver-"*.cpio; do
		[ "$f" = "$out" ] || rm -f "$f"
	done
	mv "$t.cpio" "$out" && echo "$out"
}
