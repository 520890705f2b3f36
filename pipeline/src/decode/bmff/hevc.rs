//! HEVC: the pictures a HEIC file's HEVC streams declare, read before
//! libheif sees the file (`heic/`). libheif 1.15 decodes the picture an
//! item's sequence parameter set (SPS) declares, whatever the item's `ispe`
//! says, and libde265 allocates for it: a file whose `ispe` says 64x64 and
//! whose SPS says 16000x16000 would pass a check of `ispe` alone. Every SPS
//! of an `hvc1` item is read, as libheif hands them to the decoder: every
//! unit of its `hvcC` properties, whatever array lists it, and every unit
//! of its data, split by 4-byte lengths (libheif's) and by its `hvcC`'s.
//! A grid's or overlay's canvas, which libheif allocates at the size its
//! data says, is read too. An image is reckoned by the largest picture of
//! the items its decode takes (itself, its grid's tiles, its alpha). A file that could be read two ways
//! (two `meta`, `iinf`, `iloc`, `idat`, `iref`, `iprp`, `ipco` or `ipma`
//! boxes, an extent past its end), that holds AV1 items, which libheif
//! would decode unseen, or whose image is derived from itself (which
//! libheif before 1.16 recursed on until its stack ran out) is an error.
//!
//! Plain functions over the file's bytes, on the decode thread; they keep
//! nothing. Every read is checked: a box, table or parameter set that
//! claims more than it holds is an error, never a panic.

use super::boxes::{Boxes, FourCc, Reader, full_box};
use super::items::{Location, MAX_ENTRIES, read_iinf, read_iloc, read_ipma, read_iref};

/// A picture an SPS declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Picture {
    pub(crate) width: u32,
    pub(crate) height: u32,
    /// Bytes a sample takes: 1 for 8 bits, 2 for more.
    pub(crate) sample_bytes: u64,
}

impl Picture {
    /// Pixels.
    pub(crate) fn area(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height)
    }

    /// The larger of two, by area.
    fn larger(self, other: Option<Picture>) -> Picture {
        match other {
            Some(other) if other.area() >= self.area() => other,
            _ => self,
        }
    }
}

/// The NAL unit type of a sequence parameter set.
const SPS: u8 = 33;

/// The NAL length size libheif 1.15 splits every item's data by, whatever
/// its `hvcC` says.
const LIBHEIF_LENGTH_SIZE: usize = 4;

/// An `hvcC` property: the NAL length size it declares, and the largest
/// picture its parameter sets declare.
#[derive(Clone, Copy)]
struct HvcC {
    length_size: usize,
    largest: Option<Picture>,
}

/// What a file's HEVC streams declare.
#[derive(Debug, Default)]
pub(crate) struct Streams {
    /// Each HEVC item's largest declared picture.
    pictures: Vec<(u32, Picture)>,
    /// The file's item references: kind, from, to.
    references: Vec<(FourCc, u32, Vec<u32>)>,
}

/// `slot`, set to `body` if it is the first box of its kind: a second is
/// an error, since libheif and this reader might each take another one.
fn once<'a>(slot: &mut Option<&'a [u8]>, body: &'a [u8], kind: &FourCc) -> Result<(), String> {
    if slot.replace(body).is_some() {
        return Err(format!(
            "it has two '{}' boxes",
            String::from_utf8_lossy(kind)
        ));
    }
    Ok(())
}

