#!/usr/bin/env bash
# The static analyzers CI runs, with zero findings allowed, and the formatter's check. A
# suppression is inline, next to the code, with a comment saying why the finding is wrong
# (`// cppcheck-suppress ID`, `// NOLINT(check)`).
# Usage: .ci/analyze.sh   (from anywhere, in a configured tree; needs cppcheck, clang-tidy,
# clang-format, bear: .ci/test-setup.sh installs them)
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

# clang-tidy: the checks in .clang-tidy (core/.clang-tidy narrows them for the GLib code), on
# every C file the build compiles outside tests/, with the build's own flags: a compile
# database recorded by bear while building a copy of this working tree (tracked and new
# files) in a scratch directory, so this tree's build is left alone. Two GCC-only flags of
# the freestanding init are dropped for clang. A suppression is `// NOLINT(check): why`.
db_dir=$(mktemp -d)
trap 'rm -rf "$db_dir"' EXIT
git ls-files -z --cached --others --exclude-standard |
	tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$db_dir"
(cd "$db_dir" && ./autogen.sh && ./configure -q && bear -- make -j"$(nproc)") >/dev/null 2>&1 ||
	{ echo "clang-tidy: the build for the compile database failed" >&2; exit 1; }
python3 - "$db_dir/compile_commands.json" <<'PY'
import json, sys
gcc_only = {"-fno-tree-loop-distribute-patterns", "-Wl,--build-id=none"}
db = json.load(open(sys.argv[1]))
for entry in db:
    entry["arguments"] = [a for a in entry["arguments"] if a not in gcc_only]
json.dump(db, open(sys.argv[1], "w"))
PY
out=$(cd "$db_dir" && run-clang-tidy -p . -quiet "$db_dir/(common|core|agent|plugins|sdk)/" 2>&1 |
	sed 's/\x1b\[[0-9;]*m//g') || true
findings=$(printf '%s\n' "$out" | grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error):' | sort -u || true)
[ -z "$findings" ] || { echo "$findings"; echo "clang-tidy: findings (above)" >&2; exit 1; }
printf '%s\n' "$out" | grep -q -E 'error:|Error while processing' &&
	{ printf '%s\n' "$out" | tail -n 30; echo "clang-tidy: did not run cleanly" >&2; exit 1; }
echo "clang-tidy: no findings"

# clang-format: every C source the project writes is formatted by .clang-format (generated
# sources and the frozen ABI 1.1 header are not ours to reformat).
unformatted=$(git ls-files '*.c' '*.h' | grep -v -E '^(core/local/(nsinit-blob|seccomp-prebuilt)\.c|tests/plugins/abi-1\.1/)' |
	while read -r f; do clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || echo "$f"; done)
[ -z "$unformatted" ] || { echo "$unformatted"; echo "clang-format: these files differ from .clang-format (run clang-format -i on them)" >&2; exit 1; }
echo "clang-format: every file formatted"
