// SPDX-License-Identifier: GPL-2.0

//! `kernel::io::register!`: field packing, the fields' `Bounded` types, and the registers'
//! accesses through `Io` on a simulated BAR.

use kernel::{
    io::{
        register,
        register::Register,
        Io, //
    },
    num::Bounded,
    prelude::*,
};
use vdev::SimBar;

/// The size of the simulated BAR the tests access.
const BAR_SIZE: usize = 0x1000;

register! {
    /// A control register with fields of several widths and a gap (bits 23:16).
    CTL(u32) @ 0x100 {
        /// The top byte.
        31:24 tag;
        /// A 12-bit count.
        15:4 count;
        /// Bits 3:1.
        3:1 mode;
        /// One bit.
        0:0 enable;
    }

    /// A register whose single field covers it all, as `NV_PGSP_QUEUE_HEAD`'s.
    WORD(u32) @ 0x104 {
        31:0 value;
    }

    /// A 16-bit register.
    HALF(u16) @ 0x10a {
        15:8 high;
        7:0 low;
    }

    /// An 8-bit register.
    BYTE(u8) @ 0x10c {
        7:4 high;
        3:0 low;
    }

    /// A 64-bit register.
    WIDE(u64) @ 0x200 {
        63:63 top;
        47:16 middle;
    }

    /// A register just past the end of the simulated BAR.
    BEYOND(u32) @ 0x1000 {
        31:0 value;
    }

    /// A doorbell: its writes are what the simulated device observes.
    BELL(u32) @ 0x180 {
        31:0 value;
    }
}

#[test]
fn packs_fields_into_their_bits() {
    let ctl = CTL::zeroed()
        .with_tag(0xabu8)
        .with_const_count::<0x123>()
        .with_mode(Bounded::<u32, 3>::new::<5>())
        .with_enable(true);
    assert_eq!(ctl.into_raw(), 0xab00_123b);
}

#[test]
fn unpacks_fields_from_raw() {
    let ctl = CTL::from_raw(0xab5a_123b);
    assert_eq!(ctl.tag(), 0xab);
    assert_eq!(ctl.count(), 0x123);
    assert_eq!(ctl.mode(), 5);
    assert!(ctl.enable().into_bool());
}

#[test]
fn with_leaves_the_other_bits_alone() {
    let all = CTL::from_raw(u32::MAX);
    assert_eq!(all.with_const_count::<0>().into_raw(), 0xffff_000f);
    assert_eq!(all.with_enable(false).into_raw(), 0xffff_fffe);
    assert_eq!(all.with_mode(Bounded::default()).into_raw(), 0xffff_fff1);
    // The gap (bits 23:16) is kept too.
    assert_eq!(
        CTL::from_raw(0x005a_0000).with_tag(1u8).into_raw(),
        0x015a_0000
    );
}

#[test]
fn full_width_field_is_the_whole_register() {
    let word = WORD::zeroed().with_value(0xdead_beefu32);
    assert_eq!(word.into_raw(), 0xdead_beef);
    assert_eq!(word.value(), 0xdead_beef);
    assert_eq!(WORD::VALUE_MASK, u32::MAX);
}

#[test]
fn narrow_and_wide_storages_pack_alike() {
    assert_eq!(
        HALF::zeroed().with_high(0x12u8).with_low(0x34u8).into_raw(),
        0x1234
    );
    assert_eq!(BYTE::from_raw(0xa5).high(), 0xa);
    assert_eq!(BYTE::from_raw(0xa5).with_const_low::<0>().into_raw(), 0xa0);
    let wide = WIDE::zeroed().with_top(true).with_middle(0xffff_ffffu32);
    assert_eq!(wide.into_raw(), 0x8000_ffff_ffff_0000);
    assert_eq!(wide.middle(), 0xffff_ffff);
    assert!(wide.top().into_bool());
}

#[test]
fn field_constants_describe_the_bits() {
    assert_eq!(CTL::COUNT_MASK, 0x0000_fff0);
    assert_eq!(CTL::COUNT_SHIFT, 4);
    assert_eq!(CTL::COUNT_RANGE, 4..=15);
    assert_eq!(CTL::ENABLE_MASK, 1);
    assert_eq!(CTL::TAG_MASK, 0xff00_0000);
    assert_eq!(WIDE::TOP_MASK, 1 << 63);
}

