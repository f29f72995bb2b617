/* Records sent from the GPU to the host receiving thread of the simfront tracer.
 *
 * The static part of an instruction (PC, opcode, registers, immediate) never travels:
 * the host keeps it in a table indexed by `sid`, so a record is 32 bytes, plus 256
 * bytes of per-lane addresses for memory instructions only. */
#pragma once
#include <stdint.h>

#define SF_MAX_SRC 5

/* launch word (64 bits, set per launch through nvbit_set_at_launch):
 *   bits  0..23  launch slot (0: do not record)
 *   bits 24..35  CTA sampling stride (0 or 1: every CTA)
 *   bits 36..63  CTA limit after striding (0: no limit)
 * or, with bit 63 set (box sampling), the CTAs with x < bx, y < by, z < bz:
 *   bits 36..44 bx, 45..53 by, 54..62 bz (each at most 511) */
#define SF_LW_SLOT(w) ((uint32_t)((w)&0xffffffull))
#define SF_LW_STRIDE(w) ((uint32_t)(((w) >> 24) & 0xfffull))
#define SF_LW_MAXCTA(w) ((uint32_t)((w) >> 36))
#define SF_LW_IS_BOX(w) (((w) >> 63) & 1ull)
#define SF_LW_BOX(w, d) ((uint32_t)(((w) >> (36 + 9 * (d))) & 0x1ffull))
#define SF_LW_BOX_MAX 511u
#define SF_SENTINEL_SLOT 0xffffffu

/* Census of a sampled launch: the managed launch-word block holds, after the word itself,
 * SF_CENSUS_STRIPES counters of executed warp instructions over *every* CTA (one per SM
 * modulo the stripe count, to spread the atomics). CTAs are not equal under sampling: the
 * traced ones run ~1000x slower, so a persistent kernel's dynamic tile scheduler hands them
 * fewer tiles, and N/T scaling alone under-counts its work (seen on cuBLAS sm90 GEMMs). */
#define SF_CENSUS_STRIPES 64
#define SF_CENSUS_OFFSET 8 /* in uint64 words from the launch word: its own cache line */

typedef struct {
  uint32_t slot;     /* launch slot, SF_SENTINEL_SLOT for the flush marker */
  uint32_t sid;      /* static instruction id (host table) */
  uint32_t cta_x, cta_y, cta_z;
  uint32_t warp_tb;  /* warp index inside the thread block */
  uint32_t mask;     /* active & guard predicate, as Accel-Sim prints it */
  uint32_t has_addr; /* 1: sf_mem_rec_t with addresses */
} sf_rec_t;

typedef struct {
  sf_rec_t h;
  uint64_t addrs[32];
} sf_mem_rec_t;
