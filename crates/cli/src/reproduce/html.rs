//! The HTML report of a reproduction: self-contained (inline SVG drawn with
//! plotters, inline CSS), the paper's value beside ours on every figure that
//! has one (a hollow bar labelled "paper"), values on bars, axes with units,
//! stacked bars where a total is broken down, light gridlines; then the
//! checks, the parameters and the deviations.
//!
//! A small inline script measures every figure after layout (each SVG's size
//! and its drawn shapes) into `<pre id="figure-check">`, so a headless browser's
//! DOM dump (`.ci/report-smoke`) shows whether a figure is missing or empty.

use super::checks::{summary, Check};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A bar chart: one group per category; ours a (stacked) filled bar, the
/// paper's a hollow bar beside it.
pub struct Bars {
    pub title: String,
    pub y_desc: String,
    pub groups: Vec<String>,
    /// Names of the stacked parts of our bar (one: not stacked).
    pub segments: Vec<String>,
    /// [group][segment].
    pub ours: Vec<Vec<f64>>,
    /// The paper's value per group, if it gives one.
    pub paper: Vec<Option<f64>>,
    pub decimals: usize,
}

/// Lines over x, one per series (no paper values: the paper gives none per point).
pub struct Lines {
    pub title: String,
    pub x_desc: String,
    pub y_desc: String,
    pub series: Vec<(String, Vec<(f64, f64)>)>,
}

pub enum Figure {
    Bars(Bars),
    Lines(Lines),
}

impl Figure {
    /// The legend, drawn in HTML under the SVG (so that every coloured shape
    /// inside the SVG is data, which the browser check counts): a name and a
    /// palette colour, or `None` for the paper's hollow bar.
    fn legend(&self) -> Vec<(String, Option<RGBColor>)> {
        match self {
            Figure::Bars(b) => {
                let mut v: Vec<(String, Option<RGBColor>)> = b
                    .segments
                    .iter()
                    .enumerate()
                    .map(|(j, s)| (format!("ours: {s}"), Some(PALETTE[j % PALETTE.len()])))
                    .collect();
                if b.paper.iter().any(Option::is_some) {
                    v.push(("paper (hollow bar)".into(), None));
                }
                v
            }
            Figure::Lines(l) => l
                .series
                .iter()
                .enumerate()
                .map(|(i, (name, _))| (name.clone(), Some(PALETTE[i % PALETTE.len()])))
                .collect(),
        }
    }
}

fn legend_html(items: &[(String, Option<RGBColor>)]) -> String {
    let mut s = String::from("<figcaption>");
    for (name, c) in items {
        let swatch = match c {
            Some(c) => format!("background:#{:02X}{:02X}{:02X}", c.0, c.1, c.2),
            None => "border:2px solid #000;box-sizing:border-box".to_string(),
        };
        s += &format!("<span class=key><i style=\"{swatch}\"></i>{}</span>", escape(name));
    }
    s + "</figcaption>"
}

const PALETTE: [RGBColor; 5] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
];

fn fmt(v: f64, decimals: usize) -> String {
    if decimals == 0 {
        crate::table::thousands(v.round().max(0.0) as u64)
    } else {
        format!("{v:.decimals$}")
    }
}

fn bars_svg(b: &Bars) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (640, 380)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let n = b.groups.len().max(1) as f64;
        let top = b
            .ours
            .iter()
            .map(|s| s.iter().sum::<f64>())
            .chain(b.paper.iter().flatten().copied())
            .fold(0.0, f64::max);
        let ymax = if top > 0.0 { top * 1.18 } else { 1.0 };
        let chart = ChartBuilder::on(&root)
            .caption(&b.title, ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..n, 0.0..ymax);
        let Ok(mut chart) = chart else {
            return String::new();
        };
        let groups = b.groups.clone();
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
            .y_desc(b.y_desc.as_str())
            .y_label_formatter(&|y| fmt(*y, if ymax < 10.0 { 1 } else { 0 }))
            .draw();
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

