//! YUV: a decoded AV1 picture's planes into 8-bit RGBA, by the file's
//! colour matrix (CICP: identity, BT.601, BT.709, BT.2020, SMPTE 240,
//! FCC, YCgCo) and range, at 8, 10 or 12 bits, subsampled chroma
//! upsampled bilinearly (weights 3:1 from the nearest two samples a side,
//! as libavif's libyuv path and so browsers do); and its alpha plane into
//! a canvas's alpha. Row by row: a chroma row is blended down once per
//! output row and across by taps worked out once per picture.
//!
//! Runs inside a decode, on the decode thread; writes only the canvas it
//! is given.

use super::dav1d::{Picture, Plane, Samples};
use super::still::Colour;

/// A rectangle: x, y, width, height.
pub(super) type Rect = (u32, u32, u32, u32);

/// An RGBA canvas that shows the image's rectangle `shows`.
pub(super) struct Canvas<'a> {
    pub(super) rgba: &'a mut [u8],
    pub(super) shows: Rect,
}

/// Where a picture lies in the image: its top-left corner.
pub(super) type At = (u32, u32);

/// Writes the colour of `picture`, lying at `at` in an image of size
/// `within`, into the canvas's pixels it covers (alpha opaque).
pub(super) fn colour_into(
    canvas: &mut Canvas<'_>,
    picture: &Picture,
    at: At,
    within: (u32, u32),
    colour: Colour,
) {
    let Some(luma) = picture.plane(0) else {
        return;
    };
    let chroma = picture.plane(1).zip(picture.plane(2));
    match luma.samples {
        Samples::Eight(_) => colour_rows::<u8>(canvas, picture, at, within, colour, &luma, chroma),
        Samples::Sixteen(_) => {
            colour_rows::<u16>(canvas, picture, at, within, colour, &luma, chroma)
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
    let Some(plane) = picture.plane(0) else {
        return;
    };
    let (offset, scale) = luma_scale(picture.bit_depth(), full_range);
    match &plane.samples {
        Samples::Eight(_) => {
            let Some(alpha) = Rows::<u8>::of(&plane) else {
                return;
            };
            each_row(canvas, picture, at, within, |py, px, pixels| {
                alpha_row(alpha.row(py), px, pixels, offset, scale)
            });
        }
        Samples::Sixteen(_) => {
            let Some(alpha) = Rows::<u16>::of(&plane) else {
                return;
            };
            each_row(canvas, picture, at, within, |py, px, pixels| {
                alpha_row(alpha.row(py), px, pixels, offset, scale)
            });
        }
    }
}

/// A sample type of a plane: 8 bits, or 10 and 12 in 16.
trait Sample: Copy {
    fn value(self) -> f32;
    fn rows<'a>(samples: &Samples<'a>) -> Option<&'a [Self]>;
}

impl Sample for u8 {
    fn value(self) -> f32 {
        f32::from(self)
    }

    fn rows<'a>(samples: &Samples<'a>) -> Option<&'a [u8]> {
        match samples {
            Samples::Eight(samples) => Some(samples),
            Samples::Sixteen(_) => None,
        }
    }
}

impl Sample for u16 {
    fn value(self) -> f32 {
        f32::from(self)
    }

    fn rows<'a>(samples: &Samples<'a>) -> Option<&'a [u16]> {
        match samples {
            Samples::Sixteen(samples) => Some(samples),
            Samples::Eight(_) => None,
        }
    }
}

/// A plane's rows of one sample type, each `width` long: every row up to
/// `height` is checked to be there when it is made.
struct Rows<'a, T> {
    samples: &'a [T],
    stride: usize,
    width: usize,
    height: usize,
}

impl<'a, T: Sample> Rows<'a, T> {
    fn of(plane: &Plane<'a>) -> Option<Self> {
        let samples = T::rows(&plane.samples)?;
        let last = plane.height.checked_sub(1)?;
        let end = (last * plane.stride).checked_add(plane.width)?;
        (plane.width > 0 && end <= samples.len()).then_some(Self {
            samples,
            stride: plane.stride,
            width: plane.width,
            height: plane.height,
        })
    }

