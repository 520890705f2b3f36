//! The picture for an image id: what it looks like, and how to read the id
//! back from its pixels.
//!
//! Owns the pixel layout only; it has no state, no task and no I/O. The
//! server's handlers call [`render`] (on the blocking pool, through
//! the server's image cache) and the tests, the demo and the benchmarks call
//! [`decode_id`] on whatever bitmap a loader produced.
//!
//! # Layout
//!
//! The image is cut into an 8x8 grid of cells. The 28 cells of the outer ring
//! carry the id as black and white squares; the inner 6x6 cells are a colour
//! (the hue follows the id) with the id drawn in large digits for people.
//!
//! ```text
//!  B d d d d d d W      B, W: calibration corners (black, white)
//!  d . . . . . . d      d: 24 data cells, clockwise from the top-left:
//!  d .  1 2 3 4  . d       20 bits of id (least significant first)
//!  d . . . . . . d         then a 4-bit check
//!  W d d d d d d B      .: coloured field with the id in digits
//! ```
//!
//! A cell is 1/8 of the side: 75 pixels in a 600x600 image, 4 pixels in a
//! 32x32 thumbnail. The reader averages the middle half of every cell, so JPEG
//! ringing and the blur of any usual downscale filter stay out of the sample,
//! and it compares cells with the corners' own black and white, so brightness
//! and contrast changes do not matter. The check nibble rejects any single
//! misread cell and any image that is not one of ours.

/// The largest id an image can carry: the ring has 20 data bits.
pub const MAX_ID: u32 = (1 << ID_BITS) - 1;

const GRID: usize = 8;
const RING_CELLS: usize = 4 * (GRID - 1);
const ID_BITS: u32 = 20;
const CHECK_BITS: u32 = 4;
/// Corner cells, as indices into the clockwise ring.
const CORNERS: [usize; 4] = [0, GRID - 1, 2 * (GRID - 1), 3 * (GRID - 1)];
/// The corners' colours: top-left black, top-right white, bottom-right black,
/// bottom-left white.
const CORNER_IS_WHITE: [bool; 4] = [false, true, false, true];
const BLACK: u8 = 20;
const WHITE: u8 = 235;
/// The check mixes in a constant so that id 0 is not an all-black ring.
const CHECK_SALT: u32 = 0b1010;

/// An RGB8 bitmap: `width * height * 3` bytes, row-major.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rgb {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Row-major RGB bytes.
    pub pixels: Vec<u8>,
}

impl Rgb {
    /// Encodes the bitmap as a baseline JPEG (4:2:0) at `quality` (1-100),
    /// as the server sends it.
    ///
    /// ```
    /// let jpeg = fixture_server::picture::render(7, 64, 64).encode_jpeg(85)?;
    /// assert_eq!(&jpeg[..2], &[0xFF, 0xD8]);
    /// # Ok::<(), fixture_server::picture::EncodeError>(())
    /// ```
    pub fn encode_jpeg(&self, quality: u8) -> Result<Vec<u8>, EncodeError> {
        let (width, height) = self.u16_size()?;
        let mut out = Vec::with_capacity(self.pixels.len() / 10);
        jpeg_encoder::Encoder::new(&mut out, quality.clamp(1, 100))
            .encode(&self.pixels, width, height, jpeg_encoder::ColorType::Rgb)
            .map_err(|e| EncodeError(e.to_string()))?;
        Ok(out)
    }

    /// Encodes the bitmap as an 8-bit RGB PNG.
    pub fn encode_png(&self) -> Result<Vec<u8>, EncodeError> {
        let mut out = Vec::with_capacity(self.pixels.len() / 4);
        self.write_with(image::codecs::png::PngEncoder::new(&mut out))?;
        Ok(out)
    }

