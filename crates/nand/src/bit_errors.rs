//! Flash faults other than power cuts: raw bit errors that grow with wear and
//! retention, the ECC that corrects them up to a limit, read retry, and program
//! and erase failures. Off unless a [`FaultModel`] is set on the array.
//!
//! The model (stated so a reader can argue with it):
//! - A page is read as codewords of `codeword_bytes` of data (the last one
//!   shorter) plus one codeword for the spare area. Each codeword's bit errors
//!   follow a Poisson law of mean `rber × bits` (the binomial of that many
//!   independent bits at this rate, in the regime where it is Poisson).
//! - The raw bit-error rate grows with the block's wear, geometrically from
//!   `rber_fresh` (0 cycles) to `rber_worn` (at the endurance), as measured
//!   curves of MLC NAND do, times `1 + retention_growth × retention_days` for
//!   data that sat unpowered for `retention_days` before this run (a bake: it
//!   applies to every page). Simulated time within a run (seconds) is far too
//!   short to age data, so it does not enter.
//! - Errors are a property of the programmed page, not of the read: which
//!   quantile of the law a codeword sits at is fixed per (seed, page, erase
//!   generation, codeword) by SplitMix64, so rereading the same page gives the
//!   same outcome, a lost page stays lost until rewritten, and a page's error
//!   count rises with its block's wear. A codeword with more errors than
//!   `ecc_bits` is uncorrectable.
//! - Read retry: level `k` rereads with shifted read thresholds, modelled as
//!   the rate scaled by `retry_factor^k` (so fewer errors at the same
//!   quantile). Each retry is one more read operation, with its time.
//! - Program and erase failures: a program fails (status fail) with a
//!   probability growing linearly with wear from `program_fail_fresh` to
//!   `program_fail_worn`; the page is left holding garbage and the block is
//!   not marked bad by the chip (retiring it is the FTL's decision, as with
//!   real controllers). An erase fails likewise and the block goes bad.
//!   Partial programs (SLC) do not fail in this model.
//! - Erased pages read without errors.

use serde::Serialize;

/// Parameters of the fault model. See the module doc for what each means.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FaultModel {
    pub seed: u64,
    pub rber_fresh: f64,
    pub rber_worn: f64,
    pub retention_days: f64,
    pub retention_growth: f64,
    pub codeword_bytes: u32,
    pub ecc_bits: u32,
    pub read_retries: u8,
    pub retry_factor: f64,
    pub program_fail_fresh: f64,
    pub program_fail_worn: f64,
    pub erase_fail_fresh: f64,
    pub erase_fail_worn: f64,
}

/// Names of the built-in profiles, for help texts.
pub const FAULT_PROFILES: &[&str] = &["typical", "stress"];

impl FaultModel {
    /// A built-in profile.
    ///
    /// - `typical`: MLC-class figures from the field-study literature (RBER
    ///   about 1e-6 fresh to 4e-3 at rated endurance, BCH correcting 40 bits
    ///   per 1 KiB, failure rates of 1e-6 to 1e-4 per program and 1e-5 to 1e-3
    ///   per erase): errors are corrected on a fresh device, retries and losses
    ///   appear near the end of life or after long retention.
    /// - `stress`: rates raised far beyond real devices so that small crash
    ///   tests meet corrected errors, retries, uncorrectable pages and program
    ///   and erase failures within a few hundred operations.
    pub fn profile(name: &str, seed: u64) -> Option<FaultModel> {
        let typical = FaultModel {
            seed,
            rber_fresh: 1e-6,
            rber_worn: 4e-3,
            retention_days: 0.0,
            retention_growth: 0.01,
            codeword_bytes: 1024,
            ecc_bits: 40,
            read_retries: 4,
            retry_factor: 0.7,
            program_fail_fresh: 1e-6,
            program_fail_worn: 1e-4,
            erase_fail_fresh: 1e-5,
            erase_fail_worn: 1e-3,
        };
        match name {
            "typical" => Some(typical),
            "stress" => Some(FaultModel {
                rber_fresh: 2e-3,
                rber_worn: 2e-2,
                codeword_bytes: 256,
                ecc_bits: 8,
                read_retries: 2,
                retry_factor: 0.6,
                program_fail_fresh: 4e-3,
                program_fail_worn: 2e-2,
                erase_fail_fresh: 4e-3,
                erase_fail_worn: 2e-2,
                ..typical
            }),
            _ => None,
        }
    }

