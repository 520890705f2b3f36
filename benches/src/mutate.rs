//! The fuzzers' mutations: of bytes (any file), of ISO BMFF boxes (AVIF,
//! HEIF: a box's size, a field of its body, a box repeated or removed
//! with every enclosing size kept true, a table's last entry repeated),
//! and of PNG chunks (a chunk's length, its header's fields, a chunk
//! repeated or removed, each with its CRC made right again so the decoder
//! reads past it). Each mutation takes its numbers from an [`Rng`], so an
//! input is rebuilt from its seed and index.
//!
//! Plain functions over a `Vec<u8>`; they keep nothing.

use crate::Rng;

const INTERESTING_BYTES: [u8; 8] = [0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF, 0x10, 0x40];
const INTERESTING_INTS: [u32; 14] = [
    0,
    1,
    2,
    4,
    0x7F,
    0xFF,
    0x7FFF,
    0x8000,
    0xFFFF,
    4096,
    16_384,
    65_500,
    0x7FFF_FFFF,
    0xFFFF_FFFF,
];

fn interesting(rng: &mut Rng) -> u32 {
    INTERESTING_INTS[rng.below(INTERESTING_INTS.len())]
}

/// One mutation of `data`'s bytes: a bit flipped, an interesting byte or
/// integer written, a range deleted or copied elsewhere, the end cut off
/// or taken from another of `seeds`, or a run of one byte inserted.
pub fn bytes(rng: &mut Rng, data: &mut Vec<u8>, seeds: &[Vec<u8>]) {
    let len = data.len();
    match rng.below(9) {
        0 | 1 if len > 0 => {
            let at = rng.position(len);
            data[at] ^= 1 << rng.below(8);
        }
        2 if len > 0 => {
            let at = rng.position(len);
            data[at] = INTERESTING_BYTES[rng.below(INTERESTING_BYTES.len())];
        }
        3 if len > 4 => {
            let at = rng.position(len - 4);
            let value = interesting(rng);
            let bytes = if rng.below(2) == 0 {
                value.to_be_bytes()
            } else {
                value.to_le_bytes()
            };
            let width = [1, 2, 4][rng.below(3)];
            let skip = if rng.below(2) == 0 { 4 - width } else { 0 };
            data[at..at + width].copy_from_slice(&bytes[skip..skip + width]);
        }
        4 if len > 0 => {
            let at = rng.position(len);
            let end = (at + 1 + rng.below(64)).min(len);
            data.drain(at..end);
        }
        5 if len > 0 => {
            let at = rng.position(len);
            let end = (at + 1 + rng.below(64)).min(len);
            let copy = data[at..end].to_vec();
            let to = rng.below(len);
            data.splice(to..to, copy);
        }
        6 => data.truncate(rng.below(len + 1)),
        7 if !seeds.is_empty() => {
            let other = &seeds[rng.below(seeds.len())];
            let from = rng.below(other.len());
            let at = rng.below(len + 1);
            data.truncate(at);
            data.extend_from_slice(&other[from..]);
        }
        _ => {
            let at = rng.position(len + 1);
            let byte = INTERESTING_BYTES[rng.below(INTERESTING_BYTES.len())];
            let count = 1 + rng.below(16);
            data.splice(at..at, std::iter::repeat_n(byte, count));
        }
    }
}

/// A box found in an ISO BMFF file: where it starts, its header's length,
/// its whole size, and the boxes it lies in (their indexes).
#[derive(Clone, Debug)]
struct Found {
    start: usize,
    header: usize,
    size: usize,
    parents: Vec<usize>,
}

/// The boxes that hold boxes, and how many bytes of their body come
/// before the first (a full box's version and flags, an entry count).
fn children_at(kind: &[u8]) -> Option<usize> {
    match kind {
        b"moov" | b"trak" | b"mdia" | b"minf" | b"stbl" | b"dinf" | b"iprp" | b"ipco" => Some(0),
        b"meta" | b"iref" => Some(4),
        b"stsd" => Some(8),
        b"iinf" => Some(6),
        _ => None,
    }
}

/// Every box of `data`, outermost first, down through the boxes that hold
/// boxes (32-bit sizes only: a 64-bit or to-the-end size ends the walk).
fn boxes(data: &[u8]) -> Vec<Found> {
    let mut found = Vec::new();
    let mut stack = vec![(0, data.len(), Vec::new())];
    while let Some((mut at, end, parents)) = stack.pop() {
        while at + 8 <= end {
            let size = u32::from_be_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
            let size = size as usize;
            if size < 8 || at + size > end || found.len() >= 4096 {
                break;
            }
            let index = found.len();
            found.push(Found {
                start: at,
                header: 8,
                size,
                parents: parents.clone(),
            });
            if let Some(skip) = children_at(&data[at + 4..at + 8]) {
                let mut inner = parents.clone();
                inner.push(index);
                stack.push((at + 8 + skip, at + size, inner));
            }
            at += size;
        }
    }
    found
}

