//! Progressive JPEGs from their DC scans. A progressive JPEG's first scans
//! usually hold every block's DC coefficient, the mean of its 8x8 pixels:
//! the image at 1/8 of its size, which is all a thumbnail of at most that
//! size needs (libjpeg's 1/8 scale uses the DC coefficient alone, too). This
//! decoder reads the frame, its tables and the scans up to the first AC scan
//! after every component's DC, where the JPEG's one walk found them
//! (`walk.rs`), and no further: no coefficient buffer for the
//! AC scans (libjpeg keeps every coefficient of the image, 36 MB for 12 MP
//! at 4:2:0), and for the fetch, no need of the bytes after them (the
//! watch in `prefix.rs`). The headers are read by `dc_headers.rs`, which
//! the watch shares. A DC coefficient whose last bits come in a later
//! scan (libjpeg's script sends DC without its last bit first) is taken
//! at the middle of the values it may have.
//!
//! A file this reading does not serve (baseline, arithmetic-coded, 12-bit,
//! CMYK, damaged, or whose first scans do not hold every DC) gives `None`,
//! and takes the route every other JPEG takes.
//!
//! Runs inside a decode, on the decode thread that called it; keeps nothing.

use std::ops::Range;

use super::dc_headers::{
    Scan, Tables, dc_scan_follows, read_huffman, read_quant, read_restart_interval,
    read_scan_header,
};
use super::dc_pixels::{Component, Frame, to_pixels};
use super::huffman::{BitReader, HuffmanTable};
use super::layout::scale_eighths;
use super::markers::{APP0, APP14, DHT, DQT, DRI, FrameHeader, SOF2, SOS, is_frame};
use super::walk::BROKEN;
use crate::decode::{fitting::Fitting, resize::Pixels};
use crate::request::TargetSize;

/// Whether a thumbnail of `target` (turned as the photo's orientation
/// turns it) of a `width` x `height` JPEG needs at most 1/8 of its size, as
/// this decoder gives it.
pub(in crate::decode) fn covers(width: u32, height: u32, target: TargetSize) -> bool {
    let (want_width, want_height) = Fitting::new(width, height, target).scaled_whole(width, height);
    scale_eighths(width, height, want_width, want_height) == 1
}

/// `bytes`, a progressive JPEG (or its start, through its DC scans),
/// decoded at 1/8 of its size from its DC coefficients: RGB, or grey for a
/// greyscale file, `ceil(width / 8)` x `ceil(height / 8)` as libjpeg gives
/// it at 1/8. `segments` are where its walk found the frame, tables and
/// scan headers
/// ([`JpegWalk::segments`](super::walk::JpegWalk::segments)); the scans' data is read from
/// `bytes`. `None` when its DC scans do not serve (see the module's
/// header).
pub(in crate::decode) fn decode_dc(
    bytes: &[u8],
    segments: &[(u8, Range<usize>)],
) -> Option<Pixels> {
    let mut tables = Tables::default();
    let mut frame: Option<Frame> = None;
    // To the end of what was walked, if no AC scan comes first: the DC
    // must be complete by then. Nothing after bytes that are no marker.
    for (marker, at) in segments {
        let segment = bytes.get(at.clone())?;
        match *marker {
            BROKEN => break,
            SOF2 => {
                if frame.is_some() {
                    return None;
                }
                frame = Some(read_frame(segment, bytes.len())?);
            }
            // Any other frame kind: baseline, lossless, arithmetic-coded.
            marker if is_frame(marker) => return None,
            DHT => read_huffman(segment, &mut tables)?,
            DQT => read_quant(segment, &mut tables)?,
            DRI => tables.restart_interval = read_restart_interval(segment)?,
            APP0 if segment.starts_with(b"JFIF\0") => tables.jfif = true,
            APP14 if segment.starts_with(b"Adobe") => {
                tables.adobe_transform = segment.get(11).copied();
            }
            SOS => {
                let frame = frame.as_mut()?;
                let scan = read_scan_header(segment, |id| {
                    frame.components.iter().position(|c| c.id == id)
                })?;
                if scan.band_start != 0 {
                    if frame.components.iter().all(|c| c.known_from_bit.is_some()) {
                        break;
                    }
                    // An AC scan before some component's DC: skipped.
                    continue;
                }
                let mut reader = BitReader::new(bytes, at.end);
                decode_dc_scan(&mut reader, frame, &scan, &tables)?;
                if reader.overran {
                    return None;
                }
            }
            _ => {}
        }
    }
    let frame = frame?;
    if frame.components.iter().any(|c| c.known_from_bit.is_none()) {
        return None;
    }
    Some(to_pixels(&frame, &tables))
}

