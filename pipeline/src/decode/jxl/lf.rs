//! A JPEG XL's LF image: the mean of each 8x8 block of a VarDCT frame,
//! which its LF groups hold before any of its HF passes. Decoding only
//! these gives the picture at an eighth of its size, as a JPEG's DC scan
//! does, for a small part of a whole decode's time and memory; here it is
//! read with jxl-oxide's frame parser and made into 8-bit samples in the
//! image's colour space. Only a plain frame is read this way (see
//! [`render`]); any other is left to the whole render.
//!
//! Runs on a decode thread; keeps nothing.

use jxl_color::{
    ColorEncodingWithProfile, ColorTransform, ColourEncoding, ColourSpace, RenderingIntent,
};
use jxl_frame::FrameHeader;
use jxl_frame::data::{LfGroup, TocGroupKind};
use jxl_oxide::Frame;
use jxl_oxide::JxlImage;
use jxl_oxide::frame::{BlendMode, Encoding, FrameType};

use super::Failure;
use crate::decode::resize::{Layout, Pixels};

/// Whether the first shown frame is one [`render`] reads, as far as its
/// header tells: a keyframe (not a layer shown under the next), a whole
/// VarDCT frame of colour alone (no alpha or other extra channel, no LF
/// frame, no upsampling) that replaces whatever was before it (no crop,
/// no blending) and has nothing drawn over its LF from an earlier frame
/// (patches) or as strokes (splines), which only the whole render draws;
/// its colour XYB to a colour space told by name, RGB, or a JPEG's YCbCr.
/// Noise and the restoration filters barely change an eighth of it.
/// `None` before its header is read.
pub(super) fn readable(image: &JxlImage) -> Option<bool> {
    Some(read_as(image)?.is_some())
}

/// How the first shown frame's LF becomes colour, where [`readable`]
/// says it is read; `Some(None)` where it is not, `None` before its
/// header is read.
fn read_as(image: &JxlImage) -> Option<Option<Colour>> {
    let header = image.frame_by_keyframe(0)?.header();
    let plain = image.image_header().metadata.ec_info.is_empty()
        && header.is_keyframe()
        && header.frame_type == FrameType::RegularFrame
        && header.encoding == Encoding::VarDct
        && !header.flags.use_lf_frame()
        && !header.flags.patches()
        && !header.flags.splines()
        && header.upsampling == 1
        && !header.have_crop
        && header.blending_info.mode == BlendMode::Replace;
    Some(if plain { colour_of(image) } else { None })
}

/// Whether all of `frame`'s LF is read: its global part and every LF
/// group (the whole frame, when it is one group).
pub(super) fn loaded(frame: &Frame) -> bool {
    frame
        .toc()
        .iter_bitstream_order()
        .all(|group| match group.kind {
            TocGroupKind::All | TocGroupKind::LfGlobal | TocGroupKind::LfGroup(_) => frame
                .data(group.kind)
                .is_some_and(|data| data.len() == group.size as usize),
            TocGroupKind::HfGlobal | TocGroupKind::GroupPass { .. } => true,
        })
}