    /// Checks the parameters; the message says which is wrong.
    pub fn validate(&self) -> Result<(), String> {
        let rate = |name: &str, v: f64| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(format!("{name} must be between 0 and 1 (got {v})"))
            }
        };
        rate("rber_fresh", self.rber_fresh)?;
        rate("rber_worn", self.rber_worn)?;
        rate("program_fail_fresh", self.program_fail_fresh)?;
        rate("program_fail_worn", self.program_fail_worn)?;
        rate("erase_fail_fresh", self.erase_fail_fresh)?;
        rate("erase_fail_worn", self.erase_fail_worn)?;
        if !(self.retry_factor > 0.0 && self.retry_factor <= 1.0) {
            return Err(format!("retry_factor must be in (0, 1] (got {})", self.retry_factor));
        }
        if !(self.retention_days >= 0.0 && self.retention_days.is_finite()) {
            return Err(format!("retention_days must be 0 or more (got {})", self.retention_days));
        }
        if !(self.retention_growth >= 0.0 && self.retention_growth.is_finite()) {
            return Err(format!("retention_growth must be 0 or more (got {})", self.retention_growth));
        }
        if self.codeword_bytes == 0 {
            return Err("codeword_bytes must be at least 1".into());
        }
        Ok(())
    }

    /// Wear as a fraction of the endurance (past it counts as 1).
    fn wear(erase_count: u32, endurance: u32) -> f64 {
        (erase_count as f64 / endurance.max(1) as f64).min(1.0)
    }

    /// Raw bit-error rate of a page of a block with this wear, at retry level `level`.
    pub fn rber(&self, erase_count: u32, endurance: u32, level: u8) -> f64 {
        let w = Self::wear(erase_count, endurance);
        let fresh = self.rber_fresh.max(1e-15);
        let base = fresh * (self.rber_worn.max(fresh) / fresh).powf(w);
        let aged = base * (1.0 + self.retention_growth * self.retention_days);
        (aged * self.retry_factor.powi(level as i32)).min(0.5)
    }

    pub(crate) fn program_fail_p(&self, erase_count: u32, endurance: u32) -> f64 {
        let w = Self::wear(erase_count, endurance);
        self.program_fail_fresh + (self.program_fail_worn - self.program_fail_fresh) * w
    }

    pub(crate) fn erase_fail_p(&self, erase_count: u32, endurance: u32) -> f64 {
        let w = Self::wear(erase_count, endurance);
        self.erase_fail_fresh + (self.erase_fail_worn - self.erase_fail_fresh) * w
    }

    /// A uniform number in [0, 1) fixed by the seed and `keys` (SplitMix64 chain).
    pub(crate) fn uniform(&self, keys: &[u64]) -> f64 {
        let mut h = splitmix64(self.seed ^ 0x7478_6674_6c00_0000);
        for &k in keys {
            h = splitmix64(h ^ k);
        }
        (h >> 11) as f64 / (1u64 << 53) as f64
    }

    /// ECC outcome of reading one page: `data_bytes` of data (0 for an
    /// OOB-only read) and `oob_bytes` of spare area, of a page at `ppn`
    /// programmed in erase generation `generation` of a block with
    /// `erase_count` cycles, at retry `level`.
    pub(crate) fn decode(&self, page: PageKey, data_bytes: u32, oob_bytes: u32, endurance: u32, level: u8) -> Decode {
        let rber = self.rber(page.erase_count, endurance, level);
        let mut out = Decode::default();
        let codeword = |index: u64, bytes: u32| -> Option<u32> {
            let lambda = rber * bytes as f64 * 8.0;
            let u = self.uniform(&[SALT_ECC, page.ppn as u64, page.erase_count as u64, index]);
            poisson_quantile_at_most(lambda, u, self.ecc_bits)
        };
        let cw = self.codeword_bytes;
        for i in 0..data_bytes.div_ceil(cw) {
            let bytes = cw.min(data_bytes - i * cw);
            match codeword(i as u64, bytes) {
                Some(k) => out.corrected_bits += k as u64,
                None => out.data_failed = true,
            }
        }
        match codeword(u64::MAX, oob_bytes) {
            Some(k) => out.corrected_bits += k as u64,
            None => out.oob_failed = true,
        }
        out
    }
}