    /// Row `y`, or the last row past the end.
    fn row(&self, y: usize) -> &'a [T] {
        let start = y.min(self.height - 1) * self.stride;
        &self.samples[start..start + self.width]
    }
}

/// The canvas rows a picture at `at` (clipped to `within`, the image's
/// size) covers: for each, `row` gets the picture's row, its first column
/// there, and the canvas's RGBA pixels it covers.
fn each_row(
    canvas: &mut Canvas<'_>,
    picture: &Picture,
    at: At,
    within: (u32, u32),
    mut row: impl FnMut(usize, usize, &mut [u8]),
) {
    let shows = canvas.shows;
    let left = at.0.max(shows.0);
    let top = at.1.max(shows.1);
    let right = (u64::from(at.0) + u64::from(picture.width()))
        .min(u64::from(within.0))
        .min(u64::from(shows.0) + u64::from(shows.2));
    let bottom = (u64::from(at.1) + u64::from(picture.height()))
        .min(u64::from(within.1))
        .min(u64::from(shows.1) + u64::from(shows.3));
    if u64::from(left) >= right || u64::from(top) >= bottom {
        return;
    }
    let width = (right - u64::from(left)) as usize;
    for y in top..bottom as u32 {
        let start = ((y - shows.1) as usize * shows.2 as usize + (left - shows.0) as usize) * 4;
        let Some(pixels) = canvas.rgba.get_mut(start..start + width * 4) else {
            return;
        };
        row((y - at.1) as usize, (left - at.0) as usize, pixels);
    }
}

/// The chroma samples a pixel at `at` (along one side) takes, and the
/// first one's weight: its own when chroma is not halved; when it is, the
/// nearest two (the sample sits between two pixels), 3:1, clamped at the
/// edges.
fn taps(at: usize, halved: bool, length: usize) -> (usize, usize, f32) {
    let last = length.saturating_sub(1);
    if !halved {
        return (at.min(last), at.min(last), 1.0);
    }
    let own = (at >> 1).min(last);
    let other = if at & 1 == 0 {
        own.saturating_sub(1)
    } else {
        (own + 1).min(last)
    };
    (own, other, 0.75)
}

/// Where luma's scale starts, and the factor to [0, 1].
fn luma_scale(depth: u32, full_range: bool) -> (f32, f32) {
    if full_range {
        (0.0, 1.0 / ((1u32 << depth) - 1) as f32)
    } else {
        let step = (1u32 << depth.saturating_sub(8)) as f32;
        (16.0 * step, 1.0 / (219.0 * step))
    }
}

/// How centred chroma becomes RGB.
enum Matrix {
    /// R = Y + r·Cr, G = Y − g_cb·Cb − g_cr·Cr, B = Y + b·Cb.
    Weighted {
        r: f32,
        g_cb: f32,
        g_cr: f32,
        b: f32,
    },
    /// YCgCo: Cb carries Cg, Cr carries Co.
    YCgCo,
    /// GBR: Y is green, U blue, V red, each on luma's scale.
    Identity,
}

impl Matrix {
    fn of(matrix: u16) -> Self {
        let (kr, kb) = match matrix {
            0 => return Self::Identity,
            8 => return Self::YCgCo,
            1 => (0.2126, 0.0722),
            4 => (0.30, 0.11),
            7 => (0.212, 0.087),
            9 | 10 => (0.2627, 0.0593),
            // BT.601 (5, 6), and unspecified or unsupported ones, as
            // libavif takes them.
            _ => (0.299, 0.114),
        };
        let kg = 1.0 - kr - kb;
        Self::Weighted {
            r: 2.0 - 2.0 * kr,
            g_cb: (2.0 - 2.0 * kb) * kb / kg,
            g_cr: (2.0 - 2.0 * kr) * kr / kg,
            b: 2.0 - 2.0 * kb,
        }
    }
}

