# SPDX-License-Identifier: LGPL-2.1-or-later
# zsh-complete.zsh FPATH-DIR WORDS: for tests/integration/test-cli-help.sh. An interactive zsh
# on a pseudo-terminal (zsh/zpty), compinit with the completion functions of FPATH-DIR, WORDS
# typed, then TAB: prints what the terminal showed (the completed line is in it).
zmodload zsh/zpty || exit 2
zpty -b z 'PS1="%% " TERM=dumb zsh -f -i'
zpty -w z "fpath=($1 \$fpath); autoload -U compinit; compinit -u -D; cordon() { :; }; print READY"
zpty -r z line '*READY*' || exit 2
zpty -w -n z "$2"$'\t'
out=""
for _ in 1 2 3 4 5 6 7 8 9 10; do
	sleep 0.2
	while zpty -r -t z chunk; do out+=$chunk; done
done
print -r -- "$out"
zpty -d z