impl Streams {
    /// Reads every HEVC item's parameter sets.
    pub(crate) fn read(bytes: &[u8]) -> Result<Self, String> {
        let mut streams = Streams::default();
        let mut meta = None;
        // Top-level boxes up to the first that is not whole: what follows
        // is no box to libheif either (bytes appended to a file, say).
        for (kind, body) in Boxes::new(bytes).map_while(Result::ok) {
            if &kind == b"meta" {
                once(&mut meta, body, &kind)?;
            }
        }
        let Some(meta) = meta else {
            return Ok(streams);
        };
        let (_, meta) = full_box(meta)?;
        let (mut iinf, mut iloc, mut idat, mut iref, mut iprp) = (None, None, None, None, None);
        for found in Boxes::new(meta) {
            let (kind, body) = found?;
            let slot = match &kind {
                b"iinf" => &mut iinf,
                b"iloc" => &mut iloc,
                b"idat" => &mut idat,
                b"iref" => &mut iref,
                b"iprp" => &mut iprp,
                _ => continue,
            };
            once(slot, body, &kind)?;
        }
        if let Some(iref) = iref {
            streams.references = read_iref(iref).ok_or("its references are damaged")?;
            // libheif before 1.16 follows derivations without looking for
            // a loop, recursing until its stack runs out.
            if derives_from_itself(&streams.references) {
                return Err("an image is derived, through its references, from itself".into());
            }
        }
        let (mut ipco, mut ipma) = (None, None);
        for found in Boxes::new(iprp.unwrap_or_default()) {
            let (kind, body) = found?;
            match &kind {
                b"ipco" => once(&mut ipco, body, &kind)?,
                b"ipma" => once(&mut ipma, body, &kind)?,
                _ => {}
            }
        }
        // Each property of `ipco`, in order: an `hvcC`, or another.
        let mut properties: Vec<Option<HvcC>> = Vec::new();
        for found in Boxes::new(ipco.unwrap_or_default()) {
            let (kind, body) = found?;
            if properties.len() >= MAX_ENTRIES {
                return Err("it has too many properties".into());
            }
            properties.push((&kind == b"hvcC").then(|| read_hvcc(body)).transpose()?);
        }
        let (Some(iinf), Some(iloc)) = (iinf, iloc) else {
            return Ok(streams);
        };
        let items = read_iinf(iinf).ok_or("its item table is damaged")?;
        // libheif decodes AV1 items too, which nothing here reads.
        if items.iter().any(|(_, kind)| kind == b"av01") {
            return Err("it holds AV1 items, which a HEIC is not read with".into());
        }
        let locations = read_iloc(iloc).ok_or("its item locations are damaged")?;
        let associations = match ipma {
            Some(ipma) => read_ipma(ipma).ok_or("its property associations are damaged")?,
            None => Vec::new(),
        };
        // A grid's or overlay's canvas: the size its own data says, which
        // libheif allocates whatever the item's `ispe` says.
        for (item, kind) in items
            .iter()
            .filter(|(_, kind)| kind == b"grid" || kind == b"iovl")
        {
            let data = item_data(bytes, idat, &locations, *item)?;
            let canvas = read_canvas(&data, kind == b"iovl").ok_or("a grid's data is cut short")?;
            streams.pictures.push((*item, canvas));
        }
        let mut scanned = 0usize;
        for (item, _) in items.iter().filter(|(_, kind)| kind == b"hvc1") {
            // Its `hvcC`s (the associations' indexes start at 0).
            let configs: Vec<HvcC> = associations
                .iter()
                .filter(|(associated, _)| associated == item)
                .flat_map(|(_, indexes)| indexes.iter())
                .filter_map(|&(index, _)| *properties.get(index)?)
                .collect();
            let mut largest = configs
                .iter()
                .filter_map(|config| config.largest)
                .max_by_key(Picture::area);
            let data = item_data(bytes, idat, &locations, *item)?;
            scanned = scanned.saturating_add(data.len());
            // Items pointing at the same bytes again and again would make
            // this read the file thousands of times over.
            if scanned > 2 * bytes.len() {
                return Err("its items' data adds up to more than the file holds".into());
            }
            let mut length_sizes = vec![LIBHEIF_LENGTH_SIZE];
            for config in &configs {
                if !length_sizes.contains(&config.length_size) {
                    length_sizes.push(config.length_size);
                }
            }
            for length_size in length_sizes {
                for unit in nal_units(&data, length_size) {
                    if is_sps(unit) {
                        largest = Some(read_sps(unit)?.larger(largest));
                    }
                }
            }
            if let Some(picture) = largest {
                streams.pictures.push((*item, picture));
            }
        }
        Ok(streams)
    }

    /// The largest picture libheif may decode to show `item`: its own, its
    /// tiles' and overlays' (`dimg` from it, and from them), and those of
    /// the images that say they are its alpha or depth (`auxl` to it).
    pub(crate) fn largest_for(&self, item: u32) -> Option<Picture> {
        let mut taken = vec![item];
        let mut at = 0;
        while at < taken.len() && taken.len() <= MAX_ENTRIES {
            let next = taken[at];
            at += 1;
            for (kind, from, to) in &self.references {
                let found: Vec<u32> = match kind {
                    b"dimg" if *from == next => to.clone(),
                    b"auxl" if to.contains(&next) => vec![*from],
                    _ => continue,
                };
                for item in found {
                    if !taken.contains(&item) {
                        taken.push(item);
                    }
                }
            }
        }
        self.pictures
            .iter()
            .filter(|(item, _)| taken.contains(item))
            .map(|(_, picture)| *picture)
            .max_by_key(Picture::area)
    }
}

