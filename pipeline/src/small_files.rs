//! Small files of the on-disk caches (the disk cache's entries, the
//! desktop's shared thumbnails): read whole under a cap, and named by a
//! digest in hex. Plain functions that block; they run on the threads of
//! the cache that calls them.

use std::fmt::Write as _;
use std::io::Read as _;

/// The bytes of `file`, opened already, read to its end; `None` if it
/// holds more than `cap` bytes. Room is made for what the file holds when
/// it is opened, never for more than `cap`: a size claimed elsewhere (an
/// index line, a header) is not evidence, and a file that grows while it
/// is read is still read no further than one byte past the cap.
pub(crate) fn read_capped(file: std::fs::File, cap: u64) -> std::io::Result<Option<Vec<u8>>> {
    let len = file.metadata().map_or(0, |metadata| metadata.len());
    let mut bytes = Vec::with_capacity(usize::try_from(len.min(cap)).unwrap_or(0));
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= cap).then_some(bytes))
}

/// `bytes` in lowercase hex, two digits a byte.
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        // Writing to a String cannot fail.
        let _ = write!(text, "{byte:02x}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_whole_up_to_its_cap_and_refused_past_it() {
        let path = std::env::temp_dir().join(format!("thumbpipe-capped-{}", std::process::id()));
        std::fs::write(&path, [7u8; 100]).unwrap();
        let open = || std::fs::File::open(&path).unwrap();
        assert_eq!(read_capped(open(), 100).unwrap(), Some(vec![7; 100]));
        assert_eq!(read_capped(open(), 99).unwrap(), None);
        assert_eq!(
            read_capped(open(), u64::MAX).unwrap().map(|b| b.len()),
            Some(100)
        );
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn hex_is_two_lowercase_digits_a_byte() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
        assert_eq!(hex(&[]), "");
    }
}
