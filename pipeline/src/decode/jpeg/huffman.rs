//! Huffman-coded JPEG data, as the DC-scan decoder (`dc_scans.rs`) reads
//! it: a bit reader over a scan's entropy-coded bytes (stuffed zeros
//! removed, stopping at the next marker) and a table of DC codes.
//!
//! Runs inside a decode, on the decode thread that called it; keeps nothing.

/// Bits of a code looked up at once; longer codes take the slow path.
const FAST_BITS: u32 = 9;

/// A Huffman table of a DHT segment, for decoding.
pub(super) struct HuffmanTable {
    /// For each `FAST_BITS`-bit prefix: its code's symbol and length, or a
    /// length of 0 when the code is longer.
    fast: Vec<(u8, u8)>,
    /// For each code length 1 to 16: one past the largest code of that
    /// length (when none has it, the first code of that length, which no
    /// code is below and none matches), and the index in `symbols` of the
    /// smallest code of that length minus that code.
    max_code: [u32; 17],
    offset: [i32; 17],
    symbols: Vec<u8>,
}

impl HuffmanTable {
    /// The table of `counts` (codes of each length, 1 to 16) and `symbols`
    /// (in code order), or why it is not a table: more symbols than codes
    /// of those lengths can name.
    pub(super) fn new(counts: &[u8; 16], symbols: &[u8]) -> Result<Self, String> {
        let total: usize = counts.iter().map(|&c| usize::from(c)).sum();
        if total != symbols.len() || total > 256 {
            return Err("a Huffman table's counts do not match its symbols".into());
        }
        let mut table = Self {
            fast: vec![(0, 0); 1 << FAST_BITS],
            max_code: [0; 17],
            offset: [0; 17],
            symbols: symbols.to_vec(),
        };
        let (mut code, mut index) = (0u32, 0usize);
        for length in 1..=16u32 {
            let count = u32::from(counts[length as usize - 1]);
            table.offset[length as usize] = index as i32 - code as i32;
            for _ in 0..count {
                if code >= 1 << length {
                    return Err("a Huffman table has more codes than its lengths allow".into());
                }
                if length <= FAST_BITS {
                    let shift = FAST_BITS - length;
                    let first = (code << shift) as usize;
                    for entry in &mut table.fast[first..first + (1 << shift)] {
                        *entry = (symbols[index], length as u8);
                    }
                }
                code += 1;
                index += 1;
            }
            // As libjpeg: the all-ones code of a length is never a code.
            if count > 0 && code >= 1 << length {
                return Err("a Huffman table uses an all-ones code".into());
            }
            table.max_code[length as usize] = code;
            code <<= 1;
        }
        Ok(table)
    }
}

/// Reads the entropy-coded bytes of a scan, most significant bit first.
/// At a marker or the end of the bytes it goes on with zero bits, and
/// notes when one of those is taken: the scan was cut short.
pub(super) struct BitReader<'a> {
    bytes: &'a [u8],
    /// The next byte to load.
    at: usize,
    /// Loaded bits, the next at the top.
    bits: u64,
    count: u32,
    /// How many of the last `count` bits are zeros past the data.
    past_end: u32,
    /// A bit past the data was taken.
    pub(super) overran: bool,
}

impl<'a> BitReader<'a> {
    pub(super) fn new(bytes: &'a [u8], at: usize) -> Self {
        Self {
            bytes,
            at,
            bits: 0,
            count: 0,
            past_end: 0,
            overran: false,
        }
    }

    /// Where the reader stopped loading: at a marker, or the end.
    #[cfg(test)]
    pub(super) fn position(&self) -> usize {
        self.at
    }

    /// Loads bytes until at least 57 bits are held.
    fn fill(&mut self) {
        while self.count <= 56 {
            let byte = match self.bytes.get(self.at) {
                Some(&0xFF) => match self.bytes.get(self.at + 1) {
                    // A stuffed zero: the data's own 0xFF.
                    Some(0x00) => {
                        self.at += 2;
                        Some(0xFF)
                    }
                    // A marker (or fill before one): the data ends here.
                    _ => None,
                },
                Some(&byte) => {
                    self.at += 1;
                    Some(byte)
                }
                None => None,
            };
            if byte.is_none() {
                self.past_end += 8;
            }
            self.bits |= u64::from(byte.unwrap_or(0)) << (56 - self.count);
            self.count += 8;
        }
    }

    fn peek(&mut self, n: u32) -> u32 {
        if self.count < n {
            self.fill();
        }
        (self.bits >> (64 - n)) as u32
    }

    fn consume(&mut self, n: u32) {
        self.bits <<= n;
        self.count -= n;
        if self.count < self.past_end {
            self.overran = true;
            self.past_end = self.count;
        }
    }

