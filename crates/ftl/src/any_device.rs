//! The device interface as the host holds it: a device of any protocol,
//! boxed, that can also be cut (handed back as its NAND), closed, checked
//! and forked. The host stack takes devices as `Box<dyn AnyDevice>` and
//! never names a protocol; the registry (`txftl_protocols`) builds them.

use crate::entry::ProtocolEntry;
use crate::{Device, DeviceError, Ftl, Hooks, RecoveryReport};
use txftl_nand::Nand;

/// A device of any protocol, behind the device interface, that can also be
/// cut and handed back as its NAND.
pub trait AnyDevice: Device + Send {
    /// The registry entry of the device's protocol.
    fn entry(&self) -> &'static ProtocolEntry;
    fn check_invariants(&self) -> Result<(), String>;
    fn recovery_report(&self) -> Option<RecoveryReport>;
    /// Drops every piece of DRAM state and returns the NAND (a power cut).
    fn into_nand(self: Box<Self>) -> Nand;
    /// Clean shutdown: flush and checkpoint, then return the NAND.
    fn close(self: Box<Self>) -> Result<Nand, DeviceError>;
    fn nand(&self) -> &Nand;
    /// (min, max) erase counts over data blocks, as the FTL knows them.
    fn wear_spread(&self) -> (u32, u32);
    fn erase_counts(&self) -> Vec<u32>;
    /// Erase counts recorded in the last durable checkpoint.
    fn checkpoint_erase_counts(&self) -> Vec<u32>;
    /// The physical page the L2P maps `lpn` to (for checkers).
    fn mapping(&self, lpn: u32) -> Option<u32>;
    /// Arms a power cut on the live device's NAND.
    fn nand_mut(&mut self) -> &mut Nand;
    /// Does the device offer begin/commit/abort?
    fn transactional(&self) -> bool {
        self.entry().transactional
    }
    /// A copy of the live device, DRAM state and NAND (a RAM snapshot)
    /// alike, that goes on exactly as the original would: crash
    /// enumeration forks a run at a cut instead of replaying it from the
    /// start. `None`: the device cannot be copied.
    fn fork(&self) -> Option<Box<dyn AnyDevice>> {
        None
    }
    /// What the device promises a mount rebuilds from the NAND alone, as it
    /// stands between two host operations (`DurableState`): the crash
    /// harness mounts a copy of the NAND at every checkpoint of a run and
    /// compares. `None`: the device describes none.
    fn durable_state(&self) -> Option<DurableState> {
        None
    }
}

/// A canonical, comparable description of a device's durable protocol
/// state: named parts (the L2P, a protocol's pins, committed versions,
/// tables), each a list of lines in a fixed order. Only what a recovery
/// from the NAND alone must rebuild goes in: not open transactions (a cut
/// drops them), caches, or GC's bookkeeping.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DurableState {
    pub parts: Vec<DurablePart>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DurablePart {
    pub name: &'static str,
    /// Sorted when `at_least`; in the order given otherwise.
    pub lines: Vec<String>,
    /// The live device may hold more than a recovery rebuilds, never less
    /// (BPCC's pins: the live device still counts pages of a block waiting
    /// for its erase, which a recovery does not read).
    pub at_least: bool,
}

/// FNV-1a (64 bits) of a page's data. Not a CRC: the CRC-32 of a page
/// that ends in its own CRC-32, as every page the crash harness writes
/// does, is one constant (the CRC residue), so it would tell mapped from
/// unmapped but not one version from another.
pub fn page_hash(data: &[u8]) -> u64 {
    data.iter()
        .fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3))
}

/// Lines of a part shown around the first difference.
const DIFF_LINES_MAX: usize = 3;

impl DurableState {
    /// The L2P's mapped entries over `logical_pages`, each by a hash of the
    /// data its page holds on `nand` ([`page_hash`]), not by the page: a
    /// recovery may map a GC move's source, not yet erased, where the live
    /// device maps the copy (Möbius logs no GC move).
    pub fn with_mappings(nand: &Nand, logical_pages: u32, mapping: impl Fn(u32) -> Option<u32>) -> DurableState {
        let mut s = DurableState::default();
        let line = |lpn: u32, ppn: u32| format!("lpn {lpn}: data hash {:016x}", page_hash(&nand.inspect_data(ppn)));
        s.part(
            "mappings",
            (0..logical_pages).filter_map(|lpn| mapping(lpn).map(|ppn| line(lpn, ppn))),
        );
        s
    }

    /// Adds part `name`, its lines in the order given (canonical: the
    /// caller iterates an ordered collection); a recovery must rebuild it
    /// exactly.
    pub fn part(&mut self, name: &'static str, lines: impl IntoIterator<Item = String>) {
        self.push(name, lines.into_iter().collect(), false);
    }

