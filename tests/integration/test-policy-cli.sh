#!/bin/sh
# The policy commands of the CLI: policy check|show, explain, --policy and
# CORDON_POLICY, with errors printed with their positions.
set -u
cordon="${CORDON_TOP_BUILDDIR:-.}/cordon"
src="${CORDON_TOP_SRCDIR:-.}"
. "${CORDON_TOP_SRCDIR:-.}/tests/integration/tap.sh"
has() { # has DESCRIPTION FILE(out|err) PATTERN
	if grep -q -- "$3" "$tmp/$2"; then ok "$1"; else not_ok "$1"; sed 's/^/# /' "$tmp/$2"; fi
}
unset CORDON_POLICY CORDON_PLUGIN_DIR

check "policy show --default prints the built-in policy" 0 "$cordon" policy show --default
has "the default maps untrusted to microvm" out "untrusted:    {require: microvm, tiers: \[\]}"
cp "$tmp/out" "$tmp/default.yaml"
check "the default policy passes policy check" 0 "$cordon" policy check "$tmp/default.yaml"
has "the summary says it is valid" out "valid policy (schema 1, sha256 "
has "the summary lists the trust levels" out "semi-trusted  requires kernel"

check "a good fixture passes" 0 "$cordon" policy check "$src/tests/fixtures/policies/good/block-style.yaml"
has "a relaxed level is shown" out "relaxed below the built-in kernel"
printf 'cordon: 1\ntiers: {vm: {driver: kvm, kernel: /vmlinuz}}\ntrust: {untrusted: {tiers: [vm]}}\n' >"$tmp/vm.yaml"
check "a tier whose driver is not loaded is not an error" 0 "$cordon" policy check "$tmp/vm.yaml"
has "tiers whose driver is not loaded are named" out "note: tier vm is unusable here (driver kvm is not loaded)"
printf 'cordon: 1\ntiers: {j: {driver: local, confine: none, confin: kernel}}\n' >"$tmp/local.yaml"
check "a driver's unknown key is an error" 1 "$cordon" policy check "$tmp/local.yaml"
has "with its position and a suggestion" err "local.yaml:2:43: tiers.j.confin: unknown key for driver local 'confin' (did you mean 'confine'?)"
# A container tier's ulimits and the limits of the same name: one would silently win.
if [ -e "${CORDON_TOP_BUILDDIR:-.}/plugins/docker/.libs/docker.so" ]; then
	dockerdir=$(cd "${CORDON_TOP_BUILDDIR:-.}/plugins/docker/.libs" && pwd)
	printf 'cordon: 1\nplugins: {dir: %s, load: [docker]}\ntiers:\n  d:\n    driver: docker\n    image: busybox@sha256:%064d\n    limits: {memory: 64MiB, nofile: 256}\n    ulimits: [nproc=64, nofile=1024:1024]\n' "$dockerdir" 0 >"$tmp/ulimits.yaml"
	check "a container tier's ulimits.nofile and limits.nofile conflict" 1 "$cordon" policy check "$tmp/ulimits.yaml"
	has "the refusal points at ulimits" err "ulimits.yaml:8:14: tiers.d.ulimits: ulimits sets nofile and so does limits.nofile"
else
	not_ok "the docker plugin is built (plugins/docker/.libs/docker.so)"
fi

check "a bad policy fails with exit 1" 1 "$cordon" policy check "$src/tests/fixtures/policies/bad/unknown-key.yaml"
has "the error has file:line:col and key path" err "bad/unknown-key.yaml:6:5: rules\[0\].requre: unknown key 'requre' (did you mean 'require'?)"
has "the verdict names the code" err "is not a valid policy \[policy_unknown_key\]"

printf 'cordon: 1\ntirs: {}\nselect: fastest\naudit: {path: rel}\n' >"$tmp/three.yaml"
check "several errors: exit 1" 1 "$cordon" policy check "$tmp/three.yaml"
if [ "$(grep -c "^$tmp/three.yaml:[0-9]*:[0-9]*: " "$tmp/err")" -eq 3 ]; then ok "every error is printed with its position"
else not_ok "every error is printed with its position"; sed 's/^/# /' "$tmp/err"; fi

printf 'cordon: 1\ntiers: {j: {driver: local, confine: none}}\ntrust: {untrusted: {require: process-jail, relax: true, tiers: [j]}}\n' >"$tmp/jail.yaml"
check "untrusted work on the jail needs the admin's words" 1 "$cordon" policy check "$tmp/jail.yaml"
has "refused with its position" err "jail.yaml:3:30: trust.untrusted.require: untrusted work would run in the process jail"
{ echo 'allow_untrusted_on_jail: true'; cat "$tmp/jail.yaml"; } >"$tmp/jail-ok.yaml"
check "with allow_untrusted_on_jail it passes" 0 "$cordon" policy check "$tmp/jail-ok.yaml"
has "with a warning on stderr" err "^cordon: WARNING: allow_untrusted_on_jail: untrusted work may run in the process jail"
has "and in the summary" out "^WARNING: allow_untrusted_on_jail"
# Review of issue 10 (finding 7): semi-trusted work, the default trust, was
# let down to the jail (host root, as root) by relax: true alone.
printf 'cordon: 1\ntiers: {j: {driver: local, confine: none}}\ntrust: {semi-trusted: {require: process-jail, relax: true, tiers: [j]}}\n' >"$tmp/semi.yaml"
check "semi-trusted work on the jail needs the admin's words" 1 "$cordon" policy check "$tmp/semi.yaml"
has "refused with its position and the key" err "semi.yaml:3:33: trust.semi-trusted.require: semi-trusted work would run in the process jail.*allow_semi_trusted_on_jail: true"
{ echo 'allow_untrusted_on_jail: true'; cat "$tmp/semi.yaml"; } >"$tmp/semi-wrong.yaml"
check "the untrusted key does not let semi-trusted work down" 1 "$cordon" policy check "$tmp/semi-wrong.yaml"
{ echo 'allow_semi_trusted_on_jail: true'; cat "$tmp/semi.yaml"; } >"$tmp/semi-ok.yaml"
check "with allow_semi_trusted_on_jail it passes" 0 "$cordon" policy check "$tmp/semi-ok.yaml"
has "with a warning on stderr" err "^cordon: WARNING: allow_semi_trusted_on_jail: semi-trusted work may run in the process jail"
has "and in the summary" out "^WARNING: allow_semi_trusted_on_jail"

