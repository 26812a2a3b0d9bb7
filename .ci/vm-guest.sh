#!/usr/bin/env bash
# What the microVM tests need (tests/integration/test-microvm.c, the conformance suite's vm
# tier): QEMU, a static busybox for the guest's tools, the decompressors `cordon vm build`
# uses, and Debian's cloud kernel package, fetched with `apt-get download` (never installed
# as the host's kernel) into $CORDON_CI_STATE/vm. The tests build the guest from it with
# this build's agent. Idempotent.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
state=${CORDON_CI_STATE:-/var/lib/cordon-ci}
apt-get install -y -qq qemu-system-x86 qemu-utils busybox-static dpkg lz4 zstd xz-utils >/dev/null
mkdir -p "$state/vm"
deb="$state/vm/linux-image-cloud-amd64.deb"
if [ ! -s "$deb" ]; then
	# the newest cloud kernel the archive has (the meta-package names it)
	pkg=$(apt-cache depends linux-image-cloud-amd64 | sed -n 's/^ *Depends: \(linux-image-[0-9].*-cloud-amd64\)$/\1/p' | head -1)
	tmp=$(mktemp -d)
	(cd "$tmp" && apt-get download -qq "${pkg}-unsigned" 2>/dev/null || apt-get download -qq "$pkg")
	mv "$tmp"/*.deb "$deb"
	rmdir "$tmp"
fi

# The hvf guest path (an aarch64 kernel and the agent cross-built static) runs under
# qemu-system-aarch64 -M virt -accel tcg: the emulator, the cross compiler (configure finds it
# and `make check` builds agent/cordon-agent-aarch64), arm64's cloud kernel and static
# busybox, downloaded (never installed).
apt-get install -y -qq qemu-system-arm gcc-aarch64-linux-gnu libc6-dev-arm64-cross >/dev/null
if [ ! -s "$state/vm/linux-image-cloud-arm64.deb" ] || [ ! -x "$state/vm/busybox-arm64" ]; then
	dpkg --print-foreign-architectures | grep -qx arm64 || { dpkg --add-architecture arm64; apt-get update -qq; }
	pkg=$(apt-cache depends linux-image-cloud-arm64:arm64 | sed -n 's/^ *Depends: \(linux-image-[0-9].*-cloud-arm64\)\(:arm64\)\?$/\1/p' | head -1)
	tmp=$(mktemp -d)
	(cd "$tmp" && { apt-get download -qq "${pkg}-unsigned:arm64" 2>/dev/null || apt-get download -qq "$pkg:arm64"; } &&
		apt-get download -qq busybox-static:arm64)
	mv "$tmp"/linux-image-*.deb "$state/vm/linux-image-cloud-arm64.deb"
	dpkg-deb -x "$tmp"/busybox-static_*.deb "$tmp/bb"
	install -m 0755 "$tmp/bb/bin/busybox" "$state/vm/busybox-arm64"
	rm -rf "$tmp"
fi
