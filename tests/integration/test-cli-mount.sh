#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# `cordon run --mount HOST:INSIDE[:rw]` (issue 15, item 2) on the kernel tier and, as root,
# podman, docker and docker under gVisor: a read-only mount reads and refuses writes, :rw
# writes land on the host, and each refusal (a symbolic link, a forbidden tree, a bad inside
# path, :rw for untrusted work, the jail) exits 201/202 with its code before anything runs.
# The container tiers restart nothing here, but share dockerd: run under the lock.
set -u
cordon="${CORDON_TOP_BUILDDIR:-.}/cordon"
top="${CORDON_TOP_BUILDDIR:-.}"
. "${CORDON_TOP_SRCDIR:-.}/tests/integration/tap.sh"
unset CORDON_POLICY
grep_err() { # grep_err DESCRIPTION PATTERN
	if grep -q -- "$2" "$tmp/err"; then ok "$1"; else not_ok "$1"; sed 's/^/# /' "$tmp/err"; fi
}
grep_out() { # grep_out DESCRIPTION PATTERN
	if grep -q -- "$2" "$tmp/out"; then ok "$1"; else not_ok "$1"; sed 's/^/# /' "$tmp/out" "$tmp/err"; fi
}

if [ "$(id -u)" != 0 ]; then
	# The kernel tier binds mounts as root only (docs/policy.md, "Mounts").
	if [ "${CORDON_REQUIRE:-}" = all ]; then not_ok "mounts need root here"; else
		n=$((n + 1)); echo "ok $n # SKIP mounts are given as root only"; fi
	tap_finish
	exit $?
fi
chmod 755 "$tmp"
mkdir -m 755 "$tmp/src" "$tmp/wr"
echo original >"$tmp/src/f"
chown 65534:65534 "$tmp/wr" # a writable mount of root's is refused
ln -s "$tmp/src" "$tmp/link"

cat >"$tmp/p.yaml" <<'EOF2'
cordon: 1
tiers:
  jail: {driver: local, confine: none}
  kernel: {driver: local, confine: kernel}
trust:
  trusted: {require: process-jail, tiers: [jail]}
  semi-trusted: {require: kernel, tiers: [kernel]}
  untrusted: {require: kernel, relax: true, tiers: [kernel]}
EOF2
p="--policy $tmp/p.yaml"
# shellcheck disable=SC2086 # $p is two words
{
check "kernel: a read-only mount is readable" 0 "$cordon" run $p --mount "$tmp/src:/tmp/in" -- cat /tmp/in/f
grep_out "kernel: the work reads the host's file" original
check "kernel: a write into a read-only mount fails" 9 "$cordon" run $p --mount "$tmp/src:/tmp/in" -- sh -c 'echo x >/tmp/in/new || exit 9'
if [ -e "$tmp/src/new" ]; then not_ok "kernel: nothing was written"; else ok "kernel: nothing was written"; fi
check "kernel: :rw writes land on the host" 0 "$cordon" run $p --mount "$tmp/wr:/tmp/o:rw" -- sh -c 'echo w >/tmp/o/w'
if [ "$(cat "$tmp/wr/w" 2>/dev/null)" = w ]; then ok "kernel: the host has the file"; else not_ok "kernel: the host has the file"; fi
check "a symbolic link to a directory is refused" 201 "$cordon" run $p --mount "$tmp/link:/tmp/in" -- true
grep_err "the refusal says so, with its code" "mount_forbidden.*symbolic link"
check "a forbidden tree (/etc/ssh) is refused" 201 "$cordon" run $p --mount /etc/ssh:/tmp/in -- true
grep_err "the refusal names the tree" "mount_forbidden.*inside /etc"
check "a relative inside path is a usage error" 202 "$cordon" run $p --mount "$tmp/src:tmp/in" -- true
grep_err "the error says why" "mount_invalid.*must be absolute"
check "'..' in the inside path is a usage error" 202 "$cordon" run $p --mount "$tmp/src:/tmp/../proc" -- true
check "an inside path over the sandbox's /proc is refused" 202 "$cordon" run $p --mount "$tmp/src:/proc/x" -- true
check "an inside path over the sandbox's /dev is refused" 202 "$cordon" run $p --mount "$tmp/src:/dev" -- true
grep_err "the error names the tree" "mount_invalid.*/dev"
check "--mount without an inside path is a usage error" 202 "$cordon" run $p --mount "$tmp/src" -- true
check "untrusted work gets no :rw mount" 201 "$cordon" run $p --trust untrusted --mount "$tmp/wr:/tmp/o:rw" -- true
grep_err "the refusal's code is mount_writable" "mount_writable"
check "untrusted work gets a read-only one" 0 "$cordon" run $p --trust untrusted --mount "$tmp/src:/tmp/in" -- cat /tmp/in/f
check "the jail refuses mounts" 201 "$cordon" run $p --trust trusted --mount "$tmp/src:/tmp/in" -- true
grep_err "its code is mount_unsupported" "mount_unsupported"
check "explain agrees with run on the jail" 201 "$cordon" explain $p --trust trusted --mount "$tmp/src:/tmp/in"
check "exec takes --mount too" 0 "$cordon" exec $p --mount "$tmp/src:/tmp/in" 'test "$(cat /tmp/in/f)" = original'
}

