//! 1,000 thumbnails from `{URL}/img/{row}.jpg` in an iced list, or as a
//! grid of cropped cells, through `thumbpipe::iced` (URL: an argument, or
//! a local fixture server at 250 ms a response).
//!
//! `cargo run --release -p iced-list [-- --grid] [--rows N] [URL]`, or
//! `-- --folder DIR` for the files in DIR (`file://`, read under DIR, with
//! the desktop's shared thumbnails). `--first-screen` prints, once, how
//! long after start-up and in which view every cell in view first showed
//! its image, and when iced drew its first frame, with that whole screen
//! or not (`first_screen.rs`). `--script flick` plays the demo's flick in
//! the window (against the embedded server), then prints the requests the
//! server received, the tail and the stalls, and exits.
//!
//! Only the rows in view are laid out. thumbpipe is told which rows those
//! are when the app starts (iced sends no scroll message for a list that
//! fits its window), when the list scrolls and when the window is resized,
//! with a screen beyond them prefetched once the window is up; rows
//! that left are cancelled, and thumbnails arrive through the
//! subscription.

mod first_screen;
mod script;

use first_screen::FirstScreen;
use iced::widget::operation::{AbsoluteOffset, scroll_to};
use iced::widget::{Id, Space, button, column, container, image, row, scrollable, text};
use std::time::Instant;

use iced::{Element, Length, Size, Subscription, Task};
use thumbpipe::iced::{PrefetchWindow, Ready, RowThumbnail, ScrollWatch, Thumbnails};
use thumbpipe::{ListGeometry, Priority, TargetSize};

/// Rows unless `--rows N` says otherwise.
const ROWS: usize = 1000;
/// The window's height when it opens (iced's default window is 1024x768),
/// until the window, opened, or a resize says otherwise.
const FIRST_HEIGHT: f32 = 768.0;
const ROW_HEIGHT: f32 = 72.0;
const CELL: f32 = 96.0;
const COLUMNS: usize = 8;
/// The list's scrollable, which `--script` scrolls.
const LIST: &str = "list";

#[derive(Clone, Debug)]
enum Message {
    Thumbnails(Ready),
    Scrolled(scrollable::Viewport),
    Resized(Size),
    /// The window is open, at this size: another height than
    /// [`FIRST_HEIGHT`] where a window manager chose it.
    Opened(Size),
    ToggleGrid,
    /// A frame of the window, started then: while `--script` plays, and
    /// until `--first-screen` has said the first.
    Frame(Instant),
}

struct List {
    base: String,
    /// A folder's `file://` URLs, one a row, instead of `base`'s images.
    files: Option<Vec<String>>,
    /// How many rows (cells) the list has.
    rows: usize,
    thumbnails: Thumbnails<usize>,
    /// The list's scrolls, for where a fast one will rest.
    scrolls: ScrollWatch,
    /// The cells just beyond the view, in the direction it moves.
    prefetch: PrefetchWindow,
    grid: bool,
    top: f32,
    height: f32,
    /// The list's own height came (its viewport, or a resize): the
    /// window's as it opens is no longer news.
    height_told: bool,
    /// The embedded server, kept alive while the window is open: its
    /// counters are `--script`'s report.
    server: Option<fixture_server::FixtureServer>,
    /// With `--first-screen`: the views and the first frame, against when
    /// every cell in view first showed its image.
    first_screen: Option<FirstScreen>,
    /// With `--script flick`: the flick under way.
    flick: Option<script::Flick>,
}

