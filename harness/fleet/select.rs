//! Which rows of the store a side of a fleet comparison takes: `driver=580.*`,
//! `model=*H100*,driver=570.*`: comma-separated `key=pattern` terms that a row must all match,
//! `*` standing for any run of characters and `?` for one.

use crate::store::rows::Row;
use std::fmt;

/// The keys a term may name, and what of a row each matches.
const KEYS: [&str; 11] = [
    "driver",
    "model",
    "host",
    "cuda",
    "combination",
    "libraries",
    "clocks",
    "stackbench",
    "simulated",
    "date",
    "gpu",
];

/// A selector, as given and as parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    text: String,
    terms: Vec<(&'static str, String)>,
}

/// A selector that does not parse.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "the fleet selector {text:?} {why}; write KEY=PATTERN[,KEY=PATTERN...] (for example \
     `driver=580.*,model=*H100*`), KEY one of {}",
    KEYS.join(", ")
)]
pub struct SelectorError {
    pub text: String,
    pub why: String,
}

impl std::str::FromStr for Selector {
    type Err = SelectorError;

    fn from_str(text: &str) -> Result<Selector, SelectorError> {
        let error = |why: String| SelectorError {
            text: text.to_owned(),
            why,
        };
        let mut terms = Vec::new();
        for term in text.split(',').map(str::trim) {
            let Some((key, pattern)) = term.split_once('=') else {
                return Err(error(format!(
                    "has the term {term:?}, which is no KEY=PATTERN"
                )));
            };
            let key = key.trim();
            let Some(known) = KEYS.iter().find(|k| **k == key) else {
                return Err(error(format!(
                    "names the key {key:?}, which rows do not have"
                )));
            };
            terms.push((*known, pattern.trim().to_owned()));
        }
        Ok(Selector {
            text: text.to_owned(),
            terms,
        })
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl serde::Serialize for Selector {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl Selector {
    /// Whether `row` matches every term.
    pub fn matches(&self, row: &Row) -> bool {
        self.terms.iter().all(|(key, pattern)| {
            let value = match *key {
                "driver" => row.driver.clone(),
                "model" => row.model.clone(),
                "host" => Some(row.host.clone()),
                "cuda" => row.cuda.clone(),
                "combination" => Some(row.combination.clone()),
                "libraries" => Some(row.libraries.clone()),
                "clocks" => Some(row.clocks.clone()),
                "stackbench" => Some(row.stackbench.clone()),
                "simulated" => Some(row.simulated.to_string()),
                "date" => Some(crate::store::day(row.started_us)),
                _ => row.gpu.map(|g| g.to_string()),
            };
            value.is_some_and(|v| glob(pattern, &v))
        })
    }
}

/// Whether `text` matches the glob `pattern` (`*` any run, `?` one character), whole.
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    // The classic two-pointer match with one backtrack point: linear in practice.
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < t.len() {
        if i < p.len() && (p[i] == '?' || p[i] == t[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("580.*", "580.95.05", true)]
    #[case("580.*", "570.195.03", false)]
    #[case("*H100*", "NVIDIA H100 80GB HBM3", true)]
    #[case("5?0.*", "570.1", true)]
    #[case("570", "570.1", false)]
    #[case("*", "", true)]
    #[case("a*b*c", "aXbYbZc", true)]
    #[case("a*b*c", "aXbYbZ", false)]
    fn globs_match_whole_values(#[case] pattern: &str, #[case] text: &str, #[case] hit: bool) {
        assert_eq!(glob(pattern, text), hit);
    }

    #[test]
    fn bad_selectors_say_how_to_write_one() {
        let e = "driver".parse::<Selector>().unwrap_err();
        assert!(e.to_string().contains("KEY=PATTERN"), "{e}");
        let e = "colour=red".parse::<Selector>().unwrap_err();
        assert!(e.to_string().contains("\"colour\""), "{e}");
        assert!("driver=580.*, model=*H100*".parse::<Selector>().is_ok());
    }
}
