#!/usr/bin/env python3
"""Independent writer of freedesktop.org thumbnails, for tests.

This is a small, self-contained implementation of the *writing* side of the
freedesktop.org Thumbnail Managing Standard, version 0.9:

    https://specifications.freedesktop.org/thumbnail-spec/latest/

The Rust tests of the thumbnail library run it to prove that the library
reads thumbnails written by code other than its own.  It uses the Python 3
standard library only (no PIL): the PNG is written by hand.

Rules it follows (section names refer to the spec):

* URI ("Thumbnail Saving"): the file's path is made absolute with
  ``os.path.abspath`` (symlinks are NOT resolved) and turned into a
  ``file://`` URI the way GLib's ``g_filename_to_uri`` does it: the path's
  bytes (``os.fsencode``) are kept as they are when they are ASCII letters,
  digits or one of ``- . _ ~ ! $ & ' ( ) * + , = : @ /``, and every other
  byte becomes ``%XX`` with UPPERCASE hex (so a space is ``%20``, ``;`` is
  ``%3B``, ``#`` is ``%23`` and ``é`` is ``%C3%A9``).
* Name: the lowercase hex MD5 of that URI, plus ``.png``.
* Directory ("Thumbnail Directory"): ``CACHE/normal`` (at most 128 px),
  ``CACHE/large`` (256), ``CACHE/x-large`` (512) or ``CACHE/xx-large``
  (1024), where CACHE is normally ``$XDG_CACHE_HOME/thumbnails``.  The
  directories are created with mode 0700.
* Image ("Image Format"): an 8-bit RGBA PNG (colour type 6), every pixel one
  colour, by default magenta (255,0,255,255) so that a test can tell these
  pixels from those of a decoded photo.  Default size: the size class's
  maximum by three quarters of it (128x96 for "normal").  The maximum is
  not enforced, so a test can also write a non-conforming thumbnail.
* Metadata ("Thumbnail Attributes"): tEXt chunks, placed BEFORE the IDAT
  chunk: ``Thumb::URI`` and ``Thumb::MTime`` (required), ``Thumb::Size``
  (unless --no-size), ``Thumb::Image::Width`` / ``Thumb::Image::Height``
  (if --source-size), ``Thumb::Mimetype`` (from the file's extension, when
  known) and ``Software``.  ``Thumb::MTime`` is the file's modification time
  in whole seconds plus --mtime-offset (default 0; non-zero writes a stale
  thumbnail).
* Saving ("Concurrent Thumbnail Creation"): the PNG goes to a temporary file
  in the destination directory, is chmod 0600 and then atomically renamed
  onto its final name.

Usage::

    python3 freedesktop_thumbnailer.py --cache DIR
        [--size normal|large|x-large|xx-large] [--rgba R,G,B,A]
        [--width W --height H] [--source-size WxH] [--no-size]
        [--mtime-offset N] FILE...

It prints one line per FILE: the path of the thumbnail written.  Exit status
0 on success; if a FILE cannot be read, a message goes to stderr, the other
files are still processed, and the exit status is 1.

Licence: MIT OR Apache-2.0, at your option (the same as the project).
"""

import argparse
import hashlib
import os
import struct
import sys
import tempfile
import urllib.parse
import zlib

SOFTWARE = "freedesktop_thumbnailer.py"

# Size class -> maximum edge in pixels (spec, "Thumbnail Directory").
SIZES = {"normal": 128, "large": 256, "x-large": 512, "xx-large": 1024}

# Extension -> Thumb::Mimetype.
MIME_TYPES = {
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "png": "image/png",
    "webp": "image/webp",
    "gif": "image/gif",
}

# Bytes g_filename_to_uri leaves unescaped besides ASCII letters and digits.
# urllib.parse.quote always keeps letters, digits and "_.-~"; "~" is listed
# again for clarity.
URI_SAFE = "!$&'()*+,=:@/~"

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def file_uri(path):
    """The canonical file:// URI of ``path``, escaped like g_filename_to_uri."""
    path = os.path.abspath(path)
    return "file://" + urllib.parse.quote(os.fsencode(path), safe=URI_SAFE)


def thumbnail_name(uri):
    """MD5 of the URI (as bytes) in lowercase hex, plus ".png"."""
    return hashlib.md5(uri.encode("ascii")).hexdigest() + ".png"


def _chunk(kind, data):
    """One PNG chunk: length, type, data, CRC32 over type and data."""
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def _text_chunk(keyword, text):
    return _chunk(b"tEXt", keyword.encode("latin-1") + b"\x00" + text.encode("latin-1"))


