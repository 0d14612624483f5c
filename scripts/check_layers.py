#!/usr/bin/env python3
"""The include graph between folders, checked against docs/ARCHITECTURE.md's layers; and how many
C++ files each folder holds flat.

Usage: scripts/check_layers.py [--root DIR] [--graph]

Reads the layer order from the `layer N: folder folder ...` lines of docs/ARCHITECTURE.md
("Layers"), derives which folder includes which from every `#include "..."` line of the C++
sources, and fails when a folder includes one of its own layer or a higher one (that also rules
out any cycle; a cycle is still named as such), when a folder with C++ is in no layer, or when
an include resolves to no file or to files in two folders (then the graph would be a guess).

Sub-layers: `layer N.K: folder ...` orders the concept folders inside one top-level folder
(`layer 3.2: rank_pipeline/src/store`). Among folders of the same top-level folder that all
have a sub-layer, K orders them as N does the top; to any other folder they are of layer N.

Flat folders: a directory holding more than FLAT_LIMIT C++ files directly (not counting its
subfolders) fails, unless FLAT_EXCEPTIONS names it; an exception that no longer exceeds the
limit fails too, so that the list stays true. The exceptions are in scripts/flat_exceptions.txt,
one a line: `folder  until when`.

An include resolves the way the compiler finds it: first beside the including file, then in the
include directories the CMakeLists.txt files give (`target_include_directories`, read from
them). A folder named in the layers may be a subfolder (`whatif/generator`): a file belongs to
the longest one that holds it.
"""
from __future__ import annotations

import argparse
import collections
import os
import pathlib
import re
import sys
import typing

SOURCE_SUFFIXES = {".cpp", ".cc", ".c", ".h", ".hpp", ".inc"}
SKIP_TOP = {"build", ".venv", ".git", "straggler_probe_out"}


def skipped_top(name: str) -> bool:
    """Build trees (build/, build-device/, a helper's build-xyz/) and tool folders are not ours."""
    return name in SKIP_TOP or name.startswith("build-") or name.startswith(".")
_LAYER_RE = re.compile(r"^\s*layer\s+(\d+)(?:\.(\d+))?\s*:\s*(.+?)\s*$")

# A reader finds their way in a folder of about twenty files; past that it wants concept folders
# (whatif/src is the model: issue 24).
FLAT_LIMIT = 20
FLAT_EXCEPTIONS = pathlib.Path("scripts") / "flat_exceptions.txt"  # under the root


class Layer(typing.NamedTuple):
    """`layer N.K` (minor None for `layer N`), with the folder's top-level folder."""
    major: int
    minor: int | None
    top: str

    def __str__(self):
        return f"{self.major}" if self.minor is None else f"{self.major}.{self.minor}"


def below(target: Layer, here: Layer) -> bool:
    """May a folder of layer `here` include one of layer `target`?"""
    if target.major != here.major:
        return target.major < here.major
    if target.minor is not None and here.minor is not None and target.top == here.top:
        return target.minor < here.minor
    return False


_INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
_TARGET_INCLUDES_RE = re.compile(r"target_include_directories\s*\(([^)]*)\)")


def read_layers(architecture: pathlib.Path) -> dict[str, Layer]:
    layers: dict[str, Layer] = {}
    for line in architecture.read_text().splitlines():
        m = _LAYER_RE.match(line)
        if m:
            minor = int(m.group(2)) if m.group(2) is not None else None
            for folder in m.group(3).split():
                folder = folder.strip("`/")
                layers[folder] = Layer(int(m.group(1)), minor, folder.split("/")[0])
    if not layers:
        sys.exit(f"check_layers: no 'layer N: folders' lines in {architecture}")
    return layers


def include_roots(root: pathlib.Path) -> list[pathlib.Path]:
    """The include directories in the tree that CMakeLists.txt files name, and the cmake/*.cmake
    files they include (python/cmake/torch_bridge.cmake: where the include()ing CMakeLists.txt
    is, one folder up, is their ${CMAKE_CURRENT_SOURCE_DIR})."""
    roots = set()
    listed = [(c, c.parent) for c in root.rglob("CMakeLists.txt")]
    listed += [(c, c.parent.parent) for c in root.rglob("cmake/*.cmake")]
    for cmake, source_dir in listed:
        rel = cmake.relative_to(root)
        if skipped_top(rel.parts[0]):
            continue
        for m in _TARGET_INCLUDES_RE.finditer(cmake.read_text()):
            for token in m.group(1).split():
                token = token.replace("${CMAKE_CURRENT_SOURCE_DIR}", str(source_dir))
                token = token.replace("${PROJECT_SOURCE_DIR}", str(root))
                if "$" in token or token.isupper():
                    continue  # a variable outside the tree (CUDA, NVTX) or a keyword
                path = pathlib.Path(token)
                path = path if path.is_absolute() else source_dir / path
                if path.is_dir():
                    roots.add(path.resolve())
    return sorted(roots)