/// The first shown frame's LF image, `ceil(width / 8)` by
/// `ceil(height / 8)` as coded (not turned upright), from `image` read
/// whole or as far as that LF: `None` when the frame is not one this
/// reads ([`readable`]). Errors are the file's, and an LF not all read.
pub(super) fn render(image: &JxlImage) -> Result<Option<Pixels>, Failure> {
    let (Some(frame), Some(Some(colour))) = (image.frame_by_keyframe(0), read_as(image)) else {
        return Ok(None);
    };
    if !loaded(frame) {
        return Err("the file ends inside its first frame's LF".into());
    }
    let header = frame.header();
    let lf_global = frame
        .try_parse_lf_global::<i32>()
        .ok_or("the file ends before its first frame's LF")??;
    let Some(vardct) = lf_global.vardct.as_ref() else {
        return Ok(None);
    };
    let size = &image.image_header().size;
    if (header.width, header.height) != (size.width, size.height) {
        return Err(format!(
            "its frame is {}x{}, where the image is {}x{}",
            header.width, header.height, size.width, size.height
        )
        .into());
    }
    let (width, height) = (
        header.width.div_ceil(8) as usize,
        header.height.div_ceil(8) as usize,
    );
    let shifts = shifts(header.jpeg_upsampling);
    let subsampled = shifts.iter().any(|&shift| shift != (0, 0));
    if subsampled && !header.flags.skip_adaptive_lf_smoothing() {
        return Err(
            "its chroma is subsampled and its LF smoothed, which the format forbids".into(),
        );
    }
    let quantizer = &vardct.quantizer;
    let dequant = &lf_global.lf_dequant;
    let scale_inv = f64::from(quantizer.global_scale) * f64::from(quantizer.quant_lf);
    let steps = [dequant.m_x_lf, dequant.m_y_lf, dequant.m_b_lf]
        .map(|m| (512.0 * f64::from(m) / scale_inv) as f32);
    let read = |index| {
        frame.try_parse_lf_group::<i32>(Some(vardct), lf_global.gmodular.ma_config(), None, index)
    };
    let mut planes = dequantized(header, shifts, steps, read)?;
    if !subsampled {
        let correlation = &vardct.lf_chan_corr;
        let factor = correlation.colour_factor as f32;
        let from_luma = [
            correlation.base_correlation_x + (correlation.x_factor_lf as f32 - 128.0) / factor,
            correlation.base_correlation_b + (correlation.b_factor_lf as f32 - 128.0) / factor,
        ];
        chroma_from_luma(&mut planes, from_luma);
    }
    if !header.flags.skip_adaptive_lf_smoothing() {
        smooth(&mut planes, width, height, steps);
    }
    let (layout, data) = coloured(planes, colour)?;
    Ok(Some(Pixels {
        width: width as u32,
        height: height as u32,
        layout,
        data,
    }))
}

/// The frame's LF groups, each read by `read`, dequantized by `steps`
/// into three planes (X, Y, B; Cb, Y, Cr for a JPEG's) of the LF's size,
/// chroma halved by `shifts` made whole again.
fn dequantized(
    header: &FrameHeader,
    shifts: [(u32, u32); 3],
    steps: [f32; 3],
    read: impl Fn(u32) -> Option<Result<LfGroup<i32>, jxl_frame::Error>>,
) -> Result<[Vec<f32>; 3], Failure> {
    let (width, height) = (
        header.width.div_ceil(8) as usize,
        header.height.div_ceil(8) as usize,
    );
    // Chroma subsampled (a JPEG's) covers whole blocks of the luma.
    let (padded_width, padded_height) = (
        width.next_multiple_of(1 << shifts.iter().map(|s| s.0).max().unwrap_or(0)),
        height.next_multiple_of(1 << shifts.iter().map(|s| s.1).max().unwrap_or(0)),
    );
    let mut planes: [Plane; 3] =
        std::array::from_fn(|c| Plane::new(padded_width, padded_height, shifts[c]));
    let group_dim = header.group_dim() as usize;
    let per_row = header.lf_groups_per_row() as usize;
    for index in 0..header.num_lf_groups() {
        let group = read(index).ok_or("the file ends inside its LF")??;
        let coefficients = group
            .lf_coeff
            .as_ref()
            .ok_or("an LF group without its LF")?;
        let channels = coefficients
            .lf_quant
            .image()
            .map(|image| image.image_channels())
            .filter(|channels| channels.len() == 3)
            .ok_or("an LF group without three channels")?;
        let at = (
            (index as usize % per_row) * group_dim,
            (index as usize / per_row) * group_dim,
        );
        let extra = 1i32 << coefficients.extra_precision;
        // Stored Y, X, B.
        for (plane, (channel, step)) in
            planes
                .iter_mut()
                .zip([(1, steps[0]), (0, steps[1]), (2, steps[2])])
        {
            let grid = &channels[channel];
            plane.put(at, grid.width(), grid.buf(), step / extra as f32);
        }
    }
    Ok(planes.map(|plane| {
        cropped(
            plane.whole(padded_width, padded_height),
            padded_width,
            width,
            height,
        )
    }))
}

