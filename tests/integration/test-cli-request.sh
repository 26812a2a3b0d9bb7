#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every request field a policy judges, on `cordon run` and `exec` as on `explain` (issue 15,
# item 2): --label against a deny rule, --limit in the policy's unit grammar (the smaller
# value is enforced, a larger one refused), --egress against a require rule, --image against
# `image: pinned`.
set -u
cordon="${CORDON_TOP_BUILDDIR:-.}/cordon"
. "${CORDON_TOP_SRCDIR:-.}/tests/integration/tap.sh"
unset CORDON_POLICY
grep_err() { # grep_err DESCRIPTION PATTERN
	if grep -q -- "$2" "$tmp/err"; then ok "$1"; else not_ok "$1"; sed 's/^/# /' "$tmp/err"; fi
}

cat >"$tmp/p.yaml" <<'EOF2'
cordon: 1
tiers:
  kernel: {driver: local, confine: kernel, limits: {memory: 1GiB}}
trust:
  trusted: {require: process-jail, tiers: [kernel]}
  semi-trusted: {require: kernel, tiers: [kernel]}
rules:
  - name: no-prod-from-ci
    when: {labels: {env: prod, origin: ci}}
    deny: true
  - name: offline-unless-ml
    when: {labels: {team: web}}
    require: {egress: deny}
  - name: pinned-images
    when: {labels: {team: images}}
    require: {image: pinned}
EOF2
p="--policy $tmp/p.yaml"
# shellcheck disable=SC2086 # $p is two words
{
check "run with labels no rule denies" 0 "$cordon" run $p --label env=prod --label origin=dev -- true
check "run --label: the deny rule refuses" 201 "$cordon" run $p --label env=prod --label origin=ci -- touch "$tmp/ran"
grep_err "the refusal names the rule" "no-prod-from-ci"
if [ -e "$tmp/ran" ]; then not_ok "nothing ran"; else ok "nothing ran"; fi
check "exec --label: the same rule refuses" 201 "$cordon" exec $p -l env=prod -l origin=ci 'true'
check "explain agrees with run" 201 "$cordon" explain $p --trust semi-trusted --label env=prod --label origin=ci
check "a label without = is a usage error" 202 "$cordon" run $p --label env -- true
check "a label with an empty key is a usage error" 202 "$cordon" run $p --label =x -- true

check "--egress governed against require egress: deny is refused" 201 "$cordon" run $p --label team=web --egress governed -- true
grep_err "the egress refusal names its rule" "offline-unless-ml"
check "--egress deny passes it" 0 "$cordon" run $p --label team=web --egress deny -- true
check "an unknown --egress is a usage error" 202 "$cordon" run $p --egress sometimes -- true

check "--image unpinned against require image: pinned is refused" 201 "$cordon" run $p --label team=images --image busybox:latest -- true
grep_err "the image refusal names its rule" "pinned-images"
check "--image pinned passes it" 0 "$cordon" run $p --label team=images --image "busybox@sha256:$(printf '%064d' 7)" -- true

# --limit: the policy's unit grammar (common/units.c), enforced by the tier.
touch200='b = bytearray(200 << 20); b[::4096] = b"x" * len(b[::4096])'
check "200 MiB fit under the tier's 1 GiB" 0 "$cordon" run $p -- python3 -c "$touch200"
check "--limit memory=64MiB is enforced: 200 MiB do not fit" 137 "$cordon" run $p --limit memory=64MiB -- python3 -c "$touch200"
grep_err "the OOM kill is reported" "ran out of memory"
check "--limit memory above the tier's cap is refused, not clamped" 201 "$cordon" run $p --limit memory=2GiB -- true
grep_err "the refusal shows both values" "2GiB > 1GiB"
check "--limit wall=1s bounds the run" 137 "$cordon" run $p --limit wall=1s -- sleep 30
check "--limit memory=512MB (decimal) is a usage error, as in a policy" 202 "$cordon" run $p --limit memory=512MB -- true
grep_err "the unit refusal says why" "decimal units"
check "--limit pids=abc is a usage error" 202 "$cordon" run $p --limit pids=abc -- true
check "an unknown --limit is a usage error" 202 "$cordon" run $p --limit disks=2 -- true
check "--limit pids=16 is taken" 0 "$cordon" run $p --limit pids=16 -- true
}
tap_finish
