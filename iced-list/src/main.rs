//! 1,000 thumbnails from `{URL}/img/{row}.jpg` in an iced list, or as a
//! grid of cropped cells, through `thumbpipe::iced` (URL: an argument, or
//! a local fixture server at 250 ms a response).
//!
//! `cargo run --release -p iced-list [-- --grid] [URL]`. Only the rows in view are laid out;
//! scrolling tells thumbpipe which rows those are, rows that left are
//! cancelled, and thumbnails arrive through the subscription.

use iced::widget::{Space, button, column, container, image, row, scrollable, text};
use iced::{Element, Length, Size, Subscription, Task};
use thumbpipe::TargetSize;
use thumbpipe::iced::{Ready, RowThumbnail, Thumbnails};

const ROWS: usize = 1000;
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
    thumbnails: Thumbnails<usize>,
    grid: bool,
    top: f32,
    height: f32,
    /// Kept alive while the window is open.
    _server: Option<fixture_server::FixtureServer>,
}

impl List {
    fn new() -> (Self, Task<Message>) {
        let grid = std::env::args().any(|arg| arg == "--grid");
        let (base, server) = match std::env::args().skip(1).find(|arg| arg != "--grid") {
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
        (Self::showing(base, grid, server), Task::none())
    }

    /// The list of `base`'s images, its first screen asked for.
    fn showing(base: String, grid: bool, server: Option<fixture_server::FixtureServer>) -> Self {
        let thumbnails = Thumbnails::new(thumbpipe::Config::default()).expect("a pipeline");
        let mut list = Self {
            base,
            thumbnails,
            grid,
            top: 0.0,
            height: 800.0,
            _server: server,
        };
        list.show_rows();
        list
    }

    /// Tells thumbpipe which rows (cells) are in view.
    fn show_rows(&mut self) {
        let (line, per_line, target) = self.shape();
        let lines =
            thumbpipe::iced::rows_in_view(self.top, self.height, line, ROWS.div_ceil(per_line));
        let cells = (lines.start * per_line)..(lines.end * per_line).min(ROWS);
        let urls = cells.map(|cell| (cell, format!("{}/img/{cell}.jpg", self.base)));
        self.thumbnails.show_rows(urls, target);
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
        let count = ROWS.div_ceil(per_line);
        let lines = thumbpipe::iced::rows_in_view(self.top, self.height, line, count);
        let mut list = column![Space::new().height(lines.start as f32 * line)];
        for index in lines.clone() {
            list = list.push(if self.grid {
                let cells = (index * per_line..((index + 1) * per_line).min(ROWS))
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
            let lines =
                thumbpipe::iced::rows_in_view(list.top, list.height, line, ROWS.div_ceil(per_line));
            let cells = lines.start * per_line..(lines.end * per_line).min(ROWS);
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
        let mut list = List::showing(server.base_url(), false, Some(server));
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
}
