//! Properties: what a HEIF's `ipco` holds that the walk of its items
//! (`streams.rs`) reads, and which item has which (`ipma`): each item's
//! `hvcC`, whether it says it is an alpha plane (`auxC`), and how it is
//! turned, mirrored or cropped (`irot`, `imir`, `clap`).
//!
//! Plain data over the file's bytes, made and dropped by one walk.

use super::boxes::{Boxes, FourCc};
use super::hevc::{HvcC, read_hvcc};
use super::items::{Associations, MAX_ENTRIES, read_ipma};

/// The properties of the file this reads, and which item has which.
pub(super) struct Configs<'a> {
    /// Each property of `ipco`, in order.
    pub(super) properties: Vec<Property<'a>>,
    pub(super) associations: Associations,
}

/// A property of `ipco`, as far as the walk reads it.
pub(super) enum Property<'a> {
    Hevc(HvcC),
    /// An `auxC` saying its image is an alpha plane (HEIF's and MIAF's
    /// names for it, as libheif reads them).
    Alpha,
    /// A turn, mirror or crop (`irot`, `imir`, `clap`), with its body.
    Transform(FourCc, &'a [u8]),
    Other,
}

/// The `auxC` types of an alpha plane.
const ALPHA_TYPES: [&[u8]; 3] = [
    b"urn:mpeg:avc:2015:auxid:1",
    b"urn:mpeg:hevc:2015:auxid:1",
    b"urn:mpeg:mpegB:cicp:systems:auxiliary:alpha",
];

impl<'a> Configs<'a> {
    pub(super) fn read(ipco: Option<&'a [u8]>, ipma: Option<&[u8]>) -> Result<Self, String> {
        let mut properties = Vec::new();
        for entry in Boxes::new(ipco.unwrap_or_default()) {
            let (kind, body) = entry?;
            if properties.len() >= MAX_ENTRIES {
                return Err("it has too many properties".into());
            }
            properties.push(match &kind {
                b"hvcC" => Property::Hevc(read_hvcc(body)?),
                // Version and flags, then the type up to its NUL.
                b"auxC" => match body
                    .get(4..)
                    .and_then(|rest| rest.split(|&b| b == 0).next())
                {
                    Some(kind) if ALPHA_TYPES.contains(&kind) => Property::Alpha,
                    _ => Property::Other,
                },
                b"irot" | b"imir" | b"clap" => Property::Transform(kind, body),
                _ => Property::Other,
            });
        }
        let associations = match ipma {
            Some(ipma) => read_ipma(ipma).ok_or("its property associations are damaged")?,
            None => Vec::new(),
        };
        Ok(Configs {
            properties,
            associations,
        })
    }

    /// Item `item`'s properties (the associations' indexes start at 0).
    fn all_of(&self, item: u32) -> impl Iterator<Item = &Property<'a>> {
        self.associations
            .iter()
            .filter(move |(associated, _)| *associated == item)
            .flat_map(|(_, indexes)| indexes.iter())
            .filter_map(|&(index, _)| self.properties.get(index))
    }

    /// Item `item`'s `hvcC`s.
    pub(super) fn of(&self, item: u32) -> Vec<HvcC> {
        self.all_of(item)
            .filter_map(|property| match property {
                Property::Hevc(config) => Some(*config),
                _ => None,
            })
            .collect()
    }

    /// Whether item `item` says it is an alpha plane.
    pub(super) fn is_alpha(&self, item: u32) -> bool {
        self.all_of(item)
            .any(|property| matches!(property, Property::Alpha))
    }

    /// Item `item`'s turns, mirrors and crops, in the order they apply.
    pub(super) fn transforms(&self, item: u32) -> Vec<(FourCc, &'a [u8])> {
        self.all_of(item)
            .filter_map(|property| match property {
                Property::Transform(kind, body) => Some((*kind, *body)),
                _ => None,
            })
            .collect()
    }
}