/// [`decode_dc`] of `bytes` after one walk over all of them, as the
/// header walks a file before its route.
#[cfg(test)]
pub(in crate::decode) fn walk_and_decode_dc(bytes: &[u8]) -> Option<Pixels> {
    let mut walk = super::walk::JpegWalk::default();
    walk.walk_to_end(bytes);
    decode_dc(bytes, walk.segments()?)
}

/// The frame of a file of `file_bytes`, its DC arrays allocated, if the
/// file can hold them: every block's DC takes at least a bit, so a header
/// claiming more blocks than the file has bits is refused before they are
/// allocated (a 147-byte file may claim 16000x16000).
fn read_frame(segment: &[u8], file_bytes: usize) -> Option<Frame> {
    let header = FrameHeader::read(segment).filter(FrameHeader::dc_decodable)?;
    let mut components: Vec<Component> = header
        .components
        .iter()
        .map(|c| Component {
            id: c.id,
            h: c.h,
            v: c.v,
            quant_table: c.quant,
            dc: Vec::new(),
            step: 0,
            known_from_bit: None,
        })
        .collect();
    let h_max = components.iter().map(|c| c.h).max()?;
    let v_max = components.iter().map(|c| c.v).max()?;
    let mcus_across = (header.width as usize).div_ceil(8 * h_max);
    let mcus_down = (header.height as usize).div_ceil(8 * v_max);
    let blocks = |c: &Component| mcus_across * c.h * mcus_down * c.v;
    if components.iter().map(blocks).sum::<usize>() > file_bytes.saturating_mul(8) {
        return None;
    }
    for component in &mut components {
        component.dc = vec![0; blocks(component)];
    }
    Some(Frame {
        width: header.width,
        height: header.height,
        components,
        mcus_across,
        mcus_down,
        h_max,
        v_max,
    })
}

/// Reads a DC scan: the first (the DC's high bits, as differences from
/// the previous block's) or a refinement (one more bit of each).
fn decode_dc_scan(
    reader: &mut BitReader<'_>,
    frame: &mut Frame,
    scan: &Scan,
    tables: &Tables,
) -> Option<()> {
    if !dc_scan_follows(scan, |index| frame.components[index].known_from_bit) {
        return None;
    }
    let first = scan.bit_high == 0;
    let bit = scan.bit_low;
    let mut huffman = Vec::new();
    for &(index, table) in &scan.components {
        let component = &mut frame.components[index];
        if first {
            component.step = tables.quant_dc[component.quant_table]?;
            huffman.push(Some(tables.huffman_dc.get(table)?.as_ref()?));
        } else {
            huffman.push(None);
        }
    }
    let mut state = ScanState {
        huffman,
        bit,
        predictions: vec![0; scan.components.len()],
        restart_interval: tables.restart_interval,
        until_restart: tables.restart_interval,
    };
    let mcus_across = frame.mcus_across;
    if let [(index, _)] = scan.components[..] {
        // One component: its blocks in order, its own size's worth (not
        // padded to whole MCUs), one block an MCU.
        let component = &mut frame.components[index];
        let stride = component.stride(mcus_across);
        let across = (frame.width as usize * component.h).div_ceil(frame.h_max * 8);
        let down = (frame.height as usize * component.v).div_ceil(frame.v_max * 8);
        for row in 0..down {
            // Past the data: the scan is cut short, and this is no image.
            if reader.overran {
                return None;
            }
            for column in 0..across {
                state.next_mcu(reader)?;
                state.read_block(reader, 0, &mut component.dc[row * stride + column])?;
            }
        }
    } else {
        for mcu_row in 0..frame.mcus_down {
            if reader.overran {
                return None;
            }
            for mcu_column in 0..mcus_across {
                state.next_mcu(reader)?;
                for (slot, &(index, _)) in scan.components.iter().enumerate() {
                    let component = &mut frame.components[index];
                    let stride = component.stride(mcus_across);
                    for v in 0..component.v {
                        let row = mcu_row * component.v + v;
                        for h in 0..component.h {
                            let at = row * stride + mcu_column * component.h + h;
                            state.read_block(reader, slot, &mut component.dc[at])?;
                        }
                    }
                }
            }
        }
    }
    for &(index, _) in &scan.components {
        frame.components[index].known_from_bit = Some(bit);
    }
    Some(())
}

