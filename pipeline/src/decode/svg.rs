//! SVG: a vector image drawn at the thumbnail's size by resvg, so it is
//! sharp at every size and every `pixels_per_point` (scaled up as well as
//! down: a 24-unit icon in a 64-pixel box is drawn at 64 pixels).
//!
//! Before anything is drawn, the XML is parsed with a node limit and its
//! elements counted with every reference expanded as usvg expands it
//! (`<use>`, patterns, masks, clips, filters, markers; `svg_refs.rs`), so
//! a small file that refers to itself a thousandfold is refused
//! ([`DecodeConfig::svg_max_elements`](crate::DecodeConfig::svg_max_elements)),
//! and references that loop are refused before usvg follows them into a
//! stack overflow; nesting deeper than [`MAX_DEPTH`], references
//! followed, is refused (the converter and the
//! renderer recurse). Nothing outside the file is read: `<image>` elements
//! (a path on this machine, a URL, a nested data URL) are not drawn, and
//! no fonts are loaded (`<text>` is not drawn; logos carry their lettering
//! as paths).
//!
//! Then what drawing the converted tree takes is reckoned (`svg_cost.rs`):
//! the layers resvg draws for groups with opacity, masks, clips and
//! filters (nested ones held at once), the tiles of patterns, and every
//! pixel filled, a pattern's tile once for each path it paints. The canvas,
//! the peak and the elements must fit in
//! [`DecodeConfig::max_alloc_bytes`](crate::DecodeConfig::max_alloc_bytes),
//! and the pixels filled in [`MAX_FILL_PER_ALLOC`] times it. The
//! reckoning is an estimate with known gaps (listed in `svg_cost.rs`), so
//! the feature is documented as for SVGs from servers the app trusts.
//!
//! Runs inside a decode, on the decode thread that called it; keeps
//! nothing.

use std::sync::Arc;

use resvg::tiny_skia::{Pixmap, Transform};
use resvg::usvg::{self, roxmltree};

use super::formats::{Decoder, Format, Signature};
use super::svg_refs::{self, MAX_DEPTH, Over};
use super::{DecodeLimits, svg_cost};

/// SVG's row of the format table: told by its markup, drawn by its own
/// module.
pub(super) const FORMAT: Format = Format {
    name: "SVG",
    media_types: &["image/svg+xml"],
    signature: Signature::Told(looks_like_svg),
    decoder: Decoder::Own(rasterise),
};
use crate::error::Error;
use crate::request::{Fit, TargetSize};
use crate::thumbnail::Thumbnail;

/// Bytes an element costs once converted, at most (measured: under 400
/// for paths of a few dozen segments), for the decode limit.
const ELEMENT_BYTES: u64 = 1024;
/// Bytes the parsed document, the converted tree's frame and the
/// renderer's scratch take whatever the SVG (measured: a square drawn at
/// 1024 px took 2 KB beyond its canvas and copy).
const FIXED_BYTES: u64 = 64 * 1024;
/// Bytes of pixels an SVG may fill in all, as a multiple of the decode
/// limit: 1 GiB at the default 256 MiB, about a second of tiny-skia's
/// filling on one core. A logo fills its canvas a few times over.
pub(super) const MAX_FILL_PER_ALLOC: u64 = 4;

/// Whether `bytes` look like an SVG document: markup (after any byte
/// order mark and whitespace) with an `<svg` element near its start, and
/// not an HTML page (which may hold an inline `<svg>`).
fn looks_like_svg(bytes: &[u8]) -> bool {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace());
    let Some(start) = start.filter(|&at| bytes[at] == b'<') else {
        return false;
    };
    let head = &bytes[start..bytes.len().min(start + 4096)];
    let head = String::from_utf8_lossy(head).to_ascii_lowercase();
    head.contains("<svg") && !head.contains("<html") && !head.contains("<!doctype html")
}