    /// Encodes an animated GIF of `frames` frames, each shown
    /// `frame_millis` and looping for ever: the bitmap with a light bar
    /// sweeping across its inner field, one step a frame, and back. The
    /// ring, and so the id, is the same in every frame.
    ///
    /// ```
    /// let gif = fixture_server::picture::render(7, 64, 64).encode_animated_gif(4, 100)?;
    /// assert_eq!(&gif[..6], b"GIF89a");
    /// # Ok::<(), fixture_server::picture::EncodeError>(())
    /// ```
    pub fn encode_animated_gif(
        &self,
        frames: u32,
        frame_millis: u32,
    ) -> Result<Vec<u8>, EncodeError> {
        use image::codecs::gif::{GifEncoder, Repeat};
        let (w, h) = (self.width as usize, self.height as usize);
        let (x0, x1) = (cell_span(1, w).0, cell_span(GRID - 2, w).1);
        let (y0, y1) = (cell_span(1, h).0, cell_span(GRID - 2, h).1);
        let mut out = Vec::new();
        let mut encoder = GifEncoder::new_with_speed(&mut out, 30);
        encoder
            .set_repeat(Repeat::Infinite)
            .map_err(|e| EncodeError(e.to_string()))?;
        let steps = frames.max(1) as usize;
        let bar = ((x1 - x0) / 6).max(1);
        for frame in 0..steps {
            // There and back: frame 0 at the left, the middle one at the right.
            let there = (2 * frame).min(2 * steps - 2 * frame);
            let left = x0 + (x1 - x0 - bar) * there / steps.max(1);
            let mut rgba: Vec<u8> = self
                .pixels
                .chunks_exact(3)
                .flat_map(|p| [p[0], p[1], p[2], 255])
                .collect();
            for y in y0..y1 {
                for x in left..(left + bar).min(x1) {
                    rgba[(y * w + x) * 4..(y * w + x) * 4 + 3].fill(WHITE);
                }
            }
            let buffer = image::RgbaImage::from_raw(self.width, self.height, rgba)
                .ok_or_else(|| EncodeError("short frame buffer".into()))?;
            encoder
                .encode_frame(image::Frame::from_parts(
                    buffer,
                    0,
                    0,
                    image::Delay::from_numer_denom_ms(frame_millis, 1),
                ))
                .map_err(|e| EncodeError(e.to_string()))?;
        }
        drop(encoder);
        Ok(out)
    }

    /// Writes the bitmap with one of `image`'s encoders.
    pub(crate) fn write_with(&self, encoder: impl image::ImageEncoder) -> Result<(), EncodeError> {
        encoder
            .write_image(
                &self.pixels,
                self.width,
                self.height,
                image::ExtendedColorType::Rgb8,
            )
            .map_err(|e| EncodeError(e.to_string()))
    }

    pub(crate) fn u16_size(&self) -> Result<(u16, u16), EncodeError> {
        match (u16::try_from(self.width), u16::try_from(self.height)) {
            (Ok(w), Ok(h)) => Ok((w, h)),
            _ => Err(EncodeError(format!(
                "{}x{} is too large for JPEG (65535 on a side)",
                self.width, self.height
            ))),
        }
    }
}

/// An encoder refused a bitmap.
#[derive(Debug, Clone, thiserror::Error)]
#[error("could not encode image: {0}")]
pub struct EncodeError(pub(crate) String);

