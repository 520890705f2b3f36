//! With the `heic` feature, finds libheif (1.15 or later) by pkg-config
//! and links it; otherwise does nothing. On docs.rs, which only documents
//! the crate and links nothing, the library is not looked for.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=DOCS_RS");
    #[cfg(feature = "heic")]
    if std::env::var_os("DOCS_RS").is_none()
        && let Err(error) = pkg_config::Config::new()
            .atleast_version("1.15")
            .probe("libheif")
    {
        // Stops the build with what to install, rather than a link error.
        panic!(
            "thumbpipe's `heic` feature needs libheif 1.15 or later and its headers \
             (Debian and Ubuntu: libheif-dev; Fedora: libheif-devel; Homebrew: libheif), \
             found by pkg-config: {error}"
        );
    }
}
