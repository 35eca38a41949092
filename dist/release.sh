#!/usr/bin/env bash
# Makes the release of backoff for Linux, for each architecture named
# (x86_64 and aarch64 when none is), and for Windows when `windows` is
# named (or none is):
#
#   target/dist/backoff-VERSION-ARCH-unknown-linux-musl.tar.gz
#   target/dist/backoff-VERSION-ARCH-unknown-linux-musl.tar.gz.sha256
#   target/dist/backoff_VERSION-1_DEBARCH.deb      (dist/deb.sh)
#   target/dist/backoff-VERSION-x86_64-pc-windows-gnu.zip
#   target/dist/backoff-VERSION-x86_64-pc-windows-gnu.zip.sha256
#
# The archive holds one directory of the same name with the static
# binary of dist/build-static.sh, the man pages, the bash, zsh, fish and
# elvish completions, README.md, docs/guide.md, CHANGELOG.md, both licence texts and the
# notices of the third-party code in the binary (THIRD-PARTY-NOTICES). Its
# members are owned by root and dated by the last commit (SOURCE_DATE_EPOCH,
# when set, wins), so that the same sources make the same archive.
#
# The zip holds one directory of the same name with backoff.exe (built
# with MinGW-w64 for x86_64-pc-windows-gnu; it needs no DLL beyond
# Windows' own), the man pages as HTML (mandoc), the PowerShell
# completion, the same documents, licences and notices; its members are
# dated by the last commit too.
#
# Usage, from anywhere:
#   dist/release.sh                # x86_64, aarch64 and windows
#   dist/release.sh x86_64         # one architecture
#   dist/release.sh windows        # the Windows zip alone
#
# It needs what dist/build-static.sh needs for each architecture, and
# cargo-deb for the Debian packages. It checks its own output before it
# says it is done: each checksum file verifies, and the binary unpacked
# from each archive is static, prints its version and retries a command
# (under qemu for another architecture; under Wine for Windows, when it is
# installed, with the test stand-in for the bcryptprimitives.dll Wine 8
# lacks). It prints the paths it made.
set -euo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
out=target/dist
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
if [ $# -eq 0 ]; then
    set -- x86_64 aarch64 windows
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

# windows_zip: makes the Windows zip and its checksum, checks them, and
# prints the zip's path.
windows_zip() {
    local triple=x86_64-pc-windows-gnu name stage check unpacked f page
    name=backoff-$version-$triple
    if ! rustup target list --installed | grep -qx "$triple"; then
        rustup target add "$triple" >&2
    fi
    command -v x86_64-w64-mingw32-gcc >/dev/null || {
        echo "dist: the Windows build needs MinGW-w64 (apt-get install gcc-mingw-w64-x86-64)" >&2
        exit 1
    }
    command -v mandoc >/dev/null || {
        echo "dist: the Windows zip's HTML man pages need mandoc (apt-get install mandoc)" >&2
        exit 1
    }
    cargo build --release --locked --target "$triple" >&2
    stage=$work/windows/$name
    mkdir -p "$stage/man" "$stage/completions" "$stage/docs" "$out"
    install -m 755 "${CARGO_TARGET_DIR:-target}/$triple/release/backoff.exe" "$stage/"
    for page in man/*.1; do
        mandoc -T html "$page" > "$stage/man/$(basename "$page").html"
    done
    install -m 644 completions/backoff.ps1 "$stage/completions/"
    install -m 644 README.md CHANGELOG.md LICENSE-MIT LICENSE-APACHE \
        dist/THIRD-PARTY-NOTICES "$stage/"
    install -m 644 docs/guide.md "$stage/docs/"
    python3 - "$work/windows" "$name" "$epoch" "$out/$name.zip" <<'PY'
import os, sys, time, zipfile
top, name, epoch, dest = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
# zip stores local times from 1980 on, in 2-second steps.
stamp = time.gmtime(max(epoch, 315532800))[:6]
with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
    for root, dirs, files in os.walk(os.path.join(top, name)):
        dirs.sort()
        for f in sorted(files):
            path = os.path.join(root, f)
            info = zipfile.ZipInfo(os.path.relpath(path, top).replace(os.sep, "/"), stamp)
            info.external_attr = (0o755 if f.endswith(".exe") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            with open(path, "rb") as data:
                z.writestr(info, data.read())
PY
    (cd "$out" && sha256sum "$name.zip" > "$name.zip.sha256")

    # The zip must be what this script promises.
    check=$work/windows/check
    mkdir -p "$check"
    (cd "$out" && sha256sum --quiet -c "$name.zip.sha256") >&2
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
        "$out/$name.zip" "$check"
    unpacked=$check/$name
    for f in backoff.exe man/backoff.1.html completions/backoff.ps1 \
        README.md docs/guide.md CHANGELOG.md \
        LICENSE-MIT LICENSE-APACHE THIRD-PARTY-NOTICES; do
        if [ ! -s "$unpacked/$f" ]; then
            echo "dist: $f is missing from $name.zip" >&2
            exit 1
        fi
    done
    if command -v wine >/dev/null; then
        x86_64-w64-mingw32-gcc -O2 -shared -o "$unpacked/bcryptprimitives.dll" \
            tests/windows/bcryptprimitives.c -ladvapi32
        if [ "$(WINEDEBUG=-all wine "$unpacked/backoff.exe" --version | tr -d '\r')" != "backoff $version" ]; then
            echo "dist: backoff.exe from $name.zip does not print its version" >&2
            exit 1
        fi
        local code=0
        WINEDEBUG=-all wine "$unpacked/backoff.exe" -q --base 1ms --max-retries 1 -- cmd /c "exit 3" || code=$?
        if [ "$code" != 3 ]; then
            echo "dist: backoff.exe from $name.zip did not retry 'exit 3' (exit $code)" >&2
            exit 1
        fi
    else
        echo "dist: Wine is not installed: backoff.exe was not run" >&2
    fi
    echo "$out/$name.zip"
}

for arch in "$@"; do
    if [ "$arch" = windows ]; then
        windows_zip
        continue
    fi
    archive "$arch"
    dist/deb.sh "$arch"
done
