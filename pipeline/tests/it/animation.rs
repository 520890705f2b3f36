//! Animated GIFs, with `DecodeConfig::animation` on and off: every frame
//! at the thumbnail's size with its delay, or the first frame alone; and
//! through egui, a texture a frame, the frame of the moment drawn, and a
//! repaint asked for only while the animation is drawn.

use std::time::Duration;

use thumbpipe::{Config, TargetSize, thumbnail_from_bytes};

/// The fixture server's animated GIF of `id` at 128x128: 8 frames of
/// 100 ms, the id readable in each.
fn fixture_gif(id: u32) -> Vec<u8> {
    fixture_server::picture::render(id, 128, 128)
        .encode_animated_gif(8, 100)
        .unwrap()
}

fn animating() -> Config {
    let mut config = Config::default();
    config.decode.animation = true;
    config
}

#[test]
fn an_animated_gif_is_every_frame_at_the_thumbnails_size_when_asked() {
    let gif = fixture_gif(41);
    let target = TargetSize::square(64);
    let thumbnail = thumbnail_from_bytes("a.gif", &gif, target, &animating().decode).unwrap();
    let animation = thumbnail.animation.as_deref().expect("animated");
    assert_eq!(animation.frames().len(), 8);
    assert_eq!(animation.duration(), Duration::from_millis(800));
    assert_eq!((thumbnail.width, thumbnail.height), (64, 64));
    assert_eq!(thumbnail.source_size, (128, 128));
    assert_eq!(thumbnail.cost(), 8 * 64 * 64 * 4);
    assert_eq!(animation.frames()[0].pixels, thumbnail.pixels);
    for (index, frame) in animation.frames().iter().enumerate() {
        assert_eq!(frame.pixels.len(), 64 * 64 * 4, "frame {index}");
        assert_eq!(
            fixture_server::decode_id(&frame.pixels, 64, 64),
            Some(41),
            "frame {index}"
        );
    }
    // The bar moves: no two neighbouring frames are the same picture.
    for pair in animation.frames().windows(2) {
        assert_ne!(pair[0].pixels, pair[1].pixels);
    }
}

#[test]
fn off_or_over_a_limit_an_animation_is_its_first_frame() {
    let gif = fixture_gif(42);
    let target = TargetSize::square(64);
    let still = thumbnail_from_bytes("a.gif", &gif, target, &Config::default().decode).unwrap();
    assert!(still.animation.is_none());
    assert_eq!(still.cost(), 64 * 64 * 4);
    let mut few_frames = animating();
    few_frames.decode.max_animation_frames = 7;
    let mut few_bytes = animating();
    few_bytes.decode.max_animation_bytes = 8 * 64 * 64 * 4 - 1;
    for config in [few_frames, few_bytes] {
        let first = thumbnail_from_bytes("a.gif", &gif, target, &config.decode).unwrap();
        assert!(first.animation.is_none());
        assert_eq!(first.pixels, still.pixels, "the same first frame");
    }
    // A still image is still with animation on.
    let png = fixture_server::picture::render(43, 128, 128)
        .encode_png()
        .unwrap();
    let png = thumbnail_from_bytes("a.png", &png, target, &animating().decode).unwrap();
    assert!(png.animation.is_none());
}

#[test]
fn an_animated_webp_is_every_frame_too() {
    // Pillow's `iss634.webp` (HPND licence, `corpus/pillow/README.md`).
    let webp = include_bytes!("corpus/pillow/iss634.webp");
    let target = TargetSize::square(64);
    let thumbnail = thumbnail_from_bytes("a.webp", webp, target, &animating().decode).unwrap();
    let animation = thumbnail.animation.as_deref().expect("animated");
    assert_eq!(animation.frames().len(), 42);
    assert_eq!((thumbnail.width, thumbnail.height), (64, 64));
    assert!(
        animation
            .frames()
            .iter()
            .all(|f| f.pixels.len() == 64 * 64 * 4)
    );
    let still = thumbnail_from_bytes("a.webp", webp, target, &Config::default().decode).unwrap();
    assert!(still.animation.is_none());
    assert_eq!(still.pixels, thumbnail.pixels, "off: its first frame");
    let distinct: std::collections::HashSet<_> = animation
        .frames()
        .iter()
        .map(|f| f.pixels.clone())
        .collect();
    assert!(distinct.len() > 10, "{} distinct frames", distinct.len());
}

