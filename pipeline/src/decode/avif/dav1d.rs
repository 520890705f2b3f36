//! dav1d: one AV1 image (an AVIF item) decoded by rav1d, the Rust port of
//! dav1d, through dav1d's C API, which is the only public one it has, and
//! its sequence headers read by it (for `coding.rs`). The
//! crate's one module with `unsafe`: every block says why it is sound, and
//! nothing unsafe leaves it. What it hands out is a [`Picture`] whose
//! planes are plain slices, borrowed from the decoder's own buffer.
//!
//! Runs on the decode thread that calls [`decode`]: the decoder is told to
//! start no thread of its own (`n_threads = 1`) and to refuse a frame of
//! more pixels than the caller allows, before it allocates for it. The
//! picture and the decoder are freed when the [`Picture`] is dropped.

#![allow(unsafe_code)]

use std::ffi::c_int;
use std::ptr::NonNull;

use rav1d::Dav1dResult;

use super::coding::{self, Coding, Layout};
use super::still::Colour;
use rav1d::include::dav1d::data::Dav1dData;
use rav1d::include::dav1d::dav1d::{Dav1dContext, Dav1dLogger, Dav1dSettings};
use rav1d::include::dav1d::headers::{
    DAV1D_PIXEL_LAYOUT_I420, DAV1D_PIXEL_LAYOUT_I422, DAV1D_PIXEL_LAYOUT_I444, Dav1dPixelLayout,
    Dav1dSequenceHeader,
};
use rav1d::include::dav1d::picture::Dav1dPicture;
use rav1d::src::lib::{
    dav1d_close, dav1d_data_create, dav1d_data_unref, dav1d_default_settings, dav1d_get_picture,
    dav1d_open, dav1d_parse_sequence_header, dav1d_picture_unref, dav1d_send_data,
};

/// dav1d's "not yet" (`DAV1D_ERR(EAGAIN)`): send more data, or take a
/// picture first.
const AGAIN: c_int = -libc::EAGAIN;

/// The coding of the AV1 image `obus` ([`coding::of_obus`]), its
/// sequence headers read by dav1d.
pub(super) fn coding(obus: &[u8]) -> Result<Coding, String> {
    coding::of_obus(obus, sequence_header)
}

/// The coding one AV1 sequence header OBU (`obu`, its header byte
/// included) says, its frames not counted: dav1d's own reading of it.
fn sequence_header(obu: &[u8]) -> Result<Coding, String> {
    if obu.is_empty() {
        return Err("an AV1 OBU of no bytes".into());
    }
    let mut header = std::mem::MaybeUninit::<Dav1dSequenceHeader>::uninit();
    // SAFETY: `header` is valid to write to, and written whole on
    // success; the data pointer and length are `obu`'s, a live slice
    // (not empty, checked above).
    let parsed = unsafe {
        dav1d_parse_sequence_header(
            Some(NonNull::new_unchecked(header.as_mut_ptr())),
            NonNull::new(obu.as_ptr().cast_mut()),
            obu.len(),
        )
    };
    if parsed.0 != 0 {
        return Err(format!(
            "the AV1 sequence header does not read ({})",
            av1_error(parsed)
        ));
    }
    // SAFETY: written by the successful call above.
    let header = unsafe { header.assume_init() };
    let coding = Coding {
        layout: layout_of(header.layout),
        high_bitdepth: header.hbd > 0,
        max_size: (
            header.max_width.unsigned_abs(),
            header.max_height.unsigned_abs(),
        ),
        frames: 0,
    };
    Ok(coding)
}

/// dav1d's layout as ours: I400 for any it does not make, so that no
/// chroma plane is read past what was allocated.
fn layout_of(layout: Dav1dPixelLayout) -> Layout {
    match layout {
        DAV1D_PIXEL_LAYOUT_I420 => Layout::I420,
        DAV1D_PIXEL_LAYOUT_I422 => Layout::I422,
        DAV1D_PIXEL_LAYOUT_I444 => Layout::I444,
        _ => Layout::I400,
    }
}

/// A plane's samples: 8-bit, or 10- and 12-bit in 16.
pub(super) enum Samples<'a> {
    Eight(&'a [u8]),
    Sixteen(&'a [u16]),
}

/// One plane of a [`Picture`]: `height` rows of `stride` samples, of
/// which the first `width` are the picture's.
pub(super) struct Plane<'a> {
    pub(super) samples: Samples<'a>,
    pub(super) stride: usize,
    pub(super) width: usize,
    pub(super) height: usize,
}

/// A decoded AV1 frame, and the decoder that holds it (closed after the
/// picture is unreferenced: fields drop in order, after `Drop::drop`).
pub(super) struct Picture {
    picture: Dav1dPicture,
    _decoder: Decoder,
}

