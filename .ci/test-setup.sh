#!/usr/bin/env bash
# Installs what the tests and the analyzers need beyond the build dependencies, and starts the services the
# container tests use (dockerd, a local registry) with a digest-pinned busybox image.
# Idempotent: safe to run again on a developer machine.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq python3-pytest zsh clang libclang-rt-14-dev clang-tidy clang-format bear cppcheck valgrind bubblewrap util-linux procps iproute2 >/dev/null
# cordon server (libmicrohttpd, json-c), the e2b plugin (libcurl), and E2B's official SDK for
# tests/e2b, pinned by its lockfile, kept where every checkout's test finds it (the ASan and
# TSan clones of .ci/run have no node_modules of their own).
apt-get install -y -qq libmicrohttpd-dev libjson-c-dev libcurl4-openssl-dev >/dev/null
command -v npm >/dev/null || apt-get install -y -qq nodejs npm >/dev/null
sdk=/var/lib/cordon-ci/e2b-sdk
mkdir -p "$sdk"
cp tests/e2b/package.json tests/e2b/package-lock.json "$sdk/"
(cd "$sdk" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
# A tree configured before these were installed (README line 1) picks them up now.
if [ -x config.status ]; then ./config.status --recheck >/dev/null && ./config.status >/dev/null; fi
.ci/engines.sh setup
.ci/vm-guest.sh
