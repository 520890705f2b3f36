//! The one walk over a JPEG's markers. Everything thumbpipe learns of a
//! JPEG's structure (its frame, its EXIF segment, its scans) is learned by
//! this walk, once: it can stop where the bytes read so far end and go on
//! when more have come, so the fetch's watch (`prefix.rs`) walks a body as
//! it arrives, the walk rides on the body it made (what the body found),
//! and the decode goes on from where
//! the watch stopped instead of starting again. The walk keeps where each
//! segment a scan decoder needs lies (frame, tables, scan headers), so the
//! DC-scan decoder reads them from there, not by a walk of its own;
//! libjpeg reads the file itself.
//!
//! The EXIF segment's embedded thumbnail is found as the segment is taken:
//! its place and size go in the layout, and the walk over its own markers
//! (to its frame header, never deeper: a thumbnail's own EXIF is not
//! looked into) is kept for its decode to go on from.
//!
//! A walk is a value owned by whoever walks: the fetch task for a watch,
//! then the decode thread it is handed to. It keeps no bytes, only where
//! it is and what it found ([`JpegLayout`], [`JpegWalk::segments`]).

use std::ops::{ControlFlow, Range};

use image::metadata::Orientation;

use super::exif;
use super::layout::{JpegLayout, MAX_SCANS, ThumbnailAt};
use super::markers::{
    self, FrameHeader, Segment, entropy_coded_end, find_marker, past_fill, read_segment,
};
use crate::body::{Body, Found};

/// How far a JPEG's markers have been walked, and what they said.
#[derive(Clone, Debug, Default)]
pub(in crate::decode) struct JpegWalk {
    layout: JpegLayout,
    /// Where the next marker is read; 0 before the start marker is.
    at: usize,
    /// Looking for the next marker: through what, and up to where the
    /// bytes given so far were looked through.
    seeking: Option<(Seeking, usize)>,
    /// Nothing after this point is read: the end of the image, a second
    /// frame header, more scans than [`MAX_SCANS`], or no JPEG.
    ended: bool,
    /// The walk of an embedded thumbnail, which looks for none of its own.
    embedded: bool,
    /// The walk over the embedded thumbnail's markers to its frame header
    /// ([`JpegLayout::thumbnail`]).
    thumbnail: Option<Box<JpegWalk>>,
    /// The segments a scan decoder needs, in file order: see
    /// [`JpegWalk::segments`].
    segments: Vec<(u8, Range<usize>)>,
    /// More segments came than [`MAX_KEPT_SEGMENTS`]: those kept are not
    /// all.
    segments_dropped: bool,
}

/// Most segments a walk keeps the place of. A progressive photo has a
/// frame, a few tables and about ten scans; a file with more goes to a
/// decoder that reads it whole, and a walk's memory stays a few KiB.
const MAX_KEPT_SEGMENTS: usize = 256;

/// Among [`JpegWalk::segments`]: bytes where a marker should have been.
/// Decoders read no further (the walk skips them and goes on).
pub(in crate::decode) const BROKEN: u8 = 0;

/// What the walk looks through for the next marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seeking {
    /// A scan's entropy-coded data, restart markers and all.
    ScanData,
    /// Bytes where a marker should have been.
    Junk,
}

/// Where a call of [`JpegWalk::walk_on`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::decode) enum Walked {
    /// The bytes given end before the image does: more may follow.
    ToTheirEnd,
    /// The walk is over (see [`JpegWalk::ended`]).
    Ended,
    /// The caller's `each` stopped it after a segment.
    Stopped,
}

impl JpegWalk {
    /// What the markers walked so far say.
    pub(in crate::decode) fn layout(&self) -> &JpegLayout {
        &self.layout
    }

    /// Whether the walk is over: the markers after it are never read.
    #[cfg(test)]
    pub(in crate::decode) fn ended(&self) -> bool {
        self.ended
    }

