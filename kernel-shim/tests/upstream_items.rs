// SPDX-License-Identifier: GPL-2.0

//! Items of Linux 7.3's `kernel` crate that upstream nova-core's message-queue files use,
//! added for building them against this crate: the prelude's `init!` and `pin_init!` with
//! a type named by a path, `#[derive(Zeroable)]` on tuple structs and unions, errors as
//! patterns, `bitfield!`, `sizes`, `sync::aref` on devices, `pci::Device`, `ffi`.

use kernel::{
    bitfield,
    device::{
        Bound,
        Device, //
    },
    ffi::{
        c_char,
        c_ulong,
        c_ulonglong, //
    },
    pci,
    prelude::*,
    sizes::{
        SizeConstants,
        SZ_128K,
        SZ_4K, //
    },
    sync::aref::ARef,
};

mod bindings {
    /// A C struct in a module of its own, as bindgen makes them.
    #[derive(Debug, Default, PartialEq)]
    #[repr(C)]
    pub struct Window {
        pub base: u64,
        pub len: u64,
        pub flags: u32,
    }

    // SAFETY: integers only.
    unsafe impl kernel::prelude::Zeroable for Window {}
}

#[derive(Zeroable)]
struct Header([u8; 16], u32);

#[derive(Zeroable)]
struct Wrapper<T>(T);

#[derive(Zeroable)]
struct Named<'a, T: Copy, const N: usize> {
    items: [T; N],
    name: Option<&'a u8>,
}

#[derive(Zeroable)]
struct Unit;

#[derive(Zeroable)]
#[allow(dead_code)]
union Either {
    word: u32,
    bytes: [u8; 4],
}

fn is_zeroable<T: Zeroable>() {}

#[test]
fn zeroable_derives_for_tuple_named_unit_and_union() {
    is_zeroable::<Header>();
    is_zeroable::<Wrapper<u64>>();
    is_zeroable::<Named<'static, u16, 3>>();
    is_zeroable::<Unit>();
    is_zeroable::<Either>();

    let h = Header::zeroed();
    assert_eq!((h.0, h.1), ([0; 16], 0));
    let n = Named::<u16, 3>::zeroed();
    assert_eq!((n.items, n.name), ([0; 3], None));
    // SAFETY: a zeroed union's `word` is zero.
    assert_eq!(unsafe { Either::zeroed().word }, 0);
}

#[test]
fn init_takes_a_type_by_path() {
    let w = KBox::init(
        init!(bindings::Window {
            base: 0x1000,
            len: 0x200,
            flags: 1,
        }),
        GFP_KERNEL,
    )
    .unwrap();
    assert_eq!((w.base, w.len, w.flags), (0x1000, 0x200, 1));
}

#[test]
fn init_by_path_zeroes_the_fields_left_out() {
    let w = KBox::init(
        init!(bindings::Window {
            len: 7,
            ..Zeroable::init_zeroed()
        }),
        GFP_KERNEL,
    )
    .unwrap();
    assert_eq!(
        *w,
        bindings::Window {
            base: 0,
            len: 7,
            flags: 0
        }
    );
}

#[test]
fn try_init_by_path_defaults_its_error_to_error() {
    fn window(len: u64) -> impl Init<bindings::Window, Error> {
        try_init!(bindings::Window {
            base: 0,
            len: if len > 0 { len } else { return Err(EINVAL) },
            flags: 0,
        })
    }
    assert!(KBox::init(window(1), GFP_KERNEL).is_ok());
    assert_eq!(KBox::init(window(0), GFP_KERNEL).err(), Some(EINVAL));
}

#[test]
fn init_takes_an_error_after_the_brace() {
    fn window(base: u64) -> impl Init<bindings::Window, Error> {
        init!(bindings::Window {
            base: u64::from(u32::try_from(base)?),
            len: 0,
            flags: 0,
        }? Error)
    }
    assert_eq!(KBox::init(window(5), GFP_KERNEL).unwrap().base, 5);
    assert_eq!(KBox::init(window(1 << 40), GFP_KERNEL).err(), Some(EINVAL));
}

#[pin_data]
struct Pinned {
    a: u32,
}

mod nested {
    pub(crate) use super::Pinned as Alias;
}

#[test]
fn pin_init_takes_a_type_by_path() {
    let p = KBox::pin_init(pin_init!(nested::Alias { a: 3 }), GFP_KERNEL).unwrap();
    assert_eq!(p.a, 3);
}

#[test]
fn error_codes_are_patterns() {
    fn classify(r: Result) -> &'static str {
        match r {
            Ok(()) => "ok",
            Err(ERANGE) => "range",
            Err(EIO) => "io",
            Err(_) => "other",
        }
    }
    assert_eq!(classify(Err(ERANGE)), "range");
    assert_eq!(classify(Err(EIO)), "io");
    assert_eq!(classify(Err(EINVAL)), "other");
    assert_eq!(classify(Ok(())), "ok");
}

#[test]
fn failed_integer_conversion_is_einval() {
    fn narrow(v: usize) -> Result<u32> {
        Ok(u32::try_from(v)?)
    }
    assert_eq!(narrow(1 << 40), Err(EINVAL));
    assert_eq!(narrow(7), Ok(7));
}

#[test]
fn etoosmall_is_errno_525_with_its_name() {
    assert_eq!(ETOOSMALL.to_errno(), -525);
    assert_eq!(ETOOSMALL.name(), Some(c"ETOOSMALL"));
    assert_eq!(Error::from_errno(-525), ETOOSMALL);
    // An errno this crate does not name keeps its value, without a name.
    assert_eq!(Error::from_errno(-300).name(), None);
    assert_eq!(Error::from_errno(-300).to_errno(), -300);
}

