//! The coding of an AV1 image (an AVIF item): its chroma layout, bit
//! depth, largest frame and frame count, read from its OBUs before
//! anything is decoded, which is what the decoder will allocate by
//! (`mod.rs` counts it against the decode limit). The walk over the OBUs
//! is here, in safe code; each sequence header is read by the function
//! it is given (dav1d's own reading, `dav1d::coding`).
//!
//! Plain functions, run on the decode thread; they keep nothing.

/// How chroma is sampled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Layout {
    /// Luma alone (monochrome).
    I400,
    I420,
    I422,
    I444,
}

impl Layout {
    /// Whether chroma is halved across, and down.
    pub(super) fn halved(self) -> (bool, bool) {
        match self {
            Self::I400 | Self::I444 => (false, false),
            Self::I422 => (true, false),
            Self::I420 => (true, true),
        }
    }

    /// Samples a pixel holds in all planes, in quarters: 4 for luma
    /// alone, 6 for 4:2:0, 8 for 4:2:2, 12 for 4:4:4.
    fn quarter_samples(self) -> u64 {
        match self {
            Self::I400 => 4,
            Self::I420 => 6,
            Self::I422 => 8,
            Self::I444 => 12,
        }
    }
}

/// How an AV1 image is coded, as its OBUs say before anything is decoded:
/// what the decoder allocates by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Coding {
    /// The chroma layout that takes the most bytes of its sequence headers'.
    pub(super) layout: Layout,
    /// 10 or 12 bits a sample, held in 16, in one of them.
    pub(super) high_bitdepth: bool,
    /// The largest frame its sequence headers allow.
    pub(super) max_size: (u32, u32),
    /// Frames it holds (frame and frame-header OBUs; an image in layers
    /// has one a layer), each of which the decoder may keep as a reference
    /// frame while it decodes the next: at most 9 are held at once.
    pub(super) frames: u64,
}

impl Coding {
    /// Bytes a pixel takes in all planes, in quarters.
    pub(super) fn quarter_bytes(self) -> u64 {
        self.layout.quarter_samples() * if self.high_bitdepth { 2 } else { 1 }
    }

    /// Frames the decoder holds at once, at most: its 8 references and
    /// the one it decodes.
    pub(super) fn frames_held(self) -> u64 {
        self.frames.clamp(1, 9)
    }

    /// A coding at least as heavy as both, field by field.
    pub(super) fn max(self, other: Self) -> Self {
        let layout = if other.layout.quarter_samples() > self.layout.quarter_samples() {
            other.layout
        } else {
            self.layout
        };
        Self {
            layout,
            high_bitdepth: self.high_bitdepth || other.high_bitdepth,
            max_size: (
                self.max_size.0.max(other.max_size.0),
                self.max_size.1.max(other.max_size.1),
            ),
            frames: self.frames.max(other.frames),
        }
    }
}

/// The coding of the AV1 image `obus`, read from its OBUs before anything
/// is decoded: the heaviest of its sequence headers, each read by
/// `sequence_header` (the decoder codes a picture as whichever it meets
/// does), and its frames. `Err` if it has no sequence header, or one does
/// not read.
pub(super) fn of_obus(
    obus: &[u8],
    sequence_header: impl Fn(&[u8]) -> Result<Coding, String>,
) -> Result<Coding, String> {
    let mut heaviest: Option<Coding> = None;
    let mut frames = 0;
    for obu in obus_of(obus) {
        let (kind, obu) = obu?;
        match kind {
            // OBU_SEQUENCE_HEADER, below.
            1 => {}
            // OBU_FRAME_HEADER, OBU_FRAME.
            3 | 6 => {
                frames += 1;
                continue;
            }
            _ => continue,
        }
        let coding = sequence_header(obu)?;
        heaviest = Some(heaviest.map_or(coding, |h| h.max(coding)));
    }
    let coding = heaviest.ok_or("the AV1 image has no sequence header")?;
    Ok(Coding { frames, ..coding })
}

/// The OBUs of an AV1 stream, in order: each its type and its bytes
/// (header included), or `Err` (and no more) where one claims more than
/// the stream holds.
fn obus_of(mut rest: &[u8]) -> impl Iterator<Item = Result<(u8, &[u8]), String>> {
    let cut = || "an AV1 OBU claims more bytes than the image holds".to_string();
    std::iter::from_fn(move || {
        let &header = rest.first()?;
        let kind = (header >> 3) & 0xf;
        let mut at = 1 + usize::from(header & 0b100 != 0);
        let size = if header & 0b10 != 0 {
            // LEB128, at most 8 bytes, as AV1 allows.
            let mut size: u64 = 0;
            for index in 0..8 {
                let Some(&byte) = rest.get(at) else {
                    rest = &[];
                    return Some(Err(cut()));
                };
                at += 1;
                size |= u64::from(byte & 0x7f) << (7 * index);
                if byte & 0x80 == 0 {
                    break;
                }
            }
            usize::try_from(size).ok()
        } else {
            rest.len().checked_sub(at)
        };
        let Some(end) = size
            .and_then(|size| at.checked_add(size))
            .filter(|&end| end <= rest.len())
        else {
            rest = &[];
            return Some(Err(cut()));
        };
        let (obu, after) = rest.split_at(end);
        rest = after;
        Some(Ok((kind, obu)))
    })
}
