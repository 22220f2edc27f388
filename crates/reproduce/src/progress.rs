//! The progress bar of a run (indicatif on standard error), hidden unless
//! the caller asks for it (`Output::show_progress`: the CLI shows it unless
//! it prints JSON; tests never do).

use crate::Error;
use indicatif::{ProgressBar, ProgressStyle};

pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar of `steps` runs, drawn if `show`.
    pub fn new(show: bool, steps: u64) -> Result<Progress, Error> {
        let bar = if show { ProgressBar::new(steps) } else { ProgressBar::hidden() };
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} runs ({elapsed})")
                .map_err(Error::failed)?
                .progress_chars("=> "),
        );
        Ok(Progress { bar })
    }

    /// A bar nobody sees.
    pub fn hidden() -> Progress {
        Progress {
            bar: ProgressBar::hidden(),
        }
    }

    /// Sets the bar's length (the runs a paper will make), once it knows them.
    pub fn set_steps(&self, steps: u64) {
        self.bar.set_length(steps);
    }

    /// What runs now.
    pub fn say(&self, msg: impl Into<String>) {
        self.bar.set_message(msg.into());
    }

    /// What the bar says now.
    pub fn said(&self) -> String {
        self.bar.message()
    }

    /// One run done.
    pub fn step(&self) {
        self.bar.inc(1);
    }

    /// Redraws the bar every 200 ms (for a long step with no progress of its own).
    pub fn tick(&self) {
        self.bar.enable_steady_tick(std::time::Duration::from_millis(200));
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
