AVX2 row kernel, 2491 bytes of machine code, 0 micro-kernel calls per tile, 1 values held in registers, 1 stashed rows kept in outputs:
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
  0041  jge 0x929
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
  008b  vpxor ymm4, ymm4, ymm4
  008f  xor rbx, rbx
  0092  vbroadcastss ymm0, [0x93b]
  009b  vbroadcastss ymm1, [0x93b]
  00a4  vbroadcastss ymm2, [0x93b]
  00ad  vbroadcastss ymm3, [0x93b]
  00b6  lea r15, [rbx+0x3e8]
  00bd  lea r14, [r15-0x20]
  00c1  cmp rbx, r14
  00c4  jg short 0x11a
  00c6  vmovups ymm5, [rdx+rbx*4]
  00cb  vcmpunordps ymm6, ymm5, ymm5
  00d0  vpor ymm4, ymm4, ymm6
  00d4  vmaxps ymm0, ymm5, ymm0
  00d8  vmovups ymm5, [rdx+rbx*4+0x20]
  00de  vcmpunordps ymm6, ymm5, ymm5
  00e3  vpor ymm4, ymm4, ymm6
  00e7  vmaxps ymm1, ymm5, ymm1
  00eb  vmovups ymm5, [rdx+rbx*4+0x40]
  00f1  vcmpunordps ymm6, ymm5, ymm5
  00f6  vpor ymm4, ymm4, ymm6
  00fa  vmaxps ymm2, ymm5, ymm2
  00fe  vmovups ymm5, [rdx+rbx*4+0x60]
  0104  vcmpunordps ymm6, ymm5, ymm5
  0109  vpor ymm4, ymm4, ymm6
  010d  vmaxps ymm3, ymm5, ymm3
  0111  add rbx, 0x20
  0115  cmp rbx, r14
  0118  jle short 0xc6
  011a  lea r14, [r15-8]
  011e  cmp rbx, r14
  0121  jg short 0x13e
  0123  vmovups ymm5, [rdx+rbx*4]
  0128  vcmpunordps ymm6, ymm5, ymm5
  012d  vpor ymm4, ymm4, ymm6
  0131  vmaxps ymm0, ymm5, ymm0
  0135  add rbx, 8
  0139  cmp rbx, r14
  013c  jle short 0x123
  013e  cmp rbx, r15
  0141  jge short 0x17b
  0143  mov rcx, r15
  0146  sub rcx, rbx
  0149  lea rax, [0x97b]
  0150  neg rcx
  0153  vmovdqu ymm15, [rax+rcx*4+0x20]
  0159  vmaskmovps ymm5, ymm15, [rdx+rbx*4]
  015f  vbroadcastss ymm7, [0x93b]
  0168  vblendvps ymm6, ymm7, ymm5, ymm15
  016e  vcmpunordps ymm7, ymm6, ymm6
  0173  vpor ymm4, ymm4, ymm7
  0177  vmaxps ymm0, ymm6, ymm0
  017b  vmaxps ymm0, ymm0, ymm1
  017f  vmaxps ymm2, ymm2, ymm3
  0183  vmaxps ymm0, ymm0, ymm2
  0187  vperm2f128 ymm5, ymm0, ymm0, 1
  018d  vmaxps ymm0, ymm0, ymm5
  0191  vpermilps ymm5, ymm0, 0x4e
  0197  vmaxps ymm0, ymm0, ymm5
  019b  vpermilps ymm5, ymm0, 0xb1
  01a1  vmaxps ymm0, ymm0, ymm5
  01a5  vmaxss xmm0, xmm0, [rsp+0x50]
  01ab  vmovss [rsp+0x50], xmm0
  01b1  mov eax, [rsp+0x50]
  01b5  mov [rsp+0x48], eax
  01b9  vptest ymm4, ymm4
  01be  je short 0x1c8
  01c0  mov dword ptr [rsp+0x48], 0x7fc00000
  01c8  mov qword ptr [rsp+0x60], 0
  01d1  mov rdx, [rsp+0x38]
  01d6  mov rsi, [rsp+0x40]
  01db  vbroadcastss ymm4, [rsp+0x48]
  01e2  xor rbx, rbx
  01e5  vpxor ymm0, ymm0, ymm0
  01e9  vpxor ymm1, ymm1, ymm1
  01ed  vpxor ymm2, ymm2, ymm2
  01f1  vpxor ymm3, ymm3, ymm3
  01f5  lea r15, [rbx+0x3e8]
  01fc  lea r14, [r15-0x20]
  0200  cmp rbx, r14
  0203  jg 0x5e8
  0209  vmovups ymm5, [rdx+rbx*4]
  020e  vsubps ymm6, ymm5, ymm4
  0212  vbroadcastss ymm5, [0x93f]
  021b  vminps ymm7, ymm5, ymm6
  021f  vbroadcastss ymm5, [0x943]
  0228  vmaxps ymm8, ymm5, ymm7
  022c  vbroadcastss ymm7, [0x947]
  0235  vbroadcastss ymm5, [0x94b]
  023e  vfmadd213ps ymm5, ymm8, ymm7
  0243  vsubps ymm9, ymm5, ymm7
  0247  vbroadcastss ymm7, [0x94f]
  0250  vfmadd231ps ymm8, ymm9, ymm7
  0255  vbroadcastss ymm7, [0x953]
  025e  vfmadd231ps ymm8, ymm9, ymm7
  0263  vbroadcastss ymm7, [0x957]
  026c  vbroadcastss ymm10, [0x95b]
  0275  vfmadd213ps ymm7, ymm8, ymm10
  027a  vbroadcastss ymm10, [0x95f]
  0283  vfmadd213ps ymm7, ymm8, ymm10
  0288  vbroadcastss ymm10, [0x963]
  0291  vfmadd213ps ymm7, ymm8, ymm10
  0296  vbroadcastss ymm10, [0x967]
  029f  vfmadd213ps ymm7, ymm8, ymm10
  02a4  vbroadcastss ymm10, [0x96b]
  02ad  vfmadd213ps ymm7, ymm8, ymm10
  02b2  vbroadcastss ymm10, [0x96b]
  02bb  vfmadd213ps ymm7, ymm8, ymm10
  02c0  vbroadcastss ymm10, [0x96f]
  02c9  vbroadcastss ymm8, [0x973]
  02d2  vfmadd213ps ymm9, ymm8, ymm10
  02d7  vpslld ymm10, ymm9, 0x17
  02dd  vpsubd ymm8, ymm5, ymm9
  02e2  vpslld ymm9, ymm8, 0x17
  02e8  vmulps ymm8, ymm7, ymm10
  02ed  vmulps ymm10, ymm8, ymm9
  02f2  vaddps ymm0, ymm0, ymm10
  02f7  vmovups [rsi+rbx*4], ymm10
  02fc  vmovups ymm5, [rdx+rbx*4+0x20]
  0302  vsubps ymm6, ymm5, ymm4
  0306  vbroadcastss ymm5, [0x93f]
  030f  vminps ymm7, ymm5, ymm6
  0313  vbroadcastss ymm5, [0x943]
  031c  vmaxps ymm8, ymm5, ymm7
  0320  vbroadcastss ymm7, [0x947]
  0329  vbroadcastss ymm5, [0x94b]
  0332  vfmadd213ps ymm5, ymm8, ymm7
  0337  vsubps ymm9, ymm5, ymm7
  033b  vbroadcastss ymm7, [0x94f]
  0344  vfmadd231ps ymm8, ymm9, ymm7
  0349  vbroadcastss ymm7, [0x953]
  0352  vfmadd231ps ymm8, ymm9, ymm7
  0357  vbroadcastss ymm7, [0x957]
  0360  vbroadcastss ymm10, [0x95b]
  0369  vfmadd213ps ymm7, ymm8, ymm10
  036e  vbroadcastss ymm10, [0x95f]
  0377  vfmadd213ps ymm7, ymm8, ymm10
  037c  vbroadcastss ymm10, [0x963]
  0385  vfmadd213ps ymm7, ymm8, ymm10
  038a  vbroadcastss ymm10, [0x967]
  0393  vfmadd213ps ymm7, ymm8, ymm10
  0398  vbroadcastss ymm10, [0x96b]
  03a1  vfmadd213ps ymm7, ymm8, ymm10
  03a6  vbroadcastss ymm10, [0x96b]
  03af  vfmadd213ps ymm7, ymm8, ymm10
  03b4  vbroadcastss ymm10, [0x96f]
  03bd  vbroadcastss ymm8, [0x973]
  03c6  vfmadd213ps ymm9, ymm8, ymm10
  03cb  vpslld ymm10, ymm9, 0x17
  03d1  vpsubd ymm8, ymm5, ymm9
  03d6  vpslld ymm9, ymm8, 0x17
  03dc  vmulps ymm8, ymm7, ymm10
  03e1  vmulps ymm10, ymm8, ymm9
  03e6  vaddps ymm1, ymm1, ymm10
  03eb  vmovups [rsi+rbx*4+0x20], ymm10
  03f1  vmovups ymm5, [rdx+rbx*4+0x40]
  03f7  vsubps ymm6, ymm5, ymm4
  03fb  vbroadcastss ymm5, [0x93f]
  0404  vminps ymm7, ymm5, ymm6
  0408  vbroadcastss ymm5, [0x943]
  0411  vmaxps ymm8, ymm5, ymm7
  0415  vbroadcastss ymm7, [0x947]
  041e  vbroadcastss ymm5, [0x94b]
  0427  vfmadd213ps ymm5, ymm8, ymm7
  042c  vsubps ymm9, ymm5, ymm7
  0430  vbroadcastss ymm7, [0x94f]
  0439  vfmadd231ps ymm8, ymm9, ymm7
  043e  vbroadcastss ymm7, [0x953]
  0447  vfmadd231ps ymm8, ymm9, ymm7
  044c  vbroadcastss ymm7, [0x957]
  0455  vbroadcastss ymm10, [0x95b]
  045e  vfmadd213ps ymm7, ymm8, ymm10
  0463  vbroadcastss ymm10, [0x95f]
  046c  vfmadd213ps ymm7, ymm8, ymm10
  0471  vbroadcastss ymm10, [0x963]
  047a  vfmadd213ps ymm7, ymm8, ymm10
  047f  vbroadcastss ymm10, [0x967]
  0488  vfmadd213ps ymm7, ymm8, ymm10
  048d  vbroadcastss ymm10, [0x96b]
  0496  vfmadd213ps ymm7, ymm8, ymm10
  049b  vbroadcastss ymm10, [0x96b]
  04a4  vfmadd213ps ymm7, ymm8, ymm10
  04a9  vbroadcastss ymm10, [0x96f]
  04b2  vbroadcastss ymm8, [0x973]
  04bb  vfmadd213ps ymm9, ymm8, ymm10
  04c0  vpslld ymm10, ymm9, 0x17
  04c6  vpsubd ymm8, ymm5, ymm9
  04cb  vpslld ymm9, ymm8, 0x17
  04d1  vmulps ymm8, ymm7, ymm10
  04d6  vmulps ymm10, ymm8, ymm9
  04db  vaddps ymm2, ymm2, ymm10
  04e0  vmovups [rsi+rbx*4+0x40], ymm10
  04e6  vmovups ymm5, [rdx+rbx*4+0x60]
  04ec  vsubps ymm6, ymm5, ymm4
  04f0  vbroadcastss ymm5, [0x93f]
  04f9  vminps ymm7, ymm5, ymm6
  04fd  vbroadcastss ymm5, [0x943]
  0506  vmaxps ymm8, ymm5, ymm7
  050a  vbroadcastss ymm7, [0x947]
  0513  vbroadcastss ymm5, [0x94b]
  051c  vfmadd213ps ymm5, ymm8, ymm7
  0521  vsubps ymm9, ymm5, ymm7
  0525  vbroadcastss ymm7, [0x94f]
  052e  vfmadd231ps ymm8, ymm9, ymm7
  0533  vbroadcastss ymm7, [0x953]
  053c  vfmadd231ps ymm8, ymm9, ymm7
  0541  vbroadcastss ymm7, [0x957]
  054a  vbroadcastss ymm10, [0x95b]
  0553  vfmadd213ps ymm7, ymm8, ymm10
  0558  vbroadcastss ymm10, [0x95f]
  0561  vfmadd213ps ymm7, ymm8, ymm10
  0566  vbroadcastss ymm10, [0x963]
  056f  vfmadd213ps ymm7, ymm8, ymm10
  0574  vbroadcastss ymm10, [0x967]
  057d  vfmadd213ps ymm7, ymm8, ymm10
  0582  vbroadcastss ymm10, [0x96b]
  058b  vfmadd213ps ymm7, ymm8, ymm10
  0590  vbroadcastss ymm10, [0x96b]
  0599  vfmadd213ps ymm7, ymm8, ymm10
  059e  vbroadcastss ymm10, [0x96f]
  05a7  vbroadcastss ymm8, [0x973]
  05b0  vfmadd213ps ymm9, ymm8, ymm10
  05b5  vpslld ymm10, ymm9, 0x17
  05bb  vpsubd ymm8, ymm5, ymm9
  05c0  vpslld ymm9, ymm8, 0x17
  05c6  vmulps ymm8, ymm7, ymm10
  05cb  vmulps ymm10, ymm8, ymm9
  05d0  vaddps ymm3, ymm3, ymm10
  05d5  vmovups [rsi+rbx*4+0x60], ymm10
  05db  add rbx, 0x20
  05df  cmp rbx, r14
  05e2  jle 0x209
  05e8  lea r14, [r15-8]
  05ec  cmp rbx, r14
  05ef  jg 0x6f5
  05f5  vmovups ymm5, [rdx+rbx*4]
  05fa  vsubps ymm6, ymm5, ymm4
  05fe  vbroadcastss ymm5, [0x93f]
  0607  vminps ymm7, ymm5, ymm6
  060b  vbroadcastss ymm5, [0x943]
  0614  vmaxps ymm8, ymm5, ymm7
  0618  vbroadcastss ymm7, [0x947]
  0621  vbroadcastss ymm5, [0x94b]
  062a  vfmadd213ps ymm5, ymm8, ymm7
  062f  vsubps ymm9, ymm5, ymm7
  0633  vbroadcastss ymm7, [0x94f]
  063c  vfmadd231ps ymm8, ymm9, ymm7
  0641  vbroadcastss ymm7, [0x953]
  064a  vfmadd231ps ymm8, ymm9, ymm7
  064f  vbroadcastss ymm7, [0x957]
  0658  vbroadcastss ymm10, [0x95b]
  0661  vfmadd213ps ymm7, ymm8, ymm10
  0666  vbroadcastss ymm10, [0x95f]
  066f  vfmadd213ps ymm7, ymm8, ymm10
  0674  vbroadcastss ymm10, [0x963]
  067d  vfmadd213ps ymm7, ymm8, ymm10
  0682  vbroadcastss ymm10, [0x967]
  068b  vfmadd213ps ymm7, ymm8, ymm10
  0690  vbroadcastss ymm10, [0x96b]
  0699  vfmadd213ps ymm7, ymm8, ymm10
  069e  vbroadcastss ymm10, [0x96b]
  06a7  vfmadd213ps ymm7, ymm8, ymm10
  06ac  vbroadcastss ymm10, [0x96f]
  06b5  vbroadcastss ymm8, [0x973]
  06be  vfmadd213ps ymm9, ymm8, ymm10
  06c3  vpslld ymm10, ymm9, 0x17
  06c9  vpsubd ymm8, ymm5, ymm9
  06ce  vpslld ymm9, ymm8, 0x17
  06d4  vmulps ymm8, ymm7, ymm10
  06d9  vmulps ymm10, ymm8, ymm9
  06de  vaddps ymm0, ymm0, ymm10
  06e3  vmovups [rsi+rbx*4], ymm10
  06e8  add rbx, 8
  06ec  cmp rbx, r14
  06ef  jle 0x5f5
  06f5  cmp rbx, r15
  06f8  jge 0x817
  06fe  mov rcx, r15
  0701  sub rcx, rbx
  0704  lea rax, [0x97b]
  070b  neg rcx
  070e  vmovdqu ymm15, [rax+rcx*4+0x20]
  0714  vmaskmovps ymm5, ymm15, [rdx+rbx*4]
  071a  vsubps ymm6, ymm5, ymm4
  071e  vbroadcastss ymm5, [0x93f]
  0727  vminps ymm7, ymm5, ymm6
  072b  vbroadcastss ymm5, [0x943]
  0734  vmaxps ymm8, ymm5, ymm7
  0738  vbroadcastss ymm7, [0x947]
  0741  vbroadcastss ymm5, [0x94b]
  074a  vfmadd213ps ymm5, ymm8, ymm7
  074f  vsubps ymm9, ymm5, ymm7
  0753  vbroadcastss ymm7, [0x94f]
  075c  vfmadd231ps ymm8, ymm9, ymm7
  0761  vbroadcastss ymm7, [0x953]
  076a  vfmadd231ps ymm8, ymm9, ymm7
  076f  vbroadcastss ymm7, [0x957]
  0778  vbroadcastss ymm10, [0x95b]
  0781  vfmadd213ps ymm7, ymm8, ymm10
  0786  vbroadcastss ymm10, [0x95f]
  078f  vfmadd213ps ymm7, ymm8, ymm10
  0794  vbroadcastss ymm10, [0x963]
  079d  vfmadd213ps ymm7, ymm8, ymm10
  07a2  vbroadcastss ymm10, [0x967]
  07ab  vfmadd213ps ymm7, ymm8, ymm10
  07b0  vbroadcastss ymm10, [0x96b]
  07b9  vfmadd213ps ymm7, ymm8, ymm10
  07be  vbroadcastss ymm10, [0x96b]
  07c7  vfmadd213ps ymm7, ymm8, ymm10
  07cc  vbroadcastss ymm10, [0x96f]
  07d5  vbroadcastss ymm8, [0x973]
  07de  vfmadd213ps ymm9, ymm8, ymm10
  07e3  vpslld ymm10, ymm9, 0x17
  07e9  vpsubd ymm8, ymm5, ymm9
  07ee  vpslld ymm9, ymm8, 0x17
  07f4  vmulps ymm8, ymm7, ymm10
  07f9  vmulps ymm10, ymm8, ymm9
  07fe  vbroadcastss ymm9, [0x977]
  0807  vblendvps ymm6, ymm9, ymm10, ymm15
  080d  vaddps ymm0, ymm0, ymm6
  0811  vmaskmovps [rsi+rbx*4], ymm15, ymm10
  0817  vaddps ymm0, ymm0, ymm1
  081b  vaddps ymm2, ymm2, ymm3
  081f  vaddps ymm0, ymm0, ymm2
  0823  vperm2f128 ymm5, ymm0, ymm0, 1
  0829  vaddps ymm0, ymm0, ymm5
  082d  vpermilps ymm5, ymm0, 0x4e
  0833  vaddps ymm0, ymm0, ymm5
  0837  vpermilps ymm5, ymm0, 0xb1
  083d  vaddps ymm0, ymm0, ymm5
  0841  vcvtss2sd xmm0, xmm0, xmm0
  0845  vaddsd xmm0, xmm0, [rsp+0x60]
  084b  vmovsd [rsp+0x60], xmm0
  0851  vcvtsd2ss xmm0, xmm0, [rsp+0x60]
  0857  vmovss [rsp+0x58], xmm0
  085d  mov rdx, [rsp+0x40]
  0862  vbroadcastss ymm0, [rsp+0x58]
  0869  xor rbx, rbx
  086c  lea r15, [rbx+0x3e8]
  0873  lea r14, [r15-0x20]
  0877  cmp rbx, r14
  087a  jg short 0x8c3
  087c  vmovups ymm1, [rdx+rbx*4]
  0881  vdivps ymm2, ymm1, ymm0
  0885  vmovups [rdx+rbx*4], ymm2
  088a  vmovups ymm1, [rdx+rbx*4+0x20]
  0890  vdivps ymm2, ymm1, ymm0
  0894  vmovups [rdx+rbx*4+0x20], ymm2
  089a  vmovups ymm1, [rdx+rbx*4+0x40]
  08a0  vdivps ymm2, ymm1, ymm0
  08a4  vmovups [rdx+rbx*4+0x40], ymm2
  08aa  vmovups ymm1, [rdx+rbx*4+0x60]
  08b0  vdivps ymm2, ymm1, ymm0
  08b4  vmovups [rdx+rbx*4+0x60], ymm2
  08ba  add rbx, 0x20
  08be  cmp rbx, r14
  08c1  jle short 0x87c
  08c3  lea r14, [r15-8]
  08c7  cmp rbx, r14
  08ca  jg short 0x8e3
  08cc  vmovups ymm1, [rdx+rbx*4]
  08d1  vdivps ymm2, ymm1, ymm0
  08d5  vmovups [rdx+rbx*4], ymm2
  08da  add rbx, 8
  08de  cmp rbx, r14
  08e1  jle short 0x8cc
  08e3  cmp rbx, r15
  08e6  jge short 0x90e
  08e8  mov rcx, r15
  08eb  sub rcx, rbx
  08ee  lea rax, [0x97b]
  08f5  neg rcx
  08f8  vmovdqu ymm15, [rax+rcx*4+0x20]
  08fe  vmaskmovps ymm1, ymm15, [rdx+rbx*4]
  0904  vdivps ymm2, ymm1, ymm0
  0908  vmaskmovps [rdx+rbx*4], ymm15, ymm2
  090e  mov rax, [rsp+0x20]
  0913  add rax, 1
  0919  mov [rsp+0x20], rax
  091e  cmp rax, [rsp+0x10]
  0923  jl 0x4c
  0929  mov rsp, [rsp]
  092d  pop r15
  092f  pop r14
  0931  pop r13
  0933  pop r12
  0935  pop rbp
  0936  pop rbx
  0937  vzeroupper
  093a  ret
  constants (128 bytes):
    ff800000 42b20000 c2d00000 4b4000fe 3fb8aa3b bf317218 3102e308 3ab5144a
    3c091d3a 3d2aac79 3e2aaa48 3efffffe 3f800000 4b40007f 3f000000 00000000
    ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff
    00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
