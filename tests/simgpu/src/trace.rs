//! A trace of the simulated libraries' calls, for tests to read what stackbench asked of them:
//! when `STACKBENCH_SIM_TRACE` names a file, [`record`] appends one JSON object per call, one
//! line per `write` on a file opened with `O_APPEND`, so the lines of every worker process
//! that shares the file stay whole.
//!
//! A line reads `{"library":"cublas","call":"cublasGemmEx","m":96,"compute_type":"..."}`:
//! the library, the call, then the call's fields in the order given.

use std::fmt::Write as _;
use std::io::Write as _;

/// The environment variable naming the trace file.
pub const TRACE_VAR: &str = "STACKBENCH_SIM_TRACE";

/// One field's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A signed integer.
    Int(i64),
    /// A number (non-finite values are written as `null`, which JSON has instead).
    Float(f64),
    /// A string.
    Str(String),
    /// A boolean.
    Bool(bool),
}

impl From<i32> for Value {
    fn from(v: i32) -> Value {
        Value::Int(v.into())
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}

impl From<u32> for Value {
    fn from(v: u32) -> Value {
        Value::Int(v.into())
    }
}

impl From<u64> for Value {
    fn from(v: u64) -> Value {
        Value::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

impl From<usize> for Value {
    fn from(v: usize) -> Value {
        Value::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Float(v)
    }
}

impl From<f32> for Value {
    fn from(v: f32) -> Value {
        Value::Float(v.into())
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Bool(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Str(v.to_owned())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Str(v)
    }
}

/// Appends `{"library":library,"call":call,fields...}` to the trace file, if one is named. A
/// trace that cannot be written is dropped: tracing never changes what a call answers.
pub fn record(library: &str, call: &str, fields: &[(&str, Value)]) {
    let Some(path) = std::env::var_os(TRACE_VAR) else {
        return;
    };
    let line = line(library, call, fields);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path);
    if let Ok(mut file) = file {
        // One write of the whole line: O_APPEND keeps concurrent writers' lines apart.
        let _ = file.write_all(line.as_bytes());
    }
}

/// The JSON line (newline included) for one call.
pub fn line(library: &str, call: &str, fields: &[(&str, Value)]) -> String {
    let mut out = String::from("{");
    push_pair(&mut out, "library", &Value::Str(library.to_owned()));
    out.push(',');
    push_pair(&mut out, "call", &Value::Str(call.to_owned()));
    for (key, value) in fields {
        out.push(',');
        push_pair(&mut out, key, value);
    }
    out.push_str("}\n");
    out
}

/// `"key":value`.
fn push_pair(out: &mut String, key: &str, value: &Value) {
    push_string(out, key);
    out.push(':');
    match value {
        Value::Int(v) => {
            let _ = write!(out, "{v}");
        }
        Value::Float(v) if v.is_finite() => {
            let _ = write!(out, "{v:?}");
        }
        Value::Float(_) => out.push_str("null"),
        Value::Str(s) => push_string(out, s),
        Value::Bool(v) => {
            let _ = write!(out, "{v}");
        }
    }
}

/// `s` as a JSON string, quoted and escaped.
fn push_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_one_json_object_with_library_call_and_fields_in_order() {
        let line = line(
            "cublas",
            "cublasGemmEx",
            &[
                ("m", 96.into()),
                ("alpha", 1.5f64.into()),
                ("compute_type", "CUBLAS_COMPUTE_32F".into()),
                ("ok", true.into()),
                ("nan", f64::NAN.into()),
            ],
        );
        assert_eq!(
            line,
            "{\"library\":\"cublas\",\"call\":\"cublasGemmEx\",\"m\":96,\"alpha\":1.5,\
             \"compute_type\":\"CUBLAS_COMPUTE_32F\",\"ok\":true,\"nan\":null}\n"
        );
    }

    #[test]
    fn strings_are_escaped() {
        let line = line("x", "a\"b\\c\n\u{1}", &[]);
        assert_eq!(
            line,
            "{\"library\":\"x\",\"call\":\"a\\\"b\\\\c\\n\\u0001\"}\n"
        );
    }
}
