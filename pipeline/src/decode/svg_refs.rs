//! SVG's references, followed before anything is converted: the elements a
//! document draws once every reference in it is expanded, how deep they
//! nest, and whether the references loop.
//!
//! usvg converts a referenced element again for each reference: a `<use>`
//! copies its target, a pattern, a mask, a clip path or a filter is
//! converted for each element it is applied to, a marker for each vertex
//! of the path that carries it. So a small file whose patterns each paint
//! the next twice is 2^N elements to convert, and references that loop
//! through three patterns, clip paths or filters (`feImage`) recurse
//! until the stack overflows, which aborts the process (usvg 0.49 breaks
//! loops of one or two links only). Here every reference is followed as
//! usvg follows it, in attributes, in `style` and in style sheets (the
//! selectors matched as usvg matches them), memoised by element so a
//! chain costs its length to count, and the total, the depth along
//! references and any loop are checked before usvg sees the document.
//! Gradients are not expanded: usvg shares their stops.
//!
//! Runs inside a decode, on the decode thread; keeps nothing.

use std::collections::{HashMap, HashSet};

use resvg::usvg::roxmltree::{self, Node, NodeId};

/// The deepest nesting of elements, references followed included: usvg's
/// converter and resvg's renderer recurse along both.
pub(super) const MAX_DEPTH: usize = 256;

/// Selector matches a style sheet may take (its rules times the document's
/// elements; usvg tries every rule on every element, about 12 ns each:
/// measured, 38 million in 0.46 s): a hundred rules over twenty thousand
/// elements is 2 million.
pub(super) const MAX_STYLE_MATCHES: u64 = 20_000_000;

/// Why an SVG is refused before it is converted.
#[derive(Debug, PartialEq)]
pub(super) enum Over {
    /// Nested, references included, deeper than [`MAX_DEPTH`].
    Depth,
    /// At least this many elements, over the limit asked.
    Elements(u64),
    /// The references loop back to this element (its `id`, or its name).
    Loop(String),
    /// The style sheet's rules times the elements, over
    /// [`MAX_STYLE_MATCHES`].
    StyleMatches(u64),
}

/// The elements `document` draws with every reference expanded, at most
/// `max_elements` (counting stops past it).
pub(super) fn count_drawn(
    document: &roxmltree::Document<'_>,
    max_elements: u64,
) -> Result<u64, Over> {
    Expanded::new(document, max_elements)?.count()
}

/// The rules of the document's style sheets that name something: only
/// their declarations can add references.
struct Sheet<'a> {
    rules: Vec<simplecss::Rule<'a>>,
    /// Its rules, those that name nothing included.
    all_rules: u64,
}

impl<'a> Sheet<'a> {
    /// Every `<style>` element's rules (those usvg reads: CSS or no type),
    /// kept when a declaration holds `url(`.
    fn new(document: &'a roxmltree::Document<'_>) -> Self {
        let mut sheet = simplecss::StyleSheet::new();
        for style in document.descendants().filter(|n| n.has_tag_name("style")) {
            if style
                .attribute("type")
                .is_some_and(|kind| kind != "text/css")
            {
                continue;
            }
            if let Some(text) = style.text() {
                sheet.parse_more(text);
            }
        }
        let all_rules = sheet.rules.len() as u64;
        let rules = sheet
            .rules
            .into_iter()
            .filter(|rule| rule.declarations.iter().any(|d| d.value.contains("url(")))
            .collect();
        Self { rules, all_rules }
    }
}

/// A reference from an element, and how many times usvg converts its target
/// for it.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// A `<use>` or `<textPath>` link: skipped when it names its own
    /// ancestor, as usvg does.
    Use,
    /// A paint, clip path, mask, filter, template or `feImage`: once.
    Once,
    /// A marker: once for each vertex of the path.
    Marker,
}

