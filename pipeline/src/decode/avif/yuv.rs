//! YUV: a decoded AV1 picture's planes into 8-bit RGBA, by the file's
//! colour matrix (CICP: identity, BT.601, BT.709, BT.2020, SMPTE 240,
//! FCC, YCgCo) and range, at 8, 10 or 12 bits, subsampled chroma
//! upsampled bilinearly (weights 3:1 from the nearest two samples a side,
//! as libavif's libyuv path and so browsers do); and its alpha plane into
//! a canvas's alpha.
//!
//! Runs inside a decode, on the decode thread; writes only the canvas it
//! is given.

use super::dav1d::{Picture, Plane, Samples};

/// How samples become colours: the matrix (CICP code) and range.
#[derive(Clone, Copy, Debug)]
pub(super) struct Colour {
    pub(super) matrix: u16,
    pub(super) full_range: bool,
}

/// A rectangle: x, y, width, height.
pub(super) type Rect = (u32, u32, u32, u32);

/// An RGBA canvas that shows the image's rectangle `shows`.
pub(super) struct Canvas<'a> {
    pub(super) rgba: &'a mut [u8],
    pub(super) shows: Rect,
}

/// Where a picture lies in the image: its top-left corner.
pub(super) type At = (u32, u32);

/// The part of a picture at `at` (clipped to `within`, the image's size)
/// that the canvas shows: the rectangle in image coordinates.
fn overlap(picture: &Picture, at: At, within: (u32, u32), shows: Rect) -> Option<Rect> {
    let left = at.0.max(shows.0);
    let top = at.1.max(shows.1);
    let right = (u64::from(at.0) + u64::from(picture.width()))
        .min(u64::from(within.0))
        .min(u64::from(shows.0) + u64::from(shows.2));
    let bottom = (u64::from(at.1) + u64::from(picture.height()))
        .min(u64::from(within.1))
        .min(u64::from(shows.1) + u64::from(shows.3));
    (u64::from(left) < right && u64::from(top) < bottom)
        .then(|| (left, top, right as u32 - left, bottom as u32 - top))
}

/// A sample of a plane (0 past its end).
fn sample(plane: &Plane<'_>, x: usize, y: usize) -> u32 {
    let at = y * plane.stride + x.min(plane.width.saturating_sub(1));
    match plane.samples {
        Samples::Eight(samples) => samples.get(at).copied().map_or(0, u32::from),
        Samples::Sixteen(samples) => samples.get(at).copied().map_or(0, u32::from),
    }
}

/// The chroma samples a pixel at `at` (along one side) takes, and the
/// first one's weight: its own when chroma is not halved; when it is, the
/// nearest two (the sample sits between two pixels), 3:1, clamped at the
/// edges.
fn taps(at: usize, halved: bool, length: usize) -> (usize, usize, f32) {
    if !halved {
        return (at, at, 1.0);
    }
    let own = (at >> 1).min(length.saturating_sub(1));
    let other = if at & 1 == 0 {
        own.saturating_sub(1)
    } else {
        (own + 1).min(length.saturating_sub(1))
    };
    (own, other, 0.75)
}

/// A chroma plane's value for the pixel at (`x`, `y`), upsampled.
fn chroma(plane: &Plane<'_>, x: (usize, usize, f32), y: (usize, usize, f32)) -> f32 {
    let row = |row: usize| {
        x.2 * sample(plane, x.0, row) as f32 + (1.0 - x.2) * sample(plane, x.1, row) as f32
    };
    if y.2 == 1.0 {
        row(y.0)
    } else {
        y.2 * row(y.0) + (1.0 - y.2) * row(y.1)
    }
}

/// The luma and chroma weights (Kr, Kb) of a CICP matrix; `None` for
/// YCgCo (and the identity, which the caller takes first), which are not
/// weighted sums.
fn weights(matrix: u16) -> Option<(f32, f32)> {
    Some(match matrix {
        0 | 8 => return None,
        1 => (0.2126, 0.0722),
        4 => (0.30, 0.11),
        7 => (0.212, 0.087),
        9 | 10 => (0.2627, 0.0593),
        // BT.601 (5, 6), and unspecified or unsupported ones, as libavif
        // takes them.
        _ => (0.299, 0.114),
    })
}

