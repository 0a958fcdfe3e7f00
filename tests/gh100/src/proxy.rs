// SPDX-License-Identifier: GPL-2.0

//! The transport: QEMU's multi-process link, the protocol of `-device x-pci-proxy-dev`.
//!
//! QEMU keeps the PCI function's place on its bus and forwards everything else over a
//! connected Unix stream socket: config-space reads and writes, BAR accesses, and, as fds,
//! the guest's RAM. Each message is a 16-byte header (a native `int` command, 4 bytes of
//! padding, a native `size_t` size) and `size` bytes of data, with any file descriptors
//! as `SCM_RIGHTS` on the header. Every request but `SYNC_SYSMEM` and `SET_IRQFD` waits
//! for a `RET` message carrying a `u64`.
//!
//! The link knows nothing of the device: it turns messages into [`Request`]s and
//! [`serve`] hands them to a [`PciFunction`] through its
//! traits, so another transport (QEMU's `vfio-user-pci`) can carry the same model.

use std::{
    io,
    os::{
        fd::{
            AsRawFd,
            FromRawFd,
            OwnedFd, //
        },
        unix::net::UnixStream,
    },
};

use crate::device::{
    PciFunction,
    Region, //
};

/// `MPQEMU_CMD_SYNC_SYSMEM`: the guest's RAM, as regions of fds.
const CMD_SYNC_SYSMEM: i32 = 0;
/// `MPQEMU_CMD_RET`: the answer to a request.
const CMD_RET: i32 = 1;
/// `MPQEMU_CMD_PCI_CFGWRITE`.
const CMD_PCI_CFGWRITE: i32 = 2;
/// `MPQEMU_CMD_PCI_CFGREAD`.
const CMD_PCI_CFGREAD: i32 = 3;
/// `MPQEMU_CMD_BAR_WRITE`.
const CMD_BAR_WRITE: i32 = 4;
/// `MPQEMU_CMD_BAR_READ`.
const CMD_BAR_READ: i32 = 5;
/// `MPQEMU_CMD_SET_IRQFD`: the interrupt's eventfds (used by QEMU with KVM only).
const CMD_SET_IRQFD: i32 = 6;
/// `MPQEMU_CMD_DEVICE_RESET`.
const CMD_DEVICE_RESET: i32 = 7;

/// The header's size: `int cmd`, padding to 8, `size_t size`.
const HEADER_SIZE: usize = 16;
/// The largest data part QEMU sends: the sysmem message, 8 regions of three `u64`s.
const DATA_MAX: usize = 3 * 8 * REGIONS_MAX;
/// The most fds (and RAM regions) one message carries (`REMOTE_MAX_FDS`).
const REGIONS_MAX: usize = 8;

/// One request of QEMU's.
#[derive(Debug)]
pub enum Request {
    /// The guest's RAM regions, each with the fd it lives in.
    SyncSysmem(Vec<Region>),
    /// A config-space read of `len` bytes at `addr`.
    ConfigRead {
        /// Offset in config space.
        addr: u32,
        /// 1, 2 or 4.
        len: u32,
    },
    /// A config-space write.
    ConfigWrite {
        /// Offset in config space.
        addr: u32,
        /// The value, in its low `len` bytes.
        val: u32,
        /// 1, 2 or 4.
        len: u32,
    },
    /// A read of `size` bytes at the guest-physical (or I/O) address `addr` of a BAR.
    BarRead {
        /// The guest's address: the BAR's base plus the offset.
        addr: u64,
        /// 1 to 8.
        size: u32,
        /// A memory BAR's (else an I/O BAR's).
        memory: bool,
    },
    /// A write of `size` bytes.
    BarWrite {
        /// The guest's address: the BAR's base plus the offset.
        addr: u64,
        /// The value, in its low `size` bytes.
        val: u64,
        /// 1 to 8.
        size: u32,
        /// A memory BAR's (else an I/O BAR's).
        memory: bool,
    },
    /// Interrupt eventfds: nothing to do without KVM (the fds are closed).
    SetIrqfd,
    /// The function's reset.
    DeviceReset,
}

/// A connected link to QEMU's proxy device.
pub struct Link {
    sock: UnixStream,
}

fn invalid(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

fn u32_at(data: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&data[at..at + 4]);
    u32::from_ne_bytes(b)
}

fn u64_at(data: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&data[at..at + 8]);
    u64::from_ne_bytes(b)
}

impl Link {
    /// Wraps `sock`, the device's end of the socket whose other end QEMU has as `fd=N`.
    pub fn new(sock: UnixStream) -> Self {
        Self { sock }
    }