/// Counts a document's elements as drawn (memoised by element).
struct Expanded<'a, 'input> {
    root: Node<'a, 'input>,
    /// The elements by their `id`, the first of each.
    ids: HashMap<&'a str, Node<'a, 'input>>,
    sheet: Sheet<'a>,
    /// Each element counted: its elements drawn, and the depth of its
    /// expanded subtree (checked again wherever it is reached).
    counted: HashMap<NodeId, (u64, usize)>,
    /// The elements being counted, from the root to here: reaching one
    /// again is a loop.
    in_progress: HashSet<NodeId>,
    max_elements: u64,
}

impl<'a, 'input> Expanded<'a, 'input> {
    fn new(document: &'a roxmltree::Document<'input>, max_elements: u64) -> Result<Self, Over> {
        let mut ids = HashMap::new();
        let mut elements = 0u64;
        for node in document.descendants().filter(Node::is_element) {
            elements += 1;
            if let Some(id) = node.attribute("id") {
                ids.entry(id).or_insert(node);
            }
        }
        let sheet = Sheet::new(document);
        let matches = elements.saturating_mul(sheet.all_rules);
        if matches > MAX_STYLE_MATCHES {
            return Err(Over::StyleMatches(matches));
        }
        Ok(Self {
            root: document.root_element(),
            ids,
            sheet,
            counted: HashMap::new(),
            in_progress: HashSet::new(),
            max_elements,
        })
    }

    fn count(mut self) -> Result<u64, Over> {
        self.element(self.root, 0).map(|(count, _)| count)
    }

    /// The elements `node` draws, and how deep its expanded subtree goes.
    fn element(&mut self, node: Node<'a, 'input>, depth: usize) -> Result<(u64, usize), Over> {
        if depth > MAX_DEPTH {
            return Err(Over::Depth);
        }
        if self.in_progress.contains(&node.id()) {
            let name = node.attribute("id").unwrap_or(node.tag_name().name());
            return Err(Over::Loop(name.to_string()));
        }
        if let Some(&(count, height)) = self.counted.get(&node.id()) {
            if depth + height > MAX_DEPTH {
                return Err(Over::Depth);
            }
            return Ok((count, height));
        }
        self.in_progress.insert(node.id());
        let mut count: u64 = 1;
        let mut height = 0;
        let mut add = |this: &mut Self, child, times: u64| -> Result<(), Over> {
            let (below, child_height) = this.element(child, depth + 1)?;
            count = count.saturating_add(below.saturating_mul(times));
            height = height.max(child_height + 1);
            Ok(())
        };
        for child in node.children().filter(Node::is_element) {
            add(self, child, 1)?;
        }
        for (target, kind) in self.references(node) {
            let times = match kind {
                // A reference to an ancestor loops; the converter skips it.
                Kind::Use if node.ancestors().any(|a| a == target) => continue,
                Kind::Use | Kind::Once => 1,
                Kind::Marker => vertices(node),
            };
            add(self, target, times)?;
        }
        self.in_progress.remove(&node.id());
        if count > self.max_elements {
            return Err(Over::Elements(count));
        }
        self.counted.insert(node.id(), (count, height));
        Ok((count, height))
    }

    /// The elements `node` refers to that usvg converts for it: its links
    /// (`href`, both spellings, each as usvg reads one) and every `url(#…)`
    /// in its attributes, its `style` and the style sheet's rules that
    /// match it. Gradients are left out.
    fn references(&self, node: Node<'a, 'input>) -> Vec<(Node<'a, 'input>, Kind)> {
        let mut names: Vec<(&str, Kind)> = Vec::new();
        let link = if matches!(node.tag_name().name(), "use" | "textPath") {
            Kind::Use
        } else {
            Kind::Once
        };
        for attribute in node.attributes() {
            let value = attribute.value();
            if attribute.name() == "href" {
                if let Some(id) = value.trim().strip_prefix('#') {
                    names.push((id.trim(), link));
                }
            } else if attribute.name() != "style" && value.contains("url(") {
                let kind = reference_kind(attribute.name());
                names.extend(url_ids(value).map(|id| (id, kind)));
            }
        }
        let mut declared = |name: &str, value: &'a str| {
            if value.contains("url(") {
                let kind = reference_kind(name);
                names.extend(url_ids(value).map(|id| (id, kind)));
            }
        };
        for rule in &self.sheet.rules {
            if rule.selector.matches(&Element(node)) {
                for declaration in &rule.declarations {
                    declared(declaration.name, declaration.value);
                }
            }
        }
        if let Some(style) = node.attribute("style") {
            for declaration in simplecss::DeclarationTokenizer::from(style) {
                declared(declaration.name, declaration.value);
            }
        }
        names
            .into_iter()
            .filter_map(|(id, kind)| Some((*self.ids.get(id)?, kind)))
            .filter(|(target, _)| {
                !matches!(
                    target.tag_name().name(),
                    "linearGradient" | "radialGradient"
                )
            })
            .collect()
    }
}

