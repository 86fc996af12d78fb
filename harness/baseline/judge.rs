//! A node's run against a baseline: each measured row whose model, stack and benchmark the
//! baseline knows is `within` the fleet, or `slower` or `faster` than it by the baseline's own
//! rule (beyond its robust deviations and twice its threshold); a row it does not know is
//! named with what the baseline lacks, never judged against another stack's figure.

use super::{Baseline, BaselineError, Key};
use crate::schema::judgement::{Against, Judgement, Standing, Unjudged};
use crate::store::rows::Row;
use std::path::Path;

/// The runs of `nodes` (each a node's name and its run's store rows) against the baseline in
/// `path`.
pub fn against(path: &Path, nodes: &[(String, Vec<Row>)]) -> Result<Judgement, BaselineError> {
    let baseline = Baseline::read(path)?;
    let mut judgement = Judgement::new(path, &baseline);
    for (host, rows) in nodes {
        judgement.add(&baseline, host, rows);
    }
    judgement
        .rows
        .sort_by(|a, b| b.slowdown.total_cmp(&a.slowdown).then(a.id.cmp(&b.id)));
    Ok(judgement)
}

impl Judgement {
    /// An empty judgement against `baseline`, read from `path`.
    pub fn new(path: &Path, baseline: &Baseline) -> Judgement {
        Judgement {
            baseline: path.to_path_buf(),
            learned_from: baseline.learned_from(),
            rows: Vec::new(),
            unjudged: Vec::new(),
        }
    }

    /// Judges the store rows of one node's run (`host` names it), adding to the judgement in
    /// their order.
    pub fn add(&mut self, baseline: &Baseline, host: &str, run_rows: &[Row]) {
        for row in run_rows.iter().filter(|r| r.status == "measured") {
            let (Some(cost), Some(figure)) = (row.log_cost(), row.figure) else {
                continue;
            };
            let key = Key::of(row);
            let Some(entry) = baseline.entry(&key) else {
                self.unjudged.push(Unjudged {
                    host: host.to_owned(),
                    id: row.row_id.clone(),
                    why: lacking(baseline, &key),
                });
                continue;
            };
            let spread = entry.spread();
            let off = cost - spread.centre;
            let limit = spread.limit(baseline.threshold);
            self.rows.push(Against {
                host: host.to_owned(),
                id: row.row_id.clone(),
                kind: row.kind.clone(),
                gpu: row.gpu,
                gpu_uuid: row.gpu_uuid.clone(),
                pci_bus_id: row.pci_bus_id.clone(),
                model: row.model.clone(),
                figure,
                unit: entry.unit.clone(),
                expected: entry.expected,
                low: entry.low,
                high: entry.high,
                slowdown: off.exp(),
                deviations: (spread.sigma > 0.0).then(|| off / spread.sigma),
                nodes: entry.nodes,
                standing: if off > limit {
                    Standing::Slower
                } else if off < -limit {
                    Standing::Faster
                } else {
                    Standing::Within
                },
            });
        }
    }
}

