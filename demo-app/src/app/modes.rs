//! The modes the demo loads images in, and the layouts it shows them in:
//! the command line's choices and the top bar's switch. Plain data.

/// How the rows' images are loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    Naive,
    EguiExtras,
    /// `egui::Image::new(url)` through `thumbpipe::egui::install`.
    EguiImage,
    Pipeline,
}

impl Mode {
    pub const ALL: [Mode; 4] = [
        Mode::Naive,
        Mode::EguiExtras,
        Mode::EguiImage,
        Mode::Pipeline,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Naive => "naive",
            Mode::EguiExtras => "egui-extras",
            Mode::EguiImage => "egui-image",
            Mode::Pipeline => "pipeline",
        }
    }

    /// Whether the mode's loader can trust a certificate given to it: the
    /// embedded server's, with `--tls`.
    pub fn speaks_https(self) -> bool {
        matches!(self, Mode::EguiImage | Mode::Pipeline)
    }
}

/// How the images are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Layout {
    /// A row per image, its name and state beside it.
    List,
    /// A grid of cells, as many to a row as fit the window's width.
    Grid,
}
