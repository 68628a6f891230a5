AVX2 row sum, 446 bytes of machine code, 0 micro-kernel calls per tile, 0 values held in registers, next row prefetched for 1 accesses:
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
  0034  jge 0x16c
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
  0071  vpxor ymm0, ymm0, ymm0
  0075  vpxor ymm1, ymm1, ymm1
  0079  vpxor ymm2, ymm2, ymm2
  007d  vpxor ymm3, ymm3, ymm3
  0081  mov r9, 0x40
  008b  vaddps ymm0, ymm0, [rsi+rdx*4]
  0090  vaddps ymm1, ymm1, [rsi+rdx*4+0x20]
  0096  vaddps ymm2, ymm2, [rsi+rdx*4+0x40]
  009c  vaddps ymm3, ymm3, [rsi+rdx*4+0x60]
  00a2  prefetcht0 [rsi+rdx*4+0x4010]
  00aa  prefetcht0 [rsi+rdx*4+0x4050]
  00b2  add rdx, 0x20
  00b6  sub r9, 1
  00ba  jne short 0x8b
  00bc  vaddps ymm0, ymm0, ymm1
  00c0  vaddps ymm2, ymm2, ymm3
  00c4  vaddps ymm0, ymm0, ymm2
  00c8  vextractf128 xmm1, ymm0, 1
  00ce  vaddps xmm0, xmm0, xmm1
  00d2  vmovhlps xmm1, xmm0, xmm0
  00d6  vaddps xmm0, xmm0, xmm1
  00da  vmovshdup xmm1, xmm0
  00de  vaddss xmm0, xmm0, xmm1
  00e2  vcvtss2sd xmm0, xmm0, xmm0
  00e6  vaddsd xmm8, xmm8, xmm0
  00ea  sub r8, 1
  00ee  jne short 0x71
  00f0  vpxor ymm0, ymm0, ymm0
  00f4  vpxor ymm1, ymm1, ymm1
  00f8  vpxor ymm2, ymm2, ymm2
  00fc  vpxor ymm3, ymm3, ymm3
  0100  lea rax, [0x17e]
  0107  vmovdqu ymm5, [rax+0x10]
  010c  vmaskmovps ymm4, ymm5, [rsi+rdx*4]
  0112  vaddps ymm0, ymm0, ymm4
  0116  add rdx, 4
  011a  vaddps ymm0, ymm0, ymm1
  011e  vaddps ymm2, ymm2, ymm3
  0122  vaddps ymm0, ymm0, ymm2
  0126  vextractf128 xmm1, ymm0, 1
  012c  vaddps xmm0, xmm0, xmm1
  0130  vmovhlps xmm1, xmm0, xmm0
  0134  vaddps xmm0, xmm0, xmm1
  0138  vmovshdup xmm1, xmm0
  013c  vaddss xmm0, xmm0, xmm1
  0140  vcvtss2sd xmm0, xmm0, xmm0
  0144  vaddsd xmm8, xmm8, xmm0
  0148  vcvtsd2ss xmm0, xmm8, xmm8
  014d  vmovss [rdi], xmm0
  0151  mov rax, [rsp+0x18]
  0156  add rax, 1
  015c  mov [rsp+0x18], rax
  0161  cmp rax, [rsp+0x10]
  0166  jl 0x3f
  016c  mov rsp, [rsp]
  0170  pop r15
  0172  pop r14
  0174  pop r13
  0176  pop r12
  0178  pop rbp
  0179  pop rbx
  017a  vzeroupper
  017d  ret
  constants (64 bytes):
    ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff
    00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