    /// The segments walked so far that a decoder of the scans needs, in
    /// file order: each frame header, table (DHT, DQT), restart interval,
    /// JFIF (APP0) and Adobe (APP14) segment and scan header, with where
    /// its body lies (a scan's data starts at its end), and [`BROKEN`]
    /// where bytes that are no marker were skipped. `None` when there were
    /// more than a walk keeps.
    pub(in crate::decode) fn segments(&self) -> Option<&[(u8, Range<usize>)]> {
        (!self.segments_dropped).then_some(&self.segments[..])
    }

    /// Keeps where a segment (or [`BROKEN`] bytes) lies, within the limit.
    fn keep(&mut self, marker: u8, body: Range<usize>) {
        if self.segments.len() < MAX_KEPT_SEGMENTS {
            self.segments.push((marker, body));
        } else {
            self.segments_dropped = true;
        }
    }

    /// The walk over the embedded thumbnail's markers, as far as its frame
    /// header, for its decode to go on from.
    pub(in crate::decode) fn thumbnail_walk(&self) -> Option<JpegWalk> {
        self.thumbnail.as_deref().cloned()
    }

    /// Walks on over all of `bytes`, to their end (a truncated file gives
    /// what its bytes hold).
    pub(in crate::decode) fn walk_to_end(&mut self, bytes: &[u8]) {
        self.walk_on(bytes, |_, _, _| ControlFlow::Continue(()));
    }

    /// Walks on over `bytes`, the same body's as at every earlier call (as
    /// many or more of them), taking each whole segment into the layout,
    /// then handing it to `each` (its marker, its body, and the layout so
    /// far), which may stop the walk after it. Entropy-coded data is
    /// skipped to the marker after it; bytes where a marker should be are
    /// skipped, as decoders skip them, and counted
    /// ([`JpegLayout::broken`]).
    pub(in crate::decode) fn walk_on(
        &mut self,
        bytes: &[u8],
        mut each: impl FnMut(u8, &[u8], &JpegLayout) -> ControlFlow<()>,
    ) -> Walked {
        if self.ended {
            return Walked::Ended;
        }
        if self.at == 0 {
            if bytes.len() < 2 {
                return Walked::ToTheirEnd;
            }
            if !bytes.starts_with(&[0xFF, markers::SOI]) {
                self.layout.broken += 1;
                self.ended = true;
                return Walked::Ended;
            }
            self.at = 2;
        }
        loop {
            if let Some((through, from)) = self.seeking {
                let found = match through {
                    Seeking::ScanData => entropy_coded_end(bytes, from),
                    Seeking::Junk => find_marker(bytes, from),
                };
                match found {
                    Ok(marker_at) => {
                        self.at = marker_at;
                        self.seeking = None;
                    }
                    Err(looked_to) => {
                        self.seeking = Some((through, looked_to));
                        return Walked::ToTheirEnd;
                    }
                }
            }
            // Fill bytes are stepped over once, never again at the next
            // call, however long their run.
            self.at = past_fill(bytes, self.at);
            let (marker, segment, next) = match read_segment(bytes, self.at) {
                Segment::Whole(marker, segment, next) => (marker, segment, next),
                Segment::Cut => return Walked::ToTheirEnd,
                Segment::Broken => {
                    self.layout.broken += 1;
                    self.keep(BROKEN, self.at..self.at);
                    self.seeking = Some((Seeking::Junk, self.at + 1));
                    continue;
                }
            };
            let segment_at = next - segment.len();
            self.at = next;
            if markers::is_frame(marker)
                || matches!(
                    marker,
                    markers::DHT
                        | markers::DQT
                        | markers::DRI
                        | markers::APP0
                        | markers::APP14
                        | markers::SOS
                )
            {
                self.keep(marker, segment_at..next);
            }
            self.take(marker, segment, segment_at);
            if self.ended {
                return Walked::Ended;
            }
            if each(marker, segment, &self.layout).is_break() {
                return Walked::Stopped;
            }
        }
    }

