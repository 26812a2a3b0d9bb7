#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# cordon run -t and cordon shell on a real pseudo-terminal pair (tests/integration/cli-tty.py
# holds the master, as a terminal emulator does), on the jail and the kernel tier (issue 15,
# item 1): a terminal inside, its size and SIGWINCH resize, typed input, ^C reaching the
# work, and the user's terminal restored on every exit path (normal, the work's own status,
# SIGTERM, an error), on the container tiers (podman, docker, gVisor) and the microVM
# tier (kvm under TCG) through the agent, and on the remote tier (e2b) through cordon server.
# cordon's own messages never pass the work's control bytes to the terminal.
set -u
cordon="${CORDON_TOP_BUILDDIR:-.}/cordon"
top="${CORDON_TOP_BUILDDIR:-.}"
. "${CORDON_TOP_SRCDIR:-.}/tests/integration/tap.sh"
drv="${CORDON_TOP_SRCDIR:-.}/tests/integration/cli-tty.py"
py=/usr/bin/python3
unset CORDON_POLICY

for t in jail kernel; do
	case $t in
	jail) a="--trust trusted --tier jail" ;;
	kernel) a="--tier kernel" ;;
	esac
	# shellcheck disable=SC2086 # $a is a list of words
	{
	check "$t: -t gives the work a terminal of the caller's size; its status passes" 0 timeout 90 "$py" "$drv" basic "$cordon" run -t $a
	check "$t: a resize reaches the work as SIGWINCH with the new size; raw while it runs" 0 timeout 90 "$py" "$drv" resize "$cordon" run -t $a
	check "$t: typed input reaches the work through its terminal" 0 timeout 90 "$py" "$drv" typed "$cordon" run --tty $a
	check "$t: input typed before the work starts reaches it" 0 timeout 90 "$py" "$drv" typeahead "$cordon" run -t $a
	check "$t: ^C interrupts the work (exit 130)" 0 timeout 90 "$py" "$drv" interrupt "$cordon" run -t $a
	check "$t: ^Z leaves the work running, never stopped" 0 timeout 90 "$py" "$drv" suspend "$cordon" run -t $a
	check "$t: SIGTERM to cordon: exit 143, the terminal restored" 0 timeout 90 "$py" "$drv" sigterm "$cordon" run -t $a
	check "$t: a program that cannot run: exit 203, the terminal restored" 0 timeout 90 "$py" "$drv" error "$cordon" run -t $a
	check "$t: cordon shell is an interactive shell on a terminal" 0 timeout 90 "$py" "$drv" shell "$cordon" shell $a
	check "$t: the work's control bytes reach the terminal as they are" 0 timeout 90 "$py" "$drv" passthrough "$cordon" run -t $a
	check "$t: a background cordon does not read the terminal (no SIGTTIN stop)" 0 timeout 90 "$py" "$drv" background "$cordon" run $a
	}
done

# -t was --trust's short form before 0.2: the old spelling is a usage error, not a run of a
# program named "trusted".
check "-t trusted -- is a usage error naming --trust" 202 "$cordon" run -t trusted -- true
if grep -q -- "--trust trusted" "$tmp/err"; then ok "the error says --trust"; else not_ok "the error says --trust"; fi
check "--tty with --json is a usage error" 202 "$cordon" run -t --json -- true

# The container tiers: the agent's pseudo-terminal inside the container (issue 15, item 1),
# relayed over the session channel. gVisor's terminal sends the work no SIGWINCH and no
# SIGINT for ^C (its line discipline does not signal the foreground group): the agent does it
# there (docs/tiers/containers.md), so every case runs on every runtime.
# docker restarts under test-containers: run under the lock.
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
if [ "$(id -u)" = 0 ] && [ -r /var/lib/cordon-ci/image-ref ] && command -v podman >/dev/null 2>&1 &&
	command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
	chmod 755 "$tmp"
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
		# shellcheck disable=SC2086 # $a is a list of words
		{
		check "$t: -t gives the work a terminal inside the container, of the caller's size" 0 timeout 90 "$py" "$drv" basic "$cordon" run -t $a
		check "$t: typed input reaches the work through its terminal" 0 timeout 90 "$py" "$drv" typed "$cordon" run -t $a
		check "$t: cordon shell is an interactive shell on a terminal" 0 timeout 90 "$py" "$drv" shell "$cordon" shell $a
		check "$t: SIGTERM to cordon: exit 143, the terminal restored" 0 timeout 90 "$py" "$drv" sigterm "$cordon" run -t $a
		check "$t: a program that cannot run: exit 203, the terminal restored" 0 timeout 90 "$py" "$drv" error "$cordon" run -t $a
		check "$t: the work's control bytes reach the terminal as they are, as on the kernel tier" 0 timeout 90 "$py" "$drv" passthrough "$cordon" run -t $a
		check "$t: a resize reaches the work as SIGWINCH with the new size" 0 timeout 90 "$py" "$drv" resize "$cordon" run -t $a
		check "$t: ^C interrupts the work (exit 130)" 0 timeout 90 "$py" "$drv" interrupt "$cordon" run -t $a
		check "$t: ^Z leaves the work running, never stopped" 0 timeout 90 "$py" "$drv" suspend "$cordon" run -t $a
		}
	done
