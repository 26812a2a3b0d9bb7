#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# cordon server's configuration, refused when wrong (TAP): the API keys file's mode and
# contents, the policy's server: section (unknown keys, wrong values, with file:line:column),
# the listen address; and the body cap (413) and the access token (401) of a running server.
set -u
top_builddir=${CORDON_TOP_BUILDDIR:?run through make check}
top_srcdir=${CORDON_TOP_SRCDIR:?run through make check}
. "$top_srcdir/tests/integration/tap.sh"

if [ ! -x "$top_builddir/cordon-server" ]; then
	if [ "${CORDON_REQUIRE:-}" = all ]; then
		echo "Bail out! CORDON_REQUIRE=all: cordon server is not built"
		exit 1
	fi
	echo "1..0 # SKIP cordon server is not built (libmicrohttpd, json-c)"
	exit 0
fi
command -v curl >/dev/null 2>&1 || { echo "Bail out! curl is needed"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cordon-e2b-config-XXXXXX") || exit 1
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
umask 077
key=e2b_0123456789abcdef0123456789abcdef01
echo "$key" >"$tmp/keys"
# the server with the test's keys, as one program (exec: the pid is the server's)
printf '#!/bin/sh\nexec "%s/cordon" server --listen 127.0.0.1:0 --api-keys "%s/keys" "$@"\n' \
	"$top_builddir" "$tmp" >"$tmp/server"
chmod 700 "$tmp/server"
server=$tmp/server

# refused: expect a message fragment and a failing exit
refused() { # WHAT FRAGMENT ARGS...
	what=$1 frag=$2
	shift 2
	out=$(timeout 20 "$@" 2>&1 </dev/null)
	rc=$?
	if [ "$rc" != 0 ] && printf '%s' "$out" | grep -qF -- "$frag"; then ok "$what"
	else not_ok "$what (exit $rc): $out"; fi
}

chmod 644 "$tmp/keys"
refused "a keys file others can read is refused" "chmod 600" "$server"
chmod 600 "$tmp/keys"
echo "not-a-key" >"$tmp/bad-keys"
refused "a malformed key is refused, with its line" "bad-keys:1: an API key is" \
	"$top_builddir/cordon" server --api-keys "$tmp/bad-keys"
refused "--api-keys is required" "--api-keys FILE is required" "$top_builddir/cordon" server
refused "a bad listen address is refused" "expected [IPv4:]PORT" \
	"$top_builddir/cordon" server --listen nowhere:x --api-keys "$tmp/keys"

# Starts "$server" ARGS... in the background; $pid and $port once it prints its port (up to
# 30 s: a loaded host), else a Bail out with what it said and whether it is still alive.
# The old output goes first: the background child truncates it only when it gets to run,
# and a loaded host let the loop read the previous server's port (a dead one) before that.
start_server() {
	rm -f "$tmp/out" "$tmp/err"
	"$server" "$@" >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	port=
	for _ in $(seq 1 300); do
		port=$(sed -n 's/.* port \([0-9]*\) .*/\1/p' "$tmp/out" 2>/dev/null)
		[ -n "$port" ] && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	alive=exited; kill -0 "$pid" 2>/dev/null && alive="still running"
	echo "Bail out! the server printed no port ($alive): $(cat "$tmp/out" "$tmp/err" 2>&1)"
	exit 1
}

policy() { printf 'cordon: 1\nserver:\n%s\n' "$1" >"$tmp/p.yaml"; }
policy '  templates: {base: {trust: semi-trusted}}
  bogus: 1'
refused "an unknown key in server: is refused at its line:column" "p.yaml:4:3: server: unknown key: bogus" \
	"$server" --policy "$tmp/p.yaml"
policy '  templates: {base: {trust: fully}}'
refused "an unknown trust level is refused" "trust is trusted, semi-trusted or untrusted, not fully" \
	"$server" --policy "$tmp/p.yaml"
policy '  templates: {base: {tier: kernel}}'
refused "a template without trust is refused" "missing required key 'trust'" "$server" --policy "$tmp/p.yaml"
policy '  sandboxes_per_key: 3'
refused "server: without templates is refused" "missing required key 'templates'" "$server" --policy "$tmp/p.yaml"
policy '  templates: {base: {trust: semi-trusted}}
  max_body: 10'
refused "a max_body below 4KiB is refused" "between 4KiB and 1GiB" "$server" --policy "$tmp/p.yaml"
printf 'cordon: 1\nserver: [1]\n' >"$tmp/p.yaml"
refused "server: must be a mapping (the library refuses the policy)" "expected a mapping" "$server" --policy "$tmp/p.yaml"

# a running server: the body cap and the envd token
printf 'cordon: 1\ntiers:\n  kernel: {driver: local, confine: kernel}\ntrust:\n  semi-trusted: {require: kernel, tiers: [kernel]}\nserver:\n  templates: {base: {trust: semi-trusted}}\n  max_body: 4KiB\n' >"$tmp/p.yaml"
start_server --policy "$tmp/p.yaml"
url=http://127.0.0.1:$port
head -c 8192 /dev/zero | tr '\0' x >"$tmp/big"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "X-API-Key: $key" --data-binary @"$tmp/big" "$url/sandboxes")
[ "$code" = 413 ] && ok "a body over max_body is a 413" || not_ok "a body over max_body: $code"
created=$(curl -s -H "X-API-Key: $key" -d '{"templateID":"base","timeout":30}' "$url/sandboxes")
id=$(printf '%s' "$created" | sed -n 's/.*"sandboxID":"\([a-z0-9]*\)".*/\1/p')
code=$(curl -s -o /dev/null -w '%{http_code}' -H "E2b-Sandbox-Id: $id" -H "X-Access-Token: wrong" \
	-H 'Content-Type: application/json' -d '{}' "$url/process.Process/List")
