//! The SVG file of `backoff simulate --plot`: the write calls and the
//! completion time against the client count, one line per strategy, drawn
//! by the plotters crate.

use std::path::Path;

use plotters::prelude::*;

use crate::simulate::table::series;
use crate::simulate::{Cell, Setup, Strategy};

/// Colours of the strategies in the SVG.
fn colour(s: Strategy) -> RGBColor {
    match s {
        Strategy::None => RGBColor(0x88, 0x88, 0x88),
        Strategy::Exponential => RGBColor(0xd6, 0x27, 0x28),
        Strategy::Full => RGBColor(0x1f, 0x77, 0xb4),
        Strategy::Equal => RGBColor(0x2c, 0xa0, 0x2c),
        Strategy::Decorrelated => RGBColor(0xff, 0x7f, 0x0e),
        Strategy::Policy => RGBColor(0x94, 0x67, 0xbd),
    }
}

/// Draws both charts (calls and completion time against clients, a line
/// per strategy, with a legend) into an SVG file.
///
/// # Errors
///
/// When the file cannot be written.
pub fn svg(setup: &Setup, cells: &[Cell], path: &Path) -> Result<(), String> {
    let root = SVGBackend::new(path, (1200, 520)).into_drawing_area();
    let draw = || -> Result<(), Box<dyn std::error::Error>> {
        root.fill(&WHITE)?;
        let (left, right) = root.split_horizontally(600);
        let max_x = setup.clients.iter().copied().max().unwrap_or(1);
        let min_x = setup.clients.iter().copied().min().unwrap_or(0);
        for (area, title, y_label, value) in [
            (
                &left,
                "Work: write calls",
                "calls",
                (|c: &Cell| c.calls.mean) as fn(&Cell) -> f64,
            ),
            (&right, "Completion time", "time (ms)", |c: &Cell| {
                c.time_ms.mean
            }),
        ] {
            let max_y = cells.iter().map(value).fold(0.0_f64, f64::max) * 1.05 + 1.0;
            let mut chart = ChartBuilder::on(area)
                .caption(title, ("sans-serif", 22))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(70)
                .build_cartesian_2d(min_x..max_x, 0.0..max_y)?;
            chart
                .configure_mesh()
                .x_desc("clients")
                .y_desc(y_label)
                .draw()?;
            for &s in &setup.strategies {
                let points: Vec<(u32, f64)> = series(cells, s)
                    .iter()
                    .map(|c| (c.clients, value(c)))
                    .collect();
                let style = colour(s).stroke_width(2);
                chart
                    .draw_series(LineSeries::new(points.clone(), style))?
                    .label(s.name())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], colour(s).stroke_width(2))
                    });
                chart.draw_series(
                    points
                        .iter()
                        .map(|&(x, y)| Circle::new((x, y), 3, colour(s).filled())),
                )?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()?;
        }
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| e.to_string())
}
