// SPDX-License-Identifier: GPL-2.0

//! A kernel tree's nova-core receive path over arbitrary `gspq` contents and pointer
//! values (see `vgsp_upstream::fuzz`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| vgsp_upstream::fuzz::receive_arbitrary(data));
