//! Device and pinned host memory. Device memory is real host memory (an anonymous mapping per
//! allocation) at a device address taken from a range reserved with no access, so that no host
//! pointer can ever equal one and a host dereference of a device address faults, as on a GPU.
//! Allocations are 64 KiB apart at least, so that a kernel's access past its buffer lands in no
//! allocation. Pinned host memory (`cuMemHostAlloc`) is mapped too, at the host pointer, as with
//! unified addressing: its device address is its host address.
//!
//! Every write to an allocation moves its generation on, which is how a launch knows that its
//! inputs have not changed since the last one (see [`super::launch`]).

use super::device::put;
use super::entry::{call, enter, wait};
use super::errors::{CUresult, Code};
use super::Inner;
use std::collections::BTreeMap;
use std::ffi::{c_uint, c_void};

/// Device addresses are handed out in multiples of this, one unit apart at least.
const GRANULE: u64 = 64 << 10;

/// `cuMemHostAlloc`'s flags: `PORTABLE`, `DEVICEMAP`, `WRITECOMBINED`.
const HOST_ALLOC_FLAGS: c_uint = 0x1 | 0x2 | 0x4;

/// An anonymous mapping, unmapped when dropped.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone; its bytes are read and written only under
// the driver's lock, or by the host program that was given a pinned pointer to them.
unsafe impl Send for Mapping {}

impl Mapping {
    /// `len` bytes (rounded up to pages by the kernel) of zeros, readable and writable when
    /// `access`, else reserved with no access.
    fn new(len: usize, access: bool) -> Option<Mapping> {
        let prot = if access {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_NONE
        };
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE;
        // SAFETY: a new anonymous mapping at an address the kernel picks; nothing is replaced.
        let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, -1, 0) };
        (ptr != libc::MAP_FAILED).then(|| Mapping {
            ptr: ptr.cast(),
            len,
        })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: mapped in `new` with this length and unmapped once, here.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// One allocation.
pub(super) struct Alloc {
    /// Unique for the process's life (addresses are reused, ids never).
    pub id: u64,
    pub base: u64,
    pub len: usize,
    /// The device it is on; `None` for pinned host memory.
    pub gpu: Option<usize>,
    /// Moves on at every write.
    pub generation: u64,
    bytes: Mapping,
}

impl Alloc {
    /// The host address of its first byte.
    pub fn data(&self) -> *mut u8 {
        self.bytes.ptr
    }

    /// Whether `[address, address + len)` lies within it.
    pub fn holds(&self, address: u64, len: usize) -> bool {
        address >= self.base && (address - self.base).saturating_add(len as u64) <= self.len as u64
    }
}

/// Every allocation, by address.
#[derive(Default)]
pub(super) struct Space {
    allocs: BTreeMap<u64, Alloc>,
    /// The range device addresses come from, reserved at the first allocation.
    reserved: Option<Mapping>,
    last_id: u64,
}

impl Space {
    /// The allocation holding `[address, address + len)` whole, if one does.
    pub fn find(&self, address: u64, len: usize) -> Option<&Alloc> {
        let (_, alloc) = self.allocs.range(..=address).next_back()?;
        alloc.holds(address, len.max(1)).then_some(alloc)
    }

    /// As [`Space::find`], to write: the allocation's generation moves on.
    pub fn write(&mut self, address: u64, len: usize) -> Option<&mut Alloc> {
        let (_, alloc) = self.allocs.range_mut(..=address).next_back()?;
        if !alloc.holds(address, len.max(1)) {
            return None;
        }
        alloc.generation += 1;
        Some(alloc)
    }

    /// The allocation with id `id` at `base`, if it is still there.
    pub fn by_id(&self, base: u64, id: u64) -> Option<&Alloc> {
        self.allocs.get(&base).filter(|a| a.id == id)
    }

    /// Every allocation, by address.
    pub fn all(&self) -> impl Iterator<Item = &Alloc> {
        self.allocs.values()
    }

