// SPDX-License-Identifier: GPL-2.0

//! `fmt!`, as the `pr_*!` macros format: every argument behind `kernel::fmt::Adapter`, what
//! it prints unchanged (its refusal of a `core`-only `Display` is in `compile_fail.rs`).

use kernel::{
    fmt::{
        Display,
        Formatter,
        Result, //
    },
    macros::fmt,
};

/// A type with the kernel's `Display` alone.
struct Kernel;

impl Display for Kernel {
    fn fmt(&self, f: &mut Formatter<'_>) -> Result {
        f.write_str("kernel")
    }
}

#[test]
fn positional_arguments_print_as_core_s() {
    assert_eq!(
        fmt!("{} {:>4} {:#x}", "a", 7u32, 255u8).to_string(),
        "a    7 0xff"
    );
}

#[test]
fn a_captured_name_is_adapted_too() {
    let count = 3usize;
    assert_eq!(fmt!("{count} {count:02}").to_string(), "3 03");
}

#[test]
fn a_named_argument_is_adapted_and_not_captured_again() {
    assert_eq!(fmt!("{n} {n:?}", n = "x").to_string(), "x \"x\"");
}

#[test]
fn a_type_with_the_kernel_s_display_prints_with_braces() {
    assert_eq!(fmt!("{}", Kernel).to_string(), "kernel");
}

#[test]
fn escaped_braces_capture_nothing() {
    assert_eq!(fmt!("{{x}} {}", 1).to_string(), "{x} 1");
}

// Kept as written: rustfmt would put the spaces back.
#[rustfmt::skip]
#[test]
fn a_named_argument_without_spaces_is_named() {
    assert_eq!(fmt!("{n}", n=-1).to_string(), "-1");
}

#[test]
fn a_comparison_is_a_positional_argument() {
    let n = 1;
    assert_eq!(fmt!("{}", n == 1).to_string(), "true");
}

#[test]
fn a_raw_string_captures_its_names() {
    let name = "gsp";
    assert_eq!(fmt!(r#"{name} "q""#).to_string(), "gsp \"q\"");
}

#[test]
fn a_unicode_escape_is_no_capture() {
    assert_eq!(fmt!("caf\u{e9} {}", 1).to_string(), "café 1");
}

#[test]
fn a_format_string_from_a_macro_takes_its_arguments() {
    assert_eq!(
        fmt!(concat!("{}", "-{}"), 1, Kernel).to_string(),
        "1-kernel"
    );
}