/// A marker property (`marker`, `marker-start`, `-mid`, `-end`) or another.
fn reference_kind(property: &str) -> Kind {
    if property.starts_with("marker") {
        Kind::Marker
    } else {
        Kind::Once
    }
}

/// The ids named by `url(#id)` in `value` (spaces and quotes around the
/// link allowed).
fn url_ids(value: &str) -> impl Iterator<Item = &str> {
    value.split("url(").skip(1).filter_map(|rest| {
        let link = rest.trim_start().trim_start_matches(['"', '\'']);
        let id = link.strip_prefix('#')?;
        let end = id
            .find(|c: char| c == ')' || c == '"' || c == '\'' || c.is_whitespace())
            .unwrap_or(id.len());
        Some(&id[..end])
    })
}

/// At least the vertices of the shape `node` draws (counted generously:
/// every group of digits and every path command), for the markers drawn
/// on them; 2 for any other element.
fn vertices(node: Node<'_, '_>) -> u64 {
    let data = node.attribute("d").or_else(|| node.attribute("points"));
    let Some(data) = data else { return 2 };
    let mut count = 0u64;
    let mut previous_was_digit = false;
    for c in data.chars() {
        let digit = c.is_ascii_digit();
        if (digit && !previous_was_digit) || c.is_ascii_alphabetic() {
            count += 1;
        }
        previous_was_digit = digit;
    }
    count.max(2)
}

/// An element as a style sheet's selector sees it (as usvg matches them).
struct Element<'a, 'input>(Node<'a, 'input>);

impl simplecss::Element for Element<'_, '_> {
    fn parent_element(&self) -> Option<Self> {
        self.0.parent_element().map(Element)
    }

    fn prev_sibling_element(&self) -> Option<Self> {
        self.0.prev_sibling_element().map(Element)
    }

    fn has_local_name(&self, name: &str) -> bool {
        self.0.tag_name().name() == name
    }

    fn attribute_matches(&self, name: &str, operator: simplecss::AttributeOperator<'_>) -> bool {
        self.0
            .attribute(name)
            .is_some_and(|value| operator.matches(value))
    }