impl List {
    fn new() -> (Self, Task<Message>) {
        let started = Instant::now();
        let args: Vec<String> = std::env::args().skip(1).collect();
        let flag = |name: &str| args.iter().position(|arg| arg == name);
        // The word after a flag that takes one.
        let value_of = |name: &str| flag(name).and_then(|at| args.get(at + 1));
        let grid = flag("--grid").is_some();
        let rows = value_of("--rows")
            .and_then(|rows| rows.parse().ok())
            .unwrap_or(ROWS);
        let folder = value_of("--folder").cloned();
        // The URL: the word that is neither a flag nor a flag's value.
        let taking_value =
            |at: usize| at > 0 && ["--rows", "--folder", "--script"].contains(&&*args[at - 1]);
        let mut words = args
            .iter()
            .enumerate()
            .filter(|(at, arg)| !arg.starts_with("--") && !taking_value(*at));
        let (base, server) = match words.next().map(|(_, arg)| arg.clone()) {
            _ if folder.is_some() => (String::new(), None),
            Some(url) => (url, None),
            None => {
                let config = fixture_server::Config {
                    latency: std::time::Duration::from_millis(250),
                    ..Default::default()
                };
                let server = fixture_server::FixtureServer::start_dedicated(config)
                    .expect("the fixture server starts");
                (server.base_url(), Some(server))
            }
        };
        let mut config = thumbpipe::Config::default();
        let files = folder.map(|dir| {
            config.fetch.file_roots = vec![dir.clone().into()];
            files_in(&dir)
        });
        let scripted = value_of("--script").map(String::as_str);
        if scripted.is_some_and(|script| script != "flick")
            || (scripted.is_some() && server.is_none())
        {
            eprintln!(
                "iced-list: --script takes `flick`, with the embedded server (no URL, no --folder)"
            );
            std::process::exit(2)
        }
        let mut list = Self::showing(base, rows, grid, server, config, files);
        list.first_screen = flag("--first-screen").map(|_| FirstScreen::new(started));
        list.flick = scripted.map(|_| script::Flick::new(list.rows.div_ceil(list.shape().1)));
        (list, Task::none())
    }

    /// The list of `rows` of `base`'s images, its first screen asked for:
    /// the rows a window of [`FIRST_HEIGHT`] shows, which for a list that
    /// fits it is every row. Not the screen beyond it yet: those look-ups
    /// would share the cores with iced's own start-up and put its first
    /// frame off (by about 3 ms in a folder's warm launch as a grid). It
    /// is asked with the first message that tells where the list is: the
    /// scrollable's viewport, which iced sends while it makes the first
    /// frame, before drawing it (for a list taller than its window: one
    /// that fits has no screen beyond), or a resize. The window's size as
    /// it opens, where it is not [`FIRST_HEIGHT`], asks for the rows in
    /// view only (`Message::Opened`).
    fn showing(
        base: String,
        rows: usize,
        grid: bool,
        server: Option<fixture_server::FixtureServer>,
        config: thumbpipe::Config,
        files: Option<Vec<String>>,
    ) -> Self {
        let thumbnails = Thumbnails::new(config).unwrap_or_else(|error| {
            // A --folder that is not a directory, say.
            eprintln!("iced-list: {error}");
            std::process::exit(2)
        });
        let mut list = Self {
            base,
            rows: files.as_ref().map_or(rows, Vec::len),
            files,
            thumbnails,
            scrolls: ScrollWatch::default(),
            prefetch: PrefetchWindow::default(),
            grid,
            top: 0.0,
            height: FIRST_HEIGHT,
            height_told: false,
            server,
            first_screen: None,
            flick: None,
        };
        list.show_rows(false);
        list
    }

    /// Tells thumbpipe which rows (cells) are in view, and with
    /// `screen_beyond` the screen beyond them.
    fn show_rows(&mut self, screen_beyond: bool) {
        let (line, per_line, target) = self.shape();
        let lines = thumbpipe::iced::rows_in_view(
            self.top,
            self.height,
            line,
            self.rows.div_ceil(per_line),
        );
        let cells = (lines.start * per_line)..(lines.end * per_line).min(self.rows);
        let (files, base) = (&self.files, &self.base);
        let url = |cell: usize| (cell, url_of(files.as_deref(), base, cell));
        // A fast scroll: the rows where it will rest first, none of those
        // it flies past.
        self.thumbnails.follow_scroll(&self.scrolls, target, url);
        // The rows in view, then a screen beyond them in the direction the
        // list moves (loading by the time it comes into view), in one pass:
        // asked in that order, since a local file's look-ups run in it.
        for cell in cells.clone() {
            let (cell, url) = url(cell);
            self.thumbnails
                .request(cell, &url, target, Priority::Visible);
        }
        let beyond = if screen_beyond {
            self.prefetch.rows(cells, self.rows)
        } else {
            0..0
        };
        for cell in beyond {
            let (cell, url) = url(cell);
            self.thumbnails.prefetch(cell, &url, target);
        }
        self.thumbnails.end_pass();
    }

