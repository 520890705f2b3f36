//! The URI loader: egui's texture and image loader traits, answered by a
//! [`Front`] whose row key is the URI and its size, so that after
//! [`install`] a plain `egui::Image::new(url)` loads through thumbpipe.
//!
//! Registered in the egui context by [`install`] and called by egui on the
//! UI thread; its state sits behind one mutex that only the UI thread takes.
//! It lives as long as the context holds it: [`Loader::uninstall`] removes
//! it and stops its pipeline's threads.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use ::egui::load::{
    ImageLoadResult, ImageLoader, ImagePoll, LoadError, SizeHint, TextureLoadResult, TextureLoader,
    TexturePoll,
};
use ::egui::{ColorImage, Context, TextureOptions, Vec2};

use super::EguiConfig;
use super::front::{Front, Look};
use super::size::{Cell, max_texture_side, target_for_hint};
use super::textures::{TextureStats, color_image};
use crate::coast::{CoastModel, CoastPrediction};
use crate::error::BuildError;
use crate::metrics::Stats;
use crate::pipeline::{Pipeline, PipelineBuilder};
use crate::request::Schemes;
use crate::request::TargetSize;
use crate::thumbnail::Thumbnail;

/// The id under which the loaders are registered (both kinds).
const LOADER_ID: &str = ::egui::generate_loader_id!(UriLoader);

/// A URI loader's row: the URI at one size. Two images of the same URI at
/// different sizes are two rows, and a URI asked for at no size during a
/// pass is cancelled at its end.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct UriKey {
    uri: Arc<str>,
    target: TargetSize,
}

pub(crate) struct UriLoader {
    /// `None` once uninstalled.
    front: Mutex<Option<Front<UriKey>>>,
    /// The schemes the pipeline has a source for: its URIs are these.
    schemes: Schemes,
}

impl UriLoader {
    fn front(&self) -> MutexGuard<'_, Option<Front<UriKey>>> {
        // A panic while held leaves plain data behind: go on with it.
        self.front.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The front, for a URI that is thumbpipe's; `NotSupported` sends
    /// others on to egui's other loaders.
    fn front_for(&self, uri: &str) -> Result<MutexGuard<'_, Option<Front<UriKey>>>, LoadError> {
        if self.takes(uri) {
            Ok(self.front())
        } else {
            Err(LoadError::NotSupported)
        }
    }

    /// The URIs of a scheme with a source (http(s), file when allowed, an
    /// app's own) are thumbpipe's; SVGs too when it draws them (cargo
    /// feature `svg`), else they are left to egui's SVG loader.
    fn takes(&self, uri: &str) -> bool {
        self.schemes.takes(uri)
            && (cfg!(feature = "svg") || !::egui::load::has_extension(uri, "svg"))
    }

    fn key(uri: &str, target: TargetSize) -> UriKey {
        UriKey {
            uri: Arc::from(uri),
            target,
        }
    }
}

impl TextureLoader for UriLoader {
    fn id(&self) -> &str {
        LOADER_ID
    }

    fn load(
        &self,
        ctx: &Context,
        uri: &str,
        texture_options: TextureOptions,
        size_hint: SizeHint,
    ) -> TextureLoadResult {
        let mut front = self.front_for(uri)?;
        let Some(front) = front.as_mut() else {
            return Err(LoadError::NotSupported);
        };
        let uri = without_fragment(uri);
        let target = target_for_hint(size_hint, || front.largest_side(ctx));
        match front.show(ctx, Self::key(uri, target), uri, target, texture_options) {
            Look::Texture(mut texture, thumbnail) => {
                // egui's convention: a texture's size is the image's own
                // (an SVG's in its units), which `fit_to_original_size`
                // draws in points; other fits take its aspect ratio.
                let (width, height) = thumbnail.display_size();
                texture.size = Vec2::new(width as f32, height as f32);
                Ok(TexturePoll::Ready { texture })
            }
            // egui draws its spinner for both.
            Look::Pending | Look::Passing => Ok(TexturePoll::Pending { size: None }),
            Look::Failed(error) => Err(LoadError::Loading(error.to_string())),
        }
    }

    fn forget(&self, uri: &str) {
        if let Some(front) = self.front().as_mut() {
            front.forget(without_fragment(uri));
        }
    }

    fn forget_all(&self) {
        if let Some(front) = self.front().as_mut() {
            front.forget_all();
        }
    }

    fn end_pass(&self, _pass_index: u64) {
        if let Some(front) = self.front().as_mut() {
            front.end_pass();
        }
    }

