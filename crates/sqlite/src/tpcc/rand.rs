//! The spec's random functions (clauses 2.1.5, 2.1.6, 4.3.2): uniform
//! integers, NURand with its C constants, a-strings and n-strings, the data
//! strings holding "ORIGINAL", zip codes and the last-name syllables. Every
//! value comes from a ChaCha8 stream of the run's seed.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Clause 4.3.2.3: C_LAST is three of these, picked by the digits of a number in [0..999].
pub const SYLLABLES: [&str; 10] = ["BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"];

/// NURand's A for C_LAST, C_ID and OL_I_ID (clause 2.1.6).
pub const A_C_LAST: u32 = 255;
pub const A_C_ID: u32 = 1023;
pub const A_OL_I_ID: u32 = 8191;

/// The characters of a-strings: the spec asks for at least the 26 lower-case
/// and 26 upper-case letters and the ten digits (clause 4.3.2.2).
const ALPHANUMERIC: &[u8; 62] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// The last name of number `n` in [0..999] (clause 4.3.2.3): 371 is "PRICALLYOUGHT".
pub fn last_name(n: u32) -> String {
    assert!(n < 1000, "last-name numbers are in [0..999], got {n}");
    let mut s = String::with_capacity(15);
    for digit in [n / 100, n / 10 % 10, n % 10] {
        s.push_str(SYLLABLES[digit as usize]);
    }
    s
}

/// Clause 2.1.6.1: the C of C_LAST at run time differs from the one the load
/// used by a delta in [65..119], neither 96 nor 112.
pub fn c_last_delta_ok(c_run: u32, c_load: u32) -> bool {
    let delta = c_run.abs_diff(c_load);
    (65..=119).contains(&delta) && delta != 96 && delta != 112
}

/// NURand's run-time constants C (clause 2.1.6), one set per run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NuConstants {
    pub c_last: u32,
    pub c_id: u32,
    pub ol_i_id: u32,
}

impl NuConstants {
    /// The constants of the load: each uniform in [0..A].
    pub fn for_load(r: &mut Random) -> NuConstants {
        NuConstants {
            c_last: r.uniform(0, A_C_LAST),
            c_id: r.uniform(0, A_C_ID),
            ol_i_id: r.uniform(0, A_OL_I_ID),
        }
    }

    /// The constants of a run against a database loaded with C_LAST =
    /// `c_last_load`: C_ID and OL_I_ID uniform in [0..A]; C_LAST uniform among
    /// the values of [0..255] the delta rule allows (there are always some:
    /// one side of `c_last_load` leaves at least 128 values).
    pub fn for_run(r: &mut Random, c_last_load: u32) -> NuConstants {
        assert!(c_last_load <= A_C_LAST, "C_LAST of the load out of range: {c_last_load}");
        let allowed: Vec<u32> = (0..=A_C_LAST).filter(|&c| c_last_delta_ok(c, c_last_load)).collect();
        assert!(!allowed.is_empty());
        let c_last = allowed[r.uniform(0, allowed.len() as u32 - 1) as usize];
        NuConstants {
            c_last,
            c_id: r.uniform(0, A_C_ID),
            ol_i_id: r.uniform(0, A_OL_I_ID),
        }
    }
}

/// A deterministic random stream (ChaCha8 of the seed, on a stream of its own
/// per use, so the load and the run do not share numbers).
pub struct Random {
    rng: ChaCha8Rng,
}

/// Streams of the seed, one per use.
pub const STREAM_LOAD: u64 = 1;
pub const STREAM_RUN_CONSTANTS: u64 = 2;
pub const STREAM_RUN_INPUTS: u64 = 3;
pub const STREAM_RUN_DECK: u64 = 4;
/// Client `c`'s backoff after SQLITE_BUSY draws from stream `STREAM_CLIENT_BACKOFF + c`.
pub const STREAM_CLIENT_BACKOFF: u64 = 1 << 32;

impl Random {
    pub fn new(seed: u64, stream: u64) -> Random {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        Random { rng }
    }

    /// Uniform in [lo..hi], both included (the spec's "random within [x .. y]").
    pub fn uniform(&mut self, lo: u32, hi: u32) -> u32 {
        assert!(lo <= hi, "empty range [{lo}..{hi}]");
        self.rng.gen_range(lo..=hi)
    }

    /// True `pct` times in 100.
    pub fn percent(&mut self, pct: u32) -> bool {
        self.uniform(1, 100) <= pct
    }

    /// NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x (clause 2.1.6).
    pub fn nurand(&mut self, a: u32, x: u32, y: u32, c: u32) -> u32 {
        assert!(x <= y && c <= a, "NURand({a}, {x}, {y}) with C = {c}");
        (((self.uniform(0, a) | self.uniform(x, y)) + c) % (y - x + 1)) + x
    }

