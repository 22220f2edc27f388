//! The terminal report's shared parts: the output's width ([`width`]), the
//! one helper that wraps prose to it ([`wrap`], [`wrapln!`](crate::wrapln)),
//! the tables fitted to it ([`fitted`], [`table`]), and the checks table at
//! the end with its summary line, then the notes, one paragraph a check,
//! then the deviations. The CLI prints through the same helpers.

use crate::check::{Check, Summary};
use comfy_table::{presets::UTF8_FULL_CONDENSED, ColumnConstraint, ContentArrangement, Table, Width};
use std::io::IsTerminal;

/// The output's width when `COLUMNS` is not set (or not a number) and
/// standard output is not a terminal (piped, redirected).
pub const PIPE_WIDTH: u16 = 100;

/// The width the terminal output fits, in columns: `$COLUMNS` if it is set
/// and a number, else the terminal's width if standard output is a
/// terminal, else [`PIPE_WIDTH`].
pub fn width() -> u16 {
    let out = std::io::stdout();
    let terminal = if out.is_terminal() {
        terminal_size::terminal_size_of(&out).map(|(w, _)| w.0)
    } else {
        None
    };
    width_from(std::env::var("COLUMNS").ok().as_deref(), terminal)
}

/// [`width`]'s rule: `columns` (the value of `COLUMNS`) if it is a positive
/// number (at most `u16::MAX`), else `terminal` (the terminal's width, `None`
/// when standard output is not one), else [`PIPE_WIDTH`].
pub fn width_from(columns: Option<&str>, terminal: Option<u16>) -> u16 {
    let columns = columns
        .and_then(|c| c.trim().parse::<u64>().ok())
        .map(|c| c.min(u64::from(u16::MAX)) as u16);
    columns.filter(|&w| w > 0).or(terminal.filter(|&w| w > 0)).unwrap_or(PIPE_WIDTH)
}

/// `text` wrapped at `width` columns, line by line (a line that fits is
/// kept as it is; words are never broken, so a word longer than the width
/// stands alone on its line). A wrapped line's continuations keep its
/// indentation, and a list item's ("- " after the indentation) are indented
/// under the item's text. The result ends with no newline unless `text` does.
pub fn wrap(text: &str, width: u16) -> String {
    let width = usize::from(width.max(1));
    let lines: Vec<String> = text.split('\n').map(|line| wrap_line(line, width)).collect();
    lines.join("\n")
}

fn wrap_line(line: &str, width: usize) -> String {
    let body = line.trim_start();
    let indent = &line[..line.len() - body.len()];
    let hang = if body.starts_with("- ") {
        format!("{indent}  ")
    } else {
        indent.to_string()
    };
    let options = textwrap::Options::new(width)
        .initial_indent(indent)
        .subsequent_indent(&hang)
        .break_words(false)
        .word_splitter(textwrap::WordSplitter::NoHyphenation);
    textwrap::fill(body.trim_end(), options)
}

/// A line holding a shell command (a violation's replay line) wrapped like
/// [`wrap`], each break ending in a shell line continuation (a backslash), so that
/// the command still pastes as one.
pub fn wrap_command(line: &str, width: u16) -> String {
    let lines: Vec<String> = wrap(line, width.saturating_sub(2)).lines().map(String::from).collect();
    lines.join(" \\\n")
}

/// `println!` for prose: the formatted text [wrapped](terminal::wrap) to
/// the output's [width](terminal::width). Tables are printed with
/// `println!` (they fit themselves: [`fitted`](terminal::fitted)).
#[macro_export]
macro_rules! wrapln {
    ($($arg:tt)*) => {
        ::std::println!(
            "{}",
            $crate::terminal::wrap(&::std::format!($($arg)*), $crate::terminal::width())
        )
    };
}

/// A table in the reports' style, fitted to a width (the output's
/// [`width`] unless [`set_width`](Table::set_width) says otherwise):
/// comfy-table wraps its cells at spaces when a row would be wider, and
/// never narrows a column below its longest word (an upper boundary set on
/// a column is raised to it; other constraints are kept), so that words
/// and figures stay whole. A table whose words do not fit side by side is
/// wider than the width.
#[derive(Clone, Debug)]
pub struct Fitted(Table);

impl std::ops::Deref for Fitted {
    type Target = Table;
    fn deref(&self) -> &Table {
        &self.0
    }
}

impl std::ops::DerefMut for Fitted {
    fn deref_mut(&mut self) -> &mut Table {
        &mut self.0
    }
}