/// The LF's `planes` made the image's colour, in 8-bit samples.
fn coloured(mut planes: [Vec<f32>; 3], colour: Colour) -> Result<(Layout, Vec<u8>), Failure> {
    let [x, y, b] = &mut planes;
    let channels = match colour {
        Colour::Xyb(transform) => transform.run(&mut [&mut x[..], &mut y[..], &mut b[..]])?,
        Colour::YCbCr => {
            jxl_color::ycbcr_to_rgb([&mut x[..], &mut y[..], &mut b[..]]);
            3
        }
        Colour::Rgb => 3,
    };
    let eight = |value: f32| (value.clamp(0.0, 1.0) * 255.0 + 0.5) as u8;
    match channels {
        1 => Ok((Layout::Luma, x.iter().map(|&v| eight(v)).collect())),
        3 => Ok((
            Layout::Rgb,
            x.iter()
                .zip(y.iter())
                .zip(b.iter())
                .flat_map(|((&r, &g), &b)| [eight(r), eight(g), eight(b)])
                .collect(),
        )),
        other => Err(format!("its colour became {other} channels").into()),
    }
}

/// How the LF's samples become the image's colour.
enum Colour {
    /// XYB, to the colour space the image was made in.
    Xyb(ColorTransform),
    /// A JPEG's YCbCr, kept in the JPEG's own colour space.
    YCbCr,
    /// RGB as it is, in the image's colour space.
    Rgb,
}

/// How the image's colour is made, or `None` where only the whole render
/// knows (XYB to a colour space given by an ICC profile it cannot name,
/// or grey not coded as XYB).
fn colour_of(image: &JxlImage) -> Option<Colour> {
    let metadata = &image.image_header().metadata;
    if !metadata.xyb_encoded {
        let grey = metadata.colour_encoding.colour_space() == ColourSpace::Grey;
        let ycbcr = image.frame_by_keyframe(0)?.header().do_ycbcr;
        return match (grey, ycbcr) {
            (true, _) => None,
            (false, true) => Some(Colour::YCbCr),
            (false, false) => Some(Colour::Rgb),
        };
    }
    let named = match &metadata.colour_encoding {
        ColourEncoding::Enum(encoding) => encoding.clone(),
        ColourEncoding::IccProfile(_) => {
            let parsed = ColorEncodingWithProfile::with_icc(image.original_icc()?).ok()?;
            match parsed.encoding() {
                ColourEncoding::Enum(encoding) if parsed.icc_profile().is_empty() => {
                    encoding.clone()
                }
                _ => return None,
            }
        }
    };
    if matches!(named.colour_space, ColourSpace::Xyb | ColourSpace::Unknown) {
        return None;
    }
    ColorTransform::xyb_to_enum(
        RenderingIntent::Perceptual,
        &named,
        &metadata.opsin_inverse_matrix,
        &metadata.tone_mapping,
    )
    .ok()
    .map(Colour::Xyb)
}

/// Each channel's (horizontal, vertical) halving, by a JPEG's chroma
/// subsampling as the frame tells it (all `(0, 0)` for any other).
fn shifts(upsampling: [u32; 3]) -> [(u32, u32); 3] {
    let wide = upsampling.iter().any(|&u| u == 1 || u == 2);
    let tall = upsampling.iter().any(|&u| u == 1 || u == 3);
    upsampling.map(|u| match u {
        0 => (u32::from(wide), u32::from(tall)),
        2 => (0, u32::from(tall)),
        3 => (u32::from(wide), 0),
        _ => (0, 0),
    })
}

/// One channel of the LF image, at its own (perhaps halved) size.
struct Plane {
    samples: Vec<f32>,
    width: usize,
    height: usize,
    shift: (u32, u32),
}

