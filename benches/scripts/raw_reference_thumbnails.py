"""Reference thumbnails of camera RAW files, for thumbpipe's `realworld`
report: each file's largest embedded JPEG as ExifTool extracts it
(`-PreviewImage`, `-JpgFromRaw` or `-OtherImage`, whichever is largest),
turned as ExifTool reads the RAW's orientation, fitted with Pillow.

    python3 benches/scripts/raw_reference_thumbnails.py CORPUS_DIR OUT_DIR SIDE
    cargo run --release -p thumbpipe-benches --bin realworld -- \
        --corpus CORPUS_DIR --reference OUT_DIR --side SIDE --reference-name ExifTool+Pillow

Needs `exiftool` (Debian's libimage-exiftool-perl) and Pillow. Writes
OUT_DIR/NAME.rgba and OUT_DIR/index.tsv as `pillow_thumbnails.py` does.
"""

import io
import os
import subprocess
import sys

from PIL import Image

from pillow_thumbnails import write_fitted, write_refused

TAGS = ["PreviewImage", "JpgFromRaw", "OtherImage"]

# EXIF orientation to the Pillow transposes that make the picture upright.
TURNS = {
    2: [Image.Transpose.FLIP_LEFT_RIGHT],
    3: [Image.Transpose.ROTATE_180],
    4: [Image.Transpose.FLIP_TOP_BOTTOM],
    5: [Image.Transpose.TRANSPOSE],
    6: [Image.Transpose.ROTATE_270],
    7: [Image.Transpose.TRANSVERSE],
    8: [Image.Transpose.ROTATE_90],
}


def exiftool(*args):
    return subprocess.run(["exiftool", *args], capture_output=True, check=False).stdout


def largest_preview(path):
    """The largest embedded JPEG ExifTool finds, as bytes, or None."""
    best = None
    for tag in TAGS:
        data = exiftool("-b", f"-{tag}", path)
        if data.startswith(b"\xff\xd8") and (best is None or len(data) > len(best)):
            best = data
    return best


def orientation(path):
    value = exiftool("-s3", "-n", "-Orientation", path).strip()
    try:
        return int(value.split()[0])
    except (ValueError, IndexError):
        return 1


def main():
    corpus, out, side = sys.argv[1], sys.argv[2], int(sys.argv[3])
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "index.tsv"), "w") as index:
        for name in sorted(os.listdir(corpus)):
            path = os.path.join(corpus, name)
            if not os.path.isfile(path):
                continue
            try:
                jpeg = largest_preview(path)
                if jpeg is None:
                    raise ValueError("no embedded JPEG")
                with Image.open(io.BytesIO(jpeg)) as image:
                    rgba = image.convert("RGBA")
                for turn in TURNS.get(orientation(path), []):
                    rgba = rgba.transpose(turn)
                write_fitted(index, out, name, rgba, side)
            except Exception as error:  # a refusal is a result, not a crash
                write_refused(index, name, error)


if __name__ == "__main__":
    main()
