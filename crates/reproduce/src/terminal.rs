//! The terminal report's shared parts: a table helper for the papers'
//! figures, and the checks table at the end (fitted to the terminal's width,
//! or 120 columns when standard output is not a terminal), with its summary
//! line, then the notes, one paragraph a check, then the deviations.

use crate::check::{Check, Summary};
use comfy_table::{presets::UTF8_FULL_CONDENSED, ColumnConstraint, ContentArrangement, Table, Width};
use std::io::IsTerminal;

/// The width of the checks table when standard output is not a terminal.
pub const PIPE_WIDTH: u16 = 120;

/// A table with a header row, in the reports' style.
pub fn table(header: Vec<String>, rows: Vec<Vec<String>>) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(header);
    for r in rows {
        t.add_row(r);
    }
    t
}

/// The terminal's width in columns, or [`PIPE_WIDTH`] when standard output
/// is not a terminal (or its size is unknown).
pub fn width() -> u16 {
    let out = std::io::stdout();
    if !out.is_terminal() {
        return PIPE_WIDTH;
    }
    terminal_size::terminal_size_of(&out).map_or(PIPE_WIDTH, |(w, _)| w.0)
}

/// The checks table, `width` columns wide at most: per check its id with
/// what it compares under it, the paper's figure, ours, the kind and the
/// verdict (the notes are not in it).
pub fn checks_table(checks: &[Check], width: u16) -> Table {
    let rows = checks
        .iter()
        .map(|c| {
            vec![
                format!("{}\n{}", c.id, c.what),
                c.show_paper(),
                c.show(&c.measured),
                c.kind.name().to_string(),
                c.verdict().to_string(),
            ]
        })
        .collect();
    let header = ["check: what it compares", "paper", "measured", "kind", "within 25%"]
        .map(String::from)
        .to_vec();
    let mut t = table(header, rows);
    t.set_content_arrangement(ContentArrangement::Dynamic).set_width(width);
    // Kind and verdict are short, the figures at most 15% each: the rest
    // of the width goes to the check.
    let constraints = [
        (1, ColumnConstraint::UpperBoundary(Width::Percentage(15))),
        (2, ColumnConstraint::UpperBoundary(Width::Percentage(15))),
        (3, ColumnConstraint::ContentWidth),
        (4, ColumnConstraint::ContentWidth),
    ];
    for (i, c) in constraints {
        if let Some(col) = t.column_mut(i) {
            col.set_constraint(c);
        }
    }
    t
}

/// The checks section as printed: the table, the summary line, then a
/// paragraph per check with a note (its id first), then the deviations.
pub fn checks_section(checks: &[Check], deviations: &[String], width: u16) -> String {
    let mut s = format!("Checks\n{}\n", checks_table(checks, width));
    s += &paragraph(&Summary::of(checks).line, "  ", width);
    let notes: Vec<String> = checks
        .iter()
        .filter(|c| !c.note.is_empty())
        .map(|c| paragraph(&format!("{}: {}", c.id, c.note), "", width))
        .collect();
    if !notes.is_empty() {
        s += &format!("\nnotes:\n{}", notes.join("\n"));
    }
    if !deviations.is_empty() {
        let d: Vec<String> = deviations.iter().map(|d| paragraph(&format!("- {d}"), "  ", width)).collect();
        s += &format!("\ndeviations:\n{}", d.join("\n"));
    }
    s
}

/// `text` wrapped at `width` columns (words kept whole), later lines
/// indented by `indent`.
fn paragraph(text: &str, indent: &str, width: u16) -> String {
    let width = (width as usize).max(40);
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            out += &line;
            out.push('\n');
            line = indent.to_string();
        } else if !line.is_empty() && line != indent {
            line.push(' ');
        }
        line += word;
    }
    out += &line;
    out + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Unit;

    #[test]
    fn the_table_fits_and_the_notes_follow_it() {
        let mut c = Check::value("fig.one", "a quantity", 10.0, 20.0, Unit::Count);
        c.note = "word ".repeat(200);
        let s = checks_section(
            &[c, Check::structural("fig.two", "zero", 0.0, 0.0, Unit::Percent)],
            &["a deviation".into()],
            80,
        );
        for line in s.lines() {
            assert!(line.chars().count() <= 80, "{} columns: {line}", line.chars().count());
        }
        let notes = s.find("notes:").unwrap();
        assert!(s.find("Checks").unwrap() < notes);
        assert!(s[notes..].contains("fig.one: word word"));
        let words = s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words.contains(
            "0 of 1 value/bound/order checks within 25%: measured (value/bound) 0 of 1, order 0 of 0 (structural, not counted: fig.two)"
        ));
        assert!(s.contains("not counted"));
        assert!(s.contains("- a deviation"));
    }
}