/// Where a scan's reading is.
struct ScanState<'t> {
    /// Each of the scan's components' DC table, for a first scan.
    huffman: Vec<Option<&'t HuffmanTable>>,
    /// The bit the scan's values start at.
    bit: u8,
    /// Each component's last DC, which the next block's differs from.
    predictions: Vec<i32>,
    restart_interval: usize,
    until_restart: usize,
}

impl ScanState<'_> {
    /// Before each MCU: past a restart marker when one is due.
    fn next_mcu(&mut self, reader: &mut BitReader<'_>) -> Option<()> {
        if self.restart_interval > 0 {
            if self.until_restart == 0 {
                if !reader.restart() {
                    return None;
                }
                self.predictions.fill(0);
                self.until_restart = self.restart_interval;
            }
            self.until_restart -= 1;
        }
        Some(())
    }

    /// One block's DC, or its next bit, for the scan's `slot`th component.
    fn read_block(&mut self, reader: &mut BitReader<'_>, slot: usize, dc: &mut i16) -> Option<()> {
        match self.huffman[slot] {
            Some(table) => {
                // A DC difference has at most 15 bits (12-bit JPEGs').
                let size = reader.symbol(table).filter(|&size| size <= 15)?;
                let prediction = &mut self.predictions[slot];
                *prediction = prediction.wrapping_add(reader.difference(size));
                *dc = prediction.wrapping_shl(u32::from(self.bit)) as i16;
            }
            None => {
                if reader.bits(1) == 1 {
                    *dc |= 1 << self.bit;
                }
            }
        }
        Some(())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::decode::resize::Layout;

    fn picture(width: u32, height: u32) -> Vec<u8> {
        fixture_server::picture::render(31, width, height).pixels
    }

    pub(in crate::decode) fn progressive(
        rgb: &[u8],
        (width, height): (u16, u16),
        sampling: jpeg_encoder::SamplingFactor,
        restart_interval: Option<u16>,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        let mut encoder = jpeg_encoder::Encoder::new(&mut out, 90);
        encoder.set_sampling_factor(sampling);
        encoder.set_progressive(true);
        if let Some(interval) = restart_interval {
            encoder.set_restart_interval(interval);
        }
        encoder
            .encode(rgb, width, height, jpeg_encoder::ColorType::Rgb)
            .unwrap();
        out
    }

    /// The mean of each 8x8 block of the full decode, as RGB.
    fn block_means(jpeg: &[u8]) -> (u32, u32, Vec<u8>) {
        let full = image::load_from_memory(jpeg).unwrap().into_rgb8();
        let (width, height) = (full.width().div_ceil(8), full.height().div_ceil(8));
        let mut means = Vec::new();
        for by in 0..height {
            for bx in 0..width {
                let mut sum = [0u32; 3];
                let mut count = 0;
                for y in by * 8..(by * 8 + 8).min(full.height()) {
                    for x in bx * 8..(bx * 8 + 8).min(full.width()) {
                        let pixel = full.get_pixel(x, y);
                        for c in 0..3 {
                            sum[c] += u32::from(pixel[c]);
                        }
                        count += 1;
                    }
                }
                means.extend(sum.map(|s| ((s + count / 2) / count) as u8));
            }
        }
        (width, height, means)
    }

    fn mean_difference(a: &[u8], b: &[u8]) -> f64 {
        assert_eq!(a.len(), b.len());
        let total: u64 = a
            .iter()
            .zip(b)
            .map(|(a, b)| u64::from(a.abs_diff(*b)))
            .sum();
        total as f64 / a.len() as f64
    }

    /// Each RGB pixel's luma, in whole levels.
    fn luma(rgb: &[u8]) -> Vec<u8> {
        rgb.chunks(3)
            .map(|p| {
                let sum = 299 * u32::from(p[0]) + 587 * u32::from(p[1]) + 114 * u32::from(p[2]);
                (sum / 1000) as u8
            })
            .collect()
    }

    /// Copies of `jpeg` with one byte damaged, seven ways, for every byte
    /// before `end`.
    pub(in crate::decode) fn damaged_copies(
        jpeg: &[u8],
        end: usize,
    ) -> impl Iterator<Item = Vec<u8>> + '_ {
        (0..end.min(jpeg.len())).flat_map(move |at| {
            let byte = jpeg[at];
            [
                0x00,
                0x01,
                0x7F,
                0xD9,
                0xFF,
                byte ^ 0x10,
                byte.wrapping_add(1),
            ]
            .map(|value| {
                let mut damaged = jpeg.to_vec();
                damaged[at] = value;
                damaged
            })
        })
    }

    /// Where the first AC scan's header starts.
    pub(in crate::decode) fn first_ac_scan(jpeg: &[u8]) -> usize {
        (0..jpeg.len() - 6)
            .find(|&at| {
                jpeg[at..].starts_with(&[0xFF, 0xDA]) && {
                    let count = usize::from(jpeg[at + 4]);
                    jpeg[at + 5 + 2 * count] != 0
                }
            })
            .unwrap()
    }

    /// The DC image is the full decode's 8x8 block means, at 1/8 of the
    /// size libjpeg gives (sides rounded up), whatever the sampling, with
    /// restart markers or without.
    #[test]
    fn the_dc_scans_give_the_image_at_an_eighth() {
        use jpeg_encoder::SamplingFactor;
        let rgb = picture(333, 222);
        for (sampling, restarts) in [
            (SamplingFactor::F_2_2, None),
            (SamplingFactor::F_1_1, None),
            (SamplingFactor::F_2_1, Some(3)),
            (SamplingFactor::F_2_2, Some(1)),
        ] {
            let jpeg = progressive(&rgb, (333, 222), sampling, restarts);
            let pixels = walk_and_decode_dc(&jpeg).unwrap();
            assert_eq!((pixels.width, pixels.height), (42, 28));
            assert_eq!(pixels.layout, Layout::Rgb);
            let (width, height, means) = block_means(&jpeg);
            assert_eq!((width, height), (42, 28));
            // Chroma is one value for 2x2 blocks at 4:2:0: a little off
            // where colours change.
            // Luma is the block means, give or take rounding.
            let difference = mean_difference(&luma(&pixels.data), &luma(&means));
            assert!(difference < 1.0, "{sampling:?} {restarts:?}: {difference}");
            // libjpeg at 1/8 takes the DC alone unless chroma is
            // subsampled both ways: the same pixels.
            #[cfg(feature = "libjpeg")]
            if sampling != SamplingFactor::F_2_2 {
                let libjpeg = super::super::libjpeg::decode_scaled(&jpeg, 1)
                    .unwrap()
                    .unwrap();
                assert_eq!(libjpeg.data, pixels.data, "{sampling:?} {restarts:?}");
            }
        }
    }

    #[test]
    fn a_grey_jpeg_gives_grey() {
        let grey: Vec<u8> = picture(100, 60).chunks(3).map(|p| p[1]).collect();
        let mut jpeg = Vec::new();
        let mut encoder = jpeg_encoder::Encoder::new(&mut jpeg, 90);
        encoder.set_progressive(true);
        encoder
            .encode(&grey, 100, 60, jpeg_encoder::ColorType::Luma)
            .unwrap();
        let pixels = walk_and_decode_dc(&jpeg).unwrap();
        assert_eq!(
            (pixels.width, pixels.height, pixels.layout),
            (13, 8, Layout::Luma)
        );
        let full = image::load_from_memory(&jpeg).unwrap().into_luma8();
        // Block (3, 2)'s mean.
        let mean = (16..24)
            .flat_map(|y| (24..32).map(move |x| (x, y)))
            .map(|(x, y)| u32::from(full.get_pixel(x, y)[0]))
            .sum::<u32>()
            / 64;
        assert!(u32::from(pixels.data[2 * 13 + 3]).abs_diff(mean) <= 2);
    }

    /// libjpeg's own progressive scripts: libjpeg-turbo's (every DC in one
    /// scan, its last bit sent after the AC scans) and mozjpeg's.
    #[test]
    #[cfg(feature = "libjpeg")]
    fn libjpeg_progressive_files_decode_from_their_dc() {
        let rgb = picture(640, 480);
        for fastest in [true, false] {
            let mut compress = mozjpeg::Compress::new(mozjpeg::ColorSpace::JCS_RGB);
            if fastest {
                compress.set_fastest_defaults();
            }
            compress.set_progressive_mode();
            compress.set_size(640, 480);
            compress.set_quality(85.0);
            let mut started = compress.start_compress(Vec::new()).unwrap();
            started.write_scanlines(&rgb).unwrap();
            let jpeg = started.finish().unwrap();
            let pixels = walk_and_decode_dc(&jpeg).unwrap();
            assert_eq!((pixels.width, pixels.height), (80, 60));
            let (_, _, means) = block_means(&jpeg);
            let difference = mean_difference(&luma(&pixels.data), &luma(&means));
            assert!(difference < 1.0, "fastest {fastest}: {difference}");
            // Read up to the first AC scan: the same pixels.
            let cut = walk_and_decode_dc(&jpeg[..first_ac_scan(&jpeg)]).unwrap();
            assert_eq!(cut.data, pixels.data);
        }
    }

    #[test]
    fn what_the_dc_scans_do_not_serve_is_none() {
        let rgb = picture(120, 80);
        let whole = progressive(&rgb, (120, 80), jpeg_encoder::SamplingFactor::F_2_2, None);
        let pixels = walk_and_decode_dc(&whole).unwrap();
        // Cut at the first AC scan: the same pixels.
        let at = first_ac_scan(&whole);
        assert_eq!(walk_and_decode_dc(&whole[..at]).unwrap().data, pixels.data);
        // Cut inside the DC scans: not all there.
        for cut in [0, 2, 100, at / 2, at - 3] {
            assert!(walk_and_decode_dc(&whole[..cut]).is_none(), "{cut}");
        }
        // A baseline JPEG.
        let mut baseline = Vec::new();
        jpeg_encoder::Encoder::new(&mut baseline, 90)
            .encode(&rgb, 120, 80, jpeg_encoder::ColorType::Rgb)
            .unwrap();
        assert!(walk_and_decode_dc(&baseline).is_none());
        // Not a JPEG.
        assert!(walk_and_decode_dc(b"GIF89a").is_none());
    }

    /// The route takes the DC scans for a thumbnail of at most 1/8 of the
    /// image, so their bytes alone make it; larger, or switched off, the
    /// bytes up to the AC scans are not enough.
    #[test]
    fn the_route_makes_small_thumbnails_from_the_dc_scans() {
        use crate::decode::{
            route::tests::LIMITS,
            route::{decode_thumbnail, decode_thumbnail_from_prefix},
        };
        let rgb = fixture_server::picture::render(77, 800, 600).pixels;
        let jpeg = progressive(&rgb, (800, 600), jpeg_encoder::SamplingFactor::F_2_2, None);
        let dc = &jpeg[..first_ac_scan(&jpeg)];
        assert!(dc.len() < jpeg.len() / 3, "{} of {}", dc.len(), jpeg.len());
        let url: std::sync::Arc<str> = "http://x/p.jpg".into();
        for side in [32, 64, 100] {
            let target = TargetSize::square(side);
            let whole = decode_thumbnail(&url, &jpeg, target, LIMITS).unwrap();
            let cut = decode_thumbnail_from_prefix(&url, dc, target, LIMITS).unwrap();
            assert_eq!(cut.pixels, whole.pixels, "{side}");
            assert_eq!((cut.width, cut.height), (side, side * 3 / 4));
            assert_eq!(cut.source_size, (800, 600));
            assert_eq!(
                fixture_server::decode_id(&cut.pixels, cut.width, cut.height),
                Some(77)
            );
        }
        let error = decode_thumbnail_from_prefix(&url, dc, TargetSize::square(128), LIMITS)
            .unwrap_err()
            .to_string();
        assert!(error.contains("DC scans"), "{error}");
        let off = crate::decode::DecodeLimits {
            progressive_dc: false,
            ..LIMITS
        };
        assert!(decode_thumbnail_from_prefix(&url, dc, TargetSize::square(64), off).is_err());
    }

    /// Every byte of the headers and DC scans damaged, seven ways: an image
    /// or `None`, never a panic.
    #[test]
    fn damaged_files_never_panic() {
        let rgb = picture(48, 40);
        let jpeg = progressive(&rgb, (48, 40), jpeg_encoder::SamplingFactor::F_2_2, Some(2));
        for damaged in damaged_copies(&jpeg, first_ac_scan(&jpeg) + 8) {
            if let Some(pixels) = walk_and_decode_dc(&damaged) {
                let channels = if pixels.layout == Layout::Luma { 1 } else { 3 };
                assert_eq!(
                    pixels.data.len(),
                    (pixels.width * pixels.height) as usize * channels
                );
            }
        }
    }
}
