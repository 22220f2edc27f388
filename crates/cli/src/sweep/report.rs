//! A sweep's results summarised: a table on the terminal, a CSV (one row a
//! cell), and an HTML page with one chart a metric (the first axis's values
//! side by side, a bar a combination of the other flags, the mean over
//! seeds with an error bar from the least to the greatest value).

use super::grid::Grid;
use super::pool::Record;
use std::collections::BTreeMap;
use txftl_reproduce::html::{escape, figures_page, table, Figure, Spread};

/// The records of the grid's cells, in the grid's order (cells not run yet left out).
pub fn of_grid<'a>(grid: &Grid, all: &'a BTreeMap<String, Record>) -> Vec<&'a Record> {
    grid.cells.iter().filter_map(|c| all.get(&c.run.cell)).collect()
}

/// Where a record goes: its group (the first axis's value) and series
/// (every other flag that varies, as `key=value`).
fn place(grid: &Grid, r: &Record) -> (String, String) {
    let group_key = grid.axes.first();
    let group = group_key.and_then(|k| r.run.params.get(k)).cloned().unwrap_or_else(|| {
        // A [[cells]] entry without the first axis: its flags name it.
        r.run.params.values().next().cloned().unwrap_or_else(|| "all".into())
    });
    let series: Vec<String> = r
        .run
        .params
        .iter()
        .filter(|(k, v)| Some(*k) != group_key && **v != group)
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let series = if series.is_empty() {
        "default".to_string()
    } else {
        series.join(" ")
    };
    (group, series)
}

/// (mean, min, max) of a metric over a point's seeds (ok records with a number).
type Stat = (f64, f64, f64);

/// A point's (ok records, all records, metric -> its values or their stat).
type Point<T> = (usize, usize, BTreeMap<String, T>);

struct Summary {
    groups: Vec<String>,
    series: Vec<String>,
    /// (group, series) -> the point's figures.
    points: BTreeMap<(String, String), Point<Stat>>,
}

fn summarise(grid: &Grid, records: &[&Record]) -> Summary {
    let (mut groups, mut series) = (Vec::new(), Vec::new());
    let mut values: BTreeMap<(String, String), Point<Vec<f64>>> = BTreeMap::new();
    for r in records {
        let (g, s) = place(grid, r);
        if !groups.contains(&g) {
            groups.push(g.clone());
        }
        if !series.contains(&s) {
            series.push(s.clone());
        }
        let e = values.entry((g, s)).or_default();
        e.1 += 1;
        if r.ok() {
            e.0 += 1;
            for (m, v) in &r.metrics {
                if let Some(x) = v.as_f64() {
                    e.2.entry(m.clone()).or_default().push(x);
                }
            }
        }
    }
    let points = values
        .into_iter()
        .map(|(k, (ok, all, ms))| {
            let stats = ms
                .into_iter()
                .map(|(m, xs)| {
                    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
                    let (lo, hi) = xs.iter().fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
                    (m, (mean, lo, hi))
                })
                .collect();
            (k, (ok, all, stats))
        })
        .collect();
    Summary { groups, series, points }
}