ctier() { # NAME ENGINE RUNTIME
	if [ "$3" = runsc ]; then ul="nofile=1024:1024"; else ul="nofile=1024:1024, nproc=4096:4096"; fi
	extra=""
	[ "$2" = podman ] && extra="    cgroup_manager: cgroupfs"
	cat <<EOF2
  $1:
    driver: $2
    helper: $(cd "$top" && pwd)/agent/cordon-agent
    image: "$(cat /var/lib/cordon-ci/image-ref)"
    runtime: $3
$extra
    ulimits: [$ul]
    limits: {memory: 256MiB, pids: 64, wall: 60s}
EOF2
}
if [ -r /var/lib/cordon-ci/image-ref ] && command -v podman >/dev/null 2>&1 &&
	command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
	mkdir -m 755 "$tmp/plugins"
	cp "$top/plugins/podman/.libs/podman.so" "$top/plugins/docker/.libs/docker.so" "$tmp/plugins/"
	{
		printf 'cordon: 1\nplugins: {load: [podman, docker]}\ntiers:\n'
		ctier podman podman runc
		ctier docker docker runc
		ctier docker-gvisor docker runsc
		printf 'trust:\n  semi-trusted: {require: kernel, tiers: [podman, docker, docker-gvisor]}\n'
	} >"$tmp/c.yaml"
	for t in podman docker docker-gvisor; do
		a="--policy $tmp/c.yaml --plugin-dir $tmp/plugins --tier $t"
		rm -f "$tmp/wr/w"
		# shellcheck disable=SC2086 # $a is a list of words
		{
		check "$t: a read-only mount is readable" 0 timeout 120 "$cordon" run $a --mount "$tmp/src:/data" -- cat /data/f
		grep_out "$t: the work reads the host's file" original
		check "$t: a write into a read-only mount fails" 9 timeout 120 "$cordon" run $a --mount "$tmp/src:/data" -- sh -c 'echo x >/data/new || exit 9'
		if [ -e "$tmp/src/new" ]; then not_ok "$t: nothing was written"; else ok "$t: nothing was written"; fi
		check "$t: :rw writes land on the host" 0 timeout 120 "$cordon" run $a --mount "$tmp/wr:/data:rw" -- sh -c 'echo w >/data/w'
		if [ "$(cat "$tmp/wr/w" 2>/dev/null)" = w ]; then ok "$t: the host has the file"; else not_ok "$t: the host has the file"; fi
		check "$t: a symbolic link is refused" 201 timeout 120 "$cordon" run $a --mount "$tmp/link:/data" -- true
		}
	done
	if ls /run/cordon/oci 2>/dev/null | grep -q -- '-m[0-9]'; then not_ok "no staged mount is left"; else ok "no staged mount is left"; fi
elif [ "${CORDON_REQUIRE:-}" = all ]; then
	not_ok "containers: --mount (CORDON_REQUIRE=all: no podman, docker or pinned image here)"
else
	n=$((n + 1)); echo "ok $n # SKIP podman, docker or the pinned image is missing"
fi
tap_finish