    /// `n` (1 to 16) bits as a number.
    pub(super) fn bits(&mut self, n: u32) -> u32 {
        let value = self.peek(n);
        self.consume(n);
        value
    }

    /// The next symbol of `table`, or `None` for a code it does not have.
    pub(super) fn symbol(&mut self, table: &HuffmanTable) -> Option<u8> {
        let code = self.peek(16);
        let (symbol, length) = table.fast[(code >> (16 - FAST_BITS)) as usize];
        if length > 0 {
            self.consume(u32::from(length));
            return Some(symbol);
        }
        for length in FAST_BITS + 1..=16 {
            let code = code >> (16 - length);
            if code < table.max_code[length as usize] {
                self.consume(length);
                let index = table.offset[length as usize] + code as i32;
                return table.symbols.get(usize::try_from(index).ok()?).copied();
            }
        }
        None
    }

    /// A DC difference: its size category `size` (0 to 16), then that many
    /// bits, negative when the first is 0.
    pub(super) fn difference(&mut self, size: u8) -> i32 {
        match u32::from(size) {
            0 => 0,
            size @ 1..=16 => {
                let value = self.bits(size) as i32;
                if value < 1 << (size - 1) {
                    value - (1 << size) + 1
                } else {
                    value
                }
            }
            _ => 0,
        }
    }

    /// Drops the bits held and moves past the restart marker that should
    /// come next; `false` if another marker or the end comes instead.
    pub(super) fn restart(&mut self) -> bool {
        self.bits = 0;
        self.count = 0;
        self.past_end = 0;
        // Bytes left before the marker are damage: skipped, as libjpeg does.
        while let Some(&byte) = self.bytes.get(self.at) {
            if byte == 0xFF {
                match self.bytes.get(self.at + 1) {
                    Some(0xD0..=0xD7) => {
                        self.at += 2;
                        return true;
                    }
                    Some(0x00) => self.at += 2,
                    Some(0xFF) => self.at += 1,
                    _ => return false,
                }
            } else {
                self.at += 1;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_read_as_their_table_assigns_them() {
        // One code of 2 bits (00 -> 5), two of 3 (010 -> 0, 011 -> 7), one
        // of 12 (100000000000 -> 9).
        let mut counts = [0u8; 16];
        counts[1] = 1;
        counts[2] = 2;
        counts[11] = 1;
        let table = HuffmanTable::new(&counts, &[5, 0, 7, 9]).unwrap();
        // 00 010 011 100000000000, then ones; 0xFF is stuffed.
        let bytes = [
            0b0001_0011,
            0b1000_0000,
            0b0000_1111,
            0xFF,
            0x00,
            0xFF,
            0x00,
        ];
        let mut reader = BitReader::new(&bytes, 0);
        assert_eq!(reader.symbol(&table), Some(5));
        assert_eq!(reader.symbol(&table), Some(0));
        assert_eq!(reader.symbol(&table), Some(7));
        assert_eq!(reader.symbol(&table), Some(9));
        // Sixteen ones are no code of this table.
        assert_eq!(reader.symbol(&table), None);
        assert_eq!(reader.bits(16), 0xFFFF);
        assert!(!reader.overran);
    }

    #[test]
    fn differences_are_signed_by_their_first_bit() {
        let bytes = [0b0110_0010];
        let mut reader = BitReader::new(&bytes, 0);
        assert_eq!(reader.difference(3), -4); // 011
        assert_eq!(reader.difference(3), 0b000 - 7); // 000
        assert_eq!(reader.difference(2), 2); // 10
        assert_eq!(reader.difference(0), 0);
    }

    #[test]
    fn the_reader_stops_at_a_marker_and_says_when_it_read_past_it() {
        let bytes = [0xAB, 0xFF, 0xD0, 0xCD, 0xFF, 0xD9];
        let mut reader = BitReader::new(&bytes, 0);
        assert_eq!(reader.bits(8), 0xAB);
        assert!(!reader.overran);
        assert_eq!(reader.position(), 1);
        assert!(reader.restart());
        assert_eq!(reader.bits(8), 0xCD);
        assert!(!reader.overran);
        assert_eq!(reader.bits(1), 0);
        assert!(reader.overran);
        assert!(!reader.restart());
    }

    #[test]
    fn an_overfull_table_is_refused() {
        let mut counts = [0u8; 16];
        counts[0] = 3; // three codes of one bit
        assert!(HuffmanTable::new(&counts, &[1, 2, 3]).is_err());
        assert!(HuffmanTable::new(&counts, &[1, 2]).is_err());
        // Two codes of one bit: 0, and 1, which is all ones.
        counts[0] = 2;
        assert!(HuffmanTable::new(&counts, &[1, 2]).is_err());
        counts[0] = 1;
        assert!(HuffmanTable::new(&counts, &[1]).is_ok());
    }
}