/// Whether any image is derived (`dimg`, through any number of steps) from
/// itself: one depth-first walk over the references, each item left once
/// it is done.
fn derives_from_itself(references: &[(FourCc, u32, Vec<u32>)]) -> bool {
    use std::collections::HashMap;
    let mut derived: HashMap<u32, Vec<u32>> = HashMap::new();
    for (kind, from, to) in references {
        if kind == b"dimg" {
            derived.entry(*from).or_default().extend(to);
        }
    }
    // Items on the walk's path (`true`) or done with (`false`).
    let mut state: HashMap<u32, bool> = HashMap::new();
    for &start in derived.keys() {
        if state.contains_key(&start) {
            continue;
        }
        // Each item on the path, and how many of its derived items are seen.
        let mut path = vec![(start, 0)];
        state.insert(start, true);
        while let Some((item, next)) = path.last_mut() {
            let children = derived.get(item).map_or(&[][..], Vec::as_slice);
            let Some(&child) = children.get(*next) else {
                state.insert(*item, false);
                path.pop();
                continue;
            };
            *next += 1;
            match state.get(&child) {
                Some(true) => return true,
                Some(false) => {}
                None => {
                    state.insert(child, true);
                    path.push((child, 0));
                }
            }
        }
    }
    false
}

/// Item `item`'s data, its extents joined: in the file, or in `idat`. An
/// extent past the end is an error (libheif reads some of them).
fn item_data(
    bytes: &[u8],
    idat: Option<&[u8]>,
    locations: &[Location],
    item: u32,
) -> Result<Vec<u8>, String> {
    let mut data = Vec::new();
    for location in locations.iter().filter(|location| location.item == item) {
        let source = if location.in_idat {
            idat.unwrap_or_default()
        } else {
            bytes
        };
        for &(offset, length) in &location.extents {
            let start = usize::try_from(offset).unwrap_or(usize::MAX);
            let end = start.saturating_add(usize::try_from(length).unwrap_or(usize::MAX));
            let extent = source
                .get(start..end)
                .ok_or("an item's data lies past the end of where it is kept")?;
            if data.len() + extent.len() > bytes.len() {
                return Err("an item's data is larger than the file".into());
            }
            data.extend_from_slice(extent);
        }
    }
    Ok(data)
}

/// An `hvcC` property: its NAL length size, and the largest picture of
/// the parameter sets in it. libheif hands the decoder every unit of every
/// array, and the decoder goes by each unit's own header, so every unit is
/// looked at, whatever array it is in.
fn read_hvcc(body: &[u8]) -> Result<HvcC, String> {
    let cut_short = || "an hvcC property is cut short".to_owned();
    let mut reader = Reader::new(body);
    // Version, profile, compatibility and constraint flags, level, and the
    // fields up to the one that holds the length size.
    reader.take(21).ok_or_else(cut_short)?;
    let length_size = usize::from(reader.u8().ok_or_else(cut_short)? & 0b11) + 1;
    let arrays = reader.u8().ok_or_else(cut_short)?;
    let mut largest = None;
    for _ in 0..arrays {
        let _kind = reader.u8().ok_or_else(cut_short)?;
        let count = reader.u16().ok_or_else(cut_short)?;
        for _ in 0..count {
            let length = reader.u16().ok_or_else(cut_short)?;
            let unit = reader.take(usize::from(length)).ok_or_else(cut_short)?;
            if is_sps(unit) {
                largest = Some(read_sps(unit)?.larger(largest));
            }
        }
    }
    Ok(HvcC {
        length_size,
        largest,
    })
}

/// The canvas a `grid` (ISO/IEC 23008-12 6.6.2.3) or `iovl` (6.6.2.2)
/// item's data declares: version, flags (bit 0: 32-bit sizes), then the
/// grid's rows and columns, or the overlay's four 16-bit fill values,
/// then the output width and height.
fn read_canvas(data: &[u8], overlay: bool) -> Option<Picture> {
    let mut reader = Reader::new(data);
    let _version = reader.u8()?;
    let wide = reader.u8()? & 1 == 1;
    reader.take(if overlay { 8 } else { 2 })?;
    let mut side = || {
        if wide {
            reader.u32()
        } else {
            reader.u16().map(u32::from)
        }
    };
    let (width, height) = (side()?, side()?);
    Some(Picture {
        width,
        height,
        sample_bytes: 1,
    })
}

/// Whether a NAL unit is a sequence parameter set, by its header.
fn is_sps(unit: &[u8]) -> bool {
    unit.first()
        .is_some_and(|header| (header >> 1) & 0x3f == SPS)
}