def folder_of(rel: pathlib.PurePath, layers: dict[str, Layer]) -> str | None:
    posix = rel.as_posix()
    best = None
    for folder in layers:
        if (posix == folder or posix.startswith(folder + "/")) and (best is None or len(folder) > len(best)):
            best = folder
    return best


def sources(root: pathlib.Path) -> list[pathlib.Path]:
    out = []
    for top in sorted(root.iterdir()):
        if not top.is_dir() or skipped_top(top.name):
            continue
        out.extend(p for p in sorted(top.rglob("*")) if p.is_file() and p.suffix in SOURCE_SUFFIXES)
    return out


def build_graph(root: pathlib.Path, layers: dict[str, Layer]):
    roots = include_roots(root)
    edges: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
    problems = []
    for path in sources(root):
        rel = path.relative_to(root)
        here = folder_of(rel, layers)
        if here is None:
            problems.append(f"{rel}: its folder is in no layer of docs/ARCHITECTURE.md")
            continue
        text = path.read_text(errors="replace")
        for m in _INCLUDE_RE.finditer(text):
            name = m.group(1)
            line = text.count("\n", 0, m.start()) + 1
            beside = path.parent / name
            if beside.is_file():
                found = [beside]
            else:
                found = [r / name for r in roots if (r / name).is_file()]
            targets = {folder_of(pathlib.Path(os.path.relpath(f.resolve(), root)), layers) for f in found}
            targets.discard(None)
            if not found:
                problems.append(f"{rel}:{line}: #include \"{name}\" is found in no include directory")
                continue
            if len(targets) > 1:
                # Two folders' directories hold the name; the compiler takes the first its target
                # lists, which only the build knows. The including folder's own comes first.
                if here in targets:
                    targets = {here}
                else:
                    problems.append(f"{rel}:{line}: #include \"{name}\" is in {sorted(targets)}: "
                                    "name it with its folder's prefix")
                    continue
            for target in targets:
                if target != here:
                    edges[(here, target)].append(f"{rel}:{line}")
    return edges, problems


def load_flat_exceptions(path: pathlib.Path) -> dict[str, str]:
    exceptions = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                folder, _, why = line.partition(" ")
                exceptions[folder.strip("/")] = why.strip()
    return exceptions


def flat_folders(root: pathlib.Path) -> tuple[list[str], list[str]]:
    """(problems, notes): folders over FLAT_LIMIT that are not excepted, and stale exceptions."""
    exceptions = load_flat_exceptions(root / FLAT_EXCEPTIONS)
    counts: collections.Counter[str] = collections.Counter()
    for path in sources(root):
        counts[path.parent.relative_to(root).as_posix()] += 1
    problems, notes = [], []
    for folder, n in sorted(counts.items()):
        if n <= FLAT_LIMIT:
            continue
        if folder in exceptions:
            notes.append(f"{folder} holds {n} C++ files flat (over {FLAT_LIMIT}; excepted: "
                         f"{exceptions[folder]})")
        else:
            problems.append(f"{folder} holds {n} C++ files flat, over {FLAT_LIMIT}: split it into "
                            f"concept folders (or name it in {FLAT_EXCEPTIONS}, saying until when)")
    for folder in sorted(exceptions):
        if counts[folder] <= FLAT_LIMIT:
            problems.append(f"{folder} holds {counts[folder]} C++ files flat, within {FLAT_LIMIT}: "
                            f"a stale exception, remove it from {FLAT_EXCEPTIONS}")
    return problems, notes


def find_cycle(edges) -> list[str] | None:
    graph = collections.defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=pathlib.Path(__file__).resolve().parent.parent, type=pathlib.Path)
    parser.add_argument("--graph", action="store_true", help="print every edge with its count")
    args = parser.parse_args()
    root = args.root.resolve()
    layers = read_layers(root / "docs" / "ARCHITECTURE.md")
    edges, problems = build_graph(root, layers)

    for (a, b), where in sorted(edges.items()):
        if not below(layers[b], layers[a]):
            kind = "upward" if below(layers[a], layers[b]) else "same layer"
            problems.append(f"{a} (layer {layers[a]}) includes {b} (layer {layers[b]}): {kind}, "
                            f"{len(where)} include(s), first {where[0]}")
    cycle = find_cycle(edges)
    if cycle:
        problems.append("cycle: " + " -> ".join(cycle))
    flat_problems, flat_notes = flat_folders(root)
    problems.extend(flat_problems)
    if args.graph or problems:
        for (a, b), where in sorted(edges.items()):
            print(f"  {a} -> {b}  ({len(where)})")
    for note in flat_notes:
        print("  note " + note)
    for p in problems:
        print("  FAIL " + p)
    print(f"check_layers: {len(edges)} edges between {len(layers)} folders, " +
          ("OK" if not problems else f"{len(problems)} problem(s)"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