    /// Takes one segment, whose body starts at `segment_at`, into the
    /// layout.
    fn take(&mut self, marker: u8, segment: &[u8], segment_at: usize) {
        let layout = &mut self.layout;
        match marker {
            markers::EOI => self.ended = true,
            // Only the first frame describes the image: a later one is
            // counted, never read over it.
            marker if markers::is_frame(marker) => {
                layout.frames += 1;
                if layout.frames > 1 {
                    self.ended = true;
                    return;
                }
                layout.progressive = markers::is_progressive_frame(marker);
                if let Some(header) = FrameHeader::read(segment) {
                    layout.read_frame(&header);
                }
            }
            // The first APP1 before the first scan that holds EXIF is the
            // image's: its TIFF structure, and the orientation it gives.
            markers::APP1 if layout.exif.is_none() && layout.headers_end.is_none() => {
                if let Some(tiff) = segment.strip_prefix(b"Exif\0\0") {
                    let start = segment_at + 6;
                    layout.exif = Some(start..start + tiff.len());
                    layout.orientation = Orientation::from_exif_chunk(tiff);
                    if !self.embedded
                        && let Some(at) = exif::ifd1_jpeg(tiff)
                    {
                        let mut walk = JpegWalk {
                            embedded: true,
                            ..JpegWalk::default()
                        };
                        if let Some((width, height)) = walk.frame_size(&tiff[at.clone()]) {
                            layout.thumbnail = Some(ThumbnailAt {
                                bytes: start + at.start..start + at.end,
                                width,
                                height,
                            });
                            self.thumbnail = Some(Box::new(walk));
                        }
                    }
                }
            }
            markers::SOS => {
                layout.scans += 1;
                if layout.scans > MAX_SCANS {
                    self.ended = true;
                    return;
                }
                layout.headers_end.get_or_insert(self.at);
                // The entropy-coded data runs to the next marker.
                self.seeking = Some((Seeking::ScanData, self.at));
            }
            _ => {}
        }
    }
}

/// The layout of all of `bytes`, read in one walk: up to the end of the
/// image, skipping the entropy-coded data, counting scans no further than
/// past [`MAX_SCANS`]. A truncated file gives what was read so far.
#[cfg(test)]
pub(in crate::decode) fn layout_of(bytes: &[u8]) -> JpegLayout {
    let mut walk = JpegWalk::default();
    walk.walk_to_end(bytes);
    walk.layout
}

/// The size a JPEG body's one frame header gives, the body's walk gone on
/// with as far as that header (or begun, when its read began none) and
/// kept on the body for the decode to go on from: the decode pool's size
/// probe. `None` for bytes that are no JPEG, or without such a header.
pub(in crate::decode) fn walk_to_frame(body: &mut Body) -> Option<(u32, u32)> {
    if !body.starts_with(&[0xFF, markers::SOI]) {
        return None;
    }
    // The watch's walk is past the frame: its size, with nothing copied.
    if let Some(walk) = body.found::<JpegWalk>()
        && walk.met_frame()
    {
        return walk.size();
    }
    let mut walk = body.found::<JpegWalk>().cloned().unwrap_or_default();
    let size = walk.frame_size(&body.bytes);
    body.set_found(Some(Found::new(walk)));
    size
}

/// How far into a body the size probe looks for the frame header: a
/// photo's lies well within it (EXIF's segment holds at most 64 KiB, and
/// colour profiles and XMP a few more), and a body that hides it further
/// (behind runs of tiny segments, say) is not looked through on the
/// prober's thread: its size is read by its decode.
const PROBE_BYTES: usize = 512 * 1024;

