//! Small files of the on-disk caches (the disk cache's entries, the
//! desktop's shared thumbnails): read whole under a cap, and named by a
//! digest in hex. Plain functions that block; they run on the threads of
//! the cache that calls them.

use std::fmt::Write as _;
use std::io::Read;

/// The bytes of `file`, opened already, read to its end; `None` if it
/// holds more than `cap` bytes. Room is made for what the file holds when
/// it is opened and one byte, never for more than `cap` and one byte: a
/// size claimed elsewhere (an index line, a header) is not evidence, and
/// a file that grows while it is read is still read no further than one
/// byte past the cap.
#[cfg_attr(not(feature = "disk-cache"), allow(dead_code))]
pub(crate) fn read_capped(file: std::fs::File, cap: u64) -> std::io::Result<Option<Vec<u8>>> {
    let len = file.metadata().map_or(0, |metadata| metadata.len());
    let mut bytes = Vec::new();
    Ok(read_at_most(file, len, cap, &mut bytes)?.then_some(bytes))
}

/// `reader`'s bytes to its end into `bytes` (whose room is kept and
/// grown as needed: a thread that reads file after file makes room once),
/// `false` past `cap`, with `bytes` holding some of them. Room is made
/// for the `len` bytes it is expected to hold (its size when opened, from
/// the caller's own look at it) and one more, so that
/// a reader of that many is read in one call and its end seen in the next
/// (a `Take` with `read_to_end` reads a file in 8, 16, 32 KiB steps); more
/// is made, doubling, only for bytes that came, up to one past the cap.
pub(crate) fn read_at_most(
    mut reader: impl Read,
    len: u64,
    cap: u64,
    bytes: &mut Vec<u8>,
) -> std::io::Result<bool> {
    let limit = cap.saturating_add(1);
    let room = |bytes: u64| usize::try_from(bytes.min(limit)).unwrap_or(0);
    // Exactly the room asked for: a kept buffer grown by doubling could
    // pass the cap, or the room its thread keeps.
    let expected = room(len.saturating_add(1));
    bytes.clear();
    bytes.reserve_exact(expected);
    bytes.resize(expected, 0);
    let mut filled = 0;
    loop {
        if filled == bytes.len() {
            if filled as u64 >= limit {
                return Ok(false);
            }
            let grown = room((filled as u64).saturating_mul(2).max(4096));
            if grown <= filled {
                return Ok(false);
            }
            bytes.reserve_exact(grown - filled);
            bytes.resize(grown, 0);
        }
        match reader.read(&mut bytes[filled..]) {
            Ok(0) => break,
            // A reader that says it gave more than it was given room for
            // gave only that.
            Ok(read) => filled += read.min(bytes.len() - filled),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    bytes.truncate(filled);
    Ok(true)
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

    /// A reader that gives at most `step` bytes a call, and counts calls.
    struct Chunks<'a> {
        bytes: &'a [u8],
        step: usize,
        calls: usize,
    }

    impl Read for Chunks<'_> {
        fn read(&mut self, into: &mut [u8]) -> std::io::Result<usize> {
            self.calls += 1;
            let n = into.len().min(self.step).min(self.bytes.len());
            into[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    #[test]
    fn bytes_of_the_expected_length_take_one_read_and_more_are_read_to_the_cap() {
        let data: Vec<u8> = (0..30_000u32).map(|n| n as u8).collect();
        let read = |len, cap, step| {
            let mut chunks = Chunks {
                bytes: &data,
                step,
                calls: 0,
            };
            let mut bytes = Vec::new();
            let whole = read_at_most(&mut chunks, len, cap, &mut bytes).unwrap();
            (whole.then_some(bytes), chunks.calls)
        };
        // As long as expected: one read, and one that finds the end.
        assert_eq!(read(30_000, 1 << 20, usize::MAX), (Some(data.clone()), 2));
        // Grown since its length was taken, or a short-reading source:
        // read whole, up to the cap and no further.
        assert_eq!(read(100, 1 << 20, usize::MAX).0, Some(data.clone()));
        assert_eq!(read(0, 1 << 20, 7).0, Some(data.clone()));
        assert_eq!(read(100, 30_000, 1000).0, Some(data.clone()));
        assert_eq!(read(100, 29_999, 1000).0, None);
        assert_eq!(read(40_000, 29_999, usize::MAX).0, None);
        assert_eq!(read(5, 0, usize::MAX).0, None);
        let mut empty = Chunks {
            bytes: &[],
            step: 1,
            calls: 0,
        };
        let mut bytes = vec![1, 2, 3];
        assert!(read_at_most(&mut empty, 0, 0, &mut bytes).unwrap());
        assert_eq!(bytes, Vec::<u8>::new());
    }

    #[test]
    fn hex_is_two_lowercase_digits_a_byte() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
        assert_eq!(hex(&[]), "");
    }
}
