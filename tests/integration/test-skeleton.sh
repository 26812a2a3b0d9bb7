#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The out-of-tree plugin story, end to end (TAP): install cordon into a
# temporary DESTDIR, build sdk/examples/skeleton there with nothing but
# `pkg-config --cflags cordon-plugin`, and load it with the installed CLI.
set -u

top_builddir=${CORDON_TOP_BUILDDIR:?run through make check}
top_srcdir=${CORDON_TOP_SRCDIR:?run through make check}

skip_all() {
	if [ "${CORDON_REQUIRE:-}" = all ]; then
		echo "Bail out! CORDON_REQUIRE=all: $1"
		exit 1
	fi
	echo "1..0 # SKIP $1"
	exit 0
}

command -v pkg-config >/dev/null 2>&1 || skip_all "pkg-config is not installed"
command -v "${CC:-cc}" >/dev/null 2>&1 || skip_all "no C compiler (${CC:-cc})"
command -v make >/dev/null 2>&1 || skip_all "make is not installed"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cordon-skeleton-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
umask 022
root=$tmp/root

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
	n=$((n + 1))
	failed=1
	echo "not ok $n - $1"
	[ -n "${2:-}" ] && [ -f "$2" ] && sed 's/^/# /' "$2"
	return 0
}
check() { # description log command...
	desc=$1 log=$2
	shift 2
	if "$@" >"$log" 2>&1; then ok "$desc"; else not_ok "$desc" "$log"; fi
}

echo "1..8"

# Where the build will install, as its own pkg-config file says.
pc=$top_builddir/sdk/cordon-plugin.pc
prefix=$(pkg-config --variable=prefix "$pc")
libdir=$(pkg-config --variable=libdir "$pc")
bindir=$(sed -n 's/^bindir = //p' "$top_builddir/Makefile" | head -n1)
bindir=${bindir:-$prefix/bin}
case $bindir in *'$'*) bindir=$prefix/bin ;; esac

# 1. The SDK installs. The parent make's flags (jobserver, variables from
# its command line) must not leak into this one.
check "make install DESTDIR=<tmp>" "$tmp/install.log" \
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$top_builddir" install DESTDIR="$root"

# 2. pkg-config finds the installed SDK, and only it.
export PKG_CONFIG_PATH="$root$libdir/pkgconfig"
export PKG_CONFIG_LIBDIR="$root$libdir/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$root"
cflags=$(pkg-config --cflags cordon-plugin 2>"$tmp/pc.log")
case $cflags in
*"$root"*) if [ -f "$root$prefix/include/cordon/plugin.h" ]; then ok "pkg-config --cflags cordon-plugin points into the install ($cflags)"; else not_ok "plugin.h installed under $root$prefix/include"; fi ;;
*) not_ok "pkg-config --cflags cordon-plugin points into the install (got '$cflags')" "$tmp/pc.log" ;;
esac

# 3. The skeleton builds out of tree (a copy: the source tree may be read-only).
cp -R "$top_srcdir/sdk/examples/skeleton" "$tmp/skeleton"
chmod -R u+w "$tmp/skeleton"
rm -f "$tmp/skeleton/skeleton.so"
check "the skeleton builds with only pkg-config" "$tmp/build.log" \
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$tmp/skeleton"

# 4. It exports exactly one symbol and needs nothing from libcordon.
syms=$(nm -D --defined-only "$tmp/skeleton/skeleton.so" 2>/dev/null | awk '$2 ~ /^[TDBR]$/ {print $3}' | tr '\n' ' ')
needed=$(readelf -d "$tmp/skeleton/skeleton.so" 2>/dev/null | grep NEEDED)
if [ "$syms" = "cordon_plugin_entry " ] && ! printf '%s' "$needed" | grep -q libcordon; then
	ok "the skeleton exports only cordon_plugin_entry and does not link libcordon"
else
	not_ok "the skeleton exports only cordon_plugin_entry (got '$syms') and does not link libcordon ($needed)"
fi

# 5. It installs where it is told.
plugins=$tmp/plugins
check "make install PLUGINDIR=<tmp>/plugins" "$tmp/pinstall.log" \
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$tmp/skeleton" install PLUGINDIR="$plugins"
chmod 0755 "$plugins" 2>/dev/null

# 6. The installed CLI loads it.
cordon=$root$bindir/cordon
export LD_LIBRARY_PATH="$root$libdir"
"$cordon" plugins --plugin-dir "$plugins" >"$tmp/plugins.out" 2>&1
if grep -Eq '^skeleton +loaded +0\.1 +drivers: skeleton$' "$tmp/plugins.out"; then
	ok "cordon plugins lists the skeleton as loaded with its driver"
else
	not_ok "cordon plugins lists the skeleton as loaded with its driver" "$tmp/plugins.out"
fi

# 7. The same, as JSON.
"$cordon" plugins --plugin-dir "$plugins" --json >"$tmp/plugins.json" 2>&1
if grep -q '"plugin":"skeleton","loaded":true,"version":"0.1","drivers":"skeleton"' "$tmp/plugins.json"; then
	ok "cordon plugins --json reports it loaded"
else
	not_ok "cordon plugins --json reports it loaded" "$tmp/plugins.json"
fi

# 8. A copy under another name is refused, with the reason, and the CLI
# still lists the good one: a bad plugin never takes the host down.
cp "$plugins/skeleton.so" "$plugins/renamed.so"
"$cordon" plugins --plugin-dir "$plugins" >"$tmp/renamed.out" 2>&1
if grep -Eq "^renamed +refused +plugin name 'skeleton' does not match its file name 'renamed'" "$tmp/renamed.out" &&
	grep -Eq '^skeleton +loaded' "$tmp/renamed.out"; then
	ok "a misnamed copy is refused with its reason, the original still loads"
else
	not_ok "a misnamed copy is refused with its reason, the original still loads" "$tmp/renamed.out"
fi

exit $failed