/// Draws the picture for `id` at `width` x `height`.
///
/// Ids above [`MAX_ID`] cannot be encoded; the caller validates them first,
/// and this function encodes `id & MAX_ID`. Sizes below 8x8 leave no room for
/// the grid, so the result is still an image but [`decode_id`] cannot read it.
///
/// ```
/// let picture = fixture_server::picture::render(42, 64, 64);
/// let rgba: Vec<u8> = picture
///     .pixels
///     .chunks(3)
///     .flat_map(|p| [p[0], p[1], p[2], 255])
///     .collect();
/// assert_eq!(fixture_server::decode_id(&rgba, 64, 64), Some(42));
/// ```
pub fn render(id: u32, width: u32, height: u32) -> Rgb {
    let id = id & MAX_ID;
    let (w, h) = (width as usize, height as usize);
    let mut pixels = vec![0u8; w * h * 3];
    paint_field(&mut pixels, w, h, id);
    paint_digits(&mut pixels, w, h, id);
    let bits = ring_bits(id);
    for (index, white) in bits.iter().enumerate() {
        let (cx, cy) = ring_cell(index);
        let (x0, x1) = cell_span(cx, w);
        let (y0, y1) = cell_span(cy, h);
        let value = if *white { WHITE } else { BLACK };
        for y in y0..y1 {
            pixels[(y * w + x0) * 3..(y * w + x1) * 3].fill(value);
        }
    }
    Rgb {
        width,
        height,
        pixels,
    }
}

/// Reads the id back from an RGBA8 bitmap of a picture made by [`render`],
/// at any size from 16x16 up, after JPEG compression and downscaling.
///
/// Returns `None` when `rgba` is not `width * height * 4` bytes, when the
/// image is too small to hold the grid, or when its ring does not carry a
/// valid id (a different image, a placeholder, a blank texture).
///
/// ```
/// // A blank bitmap carries no id.
/// assert_eq!(fixture_server::decode_id(&[0; 32 * 32 * 4], 32, 32), None);
/// ```
pub fn decode_id(rgba: &[u8], width: u32, height: u32) -> Option<u32> {
    let (w, h) = (width as usize, height as usize);
    if w < GRID || h < GRID || w.checked_mul(h)?.checked_mul(4)? != rgba.len() {
        return None;
    }
    let mut levels = [0f32; RING_CELLS];
    for (index, level) in levels.iter_mut().enumerate() {
        let (cx, cy) = ring_cell(index);
        *level = cell_luma(rgba, w, h, cx, cy);
    }

    let black = (levels[CORNERS[0]] + levels[CORNERS[2]]) / 2.0;
    let white = (levels[CORNERS[1]] + levels[CORNERS[3]]) / 2.0;
    let contrast = white - black;
    if contrast < 64.0 {
        return None;
    }
    let threshold = (black + white) / 2.0;
    // A cell this close to the threshold is a guess, not a reading.
    let margin = contrast * 0.2;
    let mut bits = [false; RING_CELLS];
    for (index, level) in levels.iter().enumerate() {
        if (level - threshold).abs() < margin {
            return None;
        }
        bits[index] = *level > threshold;
    }
    for (corner, white) in CORNERS.iter().zip(CORNER_IS_WHITE) {
        if bits[*corner] != white {
            return None;
        }
    }

    let mut word = 0u32;
    for (position, index) in data_cells().enumerate() {
        if bits[index] {
            word |= 1 << position;
        }
    }
    let id = word & MAX_ID;
    let check = word >> ID_BITS;
    (check == check_nibble(id)).then_some(id)
}

/// The ring's colours for `id`: `true` for white, in clockwise order.
fn ring_bits(id: u32) -> [bool; RING_CELLS] {
    let word = id | (check_nibble(id) << ID_BITS);
    let mut bits = [false; RING_CELLS];
    for (corner, white) in CORNERS.iter().zip(CORNER_IS_WHITE) {
        bits[*corner] = white;
    }
    for (position, index) in data_cells().enumerate() {
        bits[index] = word & (1 << position) != 0;
    }
    bits
}

/// XOR of the id's five nibbles, salted.
fn check_nibble(id: u32) -> u32 {
    let mut check = CHECK_SALT;
    let mut rest = id;
    while rest != 0 {
        check ^= rest & 0xF;
        rest >>= 4;
    }
    check & ((1 << CHECK_BITS) - 1)
}

/// Ring indices of the data cells, in bit order.
fn data_cells() -> impl Iterator<Item = usize> {
    (0..RING_CELLS).filter(|index| !CORNERS.contains(index))
}

