//! Sequence: an AVIF image sequence (`avis`) that has no still image,
//! shown by its first frame: the first sample of its first picture track,
//! found through the track's sample tables (`stsd`, `stsz`, `stco` or
//! `co64`). The track's alpha, if it has one, is not read: the frame comes
//! out opaque.
//!
//! Runs inside a decode, on the decode thread; borrows the file's bytes and
//! keeps nothing.

use super::still::{Coded, Data, Still, Transforms};
use crate::decode::bmff::{Boxes, Reader, full_box};

/// The first frame of the first track in `moov` whose samples are AV1.
pub(super) fn first_frame<'a>(file: &'a [u8], moov: &'a [u8]) -> Result<Still<'a>, String> {
    for found in Boxes::new(moov) {
        let (kind, trak) = found?;
        if &kind != b"trak" {
            continue;
        }
        let Some(stbl) = child(trak, &[b"mdia", b"minf", b"stbl"])? else {
            continue;
        };
        let Some((width, height)) = av1_entry(stbl)? else {
            continue;
        };
        let sample = first_sample(file, stbl)?;
        if width == 0 || height == 0 {
            return Err(format!("the track says its frames are {width}x{height}"));
        }
        return Ok(Still {
            colour: Coded::Av1(Data::whole(sample)),
            alpha: None,
            premultiplied: false,
            width: u32::from(width),
            height: u32::from(height),
            nclx: None,
            operating_point: 0,
            transforms: Transforms::default(),
        });
    }
    Err("the image sequence has no AV1 track".into())
}

/// The box at `path` under `parent`, each step the first of its type.
fn child<'a>(parent: &'a [u8], path: &[&[u8; 4]]) -> Result<Option<&'a [u8]>, String> {
    let mut at = parent;
    for step in path {
        let mut found = None;
        for item in Boxes::new(at) {
            let (kind, body) = item?;
            if &kind == *step {
                found = Some(body);
                break;
            }
        }
        match found {
            Some(body) => at = body,
            None => return Ok(None),
        }
    }
    Ok(Some(at))
}

/// The frame size of the sample table's first entry, if it is AV1
/// (`av01`, a visual sample entry).
fn av1_entry(stbl: &[u8]) -> Result<Option<(u16, u16)>, String> {
    let Some(stsd) = child(stbl, &[b"stsd"])? else {
        return Ok(None);
    };
    let mut reader = Reader::new(full_box(stsd)?.1);
    reader.u32().ok_or("the stsd box is cut short")?;
    let Some(first) = Boxes::new(reader.rest()).next() else {
        return Ok(None);
    };
    let (kind, entry) = first?;
    if &kind != b"av01" {
        return Ok(None);
    }
    // Six reserved bytes, the data reference, 16 bytes of pre-defined and
    // reserved fields, then the width and height.
    let mut reader = Reader::new(entry);
    let size = (|| {
        reader.take(24)?;
        Some((reader.u16()?, reader.u16()?))
    })();
    size.map(Some)
        .ok_or_else(|| "the av01 sample entry is cut short".into())
}

/// The bytes of the track's first sample: at the first chunk's offset, of
/// the first sample's size.
fn first_sample<'a>(file: &'a [u8], stbl: &'a [u8]) -> Result<&'a [u8], String> {
    let short = || "the track's sample tables are cut short".to_string();
    let stsz = child(stbl, &[b"stsz"])?.ok_or_else(short)?;
    let mut reader = Reader::new(full_box(stsz)?.1);
    let size = match reader.u32().ok_or_else(short)? {
        0 => {
            let _count = reader.u32().ok_or_else(short)?;
            reader.u32().ok_or_else(short)?
        }
        every => every,
    };
    let offset = if let Some(stco) = child(stbl, &[b"stco"])? {
        let mut reader = Reader::new(full_box(stco)?.1);
        reader.u32().ok_or_else(short)?;
        u64::from(reader.u32().ok_or_else(short)?)
    } else {
        let co64 = child(stbl, &[b"co64"])?.ok_or_else(short)?;
        let mut reader = Reader::new(full_box(co64)?.1);
        reader.u32().ok_or_else(short)?;
        reader.u64().ok_or_else(short)?
    };
    let start = usize::try_from(offset).map_err(|_| short())?;
    start
        .checked_add(size as usize)
        .and_then(|end| file.get(start..end))
        .ok_or_else(|| "the first frame lies outside the file".into())
}
