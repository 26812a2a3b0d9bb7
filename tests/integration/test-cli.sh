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
# The exit status table of cordon(1), row by row, without --json (issue 15, item 4): the
# work's 0-127 as is, 128+N for a signal, cordon's own 200-203, which no status of the work's
# reaches (a work that exits 128-255 itself is 200, its status said on stderr).
check "exit table: the work's 0" 0 "$cordon" run --trust trusted -- true
check "exit table: the work's 127 (a shell's 'not found') passes as is" 127 "$cordon" exec --trust trusted 'exit 127'
check "exit table: 128+N, the work killed by SIGTERM" 143 "$cordon" run --trust trusted -- sh -c 'kill -TERM $$'
check "exit table: the work's own exit 137 is 200, never read as a kill" 200 "$cordon" run --trust trusted -- sh -c 'exit 137'
grep_err "exit table: its status is on stderr" "the work exited with status 137"
check "exit table: the work's own exit 201 is 200, never read as a refusal" 200 "$cordon" run --trust trusted -- sh -c 'exit 201'
grep_err "exit table: ... said on stderr" "the work exited with status 201"
check "exit table: 201 refused" 201 "$cordon" run --trust untrusted -- true
check "exit table: 202 a usage error" 202 "$cordon" run --no-such-option -- true
check "exit table: 203 could not run" 203 "$cordon" run --trust trusted -- /nonexistent/program
check "exit table: a refusal prints no status line" 201 "$cordon" run --trust untrusted -- true
if grep -q "the work exited" "$tmp/err"; then not_ok "exit table: ... nothing about a work that never ran"; else ok "exit table: ... nothing about a work that never ran"; fi
check "run output is passed through" 0 "$cordon" run --trust trusted -- echo cordon-says-hi
if grep -q '^cordon-says-hi$' "$tmp/out"; then ok "stdout reaches the caller"; else not_ok "stdout reaches the caller"; fi
check "an unknown tier is refused" 201 "$cordon" run --trust trusted --tier no-such-tier -- true
grep_err "the refusal names its class and code" "forbidden \["
grep_err "the refusal names the tier" "no-such-tier"
check "an unknown trust level fails closed to untrusted" 201 "$cordon" run --trust bogus -- true
grep_err "unknown trust is announced" "unknown trust 'bogus'"
grep_err "the untrusted requirement is named" "microvm"
check "a missing command is a usage error" 202 "$cordon" run --trust trusted --
check "an unknown command is a usage error" 202 "$cordon" frobnicate
check "a bad timeout is a usage error" 202 "$cordon" run --timeout 5x -- true
# The policy's unit grammar (common/units.c): a bare number is no duration, here as there.
check "a bare --timeout 2 is a usage error, as in a policy" 202 "$cordon" run --trust trusted --timeout 2 -- true
grep_err "the refusal suggests a unit" "needs a unit.*2s"
check "--timeout 0s is a usage error" 202 "$cordon" run --trust trusted --timeout 0s -- true
check "--limit wall=2 is a usage error" 202 "$cordon" explain --trust trusted --limit wall=2
grep_err "the --limit refusal suggests a unit" "needs a unit.*2s"
check "--limit memory=1MB is a usage error, as in a policy" 202 "$cordon" explain --trust trusted --limit memory=1MB
grep_err "the refusal says why" "decimal units"
check "--limit cpus=5000 is a usage error, as in a policy" 202 "$cordon" explain --trust trusted --limit cpus=5000
check "--limit wall=2s and memory=512MiB are taken" 0 "$cordon" explain --trust trusted --limit wall=2s --limit memory=512MiB
check "a forbidden env grant is refused" 201 "$cordon" run --trust trusted --env LD_PRELOAD=/x.so -- true
grep_err "the env refusal has its code" "env_forbidden"
check "a command that cannot be executed is an error, not a status" 203 "$cordon" run --trust trusted -- /nonexistent/program
check "a timeout kills the work" 137 "$cordon" run --trust trusted --timeout 300ms -- sleep 30
grep_err "the timeout is reported" "timed out"
check "--help works" 0 "$cordon" --help
check "run --help works" 0 "$cordon" run --help
check "version works" 0 "$cordon" version
# The built-in directory, whether plugins are installed in it yet or not.
check "plugins works with the built-in directory" 0 env -u CORDON_PLUGIN_DIR "$cordon" plugins
check "a plugin directory that was asked for must exist" 202 env CORDON_PLUGIN_DIR=/nonexistent "$cordon" plugins
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
check "exit() in a plugin constructor fails the command" 203 "$cordon" run --policy "$tmp/ctor.yaml" --plugin-dir "$tmp/ctor" -- echo RAN
grep_err "the plugin is named" "cordon: plugin $tmp/ctor/ctorexit.so called exit() while loading"
if grep -q RAN "$tmp/out"; then not_ok "nothing ran"; else ok "nothing ran"; fi
# Review of issue 10 (item 6): _exit(0) skips the atexit check that catches
# exit(0): cordon exited 0 having run nothing.
mkdir -m 755 "$tmp/ctor_"
cp "$top/tests/plugins/.libs/ctor_exit.so" "$tmp/ctor_/"
printf 'cordon: 1\nplugins: {load: [ctor_exit]}\n' >"$tmp/ctor_.yaml"
"$cordon" run --policy "$tmp/ctor_.yaml" --plugin-dir "$tmp/ctor_" -- echo RAN >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -ne 0 ] && ! grep -q RAN "$tmp/out"; then ok "_exit() in a plugin constructor fails the command"
else not_ok "_exit() in a plugin constructor fails the command (exit $rc, ran: $(grep -c RAN "$tmp/out"))"; fi
# Issue 10: one forbidden-workspace list for every tier (system directories,
# runtime state, the root, what contains them), a symlink to one refused too;
# as root the kernel tier refuses a root-owned workspace; set-id bits are
# never set, and what the work creates is never root's on the host.
ln -s /etc "$tmp/etc-link"
for ws in /etc /usr /boot /root /run / /var; do
	[ -d "$ws" ] || continue
	check "the kernel tier refuses --workspace $ws" 201 "$cordon" run --tier kernel --workspace "$ws" -- true
	grep_err "the kernel tier's refusal of $ws has its code" "workspace_forbidden"
	check "the jail refuses --workspace $ws" 201 "$cordon" run --trust trusted --tier jail --workspace "$ws" -- true
	grep_err "the jail's refusal of $ws has its code" "workspace_forbidden"
