//! What an array says of itself: its configuration, operation counters,
//! clocks and power state.

use super::{Nand, NandConfig, NandStats};
use crate::geometry::Geometry;
use crate::timing::Timing;

impl Nand {
    pub fn config(&self) -> &NandConfig {
        &self.cfg
    }
    pub fn geometry(&self) -> &Geometry {
        &self.cfg.geometry
    }
    pub fn timing(&self) -> &Timing {
        &self.cfg.timing
    }
    pub fn stats(&self) -> NandStats {
        self.stats
    }
    pub fn reset_stats(&mut self) {
        self.stats = NandStats::default();
    }
    /// Operations issued since creation or the last `reset_op_count`.
    pub fn op_count(&self) -> u64 {
        self.op_count
    }
    pub fn reset_op_count(&mut self) {
        self.op_count = 0;
    }
    /// The time at which every die and channel is idle.
    pub fn all_idle_ns(&self) -> u64 {
        self.clocks.all_idle_ns()
    }
    pub fn is_powered(&self) -> bool {
        self.powered
    }
    pub fn has_image(&self) -> bool {
        self.image.is_some()
    }
    /// Is the array as shipped, every block erased and never programmed? True
    /// for a new array (in RAM or a new image file) until its first program,
    /// partial program or erase is issued (even one a power cut tears); false
    /// for an array opened from an image. An FTL that formats a fresh array
    /// may treat every block as erased.
    pub fn is_factory_fresh(&self) -> bool {
        self.factory_fresh
    }
}