check "policy check needs a file" 64 "$cordon" policy check
check "policy needs a subcommand" 64 "$cordon" policy
check "a missing file is an error" 1 "$cordon" policy check "$tmp/missing.yaml"
has "the missing file is named" err "missing.yaml: cannot open the policy"

cat >"$tmp/p.yaml" <<'YAML'
cordon: 1
tiers:
  jail: {driver: local, confine: none, limits: {memory: 1GiB}}
trust:
  trusted: {tiers: [jail]}
rules:
  - {name: no-prod, when: {labels: {env: prod}}, deny: true}
  - {name: cap, limit: {memory: 512MiB, wall: 30s}}
YAML
printf 'audit: {path: %s/audit.jsonl}\n' "$tmp" >>"$tmp/p.yaml"

check "explain: trusted is admitted to the jail" 0 "$cordon" explain --trust trusted --policy "$tmp/p.yaml"
has "the decision names the tier" out "decision:     admitted: tier jail (containment process-jail)"
has "the limits are the smallest caps" out "limits:       wall 30s, memory 512MiB"
check "explain --json" 0 "$cordon" explain --trust trusted --policy "$tmp/p.yaml" --json
has "the JSON names the chosen tier" out '"admitted":true,"code":null,"message":null,"trust":"trusted"'
check "explain: a deny rule refuses (exit 77)" 77 "$cordon" explain --trust trusted --label env=prod --policy "$tmp/p.yaml"
has "the refusal names the rule" out "jail         process-jail     rule no-prod"
check "explain: a request above a cap is refused, not clamped" 77 "$cordon" explain --trust trusted --limit memory=1GiB --policy "$tmp/p.yaml"
has "the refusal names both values" out "rule cap: memory 1GiB > 512MiB"
check "explain: unknown trust fails closed" 77 "$cordon" explain --trust root --policy "$tmp/p.yaml"
has "the unknown trust is shown" out "trust:        untrusted (asked: 'root', unknown, so treated as untrusted)"
has "the reason is given" out "the policy lists no tier for it"
check "explain: a tier that is not a candidate" 77 "$cordon" explain --trust trusted --tier vm --policy "$tmp/p.yaml"
has "the refusal says so" out "tier vm is not a candidate for trusted work (candidates: jail)"
check "explain needs --trust" 64 "$cordon" explain
check "explain rejects a bad --limit" 64 "$cordon" explain --trust trusted --limit memory=lots
printf 'cordon: 1\ntiers: {jail: {driver: local, confine: none}}\ntrust: {trusted: {tiers: [jail]}}\nrules:\n  - {name: offline, require: {egress: deny}}\n' >"$tmp/offline.yaml"
check "explain: the jail cannot enforce egress deny (exit 77)" 77 "$cordon" explain --trust trusted --policy "$tmp/offline.yaml"
has "the refusal says the tier does not enforce it" out "rule offline: requires egress deny, and tier jail does not enforce egress deny"

if [ "$(wc -l <"$tmp/audit.jsonl")" -eq 6 ] && grep -q '"dry_run":true' "$tmp/audit.jsonl" &&
	[ "$(stat -c %a "$tmp/audit.jsonl")" = 600 ]; then ok "every explain is audited as a dry run (0600)"
else not_ok "every explain is audited as a dry run (0600)"; sed 's/^/# /' "$tmp/audit.jsonl"; fi

CORDON_POLICY="$tmp/p.yaml" check "CORDON_POLICY is used" 77 "$cordon" explain --trust trusted --label env=prod
CORDON_POLICY="$tmp/three.yaml" check "--policy wins over CORDON_POLICY" 0 "$cordon" explain --trust trusted --policy "$tmp/p.yaml"
check "run refuses a bad policy with its position" 64 "$cordon" run --policy "$tmp/three.yaml" -- true
has "the run error has the position" err "three.yaml:2:1: tirs: unknown key"
check "probe takes --policy" 0 "$cordon" probe --policy "$tmp/p.yaml"
has "probe lists the policy's tier" out "^jail "
check "policy show summarises the policy in effect" 0 "$cordon" policy show --policy "$tmp/p.yaml"
has "policy show names the file" out "p.yaml: valid policy"

tap_finish
