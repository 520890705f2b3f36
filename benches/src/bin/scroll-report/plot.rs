//! `frame-times.png`: frame time over the flick for every mode.

use std::path::Path;

use anyhow::Context as _;

use crate::{Args, Column};

/// Frame time over the flick, one line per mode (each mode's first
/// refreshing run), on a log scale so that 0.3 ms and 300 ms both read.
pub(crate) fn plot_frame_times(path: &Path, columns: &[Column], args: &Args) -> anyhow::Result<()> {
    use plotters::prelude::*;

    plotters::style::register_font(
        "sans-serif",
        FontStyle::Normal,
        epaint_default_fonts::UBUNTU_LIGHT,
    )
    .map_err(|_| anyhow::anyhow!("cannot load the plot's font"))?;
    let series: Vec<(&str, &[f64])> = columns
        .iter()
        .filter_map(|c| c.runs.first().map(|r| (c.mode, r.frame_ms.as_slice())))
        .collect();
    let frames = series
        .iter()
        .map(|(_, s)| s.len())
        .max()
        .unwrap_or(1)
        .max(1);
    let highest = series
        .iter()
        .flat_map(|(_, s)| s.iter().copied())
        .fold(20.0_f64, f64::max);
    // Drawn into memory and encoded with the workspace's own `image`:
    // plotters' PNG encoder would build a second, older `image` crate.
    let (width, height) = (1200_u32, 600_u32);
    let mut pixels = vec![0_u8; width as usize * height as usize * 3];
    let root = BitMapBackend::with_buffer(&mut pixels, (width, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "UI frame time during the flick: {} rows, {} ms latency, refresh {} ms (headless)",
                args.flick.rows, args.flick.latency_ms, args.flick.refresh_ms
            ),
            ("sans-serif", 22),
        )
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0..frames, (0.05_f64..highest * 1.5).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("frame (60 Hz)")
        .y_desc("UI thread time per frame, ms (log)")
        .label_style(("sans-serif", 15))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    let budget = RGBColor(120, 120, 120);
    chart
        .draw_series(LineSeries::new(
            [(0, 16.7), (frames, 16.7)],
            budget.stroke_width(1),
        ))?
        .label("16.7 ms: one 60 Hz frame")
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], budget));
    let colours = [
        RGBColor(214, 69, 65),
        RGBColor(230, 145, 30),
        RGBColor(40, 160, 90),
        RGBColor(40, 110, 200),
    ];
    for ((mode, frame_ms), colour) in series.iter().zip(colours) {
        chart
            .draw_series(LineSeries::new(
                frame_ms.iter().enumerate().map(|(i, ms)| (i, ms.max(0.05))),
                colour.stroke_width(2),
            ))?
            .label(*mode)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 16))
        .draw()?;
    root.present()?;
    drop(chart);
    drop(root);
    image::RgbImage::from_raw(width, height, pixels)
        .context("the plot's buffer has the wrong size")?
        .save(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
