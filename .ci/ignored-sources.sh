#!/usr/bin/env bash
# Before committing: list source-like files that .gitignore hides from git in this checkout
# (beyond what autotools and the build generate). Such a file builds here and is missing
# from every clean clone: bench/benchutil.h was lost that way once. Exit 1 if any.
# Run it in a built checkout; on a clean clone it finds nothing by construction.
set -euo pipefail
cd "$(dirname "$0")/.."
generated='^(Makefile\.in|config\.h|config\.h\.in|confdefs\.h|build-aux/.*|core/local/nsinit-blob\.c|core/local/seccomp-prebuilt\.c|plugins/oci/seccomp-profile\.c)$'
found=$(git ls-files --others --ignored --exclude-standard -- \
	'*.c' '*.h' '*.S' '*.sh' '*.py' '*.mjs' '*.md' '*.yaml' '*.am' '*.in' | grep -Ev "$generated" || true)
if [ -n "$found" ]; then
	echo "ignored by git but looks like source (commit it or fix .gitignore):" >&2
	printf '%s\n' "$found" | sed 's/^/  /' >&2
	exit 1
fi
echo "ignored-sources: none"