bitfield! {
    struct Version(u32) {
        31:24 major;
        23:16 minor;
        0:0 valid;
    }
}

#[test]
fn bitfield_fields_round_trip_and_keep_other_bits() {
    let v = Version::from_raw(0x0000_ff00)
        .with_major(3u8)
        .with_minor(1u8);
    assert_eq!(v.into_raw(), 0x0301_ff00);
    assert_eq!(v.major(), 3);
    assert_eq!(v.minor(), 1);
    assert!(!v.valid().into_bool());
    assert_eq!(v.with_const_valid::<1>().into_raw(), 0x0301_ff01);
    assert_eq!(u32::from(Version::from(7u32)), 7);
    assert_eq!(Version::MAJOR_SHIFT, 24);
    assert_eq!(Version::MINOR_RANGE, 16..=23);
}

#[test]
fn bitfield_refuses_a_value_too_wide_for_its_field() {
    assert_eq!(Version::zeroed().try_with_major(0x100u32), Err(EOVERFLOW));
    assert_eq!(
        Version::zeroed()
            .try_with_major(0xffu32)
            .map(Version::into_raw),
        Ok(0xff00_0000)
    );
}

#[test]
fn sizes_are_the_same_in_each_type() {
    assert_eq!(SZ_4K, 4096);
    assert_eq!(SZ_128K, 128 << 10);
    assert_eq!(u64::SZ_1G, 1 << 30);
    assert_eq!(u32::SZ_2G, 1 << 31);
    assert_eq!(usize::SZ_16M, kernel::sizes::SZ_16M);
}

#[test]
fn aref_of_a_bound_device_derefs_to_it() {
    static DEV: Device<Bound> = Device::new("aref-test");
    let a: ARef<Device> = (&DEV).into();
    let b = a.clone();
    assert_eq!(b.name(), "aref-test");
    assert!(core::ptr::eq(&*a, &*DEV));
    drop((a, b));
    // `dev_*!` take an `ARef<Device>` by reference, as 7.3's.
    let a: ARef<Device> = (&DEV).into();
    dev_dbg!(&a, "through an ARef\n");
}

#[test]
fn pci_device_reports_its_ids_and_resources() {
    static GPU: pci::Device<Bound> = pci::Device::new(
        Device::new("pci-test"),
        pci::Config {
            vendor_id: 0x10de,
            device_id: 0x1eb8,
            subsystem_vendor_id: 0x10de,
            subsystem_device_id: 0x12a2,
            revision_id: 0xa1,
            bus: 0x3b,
            devfn: 0x08,
            resources: [
                (0xf000_0000, 0x100_0000),
                (0xe000_0000, 0x1000_0000),
                (0, 0),
                (0xd000_0000, 0x200_0000),
                (0, 0),
                (0, 0),
                (0, 0),
            ],
        },
    );
    assert_eq!(GPU.vendor_id(), pci::Vendor::NVIDIA);
    // As in a kernel: `{}` through `fmt!`, for the kernel's `Display`.
    assert_eq!(
        kernel::macros::fmt!("{}", GPU.vendor_id()).to_string(),
        "NVIDIA"
    );
    assert_eq!(std::format!("{:?}", GPU.vendor_id()), "0x10de");
    assert_eq!((GPU.device_id(), GPU.revision_id()), (0x1eb8, 0xa1));
    assert_eq!(
        (GPU.subsystem_vendor_id(), GPU.subsystem_device_id()),
        (0x10de, 0x12a2)
    );
    assert_eq!(GPU.dev_id(), 0x3b08);
    assert_eq!(GPU.resource_start(3), Ok(0xd000_0000));
    assert_eq!(GPU.resource_len(0), Ok(0x100_0000));
    assert_eq!(GPU.resource_start(pci::PCI_NUM_RESOURCES - 1), Ok(0));
    assert_eq!(GPU.resource_start(pci::PCI_NUM_RESOURCES), Err(EINVAL));
    // A `&pci::Device<Bound>` derefs to a `&pci::Device` and is a `device::Device`.
    let normal: &pci::Device = &GPU;
    assert_eq!(normal.device_id(), 0x1eb8);
    let dev: &Device<Bound> = GPU.as_ref();
    assert_eq!(dev.name(), "pci-test");
}

#[test]
fn ffi_char_is_unsigned_and_long_is_pointer_sized() {
    let c: c_char = 0xff;
    assert_eq!(u32::from(c), 255);
    assert_eq!(size_of::<c_ulong>(), size_of::<usize>());
    assert_eq!(size_of::<c_ulonglong>(), 8);
}

#[test]
fn kvvec_from_elem_and_slices() {
    let mut v = KVVec::from_elem(0u8, 4, GFP_KERNEL).unwrap();
    v.as_mut_slice()[2] = 9;
    assert_eq!(v.as_slice(), &[0, 0, 9, 0]);
    v.extend_with(2, 1, GFP_KERNEL).unwrap();
    assert_eq!(v, [0, 0, 9, 0, 1, 1]);
}

#[test]
fn build_assert_passes_a_true_condition() {
    #[inline(always)]
    fn half(n: usize) -> usize {
        build_assert!(n.is_multiple_of(2));
        n / 2
    }
    static_assert!(SZ_4K == 1 << 12);
    assert_eq!(half(8), 4);
}

#[test]
#[should_panic(expected = "assertion failed: n.is_multiple_of(2)")]
fn build_assert_panics_when_a_false_condition_runs() {
    #[inline(always)]
    fn half(n: usize) -> usize {
        build_assert!(n.is_multiple_of(2));
        n / 2
    }
    let _ = half(core::hint::black_box(7));
}
