//! A JPEG's frame header (SOF): its sample precision, size and components,
//! read once, here, for every reader: the layout checked before a decode,
//! the DC-scan decoder and the fetch's watch (which take only a frame the
//! DC-scan decoder can decode), and the EXIF reader.
//!
//! Plain data over bytes; keeps nothing.

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
