//! JUnit XML for the check report, so Jenkins, GitLab and GitHub show it without plugins: one
//! `<testsuite>` per combination (its environment as `<properties>`), one `<testcase>` per
//! check. A failure is `<failure>`, a skip `<skipped>`, a warning a pass with its reason in
//! `<system-out>`. The shape follows the Jenkins xUnit plugin's `junit-10.xsd`
//! (tests/data/junit-10.xsd), which the tests validate against. Scan, doctor, bench, compare
//! and merge reports have no tests to report, so this format refuses them.

use super::{driver_version, library_path, Exporter};
use crate::bench::model::BenchReport;
use crate::compare::model::CompareReport;
use crate::doctor::DoctorReport;
use crate::error::OutputError;
use crate::merge::MergeReport;
use crate::model::ScanReport;
use crate::pathname::Shown;
use crate::schema::check::{CheckReport, CheckResult, CombinationReport, Status};
use std::fmt::Write;

/// The JUnit XML exporter (check reports only).
pub struct Junit;

/// Why the reports other than check's have no JUnit form.
fn unsupported(report: &'static str) -> OutputError {
    OutputError::Unsupported {
        format: "junit",
        report,
        instead: "json, csv, markdown or terminal",
    }
}

impl Exporter for Junit {
    fn scan(&self, _report: &ScanReport) -> Result<Vec<u8>, OutputError> {
        Err(unsupported("scan"))
    }

    fn doctor(&self, _report: &DoctorReport) -> Result<Vec<u8>, OutputError> {
        Err(unsupported("doctor"))
    }

    fn bench(&self, _report: &BenchReport) -> Result<Vec<u8>, OutputError> {
        Err(unsupported("bench"))
    }

    fn compare(&self, _report: &CompareReport) -> Result<Vec<u8>, OutputError> {
        Err(unsupported("compare"))
    }

    fn merge(&self, _report: &MergeReport) -> Result<Vec<u8>, OutputError> {
        Err(unsupported("merge"))
    }

    fn check(&self, report: &CheckReport) -> Result<Vec<u8>, OutputError> {
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let [_, _, _, failures] = report.counts();
        let tests: usize = report.combinations.iter().map(|c| c.checks.len()).sum();
        let time: f64 = report.combinations.iter().map(|c| c.duration_ms).sum();
        // No `skipped` here: junit-10.xsd does not allow it on <testsuites>, and every reader
        // counts the skips of each <testsuite> anyway.
        // A run on the simulated driver says so where every reader shows it: the name.
        let name = if report.simulated {
            format!("stackbench check ({})", super::SIMULATED_GPU)
        } else {
            "stackbench check".to_owned()
        };
        let _ = writeln!(
            out,
            "<testsuites name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" \
             errors=\"0\" time=\"{}\">",
            attribute(&name),
            seconds(time)
        );
        for combination in &report.combinations {
            suite(&mut out, report, combination);
        }
        out.push_str("</testsuites>\n");
        Ok(out.into_bytes())
    }
}

/// One combination's `<testsuite>`.
fn suite(out: &mut String, report: &CheckReport, c: &CombinationReport) {
    let count = |status: Status| c.checks.iter().filter(|r| r.status == status).count();
    let hostname = match report.host.hostname.trim() {
        "" => "localhost",
        name => name,
    };
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" \
         time=\"{}\" timestamp=\"{}\" hostname=\"{}\">",
        attribute(&c.name),
        c.checks.len(),
        count(Status::Fail),
        count(Status::Skip),
        seconds(c.duration_ms),
        attribute(timestamp(&report.started)),
        attribute(hostname)
    );
    out.push_str("    <properties>\n");
    for (name, value) in properties(report, c) {
        let _ = writeln!(
            out,
            "      <property name=\"{}\" value=\"{}\"/>",
            attribute(&name),
            attribute(&value)
        );
    }
    out.push_str("    </properties>\n");
    for check in &c.checks {
        case(out, &c.name, check);
    }
    out.push_str("  </testsuite>\n");
}

/// The environment a combination ran in, as `<property>` names and values: the run's start,
/// CUDA runtime, driver, GPU and each library's version, path and place.
fn properties(report: &CheckReport, c: &CombinationReport) -> Vec<(String, String)> {
    let mut properties = vec![("started".to_string(), report.started.clone())];
    let mut optional = |name: &str, value: Option<String>| {
        if let Some(value) = value {
            properties.push((name.to_string(), value));
        }
    };
    optional("simulated", c.simulated.then(|| "true".to_string()));
    optional("cuda_version", c.cuda_version.clone());
    optional(
        "driver_version",
        driver_version(report, c).map(str::to_owned),
    );
    optional(
        "driver_path",
        c.driver.as_ref().map(|d| d.real_path.shown()),
    );
    optional("kernel_driver_version", report.gpu.driver_version.clone());
    let gpu = report.gpu.devices.first();
    optional("gpu_name", gpu.map(|d| d.name.clone()));
    optional("gpu_uuid", gpu.and_then(|d| d.uuid.clone()));
    optional(
        "gpu_compute_capability",
        gpu.map(|d| d.compute_capability.clone()),
    );
    optional("target", report.target.clone());
    for l in &c.libraries {
        let key = |what: &str| format!("library.{}.{what}", l.component);
        properties.push((key("version"), l.version.clone().unwrap_or_default()));
        properties.push((
            key("path"),
            library_path(l).map(|p| p.shown()).unwrap_or_default(),
        ));
        properties.push((key("inside"), l.inside.to_string()));
    }
    properties
}

