//! What this program is: its ELF class and machine, and which other machines' libraries its
//! kernel also runs. The ELF reader, the loader's search and the findings hold a library
//! against these.

/// The ELF class of this process (`ELF64` or `ELF32`): a library of the other class cannot be
/// loaded into it.
pub const OWN_CLASS: &str = if cfg!(target_pointer_width = "64") {
    "ELF64"
} else {
    "ELF32"
};

/// `e_machine` of this program, named as the ELF reader names it (`elf::ElfInfo::machine`): a library of another
/// machine cannot load here (glibc answers "No such file or directory" for it).
pub const OWN_MACHINE: &str = if cfg!(target_arch = "x86_64") {
    "x86_64"
} else if cfg!(target_arch = "x86") {
    "i386"
} else if cfg!(target_arch = "aarch64") {
    "aarch64"
} else if cfg!(all(target_arch = "powerpc64", target_endian = "little")) {
    "ppc64le"
} else {
    std::env::consts::ARCH
};

/// Whether a library of `machine` is for this host: its own machine, or the 32-bit machine its
/// kernel also runs (`i386` beside `x86_64`, `arm` beside `aarch64`: for 32-bit programs, the
/// class decides). Any other machine's libraries no program of this host can load.
pub fn runs_here(machine: &str) -> bool {
    machine == OWN_MACHINE
        || matches!(
            (OWN_MACHINE, machine),
            ("x86_64", "i386") | ("aarch64", "arm")
        )
}
