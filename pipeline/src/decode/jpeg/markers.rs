//! JPEG's markers: the table of the ones thumbpipe reads, and the one
//! reader of a JPEG's segments that the walk over its markers (`walk.rs`)
//! and the DC-scan decoder use, with the reading of entropy-coded data to
//! the marker after it. And the one reader of the segment every reader
//! needs, the frame header (SOF): its sample precision, size and
//! components, read for the layout checked before a decode, the DC-scan
//! decoder and the fetch's watch (which take only a frame the DC-scan
//! decoder can decode), and the EXIF reader.
//!
//! Plain functions over bytes, run by whichever caller reads them (a decode
//! thread, or the fetch task); they keep nothing.

/// Start of image.
pub(super) const SOI: u8 = 0xD8;
/// End of image.
pub(super) const EOI: u8 = 0xD9;
/// Start of scan: the scan's header, then its entropy-coded data.
pub(super) const SOS: u8 = 0xDA;
/// Huffman tables.
pub(super) const DHT: u8 = 0xC4;
/// Quantisation tables.
pub(super) const DQT: u8 = 0xDB;
/// Restart interval.
pub(super) const DRI: u8 = 0xDD;
/// A progressive frame, Huffman-coded: the one the DC-scan decoder reads.
pub(super) const SOF2: u8 = 0xC2;
/// JFIF's segment (APP0).
pub(super) const APP0: u8 = 0xE0;
/// EXIF's segment (APP1).
pub(super) const APP1: u8 = 0xE1;
/// Adobe's segment (APP14), with its colour transform.
pub(super) const APP14: u8 = 0xEE;

/// Whether `marker` starts a frame (SOF0 to SOF15): C0 to CF but DHT (C4),
/// JPG (C8) and DAC (CC).
pub(in crate::decode) fn is_frame(marker: u8) -> bool {
    matches!(marker, 0xC0..=0xCF) && !matches!(marker, DHT | 0xC8 | 0xCC)
}

/// Whether a frame `marker` is progressive (SOF2, 6, 10 and 14).
pub(super) fn is_progressive_frame(marker: u8) -> bool {
    matches!(marker, 0xC2 | 0xC6 | 0xCA | 0xCE)
}

/// Whether `marker` stands alone, with no length or body: the restart
/// markers, SOI, EOI and TEM.
fn stands_alone(marker: u8) -> bool {
    matches!(marker, 0xD0..=0xD9 | 0x01)
}

/// A JPEG's marker segment, as [`read_segment`] reads it.
pub(super) enum Segment<'a> {
    /// Its marker, its body (after the length; empty for a marker without
    /// one) and where the next marker is looked for.
    Whole(u8, &'a [u8], usize),
    /// The bytes end inside it.
    Cut,
    /// Not a marker where one must be (a stuffed `FF 00` is none), or a
    /// length shorter than itself.
    Broken,
}

/// The segment at `at`, after any fill bytes.
pub(super) fn read_segment(bytes: &[u8], at: usize) -> Segment<'_> {
    let at = past_fill(bytes, at);
    let marker = match (bytes.get(at), bytes.get(at + 1)) {
        (None, _) | (Some(0xFF), None) => return Segment::Cut,
        // FF 00 is a stuffed byte of entropy-coded data, not a marker.
        (Some(0xFF), Some(0x00)) => return Segment::Broken,
        (Some(0xFF), Some(&marker)) => marker,
        _ => return Segment::Broken,
    };
    if stands_alone(marker) {
        return Segment::Whole(marker, &[], at + 2);
    }
    let (Some(&high), Some(&low)) = (bytes.get(at + 2), bytes.get(at + 3)) else {
        return Segment::Cut;
    };
    let length = usize::from(u16::from_be_bytes([high, low]));
    if length < 2 {
        return Segment::Broken;
    }
    match bytes.get(at + 4..at + 2 + length) {
        Some(body) => Segment::Whole(marker, body, at + 2 + length),
        None => Segment::Cut,
    }
}

/// Where a run of fill bytes (0xFF 0xFF...) starting at `at` gives way to
/// its marker's 0xFF: `at` itself when none starts there.
pub(super) fn past_fill(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at) == Some(&0xFF) && bytes.get(at + 1) == Some(&0xFF) {
        at += 1;
    }
    at
}

/// [`next_marker`] in bytes still arriving: `Err` with where to look on
/// from once more have come, when they hold none yet.
pub(super) fn find_marker(bytes: &[u8], from: usize) -> Result<usize, usize> {
    // A last 0xFF may start a marker.
    next_marker(bytes, from).ok_or(bytes.len().saturating_sub(1).max(from))
}

/// Where the next marker starts at or after `from`: an 0xFF followed by a
/// byte other than 0x00 (a stuffed 0xFF) or 0xFF (fill).
pub(super) fn next_marker(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    loop {
        at += memchr_ff(bytes.get(at..)?)?;
        match bytes.get(at + 1)? {
            0x00 | 0xFF => at += 1,
            _ => return Some(at),
        }
    }
}

