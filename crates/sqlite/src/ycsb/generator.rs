//! YCSB's number generators (package `site.ycsb.generator`), ported: the
//! zipfian generator of Gray et al. (`ZipfianGenerator`), its scrambled
//! variant (`ScrambledZipfianGenerator`), the latest distribution
//! (`SkewedLatestGenerator`), the operation chooser (`DiscreteGenerator`),
//! YCSB's 64-bit FNV hash (`Utils.fnvhash64`) and its random field contents
//! (`RandomByteIterator`). The arithmetic is YCSB's, quirks included (see
//! [`Zipfian::next_of`]); the uniform draws come from the caller's ChaCha8
//! stream instead of Java's `Random`/`ThreadLocalRandom`.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// `ZipfianGenerator.ZIPFIAN_CONSTANT`.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;
/// `ScrambledZipfianGenerator.ITEM_COUNT`: the scrambled generator draws
/// from this many items (plus one) and folds them onto the key space by hash.
pub const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000_000_000;
/// `ScrambledZipfianGenerator.ZETAN`: zeta(ITEM_COUNT, 0.99), precomputed by YCSB.
pub const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

const FNV_OFFSET_BASIS_64: u64 = 0xCBF2_9CE4_8422_2325;
const FNV_PRIME_64: u64 = 1_099_511_628_211;

/// `Utils.fnvhash64`: FNV-1 over the 8 bytes of `val`, least significant
/// first, then `Math.abs` of the signed result (which leaves `i64::MIN`
/// negative, as in Java).
pub fn fnv_hash64(val: i64) -> i64 {
    let mut hash = FNV_OFFSET_BASIS_64 as i64;
    let mut v = val;
    for _ in 0..8 {
        let octet = v & 0xff;
        v >>= 8;
        hash ^= octet;
        hash = hash.wrapping_mul(FNV_PRIME_64 as i64);
    }
    hash.wrapping_abs()
}

/// `ZipfianGenerator.zetastatic(st, n, theta, initialsum)`: the sum of
/// 1/i^theta for i in st+1..=n, added to `initial`.
pub fn zeta(st: u64, n: u64, theta: f64, initial: f64) -> f64 {
    let mut sum = initial;
    for i in st..n {
        sum += 1.0 / ((i + 1) as f64).powf(theta);
    }
    sum
}

/// `ZipfianGenerator`: items `base..base + items`, item `base` the most
/// popular, then `base + 1`, and so on (Gray et al., "Quickly generating
/// billion-record synthetic databases", SIGMOD 1994).
#[derive(Clone, Debug)]
pub struct Zipfian {
    /// The item count given at construction (YCSB's `items`).
    items: u64,
    base: u64,
    theta: f64,
    zeta2theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    /// The item count `zetan` was computed for.
    count_for_zeta: u64,
}

impl Zipfian {
    /// Items `min..=max` with constant `theta` (zeta computed here: O(items)).
    pub fn new(min: u64, max: u64, theta: f64) -> Zipfian {
        assert!(min <= max, "empty zipfian range {min}..={max}");
        Zipfian::with_zetan(min, max, theta, zeta(0, max - min + 1, theta, 0.0))
    }

    /// Items `min..=max` with a precomputed zeta of their count.
    pub fn with_zetan(min: u64, max: u64, theta: f64, zetan: f64) -> Zipfian {
        assert!(min <= max, "empty zipfian range {min}..={max}");
        assert!(theta > 0.0 && theta < 1.0, "zipfian constant must be in (0, 1), got {theta}");
        let items = max - min + 1;
        let zeta2theta = zeta(0, 2, theta, 0.0);
        Zipfian {
            items,
            base: min,
            theta,
            zeta2theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2theta / zetan),
            count_for_zeta: items,
        }
    }

    /// The item count given at construction.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// zeta(n, theta) for the item count of the last draw.
    pub fn zetan(&self) -> f64 {
        self.zetan
    }

    /// `nextValue()`: a draw over the construction's item count.
    pub fn next(&mut self, rng: &mut ChaCha8Rng) -> u64 {
        self.next_of(self.items, rng)
    }

    /// `nextLong(itemcount)`. As in YCSB: a larger `itemcount` extends zeta
    /// incrementally but recomputes eta with the *construction's* item count
    /// (`items`); a smaller one keeps the old zeta (`allowitemcountdecrease`
    /// is false). The latest distribution relies on this behaviour.
    pub fn next_of(&mut self, itemcount: u64, rng: &mut ChaCha8Rng) -> u64 {
        if itemcount > self.count_for_zeta {
            self.zetan = zeta(self.count_for_zeta, itemcount, self.theta, self.zetan);
            self.count_for_zeta = itemcount;
            self.eta = (1.0 - (2.0 / self.items as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2theta / self.zetan);
        }
        let u: f64 = rng.gen();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return self.base + 1;
        }
        self.base + (itemcount as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64
    }
}

/// `ScrambledZipfianGenerator`: a zipfian draw over [`SCRAMBLED_ITEM_COUNT`]
/// items (zeta precomputed for constant 0.99), hashed with [`fnv_hash64`]
/// onto `min..=max`, so the popular items are scattered over the key space.
#[derive(Clone, Debug)]
pub struct ScrambledZipfian {
    gen: Zipfian,
    min: u64,
    itemcount: u64,
}

