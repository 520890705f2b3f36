//! Still: what an AVIF file shows, as plain data: the coded images (one
//! AV1 image, or a grid of them) and where their bytes lie, the image's
//! size, colours and transforms. Made by the container (`container.rs`,
//! `sequence.rs`) and read by the decode (`mod.rs`); a leaf of the AVIF
//! module, as `request.rs` is of the crate.
//!
//! Plain values that borrow the file's bytes; an item's bytes are joined
//! (when it lies in several extents) only while that item is decoded.

use std::borrow::Cow;
use std::rc::Rc;

/// The image an AVIF file shows, as its boxes describe it.
pub(super) struct Still<'a> {
    pub(super) colour: Coded<'a>,
    pub(super) alpha: Option<Coded<'a>>,
    /// Whether the colour is premultiplied by the alpha (`prem`).
    pub(super) premultiplied: bool,
    /// The size the file declares (`ispe`, or the grid's).
    pub(super) width: u32,
    pub(super) height: u32,
    /// The colour description (`colr` of type `nclx`), if any.
    pub(super) nclx: Option<Colour>,
    /// The colour image's operating point (`a1op`), for an image coded in
    /// layers; 0 (all of them) by default.
    pub(super) operating_point: u8,
    pub(super) transforms: Transforms,
}

/// A coded image: one AV1 image, or tiles laid out in a grid.
pub(super) enum Coded<'a> {
    Av1(Data<'a>),
    Grid(Grid<'a>),
}

/// A grid image (`grid`): `rows` x `columns` tiles of one size, in rows,
/// the whole cut to `width` x `height`.
pub(super) struct Grid<'a> {
    pub(super) rows: u32,
    pub(super) columns: u32,
    pub(super) width: u32,
    pub(super) height: u32,
    /// Each cell's tile: a tile that fills several cells is one `Data`,
    /// shared, not one copy a cell.
    pub(super) tiles: Vec<Data<'a>>,
}

/// An AV1 image's bytes: the pieces of the file it lies in (an item's
/// extents), shared by every reference to it.
#[derive(Clone)]
pub(super) struct Data<'a>(Rc<[&'a [u8]]>);

impl<'a> Data<'a> {
    /// Bytes in one piece.
    pub(super) fn whole(bytes: &'a [u8]) -> Self {
        Self(Rc::from([bytes]))
    }

    /// Bytes in `pieces`, in order.
    pub(super) fn pieces(pieces: Vec<&'a [u8]>) -> Self {
        Self(Rc::from(pieces))
    }

    /// How many bytes they are.
    pub(super) fn len(&self) -> usize {
        self.0.iter().map(|piece| piece.len()).sum()
    }

    /// Whether `other` is the same bytes of the file: the same item's, or
    /// another item's that lies in the same extents (as a writer that
    /// stores identical tiles once makes them).
    pub(super) fn same(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
            || (self.0.len() == other.0.len()
                && self
                    .0
                    .iter()
                    .zip(other.0.iter())
                    .all(|(a, b)| std::ptr::eq(a.as_ptr(), b.as_ptr()) && a.len() == b.len()))
    }

    /// The bytes: borrowed when they are in one piece, else joined (for
    /// as long as the caller holds them).
    pub(super) fn bytes(&self) -> Cow<'a, [u8]> {
        match &*self.0 {
            [one] => Cow::Borrowed(one),
            pieces => Cow::Owned(pieces.concat()),
        }
    }
}

/// The transformative properties, applied in the order AVIF gives: the
/// clean aperture crop, then the turn, then the mirror.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Transforms {
    /// The crop (`clap`): x, y, width, height in pixels.
    pub(super) crop: Option<(u32, u32, u32, u32)>,
    /// Quarter turns anticlockwise (`irot`), 0 to 3.
    pub(super) quarter_turns: u8,
    /// The mirror (`imir`), as ISO/IEC 23008-12:2022 has it (and libavif,
    /// and browsers): `Some(0)` exchanges the top and bottom (EXIF's
    /// orientation 4), `Some(1)` the left and right (EXIF's 2).
    pub(super) mirror: Option<u8>,
}

/// How samples become colours (CICP, ITU-T H.273): the matrix and range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Colour {
    pub(super) matrix: u16,
    pub(super) full_range: bool,
}
