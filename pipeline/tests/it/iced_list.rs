//! thumbpipe::iced without a window: the subscription wakes the app when
//! thumbnails arrive, each row's handle is its own image, decoded
//! thumbnails show in the pass that asks for them, rows that leave are
//! cancelled, and the handles stay under their budget.

use std::time::Duration;

use futures::StreamExt as _;
use futures::stream::BoxStream;
use iced_core::image::Handle;
use thumbpipe::iced::{IcedConfig, Ready, RowThumbnail, ScrollWatch, Thumbnails, rows_in_view};
use thumbpipe::{CoastPrediction, Config, ExponentialDecay, ListGeometry, TargetSize};

use crate::common::{eventually, idle, server};

const TARGET: TargetSize = TargetSize::square(64);

/// The subscription's stream, run as iced runs it.
fn ready_stream(thumbnails: &Thumbnails<usize>) -> BoxStream<'static, Ready> {
    let mut recipes = iced_futures::subscription::into_recipes(thumbnails.subscription());
    assert_eq!(recipes.len(), 1);
    let recipe = recipes.remove(0);
    recipe.stream(futures::stream::empty().boxed()).boxed()
}

/// Feeds `thumbnails` each `Ready` until `done` holds or 10 s pass;
/// returns how many `Ready` came.
fn run_until(
    thumbnails: &mut Thumbnails<usize>,
    ready: &mut BoxStream<'static, Ready>,
    mut done: impl FnMut(&Thumbnails<usize>) -> bool,
) -> usize {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let mut woken = 0;
    while !done(thumbnails) {
        let next = runtime
            .block_on(async { tokio::time::timeout(Duration::from_secs(10), ready.next()).await });
        match next {
            Ok(Some(message)) => {
                woken += 1;
                thumbnails.update(message);
            }
            Ok(None) => panic!("the subscription ended"),
            Err(_) => panic!("no Ready within 10 s: {:?}", thumbnails.stats()),
        }
    }
    woken
}

/// The picture id a handle's pixels carry.
fn id_of(handle: &Handle) -> Option<u32> {
    match handle {
        Handle::Rgba {
            width,
            height,
            pixels,
            ..
        } => fixture_server::decode_id(pixels, *width, *height),
        _ => None,
    }
}

fn shown(thumbnails: &Thumbnails<usize>, row: usize) -> Option<Handle> {
    match thumbnails.get(&row) {
        RowThumbnail::Shown(handle) => Some(handle),
        _ => None,
    }
}

fn all_shown(rows: std::ops::Range<usize>) -> impl FnMut(&Thumbnails<usize>) -> bool {
    move |thumbnails| rows.clone().all(|row| shown(thumbnails, row).is_some())
}

#[test]
fn arrivals_wake_the_subscription_and_become_each_rows_own_handle() {
    let server = server(20);
    let mut thumbnails = Thumbnails::<usize>::new(Config::default()).unwrap();
    let urls: Vec<String> = (0..12).map(|row| server.image_url(500 + row)).collect();
    thumbnails.show_rows(urls.iter().enumerate(), TARGET);
    assert!((0..12).all(|row| matches!(thumbnails.get(&row), RowThumbnail::Loading)));
    assert!(matches!(thumbnails.get(&12), RowThumbnail::NotShown));

    let mut ready = ready_stream(&thumbnails);
    let woken = run_until(&mut thumbnails, &mut ready, all_shown(0..12));
    // The last ones may be shown from the cache before their `Ready` was
    // taken: an update keeps those handles too.
    thumbnails.update(Ready);
    for row in 0..12 {
        let handle = shown(&thumbnails, row).unwrap();
        assert_eq!(id_of(&handle), Some(500 + row as u32), "row {row}");
        // The same handle every view: iced uploads it once.
        assert_eq!(shown(&thumbnails, row).unwrap().id(), handle.id());
    }
    // Arrivals are coalesced: never more messages than thumbnails, plus
    // the one a new stream starts with.
    assert!((1..=13).contains(&woken), "{woken}");
    assert_eq!(thumbnails.handle_stats().made, 12);
    assert_eq!(server.stats().image_bodies, 12);
}

