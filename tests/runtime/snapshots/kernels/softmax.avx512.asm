AVX-512 row kernel, 2846 bytes of machine code, 0 micro-kernel calls per tile, 1 values held in registers, 1 stashed rows kept in outputs:
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
  0041  jge 0xacc
  0047  mov [rsp+0x20], rax
  004c  mov rcx, [rsp+0x28]
  0051  mov rax, [rsp+0x20]
  0056  imul rax, 0xfa0
  005d  add rcx, rax
  0060  mov [rsp+0x38], rcx
  0065  mov rcx, [rsp+0x30]
  006a  mov rax, [rsp+0x20]
  006f  imul rax, 0xfa0
  0076  add rcx, rax
  0079  mov [rsp+0x40], rcx
  007e  mov dword ptr [rsp+0x50], 0xff800000
  0086  mov rdx, [rsp+0x38]
  008b  kxorw k2, k2, k2
  008f  xor rbx, rbx
  0092  vbroadcastss zmm0, [0xade]
  009c  vbroadcastss zmm1, [0xade]
  00a6  vbroadcastss zmm2, [0xade]
  00b0  vbroadcastss zmm3, [0xade]
  00ba  lea r15, [rbx+0x3e8]
  00c1  lea r14, [r15-0x40]
  00c5  cmp rbx, r14
  00c8  jg short 0x136
  00ca  vmovups zmm4, [rdx+rbx*4]
  00d1  vcmpunordps k7, zmm4, zmm4
  00d8  korw k2, k2, k7
  00dc  vmaxps zmm0, zmm4, zmm0
  00e2  vmovups zmm4, [rdx+rbx*4+0x40]
  00ea  vcmpunordps k7, zmm4, zmm4
  00f1  korw k2, k2, k7
  00f5  vmaxps zmm1, zmm4, zmm1
  00fb  vmovups zmm4, [rdx+rbx*4+0x80]
  0103  vcmpunordps k7, zmm4, zmm4
  010a  korw k2, k2, k7
  010e  vmaxps zmm2, zmm4, zmm2
  0114  vmovups zmm4, [rdx+rbx*4+0xc0]
  011c  vcmpunordps k7, zmm4, zmm4
  0123  korw k2, k2, k7
  0127  vmaxps zmm3, zmm4, zmm3
  012d  add rbx, 0x40
  0131  cmp rbx, r14
  0134  jle short 0xca
  0136  lea r14, [r15-0x10]
  013a  cmp rbx, r14
  013d  jg short 0x160
  013f  vmovups zmm4, [rdx+rbx*4]
  0146  vcmpunordps k7, zmm4, zmm4
  014d  korw k2, k2, k7
  0151  vmaxps zmm0, zmm4, zmm0
  0157  add rbx, 0x10
  015b  cmp rbx, r14
  015e  jle short 0x13f
  0160  cmp rbx, r15
  0163  jge short 0x1a9
  0165  mov rcx, r15
  0168  sub rcx, rbx
  016b  mov eax, 1
  0170  shl eax, cl
  0172  sub eax, 1
  0177  kmovw k1, eax
  017b  vmovups zmm4{k1}{z}, [rdx+rbx*4]
  0182  vbroadcastss zmm6, [0xade]
  018c  vmovaps zmm5, zmm6
  0192  vmovaps zmm5{k1}, zmm4
  0198  vcmpunordps k7, zmm5, zmm5
  019f  korw k2, k2, k7
  01a3  vmaxps zmm0, zmm5, zmm0
  01a9  vmaxps zmm0, zmm0, zmm1
  01af  vmaxps zmm2, zmm2, zmm3
  01b5  vmaxps zmm0, zmm0, zmm2
  01bb  vshuff32x4 zmm4, zmm0, zmm0, 0x4e
  01c2  vmaxps zmm0, zmm0, zmm4
  01c8  vshuff32x4 zmm4, zmm0, zmm0, 0xb1
  01cf  vmaxps zmm0, zmm0, zmm4
  01d5  vpermilps zmm4, zmm0, 0x4e
  01dc  vmaxps zmm0, zmm0, zmm4
  01e2  vpermilps zmm4, zmm0, 0xb1
  01e9  vmaxps zmm0, zmm0, zmm4
  01ef  vmaxss xmm0, xmm0, [rsp+0x50]
  01f7  vmovss [rsp+0x50], xmm0
  01ff  mov eax, [rsp+0x50]
  0203  mov [rsp+0x48], eax
  0207  kortestw k2, k2
  020b  je short 0x215
  020d  mov dword ptr [rsp+0x48], 0x7fc00000
  0215  mov qword ptr [rsp+0x60], 0
  021e  mov rdx, [rsp+0x38]
  0223  mov rsi, [rsp+0x40]
  0228  vbroadcastss zmm4, [rsp+0x48]
  0230  xor rbx, rbx
  0233  vpxord zmm0, zmm0, zmm0
  0239  vpxord zmm1, zmm1, zmm1
  023f  vpxord zmm2, zmm2, zmm2
  0245  vpxord zmm3, zmm3, zmm3
  024b  lea r15, [rbx+0x3e8]
  0252  lea r14, [r15-0x40]
  0256  cmp rbx, r14
  0259  jg 0x6ea
  025f  vmovups zmm5, [rdx+rbx*4]
  0266  vsubps zmm6, zmm5, zmm4
  026c  vbroadcastss zmm5, [0xae2]
  0276  vminps zmm7, zmm5, zmm6
  027c  vbroadcastss zmm5, [0xae6]
  0286  vmaxps zmm8, zmm5, zmm7
  028c  vbroadcastss zmm7, [0xaea]
  0296  vbroadcastss zmm5, [0xaee]
  02a0  vfmadd213ps zmm5, zmm8, zmm7
  02a6  vsubps zmm9, zmm5, zmm7
  02ac  vbroadcastss zmm7, [0xaf2]
  02b6  vfmadd231ps zmm8, zmm9, zmm7
  02bc  vbroadcastss zmm7, [0xaf6]
  02c6  vfmadd231ps zmm8, zmm9, zmm7
  02cc  vbroadcastss zmm7, [0xafa]
  02d6  vbroadcastss zmm10, [0xafe]
  02e0  vfmadd213ps zmm7, zmm8, zmm10
  02e6  vbroadcastss zmm10, [0xb02]
  02f0  vfmadd213ps zmm7, zmm8, zmm10
  02f6  vbroadcastss zmm10, [0xb06]
  0300  vfmadd213ps zmm7, zmm8, zmm10
  0306  vbroadcastss zmm10, [0xb0a]
  0310  vfmadd213ps zmm7, zmm8, zmm10
  0316  vbroadcastss zmm10, [0xb0e]
  0320  vfmadd213ps zmm7, zmm8, zmm10
  0326  vbroadcastss zmm10, [0xb0e]
  0330  vfmadd213ps zmm7, zmm8, zmm10
  0336  vbroadcastss zmm10, [0xb12]
  0340  vbroadcastss zmm8, [0xb16]
  034a  vfmadd213ps zmm9, zmm8, zmm10
  0350  vpslld zmm10, zmm9, 0x17
  0357  vpsubd zmm8, zmm5, zmm9
  035d  vpslld zmm9, zmm8, 0x17
  0364  vmulps zmm8, zmm7, zmm10
  036a  vmulps zmm10, zmm8, zmm9
  0370  vaddps zmm0, zmm0, zmm10
  0376  vmovups [rsi+rbx*4], zmm10
  037d  vmovups zmm5, [rdx+rbx*4+0x40]
  0385  vsubps zmm6, zmm5, zmm4
  038b  vbroadcastss zmm5, [0xae2]
  0395  vminps zmm7, zmm5, zmm6
  039b  vbroadcastss zmm5, [0xae6]
  03a5  vmaxps zmm8, zmm5, zmm7
  03ab  vbroadcastss zmm7, [0xaea]
  03b5  vbroadcastss zmm5, [0xaee]
  03bf  vfmadd213ps zmm5, zmm8, zmm7
  03c5  vsubps zmm9, zmm5, zmm7
  03cb  vbroadcastss zmm7, [0xaf2]
  03d5  vfmadd231ps zmm8, zmm9, zmm7
  03db  vbroadcastss zmm7, [0xaf6]
  03e5  vfmadd231ps zmm8, zmm9, zmm7
  03eb  vbroadcastss zmm7, [0xafa]
  03f5  vbroadcastss zmm10, [0xafe]
  03ff  vfmadd213ps zmm7, zmm8, zmm10
  0405  vbroadcastss zmm10, [0xb02]
  040f  vfmadd213ps zmm7, zmm8, zmm10
  0415  vbroadcastss zmm10, [0xb06]
  041f  vfmadd213ps zmm7, zmm8, zmm10
  0425  vbroadcastss zmm10, [0xb0a]
  042f  vfmadd213ps zmm7, zmm8, zmm10
  0435  vbroadcastss zmm10, [0xb0e]
  043f  vfmadd213ps zmm7, zmm8, zmm10
  0445  vbroadcastss zmm10, [0xb0e]
  044f  vfmadd213ps zmm7, zmm8, zmm10
  0455  vbroadcastss zmm10, [0xb12]
  045f  vbroadcastss zmm8, [0xb16]
  0469  vfmadd213ps zmm9, zmm8, zmm10
  046f  vpslld zmm10, zmm9, 0x17
  0476  vpsubd zmm8, zmm5, zmm9
  047c  vpslld zmm9, zmm8, 0x17
  0483  vmulps zmm8, zmm7, zmm10
  0489  vmulps zmm10, zmm8, zmm9
  048f  vaddps zmm1, zmm1, zmm10
  0495  vmovups [rsi+rbx*4+0x40], zmm10
  049d  vmovups zmm5, [rdx+rbx*4+0x80]
  04a5  vsubps zmm6, zmm5, zmm4
  04ab  vbroadcastss zmm5, [0xae2]
  04b5  vminps zmm7, zmm5, zmm6
  04bb  vbroadcastss zmm5, [0xae6]
  04c5  vmaxps zmm8, zmm5, zmm7
  04cb  vbroadcastss zmm7, [0xaea]
  04d5  vbroadcastss zmm5, [0xaee]
  04df  vfmadd213ps zmm5, zmm8, zmm7
  04e5  vsubps zmm9, zmm5, zmm7
  04eb  vbroadcastss zmm7, [0xaf2]
  04f5  vfmadd231ps zmm8, zmm9, zmm7
  04fb  vbroadcastss zmm7, [0xaf6]
  0505  vfmadd231ps zmm8, zmm9, zmm7
  050b  vbroadcastss zmm7, [0xafa]
  0515  vbroadcastss zmm10, [0xafe]
  051f  vfmadd213ps zmm7, zmm8, zmm10
  0525  vbroadcastss zmm10, [0xb02]
  052f  vfmadd213ps zmm7, zmm8, zmm10
  0535  vbroadcastss zmm10, [0xb06]
  053f  vfmadd213ps zmm7, zmm8, zmm10
  0545  vbroadcastss zmm10, [0xb0a]
  054f  vfmadd213ps zmm7, zmm8, zmm10
  0555  vbroadcastss zmm10, [0xb0e]
  055f  vfmadd213ps zmm7, zmm8, zmm10
  0565  vbroadcastss zmm10, [0xb0e]
  056f  vfmadd213ps zmm7, zmm8, zmm10
  0575  vbroadcastss zmm10, [0xb12]
  057f  vbroadcastss zmm8, [0xb16]
  0589  vfmadd213ps zmm9, zmm8, zmm10
  058f  vpslld zmm10, zmm9, 0x17
  0596  vpsubd zmm8, zmm5, zmm9
  059c  vpslld zmm9, zmm8, 0x17
  05a3  vmulps zmm8, zmm7, zmm10
  05a9  vmulps zmm10, zmm8, zmm9
  05af  vaddps zmm2, zmm2, zmm10
  05b5  vmovups [rsi+rbx*4+0x80], zmm10
  05bd  vmovups zmm5, [rdx+rbx*4+0xc0]
  05c5  vsubps zmm6, zmm5, zmm4
  05cb  vbroadcastss zmm5, [0xae2]
  05d5  vminps zmm7, zmm5, zmm6
  05db  vbroadcastss zmm5, [0xae6]
  05e5  vmaxps zmm8, zmm5, zmm7
  05eb  vbroadcastss zmm7, [0xaea]
  05f5  vbroadcastss zmm5, [0xaee]
  05ff  vfmadd213ps zmm5, zmm8, zmm7
  0605  vsubps zmm9, zmm5, zmm7
  060b  vbroadcastss zmm7, [0xaf2]
  0615  vfmadd231ps zmm8, zmm9, zmm7
  061b  vbroadcastss zmm7, [0xaf6]
  0625  vfmadd231ps zmm8, zmm9, zmm7
  062b  vbroadcastss zmm7, [0xafa]
  0635  vbroadcastss zmm10, [0xafe]
  063f  vfmadd213ps zmm7, zmm8, zmm10
  0645  vbroadcastss zmm10, [0xb02]
  064f  vfmadd213ps zmm7, zmm8, zmm10
  0655  vbroadcastss zmm10, [0xb06]
  065f  vfmadd213ps zmm7, zmm8, zmm10
  0665  vbroadcastss zmm10, [0xb0a]
  066f  vfmadd213ps zmm7, zmm8, zmm10
  0675  vbroadcastss zmm10, [0xb0e]
  067f  vfmadd213ps zmm7, zmm8, zmm10
  0685  vbroadcastss zmm10, [0xb0e]
  068f  vfmadd213ps zmm7, zmm8, zmm10
  0695  vbroadcastss zmm10, [0xb12]
  069f  vbroadcastss zmm8, [0xb16]
  06a9  vfmadd213ps zmm9, zmm8, zmm10
  06af  vpslld zmm10, zmm9, 0x17
  06b6  vpsubd zmm8, zmm5, zmm9
  06bc  vpslld zmm9, zmm8, 0x17
  06c3  vmulps zmm8, zmm7, zmm10
  06c9  vmulps zmm10, zmm8, zmm9
  06cf  vaddps zmm3, zmm3, zmm10
  06d5  vmovups [rsi+rbx*4+0xc0], zmm10
  06dd  add rbx, 0x40
  06e1  cmp rbx, r14
  06e4  jle 0x25f
  06ea  lea r14, [r15-0x10]
  06ee  cmp rbx, r14
  06f1  jg 0x822
  06f7  vmovups zmm5, [rdx+rbx*4]
  06fe  vsubps zmm6, zmm5, zmm4
  0704  vbroadcastss zmm5, [0xae2]
  070e  vminps zmm7, zmm5, zmm6
  0714  vbroadcastss zmm5, [0xae6]
  071e  vmaxps zmm8, zmm5, zmm7
  0724  vbroadcastss zmm7, [0xaea]
  072e  vbroadcastss zmm5, [0xaee]
  0738  vfmadd213ps zmm5, zmm8, zmm7
  073e  vsubps zmm9, zmm5, zmm7
  0744  vbroadcastss zmm7, [0xaf2]
  074e  vfmadd231ps zmm8, zmm9, zmm7
  0754  vbroadcastss zmm7, [0xaf6]
  075e  vfmadd231ps zmm8, zmm9, zmm7
  0764  vbroadcastss zmm7, [0xafa]
  076e  vbroadcastss zmm10, [0xafe]
  0778  vfmadd213ps zmm7, zmm8, zmm10
  077e  vbroadcastss zmm10, [0xb02]
  0788  vfmadd213ps zmm7, zmm8, zmm10
  078e  vbroadcastss zmm10, [0xb06]
  0798  vfmadd213ps zmm7, zmm8, zmm10
  079e  vbroadcastss zmm10, [0xb0a]
  07a8  vfmadd213ps zmm7, zmm8, zmm10
  07ae  vbroadcastss zmm10, [0xb0e]
  07b8  vfmadd213ps zmm7, zmm8, zmm10
  07be  vbroadcastss zmm10, [0xb0e]
  07c8  vfmadd213ps zmm7, zmm8, zmm10
  07ce  vbroadcastss zmm10, [0xb12]
  07d8  vbroadcastss zmm8, [0xb16]
  07e2  vfmadd213ps zmm9, zmm8, zmm10
  07e8  vpslld zmm10, zmm9, 0x17
  07ef  vpsubd zmm8, zmm5, zmm9
  07f5  vpslld zmm9, zmm8, 0x17
  07fc  vmulps zmm8, zmm7, zmm10
  0802  vmulps zmm10, zmm8, zmm9
  0808  vaddps zmm0, zmm0, zmm10
  080e  vmovups [rsi+rbx*4], zmm10
  0815  add rbx, 0x10
  0819  cmp rbx, r14
  081c  jle 0x6f7
  0822  cmp rbx, r15
  0825  jge 0x975
  082b  mov rcx, r15
  082e  sub rcx, rbx
  0831  mov eax, 1
  0836  shl eax, cl
  0838  sub eax, 1
  083d  kmovw k1, eax
  0841  vmovups zmm5{k1}{z}, [rdx+rbx*4]
  0848  vsubps zmm6, zmm5, zmm4
  084e  vbroadcastss zmm5, [0xae2]
  0858  vminps zmm7, zmm5, zmm6
  085e  vbroadcastss zmm5, [0xae6]
  0868  vmaxps zmm8, zmm5, zmm7
  086e  vbroadcastss zmm7, [0xaea]
  0878  vbroadcastss zmm5, [0xaee]
  0882  vfmadd213ps zmm5, zmm8, zmm7
  0888  vsubps zmm9, zmm5, zmm7
  088e  vbroadcastss zmm7, [0xaf2]
  0898  vfmadd231ps zmm8, zmm9, zmm7
  089e  vbroadcastss zmm7, [0xaf6]
  08a8  vfmadd231ps zmm8, zmm9, zmm7
  08ae  vbroadcastss zmm7, [0xafa]
  08b8  vbroadcastss zmm10, [0xafe]
  08c2  vfmadd213ps zmm7, zmm8, zmm10
  08c8  vbroadcastss zmm10, [0xb02]
  08d2  vfmadd213ps zmm7, zmm8, zmm10
  08d8  vbroadcastss zmm10, [0xb06]
  08e2  vfmadd213ps zmm7, zmm8, zmm10
  08e8  vbroadcastss zmm10, [0xb0a]
  08f2  vfmadd213ps zmm7, zmm8, zmm10
  08f8  vbroadcastss zmm10, [0xb0e]
  0902  vfmadd213ps zmm7, zmm8, zmm10
  0908  vbroadcastss zmm10, [0xb0e]
  0912  vfmadd213ps zmm7, zmm8, zmm10
  0918  vbroadcastss zmm10, [0xb12]
  0922  vbroadcastss zmm8, [0xb16]
  092c  vfmadd213ps zmm9, zmm8, zmm10
  0932  vpslld zmm10, zmm9, 0x17
  0939  vpsubd zmm8, zmm5, zmm9
  093f  vpslld zmm9, zmm8, 0x17
  0946  vmulps zmm8, zmm7, zmm10
  094c  vmulps zmm10, zmm8, zmm9
  0952  vbroadcastss zmm9, [0xb1a]
  095c  vmovaps zmm6, zmm9
  0962  vmovaps zmm6{k1}, zmm10
  0968  vaddps zmm0, zmm0, zmm6
  096e  vmovups [rsi+rbx*4]{k1}, zmm10
  0975  vaddps zmm0, zmm0, zmm1
  097b  vaddps zmm2, zmm2, zmm3
  0981  vaddps zmm0, zmm0, zmm2
  0987  vshuff32x4 zmm5, zmm0, zmm0, 0x4e
  098e  vaddps zmm0, zmm0, zmm5
  0994  vshuff32x4 zmm5, zmm0, zmm0, 0xb1
  099b  vaddps zmm0, zmm0, zmm5
  09a1  vpermilps zmm5, zmm0, 0x4e
  09a8  vaddps zmm0, zmm0, zmm5
  09ae  vpermilps zmm5, zmm0, 0xb1
  09b5  vaddps zmm0, zmm0, zmm5
  09bb  vcvtss2sd xmm0, xmm0, xmm0
  09c1  vaddsd xmm0, xmm0, [rsp+0x60]
  09c9  vmovsd [rsp+0x60], xmm0
  09d1  vcvtsd2ss xmm0, xmm0, [rsp+0x60]
  09d7  vmovss [rsp+0x58], xmm0
  09dd  mov rdx, [rsp+0x40]
  09e2  vbroadcastss zmm0, [rsp+0x58]
  09ea  xor rbx, rbx
  09ed  lea r15, [rbx+0x3e8]
  09f4  lea r14, [r15-0x40]
  09f8  cmp rbx, r14
  09fb  jg short 0xa5c
  09fd  vmovups zmm1, [rdx+rbx*4]
  0a04  vdivps zmm2, zmm1, zmm0
  0a0a  vmovups [rdx+rbx*4], zmm2
  0a11  vmovups zmm1, [rdx+rbx*4+0x40]
  0a19  vdivps zmm2, zmm1, zmm0
  0a1f  vmovups [rdx+rbx*4+0x40], zmm2
  0a27  vmovups zmm1, [rdx+rbx*4+0x80]
  0a2f  vdivps zmm2, zmm1, zmm0
  0a35  vmovups [rdx+rbx*4+0x80], zmm2
  0a3d  vmovups zmm1, [rdx+rbx*4+0xc0]
  0a45  vdivps zmm2, zmm1, zmm0
  0a4b  vmovups [rdx+rbx*4+0xc0], zmm2
  0a53  add rbx, 0x40
  0a57  cmp rbx, r14
  0a5a  jle short 0x9fd
  0a5c  lea r14, [r15-0x10]
  0a60  cmp rbx, r14
  0a63  jg short 0xa82
  0a65  vmovups zmm1, [rdx+rbx*4]
  0a6c  vdivps zmm2, zmm1, zmm0
  0a72  vmovups [rdx+rbx*4], zmm2
  0a79  add rbx, 0x10
  0a7d  cmp rbx, r14
  0a80  jle short 0xa65
  0a82  cmp rbx, r15
  0a85  jge short 0xab1
  0a87  mov rcx, r15
  0a8a  sub rcx, rbx
  0a8d  mov eax, 1
  0a92  shl eax, cl
  0a94  sub eax, 1
  0a99  kmovw k1, eax
  0a9d  vmovups zmm1{k1}{z}, [rdx+rbx*4]
  0aa4  vdivps zmm2, zmm1, zmm0
  0aaa  vmovups [rdx+rbx*4]{k1}, zmm2
  0ab1  mov rax, [rsp+0x20]
  0ab6  add rax, 1
  0abc  mov [rsp+0x20], rax
  0ac1  cmp rax, [rsp+0x10]
  0ac6  jl 0x4c
  0acc  mov rsp, [rsp]
  0ad0  pop r15
  0ad2  pop r14
  0ad4  pop r13
  0ad6  pop r12
  0ad8  pop rbp
  0ad9  pop rbx
  0ada  vzeroupper
  0add  ret
  constants (64 bytes):
    ff800000 42b20000 c2d00000 4b4000fe 3fb8aa3b bf317218 3102e308 3ab5144a
    3c091d3a 3d2aac79 3e2aaa48 3efffffe 3f800000 4b40007f 3f000000 00000000
