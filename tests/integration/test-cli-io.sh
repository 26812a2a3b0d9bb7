#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The CLI's I/O as users meet it (issue 15, item 1), on the jail, the kernel tier and a
# container tier (podman: daemonless, so test-containers' dockerd restarts cannot race it):
# stdin passed through and streamed (more than a pipe buffer, a slow producer's line reaching
# the work while stdin is still open), output live, and closed pipes on either side ending
# cleanly with the right status.
set -u
cordon="${CORDON_TOP_BUILDDIR:-.}/cordon"
top="${CORDON_TOP_BUILDDIR:-.}"
. "${CORDON_TOP_SRCDIR:-.}/tests/integration/tap.sh"
io="${CORDON_TOP_SRCDIR:-.}/tests/integration/cli-io.py"
py=/usr/bin/python3
unset CORDON_POLICY

skip_or_fail() { # a part that cannot run here: a failure under CORDON_REQUIRE=all
	if [ "${CORDON_REQUIRE:-}" = all ]; then not_ok "$1 (CORDON_REQUIRE=all)"; else
		n=$((n + 1)); echo "ok $n # SKIP $1"; fi
}
elapsed() { start=$(date +%s); "$@"; echo $(($(date +%s) - start)) >"$tmp/took"; }

# A container tier when the engines are set up (.ci/engines.sh), as test-containers has them.
containers_missing() {
	[ "$(id -u)" = 0 ] || { echo "container tiers run as root"; return; }
	[ -r /var/lib/cordon-ci/image-ref ] || { echo "no pinned image: run .ci/engines.sh"; return; }
	command -v podman >/dev/null 2>&1 || { echo "podman is not installed"; return; }
	podman image exists "$(cat /var/lib/cordon-ci/image-ref)" ||
		{ echo "podman lacks the pinned image: run .ci/engines.sh"; return; }
}
why=$(containers_missing)
tiers="jail kernel"
if [ -z "$why" ]; then
	tiers="$tiers podman"
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
else
	skip_or_fail "container tier: $why"
fi

args_for() {
	case $1 in
	jail) echo "--trust trusted --tier jail" ;;
	kernel) echo "--tier kernel" ;;
	podman) echo "--policy $tmp/c.yaml --plugin-dir $tmp/plugins --tier podman" ;;
	esac
}

for t in $tiers; do
	a=$(args_for "$t")
	# shellcheck disable=SC2086 # $a is a list of words
	check "$t: echo hi | cordon run -- cat" 0 sh -c 'echo hi | "$@"' sh "$cordon" run $a -- cat
	if [ "$(cat "$tmp/out")" = hi ]; then ok "$t: stdin reaches the work"; else not_ok "$t: stdin reaches the work"; fi
	head -c 3000000 /dev/urandom >"$tmp/big"
	check "$t: 3 MB of stdin (more than a pipe buffer) through cat" 0 sh -c '"$@" <"$0"' "$tmp/big" "$cordon" run $a -- cat
	if cmp -s "$tmp/big" "$tmp/out"; then ok "$t: the 3 MB come back byte-exact"; else not_ok "$t: the 3 MB come back byte-exact"; fi
	check "$t: stdin is streamed: a slow producer's first line is answered while stdin is open" 0 "$py" "$io" handshake "$cordon" run $a --
	check "$t: stdout is live: 'a' arrives 2 s before 'b'" 0 "$py" "$io" live "$cordon" run $a --
	elapsed sh -c 'yes | "$@" >"$0"; echo $? >"$0.rc"' "$tmp/out" "$cordon" run $a -- head -n 2
	if [ "$(cat "$tmp/out.rc")" = 0 ] && [ "$(cat "$tmp/out")" = "$(printf 'y\ny')" ] && [ "$(cat "$tmp/took")" -le 30 ]; then
		ok "$t: yes | cordon run -- head -n 2: the work ends early, exit 0"
	else not_ok "$t: yes | cordon run -- head -n 2 (exit $(cat "$tmp/out.rc"), $(cat "$tmp/took")s)"; fi
	rm -f "$tmp/fifo" && mkfifo "$tmp/fifo"
	sleep 60 >"$tmp/fifo" &
	producer=$!
	elapsed sh -c '"$@" <"$0"; echo $? >"$0.rc"' "$tmp/fifo" "$cordon" run $a -- true
	kill "$producer" 2>/dev/null
	wait "$producer" 2>/dev/null
	if [ "$(cat "$tmp/fifo.rc")" = 0 ] && [ "$(cat "$tmp/took")" -le 30 ]; then
		ok "$t: work that does not read ends without waiting for a silent producer"
	else not_ok "$t: work that does not read ends without waiting for a silent producer ($(cat "$tmp/took")s)"; fi
	check "$t: work that closes its stdin under a fast producer" 0 sh -c 'yes | "$@"' sh "$cordon" run $a -- sh -c 'exec 0<&-; echo closed'
	# An engine drops output written just before its exec'd process exits while stdin is
	# still streamed (podman: about 2 in 5): the agent's answer must survive that, each time.
	lost=0
	for i in 1 2 3 4 5 6 7 8; do
		out=$(yes | "$cordon" run $a -- sh -c 'echo answered' 2>"$tmp/err")
		[ "$out" = answered ] || lost=$((lost + 1))
	done
	if [ "$lost" = 0 ]; then ok "$t: 8 of 8 runs that end under a streaming producer keep their output"
	else not_ok "$t: $lost of 8 runs that end under a streaming producer lost their output"; sed 's/^/# /' "$tmp/err"; fi
	check "$t: the work's own exit status after reading stdin" 5 sh -c 'echo x | "$@"' sh "$cordon" run $a -- sh -c 'cat >/dev/null; exit 5'
	check "$t: a closed stdin is no stdin" 0 sh -c '"$@" <&-' sh "$cordon" run $a -- cat
	if [ ! -s "$tmp/out" ]; then ok "$t: cat of a closed stdin prints nothing"; else not_ok "$t: cat of a closed stdin prints nothing"; fi
	check "$t: --json takes stdin too" 0 sh -c 'echo hi | "$@"' sh "$cordon" run --json $a -- cat
	if grep -q '"stdout":"hi\\n"' "$tmp/out"; then ok "$t: --json shows the piped stdin"; else not_ok "$t: --json shows the piped stdin"; sed 's/^/# /' "$tmp/out"; fi
done

# The reader goes away while the work reads a stream: cordon exits as a program that died of
# SIGPIPE would (141), soon.
elapsed sh -c 'yes | "$@" | head -c1 >/dev/null; echo done >"$0"' "$tmp/done" "$cordon" run --tier kernel -- cat
if [ "$(cat "$tmp/took")" -le 10 ]; then ok "yes | cordon run -- cat | head -c1 ends soon"; else not_ok "yes | cordon run -- cat | head -c1 ends soon ($(cat "$tmp/took")s)"; fi
check "a reader that is gone: exit 141" 141 sh -c 'yes | "$@" >&-' sh "$cordon" run --tier kernel -- cat

tap_finish