#[test]
fn a_decoded_thumbnail_is_shown_in_the_pass_that_asks_for_it() {
    let server = server(20);
    // Room for one handle: the others come back from the pipeline's cache.
    let mut config = IcedConfig::from(Config::default());
    config.max_handle_bytes = 64 * 64 * 4;
    let mut thumbnails = Thumbnails::<usize>::new(config).unwrap();
    let urls: Vec<String> = (0..4).map(|row| server.image_url(600 + row)).collect();
    let mut ready = ready_stream(&thumbnails);
    thumbnails.show_rows(urls.iter().enumerate(), TARGET);
    run_until(&mut thumbnails, &mut ready, all_shown(0..4));
    // The list moves on: its rows leave, their handles are freed.
    thumbnails.show_rows([(10, server.image_url(700))], TARGET);
    assert!(thumbnails.handle_stats().handles <= 2);
    // Row 10's own request ends before the count below is taken.
    run_until(&mut thumbnails, &mut ready, all_shown(10..11));
    // Back: shown at once, before any message, with no fetch.
    let before = server.stats().requests_started;
    thumbnails.show_rows(urls.iter().enumerate(), TARGET);
    for row in 0..4 {
        let handle = shown(&thumbnails, row).expect("shown in the same pass");
        assert_eq!(id_of(&handle), Some(600 + row as u32));
    }
    // Other rows with the same URLs share the handles kept.
    thumbnails.show_rows(
        urls.iter().enumerate().map(|(row, url)| (row + 20, url)),
        TARGET,
    );
    assert!((20..24).all(|row| shown(&thumbnails, row).is_some()));
    assert_eq!(server.stats().requests_started, before);
}

/// Regression: a pass whose rows were all still loading began none, so
/// the thumbnails it took as it ended counted as the last pass's and were
/// freed at once, though their rows showed them: handles drawn outside the
/// budget, and made again at the next pass.
#[test]
fn thumbnails_taken_by_a_pass_of_loading_rows_are_kept_for_them() {
    let server = server(20);
    // Room for one handle; the four rows in view go over it.
    let mut config = IcedConfig::from(Config::default());
    config.max_handle_bytes = 64 * 64 * 4;
    let mut thumbnails = Thumbnails::<usize>::new(config).unwrap();
    let urls: Vec<String> = (0..4).map(|row| server.image_url(800 + row)).collect();
    thumbnails.show_rows(urls.iter().enumerate(), TARGET);
    // Every thumbnail decoded, none taken.
    assert!(eventually(|| {
        thumbnails.stats().decodes_completed == 4 && idle(thumbnails.pipeline())
    }));
    // The same rows again: the pass takes the thumbnails as it ends.
    assert!(eventually(|| {
        thumbnails.show_rows(urls.iter().enumerate(), TARGET);
        all_shown(0..4)(&thumbnails)
    }));
    let stats = thumbnails.handle_stats();
    assert_eq!((stats.handles, stats.evicted, stats.made), (4, 0, 4));
    // Each row's handle is still the one kept, pass after pass.
    let ids: Vec<_> = (0..4)
        .map(|row| shown(&thumbnails, row).unwrap().id())
        .collect();
    thumbnails.show_rows(urls.iter().enumerate(), TARGET);
    let again: Vec<_> = (0..4)
        .map(|row| shown(&thumbnails, row).unwrap().id())
        .collect();
    assert_eq!(again, ids);
    assert_eq!(thumbnails.handle_stats().made, 4);
}

/// A thumbnail the pipeline holds before any `update` took it (a folder's
/// first screen, read while the window opened) is drawn by the next view,
/// with the handle every later view and pass keeps.
#[test]
fn a_thumbnail_in_the_cache_is_shown_by_a_view_before_any_update() {
    let server = server(20);
    let mut thumbnails = Thumbnails::<usize>::new(Config::default()).unwrap();
    let urls: Vec<String> = (0..4).map(|row| server.image_url(900 + row)).collect();
    thumbnails.show_rows(urls.iter().enumerate(), TARGET);
    assert!(eventually(|| {
        thumbnails.stats().decodes_completed == 4 && idle(thumbnails.pipeline())
    }));
    // No update yet: every view shows each row's own image, with the same
    // handle each time.
    let ids_in_view = |thumbnails: &Thumbnails<usize>| -> Vec<_> {
        (0..4)
            .map(|row| {
                let handle = shown(thumbnails, row).expect("shown before any update");
                assert_eq!(id_of(&handle), Some(900 + row as u32), "row {row}");
                handle.id()
            })
            .collect()
    };
    let ids = ids_in_view(&thumbnails);
    assert_eq!(ids_in_view(&thumbnails), ids);
    assert!(matches!(thumbnails.get(&4), RowThumbnail::NotShown));
    assert_eq!(thumbnails.handle_stats().handles, 0);
    // The update that takes the arrivals keeps those handles, as does the
    // next pass: none made twice.
    thumbnails.update(Ready);
    assert_eq!(ids_in_view(&thumbnails), ids);
    thumbnails.show_rows(urls.iter().enumerate(), TARGET);
    assert_eq!(ids_in_view(&thumbnails), ids);
    let stats = thumbnails.handle_stats();
    assert_eq!((stats.handles, stats.made), (4, 4));
}