/// Which programmed page a draw is for: the page and its block's erase count
/// when it was read (the erase generation the page was programmed in).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PageKey {
    pub ppn: u32,
    pub erase_count: u32,
}

pub(crate) const SALT_ECC: u64 = 1;
pub(crate) const SALT_PROGRAM: u64 = 2;
pub(crate) const SALT_ERASE: u64 = 3;
pub(crate) const SALT_GARBAGE: u64 = 4;

/// What ECC made of one read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Decode {
    pub corrected_bits: u64,
    pub data_failed: bool,
    pub oob_failed: bool,
}

impl Decode {
    pub fn ok(&self) -> bool {
        !self.data_failed && !self.oob_failed
    }
}

pub(crate) fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The smallest `k` with P(X ≤ k) > u for X ~ Poisson(lambda), if it is at
/// most `limit`; `None` if it is larger (the codeword is uncorrectable).
///
/// Written here rather than taken from `rand_distr`: the model needs the
/// quantile of a fixed `u` (so a page's errors are a property of the page and
/// grow with its wear), which a sampler does not give. Terms are computed in
/// log space so a large mean does not underflow.
fn poisson_quantile_at_most(lambda: f64, u: f64, limit: u32) -> Option<u32> {
    if lambda <= 0.0 {
        return Some(0);
    }
    let ln_l = lambda.ln();
    let mut ln_pmf = -lambda;
    let mut cdf = 0.0;
    for k in 0..=limit {
        if k > 0 {
            ln_pmf += ln_l - (k as f64).ln();
        }
        cdf += ln_pmf.exp();
        if cdf > u {
            return Some(k);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quantile_matches_the_poisson_law() {
        // P(X = 0) = e^-2 = 0.1353, P(X <= 1) = 0.4060, P(X <= 2) = 0.6767.
        assert_eq!(poisson_quantile_at_most(2.0, 0.10, 10), Some(0));
        assert_eq!(poisson_quantile_at_most(2.0, 0.30, 10), Some(1));
        assert_eq!(poisson_quantile_at_most(2.0, 0.60, 10), Some(2));
        assert_eq!(poisson_quantile_at_most(2.0, 0.99999, 3), None);
        // A mean far above the limit is uncorrectable, with no underflow.
        assert_eq!(poisson_quantile_at_most(5_000.0, 0.5, 40), None);
        assert_eq!(poisson_quantile_at_most(0.0, 0.9, 0), Some(0));
    }

    #[test]
    fn the_error_rate_grows_with_wear_and_retention_and_falls_with_retry() {
        let m = FaultModel::profile("typical", 1).unwrap();
        assert!((m.rber(0, 3000, 0) - 1e-6).abs() < 1e-12);
        assert!((m.rber(3000, 3000, 0) - 4e-3).abs() < 1e-9);
        assert!(m.rber(1500, 3000, 0) > m.rber(1000, 3000, 0));
        let baked = FaultModel {
            retention_days: 365.0,
            ..m
        };
        assert!(baked.rber(100, 3000, 0) > 4.0 * m.rber(100, 3000, 0));
        assert!(m.rber(3000, 3000, 2) < m.rber(3000, 3000, 1));
    }

    #[test]
    fn uncorrectable_pages_appear_at_the_end_of_life_not_on_a_fresh_device() {
        let m = FaultModel::profile("typical", 7).unwrap();
        let count = |ec: u32, level: u8| {
            (0..20_000u32)
                .filter(|&ppn| !m.decode(PageKey { ppn, erase_count: ec }, 8192, 448, 3000, level).ok())
                .count()
        };
        assert_eq!(count(10, 0), 0);
        let worn = count(3000, 0);
        assert!(worn > 100, "{worn} of 20000 worn pages uncorrectable");
        // Retries recover most of them.
        assert!(count(3000, 4) * 10 < worn);
    }
}
