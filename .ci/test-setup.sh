#!/usr/bin/env bash
# Installs what the tests and the analyzers need beyond the build dependencies, and starts the services the
# container tests use (dockerd, a local registry) with a digest-pinned busybox image.
# Idempotent: safe to run again on a developer machine.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq python3-pytest clang libclang-rt-14-dev clang-tidy clang-format bear cppcheck valgrind bubblewrap util-linux procps iproute2 >/dev/null
.ci/engines.sh setup
