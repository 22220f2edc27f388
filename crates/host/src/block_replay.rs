//! Replaying a public block trace ([`crate::blocktrace`]) as it is: open loop
//! at the trace's arrival times, or as fast as possible, with at most
//! `queue_depth` requests outstanding either way.
//!
//! Each request becomes page operations on the device, all submitted at the
//! request's submission time (a multi-page request spreads over the dies like
//! a real controller's striping); the request completes when its last page
//! does. A write that covers a page only in part is a read-modify-write of
//! that page: the page is read, then written once the read completed
//! (counted). A trim covering a page only in part leaves that page alone
//! (counted). A request's latency is its completion minus its arrival, so it
//! includes the time it waited for a queue slot.
//!
//! Submission times never go backwards: with a queue depth, a request waits
//! for the earliest outstanding one to complete; a trace line whose arrival is
//! earlier than the previous submission (unsorted traces) is submitted with
//! it (counted).
//!
//! Reads are not checked against what was written (no reference model is kept,
//! so a replay's memory does not grow with the device): the crash harness and
//! the txftl-trace replays check contents.

use crate::blocktrace::{AddressMap, BlockRequest, PageSpan, ReqKind, TraceError};
use crate::latency::{Latencies, LatencyReport};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;
use txftl_ftl::AnyDevice;
use txftl_ftl::{DeviceError, DeviceStats, Lpn};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct BlockReplayOptions {
    /// Ignore the arrival times: submit each request as soon as a queue slot is free.
    pub as_fast_as_possible: bool,
    /// Requests outstanding at most (0: unbounded, open loop only).
    pub queue_depth: u32,
    /// Before the replay, write this percent of the logical pages sequentially
    /// (then flush; counted apart), so GC works as on a used device.
    pub precondition_pct: u32,
    /// After the sequential fill, overwrite this percent of the logical pages
    /// at random within the filled range (uniform, from `age_seed`; counted
    /// with the precondition), so that GC has used up the free space and runs
    /// in the replay as on an aged device.
    pub age_pct: u32,
    pub age_seed: u64,
}