/// Adds `delta` to the 32-bit size of each box at `parents`.
fn grow(data: &mut [u8], found: &[Found], parents: &[usize], delta: i64) {
    for &parent in parents {
        let at = found[parent].start;
        let size = u32::from_be_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
        let size = (i64::from(size) + delta).clamp(0, i64::from(u32::MAX)) as u32;
        data[at..at + 4].copy_from_slice(&size.to_be_bytes());
    }
}

/// One mutation of an ISO BMFF file's boxes; falls back to [`bytes`]
/// where `data` has none.
pub fn boxes_of(rng: &mut Rng, data: &mut Vec<u8>, seeds: &[Vec<u8>]) {
    let found = boxes(data);
    if found.is_empty() {
        return bytes(rng, data, seeds);
    }
    let index = rng.below(found.len());
    let chosen = found[index].clone();
    let body = chosen.start + chosen.header..chosen.start + chosen.size;
    match rng.below(6) {
        // Its size: an interesting one, or a few bytes off.
        0 => {
            let size = match rng.below(2) {
                0 => interesting(rng),
                _ => (chosen.size as u32)
                    .wrapping_add(rng.below(9) as u32)
                    .wrapping_sub(4),
            };
            data[chosen.start..chosen.start + 4].copy_from_slice(&size.to_be_bytes());
        }
        // A field of its body, at a 2-byte boundary: an interesting
        // integer of 1, 2 or 4 bytes, or a count or offset a little off.
        1 | 2 if body.len() >= 4 => {
            let at = body.start + 2 * rng.below((body.len() - 2) / 2);
            let width = [1, 2, 4][rng.below(3)].min(body.end - at);
            let value = match rng.below(3) {
                0 => interesting(rng),
                _ => {
                    let mut old = [0u8; 4];
                    old[4 - width..].copy_from_slice(&data[at..at + width]);
                    u32::from_be_bytes(old)
                        .wrapping_add(rng.below(5) as u32)
                        .wrapping_sub(2)
                }
            };
            data[at..at + width].copy_from_slice(&value.to_be_bytes()[4 - width..]);
        }
        // The box twice, its parents grown to hold it.
        3 => {
            let copy = data[chosen.start..chosen.start + chosen.size].to_vec();
            let at = chosen.start + chosen.size;
            data.splice(at..at, copy);
            grow(data, &found, &chosen.parents, chosen.size as i64);
        }
        // The box gone, its parents shrunk.
        4 => {
            data.drain(chosen.start..chosen.start + chosen.size);
            grow(data, &found, &chosen.parents, -(chosen.size as i64));
        }
        // Its last 2, 4 or 8 bytes (a table's last entry, often) repeated
        // up to 64 times, it and its parents grown.
        _ if body.len() >= 8 => {
            let entry = [2, 4, 8][rng.below(3)];
            let times = 1 + rng.below(64);
            let copy = data[body.end - entry..body.end].repeat(times);
            let added = copy.len() as i64;
            data.splice(body.end..body.end, copy);
            let mut enclosing = chosen.parents.clone();
            enclosing.push(index);
            grow(data, &found, &enclosing, added);
        }
        _ => bytes(rng, data, seeds),
    }
}

/// The chunks of a PNG: each its start (its length field) and its data's
/// length.
fn chunks(data: &[u8]) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut at = 8;
    while at + 12 <= data.len() && found.len() < 4096 {
        let length =
            u32::from_be_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]) as usize;
        if at + 12 + length > data.len() {
            break;
        }
        found.push((at, length));
        at += 12 + length;
    }
    found
}

/// Makes the CRC of the chunk at `at` (of `length` bytes of data) right.
fn fix_crc(data: &mut [u8], at: usize, length: usize) {
    let crc = crc32fast::hash(&data[at + 4..at + 8 + length]);
    data[at + 8 + length..at + 12 + length].copy_from_slice(&crc.to_be_bytes());
}

/// One mutation of a PNG's chunks, each chunk touched left with a right
/// CRC; falls back to [`bytes`] where `data` has none.
pub fn png_chunks(rng: &mut Rng, data: &mut Vec<u8>, seeds: &[Vec<u8>]) {
    let found = chunks(data);
    if found.is_empty() {
        return bytes(rng, data, seeds);
    }
    let (at, length) = found[rng.below(found.len())];
    match rng.below(5) {
        // Its length: interesting, or a little off (the CRC left alone).
        0 => {
            let value = match rng.below(2) {
                0 => interesting(rng),
                _ => (length as u32)
                    .wrapping_add(rng.below(9) as u32)
                    .wrapping_sub(4),
            };
            data[at..at + 4].copy_from_slice(&value.to_be_bytes());
        }
        // A field of its data, CRC made right: the header's sides, depth,
        // colour type, interlace; a text's keyword or value.
        1 | 2 if length > 0 => {
            let offset = rng.below(length);
            let width = [1, 2, 4][rng.below(3)].min(length - offset);
            let value = interesting(rng).to_be_bytes();
            data[at + 8 + offset..at + 8 + offset + width].copy_from_slice(&value[4 - width..]);
            fix_crc(data, at, length);
        }
        // The chunk twice, or gone.
        3 => {
            let copy = data[at..at + 12 + length].to_vec();
            let to = at + 12 + length;
            data.splice(to..to, copy);
        }
        _ => {
            data.drain(at..at + 12 + length);
        }
    }
}
