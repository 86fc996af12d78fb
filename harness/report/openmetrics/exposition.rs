//! The Prometheus text exposition format (0.0.4), as node_exporter's textfile collector and
//! `promtool check metrics` read it: per family `# HELP`, `# TYPE` and its samples together,
//! families in their enum's order, samples in the order given, no timestamps, label values
//! escaped, and no series twice. It ends with `# EOF`, OpenMetrics' end marker, which the
//! Prometheus parser reads as a comment: a reader can tell a whole file from a cut one.

use crate::error::OutputError;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

/// A metric family; its place in the enum is its place in the text. Every family is a gauge:
/// what a report says is the state of the node when it ran, never a running count.
pub trait Family: Copy + Ord + std::hash::Hash {
    /// `stackbench_check_status`.
    fn name(self) -> &'static str;
    /// One line saying what the value is, with its unit.
    fn help(self) -> &'static str;
}

/// A sample's labels in the order written. A label whose value is empty is left out:
/// Prometheus reads an empty value as no label.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Labels(Vec<(&'static str, String)>);

impl Labels {
    /// The label `name` set to `value`.
    pub fn with(mut self, name: &'static str, value: impl Into<String>) -> Labels {
        let value = value.into();
        if !value.is_empty() {
            self.0.push((name, value));
        }
        self
    }

    /// The label `name` set to `value` when there is one.
    pub fn maybe(self, name: &'static str, value: Option<&str>) -> Labels {
        match value {
            Some(value) => self.with(name, value),
            None => self,
        }
    }

    /// These labels followed by `more`.
    pub fn and(mut self, more: &Labels) -> Labels {
        self.0.extend(more.0.iter().cloned());
        self
    }

    /// `{a="1",b="x"}`, or nothing without labels.
    fn render(&self) -> String {
        if self.0.is_empty() {
            return String::new();
        }
        let pairs: Vec<String> = (self.0.iter())
            .map(|(name, value)| format!("{name}=\"{}\"", escape_label(value)))
            .collect();
        format!("{{{}}}", pairs.join(","))
    }
}

/// The samples of a report, by family.
pub struct Exposition<F: Family> {
    families: BTreeMap<F, Vec<(String, f64)>>,
    /// Each series written, by family and rendered labels: where its sample is.
    seen: HashMap<(F, String), usize>,
}

impl<F: Family> Exposition<F> {
    pub fn new() -> Exposition<F> {
        Exposition {
            families: BTreeMap::new(),
            seen: HashMap::new(),
        }
    }

    /// Adds a sample of `family`. A series given twice with the same value is written once;
    /// with another value it makes [`Exposition::into_text`] fail, since a reader would keep
    /// either.
    pub fn add(&mut self, family: F, labels: &Labels, value: f64) {
        let rendered = labels.render();
        let samples = self.families.entry(family).or_default();
        match self.seen.get(&(family, rendered.clone())) {
            Some(&at) if samples[at].1.to_bits() == value.to_bits() => {}
            _ => {
                self.seen.insert((family, rendered.clone()), samples.len());
                samples.push((rendered, value));
            }
        }
    }

    /// The text, each family's help and type before its samples, ending with `# EOF`.
    pub fn into_text(self) -> Result<String, OutputError> {
        let mut out = String::new();
        for (family, samples) in &self.families {
            let name = family.name();
            let mut series = std::collections::HashSet::new();
            if let Some((labels, _)) = samples.iter().find(|(l, _)| !series.insert(l)) {
                return Err(OutputError::Encode {
                    format: "openmetrics",
                    reason: format!(
                        "the report gives {name}{labels} two values; give each node's result \
                         file once (merge names the nodes of one host by their directories)"
                    ),
                });
            }
            let _ = writeln!(out, "# HELP {name} {}", escape_help(family.help()));
            let _ = writeln!(out, "# TYPE {name} gauge");
            for (labels, value) in samples {
                let _ = writeln!(out, "{name}{labels} {}", number(*value));
            }
        }
        out.push_str("# EOF\n");
        Ok(out)
    }
}

/// A label value as the text format quotes it: backslash, double quote and line feed escaped.
fn escape_label(value: &str) -> String {
    value
        .replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', r"\n")
}