/// Rows asked for ahead of the view load while it comes: the pass that
/// shows them asks for nothing new, and a prefetched row no pass asks for
/// again is cancelled.
#[test]
fn prefetched_rows_load_ahead_of_the_view_and_are_cancelled_when_left() {
    let server = server(300);
    let mut thumbnails = Thumbnails::<usize>::new(Config::default()).unwrap();
    let urls: Vec<String> = (0..9).map(|row| server.image_url(950 + row)).collect();
    let rows = |range: std::ops::Range<usize>| range.map(|row| (row, urls[row].clone()));
    // Rows 0-2 in view, 3-5 a screen ahead.
    for (row, url) in rows(3..6) {
        thumbnails.prefetch(row, &url, TARGET);
    }
    thumbnails.show_rows(rows(0..3), TARGET);
    assert_eq!(thumbnails.stats().requested, 6);
    assert!(matches!(thumbnails.get(&4), RowThumbnail::Loading));
    // The list moves on to 3-5, prefetching 6-8: rows 3-5 were asked for
    // already, rows 0-2 are cancelled.
    for (row, url) in rows(6..9) {
        thumbnails.prefetch(row, &url, TARGET);
    }
    thumbnails.show_rows(rows(3..6), TARGET);
    assert_eq!(thumbnails.stats().requested, 9);
    // And back to 3-5 alone: the prefetch of 6-8 is cancelled too.
    thumbnails.show_rows(rows(3..6), TARGET);
    let mut ready = ready_stream(&thumbnails);
    // Until each arrival is taken, not only shown (from the cache).
    let mut in_view_shown = all_shown(3..6);
    run_until(&mut thumbnails, &mut ready, |thumbnails| {
        in_view_shown(thumbnails) && thumbnails.stats().delivered >= 3
    });
    assert!(eventually(|| idle(thumbnails.pipeline())));
    let stats = thumbnails.stats();
    assert_eq!(
        (stats.requested, stats.cancelled, stats.delivered),
        (9, 6, 3),
        "{stats:?}"
    );
    for row in 3..6 {
        assert_eq!(
            id_of(&shown(&thumbnails, row).unwrap()),
            Some(950 + row as u32)
        );
    }
}

#[test]
fn rows_that_leave_are_cancelled_and_forgotten() {
    let server = server(400);
    let mut thumbnails = Thumbnails::<usize>::new(Config::default()).unwrap();
    let mut ready = ready_stream(&thumbnails);
    let first: Vec<String> = (0..8).map(|row| server.image_url(800 + row)).collect();
    thumbnails.show_rows(first.iter().enumerate(), TARGET);
    let later: Vec<(usize, String)> = (8..16)
        .map(|row| (row, server.image_url(800 + row as u32)))
        .collect();
    thumbnails.show_rows(later.iter().map(|(row, url)| (*row, url)), TARGET);
    assert!((0..8).all(|row| matches!(thumbnails.get(&row), RowThumbnail::NotShown)));
    // Until each arrival is taken, not only shown: a row shows a thumbnail
    // in the pipeline's cache before the update that takes it.
    let mut in_view_shown = all_shown(8..16);
    run_until(&mut thumbnails, &mut ready, |thumbnails| {
        in_view_shown(thumbnails) && thumbnails.stats().delivered >= 8
    });
    assert!(eventually(|| idle(thumbnails.pipeline())));
    let stats = thumbnails.stats();
    assert_eq!(
        stats.fetches_cancelled_queued + stats.fetches_cancelled_in_flight,
        8,
        "{stats:?}"
    );
    assert_eq!(stats.delivered, 8);
    assert!((0..8).all(|row| matches!(thumbnails.get(&row), RowThumbnail::NotShown)));
}

