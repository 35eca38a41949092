#!/usr/bin/env bash
# Checks that a static backoff binary is what the release promises:
#
#   dist/check-binary.sh ARCH PATH
#
# `file` must call it an executable of ARCH, static-pie on x86_64 and
# statically linked on other architectures (see dist/build-static.sh), and
# it must print its version and retry a command: directly on a machine of its architecture, under
# qemu's user-mode emulator (qemu-ARCH) on another.
set -euo pipefail

arch=${1:?usage: dist/check-binary.sh ARCH PATH}
bin=${2:?usage: dist/check-binary.sh ARCH PATH}
run=()
if [ "$arch" != "$(uname -m)" ]; then
    run=("qemu-$arch")
fi
# What `file` calls the architecture, and how the binary must be linked.
if [ "$arch" = x86_64 ]; then
    machine=x86-64 expect=static-pie
else
    machine=$arch expect="statically linked"
fi

description=$(file -b "$bin")
case $description in
*"$machine"*"$expect"*) ;;
*)
    echo "dist: $bin is not a $expect executable for $arch: $description" >&2
    exit 1
    ;;
esac
"${run[@]}" "$bin" --version >&2
# shellcheck disable=SC2016 # expanded by the inner sh
"${run[@]}" "$bin" -q --base 1ms --max-retries 1 -- sh -c '[ "$BACKOFF_ATTEMPT" = 2 ]'