/// The NAL units of a stream whose units are each led by a big-endian
/// length of `length_size` bytes; it ends where a length runs past it.
fn nal_units(data: &[u8], length_size: usize) -> Vec<&[u8]> {
    let mut units = Vec::new();
    let mut rest = data;
    while let Some((field, after)) = rest.split_at_checked(length_size) {
        let length = field
            .iter()
            .fold(0usize, |length, &byte| (length << 8) | usize::from(byte));
        let Some((unit, next)) = after.split_at_checked(length) else {
            break;
        };
        units.push(unit);
        rest = next;
    }
    units
}

/// What an SPS NAL unit (its two-byte header included) declares: the
/// picture's size and sample depth (H.265 7.3.2.2).
fn read_sps(unit: &[u8]) -> Result<Picture, String> {
    let damaged = || "an HEVC sequence parameter set is damaged".to_owned();
    // Unescaped from its header on, as the decoder does; the size is in
    // its first hundred bytes or so.
    let unit = &unit[..unit.len().min(SPS_BYTES_READ)];
    let rbsp = unescaped(unit);
    let mut bits = Bits::new(rbsp.get(2..).ok_or_else(damaged)?);
    bits.skip(4).ok_or_else(damaged)?; // sps_video_parameter_set_id
    let sub_layers = bits.read(3).ok_or_else(damaged)?; // max_sub_layers_minus1
    bits.skip(1).ok_or_else(damaged)?; // temporal_id_nesting_flag
    // profile_tier_level: the general profile and level, each sub-layer's
    // flags, padded to 8 when there are any, then what they say is there.
    bits.skip(96).ok_or_else(damaged)?;
    let mut present = Vec::new();
    for _ in 0..sub_layers {
        present.push((
            bits.read(1).ok_or_else(damaged)?,
            bits.read(1).ok_or_else(damaged)?,
        ));
    }
    if sub_layers > 0 {
        bits.skip(2 * (8 - sub_layers)).ok_or_else(damaged)?;
    }
    for (profile, level) in present {
        bits.skip(88 * profile + 8 * level).ok_or_else(damaged)?;
    }
    bits.exp_golomb().ok_or_else(damaged)?; // sps_seq_parameter_set_id
    if bits.exp_golomb().ok_or_else(damaged)? == 3 {
        bits.skip(1).ok_or_else(damaged)?; // separate_colour_plane_flag
    }
    let width = bits.exp_golomb().ok_or_else(damaged)?;
    let height = bits.exp_golomb().ok_or_else(damaged)?;
    if bits.read(1).ok_or_else(damaged)? == 1 {
        for _ in 0..4 {
            bits.exp_golomb().ok_or_else(damaged)?; // conformance window
        }
    }
    let luma = bits.exp_golomb().ok_or_else(damaged)?;
    let chroma = bits.exp_golomb().ok_or_else(damaged)?;
    Ok(Picture {
        width,
        height,
        sample_bytes: if luma.max(chroma) > 0 { 2 } else { 1 },
    })
}

/// The most of an SPS unit read: its size comes after at most about 60
/// bytes (a header, eight sub-layers' profiles and levels).
const SPS_BYTES_READ: usize = 1024;

/// A NAL unit without its emulation prevention bytes (the 3 of each
/// `00 00 03`).
fn unescaped(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len());
    let mut zeros = 0;
    for &byte in payload {
        if zeros >= 2 && byte == 3 {
            zeros = 0;
            continue;
        }
        zeros = if byte == 0 { zeros + 1 } else { 0 };
        out.push(byte);
    }
    out
}

