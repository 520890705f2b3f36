//! The egui front door's settings: the pipeline's [`Config`], and the UI
//! side's own (the texture budget, the upload budget per pass, coasting).
//! Plain data, read once by [`super::install`] or
//! [`super::ThumbnailList::new`].

use std::time::Duration;

use crate::config::Config;
use crate::error::BuildError;

/// Settings of [`super::install`] and [`super::ThumbnailList::new`]: the
/// pipeline's, and the UI side's own. A [`Config`] converts into it with
/// the UI side's defaults, so `install(ctx, Config::default())` works.
///
/// ```no_run
/// # fn setup(ctx: &egui::Context) -> Result<(), thumbpipe::BuildError> {
/// let mut config = thumbpipe::egui::EguiConfig::default();
/// config.pipeline.fetch.max_per_host = 8;
/// config.max_texture_bytes = 64 * 1024 * 1024;
/// thumbpipe::egui::install(ctx, config)?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct EguiConfig {
    /// The pipeline behind the front door.
    pub pipeline: Config,
    /// Budget of the UI side's textures: the sum of live textures' RGBA bytes.
    /// Past it, the least recently drawn textures are freed; their thumbnails
    /// stay in the cache and come back in the pass that asks for them. The
    /// textures drawn in one pass are never freed in that pass, so a screen
    /// that alone needs more than the budget goes over it rather than reloading
    /// images every frame. A texture is kept by recency alone:
    /// [`crate::CacheConfig::ttl`] applies to the cache behind it; forget an
    /// image to load it afresh. Keep the budget above a few screens of
    /// thumbnails. Default: 32 MiB (512 thumbnails of 128x128).
    pub max_texture_bytes: usize,
    /// Bytes of new textures the UI side uploads in one pass at most, so that a
    /// burst of finished loads never stalls a frame; the rest wait for the next
    /// pass, which is requested at once. One texture is always allowed per
    /// pass, however large, and so is one animation, all its frames
    /// together (4 MiB at most by default: `decode.max_animation_bytes`).
    /// Default: 4 MiB (64 thumbnails of 128x128; a 900x1000-point grid
    /// of 64-point photo cells, 144 of them, is 1.7 MB at one pixel a
    /// point), so that a first screen whose thumbnails are ready is drawn
    /// in one pass. Measured under Xvfb, that pass's UI-thread time was
    /// 1.5 ms. At two pixels a point the same screen is 7 MB: two passes.
    pub upload_bytes_per_pass: usize,
    /// Whether the UI side uses a coasting list's
    /// predicted resting place (given it each pass with `follow_coast`):
    /// while a kinetic scroll coasts, the rows where it will stop are
    /// requested first, at [`crate::Priority::Destination`], and rows it
    /// only flies past are not requested at all (see
    /// [`EguiConfig::coast_min_time_on_screen`]). Rows already decoded still
    /// draw at once. `false` loads every row that shows, as at rest.
    /// Default: `true`.
    pub coast_prediction: bool,
    /// While a list coasts, a row that will have left the screen within
    /// this time (from now, or from its request for a row already loading)
    /// is not requested: an image takes this long to arrive, so it would
    /// never be seen in that row. Default: `None`, the time images take to
    /// arrive now ([`crate::Stats::recent_load_micros`]: a round trip and a
    /// decode, without the wait in the queue), or 100 ms before the first
    /// has arrived.
    pub coast_min_time_on_screen: Option<Duration>,
}

impl Default for EguiConfig {
    fn default() -> Self {
        Config::default().into()
    }
}

impl From<Config> for EguiConfig {
    fn from(pipeline: Config) -> Self {
        Self {
            pipeline,
            max_texture_bytes: 32 * 1024 * 1024,
            upload_bytes_per_pass: 4 * 1024 * 1024,
            coast_prediction: true,
            coast_min_time_on_screen: None,
        }
    }
}

impl EguiConfig {
    /// Checks the UI side's settings; the pipeline checks its own.
    pub(crate) fn validate(&self) -> Result<(), BuildError> {
        crate::error::at_least_one(&[
            ("max_texture_bytes", self.max_texture_bytes as u64),
            ("upload_bytes_per_pass", self.upload_bytes_per_pass as u64),
        ])
    }
}