/// The SVG `bytes` drawn for `target`: fitted inside the box (scaled to
/// touch it), covering it (scaled to fill it, centred, the overflow cut),
/// or at its own size scaled (and inside the box).
pub(super) fn rasterise(
    url: &Arc<str>,
    bytes: &[u8],
    target: TargetSize,
    limits: DecodeLimits,
) -> Result<Thumbnail, Error> {
    let refusals = Refusals(url);
    let text = std::str::from_utf8(bytes).map_err(|_| refusals.refused("not UTF-8 text".into()))?;
    let document = parse(text, limits.svg_max_elements, &refusals)?;
    let elements = count_elements(&document, limits.svg_max_elements, &refusals)?;
    let options = usvg::Options {
        // Nothing outside the file: no paths on this machine, no nested
        // documents, whose elements were not counted.
        image_href_resolver: usvg::ImageHrefResolver {
            resolve_data: Box::new(|_, _, _| None),
            resolve_string: Box::new(|_, _| None),
        },
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_xmltree(&document, &options)
        .map_err(|e| refusals.refused(e.to_string()))?;
    let size = tree.size();
    let (scale, width, height) = drawn_size(size.width(), size.height(), target);
    if width > limits.max_dimension || height > limits.max_dimension {
        return Err(refusals.too_large(
            format!(
                "drawn at {width}x{height}, over the {} limit",
                limits.max_dimension
            ),
            "decode.max_dimension",
        ));
    }
    // Centred: a cover's overflow is cut evenly from both sides.
    let (dx, dy) = (
        (width as f32 - size.width() * scale) / 2.0,
        (height as f32 - size.height() * scale) / 2.0,
    );
    let transform = Transform::from_scale(scale, scale).post_translate(dx, dy);
    check_cost(
        &tree,
        transform,
        (width, height),
        elements,
        limits,
        &refusals,
    )?;
    let mut pixmap = Pixmap::new(width, height)
        .ok_or_else(|| refusals.refused(format!("no {width}x{height} canvas")))?;
    resvg::render(&tree, transform, &mut pixmap.as_mut());
    let mut rgba = pixmap.take();
    demultiply(&mut rgba);
    Ok(Thumbnail {
        url: Arc::clone(url),
        width,
        height,
        pixels: Arc::from(rgba),
        source_size: (units(size.width()), units(size.height())),
        animation: None,
    })
}

/// The errors of one SVG's drawing, for its URL.
struct Refusals<'a>(&'a Arc<str>);

impl Refusals<'_> {
    fn refused(&self, reason: String) -> Error {
        Error::Decode {
            url: self.0.to_string(),
            reason: format!("SVG: {reason}"),
        }
    }

    fn too_large(&self, what: String, setting: &'static str) -> Error {
        Error::TooLarge {
            url: self.0.to_string(),
            what,
            setting,
        }
    }
}

/// The XML of `text`, its nodes bounded by `max_elements`.
fn parse<'t>(
    text: &'t str,
    max_elements: u32,
    refusals: &Refusals<'_>,
) -> Result<roxmltree::Document<'t>, Error> {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        // Text and comments are nodes too: the element count is the limit
        // that matters, this one bounds the parse.
        nodes_limit: max_elements.saturating_mul(4),
        ..Default::default()
    };
    roxmltree::Document::parse_with_options(text, options).map_err(|e| match e {
        roxmltree::Error::NodesLimitReached => refusals.too_large(
            format!(
                "the SVG has more than {} XML nodes",
                max_elements.saturating_mul(4)
            ),
            "decode.svg_max_elements",
        ),
        other => refusals.refused(other.to_string()),
    })
}

/// The elements `document` draws, its references expanded, if they are
/// within `max_elements` and its references neither nest too deep nor
/// loop.
fn count_elements(
    document: &roxmltree::Document<'_>,
    max_elements: u32,
    refusals: &Refusals<'_>,
) -> Result<u64, Error> {
    svg_refs::count_drawn(document, u64::from(max_elements)).map_err(|over| {
        let what = match over {
            Over::Depth => {
                format!("the SVG nests deeper than {MAX_DEPTH} levels, its references followed")
            }
            Over::Elements(count) => format!(
                "the SVG draws {count} elements or more with its references expanded, \
                     over the limit of {max_elements}"
            ),
            Over::StyleMatches(matches) => format!(
                "the SVG's style sheet takes {matches} selector matches (its rules times \
                     its elements), over {}",
                svg_refs::MAX_STYLE_MATCHES
            ),
            Over::Loop(name) => {
                return refusals.refused(format!("its references loop back to {name}"));
            }
        };
        refusals.too_large(what, "decode.svg_max_elements")
    })
}

