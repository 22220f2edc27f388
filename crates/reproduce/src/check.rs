//! The checks of a reproduction (REPRODUCE.md): one number the paper states
//! beside ours for the same quantity, what kind of comparison it is, and
//! whether they agree. Paper-independent: every paper builds its checks and
//! its summary from these types.

use serde::Serialize;

/// How `paper` and `measured` are compared (REPRODUCE.md's four kinds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Numbers: same sign and abs(measured / paper - 1) <= 0.25.
    Value,
    /// The paper states a bound ("less than", "under", "at most"): ours
    /// must be at most the paper's figure.
    Bound,
    /// An ordering, trend or sign the paper claims: equal strings.
    Order,
    /// True by construction of what we built (a protocol that persists no
    /// mapping table writes none; an fsync count the journal mode fixes):
    /// shown, never counted.
    Structural,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Value => "value",
            Kind::Bound => "bound",
            Kind::Order => "order",
            Kind::Structural => "structural",
        }
    }
}

/// The paper's unit, kept as the paper states the number (a percentage is
/// never turned into a ratio).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Percent,
    Factor,
    Ms,
    S,
    Count,
    Ratio,
    /// For `order` checks.
    Order,
}

impl Unit {
    pub fn format(self, v: f64) -> String {
        match self {
            Unit::Percent => format!("{v:+.1}%"),
            Unit::Factor => format!("{v:.2}x"),
            Unit::Ms => format!("{v:.1} ms"),
            Unit::S => format!("{v:.2} s"),
            Unit::Count => crate::fmt::thousands(v.round() as u64),
            Unit::Ratio => format!("{v:.3}"),
            Unit::Order => String::new(),
        }
    }
}

/// Why a counted check misses (REPRODUCE.md): every miss has one, from
/// the measurement its note gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// The paper leaves the choice open (device fill, zone sizes, the
    /// trace, a cache's size): the note gives the sweep or the setting that
    /// moves the figure.
    Setup,
    /// The paper's own numbers disagree: the note gives the arithmetic from
    /// its tables.
    Paper,
    /// Host time the paper measured on a real host and we model apart.
    Host,
    /// A gap of ours: the note names its cause.
    Model,
}

impl Class {
    pub const ALL: [Class; 4] = [Class::Setup, Class::Paper, Class::Host, Class::Model];

    pub fn name(self) -> &'static str {
        match self {
            Class::Setup => "setup",
            Class::Paper => "paper",
            Class::Host => "host",
            Class::Model => "model",
        }
    }
}

/// The absolute floor of a value check in percentage points: a paper's
/// figure of 0 or a few percent is judged within this many points of it,
/// since 25% of +1.6% is half a point (the same rule for every paper;
/// above 8% the relative 25% is the wider and applies).
pub const FLOOR_POINTS: f64 = 2.0;

/// A number (or an ordering) as a check holds it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Figure {
    Number(f64),
    Order(String),
}

#[derive(Clone, Debug, Serialize)]
pub struct Check {
    pub id: String,
    pub what: String,
    pub paper: Figure,
    pub measured: Figure,
    pub unit: Unit,
    pub kind: Kind,
    /// `value`: within 25% of the paper's, same sign; `bound`: within the
    /// paper's bound; `order`: the orderings are equal; `structural`: `None`
    /// (serialized as null): not counted.
    pub within_25pct: Option<bool>,
    /// Where they differ: the measured reason.
    pub note: String,
    /// A counted check that misses: why ([`Class`]); `None` (null) for one
    /// that agrees, or is not counted.
    pub class: Option<Class>,
    /// A miss's cause, as its class names it (the paper's arithmetic for a
    /// `paper` one); the note begins with it. Absent for other checks.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub why: String,
    /// A bound the paper states from below ("over 35%"): ours must be at
    /// least its figure. Absent from the JSON of every other check.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub at_least: bool,
}

impl Check {
    fn new(id: &str, what: &str, paper: Figure, measured: Figure, unit: Unit, kind: Kind, within: Option<bool>) -> Check {
        Check {
            id: id.into(),
            what: what.into(),
            paper,
            measured,
            unit,
            kind,
            within_25pct: within,
            note: String::new(),
            class: None,
            why: String::new(),
            at_least: false,
        }
    }

