// SPDX-License-Identifier: GPL-2.0

//! The `kernel` prelude: the items most code uses, for `use kernel::prelude::*`.
//!
//! A subset of Linux 7.3's, each item under 7.3's name.

#[doc(no_inline)]
pub use core::{
    ffi::CStr,
    mem::{
        align_of,
        align_of_val,
        size_of,
        size_of_val, //
    },
    pin::Pin, //
};

#[doc(no_inline)]
pub use pinned_init::{
    init,
    pin_data,
    pin_init,
    pinned_drop,
    InPlaceWrite,
    Init,
    PinInit,
    Zeroable, //
};

#[doc(no_inline)]
pub use crate::{
    alloc::{
        flags::*,
        KBox,
        KVBox,
        KVVec,
        KVec,
        VBox,
        VVec, //
    },
    dev_alert,
    dev_crit,
    dev_dbg,
    dev_emerg,
    dev_err,
    dev_info,
    dev_notice,
    dev_warn,
    error::{
        code::*,
        Error,
        Result, //
    },
    init::InPlaceInit,
    macros::kunit_tests,
    pr_alert,
    pr_crit,
    pr_debug,
    pr_emerg,
    pr_err,
    pr_info,
    pr_notice,
    pr_warn,
    try_init,
    try_pin_init, //
};
