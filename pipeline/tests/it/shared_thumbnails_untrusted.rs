//! Shared thumbnails are read only where the user alone may have put them,
//! as they are written: a valid thumbnail in a cache directory others may
//! write to, reached through a link, or owned by another user is passed
//! over, and the photo decoded instead.
//!
//! Regression: only writes checked the directories' owner and mode, so a
//! thumbnail planted by another user in a directory they could write to
//! (or link to) was shown as the photo's.

use std::path::Path;

use super::shared_thumbnails::{Folder, load, other_writer, stats_when};
use crate::common::id_of;
use thumbpipe::TargetSize;

/// Loads `photo` (picture `id`), whose cache holds a valid thumbnail of
/// another writer's that is not to be trusted: the photo is decoded.
fn passed_over(folder: &Folder, photo: &Path, id: u32) {
    let mut pipeline = folder.pipeline();
    let thumbnail = load(&mut pipeline, photo, TargetSize::square(64)).unwrap();
    assert_eq!(id_of(&thumbnail), Some(id), "the photo, not the thumbnail");
    let stats = stats_when(&pipeline, |s| s.decodes_started == 1);
    assert_eq!(stats.shared_thumbnails_used, 0);
}

#[cfg(unix)]
#[test]
fn thumbnails_where_others_may_write_are_not_read() {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = |path: &Path, mode| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    for (n, shared) in ["thumbnails", "normal"].into_iter().enumerate() {
        let folder = Folder::new(&format!("shared-writable-{n}"));
        let photo = folder.photo("p.jpg", 20);
        other_writer(&folder.cache(), &[], &[&photo]);
        let dir = match shared {
            "thumbnails" => folder.cache(),
            _ => folder.cache().join("normal"),
        };
        mode(&dir, 0o777);
        passed_over(&folder, &photo, 20);
        // The same thumbnail, once the directory is private, is used.
        mode(&dir, 0o700);
        let mut pipeline = folder.pipeline();
        let used = load(&mut pipeline, &photo, TargetSize::square(64)).unwrap();
        assert_eq!(used.pixels[..4], [255, 0, 255, 255], "{shared}");
    }
}

#[cfg(unix)]
#[test]
fn thumbnails_reached_through_a_link_are_not_read() {
    let folder = Folder::new("shared-linked");
    let photo = folder.photo("p.jpg", 21);
    // A valid thumbnail in a directory elsewhere, which `normal` links to.
    let elsewhere = folder.scratch.0.join("elsewhere");
    other_writer(&elsewhere, &[], &[&photo]);
    std::fs::create_dir_all(folder.cache()).unwrap();
    std::os::unix::fs::symlink(elsewhere.join("normal"), folder.cache().join("normal")).unwrap();
    passed_over(&folder, &photo, 21);
}

#[cfg(unix)]
#[test]
#[ignore = "needs root to give a file to another user; .ci/run runs it with --ignored"]
fn a_thumbnail_another_user_owns_is_not_read() {
    use std::os::unix::fs::MetadataExt as _;
    let folder = Folder::new("shared-foreign");
    let photo = folder.photo("p.jpg", 22);
    let written = other_writer(&folder.cache(), &[], &[&photo]);
    let thumbnail = Path::new(written.trim());
    // `nobody`, by number: every Unix has one.
    std::os::unix::fs::chown(thumbnail, Some(65534), Some(65534))
        .expect("this test runs as root (to give the thumbnail to another user)");
    assert_eq!(std::fs::metadata(thumbnail).unwrap().uid(), 65534);
    passed_over(&folder, &photo, 22);
}
