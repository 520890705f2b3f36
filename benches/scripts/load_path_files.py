#!/usr/bin/env python3
"""The files of thumbpipe's crate (pipeline/src) that one image load passes
through: `load-path` run under valgrind's callgrind, its instrumentation on
only between its `ready` and `loaded` lines, and every source file in which
one of thumbpipe's functions ran counted. Build `load-path` in the dev
profile (unoptimised, line tables: no function of ours is inlined into
another, so each runs under its own file's name):

    cargo build -p thumbpipe-benches --bin load-path
    python3 benches/scripts/load_path_files.py target/debug/load-path [-- ARGS]

ARGS go to load-path (`--image camera|progressive`, `--disk-cache DIR`).
Prints the files, then their count, then how many times a JPEG segment was
read (calls of `jpeg::markers::read_segment`, from any caller): against
the segments the file has, how many times its markers were walked. Needs
valgrind (Debian's `valgrind`).
"""
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

binary = sys.argv[1]
extra = sys.argv[3:] if len(sys.argv) > 2 and sys.argv[2] == "--" else sys.argv[2:]
out_dir = tempfile.mkdtemp(prefix="load-path-")
out = os.path.join(out_dir, "callgrind.out")
child = subprocess.Popen(
    ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
     binary, *extra],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
)


def expect(word):
    line = child.stdout.readline()
    if line.strip() != word:
        child.kill()
        sys.exit(f"load-path said {line!r}, not {word!r}")


def control(state):
    subprocess.run(["callgrind_control", "--instr=" + state, str(child.pid)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # callgrind takes the command at its next check of the command file.
    time.sleep(1)


expect("ready")
control("on")
child.stdin.write("\n")
child.stdin.flush()
expect("loaded")
control("off")
child.stdin.write("\n")
child.stdin.flush()
child.wait()

# fl= (a function's file), fn= (the function): with name compression,
# "(id) name" the first time, "(id)" after. A file counts when one of
# thumbpipe's own functions ran in it. Inlined code (fi=, fe=) is left out:
# at opt-level 0 none of ours is inlined, and std's generic code can carry
# a file name of ours in its line tables.
names, functions, files = {}, {}, set()
current, function, callee = None, "", ""
segment_reads = 0
for path in glob.glob(out + "*"):
    for line in open(path, errors="replace"):
        m = re.match(r"(c?)(fl|fi|fe|fn)=\((\d+)\)(?: (.*))?", line)
        if m and m.group(1) and m.group(2) == "fn":
            callee = functions.get(m.group(3), "") if not m.group(4) else m.group(4).strip()
        calls = re.match(r"calls=(\d+) ", line)
        if calls:
            if "jpeg::markers::read_segment" in callee:
                segment_reads += int(calls.group(1))
            continue
        if m:
            table = functions if m.group(2) == "fn" else names
            # A name is given once, wherever it first appears (a callee's
            # cfl= or cfn= too); only fl=, fi=, fe= and fn= change what the
            # cost lines after them count for.
            if m.group(4):
                table[m.group(3)] = m.group(4).strip()
            if not m.group(1):
                if m.group(2) == "fn":
                    function = functions.get(m.group(3), "")
                elif m.group(2) == "fl":
                    current = names.get(m.group(3))
            continue
        if current and "thumbpipe" in function and re.match(r"[0-9+\-*]", line):
            files.add(current)
crate = sorted({f.split("pipeline/src/", 1)[1] for f in files if "pipeline/src/" in f})
for f in crate:
    print(f)
print(f"{len(crate)} files of pipeline/src")
print(f"{segment_reads} JPEG segments read")
