#!/usr/bin/env bash
# Builds the release artefact of backoff for Linux: one static executable,
# linked with musl, that runs on any Linux machine of its architecture
# without a shared library or NSS module.
#
# Usage, from anywhere:
#   dist/build-static.sh            # this machine's architecture
#   dist/build-static.sh aarch64    # Linux on 64-bit ARM, cross-built
#
# It prints the absolute path of the binary it made:
#   .../target/ARCH-unknown-linux-musl/release/backoff
# (under CARGO_TARGET_DIR instead of target/ when that is set).
#
# It needs the Rust target (`rustup target add ARCH-unknown-linux-musl`,
# done here when missing) and a C compiler for the TLS code of the Redis
# store: for this machine's architecture, musl's (Debian: musl-tools); for
# another, Debian's cross compiler for it (gcc-aarch64-linux-gnu), which
# also links the binary against the musl that comes with Rust's target.
# A cross-built binary is checked under qemu's user-mode emulator (Debian:
# qemu-user). The everyday build, `cargo build --release`, is not changed
# by any of this.
#
# On x86_64 the binary is static-pie: the kernel still loads it at a random
# address. Rust's aarch64 musl target links plain static executables (its
# stack, heap and libraries' mappings are still placed at random, its code
# is not), and a stable toolchain cannot change that.
set -euo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."

host=$(uname -m)
arch=${1:-$host}
case $arch in
x86_64 | aarch64) ;;
*)
    echo "dist: no release for the architecture '$arch': x86_64 or aarch64 (Debian's amd64 and arm64)" >&2
    exit 1
    ;;
esac
target=$arch-unknown-linux-musl

if ! rustup target list --installed | grep -qx "$target"; then
    rustup target add "$target" >&2
fi
if [ "$arch" = "$host" ]; then
    if ! command -v "$arch-linux-musl-gcc" >/dev/null && ! command -v musl-gcc >/dev/null; then
        echo "dist: no C compiler for musl ($arch-linux-musl-gcc or musl-gcc); on Debian: apt-get install musl-tools" >&2
        exit 1
    fi
else
    cross=$arch-linux-gnu-gcc
    if ! command -v "$cross" >/dev/null; then
        echo "dist: no C compiler for $arch ($cross); on Debian: apt-get install gcc-${arch//_/-}-linux-gnu" >&2
        exit 1
    fi
    if ! command -v "qemu-$arch" >/dev/null; then
        echo "dist: qemu-$arch is needed to check the $arch binary; on Debian: apt-get install qemu-user" >&2
        exit 1
    fi
    upper=$(echo "${target//-/_}" | tr '[:lower:]' '[:upper:]')
    export "CARGO_TARGET_${upper}_LINKER=$cross" "CC_${target//-/_}=$cross"
fi

cargo build --locked --release --target "$target" >&2
# Where cargo put it: CARGO_TARGET_DIR or a configured target-dir may move
# it out of ./target (cargo-deb follows cargo in the same way).
target_dir=$(cargo metadata --format-version 1 --no-deps --locked |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
bin=${target_dir:-$PWD/target}/$target/release/backoff

dist/check-binary.sh "$arch" "$bin"
echo "$bin"
