//! Shared thumbnails: the desktop's cache of thumbnails of local files, as
//! the freedesktop.org Thumbnail Managing Standard 0.9 lays it out
//! (`$XDG_CACHE_HOME/thumbnails`: `normal/` 128 px, `large/` 256,
//! `x-large/` 512, `xx-large/` 1024, `fail/`), read and written, so that a
//! folder a file manager has shown loads without reading or decoding its
//! photos, and what thumbpipe decodes is shared back.
//!
//! Owns the settings ([`SharedThumbnailsConfig`], `config.rs`) and the
//! load actor's thumbnail tier for `file://` URLs (`tier.rs`); the names are
//! `names.rs`, the PNG files `png_text.rs`. The tier's blocking work (a
//! look-up: the photo's `stat`, the thumbnail's read and its small decode;
//! a write) runs on the file threads
//! ([`FetchConfig::file_readers`](crate::FetchConfig::file_readers)), a
//! thumbnail's PNG encoding on the decode thread that made it. It lives as
//! long as the pipeline; a write under way when it ends finishes or is
//! dropped with the file threads.

use std::sync::Arc;

use crate::config::Config;
use crate::error::BuildError;
use crate::load::tier::ThumbnailTier;
use crate::local_files::LocalFiles;
use crate::metrics::Metrics;

#[cfg(feature = "shared-thumbnails")]
mod cache_files;
pub(crate) mod config;
#[cfg(feature = "shared-thumbnails")]
mod names;
#[cfg(feature = "shared-thumbnails")]
mod png_text;
#[cfg(feature = "shared-thumbnails")]
mod tier;

pub use config::{SharedThumbnailsConfig, ThumbnailStore};
#[cfg(feature = "shared-thumbnails")]
pub(crate) use tier::SharedThumbnails;

/// The shared thumbnails as the load actor's tier, when there are local
/// files (`local_files`, the `file` source's) and `config` reads or writes
/// thumbnails of them (writes only with the default decoder, whose
/// thumbnails they are).
pub(crate) fn tier(
    config: &Config,
    local_files: Option<Arc<LocalFiles>>,
    metrics: &Arc<Metrics>,
    default_decoder: bool,
) -> Result<Option<Arc<dyn ThumbnailTier>>, BuildError> {
    let read = config.shared_thumbnails.read.dir();
    let write = config
        .shared_thumbnails
        .write
        .dir()
        .filter(|_| default_decoder);
    let Some(files) = local_files else {
        return Ok(None);
    };
    if read.is_none() && write.is_none() {
        return Ok(None);
    }
    #[cfg(feature = "shared-thumbnails")]
    {
        let tier = SharedThumbnails::new(
            read,
            write,
            files,
            (&config.decode).into(),
            Arc::clone(metrics),
            config.shared_thumbnails.compress_writes,
        );
        Ok(Some(Arc::new(tier)))
    }
    #[cfg(not(feature = "shared-thumbnails"))]
    {
        let _ = (files, metrics);
        Ok(None)
    }
}
