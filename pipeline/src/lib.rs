//! thumbpipe loads thumbnails for GUI lists: async HTTP fetch, decode and
//! downscale on a bounded pool, an actor-owned memory cache, and
//! cancellation tied to list-row identity.
//!
//! The pipeline's stages are described in the workspace's `README.md`.

#![warn(missing_docs)]