fn show(v: f64) -> String {
    if v.fract() == 0.0 && (0.0..1e15).contains(&v) {
        txftl_reproduce::fmt::thousands(v as u64)
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

fn show_stat(s: &Stat) -> String {
    if s.1 == s.2 {
        show(s.0)
    } else {
        format!("{} ({}..{})", show(s.0), show(s.1), show(s.2))
    }
}

/// The terminal table: a row a point of the grid, means over seeds.
pub fn terminal(grid: &Grid, records: &[&Record]) -> String {
    let s = summarise(grid, records);
    let mut t = crate::table::fitted();
    let mut header = vec![
        grid.axes.first().cloned().unwrap_or_else(|| "cell".into()),
        "flags".into(),
        "seeds ok".into(),
    ];
    header.extend(grid.metrics.iter().cloned());
    t.set_header(header);
    let ordered = s.groups.iter().flat_map(|g| s.series.iter().map(move |se| (g.clone(), se.clone())));
    for key in ordered {
        let Some((ok, all, stats)) = s.points.get(&key) else { continue };
        let (g, se) = key;
        let mut row = vec![g, se, format!("{ok}/{all}")];
        row.extend(grid.metrics.iter().map(|m| stats.get(m).map_or("-".into(), show_stat)));
        t.add_row(row);
    }
    t.to_string()
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One row a cell: its hash, status, exit, seed, flags, metrics, wall time.
pub fn csv(grid: &Grid, records: &[&Record]) -> String {
    let params: Vec<String> = {
        let mut p: Vec<String> = grid.axes.clone();
        for r in records {
            for k in r.run.params.keys() {
                if !p.contains(k) {
                    p.push(k.clone());
                }
            }
        }
        p
    };
    let mut out = ["cell", "status", "exit", "seed"].map(String::from).to_vec();
    out.extend(params.iter().cloned());
    out.extend(grid.metrics.iter().cloned());
    out.push("wall_seconds".into());
    let mut s = out.iter().map(|f| csv_field(f)).collect::<Vec<_>>().join(",") + "\n";
    for r in records {
        let mut row = vec![
            r.run.cell.clone(),
            r.status.clone(),
            r.exit.map_or(String::new(), |e| e.to_string()),
            r.run.seed.map_or(String::new(), |x| x.to_string()),
        ];
        row.extend(params.iter().map(|p| r.run.params.get(p).cloned().unwrap_or_default()));
        row.extend(
            grid.metrics
                .iter()
                .map(|m| r.metrics.get(m).map_or(String::new(), |v| v.to_string())),
        );
        row.push(format!("{:.3}", r.wall.seconds));
        s += &(row.iter().map(|f| csv_field(f)).collect::<Vec<_>>().join(",") + "\n");
    }
    s
}

/// The HTML page: a chart a metric, then the cells.
pub fn html(grid: &Grid, records: &[&Record]) -> String {
    let s = summarise(grid, records);
    let figures: Vec<Figure> = grid
        .metrics
        .iter()
        .map(|m| {
            let values = s
                .groups
                .iter()
                .map(|g| {
                    s.series
                        .iter()
                        .map(|se| s.points.get(&(g.clone(), se.clone())).and_then(|p| p.2.get(m)).copied())
                        .collect()
                })
                .collect();
            let whole = s.points.values().flat_map(|p| p.2.get(m)).all(|v| v.0.fract() == 0.0);
            Figure::Spread(Spread {
                title: m.clone(),
                y_desc: m.clone(),
                groups: s.groups.clone(),
                series: s.series.clone(),
                values,
                decimals: if whole { 0 } else { 2 },
            })
        })
        .collect();
    let failed = records.iter().filter(|r| !r.ok()).count();
    let intro = format!(
        "Sweep <b>{}</b>: {} cells of <code>txftl {}</code>, {} failed. Bars are means over seeds; \
         error bars run from the least to the greatest value.",
        escape(&grid.name),
        records.len(),
        escape(&records.first().map_or(String::new(), |r| r.run.command.join(" "))),
        failed
    );
    let header: Vec<String> = ["cell", "status", "flags", "seed", "wall s"].map(String::from).to_vec();
    let rows: Vec<Vec<String>> = records
        .iter()
        .map(|r| {
            vec![
                r.run.cell.clone(),
                match &r.error {
                    Some(e) => format!("{}: {e}", r.status),
                    None => r.status.clone(),
                },
                r.run.args.join(" "),
                r.run.seed.map_or("-".into(), |x| x.to_string()),
                format!("{:.2}", r.wall.seconds),
            ]
        })
        .collect();
    let body = format!("<h2>Cells</h2>{}", table(&header, &rows));
    figures_page(&format!("txftl sweep: {}", grid.name), &intro, &figures, &body)
}
