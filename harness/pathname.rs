//! Host paths in every file stackbench writes. A Linux name is any bytes but `/` and NUL, and
//! any user of a node can make one that is not UTF-8; serde writes a path only when it is
//! UTF-8, so one directory named `\xff` would fail a whole report. Here a path is written as
//! its string when it is UTF-8 (as always), and otherwise as the object
//! `{"non_utf8": "<escaped>"}`: its bytes, each byte outside a valid UTF-8 sequence as `\xNN`
//! (two lowercase hex digits) and each backslash as `\\`. Reading takes either form back to the
//! very bytes. The text formats (terminal, CSV, Markdown, JUnit, HTML) write the escaped form
//! of such a name (doc/schemas.md, "Names that are not UTF-8").
//!
//! Fields use it as `#[serde(with = "crate::pathname")]` (a `PathBuf`), or its modules
//! [`option`], [`list`], [`option_list`] and [`pairs`].

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A path as the text formats show it: itself when UTF-8, else its escaped form.
pub trait Shown {
    fn shown(&self) -> String;
}

impl Shown for Path {
    fn shown(&self) -> String {
        match self.to_str() {
            Some(text) => text.to_string(),
            None => escape(self),
        }
    }
}

/// The bytes of `path` with each byte outside a valid UTF-8 sequence as `\xNN` and each
/// backslash as `\\`.
pub fn escape(path: &Path) -> String {
    let mut out = String::new();
    for chunk in path.as_os_str().as_bytes().utf8_chunks() {
        out.push_str(&chunk.valid().replace('\\', "\\\\"));
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out
}

/// The path [`escape`] wrote, or `None` for a text it cannot have written.
pub fn unescape(text: &str) -> Option<PathBuf> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&first, tail)) = rest.split_first() {
        rest = tail;
        if first != b'\\' {
            bytes.push(first);
            continue;
        }
        match rest {
            [b'\\', tail @ ..] => {
                bytes.push(b'\\');
                rest = tail;
            }
            [b'x', high, low, tail @ ..] => {
                let hex = std::str::from_utf8(&[*high, *low]).ok()?.to_owned();
                if hex.bytes().any(|b| b.is_ascii_uppercase()) {
                    return None;
                }
                bytes.push(u8::from_str_radix(&hex, 16).ok()?);
                rest = tail;
            }
            _ => return None,
        }
    }
    Some(PathBuf::from(OsStr::from_bytes(&bytes)))
}

/// One path in serde's hands.
struct Name<'a>(&'a Path);

impl Serialize for Name<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0.to_str() {
            Some(text) => serializer.serialize_str(text),
            None => Escaped {
                non_utf8: escape(self.0),
            }
            .serialize(serializer),
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Escaped {
    non_utf8: String,
}

/// A path read back from either form.
struct Owned(PathBuf);

impl<'de> Deserialize<'de> for Owned {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Text(String),
            Escaped(Escaped),
        }
        match Form::deserialize(deserializer)? {
            Form::Text(text) => Ok(Owned(PathBuf::from(text))),
            Form::Escaped(Escaped { non_utf8 }) => unescape(&non_utf8)
                .filter(|path| path.to_str().is_none())
                .map(Owned)
                .ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "\"non_utf8\": {non_utf8:?} is not a path stackbench escaped"
                    ))
                }),
        }
    }
}

pub fn serialize<S: Serializer>(path: &Path, serializer: S) -> Result<S::Ok, S::Error> {
    Name(path).serialize(serializer)
}

pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<PathBuf, D::Error> {
    Owned::deserialize(deserializer).map(|Owned(path)| path)
}

/// `Option<PathBuf>`: `None` is `null`.
pub mod option {
    use super::{Name, Owned};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::path::PathBuf;

    pub fn serialize<S: Serializer>(
        path: &Option<PathBuf>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        path.as_deref().map(Name).serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<PathBuf>, D::Error> {
        Ok(Option::<Owned>::deserialize(deserializer)?.map(|Owned(path)| path))
    }
}

/// `Vec<PathBuf>`.
pub mod list {
    use super::{Name, Owned};
    use serde::{Deserialize, Deserializer, Serializer};
    use std::path::PathBuf;

