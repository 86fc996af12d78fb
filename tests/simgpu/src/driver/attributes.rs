//! `cuDeviceGetAttribute`'s answers: the profile's (compute capability, multiprocessors, L2,
//! SM clock, memory clock and bus, host NUMA node), the device's PCI address ([`crate::state::pci`]), and the limits every GPU since
//! Volta shares (1024 threads per block, warp of 32, 48 KiB of static shared memory per block),
//! with what this simulator does not provide (managed memory, cooperative launches, memory
//! pools, 64-bit stream memory operations) answered as absent.

use crate::profile::Device;
use crate::state::pci;

/// The largest attribute number of CUDA 12.9's `CUdevice_attribute`.
const LAST: i32 = 143;

/// The value of attribute `attribute` (`CUdevice_attribute`) of the device at `index`, on host
/// NUMA node `numa`; `None` for a number that is not an attribute (`CUDA_ERROR_INVALID_VALUE`).
pub(super) fn value(device: &Device, index: usize, numa: u32, attribute: i32) -> Option<i32> {
    let (major, minor) = device.compute_capability();
    let pci = pci(index);
    Some(match attribute {
        1 => 1024,                                                       // MAX_THREADS_PER_BLOCK
        2 | 3 => 1024,                                                   // MAX_BLOCK_DIM_X, _Y
        4 => 64,                                                         // MAX_BLOCK_DIM_Z
        5 => i32::MAX,                                                   // MAX_GRID_DIM_X
        6 | 7 => 65535,                                                  // MAX_GRID_DIM_Y, _Z
        8 => 48 * 1024,                      // MAX_SHARED_MEMORY_PER_BLOCK
        9 => 64 * 1024,                      // TOTAL_CONSTANT_MEMORY
        10 => 32,                            // WARP_SIZE
        11 => i32::MAX,                      // MAX_PITCH
        12 => 65536,                         // MAX_REGISTERS_PER_BLOCK
        13 => khz(device.sm_clock_mhz),      // CLOCK_RATE, kHz
        14 | 30 => 512,                      // TEXTURE_ALIGNMENT, SURFACE_ALIGNMENT
        15 => 1,                             // GPU_OVERLAP
        16 => device.multiprocessors as i32, // MULTIPROCESSOR_COUNT
        19 => 1,                             // CAN_MAP_HOST_MEMORY
        31 => 1,                             // CONCURRENT_KERNELS
        32 => 1,                             // ECC_ENABLED
        33 => pci.bus as i32,                // PCI_BUS_ID
        34 => pci.device as i32,             // PCI_DEVICE_ID
        36 => khz(device.memory_clock_mhz),  // MEMORY_CLOCK_RATE, kHz
        37 => device.memory_bus_bits as i32, // GLOBAL_MEMORY_BUS_WIDTH
        38 => (device.l2_mib * 1024 * 1024).min(i32::MAX as u64) as i32, // L2_CACHE_SIZE
        39 => 2048,                          // MAX_THREADS_PER_MULTIPROCESSOR
        40 => 2,                             // ASYNC_ENGINE_COUNT
        41 => 1,                             // UNIFIED_ADDRESSING
        50 => pci.domain as i32,             // PCI_DOMAIN_ID
        75 => major,                         // COMPUTE_CAPABILITY_MAJOR
        76 => minor,                         // COMPUTE_CAPABILITY_MINOR
        78..=80 => 1,                        // STREAM_PRIORITIES, GLOBAL_L1_CACHE, LOCAL_L1_CACHE
        81 => 228 * 1024,                    // MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
        82 => 65536,                         // MAX_REGISTERS_PER_MULTIPROCESSOR
        87 => 2,                             // SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO
        90 => 1,                             // COMPUTE_PREEMPTION_SUPPORTED
        91 => 1,          // CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: device == host address
        97 => 227 * 1024, // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
        106 => 32,        // MAX_BLOCKS_PER_MULTIPROCESSOR
        111 => 1024,      // RESERVED_SHARED_MEMORY_PER_BLOCK
        123 => 1,         // CAN_USE_STREAM_WAIT_VALUE_NOR
        134 => numa as i32, // HOST_NUMA_ID
        139 => return None, // not in the enumeration
        other if (1..=LAST).contains(&other) => 0,
        _ => return None,
    })
}

fn khz(mhz: u32) -> i32 {
    (u64::from(mhz) * 1000).min(i32::MAX as u64) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_follow_the_profile_and_the_pci_address() {
        let device = Device::default();
        assert_eq!(value(&device, 0, 0, 75), Some(15));
        assert_eq!(value(&device, 0, 0, 76), Some(0));
        assert_eq!(value(&device, 0, 0, 16), Some(132));
        assert_eq!(value(&device, 0, 0, 38), Some(50 << 20));
        assert_eq!(value(&device, 1, 0, 33), Some(0x2a));
        assert_eq!(value(&device, 0, 0, 13), Some(1_980_000));
        assert_eq!(value(&device, 0, 0, 83), Some(0), "no managed memory");
        assert_eq!(value(&device, 0, 0, 0), None);
        assert_eq!(value(&device, 0, 0, 139), None);
        assert_eq!(value(&device, 0, 0, 144), None);
        assert_eq!(value(&device, 0, 1, 134), Some(1));
    }
}
