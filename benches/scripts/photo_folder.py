#!/usr/bin/env python3
"""Writes a folder of camera-like photos from a running fixture server, for
measuring thumbpipe (and egui_extras) on local files:

    cargo run --release -p fixture-server -- --latency-ms 0 --port 47700 &
    python3 benches/scripts/photo_folder.py --server http://127.0.0.1:47700 \\
        --out /tmp/photos --count 400

Of every 20 files: 10 baseline 12 MP JPEGs (4000x3000) with a 160x120 EXIF
thumbnail, 5 progressive ones without, 4 baseline ones without, and one
1600x1200 PNG (the fixture server draws no WebP). Each photo's picture is its number: the fixture's
camera texture, encoded by the server once. Standard library only.
"""

import argparse
import concurrent.futures
import os
import sys
import urllib.request


def kind(n):
    """The file name and the server's query for photo `n`."""
    slot = n % 20
    if slot < 10:
        return f"{n:05}-exif.jpg", f"/img/{n}.jpg?w=4000&h=3000&exif=160"
    if slot < 15:
        return f"{n:05}-progressive.jpg", f"/img/{n}.jpg?w=4000&h=3000&exif=0&progressive=1"
    if slot < 19:
        return f"{n:05}-plain.jpg", f"/img/{n}.jpg?w=4000&h=3000&exif=0"
    return f"{n:05}-drawing.png", f"/img/{n}.png?w=1600&h=1200"


def fetch(server, out, n):
    name, query = kind(n)
    path = os.path.join(out, name)
    if os.path.exists(path):
        return path
    with urllib.request.urlopen(server + query) as response:
        data = response.read()
    with open(path + ".part", "wb") as file:
        file.write(data)
    os.replace(path + ".part", path)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(lambda n: fetch(args.server, args.out, n), range(args.count)))
    total = sum(os.path.getsize(os.path.join(args.out, f)) for f in os.listdir(args.out))
    print(f"{len(os.listdir(args.out))} files, {total / 1e6:.1f} MB in {args.out}")


if __name__ == "__main__":
    sys.exit(main())
