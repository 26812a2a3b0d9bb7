#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# E2B's official JavaScript SDK against `cordon server` (TAP): starts the server on a free
# loopback port with a policy whose server: section maps `base` to semi-trusted (the kernel
# tier) and `strict` to untrusted (refused: no microVM), runs tests/e2b/sdk-test.mjs, then
# stops the server with SIGTERM and checks that it killed what was still running.
# The SDK is installed by `npm ci --prefix tests/e2b` (.ci/test-setup.sh), pinned by
# tests/e2b/package-lock.json.
set -u

top_builddir=${CORDON_TOP_BUILDDIR:?run through make check}
top_srcdir=${CORDON_TOP_SRCDIR:?run through make check}

skip_all() {
	if [ "${CORDON_REQUIRE:-}" = all ]; then
		echo "Bail out! CORDON_REQUIRE=all: $1"
		exit 1
	fi
	echo "1..0 # SKIP $1"
	exit 0
}

[ -x "$top_builddir/cordon-server" ] || skip_all "cordon server is not built (configure found no libmicrohttpd or json-c)"
command -v node >/dev/null 2>&1 || skip_all "node is not installed (apt-get install nodejs)"
# The SDK of the lockfile: this checkout's (npm ci --prefix tests/e2b) or the one
# .ci/test-setup.sh installs for every checkout, at the pinned version only.
want=$(sed -n 's/^ *"e2b": "\([^"]*\)".*/\1/p' "$top_srcdir/tests/e2b/package.json")
sdk=
for d in "$top_srcdir/tests/e2b" /var/lib/cordon-ci/e2b-sdk; do
	have=$(sed -n 's/^ *"version": "\([^"]*\)".*/\1/p' "$d/node_modules/e2b/package.json" 2>/dev/null)
	if [ -n "$want" ] && [ "$have" = "$want" ]; then sdk=$d/node_modules; break; fi
done
[ -n "$sdk" ] || skip_all "E2B's SDK $want is not installed: .ci/test-setup.sh (or npm ci --prefix tests/e2b)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cordon-e2b-XXXXXX") || exit 1
# The script runs from here, beside the SDK it imports (ES modules ignore NODE_PATH).
cp "$top_srcdir/tests/e2b/sdk-test.mjs" "$tmp/"
ln -s "$sdk" "$tmp/node_modules"
server_pid=
cleanup() {
	[ -n "$server_pid" ] && kill -KILL "$server_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
umask 077
key="e2b_$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')"
printf '# the API keys of the test\n%s\n' "$key" >"$tmp/keys"
cat >"$tmp/policy.yaml" <<'YAML'
cordon: 1
tiers:
  jail:   {driver: local, confine: none}
  kernel: {driver: local, confine: kernel}
trust:
  trusted:      {require: process-jail, tiers: [jail]}
  semi-trusted: {require: kernel, tiers: [kernel]}
  untrusted:    {require: microvm, tiers: []}
server:
  templates:
    base:   {trust: semi-trusted}
    strict: {trust: untrusted}
  sandboxes_per_key: 3
  max_timeout: 1h
YAML

"$top_builddir/cordon" server --listen 127.0.0.1:0 --api-keys "$tmp/keys" \
	--policy "$tmp/policy.yaml" >"$tmp/out" 2>"$tmp/err" &
server_pid=$!
port=
for _ in $(seq 1 100); do
	port=$(sed -n 's/^cordon server: listening on .* port \([0-9]*\) .*/\1/p' "$tmp/out")
	[ -n "$port" ] && break
	kill -0 "$server_pid" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$port" ]; then
	echo "Bail out! cordon server did not start: $(cat "$tmp/out" "$tmp/err")"
	exit 1
fi

mark="600.$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')"
CORDON_TEST_MARK=$mark E2B_API_URL="http://127.0.0.1:$port" E2B_SANDBOX_URL="http://127.0.0.1:$port" \
	E2B_API_KEY="$key" timeout 300 node "$tmp/sdk-test.mjs" >"$tmp/tap" 2>&1 &
node_pid=$!
# The script ends by holding a command in a sandbox; the server is stopped under it.
while kill -0 "$node_pid" 2>/dev/null && ! grep -q '^# holding$' "$tmp/tap"; do
	sleep 0.1
done

# The held command, seen from the host (the kernel tier's init is not the server's
# child: it is found by its unique argument).
for _ in $(seq 1 50); do
	kids=$(pgrep -f "^sleep $mark\$")
	[ -n "$kids" ] && break
	sleep 0.1
done
checks=$tmp/checks
: >"$checks"
check() { # check DESCRIPTION COMMAND...: one verdict, printed after the script's
	what=$1
	shift
	if "$@"; then echo "ok - $what" >>"$checks"; else echo "not ok - $what" >>"$checks"; fi
}
check "the command left running is seen before the shutdown" [ -n "$kids" ]

kill -TERM "$server_pid"
for _ in $(seq 1 100); do
	kill -0 "$server_pid" 2>/dev/null || break
	sleep 0.1
done
wait "$server_pid"
src=$?
server_pid=
check "SIGTERM: the server exits 0 (exit $src)" [ "$src" = 0 ]
check "SIGTERM: the server reports no sandbox left" \
	grep -q '^cordon server: stopped, no sandbox left$' "$tmp/out"
left=
for p in $kids; do
	kill -0 "$p" 2>/dev/null && left="$left $p($(cat /proc/"$p"/comm 2>/dev/null))"
done
check "nothing the server started is left running:$left" [ -z "$left" ]
check "no API key in the server's log" sh -c '! grep -qF "$1" "$2" "$3"' sh "$key" "$tmp/out" "$tmp/err"

wait "$node_pid"
rc=$?
grep -v '^# sdk-tests\|^# holding' "$tmp/tap"
n=$(sed -n 's/^# sdk-tests \([0-9]*\)$/\1/p' "$tmp/tap")
if [ -z "$n" ]; then
	n=$(grep -c '^\(not \)\{0,1\}ok ' "$tmp/tap")
	n=$((n + 1))
	echo "not ok $n - the SDK test script ran to its end (exit $rc)"
fi
while read -r line; do
	n=$((n + 1))
	echo "$line" | sed "s/^\(\(not \)\{0,1\}ok\) -/\1 $n -/"
done <"$checks"
if grep -q '^not ok' "$checks" "$tmp/tap"; then
	sed 's/^/# server: /' "$tmp/out" "$tmp/err"
fi
echo "1..$n"
