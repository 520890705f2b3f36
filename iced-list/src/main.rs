//! 1,000 thumbnails from `{URL}/img/{row}.jpg` in an iced list, or as a
//! grid of cropped cells, through `thumbpipe::iced` (URL: an argument, or
//! a local fixture server at 250 ms a response).
//!
//! `cargo run --release -p iced-list [-- --grid] [--rows N] [URL]`. Only the
//! rows in view are laid out. thumbpipe is told which rows those are when
//! the app starts (iced sends no scroll message for a list that fits its
//! window), when the list scrolls and when the window is resized; rows
//! that left are cancelled, and thumbnails arrive through the
//! subscription.

use iced::widget::{Space, button, column, container, image, row, scrollable, text};
use iced::{Element, Length, Size, Subscription, Task};
use thumbpipe::iced::{Ready, RowThumbnail, ScrollWatch, Thumbnails};
use thumbpipe::{ListGeometry, TargetSize};

/// Rows unless `--rows N` says otherwise.
const ROWS: usize = 1000;
/// The window's height when it opens (iced's default window is 1024x768),
/// until a resize says otherwise.
const FIRST_HEIGHT: f32 = 768.0;
const ROW_HEIGHT: f32 = 72.0;
const CELL: f32 = 96.0;
const COLUMNS: usize = 8;

#[derive(Clone, Debug)]
enum Message {
    Thumbnails(Ready),
    Scrolled(scrollable::Viewport),
    Resized(Size),
    ToggleGrid,
}

struct List {
    base: String,
    /// How many rows (cells) the list has.
    rows: usize,
    thumbnails: Thumbnails<usize>,
    /// The list's scrolls, for where a fast one will rest.
    scrolls: ScrollWatch,
    grid: bool,
    top: f32,
    height: f32,
    /// Kept alive while the window is open.
    _server: Option<fixture_server::FixtureServer>,
}

impl List {
    fn new() -> (Self, Task<Message>) {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let grid = args.iter().any(|arg| arg == "--grid");
        let rows = args
            .iter()
            .position(|arg| arg == "--rows")
            .and_then(|at| args.get(at + 1)?.parse().ok())
            .unwrap_or(ROWS);
        let mut words = args.iter().enumerate().filter(|(at, arg)| {
            *arg != "--grid" && *arg != "--rows" && (*at == 0 || args[at - 1] != "--rows")
        });
        let (base, server) = match words.next().map(|(_, arg)| arg.clone()) {
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
        (Self::showing(base, rows, grid, server), Task::none())
    }

    /// The list of `rows` of `base`'s images, its first screen asked for:
    /// the rows a window of [`FIRST_HEIGHT`] shows, which for a list that
    /// fits it is every row.
    fn showing(
        base: String,
        rows: usize,
        grid: bool,
        server: Option<fixture_server::FixtureServer>,
    ) -> Self {
        let thumbnails = Thumbnails::new(thumbpipe::Config::default()).expect("a pipeline");
        let mut list = Self {
            base,
            rows,
            thumbnails,
            scrolls: ScrollWatch::default(),
            grid,
            top: 0.0,
            height: FIRST_HEIGHT,
            _server: server,
        };
        list.show_rows();
        list
    }

    /// Tells thumbpipe which rows (cells) are in view.
    fn show_rows(&mut self) {
        let (line, per_line, target) = self.shape();
        let lines = thumbpipe::iced::rows_in_view(
            self.top,
            self.height,
            line,
            self.rows.div_ceil(per_line),
        );
        let cells = (lines.start * per_line)..(lines.end * per_line).min(self.rows);
        let url = |cell: usize| (cell, format!("{}/img/{cell}.jpg", self.base));
        // A fast scroll: the rows where it will rest first, none of those
        // it flies past.
        self.thumbnails.follow_scroll(&self.scrolls, target, url);
        self.thumbnails.show_rows(cells.map(url), target);
    }

    /// A line's height, cells per line, and the thumbnails' box.
    fn shape(&self) -> (f32, usize, TargetSize) {
        if self.grid {
            (CELL, COLUMNS, TargetSize::cover(CELL as u32, CELL as u32))
        } else {
            (ROW_HEIGHT, 1, TargetSize::square(64))
        }
    }

    fn update(&mut self, message: Message) {
        match message {
            Message::Thumbnails(ready) => return self.thumbnails.update(ready),
            Message::Scrolled(viewport) => {
                self.top = viewport.absolute_offset().y;
                self.height = viewport.bounds().height;
                let (line, per_line, _) = self.shape();
                let list = ListGeometry::grid(line, self.rows, per_line, self.height);
                self.scrolls.observe(self.top, list);
            }
            Message::Resized(size) => self.height = size.height,
            Message::ToggleGrid => self.grid = !self.grid,
        }
        self.show_rows();
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
        .spacing(12);
        column![
            bar,
            scrollable(list)
                .width(Length::Fill)
                .height(Length::Fill)
                .on_scroll(Message::Scrolled)
        ]
        .padding(8)
        .into()
    }

    fn subscription(&self) -> Subscription<Message> {
        Subscription::batch([
            self.thumbnails.subscription().map(Message::Thumbnails),
            iced::window::resize_events().map(|(_, size)| Message::Resized(size)),
        ])
    }
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

    /// Passes `Ready` to the list, as its subscription would, until every
    /// cell in view shows its image (or 10 s pass).
    fn until_shown(list: &mut List) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            list.update(Message::Thumbnails(Ready));
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

    /// The example as iced's headless simulator lays it out and draws it:
    /// every row in view shows its image, not the placeholder, in the list
    /// and, after a click on "grid", in the grid.
    #[test]
    fn every_row_in_view_shows_its_image_in_the_list_and_the_grid() {
        let config = fixture_server::Config {
            latency: Duration::from_millis(10),
            ..Default::default()
        };
        let server = fixture_server::FixtureServer::start_dedicated(config).unwrap();
        let mut list = List::showing(server.base_url(), ROWS, false, Some(server));
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
        list.update(Message::ToggleGrid);
        assert!(until_shown(&mut list), "{:?}", list.thumbnails.stats());
        let mut ui = iced_test::simulator(list.view());
        assert!(
            ui.find("…").is_err(),
            "a cell in view shows its placeholder"
        );
        assert!(ui.find("row 0").is_err(), "the grid has no row labels");
    }

    /// A list shorter than its window: iced never sends it a scroll
    /// message, and every row still shows its image, asked for when the
    /// app started.
    #[test]
    fn a_list_that_fits_its_window_shows_every_row_without_a_scroll() {
        let config = fixture_server::Config {
            latency: Duration::from_millis(10),
            ..Default::default()
        };
        let server = fixture_server::FixtureServer::start_dedicated(config).unwrap();
        let mut list = List::showing(server.base_url(), 5, false, Some(server));
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