#[test]
fn a_row_whose_url_changes_shows_only_its_new_image() {
    let server = server(100);
    let mut thumbnails = Thumbnails::<usize>::new(Config::default()).unwrap();
    let mut ready = ready_stream(&thumbnails);
    for id in 900..910 {
        thumbnails.show_rows([(0, server.image_url(id))], TARGET);
        std::thread::sleep(Duration::from_millis(5));
    }
    run_until(&mut thumbnails, &mut ready, all_shown(0..1));
    assert_eq!(id_of(&shown(&thumbnails, 0).unwrap()), Some(909));
    // Stragglers of the old URLs, if any, change nothing.
    assert!(eventually(|| idle(thumbnails.pipeline())));
    thumbnails.update(Ready);
    assert_eq!(id_of(&shown(&thumbnails, 0).unwrap()), Some(909));
    assert_eq!(thumbnails.handle_stats().made, 1);
}

#[test]
fn a_failed_load_is_the_rows_error_and_forget_loads_it_again() {
    let server = server(10);
    let mut thumbnails = Thumbnails::<usize>::new(Config::default()).unwrap();
    let mut ready = ready_stream(&thumbnails);
    let missing = format!("{}?fault=404", server.image_url(1));
    thumbnails.show_rows([(0, &missing)], TARGET);
    run_until(&mut thumbnails, &mut ready, |t| {
        matches!(t.get(&0), RowThumbnail::Failed(_))
    });
    let good = server.image_url(5);
    thumbnails.show_rows([(0, &good)], TARGET);
    run_until(&mut thumbnails, &mut ready, all_shown(0..1));
    thumbnails.forget(&good);
    assert!(matches!(thumbnails.get(&0), RowThumbnail::NotShown));
    assert_eq!(thumbnails.handle_stats().handles, 0);
    thumbnails.show_rows([(0, &good)], TARGET);
    run_until(&mut thumbnails, &mut ready, all_shown(0..1));
    assert_eq!(server.stats().image_bodies, 2);
}

#[test]
fn the_subscription_ends_when_the_thumbnails_are_dropped() {
    let thumbnails = Thumbnails::<usize>::new(Config::default()).unwrap();
    let mut ready = ready_stream(&thumbnails);
    assert_eq!(
        futures::FutureExt::now_or_never(ready.next()),
        Some(Some(Ready))
    );
    drop(thumbnails);
    assert_eq!(futures::FutureExt::now_or_never(ready.next()), Some(None));
}

#[test]
fn a_request_that_fails_at_once_shows_its_error_in_the_same_pass() {
    let mut thumbnails = Thumbnails::<usize>::new(Config::default()).unwrap();
    // Errors made on the UI thread wake no subscription: the pass that
    // asks gives them to the row.
    thumbnails.show_rows([(0, "not a url"), (1, "ftp://example.com/a.jpg")], TARGET);
    for row in 0..2 {
        assert!(
            matches!(thumbnails.get(&row), RowThumbnail::Failed(_)),
            "row {row}: {:?}",
            thumbnails.get(&row)
        );
    }
}

