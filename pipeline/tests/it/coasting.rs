//! Coasting lists: the prediction against egui's own kinetic scrolling (a
//! drag released at a velocity in a headless `egui::Context`, stepped until
//! the `ScrollArea` rests), and what both front doors of `thumbpipe::egui`
//! request during a coast, counted by the server: the resting rows first,
//! never a row on screen for less than the threshold, and the old
//! destination cancelled when a new drag stops the coast.

use std::collections::HashSet;
use std::time::Duration;

use egui::{Context, Event, PointerButton, Pos2, RawInput, Rect, Sense, Ui, Vec2, pos2, vec2};
use thumbpipe::CoastPrediction;
use thumbpipe::egui::{Cell, CoastWatch, EguiConfig, Loader, RowThumbnail, ThumbnailList};

use crate::common::{self, server};

const ROWS: usize = 200;
const ROW_HEIGHT: f32 = 72.0;
const CELL: Vec2 = Vec2::splat(64.0);
/// Where the finger goes down: inside the list, low enough to drag upwards.
const GRAB: Pos2 = pos2(150.0, 700.0);

/// What the list's rows are drawn with.
enum Rows {
    /// Empty rows: only the scrolling is under test.
    Plain,
    List(Box<ThumbnailList<usize>>, Vec<String>),
    /// `egui::Image`s in cells they fit inside, or fill (cropped).
    Uri(Loader, Vec<String>, Cell),
}

impl Rows {
    fn follow(&mut self, coast: Option<&CoastPrediction>) {
        match self {
            Rows::Plain => {}
            Rows::List(list, urls) => {
                list.follow_coast(coast, CELL, |row| (row, urls[row].as_str()))
            }
            Rows::Uri(loader, urls, cell) => {
                loader.follow_coast(coast, *cell, |row| urls[row].as_str())
            }
        }
    }

    /// Draws item `row` (a row, or a grid's cell); whether its image is
    /// shown.
    fn show(&mut self, ui: &mut Ui, row: usize) -> bool {
        match self {
            Rows::Plain => {
                ui.allocate_exact_size(vec2(100.0, ROW_HEIGHT), Sense::hover());
                true
            }
            Rows::List(list, urls) => {
                matches!(
                    list.show(ui, row, &urls[row], CELL).1,
                    RowThumbnail::Shown(..)
                )
            }
            Rows::Uri(loader, urls, cell) => {
                let filled = *cell == Cell::filled(CELL);
                ui.add(
                    egui::Image::new(urls[row].as_str())
                        .fit_to_exact_size(CELL)
                        .maintain_aspect_ratio(!filled),
                );
                loader.drawn(&urls[row], *cell).is_some()
            }
        }
    }

    fn end_pass(&mut self) {
        if let Rows::List(list, _) = self {
            list.end_pass();
        }
    }
}

/// A list of [`ROWS`] rows in a headless context, stepped at `1 / fps`
/// seconds a pass of egui time.
struct Scroller {
    ctx: Context,
    rows: Rows,
    /// Items to a row: 1 in a list, more in a grid.
    columns: usize,
    watch: CoastWatch,
    dt: f64,
    time: f64,
    /// Sleep a pass's time after it, so that loads see the coast's pace.
    real_time: bool,
    /// What the last pass saw.
    offset: f32,
    velocity: f32,
    max_offset: f32,
    visible: std::ops::Range<usize>,
    all_shown: bool,
    /// The prediction the last pass acted on.
    coast: Option<CoastPrediction>,
    /// Where the pointer is.
    pointer: Pos2,
}

impl Scroller {
    /// The list drawn once in `ctx`.
    fn new(ctx: Context, fps: f64, rows: Rows) -> Self {
        Self::grid(ctx, fps, rows, 1)
    }

