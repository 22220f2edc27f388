//! A deterministic generator of MQSim ASCII traces shaped like MQSim's
//! `traces/tpcc-small.trace` (that trace is not ours to ship).
//!
//! The shape, [`GenSpec::tpcc_like`], is read off the copy of
//! `tpcc-small.trace` in MQSim's repository (about 1,000 requests, inspected,
//! not fitted):
//!
//! - **Kinds**: 37% writes.
//! - **Sizes**: every read is 16 sectors (8 KiB, the database page); writes are
//!   16 sectors except about 1 in 40 of 32 sectors (16 KiB). There are no 4 KiB
//!   or larger requests in it, so there are none by default; the size tables
//!   are fields, to widen.
//! - **Addresses**: every start sector is a multiple of 16 (8 KiB aligned). Over
//!   the span the trace touches, about 88% of requests fall uniformly in the
//!   upper 59% of it (from 40.7% of the span), about 10% in a hot band of 2.3%
//!   of it (24.0%–26.3%), and about 2% sparsely below that; nothing between
//!   26.3% and 40.7%. These are the default [`Region`]s, as fractions of the
//!   given capacity.
//! - **Arrivals**: a mean inter-arrival time of about 295 µs, at 1 µs resolution.
//!   The gaps are drawn exponential (Poisson arrivals), a simplification of the
//!   trace's burstier gaps.
//! - **Device**: the trace names device 13; the generator writes [`GenSpec::device`], 0 by default.
//!
//! Everything is drawn from one ChaCha8 stream seeded by [`GenSpec::seed`], in
//! a fixed order per request (kind, size, region, address, gap), with integer
//! arithmetic except the exponential gap (`ln`, rounded to the resolution): the
//! same spec gives the same bytes on a machine, run after run.

use std::fmt;
use std::io::{self, BufWriter, Write};

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::fields::SECTOR_BYTES;
use super::{BlockRequest, ReqKind};

/// A request size and its weight in a size table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeWeight {
    pub sectors: u64,
    pub weight: u32,
}

/// A part of the capacity, in thousandths of it (`start_permille..end_permille`),
/// and the weight of requests that fall in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub start_permille: u32,
    pub end_permille: u32,
    pub weight: u32,
}

/// What to generate.
#[derive(Clone, Debug, PartialEq)]
pub struct GenSpec {
    pub seed: u64,
    /// Number of requests.
    pub requests: u64,
    /// The device's logical capacity; every request falls inside it.
    pub capacity_bytes: u64,
    /// The device column of every line.
    pub device: u32,
    /// Fraction of writes, in 0..=1.
    pub write_ratio: f64,
    /// Mean of the exponential inter-arrival gaps.
    pub interarrival_mean_ns: u64,
    /// Arrival times are multiples of this.
    pub time_resolution_ns: u64,
    /// Start sectors are multiples of this.
    pub align_sectors: u64,
    pub read_sizes: Vec<SizeWeight>,
    pub write_sizes: Vec<SizeWeight>,
    pub regions: Vec<Region>,
}

impl GenSpec {
    /// The shape of MQSim's `tpcc-small.trace` (see the module doc) over `capacity_bytes`.
    pub fn tpcc_like(seed: u64, requests: u64, capacity_bytes: u64) -> Self {
        Self {
            seed,
            requests,
            capacity_bytes,
            device: 0,
            write_ratio: 0.37,
            interarrival_mean_ns: 295_000,
            time_resolution_ns: 1_000,
            align_sectors: 16,
            read_sizes: vec![SizeWeight { sectors: 16, weight: 1 }],
            write_sizes: vec![SizeWeight { sectors: 16, weight: 975 }, SizeWeight { sectors: 32, weight: 25 }],
            regions: vec![
                Region {
                    start_permille: 0,
                    end_permille: 240,
                    weight: 2,
                },
                Region {
                    start_permille: 240,
                    end_permille: 263,
                    weight: 10,
                },
                Region {
                    start_permille: 407,
                    end_permille: 1000,
                    weight: 88,
                },
            ],
        }
    }
}

/// A [`GenSpec`] that cannot be generated, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError(pub String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid trace generator spec: {}", self.0)
    }
}

impl std::error::Error for SpecError {}

fn total_weight<T>(items: &[T], weight: impl Fn(&T) -> u32) -> u64 {
    items.iter().map(|i| u64::from(weight(i))).sum()
}

/// Uniform in `0..n` (n > 0), by multiply-shift: integer-only, so the same on every platform.
fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    debug_assert!(n > 0);
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64
}

