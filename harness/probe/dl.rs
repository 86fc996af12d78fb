//! The dynamic loader, as the worker uses it: `dlopen` with a pinned path, `dlsym` that may find
//! nothing, and the list of every object the process has mapped (`dl_iterate_phdr`).

use std::ffi::{c_int, c_void, CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

/// A library opened with `dlopen`. It is never closed: its constructors may have started threads
/// that still run code from it.
#[derive(Debug)]
pub struct Library {
    handle: NonNull<c_void>,
}

/// The loader's message for the last failed `dl*` call, if any.
fn last_error() -> Option<String> {
    // SAFETY: dlerror returns null or a NUL-terminated string valid until the next dl* call on
    // this thread; it is copied at once.
    unsafe {
        let text = libc::dlerror();
        (!text.is_null()).then(|| CStr::from_ptr(text).to_string_lossy().into_owned())
    }
}

impl Library {
    /// `dlopen(path, RTLD_NOW | RTLD_LOCAL)`: every symbol bound now, nothing added to the global
    /// scope. A path without a `/` is searched for, as a program's `dlopen("libcudart.so.12")` is.
    /// The error is the loader's own message (`dlerror`).
    pub fn open(path: &Path) -> Result<Library, String> {
        let name = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| "the path contains a NUL byte".to_owned())?;
        // SAFETY: clears any stale error; `name` is a valid C string for the call. Loading runs the
        // library's constructors, which is the point: the worker process exists to contain them.
        let handle = unsafe {
            libc::dlerror();
            libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL)
        };
        match NonNull::new(handle) {
            Some(handle) => Ok(Library { handle }),
            None => {
                Err(last_error().unwrap_or_else(|| "dlopen failed and gave no reason".to_owned()))
            }
        }
    }

    /// The library of soname `name` when the process has already loaded it (`RTLD_NOLOAD`:
    /// nothing is loaded or searched for), to look up a function its binding lacks.
    pub fn loaded(name: &CStr) -> Option<Library> {
        // SAFETY: `name` is a C string; RTLD_NOLOAD only returns an object already mapped.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
        NonNull::new(handle).map(|handle| Library { handle })
    }

    /// Whether anything in this library's scope exports `name` (an older library may not).
    pub fn exports(&self, name: &CStr) -> bool {
        // SAFETY: only looked up, never called.
        unsafe { self.function::<unsafe extern "C" fn()>(name) }.is_some()
    }

    /// The function `name` in this library's scope (the library and its dependencies), or `None`
    /// if nothing exports it.
    ///
    /// # Safety
    /// `F` must be an `unsafe extern "C" fn` pointer type whose signature is the symbol's real C
    /// signature; calling through a wrong one is undefined behaviour.
    pub unsafe fn function<F: Copy>(&self, name: &CStr) -> Option<F> {
        const { assert!(std::mem::size_of::<F>() == std::mem::size_of::<*mut c_void>()) };
        // SAFETY: the handle came from dlopen and is never closed; `name` is a C string.
        let address = unsafe { libc::dlsym(self.handle.as_ptr(), name.as_ptr()) };
        if address.is_null() {
            return None;
        }
        // SAFETY: F is pointer-sized (checked above) and, by the caller's contract, the function
        // pointer type of this symbol.
        Some(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&address) })
    }
}

/// One object mapped into the process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapped {
    /// Where the loader put it (its load bias): with the name, what tells two objects apart.
    pub base: usize,
    /// The path the loader opened it by (empty for the main program).
    pub name: PathBuf,
    /// Its `DT_SONAME`, read from its mapped dynamic section.
    pub soname: Option<String>,
}

/// Every object the process has mapped, in the loader's order (load order).
pub fn mapped_objects() -> Vec<Mapped> {
    let mut out: Vec<Mapped> = Vec::new();
    // SAFETY: the callback only reads what the loader hands it and pushes onto `out`, which
    // outlives the call; it never unwinds (nothing in it can panic short of allocation failure,
    // which aborts).
    unsafe {
        libc::dl_iterate_phdr(Some(collect), (&mut out as *mut Vec<Mapped>).cast());
    }
    out
}

unsafe extern "C" fn collect(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut c_void,
) -> c_int {
    // SAFETY: dl_iterate_phdr passes a valid info for the duration of the call, and `data` is the
    // Vec given by mapped_objects.
    let (info, out) = unsafe { (&*info, &mut *data.cast::<Vec<Mapped>>()) };
    let name = if info.dlpi_name.is_null() {
        PathBuf::new()
    } else {
        // SAFETY: a non-null dlpi_name is a NUL-terminated string owned by the loader.
        PathBuf::from(OsStr::from_bytes(
            unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes(),
        ))
    };
    // SAFETY: the info describes an object that is mapped for the duration of the call.
    let soname = unsafe { soname(info) };
    out.push(Mapped {
        base: info.dlpi_addr as usize,
        name,
        soname,
    });
    0
}

