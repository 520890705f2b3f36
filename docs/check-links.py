#!/usr/bin/env python3
"""Check the relative links of Markdown files.

Usage: python3 docs/check-links.py FILE.md [FILE.md ...]

For every link and image in the given files (inline `[text](target)`,
`![alt](target)` and reference definitions `[name]: target`), outside code
blocks and code spans, with no URL scheme:

- the file or directory it names must exist, relative to the linking file;
- a `#fragment` must be the slug of a heading in the Markdown file it
  points into (the linking file itself for `#fragment` alone), by GitHub's
  rules: the heading's text lowercased, characters other than letters,
  digits, spaces, hyphens and underscores dropped, spaces turned into
  hyphens, and `-1`, `-2`, ... added to repeats. `id="..."` and
  `name="..."` attributes in the file's HTML count as anchors too.

Prints each broken link as `FILE:LINE: TARGET: REASON` and exits with
status 1 if there is any, 0 otherwise. Python 3, standard library only.
"""

import os
import re
import sys
import unicodedata
from urllib.parse import unquote

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
INLINE_LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(<[^>]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REF_DEF = re.compile(r"^ {0,3}\[([^\]]+)\]:\s*(<[^>]*>|\S+)")
HTML_ANCHOR = re.compile(r"""<[^>]+\b(?:id|name)\s*=\s*["']([^"']+)["']""", re.I)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def content_lines(text):
    """Yield (line number, line) for the lines outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
                continue
            yield number, line
        elif match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                and line.strip() == match.group(1):
            fence = None


def heading_text_to_slug(text):
    """GitHub's anchor for a heading whose Markdown source is `text`."""
    # Images and links render as their text; code spans as their content.
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)", r"\1", text)
    text = CODE_SPAN.sub(lambda m: m.group(2).strip(), text)
    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"\*+", "", text)
    text = text.strip().lower()
    kept = []
    for char in text:
        category = unicodedata.category(char)
        if char in " -_" or category[0] in "LN" or category.startswith("M"):
            kept.append(char)
    return "".join(kept).replace(" ", "-")


def anchors_of(path, cache={}):
    """The set of anchors a Markdown file offers."""
    if path in cache:
        return cache[path]
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    anchors, seen = set(), {}
    previous = ""

    def add(slug):
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")

    for _, line in content_lines(text):
        match = ATX.match(line)
        if match:
            add(heading_text_to_slug(match.group(2) or ""))
            previous = ""
            continue
        if SETEXT.match(line) and previous.strip() and not previous.lstrip().startswith(("|", ">", "-", "*", "+")):
            add(heading_text_to_slug(previous))
            previous = ""
            continue
        for anchor in HTML_ANCHOR.findall(line):
            anchors.add(anchor)
        previous = line
    cache[path] = anchors
    return anchors


def links_of(text):
    """Yield (line number, target) for every link outside code."""
    for number, line in content_lines(text):
        stripped = CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)
        definition = REF_DEF.match(stripped)
        if definition:
            yield number, definition.group(2).strip("<>")
            continue
        for match in INLINE_LINK.finditer(stripped):
            yield number, match.group(2).strip("<>")


def check(path):
    """Print the broken links of one file; return how many there are."""
    broken = 0
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    base = os.path.dirname(os.path.abspath(path))
    for number, target in links_of(text):
        if not target or SCHEME.match(target) or target.startswith("//"):
            continue
        file_part, _, fragment = target.partition("#")
        file_part = unquote(file_part)
        resolved = os.path.abspath(path) if not file_part else os.path.normpath(os.path.join(base, file_part))
        reason = None
        if not os.path.exists(resolved):
            reason = "no such file"
        elif fragment:
            if os.path.isdir(resolved) or not resolved.lower().endswith((".md", ".markdown")):
                reason = "an anchor into a file that is not Markdown"
            elif unquote(fragment) not in anchors_of(resolved):
                reason = f"no heading with the anchor #{fragment}"
        if reason:
            print(f"{path}:{number}: {target}: {reason}")
            broken += 1
    return broken


def main(paths):
    if not paths:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    broken = 0
    for path in paths:
        if not os.path.isfile(path):
            print(f"{path}: no such file")
            broken += 1
            continue
        broken += check(path)
    print(f"{len(paths)} file(s) checked, {broken} broken link(s)", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
