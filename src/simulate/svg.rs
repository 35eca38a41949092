//! The SVG charts of `backoff simulate`, drawn by the plotters crate: for
//! the contention model the write calls and the completion time against the
//! client count, one line per strategy, each with a colour, dashes and marks
//! of its own, the legend below the charts; for the overload model the
//! offered load and the goodput against time, one row of small charts per
//! strategy, each column on one scale; for the cron model the same rows, of
//! the requests a second to the service and to the store. No legend or
//! label is drawn over the data, and a tick label has no needless `.0`.

use std::ops::Range;

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::simulate::cron;
use crate::simulate::overload::{self, Outcome};
use crate::simulate::table::{per_second, series};
use crate::simulate::{Cell, Setup, Strategy};

/// A rectangle of pixels: `left..right` across, `top..bottom` down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rect {
    left: i32,
    top: i32,
    right: i32,
    bottom: i32,
}

impl Rect {
    /// The rectangle of a chart's plotting area, as plotters gives it.
    fn of_ranges((x, y): (Range<i32>, Range<i32>)) -> Rect {
        Rect {
            left: x.start,
            top: y.start,
            right: x.end,
            bottom: y.end,
        }
    }

    /// The rectangle of a text `size` pixels high, starting at `x` across
    /// and centred on `y`.
    fn of_text(text: &str, size: i32, x: i32, y: i32) -> Rect {
        Rect {
            left: x,
            top: y - size / 2 - 1,
            right: x + text_width(text, size),
            bottom: y + size / 2 + 1,
        }
    }

    /// Whether the two rectangles share a pixel.
    #[cfg(test)]
    fn intersects(self, other: Rect) -> bool {
        self.left < other.right
            && other.left < self.right
            && self.top < other.bottom
            && other.top < self.bottom
    }
}

/// Where a drawing put its data (the plotting areas) and the text that
/// names its lines (the legend's entries, or the rows' names), for the
/// tests to check that none covers another.
#[derive(Debug, Default)]
struct Frames {
    plots: Vec<Rect>,
    keys: Vec<Rect>,
}

/// A tick label: the value as one writes it, with no needless `.0` (`10`,
/// but `2.5`).
pub fn tick(value: f64) -> String {
    let text = format!("{value:.6}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".to_owned()
    } else {
        text.to_owned()
    }
}

/// The width of a text in sans-serif of `size` pixels, a little more than
/// most fonts take.
fn text_width(text: &str, size: i32) -> i32 {
    let chars = i32::try_from(text.chars().count()).unwrap_or(i32::MAX / 64);
    chars.saturating_mul(size).saturating_mul(5) / 8
}

/// The mark drawn at each point of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    Circle,
    Square,
    Triangle,
    Diamond,
    Cross,
    Plus,
}

/// How a contention strategy's line is drawn: its colour, its dashes (the
/// length of a dash and of a gap, in pixels; `None` for a solid line) and
/// its mark. No two strategies share any of the three, so that where lines
/// run together each shows through the other's gaps.
fn look(s: Strategy) -> (RGBColor, Option<(u32, u32)>, Mark) {
    match s {
        Strategy::None => (RGBColor(0x88, 0x88, 0x88), None, Mark::Circle),
        Strategy::Exponential => (RGBColor(0xd6, 0x27, 0x28), Some((16, 6)), Mark::Square),
        Strategy::Full => (RGBColor(0x1f, 0x77, 0xb4), Some((8, 4)), Mark::Triangle),
        Strategy::Equal => (RGBColor(0x2c, 0xa0, 0x2c), Some((2, 4)), Mark::Diamond),
        Strategy::Decorrelated => (RGBColor(0xff, 0x7f, 0x0e), Some((12, 4)), Mark::Cross),
        Strategy::Policy => (RGBColor(0x94, 0x67, 0xbd), Some((4, 8)), Mark::Plus),
    }
}

/// The error of a drawing.
type Failed = Box<dyn std::error::Error>;

/// Draws a line through `points` (in pixels), solid or dashed.
fn line<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    points: Vec<(i32, i32)>,
    colour: RGBColor,
    dashes: Option<(u32, u32)>,
) -> Result<(), Failed>
where
    DB::ErrorType: 'static,
{
    let style = colour.stroke_width(2);
    match dashes {
        None => area.draw(&PathElement::new(points, style))?,
        Some((dash, gap)) => area.draw(&DashedPathElement::new(points, dash, gap, style))?,
    }
    Ok(())
}

