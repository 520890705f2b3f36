//! The decode stage's settings: the limits every image is held to before
//! it is decoded, the JPEG route, and the decode pool's threads. Plain
//! data, read when the pipeline is built (by [`crate::ImageDecoder::new`]
//! and the decode pool); validated with the rest of [`crate::Config`].

use crate::error::BuildError;

/// Settings of the decode stage: [`Config::decode`](crate::Config::decode).
///
/// ```
/// let mut config = thumbpipe::Config::default();
/// config.decode.max_dimension = 8192;
/// config.decode.threads = 1;
/// let pipeline = thumbpipe::Pipeline::<usize>::new(config)?;
/// # Ok::<(), thumbpipe::BuildError>(())
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct DecodeConfig {
    /// Largest width or height an image may declare. Default: 16384.
    pub max_dimension: u32,
    /// Most bytes one decode may allocate, counted from the header before
    /// decoding: the decoded pixels, the decoder's own buffers and the
    /// resize's. A JPEG decodes at the smallest DCT scale that covers the
    /// thumbnail, so a baseline one costs little at any size (a 12 MP
    /// photo to 256 px: under 1 MB), but a progressive one keeps every DCT
    /// coefficient at full size until its last scan (2 bytes a sample: 36
    /// MB for a 12 MP 4:2:0 photo, 72 MB at 4:4:4) unless the thumbnail is
    /// at most 1/8 of it (then its DC scans alone are read: under 2 MB). PNG, GIF, WebP, BMP
    /// and TIFF decode in full: 4 bytes a pixel, and a WebP's YUV planes or
    /// ARGB words, or a TIFF's own copy of the page, on top. An SVG costs
    /// its canvas twice over (drawn, then copied), the layers, clips, masks,
    /// filter results and pattern tiles it holds at once, and its elements;
    /// the pixels it fills may be four times this limit. An AVIF counts
    /// each frame its AV1 decoder may hold, at the largest size its
    /// sequence header allows. Reading any header runs under it too (at
    /// least 64 KiB: the chunks a header read buffers); a PNG's colour
    /// profile over 4 KB compressed is left out unread. Default: 256 MiB,
    /// a 40-megapixel progressive 4:4:4 JPEG or a 60-megapixel PNG.
    pub max_alloc_bytes: u64,
    /// Whether JPEGs are decoded by libjpeg at the smallest DCT scale that
    /// covers the thumbnail (a 12 MP photo to 256 px: 31.7 ms and 3.3 MB),
    /// rather than in full by `image`'s pure-Rust decoder (112 ms and 132
    /// MB). Default: `true`.
    ///
    /// Without the cargo feature `libjpeg` (on by default; it builds
    /// libjpeg-turbo from source, with a C compiler), every JPEG takes the
    /// pure-Rust full decode (but see
    /// [`progressive_dc_scans`](Self::progressive_dc_scans)).
    ///
    /// In a binary built with `panic = "abort"`, libjpeg is not used:
    /// libjpeg reports a broken file by unwinding out of its error callback
    /// (that is how the `mozjpeg` crate turns it into an error), and
    /// without unwinding that would end the process. There, every other
    /// JPEG takes the pure-Rust full decode, which returns its errors, so
    /// a broken JPEG is an [`crate::Error::Decode`] as it is elsewhere. What else changes under
    /// `panic = "abort"`: a panic inside a decoder or a disk job (none is
    /// known; `decode-fuzz` and `disk-fuzz` look for them) ends the process
    /// instead of failing one load.
    pub jpeg_dct_scaling: bool,
    /// Whether a JPEG whose EXIF embeds a thumbnail (as cameras and phones
    /// write one, 160x120 and often larger, in the file's first KB)
    /// decodes from that thumbnail when it shows the same picture (the
    /// photo's aspect ratio, within a pixel) and the thumbnail asked for
    /// comes out the same size from it: a 12 MP photo to 64 or 128 px in
    /// about a millisecond instead of 30. The photo's EXIF orientation is
    /// applied, and [`Thumbnail::source_size`](crate::Thumbnail::source_size)
    /// is the photo's. The pixels are the camera's own rendering (its
    /// resize, its JPEG quality); off, every thumbnail is made from the
    /// photo itself. Default: `true`.
    ///
    /// In a pipeline whose decoder takes bodies cut short (the default
    /// decoder does: [`Decode::takes_cut_short_bodies`](crate::Decode::takes_cut_short_bodies)),
    /// the fetch then stops reading a JPEG, over HTTP or from a `file://`
    /// path, once its first bytes hold the photo's headers and an embedded
    /// thumbnail that serves the load (tens of KB of a file of megabytes):
    /// the connection is closed (HTTP/1.1) or the stream reset (HTTP/2).
    /// If that thumbnail does not decode, the photo is fetched again and
    /// read whole. With the disk cache on, bodies are read whole and kept,
    /// so that any size can be made from them later. This setting of the
    /// pipeline's [`Config::decode`](crate::Config::decode) is what the
    /// fetch follows: a decoder of your own, or an
    /// [`ImageDecoder`](crate::ImageDecoder) made from another config, is
    /// given what it allows.
    pub embedded_thumbnails: bool,
    /// Whether a progressive JPEG bound for 1/8 of its size or less (a 12
    /// MP photo to 256 px and under) is decoded from its DC scans alone,
    /// by thumbpipe's own decoder in pure Rust: each 8x8 block's mean,
    /// which is what libjpeg's 1/8 scale computes too, without the buffer
    /// of every coefficient libjpeg keeps for a progressive file (36 MB for
    /// 12 MP at 4:2:0). The difference from libjpeg's pixels: 4:2:0 colour
    /// is one value per 16x16 pixels (libjpeg adds the next three
    /// frequencies). It needs neither the `libjpeg` feature nor unwinding;
    /// a file whose first scans do not hold every block's DC (or is
    /// arithmetic-coded, 12-bit or CMYK) takes the other route. Default:
    /// `true`.
    ///
    /// In a pipeline whose decoder takes bodies cut short, the fetch then
    /// stops reading such a JPEG at the end of its DC scans, as it does at
    /// an [embedded thumbnail](Self::embedded_thumbnails).
    pub progressive_dc_scans: bool,
    /// Decode threads, named `thumbpipe-decode-N`. Default: one per core.
    pub threads: usize,
    /// Images whose header declares more pixels than this are large: they
    /// decode on at most `threads - 1` threads at once, so that with
    /// two or more decode threads a small thumbnail never waits behind a
    /// large decode. Default: 2,000,000 (a 1920x1080 image is large, a
    /// 1600x1200 one is not). `u64::MAX` lets large images use every
    /// thread.
    pub large_image_pixels: u64,
    /// Most elements an SVG may draw, counted with every reference
    /// expanded as the converter expands it (a `<use>`'s target, a pattern,
    /// mask, clip path or filter for each element it applies to, a marker
    /// for each vertex), so a small file that refers to itself a
    /// thousandfold is counted at its real size; and 256 levels of nesting
    /// at most, references followed. Over either, the SVG is refused with
    /// [`crate::Error::TooLarge`] before it is converted; references that
    /// loop are an [`crate::Error::Decode`]. Logos and icons hold tens to a
    /// few thousand. Default: 20,000. It has no effect without the cargo
    /// feature `svg`.
    pub svg_max_elements: u32,
    /// Whether an animated GIF or WebP decodes every frame, at the
    /// thumbnail's size, into [`Thumbnail::animation`](crate::Thumbnail::animation)
    /// (egui's front door then plays it while it is drawn). Off, it is its
    /// first frame, as any still image. An animation that the limits below
    /// refuse, whose frames claim more than its screen, or whose decode
    /// with the canvases the frames are composed on and its frames would
    /// pass `max_alloc_bytes`, is its first frame too; so it is always
    /// with `max_animation_bytes` near `max_alloc_bytes`. It loops for
    /// ever, whatever loop count a GIF sets. A decode in progress runs to
    /// its end when its load is cancelled, as any decode. Default:
    /// `false`.
    ///
    /// Thumbnails on disk ([`DiskConfig::thumbnails`](crate::DiskConfig::thumbnails))
    /// are not kept while it is on, since they hold one frame: images decode
    /// from the responses on disk instead.
    pub animation: bool,
    /// Most frames an animation may have to be played. Default: 200.
    pub max_animation_frames: u32,
    /// Most bytes an animation's frames may take together, at the
    /// thumbnail's size (a 128x128 frame is 64 KiB): what it costs in the
    /// memory cache and as textures. Default: 4 MiB, under the memory
    /// cache's largest entry (a tenth of [`CacheConfig::max_bytes`](crate::CacheConfig::max_bytes)),
    /// so that a played animation stays in the cache.
    pub max_animation_bytes: u64,
    /// Most pixels an animation's frames may have together at their own
    /// size (frames times the screen): the work of decoding, composing
    /// and resizing them, on one decode thread. An animation that counts
    /// more than [`DecodeConfig::large_image_pixels`] this way decodes as a
    /// large image. Default: 50,000,000 (200 frames of 500x500), about
    /// half a second of one core.
    pub max_animation_pixels: u64,
}

impl Default for DecodeConfig {
    fn default() -> Self {
        Self {
            max_dimension: 16_384,
            max_alloc_bytes: 256 * 1024 * 1024,
            jpeg_dct_scaling: true,
            embedded_thumbnails: true,
            progressive_dc_scans: true,
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            large_image_pixels: 2_000_000,
            svg_max_elements: 20_000,
            animation: false,
            max_animation_frames: 200,
            max_animation_bytes: 4 * 1024 * 1024,
            max_animation_pixels: 50_000_000,
        }
    }
}

impl DecodeConfig {
    pub(crate) fn validate(&self) -> Result<(), BuildError> {
        crate::error::at_least_one(&[
            ("decode.max_dimension", u64::from(self.max_dimension)),
            ("decode.threads", self.threads as u64),
            ("decode.svg_max_elements", u64::from(self.svg_max_elements)),
            (
                "decode.max_animation_frames",
                u64::from(self.max_animation_frames),
            ),
            ("decode.max_animation_bytes", self.max_animation_bytes),
            ("decode.max_animation_pixels", self.max_animation_pixels),
        ])
    }
}
