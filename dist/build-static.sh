#!/usr/bin/env bash
# Builds the release artefact of backoff for Linux: one static,
# position-independent executable (static-pie, so the kernel still places
# it at a random address), linked with musl, that runs on any Linux machine
# of its architecture without a shared library or NSS module.
#
# Usage, from anywhere:
#   dist/build-static.sh
#
# It prints the path of the binary it made:
#   target/ARCH-unknown-linux-musl/release/backoff
#
# ARCH is this machine's (uname -m). It needs the Rust target (`rustup
# target add ARCH-unknown-linux-musl`, done here when missing) and a C
# compiler for musl, for the TLS code of the Redis store (Debian:
# musl-tools). The everyday build, `cargo build --release`, is not changed
# by any of this.
set -euo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."

arch=$(uname -m)
target=$arch-unknown-linux-musl

if ! rustup target list --installed | grep -qx "$target"; then
    rustup target add "$target" >&2
fi
if ! command -v "$arch-linux-musl-gcc" >/dev/null && ! command -v musl-gcc >/dev/null; then
    echo "dist: no C compiler for musl ($arch-linux-musl-gcc or musl-gcc); on Debian: apt-get install musl-tools" >&2
    exit 1
fi

cargo build --locked --release --target "$target" >&2
bin=target/$target/release/backoff

# The binary must be what this script promises: static, position-independent,
# and working.
description=$(file -b "$bin")
case $description in
*static-pie*) ;;
*)
    echo "dist: $bin is not a static-pie executable: $description" >&2
    exit 1
    ;;
esac
"$bin" --version >&2
"$bin" -q --base 1ms --max-retries 1 -- sh -c '[ "$BACKOFF_ATTEMPT" = 2 ]'
echo "$bin"
