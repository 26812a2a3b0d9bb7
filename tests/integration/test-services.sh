#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# A policy's services on the kernel tier (issue 14, item 5; docs/network.md, "Services"):
# the work calls a local HTTPS upstream (a CA made here by openssl) through its plain-HTTP
# MODEL_API_BASE_URL; the upstream gets the credential, which the work finds nowhere: not in
# its environment, its files or the memory of its processes (a decoy of the same form in its
# environment is found by each search, so a search that finds nothing is one that works).
# A service whose CA the upstream's certificate does not lead to answers 502; the process
# jail cannot carry services: admission passes it over (explain and run refuse alike).
set -u
cordon="${CORDON_TOP_BUILDDIR:-.}/cordon"
src="${CORDON_TOP_SRCDIR:-.}/tests/integration"
. "$src/tap.sh"
unset CORDON_POLICY
CORDON_PROXY_HELPER="$(cd "${CORDON_TOP_BUILDDIR:-.}" && pwd)/core/net/cordon-proxy"
export CORDON_PROXY_HELPER
for tool in openssl python3; do
	command -v "$tool" >/dev/null || { echo "1..0 # SKIP $tool is not installed"; exit 77; }
done

(
	cd "$tmp" || exit 1
	o() { openssl "$@" 2>/dev/null; }
	o req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
		-days 2 -subj /CN=cordon-test-ca &&
		o req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout other.key \
			-out other.pem -days 2 -subj /CN=cordon-other-ca &&
		o req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv.key -out srv.csr \
			-subj /CN=localhost &&
		printf 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n' >ext &&
		o x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 \
			-extfile ext
) || { echo "1..0 # SKIP openssl could not make the test CA"; exit 77; }

hex() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n'; }
secret="sk-cordon-$(hex)"
decoy="sk-cordon-$(hex)"
sha() { printf %s "$1" | sha256sum | cut -d' ' -f1; }
(umask 077 && printf '%s\n' "$secret" >"$tmp/model-key")

python3 "$src/services-upstream.py" "$tmp/srv.pem" "$tmp/srv.key" "$tmp/heads" >"$tmp/port" &
upstream=$!
trap 'kill $upstream 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port")

policy() { # policy FILE CA TIER
	cat >"$1" <<EOF2
cordon: 1
audit: {path: $tmp/audit.jsonl}
tiers:
  kernel: {driver: local, confine: kernel}
  jail: {driver: local, confine: none}
trust:
  trusted: {tiers: [$3]}
  semi-trusted: {tiers: [$3]}
secrets:
  MODEL_KEY: {file: $tmp/model-key}
services:
  - name: model-api
    upstream: "https://localhost:$port/v1"
    ca: $2
    inject: {header: Authorization, value: "Bearer \${secret:MODEL_KEY}"}
EOF2
}
policy "$tmp/p.yaml" "$tmp/ca.pem" kernel
work=$(cat "$src/services-work.py")

check "policy check accepts the services" 0 "$cordon" policy check "$tmp/p.yaml"
check "the work runs and calls its service" 0 "$cordon" run --policy "$tmp/p.yaml" \
	--env "DECOY=$decoy" -- python3 -c "$work" "$(sha "$secret")" "$(sha "$decoy")"
cp "$tmp/out" "$tmp/result"
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$tmp/result" "$1"; }
if [ "$(field answer)" = "upstream saw /v1/models?q=1" ]; then ok "the upstream answered through the base URL"
else not_ok "the upstream answered through the base URL"; sed 's/^/# /' "$tmp/result"; fi
if grep -q "^Authorization: Bearer $secret\$" "$tmp/heads" 2>/dev/null; then ok "the upstream got the credential"
else not_ok "the upstream got the credential"; sed 's/^/# /' "$tmp/heads"; fi
for where in environ files memory; do
	got=$(field "$where")
	case $got in
	*secret*) not_ok "the secret is not in the work's $where ($got)" ;;
	*) ok "the secret is not in the work's $where" ;;
	esac
