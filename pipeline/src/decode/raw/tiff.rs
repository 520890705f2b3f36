//! The JPEG previews of camera RAWs built on TIFF's structure (CR2, NEF,
//! ARW, DNG, PEF, SRW, ORF, RW2, and others): found by following the
//! directories from the first (their chain and sub-IFDs), never reading
//! the sensor data they describe.
//!
//! A preview is where a directory points at a JPEG: `JPEGInterchangeFormat`
//! and its length, a single strip of JPEG-compressed (6 or 7) pixels that
//! are not sensor data, or Panasonic's `JpgFromRaw` (0x2E). Whether each
//! is a JPEG a thumbnail can be made from is the caller's to check.
//!
//! At most [`MAX_IFDS`] directories are read, each once (a loop of
//! directories ends there), so a hostile file costs a bounded walk. Runs
//! on a decode thread, or a fetch's watch; keeps nothing.

use std::ops::Range;

use image::metadata::Orientation;

use super::{MAX_RGB_SIDE, Previews, RgbPreview};
use crate::decode::ifd::{Entry, Tiff};

/// Most directories read: a RAW has about five (Nikon's and Sony's a few
/// more with their sub-IFDs).
const MAX_IFDS: usize = 32;

/// Most sub-IFDs one directory lists that are followed.
const MAX_SUB_IFDS: usize = 8;

// The tags read.
const NEW_SUBFILE_TYPE: u16 = 0x00FE;
const IMAGE_WIDTH: u16 = 0x0100;
const IMAGE_LENGTH: u16 = 0x0101;
const BITS_PER_SAMPLE: u16 = 0x0102;
const COMPRESSION: u16 = 0x0103;
const PHOTOMETRIC: u16 = 0x0106;
const STRIP_OFFSETS: u16 = 0x0111;
const ORIENTATION: u16 = 0x0112;
const SAMPLES_PER_PIXEL: u16 = 0x0115;
const STRIP_BYTE_COUNTS: u16 = 0x0117;
const PLANAR_CONFIGURATION: u16 = 0x011C;
const SUB_IFDS: u16 = 0x014A;
const JPEG_AT: u16 = 0x0201;
const JPEG_LENGTH: u16 = 0x0202;
const PANASONIC_JPEG: u16 = 0x002E;
const DNG_VERSION: u16 = 0xC612;
/// How Canon's CR2 cuts its sensor data (a lossless JPEG) into slices:
/// the directory with it holds the sensor data, not a preview.
const CR2_SLICES: u16 = 0xC640;

/// Sensor data, by its photometric interpretation: a colour filter array,
/// or DNG's linear raw.
const SENSOR_PHOTOMETRICS: [u32; 2] = [32803, 34892];

/// Whether a TIFF-structured file is a camera's RAW: a DNG, or a file with
/// sensor data in one of its directories (which the TIFF decoder cannot
/// read anyway).
pub(super) fn is_raw(bytes: &[u8]) -> bool {
    read(bytes).is_some_and(|read| read.raw)
}

/// What the directories of a TIFF-structured RAW say.
pub(super) struct Read {
    pub(super) previews: Previews,
    /// A DNG, or sensor data was seen.
    pub(super) raw: bool,
}

/// The previews and orientation of the TIFF-structured `bytes` (whole, or
/// their start), or `None` if they are not TIFF-structured.
pub(super) fn read(bytes: &[u8]) -> Option<Read> {
    let tiff = Tiff::new(bytes)?;
    let first = tiff.first_ifd()?;
    let mut read = Read {
        previews: Previews {
            complete: true,
            ..Previews::default()
        },
        raw: false,
    };
    let mut queue = vec![first];
    let mut seen: Vec<usize> = Vec::new();
    while let Some(ifd) = queue.pop() {
        if seen.contains(&ifd) {
            continue;
        }
        if seen.len() == MAX_IFDS {
            break;
        }
        seen.push(ifd);
        let Some(directory) = Directory::read(&tiff, ifd) else {
            // Past the bytes read so far: more may hold it.
            read.previews.complete = false;
            continue;
        };
        // Cut short: the entries, sub-directories or next directory past
        // the bytes may point at a preview.
        if directory.cut || !tiff.holds_directory(ifd) {
            read.previews.complete = false;
        }
        if ifd == first {
            read.previews.orientation = directory.orientation;
            read.raw |= directory.dng;
        }
        read.raw |= directory.sensor_data;
        read.previews.jpegs.extend(directory.jpegs);
        read.previews.rgb.extend(directory.rgb);
        queue.extend(directory.sub_ifds);
        queue.extend(tiff.next_ifd(ifd));
    }
    Some(read)
}

/// What one directory says.
#[derive(Default)]
struct Directory {
    orientation: Option<Orientation>,
    dng: bool,
    sensor_data: bool,
    jpegs: Vec<Range<usize>>,
    rgb: Option<RgbPreview>,
    sub_ifds: Vec<usize>,
    /// Its list of sub-directories lies past the bytes read so far.
    cut: bool,
}