/// One `Elf64_Dyn` entry.
#[repr(C)]
#[derive(Clone, Copy)]
struct Dyn {
    tag: i64,
    value: u64,
}

const DT_NULL: i64 = 0;
const DT_STRTAB: i64 = 5;
const DT_SONAME: i64 = 14;
const PF_R: u32 = 4;

/// The object's `DT_SONAME`, read from its mapped dynamic section. glibc relocates `DT_STRTAB` in
/// place on most targets but not all, so both readings are tried, and nothing is read outside the
/// object's readable `PT_LOAD` segments.
///
/// # Safety
/// `info` must describe an object mapped for the duration of the call.
unsafe fn soname(info: &libc::dl_phdr_info) -> Option<String> {
    if info.dlpi_phdr.is_null() || info.dlpi_phnum == 0 {
        return None;
    }
    let base = info.dlpi_addr as usize;
    // SAFETY: the loader's program headers for this object, dlpi_phnum of them.
    let headers =
        unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
    let segments: Vec<(usize, usize)> = headers
        .iter()
        .filter(|h| h.p_type == libc::PT_LOAD && h.p_flags & PF_R != 0)
        .map(|h| {
            let start = base.wrapping_add(h.p_vaddr as usize);
            (start, start.wrapping_add(h.p_memsz as usize))
        })
        .collect();
    let readable_to = |address: usize| {
        segments
            .iter()
            .find(|(start, end)| address >= *start && address < *end)
            .map(|(_, end)| *end)
    };
    let dynamic = headers.iter().find(|h| h.p_type == libc::PT_DYNAMIC)?;
    let first = base.wrapping_add(dynamic.p_vaddr as usize);
    let count = dynamic.p_memsz as usize / std::mem::size_of::<Dyn>();
    let end = readable_to(first)?;
    if first % std::mem::align_of::<Dyn>() != 0 || first + count * std::mem::size_of::<Dyn>() > end
    {
        return None;
    }
    let (mut strtab, mut offset) = (None, None);
    for k in 0..count {
        // SAFETY: inside the readable segment holding the dynamic section (checked above), aligned.
        let entry = unsafe { (first as *const Dyn).add(k).read() };
        match entry.tag {
            DT_NULL => break,
            DT_STRTAB => strtab = Some(entry.value as usize),
            DT_SONAME => offset = Some(entry.value as usize),
            _ => {}
        }
    }
    let (strtab, offset) = (strtab?, offset?);
    [strtab, base.wrapping_add(strtab)]
        .into_iter()
        .find_map(|table| {
            readable_to(table)?;
            let start = table.checked_add(offset)?;
            let end = readable_to(start)?;
            // SAFETY: [start, end) lies in one readable segment of a mapped object.
            let bytes =
                unsafe { std::slice::from_raw_parts(start as *const u8, (end - start).min(4096)) };
            let text = &bytes[..bytes.iter().position(|&b| b == 0)?];
            (!text.is_empty()).then(|| String::from_utf8_lossy(text).into_owned())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_libc_with_its_soname() {
        let objects = mapped_objects();
        let libc = objects
            .iter()
            .find(|o| {
                o.name
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("libc.so"))
            })
            .expect("libc is mapped");
        assert_eq!(libc.soname.as_deref(), Some("libc.so.6"));
    }

    #[test]
    fn missing_library_gives_the_loaders_message() {
        let error = Library::open(Path::new("/nonexistent/libnothing.so.1")).unwrap_err();
        assert!(error.contains("No such file or directory"), "{error}");
    }

    #[test]
    fn missing_symbol_is_none() {
        let libc = Library::open(Path::new("libc.so.6")).expect("libc opens");
        // SAFETY: never called.
        let f: Option<unsafe extern "C" fn()> =
            unsafe { libc.function(c"stackbench_no_such_symbol") };
        assert!(f.is_none());
        // SAFETY: getpid's real signature.
        let getpid: Option<unsafe extern "C" fn() -> c_int> = unsafe { libc.function(c"getpid") };
        assert_eq!(
            getpid.map(|f| unsafe { f() }),
            Some(std::process::id() as c_int)
        );
    }
}
