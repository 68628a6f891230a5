AVX2 loop kernel, 1767 bytes of machine code, 0 micro-kernel calls per tile, 4 values held in registers:
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
  0029  mov [rsp+0x30], rax
  002e  mov rax, [rdi+8]
  0032  mov [rsp+0x38], rax
  0037  mov rax, [rsp+0x10]
  003c  sub rax, [rsp+8]
  0041  jle 0x655
  0047  mov [rsp+0x18], rax
  004c  mov rcx, [rsp+0x30]
  0051  mov rax, [rsp+8]
  0056  lea rcx, [rcx+rax*4]
  005a  mov [rsp+0x40], rcx
  005f  mov rcx, [rsp+0x38]
  0064  mov rax, [rsp+8]
  0069  lea rcx, [rcx+rax*4]
  006d  mov [rsp+0x48], rcx
  0072  mov rdx, [rsp+0x40]
  0077  mov rsi, [rsp+0x48]
  007c  vbroadcastss ymm0, [0x667]
  0085  vbroadcastss ymm1, [0x66b]
  008e  vbroadcastss ymm2, [0x66f]
  0097  vbroadcastss ymm3, [0x673]
  00a0  mov r15, [rsp+0x18]
  00a5  xor rbx, rbx
  00a8  lea r14, [r15-0x20]
  00ac  cmp rbx, r14
  00af  jg 0x454
  00b5  vmovups ymm4, [rdx+rbx*4]
  00ba  vmulps ymm5, ymm0, ymm4
  00be  vmulps ymm6, ymm1, ymm4
  00c2  vmulps ymm7, ymm6, ymm4
  00c6  vmulps ymm6, ymm7, ymm4
  00ca  vaddps ymm7, ymm4, ymm6
  00ce  vmulps ymm6, ymm2, ymm7
  00d2  vbroadcastss ymm7, [0x677]
  00db  vminps ymm4, ymm7, ymm6
  00df  vbroadcastss ymm7, [0x67b]
  00e8  vmaxps ymm8, ymm7, ymm4
  00ec  vmulps ymm4, ymm8, ymm8
  00f1  vbroadcastss ymm7, [0x67f]
  00fa  vbroadcastss ymm9, [0x683]
  0103  vfmadd213ps ymm7, ymm4, ymm9
  0108  vbroadcastss ymm9, [0x687]
  0111  vfmadd213ps ymm7, ymm4, ymm9
  0116  vbroadcastss ymm9, [0x68b]
  011f  vfmadd213ps ymm7, ymm4, ymm9
  0124  vbroadcastss ymm9, [0x68f]
  012d  vfmadd213ps ymm7, ymm4, ymm9
  0132  vbroadcastss ymm9, [0x693]
  013b  vfmadd213ps ymm7, ymm4, ymm9
  0140  vmulps ymm9, ymm8, ymm4
  0144  vfmadd213ps ymm9, ymm7, ymm8
  0149  vbroadcastss ymm8, [0x697]
  0152  vbroadcastss ymm7, [0x69b]
  015b  vfmadd213ps ymm8, ymm4, ymm7
  0160  vbroadcastss ymm7, [0x69f]
  0169  vfmadd213ps ymm8, ymm4, ymm7
  016e  vfmadd213ps ymm8, ymm4, ymm3
  0173  vdivps ymm4, ymm9, ymm8
  0178  vminps ymm8, ymm3, ymm4
  017c  vbroadcastss ymm4, [0x6a3]
  0185  vmaxps ymm9, ymm4, ymm8
  018a  vaddps ymm6, ymm3, ymm9
  018f  vmulps ymm9, ymm5, ymm6
  0193  vmovups [rsi+rbx*4], ymm9
  0198  vmovups ymm4, [rdx+rbx*4+0x20]
  019e  vmulps ymm5, ymm0, ymm4
  01a2  vmulps ymm6, ymm1, ymm4
  01a6  vmulps ymm7, ymm6, ymm4
  01aa  vmulps ymm6, ymm7, ymm4
  01ae  vaddps ymm7, ymm4, ymm6
  01b2  vmulps ymm6, ymm2, ymm7
  01b6  vbroadcastss ymm7, [0x677]
  01bf  vminps ymm4, ymm7, ymm6
  01c3  vbroadcastss ymm7, [0x67b]
  01cc  vmaxps ymm8, ymm7, ymm4
  01d0  vmulps ymm4, ymm8, ymm8
  01d5  vbroadcastss ymm7, [0x67f]
  01de  vbroadcastss ymm9, [0x683]
  01e7  vfmadd213ps ymm7, ymm4, ymm9
  01ec  vbroadcastss ymm9, [0x687]
  01f5  vfmadd213ps ymm7, ymm4, ymm9
  01fa  vbroadcastss ymm9, [0x68b]
  0203  vfmadd213ps ymm7, ymm4, ymm9
  0208  vbroadcastss ymm9, [0x68f]
  0211  vfmadd213ps ymm7, ymm4, ymm9
  0216  vbroadcastss ymm9, [0x693]
  021f  vfmadd213ps ymm7, ymm4, ymm9
  0224  vmulps ymm9, ymm8, ymm4
  0228  vfmadd213ps ymm9, ymm7, ymm8
  022d  vbroadcastss ymm8, [0x697]
  0236  vbroadcastss ymm7, [0x69b]
  023f  vfmadd213ps ymm8, ymm4, ymm7
  0244  vbroadcastss ymm7, [0x69f]
  024d  vfmadd213ps ymm8, ymm4, ymm7
  0252  vfmadd213ps ymm8, ymm4, ymm3
  0257  vdivps ymm4, ymm9, ymm8
  025c  vminps ymm8, ymm3, ymm4
  0260  vbroadcastss ymm4, [0x6a3]
  0269  vmaxps ymm9, ymm4, ymm8
  026e  vaddps ymm6, ymm3, ymm9
  0273  vmulps ymm9, ymm5, ymm6
  0277  vmovups [rsi+rbx*4+0x20], ymm9
  027d  vmovups ymm4, [rdx+rbx*4+0x40]
  0283  vmulps ymm5, ymm0, ymm4
  0287  vmulps ymm6, ymm1, ymm4
  028b  vmulps ymm7, ymm6, ymm4
  028f  vmulps ymm6, ymm7, ymm4
  0293  vaddps ymm7, ymm4, ymm6
  0297  vmulps ymm6, ymm2, ymm7
  029b  vbroadcastss ymm7, [0x677]
  02a4  vminps ymm4, ymm7, ymm6
  02a8  vbroadcastss ymm7, [0x67b]
  02b1  vmaxps ymm8, ymm7, ymm4
  02b5  vmulps ymm4, ymm8, ymm8
  02ba  vbroadcastss ymm7, [0x67f]
  02c3  vbroadcastss ymm9, [0x683]
  02cc  vfmadd213ps ymm7, ymm4, ymm9
  02d1  vbroadcastss ymm9, [0x687]
  02da  vfmadd213ps ymm7, ymm4, ymm9
  02df  vbroadcastss ymm9, [0x68b]
  02e8  vfmadd213ps ymm7, ymm4, ymm9
  02ed  vbroadcastss ymm9, [0x68f]
  02f6  vfmadd213ps ymm7, ymm4, ymm9
  02fb  vbroadcastss ymm9, [0x693]
  0304  vfmadd213ps ymm7, ymm4, ymm9
  0309  vmulps ymm9, ymm8, ymm4
  030d  vfmadd213ps ymm9, ymm7, ymm8
  0312  vbroadcastss ymm8, [0x697]
  031b  vbroadcastss ymm7, [0x69b]
  0324  vfmadd213ps ymm8, ymm4, ymm7
  0329  vbroadcastss ymm7, [0x69f]
  0332  vfmadd213ps ymm8, ymm4, ymm7
  0337  vfmadd213ps ymm8, ymm4, ymm3
  033c  vdivps ymm4, ymm9, ymm8
  0341  vminps ymm8, ymm3, ymm4
  0345  vbroadcastss ymm4, [0x6a3]
  034e  vmaxps ymm9, ymm4, ymm8
  0353  vaddps ymm6, ymm3, ymm9
  0358  vmulps ymm9, ymm5, ymm6
  035c  vmovups [rsi+rbx*4+0x40], ymm9
  0362  vmovups ymm4, [rdx+rbx*4+0x60]
  0368  vmulps ymm5, ymm0, ymm4
  036c  vmulps ymm6, ymm1, ymm4
  0370  vmulps ymm7, ymm6, ymm4
  0374  vmulps ymm6, ymm7, ymm4
  0378  vaddps ymm7, ymm4, ymm6
  037c  vmulps ymm6, ymm2, ymm7
  0380  vbroadcastss ymm7, [0x677]
  0389  vminps ymm4, ymm7, ymm6
  038d  vbroadcastss ymm7, [0x67b]
  0396  vmaxps ymm8, ymm7, ymm4
  039a  vmulps ymm4, ymm8, ymm8
  039f  vbroadcastss ymm7, [0x67f]
  03a8  vbroadcastss ymm9, [0x683]
  03b1  vfmadd213ps ymm7, ymm4, ymm9
  03b6  vbroadcastss ymm9, [0x687]
  03bf  vfmadd213ps ymm7, ymm4, ymm9
  03c4  vbroadcastss ymm9, [0x68b]
  03cd  vfmadd213ps ymm7, ymm4, ymm9
  03d2  vbroadcastss ymm9, [0x68f]
  03db  vfmadd213ps ymm7, ymm4, ymm9
  03e0  vbroadcastss ymm9, [0x693]
  03e9  vfmadd213ps ymm7, ymm4, ymm9
  03ee  vmulps ymm9, ymm8, ymm4
  03f2  vfmadd213ps ymm9, ymm7, ymm8
  03f7  vbroadcastss ymm8, [0x697]
  0400  vbroadcastss ymm7, [0x69b]
  0409  vfmadd213ps ymm8, ymm4, ymm7
  040e  vbroadcastss ymm7, [0x69f]
  0417  vfmadd213ps ymm8, ymm4, ymm7
  041c  vfmadd213ps ymm8, ymm4, ymm3
  0421  vdivps ymm4, ymm9, ymm8
  0426  vminps ymm8, ymm3, ymm4
  042a  vbroadcastss ymm4, [0x6a3]
  0433  vmaxps ymm9, ymm4, ymm8
  0438  vaddps ymm6, ymm3, ymm9
  043d  vmulps ymm9, ymm5, ymm6
  0441  vmovups [rsi+rbx*4+0x60], ymm9
  0447  add rbx, 0x20
  044b  cmp rbx, r14
  044e  jle 0xb5
  0454  lea r14, [r15-8]
  0458  cmp rbx, r14
  045b  jg 0x551
  0461  vmovups ymm4, [rdx+rbx*4]
  0466  vmulps ymm5, ymm0, ymm4
  046a  vmulps ymm6, ymm1, ymm4
  046e  vmulps ymm7, ymm6, ymm4
  0472  vmulps ymm6, ymm7, ymm4
  0476  vaddps ymm7, ymm4, ymm6
  047a  vmulps ymm6, ymm2, ymm7
  047e  vbroadcastss ymm7, [0x677]
  0487  vminps ymm4, ymm7, ymm6
  048b  vbroadcastss ymm7, [0x67b]
  0494  vmaxps ymm8, ymm7, ymm4
  0498  vmulps ymm4, ymm8, ymm8
  049d  vbroadcastss ymm7, [0x67f]
  04a6  vbroadcastss ymm9, [0x683]
  04af  vfmadd213ps ymm7, ymm4, ymm9
  04b4  vbroadcastss ymm9, [0x687]
  04bd  vfmadd213ps ymm7, ymm4, ymm9
  04c2  vbroadcastss ymm9, [0x68b]
  04cb  vfmadd213ps ymm7, ymm4, ymm9
  04d0  vbroadcastss ymm9, [0x68f]
  04d9  vfmadd213ps ymm7, ymm4, ymm9
  04de  vbroadcastss ymm9, [0x693]
  04e7  vfmadd213ps ymm7, ymm4, ymm9
  04ec  vmulps ymm9, ymm8, ymm4
  04f0  vfmadd213ps ymm9, ymm7, ymm8
  04f5  vbroadcastss ymm8, [0x697]
  04fe  vbroadcastss ymm7, [0x69b]
  0507  vfmadd213ps ymm8, ymm4, ymm7
  050c  vbroadcastss ymm7, [0x69f]
  0515  vfmadd213ps ymm8, ymm4, ymm7
  051a  vfmadd213ps ymm8, ymm4, ymm3
  051f  vdivps ymm4, ymm9, ymm8
  0524  vminps ymm8, ymm3, ymm4
  0528  vbroadcastss ymm4, [0x6a3]
  0531  vmaxps ymm9, ymm4, ymm8
  0536  vaddps ymm6, ymm3, ymm9
  053b  vmulps ymm9, ymm5, ymm6
  053f  vmovups [rsi+rbx*4], ymm9
  0544  add rbx, 8
  0548  cmp rbx, r14
  054b  jle 0x461
  0551  cmp rbx, r15
  0554  jge 0x655
  055a  mov rcx, r15
  055d  sub rcx, rbx
  0560  lea rax, [0x6a7]
  0567  neg rcx
  056a  vmovdqu ymm15, [rax+rcx*4+0x20]
  0570  vmaskmovps ymm4, ymm15, [rdx+rbx*4]
  0576  vmulps ymm5, ymm0, ymm4
  057a  vmulps ymm6, ymm1, ymm4
  057e  vmulps ymm7, ymm6, ymm4
  0582  vmulps ymm6, ymm7, ymm4
  0586  vaddps ymm7, ymm4, ymm6
  058a  vmulps ymm6, ymm2, ymm7
  058e  vbroadcastss ymm7, [0x677]
  0597  vminps ymm4, ymm7, ymm6
  059b  vbroadcastss ymm7, [0x67b]
  05a4  vmaxps ymm8, ymm7, ymm4
  05a8  vmulps ymm4, ymm8, ymm8
  05ad  vbroadcastss ymm7, [0x67f]
  05b6  vbroadcastss ymm9, [0x683]
  05bf  vfmadd213ps ymm7, ymm4, ymm9
  05c4  vbroadcastss ymm9, [0x687]
  05cd  vfmadd213ps ymm7, ymm4, ymm9
  05d2  vbroadcastss ymm9, [0x68b]
  05db  vfmadd213ps ymm7, ymm4, ymm9
  05e0  vbroadcastss ymm9, [0x68f]
  05e9  vfmadd213ps ymm7, ymm4, ymm9
  05ee  vbroadcastss ymm9, [0x693]
  05f7  vfmadd213ps ymm7, ymm4, ymm9
  05fc  vmulps ymm9, ymm8, ymm4
  0600  vfmadd213ps ymm9, ymm7, ymm8
  0605  vbroadcastss ymm8, [0x697]
  060e  vbroadcastss ymm7, [0x69b]
  0617  vfmadd213ps ymm8, ymm4, ymm7
  061c  vbroadcastss ymm7, [0x69f]
  0625  vfmadd213ps ymm8, ymm4, ymm7
  062a  vfmadd213ps ymm8, ymm4, ymm3
  062f  vdivps ymm4, ymm9, ymm8
  0634  vminps ymm8, ymm3, ymm4
  0638  vbroadcastss ymm4, [0x6a3]
  0641  vmaxps ymm9, ymm4, ymm8
  0646  vaddps ymm6, ymm3, ymm9
  064b  vmulps ymm9, ymm5, ymm6
  064f  vmaskmovps [rsi+rbx*4], ymm15, ymm9
  0655  mov rsp, [rsp]
  0659  pop r15
  065b  pop r14
  065d  pop r13
  065f  pop r12
  0661  pop rbp
  0662  pop rbx
  0663  vzeroupper
  0666  ret
  constants (128 bytes):
    3f000000 3d372713 3f4c422a 3f800000 4111999a c111999a a9bae463 2e65160a
    b2ac9512 373a9e86 3b4b3c5a 3e05f46f 3985457b 3cc892ce 3eeda4e1 bf800000
    ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff
    00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