impl std::fmt::Display for Fitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut t = self.0.clone();
        let mut longest: Vec<usize> = Vec::new();
        for row in t.header().into_iter().chain(t.row_iter()) {
            for (i, cell) in row.cell_iter().enumerate() {
                let word = cell.content().split_whitespace().map(textwrap::core::display_width).max();
                if longest.len() <= i {
                    longest.resize(i + 1, 0);
                }
                longest[i] = longest[i].max(word.unwrap_or(0));
            }
        }
        // The cells' room: the width less the borders (the reports' style
        // draws one at each side and one between columns).
        let room = usize::from(t.width().unwrap_or(u16::MAX)).saturating_sub(longest.len() + 1);
        let absolute = |w: &Width| match *w {
            Width::Fixed(w) => w,
            Width::Percentage(p) => u16::try_from(room * usize::from(p.min(100)) / 100).unwrap_or(u16::MAX),
        };
        for (i, word) in longest.into_iter().enumerate() {
            let Some(col) = t.column_mut(i) else { continue };
            // The boundaries count the column's padding.
            let word = u16::try_from(word).unwrap_or(u16::MAX).saturating_add(col.padding_width());
            let keep_words = match col.constraint() {
                None => ColumnConstraint::LowerBoundary(Width::Fixed(word)),
                Some(ColumnConstraint::UpperBoundary(upper)) => ColumnConstraint::Boundaries {
                    lower: Width::Fixed(word),
                    upper: Width::Fixed(absolute(upper).max(word)),
                },
                Some(_) => continue,
            };
            col.set_constraint(keep_words);
        }
        write!(f, "{t}")
    }
}

/// An empty [`Fitted`] table in the reports' style.
pub fn fitted() -> Fitted {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(width());
    Fitted(t)
}

/// A [`Fitted`] table with a header row, in the reports' style.
pub fn table(header: Vec<String>, rows: Vec<Vec<String>>) -> Fitted {
    let mut t = fitted();
    t.set_header(header);
    for r in rows {
        t.add_row(r);
    }
    t
}

/// The checks table, `width` columns wide at most: per check its id with
/// what it compares under it, the paper's figure, ours, the kind and the
/// verdict with a miss's class (the notes are not in it).
pub fn checks_table(checks: &[Check], width: u16) -> Fitted {
    let rows = checks
        .iter()
        .map(|c| {
            vec![
                format!("{}\n{}", c.id, c.what),
                c.show_paper(),
                c.show(&c.measured),
                c.kind.name().to_string(),
                c.verdict_class(),
            ]
        })
        .collect();
    let header = ["check: what it compares", "paper", "measured", "kind", "within 25%"]
        .map(String::from)
        .to_vec();
    let mut t = table(header, rows);
    t.set_width(width);
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

/// The host profile's sweep (`HostSweep`): per check whose figure moves with
/// the host's prices, its figure and verdict at each scale.
pub fn host_sweep_section(rows: &[crate::check::HostSweep], checks: &[Check], width: u16) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let scales: Vec<f64> = rows[0].scales.clone();
    let mut header = vec!["check (host prices x)".to_string()];
    header.extend(scales.iter().map(|s| format!("x{s}")));
    let body = rows
        .iter()
        .map(|r| {
            let mut row = vec![r.id.clone()];
            row.extend(r.cells(checks.iter().find(|c| c.id == r.id)));
            row
        })
        .collect();
    let mut t = table(header, body);
    t.set_width(width);
    let agree: Vec<String> = scales
        .iter()
        .enumerate()
        .map(|(i, s)| format!("x{s}: {}", rows.iter().filter(|r| r.within_25pct[i] == Some(true)).count()))
        .collect();
    let line = format!(
        "Host profile sweep: the checks whose figure moves with the host's prices, each at every price x0.5, x1, x2 (within 25%: {})",
        agree.join(", ")
    );
    format!("\n{}\n{t}\n", wrap(&line, width))
}

