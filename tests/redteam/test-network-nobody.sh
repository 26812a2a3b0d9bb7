#!/bin/sh
# The network suite (tests/redteam/test-network) as nobody when `make check`
# runs as root: the red-team suite's runner, given this suite.
CORDON_NOBODY_SUITE=test-network exec "${CORDON_TOP_SRCDIR:-.}/tests/redteam/test-redteam-nobody.sh"
