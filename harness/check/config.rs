//! `stackbench.toml`: combinations a user names that the scan would not form by itself.
//!
//! ```toml
//! [[combination]]
//! name = "cuda-12.4-with-cudnn-9.1"
//! library_dirs = ["/usr/local/cuda-12.4/lib64", "/opt/cudnn-9.1/lib"]
//! driver_dir = "/opt/nvidia-550/lib"   # optional: take libcuda.so.1 and NVML from here
//! ```
//!
//! Parsing is pure: relative directories are resolved against the file's directory, but nothing
//! is looked up, so a directory that does not exist is not an error here (the check reports
//! it). Unknown keys are errors, so that a typo is never silently ignored; every error names the
//! file, the line where there is one, and what to write instead.

use serde::Deserialize;
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// The default file, read from the current directory when it exists.
pub const DEFAULT_FILE: &str = "stackbench.toml";

/// What a `[[combination]]` table holds, said after errors about the file's shape.
const FORMAT: &str =
    "each [[combination]] table has name = \"NAME\", library_dirs = [\"DIR\", ...] \
                      and optionally driver_dir = \"DIR\"";

/// The characters a name may use besides ASCII letters and digits.
const NAME_PUNCTUATION: &str = "._-:+";

/// The combinations of a `stackbench.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    pub combinations: Vec<UserCombination>,
}

/// One `[[combination]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserCombination {
    /// Unique within the file; letters, digits and `._-:+`.
    pub name: String,
    /// Where its CUDA libraries are, in search order; relative ones resolved against the file's
    /// directory.
    pub library_dirs: Vec<PathBuf>,
    /// Where its `libcuda.so.1` and NVML are, instead of the system's driver.
    pub driver_dir: Option<PathBuf>,
}

/// A `stackbench.toml` that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("cannot read {}: {error}; check that it exists and is readable, or give another file with --config FILE", path.display())]
    Read { path: PathBuf, error: io::Error },
    /// The file is not UTF-8, as TOML must be.
    #[error("{}:{line}: not UTF-8 text (invalid byte at offset {offset}); save the file as UTF-8", path.display())]
    NotUtf8 {
        path: PathBuf,
        line: usize,
        offset: usize,
    },
    /// The file is not TOML, or not the combinations stackbench expects.
    #[error("{}{}: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Invalid {
        path: PathBuf,
        /// 1-based, where the error has a place in the file.
        line: Option<usize>,
        message: String,
    },
}

/// The file as TOML gives it, before validation.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    combination: Vec<Spanned<RawCombination>>,
}

/// One `[[combination]]` as TOML gives it; every field optional so a missing one gets a
/// message of ours, with its line.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCombination {
    name: Option<Spanned<String>>,
    library_dirs: Option<Spanned<Vec<Spanned<String>>>>,
    driver_dir: Option<Spanned<String>>,
}

impl Config {
    /// Parses a `stackbench.toml`'s text; `origin` is the file, named in messages, whose
    /// directory relative directories are resolved against. Touches no file.
    pub fn parse(text: &str, origin: &Path) -> Result<Config, ConfigError> {
        parse_with(text, origin, origin.parent().unwrap_or(Path::new("")))
    }

    /// Reads and parses the file at `path`.
    pub fn read(path: &Path) -> Result<Config, ConfigError> {
        let bytes = crate::hostfs::read(path, crate::hostfs::LISTING).map_err(|error| {
            ConfigError::Read {
                path: path.to_path_buf(),
                error: error.into(),
            }
        })?;
        Config::from_bytes(&bytes, path)
    }

    /// Reads `./stackbench.toml` when it exists; `Ok(None)` when it does not.
    pub fn read_default() -> Result<Option<Config>, ConfigError> {
        let path = Path::new(DEFAULT_FILE);
        match crate::hostfs::read(path, crate::hostfs::LISTING) {
            Ok(bytes) => Config::from_bytes(&bytes, path).map(Some),
            Err(error) if error.is_not_found() => Ok(None),
            Err(error) => Err(ConfigError::Read {
                path: path.to_path_buf(),
                error: error.into(),
            }),
        }
    }

