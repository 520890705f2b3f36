//! The image's DC as the DC-scan decoder (`dc_scans.rs`) fills it in, and
//! its last step: from each block's DC coefficient to the image at 1/8 of
//! its size, RGB or grey.
//!
//! Runs inside a decode, on the decode thread that called it; keeps nothing.

use super::dc_headers::Tables;
use crate::decode::resize::{Layout, Pixels};

/// What a progressive JPEG's markers say, up to where its DC is complete.
pub(super) struct Frame {
    pub(super) width: u32,
    pub(super) height: u32,
    pub(super) components: Vec<Component>,
    /// MCUs across and down the image (an interleaved scan's grid).
    pub(super) mcus_across: usize,
    pub(super) mcus_down: usize,
    pub(super) h_max: usize,
    pub(super) v_max: usize,
}

pub(super) struct Component {
    pub(super) id: u8,
    pub(super) h: usize,
    pub(super) v: usize,
    pub(super) quant_table: usize,
    /// The DC of each block, padded to whole MCUs: `mcus_across * h`
    /// blocks a row.
    pub(super) dc: Vec<i16>,
    /// The DC's quantisation step, from its table when its first scan began.
    pub(super) step: i32,
    /// The lowest bit of the DC known so far, once its first scan is read.
    pub(super) known_from_bit: Option<u8>,
}

impl Component {
    pub(super) fn stride(&self, frame_mcus_across: usize) -> usize {
        frame_mcus_across * self.h
    }
}

/// The image at 1/8: each block's DC as its pixels' value (libjpeg's 1x1
/// inverse DCT), chroma repeated over the blocks it covers, then turned to
/// RGB. This is libjpeg's 1/8 but for 4:2:0 chroma, which libjpeg makes
/// from each block's first three AC coefficients too (a 2x2 inverse DCT):
/// here a colour is one value over 16x16 pixels, as it is in the DC; and
/// but for a DC whose last bits come after the AC scans (libjpeg's own
/// script sends the last bit there), taken at the middle of its values.
/// Allocates one 1/8 plane per component besides the output
/// (`JpegLayout::dc_decoder_bytes` counts them).
pub(super) fn to_pixels(frame: &Frame, tables: &Tables) -> Pixels {
    let width = (frame.width as usize).div_ceil(8);
    let height = (frame.height as usize).div_ceil(8);
    let mut samples: Vec<Vec<u8>> = frame
        .components
        .iter()
        .map(|component| {
            // Bits still to come count as the middle of what they may be
            // (0 to 2^unknown - 1): in halves, the DC is 2 dc + 2^unknown
            // - 1. Its pixels' value is the DC over 8, rounded, plus 128.
            let unknown = component.known_from_bit.unwrap_or(0);
            let middle = (1i64 << unknown) - 1;
            let step = i64::from(component.step);
            let level = |dc: i16| {
                let halves = (2 * i64::from(dc) + middle) * step;
                (((halves + 8) >> 4) + 128).clamp(0, 255) as u8
            };
            let stride = component.stride(frame.mcus_across);
            let columns: Vec<usize> = (0..width).map(|x| x * component.h / frame.h_max).collect();
            let mut plane = Vec::with_capacity(width * height);
            for y in 0..height {
                let row = &component.dc[(y * component.v / frame.v_max) * stride..];
                plane.extend(columns.iter().map(|&x| level(row[x])));
            }
            plane
        })
        .collect();
    if samples.len() == 1 {
        return Pixels {
            width: width as u32,
            height: height as u32,
            layout: Layout::Luma,
            data: samples.remove(0),
        };
    }
    let data = match &samples[..] {
        [first, second, third] if rgb(frame, tables) => first
            .iter()
            .zip(second)
            .zip(third)
            .flat_map(|((&r, &g), &b)| [r, g, b])
            .collect(),
        [y, cb, cr] => y
            .iter()
            .zip(cb)
            .zip(cr)
            .flat_map(|((&y, &cb), &cr)| ycbcr_to_rgb(y, cb, cr))
            .collect(),
        // The frame has one component or three (`read_frame`).
        _ => Vec::new(),
    };
    Pixels {
        width: width as u32,
        height: height as u32,
        layout: Layout::Rgb,
        data,
    }
}

/// Whether three components are RGB rather than YCbCr, as libjpeg decides:
/// JFIF says YCbCr, then Adobe's transform flag, then the components' ids.
fn rgb(frame: &Frame, tables: &Tables) -> bool {
    if tables.jfif {
        return false;
    }
    match tables.adobe_transform {
        Some(transform) => transform == 0,
        // Components named R, G and B.
        None => frame.components.iter().map(|c| c.id).eq(*b"RGB"),
    }
}

/// JFIF's YCbCr to RGB in libjpeg's fixed point (16 fraction bits,
/// rounded), so the pixels are libjpeg's.
fn ycbcr_to_rgb(y: u8, cb: u8, cr: u8) -> [u8; 3] {
    const HALF: i32 = 1 << 15;
    let (y, cb, cr) = (i32::from(y), i32::from(cb) - 128, i32::from(cr) - 128);
    let r = y + ((91_881 * cr + HALF) >> 16);
    let g = y + ((-22_554 * cb - 46_802 * cr + HALF) >> 16);
    let b = y + ((116_130 * cb + HALF) >> 16);
    [r, g, b].map(|value| value.clamp(0, 255) as u8)
}
