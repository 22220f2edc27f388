//! The device's counters, declared as tables that reports, the crash
//! harness and JSON iterate.
//!
//! - The framework's ([`crate::DeviceStats`]): one line each in the
//!   `device_stats!` table of `device.rs`, which makes the struct's field
//!   (its name is the JSON key) and its [`StatSpec`]: the group reports
//!   print it under and its row there.
//! - A protocol's own, beside them: what makes the protocol special (SCC's
//!   forced erases, BPCC's pinned pages), which no other protocol has and
//!   the framework does not know. The protocol's registry entry lists them
//!   ([`CounterSpec`]), with the help text reports print beside each.

use serde::ser::{Serialize, SerializeMap, Serializer};

/// One framework counter of [`crate::DeviceStats`]: its field name (the
/// key in JSON, in [`crate::DeviceStats::get`] and in the crash harness's
/// expectations), the group reports print it under, and its row there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatSpec {
    pub key: &'static str,
    pub group: Group,
    pub row: Row,
}

/// The groups a device report prints its counters under, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    Host,
    Flash,
    Ftl,
    /// Left out of a report while every counter of it is zero (no fault model).
    Faults,
    /// The protocol's own counters ([`ProtocolCounters`]): no framework counter.
    Protocol,
    Transactions,
    /// The device clock (a report prints it among derived figures).
    Time,
}

impl Group {
    pub const ALL: [Group; 7] = [
        Group::Host,
        Group::Flash,
        Group::Ftl,
        Group::Faults,
        Group::Protocol,
        Group::Transactions,
        Group::Time,
    ];

    /// The group's heading.
    pub fn name(self) -> &'static str {
        match self {
            Group::Host => "host",
            Group::Flash => "flash",
            Group::Ftl => "ftl",
            Group::Faults => "flash faults",
            Group::Protocol => "protocol's own",
            Group::Transactions => "transactions",
            Group::Time => "time",
        }
    }

    /// Whether a report shows the group when all of its counters are zero.
    pub fn shown_when_zero(self) -> bool {
        self != Group::Faults
    }
}

