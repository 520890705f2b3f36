//! Sources: the user's images the rows show instead of the fixture
//! server's, from a file of URLs (`--urls`) or a folder (`--folder`).
//! Read once, at start, on the main thread.

use anyhow::{Context as _, bail};

/// The `file://` URLs of the images under `dir` (by extension, in every
/// subdirectory, links not followed), sorted by path.
pub fn folder_urls(dir: &std::path::Path) -> anyhow::Result<Vec<String>> {
    // What a photo folder holds, whether or not this build decodes it: a
    // format whose feature is off shows its cell's error, which names it.
    const IMAGES: &[&str] = &[
        "jpg", "jpeg", "png", "webp", "gif", "bmp", "ico", "tif", "tiff", "svg", "avif", "jxl",
        "qoi", "heic", "heif", "hif", "cr2", "cr3", "nef", "nrw", "arw", "dng", "orf", "rw2",
        "raf", "pef", "srw",
    ];
    let dir = dir
        .canonicalize()
        .with_context(|| format!("cannot open the folder {}", dir.display()))?;
    let mut paths = Vec::new();
    let mut pending = vec![dir.clone()];
    while let Some(next) = pending.pop() {
        let entries =
            std::fs::read_dir(&next).with_context(|| format!("cannot list {}", next.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => pending.push(path),
                Ok(kind) if kind.is_file() => {
                    let extension = path.extension().and_then(|e| e.to_str());
                    if extension.is_some_and(|e| IMAGES.contains(&e.to_ascii_lowercase().as_str()))
                    {
                        paths.push(path);
                    }
                }
                _ => {}
            }
        }
    }
    if paths.is_empty() {
        bail!("no images (.jpg, .png, .webp, ...) under {}", dir.display());
    }
    paths.sort();
    Ok(paths
        .iter()
        .filter_map(|path| url::Url::from_file_path(path).ok())
        .map(String::from)
        .collect())
}

/// The image URLs in `path`, one per line; blank lines and lines starting
/// with `#` are skipped.
pub fn read_urls(path: &std::path::Path) -> anyhow::Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the URL list {}", path.display()))?;
    let urls: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect();
    if urls.is_empty() {
        bail!(
            "{} has no URLs: write one image URL per line",
            path.display()
        );
    }
    Ok(urls)
}
