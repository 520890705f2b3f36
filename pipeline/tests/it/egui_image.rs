//! `thumbpipe::egui` in a headless `egui::Context`, against the fixture
//! server: plain `egui::Image::new(url)` loads through thumbpipe, a cached
//! image is drawn in the pass that asks for it, what is not drawn is
//! cancelled, and the texture budget holds.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use egui::load::{
    ImageLoadResult, ImageLoader, ImagePoll, LoadError, SizeHint, SizedTexture, TexturePoll,
};
use egui::{Context, Vec2, vec2};
use thumbpipe::BuildError;
use thumbpipe::egui::{EguiConfig, Loader, RowThumbnail, ThumbnailList};

use crate::common::{self, id_of, server};

const CELL: Vec2 = Vec2::splat(64.0);

/// Whether an image was drawn (its texture's width and height in texels),
/// is loading or failed, as egui saw it.
#[derive(Clone, Debug, PartialEq)]
enum Seen {
    Ready(Vec2),
    Pending,
    Failed(String),
}

/// The width and height in texels of the texture egui was given.
fn texels(ctx: &Context, texture: SizedTexture) -> Vec2 {
    let manager = ctx.tex_manager();
    let meta = manager.read();
    let [width, height] = meta.meta(texture.id).expect("a live texture").size;
    vec2(width as f32, height as f32)
}

/// One egui pass that draws `uris` as `egui::Image`s of `size` points.
fn draw(ctx: &Context, uris: &[String], size: Vec2) -> Vec<Seen> {
    let mut seen = Vec::new();
    let _ = ctx.run_ui(egui::RawInput::default(), |ui| {
        for uri in uris {
            let image = egui::Image::new(uri.as_str()).fit_to_exact_size(size);
            seen.push(match image.load_for_size(ui.ctx(), ui.available_size()) {
                Ok(TexturePoll::Ready { texture }) => Seen::Ready(texels(ui.ctx(), texture)),
                Ok(TexturePoll::Pending { .. }) => Seen::Pending,
                Err(error) => Seen::Failed(error.to_string()),
            });
            ui.add(image);
        }
    });
    seen
}