/// One check's `<testcase>`.
fn case(out: &mut String, combination: &str, check: &CheckResult) {
    let head = format!(
        "    <testcase classname=\"{}\" name=\"{}\" time=\"{}\"",
        attribute(&format!("stackbench.{combination}.{}", check.library)),
        attribute(&check.label()),
        seconds(check.duration_ms)
    );
    let reason = &check.reason;
    let _ = match check.status {
        Status::Pass => writeln!(out, "{head}/>"),
        Status::Fail => writeln!(
            out,
            "{head}>\n      <failure message=\"{}\" type=\"fail\">{}</failure>\n    </testcase>",
            attribute(reason),
            text(reason)
        ),
        Status::Skip => writeln!(
            out,
            "{head}>\n      <skipped message=\"{}\"/>\n    </testcase>",
            attribute(reason)
        ),
        Status::Warn => writeln!(
            out,
            "{head}>\n      <system-out>warning: {}</system-out>\n    </testcase>",
            text(reason)
        ),
    };
}

/// Milliseconds as seconds with three decimals, the form every JUnit reader parses.
fn seconds(ms: f64) -> String {
    format!("{:.3}", ms.max(0.0) / 1e3)
}

/// The suite's `timestamp`: the run's start without the zone suffix (`2026-11-22T17:29:03`,
/// UTC), as Ant writes it and the stricter JUnit schemas demand; the `started` property keeps
/// the zone.
fn timestamp(started: &str) -> &str {
    started.strip_suffix('Z').unwrap_or(started)
}

/// `value` safe inside a double-quoted attribute: markup characters as entities, and line
/// breaks and tabs as character references so a parser keeps them (it would turn them into
/// spaces otherwise).
fn attribute(value: &str) -> String {
    escape(value, true)
}

/// `value` safe as element text; line breaks stay as they are.
fn text(value: &str) -> String {
    escape(value, false)
}

/// The shared escaper. Characters XML 1.0 forbids anywhere (control characters other than tab,
/// line feed and carriage return; U+FFFE, U+FFFF) become U+FFFD.
fn escape(value: &str, in_attribute: bool) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if in_attribute => out.push_str("&quot;"),
            '\n' if in_attribute => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' if in_attribute => out.push_str("&#9;"),
            '\t' | '\n' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;

    #[rstest]
    #[case(
        "cuInit: CUDA_ERROR_NO_DEVICE (100)",
        "cuInit: CUDA_ERROR_NO_DEVICE (100)"
    )]
    #[case("a < b && c > d", "a &lt; b &amp;&amp; c &gt; d")]
    #[case("\"quoted\" 'single'", "&quot;quoted&quot; 'single'")]
    #[case("line\nnext\ttab\rcr", "line&#10;next&#9;tab&#13;cr")]
    #[case("bell\u{7} nul\u{0} \u{FFFF}", "bell\u{FFFD} nul\u{FFFD} \u{FFFD}")]
    fn attributes_are_escaped(#[case] value: &str, #[case] escaped: &str) {
        assert_eq!(attribute(value), escaped);
    }

    #[test]
    fn text_keeps_line_breaks_and_quotes() {
        assert_eq!(text("a\n\"b\" <c>\t&"), "a\n\"b\" &lt;c&gt;\t&amp;");
    }

    #[rstest]
    #[case(0.0, "0.000")]
    #[case(18.1234, "0.018")]
    #[case(1234.5678, "1.235")]
    #[case(-1.0, "0.000")]
    fn durations_are_seconds_with_three_decimals(#[case] ms: f64, #[case] text: &str) {
        assert_eq!(seconds(ms), text);
    }

    #[test]
    fn the_timestamp_loses_only_its_zone() {
        assert_eq!(timestamp("2026-11-22T17:29:03Z"), "2026-11-22T17:29:03");
        assert_eq!(timestamp("2026-11-22T17:29:03"), "2026-11-22T17:29:03");
    }

    proptest! {
        /// Whatever a reason holds, the attribute has no raw markup, quote, line break or
        /// character XML forbids, and every `&` starts an entity.
        #[test]
        fn escaped_attributes_are_well_formed(value in any::<String>()) {
            let escaped = attribute(&value);
            prop_assert!(!escaped.contains(['<', '>', '"', '\n', '\r', '\t']));
            let allowed = |c: char| (c as u32) >= 0x20 && !matches!(c, '\u{FFFE}' | '\u{FFFF}');
            prop_assert!(escaped.chars().all(allowed));
            for (at, _) in escaped.match_indices('&') {
                let entity = &escaped[at..];
                prop_assert!(
                    ["&amp;", "&lt;", "&gt;", "&quot;", "&#10;", "&#13;", "&#9;"]
                        .iter()
                        .any(|e| entity.starts_with(e)),
                    "{}", entity
                );
            }
        }
    }
}