    /// A value check; `within_25pct` is computed here from the two numbers
    /// (with the floor of [`FLOOR_POINTS`] for percentages).
    pub fn value(id: &str, what: &str, paper: f64, measured: f64, unit: Unit) -> Check {
        let within = agrees_value(paper, measured, unit);
        Check::new(
            id,
            what,
            Figure::Number(paper),
            Figure::Number(measured),
            unit,
            Kind::Value,
            Some(within),
        )
    }

    /// A bound the paper states ("less than `bound`", "at most"): within if
    /// ours is at most the bound.
    pub fn bound(id: &str, what: &str, bound: f64, measured: f64, unit: Unit) -> Check {
        Check::bounded(id, what, bound, measured, unit, false)
    }

    /// A bound the paper states from below ("over", "more than"): within if
    /// ours is at least the bound.
    pub fn at_least(id: &str, what: &str, bound: f64, measured: f64, unit: Unit) -> Check {
        Check::bounded(id, what, bound, measured, unit, true)
    }

    fn bounded(id: &str, what: &str, bound: f64, measured: f64, unit: Unit, at_least: bool) -> Check {
        let within = if at_least { measured >= bound } else { measured <= bound };
        let mut c = Check::new(
            id,
            what,
            Figure::Number(bound),
            Figure::Number(measured),
            unit,
            Kind::Bound,
            Some(within),
        );
        c.at_least = at_least;
        c
    }

    /// An ordering check: the orderings as strings, equal or not.
    pub fn order(id: &str, what: &str, paper: &str, measured: &str) -> Check {
        let within = paper == measured;
        Check::new(
            id,
            what,
            Figure::Order(paper.into()),
            Figure::Order(measured.into()),
            Unit::Order,
            Kind::Order,
            Some(within),
        )
    }

    /// A number true by construction of what we built: shown beside the
    /// paper's, not counted.
    pub fn structural(id: &str, what: &str, paper: f64, measured: f64, unit: Unit) -> Check {
        Check::new(
            id,
            what,
            Figure::Number(paper),
            Figure::Number(measured),
            unit,
            Kind::Structural,
            None,
        )
    }

    /// A number check of `kind` (value, bound or structural).
    pub fn number(kind: Kind, id: &str, what: &str, paper: f64, measured: f64, unit: Unit) -> Check {
        match kind {
            Kind::Bound => Check::bound(id, what, paper, measured, unit),
            Kind::Structural => Check::structural(id, what, paper, measured, unit),
            Kind::Value | Kind::Order => Check::value(id, what, paper, measured, unit),
        }
    }

    /// Counted and within (25%, the bound, or equal).
    pub fn agrees(&self) -> bool {
        self.within_25pct == Some(true)
    }

    /// Counted and not within: a miss, which must have a [`Class`].
    pub fn misses(&self) -> bool {
        self.within_25pct == Some(false)
    }

    /// Gives a miss its class, the cause that class names (`why`) and its
    /// note: `why`, then the measured reason. A check that does not miss
    /// keeps no class, and its note is the measured reason alone.
    pub fn classify(&mut self, class: Class, why: &str, measured: &str) {
        if self.misses() {
            self.class = Some(class);
            self.why = why.to_string();
            self.note = format!("{why} {measured}").trim().to_string();
        } else {
            self.note = measured.to_string();
        }
    }

    /// Writes the note of a check that differs: with `cause` (a paper's
    /// `class_of` table: the class a miss of this check has, and why), a
    /// miss is [classified](Check::classify); any other check's note is the
    /// measured reason alone.
    pub fn explain<S: AsRef<str>>(&mut self, cause: Option<(Class, S)>, measured: &str) {
        match cause {
            Some((class, why)) => self.classify(class, why.as_ref(), measured),
            None => self.note = measured.to_string(),
        }
    }

    /// The class of a check that misses (`None` for any other).
    pub fn miss_class(&self) -> Option<Class> {
        self.class.filter(|_| self.misses())
    }

    /// Whether ours and the paper's figure differ: numbers beyond 25% (a
    /// bound's figure too, a structural one too), a bound not kept however
    /// near its figure, orderings unequal. The notes explain every check that
    /// differs, whatever its kind.
    pub fn differs(&self) -> bool {
        if self.kind == Kind::Bound && self.within_25pct == Some(false) {
            return true;
        }
        match (&self.paper, &self.measured) {
            (Figure::Number(p), Figure::Number(m)) => !agrees_value(*p, *m, self.unit),
            (p, m) => p != m,
        }
    }