/// Grid coordinates of ring cell `index`, clockwise from the top-left corner.
fn ring_cell(index: usize) -> (usize, usize) {
    let side = GRID - 1;
    match index / side {
        0 => (index, 0),
        1 => (side, index - side),
        2 => (side - (index - 2 * side), side),
        _ => (0, side - (index - 3 * side)),
    }
}

/// Pixel span `[start, end)` of grid cell `cell` along a side of `len` pixels.
fn cell_span(cell: usize, len: usize) -> (usize, usize) {
    (cell * len / GRID, (cell + 1) * len / GRID)
}

/// Mean luma of the middle half of a cell.
fn cell_luma(rgba: &[u8], w: usize, h: usize, cx: usize, cy: usize) -> f32 {
    let (xs, xe) = middle_half(cx, w);
    let (ys, ye) = middle_half(cy, h);
    let mut sum = 0u64;
    let mut count = 0u64;
    for y in ys..ye {
        for x in xs..xe {
            let p = &rgba[(y * w + x) * 4..(y * w + x) * 4 + 3];
            sum += luma(p[0], p[1], p[2]) as u64;
            count += 1;
        }
    }
    sum as f32 / count.max(1) as f32
}

/// Pixels whose centres lie in the middle half of cell `cell`: at least the
/// one pixel nearest the cell's centre.
fn middle_half(cell: usize, len: usize) -> (usize, usize) {
    let size = len as f32 / GRID as f32;
    let centre = (cell as f32 + 0.5) * size;
    let lo = centre - size / 4.0;
    let hi = centre + size / 4.0;
    // Pixel i has its centre at i + 0.5.
    let start = (lo - 0.5).ceil().max(0.0) as usize;
    let end = ((hi - 0.5).floor() as usize + 1).min(len);
    if start < end {
        (start, end)
    } else {
        let nearest = (centre as usize).min(len - 1);
        (nearest, nearest + 1)
    }
}

fn luma(r: u8, g: u8, b: u8) -> u32 {
    (299 * r as u32 + 587 * g as u32 + 114 * b as u32) / 1000
}

/// The coloured field: the id's hue, darkening towards the bottom.
fn paint_field(pixels: &mut [u8], w: usize, h: usize, id: u32) {
    // Golden-angle steps keep neighbouring ids far apart in hue.
    let hue = (id as f32 * 137.508) % 360.0;
    let base = hsv_to_rgb(hue, 0.55, 0.85);
    for y in 0..h {
        let shade = 1.0 - 0.3 * (y as f32 / h.max(1) as f32);
        let colour = base.map(|c| (c * shade * 255.0) as u8);
        for pixel in pixels[y * w * 3..(y + 1) * w * 3].chunks_exact_mut(3) {
            pixel.copy_from_slice(&colour);
        }
    }
}

fn hsv_to_rgb(hue: f32, saturation: f32, value: f32) -> [f32; 3] {
    let c = value * saturation;
    let x = c * (1.0 - ((hue / 60.0) % 2.0 - 1.0).abs());
    let m = value - c;
    let (r, g, b) = match (hue / 60.0) as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    [r + m, g + m, b + m]
}

/// 5x7 glyphs for 0-9, one row per byte, most significant of 5 bits leftmost.
const DIGITS: [[u8; 7]; 10] = [
    [0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E],
    [0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E],
    [0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F],
    [0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E],
    [0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02],
    [0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E],
    [0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E],
    [0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08],
    [0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E],
    [0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C],
];

