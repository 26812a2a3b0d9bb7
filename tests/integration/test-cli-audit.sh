#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The outcome audit through the command line (issue 15, item 8): `cordon run` leaves a
# decision line and a run line linked by the decision's id, and `cordon audit` reads the
# trail back and filters it by sandbox, decision, verdict, event and time, as text or JSON.
set -u
cordon="${CORDON_TOP_BUILDDIR:-.}/cordon"
. "${CORDON_TOP_SRCDIR:-.}/tests/integration/tap.sh"
unset CORDON_POLICY
py=/usr/bin/python3
# json_is DESCRIPTION PYTHON-EXPR: stdout is one JSON array (a), and EXPR holds.
json_is() {
	if "$py" -c 'import json, sys
a = json.load(open(sys.argv[1]))
sys.exit(0 if isinstance(a, list) and ('"$2"') else 1)' "$tmp/out" 2>"$tmp/pyerr"; then ok "$1"; else
		not_ok "$1"; sed 's/^/# /' "$tmp/out" "$tmp/pyerr"; fi
}
trail="$tmp/audit.jsonl"
printf 'cordon: 1\ntiers: {jail: {driver: local, confine: none}}\ntrust:\n  trusted: {require: process-jail, tiers: [jail]}\n  untrusted: {require: microvm, tiers: [jail]}\naudit: {path: %s, record_argv: full}\n' "$trail" >"$tmp/p.yaml"
printf 'cordon: 1\ntiers: {jail: {driver: local, confine: none}}\ntrust: {trusted: {tiers: [jail]}}\n' >"$tmp/none.yaml"
p="--policy $tmp/p.yaml"

# shellcheck disable=SC2086 # $p is two words
{
check "a run that exits 3" 3 "$cordon" run $p --trust trusted --caller "agent session 7" -- sh -c 'echo out; echo e >&2; exit 3'
check "a second run, killed by a signal" 137 env CORDON_CALLER=from-env "$cordon" run $p --trust trusted -- sh -c 'kill -9 $$'
check "a refused run" 201 "$cordon" run $p --trust untrusted -- true
check "audit --json reads the whole trail" 0 "$cordon" audit $p --json
json_is "two decisions admitted, one refused, two runs" '[(o["event"], o.get("admitted")) for o in a] == [("decision", True), ("run", None), ("decision", True), ("run", None), ("decision", False)]'
json_is "each run names its decision's id and a sandbox of its own" 'a[1]["decision"] == a[0]["id"] and a[3]["decision"] == a[2]["id"] and a[1]["sandbox"] != a[3]["sandbox"]'
json_is "the first run: argv in full, exit 3, its bytes, no limit hit, the caller" 'a[1]["argv"] == ["sh", "-c", "echo out; echo e >&2; exit 3"] and a[1]["exit_code"] == 3 and a[1]["signal"] is None and a[1]["bytes_out"] == {"stdout": 4, "stderr": 2} and a[1]["limits_hit"] == [] and a[1]["caller"]["uid"] == '"$(id -u)"' and a[1]["duration_ms"] >= 0'
json_is "the second run: signal 9, no exit code" 'a[3]["signal"] == 9 and a[3]["exit_code"] is None'
json_is "--caller is the caller label of the decision and of its run" 'a[0]["caller"]["label"] == a[1]["caller"]["label"] == "agent session 7"'
json_is "else \$CORDON_CALLER is" 'a[2]["caller"]["label"] == a[3]["caller"]["label"] == "from-env"'
json_is "a run without either has none" 'a[4]["caller"]["label"] is None'
sb=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))[3]["sandbox"])' "$tmp/out")
dec=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["id"])' "$tmp/out")
check "audit --sandbox" 0 "$cordon" audit $p --json --sandbox "$sb"
json_is "gives that sandbox's run and the decision that opened it" 'len(a) == 2 and a[0]["event"] == "decision" and a[1]["sandbox"] == "'"$sb"'" and a[1]["decision"] == a[0]["id"]'
check "audit --decision" 0 "$cordon" audit --file "$trail" --json --decision "$dec"
json_is "gives the decision and its run" 'len(a) == 2 and a[0]["id"] == "'"$dec"'" and a[1]["decision"] == "'"$dec"'"'
check "audit --verdict refused" 0 "$cordon" audit $p --json --verdict refused
json_is "gives the refusal only" 'len(a) == 1 and a[0]["admitted"] is False and a[0]["code"] == "containment_insufficient"'
check "audit --event run" 0 "$cordon" audit $p --json --event run
json_is "gives the two runs" 'len(a) == 2 and all(o["event"] == "run" for o in a)'
check "audit --since 1h" 0 "$cordon" audit $p --json --since 1h
json_is "gives everything written just now" 'len(a) == 5'
check "audit --until 2000-01-01" 0 "$cordon" audit $p --json --until 2000-01-01
json_is "gives nothing" 'a == []'
check "audit --since a future day" 0 "$cordon" audit $p --json --since 2999-01-01
json_is "gives nothing either" 'a == []'
check "audit as text" 0 "$cordon" audit $p --event run
if [ "$(wc -l <"$tmp/out")" -eq 2 ] && grep -q "sandbox=$sb .*signal=9" "$tmp/out" && grep -q 'exit=3' "$tmp/out"; then
	ok "one line per run, with its sandbox and status"; else not_ok "one line per run, with its sandbox and status"; sed 's/^/# /' "$tmp/out"; fi
check "a bad --verdict is a usage error" 202 "$cordon" audit $p --verdict maybe
check "a policy without a trail is a usage error" 202 "$cordon" audit --policy "$tmp/none.yaml"
echo 'not json' >>"$trail"
check "a line that is not JSON fails the read" 1 "$cordon" audit $p --json
json_is "after printing the others" 'len(a) == 5'
if grep -q 'line 6 is not a JSON object' "$tmp/err"; then ok "and names it on stderr"; else not_ok "and names it on stderr"; sed 's/^/# /' "$tmp/err"; fi
}
tap_finish
