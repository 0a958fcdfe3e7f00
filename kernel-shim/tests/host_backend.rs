// SPDX-License-Identifier: GPL-2.0

//! The host backend of the shim: errors, time, polling, MMIO, DMA views, barriers, the
//! KTAP runner.

use std::sync::atomic::{
    AtomicUsize,
    Ordering, //
};

use kernel::{
    dma::DmaView,
    error::Error,
    io::{
        poll::read_poll_timeout,
        Io, //
    },
    kunit::{
        Case,
        Status,
        Suite, //
    },
    prelude::*,
    sync::atomic::{
        ordering::OrderingType,
        Acquire,
        Atomic,
        Relaxed,
        Release, //
    },
    sync::barrier::{
        dma_mb,
        mb,
        smp_mb,
        Full,
        Read,
        Write,
        DMA_INSTRUCTIONS,
        FLAVOURS, //
    },
    time::{
        Delta,
        Instant,
        Jiffy,
        Monotonic, //
    },
};
use vdev::{
    run_beside,
    SimBar, //
};

#[test]
fn errors_carry_real_errno_values() {
    assert_eq!(EIO.to_errno(), -5);
    assert_eq!(EINVAL.to_errno(), -22);
    assert_eq!(ERANGE.to_errno(), -34);
    assert_eq!(EMSGSIZE.to_errno(), -90);
    assert_eq!(ETIMEDOUT.to_errno(), -110);
    assert_eq!(Error::from_errno(-110), ETIMEDOUT);
    assert_eq!(Error::from_errno(-110).name(), Some(c"ETIMEDOUT"));
    assert_eq!(Error::from_errno(5), EINVAL);
    assert_eq!(Error::from_errno(-4000).to_errno(), -4000);
    assert_eq!(std::format!("{:?}", EIO), "EIO");
}

/// The instructions `dma_mb` emits, by flavour, are the kernel's for this architecture
/// (the table in `kernel::sync::barrier`'s documentation). The constants are the very
/// strings its `asm!` blocks are built from.
#[test]
fn dma_mb_emits_the_kernels_instructions() {
    #[cfg(target_arch = "x86_64")]
    let kernels = ["mfence", "", ""];
    #[cfg(target_arch = "aarch64")]
    let kernels = ["dmb osh", "dmb oshld", "dmb oshst"];
    assert_eq!(FLAVOURS, ["Full", "Read", "Write"]);
    assert_eq!(DMA_INSTRUCTIONS, kernels);
}

/// Executes every barrier of every flavour once. What it checks: that each instruction
/// exists on this CPU and assembles as written (a wrong one ends the test with `SIGILL`,
/// under `qemu-aarch64` too). It cannot check what the barriers order: nothing around
/// them needs ordering. With the shim's feature `dma-mb-stats` (`cargo test -p
/// kernel-shim --features dma-mb-stats`) it also checks that each `dma_mb` is counted
/// once, under the flavour asked; `smp_mb` and `mb` are not counted.
#[test]
fn every_barrier_flavour_executes() {
    #[cfg(feature = "dma-mb-stats")]
    let before = kernel::sync::barrier::stats::snapshot();
    // ORDERING: none. The call is exercised, not relied on: no access around it needs
    // ordering. The same holds for each barrier below.
    dma_mb(Full);
    // ORDERING: none; exercised, not relied on.
    dma_mb(Read);
    // ORDERING: none; exercised, not relied on.
    dma_mb(Write);
    // ORDERING: none; exercised, not relied on.
    smp_mb(Full);
    // ORDERING: none; exercised, not relied on.
    smp_mb(Read);
    // ORDERING: none; exercised, not relied on.
    smp_mb(Write);
    // ORDERING: none; exercised, not relied on.
    mb(Full);
    // ORDERING: none; exercised, not relied on.
    mb(Read);
    // ORDERING: none; exercised, not relied on.
    mb(Write);
    #[cfg(feature = "dma-mb-stats")]
    {
        // No other test of this binary calls `dma_mb` (the `Io` accesses of the others
        // count under `io`), so these counts are this test's alone.
        let ran = kernel::sync::barrier::stats::snapshot().since(&before);
        assert_eq!(ran.asked, [1, 1, 1]);
    }
}

#[test]
fn poll_times_out_with_etimedout_after_the_timeout() {
    let start = Instant::<Monotonic>::now();
    let r = read_poll_timeout(
        || Ok(0u32),
        |&v| v == 1,
        Delta::from_micros(100),
        Delta::from_millis(20),
    );
    assert_eq!(r, Err(ETIMEDOUT));
    assert!(start.elapsed() >= Delta::from_millis(20));
}

#[test]
fn poll_returns_the_first_accepted_value_and_op_errors_at_once() {
    let calls = AtomicUsize::new(0);
    let r = read_poll_timeout(
        || Ok(calls.fetch_add(1, Ordering::Relaxed)),
        |&v| v == 3,
        Delta::ZERO,
        Delta::from_secs(1),
    );
    assert_eq!(r, Ok(3));
    let r: Result<u32> = read_poll_timeout(|| Err(EIO), |_| true, Delta::ZERO, Delta::from_secs(1));
    assert_eq!(r, Err(EIO));
}

