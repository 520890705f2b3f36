//! libheif: the few calls of its C API (`ffi.rs`) a HEIC thumbnail needs
//! (read a file from memory, its primary image and that image's
//! thumbnails, a decode to 8-bit RGBA) made safe, bound here by hand: the
//! Rust bindings' current versions need libheif 1.16 or later, which
//! Debian 12 and Ubuntu 22.04 do not ship, and these calls are in every
//! libheif from 1.15 on. With `avif/dav1d.rs`, the crate's code with
//! `unsafe`: every block says why it is sound, and nothing unsafe leaves
//! it. What it hands out are plain values and a copy of the decoded pixels.
//!
//! Runs on the decode thread that calls it. libheif is told to decode a
//! grid's tiles on that thread (`max_decoding_threads = 0`) and to refuse
//! an image whose declared size is past the caller's; its HEVC decoder
//! (libde265) still starts and joins a worker thread of its own for each
//! picture it decodes. The file, its images and the decoded image are
//! freed when their values are dropped.

#![allow(unsafe_code)]

use std::ffi::{CStr, c_int};
use std::marker::PhantomData;
use std::ptr::{self, NonNull};
use std::sync::Once;

use super::ffi::*;

/// The largest side libheif is let decode: past about 23,000, libheif
/// 1.15's plane sizes (32-bit) overflow for the 16-bit RGBA it converts a
/// deeper image through.
const MOST_SIDE: u32 = 16_384;

/// Why libheif failed.
#[derive(Debug)]
pub(super) struct Failure {
    /// What it says, with its codes.
    pub(super) message: String,
    /// It refused an image wider or taller than it was told to allow.
    pub(super) too_large: bool,
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure {
            message,
            too_large: false,
        }
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Self {
        Failure::from(message.to_owned())
    }
}

/// What a libheif error says, or `None` for success.
fn failed(error: HeifError) -> Option<Failure> {
    if error.code == OK {
        return None;
    }
    let message = if error.message.is_null() {
        String::new()
    } else {
        // SAFETY: libheif's messages are NUL-terminated, static or kept by
        // the context, which outlives this call; not null.
        unsafe { CStr::from_ptr(error.message) }
            .to_string_lossy()
            .into_owned()
    };
    // libheif's size check says "Image size WxH exceeds the maximum image
    // size"; its other security limits (boxes, items) are no setting's.
    let too_large = error.subcode == SECURITY_LIMIT_EXCEEDED
        && message.to_ascii_lowercase().contains("image size");
    Some(Failure {
        message: format!(
            "libheif: {} (error {}.{})",
            message.trim_end(),
            error.code,
            error.subcode
        ),
        too_large,
    })
}

/// A HEIF file read from memory that outlives it (`'a`).
pub(super) struct File<'a> {
    context: NonNull<HeifContext>,
    bytes: PhantomData<&'a [u8]>,
}

impl<'a> File<'a> {
    /// Reads the file's structure from `bytes` (no image is decoded),
    /// refusing an image whose `ispe` says it is wider or taller than
    /// `max_side` (at most [`MOST_SIDE`]), and, when it is decoded, a grid
    /// or overlay canvas that large.
    pub(super) fn read(bytes: &'a [u8], max_side: u32) -> Result<Self, Failure> {
        static INIT: Once = Once::new();
        // SAFETY: `heif_init` takes a null for its defaults and is counted;
        // once a process, never undone, so it holds while any file is used.
        // A failure shows at the decode (no decoder for the codec).
        INIT.call_once(|| {
            let _ = unsafe { heif_init(ptr::null_mut()) };
        });
        // SAFETY: plain allocation; null is checked.
        let context = NonNull::new(unsafe { heif_context_alloc() })
            .ok_or("libheif: could not allocate a context")?;
        let file = File {
            context,
            bytes: PhantomData,
        };
        // libheif refuses a side at or past the limit it is given, so it is
        // given one more; and no more than `MOST_SIDE`, past which 1.15's
        // 32-bit plane sizes overflow.
        let max_side = c_int::try_from(max_side.min(MOST_SIDE) + 1).unwrap_or(c_int::MAX);
        // SAFETY: `context` is live (freed only by `file`'s drop). `bytes`
        // are not copied, and `'a` keeps them alive as long as `file` and
        // every image taken from it (their lifetimes end with `file`'s);
        // the size is the slice's own.
        let read = unsafe {
            heif_context_set_maximum_image_size_limit(file.context.as_ptr(), max_side);
            heif_context_set_max_decoding_threads(file.context.as_ptr(), 0);
            heif_context_read_from_memory_without_copy(
                file.context.as_ptr(),
                bytes.as_ptr().cast(),
                bytes.len(),
                ptr::null(),
            )
        };
        match failed(read) {
            Some(error) => Err(error),
            None => Ok(file),
        }
    }

