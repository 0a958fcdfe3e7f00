// SPDX-License-Identifier: GPL-2.0

//! `vgsp-gh100-init`: the guest's whole user space, as `/init` of an initramfs: unbinds
//! every device nova-core bound (which unloads the GSP), then restarts the machine (QEMU,
//! run with `-no-reboot`, exits).
//!
//! Built statically (`-C target-feature=+crt-static`), it needs nothing else in the
//! initramfs but `/dev/console` and `/dev/kmsg`. Its lines, after the kernel's timestamp,
//! start with `vgsp-gh100-init:`; they are the kernel's log records, which the kernel
//! writes to the console whole and in order with the driver's. Written to the console
//! directly, they could be cut by a driver's line printed in the middle of one.

use std::{
    fs,
    io::Write, //
};

/// Where nova-core's bound devices are listed.
const DRIVER: &str = "/sys/bus/pci/drivers/nova-core";

/// Where a line becomes one of the kernel's log records.
const KMSG: &str = "/dev/kmsg";

/// Logs `line` as a record of the kernel's log (one `write`, at `KERN_NOTICE`, which the
/// console prints), or on the console when there is no `/dev/kmsg`.
fn say(line: &str) {
    let text = format!("vgsp-gh100-init: {line}\n");
    let logged = fs::OpenOptions::new()
        .write(true)
        .open(KMSG)
        .and_then(|mut kmsg| kmsg.write_all(format!("<5>{text}").as_bytes()));
    if logged.is_err() {
        let mut out = std::io::stdout();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
}

fn mount_sysfs() -> Result<(), String> {
    let _ = fs::create_dir("/sys");
    let (src, dst, ty) = (c"sysfs", c"/sys", c"sysfs");
    // SAFETY: every argument is a NUL-terminated string that outlives the call; no data.
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            dst.as_ptr(),
            ty.as_ptr(),
            0,
            core::ptr::null(),
        )
    };
    match rc {
        0 => Ok(()),
        _ => Err(format!("mount sysfs: {}", std::io::Error::last_os_error())),
    }
}

fn unbind_all() -> Result<usize, String> {
    let entries = fs::read_dir(DRIVER).map_err(|e| format!("{DRIVER}: {e}"))?;
    let mut n = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        // Bound devices are the entries named by their PCI address.
        if !name.starts_with("0000:") {
            continue;
        }
        say(&format!("unbinding {name}"));
        fs::write(format!("{DRIVER}/unbind"), &name).map_err(|e| format!("unbind {name}: {e}"))?;
        say(&format!("unbound {name}"));
        n += 1;
    }
    Ok(n)
}

fn main() {
    let result = mount_sysfs().and_then(|()| unbind_all());
    match result {
        Ok(0) => say("no device bound to nova-core"),
        Ok(n) => say(&format!("{n} devices unbound")),
        Err(e) => say(&format!("failed: {e}")),
    }
    say("restarting");
    // SAFETY: `sync` has no preconditions.
    unsafe { libc::sync() };
    // SAFETY: restarting needs no memory of ours; the call does not return on success.
    unsafe { libc::reboot(libc::RB_AUTOBOOT) };
    say(&format!(
        "restart failed: {}",
        std::io::Error::last_os_error()
    ));
    // PID 1 must not exit; nothing is left to do.
    loop {
        std::thread::park();
    }
}
