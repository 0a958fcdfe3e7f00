// SPDX-License-Identifier: GPL-2.0

//! The `kernel` prelude.

#[doc(no_inline)]
pub use core::pin::Pin;

#[doc(no_inline)]
pub use crate::{
    alloc::{
        flags::*,
        KBox,
        KVVec,
        KVec, //
    },
    error::{
        code::*,
        Error,
        Result, //
    },
    init::Zeroable,
    macros::kunit_tests,
    pr_debug,
    pr_err,
    pr_info,
    pr_warn, //
};
