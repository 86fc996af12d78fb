//! `stackbench report --store DIR`: a fleet's nights from the store as `report`'s history, so
//! the page draws them as it draws one host's runs. Each night is one entry (its runs, nodes and
//! drivers); each benchmark one chart, a line per combination and driver, each point that
//! night's median across the nodes with the nodes' quartiles as its band.

use super::select::Selector;
use crate::bench::model::Side;
use crate::history::{Chart, History, Point, RunEntry, Series};
use crate::store::rows::Row;
use crate::store::{Columns, Store, StoreError};
use crate::tags::HISTORY_SCHEMA;
use std::collections::{BTreeMap, BTreeSet};

/// The nights of the bench rows `selector` takes (all, without one) from `store`.
pub fn history(store: &Store, selector: Option<&Selector>) -> Result<History, StoreError> {
    let rows: Vec<Row> = store
        .read(Columns::Figures)?
        .into_iter()
        .filter(|r| r.command == "bench" && selector.is_none_or(|s| s.matches(r)))
        .collect();
    let mut nights: BTreeMap<String, Vec<&Row>> = BTreeMap::new();
    for row in &rows {
        nights
            .entry(crate::store::day(row.started_us))
            .or_default()
            .push(row);
    }
    let runs = nights
        .iter()
        .map(|(night, rows)| entry(store, night, rows))
        .collect();
    let mut charts: BTreeMap<&str, BTreeMap<String, Vec<Point>>> = BTreeMap::new();
    for (at, rows) in nights.values().enumerate() {
        let mut figures: BTreeMap<(&str, String), Vec<f64>> = BTreeMap::new();
        for row in rows {
            if let Some(figure) = row.figure.filter(|f| *f > 0.0 && f.is_finite()) {
                let line = format!(
                    "{}, driver {}",
                    row.combination,
                    row.driver.as_deref().unwrap_or("unknown")
                );
                figures
                    .entry((row.kind.as_str(), line))
                    .or_default()
                    .push(figure);
            }
        }
        for ((kind, line), mut values) in figures {
            values.sort_by(f64::total_cmp);
            let quantile = |q: f64| crate::compare::stats::nearest_quantile(&values, q);
            let points = charts
                .entry(kind)
                .or_default()
                .entry(line.clone())
                .or_default();
            points.push(Point {
                run: at,
                median_ns: quantile(0.5),
                q1_ns: quantile(0.25),
                q3_ns: quantile(0.75),
                versions_changed: points.is_empty(),
                versions: line,
                simulated: false,
                repetitions: None,
                spread_ns: None,
                rate: None,
            });
        }
    }
    let charts = charts
        .into_iter()
        .map(|(kind, lines)| Chart {
            benchmark: kind.to_owned(),
            side: if kind.starts_with("nvrtc_compile/") || kind.starts_with("load/") {
                Side::Cpu
            } else {
                Side::Gpu
            },
            unit: None,
            series: lines
                .into_iter()
                .map(|(label, points)| Series { label, points })
                .collect(),
        })
        .collect();
    Ok(History {
        schema: HISTORY_SCHEMA.to_owned(),
        generated: crate::timestamp::now(),
        runs,
        passed_over: Vec::new(),
        charts,
        matrices: Vec::new(),
        rooflines: Vec::new(),
    })
}

/// One night as a history entry: its partition, its runs and nodes, the drivers they ran.
fn entry(store: &Store, night: &str, rows: &[&Row]) -> RunEntry {
    let set = |f: &dyn Fn(&Row) -> Option<String>| super::distinct(rows, f);
    let runs: BTreeSet<&str> = rows.iter().map(|r| r.run_id.as_str()).collect();
    let hosts = set(&|r| Some(r.host.clone()));
    RunEntry {
        path: store.dir().join(format!("date={night}")),
        kind: "bench".into(),
        when: night.to_owned(),
        hostname: format!(
            "{} node{}",
            hosts.len(),
            if hosts.len() == 1 { "" } else { "s" }
        ),
        gpus: set(&|r| r.model.clone()),
        driver: Some(set(&|r| r.driver.clone()).join(", ")),
        stackbench_version: set(&|r| Some(r.stackbench.clone())).join(", "),
        counts: vec![("runs".into(), runs.len()), ("nodes".into(), hosts.len())],
        simulated: rows.iter().any(|r| r.simulated),
    }
}