#[test]
fn delta_converts_units() {
    assert_eq!(Delta::from_millis(3).as_nanos(), 3_000_000);
    assert_eq!(Delta::from_nanos(1001).as_micros_ceil(), 2);
    assert_eq!(Delta::from_secs(i64::MAX).as_nanos(), i64::MAX);
    assert!(Delta::ZERO.is_zero());
}

#[test]
fn delta_rounds_up_without_overflow_and_negative_spans_towards_zero() {
    assert_eq!(
        Delta::from_nanos(i64::MAX).as_micros_ceil(),
        i64::MAX / 1_000 + 1
    );
    assert_eq!(Delta::from_nanos(1_000_001).as_millis_ceil(), 2);
    assert_eq!(Delta::from_nanos(-1_500).as_micros_ceil(), -1);
    assert_eq!(Delta::from_nanos(-1_500_000).as_millis(), -1);
}

#[test]
fn delta_arithmetic_counts_nanoseconds() {
    let mut d = Delta::from_micros(3) + Delta::from_nanos(500) - Delta::from_nanos(100);
    assert_eq!(d.as_nanos(), 3_400);
    d *= 2;
    d -= Delta::from_nanos(800);
    d += Delta::from_micros(1);
    assert_eq!(d, Delta::from_micros(7));
    assert_eq!(Delta::from_millis(7) / Delta::from_micros(2), 3_500);
    assert_eq!(
        Delta::from_nanos(-1_234).rem_nanos(1_000),
        Delta::from_nanos(-234)
    );
}

#[test]
fn jiffies_are_a_delta_of_their_own() {
    let j = Delta::<Jiffy>::from_jiffies(-25);
    assert_eq!(j.as_jiffies(), -25);
}

#[test]
fn sim_bar_doorbell_counts_and_wakes() {
    let bar = SimBar::<0x1000>::new(&[0x100]).unwrap();
    bar.io().write32(5, 0x200);
    assert_eq!(bar.doorbell_count(), 0);
    assert_eq!(bar.io().read32(0x200), 5);
    let woke = std::sync::atomic::AtomicU64::new(0);
    let (device, ()) = run_beside(
        || {
            let count = bar.wait_doorbell(0, Delta::from_secs(5));
            woke.store(count, std::sync::atomic::Ordering::Relaxed);
            Ok(())
        },
        || bar.io().write32(0, 0x100),
    );
    assert_eq!(device, Ok(()));
    assert_eq!(woke.into_inner(), 1);
    assert_eq!(bar.wait_doorbell(0, Delta::from_millis(1)), 1);
    assert_eq!(bar.io().try_read32(0x1000), Err(EINVAL));
    assert_eq!(bar.io().try_write32(0, 0x102), Err(EINVAL));
}

#[test]
fn dma_view_rejects_accesses_outside_or_unaligned() {
    let mut mem = std::vec![0u64; 4];
    // SAFETY: `mem` is 32 bytes, 8-byte aligned, and outlives the view.
    let view = unsafe { DmaView::from_raw_parts(mem.as_mut_ptr().cast(), 32) };
    view.write32(28, 0xdead_beef).unwrap();
    assert_eq!(view.read32(28), Ok(0xdead_beef));
    assert_eq!(view.read32(30), Err(EINVAL));
    assert_eq!(view.read32(32), Err(EINVAL));
    assert_eq!(view.write_bytes(30, &[0; 3]), Err(EINVAL));
    assert_eq!(view.read_bytes(usize::MAX, &mut [0; 2]), Err(EINVAL));
    assert_eq!(mem[3], 0xdead_beef_u64 << 32);
}

#[test]
fn atomic_read_modify_writes_return_the_value_before_and_wrap() {
    // ORDERING: none relied on. One thread; each ordering is exercised for the value the
    // operation returns. The same holds for every atomic test below.
    let a = Atomic::new(u64::MAX - 1);
    assert_eq!(a.fetch_add(3u64, Full), u64::MAX - 1);
    assert_eq!(a.load(Acquire), 1);
    assert_eq!(a.fetch_sub(2u64, Release), 1);
    assert_eq!(a.load(Relaxed), u64::MAX);
    a.add(1u64, Relaxed);
    assert_eq!(a.xchg(7, Acquire), 0);
    a.store(9, Release);
    let b = Atomic::new(-1i32);
    assert_eq!(b.fetch_add(1, Relaxed), -1);
    assert_eq!(std::format!("{:?} {:?}", a, b), "9 0");
}

#[test]
fn atomic_cmpxchg_replaces_only_the_expected_value() {
    let a = Atomic::new(5u32);
    assert_eq!(a.cmpxchg(4, 6, Full), Err(5));
    assert_eq!(a.load(Relaxed), 5);
    assert_eq!(a.cmpxchg(5, 6, Relaxed), Ok(5));
    assert_eq!(a.load(Relaxed), 6);
}

