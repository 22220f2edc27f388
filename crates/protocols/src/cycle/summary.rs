//! The `summary-pages` option SCC and BPCC share (TxFlash's per-block
//! summary pages, the framework's `summary.rs`), and the root byte that
//! records it at format so every later mount reads the layout the device
//! was written with, whatever options it is given.
//!
//! # Root (the protocol's bytes in every superblock)
//!
//! ```text
//!  0  u8  summary pages: 0 off, 1 on (every data block's last page)
//! ```
//!
//! An empty root is a device formatted before the option existed: off.

use crate::{OptionSpec, ProtocolOptions};
use txftl_ftl::{DeviceError, Result};

pub const SUMMARY_PAGES: OptionSpec = OptionSpec {
    key: "summary-pages",
    value_name: "0|1",
    help: "1: the last page of every data block is a summary page holding the OOB records of the block's \
           other pages, so recovery reads one page of a full block instead of each (TxFlash's summary pages, \
           LightTx §IV-D); costs one program per block. Taken at format, recorded on the device [default: 0]",
    min: 0,
    max: 1,
};

/// Off unless asked for. The papers' SCC and BPCC used summary pages, but a
/// device's layout changes with them (a page a block, 1/8 of a block on the
/// `tiny` crash geometry): the figures and crash sets recorded so far were
/// made without, and a reproduction asks for them by name.
pub fn summary_pages_option(opts: &ProtocolOptions) -> Result<bool> {
    Ok(opts.u32(&SUMMARY_PAGES)?.unwrap_or(0) == 1)
}

/// The root recording the layout (format in the module doc).
pub fn encode_root(summary_pages: bool) -> Vec<u8> {
    vec![summary_pages as u8]
}

/// The layout a root records; a root this code did not write is corruption.
pub fn decode_root(protocol: &str, root: &[u8]) -> Result<bool> {
    match root {
        [] | [0] => Ok(false),
        [1] => Ok(true),
        _ => Err(DeviceError::Corrupted(format!(
            "{protocol}'s root in the superblock is {root:?}: expected one byte, 0 or 1 (summary pages)"
        ))),
    }
}
