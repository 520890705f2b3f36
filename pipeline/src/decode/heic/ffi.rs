//! libheif's C API, as far as `libheif.rs` calls it: the declarations,
//! checked against libheif 1.15's `heif.h`, and nothing else. Linked by
//! the build script, as pkg-config says. Calling any of them is unsafe;
//! `libheif.rs` does, and says why each call is sound.

#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};

/// libheif's opaque types, only ever behind pointers.
#[repr(C)]
pub(super) struct HeifContext {
    _private: [u8; 0],
}
#[repr(C)]
pub(super) struct HeifImageHandle {
    _private: [u8; 0],
}
#[repr(C)]
pub(super) struct HeifImage {
    _private: [u8; 0],
}

/// `struct heif_error`, returned by value.
#[repr(C)]
pub(super) struct HeifError {
    pub(super) code: c_int,
    pub(super) subcode: c_int,
    /// Always set (libheif's header says so), to a static string or one
    /// the context holds until its next error.
    pub(super) message: *const c_char,
}

/// The first fields of `struct heif_decoding_options`, those of its
/// versions 1 and 2; libheif allocates the whole (larger) structure.
#[repr(C)]
pub(super) struct HeifDecodingOptions {
    pub(super) version: u8,
    pub(super) ignore_transformations: u8,
    pub(super) start_progress: *const c_void,
    pub(super) on_progress: *const c_void,
    pub(super) end_progress: *const c_void,
    pub(super) progress_user_data: *mut c_void,
    pub(super) convert_hdr_to_8bit: u8,
}

/// `heif_error_Ok`.
pub(super) const OK: c_int = 0;
/// `heif_suberror_Security_limit_exceeded`.
pub(super) const SECURITY_LIMIT_EXCEEDED: c_int = 1000;
/// `heif_colorspace_RGB`.
pub(super) const COLORSPACE_RGB: c_int = 1;
/// `heif_chroma_interleaved_RGBA`.
pub(super) const CHROMA_INTERLEAVED_RGBA: c_int = 11;
/// `heif_channel_interleaved`.
pub(super) const CHANNEL_INTERLEAVED: c_int = 10;

unsafe extern "C" {
    pub(super) fn heif_init(params: *mut c_void) -> HeifError;
    pub(super) fn heif_context_alloc() -> *mut HeifContext;
    pub(super) fn heif_context_free(context: *mut HeifContext);
    pub(super) fn heif_context_set_maximum_image_size_limit(
        context: *mut HeifContext,
        maximum: c_int,
    );
    pub(super) fn heif_context_set_max_decoding_threads(context: *mut HeifContext, threads: c_int);
    pub(super) fn heif_context_read_from_memory_without_copy(
        context: *mut HeifContext,
        memory: *const c_void,
        size: usize,
        options: *const c_void,
    ) -> HeifError;
    pub(super) fn heif_context_get_primary_image_handle(
        context: *mut HeifContext,
        handle: *mut *mut HeifImageHandle,
    ) -> HeifError;
    pub(super) fn heif_context_get_primary_image_ID(
        context: *mut HeifContext,
        id: *mut u32,
    ) -> HeifError;
    pub(super) fn heif_image_handle_release(handle: *const HeifImageHandle);
    pub(super) fn heif_image_handle_get_width(handle: *const HeifImageHandle) -> c_int;
    pub(super) fn heif_image_handle_get_height(handle: *const HeifImageHandle) -> c_int;
    pub(super) fn heif_image_handle_get_ispe_width(handle: *const HeifImageHandle) -> c_int;
    pub(super) fn heif_image_handle_get_ispe_height(handle: *const HeifImageHandle) -> c_int;
    pub(super) fn heif_image_handle_has_alpha_channel(handle: *const HeifImageHandle) -> c_int;
    pub(super) fn heif_image_handle_is_premultiplied_alpha(handle: *const HeifImageHandle)
    -> c_int;
    pub(super) fn heif_image_handle_get_luma_bits_per_pixel(
        handle: *const HeifImageHandle,
    ) -> c_int;
    pub(super) fn heif_image_handle_get_number_of_thumbnails(
        handle: *const HeifImageHandle,
    ) -> c_int;
    pub(super) fn heif_image_handle_get_list_of_thumbnail_IDs(
        handle: *const HeifImageHandle,
        ids: *mut u32,
        count: c_int,
    ) -> c_int;
    pub(super) fn heif_image_handle_get_thumbnail(
        handle: *const HeifImageHandle,
        id: u32,
        thumbnail: *mut *mut HeifImageHandle,
    ) -> HeifError;
    pub(super) fn heif_decoding_options_alloc() -> *mut HeifDecodingOptions;
    pub(super) fn heif_decoding_options_free(options: *mut HeifDecodingOptions);
    pub(super) fn heif_decode_image(
        handle: *const HeifImageHandle,
        image: *mut *mut HeifImage,
        colorspace: c_int,
        chroma: c_int,
        options: *const HeifDecodingOptions,
    ) -> HeifError;
    pub(super) fn heif_image_get_width(image: *const HeifImage, channel: c_int) -> c_int;
    pub(super) fn heif_image_get_height(image: *const HeifImage, channel: c_int) -> c_int;
    pub(super) fn heif_image_get_bits_per_pixel(image: *const HeifImage, channel: c_int) -> c_int;
    pub(super) fn heif_image_get_plane_readonly(
        image: *const HeifImage,
        channel: c_int,
        stride: *mut c_int,
    ) -> *const u8;
    pub(super) fn heif_image_release(image: *const HeifImage);
}