/// What `baseline` lacks for `key`, the nearest thing first: the model, then its drivers.
fn lacking(baseline: &Baseline, key: &Key) -> String {
    let of_model: Vec<&super::Entry> = (baseline.entries.iter())
        .filter(|e| e.key.model == key.model && e.key.simulated == key.simulated)
        .collect();
    if of_model.is_empty() {
        return format!("the baseline has no {} GPU", key.model_name());
    }
    let drivers: std::collections::BTreeSet<&str> =
        of_model.iter().map(|e| e.key.driver.as_str()).collect();
    if !drivers.contains(key.driver.as_str()) {
        return format!(
            "the baseline has {} only with driver {}, not {}",
            key.model,
            drivers.into_iter().collect::<Vec<_>>().join(", "),
            key.driver
        );
    }
    format!(
        "the baseline has no {} on {}, driver {}, with {} ({})",
        key.kind,
        key.model,
        key.driver,
        if key.libraries.is_empty() {
            "the driver alone"
        } else {
            &key.libraries
        },
        key.clocks
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::Entry;
    use crate::tags::BASELINE_SCHEMA;

    /// A baseline of H100s on driver 570 with one entry per `(kind, unit, expected)`, each of
    /// 100 nodes 0.1% apart, at the default threshold.
    fn baseline(entries: &[(&str, &str, f64)]) -> Baseline {
        let mut entries: Vec<Entry> = (entries.iter())
            .map(|(kind, unit, expected)| Entry {
                key: Key {
                    model: "H100".into(),
                    driver: "570.195.03".into(),
                    libraries: "cublas 13.1.0".into(),
                    clocks: "not locked".into(),
                    simulated: false,
                    kind: (*kind).into(),
                },
                unit: (*unit).into(),
                nodes: 100,
                expected: *expected,
                spread: 0.001,
                low: 0.0,
                high: 0.0,
            })
            .collect();
        entries.sort_by(|a, b| a.key.cmp(&b.key));
        Baseline {
            schema: BASELINE_SCHEMA.into(),
            store: "store".into(),
            select: None,
            threshold: crate::compare::stats::MIN_THRESHOLD,
            deviations: crate::fleet::OUTLIER_DEVIATIONS,
            runs: 100,
            nodes: 100,
            from: String::new(),
            to: String::new(),
            entries,
            left_out: Vec::new(),
        }
    }

    /// A measured row of `kind` on that baseline's stack.
    fn row(kind: &str, unit: &str, figure: f64) -> Row {
        Row {
            row_id: format!("{kind}/{figure}"),
            kind: kind.into(),
            model: Some("H100".into()),
            driver: Some("570.195.03".into()),
            libraries: "cublas 13.1.0".into(),
            clocks: "not locked".into(),
            figure: Some(figure),
            unit: Some(unit.into()),
            status: "measured".into(),
            ..Row::default()
        }
    }

    fn standings(rows: &[Row]) -> Vec<(String, Standing)> {
        let baseline = baseline(&[("copy", "ns", 100.0), ("node/copy/ce/h2d", "GB/s", 50.0)]);
        let mut judgement = Judgement::new(Path::new("b.json"), &baseline);
        judgement.add(&baseline, "node", rows);
        let mut out: Vec<(String, Standing)> = (judgement.rows.iter())
            .map(|r| (r.id.clone(), r.standing))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    #[test]
    fn a_time_above_and_a_bandwidth_below_their_range_are_slower() {
        // The range is twice the threshold (1%) here: 5 spreads are 0.5%.
        let judged = standings(&[
            row("copy", "ns", 102.0),
            row("copy", "ns", 100.5),
            row("copy", "ns", 98.0),
            row("node/copy/ce/h2d", "GB/s", 45.0),
            row("node/copy/ce/h2d", "GB/s", 49.8),
            row("node/copy/ce/h2d", "GB/s", 55.0),
        ]);
        assert_eq!(
            judged,
            [
                ("copy/100.5".to_owned(), Standing::Within),
                ("copy/102".to_owned(), Standing::Slower),
                ("copy/98".to_owned(), Standing::Faster),
                ("node/copy/ce/h2d/45".to_owned(), Standing::Slower),
                ("node/copy/ce/h2d/49.8".to_owned(), Standing::Within),
                ("node/copy/ce/h2d/55".to_owned(), Standing::Faster),
            ]
        );
    }

    #[test]
    fn a_row_the_baseline_lacks_is_named_with_what_it_lacks() {
        let baseline = baseline(&[("copy", "ns", 100.0)]);
        let mut judgement = Judgement::new(Path::new("b.json"), &baseline);
        let other_model = Row {
            model: Some("A100".into()),
            ..row("copy", "ns", 100.0)
        };
        let other_driver = Row {
            driver: Some("580.95.05".into()),
            ..row("copy", "ns", 100.0)
        };
        let other_kind = row("vector_add", "ns", 100.0);
        let skipped = Row {
            status: "skipped".into(),
            ..row("copy", "ns", 100.0)
        };
        judgement.add(
            &baseline,
            "node",
            &[other_model, other_driver, other_kind, skipped],
        );
        assert!(judgement.rows.is_empty());
        let why: Vec<&str> = judgement.unjudged.iter().map(|u| u.why.as_str()).collect();
        assert_eq!(
            why,
            [
                "the baseline has no A100 GPU",
                "the baseline has H100 only with driver 570.195.03, not 580.95.05",
                "the baseline has no vector_add on H100, driver 570.195.03, with cublas 13.1.0 \
                 (not locked)",
            ]
        );
    }
}
