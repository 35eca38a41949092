#!/usr/bin/env bash
# Installs a Debian package of backoff on this machine, checks that it
# works as installed, and removes it again:
#
#   dist/check-deb.sh target/dist/backoff_VERSION-1_amd64.deb
#
# It lists the package, installs it with dpkg, runs /usr/bin/backoff
# --version and a retry, finds the man pages with `man -w` and reads the
# changelog in /usr/share/doc/backoff, and completes an
# option through bash-completion's loader (and through zsh's and fish's own
# lookup where those shells are installed), then removes the package. It
# needs root, dpkg, man-db and bash-completion, and it refuses to run where
# the package, or any file of it, is on the machine already, so that it
# never replaces or removes what it did not install.
set -euo pipefail

deb=${1:?usage: dist/check-deb.sh PACKAGE.deb}
if [ ! -f "$deb" ]; then
    echo "dist: no package at '$deb'" >&2
    exit 1
fi
# dpkg would take over a file that no package owns and delete it on
# removal: refuse where any file of the package exists already.
status=$(dpkg-query -W -f '${db:Status-Status}' backoff 2>/dev/null || true)
if [ -n "$status" ] && [ "$status" != not-installed ]; then
    echo "dist: the backoff package is on this machine already ($status); not checking $deb here" >&2
    exit 1
fi
while read -r path; do
    if [ -e "$path" ] || [ -L "$path" ]; then
        echo "dist: $path exists already; not checking $deb here" >&2
        exit 1
    fi
done < <(dpkg-deb --contents "$deb" | awk '$1 !~ /^d/ { sub(/^\./, "", $6); print $6 }')

dpkg-deb --info "$deb"
dpkg-deb --contents "$deb"
scratch=$(mktemp -d)
trap 'dpkg -r backoff >/dev/null 2>&1 || true; rm -rf -- "$scratch"' EXIT
dpkg -i "$deb"

fail() {
    echo "dist: installed from $deb, $*" >&2
    exit 1
}

[ "$(command -v backoff)" = /usr/bin/backoff ] || fail "backoff is not /usr/bin/backoff"
backoff --version
# shellcheck disable=SC2016 # expanded by the inner sh
backoff -q --base 1ms --max-retries 1 -- sh -c '[ "$BACKOFF_ATTEMPT" = 2 ]' ||
    fail "backoff did not retry"
for page in backoff backoff-schedule backoff-simulate backoff-budget backoff-breaker; do
    man -w "$page" || fail "man cannot find $page"
done
[ "$(gzip -dc /usr/share/doc/backoff/changelog.gz | head -n 1)" = "# Changelog" ] ||
    fail "/usr/share/doc/backoff/changelog.gz is not backoff's changelog"

# What a user gets from pressing Tab after `backoff --jit`. The shells keep
# their caches in a home of their own, not in the caller's.
export HOME=$scratch
# shellcheck disable=SC2016 # expanded by the inner bash
bash_reply=$(bash -c '
    source /usr/share/bash-completion/bash_completion
    _completion_loader backoff
    function=$(complete -p backoff | sed -n "s/.* -F \([^ ]*\) .*/\1/p")
    COMP_WORDS=(backoff --jit) COMP_CWORD=1 COMP_LINE="backoff --jit" COMP_POINT=13
    "$function" backoff --jit backoff
    printf "%s\n" "${COMPREPLY[@]}"')
echo "bash completes backoff --jit: $bash_reply"
[ "$bash_reply" = --jitter ] || fail "bash-completion does not complete --jit"
if command -v zsh >/dev/null; then
    zsh_function=$(zsh -c 'autoload -U compinit && compinit -u && print -r -- $_comps[backoff]')
    echo "zsh completes backoff with: $zsh_function"
    [ "$zsh_function" = _backoff ] || fail "zsh does not find its completion"
fi
if command -v fish >/dev/null; then
    fish_reply=$(fish -c 'complete -C"backoff --jit"' | cut -f 1)
    echo "fish completes backoff --jit: $fish_reply"
    [ "$fish_reply" = --jitter ] || fail "fish does not complete --jit"
fi

trap 'rm -rf -- "$scratch"' EXIT
dpkg -r backoff
[ ! -e /usr/bin/backoff ] || fail "dpkg -r left /usr/bin/backoff"
echo "dist: $deb installs, works and removes cleanly"
