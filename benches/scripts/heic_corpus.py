"""The reference thumbnails of every HEIC in thumbpipe's test corpus.

    python3 benches/scripts/heic_corpus.py pipeline/tests/it/corpus

For every CORPUS/heic/*.heic and *.heif: its primary image as pillow-heif
(libheif, with libde265) decodes it, turned and cropped as the file says,
fitted inside 64x64 (Lanczos, never scaled up), as CORPUS/heic/pillow/NAME.png,
or NAME.refused with pillow-heif's error. Needs `pip install pillow-heif`.
"""

import os
import sys

import pillow_heif
from PIL import Image

from avif_corpus import write_reference, write_refused


def main():
    out = os.path.join(sys.argv[1], "heic")
    os.makedirs(os.path.join(out, "pillow"), exist_ok=True)
    pillow_heif.register_heif_opener()
    # Not `green-*.heic`: their thumbnails were swapped for another
    # picture's, so that the tests see which one is decoded.
    names = (n for n in os.listdir(out) if n.endswith((".heic", ".heif")))
    for name in sorted(n for n in names if not n.startswith("green-")):
        stem = os.path.join(out, "pillow", os.path.splitext(name)[0])
        try:
            # Opened at its primary image, which need not be its first.
            with Image.open(os.path.join(out, name)) as image:
                rgba = image.convert("RGBA")
            write_reference(stem, rgba)
        except Exception as error:  # a refusal is a reference too
            write_refused(stem, error)

if __name__ == "__main__":
    main()