/// Not under the model, whose atomics are loom objects rather than memory.
#[cfg(not(loom))]
#[test]
fn atomic_views_plain_memory_in_place() {
    let mut word = 3usize;
    // SAFETY: `word` is aligned, outlives `a`, and is accessed only through `a` meanwhile.
    let a = unsafe { Atomic::from_ptr(&raw mut word) };
    assert_eq!(a.fetch_add(2, Relaxed), 3);
    assert_eq!(a.as_ptr().cast_const(), (&raw const word).cast());
    assert_eq!(word, 5);
    let mut own = Atomic::new(1i64);
    *own.get_mut() = -4;
    assert_eq!(own.load(Relaxed), -4);
    assert_eq!(core::mem::size_of::<Atomic<u64>>(), 8);
    assert_eq!(core::mem::align_of::<Atomic<u64>>(), 8);
}

#[test]
fn dma_view_atomic_u64_is_the_word_in_memory() {
    let mut mem = std::vec![0u64; 2];
    // SAFETY: `mem` is 16 bytes, 8-byte aligned, and outlives the view.
    let view = unsafe { DmaView::from_raw_parts(mem.as_mut_ptr().cast(), 16) };
    view.atomic_u64(8).unwrap().store(0x1234, Release);
    assert_eq!(view.read32(8), Ok(0x1234));
    assert_eq!(view.atomic_u64(4).map(|_| ()), Err(EINVAL));
    assert_eq!(view.atomic_u64(16).map(|_| ()), Err(EINVAL));
    assert_eq!(mem[1], 0x1234);
}

/// The barrier flavour `Full` is the atomics' fully ordered ordering: one type under both
/// paths, as in 7.3. (No barrier runs here: `every_barrier_flavour_executes` counts them.)
#[test]
fn barrier_full_is_the_atomic_ordering_full() {
    fn flavour_and_ordering<T>(_: T) -> OrderingType
    where
        T: kernel::sync::barrier::MemoryBarrier + kernel::sync::atomic::ordering::Ordering,
    {
        T::TYPE
    }
    let full: kernel::sync::atomic::ordering::Full = kernel::sync::barrier::ordering::Full;
    assert_eq!(flavour_and_ordering(full), OrderingType::Full);
    assert_eq!(flavour_and_ordering(Full), OrderingType::Full);
    assert_eq!(Atomic::new(1u64).xchg(2, full), 1);
}

fn passes() {}

fn fails_assertion() {
    assert_eq!(1 + 1, 3, "arithmetic");
}

fn fails_with_errno() -> Result {
    Err(ETIMEDOUT)
}

static MIXED: Suite = Suite {
    name: "mixed",
    cases: &[
        Case {
            name: "passes",
            run: || {
                passes();
                Status::Success
            },
        },
        Case {
            name: "fails_assertion",
            run: || {
                fails_assertion();
                Status::Success
            },
        },
        Case {
            name: "fails_with_errno",
            // What `#[kunit_tests]` makes of a case returning `Result`.
            run: || kernel::__kunit_case!(fails_with_errno),
        },
    ],
};

#[test]
fn ktap_runner_reports_failures_with_diagnostics() {
    let mut out = std::vec::Vec::new();
    let totals = kernel::host::kunit::run(&[&MIXED], &mut out).unwrap();
    assert_eq!((totals.passed, totals.failed), (1, 2));
    let text = std::string::String::from_utf8(out).unwrap();
    let lines: std::vec::Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "KTAP version 1");
    assert_eq!(lines[1], "1..1");
    assert_eq!(lines[3], "    # Subtest: mixed");
    assert_eq!(lines[4], "    1..3");
    assert_eq!(lines[5], "    ok 1 passes");
    assert!(lines[6].starts_with("    # fails_assertion: ASSERTION FAILED at "));
    assert!(lines[6].contains("arithmetic"));
    let not_ok_2 = lines
        .iter()
        .position(|l| *l == "    not ok 2 fails_assertion")
        .unwrap();
    assert!(lines[6..not_ok_2]
        .iter()
        .all(|l| l.starts_with("    # fails_assertion: ")));
    assert!(lines[not_ok_2 + 1].starts_with("    # fails_with_errno: ASSERTION FAILED at "));
    assert!(lines[not_ok_2 + 1]
        .ends_with(": Expected is_test_result_ok(fails_with_errno()) to be true, but is false"));
    assert_eq!(
        lines[not_ok_2 + 2],
        "    # fails_with_errno:     fails_with_errno() == Err(ETIMEDOUT)"
    );
    assert_eq!(lines[not_ok_2 + 3], "    not ok 3 fails_with_errno");
    assert_eq!(lines[not_ok_2 + 4], "not ok 1 mixed");
    assert_eq!(lines.len(), not_ok_2 + 5);
}