    /// A random a-string [lo..hi]: random length, random alphanumeric characters.
    pub fn a_string(&mut self, lo: usize, hi: usize) -> String {
        let len = self.uniform(lo as u32, hi as u32) as usize;
        (0..len)
            .map(|_| ALPHANUMERIC[self.rng.gen_range(0..ALPHANUMERIC.len())] as char)
            .collect()
    }

    /// A random n-string [lo..hi]: random length, random digits.
    pub fn n_string(&mut self, lo: usize, hi: usize) -> String {
        let len = self.uniform(lo as u32, hi as u32) as usize;
        (0..len).map(|_| (b'0' + self.rng.gen_range(0..10u8)) as char).collect()
    }

    /// I_DATA and S_DATA: a random a-string [26..50]; if `original`, the string
    /// "ORIGINAL" in 8 consecutive characters at a random position (clause 4.3.3.1).
    pub fn data(&mut self, original: bool) -> String {
        let mut s = self.a_string(26, 50).into_bytes();
        if original {
            let at = self.uniform(0, (s.len() - 8) as u32) as usize;
            s[at..at + 8].copy_from_slice(b"ORIGINAL");
        }
        String::from_utf8(s).expect("ASCII")
    }

    /// A zip code (clause 4.3.2.7): a random n-string of 4 digits and "11111".
    pub fn zip(&mut self) -> String {
        let mut z = self.n_string(4, 4);
        z.push_str("11111");
        z
    }

    /// Exactly `k` of `n` positions chosen at random ("10% of rows, selected at random").
    pub fn choose(&mut self, n: usize, k: usize) -> Vec<bool> {
        assert!(k <= n);
        let mut picked = vec![false; n];
        let mut idx: Vec<u32> = (0..n as u32).collect();
        // Partial Fisher-Yates: the first k of a random permutation.
        for i in 0..k {
            let j = self.rng.gen_range(i..n);
            idx.swap(i, j);
            picked[idx[i] as usize] = true;
        }
        picked
    }

    /// A random permutation of [1..n] (O_C_ID at load).
    pub fn permutation(&mut self, n: u32) -> Vec<u32> {
        let mut v: Vec<u32> = (1..=n).collect();
        for i in (1..v.len()).rev() {
            let j = self.rng.gen_range(0..=i);
            v.swap(i, j);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_names_follow_the_syllables() {
        assert_eq!(last_name(371), "PRICALLYOUGHT");
        assert_eq!(last_name(0), "BARBARBAR");
        assert_eq!(last_name(999), "EINGEINGEING");
    }

    #[test]
    fn run_constants_keep_the_delta_rule() {
        let mut r = Random::new(7, 0);
        for load in 0..=A_C_LAST {
            for _ in 0..4 {
                let c = NuConstants::for_run(&mut r, load);
                assert!(c_last_delta_ok(c.c_last, load), "load {load} run {}", c.c_last);
                assert!(c.c_last <= A_C_LAST && c.c_id <= A_C_ID && c.ol_i_id <= A_OL_I_ID);
            }
        }
        assert!(!c_last_delta_ok(96, 0) && !c_last_delta_ok(0, 112) && !c_last_delta_ok(64, 0));
        assert!(c_last_delta_ok(65, 0) && c_last_delta_ok(119, 0) && !c_last_delta_ok(120, 0));
    }

    #[test]
    fn nurand_stays_in_range_and_is_skewed() {
        let mut r = Random::new(1, 0);
        let mut hits = vec![0u32; 3000];
        for _ in 0..300_000 {
            let v = r.nurand(A_C_ID, 1, 3000, 123);
            assert!((1..=3000).contains(&v));
            hits[v as usize - 1] += 1;
        }
        let max = *hits.iter().max().unwrap();
        let min = *hits.iter().min().unwrap();
        assert!(max > 4 * min.max(1), "NURand should be non-uniform: min {min}, max {max}");
    }

    #[test]
    fn strings_have_the_asked_lengths_and_characters() {
        let mut r = Random::new(3, 0);
        for _ in 0..1000 {
            let a = r.a_string(8, 16);
            assert!((8..=16).contains(&a.len()) && a.bytes().all(|b| b.is_ascii_alphanumeric()));
            let n = r.n_string(16, 16);
            assert!(n.len() == 16 && n.bytes().all(|b| b.is_ascii_digit()));
            let d = r.data(true);
            assert!((26..=50).contains(&d.len()) && d.contains("ORIGINAL"));
            assert!(r.zip().ends_with("11111"));
        }
        let picked = r.choose(1000, 100);
        assert_eq!(picked.iter().filter(|&&p| p).count(), 100);
        let mut p = r.permutation(500);
        p.sort_unstable();
        assert_eq!(p, (1..=500).collect::<Vec<_>>());
    }
}
