//! Fujifilm's RAF: a header of fixed fields, the first of which after the
//! magic and model say where the camera's JPEG lies (a full JPEG, with its
//! own EXIF and orientation). The sensor data after it is never read.
//! Plain functions; keeps nothing.

use super::Previews;

/// The 16 bytes a RAF starts with.
pub(super) const MAGIC: &[u8] = b"FUJIFILMCCD-RAW ";

/// The JPEG's place in the RAF `bytes` (only its header need be there).
pub(super) fn read(bytes: &[u8]) -> Previews {
    let be = |at: usize| {
        let field: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
        Some(u32::from_be_bytes(field) as usize)
    };
    let jpeg = be(84)
        .zip(be(88))
        .filter(|&(at, length)| at > 0 && length > 0)
        .and_then(|(at, length)| Some(at..at.checked_add(length)?));
    Previews {
        jpegs: jpeg.into_iter().collect(),
        orientation: None,
        complete: bytes.len() >= 92,
        ..Previews::default()
    }
}