/// Draws `uris` pass after pass until none is pending (10 s at most).
fn draw_until_done(ctx: &Context, uris: &[String], size: Vec2) -> Vec<Seen> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = draw(ctx, uris, size);
        if !seen.contains(&Seen::Pending) || Instant::now() > deadline {
            return seen;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn installed(config: EguiConfig) -> (Context, Loader) {
    let ctx = Context::default();
    let loader = thumbpipe::egui::install(&ctx, config).expect("installs");
    (ctx, loader)
}

/// Waits until `check` holds, drawing empty passes (10 s at most).
fn eventually(ctx: &Context, mut check: impl FnMut() -> bool) -> bool {
    common::eventually(|| {
        draw(ctx, &[], CELL);
        check()
    })
}

#[test]
fn an_image_appears_after_its_load_and_a_cached_one_in_the_first_pass_that_asks() {
    let server = server(20);
    // Room for one 64x64 texture: drawing b frees a's texture, while the
    // pipeline's cache still holds a's thumbnail.
    let (ctx, loader) = installed({
        let mut config = EguiConfig::default();
        config.max_texture_bytes = 64 * 64 * 4;
        config
    });
    let (a, b) = (vec![server.image_url(1)], vec![server.image_url(2)]);
    assert_eq!(draw(&ctx, &a, CELL), [Seen::Pending]);
    assert_eq!(
        draw_until_done(&ctx, &a, CELL),
        [Seen::Ready(vec2(64.0, 64.0))]
    );
    // The texture: ready again at once.
    assert_eq!(draw(&ctx, &a, CELL), [Seen::Ready(vec2(64.0, 64.0))]);
    assert_eq!(
        draw_until_done(&ctx, &b, CELL),
        [Seen::Ready(vec2(64.0, 64.0))]
    );
    assert_eq!(loader.texture_stats().evicted, 1);
    // a's texture is gone, its thumbnail is cached: drawn in this pass.
    assert_eq!(draw(&ctx, &a, CELL), [Seen::Ready(vec2(64.0, 64.0))]);
    let stats = loader.stats();
    assert_eq!(stats.fetches_started, 2, "nothing fetched twice: {stats:?}");
    assert_eq!(server.stats().requests_started, 2);
    let drawn = loader.drawn(&a[0], CELL).expect("a is drawn");
    assert_eq!(id_of(&drawn), Some(1));
    loader.uninstall();
}

#[test]
fn a_uri_not_drawn_during_a_pass_is_cancelled_and_its_transfer_stopped() {
    let server = server(5_000);
    let (ctx, loader) = installed(EguiConfig::default());
    let uri = vec![server.image_url(7)];
    assert_eq!(draw(&ctx, &uri, CELL), [Seen::Pending]);
    assert!(common::eventually(|| server.stats().in_flight == 1));
    // A pass without it: the image left the view.
    draw(&ctx, &[], CELL);
    assert!(eventually(&ctx, || server.stats().responses_aborted == 1));
    let stats = loader.stats();
    assert_eq!(stats.fetches_cancelled_in_flight, 1, "{stats:?}");
    assert!(!ctx.has_pending_images());
    loader.uninstall();
}

#[test]
fn forget_removes_the_image_from_every_level() {
    let server = server(10);
    let (ctx, loader) = installed(EguiConfig::default());
    let uri = vec![server.image_url(3)];
    assert!(matches!(
        draw_until_done(&ctx, &uri, CELL)[0],
        Seen::Ready(_)
    ));
    assert!(eventually(&ctx, || loader.stats().cache.entries == 1));
    ctx.forget_image(&uri[0]);
    assert_eq!(loader.texture_stats().textures, 0);
    // Not drawn from any level: loaded afresh.
    assert_eq!(draw(&ctx, &uri, CELL), [Seen::Pending]);
    assert!(matches!(
        draw_until_done(&ctx, &uri, CELL)[0],
        Seen::Ready(_)
    ));
    assert_eq!(server.stats().requests_started, 2);
    ctx.forget_all_images();
    assert_eq!(loader.texture_stats().textures, 0);
    assert!(eventually(&ctx, || loader.stats().cache.entries == 0));
    loader.uninstall();
}

#[test]
fn the_texture_budget_evicts_and_live_textures_never_exceed_it() {
    let server = server(5);
    let budget = 3 * 64 * 64 * 4;
    let (ctx, loader) = installed({
        let mut config = EguiConfig::default();
        config.max_texture_bytes = budget;
        config
    });
    for id in 0..10 {
        let uri = vec![server.image_url(id)];
        assert!(matches!(
            draw_until_done(&ctx, &uri, CELL)[0],
            Seen::Ready(_)
        ));
        let textures = loader.texture_stats();
        assert!(textures.bytes <= budget, "{textures:?}");
    }
    let textures = loader.texture_stats();
    assert_eq!(
        (textures.textures, textures.evicted),
        (3, 7),
        "{textures:?}"
    );
    assert!(textures.peak_bytes <= budget);
    assert_eq!(ctx.loaders().texture.lock()[1].byte_size(), textures.bytes);
    loader.uninstall();
}

#[test]
fn a_pass_uploads_within_its_budget_and_the_rest_in_the_next_passes() {
    let server = server(5);
    // Two 64x64 textures per pass.
    let (ctx, loader) = installed({
        let mut config = EguiConfig::default();
        config.upload_bytes_per_pass = 2 * 64 * 64 * 4;
        config
    });
    let uris: Vec<String> = (0..6).map(|id| server.image_url(id)).collect();
    // Wait for every thumbnail to be decoded, without drawing them.
    for uri in &uris {
        loader.prefetch(uri, CELL);
    }
    assert!(eventually(&ctx, || {
        uris.iter().for_each(|uri| loader.prefetch(uri, CELL));
        loader.stats().cache.entries == 6
    }));
    let ready = |seen: &[Seen]| seen.iter().filter(|s| matches!(s, Seen::Ready(_))).count();
    assert_eq!(ready(&draw(&ctx, &uris, CELL)), 2);
    assert_eq!(ready(&draw(&ctx, &uris, CELL)), 4);
    assert_eq!(ready(&draw(&ctx, &uris, CELL)), 6);
    loader.uninstall();
}

/// Serves `bytes://` URIs as one white pixel: one of egui's "other loaders".
struct OtherLoader;

impl ImageLoader for OtherLoader {
    fn id(&self) -> &str {
        "test::OtherLoader"
    }

    fn load(&self, _ctx: &Context, uri: &str, _size_hint: SizeHint) -> ImageLoadResult {
        if !uri.starts_with("bytes://") {
            return Err(LoadError::NotSupported);
        }
        Ok(ImagePoll::Ready {
            image: Arc::new(egui::ColorImage::filled([1, 1], egui::Color32::WHITE)),
        })
    }

    fn forget(&self, _uri: &str) {}

    fn forget_all(&self) {}

    fn byte_size(&self) -> usize {
        0
    }
}

#[test]
fn other_uris_fall_through_to_eguis_other_loaders() {
    let ctx = Context::default();
    ctx.add_image_loader(Arc::new(OtherLoader));
    let loader = thumbpipe::egui::install(&ctx, EguiConfig::default()).expect("installs");
    let seen = draw(&ctx, &["bytes://white.png".to_owned()], CELL);
    assert_eq!(seen, [Seen::Ready(vec2(1.0, 1.0))]);
    // file:// without fetch.file_roots is not thumbpipe's either.
    let seen = draw(&ctx, &["file:///tmp/a.png".to_owned()], CELL);
    assert!(
        matches!(&seen[0], Seen::Failed(message) if message.contains("No matching ImageLoader")),
        "{seen:?}"
    );
    assert_eq!(loader.stats().requested, 0);
    loader.uninstall();
}

#[test]
fn pixels_per_point_2_gives_a_twice_as_large_thumbnail() {
    let server = server(5);
    let (ctx, loader) = installed(EguiConfig::default());
    let uri = vec![server.image_url(4)];
    assert_eq!(
        draw_until_done(&ctx, &uri, CELL),
        [Seen::Ready(vec2(64.0, 64.0))]
    );
    ctx.set_pixels_per_point(2.0);
    draw(&ctx, &[], CELL);
    assert_eq!(ctx.pixels_per_point(), 2.0);
    assert_eq!(
        draw_until_done(&ctx, &uri, CELL),
        [Seen::Ready(vec2(128.0, 128.0))]
    );
    let drawn = loader.drawn(&uri[0], CELL).expect("drawn at ppp 2");
    assert_eq!((drawn.width, drawn.height), (128, 128));
    assert_eq!(id_of(&drawn), Some(4));
    loader.uninstall();
}

/// Draws `uri` with `fit_to_original_size(1.0)` until it is ready: the
/// size egui was told (the image's own) and its texture's texels.
fn draw_at_own_size(ctx: &Context, uri: &str) -> Option<(Vec2, Vec2)> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut sizes = None;
        let _ = ctx.run_ui(egui::RawInput::default(), |ui| {
            let image = egui::Image::new(uri).fit_to_original_size(1.0);
            if let Ok(TexturePoll::Ready { texture }) =
                image.load_for_size(ui.ctx(), ui.available_size())
            {
                sizes = Some((texture.size, texels(ui.ctx(), texture)));
            }
            ui.add(image);
        });
        match sizes {
            Some(sizes) => return Some(sizes),
            None if Instant::now() > deadline => return None,
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// `fit_to_original_size` draws an image at its own size, as egui's own
/// loaders do: every pixel loaded (not a box's worth), its size told to
/// egui, also when the texture had to be smaller.
#[test]
fn an_image_at_its_own_size_is_loaded_whole_and_tells_egui_its_size() {
    let server = server(5);
    let (ctx, loader) = installed(EguiConfig::default());
    ctx.set_pixels_per_point(2.0);
    draw(&ctx, &[], CELL);
    // 600x600: all of it (never scaled up for the denser screen).
    let own = vec2(600.0, 600.0);
    assert_eq!(
        draw_at_own_size(&ctx, &server.image_url(6)),
        Some((own, own))
    );
    // In a box, egui is told the image's own size too; it keeps the shape.
    let uri = server.image_url(7);
    assert_eq!(
        draw_until_done(&ctx, std::slice::from_ref(&uri), CELL),
        [Seen::Ready(vec2(128.0, 128.0))]
    );
    let _ = ctx.run_ui(egui::RawInput::default(), |ui| {
        let image = egui::Image::new(uri.as_str()).fit_to_exact_size(CELL);
        let poll = image.load_for_size(ui.ctx(), ui.available_size());
        assert!(matches!(poll, Ok(TexturePoll::Ready { texture }) if texture.size == own));
    });
    loader.uninstall();

    // A texture budget of 300x300 texels: the texture is that, egui is
    // still told 600x600, so the image is drawn at its size.
    let mut config = EguiConfig::default();
    config.max_texture_bytes = 300 * 300 * 4;
    let (ctx, loader) = installed(config);
    assert_eq!(
        draw_at_own_size(&ctx, &server.image_url(8)),
        Some((own, vec2(300.0, 300.0)))
    );
    loader.uninstall();
}

#[test]
fn load_errors_reach_egui_with_thumbpipes_message() {
    let server = server(5);
    let (ctx, loader) = installed(EguiConfig::default());
    let uri = vec![format!("{}?fault=404", server.image_url(5))];
    let seen = draw_until_done(&ctx, &uri, CELL);
    assert!(
        matches!(&seen[0], Seen::Failed(message) if message.contains("answered 404")),
        "{seen:?}"
    );
    // Not retried while it stays in view.
    draw(&ctx, &uri, CELL);
    assert_eq!(server.stats().requests_started, 1);
    loader.uninstall();
}

#[test]
fn a_refreshing_list_never_draws_a_rows_old_image() {
    let server = server(30);
    let (ctx, loader) = installed(EguiConfig::default());
    let (mut shown, mut wrong) = (0, 0);
    for pass in 0..400_u32 {
        // Five rows whose image changes every 40 passes (about 150 ms).
        let generation = pass / 40;
        // The last row's server is too slow for it ever to finish: each
        // new image supersedes a load still under way.
        let uris: Vec<String> = (0..5)
            .map(|row| {
                let url = server.image_url(generation * 5 + row);
                if row == 4 {
                    format!("{url}?latency_ms=1000")
                } else {
                    url
                }
            })
            .collect();
        for (row, seen) in draw(&ctx, &uris, CELL).iter().enumerate() {
            if let Seen::Ready(_) = seen {
                shown += 1;
                let drawn = loader.drawn(&uris[row], CELL).expect("drawn");
                if id_of(&drawn) != Some(generation * 5 + row as u32) {
                    wrong += 1;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(3));
    }
    assert!(shown > 50, "{shown}");
    assert_eq!(wrong, 0);
    assert!(
        loader.stats().fetches_cancelled_in_flight + loader.stats().fetches_cancelled_queued > 0
    );
    loader.uninstall();
}

#[test]
fn prefetched_images_load_ahead_and_are_cancelled_once_out_of_the_window() {
    let server = server(20);
    let (ctx, loader) = installed(EguiConfig::default());
    let near = server.image_url(10);
    assert!(eventually(&ctx, || {
        loader.prefetch(&near, CELL);
        loader.stats().cache.entries == 1
    }));
    assert_eq!(draw(&ctx, &[near], CELL), [Seen::Ready(vec2(64.0, 64.0))]);
    // A prefetch not repeated in the next pass is cancelled at its end.
    let slow = format!("{}?latency_ms=5000", server.image_url(11));
    loader.prefetch(&slow, CELL);
    draw(&ctx, &[], CELL);
    assert!(eventually(&ctx, || loader.stats().fetches_cancelled_queued
        + loader.stats().fetches_cancelled_in_flight
        == 1));
    loader.uninstall();
}

#[test]
fn installing_twice_is_a_typed_error_and_uninstall_stops_the_threads() {
    let ctx = Context::default();
    let loader = thumbpipe::egui::install(&ctx, EguiConfig::default()).expect("installs");
    assert!(matches!(
        thumbpipe::egui::install(&ctx, EguiConfig::default()),
        Err(BuildError::AlreadyInstalled)
    ));
    loader.uninstall();
    assert_eq!(ctx.loaders().texture.lock().len(), 1, "only egui's own");
    assert!(ctx.loaders().image.lock().is_empty());
    let again = thumbpipe::egui::install(&ctx, EguiConfig::default()).expect("installs again");
    again.uninstall();
}

#[test]
fn the_list_helper_cancels_a_rows_old_url_and_shows_its_state() {
    let server = server(20);
    let ctx = Context::default();
    let mut list = ThumbnailList::<usize>::new(&ctx, EguiConfig::default()).expect("builds");
    let slow = format!("{}?latency_ms=5000", server.image_url(1));
    let show = |list: &mut ThumbnailList<usize>, url: &str| {
        let mut state = None;
        let _ = ctx.run_ui(egui::RawInput::default(), |ui| {
            state = Some(list.show(ui, 0, url, CELL).1);
            list.end_pass();
        });
        state.expect("drawn")
    };
    assert!(matches!(show(&mut list, &slow), RowThumbnail::Loading));
    assert!(common::eventually(|| server.stats().in_flight == 1));
    // The row's URL changes: the old load is cancelled at once.
    let fast = server.image_url(2);
    let deadline = Instant::now() + Duration::from_secs(10);
    let shown = loop {
        match show(&mut list, &fast) {
            RowThumbnail::Shown(_, thumbnail) => break Some(thumbnail),
            _ if Instant::now() > deadline => break None,
            _ => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    assert_eq!(shown.as_ref().and_then(id_of), Some(2));
    assert!(common::eventually(|| server.stats().responses_aborted == 1));
    assert_eq!(list.stats().superseded, 1);
    let broken = format!("{}?fault=404", server.image_url(3));
    let deadline = Instant::now() + Duration::from_secs(10);
    let failed = loop {
        match show(&mut list, &broken) {
            RowThumbnail::Failed(error) => break Some(error),
            _ if Instant::now() > deadline => break None,
            _ => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    assert!(matches!(
        failed,
        Some(thumbpipe::Error::Status { status: 404, .. })
    ));
}

/// A fetcher of the app's own that serves image `id` for every URL ending
/// in `/{id}.png`, and counts its calls.
fn counting_fetcher(calls: Arc<AtomicUsize>) -> impl thumbpipe::Fetch {
    thumbpipe::fetch_fn(move |url, _max_bytes| {
        calls.fetch_add(1, Ordering::SeqCst);
        async move {
            let id: u32 = url
                .path()
                .trim_start_matches('/')
                .trim_end_matches(".png")
                .parse()
                .map_err(|_| thumbpipe::Error::Status {
                    url: url.to_string(),
                    status: 404,
                })?;
            let png = fixture_server::picture::render(id, 96, 96)
                .encode_png()
                .expect("encodes");
            Ok(bytes::Bytes::from(png))
        }
    })
}

#[test]
fn install_with_loads_through_the_apps_fetcher_with_configs_settings() {
    let calls = Arc::new(AtomicUsize::new(0));
    let ctx = Context::default();
    let mut config = EguiConfig::default();
    // A texture budget of one image: the config given here is the one used.
    config.max_texture_bytes = 64 * 64 * 4;
    let builder =
        thumbpipe::Pipeline::<()>::builder().fetcher(counting_fetcher(Arc::clone(&calls)));
    let loader = thumbpipe::egui::install_with(&ctx, config, builder).expect("installs");
    let uris: Vec<String> = (1..=2)
        .map(|id| format!("https://app.test/{id}.png"))
        .collect();
    for uri in &uris {
        assert_eq!(
            draw_until_done(&ctx, std::slice::from_ref(uri), CELL),
            [Seen::Ready(CELL)]
        );
    }
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(loader.texture_stats().evicted, 1, "the budget is config's");
    let drawn = loader.drawn(&uris[1], CELL).expect("drawn");
    assert_eq!(id_of(&drawn), Some(2));
    // The same front door: a second install is refused either way.
    assert!(matches!(
        thumbpipe::egui::install(&ctx, EguiConfig::default()),
        Err(BuildError::AlreadyInstalled)
    ));
    loader.uninstall();
}

#[test]
fn the_list_helper_runs_on_the_apps_runtime_with_its_fetcher() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("app-runtime")
        .enable_all()
        .build()
        .expect("a runtime");
    let calls = Arc::new(AtomicUsize::new(0));
    let ctx = Context::default();
    let builder = thumbpipe::Pipeline::builder()
        .runtime(runtime.handle().clone())
        .fetcher(counting_fetcher(Arc::clone(&calls)));
    let mut list =
        ThumbnailList::<usize>::with_builder(&ctx, EguiConfig::default(), builder).expect("builds");
    let deadline = Instant::now() + Duration::from_secs(10);
    let shown = loop {
        let mut state = None;
        let _ = ctx.run_ui(egui::RawInput::default(), |ui| {
            state = Some(list.show(ui, 7, "https://app.test/7.png", CELL).1);
            list.end_pass();
        });
        match state {
            Some(RowThumbnail::Shown(_, thumbnail)) => break Some(thumbnail),
            _ if Instant::now() > deadline => break None,
            _ => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    assert_eq!(shown.as_ref().and_then(id_of), Some(7));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(
        runtime.metrics().num_alive_tasks() > 0,
        "the load actor runs on the app's runtime"
    );
    drop(list);
}

/// A list put over a pipeline that was asked for its first screen before
/// there was a window draws, in its first pass, what loaded meanwhile:
/// the thumbnails and the error alike (a completion that arrived before
/// the list is its row's, not dropped as a stranger's). A row asked early
/// and not shown is cancelled at the first pass's end.
#[test]
fn a_list_over_a_pipeline_asked_early_draws_what_loaded_in_its_first_pass() {
    let fetcher = thumbpipe::fetch_fn(|url, _max_bytes| async move {
        match url.path() {
            "/slow.png" => std::future::pending().await,
            path => match path
                .trim_start_matches('/')
                .trim_end_matches(".png")
                .parse()
            {
                Ok(id) => Ok(bytes::Bytes::from(
                    fixture_server::picture::render(id, 96, 96)
                        .encode_png()
                        .expect("encodes"),
                )),
                Err(_) => Err(thumbpipe::Error::Status {
                    url: url.to_string(),
                    status: 404,
                }),
            },
        }
    });
    let mut pipeline = thumbpipe::Pipeline::<usize>::builder()
        .fetcher(fetcher)
        .build()
        .expect("builds");
    let target = thumbpipe::egui::target_size(CELL, 1.0);
    let urls = [
        "https://app.test/1.png",
        "https://app.test/2.png",
        "https://app.test/missing.png",
        "https://app.test/slow.png",
    ];
    for (row, url) in urls.iter().enumerate() {
        pipeline.request(row, url, target, thumbpipe::Priority::Visible);
    }
    assert!(common::eventually(|| {
        let stats = pipeline.stats();
        stats.decodes_completed == 2 && stats.fetches_failed == 1
    }));
    // Each delivery is sent in the same step of the load actor that
    // counted it; give that step time to end.
    std::thread::sleep(Duration::from_millis(100));
    let ctx = Context::default();
    let mut list =
        ThumbnailList::with_pipeline(&ctx, pipeline, EguiConfig::default()).expect("builds");
    let mut first = Vec::new();
    let _ = ctx.run_ui(egui::RawInput::default(), |ui| {
        for (row, url) in urls.iter().enumerate().take(3) {
            first.push(list.show(ui, row, url, CELL).1);
        }
        list.end_pass();
    });
    let ids: Vec<Option<u32>> = first[..2]
        .iter()
        .map(|shown| match shown {
            RowThumbnail::Shown(_, thumbnail) => id_of(thumbnail),
            other => panic!("not drawn in the first pass: {other:?}"),
        })
        .collect();
    assert_eq!(ids, [Some(1), Some(2)]);
    assert!(
        matches!(
            first[2],
            RowThumbnail::Failed(thumbpipe::Error::Status { status: 404, .. })
        ),
        "{:?}",
        first[2]
    );
    assert_eq!(list.pipeline().pending_rows(), 0, "the slow row, not shown");
    assert!(common::eventually(|| list.stats().cancelled == 1));
}

/// A row whose completion the app drained itself before putting the list
/// over its pipeline is asked for afresh in the first pass, not waited
/// for: a failure shows as one again instead of a spinner for good.
#[test]
fn a_row_the_app_drained_before_the_list_is_asked_for_afresh() {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut pipeline = thumbpipe::Pipeline::<usize>::builder()
        .fetcher(counting_fetcher(Arc::clone(&calls)))
        .build()
        .expect("builds");
    let target = thumbpipe::egui::target_size(CELL, 1.0);
    let url = "https://app.test/missing.png";
    pipeline.request(0, url, target, thumbpipe::Priority::Visible);
    let mut taken = Vec::new();
    assert!(common::eventually(|| {
        taken.extend(pipeline.drain());
        !taken.is_empty()
    }));
    assert!(taken[0].result.is_err());
    let ctx = Context::default();
    let mut list =
        ThumbnailList::with_pipeline(&ctx, pipeline, EguiConfig::default()).expect("builds");
    let deadline = Instant::now() + Duration::from_secs(10);
    let failed = loop {
        let mut state = None;
        let _ = ctx.run_ui(egui::RawInput::default(), |ui| {
            state = Some(list.show(ui, 0, url, CELL).1);
            list.end_pass();
        });
        match state {
            Some(RowThumbnail::Failed(error)) => break Some(error),
            _ if Instant::now() > deadline => break None,
            _ => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    assert!(
        matches!(failed, Some(thumbpipe::Error::Status { status: 404, .. })),
        "{failed:?}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2, "fetched again");
}

/// An `egui::Image` whose aspect ratio need not be kept fills its box
/// with a cover crop: a square image in a wide box is its middle band, at
/// the box's size, not a stretched square.
#[test]
fn an_image_told_not_to_keep_its_aspect_ratio_is_cropped_to_fill_its_box() {
    let server = server(5);
    let (ctx, loader) = installed(EguiConfig::default());
    let uri = server.image_url(8);
    let wide = vec2(64.0, 32.0);
    let deadline = Instant::now() + Duration::from_secs(10);
    let size = loop {
        let mut size = None;
        let _ = ctx.run_ui(egui::RawInput::default(), |ui| {
            let image = egui::Image::new(uri.as_str())
                .fit_to_exact_size(wide)
                .maintain_aspect_ratio(false);
            if let Ok(TexturePoll::Ready { texture }) =
                image.load_for_size(ui.ctx(), ui.available_size())
            {
                size = Some(texels(ui.ctx(), texture));
            }
            ui.add(image);
        });
        match size {
            Some(size) => break Some(size),
            None if Instant::now() > deadline => break None,
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    assert_eq!(size, Some(wide));
    // Kept (the default): the whole square inside the box.
    assert_eq!(
        draw_until_done(&ctx, &[uri], wide),
        [Seen::Ready(vec2(32.0, 32.0))]
    );
    loader.uninstall();
}

/// With the `svg` feature, an `.svg` URI is thumbpipe's, drawn at the
/// size of its box: twice as many pixels at `pixels_per_point` 2.
#[cfg(feature = "svg")]
#[test]
fn an_svg_is_drawn_by_thumbpipe_at_the_size_of_its_box() {
    let root = common::Scratch::new("egui-svg");
    let path = root.0.join("logo.svg");
    std::fs::write(
        &path,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><circle cx="12" cy="12" r="10" fill="teal"/></svg>"#,
    )
    .unwrap();
    let mut config = EguiConfig::default();
    config.pipeline.fetch.file_roots = vec![root.0.clone()];
    // Hermetic: not the desktop's thumbnails of this machine.
    config.pipeline.shared_thumbnails.read = thumbpipe::ThumbnailStore::Off;
    config.pipeline.shared_thumbnails.write = thumbpipe::ThumbnailStore::Off;
    let (ctx, loader) = installed(config);
    let uri = vec![format!("file://{}", path.display())];
    assert_eq!(
        draw_until_done(&ctx, &uri, CELL),
        [Seen::Ready(vec2(64.0, 64.0))]
    );
    ctx.set_pixels_per_point(2.0);
    draw(&ctx, &[], CELL);
    assert_eq!(
        draw_until_done(&ctx, &uri, CELL),
        [Seen::Ready(vec2(128.0, 128.0))]
    );
    let drawn = loader.drawn(&uri[0], CELL).expect("drawn at ppp 2");
    // The circle's centre is teal, a corner is transparent.
    let centre = ((64 * 128 + 64) * 4) as usize;
    assert_eq!(&drawn.pixels[centre..centre + 4], &[0, 128, 128, 255]);
    assert_eq!(drawn.pixels[3], 0);
    assert_eq!(loader.stats().requested, 2);
    // At its own size: 24x24 points, drawn at 48x48 texels for the screen.
    assert_eq!(
        draw_at_own_size(&ctx, &uri[0]),
        Some((vec2(24.0, 24.0), vec2(48.0, 48.0)))
    );
    loader.uninstall();
}

#[test]
fn an_apps_own_scheme_is_drawn_through_its_source_and_others_are_left_to_egui() {
    let calls = Arc::new(AtomicUsize::new(0));
    let ctx = Context::default();
    let builder =
        thumbpipe::Pipeline::<()>::builder().source("covers", counting_fetcher(Arc::clone(&calls)));
    let loader =
        thumbpipe::egui::install_with(&ctx, EguiConfig::default(), builder).expect("installs");
    let uri = "covers://shelf/5.png".to_owned();
    assert_eq!(
        draw_until_done(&ctx, std::slice::from_ref(&uri), CELL),
        [Seen::Ready(CELL)]
    );
    assert_eq!(id_of(&loader.drawn(&uri, CELL).expect("drawn")), Some(5));
    // A scheme with no source is not thumbpipe's: egui's other loaders
    // (none here) get it, and no source is called.
    let other = draw(&ctx, &["s3://bucket/6.png".to_owned()], CELL);
    assert!(matches!(&other[..], [Seen::Failed(_)]), "{other:?}");
    assert_eq!(loader.drawn("s3://bucket/6.png", CELL), None);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    loader.uninstall();
}