#[test]
fn const_setter_builds_constants() {
    const VALUE: CTL = CTL::from_raw(0)
        .with_const_mode::<7>()
        .with_const_tag::<0x80>();
    assert_eq!(VALUE.into_raw(), 0x8000_000e);
}

#[test]
fn try_with_refuses_a_value_too_wide_for_the_field() {
    assert_eq!(CTL::zeroed().try_with_mode(8u32), Err(EOVERFLOW));
    assert_eq!(
        CTL::zeroed().try_with_mode(7u32).map(CTL::into_raw),
        Ok(0xe)
    );
}

#[test]
fn try_with_takes_any_integer_type_whose_value_fits() {
    assert_eq!(
        CTL::zeroed().try_with_mode(7i64).map(CTL::into_raw),
        Ok(0xe)
    );
    assert_eq!(
        CTL::zeroed().try_with_tag(0xffu128).map(CTL::into_raw),
        Ok(0xff00_0000)
    );
    assert_eq!(CTL::zeroed().try_with_mode(-1i32), Err(EOVERFLOW));
    assert_eq!(CTL::zeroed().try_with_tag(0x100u16), Err(EOVERFLOW));
}

#[test]
fn getters_return_the_storage_bounded_to_the_field_width() {
    let ctl = CTL::from_raw(0xab00_123b);
    let tag: Bounded<u32, 8> = ctl.tag();
    let count: Bounded<u32, 12> = ctl.count();
    let mode: Bounded<u32, 3> = ctl.mode();
    let enable: Bounded<u32, 1> = ctl.enable();
    assert_eq!(
        (tag.get(), count.get(), mode.get(), enable.get()),
        (0xab, 0x123, 5, 1)
    );
    let value: Bounded<u32, 32> = WORD::from_raw(u32::MAX).value();
    assert_eq!(value, u32::MAX);
    let middle: Bounded<u64, 32> = WIDE::from_raw(u64::MAX).middle();
    assert_eq!(middle, u64::from(u32::MAX));
}

#[test]
fn fields_convert_into_the_narrowest_primitive_that_holds_them() {
    let ctl = CTL::from_raw(0xab00_123b);
    assert_eq!(u8::from(ctl.tag()), 0xab);
    assert_eq!(u16::from(ctl.count()), 0x123);
    assert_eq!(u8::from(ctl.mode()), 5);
    assert!(bool::from(ctl.enable()));
    assert_eq!(u32::from(WIDE::from_raw(u64::MAX).middle()), u32::MAX);
}

#[test]
fn with_takes_a_bounded_of_the_field_width_and_a_narrower_one_extended() {
    let count = Bounded::<u32, 12>::new::<0xfff>();
    assert_eq!(CTL::zeroed().with_count(count).into_raw(), 0xfff0);
    // A narrower `Bounded`, as a getter of a narrower field returns it, is extended.
    let tag = CTL::from_raw(0xab00_0000).tag();
    assert_eq!(CTL::zeroed().with_count(tag.extend()).into_raw(), 0xab0);
}

#[test]
fn with_takes_a_bool_for_a_field_of_any_width() {
    assert_eq!(CTL::zeroed().with_mode(true).into_raw(), 0x2);
    assert_eq!(
        CTL::from_raw(u32::MAX).with_count(false).into_raw(),
        0xffff_000f
    );
    assert_eq!(BYTE::zeroed().with_high(true).into_raw(), 0x10);
}

#[test]
fn with_takes_a_field_read_from_another_value() {
    let from = CTL::from_raw(0xab00_123b);
    let to = CTL::zeroed()
        .with_tag(from.tag())
        .with_count(from.count())
        .with_mode(from.mode())
        .with_enable(from.enable());
    assert_eq!(to, from);
}

#[test]
fn zeroed_is_the_value_with_every_bit_clear() {
    assert_eq!(CTL::zeroed().into_raw(), 0);
    assert_eq!(<WIDE as Zeroable>::zeroed(), WIDE::from_raw(0));
    assert_eq!(BYTE::zeroed().into_raw(), 0);
}

#[test]
fn converts_to_and_from_its_storage() {
    assert_eq!(u32::from(CTL::from(0x1234u32)), 0x1234);
    assert_eq!(CTL::default(), CTL::zeroed());
    assert_eq!(<CTL as Register>::OFFSET, 0x100);
    assert_eq!(HALF::OFFSET, 0x10a);
}