elif [ "${CORDON_REQUIRE:-}" = all ]; then
	not_ok "containers: -t (CORDON_REQUIRE=all: no podman, docker or pinned image here)"
else
	n=$((n + 1)); echo "ok $n # SKIP podman, docker or the pinned image is missing"
fi

# The remote tier (the e2b plugin) against cordon server on this host: envd's pty (Start's pty
# size, SendInput's pty bytes, Update's resize) behind the core's terminal, the server's own
# sandbox on the kernel tier. Every case the kernel tier has, ^C and resize included.
if [ -x "$top/cordon-server" ] && [ -r "$top/plugins/e2b/.libs/e2b.so" ]; then
	key=e2b_0123456789abcdef0123456789abcdef01
	(umask 077 && echo "$key" >"$tmp/keys" && echo "$key" >"$tmp/key")
	printf 'cordon: 1\ntiers:\n  kernel: {driver: local, confine: kernel, limits: {wall: 90s}}\ntrust:\n  semi-trusted: {require: kernel, tiers: [kernel]}\nserver:\n  templates: {base: {trust: semi-trusted}}\n' >"$tmp/server.yaml"
	"$top/cordon-server" --listen 127.0.0.1:0 --api-keys "$tmp/keys" --policy "$tmp/server.yaml" \
		>"$tmp/server.out" 2>"$tmp/server.err" &
	server_pid=$!
	trap 'kill "$server_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
	port=
	for _ in $(seq 1 100); do
		port=$(sed -n 's/.* port \([0-9]*\) .*/\1/p' "$tmp/server.out")
		[ -n "$port" ] && break
		sleep 0.1
	done
	chmod 755 "$tmp"
	mkdir -p -m 755 "$tmp/plugins"
	cp "$top/plugins/e2b/.libs/e2b.so" "$tmp/plugins/"
	chmod 644 "$tmp/plugins/e2b.so"
	cat >"$tmp/e2b.yaml" <<EOF2
cordon: 1
plugins: {load: [e2b]}
tiers:
  remote:
    driver: e2b
    api_url: "http://127.0.0.1:$port"
    sandbox_url: "http://127.0.0.1:$port"
    api_key: {file: $tmp/key}
    limits: {wall: 90s}
trust:
  untrusted: {require: remote, tiers: [remote]}
EOF2
	a="--policy $tmp/e2b.yaml --plugin-dir $tmp/plugins --trust untrusted --tier remote"
	# shellcheck disable=SC2086 # $a is a list of words
	{
	check "e2b: -t gives the work a terminal on the remote side, of the caller's size" 0 timeout 90 "$py" "$drv" basic "$cordon" run -t $a
	check "e2b: a resize reaches the work as SIGWINCH with the new size (Update)" 0 timeout 90 "$py" "$drv" resize "$cordon" run -t $a
	check "e2b: typed input reaches the work through its terminal (SendInput pty)" 0 timeout 90 "$py" "$drv" typed "$cordon" run -t $a
	check "e2b: input typed before the work starts reaches it" 0 timeout 90 "$py" "$drv" typeahead "$cordon" run -t $a
	check "e2b: ^C interrupts the work (exit 130)" 0 timeout 90 "$py" "$drv" interrupt "$cordon" run -t $a
	check "e2b: ^Z leaves the work running, never stopped" 0 timeout 90 "$py" "$drv" suspend "$cordon" run -t $a
	check "e2b: SIGTERM to cordon: exit 143, the terminal restored" 0 timeout 90 "$py" "$drv" sigterm "$cordon" run -t $a
	check "e2b: a program that cannot run: exit 203, the terminal restored" 0 timeout 90 "$py" "$drv" error "$cordon" run -t $a
	check "e2b: cordon shell is an interactive shell on a terminal" 0 timeout 90 "$py" "$drv" shell "$cordon" shell $a
	check "e2b: the work's control bytes reach the terminal as they are" 0 timeout 90 "$py" "$drv" passthrough "$cordon" run -t $a
	}
	kill "$server_pid" 2>/dev/null
	wait "$server_pid" 2>/dev/null