    /// The grid of `columns` items to a row drawn once in `ctx`.
    fn grid(ctx: Context, fps: f64, rows: Rows, columns: usize) -> Self {
        let mut scroller = Self {
            ctx,
            rows,
            columns,
            watch: CoastWatch::new(),
            dt: 1.0 / fps,
            time: 0.0,
            real_time: false,
            offset: 0.0,
            velocity: 0.0,
            max_offset: 0.0,
            visible: 0..0,
            all_shown: false,
            coast: None,
            pointer: GRAB,
        };
        scroller.pass(Vec::new(), None);
        scroller
    }

    /// One pass with `events`; `jump_to` sets the offset first.
    fn pass(&mut self, events: Vec<Event>, jump_to: Option<f32>) {
        self.time += self.dt;
        let input = RawInput {
            screen_rect: Some(Rect::from_min_size(Pos2::ZERO, vec2(400.0, 800.0))),
            time: Some(self.time),
            predicted_dt: self.dt as f32,
            events,
            ..RawInput::default()
        };
        let Self {
            rows,
            watch,
            coast,
            columns,
            ..
        } = self;
        let columns = *columns;
        let mut seen = None;
        let _ = self.ctx.run_ui(input, |ui| {
            *coast = watch.predict(ui.ctx());
            rows.follow(coast.as_ref());
            // Dragged by the mouse too, not only on a touch screen.
            let mut area = egui::ScrollArea::vertical()
                .auto_shrink(false)
                .scroll_source(egui::scroll_area::ScrollSource::ALL);
            if let Some(offset) = jump_to {
                area = area.vertical_scroll_offset(offset);
            }
            let output = area.show_rows(ui, ROW_HEIGHT, ROWS, |ui, range| {
                let mut all = true;
                for row in range.clone() {
                    if columns == 1 {
                        all &= rows.show(ui, row);
                    } else {
                        ui.horizontal(|ui| {
                            for item in row * columns..(row + 1) * columns {
                                all &= rows.show(ui, item);
                            }
                        });
                    }
                }
                (range, all)
            });
            if columns == 1 {
                watch.observe(ui, &output, ROW_HEIGHT, ROWS);
            } else {
                watch.observe_grid(ui, &output, ROW_HEIGHT, ROWS * columns, columns);
            }
            rows.end_pass();
            let max = (output.content_size.y - output.inner_rect.height()).max(0.0);
            seen = Some((
                output.state.unclamped_offset().y,
                output.state.velocity().y,
                max,
                output.inner,
            ));
        });
        let (offset, velocity, max, (visible, all)) = seen.expect("the list was drawn");
        (self.offset, self.velocity, self.max_offset) = (offset, velocity, max);
        (self.visible, self.all_shown) = (visible, all);
        if self.real_time {
            std::thread::sleep(Duration::from_secs_f64(self.dt));
        }
    }

    /// A finger put down on the list, moved up at `speed` points per second
    /// for `frames` passes and lifted while moving: the list coasts down
    /// (a negative speed drags down, and the list coasts up).
    fn fling(&mut self, speed: f32, frames: usize) {
        let mut at = GRAB;
        self.pass(vec![Event::PointerMoved(at)], None);
        self.pass(vec![press(at, true)], None);
        let step = speed * self.dt as f32;
        for frame in 0..frames {
            at.y -= step;
            let mut events = vec![Event::PointerMoved(at)];
            if frame + 1 == frames {
                events.push(press(at, false));
            }
            self.pass(events, None);
        }
        self.pointer = at;
    }

    /// Passes until the list is still and not past an end (20 s of egui
    /// time at most); returns the passes taken.
    fn until_rest(&mut self) -> usize {
        for pass in 0..(20.0 / self.dt) as usize {
            let inside = (0.0..=self.max_offset).contains(&self.offset);
            if self.velocity == 0.0 && inside {
                return pass;
            }
            self.pass(Vec::new(), None);
        }
        panic!(
            "the list still moves after 20 s: {} at {}",
            self.offset, self.velocity
        );
    }
}

fn press(pos: Pos2, pressed: bool) -> Event {
    Event::PointerButton {
        pos,
        button: PointerButton::Primary,
        pressed,
        modifiers: Default::default(),
    }
}

