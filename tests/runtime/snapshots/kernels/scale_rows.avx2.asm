AVX2 loop kernel, 382 bytes of machine code, 0 micro-kernel calls per tile, 1 values held in registers:
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
  0041  jle 0x128
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
  007c  vbroadcastss ymm0, [0x13a]
  0085  mov r15, [rsp+0x18]
  008a  xor rbx, rbx
  008d  lea r14, [r15-0x20]
  0091  cmp rbx, r14
  0094  jg short 0xdd
  0096  vmovups ymm1, [rdx+rbx*4]
  009b  vmulps ymm2, ymm1, ymm0
  009f  vmovups [rsi+rbx*4], ymm2
  00a4  vmovups ymm1, [rdx+rbx*4+0x20]
  00aa  vmulps ymm2, ymm1, ymm0
  00ae  vmovups [rsi+rbx*4+0x20], ymm2
  00b4  vmovups ymm1, [rdx+rbx*4+0x40]
  00ba  vmulps ymm2, ymm1, ymm0
  00be  vmovups [rsi+rbx*4+0x40], ymm2
  00c4  vmovups ymm1, [rdx+rbx*4+0x60]
  00ca  vmulps ymm2, ymm1, ymm0
  00ce  vmovups [rsi+rbx*4+0x60], ymm2
  00d4  add rbx, 0x20
  00d8  cmp rbx, r14
  00db  jle short 0x96
  00dd  lea r14, [r15-8]
  00e1  cmp rbx, r14
  00e4  jg short 0xfd
  00e6  vmovups ymm1, [rdx+rbx*4]
  00eb  vmulps ymm2, ymm1, ymm0
  00ef  vmovups [rsi+rbx*4], ymm2
  00f4  add rbx, 8
  00f8  cmp rbx, r14
  00fb  jle short 0xe6
  00fd  cmp rbx, r15
  0100  jge short 0x128
  0102  mov rcx, r15
  0105  sub rcx, rbx
  0108  lea rax, [0x13e]
  010f  neg rcx
  0112  vmovdqu ymm15, [rax+rcx*4+0x20]
  0118  vmaskmovps ymm1, ymm15, [rdx+rbx*4]
  011e  vmulps ymm2, ymm1, ymm0
  0122  vmaskmovps [rsi+rbx*4], ymm15, ymm2
  0128  mov rsp, [rsp]
  012c  pop r15
  012e  pop r14
  0130  pop r13
  0132  pop r12
  0134  pop rbp
  0135  pop rbx
  0136  vzeroupper
  0139  ret
  constants (68 bytes):
    3f000000 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff
    ffffffff 00000000 00000000 00000000 00000000 00000000 00000000 00000000
    00000000