elif [ "${CORDON_REQUIRE:-}" = all ]; then
	not_ok "e2b: -t (CORDON_REQUIRE=all: cordon server or the e2b plugin is not built)"
else
	n=$((n + 1)); echo "ok $n # SKIP cordon server or the e2b plugin is not built"
fi

# The microVM tier (kvm, accel: tcg here): the guest agent's pseudo-terminal, relayed over
# the VM's channel. The guest is built from the kernel package .ci/test-setup.sh fetched.
deb="${CORDON_CI_STATE:-/var/lib/cordon-ci}/vm/linux-image-cloud-amd64.deb"
if [ "$(id -u)" = 0 ] && command -v qemu-system-x86_64 >/dev/null 2>&1 && [ -r "$deb" ] &&
	"$cordon" vm build --kernel-deb "$deb" --agent "$top/agent/cordon-agent" --out "$tmp/vm" >"$tmp/vm.out" 2>"$tmp/vm.err"; then
	pin() { sed -n "s/^$1: //p" "$tmp/vm.out"; }
	chmod 755 "$tmp"
	mkdir -p -m 755 "$tmp/plugins"
	cp "$top/plugins/kvm/.libs/kvm.so" "$tmp/plugins/"
	cat >"$tmp/vm.yaml" <<EOF2
cordon: 1
plugins: {load: [kvm]}
tiers:
  vm:
    driver: kvm
    accel: tcg
    kernel: $(pin kernel)
    kernel_sha256: $(pin kernel_sha256)
    initrd: $(pin initrd)
    initrd_sha256: $(pin initrd_sha256)
    limits: {memory: 192MiB, pids: 64, wall: 120s}
trust:
  trusted: {require: process-jail, tiers: [vm]}
EOF2
	a="--policy $tmp/vm.yaml --plugin-dir $tmp/plugins --trust trusted --tier vm"
	# shellcheck disable=SC2086 # $a is a list of words
	{
	check "vm: -t gives the work a terminal inside the guest, of the caller's size" 0 timeout 120 "$py" "$drv" basic "$cordon" run -t $a
	check "vm: a resize reaches the work as SIGWINCH with the new size" 0 timeout 120 "$py" "$drv" resize "$cordon" run -t $a
	check "vm: typed input reaches the work through its terminal" 0 timeout 120 "$py" "$drv" typed "$cordon" run -t $a
	check "vm: input typed before the guest boots reaches the work" 0 timeout 120 "$py" "$drv" typeahead "$cordon" run -t $a
	check "vm: keys typed all through the boot reach the work, in order" 0 timeout 120 "$py" "$drv" typeahead_slow "$cordon" run -t $a
	check "vm: ^C interrupts the work (exit 130)" 0 timeout 120 "$py" "$drv" interrupt "$cordon" run -t $a
	}
elif [ "${CORDON_REQUIRE:-}" = all ]; then
	not_ok "vm: -t (CORDON_REQUIRE=all: not root, no QEMU, no guest kernel package, or the guest build failed: $(cat "$tmp/vm.err" 2>/dev/null))"
else
	n=$((n + 1)); echo "ok $n # SKIP not root, QEMU or the guest kernel package missing"
fi

# cordon's own messages escape control bytes, whoever supplied them (here: the work's argv[0]).
check "an error naming a program with escapes" 203 "$cordon" run --tier kernel -- "$(printf 'x\033]0;pwned\007')"
if grep -q 'x\\x1b]0;pwned\\x07' "$tmp/err" && ! LC_ALL=C grep -q "$(printf '\033')" "$tmp/err"; then
	ok "the message shows them as \\xNN, never raw"; else not_ok "the message shows them as \\xNN, never raw"; od -c "$tmp/err" | sed 's/^/# /' | head; fi

tap_finish
