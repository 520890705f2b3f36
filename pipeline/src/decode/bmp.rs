//! BMP: its row of the format table. `image` decodes it, with nothing
//! done around its decoder. Plain data.

use image::ImageFormat;

use super::formats::{Decoder, Format, Raster, Signature};

/// BMP's row of the format table.
pub(super) const FORMAT: Format = Format {
    name: "BMP",
    media_types: &["image/bmp"],
    signature: Signature::Magic(&[(0, b"BM")]),
    decoder: Decoder::Image(Raster::of(ImageFormat::Bmp)),
};
