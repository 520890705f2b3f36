//! The settings of [`super::Thumbnails`]: the pipeline's, and the budget
//! of the handles it keeps. Plain data, read once when it is built.

use crate::config::Config;

/// Settings of [`Thumbnails`](super::Thumbnails): the pipeline's, and the handles' budget. A
/// [`Config`] converts into it with the default budget.
///
/// ```
/// let mut config = thumbpipe::iced::IcedConfig::default();
/// config.pipeline.fetch.max_per_host = 8;
/// config.max_handle_bytes = 64 * 1024 * 1024;
/// let thumbnails = thumbpipe::iced::Thumbnails::<usize>::new(config)?;
/// # Ok::<(), thumbpipe::BuildError>(())
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct IcedConfig {
    /// The pipeline behind the handles.
    pub pipeline: Config,
    /// Budget of the handles kept: the sum of their RGBA bytes. Past it,
    /// the least recently shown are freed (their thumbnails stay in the
    /// pipeline's cache); the rows in view are never freed, so a screen
    /// that alone needs more goes over it. Default: 32 MiB (512
    /// thumbnails of 128x128).
    pub max_handle_bytes: usize,
}

impl Default for IcedConfig {
    fn default() -> Self {
        Config::default().into()
    }
}

impl From<Config> for IcedConfig {
    fn from(pipeline: Config) -> Self {
        Self {
            pipeline,
            max_handle_bytes: 32 * 1024 * 1024,
        }
    }
}