    /// With `--first-screen`, counts a view of `cells` and says, the
    /// first time every one of them shows its image (or its error), when
    /// and in which view (0: the first); the probe that goes in the view.
    fn watch_first_screen(
        &self,
        mut cells: std::ops::Range<usize>,
    ) -> Option<Element<'_, Message>> {
        let watch = self.first_screen.as_ref()?;
        // A cell that failed (a file that is no image) has shown all it will.
        let settled = |cell| !matches!(self.thumbnails.get(&cell), RowThumbnail::Loading);
        let whole = cells.all(settled);
        if let Some((after, view)) = watch.viewed(whole, Instant::now()) {
            let ms = after.as_secs_f64() * 1000.0;
            eprintln!("iced-list: first screen whole {ms:.1} ms after start-up, in view {view}");
        }
        Some(watch.probe(whole))
    }

    /// A line's height, cells per line, and the thumbnails' box.
    fn shape(&self) -> (f32, usize, TargetSize) {
        if self.grid {
            (CELL, COLUMNS, TargetSize::cover(CELL as u32, CELL as u32))
        } else {
            (ROW_HEIGHT, 1, TargetSize::square(64))
        }
    }

    fn update(&mut self, message: Message) -> Task<Message> {
        match message {
            Message::Thumbnails(ready) => {
                self.thumbnails.update(ready);
                return Task::none();
            }
            Message::Frame(now) => {
                let first = self
                    .first_screen
                    .as_mut()
                    .and_then(FirstScreen::first_frame);
                if let Some(first) = first {
                    eprintln!("iced-list: {first}");
                }
                return self.play(now);
            }
            Message::Scrolled(viewport) => {
                self.height_told = true;
                self.top = viewport.absolute_offset().y;
                self.height = viewport.bounds().height;
                let (line, per_line, _) = self.shape();
                let list = ListGeometry::grid(line, self.rows, per_line, self.height);
                self.scrolls.observe(self.top, list);
            }
            Message::Resized(size) => (self.height, self.height_told) = (size.height, true),
            // The window's height, until the list has said its own (its
            // viewport, a resize): a window manager may open it taller
            // than FIRST_HEIGHT, and the rows below would wait for a
            // scroll that a list which fits never sends. The rows in view
            // only, as at start-up.
            Message::Opened(size) => {
                if !self.height_told && (size.height - self.height).abs() >= 1.0 {
                    self.height = size.height;
                    self.show_rows(false);
                }
                return Task::none();
            }
            Message::ToggleGrid => self.grid = !self.grid,
        }
        self.show_rows(true);
        Task::none()
    }

    /// A frame of `--script flick`: the list scrolled to where the flick
    /// is, or still while loads finish; at the end, the report, and exit.
    fn play(&mut self, now: Instant) -> Task<Message> {
        let stats = self.thumbnails.stats();
        let busy = stats.in_flight + stats.queued + stats.decoding > 0;
        let Some(flick) = &mut self.flick else {
            return Task::none();
        };
        match flick.step(now, busy) {
            script::Step::ScrollTo(position) => {
                let (line, per_line, _) = self.shape();
                let range = (self.rows.div_ceil(per_line) as f32 * line - self.height).max(0.0);
                let offset = AbsoluteOffset {
                    x: 0.0,
                    y: position * range,
                };
                scroll_to(Id::new(LIST), offset)
            }
            script::Step::Still => Task::none(),
            script::Step::Done => {
                let server = self.server.as_ref().map(|server| server.stats());
                let (requests, dropped) = server.map_or((0, 0), |stats| {
                    (
                        stats.requests_started,
                        stats.responses_aborted + stats.responses_cut,
                    )
                });
                println!("{}", flick.report(requests, dropped));
                iced::exit()
            }
        }
    }

    fn thumbnail(&self, cell: usize, side: f32) -> Element<'_, Message> {
        let shown: Element<'_, Message> = match self.thumbnails.get(&cell) {
            RowThumbnail::Shown(handle) => image(handle).width(side).height(side).into(),
            RowThumbnail::Failed(error) => text(format!("! {error}")).size(10).into(),
            RowThumbnail::Loading | RowThumbnail::NotShown => text("…").into(),
        };
        container(shown)
            .width(side)
            .height(side)
            .center(side)
            .into()
    }

    fn view(&self) -> Element<'_, Message> {
        let (line, per_line, _) = self.shape();
        let count = self.rows.div_ceil(per_line);
        let lines = thumbpipe::iced::rows_in_view(self.top, self.height, line, count);
        let probe =
            self.watch_first_screen(lines.start * per_line..(lines.end * per_line).min(self.rows));
        let mut list = column![Space::new().height(lines.start as f32 * line)];
        for index in lines.clone() {
            list = list.push(if self.grid {
                let cells = (index * per_line..((index + 1) * per_line).min(self.rows))
                    .map(|cell| self.thumbnail(cell, CELL));
                row(cells).height(line).into()
            } else {
                Element::from(
                    row![self.thumbnail(index, 64.0), text(format!("row {index}"))]
                        .spacing(12)
                        .height(line)
                        .align_y(iced::Alignment::Center),
                )
            });
        }
        list = list.push(Space::new().height((count - lines.end) as f32 * line));
        let stats = self.thumbnails.stats();
        let bar = row![
            button(if self.grid { "list" } else { "grid" }).on_press(Message::ToggleGrid),
            text(format!(
                "{} in flight · {} decoded · {} handles",
                stats.in_flight,
                stats.decodes_completed,
                self.thumbnails.handle_stats().handles
            )),
        ]
        .push(probe)
        .spacing(12);
        column![
            bar,
            scrollable(list)
                .id(Id::new(LIST))
                .width(Length::Fill)
                .height(Length::Fill)
                .on_scroll(Message::Scrolled)
        ]
        .padding(8)
        .into()
    }

    fn subscription(&self) -> Subscription<Message> {
        let first_frame = self
            .first_screen
            .as_ref()
            .is_some_and(FirstScreen::awaits_frame);
        let frames = if self.flick.is_some() || first_frame {
            iced::window::frames().map(Message::Frame)
        } else {
            Subscription::none()
        };
        Subscription::batch([
            self.thumbnails.subscription().map(Message::Thumbnails),
            iced::window::resize_events().map(|(_, size)| Message::Resized(size)),
            iced::event::listen_with(|event, _, _| match event {
                iced::Event::Window(iced::window::Event::Opened { size, .. }) => {
                    Some(Message::Opened(size))
                }
                _ => None,
            }),
            frames,
        ])
    }
}