impl Picture {
    pub(super) fn width(&self) -> u32 {
        self.picture.p.w.unsigned_abs()
    }

    pub(super) fn height(&self) -> u32 {
        self.picture.p.h.unsigned_abs()
    }

    /// Bits per sample: 8, 10 or 12.
    pub(super) fn bit_depth(&self) -> u32 {
        self.picture.p.bpc.unsigned_abs()
    }

    pub(super) fn layout(&self) -> Layout {
        layout_of(self.picture.p.layout)
    }

    /// How its samples are coded, and its size: what it holds.
    pub(super) fn coding(&self) -> Coding {
        Coding {
            layout: self.layout(),
            high_bitdepth: self.bit_depth() > 8,
            max_size: (self.width(), self.height()),
            frames: 1,
        }
    }

    /// What the AV1 sequence header says of the colours, for a file whose
    /// container says nothing of them.
    pub(super) fn colour(&self) -> Colour {
        let header = self.picture.seq_hdr.map(|header| {
            // SAFETY: `seq_hdr`, when set, points at the sequence header the
            // picture holds a reference to (`seq_hdr_ref`), which lives until
            // the picture is unreferenced in `Drop`, after this borrow ends.
            let header = unsafe { header.as_ref() };
            Colour {
                matrix: header.mtrx as u16,
                full_range: header.color_range != 0,
            }
        });
        header.unwrap_or(Colour {
            // Unspecified: BT.601, as libavif takes it.
            matrix: 2,
            full_range: false,
        })
    }

    /// Plane `index`: 0 luma, 1 and 2 chroma (none for monochrome).
    pub(super) fn plane(&self, index: usize) -> Option<Plane<'_>> {
        let (ss_x, ss_y) = self.layout().halved();
        let (width, height) = (self.width() as usize, self.height() as usize);
        let (width, height, stride) = match index {
            0 => (width, height, self.picture.stride[0]),
            1 | 2 if self.layout() != Layout::I400 => (
                (width + usize::from(ss_x)) >> u8::from(ss_x),
                (height + usize::from(ss_y)) >> u8::from(ss_y),
                self.picture.stride[1],
            ),
            _ => return None,
        };
        let stride_bytes = usize::try_from(stride).ok()?;
        let data = self.picture.data.get(index).copied().flatten()?;
        let bytes = stride_bytes.checked_mul(height)?;
        let sixteen = self.bit_depth() > 8;
        let sample = if sixteen { 2 } else { 1 };
        if stride_bytes < width * sample || stride_bytes % sample != 0 {
            return None;
        }
        let samples = if sixteen {
            if data.as_ptr().align_offset(std::mem::align_of::<u16>()) != 0 {
                return None;
            }
            // SAFETY: rav1d allocates each plane as `stride` bytes times
            // the picture's height rounded up to 128 rows (halved for
            // vertically subsampled chroma), at 64-byte alignment (checked
            // above for `u16`), and a 16-bit picture's samples are `u16`s;
            // `height` rows of `stride` bytes are within it. The buffer is
            // the picture's (`ref`), held until `Drop`, and is not written
            // while the picture is handed out: the decoder is given nothing
            // more.
            Samples::Sixteen(unsafe {
                std::slice::from_raw_parts(data.as_ptr().cast::<u16>(), bytes / 2)
            })
        } else {
            // SAFETY: as above, for bytes.
            Samples::Eight(unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), bytes) })
        };
        Some(Plane {
            samples,
            stride: stride_bytes / sample,
            width,
            height,
        })
    }
}

impl Drop for Picture {
    fn drop(&mut self) {
        // SAFETY: `picture` was written by `dav1d_get_picture` and is
        // unreferenced once, here; the decoder is closed after it (field
        // order), and a picture may outlive nothing it needs.
        unsafe { dav1d_picture_unref(Some(NonNull::from(&mut self.picture))) };
        // rav1d's unref writes a default picture back, with a fresh
        // reference to an empty ITU-T T.35 list that nothing frees (48
        // bytes an image, found by decode-fuzz's heap count): freed here.
        if let Some(leftover) = self.picture.itut_t35_ref.take() {
            // SAFETY: the unref made it with `RawArc::from_arc` and holds
            // no other copy; it is taken out of the picture, so it is
            // turned back into its `Arc` (and dropped) once.
            drop(unsafe { leftover.into_arc() });
        }
    }
}

/// A rav1d decoder for one image.
struct Decoder {
    context: Option<Dav1dContext>,
}

impl Drop for Decoder {
    fn drop(&mut self) {
        // SAFETY: `context` came from `dav1d_open` and is closed once, here
        // (`dav1d_close` sets it to `None`).
        unsafe { dav1d_close(Some(NonNull::from(&mut self.context))) };
    }
}

