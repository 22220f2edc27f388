//! What TxFlash's two cyclic commits, SCC (`crate::scc`) and BPCC
//! (`crate::bpcc`), share: the cycle itself. Every page of a transaction
//! names the next in its OOB (`link.rs`), the last names the first, and a
//! transaction is committed iff its cycle is complete on flash. To name the
//! next page, the device holds each transaction's newest page back in DRAM
//! until its next command (`open.rs`), and programs it then (`device.rs`).
//!
//! What makes each protocol itself stays in its own folder: its full OOB
//! layout, the rule that keeps an aborted transaction's broken cycle from
//! looking complete (SCC erases it before a newer version is written; BPCC
//! writes back pointers and pins the pages that carry them) and recovery.

mod device;
pub mod link;
mod open;
pub mod summary;

pub(crate) use device::{begin, commit, read_tx, write_tx, CycleHooks};
pub use link::{PageLink, LINK_BYTES};
pub(crate) use open::{OpenTx, OpenTxs, Version};

use txftl_ftl::BlockId;
use txftl_nand::Geometry;

/// Every block: a cyclic commit has no mapping table, so recovery scans the
/// whole device (`RecoveryHooks::zone_blocks`).
pub(crate) fn all_blocks(geo: &Geometry) -> Vec<BlockId> {
    (0..geo.block_count()).collect()
}

/// The `Device` methods both cyclic commits answer alike, inside their
/// `impl Device`: the device type must have a field `ftl: Ftl<H>` with
/// `H: CycleHooks`. What differs (a write outside transactions, abort,
/// stats) each protocol writes itself.
macro_rules! cycle_device_common {
    () => {
        fn flush(&mut self) -> txftl_ftl::Result<u64> {
            self.ftl.flush_all()
        }

        /// Refused: there is no mapping table to make a trim durable in.
        fn trim(&mut self, _lpn: txftl_ftl::Lpn) -> txftl_ftl::Result<u64> {
            Err(txftl_ftl::DeviceError::Unsupported {
                protocol: $crate::cycle::CycleHooks::txs(self.ftl.hooks()).protocol(),
                what: "trim (no mapping table to record it in)",
            })
        }

        fn begin(&mut self, tid: txftl_ftl::Tid) -> txftl_ftl::Result<u64> {
            $crate::cycle::begin(&mut self.ftl, tid)
        }

        /// The page is cached; the one cached before it is programmed,
        /// linking to it (`CycleHooks::before_new_version` and
        /// `CycleHooks::extra_for` add the protocol's part).
        fn write_tx(&mut self, tid: txftl_ftl::Tid, lpn: txftl_ftl::Lpn, data: &[u8]) -> txftl_ftl::Result<u64> {
            $crate::cycle::write_tx(&mut self.ftl, tid, lpn, data)
        }

        fn read_tx(&mut self, tid: txftl_ftl::Tid, lpn: txftl_ftl::Lpn, buf: &mut [u8]) -> txftl_ftl::Result<u64> {
            $crate::cycle::read_tx(&mut self.ftl, tid, lpn, buf)
        }

        /// Closes the cycle (`CycleHooks::committing` adds the protocol's part).
        fn commit(&mut self, tid: txftl_ftl::Tid) -> txftl_ftl::Result<u64> {
            $crate::cycle::commit(&mut self.ftl, tid)
        }
    };
}
pub(crate) use cycle_device_common;