fn lines_svg(l: &Lines) -> String {
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

pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// Counts each figure's drawn shapes after layout, for the CI's headless browser.
const FIGURE_CHECK_SCRIPT: &str = r#"<script>
window.addEventListener('load', function () {
  var out = [];
  document.querySelectorAll('figure.fig').forEach(function (f, i) {
    var svg = f.querySelector('svg');
    if (!svg) { out.push('figure ' + (i + 1) + ': MISSING svg'); return; }
    var r = svg.getBoundingClientRect();
    // Data: shapes in the palette's colours (our bars, lines, markers) and
    // the paper's hollow bars (unfilled black rectangles); axes and
    // gridlines are lines, black or grey. Legends are outside the SVG.
    var palette = ['#1F77B4', '#FF7F0E', '#2CA02C', '#D62728', '#9467BD'];
    var drawn = 0;
    svg.querySelectorAll('rect,path,polyline,circle,line').forEach(function (e) {
      var fill = (e.getAttribute('fill') || '').toUpperCase();
      var stroke = (e.getAttribute('stroke') || '').toUpperCase();
      var data = palette.indexOf(fill) >= 0 || palette.indexOf(stroke) >= 0 ||
        (e.tagName === 'rect' && fill === 'NONE' && stroke === '#000000');
      var b = e.getBBox();
      if (data && (b.width > 0 && b.height > 0 || e.tagName === 'polyline' && (b.width > 0 || b.height > 0))) drawn++;
    });
    var texts = svg.querySelectorAll('text').length;
    out.push('figure ' + (i + 1) + ': ' + Math.round(r.width) + 'x' + Math.round(r.height) + ' px, ' + drawn + ' data shapes, ' + texts + ' texts');
  });
  document.getElementById('figure-check').textContent = out.join('\n');
});
</script>"#;

/// The whole page.
pub fn page(
    title: &str,
    intro: &str,
    figures: &[Figure],
    tables_html: &str,
    checks: &[Check],
    params_json: &str,
    deviations: &[String],
) -> String {
    let mut s = format!(
        "<!doctype html><html><head><meta charset=utf-8><title>{t}</title><style>\
         body{{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}}\
         table{{border-collapse:collapse;margin:1em 0;font-size:13px}}td,th{{border:1px solid #bbb;padding:3px 7px}}\
         td.n{{text-align:right}}tr.no td{{background:#fff3f0}}figure.fig{{display:inline-block;margin:6px;vertical-align:top}}\
         span.key{{margin-right:14px;font-size:12px}}span.key i{{display:inline-block;width:12px;height:10px;margin-right:4px}}\
         pre{{background:#f6f6f6;padding:8px;font-size:12px;white-space:pre-wrap}}</style></head><body>\
         <h1>{t}</h1><p>{intro}</p><h2>Figures</h2>",
        t = escape(title),
        intro = intro
    );
    for (i, f) in figures.iter().enumerate() {
        let svg = match f {
            Figure::Bars(b) => bars_svg(b),
            Figure::Lines(l) => lines_svg(l),
        };
        s += &format!("<figure class=fig id=fig{}>{svg}{}</figure>", i + 1, legend_html(&f.legend()));
    }
    s += tables_html;
    s += &format!("<h2>Checks: {}</h2><table><tr><th>id</th><th>what</th><th>paper</th><th>measured</th><th>unit</th><th>kind</th><th>within 25%</th><th>note</th></tr>", escape(&summary(checks)));
    for c in checks {
        s += &format!(
            "<tr class={}><td>{}</td><td>{}</td><td class=n>{}</td><td class=n>{}</td><td>{:?}</td><td>{:?}</td><td>{}</td><td>{}</td></tr>",
            if c.within_25pct { "yes" } else { "no" },
            escape(&c.id),
            escape(&c.what),
            escape(&c.show(&c.paper)),
            escape(&c.show(&c.measured)),
            c.unit,
            c.kind,
            if c.within_25pct { "yes" } else { "no" },
            escape(&c.note)
        );
    }
    s += "</table><h2>Deviations</h2><ul>";
    for d in deviations {
        s += &format!("<li>{}</li>", escape(d));
    }
    s += &format!(
        "</ul><h2>Parameters</h2><pre>{}</pre><h2>Figure check (filled in by the browser)</h2><pre id=figure-check>not run: scripts off</pre>{FIGURE_CHECK_SCRIPT}</body></html>",
        escape(params_json)
    );
    s
}

/// A plain HTML table.
pub fn table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut s = String::from("<table><tr>");
    for h in header {
        s += &format!("<th>{}</th>", escape(h));
    }
    s += "</tr>";
    for r in rows {
        s += "<tr>";
        for (i, v) in r.iter().enumerate() {
            s += &format!("<td{}>{}</td>", if i > 0 { " class=n" } else { "" }, escape(v));
        }
        s += "</tr>";
    }
    s + "</table>"
}