done
for where in environ memory; do
	case $(field "$where") in
	*decoy*) ok "the search of $where finds the decoy" ;;
	*) not_ok "the search of $where finds the decoy" ;;
	esac
done
files=$(field files_read)
if [ "$files" -gt 1000 ]; then ok "the file search read $files files"; else not_ok "the file search read $files files"; fi
if grep -q -- "$secret" "$tmp/err" "$tmp/out"; then not_ok "nothing cordon printed holds the secret"
else ok "nothing cordon printed holds the secret"; fi
# The service's connection is in the audit trail, linked to the sandbox, without the credential.
svc_line() { grep '"event":"service"' "$tmp/audit.jsonl" | grep -- "$1" | tail -n 1; }
line=$(svc_line '"verdict":"allowed"')
case $line in
*'"event":"service","decision":"'*'","sandbox":"'*'"service":"model-api","host":"localhost","port":'"$port"',"method":"GET","path":"/models","status":200,"verdict":"allowed","reason":"","bytes":{"up":'*) ok "the service's connection is audited" ;;
*) not_ok "the service's connection is audited"; sed 's/^/# /' "$tmp/audit.jsonl" ;;
esac
if grep -q -- "$secret" "$tmp/audit.jsonl"; then not_ok "the audit trail does not hold the secret"
else ok "the audit trail does not hold the secret"; fi

policy "$tmp/wrong.yaml" "$tmp/other.pem" kernel
: >"$tmp/heads"
check "a wrong CA: the work still runs" 0 "$cordon" run --policy "$tmp/wrong.yaml" -- \
	python3 -c "$work" 0 0 answer-only
case $(python3 -c 'import json,sys; print(json.load(sys.stdin)["answer"])' <"$tmp/out") in
"HTTP 502 cordon: upstream localhost:$port:"*) ok "a wrong CA: the proxy answers 502" ;;
*) not_ok "a wrong CA: the proxy answers 502"; sed 's/^/# /' "$tmp/out" ;;
esac
if [ -s "$tmp/heads" ]; then not_ok "a wrong CA: the upstream got no request"; else ok "a wrong CA: the upstream got no request"; fi
case $(svc_line '"status":502') in
*'"verdict":"refused","reason":"upstream localhost:'"$port"':'*'"bytes":{"up":0,"down":0}}') ok "a wrong CA: audited as refused, with the reason" ;;
*) not_ok "a wrong CA: audited as refused, with the reason"; sed 's/^/# /' "$tmp/audit.jsonl" ;;
esac

policy "$tmp/jail.yaml" "$tmp/ca.pem" jail
# Refused at admission (201), as explain says, never admitted and then failing to open.
check "the process jail refuses a policy with services" 201 "$cordon" run --policy "$tmp/jail.yaml" --trust trusted -- true
if grep -q "services_unsupported" "$tmp/err" && grep -q "jail: cannot carry the policy's services here" "$tmp/err"; then ok "the refusal says why"
else not_ok "the refusal says why"; sed 's/^/# /' "$tmp/err"; fi
check "explain refuses it alike (201)" 201 "$cordon" explain --policy "$tmp/jail.yaml" --trust trusted
if grep -q "refused \[services_unsupported\]" "$tmp/out" && grep -q "jail .*cannot carry the policy's services here" "$tmp/out"; then ok "explain says why"
else not_ok "explain says why"; sed 's/^/# /' "$tmp/out"; fi
chmod 0644 "$tmp/model-key"
check "a key file others can read refuses the sandbox" 203 "$cordon" run --policy "$tmp/p.yaml" -- true
if grep -q "mode 0600" "$tmp/err" && ! grep -q -- "$secret" "$tmp/err"; then ok "the refusal names the mode, not the key"
else not_ok "the refusal names the mode, not the key"; sed 's/^/# /' "$tmp/err"; fi
tap_finish
