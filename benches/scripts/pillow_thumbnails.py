"""Reference thumbnails made with Pillow, for thumbpipe's `realworld` report.

    python3 benches/scripts/pillow_thumbnails.py CORPUS_DIR OUT_DIR SIDE

For every file in CORPUS_DIR: the first frame as a browser shows it (the
EXIF orientation applied, a GIF frame placed on its logical screen, any
transparency kept, an AVIF's clean aperture cropped as libavif reckons it:
`avif_clap.py`), fitted inside SIDE x SIDE with Lanczos (never scaled
up), written to OUT_DIR as NAME.rgba (raw RGBA); OUT_DIR/index.tsv has a
line per file: name, then "ok width height" or "refused reason".
"""

import os
import sys

from PIL import Image, ImageOps

from avif_clap import libavif_crop

try:
    # HEIC and HEIF, through the libheif pillow-heif bundles, when it is
    # installed (`pip install pillow-heif`): turned and cropped as the file
    # says, which it applies before Pillow sees the EXIF orientation.
    import pillow_heif

    pillow_heif.register_heif_opener()
except ImportError:
    pass

Image.MAX_IMAGE_PIXELS = 16384 * 16384


def fit_inside(width, height, side):
    """The thumbnail size thumbpipe computes: inside side x side, aspect kept,
    never larger than the image, at least one pixel a side."""
    if width <= side and height <= side:
        return width, height
    scale = min(side / width, side / height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def write_fitted(index, out, name, rgba, side):
    """Writes `rgba` fitted inside side x side (Lanczos, never scaled up) to
    OUT/NAME.rgba, and its line to the index."""
    size = fit_inside(rgba.width, rgba.height, side)
    if size != rgba.size:
        rgba = rgba.resize(size, Image.Resampling.LANCZOS)
    with open(os.path.join(out, name + ".rgba"), "wb") as raw:
        raw.write(rgba.tobytes())
    index.write(f"{name}\tok {rgba.width} {rgba.height}\n")


def write_refused(index, name, error):
    """Writes a refusal's line to the index: a refusal is a result."""
    reason = str(error).replace("\t", " ").replace("\n", " ")
    index.write(f"{name}\trefused {type(error).__name__}: {reason}\n")


def main():
    corpus, out, side = sys.argv[1], sys.argv[2], int(sys.argv[3])
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "index.tsv"), "w") as index:
        for name in sorted(os.listdir(corpus)):
            path = os.path.join(corpus, name)
            try:
                with Image.open(path) as image:
                    # The first frame; a HEIF opens at its primary image,
                    # which viewers show, and need not be its first.
                    if image.format != "HEIF":
                        image.seek(0)
                    crop = libavif_crop(path) if image.format == "AVIF" else None
                    if crop is not None:
                        x, y, width, height = crop
                        cropped = image.crop((x, y, x + width, y + height))
                        cropped.info = image.info
                        cropped.getexif().update(image.getexif())
                        image = cropped
                    upright = ImageOps.exif_transpose(image)
                    write_fitted(index, out, name, upright.convert("RGBA"), side)
            except Exception as error:  # a refusal is a result, not a crash
                write_refused(index, name, error)


if __name__ == "__main__":
    main()