#[test]
fn the_predicted_rest_is_within_a_row_of_where_egui_stops() {
    let pitch = ROW_HEIGHT + egui::Spacing::default().item_spacing.y;
    // (frames per second, drag speed, start offset): slow and fast, three
    // frame rates, and two that run into an end of the list.
    let cases = [
        (60.0, 800.0, 0.0),
        (60.0, 3000.0, 0.0),
        (60.0, 9000.0, 1000.0),
        (30.0, 4000.0, 0.0),
        (144.0, 4000.0, 0.0),
        (60.0, 8000.0, 12_500.0),
        (60.0, -6000.0, 2000.0),
    ];
    for (fps, speed, start) in cases {
        let mut list = Scroller::new(Context::default(), fps, Rows::Plain);
        list.pass(Vec::new(), Some(start));
        list.fling(speed, 6);
        // The pass after the release acts on the first prediction.
        list.pass(Vec::new(), None);
        let coast = list
            .coast
            .unwrap_or_else(|| panic!("{fps} Hz, {speed}: no coast after the release"));
        assert!(list.velocity != 0.0);
        list.until_rest();
        let error = (coast.rest_offset() - list.offset).abs();
        eprintln!(
            "{fps} Hz, {speed} pt/s from {start}: predicted {}, egui rested at {} ({error:.2} off)",
            coast.rest_offset(),
            list.offset
        );
        // A row is what loading needs; egui stops with up to its stop
        // distance (half a point) of the coast left, and that is all.
        assert!(
            error < pitch && error <= 1.0,
            "{fps} Hz, {speed} pt/s from {start}: predicted {}, egui rested at {} ({error} off)",
            coast.rest_offset(),
            list.offset
        );
        assert_eq!(coast.resting_rows(), coast.list().visible_rows(list.offset));
    }
}

/// The rows requested at the destination: the resting rows and the one
/// more egui draws below them (these coasts stop short of the list's end).
fn destination_of(resting: std::ops::Range<usize>) -> std::ops::Range<usize> {
    resting.start..resting.end + 1
}

/// The row ids of the image requests the server saw, in order.
fn requested_rows(server: &fixture_server::FixtureServer) -> Vec<usize> {
    server
        .requested_files()
        .iter()
        .map(|file| {
            file.trim_end_matches(".jpg")
                .parse()
                .expect("a row's image")
        })
        .collect()
}

/// The coast a fast fling makes at 250 ms latency with a front door of
/// `thumbpipe::egui`, the first screen loaded before it; returns what the
/// server was asked for from the release on, and the first prediction.
fn coast_at_250_ms(
    make: impl FnOnce(&Context, EguiConfig, Vec<String>) -> Rows,
    prediction: bool,
    columns: usize,
) -> (Vec<usize>, CoastPrediction, HashSet<usize>) {
    let server = server(250);
    let urls: Vec<String> = (0..(ROWS * columns) as u32)
        .map(|item| server.image_url(item))
        .collect();
    let mut config = EguiConfig::default();
    config.coast_prediction = prediction;
    config.coast_min_time_on_screen = Some(MIN_ON_SCREEN);
    if prediction {
        // One slot a column: the server sees requests in the order the
        // scheduler starts them, not in the order new connections happen
        // to open (a grid's row at a time, in the time a test has).
        config.pipeline.fetch.max_per_host = columns;
    }
    let ctx = Context::default();
    let rows = make(&ctx, config, urls);
    let mut list = Scroller::grid(ctx, 60.0, rows, columns);
    list.real_time = true;
    assert!(
        common::eventually(|| {
            list.pass(Vec::new(), None);
            list.all_shown
        }),
        "the first screen loads"
    );
    let shown_before: HashSet<usize> = list.visible.clone().collect();
    server.reset_stats();
    // Up at 9000 points a second (6000 without the prediction, so that no
    // row waits for a slot and every row shown reaches the server): a
    // coast of 4500 points, 60 rows (3000, 40).
    list.fling(if prediction { 9000.0 } else { 6000.0 }, 6);
    let mut shown_before_coast = shown_before;
    shown_before_coast.extend(list.visible.clone());
    list.pass(Vec::new(), None);
    let coast = list.coast.expect("a coast after the release");
    list.until_rest();
    // Its loads end.
    assert!(common::eventually(|| {
        list.pass(Vec::new(), None);
        list.all_shown && server.stats().in_flight == 0
    }));
    (requested_rows(&server), coast, shown_before_coast)
}

