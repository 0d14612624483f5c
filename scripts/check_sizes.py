#!/usr/bin/env python3
"""Functions over 100 lines and files over 400 lines, against a list of stated exceptions.

Usage: scripts/check_sizes.py [--all] [--root DIR]

Product code (the folders in PRODUCT_DIRS) fails the check on anything over a limit that is not
in scripts/size_exceptions.txt; tests and bench (REPORT_ONLY_DIRS) are listed but never fail it
(`--all` prints them even when they are within the limits of nothing, i.e. always). An exception
that no longer matches anything over a limit also fails the check, so the list stays true.

How lines are counted: physical lines, blank lines and comments included. A C++ function is a
brace-matched definition (free function, member, constructor, a lambda counts towards the
function it stands in), from the line of its name to its closing brace; a Python function is an
`ast` def/async def, from its `def` line (decorators not counted) to its last line, nested
functions counting towards the function they stand in as well as on their own.
"""
from __future__ import annotations

import argparse
import ast
import pathlib
import re
import sys

FUNCTION_LIMIT = 100
FILE_LIMIT = 400

PRODUCT_DIRS = ("runtime", "cupti", "preload", "nccl_hooks", "online", "rank_pipeline", "whatif", "cli",
                "python/src", "python/straggler_probe")
REPORT_ONLY_DIRS = ("tests", "bench", "examples", "scripts")
CXX_SUFFIXES = {".cpp", ".cc", ".c", ".h", ".hpp", ".inc"}
PY_SUFFIXES = {".py"}

_NOT_FUNCTIONS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype",
                  "alignof", "static_assert", "noexcept", "requires"}
_CONTAINER_RE = re.compile(r"\b(namespace|class|struct|union|enum)\b")
_EXTERN_C_RE = re.compile(r'\bextern\s*"[^"]*"\s*$')  # the literal is blanked by then
_TRAILING_QUALIFIERS_RE = re.compile(r"(\s|\bconst\b|\bnoexcept\b|\boverride\b|\bfinal\b|\bmutable\b|"
                                     r"\bvolatile\b|&)*$")