    /// The image a viewer shows: the file's primary image.
    pub(super) fn primary(&self) -> Result<Image<'_>, Failure> {
        let mut id = 0;
        // SAFETY: the context is live; `id` is written on success.
        let got = unsafe { heif_context_get_primary_image_ID(self.context.as_ptr(), &mut id) };
        if let Some(error) = failed(got) {
            return Err(error);
        }
        let mut handle = ptr::null_mut();
        // SAFETY: the context is live; `handle` is written on success.
        let got =
            unsafe { heif_context_get_primary_image_handle(self.context.as_ptr(), &mut handle) };
        if let Some(error) = failed(got) {
            return Err(error);
        }
        Image::own(handle, id)
    }
}

impl Drop for File<'_> {
    fn drop(&mut self) {
        // SAFETY: allocated by `heif_context_alloc`, freed once, here. The
        // images taken from it borrow `self`, so they were released first;
        // libheif counts its own references besides.
        unsafe { heif_context_free(self.context.as_ptr()) };
    }
}

/// One image of a file: its primary image, or one of that image's
/// thumbnails.
pub(super) struct Image<'f> {
    handle: NonNull<HeifImageHandle>,
    /// Its item's id in the file.
    pub(super) id: u32,
    file: PhantomData<&'f File<'f>>,
}

impl Image<'_> {
    fn own(handle: *mut HeifImageHandle, id: u32) -> Result<Self, Failure> {
        let handle = NonNull::new(handle).ok_or("libheif gave no image")?;
        Ok(Image {
            handle,
            id,
            file: PhantomData,
        })
    }

    fn ptr(&self) -> *const HeifImageHandle {
        self.handle.as_ptr()
    }

    /// Its width and height as shown: turned, mirrored and cropped as the
    /// file says.
    pub(super) fn size(&self) -> (u32, u32) {
        // SAFETY: the handle is live until `self` is dropped.
        let (width, height) = unsafe {
            (
                heif_image_handle_get_width(self.ptr()),
                heif_image_handle_get_height(self.ptr()),
            )
        };
        (side(width), side(height))
    }

    /// Its width and height as coded, before it is turned or cropped.
    pub(super) fn coded_size(&self) -> (u32, u32) {
        // SAFETY: as in `size`.
        let (width, height) = unsafe {
            (
                heif_image_handle_get_ispe_width(self.ptr()),
                heif_image_handle_get_ispe_height(self.ptr()),
            )
        };
        (side(width), side(height))
    }

    /// Whether its colour is premultiplied by its alpha (libheif leaves it
    /// so).
    pub(super) fn premultiplied(&self) -> bool {
        // SAFETY: as in `size`.
        unsafe { heif_image_handle_is_premultiplied_alpha(self.ptr()) != 0 }
    }

    pub(super) fn has_alpha(&self) -> bool {
        // SAFETY: as in `size`.
        unsafe { heif_image_handle_has_alpha_channel(self.ptr()) != 0 }
    }

    /// Bits a luma sample (8, 10 or 12; 0 if unknown).
    pub(super) fn bits(&self) -> u32 {
        // SAFETY: as in `size`.
        side(unsafe { heif_image_handle_get_luma_bits_per_pixel(self.ptr()) })
    }

    /// The thumbnails the file holds of this image, at most `most` of
    /// them; one that cannot be opened is left out.
    pub(super) fn thumbnails(&self, most: usize) -> Vec<Image<'_>> {
        // SAFETY: as in `size`.
        let count = unsafe { heif_image_handle_get_number_of_thumbnails(self.ptr()) };
        let count = usize::try_from(count).unwrap_or(0).min(most);
        let mut ids = vec![0u32; count];
        // SAFETY: `ids` has room for `count` entries, which is what libheif
        // is told it may write.
        let filled = unsafe {
            heif_image_handle_get_list_of_thumbnail_IDs(
                self.ptr(),
                ids.as_mut_ptr(),
                count as c_int,
            )
        };
        ids.truncate(usize::try_from(filled).unwrap_or(0));
        ids.into_iter()
            .filter_map(|id| {
                let mut handle = ptr::null_mut();
                // SAFETY: the handle is live; `handle` is written on success.
                let got = unsafe { heif_image_handle_get_thumbnail(self.ptr(), id, &mut handle) };
                failed(got)
                    .is_none()
                    .then(|| Image::own(handle, id).ok())
                    .flatten()
            })
            .collect()
    }

    /// The image decoded, turned and cropped as the file says, in 8-bit
    /// RGBA (a deeper image brought down to 8 bits): `width * height * 4`
    /// bytes, row by row, at the size [`size`](Self::size) said. Refused if
    /// libheif's output is smaller.
    pub(super) fn decode_rgba(&self) -> Result<(u32, u32, Vec<u8>), Failure> {
        let expected = self.size();
        // Padding is below and to the right only if nothing was turned.
        let padded_right = expected == self.coded_size();
        let options = Options::new()?;
        let mut image = ptr::null_mut();
        // SAFETY: the handle and options are live; `image` is written on
        // success and then owned by `decoded`.
        let got = unsafe {
            heif_decode_image(
                self.ptr(),
                &mut image,
                COLORSPACE_RGB,
                CHROMA_INTERLEAVED_RGBA,
                options.0.as_ptr(),
            )
        };
        if let Some(error) = failed(got) {
            return Err(error);
        }
        let decoded = Decoded(NonNull::new(image).ok_or("libheif decoded no image")?);
        decoded.rgba(expected, padded_right)
    }
}

