//! SVG's cost: what resvg will hold at once and how many pixels it will
//! fill to draw a converted tree, reckoned before anything is drawn, so
//! that a hostile file is refused with a typed error instead of taking the
//! memory or the seconds.
//!
//! The reckoning follows resvg 0.49's renderer: a group with opacity, a
//! clip, a mask, a filter or a blend mode is drawn into a layer of its own
//! (its bounding box in pixels, counted as at most five times the canvas
//! each way, resvg's clamp for a layer drawn without rotation or skew), a
//! clip adds a pixmap of the layer's size, a mask one and an alpha mask,
//! a filter a result per primitive, and a pattern a tile of its size at
//! the drawing's scale, drawn again for every path it paints. Layers drawn
//! inside layers are held at once, so the peak is the deepest chain of
//! them; the fill work is every layer, tile and path box filled.
//!
//! The tree walked is bounded beforehand: its elements, with every
//! reference expanded, and the depth of references (`svg_refs.rs`). Not
//! reckoned here: the contents of a clip path (each of its children is
//! filled into the clip's pixmap; bounded by the element count alone);
//! filters' working buffers beside their results (copies of the source,
//! a blur's wider buffer: up to about twice what is counted); layers under
//! rotation or skew, which resvg clamps after transforming. Paths are
//! counted generously (their box, capped at the largest layer), which can
//! refuse a large drawing that would fit.
//!
//! Runs on the decode thread, between the conversion and the drawing; a
//! walk of the tree, keeping nothing.

use resvg::tiny_skia::{NonZeroRect, Transform};
use resvg::usvg::filter::Kind;
use resvg::usvg::{ClipPath, Group, Mask, Node, Paint, Path, Pattern};

/// Bytes a pixmap costs beyond its pixels: tiny-skia's raster pipeline
/// and the scratch it fills with (measured: about 500 bytes beyond 12
/// nested layers' pixels; counted generously).
const PIXMAP_SCRATCH: u64 = 16 * 1024;

/// What drawing a tree costs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Cost {
    /// Bytes held at the peak beside the canvas: layers, clips, masks,
    /// filter results and pattern tiles alive at once.
    pub(super) peak_bytes: u64,
    /// Bytes of pixels filled in all: the canvas's share of each path's
    /// box, every layer, mask, clip, filter result and tile (a tile once
    /// for every path it paints).
    pub(super) fill_bytes: u64,
}

/// The cost of drawing `root` with `transform` on a `width` x `height`
/// canvas.
pub(super) fn reckon(root: &Group, transform: Transform, width: u32, height: u32) -> Cost {
    let mut walk = Walk {
        // resvg's largest layer: the canvas and twice it on each side.
        max_side: (f64::from(width) * 5.0, f64::from(height) * 5.0),
        fill_bytes: 0,
    };
    let peak_bytes = walk.children(root, transform);
    Cost {
        peak_bytes,
        fill_bytes: walk.fill_bytes,
    }
}

struct Walk {
    max_side: (f64, f64),
    fill_bytes: u64,
}

impl Walk {
    /// Peak bytes beside the target while `group`'s children are drawn.
    fn children(&mut self, group: &Group, transform: Transform) -> u64 {
        group
            .children()
            .iter()
            .map(|node| self.node(node, transform))
            .max()
            .unwrap_or(0)
    }

    fn node(&mut self, node: &Node, transform: Transform) -> u64 {
        match node {
            Node::Group(group) => self.group(group, transform),
            Node::Path(path) => self.path(path, transform),
            // Never drawn: no image is resolved (`svg.rs`).
            Node::Image(_) => 0,
            Node::Text(text) => self.group(text.flattened(), transform),
        }
    }

    fn group(&mut self, group: &Group, transform: Transform) -> u64 {
        let transform = transform.pre_concat(group.transform());
        if !group.should_isolate() {
            return self.children(group, transform);
        }
        let layer =
            self.box_bytes(Some(group.layer_bounding_box()), transform, 4.0) + PIXMAP_SCRATCH;
        self.fill_bytes = self.fill_bytes.saturating_add(layer);
        let children = self.children(group, transform);
        let clip = group.clip_path().map_or(0, |clip| self.clip(clip, layer));
        let mask = group
            .mask()
            .map_or(0, |mask| self.mask(mask, transform, layer));
        // The source and a result per primitive (results are kept for
        // later primitives to name); each primitive's work a pixel.
        let (scale_x, scale_y) = transform.get_scale();
        let mut primitives = 0u64;
        for primitive in group.filters().iter().flat_map(|f| f.primitives()) {
            primitives += 1;
            let work = primitive_work(primitive.kind(), scale_x, scale_y);
            self.fill_bytes = self.fill_bytes.saturating_add(layer.saturating_mul(work));
        }
        if primitives > 0 {
            primitives += 1;
        }
        let filters = layer.saturating_mul(primitives);
        layer.saturating_add(children.max(clip).max(mask).max(filters))
    }