    /// Marks the allocation at `base` written.
    pub fn touch(&mut self, base: u64) {
        if let Some(alloc) = self.allocs.get_mut(&base) {
            alloc.generation += 1;
        }
    }

    fn insert(&mut self, base: u64, len: usize, gpu: Option<usize>, bytes: Mapping) {
        self.last_id += 1;
        let alloc = Alloc {
            id: self.last_id,
            base,
            len,
            gpu,
            generation: 0,
            bytes,
        };
        self.allocs.insert(base, alloc);
    }

    /// `len` bytes of device memory on `gpu` at a free device address within a reservation of
    /// `reserve` bytes; `None` when no address or host memory is left.
    fn device(&mut self, gpu: usize, len: usize, reserve: u64) -> Option<u64> {
        if self.reserved.is_none() {
            self.reserved = Some(Mapping::new(usize::try_from(reserve).ok()?, false)?);
        }
        let range = self.reserved.as_ref()?;
        let (start, end) = (range.ptr as u64, range.ptr as u64 + range.len as u64);
        let need = (len as u64).div_ceil(GRANULE) * GRANULE;
        let mut at = start.div_ceil(GRANULE) * GRANULE;
        for alloc in self.allocs.range(start..end).map(|(_, a)| a) {
            if alloc.base >= at + need + GRANULE {
                break;
            }
            at = (alloc.base + alloc.len as u64).div_ceil(GRANULE) * GRANULE + GRANULE;
        }
        if at + need > end {
            return None;
        }
        let bytes = Mapping::new(len, true)?;
        self.insert(at, len, Some(gpu), bytes);
        Some(at)
    }

    /// `len` bytes of pinned host memory; its address.
    fn pinned(&mut self, len: usize) -> Option<u64> {
        let bytes = Mapping::new(len, true)?;
        let base = bytes.ptr as u64;
        self.insert(base, len, None, bytes);
        Some(base)
    }

    /// Frees the allocation starting at `base` if it is on a device (`pinned`: in host memory).
    fn free(&mut self, base: u64, pinned: bool) -> Option<Alloc> {
        let kind = self.allocs.get(&base)?.gpu.is_none() == pinned;
        if kind {
            self.allocs.remove(&base)
        } else {
            None
        }
    }

    /// Frees every allocation of `gpu` (its context was destroyed).
    pub fn remove_gpu(&mut self, gpu: usize) {
        self.allocs.retain(|_, a| a.gpu != Some(gpu));
    }
}

impl Inner {
    /// The device memory `gpu` may still allocate: its size, or less under
    /// `out_of_memory_above_mib`.
    fn memory_limit(&self, gpu: usize) -> u64 {
        let total = self.total_memory(gpu);
        match self.profile.faults.out_of_memory_above_mib {
            0 => total,
            mib => total.min(mib << 20),
        }
    }
}

/// `cuMemAlloc_v2`: `bytesize` bytes on the current context's device, zeroed (the driver does
/// not promise what they hold).
///
/// # Safety
/// `dptr` must be null or valid for a `CUdeviceptr` write.
#[no_mangle]
pub unsafe extern "C" fn cuMemAlloc_v2(dptr: *mut u64, bytesize: usize) -> CUresult {
    call(|sim| {
        let mut inner = enter(sim)?;
        let gpu = inner.current()?;
        if dptr.is_null() || bytesize == 0 {
            return Err(Code::INVALID_VALUE);
        }
        let used = inner.gpus[gpu].used;
        if used.saturating_add(bytesize as u64) > inner.memory_limit(gpu) {
            return Err(Code::OUT_OF_MEMORY);
        }
        let reserve = inner
            .gpus
            .iter()
            .map(|g| 2 * (g.profile.memory_gib << 30))
            .sum();
        let address = (inner.memory.device(gpu, bytesize, reserve)).ok_or(Code::OUT_OF_MEMORY)?;
        inner.gpus[gpu].used += bytesize as u64;
        // SAFETY: the caller's contract.
        unsafe { put(dptr, address) }
    })
}