/// Refuses a drawing of `tree` at `size` whose memory, at its peak, or
/// whose pixels filled pass the decode limit.
fn check_cost(
    tree: &usvg::Tree,
    transform: Transform,
    (width, height): (u32, u32),
    elements: u64,
    limits: DecodeLimits,
    refusals: &Refusals<'_>,
) -> Result<(), Error> {
    let cost = svg_cost::reckon(tree.root(), transform, width, height);
    // The canvas, and beside it the layers at their peak, or the canvas's
    // unpremultiplied copy and then the thumbnail's.
    let pixels = u64::from(width) * u64::from(height) * 4;
    let needed = pixels
        .saturating_add(cost.peak_bytes.max(pixels))
        .saturating_add(elements.saturating_mul(ELEMENT_BYTES))
        .saturating_add(FIXED_BYTES);
    if needed > limits.max_alloc {
        return Err(refusals.too_large(
            format!(
                "drawing the SVG at {width}x{height} takes {needed} bytes ({} of layers, masks, \
                 filters and pattern tiles at once), over the {}-byte decode limit",
                cost.peak_bytes, limits.max_alloc
            ),
            "decode.max_alloc_bytes",
        ));
    }
    let max_fill = limits.max_alloc.saturating_mul(MAX_FILL_PER_ALLOC);
    if cost.fill_bytes > max_fill {
        return Err(refusals.too_large(
            format!(
                "drawing the SVG at {width}x{height} fills {} bytes of pixels (its layers, \
                 masks, filters, pattern tiles for every path they paint, and paths), over \
                 {max_fill}: {MAX_FILL_PER_ALLOC} times the decode limit",
                cost.fill_bytes
            ),
            "decode.max_alloc_bytes",
        ));
    }
    Ok(())
}

/// tiny-skia's pixels are premultiplied; a thumbnail's are not. In place,
/// rounded as tiny-skia's `demultiply` rounds; an opaque or transparent
/// pixel (most of a drawing) is the same either way.
fn demultiply(rgba: &mut [u8]) {
    for pixel in rgba.chunks_exact_mut(4) {
        let alpha = u32::from(pixel[3]);
        if alpha == 0 || alpha == 255 {
            continue;
        }
        for channel in &mut pixel[..3] {
            let straight = (2 * 255 * u32::from(*channel) + alpha) / (2 * alpha);
            *channel = straight.min(255) as u8;
        }
    }
}

/// A size in user units as whole pixels at scale 1, at least 1.
fn units(side: f32) -> u32 {
    (side.round() as u32).max(1)
}