    /// A clip: a pixmap of the layer's size and its alpha mask, and the
    /// clip's own clip, held meanwhile.
    fn clip(&mut self, clip: &ClipPath, layer: u64) -> u64 {
        let own = layer.saturating_add(layer / 4);
        self.fill_bytes = self.fill_bytes.saturating_add(own);
        let inner = clip.clip_path().map_or(0, |inner| self.clip(inner, layer));
        own.saturating_add(inner)
    }

    /// A mask: a pixmap of the layer's size and an alpha mask, its content
    /// drawn into it, and the mask's own mask, held meanwhile.
    fn mask(&mut self, mask: &Mask, transform: Transform, layer: u64) -> u64 {
        let own = layer.saturating_add(layer / 4);
        self.fill_bytes = self.fill_bytes.saturating_add(own);
        let content = self.children(mask.root(), transform);
        let inner = mask
            .mask()
            .map_or(0, |inner| self.mask(inner, transform, layer));
        own.saturating_add(content.max(inner))
    }

    /// A path: the part of the canvas its box covers, filled, and the
    /// tiles of the patterns it is painted with.
    fn path(&mut self, path: &Path, transform: Transform) -> u64 {
        let covered = self.box_bytes(
            NonZeroRect::from_xywh(
                path.stroke_bounding_box().x(),
                path.stroke_bounding_box().y(),
                path.stroke_bounding_box().width().max(1.0),
                path.stroke_bounding_box().height().max(1.0),
            ),
            transform,
            0.0,
        );
        self.fill_bytes = self.fill_bytes.saturating_add(covered);
        let paints = [
            path.fill().map(|fill| fill.paint()),
            path.stroke().map(|stroke| stroke.paint()),
        ];
        paints
            .into_iter()
            .flatten()
            .map(|paint| match paint {
                Paint::Pattern(pattern) => self.pattern(pattern, transform),
                _ => 0,
            })
            .max()
            .unwrap_or(0)
    }

    /// A pattern's tile, at the scale it is drawn, and what its content
    /// holds while it is drawn into the tile.
    fn pattern(&mut self, pattern: &Pattern, transform: Transform) -> u64 {
        let (scale_x, scale_y) = transform.pre_concat(pattern.transform()).get_scale();
        let rect = pattern.rect();
        let side =
            |length: f32, scale: f32| (f64::from(length) * f64::from(scale)).round().max(0.0);
        let tile = ((side(rect.width(), scale_x) * side(rect.height(), scale_y) * 4.0)
            .min(u64::MAX as f64) as u64)
            .saturating_add(PIXMAP_SCRATCH);
        self.fill_bytes = self.fill_bytes.saturating_add(tile);
        let content = self.children(pattern.root(), Transform::from_scale(scale_x, scale_y));
        tile.saturating_add(content)
    }

    /// Bytes of a pixmap over `rect` drawn with `transform`, `margin` pixels
    /// added on each side, no larger than resvg's largest layer.
    fn box_bytes(&self, rect: Option<NonZeroRect>, transform: Transform, margin: f64) -> u64 {
        let Some(drawn) = rect.and_then(|rect| rect.transform(transform)) else {
            return 0;
        };
        let side = |length: f32, max: f64| (f64::from(length).ceil() + margin).clamp(1.0, max);
        let (max_width, max_height) = self.max_side;
        (side(drawn.width(), max_width) * side(drawn.height(), max_height) * 4.0) as u64
    }
}