impl ScrambledZipfian {
    pub fn new(min: u64, max: u64) -> ScrambledZipfian {
        assert!(min <= max, "empty scrambled zipfian range {min}..={max}");
        ScrambledZipfian {
            gen: Zipfian::with_zetan(0, SCRAMBLED_ITEM_COUNT, ZIPFIAN_CONSTANT, SCRAMBLED_ZETAN),
            min,
            itemcount: max - min + 1,
        }
    }

    /// `min + fnvhash64(zipfian) % itemcount` (Java's remainder; the hash is
    /// negative only for one input in 2^64, folded here with `rem_euclid`).
    pub fn next(&mut self, rng: &mut ChaCha8Rng) -> u64 {
        let z = self.gen.next(rng);
        let h = fnv_hash64(z as i64);
        self.min + h.rem_euclid(self.itemcount as i64) as u64
    }
}

/// `SkewedLatestGenerator`: `last - zipfian(last)`, so the most recently
/// inserted record is the most popular. `last` is the highest record number
/// inserted (YCSB's insert-sequence `lastValue()`); the zipfian generator is
/// built once over the record count at the start and grows with `last`.
#[derive(Clone, Debug)]
pub struct SkewedLatest {
    zipfian: Zipfian,
}

impl SkewedLatest {
    /// `last` at construction: the highest record number loaded (YCSB builds
    /// `new ZipfianGenerator(basis.lastValue())`, items `0..last`). Needs
    /// `last >= 2` (see [`super::YcsbSpec::validate`]).
    pub fn new(last: u64) -> SkewedLatest {
        assert!(
            last >= 2,
            "the latest distribution needs at least 3 records, got last record {last}"
        );
        SkewedLatest {
            zipfian: Zipfian::new(0, last - 1, ZIPFIAN_CONSTANT),
        }
    }

    pub fn next(&mut self, last: u64, rng: &mut ChaCha8Rng) -> u64 {
        let back = self.zipfian.next_of(last, rng);
        assert!(back <= last, "latest: zipfian offset {back} beyond the last record {last}");
        last - back
    }
}

/// `DiscreteGenerator`: picks value `i` with probability `weights[i] / sum`,
/// walking the weights in order against one uniform draw.
#[derive(Clone, Debug)]
pub struct Discrete<T: Copy> {
    values: Vec<(f64, T)>,
    sum: f64,
}

impl<T: Copy> Discrete<T> {
    /// Values of weight 0 are left out (as `CoreWorkload` adds only
    /// positive proportions). Needs a positive total.
    pub fn new(weighted: &[(f64, T)]) -> Discrete<T> {
        let values: Vec<(f64, T)> = weighted.iter().copied().filter(|&(w, _)| w > 0.0).collect();
        let sum: f64 = values.iter().map(|&(w, _)| w).sum();
        assert!(!values.is_empty() && sum > 0.0, "a discrete distribution needs a positive weight");
        Discrete { values, sum }
    }

    pub fn next(&self, rng: &mut ChaCha8Rng) -> T {
        let mut val: f64 = rng.gen();
        for &(w, v) in &self.values {
            let pw = w / self.sum;
            if val < pw {
                return v;
            }
            val -= pw;
        }
        // Rounding left `val` just above the last share (YCSB asserts here).
        self.values.last().expect("non-empty").1
    }
}

/// `RandomByteIterator(len).toString()`: each random 32-bit integer gives six
/// characters, `' ' + ((bits >> 0, 5, 10, 15, 20, 25) & (31, 63, 95, 31, 63,
/// 95))`, so a field is printable ASCII (0x20 to 0x7f).
pub fn random_field(rng: &mut ChaCha8Rng, len: usize) -> String {
    const SHIFTS: [u32; 6] = [0, 5, 10, 15, 20, 25];
    const MASKS: [u32; 6] = [31, 63, 95, 31, 63, 95];
    let mut s = Vec::with_capacity(len);
    while s.len() < len {
        let bits: u32 = rng.gen();
        for p in 0..6.min(len - s.len()) {
            s.push(b' ' + ((bits >> SHIFTS[p]) & MASKS[p]) as u8);
        }
    }
    String::from_utf8(s).expect("ASCII")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// YCSB's load writes `user6284781860667377211`, `user8517097267634966620`,
    /// `user1820151046732198393` first (its `basic` binding's output).
    #[test]
    fn fnv_gives_ycsbs_first_keys() {
        assert_eq!(fnv_hash64(0), 6_284_781_860_667_377_211);
        assert_eq!(fnv_hash64(1), 8_517_097_267_634_966_620);
        assert_eq!(fnv_hash64(2), 1_820_151_046_732_198_393);
        assert!(fnv_hash64(12345) >= 0);
    }

    #[test]
    fn zipfian_stays_in_range() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut z = Zipfian::new(10, 19, ZIPFIAN_CONSTANT);
        for _ in 0..10_000 {
            assert!((10..=19).contains(&z.next(&mut rng)));
        }
        let mut s = ScrambledZipfian::new(5, 104);
        for _ in 0..10_000 {
            assert!((5..=104).contains(&s.next(&mut rng)));
        }
    }

    #[test]
    fn random_fields_are_printable_and_sized() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        for len in [0, 1, 5, 6, 7, 100] {
            let f = random_field(&mut rng, len);
            assert_eq!(f.len(), len);
            assert!(f.bytes().all(|b| (0x20..=0x7f).contains(&b)));
        }
    }
}