/// Draws a mark, hollow so that marks on one spot all show, centred on
/// `(x, y)` (in pixels).
fn mark<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    kind: Mark,
    (x, y): (i32, i32),
    colour: RGBColor,
) -> Result<(), Failed>
where
    DB::ErrorType: 'static,
{
    let style = colour.stroke_width(2);
    let r = 4;
    match kind {
        Mark::Circle => area.draw(&Circle::new((x, y), r, style))?,
        Mark::Square => area.draw(&Rectangle::new([(x - r, y - r), (x + r, y + r)], style))?,
        Mark::Triangle => area.draw(&PathElement::new(
            vec![
                (x, y - r - 1),
                (x + r + 1, y + r),
                (x - r - 1, y + r),
                (x, y - r - 1),
            ],
            style,
        ))?,
        Mark::Diamond => area.draw(&PathElement::new(
            vec![
                (x, y - r - 1),
                (x + r + 1, y),
                (x, y + r + 1),
                (x - r - 1, y),
                (x, y - r - 1),
            ],
            style,
        ))?,
        Mark::Cross => {
            area.draw(&PathElement::new(
                vec![(x - r, y - r), (x + r, y + r)],
                style,
            ))?;
            area.draw(&PathElement::new(
                vec![(x - r, y + r), (x + r, y - r)],
                style,
            ))?;
        }
        Mark::Plus => {
            area.draw(&PathElement::new(
                vec![(x - r - 1, y), (x + r + 1, y)],
                style,
            ))?;
            area.draw(&PathElement::new(
                vec![(x, y - r - 1), (x, y + r + 1)],
                style,
            ))?;
        }
    }
    Ok(())
}

/// The legend's font size, row height, margin and the length of a line's
/// sample, in pixels.
const LEGEND_FONT: i32 = 15;
const LEGEND_ROW: i32 = 26;
const LEGEND_PAD: i32 = 12;
const SAMPLE: i32 = 44;

/// The width of a legend entry: the sample, the name, and the space before
/// the next entry.
fn entry_width(name: &str) -> i32 {
    SAMPLE + 8 + text_width(name, LEGEND_FONT) + 22
}

/// Where the legend's entries go in a legend `width` wide: each entry's
/// left edge and the middle of its row, from the legend's top left, in
/// centred rows that wrap; and the legend's height.
fn legend_layout(names: &[&str], width: i32) -> (Vec<(i32, i32)>, i32) {
    let mut rows: Vec<Vec<&str>> = vec![Vec::new()];
    let mut used = 0;
    for &name in names {
        let w = entry_width(name);
        if rows.last().is_some_and(|r| !r.is_empty()) && used + w > width - 2 * LEGEND_PAD {
            rows.push(Vec::new());
            used = 0;
        }
        if let Some(row) = rows.last_mut() {
            row.push(name);
        }
        used += w;
    }
    let mut at = Vec::with_capacity(names.len());
    for (i, row) in (0..).zip(&rows) {
        let total: i32 = row.iter().map(|n| entry_width(n)).sum();
        let mut x = ((width - total) / 2).max(LEGEND_PAD);
        for name in row {
            at.push((x, LEGEND_PAD + i * LEGEND_ROW + LEGEND_ROW / 2));
            x += entry_width(name);
        }
    }
    let rows = i32::try_from(rows.len()).unwrap_or(1);
    (at, 2 * LEGEND_PAD + rows * LEGEND_ROW)
}

/// The size of the contention charts: the two charts side by side, the
/// legend below them.
const WIDTH: u32 = 1200;
const CHARTS_HEIGHT: u32 = 480;

/// Both charts (calls and completion time against clients, a line per
/// strategy, with the legend below them) as an SVG document.
///
/// # Errors
///
/// When they cannot be drawn.
pub fn svg(setup: &Setup, cells: &[Cell]) -> Result<String, String> {
    contention_svg(setup, cells).map(|(text, _)| text)
}