done
check "the kernel tier refuses a symlink to /etc" 201 "$cordon" run --tier kernel --workspace "$tmp/etc-link" -- true
grep_err "the symlink is named as such" "symbolic link"
check "the jail refuses a symlink to /etc" 201 "$cordon" run --trust trusted --tier jail --workspace "$tmp/etc-link" -- true
mkdir "$tmp/ws"
if [ "$(id -u)" = 0 ]; then
	check "as root a root-owned workspace is refused" 201 "$cordon" run --tier kernel --workspace "$tmp/ws" -- true
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

# Secrets stay off cordon's command line (issue 10, item 9).
check "-e NAME takes the value from cordon's environment" 0 env CORDON_T_SECRET='s3 cr=et' "$cordon" run --trust trusted -e CORDON_T_SECRET -- sh -c 'printf %s "$CORDON_T_SECRET"'
if [ "$(cat "$tmp/out")" = 's3 cr=et' ] && [ ! -s "$tmp/err" ]; then ok "-e NAME grants the value, without a warning"; else
	not_ok "-e NAME grants the value, without a warning"; sed 's/^/# /' "$tmp/out" "$tmp/err"; fi
check "-e NAME of an unset variable is a usage error" 202 env -u CORDON_T_UNSET "$cordon" run --trust trusted -e CORDON_T_UNSET -- true
grep_err "the unset variable is named" "CORDON_T_UNSET is not set"
check "-e K=V still works" 0 "$cordon" run --trust trusted -e CORDON_T_KV=v4lue -- sh -c 'printf %s "$CORDON_T_KV"'
grep_err "-e K=V warns that the value is on the command line" "warning: the value of CORDON_T_KV is on cordon's command line"
if grep -q v4lue "$tmp/err"; then not_ok "the warning does not repeat the value"; else ok "the warning does not repeat the value"; fi
printf '# a comment\n\n  # indented comment\nCORDON_T_A=1\nCORDON_T_B=with spaces = "quotes" $HOME #not-a-comment\nCORDON_T_C=\nCORDON_T_D=file\n' >"$tmp/env"
chmod 600 "$tmp/env"
check "--env-file grants its NAME=VALUE lines" 0 "$cordon" run --trust trusted --env-file "$tmp/env" -e CORDON_T_D=flag -- sh -c 'printf "%s|%s|%s|%s|%s" "$CORDON_T_A" "$CORDON_T_B" "${CORDON_T_C-unset}" "$CORDON_T_D" "${HOME}"'
if [ "$(cat "$tmp/out")" = '1|with spaces = "quotes" $HOME #not-a-comment||flag|/tmp' ]; then
	ok "--env-file values are verbatim (no quotes, expansion or comments), -e has the last word"; else
	not_ok "--env-file values are verbatim (no quotes, expansion or comments), -e has the last word"; sed 's/^/# /' "$tmp/out"; fi