/// The scale and the size in pixels an SVG of `width` x `height` units is
/// drawn at for `target`: fitted inside it, touching two sides, the whole
/// box for a cover, or its own size times the percentage, inside the box.
fn drawn_size(width: f32, height: f32, target: TargetSize) -> (f32, u32, u32) {
    let (box_width, box_height) = (target.width.max(1) as f32, target.height.max(1) as f32);
    let (width, height) = (width.max(f32::EPSILON), height.max(f32::EPSILON));
    let (x_scale, y_scale) = (box_width / width, box_height / height);
    let inside = |scale: f32| {
        let side = |units: f32| ((units * scale).round() as u32).max(1);
        (scale, side(width), side(height))
    };
    match target.fit {
        Fit::Inside => inside(x_scale.min(y_scale)),
        Fit::Original { percent } => inside(
            (f32::from(percent.max(1)) / 100.0)
                .min(x_scale)
                .min(y_scale),
        ),
        Fit::Cover => (
            x_scale.max(y_scale),
            target.width.max(1),
            target.height.max(1),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::route::tests::LIMITS;

    /// Rounded exactly: premultiplied again, every value comes back, and
    /// tiny-skia's own (in `f64`, where 11 at alpha 66, 42.5, can land
    /// below the half) is at most one away.
    #[test]
    fn pixels_are_demultiplied_to_the_nearest_value() {
        for alpha in 1..=255u8 {
            for value in 0..=alpha {
                let mut ours = [value, value, value, alpha];
                demultiply(&mut ours);
                assert_eq!(ours[3], alpha);
                assert_eq!(
                    resvg::tiny_skia::ColorU8::from_rgba(ours[0], 0, 0, alpha)
                        .premultiply()
                        .red(),
                    value,
                    "{value} at alpha {alpha}: {ours:?}"
                );
                let theirs =
                    resvg::tiny_skia::PremultipliedColorU8::from_rgba(value, value, value, alpha)
                        .unwrap()
                        .demultiply();
                assert!(ours[0].abs_diff(theirs.red()) <= 1, "{value} at {alpha}");
            }
        }
        let mut transparent = [0, 0, 0, 0];
        demultiply(&mut transparent);
        assert_eq!(transparent, [0, 0, 0, 0]);
    }

    /// A 100x50 drawing: red on its left half, blue on its right.
    const HALVES: &str = r##"<?xml version="1.0"?>
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 50" width="100" height="50">
  <rect x="0" y="0" width="50" height="50" fill="#e01010"/>
  <rect x="50" y="0" width="50" height="50" fill="#1010e0"/>
</svg>"##;

    fn draw(svg: &str, target: TargetSize) -> Result<Thumbnail, Error> {
        rasterise(&Arc::from("http://x/a.svg"), svg.as_bytes(), target, LIMITS)
    }

    fn pixel(thumbnail: &Thumbnail, x: u32, y: u32) -> [u8; 4] {
        let i = ((y * thumbnail.width + x) * 4) as usize;
        thumbnail.pixels[i..i + 4].try_into().unwrap()
    }

    #[test]
    fn an_svg_is_drawn_at_the_size_of_its_box_up_or_down() {
        for (target, size) in [
            (TargetSize::square(64), (64, 32)),
            (TargetSize::square(512), (512, 256)),
            (TargetSize::new(30, 300), (30, 15)),
        ] {
            let thumbnail = draw(HALVES, target).unwrap();
            assert_eq!((thumbnail.width, thumbnail.height), size);
            let (w, h) = size;
            assert_eq!(pixel(&thumbnail, w / 4, h / 2), [0xe0, 0x10, 0x10, 255]);
            assert_eq!(pixel(&thumbnail, w * 3 / 4, h / 2), [0x10, 0x10, 0xe0, 255]);
        }
        // A cover of a square: its middle, half red and half blue.
        let cover = draw(HALVES, TargetSize::cover(40, 40)).unwrap();
        assert_eq!((cover.width, cover.height), (40, 40));
        assert_eq!(pixel(&cover, 5, 20)[0], 0xe0);
        assert_eq!(pixel(&cover, 35, 20)[2], 0xe0);
        assert_eq!(cover.source_size, (100, 50));
    }

    #[test]
    fn an_svg_at_its_own_size_is_scaled_by_the_percentage_within_the_box() {
        for (target, size) in [
            (TargetSize::original(100, 8192), (100, 50)),
            (TargetSize::original(250, 8192), (250, 125)),
            (TargetSize::original(50, 8192), (50, 25)),
            (TargetSize::original(400, 300), (300, 150)),
        ] {
            let thumbnail = draw(HALVES, target).unwrap();
            assert_eq!((thumbnail.width, thumbnail.height), size, "{target:?}");
            assert_eq!(thumbnail.source_size, (100, 50));
        }
    }

    #[test]
    fn svgs_are_told_from_other_markup() {
        assert!(looks_like_svg(HALVES.as_bytes()));
        assert!(looks_like_svg(
            b"\xEF\xBB\xBF  <svg xmlns='http://www.w3.org/2000/svg'/>"
        ));
        assert!(!looks_like_svg(
            b"<!DOCTYPE html><html><body><svg></svg></body></html>"
        ));
        assert!(!looks_like_svg(b"\x89PNG\r\n<svg"));
        assert!(!looks_like_svg(b""));
    }

    /// Ten levels of ten `<use>`s of the level below: 22 elements in the
    /// file, ten billion drawn.
    fn laughs() -> String {
        let mut svg = String::from(
            r#"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="10" height="10"><defs><rect id="l0" width="1" height="1"/>"#,
        );
        for level in 1..=10 {
            svg.push_str(&format!(r#"<g id="l{level}">"#));
            for _ in 0..10 {
                svg.push_str(&format!(r##"<use xlink:href="#l{}"/>"##, level - 1));
            }
            svg.push_str("</g>");
        }
        svg.push_str(r##"</defs><use href="#l10"/></svg>"##);
        svg
    }

    #[test]
    fn an_svg_that_expands_past_the_limit_is_refused_before_it_is_drawn() {
        let started = std::time::Instant::now();
        let error = draw(&laughs(), TargetSize::square(64)).unwrap_err();
        assert!(
            matches!(
                error,
                Error::TooLarge {
                    setting: "decode.svg_max_elements",
                    ..
                }
            ),
            "{error}"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        let deep = format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1">{}{}</svg>"#,
            "<g>".repeat(MAX_DEPTH + 1),
            "</g>".repeat(MAX_DEPTH + 1)
        );
        let error = draw(&deep, TargetSize::square(64)).unwrap_err();
        assert!(error.to_string().contains("nests deeper"), "{error}");
        // The same, linked by both spellings at once, or with spaces.
        let doubled = laughs().replace("xlink:href=\"#l", "href=\" #l");
        assert!(matches!(
            draw(&doubled, TargetSize::square(64)),
            Err(Error::TooLarge { .. })
        ));
        // A reference to its own ancestor is counted once, and drawn.
        let looped = r##"<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><g id="a"><rect width="4" height="4"/><use href="#a"/></g></svg>"##;
        assert_eq!(draw(looped, TargetSize::square(8)).unwrap().width, 8);
    }

    /// An SVG whose `defs` chain `levels` elements made by `link(level,
    /// next)`, the last applied to a square by `apply`.
    fn chain(levels: usize, link: impl Fn(usize, usize) -> String, apply: &str) -> String {
        let mut svg = String::from(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><defs>"#,
        );
        for level in 0..levels {
            svg.push_str(&link(level, level + 1));
        }
        svg.push_str(&format!(
            r#"</defs><rect width="10" height="10" {apply}/></svg>"#
        ));
        svg
    }

    #[test]
    fn references_that_loop_are_refused_and_deep_chains_drawn_on_a_decode_threads_stack() {
        // Three patterns, clip paths or masks leading back to the first:
        // usvg 0.49 follows these until its stack overflows.
        let looped = |element: &str, property: &str| {
            chain(
                3,
                |level, next| {
                    format!(
                        r##"<{element} id="e{level}"><rect width="5" height="5" {property}="url(#e{})"/></{element}>"##,
                        next % 3
                    )
                },
                &format!(r##"{property}="url(#e0)""##),
            )
        };
        for (element, property) in [
            ("pattern", "fill"),
            ("clipPath", "clip-path"),
            ("mask", "mask"),
        ] {
            let error = draw(&looped(element, property), TargetSize::square(16)).unwrap_err();
            assert!(
                matches!(&error, Error::Decode { reason, .. } if reason.contains("loop")),
                "{element}: {error}"
            );
        }
        // Chains as deep as allowed, each kind, drawn on a thread with the
        // stack a decode thread has.
        let depth = MAX_DEPTH / 2 - 2;
        let chains = [
            chain(
                depth,
                |level, next| {
                    format!(
                        r##"<mask id="e{level}"><rect width="10" height="10" fill="white" mask="url(#e{next})"/></mask>"##
                    )
                },
                r##"mask="url(#e0)""##,
            ),
            chain(
                depth,
                |level, next| {
                    format!(
                        r##"<clipPath id="e{level}" clip-path="url(#e{next})"><rect width="10" height="10"/></clipPath>"##
                    )
                },
                r##"clip-path="url(#e0)""##,
            ),
            chain(
                depth,
                |level, next| {
                    format!(
                        r##"<pattern id="e{level}" width="4" height="4" patternUnits="userSpaceOnUse"><rect width="2" height="2" fill="url(#e{next})"/></pattern>"##
                    )
                },
                r##"fill="url(#e0)""##,
            ),
        ];
        std::thread::Builder::new()
            .stack_size(2 * 1024 * 1024)
            .spawn(move || {
                for svg in chains {
                    assert_eq!(draw(&svg, TargetSize::square(16)).unwrap().width, 16);
                }
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn nothing_outside_the_file_is_read_and_bad_files_are_typed_errors() {
        let linking = r#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><image href="/etc/hostname" width="10" height="10"/></svg>"#;
        let thumbnail = draw(linking, TargetSize::square(10)).unwrap();
        assert!(
            thumbnail.pixels.iter().all(|&b| b == 0),
            "the image was drawn"
        );
        for bad in [
            "<svg",
            "<svg xmlns='http://www.w3.org/2000/svg' width='-1'></svg>",
        ] {
            let error = draw(bad, TargetSize::square(10)).unwrap_err();
            assert!(matches!(error, Error::Decode { .. }), "{bad}: {error}");
        }
        let error = rasterise(
            &Arc::from("x"),
            b"<svg \xff>",
            TargetSize::square(8),
            LIMITS,
        )
        .unwrap_err();
        assert!(error.to_string().contains("UTF-8"), "{error}");
    }
}
