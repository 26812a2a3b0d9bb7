# Shared by the shell tests: TAP counters, `check` (run a command, compare its
# exit status; on a mismatch its stderr and stdout are shown as comments), a
# private $tmp removed at exit, and `tap_finish` (the plan and the status).
n=0
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }
check() { # check DESCRIPTION EXPECTED_STATUS COMMAND...
	desc=$1 want=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" -eq "$want" ]; then ok "$desc"; else
		not_ok "$desc (exit $got, wanted $want)"
		sed 's/^/# /' "$tmp/err" "$tmp/out"
	fi
}
tap_finish() {
	echo "1..$n"
	[ "$fails" -eq 0 ]
}
