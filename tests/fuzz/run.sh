#!/bin/sh
# Fuzzes the policy parser for a bounded time (CI: tests/fuzz/run.sh 60).
#   tests/fuzz/run.sh [SECONDS]        default 60
# Builds tests/fuzz/fuzz-policy.c with the parser's sources under clang
# -fsanitize=fuzzer,address,undefined into $FUZZ_DIR (default: a temporary
# directory) and runs it on a seed corpus: tests/fuzz/corpus, the good and
# bad policies of tests/fixtures/policies, and the YAML examples of
# docs/policy.md. Exits non-zero when the fuzzer finds a crash, a leak or a
# timeout; the reproducer is left in $FUZZ_DIR. Without clang it skips (77),
# unless CORDON_REQUIRE=all, where a skip is a failure.
set -eu
secs=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

if ! command -v clang >/dev/null 2>&1; then
	echo "fuzz: clang is not installed (apt-get install clang)" >&2
	[ "${CORDON_REQUIRE:-}" = all ] && exit 1
	exit 77
fi
dir=${FUZZ_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/cordon-fuzz-XXXXXX")}
mkdir -p "$dir/work" "$dir/seeds"

# The parser does not need configure's config.h: only _GNU_SOURCE.
printf '#define _GNU_SOURCE 1\n' >"$dir/config.h"
# shellcheck disable=SC2046 # pkg-config output is word-split on purpose
clang -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -std=gnu11 \
	-I"$dir" -I"$top/core" -I"$top/core/include" -I"$top/sdk/include" -I"$top/common" \
	$(pkg-config --cflags glib-2.0 yaml-0.1) \
	"$here/fuzz-policy.c" "$top/core/cfgtree.c" "$top/core/policy.c" "$top/core/error.c" \
	"$top/core/request.c" "$top/core/env.c" "$top/core/filetrust.c" "$top/common/units.c" \
	$(pkg-config --libs glib-2.0 yaml-0.1) -o "$dir/fuzz-policy"

# Seeds: the committed corpus, every fixture, every example of the documentation.
cp "$here"/corpus/* "$dir/seeds/"
for f in "$top"/tests/fixtures/policies/good/* "$top"/tests/fixtures/policies/bad/*; do
	cp "$f" "$dir/seeds/fixture-$(basename "$(dirname "$f")")-$(basename "$f")"
done
awk -v out="$dir/seeds/doc-example-" '
	/^```yaml$/ { n++; file = out n ".yaml"; inside = 1; next }
	/^```/ { inside = 0 }
	inside { print > file }' "$top/docs/policy.md"

echo "fuzz: $(find "$dir/seeds" -type f | wc -l) seeds, ${secs}s, in $dir"
cd "$dir"
./fuzz-policy -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
	-dict="$here/policy.dict" -print_final_stats=1 work seeds
