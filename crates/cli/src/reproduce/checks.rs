//! The checks of a reproduction (REPRODUCE.md): one number the paper states
//! beside ours for the same quantity, and whether they agree within 25%.
//! Paper-independent, so every `txftl reproduce <paper>` builds its summary
//! from the same type.

use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use serde::Serialize;

/// How `paper` and `measured` are compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Numbers: same sign and abs(measured / paper - 1) <= 0.25.
    Value,
    /// An ordering or sign the paper claims: equal strings.
    Order,
}

/// The paper's unit, kept as the paper states the number (a percentage is
/// never turned into a ratio).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Percent,
    Factor,
    Ms,
    // REPRODUCE.md's unit for seconds; no X-FTL check is in seconds.
    #[allow(dead_code)]
    S,
    Count,
    Ratio,
    /// For `order` checks.
    Order,
}

impl Unit {
    fn format(self, v: f64) -> String {
        match self {
            Unit::Percent => format!("{v:+.1}%"),
            Unit::Factor => format!("{v:.2}x"),
            Unit::Ms => format!("{v:.1} ms"),
            Unit::S => format!("{v:.2} s"),
            Unit::Count => crate::table::thousands(v.round() as u64),
            Unit::Ratio => format!("{v:.3}"),
            Unit::Order => String::new(),
        }
    }
}

/// A number (or an ordering) as a check holds it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Figure {
    Number(f64),
    Order(String),
}

#[derive(Clone, Debug, Serialize)]
pub struct Check {
    pub id: String,
    pub what: String,
    pub paper: Figure,
    pub measured: Figure,
    pub unit: Unit,
    pub kind: Kind,
    pub within_25pct: bool,
    /// Where they differ: the measured reason.
    pub note: String,
}

impl Check {
    /// A value check; `within_25pct` is computed here from the two numbers.
    pub fn value(id: &str, what: &str, paper: f64, measured: f64, unit: Unit) -> Check {
        Check {
            id: id.into(),
            what: what.into(),
            paper: Figure::Number(paper),
            measured: Figure::Number(measured),
            unit,
            kind: Kind::Value,
            within_25pct: within_25pct(paper, measured),
            note: String::new(),
        }
    }

    /// An ordering check: the orderings as strings, equal or not.
    pub fn order(id: &str, what: &str, paper: &str, measured: &str) -> Check {
        Check {
            id: id.into(),
            what: what.into(),
            paper: Figure::Order(paper.into()),
            measured: Figure::Order(measured.into()),
            unit: Unit::Order,
            kind: Kind::Order,
            within_25pct: paper == measured,
            note: String::new(),
        }
    }

    pub fn show(&self, f: &Figure) -> String {
        match f {
            Figure::Number(v) => self.unit.format(*v),
            Figure::Order(s) => s.clone(),
        }
    }
}

/// Same sign as the paper and within 25% of it.
pub fn within_25pct(paper: f64, measured: f64) -> bool {
    if paper == 0.0 {
        return measured == 0.0;
    }
    paper.signum() == measured.signum() && (measured / paper - 1.0).abs() <= 0.25
}

/// An ordering of named values, largest first, as "A > B > C" (ties "=").
pub fn ordering(items: &[(&str, f64)]) -> String {
    let mut v: Vec<(&str, f64)> = items.to_vec();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut s = String::new();
    for (i, (name, x)) in v.iter().enumerate() {
        if i > 0 {
            s += if *x == v[i - 1].1 { " = " } else { " > " };
        }
        s += name;
    }
    s
}

/// "N of M within 25%".
pub fn summary(checks: &[Check]) -> String {
    format!(
        "{} of {} within 25%",
        checks.iter().filter(|c| c.within_25pct).count(),
        checks.len()
    )
}

/// The checks table for the terminal, then where the run departs from the
/// paper's setup, one a line.
pub fn print_with_deviations(checks: &[Check], deviations: &[String]) {
    print(checks);
    if !deviations.is_empty() {
        println!("deviations:");
        for d in deviations {
            println!("  - {d}");
        }
    }
}

/// The checks table for the terminal.
fn print(checks: &[Check]) {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec!["check", "what", "paper", "measured", "within 25%", "note"]);
    for c in checks {
        t.add_row(vec![
            c.id.clone(),
            c.what.clone(),
            c.show(&c.paper),
            c.show(&c.measured),
            if c.within_25pct { "yes" } else { "no" }.to_string(),
            c.note.clone(),
        ]);
    }
    println!("Checks\n{t}");
    println!("{}", summary(checks));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_is_relative_and_signed() {
        assert!(within_25pct(130.0, 100.0));
        assert!(!within_25pct(130.0, 90.0));
        assert!(!within_25pct(1.5, -1.5));
        assert!(within_25pct(-10.0, -12.0));
        assert!(!within_25pct(0.0, 0.1));
    }

    #[test]
    fn orderings() {
        assert_eq!(ordering(&[("a", 1.0), ("b", 3.0), ("c", 2.0)]), "b > c > a");
        assert_eq!(ordering(&[("a", 1.0), ("b", 1.0)]), "a = b");
    }
}