const MIN_ON_SCREEN: Duration = Duration::from_millis(300);

fn list_rows(ctx: &Context, config: EguiConfig, urls: Vec<String>) -> Rows {
    Rows::List(
        Box::new(ThumbnailList::new(ctx, config).expect("builds")),
        urls,
    )
}

fn uri_rows(ctx: &Context, config: EguiConfig, urls: Vec<String>) -> Rows {
    Rows::Uri(
        thumbpipe::egui::install(ctx, config).expect("installs"),
        urls,
        Cell::fitted(CELL),
    )
}

/// What a coast must have requested: the resting rows (and the one below
/// them egui draws) before any row it passes, and no row that leaves
/// within [`MIN_ON_SCREEN`] of the release. `requested` are items,
/// `columns` to a row; `shown_before` rows.
fn check_coast(
    requested_items: &[usize],
    coast: &CoastPrediction,
    shown_before: &HashSet<usize>,
    columns: usize,
) {
    assert_eq!(
        requested_items.len(),
        requested_items.iter().collect::<HashSet<_>>().len(),
        "no item requested twice: {requested_items:?}"
    );
    // Every item of a resting row not shown before.
    for row in destination_of(coast.resting_rows()).filter(|row| !shown_before.contains(row)) {
        for item in row * columns..(row + 1) * columns {
            assert!(
                requested_items.contains(&item),
                "item {item} of resting row {row}: {requested_items:?}"
            );
        }
    }
    let requested: Vec<usize> = requested_items.iter().map(|item| item / columns).collect();
    let requested = requested.as_slice();
    let resting = coast.resting_rows();
    let destination: HashSet<usize> = destination_of(coast.resting_rows()).collect();
    // The row just above: at rest it may show by less than the half point
    // the prediction can be off, so some passes count it in.
    let edge = resting.start.saturating_sub(1);
    let passed: Vec<usize> = requested
        .iter()
        .copied()
        .filter(|row| !destination.contains(row) && !shown_before.contains(row))
        .collect();
    let last_destination = requested
        .iter()
        .rposition(|row| destination.contains(row))
        .expect("the destination is requested");
    let first_passed = requested
        .iter()
        .position(|row| !destination.contains(row) && !shown_before.contains(row) && *row != edge);
    assert!(
        first_passed.is_none_or(|first| first > last_destination),
        "a passing row before the destination: {requested:?}, destination {destination:?}"
    );
    let destination_requested: HashSet<usize> = requested
        .iter()
        .copied()
        .filter(|row| destination.contains(row))
        .collect();
    assert_eq!(
        destination_requested,
        destination.difference(shown_before).copied().collect(),
        "every resting row not already shown is requested"
    );
    // A row is asked for only if its image, asked for then, arrives
    // before it leaves: as the coast goes on a row's time left shrinks, so
    // from the release it had at least the threshold.
    for row in passed.iter().filter(|row| **row != edge) {
        let left = coast.leaves_after(*row);
        assert!(
            left.is_some_and(|left| left >= MIN_ON_SCREEN),
            "row {row} leaves {left:?} after the release and was requested: {requested:?}"
        );
    }
    // The test means something: the coast flies past rows.
    let flown_past = (shown_before.iter().max().copied().unwrap_or(0) + 1..resting.start)
        .filter(|row| coast.leaves_after(*row).is_some_and(|t| t < MIN_ON_SCREEN))
        .count();
    assert!(
        flown_past >= 10,
        "a fast coast flies past rows: {flown_past}"
    );
}

#[test]
fn a_list_coasting_requests_its_resting_rows_first_and_skips_rows_flown_past() {
    let (requested, coast, shown_before) = coast_at_250_ms(list_rows, true, 1);
    check_coast(&requested, &coast, &shown_before, 1);
}

