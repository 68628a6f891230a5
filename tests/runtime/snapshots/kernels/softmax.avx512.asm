AVX-512 row kernel, 2859 bytes of machine code, 0 micro-kernel calls per tile, 1 values held in registers:
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
  004d  jge 0xad9
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
  009e  vbroadcastss zmm0, [0xaeb]
  00a8  vbroadcastss zmm1, [0xaeb]
  00b2  vbroadcastss zmm2, [0xaeb]
  00bc  vbroadcastss zmm3, [0xaeb]
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
  018e  vbroadcastss zmm6, [0xaeb]
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
  0273  vbroadcastss zmm5, [0xaef]
  027d  vminps zmm7, zmm5, zmm6
  0283  vbroadcastss zmm5, [0xaf3]
  028d  vmaxps zmm8, zmm5, zmm7
  0293  vbroadcastss zmm7, [0xaf7]
  029d  vbroadcastss zmm5, [0xafb]
  02a7  vfmadd213ps zmm5, zmm8, zmm7
  02ad  vsubps zmm9, zmm5, zmm7
  02b3  vbroadcastss zmm7, [0xaff]
  02bd  vfmadd231ps zmm8, zmm9, zmm7
  02c3  vbroadcastss zmm7, [0xb03]
  02cd  vfmadd231ps zmm8, zmm9, zmm7
  02d3  vbroadcastss zmm7, [0xb07]
  02dd  vbroadcastss zmm10, [0xb0b]
  02e7  vfmadd213ps zmm7, zmm8, zmm10
  02ed  vbroadcastss zmm10, [0xb0f]
  02f7  vfmadd213ps zmm7, zmm8, zmm10
  02fd  vbroadcastss zmm10, [0xb13]
  0307  vfmadd213ps zmm7, zmm8, zmm10
  030d  vbroadcastss zmm10, [0xb17]
  0317  vfmadd213ps zmm7, zmm8, zmm10
  031d  vbroadcastss zmm10, [0xb1b]
  0327  vfmadd213ps zmm7, zmm8, zmm10
  032d  vbroadcastss zmm10, [0xb1b]
  0337  vfmadd213ps zmm7, zmm8, zmm10
  033d  vbroadcastss zmm10, [0xb1f]
  0347  vbroadcastss zmm8, [0xb23]
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
  0393  vbroadcastss zmm5, [0xaef]
  039d  vminps zmm7, zmm5, zmm6
  03a3  vbroadcastss zmm5, [0xaf3]
  03ad  vmaxps zmm8, zmm5, zmm7
  03b3  vbroadcastss zmm7, [0xaf7]
  03bd  vbroadcastss zmm5, [0xafb]
  03c7  vfmadd213ps zmm5, zmm8, zmm7
  03cd  vsubps zmm9, zmm5, zmm7
  03d3  vbroadcastss zmm7, [0xaff]
  03dd  vfmadd231ps zmm8, zmm9, zmm7
  03e3  vbroadcastss zmm7, [0xb03]
  03ed  vfmadd231ps zmm8, zmm9, zmm7
  03f3  vbroadcastss zmm7, [0xb07]
  03fd  vbroadcastss zmm10, [0xb0b]
  0407  vfmadd213ps zmm7, zmm8, zmm10
  040d  vbroadcastss zmm10, [0xb0f]
  0417  vfmadd213ps zmm7, zmm8, zmm10
  041d  vbroadcastss zmm10, [0xb13]
  0427  vfmadd213ps zmm7, zmm8, zmm10
  042d  vbroadcastss zmm10, [0xb17]
  0437  vfmadd213ps zmm7, zmm8, zmm10
  043d  vbroadcastss zmm10, [0xb1b]
  0447  vfmadd213ps zmm7, zmm8, zmm10
  044d  vbroadcastss zmm10, [0xb1b]
  0457  vfmadd213ps zmm7, zmm8, zmm10
  045d  vbroadcastss zmm10, [0xb1f]
  0467  vbroadcastss zmm8, [0xb23]
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
  04b3  vbroadcastss zmm5, [0xaef]
  04bd  vminps zmm7, zmm5, zmm6
  04c3  vbroadcastss zmm5, [0xaf3]
  04cd  vmaxps zmm8, zmm5, zmm7
  04d3  vbroadcastss zmm7, [0xaf7]
  04dd  vbroadcastss zmm5, [0xafb]
  04e7  vfmadd213ps zmm5, zmm8, zmm7
  04ed  vsubps zmm9, zmm5, zmm7
  04f3  vbroadcastss zmm7, [0xaff]
  04fd  vfmadd231ps zmm8, zmm9, zmm7
  0503  vbroadcastss zmm7, [0xb03]
  050d  vfmadd231ps zmm8, zmm9, zmm7
  0513  vbroadcastss zmm7, [0xb07]
  051d  vbroadcastss zmm10, [0xb0b]
  0527  vfmadd213ps zmm7, zmm8, zmm10
  052d  vbroadcastss zmm10, [0xb0f]
  0537  vfmadd213ps zmm7, zmm8, zmm10
  053d  vbroadcastss zmm10, [0xb13]
  0547  vfmadd213ps zmm7, zmm8, zmm10
  054d  vbroadcastss zmm10, [0xb17]
  0557  vfmadd213ps zmm7, zmm8, zmm10
  055d  vbroadcastss zmm10, [0xb1b]
  0567  vfmadd213ps zmm7, zmm8, zmm10
  056d  vbroadcastss zmm10, [0xb1b]
  0577  vfmadd213ps zmm7, zmm8, zmm10
  057d  vbroadcastss zmm10, [0xb1f]
  0587  vbroadcastss zmm8, [0xb23]
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
  05d3  vbroadcastss zmm5, [0xaef]
  05dd  vminps zmm7, zmm5, zmm6
  05e3  vbroadcastss zmm5, [0xaf3]
  05ed  vmaxps zmm8, zmm5, zmm7
  05f3  vbroadcastss zmm7, [0xaf7]
  05fd  vbroadcastss zmm5, [0xafb]
  0607  vfmadd213ps zmm5, zmm8, zmm7
  060d  vsubps zmm9, zmm5, zmm7
  0613  vbroadcastss zmm7, [0xaff]
  061d  vfmadd231ps zmm8, zmm9, zmm7
  0623  vbroadcastss zmm7, [0xb03]
  062d  vfmadd231ps zmm8, zmm9, zmm7
  0633  vbroadcastss zmm7, [0xb07]
  063d  vbroadcastss zmm10, [0xb0b]
  0647  vfmadd213ps zmm7, zmm8, zmm10
  064d  vbroadcastss zmm10, [0xb0f]
  0657  vfmadd213ps zmm7, zmm8, zmm10
  065d  vbroadcastss zmm10, [0xb13]
  0667  vfmadd213ps zmm7, zmm8, zmm10
  066d  vbroadcastss zmm10, [0xb17]
  0677  vfmadd213ps zmm7, zmm8, zmm10
  067d  vbroadcastss zmm10, [0xb1b]
  0687  vfmadd213ps zmm7, zmm8, zmm10
  068d  vbroadcastss zmm10, [0xb1b]
  0697  vfmadd213ps zmm7, zmm8, zmm10
  069d  vbroadcastss zmm10, [0xb1f]
  06a7  vbroadcastss zmm8, [0xb23]
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
  070c  vbroadcastss zmm5, [0xaef]
  0716  vminps zmm7, zmm5, zmm6
  071c  vbroadcastss zmm5, [0xaf3]
  0726  vmaxps zmm8, zmm5, zmm7
  072c  vbroadcastss zmm7, [0xaf7]
  0736  vbroadcastss zmm5, [0xafb]
  0740  vfmadd213ps zmm5, zmm8, zmm7
  0746  vsubps zmm9, zmm5, zmm7
  074c  vbroadcastss zmm7, [0xaff]
  0756  vfmadd231ps zmm8, zmm9, zmm7
  075c  vbroadcastss zmm7, [0xb03]
  0766  vfmadd231ps zmm8, zmm9, zmm7
  076c  vbroadcastss zmm7, [0xb07]
  0776  vbroadcastss zmm10, [0xb0b]
  0780  vfmadd213ps zmm7, zmm8, zmm10
  0786  vbroadcastss zmm10, [0xb0f]
  0790  vfmadd213ps zmm7, zmm8, zmm10
  0796  vbroadcastss zmm10, [0xb13]
  07a0  vfmadd213ps zmm7, zmm8, zmm10
  07a6  vbroadcastss zmm10, [0xb17]
  07b0  vfmadd213ps zmm7, zmm8, zmm10
  07b6  vbroadcastss zmm10, [0xb1b]
  07c0  vfmadd213ps zmm7, zmm8, zmm10
  07c6  vbroadcastss zmm10, [0xb1b]
  07d0  vfmadd213ps zmm7, zmm8, zmm10
  07d6  vbroadcastss zmm10, [0xb1f]
  07e0  vbroadcastss zmm8, [0xb23]
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
  0857  vbroadcastss zmm5, [0xaef]
  0861  vminps zmm7, zmm5, zmm6
  0867  vbroadcastss zmm5, [0xaf3]
  0871  vmaxps zmm8, zmm5, zmm7
  0877  vbroadcastss zmm7, [0xaf7]
  0881  vbroadcastss zmm5, [0xafb]
  088b  vfmadd213ps zmm5, zmm8, zmm7
  0891  vsubps zmm9, zmm5, zmm7
  0897  vbroadcastss zmm7, [0xaff]
  08a1  vfmadd231ps zmm8, zmm9, zmm7
  08a7  vbroadcastss zmm7, [0xb03]
  08b1  vfmadd231ps zmm8, zmm9, zmm7
  08b7  vbroadcastss zmm7, [0xb07]
  08c1  vbroadcastss zmm10, [0xb0b]
  08cb  vfmadd213ps zmm7, zmm8, zmm10
  08d1  vbroadcastss zmm10, [0xb0f]
  08db  vfmadd213ps zmm7, zmm8, zmm10
  08e1  vbroadcastss zmm10, [0xb13]
  08eb  vfmadd213ps zmm7, zmm8, zmm10
  08f1  vbroadcastss zmm10, [0xb17]
  08fb  vfmadd213ps zmm7, zmm8, zmm10
  0901  vbroadcastss zmm10, [0xb1b]
  090b  vfmadd213ps zmm7, zmm8, zmm10
  0911  vbroadcastss zmm10, [0xb1b]
  091b  vfmadd213ps zmm7, zmm8, zmm10
  0921  vbroadcastss zmm10, [0xb1f]
  092b  vbroadcastss zmm8, [0xb23]
  0935  vfmadd213ps zmm9, zmm8, zmm10
  093b  vpslld zmm10, zmm9, 0x17
  0942  vpsubd zmm8, zmm5, zmm9
  0948  vpslld zmm9, zmm8, 0x17
  094f  vmulps zmm8, zmm7, zmm10
  0955  vmulps zmm10, zmm8, zmm9
  095b  vbroadcastss zmm9, [0xb27]
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
  09e7  mov rdx, [rsp+0x40]
  09ec  vbroadcastss zmm0, [rsp+0x58]
  09f4  xor rbx, rbx
  09f7  lea r15, [rbx+0x3e8]
  09fe  lea r14, [r15-0x40]
  0a02  cmp rbx, r14
  0a05  jg short 0xa67
  0a07  vmovups zmm1, [rsp+rbx*4+0x80]
  0a0f  vdivps zmm2, zmm1, zmm0
  0a15  vmovups [rdx+rbx*4], zmm2
  0a1c  vmovups zmm1, [rsp+rbx*4+0xc0]
  0a24  vdivps zmm2, zmm1, zmm0
  0a2a  vmovups [rdx+rbx*4+0x40], zmm2
  0a32  vmovups zmm1, [rsp+rbx*4+0x100]
  0a3a  vdivps zmm2, zmm1, zmm0
  0a40  vmovups [rdx+rbx*4+0x80], zmm2
  0a48  vmovups zmm1, [rsp+rbx*4+0x140]
  0a50  vdivps zmm2, zmm1, zmm0
  0a56  vmovups [rdx+rbx*4+0xc0], zmm2
  0a5e  add rbx, 0x40
  0a62  cmp rbx, r14
  0a65  jle short 0xa07
  0a67  lea r14, [r15-0x10]
  0a6b  cmp rbx, r14
  0a6e  jg short 0xa8e
  0a70  vmovups zmm1, [rsp+rbx*4+0x80]
  0a78  vdivps zmm2, zmm1, zmm0
  0a7e  vmovups [rdx+rbx*4], zmm2
  0a85  add rbx, 0x10
  0a89  cmp rbx, r14
  0a8c  jle short 0xa70
  0a8e  cmp rbx, r15
  0a91  jge short 0xabe
  0a93  mov rcx, r15
  0a96  sub rcx, rbx
  0a99  mov eax, 1
  0a9e  shl eax, cl
  0aa0  sub eax, 1
  0aa5  kmovw k1, eax
  0aa9  vmovups zmm1{k1}{z}, [rsp+rbx*4+0x80]
  0ab1  vdivps zmm2, zmm1, zmm0
  0ab7  vmovups [rdx+rbx*4]{k1}, zmm2
  0abe  mov rax, [rsp+0x20]
  0ac3  add rax, 1
  0ac9  mov [rsp+0x20], rax
  0ace  cmp rax, [rsp+0x10]
  0ad3  jl 0x58
  0ad9  mov rsp, [rsp]
  0add  pop r15
  0adf  pop r14
  0ae1  pop r13
  0ae3  pop r12
  0ae5  pop rbp
  0ae6  pop rbx
  0ae7  vzeroupper
  0aea  ret
  constants (64 bytes):
    ff800000 42b20000 c2d00000 4b4000fe 3fb8aa3b bf317218 3102e308 3ab5144a
    3c091d3a 3d2aac79 3e2aaa48 3efffffe 3f800000 4b40007f 3f000000 00000000
