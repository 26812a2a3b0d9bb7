#!/bin/sh
# The cordon CLI: exit status passthrough, clear errors with class and code, help, version.
set -u
cordon="${CORDON_TOP_BUILDDIR:-.}/cordon"
. "${CORDON_TOP_SRCDIR:-.}/tests/integration/tap.sh"
grep_err() { # grep_err DESCRIPTION PATTERN
	if grep -q -- "$2" "$tmp/err"; then ok "$1"; else not_ok "$1"; sed 's/^/# /' "$tmp/err"; fi
}
unset CORDON_POLICY

check "run passes the work's exit status through (trusted)" 7 "$cordon" run --trust trusted -- sh -c 'exit 7'
check "run passes the work's exit status through (default trust)" 7 "$cordon" run -- sh -c 'exit 7'
check "exec runs a shell line" 3 "$cordon" exec --trust trusted 'exit 3'
check "signals are reported as 128+sig" 137 "$cordon" run --trust trusted -- sh -c 'kill -9 $$'
check "run output is passed through" 0 "$cordon" run --trust trusted -- echo cordon-says-hi
if grep -q '^cordon-says-hi$' "$tmp/out"; then ok "stdout reaches the caller"; else not_ok "stdout reaches the caller"; fi
check "an unknown tier is refused" 77 "$cordon" run --trust trusted --tier no-such-tier -- true
grep_err "the refusal names its class and code" "forbidden \["
grep_err "the refusal names the tier" "no-such-tier"
check "an unknown trust level fails closed to untrusted" 77 "$cordon" run --trust bogus -- true
grep_err "unknown trust is announced" "unknown trust 'bogus'"
grep_err "the untrusted requirement is named" "microvm"
check "a missing command is a usage error" 64 "$cordon" run --trust trusted --
check "an unknown command is a usage error" 64 "$cordon" frobnicate
check "a bad timeout is a usage error" 64 "$cordon" run --timeout 5x -- true
check "a forbidden env grant is refused" 77 "$cordon" run --trust trusted --env LD_PRELOAD=/x.so -- true
grep_err "the env refusal has its code" "env_forbidden"
check "a command that cannot be executed is an error, not a status" 70 "$cordon" run --trust trusted -- /nonexistent/program
check "a timeout kills the work" 137 "$cordon" run --trust trusted --timeout 300ms -- sleep 30
grep_err "the timeout is reported" "timed out"
check "--help works" 0 "$cordon" --help
check "run --help works" 0 "$cordon" run --help
check "version works" 0 "$cordon" version
# The built-in directory, whether plugins are installed in it yet or not.
check "plugins works with the built-in directory" 0 env -u CORDON_PLUGIN_DIR "$cordon" plugins
check "a plugin directory that was asked for must exist" 64 env CORDON_PLUGIN_DIR=/nonexistent "$cordon" plugins
grep_err "its absence is named" "plugin_dir_invalid"
check "probe lists the default tiers" 0 "$cordon" probe
if grep -q '^jail ' "$tmp/out" && grep -q '^kernel ' "$tmp/out"; then ok "probe shows jail and kernel"; else not_ok "probe shows jail and kernel"; fi
check "probe --json works" 0 "$cordon" probe --json
if grep -q '"tier":"jail","driver":"local","available":true,"containment":"process-jail"' "$tmp/out"; then
	ok "probe --json reports the jail tier"; else not_ok "probe --json reports the jail tier"; sed 's/^/# /' "$tmp/out"; fi
check "run --json reports tier and containment" 0 "$cordon" run --json --trust trusted -- printf 'a"b'
if grep -q '"tier":"jail","containment":"process-jail","exit_code":0' "$tmp/out" && grep -q '"stdout":"a\\"b"' "$tmp/out"; then
	ok "run --json output is escaped JSON"; else not_ok "run --json output is escaped JSON"; sed 's/^/# /' "$tmp/out"; fi

# Two container tiers whose engine never answers: probed at once, and the
# probe gives up on them after 5 s in all (not the engine timeout per tier).
top="${CORDON_TOP_BUILDDIR:-.}"
mkdir -m 755 "$tmp/plugins"
cp "$top/plugins/docker/.libs/docker.so" "$top/plugins/podman/.libs/podman.so" "$tmp/plugins/"
printf '#!/bin/sh\nexec sleep 30\n' >"$tmp/hung-engine" && chmod 755 "$tmp/hung-engine"
digest=$(printf '%064d' 0)
cat >"$tmp/hung.yaml" <<EOF2
cordon: 1
plugins: {load: [docker, podman]}
tiers:
  d: {driver: docker, engine: $tmp/hung-engine, image: "localhost/x@sha256:$digest"}
  p: {driver: podman, engine: $tmp/hung-engine, image: "localhost/x@sha256:$digest"}
