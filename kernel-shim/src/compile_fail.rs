// SPDX-License-Identifier: GPL-2.0

//! What must not build: each item's example fails to compile with the error code it names,
//! and a twin that builds sits in the docs or tests of the item it exercises
//! (`num/bounded.rs`, `tests/num.rs`, `io/register.rs`, `tests/register.rs`,
//! `alloc/kvec.rs`, `tests/alloc.rs`, `tests/upstream_items.rs`).
//!
//! Host only (`cfg(doctest)`): gathered here, so the items' own docs keep examples that
//! build.

/// A constant wider than its bits.
///
/// ```compile_fail,E0080
/// let _ = kernel::num::Bounded::<u8, 4>::new::<16>();
/// ```
pub struct ConstantTooWide;

/// A signed constant beyond its bits.
///
/// ```compile_fail,E0080
/// let _ = kernel::num::Bounded::<i8, 4>::new::<8>();
/// ```
pub struct SignedConstantTooWide;

/// More bits than the backing type has.
///
/// ```compile_fail,E0080
/// let _ = kernel::num::Bounded::<u8, 9>::new::<1>();
/// ```
pub struct WidthBeyondBackingType;

/// No bits at all.
///
/// ```compile_fail,E0080
/// let _ = kernel::num::Bounded::<u32, 0>::try_new(0);
/// ```
pub struct ZeroWidth;

/// A primitive into fewer bits than it has, whatever its value.
///
/// ```compile_fail,E0277
/// let _ = kernel::num::Bounded::<u32, 7>::from(1u8);
/// ```
pub struct PrimitiveIntoFewerBits;

/// A primitive into a `Bounded` of the other signedness.
///
/// ```compile_fail,E0277
/// let _ = kernel::num::Bounded::<u32, 32>::from(1i8);
/// ```
pub struct PrimitiveOfOtherSignedness;

/// More bits into a narrower primitive, whatever the value.
///
/// ```compile_fail,E0277
/// let _ = u8::from(kernel::num::Bounded::<u32, 9>::new::<1>());
/// ```
pub struct BoundedIntoNarrowerPrimitive;

/// A `bool` into a signed `Bounded`.
///
/// No error code: rustc 1.95 reports the missing `From<bool>` (E0277), Debian's 1.96,
/// which the aarch64 tier runs the doctests with, a type mismatch (E0308).
///
/// ```compile_fail
/// let _ = kernel::num::Bounded::<i8, 2>::from(true);
/// ```
pub struct BoolIntoSigned;

/// Two bits into a `bool`.
///
/// ```compile_fail,E0599
/// let _ = kernel::num::Bounded::<u8, 2>::new::<1>().into_bool();
/// ```
pub struct TwoBitsIntoBool;

/// `extend` to fewer bits.
///
/// ```compile_fail,E0080
/// let _ = kernel::num::Bounded::<u32, 4>::new::<1>().extend::<3>();
/// ```
pub struct ExtendToFewerBits;

/// `cast` to a type narrower than the bits.
///
/// ```compile_fail,E0080
/// let _: kernel::num::Bounded<u8, 12> = kernel::num::Bounded::<u32, 12>::new::<1>().cast();
/// ```
pub struct CastToNarrowerType;

/// `shr` into too few bits.
///
/// ```compile_fail,E0080
/// let _ = kernel::num::Bounded::<u32, 16>::new::<1>().shr::<4, 11>();
/// ```
pub struct ShrIntoTooFewBits;

/// A register's field given a primitive wider than the field.
///
/// ```compile_fail,E0277
/// kernel::io::register! {
///     REG(u32) @ 0x0 {
///         15:4 count;
///     }
/// }
/// let _ = REG::from_raw(0).with_count(1u16);
/// ```
pub struct FieldGivenWiderPrimitive;

/// A register's field given a narrower `Bounded` without `extend`.
///
/// ```compile_fail,E0277
/// kernel::io::register! {
///     REG(u32) @ 0x0 {
///         15:4 count;
///     }
/// }
/// let _ = REG::from_raw(0).with_count(kernel::num::Bounded::<u32, 8>::new::<1>());
/// ```
pub struct FieldGivenNarrowerBounded;

/// A register's field given a constant wider than the field.
///
/// ```compile_fail,E0080
/// kernel::io::register! {
///     REG(u32) @ 0x0 {
///         3:1 mode;
///     }
/// }
/// let _ = REG::from_raw(0).with_const_mode::<8>();
/// ```
pub struct FieldGivenWiderConstant;

/// `zeroed()` without `Zeroable` in scope: it is the trait's, not the register's.
///
/// ```compile_fail,E0599
/// kernel::io::register! {
///     REG(u32) @ 0x0 {
///         3:1 mode;
///     }
/// }
/// let _ = REG::zeroed();
/// ```
pub struct ZeroedOutOfScope;

/// A 64-bit access at a build-time offset of a `Region`, which is only known to be 4-byte
/// aligned (the checked `try_read64` builds; `tests/io_dma.rs`).
///
/// ```compile_fail,E0080
/// use kernel::io::{Io, Mmio, MmioRaw, Region};
///
/// fn read(mmio: Mmio<'_, Region<16>>) -> u64 {
///     mmio.read64(8)
/// }
/// let mut words = [0u64; 2];
/// let raw = Region::<16>::ptr_try_from_raw_parts_mut(words.as_mut_ptr().cast(), 16).unwrap();
/// // SAFETY: `words` is valid for the region's 16 bytes and not otherwise used.
/// let mmio = unsafe { Mmio::from_raw(MmioRaw::from_ptr(raw)) };
/// let _ = read(mmio);
/// ```
pub struct WideAccessToARegion;