/// A photo grid, 4 cells to a row, cropped to fill them: the cells of the
/// resting rows first, none of the rows flown past.
#[test]
fn a_grid_coasting_requests_the_cells_of_its_resting_rows_first() {
    let grid = |ctx: &Context, config, urls| {
        let mut list = ThumbnailList::new(ctx, config).expect("builds");
        list.set_crop_to_fill(true);
        Rows::List(Box::new(list), urls)
    };
    let (requested, coast, shown_before) = coast_at_250_ms(grid, true, 4);
    assert_eq!(coast.list().columns, 4);
    check_coast(&requested, &coast, &shown_before, 4);
}

/// The same grid of `egui::Image`s told not to keep their aspect ratio
/// (cropped to fill), followed with `Cell::filled`.
#[test]
fn an_image_grid_coasting_requests_the_cells_of_its_resting_rows_first() {
    let grid = |ctx: &Context, config, urls| {
        let loader = thumbpipe::egui::install(ctx, config).expect("installs");
        Rows::Uri(loader, urls, Cell::filled(CELL))
    };
    let (requested, coast, shown_before) = coast_at_250_ms(grid, true, 4);
    check_coast(&requested, &coast, &shown_before, 4);
}

#[test]
fn an_image_list_coasting_requests_its_resting_rows_first_and_skips_rows_flown_past() {
    let (requested, coast, shown_before) = coast_at_250_ms(uri_rows, true, 1);
    check_coast(&requested, &coast, &shown_before, 1);
}

#[test]
fn without_prediction_a_coast_requests_every_row_it_shows() {
    let (requested, coast, shown_before) = coast_at_250_ms(list_rows, false, 1);
    let resting = coast.resting_rows();
    let first_new = shown_before.iter().max().copied().unwrap_or(0) + 1;
    let requested: HashSet<usize> = requested.into_iter().collect();
    // Every row from the first not shown before to the resting ones.
    for row in first_new..resting.end {
        assert!(requested.contains(&row), "row {row}: {requested:?}");
    }
}

#[test]
fn a_new_drag_during_a_coast_cancels_the_old_destination() {
    // Slow enough that no destination row arrives during the test.
    let server = server(10_000);
    let urls: Vec<String> = (0..ROWS as u32).map(|row| server.image_url(row)).collect();
    let mut config = EguiConfig::default();
    config.coast_min_time_on_screen = Some(MIN_ON_SCREEN);
    let ctx = Context::default();
    let rows = list_rows(&ctx, config, urls);
    let mut list = Scroller::new(ctx, 60.0, rows);
    list.fling(6000.0, 6);
    let visible_at_release: HashSet<usize> = list.visible.clone().collect();
    list.pass(Vec::new(), None);
    let coast = list.coast.expect("a coast after the release");
    let destination: HashSet<usize> = destination_of(coast.resting_rows()).collect();
    // No pass meanwhile: the list stays where it is in egui's time.
    assert!(
        common::eventually(|| {
            let asked: HashSet<usize> = requested_rows(&server).into_iter().collect();
            destination.is_subset(&asked)
        }),
        "the destination is requested"
    );
    let cancelled = |list: &Scroller| match &list.rows {
        Rows::List(list, _) => list.stats().fetches_cancelled_in_flight,
        _ => unreachable!("a row-keyed list"),
    };
    let cancelled_before = cancelled(&list);
    // A finger down on the list where it left it: the coast stops there.
    let at = list.pointer;
    list.pass(vec![press(at, true)], None);
    list.pass(Vec::new(), None);
    assert!(list.coast.is_none(), "no coast while held");
    let still_visible: HashSet<usize> = list.visible.clone().collect();
    let left = destination
        .iter()
        .filter(|row| !still_visible.contains(row) && !visible_at_release.contains(row))
        .count() as u64;
    assert!(left >= 10, "{left}");
    // Cancelled at the pass's end; the load actor counts them as it
    // receives the cancellations.
    assert!(
        common::eventually(|| cancelled(&list) - cancelled_before >= left),
        "the old destination's {left} fetches are cancelled: {}",
        cancelled(&list) - cancelled_before
    );
    // And the server sees them go.
    assert!(
        common::eventually(|| {
            list.pass(Vec::new(), None);
            server.stats().responses_aborted >= left
        }),
        "{:?}",
        server.stats()
    );
}