/// Bits read from the most significant of each byte on.
struct Bits<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Bits<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, at: 0 }
    }

    fn skip(&mut self, count: u32) -> Option<()> {
        let at = self.at.checked_add(count as usize)?;
        (at <= self.bytes.len() * 8).then(|| self.at = at)
    }

    /// `count` bits (at most 32), as a number.
    fn read(&mut self, count: u32) -> Option<u32> {
        let mut value = 0u32;
        for _ in 0..count.min(32) {
            let byte = self.bytes.get(self.at / 8)?;
            value = (value << 1) | u32::from((byte >> (7 - self.at % 8)) & 1);
            self.at += 1;
        }
        Some(value)
    }

    /// An unsigned Exp-Golomb number (`ue(v)`); `None` past 32 bits.
    fn exp_golomb(&mut self) -> Option<u32> {
        let mut zeros = 0;
        while self.read(1)? == 0 {
            zeros += 1;
            if zeros > 31 {
                return None;
            }
        }
        let rest = self.read(zeros)?;
        let value = (1u64 << zeros) - 1 + u64::from(rest);
        u32::try_from(value).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes bits, most significant first.
    #[derive(Default)]
    struct Writer {
        bytes: Vec<u8>,
        at: usize,
    }

    impl Writer {
        fn bits(&mut self, value: u32, count: u32) {
            for i in (0..count).rev() {
                if self.at.is_multiple_of(8) {
                    self.bytes.push(0);
                }
                let bit = ((value >> i) & 1) as u8;
                *self.bytes.last_mut().unwrap() |= bit << (7 - self.at % 8);
                self.at += 1;
            }
        }

        fn exp_golomb(&mut self, value: u32) {
            let coded = u64::from(value) + 1;
            let length = 64 - coded.leading_zeros();
            self.bits(0, length - 1);
            self.bits(coded as u32, length);
        }
    }

    /// An SPS NAL unit declaring `width` x `height` at `bits`, with one
    /// sub-layer above the base whose profile and level are present.
    fn sps(width: u32, height: u32, bits: u32) -> Vec<u8> {
        let mut writer = Writer::default();
        writer.bits(0, 4);
        writer.bits(1, 3);
        writer.bits(1, 1);
        writer.bits(0, 32);
        writer.bits(0, 32);
        writer.bits(0, 32);
        writer.bits(0b11, 2);
        writer.bits(0, 2 * 7);
        writer.bits(0, 32);
        writer.bits(0, 32);
        writer.bits(0, 24);
        writer.bits(0, 8);
        writer.exp_golomb(0);
        writer.exp_golomb(1);
        writer.exp_golomb(width);
        writer.exp_golomb(height);
        writer.bits(0, 1);
        writer.exp_golomb(bits - 8);
        writer.exp_golomb(bits - 8);
        writer.bits(1, 1);
        let mut unit = vec![SPS << 1, 1];
        // Escaped as a stream would be: no `00 00 0x` with x <= 3 inside.
        let mut zeros = 0;
        for byte in writer.bytes {
            if zeros >= 2 && byte <= 3 {
                unit.push(3);
                zeros = 0;
            }
            zeros = if byte == 0 { zeros + 1 } else { 0 };
            unit.push(byte);
        }
        unit
    }

    #[test]
    fn an_sps_says_its_pictures_size_and_depth() {
        for (width, height, bits) in [(1024, 768, 8), (16_000, 16_000, 10), (64, 48, 12)] {
            let picture = read_sps(&sps(width, height, bits)).unwrap();
            assert_eq!((picture.width, picture.height), (width, height));
            assert_eq!(picture.sample_bytes, if bits > 8 { 2 } else { 1 });
        }
    }

    #[test]
    fn parameter_sets_in_an_items_data_are_found_at_each_length_size() {
        let set = sps(4000, 3000, 8);
        let slice = [2u8 << 1, 1, 0xaa, 0xbb];
        for length_size in [1, 2, 4] {
            let mut data = Vec::new();
            for unit in [&slice[..], &set, &slice] {
                let length = (unit.len() as u32).to_be_bytes();
                data.extend_from_slice(&length[4 - length_size..]);
                data.extend_from_slice(unit);
            }
            let units = nal_units(&data, length_size);
            assert_eq!(units.len(), 3);
            let sets: Vec<&[u8]> = units.into_iter().filter(|unit| is_sps(unit)).collect();
            assert_eq!(sets, vec![&set[..]]);
        }
        // A length past the end ends the stream.
        assert!(nal_units(&[0, 0, 0, 200, 66, 1], 4).is_empty());
    }

    #[test]
    fn an_image_derived_from_itself_is_found_however_far_round() {
        let dimg = |from: u32, to: &[u32]| (*b"dimg", from, to.to_vec());
        // A grid of two tiles; an overlay of the grid and a tile.
        let fine = [dimg(1, &[2, 3]), dimg(4, &[1, 3]), (*b"thmb", 5, vec![1])];
        assert!(!derives_from_itself(&fine));
        assert!(derives_from_itself(&[dimg(1, &[1])]));
        assert!(derives_from_itself(&[
            dimg(1, &[2]),
            dimg(2, &[3]),
            dimg(3, &[1])
        ]));
    }

    #[test]
    fn damaged_parameter_sets_are_errors_never_panics() {
        let set = sps(1024, 768, 8);
        for end in 0..set.len() - 1 {
            let _ = read_sps(&set[..end]);
        }
        assert!(read_sps(&set[..3]).is_err());
        // A run of zero bits longer than any number.
        assert!(
            read_sps(&[
                SPS << 1,
                1,
                0x01,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0
            ])
            .is_err()
        );
    }
}
