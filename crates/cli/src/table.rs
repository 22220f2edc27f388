//! Terminal tables, fitted to the output's width like the prose
//! (`txftl_reproduce::terminal`: `$COLUMNS`, else the terminal's width, else 100).

use comfy_table::CellAlignment;
use txftl_reproduce::terminal::Fitted;

/// An empty table in the reports' style, fitted to the output's width.
pub use txftl_reproduce::terminal::fitted;

/// A two-column table of named figures, grouped under section rows.
pub struct Figures {
    table: Fitted,
}

impl Figures {
    pub fn new(title: &str) -> Figures {
        let mut table = fitted();
        table.set_header(vec![title, ""]);
        Figures { table }
    }
    pub fn section(&mut self, name: &str) -> &mut Self {
        self.table.add_row(vec![format!("[{name}]"), String::new()]);
        self
    }
    pub fn row(&mut self, name: &str, value: impl ToString) -> &mut Self {
        self.table.add_row(vec![format!("  {name}"), value.to_string()]);
        if let Some(col) = self.table.column_mut(1) {
            col.set_cell_alignment(CellAlignment::Right);
        }
        self
    }
    pub fn print(&self) {
        println!("{}", self.table);
    }
}

/// 1234567 -> "1,234,567" (the reproductions' helper).
pub use txftl_reproduce::fmt::thousands;

/// Two counts as `a / b`, each with thousands separators.
pub fn pair(a: u64, b: u64) -> String {
    format!("{} / {}", thousands(a), thousands(b))
}

/// Simulated nanoseconds, readable.
pub fn sim_time(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns} ns"),
        1_000..1_000_000 => format!("{:.1} us", ns as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.3} ms", ns as f64 / 1e6),
        _ => format!("{:.3} s", ns as f64 / 1e9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(100), "100");
        assert_eq!(sim_time(3_500_000), "3.500 ms");
    }
}