/// A `KVVec` where a `KVec` is wanted: the allocator makes them two types, as in 7.3 (the
/// twin, a `KVVec` lent as a slice, is in the docs of `alloc::KVVec`).
///
/// ```compile_fail,E0308
/// use kernel::prelude::*;
///
/// fn keep(_: KVec<u8>) {}
/// keep(KVVec::new());
/// ```
pub struct KVVecWhereKVecIsWanted;

/// A `VBox` where a `KBox` is wanted (the twin is in `tests/alloc.rs`).
///
/// ```compile_fail,E0308
/// use kernel::{alloc::VBox, prelude::*};
///
/// fn keep(_: KBox<u8>) {}
/// keep(VBox::new(1, GFP_KERNEL)?);
/// # Ok::<(), Error>(())
/// ```
pub struct VBoxWhereKBoxIsWanted;

/// `alloc`'s `Box` where a `KBox` is wanted: `KBox` is no longer its alias.
///
/// ```compile_fail,E0308
/// use kernel::prelude::*;
///
/// let _: KBox<u8> = std::boxed::Box::new(1);
/// ```
pub struct StdBoxWhereKBoxIsWanted;

/// A message in a case's `assert!`: KUnit's takes a condition alone, as in 7.3 (the twin,
/// without a message, is in the docs of `kunit`).
///
/// No error code: a macro invocation that no rule matches has none.
///
/// ```compile_fail
/// #[kernel::kunit_tests(message)]
/// mod tests {
///     #[test]
///     fn fails() {
///         assert!(1 + 1 == 3, "arithmetic");
///     }
/// }
/// ```
pub struct AssertWithAMessageInACase;

/// A message in a case's `assert_eq!`.
///
/// ```compile_fail
/// #[kernel::kunit_tests(message)]
/// mod tests {
///     #[test]
///     fn passes() {
///         assert_eq!(1 + 1, 2, "arithmetic");
///     }
/// }
/// ```
pub struct AssertEqWithAMessageInACase;

/// A message in the `assert!` of a helper written after the first case: from there to
/// the end of the module the assertions are KUnit's, as in 7.3 (a helper before the
/// first case keeps `core`'s, message and all: the docs of `kunit`).
///
/// ```compile_fail
/// #[kernel::kunit_tests(message)]
/// mod tests {
///     #[test]
///     fn passes() {
///         checks(1);
///     }
///
///     fn checks(x: u32) {
///         assert!(x == 1, "x is {x}");
///     }
/// }
/// ```
pub struct AssertWithAMessageInAHelperAfterACase;

/// A case's `assert!` of a condition that is not a `bool` (`core`'s takes any `!`-able
/// one; 7.3's, an `if` condition, only a `bool`).
///
/// ```compile_fail,E0308
/// #[kernel::kunit_tests(condition)]
/// mod tests {
///     #[test]
///     fn passes() {
///         assert!(&true);
///     }
/// }
/// ```
pub struct AssertOfANonBoolInACase;

/// A case returning neither `()` nor a `Result`.
///
/// ```compile_fail,E0277
/// #[kernel::kunit_tests(returns)]
/// mod tests {
///     #[test]
///     fn returns_a_number() -> u32 {
///         1
///     }
/// }
/// ```
pub struct CaseReturningNeitherUnitNorAResult;

/// `#[derive(Zeroable)]` on a tuple struct with a field that is not `Zeroable` (a
/// reference); the twin that builds is in `tests/upstream_items.rs`.
///
/// ```compile_fail,E0277
/// use kernel::prelude::*;
///
/// #[derive(Zeroable)]
/// struct Borrowed(u32, &'static u8);
/// ```
pub struct ZeroableFieldNotZeroable;

/// `#[derive(Zeroable)]` on an enum, which 7.3's refuses too.
///
/// ```compile_fail
/// use kernel::prelude::*;
///
/// #[derive(Zeroable)]
/// enum State {
///     Idle,
/// }
/// ```
pub struct ZeroableEnum;

/// A `bitfield!` field converted to a type (`=>`), which 7.3's has and this crate lacks;
/// the twin that builds is in `tests/upstream_items.rs`.
///
/// ```compile_fail
/// kernel::bitfield! {
///     struct Flags(u32) {
///         0:0 enabled => bool;
///     }
/// }
/// ```
pub struct BitfieldConvertedField;

/// A field of `bitfield!` outside its storage.
///
/// ```compile_fail,E0080
/// kernel::bitfield! {
///     struct Small(u8) {
///         8:4 high;
///     }
/// }
/// ```
pub struct BitfieldFieldBeyondStorage;

/// `{}` of a type with only `core::fmt::Display`: `pr_info!` wants the kernel's
/// `kernel::fmt::Display`, as Linux 7.3's does.
///
/// ```compile_fail,E0277
/// use kernel::prelude::*;
/// const __LOG_PREFIX: &[u8] = b"doc\0";
/// struct Shown;
/// impl core::fmt::Display for Shown {
///     fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
///         f.write_str("shown")
///     }
/// }
/// fn main() {
///     pr_info!("{}\n", Shown);
/// }
/// ```
pub struct CoreDisplayOnly;
