//! Figs. 7 and 8: compound writes of N pages (sec. V-A) through each
//! interface, random within the paper's 5 GB range or sequential, each
//! timed on the device clock from its submission to its acknowledgement,
//! averaged over the iterations. Between two compound writes the device
//! finishes everything (a flush): each starts on an idle device, as the
//! paper's one-at-a-time runs do.
//!
//! - DFTL, single process: the N pages written one after another, each
//!   submitted when the one before returned (QD 1).
//! - DFTL, libaio: the N pages submitted at one instant (`set_clock` to the
//!   same time before each); done when the last returns.
//! - DWRITE: the N pages as one dynamic transaction, HEAD, BODY..., REAR.
//! - S-SWRITE / A-SWRITE: one static transaction of the N pages; it returns
//!   once every page is on flash / once its inode is.

use super::params::Params;
use super::results::{CmtRun, Point};
use super::{Interface, Pattern};
use crate::device::{device_error, preconditioned};
use crate::Error;
use rand::seq::index::sample;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use txftl_ftl::extensions::{Call, DynamicPos, SwriteAck};
use txftl_protocols::{AnyDevice, ProtocolOptions};

/// The device an interface runs on: `dftl` or `mobius` on the preset at
/// the run's size, metadata only, empty, the same cache size for both.
pub fn device(params: &Params, interface: Interface) -> Result<Box<dyn AnyDevice>, Error> {
    let opts = ProtocolOptions::new().with("cmt-pages", params.cmt_pages);
    preconditioned(interface.protocol(), &params.preset(), &opts, 0)
}

/// The logical pages of one compound write of `n` pages: distinct, random
/// in the range, or the next `n` after `cursor`.
fn pages(params: &Params, pattern: Pattern, n: u32, rng: &mut ChaCha8Rng, cursor: &mut u32) -> Vec<u32> {
    match pattern {
        Pattern::Random => sample(rng, params.random_range_pages as usize, n as usize)
            .into_iter()
            .map(|i| i as u32)
            .collect(),
        Pattern::Sequential => {
            let start = *cursor;
            *cursor = (start + n) % params.random_range_pages;
            (0..n).map(|i| (start + i) % params.random_range_pages).collect()
        }
    }
}

/// One compound write of `lpns` through `interface`: its latency, ns.
fn compound(dev: &mut dyn AnyDevice, interface: Interface, lpns: &[u32], tid: u32) -> Result<u64, txftl_ftl::DeviceError> {
    let t0 = dev.now_ns();
    match interface {
        Interface::DftlSingle => {
            for &l in lpns {
                dev.write(l, &[])?;
            }
            Ok(dev.now_ns() - t0)
        }
        Interface::DftlAio => {
            let mut end = t0;
            for &l in lpns {
                dev.set_clock(t0);
                let t = dev.write(l, &[])?;
                end = end.max(t0 + t);
            }
            Ok(end - t0)
        }
        Interface::Dwrite => {
            for (i, &l) in lpns.iter().enumerate() {
                let pos = match i {
                    _ if i + 1 == lpns.len() => DynamicPos::Rear,
                    0 => DynamicPos::Head,
                    _ => DynamicPos::Body,
                };
                dev.call(Call::Dwrite { lpn: l, data: &[], pos })?;
            }
            Ok(dev.now_ns() - t0)
        }
        Interface::SSwrite | Interface::ASwrite => {
            let ack = if interface == Interface::SSwrite {
                SwriteAck::AllPages
            } else {
                SwriteAck::Record
            };
            let pages: Vec<(u32, &[u8])> = lpns.iter().map(|&l| (l, &[][..])).collect();
            dev.call(Call::Swrite { tid, pages: &pages, ack })
        }
    }
}

/// Every size of one interface and pattern, on one device.
pub fn run(params: &Params, interface: Interface, pattern: Pattern) -> Result<Vec<Point>, Error> {
    let mut dev = device(params, interface)?;
    let mut rng = ChaCha8Rng::seed_from_u64(params.head.seed ^ (pattern as u64) << 32);
    let mut cursor = 0;
    let mut out = Vec::new();
    let mut tid = 1;
    for &n in &params.sizes {
        let before = dev.stats();
        let mut total_ns = 0u64;
        for _ in 0..params.iterations {
            let lpns = pages(params, pattern, n, &mut rng, &mut cursor);
            total_ns += compound(&mut *dev, interface, &lpns, tid).map_err(device_error)?;
            tid += 1;
            // Everything done before the next compound write is submitted.
            dev.flush().map_err(device_error)?;
        }
        let after = dev.stats();
        let mean_ns = total_ns as f64 / params.iterations as f64;
        let bytes = n as f64 * dev.info().page_size as f64;
        let writes = (params.iterations * n) as f64;
        out.push(Point {
            interface: interface.key().into(),
            pattern: pattern.key().into(),
            pages: n,
            latency_us: mean_ns / 1e3,
            bandwidth_mb_s: bytes / (mean_ns / 1e9) / 1e6,
            map_reads_per_page: (after.map_reads - before.map_reads) as f64 / writes,
            programs_per_page: (after.flash_programs - before.flash_programs) as f64 / writes,
            checkpoints: after.checkpoints - before.checkpoints,
        });
    }
    Ok(out)
}

/// Fig. 7's random DFTL and DWRITE runs at each cache size of
/// `params.cmt_divisors` (a share of the table's pages); the run's own
/// size reuses `done`, the points already measured.
pub fn cmt_sweep(params: &Params, done: &[Point]) -> Result<Vec<CmtRun>, Error> {
    let geo = params.preset().geometry;
    let table_pages = txftl_protocols::dftl::table_pages(&geo);
    let interfaces = [Interface::DftlSingle, Interface::DftlAio, Interface::Dwrite];
    let mut out = Vec::new();
    let mut sizes: Vec<(u32, u32)> = params.cmt_divisors.iter().map(|&d| (d, (table_pages / d).max(1))).collect();
    // A small table rounds several shares to one size: run it once.
    sizes.dedup_by_key(|s| s.1);
    for (d, cmt_pages) in sizes {
        let points = if cmt_pages == params.cmt_pages {
            let swept = |p: &&Point| p.pattern == Pattern::Random.key() && interfaces.iter().any(|i| i.key() == p.interface);
            done.iter().filter(swept).cloned().collect()
        } else {
            let p = Params {
                cmt_pages,
                ..params.clone()
            };
            let mut points = Vec::new();
            for i in interfaces {
                points.extend(run(&p, i, Pattern::Random)?);
            }
            points
        };
        let share = if d == 1 { "all".to_string() } else { format!("1/{d}") };
        out.push(CmtRun { cmt_pages, share, points });
    }
    Ok(out)
}