/// Where the entropy-coded data starting at `from` ends (the next marker
/// that is not a restart marker: those sit inside the data), or, when `bytes`
/// (the start of a body still arriving) hold no such marker yet, `Err`
/// with where to look on from once more have come.
pub(super) fn entropy_coded_end(bytes: &[u8], from: usize) -> Result<usize, usize> {
    let mut at = from;
    while let Some(marker_at) = next_marker(bytes, at) {
        if matches!(bytes[marker_at + 1], 0xD0..=0xD7) {
            at = marker_at + 2;
        } else {
            return Ok(marker_at);
        }
    }
    // A last 0xFF may start a marker.
    Err(bytes.len().saturating_sub(1).max(at))
}

fn memchr_ff(bytes: &[u8]) -> Option<usize> {
    memchr::memchr(0xFF, bytes)
}

/// A frame header, as its segment says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct FrameHeader {
    /// Bits a sample: 8 in nearly every JPEG, 12 in some medical ones.
    pub(super) precision: u8,
    pub(super) width: u32,
    pub(super) height: u32,
    /// How many components the header says it has.
    pub(super) count: u8,
    /// The components the segment holds, at most `count`.
    pub(super) components: Vec<FrameComponent>,
}

/// One component of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FrameComponent {
    pub(super) id: u8,
    /// Horizontal and vertical sampling factors, as written (0 to 15).
    pub(super) h: usize,
    pub(super) v: usize,
    /// Its quantisation table, as written (0 to 255).
    pub(super) quant: usize,
}

impl FrameHeader {
    /// The header in a frame segment's body; `None` if it is shorter than
    /// the header's fixed part.
    pub(super) fn read(segment: &[u8]) -> Option<Self> {
        let [precision, h1, h0, w1, w0, count, rest @ ..] = segment else {
            return None;
        };
        let components = rest
            .chunks_exact(3)
            .take(usize::from(*count))
            .map(|c| FrameComponent {
                id: c[0],
                h: usize::from(c[1] >> 4),
                v: usize::from(c[1] & 0x0F),
                quant: usize::from(c[2]),
            })
            .collect();
        Some(Self {
            precision: *precision,
            width: u32::from(u16::from_be_bytes([*w1, *w0])),
            height: u32::from(u16::from_be_bytes([*h1, *h0])),
            count: *count,
            components,
        })
    }

    /// Whether the DC-scan decoder takes this frame: 8-bit samples, a size,
    /// one or three components, all there, with sampling factors of 1 to 4
    /// and quantisation tables 0 to 3.
    pub(super) fn dc_decodable(&self) -> bool {
        self.precision == 8
            && self.width > 0
            && self.height > 0
            && matches!(self.count, 1 | 3)
            && self.components.len() == usize::from(self.count)
            && self
                .components
                .iter()
                .all(|c| (1..=4).contains(&c.h) && (1..=4).contains(&c.v) && c.quant <= 3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frame_markers_are_the_sofs_only() {
        let frames: Vec<u8> = (0..=255).filter(|&m| is_frame(m)).collect();
        assert_eq!(
            frames,
            [
                0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF
            ]
        );
        assert!(
            frames
                .iter()
                .filter(|&&m| is_progressive_frame(m))
                .eq([0xC2, 0xC6, 0xCA, 0xCE].iter())
        );
    }

    #[test]
    fn segments_are_read_whole_cut_or_broken() {
        let bytes = [0xFF, SOI, 0xFF, 0xFF, APP1, 0, 4, 7, 8, 0xFF, DQT, 0, 9, 1];
        let Segment::Whole(SOI, [], 2) = read_segment(&bytes, 0) else {
            panic!("SOI");
        };
        // Fill bytes are skipped.
        let Segment::Whole(APP1, [7, 8], 9) = read_segment(&bytes, 2) else {
            panic!("APP1");
        };
        assert!(matches!(read_segment(&bytes, 9), Segment::Cut));
        assert!(matches!(read_segment(&bytes, 7), Segment::Broken));
        assert!(matches!(
            read_segment(&[0xFF, DQT, 0, 1], 0),
            Segment::Broken
        ));
    }

    #[test]
    fn entropy_coded_data_runs_to_a_marker_that_is_no_restart() {
        let data = [1, 0xFF, 0x00, 2, 0xFF, 0xD3, 3, 0xFF, 0xFF, EOI];
        assert_eq!(entropy_coded_end(&data, 0), Ok(8));
        assert_eq!(entropy_coded_end(&data[..6], 0), Err(6));
        assert_eq!(entropy_coded_end(&data[..8], 0), Err(7));
    }

    #[test]
    fn a_frame_header_reads_its_size_and_components() {
        // 8-bit, 600 high, 800 wide, three components: 2x2, 1x1, 1x1.
        let segment = [8, 2, 88, 3, 32, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1];
        let header = FrameHeader::read(&segment).unwrap();
        assert_eq!((header.width, header.height), (800, 600));
        assert_eq!(header.components.len(), 3);
        assert_eq!((header.components[0].h, header.components[0].v), (2, 2));
        assert!(header.dc_decodable());
        // A component cut off, a fifth sampling factor, a 12-bit frame.
        let short = FrameHeader::read(&segment[..12]).unwrap();
        assert_eq!(short.components.len(), 2);
        assert!(!short.dc_decodable());
        let mut wide = segment;
        wide[7] = 0x52;
        assert!(!FrameHeader::read(&wide).unwrap().dc_decodable());
        let mut twelve = segment;
        twelve[0] = 12;
        assert!(!FrameHeader::read(&twelve).unwrap().dc_decodable());
        assert!(FrameHeader::read(&segment[..5]).is_none());
    }
}
