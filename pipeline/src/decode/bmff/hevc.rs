//! HEVC: what an HEVC stream's sequence parameter sets (SPS) declare, the
//! picture its decoder allocates for, read from an `hvcC` property and
//! from an item's data as libheif hands both to libde265: every unit of the
//! `hvcC`, whatever array lists it, and every unit of the data, judged by
//! its own header, unescaped from its header on. `streams.rs` reads which
//! items of a HEIC these are.
//!
//! Plain functions over borrowed bytes; they keep nothing. A parameter set
//! that claims more than it holds is an error, never a panic.

use super::boxes::Reader;

/// A picture an SPS declares (or a grid's canvas); of several, the
/// largest, with the least and most any of them shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Picture {
    pub(crate) width: u32,
    pub(crate) height: u32,
    /// Bytes a sample takes: 1 for 8 bits, 2 for more.
    pub(crate) sample_bytes: u64,
    /// The least width and height shown: a picture less its conformance
    /// window, which the decoder crops.
    pub(crate) least_shown: (u32, u32),
    /// The most width and height shown.
    pub(crate) most_shown: (u32, u32),
}

impl Picture {
    /// Pixels.
    pub(crate) fn area(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height)
    }

    /// The larger of two, by area, showing the least and most of both.
    pub(super) fn larger(self, other: Option<Picture>) -> Picture {
        let Some(other) = other else {
            return self;
        };
        let mut larger = if other.area() >= self.area() {
            other
        } else {
            self
        };
        larger.least_shown = (
            self.least_shown.0.min(other.least_shown.0),
            self.least_shown.1.min(other.least_shown.1),
        );
        larger.most_shown = (
            self.most_shown.0.max(other.most_shown.0),
            self.most_shown.1.max(other.most_shown.1),
        );
        larger
    }

    /// A picture of `width` x `height`, all of it shown.
    pub(super) fn whole(width: u32, height: u32, sample_bytes: u64) -> Picture {
        Picture {
            width,
            height,
            sample_bytes,
            least_shown: (width, height),
            most_shown: (width, height),
        }
    }
}

/// The NAL unit type of a sequence parameter set.
const SPS: u8 = 33;

/// An `hvcC` property: the NAL length size it declares, and the largest
/// picture its parameter sets declare.
#[derive(Clone, Copy)]
pub(super) struct HvcC {
    pub(super) length_size: usize,
    pub(super) largest: Option<Picture>,
}

/// An `hvcC` property: its NAL length size, and the largest picture of
/// the parameter sets in it. libheif hands the decoder every unit of every
/// array, and the decoder goes by each unit's own header, so every unit is
/// looked at, whatever array it is in.
pub(super) fn read_hvcc(body: &[u8]) -> Result<HvcC, String> {
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

/// Whether a NAL unit is a sequence parameter set, by its header.
pub(super) fn is_sps(unit: &[u8]) -> bool {
    unit.first()
        .is_some_and(|header| (header >> 1) & 0x3f == SPS)
}

/// The NAL units of a stream whose units are each led by a big-endian
/// length of `length_size` bytes; it ends where a length runs past it.
pub(super) fn nal_units(data: &[u8], length_size: usize) -> Vec<&[u8]> {
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
/// picture's size, what of it is shown, and its sample depth (H.265
/// 7.3.2.2).
pub(super) fn read_sps(unit: &[u8]) -> Result<Picture, String> {
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
    let chroma_format = bits.exp_golomb().ok_or_else(damaged)?;
    // The conformance window's unit: a chroma sample's width and height.
    let mut unit = match chroma_format {
        1 => (2, 2),
        2 => (2, 1),
        _ => (1, 1),
    };
    if chroma_format == 3 && bits.read(1).ok_or_else(damaged)? == 1 {
        unit = (1, 1); // separate colour planes
    }
    let width = bits.exp_golomb().ok_or_else(damaged)?;
    let height = bits.exp_golomb().ok_or_else(damaged)?;
    let mut shown = (width, height);
    if bits.read(1).ok_or_else(damaged)? == 1 {
        let mut offset = || bits.exp_golomb().map(u64::from).ok_or_else(damaged);
        let (left, right, top, bottom) = (offset()?, offset()?, offset()?, offset()?);
        let less = |side: u32, unit: u64, cut: u64| {
            u64::from(side)
                .checked_sub(unit * cut)
                .filter(|&left| left > 0)
        };
        shown = less(width, unit.0, left + right)
            .zip(less(height, unit.1, top + bottom))
            .map(|(width, height)| (width as u32, height as u32))
            .ok_or_else(|| "an HEVC picture's conformance window crops all of it".to_owned())?;
    }
    let luma = bits.exp_golomb().ok_or_else(damaged)?;
    let chroma = bits.exp_golomb().ok_or_else(damaged)?;
    let mut picture = Picture::whole(width, height, if luma.max(chroma) > 0 { 2 } else { 1 });
    (picture.least_shown, picture.most_shown) = (shown, shown);
    Ok(picture)
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
        cropped_sps(width, height, bits, None)
    }

    /// [`sps`], 4:2:0, with a conformance window of `window` (left,
    /// right, top, bottom, in chroma samples) if given.
    fn cropped_sps(width: u32, height: u32, bits: u32, window: Option<[u32; 4]>) -> Vec<u8> {
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
        writer.bits(u32::from(window.is_some()), 1);
        for offset in window
            .unwrap_or_default()
            .iter()
            .filter(|_| window.is_some())
        {
            writer.exp_golomb(*offset);
        }
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
    fn an_sps_says_what_its_conformance_window_leaves_shown() {
        let picture = read_sps(&cropped_sps(64, 48, 8, Some([1, 2, 0, 3]))).unwrap();
        assert_eq!((picture.width, picture.height), (64, 48));
        assert_eq!(
            (picture.least_shown, picture.most_shown),
            ((58, 42), (58, 42))
        );
        assert_eq!(read_sps(&sps(64, 48, 8)).unwrap().least_shown, (64, 48));
        // A window that leaves nothing is an error.
        assert!(read_sps(&cropped_sps(64, 48, 8, Some([16, 16, 0, 0]))).is_err());
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