def png_bytes(width, height, rgba, texts):
    """An 8-bit RGBA PNG filled with ``rgba``; ``texts`` are (keyword, text)
    pairs written as tEXt chunks before the IDAT chunk."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    row = b"\x00" + bytes(rgba) * width  # filter type 0 (None) per row
    idat = zlib.compress(row * height, 9)
    out = [PNG_SIGNATURE, _chunk(b"IHDR", ihdr)]
    out.extend(_text_chunk(k, v) for k, v in texts)
    out.append(_chunk(b"IDAT", idat))
    out.append(_chunk(b"IEND", b""))
    return b"".join(out)


def mime_type(path):
    ext = os.path.splitext(path)[1].lstrip(".").lower()
    return MIME_TYPES.get(ext)


def write_thumbnail(path, args):
    """Write the thumbnail of ``path``; return the thumbnail's path.
    Raises OSError if ``path`` cannot be read."""
    path = os.path.abspath(path)
    st = os.stat(path)
    with open(path, "rb") as f:  # the file must be readable
        f.read(1)

    uri = file_uri(path)
    texts = [
        ("Thumb::URI", uri),
        ("Thumb::MTime", str(int(st.st_mtime) + args.mtime_offset)),
    ]
    if not args.no_size:
        texts.append(("Thumb::Size", str(st.st_size)))
    if args.source_size is not None:
        texts.append(("Thumb::Image::Width", str(args.source_size[0])))
        texts.append(("Thumb::Image::Height", str(args.source_size[1])))
    mime = mime_type(path)
    if mime is not None:
        texts.append(("Thumb::Mimetype", mime))
    texts.append(("Software", SOFTWARE))

    data = png_bytes(args.width, args.height, args.rgba, texts)

    os.makedirs(args.cache, mode=0o700, exist_ok=True)
    size_dir = os.path.join(args.cache, args.size)
    os.makedirs(size_dir, mode=0o700, exist_ok=True)
    final = os.path.join(size_dir, thumbnail_name(uri))

    fd, tmp = tempfile.mkstemp(dir=size_dir, prefix=".thumb-", suffix=".png.tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o600)
        os.replace(tmp, final)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return final


def _rgba(value):
    parts = value.split(",")
    try:
        channels = [int(p) for p in parts]
    except ValueError:
        channels = []
    if len(channels) != 4 or not all(0 <= c <= 255 for c in channels):
        raise argparse.ArgumentTypeError("expected R,G,B,A with each 0..255, got %r" % value)
    return channels


def _dimensions(value):
    try:
        w, h = (int(p) for p in value.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError("expected WxH, got %r" % value)
    if w <= 0 or h <= 0:
        raise argparse.ArgumentTypeError("expected positive WxH, got %r" % value)
    return (w, h)


def _positive(value):
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n <= 0:
        raise argparse.ArgumentTypeError("expected a positive integer, got %r" % value)
    return n


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Write freedesktop.org (Thumbnail Managing Standard 0.9) "
        "thumbnails: solid-colour RGBA PNGs, for tests."
    )
    p.add_argument("--cache", required=True,
                   help="thumbnail cache directory, e.g. $XDG_CACHE_HOME/thumbnails")
    p.add_argument("--size", choices=list(SIZES), default="normal",
                   help="size class / subdirectory (default: normal)")
    p.add_argument("--rgba", type=_rgba, default=[255, 0, 255, 255],
                   help="pixel colour R,G,B,A (default: 255,0,255,255)")
    p.add_argument("--width", type=_positive,
                   help="image width (default: the size class's maximum)")
    p.add_argument("--height", type=_positive,
                   help="image height (default: 3/4 of the size class's maximum)")
    p.add_argument("--source-size", type=_dimensions, metavar="WxH",
                   help="write Thumb::Image::Width and Thumb::Image::Height")
    p.add_argument("--no-size", action="store_true",
                   help="omit Thumb::Size")
    p.add_argument("--mtime-offset", type=int, default=0, metavar="N",
                   help="add N seconds to Thumb::MTime (non-zero makes the thumbnail stale)")
    p.add_argument("files", nargs="+", metavar="FILE")
    args = p.parse_args(argv)
    edge = SIZES[args.size]
    if args.width is None:
        args.width = edge
    if args.height is None:
        args.height = edge * 3 // 4
    return args


def main(argv=None):
    args = parse_args(argv)
    status = 0
    for name in args.files:
        try:
            print(write_thumbnail(name, args), flush=True)
        except OSError as e:
            print("freedesktop_thumbnailer.py: %s: %s" % (name, e), file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