def _blank_comments_and_strings(text: str) -> str:
    """The text with comments, string and character literals replaced by spaces (newlines kept),
    so that braces and parentheses in them do not count. Raw strings R"d(...)d" included."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and i + 1 < n and text[i + 1] == '"' and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^()\\ ]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:j]))
            i = j
        elif c in "\"'":
            # A digit separator (1'000'000) is not a character literal.
            if c == "'" and i and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _blank_preprocessor(text: str) -> str:
    """Preprocessor lines (with their continuations) replaced by blank lines."""
    lines = text.split("\n")
    out, continued = [], False
    for line in lines:
        if continued or line.lstrip().startswith("#"):
            continued = line.rstrip().endswith("\\")
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


def _function_name(header: str) -> str | None:
    """The name of the function whose definition `header` opens, or None when it is not one."""
    h = " ".join(header.split())
    if not h or "(" not in h:
        return None
    if h.startswith("template") and h.count("<") and not re.search(r">\s*[\w:~]", h):
        return None
    if "operator" in h:
        m = re.search(r"([\w:~]*operator\s*(\(\)|[^\s(]+))\s*\(", h)
        return m.group(1).replace(" ", "") if m else "operator"
    # Strip the constructor initializer list and trailing qualifiers: the name stands before the
    # first '(' at angle depth 0.
    depth, i = 0, 0
    while i < len(h):
        ch = h[i]
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif ch == "(" and depth == 0:
            break
        elif ch == "=" and depth == 0:
            return None  # a variable with an initializer (e.g. a lambda)
        i += 1
    else:
        return None
    m = re.search(r"([~\w:]+)\s*(<[^()]*>)?\s*$", h[:i])
    if not m:
        return None
    name = m.group(1)
    if name.split("::")[-1] in _NOT_FUNCTIONS or name in _NOT_FUNCTIONS:
        return None
    return name


def cxx_functions(text: str) -> list[tuple[str, int, int]]:
    """(name, first line, last line) of each function defined in a C++ source."""
    clean = _blank_comments_and_strings(_blank_preprocessor(text))
    results = []
    # A stack of scopes: "container" (file, namespace, class, extern "C"), "function", "data".
    stack = ["container"]
    header_start = 0  # offset where the text since the last ; { } of a container begins
    i, n = 0, len(clean)
    line_of = _line_index(clean)
    open_functions: list[tuple[str, int]] = []
    while i < n:
        c = clean[i]
        if stack[-1] == "container":
            if c == ";":
                header_start = i + 1
            elif c == "}":
                stack.pop() if len(stack) > 1 else None
                header_start = i + 1
            elif c == "{":
                header = clean[header_start:i]
                kind, name = _classify_brace(header, clean, i)
                if kind == "init-brace":
                    i = _matching_brace(clean, i) + 1
                    continue
                stack.append(kind)
                if kind == "function":
                    first = header_start + (len(header) - len(header.lstrip()))
                    name_pos = clean.find(name.split("::")[-1], first, i) if name else -1
                    open_functions.append((name or "?", line_of(name_pos if name_pos >= 0 else first)))
                    header_start = i + 1
                elif kind != "data":
                    header_start = i + 1
        else:
            if c == "{":
                stack.append(stack[-1])
            elif c == "}":
                kind = stack.pop()
                if kind == "function" and stack[-1] == "container" and open_functions:
                    name, first = open_functions.pop()
                    results.append((name, first, line_of(i)))
                    header_start = i + 1
                elif stack[-1] == "container":
                    header_start = i + 1
        i += 1
    return results


def _classify_brace(header: str, clean: str, brace: int) -> tuple[str, str | None]:
    """What a '{' at container scope opens: a "container", a "function" (with its name),
    "data" (an aggregate initializer, enum body) or an "init-brace" inside a constructor's
    member initializer list."""
    h = re.sub(r"\balignas\s*\([^()]*\)|\[\[.*?\]\]", " ", header).strip()
    if not h or _EXTERN_C_RE.search(h) or re.fullmatch(r"namespace(\s+[\w:]+)?(\s*\[\[.*\]\])?", h) \
            or re.search(r"\bnamespace\s+[\w:]+\s*$", h):
        return "container", None
    if re.search(r"\benum\b", h) and "(" not in h:
        return "data", None
    if _CONTAINER_RE.search(h) and "(" not in h.split(":")[0] and not re.search(r"\)\s*$", h):
        # class Foo : public Bar {   struct Foo {   (not a function returning a struct)
        if "=" not in h:
            return "container", None
    name = _function_name(h)
    if name is None:
        return "data", None
    # Inside a constructor's initializer list `: a_(x), b_{y} {`, a brace right after a name
    # or a '>' initializes a member; the body's brace follows ')' or '}'.
    before = clean[:brace].rstrip()
    if _has_init_list(h):
        if before and (before[-1].isalnum() or before[-1] in "_>"):
            return "init-brace", None
        return "function", name
    # A definition's brace follows its parameter list (and qualifiers) or a trailing return
    # type; `std::atomic<int> head_{0}` or `alignas(64) T x_{}` is a member initializer.
    if _TRAILING_QUALIFIERS_RE.sub("", h).endswith(")") or "->" in h[h.find("("):]:
        return "function", name
    return "data", None


def _has_init_list(h: str) -> bool:
    depth = 0
    seen_params = False
    for k, ch in enumerate(h):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                seen_params = True
        elif ch == ":" and depth == 0 and seen_params:
            if h[k - 1:k] != ":" and h[k + 1:k + 2] != ":":
                return True
    return False


def _matching_brace(clean: str, i: int) -> int:
    depth = 0
    for j in range(i, len(clean)):
        if clean[j] == "{":
            depth += 1
        elif clean[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(clean) - 1


def _line_index(text: str):
    starts = [0] + [k + 1 for k, ch in enumerate(text) if ch == "\n"]
    import bisect

    def line_of(offset: int) -> int:
        return bisect.bisect_right(starts, offset)
    return line_of


def python_functions(text: str, path: str) -> list[tuple[str, int, int]]:
    tree = ast.parse(text, filename=path)
    results = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                results.append((name, child.lineno, child.end_lineno))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)
    visit(tree, "")
    return results


def source_files(root: pathlib.Path, dirs) -> list[pathlib.Path]:
    files = []
    for d in dirs:
        base = root / d
        if not base.is_dir():
            continue
        for p in sorted(base.rglob("*")):
            if p.is_file() and p.suffix in CXX_SUFFIXES | PY_SUFFIXES and "__pycache__" not in p.parts:
                files.append(p)
    return files


def load_exceptions(path: pathlib.Path) -> dict[str, str]:
    """`file[:function]  reason` per line; '#' starts a comment. Every entry needs a reason."""
    exceptions = {}
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        key, _, reason = line.partition(" ")
        if not reason.strip():
            sys.exit(f"{path}:{number}: exception '{key}' has no reason")
        exceptions[key] = reason.strip()
    return exceptions


def measure(root: pathlib.Path, dirs, totals=None) -> list[tuple[str, str, int]]:
    """(key, kind, lines) of everything over a limit; key is 'file' or 'file:function'.
    `totals`, when given, gets the counts scanned and the longest function and file."""
    over = []
    totals = totals if totals is not None else {}
    totals.update(files=0, functions=0, longest_function=(0, ""), longest_file=(0, ""))
    for p in source_files(root, dirs):
        rel = p.relative_to(root).as_posix()
        text = p.read_text(errors="replace")
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if lines > FILE_LIMIT:
            over.append((rel, "file", lines))
        functions = python_functions(text, rel) if p.suffix in PY_SUFFIXES else cxx_functions(text)
        totals["files"] += 1
        totals["functions"] += len(functions)
        totals["longest_file"] = max(totals["longest_file"], (lines, rel))
        for name, first, last in functions:
            length = last - first + 1
            totals["longest_function"] = max(totals["longest_function"], (length, f"{rel}:{name}"))
            if length > FUNCTION_LIMIT:
                over.append((f"{rel}:{name}", "function", length))
    return over


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=pathlib.Path(__file__).resolve().parent.parent, type=pathlib.Path)
    parser.add_argument("--exceptions", type=pathlib.Path, default=None)
    parser.add_argument("--all", action="store_true", help="also list tests/ and bench/")
    args = parser.parse_args()
    root = args.root.resolve()
    exceptions = load_exceptions(args.exceptions or root / "scripts" / "size_exceptions.txt")

    failures = 0
    matched = set()
    print(f"product code (limits: functions {FUNCTION_LIMIT} lines, files {FILE_LIMIT} lines):")
    totals: dict = {}
    for key, kind, lines in measure(root, PRODUCT_DIRS, totals):
        if key in exceptions:
            matched.add(key)
            print(f"  ok   {kind:8} {lines:5}  {key}  -- {exceptions[key]}")
        else:
            failures += 1
            print(f"  FAIL {kind:8} {lines:5}  {key}  (split it, or state why in the exception list)")
    for key in sorted(set(exceptions) - matched):
        failures += 1
        print(f"  FAIL stale exception (nothing over a limit): {key}")
    print(f"  scanned {totals['files']} files, {totals['functions']} functions; longest function "
          f"{totals['longest_function'][0]} lines ({totals['longest_function'][1]}), longest file "
          f"{totals['longest_file'][0]} lines ({totals['longest_file'][1]})")
    if args.all:
        print("tests, bench, examples, scripts (reported, not failed):")
        for key, kind, lines in measure(root, REPORT_ONLY_DIRS):
            print(f"       {kind:8} {lines:5}  {key}")
    print("check_sizes: " + ("OK" if failures == 0 else f"{failures} problem(s)"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