/// Writes the colour of `picture`, lying at `at` in an image of size
/// `within`, into the canvas's pixels it covers (alpha opaque).
pub(super) fn colour_into(
    canvas: &mut Canvas<'_>,
    picture: &Picture,
    at: At,
    within: (u32, u32),
    colour: Colour,
) {
    let Some((left, top, width, height)) = overlap(picture, at, within, canvas.shows) else {
        return;
    };
    let Some(luma) = picture.plane(0) else {
        return;
    };
    let chroma_planes = picture.plane(1).zip(picture.plane(2));
    let (ss_x, ss_y) = picture.layout().halved();
    let depth = picture.bit_depth();
    let max = ((1u32 << depth) - 1) as f32;
    let scale = (1u32 << depth.saturating_sub(8)) as f32;
    let half = (1u32 << (depth - 1)) as f32;
    // Samples to [0, 1] luma and [-0.5, 0.5] chroma.
    let (y_offset, y_range, c_range) = if colour.full_range {
        (0.0, max, max)
    } else {
        (16.0 * scale, 219.0 * scale, 224.0 * scale)
    };
    let weights = weights(colour.matrix);
    let canvas_width = canvas.shows.2 as usize;
    for y in top..top + height {
        let py = (y - at.1) as usize;
        let row = (y - canvas.shows.1) as usize * canvas_width;
        let cy = chroma_planes
            .as_ref()
            .map(|(u, _)| taps(py, ss_y, u.height));
        for x in left..left + width {
            let px = (x - at.0) as usize;
            let luma = (sample(&luma, px, py) as f32 - y_offset) / y_range;
            let rgb = match (&chroma_planes, cy) {
                (Some((u, v)), Some(cy)) => {
                    let cx = taps(px, ss_x, u.width);
                    let (u, v) = (chroma(u, cx, cy), chroma(v, cx, cy));
                    if colour.matrix == 0 {
                        // Identity (GBR): Y is green, U blue, V red.
                        [(v - y_offset) / y_range, luma, (u - y_offset) / y_range]
                    } else {
                        to_rgb(luma, (u - half) / c_range, (v - half) / c_range, weights)
                    }
                }
                _ => [luma; 3],
            };
            let at = (row + (x - canvas.shows.0) as usize) * 4;
            if let Some(pixel) = canvas.rgba.get_mut(at..at + 4) {
                for (out, value) in pixel.iter_mut().zip(rgb) {
                    *out = (value * 255.0 + 0.5).clamp(0.0, 255.0) as u8;
                }
                pixel[3] = 255;
            }
        }
    }
}

/// One pixel's RGB in [0, 1] from luma in [0, 1] and chroma in [-0.5,
/// 0.5], by the matrix's weights, or YCgCo's sums without them.
fn to_rgb(luma: f32, cb: f32, cr: f32, weights: Option<(f32, f32)>) -> [f32; 3] {
    match weights {
        Some((kr, kb)) => {
            let kg = 1.0 - kr - kb;
            let r = luma + (2.0 - 2.0 * kr) * cr;
            let b = luma + (2.0 - 2.0 * kb) * cb;
            let g = luma - ((2.0 - 2.0 * kr) * kr * cr + (2.0 - 2.0 * kb) * kb * cb) / kg;
            [r, g, b]
        }
        // YCgCo: Cb carries Cg, Cr carries Co.
        None => {
            let t = luma - cb;
            [t + cr, luma + cb, t - cr]
        }
    }
}

/// Writes the alpha of `picture` (its luma plane), lying at `at` in an
/// image of size `within`, into the canvas's alpha, expanding a limited
/// range.
pub(super) fn alpha_into(
    canvas: &mut Canvas<'_>,
    picture: &Picture,
    at: At,
    within: (u32, u32),
    full_range: bool,
) {
    let Some((left, top, width, height)) = overlap(picture, at, within, canvas.shows) else {
        return;
    };
    let Some(plane) = picture.plane(0) else {
        return;
    };
    let depth = picture.bit_depth();
    let scale = (1u32 << depth.saturating_sub(8)) as f32;
    let (offset, range) = if full_range {
        (0.0, ((1u32 << depth) - 1) as f32)
    } else {
        (16.0 * scale, 219.0 * scale)
    };
    let canvas_width = canvas.shows.2 as usize;
    for y in top..top + height {
        let row = (y - canvas.shows.1) as usize * canvas_width;
        for x in left..left + width {
            let value =
                (sample(&plane, (x - at.0) as usize, (y - at.1) as usize) as f32 - offset) / range;
            let at = (row + (x - canvas.shows.0) as usize) * 4 + 3;
            if let Some(alpha) = canvas.rgba.get_mut(at) {
                *alpha = (value * 255.0 + 0.5).clamp(0.0, 255.0) as u8;
            }
        }
    }
}

/// Undoes premultiplication: each colour divided by its alpha.
pub(super) fn unpremultiply(rgba: &mut [u8]) {
    for pixel in rgba.chunks_exact_mut(4) {
        let alpha = u32::from(pixel[3]);
        if alpha == 0 || alpha == 255 {
            continue;
        }
        for channel in &mut pixel[..3] {
            *channel = ((u32::from(*channel) * 255 + alpha / 2) / alpha).min(255) as u8;
        }
    }
}