    /// Receives the header and its fds; returns the command, the data size and the fds.
    fn recv_header(&mut self) -> io::Result<Option<(i32, usize, Vec<OwnedFd>)>> {
        let mut header = [0u8; HEADER_SIZE];
        // Room for more fds than a message may carry, so that too many are seen (and
        // refused) rather than cut off.
        let mut control = [0u64; 16];
        let mut iov = libc::iovec {
            iov_base: header.as_mut_ptr().cast(),
            iov_len: HEADER_SIZE,
        };
        // SAFETY: `msghdr` is plain data, for which all zeroes is a valid value.
        let mut msg: libc::msghdr = unsafe { core::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = core::mem::size_of_val(&control);
        let n = loop {
            // SAFETY: `msg` points at `iov` and `control`, both live and of the sizes given.
            let n =
                unsafe { libc::recvmsg(self.sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
            if n >= 0 {
                break n;
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(err);
            }
        };
        if n == 0 {
            return Ok(None);
        }
        let mut fds = Vec::new();
        // SAFETY: `msg` was filled in by `recvmsg`; the macros walk its control buffer
        // within `msg_controllen`. Each fd an `SCM_RIGHTS` message carries was installed
        // in this process for us by the kernel, so owning it is sound (even when the
        // control data was cut short: what arrived was installed).
        unsafe {
            let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
            while !cmsg.is_null() {
                if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                    let data = libc::CMSG_DATA(cmsg).cast::<i32>();
                    // CAST: lengths of a control message of at most 128 bytes.
                    let bytes = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                    for i in 0..bytes / 4 {
                        // The kernel made each of these fds ours.
                        fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                    }
                }
                cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
            }
        }
        if msg.msg_flags & libc::MSG_CTRUNC != 0 || fds.len() > REGIONS_MAX {
            return Err(invalid(format!(
                "more fds than a message may carry ({REGIONS_MAX})"
            )));
        }
        // CAST: `recvmsg` returned a non-negative count, at most `HEADER_SIZE`.
        let mut rest = n as usize;
        while rest < HEADER_SIZE {
            let got = io::Read::read(&mut self.sock, &mut header[rest..])?;
            if got == 0 {
                return Err(invalid("the link closed inside a header".into()));
            }
            rest += got;
        }
        let cmd = i32::from_ne_bytes([header[0], header[1], header[2], header[3]]);
        let size = u64_at(&header, 8);
        let size = usize::try_from(size)
            .ok()
            .filter(|&s| s <= DATA_MAX)
            .ok_or_else(|| invalid(format!("command {cmd} announces {size} bytes of data")))?;
        Ok(Some((cmd, size, fds)))
    }

    /// Receives QEMU's next request; `None` when QEMU closed the link.
    ///
    /// # Errors
    ///
    /// An `InvalidData` error naming what is wrong with a message that does not follow
    /// the protocol (its size, its fds, an unknown command); the socket's errors.
    pub fn recv(&mut self) -> io::Result<Option<Request>> {
        let Some((cmd, size, fds)) = self.recv_header()? else {
            return Ok(None);
        };
        let mut data = vec![0u8; size];
        io::Read::read_exact(&mut self.sock, &mut data)?;
        if !fds.is_empty() && cmd != CMD_SYNC_SYSMEM && cmd != CMD_SET_IRQFD {
            return Err(invalid(format!("command {cmd} carries fds")));
        }
        let need = |n: usize| {
            if size < n {
                Err(invalid(format!(
                    "command {cmd}: {size} bytes of data, {n} needed"
                )))
            } else {
                Ok(())
            }
        };
        Ok(Some(match cmd {
            CMD_SYNC_SYSMEM => {
                need(DATA_MAX)?;
                let mut regions = Vec::new();
                for (i, fd) in fds.into_iter().enumerate().take(REGIONS_MAX) {
                    regions.push(Region {
                        gpa: u64_at(&data, 8 * i),
                        size: u64_at(&data, 64 + 8 * i),
                        offset: u64_at(&data, 128 + 8 * i),
                        fd,
                    });
                }
                Request::SyncSysmem(regions)
            }
            CMD_PCI_CFGREAD | CMD_PCI_CFGWRITE => {
                need(12)?;
                let (addr, val, len) = (u32_at(&data, 0), u32_at(&data, 4), u32_at(&data, 8));
                if ![1, 2, 4].contains(&len) {
                    return Err(invalid(format!("a config-space access of {len} bytes")));
                }
                match cmd {
                    CMD_PCI_CFGREAD => Request::ConfigRead { addr, len },
                    _ => Request::ConfigWrite { addr, val, len },
                }
            }
            CMD_BAR_READ | CMD_BAR_WRITE => {
                // `BarAccessMsg`: address, value, size, then the memory-or-I/O flag.
                need(21)?;
                let (addr, val, size) = (u64_at(&data, 0), u64_at(&data, 8), u32_at(&data, 16));
                let memory = data[20] != 0;
                if !(1..=8).contains(&size) {
                    return Err(invalid(format!("a BAR access of {size} bytes")));
                }
                match cmd {
                    CMD_BAR_READ => Request::BarRead { addr, size, memory },
                    _ => Request::BarWrite {
                        addr,
                        val,
                        size,
                        memory,
                    },
                }
            }
            CMD_SET_IRQFD => Request::SetIrqfd,
            CMD_DEVICE_RESET => Request::DeviceReset,
            other => return Err(invalid(format!("unknown command {other}"))),
        }))
    }

    /// Answers the request being served with `value`.
    ///
    /// # Errors
    ///
    /// The socket's.
    pub fn reply(&mut self, value: u64) -> io::Result<()> {
        let mut msg = [0u8; HEADER_SIZE + 8];
        msg[..4].copy_from_slice(&CMD_RET.to_ne_bytes());
        msg[8..16].copy_from_slice(&8u64.to_ne_bytes());
        msg[16..].copy_from_slice(&value.to_ne_bytes());
        io::Write::write_all(&mut self.sock, &msg)
    }
}

/// Serves `function` over `link` until QEMU closes it.
///
/// # Errors
///
/// A message that breaks the protocol, or the socket's errors.
pub fn serve(link: &mut Link, function: &mut dyn PciFunction) -> io::Result<()> {
    while let Some(request) = link.recv()? {
        match request {
            Request::SyncSysmem(regions) => function.sync_ram(regions)?,
            Request::SetIrqfd => {}
            Request::ConfigRead { addr, len } => {
                let value = function.config().read(addr, len);
                link.reply(u64::from(value))?;
            }
            Request::ConfigWrite { addr, val, len } => {
                function.config().write(addr, val, len);
                link.reply(0)?;
            }
            Request::BarRead { addr, size, memory } => {
                let value = match function.config().bar_of(addr) {
                    Some((bar, offset)) if memory => function.bar(bar).read(offset, size),
                    // Not decoded by this function (it has no I/O BAR): what a PCI bus
                    // returns.
                    _ => u64::MAX,
                };
                link.reply(value)?;
            }
            Request::BarWrite {
                addr,
                val,
                size,
                memory,
            } => {
                if let (Some((bar, offset)), true) = (function.config().bar_of(addr), memory) {
                    function.bar(bar).write(offset, size, val);
                }
                link.reply(0)?;
            }
            Request::DeviceReset => {
                function.reset();
                link.reply(0)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    /// Sends one message with `data` on `sock`.
    fn send(sock: &mut UnixStream, cmd: i32, data: &[u8]) {
        let mut msg = Vec::new();
        msg.extend_from_slice(&cmd.to_ne_bytes());
        msg.extend_from_slice(&[0; 4]);
        msg.extend_from_slice(&(data.len() as u64).to_ne_bytes());
        msg.extend_from_slice(data);
        sock.write_all(&msg).unwrap();
    }

    fn config(addr: u32, val: u32, len: u32) -> Vec<u8> {
        [addr, val, len]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect()
    }

    #[test]
    fn reads_a_config_read() {
        let (mut qemu, ours) = UnixStream::pair().unwrap();
        send(&mut qemu, CMD_PCI_CFGREAD, &config(0x10, 0, 4));
        let got = Link::new(ours).recv().unwrap();
        assert!(matches!(
            got,
            Some(Request::ConfigRead { addr: 0x10, len: 4 })
        ));
    }

    #[test]
    fn refuses_a_config_access_of_another_width() {
        let (mut qemu, ours) = UnixStream::pair().unwrap();
        send(&mut qemu, CMD_PCI_CFGWRITE, &config(0, 0, 0xffff_ffff));
        let err = Link::new(ours).recv().unwrap_err();
        assert!(err.to_string().contains("config-space access of"), "{err}");
    }

    #[test]
    fn refuses_a_message_larger_than_any_request() {
        let (mut qemu, ours) = UnixStream::pair().unwrap();
        send(&mut qemu, CMD_BAR_READ, &[0; DATA_MAX + 1]);
        let err = Link::new(ours).recv().unwrap_err();
        assert!(err.to_string().contains("announces"), "{err}");
    }

    #[test]
    fn refuses_a_bar_access_shorter_than_its_message() {
        let (mut qemu, ours) = UnixStream::pair().unwrap();
        send(&mut qemu, CMD_BAR_READ, &[0; 12]);
        let err = Link::new(ours).recv().unwrap_err();
        assert!(
            err.to_string().contains("12 bytes of data, 21 needed"),
            "{err}"
        );
    }

    #[test]
    fn answers_with_a_ret_message() {
        let (mut qemu, ours) = UnixStream::pair().unwrap();
        Link::new(ours).reply(0x1234).unwrap();
        let mut got = [0u8; 24];
        io::Read::read_exact(&mut qemu, &mut got).unwrap();
        assert_eq!(i32::from_ne_bytes(got[..4].try_into().unwrap()), CMD_RET);
        assert_eq!(u64::from_ne_bytes(got[16..].try_into().unwrap()), 0x1234);
    }

    #[test]
    fn ends_when_qemu_closes_the_link() {
        let (qemu, ours) = UnixStream::pair().unwrap();
        drop(qemu);
        assert!(Link::new(ours).recv().unwrap().is_none());
    }
}