impl Drop for Image<'_> {
    fn drop(&mut self) {
        // SAFETY: every handle here came from libheif and is released once.
        unsafe { heif_image_handle_release(self.ptr()) };
    }
}

/// A side libheif gave; negative (an error) is 0.
fn side(value: c_int) -> u32 {
    u32::try_from(value).unwrap_or(0)
}

/// Decoding options: libheif's defaults, with deeper images brought to 8
/// bits.
struct Options(NonNull<HeifDecodingOptions>);

impl Options {
    fn new() -> Result<Self, Failure> {
        // SAFETY: plain allocation; null is checked.
        let options = NonNull::new(unsafe { heif_decoding_options_alloc() })
            .ok_or("libheif: could not allocate decoding options")?;
        // SAFETY: libheif allocated a structure of at least the version it
        // writes into `version`; the field written is in version 2 and on,
        // and every version's fields start as those declared here.
        unsafe {
            let fields = options.as_ptr();
            if (*fields).version >= 2 {
                (*fields).convert_hdr_to_8bit = 1;
            }
        }
        Ok(Options(options))
    }
}

impl Drop for Options {
    fn drop(&mut self) {
        // SAFETY: allocated by `heif_decoding_options_alloc`, freed once.
        unsafe { heif_decoding_options_free(self.0.as_ptr()) };
    }
}

/// A decoded image, owned.
struct Decoded(NonNull<HeifImage>);

impl Decoded {
    /// The interleaved RGBA plane copied out, if it is 8-bit and
    /// `expected`'s size, or larger and `padded` (its top left, then).
    fn rgba(&self, expected: (u32, u32), padded: bool) -> Result<(u32, u32, Vec<u8>), Failure> {
        let image = self.0.as_ptr();
        let mut stride: c_int = 0;
        // SAFETY: the image is live until `self` is dropped; a missing
        // channel gives -1 sides and a null plane, checked below.
        let (width, height, bits, plane) = unsafe {
            (
                heif_image_get_width(image, CHANNEL_INTERLEAVED),
                heif_image_get_height(image, CHANNEL_INTERLEAVED),
                heif_image_get_bits_per_pixel(image, CHANNEL_INTERLEAVED),
                heif_image_get_plane_readonly(image, CHANNEL_INTERLEAVED, &mut stride),
            )
        };
        let (width, height) = (side(width), side(height));
        // A camera's thumbnail can be coded larger than it is shown (its
        // HEVC picture padded below and to the right, with no crop in the
        // file; Canon's 320x214 is coded 320x320): the shown part is its
        // top left, unless the image was turned. Smaller, or twice as large,
        // is damage.
        let padding = |decoded: u32, shown: u32| decoded >= shown && decoded < 2 * shown;
        let fits = (width, height) == expected
            || (padded && padding(width, expected.0) && padding(height, expected.1));
        if !fits || expected.0 == 0 || expected.1 == 0 {
            return Err(format!(
                "libheif decoded {width}x{height} where the file says {}x{}",
                expected.0, expected.1
            )
            .into());
        }
        let row = expected.0 as usize * 4;
        let stride = usize::try_from(stride).unwrap_or(0);
        if plane.is_null() || stride < width as usize * 4 || bits != 32 {
            return Err("libheif gave no 8-bit RGBA plane".into());
        }
        let size = row
            .checked_mul(expected.1 as usize)
            .ok_or("libheif's image is larger than memory")?;
        let mut pixels = Vec::with_capacity(size);
        for y in 0..expected.1 as usize {
            // SAFETY: libheif's plane holds `height` rows of `stride` bytes
            // (its documented layout), each starting with `width` pixels of
            // 4 bytes in this chroma; `stride >= width * 4` was checked, and
            // `y < expected.1 <= height`, `row <= width * 4`. The image lives
            // until `self` is dropped.
            let line = unsafe { std::slice::from_raw_parts(plane.add(y * stride), row) };
            pixels.extend_from_slice(line);
        }
        let (width, height) = expected;
        Ok((width, height, pixels))
    }
}

impl Drop for Decoded {
    fn drop(&mut self) {
        // SAFETY: written by `heif_decode_image`, released once.
        unsafe { heif_image_release(self.0.as_ptr()) };
    }
}
