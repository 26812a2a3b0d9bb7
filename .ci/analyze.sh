#!/usr/bin/env bash
# The static analyzers CI runs, with zero findings allowed. A suppression is inline, next to
# the code, with a comment saying why the finding is wrong (`// cppcheck-suppress ID`).
# Usage: .ci/analyze.sh   (from anywhere; needs cppcheck)
set -euo pipefail
cd "$(dirname "$0")/.."

# cppcheck: the code cordon builds (x86-64, GCC, GLib's macros known through its gtk
# library file); system headers are not analysed.
out=$(cppcheck --quiet --error-exitcode=1 --inline-suppr --library=gtk \
	--enable=warning,portability,performance -D__GNUC__ -D__x86_64__ -D__linux__ \
	-I core -I core/include -I sdk/include -I plugins -I common -I server --suppress=missingIncludeSystem \
	--template='{file}:{line}:{column}: {severity}: {message} [{id}]' \
	common core plugins sdk server 2>&1) || { echo "$out"; echo "cppcheck: findings (above)" >&2; exit 1; }
[ -z "$out" ] || { echo "$out"; echo "cppcheck: findings (above)" >&2; exit 1; }
echo "cppcheck: no findings"