    fn byte_size(&self) -> usize {
        self.front()
            .as_ref()
            .map_or(0, |front| front.texture_stats().bytes)
    }
}

/// `ctx.try_load_image(url)`: the thumbnail's pixels, for an app that reads
/// them. Images drawn by egui go through the texture loader above and never
/// come here.
impl ImageLoader for UriLoader {
    fn id(&self) -> &str {
        LOADER_ID
    }

    fn load(&self, ctx: &Context, uri: &str, size_hint: SizeHint) -> ImageLoadResult {
        let mut front = self.front_for(uri)?;
        let Some(front) = front.as_mut() else {
            return Err(LoadError::NotSupported);
        };
        let uri = without_fragment(uri);
        let target = target_for_hint(size_hint, || front.largest_side(ctx));
        match front.pixels(ctx, Self::key(uri, target), uri, target) {
            Ok(Some(thumbnail)) => {
                let image: ColorImage =
                    color_image(&thumbnail, max_texture_side(ctx)).map_err(LoadError::Loading)?;
                Ok(ImagePoll::Ready {
                    image: Arc::new(image),
                })
            }
            Ok(None) => Ok(ImagePoll::Pending { size: None }),
            Err(error) => Err(LoadError::Loading(error.to_string())),
        }
    }

    // Forgetting and the end of a pass are the texture loader's calls
    // above: both kinds share one front, and egui calls each kind.
    fn forget(&self, _uri: &str) {}

    fn forget_all(&self) {}

    fn byte_size(&self) -> usize {
        self.front().as_ref().map_or(0, Front::pixel_bytes)
    }

    fn has_pending(&self) -> bool {
        self.front().as_ref().is_some_and(Front::has_pending)
    }
}

/// The URI without its `#fragment`: egui asks for frame N of a `.gif` or
/// `.webp` as `uri#N`, and thumbpipe loads the URL itself (and picks the
/// frame of an animation it plays by the time), so that forgetting,
/// prefetching and drawing the URL all meet.
fn without_fragment(uri: &str) -> &str {
    uri.split('#').next().unwrap_or(uri)
}

/// Makes thumbpipe egui's loader for `http://` and `https://` image URIs (and
/// `file://` ones under
/// [`FetchConfig::file_roots`](crate::FetchConfig::file_roots), and those of
/// the schemes a builder's [`source`](PipelineBuilder::source) adds, with
/// [`install_with`]): after it, every
/// `egui::Image::new(url)`, `ui.image(url)` and `Image::from_uri(url)` is
/// fetched, decoded to the size it is drawn at, cached and cancelled by
/// thumbpipe. Other URIs (`bytes://`, SVGs from `include_image!`, ...) still go
/// to egui's other loaders.
///
/// - The size an image is drawn at, in physical pixels, rounded up to a few
///   steps, is the thumbnail's size and part of every cache key.
/// - A URI not drawn during a pass is cancelled at the end of that pass: a
///   list row that scrolled away stops its download, and a row whose URL
///   changed can never draw its old image.
/// - An image already decoded is drawn in the pass that asks for it, and new
///   textures are uploaded under [`EguiConfig::upload_bytes_per_pass`] per pass
///   and kept under [`EguiConfig::max_texture_bytes`].
/// - A failed load is drawn as egui's error (`LoadError::Loading` with
///   thumbpipe's message) and not retried while it stays in view.
/// - An image drawn at its own size
///   ([`Image::fit_to_original_size`](::egui::Image::fit_to_original_size),
///   or with no bound on either side) is loaded at its own size times the scale egui asks for (an SVG drawn
///   larger on a dense screen, a raster image only ever smaller), inside
///   the GPU's largest texture side and the largest square the texture
///   budget holds (2896 pixels at the default 32 MiB). Every texture tells
///   egui the image's own size ([`Thumbnail::source_size`](crate::Thumbnail::source_size)),
///   as egui's loaders do.
/// - GIFs and animated WebPs are drawn as their first frame, or played
///   with [`DecodeConfig::animation`](crate::DecodeConfig::animation): a
///   texture a frame, the frame of the moment drawn, and a repaint asked
///   for when the next is due while the image is laid out. SVGs are drawn
///   at the size of their box, sharp at every `pixels_per_point` (cargo
///   feature `svg`, off by default; without it, `.svg` URIs are left to
///   egui's SVG loader).
/// - Draw these images in the root viewport: egui ends every viewport's
///   pass on the loaders, and an image drawn only in another viewport is
///   cancelled at the end of the root's pass.
///
/// Call it once per context; a second call is [`BuildError::AlreadyInstalled`].
///
/// ```no_run
/// fn setup(ctx: &egui::Context) -> Result<thumbpipe::egui::Loader, thumbpipe::BuildError> {
///     thumbpipe::egui::install(ctx, thumbpipe::Config::default())
/// }
///
/// fn row(ui: &mut egui::Ui, url: &str) {
///     ui.add(egui::Image::new(url).fit_to_exact_size(egui::vec2(64.0, 64.0)));
/// }
/// ```
pub fn install(ctx: &Context, config: impl Into<EguiConfig>) -> Result<Loader, BuildError> {
    install_with(ctx, config, Pipeline::<()>::builder())
}