    /// A figure of the check in its unit (a bound says so).
    pub fn show(&self, f: &Figure) -> String {
        match f {
            Figure::Number(v) => self.unit.format(*v),
            Figure::Order(s) => s.clone(),
        }
    }

    /// The paper's figure as the tables show it: a bound as "at most X".
    pub fn show_paper(&self) -> String {
        let s = self.show(&self.paper);
        if self.kind == Kind::Bound {
            format!("{} {s}", if self.at_least { "at least" } else { "at most" })
        } else {
            s
        }
    }

    /// The "within 25%" column: yes, no, or "not counted" (structural).
    pub fn verdict(&self) -> &'static str {
        match self.within_25pct {
            Some(true) => "yes",
            Some(false) => "no",
            None => "not counted",
        }
    }

    /// The verdict with a miss's class: "no: setup".
    pub fn verdict_class(&self) -> String {
        match self.miss_class() {
            Some(k) => format!("no: {}", k.name()),
            None => self.verdict().to_string(),
        }
    }
}

/// The class of a miss judged on device + host time, by measurement: `host`
/// when host time decides it (on device time alone, `device`, the check
/// agrees, or its value lies farther from the paper's: host time moves it
/// toward the paper, and our host model prices less than a paper's real
/// host); otherwise `setup`, with `setup_why` given the device-only figure.
/// Without a device-only check (`None`) it stays `host`.
pub fn host_or_setup(c: &Check, device: Option<&Check>, host_why: String, setup_why: impl FnOnce(&str) -> String) -> (Class, String) {
    let Some(d) = device else { return (Class::Host, host_why) };
    let host_decides = d.agrees()
        || match (&c.paper, &c.measured, &d.measured) {
            (Figure::Number(paper), Figure::Number(m), Figure::Number(dm)) => (m - paper).abs() < (dm - paper).abs(),
            _ => false,
        };
    if host_decides {
        return (Class::Host, host_why);
    }
    let alone = d.show(&d.measured);
    (Class::Setup, setup_why(&alone))
}

/// Appends `more` (sentences, starting with a space) to a note, ending the
/// note's last sentence first if it has no period.
pub fn append_sentences(note: &mut String, more: &str) {
    if !more.is_empty() && !note.is_empty() && !note.ends_with('.') {
        note.push('.');
    }
    note.push_str(more);
}

/// A value check's rule: within 25% of the paper's figure with its sign,
/// or, for a percentage, within [`FLOOR_POINTS`] of it whatever the sign
/// (a paper's +1.6% and our -0.3% are both "about nothing").
pub fn agrees_value(paper: f64, measured: f64, unit: Unit) -> bool {
    within_25pct(paper, measured) || (unit == Unit::Percent && (measured - paper).abs() <= FLOOR_POINTS)
}

/// Same sign as the paper and within 25% of it.
pub fn within_25pct(paper: f64, measured: f64) -> bool {
    if paper == 0.0 {
        return measured == 0.0;
    }
    paper.signum() == measured.signum() && (measured / paper - 1.0).abs() <= 0.25
}

/// An ordering of named values, largest first, as "A > B > C" (ties "=").
pub fn ordering(items: &[(&str, f64)]) -> String {
    let mut v: Vec<(&str, f64)> = items.to_vec();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut s = String::new();
    for (i, (name, x)) in v.iter().enumerate() {
        if i > 0 {
            s += if *x == v[i - 1].1 { " = " } else { " > " };
        }
        s += name;
    }
    s
}

/// The checks counted (value, bound, order), how many of them agree, and
/// the structural ones, listed apart. The line breaks the counted ones down:
/// measured (value and bound), orderings, and trends (the order checks over
/// a sweep of one parameter, named `<figure>.trend.<what>`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub counted: usize,
    pub within: usize,
    pub structural: Vec<String>,
    /// (within, counted) of the value and bound checks, the orderings, the trends.
    pub measured: (usize, usize),
    pub order: (usize, usize),
    pub trend: (usize, usize),
    /// The misses per class ("setup", "paper", "host", "model"), and
    /// "unclassified" for a miss with none (a reproduction's own test fails
    /// on one).
    pub misses: std::collections::BTreeMap<&'static str, usize>,
    /// "N of M value/bound/order checks within 25%: measured (value/bound) a
    /// of b, order c of d[, trend e of f]; misses: setup s, paper p, host h,
    /// model m[, unclassified u] (structural, not counted: ...)".
    pub line: String,
}