    /// Parses a file's bytes, resolving relative directories against the file's absolute
    /// directory so they mean the same whatever the current directory later is.
    fn from_bytes(bytes: &[u8], path: &Path) -> Result<Config, ConfigError> {
        let text = std::str::from_utf8(bytes).map_err(|e| {
            let offset = e.valid_up_to();
            ConfigError::NotUtf8 {
                path: path.to_path_buf(),
                line: line_at(bytes, offset),
                offset,
            }
        })?;
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        parse_with(text, path, absolute.parent().unwrap_or(Path::new("")))
    }
}

/// Parses `text`, naming `origin` in messages and resolving relative directories against
/// `base`.
fn parse_with(text: &str, origin: &Path, base: &Path) -> Result<Config, ConfigError> {
    let invalid = |at: Option<usize>, message: String| ConfigError::Invalid {
        path: origin.to_path_buf(),
        line: at.map(|offset| line_at(text.as_bytes(), offset)),
        message,
    };
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        invalid(
            e.span().map(|s| s.start),
            format!("{}; {FORMAT}", e.message().trim_end()),
        )
    })?;
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut combinations = Vec::with_capacity(raw.combination.len());
    for table in raw.combination {
        let at = table.span().start;
        let table = table.into_inner();
        let Some(name) = table.name else {
            return Err(invalid(
                Some(at),
                "this [[combination]] has no name; add name = \"NAME\" (letters, digits and \
                 . _ - : +)"
                    .into(),
            ));
        };
        let name_at = name.span().start;
        let name = name.into_inner();
        check_name(&name).map_err(|message| invalid(Some(name_at), message))?;
        let name_line = line_at(text.as_bytes(), name_at);
        if let Some(first) = seen.insert(name.clone(), name_line) {
            return Err(invalid(
                Some(name_at),
                format!(
                    "the name \"{name}\" is already used on line {first}; give each combination \
                     its own name"
                ),
            ));
        }
        let Some(dirs) = table.library_dirs else {
            return Err(invalid(
                Some(at),
                format!(
                    "combination \"{name}\" has no library_dirs; add library_dirs = [\"DIR\", ...], \
                     the directories that hold its CUDA libraries"
                ),
            ));
        };
        if dirs.get_ref().is_empty() {
            return Err(invalid(
                Some(dirs.span().start),
                format!(
                    "combination \"{name}\": library_dirs is empty; list the directories that \
                     hold its CUDA libraries, e.g. library_dirs = [\"/usr/local/cuda-12.4/lib64\"]"
                ),
            ));
        }
        let library_dirs = dirs
            .into_inner()
            .into_iter()
            .map(|dir| {
                let dir_at = dir.span().start;
                directory(&dir.into_inner(), base).map_err(|why| {
                    invalid(
                        Some(dir_at),
                        format!("combination \"{name}\": library_dirs {why}"),
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let driver_dir = table
            .driver_dir
            .map(|dir| {
                let dir_at = dir.span().start;
                directory(&dir.into_inner(), base).map_err(|why| {
                    invalid(
                        Some(dir_at),
                        format!("combination \"{name}\": driver_dir {why}"),
                    )
                })
            })
            .transpose()?;
        combinations.push(UserCombination {
            name,
            library_dirs,
            driver_dir,
        });
    }
    Ok(Config { combinations })
}

/// Whether `name` works as `--combination NAME` and as a JUnit suite name; `Err` says why not
/// and what to write instead.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err(
            "the name is empty; give the combination a name, e.g. name = \
             \"cuda-12.4-with-cudnn-9.1\""
                .into(),
        );
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || NAME_PUNCTUATION.contains(c);
    if let Some(bad) = name.chars().find(|&c| !allowed(c)) {
        let instead: String = name
            .chars()
            .map(|c| if allowed(c) { c } else { '-' })
            .collect();
        return Err(format!(
            "the name \"{}\" has {}, which is awkward on a command line or in a JUnit report; use \
             only letters, digits and . _ - : +, e.g. name = \"{}\"",
            name.escape_debug(),
            describe_char(bad),
            suggestion(&instead)
        ));
    }
    if name.starts_with('-') {
        return Err(format!(
            "the name \"{name}\" starts with '-', which reads as an option in --combination \
             {name}; start it with a letter or digit, e.g. name = \"{}\"",
            suggestion(name)
        ));
    }
    Ok(())
}

/// A name to suggest instead of `name`: without leading dashes, never empty.
fn suggestion(name: &str) -> &str {
    match name.trim_start_matches('-') {
        "" => "cuda-12",
        rest => rest,
    }
}

/// A character as a message shows it: `' '` or `U+0009`.
fn describe_char(c: char) -> String {
    if c.is_control() || (c.is_whitespace() && c != ' ') {
        format!("U+{:04X}", u32::from(c))
    } else {
        format!("'{c}'")
    }
}

/// A directory as written, resolved against `base` when relative; `Err` completes a message
/// about the entry ("has an empty entry; ...").
fn directory(written: &str, base: &Path) -> Result<PathBuf, String> {
    if written.is_empty() {
        return Err("has an empty entry; remove it or write the directory's path".into());
    }
    if written.chars().any(char::is_control) {
        return Err(format!(
            "\"{}\" has a control character; write the directory's plain path",
            written.escape_debug()
        ));
    }
    if written == "~" || written.starts_with("~/") {
        return Err(format!(
            "\"{written}\" starts with ~, which stackbench does not expand; write the full path \
             (e.g. \"/home/me{}\")",
            &written[1..]
        ));
    }
    Ok(base.join(written))
}

/// The 1-based line of the byte at `offset`.
fn line_at(bytes: &[u8], offset: usize) -> usize {
    let end = offset.min(bytes.len());
    bytes[..end].iter().filter(|&&b| b == b'\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("/etc/stackbench/stackbench.toml"))
    }

    fn message(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    /// A config as TOML text, the way a person would write it.
    fn render(config: &Config) -> String {
        let quoted = |text: &str| toml::Value::String(text.to_owned()).to_string();
        let mut out = String::new();
        for c in &config.combinations {
            out.push_str("[[combination]]\n");
            out.push_str(&format!("name = {}\n", quoted(&c.name)));
            let dirs: Vec<String> = c
                .library_dirs
                .iter()
                .map(|d| quoted(&d.to_string_lossy()))
                .collect();
            out.push_str(&format!("library_dirs = [{}]\n", dirs.join(", ")));
            if let Some(dir) = &c.driver_dir {
                out.push_str(&format!(
                    "driver_dir = {}\n",
                    quoted(&dir.to_string_lossy())
                ));
            }
            out.push('\n');
        }
        out
    }

    #[test]
    fn the_documented_example_parses() {
        let config = parse(
            "# combinations the scan would not form\n\
             [[combination]]\n\
             name = \"cuda-12.4-with-cudnn-9.1\"\n\
             library_dirs = [\"/usr/local/cuda-12.4/lib64\", \"/opt/cudnn-9.1/lib\"]\n\
             driver_dir = \"/opt/nvidia-550/lib\"   # optional\n\
             \n\
             [[combination]]\n\
             name = \"local:cu13+wheels\"\n\
             library_dirs = [\"venv/lib\", \"../cudnn\"]\n",
        )
        .unwrap();
        assert_eq!(
            config.combinations,
            vec![
                UserCombination {
                    name: "cuda-12.4-with-cudnn-9.1".into(),
                    library_dirs: vec![
                        "/usr/local/cuda-12.4/lib64".into(),
                        "/opt/cudnn-9.1/lib".into()
                    ],
                    driver_dir: Some("/opt/nvidia-550/lib".into()),
                },
                UserCombination {
                    name: "local:cu13+wheels".into(),
                    library_dirs: vec![
                        "/etc/stackbench/venv/lib".into(),
                        "/etc/stackbench/../cudnn".into()
                    ],
                    driver_dir: None,
                },
            ]
        );
    }

    #[test]
    fn an_empty_file_has_no_combinations() {
        assert_eq!(parse("").unwrap(), Config::default());
        assert_eq!(parse("# nothing yet\n").unwrap(), Config::default());
    }

    #[test]
    fn a_bare_file_name_resolves_against_the_current_directory() {
        let config = Config::parse(
            "[[combination]]\nname = \"a\"\nlibrary_dirs = [\"lib\"]\n",
            Path::new("stackbench.toml"),
        )
        .unwrap();
        assert_eq!(
            config.combinations[0].library_dirs,
            vec![PathBuf::from("lib")]
        );
    }

    const FILE: &str = "/etc/stackbench/stackbench.toml";

    #[rstest]
    #[case::unknown_key(
        "[[combination]]\nname = \"a\"\nlibrar_dirs = [\"/x\"]\n",
        "3: unknown field `librar_dirs`, expected one of `name`, `library_dirs`, `driver_dir`; \
         each [[combination]] table has name = \"NAME\", library_dirs = [\"DIR\", ...] and \
         optionally driver_dir = \"DIR\""
    )]
    #[case::unknown_table(
        "[[combinations]]\nname = \"a\"\n",
        "1: unknown field `combinations`, expected `combination`; each [[combination]] table has \
         name = \"NAME\", library_dirs = [\"DIR\", ...] and optionally driver_dir = \"DIR\""
    )]
    #[case::single_brackets(
        "[combination]\nname = \"a\"\n",
        "1: invalid type: map, expected a sequence; each [[combination]] table has name = \
         \"NAME\", library_dirs = [\"DIR\", ...] and optionally driver_dir = \"DIR\""
    )]
    #[case::string_not_list(
        "\n[[combination]]\nname = \"a\"\nlibrary_dirs = \"/x\"\n",
        "4: invalid type: string \"/x\", expected a sequence; each [[combination]] table has \
         name = \"NAME\", library_dirs = [\"DIR\", ...] and optionally driver_dir = \"DIR\""
    )]
    #[case::not_toml(
        "[[combination]]\nname = \"a\n",
        "2: invalid basic string, expected `\"`; each [[combination]] table has name = \"NAME\", \
         library_dirs = [\"DIR\", ...] and optionally driver_dir = \"DIR\""
    )]
    #[case::no_name(
        "[[combination]]\nlibrary_dirs = [\"/x\"]\n",
        "1: this [[combination]] has no name; add name = \"NAME\" (letters, digits and . _ - : +)"
    )]
    #[case::no_dirs(
        "[[combination]]\nname = \"a\"\n\n[[combination]]\nname = \"b\"\n",
        "1: combination \"a\" has no library_dirs; add library_dirs = [\"DIR\", ...], the \
         directories that hold its CUDA libraries"
    )]
    #[case::empty_dirs(
        "[[combination]]\nname = \"a\"\nlibrary_dirs = []\n",
        "3: combination \"a\": library_dirs is empty; list the directories that hold its CUDA \
         libraries, e.g. library_dirs = [\"/usr/local/cuda-12.4/lib64\"]"
    )]
    #[case::empty_name(
        "[[combination]]\nname = \"\"\nlibrary_dirs = [\"/x\"]\n",
        "2: the name is empty; give the combination a name, e.g. name = \
         \"cuda-12.4-with-cudnn-9.1\""
    )]
    #[case::space_in_name(
        "[[combination]]\nname = \"cuda 12.4\"\nlibrary_dirs = [\"/x\"]\n",
        "2: the name \"cuda 12.4\" has ' ', which is awkward on a command line or in a JUnit \
         report; use only letters, digits and . _ - : +, e.g. name = \"cuda-12.4\""
    )]
    #[case::slash_in_name(
        "[[combination]]\nname = \"cuda/12\"\nlibrary_dirs = [\"/x\"]\n",
        "2: the name \"cuda/12\" has '/', which is awkward on a command line or in a JUnit \
         report; use only letters, digits and . _ - : +, e.g. name = \"cuda-12\""
    )]
    #[case::tab_in_name(
        "[[combination]]\nname = \"a\\tb\"\nlibrary_dirs = [\"/x\"]\n",
        "2: the name \"a\\tb\" has U+0009, which is awkward on a command line or in a JUnit \
         report; use only letters, digits and . _ - : +, e.g. name = \"a-b\""
    )]
    #[case::leading_dash(
        "[[combination]]\nname = \"-cu12\"\nlibrary_dirs = [\"/x\"]\n",
        "2: the name \"-cu12\" starts with '-', which reads as an option in --combination -cu12; \
         start it with a letter or digit, e.g. name = \"cu12\""
    )]
    #[case::duplicate_name(
        "[[combination]]\nname = \"a\"\nlibrary_dirs = [\"/x\"]\n\n\
         [[combination]]\nname = \"a\"\nlibrary_dirs = [\"/y\"]\n",
        "6: the name \"a\" is already used on line 2; give each combination its own name"
    )]
    #[case::empty_dir(
        "[[combination]]\nname = \"a\"\nlibrary_dirs = [\n  \"/x\",\n  \"\",\n]\n",
        "5: combination \"a\": library_dirs has an empty entry; remove it or write the \
         directory's path"
    )]
    #[case::tilde(
        "[[combination]]\nname = \"a\"\nlibrary_dirs = [\"/x\"]\ndriver_dir = \"~/nvidia\"\n",
        "4: combination \"a\": driver_dir \"~/nvidia\" starts with ~, which stackbench does not \
         expand; write the full path (e.g. \"/home/me/nvidia\")"
    )]
    #[case::control_in_dir(
        "[[combination]]\nname = \"a\"\nlibrary_dirs = [\"/x\\u0000y\"]\n",
        "3: combination \"a\": library_dirs \"/x\\0y\" has a control character; write the \
         directory's plain path"
    )]
    #[case::wrong_type(
        "[[combination]]\nname = 3\nlibrary_dirs = [\"/x\"]\n",
        "2: invalid type: integer `3`, expected a string; each [[combination]] table has name = \
         \"NAME\", library_dirs = [\"DIR\", ...] and optionally driver_dir = \"DIR\""
    )]
    fn errors_name_the_file_the_line_and_what_to_write(#[case] text: &str, #[case] expected: &str) {
        assert_eq!(message(text), format!("{FILE}:{expected}"));
    }

    #[test]
    fn files_that_cannot_be_read_or_are_not_utf8() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("absent.toml");
        let error = Config::read(&missing).unwrap_err().to_string();
        assert!(
            error.starts_with(&format!("cannot read {}: ", missing.display()))
                && error.ends_with(
                    "; check that it exists and is readable, or give another file with \
                     --config FILE"
                ),
            "{error}"
        );
        let latin1 = dir.path().join("latin1.toml");
        std::fs::write(&latin1, b"# ok\n[[combination]]\nname = \"caf\xe9\"\n").unwrap();
        assert_eq!(
            Config::read(&latin1).unwrap_err().to_string(),
            format!(
                "{}:3: not UTF-8 text (invalid byte at offset 32); save the file as UTF-8",
                latin1.display()
            )
        );
        let good = dir.path().join("stackbench.toml");
        std::fs::write(
            &good,
            "[[combination]]\nname = \"a\"\nlibrary_dirs = [\"lib\"]\n",
        )
        .unwrap();
        let config = Config::read(&good).unwrap();
        assert_eq!(
            config.combinations[0].library_dirs,
            vec![dir.path().join("lib")]
        );
    }

    /// A name the parser accepts.
    fn valid_name() -> impl Strategy<Value = String> {
        "[A-Za-z0-9][A-Za-z0-9._:+-]{0,24}"
    }

    /// A directory as written in the file: absolute or relative, any printable text.
    fn written_dir() -> impl Strategy<Value = String> {
        prop_oneof![
            "/[a-zA-Z0-9 ._+-]{1,12}(/[a-zA-Z0-9 ._+ü-]{1,12}){0,3}",
            "[a-zA-Z0-9._][a-zA-Z0-9 ._+-]{0,12}(/[a-zA-Z0-9._\"'\\\\-]{1,8}){0,2}",
        ]
    }

    /// A valid file's combinations as written: unique names, directories as in the file.
    fn written_config() -> impl Strategy<Value = Vec<(String, Vec<String>, Option<String>)>> {
        prop::collection::vec(
            (
                valid_name(),
                prop::collection::vec(written_dir(), 1..4),
                prop::option::of(written_dir()),
            ),
            0..5,
        )
        .prop_map(|mut combinations| {
            let mut seen = std::collections::HashSet::new();
            combinations.retain(|(name, _, _)| seen.insert(name.clone()));
            combinations
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn any_text_parses_or_errors_without_panicking(text in "\\PC{0,200}") {
            let _ = parse(&text);
        }

        #[test]
        fn toml_shaped_text_parses_or_errors_without_panicking(
            text in "(\\[\\[combination\\]\\]\n|name = \"[a-z -]{0,6}\"\n|library_dirs = \\[(\"[a-z/~]{0,5}\",? ?){0,3}\\]\n|driver_dir = \"[a-z/]{0,5}\"\n|[a-z_]{1,8} = [0-9\"\\[]{1,3}\n){0,8}"
        ) {
            let _ = parse(&text);
        }

        #[test]
        fn valid_configs_round_trip(written in written_config()) {
            let base = Path::new("/etc/stackbench");
            let config = Config {
                combinations: written
                    .iter()
                    .map(|(name, dirs, driver)| UserCombination {
                        name: name.clone(),
                        library_dirs: dirs.iter().map(|d| base.join(d)).collect(),
                        driver_dir: driver.as_ref().map(|d| base.join(d)),
                    })
                    .collect(),
            };
            let as_written = Config {
                combinations: written
                    .iter()
                    .map(|(name, dirs, driver)| UserCombination {
                        name: name.clone(),
                        library_dirs: dirs.iter().map(PathBuf::from).collect(),
                        driver_dir: driver.as_ref().map(PathBuf::from),
                    })
                    .collect(),
            };
            let text = render(&as_written);
            prop_assert_eq!(parse(&text).unwrap(), config.clone());
            // Resolved directories are absolute, so a config renders to itself.
            prop_assert_eq!(parse(&render(&config)).unwrap(), config);
        }

        #[test]
        fn invalid_names_are_rejected(
            prefix in "[A-Za-z0-9._:+-]{0,6}",
            bad in "[^A-Za-z0-9._:+-]",
            suffix in "[A-Za-z0-9._:+-]{0,6}",
        ) {
            let name = format!("{prefix}{bad}{suffix}");
            let text = format!(
                "[[combination]]\nname = {}\nlibrary_dirs = [\"/x\"]\n",
                toml::Value::String(name.clone())
            );
            let error = parse(&text).unwrap_err().to_string();
            prop_assert!(error.starts_with(&format!("{FILE}:2: the name ")), "{}", error);
        }

        #[test]
        fn names_starting_with_a_dash_are_rejected(rest in "[A-Za-z0-9._:+-]{0,8}") {
            let text = format!(
                "[[combination]]\nname = \"-{rest}\"\nlibrary_dirs = [\"/x\"]\n"
            );
            prop_assert!(parse(&text).is_err());
        }
    }
}