    /// Adds part `name`, of which a recovery must rebuild no line the live
    /// device does not hold ([`DurablePart::at_least`]).
    pub fn part_at_least(&mut self, name: &'static str, lines: impl IntoIterator<Item = String>) {
        let mut lines: Vec<String> = lines.into_iter().collect();
        lines.sort_unstable();
        lines.dedup();
        self.push(name, lines, true);
    }

    fn push(&mut self, name: &'static str, lines: Vec<String>, at_least: bool) {
        debug_assert!(self.parts.iter().all(|p| p.name != name), "durable state part `{name}` added twice");
        self.parts.push(DurablePart { name, lines, at_least });
    }

    /// The first difference between the live device's state (`self`) and a
    /// recovered one's, named by part and line; `None` if they agree.
    pub fn diff(&self, recovered: &DurableState) -> Option<String> {
        let names = |s: &DurableState| s.parts.iter().map(|p| p.name).collect::<Vec<_>>();
        if names(self) != names(recovered) {
            return Some(format!("parts {:?} live, {:?} recovered", names(self), names(recovered)));
        }
        for (live, rec) in self.parts.iter().zip(&recovered.parts) {
            let name = live.name;
            if live.at_least {
                let missing: Vec<&str> = rec
                    .lines
                    .iter()
                    .filter(|l| live.lines.binary_search(l).is_err())
                    .map(String::as_str)
                    .collect();
                if let Some(first) = missing.first() {
                    return Some(format!(
                        "{name}: the recovery rebuilds {} the live device does not hold, first [{first}]",
                        missing.len()
                    ));
                }
                continue;
            }
            if live.lines == rec.lines {
                continue;
            }
            let (live, rec) = (&live.lines, &rec.lines);
            let i = live.iter().zip(rec).position(|(a, b)| a != b).unwrap_or(live.len().min(rec.len()));
            let show = |l: &[String]| {
                let shown: Vec<&str> = l.iter().skip(i).take(DIFF_LINES_MAX).map(String::as_str).collect();
                if shown.is_empty() {
                    "(end)".to_string()
                } else {
                    shown.join("; ")
                }
            };
            return Some(format!(
                "{name} differ at entry {i} of {} live, {} recovered: live [{}], recovered [{}]",
                live.len(),
                rec.len(),
                show(live),
                show(rec)
            ));
        }
        None
    }
}

/// A protocol whose device is the framework's FTL itself, with no wrapper
/// (`plain`): its hooks name its registry entry.
pub trait Registered {
    fn entry() -> &'static ProtocolEntry;
}

impl<H: Hooks + Registered + Clone + Send + 'static> AnyDevice for Ftl<H> {
    fn entry(&self) -> &'static ProtocolEntry {
        H::entry()
    }
    fn check_invariants(&self) -> Result<(), String> {
        Ftl::check_invariants(self)
    }
    fn recovery_report(&self) -> Option<RecoveryReport> {
        Ftl::recovery_report(self)
    }
    fn into_nand(self: Box<Self>) -> Nand {
        Ftl::into_nand(*self)
    }
    fn close(self: Box<Self>) -> Result<Nand, DeviceError> {
        Ftl::close(*self)
    }
    fn nand(&self) -> &Nand {
        Ftl::nand(self)
    }
    fn wear_spread(&self) -> (u32, u32) {
        Ftl::wear_spread(self)
    }
    fn erase_counts(&self) -> Vec<u32> {
        Ftl::erase_counts(self).to_vec()
    }
    fn checkpoint_erase_counts(&self) -> Vec<u32> {
        Ftl::checkpoint_erase_counts(self)
    }
    fn mapping(&self, lpn: u32) -> Option<u32> {
        Ftl::mapping(self, lpn)
    }
    fn nand_mut(&mut self) -> &mut Nand {
        Ftl::nand_mut(self)
    }
    fn fork(&self) -> Option<Box<dyn AnyDevice>> {
        Some(Box::new(self.clone()))
    }
    fn durable_state(&self) -> Option<DurableState> {
        Some(DurableState::with_mappings(Ftl::nand(self), self.logical_pages(), |lpn| {
            Ftl::mapping(self, lpn)
        }))
    }
}

/// What a mount hands back on failure: the error and the NAND (with whatever
/// the failed attempt did to it), so a cut recovery can be recovered again.
pub type MountFailure = (DeviceError, Box<Nand>);

#[cfg(test)]
mod tests {
    use super::*;

    /// Two pages that each end in their own CRC-32 hash apart (their CRC-32
    /// is the same residue for both).
    #[test]
    fn pages_ending_in_their_crc_hash_apart() {
        let page = |v: u8| {
            let mut p = vec![v; 64];
            let crc = crc32fast::hash(&p[..60]);
            p[60..].copy_from_slice(&crc.to_le_bytes());
            p
        };
        let (a, b) = (page(1), page(2));
        assert_eq!(crc32fast::hash(&a), crc32fast::hash(&b), "the residue");
        assert_ne!(page_hash(&a), page_hash(&b));
    }
}
