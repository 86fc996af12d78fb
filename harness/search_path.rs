//! The dynamic loader's search path as glibc reads it: how a path variable such as
//! `LD_LIBRARY_PATH` splits, and x86-64's default directories. Discovery, the loader's
//! simulated search and the findings read paths the same way.

/// The default directories of the loader (`resolve::SearchContext::host`) on x86-64: Debian's multiarch directories
/// and the lib64 ones of other distributions (a glibc build knows only its own; the others are
/// simply missing).
pub const X86_64_DEFAULT_DIRS: &[&str] = &[
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
];

/// Splits a search-path variable the way glibc splits LD_LIBRARY_PATH: on `:` and `;`, keeping
/// empty entries. An empty or unset variable is no entries at all (glibc ignores it).
pub fn split_search_path(value: &str) -> Vec<String> {
    if value.is_empty() {
        return Vec::new();
    }
    value.split([':', ';']).map(str::to_owned).collect()
}
