//! The device clock: reading it, and waiting on it.

use super::Ftl;
use crate::hooks::Hooks;

impl<H: Hooks> Ftl<H> {
    /// Waits until every die and channel is idle (every program issued is done).
    pub fn wait_idle(&mut self) -> u64 {
        let start = self.now_ns;
        self.now_ns = self.now_ns.max(self.nand.all_idle_ns());
        self.now_ns - start
    }

    /// Waits until `t_ns` on the device clock (a protocol waiting for the
    /// programs of one transaction, not for every die).
    pub fn wait_until(&mut self, t_ns: u64) -> u64 {
        let start = self.now_ns;
        self.now_ns = self.now_ns.max(t_ns);
        self.now_ns - start
    }

    /// The device clock, ns.
    pub fn now(&self) -> u64 {
        self.now_ns
    }
}
