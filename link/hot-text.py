#!/usr/bin/env python3
"""Writes link/hot-text.ld: the functions backoff runs as it starts, to be
placed side by side at the start of the program's code.

Usage, from the top of the repository (needs valgrind):

    link/hot-text.py [TARGET...]

For each target (by default the static musl build's, when its Rust target is
installed, and the host's) it builds backoff's release binary with its
symbols kept (in target/hot-text/), runs it under valgrind's callgrind in
the situations listed in SCENARIOS, and lists every function that ran, in
any of them: Rust's, and the C library's with the member of libc.a that
holds them. First come the functions of the commonest run (`backoff --
true`) of the first target, by exact name. Then every name again with the
hash that Rust puts in it replaced by a wildcard, so that the list still
matches after a change elsewhere in the program or with another compiler,
and takes in every copy of a generic function made for another type as
well. A function that is renamed or newly called at start-up is missing
from the list until it is made again; then nothing breaks, and start-up
only touches more pages of code.
"""

import bisect
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

# Functions that run where callgrind does not look: the child's, between
# clone and exec, with the C library functions it calls; the C `main` of
# main.rs;
EXTRA = ["_ZN11backoff_cli5spawn3imp5child17h*E", "main", "sigaction", "setpgid", "prctl",
         "getppid", "dup2", "execve", "_exit", "_Exit",
         # and what valgrind does in its own way: a thread's pointer, the
         # return from a signal handler, the lookup of the clock's vDSO.
         "__set_thread_area", "__restore_rt", "__vdsosym", "strcmp"]

HEADER = """\
/* The functions backoff runs as it starts, placed side by side at the start
 * of its code, those of `backoff -- true` first: start-up then touches one
 * block of about 400 KiB rather than pages spread over the whole program,
 * each of which costs a page fault that maps its neighbours too. Used by
 * build.rs on Linux; understood by GNU ld (bfd) and lld, not by gold or mold
 * (INSERT keeps the default layout for everything else).
 *
 * Made by link/hot-text.py, which lists the functions that ran in a
 * profile of the release build. Do not edit by hand: run it again when the
 * code has changed a lot (bench/run.sh shows the start-up overhead). */
"""


def default_targets() -> list[str]:
    """The static musl build (the one to ship, listed first so that its
    start-up comes first) when its Rust target and a musl C compiler (for
    the TLS code of the Redis store) are installed, and the host's."""
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
        targets.insert(0, musl)
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