/// One check whose figure moves with the host profile: its figure and
/// verdict at each scale of every price (x0.5, x1, x2).
#[derive(Clone, Debug, Serialize)]
pub struct HostSweep {
    pub id: String,
    pub scales: Vec<f64>,
    pub measured: Vec<Figure>,
    pub within_25pct: Vec<Option<bool>>,
}

impl HostSweep {
    /// The checks of the x1 run, against the same checks computed at the
    /// other scales (`at`: (scale, checks)): one row per check whose figure
    /// moves.
    pub fn of(x1: &[Check], at: &[(f64, Vec<Check>)]) -> Vec<HostSweep> {
        let mut out = Vec::new();
        for c in x1.iter().filter(|c| c.kind != Kind::Structural) {
            let others: Vec<(f64, &Check)> = at
                .iter()
                .filter_map(|(s, v)| v.iter().find(|o| o.id == c.id).map(|o| (*s, o)))
                .collect();
            if others.iter().all(|(_, o)| o.measured == c.measured) {
                continue;
            }
            let mut rows: Vec<(f64, &Check)> = others;
            rows.push((1.0, c));
            rows.sort_by(|a, b| a.0.total_cmp(&b.0));
            out.push(HostSweep {
                id: c.id.clone(),
                scales: rows.iter().map(|r| r.0).collect(),
                measured: rows.iter().map(|r| r.1.measured.clone()).collect(),
                within_25pct: rows.iter().map(|r| r.1.within_25pct).collect(),
            });
        }
        out
    }

    /// Its cells, one a scale: the figure as `check` (the same id's) shows
    /// it, and its verdict ("12.0x (yes)").
    pub fn cells(&self, check: Option<&Check>) -> Vec<String> {
        self.measured
            .iter()
            .zip(&self.within_25pct)
            .map(|(m, w)| {
                let verdict = match w {
                    Some(true) => "yes",
                    Some(false) => "no",
                    None => "-",
                };
                format!("{} ({verdict})", check.map_or(String::new(), |c| c.show(m)))
            })
            .collect()
    }
}

/// What is wrong with a report's classes, for a reproduction's own test: a
/// miss with no class, a miss with no note or no cause, a class on a check
/// that does not miss, a summary counting any unclassified (empty: none).
pub fn class_problems(checks: &[Check], summary: &Summary) -> Vec<String> {
    let mut out = Vec::new();
    for c in checks {
        match (c.misses(), c.class) {
            (true, None) => out.push(format!("{} misses without a class", c.id)),
            (true, Some(_)) if c.note.is_empty() || c.why.is_empty() => out.push(format!("{} misses without its cause", c.id)),
            (false, Some(k)) => out.push(format!("{} has class {} but does not miss", c.id, k.name())),
            _ => {}
        }
    }
    if summary.misses.get("unclassified").copied().unwrap_or(0) > 0 {
        out.push(format!("the summary counts unclassified misses: {}", summary.line));
    }
    out
}

/// Whether an order check is a trend (its id has a `.trend.` part).
pub fn is_trend(c: &Check) -> bool {
    c.kind == Kind::Order && c.id.contains(".trend.")
}