/// The contention charts as an SVG document, and where their parts went.
fn contention_svg(setup: &Setup, cells: &[Cell]) -> Result<(String, Frames), String> {
    let names: Vec<&str> = setup.strategies.iter().map(|s| s.name()).collect();
    #[allow(clippy::cast_possible_wrap)]
    let (entries, legend_height) = legend_layout(&names, WIDTH as i32);
    let height = CHARTS_HEIGHT + legend_height.unsigned_abs();
    let mut text = String::new();
    let mut frames = Frames::default();
    {
        let root = SVGBackend::with_string(&mut text, (WIDTH, height)).into_drawing_area();
        let mut draw = || -> Result<(), Failed> {
            root.fill(&WHITE)?;
            let (charts, legend) = root.split_vertically(CHARTS_HEIGHT);
            let (left, right) = charts.split_horizontally(WIDTH / 2);
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
                    .y_label_formatter(&|v| tick(*v))
                    .draw()?;
                frames
                    .plots
                    .push(Rect::of_ranges(chart.plotting_area().get_pixel_range()));
                for &s in &setup.strategies {
                    let (colour, dashes, kind) = look(s);
                    let points: Vec<(i32, i32)> = series(cells, s)
                        .iter()
                        .map(|c| chart.backend_coord(&(c.clients, value(c))))
                        .collect();
                    line(&root, points.clone(), colour, dashes)?;
                    for p in points {
                        mark(&root, kind, p, colour)?;
                    }
                }
            }
            let (x0, y0) = legend.get_base_pixel();
            for (&s, &(x, y)) in setup.strategies.iter().zip(&entries) {
                let (colour, dashes, kind) = look(s);
                let (x, y) = (x0 + x, y0 + y);
                line(&root, vec![(x, y), (x + SAMPLE, y)], colour, dashes)?;
                mark(&root, kind, (x + SAMPLE / 2, y), colour)?;
                let at = (x + SAMPLE + 8, y);
                root.draw_text(s.name(), &label_style(LEGEND_FONT), at)?;
                frames
                    .keys
                    .push(Rect::of_text(s.name(), LEGEND_FONT, at.0, at.1));
            }
            root.present()?;
            Ok(())
        };
        draw().map_err(|e| e.to_string())?;
    }
    Ok((text, frames))
}

/// The style of a label `size` pixels high, placed by its left edge and
/// its middle.
fn label_style(size: i32) -> TextStyle<'static> {
    TextStyle::from(("sans-serif", size).into_font()).pos(Pos::new(HPos::Left, VPos::Center))
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
        S::FullThrottle => RGBColor(0xe3, 0x77, 0xc2),
        S::FullBudgetThrottle => RGBColor(0x7f, 0x7f, 0x00),
    }
}

/// Ticks per point of the overload charts (a tenth of a second).
const BIN: usize = 10;

/// The size of the overload and cron charts: the width, the column titles
/// above, one row per strategy (or way of running the job), the note
/// below, and the rows' names on the left.
const OVERLOAD_WIDTH: u32 = 1100;
const HEAD: u32 = 40;
const ROW: u32 = 118;
const FOOT: u32 = 56;
const NAMES: u32 = 196;
const ROW_FONT: i32 = 15;
/// The cron rows' names are backoff's options, longer than a strategy's.
const CRON_NAMES: u32 = 280;

/// The overload model's charts as an SVG document: per strategy a row of
/// two small charts against time, the offered load (attempts sent a
/// second) and the goodput (requests that succeeded a second), the outage
/// shaded, each column on one scale.
///
/// # Errors
///
/// When plotters fails to draw.
pub fn overload_svg(setup: &overload::Setup, outcomes: &[Outcome]) -> Result<String, String> {
    overload_drawing(setup, outcomes).map(|(text, _)| text)
}

