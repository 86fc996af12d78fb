//! Theoretical peaks: what a card can do at most, from what its driver says of it (the SM
//! count, the clocks, the memory bus) and its architecture's rates per SM per clock. Every GPU
//! figure is also given as a share of these (`% of spec`), as nvbench and vendor sheets give
//! them, beside the share of the best figure measured in the same run.

pub mod arch;
pub mod products;

use super::model::Spec;
use crate::compat::ComputeCapability;
use products::Product;
use std::collections::BTreeMap;

/// What the driver said of one device, as far as a peak needs it (`driver.devices`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceFacts {
    pub name: String,
    pub cc: Option<ComputeCapability>,
    pub multiprocessors: Option<u32>,
    /// The SM clock at its highest, MHz (`CU_DEVICE_ATTRIBUTE_CLOCK_RATE`).
    pub clock_mhz: Option<u32>,
    /// The memory clock at its highest, MHz (`CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE`).
    pub memory_clock_mhz: Option<u32>,
    /// `CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH`, bits.
    pub memory_bus_bits: Option<u32>,
}

impl DeviceFacts {
    /// What a run's GPU list says of a device: its name, compute capability and memory clock
    /// (files before schema minor 5 kept no SM count, clock or bus: a known product's
    /// datasheet gives those).
    pub fn of_gpu(gpu: &crate::gpu::Gpu) -> DeviceFacts {
        DeviceFacts {
            name: gpu.name.clone(),
            cc: ComputeCapability::parse(&gpu.compute_capability),
            memory_clock_mhz: gpu.memory_clock_mhz,
            ..DeviceFacts::default()
        }
    }
}

/// The theoretical peaks of `device`. Memory: a known product's datasheet figure, else two
/// transfers per memory clock across the bus (as nvbench and CUDA's `deviceQuery` compute it).
/// Compute: SMs × clock × the architecture's rate; a known product at the clocks its datasheet
/// assumes, or its datasheet figures where they are not the architecture's rates. An
/// architecture without known rates has none: never a guess.
pub fn peaks(device: &DeviceFacts) -> Spec {
    let product = device.cc.and_then(|cc| products::named(&device.name, cc));
    let (memory_gbps, memory_basis) = memory(device, product).unzip();
    let mut spec = Spec {
        memory_gbps,
        ..Spec::default()
    };
    let mut basis = Vec::new();
    match compute(device, product) {
        Ok((tflops, compute_basis)) => {
            spec.tflops = tflops;
            basis.push(compute_basis);
        }
        Err(missing) => spec.missing = Some(format!("no theoretical peak: {missing}")),
    }
    basis.extend(memory_basis);
    spec.basis = basis.join("; ");
    spec
}

/// The DRAM bandwidth, GB/s, and what it was computed from: a known product's datasheet (the
/// driver's clock × bus can exceed it: an H200's 3201 MHz × 6144 bits give 4917 GB/s of its
/// 4800), else the driver's clock × bus.
fn memory(device: &DeviceFacts, product: Option<&Product>) -> Option<(f64, String)> {
    let bus = match (device.memory_clock_mhz, device.memory_bus_bits) {
        (Some(mhz), Some(bits)) if mhz > 0 && bits > 0 => Some((
            2.0 * f64::from(mhz) * 1e6 * f64::from(bits) / 8.0 / 1e9,
            format!("{bits}-bit bus at {mhz} MHz, double data rate"),
        )),
        _ => None,
    };
    match (product.and_then(|p| Some((p, p.memory_gbps?))), bus) {
        (Some((p, gbps)), Some((computed, how))) if (computed / gbps - 1.0).abs() > 0.01 => Some((
            gbps,
            format!(
                "memory: the {} datasheet (the driver's {how} would give {computed:.0} GB/s)",
                p.label
            ),
        )),
        (Some((p, gbps)), _) => Some((gbps, format!("memory: the {} datasheet", p.label))),
        (None, Some((computed, how))) => Some((computed, format!("memory: {how}"))),
        (None, None) => None,
    }
}

