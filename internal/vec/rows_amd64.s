#include "textflag.h"

// func dots4AVX2(q *int8, m *byte, width, n int, bias int32, out *int32)
//
// out[r] = Σ_i q[i]·u(r, i) − bias for r < n, u(r, i) being the 4-bit
// code of dimension i of row r (see Rows for the layout: a row is width/2
// bytes, byte 32c+j holding dimension 64c+j in its low nibble and 64c+32+j
// in its high one). width is a positive multiple of 64. The
// products are summed pairwise into 16 bits (VPMADDUBSW: |q| ≤ 127, u ≤ 15,
// so a pair is at most 3,810 and eight pairs, 256 dimensions, still fit),
// then widened into 32 bits after every 256 dimensions. Four rows at a
// time, prefetching the four rows eight ahead: the hardware's prefetcher
// left the 100,000-row scan a third slower (BenchmarkRowsDots).
TEXT ·dots4AVX2(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ m+8(FP), DI
	MOVQ width+16(FP), CX
	MOVQ n+24(FP), DX
	MOVL bias+32(FP), AX
	MOVQ out+40(FP), R8
	SHRQ $1, CX                // bytes per row
	MOVL $0x0f0f0f0f, R9
	MOVD R9, X15
	VPBROADCASTD X15, Y15      // the nibble mask
	MOVL $0x00010001, R9
	MOVD R9, X14
	VPBROADCASTD X14, Y14      // 16-bit ones
	MOVD AX, X7
	VPBROADCASTD X7, X7        // the bias, 4 times
	CMPQ DX, $4
	JLT  tail

quad:
	VPXOR Y8, Y8, Y8
	VPXOR Y9, Y9, Y9
	VPXOR Y10, Y10, Y10
	VPXOR Y11, Y11, Y11
	LEAQ  (DI)(CX*1), R11
	LEAQ  (DI)(CX*2), R12
	LEAQ  (R11)(CX*2), R13
	LEAQ  (DI)(CX*8), R14 // the rows two quads ahead, prefetched as these are read
	XORQ  AX, AX
	MOVQ  SI, BX

qblock:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	LEAQ  128(AX), R9          // end of this block of 256 dimensions
	CMPQ  R9, CX
	CMOVQGT CX, R9

qcol:
	PREFETCHT0 (R14)(AX*1)
	LEAQ       (R14)(CX*1), R10
	PREFETCHT0 (R10)(AX*1)
	LEAQ       (R10)(CX*1), R10
	PREFETCHT0 (R10)(AX*1)
	LEAQ       (R10)(CX*1), R10
	PREFETCHT0 (R10)(AX*1)
	VMOVDQU (BX), Y12          // the query's low-nibble dimensions
	VMOVDQU 32(BX), Y13        // and its high-nibble ones
	VMOVDQU    (DI)(AX*1), Y4
	VPSRLW     $4, Y4, Y5
	VPAND      Y15, Y4, Y4
	VPAND      Y15, Y5, Y5
	VPMADDUBSW Y12, Y4, Y4
	VPMADDUBSW Y13, Y5, Y5
	VPADDW     Y4, Y0, Y0
	VPADDW     Y5, Y0, Y0
	VMOVDQU    (R11)(AX*1), Y4
	VPSRLW     $4, Y4, Y5
	VPAND      Y15, Y4, Y4
	VPAND      Y15, Y5, Y5
	VPMADDUBSW Y12, Y4, Y4
	VPMADDUBSW Y13, Y5, Y5
	VPADDW     Y4, Y1, Y1
	VPADDW     Y5, Y1, Y1
	VMOVDQU    (R12)(AX*1), Y4
	VPSRLW     $4, Y4, Y5
	VPAND      Y15, Y4, Y4
	VPAND      Y15, Y5, Y5
	VPMADDUBSW Y12, Y4, Y4
	VPMADDUBSW Y13, Y5, Y5
	VPADDW     Y4, Y2, Y2
	VPADDW     Y5, Y2, Y2
	VMOVDQU    (R13)(AX*1), Y4
	VPSRLW     $4, Y4, Y5
	VPAND      Y15, Y4, Y4
	VPAND      Y15, Y5, Y5
	VPMADDUBSW Y12, Y4, Y4
	VPMADDUBSW Y13, Y5, Y5
	VPADDW     Y4, Y3, Y3
	VPADDW     Y5, Y3, Y3
	ADDQ $32, AX
	ADDQ $64, BX
	CMPQ AX, R9
	JLT  qcol
	VPMADDWD Y14, Y0, Y0
	VPMADDWD Y14, Y1, Y1
	VPMADDWD Y14, Y2, Y2
	VPMADDWD Y14, Y3, Y3
	VPADDD   Y0, Y8, Y8
	VPADDD   Y1, Y9, Y9
	VPADDD   Y2, Y10, Y10
	VPADDD   Y3, Y11, Y11
	CMPQ     AX, CX
	JLT      qblock

	VPHADDD      Y9, Y8, Y8
	VPHADDD      Y11, Y10, Y10
	VPHADDD      Y10, Y8, Y8
	VEXTRACTI128 $1, Y8, X1
	VPADDD       X1, X8, X8
	VPSUBD       X7, X8, X8
	VMOVDQU      X8, (R8)
	ADDQ         $16, R8
	LEAQ         (R13)(CX*1), DI
	SUBQ         $4, DX
	CMPQ         DX, $4
	JGE          quad

tail:
	TESTQ DX, DX
	JEQ   done

one:
	VPXOR Y8, Y8, Y8
	XORQ  AX, AX
	MOVQ  SI, BX

oblock:
	VPXOR Y0, Y0, Y0
	LEAQ  128(AX), R9
	CMPQ  R9, CX
	CMOVQGT CX, R9

ocol:
	VMOVDQU (BX), Y12
	VMOVDQU 32(BX), Y13
	VMOVDQU    (DI)(AX*1), Y4
	VPSRLW     $4, Y4, Y5
	VPAND      Y15, Y4, Y4
	VPAND      Y15, Y5, Y5
	VPMADDUBSW Y12, Y4, Y4
	VPMADDUBSW Y13, Y5, Y5
	VPADDW     Y4, Y0, Y0
	VPADDW     Y5, Y0, Y0
	ADDQ $32, AX
	ADDQ $64, BX
	CMPQ AX, R9
	JLT  ocol
	VPMADDWD Y14, Y0, Y0
	VPADDD   Y0, Y8, Y8
	CMPQ     AX, CX
	JLT      oblock

	VEXTRACTI128 $1, Y8, X1
	VPADDD       X1, X8, X8
	VPSHUFD      $0x4E, X8, X1
	VPADDD       X1, X8, X8
	VPSHUFD      $0xB1, X8, X1
	VPADDD       X1, X8, X8
	VPSUBD       X7, X8, X8
	VMOVD        X8, (R8)
	ADDQ         $4, R8
	ADDQ         CX, DI
	DECQ         DX
	JNE          one

done:
	VZEROUPPER
	RET

// func dots4VNNI(q *int8, m *byte, width, n int, bias int32, out *int32)
//
// dots4AVX2 with AVX-512 VNNI (VPDPBUSD multiplies the unsigned codes by
// the signed query and adds four products at a time into 32 bits). It
// reads a row 64 bytes at a time, so q is in the order of those bytes: for
// each 64 bytes of a row, the query values of their low nibbles (64), then
// of their high nibbles (64). width is a positive multiple of 128. Four
// rows at a time, prefetching as dots4AVX2 does.
TEXT ·dots4VNNI(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ m+8(FP), DI
	MOVQ width+16(FP), CX
	MOVQ n+24(FP), DX
	MOVL bias+32(FP), AX
	MOVQ out+40(FP), R8
	SHRQ $1, CX
	MOVL $0x0f0f0f0f, R9
	VPBROADCASTD R9, Z15
	MOVD AX, X7
	VPBROADCASTD X7, X7
	CMPQ DX, $4
	JLT  tail

quad:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27
	LEAQ  (DI)(CX*1), R11
	LEAQ  (DI)(CX*2), R12
	LEAQ  (R11)(CX*2), R13
	LEAQ  (DI)(CX*8), R14 // the rows two quads ahead, prefetched as these are read
	XORQ  AX, AX
	MOVQ  SI, BX

qcol:
	PREFETCHT0 (R14)(AX*1)
	LEAQ       (R14)(CX*1), R10
	PREFETCHT0 (R10)(AX*1)
	LEAQ       (R10)(CX*1), R10
	PREFETCHT0 (R10)(AX*1)
	LEAQ       (R10)(CX*1), R10
	PREFETCHT0 (R10)(AX*1)
	VMOVDQU64 (BX), Z12
	VMOVDQU64 64(BX), Z13
	VMOVDQU64 (DI)(AX*1), Z16
	VPSRLW    $4, Z16, Z17
	VPANDD    Z15, Z16, Z16
	VPANDD    Z15, Z17, Z17
	VPDPBUSD  Z12, Z16, Z0
	VPDPBUSD  Z13, Z17, Z24
	VMOVDQU64 (R11)(AX*1), Z18
	VPSRLW    $4, Z18, Z19
	VPANDD    Z15, Z18, Z18
	VPANDD    Z15, Z19, Z19
	VPDPBUSD  Z12, Z18, Z1
	VPDPBUSD  Z13, Z19, Z25
	VMOVDQU64 (R12)(AX*1), Z20
	VPSRLW    $4, Z20, Z21
	VPANDD    Z15, Z20, Z20
	VPANDD    Z15, Z21, Z21
	VPDPBUSD  Z12, Z20, Z2
	VPDPBUSD  Z13, Z21, Z26
	VMOVDQU64 (R13)(AX*1), Z22
	VPSRLW    $4, Z22, Z23
	VPANDD    Z15, Z22, Z22
	VPANDD    Z15, Z23, Z23
	VPDPBUSD  Z12, Z22, Z3
	VPDPBUSD  Z13, Z23, Z27
	ADDQ $64, AX
	ADDQ $128, BX
	CMPQ AX, CX
	JLT  qcol

	VPADDD        Z24, Z0, Z0
	VPADDD        Z25, Z1, Z1
	VPADDD        Z26, Z2, Z2
	VPADDD        Z27, Z3, Z3
	VEXTRACTI64X4 $1, Z0, Y4
	VPADDD        Y4, Y0, Y0
	VEXTRACTI64X4 $1, Z1, Y4
	VPADDD        Y4, Y1, Y1
	VEXTRACTI64X4 $1, Z2, Y4
	VPADDD        Y4, Y2, Y2
	VEXTRACTI64X4 $1, Z3, Y4
	VPADDD        Y4, Y3, Y3
	VPHADDD       Y1, Y0, Y0
	VPHADDD       Y3, Y2, Y2
	VPHADDD       Y2, Y0, Y0
	VEXTRACTI128  $1, Y0, X1
	VPADDD        X1, X0, X0
	VPSUBD        X7, X0, X0
	VMOVDQU       X0, (R8)
	ADDQ          $16, R8
	LEAQ          (R13)(CX*1), DI
	SUBQ          $4, DX
	CMPQ          DX, $4
	JGE           quad

tail:
	TESTQ DX, DX
	JEQ   done

one:
	VPXORD Z0, Z0, Z0
	XORQ  AX, AX
	MOVQ  SI, BX

ocol:
	VMOVDQU64 (BX), Z12
	VMOVDQU64 64(BX), Z13
	VMOVDQU64 (DI)(AX*1), Z4
	VPSRLW    $4, Z4, Z5
	VPANDD    Z15, Z4, Z4
	VPANDD    Z15, Z5, Z5
	VPDPBUSD  Z12, Z4, Z0
	VPDPBUSD  Z13, Z5, Z0
	ADDQ $64, AX
	ADDQ $128, BX
	CMPQ AX, CX
	JLT  ocol

	VEXTRACTI64X4 $1, Z0, Y4
	VPADDD        Y4, Y0, Y0
	VEXTRACTI128  $1, Y0, X1
	VPADDD        X1, X0, X0
	VPSHUFD       $0x4E, X0, X1
	VPADDD        X1, X0, X0
	VPSHUFD       $0xB1, X0, X1
	VPADDD        X1, X0, X0
	VPSUBD        X7, X0, X0
	VMOVD         X0, (R8)
	ADDQ          $4, R8
	ADDQ          CX, DI
	DECQ          DX
	JNE           one

done:
	VZEROUPPER
	RET
