//! The headers of a progressive JPEG as the DC-scan decoder
//! (`dc_scans.rs`) reads them, besides the segments and the frame
//! (`markers.rs`): the DHT and DQT tables, the restart interval and the
//! scan headers. The fetch's watch (`prefix.rs`) reads the tables with the
//! same functions, keeping only which were defined, so that it stops a
//! fetch only where the decode will take what was read.
//!
//! Plain functions over bytes, run by whichever caller reads them (a decode
//! thread, or the fetch task); they keep nothing.

use super::huffman::HuffmanTable;

/// The state of the markers read so far.
#[derive(Default)]
pub(super) struct Tables {
    pub(super) quant_dc: [Option<i32>; 4],
    pub(super) huffman_dc: [Option<HuffmanTable>; 4],
    pub(super) restart_interval: usize,
    pub(super) jfif: bool,
    pub(super) adobe_transform: Option<u8>,
}

pub(super) fn read_huffman(mut segment: &[u8], tables: &mut Tables) -> Option<()> {
    while let [class_id, rest @ ..] = segment {
        let counts: &[u8; 16] = rest.get(..16)?.try_into().ok()?;
        let total: usize = counts.iter().map(|&c| usize::from(c)).sum();
        let symbols = rest.get(16..16 + total)?;
        let (class, id) = (class_id >> 4, usize::from(class_id & 0x0F));
        if id > 3 {
            return None;
        }
        if class > 1 {
            return None;
        }
        // AC tables (class 1) are not needed.
        if class == 0 {
            tables.huffman_dc[id] = Some(HuffmanTable::new(counts, symbols).ok()?);
        }
        segment = &rest[16 + total..];
    }
    Some(())
}

pub(super) fn read_quant(mut segment: &[u8], tables: &mut Tables) -> Option<()> {
    while let [precision_id, rest @ ..] = segment {
        let (sixteen_bit, id) = (precision_id >> 4 != 0, usize::from(precision_id & 0x0F));
        if id > 3 {
            return None;
        }
        let (first, length) = if sixteen_bit {
            (
                i32::from(u16::from_be_bytes([*rest.first()?, *rest.get(1)?])),
                128,
            )
        } else {
            (i32::from(*rest.first()?), 64)
        };
        tables.quant_dc[id] = Some(first);
        segment = rest.get(length..)?;
    }
    Some(())
}

/// A scan header: which components, and which bits of which coefficients.
pub(super) struct Scan {
    /// Indices into the frame's components, with each one's DC table.
    pub(super) components: Vec<(usize, usize)>,
    pub(super) band_start: u8,
    pub(super) bit_high: u8,
    pub(super) bit_low: u8,
}

/// The restart interval a DRI segment sets; `None` if it is too short.
pub(super) fn read_restart_interval(segment: &[u8]) -> Option<usize> {
    let [r1, r0, ..] = *segment else { return None };
    Some(usize::from(u16::from_be_bytes([r1, r0])))
}

/// Whether the DC scan `scan` follows the scans before it, as the decode
/// takes them: a first scan of components whose DC has not come yet, or a
/// refinement by the next bit of components known from the bit above.
/// `known_from_bit` gives, for a component's index, the lowest bit its DC
/// has come with (`None` before its first scan).
pub(super) fn dc_scan_follows(scan: &Scan, known_from_bit: impl Fn(usize) -> Option<u8>) -> bool {
    if scan.bit_low > 13 {
        return false;
    }
    scan.components.iter().all(|&(index, _)| {
        let known = known_from_bit(index);
        if scan.bit_high == 0 {
            known.is_none()
        } else {
            known == Some(scan.bit_high) && scan.bit_low + 1 == scan.bit_high
        }
    })
}

/// A scan header, its components found by `index_of` (their id to their
/// index in the frame); `None` for a header no decoder takes: a component
/// the frame does not have or named twice, a DC scan with AC in it.
pub(super) fn read_scan_header(
    segment: &[u8],
    index_of: impl Fn(u8) -> Option<usize>,
) -> Option<Scan> {
    let [count, rest @ ..] = segment else {
        return None;
    };
    let count = usize::from(*count);
    if !(1..=4).contains(&count) {
        return None;
    }
    let selectors = rest.get(..2 * count)?;
    let [band_start, band_end, bits] = *rest.get(2 * count..2 * count + 3)? else {
        return None;
    };
    let mut components = Vec::new();
    for pair in selectors.chunks_exact(2) {
        let index = index_of(pair[0])?;
        if components.iter().any(|&(seen, _)| seen == index) {
            return None;
        }
        components.push((index, usize::from(pair[1] >> 4)));
    }
    // A DC scan holds DC alone.
    if band_start == 0 && band_end != 0 {
        return None;
    }
    Some(Scan {
        components,
        band_start,
        bit_high: bits >> 4,
        bit_low: bits & 0x0F,
    })
}