[ "$code" = 401 ] && ok "envd without the sandbox's access token is a 401" || not_ok "a wrong token: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "X-API-Key: e2b_ffffffffffffffffffffffffffffffffff" "$url/sandboxes/$id")
[ "$code" = 401 ] && ok "an unknown key is a 401" || not_ok "an unknown key: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "X-API-Key: $key" "$url/sandboxes/$id/pause")
[ "$code" = 400 ] && ok "pause is a clear 400" || not_ok "pause: $code"
kill -TERM "$pid"
wait "$pid" && grep -q 'no sandbox left' "$tmp/out" && ok "SIGTERM kills the live sandbox and exits 0" ||
	not_ok "SIGTERM: $(cat "$tmp/out" "$tmp/err")"
pid=
if grep -qF "$key" "$tmp/out" "$tmp/err"; then not_ok "the key reached the log"; else ok "no key in the log"; fi

# TLS with the administrator's pair; the e2b plugin verifies it (ca_file adds the CA, and
# without it the probe fails on verification: never a downgrade).
if ! command -v openssl >/dev/null 2>&1; then
	if [ "${CORDON_REQUIRE:-}" = all ]; then not_ok "openssl is needed for the TLS checks"
	else ok "# SKIP openssl is not installed: no TLS checks"; fi
	tap_finish
	exit
fi
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/tls.key" -out "$tmp/tls.crt" -days 1 \
	-subj /CN=localhost -addext "subjectAltName=IP:127.0.0.1" >/dev/null 2>&1
start_server --policy "$tmp/p.yaml" --tls-cert "$tmp/tls.crt" --tls-key "$tmp/tls.key"
# The port is printed when the listener exists; its TLS side may take a moment longer on a
# loaded host (ASan): ask for up to 30 s before calling it broken.
code=$(curl -s -o /dev/null -w '%{http_code}' --retry 30 --retry-connrefused --retry-delay 1 \
	--max-time 60 --cacert "$tmp/tls.crt" -H "X-API-Key: $key" "https://127.0.0.1:$port/sandboxes")
alive=exited; kill -0 "$pid" 2>/dev/null && alive="running"
[ "$code" = 200 ] && ok "TLS: the API answers over https" ||
	not_ok "TLS: $code on port $port (server $alive): $(cat "$tmp/out" "$tmp/err")"
echo "$key" >"$tmp/key"
plugins=$tmp/plugins
mkdir -m 700 "$plugins" && cp "$top_builddir/plugins/e2b/.libs/e2b.so" "$plugins/" && chmod 644 "$plugins/e2b.so"
cat >"$tmp/client.yaml" <<YAML
cordon: 1
plugins: {dir: $plugins, load: [e2b]}
tiers:
  verified: {driver: e2b, api_url: "https://127.0.0.1:$port", api_key: {file: $tmp/key}, ca_file: $tmp/tls.crt}
  unknown_ca: {driver: e2b, api_url: "https://127.0.0.1:$port", api_key: {file: $tmp/key}}
trust:
  untrusted: {require: remote, tiers: [verified, unknown_ca]}
YAML
probe=$("$top_builddir/cordon" probe --policy "$tmp/client.yaml" 2>&1)
echo "$probe" | grep -q '^verified .* available .*takes the key' && ok "e2b over TLS with the CA: available" ||
	not_ok "e2b over TLS with the CA: $probe"
echo "$probe" | grep -q '^unknown_ca .* unavailable .*SSL' && ok "e2b over TLS without the CA: refused by verification" ||
	not_ok "e2b over TLS without the CA: $probe"
kill -TERM "$pid"
wait "$pid"
pid=
tap_finish