/// [`install`], with the pipeline built by `builder`: a fetcher, decoder
/// or tokio runtime of the app's own (an API client that signs requests, a
/// decoder for another format, the runtime the app already runs).
///
/// The settings are `config`'s: its `pipeline` is the pipeline's
/// [`Config`](crate::Config), and replaces one given to
/// [`PipelineBuilder::config`]. With
/// [`DiskConfig::dir`](crate::DiskConfig::dir) set, the disk cache is a layer
/// in front of the builder's fetcher.
///
/// ```no_run
/// use thumbpipe::Pipeline;
///
/// /// Images from the app's own store (an archive, a database) by URL.
/// fn stored_image(url: &url::Url) -> Result<bytes::Bytes, thumbpipe::Error> {
///     # let _ = url; unimplemented!()
/// }
///
/// fn setup(ctx: &egui::Context) -> Result<thumbpipe::egui::Loader, thumbpipe::BuildError> {
///     let builder = Pipeline::<()>::builder()
///         .fetcher(thumbpipe::fetch_fn(|url, _max_bytes| async move { stored_image(&url) }));
///     thumbpipe::egui::install_with(ctx, thumbpipe::Config::default(), builder)
/// }
/// ```
pub fn install_with<K>(
    ctx: &Context,
    config: impl Into<EguiConfig>,
    builder: PipelineBuilder<K>,
) -> Result<Loader, BuildError> {
    if ctx.is_loader_installed(LOADER_ID) {
        return Err(BuildError::AlreadyInstalled);
    }
    let config = config.into();
    let front = Front::new(ctx, config, builder.for_rows())?;
    let loader = Arc::new(UriLoader {
        schemes: front.pipeline().scheme_set().clone(),
        front: Mutex::new(Some(front)),
    });
    ctx.add_texture_loader(Arc::clone(&loader) as _);
    ctx.add_image_loader(Arc::clone(&loader) as _);
    Ok(Loader {
        ctx: ctx.clone(),
        loader,
    })
}

/// The handle [`install`] returns: stats, prefetching, and uninstalling.
///
/// The loaders themselves live in the context, so dropping this handle
/// changes nothing; they (and the pipeline's threads) live until
/// [`Loader::uninstall`], or as long as the process: the loaders hold the
/// context to wake it, so a context dropped without `uninstall` keeps them.
/// Use the handle on the UI thread, where the context's passes run.
#[derive(Clone)]
pub struct Loader {
    ctx: Context,
    loader: Arc<UriLoader>,
}

impl Loader {
    /// Asks for `uri`'s thumbnail, for an image to be drawn in `cell` (a
    /// size in points, or a [`Cell`] it fills), ahead of need, at [`crate::Priority::Prefetch`]. Call it every
    /// pass for the rows just outside the view (see [`super::PrefetchWindow`]):
    /// a prefetch not repeated in a pass is cancelled at its end, like an
    /// image no longer drawn. A URI drawn this pass keeps its priority.
    ///
    /// ```no_run
    /// # fn f(ui: &mut egui::Ui, loader: &thumbpipe::egui::Loader) {
    /// let size = egui::vec2(64.0, 64.0);
    /// loader.prefetch("https://example.com/next.jpg", size);
    /// ui.add(egui::Image::new("https://example.com/this.jpg").fit_to_exact_size(size));
    /// # }
    /// ```
    pub fn prefetch(&self, uri: &str, cell: impl Into<Cell>) {
        let uri = without_fragment(uri);
        // egui's state is read before the loader's lock is taken: egui ends
        // a pass holding its own lock while it takes the loader's, so the
        // loader's lock must never wait for egui's from another thread.
        let target = cell.into().target(self.ctx.pixels_per_point());
        let pass = self.ctx.cumulative_pass_nr();
        if let Some(front) = self.loader.front().as_mut() {
            front.prefetch(pass, UriLoader::key(uri, target), uri, target);
        }
    }

