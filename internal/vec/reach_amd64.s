#include "textflag.h"

// func reachAVX512(dots *int32, scale, err *float32, acc *float64, n int, params *reachParams, out *int32) int
//
// For rows j < n (a multiple of 8), eight at a time in float64:
//
//	u  = d·a·scale + b·err + c0                   (Rows.Upper)
//	hi = wa·min(1, (acc+ra)·ka) + wb·min(1, max(0, (u+rb)·kb))
//
// and the indices base+j of the rows with hi ≥ m are written to out
// (VPCOMPRESSD); it returns how many.
TEXT ·reachAVX512(SB), NOSPLIT, $0-64
	MOVQ dots+0(FP), SI
	MOVQ scale+8(FP), R8
	MOVQ err+16(FP), R9
	MOVQ acc+24(FP), R10
	MOVQ n+32(FP), CX
	MOVQ params+40(FP), R11
	MOVQ out+48(FP), DI
	MOVQ DI, R12                 // the start of out

	VBROADCASTSD 0(R11), Z20     // a
	VBROADCASTSD 8(R11), Z21     // b
	VBROADCASTSD 16(R11), Z22    // c0
	VBROADCASTSD 24(R11), Z23    // wa
	VBROADCASTSD 32(R11), Z24    // ra
	VBROADCASTSD 40(R11), Z25    // ka
	VBROADCASTSD 48(R11), Z26    // wb
	VBROADCASTSD 56(R11), Z27    // rb
	VBROADCASTSD 64(R11), Z28    // kb
	VBROADCASTSD 72(R11), Z29    // m
	VPXORQ       Z30, Z30, Z30   // 0
	MOVQ         $0x3ff0000000000000, AX
	VPBROADCASTQ AX, Z31         // 1.0
	MOVL         80(R11), AX
	VPBROADCASTD AX, Y18         // base, 8 times
	MOVQ         $0x0706050403020100, AX
	VMOVQ        AX, X19
	VPMOVZXBD    X19, Y19        // 0, 1, …, 7
	VPADDD       Y19, Y18, Y18   // the first eight indices
	MOVL         $8, AX
	VPBROADCASTD AX, Y17         // 8, 8 times
	XORQ         AX, AX          // row

loop:
	CMPQ      AX, CX
	JGE       done
	VCVTDQ2PD (SI)(AX*4), Z0     // d
	VCVTPS2PD (R8)(AX*4), Z1     // scale
	VCVTPS2PD (R9)(AX*4), Z2     // err
	VMULPD    Z20, Z0, Z0
	VMULPD    Z1, Z0, Z0         // d·a·scale
	VMULPD    Z21, Z2, Z2        // b·err
	VADDPD    Z2, Z0, Z0
	VADDPD    Z22, Z0, Z0        // u
	VADDPD    Z27, Z0, Z0
	VMULPD    Z28, Z0, Z0
	VMAXPD    Z30, Z0, Z0
	VMINPD    Z31, Z0, Z0        // the dense part's bound
	VMOVUPD   (R10)(AX*8), Z3    // acc
	VADDPD    Z24, Z3, Z3
	VMULPD    Z25, Z3, Z3
	VMINPD    Z31, Z3, Z3        // the other part's bound
	VMULPD    Z23, Z3, Z3
	VMULPD    Z26, Z0, Z0
	VADDPD    Z0, Z3, Z3         // hi
	VCMPPD    $0x1d, Z29, Z3, K1 // hi ≥ m (ordered)
	VPCOMPRESSD Y18, K1, (DI)
	KMOVB     K1, BX
	POPCNTL   BX, BX
	LEAQ      (DI)(BX*4), DI
	VPADDD    Y17, Y18, Y18
	ADDQ      $8, AX
	JMP       loop

done:
	SUBQ R12, DI
	SHRQ $2, DI
	MOVQ DI, ret+56(FP)
	VZEROUPPER
	RET