/// Uniform in `[0, 1)`, 53 bits.
fn unit(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// One of `items`, with probability proportional to its weight (the total is positive).
fn pick<T: Copy>(rng: &mut ChaCha8Rng, items: &[T], weight: impl Fn(&T) -> u32) -> T {
    let mut r = below(rng, total_weight(items, &weight));
    for item in items {
        let w = u64::from(weight(item));
        if r < w {
            return *item;
        }
        r -= w;
    }
    unreachable!("r is below the total weight")
}

/// The requests of a [`GenSpec`], without text (an [`Iterator`]; for benchmarks).
#[derive(Clone, Debug)]
pub struct Generator {
    spec: GenSpec,
    rng: ChaCha8Rng,
    capacity_sectors: u64,
    produced: u64,
    now_ns: u64,
}

impl Generator {
    pub fn new(spec: &GenSpec) -> Result<Self, SpecError> {
        let err = |m: &str| Err(SpecError(m.to_string()));
        let capacity_sectors = spec.capacity_bytes / SECTOR_BYTES;
        if !(0.0..=1.0).contains(&spec.write_ratio) {
            return err("write_ratio must be in 0..=1");
        }
        if spec.time_resolution_ns == 0 || spec.align_sectors == 0 {
            return err("time_resolution_ns and align_sectors must be positive");
        }
        for (name, sizes) in [("read_sizes", &spec.read_sizes), ("write_sizes", &spec.write_sizes)] {
            if total_weight(sizes, |s| s.weight) == 0 {
                return Err(SpecError(format!("{name} has no size of positive weight")));
            }
            if let Some(s) = sizes.iter().find(|s| s.sectors == 0 || s.sectors > capacity_sectors) {
                return Err(SpecError(format!(
                    "{name} has a size of {} sectors; sizes are 1 sector up to the capacity ({capacity_sectors} sectors)",
                    s.sectors
                )));
            }
        }
        if total_weight(&spec.regions, |r| r.weight) == 0 {
            return err("regions has no region of positive weight");
        }
        if spec
            .regions
            .iter()
            .any(|r| r.start_permille >= r.end_permille || r.end_permille > 1000)
        {
            return err("a region must have start_permille < end_permille <= 1000");
        }
        Ok(Self {
            spec: spec.clone(),
            rng: ChaCha8Rng::seed_from_u64(spec.seed),
            capacity_sectors,
            produced: 0,
            now_ns: 0,
        })
    }

    /// An aligned start sector for `sectors` in `region`, or anywhere on the
    /// device when the region is too small for it.
    fn start_sector(&mut self, region: Region, sectors: u64) -> u64 {
        let align = self.spec.align_sectors;
        let at = |permille: u32| (u128::from(self.capacity_sectors) * u128::from(permille) / 1000) as u64;
        let slots = |lo: u64, hi: u64| -> Option<(u64, u64)> {
            let first = lo.div_ceil(align).checked_mul(align)?;
            let last = hi.checked_sub(sectors)?;
            (last >= first).then(|| (first, (last - first) / align + 1))
        };
        let (first, count) = slots(at(region.start_permille), at(region.end_permille))
            .or_else(|| slots(0, self.capacity_sectors))
            .unwrap_or((0, 1)); // the device is smaller than the alignment: start at 0
        first + below(&mut self.rng, count) * align
    }
}

impl Iterator for Generator {
    type Item = BlockRequest;

    fn next(&mut self) -> Option<BlockRequest> {
        if self.produced == self.spec.requests {
            return None;
        }
        self.produced += 1;
        let kind = if unit(&mut self.rng) < self.spec.write_ratio {
            ReqKind::Write
        } else {
            ReqKind::Read
        };
        let sizes = if kind == ReqKind::Write {
            &self.spec.write_sizes
        } else {
            &self.spec.read_sizes
        };
        let sectors = pick(&mut self.rng, sizes, |s| s.weight).sectors;
        let region = pick(&mut self.rng, &self.spec.regions, |r| r.weight);
        let start = self.start_sector(region, sectors);
        debug_assert!(start + sectors <= self.capacity_sectors);

        let mean = self.spec.interarrival_mean_ns as f64;
        let resolution = self.spec.time_resolution_ns;
        let gap = -mean * (1.0 - unit(&mut self.rng)).ln(); // 1 - u is in (0, 1]: gap >= 0
        let gap_ns = (gap / resolution as f64).round() as u64 * resolution;
        self.now_ns = self.now_ns.saturating_add(gap_ns);

        Some(BlockRequest {
            arrival_ns: self.now_ns,
            device: self.spec.device,
            kind,
            offset_bytes: start * SECTOR_BYTES,
            len_bytes: sectors * SECTOR_BYTES,
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = usize::try_from(self.spec.requests - self.produced).unwrap_or(usize::MAX);
        (left, Some(left))
    }
}

/// Writes `req` as one line of MQSim's ASCII format
/// (`arrival_ns device start_sector size_sectors type`, type 0 write / 1 read).
/// A trim, a flush, or a range not on 512-byte sectors has no MQSim form: an
/// `InvalidInput` error.
pub fn write_mqsim_line(w: &mut impl Write, req: &BlockRequest) -> io::Result<()> {
    let code = match req.kind {
        ReqKind::Write => 0,
        ReqKind::Read => 1,
        ReqKind::Trim | ReqKind::Flush => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("MQSim's trace format has no {:?} request", req.kind),
            ));
        }
    };
    if !req.offset_bytes.is_multiple_of(SECTOR_BYTES) || !req.len_bytes.is_multiple_of(SECTOR_BYTES) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "MQSim's trace format counts whole 512-byte sectors",
        ));
    }
    writeln!(
        w,
        "{} {} {} {} {code}",
        req.arrival_ns,
        req.device,
        req.offset_bytes / SECTOR_BYTES,
        req.len_bytes / SECTOR_BYTES
    )
}

