"""The AVIF files thumbpipe's tests make with Pillow, and the reference
thumbnails of every AVIF in the test corpus.

    python3 benches/scripts/avif_corpus.py pipeline/tests/it/corpus

Writes into CORPUS/avif/: plasma-*.avif, the corpus's 96x72 plasma
(`baseline.jpg`, `gray-alpha.png`) encoded by Pillow's libavif in each
layout the tests need; then, for every CORPUS/avif/*.avif, Pillow's
thumbnail fitted inside 64x64 (Lanczos, never scaled up, the file's clean
aperture cropped as libavif reckons it, then its turn and mirror applied)
as CORPUS/avif/pillow/NAME.png, or NAME.refused with Pillow's error. Needs
Pillow 11.2 or later (its wheels carry libavif).
"""

import os
import sys

from PIL import Image, ImageOps, features

from avif_clap import libavif_crop

SIDE = 64


def fit_inside(width, height, side):
    """The thumbnail size thumbpipe computes (half rounds up, as it does)."""
    if width <= side and height <= side:
        return width, height
    scale = min(side / width, side / height)
    return max(1, int(width * scale + 0.5)), max(1, int(height * scale + 0.5))


def make(corpus, out):
    plasma = Image.open(os.path.join(corpus, "baseline.jpg")).convert("RGB")
    alpha = Image.open(os.path.join(corpus, "gray-alpha.png")).getchannel("A")
    rgba = plasma.copy()
    rgba.putalpha(alpha)
    save = lambda image, name, **options: image.save(
        os.path.join(out, name), "AVIF", quality=90, **options
    )
    save(plasma, "plasma-420.avif")
    save(plasma, "plasma-422-limited.avif", subsampling="4:2:2", range="limited")
    save(plasma, "plasma-444.avif", subsampling="4:4:4")
    save(plasma.convert("L"), "plasma-400.avif")
    save(rgba, "plasma-alpha.avif")
    save(rgba, "plasma-alpha-premultiplied.avif", alpha_premultiplied=True)
    # Stored as the orientation's inverse, so that each shows the plasma
    # upright: libavif writes the orientation as `irot` and `imir`.
    stored = {
        2: Image.Transpose.FLIP_LEFT_RIGHT,  # imir, left and right
        4: Image.Transpose.FLIP_TOP_BOTTOM,  # imir, top and bottom
        5: Image.Transpose.TRANSPOSE,  # irot and imir
        6: Image.Transpose.ROTATE_90,  # irot
    }
    for orientation, transpose in stored.items():
        turned = Image.Exif()
        turned[0x0112] = orientation
        name = f"plasma-orientation-{orientation}.avif"
        save(plasma.transpose(transpose), name, exif=turned)
    frames = [plasma, plasma.transpose(Image.Transpose.FLIP_LEFT_RIGHT)]
    save(frames[0], "plasma-animated.avif", save_all=True, append_images=frames[1:], duration=100)


def write_reference(stem, rgba):
    """Writes `rgba` fitted inside SIDE x SIDE (Lanczos, never scaled up)
    as STEM.png."""
    size = fit_inside(rgba.width, rgba.height, SIDE)
    if size != rgba.size:
        rgba = rgba.resize(size, Image.Resampling.LANCZOS)
    rgba.save(stem + ".png")


def write_refused(stem, error):
    """Writes why the reference decoder refused a file, as STEM.refused
    (STEM is DIR/pillow/NAME: DIR is left out of the message)."""
    reason = str(error).replace(os.path.dirname(os.path.dirname(stem)) + os.sep, "")
    with open(stem + ".refused", "w") as refused:
        refused.write(f"{type(error).__name__}: {reason}\n")


def references(out):
    os.makedirs(os.path.join(out, "pillow"), exist_ok=True)
    for name in sorted(n for n in os.listdir(out) if n.endswith(".avif")):
        stem = os.path.join(out, "pillow", name[: -len(".avif")])
        try:
            path = os.path.join(out, name)
            with Image.open(path) as image:
                image.seek(0)
                crop = libavif_crop(path)
                if crop is not None:
                    x, y, width, height = crop
                    cropped = image.crop((x, y, x + width, y + height))
                    cropped.info = image.info
                    image = cropped
                rgba = ImageOps.exif_transpose(image).convert("RGBA")
            write_reference(stem, rgba)
        except Exception as error:  # a refusal is a reference too
            write_refused(stem, error)


def main():
    if not features.check("avif"):
        sys.exit("this Pillow reads no AVIF: Pillow 11.2 or later is needed")
    corpus = sys.argv[1]
    out = os.path.join(corpus, "avif")
    make(corpus, out)
    references(out)
    print(f"Pillow {Image.__version__}, libavif {features.version('avif')}")


if __name__ == "__main__":
    main()
