/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the project's two QEMU plugins (vgsp-trace.c in user mode, vgsp-ktrace.c
 * in system mode) decode of an aarch64 instruction word, and the ordering bits
 * both write in a record's info, as the checker (tools/model, compiled.rs)
 * reads them.
 */
#ifndef VGSP_ARM64_H
#define VGSP_ARM64_H

#include <stdbool.h>
#include <stdint.h>

/* Ordering bits of an instruction, as they appear in a record's info. */
#define VGSP_ACQ	0x01	/* acquire */
#define VGSP_REL	0x02	/* release */
#define VGSP_RCPC	0x04	/* RCpc acquire (LDAPR, LDAPUR); with VGSP_ACQ */
#define VGSP_WRITES	0x08	/* ORDERED_OTHER: the instruction writes */
#define VGSP_READS	0x10	/* ORDERED_OTHER: the instruction reads */
#define VGSP_ORDER	(VGSP_ACQ | VGSP_REL | VGSP_RCPC)

#define VGSP_DMB	1
#define VGSP_DSB	2

/* DMB or DSB: (type << 8) | CRm, else 0. */
static inline uint16_t vgsp_decode_barrier(uint32_t w)
{
	uint16_t crm = (w >> 8) & 0xf;

	if ((w & 0xfffff0ff) == 0xd50330bf)
		return VGSP_DMB << 8 | crm;
	/* DSB #0 is SSBB and DSB #4 PSSBB: speculation barriers, not DSBs. */
	if ((w & 0xfffff0ff) == 0xd503309f && crm != 0 && crm != 4)
		return VGSP_DSB << 8 | crm;
	return 0;
}

static inline bool vgsp_decode_cond_branch(uint32_t w)
{
	return (w & 0xff000010) == 0x54000000 ||	/* B.cond */
	       (w & 0x7e000000) == 0x34000000 ||	/* CBZ, CBNZ */
	       (w & 0x7e000000) == 0x36000000;		/* TBZ, TBNZ */
}

/*
 * The ordering bits of an acquire or release access, with VGSP_READS and
 * VGSP_WRITES; 0 for every other instruction, whose accesses then only count
 * inside regions.
 */
static inline uint16_t vgsp_decode_order(uint32_t w)
{
	bool o2 = w >> 23 & 1, l = w >> 22 & 1, o1 = w >> 21 & 1, o0 = w >> 15 & 1;
	uint16_t rw = l ? VGSP_READS : VGSP_WRITES;

	/* Load/store exclusive and ordered (LDAR, STLR, CAS...). */
	if ((w & 0x3f000000) == 0x08000000) {
		if (o2 && o1)		/* CAS{A,L,AL}{B,H} */
			return (l ? VGSP_ACQ : 0) | (o0 ? VGSP_REL : 0) |
			       VGSP_READS | VGSP_WRITES;
		if (o2)			/* LDAR/STLR; LDLAR/STLLR have o0 0 */
			return o0 ? (l ? VGSP_ACQ : VGSP_REL) | rw : 0;
		if (o1 && !(w >> 31))	/* CASP{A,L,AL}: size 0x */
			return (l ? VGSP_ACQ : 0) | (o0 ? VGSP_REL : 0) |
			       VGSP_READS | VGSP_WRITES;
		/* LD{A}X{R,P}, ST{L}X{R,P}: o0 orders them. */
		return o0 ? (l ? VGSP_ACQ : VGSP_REL) | rw : 0;
	}
	/* LDAPR{B,H} (v8.3); inside the atomics encoding, so first. */
	if ((w & 0x3ffffc00) == 0x38bfc000)
		return VGSP_ACQ | VGSP_RCPC | VGSP_READS;
	/* STLUR{B,H}, LDAPUR{B,H,SB,SH,SW} (v8.4). */
	if ((w & 0x3f200c00) == 0x19000000)
		return (w >> 22 & 3) ? VGSP_ACQ | VGSP_RCPC | VGSP_READS
				     : VGSP_REL | VGSP_WRITES;
	/* LSE atomics (LDADD..., SWP): A is bit 23, R bit 22. */
	if ((w & 0x3f200c00) == 0x38200000) {
		uint16_t order = (w >> 23 & 1 ? VGSP_ACQ : 0) |
				 (w >> 22 & 1 ? VGSP_REL : 0);

		return order ? order | VGSP_READS | VGSP_WRITES : 0;
	}
	return 0;
}

#endif /* VGSP_ARM64_H */
