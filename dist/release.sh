#!/usr/bin/env bash
# Makes the release archive of backoff for this machine's architecture:
#
#   target/dist/backoff-VERSION-ARCH-unknown-linux-musl.tar.gz
#   target/dist/backoff-VERSION-ARCH-unknown-linux-musl.tar.gz.sha256
#
# The archive holds one directory of the same name with the static
# binary of dist/build-static.sh (static-pie: ASLR kept), the man pages,
# the bash, zsh, fish and elvish completions, README.md, CHANGELOG.md and
# both licence texts. Its members are owned by root and dated by the last
# commit (SOURCE_DATE_EPOCH, when set, wins), so that the same sources make
# the same archive.
#
# Usage, from anywhere:
#   dist/release.sh
#
# It checks its own output before it says it is done: the checksum file
# verifies, and the binary unpacked from the archive is static, prints its
# version and retries a command. It prints the archive's path.
set -euo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
triple=$(uname -m)-unknown-linux-musl
name=backoff-$version-$triple
out=target/dist
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

bin=$(dist/build-static.sh)

work=$(mktemp -d)
trap 'rm -rf -- "$work"' EXIT
stage=$work/$name
mkdir -p "$stage/man" "$stage/completions" "$out"
install -m 755 "$bin" "$stage/backoff"
install -m 644 man/*.1 "$stage/man/"
install -m 644 completions/_backoff completions/backoff.bash completions/backoff.fish \
    completions/backoff.elv "$stage/completions/"
install -m 644 README.md CHANGELOG.md LICENSE-MIT LICENSE-APACHE "$stage/"
tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
    -cf - "$name" | gzip -n -9 > "$out/$name.tar.gz"
(cd "$out" && sha256sum "$name.tar.gz" > "$name.tar.gz.sha256")

# The archive must be what this script promises.
check=$work/check
mkdir -p "$check"
(cd "$out" && sha256sum --quiet -c "$name.tar.gz.sha256") >&2
tar -C "$check" -xzf "$out/$name.tar.gz"
unpacked=$check/$name
for f in backoff man/backoff.1 completions/_backoff completions/backoff.bash \
    completions/backoff.fish completions/backoff.elv README.md CHANGELOG.md \
    LICENSE-MIT LICENSE-APACHE; do
    if [ ! -s "$unpacked/$f" ]; then
        echo "dist: $f is missing from $name.tar.gz" >&2
        exit 1
    fi
done
case $(file -b "$unpacked/backoff") in
*static-pie*) ;;
*)
    echo "dist: the archive's binary is not a static-pie executable" >&2
    exit 1
    ;;
esac
"$unpacked/backoff" --version >&2
"$unpacked/backoff" -q --base 1ms --max-retries 1 -- sh -c '[ "$BACKOFF_ATTEMPT" = 2 ]'
echo "$out/$name.tar.gz"
