#!/usr/bin/env python3
"""env_documented.py SOURCE_DIR - fails when an FZ_ environment variable
that fz reads is missing from the README's environment table, or when the
table names one that nothing reads any more.

A user tuning or debugging fz finds its switches in one place, so a new
getenv must come with its row. Read are: getenv("FZ_...") in C, and
os.environ / os.environ.get / environ[...] of "FZ_..." in Python, in the
library, the tools, the Python package, the benchmark, scripts/ (${FZ_...}
in shell) and the test harnesses that take switches.
"""
import os
import re
import sys

# Variables that only steer a test of the tooling itself, not something a
# user or contributor sets: check-deps.sh's test hooks, bench/test_ab.py's
# stand-in switches.
INTERNAL = {"FZ_CLANG_RESOURCE_DIR", "FZ_LLVM_CONFIG", "FZ_TEST_SWITCH",
            "FZ_TEST_OTHER"}

SCANNED = ("lib", "tools", "python", "bench", "scripts", "test/unit",
           "test/fuzz", "include")
PATTERNS = (
    re.compile(r'getenv\(\s*"(FZ_[A-Z0-9_]+)"'),
    re.compile(r'environ(?:\.get|\.pop|\.setdefault)?\s*[\[(]\s*["\'](FZ_[A-Z0-9_]+)'),
    re.compile(r'\$\{?(FZ_[A-Z0-9_]+)'),
)


def read_names(root):
    found = {}
    for top in SCANNED:
        for base, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [d for d in dirs if not d.startswith((".", "build"))
                       and d != "__pycache__"]
            for f in files:
                if not f.endswith((".c", ".h", ".py", ".sh")):
                    continue
                path = os.path.join(base, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                for pat in PATTERNS:
                    if pat.pattern.startswith(r"\$") and not f.endswith(".sh"):
                        continue
                    for name in pat.findall(text):
                        found.setdefault(name, os.path.relpath(path, root))
    return found


def documented_names(readme):
    with open(readme, encoding="utf-8") as fh:
        text = fh.read()
    start = text.find("## Environment variables")
    if start < 0:
        sys.exit("README.md has no '## Environment variables' section")
    end = text.find("\n## ", start + 1)
    section = text[start:end if end > 0 else len(text)]
    names = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1]
            names.update(re.findall(r"`([A-Z][A-Z0-9_]+)`", first))
    return names


def main(argv):
    root = argv[1] if len(argv) > 1 else "."
    read = read_names(root)
    documented = documented_names(os.path.join(root, "README.md"))
    missing = sorted(n for n in read if n not in documented and n not in INTERNAL)
    stale = sorted(n for n in documented
                   if n.startswith("FZ_") and n not in read)
    for n in missing:
        print(f"{read[n]}: {n} is read but not in README.md's environment table")
    for n in stale:
        print(f"README.md: {n} is in the environment table but nothing reads it")
    if missing or stale:
        return 1
    print(f"{len(read)} FZ_ variables read, all in README.md's table")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
