#include "textflag.h"

// func dotsInt8AVX2(q *int16, m *int8, dim, n int, out *int32)
//
// out[r] = Σ_i q[i]·m[r·dim+i] for r < n; dim is a positive multiple of 32.
// Each group of 16 int8 is sign-extended to int16 (VPMOVSXBW) and multiplied
// with the query's int16 pairwise into int32 (VPMADDWD); two accumulators.
TEXT ·dotsInt8AVX2(SB), NOSPLIT, $0-40
	MOVQ q+0(FP), SI
	MOVQ m+8(FP), DI
	MOVQ dim+16(FP), CX
	MOVQ n+24(FP), DX
	MOVQ out+32(FP), R8
	TESTQ DX, DX
	JEQ  done

row:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	XORQ  AX, AX
	MOVQ  SI, BX

col:
	VPMOVSXBW (DI)(AX*1), Y2
	VPMADDWD  (BX), Y2, Y2
	VPADDD    Y2, Y0, Y0
	VPMOVSXBW 16(DI)(AX*1), Y3
	VPMADDWD  32(BX), Y3, Y3
	VPADDD    Y3, Y1, Y1
	ADDQ      $32, AX
	ADDQ      $64, BX
	CMPQ      AX, CX
	JLT       col

	VPADDD       Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0x4E, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xB1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, (R8)
	ADDQ         $4, R8
	ADDQ         CX, DI
	DECQ         DX
	JNE          row

done:
	VZEROUPPER
	RET
