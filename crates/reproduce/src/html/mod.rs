//! The HTML report of a reproduction: self-contained (inline SVG drawn with
//! plotters, inline CSS), the paper's value beside ours on every figure that
//! has one (a hollow bar labelled "paper"), values on bars, axes with units,
//! stacked bars where a total is broken down, light gridlines; then the
//! checks, the parameters and the deviations.
//!
//! A small inline script measures every figure after layout (each SVG's size
//! and its drawn shapes) into `<pre id="figure-check">`, so a headless browser's
//! DOM dump (`.ci/report-smoke`) shows whether a figure is missing or empty.

mod svg;

use crate::check::{Check, Summary};
use plotters::style::RGBColor;
use svg::{bars_svg, lines_svg, spread_svg, PALETTE};

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

/// Bars side by side per group, one per series, each a mean with its
/// spread drawn as an error bar (a sweep over seeds: min to max).
pub struct Spread {
    pub title: String,
    pub y_desc: String,
    pub groups: Vec<String>,
    pub series: Vec<String>,
    /// [group][series]: the mean and (min, max); None where no cell ran.
    pub values: Vec<Vec<Option<(f64, f64, f64)>>>,
    pub decimals: usize,
}

pub enum Figure {
    Bars(Bars),
    Lines(Lines),
    Spread(Spread),
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
            Figure::Spread(p) => p
                .series
                .iter()
                .enumerate()
                .map(|(i, name)| (name.clone(), Some(PALETTE[i % PALETTE.len()])))
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

/// The page's head, title, intro and figures: what every report page
/// (a reproduction's, a sweep's) shares.
fn head_and_figures(title: &str, intro: &str, figures: &[Figure]) -> String {
    let mut s = format!(
        "<!doctype html><html><head><meta charset=utf-8><title>{t}</title><style>\
         body{{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}}\
         table{{border-collapse:collapse;margin:1em 0;font-size:13px}}td,th{{border:1px solid #bbb;padding:3px 7px}}\
         td.n{{text-align:right}}tr.no td{{background:#fff3f0}}tr.structural td{{color:#666}}figure.fig{{display:inline-block;margin:6px;vertical-align:top}}\
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
            Figure::Spread(p) => spread_svg(p),
        };
        s += &format!("<figure class=fig id=fig{}>{svg}{}</figure>", i + 1, legend_html(&f.legend()));
    }
    s
}

/// The browser's figure check, and the end of the page.
fn tail() -> String {
    format!("<h2>Figure check (filled in by the browser)</h2><pre id=figure-check>not run: scripts off</pre>{FIGURE_CHECK_SCRIPT}</body></html>")
}

/// A page of figures and HTML after them (a sweep's report).
pub fn figures_page(title: &str, intro: &str, figures: &[Figure], body_html: &str) -> String {
    head_and_figures(title, intro, figures) + body_html + &tail()
}

/// The whole page of a reproduction.
pub fn page(
    title: &str,
    intro: &str,
    figures: &[Figure],
    tables_html: &str,
    (checks, host_sweep): (&[Check], &[crate::check::HostSweep]),
    params_json: &str,
    deviations: &[String],
) -> String {
    let mut s = head_and_figures(title, intro, figures);
    s += tables_html;
    s += &format!("<h2>Checks: {}</h2><table><tr><th>id</th><th>what</th><th>paper</th><th>measured</th><th>unit</th><th>kind</th><th>within 25%</th><th>class</th><th>note</th></tr>", escape(&Summary::of(checks).line));
    for c in checks {
        s += &format!(
            "<tr class={}><td>{}</td><td>{}</td><td class=n>{}</td><td class=n>{}</td><td>{:?}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            match c.within_25pct {
                Some(true) => "yes",
                Some(false) => "no",
                None => "structural",
            },
            escape(&c.id),
            escape(&c.what),
            escape(&c.show_paper()),
            escape(&c.show(&c.measured)),
            c.unit,
            c.kind.name(),
            c.verdict(),
            c.miss_class().map_or("", |k| k.name()),
            escape(&c.note)
        );
    }
    s += "</table>";
    s += &host_sweep_table(checks, host_sweep);
    s += "<h2>Deviations</h2><ul>";
    for d in deviations {
        s += &format!("<li>{}</li>", escape(d));
    }
    s += &format!("</ul><h2>Parameters</h2><pre>{}</pre>", escape(params_json));
    s + &tail()
}

/// The host profile's sweep: each check whose figure moves with the host's
/// prices, its figure and verdict at each scale (empty without one).
fn host_sweep_table(checks: &[Check], host_sweep: &[crate::check::HostSweep]) -> String {
    let mut s = String::new();
    if let Some(first) = host_sweep.first() {
        s += "<h2>Host profile sweep</h2><p>The checks whose figure moves with the host's prices, each at every price scaled.</p><table><tr><th>check</th>";
        for x in &first.scales {
            s += &format!("<th>x{x}</th>");
        }
        s += "</tr>";
        for r in host_sweep {
            s += &format!("<tr><td>{}</td>", escape(&r.id));
            for cell in r.cells(checks.iter().find(|c| c.id == r.id)) {
                s += &format!("<td class=n>{}</td>", escape(&cell));
            }
            s += "</tr>";
        }
        s += "</table>";
    }
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
