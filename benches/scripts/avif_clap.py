"""The crop an AVIF's clean aperture (`clap`) makes, as libavif reckons it.

Pillow's AVIF plugin (libavif) decodes the whole image and leaves the
`clap` unapplied; a viewer on libavif (its apps, Android, browsers) applies
the crop rectangle libavif's `avifCropRectFromCleanApertureBox` gives, and
shows the whole image where that says the box is not a crop. The reference
scripts crop Pillow's image the same way, before the turn and mirror (which
Pillow gives as an EXIF orientation):

    from avif_clap import libavif_crop
    crop = libavif_crop(path)  # (x, y, width, height), or None
"""

import struct


def _boxes(data, start, end):
    """(type, body start, body end) of each box in data[start:end]."""
    at = start
    while at + 8 <= end:
        size, kind = struct.unpack(">I4s", data[at:at + 8])
        header = 8
        if size == 1:
            size = struct.unpack(">Q", data[at + 8:at + 16])[0]
            header = 16
        elif size == 0:
            size = end - at
        if size < header or at + size > end:
            return
        yield kind, at + header, at + size
        at += size


def _primary_properties(data):
    """The primary item's properties: (type, body) of each, in its order."""
    meta = next((b for b in _boxes(data, 0, len(data)) if b[0] == b"meta"), None)
    if meta is None:
        return []
    children = list(_boxes(data, meta[1] + 4, meta[2]))
    primary, properties, associations = None, [], {}
    for kind, start, end in children:
        if kind == b"pitm":
            version = data[start]
            primary = (struct.unpack(">H", data[start + 4:start + 6])[0] if version == 0
                       else struct.unpack(">I", data[start + 4:start + 8])[0])
        elif kind == b"iprp":
            for inner, s, e in _boxes(data, start, end):
                if inner == b"ipco":
                    properties = [(k, data[bs:be]) for k, bs, be in _boxes(data, s, e)]
                elif inner == b"ipma":
                    version, flags = data[s], int.from_bytes(data[s + 1:s + 4], "big")
                    at = s + 4
                    count = struct.unpack(">I", data[at:at + 4])[0]
                    at += 4
                    for _ in range(count):
                        if version < 1:
                            item = struct.unpack(">H", data[at:at + 2])[0]
                            at += 2
                        else:
                            item = struct.unpack(">I", data[at:at + 4])[0]
                            at += 4
                        listed = data[at]
                        at += 1
                        indexes = []
                        for _ in range(listed):
                            if flags & 1:
                                indexes.append(struct.unpack(">H", data[at:at + 2])[0] & 0x7FFF)
                                at += 2
                            else:
                                indexes.append(data[at] & 0x7F)
                                at += 1
                        associations.setdefault(item, []).extend(indexes)
    return [properties[i - 1] for i in associations.get(primary, []) if 0 < i <= len(properties)]


def libavif_crop(path):
    """(x, y, width, height) that the file's `clap` keeps of its primary
    image (ispe), or None without a clap or where it is no crop."""
    with open(path, "rb") as f:
        data = f.read()
    found = dict(_primary_properties(data))
    if b"clap" not in found or b"ispe" not in found:
        return None
    image_w, image_h = struct.unpack(">II", found[b"ispe"][4:12])
    wn, wd, hn, hd, xn, xd, yn, yd = struct.unpack(">8i", found[b"clap"][:32])
    if wd <= 0 or hd <= 0 or xd <= 0 or yd <= 0 or wn < 0 or hn < 0:
        return None
    if wn % wd or hn % hd:
        return None
    width, height = wn // wd, hn // hd
    # Twice the origin: the image's size plus twice the offset less the crop.
    if (2 * xn) % xd or (2 * yn) % yd:
        return None
    twice_x = image_w + (2 * xn) // xd - width
    twice_y = image_h + (2 * yn) // yd - height
    if twice_x % 2 or twice_y % 2:
        return None
    x, y = twice_x // 2, twice_y // 2
    if x < 0 or y < 0 or width == 0 or height == 0:
        return None
    if x + width > image_w or y + height > image_h:
        return None
    return x, y, width, height
