//! The generator's shape beside the paper's: pages read and written per
//! transaction and profile, and the working set the clients keep in flight
//! against the buffer pool (sec. 5.1: fewer than 50 pages a transaction, 50
//! transactions x 50 pages = a 2,500-page working set, of which the
//! 512-page buffer holds about 20%).

use crate::config::DbmsConfig;
use crate::error::Result;
use crate::tpcc::{Generator, Layout, Profile};
use serde::Serialize;
use std::collections::BTreeSet;

/// What sec. 5.1 states of its trace.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct PaperShape {
    /// "each TPC-C transaction accesses less than 50 pages on average".
    pub pages_per_tx_below: u32,
    /// "50 concurrent transactions x 50 pages/transaction = 2,500 pages".
    pub working_set_pages: u32,
    pub buffer_pages: u32,
    /// "able to hold about 20 percent of our TPC-C working set".
    pub buffer_share: f64,
}

pub const PAPER: PaperShape = PaperShape {
    pages_per_tx_below: 50,
    working_set_pages: 2_500,
    buffer_pages: 512,
    buffer_share: 0.2,
};

#[derive(Clone, Debug, Serialize)]
pub struct ProfileShape {
    pub profile: &'static str,
    /// Of the transactions drawn.
    pub share: f64,
    /// Distinct pages only read, and written (a page read then written
    /// counts as written), per transaction.
    pub mean_pages_read: f64,
    pub mean_pages_written: f64,
    pub max_pages: u32,
    /// Transactions the page cap cut.
    pub truncated_share: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct TpccShape {
    pub warehouses: u32,
    /// The layout's size against the full-size database's.
    pub scale: f64,
    pub db_pages: u32,
    /// Pages per table, in table order.
    pub tables: Vec<(&'static str, u32)>,
    pub samples: u32,
    pub profiles: Vec<ProfileShape>,
    pub mean_pages_per_tx: f64,
    pub max_pages_per_tx: u32,
    /// Distinct pages the samples touched.
    pub distinct_pages_touched: u32,
    /// Clients x mean pages per transaction: the paper's working set.
    pub working_set_pages: f64,
    pub buffer_pages: u32,
    /// The buffer against that working set.
    pub buffer_share: f64,
    pub paper: PaperShape,
}

/// Draws `samples` plans as a run with `cfg` would (its seed, its layout)
/// and measures them.
pub fn shape(cfg: &DbmsConfig, samples: u32) -> Result<TpccShape> {
    cfg.validate()?;
    let layout = Layout::new(cfg.warehouses, cfg.db_pages)?;
    let tables = layout.tables.iter().map(|t| (t.table.name(), t.pages)).collect();
    let (scale, db_pages) = (layout.scale, layout.pages);
    let mut gen = Generator::new(layout, cfg.seed, cfg.abort_pct, cfg.max_pages_per_tx).with_pages_written(cfg.pages_written);
    let plans: Vec<_> = (0..samples).map(|_| gen.next_plan()).collect();
    let n = plans.len().max(1) as f64;
    let touched: BTreeSet<u32> = plans.iter().flat_map(|p| p.accesses.iter().map(|a| a.page)).collect();
    let sizes: Vec<(u32, u32)> = plans.iter().map(|p| p.pages_read_written()).collect();
    let mean_pages = sizes.iter().map(|&(r, w)| (r + w) as f64).sum::<f64>() / n;
    let profiles = Profile::ALL
        .iter()
        .map(|&profile| {
            let of: Vec<usize> = (0..plans.len()).filter(|&i| plans[i].profile == profile).collect();
            let k = of.len().max(1) as f64;
            ProfileShape {
                profile: profile.name(),
                share: of.len() as f64 / n,
                mean_pages_read: of.iter().map(|&i| sizes[i].0 as f64).sum::<f64>() / k,
                mean_pages_written: of.iter().map(|&i| sizes[i].1 as f64).sum::<f64>() / k,
                max_pages: of.iter().map(|&i| sizes[i].0 + sizes[i].1).max().unwrap_or(0),
                truncated_share: of.iter().filter(|&&i| plans[i].truncated > 0).count() as f64 / k,
            }
        })
        .collect();
    let working_set = cfg.clients as f64 * mean_pages;
    Ok(TpccShape {
        warehouses: cfg.warehouses,
        scale,
        db_pages,
        tables,
        samples,
        profiles,
        mean_pages_per_tx: mean_pages,
        max_pages_per_tx: sizes.iter().map(|&(r, w)| r + w).max().unwrap_or(0),
        distinct_pages_touched: touched.len() as u32,
        working_set_pages: working_set,
        buffer_pages: cfg.buffer_pages,
        buffer_share: if working_set > 0.0 {
            cfg.buffer_pages as f64 / working_set
        } else {
            0.0
        },
        paper: PAPER,
    })
}

impl std::fmt::Display for TpccShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "TPC-C, {} warehouses in {} DB pages (scale {:.5} of the full-size heap)",
            self.warehouses, self.db_pages, self.scale
        )?;
        let tables: Vec<String> = self.tables.iter().map(|(t, p)| format!("{t} {p}")).collect();
        writeln!(f, "  pages per table: {}", tables.join(", "))?;
        writeln!(
            f,
            "  {:<13} {:>6} {:>10} {:>13} {:>9} {:>8}",
            "profile", "share", "pages read", "pages written", "max pages", "cut"
        )?;
        for p in &self.profiles {
            writeln!(
                f,
                "  {:<13} {:>5.1}% {:>10.1} {:>13.1} {:>9} {:>7.1}%",
                p.profile,
                p.share * 100.0,
                p.mean_pages_read,
                p.mean_pages_written,
                p.max_pages,
                p.truncated_share * 100.0
            )?;
        }
        writeln!(f, "  {:<34} {:>12} {:>12}", "", "this run", "paper")?;
        let row =
            |f: &mut std::fmt::Formatter<'_>, what: &str, ours: String, paper: String| writeln!(f, "  {what:<34} {ours:>12} {paper:>12}");
        row(
            f,
            "pages per transaction (mean / max)",
            format!("{:.1} / {}", self.mean_pages_per_tx, self.max_pages_per_tx),
            format!("< {}", self.paper.pages_per_tx_below),
        )?;
        row(
            f,
            "working set (clients x pages/tx)",
            format!("{:.0}", self.working_set_pages),
            self.paper.working_set_pages.to_string(),
        )?;
        row(
            f,
            "buffer pages / share of working set",
            format!("{} / {:.0}%", self.buffer_pages, self.buffer_share * 100.0),
            format!("{} / {:.0}%", self.paper.buffer_pages, self.paper.buffer_share * 100.0),
        )?;
        write!(
            f,
            "  distinct pages touched by {} transactions: {}",
            self.samples, self.distinct_pages_touched
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_shape_stays_under_the_papers_cap() {
        let s = shape(&DbmsConfig::default(), 2_000).unwrap();
        assert!(s.max_pages_per_tx < PAPER.pages_per_tx_below, "{s}");
        let share: f64 = s.profiles.iter().map(|p| p.share).sum();
        assert!((share - 1.0).abs() < 1e-9);
        assert!(s.working_set_pages > 0.0 && s.distinct_pages_touched > 0);
        assert!(s.to_string().contains("working set"));
    }
}
