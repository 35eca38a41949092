#!/usr/bin/env python3
"""Writes link/hot-text.ld: the functions backoff runs as it starts, to be
placed side by side at the start of the program's code.

Usage, from the top of the repository (needs valgrind):

    link/hot-text.py [TARGET...]

For each target (by default the host's, and the static musl build's when
its Rust target is installed) it builds backoff's release binary with its
symbols kept (in target/hot-text/), runs it under valgrind's callgrind in
the situations listed in SCENARIOS, and lists every Rust function that ran,
in any of them. The hash that Rust puts in each symbol name is replaced by a
wildcard, so the list still matches after a change elsewhere in the
program, and takes in every copy of a generic function made for another
type as well. A function that is renamed or newly called at start-up is
missing from the list until it is made again; then nothing breaks, and
start-up only touches more pages of code.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT = os.path.join(ROOT, "link", "hot-text.ld")
TARGET_DIR = os.path.join(ROOT, "target", "hot-text")

# What backoff is run with: the start-up every run shares, and the first
# steps of its commonest paths (success at once, retries with a delay, a
# timeout, reports).
SCENARIOS = [
    ["--", "true"],
    ["--base", "1ms", "--cap", "2ms", "--max-retries", "2", "--", "false"],
    ["--timeout", "5s", "-v", "--", "true"],
    ["-q", "--max-retries", "1", "--base", "1ms", "--stop-on", "2", "--", "false"],
]

# Functions whose sections the patterns below miss: the child's, which runs
# between clone and exec where callgrind does not look, and the C `main` of
# main.rs.
EXTRA = ["_ZN11backoff_cli5spawn3imp5child17h*E", "main"]

HEADER = """\
/* The functions backoff runs as it starts, placed side by side at the start
 * of its code: start-up then touches one block of about 450 KiB rather than
 * pages spread over the whole program, each of which costs a page fault
 * that maps its neighbours too. Used by build.rs on Linux; understood by
 * GNU ld (bfd) and lld, not by gold or mold (INSERT keeps the default
 * layout for everything else).
 *
 * Made by link/hot-text.py, which lists the functions that ran in a
 * profile of the release build. Do not edit by hand: run it again when the
 * code has changed a lot (bench/run.sh shows the start-up overhead). */
"""


def default_targets() -> list[str]:
    """The host, and musl when its Rust target and a musl C compiler (for
    the TLS code of the Redis store) are installed."""
    host = subprocess.run(["rustc", "--print", "host-tuple"], check=True,
                          stdout=subprocess.PIPE, text=True).stdout.strip()
    targets = [host]
    arch = host.split("-")[0]
    musl = arch + "-unknown-linux-musl"
    installed = ""
    if shutil.which("rustup"):
        installed = subprocess.run(["rustup", "target", "list", "--installed"], check=False,
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                   text=True).stdout
    if musl != host and musl in installed.split() and shutil.which(f"{arch}-linux-musl-gcc"):
        targets.append(musl)
    else:
        print(f"hot-text: {musl} skipped (its Rust target or musl-tools is not installed)")
    return targets


def build(target: str) -> str:
    env = dict(os.environ, CARGO_PROFILE_RELEASE_STRIP="false",
               CARGO_TARGET_DIR=TARGET_DIR, BACKOFF_NO_HOT_TEXT="1")
    out = subprocess.run(
        ["cargo", "build", "--release", "--target", target, "--message-format=json"],
        cwd=ROOT, env=env, check=True, stdout=subprocess.PIPE, text=True,
    ).stdout
    for line in out.splitlines():
        message = json.loads(line)
        if message.get("reason") == "compiler-artifact" and \
                message.get("target", {}).get("name") == "backoff" and message.get("executable"):
            return message["executable"]
    sys.exit("hot-text: cargo built no backoff binary")


def functions(binary: str, args: list[str], tmp: str) -> list[str]:
    """The mangled names of the functions that ran, in callgrind's order."""
    profile = os.path.join(tmp, "callgrind.out")
    subprocess.run(
        ["valgrind", "--tool=callgrind", "--demangle=no",
         f"--callgrind-out-file={profile}", binary, *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        check=False,
    )
    names = []
    with open(profile, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"^c?fn=\(\d+\) (.+)$", line.rstrip("\n"))
            if m:
                # A recursive call is named with a suffix such as '2.
                names.append(re.sub(r"'\d+$", "", m.group(1)))
    return names


def pattern(name: str) -> str | None:
    """A section name pattern for a Rust function, without its hashes."""
    if name.startswith("_ZN"):
        return re.sub(r"17h[0-9a-f]{16}E$", "17h*E", name)
    if name.startswith("_R"):
        return re.sub(r"Cs[0-9A-Za-z]+_", "Cs*_", name)
    # C functions are left where they are: musl's have sections of their
    # own, but listing them saved no page fault (54 either way).
    return None


def main() -> None:
    if not shutil.which("valgrind"):
        sys.exit("hot-text: valgrind is not installed (apt-get install valgrind)")
    seen: list[str] = []
    for target in sys.argv[1:] or default_targets():
        binary = build(target)
        with tempfile.TemporaryDirectory() as tmp:
            for args in SCENARIOS:
                for name in functions(binary, args, tmp):
                    p = pattern(name)
                    if p and p not in seen:
                        seen.append(p)
        print(f"hot-text: {target}: {len(seen)} functions so far")
    if not seen:
        sys.exit("hot-text: callgrind listed no Rust function")
    seen += [p for p in EXTRA if p not in seen]
    with open(OUTPUT, "w", encoding="utf-8") as f:
        f.write(HEADER)
        f.write("SECTIONS\n{\n  .text.hot :\n  {\n")
        for p in seen:
            f.write(f"    *(.text.{p})\n")
        f.write("  }\n}\nINSERT BEFORE .text;\n")
    print(f"hot-text: {len(seen)} functions written to {os.path.relpath(OUTPUT, ROOT)}")


if __name__ == "__main__":
    main()