/// A coast model under which a row takes longer than any `Instant` can
/// hold to cover a distance.
struct Endless;

impl thumbpipe::CoastModel for Endless {
    fn distance(&self, velocity: f32) -> f32 {
        velocity * 0.5
    }

    fn time_to_cover(&self, _velocity: f32, _distance: f32) -> Option<f32> {
        Some(f32::MAX)
    }

    fn duration(&self, _velocity: f32) -> f32 {
        f32::MAX
    }
}

/// Regression: `coast_min_time_on_screen = Some(Duration::MAX)` overflowed
/// an `Instant` on the first coast (a panic on the UI thread), as did a
/// `CoastModel` whose rows leave after `Duration::MAX`. Now neither
/// panics: with the threshold at `Duration::MAX` every row the coast
/// passes is left alone and only the destination is asked for; with the
/// endless model, no row is ever gone first.
#[test]
fn durations_past_any_instant_never_panic_a_coast() {
    let server = server(0);
    let urls: Vec<String> = (0..ROWS as u32).map(|row| server.image_url(row)).collect();
    let pitch = ROW_HEIGHT + egui::Spacing::default().item_spacing.y;
    let geometry = thumbpipe::ListGeometry::new(pitch, ROWS, 800.0);
    for (threshold, endless) in [
        (Some(Duration::MAX), false),
        (None, true),
        (Some(Duration::MAX), true),
    ] {
        server.reset_stats();
        let mut config = EguiConfig::default();
        config.coast_min_time_on_screen = threshold;
        config.pipeline.fetch.max_per_host = 1;
        let ctx = Context::default();
        let mut list = ThumbnailList::new(&ctx, config).expect("builds");
        let decay = thumbpipe::CoastPrediction::new(
            thumbpipe::ExponentialDecay::EGUI,
            0.0,
            6000.0,
            geometry,
        );
        let endless_coast = thumbpipe::CoastPrediction::new(Endless, 0.0, 6000.0, geometry);
        let destination = if endless {
            destination_of(endless_coast.resting_rows())
        } else {
            destination_of(decay.resting_rows())
        };
        let visible = decay.visible_rows();
        let _ = ctx.run_ui(RawInput::default(), |ui| {
            let row_of = |row: usize| (row, urls[row].as_str());
            if endless {
                list.follow_coast(Some(&endless_coast), CELL, row_of);
            } else {
                list.follow_coast(Some(&decay), CELL, row_of);
            }
            for row in visible.clone() {
                list.show(ui, row, &urls[row], CELL);
            }
            list.end_pass();
        });
        // Under the endless model no row ever leaves, so none is gone
        // before its image, whatever the threshold.
        let expected: HashSet<usize> = if endless {
            destination.clone().chain(visible.clone()).collect()
        } else {
            destination.clone().collect()
        };
        assert!(
            common::eventually(|| {
                let requested: HashSet<usize> = requested_rows(&server).into_iter().collect();
                requested.is_superset(&expected)
            }),
            "{threshold:?} endless={endless}: {:?}",
            requested_rows(&server)
        );
        let requested: HashSet<usize> = requested_rows(&server).into_iter().collect();
        // Where rows stay long enough, the screen ahead may be prefetched.
        let ahead = visible.end..visible.end + 2 * visible.len() + 1;
        let allowed: HashSet<usize> = expected
            .iter()
            .copied()
            .chain(ahead.filter(|_| endless))
            .collect();
        assert!(
            requested.is_subset(&allowed),
            "{threshold:?} endless={endless}: asked for {requested:?}, allowed {allowed:?}"
        );
    }
}