/// The id in large digits, centred in the inner 6x6 cells, white with a dark
/// shadow so it reads on every hue.
fn paint_digits(pixels: &mut [u8], w: usize, h: usize, id: u32) {
    let text = id.to_string();
    let glyphs: Vec<&[u8; 7]> = text
        .bytes()
        .map(|digit| &DIGITS[(digit - b'0') as usize])
        .collect();
    let (inner_x0, inner_x1) = (cell_span(1, w).0, cell_span(GRID - 2, w).1);
    let (inner_y0, inner_y1) = (cell_span(1, h).0, cell_span(GRID - 2, h).1);
    // Each glyph is 5 units wide plus 1 of spacing; the block is 7 units high.
    let units_wide = 6 * glyphs.len() - 1;
    let unit =
        ((inner_x1 - inner_x0) * 9 / 10 / units_wide).min((inner_y1 - inner_y0) * 7 / 10 / 7);
    if unit == 0 {
        return;
    }
    let left = inner_x0 + ((inner_x1 - inner_x0) - units_wide * unit) / 2;
    let top = inner_y0 + ((inner_y1 - inner_y0) - 7 * unit) / 2;
    let shadow = (unit / 4).max(1);
    for (offset, colour) in [(shadow, [25u8, 25, 35]), (0, [250u8, 250, 250])] {
        for (i, glyph) in glyphs.iter().enumerate() {
            for (row, bits) in glyph.iter().enumerate() {
                for col in 0..5 {
                    if bits & (0x10 >> col) == 0 {
                        continue;
                    }
                    let x0 = left + (i * 6 + col) * unit + offset;
                    let y0 = top + row * unit + offset;
                    for y in y0..(y0 + unit).min(h) {
                        for x in x0..(x0 + unit).min(w) {
                            pixels[(y * w + x) * 3..(y * w + x) * 3 + 3].copy_from_slice(&colour);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to_rgba(picture: &Rgb) -> Vec<u8> {
        picture
            .pixels
            .chunks_exact(3)
            .flat_map(|p| [p[0], p[1], p[2], 255])
            .collect()
    }

    #[test]
    fn ring_walks_every_border_cell_once() {
        let mut seen = std::collections::HashSet::new();
        for index in 0..RING_CELLS {
            let (x, y) = ring_cell(index);
            assert!(x == 0 || y == 0 || x == GRID - 1 || y == GRID - 1);
            assert!(seen.insert((x, y)), "cell {x},{y} visited twice");
        }
        assert_eq!(seen.len(), RING_CELLS);
        assert_eq!(data_cells().count(), (ID_BITS + CHECK_BITS) as usize);
    }

    #[test]
    fn raw_pixels_round_trip_at_many_sizes() {
        for (w, h) in [(600, 600), (64, 64), (32, 32), (17, 23), (300, 120), (8, 8)] {
            for id in [0, 1, 7, 199, 9999, 123_456, MAX_ID] {
                let picture = render(id, w, h);
                assert_eq!(
                    decode_id(&to_rgba(&picture), w, h),
                    Some(id),
                    "id {id} at {w}x{h}"
                );
            }
        }
    }

    #[test]
    fn a_single_flipped_cell_is_rejected() {
        let picture = render(4242, 64, 64);
        let clean = to_rgba(&picture);
        for index in data_cells() {
            let mut rgba = clean.clone();
            let (cx, cy) = ring_cell(index);
            let (x0, x1) = cell_span(cx, 64);
            let (y0, y1) = cell_span(cy, 64);
            for y in y0..y1 {
                for x in x0..x1 {
                    let p = (y * 64 + x) * 4;
                    for c in &mut rgba[p..p + 3] {
                        *c = 255 - *c;
                    }
                }
            }
            assert_eq!(decode_id(&rgba, 64, 64), None, "flipped data cell {index}");
        }
    }

    #[test]
    fn wrong_buffer_sizes_are_not_read() {
        assert_eq!(decode_id(&[], 0, 0), None);
        assert_eq!(decode_id(&[0; 16], 2, 2), None);
        assert_eq!(decode_id(&[0; 100], 32, 32), None);
        assert_eq!(decode_id(&[0; 16], u32::MAX, u32::MAX), None);
    }
}
