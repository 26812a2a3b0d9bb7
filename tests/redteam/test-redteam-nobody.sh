#!/bin/sh
# The red-team suite again, unprivileged: when `make check` runs as root,
# re-run tests/redteam/test-redteam (or the suite CORDON_NOBODY_SUITE names,
# test-network-nobody.sh) as nobody (setpriv), so that the kernel tier is
# proven both ways. TAP output is the suite's own.
#
# Both programs are plain executables (no libtool wrapper, no library from
# the build tree), so they are copied to a world-readable directory: the
# build tree itself may sit where nobody cannot reach it.
set -u
top="${CORDON_TOP_BUILDDIR:-.}"
suite="${CORDON_NOBODY_SUITE:-test-redteam}"
skip() {
	if [ "${CORDON_REQUIRE:-}" = all ]; then
		echo "Bail out! CORDON_REQUIRE=all: $1"
		exit 1
	fi
	echo "1..0 # SKIP $1"
	exit 0
}
[ "$(id -u)" = 0 ] || skip "not root: $suite already ran unprivileged"
command -v setpriv >/dev/null 2>&1 || skip "setpriv (util-linux) is missing"
as_nobody="setpriv --reuid=65534 --regid=65534 --clear-groups"

dir=$(mktemp -d /var/tmp/cordon-rt-nobody-XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM
chmod 755 "$dir"
mkdir -p "$dir/tests/redteam" "$dir/home" || exit 1
cp "$top/tests/redteam/$suite" "$top/tests/redteam/cordon-probe" "$dir/tests/redteam/" || exit 1
chmod 755 "$dir/tests" "$dir/tests/redteam" "$dir/tests/redteam/$suite" "$dir/tests/redteam/cordon-probe"
# A setuid-root copy of the probe: root makes it, the suite checks that the
# sandbox gives it no privilege.
cp "$top/tests/redteam/cordon-probe" "$dir/suid-probe" && chmod 4755 "$dir/suid-probe" || exit 1
# A home of nobody's own, writable on the host: only the sandbox can refuse.
chown 65534:65534 "$dir/home" && chmod 700 "$dir/home" || exit 1
$as_nobody test -x "$dir/tests/redteam/$suite" ||
	skip "uid 65534 cannot execute programs under /var/tmp"
HOME="$dir/home" CORDON_TOP_BUILDDIR="$dir" CORDON_REDTEAM_SUID="$dir/suid-probe" TMPDIR=/var/tmp \
	$as_nobody "$dir/tests/redteam/$suite"
