#!/bin/sh
# Fuzzes the policy parser and the host's decoder of the agent's frames for a
# bounded time, split between them (CI: tests/fuzz/run.sh 60).
#   tests/fuzz/run.sh [SECONDS]        default 60
# Builds tests/fuzz/fuzz-policy.c with the parser's sources, and
# tests/fuzz/fuzz-agent-frames.c with agent/client.c (the agent runs inside
# the sandbox: its frames are hostile once it is compromised), under clang
# -fsanitize=fuzzer,address,undefined into $FUZZ_DIR (default: a temporary
# directory). The policy fuzzer's seeds: tests/fuzz/corpus, the good and
# bad policies of tests/fixtures/policies, and the YAML examples of
# docs/policy.md; the agent fuzzer's: tests/fuzz/corpus-agent. Exits non-zero
# when a fuzzer finds a crash, a leak or a timeout; the reproducer is left in
# $FUZZ_DIR. Without clang it skips (77),
# unless CORDON_REQUIRE=all, where a skip is a failure.
set -eu
secs=${1:-60}
agent_secs=$((secs / 2))
policy_secs=$((secs - agent_secs))
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

if ! command -v clang >/dev/null 2>&1; then
	echo "fuzz: clang is not installed (apt-get install clang)" >&2
	[ "${CORDON_REQUIRE:-}" = all ] && exit 1
	exit 77
fi
dir=${FUZZ_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/cordon-fuzz-XXXXXX")}
mkdir -p "$dir/work" "$dir/seeds" "$dir/agent-work"

# The parser does not need configure's config.h: only _GNU_SOURCE, and a version for the
# check of cordon's own plugins' claims (which no policy text can reach).
printf '#define _GNU_SOURCE 1\n#define PACKAGE_VERSION "0-fuzz"\n' >"$dir/config.h"
# shellcheck disable=SC2046 # pkg-config output is word-split on purpose
clang -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -std=gnu11 \
	-I"$dir" -I"$top/core" -I"$top/core/net" -I"$top/core/include" -I"$top/sdk/include" -I"$top/common" \
	$(pkg-config --cflags glib-2.0 yaml-0.1) \
	"$here/fuzz-policy.c" "$top/core/cfgtree.c" "$top/core/policy.c" "$top/core/policy-read.c" \
	"$top/core/policy-schema.c" "$top/core/policy-services.c" "$top/core/net/egress.c" \
	"$top/core/error.c" \
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

# The agent's frames: the client alone (libc and the SDK header, common/fserror.c
# for the classes of its error codes).
clang -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -std=gnu11 \
	-I"$dir" -I"$top/agent" -I"$top/common" -I"$top/sdk/include" \
	"$here/fuzz-agent-frames.c" "$top/agent/client.c" "$top/common/fserror.c" \
	"$top/common/pathres.c" -o "$dir/fuzz-agent-frames"

echo "fuzz: $(find "$dir/seeds" -type f | wc -l) policy seeds, ${policy_secs}s, in $dir"
cd "$dir"
./fuzz-policy -max_total_time="$policy_secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
	-dict="$here/policy.dict" -print_final_stats=1 work seeds
echo "fuzz: agent frames, ${agent_secs}s"
./fuzz-agent-frames -max_total_time="$agent_secs" -max_len=262144 -timeout=10 \
	-rss_limit_mb=2048 -print_final_stats=1 agent-work "$here/corpus-agent"