    fn pseudo_class_matches(&self, class: simplecss::PseudoClass<'_>) -> bool {
        matches!(class, simplecss::PseudoClass::FirstChild) && self.prev_sibling_element().is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(svg: &str) -> Result<u64, Over> {
        let document = roxmltree::Document::parse(svg).unwrap();
        count_drawn(&document, u64::from(u32::MAX))
    }

    const HEAD: &str = r#"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="100" height="100">"#;

    #[test]
    fn links_are_read_from_attributes_style_and_style_sheets() {
        let ids: Vec<&str> =
            url_ids(r##"url(#a) red, url( '#b' ), url("#c"), url(other.svg#d)"##).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        // A pattern of three elements, applied by each route.
        let pattern = r#"<pattern id="p" width="4" height="4"><rect width="1" height="1"/><rect width="2" height="2"/></pattern>"#;
        let plain = count(&format!("{HEAD}{pattern}<rect/></svg>")).unwrap();
        for applied in [
            r##"<rect fill="url(#p)"/>"##,
            r##"<rect style="stroke: url(#p)"/>"##,
            r##"<style>.c { fill: url(#p) }</style><rect class="c"/>"##,
        ] {
            let with_style = applied.starts_with("<style>");
            let total = count(&format!("{HEAD}{pattern}{applied}</svg>")).unwrap();
            assert_eq!(total, plain + 3 + u64::from(with_style), "{applied}");
        }
        // A rule that matches nothing adds nothing.
        let unmatched = format!(
            r##"{HEAD}<style>.other {{ fill: url(#p) }}</style>{pattern}<rect class="c"/></svg>"##
        );
        assert_eq!(count(&unmatched).unwrap(), plain + 1);
        // Gradients are shared, not expanded.
        let gradient = format!(
            r##"{HEAD}<linearGradient id="g"><stop/><stop/></linearGradient><rect fill="url(#g)"/><rect fill="url(#g)"/></svg>"##
        );
        assert_eq!(count(&gradient).unwrap(), 6);
    }

    #[test]
    fn a_marker_counts_for_every_vertex() {
        let svg = |d: &str| {
            format!(
                r##"{HEAD}<marker id="m"><circle r="1"/></marker><path d="{d}" marker-mid="url(#m)"/></svg>"##
            )
        };
        let short = count(&svg("M0 0 L5 5")).unwrap();
        let long = count(&svg(&"L5 5 ".repeat(1000))).unwrap();
        assert!(long >= short + 2 * 1000, "{short} {long}");
    }

    #[test]
    fn references_that_loop_or_double_are_refused() {
        // Three patterns, three clip paths, three filters' images: each
        // leads back to the first (usvg recurses until the stack
        // overflows on these).
        let patterns = format!(
            r##"{HEAD}<pattern id="a"><rect fill="url(#b)"/></pattern><pattern id="b"><rect fill="url(#c)"/></pattern><pattern id="c"><rect fill="url(#a)"/></pattern><rect fill="url(#a)"/></svg>"##
        );
        let clips = format!(
            r##"{HEAD}<clipPath id="a" clip-path="url(#b)"/><clipPath id="b" clip-path="url(#c)"/><clipPath id="c" clip-path="url(#a)"/><rect clip-path="url(#a)"/></svg>"##
        );
        let images = format!(
            r##"{HEAD}<filter id="a"><feImage href="#ra"/></filter><filter id="b"><feImage href="#rb"/></filter><rect id="ra" filter="url(#b)"/><rect id="rb" filter="url(#a)"/></svg>"##
        );
        let styled = format!(
            r##"{HEAD}<style>.x {{ mask: url(#a) }} .y {{ mask: url(#b) }}</style><mask id="a"><rect class="y"/></mask><mask id="b"><rect class="x"/></mask><rect class="x"/></svg>"##
        );
        for svg in [patterns, clips, images, styled] {
            assert!(matches!(count(&svg), Err(Over::Loop(_))), "{svg}");
        }
        // Forty patterns, each painting two squares with the one below:
        // 2^40 squares, counted in forty steps.
        let mut chain = format!(r#"{HEAD}<pattern id="p0"><rect/></pattern>"#);
        for level in 1..=40 {
            chain.push_str(&format!(
                r##"<pattern id="p{level}"><rect fill="url(#p{0})"/><rect fill="url(#p{0})"/></pattern>"##,
                level - 1
            ));
        }
        chain.push_str(r##"<rect fill="url(#p40)"/></svg>"##);
        assert!(matches!(count(&chain), Err(Over::Elements(_))));
        // A chain of masks deeper than the renderer may recurse.
        let mut deep = HEAD.to_string();
        for level in 0..=MAX_DEPTH {
            deep.push_str(&format!(
                r##"<mask id="m{level}" mask="url(#m{})"/>"##,
                level + 1
            ));
        }
        deep.push_str(r##"<rect mask="url(#m0)"/></svg>"##);
        assert_eq!(count(&deep), Err(Over::Depth));
        // A style sheet of 2,000 rules over 20,000 elements: usvg would
        // try 40 million matches.
        let heavy = format!(
            "{HEAD}<style>{}</style>{}</svg>",
            (0..2000)
                .map(|i| format!(".c{i} {{ fill: red }}"))
                .collect::<String>(),
            "<rect/>".repeat(20_000)
        );
        assert!(matches!(count(&heavy), Err(Over::StyleMatches(_))));
    }
}
