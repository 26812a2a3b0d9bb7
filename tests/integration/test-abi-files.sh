#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# What the installed files say about the ABIs agrees with the code (TAP):
# - libcordon's exported symbols are exactly the committed list (core/libcordon.symbols), and
#   the list names the libtool version it belongs to, which is configure's CORDON_LT_VERSION:
#   a symbol added or removed fails here until the list is updated, and updating it means
#   choosing the new version by the rule in HACKING.md;
# - cordon-plugin.pc states the plugin ABI that <cordon/plugin.h> defines;
# - <cordon/plugin.h> compiles for a compiler without GNU attributes (MSVC builds plugins):
#   no libc, no __GNUC__, and __attribute__ a syntax error.
set -u
top_builddir=${CORDON_TOP_BUILDDIR:?run through make check}
top_srcdir=${CORDON_TOP_SRCDIR:?run through make check}
. "$top_srcdir/tests/integration/tap.sh"

list=$top_srcdir/core/libcordon.symbols
lib=$top_builddir/core/.libs/libcordon.so
if [ ! -e "$lib" ]; then
	echo "Bail out! $lib was not built (the symbol list is checked on the shared library)"
	exit 1
fi

nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBR]$/ { print $3 }' | sed 's/@.*//' |
	LC_ALL=C sort -u >"$tmp/exported"
grep -v '^#' "$list" | LC_ALL=C sort -u >"$tmp/listed"
if cmp -s "$tmp/exported" "$tmp/listed"; then ok "exported symbols equal core/libcordon.symbols"
else
	not_ok "exported symbols differ from core/libcordon.symbols (+ exported, - listed only):"
	diff "$tmp/listed" "$tmp/exported" | sed -n 's/^> /# + /p; s/^< /# - /p'
fi

check "every exported symbol starts with cordon_" 1 grep -v '^cordon_' "$tmp/exported"

listed_version=$(sed -n 's/^# CORDON_LT_VERSION \([0-9]*:[0-9]*:[0-9]*\)$/\1/p' "$list")
built_version=$(sed -n 's/^CORDON_LT_VERSION = //p' "$top_builddir/Makefile")
if [ -n "$listed_version" ] && [ "$listed_version" = "$built_version" ]; then
	ok "the list belongs to libtool version $built_version"
else
	not_ok "the list names version '${listed_version}', configure.ac has '${built_version}'"
fi

hdr=$top_srcdir/sdk/include/cordon/plugin.h
major=$(sed -n 's/^#define CORDON_PLUGIN_ABI_MAJOR \([0-9]*\).*/\1/p' "$hdr")
minor=$(sed -n 's/^#define CORDON_PLUGIN_ABI_MINOR \([0-9]*\).*/\1/p' "$hdr")
pc_abi=$(sed -n 's/^abi=//p' "$top_builddir/sdk/cordon-plugin.pc")
if [ -n "$major" ] && [ "$pc_abi" = "$major.$minor" ]; then
	ok "cordon-plugin.pc states plugin ABI $pc_abi, as plugin.h does"
else
	not_ok "cordon-plugin.pc states plugin ABI '$pc_abi', plugin.h defines '$major.$minor'"
fi

# The four headers plugin.h includes, as a compiler without GNU extensions might have them.
mkdir "$tmp/inc"
printf 'typedef __builtin_va_list va_list;\n' >"$tmp/inc/stdarg.h"
printf '#define bool _Bool\n#define true 1\n#define false 0\n' >"$tmp/inc/stdbool.h"
printf 'typedef unsigned long size_t;\n#define NULL ((void *)0)\n' >"$tmp/inc/stddef.h"
printf 'typedef unsigned %s uint%s_t;\ntypedef %s int%s_t;\n' char 8 'signed char' 8 short 16 \
	short 16 int 32 int 32 'long long' 64 'long long' 64 >"$tmp/inc/stdint.h"
printf '#include <cordon/plugin.h>\nstatic int i(const cordon_host *h, cordon_plugin_registrar *r,\n'\
'cordon_plugin_error *e) { return h->log ? 0 : 1; }\nCORDON_PLUGIN_DEFINE("x", "1", "x", "MIT", i)\n' \
	>"$tmp/nognu.c"
check "plugin.h compiles without GNU attributes" 0 ${CC:-cc} -std=c99 -nostdinc -U__GNUC__ \
	-U__clang__ '-D__attribute__(x)=@' -I"$tmp/inc" -I"$top_srcdir/sdk/include" -fsyntax-only \
	"$tmp/nognu.c"
tap_finish