impl JpegWalk {
    /// Walks on over `bytes` as far as the frame header, and gives the
    /// size it says if it is the one frame and neither side is zero. The
    /// size probe runs on the load actor, where no file may be looked
    /// through: a walk that has met the frame, or a scan, walks no further
    /// (resumed inside a scan, it would go through all of its data), and
    /// none looks further into `bytes` than [`PROBE_BYTES`].
    pub(in crate::decode) fn frame_size(&mut self, bytes: &[u8]) -> Option<(u32, u32)> {
        if !self.met_frame() {
            let probed = &bytes[..bytes.len().min(PROBE_BYTES)];
            self.walk_on(probed, |_, _, layout| {
                if met_frame(layout) {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            });
        }
        self.size()
    }

    /// Whether the walk has met the frame header, or a scan (a frame would
    /// be too late after it).
    fn met_frame(&self) -> bool {
        met_frame(&self.layout)
    }

    /// The size the frame header met says, if it is the one frame and
    /// neither side is zero.
    fn size(&self) -> Option<(u32, u32)> {
        let layout = &self.layout;
        (layout.frames == 1 && layout.width > 0 && layout.height > 0)
            .then_some((layout.width, layout.height))
    }
}

/// Whether a walk whose layout is `layout` has met the frame header, or a
/// scan (a frame would be too late after it).
fn met_frame(layout: &JpegLayout) -> bool {
    layout.frames > 0 || layout.headers_end.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A walk over `bytes` given `step` more at a time ends with the
    /// layout one walk over all of them gives.
    fn walked_in_steps(bytes: &[u8], step: usize) -> JpegLayout {
        let mut walk = JpegWalk::default();
        let mut read = 0;
        while read < bytes.len() && !walk.ended() {
            read = (read + step).min(bytes.len());
            walk.walk_on(&bytes[..read], |_, _, _| ControlFlow::Continue(()));
        }
        walk.layout
    }

    #[test]
    fn a_walk_in_steps_learns_what_one_walk_learns() {
        let rgb = fixture_server::picture::render(5, 320, 240).pixels;
        let progressive = super::super::dc_scans::tests::progressive(
            &rgb,
            (320, 240),
            jpeg_encoder::SamplingFactor::F_2_2,
            Some(4),
        );
        let exif = fixture_server::exif::with_exif(
            &progressive,
            &fixture_server::exif::Exif {
                orientation: Some(6),
                thumbnail: None,
                big_endian: false,
            },
        )
        .unwrap();
        let whole = layout_of(&exif);
        assert_eq!((whole.width, whole.height), (320, 240));
        assert!(whole.progressive && whole.scans > 1);
        assert_eq!(whole.orientation, Some(Orientation::Rotate90));
        let tiff = whole.exif.clone().unwrap();
        assert!(exif[tiff.start..].starts_with(b"II") || exif[tiff.start..].starts_with(b"MM"));
        assert!(whole.headers_end.unwrap() > tiff.end);
        assert_eq!(whole.broken, 0);
        for step in [1, 3, 64, 1000] {
            assert_eq!(walked_in_steps(&exif, step), whole, "{step}");
        }
    }

    /// The EXIF thumbnail is found, and walked to its frame, as the photo's
    /// walk takes the EXIF segment: its decode goes on from that walk. A
    /// thumbnail's own embedded thumbnail is never looked into, so no
    /// nesting of them walks deeper than one.
    #[test]
    fn the_embedded_thumbnail_is_walked_to_its_frame_with_the_photo() {
        use fixture_server::exif::{Exif, with_exif};
        let jpeg = |side| {
            fixture_server::picture::render(5, side, side * 3 / 4)
                .encode_jpeg(90)
                .unwrap()
        };
        let with_thumbnail = |photo: &[u8], thumbnail: &[u8]| {
            let exif = Exif {
                orientation: None,
                thumbnail: Some(thumbnail),
                big_endian: false,
            };
            with_exif(photo, &exif).unwrap()
        };
        let innermost = jpeg(16);
        let thumbnail = with_thumbnail(&jpeg(160), &innermost);
        let photo = with_thumbnail(&jpeg(640), &thumbnail);
        let mut walk = JpegWalk::default();
        walk.walk_on(&photo, |_, _, layout| match layout.exif {
            Some(_) => ControlFlow::Break(()),
            None => ControlFlow::Continue(()),
        });
        let found = walk.layout().thumbnail.clone().unwrap();
        assert_eq!(&photo[found.bytes.clone()], &thumbnail[..]);
        assert_eq!((found.width, found.height), (160, 120));
        let mut inner = walk.thumbnail_walk().unwrap();
        assert_eq!(inner.layout().width, 160);
        assert_eq!(inner.layout().scans, 0, "walked to its frame, not past it");
        // Its own EXIF was taken, but not the thumbnail in it.
        assert!(inner.layout().exif.is_some());
        assert!(inner.layout().thumbnail.is_none() && inner.thumbnail_walk().is_none());
        // Its decode goes on from there to what one walk of it learns.
        inner.walk_to_end(&photo[found.bytes]);
        let mut alone = layout_of(&thumbnail);
        alone.thumbnail = None;
        assert_eq!(inner.layout, alone);
    }

    /// Regression: the pool's size probe, given a walk the fetch's watch
    /// left inside a scan, went on through the scan's data (a baseline
    /// photo's whole file) on the pool's submitter.
    #[test]
    fn the_size_of_a_walk_past_its_frame_is_given_without_walking_on() {
        let jpeg = fixture_server::picture::render(5, 64, 48)
            .encode_jpeg(90)
            .unwrap();
        let mut walk = JpegWalk::default();
        walk.walk_on(&jpeg, |marker, _, _| match marker {
            markers::SOS => ControlFlow::Break(()),
            _ => ControlFlow::Continue(()),
        });
        let (at, seeking) = (walk.at, walk.seeking);
        assert!(
            matches!(seeking, Some((Seeking::ScanData, _))),
            "left at the scan's data"
        );
        assert_eq!(walk.frame_size(&jpeg), Some((64, 48)));
        assert_eq!((walk.at, walk.seeking), (at, seeking));
        // A scan before any frame: no size, and no walk through its data.
        let sos = jpeg
            .windows(2)
            .position(|w| w == [0xFF, markers::SOS])
            .unwrap();
        let frame = jpeg.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
        let length = usize::from(u16::from_be_bytes([jpeg[frame + 2], jpeg[frame + 3]]));
        let mut frameless = jpeg[..frame].to_vec();
        frameless.extend_from_slice(&jpeg[frame + 2 + length..]);
        let mut walk = JpegWalk::default();
        assert_eq!(walk.frame_size(&frameless), None);
        assert!(walk.at < sos && matches!(walk.seeking, Some((Seeking::ScanData, _))));
    }

    /// Regression: bytes where a marker should be with no marker after
    /// them yet (runs of a stuffed `FF 00`), or a long run of fill bytes,
    /// were looked through again from their start at every call: a body
    /// arriving in chunks was scanned once per chunk, on the fetch task.
    /// Each call now goes on from where the last one looked to.
    #[test]
    fn junk_and_fill_are_looked_through_once_however_the_body_arrives() {
        for (junk, broken) in [(&[0xFF, 0x00][..], 1), (&[0xFF][..], 0)] {
            let mut body = vec![0xFF, markers::SOI];
            body.extend(junk.iter().copied().cycle().take(64 * 1024));
            let mut walk = JpegWalk::default();
            for read in (1024..=body.len()).step_by(1024) {
                let walked = walk.walk_on(&body[..read], |_, _, _| ControlFlow::Continue(()));
                assert_eq!(walked, Walked::ToTheirEnd);
                let looked_to = walk.seeking.map_or(walk.at, |(_, from)| from);
                assert!(looked_to + 2 >= read, "{junk:?}: {looked_to} of {read}");
            }
            assert_eq!(walk.layout.broken, broken, "{junk:?}");
            // What follows is read as ever.
            body.extend_from_slice(&[0xFF, markers::EOI]);
            assert_eq!(
                walk.walk_on(&body, |_, _, _| ControlFlow::Continue(())),
                Walked::Ended
            );
        }
    }

    #[test]
    fn a_walk_stops_where_it_is_told_and_goes_on_from_there() {
        let jpeg = fixture_server::picture::render(5, 64, 48)
            .encode_jpeg(90)
            .unwrap();
        let mut walk = JpegWalk::default();
        let mut seen = Vec::new();
        let stopped = walk.walk_on(&jpeg, |marker, _, layout| {
            seen.push(marker);
            if layout.frames == 1 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        assert_eq!(stopped, Walked::Stopped);
        assert_eq!(walk.layout().width, 64);
        assert_eq!(walk.layout().scans, 0);
        // Going on reads the rest, and none of the segments again.
        let rest = walk.walk_on(&jpeg, |marker, _, _| {
            seen.push(marker);
            ControlFlow::Continue(())
        });
        assert_eq!(rest, Walked::Ended);
        assert_eq!(walk.layout().scans, 1);
        let frames = seen.iter().filter(|&&m| markers::is_frame(m)).count();
        assert_eq!(frames, 1);
        assert_eq!(seen.iter().filter(|&&m| m == markers::SOS).count(), 1);
    }

    #[test]
    fn the_segments_a_scan_decoder_needs_are_kept_in_order_and_bounded() {
        let jpeg = fixture_server::picture::render(5, 64, 48)
            .encode_jpeg(90)
            .unwrap();
        // Every segment, as a walk hands them out, and those it keeps.
        let mut walk = JpegWalk::default();
        let mut needed = Vec::new();
        walk.walk_on(&jpeg, |marker, segment, _| {
            let kept = markers::is_frame(marker)
                || [
                    markers::DHT,
                    markers::DQT,
                    markers::DRI,
                    markers::APP0,
                    markers::SOS,
                ]
                .contains(&marker);
            if kept {
                needed.push((marker, segment.to_vec()));
            }
            ControlFlow::Continue(())
        });
        let kept: Vec<(u8, Vec<u8>)> = walk
            .segments()
            .unwrap()
            .iter()
            .map(|(marker, at)| (*marker, jpeg[at.clone()].to_vec()))
            .collect();
        assert!(
            kept.len() >= 4,
            "{:?}",
            kept.iter().map(|k| k.0).collect::<Vec<_>>()
        );
        assert_eq!(kept, needed);
        // A scan's data starts where its header's body ends.
        let (_, scan) = walk
            .segments()
            .unwrap()
            .iter()
            .find(|(m, _)| *m == markers::SOS)
            .unwrap();
        assert_eq!(walk.layout().headers_end, Some(scan.end));

        // Bytes that are no marker are marked where they were skipped.
        let mut junk = jpeg[..2].to_vec();
        junk.extend_from_slice(&[0x12, 0x34]);
        junk.extend_from_slice(&jpeg[2..]);
        let mut walk = JpegWalk::default();
        walk.walk_to_end(&junk);
        assert_eq!(walk.segments().unwrap()[0], (BROKEN, 2..2));

        // More than a walk keeps: none is offered, and the walk goes on.
        let mut many = vec![0xFF, markers::SOI];
        for _ in 0..=MAX_KEPT_SEGMENTS {
            many.extend_from_slice(&[0xFF, markers::DRI, 0, 4, 0, 0]);
        }
        many.extend_from_slice(&jpeg[2..]);
        let mut walk = JpegWalk::default();
        walk.walk_to_end(&many);
        assert!(walk.segments().is_none());
        assert_eq!(walk.segments.len(), MAX_KEPT_SEGMENTS);
        assert_eq!((walk.layout().width, walk.layout().scans), (64, 1));
    }

    #[test]
    fn bytes_that_are_no_jpeg_end_the_walk_as_broken() {
        let mut walk = JpegWalk::default();
        assert_eq!(
            walk.walk_on(b"\xFF", |_, _, _| ControlFlow::Continue(())),
            Walked::ToTheirEnd
        );
        assert_eq!(
            walk.walk_on(b"GIF89a", |_, _, _| ControlFlow::Continue(())),
            Walked::Ended
        );
        assert_eq!(walk.layout().broken, 1);
    }
}
