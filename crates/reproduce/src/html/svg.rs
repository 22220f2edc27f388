//! The SVG of a figure, drawn with plotters: bars (ours filled, stacked
//! where a total is broken down; the paper's a hollow bar beside, labelled)
//! and lines, values on the bars and points, light gridlines.

use super::{Bars, Lines, Spread};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

pub(super) const PALETTE: [RGBColor; 5] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
];

fn fmt(v: f64, decimals: usize) -> String {
    if decimals == 0 {
        crate::fmt::thousands(v.round().max(0.0) as u64)
    } else {
        format!("{v:.decimals$}")
    }
}

/// A chart of categories along x (`groups`, one unit each, labelled at its
/// middle) and values up to `ymax`, with light gridlines.
fn category_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
    y_desc: &str,
    groups: &[String],
    ymax: f64,
) -> Option<ChartContext<'a, SVGBackend<'b>, Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>>> {
    let n = groups.len().max(1) as f64;
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 15))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..n, 0.0..ymax)
        .ok()?;
    let _ = chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(215, 215, 215))
        .x_labels(groups.len() * 2 + 1)
        .x_label_formatter(&|x| {
            let i = x.floor() as usize;
            if (x - i as f64 - 0.5).abs() < 1e-6 {
                groups.get(i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc(y_desc)
        .y_label_formatter(&|y| fmt(*y, if ymax < 10.0 { 1 } else { 0 }))
        .draw();
    Some(chart)
}

pub(super) fn bars_svg(b: &Bars) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (640, 380)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let top = b
            .ours
            .iter()
            .map(|s| s.iter().sum::<f64>())
            .chain(b.paper.iter().flatten().copied())
            .fold(0.0, f64::max);
        let ymax = if top > 0.0 { top * 1.18 } else { 1.0 };
        let Some(mut chart) = category_chart(&root, &b.title, &b.y_desc, &b.groups, ymax) else {
            return String::new();
        };
        let value_style = TextStyle::from(("sans-serif", 12).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
        let has_paper = b.paper.iter().any(Option::is_some);
        for (i, parts) in b.ours.iter().enumerate() {
            let x0 = i as f64 + if has_paper { 0.12 } else { 0.25 };
            let x1 = i as f64 + if has_paper { 0.48 } else { 0.75 };
            let mut y = 0.0;
            for (j, v) in parts.iter().enumerate() {
                let c = PALETTE[j % PALETTE.len()];
                let _ = chart.draw_series(std::iter::once(Rectangle::new([(x0, y), (x1, y + v)], c.filled())));
                y += v;
            }
            let _ = chart.draw_series(std::iter::once(Text::new(
                fmt(y, b.decimals),
                ((x0 + x1) / 2.0, y),
                value_style.clone(),
            )));
            if let Some(Some(pv)) = b.paper.get(i) {
                let (p0, p1) = (i as f64 + 0.52, i as f64 + 0.88);
                let _ = chart.draw_series(std::iter::once(Rectangle::new([(p0, 0.0), (p1, *pv)], BLACK.stroke_width(1))));
                let _ = chart.draw_series(std::iter::once(Text::new(
                    format!("paper {}", fmt(*pv, b.decimals)),
                    ((p0 + p1) / 2.0, *pv),
                    value_style.clone(),
                )));
            }
        }
        let _ = root.present();
    }
    svg
}

pub(super) fn lines_svg(l: &Lines) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (640, 380)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let pts = l.series.iter().flat_map(|s| s.1.iter());
        let xmax = pts.clone().map(|p| p.0).fold(0.0, f64::max) + 1.0;
        let ymax = pts.map(|p| p.1).fold(0.0, f64::max) * 1.12 + 1e-9;
        let Ok(mut chart) = ChartBuilder::on(&root)
            .caption(&l.title, ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..xmax, 0.0..ymax)
        else {
            return String::new();
        };
        let _ = chart
            .configure_mesh()
            .light_line_style(RGBColor(235, 235, 235))
            .bold_line_style(RGBColor(215, 215, 215))
            .x_desc(l.x_desc.as_str())
            .y_desc(l.y_desc.as_str())
            .draw();
        let value_style = TextStyle::from(("sans-serif", 10).into_font()).pos(Pos::new(HPos::Left, VPos::Bottom));
        for (i, (_, pts)) in l.series.iter().enumerate() {
            let c = PALETTE[i % PALETTE.len()];
            let _ = chart.draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)));
            let _ = chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled())));
            let _ = chart.draw_series(pts.iter().map(|&p| Text::new(format!("{:.1}", p.1), p, value_style.clone())));
        }
        let _ = root.present();
    }
    svg
}

/// Side-by-side bars per group (one per series, the mean) with an error
/// bar from the least to the greatest value.
pub(super) fn spread_svg(p: &Spread) -> String {
    let mut svg = String::new();
    {
        // Wider with many groups, so that each keeps room for its bars and label.
        let width = 640.max(70 * p.groups.len() as u32 + 120);
        let root = SVGBackend::with_string(&mut svg, (width, 380)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let top = p.values.iter().flatten().flatten().map(|v| v.2).fold(0.0, f64::max);
        let ymax = if top > 0.0 { top * 1.18 } else { 1.0 };
        let Some(mut chart) = category_chart(&root, &p.title, &p.y_desc, &p.groups, ymax) else {
            return String::new();
        };
        let value_style = TextStyle::from(("sans-serif", 10).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
        for (i, row) in p.values.iter().enumerate() {
            // Only the series this group has take room in it (colours stay the series').
            let present: Vec<(usize, (f64, f64, f64))> = row.iter().enumerate().filter_map(|(j, v)| v.map(|v| (j, v))).collect();
            let width = 0.8 / present.len().max(1) as f64;
            for (slot, &(j, (mean, lo, hi))) in present.iter().enumerate() {
                let x0 = i as f64 + 0.1 + slot as f64 * width;
                let (x1, xm) = (x0 + width * 0.9, x0 + width * 0.45);
                let c = PALETTE[j % PALETTE.len()];
                let _ = chart.draw_series(std::iter::once(Rectangle::new([(x0, 0.0), (x1, mean)], c.filled())));
                // A marker at the mean: a value of 0 shows too.
                let _ = chart.draw_series(std::iter::once(Circle::new((xm, mean), 3, c.filled())));
                if hi > lo {
                    let cap = width * 0.2;
                    let lines = [
                        [(xm, lo), (xm, hi)],
                        [(xm - cap, lo), (xm + cap, lo)],
                        [(xm - cap, hi), (xm + cap, hi)],
                    ];
                    let _ = chart.draw_series(lines.into_iter().map(|l| PathElement::new(l, BLACK.stroke_width(1))));
                }
                let _ = chart.draw_series(std::iter::once(Text::new(
                    fmt(mean, p.decimals),
                    (xm, hi.max(mean)),
                    value_style.clone(),
                )));
            }
        }
        let _ = root.present();
    }
    svg
}
