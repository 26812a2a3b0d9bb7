#!/bin/sh
# The red-team suite again, unprivileged: when `make check` runs as root,
# re-run tests/redteam/test-redteam as nobody (setpriv), so that the kernel
# tier is proven both ways. TAP output is the suite's own.
set -u
top="${CORDON_TOP_BUILDDIR:-.}"
bin="$top/tests/redteam/test-redteam"
skip() {
	if [ "${CORDON_REQUIRE:-}" = all ]; then
		echo "Bail out! CORDON_REQUIRE=all: $1"
		exit 1
	fi
	echo "1..0 # SKIP $1"
	exit 0
}
[ "$(id -u)" = 0 ] || skip "not root: test-redteam already ran unprivileged"
command -v setpriv >/dev/null 2>&1 || skip "setpriv (util-linux) is missing"
as_nobody="setpriv --reuid=65534 --regid=65534 --clear-groups"
$as_nobody test -x "$bin" ||
	skip "uid 65534 cannot execute $bin (the build tree must be world-readable)"

dir=$(mktemp -d /var/tmp/cordon-rt-nobody-XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM
chmod 755 "$dir"
# A setuid-root copy of the probe: root makes it, the suite checks that the
# sandbox gives it no privilege.
cp "$top/tests/redteam/cordon-probe" "$dir/cordon-probe" && chmod 4755 "$dir/cordon-probe" || exit 1
# A home of nobody's own, writable on the host: only the sandbox can refuse.
mkdir "$dir/home" && chown 65534:65534 "$dir/home" && chmod 700 "$dir/home" || exit 1
HOME="$dir/home" CORDON_REDTEAM_SUID="$dir/cordon-probe" TMPDIR=/var/tmp $as_nobody "$bin"