def functions(binary: str, symbols: list[tuple[int, str]], args: list[str],
              tmp: str) -> list[str]:
    """The mangled names of the functions that ran, in callgrind's order;
    `symbols` are the binary's functions by address (`code_symbols`)."""
    profile = os.path.join(tmp, "callgrind.out")
    subprocess.run(
        ["valgrind", "--tool=callgrind", "--demangle=no",
         f"--callgrind-out-file={profile}", binary, *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        check=False,
    )
    # Functions written in assembly, which have no size in the symbol
    # table, are named by address: the symbol at or before it is theirs.
    starts = [address for address, _ in symbols]
    names = []
    with open(profile, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"^c?fn=\(\d+\) (.+)$", line.rstrip("\n"))
            if not m:
                continue
            # A recursive call is named with a suffix such as '2.
            name = re.sub(r"'\d+$", "", m.group(1))
            if re.fullmatch(r"0x[0-9a-f]+", name):
                i = bisect.bisect_right(starts, int(name, 16)) - 1
                if i < 0:
                    continue
                name = symbols[i][1]
            names.append(name)
    return names


def code_symbols(binary: str) -> list[tuple[int, str]]:
    """The functions in a binary's symbol table, by address."""
    out = subprocess.run(["nm", "--defined-only", binary], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    symbols = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1] in "TtWw":
            symbols.setdefault(int(fields[0], 16), fields[2])
    return sorted(symbols.items())


def c_objects(target: str) -> dict[str, str]:
    """Where the C library linked into a static build defines each function:
    `archive:member` (or the start file), for the functions callgrind names
    without Rust's mangling. A local name defined in several members (such
    as musl's `dummy`) is left out; its member comes in with its other
    functions."""
    if target.endswith("-musl"):
        sysroot = subprocess.run(["rustc", "--print", "sysroot"], check=True,
                                 stdout=subprocess.PIPE, text=True).stdout.strip()
        lib = os.path.join(sysroot, "lib", "rustlib", target, "lib", "self-contained")
        files = [os.path.join(lib, "libc.a"), os.path.join(lib, "crt1.o")]
    else:
        files = [subprocess.run(["cc", f"-print-file-name={name}"], check=True,
                                stdout=subprocess.PIPE, text=True).stdout.strip()
                 for name in ("libc.a", "crt1.o")]
    where: dict[str, set[str]] = {}
    for path in files:
        if not os.path.isabs(path) or not os.path.exists(path):
            continue
        out = subprocess.run(["nm", "-A", "--defined-only", path], check=False,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
        for line in out.splitlines():
            m = re.match(r"^(.*?):(?:([^:/]+):)?[0-9a-f]+ [TtWi] (\S+)$", line)
            if m:
                base = os.path.basename(m.group(1))
                obj = f"{base}:{m.group(2)}" if m.group(2) else base
                where.setdefault(m.group(3), set()).add(obj)
    return {name: objs.pop() for name, objs in where.items() if len(objs) == 1}


def rust_pattern(name: str) -> str | None:
    """A section name pattern for a Rust function, without its hashes: it
    still matches after a change elsewhere, or with another compiler, and
    takes in every copy of a generic function made for another type."""
    if name.startswith("_ZN"):
        return re.sub(r"17h[0-9a-f]{16}E$", "17h*E", name)
    if name.startswith("_R"):
        return re.sub(r"Cs[0-9A-Za-z]+_", "Cs*_", name)
    return None


def specs(name: str, c_objs: dict[str, list[str]], exact: bool) -> list[str]:
    """The input section descriptions that place one function: none for a
    name that is no function's (callgrind's `(below main)`, an address), one
    per C library that defines it.
    LLVM puts a function it deems cold (one that grows a vector, say) in a
    section with its own prefix, `.text.unlikely.`. A C library function is
    placed with its whole member, as one written in assembly has no section
    of its own."""
    if name in c_objs:
        return [f"*{obj}(.text .text.*)" for obj in c_objs[name]]
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.$*]*", name):
        return []
    if not exact:
        name = rust_pattern(name) or name
    return [f"*(.text.{name} .text.unlikely.{name})"]


def main() -> None:
    if not shutil.which("valgrind"):
        sys.exit("hot-text: valgrind is not installed (apt-get install valgrind)")
    targets = sys.argv[1:] or default_targets()
    # ran[scenario][target]: the names, in callgrind's order.
    ran: list[dict[str, list[str]]] = [{} for _ in SCENARIOS]
    # Each C library's member for a name, musl's and glibc's alike.
    c_objs: dict[str, list[str]] = {}
    for target in targets:
        binary = build(target)
        for name, obj in c_objects(target).items():
            if obj not in c_objs.setdefault(name, []):
                c_objs[name].append(obj)
        symbols = code_symbols(binary)
        with tempfile.TemporaryDirectory() as tmp:
            for i, args in enumerate(SCENARIOS):
                ran[i][target] = functions(binary, symbols, args, tmp)
        print(f"hot-text: {target}: {len(set().union(*(r[target] for r in ran)))} functions")
    if not any(ran[0].values()):
        sys.exit("hot-text: callgrind listed no function")
    # First what the first target runs in the commonest case (`backoff --
    # true`), by exact name, hashes and all: nothing else of the program
    # comes between those functions. Then, scenario by scenario, every
    # name without its hashes, which places what the exact names miss in
    # another build.
    lines: list[str] = []

    def add(name: str, exact: bool) -> None:
        for line in specs(name, c_objs, exact):
            if line not in lines:
                lines.append(line)

    for name in ran[0][targets[0]] + EXTRA:
        add(name, exact=True)
    # The C library's last words at exit, which the linker would otherwise
    # place after all the code: the two halves of `_fini` stay in order.
    lines.append("KEEP(*(SORT_NONE(.fini)))")
    for scenario in ran:
        for target in targets:
            for name in scenario[target]:
                add(name, exact=False)
    with open(OUTPUT, "w", encoding="utf-8") as f:
        f.write(HEADER)
        f.write("SECTIONS\n{\n  .text.hot :\n  {\n")
        for line in lines:
            f.write(f"    {line}\n")
        f.write("  }\n}\nINSERT BEFORE .text;\n")
    print(f"hot-text: {len(lines)} lines written to {os.path.relpath(OUTPUT, ROOT)}")


if __name__ == "__main__":
    main()
