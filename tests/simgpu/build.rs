//! The simulated driver's shared object answers to the driver's soname, as the real one does.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcuda.so.1");
}