    /// Follows a kinetic coast for this pass, for images drawn in `cell` (a
    /// size in points, or a [`Cell`] they fill: a photo grid's); call it before the rows are drawn, with
    /// [`super::CoastWatch::predict`]'s prediction (`None` at rest does
    /// nothing). The URIs of the rows where the list will rest (and the one
    /// more egui draws) are loaded at [`crate::Priority::Destination`], ahead
    /// of every other image; a visible row's image that would arrive after the
    /// row has left ([`EguiConfig::coast_min_time_on_screen`]) is drawn if
    /// decoded already and otherwise stays pending without being requested (a
    /// request it had is cancelled at the pass's end). [`Loader::prefetch`]
    /// asks for nothing during the coast. `uri_of` gives the URI of a row by
    /// its index in the list (in a grid watched with
    /// [`super::CoastWatch::observe_grid`], of a cell, numbered row by row);
    /// it runs under the loader's lock, so it must not call the `Loader`
    /// itself. Nothing changes with
    /// [`EguiConfig::coast_prediction`] off.
    ///
    /// ```no_run
    /// # fn f(ui: &mut egui::Ui, loader: &thumbpipe::egui::Loader, watch: &mut thumbpipe::egui::CoastWatch, urls: &[String]) {
    /// let size = egui::vec2(64.0, 64.0);
    /// loader.follow_coast(watch.predict(ui.ctx()).as_ref(), size, |index| urls[index].as_str());
    /// let output = egui::ScrollArea::vertical().show_rows(ui, 72.0, urls.len(), |ui, rows| {
    ///     for row in rows {
    ///         ui.add(egui::Image::new(&urls[row]).fit_to_exact_size(size));
    ///     }
    /// });
    /// watch.observe(ui, &output, 72.0, urls.len());
    /// # }
    /// ```
    pub fn follow_coast<M: CoastModel, S: AsRef<str>>(
        &self,
        coast: Option<&CoastPrediction<M>>,
        cell: impl Into<Cell>,
        mut uri_of: impl FnMut(usize) -> S,
    ) {
        let Some(coast) = coast else { return };
        // egui's state first, then the loader's lock (see `prefetch`).
        let target = cell.into().target(self.ctx.pixels_per_point());
        let pass = self.ctx.cumulative_pass_nr();
        if let Some(front) = self.loader.front().as_mut() {
            front.follow_coast(pass, coast, target, |row| {
                let key = UriLoader::key(without_fragment(uri_of(row).as_ref()), target);
                let uri = Arc::clone(&key.uri);
                (key, uri)
            });
        }
    }

    /// The thumbnail whose texture is drawn for `uri` in `cell` (a size in
    /// points, or a [`Cell`] it fills): what the image shows, as pixels.
    pub fn drawn(&self, uri: &str, cell: impl Into<Cell>) -> Option<Thumbnail> {
        let uri = without_fragment(uri);
        let target = cell.into().target(self.ctx.pixels_per_point());
        self.loader
            .front()
            .as_ref()
            .and_then(|front| front.drawn(uri, target).cloned())
    }

    /// The pipeline's counters and gauges now; zeros once uninstalled.
    pub fn stats(&self) -> Stats {
        self.loader
            .front()
            .as_ref()
            .map(Front::stats)
            .unwrap_or_default()
    }

    /// The textures' counters now.
    pub fn texture_stats(&self) -> TextureStats {
        self.loader
            .front()
            .as_ref()
            .map(Front::texture_stats)
            .unwrap_or_default()
    }

    /// Forgets every image at every level (textures, cache, loads), as
    /// `ctx.forget_all_images()` does.
    pub fn clear(&self) {
        if let Some(front) = self.loader.front().as_mut() {
            front.forget_all();
        }
    }

    /// Removes the loaders from the context, cancels every load, frees the
    /// textures and joins the pipeline's threads. Images drawn after it go
    /// to egui's other loaders.
    pub fn uninstall(self) {
        let loaders = self.ctx.loaders();
        loaders
            .texture
            .lock()
            .retain(|loader| loader.id() != LOADER_ID);
        loaders
            .image
            .lock()
            .retain(|loader| loader.id() != LOADER_ID);
        let front = self.loader.front().take();
        drop(front);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_animated_images_frame_uri_is_its_url() {
        assert_eq!(without_fragment("https://x/a.gif#0"), "https://x/a.gif");
        assert_eq!(without_fragment("https://x/a.jpg"), "https://x/a.jpg");
    }
}
