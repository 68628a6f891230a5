AVX2 row kernel, 764 bytes of machine code, 0 micro-kernel calls per tile, 0 values held in registers, next row prefetched for 1 accesses:
  0000  push rbx
  0001  push rbp
  0002  push r12
  0004  push r13
  0006  push r14
  0008  push r15
  000a  mov rax, rsp
  000d  and rsp, 0xffffffffffffffc0
  0011  sub rsp, 0x80
  0018  mov [rsp], rax
  001c  mov [rsp+8], rsi
  0021  mov [rsp+0x10], rdx
  0026  mov rax, [rdi]
  0029  mov [rsp+0x28], rax
  002e  mov rax, [rdi+8]
  0032  mov [rsp+0x30], rax
  0037  mov rax, [rsp+8]
  003c  cmp rax, [rsp+0x10]
  0041  jge 0x2a6
  0047  mov [rsp+0x20], rax
  004c  mov rcx, [rsp+0x28]
  0051  mov rax, [rsp+0x20]
  0056  imul rax, 0x4010
  005d  add rcx, rax
  0060  mov [rsp+0x38], rcx
  0065  mov rcx, [rsp+0x30]
  006a  mov rax, [rsp+0x20]
  006f  imul rax, 4
  0073  add rcx, rax
  0076  mov [rsp+0x40], rcx
  007b  mov qword ptr [rsp+0x50], 0
  0084  mov rdx, [rsp+0x38]
  0089  xor rbx, rbx
  008c  mov qword ptr [rsp+0x18], 2
  0095  vpxor ymm0, ymm0, ymm0
  0099  vpxor ymm1, ymm1, ymm1
  009d  vpxor ymm2, ymm2, ymm2
  00a1  vpxor ymm3, ymm3, ymm3
  00a5  lea r15, [rbx+0x800]
  00ac  lea r14, [r15-0x20]
  00b0  cmp rbx, r14
  00b3  jg short 0xf5
  00b5  vmovups ymm4, [rdx+rbx*4]
  00ba  vaddps ymm0, ymm0, ymm4
  00be  vmovups ymm4, [rdx+rbx*4+0x20]
  00c4  vaddps ymm1, ymm1, ymm4
  00c8  vmovups ymm4, [rdx+rbx*4+0x40]
  00ce  vaddps ymm2, ymm2, ymm4
  00d2  vmovups ymm4, [rdx+rbx*4+0x60]
  00d8  vaddps ymm3, ymm3, ymm4
  00dc  prefetcht0 [rdx+rbx*4+0x4010]
  00e4  prefetcht0 [rdx+rbx*4+0x4050]
  00ec  add rbx, 0x20
  00f0  cmp rbx, r14
  00f3  jle short 0xb5
  00f5  lea r14, [r15-8]
  00f9  cmp rbx, r14
  00fc  jg short 0x110
  00fe  vmovups ymm4, [rdx+rbx*4]
  0103  vaddps ymm0, ymm0, ymm4
  0107  add rbx, 8
  010b  cmp rbx, r14
  010e  jle short 0xfe
  0110  cmp rbx, r15
  0113  jge short 0x144
  0115  mov rcx, r15
  0118  sub rcx, rbx
  011b  lea rax, [0x2bc]
  0122  neg rcx
  0125  vmovdqu ymm15, [rax+rcx*4+0x20]
  012b  vmaskmovps ymm4, ymm15, [rdx+rbx*4]
  0131  vbroadcastss ymm6, [0x2b8]
  013a  vblendvps ymm5, ymm6, ymm4, ymm15
  0140  vaddps ymm0, ymm0, ymm5
  0144  vaddps ymm0, ymm0, ymm1
  0148  vaddps ymm2, ymm2, ymm3
  014c  vaddps ymm0, ymm0, ymm2
  0150  vperm2f128 ymm4, ymm0, ymm0, 1
  0156  vaddps ymm0, ymm0, ymm4
  015a  vpermilps ymm4, ymm0, 0x4e
  0160  vaddps ymm0, ymm0, ymm4
  0164  vpermilps ymm4, ymm0, 0xb1
  016a  vaddps ymm0, ymm0, ymm4
  016e  vcvtss2sd xmm0, xmm0, xmm0
  0172  vaddsd xmm0, xmm0, [rsp+0x50]
  0178  vmovsd [rsp+0x50], xmm0
  017e  sub qword ptr [rsp+0x18], 1
  0184  jne 0x95
  018a  vpxor ymm0, ymm0, ymm0
  018e  vpxor ymm1, ymm1, ymm1
  0192  vpxor ymm2, ymm2, ymm2
  0196  vpxor ymm3, ymm3, ymm3
  019a  lea r15, [rbx+4]
  019e  lea r14, [r15-0x20]
  01a2  cmp rbx, r14
  01a5  jg short 0x1e7
  01a7  vmovups ymm4, [rdx+rbx*4]
  01ac  vaddps ymm0, ymm0, ymm4
  01b0  vmovups ymm4, [rdx+rbx*4+0x20]
  01b6  vaddps ymm1, ymm1, ymm4
  01ba  vmovups ymm4, [rdx+rbx*4+0x40]
  01c0  vaddps ymm2, ymm2, ymm4
  01c4  vmovups ymm4, [rdx+rbx*4+0x60]
  01ca  vaddps ymm3, ymm3, ymm4
  01ce  prefetcht0 [rdx+rbx*4+0x4010]
  01d6  prefetcht0 [rdx+rbx*4+0x4050]
  01de  add rbx, 0x20
  01e2  cmp rbx, r14
  01e5  jle short 0x1a7
  01e7  lea r14, [r15-8]
  01eb  cmp rbx, r14
  01ee  jg short 0x202
  01f0  vmovups ymm4, [rdx+rbx*4]
  01f5  vaddps ymm0, ymm0, ymm4
  01f9  add rbx, 8
  01fd  cmp rbx, r14
  0200  jle short 0x1f0
  0202  cmp rbx, r15
  0205  jge short 0x236
  0207  mov rcx, r15
  020a  sub rcx, rbx
  020d  lea rax, [0x2bc]
  0214  neg rcx
  0217  vmovdqu ymm15, [rax+rcx*4+0x20]
  021d  vmaskmovps ymm4, ymm15, [rdx+rbx*4]
  0223  vbroadcastss ymm6, [0x2b8]
  022c  vblendvps ymm5, ymm6, ymm4, ymm15
  0232  vaddps ymm0, ymm0, ymm5
  0236  vaddps ymm0, ymm0, ymm1
  023a  vaddps ymm2, ymm2, ymm3
  023e  vaddps ymm0, ymm0, ymm2
  0242  vperm2f128 ymm4, ymm0, ymm0, 1
  0248  vaddps ymm0, ymm0, ymm4
  024c  vpermilps ymm4, ymm0, 0x4e
  0252  vaddps ymm0, ymm0, ymm4
  0256  vpermilps ymm4, ymm0, 0xb1
  025c  vaddps ymm0, ymm0, ymm4
  0260  vcvtss2sd xmm0, xmm0, xmm0
  0264  vaddsd xmm0, xmm0, [rsp+0x50]
  026a  vmovsd [rsp+0x50], xmm0
  0270  vcvtsd2ss xmm0, xmm0, [rsp+0x50]
  0276  vmovss [rsp+0x48], xmm0
  027c  mov rax, [rsp+0x40]
  0281  vmovss xmm0, [rsp+0x48]
  0287  vmovss [rax], xmm0
  028b  mov rax, [rsp+0x20]
  0290  add rax, 1
  0296  mov [rsp+0x20], rax
  029b  cmp rax, [rsp+0x10]
  02a0  jl 0x4c
  02a6  mov rsp, [rsp]
  02aa  pop r15
  02ac  pop r14
  02ae  pop r13
  02b0  pop r12
  02b2  pop rbp
  02b3  pop rbx
  02b4  vzeroupper
  02b7  ret
  constants (68 bytes):
    00000000 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff
    ffffffff 00000000 00000000 00000000 00000000 00000000 00000000 00000000
    00000000
