#!/bin/sh
# Regenerates the build system: ./autogen.sh && ./configure && make
set -e
cd "$(dirname "$0")"
# Several builds may share one checkout: regenerate one at a time.
if command -v flock >/dev/null 2>&1; then
	exec 9>"${TMPDIR:-/tmp}/cordon-autogen.$(id -u).lock"
	flock 9
fi
autoreconf --force --install
