//! Reading a JPEG only as far as its thumbnail needs: the watch a fetch
//! runs over each body it reads, as its [`StopRule`]. How much of a JPEG a
//! thumbnail needs is judged while the fetch reads its body: the headers
//! and an embedded thumbnail that serves (`exif.rs`), or for a progressive
//! JPEG bound for 1/8 of its size or less, its DC scans (`dc_scans.rs`).
//! The fetch stops reading once the bytes read are [`Enough::Yes`] and
//! answers them as a body cut short
//! ([`Body::cut_short`](crate::Body::cut_short)), which the decode takes as
//! such. The fetch stage's `read_as_needed` layer gives the rule
//! (`decode/watch.rs`) to each request that may be cut short.
//!
//! A watch is made for each body read and run by the fetch that reads it,
//! chunk by chunk. It is the JPEG's one walk over its markers (`walk.rs`)
//! going on from where the last chunk's stopped, so it looks through a
//! body once, and when it is asked no more, the walk rides on the body
//! for the decode to go on from.

use std::ops::ControlFlow;

use super::layout::JpegLayout;
use super::markers::{DHT, DQT, DRI, FrameHeader, SOF2, SOS, is_frame};
use super::walk::{JpegWalk, Walked};
use super::{dc_headers, dc_scans, exif};
use crate::body::Found;
use crate::decode::{DecodeLimits, fitting};
use crate::fetch::stop::{BodyWatch, Enough};
use crate::request::TargetSize;

/// The watch for a thumbnail of `target` under `limits`, or `None` when
/// `limits` take neither route.
pub(in crate::decode) fn watch(target: TargetSize, limits: &DecodeLimits) -> Option<PrefixWatch> {
    PrefixWatch::new(target, limits)
}

/// How far into a body an embedded thumbnail is looked for: EXIF's
/// segment holds at most 64 KiB, and the frame and scan headers follow it.
const MAX_EMBEDDED_BYTES: usize = 256 * 1024;

/// A fetch's watch over the body it reads, for the thumbnail of `target`.
#[derive(Clone, Debug)]
pub(in crate::decode) struct PrefixWatch {
    target: TargetSize,
    /// Still looking for an embedded thumbnail.
    embedded: bool,
    /// Still following the DC scans; `None` once they cannot serve.
    dc: Option<DcWatch>,
    /// The walk over the body's markers, as far as the bytes read.
    walk: JpegWalk,
}

impl BodyWatch for PrefixWatch {
    fn check(&mut self, read: &[u8]) -> Enough {
        PrefixWatch::check(self, read)
    }

    fn found(&mut self) -> Option<Found> {
        Some(Found::new(std::mem::take(&mut self.walk)))
    }
}

impl PrefixWatch {
    /// A watch for the routes `limits` take, or `None` when neither the
    /// embedded thumbnail nor the DC scans are taken.
    fn new(target: TargetSize, limits: &DecodeLimits) -> Option<Self> {
        let watch = Self {
            target,
            embedded: limits.embedded_thumbnails,
            dc: limits.progressive_dc.then(DcWatch::default),
            walk: JpegWalk::default(),
        };
        (watch.embedded || watch.dc.is_some()).then_some(watch)
    }