#[test]
fn debug_shows_raw_value_and_fields() {
    assert_eq!(
        format!("{:?}", CTL::from_raw(0xab00_123b)),
        "CTL { <raw>: 0xab00123b, tag: 0xab, count: 0x123, mode: 0x5, enable: 0x1 }"
    );
}

#[test]
fn write_reg_lands_the_raw_value_at_the_offset() {
    let bar = SimBar::<BAR_SIZE>::new(&[]).unwrap();
    let io = *bar.io();
    io.write_reg(CTL::zeroed().with_tag(0x11u8).with_enable(true));
    assert_eq!(io.read32(0x100), 0x1100_0001);
    assert_eq!(io.read32(0xfc), 0);
    assert_eq!(io.read32(0x104), 0);
}

#[test]
fn read_returns_what_was_written() {
    let bar = SimBar::<BAR_SIZE>::new(&[]).unwrap();
    let io = *bar.io();
    io.write32(0xab00_1235, 0x100);
    let ctl = io.read(CTL);
    assert_eq!(ctl.into_raw(), 0xab00_1235);
    assert_eq!(ctl.count(), 0x123);

    io.write_reg(HALF::zeroed().with_high(0x12u8).with_low(0x34u8));
    assert_eq!(io.read16(0x10a), 0x1234);
    assert_eq!(io.read(HALF).high(), 0x12);
    io.write_reg(BYTE::zeroed().with_const_high::<0xc>());
    assert_eq!(io.read8(0x10c), 0xc0);
    assert_eq!(io.read(BYTE).high(), 0xc);
}

#[test]
fn update_changes_one_field_and_keeps_the_rest() {
    let bar = SimBar::<BAR_SIZE>::new(&[]).unwrap();
    let io = *bar.io();
    io.write32(0xab5a_1235, 0x100);
    io.update(CTL, |r| r.with_const_count::<0xfff>().with_enable(false));
    assert_eq!(io.read32(0x100), 0xab5a_fff4);
    assert_eq!(io.try_update(CTL, |r| r.with_tag(0u8)), Ok(()));
    assert_eq!(io.read32(0x100), 0x005a_fff4);
}

#[test]
fn write_with_a_register_location() {
    let bar = SimBar::<BAR_SIZE>::new(&[]).unwrap();
    let io = *bar.io();
    io.write(CTL, CTL::zeroed().with_const_mode::<1>());
    assert_eq!(io.read32(0x100), 0x2);
    io.write((), CTL::zeroed().with_const_mode::<2>());
    assert_eq!(io.read32(0x100), 0x4);
    assert_eq!(
        io.try_read(CTL).map(CTL::mode),
        Ok(Bounded::<u32, 3>::new::<2>())
    );
}

#[test]
fn write_reg_is_seen_by_the_device() {
    let bar = SimBar::<BAR_SIZE>::new(&[<BELL as Register>::OFFSET]).unwrap();
    let io = *bar.io();
    assert_eq!(bar.doorbell_count(), 0);
    io.write_reg(BELL::zeroed().with_value(0u32));
    assert_eq!(bar.doorbell_count(), 1);
    io.write_reg(CTL::zeroed());
    assert_eq!(bar.doorbell_count(), 1);
}

#[test]
fn try_write_reg_refuses_a_register_beyond_the_region() {
    let bar = SimBar::<BAR_SIZE>::new(&[]).unwrap();
    let io = *bar.io();
    assert_eq!(io.try_write_reg(BEYOND::zeroed()), Err(EINVAL));
    assert_eq!(io.try_read(BEYOND).map(BEYOND::into_raw), Err(EINVAL));
    assert_eq!(io.try_write_reg(WORD::zeroed().with_value(7u32)), Ok(()));
    assert_eq!(io.read32(0x104), 7);
}

#[test]
#[should_panic(expected = "outside the region")]
fn read_beyond_the_region_panics() {
    let bar = SimBar::<BAR_SIZE>::new(&[]).unwrap();
    let _ = bar.io().read(BEYOND);
}

#[test]
#[should_panic(expected = "outside the region")]
fn write_reg_beyond_the_region_panics() {
    let bar = SimBar::<BAR_SIZE>::new(&[]).unwrap();
    bar.io().write_reg(BEYOND::zeroed());
}
