#!/usr/bin/env python3
"""Circles of imports between the files of thumbpipe's crate (pipeline/src),
and imports that point up its layers.

Each file is a module; an edge A -> B means A names something of B's
(`use super::b::...`, `use crate::x::b::...`, or an inline `super::b::x`
path). A module's `mod.rs` re-exporting its children is not an edge from
the child's point of view, so the parent (`mod.rs`) is left out as a
target when a child names it through `super::Item`. Prints every strongly
connected group of two or more files, and every import of a file in a
higher layer (LAYERS below) than the importing file's; exits 1 if there
is either.

The layers, from the bottom: plain data and seams every stage shares (the
errors, a body, a thumbnail, a request, each stage's settings and
statistics, the thumbnail tier's trait); the settings as a whole, the
counters, the memory cache, delivery and the local files; the decode
stage (with the format table, which the fetch asks what to accept and
how far to read); the fetch stage; the load actor; the tiers beside it (the disk
cache, the shared thumbnails); the pipeline handle; the UI side's layer every toolkit shares; the toolkit doors;
the crate's front (lib.rs). A file imports from its own layer or below.

    python3 benches/scripts/import_cycles.py [pipeline/src]
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "pipeline/src"


def module_of(path):
    rel = os.path.relpath(path, root)[:-3].split(os.sep)
    if rel[-1] in ("mod", "lib"):
        rel = rel[:-1]
    return tuple(rel)


files = {}
for r, _, names in os.walk(root):
    for n in names:
        if n.endswith(".rs"):
            p = os.path.join(r, n)
            files[module_of(p)] = p
modules = set(files)


def resolve(base, parts):
    """The deepest existing module along `parts`, starting at `base`."""
    path = list(base)
    found = None
    for part in parts:
        if part == "super":
            path = path[:-1]
            continue
        if part in ("self", "crate"):
            continue
        path = path + [part]
        if tuple(path) in modules:
            found = tuple(path)
        else:
            break
    return found


def expand(tree):
    """The paths of a `use` tree: `a::{b, c::{d, e}}` gives a::b, a::c::d, a::c::e."""
    tree = tree.replace(" ", "").replace("\n", "")
    depth, start = 0, None
    for i, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                prefix, inner = tree[:start], tree[start + 1 : i]
                items, level, last = [], 0, 0
                for j, c in enumerate(inner + ","):
                    if c == "{":
                        level += 1
                    elif c == "}":
                        level -= 1
                    elif c == "," and level == 0:
                        if inner[last:j]:
                            items.append(inner[last:j])
                        last = j + 1
                return [p for item in items for p in expand(prefix + item)]
    return [tree]


edges = {m: set() for m in modules}
for module, path in files.items():
    text = open(path).read()
    text = text.split("#[cfg(test)]\nmod tests")[0]
    # Comments name modules without importing them.
    text = re.sub(r"//[^\n]*", "", text)
    is_mod_rs = path.endswith("mod.rs") or path.endswith("lib.rs")
    # The module a `super::` path starts from is the file's parent module.
    base = module if is_mod_rs else module[:-1]
    paths = []
    for m in re.finditer(r"\buse\s+([^;]+);", text):
        paths += expand(m.group(1))
    for m in re.finditer(r"\b((?:crate|super|self)(?:::\w+)+)", text):
        paths.append(m.group(1))
    for use in paths:
        parts = [p for p in use.split("::") if p]
        if not parts or parts[0] not in ("crate", "super", "self"):
            continue
        if parts[0] == "crate":
            start, parts = (), parts[1:]
        elif parts[0] == "self":
            start, parts = module, parts[1:]
        else:
            start, parts = base, parts[1:]
        target = resolve(start, parts)
        if target is None or target == module:
            continue
        # A child naming its parent module's re-export is not a circle.
        if len(target) < len(module) and module[: len(target)] == target:
            continue
        edges[module].add(target)

LAYERS = [
    ["error", "body", "thumbnail", "workers", "request", "queue", "coast",
     "decode/config", "fetch/config", "fetch/headers", "fetch/stop", "disk/config",
     "disk/stats", "shared_thumbnails/config", "load/tier", "small_files", "room"],
    ["config", "metrics", "cache", "deliver", "local_files"],
    ["decode"],
    ["fetch"],
    ["load"],
    ["disk", "shared_thumbnails"],
    ["pipeline"],
    ["front"],
    ["egui", "iced"],
    [""],
]


def layer_of(module):
    """The layer of a file: its own entry, else its top module's."""
    name = "/".join(module)
    for depth in range(len(module), -1, -1):
        prefix = "/".join(module[:depth])
        for n, names in enumerate(LAYERS):
            if prefix in names:
                return n
    raise SystemExit(f"{name}: in no layer")


upward = sorted(
    (files[a], files[b])
    for a, targets in edges.items()
    for b in targets
    if layer_of(b) > layer_of(a)
)
for a, b in upward:
    print("up a layer:", os.path.relpath(a, root), "->", os.path.relpath(b, root))

# Tarjan's strongly connected components.
index, low, stack, on, groups = {}, {}, [], set(), []
counter = [0]


def visit(v):
    index[v] = low[v] = counter[0]
    counter[0] += 1
    stack.append(v)
    on.add(v)
    for w in edges[v]:
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        group = []
        while True:
            w = stack.pop()
            on.discard(w)
            group.append(w)
            if w == v:
                break
        if len(group) > 1:
            groups.append(sorted(group))


sys.setrecursionlimit(10000)
for v in sorted(modules):
    if v not in index:
        visit(v)
for group in groups:
    print("circle:", ", ".join(os.path.relpath(files[m], root) for m in group))
print(
    f"{len(files)} files, {sum(len(e) for e in edges.values())} imports, "
    f"{len(groups)} circles, {len(upward)} up a layer"
)
sys.exit(1 if groups or upward else 0)
