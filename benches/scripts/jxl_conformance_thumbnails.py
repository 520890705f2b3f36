"""Reference thumbnails of the JPEG XL conformance files, for thumbpipe's
`realworld` report: each test case's own reference decode (`ref.png`, made
by libjxl for the suite), read at its bit depth with pypng, its first frame
fitted with Pillow as `pillow_thumbnails.py` fits.

    # a checkout of github.com/libjxl/conformance (BSD-3-Clause; the
    # sources' licences are in testcases/README.md)
    python3 benches/scripts/jxl_conformance_thumbnails.py CONFORMANCE/testcases CORPUS_DIR OUT_DIR SIDE
    cargo run --release -p thumbpipe-benches --bin realworld -- \
        --corpus CORPUS_DIR --reference OUT_DIR --side SIDE --reference-name "libjxl's ref.png"

Copies each case's input.jxl to CORPUS_DIR/CASE.jxl. Needs pypng and
Pillow. A case whose reference is not a PNG (a Git LFS pointer, say) is
left out.
"""

import os
import shutil
import sys

import png
from PIL import Image

from pillow_thumbnails import write_fitted, write_refused


def rgba8(path):
    """The PNG at `path` as 8-bit RGBA (Pillow reads 16-bit RGBA wrongly)."""
    width, height, rows, info = png.Reader(filename=path).asRGBA()
    shift = info["bitdepth"] - 8
    data = bytearray()
    for row in rows:
        data.extend((v >> shift) if shift > 0 else v for v in row)
    return Image.frombytes("RGBA", (width, height), bytes(data))


def main():
    cases, corpus, out, side = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    os.makedirs(corpus, exist_ok=True)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "index.tsv"), "w") as index:
        for case in sorted(os.listdir(cases)):
            source = os.path.join(cases, case, "input.jxl")
            reference = os.path.join(cases, case, "ref.png")
            if not (os.path.isfile(source) and os.path.isfile(reference)):
                continue
            with open(reference, "rb") as head:
                # A Git LFS pointer where the file was not fetched.
                if head.read(8) != b"\x89PNG\r\n\x1a\n":
                    continue
            name = case + ".jxl"
            shutil.copyfile(source, os.path.join(corpus, name))
            try:
                rgba = rgba8(reference)
                write_fitted(index, out, name, rgba, side)
            except Exception as error:  # a refusal is a result, not a crash
                write_refused(index, name, error)


if __name__ == "__main__":
    main()