#[test]
fn an_animation_cut_short_plays_the_frames_that_arrived() {
    let gif = fixture_gif(44);
    let target = TargetSize::square(64);
    let decode = &animating().decode;
    let whole = thumbnail_from_bytes("a.gif", &gif, target, decode).unwrap();
    // Every length: a typed error or a thumbnail, never a panic, and never
    // more frames than the whole file.
    let mut animated_lengths = 0;
    for len in (0..gif.len()).step_by(gif.len() / 40) {
        if let Ok(thumbnail) = thumbnail_from_bytes("a.gif", &gif[..len], target, decode)
            && let Some(animation) = &thumbnail.animation
        {
            animated_lengths += 1;
            assert!(animation.frames().len() < 8);
            assert_eq!(
                animation.frames()[0].pixels,
                whole.pixels,
                "cut at {len}: its first frame"
            );
        }
    }
    assert!(animated_lengths > 0, "some cut files still animate");
}

#[cfg(feature = "egui")]
mod drawn {
    use std::time::{Duration, Instant};

    use egui::load::TexturePoll;
    use egui::{Context, RawInput, ViewportId, vec2};
    use thumbpipe::egui::EguiConfig;

    use crate::common::server;

    /// One pass at `time` seconds, drawing `uri` or not; the texture drawn,
    /// if any, and the repaint egui was asked for.
    fn pass(ctx: &Context, time: f64, uri: Option<&str>) -> (Option<egui::TextureId>, Duration) {
        let mut drawn = None;
        let input = RawInput {
            time: Some(time),
            ..RawInput::default()
        };
        let output = ctx.run_ui(input, |ui| {
            if let Some(uri) = uri {
                let image = egui::Image::new(uri).fit_to_exact_size(vec2(64.0, 64.0));
                if let Ok(TexturePoll::Ready { texture }) =
                    image.load_for_size(ui.ctx(), ui.available_size())
                {
                    drawn = Some(texture.id);
                }
                ui.add(image);
            }
        });
        let repaint = output
            .viewport_output
            .get(&ViewportId::ROOT)
            .map_or(Duration::MAX, |viewport| viewport.repaint_delay);
        (drawn, repaint)
    }

    #[test]
    fn a_drawn_animation_shows_the_frame_of_the_moment_and_asks_for_the_next() {
        let server = server(0);
        let ctx = Context::default();
        let mut config = EguiConfig::default();
        config.pipeline.decode.animation = true;
        let loader = thumbpipe::egui::install(&ctx, config).unwrap();
        let uri = format!("{}/img/9.gif?w=128&h=128", server.base_url());
        let deadline = Instant::now() + Duration::from_secs(10);
        let first = loop {
            if let (Some(texture), _) = pass(&ctx, 0.0, Some(&uri)) {
                break texture;
            }
            assert!(Instant::now() < deadline, "never loaded");
            std::thread::sleep(Duration::from_millis(5));
        };
        // Every frame is a texture.
        assert_eq!(loader.texture_stats().textures, 8);
        // 30 ms into its first frame: the same texture, and a repaint when
        // the second is due. (The loader's wake for the arrival may come
        // after the pass that drew it, and makes the next pass's repaint
        // immediate: one such pass is passed over.)
        let (mut texture, mut repaint) = pass(&ctx, 0.03, Some(&uri));
        if repaint == Duration::ZERO {
            (texture, repaint) = pass(&ctx, 0.03, Some(&uri));
        }
        assert_eq!(texture, Some(first));
        assert!(
            repaint <= Duration::from_millis(70) && repaint >= Duration::from_millis(60),
            "{repaint:?}"
        );
        let (second, _) = pass(&ctx, 0.15, Some(&uri));
        assert!(second.is_some() && second != Some(first));
        // A loop later, the first again.
        assert_eq!(pass(&ctx, 0.83, Some(&uri)).0, Some(first));
        // Not drawn: no repaint is asked for.
        pass(&ctx, 0.9, None);
        let (_, repaint) = pass(&ctx, 0.95, None);
        assert_eq!(repaint, Duration::MAX);
    }
}
