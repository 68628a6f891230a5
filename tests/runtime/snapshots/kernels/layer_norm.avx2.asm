AVX2 row kernel, 1611 bytes of machine code, 0 micro-kernel calls per tile, 3 values held in registers:
  0000  push rbx
  0001  push rbp
  0002  push r12
  0004  push r13
  0006  push r14
  0008  push r15
  000a  mov rax, rsp
  000d  and rsp, 0xffffffffffffffc0
  0011  sub rsp, 0x100
  0018  mov [rsp], rax
  001c  mov [rsp+8], rsi
  0021  mov [rsp+0x10], rdx
  0026  mov rax, [rdi]
  0029  mov [rsp+0x28], rax
  002e  mov rax, [rdi+8]
  0032  mov [rsp+0x30], rax
  0037  mov rax, [rdi+0x10]
  003b  mov [rsp+0x38], rax
  0040  mov rax, [rdi+0x18]
  0044  mov [rsp+0x40], rax
  0049  mov rax, [rsp+8]
  004e  cmp rax, [rsp+0x10]
  0053  jge 0x5e9
  0059  mov [rsp+0x20], rax
  005e  mov rcx, [rsp+0x28]
  0063  mov rax, [rsp+0x20]
  0068  imul rax, 0xfa0
  006f  add rcx, rax
  0072  mov [rsp+0x48], rcx
  0077  mov rcx, [rsp+0x30]
  007c  mov [rsp+0x50], rcx
  0081  mov rcx, [rsp+0x38]
  0086  mov [rsp+0x58], rcx
  008b  mov rcx, [rsp+0x40]
  0090  mov rax, [rsp+0x20]
  0095  imul rax, 0xfa0
  009c  add rcx, rax
  009f  mov [rsp+0x60], rcx
  00a4  mov qword ptr [rsp+0x70], 0
  00ad  mov rdx, [rsp+0x48]
  00b2  xor rbx, rbx
  00b5  vpxor ymm0, ymm0, ymm0
  00b9  vpxor ymm1, ymm1, ymm1
  00bd  vpxor ymm2, ymm2, ymm2
  00c1  vpxor ymm3, ymm3, ymm3
  00c5  lea r15, [rbx+0x3e8]
  00cc  lea r14, [r15-0x20]
  00d0  cmp rbx, r14
  00d3  jg short 0x105
  00d5  vmovups ymm4, [rdx+rbx*4]
  00da  vaddps ymm0, ymm0, ymm4
  00de  vmovups ymm4, [rdx+rbx*4+0x20]
  00e4  vaddps ymm1, ymm1, ymm4
  00e8  vmovups ymm4, [rdx+rbx*4+0x40]
  00ee  vaddps ymm2, ymm2, ymm4
  00f2  vmovups ymm4, [rdx+rbx*4+0x60]
  00f8  vaddps ymm3, ymm3, ymm4
  00fc  add rbx, 0x20
  0100  cmp rbx, r14
  0103  jle short 0xd5
  0105  lea r14, [r15-8]
  0109  cmp rbx, r14
  010c  jg short 0x120
  010e  vmovups ymm4, [rdx+rbx*4]
  0113  vaddps ymm0, ymm0, ymm4
  0117  add rbx, 8
  011b  cmp rbx, r14
  011e  jle short 0x10e
  0120  cmp rbx, r15
  0123  jge short 0x154
  0125  mov rcx, r15
  0128  sub rcx, rbx
  012b  lea rax, [0x60b]
  0132  neg rcx
  0135  vmovdqu ymm15, [rax+rcx*4+0x20]
  013b  vmaskmovps ymm4, ymm15, [rdx+rbx*4]
  0141  vbroadcastss ymm6, [0x5fb]
  014a  vblendvps ymm5, ymm6, ymm4, ymm15
  0150  vaddps ymm0, ymm0, ymm5
  0154  vaddps ymm0, ymm0, ymm1
  0158  vaddps ymm2, ymm2, ymm3
  015c  vaddps ymm0, ymm0, ymm2
  0160  vperm2f128 ymm4, ymm0, ymm0, 1
  0166  vaddps ymm0, ymm0, ymm4
  016a  vpermilps ymm4, ymm0, 0x4e
  0170  vaddps ymm0, ymm0, ymm4
  0174  vpermilps ymm4, ymm0, 0xb1
  017a  vaddps ymm0, ymm0, ymm4
  017e  vcvtss2sd xmm0, xmm0, xmm0
  0182  vaddsd xmm0, xmm0, [rsp+0x70]
  0188  vmovsd [rsp+0x70], xmm0
  018e  vcvtsd2ss xmm0, xmm0, [rsp+0x70]
  0194  vmovss [rsp+0x68], xmm0
  019a  xor rbx, rbx
  019d  vbroadcastss ymm0, [rsp+0x68]
  01a4  vbroadcastss ymm1, [0x5ff]
  01ad  vdivps ymm2, ymm0, ymm1
  01b1  vmovss [rsp+0x78], xmm2
  01b7  mov qword ptr [rsp+0x88], 0
  01c3  mov qword ptr [rsp+0xa0], 0
  01cf  mov rdx, [rsp+0x48]
  01d4  vbroadcastss ymm8, [rsp+0x78]
  01db  xor rbx, rbx
  01de  vpxor ymm0, ymm0, ymm0
  01e2  vpxor ymm1, ymm1, ymm1
  01e6  vpxor ymm2, ymm2, ymm2
  01ea  vpxor ymm3, ymm3, ymm3
  01ee  vpxor ymm4, ymm4, ymm4
  01f2  vpxor ymm5, ymm5, ymm5
  01f6  vpxor ymm6, ymm6, ymm6
  01fa  vpxor ymm7, ymm7, ymm7
  01fe  lea r15, [rbx+0x3e8]
  0205  lea r14, [r15-0x20]
  0209  cmp rbx, r14
  020c  jg short 0x27e
  020e  vmovups ymm9, [rdx+rbx*4]
  0213  vsubps ymm10, ymm9, ymm8
  0218  vaddps ymm0, ymm0, ymm10
  021d  vmulps ymm9, ymm10, ymm10
  0222  vaddps ymm4, ymm4, ymm9
  0227  vmovups ymm9, [rdx+rbx*4+0x20]
  022d  vsubps ymm10, ymm9, ymm8
  0232  vaddps ymm1, ymm1, ymm10
  0237  vmulps ymm9, ymm10, ymm10
  023c  vaddps ymm5, ymm5, ymm9
  0241  vmovups ymm9, [rdx+rbx*4+0x40]
  0247  vsubps ymm10, ymm9, ymm8
  024c  vaddps ymm2, ymm2, ymm10
  0251  vmulps ymm9, ymm10, ymm10
  0256  vaddps ymm6, ymm6, ymm9
  025b  vmovups ymm9, [rdx+rbx*4+0x60]
  0261  vsubps ymm10, ymm9, ymm8
  0266  vaddps ymm3, ymm3, ymm10
  026b  vmulps ymm9, ymm10, ymm10
  0270  vaddps ymm7, ymm7, ymm9
  0275  add rbx, 0x20
  0279  cmp rbx, r14
  027c  jle short 0x20e
  027e  lea r14, [r15-8]
  0282  cmp rbx, r14
  0285  jg short 0x2a9
  0287  vmovups ymm9, [rdx+rbx*4]
  028c  vsubps ymm10, ymm9, ymm8
  0291  vaddps ymm0, ymm0, ymm10
  0296  vmulps ymm9, ymm10, ymm10
  029b  vaddps ymm4, ymm4, ymm9
  02a0  add rbx, 8
  02a4  cmp rbx, r14
  02a7  jle short 0x287
  02a9  cmp rbx, r15
  02ac  jge short 0x2fc
  02ae  mov rcx, r15
  02b1  sub rcx, rbx
  02b4  lea rax, [0x60b]
  02bb  neg rcx
  02be  vmovdqu ymm15, [rax+rcx*4+0x20]
  02c4  vmaskmovps ymm9, ymm15, [rdx+rbx*4]
  02ca  vsubps ymm10, ymm9, ymm8
  02cf  vbroadcastss ymm11, [0x5fb]
  02d8  vblendvps ymm9, ymm11, ymm10, ymm15
  02de  vaddps ymm0, ymm0, ymm9
  02e3  vmulps ymm9, ymm10, ymm10
  02e8  vbroadcastss ymm11, [0x5fb]
  02f1  vblendvps ymm10, ymm11, ymm9, ymm15
  02f7  vaddps ymm4, ymm4, ymm10
  02fc  vaddps ymm0, ymm0, ymm1
  0300  vaddps ymm2, ymm2, ymm3
  0304  vaddps ymm0, ymm0, ymm2
  0308  vperm2f128 ymm9, ymm0, ymm0, 1
  030e  vaddps ymm0, ymm0, ymm9
  0313  vpermilps ymm9, ymm0, 0x4e
  0319  vaddps ymm0, ymm0, ymm9
  031e  vpermilps ymm9, ymm0, 0xb1
  0324  vaddps ymm0, ymm0, ymm9
  0329  vcvtss2sd xmm0, xmm0, xmm0
  032d  vaddsd xmm0, xmm0, [rsp+0x88]
  0336  vmovsd [rsp+0x88], xmm0
  033f  vaddps ymm4, ymm4, ymm5
  0343  vaddps ymm6, ymm6, ymm7
  0347  vaddps ymm4, ymm4, ymm6
  034b  vperm2f128 ymm9, ymm4, ymm4, 1
  0351  vaddps ymm4, ymm4, ymm9
  0356  vpermilps ymm9, ymm4, 0x4e
  035c  vaddps ymm4, ymm4, ymm9
  0361  vpermilps ymm9, ymm4, 0xb1
  0367  vaddps ymm4, ymm4, ymm9
  036c  vcvtss2sd xmm4, xmm4, xmm4
  0370  vaddsd xmm4, xmm4, [rsp+0xa0]
  0379  vmovsd [rsp+0xa0], xmm4
  0382  vcvtsd2ss xmm0, xmm0, [rsp+0x88]
  038b  vmovss [rsp+0x80], xmm0
  0394  vcvtsd2ss xmm0, xmm0, [rsp+0xa0]
  039d  vmovss [rsp+0x98], xmm0
  03a6  xor rbx, rbx
  03a9  vbroadcastss ymm0, [rsp+0x80]
  03b3  vbroadcastss ymm1, [0x5ff]
  03bc  vdivps ymm2, ymm0, ymm1
  03c0  vmovss [rsp+0x90], xmm2
  03c9  vbroadcastss ymm0, [rsp+0x98]
  03d3  vdivps ymm3, ymm0, ymm1
  03d7  vmovss [rsp+0xa8], xmm3
  03e0  vmulps ymm1, ymm2, ymm2
  03e4  vmovss [rsp+0xb0], xmm1
  03ed  vsubps ymm2, ymm3, ymm1
  03f1  vmovss [rsp+0xb8], xmm2
  03fa  vbroadcastss ymm1, [0x5fb]
  0403  vmaxps ymm3, ymm1, ymm2
  0407  vmovss [rsp+0xc0], xmm3
  0410  vbroadcastss ymm2, [0x603]
  0419  vaddps ymm1, ymm3, ymm2
  041d  vmovss [rsp+0xc8], xmm1
  0426  vsqrtps ymm2, ymm1
  042a  vmovss [rsp+0xd0], xmm2
  0433  vbroadcastss ymm1, [0x607]
  043c  vdivps ymm3, ymm1, ymm2
  0440  vmovss [rsp+0xd8], xmm3
  0449  mov rdx, [rsp+0x48]
  044e  mov rsi, [rsp+0x50]
  0453  mov rdi, [rsp+0x58]
  0458  mov r8, [rsp+0x60]
  045d  vbroadcastss ymm0, [rsp+0x78]
  0464  vbroadcastss ymm1, [rsp+0x90]
  046e  vbroadcastss ymm2, [rsp+0xd8]
  0478  xor rbx, rbx
  047b  lea r15, [rbx+0x3e8]
  0482  lea r14, [r15-0x20]
  0486  cmp rbx, r14
  0489  jg 0x54c
  048f  vmovups ymm3, [rdx+rbx*4]
  0494  vsubps ymm4, ymm3, ymm0
  0498  vsubps ymm3, ymm4, ymm1
  049c  vmulps ymm4, ymm3, ymm2
  04a0  vmovups ymm3, [rsi+rbx*4]
  04a5  vmulps ymm5, ymm4, ymm3
  04a9  vmovups ymm3, [rdi+rbx*4]
  04ae  vaddps ymm4, ymm5, ymm3
  04b2  vmovups [r8+rbx*4], ymm4
  04b8  vmovups ymm3, [rdx+rbx*4+0x20]
  04be  vsubps ymm4, ymm3, ymm0
  04c2  vsubps ymm3, ymm4, ymm1
  04c6  vmulps ymm4, ymm3, ymm2
  04ca  vmovups ymm3, [rsi+rbx*4+0x20]
  04d0  vmulps ymm5, ymm4, ymm3
  04d4  vmovups ymm3, [rdi+rbx*4+0x20]
  04da  vaddps ymm4, ymm5, ymm3
  04de  vmovups [r8+rbx*4+0x20], ymm4
  04e5  vmovups ymm3, [rdx+rbx*4+0x40]
  04eb  vsubps ymm4, ymm3, ymm0
  04ef  vsubps ymm3, ymm4, ymm1
  04f3  vmulps ymm4, ymm3, ymm2
  04f7  vmovups ymm3, [rsi+rbx*4+0x40]
  04fd  vmulps ymm5, ymm4, ymm3
  0501  vmovups ymm3, [rdi+rbx*4+0x40]
  0507  vaddps ymm4, ymm5, ymm3
  050b  vmovups [r8+rbx*4+0x40], ymm4
  0512  vmovups ymm3, [rdx+rbx*4+0x60]
  0518  vsubps ymm4, ymm3, ymm0
  051c  vsubps ymm3, ymm4, ymm1
  0520  vmulps ymm4, ymm3, ymm2
  0524  vmovups ymm3, [rsi+rbx*4+0x60]
  052a  vmulps ymm5, ymm4, ymm3
  052e  vmovups ymm3, [rdi+rbx*4+0x60]
  0534  vaddps ymm4, ymm5, ymm3
  0538  vmovups [r8+rbx*4+0x60], ymm4
  053f  add rbx, 0x20
  0543  cmp rbx, r14
  0546  jle 0x48f
  054c  lea r14, [r15-8]
  0550  cmp rbx, r14
  0553  jg short 0x587
  0555  vmovups ymm3, [rdx+rbx*4]
  055a  vsubps ymm4, ymm3, ymm0
  055e  vsubps ymm3, ymm4, ymm1
  0562  vmulps ymm4, ymm3, ymm2
  0566  vmovups ymm3, [rsi+rbx*4]
  056b  vmulps ymm5, ymm4, ymm3
  056f  vmovups ymm3, [rdi+rbx*4]
  0574  vaddps ymm4, ymm5, ymm3
  0578  vmovups [r8+rbx*4], ymm4
  057e  add rbx, 8
  0582  cmp rbx, r14
  0585  jle short 0x555
  0587  cmp rbx, r15
  058a  jge short 0x5ce
  058c  mov rcx, r15
  058f  sub rcx, rbx
  0592  lea rax, [0x60b]
  0599  neg rcx
  059c  vmovdqu ymm15, [rax+rcx*4+0x20]
  05a2  vmaskmovps ymm3, ymm15, [rdx+rbx*4]
  05a8  vsubps ymm4, ymm3, ymm0
  05ac  vsubps ymm3, ymm4, ymm1
  05b0  vmulps ymm4, ymm3, ymm2
  05b4  vmaskmovps ymm3, ymm15, [rsi+rbx*4]
  05ba  vmulps ymm5, ymm4, ymm3
  05be  vmaskmovps ymm3, ymm15, [rdi+rbx*4]
  05c4  vaddps ymm4, ymm5, ymm3
  05c8  vmaskmovps [r8+rbx*4], ymm15, ymm4
  05ce  mov rax, [rsp+0x20]
  05d3  add rax, 1
  05d9  mov [rsp+0x20], rax
  05de  cmp rax, [rsp+0x10]
  05e3  jl 0x5e
  05e9  mov rsp, [rsp]
  05ed  pop r15
  05ef  pop r14
  05f1  pop r13
  05f3  pop r12
  05f5  pop rbp
  05f6  pop rbx
  05f7  vzeroupper
  05fa  ret
  constants (80 bytes):
    00000000 447a0000 3727c5ac 3f800000 ffffffff ffffffff ffffffff ffffffff
    ffffffff ffffffff ffffffff ffffffff 00000000 00000000 00000000 00000000
    00000000 00000000 00000000 00000000