/// The checks section as printed: the table, the summary line, then a
/// paragraph per check with a note (its id first), then the deviations.
pub fn checks_section(checks: &[Check], deviations: &[String], width: u16) -> String {
    let mut s = format!("Checks\n{}\n", checks_table(checks, width));
    s += &wrap(&Summary::of(checks).line, width);
    s.push('\n');
    let notes: Vec<String> = checks
        .iter()
        .filter(|c| !c.note.is_empty())
        .map(|c| {
            let class = c.miss_class().map(|k| format!(" ({})", k.name())).unwrap_or_default();
            wrap(&format!("{}{class}: {}", c.id, c.note), width) + "\n"
        })
        .collect();
    if !notes.is_empty() {
        s += &format!("\nnotes:\n{}", notes.join("\n"));
    }
    if !deviations.is_empty() {
        let d: Vec<String> = deviations.iter().map(|d| wrap(&format!("- {d}"), width) + "\n").collect();
        s += &format!("\ndeviations:\n{}", d.join("\n"));
    }
    s
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
            "0 of 1 value/bound/order checks within 25%: measured (value/bound) 0 of 1, order 0 of 0; misses: setup 0, \
             paper 0, host 0, model 0, unclassified 1 (structural, not counted: fig.two)"
        ));
        assert!(s.contains("not counted"));
        assert!(s.contains("- a deviation"));
    }

    #[test]
    fn the_width_is_columns_then_the_terminal_then_100() {
        assert_eq!(width_from(Some("160"), Some(80)), 160);
        assert_eq!(width_from(Some(" 72 "), None), 72);
        assert_eq!(width_from(Some("999999"), None), u16::MAX);
        // Not a number, or zero: the terminal's width, else 100.
        for columns in [None, Some(""), Some("wide"), Some("-5"), Some("80x"), Some("0")] {
            assert_eq!(width_from(columns, Some(132)), 132, "{columns:?}");
            assert_eq!(width_from(columns, None), 100, "{columns:?}");
        }
        assert_eq!(width_from(None, Some(0)), PIPE_WIDTH);
    }

    #[test]
    fn wrap_keeps_words_and_indentation() {
        let text = "a b ccc dddd eeeee ffffff";
        assert_eq!(wrap(text, 100), text);
        assert_eq!(wrap(text, 10), "a b ccc\ndddd eeeee\nffffff");
        // A list item hangs under its text; an indented line keeps its indentation.
        assert_eq!(wrap("  - one two three four", 12), "  - one two\n    three\n    four");
        assert_eq!(wrap("   one two three", 10), "   one two\n   three");
        // A word longer than the width stands alone, whole.
        assert_eq!(wrap("x averyveryverylongword y", 8), "x\naveryveryverylongword\ny");
        // Lines are wrapped one by one; empty lines and the last newline stay.
        assert_eq!(wrap("one two\n\nthree four\n", 5), "one\ntwo\n\nthree\nfour\n");
        // Hyphenated words stay whole.
        assert_eq!(wrap("an Atomic-Write commit", 12), "an\nAtomic-Write\ncommit");
        // Widths are counted in characters, not bytes.
        assert_eq!(wrap("Möbius Möbius", 6), "Möbius\nMöbius");
        for line in wrap(&"word ".repeat(100), 33).lines() {
            assert!(line.chars().count() <= 33, "{line}");
        }
    }

    #[test]
    fn a_wrapped_command_pastes_as_one() {
        let line = "  replay: txftl crashtest --protocol xftl --ops 100 --at 42 --torn none";
        assert_eq!(wrap_command(line, 100), line);
        let w = wrap_command(line, 40);
        assert_eq!(w, "  replay: txftl crashtest --protocol \\\n  xftl --ops 100 --at 42 --torn none");
        assert!(w.lines().all(|l| l.chars().count() <= 40));
        assert_eq!(w.replace(" \\\n  ", " "), line);
    }

    #[test]
    fn a_fitted_table_wraps_its_cells() {
        let long = "cell ".repeat(60);
        let mut t = table(vec!["name".into(), "value".into()], vec![vec!["x".into(), long]]);
        t.set_width(60);
        for line in t.to_string().lines() {
            assert!(line.chars().count() <= 60, "{} columns: {line}", line.chars().count());
        }
        // Too many words side by side: the columns keep their words whole
        // (wider than the width), and a figure is never split.
        let header: Vec<String> = (0..8).map(|i| format!("column{i}")).collect();
        let mut t = table(header, vec![(0..8).map(|_| "1,234,567 of 7,654,321".to_string()).collect()]);
        t.set_width(60);
        let s = t.to_string();
        assert!(s.contains("1,234,567") && s.contains("column7"), "{s}");
        assert!(s.lines().all(|l| l.chars().count() <= 8 * 12 + 1), "{s}");
        // An upper boundary narrower than a word is raised to it.
        let prose = "words ".repeat(40);
        let mut t = table(
            vec!["check".into(), "figure".into()],
            vec![vec![prose, "at 8 of 20 interface-sizes".into()]],
        );
        t.set_width(60);
        if let Some(col) = t.column_mut(1) {
            col.set_constraint(ColumnConstraint::UpperBoundary(Width::Percentage(10)));
        }
        let s = t.to_string();
        assert!(s.contains("interface-sizes"), "{s}");
        assert!(s.lines().all(|l| l.chars().count() <= 60), "{s}");
    }
}
