#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# cordon run -t and cordon shell on a real pseudo-terminal pair (tests/integration/cli-tty.py
# holds the master, as a terminal emulator does), on the jail and the kernel tier (issue 15,
# item 1): a terminal inside, its size and SIGWINCH resize, typed input, ^C reaching the
# work, and the user's terminal restored on every exit path (normal, the work's own status,
# SIGTERM, an error). A container tier refuses a terminal rather than run without one.
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
	check "$t: ^C interrupts the work (exit 130)" 0 timeout 90 "$py" "$drv" interrupt "$cordon" run -t $a
	check "$t: SIGTERM to cordon: exit 143, the terminal restored" 0 timeout 90 "$py" "$drv" sigterm "$cordon" run -t $a
	check "$t: a program that cannot run: exit 70, the terminal restored" 0 timeout 90 "$py" "$drv" error "$cordon" run -t $a
	check "$t: cordon shell is an interactive shell on a terminal" 0 timeout 90 "$py" "$drv" shell "$cordon" shell $a
	check "$t: a background cordon does not read the terminal (no SIGTTIN stop)" 0 timeout 90 "$py" "$drv" background "$cordon" run $a
	}
done

# -t was --trust's short form before 0.2: the old spelling is a usage error, not a run of a
# program named "trusted".
check "-t trusted -- is a usage error naming --trust" 64 "$cordon" run -t trusted -- true
if grep -q -- "--trust trusted" "$tmp/err"; then ok "the error says --trust"; else not_ok "the error says --trust"; fi
check "--tty with --json is a usage error" 64 "$cordon" run -t --json -- true

# A tier that cannot give a terminal (podman) refuses, and runs nothing.
if [ "$(id -u)" = 0 ] && [ -r /var/lib/cordon-ci/image-ref ] && command -v podman >/dev/null 2>&1; then
	chmod 755 "$tmp"
	mkdir -m 755 "$tmp/plugins"
	cp "$top/plugins/podman/.libs/podman.so" "$tmp/plugins/"
	cat >"$tmp/c.yaml" <<EOF2
cordon: 1
plugins: {load: [podman]}
tiers:
  podman:
    driver: podman
    helper: $(cd "$top" && pwd)/agent/cordon-agent
    image: "$(cat /var/lib/cordon-ci/image-ref)"
    runtime: runc
    cgroup_manager: cgroupfs
    ulimits: [nofile=1024:1024, nproc=4096:4096]
    limits: {memory: 256MiB, pids: 64, wall: 60s}
trust:
  semi-trusted: {require: kernel, tiers: [podman]}
EOF2
	check "podman: -t is refused (no terminal there yet), nothing runs" 0 timeout 90 "$py" "$drv" refused "$cordon" run -t --policy "$tmp/c.yaml" --plugin-dir "$tmp/plugins" --tier podman
elif [ "${CORDON_REQUIRE:-}" = all ]; then
	not_ok "podman: -t is refused (CORDON_REQUIRE=all: no podman or pinned image here)"
else
	n=$((n + 1)); echo "ok $n # SKIP podman or the pinned image is missing"
fi

# cordon's own messages escape control bytes, whoever supplied them (here: the work's argv[0]).
check "an error naming a program with escapes" 70 "$cordon" run --tier kernel -- "$(printf 'x\033]0;pwned\007')"
if grep -q 'x\\x1b]0;pwned\\x07' "$tmp/err" && ! LC_ALL=C grep -q "$(printf '\033')" "$tmp/err"; then
	ok "the message shows them as \\xNN, never raw"; else not_ok "the message shows them as \\xNN, never raw"; od -c "$tmp/err" | sed 's/^/# /' | head; fi

tap_finish