#[test]
fn a_coast_asks_first_for_where_it_rests_and_never_for_rows_it_flies_past() {
    let server = server(20);
    let mut config = Config::default();
    // One slot: the server sees requests in the order they are started.
    config.fetch.max_per_host = 1;
    let mut thumbnails = Thumbnails::<usize>::new(config).unwrap();
    let mut ready = ready_stream(&thumbnails);
    let urls: Vec<String> = (0..1000).map(|row| server.image_url(row)).collect();
    // Rows of 72 points in a 720-point view, flung from the top.
    let list = ListGeometry::new(72.0, urls.len(), 720.0);
    let coast = CoastPrediction::new(ExponentialDecay::EGUI, 0.0, 6000.0, list);
    let visible = coast.visible_rows();
    let destination = coast.resting_rows().start..coast.resting_rows().end + 1;
    assert!(destination.start > visible.end + 10, "{destination:?}");
    // Gone within 50 ms: sooner than any image arrives (100 ms before a
    // load has been timed).
    let flown_past: Vec<usize> = visible
        .clone()
        .filter(|&row| {
            coast
                .leaves_after(row)
                .is_some_and(|t| t < Duration::from_millis(50))
        })
        .collect();
    assert!(flown_past.len() >= 2, "{flown_past:?}");

    let passed = std::time::Instant::now();
    thumbnails.follow_coast(Some(&coast), TARGET, |row| (row, urls[row].as_str()));
    thumbnails.show_rows(visible.clone().map(|row| (row, &urls[row])), TARGET);
    for row in &flown_past {
        assert!(matches!(thumbnails.get(row), RowThumbnail::Loading));
    }
    let requested = || -> Vec<usize> {
        server
            .requested_files()
            .iter()
            .map(|file| file.trim_end_matches(".jpg").parse().unwrap())
            .collect()
    };
    // While the coast goes on, only where it rests is fetched, one at a
    // time (one slot), in the order of priority.
    std::thread::sleep(Duration::from_millis(60));
    let early = requested();
    assert!(!early.is_empty(), "nothing fetched");
    assert!(
        early.iter().all(|row| destination.contains(row)),
        "{early:?}"
    );
    // No other pass comes (iced sends no message when a scroll stops):
    // once the list has been still for a moment, the subscription wakes
    // and `update` makes a pass of the rows in view, which are fetched.
    let done = |thumbnails: &Thumbnails<usize>| {
        flown_past
            .iter()
            .all(|&row| shown(thumbnails, row).is_some())
    };
    run_until(&mut thumbnails, &mut ready, done);
    assert!(passed.elapsed() >= ScrollWatch::STILL_AFTER);
    assert!(eventually(|| idle(thumbnails.pipeline())));
    let all = requested();
    for row in &flown_past {
        let at = all.iter().position(|asked| asked == row);
        assert!(
            at.is_some_and(|at| at >= early.len()),
            "row {row} flown past, asked for at {at:?}: {all:?}"
        );
    }
    // Without a coast, the next pass asks for every row it shows.
    thumbnails.follow_coast(None::<&CoastPrediction>, TARGET, |row| {
        (row, urls[row].as_str())
    });
    thumbnails.show_rows(visible.clone().map(|row| (row, &urls[row])), TARGET);
    run_until(&mut thumbnails, &mut ready, all_shown(visible));
}

/// The rows of a 2,000-row list fetched while a fast scroll (24,000
/// points a second for 20 frames, then no more scroll messages) passed
/// them, and how many it passed; with the docs' pattern (`watched`: a
/// `ScrollWatch` told each offset, its coast followed first in each pass)
/// or every row in view asked for. Each run ends once the rows where the
/// scroll stopped are shown: with the watch, with no scroll message after
/// the last.
fn fetched_while_passing(watched: bool) -> (usize, usize) {
    // Images take longer than a row passing stays on screen.
    let server = server(250);
    let mut thumbnails = Thumbnails::<usize>::new(Config::default()).unwrap();
    let mut ready = ready_stream(&thumbnails);
    let urls: Vec<String> = (0..2000).map(|row| server.image_url(row)).collect();
    let list = ListGeometry::new(72.0, urls.len(), 720.0);
    let mut scrolls = ScrollWatch::default();
    let show = |thumbnails: &mut Thumbnails<usize>, scrolls: &ScrollWatch, top: f32| {
        if watched {
            thumbnails.follow_scroll(scrolls, TARGET, |row| (row, urls[row].as_str()));
        }
        let rows = rows_in_view(top, 720.0, 72.0, urls.len());
        thumbnails.show_rows(rows.map(|row| (row, &urls[row])), TARGET);
    };
    show(&mut thumbnails, &scrolls, 0.0);
    let mut top = 0.0;
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(16));
        // A row is in view for two frames: gone sooner than any image
        // arrives, even with frames twice as long on a busy machine.
        top += 384.0;
        scrolls.observe(top, list);
        show(&mut thumbnails, &scrolls, top);
    }
    let stopped = rows_in_view(top, 720.0, 72.0, urls.len());
    run_until(&mut thumbnails, &mut ready, all_shown(stopped.clone()));
    assert!(eventually(|| idle(thumbnails.pipeline())));
    let requested: std::collections::HashSet<usize> = server
        .requested_files()
        .iter()
        .map(|file| file.trim_end_matches(".jpg").parse().unwrap())
        .collect();
    let first_screen = rows_in_view(0.0, 720.0, 72.0, urls.len());
    let passed = first_screen.end..stopped.start;
    let fetched = passed.clone().filter(|row| requested.contains(row)).count();
    (fetched, passed.len())
}

#[test]
fn a_watched_fast_scroll_fetches_where_it_stops_not_what_it_flies_past() {
    let (unwatched, passed) = fetched_while_passing(false);
    let (watched, _) = fetched_while_passing(true);
    assert!(passed > 60, "{passed}");
    assert!(
        watched * 2 < unwatched,
        "of {passed} rows passed, {watched} fetched with the watch, {unwatched} without"
    );
}