EOF2
start=$(date +%s)
check "probe with two hung engines answers" 0 "$cordon" probe --policy "$tmp/hung.yaml" --plugin-dir "$tmp/plugins"
took=$(($(date +%s) - start))
if [ "$took" -le 8 ]; then ok "within the 5 s bound, not 10 s per tier (took ${took} s)"
else not_ok "within the 5 s bound, not 10 s per tier (took ${took} s)"; fi
if [ "$(grep -c 'unavailable.*the probe timed out: no answer within 5 s' "$tmp/out")" -eq 2 ]; then
	ok "both tiers are unavailable, timed out"
else not_ok "both tiers are unavailable, timed out"; sed 's/^/# /' "$tmp/out"; fi

# A plugin constructor that calls exit(0): not "ran, status 0" but a failure
# that names the plugin.
mkdir -m 755 "$tmp/ctor"
cp "$top/tests/plugins/.libs/ctorexit.so" "$tmp/ctor/"
printf 'cordon: 1\nplugins: {load: [ctorexit]}\n' >"$tmp/ctor.yaml"
check "exit() in a plugin constructor fails the command" 70 "$cordon" run --policy "$tmp/ctor.yaml" --plugin-dir "$tmp/ctor" -- echo RAN
grep_err "the plugin is named" "cordon: plugin $tmp/ctor/ctorexit.so called exit() while loading"
if grep -q RAN "$tmp/out"; then not_ok "nothing ran"; else ok "nothing ran"; fi
# Issue 10: one forbidden-workspace list for every tier (system directories,
# runtime state, the root, what contains them), a symlink to one refused too;
# as root the kernel tier refuses a root-owned workspace; set-id bits are
# never set, and what the work creates is never root's on the host.
ln -s /etc "$tmp/etc-link"
for ws in /etc /usr /boot /root /run / /var; do
	[ -d "$ws" ] || continue
	check "the kernel tier refuses --workspace $ws" 77 "$cordon" run --tier kernel --workspace "$ws" -- true
	grep_err "the kernel tier's refusal of $ws has its code" "workspace_forbidden"
	check "the jail refuses --workspace $ws" 77 "$cordon" run --trust trusted --tier jail --workspace "$ws" -- true
	grep_err "the jail's refusal of $ws has its code" "workspace_forbidden"
done
check "the kernel tier refuses a symlink to /etc" 77 "$cordon" run --tier kernel --workspace "$tmp/etc-link" -- true
grep_err "the symlink is named as such" "symbolic link"
check "the jail refuses a symlink to /etc" 77 "$cordon" run --trust trusted --tier jail --workspace "$tmp/etc-link" -- true
mkdir "$tmp/ws"
if [ "$(id -u)" = 0 ]; then
	check "as root a root-owned workspace is refused" 77 "$cordon" run --tier kernel --workspace "$tmp/ws" -- true
	grep_err "the refusal says chown" "owned by root"
	chown 65534:65534 "$tmp/ws"
fi
check "a workspace of an ordinary owner works" 0 "$cordon" run --tier kernel --workspace "$tmp/ws" -- \
	sh -c 'touch f; chmod 4755 f; chmod 2755 f; echo written > g'
if [ "$(stat -c %a:%u "$tmp/ws/f")" = "644:$(stat -c %u "$tmp/ws")" ] && [ "$(cat "$tmp/ws/g")" = written ]; then
	ok "no set-id bit was set and the files are the workspace owner's"
else not_ok "no set-id bit was set and the files are the workspace owner's"; ls -ln "$tmp/ws" | sed 's/^/# /'; fi
check "the jail takes an ordinary workspace" 0 "$cordon" run --trust trusted --tier jail --workspace "$tmp/ws" -- true

# What gc finds depends on what other processes on this host left (tests that kill cordon
# check their own leftovers): only the report's form is checked here.
check "gc runs on the default policy" 0 "$cordon" gc
if grep -Eq '^removed [0-9]+$' "$tmp/out"; then ok "gc reports what it removed"; else not_ok "gc reports what it removed"; fi

tap_finish