/// A filter primitive's work for each pixel of its region, in pixels
/// filled: the pixels a convolution or a morphology reads for each (its
/// kernel, its radius at the drawing's scale), a noise's octaves, a light's
/// 3x3 normals; one for the others.
fn primitive_work(kind: &Kind, scale_x: f32, scale_y: f32) -> u64 {
    let span = |radius: f32, scale: f32| {
        (f64::from(radius) * f64::from(scale)).ceil().max(0.0) * 2.0 + 1.0
    };
    match kind {
        Kind::ConvolveMatrix(convolve) => {
            u64::from(convolve.matrix().columns()) * u64::from(convolve.matrix().rows())
        }
        Kind::Morphology(morphology) => {
            let area = span(morphology.radius_x().get(), scale_x)
                * span(morphology.radius_y().get(), scale_y);
            area.min(u64::MAX as f64) as u64
        }
        Kind::Turbulence(turbulence) => u64::from(turbulence.num_octaves()).max(1),
        Kind::DiffuseLighting(_) | Kind::SpecularLighting(_) => 9,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::super::route::tests::LIMITS;
    use super::super::svg::rasterise;
    use crate::error::Error;
    use crate::request::TargetSize;
    use crate::thumbnail::Thumbnail;

    fn draw(svg: &str, target: TargetSize) -> Result<Thumbnail, Error> {
        rasterise(&Arc::from("http://x/a.svg"), svg.as_bytes(), target, LIMITS)
    }

    /// Refused as over the decode limit, quickly, saying `what`.
    fn refused(svg: &str, target: TargetSize, what: &str) {
        let started = Instant::now();
        match draw(svg, target) {
            Err(Error::TooLarge {
                setting: "decode.max_alloc_bytes",
                what: said,
                ..
            }) => assert!(said.contains(what), "{said}"),
            other => panic!(
                "expected a refusal for {what}, got {:?}",
                other.map(|t| t.width)
            ),
        }
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    /// `levels` groups with opacity, one inside the other, around a square.
    fn nested_layers(levels: usize) -> String {
        format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100">{}<rect width="100" height="100"/>{}</svg>"#,
            r#"<g opacity="0.9">"#.repeat(levels),
            "</g>".repeat(levels)
        )
    }

    #[test]
    fn layers_inside_layers_are_held_at_once() {
        // Twenty layers of 2052x2052 pixels are 337 MB.
        refused(&nested_layers(20), TargetSize::square(2048), "of layers");
        // The same at 64 pixels: 20 layers of 68x68.
        let thumbnail = draw(&nested_layers(20), TargetSize::square(64)).unwrap();
        assert_eq!(thumbnail.width, 64);
        // Side by side, they are held one at a time.
        let siblings = format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100">{}</svg>"#,
            r#"<g opacity="0.9"><rect width="100" height="100"/></g>"#.repeat(20)
        );
        assert_eq!(
            draw(&siblings, TargetSize::square(2048)).unwrap().width,
            2048
        );
    }

    #[test]
    fn a_pattern_tile_is_counted_at_its_drawn_size() {
        // A 100,000-unit tile at 0.64 pixels a unit: 16 GB, which resvg
        // would ask for.
        let huge_tile = r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100" width="100" height="100"><pattern id="p" width="100000" height="100000" patternUnits="userSpaceOnUse"><rect width="10" height="10"/></pattern><rect width="100" height="100" fill="url(#p)"/></svg>"#;
        refused(huge_tile, TargetSize::square(64), "pattern tiles");
        // A tile of the canvas's size painted by 2,000 paths is drawn
        // 2,000 times: 2,000 x 1 MB.
        let repainted = format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><pattern id="p" width="100" height="100" patternUnits="userSpaceOnUse"><rect width="50" height="50"/></pattern>{}</svg>"#,
            r#"<rect width="1" height="1" fill="url(#p)"/>"#.repeat(2000)
        );
        refused(&repainted, TargetSize::square(512), "for every path");
        // Painted by a few paths, it is drawn.
        let few = repainted.replace(
            &r#"<rect width="1" height="1" fill="url(#p)"/>"#.repeat(1990),
            "",
        );
        assert_eq!(draw(&few, TargetSize::square(512)).unwrap().width, 512);
    }

    #[test]
    fn masks_clips_and_filters_count_their_pixmaps() {
        let masked = |levels: usize| {
            let mut svg = String::from(
                r#"<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><defs><mask id="m0"><rect width="100" height="100" fill="white"/></mask>"#,
            );
            for level in 1..levels {
                svg.push_str(&format!(
                    r##"<mask id="m{level}" mask="url(#m{})"><rect width="100" height="100" fill="white"/></mask>"##,
                    level - 1
                ));
            }
            svg.push_str(&format!(
                r##"</defs><rect width="100" height="100" mask="url(#m{})"/></svg>"##,
                levels - 1
            ));
            svg
        };
        assert_eq!(
            draw(&masked(4), TargetSize::square(512)).unwrap().width,
            512
        );
        refused(&masked(30), TargetSize::square(2048), "of layers");
        let blurred = format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><filter id="f">{}</filter><rect width="100" height="100" filter="url(#f)"/></svg>"#,
            r#"<feGaussianBlur stdDeviation="1"/>"#.repeat(40)
        );
        refused(&blurred, TargetSize::square(2048), "of layers");
        // A noise of a million octaves over a 512-pixel layer: work, not
        // memory.
        let noisy = r#"<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><filter id="f"><feTurbulence baseFrequency="0.05" numOctaves="1000000"/></filter><rect width="100" height="100" filter="url(#f)"/></svg>"#;
        refused(noisy, TargetSize::square(512), "fills");
        let few_octaves = noisy.replace("1000000", "2");
        assert_eq!(
            draw(&few_octaves, TargetSize::square(512)).unwrap().width,
            512
        );
    }
}
