#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The Python binding (bindings/python, issue 15 item 9) under Debian's python3 and pytest:
# once against the build tree's library, once installed the standard ways, the library
# with `make install DESTDIR=` and the package with pip from its pyproject.toml, and run
# from there (the tests check which library file the process mapped).
set -u
top_builddir=$(cd "${CORDON_TOP_BUILDDIR:-.}" && pwd)
srcdir=$(cd "${CORDON_TOP_SRCDIR:-.}" && pwd)
. "$srcdir/tests/integration/tap.sh"
py=/usr/bin/python3
skip_or_fail() {
	if [ "${CORDON_REQUIRE:-}" = all ]; then not_ok "$1 (CORDON_REQUIRE=all)"; tap_finish; exit 1; fi
	echo "1..0 # SKIP $1"; exit 77
}
"$py" -c 'import pytest' 2>/dev/null || skip_or_fail "Debian's python3-pytest is not installed (.ci/test-setup.sh installs it)"
export PYTHONDONTWRITEBYTECODE=1
# An ASan build's library needs the ASan runtime first in the process: python3 is not built
# with it, so it is preloaded (leak checks off: the interpreter's own allocations at exit).
if "$py" -c 'import sys; sys.exit(0 if b"libasan" in open(sys.argv[1], "rb").read() else 1)' "$top_builddir/core/.libs/libcordon.so.0"; then
	LD_PRELOAD="$(${CC:-cc} -print-file-name=libasan.so) ${LD_PRELOAD:-}"
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 # last: it wins over CI's detect_leaks=1
	export LD_PRELOAD ASAN_OPTIONS
fi
pytest_run() { # pytest_run DESCRIPTION: the binding's tests, TAP-summarised
	if "$py" -m pytest -q -p no:cacheprovider --rootdir="$tmp" "$tmp/pkg/tests" >"$tmp/pytest" 2>&1; then
		ok "$1: $(tail -n 1 "$tmp/pytest")"
	else
		not_ok "$1"; sed 's/^/# /' "$tmp/pytest" | tail -n 60
	fi
}
# A copy of the package: pip and pytest write next to what they read, and distcheck's
# source tree is read-only.
cp -R "$srcdir/bindings/python" "$tmp/pkg"
chmod -R u+w "$tmp/pkg"

# A podman tier for the serve pid's test (a container's own pid), where this host has one.
if [ "$(id -u)" = 0 ] && [ -r /var/lib/cordon-ci/image-ref ] && command -v podman >/dev/null 2>&1; then
	chmod 755 "$tmp"
	mkdir -m 755 "$tmp/plugins"
	cp "$top_builddir/plugins/podman/.libs/podman.so" "$tmp/plugins/"
	CORDON_TEST_PODMAN_PLUGINS=$tmp/plugins CORDON_TEST_AGENT=$top_builddir/agent/cordon-agent
	CORDON_TEST_IMAGE=$(cat /var/lib/cordon-ci/image-ref)
	export CORDON_TEST_PODMAN_PLUGINS CORDON_TEST_AGENT CORDON_TEST_IMAGE
fi
CORDON_LIBRARY="$top_builddir/core/.libs/libcordon.so.0" pytest_run "pytest against the build tree's library"

make -s -C "$top_builddir" install-libLTLIBRARIES DESTDIR="$tmp/root" >"$tmp/install" 2>&1 || sed 's/^/# /' "$tmp/install"
lib=$(find "$tmp/root" -name libcordon.so.0 | head -n 1)
if [ -n "$lib" ]; then ok "make install DESTDIR= installs libcordon.so.0"; else not_ok "make install DESTDIR= installs libcordon.so.0"; fi
if "$py" -m pip install -q --no-deps --no-build-isolation --no-index --target "$tmp/site" "$tmp/pkg" >"$tmp/pip" 2>&1 &&
	[ -f "$tmp/site/cordon/__init__.py" ] && [ -f "$tmp/site/cordon/py.typed" ]; then
	ok "pip installs the package from its pyproject.toml (py.typed included)"
else
	not_ok "pip installs the package from its pyproject.toml (py.typed included)"; sed 's/^/# /' "$tmp/pip"
fi
rm -rf "$tmp/pkg/src" # nothing but the installed package can be imported now
where=$(PYTHONPATH="$tmp/site" CORDON_LIBRARY="$lib" "$py" -c 'import cordon; print(cordon.__file__)' 2>&1)
case $where in "$tmp/site/"*) ok "the installed package is the one imported" ;; *) not_ok "the installed package is the one imported: $where" ;; esac
PYTHONPATH="$tmp/site" CORDON_PY_INSTALLED=1 CORDON_LIBRARY="$lib" pytest_run "pytest against the installed library and package"
tap_finish
