#!/usr/bin/env python3
"""Checks lock-core's shape (issue 38): no import cycle between its files,
and no kind's name in its code.

A file "imports" another when it names `crate::<module path>` (in a `use`
or inline); `super::` paths are resolved against the file's folder. The
check prints every cycle (strongly connected set of files) and every kind
name found outside comments, and exits 1 when there is any.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lock-core", "src")
# Kind names the engine must not know (code only; docs may mention kinds
# as examples).
KIND_WORDS = re.compile(
    r"\b(reentrant|non_reentrant|lean|fair|rwlock|read_write|semaphore|latch|redisson|redis)\b",
    re.IGNORECASE,
)


def modules():
    """Maps a module path (tuple) to its file."""
    out = {}
    for dirpath, _, files in os.walk(ROOT):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), ROOT)
            parts = rel[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib"):
                parts = parts[:-1]
            out[tuple(parts)] = os.path.join(dirpath, f)
    return out


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    lines = []
    for line in text.splitlines():
        i = line.find("//")
        lines.append(line if i < 0 else line[:i])
    return "\n".join(lines)


def strip_strings(text):
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


REEXPORTS = {}


def reexports(mods):
    """Maps (folder root module, name) to the module a `pub use` there
    takes `name` from: an import through lib.rs or a folder's mod.rs is an
    import of the file the item lives in."""
    for me, file in mods.items():
        if not file.endswith(("lib.rs", "mod.rs")):
            continue
        code = strip_comments(open(file, encoding="utf-8").read())
        for m in re.finditer(r"pub(?:\(crate\))?\s+use\s+([^;]+);", code, flags=re.S):
            spec = re.sub(r"\s+", "", m.group(1))
            head, _, group = spec.partition("::{")
            names = group.rstrip("}").split(",") if group else [spec.split("::")[-1]]
            base = head if group else "::".join(spec.split("::")[:-1])
            parts = base.split("::") if base else []
            if parts and parts[0] == "crate":
                parts = parts[1:]
            elif parts and parts[0] == "self":
                parts = list(me) + parts[1:]
            else:
                parts = list(me) + parts
            for name in names:
                name = name.split("::")[-1].split(" as ")[0]
                if name and name != "self":
                    REEXPORTS[(me, name)] = parts + [name]


def resolve(mods, path, depth=0):
    """The file `path` names: its longest module prefix that is a file,
    followed through re-exports of lib.rs and folder roots."""
    for n in range(len(path), -1, -1):
        prefix = tuple(path[:n])
        if prefix in mods:
            if n < len(path) and (prefix, path[n]) in REEXPORTS and depth < 8:
                return resolve(mods, REEXPORTS[(prefix, path[n])], depth + 1)
            return prefix
    return ()


def imports(mods, me, code):
    found = set()
    # `use crate::a::{b::C, d}` groups: each item is `crate::a::b::C`,
    # `crate::a::d` (one level of nesting is enough for this crate).
    def group(m):
        base = m.group(1).strip(":").split("::")
        for part in m.group(2).split(","):
            part = [p for p in part.strip().split("::") if p and p != "self"]
            if part:
                found.add(resolve(mods, base + [p.split(" as ")[0].strip("{} ") for p in part]))
            else:
                found.add(resolve(mods, base))
        return ""

    code = re.sub(r"\bcrate((?:::\w+)+)::\{([^{}]*)\}", group, code)
    for m in re.finditer(r"\bcrate((?:::\w+)+)", code):
        found.add(resolve(mods, m.group(1).strip(":").split("::")))
    for m in re.finditer(r"\bsuper((?:::\w+)+)", code):
        # `super` of `a/b.rs` and of `a/b/mod.rs` (both module a::b) is a.
        base = list(me[:-1])
        found.add(resolve(mods, base + m.group(1).strip(":").split("::")))
    found.discard(me)
    found.discard(())
    return found


def sccs(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def has_code(code):
    """Whether a folder root holds more than declarations and re-exports."""
    rest = re.sub(r"(pub(\(crate\))?\s+)?(mod\s+\w+;|use\s+[^;]+;)", "", code, flags=re.S)
    rest = re.sub(r"#!?\[[^\]]*\]", "", rest)
    return bool(rest.strip())


def main():
    mods = modules()
    reexports(mods)
    graph = {}
    kind_hits = []
    for me, file in mods.items():
        code = strip_comments(open(file, encoding="utf-8").read())
        # lib.rs and folder roots declare and re-export: they are the
        # crate's table of contents, not an import of the files they list
        # (imports through them are followed to the file, above).
        if file.endswith(("lib.rs", "mod.rs")) and not has_code(code):
            graph[me] = set()
        else:
            graph[me] = imports(mods, me, code)
        for n, line in enumerate(strip_strings(code).splitlines(), 1):
            for m in KIND_WORDS.finditer(line):
                kind_hits.append(f"{os.path.relpath(file, ROOT)}:{n}: {m.group(0)}")
    cycles = sccs(graph)
    for c in cycles:
        print("import cycle in lock-core:", " <-> ".join("/".join(m) for m in c))
    for hit in kind_hits:
        print("kind name in lock-core code:", hit)
    if cycles or kind_hits:
        sys.exit(1)
    print(f"lock-core: {len(mods)} files, no import cycle, no kind name in code")


if __name__ == "__main__":
    main()
