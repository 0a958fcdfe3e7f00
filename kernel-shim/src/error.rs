// SPDX-License-Identifier: GPL-2.0

//! Kernel errors.
//!
//! C header: `include/uapi/asm-generic/errno-base.h` and `errno.h`.

use core::{
    ffi::CStr,
    fmt, //
};

/// Contains the C-compatible error codes.
pub mod code {
    macro_rules! declare_err {
        ($err:ident, $num:literal, $doc:literal) => {
            #[doc = $doc]
            pub const $err: super::Error =
                super::Error::from_const(-$num, super::c_name(concat!(stringify!($err), "\0")));
        };
    }

    declare_err!(EPERM, 1, "Operation not permitted.");
    declare_err!(ENOENT, 2, "No such file or directory.");
    declare_err!(EINTR, 4, "Interrupted system call.");
    declare_err!(EIO, 5, "I/O error.");
    declare_err!(E2BIG, 7, "Argument list too long.");
    declare_err!(EAGAIN, 11, "Try again.");
    declare_err!(ENOMEM, 12, "Out of memory.");
    declare_err!(EFAULT, 14, "Bad address.");
    declare_err!(EBUSY, 16, "Device or resource busy.");
    declare_err!(ENODEV, 19, "No such device.");
    declare_err!(EINVAL, 22, "Invalid argument.");
    declare_err!(ENOSPC, 28, "No space left on device.");
    declare_err!(ERANGE, 34, "Math result not representable.");
    declare_err!(ENODATA, 61, "No data available.");
    declare_err!(EPROTO, 71, "Protocol error.");
    declare_err!(EBADMSG, 74, "Not a data message.");
    declare_err!(EOVERFLOW, 75, "Value too large for defined data type.");
    declare_err!(EMSGSIZE, 90, "Message too long.");
    declare_err!(
        EOPNOTSUPP,
        95,
        "Operation not supported on transport endpoint."
    );
    declare_err!(ETIMEDOUT, 110, "Connection timed out.");
}

/// A kernel error: a negative errno in `-4095..=-1`.
///
/// # Invariants
///
/// The value is a valid negative errno.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Error {
    errno: i32,
    name: &'static CStr,
}

/// Returns `name`, NUL-terminated, as a C string: the names of [`code`]'s errors.
///
/// # Panics
///
/// At build time, if `name` is not NUL-terminated or has an inner NUL.
const fn c_name(name: &'static str) -> &'static CStr {
    match CStr::from_bytes_with_nul(name.as_bytes()) {
        Ok(name) => name,
        Err(_) => panic!("an errno name is one NUL-terminated C string"),
    }
}

impl Error {
    const fn from_const(errno: i32, name: &'static CStr) -> Self {
        // INVARIANT: every caller in `code` passes a negative errno.
        Self { errno, name }
    }

    /// Creates an [`Error`] from a kernel error code (a negative errno).
    ///
    /// Values outside `-4095..=-1` become `EINVAL`, as upstream's `from_errno` does.
    pub fn from_errno(errno: i32) -> Self {
        const KNOWN: &[Error] = &[
            code::EPERM,
            code::ENOENT,
            code::EINTR,
            code::EIO,
            code::E2BIG,
            code::EAGAIN,
            code::ENOMEM,
            code::EFAULT,
            code::EBUSY,
            code::ENODEV,
            code::EINVAL,
            code::ENOSPC,
            code::ERANGE,
            code::ENODATA,
            code::EPROTO,
            code::EBADMSG,
            code::EOVERFLOW,
            code::EMSGSIZE,
            code::EOPNOTSUPP,
            code::ETIMEDOUT,
        ];
        if !(-4095..=-1).contains(&errno) {
            return code::EINVAL;
        }
        KNOWN
            .iter()
            .copied()
            .find(|e| e.errno == errno)
            // INVARIANT: `errno` was checked to be in range above.
            .unwrap_or(Self { errno, name: c"" })
    }

    /// Returns the error encoded as a negative errno.
    pub const fn to_errno(self) -> i32 {
        self.errno
    }

    /// Returns the symbolic name of the error (`c"EIO"`), if it has one.
    pub fn name(&self) -> Option<&'static CStr> {
        (!self.name.is_empty()).then_some(self.name)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            // The names are ASCII.
            Some(name) => f.write_str(name.to_str().unwrap_or("?")),
            None => write!(f, "Error({})", self.errno),
        }
    }
}

/// A [`Result`] with an [`Error`] error type.
pub type Result<T = (), E = Error> = core::result::Result<T, E>;