/// The dense compute per precision, TFLOP/s, and what it was computed from; or why there is
/// none.
fn compute(
    device: &DeviceFacts,
    product: Option<&Product>,
) -> Result<(BTreeMap<String, f64>, String), String> {
    if let Some(p) = product.filter(|p| !p.from_rates) {
        let tflops = (p.datasheet.iter())
            .map(|(precision, tflops)| ((*precision).to_owned(), *tflops))
            .collect();
        return Ok((
            tflops,
            format!("the {} datasheet's figures ({})", p.label, p.source),
        ));
    }
    let cc = device.cc.ok_or("the compute capability is unknown")?;
    let architecture =
        arch::of(cc).ok_or_else(|| format!("unknown architecture (compute capability {cc})"))?;
    let sms = device.multiprocessors.or(product.map(|p| p.sms));
    let clocks = match (product, architecture.tensor_clock) {
        (Some(p), _) => Some((p.boost_mhz, p.tensor_mhz)),
        (None, Some((tensor, boost))) => device.clock_mhz.map(|mhz| {
            (
                mhz,
                (u64::from(mhz) * u64::from(tensor) / u64::from(boost)) as u32,
            )
        }),
        (None, None) => device.clock_mhz.map(|mhz| (mhz, mhz)),
    };
    let (Some(sms), Some((boost, tensor))) = (sms.filter(|n| *n > 0), clocks) else {
        return Err("the driver gave no SM count or clock".into());
    };
    let tflops = (arch::rates_of(architecture, &device.name)
        .each()
        .into_iter())
    .map(|(precision, per_clock)| {
        let mhz = match precision {
            "f64" | "f32" => boost,
            _ => tensor,
        };
        let tflops = f64::from(sms) * f64::from(mhz) * 1e6 * f64::from(per_clock) / 1e12;
        (precision.to_owned(), tflops)
    })
    .collect();
    let clock = match (product, architecture.tensor_clock) {
        (Some(p), _) if p.tensor_mhz != p.boost_mhz => format!(
            "{boost} MHz (CUDA cores) and {tensor} MHz (tensor cores), the clocks of the {} \
             datasheet",
            p.label
        ),
        (Some(p), _) => format!("{boost} MHz, the clock of the {} datasheet", p.label),
        (None, Some((t, b))) => format!(
            "{boost} MHz (CUDA cores) and {tensor} MHz (tensor cores: the maximum scaled as \
             NVIDIA's datasheets of the architecture scale it, {t} of {b} MHz)"
        ),
        (None, None) => format!("{boost} MHz"),
    };
    Ok((
        tflops,
        format!("{}: {sms} SMs at {clock}", architecture.name),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(name: &str, cc: (u32, u32), sms: u32, mhz: u32) -> DeviceFacts {
        DeviceFacts {
            name: name.into(),
            cc: Some(ComputeCapability::new(cc.0, cc.1)),
            multiprocessors: Some(sms),
            clock_mhz: Some(mhz),
            ..DeviceFacts::default()
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn an_unnamed_hopper_card_is_its_sms_times_its_clocks_times_hopper_s_rates() {
        let spec = peaks(&device("a card no table names", (9, 0), 100, 1500));
        assert!(close(spec.tflops["f32"], 38.4), "{spec:?}");
        // The tensor clock as H100 SXM5's datasheet scales it: 1500 x 1830 / 1980 = 1386 MHz,
        // not the maximum, which would put the peak 8% above NVIDIA's basis.
        assert!(close(spec.tflops["bf16"], 567.7056), "{spec:?}");
        assert!(close(spec.tflops["fp8"], 1135.4112), "{spec:?}");
        assert_eq!(spec.missing, None);
        assert!(
            spec.basis.starts_with(
                "Hopper (sm_90): 100 SMs at 1500 MHz (CUDA cores) and 1386 MHz (tensor cores"
            ),
            "{}",
            spec.basis
        );
        // Ampere's datasheets quote one clock: the maximum.
        let a = peaks(&device("an Ampere card no table names", (8, 0), 100, 1500));
        assert!(close(a.tflops["bf16"], 307.2), "{a:?}");
    }

    #[test]
    fn a_cut_down_part_takes_its_datasheet_s_figures_and_no_other() {
        // H20: Hopper's compute capability, a fraction of its tensor rates.
        let h20 = peaks(&device("NVIDIA H20", (9, 0), 78, 1755));
        assert_eq!(h20.tflops.get("bf16"), Some(&148.0), "{h20:?}");
        assert_eq!(h20.tflops.get("fp8"), None, "not found, so none: {h20:?}");
        assert_eq!(h20.memory_gbps, Some(4000.0));
        // Blackwell Ultra and GB10: architectures without published per-SM rates.
        let b300 = peaks(&device("NVIDIA B300 SXM6 AC", (10, 3), 148, 1965));
        assert_eq!(b300.tflops.get("f64"), Some(&1.25), "{b300:?}");
        assert_eq!(b300.memory_gbps, None);
        let gb10 = peaks(&device("NVIDIA GB10", (12, 1), 48, 2418));
        assert_eq!(gb10.tflops.get("f32"), Some(&31.0), "{gb10:?}");
        let unnamed = peaks(&device("an sm_103 card no table names", (10, 3), 148, 1965));
        assert!(unnamed.tflops.is_empty(), "{unnamed:?}");
    }

    #[test]
    fn turing_has_no_tf32_bf16_or_fp8_peak() {
        let t4 = peaks(&device("Tesla T4", (7, 5), 40, 1590));
        assert!((t4.tflops["f16"] - 65.1).abs() < 0.1, "{t4:?}");
        assert!((t4.tflops["f32"] - 8.1).abs() < 0.1, "{t4:?}");
        for none in ["tf32", "bf16", "fp8"] {
            assert!(!t4.tflops.contains_key(none), "{none}: {t4:?}");
        }
    }

    #[test]
    fn every_known_product_reproduces_its_datasheet_from_the_architecture_s_rates() {
        for product in products::PRODUCTS.iter().filter(|p| p.from_rates) {
            let architecture = arch::of(product.cc).expect(product.label);
            let rates = architecture.rates.each();
            for (precision, datasheet) in product.datasheet {
                let per_clock = rates
                    .iter()
                    .find(|(p, _)| p == precision)
                    .map(|(_, r)| f64::from(*r))
                    .unwrap_or_else(|| panic!("{}: no {precision} rate", product.label));
                let mhz = match *precision {
                    "f64" | "f32" => product.boost_mhz,
                    _ => product.tensor_mhz,
                };
                let computed = f64::from(product.sms) * f64::from(mhz) * per_clock / 1e6;
                // Within 2.5%: NVIDIA rounds to whole TFLOP/s (H100 SXM5's FP64 "34" is
                // 33.45), L40S's BF16 362.05 is 1.2% under its own FP8 and TF32 figures' clock,
                // and B200's per-GPU TF32 "2.2 PFLOPS" sparse is 2.25 rounded to two figures.
                let off = (computed / datasheet - 1.0).abs();
                assert!(
                    off < 0.025,
                    "{} {precision}: {computed:.1} computed, {datasheet} on the datasheet",
                    product.label
                );
            }
        }
    }

    #[test]
    fn a_known_product_takes_its_datasheet_s_clocks() {
        let h100 = peaks(&device("NVIDIA H100 80GB HBM3", (9, 0), 132, 1980));
        assert!((h100.tflops["bf16"] - 989.4).abs() < 0.1, "{h100:?}");
        assert!((h100.tflops["f32"] - 66.9).abs() < 0.1, "{h100:?}");
        assert!(h100.basis.contains("H100 SXM5 datasheet"), "{}", h100.basis);
    }

    #[test]
    fn grace_superchips_take_their_own_datasheets() {
        let gh200 = peaks(&device("NVIDIA GH200 480GB", (9, 0), 132, 1980));
        assert_eq!(gh200.memory_gbps, Some(4000.0), "{gh200:?}");
        assert!((gh200.tflops["bf16"] - 989.4).abs() < 0.1, "{gh200:?}");
        assert!(
            gh200.basis.contains("GH200 (96 GB HBM3) datasheet"),
            "{}",
            gh200.basis
        );
        let hbm3e = peaks(&device("NVIDIA GH200 144G HBM3e", (9, 0), 132, 1980));
        assert_eq!(hbm3e.memory_gbps, Some(4900.0), "{hbm3e:?}");
        let gb200 = peaks(&device("NVIDIA GB200", (10, 0), 148, 1965));
        assert_eq!(gb200.memory_gbps, Some(8000.0), "{gb200:?}");
        assert!((gb200.tflops["bf16"] - 2500.0).abs() < 2.0, "{gb200:?}");
        assert!((gb200.tflops["f64"] - 45.0).abs() < 0.1, "{gb200:?}");
    }

    #[test]
    fn an_unknown_architecture_has_no_compute_peak_and_says_so() {
        let spec = peaks(&device("stackbench simulated GPU", (15, 0), 132, 1980));
        assert!(spec.tflops.is_empty());
        assert_eq!(
            spec.missing.as_deref(),
            Some("no theoretical peak: unknown architecture (compute capability 15.0)")
        );
    }

    #[test]
    fn geforce_parts_halve_the_fp32_accumulating_tensor_rates() {
        let rtx4090 = peaks(&device("NVIDIA GeForce RTX 4090", (8, 9), 128, 2520));
        let l40s = peaks(&device("NVIDIA RTX 6000 Ada Generation", (8, 9), 128, 2520));
        assert!((rtx4090.tflops["bf16"] - 165.2).abs() < 0.1, "{rtx4090:?}");
        assert!(close(l40s.tflops["bf16"], 2.0 * rtx4090.tflops["bf16"]));
        assert!(close(l40s.tflops["int8"], rtx4090.tflops["int8"]));
        assert!(close(l40s.tflops["f32"], rtx4090.tflops["f32"]));
    }

    #[test]
    fn memory_bandwidth_is_the_datasheet_s_else_two_transfers_per_clock_across_the_bus() {
        let mut card = device("a card no table names", (9, 0), 132, 1980);
        card.memory_clock_mhz = Some(2619);
        card.memory_bus_bits = Some(5120);
        let spec = peaks(&card);
        assert!((spec.memory_gbps.unwrap() - 3352.3).abs() < 0.1, "{spec:?}");
        // A known product's datasheet, which its clock x bus can exceed: an H200's 4917 GB/s.
        let mut h200 = device("NVIDIA H200", (9, 0), 132, 1980);
        h200.memory_clock_mhz = Some(3201);
        h200.memory_bus_bits = Some(6144);
        let spec = peaks(&h200);
        assert_eq!(spec.memory_gbps, Some(4800.0), "{spec:?}");
        assert!(
            spec.basis.contains("would give 4917 GB/s"),
            "{}",
            spec.basis
        );
        // Without the bus, an unknown card has none.
        card.memory_bus_bits = None;
        assert_eq!(peaks(&card).memory_gbps, None);
    }
}
