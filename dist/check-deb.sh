#!/usr/bin/env bash
# Installs a Debian package of backoff on this machine, checks that it
# works as installed, and removes it again:
#
#   dist/check-deb.sh target/dist/backoff_VERSION-1_amd64.deb
#
# It lists the package, installs it with dpkg, runs /usr/bin/backoff
# --version and a retry, finds the man pages with `man -w`, and completes an
# option through bash-completion's loader (and through zsh's and fish's own
# lookup where those shells are installed), then removes the package. It
# needs root, dpkg, man-db and bash-completion, and it refuses to run where
# a backoff is installed already, so that it never replaces one.
set -euo pipefail

deb=${1:?usage: dist/check-deb.sh PACKAGE.deb}
if dpkg-query -W -f '${Status}' backoff 2>/dev/null | grep -q installed || [ -e /usr/bin/backoff ]; then
    echo "dist: backoff is installed on this machine already; not checking $deb here" >&2
    exit 1
fi

dpkg-deb --info "$deb"
dpkg-deb --contents "$deb"
dpkg -i "$deb"
trap 'dpkg -r backoff >/dev/null' EXIT

fail() {
    echo "dist: installed from $deb, $*" >&2
    exit 1
}

[ "$(command -v backoff)" = /usr/bin/backoff ] || fail "backoff is not /usr/bin/backoff"
backoff --version
backoff -q --base 1ms --max-retries 1 -- sh -c '[ "$BACKOFF_ATTEMPT" = 2 ]' ||
    fail "backoff did not retry"
for page in backoff backoff-schedule backoff-simulate backoff-budget backoff-breaker; do
    man -w "$page" || fail "man cannot find $page"
done

# What a user gets from pressing Tab after `backoff --jit`.
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

trap - EXIT
dpkg -r backoff
[ ! -e /usr/bin/backoff ] || fail "dpkg -r left /usr/bin/backoff"
echo "dist: $deb installs, works and removes cleanly"