/// Decodes the AV1 image `obus` (an item's data: a sequence header and a
/// frame) at its `operating_point` (0 to 31; 0 is every layer), refusing a
/// frame of more than `max_pixels` pixels (up to `u32::MAX`) before the
/// decoder allocates for it.
pub(super) fn decode(obus: &[u8], operating_point: u8, max_pixels: u64) -> Result<Picture, String> {
    if obus.is_empty() {
        return Err("an image item holds no data".into());
    }
    let mut settings = std::mem::MaybeUninit::<Dav1dSettings>::uninit();
    // SAFETY: `settings` is valid to write to; `dav1d_default_settings`
    // writes every field.
    let mut settings = unsafe {
        dav1d_default_settings(NonNull::new_unchecked(settings.as_mut_ptr()));
        settings.assume_init()
    };
    // On the calling thread: the decode pool bounds the threads.
    settings.n_threads = 1;
    settings.max_frame_delay = 1;
    // The highest quality layer of the operating point alone, as a still
    // is shown; without film grain, noise that a thumbnail's downscale
    // averages away, and a second picture the decoder would allocate.
    settings.all_layers = 0;
    settings.apply_grain = 0;
    settings.operating_point = c_int::from(operating_point.min(31));
    settings.frame_size_limit = u32::try_from(max_pixels).unwrap_or(u32::MAX).max(1);
    // SAFETY: no callback: nothing is printed.
    settings.logger = unsafe { Dav1dLogger::new(None, None) };
    let mut decoder = Decoder { context: None };
    // SAFETY: both pointers are to live locals; on success `context` is set.
    let opened = unsafe {
        dav1d_open(
            Some(NonNull::from(&mut decoder.context)),
            Some(NonNull::from(&mut settings)),
        )
    };
    let context = match (opened, decoder.context) {
        (Dav1dResult(0), Some(context)) => context,
        (Dav1dResult(code), _) => return Err(format!("the AV1 decoder did not start ({code})")),
    };
    let mut data = Data(Dav1dData::default());
    // SAFETY: `data.0` is valid to write to; the buffer returned holds
    // `obus.len()` bytes, or is null.
    let buffer = unsafe { dav1d_data_create(Some(NonNull::from(&mut data.0)), obus.len()) };
    if buffer.is_null() {
        return Err("the AV1 decoder could not take the data".into());
    }
    // SAFETY: `buffer` is `obus.len()` writable bytes of rav1d's, apart
    // from `obus`.
    unsafe { std::ptr::copy_nonoverlapping(obus.as_ptr(), buffer, obus.len()) };
    let mut picture = Dav1dPicture::default();
    loop {
        if data.0.sz > 0 {
            // SAFETY: `context` is open; `data.0` is rav1d's, valid to read
            // and write, and is consumed (its `sz` lowered) as it is taken.
            let sent = unsafe { dav1d_send_data(Some(context), Some(NonNull::from(&mut data.0))) };
            if sent.0 < 0 && sent.0 != AGAIN {
                return Err(av1_error(sent));
            }
        }
        // SAFETY: `context` is open; `picture` is valid to write to.
        let got = unsafe { dav1d_get_picture(Some(context), Some(NonNull::from(&mut picture))) };
        match got.0 {
            0 => break,
            AGAIN if data.0.sz > 0 => continue,
            AGAIN => return Err("the AV1 data holds no complete frame".into()),
            _ => return Err(av1_error(got)),
        }
    }
    let picture = Picture {
        picture,
        _decoder: decoder,
    };
    if picture.width() == 0 || picture.height() == 0 || ![8, 10, 12].contains(&picture.bit_depth())
    {
        return Err("the AV1 decoder gave a picture of no size or an unknown depth".into());
    }
    Ok(picture)
}

/// The data given to the decoder, freed when what is left of it is dropped.
struct Data(Dav1dData);

impl Drop for Data {
    fn drop(&mut self) {
        // SAFETY: `0` is rav1d's (from `dav1d_data_create`, or default and
        // empty), unreferenced once, here.
        unsafe { dav1d_data_unref(Some(NonNull::from(&mut self.0))) };
    }
}

/// What an error code from the decoder means for the image.
fn av1_error(code: Dav1dResult) -> String {
    match -code.0 {
        libc::ERANGE => "the AV1 frame is larger than the image says, or than the limit".into(),
        libc::ENOMEM => "the AV1 decoder ran out of memory".into(),
        libc::ENOPROTOOPT => "the AV1 data uses a feature the decoder does not support".into(),
        other => format!("the AV1 data is not valid (decoder error {other})"),
    }
}