    /// Whether `body`, the bytes read so far (each call's a longer prefix
    /// of the same body), make the thumbnail.
    fn check(&mut self, body: &[u8]) -> Enough {
        let Self {
            target,
            embedded,
            dc,
            walk,
        } = self;
        let mut enough = false;
        let walked = walk.walk_on(body, |marker, segment, layout| {
            if layout.broken > 0 {
                (*embedded, *dc) = (false, None);
            }
            // The embedded thumbnail is judged once every header before
            // the first scan is read.
            if *embedded && marker == SOS {
                enough = exif::serves(layout, *target);
                *embedded = false;
            }
            if !enough && let Some(watch) = dc {
                match watch.segment(marker, segment, layout, *target) {
                    Some(Enough::Yes) => enough = true,
                    Some(_) => *dc = None,
                    None => {}
                }
            }
            if enough || (!*embedded && dc.is_none()) {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        if enough {
            return Enough::Yes;
        }
        if walked == Walked::Ended || walk.layout().broken > 0 {
            (self.embedded, self.dc) = (false, None);
        }
        if self.embedded && body.len() >= MAX_EMBEDDED_BYTES {
            self.embedded = false;
        }
        if self.embedded || self.dc.is_some() {
            Enough::NotYet
        } else {
            Enough::Never
        }
    }
}

/// How far the DC scans of a body have been followed.
#[derive(Clone, Debug, Default)]
struct DcWatch {
    /// The frame's components: id, quantisation table, and the lowest bit
    /// its DC has come with (`None` before its first DC scan).
    components: Vec<(u8, usize, Option<u8>)>,
    /// The tables defined so far.
    tables: TablesSeen,
}

impl DcWatch {
    /// Takes one segment as the decode would (the walk has taken it into
    /// `layout`): a verdict if it decides the body's fate, `None` to read
    /// on.
    fn segment(
        &mut self,
        marker: u8,
        segment: &[u8],
        layout: &JpegLayout,
        target: TargetSize,
    ) -> Option<Enough> {
        match marker {
            SOF2 => match self.frame(segment, layout, target) {
                Some(components) => {
                    self.components = components;
                    None
                }
                None => Some(Enough::Never),
            },
            marker if is_frame(marker) => Some(Enough::Never),
            DHT | DQT if self.tables.read(marker, segment).is_none() => Some(Enough::Never),
            DRI if dc_headers::read_restart_interval(segment).is_none() => Some(Enough::Never),
            SOS => self.scan(segment),
            _ => None,
        }
    }

    /// Takes a scan's header: [`Enough::Yes`] at the first AC scan after
    /// every component's DC, [`Enough::Never`] at a scan the decode
    /// refuses, `None` to read on through its data.
    fn scan(&mut self, segment: &[u8]) -> Option<Enough> {
        // The decode's own reading of the header (none before the frame:
        // no component is known).
        let components = &self.components;
        let Some(scan) = dc_headers::read_scan_header(segment, |id| {
            components.iter().position(|(c, ..)| *c == id)
        }) else {
            return Some(Enough::Never);
        };
        if scan.band_start != 0 {
            let complete = self.components.iter().all(|(.., known)| known.is_some());
            return complete.then_some(Enough::Yes);
        }
        // A DC scan the decode refuses, or one of a component with no
        // table to read it by.
        if !dc_headers::dc_scan_follows(&scan, |index| components[index].2)
            || (scan.bit_high == 0
                && scan
                    .components
                    .iter()
                    .any(|&(index, huffman)| !self.tables.serve(components[index].1, huffman)))
        {
            return Some(Enough::Never);
        }
        for &(index, _) in &scan.components {
            self.components[index].2 = Some(scan.bit_low);
        }
        None
    }

    /// The component ids of a progressive frame whose DC scans the decode
    /// takes for `target`, turned as the EXIF walked before it says (the
    /// decode's own reading of the header).
    fn frame(
        &self,
        segment: &[u8],
        layout: &JpegLayout,
        target: TargetSize,
    ) -> Option<Vec<(u8, usize, Option<u8>)>> {
        let header = FrameHeader::read(segment).filter(FrameHeader::dc_decodable)?;
        let target = if layout.orientation.is_some_and(fitting::quarter_turn) {
            fitting::swapped(target)
        } else {
            target
        };
        dc_scans::covers(header.width, header.height, target).then(|| {
            let components = header.components.iter();
            components.map(|c| (c.id, c.quant, None)).collect()
        })
    }
}

/// Which DC Huffman tables and quantisation tables the segments read so
/// far define, each segment read as the decode reads it: what the fetch's
/// watch needs to know that a DC scan will decode, without the tables.
#[derive(Clone, Copy, Debug, Default)]
struct TablesSeen {
    huffman_dc: [bool; 4],
    quant: [bool; 4],
}

impl TablesSeen {
    /// Takes a DHT or DQT segment; `None` if the decode
    /// refuses it. Other markers are not tables: nothing changes.
    fn read(&mut self, marker: u8, segment: &[u8]) -> Option<()> {
        let mut tables = dc_headers::Tables::default();
        match marker {
            DHT => dc_headers::read_huffman(segment, &mut tables)?,
            DQT => dc_headers::read_quant(segment, &mut tables)?,
            _ => return Some(()),
        }
        for id in 0..4 {
            self.huffman_dc[id] |= tables.huffman_dc[id].is_some();
            self.quant[id] |= tables.quant_dc[id].is_some();
        }
        Some(())
    }

    /// Whether a DC scan's first pass over a component of quantisation
    /// table `quant` with DC table `huffman` finds both, as the decode
    /// needs them.
    fn serve(&self, quant: usize, huffman: usize) -> bool {
        self.quant.get(quant) == Some(&true) && self.huffman_dc.get(huffman) == Some(&true)
    }
}

#[cfg(test)]
mod tests {
    use jpeg_encoder::SamplingFactor;

    use super::super::dc_scans::tests::{damaged_copies, first_ac_scan, progressive};
    use super::*;
    use crate::decode::route::tests::LIMITS;
    use crate::decode::watch::tests::fetched;

    /// The walk a fetch's watch made rides on the body, and the decode goes
    /// on from it: the thumbnail is the one a fresh walk gives, whether the
    /// watch stopped the read (the DC scans), said the whole body is needed
    /// (a larger thumbnail), or watched to the end.
    #[test]
    fn the_watchs_walk_rides_on_the_body_and_the_decode_goes_on_from_it() {
        let url: std::sync::Arc<str> = "photo.jpg".into();
        let rgb = fixture_server::picture::render(5, 800, 600).pixels;
        let jpeg = progressive(&rgb, (800, 600), SamplingFactor::F_2_2, None);
        for (side, cut_short) in [(64, true), (300, false)] {
            let target = TargetSize::square(side);
            let body = fetched(&jpeg, target, 4096);
            assert_eq!(body.complete, !cut_short, "{side}");
            let walk = body.found::<JpegWalk>().expect("the watch's walk");
            assert_eq!((walk.layout().width, walk.layout().height), (800, 600));
            assert!(walk.layout().headers_end.is_some());
            let decoded = crate::decode::route::decode_body(&url, &body, target, LIMITS).unwrap();
            let fresh = if cut_short {
                crate::decode::route::decode_thumbnail_from_prefix(&url, &body, target, LIMITS)
            } else {
                crate::decode::decode_thumbnail(&url, &body, target, LIMITS)
            }
            .unwrap();
            assert_eq!(decoded.pixels, fresh.pixels, "{side}");
        }
    }

    /// The bytes read, `step` more at a time, until the watch says more
    /// are not needed; `None` if it never says so.
    fn read_until_enough(watch: &mut PrefixWatch, body: &[u8], step: usize) -> Option<usize> {
        let mut read = 0;
        while read < body.len() {
            read = (read + step).min(body.len());
            match watch.check(&body[..read]) {
                Enough::Yes => return Some(read),
                Enough::NotYet => {}
                Enough::Never => return None,
            }
        }
        None
    }

    /// A progressive JPEG is read up to its first AC scan's header when
    /// the thumbnail is at most 1/8 of it, however the bytes arrive.
    #[test]
    fn a_progressive_jpeg_is_read_to_the_end_of_its_dc_scans() {
        let rgb = fixture_server::picture::render(5, 800, 600).pixels;
        for sampling in [SamplingFactor::F_2_2, SamplingFactor::F_1_1] {
            for restarts in [None, Some(4)] {
                let jpeg = progressive(&rgb, (800, 600), sampling, restarts);
                let ac = first_ac_scan(&jpeg);
                for step in [1, 7, 1000, 16 * 1024] {
                    let mut watch = PrefixWatch::new(TargetSize::square(64), &LIMITS).unwrap();
                    let read = read_until_enough(&mut watch, &jpeg, step).unwrap();
                    // The AC scan's header is whole: its marker, length
                    // and body (8 bytes for one component).
                    assert!(read >= ac + 10, "{step}: {read} < {ac}");
                    assert!(read < ac + 10 + step, "{step}: {read}");
                }
            }
        }
    }

    #[test]
    fn what_needs_the_whole_body_is_read_whole() {
        let rgb = fixture_server::picture::render(5, 800, 600).pixels;
        let jpeg = progressive(&rgb, (800, 600), SamplingFactor::F_2_2, None);
        let whole = |watch: Option<PrefixWatch>| {
            read_until_enough(&mut watch.unwrap(), &jpeg, 512).is_none()
        };
        // More than 1/8 of the photo.
        assert!(whole(PrefixWatch::new(TargetSize::square(101), &LIMITS)));
        // The DC route switched off (and no embedded thumbnail).
        let off = DecodeLimits {
            progressive_dc: false,
            ..LIMITS
        };
        assert!(whole(PrefixWatch::new(TargetSize::square(64), &off)));
        // Both switched off: no watch at all.
        let neither = DecodeLimits {
            embedded_thumbnails: false,
            ..off
        };
        assert!(PrefixWatch::new(TargetSize::square(64), &neither).is_none());
        // A baseline JPEG, and bytes that are no JPEG.
        let mut baseline = Vec::new();
        jpeg_encoder::Encoder::new(&mut baseline, 90)
            .encode(&rgb, 800, 600, jpeg_encoder::ColorType::Rgb)
            .unwrap();
        for body in [baseline, b"GIF89a and more".to_vec()] {
            let mut watch = PrefixWatch::new(TargetSize::square(64), &LIMITS).unwrap();
            assert_eq!(watch.check(&body), Enough::Never);
        }
    }

    /// A file the decode refuses is read whole, not cut short and then
    /// fetched again: sampling factors over 4, a quantisation table over
    /// 3 or none defined, a second frame, a DC scan out of order.
    #[test]
    fn a_frame_the_decode_refuses_is_read_whole() {
        let rgb = fixture_server::picture::render(5, 800, 600).pixels;
        let jpeg = progressive(&rgb, (800, 600), SamplingFactor::F_2_2, None);
        let sof = jpeg.windows(2).position(|m| m == [0xFF, 0xC2]).unwrap();
        // Marker, length, precision, height, width, count: the first
        // component's id, sampling and table follow.
        let first_component = sof + 10;
        let mut wide_sampling = jpeg.clone();
        wide_sampling[first_component + 1] = 0x52;
        let mut fifth_table = jpeg.clone();
        fifth_table[first_component + 2] = 4;
        let mut two_frames = jpeg.clone();
        let length = usize::from(u16::from_be_bytes([jpeg[sof + 2], jpeg[sof + 3]]));
        let frame = jpeg[sof..sof + 2 + length].to_vec();
        two_frames.splice(sof..sof, frame);
        // The first component's quantisation table said to be 3, which no
        // DQT defines.
        let mut undefined_table = jpeg.clone();
        undefined_table[first_component + 2] = 3;
        // The first DC scan said to send bit 14 and up: no such scan.
        let mut bit_14 = jpeg.clone();
        let sos = jpeg.windows(2).position(|m| m == [0xFF, 0xDA]).unwrap();
        let count = usize::from(jpeg[sos + 4]);
        bit_14[sos + 5 + 2 * count + 2] = 0x0E;
        for (name, body) in [
            ("DC from bit 14", bit_14),
            ("sampling 5x2", wide_sampling),
            ("table 4", fifth_table),
            ("table 3, undefined", undefined_table),
            ("two frames", two_frames),
        ] {
            let mut watch = PrefixWatch::new(TargetSize::square(64), &LIMITS).unwrap();
            assert_eq!(read_until_enough(&mut watch, &body, 512), None, "{name}");
            assert!(dc_scans::walk_and_decode_dc(&body).is_none(), "{name}");
        }
        let mut watch = PrefixWatch::new(TargetSize::square(64), &LIMITS).unwrap();
        assert!(read_until_enough(&mut watch, &jpeg, 512).is_some());
    }

    /// A photo turned a quarter by its EXIF is judged upright: a target
    /// that is 1/8 of it only once turned.
    #[test]
    fn the_exif_orientation_turns_the_target() {
        let jpeg = fixture_server::picture::render(5, 800, 400)
            .encode_jpeg_with(&fixture_server::photo::JpegOptions {
                progressive: true,
                orientation: Some(6),
                ..Default::default()
            })
            .unwrap();
        // Upright it is 400x800: 50x100 at 1/8. Unturned, 51x101 would
        // take 1/16 of it.
        let watch = |w, h| PrefixWatch::new(TargetSize::new(w, h), &LIMITS).unwrap();
        assert!(read_until_enough(&mut watch(50, 100), &jpeg, 256).is_some());
        assert!(read_until_enough(&mut watch(51, 101), &jpeg, 256).is_none());
    }

    /// Every byte up to the AC scans damaged, seven ways: an answer, never
    /// a panic.
    #[test]
    fn damaged_bodies_never_panic() {
        let rgb = fixture_server::picture::render(5, 64, 48).pixels;
        let jpeg = progressive(&rgb, (64, 48), SamplingFactor::F_2_2, Some(2));
        for damaged in damaged_copies(&jpeg, first_ac_scan(&jpeg) + 10) {
            let mut watch = PrefixWatch::new(TargetSize::square(8), &LIMITS).unwrap();
            let _ = read_until_enough(&mut watch, &damaged, 13);
        }
    }
}