chmod 620 "$tmp/env"
check "a group-writable --env-file is refused" 201 "$cordon" run --trust trusted --env-file "$tmp/env" -- true
grep_err "the refusal names the mode" "mode 0620"
chmod 604 "$tmp/env"
check "a world-readable --env-file is refused" 201 "$cordon" run --trust trusted --env-file "$tmp/env" -- true
printf 'CORDON_T_A=1\nno equals sign\n' >"$tmp/env2"
chmod 600 "$tmp/env2"
check "a --env-file line without = is a usage error" 202 "$cordon" run --trust trusted --env-file "$tmp/env2" -- true
grep_err "the bad line is named" "env2:2: expected NAME=VALUE"
printf 'LD_PRELOAD=/x.so\n' >"$tmp/env3"
chmod 600 "$tmp/env3"
check "--env-file cannot grant a forbidden variable" 201 "$cordon" run --trust trusted --env-file "$tmp/env3" -- true
grep_err "the forbidden file line is named" "env3:1"
ln -s "$tmp/env" "$tmp/env-link"
check "a symlinked --env-file is refused" 201 "$cordon" run --trust trusted --env-file "$tmp/env-link" -- true
grep_err "the refusal names the link" "a symbolic link"
check "--env-file reads a pipe" 0 sh -c 'printf "CORDON_T_P=piped\n" | "$1" run --trust trusted --env-file /dev/stdin -- sh -c "printf %s \"\$CORDON_T_P\""' sh "$cordon"
if [ "$(cat "$tmp/out")" = piped ]; then ok "a piped --env-file is granted"; else not_ok "a piped --env-file is granted"; fi

# Hostile output (issue 10, item 10): a terminal gets control characters
# escaped; JSON stays valid whatever the bytes.
hostile='a\033]52;c;SGVsbG8=\007b\033[2J\302\233c\377d\303\251\t\n'
if command -v script >/dev/null 2>&1; then
	script -qc "$cordon run --trust trusted -- printf '$hostile'; $cordon run --trust trusted -- sh -c \"printf '$hostile' >&2\"" /dev/null >"$tmp/tty" 2>&1
	if grep -q 'a\\x1b]52;c;SGVsbG8=\\x07b\\x1b\[2J\\xc2\\x9bc\\xffdé' "$tmp/tty" && [ "$(grep -c 'a\\x1b]52' "$tmp/tty")" -eq 2 ] &&
		! tr -d '\r\n\t' <"$tmp/tty" | LC_ALL=C grep -q '[[:cntrl:]]'; then
		ok "a terminal gets escapes, C1 and invalid bytes shown as \\xNN, on stdout and stderr"; else
		not_ok "a terminal gets escapes, C1 and invalid bytes shown as \\xNN, on stdout and stderr"; od -c "$tmp/tty" | sed 's/^/# /' | head -20; fi
	script -qc "$cordon run --raw --trust trusted -- printf '$hostile'" /dev/null >"$tmp/tty" 2>&1
	if LC_ALL=C grep -q "$(printf '\033')]52" "$tmp/tty"; then ok "--raw passes them to the terminal"; else
		not_ok "--raw passes them to the terminal"; od -c "$tmp/tty" | sed 's/^/# /' | head -5; fi
else
	not_ok "script (util-linux) is needed for the terminal tests"
fi
check "a pipe gets the bytes as they are" 0 "$cordon" run --trust trusted -- printf "$hostile"
if cmp -s "$tmp/out" "$(printf "$hostile" >"$tmp/want"; echo "$tmp/want")"; then ok "passthrough to a pipe is byte-exact"; else not_ok "passthrough to a pipe is byte-exact"; fi
py=/usr/bin/python3
strict_json='import json, sys; o = json.loads(sys.stdin.buffer.read())'
check "--json with invalid UTF-8, NUL and escapes" 0 "$cordon" run --json --trust trusted -- sh -c "printf 'x\377\000\033y'; printf '\300\200\355\240\200' >&2"
if [ -x "$py" ] && "$py" -c "$strict_json"'; sys.exit(o["stdout"] != "x\ufffd\0\x1by" or o["stderr"] != "\ufffd" * 5)' <"$tmp/out" >/dev/null; then
	ok "--json is strict JSON: each invalid byte is U+FFFD"; else
	not_ok "--json is strict JSON: each invalid byte is U+FFFD"; sed 's/^/# /' "$tmp/out"; fi