/// `cuMemFree_v2`: frees an allocation of `cuMemAlloc`, after the work of its device (the
/// implicit synchronisation the driver documents).
#[no_mangle]
pub extern "C" fn cuMemFree_v2(dptr: u64) -> CUresult {
    call(|sim| {
        enter(sim)?.current()?;
        let gpu = (enter(sim)?.memory.find(dptr, 1))
            .filter(|a| a.base == dptr)
            .and_then(|a| a.gpu)
            .ok_or(Code::INVALID_VALUE)?;
        wait(sim, |inner| {
            if inner.gpus[gpu].sticky.is_some() || inner.streams.idle(gpu) {
                Some(inner.settle(gpu))
            } else {
                None
            }
        })?;
        let mut inner = enter(sim)?;
        let freed = inner.memory.free(dptr, false).ok_or(Code::INVALID_VALUE)?;
        inner.gpus[gpu].used -= freed.len as u64;
        Ok(())
    })
}

/// `cuMemGetInfo_v2`: the current device's free and total memory.
///
/// # Safety
/// `free` and `total` must be null or valid for `size_t` writes.
#[no_mangle]
pub unsafe extern "C" fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> CUresult {
    call(|sim| {
        let inner = enter(sim)?;
        let gpu = inner.current()?;
        let size = inner.total_memory(gpu);
        let available = inner.memory_limit(gpu).saturating_sub(inner.gpus[gpu].used);
        // SAFETY: the caller's contract.
        unsafe {
            put(free, available as usize)?;
            put(total, size as usize)
        }
    })
}

/// `cuMemHostAlloc`: pinned host memory, page-aligned, which kernels and memory operations of
/// every device reach at the same address (unified addressing), whatever the flags.
///
/// # Safety
/// `pp` must be null or valid for a pointer write.
#[no_mangle]
pub unsafe extern "C" fn cuMemHostAlloc(
    pp: *mut *mut c_void,
    bytesize: usize,
    flags: c_uint,
) -> CUresult {
    call(|sim| {
        let mut inner = enter(sim)?;
        inner.current()?;
        if pp.is_null() || bytesize == 0 || flags & !HOST_ALLOC_FLAGS != 0 {
            return Err(Code::INVALID_VALUE);
        }
        let address = inner.memory.pinned(bytesize).ok_or(Code::OUT_OF_MEMORY)?;
        // SAFETY: the caller's contract.
        unsafe { put(pp, address as *mut c_void) }
    })
}

/// `cuMemFreeHost`: frees memory of `cuMemHostAlloc`, after the work of every device.
#[no_mangle]
pub extern "C" fn cuMemFreeHost(p: *mut c_void) -> CUresult {
    call(|sim| {
        let base = p as u64;
        let pinned = enter(sim)?.memory.find(base, 1).map(|a| (a.base, a.gpu));
        if pinned != Some((base, None)) {
            return Err(Code::INVALID_VALUE);
        }
        wait(sim, |inner| {
            (0..inner.gpus.len())
                .all(|gpu| inner.gpus[gpu].sticky.is_some() || inner.streams.idle(gpu))
                .then_some(Ok(()))
        })?;
        enter(sim)?
            .memory
            .free(base, true)
            .ok_or(Code::INVALID_VALUE)?;
        Ok(())
    })
}

/// `cuMemHostGetDevicePointer_v2`: the device address of pinned memory, which is its host
/// address (flags must be 0).
///
/// # Safety
/// `pdptr` must be null or valid for a `CUdeviceptr` write.
#[no_mangle]
pub unsafe extern "C" fn cuMemHostGetDevicePointer_v2(
    pdptr: *mut u64,
    p: *mut c_void,
    flags: c_uint,
) -> CUresult {
    call(|sim| {
        let inner = enter(sim)?;
        inner.current()?;
        let pinned = inner
            .memory
            .find(p as u64, 1)
            .is_some_and(|a| a.gpu.is_none());
        if flags != 0 || !pinned {
            return Err(Code::INVALID_VALUE);
        }
        // SAFETY: the caller's contract.
        unsafe { put(pdptr, p as u64) }
    })
}
