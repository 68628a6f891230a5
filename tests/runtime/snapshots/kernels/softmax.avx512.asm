AVX-512 row kernel, 2961 bytes of machine code, 0 micro-kernel calls per tile, 2 values held in registers:
  0000  push rbx
  0001  push rbp
  0002  push r12
  0004  push r13
  0006  push r14
  0008  push r15
  000a  mov rax, rsp
  000d  and rsp, 0xffffffffffffffc0
  0011  sub rsp, 0x1000
  0018  or qword ptr [rsp], 0
  001d  sub rsp, 0x80
  0024  mov [rsp], rax
  0028  mov [rsp+8], rsi
  002d  mov [rsp+0x10], rdx
  0032  mov rax, [rdi]
  0035  mov [rsp+0x28], rax
  003a  mov rax, [rdi+8]
  003e  mov [rsp+0x30], rax
  0043  mov rax, [rsp+8]
  0048  cmp rax, [rsp+0x10]
  004d  jge 0xb3f
  0053  mov [rsp+0x20], rax
  0058  mov rcx, [rsp+0x28]
  005d  mov rax, [rsp+0x20]
  0062  imul rax, 0xfa0
  0069  add rcx, rax
  006c  mov [rsp+0x38], rcx
  0071  mov rcx, [rsp+0x30]
  0076  mov rax, [rsp+0x20]
  007b  imul rax, 0xfa0
  0082  add rcx, rax
  0085  mov [rsp+0x40], rcx
  008a  mov dword ptr [rsp+0x50], 0xff800000
  0092  mov rdx, [rsp+0x38]
  0097  kxorw k2, k2, k2
  009b  xor rbx, rbx
  009e  vbroadcastss zmm0, [0xb51]
  00a8  vbroadcastss zmm1, [0xb51]
  00b2  vbroadcastss zmm2, [0xb51]
  00bc  vbroadcastss zmm3, [0xb51]
  00c6  lea r15, [rbx+0x3e8]
  00cd  lea r14, [r15-0x40]
  00d1  cmp rbx, r14
  00d4  jg short 0x142
  00d6  vmovups zmm4, [rdx+rbx*4]
  00dd  vcmpunordps k7, zmm4, zmm4
  00e4  korw k2, k2, k7
  00e8  vmaxps zmm0, zmm4, zmm0
  00ee  vmovups zmm4, [rdx+rbx*4+0x40]
  00f6  vcmpunordps k7, zmm4, zmm4
  00fd  korw k2, k2, k7
  0101  vmaxps zmm1, zmm4, zmm1
  0107  vmovups zmm4, [rdx+rbx*4+0x80]
  010f  vcmpunordps k7, zmm4, zmm4
  0116  korw k2, k2, k7
  011a  vmaxps zmm2, zmm4, zmm2
  0120  vmovups zmm4, [rdx+rbx*4+0xc0]
  0128  vcmpunordps k7, zmm4, zmm4
  012f  korw k2, k2, k7
  0133  vmaxps zmm3, zmm4, zmm3
  0139  add rbx, 0x40
  013d  cmp rbx, r14
  0140  jle short 0xd6
  0142  lea r14, [r15-0x10]
  0146  cmp rbx, r14
  0149  jg short 0x16c
  014b  vmovups zmm4, [rdx+rbx*4]
  0152  vcmpunordps k7, zmm4, zmm4
  0159  korw k2, k2, k7
  015d  vmaxps zmm0, zmm4, zmm0
  0163  add rbx, 0x10
  0167  cmp rbx, r14
  016a  jle short 0x14b
  016c  cmp rbx, r15
  016f  jge short 0x1b5
  0171  mov rcx, r15
  0174  sub rcx, rbx
  0177  mov eax, 1
  017c  shl eax, cl
  017e  sub eax, 1
  0183  kmovw k1, eax
  0187  vmovups zmm4{k1}{z}, [rdx+rbx*4]
  018e  vbroadcastss zmm6, [0xb51]
  0198  vmovaps zmm5, zmm6
  019e  vmovaps zmm5{k1}, zmm4
  01a4  vcmpunordps k7, zmm5, zmm5
  01ab  korw k2, k2, k7
  01af  vmaxps zmm0, zmm5, zmm0
  01b5  vmaxps zmm0, zmm0, zmm1
  01bb  vmaxps zmm2, zmm2, zmm3
  01c1  vmaxps zmm0, zmm0, zmm2
  01c7  vshuff32x4 zmm4, zmm0, zmm0, 0x4e
  01ce  vmaxps zmm0, zmm0, zmm4
  01d4  vshuff32x4 zmm4, zmm0, zmm0, 0xb1
  01db  vmaxps zmm0, zmm0, zmm4
  01e1  vpermilps zmm4, zmm0, 0x4e
  01e8  vmaxps zmm0, zmm0, zmm4
  01ee  vpermilps zmm4, zmm0, 0xb1
  01f5  vmaxps zmm0, zmm0, zmm4
  01fb  vmaxss xmm0, xmm0, [rsp+0x50]
  0203  vmovss [rsp+0x50], xmm0
  020b  mov eax, [rsp+0x50]
  020f  mov [rsp+0x48], eax
  0213  kortestw k2, k2
  0217  je short 0x221
  0219  mov dword ptr [rsp+0x48], 0x7fc00000
  0221  mov qword ptr [rsp+0x60], 0
  022a  mov rdx, [rsp+0x38]
  022f  vbroadcastss zmm4, [rsp+0x48]
  0237  xor rbx, rbx
  023a  vpxord zmm0, zmm0, zmm0
  0240  vpxord zmm1, zmm1, zmm1
  0246  vpxord zmm2, zmm2, zmm2
  024c  vpxord zmm3, zmm3, zmm3
  0252  lea r15, [rbx+0x3e8]
  0259  lea r14, [r15-0x40]
  025d  cmp rbx, r14
  0260  jg 0x6f2
  0266  vmovups zmm5, [rdx+rbx*4]
  026d  vsubps zmm6, zmm5, zmm4
  0273  vbroadcastss zmm5, [0xb55]
  027d  vminps zmm7, zmm5, zmm6
  0283  vbroadcastss zmm5, [0xb59]
  028d  vmaxps zmm8, zmm5, zmm7
  0293  vbroadcastss zmm7, [0xb5d]
  029d  vbroadcastss zmm5, [0xb61]
  02a7  vfmadd213ps zmm5, zmm8, zmm7
  02ad  vsubps zmm9, zmm5, zmm7
  02b3  vbroadcastss zmm7, [0xb65]
  02bd  vfmadd231ps zmm8, zmm9, zmm7
  02c3  vbroadcastss zmm7, [0xb69]
  02cd  vfmadd231ps zmm8, zmm9, zmm7
  02d3  vbroadcastss zmm7, [0xb6d]
  02dd  vbroadcastss zmm10, [0xb71]
  02e7  vfmadd213ps zmm7, zmm8, zmm10
  02ed  vbroadcastss zmm10, [0xb75]
  02f7  vfmadd213ps zmm7, zmm8, zmm10
  02fd  vbroadcastss zmm10, [0xb79]
  0307  vfmadd213ps zmm7, zmm8, zmm10
  030d  vbroadcastss zmm10, [0xb7d]
  0317  vfmadd213ps zmm7, zmm8, zmm10
  031d  vbroadcastss zmm10, [0xb81]
  0327  vfmadd213ps zmm7, zmm8, zmm10
  032d  vbroadcastss zmm10, [0xb81]
  0337  vfmadd213ps zmm7, zmm8, zmm10
  033d  vbroadcastss zmm10, [0xb85]
  0347  vbroadcastss zmm8, [0xb89]
  0351  vfmadd213ps zmm9, zmm8, zmm10
  0357  vpslld zmm10, zmm9, 0x17
  035e  vpsubd zmm8, zmm5, zmm9
  0364  vpslld zmm9, zmm8, 0x17
  036b  vmulps zmm8, zmm7, zmm10
  0371  vmulps zmm10, zmm8, zmm9
  0377  vaddps zmm0, zmm0, zmm10
  037d  vmovups [rsp+rbx*4+0x80], zmm10
  0385  vmovups zmm5, [rdx+rbx*4+0x40]
  038d  vsubps zmm6, zmm5, zmm4
  0393  vbroadcastss zmm5, [0xb55]
  039d  vminps zmm7, zmm5, zmm6
  03a3  vbroadcastss zmm5, [0xb59]
  03ad  vmaxps zmm8, zmm5, zmm7
  03b3  vbroadcastss zmm7, [0xb5d]
  03bd  vbroadcastss zmm5, [0xb61]
  03c7  vfmadd213ps zmm5, zmm8, zmm7
  03cd  vsubps zmm9, zmm5, zmm7
  03d3  vbroadcastss zmm7, [0xb65]
  03dd  vfmadd231ps zmm8, zmm9, zmm7
  03e3  vbroadcastss zmm7, [0xb69]
  03ed  vfmadd231ps zmm8, zmm9, zmm7
  03f3  vbroadcastss zmm7, [0xb6d]
  03fd  vbroadcastss zmm10, [0xb71]
  0407  vfmadd213ps zmm7, zmm8, zmm10
  040d  vbroadcastss zmm10, [0xb75]
  0417  vfmadd213ps zmm7, zmm8, zmm10
  041d  vbroadcastss zmm10, [0xb79]
  0427  vfmadd213ps zmm7, zmm8, zmm10
  042d  vbroadcastss zmm10, [0xb7d]
  0437  vfmadd213ps zmm7, zmm8, zmm10
  043d  vbroadcastss zmm10, [0xb81]
  0447  vfmadd213ps zmm7, zmm8, zmm10
  044d  vbroadcastss zmm10, [0xb81]
  0457  vfmadd213ps zmm7, zmm8, zmm10
  045d  vbroadcastss zmm10, [0xb85]
  0467  vbroadcastss zmm8, [0xb89]
  0471  vfmadd213ps zmm9, zmm8, zmm10
  0477  vpslld zmm10, zmm9, 0x17
  047e  vpsubd zmm8, zmm5, zmm9
  0484  vpslld zmm9, zmm8, 0x17
  048b  vmulps zmm8, zmm7, zmm10
  0491  vmulps zmm10, zmm8, zmm9
  0497  vaddps zmm1, zmm1, zmm10
  049d  vmovups [rsp+rbx*4+0xc0], zmm10
  04a5  vmovups zmm5, [rdx+rbx*4+0x80]
  04ad  vsubps zmm6, zmm5, zmm4
  04b3  vbroadcastss zmm5, [0xb55]
  04bd  vminps zmm7, zmm5, zmm6
  04c3  vbroadcastss zmm5, [0xb59]
  04cd  vmaxps zmm8, zmm5, zmm7
  04d3  vbroadcastss zmm7, [0xb5d]
  04dd  vbroadcastss zmm5, [0xb61]
  04e7  vfmadd213ps zmm5, zmm8, zmm7
  04ed  vsubps zmm9, zmm5, zmm7
  04f3  vbroadcastss zmm7, [0xb65]
  04fd  vfmadd231ps zmm8, zmm9, zmm7
  0503  vbroadcastss zmm7, [0xb69]
  050d  vfmadd231ps zmm8, zmm9, zmm7
  0513  vbroadcastss zmm7, [0xb6d]
  051d  vbroadcastss zmm10, [0xb71]
  0527  vfmadd213ps zmm7, zmm8, zmm10
  052d  vbroadcastss zmm10, [0xb75]
  0537  vfmadd213ps zmm7, zmm8, zmm10
  053d  vbroadcastss zmm10, [0xb79]
  0547  vfmadd213ps zmm7, zmm8, zmm10
  054d  vbroadcastss zmm10, [0xb7d]
  0557  vfmadd213ps zmm7, zmm8, zmm10
  055d  vbroadcastss zmm10, [0xb81]
  0567  vfmadd213ps zmm7, zmm8, zmm10
  056d  vbroadcastss zmm10, [0xb81]
  0577  vfmadd213ps zmm7, zmm8, zmm10
  057d  vbroadcastss zmm10, [0xb85]
  0587  vbroadcastss zmm8, [0xb89]
  0591  vfmadd213ps zmm9, zmm8, zmm10
  0597  vpslld zmm10, zmm9, 0x17
  059e  vpsubd zmm8, zmm5, zmm9
  05a4  vpslld zmm9, zmm8, 0x17
  05ab  vmulps zmm8, zmm7, zmm10
  05b1  vmulps zmm10, zmm8, zmm9
  05b7  vaddps zmm2, zmm2, zmm10
  05bd  vmovups [rsp+rbx*4+0x100], zmm10
  05c5  vmovups zmm5, [rdx+rbx*4+0xc0]
  05cd  vsubps zmm6, zmm5, zmm4
  05d3  vbroadcastss zmm5, [0xb55]
  05dd  vminps zmm7, zmm5, zmm6
  05e3  vbroadcastss zmm5, [0xb59]
  05ed  vmaxps zmm8, zmm5, zmm7
  05f3  vbroadcastss zmm7, [0xb5d]
  05fd  vbroadcastss zmm5, [0xb61]
  0607  vfmadd213ps zmm5, zmm8, zmm7
  060d  vsubps zmm9, zmm5, zmm7
  0613  vbroadcastss zmm7, [0xb65]
  061d  vfmadd231ps zmm8, zmm9, zmm7
  0623  vbroadcastss zmm7, [0xb69]
  062d  vfmadd231ps zmm8, zmm9, zmm7
  0633  vbroadcastss zmm7, [0xb6d]
  063d  vbroadcastss zmm10, [0xb71]
  0647  vfmadd213ps zmm7, zmm8, zmm10
  064d  vbroadcastss zmm10, [0xb75]
  0657  vfmadd213ps zmm7, zmm8, zmm10
  065d  vbroadcastss zmm10, [0xb79]
  0667  vfmadd213ps zmm7, zmm8, zmm10
  066d  vbroadcastss zmm10, [0xb7d]
  0677  vfmadd213ps zmm7, zmm8, zmm10
  067d  vbroadcastss zmm10, [0xb81]
  0687  vfmadd213ps zmm7, zmm8, zmm10
  068d  vbroadcastss zmm10, [0xb81]
  0697  vfmadd213ps zmm7, zmm8, zmm10
  069d  vbroadcastss zmm10, [0xb85]
  06a7  vbroadcastss zmm8, [0xb89]
  06b1  vfmadd213ps zmm9, zmm8, zmm10
  06b7  vpslld zmm10, zmm9, 0x17
  06be  vpsubd zmm8, zmm5, zmm9
  06c4  vpslld zmm9, zmm8, 0x17
  06cb  vmulps zmm8, zmm7, zmm10
  06d1  vmulps zmm10, zmm8, zmm9
  06d7  vaddps zmm3, zmm3, zmm10
  06dd  vmovups [rsp+rbx*4+0x140], zmm10
  06e5  add rbx, 0x40
  06e9  cmp rbx, r14
  06ec  jle 0x266
  06f2  lea r14, [r15-0x10]
  06f6  cmp rbx, r14
  06f9  jg 0x82b
  06ff  vmovups zmm5, [rdx+rbx*4]
  0706  vsubps zmm6, zmm5, zmm4
  070c  vbroadcastss zmm5, [0xb55]
  0716  vminps zmm7, zmm5, zmm6
  071c  vbroadcastss zmm5, [0xb59]
  0726  vmaxps zmm8, zmm5, zmm7
  072c  vbroadcastss zmm7, [0xb5d]
  0736  vbroadcastss zmm5, [0xb61]
  0740  vfmadd213ps zmm5, zmm8, zmm7
  0746  vsubps zmm9, zmm5, zmm7
  074c  vbroadcastss zmm7, [0xb65]
  0756  vfmadd231ps zmm8, zmm9, zmm7
  075c  vbroadcastss zmm7, [0xb69]
  0766  vfmadd231ps zmm8, zmm9, zmm7
  076c  vbroadcastss zmm7, [0xb6d]
  0776  vbroadcastss zmm10, [0xb71]
  0780  vfmadd213ps zmm7, zmm8, zmm10
  0786  vbroadcastss zmm10, [0xb75]
  0790  vfmadd213ps zmm7, zmm8, zmm10
  0796  vbroadcastss zmm10, [0xb79]
  07a0  vfmadd213ps zmm7, zmm8, zmm10
  07a6  vbroadcastss zmm10, [0xb7d]
  07b0  vfmadd213ps zmm7, zmm8, zmm10
  07b6  vbroadcastss zmm10, [0xb81]
  07c0  vfmadd213ps zmm7, zmm8, zmm10
  07c6  vbroadcastss zmm10, [0xb81]
  07d0  vfmadd213ps zmm7, zmm8, zmm10
  07d6  vbroadcastss zmm10, [0xb85]
  07e0  vbroadcastss zmm8, [0xb89]
  07ea  vfmadd213ps zmm9, zmm8, zmm10
  07f0  vpslld zmm10, zmm9, 0x17
  07f7  vpsubd zmm8, zmm5, zmm9
  07fd  vpslld zmm9, zmm8, 0x17
  0804  vmulps zmm8, zmm7, zmm10
  080a  vmulps zmm10, zmm8, zmm9
  0810  vaddps zmm0, zmm0, zmm10
  0816  vmovups [rsp+rbx*4+0x80], zmm10
  081e  add rbx, 0x10
  0822  cmp rbx, r14
  0825  jle 0x6ff
  082b  cmp rbx, r15
  082e  jge 0x97f
  0834  mov rcx, r15
  0837  sub rcx, rbx
  083a  mov eax, 1
  083f  shl eax, cl
  0841  sub eax, 1
  0846  kmovw k1, eax
  084a  vmovups zmm5{k1}{z}, [rdx+rbx*4]
  0851  vsubps zmm6, zmm5, zmm4
  0857  vbroadcastss zmm5, [0xb55]
  0861  vminps zmm7, zmm5, zmm6
  0867  vbroadcastss zmm5, [0xb59]
  0871  vmaxps zmm8, zmm5, zmm7
  0877  vbroadcastss zmm7, [0xb5d]
  0881  vbroadcastss zmm5, [0xb61]
  088b  vfmadd213ps zmm5, zmm8, zmm7
  0891  vsubps zmm9, zmm5, zmm7
  0897  vbroadcastss zmm7, [0xb65]
  08a1  vfmadd231ps zmm8, zmm9, zmm7
  08a7  vbroadcastss zmm7, [0xb69]
  08b1  vfmadd231ps zmm8, zmm9, zmm7
  08b7  vbroadcastss zmm7, [0xb6d]
  08c1  vbroadcastss zmm10, [0xb71]
  08cb  vfmadd213ps zmm7, zmm8, zmm10
  08d1  vbroadcastss zmm10, [0xb75]
  08db  vfmadd213ps zmm7, zmm8, zmm10
  08e1  vbroadcastss zmm10, [0xb79]
  08eb  vfmadd213ps zmm7, zmm8, zmm10
  08f1  vbroadcastss zmm10, [0xb7d]
  08fb  vfmadd213ps zmm7, zmm8, zmm10
  0901  vbroadcastss zmm10, [0xb81]
  090b  vfmadd213ps zmm7, zmm8, zmm10
  0911  vbroadcastss zmm10, [0xb81]
  091b  vfmadd213ps zmm7, zmm8, zmm10
  0921  vbroadcastss zmm10, [0xb85]
  092b  vbroadcastss zmm8, [0xb89]
  0935  vfmadd213ps zmm9, zmm8, zmm10
  093b  vpslld zmm10, zmm9, 0x17
  0942  vpsubd zmm8, zmm5, zmm9
  0948  vpslld zmm9, zmm8, 0x17
  094f  vmulps zmm8, zmm7, zmm10
  0955  vmulps zmm10, zmm8, zmm9
  095b  vbroadcastss zmm9, [0xb8d]
  0965  vmovaps zmm6, zmm9
  096b  vmovaps zmm6{k1}, zmm10
  0971  vaddps zmm0, zmm0, zmm6
  0977  vmovups [rsp+rbx*4+0x80]{k1}, zmm10
  097f  vaddps zmm0, zmm0, zmm1
  0985  vaddps zmm2, zmm2, zmm3
  098b  vaddps zmm0, zmm0, zmm2
  0991  vshuff32x4 zmm5, zmm0, zmm0, 0x4e
  0998  vaddps zmm0, zmm0, zmm5
  099e  vshuff32x4 zmm5, zmm0, zmm0, 0xb1
  09a5  vaddps zmm0, zmm0, zmm5
  09ab  vpermilps zmm5, zmm0, 0x4e
  09b2  vaddps zmm0, zmm0, zmm5
  09b8  vpermilps zmm5, zmm0, 0xb1
  09bf  vaddps zmm0, zmm0, zmm5
  09c5  vcvtss2sd xmm0, xmm0, xmm0
  09cb  vaddsd xmm0, xmm0, [rsp+0x60]
  09d3  vmovsd [rsp+0x60], xmm0
  09db  vcvtsd2ss xmm0, xmm0, [rsp+0x60]
  09e1  vmovss [rsp+0x58], xmm0
  09e7  mov rdx, [rsp+0x38]
  09ec  mov rsi, [rsp+0x40]
  09f1  vbroadcastss zmm0, [rsp+0x48]
  09f9  vbroadcastss zmm1, [rsp+0x58]
  0a01  xor rbx, rbx
  0a04  lea r15, [rbx+0x3e8]
  0a0b  lea r14, [r15-0x40]
  0a0f  cmp rbx, r14
  0a12  jg 0xab3
  0a18  vmovups zmm2, [rdx+rbx*4]
  0a1f  vsubps zmm3, zmm2, zmm0
  0a25  vmovups zmm3, [rsp+rbx*4+0x80]
  0a2d  vdivps zmm2, zmm3, zmm1
  0a33  vmovups [rsi+rbx*4], zmm2
  0a3a  vmovups zmm2, [rdx+rbx*4+0x40]
  0a42  vsubps zmm3, zmm2, zmm0
  0a48  vmovups zmm3, [rsp+rbx*4+0xc0]
  0a50  vdivps zmm2, zmm3, zmm1
  0a56  vmovups [rsi+rbx*4+0x40], zmm2
  0a5e  vmovups zmm2, [rdx+rbx*4+0x80]
  0a66  vsubps zmm3, zmm2, zmm0
  0a6c  vmovups zmm3, [rsp+rbx*4+0x100]
  0a74  vdivps zmm2, zmm3, zmm1
  0a7a  vmovups [rsi+rbx*4+0x80], zmm2
  0a82  vmovups zmm2, [rdx+rbx*4+0xc0]
  0a8a  vsubps zmm3, zmm2, zmm0
  0a90  vmovups zmm3, [rsp+rbx*4+0x140]
  0a98  vdivps zmm2, zmm3, zmm1
  0a9e  vmovups [rsi+rbx*4+0xc0], zmm2
  0aa6  add rbx, 0x40
  0aaa  cmp rbx, r14
  0aad  jle 0xa18
  0ab3  lea r14, [r15-0x10]
  0ab7  cmp rbx, r14
  0aba  jg short 0xae7
  0abc  vmovups zmm2, [rdx+rbx*4]
  0ac3  vsubps zmm3, zmm2, zmm0
  0ac9  vmovups zmm3, [rsp+rbx*4+0x80]
  0ad1  vdivps zmm2, zmm3, zmm1
  0ad7  vmovups [rsi+rbx*4], zmm2
  0ade  add rbx, 0x10
  0ae2  cmp rbx, r14
  0ae5  jle short 0xabc
  0ae7  cmp rbx, r15
  0aea  jge short 0xb24
  0aec  mov rcx, r15
  0aef  sub rcx, rbx
  0af2  mov eax, 1
  0af7  shl eax, cl
  0af9  sub eax, 1
  0afe  kmovw k1, eax
  0b02  vmovups zmm2{k1}{z}, [rdx+rbx*4]
  0b09  vsubps zmm3, zmm2, zmm0
  0b0f  vmovups zmm3{k1}{z}, [rsp+rbx*4+0x80]
  0b17  vdivps zmm2, zmm3, zmm1
  0b1d  vmovups [rsi+rbx*4]{k1}, zmm2
  0b24  mov rax, [rsp+0x20]
  0b29  add rax, 1
  0b2f  mov [rsp+0x20], rax
  0b34  cmp rax, [rsp+0x10]
  0b39  jl 0x58
  0b3f  mov rsp, [rsp]
  0b43  pop r15
  0b45  pop r14
  0b47  pop r13
  0b49  pop r12
  0b4b  pop rbp
  0b4c  pop rbx
  0b4d  vzeroupper
  0b50  ret
  constants (64 bytes):
    ff800000 42b20000 c2d00000 4b4000fe 3fb8aa3b bf317218 3102e308 3ab5144a
    3c091d3a 3d2aac79 3e2aaa48 3efffffe 3f800000 4b40007f 3f000000 00000000