/// [`colour_into`] for samples of type `T`.
fn colour_rows<T: Sample>(
    canvas: &mut Canvas<'_>,
    picture: &Picture,
    at: At,
    within: (u32, u32),
    colour: Colour,
    luma: &Plane<'_>,
    chroma: Option<(Plane<'_>, Plane<'_>)>,
) {
    let Some(luma) = Rows::<T>::of(luma) else {
        return;
    };
    let depth = picture.bit_depth();
    let (y_offset, y_scale) = luma_scale(depth, colour.full_range);
    let half = (1u32 << (depth - 1)) as f32;
    let c_scale = if colour.full_range {
        y_scale
    } else {
        1.0 / (224.0 * (1u32 << depth.saturating_sub(8)) as f32)
    };
    let matrix = Matrix::of(colour.matrix);
    let chroma = chroma.and_then(|(u, v)| Some((Rows::<T>::of(&u)?, Rows::<T>::of(&v)?)));
    let Some((u, v)) = chroma else {
        each_row(canvas, picture, at, within, |py, px, pixels| {
            let row = luma.row(py);
            for (pixel, &y) in pixels.chunks_exact_mut(4).zip(&row[px..]) {
                let grey = to_byte((y.value() - y_offset) * y_scale);
                pixel.copy_from_slice(&[grey, grey, grey, 255]);
            }
        });
        return;
    };
    let (halved_x, halved_y) = picture.layout().halved();
    let across: Vec<(usize, usize, f32)> = (0..luma.width)
        .map(|x| taps(x, halved_x, u.width))
        .collect();
    // A chroma row blended down for the output row, U then V.
    let mut line = vec![0.0f32; u.width * 2];
    each_row(canvas, picture, at, within, |py, px, pixels| {
        let (top, bottom, weight) = taps(py, halved_y, u.height);
        for (plane, line) in [&u, &v].into_iter().zip(line.chunks_exact_mut(u.width)) {
            let (top, bottom) = (plane.row(top), plane.row(bottom));
            for ((out, a), b) in line.iter_mut().zip(top).zip(bottom) {
                *out = weight * a.value() + (1.0 - weight) * b.value();
            }
        }
        let (u_line, v_line) = line.split_at(u.width);
        let row = luma.row(py);
        for ((pixel, &y), &(a, b, w)) in pixels
            .chunks_exact_mut(4)
            .zip(&row[px..])
            .zip(&across[px..])
        {
            let cu = w * u_line[a] + (1.0 - w) * u_line[b];
            let cv = w * v_line[a] + (1.0 - w) * v_line[b];
            let y = (y.value() - y_offset) * y_scale;
            let rgb = match matrix {
                Matrix::Weighted { r, g_cb, g_cr, b } => {
                    let (cb, cr) = ((cu - half) * c_scale, (cv - half) * c_scale);
                    [y + r * cr, y - g_cb * cb - g_cr * cr, y + b * cb]
                }
                Matrix::YCgCo => {
                    let (cg, co) = ((cu - half) * c_scale, (cv - half) * c_scale);
                    let t = y - cg;
                    [t + co, y + cg, t - co]
                }
                Matrix::Identity => [(cv - y_offset) * y_scale, y, (cu - y_offset) * y_scale],
            };
            pixel.copy_from_slice(&[to_byte(rgb[0]), to_byte(rgb[1]), to_byte(rgb[2]), 255]);
        }
    });
}

/// An alpha row into the canvas's alpha.
fn alpha_row<T: Sample>(row: &[T], px: usize, pixels: &mut [u8], offset: f32, scale: f32) {
    for (pixel, &alpha) in pixels.chunks_exact_mut(4).zip(&row[px..]) {
        pixel[3] = to_byte((alpha.value() - offset) * scale);
    }
}

/// A value in [0, 1] as a byte, rounded and clamped.
fn to_byte(value: f32) -> u8 {
    (value * 255.0 + 0.5).clamp(0.0, 255.0) as u8
}
