#!/usr/bin/env bash
# Makes the Debian package of backoff from the static binary of
# dist/build-static.sh:
#
#   target/dist/backoff_VERSION-1_DEBARCH.deb
#
# Usage, from anywhere:
#   dist/deb.sh            # this machine's architecture
#   dist/deb.sh aarch64    # arm64, cross-built (see dist/build-static.sh)
#
# It needs cargo-deb (`cargo install --locked cargo-deb`). What goes where
# is in Cargo.toml, [package.metadata.deb]: /usr/bin/backoff, the man pages
# in /usr/share/man/man1, the bash, zsh and fish completions where Debian's
# bash-completion, zsh and fish look for them, and both licence texts in
# /usr/share/doc/backoff/copyright, with the notices of the third-party code
# in the binary and the project's changelog (changelog.gz) beside it, with
# README.md and the documents of docs/ (the guide, its JSON schemas) laid
# out as in the sources, so that their links hold. Its files are dated by the last commit
# (SOURCE_DATE_EPOCH, when set, wins), so that the same sources make the
# same package. Before it prints the package's path, it checks that the
# package holds all of that.
set -euo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."

arch=${1:-$(uname -m)}
target=$arch-unknown-linux-musl
out=target/dist
# Only cargo-deb sees it: the C code of the TLS crates is rebuilt when
# SOURCE_DATE_EPOCH changes, and the binary with it.
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

if ! cargo deb --version >/dev/null 2>&1; then
    echo "dist: cargo-deb is needed for the Debian package: cargo install --locked cargo-deb" >&2
    exit 1
fi
# The binary that dist/build-static.sh made, when it is up to date: cargo
# finds nothing to do (it rebuilds only what changed since). This also
# refuses an architecture there is no release for.
dist/build-static.sh "$arch" >/dev/null
mkdir -p "$out"
# cargo-deb prints the path of the package it wrote, last.
deb=$(SOURCE_DATE_EPOCH=$epoch cargo deb --locked --no-build --target "$target" --output "$out/" | tail -n 1)
if [ ! -f "$deb" ]; then
    echo "dist: cargo-deb did not say where it wrote the package (it said: $deb)" >&2
    exit 1
fi

# What cargo-deb cannot do: the control file loses its empty Depends field
# and the Homepage that cargo-deb takes from the crate's documentation
# address (docs.rs documents the library, not the command), and the
# package gains the md5sums that dpkg -V checks. Repacked with the
# same dates, in name order, owned by root.
work=$(mktemp -d)
trap 'rm -rf -- "$work"' EXIT
dpkg-deb -R "$deb" "$work/pkg"
sed -i -e '/^Depends: *$/d' -e '/^Homepage: /d' "$work/pkg/DEBIAN/control"
# The README links to CHANGELOG.md and the licence texts, which the
# package holds as changelog.gz and copyright.
sed -i -f dist/debian/doc-links.sed "$work/pkg/usr/share/doc/backoff/README.md"
(cd "$work/pkg" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z |
    xargs -0 md5sum) >"$work/pkg/DEBIAN/md5sums"
find "$work/pkg" -exec touch -h -d "@$epoch" {} +
SOURCE_DATE_EPOCH=$epoch dpkg-deb --root-owner-group -Zxz --build "$work/pkg" "$deb" >/dev/null

# The package must hold what this script promises.
listing=$(dpkg-deb --contents "$deb")
for path in ./usr/bin/backoff ./usr/share/man/man1/backoff.1.gz \
    ./usr/share/bash-completion/completions/backoff \
    ./usr/share/zsh/vendor-completions/_backoff \
    ./usr/share/fish/vendor_completions.d/backoff.fish \
    ./usr/share/doc/backoff/copyright ./usr/share/doc/backoff/THIRD-PARTY-NOTICES \
    ./usr/share/doc/backoff/changelog.gz \
    ./usr/share/doc/backoff/README.md ./usr/share/doc/backoff/docs/guide.md \
    ./usr/share/doc/backoff/docs/schema/report.json \
    ./usr/share/lintian/overrides/backoff; do
    if ! grep -q " $path\$" <<<"$listing"; then
        echo "dist: $path is missing from $deb" >&2
        exit 1
    fi
done
copyright=$(dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/share/doc/backoff/copyright)
for licence in "License: Expat" "License: Apache-2.0" " Permission is hereby granted" \
    "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION"; do
    if ! grep -qF -- "$licence" <<<"$copyright"; then
        echo "dist: the copyright file of $deb lacks \"$licence\"" >&2
        exit 1
    fi
done
if ! dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/share/doc/backoff/changelog.gz |
    gzip -dc | cmp -s - CHANGELOG.md; then
    echo "dist: the changelog.gz of $deb is not CHANGELOG.md" >&2
    exit 1
fi
echo "$deb"
