"""Pillow's time to make a thumbnail of each file: open, decode, and fit
inside SIDE x SIDE with Lanczos, the median of RUNS, in milliseconds. The
baseline `avif-report` sets beside thumbpipe's in the same run.

    python3 benches/scripts/pillow_decode_timing.py RUNS SIDE THREADS FILE...

THREADS is how many threads libavif may decode one AVIF on (0: Pillow's
default, one per CPU). Prints one line per file: its path and the median.
Needs Pillow 11.2 or later for AVIF (its wheels carry libavif with dav1d).
"""

import statistics
import sys
import time

from PIL import AvifImagePlugin, Image


def main():
    runs, side, threads = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    AvifImagePlugin.DEFAULT_MAX_THREADS = threads
    for path in sys.argv[4:]:
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            with Image.open(path) as image:
                image.load()
                image.thumbnail((side, side), Image.Resampling.LANCZOS)
            times.append((time.perf_counter() - started) * 1000)
        print(f"{path}\t{statistics.median(times):.2f}")


if __name__ == "__main__":
    main()