impl Summary {
    pub fn of(checks: &[Check]) -> Summary {
        let count = |f: &dyn Fn(&Check) -> bool| {
            let of: Vec<&Check> = checks.iter().filter(|c| f(c)).collect();
            (of.iter().filter(|c| c.agrees()).count(), of.len())
        };
        let measured = count(&|c| matches!(c.kind, Kind::Value | Kind::Bound));
        let order = count(&|c| c.kind == Kind::Order && !is_trend(c));
        let trend = count(&is_trend);
        let counted = checks.iter().filter(|c| c.kind != Kind::Structural).count();
        let within = checks.iter().filter(|c| c.agrees()).count();
        let structural: Vec<String> = checks.iter().filter(|c| c.kind == Kind::Structural).map(|c| c.id.clone()).collect();
        let mut line = format!(
            "{within} of {counted} value/bound/order checks within 25%: measured (value/bound) {} of {}, order {} of {}",
            measured.0, measured.1, order.0, order.1
        );
        if trend.1 > 0 {
            line += &format!(", trend {} of {}", trend.0, trend.1);
        }
        let mut misses = std::collections::BTreeMap::new();
        for class in Class::ALL {
            misses.insert(class.name(), checks.iter().filter(|c| c.misses() && c.class == Some(class)).count());
        }
        let unclassified = checks.iter().filter(|c| c.misses() && c.class.is_none()).count();
        if counted > within {
            let parts: Vec<String> = Class::ALL.iter().map(|k| format!("{} {}", k.name(), misses[k.name()])).collect();
            line += &format!("; misses: {}", parts.join(", "));
            if unclassified > 0 {
                line += &format!(", unclassified {unclassified}");
            }
        }
        misses.insert("unclassified", unclassified);
        if !structural.is_empty() {
            line += &format!(" (structural, not counted: {})", structural.join(", "));
        }
        Summary {
            counted,
            within,
            structural,
            measured,
            order,
            trend,
            misses,
            line,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_is_relative_and_signed() {
        assert!(within_25pct(130.0, 100.0));
        assert!(!within_25pct(130.0, 90.0));
        assert!(!within_25pct(1.5, -1.5));
        assert!(within_25pct(-10.0, -12.0));
        assert!(!within_25pct(0.0, 0.1));
    }

    #[test]
    fn class_problems_name_every_unclassified_miss() {
        let mut checks = vec![
            Check::value("ok", "", 10.0, 10.0, Unit::Count),
            Check::value("off", "", 10.0, 30.0, Unit::Count),
        ];
        let p = class_problems(&checks, &Summary::of(&checks));
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[0].starts_with("off misses without a class"), "{p:?}");
        checks[1].classify(Class::Setup, "The fill.", "measured");
        assert!(class_problems(&checks, &Summary::of(&checks)).is_empty());
        checks[0].class = Some(Class::Model);
        assert!(class_problems(&checks, &Summary::of(&checks))[0].contains("does not miss"));
    }

    #[test]
    fn a_host_judged_miss_is_host_only_when_host_time_decides_it() {
        let class = |c: &Check, d: &Check| host_or_setup(c, Some(d), "host".into(), |a| format!("setup {a}"));
        let v = |m: f64| Check::value("x", "x", 81.0, m, Unit::Percent);
        // Device time alone as far from the paper's: not host time.
        assert_eq!(class(&v(33.6), &v(34.3)), (Class::Setup, "setup +34.3%".to_string()));
        // Device time alone farther, or agreeing: host time decides.
        assert_eq!(class(&v(141.5), &v(200.0)).0, Class::Host);
        assert_eq!(class(&v(141.5), &v(80.0)).0, Class::Host);
        let o = |m: &str| Check::order("o", "o", "A > B", m);
        assert_eq!(class(&o("B > A"), &o("B > A")).0, Class::Setup);
        assert_eq!(class(&o("B > A"), &o("A > B")).0, Class::Host);
        // No device-only check: host, as declared.
        assert_eq!(host_or_setup(&v(141.5), None, "h".into(), |_| String::new()).0, Class::Host);
    }

    #[test]
    fn a_small_percentage_is_judged_within_points() {
        // 25% of +1.6% is 0.4 points: the floor of 2 points applies, whatever the sign.
        assert!(agrees_value(1.6, -0.3, Unit::Percent));
        assert!(agrees_value(0.0, 1.9, Unit::Percent));
        assert!(!agrees_value(0.0, 2.1, Unit::Percent));
        assert!(!agrees_value(-2.0, 0.5, Unit::Percent));
        // Above 8% the relative rule is the wider one.
        assert!(agrees_value(40.0, 31.0, Unit::Percent) && !agrees_value(40.0, 29.0, Unit::Percent));
        // The floor is percentage points: other units keep the relative rule.
        assert!(!agrees_value(0.0, 0.1, Unit::Count) && !agrees_value(1.0, 1.3, Unit::Factor));
        let c = Check::value("v", "", 1.6, 3.5, Unit::Percent);
        assert!(c.agrees() && !c.differs());
        assert!(Check::value("w", "", 1.6, 3.7, Unit::Percent).misses());
    }

    #[test]
    fn orderings() {
        assert_eq!(ordering(&[("a", 1.0), ("b", 3.0), ("c", 2.0)]), "b > c > a");
        assert_eq!(ordering(&[("a", 1.0), ("b", 1.0)]), "a = b");
    }

    #[test]
    fn kinds_and_the_summary() {
        let checks = [
            Check::value("v", "", 10.0, 12.0, Unit::Count),
            Check::bound("b.in", "", 0.75, 0.2, Unit::Percent),
            Check::bound("b.out", "", 0.75, 2.8, Unit::Percent),
            Check::order("o", "", "A > B", "B > A"),
            Check::structural("s", "", 0.0, 0.0, Unit::Percent),
        ];
        assert_eq!(
            checks.iter().map(|c| c.within_25pct).collect::<Vec<_>>(),
            [Some(true), Some(true), Some(false), Some(false), None]
        );
        // A bound met far below its figure still differs from it: it has a
        // note (within the floor's 2 points it does not: 0.2% and 0.75%).
        assert!(!checks[1].differs() && !checks[0].differs() && !checks[4].differs());
        assert!(Check::bound("b.far", "", 15.0, 2.0, Unit::Percent).differs());
        // A bound missed by a little differs too (0.22 against at most 0.194).
        assert!(Check::bound("b.near", "", 0.194, 0.22, Unit::S).differs());
        assert_eq!(checks[1].show_paper(), "at most +0.8%");
        let over = Check::at_least("b.over", "", 35.0, 41.0, Unit::Percent);
        assert_eq!((over.agrees(), over.show_paper().as_str()), (true, "at least +35.0%"));
        assert!(!Check::at_least("b.under", "", 35.0, 20.0, Unit::Percent).agrees());
        assert!(serde_json::to_value(&checks[1]).unwrap().get("at_least").is_none());
        let mut checks = checks.to_vec();
        let s = Summary::of(&checks);
        assert_eq!((s.counted, s.within), (4, 2));
        assert_eq!(s.misses["unclassified"], 2);
        assert_eq!(
            s.line,
            "2 of 4 value/bound/order checks within 25%: measured (value/bound) 2 of 3, order 0 of 1; misses: setup 0, paper 0, host 0, model 0, unclassified 2 (structural, not counted: s)"
        );
        // Only a miss keeps a class; every check keeps its note.
        for (c, class) in checks
            .iter_mut()
            .zip([Class::Model, Class::Setup, Class::Paper, Class::Host, Class::Model])
        {
            c.classify(class, "Why.", &format!("measured {}", c.id));
        }
        assert_eq!(
            checks.iter().map(|c| c.class).collect::<Vec<_>>(),
            [None, None, Some(Class::Paper), Some(Class::Host), None]
        );
        assert_eq!(checks[2].note, "Why. measured b.out");
        assert_eq!(
            (checks[2].why.as_str(), checks[0].note.as_str(), checks[0].why.as_str()),
            ("Why.", "measured v", "")
        );
        let s = Summary::of(&checks);
        assert_eq!((s.misses["paper"], s.misses["host"], s.misses["unclassified"]), (1, 1, 0));
        assert!(s.line.contains("; misses: setup 0, paper 1, host 1, model 0 ("), "{}", s.line);
        assert_eq!(serde_json::to_value(&checks[2]).unwrap()["class"], "paper");
        assert!(serde_json::to_value(&checks[0]).unwrap()["class"].is_null());
        let trend = Check::order("fig.trend.x", "", "flat", "flat");
        let s = Summary::of(&[checks[3].clone(), trend]);
        assert_eq!((s.order, s.trend), ((0, 1), (1, 1)));
        assert!(
            s.line
                .contains("order 0 of 1, trend 1 of 1; misses: setup 0, paper 0, host 1, model 0"),
            "{}",
            s.line
        );
        let json = serde_json::to_value(&checks[4]).unwrap();
        assert!(json["within_25pct"].is_null());
        assert_eq!(json["kind"], "structural");
    }
}
