// SPDX-License-Identifier: GPL-2.0

//! Kernel errors.
//!
//! C header: `include/uapi/asm-generic/errno-base.h` and `errno.h`.

use core::{
    ffi::CStr,
    fmt,
    num::{
        NonZeroI32,
        TryFromIntError, //
    },
};

/// Contains the C-compatible error codes.
pub mod code {
    macro_rules! declare_err {
        ($($err:ident, $num:literal, $doc:literal;)*) => {
            $(
                #[doc = $doc]
                pub const $err: super::Error = super::Error::from_const(-$num);
            )*

            /// Every code above with its name, for [`super::Error::name`].
            pub(super) const NAMED: &[(super::Error, &::core::ffi::CStr)] = &[
                $(($err, super::c_name(concat!(stringify!($err), "\0"))),)*
            ];
        };
    }

    declare_err! {
        EPERM, 1, "Operation not permitted.";
        ENOENT, 2, "No such file or directory.";
        EINTR, 4, "Interrupted system call.";
        EIO, 5, "I/O error.";
        E2BIG, 7, "Argument list too long.";
        EAGAIN, 11, "Try again.";
        ENOMEM, 12, "Out of memory.";
        EFAULT, 14, "Bad address.";
        EBUSY, 16, "Device or resource busy.";
        ENODEV, 19, "No such device.";
        EINVAL, 22, "Invalid argument.";
        ENOSPC, 28, "No space left on device.";
        ERANGE, 34, "Math result not representable.";
        ENODATA, 61, "No data available.";
        EPROTO, 71, "Protocol error.";
        EBADMSG, 74, "Not a data message.";
        EOVERFLOW, 75, "Value too large for defined data type.";
        EMSGSIZE, 90, "Message too long.";
        EOPNOTSUPP, 95, "Operation not supported on transport endpoint.";
        ETIMEDOUT, 110, "Connection timed out.";
        EREMOTEIO, 121, "Remote I/O error.";
        ERESTARTSYS, 512, "Restart the system call.";
        ETOOSMALL, 525, "Buffer or request is too small.";
    }
}

/// A kernel error: a negative errno in `-4095..=-1`.
///
/// As 7.3's, a plain number: the codes of [`code`] can be matched as patterns
/// (`Err(ERANGE) => continue`).
///
/// # Invariants
///
/// The value is a valid negative errno.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Error(NonZeroI32);

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
    const fn from_const(errno: i32) -> Self {
        match NonZeroI32::new(errno) {
            // INVARIANT: every caller in `code` passes a negative errno.
            Some(errno) => Self(errno),
            None => panic!("an errno is not zero"),
        }
    }

    /// Creates an [`Error`] from a kernel error code (a negative errno).
    ///
    /// Values outside `-4095..=-1` become `EINVAL`, as upstream's `from_errno` does.
    pub fn from_errno(errno: i32) -> Self {
        if !(-4095..=-1).contains(&errno) {
            return code::EINVAL;
        }
        // INVARIANT: `errno` was checked to be in range above.
        Self::from_const(errno)
    }

    /// Returns the error encoded as a negative errno.
    pub const fn to_errno(self) -> i32 {
        self.0.get()
    }

    /// Returns the symbolic name of the error (`c"EIO"`), if it has one.
    ///
    /// 7.3 asks C's `errname`; ours knows the codes [`code`] declares.
    pub fn name(&self) -> Option<&'static CStr> {
        code::NAMED
            .iter()
            .find(|(e, _)| e == self)
            .map(|&(_, name)| name)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            // The names are ASCII.
            Some(name) => f.write_str(name.to_str().unwrap_or("?")),
            None => write!(f, "Error({})", self.to_errno()),
        }
    }
}

/// A [`Result`] with an [`Error`] error type.
pub type Result<T = (), E = Error> = core::result::Result<T, E>;

/// A failed integer conversion is `EINVAL`, as in 7.3 (`u32::try_from(len)?`).
impl From<TryFromIntError> for Error {
    #[inline]
    fn from(_: TryFromIntError) -> Error {
        code::EINVAL
    }
}