AVX2 loop kernel, 679 bytes of machine code, 0 micro-kernel calls per tile, 3 values held in registers, 1024 bytes ahead prefetched for 2 accesses:
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
  0037  mov rax, [rdi+0x10]
  003b  mov [rsp+0x40], rax
  0040  mov rax, [rdi+0x18]
  0044  mov [rsp+0x48], rax
  0049  mov rax, [rsp+8]
  004e  cmp rax, [rsp+0x10]
  0053  jge 0x251
  0059  mov [rsp+0x70], rax
  005e  mov rax, 0x400
  0068  mov [rsp+0x18], rax
  006d  mov rcx, [rsp+0x30]
  0072  mov rax, [rsp+0x70]
  0077  imul rax, 0x1000
  007e  add rcx, rax
  0081  mov [rsp+0x50], rcx
  0086  mov rcx, [rsp+0x38]
  008b  mov rax, [rsp+0x70]
  0090  imul rax, 4
  0094  add rcx, rax
  0097  mov [rsp+0x58], rcx
  009c  mov rcx, [rsp+0x40]
  00a1  mov rax, [rsp+0x70]
  00a6  imul rax, 4
  00aa  add rcx, rax
  00ad  mov [rsp+0x60], rcx
  00b2  mov rcx, [rsp+0x48]
  00b7  mov rax, [rsp+0x70]
  00bc  imul rax, 0x1000
  00c3  add rcx, rax
  00c6  mov [rsp+0x68], rcx
  00cb  mov rdx, [rsp+0x50]
  00d0  mov rsi, [rsp+0x58]
  00d5  mov rdi, [rsp+0x60]
  00da  mov r8, [rsp+0x68]
  00df  vbroadcastss ymm0, [0x263]
  00e8  vbroadcastss ymm1, [rsi]
  00ed  vbroadcastss ymm2, [rdi]
  00f2  mov r15, [rsp+0x18]
  00f7  xor rbx, rbx
  00fa  lea r14, [r15-0x20]
  00fe  cmp rbx, r14
  0101  jg 0x1c4
  0107  vmovups ymm3, [rdx+rbx*4]
  010c  vmulps ymm4, ymm3, ymm1
  0110  vmaxps ymm3, ymm4, ymm2
  0114  vcmpunordps ymm5, ymm4, ymm4
  0119  vblendvps ymm3, ymm3, ymm4, ymm5
  011f  vsubps ymm4, ymm3, ymm0
  0123  vmovups [r8+rbx*4], ymm4
  0129  vmovups ymm3, [rdx+rbx*4+0x20]
  012f  vmulps ymm4, ymm3, ymm1
  0133  vmaxps ymm3, ymm4, ymm2
  0137  vcmpunordps ymm5, ymm4, ymm4
  013c  vblendvps ymm3, ymm3, ymm4, ymm5
  0142  vsubps ymm4, ymm3, ymm0
  0146  vmovups [r8+rbx*4+0x20], ymm4
  014d  vmovups ymm3, [rdx+rbx*4+0x40]
  0153  vmulps ymm4, ymm3, ymm1
  0157  vmaxps ymm3, ymm4, ymm2
  015b  vcmpunordps ymm5, ymm4, ymm4
  0160  vblendvps ymm3, ymm3, ymm4, ymm5
  0166  vsubps ymm4, ymm3, ymm0
  016a  vmovups [r8+rbx*4+0x40], ymm4
  0171  vmovups ymm3, [rdx+rbx*4+0x60]
  0177  vmulps ymm4, ymm3, ymm1
  017b  vmaxps ymm3, ymm4, ymm2
  017f  vcmpunordps ymm5, ymm4, ymm4
  0184  vblendvps ymm3, ymm3, ymm4, ymm5
  018a  vsubps ymm4, ymm3, ymm0
  018e  vmovups [r8+rbx*4+0x60], ymm4
  0195  prefetcht0 [rdx+rbx*4+0x400]
  019d  prefetcht0 [rdx+rbx*4+0x440]
  01a5  prefetchw [r8+rbx*4+0x400]
  01ae  prefetchw [r8+rbx*4+0x440]
  01b7  add rbx, 0x20
  01bb  cmp rbx, r14
  01be  jle 0x107
  01c4  lea r14, [r15-8]
  01c8  cmp rbx, r14
  01cb  jg short 0x1f8
  01cd  vmovups ymm3, [rdx+rbx*4]
  01d2  vmulps ymm4, ymm3, ymm1
  01d6  vmaxps ymm3, ymm4, ymm2
  01da  vcmpunordps ymm5, ymm4, ymm4
  01df  vblendvps ymm3, ymm3, ymm4, ymm5
  01e5  vsubps ymm4, ymm3, ymm0
  01e9  vmovups [r8+rbx*4], ymm4
  01ef  add rbx, 8
  01f3  cmp rbx, r14
  01f6  jle short 0x1cd
  01f8  cmp rbx, r15
  01fb  jge short 0x236
  01fd  mov rcx, r15
  0200  sub rcx, rbx
  0203  lea rax, [0x267]
  020a  neg rcx
  020d  vmovdqu ymm15, [rax+rcx*4+0x20]
  0213  vmaskmovps ymm3, ymm15, [rdx+rbx*4]
  0219  vmulps ymm4, ymm3, ymm1
  021d  vmaxps ymm3, ymm4, ymm2
  0221  vcmpunordps ymm5, ymm4, ymm4
  0226  vblendvps ymm3, ymm3, ymm4, ymm5
  022c  vsubps ymm4, ymm3, ymm0
  0230  vmaskmovps [r8+rbx*4], ymm15, ymm4
  0236  mov rax, [rsp+0x70]
  023b  add rax, 1
  0241  mov [rsp+0x70], rax
  0246  cmp rax, [rsp+0x10]
  024b  jl 0x6d
  0251  mov rsp, [rsp]
  0255  pop r15
  0257  pop r14
  0259  pop r13
  025b  pop r12
  025d  pop rbp
  025e  pop rbx
  025f  vzeroupper
  0262  ret
  constants (68 bytes):
    3f800000 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff
    ffffffff 00000000 00000000 00000000 00000000 00000000 00000000 00000000
    00000000