impl Plane {
    fn new(width: usize, height: usize, shift: (u32, u32)) -> Self {
        let (width, height) = (width >> shift.0, height >> shift.1);
        Self {
            samples: vec![0.0; width * height],
            width,
            height,
            shift,
        }
    }

    /// An LF group's quantized samples, `stride` a row, placed at `at`
    /// (in full-size LF pixels) and scaled by `step`; what falls outside
    /// the plane is dropped.
    fn put(&mut self, at: (usize, usize), stride: usize, quantized: &[i32], step: f32) {
        let (left, top) = (at.0 >> self.shift.0, at.1 >> self.shift.1);
        if stride == 0 || left >= self.width {
            return;
        }
        let columns = stride.min(self.width - left);
        for (row, source) in quantized.chunks_exact(stride).enumerate() {
            let Some(start) = (top + row)
                .checked_mul(self.width)
                .filter(|_| top + row < self.height)
            else {
                break;
            };
            let target = &mut self.samples[start + left..start + left + columns];
            for (out, &q) in target.iter_mut().zip(source) {
                *out = q as f32 * step;
            }
        }
    }

    /// The plane at `width` x `height`, each sample repeated over the
    /// pixels it was halved from.
    fn whole(self, width: usize, height: usize) -> Vec<f32> {
        if self.shift == (0, 0) {
            return self.samples;
        }
        let mut out = Vec::with_capacity(width * height);
        for y in 0..height {
            let row = ((y >> self.shift.1).min(self.height.saturating_sub(1))) * self.width;
            out.extend((0..width).map(|x| {
                let column = (x >> self.shift.0).min(self.width.saturating_sub(1));
                self.samples.get(row + column).copied().unwrap_or(0.0)
            }));
        }
        out
    }
}

/// The top-left `width` x `height` of a plane `stride` wide.
fn cropped(plane: Vec<f32>, stride: usize, width: usize, height: usize) -> Vec<f32> {
    if stride == width {
        let mut plane = plane;
        plane.truncate(width * height);
        return plane;
    }
    plane
        .chunks_exact(stride)
        .take(height)
        .flat_map(|row| &row[..width])
        .copied()
        .collect()
}

/// X and B given their parts from Y, by the frame's LF correlation:
/// `[kx, kb]` of Y added to each.
fn chroma_from_luma(planes: &mut [Vec<f32>; 3], [kx, kb]: [f32; 2]) {
    let [x, y, b] = planes;
    for ((x, &y), b) in x.iter_mut().zip(y.iter()).zip(b.iter_mut()) {
        *x += kx * y;
        *b += kb * y;
    }
}

/// The LF's adaptive smoothing (JPEG XL's "adaptive LF smoothing"): each
/// inner sample moves towards a weighted mean of its eight neighbours,
/// less the more any channel differs from that mean, by its
/// quantization `steps`.
fn smooth(planes: &mut [Vec<f32>; 3], width: usize, height: usize, steps: [f32; 3]) {
    const SELF: f32 = 0.052_262_735;
    const SIDE: f32 = 0.203_451_4;
    const DIAGONAL: f32 = 0.033_482_92;
    if width <= 2 || height <= 2 {
        return;
    }
    let source = planes.clone();
    for row in 1..height - 1 {
        for column in 1..width - 1 {
            let at = row * width + column;
            let mut means = [0.0f32; 3];
            let mut gap = 0.5f32;
            for (c, plane) in source.iter().enumerate() {
                let side = plane[at - 1] + plane[at + 1] + plane[at - width] + plane[at + width];
                let diagonal = plane[at - width - 1]
                    + plane[at - width + 1]
                    + plane[at + width - 1]
                    + plane[at + width + 1];
                means[c] = plane[at] * SELF + side * SIDE + diagonal * DIAGONAL;
                gap = gap.max((means[c] - plane[at]).abs() / steps[c]);
            }
            let weight = (3.0 - 4.0 * gap).max(0.0);
            for (c, plane) in planes.iter_mut().enumerate() {
                let own = source[c][at];
                plane[at] = (means[c] - own) * weight + own;
            }
        }
    }
}
