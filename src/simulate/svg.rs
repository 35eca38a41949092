//! The SVG charts of `backoff simulate`, drawn by the plotters crate: for
//! the contention model the write calls and the completion time against the
//! client count; for the overload model the offered load and the goodput
//! against time. One line per strategy.

use std::path::Path;

use plotters::prelude::*;

use crate::simulate::overload::{self, Outcome};
use crate::simulate::table::{per_second, series};
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

/// Colours of the overload strategies.
fn overload_colour(s: overload::Strategy) -> RGBColor {
    use overload::Strategy as S;
    match s {
        S::None => RGBColor(0x88, 0x88, 0x88),
        S::Immediate => RGBColor(0x8c, 0x56, 0x4b),
        S::Exponential => RGBColor(0xd6, 0x27, 0x28),
        S::Full => RGBColor(0x1f, 0x77, 0xb4),
        S::Equal => RGBColor(0x2c, 0xa0, 0x2c),
        S::Decorrelated => RGBColor(0xff, 0x7f, 0x0e),
        S::FullBudget => RGBColor(0x94, 0x67, 0xbd),
        S::FullBreaker => RGBColor(0x17, 0xbe, 0xcf),
    }
}

/// Ticks per point of the overload charts (a tenth of a second).
const BIN: usize = 10;

/// The overload model's chart as an SVG document: offered load (attempts
/// sent a second) above, goodput (requests that succeeded a second) below,
/// against time, one line per strategy, the outage shaded.
///
/// # Errors
///
/// When plotters fails to draw.
pub fn overload_svg(setup: &overload::Setup, outcomes: &[Outcome]) -> Result<String, String> {
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (1000, 760)).into_drawing_area();
        let draw = || -> Result<(), Box<dyn std::error::Error>> {
            root.fill(&WHITE)?;
            let (top, bottom) = root.split_vertically(380);
            let horizon = setup.horizon.as_secs_f64();
            let (start, end) = setup.window();
            #[allow(clippy::cast_precision_loss)]
            let shade = (
                start as f64 / overload::TICKS_PER_S as f64,
                end as f64 / overload::TICKS_PER_S as f64,
            );
            for (area, title, y_label, pick) in [
                (
                    &top,
                    "Offered load: attempts sent",
                    "attempts/s",
                    (|o: &Outcome| &o.sent) as fn(&Outcome) -> &Vec<u32>,
                ),
                (
                    &bottom,
                    "Goodput: requests that succeeded",
                    "requests/s",
                    |o| &o.good,
                ),
            ] {
                let series: Vec<(overload::Strategy, Vec<f64>)> = outcomes
                    .iter()
                    .map(|o| (o.strategy, per_second(pick(o), BIN)))
                    .collect();
                let max_y = series
                    .iter()
                    .flat_map(|(_, v)| v.iter().copied())
                    .fold(setup.capacity, f64::max)
                    * 1.05;
                let mut chart = ChartBuilder::on(area)
                    .caption(title, ("sans-serif", 20))
                    .margin(12)
                    .x_label_area_size(36)
                    .y_label_area_size(70)
                    .build_cartesian_2d(0.0..horizon, 0.0..max_y)?;
                chart
                    .configure_mesh()
                    .x_desc("time (s)")
                    .y_desc(y_label)
                    .draw()?;
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(shade.0, 0.0), (shade.1, max_y)],
                    RGBColor(0xd0, 0xd0, 0xd0).mix(0.5).filled(),
                )))?;
                for (s, values) in series {
                    #[allow(clippy::cast_precision_loss)]
                    let points = values
                        .iter()
                        .enumerate()
                        .map(|(i, &y)| ((i * BIN) as f64 / overload::TICKS_PER_S as f64, y));
                    chart
                        .draw_series(LineSeries::new(points, overload_colour(s).stroke_width(2)))?
                        .label(s.name())
                        .legend(move |(x, y)| {
                            PathElement::new(
                                vec![(x, y), (x + 20, y)],
                                overload_colour(s).stroke_width(2),
                            )
                        });
                }
                chart
                    .configure_series_labels()
                    .position(SeriesLabelPosition::UpperRight)
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK)
                    .draw()?;
            }
            root.present()?;
            Ok(())
        };
        draw().map_err(|e| e.to_string())?;
    }
    Ok(text)
}