check "--json with random bytes" 0 "$cordon" run --json --trust trusted -- "$py" -c 'import os, sys; sys.stdout.buffer.write(os.urandom(65536)); sys.stderr.buffer.write(os.urandom(65536))'
if [ -x "$py" ] && "$py" -c "$strict_json" <"$tmp/out" >/dev/null; then ok "--json of random bytes parses"; else not_ok "--json of random bytes parses"; fi

# A reader that goes away (issue 10, item 11) ends the work, not the wall limit.
elapsed() { start=$(date +%s); "$@"; echo $(($(date +%s) - start)) >"$tmp/took"; }
elapsed sh -c '"$1" run --trust trusted --timeout 60s -- yes | head -c1 >/dev/null; exit 0' sh "$cordon"
if [ "$(cat "$tmp/took")" -le 5 ]; then ok "yes | head -c1 ends within 5 s"; else not_ok "yes | head -c1 ends within 5 s ($(cat "$tmp/took")s)"; fi
elapsed sh -c '"$1" run --trust trusted --timeout 60s -- yes >&-; echo $? >"$2"' sh "$cordon" "$tmp/rc"
if [ "$(cat "$tmp/took")" -le 5 ] && [ "$(cat "$tmp/rc")" = 141 ]; then ok "yes >&- ends within 5 s, exit 141"; else
	not_ok "yes >&- ends within 5 s, exit 141 ($(cat "$tmp/took")s, exit $(cat "$tmp/rc"))"; fi
elapsed sh -c '"$1" run --trust trusted --timeout 60s -- sh -c "yes >&2" 2>&1 >/dev/null | head -c1 >/dev/null' sh "$cordon"
if [ "$(cat "$tmp/took")" -le 5 ]; then ok "a closed stderr pipe ends the work within 5 s"; else not_ok "a closed stderr pipe ends the work within 5 s"; fi
elapsed sh -c '"$1" run --trust trusted --timeout 60s -- sleep 30 | true' sh "$cordon"
if [ "$(cat "$tmp/took")" -le 5 ]; then ok "silent work ends within 5 s once its reader is gone"; else not_ok "silent work ends within 5 s once its reader is gone"; fi
elapsed sh -c '"$1" run --json --trust trusted --timeout 60s -- sleep 30 | true' sh "$cordon"
if [ "$(cat "$tmp/took")" -le 5 ]; then ok "so does --json work"; else not_ok "so does --json work"; fi
check "--json with a closed stdout runs nothing" 141 sh -c '"$1" run --json --trust trusted -- touch "$2" >&-' sh "$cordon" "$tmp/ran"
if [ -e "$tmp/ran" ]; then not_ok "nothing ran"; else ok "nothing ran"; fi

# `cordon run` on the kernel tier (issue 16 item 1): below /tmp its private root is the
# sandbox's own tmpfs only, as root too: while the work runs, its path is nothing on the host
# and nothing is mounted there (the close has nothing to unmount nor remove).
private_root_case() { # private_root_case DESCRIPTION [WRAPPER...]
	desc=$1
	shift
	: >"$tmp/pr"
	env -u TMPDIR "$@" "$cordon" run -- sh -c 'pwd; sleep 2' >"$tmp/pr" 2>"$tmp/err" &
	pid=$!
	i=0
	while [ ! -s "$tmp/pr" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	path=$(head -n 1 "$tmp/pr")
	case "$path" in
	/tmp/cordon-*)
		if [ -e "$path" ] || grep -qF "$path" /proc/self/mountinfo; then
			not_ok "$desc ($path is on the host)"; else ok "$desc"; fi ;;
	*) not_ok "$desc (the work ran in '$path')"; sed 's/^/# /' "$tmp/err" ;;
	esac
	if wait "$pid"; then ok "$desc: the run succeeds"; else not_ok "$desc: the run succeeds"; sed 's/^/# /' "$tmp/err"; fi
}
private_root_case "kernel tier: the private root is not on the host ($(id -un))"
if [ "$(id -u)" = 0 ]; then
	private_root_case "kernel tier: the private root is not on the host (nobody)" \
		setpriv --reuid=nobody --regid=nogroup --clear-groups
fi

tap_finish