/// What the trace asked for, and what mapping it onto pages cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BlockCounts {
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub trims: u64,
    pub flushes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Page operations sent to the device.
    pub page_reads: u64,
    pub page_writes: u64,
    pub page_trims: u64,
    /// Partial pages of writes read first (read-modify-write).
    pub rmw_reads: u64,
    /// Partial pages of trims left alone.
    pub partial_trim_pages_skipped: u64,
    /// Requests whose arrival was before the previous submission.
    pub reordered: u64,
    /// Requests of zero length (nothing sent).
    pub empty: u64,
    /// Requests of other devices than the one replayed (dropped, see `AddressMap`).
    pub other_device: u64,
    /// Requests whose addresses were folded into the device (`--wrap`).
    pub wrapped: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct BlockReplayReport {
    pub protocol: String,
    pub options: BlockReplayOptions,
    pub counts: BlockCounts,
    pub precondition: DeviceStats,
    pub measured: DeviceStats,
    pub write_amplification: f64,
    /// Requests per simulated second (from the first submission to the device going idle).
    pub throughput_per_sim_s: f64,
    /// Request latency (completion minus arrival) per kind and overall.
    pub latency: LatencyReport,
    pub wall_seconds: f64,
    pub requests_per_wall_second: f64,
    pub flash_ops_per_wall_second: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum BlockReplayError {
    #[error("{0}")]
    Trace(#[from] TraceError),
    #[error("the device failed at trace line {line}: {source}")]
    Device { line: u64, source: DeviceError },
    #[error("--as-fast-as-possible needs a queue depth of at least 1")]
    NoQueue,
    #[error("--age overwrites the preconditioned pages: it needs --precondition")]
    AgeWithoutFill,
}

/// Issues one request's page operations at `at`; returns the completion.
fn issue(
    dev: &mut dyn AnyDevice,
    req: &BlockRequest,
    spans: &[PageSpan],
    at: u64,
    buf: &mut [u8],
    c: &mut BlockCounts,
) -> Result<u64, DeviceError> {
    let mut done = at;
    for &span in spans {
        done = done.max(issue_span(dev, req, span, at, buf, c)?);
    }
    Ok(done)
}

fn issue_span(
    dev: &mut dyn AnyDevice,
    req: &BlockRequest,
    span: PageSpan,
    at: u64,
    buf: &mut [u8],
    c: &mut BlockCounts,
) -> Result<u64, DeviceError> {
    let mut done = at;
    let first = span.first_lpn as Lpn;
    let last = first + span.pages.saturating_sub(1) as Lpn;
    match req.kind {
        ReqKind::Flush => {
            dev.set_clock(at);
            dev.flush()?;
            done = dev.now_ns().max(at);
        }
        ReqKind::Read => {
            for lpn in first..first + span.pages as Lpn {
                dev.set_clock(at);
                match dev.read(lpn, buf) {
                    Ok(_) | Err(DeviceError::DataLost { .. }) => {}
                    Err(e) => return Err(e),
                }
                c.page_reads += 1;
                done = done.max(dev.now_ns());
            }
        }
        ReqKind::Write => {
            for lpn in first..first + span.pages as Lpn {
                let partial = (lpn == first && span.partial_head) || (lpn == last && span.partial_tail);
                dev.set_clock(at);
                if partial {
                    match dev.read(lpn, buf) {
                        Ok(_) | Err(DeviceError::DataLost { .. }) => {}
                        Err(e) => return Err(e),
                    }
                    c.rmw_reads += 1;
                    // The write waits for the read (set by the read's completion).
                }
                dev.write(lpn, buf)?;
                c.page_writes += 1;
                done = done.max(dev.now_ns());
            }
        }
        ReqKind::Trim => {
            for lpn in first..first + span.pages as Lpn {
                let partial = (lpn == first && span.partial_head) || (lpn == last && span.partial_tail);
                if partial {
                    c.partial_trim_pages_skipped += 1;
                    continue;
                }
                dev.set_clock(at);
                dev.trim(lpn)?;
                c.page_trims += 1;
                done = done.max(dev.now_ns());
            }
        }
    }
    Ok(done.max(at))
}

/// Replays `requests` (with their trace lines) on `dev`. `map` maps each onto
/// logical pages (refusing or folding addresses past the device, choosing
/// among the trace's devices: see [`AddressMap`]).
pub fn replay_block<I>(
    dev: &mut dyn AnyDevice,
    requests: I,
    map: &mut AddressMap,
    opts: BlockReplayOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<BlockReplayReport, BlockReplayError>
where
    I: Iterator<Item = Result<(u64, BlockRequest), TraceError>>,
{
    if opts.as_fast_as_possible && opts.queue_depth == 0 {
        return Err(BlockReplayError::NoQueue);
    }
    let info = dev.info();
    // Metadata-only: host pages carry no data (an empty buffer; the NAND
    // would otherwise keep every page written, as it keeps metadata pages).
    let store_data = dev.nand().config().data_mode == txftl_nand::DataMode::Full;
    let mut buf = vec![0u8; if store_data { info.page_size as usize } else { 0 }];
    // Precondition: a sequential fill, flushed, counted apart.
    dev.reset_stats();
    let fill = (info.logical_pages as u64 * opts.precondition_pct as u64 / 100) as Lpn;
    for lpn in 0..fill {
        dev.write(lpn, &buf)
            .map_err(|source| BlockReplayError::Device { line: 0, source })?;
    }
    if opts.age_pct > 0 {
        if fill == 0 {
            return Err(BlockReplayError::AgeWithoutFill);
        }
        let mut rng = ChaCha8Rng::seed_from_u64(opts.age_seed);
        for _ in 0..info.logical_pages as u64 * opts.age_pct as u64 / 100 {
            dev.write(rng.gen_range(0..fill), &buf)
                .map_err(|source| BlockReplayError::Device { line: 0, source })?;
        }
    }
    dev.flush().map_err(|source| BlockReplayError::Device { line: 0, source })?;
    let precondition = dev.stats();
    dev.reset_stats();
    let start = dev.now_ns();
    let mut c = BlockCounts::default();
    let mut lat = Latencies::default();
    // Completion times of the requests outstanding (min-heap).
    let mut outstanding: BinaryHeap<Reverse<u64>> = BinaryHeap::new();
    let mut last_submit = start;
    let mut origin: Option<u64> = None;
    let started = Instant::now();
    for item in requests {
        let (line, req) = item?;
        let Some(m) = map.map(line, &req)? else {
            c.other_device += 1;
            continue;
        };
        let arrival = if opts.as_fast_as_possible {
            start
        } else {
            let o = *origin.get_or_insert(req.arrival_ns);
            start + req.arrival_ns.saturating_sub(o)
        };
        let mut at = arrival;
        if at < last_submit {
            if !opts.as_fast_as_possible {
                c.reordered += 1;
            }
            at = last_submit;
        }
        if opts.queue_depth > 0 && outstanding.len() as u32 >= opts.queue_depth {
            let Reverse(free) = outstanding.pop().expect("a full queue has a request");
            at = at.max(free);
        }
        last_submit = at;
        c.requests += 1;
        match req.kind {
            ReqKind::Read => {
                c.reads += 1;
                c.bytes_read += req.len_bytes;
            }
            ReqKind::Write => {
                c.writes += 1;
                c.bytes_written += req.len_bytes;
            }
            ReqKind::Trim => c.trims += 1,
            ReqKind::Flush => c.flushes += 1,
        }
        if m.span.pages == 0 && req.kind != ReqKind::Flush {
            c.empty += 1;
            continue;
        }
        let spans: &[PageSpan] = match &m.rest {
            Some(rest) => &[m.span, *rest],
            None => &[m.span],
        };
        let done = issue(dev, &m.req, spans, at, &mut buf, &mut c).map_err(|source| BlockReplayError::Device { line, source })?;
        // Open loop: from the arrival (queueing included); as fast as
        // possible there is no arrival, so from the submission.
        let from = if opts.as_fast_as_possible { at } else { arrival };
        lat.op(req.kind.op().name(), done - from);
        if opts.queue_depth > 0 {
            outstanding.push(Reverse(done));
        }
        if c.requests.is_multiple_of(65_536) {
            progress(c.requests);
        }
    }
    progress(c.requests);
    c.wrapped = map.stats().wrapped;
    let wall = started.elapsed().as_secs_f64();
    let measured = dev.stats();
    let sim_s = measured.sim_time_ns as f64 / 1e9;
    let per_wall_s = |n: u64| crate::per_second(n, wall);
    Ok(BlockReplayReport {
        protocol: info.protocol.to_string(),
        options: opts,
        counts: c,
        precondition,
        measured,
        write_amplification: measured.write_amplification(),
        throughput_per_sim_s: crate::per_second(c.requests, sim_s),
        latency: lat.report(),
        wall_seconds: wall,
        requests_per_wall_second: per_wall_s(c.requests),
        flash_ops_per_wall_second: per_wall_s(measured.flash_ops()),
    })
}