    pub fn serialize<S: Serializer>(paths: &[PathBuf], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(paths.iter().map(|p| Name(p)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<PathBuf>, D::Error> {
        Ok(Vec::<Owned>::deserialize(deserializer)?
            .into_iter()
            .map(|Owned(path)| path)
            .collect())
    }
}

/// `Option<Vec<PathBuf>>`.
pub mod option_list {
    use super::{Name, Owned};
    use serde::{Deserialize, Deserializer, Serializer};
    use std::path::PathBuf;

    pub fn serialize<S: Serializer>(
        paths: &Option<Vec<PathBuf>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match paths {
            Some(paths) => serializer.collect_seq(paths.iter().map(|p| Name(p))),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Vec<PathBuf>>, D::Error> {
        Ok(Option::<Vec<Owned>>::deserialize(deserializer)?
            .map(|paths| paths.into_iter().map(|Owned(path)| path).collect()))
    }
}

/// `Vec<(PathBuf, String)>`: a path and what was read from it.
pub mod pairs {
    use super::{Name, Owned};
    use serde::{Deserialize, Deserializer, Serializer};
    use std::path::PathBuf;

    pub fn serialize<S: Serializer>(
        pairs: &[(PathBuf, String)],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(pairs.iter().map(|(p, text)| (Name(p), text)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<(PathBuf, String)>, D::Error> {
        Ok(Vec::<(Owned, String)>::deserialize(deserializer)?
            .into_iter()
            .map(|(Owned(path), text)| (path, text))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Row {
        #[serde(with = "crate::pathname")]
        path: PathBuf,
        #[serde(default, with = "crate::pathname::option")]
        maybe: Option<PathBuf>,
        #[serde(with = "crate::pathname::list")]
        many: Vec<PathBuf>,
        #[serde(with = "crate::pathname::pairs")]
        read: Vec<(PathBuf, String)>,
    }

    fn bytes(raw: &[u8]) -> PathBuf {
        PathBuf::from(OsStr::from_bytes(raw))
    }

    #[test]
    fn a_utf8_path_is_written_as_before_and_any_other_as_its_escaped_bytes() {
        let row = Row {
            path: PathBuf::from("/opt/cuda/lib64"),
            maybe: Some(bytes(b"/tmp/\xff/lib\\x41.so")),
            many: vec![bytes(b"/a\xc3"), PathBuf::from("/b")],
            read: vec![(bytes(b"/sys/\x80"), "x".into())],
        };
        let json = serde_json::to_string(&row).unwrap();
        assert_eq!(
            json,
            r#"{"path":"/opt/cuda/lib64","maybe":{"non_utf8":"/tmp/\\xff/lib\\\\x41.so"},"many":[{"non_utf8":"/a\\xc3"},"/b"],"read":[[{"non_utf8":"/sys/\\x80"},"x"]]}"#
        );
        assert_eq!(serde_json::from_str::<Row>(&json).unwrap(), row);
        let missing: Row = serde_json::from_str(r#"{"path":"/","many":[],"read":[]}"#).unwrap();
        assert_eq!(missing.maybe, None);
    }

    #[test]
    fn an_escaped_form_stackbench_cannot_have_written_is_refused() {
        for bad in [r"\xFF", r"\x4", r"\q", "\\", r"\x41"] {
            let json = format!(
                r#"{{"path":{{"non_utf8":{}}},"many":[],"read":[]}}"#,
                serde_json::to_string(bad).unwrap()
            );
            assert!(serde_json::from_str::<Row>(&json).is_err(), "{bad}");
        }
    }

    #[test]
    fn text_formats_show_utf8_paths_unchanged() {
        assert_eq!(Path::new("/a\\b/ü").shown(), "/a\\b/ü");
        assert_eq!(bytes(b"/a\\b/\xff").shown(), "/a\\\\b/\\xff");
    }

    proptest! {
        #[test]
        fn any_name_round_trips(raw in proptest::collection::vec(any::<u8>(), 0..64)) {
            let path = bytes(&raw);
            prop_assert_eq!(unescape(&escape(&path)), Some(path.clone()));
            let json = serde_json::to_string(&Name(&path)).unwrap();
            let Owned(back) = serde_json::from_str(&json).unwrap();
            prop_assert_eq!(back, path);
        }
    }
}
