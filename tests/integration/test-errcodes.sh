#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The error code registry (common/errcodes.def) against the documentation and the source (TAP):
# - docs/error-handling.md's "Every code" table is the registry, row for row (generated:
#   `tests/integration/test-errcodes.sh --print` writes it);
# - every code a docs/ table gives with a class is registered, with that class;
# - no error code is an inline string in the core or the in-tree plugins: each is ERRC(code),
#   which compiles only for a registered code. The files being moved or rewritten on issue 11
#   (LEGACY below) still hold strings: each of those must be registered.
set -u
top_srcdir=${CORDON_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
def=$top_srcdir/common/errcodes.def
doc=$top_srcdir/docs/error-handling.md
LEGACY="plugins/oci/session.c"

# code TAB class (lower case) TAB meaning, in registry order
registry() {
	sed -n 's/^ERRCODE(\([a-z0-9_]*\), \([A-Z]*\), "\(.*\)")$/\1	\2	\3/p' "$def" |
		awk -F '	' '{ printf "%s\t%s\t%s\n", $1, tolower($2), $3 }'
}

print_table() {
	echo '| code | class | meaning |'
	echo '|---|---|---|'
	registry | awk -F '	' '{ printf "| `%s` | `%s` | %s |\n", $1, $2, $3 }'
}

if [ "${1:-}" = --print ]; then
	print_table
	exit 0
fi

. "$top_srcdir/tests/integration/tap.sh"

registry >"$tmp/registry"
entries=$(grep -c '^ERRCODE(' "$def")
if [ "$entries" -eq "$(wc -l <"$tmp/registry")" ] && [ "$entries" -gt 0 ]; then
	ok "every line of errcodes.def is ERRCODE(code, CLASS, \"meaning\") ($entries codes)"
else
	not_ok "errcodes.def has $entries ERRCODE lines, $(wc -l <"$tmp/registry") well-formed"
fi
if awk -F '	' '$2 !~ /^(terminal|forbidden|transient|cancelled|invalid)$/ { bad = 1 } END { exit bad }' \
	"$tmp/registry"; then ok "every registered class is a cordon_error_class"
else not_ok "a registered class is not TERMINAL, FORBIDDEN, TRANSIENT, CANCELLED or INVALID"; fi

# The generated table, between its markers.
sed -n '/^<!-- errcodes: begin/,/^<!-- errcodes: end/p' "$doc" | sed '1d;$d' >"$tmp/doc-table"
print_table >"$tmp/want-table"
if cmp -s "$tmp/want-table" "$tmp/doc-table"; then ok "docs/error-handling.md lists every registered code"
else
	not_ok "docs/error-handling.md's table differs from the registry (regenerate it with $0 --print):"
	diff "$tmp/want-table" "$tmp/doc-table" | sed 's/^/# /'
fi

# Code and class in any other docs table: | `code` | `class` | ...
grep -h -o '^| `[a-z0-9_]*` | `[a-z]*` |' "$top_srcdir"/docs/*.md "$top_srcdir"/docs/tiers/*.md |
	sed 's/^| `\([a-z0-9_]*\)` | `\([a-z]*\)` |$/\1	\2/' |
	grep -E '	(terminal|forbidden|transient|cancelled|invalid)$' | sort -u >"$tmp/documented"
cut -f1,2 "$tmp/registry" | sort -u >"$tmp/registered"
unknown=$(comm -23 "$tmp/documented" "$tmp/registered")
if [ -z "$unknown" ]; then ok "every code the docs give a class is registered with that class"
else
	not_ok "docs give codes the registry does not have (or with another class):"
	echo "$unknown" | sed 's/^/# /'
fi

# Error codes in code position: after a class, as perr/cfg_error/fail_at/FORBID's code, compared
# with strcmp(code, ...), assigned to ->code, or the in-container helper's fail/refuse_write/
# code_for. Prints FILE:LINE: CODE.
scan() {
	perl -e '
	my $c = qr/"([a-z][a-z0-9]*(?:_[a-z0-9]+)*)"/;
	my @p = (qr/ERROR_[A-Z]+\s*,\s*$c/,
		 qr/\b(?:cfg_error|fail_at|FORBID)\s*\(\s*[^,()]+,\s*$c/,
		 qr/\b(?:fail|refuse_write)\s*\(\s*$c/, qr/\bstrcmp\s*\(\s*code\s*,\s*$c/);
	for my $f (@ARGV) {
		open(my $fh, "<", $f) or die "$f: $!"; local $/; my $s = <$fh>;
		my @hits;
		for my $p (@p) { while ($s =~ /$p/g) { push @hits, [$-[0], $1] } }
		# every literal of a code expression: the first argument of perr, ->code = ...
		while ($s =~ /(?:\bperr\s*\(\s*&?c\s*,([^,]*),|->code\s*=\s*([^;]*);)/g) {
			my ($at, $rhs) = ($-[0], defined $1 ? $1 : $2);
			push @hits, [$at, $1] while $rhs =~ /$c/g;
		}
		if ($f =~ m{/helper/}) { while ($s =~ /\breturn\s+$c;/g) { push @hits, [$-[0], $1] } }
		for my $h (@hits) {
			my $line = (substr($s, 0, $h->[0]) =~ tr/\n//) + 1;
			print "$f:$line: $h->[1]\n";
		}
	}' "$@"
}
cd "$top_srcdir" || exit 1
sources=$(find core plugins common agent server -name '*.[ch]' ! -name 'nsinit*' ! -name 'gen-seccomp-*' \
	! -name 'seccomp-prebuilt.c' ! -name 'seccomp-profile.c' | LC_ALL=C sort)
legacy_re=$(echo $LEGACY | sed 's/ /|/g; s/\./\\./g')
inline=$(scan $(echo "$sources" | grep -Ev "^($legacy_re)$"))
if [ -z "$inline" ]; then ok "no error code is an inline string outside the legacy files (ERRC only)"
else
	not_ok "error codes written as strings (use ERRC(code), common/errcodes.h):"
	echo "$inline" | sed 's/^/# /'
fi
scan $LEGACY | sed 's/.*: //' | sort -u >"$tmp/legacy"
unregistered=$(cut -f1 "$tmp/registry" | sort -u | comm -13 - "$tmp/legacy")
if [ -z "$unregistered" ]; then ok "every code left as a string in the legacy files is registered"
else
	not_ok "codes in the legacy files that the registry lacks:"
	echo "$unregistered" | sed 's/^/# /'
fi
tap_finish
