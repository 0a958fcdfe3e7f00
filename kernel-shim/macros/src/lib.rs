// SPDX-License-Identifier: GPL-2.0

//! Procedural macros of the `kernel` shim.
//!
//! They use only `proc_macro`, no `syn`, each macro in a module of its own. Host only: a
//! kernel build uses the `macros` crate of Linux 7.3, whose `#[kunit_tests]` and `paste!`
//! are its own, and 7.3's `pin_init`, whose `#[derive(Zeroable)]` is its own.

use proc_macro::TokenStream;

mod fmt;
mod kunit;
mod paste;
mod zeroable;

/// Marks a module as a KUnit suite.
///
/// ```ignore
/// #[kunit_tests(nova_core_fw)]
/// mod tests {
///     #[test]
///     fn checksum_of_zeroes_is_zero() {
///         assert_eq!(checksum(&[0; 16]), 0);
///     }
/// }
/// ```
///
/// Expanded as Linux 7.3's is: every `#[test]` function of the module is a case, which
/// returns `()` or any `Result` (an `Err` fails it), and is listed whatever its
/// `#[cfg]`s (configured out, it is reported skipped). From the first case to the end of
/// the module, `assert!(condition)` and `assert_eq!(left, right)` are KUnit's, with no
/// message; before it they are `core`'s. On the host the cases make the static
/// `KUNIT_SUITE: kernel::kunit::Suite` of the module, which the host's KTAP runner runs,
/// and each is a `cargo test` test too, `kunit_rust_wrapper_<case>`. The details are in
/// the `kernel` crate's `kunit` module.
#[proc_macro_attribute]
pub fn kunit_tests(attr: TokenStream, item: TokenStream) -> TokenStream {
    kunit::kunit_tests(attr, item)
}

/// Glues identifiers together: inside `paste! { ... }`, every `[< piece ... >]` becomes
/// one identifier made of its pieces (identifiers and literals), each optionally followed
/// by `:upper` or `:lower`.
///
/// ```ignore
/// macro_rules! getter {
///     ($field:ident) => {
///         kernel::macros::paste! {
///             const [<$field:upper _SHIFT>]: u32 = 0;
///             fn [<get_ $field>](&self) -> u32 { self.$field }
///         }
///     };
/// }
/// ```
///
/// Host only: a kernel tree's `macros` crate has its own `paste!`, with the same syntax
/// for what the `kernel` crate's macros use.
#[proc_macro]
pub fn paste(input: TokenStream) -> TokenStream {
    paste::paste(input)
}

/// Derives `Zeroable` (`pinned_init`'s trait, the prelude's) for a struct with named
/// fields, a tuple struct, a unit struct or a union, as Linux 7.3's `pin_init` derives it:
/// `Zeroable` is added to every type parameter's bounds, and the build fails unless every
/// field's type is `Zeroable`. An enum is refused.
///
/// ```ignore
/// #[derive(Zeroable)]
/// struct Header([u8; 64]);
/// ```
///
/// The expansion names `::pinned_init::Zeroable`: the crate using the derive depends on
/// `pinned-init`, as for `#[pin_data]` (7.3's names `::pin_init::Zeroable`). Host only: in
/// a kernel the prelude's derive is 7.3's own.
#[proc_macro_derive(Zeroable)]
pub fn derive_zeroable(input: TokenStream) -> TokenStream {
    zeroable::derive(input)
}

/// `core::format_args!` with each argument behind `kernel::fmt::Adapter`, as Linux 7.3's
/// `fmt!`: `{}` wants `kernel::fmt::Display`, which a type implements for the kernel, not
/// `core::fmt::Display`. The `pr_*!` and `dev_*!` macros format with it.
#[proc_macro]
pub fn fmt(input: TokenStream) -> TokenStream {
    fmt::fmt(input)
}
