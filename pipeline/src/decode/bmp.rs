//! BMP: its row of the format table. `image` decodes it, with nothing
//! done around its decoder. Plain data.

use image::ImageFormat;

use super::format::{self, Decoder, Format, Raster};

/// BMP's row of the format table.
pub(super) const FORMAT: Format = Format {
    name: "BMP",
    media_types: &["image/bmp"],
    detect: |bytes| format::is(bytes, ImageFormat::Bmp),
    decoder: Decoder::Image(Raster::of(ImageFormat::Bmp)),
};
