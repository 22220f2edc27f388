//! Small formatting helpers shared by the reports (and by the CLI's tables).

/// 1234567 -> "1,234,567".
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A count rounded to a whole number, with thousands separators (negative: 0).
pub fn count(v: f64) -> String {
    thousands(v.round().max(0.0) as u64)
}

/// The mean of some values (0 when there are none).
pub fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        0.0
    } else {
        s / n as f64
    }
}

/// The largest of some values (`None`: there are none).
pub fn largest(xs: impl Iterator<Item = f64>) -> Option<f64> {
    xs.fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
}

/// `a` over `b` as a change in percent (0 when `b` is not positive).
pub fn pct(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        100.0 * (a / b - 1.0)
    } else {
        0.0
    }
}

/// `a / b` (0 when `b` is not positive).
pub fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// Nanoseconds as milliseconds.
pub fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(100), "100");
        assert_eq!(count(-3.0), "0");
        assert_eq!(count(1499.5), "1,500");
        assert_eq!(mean(std::iter::empty()), 0.0);
        assert_eq!(largest([1.0, 3.0, 2.0].into_iter()), Some(3.0));
        assert_eq!(pct(3.0, 2.0), 50.0);
        assert_eq!(ratio(1.0, 0.0), 0.0);
    }
}
