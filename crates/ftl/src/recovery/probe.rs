//! Which protocol formatted a device: the name its newest intact superblock
//! records, read without mounting (nothing is written, no protocol's hooks
//! are needed), so a command on an existing image need not be told.

use crate::config::FtlConfig;
use crate::device::RecoveryReport;
use crate::error::Result;
use crate::ftl::Ftl;
use crate::hooks::{Capabilities, EventHooks, GcHooks, Hooks, PersistHooks, RecoveryHooks};
use crate::mapping::Dense;
use txftl_nand::Nand;

/// The framework with no protocol, only to read a superblock.
struct Reader;

impl Hooks for Reader {
    type Mapping = Dense;
    const CAPABILITIES: Capabilities = Capabilities::NONE;
    fn name(&self) -> &'static str {
        "(reader)"
    }
}
impl GcHooks for Reader {}
impl PersistHooks for Reader {}
impl RecoveryHooks for Reader {}
impl EventHooks for Reader {}

/// The protocol name the newest intact superblock of `nand` records
/// (`NotFormatted` if there is none), and the NAND back, as it was.
pub fn formatted_protocol(nand: Nand) -> (Result<String>, Nand) {
    let cfg = FtlConfig {
        read_only: true,
        ..FtlConfig::default()
    };
    let mut ftl = match Ftl::empty(nand, cfg, Reader) {
        Ok(f) => f,
        Err((e, nand)) => return (Err(e), *nand),
    };
    let mut report = RecoveryReport::default();
    let mut at_ns = 0;
    let name = ftl.find_superblock(&mut report, &mut at_ns).map(|(sb, _)| sb.protocol);
    (name, ftl.into_nand())
}