/// Writes the trace of `spec` in MQSim's ASCII format.
pub fn generate(w: impl Write, spec: &GenSpec) -> io::Result<()> {
    let generator = Generator::new(spec).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let mut w = BufWriter::new(w);
    for req in generator {
        write_mqsim_line(&mut w, &req)?;
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn text(spec: &GenSpec) -> Vec<u8> {
        let mut out = Vec::new();
        generate(&mut out, spec).unwrap();
        out
    }

    #[test]
    fn same_seed_same_bytes() {
        let spec = GenSpec::tpcc_like(7, 2_000, 16 * GIB);
        assert_eq!(text(&spec), text(&spec));
        assert_ne!(text(&spec), text(&GenSpec { seed: 8, ..spec.clone() }));
        assert_eq!(String::from_utf8(text(&spec)).unwrap().lines().count(), 2_000);
    }

    #[test]
    fn shape_follows_the_spec() {
        let spec = GenSpec::tpcc_like(1, 20_000, 64 * GIB);
        let reqs: Vec<BlockRequest> = Generator::new(&spec).unwrap().collect();
        assert_eq!(reqs.len(), 20_000);
        let writes = reqs.iter().filter(|r| r.kind == ReqKind::Write).count() as f64 / reqs.len() as f64;
        assert!((0.35..0.39).contains(&writes), "{writes}");
        let cap = spec.capacity_bytes;
        let hot = reqs
            .iter()
            .filter(|r| (cap / 1000 * 240..cap / 1000 * 263).contains(&r.offset_bytes))
            .count() as f64;
        assert!((0.08..0.12).contains(&(hot / reqs.len() as f64)), "{hot}");
        for r in &reqs {
            assert!(r.offset_bytes + r.len_bytes <= cap);
            assert_eq!(r.offset_bytes % (16 * 512), 0);
            match r.kind {
                ReqKind::Read => assert_eq!(r.len_bytes, 8192),
                _ => assert!(r.len_bytes == 8192 || r.len_bytes == 16384),
            }
        }
        assert!(reqs.windows(2).all(|w| w[0].arrival_ns <= w[1].arrival_ns));
        let mean = reqs.last().unwrap().arrival_ns as f64 / reqs.len() as f64;
        assert!((270_000.0..320_000.0).contains(&mean), "{mean}");
        assert!(reqs.iter().all(|r| r.arrival_ns % 1000 == 0));
    }

    #[test]
    fn small_devices_and_bad_specs() {
        // A device smaller than the hot band's room still gets valid requests.
        let spec = GenSpec::tpcc_like(3, 200, 64 * 1024);
        assert!(Generator::new(&spec).unwrap().all(|r| r.offset_bytes + r.len_bytes <= 64 * 1024));
        let too_small = GenSpec::tpcc_like(3, 10, 8 * 1024);
        assert!(Generator::new(&too_small).unwrap_err().0.contains("32 sectors"));
        let bad_ratio = GenSpec {
            write_ratio: 1.5,
            ..GenSpec::tpcc_like(3, 10, GIB)
        };
        assert!(Generator::new(&bad_ratio).is_err());
        let bad_region = GenSpec {
            regions: vec![Region {
                start_permille: 5,
                end_permille: 5,
                weight: 1,
            }],
            ..GenSpec::tpcc_like(3, 10, GIB)
        };
        assert!(Generator::new(&bad_region).is_err());
        let err = generate(Vec::new(), &too_small).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn mqsim_lines_refuse_what_mqsim_cannot_say() {
        let mut out = Vec::new();
        let r = BlockRequest {
            arrival_ns: 5,
            device: 2,
            kind: ReqKind::Read,
            offset_bytes: 1024,
            len_bytes: 4096,
        };
        write_mqsim_line(&mut out, &r).unwrap();
        assert_eq!(out, b"5 2 2 8 1\n");
        assert!(write_mqsim_line(&mut out, &BlockRequest { kind: ReqKind::Trim, ..r }).is_err());
        assert!(write_mqsim_line(&mut out, &BlockRequest { len_bytes: 100, ..r }).is_err());
    }
}
