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
    pin_data,
    pinned_drop,
    InPlaceWrite,
    Init,
    PinInit, //
};

// `Zeroable`, the trait, is `pin-init`'s; the derive of that name is ours (which also
// takes tuple structs, as 7.3's does). `pinned_init::Zeroable` names both, so it comes in
// by a glob, whose derive the explicit import below shadows.
mod zeroable {
    pub use pinned_init::Zeroable;
}

#[doc(no_inline)]
pub use zeroable::*;

#[doc(no_inline)]
pub use crate::macros::Zeroable;

// 7.3's `init!` and `pin_init!` (`pin_init`'s): ours take the type by any path, as 7.3's.
#[doc(no_inline)]
pub use crate::{
    __init as init,
    __pin_init as pin_init, //
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
    build_assert::{
        build_assert,
        build_error,
        const_assert,
        static_assert, //
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
    macros::{
        fmt,
        kunit_tests, //
    },
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
