AVX-512 row sum, 460 bytes of machine code, 0 micro-kernel calls per tile, 0 values held in registers, next row prefetched for 1 accesses:
  0000  push rbx
  0001  push rbp
  0002  push r12
  0004  push r13
  0006  push r14
  0008  push r15
  000a  mov rax, rsp
  000d  and rsp, 0xffffffffffffffc0
  0011  sub rsp, 0x40
  0015  mov [rsp], rax
  0019  mov [rsp+8], rsi
  001e  mov [rsp+0x10], rdx
  0023  mov r12, [rdi]
  0026  mov r13, [rdi+8]
  002a  mov rax, [rsp+8]
  002f  cmp rax, [rsp+0x10]
  0034  jge 0x1ba
  003a  mov [rsp+0x18], rax
  003f  mov rsi, r12
  0042  mov rdi, r13
  0045  mov rax, [rsp+0x18]
  004a  imul rax, 0x4010
  0051  add rsi, rax
  0054  mov rax, [rsp+0x18]
  0059  imul rax, 4
  005d  add rdi, rax
  0060  vxorpd xmm8, xmm8, xmm8
  0065  xor edx, edx
  0067  mov r8, 2
  0071  vpxord zmm0, zmm0, zmm0
  0077  vpxord zmm1, zmm1, zmm1
  007d  vpxord zmm2, zmm2, zmm2
  0083  vpxord zmm3, zmm3, zmm3
  0089  mov r9, 0x20
  0093  vaddps zmm0, zmm0, [rsi+rdx*4]
  009a  vaddps zmm1, zmm1, [rsi+rdx*4+0x40]
  00a2  vaddps zmm2, zmm2, [rsi+rdx*4+0x80]
  00aa  vaddps zmm3, zmm3, [rsi+rdx*4+0xc0]
  00b2  prefetcht0 [rsi+rdx*4+0x4010]
  00ba  prefetcht0 [rsi+rdx*4+0x4050]
  00c2  prefetcht0 [rsi+rdx*4+0x4090]
  00ca  prefetcht0 [rsi+rdx*4+0x40d0]
  00d2  add rdx, 0x40
  00d6  sub r9, 1
  00da  jne short 0x93
  00dc  vaddps zmm0, zmm0, zmm1
  00e2  vaddps zmm2, zmm2, zmm3
  00e8  vaddps zmm0, zmm0, zmm2
  00ee  vextractf64x4 ymm1, zmm0, 1
  00f5  vaddps ymm0, ymm0, ymm1
  00f9  vextractf128 xmm1, ymm0, 1
  00ff  vaddps xmm0, xmm0, xmm1
  0103  vmovhlps xmm1, xmm0, xmm0
  0107  vaddps xmm0, xmm0, xmm1
  010b  vmovshdup xmm1, xmm0
  010f  vaddss xmm0, xmm0, xmm1
  0113  vcvtss2sd xmm0, xmm0, xmm0
  0117  vaddsd xmm8, xmm8, xmm0
  011b  sub r8, 1
  011f  jne 0x71
  0125  vpxord zmm0, zmm0, zmm0
  012b  vpxord zmm1, zmm1, zmm1
  0131  vpxord zmm2, zmm2, zmm2
  0137  vpxord zmm3, zmm3, zmm3
  013d  mov eax, 0xf
  0142  kmovw k1, eax
  0146  vmovups zmm4{k1}{z}, [rsi+rdx*4]
  014d  vaddps zmm0, zmm0, zmm4
  0153  add rdx, 4
  0157  vaddps zmm0, zmm0, zmm1
  015d  vaddps zmm2, zmm2, zmm3
  0163  vaddps zmm0, zmm0, zmm2
  0169  vextractf64x4 ymm1, zmm0, 1
  0170  vaddps ymm0, ymm0, ymm1
  0174  vextractf128 xmm1, ymm0, 1
  017a  vaddps xmm0, xmm0, xmm1
  017e  vmovhlps xmm1, xmm0, xmm0
  0182  vaddps xmm0, xmm0, xmm1
  0186  vmovshdup xmm1, xmm0
  018a  vaddss xmm0, xmm0, xmm1
  018e  vcvtss2sd xmm0, xmm0, xmm0
  0192  vaddsd xmm8, xmm8, xmm0
  0196  vcvtsd2ss xmm0, xmm8, xmm8
  019b  vmovss [rdi], xmm0
  019f  mov rax, [rsp+0x18]
  01a4  add rax, 1
  01aa  mov [rsp+0x18], rax
  01af  cmp rax, [rsp+0x10]
  01b4  jl 0x3f
  01ba  mov rsp, [rsp]
  01be  pop r15
  01c0  pop r14
  01c2  pop r13
  01c4  pop r12
  01c6  pop rbp
  01c7  pop rbx
  01c8  vzeroupper
  01cb  ret