/// The overload charts as an SVG document, and where their parts went.
fn overload_drawing(
    setup: &overload::Setup,
    outcomes: &[Outcome],
) -> Result<(String, Frames), String> {
    let (start, end) = setup.window();
    #[allow(clippy::cast_precision_loss)]
    let shade = (
        start as f64 / overload::TICKS_PER_S as f64,
        end as f64 / overload::TICKS_PER_S as f64,
    );
    let columns: [fn(&Outcome) -> &Vec<u32>; 2] = [|o| &o.sent, |o| &o.good];
    let rows: Vec<Row> = outcomes
        .iter()
        .map(|o| Row {
            name: o.strategy.name().to_owned(),
            colour: overload_colour(o.strategy),
            values: columns.map(|pick| per_second(pick(o), BIN)),
        })
        .collect();
    #[allow(clippy::cast_precision_loss)]
    let step = BIN as f64 / overload::TICKS_PER_S as f64;
    rows_drawing(&Panels {
        rows,
        step,
        horizon: setup.horizon.as_secs_f64(),
        shade: Some(shade),
        floor: setup.capacity,
        names: NAMES,
        titles: [
            "Offered load: attempts sent a second",
            "Goodput: requests that succeeded a second",
        ],
        note: "One row per strategy; each column on one scale; the grey band is the outage.",
    })
}

/// Colours of the cron model's ways of running the job.
fn cron_colour(g: cron::Gate) -> RGBColor {
    use cron::Gate as G;
    match g {
        G::Plain => RGBColor(0xd6, 0x27, 0x28),
        G::Splay => RGBColor(0x1f, 0x77, 0xb4),
        G::Lock => RGBColor(0x8c, 0x56, 0x4b),
        G::SplayLock => RGBColor(0xff, 0x7f, 0x0e),
        G::OncePer => RGBColor(0x94, 0x67, 0xbd),
        G::SplayOncePer => RGBColor(0x2c, 0xa0, 0x2c),
    }
}

/// The cron model's charts as an SVG document: per way of running the job
/// a row of two small charts against the seconds after :00, the requests
/// a second to the service and to the store, each column on one scale.
///
/// # Errors
///
/// When plotters fails to draw.
pub fn cron_svg(setup: &cron::Setup, outcomes: &[cron::Outcome]) -> Result<String, String> {
    cron_drawing(setup, outcomes).map(|(text, _)| text)
}

/// The cron charts as an SVG document, and where their parts went.
fn cron_drawing(
    setup: &cron::Setup,
    outcomes: &[cron::Outcome],
) -> Result<(String, Frames), String> {
    let seconds = cron::horizon(outcomes);
    let rows = outcomes
        .iter()
        .map(|o| Row {
            name: o.gate.options(setup.splay),
            colour: cron_colour(o.gate),
            values: [
                cron::per_second(&o.service, seconds),
                cron::per_second(&o.store, seconds),
            ],
        })
        .collect();
    #[allow(clippy::cast_precision_loss)]
    let horizon = seconds as f64;
    rows_drawing(&Panels {
        rows,
        step: 1.0,
        horizon,
        shade: None,
        floor: 1.0,
        names: CRON_NAMES,
        titles: [
            "Service: requests a second",
            "Store: requests a second (lock, once-per record)",
        ],
        note: "One row per crontab line; time in seconds after :00; each column on one scale.",
    })
}

/// A row of two small charts: its name, its colour, and the values of
/// each chart, one a `step`.
struct Row {
    name: String,
    colour: RGBColor,
    values: [Vec<f64>; 2],
}

