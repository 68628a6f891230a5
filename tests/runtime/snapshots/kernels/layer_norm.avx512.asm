AVX-512 row kernel, 1853 bytes of machine code, 0 micro-kernel calls per tile, 3 values held in registers:
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
  0053  jge 0x71b
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
  00b5  vpxord zmm0, zmm0, zmm0
  00bb  vpxord zmm1, zmm1, zmm1
  00c1  vpxord zmm2, zmm2, zmm2
  00c7  vpxord zmm3, zmm3, zmm3
  00cd  lea r15, [rbx+0x3e8]
  00d4  lea r14, [r15-0x40]
  00d8  cmp rbx, r14
  00db  jg short 0x11d
  00dd  vmovups zmm4, [rdx+rbx*4]
  00e4  vaddps zmm0, zmm0, zmm4
  00ea  vmovups zmm4, [rdx+rbx*4+0x40]
  00f2  vaddps zmm1, zmm1, zmm4
  00f8  vmovups zmm4, [rdx+rbx*4+0x80]
  0100  vaddps zmm2, zmm2, zmm4
  0106  vmovups zmm4, [rdx+rbx*4+0xc0]
  010e  vaddps zmm3, zmm3, zmm4
  0114  add rbx, 0x40
  0118  cmp rbx, r14
  011b  jle short 0xdd
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
  015e  vbroadcastss zmm6, [0x72d]
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
  01c6  vaddsd xmm0, xmm0, [rsp+0x70]
  01ce  vmovsd [rsp+0x70], xmm0
  01d6  vcvtsd2ss xmm0, xmm0, [rsp+0x70]
  01dc  vmovss [rsp+0x68], xmm0
  01e2  xor rbx, rbx
  01e5  vbroadcastss zmm0, [rsp+0x68]
  01ed  vbroadcastss zmm1, [0x731]
  01f7  vdivps zmm2, zmm0, zmm1
  01fd  vmovss [rsp+0x78], xmm2
  0205  mov qword ptr [rsp+0x88], 0
  0211  mov qword ptr [rsp+0xa0], 0
  021d  mov rdx, [rsp+0x48]
  0222  vbroadcastss zmm8, [rsp+0x78]
  022a  xor rbx, rbx
  022d  vpxord zmm0, zmm0, zmm0
  0233  vpxord zmm1, zmm1, zmm1
  0239  vpxord zmm2, zmm2, zmm2
  023f  vpxord zmm3, zmm3, zmm3
  0245  vpxord zmm4, zmm4, zmm4
  024b  vpxord zmm5, zmm5, zmm5
  0251  vpxord zmm6, zmm6, zmm6
  0257  vpxord zmm7, zmm7, zmm7
  025d  lea r15, [rbx+0x3e8]
  0264  lea r14, [r15-0x40]
  0268  cmp rbx, r14
  026b  jg 0x2fd
  0271  vmovups zmm9, [rdx+rbx*4]
  0278  vsubps zmm10, zmm9, zmm8
  027e  vaddps zmm0, zmm0, zmm10
  0284  vmulps zmm9, zmm10, zmm10
  028a  vaddps zmm4, zmm4, zmm9
  0290  vmovups zmm9, [rdx+rbx*4+0x40]
  0298  vsubps zmm10, zmm9, zmm8
  029e  vaddps zmm1, zmm1, zmm10
  02a4  vmulps zmm9, zmm10, zmm10
  02aa  vaddps zmm5, zmm5, zmm9
  02b0  vmovups zmm9, [rdx+rbx*4+0x80]
  02b8  vsubps zmm10, zmm9, zmm8
  02be  vaddps zmm2, zmm2, zmm10
  02c4  vmulps zmm9, zmm10, zmm10
  02ca  vaddps zmm6, zmm6, zmm9
  02d0  vmovups zmm9, [rdx+rbx*4+0xc0]
  02d8  vsubps zmm10, zmm9, zmm8
  02de  vaddps zmm3, zmm3, zmm10
  02e4  vmulps zmm9, zmm10, zmm10
  02ea  vaddps zmm7, zmm7, zmm9
  02f0  add rbx, 0x40
  02f4  cmp rbx, r14
  02f7  jle 0x271
  02fd  lea r14, [r15-0x10]
  0301  cmp rbx, r14
  0304  jg short 0x32e
  0306  vmovups zmm9, [rdx+rbx*4]
  030d  vsubps zmm10, zmm9, zmm8
  0313  vaddps zmm0, zmm0, zmm10
  0319  vmulps zmm9, zmm10, zmm10
  031f  vaddps zmm4, zmm4, zmm9
  0325  add rbx, 0x10
  0329  cmp rbx, r14
  032c  jle short 0x306
  032e  cmp rbx, r15
  0331  jge short 0x394
  0333  mov rcx, r15
  0336  sub rcx, rbx
  0339  mov eax, 1
  033e  shl eax, cl
  0340  sub eax, 1
  0345  kmovw k1, eax
  0349  vmovups zmm9{k1}{z}, [rdx+rbx*4]
  0350  vsubps zmm10, zmm9, zmm8
  0356  vbroadcastss zmm11, [0x72d]
  0360  vmovaps zmm9, zmm11
  0366  vmovaps zmm9{k1}, zmm10
  036c  vaddps zmm0, zmm0, zmm9
  0372  vmulps zmm9, zmm10, zmm10
  0378  vbroadcastss zmm11, [0x72d]
  0382  vmovaps zmm10, zmm11
  0388  vmovaps zmm10{k1}, zmm9
  038e  vaddps zmm4, zmm4, zmm10
  0394  vaddps zmm0, zmm0, zmm1
  039a  vaddps zmm2, zmm2, zmm3
  03a0  vaddps zmm0, zmm0, zmm2
  03a6  vshuff32x4 zmm9, zmm0, zmm0, 0x4e
  03ad  vaddps zmm0, zmm0, zmm9
  03b3  vshuff32x4 zmm9, zmm0, zmm0, 0xb1
  03ba  vaddps zmm0, zmm0, zmm9
  03c0  vpermilps zmm9, zmm0, 0x4e
  03c7  vaddps zmm0, zmm0, zmm9
  03cd  vpermilps zmm9, zmm0, 0xb1
  03d4  vaddps zmm0, zmm0, zmm9
  03da  vcvtss2sd xmm0, xmm0, xmm0
  03e0  vaddsd xmm0, xmm0, [rsp+0x88]
  03e8  vmovsd [rsp+0x88], xmm0
  03f0  vaddps zmm4, zmm4, zmm5
  03f6  vaddps zmm6, zmm6, zmm7
  03fc  vaddps zmm4, zmm4, zmm6
  0402  vshuff32x4 zmm9, zmm4, zmm4, 0x4e
  0409  vaddps zmm4, zmm4, zmm9
  040f  vshuff32x4 zmm9, zmm4, zmm4, 0xb1
  0416  vaddps zmm4, zmm4, zmm9
  041c  vpermilps zmm9, zmm4, 0x4e
  0423  vaddps zmm4, zmm4, zmm9
  0429  vpermilps zmm9, zmm4, 0xb1
  0430  vaddps zmm4, zmm4, zmm9
  0436  vcvtss2sd xmm4, xmm4, xmm4
  043c  vaddsd xmm4, xmm4, [rsp+0xa0]
  0444  vmovsd [rsp+0xa0], xmm4
  044c  vcvtsd2ss xmm0, xmm0, [rsp+0x88]
  0455  vmovss [rsp+0x80], xmm0
  045e  vcvtsd2ss xmm0, xmm0, [rsp+0xa0]
  0467  vmovss [rsp+0x98], xmm0
  0470  xor rbx, rbx
  0473  vbroadcastss zmm0, [rsp+0x80]
  047b  vbroadcastss zmm1, [0x731]
  0485  vdivps zmm2, zmm0, zmm1
  048b  vmovss [rsp+0x90], xmm2
  0493  vbroadcastss zmm0, [rsp+0x98]
  049b  vdivps zmm3, zmm0, zmm1
  04a1  vmovss [rsp+0xa8], xmm3
  04a9  vmulps zmm1, zmm2, zmm2
  04af  vmovss [rsp+0xb0], xmm1
  04b7  vsubps zmm2, zmm3, zmm1
  04bd  vmovss [rsp+0xb8], xmm2
  04c5  vbroadcastss zmm1, [0x72d]
  04cf  vmaxps zmm3, zmm1, zmm2
  04d5  vmovss [rsp+0xc0], xmm3
  04dd  vbroadcastss zmm2, [0x735]
  04e7  vaddps zmm1, zmm3, zmm2
  04ed  vmovss [rsp+0xc8], xmm1
  04f5  vsqrtps zmm2, zmm1
  04fb  vmovss [rsp+0xd0], xmm2
  0503  vbroadcastss zmm1, [0x739]
  050d  vdivps zmm3, zmm1, zmm2
  0513  vmovss [rsp+0xd8], xmm3
  051b  mov rdx, [rsp+0x48]
  0520  mov rsi, [rsp+0x50]
  0525  mov rdi, [rsp+0x58]
  052a  mov r8, [rsp+0x60]
  052f  vbroadcastss zmm0, [rsp+0x78]
  0537  vbroadcastss zmm1, [rsp+0x90]
  053f  vbroadcastss zmm2, [rsp+0xd8]
  0547  xor rbx, rbx
  054a  lea r15, [rbx+0x3e8]
  0551  lea r14, [r15-0x40]
  0555  cmp rbx, r14
  0558  jg 0x65f
  055e  vmovups zmm3, [rdx+rbx*4]
  0565  vsubps zmm4, zmm3, zmm0
  056b  vsubps zmm3, zmm4, zmm1
  0571  vmulps zmm4, zmm3, zmm2
  0577  vmovups zmm3, [rsi+rbx*4]
  057e  vmulps zmm5, zmm4, zmm3
  0584  vmovups zmm3, [rdi+rbx*4]
  058b  vaddps zmm4, zmm5, zmm3
  0591  vmovups [r8+rbx*4], zmm4
  0598  vmovups zmm3, [rdx+rbx*4+0x40]
  05a0  vsubps zmm4, zmm3, zmm0
  05a6  vsubps zmm3, zmm4, zmm1
  05ac  vmulps zmm4, zmm3, zmm2
  05b2  vmovups zmm3, [rsi+rbx*4+0x40]
  05ba  vmulps zmm5, zmm4, zmm3
  05c0  vmovups zmm3, [rdi+rbx*4+0x40]
  05c8  vaddps zmm4, zmm5, zmm3
  05ce  vmovups [r8+rbx*4+0x40], zmm4
  05d6  vmovups zmm3, [rdx+rbx*4+0x80]
  05de  vsubps zmm4, zmm3, zmm0
  05e4  vsubps zmm3, zmm4, zmm1
  05ea  vmulps zmm4, zmm3, zmm2
  05f0  vmovups zmm3, [rsi+rbx*4+0x80]
  05f8  vmulps zmm5, zmm4, zmm3
  05fe  vmovups zmm3, [rdi+rbx*4+0x80]
  0606  vaddps zmm4, zmm5, zmm3
  060c  vmovups [r8+rbx*4+0x80], zmm4
  0614  vmovups zmm3, [rdx+rbx*4+0xc0]
  061c  vsubps zmm4, zmm3, zmm0
  0622  vsubps zmm3, zmm4, zmm1
  0628  vmulps zmm4, zmm3, zmm2
  062e  vmovups zmm3, [rsi+rbx*4+0xc0]
  0636  vmulps zmm5, zmm4, zmm3
  063c  vmovups zmm3, [rdi+rbx*4+0xc0]
  0644  vaddps zmm4, zmm5, zmm3
  064a  vmovups [r8+rbx*4+0xc0], zmm4
  0652  add rbx, 0x40
  0656  cmp rbx, r14
  0659  jle 0x55e
  065f  lea r14, [r15-0x10]
  0663  cmp rbx, r14
  0666  jg short 0x6ab
  0668  vmovups zmm3, [rdx+rbx*4]
  066f  vsubps zmm4, zmm3, zmm0
  0675  vsubps zmm3, zmm4, zmm1
  067b  vmulps zmm4, zmm3, zmm2
  0681  vmovups zmm3, [rsi+rbx*4]
  0688  vmulps zmm5, zmm4, zmm3
  068e  vmovups zmm3, [rdi+rbx*4]
  0695  vaddps zmm4, zmm5, zmm3
  069b  vmovups [r8+rbx*4], zmm4
  06a2  add rbx, 0x10
  06a6  cmp rbx, r14
  06a9  jle short 0x668
  06ab  cmp rbx, r15
  06ae  jge short 0x700
  06b0  mov rcx, r15
  06b3  sub rcx, rbx
  06b6  mov eax, 1
  06bb  shl eax, cl
  06bd  sub eax, 1
  06c2  kmovw k1, eax
  06c6  vmovups zmm3{k1}{z}, [rdx+rbx*4]
  06cd  vsubps zmm4, zmm3, zmm0
  06d3  vsubps zmm3, zmm4, zmm1
  06d9  vmulps zmm4, zmm3, zmm2
  06df  vmovups zmm3{k1}{z}, [rsi+rbx*4]
  06e6  vmulps zmm5, zmm4, zmm3
  06ec  vmovups zmm3{k1}{z}, [rdi+rbx*4]
  06f3  vaddps zmm4, zmm5, zmm3
  06f9  vmovups [r8+rbx*4]{k1}, zmm4
  0700  mov rax, [rsp+0x20]
  0705  add rax, 1
  070b  mov [rsp+0x20], rax
  0710  cmp rax, [rsp+0x10]
  0715  jl 0x5e
  071b  mov rsp, [rsp]
  071f  pop r15
  0721  pop r14
  0723  pop r13
  0725  pop r12
  0727  pop rbp
  0728  pop rbx
  0729  vzeroupper
  072c  ret
  constants (16 bytes):
    00000000 447a0000 3727c5ac 3f800000
