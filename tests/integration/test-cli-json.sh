#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# --json on every command, refusals and errors included (one object: class, code, message,
# and the decision when there is one), and the exit codes cordon(1) documents (issue 15,
# item 3): a refusal (201) is also told from the work's own statuses by the object it prints.
set -u
cordon="${CORDON_TOP_BUILDDIR:-.}/cordon"
. "${CORDON_TOP_SRCDIR:-.}/tests/integration/tap.sh"
unset CORDON_POLICY
py=/usr/bin/python3
# json_is DESCRIPTION PYTHON-EXPR: every stdout line is one JSON object, and EXPR (over o, the
# last one, and objs, all of them) holds.
json_is() {
	if "$py" -c 'import json, sys
objs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
o = objs[-1] if objs else None
sys.exit(0 if objs and ('"$2"') else 1)' "$tmp/out" 2>"$tmp/pyerr"; then ok "$1"; else
		not_ok "$1"; sed 's/^/# /' "$tmp/out" "$tmp/pyerr"; fi
}
printf 'cordon: 1\ntiers:\n  kernel: {driver: local, confine: kernel}\ntrust:\n  semi-trusted: {require: kernel, tiers: [kernel]}\nrules:\n  - {name: no-ci, when: {labels: {origin: ci}}, deny: true}\n' >"$tmp/p.yaml"
printf 'cordon: 1\ntiers: {x: {driver: local, confine: nope}}\nbogus: 1\n' >"$tmp/bad.yaml"
p="--policy $tmp/p.yaml"

# shellcheck disable=SC2086 # $p is two words
{
check "run --json: the work's result" 3 "$cordon" run --json $p -- sh -c 'echo out; exit 3'
json_is "the result object has the work's exit code and no error" 'o["exit_code"] == 3 and o["stdout"] == "out\n" and "error" not in o'
check "run --json: a work that exits 77 itself" 77 "$cordon" run --json $p -- sh -c 'exit 77'
json_is "its object is a result, not an error" '"error" not in o and o["exit_code"] == 77'
check "run --json: a refusal exits 201" 201 "$cordon" run --json $p --label origin=ci -- true
json_is "a refusal is one error object with class, code, message and the decision" 'len(objs) == 1 and o["error"]["class"] == "forbidden" and o["error"]["code"] == "sandbox_denied" and "no-ci" in o["error"]["message"] and o["decision"]["admitted"] is False'
json_is "the decision names the rule on its candidate" 'any(c.get("rule") == "no-ci" for c in o["decision"]["candidates"])'
check "exec --json: a refusal too" 201 "$cordon" exec --json $p --label origin=ci 'true'
json_is "exec's refusal is the error object" 'o["error"]["code"] == "sandbox_denied"'
check "run --json: a usage error exits 202" 202 "$cordon" run --json --bogus-flag -- true
json_is "a usage error is an invalid/usage object" 'o["error"]["class"] == "invalid" and o["error"]["code"] == "usage"'
check "run --json: a program that cannot run exits 203" 203 "$cordon" run --json $p -- /nonexistent/program
json_is "its object is terminal exec_failed" 'o["error"]["class"] == "terminal" and o["error"]["code"] == "exec_failed"'
check "run --json: a bad policy exits 202" 202 "$cordon" run --json --policy "$tmp/bad.yaml" -- true
json_is "its object carries the policy's code" 'o["error"]["class"] == "invalid" and o["error"]["code"].startswith("policy_")'
check "run --json: a --limit unit error" 202 "$cordon" run --json $p --limit memory=1MB -- true
json_is "is a usage object naming decimal units" '"decimal units" in o["error"]["message"]'
check "run --json: a refused --env-file" 201 sh -c 'touch "$0" && chmod 666 "$0" && "$@"' "$tmp/env" "$cordon" run --json $p --env-file "$tmp/env" -- true
json_is "is a forbidden/refused object" 'o["error"]["class"] == "forbidden" and o["error"]["code"] == "refused"'
check "without --json a refusal prints nothing on stdout" 201 "$cordon" run $p --label origin=ci -- true
if [ ! -s "$tmp/out" ] && grep -q '^cordon: forbidden \[sandbox_denied\]' "$tmp/err"; then ok "and names class and code on stderr"; else not_ok "and names class and code on stderr"; fi

check "explain --json admitted" 0 "$cordon" explain --json $p --trust semi-trusted
json_is "is the decision" 'o["admitted"] is True and o["tier"] == "kernel"'
check "explain --json refused" 201 "$cordon" explain --json $p --trust semi-trusted --label origin=ci
json_is "is the error object with the decision" 'o["error"]["code"] == "sandbox_denied" and o["decision"]["admitted"] is False'
check "policy check --json valid" 0 "$cordon" policy check --json "$tmp/p.yaml"
json_is "says valid with the summary" 'o["valid"] is True and "kernel" in o["summary"] and o["warnings"] == []'
check "policy check --json invalid exits 1" 1 "$cordon" policy check --json "$tmp/bad.yaml"
json_is "lists every error with its position" 'o["valid"] is False and o["error"]["class"] == "invalid" and all(":" in e for e in o["errors"]) and len(o["errors"]) >= 1'
check "policy check --json of a missing file" 1 "$cordon" policy check --json "$tmp/none.yaml"
json_is "is an invalid verdict" 'o["valid"] is False'
check "policy show --json" 0 "$cordon" policy show --json $p
json_is "has the file and summary" 'o["file"].endswith("p.yaml") and "kernel" in o["summary"]'
check "policy show --default --json" 0 "$cordon" policy show --default --json
json_is "has the default YAML" 'o["default"].startswith("cordon:") or "cordon: 1" in o["default"]'
check "probe --json" 0 "$cordon" probe --json $p
json_is "one object per tier" 'o["tier"] == "kernel" and "available" in o'
check "plugins --json" 0 "$cordon" plugins --json
if [ ! -s "$tmp/out" ]; then ok "plugins --json: nothing found is no output"; else json_is "plugins --json: one object per plugin" '"plugin" in o'; fi
check "version --json" 0 "$cordon" version --json
json_is "has version and plugin ABI" 'o["version"] and o["plugin_abi"].count(".") == 1'
check "gc --json" 0 "$cordon" gc --json $p
json_is "has the count" 'isinstance(o["removed"], int)'
check "image pin --json of a reference no engine has" 203 "$cordon" image pin --json cordon-no-such-image:1
json_is "is a terminal error object" 'o["error"]["class"] == "terminal"'
check "an unknown command with --json" 202 "$cordon" frobnicate --json
json_is "is a usage object" 'o["error"]["code"] == "usage"'
check "--json after -- belongs to the work" 0 "$cordon" run $p -- echo --json
if [ "$(cat "$tmp/out")" = "--json" ]; then ok "the work printed it, cordon did not switch"; else not_ok "the work printed it, cordon did not switch"; fi
}
tap_finish