impl Directory {
    fn read(tiff: &Tiff<'_>, ifd: usize) -> Option<Self> {
        let mut directory = Self::default();
        let (mut compression, mut photometric) = (None, None);
        let (mut jpeg_at, mut jpeg_length) = (None, None);
        let (mut strip_at, mut strip_length) = (None, None);
        let mut subfile_type = None;
        let mut slices = false;
        let (mut width, mut height, mut eight_bits, mut samples, mut planar) =
            (None, None, false, None, None);
        for entry in tiff.entries(ifd)? {
            match entry.tag {
                NEW_SUBFILE_TYPE => subfile_type = entry.number(tiff),
                IMAGE_WIDTH => width = entry.number(tiff),
                IMAGE_LENGTH => height = entry.number(tiff),
                BITS_PER_SAMPLE => {
                    // One per sample, or one for all.
                    let bits: Vec<u32> = entry.numbers(tiff, 3).collect();
                    let counted =
                        matches!(entry.count(), 1 | 3) && bits.len() == entry.count() as usize;
                    eight_bits = counted && bits.iter().all(|&bits| bits == 8);
                }
                SAMPLES_PER_PIXEL => samples = entry.number(tiff),
                PLANAR_CONFIGURATION => planar = entry.number(tiff),
                COMPRESSION => compression = entry.number(tiff),
                PHOTOMETRIC => photometric = entry.number(tiff),
                ORIENTATION => {
                    directory.orientation = entry
                        .number(tiff)
                        .and_then(|value| u8::try_from(value).ok())
                        .and_then(Orientation::from_exif);
                }
                DNG_VERSION => directory.dng = true,
                CR2_SLICES => slices = true,
                SUB_IFDS => {
                    // Past the bytes read so far (not of a type unknown).
                    directory.cut |= entry.span(tiff).is_some_and(|span| !tiff.holds(&span));
                    let subs = entry.numbers(tiff, MAX_SUB_IFDS);
                    directory.sub_ifds.extend(subs.map(|at| at as usize));
                }
                JPEG_AT => jpeg_at = entry.number(tiff),
                JPEG_LENGTH => jpeg_length = entry.number(tiff),
                // One strip only: a preview in several is not read.
                STRIP_OFFSETS if single(&entry) => strip_at = entry.number(tiff),
                STRIP_BYTE_COUNTS if single(&entry) => strip_length = entry.number(tiff),
                // The JPEG is the entry's value: it may lie past the bytes.
                PANASONIC_JPEG => directory.jpegs.extend(entry.span(tiff)),
                _ => {}
            }
        }
        directory.sensor_data =
            slices || photometric.is_some_and(|p| SENSOR_PHOTOMETRICS.contains(&p));
        if let (Some(at), Some(length)) = (jpeg_at, jpeg_length) {
            directory.jpegs.extend(range(at, length));
        }
        // A JPEG-compressed strip that is not the sensor's: a preview
        // (Canon's full-size one in IFD0, DNG's in a sub-IFD, whose reduced
        // images say so with subfile type 1). Canon's sensor data is a
        // lossless JPEG, told by its slices where it has them (so a fetch
        // does not read on to its header, a tenth into the file); the
        // caller's check of the frame refuses it otherwise.
        let jpeg_compressed = matches!(compression, Some(6 | 7));
        let reduced_or_unsaid = subfile_type.is_none_or(|kind| kind & 1 == 1);
        if jpeg_compressed
            && !directory.sensor_data
            && reduced_or_unsaid
            && let (Some(at), Some(length)) = (strip_at, strip_length)
        {
            directory.jpegs.extend(range(at, length));
        }
        // Uncompressed 8-bit RGB, interleaved, in one strip, of a size
        // shown: a DNG's thumbnail in its first directory.
        let rgb = compression == Some(1)
            && photometric == Some(2)
            && samples == Some(3)
            && eight_bits
            && planar.is_none_or(|planar| planar == 1)
            && !directory.sensor_data;
        if rgb
            && let (Some(width), Some(height), Some(at), Some(length)) =
                (width, height, strip_at, strip_length)
            && (1..=MAX_RGB_SIDE).contains(&width.max(height))
            && width.min(height) > 0
            && let Some(needed) = width
                .checked_mul(height)
                .and_then(|area| area.checked_mul(3))
            && length >= needed
        {
            directory.rgb = range(at, needed).map(|bytes| RgbPreview {
                bytes,
                width,
                height,
            });
        }
        Some(directory)
    }
}

fn single(entry: &Entry) -> bool {
    entry.count() == 1
}

/// `length` bytes at `at`, if neither is zero and the end is a `usize`.
fn range(at: u32, length: u32) -> Option<Range<usize>> {
    let (at, length) = (at as usize, length as usize);
    (at > 0 && length > 0).then_some(at..at.checked_add(length)?)
}
