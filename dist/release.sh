#!/usr/bin/env bash
# Makes the release of backoff for Linux, for each architecture named
# (x86_64 and aarch64 when none is):
#
#   target/dist/backoff-VERSION-ARCH-unknown-linux-musl.tar.gz
#   target/dist/backoff-VERSION-ARCH-unknown-linux-musl.tar.gz.sha256
#   target/dist/backoff_VERSION-1_DEBARCH.deb      (dist/deb.sh)
#
# The archive holds one directory of the same name with the static
# binary of dist/build-static.sh, the man pages, the bash, zsh, fish and
# elvish completions, README.md, docs/guide.md, CHANGELOG.md, both licence texts and the
# notices of the third-party code in the binary (THIRD-PARTY-NOTICES). Its
# members are owned by root and dated by the last commit (SOURCE_DATE_EPOCH,
# when set, wins), so that the same sources make the same archive.
#
# Usage, from anywhere:
#   dist/release.sh                # x86_64 and aarch64
#   dist/release.sh x86_64         # one architecture
#
# It needs what dist/build-static.sh needs for each architecture, and
# cargo-deb for the Debian packages. It checks its own output before it
# says it is done: each checksum file verifies, and the binary unpacked
# from each archive is static, prints its version and retries a command
# (under qemu for another architecture). It prints the paths it made.
set -euo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
out=target/dist
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
if [ $# -eq 0 ]; then
    set -- x86_64 aarch64
fi

work=$(mktemp -d)
trap 'rm -rf -- "$work"' EXIT

# archive ARCH: makes the archive and its checksum, checks them, and prints
# the archive's path.
archive() {
    local arch=$1 triple name bin stage check unpacked f
    triple=$arch-unknown-linux-musl
    name=backoff-$version-$triple

    bin=$(dist/build-static.sh "$arch")
    stage=$work/$arch/$name
    mkdir -p "$stage/man" "$stage/completions" "$stage/docs" "$out"
    install -m 755 "$bin" "$stage/backoff"
    install -m 644 man/*.1 "$stage/man/"
    install -m 644 completions/_backoff completions/backoff.bash completions/backoff.fish \
        completions/backoff.elv completions/backoff.ps1 "$stage/completions/"
    install -m 644 README.md CHANGELOG.md LICENSE-MIT LICENSE-APACHE \
        dist/THIRD-PARTY-NOTICES "$stage/"
    install -m 644 docs/guide.md "$stage/docs/"
    tar -C "$work/$arch" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
        -cf - "$name" | gzip -n -9 > "$out/$name.tar.gz"
    (cd "$out" && sha256sum "$name.tar.gz" > "$name.tar.gz.sha256")

    # The archive must be what this script promises.
    check=$work/$arch/check
    mkdir -p "$check"
    (cd "$out" && sha256sum --quiet -c "$name.tar.gz.sha256") >&2
    tar -C "$check" -xzf "$out/$name.tar.gz"
    unpacked=$check/$name
    for f in backoff man/backoff.1 completions/_backoff completions/backoff.bash \
        completions/backoff.fish completions/backoff.elv completions/backoff.ps1 \
        README.md docs/guide.md CHANGELOG.md \
        LICENSE-MIT LICENSE-APACHE THIRD-PARTY-NOTICES; do
        if [ ! -s "$unpacked/$f" ]; then
            echo "dist: $f is missing from $name.tar.gz" >&2
            exit 1
        fi
    done
    dist/check-binary.sh "$arch" "$unpacked/backoff"
    echo "$out/$name.tar.gz"
}

for arch in "$@"; do
    archive "$arch"
    dist/deb.sh "$arch"
done