/// The URL of row (cell) `cell`'s image: a folder's file, or `base`'s
/// numbered image.
fn url_of(files: Option<&[String]>, base: &str, cell: usize) -> String {
    match files {
        Some(files) => files[cell].clone(),
        None => format!("{base}/img/{cell}.jpg"),
    }
}

/// The regular files in `dir`, sorted, as `file://` URLs; none if it
/// cannot be read.
fn files_in(dir: &str) -> Vec<String> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_file()))
        .filter_map(|entry| std::fs::canonicalize(entry.path()).ok())
        .collect();
    files.sort();
    files
        .iter()
        .filter_map(|path| url::Url::from_file_path(path).ok())
        .map(String::from)
        .collect()
}

fn main() -> iced::Result {
    iced::application(List::new, List::update, List::view)
        .subscription(List::subscription)
        .title("thumbpipe: iced list")
        .run()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// A list of `rows` rows, as it starts, against a server of its own
    /// at 10 ms a response.
    fn served_list(rows: usize) -> List {
        let config = fixture_server::Config {
            latency: Duration::from_millis(10),
            ..Default::default()
        };
        let server = fixture_server::FixtureServer::start_dedicated(config).unwrap();
        List::showing(
            server.base_url(),
            rows,
            false,
            Some(server),
            thumbpipe::Config::default(),
            None,
        )
    }

    /// Passes `Ready` to the list, as its subscription would, until every
    /// cell in view shows its image (or 10 s pass).
    fn until_shown(list: &mut List) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            let _ = list.update(Message::Thumbnails(Ready));
            let (line, per_line, _) = list.shape();
            let count = list.rows.div_ceil(per_line);
            let lines = thumbpipe::iced::rows_in_view(list.top, list.height, line, count);
            let cells = lines.start * per_line..(lines.end * per_line).min(list.rows);
            if cells
                .clone()
                .all(|cell| matches!(list.thumbnails.get(&cell), RowThumbnail::Shown(_)))
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    /// The first screen is asked for at start-up without the screen
    /// beyond it, whose look-ups would share the cores with iced's own
    /// start-up; the first message that tells where the list is (here a
    /// resize; in a window, usually the scrollable's viewport, sent in the
    /// first frame) asks for that screen too.
    #[test]
    fn the_screen_beyond_is_asked_for_with_the_first_message_not_at_start_up() {
        let mut list = served_list(ROWS);
        let in_view = thumbpipe::iced::rows_in_view(0.0, FIRST_HEIGHT, ROW_HEIGHT, ROWS);
        let requested = |list: &List| list.thumbnails.stats().requested;
        assert_eq!(requested(&list), in_view.len() as u64);
        let _ = list.update(Message::Resized(Size::new(1024.0, FIRST_HEIGHT)));
        // The rows in view again (the same requests, not counted again),
        // and a screen below.
        assert_eq!(requested(&list), 2 * in_view.len() as u64);
        assert!(until_shown(&mut list), "{:?}", list.thumbnails.stats());
    }

    /// A window that opens taller than the first screen was asked for
    /// (a window manager's choice): the rows below it are asked for when
    /// it opens, though a list that fits gets no scroll message, and no
    /// screen beyond them yet. One that opens at that height asks for
    /// nothing more, nor does one that opens after the list said its own
    /// height.
    #[test]
    fn a_window_that_opens_taller_asks_for_the_rows_it_shows() {
        let requested = |list: &List| list.thumbnails.stats().requested;
        let first = thumbpipe::iced::rows_in_view(0.0, FIRST_HEIGHT, ROW_HEIGHT, ROWS).len();
        let mut list = served_list(ROWS);
        let _ = list.update(Message::Opened(Size::new(1024.0, 1200.0)));
        let taller = thumbpipe::iced::rows_in_view(0.0, 1200.0, ROW_HEIGHT, ROWS).len();
        assert!(first < taller);
        assert_eq!((list.height, requested(&list)), (1200.0, taller as u64));

        let mut list = served_list(ROWS);
        let _ = list.update(Message::Resized(Size::new(1024.0, FIRST_HEIGHT)));
        let told = requested(&list);
        let _ = list.update(Message::Opened(Size::new(1024.0, 1200.0)));
        assert_eq!((list.height, requested(&list)), (FIRST_HEIGHT, told));

        let rows = 15; // 1,080 points: longer than 768, shorter than 1,200.
        let mut list = served_list(rows);
        let in_view = thumbpipe::iced::rows_in_view(0.0, FIRST_HEIGHT, ROW_HEIGHT, rows);
        assert!(in_view.len() < rows);
        assert_eq!(requested(&list), in_view.len() as u64);
        let _ = list.update(Message::Opened(Size::new(1024.0, FIRST_HEIGHT)));
        assert_eq!(requested(&list), in_view.len() as u64);
        let _ = list.update(Message::Opened(Size::new(1024.0, 1200.0)));
        assert_eq!(requested(&list), rows as u64);
        assert!(until_shown(&mut list), "{:?}", list.thumbnails.stats());
        for row in 0..rows {
            assert!(
                matches!(list.thumbnails.get(&row), RowThumbnail::Shown(_)),
                "row {row}"
            );
        }
    }

    /// The example as iced's headless simulator lays it out and draws it:
    /// every row in view shows its image, not the placeholder, in the list
    /// and, after a click on "grid", in the grid.
    #[test]
    fn every_row_in_view_shows_its_image_in_the_list_and_the_grid() {
        let mut list = served_list(ROWS);
        // Before any arrival is passed to `update`: placeholders.
        assert!(iced_test::simulator(list.view()).find("…").is_ok());
        assert!(until_shown(&mut list), "{:?}", list.thumbnails.stats());
        let mut ui = iced_test::simulator(list.view());
        assert!(ui.find("row 0").is_ok());
        assert!(ui.find("…").is_err(), "a row in view shows its placeholder");
        assert!(ui.click("grid").is_ok());
        let messages: Vec<Message> = ui.into_messages().collect();
        assert!(
            matches!(messages.as_slice(), [Message::ToggleGrid]),
            "{messages:?}"
        );
        let _ = list.update(Message::ToggleGrid);
        assert!(until_shown(&mut list), "{:?}", list.thumbnails.stats());
        let mut ui = iced_test::simulator(list.view());
        assert!(
            ui.find("…").is_err(),
            "a cell in view shows its placeholder"
        );
        assert!(ui.find("row 0").is_err(), "the grid has no row labels");
    }

    /// `--folder`: the folder's files, one a row, every one shown, each
    /// decoded once (read as `file://` under the folder).
    #[test]
    fn a_folders_files_show_one_a_row() {
        let dir = std::env::temp_dir().join(format!("iced-list-folder-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for id in 1..=3 {
            let png = fixture_server::picture::render(id, 96, 96)
                .encode_png()
                .unwrap();
            std::fs::write(dir.join(format!("{id}.png")), png).unwrap();
        }
        let files = files_in(dir.to_str().unwrap());
        assert_eq!(files.len(), 3);
        let mut config = thumbpipe::Config::default();
        config.fetch.file_roots = vec![dir.clone()];
        config.shared_thumbnails.read = thumbpipe::ThumbnailStore::Off;
        config.shared_thumbnails.write = thumbpipe::ThumbnailStore::Off;
        let mut list = List::showing(String::new(), ROWS, false, None, config, Some(files));
        assert_eq!(list.rows, 3, "a row a file, not --rows");
        assert!(until_shown(&mut list), "{:?}", list.thumbnails.stats());
        assert_eq!(list.thumbnails.stats().decodes_completed, 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A list shorter than its window: iced never sends it a scroll
    /// message, and every row still shows its image, asked for when the
    /// app started.
    #[test]
    fn a_list_that_fits_its_window_shows_every_row_without_a_scroll() {
        let mut list = served_list(5);
        assert!(until_shown(&mut list), "{:?}", list.thumbnails.stats());
        for row in 0..5 {
            assert!(
                matches!(list.thumbnails.get(&row), RowThumbnail::Shown(_)),
                "row {row}"
            );
        }
        assert_eq!(list.thumbnails.stats().requested, 5);
        let mut ui = iced_test::simulator(list.view());
        assert!(ui.find("row 4").is_ok());
        assert!(ui.find("row 5").is_err(), "the list has 5 rows");
        assert!(ui.find("…").is_err(), "a row shows its placeholder");
    }
}
