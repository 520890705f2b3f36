//! Boxes: ISO BMFF's boxes (the size, the type, the body), walked one
//! after the other, and big-endian reads within one, each checked against
//! what the box holds.
//!
//! Plain functions and iterators over borrowed bytes; they keep nothing.

/// A box's type.
pub(crate) type FourCc = [u8; 4];

/// The boxes in `bytes`, one after the other: each its type and body.
pub(crate) struct Boxes<'a> {
    bytes: &'a [u8],
    failed: bool,
}

impl<'a> Boxes<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            failed: false,
        }
    }
}

impl<'a> Iterator for Boxes<'a> {
    type Item = Result<(FourCc, &'a [u8]), String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.bytes.is_empty() || self.failed {
            return None;
        }
        let mut reader = Reader::new(self.bytes);
        let parsed = (|| {
            let size = reader.u32()?;
            let kind = reader.four_cc()?;
            let (header, size) = match size {
                0 => (8, self.bytes.len() as u64),
                1 => (16, reader.u64()?),
                size => (8, u64::from(size)),
            };
            let size = usize::try_from(size).ok()?;
            let body = self.bytes.get(header..size)?;
            Some((kind, body, size))
        })();
        match parsed {
            Some((kind, body, size)) => {
                self.bytes = &self.bytes[size..];
                Some(Ok((kind, body)))
            }
            None => {
                self.failed = true;
                Some(Err("a box claims more bytes than the file holds".into()))
            }
        }
    }
}

/// A full box's version and flags, and the rest of its body.
pub(crate) fn full_box(body: &[u8]) -> Result<((u8, u32), &[u8]), String> {
    let mut reader = Reader::new(body);
    let word = reader.u32().ok_or("a box is too short for its version")?;
    Ok((((word >> 24) as u8, word & 0xff_ffff), reader.rest()))
}

/// Big-endian reads from a slice, each `None` past its end.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }

    pub(crate) fn take(&mut self, count: usize) -> Option<&'a [u8]> {
        let (taken, rest) = self.bytes.split_at_checked(count)?;
        self.bytes = rest;
        Some(taken)
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    pub(crate) fn u16(&mut self) -> Option<u16> {
        Some(u16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        Some(u32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }

    pub(crate) fn u64(&mut self) -> Option<u64> {
        Some(u64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }

    /// An unsigned number of `size` bytes (0, 4 or 8; 0 reads as 0).
    pub(crate) fn sized(&mut self, size: u8) -> Option<u64> {
        match size {
            0 => Some(0),
            4 => self.u32().map(u64::from),
            8 => self.u64(),
            _ => None,
        }
    }

    pub(crate) fn four_cc(&mut self) -> Option<FourCc> {
        self.take(4)?.try_into().ok()
    }

    pub(crate) fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.bytes)
    }
}