/// A help text as the text format has it: backslash and line feed escaped.
fn escape_help(help: &str) -> String {
    help.replace('\\', r"\\").replace('\n', r"\n")
}

/// A sample value: Go's float syntax, which has `NaN`, `+Inf` and `-Inf` (Rust writes `inf`).
fn number(value: f64) -> String {
    match value {
        v if v.is_nan() => "NaN".to_owned(),
        f64::INFINITY => "+Inf".to_owned(),
        f64::NEG_INFINITY => "-Inf".to_owned(),
        v => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
    enum Test {
        First,
        Second,
    }

    impl Family for Test {
        fn name(self) -> &'static str {
            match self {
                Test::First => "stackbench_first_ratio",
                Test::Second => "stackbench_second_seconds",
            }
        }

        fn help(self) -> &'static str {
            match self {
                Test::First => "A share, 0-1, with a \\ and\na line.",
                Test::Second => "A time.",
            }
        }
    }

    fn labels(value: &str) -> Labels {
        Labels::default().with("name", value)
    }

    #[rstest]
    #[case("plain", "plain")]
    #[case(r"C:\cuda\bin", r"C:\\cuda\\bin")]
    #[case("say \"hi\"", r#"say \"hi\""#)]
    #[case("two\nlines", r"two\nlines")]
    #[case("\\\"\n", r#"\\\"\n"#)]
    fn label_values_are_escaped(#[case] value: &str, #[case] escaped: &str) {
        assert_eq!(labels(value).render(), format!("{{name=\"{escaped}\"}}"));
    }

    #[test]
    fn empty_values_are_no_label_and_no_labels_are_no_braces() {
        let labels = Labels::default()
            .with("a", "")
            .maybe("b", None)
            .maybe("c", Some("3"));
        assert_eq!(labels.render(), "{c=\"3\"}");
        assert_eq!(Labels::default().render(), "");
    }

    #[rstest]
    #[case(1.0, "1")]
    #[case(0.25, "0.25")]
    #[case(1.5e12, "1500000000000")]
    #[case(f64::NAN, "NaN")]
    #[case(f64::INFINITY, "+Inf")]
    #[case(f64::NEG_INFINITY, "-Inf")]
    fn values_are_written_as_go_reads_them(#[case] value: f64, #[case] text: &str) {
        assert_eq!(number(value), text);
    }

    #[test]
    fn families_are_whole_in_their_order_with_help_type_and_an_end() {
        let mut exposition = Exposition::new();
        exposition.add(Test::Second, &labels("b"), 2.0);
        exposition.add(Test::First, &labels("a"), 0.5);
        exposition.add(Test::Second, &labels("c"), 3.0);
        assert_eq!(
            exposition.into_text().unwrap(),
            "# HELP stackbench_first_ratio A share, 0-1, with a \\\\ and\\na line.\n\
             # TYPE stackbench_first_ratio gauge\n\
             stackbench_first_ratio{name=\"a\"} 0.5\n\
             # HELP stackbench_second_seconds A time.\n\
             # TYPE stackbench_second_seconds gauge\n\
             stackbench_second_seconds{name=\"b\"} 2\n\
             stackbench_second_seconds{name=\"c\"} 3\n\
             # EOF\n"
        );
    }

    #[test]
    fn a_series_given_twice_is_written_once_or_refused_when_its_values_differ() {
        let mut same = Exposition::new();
        same.add(Test::First, &labels("a"), 1.0);
        same.add(Test::First, &labels("a"), 1.0);
        same.add(Test::Second, &labels("a"), 1.0);
        let text = same.into_text().unwrap();
        assert_eq!(text.matches("stackbench_first_ratio{").count(), 1, "{text}");
        assert_eq!(text.matches("stackbench_second_seconds{").count(), 1);

        let mut differ = Exposition::new();
        differ.add(Test::First, &labels("a"), 1.0);
        differ.add(Test::First, &labels("a"), 2.0);
        let error = differ.into_text().unwrap_err().to_string();
        assert!(
            error.contains("stackbench_first_ratio{name=\"a\"} two values"),
            "{error}"
        );
    }
}
