AVX-512 row kernel, 876 bytes of machine code, 0 micro-kernel calls per tile, 0 values held in registers, next row prefetched for 1 accesses:
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
  0041  jge 0x356
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
  0095  vpxord zmm0, zmm0, zmm0
  009b  vpxord zmm1, zmm1, zmm1
  00a1  vpxord zmm2, zmm2, zmm2
  00a7  vpxord zmm3, zmm3, zmm3
  00ad  lea r15, [rbx+0x800]
  00b4  lea r14, [r15-0x40]
  00b8  cmp rbx, r14
  00bb  jg short 0x11d
  00bd  vmovups zmm4, [rdx+rbx*4]
  00c4  vaddps zmm0, zmm0, zmm4
  00ca  vmovups zmm4, [rdx+rbx*4+0x40]
  00d2  vaddps zmm1, zmm1, zmm4
  00d8  vmovups zmm4, [rdx+rbx*4+0x80]
  00e0  vaddps zmm2, zmm2, zmm4
  00e6  vmovups zmm4, [rdx+rbx*4+0xc0]
  00ee  vaddps zmm3, zmm3, zmm4
  00f4  prefetcht0 [rdx+rbx*4+0x4010]
  00fc  prefetcht0 [rdx+rbx*4+0x4050]
  0104  prefetcht0 [rdx+rbx*4+0x4090]
  010c  prefetcht0 [rdx+rbx*4+0x40d0]
  0114  add rbx, 0x40
  0118  cmp rbx, r14
  011b  jle short 0xbd
  011d  lea r14, [r15-0x10]
  0121  cmp rbx, r14
  0124  jg short 0x13c
  0126  vmovups zmm4, [rdx+rbx*4]
  012d  vaddps zmm0, zmm0, zmm4
  0133  add rbx, 0x10
  0137  cmp rbx, r14
  013a  jle short 0x126
  013c  cmp rbx, r15
  013f  jge short 0x17a
  0141  mov rcx, r15
  0144  sub rcx, rbx
  0147  mov eax, 1
  014c  shl eax, cl
  014e  sub eax, 1
  0153  kmovw k1, eax
  0157  vmovups zmm4{k1}{z}, [rdx+rbx*4]
  015e  vbroadcastss zmm6, [0x368]
  0168  vmovaps zmm5, zmm6
  016e  vmovaps zmm5{k1}, zmm4
  0174  vaddps zmm0, zmm0, zmm5
  017a  vaddps zmm0, zmm0, zmm1
  0180  vaddps zmm2, zmm2, zmm3
  0186  vaddps zmm0, zmm0, zmm2
  018c  vshuff32x4 zmm4, zmm0, zmm0, 0x4e
  0193  vaddps zmm0, zmm0, zmm4
  0199  vshuff32x4 zmm4, zmm0, zmm0, 0xb1
  01a0  vaddps zmm0, zmm0, zmm4
  01a6  vpermilps zmm4, zmm0, 0x4e
  01ad  vaddps zmm0, zmm0, zmm4
  01b3  vpermilps zmm4, zmm0, 0xb1
  01ba  vaddps zmm0, zmm0, zmm4
  01c0  vcvtss2sd xmm0, xmm0, xmm0
  01c6  vaddsd xmm0, xmm0, [rsp+0x50]
  01ce  vmovsd [rsp+0x50], xmm0
  01d6  sub qword ptr [rsp+0x18], 1
  01dc  jne 0x95
  01e2  vpxord zmm0, zmm0, zmm0
  01e8  vpxord zmm1, zmm1, zmm1
  01ee  vpxord zmm2, zmm2, zmm2
  01f4  vpxord zmm3, zmm3, zmm3
  01fa  lea r15, [rbx+4]
  01fe  lea r14, [r15-0x40]
  0202  cmp rbx, r14
  0205  jg short 0x267
  0207  vmovups zmm4, [rdx+rbx*4]
  020e  vaddps zmm0, zmm0, zmm4
  0214  vmovups zmm4, [rdx+rbx*4+0x40]
  021c  vaddps zmm1, zmm1, zmm4
  0222  vmovups zmm4, [rdx+rbx*4+0x80]
  022a  vaddps zmm2, zmm2, zmm4
  0230  vmovups zmm4, [rdx+rbx*4+0xc0]
  0238  vaddps zmm3, zmm3, zmm4
  023e  prefetcht0 [rdx+rbx*4+0x4010]
  0246  prefetcht0 [rdx+rbx*4+0x4050]
  024e  prefetcht0 [rdx+rbx*4+0x4090]
  0256  prefetcht0 [rdx+rbx*4+0x40d0]
  025e  add rbx, 0x40
  0262  cmp rbx, r14
  0265  jle short 0x207
  0267  lea r14, [r15-0x10]
  026b  cmp rbx, r14
  026e  jg short 0x286
  0270  vmovups zmm4, [rdx+rbx*4]
  0277  vaddps zmm0, zmm0, zmm4
  027d  add rbx, 0x10
  0281  cmp rbx, r14
  0284  jle short 0x270
  0286  cmp rbx, r15
  0289  jge short 0x2c4
  028b  mov rcx, r15
  028e  sub rcx, rbx
  0291  mov eax, 1
  0296  shl eax, cl
  0298  sub eax, 1
  029d  kmovw k1, eax
  02a1  vmovups zmm4{k1}{z}, [rdx+rbx*4]
  02a8  vbroadcastss zmm6, [0x368]
  02b2  vmovaps zmm5, zmm6
  02b8  vmovaps zmm5{k1}, zmm4
  02be  vaddps zmm0, zmm0, zmm5
  02c4  vaddps zmm0, zmm0, zmm1
  02ca  vaddps zmm2, zmm2, zmm3
  02d0  vaddps zmm0, zmm0, zmm2
  02d6  vshuff32x4 zmm4, zmm0, zmm0, 0x4e
  02dd  vaddps zmm0, zmm0, zmm4
  02e3  vshuff32x4 zmm4, zmm0, zmm0, 0xb1
  02ea  vaddps zmm0, zmm0, zmm4
  02f0  vpermilps zmm4, zmm0, 0x4e
  02f7  vaddps zmm0, zmm0, zmm4
  02fd  vpermilps zmm4, zmm0, 0xb1
  0304  vaddps zmm0, zmm0, zmm4
  030a  vcvtss2sd xmm0, xmm0, xmm0
  0310  vaddsd xmm0, xmm0, [rsp+0x50]
  0318  vmovsd [rsp+0x50], xmm0
  0320  vcvtsd2ss xmm0, xmm0, [rsp+0x50]
  0326  vmovss [rsp+0x48], xmm0
  032c  mov rax, [rsp+0x40]
  0331  vmovss xmm0, [rsp+0x48]
  0337  vmovss [rax], xmm0
  033b  mov rax, [rsp+0x20]
  0340  add rax, 1
  0346  mov [rsp+0x20], rax
  034b  cmp rax, [rsp+0x10]
  0350  jl 0x4c
  0356  mov rsp, [rsp]
  035a  pop r15
  035c  pop r14
  035e  pop r13
  0360  pop r12
  0362  pop rbp
  0363  pop rbx
  0364  vzeroupper
  0367  ret
  constants (4 bytes):
    00000000