/// How a device report prints a counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Row {
    /// A row of its own, under this label.
    One(&'static str),
    /// One row with the next counter (a [`Row::Second`]): `this / next`.
    Pair(&'static str),
    /// A [`Row::Pair`] shown only when this counter is not zero.
    PairIfNonzero(&'static str),
    /// The second counter of the pair before it.
    Second,
    /// In JSON only (the report derives a figure from it, or leaves it to
    /// `--json`).
    Unlisted,
}

/// Declares [`crate::DeviceStats`] from one table: per group, each counter's
/// doc, field name and [`Row`]. Makes the struct (its fields in table order,
/// the `protocol` counters last), `DeviceStats::SPECS`, `iter` and `get`.
macro_rules! device_stats {
    ($( $group:ident { $( $(#[$doc:meta])* $field:ident: $row:expr, )* } )*) => {
        /// Counters of one device, since mount or the last `reset_stats`: the
        /// framework's (each declared once, with its row in reports:
        /// [`DeviceStats::SPECS`]) and the protocol's own.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
        pub struct DeviceStats {
            $($( $(#[$doc])* pub $field: u64, )*)*
            /// The protocol's own counters, under the names its registry entry
            /// declares (SCC's forced erases, BPCC's pinned pages moved): what no
            /// other protocol has and the framework does not know.
            pub protocol: $crate::counters::ProtocolCounters,
        }

        impl DeviceStats {
            /// Every framework counter, in declaration order (the order of
            /// the fields, of JSON and of reports).
            pub const SPECS: &'static [$crate::counters::StatSpec] = &[$($(
                $crate::counters::StatSpec {
                    key: stringify!($field),
                    group: $crate::counters::Group::$group,
                    row: $row,
                },
            )*)*];

            /// (spec, value) of every framework counter, in declaration order.
            pub fn iter(&self) -> impl Iterator<Item = (&'static $crate::counters::StatSpec, u64)> {
                Self::SPECS.iter().zip([$($(self.$field,)*)*])
            }

            /// The framework counter `key` (its field name), or `None` if
            /// there is none by that name.
            pub fn get(&self, key: &str) -> Option<u64> {
                match key {
                    $($( stringify!($field) => Some(self.$field), )*)*
                    _ => None,
                }
            }
        }
    };
}
pub(crate) use device_stats;

/// The most counters one protocol reports (kept in a fixed array so that
/// [`crate::DeviceStats`] stays `Copy`).
pub const PROTOCOL_COUNTERS_MAX: usize = 20;

/// One protocol counter: its name in reports and JSON, and what it counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterSpec {
    pub key: &'static str,
    pub help: &'static str,
}

/// A protocol's counters, by the names its entry declares.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct ProtocolCounters {
    specs: &'static [CounterSpec],
    values: [u64; PROTOCOL_COUNTERS_MAX],
}

impl ProtocolCounters {
    /// Counters named by `specs`, all zero. Panics if there are more than
    /// [`PROTOCOL_COUNTERS_MAX`] (a protocol's static list: a build error in
    /// effect, caught by every test that builds the device).
    pub fn new(specs: &'static [CounterSpec]) -> ProtocolCounters {
        assert!(
            specs.len() <= PROTOCOL_COUNTERS_MAX,
            "a protocol declares at most {PROTOCOL_COUNTERS_MAX} counters"
        );
        ProtocolCounters {
            specs,
            values: [0; PROTOCOL_COUNTERS_MAX],
        }
    }

    /// The counters' names and help, in declaration order.
    pub fn specs(&self) -> &'static [CounterSpec] {
        self.specs
    }

    fn index(&self, key: &str) -> Option<usize> {
        self.specs.iter().position(|s| s.key == key)
    }

    /// The counter `key`, or 0 if the protocol has none by that name.
    pub fn get(&self, key: &str) -> u64 {
        self.index(key).map_or(0, |i| self.values[i])
    }

    /// Adds `n` to counter `key`. Panics if the protocol did not declare it:
    /// a protocol counting under a name its entry does not list is a bug.
    pub fn add(&mut self, key: &str, n: u64) {
        let i = self
            .index(key)
            .unwrap_or_else(|| panic!("protocol counter `{key}` is not declared"));
        self.values[i] += n;
    }

    /// (name, value) of every counter, in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.specs.iter().zip(self.values).map(|(s, v)| (s.key, v))
    }

    /// Adds another snapshot of the same protocol's counters (sums over runs).
    pub fn add_all(&mut self, other: &ProtocolCounters) {
        if self.specs.is_empty() {
            self.specs = other.specs;
        }
        for (key, v) in other.iter() {
            if let Some(i) = self.index(key) {
                self.values[i] += v;
            }
        }
    }
}

/// `{name: value, ...}`.
impl std::fmt::Debug for ProtocolCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// A map of name to value, in declaration order.
impl Serialize for ProtocolCounters {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.specs.len()))?;
        for (k, v) in self.iter() {
            m.serialize_entry(k, &v)?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[CounterSpec] = &[CounterSpec { key: "a", help: "first" }, CounterSpec { key: "b", help: "second" }];

    #[test]
    fn counts_by_name_and_serializes_as_a_map_in_order() {
        let mut c = ProtocolCounters::new(SPECS);
        c.add("b", 3);
        c.add("a", 1);
        c.add("b", 2);
        assert_eq!((c.get("a"), c.get("b"), c.get("zz")), (1, 5, 0));
        assert_eq!(serde_json::to_string(&c).unwrap(), r#"{"a":1,"b":5}"#);
        let mut sum = ProtocolCounters::default();
        sum.add_all(&c);
        sum.add_all(&c);
        assert_eq!(sum.iter().collect::<Vec<_>>(), vec![("a", 2), ("b", 10)]);
    }

    /// The table makes the fields, JSON and `get` agree, in one order; a
    /// pair's second counter follows it in its group.
    #[test]
    fn device_stats_follow_their_table() {
        use crate::DeviceStats;
        let s = DeviceStats {
            commits: 7,
            sim_time_ns: 9,
            ..DeviceStats::default()
        };
        let text = serde_json::to_string(&s).unwrap();
        let at: Vec<usize> = DeviceStats::SPECS
            .iter()
            .map(|c| c.key)
            .chain(["protocol"])
            .map(|k| text.find(&format!("\"{k}\":")).unwrap_or_else(|| panic!("{k} not in {text}")))
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "fields out of the table's order: {text}");
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(json.as_object().unwrap().len(), DeviceStats::SPECS.len() + 1);
        for (c, v) in s.iter() {
            assert_eq!(Some(v), s.get(c.key));
            assert_eq!(json[c.key], v);
        }
        assert_eq!(
            (s.get("commits"), s.get("sim_time_ns"), s.get("protocol")),
            (Some(7), Some(9), None)
        );
        for (i, c) in DeviceStats::SPECS.iter().enumerate() {
            let pairs = |r: Row| matches!(r, Row::Pair(_) | Row::PairIfNonzero(_));
            let next = DeviceStats::SPECS.get(i + 1);
            assert_eq!(
                pairs(c.row),
                next.is_some_and(|n| n.row == Row::Second && n.group == c.group),
                "{}",
                c.key
            );
            if c.row == Row::Second {
                assert!(i > 0 && pairs(DeviceStats::SPECS[i - 1].row), "{}", c.key);
            }
            assert_ne!(c.group, Group::Protocol, "{}: the protocol's own are its entry's", c.key);
        }
    }

    #[test]
    #[should_panic(expected = "not declared")]
    fn an_undeclared_counter_is_a_bug() {
        ProtocolCounters::new(SPECS).add("c", 1);
    }
}