/// Panels of two small charts against time, named on the left, each column
/// on one scale (at least `floor`), with titles above and a note below.
struct Panels {
    rows: Vec<Row>,
    /// Seconds between two values.
    step: f64,
    /// The end of the time axis, in seconds.
    horizon: f64,
    /// A band of time shaded in every chart.
    shade: Option<(f64, f64)>,
    floor: f64,
    /// The width of the rows' names, in pixels.
    names: u32,
    titles: [&'static str; 2],
    note: &'static str,
}

/// The rows as an SVG document, and where their parts went.
fn rows_drawing(spec: &Panels) -> Result<(String, Frames), String> {
    let count = u32::try_from(spec.rows.len()).unwrap_or(u32::MAX / ROW / 2);
    let height = HEAD + count.max(1) * ROW + FOOT;
    let mut text = String::new();
    let mut frames = Frames::default();
    {
        let root = SVGBackend::with_string(&mut text, (OVERLOAD_WIDTH, height)).into_drawing_area();
        let mut draw = || -> Result<(), Failed> {
            root.fill(&WHITE)?;
            let (_, rest) = root.split_vertically(HEAD);
            let (body, foot) = rest.split_vertically(count.max(1) * ROW);
            let top = [0, 1].map(|col| {
                spec.rows
                    .iter()
                    .flat_map(|r| r.values[col].iter().copied())
                    .fold(spec.floor, f64::max)
                    * 1.05
            });
            let mut column_plots = [None, None];
            for (r, area) in spec
                .rows
                .iter()
                .zip(body.split_evenly((spec.rows.len().max(1), 1)))
            {
                let (_, charts) = area.split_horizontally(spec.names);
                for (col, panel) in charts.split_evenly((1, 2)).iter().enumerate() {
                    let mut chart = ChartBuilder::on(panel)
                        .margin(6)
                        .x_label_area_size(22)
                        .y_label_area_size(56)
                        .build_cartesian_2d(0.0..spec.horizon, 0.0..top[col])?;
                    chart
                        .configure_mesh()
                        .x_labels(7)
                        .y_labels(4)
                        .x_label_formatter(&|v| tick(*v))
                        .y_label_formatter(&|v| tick(*v))
                        .light_line_style(RGBColor(0xf0, 0xf0, 0xf0))
                        .draw()?;
                    if let Some((from, to)) = spec.shade {
                        chart.draw_series(std::iter::once(Rectangle::new(
                            [(from, 0.0), (to, top[col])],
                            RGBColor(0xd0, 0xd0, 0xd0).mix(0.5).filled(),
                        )))?;
                    }
                    #[allow(clippy::cast_precision_loss)]
                    let points = r.values[col]
                        .iter()
                        .enumerate()
                        .map(|(i, &y)| (i as f64 * spec.step, y));
                    chart.draw_series(LineSeries::new(points, r.colour.stroke_width(2)))?;
                    let plot = Rect::of_ranges(chart.plotting_area().get_pixel_range());
                    frames.plots.push(plot);
                    column_plots[col] = Some(plot);
                    if col == 0 {
                        let at = (12, i32::midpoint(plot.top, plot.bottom));
                        root.draw_text(&r.name, &label_style(ROW_FONT), at)?;
                        frames
                            .keys
                            .push(Rect::of_text(&r.name, ROW_FONT, at.0, at.1));
                    }
                }
            }
            let centred = TextStyle::from(("sans-serif", 17).into_font())
                .pos(Pos::new(HPos::Center, VPos::Center));
            let small = TextStyle::from(("sans-serif", 14).into_font())
                .pos(Pos::new(HPos::Center, VPos::Center));
            let (_, foot_top) = foot.get_base_pixel();
            for (plot, title) in column_plots.iter().zip(spec.titles) {
                if let Some(plot) = plot {
                    let middle = i32::midpoint(plot.left, plot.right);
                    #[allow(clippy::cast_possible_wrap)]
                    root.draw_text(title, &centred, (middle, HEAD as i32 / 2))?;
                    root.draw_text("time (s)", &small, (middle, foot_top + 14))?;
                }
            }
            root.draw_text(spec.note, &label_style(14), (12, foot_top + 40))?;
            root.present()?;
            Ok(())
        };
        draw().map_err(|e| e.to_string())?;
    }
    Ok((text, frames))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_have_no_needless_point_zero() {
        assert_eq!(tick(10.0), "10");
        assert_eq!(tick(0.0), "0");
        assert_eq!(tick(-0.0), "0");
        assert_eq!(tick(2.5), "2.5");
        assert_eq!(tick(8000.0), "8000");
        assert_eq!(tick(100_000.0), "100000");
        assert_eq!(tick(0.1 + 0.2), "0.3");
        assert_eq!(tick(-1.25), "-1.25");
    }

    #[test]
    fn no_two_strategies_are_drawn_alike() {
        let all = [
            Strategy::None,
            Strategy::Exponential,
            Strategy::Full,
            Strategy::Equal,
            Strategy::Decorrelated,
            Strategy::Policy,
        ];
        for (i, &a) in all.iter().enumerate() {
            for &b in &all[i + 1..] {
                let (ca, da, ma) = look(a);
                let (cb, db, mb) = look(b);
                assert!(ca != cb && da != db && ma != mb, "{a:?} and {b:?}");
            }
        }
    }

    #[test]
    fn the_legend_wraps_inside_its_width() {
        let names = [
            "none",
            "exponential",
            "full",
            "equal",
            "decorrelated",
            "policy",
        ];
        let (one_row, height) = legend_layout(&names, 1200);
        assert_eq!(height, 2 * LEGEND_PAD + LEGEND_ROW);
        assert!(one_row.iter().all(|&(_, y)| y == one_row[0].1));
        let (wrapped, taller) = legend_layout(&names, 400);
        assert!(taller > height);
        for (name, &(x, _)) in names.iter().zip(&wrapped) {
            assert!(x >= LEGEND_PAD && x + entry_width(name) - 22 <= 400 - LEGEND_PAD);
        }
    }

    /// The cells of a small contention run, made up.
    fn cells(strategies: &[Strategy]) -> Vec<Cell> {
        let mut cells = Vec::new();
        for (k, &strategy) in (1..).zip(strategies) {
            for clients in [10, 20, 30] {
                let n = f64::from(clients);
                cells.push(Cell {
                    clients,
                    strategy,
                    calls: crate::simulate::Stat {
                        mean: n * f64::from(k),
                        sd: 1.0,
                    },
                    time_ms: crate::simulate::Stat {
                        mean: n * 100.0,
                        sd: 1.0,
                    },
                });
            }
        }
        cells
    }

    #[test]
    fn the_contention_legend_is_outside_both_charts() {
        let strategies = Strategy::BROOKER.to_vec();
        let mut setup = crate::simulate::tests::setup();
        setup.clients = vec![10, 20, 30];
        let (text, frames) = contention_svg(&setup, &cells(&strategies)).unwrap();
        assert_eq!(frames.plots.len(), 2);
        assert_eq!(frames.keys.len(), strategies.len());
        assert!(!frames.plots[0].intersects(frames.plots[1]));
        for key in &frames.keys {
            assert!(key.right <= i32::try_from(WIDTH).unwrap(), "{key:?}");
            for plot in &frames.plots {
                assert!(!key.intersects(*plot), "{key:?} covers {plot:?}");
            }
        }
        for name in ["exponential", "decorrelated", "Work: write calls"] {
            assert!(text.contains(name), "{name}");
        }
        assert_no_point_zero_label(&text);
    }

    #[test]
    fn the_overload_rows_are_named_beside_them_never_over_them() {
        let setup = crate::simulate::overload::tests::small();
        let outcomes = overload::simulate(&setup);
        let drawn = overload_drawing(&setup, &outcomes).unwrap();
        assert_rows_apart(
            &drawn,
            outcomes.len(),
            &["full+budget", "full+breaker", "Goodput", "time (s)"],
        );
    }

    #[test]
    fn the_cron_rows_are_named_beside_them_never_over_them() {
        let setup = crate::simulate::cron::tests::small();
        let outcomes = cron::simulate(&setup);
        let drawn = cron_drawing(&setup, &outcomes).unwrap();
        assert_rows_apart(
            &drawn,
            outcomes.len(),
            &["--splay 1m --once-per hour", "Service", "Store", "time (s)"],
        );
    }

    /// `rows` rows of two charts, named beside them, no plot or name over
    /// another, with `texts` in the drawing and no needless `.0`.
    fn assert_rows_apart((text, frames): &(String, Frames), rows: usize, texts: &[&str]) {
        assert_eq!(frames.plots.len(), 2 * rows);
        assert_eq!(frames.keys.len(), rows);
        for (i, a) in frames.plots.iter().enumerate() {
            for b in &frames.plots[i + 1..] {
                assert!(!a.intersects(*b), "{a:?} and {b:?}");
            }
            for key in &frames.keys {
                assert!(!key.intersects(*a), "{key:?} covers {a:?}");
            }
        }
        for name in texts {
            assert!(text.contains(name), "{name}");
        }
        assert_no_point_zero_label(text);
    }

    /// No text of the drawing is a number that ends in `.0`.
    fn assert_no_point_zero_label(svg: &str) {
        for text in svg.split("<text").skip(1) {
            let label = text
                .split_once('>')
                .and_then(|(_, rest)| rest.split_once('<'))
                .map_or("", |(label, _)| label);
            assert!(
                !(label.ends_with(".0") && label.parse::<f64>().is_ok()),
                "{label}"
            );
        }
    }
}
